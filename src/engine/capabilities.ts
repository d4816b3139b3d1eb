import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { limits } from '../limits.ts';
import type { Idempotency, IdempotencyRequest } from './idempotency.ts';
import { ownerTypeOf, seeCapability } from './access/capabilities.ts';
import { authorize } from './access/rules.ts';
import type { CapabilityView, CreateCapabilityInput } from '../schemas/capabilities.ts';
import type { EngineDependencies, Principal } from './dependencies.ts';
import { type CapabilityRow, capabilityView } from './views.ts';

/** The minimum of capabilities a transaction needs: create and read. The full surface comes later. */
export function createCapabilityEngine({ db, now }: EngineDependencies, idempotency: Idempotency) {
  /** Registering is keyed like every state-changing POST: a retried request creates one capability. */
  function create(principal: Principal, input: CreateCapabilityInput, request: IdempotencyRequest | null) {
    return idempotency.run(principal, request, 201, async ({ trx }) => insert(trx, principal, input));
  }

  async function insert(trx: Knex, principal: Principal, input: CreateCapabilityInput): Promise<CapabilityView> {
    const at = now();
    const [row] = (await trx('capabilities')
      .insert({
        id: randomUUID(),
        owner_user_id: principal.user_id,
        owner_type: ownerTypeOf(principal),
        title: input.title,
        description: input.description,
        category: input.category,
        capability_type: input.capability_type,
        pricing_model: input.pricing_model,
        price: String(input.price_ut ?? 0n),
        auto_accept_min: input.auto_accept_min_ut === undefined ? null : String(input.auto_accept_min_ut),
        delivery_mode: input.delivery_mode ?? 'instant',
        tags: JSON.stringify(input.tags ?? []),
        daily_limit: input.daily_limit ?? null,
        rate_limit_per_min: input.rate_limit_per_min ?? null,
        callback_url: input.callback_url ?? null,
        callback_timeout_sec: input.callback_timeout_sec ?? limits.callbackTimeoutSecondsDefault,
        created_at: at,
        updated_at: at,
      })
      .returning('*')) as CapabilityRow[];
    return capabilityView(row!, 0);
  }

  /** Capabilities are visible only within their own space (access/capabilities.ts). */
  async function get(principal: Principal, id: string): Promise<CapabilityView> {
    const row = authorize(seeCapability, principal, await db<CapabilityRow>('capabilities').where({ id }).first(), 'capability');
    const [sold] = await db('transactions').where({ capability_id: id, status: 'settled' }).count<{ count: string }[]>('* as count');
    return capabilityView(row as CapabilityRow, Number(sold?.count ?? 0));
  }

  return { create, get };
}
