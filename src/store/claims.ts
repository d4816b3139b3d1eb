import type { Knex } from 'knex';
import { prepared } from '../db/prepared.ts';

/**
 * The one idempotency completion. A claim is completed with its stored response only while it is
 * still this request's: the advisory lock named after the key is held (so a retry knows the
 * request is at work), the claim row is locked and re-read (a takeover may have changed its
 * token), and the response is stored only if the effect was written. Single-statement work puts
 * these clauses into its change statement (store/change.ts); work of several statements runs them
 * as its last statement (completeClaim), inside its database transaction.
 */
export interface ClaimCompletion {
  scopeHash: string;
  token: string;
  /** The advisory lock that tells a retry the original request is still at work. */
  lockId: string;
  responseStatus: number;
  responseBody: unknown;
}

/** A claim with the ordinal of the change it belongs to in a statement (store/change.ts). */
export type NumberedClaim = ClaimCompletion & { ordinal: number };

/**
 * `claim_input`, `claim_lock` and `claim_held`: claim_held has the ordinal of every claim that is
 * still its request's. Every advisory lock is taken (in sorted order) before any claim row is
 * read, so no retry can take a claim over while the statement decides; the rows are then locked
 * in scope_hash order.
 */
export function claimClauses(claims: NumberedClaim[], bindings: unknown[]): string[] {
  const records = claims.map((claim) => ({
    ordinal: claim.ordinal,
    scope_hash: claim.scopeHash,
    token: claim.token,
    lock_id: claim.lockId,
    response_status: claim.responseStatus,
    response_body: claim.responseBody,
  }));
  bindings.push(JSON.stringify(records));
  return [
    `claim_input AS (SELECT * FROM jsonb_to_recordset(?::jsonb)
      AS claim(ordinal int, scope_hash text, token uuid, lock_id bigint, response_status int, response_body jsonb))`,
    'claim_lock AS (SELECT count(pg_advisory_xact_lock(lock_id)) AS locks FROM (SELECT DISTINCT lock_id FROM claim_input ORDER BY lock_id) AS ids)',
    // The keys as one array, looked up by the primary key (see store/change.ts, locked_transactions).
    `claim_held AS (SELECT claim.ordinal FROM idempotency_keys AS key JOIN claim_input AS claim ON claim.scope_hash = key.scope_hash
      WHERE key.scope_hash = ANY (ARRAY(SELECT scope_hash FROM claim_input)) AND key.state = 'in_flight' AND key.claim_token = claim.token
        AND (SELECT locks FROM claim_lock) >= 0
      ORDER BY key.scope_hash FOR NO KEY UPDATE OF key)`,
  ];
}

/**
 * `completed`: stores each claim's response, only if the CTE `onlyIf` (the changes, or
 * claim_held) has its ordinal. Two claims of one key can share a statement (a request and the
 * retry that took its claim over): the response stored is the one of the claim whose change was
 * written, matched by ordinal and token, never another claim of the same key.
 */
export function completionClause(onlyIf: string): string {
  return `completed AS (UPDATE idempotency_keys AS key SET state = 'completed', response_status = claim.response_status, response_body = claim.response_body
      FROM claim_input AS claim
     WHERE key.scope_hash = ANY (ARRAY(SELECT scope_hash FROM claim_input WHERE ordinal IN (SELECT ordinal FROM ${onlyIf})))
       AND claim.ordinal IN (SELECT ordinal FROM ${onlyIf}) AND key.scope_hash = claim.scope_hash AND key.claim_token = claim.token)`;
}

/** Completes the claim as one statement of the same clauses; false if another request owns it now. */
export async function completeClaim(executor: Knex, claim: ClaimCompletion): Promise<boolean> {
  const bindings: unknown[] = [];
  const numbered = { ...claim, ordinal: 1 };
  const clauses = [...claimClauses([numbered], bindings), completionClause('claim_held')];
  const [row] = await prepared<{ held: number }>(executor, `WITH ${clauses.join(',\n')} SELECT (SELECT count(*) FROM claim_held)::int AS held`, bindings);
  return row?.held === 1;
}

/** Whether `claim` is still this request's (a read, no lock): false once a retry has taken it over. */
export async function claimIsHeld(executor: Knex, claim: { scopeHash: string; token: string }): Promise<boolean> {
  const [row] = await prepared<{ held: number }>(
    executor,
    `SELECT count(*)::int AS held FROM idempotency_keys WHERE scope_hash = ? AND state = 'in_flight' AND claim_token = ?`,
    [claim.scopeHash, claim.token],
  );
  return row?.held === 1;
}
