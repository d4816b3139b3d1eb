import { AppError } from '../errors.ts';

/**
 * The transaction state machine as data. Each row says who may take an action from which state,
 * where it leads, and which money movement goes with it. nextState() is the only judge.
 */
export const transactionStatuses = [
  'pending_freeze',
  'frozen',
  'accepted',
  'delivered',
  'settled',
  'cancelled_by_buyer',
  'rejected_by_seller',
  'disputed',
  'failed',
  'refunded',
] as const;
export type TransactionStatus = (typeof transactionStatuses)[number];

export const transactionActions = [
  'freeze',
  'accept',
  'reject',
  'deliver',
  'confirm',
  'cancel',
  'dispute',
  'auto_confirm',
  'resolve_settle',
  'resolve_refund',
  'fail',
  'invoke_settle',
] as const;
export type TransactionAction = (typeof transactionActions)[number];

export type Actor = 'buyer' | 'seller' | 'system' | 'admin';
/** freeze: buyer available -> frozen; settle: buyer frozen -> seller (less fee); release: frozen -> available. */
export type MoneyMovement = 'none' | 'freeze' | 'settle' | 'release';

export interface Transition {
  from: TransactionStatus;
  action: TransactionAction;
  to: TransactionStatus;
  actor: Actor;
  money: MoneyMovement;
}

export const transitionTable: readonly Transition[] = [
  { from: 'pending_freeze', action: 'freeze', to: 'frozen', actor: 'buyer', money: 'freeze' },
  { from: 'pending_freeze', action: 'cancel', to: 'cancelled_by_buyer', actor: 'buyer', money: 'none' },
  { from: 'frozen', action: 'accept', to: 'accepted', actor: 'seller', money: 'none' },
  { from: 'frozen', action: 'reject', to: 'rejected_by_seller', actor: 'seller', money: 'release' },
  { from: 'frozen', action: 'cancel', to: 'cancelled_by_buyer', actor: 'buyer', money: 'release' },
  { from: 'frozen', action: 'fail', to: 'failed', actor: 'system', money: 'release' },
  // An invoke's callback answered well: the system settles in one step, since the callback's
  // answer is the delivery and the buyer asked for it synchronously (docs/decisions/money-and-escrow.md "Invoke").
  { from: 'frozen', action: 'invoke_settle', to: 'settled', actor: 'system', money: 'settle' },
  { from: 'accepted', action: 'deliver', to: 'delivered', actor: 'seller', money: 'none' },
  { from: 'accepted', action: 'reject', to: 'rejected_by_seller', actor: 'seller', money: 'release' },
  // Allowed only once delivery_deadline has passed; see guardsHold in the engine.
  { from: 'accepted', action: 'cancel', to: 'cancelled_by_buyer', actor: 'buyer', money: 'release' },
  { from: 'accepted', action: 'fail', to: 'failed', actor: 'system', money: 'release' },
  { from: 'delivered', action: 'confirm', to: 'settled', actor: 'buyer', money: 'settle' },
  { from: 'delivered', action: 'auto_confirm', to: 'settled', actor: 'system', money: 'settle' },
  // Allowed only before auto_confirm_at.
  { from: 'delivered', action: 'dispute', to: 'disputed', actor: 'buyer', money: 'none' },
  { from: 'disputed', action: 'resolve_settle', to: 'settled', actor: 'admin', money: 'settle' },
  { from: 'disputed', action: 'resolve_refund', to: 'refunded', actor: 'admin', money: 'release' },
];

export const terminalStatuses: ReadonlySet<TransactionStatus> = new Set(['settled', 'cancelled_by_buyer', 'rejected_by_seller', 'failed', 'refunded']);

/** Which party an action belongs to, whatever the state: used to answer 4030 before 4090. */
export const actorOfAction: Record<TransactionAction, Actor> = Object.fromEntries(
  transitionTable.map((transition) => [transition.action, transition.actor]),
) as Record<TransactionAction, Actor>;

export function findTransition(from: TransactionStatus, action: TransactionAction): Transition | undefined {
  return transitionTable.find((transition) => transition.from === from && transition.action === action);
}

export function invalidTransition(status: TransactionStatus, action: TransactionAction): AppError {
  return new AppError('invalid_state_transition', `cannot ${action} a transaction that is ${status}`, { status, action });
}

/** The next state for an action, or the 4090 error carrying the current status and the action. */
export function nextState(from: TransactionStatus, action: TransactionAction): Transition {
  const transition = findTransition(from, action);
  if (!transition) throw invalidTransition(from, action);
  return transition;
}
