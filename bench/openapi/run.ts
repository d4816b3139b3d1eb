import { commandLine, saveResult } from '../results.ts';
import { spawn } from 'node:child_process';

/**
 * How much 100 parallel anonymous readers of the OpenAPI document slow everyone else: /healthz
 * latency alone, then while the readers' requests are in flight. Issue 8 observed 1.6 s when the
 * document was rebuilt per request. Embedded database, in-process bus, access log at info to a
 * sink (so its cost is counted); the server runs in a child process (server.ts). Prints numbers;
 * asserts nothing.
 *   npx tsx bench/openapi/run.ts [readers=100] [rounds=5]
 */
const readers = Number(process.argv[2] ?? 100);
const rounds = Number(process.argv[3] ?? 5);

const server = spawn(process.execPath, ['--import', 'tsx', 'bench/openapi/server.ts'], { stdio: ['ignore', 'pipe', 'inherit'] });
const base = await new Promise<string>((resolve) => {
  let output = '';
  server.stdout.on('data', (chunk) => {
    output += chunk;
    const match = /listening (http:\/\/\S+)/.exec(output);
    if (match) resolve(match[1]!);
  });
});

async function timedMs(path: string): Promise<number> {
  const startedAt = performance.now();
  const response = await fetch(`${base}${path}`);
  await response.arrayBuffer();
  return performance.now() - startedAt;
}

const percentile = (values: number[], share: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * share))]!;

await timedMs('/healthz');
const alone: number[] = [];
for (let index = 0; index < 50; index++) alone.push(await timedMs('/healthz'));
const during: number[] = [];
const burstMs: number[] = [];
for (let round = 0; round < rounds; round++) {
  const startedAt = performance.now();
  const burst = Promise.all(Array.from({ length: readers }, () => timedMs('/api/v1/public/openapi.json')));
  during.push(await timedMs('/healthz'));
  await burst;
  burstMs.push(performance.now() - startedAt);
}
const format = (value: number) => `${value.toFixed(1)} ms`;
console.log(`healthz alone: p50 ${format(percentile(alone, 0.5))}, max ${format(Math.max(...alone))}`);
console.log(`healthz during ${readers} parallel OpenAPI readers (${rounds} rounds): ${during.map(format).join(', ')}`);
console.log(`each burst of ${readers} OpenAPI reads took: ${burstMs.map(format).join(', ')}`);
saveResult({
  benchmark: 'openapi',
  title: 'OpenAPI readers: `bench/openapi`',
  command: commandLine('bench:openapi'),
  metrics: [
    {
      metric: `slowest /healthz during ${readers} parallel OpenAPI readers`,
      value: Number(Math.max(...during).toFixed(1)),
      unit: 'ms',
      baseline: { name: '/healthz alone p50', value: Number(percentile(alone, 0.5).toFixed(1)) },
    },
  ],
});
server.kill('SIGTERM');
