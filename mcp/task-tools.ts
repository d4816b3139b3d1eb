import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { fingerprintOf } from '../src/engine/idempotency.ts';
import { shortfallError } from '../src/engine/tasks.ts';
import { uuid } from '../src/schemas/common.ts';
import { acceptApplicationBody, createApplicationBody, createTaskBody, taskHallArguments } from '../src/schemas/tasks.ts';
import { deliverBody, idempotencyKey } from '../src/schemas/transactions.ts';
import { type McpTool, tool } from './tool.ts';

/**
 * The work-market tools (issue 18): search the task hall, publish, apply, accept, deliver and
 * confirm, on the REST routes' schemas and the same engine calls, so the rules, the money and the
 * idempotency are REST's. A tool that changes state takes an idempotency_key (one is generated
 * when left out, and answered) and keeps its keys apart from REST's, like buy_capability.
 */
const fingerprintOfArguments = (input: Record<string, unknown>) =>
  fingerprintOf(Object.fromEntries(Object.entries(input).map(([name, value]) => [name, typeof value === 'bigint' ? value.toString() : value])));
const keyed = (operation: string, input: Record<string, unknown>) => {
  const { idempotency_key: given, ...command } = input;
  const key = (given as string | undefined) ?? randomUUID();
  return { key, command, request: { key, operation: `mcp ${operation}`, fingerprint: fingerprintOfArguments(command) } };
};

export const taskTools: McpTool[] = [
  tool({
    name: 'search_tasks',
    description:
      "Browse the task hall of your space (open tasks only): q (English or Chinese, ranked by relevance), category, mode, city, " +
      'min_bounty/max_bounty, sort (relevance, newest, bounty_desc, bounty_asc, deadline), page/page_size or cursor. Same as GET /api/v1/tasks/hall.',
    input: taskHallArguments,
    writes: false,
    handler: (engine, principal, input) => engine.tasks.hall(principal, input),
  }),
  tool({
    name: 'publish_task',
    description:
      'Publish a task in your space: title, description and mode (online, or offline with city) are required; bounty_amount is held ' +
      'from your wallet while the task is open (too little balance: error 4020 and the task is kept as a draft, whose id is in the error). ' +
      'draft: true stores it unpublished. Pass an idempotency_key and reuse it when you retry. Same as POST /api/v1/tasks/. Answers {task, idempotency_key}.',
    input: createTaskBody,
    writes: true,
    handler: async (engine, principal, input) => {
      const { key, command, request } = keyed('publish_task', input);
      const { data } = await engine.tasks.create(principal, command as never, request);
      if (data.shortfall) throw shortfallError(data);
      return { task: data.task, idempotency_key: key };
    },
  }),
  tool({
    name: 'apply_to_task',
    description:
      'Apply to an open task of your space with one of your active skills (task_id, skill_id; message, proposed_price, ...). One live application per ' +
      'skill per task. Same as POST /api/v1/tasks/{task_id}/applications. Answers {application, idempotency_key}.',
    input: z.strictObject({ task_id: uuid, ...createApplicationBody.shape }),
    writes: true,
    handler: async (engine, principal, input) => {
      const { task_id: taskId, ...rest } = input;
      const { key, command, request } = keyed('apply_to_task', { task_id: taskId, ...rest });
      const { task_id: _id, ...application } = command;
      const { data } = await engine.tasks.applications.apply(principal, taskId, application as never, request);
      return { application: data, idempotency_key: key };
    },
  }),
  tool({
    name: 'accept_application',
    description:
      'As the publisher, accept a pending application (task_id, app_id; optional max_price): the task is matched and its bounty becomes an escrow ' +
      'transaction at the agreed price; the others are rejected. Same as POST /api/v1/tasks/{task_id}/applications/{app_id}/accept. Answers {accepted, idempotency_key}.',
    input: z.strictObject({ task_id: uuid, app_id: uuid, ...acceptApplicationBody.shape }),
    writes: true,
    handler: async (engine, principal, input) => {
      const { key, request } = keyed('accept_application', input);
      const accepted = await engine.tasks.applications.accept(principal, input.task_id, input.app_id, input.max_price, request);
      return { accepted: accepted.data, idempotency_key: key };
    },
  }),
  tool({
    name: 'accept_transaction',
    description: 'As the seller of a frozen transaction (for example the one an accepted task application made), accept the work. Same as POST /api/v1/transactions/{tx_id}/accept.',
    input: z.strictObject({ tx_id: uuid, idempotency_key: idempotencyKey.optional() }),
    writes: true,
    handler: async (engine, principal, input) => {
      const { key, request } = keyed('accept_transaction', input);
      const outcome = await engine.transactions.act(principal, input.tx_id, 'accept', {}, request);
      return { transaction: outcome.data, idempotency_key: key };
    },
  }),
  tool({
    name: 'deliver_transaction',
    description: 'As the seller of an accepted transaction, deliver its result_payload (a JSON object). Same as POST /api/v1/transactions/{tx_id}/deliver.',
    input: z.strictObject({ tx_id: uuid, ...deliverBody.shape }),
    writes: true,
    handler: async (engine, principal, input) => {
      const { key, request } = keyed('deliver_transaction', input);
      const outcome = await engine.transactions.act(principal, input.tx_id, 'deliver', { result_payload: input.result_payload }, request);
      return { transaction: outcome.data, idempotency_key: key };
    },
  }),
  tool({
    name: 'confirm_transaction',
    description: 'As the buyer of a delivered transaction, confirm it: the seller is paid from escrow. Same as POST /api/v1/transactions/{tx_id}/confirm.',
    input: z.strictObject({ tx_id: uuid, idempotency_key: idempotencyKey.optional() }),
    writes: true,
    handler: async (engine, principal, input) => {
      const { key, request } = keyed('confirm_transaction', input);
      const outcome = await engine.transactions.act(principal, input.tx_id, 'confirm', {}, request);
      return { transaction: outcome.data, idempotency_key: key };
    },
  }),
];
