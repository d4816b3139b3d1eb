import { z } from 'zod';
import { categories } from '../../src/domain/categories.ts';
import { route } from '../route.ts';

const categorySchema = z
  .object({ code: z.string(), label: z.string(), label_en: z.string(), icon: z.string(), description: z.string() })
  .meta({ id: 'Category' });

export const categoryRoutes = () => [
  route({
    method: 'get',
    path: '/api/v1/categories',
    tag: 'categories',
    auth: 'none',
    summary: 'All categories with code, Chinese and English label, icon and description',
    response: z.array(categorySchema),
    handler: async () => categories,
  }),
];
