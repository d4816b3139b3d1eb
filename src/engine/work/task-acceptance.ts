import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { currencyOfSpace, formatAmount } from '../../domain/money.ts';
import { nextApplicationState, nextTaskState } from '../../domain/tasks.ts';
import { type UnitOfWork, withTransaction } from '../../db/transaction.ts';
import { AppError, forbidden, notFound } from '../../errors.ts';
import { limits } from '../../limits.ts';
import { userAccountId } from '../../store/accounts.ts';
import { InsufficientBalance } from '../../store/ledger.ts';
import { lockTask, type TaskRow, taskColumns } from '../../store/tasks.ts';
import type { TransactionRow } from '../../store/transactions.ts';
import type { EngineDependencies, Principal } from '../common/index.ts';
import {
  bountyHoldLegs,
  type Idempotency,
  type IdempotencyRequest,
  chargeAcceptance,
  changeHold,
  giveBackAgentBudget,
  planAcceptanceCharge,
  type Transitions,
  transactionView,
  untouchedLifecycle,
} from '../money/index.ts';
import { statusAt, taskView } from './task-rows.ts';
import type { ApplicationRow } from './application-rows.ts';
import { applicationMovedEvents, type TaskEvents, taskMovedEvents } from './task-events.ts';
import { DecideInTransaction, readVersioned } from './task-statement.ts';

/**
 * Accepting an application (docs/tasks.md "Accepting"): in one commit (one change of the batcher's
 * shared statements, or its transaction path) the task is matched, its bounty hold released, and
 * an escrow transaction created and frozen in which the publisher buys from the applicant at the
 * agreed price, never above the publisher's ceiling (its max_price, else the bounty held); the
 * other pending applications are rejected. From then on delivery, confirmation, dispute and
 * settlement are the transaction's. A price the publisher's money cannot cover (even with the
 * released hold) refuses the whole accept with 4020: the task keeps its hold and stays open.
 */
/** The agreed price: what the application proposed, else the task's bounty; neither is 4090. */
function agreedPrice(application: ApplicationRow, task: TaskRow): bigint {
  if (application.proposed_price !== null) return BigInt(application.proposed_price);
  // An application stored before its unit offer was totalled when it was made (task-applications.ts).
  if (application.proposed_unit_price !== null && application.proposed_quantity !== null)
    return BigInt(application.proposed_unit_price) * BigInt(application.proposed_quantity);
  if (task.bounty_amount !== null) return BigInt(task.bounty_amount);
  throw new AppError('invalid_state_transition', 'nothing to agree on: the application proposes no price and the task has no bounty', {
    status: 'pending',
    action: 'accept',
  });
}

/**
 * The most the publisher agreed to pay (docs/tasks.md "Accepting"): the max_price it sent; else
 * the bounty the task holds now, read under the task's lock in the transaction that freezes the
 * money. An application a selection made may cost the selection's price instead, above the
 * bounty, while the task holds at least what it held when the publisher selected: the publisher
 * named that price against that bounty, and lowering the bounty takes the agreement back.
 */
async function ceilingOf(trx: Knex, task: TaskRow, applicationId: string, maxPrice: bigint | undefined): Promise<bigint> {
  if (maxPrice !== undefined) return maxPrice;
  const held = BigInt(task.bounty_held);
  const selection = (await trx('task_pushes').where({ application_id: applicationId, kind: 'selection' }).first('price', 'bounty_at_selection')) as
    { price: string | null; bounty_at_selection: string | null } | undefined;
  if (selection?.price == null || selection.bounty_at_selection === null || held < BigInt(selection.bounty_at_selection)) return held;
  const price = BigInt(selection.price);
  return price > held ? price : held;
}

function aboveCeiling(task: TaskRow, price: bigint, ceiling: bigint, maxPrice: bigint | undefined): AppError {
  const why =
    maxPrice === undefined
      ? 'the agreed price is above the bounty the task holds: nothing was accepted. To pay it, send max_price'
      : 'the agreed price is above your max_price: nothing was accepted';
  return new AppError('price_above_ceiling', why, {
    currency: task.bounty_currency,
    price: formatAmount(price),
    max_price: formatAmount(ceiling),
    bounty_held: formatAmount(task.bounty_held),
    detail: `${why}; nothing was charged. To pay ${formatAmount(price)} ${task.bounty_currency}, send max_price "${formatAmount(price)}" or more.`,
  });
}

function taskTransactionRow(task: TaskRow, application: ApplicationRow, price: bigint, feeBps: number, at: Date, apiKeyId: string | null): TransactionRow {
  return {
    id: randomUUID(),
    buyer_user_id: task.owner_user_id,
    seller_user_id: application.applicant_id,
    capability_id: null,
    task_id: task.id,
    skill_id: application.skill_id,
    application_id: application.id,
    demand_id: null,
    api_key_id: apiKeyId,
    context_id: randomUUID(),
    space: task.owner_type,
    currency: currencyOfSpace(task.owner_type),
    transaction_type: 'task',
    price: String(price),
    booked_hours: null,
    delivery_hours: task.delivery_hours,
    auto_accept: false,
    note: null,
    client_task_id: null,
    conversation_id: null,
    fee_bps: feeBps,
    input: null,
    ...untouchedLifecycle(at),
  };
}

/**
 * A skill its owner deleted after applying no longer wins the task (applying with a deleted skill
 * is refused too): the application is refused as one that cannot be accepted.
 */
async function assertSkillKept(trx: Knex, application: ApplicationRow) {
  const skill = (await trx('skills').where({ id: application.skill_id }).first('deleted_at')) as { deleted_at: Date | null } | undefined;
  if (skill?.deleted_at == null) return;
  throw new AppError('invalid_state_transition', "the applicant deleted this application's skill: it can no longer be accepted", {
    status: application.status,
    action: 'accept',
  });
}

/** As for withdraw and reject: an application is known to its applicant and the publisher only; only the publisher accepts. */
function authorizeAcceptance<T extends TaskRow>(principal: Principal, task: T | undefined, application: ApplicationRow | undefined): [T, ApplicationRow] {
  if (!task || !application || task.owner_type !== principal.caller_type) throw notFound('application');
  if (task.owner_user_id !== principal.user_id) {
    if (application.applicant_id === principal.user_id) throw forbidden("only the task's publisher can accept an application");
    throw notFound('application');
  }
  return [task, application];
}

/** The task's row once matched by `transactionId`: nothing held any more. */
const matchedColumns = (application: ApplicationRow, transactionId: string, at: Date) => ({
  status: 'matched',
  matched_skill_id: application.skill_id,
  transaction_id: transactionId,
  bounty_held: '0',
  ended_at: at,
  updated_at: at,
});

export function createTaskAcceptance({ db, now, config }: EngineDependencies, idempotency: Idempotency, transitions: Transitions, events: TaskEvents) {
  /**
   * The acceptance as ONE change the batcher groups with every other (docs/decisions/money-and-escrow.md
   * "Task money and group commit"): the transaction inserted already frozen, the task matched by a
   * compare-and-set on its status and version, the hold released by the task's reference, the
   * applications decided, the budget's charges moved and topped up, the task events and the
   * transaction's, the claim's completion. Before it, reads only, deciding as the transaction path
   * does. A task whose row changed since it was read (an application, a withdrawal, a rejection,
   * a selection, an edit: each writes the row) is read and decided again; after
   * compareAndSetAttemptsMax, DecideInTransaction. Too little money fails the statement alone
   * (InsufficientBalance): the transaction path answers 4020 with the numbers.
   */
  async function acceptInStatement(unit: UnitOfWork, principal: Principal, taskId: string, applicationId: string, maxPrice: bigint | undefined) {
    for (let attempt = 0; attempt < limits.compareAndSetAttemptsMax; attempt++) {
      const read = await readVersioned(unit.trx, taskId);
      const found = (await unit.trx('task_applications').where({ id: applicationId, task_id: taskId }).first()) as ApplicationRow | undefined;
      const [{ version, ...task }, application] = authorizeAcceptance(principal, read, found);
      nextApplicationState(application.status, 'accept');
      await assertSkillKept(unit.trx, application);
      const at = now();
      nextTaskState(statusAt(task, at), 'match');
      const price = agreedPrice(application, task);
      const ceiling = await ceilingOf(unit.trx, task, applicationId, maxPrice);
      if (price > ceiling) throw aboveCeiling(task, price, ceiling, maxPrice);
      const row = taskTransactionRow(task, application, price, config.PLATFORM_FEE_BPS, at, principal.budget_key_id ?? null);
      const held = BigInt(task.bounty_held);
      const { bounty_currency: currency, category } = task;
      // What the budget allows and per_purchase_max answer 4021 here; the day's bound is the statement's.
      const charge = await planAcceptanceCharge(unit.trx, principal, { transactionId: row.id, price, held, currency, category, at });
      const planned = transitions.planInsertMoved(row, 'freeze', { principal });
      const taskSet = matchedColumns(application, row.id, at);
      const matched = { ...task, ...taskSet } as TaskRow;
      const pending = (await unit.trx('task_applications').where({ task_id: taskId, status: 'pending' })) as ApplicationRow[];
      const rejected = pending.filter((each) => each.id !== applicationId).map((each) => ({ ...each, status: 'rejected' as const, decided_at: at }));
      const response = {
        task: taskView(matched, principal),
        application_id: applicationId,
        rejected_applications: rejected.length,
        transaction: transactionView(planned.after),
      };
      planned.change.acceptance = {
        taskId,
        fromVersion: version,
        taskSet,
        applicationId,
        decidedAt: at,
        releasedHold: held === 0n ? [] : bountyHoldLegs({ ownerId: task.owner_user_id, currency, taskId, held, wanted: 0n }),
      };
      // As the transaction path: the match heard by the publisher and every pending applicant, then each application's move.
      planned.change.taskEvents = [
        ...taskMovedEvents(matched, 'match', task.status, [...new Set(pending.map((each) => each.applicant_id))]),
        ...applicationMovedEvents(matched, [
          { application: { ...application, status: 'accepted' as const, decided_at: at }, action: 'accept', previousStatus: application.status },
          ...rejected.map((each) => ({ application: each, action: 'match' as const, previousStatus: 'pending' })),
        ]),
      ];
      if (charge) planned.change.budget = charge.take;
      const applied = await transitions.commitPlanned(unit, planned, response, charge);
      if (!applied) continue;
      events.written(unit, applied.taskEvents ?? []);
      // A price below the hold gives back the difference of what the task was charged (now the transaction's), once committed.
      if (price < held) unit.afterCommit(() => withTransaction(db, ({ trx }) => giveBackAgentBudget(trx, row.id, held - price)));
      return response;
    }
    throw new DecideInTransaction('the task changed under every attempt');
  }

  function attempt(principal: Principal, taskId: string, applicationId: string, maxPrice: bigint | undefined, request: IdempotencyRequest | null) {
    return idempotency.run(principal, request, 200, async (unit) => {
      const { trx } = unit;
      // The task first, then the application: every path locks them in this order.
      const [task, application] = authorizeAcceptance(
        principal,
        await lockTask(trx, taskId),
        (await trx('task_applications').where({ id: applicationId, task_id: taskId }).forNoKeyUpdate().first()) as ApplicationRow | undefined,
      );
      nextApplicationState(application.status, 'accept');
      await assertSkillKept(trx, application);
      const at = now();
      nextTaskState(statusAt(task, at), 'match');
      const price = agreedPrice(application, task);
      const ceiling = await ceilingOf(trx, task, applicationId, maxPrice);
      if (price > ceiling) throw aboveCeiling(task, price, ceiling, maxPrice);
      // The key that accepted (or made the selection) is the key that made the purchase, as for a buy.
      const row = taskTransactionRow(task, application, price, config.PLATFORM_FEE_BPS, at, principal.budget_key_id ?? null);
      // The hold becomes the freeze: an agent budget is charged what the price adds to the hold (money/budgets.ts).
      const { bounty_currency: currency, category } = task;
      await chargeAcceptance(trx, principal, { taskId, transactionId: row.id, price, held: BigInt(task.bounty_held), currency, category, at });
      // The insert locks the parties' stream counters, the release the publisher's account: in this
      // order, the order of every change statement, so a batch holding a counter never waits for
      // the account in a circle with us (a deadlock; money-and-escrow.md "Task money and group commit").
      await transitions.insert(unit, row);
      await changeHold(trx, { ownerId: task.owner_user_id, currency: task.bounty_currency, taskId, held: BigInt(task.bounty_held), wanted: 0n, at });
      const frozen = await transitions.move(unit, row.id, 'freeze', { principal });
      const [matched] = (await trx('tasks')
        .where({ id: taskId, status: 'open' })
        .update(matchedColumns(application, row.id, at))
        .returning([...taskColumns])) as TaskRow[];
      // Heard by every applicant still pending, the one accepted included, before their applications move.
      await events.taskMoved(unit, matched!, 'match', task.status);
      const [accepted] = (await trx('task_applications')
        .where({ id: applicationId })
        .update({ status: 'accepted', decided_at: at })
        .returning('*')) as ApplicationRow[];
      const rejected = (await trx('task_applications')
        .where({ task_id: taskId, status: 'pending' })
        .update({ status: 'rejected', decided_at: at })
        .returning('*')) as ApplicationRow[];
      await events.applicationsMoved(unit, matched!, [
        { application: accepted!, action: 'accept', previousStatus: application.status },
        ...rejected.map((row) => ({ application: row, action: 'match' as const, previousStatus: 'pending' })),
      ]);
      return {
        task: taskView(matched!, principal),
        application_id: applicationId,
        rejected_applications: rejected.length,
        transaction: transactionView(frozen),
      };
    });
  }

  /**
   * One statement first; the transaction path when the money is short (it answers with the numbers)
   * or the task kept changing. A freeze the money cannot cover fails its statement, and so the
   * whole database transaction: nothing changed. The answer says what was available once the hold
   * is counted in.
   */
  async function accept(principal: Principal, taskId: string, applicationId: string, maxPrice: bigint | undefined, request: IdempotencyRequest | null) {
    try {
      return await idempotency.run(principal, request, 200, (unit) => acceptInStatement(unit, principal, taskId, applicationId, maxPrice), 'one statement');
    } catch (error) {
      if (!(error instanceof InsufficientBalance || error instanceof DecideInTransaction)) throw error;
    }
    try {
      return await attempt(principal, taskId, applicationId, maxPrice, request);
    } catch (error) {
      if (!(error instanceof InsufficientBalance)) throw error;
      const task = (await db<TaskRow>('tasks').where({ id: taskId }).first('bounty_held', 'bounty_currency', 'owner_user_id')) as TaskRow;
      const [account] = (await db('accounts')
        .where({ id: userAccountId(task.owner_user_id, task.bounty_currency) })
        .select('available')) as { available: string }[];
      throw new AppError('insufficient_balance', 'the agreed price is more than the bounty held and the available balance together: nothing was accepted', {
        currency: task.bounty_currency,
        available: formatAmount(BigInt(account?.available ?? 0) + BigInt(task.bounty_held)),
        required: formatAmount(error.required),
      });
    }
  }

  return { accept };
}
