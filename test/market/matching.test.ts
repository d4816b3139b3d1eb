import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, signUpHuman } from '../helpers/actors.ts';
import { type TestApp, startTestApp } from '../helpers/app.ts';
import { candidateIds, createDemand, match } from '../helpers/demands.ts';
import { createCapability } from '../helpers/market.ts';

const translation = {
  title: 'English to Chinese translation',
  description: 'Translate documents and contracts from English into Chinese',
  category: 'translation',
};
const logo = { title: 'Logo design', description: 'Original logo design for small shops', category: 'design' };

describe('matching: match, discover-demands, evaluate-alignment', () => {
  let test: TestApp;
  let requester: Awaited<ReturnType<typeof createAgent>>;
  let seller: Awaited<ReturnType<typeof createAgent>>;
  let other: Awaited<ReturnType<typeof createAgent>>;
  let human: Awaited<ReturnType<typeof signUpHuman>>;
  let humanSeller: Awaited<ReturnType<typeof signUpHuman>>;
  const ids = { translation: '', logo: '', humanTranslation: '', ownTranslation: '' };

  beforeAll(async () => {
    test = await startTestApp();
    [requester, seller, other] = [await createAgent(test), await createAgent(test), await createAgent(test)];
    [human, humanSeller] = [await signUpHuman(test), await signUpHuman(test)];
    ids.translation = (await createCapability(test, seller, { ...translation, price_ut: '20.00' })).id;
    ids.logo = (await createCapability(test, seller, { ...logo, price_ut: '100.00' })).id;
    ids.humanTranslation = (await createCapability(test, humanSeller, { ...translation, price_ut: '20.00' })).id;
    ids.ownTranslation = (await createCapability(test, requester, translation)).id;
  });
  afterAll(() => test.close());

  it('ranks the capabilities of the demand’s space with every score part, across languages', async () => {
    const demand = await createDemand(test, requester, { description: '需要把英文合同翻译成中文', max_price_ut: '10.00' });
    const response = await match(test, requester, { demand_id: demand.id }).expect(200);
    expect(response.body.data.demand_id).toBe(demand.id);
    const [best] = response.body.data.candidates;
    expect(best).toMatchObject({
      entity_id: ids.translation,
      title: translation.title,
      description: translation.description,
      price_ut: '20.00',
      category: 'translation',
      price_alignment: 0.5,
      quality_score: 0,
    });
    expect(best.similarity).toBeGreaterThan(0);
    expect(best.score).toBeCloseTo(0.7 * best.similarity + 0.2 * 0.5, 3);
    // Never the caller's own capability, never the human space's, never an unrelated one.
    expect(candidateIds(response)).toEqual([ids.translation]);
  });

  it('keeps the spaces apart: a human demand matches only human capabilities', async () => {
    const demand = await createDemand(test, human, { description: 'Translate my contract into Chinese' });
    expect(candidateIds(await match(test, human, { demand_id: demand.id }).expect(200))).toEqual([ids.humanTranslation]);
    expect((await match(test, requester, { demand_id: demand.id }).expect(404)).body.code).toBe(4040);
  });

  it('honours top_k and leaves out capabilities no longer offered', async () => {
    const demand = await createDemand(test, requester, { description: 'Chinese translation and a logo design' });
    expect(candidateIds(await match(test, requester, { demand_id: demand.id, top_k: 1 }).expect(200))).toHaveLength(1);
    expect(candidateIds(await match(test, requester, { demand_id: demand.id, top_k: 50 }).expect(200)).sort()).toEqual([ids.translation, ids.logo].sort());
    const withdrawn = await createCapability(test, other, { ...logo, title: 'Logo design studio' });
    expect(candidateIds(await match(test, requester, { demand_id: demand.id }).expect(200))).toContain(withdrawn.id);
    await test.http.put(`/api/v1/capabilities/${withdrawn.id}`).set(other.headers).send({ available: false }).expect(200);
    expect(candidateIds(await match(test, requester, { demand_id: demand.id }).expect(200))).not.toContain(withdrawn.id);
    const deleted = await createCapability(test, other, { ...logo, title: 'Logo design workshop' });
    await test.http.delete(`/api/v1/capabilities/${deleted.id}`).set(other.headers).expect(200);
    expect(candidateIds(await match(test, requester, { demand_id: demand.id }).expect(200))).not.toContain(deleted.id);
  });

  it.each([
    ['no demand_id', { demand_id: undefined }],
    ['a demand_id that is not a uuid', { demand_id: 'x' }],
    ['top_k 0', { top_k: 0 }],
    ['top_k 51', { top_k: 51 }],
    ['top_k 2.5', { top_k: 2.5 }],
    ['an unknown field', { limit: 3 }],
  ])('refuses a match with %s (4000)', async (_name, body) => {
    const demand = await createDemand(test, requester, { description: 'anything' });
    expect((await match(test, requester, { demand_id: demand.id, ...body }).expect(400)).body.code).toBe(4000);
  });

  it('refuses callers without or with mixed credentials, and unknown, cancelled or expired demands', async () => {
    const demand = await createDemand(test, requester, {
      description: 'Chinese translation',
      expires_at: new Date(test.runtime.engine.dependencies.now().getTime() + 60_000).toISOString(),
    });
    expect((await test.http.post('/api/v1/capabilities/match').send({ demand_id: demand.id }).expect(401)).body.code).toBe(4010);
    expect(
      (
        await test.http
          .post('/api/v1/capabilities/match')
          .set({ ...requester.headers, ...human.headers })
          .send({ demand_id: demand.id })
          .expect(400)
      ).body.code,
    ).toBe(4011);
    expect((await match(test, requester, { demand_id: randomUUID() }).expect(404)).body.code).toBe(4040);
    // Another agent of the space may match an open demand it can see.
    await match(test, other, { demand_id: demand.id }).expect(200);
    const cancelled = await createDemand(test, requester, { description: 'Chinese translation' });
    await test.http.post(`/api/v1/demands/${cancelled.id}/cancel`).set(requester.headers).expect(200);
    expect((await match(test, requester, { demand_id: cancelled.id }).expect(409)).body.data).toEqual({ status: 'cancelled', action: 'match' });
    expect((await match(test, other, { demand_id: cancelled.id }).expect(404)).body.code).toBe(4040);
    test.clock.advanceMs(120_000);
    expect((await match(test, requester, { demand_id: demand.id }).expect(409)).body.data).toEqual({ status: 'expired', action: 'match' });
  });

  it('discovers open, unexpired demands of the capability’s space for its owner only', async () => {
    const open = await createDemand(test, requester, { description: 'Translate our manual into Chinese' });
    const gone = await createDemand(test, requester, { description: 'Translate our website into Chinese' });
    await test.http.post(`/api/v1/demands/${gone.id}/cancel`).set(requester.headers).expect(200);
    const expiring = await createDemand(test, requester, {
      description: 'Translate a letter into Chinese',
      expires_at: new Date(test.runtime.engine.dependencies.now().getTime() + 60_000).toISOString(),
    });
    await createDemand(test, human, { description: 'Translate a human contract into Chinese' });
    const discover = (caller: { headers: Record<string, string> }, id: string, body: object = {}) =>
      test.http.post(`/api/v1/capabilities/${id}/discover-demands`).set(caller.headers).send(body);
    const before = candidateIds(await discover(seller, ids.translation).expect(200));
    expect(before).toContain(open.id);
    expect(before).toContain(expiring.id);
    expect(before).not.toContain(gone.id);
    test.clock.advanceMs(120_000);
    const found = await discover(seller, ids.translation, { top_k: 50 }).expect(200);
    expect(found.body.data.capability_id).toBe(ids.translation);
    expect(candidateIds(found)).toContain(open.id);
    expect(candidateIds(found)).not.toContain(expiring.id);
    const entry = found.body.data.candidates.find((candidate: { entity_id: string }) => candidate.entity_id === open.id);
    expect(entry).toMatchObject({ title: 'Translate our manual into Chinese', price_ut: null });
    // The human space's demands are never found for an agent's capability, and the reverse.
    const humanFound = candidateIds(await discover(humanSeller, ids.humanTranslation).expect(200));
    expect(humanFound.length).toBeGreaterThan(0);
    expect(humanFound).not.toContain(open.id);
    expect((await discover(other, ids.translation).expect(403)).body.code).toBe(4030);
    expect((await discover(human, ids.translation).expect(404)).body.code).toBe(4040);
    expect((await discover(seller, randomUUID()).expect(404)).body.code).toBe(4040);
    expect((await discover(seller, ids.translation, { top_k: 51 }).expect(400)).body.code).toBe(4000);
    expect((await test.http.post(`/api/v1/capabilities/${ids.translation}/discover-demands`).send({}).expect(401)).body.code).toBe(4010);
    expect(
      (
        await test.http
          .post(`/api/v1/capabilities/${ids.translation}/discover-demands`)
          .set({ ...seller.headers, ...human.headers })
          .send({})
          .expect(400)
      ).body.code,
    ).toBe(4011);
  });

  it('hides a deleted capability from discover-demands, also from its owner', async () => {
    const doomed = await createCapability(test, seller, { ...translation, price_ut: '20.00' });
    await createDemand(test, requester, { description: 'Translate a brochure into Chinese' });
    const discover = () => test.http.post(`/api/v1/capabilities/${doomed.id}/discover-demands`).set(seller.headers).send({});
    expect(candidateIds(await discover().expect(200)).length).toBeGreaterThan(0);
    await test.http.delete(`/api/v1/capabilities/${doomed.id}`).set(seller.headers).expect(200);
    expect((await discover().expect(404)).body.code).toBe(4040);
  });

  it('evaluates alignment with an explanation in the demand’s language', async () => {
    const chinese = await createDemand(test, requester, { description: '把英文文件翻译成中文', max_price_ut: '50.00' });
    const zh = await test.http
      .post('/api/v1/demands/evaluate-alignment')
      .set(requester.headers)
      .send({ demand_id: chinese.id, capability_ids: [ids.translation, ids.logo] })
      .expect(200);
    expect(zh.body.data).toMatchObject({ demand_id: chinese.id, language: 'zh' });
    const [good, poor] = zh.body.data.results;
    expect(good).toMatchObject({ capability_id: ids.translation, within_budget: true, price_alignment: 1, price_ut: '20.00' });
    expect(good.explanation).toContain('翻译');
    expect(good.explanation).toContain('预算');
    expect(poor).toMatchObject({ capability_id: ids.logo, within_budget: false, similarity: 0 });
    expect(poor.score).toBeLessThan(good.score);
    const english = await createDemand(test, other, { description: 'A logo for my bakery' });
    const en = await test.http
      .post('/api/v1/demands/evaluate-alignment')
      .set(other.headers)
      .send({ demand_id: english.id, capability_ids: [ids.logo] })
      .expect(200);
    expect(en.body.data.language).toBe('en');
    expect(en.body.data.results[0].explanation).toMatch(/shared terms: logo/);
  });

  it('refuses alignment with bad input, other spaces and no credentials', async () => {
    const demand = await createDemand(test, requester, { description: 'Translate into Chinese' });
    const evaluate = (caller: { headers: Record<string, string> }, body: object) =>
      test.http.post('/api/v1/demands/evaluate-alignment').set(caller.headers).send(body);
    expect((await evaluate(requester, { demand_id: demand.id, capability_ids: [] }).expect(400)).body.code).toBe(4000);
    expect((await evaluate(requester, { demand_id: demand.id, capability_ids: Array.from({ length: 51 }, () => randomUUID()) }).expect(400)).body.code).toBe(
      4000,
    );
    expect((await evaluate(requester, { demand_id: demand.id, capability_ids: ['x'] }).expect(400)).body.code).toBe(4000);
    expect((await evaluate(requester, { demand_id: demand.id, capability_ids: [ids.humanTranslation] }).expect(404)).body.code).toBe(4040);
    expect((await evaluate(requester, { demand_id: demand.id, capability_ids: [randomUUID()] }).expect(404)).body.code).toBe(4040);
    expect((await evaluate(human, { demand_id: demand.id, capability_ids: [ids.humanTranslation] }).expect(404)).body.code).toBe(4040);
    expect(
      (
        await test.http
          .post('/api/v1/demands/evaluate-alignment')
          .send({ demand_id: demand.id, capability_ids: [ids.logo] })
          .expect(401)
      ).body.code,
    ).toBe(4010);
    expect(
      (await evaluate({ headers: { ...requester.headers, ...human.headers } }, { demand_id: demand.id, capability_ids: [ids.logo] }).expect(400)).body.code,
    ).toBe(4011);
  });

  it('documents every new route in the OpenAPI document with its error codes', async () => {
    const document = (await test.http.get('/api/v1/public/openapi.json').expect(200)).body;
    for (const [path, method] of [
      ['/api/v1/demands', 'post'],
      ['/api/v1/demands', 'get'],
      ['/api/v1/demands/{demand_id}', 'get'],
      ['/api/v1/demands/{demand_id}/cancel', 'post'],
      ['/api/v1/demands/evaluate-alignment', 'post'],
      ['/api/v1/capabilities/match', 'post'],
      ['/api/v1/capabilities/{cap_id}/discover-demands', 'post'],
    ] as const) {
      expect(document.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    }
    expect(Object.keys(document.paths['/api/v1/demands/{demand_id}/cancel'].post.responses)).toEqual(expect.arrayContaining(['403', '404', '409']));
  });
});
