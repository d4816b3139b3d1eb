import type { Knex } from 'knex';
import { AppError } from '../../errors.ts';

/**
 * What the caps on one account's rows share (skills, applications, webhooks, push configs;
 * docs/decisions/work-market.md and streams-and-deliveries.md): a create counts the account's
 * live rows under a lock on the account's user row, so one account's parallel creates are counted
 * one after the other and cannot pass a cap together, while different accounts never wait on each
 * other; and a cap reached is one refusal, 4092, naming the cap.
 */
export async function lockAccount(trx: Knex, userId: string): Promise<void> {
  await trx('users').where({ id: userId }).forNoKeyUpdate().first('id');
}

/** The sentence rides in data.detail too: REST shows data, not the message, when there is data. */
export const capReached = (detail: string, data: Record<string, unknown>): AppError => new AppError('conflict', detail, { ...data, detail });
