import { limits } from '../../limits.ts';
import { kickedRunner, periodic } from '../../periodic.ts';
import { claimAutoAcceptJobs, finishAutoAcceptJob } from '../../store/auto-accept-jobs.ts';
import type { AutoAccept } from './auto-accept.ts';
import type { DemandMatches } from './demand-matches.ts';
import type { EngineDependencies } from '../common/index.ts';

/**
 * The auto-accept work a capability's offer causes, off the request path (docs/decisions/matching.md
 * "Auto-accept as a job"). The request that offers a capability records a job in its own database
 * transaction and kicks this instance's runner after the commit, so it answers at once and the
 * purchase follows within moments; a periodic run on every instance picks up what a crash left
 * (a claim older than autoAcceptClaimStaleMs). Each job runs forCapability, whose attempts claim
 * each demand first, so a job run twice buys nothing twice. The same job tells the open demands the
 * capability matches (`demand.matched`, engine/market/demand-matches.ts), once each.
 */
export function createAutoAcceptJobs({ db, now, log }: EngineDependencies, autoAccept: AutoAccept, demandMatches: DemandMatches) {
  async function runOnce(): Promise<number> {
    const at = now();
    const jobs = await claimAutoAcceptJobs(db, at, new Date(at.getTime() - limits.autoAcceptClaimStaleMs), limits.autoAcceptJobsPerRunMax);
    for (const job of jobs) {
      if (job.attempts > limits.autoAcceptJobAttemptsMax) {
        log.warn('auto-accept job given up after its attempts', { capability_id: job.capability_id, attempts: job.attempts });
      } else {
        await demandMatches.forCapability(job.capability_id);
        await autoAccept.forCapability(job.capability_id);
      }
      await finishAutoAcceptJob(db, job.capability_id, at);
    }
    return jobs.length;
  }

  /** Runs until no job is due; a kick during a run makes it look once more. */
  const runner = kickedRunner('auto-accept jobs', async () => (await runOnce()) > 0, log);

  const schedule = periodic('auto-accept jobs', async () => runner.kick(), log);
  return {
    runOnce,
    kick: runner.kick,
    start: (intervalMs: number = limits.autoAcceptJobIntervalMs) => schedule.start(intervalMs),
    stop: schedule.stop,
    /** Resolves when no run is in progress on this instance. */
    idle: runner.idle,
  };
}

export type AutoAcceptJobs = ReturnType<typeof createAutoAcceptJobs>;
