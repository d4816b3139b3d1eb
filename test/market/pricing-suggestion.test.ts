import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type FakeLlm, startFakeLlm } from '../helpers/fake-llm.ts';
import { act, buy, createCapability, credit } from '../helpers/market.ts';

/**
 * GET /api/v1/pricing/suggestion: percentiles of listed and settled prices in the caller's space
 * and category, computed exactly in minor units; a labelled default for an empty market.
 */
const path = '/api/v1/pricing/suggestion';
let test: TestApp;
let agentSeller: Actor;
let agentBuyer: Actor;
let human: Actor;

const suggestion = (actor: Actor, query: Record<string, string>) => test.http.get(path).set(actor.headers).query(query);

async function settle(buyer: Actor, seller: Actor, capabilityId: string, extra: Record<string, unknown> = {}) {
  const created = await buy(test, buyer, capabilityId, extra);
  await act(test, buyer, created.id, 'freeze').expect(200);
  await act(test, seller, created.id, 'accept').expect(200);
  await act(test, seller, created.id, 'deliver', { result_payload: { ok: true } }).expect(200);
  await act(test, buyer, created.id, 'confirm').expect(200);
}

const listing = (title: string, price: string, extra: Record<string, unknown> = {}) => ({
  title,
  description: 'Returns the finished text',
  category: 'translation',
  pricing_model: 'per_use',
  price_ut: price,
  ...extra,
});

beforeAll(async () => {
  test = await startTestApp();
  [agentSeller, agentBuyer, human] = await Promise.all([createAgent(test), createAgent(test), signUpHuman(test)]);
  await credit(test, agentBuyer.userId, '1000.00');
  for (const price of ['50.00', '10.00', '40.00', '20.00']) await createCapability(test, agentSeller, listing('Quick text rendering', price));
  const thirty = await createCapability(test, agentSeller, listing('Quick text rendering', '30.00'));
  const hourly = await createCapability(test, agentSeller, listing('Interpreter on call', '99.00', { pricing_model: 'per_hour' }));
  // Neither of these may count: another category, and a capability no longer offered.
  await createCapability(test, agentSeller, listing('Logo', '5000.00', { category: 'design' }));
  const withdrawn = await createCapability(test, agentSeller, listing('Old offer', '7000.00'));
  // No route withdraws a capability on this branch yet; soft delete sets available = false.
  await test.runtime.engine.dependencies.db('capabilities').where({ id: withdrawn.id }).update({ available: false });
  // The human space: prices that an agent must never see.
  const humanSeller = await signUpHuman(test);
  for (const price of ['800.00', '900.00']) await createCapability(test, humanSeller, listing('人工翻译', price));
  await settle(agentBuyer, agentSeller, thirty.id);
  await settle(agentBuyer, agentSeller, hourly.id, { booked_hours: 3 });
});
afterAll(() => test.close());

describe('an empty market', () => {
  it('answers the documented default for the pricing model, labelled no_market_data, in UT for an agent', async () => {
    const response = await suggestion(agentSeller, { category: 'video' }).expect(200);
    expect(response.body.data).toMatchObject({
      category: 'video',
      pricing_model: null,
      currency: 'UT',
      basis: 'no_market_data',
      sample_size: 0,
      description_weighted: false,
      explanation: null,
      // per_use default: 10.00 / 30.00 / 100.00 CNY at the default rate of 0.10 CNY per UT.
      suggested_price_ut: '300.00',
      range: { p25_ut: '100.00', p75_ut: '1000.00' },
      samples: { listed_capabilities: { sample_size: 0, p50_ut: null }, settled_transactions: { sample_size: 0, p50_ut: null } },
    });
    expect(response.body.data.basis_detail).toMatch(/default range .* not market data/);
  });

  it('answers the per_hour default in CNY for a human', async () => {
    const response = await suggestion(human, { category: 'video', pricing_model: 'per_hour', description: '剪辑婚礼视频' }).expect(200);
    expect(response.body.data).toMatchObject({
      currency: 'CNY',
      basis: 'no_market_data',
      suggested_price_ut: '100.00',
      range: { p25_ut: '50.00', p75_ut: '200.00' },
    });
  });
});

describe('a market with prices', () => {
  it('gives exact percentiles of listed prices of one pricing model, with settled prices counted twice', async () => {
    const response = await suggestion(agentSeller, { category: 'translation', pricing_model: 'per_use' }).expect(200);
    // Listed 10, 20, 30, 40, 50 (nearest rank: p25 = 2nd, p50 = 3rd, p75 = 4th of 5).
    expect(response.body.data.samples).toEqual({
      listed_capabilities: { sample_size: 5, p25_ut: '20.00', p50_ut: '30.00', p75_ut: '40.00' },
      settled_transactions: { sample_size: 1, p25_ut: '30.00', p50_ut: '30.00', p75_ut: '30.00' },
    });
    // Weights 10:1 20:1 30:1+2 40:1 50:1, total 7: p25 at 1.75 -> 20, p50 at 3.5 -> 30, p75 at 5.25 -> 40.
    expect(response.body.data).toMatchObject({
      currency: 'UT',
      basis: 'listed_and_settled_prices',
      sample_size: 6,
      suggested_price_ut: '30.00',
      range: { p25_ut: '20.00', p75_ut: '40.00' },
    });
  });

  it('counts a settled per_hour purchase by its price per hour, not its total', async () => {
    const response = await suggestion(agentSeller, { category: 'translation', pricing_model: 'per_hour' }).expect(200);
    expect(response.body.data.samples.settled_transactions).toEqual({ sample_size: 1, p25_ut: '99.00', p50_ut: '99.00', p75_ut: '99.00' });
    expect(response.body.data.suggested_price_ut).toBe('99.00');
  });

  it("counts a settled sale under the model it was sold under, after the seller changes the capability's model", async () => {
    const interpreting = await createCapability(
      test,
      agentSeller,
      listing('Interpreter by the hour', '60.00', { category: 'consulting', pricing_model: 'per_hour' }),
    );
    await settle(agentBuyer, agentSeller, interpreting.id, { booked_hours: 3 });
    await test.http.put(`/api/v1/capabilities/${interpreting.id}`).set(agentSeller.headers).send({ pricing_model: 'per_use' }).expect(200);
    const hourly = (await suggestion(agentSeller, { category: 'consulting', pricing_model: 'per_hour' }).expect(200)).body.data;
    expect(hourly.samples.settled_transactions).toEqual({ sample_size: 1, p25_ut: '60.00', p50_ut: '60.00', p75_ut: '60.00' });
    const perUse = (await suggestion(agentSeller, { category: 'consulting', pricing_model: 'per_use' }).expect(200)).body.data;
    expect(perUse.samples.settled_transactions).toMatchObject({ sample_size: 0 });
    expect(perUse.samples.listed_capabilities).toMatchObject({ sample_size: 1, p50_ut: '60.00' });
  });

  it('without a pricing model uses every model of the category, and never other categories or withdrawn offers', async () => {
    const response = await suggestion(agentBuyer, { category: 'translation' }).expect(200);
    expect(response.body.data.samples.listed_capabilities).toEqual({ sample_size: 6, p25_ut: '20.00', p50_ut: '30.00', p75_ut: '50.00' });
    expect(response.body.data.samples.settled_transactions.sample_size).toBe(2);
    expect(JSON.stringify(response.body.data)).not.toMatch(/5000|7000/);
  });

  it('weighs listings that share words with the description more', async () => {
    await createCapability(
      test,
      await createAgent(test),
      listing('Legal contract translation', '50.00', { description: 'Certified legal contract translation' }),
    );
    const plain = (await suggestion(agentSeller, { category: 'translation', pricing_model: 'per_use' }).expect(200)).body.data;
    const described = (
      await suggestion(agentSeller, { category: 'translation', pricing_model: 'per_use', description: 'Translate a legal contract' }).expect(200)
    ).body.data;
    // Weights 10:1 20:1 30:1+2 40:1 50:1+1, total 8: p25 at 2 -> 20, p50 at 4 -> 30, p75 at 6 -> 40.
    expect(plain).toMatchObject({ description_weighted: false, suggested_price_ut: '30.00', range: { p25_ut: '20.00', p75_ut: '40.00' } });
    // The new 50.00 listing shares "legal" and "contract", weight 3; total 10: p25 at 2.5 -> 30, p50 at 5 -> 30, p75 at 7.5 -> 50.
    expect(described).toMatchObject({ description_weighted: true, suggested_price_ut: '30.00', range: { p25_ut: '30.00', p75_ut: '50.00' } });
    expect(described.basis_detail).toMatch(/sharing words with the description/);
  });
});

describe('space isolation', () => {
  it("shows a human only the human space's prices, in CNY", async () => {
    const response = await suggestion(human, { category: 'translation' }).expect(200);
    expect(response.body.data).toMatchObject({
      currency: 'CNY',
      basis: 'listed_prices',
      sample_size: 2,
      suggested_price_ut: '800.00',
      range: { p25_ut: '800.00', p75_ut: '900.00' },
      samples: { settled_transactions: { sample_size: 0 } },
    });
  });

  it('never shows an agent a human price', async () => {
    const response = await suggestion(agentBuyer, { category: 'translation' }).expect(200);
    expect(JSON.stringify(response.body.data)).not.toMatch(/800\.00|900\.00|CNY/);
  });
});

describe('who may ask, and what', () => {
  it.each([
    ['no category', {}, 'query.category'],
    ['an unknown category', { category: 'nope' }, 'query.category'],
    ['an unknown pricing model', { category: 'video', pricing_model: 'fixed' }, 'query.pricing_model'],
    ['a description of 2001 characters', { category: 'video', description: 'x'.repeat(2001) }, 'query.description'],
  ])('refuses %s with 4000', async (_name, query, errorPath) => {
    const response = await suggestion(agentSeller, query as Record<string, string>).expect(400);
    expect(response.body.code).toBe(4000);
    expect(response.body.data.errors.map((error: { path: string }) => error.path)).toContain(errorPath);
  });

  it('accepts a description of exactly the maximum length', async () => {
    await suggestion(agentSeller, { category: 'video', description: 'x'.repeat(2000) }).expect(200);
  });

  it('refuses a repeated parameter with 4000', async () => {
    expect((await test.http.get(`${path}?category=video&category=design`).set(agentSeller.headers).expect(400)).body.code).toBe(4000);
  });

  it('refuses no credentials (4010) and mixed credentials (4011)', async () => {
    expect((await test.http.get(path).query({ category: 'video' }).expect(401)).body.code).toBe(4010);
    const mixed = await test.http
      .get(path)
      .query({ category: 'video' })
      .set({ ...agentSeller.headers, ...human.headers })
      .expect(400);
    expect(mixed.body.code).toBe(4011);
  });
});

describe('with a language model configured', () => {
  let fake: FakeLlm;
  let withModel: TestApp;
  let seller: Actor;
  beforeAll(async () => {
    fake = await startFakeLlm();
    withModel = await startTestApp({ LLM_BASE_URL: fake.url, LLM_MODEL: 'fake-model', LLM_API_KEY: 'secret' });
    seller = await createAgent(withModel);
    await createCapability(withModel, seller, listing('Quick text rendering', '12.00'));
  });
  afterAll(async () => {
    await withModel.close();
    await fake.close();
  });

  it("adds the model's explanation; the amounts still come from the data", async () => {
    fake.reply = 'Most similar offers sell for about 12 UT.';
    const response = await withModel.http.get(path).set(seller.headers).query({ category: 'translation', description: 'translate' }).expect(200);
    expect(response.body.data).toMatchObject({ explanation: 'Most similar offers sell for about 12 UT.', suggested_price_ut: '12.00', basis: 'listed_prices' });
    expect(fake.requests.at(-1)!.headers.authorization).toBe('Bearer secret');
  });

  it('still answers, without an explanation, when the model fails', async () => {
    fake.mode = 'fail';
    const response = await withModel.http.get(path).set(seller.headers).query({ category: 'translation' }).expect(200);
    expect(response.body.data).toMatchObject({ explanation: null, suggested_price_ut: '12.00' });
  });
});
