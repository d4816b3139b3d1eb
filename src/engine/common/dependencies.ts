import type { AiProvider } from '../../ai/provider.ts';
import type { JwtService } from '../../auth/jwt.ts';
import type { Config } from '../../config.ts';
import type { Database } from '../../db/database.ts';
import type { EventBus } from '../../events/bus.ts';
import type { Logger } from '../../logger.ts';
import type { CallbackNetwork } from '../../callbacks/client.ts';

/** Everything the engine needs from the outside world, passed in so tests can build their own. */
export interface EngineDependencies {
  db: Database;
  /** The same database without waiting for durable commits: only for writes a crash may lose. */
  asyncCommitDb: Database;
  bus: EventBus;
  config: Config;
  jwt: JwtService;
  log: Logger;
  /** The engine reads time only through this, so tests can move it (auto-confirm, expiry). */
  now: () => Date;
  /**
   * How invoke callbacks resolve names and which addresses they may reach. Unset: the system
   * resolver, and the policy CALLBACK_ALLOW_PRIVATE selects. Tests inject both.
   */
  callbackNetwork?: Partial<CallbackNetwork>;
  /** The language-model client; unset: built from the LLM_* configuration (src/ai/provider.ts). */
  ai?: AiProvider;
}

export type CallerType = 'agent' | 'human';

/** Who is calling: derived from credentials only, never from the request body. */
export interface Principal {
  user_id: string;
  caller_type: CallerType;
  platform: string | null;
  api_key_id: string | null;
  /**
   * The key whose agent budget this caller's charges count against: a person's own key (a device
   * or MCP grant; docs/decisions/money-and-escrow.md "Agent budgets"). Unset for an operator's
   * key, a person's own session and the system, which no budget bounds.
   */
  budget_key_id?: string | null;
  /** When the credential stops being valid (a JWT's exp, in ms since the epoch); API keys last until revoked. */
  expires_at_ms?: number;
}
