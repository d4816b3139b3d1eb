import type { Principal } from '../src/engine/common/index.ts';
import type { Engine } from '../src/engine/index.ts';
import type { StreamEvent, Subscription } from '../src/events/stream-types.ts';
import type { OmittedField, TransactionEventView, TransactionView } from '../src/schemas/transactions.ts';
import type { A2ATask } from '../src/engine/a2a/index.ts';
import { type Generation, type TaskName, artifactEvent, closesStream, rankOf, statusEvent, taskEvent } from './shapes.ts';
import { type RenderOptions, historyOf, renderTaskEvent } from './tasks.ts';

/**
 * A streaming method's answer, produced by the method and delivered by the transport (SSE over
 * HTTP, notifications over WebSocket). A task without a transaction (a conversation before its
 * pick) is a stream of one event, the task; otherwise the transaction's states follow. With
 * `task`, the first event carries the task's history.
 */
export class StreamStart {
  readonly transactionId: string | null;
  readonly view: TransactionView | null;

  constructor(
    readonly name: TaskName,
    readonly generation: Generation,
    readonly task: A2ATask,
    readonly options: RenderOptions = {},
  ) {
    this.view = task.transaction;
    this.transactionId = task.transaction?.id ?? null;
  }
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
 * An event leaves a large input or result_payload out; the stream reads it from the transaction
 * once (neither changes once set), so the client still gets the whole task and the delivered
 * artifact.
 */
function completerOf(engine: Engine, principal: Principal) {
  const filled = new Map<OmittedField['field'], unknown>();
  return async (view: TransactionEventView): Promise<TransactionView> => {
    const omitted = view.omitted_fields ?? [];
    if (omitted.some(({ field }) => !filled.has(field))) {
      const full = await engine.transactions.completeView(principal, view);
      for (const { field } of omitted) filled.set(field, full[field]);
    }
    const { omitted_fields: _omitted, ...rest } = view;
    return { ...rest, ...Object.fromEntries(omitted.map(({ field }) => [field, filled.get(field)])) };
  };
}

/**
 * Runs work in call order: synchronously while nothing is pending (the common case costs no
 * promise), and behind the pending work once some had to wait for a read.
 */
function orderedRunner(failed: (error: unknown) => void) {
  let pending: Promise<void> | null = null;
  return (work: () => Promise<void> | void) => {
    let next: Promise<void>;
    if (pending) {
      next = pending.then(work);
    } else {
      try {
        const result = work();
        if (!result) return;
        next = result;
      } catch (error) {
        failed(error);
        return;
      }
    }
    const settled: Promise<void> = next.catch(failed).finally(() => {
      if (pending === settled) pending = null;
    });
    pending = settled;
  };
}

/**
 * One task's stream, on top of the engine's transaction subscription:
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
export async function openTaskStream(engine: Engine, principal: Principal, start: StreamStart, afterSequence: string | undefined, sink: TaskStreamSink) {
  const { generation, name } = start;
  if (start.transactionId === null || start.view === null) {
    // Nothing more can happen to it without the buyer's next message: it waits for input, or ended.
    if (sink.emit(renderTaskEvent(start.task, generation, name, start.options), undefined, true)) sink.end();
    else sink.end('slow_consumer');
    return { close: () => {} };
  }
  const startView = start.view;
  const transactionId = start.transactionId;
  let current: TransactionView | null = null;
  let subscription: Subscription | null = null;
  let finished = false;

  const finish = (reason?: StreamEndReason) => {
    if (finished) return;
    finished = true;
    subscription?.close();
    sink.end(reason);
  };
  const emit = (result: unknown, sequence: string | undefined, final: boolean) => {
    if (finished) return;
    if (!sink.emit(result, sequence, final)) finish('slow_consumer');
    else if (final) finish();
  };
  const sendTask = (view: TransactionView, sequence: string | undefined) => {
    current = view;
    const history = historyOf(start.task, view, generation, name, start.options.historyLength);
    emit(taskEvent(view, generation, name, { history: history.messages, historyCut: history.cut }), sequence, closesStream(view.status));
  };
  const sendUpdate = (view: TransactionView, sequence: string) => {
    const delivered = view.result_payload && !current?.result_payload ? artifactEvent(view, generation, name) : null;
    current = view;
    // Only the last event of a change carries the id: resuming after it cannot skip its sibling.
    if (delivered) emit(delivered, undefined, false);
    emit(statusEvent(view, generation, name), sequence, closesStream(view.status));
  };

  const complete = completerOf(engine, principal);
  const handle = (view: TransactionView, sequence: string) => {
    if (finished) return;
    if (!current) {
      // The event that produced the state the method saw (statuses never repeat in a transaction).
      if (rankOf(view.status) >= rankOf(startView.status)) sendTask(view, sequence);
    } else if (rankOf(view.status) > rankOf(current.status)) {
      sendUpdate(view, sequence);
    }
  };
  const failed = (error: unknown) => {
    // Delivery may run inside the fan-out loop: a failure here ends this stream only.
    engine.dependencies.log.error('json-rpc task stream failed', { error });
    finish('error');
  };
  const inOrder = orderedRunner(failed);

  if (afterSequence !== undefined) sendTask(startView, undefined);
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- finished is set by a callback that may have run during the awaits above
  if (finished) return { close: () => {} };
  const onEvent = ({ sequence, event }: StreamEvent) => {
    const view = event.data.transaction as TransactionEventView | undefined;
    if (finished || !view) return true;
    inOrder(() => (view.omitted_fields ? complete(view).then((full) => handle(full, sequence)) : handle(view, sequence)));
    return true;
  };
  subscription = await engine.streams.subscribeTransaction(
    principal,
    transactionId,
    { afterSequence },
    {
      onEvent,
      // The history before the current state was deleted by the retention job: without it the
      // task would never be sent, so the task as the method read it is sent instead (no id).
      // A resumed stream (Last-Event-ID) has sent the current task first already.
      onTooOld: () =>
        inOrder(() => {
          if (!current && !finished) sendTask(startView, undefined);
        }),
      onEnd: (reason) =>
        inOrder(() => {
          // Cut short before the first event: the client still gets the task as the method saw it.
          if (!current && !finished) sendTask(startView, undefined);
          finish(reason);
        }),
    },
  );
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- finished is set by a callback that may have run during the subscribe
  if (finished) subscription.close();
  return { close: () => finish() };
}
