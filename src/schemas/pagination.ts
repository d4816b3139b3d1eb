import { z } from 'zod';
import { limits } from '../limits.ts';

/**
 * The page number and size with their limits, written once: query strings (pageQuery) and JSON
 * arguments (pageArguments, for MCP tools) take the same values and differ only in the carrier.
 */
const pageNumber = z.number().int().min(1).max(limits.pageNumberMax);
const pageSize = z.number().int().min(1).max(limits.pageSizeMax);
const cursor = z.string().min(1).max(200).optional().meta({ description: 'next_cursor of the previous page; when given, page is ignored' });

/** Plain decimal digits only: `0x10` or `1e2` are typos, not numbers to guess at. */
const digits = z
  .string()
  .regex(/^\d{1,9}$/, 'must be a whole number')
  .transform(Number);

/** page/page_size as the spec says, plus an opaque keyset `cursor` that is stable under inserts. */
export const pageQuery = {
  page: digits.pipe(pageNumber).default(1),
  page_size: digits.pipe(pageSize).default(limits.pageSizeDefault),
  cursor,
};

/** The same paging as JSON numbers, for callers that send a JSON object rather than a query string. */
export const pageArguments = {
  page: pageNumber.default(1),
  page_size: pageSize.default(limits.pageSizeDefault),
  cursor,
};

export const pagedList = <T extends z.ZodType>(item: T) =>
  z.object({
    items: z.array(item),
    total: z.number().int(),
    page: z.number().int(),
    page_size: z.number().int(),
    has_more: z.boolean(),
    next_cursor: z.string().nullable(),
  });
