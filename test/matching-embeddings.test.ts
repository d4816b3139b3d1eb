import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent } from './helpers/actors.ts';
import { type TestApp, startTestApp } from './helpers/app.ts';
import { createDemand, match } from './helpers/demands.ts';
import { type FakeLlm, startFakeLlm } from './helpers/fake-llm.ts';
import { createCapability } from './helpers/market.ts';

/**
 * End to end: with LLM_EMBEDDING_MODEL configured, the AI provider's embeddings refine matching's
 * similarity (docs/matching.md: the mean of the text cosine and the embedding cosine). The fake
 * endpoint answers vectors chosen so that the capability text similarity ranks second becomes
 * first; the same market without the embedding model, or with a failing endpoint, answers on text
 * similarity alone.
 */
const need = 'Translate a legal contract from English into Chinese';
const wordMatch = { title: 'Contract translation English to Chinese', description: 'Translate contracts and legal documents from English into Chinese', category: 'translation' };
const meaningMatch = { title: 'Bilingual legal paperwork', description: 'Chinese versions of legal papers, with a lawyer reviewing each contract', category: 'translation' };
// The demand and the capability the words rank second point one way, everything else the other.
const steeredEmbedding = (text: string) => (text.includes(need) || text.includes(meaningMatch.title) ? [1, 0, 0] : [0, 1, 0]);

interface Market {
  test: TestApp;
  requester: Actor;
  demandId: string;
}

async function openMarket(environment: Record<string, string>): Promise<Market> {
  const test = await startTestApp(environment);
  const [requester, seller] = [await createAgent(test), await createAgent(test)];
  // Same price and no quality yet: the order is decided by similarity alone.
  await createCapability(test, seller, { ...wordMatch, price_ut: '20.00' });
  await createCapability(test, seller, { ...meaningMatch, price_ut: '20.00' });
  const demandId = (await createDemand(test, requester, { description: need })).id;
  return { test, requester, demandId };
}

/** The candidates without their ids, which differ between the two markets' databases. */
async function ranking(market: Market) {
  const response = await match(market.test, market.requester, { demand_id: market.demandId }).expect(200);
  return (response.body.data.candidates as { entity_id: string; title: string; similarity: number; score: number }[]).map(({ entity_id: _id, ...rest }) => rest);
}

describe('matching with a configured embedding model', () => {
  let fake: FakeLlm;
  let plain: Market;
  let embedding: Market;
  const llm = () => ({ LLM_BASE_URL: fake.url, LLM_API_KEY: 'embed-secret', LLM_MODEL: 'fake-chat' });
  const embeddingRequests = () => fake.requests.filter((request) => request.path === '/v1/embeddings');

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

  it('ranks on text similarity without the embedding model, and asks the endpoint nothing', async () => {
    const lexical = await ranking(plain);
    expect(lexical.map((candidate) => candidate.title)).toEqual([wordMatch.title, meaningMatch.title]);
    expect(lexical[0]!.similarity).toBeGreaterThan(lexical[1]!.similarity);
    expect(lexical[1]!.similarity).toBeGreaterThan(0);
    expect(embeddingRequests()).toEqual([]);
  });

  it("reorders by the embeddings' cosine when the model is configured, asking with the key and the model", async () => {
    const [lexical, refined] = [await ranking(plain), await ranking(embedding)];
    const textSimilarity = Object.fromEntries(lexical.map((candidate) => [candidate.title, candidate.similarity]));
    expect(refined.map((candidate) => candidate.title)).toEqual([meaningMatch.title, wordMatch.title]);
    // Similarity is the mean of the text cosine and the embedding cosine (1 and 0 here).
    expect(refined[0]!.similarity).toBeCloseTo((textSimilarity[meaningMatch.title]! + 1) / 2, 2);
    expect(refined[1]!.similarity).toBeCloseTo(textSimilarity[wordMatch.title]! / 2, 2);
    expect(refined[0]!.score).toBeGreaterThan(refined[1]!.score);
    const [asked] = embeddingRequests();
    expect(embeddingRequests()).toHaveLength(1);
    expect(asked!.headers.authorization).toBe('Bearer embed-secret');
    expect(asked!.body.model).toBe('fake-embedding');
    // The demand first, then the candidates: one call per match.
    const input = asked!.body.input as string[];
    expect(input).toHaveLength(3);
    expect(input[0]).toContain(need);
  });

  it('answers exactly as without embeddings when the embeddings endpoint fails', async () => {
    fake.mode = 'fail';
    const asked = embeddingRequests().length;
    expect(await ranking(embedding)).toEqual(await ranking(plain));
    expect(embeddingRequests()).toHaveLength(asked + 1);
  });
});
