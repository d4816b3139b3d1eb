import { transactionStatuses } from '../src/domain/escrow.ts';
import { contextIdOf } from '../src/domain/a2a.ts';
import { AppError } from '../src/errors.ts';
import type { Engine } from '../src/engine/index.ts';
import { limits } from '../src/limits.ts';
import type { RpcContext } from './context.ts';
import { listTasks as listTasksParams, parse } from './params.ts';
import { a2aState, conversationState, openPhases } from './shapes.ts';
import { nameFor, renderTask } from './tasks.ts';

/**
 * A2A v1.0 ListTasks over the engine's task list (decisions sections "A2A protocol surface" and
 * "A2A conformance"): the caller's conversations and transactions, each once. Every filter of the
 * protocol is applied, none is ignored:
 *
 * - `status`: a TaskState; one state may name several phases (WORKING is an accepted or disputed
 *   transaction or an open conversation, SUBMITTED is pending_freeze or frozen, INPUT_REQUIRED is
 *   delivered or a conversation choosing among candidates, CANCELED is cancelled_by_buyer,
 *   refunded or a cancelled conversation), AUTH_REQUIRED names none (an empty list),
 *   UNSPECIFIED or absent: every status.
 * - `contextId`: the tasks of one context; any non-empty string is accepted.
 * - `statusTimestampAfter`: tasks whose status changed at or after that instant.
 * - `pageSize` 1..100 (default 50), `pageToken` from `nextPageToken`.
 * - `includeArtifacts`: without it the `artifacts` field is left out, as the protocol requires.
 * - `historyLength` is passed on to the task rendering.
 *
 * Tasks come newest status change first. `pageSize` in the answer is the number of tasks on this
 * page (what the conformance kit checks); `nextPageToken` is empty on the last page.
 */

/** The phases a v1.0 TaskState stands for (UNSPECIFIED: undefined, no filter). */
function phasesOf(state: string | undefined): string[] | undefined {
  if (!state || state === 'TASK_STATE_UNSPECIFIED') return undefined;
  return [
    ...transactionStatuses.filter((status) => a2aState(status, 'v1.0') === state),
    ...openPhases.filter((phase) => conversationState(phase, 'v1.0') === state),
  ];
}

/** The engine's cursor refusal, said about the parameter the client actually sent. */
function asPageTokenError(error: unknown): unknown {
  if (!(error instanceof AppError) || error.errorName !== 'validation_error') return error;
  return new AppError('validation_error', 'request failed validation', {
    errors: [{ path: 'params.pageToken', message: 'not a page token this service issued' }],
  });
}

export async function listTasks(engine: Engine, params: unknown, context: RpcContext) {
  const input = parse(listTasksParams, params);
  // A client's context id maps to the stored uuid as it did when the task was sent (domain/a2a.ts).
  const contextId = input.contextId ? contextIdOf(input.contextId) : undefined;
  const historyLength = input.historyLength ?? undefined;
  const page = await engine.a2a
    .list(context.principal, {
      phases: phasesOf(input.status ?? undefined),
      ...(contextId ? { context_id: contextId } : {}),
      ...(input.statusTimestampAfter ? { updated_since: input.statusTimestampAfter } : {}),
      page_size: input.pageSize ?? limits.a2aListTasksPageSizeDefault,
      cursor: input.pageToken || undefined,
      history_length: historyLength,
    })
    .catch((error: unknown) => {
      throw input.pageToken ? asPageTokenError(error) : error;
    });
  const includeArtifacts = input.includeArtifacts === true;
  // One page's histories share one bound, so pageSize x historyLength cannot build gigabytes.
  const historyBytesMax = Math.min(limits.a2aHistoryAnswerBytesMax, Math.floor(limits.a2aListHistoryBytesMax / Math.max(1, page.items.length)));
  const tasks = page.items.map(({ id, task }) => {
    const rendered = renderTask(task, 'v1.0', nameFor(task, id), { artifacts: includeArtifacts, historyLength, historyBytesMax });
    const { artifacts, ...rest } = rendered;
    return includeArtifacts ? { ...rest, artifacts } : rest;
  });
  return { tasks, nextPageToken: page.next_cursor ?? '', pageSize: tasks.length, totalSize: page.total };
}
