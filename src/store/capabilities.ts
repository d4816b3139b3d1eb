import type { Knex } from 'knex';
import type { StoredTermVector } from '../domain/term-vectors.ts';

/** Queries of the capability list (GET /api/v1/capabilities) and its sales counts. */
export interface CapabilityListFilter {
  space: 'agent' | 'human';
  /** The caller: withdrawn capabilities are listed to their owner only. */
  callerId: string;
  availability: 'true' | 'false' | 'any';
  category?: string;
  capabilityType?: string;
  pricingModel?: string;
  /** Minor units, inclusive. */
  minPrice?: bigint;
  maxPrice?: bigint;
  ownerId?: string;
  /** Each word must appear in the title, the description or a tag, in any case. */
  words: string[];
}

/** `%`, `_` and the escape character itself match literally in the ILIKE patterns below. */
export const escapeLikePattern = (text: string) => text.replace(/[\\%_]/g, (character) => `\\${character}`);

/**
 * The capabilities a filter selects. Deleted ones never; another space's never. Offered ones of
 * anyone in the space, and withdrawn ones only of the caller: a withdrawn offer is its owner's
 * business, not a market listing.
 */
export function capabilityListQuery(db: Knex, filter: CapabilityListFilter) {
  const query = db<CapabilityRow>('capabilities').where({ owner_type: filter.space }).whereNull('deleted_at');
  if (filter.availability === 'true') query.where({ available: true });
  else if (filter.availability === 'false') query.where({ available: false, owner_user_id: filter.callerId });
  else
    query.where((where) => {
      where.where({ available: true }).orWhere({ owner_user_id: filter.callerId });
    });
  if (filter.category) query.where({ category: filter.category });
  if (filter.capabilityType) query.where({ capability_type: filter.capabilityType });
  if (filter.pricingModel) query.where({ pricing_model: filter.pricingModel });
  if (filter.minPrice !== undefined) query.where('price', '>=', String(filter.minPrice));
  if (filter.maxPrice !== undefined) query.where('price', '<=', String(filter.maxPrice));
  if (filter.ownerId) query.where({ owner_user_id: filter.ownerId });
  for (const word of filter.words) {
    const pattern = `%${escapeLikePattern(word)}%`;
    query.where((where) => {
      where
        .whereRaw('title ILIKE ?', [pattern])
        .orWhereRaw('description ILIKE ?', [pattern])
        .orWhereRaw('EXISTS (SELECT 1 FROM jsonb_array_elements_text(tags) AS tag WHERE tag ILIKE ?)', [pattern]);
    });
  }
  return query;
}

/** Completed (settled) sales per capability, for the ids given; absent ids sold nothing. */
export async function settledSalesOf(db: Knex, ids: string[]): Promise<Map<string, number>> {
  if (ids.length === 0) return new Map();
  // settled_at is set exactly when a transaction settles (a terminal state): the count is read
  // from the (capability_id, settled_at) index alone (db/migrations/071_transaction_moves_hot.ts).
  const rows = await db('transactions')
    .whereIn('capability_id', ids)
    .whereNotNull('settled_at')
    .groupBy('capability_id')
    .select('capability_id')
    .count<{ capability_id: string; count: string }[]>('* as count');
  return new Map(rows.map((row) => [row.capability_id, Number(row.count)]));
}

/** A capabilities row as the database holds it. */
export interface CapabilityRow {
  id: string;
  owner_user_id: string;
  owner_type: 'agent' | 'human';
  title: string;
  description: string;
  category: string;
  capability_type: string;
  pricing_model: string;
  price: string;
  auto_accept_min: string | null;
  delivery_mode: string;
  tags: string[];
  daily_limit: number | null;
  rate_limit_per_min: number | null;
  callback_url: string | null;
  callback_timeout_sec: number;
  /** Signs invoke callbacks; never part of a view except the one answer that creates or rotates it. */
  callback_secret: string | null;
  deleted_at: Date | null;
  available: boolean;
  quality_score: string;
  /** Computed when the words are written (domain/term-vectors.ts); null for rows older than that. */
  term_vector: StoredTermVector | null;
  /** The digest of the words, which a stored embedding must carry to be used. */
  words_sha?: string | null;
  created_at: Date;
  updated_at: Date;
}
