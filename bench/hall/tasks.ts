import { categoryCodes } from '../../src/domain/categories.ts';
import { saveResult } from '../results.ts';
import { argument, cities, openHall, qualifiers, queries, subjects } from './harness.ts';

/**
 * The task hall at scale (issue 18): 10,000 open tasks published through the API (each bounty
 * held from its publisher's wallet, each row with its stored term vector and search column), then
 * pages of GET /api/v1/tasks/hall in each order, with text queries, and the market statistics,
 * through the real server over HTTP on PostgreSQL and Redis. Aim: each p99 under 50 ms on this
 * machine; baseline GET /auth/me in the same run.
 *
 *   npm run bench:hall (the skill hall, then this) · npx tsx bench/hall/tasks.ts [--tasks 10000 --requests 200]
 */
const taskCount = Number(argument('tasks', '10000'));
const requests = Number(argument('requests', '200'));
const hall = await openHall('bench_task_hall');
const publishers = Array.from({ length: 50 }, hall.agent);
const reader = hall.agent();
for (const publisher of publishers) {
  const me = await hall.call('GET', '/api/v1/auth/me', publisher);
  await hall.call('POST', '/api/v1/admin/wallet/credit', hall.admin, { user_id: me.user_id, currency: 'UT', amount: '10000000.00' });
}

const taskOf = (index: number) => ({
  title: `Need ${qualifiers[(index * 7) % qualifiers.length]} ${subjects[index % subjects.length]} ${index}`,
  description: `Looking for ${qualifiers[(index * 7) % qualifiers.length]} ${subjects[index % subjects.length]} work: ${subjects[(index * 3) % subjects.length]} and ${subjects[(index * 11) % subjects.length]} too. Delivery in ${1 + (index % 9)} days.`,
  category: categoryCodes[index % categoryCodes.length],
  tags: [subjects[index % subjects.length], qualifiers[(index * 7) % qualifiers.length]],
  mode: index % 5 === 0 ? 'offline' : 'online',
  ...(index % 5 === 0 ? { city: cities[index % cities.length] } : {}),
  ...(index % 7 === 0 ? {} : { bounty_amount: `${5 + (index % 200)}.${String(index % 100).padStart(2, '0')}` }),
  delivery_hours: 1 + (index % 72),
  expires_at: new Date(Date.now() + (1 + (index % 80)) * 86_400_000).toISOString(),
});

await hall.write(taskCount, 'open tasks', (index) => hall.call('POST', '/api/v1/tasks/', publishers[index % publishers.length]!, taskOf(index)));
await hall.server.runtime.engine.dependencies.db.raw('ANALYZE tasks');
const first = await hall.call('GET', '/api/v1/tasks/hall?page_size=20', reader);
const metrics = await hall.measure(
  `Task hall: ${taskCount} open tasks`,
  [
    ['newest, first page', () => '/api/v1/tasks/hall?page_size=20'],
    ['newest, next page by cursor', () => `/api/v1/tasks/hall?page_size=20&cursor=${first.next_cursor}`],
    ['category + bounty_asc', (index) => `/api/v1/tasks/hall?category=${categoryCodes[index % categoryCodes.length]}&sort=bounty_asc&page_size=20`],
    ['bounty range, bounty_desc', () => '/api/v1/tasks/hall?min_bounty=20&max_bounty=120&sort=bounty_desc&page_size=20'],
    ['deadline', () => '/api/v1/tasks/hall?sort=deadline&page_size=20'],
    ['offline in a city', (index) => `/api/v1/tasks/hall?mode=offline&city=${cities[index % cities.length]}&page_size=20`],
    ['text query, relevance', (index) => `/api/v1/tasks/hall?q=${encodeURIComponent(queries[index % queries.length]!)}&page_size=20`],
    ['market stats', () => '/api/v1/tasks/market/stats'],
  ],
  requests,
  reader,
  'task hall',
);
saveResult({
  benchmark: 'task-hall',
  title: `The task hall at ${taskCount.toLocaleString('en')} open tasks (\`bench/hall/tasks.ts\`)`,
  command: `npx tsx bench/hall/tasks.ts${process.argv.length > 2 ? ` ${process.argv.slice(2).join(' ')}` : ''}`,
  metrics,
});
