import type { ClaimCompletion } from './claims.ts';

/**
 * A purchase decided on this instance's cached read, written with its idempotency key in the same
 * statement (store/change.ts; engine/money/idempotency.ts "fresh claims"). Its create needs no
 * round trip before its change statement: the statement itself checks that what the decision
 * was made on still holds, and claims the key.
 *
 * `verified`: the capability row is the version the purchase was decided on (its `xmin`: any
 * update of the row, a price, an offer withdrawn, makes a new version) and the buyer's last
 * purchase of it is still the one the price ceiling compared with. `fresh_held`: the key was
 * inserted, completed with its response, by this statement, for a verified purchase only. A
 * purchase whose key exists already (a duplicate, or an expired record) or whose read is stale
 * writes nothing; the engine then decides again on a row just read, through the regular claim.
 *
 * The key rows are inserted after the claims' advisory locks and rows and before any transaction
 * row is locked (store/change.ts's lock order), in scope_hash order; the checks lock nothing.
 */
export interface FreshClaim extends Omit<ClaimCompletion, 'lockId'> {
  fingerprint: string;
  createdAt: Date;
  expiresAt: Date;
}

/** What a cached purchase read was: the capability's row version and the buyer's last purchase of it. */
export interface PurchaseCheck {
  capabilityId: string;
  capabilityVersion: string;
  buyerUserId: string;
  lastPurchaseId: string | null;
}

interface NumberedPurchase {
  freshClaim: FreshClaim;
  check: PurchaseCheck;
  ordinal: number;
}

export function freshPurchaseClauses(purchases: NumberedPurchase[], bindings: unknown[]): string[] {
  bindings.push(
    JSON.stringify(
      purchases.map(({ check, ordinal }) => ({
        ordinal,
        capability_id: check.capabilityId,
        capability_version: check.capabilityVersion,
        buyer_user_id: check.buyerUserId,
        last_purchase_id: check.lastPurchaseId,
      })),
    ),
    JSON.stringify(
      purchases.map(({ freshClaim, ordinal }) => ({
        ordinal,
        scope_hash: freshClaim.scopeHash,
        fingerprint: freshClaim.fingerprint,
        token: freshClaim.token,
        created_at: freshClaim.createdAt,
        expires_at: freshClaim.expiresAt,
        response_status: freshClaim.responseStatus,
        response_body: freshClaim.responseBody,
      })),
    ),
  );
  return [
    `check_input AS (SELECT * FROM jsonb_to_recordset(?::jsonb)
      AS input(ordinal int, capability_id uuid, capability_version text, buyer_user_id uuid, last_purchase_id uuid))`,
    `verified AS (SELECT input.ordinal FROM check_input AS input
      WHERE EXISTS (SELECT 1 FROM capabilities AS capability WHERE capability.id = input.capability_id AND capability.xmin::text = input.capability_version)
        AND (SELECT last.id FROM transactions AS last WHERE last.buyer_user_id = input.buyer_user_id AND last.capability_id = input.capability_id
              ORDER BY last.created_at DESC LIMIT 1) IS NOT DISTINCT FROM input.last_purchase_id)`,
    `fresh_input AS (SELECT * FROM jsonb_to_recordset(?::jsonb)
      AS input(ordinal int, scope_hash text, fingerprint text, token uuid, created_at timestamptz, expires_at timestamptz, response_status int, response_body jsonb))`,
    `fresh_claimed AS (INSERT INTO idempotency_keys (scope_hash, fingerprint, state, claim_token, created_at, expires_at, response_status, response_body)
      SELECT scope_hash, fingerprint, 'completed', token, created_at, expires_at, response_status, response_body FROM fresh_input
       WHERE ordinal IN (SELECT ordinal FROM verified) ORDER BY scope_hash
      ON CONFLICT (scope_hash) DO NOTHING RETURNING scope_hash)`,
    'fresh_held AS (SELECT input.ordinal FROM fresh_input AS input WHERE input.scope_hash IN (SELECT scope_hash FROM fresh_claimed))',
  ];
}
