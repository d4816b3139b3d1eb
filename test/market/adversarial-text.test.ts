import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actionOf, pickOf, titleOf } from '../../src/domain/a2a.ts';
import { analyseClarity, detectLanguage } from '../../src/domain/clarity.ts';
import { overlapWeight, wordsOf } from '../../src/domain/pricing-suggestion.ts';
import { languageOf, piecesOfWord, searchQueryOf, termsOf } from '../../src/domain/text.ts';
import { limits } from '../../src/limits.ts';
import { createAgent } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { createCapability } from '../helpers/market.ts';

/**
 * Every analyser of user text runs in time linear in its input (issue 15 point 5): fed the worst
 * shapes we know at the largest size the API lets through, each call stays within a bound. The
 * bound is generous on purpose (a slow or busy machine meets it with a wide margin: linear work on
 * 10,000 characters takes a few milliseconds here), while a quadratic pattern misses it: a
 * description of 20 Chinese characters and 9,980 digits took 0.4-0.9 s per clarity evaluation.
 * This is the one kind of timing assertion the suite makes, because the property is about time.
 */
const callBoundMs = 250;
const size = Math.max(limits.demandDescriptionLengthMax, limits.capabilityDescriptionLengthMax);

const repeatTo = (unit: string, length = size) => unit.repeat(Math.ceil(length / unit.length)).slice(0, length);

const adversarialInputs: Record<string, string> = {
  'Chinese then digits (the observed case)': '翻译'.repeat(10) + '9'.repeat(size - 20),
  'only digits': repeatTo('1'),
  'Chinese numerals': repeatTo('一'),
  'Chinese numerals and digits interleaved': repeatTo('一1'),
  'digits and separators': repeatTo('1-'),
  'decimal commas': repeatTo('1,'),
  'decimal points': repeatTo('1.'),
  'digits then spaces': '1' + ' '.repeat(size - 1),
  spaces: repeatTo(' '),
  'one letter': repeatTo('a'),
  'letters and digits': repeatTo('a1'),
  'currency signs': repeatTo('$ '),
  'words that start patterns': repeatTo('within by in dispute buy '),
  'month days': repeatTo('12月'),
  'Latin and Han alternating': repeatTo('a中'),
  punctuation: repeatTo('!?,.;:'),
  'colons after a command': `dispute${repeatTo(':', size - 8)}x`,
};

const analysers: Record<string, (text: string) => unknown> = {
  'clarity (analyseClarity)': analyseClarity,
  'clarity language (detectLanguage)': detectLanguage,
  'matching terms (termsOf)': termsOf,
  'matching language (languageOf)': languageOf,
  'search terms (searchQueryOf)': (text) => searchQueryOf(text, limits.capabilitySearchQueryLengthMax),
  'Chinese pieces (piecesOfWord)': piecesOfWord,
  'pricing words (wordsOf)': wordsOf,
  'pricing overlap (overlapWeight)': (text) => overlapWeight(wordsOf('translate manual chinese english'), text),
  'A2A pick (pickOf)': pickOf,
  'A2A action (actionOf)': actionOf,
  'A2A title (titleOf)': (text) => titleOf(text, limits.a2aDemandTitleLengthMax),
};

function millisecondsOf(work: () => unknown): number {
  const startedAt = performance.now();
  work();
  return performance.now() - startedAt;
}

describe('every analyser runs in linear time on adversarial text at the maximum size', () => {
  for (const [analyser, analyse] of Object.entries(analysers)) {
    it(analyser, () => {
      analyse('warm up the compiled patterns');
      const slow = Object.entries(adversarialInputs)
        .map(([shape, text]) => ({ shape, ms: millisecondsOf(() => analyse(text)) }))
        .filter(({ ms }) => ms > callBoundMs);
      expect(slow).toEqual([]);
    });
  }
});

describe('through the API', () => {
  let test: TestApp;
  beforeAll(async () => {
    test = await startTestApp();
  });
  afterAll(() => test.close());

  it('four parallel clarity evaluations of the worst description leave /healthz answering', async () => {
    const requester = await createAgent(test);
    const description = adversarialInputs['Chinese then digits (the observed case)']!;
    const demand = (await test.http.post('/api/v1/demands').set(requester.headers).send({ title: 'digits', description }).expect(201)).body.data;
    // supertest sends a request only once it is awaited: start all four, then ask for health.
    const evaluations = Promise.all(
      Array.from({ length: 4 }, () =>
        test.http
          .post(`/api/v1/demands/${demand.id}/evaluate-clarity`)
          .set(requester.headers)
          .send({})
          .then((response) => response),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    const startedAt = performance.now();
    await test.http.get('/healthz').expect(200);
    const healthMs = performance.now() - startedAt;
    for (const response of await evaluations) expect(response.status).toBe(200);
    expect(healthMs).toBeLessThan(4 * callBoundMs);
  });

  it('alignment and matching of a worst-case demand against a worst-case capability answer within the bound', async () => {
    const seller = await createAgent(test);
    const requester = await createAgent(test);
    const capability = await createCapability(test, seller, { description: adversarialInputs['letters and digits'] });
    const demand = (
      await test.http
        .post('/api/v1/demands')
        .set(requester.headers)
        .send({ title: 'one', description: adversarialInputs['Chinese numerals and digits interleaved'] })
        .expect(201)
    ).body.data;
    for (const request of [
      () =>
        test.http
          .post('/api/v1/demands/evaluate-alignment')
          .set(requester.headers)
          .send({ demand_id: demand.id, capability_ids: [capability.id] }),
      () => test.http.post('/api/v1/capabilities/match').set(requester.headers).send({ demand_id: demand.id }),
    ]) {
      await request();
      const startedAt = performance.now();
      expect((await request()).status).toBe(200);
      expect(performance.now() - startedAt).toBeLessThan(4 * callBoundMs);
    }
  });
});
