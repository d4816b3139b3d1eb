import { categoryCodes } from '../../src/domain/categories.ts';
import { limits } from '../../src/limits.ts';
import { commandLine, saveResult } from '../results.ts';
import { argument, cities, openHall, qualifiers, queries, subjects } from './harness.ts';

/**
 * The skill hall at scale (issue 17): 10,000 skills created through the API (so each gets its
 * stored term vector and search column as a user's would), then pages of GET /api/v1/skills/hall
 * in each order and with text queries, through the real server over HTTP on PostgreSQL and Redis.
 * Aim: each kind of page p99 under 50 ms on this machine; baseline GET /auth/me in the same run.
 *
 *   npm run bench:hall [-- --skills 10000 --requests 200]   (then runs bench/hall/tasks.ts)
 */
const skillCount = Number(argument('skills', '10000'));
const requests = Number(argument('requests', '200'));
const hall = await openHall('bench_skill_hall');
// Enough sellers that none passes the skills one account keeps (limits.skillsPerUserMax).
const sellers = Array.from({ length: Math.max(50, Math.ceil(skillCount / limits.skillsPerUserMax)) }, hall.agent);
const buyer = hall.agent();

const skillOf = (index: number) => ({
  name: `${qualifiers[(index * 7) % qualifiers.length]} ${subjects[index % subjects.length]} ${index}`,
  description: `I offer ${qualifiers[(index * 7) % qualifiers.length]} ${subjects[index % subjects.length]} work: ${subjects[(index * 3) % subjects.length]} and ${subjects[(index * 11) % subjects.length]} too. Delivery in ${1 + (index % 9)} days, two revisions.`,
  category: categoryCodes[index % categoryCodes.length],
  tags: [subjects[index % subjects.length], qualifiers[(index * 7) % qualifiers.length]],
  ...(index % 5 === 0 ? { mode: 'offline', city: cities[index % cities.length] } : {}),
  ...(index % 7 === 0 ? {} : { ut_price: `${5 + (index % 200)}.${String(index % 100).padStart(2, '0')}` }),
  pricing_model: ['fixed', 'per_hour', 'per_day', 'per_use', 'negotiable'][index % 5],
});

await hall.write(skillCount, 'skills', (index) => hall.call('POST', '/api/v1/skills/', sellers[index % sellers.length]!, skillOf(index)));
await hall.server.runtime.engine.dependencies.db.raw('ANALYZE skills');
const first = await hall.call('GET', '/api/v1/skills/hall?page_size=20', buyer);
const metrics = await hall.measure(
  `Skill hall: ${skillCount} skills`,
  [
    ['newest, first page', () => '/api/v1/skills/hall?page_size=20'],
    ['newest, next page by cursor', () => `/api/v1/skills/hall?page_size=20&cursor=${first.next_cursor}`],
    ['category + price_asc', (index) => `/api/v1/skills/hall?category=${categoryCodes[index % categoryCodes.length]}&sort=price_asc&page_size=20`],
    ['price range, price_desc', () => '/api/v1/skills/hall?min_price_ut=20&max_price_ut=120&sort=price_desc&page_size=20'],
    ['quality', () => '/api/v1/skills/hall?sort=quality&page_size=20'],
    ['offline in a city', (index) => `/api/v1/skills/hall?mode=offline&city=${cities[index % cities.length]}&page_size=20`],
    ['text query, relevance', (index) => `/api/v1/skills/hall?q=${encodeURIComponent(queries[index % queries.length]!)}&page_size=20`],
  ],
  requests,
  buyer,
  'hall page',
);
saveResult({
  benchmark: 'hall',
  title: `The skill hall at ${skillCount.toLocaleString('en')} skills (\`bench/hall/run.ts\`)`,
  command: commandLine('bench:hall'),
  metrics,
});
