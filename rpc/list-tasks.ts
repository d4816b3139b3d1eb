import { type TransactionStatus, transactionStatuses } from '../src/domain/escrow.ts';
import { isUuid } from '../src/domain/ids.ts';
import { AppError } from '../src/errors.ts';
import type { Engine } from '../src/engine/index.ts';
import { limits } from '../src/limits.ts';
import type { RpcContext } from './methods.ts';
import { listTasks as listTasksParams, parse } from './params.ts';
import { a2aState, taskOf } from './shapes.ts';

/**
 * A2A v1.0 ListTasks over the engine's one transaction list (decisions section "A2A protocol
 * surface"). Every filter of the protocol is applied, none is ignored:
 *
 * - `status`: a TaskState; one state may name several marketplace statuses (WORKING is accepted
 *   or disputed, SUBMITTED is pending_freeze or frozen, CANCELED is cancelled_by_buyer or
 *   refunded), AUTH_REQUIRED names none (an empty list), UNSPECIFIED or absent: every status.
 * - `contextId`: the tasks of one context; any non-empty string is accepted.
 * - `statusTimestampAfter`: tasks whose status changed at or after that instant.
 * - `pageSize` 1..100 (default 50), `pageToken` from `nextPageToken`.
 * - `includeArtifacts`: without it the `artifacts` field is left out, as the protocol requires.
 * - `historyLength` is passed on to the task rendering.
 *
 * Tasks come newest status change first. `pageSize` in the answer is the number of tasks on this
 * page (what the conformance kit checks); `nextPageToken` is empty on the last page.
 */

/** The marketplace statuses a v1.0 TaskState stands for (UNSPECIFIED: undefined, no filter). */
function statusesOf(state: string | undefined): TransactionStatus[] | undefined {
  if (!state || state === 'TASK_STATE_UNSPECIFIED') return undefined;
  return transactionStatuses.filter((status) => a2aState(status, 'v1.0') === state);
}

/**
 * The stored context id a client's contextId names, or null when it can name none. Today every
 * stored context id is a UUID; the free-text context ids of the conversation work map here.
 */
function storedContextId(contextId: string): string | null {
  return isUuid(contextId) ? contextId.toLowerCase() : null;
}

/** The engine's cursor refusal, said about the parameter the client actually sent. */
function asPageTokenError(error: unknown): unknown {
  if (!(error instanceof AppError) || error.errorName !== 'validation_error') return error;
  return new AppError('validation_error', 'request failed validation', { errors: [{ path: 'params.pageToken', message: 'not a page token this service issued' }] });
}

export async function listTasks(engine: Engine, params: unknown, context: RpcContext) {
  const input = parse(listTasksParams, params);
  const contextId = input.contextId ? storedContextId(input.contextId) : undefined;
  if (contextId === null) return { tasks: [], nextPageToken: '', pageSize: 0, totalSize: 0 };
  const page = await engine.transactions
    .list(context.principal, {
      role: '',
      statuses: statusesOf(input.status ?? undefined),
      ...(contextId ? { context_id: contextId } : {}),
      ...(input.statusTimestampAfter ? { updated_since: input.statusTimestampAfter } : {}),
      order: 'updated',
      page: 1,
      page_size: input.pageSize ?? limits.a2aListTasksPageSizeDefault,
      cursor: input.pageToken || undefined,
    })
    .catch((error: unknown) => {
      throw input.pageToken ? asPageTokenError(error) : error;
    });
  const includeArtifacts = input.includeArtifacts === true;
  const tasks = page.items.map((view) => {
    const { artifacts, ...task } = taskOf(view, 'v1.0', { taskId: view.id }, { artifacts: includeArtifacts, historyLength: input.historyLength ?? undefined });
    return includeArtifacts ? { ...task, artifacts } : task;
  });
  return { tasks, nextPageToken: page.next_cursor ?? '', pageSize: tasks.length, totalSize: page.total };
}
