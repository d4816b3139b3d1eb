/** Command-line options of the lifecycle benchmark. */
export interface BenchOptions {
  lifecycles: number;
  concurrency: number;
  warmup: number;
  databaseUrl: string;
  redisUrl: string;
  /** Seconds each of the raw ceiling's two pgbench runs (before and after the product's) lasts. */
  pgbenchSeconds: number;
  /** Lifecycles of the instrumented (query-counting) pass at one client; 0 skips it. */
  profileLifecycles: number;
  /** Requests of each cost-model probe (GET /healthz, /api/v1/auth/me, /api/v1/wallet/); 0 skips them. */
  costModelRequests: number;
  /** Lifecycles of the CPU-profiled pass at C clients; 0 skips it. */
  cpuProfileLifecycles: number;
  /** Wait up to this many seconds for other processes to leave the CPUs idle before the run. */
  waitQuietSeconds: number;
  /** Server processes: 1 runs it in this process; more run it as the product's WORKERS=N cluster. */
  workers: number;
  /** Interleaved rounds after the measured run (interleaved.ts); 0 skips them. */
  rounds: number;
  /** Lifecycles of the product in each round. */
  roundLifecycles: number;
  /** Seconds of each pgbench slice between the rounds. */
  roundPgbenchSeconds: number;
  /** Run the load generator in this process instead of a child (not recommended). */
  inProcessClient: boolean;
  out: string;
}

const usage = `usage: npm run bench:lifecycle -- [options]
  --lifecycles N        full lifecycles to measure (default 2000)
  --concurrency C       concurrent clients (default 8)
  --warmup W            unmeasured lifecycles run first (default 100)
  --database-url URL    bench database, dropped and recreated (default postgres://postgres@127.0.0.1:5432/marketplace_bench)
  --redis-url URL       (default redis://127.0.0.1:6379)
  --pgbench-seconds S   duration of each raw-ceiling pgbench run, before and after the product's (default 10)
  --profile N           lifecycles of the instrumented single-client pass (default 100, 0 = skip)
  --cost-model N        requests per cost-model probe: /healthz, /auth/me, /wallet/ (default 3000, 0 = skip)
  --cpu-profile N       lifecycles of the V8-CPU-profiled pass at C clients (default 400, 0 = skip)
  --wait-quiet S        wait up to S seconds for foreign CPU load to drop below 0.25 cores (default 0)
  --workers N           server processes, as the product's WORKERS=N (default 1: the server runs in
                        this process; with more, the profile, cost-model and V8 profile passes are skipped)
  --rounds R            interleaved rounds after the run: pgbench, product, pgbench, ... (default 0 = skip)
  --round-lifecycles L  the product's lifecycles in each round (default 500)
  --round-pgbench-seconds S  each pgbench slice between the rounds (default 3)
  --in-process-client   drive the load from the server's own process
  --out FILE            JSON results (default .bench-out/lifecycle.json)`;

export function parseArgs(argv: string[]): BenchOptions {
  const options: BenchOptions = {
    lifecycles: 2000,
    concurrency: 8,
    warmup: 100,
    databaseUrl: 'postgres://postgres@127.0.0.1:5432/marketplace_bench',
    redisUrl: 'redis://127.0.0.1:6379',
    pgbenchSeconds: 10,
    profileLifecycles: 100,
    costModelRequests: 3000,
    cpuProfileLifecycles: 400,
    waitQuietSeconds: 0,
    workers: 1,
    rounds: 0,
    roundLifecycles: 500,
    roundPgbenchSeconds: 3,
    inProcessClient: false,
    out: '.bench-out/lifecycle.json',
  };
  const integer = (name: string, value: string | undefined, min: number) => {
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < min) throw new Error(`${name} must be an integer >= ${min}\n${usage}`);
    return parsed;
  };
  for (let index = 0; index < argv.length; index++) {
    const [flag, inline] = argv[index]!.split(/=(.*)/s, 2) as [string, string | undefined];
    const value = () => inline ?? argv[++index];
    switch (flag) {
      case '--lifecycles':
        options.lifecycles = integer(flag, value(), 1);
        break;
      case '--concurrency':
        options.concurrency = integer(flag, value(), 1);
        break;
      case '--warmup':
        options.warmup = integer(flag, value(), 0);
        break;
      case '--database-url':
        options.databaseUrl = value() ?? '';
        break;
      case '--redis-url':
        options.redisUrl = value() ?? '';
        break;
      case '--pgbench-seconds':
        options.pgbenchSeconds = integer(flag, value(), 1);
        break;
      case '--profile':
        options.profileLifecycles = integer(flag, value(), 0);
        break;
      case '--cost-model':
        options.costModelRequests = integer(flag, value(), 0);
        break;
      case '--cpu-profile':
        options.cpuProfileLifecycles = integer(flag, value(), 0);
        break;
      case '--wait-quiet':
        options.waitQuietSeconds = integer(flag, value(), 0);
        break;
      case '--workers':
        options.workers = integer(flag, value(), 1);
        break;
      case '--rounds':
        options.rounds = integer(flag, value(), 0);
        break;
      case '--round-lifecycles':
        options.roundLifecycles = integer(flag, value(), 1);
        break;
      case '--round-pgbench-seconds':
        options.roundPgbenchSeconds = integer(flag, value(), 1);
        break;
      case '--in-process-client':
        options.inProcessClient = true;
        break;
      case '--out':
        options.out = value() ?? options.out;
        break;
      case '--help':
      case '-h':
        process.stdout.write(`${usage}\n`);
        process.exit(0);
      default:
        throw new Error(`unknown option ${flag}\n${usage}`);
    }
  }
  if (!/^postgres(ql)?:\/\//.test(options.databaseUrl)) throw new Error(`--database-url must be a postgres:// URL\n${usage}`);
  return options;
}
