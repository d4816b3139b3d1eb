import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { feeOf, formatAmount } from '../../src/domain/money.ts';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { type TestApp, startTestApp } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { balance, credit } from '../helpers/market.ts';
import { callTool, connectMcp } from '../helpers/mcp.ts';
import { listen } from '../helpers/server.ts';

/** The work market through the official MCP SDK client, as an agent meets it: the same rules and money as REST. */
let test: TestApp;
let server: Awaited<ReturnType<typeof listen>>;
const clients: Client[] = [];

beforeAll(async () => {
  test = await startTestApp();
  server = await listen(test);
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await server?.close();
  await test?.close();
});

async function clientOf(actor: Actor) {
  const client = await connectMcp(server.url, actor.headers);
  clients.push(client);
  return client;
}
const ok = (outcome: { isError: boolean; data: Record<string, any> }) => {
  expect(outcome.isError, JSON.stringify(outcome.data)).toBe(false);
  return outcome.data;
};

describe('MCP work-market tools', () => {
  it('publish, search, apply, accept, then accept, deliver and confirm the transaction, with exact balances', async () => {
    const [publisher, worker] = [await createAgent(test), await createAgent(test)];
    await credit(test, publisher.userId, '50.00');
    const [boss, hand] = [await clientOf(publisher), await clientOf(worker)];
    const word = `heron${randomUUID().slice(0, 6)}`;
    const published = ok(
      await callTool(boss, 'publish_task', {
        title: `Count ${word} nests`,
        description: 'From drone photos',
        mode: 'online',
        category: 'data',
        bounty_amount: '20.00',
      }),
    );
    expect(published.task).toMatchObject({ status: 'open', bounty_held: '20.00' });
    expect(await balance(test, publisher)).toMatchObject({ available: '30.00', frozen: '20.00' });
    const found = ok(await callTool(hand, 'search_tasks', { q: word }));
    expect(found.items.map((item: { id: string }) => item.id)).toEqual([published.task.id]);
    const skill = (
      await test.http.post('/api/v1/skills/').set(worker.headers).send({ name: 'Bird counts', description: 'Counting birds', category: 'data' }).expect(201)
    ).body.data;
    const applied = ok(await callTool(hand, 'apply_to_task', { task_id: published.task.id, skill_id: skill.id, proposed_price: '18.00' }));
    const accepted = ok(await callTool(boss, 'accept_application', { task_id: published.task.id, app_id: applied.application.id }));
    const transactionId = accepted.accepted.transaction.id as string;
    expect(accepted.accepted.transaction).toMatchObject({ status: 'frozen', price_ut: '18.00' });
    expect(ok(await callTool(hand, 'accept_transaction', { tx_id: transactionId })).transaction.status).toBe('accepted');
    expect(ok(await callTool(hand, 'deliver_transaction', { tx_id: transactionId, result_payload: { nests: 41 } })).transaction.status).toBe('delivered');
    const confirmed = ok(await callTool(boss, 'confirm_transaction', { tx_id: transactionId, idempotency_key: 'confirm-1' }));
    expect(confirmed.transaction.status).toBe('settled');
    expect(ok(await callTool(boss, 'confirm_transaction', { tx_id: transactionId, idempotency_key: 'confirm-1' })).transaction.status).toBe('settled');
    expect(await balance(test, publisher)).toMatchObject({ available: '32.00', frozen: '0.00' });
    expect(await balance(test, worker)).toMatchObject({ available: formatAmount(1800n - feeOf(1800n, test.config.PLATFORM_FEE_BPS)) });
    expect(await checkBooks(test.runtime.engine.dependencies.db)).toEqual([]);
  });

  it("refuses as REST refuses: a short balance keeps a draft (4020), one's own task (4030), a move of the other party (4030)", async () => {
    const [publisher, worker] = [await createAgent(test), await createAgent(test)];
    const boss = await clientOf(publisher);
    const short = await callTool(boss, 'publish_task', { title: 'Big job', description: 'Big', mode: 'online', bounty_amount: '99.00' });
    expect(short).toMatchObject({ isError: true, data: { code: 4020, data: { status: 'draft', required: '99.00' } } });
    const task = ok(await callTool(boss, 'publish_task', { title: 'Small job', description: 'Small', mode: 'online' })).task;
    const ownSkill = (await test.http.post('/api/v1/skills/').set(publisher.headers).send({ name: 'x', description: 'y', category: 'other' }).expect(201)).body
      .data;
    expect((await callTool(boss, 'apply_to_task', { task_id: task.id, skill_id: ownSkill.id })).data.code).toBe(4030);
    expect((await callTool(await clientOf(worker), 'publish_task', { title: 'x', description: 'y' })).data.code).toBe(4000);
  });
});
