import { randomUUID } from 'node:crypto';
import type { EventView, Outgoing, TaskView } from './flows.ts';

/**
 * Views of the objects @a2a-js/sdk 0.2.x and 0.3.x hand back: both generations spell parts
 * `{kind: ...}` and events `kind: 'task' | 'status-update' | 'artifact-update'`. The types are
 * structural, so each SDK's own Task and event types fit them unchanged.
 */
interface KindPart {
  kind: string;
  text?: string;
  data?: unknown;
}

interface KindMessage {
  role: string;
  parts: KindPart[];
}

interface KindTask {
  kind: 'task';
  id: string;
  contextId: string;
  status: { state: string; message?: KindMessage };
  artifacts?: { parts: KindPart[] }[];
  history?: KindMessage[];
  metadata?: Record<string, unknown>;
}

type KindEvent =
  | KindTask
  | { kind: 'message'; taskId?: string; role: string; parts: KindPart[] }
  | { kind: 'status-update'; taskId: string; status: { state: string }; metadata?: Record<string, unknown> }
  | { kind: 'artifact-update'; taskId: string; artifact: { parts: KindPart[] } };

export const textsOf = (parts: KindPart[] | undefined) => (parts ?? []).flatMap((part) => (part.kind === 'text' ? [part.text ?? ''] : []));
export const dataOf = (parts: KindPart[] | undefined) => (parts ?? []).flatMap((part) => (part.kind === 'data' ? [part.data] : []));

const marketplaceOf = (metadata: Record<string, unknown> | undefined) => (metadata?.marketplace ?? {}) as Record<string, unknown>;

/** A send answers a Task or a Message; the market always answers a Task. */
export function viewOfKindTask(result: { kind: string }): TaskView {
  if (result.kind !== 'task') throw new Error(`expected a task, the client read a ${result.kind}: ${JSON.stringify(result)}`);
  const task = result as KindTask;
  return {
    id: task.id,
    contextId: task.contextId,
    state: task.status.state,
    marketplace: marketplaceOf(task.metadata),
    texts: textsOf(task.status.message?.parts),
    data: dataOf(task.status.message?.parts),
    artifactData: (task.artifacts ?? []).flatMap((artifact) => dataOf(artifact.parts)),
    history: task.history?.map((message) => ({ role: message.role, texts: textsOf(message.parts), data: dataOf(message.parts) })),
  };
}

export function viewOfKindEvent(event: { kind: string }): EventView {
  const known = event as KindEvent;
  switch (known.kind) {
    case 'task':
      return { kind: 'status', taskId: known.id, state: known.status.state, marketplace: marketplaceOf(known.metadata) };
    case 'status-update':
      return { kind: 'status', taskId: known.taskId, state: known.status.state, marketplace: marketplaceOf(known.metadata) };
    case 'artifact-update':
      return { kind: 'artifact', taskId: known.taskId, artifactData: dataOf(known.artifact.parts) };
    case 'message':
    default:
      throw new Error(`unexpected stream event: ${JSON.stringify(event)}`);
  }
}

/** The message params of message/send and message/stream, as an agent builds them. */
export function kindMessage(message: Outgoing) {
  const parts = [
    ...(message.text !== undefined ? [{ kind: 'text' as const, text: message.text }] : []),
    ...(message.data ? [{ kind: 'data' as const, data: message.data }] : []),
  ];
  return {
    message: {
      kind: 'message' as const,
      messageId: randomUUID(),
      role: 'user' as const,
      parts,
      ...(message.taskId ? { taskId: message.taskId } : {}),
      ...(message.contextId ? { contextId: message.contextId } : {}),
    },
  };
}
