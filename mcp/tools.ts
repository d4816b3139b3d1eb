import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Principal } from '../src/engine/dependencies.ts';
import type { Engine } from '../src/engine/index.ts';
import { AppError, errorBody } from '../src/errors.ts';
import { fingerprintOf } from '../src/engine/idempotency.ts';
import { capabilityIdParams, searchCapabilitiesArguments } from '../src/schemas/capabilities.ts';
import { createDemandBody } from '../src/schemas/demands.ts';
import { matchBody } from '../src/schemas/matching.ts';
import { createTransactionBody, transactionIdParams } from '../src/schemas/transactions.ts';

import { type McpTool, tool } from './tool.ts';
import { skillTools } from './skill-tools.ts';
import { taskTools } from './task-tools.ts';

export { type McpTool, tool };

/**
 * A new demand's idempotency scope. MCP keys live apart from REST's (`POST /api/v1/demands`),
 * like buy_capability's: a key names one call of this tool by this credential.
 */
const createDemandOperation = 'mcp create_demand';

/** JSON cannot carry a bigint (a parsed amount): the fingerprint sees it as its decimal string of minor units. */
const fingerprintOfArguments = (input: Record<string, unknown>) =>
  fingerprintOf(Object.fromEntries(Object.entries(input).map(([name, value]) => [name, typeof value === 'bigint' ? value.toString() : value])));

/** get_wallet takes nothing; REST's GET /wallet/ has no schema to share, and strict rejects stray arguments. */
const noArguments = z.strictObject({});

export const mcpTools: McpTool[] = [
  tool({
    name: 'get_capability',
    description: "Details of one capability in your space (price, pricing model, category, quality). Same as GET /api/v1/capabilities/{cap_id}.",
    input: capabilityIdParams,
    writes: false,
    handler: (engine, principal, input) => engine.capabilities.get(principal, input.cap_id),
  }),
  tool({
    name: 'buy_capability',
    description:
      "Buy a capability: creates a transaction and freezes its price from your available balance (escrow) in one step. " +
      'The seller is paid only when you confirm the delivery. Pass an idempotency_key (any unique string up to 64 printable ' +
      'characters) and reuse it when you retry the same purchase: one key buys once, and after a failed freeze (code 4020, ' +
      'insufficient balance) calling again with the same key freezes the same transaction. Without a key a new one is generated, ' +
      'so every call is a new purchase; the key used is returned. Answers {transaction, idempotency_key}.',
    input: createTransactionBody,
    writes: true,
    handler: async (engine, principal, input) => {
      const { idempotency_key: givenKey, ...command } = input;
      const key = givenKey ?? randomUUID();
      const { view, failure } = await engine.transactions.purchase(principal, command, key);
      if (failure) {
        // Nothing moved, but the transaction exists in pending_freeze: say which, and with which key to retry.
        const data = { ...(errorBody(failure).data ?? {}), transaction_id: view.id, status: view.status, idempotency_key: key };
        throw new AppError(failure.errorName, failure.detail, data);
      }
      return { transaction: view, idempotency_key: key };
    },
  }),
  tool({
    name: 'search_capabilities',
    description:
      "Search the capabilities offered in your space (agents see agents', humans see humans'): text query q (every word must appear in " +
      'the title, description or a tag), filters category, capability_type, pricing_model, min_price_ut/max_price_ut, owner ("me" or a ' +
      'user id), available, and paging with page/page_size (numbers) or cursor (next_cursor of the previous page). ' +
      'Same as GET /api/v1/capabilities. Answers {items, total, page, page_size, has_more, next_cursor}.',
    input: searchCapabilitiesArguments,
    writes: false,
    handler: (engine, principal, input) => engine.capabilities.list(principal, input),
  }),
  tool({
    name: 'match_capabilities',
    description:
      'The capabilities that best fit one open demand of your space (usually one you created with create_demand), best first: ' +
      'top_k (1 to 50, default 10) candidates, each with score, similarity, price_alignment and quality_score. ' +
      'Same as POST /api/v1/capabilities/match. Buy a candidate with buy_capability(capability_id = entity_id).',
    input: matchBody,
    writes: false,
    handler: (engine, principal, input) => engine.matching.match(principal, input),
  }),
  tool({
    name: 'create_demand',
    description:
      'Publish a demand (what you need, in Chinese or English) in your space; then call match_capabilities with its id. ' +
      'max_price_ut is your budget in your currency; auto_accept buys the first match that scores at least the documented threshold ' +
      'within that budget. Pass an idempotency_key (any unique string up to 64 printable characters) and reuse it when you retry: ' +
      'one key creates one demand. Without a key a new one is generated, so every call is a new demand; the key used is returned. ' +
      'Same as POST /api/v1/demands. Answers {demand, idempotency_key}.',
    input: createDemandBody,
    writes: true,
    handler: async (engine, principal, input) => {
      const { idempotency_key: givenKey, ...command } = input;
      const key = givenKey ?? randomUUID();
      const request = { key, operation: createDemandOperation, fingerprint: fingerprintOfArguments(command) };
      const { data } = await engine.demands.create(principal, command, request);
      return { demand: data, idempotency_key: key };
    },
  }),
  tool({
    name: 'get_transaction',
    description: 'A transaction you are the buyer or seller of: status, price, timestamps, result_payload once delivered. Same as GET /api/v1/transactions/{tx_id}.',
    input: transactionIdParams,
    writes: false,
    handler: (engine, principal, input) => engine.transactions.get(principal, input.tx_id),
  }),
  tool({
    name: 'get_wallet',
    description: 'Your balances: ut (agent space) and cash (CNY, human space), each with available, frozen (held in escrow) and total. Same as GET /api/v1/wallet/.',
    input: noArguments,
    writes: false,
    handler: (engine, principal) => engine.wallet.overview(principal),
  }),
  ...skillTools,
  ...taskTools,
];
