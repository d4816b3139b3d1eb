import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { isStalePreparedStatement, prepared } from '../../db/prepared.ts';
import { type Prefetched, type StatementClaim, withSingleStatement, withTransaction, type UnitOfWork } from '../../db/transaction.ts';
import { AppError } from '../../errors.ts';
import { limits } from '../../limits.ts';
import { completeClaim } from '../../store/claims.ts';
import type { EngineDependencies, Principal } from '../common/index.ts';

/**
 * Idempotency (decisions section 5). A key is claimed in its own short database transaction, so a
 * concurrent duplicate sees it at once (4091) instead of waiting. The effect and the stored
 * response then commit together in one database transaction: a key can never produce two
 * effects, nor an effect without its stored response. A request that fails releases its claim,
 * so the caller may retry the same key after fixing the cause (for example topping up).
 *
 * The working database transaction holds an advisory lock named after the key. A retry may take
 * over an old claim only when that lock is free, that is when the original request's database
 * transaction is gone (its process died); a request that is merely slow keeps its claim. The
 * claim token makes the completion fail if the claim was taken over regardless.
 */
export interface IdempotencyRequest {
  key: string;
  /** Method and path: the same key on another endpoint is another key. */
  operation: string;
  /** Hash of the request's meaningful content; a different one under the same key is 4220. */
  fingerprint: string;
}

/** A one-row SELECT (text with `?` placeholders) that may run in the claim's statement. */
export interface ClaimRead {
  text: string;
  bindings: unknown[];
}

export interface Outcome<T> {
  data: T;
  status: number;
  replayed: boolean;
}

/** The claim runs outside any unit of work, so it retries a statement a migration outdated itself. */
async function retriedOnceIfStale<T>(attempt: () => Promise<T>): Promise<T> {
  try {
    return await attempt();
  } catch (error) {
    if (!isStalePreparedStatement(error)) throw error;
    return attempt();
  }
}

/** Stable under member order: `{a, b}` and `{b, a}` are the same request. */
function canonical(value: unknown): unknown {
  // JSON has no bigint (an amount such as a purchase's max_price): its decimal text stands for it.
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}

export const fingerprintOf = (value: unknown) =>
  createHash('sha256')
    .update(JSON.stringify(canonical(value ?? null)))
    .digest('hex');

/** The advisory lock id of a key: 60 bits of its scope hash, within PostgreSQL's bigint. */
const lockIdOf = (scopeHash: string) => BigInt(`0x${scopeHash.slice(0, 15)}`).toString();

export function createIdempotency({ db, asyncCommitDb, now }: EngineDependencies) {
  const scopeHash = (principal: Principal | null, request: IdempotencyRequest) => {
    const credential = principal ? `${principal.caller_type}:${principal.api_key_id ?? '-'}:${principal.user_id}` : 'admin';
    return createHash('sha256').update(`${credential}\n${request.operation}\n${request.key}`).digest('hex');
  };

  /**
   * Returns the claim token when the caller may run the work, or the stored outcome to replay.
   * A one-row `read` the work needs first runs in the claim's own statement (its result goes to
   * the work as `unit.prefetched`), which saves the work a round trip.
   */
  async function claim(
    hash: string,
    request: IdempotencyRequest,
    read?: ClaimRead,
  ): Promise<{ token: string; prefetched?: Prefetched } | { replay: Outcome<unknown> }> {
    const at = now();
    const token = randomUUID();
    // The claim need not wait for the disk: the effect's own durable commit flushes the claim's
    // earlier WAL with it, and a claim a crash loses belongs to a request that wrote nothing.
    const [result] = await retriedOnceIfStale(() =>
      prepared<Record<string, unknown> & { claimed: number }>(
        asyncCommitDb,
        `WITH claim AS (
         INSERT INTO idempotency_keys (scope_hash, fingerprint, state, claim_token, created_at, expires_at) VALUES (?, ?, 'in_flight', ?, ?, ?)
         ON CONFLICT (scope_hash) DO NOTHING RETURNING scope_hash
       )
       SELECT (SELECT count(*) FROM claim)::int AS claimed${read ? ', piggyback.*' : ''}
         FROM (SELECT 1) AS one${read ? ` LEFT JOIN (${read.text}) AS piggyback ON true` : ''}`,
        [hash, request.fingerprint, token, at, new Date(at.getTime() + limits.idempotencyRetentionMs), ...(read?.bindings ?? [])],
      ),
    );
    const { claimed, ...row } = result!;
    if (claimed > 0) return { token, ...(read ? { prefetched: { row: Object.values(row).every((value) => value === null) ? null : row } } : {}) };
    const existing = await db('idempotency_keys').where({ scope_hash: hash }).first();
    if (!existing || new Date(existing.expires_at) <= at) {
      await db('idempotency_keys').where({ scope_hash: hash }).where('expires_at', '<=', at).del();
      return claim(hash, request, read);
    }
    if (existing.fingerprint !== request.fingerprint) throw new AppError('idempotency_key_reused', 'this Idempotency-Key was used with a different request');
    if (existing.state === 'completed') return { replay: { data: existing.response_body, status: existing.response_status, replayed: true } };
    if (new Date(existing.created_at).getTime() <= at.getTime() - limits.idempotencyClaimTakeoverAfterMs && (await takeOver(hash, token, at))) return { token };
    throw new AppError('idempotency_in_progress', 'a request with this Idempotency-Key is still being processed');
  }

  async function takeOver(hash: string, token: string, at: Date): Promise<boolean> {
    return db.transaction(async (trx) => {
      const free = await trx.raw('SELECT pg_try_advisory_xact_lock(?::bigint) AS free', [lockIdOf(hash)]);
      if (!free.rows[0].free) return false;
      const updated = await trx('idempotency_keys').where({ scope_hash: hash, state: 'in_flight' }).update({ claim_token: token, created_at: at });
      return updated === 1;
    });
  }

  async function complete(trx: Knex, hash: string, token: string, status: number, result: unknown) {
    const held = await completeClaim(trx, { scopeHash: hash, token, lockId: lockIdOf(hash), responseStatus: status, responseBody: result });
    // Someone else owns the claim now: roll this effect back rather than produce a second one.
    if (!held) throw new AppError('idempotency_in_progress', 'a request with this Idempotency-Key is still being processed');
  }

  /**
   * Runs `work` at most once per key. Without a key it runs it in a database transaction, or,
   * when `writes` says the work writes with one statement, without BEGIN and COMMIT.
   */
  async function run<T>(
    principal: Principal | null,
    request: IdempotencyRequest | null,
    status: number,
    work: (unit: UnitOfWork) => Promise<T>,
    writes: 'one statement' | 'several statements' = 'several statements',
    read?: ClaimRead,
  ): Promise<Outcome<T>> {
    if (!request) return { data: await (writes === 'one statement' ? withSingleStatement : withTransaction)(db, work), status, replayed: false };
    const hash = scopeHash(principal, request);
    const claimed = await claim(hash, request, writes === 'one statement' ? read : undefined);
    if ('replay' in claimed) return claimed.replay as Outcome<T>;
    try {
      if (writes === 'one statement')
        return { data: await runClaimedStatement(hash, claimed.token, status, work, claimed.prefetched), status, replayed: false };
      const data = await withTransaction(db, async (unit) => {
        await prepared(unit.trx, 'SELECT pg_advisory_xact_lock(?::bigint)', [lockIdOf(hash)]);
        const result = await work(unit);
        await complete(unit.trx, hash, claimed.token, status, result);
        return result;
      });
      return { data, status, replayed: false };
    } catch (error) {
      await db('idempotency_keys').where({ scope_hash: hash, state: 'in_flight', claim_token: claimed.token }).del();
      throw error;
    }
  }

  /**
   * Single-statement work completes the claim inside its own write statement (the effect and the
   * stored response still commit together), which saves BEGIN, the lock, the completion and
   * COMMIT: four round trips.
   */
  async function runClaimedStatement<T>(
    hash: string,
    token: string,
    status: number,
    work: (unit: UnitOfWork) => Promise<T>,
    prefetched?: Prefetched,
  ): Promise<T> {
    const claim: StatementClaim = { scopeHash: hash, token, lockId: lockIdOf(hash), responseStatus: status, completed: false };
    const data = await withSingleStatement(db, work, { claim, prefetched });
    if (!claim.completed) throw new Error('single-statement work returned without completing its idempotency claim');
    return data;
  }

  return { run };
}

export type Idempotency = ReturnType<typeof createIdempotency>;
