import { limits } from '../limits.ts';
import type { EngineDependencies } from './dependencies.ts';
import { createIdentityEngine } from './identity.ts';

/** The engine: every use case of the product, behind one object the adapters call. */
export function createEngine(dependencies: EngineDependencies) {
  const identity = createIdentityEngine(dependencies);

  /** Readiness: both backends answer within a bound, or the instance should get no traffic. */
  async function readiness(): Promise<{ database: boolean; bus: boolean }> {
    const within = <T>(work: Promise<T>) =>
      Promise.race([
        work.then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), limits.readinessCheckTimeoutMs).unref()),
      ]).catch(() => false);
    const [database, bus] = await Promise.all([within(dependencies.db.raw('select 1')), within(dependencies.bus.ping())]);
    return { database, bus };
  }

  return { identity, readiness, dependencies };
}

export type Engine = ReturnType<typeof createEngine>;
