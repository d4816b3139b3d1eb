import { createHash } from 'node:crypto';
import { withTransaction, type UnitOfWork } from '../db/transaction.ts';
import { AppError } from '../errors.ts';
import { limits } from '../limits.ts';
import type { EngineDependencies, Principal } from './dependencies.ts';

/**
 * Idempotency (decisions section 5). A key is claimed in its own short database transaction, so a
 * concurrent duplicate sees it at once (4091) instead of waiting. The effect and the stored
 * response then commit together in one database transaction: a key can never produce two
 * effects, nor an effect without its stored response. A request that fails releases its claim,
 * so the caller may retry the same key after fixing the cause (for example topping up).
 */
export interface IdempotencyRequest {
  key: string;
  /** Method and path: the same key on another endpoint is another key. */
  operation: string;
  /** Hash of the request's meaningful content; a different one under the same key is 4220. */
  fingerprint: string;
}

export interface Outcome<T> {
  data: T;
  status: number;
  replayed: boolean;
}

/** An in-flight claim older than this belongs to a crashed request whose work rolled back. */
const staleClaimMs = 60_000;

export const fingerprintOf = (value: unknown) => createHash('sha256').update(JSON.stringify(value ?? null)).digest('hex');

export function createIdempotency({ db, now }: EngineDependencies) {
  const scopeHash = (principal: Principal | null, request: IdempotencyRequest) => {
    const credential = principal ? `${principal.caller_type}:${principal.api_key_id ?? '-'}:${principal.user_id}` : 'admin';
    return createHash('sha256').update(`${credential}\n${request.operation}\n${request.key}`).digest('hex');
  };

  async function claim(hash: string, request: IdempotencyRequest): Promise<Outcome<unknown> | null> {
    const at = now();
    const inserted = await db('idempotency_keys')
      .insert({ scope_hash: hash, fingerprint: request.fingerprint, state: 'in_flight', created_at: at, expires_at: new Date(at.getTime() + limits.idempotencyRetentionMs) })
      .onConflict('scope_hash')
      .ignore()
      .returning('scope_hash');
    if (inserted.length > 0) return null;
    const existing = await db('idempotency_keys').where({ scope_hash: hash }).first();
    if (!existing || new Date(existing.expires_at) <= at) {
      await db('idempotency_keys').where({ scope_hash: hash }).where('expires_at', '<=', at).del();
      return claim(hash, request);
    }
    if (existing.fingerprint !== request.fingerprint) throw new AppError('idempotency_key_reused', 'this Idempotency-Key was used with a different request');
    if (existing.state === 'completed') return { data: existing.response_body, status: existing.response_status, replayed: true };
    const takenOver = await db('idempotency_keys')
      .where({ scope_hash: hash, state: 'in_flight' })
      .where('created_at', '<', new Date(at.getTime() - staleClaimMs))
      .update({ created_at: at });
    if (takenOver === 1) return null;
    throw new AppError('idempotency_in_progress', 'a request with this Idempotency-Key is still being processed');
  }

  /** Runs `work` at most once per key; without a key it simply runs it in a database transaction. */
  async function run<T>(principal: Principal | null, request: IdempotencyRequest | null, status: number, work: (unit: UnitOfWork) => Promise<T>): Promise<Outcome<T>> {
    if (!request) return { data: await withTransaction(db, work), status, replayed: false };
    const hash = scopeHash(principal, request);
    const replay = await claim(hash, request);
    if (replay) return replay as Outcome<T>;
    try {
      const data = await withTransaction(db, async (unit) => {
        const result = await work(unit);
        await unit.trx('idempotency_keys').where({ scope_hash: hash }).update({ state: 'completed', response_status: status, response_body: JSON.stringify(result) });
        return result;
      });
      return { data, status, replayed: false };
    } catch (error) {
      await db('idempotency_keys').where({ scope_hash: hash, state: 'in_flight' }).del();
      throw error;
    }
  }

  async function deleteExpired(batchSize = 1000): Promise<number> {
    return db('idempotency_keys').whereIn('scope_hash', db('idempotency_keys').select('scope_hash').where('expires_at', '<=', now()).limit(batchSize)).del();
  }

  return { run, deleteExpired };
}

export type Idempotency = ReturnType<typeof createIdempotency>;
