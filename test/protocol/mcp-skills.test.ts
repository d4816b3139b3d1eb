import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { type TestApp, startTestApp } from '../helpers/app.ts';
import { callTool, connectMcp } from '../helpers/mcp.ts';
import { listen } from '../helpers/server.ts';

/**
 * The skill tools through the official MCP SDK client: the same rules and answers as REST (the
 * same state after the same operation, the same error code for the same refusal).
 */
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

describe('MCP skill tools', () => {
  it('create, search, update, list and delete a skill as REST does', async () => {
    const owner = await createAgent(test);
    const buyer = await createAgent(test);
    const client = await clientOf(owner);
    const word = `otter${randomUUID().slice(0, 8)}`;
    const created = await callTool(client, 'create_skill', {
      name: `${word} river survey`,
      description: 'Counting otters from drone photos',
      category: 'data',
      ut_price: '7.50',
    });
    expect(created.isError, JSON.stringify(created.data)).toBe(false);
    const skill = created.data.skill as { id: string };
    expect(created.data.skill).toMatchObject({ user_id: owner.userId, owner_type: 'agent', source: 'manual', ut_price: '7.50', status: 'active' });
    const rest = (await test.http.get(`/api/v1/skills/${skill.id}`).set(owner.headers).expect(200)).body.data;
    expect(rest).toEqual(created.data.skill);

    const found = await callTool(await clientOf(buyer), 'search_skills', { q: word, page_size: 5 });
    expect(found.data.items.map((item: { id: string }) => item.id)).toEqual([skill.id]);
    const viaRest = (await test.http.get('/api/v1/skills/hall').set(buyer.headers).query({ q: word, page_size: 5 }).expect(200)).body.data;
    expect(found.data).toEqual(viaRest);

    const updated = await callTool(client, 'update_skill', { skill_id: skill.id, status: 'inactive', ut_price: null });
    expect(updated.data).toMatchObject({ status: 'inactive', ut_price: null });
    expect((await callTool(await clientOf(buyer), 'search_skills', { q: word })).data.total).toBe(0);
    const mine = await callTool(client, 'list_my_skills', { status: 'inactive' });
    expect(mine.data.items.map((item: { id: string }) => item.id)).toEqual([skill.id]);
    expect((await callTool(client, 'get_skill', { skill_id: skill.id })).data.status).toBe('inactive');
    expect((await callTool(client, 'delete_skill', { skill_id: skill.id })).data).toMatchObject({ id: skill.id, deleted: true });
    expect((await callTool(client, 'list_my_skills', {})).data.total).toBe(0);
  });

  it('creates once for one idempotency_key and says which key it used', async () => {
    const owner = await createAgent(test);
    const client = await clientOf(owner);
    const body = { name: 'Proofreading', description: 'English proofreading', category: 'copywriting', idempotency_key: `k-${randomUUID()}` };
    const first = await callTool(client, 'create_skill', body);
    const again = await callTool(client, 'create_skill', body);
    expect(again.data.skill.id).toBe(first.data.skill.id);
    expect(again.data.idempotency_key).toBe(body.idempotency_key);
    const generated = await callTool(client, 'create_skill', { name: 'Other', description: 'Other', category: 'other' });
    expect(generated.data.idempotency_key).toEqual(expect.any(String));
  });

  it('refuses as REST refuses: the same codes for bad arguments, another owner and the other space', async () => {
    const owner = await createAgent(test);
    const other = await createAgent(test);
    const human = await signUpHuman(test);
    const skill = (await callTool(await clientOf(owner), 'create_skill', { name: 'Tax returns', description: 'Filing', category: 'legal_finance' })).data
      .skill as { id: string };
    const cases: [Actor, string, Record<string, unknown>, number, () => Promise<{ body: { code: number } }>][] = [
      [
        owner,
        'create_skill',
        { name: 'x', description: 'y', category: 'other', mode: 'offline' },
        4000,
        () => test.http.post('/api/v1/skills/').set(owner.headers).send({ name: 'x', description: 'y', category: 'other', mode: 'offline' }),
      ],
      [owner, 'update_skill', { skill_id: skill.id }, 4000, () => test.http.put(`/api/v1/skills/${skill.id}`).set(owner.headers).send({})],
      // In an update, null for a field that cannot be cleared is refused, not read as left out.
      [
        owner,
        'update_skill',
        { skill_id: skill.id, name: null, status: 'inactive' },
        4000,
        () => test.http.put(`/api/v1/skills/${skill.id}`).set(owner.headers).send({ name: null, status: 'inactive' }),
      ],
      [
        other,
        'update_skill',
        { skill_id: skill.id, name: 'Mine now' },
        4030,
        () => test.http.put(`/api/v1/skills/${skill.id}`).set(other.headers).send({ name: 'Mine now' }),
      ],
      [human, 'get_skill', { skill_id: skill.id }, 4040, () => test.http.get(`/api/v1/skills/${skill.id}`).set(human.headers)],
      [other, 'delete_skill', { skill_id: skill.id }, 4030, () => test.http.delete(`/api/v1/skills/${skill.id}`).set(other.headers)],
      [owner, 'search_skills', { sort: 'relevance' }, 4000, () => test.http.get('/api/v1/skills/hall').set(owner.headers).query({ sort: 'relevance' })],
    ];
    for (const [actor, name, args, code, viaRest] of cases) {
      const outcome = await callTool(await clientOf(actor), name, args);
      expect({ isError: outcome.isError, code: outcome.data.code }, `${name} ${JSON.stringify(args)}`).toEqual({ isError: true, code });
      expect((await viaRest()).body.code).toBe(code);
    }
  });
});
