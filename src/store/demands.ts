import type { StoredTermVector } from '../domain/term-vectors.ts';
import type { CapabilityRow } from './capabilities.ts';
import type { Knex } from 'knex';
import type { StoredDemandStatus } from '../domain/demands.ts';

export interface DemandRow {
  id: string;
  owner_user_id: string;
  owner_type: 'agent' | 'human';
  title: string | null;
  description: string;
  category: string | null;
  tags: string[];
  max_price: string | null;
  auto_accept: boolean;
  demand_type: 'explicit' | 'implicit';
  status: StoredDemandStatus;
  expires_at: Date | null;
  transaction_id: string | null;
  auto_accept_claimed_at: Date | null;
  auto_accept_attempts: number;
  /** Why the last auto-accept attempt did not buy; null once one bought or none failed. */
  auto_accept_failure: AutoAcceptFailure | null;
  /** The person's own key that made the demand, whose agent budget its auto-accept purchase is charged to (migration 040). */
  budget_key_id?: string | null;
  /** Computed when the words are written (domain/term-vectors.ts); null for rows older than that. */
  term_vector?: StoredTermVector | null;
  /** The digest of the words (domain/term-vectors.ts wordsDigestOf), which a stored embedding must carry to be used. */
  words_sha?: string | null;
  cancelled_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface AutoAcceptFailure {
  code: number;
  message: string;
  data: Record<string, unknown> | null;
  capability_id: string;
  at: string;
}

/** Every column but the search vector, which only the database reads. */
export const demandColumns = [
  'id',
  'owner_user_id',
  'owner_type',
  'title',
  'description',
  'category',
  'tags',
  'max_price',
  'auto_accept',
  'demand_type',
  'status',
  'expires_at',
  'transaction_id',
  'auto_accept_claimed_at',
  'auto_accept_attempts',
  'auto_accept_failure',
  'budget_key_id',
  'term_vector',
  'words_sha',
  'cancelled_at',
  'created_at',
  'updated_at',
] as const;

/** The capability columns matching needs (not the search vector, nor callback details). */
export const capabilityMatchColumns = [
  'id',
  'owner_user_id',
  'owner_type',
  'title',
  'description',
  'category',
  'tags',
  'pricing_model',
  'price',
  'quality_score',
  'available',
  'term_vector',
  'words_sha',
] as const;

/** Derived from the column list, so that the list and the type cannot drift apart. */
export type CapabilityMatchRow = Pick<CapabilityRow, (typeof capabilityMatchColumns)[number]>;

/**
 * A candidate's columns: all matching needs but the description, which only the few answered
 * candidates need (read for them afterwards). 200 descriptions of 10,000 characters were half of
 * a match's time in the candidate query.
 */
export const capabilityCandidateColumns = capabilityMatchColumns.filter((column) => column !== 'description');
export type CapabilityCandidateRow = Omit<CapabilityMatchRow, 'description'>;

export async function findDemand(db: Knex, id: string): Promise<DemandRow | undefined> {
  return db<DemandRow>('demands')
    .where({ id })
    .first(...demandColumns);
}

export interface DemandListFilter {
  userId: string;
  space: 'agent' | 'human';
  status?: StoredDemandStatus | 'expired';
  now: Date;
}

/** The caller's own demands in its space; open and expired are told apart by the clock. */
export function demandListQuery(db: Knex, filter: DemandListFilter) {
  const query = db<DemandRow>('demands').where({ owner_user_id: filter.userId, owner_type: filter.space });
  if (filter.status === 'expired') query.where({ status: 'open' }).where('expires_at', '<=', filter.now);
  else if (filter.status === 'open')
    query.where({ status: 'open' }).where((open) => {
      open.whereNull('expires_at').orWhere('expires_at', '>', filter.now);
    });
  else if (filter.status) query.where({ status: filter.status });
  return query;
}

/**
 * The candidate stage of matching. The database finds the offered capabilities of one space that
 * share a term with the query, keeps a bounded pool of them, and ts_rank orders the pool so that
 * only the best `limit` reach the engine's precise rerank.
 *
 * The pool is what keeps the cost from growing with the market: a demand's words such as "data"
 * or "deliver" are shared by a third of a large market, and ranking every such row costs a
 * detoasted vector and a ts_rank each (measured: 0.5 s at 100,000 capabilities). Bounded to the
 * newest `poolSize` rows that share a term, the work is constant: for a common query PostgreSQL
 * walks the (space, created_at) index newest first and stops when the pool is full; for a rare
 * query it takes the GIN index's few hits. The price is that, in a market with more than
 * `poolSize` rows sharing a term, an older listing must share more of the demand's terms than a
 * newer one to be seen, which favours offers that are still fresh (docs/matching.md).
 */
export async function capabilityCandidates(
  db: Knex,
  input: { query: string; space: string; excludeOwner: string; limit: number; poolSize: number },
): Promise<CapabilityCandidateRow[]> {
  if (input.query === '') return [];
  const result = await db.raw(
    `SELECT ${capabilityCandidateColumns.join(', ')} FROM (
        SELECT * FROM capabilities
         WHERE search_vector @@ to_tsquery('english', ?) AND owner_type = ? AND available AND owner_user_id <> ?
         ORDER BY created_at DESC, id DESC LIMIT ?
      ) AS pool, to_tsquery('english', ?) AS query
      ORDER BY ts_rank(search_vector, query) DESC, id LIMIT ?`,
    [input.query, input.space, input.excludeOwner, input.poolSize, input.query, input.limit],
  );
  return result.rows as CapabilityCandidateRow[];
}

/** The descriptions of the candidates a match answers with. */
export async function capabilityDescriptions(db: Knex, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = (await db('capabilities').whereIn('id', ids).select('id', 'description')) as { id: string; description: string }[];
  return new Map(rows.map((row) => [row.id, row.description]));
}

/** The same for open, unexpired demands of one space (discover-demands, auto-accept). */
export async function demandCandidates(
  db: Knex,
  input: { query: string; space: string; excludeOwner: string; now: Date; limit: number; autoAcceptWithin?: string },
): Promise<DemandRow[]> {
  if (input.query === '') return [];
  const budget = input.autoAcceptWithin === undefined ? '' : 'AND auto_accept AND max_price >= ?';
  const result = await db.raw(
    `SELECT ${demandColumns.join(', ')} FROM demands, to_tsquery('english', ?) AS query
      WHERE search_vector @@ query AND status = 'open' AND owner_type = ? AND owner_user_id <> ?
        AND (expires_at IS NULL OR expires_at > ?) ${budget}
      ORDER BY ts_rank(search_vector, query) DESC, id LIMIT ?`,
    [input.query, input.space, input.excludeOwner, input.now, ...(input.autoAcceptWithin === undefined ? [] : [input.autoAcceptWithin]), input.limit],
  );
  return result.rows as DemandRow[];
}
