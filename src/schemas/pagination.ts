import { z } from 'zod';
import { limits } from '../limits.ts';

/** page/page_size as the spec says, plus an opaque keyset `cursor` that is stable under inserts. */
export const pageQuery = {
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  page_size: z.coerce.number().int().min(1).max(limits.pageSizeMax).default(limits.pageSizeDefault),
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
