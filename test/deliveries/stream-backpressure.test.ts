import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limits } from '../../src/limits.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { agentMarket } from '../helpers/market.ts';
import { listen, openEventSource } from '../helpers/server.ts';

/**
 * A client that stops reading must not make the server buffer for it without bound: once its
 * unsent output passes limits.streamBufferedBytesMax it is cut off, while the other subscribers
 * of the same events keep receiving them, and it resumes with Last-Event-ID.
 */
let test: TestApp;
let server: Awaited<ReturnType<typeof listen>>;
beforeAll(async () => {
  test = await startTestApp({ RATE_LIMIT_WRITES_PER_CREDENTIAL: 'off', RATE_LIMIT_WRITES_PER_API_KEY: 'off' });
  server = await listen(test);
});
afterAll(async () => {
  await server.close();
  await test.close();
});

/** The ids of the complete SSE events in `text` (an event cut off in the middle does not count). */
function completeEventIds(text: string): string[] {
  const frames = text.split('\n\n').slice(0, -1);
  return frames.flatMap((frame) => /^id: (\d+)$/m.exec(frame)?.[1] ?? []);
}

/**
 * An SSE client that reads the head and the first comment, then stops reading (as a stalled
 * consumer does): the kernel's buffers fill, then the server's. `readAll` starts reading again and
 * resolves with everything the server sent, once the connection is over.
 */
async function openStalledClient(url: string, headers: Record<string, string>) {
  let text = '';
  let over: () => void = () => {};
  const finished = new Promise<void>((resolve) => (over = resolve));
  const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const request = http.get(url, { headers: { Accept: 'text/event-stream', ...headers }, agent: false }, (answer) => {
      answer.setEncoding('utf8');
      answer.once('data', (chunk: string) => {
        text += chunk;
        answer.pause();
        resolve(answer);
      });
      answer.on('close', over);
    });
    request.on('error', reject);
  });
  expect(response.statusCode).toBe(200);
  return {
    readAll: async () => {
      response.on('data', (chunk: string) => (text += chunk));
      response.on('error', () => {});
      response.resume();
      await finished;
      return { text, complete: response.complete };
    },
  };
}

describe('a subscriber that stops reading', () => {
  it('is cut off after the buffer bound while the others keep receiving, and resumes with Last-Event-ID', async () => {
    const { buyer, capability } = await agentMarket(test, '100000.00');
    const reader = openEventSource(`${server.url}/api/v1/transactions/events`, buyer.headers);
    await reader.opened;
    const stalled = await openStalledClient(`${server.url}/api/v1/transactions/events`, buyer.headers);
    const streams = test.runtime.engine.admission.sseStreams;
    expect(streams.openTotal).toBe(2);

    // Each purchase's event carries its input, just under the size events keep inline: the stalled
    // client's share fills the kernel's socket buffers (a few MiB on loopback), then the server's.
    const input = { text: 'x'.repeat(limits.eventFieldInlineBytesMax - 1024) };
    let purchases = 0;
    const purchasesMax = 2_000;
    while (streams.openTotal === 2 && purchases < purchasesMax) {
      const batch = Array.from({ length: 10 }, () =>
        test.http
          .post('/api/v1/transactions')
          .set(buyer.headers)
          .set('Idempotency-Key', randomUUID())
          .send({ capability_id: capability.id, input })
          .expect(201),
      );
      await Promise.all(batch);
      purchases += batch.length;
    }
    expect(streams.openTotal).toBe(1);

    // The reader got every event, in order, and its stream is still open.
    await expect.poll(() => reader.received.length, { timeout: 30_000 }).toBe(purchases);
    expect(reader.received.map((event) => Number(event.id))).toEqual(Array.from({ length: purchases }, (_, index) => index + 1));
    await test.http.post('/api/v1/transactions').set(buyer.headers).set('Idempotency-Key', randomUUID()).send({ capability_id: capability.id }).expect(201);
    await expect.poll(() => reader.received.length).toBe(purchases + 1);

    // The stalled client, reading again, finds its stream cut short: a prefix of the events, then the end.
    const { text, complete } = await stalled.readAll();
    expect(complete).toBe(false);
    const seen = completeEventIds(text);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.length).toBeLessThan(purchases);
    expect(seen).toEqual(Array.from({ length: seen.length }, (_, index) => String(index + 1)));

    // Resuming after the last event it saw brings exactly the rest.
    const resumed = openEventSource(`${server.url}/api/v1/transactions/events`, { ...buyer.headers, 'Last-Event-ID': seen.at(-1)! });
    await resumed.opened;
    await expect.poll(() => resumed.received.length, { timeout: 30_000 }).toBe(purchases + 1 - seen.length);
    expect(resumed.received.map((event) => Number(event.id))).toEqual(
      Array.from({ length: purchases + 1 - seen.length }, (_, index) => seen.length + index + 1),
    );
    resumed.close();
    reader.close();

    // A client far behind (megabytes of events to catch up) is sent them at its own pace, not
    // taken for a slow one because the server wrote its backlog in one burst.
    const fromStart = openEventSource(`${server.url}/api/v1/transactions/events`, { ...buyer.headers, 'Last-Event-ID': '0' });
    await fromStart.opened;
    await expect.poll(() => fromStart.received.length, { timeout: 60_000 }).toBe(purchases + 1);
    expect(fromStart.received.map((event) => Number(event.id))).toEqual(Array.from({ length: purchases + 1 }, (_, index) => index + 1));
    fromStart.close();
  }, 300_000);
});
