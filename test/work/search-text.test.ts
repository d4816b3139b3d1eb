import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quadraticDefinition } from '../../src/db/migrations/033_linear_search_text.ts';
import { limits } from '../../src/limits.ts';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { candidateIds, createDemand, match } from '../helpers/demands.ts';
import { createCapability } from '../helpers/market.ts';

/**
 * The search column's text (`market_search_text`, issue 28 point 8): migration 033 replaced the
 * quadratic PL/pgSQL body of migration 012 with a linear SQL one. The old body is installed beside
 * it under another name, so the two are compared on the same database (PostgreSQL 15 in CI,
 * PGlite here): the same text for every input, the same stored vectors for rows written through
 * the API, and rows at the longest description the API takes, in Chinese, written and found.
 */
let test: TestApp;
let agent: Actor;
const db = () => test.runtime.engine.dependencies.db;
const before = 'market_search_text_before_033';

beforeAll(async () => {
  test = await startTestApp();
  agent = await createAgent(test);
  await db().raw(quadraticDefinition(before));
});
afterAll(() => test.close());

const alphabet = [...'翻译服务数据分析合同中文英文㐀㐁豈更', ...'abcXYZéÄß019', ...' ,.!?-_/"[]（）。，、！？：；…', '\n', '\t', '😀'];
const fixed = [
  '',
  ' ',
  'a',
  '翻',
  '翻译',
  '翻译服务',
  'Hello 翻译服务 World',
  '翻a译b服务。数据，分析!',
  'ÄBC 中',
  '中文,英文 翻译',
  '["翻译", "data", "合同"]',
  '㐀㐁㐂 豈更車',
  '需要把英文合同翻译成中文',
  'Translate documents and contracts from English into Chinese',
  '。，！',
  '😀翻译😀',
  '翻\n译\t服务',
  '一'.repeat(3),
  '数据'.repeat(500),
];

async function compare(sources: string[]) {
  const { rows } = await db().raw(`SELECT source, market_search_text(source) AS now, ${before}(source) AS was FROM unnest(?::text[]) AS corpus(source)`, [
    sources,
  ]);
  return rows as { source: string; now: string; was: string }[];
}

describe('market_search_text', () => {
  it('gives the same text as migration 012 gave, for Chinese, Latin, mixed, punctuation and empty input', async () => {
    const generated = fc.sample(fc.string({ unit: fc.constantFrom(...alphabet), maxLength: 60 }), { numRuns: 300, seed: 28 });
    const rows = await compare([...fixed, ...generated]);
    expect(rows).toHaveLength(fixed.length + generated.length);
    for (const row of rows) expect(row.now, JSON.stringify(row.source)).toBe(row.was);
    // What both say, spelled out once: lower case, Chinese runs blanked and their pieces appended.
    expect(rows[6]!.now).toBe('hello   world 翻译 译服 服务');
    const { rows: empty } = await db().raw(`SELECT market_search_text(NULL) AS now, ${before}(NULL) AS was`);
    expect(empty[0]).toEqual({ now: '', was: '' });
  });

  it('stores the same search vectors as before for rows written through the API, and search still finds them', async () => {
    const capability = await createCapability(test, agent, {
      title: '英文合同翻译 Contract translation',
      description: '把英文合同翻译成中文，30 pages a day。',
      tags: ['翻译', 'legal'],
    });
    const demand = await createDemand(test, agent, { title: '合同翻译', description: '需要把英文合同翻译成中文', tags: ['法律'] });
    const task = (
      await test.http
        .post('/api/v1/tasks/')
        .set(agent.headers)
        .send({ title: '校对 Proofreading', description: '校对一份合同的中文译文 and check terms', mode: 'online', category: 'translation' })
        .expect(201)
    ).body.data;
    for (const [table, title, id] of [
      ['capabilities', 'title', capability.id],
      ['demands', `coalesce(title, '')`, demand.id],
      ['tasks', 'title', task.id],
    ] as const) {
      const { rows } = await db().raw(
        `SELECT search_vector = (setweight(to_tsvector('english'::regconfig, ${before}(${title} || ' ' || (tags::text))), 'A')
           || setweight(to_tsvector('english'::regconfig, ${before}(description)), 'B')) AS same FROM ${table} WHERE id = ?`,
        [id],
      );
      expect(rows, table).toEqual([{ same: true }]);
    }
    const seeker = await createAgent(test);
    const seeking = await createDemand(test, seeker, { description: '英文合同翻译' });
    expect(candidateIds(await match(test, seeker, { demand_id: seeking.id }).expect(200))).toContain(capability.id);
    const hall = (await test.http.get('/api/v1/tasks/hall').set(seeker.headers).query({ q: '校对' }).expect(200)).body.data;
    expect(hall.items.map((item: { id: string }) => item.id)).toContain(task.id);
  });
});

/**
 * No character twice: the text has as many distinct pieces as characters, the most work a
 * description of this length can ask for. It ends with a pair the rest cannot contain (the rest is
 * drawn from U+4E00..U+9DFF), so finding it shows the whole description was read.
 */
function longChinese(length: number) {
  const body = Array.from({ length: length - 2 }, (_, index) => String.fromCodePoint(0x4e00 + ((index * 37) % 0x5000))).join('');
  return `${body}鹦鹉`;
}

describe('descriptions at the maximum length, in Chinese', () => {
  it('writes a task, a capability and a demand, and each is found by the last words of its description', async () => {
    const task = (
      await test.http
        .post('/api/v1/tasks/')
        .set(agent.headers)
        .send({ title: 'Parrot census', description: longChinese(limits.taskDescriptionLengthMax), mode: 'online', category: 'translation' })
        .expect(201)
    ).body.data;
    const capability = await createCapability(test, agent, { title: 'Parrot census', description: longChinese(limits.capabilityDescriptionLengthMax) });
    const demand = await createDemand(test, agent, { title: 'Parrot census', description: longChinese(limits.demandDescriptionLengthMax) });
    expect((await test.http.get(`/api/v1/tasks/${task.id}`).set(agent.headers).expect(200)).body.data.description).toHaveLength(
      limits.taskDescriptionLengthMax,
    );
    for (const [table, id] of [
      ['tasks', task.id],
      ['capabilities', capability.id],
      ['demands', demand.id],
    ] as const) {
      const { rows } = await db().raw(`SELECT id FROM ${table} WHERE search_vector @@ to_tsquery('english', '鹦鹉')`);
      expect(rows, table).toEqual([{ id }]);
    }
    const seeker = await createAgent(test);
    const hall = (await test.http.get('/api/v1/tasks/hall').set(seeker.headers).query({ q: 'parrot census' }).expect(200)).body.data;
    expect(hall.items.map((item: { id: string }) => item.id)).toContain(task.id);
  });
});
