import type { Knex } from 'knex';
import type { HallSort } from '../domain/skills.ts';
import type { StoredTermVector } from '../domain/term-vectors.ts';

/** Queries of skills, their hall and their ratings (docs/skills.md). */
export interface SkillRow {
  id: string;
  owner_user_id: string;
  owner_type: 'agent' | 'human';
  name: string;
  description: string;
  mode: 'online' | 'offline';
  city: string | null;
  category: string;
  tags: string[];
  images: string[];
  price: string | null;
  pricing_model: string;
  min_duration: number | null;
  max_duration: number | null;
  status: 'active' | 'inactive';
  source: 'manual' | 'extracted' | 'ai_created';
  candidate_id: string | null;
  term_vector: StoredTermVector;
  words_sha: string;
  rating_count: number;
  rating_sum: number;
  quality_score: string;
  /** Every stored rating, counted towards quality or not (rating_count and rating_sum are the counted ones). */
  ratings_total: number;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

/** Every column but the generated search column, which nobody reads back. */
export const skillColumns = [
  'id',
  'owner_user_id',
  'owner_type',
  'name',
  'description',
  'mode',
  'city',
  'category',
  'tags',
  'images',
  'price',
  'pricing_model',
  'min_duration',
  'max_duration',
  'status',
  'source',
  'candidate_id',
  'term_vector',
  'words_sha',
  'rating_count',
  'rating_sum',
  'quality_score',
  'ratings_total',
  'created_at',
  'updated_at',
  'deleted_at',
] as const;

export interface HallFilter {
  space: 'agent' | 'human';
  category?: string;
  mode?: string;
  city?: string;
  /** Minor units, inclusive; a bound leaves unpriced skills out. */
  minPrice?: bigint;
  maxPrice?: bigint;
  /** A to_tsquery text (domain/text.ts searchQueryOf): only skills whose words it finds. */
  textQuery?: string;
}

/** The active, undeleted skills of one space that the filters select: the hall. */
export function hallQuery(db: Knex, filter: HallFilter) {
  const query = db<SkillRow>('skills').where({ owner_type: filter.space, status: 'active' }).whereNull('deleted_at');
  if (filter.category) query.where({ category: filter.category });
  if (filter.mode) query.where('mode', filter.mode);
  if (filter.city) query.whereRaw('lower(city) = lower(?)', [filter.city]);
  if (filter.minPrice !== undefined) query.where('price', '>=', String(filter.minPrice));
  if (filter.maxPrice !== undefined) query.where('price', '<=', String(filter.maxPrice));
  if (filter.textQuery !== undefined) query.whereRaw(`search_vector @@ to_tsquery('english', ?)`, [filter.textQuery]);
  return query;
}

/** What ranking by relevance reads of each match: no description, only the stored vector. */
export interface RankableSkill {
  id: string;
  term_vector: StoredTermVector;
  price: string | null;
  quality_score: string;
}

/** The matches of a text query, best text rank first, at most `limit`: the matcher ranks these. */
export function hallTextCandidates(db: Knex, filter: HallFilter & { textQuery: string }, limit: number): Promise<RankableSkill[]> {
  return hallQuery(db, filter)
    .select('id', 'term_vector', 'price', 'quality_score')
    .orderByRaw(`ts_rank(search_vector, to_tsquery('english', ?)) DESC, id`, [filter.textQuery])
    .limit(limit);
}

/**
 * The keyset of each order (cursor parts after the sort's name). Unpriced skills come last in
 * both price orders, so the price part of a cursor may be "null".
 */
export const hallOrders: Record<Exclude<HallSort, 'relevance'>, { orderBy: string; keyOf: (row: SkillRow) => string[] }> = {
  newest: { orderBy: 'created_at DESC, id DESC', keyOf: (row) => [new Date(row.created_at).toISOString(), row.id] },
  quality: { orderBy: 'quality_score DESC, id DESC', keyOf: (row) => [String(row.quality_score), row.id] },
  price_asc: { orderBy: 'price ASC NULLS LAST, id ASC', keyOf: (row) => [row.price ?? 'null', row.id] },
  price_desc: { orderBy: 'price DESC NULLS LAST, id DESC', keyOf: (row) => [row.price ?? 'null', row.id] },
};

/** Rows after a cursor's key in the order given. */
export function afterKey(query: Knex.QueryBuilder, sort: Exclude<HallSort, 'relevance'>, key: string[]) {
  const [first, id] = key as [string, string];
  if (sort === 'newest') return query.whereRaw('(created_at, id) < (?::timestamptz, ?::uuid)', [first, id]);
  if (sort === 'quality') return query.whereRaw('(quality_score, id) < (?::numeric, ?::uuid)', [first, id]);
  const after = sort === 'price_asc' ? '>' : '<';
  if (first === 'null') return query.whereRaw(`price IS NULL AND id ${after} ?::uuid`, [id]);
  return query.whereRaw(`(price ${after} ?::bigint OR (price = ?::bigint AND id ${after} ?::uuid) OR price IS NULL)`, [first, first, id]);
}

/** The skills of one owner (their own list), newest first; deleted ones never. */
export function ownSkillsQuery(db: Knex, ownerId: string, space: string, status?: string) {
  const query = db<SkillRow>('skills').where('owner_user_id', ownerId).where('owner_type', space).whereNull('deleted_at');
  if (status) query.where('status', status);
  return query;
}

export function findSkill(db: Knex, id: string): Promise<SkillRow | undefined> {
  return db<SkillRow>('skills')
    .where({ id })
    .first(...skillColumns);
}

export async function skillsByIds(db: Knex, ids: string[]): Promise<Map<string, SkillRow>> {
  if (ids.length === 0) return new Map();
  const rows = (await db<SkillRow>('skills')
    .whereIn('id', ids)
    .select(...skillColumns)) as SkillRow[];
  return new Map(rows.map((row) => [row.id, row]));
}
