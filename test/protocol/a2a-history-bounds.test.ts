import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limits } from '../../src/limits.ts';
import { createAgent } from '../helpers/actors.ts';
import { hex, rpcCaller, v10Text } from '../helpers/a2a.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';

/**
 * A2A history is bounded in bytes (issue 15 point 7): a message's parts are stored up to
 * a2aStoredPartsBytesMax (a larger part is kept as a marker of its size), one answer's history up to
 * a2aHistoryAnswerBytesMax (oldest cut first, counted in metadata.marketplace.history_cut), one
 * ListTasks page's histories up to a2aListHistoryBytesMax together; and conversations and their
 * messages follow the retention of events.
 */
let test: TestApp;
let rpc: ReturnType<typeof rpcCaller>;
beforeAll(async () => {
  test = await startTestApp();
  rpc = rpcCaller(test);
});
afterAll(() => test.close());

type Json = Record<string, any>;
const sizeOf = (value: unknown) => Buffer.byteLength(JSON.stringify(value));
const followUp = (taskId: string, parts: Json[]) => ({ message: { messageId: randomUUID(), role: 'ROLE_USER', taskId, parts } });

describe('A2A history in bytes', () => {
  it('20 messages with a 900 kB data part each: stored as markers, GetTask answers a few kilobytes', async () => {
    const buyer = await createAgent(test);
    const started = (await rpc.ok(buyer, 'SendMessage', v10Text(`a sonnet about ${hex()}`))).task;
    for (let index = 0; index < 20; index++) {
      await rpc.ok(buyer, 'SendMessage', followUp(started.id, [{ text: `a haiku about ${hex()}` }, { data: { blob: 'x'.repeat(900_000) } }]));
    }
    const task = await rpc.ok(buyer, 'GetTask', { id: started.id, historyLength: 100 });
    expect(sizeOf(task)).toBeLessThan(limits.a2aHistoryAnswerBytesMax + 16 * 1024);
    const marker = task.history.findLast((message: Json) => message.role === 'ROLE_USER').parts[1].data;
    expect(marker).toMatchObject({ history_omitted_bytes: expect.any(Number) });
    expect(marker.history_omitted_bytes).toBeGreaterThan(900_000);
    const stored = await test.runtime.engine.dependencies
      .db('a2a_messages')
      .where({ task_id: started.id })
      .select(test.runtime.engine.dependencies.db.raw('max(length(parts::text)) AS longest'));
    expect(Number(stored[0].longest)).toBeLessThanOrEqual(limits.a2aStoredPartsBytesMax);
  }, 120_000);

  it('cuts the oldest messages of one answer beyond its byte bound and says how many', async () => {
    const buyer = await createAgent(test);
    const started = (await rpc.ok(buyer, 'SendMessage', v10Text(`a limerick about ${hex()}`))).task;
    const blob = 'y'.repeat(limits.a2aStoredPartsBytesMax - 500);
    const messages = Math.ceil((2 * limits.a2aHistoryAnswerBytesMax) / limits.a2aStoredPartsBytesMax);
    for (let index = 0; index < messages; index++)
      await rpc.ok(buyer, 'SendMessage', followUp(started.id, [{ text: `${index} ${hex()}` }, { data: { blob } }]));
    const task = await rpc.ok(buyer, 'GetTask', { id: started.id, historyLength: 100 });
    expect(sizeOf(task.history)).toBeLessThanOrEqual(limits.a2aHistoryAnswerBytesMax);
    expect(task.metadata.marketplace.history_cut).toBeGreaterThan(0);
    // The newest are the ones kept.
    expect(task.history.at(-1).role).toBe('ROLE_AGENT');
    expect(task.history.findLast((message: Json) => message.role === 'ROLE_USER').parts[0].text.startsWith(`${messages - 1} `)).toBe(true);
    const listed = await rpc.ok(buyer, 'ListTasks', { pageSize: 100, historyLength: 100 });
    expect(sizeOf(listed)).toBeLessThan(limits.a2aListHistoryBytesMax + 64 * 1024);
  }, 120_000);
});

describe('retention', () => {
  it("deletes messages older than the events' retention, and conversations that never bought once idle that long", async () => {
    const buyer = await createAgent(test);
    const started = (await rpc.ok(buyer, 'SendMessage', v10Text(`an ode about ${hex()}`))).task;
    const db = test.runtime.engine.dependencies.db;
    expect(await db('a2a_messages').where({ task_id: started.id })).not.toHaveLength(0);
    await test.runtime.engine.retention.runOnce();
    expect(await db('a2a_messages').where({ task_id: started.id })).not.toHaveLength(0);
    test.clock.advanceMs((test.config.OUTBOX_RETENTION_HOURS + 1) * 60 * 60 * 1000);
    const deleted = await test.runtime.engine.retention.runOnce();
    expect(deleted.a2aMessages).toBeGreaterThan(0);
    expect(deleted.conversations).toBeGreaterThan(0);
    expect(await db('a2a_messages').where({ task_id: started.id })).toHaveLength(0);
    expect((await rpc.call(buyer, 'GetTask', { id: started.id })).error).toMatchObject({ code: -32001 });
  });
});
