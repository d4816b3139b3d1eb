import type { Knex } from 'knex';
import { findTransition, type TransactionAction, transactionActions } from '../../src/domain/escrow.ts';
import { feeOf } from '../../src/domain/money.ts';

/**
 * The books checked in SQL, for the chaos run (test/chaos): each rule that must hold whatever
 * happened to the servers, the database or the bus. Answers the violations found, each naming
 * what broke; an empty list is a clean book.
 */
const openStatuses = new Set(['frozen', 'accepted', 'delivered', 'disputed']);

interface AccountRow {
  id: string;
  kind: string;
  owner_user_id: string | null;
  currency: string;
  available: string;
  frozen: string;
}
interface TransactionRow {
  id: string;
  buyer_user_id: string;
  seller_user_id: string;
  currency: string;
  price: string;
  fee_bps: number;
  status: string;
  event_sequence: number;
}
interface EntryRow {
  id: string;
  movement_id: string;
  account_id: string;
  currency: string;
  bucket: 'available' | 'frozen';
  amount: string;
  balance_after: string;
  biz_ref_id: string | null;
}
interface EventRow {
  transaction_id: string;
  transaction_sequence: number;
  event_type: string;
  buyer_user_id: string;
  buyer_sequence: string;
  seller_user_id: string;
  seller_sequence: string;
}

/**
 * All tables are read in one REPEATABLE READ transaction: one consistent snapshot, so the rules
 * hold at any moment of a moving market (a state change and its ledger entries commit together).
 */
export async function checkBooks(db: Knex): Promise<string[]> {
  return db.transaction(
    async (trx) => {
      const accounts = (await trx('accounts').select('id', 'kind', 'owner_user_id', 'currency', 'available', 'frozen')) as AccountRow[];
      const transactions = (await trx('transactions').select(
        'id',
        'buyer_user_id',
        'seller_user_id',
        'currency',
        'price',
        'fee_bps',
        'status',
        'event_sequence',
      )) as TransactionRow[];
      const entries = (await trx('ledger_entries')
        .orderBy('id')
        .select('id', 'movement_id', 'account_id', 'currency', 'bucket', 'amount', 'balance_after', 'biz_ref_id')) as EntryRow[];
      const events = (await trx('outbox_events')
        .orderBy('transaction_sequence')
        .select('transaction_id', 'transaction_sequence', 'event_type', 'buyer_user_id', 'buyer_sequence', 'seller_user_id', 'seller_sequence')) as EventRow[];
      const streams = (await trx('event_streams').select('owner_user_id', 'last_sequence')) as { owner_user_id: string; last_sequence: string }[];
      const taskHolds = (await trx('tasks').select('id', 'owner_user_id', 'bounty_currency', 'bounty_held')) as TaskHoldRow[];
      const taskEvents = (await trx('task_events').select('recipient_user_id', 'recipient_sequence', 'task_id')) as {
        recipient_user_id: string;
        recipient_sequence: string;
        task_id: string;
      }[];
      const taskEventStreams = (await trx('task_event_streams').select('owner_user_id', 'last_sequence')) as { owner_user_id: string; last_sequence: string }[];
      return [
        ...money(accounts, transactions, entries, taskHolds),
        ...histories(transactions, events),
        ...eventStreams(events, streams),
        ...taskStreams(taskHolds, taskEvents, taskEventStreams),
      ];
    },
    { isolationLevel: 'repeatable read' },
  );
}

/** A task's bounty held while it is open (docs/tasks.md "Bounty money"). */
interface TaskHoldRow {
  id: string;
  owner_user_id: string;
  bounty_currency: string;
  bounty_held: string;
}

function money(accounts: AccountRow[], transactions: TransactionRow[], entries: EntryRow[], taskHolds: TaskHoldRow[] = []): string[] {
  const violations: string[] = [];
  for (const currency of new Set(accounts.map((account) => account.currency))) {
    const total = accounts
      .filter((account) => account.currency === currency)
      .reduce((sum, account) => sum + BigInt(account.available) + BigInt(account.frozen), 0n);
    if (total !== 0n) violations.push(`${currency} sums to ${total}, not 0`);
  }
  for (const account of accounts) {
    if (BigInt(account.frozen) < 0n || (account.kind !== 'external' && BigInt(account.available) < 0n)) violations.push(`account ${account.id} is negative`);
  }
  const holds = new Map<string, bigint>();
  for (const row of transactions.filter((each) => openStatuses.has(each.status)))
    holds.set(`${row.buyer_user_id}:${row.currency}`, (holds.get(`${row.buyer_user_id}:${row.currency}`) ?? 0n) + BigInt(row.price));
  // An open task's bounty is frozen in its publisher's account beside the open transactions.
  for (const row of taskHolds)
    holds.set(`${row.owner_user_id}:${row.bounty_currency}`, (holds.get(`${row.owner_user_id}:${row.bounty_currency}`) ?? 0n) + BigInt(row.bounty_held));
  for (const account of accounts.filter((each) => each.kind === 'user')) {
    const held = holds.get(`${account.owner_user_id}:${account.currency}`) ?? 0n;
    if (BigInt(account.frozen) !== held)
      violations.push(`user ${account.owner_user_id} has ${account.frozen} ${account.currency} frozen, its open holds are ${held}`);
  }
  const running = new Map<string, bigint>();
  const movements = new Map<string, bigint>();
  for (const entry of entries) {
    const key = `${entry.account_id}:${entry.bucket}`;
    running.set(key, (running.get(key) ?? 0n) + BigInt(entry.amount));
    if (running.get(key) !== BigInt(entry.balance_after))
      violations.push(`ledger entry ${entry.id}: balance_after ${entry.balance_after}, replayed ${running.get(key)}`);
    movements.set(`${entry.movement_id}:${entry.currency}`, (movements.get(`${entry.movement_id}:${entry.currency}`) ?? 0n) + BigInt(entry.amount));
  }
  for (const account of accounts) {
    for (const bucket of ['available', 'frozen'] as const) {
      if ((running.get(`${account.id}:${bucket}`) ?? 0n) !== BigInt(account[bucket]))
        violations.push(`account ${account.id} ${bucket} does not replay from the ledger`);
    }
  }
  for (const [movement, sum] of movements) if (sum !== 0n) violations.push(`movement ${movement} does not balance (${sum})`);
  const owners = new Map(accounts.map((account) => [account.id, account.owner_user_id]));
  const byTransaction = new Map<string, EntryRow[]>();
  for (const entry of entries) if (entry.biz_ref_id) byTransaction.set(entry.biz_ref_id, [...(byTransaction.get(entry.biz_ref_id) ?? []), entry]);
  for (const row of transactions) {
    const mine = byTransaction.get(row.id) ?? [];
    const net = (userId: string, bucket: string) =>
      mine.filter((entry) => owners.get(entry.account_id) === userId && entry.bucket === bucket).reduce((sum, entry) => sum + BigInt(entry.amount), 0n);
    const price = BigInt(row.price);
    const open = openStatuses.has(row.status);
    const settled = row.status === 'settled';
    if (net(row.buyer_user_id, 'frozen') !== (open ? price : 0n))
      violations.push(`transaction ${row.id} (${row.status}): buyer's hold is ${net(row.buyer_user_id, 'frozen')}`);
    if (net(row.buyer_user_id, 'available') !== (open || settled ? -price : 0n))
      violations.push(`transaction ${row.id} (${row.status}): buyer paid ${-net(row.buyer_user_id, 'available')}`);
    if (net(row.seller_user_id, 'available') !== (settled ? price - feeOf(price, row.fee_bps) : 0n))
      violations.push(`transaction ${row.id} (${row.status}): seller got ${net(row.seller_user_id, 'available')}`);
  }
  // Each task's own ledger entries (biz_ref_id = the task) add up to what it holds now.
  for (const task of taskHolds) {
    const frozen = (byTransaction.get(task.id) ?? []).filter((entry) => entry.bucket === 'frozen').reduce((sum, entry) => sum + BigInt(entry.amount), 0n);
    if (frozen !== BigInt(task.bounty_held)) violations.push(`task ${task.id} holds ${task.bounty_held} but its ledger entries freeze ${frozen}`);
  }
  return violations;
}

/** Every transaction's events are numbered 1..event_sequence and each step is a move of the table. */
function histories(transactions: TransactionRow[], events: EventRow[]): string[] {
  const violations: string[] = [];
  const byTransaction = new Map<string, EventRow[]>();
  for (const event of events) byTransaction.set(event.transaction_id, [...(byTransaction.get(event.transaction_id) ?? []), event]);
  for (const row of transactions) {
    const mine = byTransaction.get(row.id) ?? [];
    const sequences = mine.map((event) => Number(event.transaction_sequence));
    if (sequences.join() !== Array.from({ length: row.event_sequence }, (_, index) => index + 1).join())
      violations.push(`transaction ${row.id}: events ${sequences.join(',')} for sequence ${row.event_sequence}`);
    const statuses = mine.map((event) => event.event_type.replace(/^transaction\./, ''));
    if (statuses.length > 0 && statuses[0] !== 'pending_freeze' && statuses[0] !== 'frozen') violations.push(`transaction ${row.id} starts ${statuses[0]}`);
    for (let index = 1; index < statuses.length; index++) {
      const reachable = transactionActions.some((action: TransactionAction) => findTransition(statuses[index - 1] as never, action)?.to === statuses[index]);
      if (!reachable) violations.push(`transaction ${row.id}: ${statuses[index - 1]} -> ${statuses[index]} is no move of the table`);
    }
    if (statuses.length > 0 && statuses.at(-1) !== row.status)
      violations.push(`transaction ${row.id} is ${row.status}, its last event says ${statuses.at(-1)}`);
  }
  return violations;
}

/** Each user's stream is numbered 1..N with no gap or repeat, and its counter says N. */
function eventStreams(events: EventRow[], streams: { owner_user_id: string; last_sequence: string }[]): string[] {
  const positions = events.flatMap((event) => [
    { userId: event.buyer_user_id, sequence: Number(event.buyer_sequence) },
    { userId: event.seller_user_id, sequence: Number(event.seller_sequence) },
  ]);
  return gapFree('event stream', positions, streams);
}

/**
 * Each person's numbering (their transaction stream, their task stream) runs 1, 2, 3... without a
 * gap or a repeat, up to what their counter says.
 */
function gapFree(what: string, positions: { userId: string; sequence: number }[], streams: { owner_user_id: string; last_sequence: string }[]): string[] {
  const violations: string[] = [];
  const byUser = new Map<string, number[]>();
  for (const { userId, sequence } of positions) byUser.set(userId, [...(byUser.get(userId) ?? []), sequence]);
  const last = new Map(streams.map((stream) => [stream.owner_user_id, Number(stream.last_sequence)]));
  for (const [userId, sequences] of byUser) {
    sequences.sort((a, b) => a - b);
    if (sequences.some((sequence, index) => sequence !== index + 1)) violations.push(`the ${what} of ${userId} has a gap or a repeat`);
    if ((last.get(userId) ?? 0) !== sequences.length) violations.push(`the ${what} of ${userId} says ${last.get(userId)} for ${sequences.length} events`);
  }
  for (const [userId, counted] of last) if (counted > 0 && !byUser.has(userId)) violations.push(`the ${what} of ${userId} says ${counted} for no events`);
  return violations;
}

/** Every task was heard of by its publisher (its first move is an event), and the task streams have no gaps. */
function taskStreams(
  tasks: TaskHoldRow[],
  events: { recipient_user_id: string; recipient_sequence: string; task_id: string }[],
  streams: { owner_user_id: string; last_sequence: string }[],
): string[] {
  const heard = new Set(events.map((event) => `${event.recipient_user_id}:${event.task_id}`));
  const unheard = tasks.filter((task) => !heard.has(`${task.owner_user_id}:${task.id}`)).map((task) => `task ${task.id} has no event for its publisher`);
  return [
    ...unheard,
    ...gapFree(
      'task stream',
      events.map((event) => ({ userId: event.recipient_user_id, sequence: Number(event.recipient_sequence) })),
      streams,
    ),
  ];
}
