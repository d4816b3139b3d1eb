import { AppError } from '../errors.ts';

/**
 * Task rules without I/O (docs/tasks.md): the status table with what each move does to the
 * bounty, and the hall's orders. The specification gives the states and four moves out of open;
 * the rest are the project's decisions, written in docs/tasks.md "Task status".
 */
export const taskStatuses = ['draft', 'open', 'matched', 'closed', 'cancelled', 'expired'] as const;
export type TaskStatus = (typeof taskStatuses)[number];
export const taskActions = ['publish', 'update', 'close', 'cancel', 'expire', 'match'] as const;
export type TaskAction = (typeof taskActions)[number];
export type TaskActor = 'owner' | 'operator' | 'system';
/**
 * What a move does to the bounty: `hold` freezes it from the publisher's available balance,
 * `release` gives the held amount back, `adjust` freezes or releases the difference of a new
 * bounty, `to_transaction` turns the hold into an escrow transaction's (the rest is released).
 */
export type BountyMove = 'none' | 'hold' | 'release' | 'adjust' | 'to_transaction';

export interface TaskTransition {
  from: TaskStatus;
  action: TaskAction;
  to: TaskStatus;
  actor: TaskActor;
  money: BountyMove;
}

export const taskTransitionTable: readonly TaskTransition[] = [
  { from: 'draft', action: 'publish', to: 'open', actor: 'owner', money: 'hold' },
  { from: 'draft', action: 'update', to: 'draft', actor: 'owner', money: 'none' },
  { from: 'draft', action: 'close', to: 'closed', actor: 'owner', money: 'none' },
  { from: 'open', action: 'update', to: 'open', actor: 'owner', money: 'adjust' },
  { from: 'open', action: 'close', to: 'closed', actor: 'owner', money: 'release' },
  { from: 'open', action: 'cancel', to: 'cancelled', actor: 'operator', money: 'release' },
  { from: 'open', action: 'expire', to: 'expired', actor: 'system', money: 'release' },
  { from: 'open', action: 'match', to: 'matched', actor: 'owner', money: 'to_transaction' },
];

export function nextTaskState(from: TaskStatus, action: TaskAction): TaskTransition {
  const transition = taskTransitionTable.find((row) => row.from === from && row.action === action);
  if (!transition) throw new AppError('invalid_state_transition', `cannot ${action} a task that is ${from}`, { status: from, action });
  return transition;
}

/** Open tasks are in the hall; these are the orders it offers. */
export const taskHallSorts = ['relevance', 'newest', 'bounty_desc', 'bounty_asc', 'deadline'] as const;
export type TaskHallSort = (typeof taskHallSorts)[number];

export function taskHallSortOf(requested: TaskHallSort | undefined, hasQuery: boolean): TaskHallSort {
  if (requested === 'relevance' && !hasQuery) {
    throw new AppError('validation_error', 'sort=relevance needs a text query', { errors: [{ path: 'query.sort', message: 'relevance needs q' }] });
  }
  return requested ?? (hasQuery ? 'relevance' : 'newest');
}

/**
 * The business fields a request must state again, not inherit (the specification: "delivery_hours
 * and the other business-required fields must be filled in again"): publishing a draft restates
 * the delivery period; reusing a task restates it and the bounty, so that no money is held on a
 * copied number nobody looked at.
 */
export const restatedFields = { publish: ['delivery_hours'], reuse: ['delivery_hours', 'bounty_amount'] } as const;

/** The fields of `restatedFields[kind]` a request body lacks, in order: each is a 4000 error path. */
export function missingRestated(kind: keyof typeof restatedFields, body: Record<string, unknown>): string[] {
  return restatedFields[kind].filter((field) => !(field in body) || body[field] === undefined);
}

/**
 * Application statuses (docs/tasks.md "Application status"): the applicant withdraws a pending
 * application, the publisher rejects or accepts it. Anything else is 4090.
 */
export const applicationStatuses = ['pending', 'withdrawn', 'rejected', 'accepted'] as const;
export type ApplicationStatus = (typeof applicationStatuses)[number];
export const applicationActions = ['withdraw', 'reject', 'accept'] as const;
export type ApplicationAction = (typeof applicationActions)[number];

export const applicationTransitionTable: readonly {
  from: ApplicationStatus;
  action: ApplicationAction;
  to: ApplicationStatus;
  actor: 'applicant' | 'publisher';
}[] = [
  { from: 'pending', action: 'withdraw', to: 'withdrawn', actor: 'applicant' },
  { from: 'pending', action: 'reject', to: 'rejected', actor: 'publisher' },
  { from: 'pending', action: 'accept', to: 'accepted', actor: 'publisher' },
];

export function nextApplicationState(from: ApplicationStatus, action: ApplicationAction): ApplicationStatus {
  const transition = applicationTransitionTable.find((row) => row.from === from && row.action === action);
  if (!transition) throw new AppError('invalid_state_transition', `cannot ${action} an application that is ${from}`, { status: from, action });
  return transition.to;
}

/**
 * The events of the task stream (docs/tasks.md "Task events"), one per move: what each is
 * called, and who hears it. A task's moves go to its publisher and to every applicant whose
 * application is pending at the time; an application's moves go to the publisher and that
 * applicant. Storing a draft (create with `draft: true`, or a publish short of money) is the
 * task's first event. `match` is the accept seen from a pending application that lost: rejected;
 * `close`, `cancel` and `expire` are the end of its task seen from a pending application: rejected too.
 */
export type TaskEventAction = TaskAction | 'draft';
export const taskEventTypes: Readonly<Record<TaskEventAction, string>> = {
  draft: 'task.drafted',
  publish: 'task.published',
  update: 'task.updated',
  close: 'task.closed',
  cancel: 'task.cancelled',
  expire: 'task.expired',
  match: 'task.matched',
};
// close, cancel and expire: the task ended, and its pending applications with it (rejected).
export type ApplicationEventAction = ApplicationAction | 'apply' | 'match' | 'close' | 'cancel' | 'expire';
export const applicationEventTypes: Readonly<Record<ApplicationEventAction, string>> = {
  apply: 'application.submitted',
  withdraw: 'application.withdrawn',
  reject: 'application.rejected',
  accept: 'application.accepted',
  match: 'application.rejected',
  close: 'application.rejected',
  cancel: 'application.rejected',
  expire: 'application.rejected',
};

/**
 * Terms an application may not name together, as a field error: a unit price with neither a
 * quantity nor a total (what would it ask in all?), or a total that is not the unit price times
 * the quantity it names beside them (which of the two would the publisher be charged?). A unit
 * price beside a total alone is the applicant's rate, shown as such.
 */
export function offerTermsProblem(offer: {
  proposed_price?: bigint;
  proposed_unit_price?: bigint;
  proposed_quantity?: number;
}): { path: string; message: string } | null {
  const { proposed_price: total, proposed_unit_price: unitPrice, proposed_quantity: quantity } = offer;
  if (unitPrice !== undefined && quantity === undefined && total === undefined) {
    return {
      path: 'body.proposed_quantity',
      message: 'send proposed_quantity with proposed_unit_price (the total asked is their product), or a proposed_price',
    };
  }
  if (total !== undefined && unitPrice !== undefined && quantity !== undefined && total !== unitPrice * BigInt(quantity)) {
    return { path: 'body.proposed_price', message: 'must be proposed_unit_price × proposed_quantity, or be left out' };
  }
  return null;
}

/**
 * What an application asks in all: its proposed_price, else its unit price times its quantity
 * when it names both (an offer of 2.00 a unit for 3 units asks 6.00, not the bounty); undefined
 * when it names neither, and the bounty is the price (docs/tasks.md "Accepting").
 */
export function offeredTotal(offer: { proposed_price?: bigint; proposed_unit_price?: bigint; proposed_quantity?: number }): bigint | undefined {
  if (offer.proposed_price !== undefined) return offer.proposed_price;
  if (offer.proposed_unit_price === undefined || offer.proposed_quantity === undefined) return undefined;
  return offer.proposed_unit_price * BigInt(offer.proposed_quantity);
}
