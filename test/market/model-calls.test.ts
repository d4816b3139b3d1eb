import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limits } from '../../src/limits.ts';
import { createAgent } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type FakeLlm, startFakeLlm } from '../helpers/fake-llm.ts';
import { listen } from '../helpers/server.ts';

/**
 * Model calls are bounded (issue 15 point 6): every chat call carries max_tokens, and a call made
 * for a client stops when that client disconnects, so nobody pays for an answer nobody reads.
 */
let fake: FakeLlm;
let test: TestApp;
let server: Awaited<ReturnType<typeof listen>>;
beforeAll(async () => {
  fake = await startFakeLlm();
  test = await startTestApp({ LLM_BASE_URL: fake.url, LLM_MODEL: 'fake-model', LLM_API_KEY: 'secret' });
  server = await listen(test);
});
afterAll(async () => {
  await server.close();
  await test.close();
  await fake.close();
});

const chatRequests = () => fake.requests.filter((request) => request.path === '/v1/chat/completions');

describe('model calls', () => {
  it('every chat call carries max_tokens (clarity and the pricing explanation)', async () => {
    fake.mode = 'ok';
    const requester = await createAgent(test);
    const demand = (
      await test.http
        .post('/api/v1/demands')
        .set(requester.headers)
        .send({ title: 'A logo', description: 'A logo for my bakery, as SVG and PNG, by Friday' })
        .expect(201)
    ).body.data;
    await test.http.post(`/api/v1/demands/${demand.id}/evaluate-clarity`).set(requester.headers).send({}).expect(200);
    await test.http.get('/api/v1/pricing/suggestion').query({ category: 'translation', description: 'translate a manual' }).set(requester.headers).expect(200);
    expect(chatRequests().length).toBeGreaterThanOrEqual(2);
    for (const request of chatRequests()) expect(request.body.max_tokens).toBe(limits.aiChatMaxTokens);
  });

  it('a client that disconnects aborts the model call it caused', async () => {
    const requester = await createAgent(test);
    const demand = (await test.http.post('/api/v1/demands').set(requester.headers).send({ title: 'A logo', description: 'A logo for my bakery' }).expect(201))
      .body.data;
    fake.mode = 'hang';
    const before = chatRequests().length;
    const closedBefore = fake.closedEarly;
    const client = new AbortController();
    const pending = fetch(`${server.url}/api/v1/demands/${demand.id}/evaluate-clarity`, {
      method: 'POST',
      headers: { ...requester.headers, 'content-type': 'application/json' },
      body: '{}',
      signal: client.signal,
    }).catch((error: unknown) => error);
    await expect.poll(() => chatRequests().length).toBe(before + 1);
    client.abort();
    await pending;
    // Well before the model call's own timeout (limits.aiChatTimeoutMs), the server hangs up on the model.
    await expect.poll(() => fake.closedEarly, { timeout: 5_000 }).toBe(closedBefore + 1);
    fake.mode = 'ok';
  });
});
