import type { IncomingMessage } from 'node:http';
import { limits } from '../src/limits.ts';
import { type TransactionStatus, transitionTable } from '../src/domain/escrow.ts';
import { withLargeFieldsLeftOut } from '../src/engine/money/index.ts';
import type { TransactionView } from '../src/schemas/transactions.ts';

/**
 * Engine views -> the Task shapes of each A2A generation. Translation only: the exact marketplace
 * state always rides along in `metadata.marketplace`, so nothing is lost by the coarser A2A state.
 *
 * - v0.1: `{id, sessionId, status, artifacts, metadata}`, parts `{type: ...}`, no `rejected` state.
 * - v0.3: `{kind: 'task', id, contextId, ...}`, parts `{kind: ...}`, events `status-update` / `artifact-update`.
 * - v1.0: proto-JSON: states `TASK_STATE_*`, roles `ROLE_*`, parts `{text}` / `{data}`, stream
 *   results wrapped as `{task}`, `{statusUpdate}`, `{artifactUpdate}`.
 * - hybrid: what the shared `tasks/*` names answer without an `A2A-Version` header: the v0.3
 *   shapes with the v0.1 `sessionId` (and `id` on events) added, so clients of either accept them.
 */
export type Generation = 'v0.1' | 'v0.3' | 'v1.0' | 'hybrid';

type A2AState = 'submitted' | 'working' | 'input-required' | 'completed' | 'canceled' | 'rejected' | 'failed';

const stateOfStatus: Record<TransactionStatus, A2AState> = {
  pending_freeze: 'submitted',
  frozen: 'submitted',
  accepted: 'working',
  disputed: 'working',
  delivered: 'input-required',
  settled: 'completed',
  cancelled_by_buyer: 'canceled',
  rejected_by_seller: 'rejected',
  failed: 'failed',
  refunded: 'canceled',
};

const statusText: Record<TransactionStatus, string> = {
  pending_freeze: 'Order created, price not frozen yet: top up and send the same message again, or cancel.',
  frozen: 'The price is held in escrow; waiting for the seller to accept.',
  accepted: 'The seller accepted the order and is working on it.',
  delivered: 'Delivered. Reply "confirm" to pay the seller, or "dispute <reason>" (or send a data part {"action":"confirm"} or {"action":"dispute"}).',
  disputed: 'Disputed; an operator will settle it or refund the buyer.',
  settled: 'Settled: the seller has been paid.',
  cancelled_by_buyer: 'Cancelled by the buyer; the funds were released.',
  rejected_by_seller: 'Rejected by the seller; the funds were released.',
  failed: 'The capability failed; the funds were released.',
  refunded: 'Refunded to the buyer after a dispute.',
};

/**
 * A conversation before its pick: choosing among candidates waits for the buyer; open (nothing
 * matched) is the demand at work in the market, waiting for sellers; cancelled.
 */
export type OpenPhase = 'choosing' | 'open' | 'cancelled';
const stateOfPhase: Record<OpenPhase, A2AState> = { choosing: 'input-required', open: 'working', cancelled: 'canceled' };
export const openPhases = Object.keys(stateOfPhase) as OpenPhase[];

function spelled(state: A2AState, generation: Generation): string {
  if (generation === 'v1.0') return `TASK_STATE_${state.toUpperCase().replace('-', '_')}`;
  if (generation === 'v0.1' && state === 'rejected') return 'canceled';
  return state;
}

export const a2aState = (status: TransactionStatus, generation: Generation) => spelled(stateOfStatus[status], generation);

export const conversationState = (phase: OpenPhase, generation: Generation) => spelled(stateOfPhase[phase], generation);

const endedStates: ReadonlySet<A2AState> = new Set(['completed', 'canceled', 'rejected', 'failed']);

/**
 * Whether a transaction status or conversation phase is one of A2A's terminal states (completed,
 * canceled, rejected, failed): such a task takes no more messages nor subscriptions.
 */
export function hasEnded(status: string): boolean {
  if (Object.hasOwn(stateOfStatus, status)) return endedStates.has(stateOfStatus[status as TransactionStatus]);
  return Object.hasOwn(stateOfPhase, status) && endedStates.has(stateOfPhase[status as OpenPhase]);
}

/** A stream ends once the task waits for the buyer (input-required) or can no longer change. */
export const closesStream = (status: TransactionStatus) => !['submitted', 'working'].includes(stateOfStatus[status]);

/**
 * How far along the escrow graph a status is (longest path from pending_freeze). Every
 * transition strictly increases it, so an event is news to a client exactly when its rank is
 * above the rank of the state the client last saw. Derived from the state table, never restated.
 */
const progressRank = (() => {
  const rank = new Map<TransactionStatus, number>([['pending_freeze', 0]]);
  for (let changed = true; changed;) {
    changed = false;
    for (const step of transitionTable) {
      const from = rank.get(step.from);
      if (from !== undefined && (rank.get(step.to) ?? -1) < from + 1) {
        rank.set(step.to, from + 1);
        changed = true;
      }
    }
  }
  return rank;
})();
export const rankOf = (status: TransactionStatus) => progressRank.get(status) ?? 0;

/**
 * How the caller named the task: the id shown back, the v0.1 client id when it was one, the
 * context id exactly as the client sent it (else the stored uuid is shown), and the conversation
 * the task began as.
 */
export interface TaskName {
  taskId: string;
  clientTaskId?: string;
  contextId?: string;
  conversationId?: string;
}

/** The context id a task answers with: the client's own string when it sent one. */
export const contextOf = (view: TransactionView, name: TaskName) => name.contextId ?? view.context_id;

export const nameOf = (view: TransactionView, requestedId: string): TaskName =>
  requestedId === view.id ? { taskId: view.id } : { taskId: requestedId, clientTaskId: requestedId };

/**
 * The transaction in a task's metadata. Its result is the task's artifact, not repeated here; a
 * large input is left out and named in `omitted_fields` (GET /api/v1/transactions/{id} has it),
 * so a task's answer, a batch of them and every status update of a stream stay as small as the
 * limits say, whatever the buyer sent.
 */
function marketplaceMetadata(view: TransactionView, name: TaskName) {
  const { id, status, price_ut, currency, result_payload: _payload, ...rest } = withLargeFieldsLeftOut(view, ['input']);
  return {
    marketplace: {
      transaction_id: id,
      status,
      price: price_ut,
      currency,
      ...(name.clientTaskId ? { client_task_id: name.clientTaskId } : {}),
      ...(name.conversationId ? { conversation_id: name.conversationId } : {}),
      ...rest,
    },
  };
}

// Hybrid parts carry v0.3's `kind` and v0.1's `type`, so that clients of either parse them.
export const textPart = (text: string, generation: Generation) =>
  generation === 'v1.0'
    ? { text }
    : generation === 'v0.1'
      ? { type: 'text', text }
      : generation === 'hybrid'
        ? { kind: 'text', type: 'text', text }
        : { kind: 'text', text };

export const dataPart = (data: Record<string, unknown>, generation: Generation) =>
  generation === 'v1.0'
    ? { data, mediaType: 'application/json' }
    : generation === 'v0.1'
      ? { type: 'data', data }
      : generation === 'hybrid'
        ? { kind: 'data', type: 'data', data }
        : { kind: 'data', data };

/** A message in the generation's shapes (v0.1 messages carry no ids). */
export function messageOf(message: { messageId: string; role: 'user' | 'agent'; parts: unknown[] }, generation: Generation, name: TaskName, contextId: string) {
  const { messageId, role, parts } = message;
  if (generation === 'v0.1') return { role, parts };
  if (generation === 'v1.0') return { messageId, role: role === 'user' ? 'ROLE_USER' : 'ROLE_AGENT', parts, taskId: name.taskId, contextId };
  return { kind: 'message', messageId, role, parts, taskId: name.taskId, contextId };
}

/** The agent's message for a state the transaction reached (its status message then, and a history entry later). */
export function stateMessage(transactionId: string, status: TransactionStatus, generation: Generation, name: TaskName, contextId: string) {
  return messageOf({ messageId: `${transactionId}:${status}`, role: 'agent', parts: [textPart(statusText[status], generation)] }, generation, name, contextId);
}

const statusMessage = (view: TransactionView, generation: Generation, name: TaskName) =>
  stateMessage(view.id, view.status, generation, name, contextOf(view, name));

function status(view: TransactionView, generation: Generation, name: TaskName) {
  return { state: a2aState(view.status, generation), message: statusMessage(view, generation, name), timestamp: view.updated_at };
}

/** The delivered result_payload as the task's one artifact. */
function artifact(view: TransactionView, generation: Generation) {
  if (!view.result_payload) return null;
  const common = { name: 'result', description: 'The result the seller delivered', parts: [dataPart(view.result_payload, generation)] };
  return generation === 'v0.1' ? { ...common, index: 0 } : { artifactId: `${view.id}:result`, ...common };
}

/** `history`: the task's messages already in the generation's shapes (rpc/history.ts); absent: none is answered. */
export interface TaskOptions {
  artifacts?: boolean;
  history?: unknown[];
  /** Older messages the history's byte bound left out: said in metadata.marketplace.history_cut. */
  historyCut?: number;
}

export function taskOf(view: TransactionView, generation: Generation, name: TaskName, options: TaskOptions = {}) {
  const result = artifact(view, generation);
  const artifacts = result && options.artifacts !== false ? [result] : [];
  const metadata = marketplaceMetadata(view, name);
  if (options.historyCut) Object.assign(metadata.marketplace, { history_cut: options.historyCut });
  const contextId = contextOf(view, name);
  const base = { id: name.taskId, status: status(view, generation, name), artifacts, ...(options.history ? { history: options.history } : {}), metadata };
  if (generation === 'v0.1') return { ...base, sessionId: contextId };
  if (generation === 'v1.0') return { ...base, contextId };
  if (generation === 'hybrid') return { kind: 'task', ...base, contextId, sessionId: contextId };
  return { kind: 'task', ...base, contextId };
}

/** The first event of every stream: the current task. */
export function taskEvent(view: TransactionView, generation: Generation, name: TaskName, options: TaskOptions = {}) {
  const task = taskOf(view, generation, name, options);
  return generation === 'v1.0' ? { task } : task;
}

export function statusEvent(view: TransactionView, generation: Generation, name: TaskName) {
  const final = closesStream(view.status);
  const metadata = marketplaceMetadata(view, name);
  const state = status(view, generation, name);
  if (generation === 'v0.1') return { id: name.taskId, status: state, final, metadata };
  const event = { taskId: name.taskId, contextId: contextOf(view, name), status: state, metadata };
  if (generation === 'v1.0') return { statusUpdate: event };
  return { kind: 'status-update', ...event, final, ...(generation === 'hybrid' ? { id: name.taskId } : {}) };
}

export function artifactEvent(view: TransactionView, generation: Generation, name: TaskName) {
  const result = artifact(view, generation);
  if (!result) return null;
  const metadata = marketplaceMetadata(view, name);
  if (generation === 'v0.1') return { id: name.taskId, artifact: { ...result, lastChunk: true }, metadata };
  const event = { taskId: name.taskId, contextId: contextOf(view, name), artifact: result, append: false, lastChunk: true, metadata };
  if (generation === 'v1.0') return { artifactUpdate: event };
  return { kind: 'artifact-update', ...event, ...(generation === 'hybrid' ? { id: name.taskId } : {}) };
}

/**
 * The A2A versions this server speaks (`Major.Minor`, specification 3.6.2), each with the
 * generation whose shapes it answers in; 0.2 is read as 0.3, whose shapes it already had.
 */
const generationsByVersion = new Map<string, Generation>([
  ['0.1', 'v0.1'],
  ['0.2', 'v0.3'],
  ['0.3', 'v0.3'],
  ['1.0', 'v1.0'],
]);
export const supportedA2AVersions = [...generationsByVersion.keys()];

/** One `Major.Minor` value -> its generation, or undefined when this server does not speak it. */
function generationOfVersion(value: string): Generation | undefined {
  const match = /^v?(\d{1,4})(?:\.(\d{1,4}))?(?:\.\d{1,4})?$/i.exec(value);
  return match ? generationsByVersion.get(`${Number(match[1])}.${Number(match[2] ?? 0)}`) : undefined;
}

/**
 * `A2A-Version` header -> the generation whose shapes the shared `tasks/*` names answer with
 * (none: hybrid), or undefined for a version this server does not speak. A patch number or a
 * missing minor is read as the `Major.Minor` it names ("1.0.1" and "1" are 1.0). A header sent
 * twice arrives joined by a comma ("1.0, 1.0": a fetch wrapper adding what the SDK already set);
 * it names one version when every part names the same one.
 */
export function generationOfHeader(header: string | undefined): Generation | undefined {
  const parts = (header ?? '').split(',').map((part) => part.trim());
  if (parts.every((part) => part === '')) return 'hybrid';
  const generations = new Set(parts.map(generationOfVersion));
  return generations.size === 1 ? [...generations][0] : undefined;
}

/**
 * The version a request names: its `A2A-Version` header, else an `A2A-Version` query parameter of
 * its URL (specification 3.6.1 lets a client send the version either way); undefined when neither
 * names one.
 */
export function requestedVersionOf(request: IncomingMessage): string | undefined {
  const header = request.headers['a2a-version'];
  if (typeof header === 'string' && header.trim() !== '') return header;
  const query = request.url?.indexOf('?') ?? -1;
  const parameter = query < 0 ? null : new URLSearchParams(request.url!.slice(query + 1)).get('A2A-Version');
  return parameter?.trim() ? parameter : undefined;
}

/**
 * What a call's context learns from its `A2A-Version`. A version this server does not speak is
 * refused call by call (-32009, rpc/dispatch.ts), echoing at most `a2aVersionEchoLengthMax`
 * characters of it; meanwhile it is answered as the newest generation, which is what a client
 * newer than this server expects most nearly.
 */
export function versionContextOf(requested: string | undefined): { headerGeneration: Generation; unsupportedVersion?: string } {
  const generation = generationOfHeader(requested);
  if (generation !== undefined) return { headerGeneration: generation };
  return { headerGeneration: 'v1.0', unsupportedVersion: requested!.trim().slice(0, limits.a2aVersionEchoLengthMax) };
}
