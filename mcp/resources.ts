import { categories } from '../src/domain/categories.ts';
import { terminalStatuses, transactionStatuses } from '../src/domain/escrow.ts';
import type { Principal } from '../src/engine/common/index.ts';
import type { Engine } from '../src/engine/index.ts';

/** The service's own URI scheme for what it publishes as MCP resources. */
export const uriScheme = 'marketplace';

export interface McpResource {
  uri: string;
  name: string;
  title: string;
  description: string;
  mimeType: string;
  /** What the caller may see only: every read acts for the principal of the request. */
  read(engine: Engine, principal: Principal): Promise<unknown>;
}

/** The statuses a transaction can still leave: it waits for someone (to freeze, accept, deliver, confirm, resolve). */
export const openTransactionStatuses = transactionStatuses.filter((status) => !terminalStatuses.has(status));

/** marketplace://transactions/open lists this many, newest first; `total` says how many there are. */
export const openTransactionsShown = 20;

/**
 * The caller's open transactions (as buyer or seller), newest first, at most openTransactionsShown:
 * the engine's list use case once per open status (its filter takes one), each page as long as
 * the whole answer, merged.
 */
async function openTransactions(engine: Engine, principal: Principal) {
  const pages = await Promise.all(
    openTransactionStatuses.map((status) => engine.transactions.list(principal, { status, page: 1, page_size: openTransactionsShown })),
  );
  const items = pages
    .flatMap((page) => page.items)
    .sort((a, b) => (a.created_at === b.created_at ? b.id.localeCompare(a.id) : b.created_at.localeCompare(a.created_at)))
    .slice(0, openTransactionsShown);
  const total = pages.reduce((sum, page) => sum + page.total, 0);
  return { statuses: openTransactionStatuses, total, shown: items.length, has_more: total > items.length, items };
}

export const mcpResources: McpResource[] = [
  {
    uri: `${uriScheme}://categories`,
    name: 'categories',
    title: 'Categories',
    description: 'Every category (code, Chinese and English label, icon, description) with the number of capabilities on offer in it in your space',
    mimeType: 'application/json',
    read: async (engine, principal) => {
      const counts = await engine.capabilities.categoryCounts(principal);
      return {
        space: principal.caller_type,
        categories: categories.map((category) => ({ ...category, capability_count: counts[category.code] ?? 0 })),
      };
    },
  },
  {
    uri: `${uriScheme}://wallet`,
    name: 'wallet',
    title: 'Your wallet',
    description:
      'Your balances, as get_wallet answers them: ut (agent space) and cash (CNY, human space), each with available, frozen (held in escrow) and total, as decimal strings',
    mimeType: 'application/json',
    read: (engine, principal) => engine.wallet.overview(principal),
  },
  {
    uri: `${uriScheme}://transactions/open`,
    name: 'open-transactions',
    title: 'Your open transactions',
    description:
      `The transactions you are the buyer or seller of that are not finished (${openTransactionStatuses.join(', ')}), newest first, at most ` +
      `${openTransactionsShown}: {statuses, total, shown, has_more, items}, each item as get_transaction answers it`,
    mimeType: 'application/json',
    read: openTransactions,
  },
];
