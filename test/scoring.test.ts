import { describe, expect, it } from 'vitest';
import { autoAcceptScoreMin, combine, cosine, priceAlignment, vectorOf } from '../src/domain/scoring.ts';
import { languageOf, searchQueryOf } from '../src/domain/text.ts';
import type { EngineDependencies } from '../src/engine/dependencies.ts';
import { createMatchingEngine } from '../src/engine/matching.ts';
import type { CapabilityMatchRow, DemandRow } from '../src/store/demands.ts';

const capability = (id: string, title: string, description: string): CapabilityMatchRow => ({
  id, owner_user_id: 'seller', owner_type: 'agent', title, description, category: 'other', tags: [], pricing_model: 'per_use', price: '1000', quality_score: '0.00', available: true, term_vector: null,
});
const demand = (description: string): DemandRow => ({
  id: 'demand', owner_user_id: 'buyer', owner_type: 'agent', title: null, description, category: null, tags: [], max_price: null, auto_accept: false, demand_type: 'explicit',
  status: 'open', expires_at: null, transaction_id: null, auto_accept_claimed_at: null, auto_accept_attempts: 0, auto_accept_failure: null, cancelled_at: null, created_at: new Date(), updated_at: new Date(),
});
const silentLog = { debug() {}, info() {}, warn() {}, error() {} };
const dependencies = { now: () => new Date(), log: silentLog } as unknown as EngineDependencies;

describe('scoring (pure)', () => {
  it('aligns price: 1 within or without a budget, budget/price above it', () => {
    expect(priceAlignment(500n, null)).toBe(1);
    expect(priceAlignment(500n, 500n)).toBe(1);
    expect(priceAlignment(1000n, 500n)).toBe(0.5);
    expect(priceAlignment(1n, 0n)).toBe(0);
  });

  it('weighs similarity 0.7, price 0.2 and quality 0.1', () => {
    expect(combine(1, 1, 1).score).toBe(1);
    expect(combine(0.5, 1, 0).score).toBe(0.55);
    expect(autoAcceptScoreMin).toBeGreaterThan(0.2 + 0.1);
  });

  it('meets across languages through the glossary, and not where no word is shared', () => {
    const english = vectorOf({ title: 'Document translation', description: 'Translate documents into Chinese' });
    expect(cosine(vectorOf({ description: '把文件翻译成中文' }), english)).toBeGreaterThan(0.3);
    expect(cosine(vectorOf({ description: '修自行车' }), english)).toBe(0);
  });

  it('builds a database query of letters, digits and Chinese pieces only', () => {
    expect(searchQueryOf("Robert'); DROP TABLE x; -- 翻译 & | !", 64)).toMatch(/^[a-z0-9\u3400-\u9fff:* |]+$/);
    expect(searchQueryOf('the and of', 64)).toBe('');
    expect(languageOf('把文件翻译成 PDF')).toBe('zh');
    expect(languageOf('Translate a PDF 文件')).toBe('en');
  });
});

describe('matching with an embedding function', () => {
  const rows = [capability('a', 'Logo design', 'Logo for shops'), capability('b', 'Brand identity', 'Visual identity for shops')];

  it('blends the embedding cosine into similarity, reordering candidates the words alone cannot tell apart', async () => {
    const calls: string[][] = [];
    const embed = async (texts: string[]) => {
      calls.push(texts);
      // The fake model says the demand is about "brand identity" (b), not logos (a).
      return texts.map((text) => (text.includes('Brand') || text.includes('visual') ? [1, 0] : text.includes('Logo') ? [0, 1] : [1, 0]));
    };
    const withEmbed = createMatchingEngine(dependencies, { embed });
    const plain = createMatchingEngine(dependencies);
    const need = demand('visual look for my shop');
    const lexical = await plain.scoreCapabilities(need, rows);
    const refined = await withEmbed.scoreCapabilities(need, rows);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toHaveLength(3);
    const similarityOf = (list: typeof lexical, id: string) => list.find((entry) => entry.row.id === id)!.parts.similarity;
    expect(similarityOf(refined, 'b')).toBeCloseTo((similarityOf(lexical, 'b') + 1) / 2, 3);
    expect(similarityOf(refined, 'a')).toBeCloseTo(similarityOf(lexical, 'a') / 2, 3);
    expect(refined[0]!.row.id).toBe('b');
  });

  it('falls back to text similarity when the embedder answers null or throws', async () => {
    const need = demand('logo for my shop');
    const lexical = await createMatchingEngine(dependencies).scoreCapabilities(need, rows);
    for (const embed of [async () => null, async () => { throw new Error('down'); }]) {
      expect(await createMatchingEngine(dependencies, { embed }).scoreCapabilities(need, rows)).toEqual(lexical);
    }
  });
});
