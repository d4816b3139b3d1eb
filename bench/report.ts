import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BenchResult, type Metric, machineDescription, resultsDirectory } from './results.ts';
import { lifecycleChart } from './chart.ts';

/**
 * `npm run bench`: runs every benchmark, one after another (each shows its own progress), then
 * writes docs/benchmarks.md from what they measured: per benchmark the command, the date, and each
 * metric with its value, the baseline measured in the same run, the ratio and the aim; the machine
 * at the top; and docs/benchmarks-lifecycle.svg, lifecycle latency against offered load (the
 * lifecycle benchmark at 1, 2, 4, 8 and 16 concurrent clients). Nothing in that file is written by
 * hand; the analysis of past runs is in docs/benchmark-history.md.
 *
 *   npm run bench                      every benchmark at its full size (about 40 minutes)
 *   npm run bench -- --quick           smaller runs of each (about 10 minutes)
 *   npm run bench -- --only read,match run some; the others keep their last results
 *   npm run bench -- --no-run          only write the report from the last results
 */
const argv = process.argv.slice(2);
const lifecycleFile = (concurrency: number, workers: number) => `lifecycle-${workers > 1 ? `w${workers}-` : ''}c${concurrency}.json`;
const quick = argv.includes('--quick');
const only = argv.includes('--only') ? new Set(argv[argv.indexOf('--only') + 1]!.split(',')) : null;
const run = !argv.includes('--no-run');
const concurrencies = [1, 8, 64, 256];
/** The server as WORKERS=2 runs it (two processes behind one port), at these client counts. */
const workersConcurrencies = [8, 64];

interface Step {
  name: string;
  args: string[];
}
const lifecycleStep = (concurrency: number, workers: number): Step => ({
  name: 'lifecycle',
  args: [
    'bench/lifecycle/run.ts',
    '--concurrency',
    String(concurrency),
    '--lifecycles',
    // At least ten seconds of measured run from 64 clients up: 2,000 lifecycles were five or six
    // seconds there, and the rate of one such run read 1,777 to 2,206 changes/s minutes apart. At
    // 8 clients 1,200 lifecycles were three seconds on a faster machine, and one such run read
    // 0.56x where runs of 4,000 minutes before and after read 0.84-0.98x (benchmark history,
    // eleventh session): 4,000 there too, and 1,000 at one client.
    String(quick ? Math.min(4_000, concurrency * 40) : Math.min(4_000, Math.max(1_000, concurrency * 500))),
    '--warmup',
    // Long enough for V8 to optimize the hot path and the statement pool to plan its texts: the
    // rate climbed for about ten seconds after 50 lifecycles (docs/benchmark-history.md, fourth session).
    String(quick ? Math.max(50, concurrency) : Math.max(1_000, concurrency * 4)),
    '--profile',
    '0',
    '--cost-model',
    '0',
    '--cpu-profile',
    '0',
    '--pgbench-seconds',
    quick ? '3' : '10',
    '--workers',
    String(workers),
    // At the aim's 8 clients, the ratio is read again in interleaved rounds (bench/lifecycle/interleaved.ts),
    // which the drift between the whole run's two pgbench runs does not move.
    ...(concurrency === 8 && workers === 1
      ? ['--rounds', quick ? '3' : '7', '--round-lifecycles', quick ? '100' : '500', '--round-pgbench-seconds', quick ? '2' : '3']
      : []),
    '--out',
    `${resultsDirectory}/${lifecycleFile(concurrency, workers)}`,
  ],
});
const steps: Step[] = [
  ...concurrencies.map((concurrency) => lifecycleStep(concurrency, 1)),
  ...workersConcurrencies.map((concurrency) => lifecycleStep(concurrency, 2)),
  { name: 'fanout', args: ['bench/fanout/run.ts', ...(quick ? ['--subscribers', '300', '--changes', '60'] : [])] },
  { name: 'login', args: ['bench/login/run.ts'] },
  { name: 'openapi', args: ['bench/openapi/run.ts', ...(quick ? ['50', '2'] : [])] },
  { name: 'match', args: ['bench/match/run.ts', ...(quick ? ['--scales', '1000,10000', '--requests', '100'] : [])] },
  { name: 'match-heavy', args: ['bench/match/heavy.ts', ...(quick ? ['--requests', '30'] : [])] },
  { name: 'read', args: ['bench/read/run.ts', ...(quick ? ['--seconds', '2', '--rounds', '2'] : [])] },
  { name: 'hall', args: ['bench/hall/run.ts', ...(quick ? ['--requests', '50'] : [])] },
  { name: 'task-hall', args: ['bench/hall/tasks.ts', ...(quick ? ['--requests', '50'] : [])] },
  { name: 'create', args: ['bench/hall/create.ts', ...(quick ? ['--requests', '30'] : [])] },
  { name: 'dispatch', args: ['bench/dispatch/run.ts', ...(quick ? ['--events', '50', '--rounds', '1'] : [])] },
  { name: 'webhooks', args: ['bench/webhooks/run.ts', ...(quick ? ['--pings', '10'] : [])] },
  { name: 'console', args: ['bench/console/run.ts', ...(quick ? ['--runs', '5'] : [])] },
];

if (run) {
  const chosen = steps.filter((step) => !only || only.has(step.name));
  for (const [index, step] of chosen.entries()) {
    process.stderr.write(`\n[bench ${index + 1}/${chosen.length}] npx tsx ${step.args.join(' ')}\n`);
    const outcome = spawnSync(process.execPath, ['--import', 'tsx', ...step.args], { stdio: 'inherit' });
    if (outcome.status !== 0) throw new Error(`${step.args[0]} failed (exit ${outcome.status})`);
  }
}

const results: BenchResult[] = existsSync(resultsDirectory)
  ? readdirSync(resultsDirectory)
      .filter((file) => file.endsWith('.json') && !file.startsWith('lifecycle-'))
      .map((file) => JSON.parse(readFileSync(path.join(resultsDirectory, file), 'utf8')) as BenchResult)
  : [];
const lifecycle = [...concurrencies.map((concurrency) => [concurrency, 1] as const), ...workersConcurrencies.map((concurrency) => [concurrency, 2] as const)]
  .map(([concurrency, workers]) => `${resultsDirectory}/${lifecycleFile(concurrency, workers)}`)
  .filter((file) => existsSync(file))
  .map((file) => JSON.parse(readFileSync(file, 'utf8')) as LifecycleResult);

interface LifecycleResult {
  meta: {
    date: string;
    command: string;
    postgres: { version?: string };
    cores: number;
    cpuModel: string;
    memoryGb: number;
    node: string;
    kernel?: string;
    options: { workers: number };
  };
  run: {
    concurrency: number;
    lifecyclesPerS: number;
    stateChangesPerS: number;
    latencyMs: Record<string, { p50: number; p99: number }>;
    stateChangeLatencyMs: { p50: number; p99: number };
    batches: { changes: number; statements: number; largest: number } | null;
    cpu: { serverMsPerStateChange: number; postgresMsPerStateChange: number };
  };
  raw: {
    /** The ratio's baseline: the mean of tpsBefore and tpsAfter; results older than those two fields have one run's figure here. */
    tps: number | null;
    tpsBefore?: number | null;
    tpsAfter?: number | null;
    clients: number;
    clientsWhy: string | null;
    postgresCpuMsPerStateChange: number;
    pgbenchCpuMsPerStateChange: number;
  };
  ratio: number | null;
  /** Absent in results from before the interleaved rounds, null in a run without them. */
  interleaved?: {
    medianRatio: number;
    ratios: number[];
    lifecyclesPerRound: number;
    pgbenchSeconds: number;
    productRates: number[];
    pgbenchRates: number[];
  } | null;
  aims: { ratio: { min: number | null; met: boolean | null }; stateChangeP99Ms: { max: number; atConcurrency: number; met: boolean | null } };
}

const machine = machineDescription();

const number = (value: number) => (Number.isInteger(value) ? value.toLocaleString('en') : String(value));
function row(metric: Metric): string {
  const baseline = metric.baseline ? `${number(metric.baseline.value)} ${metric.unit} (${metric.baseline.name})` : '';
  const ratio = metric.baseline && metric.baseline.value !== 0 ? `${(metric.value / metric.baseline.value).toFixed(2)}x` : '';
  const aim = metric.aim ? `${metric.aim.text}: ${metric.aim.met === null ? 'not measured at its load' : metric.aim.met ? 'met' : '**not met**'}` : '';
  return `| ${metric.metric} | ${number(metric.value)} ${metric.unit} | ${baseline} | ${ratio} | ${aim} |`;
}

function section(result: Pick<BenchResult, 'title' | 'command' | 'date' | 'metrics' | 'machine'>): string[] {
  // A result kept from an earlier run may come from another machine: then it says which.
  const where = result.machine && result.machine !== machine ? ` · on ${result.machine}` : '';
  return [
    `## ${result.title}`,
    '',
    `Command: \`${result.command}\` · measured ${result.date.slice(0, 16).replace('T', ' ')} UTC${where}`,
    '',
    '| metric | value | baseline, same run | ratio | aim |',
    '|---|---:|---|---:|---|',
    ...result.metrics.map(row),
    '',
  ];
}

/** pgbench's runs before and after the product, in small text after their mean; nothing for a result with one run. */
function rawRuns(raw: LifecycleResult['raw']): string {
  if (raw.tpsBefore === undefined && raw.tpsAfter === undefined) return '';
  const rate = (tps: number | null | undefined) => (typeof tps === 'number' ? number(tps) : 'nothing');
  return ` <small>(${rate(raw.tpsBefore)} / ${rate(raw.tpsAfter)})</small>`;
}

/** The ratio read again in interleaved rounds, for the runs that had them (bench/lifecycle/interleaved.ts). */
function interleavedLines(): string[] {
  return lifecycle.flatMap(({ run, interleaved }) => {
    if (!interleaved) return [];
    const product = interleaved.productRates.map(number).join(', ');
    const pgbench = interleaved.pgbenchRates.map(number).join(', ');
    return [
      `At ${run.concurrency} clients, read again in ${interleaved.ratios.length} interleaved rounds (pgbench for ${interleaved.pgbenchSeconds} s, then ${number(interleaved.lifecyclesPerRound)} lifecycles of the product, ..., pgbench last; each round against the mean of the pgbench slices on either side): **median ${interleaved.medianRatio.toFixed(2)}x** (rounds ${interleaved.ratios.map((ratio) => `${ratio.toFixed(2)}x`).join(', ')}; the product ${product} changes/s, pgbench ${pgbench}). A drift of the machine slower than a round falls on both sides alike.`,
      '',
    ];
  });
}

/** The lifecycle's own table: one row per client count (and the WORKERS=2 run), every column measured in that run. */
function lifecycleSection(): string[] {
  if (lifecycle.length === 0) return [];
  const main = lifecycle.find((each) => each.run.concurrency === 8 && each.meta.options.workers === 1) ?? lifecycle[0]!;
  const verdict = (met: boolean | null) => (met === null ? '' : met ? 'met' : '**not met**');
  const rows = lifecycle.map((each) => {
    const { run, raw } = each;
    const aim = each.aims.ratio.min === null ? '' : `>= ${each.aims.ratio.min}x: ${verdict(each.aims.ratio.met)}`;
    const p99Aim = each.aims.stateChangeP99Ms.met === null ? '' : ` (aim <= ${each.aims.stateChangeP99Ms.max} ms: ${verdict(each.aims.stateChangeP99Ms.met)})`;
    const batches =
      run.batches && run.batches.statements > 0
        ? `${(run.batches.changes / run.batches.statements).toFixed(1)} (largest ${run.batches.largest})`
        : 'not counted (other processes)';
    // A pgbench that processed nothing (its connections still opening when its time was up) saves null.
    const ratioText = typeof each.ratio === 'number' ? `${each.ratio.toFixed(2)}x` : 'no baseline';
    const pgbench = `${typeof raw.tps === 'number' ? number(raw.tps) : 'pgbench processed nothing'}${rawRuns(raw)}${raw.clients === run.concurrency ? '' : ` (${raw.clients} clients: ${raw.clientsWhy ?? ''})`}`;
    return (
      `| ${run.concurrency} | ${each.meta.options.workers} | ${number(run.stateChangesPerS)} | ${pgbench} | ${ratioText} | ${aim} | ` +
      `${run.stateChangeLatencyMs.p50} / ${run.stateChangeLatencyMs.p99} ms${p99Aim} | ${run.cpu.serverMsPerStateChange} ms | ${run.cpu.postgresMsPerStateChange} ms | ` +
      `${raw.postgresCpuMsPerStateChange} ms | ${batches} |`
    );
  });
  const { meta } = main;
  const lifecycleMachine = `${meta.cores} × ${meta.cpuModel}, ${Math.round(meta.memoryGb)} GiB, ${meta.kernel ?? `${os.type()} ${os.release()}`}, Node ${meta.node}, PostgreSQL ${meta.postgres.version ?? 'unknown'}`;
  // Results from before the kernel was recorded can only be told apart by CPU and memory.
  const sameMachine = machine.startsWith(meta.kernel ? lifecycleMachine : `${meta.cores} × ${meta.cpuModel}, ${Math.round(meta.memoryGb)} GiB`);
  const where = sameMachine ? '' : ` · on ${lifecycleMachine}`;
  return [
    '## Escrow state changes over HTTP against pgbench: `bench/lifecycle`',
    '',
    `Command: \`npm run bench:lifecycle -- --concurrency C --workers W --lifecycles N --warmup M --profile 0 --cost-model 0 --cpu-profile 0\` (C = ${concurrencies.join(', ')} with one server process; M = ${quick ? 'max(50, C)' : 'max(1,000, 4 C)'} lifecycles of warm-up, not measured; C = ${workersConcurrencies.join(', ')} with WORKERS=2) · measured ${meta.date.slice(0, 16).replace('T', ' ')} UTC${where}`,
    '',
    "A state change is one HTTP request (create, freeze, accept, deliver, confirm); pgbench runs one escrow step (guarded UPDATE, two balance UPDATEs, two ledger INSERTs, one outbox INSERT) per transaction at the same client count, on the same machine, in the same run, once before the product's warm-up and once after its measured run: the pgbench column is their mean, the ratio's baseline, with the two runs (before / after) in small text. CPU per state change is from /proc: the server process(es), and PostgreSQL's backends during the run and during pgbench (the run after the product). Statements: mean state changes per group-commit statement.",
    '',
    '| clients | server processes | state changes/s | pgbench changes/s | ratio | aim | state change p50 / p99 | server CPU per change | PostgreSQL CPU per change | PostgreSQL CPU per pgbench change | changes per statement |',
    '|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---|',
    ...rows,
    '',
    ...interleavedLines(),
    '![Lifecycle latency against offered load](benchmarks-lifecycle.svg)',
    '',
  ];
}

const order = ['fanout', 'read', 'match', 'match-heavy', 'hall', 'task-hall', 'create', 'webhooks', 'dispatch', 'login', 'openapi', 'console'];
const lines = [
  '# Benchmarks',
  '',
  '<!-- Written by `npm run bench` (bench/report.ts). Do not edit by hand: run it again. -->',
  `Written by \`npm run bench${quick ? ' -- --quick' : ''}\` on ${new Date().toISOString().slice(0, 10)}. Machine: ${machine}.`,
  'Every baseline is measured in the same run, on the same machine; a ratio is the value divided by its baseline.',
  'How each benchmark works, what past runs found and what changed because of them: [benchmark-history.md](benchmark-history.md).',
  '',
  ...lifecycleSection(),
  ...results.sort((left, right) => order.indexOf(left.benchmark) - order.indexOf(right.benchmark)).flatMap(section),
];
writeFileSync('docs/benchmarks.md', `${lines.join('\n').trimEnd()}\n`);
if (lifecycle.length > 0)
  writeFileSync(
    'docs/benchmarks-lifecycle.svg',
    lifecycleChart(
      lifecycle
        .filter((each) => each.meta.options.workers === 1)
        .map((each) => ({
          concurrency: each.run.concurrency,
          throughput: each.run.lifecyclesPerS,
          p50: each.run.latencyMs.lifecycle!.p50,
          p99: each.run.latencyMs.lifecycle!.p99,
        })),
    ),
  );
process.stderr.write(
  `\nwrote docs/benchmarks.md (${results.length + (lifecycle.length > 0 ? 1 : 0)} benchmarks)${lifecycle.length > 0 ? ' and docs/benchmarks-lifecycle.svg' : ''}\n`,
);
