import { transactionStatuses } from './escrow.ts';
import { applicationEventTypes, taskEventTypes } from './tasks.ts';

/**
 * Webhook rules without I/O (docs/webhooks.md): the kinds of event a subscription can ask for,
 * how a subscription's list of kinds matches an event, and when a failed delivery is tried again.
 */
export const webhookPing = 'webhook.ping';

/** A capability offered (anew) matches an open demand of another user of its space (docs/webhooks.md). */
export const demandMatched = 'demand.matched';

/** Every kind a delivery can carry: a transaction's moves, a task's and an application's, a demand's match, and the ping. */
export const webhookEventTypes: readonly string[] = [
  ...transactionStatuses.map((status) => `transaction.${status}`),
  ...new Set([...Object.values(taskEventTypes), ...Object.values(applicationEventTypes)]),
  demandMatched,
  webhookPing,
];

/** What a subscription may name: a kind, a family (`transaction.*`, `task.*`, `application.*`, `demand.*`), or `*` for all. */
export const webhookKindPatterns: readonly string[] = [
  '*',
  'transaction.*',
  'task.*',
  'application.*',
  'demand.*',
  ...webhookEventTypes.filter((type) => type !== webhookPing),
];

/** The ping goes to every subscription; any other kind to those whose list names it, its family or `*`. */
export function wantsKind(patterns: readonly string[], type: string): boolean {
  if (type === webhookPing) return true;
  const family = `${type.slice(0, type.indexOf('.'))}.*`;
  return patterns.some((pattern) => pattern === '*' || pattern === type || pattern === family);
}

/**
 * Whether a text can be sent as an HTTP header value as it is (a push config's token, its
 * authentication scheme and credentials): Latin-1 without control characters, a tab aside, which
 * is what Node's HTTP client writes. A CR or LF would end the header, a character beyond U+00FF
 * has no byte to be written as; either way the push could never be sent, so it is refused when
 * set (docs/webhooks.md "A2A push notifications").
 */
export const isSendableHeaderValue = (value: string): boolean => /^[\t\x20-\x7e\x80-\xff]*$/.test(value);
export const unsendableHeaderMessage = 'must be sendable in an HTTP header: Latin-1 characters only, without line breaks or other control characters';

export interface RetrySchedule {
  firstDelayMs: number;
  delayMaxMs: number;
  windowMs: number;
}

/**
 * When to try again after the `attempt`-th failure (1 for the first): exponential from
 * firstDelayMs, capped at delayMaxMs, scaled by a jitter in [0.8, 1.2) so that the deliveries of a
 * receiver that came back do not all arrive in the same second. Null when the next try would fall
 * outside the delivery window counted from the event: the delivery has failed.
 */
export function nextAttemptAt(schedule: RetrySchedule, createdAt: Date, failedAt: Date, attempt: number, random: number): Date | null {
  const exponent = Math.min(attempt - 1, 30);
  const delayMs = Math.min(schedule.firstDelayMs * 2 ** exponent, schedule.delayMaxMs) * (0.8 + 0.4 * random);
  const next = failedAt.getTime() + Math.round(delayMs);
  return next > createdAt.getTime() + schedule.windowMs ? null : new Date(next);
}
