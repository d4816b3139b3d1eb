import type { z } from 'zod';
import type { Engine } from '../../src/engine/index.ts';
import type { PartyAction } from '../../src/engine/money/index.ts';
import * as schemas from '../../src/schemas/transactions.ts';
import { renderOutcome } from '../idempotency.ts';
import { route } from '../route.ts';

const base = '/api/v1/transactions';

/** One route per party action; they differ only in the body they accept. */
const actionRoute = (engine: Engine, action: PartyAction, summary: string, body: z.ZodType = schemas.actionBody.optional()) =>
  route({
    method: 'post',
    path: `${base}/:tx_id/${action}`,
    idempotent: true,
    tag: 'transactions',
    auth: 'user',
    // A freeze by a person's own key may be beyond its agent budget (4021).
    errors: [4020, ...(action === 'freeze' ? [4021] : []), 4030, 4040, 4090, 4091, 4220],
    summary,
    params: schemas.transactionIdParams,
    body,
    response: schemas.transactionResponse,
    handler: async ({ principal, params, body: input, idempotency, response }) => {
      const extra = (input ?? {}) as { result_payload?: Record<string, unknown>; reason?: string };
      const outcome = await engine.transactions.act(principal!, params.tx_id, action, extra, idempotency);
      return renderOutcome(response, outcome);
    },
  });

export const transactionRoutes = (engine: Engine) => [
  route({
    method: 'post',
    path: base,
    idempotent: true,
    tag: 'transactions',
    auth: 'user',
    successStatus: 201,
    errors: [4021, 4030, 4040, 4091, 4093, 4220],
    summary: 'Buy a capability: creates a transaction in pending_freeze (agents must send Idempotency-Key)',
    body: schemas.createTransactionBody,
    response: schemas.transactionResponse,
    handler: async ({ principal, body, idempotency, response }) => {
      const { idempotency_key: _key, ...command } = body;
      return renderOutcome(response, await engine.transactions.create(principal!, command, idempotency));
    },
  }),
  actionRoute(engine, 'freeze', 'Buyer freezes the price from the available balance'),
  actionRoute(engine, 'accept', 'Seller accepts the frozen order'),
  actionRoute(engine, 'reject', 'Seller rejects (from frozen or accepted); the buyer is refunded'),
  actionRoute(engine, 'deliver', 'Seller delivers the result payload', schemas.deliverBody),
  actionRoute(engine, 'confirm', 'Buyer confirms the delivery; the seller is paid'),
  actionRoute(engine, 'cancel', 'Buyer cancels (pending_freeze, frozen, or accepted after the delivery deadline)'),
  actionRoute(engine, 'dispute', 'Buyer disputes a delivery before auto_confirm_at', schemas.disputeBody.optional()),
  route({
    method: 'get',
    path: base,
    tag: 'transactions',
    auth: 'user',
    summary: "The caller's transactions, newest first (page/page_size or cursor)",
    query: schemas.listTransactionsQuery,
    response: schemas.transactionList,
    handler: ({ principal, query }) => engine.transactions.list(principal!, query),
  }),
  route({
    method: 'get',
    path: `${base}/:tx_id`,
    tag: 'transactions',
    auth: 'user',
    errors: [4040],
    summary: 'Transaction details, for its buyer or seller only',
    params: schemas.transactionIdParams,
    response: schemas.transactionResponse,
    handler: ({ principal, params }) => engine.transactions.get(principal!, params.tx_id),
  }),
  route({
    method: 'post',
    path: '/api/v1/admin/transactions/:tx_id/resolve',
    idempotent: true,
    tag: 'admin',
    auth: 'admin',
    errors: [4040, 4090],
    summary: 'Resolve a dispute: settle to the seller or refund the buyer',
    params: schemas.transactionIdParams,
    body: schemas.resolveBody,
    response: schemas.transactionResponse,
    handler: async ({ params, body, idempotency, response }) =>
      renderOutcome(response, await engine.transactions.resolve(params.tx_id, body.outcome, idempotency)),
  }),
];
