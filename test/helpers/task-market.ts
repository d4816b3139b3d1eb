import type { Principal } from '../../src/engine/common/index.ts';
import type { ChangeOutcome, StateChange } from '../../src/store/change.ts';
import { type Actor, createAgent } from './actors.ts';
import type { TestApp } from './app.ts';
import { credit } from './market.ts';

/** What the tests of tasks in group commits share: agents with money, their tasks and skills, and a gate that makes one batch. */

export const catalogueTask = { title: 'Index a catalogue', description: 'Four hundred entries, by author.', mode: 'online', category: 'translation' };

/** A new agent with `amount` UT available. */
export async function fundedAgent(test: TestApp, amount = '50.00'): Promise<Actor> {
  const actor = await createAgent(test);
  await credit(test, actor.userId, amount);
  return actor;
}

/** A task of `actor`'s, published with a bounty of 10.00 unless `extra` says otherwise. */
export async function taskOf(test: TestApp, actor: Actor, extra: Record<string, unknown> = { bounty_amount: '10.00' }): Promise<string> {
  const answer = await test.http
    .post('/api/v1/tasks/')
    .set(actor.headers)
    .send({ ...catalogueTask, ...extra })
    .expect(201);
  return answer.body.data.id as string;
}

/** An active skill of `actor`'s in the task's category. */
export async function skillOf(test: TestApp, actor: Actor): Promise<string> {
  const answer = await test.http
    .post('/api/v1/skills/')
    .set(actor.headers)
    .send({ name: 'Cataloguing', description: 'Library catalogues', category: 'translation' })
    .expect(201);
  return answer.body.data.id as string;
}

/** The principal of an agent acting through its key; with `budgetKeyId`, that key's budget counts its charges. */
export function agentPrincipal(actor: Actor, budgetKeyId?: string): Principal {
  return {
    user_id: actor.userId,
    caller_type: 'agent',
    platform: 'custom_mcp',
    api_key_id: budgetKeyId ?? null,
    ...(budgetKeyId ? { budget_key_id: budgetKeyId } : {}),
  };
}

/**
 * A submit that holds the first `count` changes until all of them have arrived, so that they leave
 * in one batch of `submit`; `before` runs for each of them first (to change a row after it was read).
 */
export function batchGate(count: number, submit: (change: StateChange) => Promise<ChangeOutcome>, before?: (change: StateChange) => Promise<unknown>) {
  const waiting: (() => void)[] = [];
  let submitted = 0;
  return async (change: StateChange): Promise<ChangeOutcome> => {
    if (++submitted <= count) {
      await before?.(change);
      await new Promise<void>((resolve) => {
        waiting.push(resolve);
        if (waiting.length === count) for (const release of waiting) release();
      });
    }
    return submit(change);
  };
}
