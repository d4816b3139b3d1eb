import type { Knex } from 'knex';
import { decodeCursor, encodeCursor, isoTimestamp, uuidText } from './cursor.ts';

/**
 * The one way a list of the caller's rows is paged, newest first: by `created_at, id` (or another
 * timestamp column), with
 * page/page_size (offset) or a keyset cursor naming the last row seen, and the total of the
 * filtered rows. `filtered` builds the same filtered query twice (the page and the count).
 */
export async function newestFirstPage<Row extends { id: string }>(
  filtered: () => Knex.QueryBuilder,
  query: { page: number; page_size: number; cursor?: string },
  options: { createdAt?: string; select?: readonly string[] } = {},
) {
  const columns = { createdAt: options.createdAt ?? 'created_at', id: 'id' };
  const page = filtered()
    .select(...(options.select ?? ['*']))
    .orderBy([
      { column: columns.createdAt, order: 'desc' },
      { column: columns.id, order: 'desc' },
    ])
    .limit(query.page_size + 1);
  if (query.cursor) {
    const [createdAt, id] = decodeCursor(query.cursor, [isoTimestamp, uuidText]);
    page.whereRaw(`(${columns.createdAt}, ${columns.id}) < (?::timestamptz, ?::uuid)`, [createdAt!, id!]);
  } else {
    page.offset((query.page - 1) * query.page_size);
  }
  const [counted, rows] = await Promise.all([filtered().count<{ count: string }[]>('* as count'), page as unknown as Promise<Row[]>]);
  const items = rows.slice(0, query.page_size);
  const hasMore = rows.length > query.page_size;
  const last = items.at(-1);
  return {
    items,
    total: Number(counted[0]?.count ?? 0),
    page: query.page,
    page_size: query.page_size,
    has_more: hasMore,
    next_cursor: hasMore && last ? encodeCursor([new Date((last as Record<string, unknown>)[columns.createdAt] as Date).toISOString(), last.id]) : null,
  };
}
