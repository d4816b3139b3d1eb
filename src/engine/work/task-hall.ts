import { currencyOfSpace, formatAmount } from '../../domain/money.ts';
import { combine, priceAlignment } from '../../domain/scoring.ts';
import { type TaskHallSort, taskHallSortOf, taskStatuses } from '../../domain/tasks.ts';
import { cosineWithStored, storedVectorOf, vectorOfStored } from '../../domain/term-vectors.ts';
import { searchQueryOf } from '../../domain/text.ts';
import { limits } from '../../limits.ts';
import type { TaskHallInput } from '../../schemas/tasks.ts';
import { afterTaskKey, type TaskHallFilter, taskColumns, taskHallOrders, taskHallQuery, type TaskRow, taskTextCandidates } from '../../store/tasks.ts';
import { decodeCursor, encodeCursor, integerText, isoTimestamp, uuidText, type EngineDependencies, type Principal } from '../common/index.ts';
import { pageOf } from './skills.ts';
import { taskView } from './task-rows.ts';

/**
 * The task hall (docs/tasks.md "The hall"): the open tasks of the caller's space, filtered, in a
 * keyset order or ranked by the matcher for a text query, the way the skill hall is; and the
 * market's statistics of that space.
 */
const sortName = (name: string) => (part: string) => part === name;
const bountyText = (part: string) => part === 'null' || integerText(part);
const keyShapes: Record<Exclude<TaskHallSort, 'relevance'>, ((part: string) => boolean)[]> = {
  newest: [isoTimestamp, uuidText],
  deadline: [isoTimestamp, uuidText],
  bounty_desc: [bountyText, uuidText],
  bounty_asc: [bountyText, uuidText],
};

export function createTaskHall({ db, now }: EngineDependencies) {
  async function hall(principal: Principal, input: TaskHallInput) {
    const textQuery = input.q === undefined ? undefined : searchQueryOf(input.q, limits.matchQueryTermsMax);
    const sort = taskHallSortOf(input.sort, input.q !== undefined);
    const filter: TaskHallFilter = {
      space: principal.caller_type,
      openAt: now(),
      category: input.category,
      mode: input.mode,
      city: input.city,
      minBounty: input.min_bounty,
      maxBounty: input.max_bounty,
      textQuery: textQuery === undefined ? undefined : textQuery === '' ? 'nothingsearchable' : textQuery,
    };
    if (sort === 'relevance') return ranked(principal, filter as TaskHallFilter & { textQuery: string }, input);
    const order = taskHallOrders[sort];
    const page = taskHallQuery(db, filter)
      .select(...taskColumns)
      .orderByRaw(order.orderBy)
      .limit(input.page_size + 1);
    if (input.cursor) afterTaskKey(page, sort, decodeCursor(input.cursor, [sortName(sort), ...keyShapes[sort]]).slice(1));
    else page.offset((input.page - 1) * input.page_size);
    const [countRows, rows] = await Promise.all([taskHallQuery(db, filter).count<{ count: string }[]>('* as count'), page as unknown as Promise<TaskRow[]>]);
    const listed = pageOf(rows, input, Number(countRows[0]?.count ?? 0), (row) => [sort, ...order.keyOf(row)]);
    return { ...listed, items: listed.items.map((row) => taskView(row, principal)), sort };
  }

  /** Ranked by the matcher from the stored term vectors (similarity, and the bounty against max_bounty). */
  async function ranked(principal: Principal, filter: TaskHallFilter & { textQuery: string }, input: TaskHallInput) {
    const candidates = await taskTextCandidates(db, filter, limits.skillHallCandidatesMax);
    const query = storedVectorOf({ title: input.q!, description: '', tags: [] });
    const queryVector = vectorOfStored(query);
    const scored = candidates
      .map((row) => {
        const similarity = cosineWithStored(queryVector, query.norm, row.term_vector);
        const bounty = row.bounty_amount === null ? null : BigInt(row.bounty_amount);
        const alignment = bounty === null || input.max_bounty === undefined ? 1 : priceAlignment(bounty, input.max_bounty);
        return { id: row.id, parts: combine(similarity, alignment, 0) };
      })
      .filter((entry) => entry.parts.similarity > 0)
      .sort((left, right) => right.parts.score - left.parts.score || (left.id < right.id ? -1 : 1));
    const start = input.cursor ? Number(decodeCursor(input.cursor, [sortName('relevance'), integerText])[1]) : (input.page - 1) * input.page_size;
    const slice = scored.slice(start, start + input.page_size);
    const rows = new Map(
      (
        (await db<TaskRow>('tasks')
          .whereIn(
            'id',
            slice.map((entry) => entry.id),
          )
          .select(...taskColumns)) as TaskRow[]
      ).map((row) => [row.id, row]),
    );
    const hasMore = scored.length > start + input.page_size;
    return {
      items: slice.filter((entry) => rows.has(entry.id)).map((entry) => ({ ...taskView(rows.get(entry.id)!, principal), score: entry.parts.score })),
      total: scored.length,
      page: input.page,
      page_size: input.page_size,
      has_more: hasMore,
      next_cursor: hasMore ? encodeCursor(['relevance', String(start + input.page_size)]) : null,
      sort: 'relevance' as const,
    };
  }

  /** Counts by status and category and the open bounties of the caller's space: three aggregate queries. */
  async function stats(principal: Principal) {
    const space = principal.caller_type;
    const [byStatus, byCategory, bounty] = await Promise.all([
      db('tasks').where('owner_type', space).groupBy('status').select('status').count<{ status: string; count: string }[]>('* as count'),
      db('tasks')
        .where('owner_type', space)
        .whereNot('status', 'draft')
        .groupBy('category')
        .orderBy('category')
        .select('category', db.raw(`count(*) FILTER (WHERE status = 'open') AS open`), db.raw('count(*) AS total')) as unknown as Promise<
        { category: string | null; open: string; total: string }[]
      >,
      db('tasks')
        .where('owner_type', space)
        .where('status', 'open')
        .whereNotNull('bounty_amount')
        .first(
          db.raw('count(*) AS count'),
          db.raw('coalesce(sum(bounty_amount), 0) AS total'),
          db.raw('percentile_disc(0.5) WITHIN GROUP (ORDER BY bounty_amount) AS median'),
        ) as Promise<{ count: string; total: string; median: string | null }>,
    ]);
    const counts = Object.fromEntries(taskStatuses.map((status) => [status, 0])) as Record<(typeof taskStatuses)[number], number>;
    for (const row of byStatus) counts[row.status as keyof typeof counts] = Number(row.count);
    return {
      owner_type: space,
      currency: currencyOfSpace(space),
      by_status: counts,
      by_category: byCategory.map((row) => ({ category: row.category, open: Number(row.open), total: Number(row.total) })),
      open_bounty: { count: Number(bounty.count), total: formatAmount(bounty.total), median: bounty.median === null ? null : formatAmount(bounty.median) },
    };
  }

  return { hall, stats };
}
