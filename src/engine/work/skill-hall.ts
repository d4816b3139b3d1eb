import { hallSortOf, type HallSort } from '../../domain/skills.ts';
import { combine, normalizedQuality, priceAlignment } from '../../domain/scoring.ts';
import { cosineWithStored, storedVectorOf, vectorOfStored } from '../../domain/term-vectors.ts';
import { searchQueryOf } from '../../domain/text.ts';
import { limits } from '../../limits.ts';
import type { HallInput } from '../../schemas/skills.ts';
import { afterKey, type HallFilter, hallOrders, hallQuery, hallTextCandidates, skillColumns, type SkillRow, skillsByIds } from '../../store/skills.ts';
import { decodeCursor, encodeCursor, integerText, isoTimestamp, uuidText, type EngineDependencies, type Principal } from '../common/index.ts';
import { pageOf } from './skills.ts';
import { skillView } from './skill-rows.ts';

/**
 * The skill hall (docs/skills.md "The hall"): the active skills of the caller's space, filtered,
 * in one of four keyset orders, or ranked by the matcher for a text query. A human never sees an
 * agent's skill there, nor the other way round: the space is the caller's, never a parameter.
 */
const sortName = (name: string) => (part: string) => part === name;
const priceText = (part: string) => part === 'null' || integerText(part);
const qualityText = (part: string) => /^\d{1,3}\.\d{1,3}$/.test(part);
const keyShapes: Record<Exclude<HallSort, 'relevance'>, ((part: string) => boolean)[]> = {
  newest: [isoTimestamp, uuidText],
  quality: [qualityText, uuidText],
  price_asc: [priceText, uuidText],
  price_desc: [priceText, uuidText],
};

export function createSkillHall({ db }: EngineDependencies) {
  async function hall(principal: Principal, input: HallInput) {
    const textQuery = input.q === undefined ? undefined : searchQueryOf(input.q, limits.matchQueryTermsMax);
    const sort = hallSortOf(input.sort, input.q !== undefined);
    const filter: HallFilter = {
      space: principal.caller_type,
      category: input.category,
      mode: input.mode,
      city: input.city,
      minPrice: input.min_price_ut,
      maxPrice: input.max_price_ut,
      // A query with nothing searchable in it (only punctuation) finds nothing rather than everything.
      textQuery: textQuery === undefined ? undefined : textQuery === '' ? 'nothingsearchable' : textQuery,
    };
    if (sort === 'relevance') return ranked(filter as HallFilter & { textQuery: string }, input);
    return ordered(filter, sort, input);
  }

  /** One keyset page in a stored order: two index scans (the page and the count), whatever the hall's size. */
  async function ordered(filter: HallFilter, sort: Exclude<HallSort, 'relevance'>, input: HallInput) {
    const order = hallOrders[sort];
    const page = hallQuery(db, filter)
      .select(...skillColumns)
      .orderByRaw(order.orderBy)
      .limit(input.page_size + 1);
    if (input.cursor) afterKey(page, sort, decodeCursor(input.cursor, [sortName(sort), ...keyShapes[sort]]).slice(1));
    else page.offset((input.page - 1) * input.page_size);
    const [countRows, rows] = await Promise.all([hallQuery(db, filter).count<{ count: string }[]>('* as count'), page as unknown as Promise<SkillRow[]>]);
    const listed = pageOf(rows, input, Number(countRows[0]?.count ?? 0), (row) => [sort, ...order.keyOf(row)]);
    return { ...listed, items: listed.items.map(skillView), sort };
  }

  /**
   * Ranked by the matcher: the database finds the matches through the search index (its best
   * `skillHallCandidatesMax` by text rank), the engine scores each from its stored term vector
   * against the query's (similarity, price within a max_price_ut bound, quality), and a page is a
   * slice of that ranking. The cursor is the position in it: the ranking is a pure function of
   * the rows, so every instance answers the same page for it.
   */
  async function ranked(filter: HallFilter & { textQuery: string }, input: HallInput) {
    const candidates = await hallTextCandidates(db, filter, limits.skillHallCandidatesMax);
    const query = storedVectorOf({ title: input.q!, description: '', tags: [] });
    const queryVector = vectorOfStored(query);
    const scored = candidates
      .map((row) => {
        const similarity = cosineWithStored(queryVector, query.norm, row.term_vector);
        const price = row.price === null ? null : BigInt(row.price);
        const alignment = price === null || input.max_price_ut === undefined ? 1 : priceAlignment(price, input.max_price_ut);
        return { id: row.id, parts: combine(similarity, alignment, normalizedQuality(Number(row.quality_score))) };
      })
      .filter((entry) => entry.parts.similarity > 0)
      .sort((left, right) => right.parts.score - left.parts.score || (left.id < right.id ? -1 : 1));
    const start = input.cursor ? Number(decodeCursor(input.cursor, [sortName('relevance'), integerText])[1]) : (input.page - 1) * input.page_size;
    const slice = scored.slice(start, start + input.page_size);
    const rows = await skillsByIds(
      db,
      slice.map((entry) => entry.id),
    );
    const hasMore = scored.length > start + input.page_size;
    return {
      // A skill deleted between the two reads is left out of its page rather than shown.
      items: slice.filter((entry) => rows.has(entry.id)).map((entry) => ({ ...skillView(rows.get(entry.id)!), score: entry.parts.score })),
      total: scored.length,
      page: input.page,
      page_size: input.page_size,
      has_more: hasMore,
      next_cursor: hasMore ? encodeCursor(['relevance', String(start + input.page_size)]) : null,
      sort: 'relevance' as const,
    };
  }

  return { hall };
}

export type SkillHall = ReturnType<typeof createSkillHall>;
