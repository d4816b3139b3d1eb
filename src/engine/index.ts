import { prepared } from '../db/prepared.ts';
import { createEventHub } from '../events/hub.ts';
import {
  createAutoAcceptJobs,
  createDemandMatches,
  createAutoAccept,
  createAnalysisEngine,
  createCapabilityEngine,
  createDemandEngine,
  createMatchingEngine,
  createRowEmbeddings,
  type RowEmbeddings,
  createInvokeEngine,
  createPricingSuggestionEngine,
} from './market/index.ts';
import { createPublisher, transactionFeed } from '../events/publisher.ts';
import { taskFeed } from '../events/task-feed.ts';
import { createRelay } from '../events/relay.ts';
import { limits } from '../limits.ts';
import { aiSettingsFromConfig, createAiProvider } from '../ai/provider.ts';
import { createA2AEngine } from './a2a/index.ts';
import {
  createAdmission,
  createApiKeyEngine,
  createDeviceAuthorizationEngine,
  createIdentityEngine,
  createOAuth,
  createOAuthClients,
} from './identity/index.ts';
import { type EngineDependencies, createRetention, outboundNetwork } from './common/index.ts';
import {
  createAgentBudgets,
  createIdempotency,
  createStreams,
  createSweeper,
  createTransactionEngine,
  createTransitions,
  createWalletEngine,
} from './money/index.ts';
import {
  createSkillEngine,
  createSkillHall,
  createSkillCandidates,
  createSkillDrafts,
  createTaskEngine,
  createTaskHall,
  createTaskApplications,
  createTaskAcceptance,
  createTaskRating,
  createTaskAi,
  createTaskPushes,
  createTaskEvents,
} from './work/index.ts';
import { createWebhooks } from './deliveries/index.ts';

/** The engine: every use case of the product, behind one object the adapters call. */
export async function createEngine(dependencies: EngineDependencies) {
  // Losing a published mark in a crash only makes the relay publish that row again.
  const publisher = createPublisher(dependencies.bus, dependencies.asyncCommitDb, dependencies.log, transactionFeed);
  const idempotency = createIdempotency(dependencies);
  const transitions = createTransitions(dependencies, publisher);
  const admission = createAdmission(dependencies);
  const identity = createIdentityEngine(dependencies, admission);
  const stopRevocations = await identity.listenForRevocations();
  const apiKeys = createApiKeyEngine(dependencies, identity);
  const deviceAuthorization = createDeviceAuthorizationEngine(dependencies, admission);
  const oauth = createOAuth(dependencies, createOAuthClients(dependencies, outboundNetwork(dependencies)), admission);
  const transactions = createTransactionEngine(dependencies, idempotency, transitions);
  const ai = dependencies.ai ?? createAiProvider(aiSettingsFromConfig(dependencies.config), dependencies.log);
  // The provider's embeddings, stored with the rows, refine matching when LLM_EMBEDDING_MODEL is
  // set; otherwise matching uses text similarity alone.
  const embeddings = createRowEmbeddings(dependencies, ai);
  const matching = createMatchingEngine(dependencies, { embeddings });
  // The language model is optional: every feature that uses it has a built-in fallback.
  const analysis = createAnalysisEngine({ ai, log: dependencies.log });
  const autoAccept = createAutoAccept(dependencies, transactions, matching);
  const demands = withEmbeddingNotes(createDemandEngine(dependencies, idempotency, autoAccept, analysis), embeddings);
  const autoAcceptJobs = createAutoAcceptJobs(dependencies, autoAccept, createDemandMatches(dependencies, matching));
  const capabilities = withAfterWriteKicks(createCapabilityEngine(dependencies, idempotency), autoAcceptJobs.kick, embeddings);
  const wallet = createWalletEngine(dependencies, idempotency);
  const agentBudgets = createAgentBudgets(dependencies);
  const hub = createEventHub(dependencies.bus, dependencies.db, dependencies.log);
  await hub.start();
  const invoke = createInvokeEngine(dependencies, idempotency, transitions, hub);
  const a2a = createA2AEngine(dependencies, idempotency, { matching, demands, transactions, invoke });
  const taskEvents = createTaskEvents(dependencies, hub);
  const skillCore = createSkillEngine(dependencies, idempotency, taskEvents);
  const skills = {
    ...skillCore,
    ...createSkillHall(dependencies),
    candidates: createSkillCandidates(dependencies, ai, idempotency, skillCore),
    drafts: createSkillDrafts(ai),
  };
  const applications = {
    ...createTaskApplications(dependencies, idempotency, taskEvents),
    ...createTaskAcceptance(dependencies, idempotency, transitions, taskEvents),
  };
  const tasks = {
    ...createTaskEngine(dependencies, idempotency, taskEvents, transitions),
    events: taskEvents,
    ...createTaskHall(dependencies),
    applications,
    ...createTaskRating(dependencies, skillCore),
    ai: createTaskAi(ai, dependencies.log),
    ...createTaskPushes(dependencies, applications.apply, applications.accept),
  };
  const sweeper = createSweeper(transactions, dependencies.log, limits.sweepBatchSizeMax, dependencies, tasks);
  const retention = createRetention(dependencies);
  const webhooks = createWebhooks(dependencies, a2a);
  const relay = createRelay(dependencies.bus, dependencies.db, dependencies.log, dependencies.now, [transactionFeed, taskFeed]);
  const streams = createStreams(hub, transactions);
  const pricing = createPricingSuggestionEngine(dependencies, ai);

  /** Readiness: both backends answer within a bound, or the instance should get no traffic. */
  async function readiness(): Promise<{ database: boolean; bus: boolean }> {
    const within = <T>(work: Promise<T>) =>
      Promise.race([work.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), limits.readinessCheckTimeoutMs).unref())]).catch(
        () => false,
      );
    // The named statements (every state change, the point reads) have a pool of their own (db/prepared.ts): both must answer.
    const [main, statements, bus] = await Promise.all([
      within(dependencies.db.raw('select 1')),
      within(prepared(dependencies.db, 'SELECT 1 AS ready', [])),
      within(dependencies.bus.ping()),
    ]);
    return { database: main && statements, bus };
  }

  async function close() {
    relay.stop();
    webhooks.stop();
    sweeper.stop();
    retention.stop();
    autoAcceptJobs.stop();
    embeddings.stop();
    await hub.stop();
    await stopRevocations();
    await Promise.all([relay.idle(), webhooks.idle(), sweeper.idle(), retention.idle(), autoAcceptJobs.idle(), embeddings.idle()]);
    await publisher.close();
    await taskEvents.close();
  }

  return {
    identity,
    apiKeys,
    agentBudgets,
    webhooks,
    deviceAuthorization,
    oauth,
    capabilities,
    skills,
    tasks,
    demands,
    matching,
    transactions,
    /** The escrow moves themselves; tests and the benchmark read its batch sizes (batchStats). */
    transitions,
    invoke,
    a2a,
    wallet,
    sweeper,
    retention,
    autoAcceptJobs,
    embeddings,
    streams,
    hub,
    relay,
    admission,
    ai,
    analysis,
    pricing,
    readiness,
    close,
    dependencies,
  };
}

/**
 * After a change to capabilities has committed, the composition kicks the work it leaves for later,
 * so the request answers without doing it: a capability that is newly offered may be what an
 * auto-accept demand waits for (the capability engine recorded a job with each change that offers
 * one; the kick runs it on this instance), and new words are to be embedded. Replays changed nothing.
 */
function withAfterWriteKicks(capabilities: ReturnType<typeof createCapabilityEngine>, kickAutoAccept: () => void, embeddings: RowEmbeddings) {
  const create: typeof capabilities.create = async (...args) => {
    const outcome = await capabilities.create(...args);
    if (!outcome.replayed) {
      kickAutoAccept();
      embeddings.note('capability', [outcome.data.id]);
    }
    return outcome;
  };
  const batch: typeof capabilities.batch = async (...args) => {
    const outcome = await capabilities.batch(...args);
    if (!outcome.replayed) {
      kickAutoAccept();
      embeddings.note(
        'capability',
        outcome.data.results.flatMap((result) => (result.success ? [result.data!.id] : [])),
      );
    }
    return outcome;
  };
  const update: typeof capabilities.update = async (...args) => {
    const view = await capabilities.update(...args);
    if (view.available) kickAutoAccept();
    embeddings.note('capability', [view.id]);
    return view;
  };
  return { ...capabilities, create, batch, update };
}

/** A new demand's words are embedded after its commit, off the request path. */
function withEmbeddingNotes(demands: ReturnType<typeof createDemandEngine>, embeddings: RowEmbeddings) {
  const create: typeof demands.create = async (...args) => {
    const outcome = await demands.create(...args);
    if (!outcome.replayed) embeddings.note('demand', [outcome.data.id]);
    return outcome;
  };
  return { ...demands, create };
}

export type Engine = Awaited<ReturnType<typeof createEngine>>;
