import { randomUUID } from 'node:crypto';
import { withTransaction } from '../../db/transaction.ts';
import {
  type AgentPlatformType,
  agentPlatformNames,
  formatUserCode,
  generateDeviceCode,
  generateUserCode,
  hashCode,
  normalizeUserCode,
  userCodeHasher,
} from '../../domain/device-codes.ts';
import { AppError, notFound } from '../../errors.ts';
import { limits } from '../../limits.ts';
import type { RequestView, StartInput } from '../../schemas/device-authorization.ts';
import { type AgentBudgetInput, agentBudgetLimits } from '../../domain/agent-budgets.ts';
import { saveAgentBudget } from '../../store/agent-budgets.ts';
import * as store from '../../store/device-authorizations.ts';
import type { Admission } from './admission.ts';
import { issueOwnedKey } from './api-keys.ts';
import type { EngineDependencies, Principal } from '../common/index.ts';

/**
 * Device authorization, after RFC 8628 (docs/decisions/identity-and-access.md "Device authorization"): a client that
 * cannot hold a browser session starts a request, a person approves or denies it on the
 * verification page, and the client polls until it collects an API key, exactly once.
 */
const expired = () => new AppError('expired_token', 'this code is unknown, expired or already used; start again');
const pending = (interval: number) => new AppError('authorization_pending', 'the person has not answered yet', { status: 'pending', interval });

/** Timestamps arrive as Date from PostgreSQL and PGlite alike; `new Date` also accepts text. */
const at = (value: Date | string) => new Date(value);
const isUnknownCode = (error: unknown) => error instanceof AppError && error.errorName === 'not_found';

export function createDeviceAuthorizationEngine({ db, config, now }: EngineDependencies, admission: Admission) {
  const verificationUrl = new URL('/device', config.publicBaseUrl).toString();
  const hashUserCode = userCodeHasher(config);

  async function start(input: StartInput) {
    const createdAt = now();
    const expiresAt = new Date(createdAt.getTime() + limits.deviceCodeLifetimeSeconds * 1000);
    const deviceCode = generateDeviceCode();
    for (let draw = 0; draw < limits.userCodeDrawsMax; draw++) {
      const userCode = generateUserCode();
      const inserted = await store.insertDeviceAuthorization(db, {
        id: randomUUID(),
        device_code_hash: hashCode(deviceCode),
        user_code_hash: hashUserCode(userCode),
        agent_platform_type: input.agent_platform_type,
        interval_seconds: limits.devicePollIntervalSeconds,
        created_at: createdAt,
        expires_at: expiresAt,
      });
      if (!inserted) continue;
      const shown = formatUserCode(userCode);
      return {
        device_code: deviceCode,
        user_code: shown,
        verification_url: verificationUrl,
        verification_url_complete: `${verificationUrl}?user_code=${shown}`,
        expires_in: limits.deviceCodeLifetimeSeconds,
        interval: limits.devicePollIntervalSeconds,
        agent_platform_type: input.agent_platform_type,
      };
    }
    // Twenty letters to the eighth power make this practically impossible; it is still an answer.
    throw new AppError('conflict', 'no free user code could be drawn; try again');
  }

  /**
   * One poll. The row is read, then moved by one conditional UPDATE; if another request moved it
   * in between (an approval, a concurrent poll), the answer is decided again on the new row.
   */
  async function poll(deviceCode: string) {
    for (let attempt = 0; attempt < limits.compareAndSetAttemptsMax; attempt++) {
      const row = await store.findByDeviceCodeHash(db, hashCode(deviceCode));
      const time = now();
      if (!row || row.status === 'redeemed' || at(row.expires_at) <= time) throw expired();
      if (row.status === 'denied') throw new AppError('access_denied', 'the person denied this request');
      if (row.status === 'approved') {
        const issued = await redeem(row.id, time);
        if (issued) return issued;
        continue;
      }
      if (await store.claimPoll(db, row.id, time, limits.devicePollGraceMs)) throw pending(row.interval_seconds);
      const interval = await store.slowDown(db, row.id, time, limits.devicePollIntervalStepSeconds, limits.devicePollIntervalSecondsMax);
      if (interval !== null)
        throw new AppError('slow_down', `polled faster than every ${row.interval_seconds} s; wait ${interval} s between polls from now on`, {
          status: 'pending',
          interval,
        });
    }
    throw expired();
  }

  /** Only the poll that moves the row from approved to redeemed issues a key; the others get null. */
  function redeem(id: string, time: Date) {
    return withTransaction(db, async ({ trx }) => {
      const taken = await store.takeForRedemption(trx, id, time);
      if (!taken) return null;
      const platform = taken.agent_platform_type as AgentPlatformType;
      const key = await issueOwnedKey(trx, taken.user_id!, platform);
      // The budget the person chose on the page bounds the key from its first request.
      if (taken.agent_budget) await saveAgentBudget(trx, { api_key_id: key.id, ...taken.agent_budget, updated_at: time });
      await store.recordIssuedKey(trx, taken.id, key.id);
      return { status: 'approved' as const, api_key: key.api_key, user_id: taken.user_id!, agent_platform_type: platform };
    });
  }

  /**
   * Every user code tried, right or wrong, takes a token from the per-address and per-code
   * buckets before the lookup, so guessing costs the same whatever the answer. A wrong code (no
   * such code) also keeps a token of the person's failure bucket, which is held during the lookup
   * and refuses before it once empty, so a right guess then is refused like a wrong one.
   */
  async function findPending(principal: Principal, typed: string, address: string) {
    const code = normalizeUserCode(typed);
    if (code === null) throw notFound('device request');
    const requester = { address, principal, userCode: hashUserCode(code) };
    await admission.consume(['userCodeAttemptsPerAddress', 'userCodeAttemptsPerCode'], requester);
    const row = await admission.underFailureLimits(
      ['userCodeFailuresPerAccount'],
      requester,
      'too many wrong user codes',
      () => findByUserCode(requester.userCode),
      isUnknownCode,
    );
    if (row.status !== 'pending' || at(row.expires_at) <= now())
      throw new AppError('expired_token', 'this code has expired or was already used; start again on the device');
    return { row, code };
  }

  async function findByUserCode(hash: string) {
    const row = await store.findByUserCodeHash(db, hash);
    if (!row) throw notFound('device request');
    return row;
  }

  const view = (row: store.DeviceAuthorizationRow, code: string, status: RequestView['status']): RequestView => ({
    user_code: formatUserCode(code),
    agent_platform_type: row.agent_platform_type as AgentPlatformType,
    // A stored type no longer in the list (a row older than a rename) is shown as it is.
    agent_platform_name: (agentPlatformNames as Partial<Record<string, string>>)[row.agent_platform_type] ?? row.agent_platform_type,
    status,
    requested_at: at(row.created_at).toISOString(),
    expires_at: at(row.expires_at).toISOString(),
  });

  async function lookup(principal: Principal, typed: string, address: string) {
    const { row, code } = await findPending(principal, typed, address);
    return view(row, code, 'pending');
  }

  async function confirm(principal: Principal, typed: string, decision: 'approve' | 'deny', address: string, budget?: AgentBudgetInput) {
    // Checked before the code is looked up, so that a mistyped amount costs no attempt.
    const chosen = decision === 'approve' && budget ? agentBudgetLimits(budget, 'body.budget') : null;
    const { row, code } = await findPending(principal, typed, address);
    const status = decision === 'approve' ? 'approved' : 'denied';
    // Two answers at once (approve in one tab, deny in another): the first one stands.
    if (!(await store.decide(db, row.id, status, principal.user_id, now(), chosen)))
      throw new AppError('expired_token', 'this request was answered already or has expired');
    return view(row, code, status);
  }

  return { start, poll, lookup, confirm };
}

export type DeviceAuthorizationEngine = ReturnType<typeof createDeviceAuthorizationEngine>;
