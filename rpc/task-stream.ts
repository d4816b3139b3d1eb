import type { Principal } from '../src/engine/common/index.ts';
import type { Engine } from '../src/engine/index.ts';
import type { StreamEvent, StreamListener, Subscription } from '../src/events/stream-types.ts';
import type { AgentBudgetView } from '../src/schemas/agent-budgets.ts';
import type { OmittedField, TransactionEventView, TransactionView } from '../src/schemas/transactions.ts';
import type { A2ATask } from '../src/engine/a2a/index.ts';
import { type Generation, type TaskName, artifactEvent, closesStream, rankOf, statusEvent, taskEvent } from './shapes.ts';
import { type RenderOptions, historyOf, renderTaskEvent } from './tasks.ts';

/**
 * A streaming method's answer, produced by the method and delivered by the transport (SSE over
 * HTTP, notifications over WebSocket). A task without a transaction (a conversation before its
 * pick) is a stream of one event, the task; otherwise the transaction's states follow. With
 * `task`, the first event carries the task's history. A send by a key with an agent budget gives
 * `agentBudget`: the first event carries what is left in metadata.marketplace.agent_budget, as a
 * send's answer does (read once the send has charged it; later events do not repeat it).
 */
export class StreamStart {
  readonly transactionId: string | null;
  readonly view: TransactionView | null;

  constructor(
    readonly name: TaskName,
    readonly generation: Generation,
    readonly task: A2ATask,
    readonly options: RenderOptions = {},
    readonly agentBudget: AgentBudgetView | null = null,
  ) {
    this.view = task.transaction;
    this.transactionId = task.transaction?.id ?? null;
  }
}

/** The first event with the send's agent budget in its marketplace metadata (a v1.0 event wraps the task). */
function withAgentBudget<T>(event: T, budget: AgentBudgetView | null): T {
  if (!budget) return event;
  const wrapped = event as { task?: unknown };
  const task = (wrapped.task ?? event) as { metadata?: { marketplace?: Record<string, unknown> } };
  const marketplace = task.metadata?.marketplace;
  if (marketplace) marketplace.agent_budget = budget;
  return event;
}

export type StreamEndReason = 'slow_consumer' | 'shutdown' | 'error';

/** Where a task stream writes: one JSON-RPC `result` per event. */
export interface TaskStreamSink {
  /** false when the consumer is gone or too slow: the stream then stops. */
  emit(result: unknown, sequence: string | undefined, final: boolean): boolean;
  /** Called once when the stream is over (after the final event, or with why it was cut short). */
  end(reason?: StreamEndReason): void;
}

/**
 * One task's stream, on top of the engine's transaction subscription, as one object that is also
 * the subscription's listener (no closure of its own, like the REST streams: a client may watch
 * many tasks at once):
 *
 * 1. The first event is the current task. Without `afterSequence` the subscription replays the
 *    transaction's history from its start and the task is sent with the sequence of the event
 *    that produced the state the method saw, so its `id:` is a valid resume point. With
 *    `afterSequence` (Last-Event-ID) the current task is sent at once, without an id.
 * 2. Then every later state change becomes a status-update (preceded by an artifact-update when
 *    a result was delivered), carrying its transaction sequence. Events the current task already
 *    reflects are skipped by progress rank, so nothing is ever shown twice or out of order.
 * 3. The stream ends after a terminal or input-required state.
 */
class TaskStream implements StreamListener {
  private current: TransactionView | null = null;
  subscription: Subscription | null = null;
  finished = false;
  /** Work waiting for a read (an omitted field), in call order; null while nothing waits. */
  private pending: Promise<void> | null = null;
  /** The omitted fields already read: neither input nor result_payload changes once set. */
  private filled: Map<OmittedField['field'], unknown> | null = null;

  constructor(
    private readonly engine: Engine,
    private readonly principal: Principal,
    private readonly start: StreamStart & { view: TransactionView },
    private readonly sink: TaskStreamSink,
  ) {}

  close() {
    this.finish();
  }

  private finish(reason?: StreamEndReason) {
    if (this.finished) return;
    this.finished = true;
    this.subscription?.close();
    this.sink.end(reason);
  }

  private emit(result: unknown, sequence: string | undefined, final: boolean) {
    if (this.finished) return;
    if (!this.sink.emit(result, sequence, final)) this.finish('slow_consumer');
    else if (final) this.finish();
  }

  sendTask(view: TransactionView, sequence: string | undefined) {
    const { task, generation, name, options, agentBudget } = this.start;
    this.current = view;
    const history = historyOf(task, view, generation, name, options.historyLength);
    const event = taskEvent(view, generation, name, { history: history.messages, historyCut: history.cut });
    this.emit(withAgentBudget(event, agentBudget), sequence, closesStream(view.status));
  }

  private sendUpdate(view: TransactionView, sequence: string) {
    const { generation, name } = this.start;
    const delivered = view.result_payload && !this.current?.result_payload ? artifactEvent(view, generation, name) : null;
    this.current = view;
    // Only the last event of a change carries the id: resuming after it cannot skip its sibling.
    if (delivered) this.emit(delivered, undefined, false);
    this.emit(statusEvent(view, generation, name), sequence, closesStream(view.status));
  }

  /**
   * An event leaves a large result_payload out; the stream reads it from the transaction once, so
   * the client still gets the delivered artifact. A large input stays left out, named in
   * omitted_fields: the task's metadata would leave it out anyway (rpc/shapes.ts).
   */
  private async complete(view: TransactionEventView): Promise<TransactionView> {
    const omitted = view.omitted_fields ?? [];
    const result = omitted.find(({ field }) => field === 'result_payload');
    if (!result) return view;
    const filled = (this.filled ??= new Map());
    if (!filled.has('result_payload')) filled.set('result_payload', (await this.engine.transactions.completeView(this.principal, view)).result_payload);
    const stillOmitted = omitted.filter((entry) => entry !== result);
    const { omitted_fields: _omitted, ...rest } = view;
    return { ...rest, result_payload: filled.get('result_payload'), ...(stillOmitted.length > 0 ? { omitted_fields: stillOmitted } : {}) };
  }

  private handle(view: TransactionView, sequence: string) {
    if (this.finished) return;
    if (!this.current) {
      // The event that produced the state the method saw (statuses never repeat in a transaction).
      if (rankOf(view.status) >= rankOf(this.start.view.status)) this.sendTask(view, sequence);
    } else if (rankOf(view.status) > rankOf(this.current.status)) {
      this.sendUpdate(view, sequence);
    }
  }

  private failed(error: unknown) {
    // Delivery may run inside the fan-out loop: a failure here ends this stream only.
    this.engine.dependencies.log.error('json-rpc task stream failed', { error });
    this.finish('error');
  }

  /**
   * Runs work in call order: synchronously while nothing is pending (the common case costs no
   * promise), and behind the pending work once some had to wait for a read.
   */
  private inOrder(work: () => Promise<void> | void) {
    let next: Promise<void>;
    if (this.pending) {
      next = this.pending.then(work);
    } else {
      try {
        const result = work();
        if (!result) return;
        next = result;
      } catch (error) {
        this.failed(error);
        return;
      }
    }
    const settled: Promise<void> = next
      .catch((error: unknown) => this.failed(error))
      .finally(() => {
        if (this.pending === settled) this.pending = null;
      });
    this.pending = settled;
  }

  onEvent({ sequence, event }: StreamEvent): boolean {
    const view = event.data.transaction as TransactionEventView | undefined;
    if (this.finished || !view) return true;
    if (view.omitted_fields?.some(({ field }) => field === 'result_payload'))
      this.inOrder(() => this.complete(view).then((full) => this.handle(full, sequence)));
    else this.inOrder(() => this.handle(view, sequence));
    return true;
  }

  /**
   * The history before the current state was deleted by the retention job: without it the task
   * would never be sent, so the task as the method read it is sent instead (no id). A resumed
   * stream (Last-Event-ID) has sent the current task first already.
   */
  onTooOld() {
    this.inOrder(() => {
      if (!this.current && !this.finished) this.sendTask(this.start.view, undefined);
    });
  }

  onEnd(reason: StreamEndReason) {
    this.inOrder(() => {
      // Cut short before the first event: the client still gets the task as the method saw it.
      if (!this.current && !this.finished) this.sendTask(this.start.view, undefined);
      this.finish(reason);
    });
  }
}

/**
 * Opens a task's stream (see TaskStream). A task without a transaction (a conversation before its
 * pick) is a stream of one event, the task: nothing more can happen to it without the buyer's
 * next message.
 */
export async function openTaskStream(engine: Engine, principal: Principal, start: StreamStart, afterSequence: string | undefined, sink: TaskStreamSink) {
  if (start.transactionId === null || start.view === null) {
    const event = withAgentBudget(renderTaskEvent(start.task, start.generation, start.name, start.options), start.agentBudget);
    if (sink.emit(event, undefined, true)) sink.end();
    else sink.end('slow_consumer');
    return { close: () => {} };
  }
  const stream = new TaskStream(engine, principal, start as StreamStart & { view: TransactionView }, sink);
  if (afterSequence !== undefined) stream.sendTask(start.view, undefined);
  if (stream.finished) return stream;
  stream.subscription = await engine.streams.subscribeTransaction(principal, start.transactionId, { afterSequence }, stream);
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- finished is set by a callback that may have run during the subscribe
  if (stream.finished) stream.subscription.close();
  return stream;
}
