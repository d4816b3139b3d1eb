import { currencyOfSpace } from '../../domain/money.ts';
import { partyEventView } from '../../events/event-json.ts';
import { toPublishedEvent } from '../../events/publisher.ts';
import { toPublishedTaskEvent } from '../../events/task-feed.ts';
import type { OutboxRow } from '../../store/outbox.ts';
import type { TaskEventRow } from '../../store/task-events.ts';
import { type DemandEventRow, toDemandEvent } from '../market/index.ts';

/**
 * The webhook dispatcher's view of the events of its three feeds (webhook-dispatch.ts): an event
 * as a candidate for deliveries, and the few columns of it that say which subscriptions could
 * hear it, read before (and mostly instead of) its payload.
 */
export type FeedName = 'transaction' | 'task' | 'demand';

export interface Candidate {
  source: 'transaction' | 'task' | 'demand';
  sourceEventId: string;
  createdAt: Date;
  orderingKey: string;
  recipients: string[];
  space: (ownerType: string) => boolean;
  transactionId: string | null;
  taskId: string | null;
  type: string;
  body: Record<string, unknown>;
}

function transactionCandidate(row: OutboxRow): Candidate {
  const event = toPublishedEvent(row);
  const transaction = (event.data.transaction ?? {}) as { currency?: string; task_id?: string | null };
  return {
    source: 'transaction',
    sourceEventId: String(row.id),
    createdAt: new Date(row.created_at),
    orderingKey: `transaction:${row.transaction_id}`,
    recipients: [row.buyer_user_id, row.seller_user_id],
    space: (ownerType) => currencyOfSpace(ownerType as 'agent' | 'human') === transaction.currency,
    transactionId: row.transaction_id,
    taskId: transaction.task_id ?? null,
    type: event.type,
    body: { type: event.type, timestamp: event.created_at, data: partyEventView(event) },
  };
}

function taskCandidate(row: TaskEventRow): Candidate {
  const event = toPublishedTaskEvent(row);
  return {
    source: 'task',
    sourceEventId: String(row.id),
    createdAt: new Date(row.created_at),
    orderingKey: `task:${row.task_id}`,
    recipients: [row.recipient_user_id],
    space: (ownerType) => ownerType === row.space,
    transactionId: null,
    taskId: row.task_id,
    type: event.type,
    body: { type: event.type, timestamp: event.created_at, data: event },
  };
}

function demandCandidate(row: DemandEventRow): Candidate {
  const event = toDemandEvent(row);
  return {
    source: 'demand',
    sourceEventId: String(row.id),
    createdAt: new Date(row.created_at),
    orderingKey: `demand:${row.demand_id}`,
    recipients: [row.recipient_user_id],
    space: (ownerType) => ownerType === row.space,
    transactionId: null,
    taskId: null,
    type: row.type,
    body: { type: row.type, timestamp: event.created_at, data: event },
  };
}

/** What the subscriptions' reads need of an event: read without its payload, which only an event that gets a delivery needs. */
export type Parties = Pick<Candidate, 'source' | 'transactionId' | 'taskId' | 'recipients'>;
export interface PartyRow {
  id: string;
  transaction_id?: string;
  task_id?: string | null;
  buyer_user_id?: string;
  seller_user_id?: string;
  recipient_user_id?: string;
}
export const partyColumns: Record<FeedName, string> = {
  transaction: "event.id, event.transaction_id, event.buyer_user_id, event.seller_user_id, event.payload #>> '{transaction,task_id}' AS task_id",
  task: 'event.id, event.task_id, event.recipient_user_id',
  demand: 'event.id, event.recipient_user_id',
};
export const partiesOf: Record<FeedName, (row: PartyRow) => Parties> = {
  transaction: (row) => ({
    source: 'transaction',
    transactionId: row.transaction_id!,
    taskId: row.task_id ?? null,
    recipients: [row.buyer_user_id!, row.seller_user_id!],
  }),
  task: (row) => ({ source: 'task', transactionId: null, taskId: row.task_id!, recipients: [row.recipient_user_id!] }),
  demand: (row) => ({ source: 'demand', transactionId: null, taskId: null, recipients: [row.recipient_user_id!] }),
};

export const candidatesOf = {
  transaction: (rows: unknown[]) => (rows as OutboxRow[]).map(transactionCandidate),
  task: (rows: unknown[]) => (rows as TaskEventRow[]).map(taskCandidate),
  demand: (rows: unknown[]) => (rows as DemandEventRow[]).map(demandCandidate),
};
