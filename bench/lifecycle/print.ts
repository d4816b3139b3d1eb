import { steps } from './load.ts';
import { aims, latencyTable, profileTable, stateChangesPerLifecycle } from './report.ts';
import type { BenchResult } from './result.ts';
import { round } from './stats.ts';

// Apart from report.ts, which result.ts uses to assemble the result this prints.
/** The printed report: the table of docs/benchmarks.md. */
export function printResult(result: BenchResult, outPath: string, say: (line: string) => void) {
  const { run, raw, meta } = result;
  const { cpu, database } = run;
  const concurrency = meta.options.concurrency;
  const inProcess = meta.loadGenerator === 'in-process';
  say('');
  say(
    `=== lifecycle bench: ${run.lifecycles} lifecycles, ${concurrency} clients, ${meta.cores} cores, server ${meta.options.workers > 1 ? `${meta.options.workers} worker processes` : 'one process'}, load generator ${meta.loadGenerator} ===`,
  );
  say(latencyTable(run.latencyMs));
  say('');
  say(`lifecycles/s            ${run.lifecyclesPerS}`);
  say(
    `state changes/s         ${run.stateChangesPerS}   (${stateChangesPerLifecycle} per lifecycle: create + freeze + accept + deliver + confirm; = HTTP requests/s)`,
  );
  say(
    `raw state changes/s     ${raw.tps} (before ${raw.tpsBefore}, after ${raw.tpsAfter})   (mean of pgbench before and after the product; -M extended -c ${raw.clients}${raw.clientsWhy ? ` (${raw.clientsWhy})` : ''}: guarded UPDATE RETURNING + 2 balance UPDATEs + 2 ledger INSERTs + 1 outbox INSERT per COMMIT)`,
  );
  say(`  (for reference, after the product: same script -M prepared ${raw.preparedTps}/s; same writes as one CTE statement ${raw.singleStatementTps}/s)`);
  const ratioAim = result.aims.ratio;
  say(
    `ratio                   ${result.ratio}   (${ratioAim.min === null ? `no aim at ${concurrency} clients` : `aim >= ${ratioAim.min}: ${ratioAim.met ? 'met' : 'NOT met'}`})`,
  );
  if (result.interleaved) {
    const rounds = result.interleaved;
    say(
      `ratio, interleaved     ${rounds.medianRatio}   (median of ${rounds.ratios.length} rounds of ${rounds.lifecyclesPerRound} lifecycles between ${rounds.pgbenchSeconds} s pgbench slices: ${rounds.ratios.join(', ')})`,
    );
  }
  const p99 = result.aims.stateChangeP99Ms;
  const verdict = p99.met === null ? `not judged at ${concurrency} clients` : p99.met ? 'met' : 'NOT met';
  say(
    `state change p99        ${p99.actual} ms   (aim <= ${aims.stateChangeP99MsMax} ms at ${aims.atConcurrency} clients: ${verdict}); lifecycle p99 ${run.latencyMs.lifecycle!.p99} ms`,
  );
  say(`CPU per state change    server ${cpu.serverMsPerStateChange} ms, postgres ${cpu.postgresMsPerStateChange} ms`);
  say(`failed lifecycles       ${run.failed}`);
  say('');
  say(
    `CPU per lifecycle       server ${cpu.serverMsPerLifecycle} ms (${cpu.serverSystemMsPerLifecycle} in the kernel), client ${inProcess ? '(in the server process)' : `${cpu.clientMsPerLifecycle} ms`}, postgres ${cpu.postgresMsPerLifecycle} ms, redis ${cpu.redisMsPerLifecycle} ms`,
  );
  say(
    `cores busy (of ${meta.cores})      server ${cpu.serverCores}, client ${cpu.clientCores}, postgres ${cpu.postgresCores}, redis ${cpu.redisCores}; whole machine ${cpu.machineCores} (other work ${cpu.otherCores}, before the run ${cpu.otherCoresBeforeRun})`,
  );
  say(
    `raw CPU per state change postgres ${raw.postgresCpuMsPerStateChange} ms + pgbench ${raw.pgbenchCpuMsPerStateChange} ms (the run after the product only); machine ${raw.machineCores} cores busy, other work ${raw.otherCores} (real run per state change: postgres ${round(cpu.postgresMsPerLifecycle / stateChangesPerLifecycle, 3)} ms, all processes ${cpu.allProcessesMsPerStateChange} ms)`,
  );
  say(
    `database per lifecycle  ${database.commitsPerLifecycle} commits (autocommit statements count), ${database.rowsInsertedPerLifecycle} rows inserted, ${database.rowsUpdatedPerLifecycle} updated, ${database.rowsDeletedPerLifecycle} deleted, ${database.walBytesPerLifecycle} WAL bytes (raw: ${raw.walBytesPerStateChange} per state change)`,
  );
  if (run.serverEventLoopDelayMs)
    say(`server event loop delay beyond its timer p50 ${run.serverEventLoopDelayMs.p50} ms, p99 ${run.serverEventLoopDelayMs.p99} ms`);
  if (result.profile) {
    say('');
    say(`per request at 1 client (instrumented, ${result.profile.lifecycles} lifecycles):`);
    say(profileTable(result.profile.steps));
    const trips = steps.reduce((sum, step) => sum + (result.profile!.steps[step]?.dbRoundTrips ?? 0), 0);
    say(`PostgreSQL round trips per lifecycle: ${round(trips, 1)}; background: ${JSON.stringify(result.profile.backgroundRoundTrips)}`);
  }
  if (result.costModel) {
    const model = result.costModel;
    say('');
    say(`cost model at ${concurrency} clients (per request):`);
    for (const probe of [model.http, model.authenticated, model.oneQuery]) {
      say(
        `  GET ${probe.path.padEnd(18)} ${String(probe.requestsPerS).padStart(8)} req/s  ${String(probe.roundTripsPerRequest).padStart(4)} round trips  server ${probe.serverCpuMsPerRequest} ms  postgres ${probe.postgresCpuMsPerRequest} ms CPU  p50 ${probe.p50Ms} ms  p99 ${probe.p99Ms} ms`,
      );
    }
    say(
      `  one simple round trip through knex+pg: server ${model.serverCpuMsPerSimpleQuery ?? 'n/a'} ms, postgres ${model.postgresCpuMsPerSimpleQuery ?? 'n/a'} ms CPU`,
    );
  }
  if (result.serverCpuProfile) {
    const profile = result.serverCpuProfile;
    say('');
    say(
      `server main thread (V8 profile, ${profile.lifecycles} lifecycles at ${profile.concurrency} clients): busy ${(profile.busyShare * 100).toFixed(0)}% of the time, ${profile.sampledMs} ms sampled, self time by purpose:`,
    );
    for (const entry of profile.byPurpose)
      say(`  ${entry.purpose.padEnd(50)}${String(entry.ms).padStart(7)} ms ${(entry.share * 100).toFixed(1).padStart(6)}%`);
  }
  const before = meta.activityBefore;
  const after = meta.activityAfter;
  say('');
  say(
    `other active backends before/after: ${before.otherActiveBackends}/${after.otherActiveBackends}; load average before/after: ${before.loadAverage1m}/${after.loadAverage1m}`,
  );
  say(`results written to ${outPath}`);
}
