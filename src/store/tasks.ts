import type { Knex } from 'knex';
import type { TaskHallSort, TaskStatus } from '../domain/tasks.ts';
import type { StoredTermVector } from '../domain/term-vectors.ts';

/** Queries of tasks and their hall (docs/tasks.md). */
export interface TaskRow {
  id: string;
  owner_user_id: string;
  owner_type: 'agent' | 'human';
  title: string;
  description: string;
  mode: 'online' | 'offline';
  city: string | null;
  category: string | null;
  tags: string[];
  image_urls: string[];
  contact_info: { type: string; value: string } | null;
  bounty_amount: string | null;
  bounty_currency: 'UT' | 'CNY';
  bounty_held: string;
  delivery_hours: number | null;
  preferred_billing_model: string | null;
  estimated_quantity: number | null;
  status: TaskStatus;
  matched_skill_id: string | null;
  transaction_id: string | null;
  reused_from: string | null;
  term_vector: StoredTermVector;
  words_sha: string;
  created_at: Date;
  updated_at: Date;
  published_at: Date | null;
  expires_at: Date | null;
  ended_at: Date | null;
}

export const taskColumns = [
  'id',
  'owner_user_id',
  'owner_type',
  'title',
  'description',
  'mode',
  'city',
  'category',
  'tags',
  'image_urls',
  'contact_info',
  'bounty_amount',
  'bounty_currency',
  'bounty_held',
  'delivery_hours',
  'preferred_billing_model',
  'estimated_quantity',
  'status',
  'matched_skill_id',
  'transaction_id',
  'reused_from',
  'term_vector',
  'words_sha',
  'created_at',
  'updated_at',
  'published_at',
  'expires_at',
  'ended_at',
] as const;

export const findTask = (db: Knex, id: string) =>
  db<TaskRow>('tasks')
    .where({ id })
    .first(...taskColumns) as Promise<TaskRow | undefined>;
export const lockTask = (trx: Knex, id: string) =>
  trx<TaskRow>('tasks')
    .where({ id })
    .forNoKeyUpdate()
    .first(...taskColumns) as Promise<TaskRow | undefined>;

/**
 * The task locked as `lockTask` does (FOR NO KEY UPDATE), by an UPDATE that writes the row as it
 * was, so that its version (`xmin`) is renewed: for the moves that change who a task's move tells
 * or what it may do (an application, a selection), so that a task move decided in one statement
 * on the version it read (engine/work/task-end.ts, task-update.ts) fails its compare-and-set and
 * is decided again. Nothing an index or the generated search vector reads is set: PostgreSQL keeps
 * the new version on its page (HOT) and does not compute the search vector again (PostgreSQL 13
 * and later recompute a stored generated column only when a column it reads is set).
 */
export async function lockTaskRenewingVersion(trx: Knex, id: string): Promise<TaskRow | undefined> {
  const [row] = (await trx<TaskRow>('tasks')
    .where({ id })
    .update({ status: trx.raw('status') })
    .returning([...taskColumns])) as TaskRow[];
  return row;
}

export interface TaskHallFilter {
  space: 'agent' | 'human';
  category?: string;
  mode?: string;
  city?: string;
  minBounty?: bigint;
  maxBounty?: bigint;
  textQuery?: string;
  /** Now: a task past its deadline is expired for every move (docs/tasks.md "Expiry"), so the hall leaves it out before the sweeper does. */
  openAt?: Date;
}

/** The open tasks of one space that the filters select: the hall. */
export function taskHallQuery(db: Knex, filter: TaskHallFilter) {
  const query = db<TaskRow>('tasks').where('owner_type', filter.space).where('status', 'open');
  if (filter.openAt) query.where('expires_at', '>', filter.openAt);
  if (filter.category) query.where('category', filter.category);
  if (filter.mode) query.where('mode', filter.mode);
  if (filter.city) query.whereRaw('lower(city) = lower(?)', [filter.city]);
  if (filter.minBounty !== undefined) query.where('bounty_amount', '>=', String(filter.minBounty));
  if (filter.maxBounty !== undefined) query.where('bounty_amount', '<=', String(filter.maxBounty));
  if (filter.textQuery !== undefined) query.whereRaw(`search_vector @@ to_tsquery('english', ?)`, [filter.textQuery]);
  return query;
}

export interface RankableTask {
  id: string;
  term_vector: StoredTermVector;
  bounty_amount: string | null;
}

export function taskTextCandidates(db: Knex, filter: TaskHallFilter & { textQuery: string }, limit: number): Promise<RankableTask[]> {
  return taskHallQuery(db, filter)
    .select('id', 'term_vector', 'bounty_amount')
    .orderByRaw(`ts_rank(search_vector, to_tsquery('english', ?)) DESC, id`, [filter.textQuery])
    .limit(limit);
}

/** The keyset of each stored order; tasks without a bounty come last in both bounty orders. */
export const taskHallOrders: Record<Exclude<TaskHallSort, 'relevance'>, { orderBy: string; keyOf: (row: TaskRow) => string[] }> = {
  newest: { orderBy: 'published_at DESC, id DESC', keyOf: (row) => [new Date(row.published_at!).toISOString(), row.id] },
  bounty_desc: { orderBy: 'bounty_amount DESC NULLS LAST, id DESC', keyOf: (row) => [row.bounty_amount ?? 'null', row.id] },
  bounty_asc: { orderBy: 'bounty_amount ASC NULLS LAST, id ASC', keyOf: (row) => [row.bounty_amount ?? 'null', row.id] },
  deadline: { orderBy: 'expires_at ASC, id ASC', keyOf: (row) => [new Date(row.expires_at!).toISOString(), row.id] },
};

export function afterTaskKey(query: Knex.QueryBuilder, sort: Exclude<TaskHallSort, 'relevance'>, key: string[]) {
  const [first, id] = key as [string, string];
  if (sort === 'newest') return query.whereRaw('(published_at, id) < (?::timestamptz, ?::uuid)', [first, id]);
  if (sort === 'deadline') return query.whereRaw('(expires_at, id) > (?::timestamptz, ?::uuid)', [first, id]);
  const after = sort === 'bounty_asc' ? '>' : '<';
  if (first === 'null') return query.whereRaw(`bounty_amount IS NULL AND id ${after} ?::uuid`, [id]);
  return query.whereRaw(`(bounty_amount ${after} ?::bigint OR (bounty_amount = ?::bigint AND id ${after} ?::uuid) OR bounty_amount IS NULL)`, [
    first,
    first,
    id,
  ]);
}
