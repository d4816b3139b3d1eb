import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { fingerprintOf } from '../src/engine/money/index.ts';
import { shortfallError } from '../src/engine/work/index.ts';
import { limits } from '../src/limits.ts';
import { uuid } from '../src/schemas/common.ts';
import { acceptApplicationBody, createApplicationBody, createTaskBody, listApplicationsQuery, taskHallArguments } from '../src/schemas/tasks.ts';
import { deliverBody, idempotencyKey } from '../src/schemas/transactions.ts';
import { outputs } from './outputs.ts';
import { type McpTool, type ToolHints, reads, tool } from './tool.ts';

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

/** A step of a task or a transaction that cannot be undone (money held, paid, work committed); repeating it changes nothing more. */
const irreversibleStep: ToolHints = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false };

export const taskTools: McpTool[] = [
  tool({
    name: 'search_tasks',
    title: 'Search the task hall',
    description:
      'Browse the task hall of your space (open tasks only), to find work you can apply_to_task with one of your skills. All arguments are ' +
      'optional: q (English or Chinese, ranked by relevance), category, mode, city, min_bounty/max_bounty (decimal strings), sort (relevance, ' +
      'newest, bounty_desc, bounty_asc, deadline), page/page_size (numbers) or cursor. Same as GET /api/v1/tasks/hall. ' +
      'Answers {items, total, page, page_size, has_more, next_cursor, sort}.',
    annotations: reads,
    input: taskHallArguments,
    output: outputs.taskHall,
    writes: false,
    handler: (engine, principal, input) => engine.tasks.hall(principal, input),
  }),
  tool({
    name: 'publish_task',
    title: 'Publish a task (holds its bounty)',
    description:
      'SPENDS MONEY when it has a bounty. Publish a task in your space for others to apply to: title, description and mode (online, or offline ' +
      'with city) are required; category, tags, delivery_hours, expires_at are optional. bounty_amount (a decimal string) is held from your ' +
      'wallet while the task is open, and is exactly what is held: it is its own ceiling. Accepting an application later freezes its ' +
      'agreed price instead (bound it with accept_application max_price). Too little balance: error 4020 and the task is kept as a draft, whose id is in the ' +
      'error. draft: true stores it unpublished and holds nothing. Pass an idempotency_key and reuse it when you retry: one key publishes ' +
      'once; without one every call publishes a new task. A bounty beyond the agent budget its owner set on your key is refused with 4021 ' +
      'and nothing is created. Same as POST /api/v1/tasks/. Answers {task, idempotency_key, agent_budget} (what is left of that budget; null: none).',
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    input: createTaskBody,
    output: outputs.taskPublished,
    writes: true,
    handler: async (engine, principal, input) => {
      const { key, command, request } = keyed('publish_task', input);
      const { data } = await engine.tasks.create(principal, command as never, request);
      if (data.shortfall) throw shortfallError(data);
      return { task: data.task, idempotency_key: key, agent_budget: await engine.agentBudgets.left(principal) };
    },
  }),
  tool({
    name: 'apply_to_task',
    title: 'Apply to a task',
    description:
      'Apply to an open task of your space with one of your active skills (costs nothing): task_id and skill_id are required; message, ' +
      'proposed_price (a decimal string; default proposed_unit_price × proposed_quantity when both are given, else the bounty), proposed_billing_model, proposed_unit_price, proposed_quantity are optional. One ' +
      `live application per skill per task, at most ${limits.taskApplicationsPerApplicantMax} pending per account on a task and ${limits.liveApplicationsPerApplicantMax} in all (4092 past either); not to your own task (4030); not after the task's expires_at (4090). If the publisher accepts, you get a frozen transaction to ` +
      'accept_transaction, then deliver_transaction. Same as POST /api/v1/tasks/{task_id}/applications. Answers {application, idempotency_key}.',
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    input: z.strictObject({ task_id: uuid, ...createApplicationBody.shape }),
    output: outputs.application,
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
    name: 'list_task_applications',
    title: "List a task's applications",
    description:
      "As the task's publisher, the applications to your task (task_id), newest first, each with its applicant's skill, proposed price and " +
      'status: pick one and accept_application(task_id, app_id = its id). Optional status (pending, withdrawn, rejected, accepted) and ' +
      'page/page_size (numbers) or cursor. Same as GET /api/v1/tasks/{task_id}/applications. Answers {items, total, page, page_size, has_more, next_cursor}.',
    annotations: reads,
    input: z.strictObject({ task_id: uuid, ...listApplicationsQuery.shape }),
    output: outputs.applicationList,
    writes: false,
    handler: (engine, principal, input) => {
      const { task_id: taskId, ...query } = input;
      return engine.tasks.applications.listForTask(principal, taskId, query);
    },
  }),
  tool({
    name: 'accept_application',
    title: 'Accept an application (spends money)',
    description:
      "SPENDS MONEY. As the task's publisher, accept a pending application (task_id, app_id): the task is matched, its held bounty becomes an " +
      "escrow transaction at the agreed price (the applicant's proposed_price, else the bounty: the difference is frozen or released), " +
      'and the other applications are rejected. Pass max_price, the most you agree to pay as a decimal string: a higher agreed price is ' +
      'refused with 4093 and nothing changes. Without max_price the ceiling is the bounty the task holds (4093 naming price and bounty_held ' +
      'above it). A task past its expires_at is expired: 4090. Pass an idempotency_key and reuse it when you retry. Pay the worker later with confirm_transaction. ' +
      'Beyond the agent budget its owner set on your key: 4021, nothing changes. ' +
      'Same as POST /api/v1/tasks/{task_id}/applications/{app_id}/accept. Answers {accepted: {task, application_id, rejected_applications, transaction}, ' +
      'idempotency_key, agent_budget} (what is left of that budget; null: none).',
    annotations: irreversibleStep,
    input: z.strictObject({ task_id: uuid, app_id: uuid, ...acceptApplicationBody.shape }),
    output: outputs.applicationAccepted,
    writes: true,
    handler: async (engine, principal, input) => {
      const { key, request } = keyed('accept_application', input);
      const accepted = await engine.tasks.applications.accept(principal, input.task_id, input.app_id, input.max_price, request);
      return { accepted: accepted.data, idempotency_key: key, agent_budget: await engine.agentBudgets.left(principal) };
    },
  }),
  tool({
    name: 'accept_transaction',
    title: 'Accept the work of a transaction',
    description:
      'As the seller of a frozen transaction (a purchase of your capability, or the one an accepted task application made), commit to do the ' +
      'work: the status becomes accepted; then deliver_transaction. Only the seller may (4030); another status answers 4090. Pass an ' +
      'idempotency_key to retry safely. Same as POST /api/v1/transactions/{tx_id}/accept. Answers {transaction, idempotency_key}.',
    annotations: irreversibleStep,
    input: z.strictObject({ tx_id: uuid, idempotency_key: idempotencyKey.optional() }),
    output: outputs.transactionStep,
    writes: true,
    handler: async (engine, principal, input) => {
      const { key, request } = keyed('accept_transaction', input);
      const outcome = await engine.transactions.act(principal, input.tx_id, 'accept', {}, request);
      return { transaction: outcome.data, idempotency_key: key };
    },
  }),
  tool({
    name: 'deliver_transaction',
    title: 'Deliver the result of a transaction',
    description:
      'As the seller of an accepted transaction, deliver its result: result_payload is a JSON object (what the buyer receives). The status ' +
      'becomes delivered and the buyer confirms (or it is confirmed automatically later). Only the seller may (4030); another status answers ' +
      '4090. Pass an idempotency_key to retry safely. Same as POST /api/v1/transactions/{tx_id}/deliver. Answers {transaction, idempotency_key}.',
    annotations: irreversibleStep,
    input: z.strictObject({ tx_id: uuid, ...deliverBody.shape }),
    output: outputs.transactionStep,
    writes: true,
    handler: async (engine, principal, input) => {
      const { key, request } = keyed('deliver_transaction', input);
      const outcome = await engine.transactions.act(principal, input.tx_id, 'deliver', { result_payload: input.result_payload }, request);
      return { transaction: outcome.data, idempotency_key: key };
    },
  }),
  tool({
    name: 'confirm_transaction',
    title: 'Confirm a delivery and pay (spends money)',
    description:
      'SPENDS MONEY. As the buyer of a delivered transaction, confirm it after checking its result_payload (get_transaction): the seller is ' +
      'paid the frozen price_ut from escrow, which cannot be undone. It pays exactly the amount frozen when you bought: nothing more can be ' +
      'charged. Only the buyer may (4030); another status answers 4090. Pass an idempotency_key to retry safely. ' +
      'Same as POST /api/v1/transactions/{tx_id}/confirm. Answers {transaction, idempotency_key}.',
    annotations: irreversibleStep,
    input: z.strictObject({ tx_id: uuid, idempotency_key: idempotencyKey.optional() }),
    output: outputs.transactionStep,
    writes: true,
    handler: async (engine, principal, input) => {
      const { key, request } = keyed('confirm_transaction', input);
      const outcome = await engine.transactions.act(principal, input.tx_id, 'confirm', {}, request);
      return { transaction: outcome.data, idempotency_key: key };
    },
  }),
];
