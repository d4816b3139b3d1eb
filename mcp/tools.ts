import { randomUUID } from 'node:crypto';
import type { Principal } from '../src/engine/common/index.ts';
import type { Engine } from '../src/engine/index.ts';
import { AppError, errorBody } from '../src/errors.ts';
import { fingerprintOf } from '../src/engine/money/index.ts';
import { searchCapabilitiesArguments } from '../src/schemas/capabilities.ts';
import { createDemandBody } from '../src/schemas/demands.ts';
import { matchBody } from '../src/schemas/matching.ts';
import { createTransactionBody } from '../src/schemas/transactions.ts';

import { getCapabilityArguments, getTransactionArguments, noArguments } from './inputs.ts';
import { outputs } from './outputs.ts';
import { type McpTool, reads, tool } from './tool.ts';
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

export const mcpTools: McpTool[] = [
  tool({
    name: 'get_capability',
    title: 'Get a capability',
    description:
      'Read one capability of your space by its id (cap_id, from search_capabilities or match_capabilities): title, description, price_ut ' +
      'and currency, pricing_model, category, quality_score, total_sold, available. Use it to check the price before buy_capability. ' +
      "Another space's or an unknown capability answers 4040. Same as GET /api/v1/capabilities/{cap_id}.",
    annotations: reads,
    input: getCapabilityArguments,
    output: outputs.capability,
    writes: false,
    handler: (engine, principal, input) => engine.capabilities.get(principal, input.cap_id),
  }),
  tool({
    name: 'buy_capability',
    title: 'Buy a capability (spends money)',
    description:
      'SPENDS MONEY. Buy a capability: creates a transaction and freezes its price from your available balance (escrow) in one step; ' +
      'the seller is paid only when you confirm the delivery (confirm_transaction). Pass max_price, the most you agree to pay as a ' +
      'decimal string (the price_ut you were shown): a higher price is refused with 4093 price_above_ceiling and nothing is charged. ' +
      'Pass an idempotency_key (any unique string up to 64 printable characters) and reuse it when you retry the same purchase: one key ' +
      'buys once, and after a failed freeze (4020, insufficient balance; the error names the pending transaction) calling again with the ' +
      'same key after a top-up freezes that same transaction. Without a key a new one is generated, so every call is a new purchase; the ' +
      'key used is returned. A key whose owner set an agent budget is refused beyond it with 4021 agent_budget_exceeded (the error names the ' +
      'bound and what is left today), nothing charged. Answers {transaction, idempotency_key, agent_budget}: agent_budget is what is left of ' +
      "your key's budget (null: none); follow it with get_transaction.",
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    input: createTransactionBody,
    output: outputs.purchase,
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
      return { transaction: view, idempotency_key: key, agent_budget: await engine.agentBudgets.left(principal) };
    },
  }),
  tool({
    name: 'search_capabilities',
    title: 'Search capabilities',
    description:
      "Search the capabilities offered in your space (agents see agents', humans see humans'), newest first. All arguments are optional: " +
      'q (words that must each appear in the title, description or a tag), category, capability_type, pricing_model, min_price_ut and ' +
      'max_price_ut (decimal strings), owner ("me" or a user id), available ("true" default, "false", "any"); page and page_size (numbers, ' +
      'page_size up to 100) or cursor (next_cursor of the previous page). To rank offers against a need, create_demand then ' +
      'match_capabilities instead. Same as GET /api/v1/capabilities. Answers {items, total, page, page_size, has_more, next_cursor}.',
    annotations: reads,
    input: searchCapabilitiesArguments,
    output: outputs.capabilityList,
    writes: false,
    handler: (engine, principal, input) => engine.capabilities.list(principal, input),
  }),
  tool({
    name: 'match_capabilities',
    title: 'Match capabilities to a demand',
    description:
      'The capabilities that best fit one open demand of your space (usually the one you created with create_demand), best first: ' +
      'top_k (1 to 50, default 10) candidates, each with score, similarity, price_alignment and quality_score. Buy a candidate with ' +
      'buy_capability(capability_id = entity_id, max_price = its price_ut). A demand you may not see answers 4040, your own demand once ' +
      'closed 4090. Same as POST /api/v1/capabilities/match. Answers {demand_id, candidates, embeddings}.',
    annotations: reads,
    input: matchBody,
    output: outputs.match,
    writes: false,
    handler: (engine, principal, input) => engine.matching.match(principal, input),
  }),
  tool({
    name: 'create_demand',
    title: 'Publish a demand',
    description:
      'Publish a demand (what you need, in Chinese or English) in your space; then call match_capabilities with its id. max_price_ut is ' +
      'your budget (a decimal string, in your currency). With auto_accept: true this SPENDS MONEY: the first match that scores at least ' +
      'the documented threshold within max_price_ut (then required; it is the price ceiling) is bought at once and the demand is ' +
      'fulfilled. Pass an idempotency_key (any unique string up to 64 printable characters) and reuse it when you retry: one key creates ' +
      'one demand. Without a key a new one is generated, so every call is a new demand; the key used is returned. ' +
      'Same as POST /api/v1/demands. Answers {demand, idempotency_key}.',
    // auto_accept may buy: a call may spend money.
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    input: createDemandBody,
    output: outputs.demandCreated,
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
    title: 'Get a transaction',
    description:
      'Read a transaction you are the buyer or seller of, by tx_id: status (pending_freeze, frozen, accepted, delivered, settled, disputed, ' +
      "refunded, ...), price_ut and currency, timestamps, the buyer's input and note, and result_payload once delivered. " +
      "Anyone else's transaction answers 4040. Same as GET /api/v1/transactions/{tx_id}.",
    annotations: reads,
    input: getTransactionArguments,
    output: outputs.transaction,
    writes: false,
    handler: (engine, principal, input) => engine.transactions.get(principal, input.tx_id),
  }),
  tool({
    name: 'get_wallet',
    title: 'Get your wallet',
    description:
      'Your balances: ut (agent space) and cash (CNY, human space), each with available (what you can spend), frozen (held in escrow) and ' +
      'total, as decimal strings. Check it before buying or publishing a task with a bounty. Takes no arguments. Same as GET /api/v1/wallet/.',
    annotations: reads,
    input: noArguments,
    output: outputs.wallet,
    writes: false,
    handler: (engine: Engine, principal: Principal) => engine.wallet.overview(principal),
  }),
  ...skillTools,
  ...taskTools,
];
