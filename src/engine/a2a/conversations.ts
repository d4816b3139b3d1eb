import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { titleOf } from '../../domain/a2a.ts';
import { currencyOfSpace, formatAmount, parseAmount } from '../../domain/money.ts';
import { withTransaction } from '../../db/transaction.ts';
import { AppError } from '../../errors.ts';
import { limits } from '../../limits.ts';
import { type A2ATaskRow, type Candidate, insertMessages } from '../../store/a2a.ts';
import type { DemandRow } from '../../store/demands.ts';
import type { DemandEngine, MatchingEngine } from '../market/index.ts';
import type { EngineDependencies, Principal } from '../common/index.ts';
import { type Idempotency, fingerprintOf, priceUnder, type TransactionEngine } from '../money/index.ts';
import type { Buying, BuyOutcome } from './buying.ts';
import type { IncomingMessage, SendMode } from './types.ts';
import { cancelledParts, candidatesParts } from './wording.ts';

/**
 * Conversation tasks (docs/decisions/a2a.md, the "Conversations" sections): a buyer's words
 * become a demand of theirs, matched at once; the answer offers the best candidates; a pick buys
 * one (a purchase linked to the demand, which it fulfils); other words reword the demand and match
 * again. Each step stores the buyer's message and the agent's answer with the conversation's
 * change, in one database transaction, under the message's idempotency key.
 */
export interface StartInput {
  text: string;
  message: IncomingMessage;
  contextId: string;
  clientContextId: string | null;
  clientTaskId: string | null;
}

/** What a pick buys: the capability, and what a data part may add to the purchase. */
export interface Selection {
  capability_id: string;
  booked_hours?: number;
  input?: Record<string, unknown>;
  /** The buyer's own ceiling from a data part; without one, the price the candidate was shown at. */
  max_price?: bigint;
}

const notChoosing = (status: string) => new AppError('invalid_state_transition', `the conversation is ${status}`, { status, action: 'message' });

/**
 * What a candidate shown at a unit price comes to for the hours the pick books: 4.00 an hour shown,
 * five hours picked, 20.00 agreed. Where the shown model cannot price the pick, the unit price
 * shown is the ceiling (the purchase's own check then names what is missing).
 */
function shownPriceOf(shown: Candidate, bookedHours: number | undefined): bigint | undefined {
  const unitPrice = parseAmount(shown.price);
  if (unitPrice === null) return undefined;
  return priceUnder(shown.pricing_model, unitPrice, bookedHours) ?? unitPrice;
}
export function createConversations(
  { db, now }: EngineDependencies,
  idempotency: Idempotency,
  matching: MatchingEngine,
  demands: DemandEngine,
  buying: Buying,
  transactions: TransactionEngine,
) {
  /** The best offered capabilities for the words, ranked by the matcher as a demand of the caller's would be. */
  async function candidatesFor(principal: Principal, text: string, title: string): Promise<Candidate[]> {
    const at = now();
    const draft: DemandRow = {
      id: randomUUID(),
      owner_user_id: principal.user_id,
      owner_type: principal.caller_type,
      title,
      description: text,
      category: null,
      tags: [],
      max_price: null,
      auto_accept: false,
      demand_type: 'explicit',
      status: 'open',
      expires_at: null,
      transaction_id: null,
      auto_accept_claimed_at: null,
      auto_accept_attempts: 0,
      auto_accept_failure: null,
      cancelled_at: null,
      created_at: at,
      updated_at: at,
    };
    const ranked = await matching.rankFor(draft, limits.a2aCandidatesMax);
    return ranked.map(({ row, parts }, index) => ({
      number: index + 1,
      capability_id: row.id,
      title: row.title,
      price: formatAmount(row.price),
      currency: currencyOfSpace(row.owner_type),
      pricing_model: row.pricing_model,
      score: parts.score,
    }));
  }

  const exchange = (taskId: string, message: IncomingMessage, answer: ReturnType<typeof candidatesParts>, at: Date) => [
    { task_id: taskId, message_id: message.messageId, role: 'user' as const, parts: message.parts, created_at: at },
    { task_id: taskId, message_id: randomUUID(), role: 'agent' as const, parts: answer, created_at: at },
  ];

  /** Matching runs before the database transaction, so no connection waits on it (it may ask a model for embeddings). */
  async function start(principal: Principal, input: StartInput): Promise<string> {
    const title = titleOf(input.text, limits.a2aDemandTitleLengthMax);
    const candidates = await candidatesFor(principal, input.text, title);
    const fingerprint = fingerprintOf({ parts: input.message.parts, context: input.clientContextId, task: input.clientTaskId });
    const outcome = await idempotency.run(principal, { key: input.message.key, operation: 'RPC conversation start', fingerprint }, 200, async ({ trx }) => {
      const at = now();
      const demand = await demands.insertWithin(trx, principal, { description: input.text, title });
      const id = randomUUID();
      await trx('a2a_tasks').insert({
        id,
        kind: 'conversation',
        owner_user_id: principal.user_id,
        owner_type: principal.caller_type,
        context_id: input.contextId,
        client_context_id: input.clientContextId,
        client_task_id: input.clientTaskId,
        demand_id: demand.id,
        transaction_id: null,
        status: 'choosing',
        candidates: JSON.stringify(candidates),
        created_at: at,
        updated_at: at,
      });
      await insertMessages(trx, exchange(id, input.message, candidatesParts(demand.id, candidates), at));
      return { conversation_id: id };
    });
    return outcome.data.conversation_id;
  }

  /** The conversation, locked for this database transaction, while it is still choosing. */
  async function lockChoosing(trx: Knex, id: string): Promise<A2ATaskRow> {
    const row = (await trx<A2ATaskRow>('a2a_tasks').where({ id }).forUpdate().first())!;
    if (row.status !== 'choosing') throw notChoosing(row.status ?? 'a purchase');
    return row;
  }

  /** Other words: the demand takes them (title and description) and is matched again. */
  async function refine(principal: Principal, conversation: A2ATaskRow, text: string, message: IncomingMessage): Promise<void> {
    const title = titleOf(text, limits.a2aDemandTitleLengthMax);
    const candidates = await candidatesFor(principal, text, title);
    const fingerprint = fingerprintOf({ conversation: conversation.id, parts: message.parts });
    await idempotency.run(principal, { key: message.key, operation: 'RPC conversation refine', fingerprint }, 200, async ({ trx }) => {
      const at = now();
      await lockChoosing(trx, conversation.id);
      if (!(await demands.rewordWithin(trx, conversation.demand_id!, { title, description: text }))) {
        throw new AppError('invalid_state_transition', "the conversation's demand is no longer open; start a new conversation", { action: 'refine' });
      }
      await trx('a2a_tasks')
        .where({ id: conversation.id })
        .update({ candidates: JSON.stringify(candidates), updated_at: at });
      await insertMessages(trx, exchange(conversation.id, message, candidatesParts(conversation.demand_id!, candidates), at));
      return { conversation_id: conversation.id };
    });
  }

  /**
   * A pick buys once per conversation, ever. The purchase (or invoke) is keyed by the conversation,
   * for the user rather than the credential (as auto-accept buys), so identical picks, concurrent or
   * resent, and picks through another of the user's keys, land on the one transaction, and a
   * different candidate picked meanwhile is refused (4092). Once that key has expired, the
   * transaction's unique conversation_id still finds it: a pick then re-freezes the conversation's
   * own transaction (after a failed freeze) instead of buying again. The ceiling is the price the
   * candidate was shown at, for the hours booked (shownPriceOf), unless the buyer's data part sent
   * its own max_price.
   */
  async function pick(principal: Principal, conversation: A2ATaskRow, selection: Selection, message: IncomingMessage, mode: SendMode): Promise<BuyOutcome> {
    const arrivedAt = now();
    const buyer: Principal = { ...principal, api_key_id: null };
    const outcome = (await buyAgain(buyer, conversation, selection)) ?? (await buyFirst(buyer, conversation, selection, mode));
    const transactionId = outcome.view.id;
    await withTransaction(db, async ({ trx }) => {
      const at = now();
      // A cancel that raced the purchase loses: the money is in a transaction, which the task now shows.
      await trx('a2a_tasks')
        .where({ id: conversation.id })
        .whereNull('transaction_id')
        .update({ transaction_id: transactionId, status: 'bought', updated_at: at });
      await trx('demands')
        .where({ id: conversation.demand_id!, status: 'open' })
        .update({ status: 'fulfilled', transaction_id: transactionId, updated_at: at });
      await insertMessages(trx, [{ task_id: conversation.id, message_id: message.messageId, role: 'user', parts: message.parts, created_at: arrivedAt }]);
    });
    return outcome;
  }

  async function buyFirst(buyer: Principal, conversation: A2ATaskRow, selection: Selection, mode: SendMode): Promise<BuyOutcome> {
    const demand = (await db<DemandRow>('demands').where({ id: conversation.demand_id! }).first('description'))!;
    const shown = (conversation.candidates ?? []).find((candidate) => candidate.capability_id === selection.capability_id);
    const shownPrice = shown && selection.max_price === undefined ? shownPriceOf(shown, selection.booked_hours) : undefined;
    const command = {
      ...selection,
      ...(shownPrice === undefined ? {} : { shown_price: shownPrice }),
      demand_id: conversation.demand_id!,
      context_id: conversation.context_id,
      conversation_id: conversation.id,
      note: demand.description.slice(0, limits.noteLengthMax),
    };
    try {
      return await buying.buy(buyer, command, `a2a-pick:${conversation.id}`, { ...mode, waitForTwin: true });
    } catch (error) {
      if (error instanceof AppError && error.errorName === 'idempotency_key_reused')
        throw new AppError('conflict', 'another candidate is already being bought in this conversation');
      // Two picks after the key expired: the unique conversation_id let one of them buy.
      const bought = await buyAgain(buyer, conversation, selection);
      if (bought) return bought;
      throw error;
    }
  }

  /** The conversation's own transaction, if it bought already: frozen again when its freeze had failed. */
  async function buyAgain(buyer: Principal, conversation: A2ATaskRow, selection: Selection): Promise<BuyOutcome | null> {
    const own = await db('transactions').where({ conversation_id: conversation.id }).first('id', 'capability_id', 'status');
    if (!own) return null;
    if (own.capability_id !== selection.capability_id) throw new AppError('conflict', 'another candidate was already bought in this conversation');
    if (own.status !== 'pending_freeze') return { view: await transactions.get(buyer, own.id) };
    try {
      return { view: await transactions.act(buyer, own.id, 'freeze', {}, null).then((outcome) => outcome.data) };
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      // Frozen meanwhile by a twin pick (4090): the task shows it; a failed freeze (4020, ...) is reported beside it.
      const view = await transactions.get(buyer, own.id);
      return error.errorName === 'invalid_state_transition' ? { view } : { view, failure: error };
    }
  }

  /** Before a pick: the conversation and its demand are cancelled together; again is 4090. */
  async function cancel(conversation: A2ATaskRow): Promise<void> {
    await withTransaction(db, async ({ trx }) => {
      const at = now();
      const row = (await trx<A2ATaskRow>('a2a_tasks').where({ id: conversation.id }).forUpdate().first())!;
      if (row.status !== 'choosing')
        throw new AppError('invalid_state_transition', `cannot cancel a conversation that is ${row.status}`, { status: row.status, action: 'cancel' });
      await trx('a2a_tasks').where({ id: conversation.id }).update({ status: 'cancelled', updated_at: at });
      await trx('demands').where({ id: conversation.demand_id!, status: 'open' }).update({ status: 'cancelled', cancelled_at: at, updated_at: at });
      await insertMessages(trx, [
        { task_id: conversation.id, message_id: randomUUID(), role: 'agent', parts: cancelledParts(conversation.demand_id!), created_at: at },
      ]);
    });
  }

  return { start, refine, pick, cancel };
}

export type Conversations = ReturnType<typeof createConversations>;
