import { categories } from '../src/domain/categories.ts';
import type { Principal } from '../src/engine/dependencies.ts';
import type { Engine } from '../src/engine/index.ts';

/** The service's own URI scheme for what it publishes as MCP resources. */
export const uriScheme = 'marketplace';

export interface McpResource {
  uri: string;
  name: string;
  description: string;
  mimeType: string;
  read(engine: Engine, principal: Principal): Promise<unknown>;
}

export const mcpResources: McpResource[] = [
  {
    uri: `${uriScheme}://categories`,
    name: 'categories',
    description: "Every category (code, Chinese and English label, icon, description) with the number of capabilities on offer in it in your space",
    mimeType: 'application/json',
    read: async (engine, principal) => {
      const counts = await engine.capabilities.categoryCounts(principal);
      return {
        space: principal.caller_type,
        categories: categories.map((category) => ({ ...category, capability_count: counts[category.code] ?? 0 })),
      };
    },
  },
];
