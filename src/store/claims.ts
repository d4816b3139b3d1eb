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

/** `claim_lock` and `claim_held`: one row if the claim is still this request's, else none. */
export function claimClauses(claim: ClaimCompletion, bindings: unknown[]): string[] {
  bindings.push(claim.lockId, claim.scopeHash, claim.token);
  return [
    'claim_lock AS (SELECT pg_advisory_xact_lock(?::bigint))',
    `claim_held AS (SELECT scope_hash FROM idempotency_keys
      WHERE scope_hash = ? AND state = 'in_flight' AND claim_token = ? AND EXISTS (SELECT 1 FROM claim_lock) FOR NO KEY UPDATE)`,
  ];
}

/** `completed`: stores the response, only if the CTE `onlyIf` (the effect, or claim_held) has a row. */
export function completionClause(claim: ClaimCompletion, bindings: unknown[], onlyIf: string): string {
  bindings.push(claim.responseStatus, JSON.stringify(claim.responseBody), claim.scopeHash);
  return `completed AS (UPDATE idempotency_keys SET state = 'completed', response_status = ?, response_body = ?
      WHERE scope_hash = ? AND EXISTS (SELECT 1 FROM ${onlyIf}))`;
}

/** Completes the claim as one statement of the same clauses; false if another request owns it now. */
export async function completeClaim(executor: Knex, claim: ClaimCompletion): Promise<boolean> {
  const bindings: unknown[] = [];
  const clauses = [...claimClauses(claim, bindings), completionClause(claim, bindings, 'claim_held')];
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
