import { createEventHub } from '../events/hub.ts';
import { createPublisher } from '../events/publisher.ts';
import { createRelay } from '../events/relay.ts';
import { limits } from '../limits.ts';
import { createAdmission } from './admission.ts';
import { createCapabilityEngine } from './capabilities.ts';
import type { EngineDependencies } from './dependencies.ts';
import { createIdempotency } from './idempotency.ts';
import { createIdentityEngine } from './identity.ts';
import { createStreams } from './streams.ts';
import { createRetention } from './retention.ts';
import { createSweeper } from './sweeper.ts';
import { createTransactionEngine } from './transactions.ts';
import { createTransitions } from './transitions.ts';
import { createWalletEngine } from './wallet.ts';

/** The engine: every use case of the product, behind one object the adapters call. */
export async function createEngine(dependencies: EngineDependencies) {
  // Losing a published mark in a crash only makes the relay publish that row again.
  const publisher = createPublisher(dependencies.bus, dependencies.asyncCommitDb, dependencies.log);
  const idempotency = createIdempotency(dependencies);
  const transitions = createTransitions(dependencies, publisher);
  const admission = createAdmission(dependencies);
  const identity = createIdentityEngine(dependencies, admission);
  const capabilities = createCapabilityEngine(dependencies, idempotency);
  const transactions = createTransactionEngine(dependencies, idempotency, transitions);
  const wallet = createWalletEngine(dependencies, idempotency);
  const sweeper = createSweeper(transactions, dependencies.log);
  const retention = createRetention(dependencies);
  const hub = createEventHub(dependencies.bus, dependencies.db, dependencies.log);
  await hub.start();
  const relay = createRelay(dependencies.bus, dependencies.db, dependencies.log, dependencies.now);
  const streams = createStreams(hub, transactions);

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

  async function close() {
    relay.stop();
    sweeper.stop();
    retention.stop();
    await hub.stop();
    await Promise.all([relay.idle(), sweeper.idle(), retention.idle()]);
    await publisher.close();
  }

  return { identity, capabilities, transactions, wallet, sweeper, retention, streams, hub, relay, admission, readiness, close, dependencies };
}

export type Engine = Awaited<ReturnType<typeof createEngine>>;
