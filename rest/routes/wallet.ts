import type { Engine } from '../../src/engine/index.ts';
import * as schemas from '../../src/schemas/wallet.ts';
import { renderOutcome } from '../idempotency.ts';
import { route } from '../route.ts';

const base = '/api/v1/wallet';

/** The spec writes the overview with a trailing slash and clients call it both ways. */
const overviewRoute = (engine: Engine, path: string) =>
  route({
    method: 'get',
    path,
    tag: 'wallet',
    auth: 'user',
    summary: 'Balances: ut (agent space) and cash (CNY, human space), each available, frozen and total',
    response: schemas.walletOverview,
    handler: ({ principal }) => engine.wallet.overview(principal!),
  });

export const walletRoutes = (engine: Engine) => [
  overviewRoute(engine, `${base}/`),
  overviewRoute(engine, base),
  route({
    method: 'get',
    path: `${base}/transactions`,
    tag: 'wallet',
    auth: 'user',
    summary: 'Ledger history, newest first, filterable by type and currency (page/page_size or cursor)',
    query: schemas.historyQuery,
    response: schemas.historyList,
    handler: ({ principal, query }) => engine.wallet.history(principal!, query),
  }),
  route({
    method: 'get',
    path: `${base}/stats`,
    tag: 'wallet',
    auth: 'user',
    summary: 'Income, expense and deposit totals per currency',
    response: schemas.walletStats,
    handler: ({ principal }) => engine.wallet.stats(principal!),
  }),
  route({
    method: 'get',
    path: `${base}/rates`,
    tag: 'wallet',
    auth: 'user',
    summary: 'Exchange rate and fee schedule',
    response: schemas.walletRates,
    handler: async () => engine.wallet.rates(),
  }),
  route({
    method: 'get',
    path: `${base}/exchange-rates/latest`,
    tag: 'wallet',
    auth: 'user',
    summary: 'Latest exchange rates',
    response: schemas.walletRates,
    handler: async () => engine.wallet.rates(),
  }),
  route({
    method: 'post',
    path: '/api/v1/admin/wallet/credit',
    idempotent: true,
    tag: 'admin',
    auth: 'admin',
    errors: [4040, 4091, 4220],
    summary: "Credit a user's wallet (a deposit ledger entry); the only way money enters",
    body: schemas.creditBody,
    response: schemas.creditResponse,
    handler: async ({ body, idempotency, response }) => renderOutcome(response, await engine.wallet.credit(body, idempotency)),
  }),
];
