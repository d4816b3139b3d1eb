import { z } from 'zod';
import { limits } from '../limits.ts';

/** page/page_size as the spec says, plus an opaque keyset `cursor` that is stable under inserts. */
/** Plain decimal digits only: `0x10` or `1e2` are typos, not numbers to guess at. */
const wholeNumber = (minimum: number, maximum: number) =>
  z.string().regex(/^\d{1,9}$/, 'must be a whole number').transform(Number).pipe(z.number().int().min(minimum).max(maximum));

export const pageQuery = {
  page: wholeNumber(1, limits.pageNumberMax).default(1),
  page_size: wholeNumber(1, limits.pageSizeMax).default(limits.pageSizeDefault),
  cursor: z.string().min(1).max(200).optional().meta({ description: 'next_cursor of the previous page; when given, page is ignored' }),
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
