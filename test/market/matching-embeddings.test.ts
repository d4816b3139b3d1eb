import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.ts';
import { createEngine, type Engine } from '../../src/engine/index.ts';
import { limits } from '../../src/limits.ts';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { type TestApp, startTestApp } from '../helpers/app.ts';
import { createDemand, match } from '../helpers/demands.ts';
import { type FakeLlm, fakeEmbedding, startFakeLlm } from '../helpers/fake-llm.ts';
import { createCapability } from '../helpers/market.ts';

/**
 * End to end: with LLM_EMBEDDING_MODEL configured, the AI provider's embeddings refine matching's
 * similarity (docs/matching.md: the mean of the text cosine and the embedding cosine). Each row's
 * words are embedded once, after the write, and stored with the row (docs/decisions/matching.md "Stored
 * embeddings"): a match reads the vectors and asks the model nothing; new words or another model
 * are embedded again; a row the model could not embed at its write is embedded by the first match
 * that needs it, in batches within the provider's limit. The fake endpoint answers vectors chosen
 * so that the capability the words rank second becomes first.
 */
const need = 'Translate a legal contract from English into Chinese';
const wordMatch = {
  title: 'Contract translation English to Chinese',
  description: 'Translate contracts and legal documents from English into Chinese',
  category: 'translation',
};
const meaningMatch = {
  title: 'Bilingual legal paperwork',
  description: 'Chinese versions of legal papers, with a lawyer reviewing each contract',
  category: 'translation',
};
// The demand and the capability the words rank second point one way, everything else the other.
const rewordedTitle = `Contract translation English to Chinese, reviewed like ${meaningMatch.title}`;
const steeredEmbedding = (text: string) => (text.includes(need) || text.includes(meaningMatch.title) ? [1, 0, 0] : [0, 1, 0]);

interface Market {
  test: TestApp;
  requester: Actor;
  seller: Actor;
  demandId: string;
  capabilityIds: string[];
}

async function openMarket(environment: Record<string, string>): Promise<Market> {
  const test = await startTestApp(environment);
  const [requester, seller] = [await createAgent(test), await createAgent(test)];
  // Same price and no quality yet: the order is decided by similarity alone.
  const first = await createCapability(test, seller, { ...wordMatch, price_ut: '20.00' });
  const second = await createCapability(test, seller, { ...meaningMatch, price_ut: '20.00' });
  const demandId = (await createDemand(test, requester, { description: need })).id;
  await test.runtime.engine.embeddings.idle();
  return { test, requester, seller, demandId, capabilityIds: [first.id, second.id] };
}

type Candidate = { title: string; similarity: number; score: number };

/** The candidates without their ids (which differ between markets), and whether embeddings were used. */
async function ranking(market: Market, demandId = market.demandId) {
  const response = await match(market.test, market.requester, { demand_id: demandId }).expect(200);
  const candidates = (response.body.data.candidates as (Candidate & { entity_id: string })[]).map(({ entity_id: _id, ...rest }) => rest);
  return { candidates, embeddings: response.body.data.embeddings as string };
}
const titles = (candidates: Candidate[]) => candidates.map((candidate) => candidate.title);

describe('matching with a configured embedding model', () => {
  let fake: FakeLlm;
  let plain: Market;
  let embedding: Market;
  const llm = () => ({ LLM_BASE_URL: fake.url, LLM_API_KEY: 'embed-secret', LLM_MODEL: 'fake-chat' });
  const embeddingRequests = () => fake.requests.filter((request) => request.path === '/v1/embeddings');
  const embeddedTexts = () => embeddingRequests().flatMap((request) => request.body.input as string[]);

  beforeAll(async () => {
    fake = await startFakeLlm();
    fake.embedding = steeredEmbedding;
    plain = await openMarket(llm());
    embedding = await openMarket({ ...llm(), LLM_EMBEDDING_MODEL: 'fake-embedding' });
  });
  afterAll(async () => {
    await Promise.all([plain?.test.close(), embedding?.test.close()]);
    await fake.close();
  });

  it('ranks on text similarity without the embedding model, asks the endpoint nothing, and says so', async () => {
    const asked = embeddingRequests().length;
    const lexical = await ranking(plain);
    expect(lexical.embeddings).toBe('not_configured');
    expect(titles(lexical.candidates)).toEqual([wordMatch.title, meaningMatch.title]);
    expect(lexical.candidates[0]!.similarity).toBeGreaterThan(lexical.candidates[1]!.similarity);
    expect(lexical.candidates[1]!.similarity).toBeGreaterThan(0);
    expect(embeddingRequests()).toHaveLength(asked);
  });

  it('embeds each written row once, after its write, with the key and the model', async () => {
    const texts = embeddedTexts();
    expect(texts).toHaveLength(3);
    expect(texts.filter((text) => text.includes(need))).toHaveLength(1);
    expect(texts.filter((text) => text.includes(meaningMatch.title))).toHaveLength(1);
    expect(texts.filter((text) => text.includes(wordMatch.title))).toHaveLength(1);
    for (const request of embeddingRequests()) {
      expect(request.headers.authorization).toBe('Bearer embed-secret');
      expect(request.body.model).toBe('fake-embedding');
    }
  });

  it("reorders by the stored embeddings' cosine, and a match asks the model nothing", async () => {
    const asked = embeddingRequests().length;
    const [lexical, refined] = [await ranking(plain), await ranking(embedding)];
    expect(refined.embeddings).toBe('used');
    const textSimilarity = Object.fromEntries(lexical.candidates.map((candidate) => [candidate.title, candidate.similarity]));
    expect(titles(refined.candidates)).toEqual([meaningMatch.title, wordMatch.title]);
    // Similarity is the mean of the text cosine and the embedding cosine (1 and 0 here).
    expect(refined.candidates[0]!.similarity).toBeCloseTo((textSimilarity[meaningMatch.title]! + 1) / 2, 2);
    expect(refined.candidates[1]!.similarity).toBeCloseTo(textSimilarity[wordMatch.title]! / 2, 2);
    await ranking(embedding);
    expect(embeddingRequests()).toHaveLength(asked);
  });

  it('embeds new words again after a capability is reworded, and ranks by them', async () => {
    const asked = embeddedTexts().length;
    // The words now carry the steering title: the embedding points the demand's way too.
    await embedding.test.http
      .put(`/api/v1/capabilities/${embedding.capabilityIds[0]}`)
      .set(embedding.seller.headers)
      .send({ title: rewordedTitle })
      .expect(200);
    await embedding.test.runtime.engine.embeddings.idle();
    expect(embeddedTexts().slice(asked)).toHaveLength(1);
    expect(embeddedTexts().at(-1)).toContain(meaningMatch.title);
    const refined = await ranking(embedding);
    expect(refined.candidates.every((candidate) => candidate.similarity > 0.5)).toBe(true);
    expect(embeddedTexts()).toHaveLength(asked + 1);
  });

  it('embeds every live row again when another model is configured, and each instance reads the vectors of its own model', async () => {
    const dependencies = embedding.test.runtime.engine.dependencies;
    const other: Engine = await createEngine({ ...dependencies, config: { ...dependencies.config, LLM_EMBEDDING_MODEL: 'fake-embedding-2' } });
    try {
      const asked = embeddingRequests().length;
      expect(await other.embeddings.sweep()).toBe(3);
      expect(
        embeddingRequests()
          .slice(asked)
          .map((request) => request.body.model),
      ).toEqual(['fake-embedding-2', 'fake-embedding-2']);
      // Nothing is left to embed, and a match on that instance asks the model nothing.
      expect(await other.embeddings.sweep()).toBe(0);
      const response = await supertest(createApp(other))
        .post('/api/v1/capabilities/match')
        .set(embedding.requester.headers)
        .send({ demand_id: embedding.demandId })
        .expect(200);
      expect(response.body.data.embeddings).toBe('used');
      expect(embeddingRequests()).toHaveLength(asked + 2);
    } finally {
      await other.close();
    }
  });

  it('embeds in batches within the provider limit the rows a match finds without a vector, and stores them', async () => {
    const test = await startTestApp({ ...llm(), LLM_EMBEDDING_MODEL: 'fake-embedding' });
    try {
      const [requester, seller] = [await createAgent(test), await createAgent(test)];
      const count = limits.aiEmbeddingTextsMax + 20;
      const items = Array.from({ length: count }, (_, index) => ({ ...wordMatch, title: `${wordMatch.title} number ${index}`, price_ut: '5.00' }));
      fake.embedding = fakeEmbedding;
      for (let start = 0; start < count; start += limits.capabilityBatchItemsMax) {
        const batch = items
          .slice(start, start + limits.capabilityBatchItemsMax)
          .map((item) => ({ ...item, capability_type: 'service', pricing_model: 'per_hour' }));
        await test.http.post('/api/v1/capabilities/batch').set(seller.headers).send({ items: batch }).expect(200);
      }
      const demandId = (await createDemand(test, requester, { description: need })).id;
      await test.runtime.engine.embeddings.idle();
      // As if the rows were written before the model was configured (or while it was down) and
      // the periodic sweep had not reached them yet.
      const { db } = test.runtime.engine.dependencies;
      await Promise.all([db('capability_embeddings').del(), db('demand_embeddings').del()]);
      const asked = embeddingRequests().length;
      const response = await match(test, requester, { demand_id: demandId, top_k: 5 }).expect(200);
      const calls = embeddingRequests()
        .slice(asked)
        .map((request) => (request.body.input as string[]).length);
      // The demand and the candidates matching reranks (at most matchCandidatesMax), none per call above the limit.
      expect(calls.length).toBeGreaterThanOrEqual(2);
      expect(Math.max(...calls)).toBeLessThanOrEqual(limits.aiEmbeddingTextsMax);
      expect(response.body.data.embeddings).toBe('used');
      const again = await match(test, requester, { demand_id: demandId, top_k: 5 }).expect(200);
      expect(again.body.data.candidates).toEqual(response.body.data.candidates);
      expect(embeddingRequests().length).toBe(asked + calls.length);
    } finally {
      fake.embedding = steeredEmbedding;
      await test.close();
    }
  });

  it('answers on words alone, saying the embeddings failed, when a vector is missing and the endpoint fails', async () => {
    // The plain market gets the same words as the embedding market, to compare with.
    await plain.test.http.put(`/api/v1/capabilities/${plain.capabilityIds[0]}`).set(plain.seller.headers).send({ title: rewordedTitle }).expect(200);
    fake.mode = 'fail';
    try {
      const demandId = (await createDemand(embedding.test, embedding.requester, { description: `${need}, urgently` })).id;
      await embedding.test.runtime.engine.embeddings.idle();
      const failed = await ranking(embedding, demandId);
      expect(failed.embeddings).toBe('failed');
      const plainDemand = (await createDemand(plain.test, plain.requester, { description: `${need}, urgently` })).id;
      expect(failed.candidates).toEqual((await ranking(plain, plainDemand)).candidates);
    } finally {
      fake.mode = 'ok';
    }
  });
});
