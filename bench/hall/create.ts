import { quadraticDefinition } from '../../src/db/migrations/033_linear_search_text.ts';
import { limits } from '../../src/limits.ts';
import { commandLine, type Metric, saveResult } from '../results.ts';
import { argument, openHall } from './harness.ts';

/**
 * Writing rows at the longest description the API takes (issue 28, point 8): a task's, a
 * capability's and a demand's search column is computed by `market_search_text` inside the
 * INSERT, and that function was quadratic in the length of a Chinese text (a task with 10,000
 * Chinese characters took 350-430 ms to create, 20 ms in Latin). Measured: POST /api/v1/tasks/ and
 * POST /api/v1/capabilities at the maximum length in Latin and in Chinese, one client; six
 * Chinese task creations at once with a GET /auth/me beside them; and the function alone on
 * 10,000 Chinese characters, with migration 012's body beside it for comparison. Baseline: the same
 * create with a one-sentence description, in the same run. Aim: every create p99 under 100 ms.
 *
 *   npm run bench:create [-- --requests 100]
 */
const requests = Number(argument('requests', '100'));
const aimMs = 100;
const progress = (message: string) => process.stderr.write(`${message}\n`);
const hall = await openHall('bench_create');
const writer = hall.agent();
const me = await hall.call('GET', '/api/v1/auth/me', writer);
await hall.call('POST', '/api/v1/admin/wallet/credit', hall.admin, { user_id: me.user_id, currency: 'UT', amount: '10000000.00' });

const latinWords = ['translate', 'contract', 'supply', 'clause', 'deliver', 'review', 'legal', 'pages', 'english', 'chinese', 'glossary', 'terms'];
/** Text of exactly `length` characters: Latin words, or Chinese characters that never repeat a pair within the text. */
const latin = (length: number, seed: number) =>
  Array.from({ length }, (_, index) => latinWords[(index * 7 + seed) % latinWords.length])
    .join(' ')
    .slice(0, length);
const chinese = (length: number, seed: number) => Array.from({ length }, (_, index) => String.fromCodePoint(0x4e00 + ((index * 37 + seed) % 0x5000))).join('');
const task = (description: string) => ({ title: 'Translate a supply contract', description, mode: 'online', category: 'translation' });
const capability = (description: string) => ({
  title: 'Contract translation',
  description,
  category: 'translation',
  capability_type: 'service',
  pricing_model: 'per_use',
  price_ut: '10.00',
  callback_url: 'https://seller.example/callback',
});

async function timed(work: () => Promise<unknown>) {
  const startedAt = performance.now();
  await work();
  return performance.now() - startedAt;
}

const cases: [name: string, path: string, body: (seed: number) => unknown][] = [
  ['task, one sentence (baseline)', '/api/v1/tasks/', () => task('Ten pages of a supply contract, English into Chinese.')],
  [
    `task, ${limits.taskDescriptionLengthMax.toLocaleString('en')} Latin characters`,
    '/api/v1/tasks/',
    (seed) => task(latin(limits.taskDescriptionLengthMax, seed)),
  ],
  [
    `task, ${limits.taskDescriptionLengthMax.toLocaleString('en')} Chinese characters`,
    '/api/v1/tasks/',
    (seed) => task(chinese(limits.taskDescriptionLengthMax, seed)),
  ],
  [
    `capability, ${limits.capabilityDescriptionLengthMax.toLocaleString('en')} Latin characters`,
    '/api/v1/capabilities',
    (seed) => capability(latin(limits.capabilityDescriptionLengthMax, seed)),
  ],
  [
    `capability, ${limits.capabilityDescriptionLengthMax.toLocaleString('en')} Chinese characters`,
    '/api/v1/capabilities',
    (seed) => capability(chinese(limits.capabilityDescriptionLengthMax, seed)),
  ],
];
const timings = new Map(cases.map(([name]) => [name, [] as number[]]));
progress(`${requests} creations of each kind, one client, interleaved`);
for (let index = 0; index < requests; index++) {
  for (const [name, path, body] of cases) timings.get(name)!.push(await timed(() => hall.call('POST', path, writer, body(index))));
  if ((index + 1) % 25 === 0) progress(`  ${index + 1} / ${requests}`);
}

progress('six Chinese task creations at once, with a GET /auth/me beside them');
const parallel: number[] = [];
const beside: number[] = [];
for (let round = 0; round < Math.ceil(requests / 6); round++) {
  const creates = Array.from({ length: 6 }, (_, writerIndex) =>
    timed(() => hall.call('POST', '/api/v1/tasks/', writer, task(chinese(limits.taskDescriptionLengthMax, round * 6 + writerIndex)))),
  );
  beside.push(await timed(() => hall.call('GET', '/api/v1/auth/me', writer)));
  parallel.push(...(await Promise.all(creates)));
}

progress('market_search_text alone on 10,000 Chinese characters, migration 033 and 012');
const db = hall.server.runtime.engine.dependencies.db;
await db.raw(quadraticDefinition('market_search_text_before_033'));
const functionTimings = { now: [] as number[], before: [] as number[] };
for (let index = 0; index < 20; index++) {
  const text = chinese(10_000, index);
  functionTimings.now.push(await timed(() => db.raw('SELECT length(market_search_text(?))', [text])));
  functionTimings.before.push(await timed(() => db.raw('SELECT length(market_search_text_before_033(?))', [text])));
}
await db.raw('DROP FUNCTION market_search_text_before_033(text)');
await hall.server.close();

const percentile = (values: number[], share: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil(values.length * share) - 1)]!;
const p99 = (values: number[]) => Number(percentile(values, 0.99).toFixed(1));
const baseline = { name: 'task create, one sentence, p99', value: p99(timings.get(cases[0]![0])!) };
const metrics: Metric[] = [
  ...cases.slice(1).map(([name]): Metric => ({
    metric: `create ${name}, p99`,
    value: p99(timings.get(name)!),
    unit: 'ms',
    baseline,
    aim: { text: `p99 < ${aimMs} ms`, met: p99(timings.get(name)!) < aimMs },
  })),
  {
    metric: `create task, ${limits.taskDescriptionLengthMax.toLocaleString('en')} Chinese characters, six at once, p99`,
    value: p99(parallel),
    unit: 'ms',
    baseline,
    aim: { text: `p99 < ${aimMs} ms`, met: p99(parallel) < aimMs },
  },
  {
    metric: 'GET /auth/me beside six Chinese creations, p99',
    value: p99(beside),
    unit: 'ms',
    baseline,
    aim: { text: `p99 < ${aimMs} ms`, met: p99(beside) < aimMs },
  },
  {
    metric: 'market_search_text of 10,000 Chinese characters (033), p99',
    value: p99(functionTimings.now),
    unit: 'ms',
    baseline: { name: "migration 012's body, same texts, p99", value: p99(functionTimings.before) },
  },
];
console.log(`\nCreating at the maximum description length, one client (and six at once)`);
console.log('| metric | p99 | baseline |\n|---|---:|---:|');
for (const metric of metrics) console.log(`| ${metric.metric} | ${metric.value} ms | ${metric.baseline!.value} ms (${metric.baseline!.name}) |`);
saveResult({
  benchmark: 'create',
  title: 'Creating at the maximum description length, Latin and Chinese (`bench/hall/create.ts`)',
  command: commandLine('bench:create'),
  metrics,
});
