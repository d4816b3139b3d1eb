import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The request being served, for code that runs on its behalf without being handed it: the logger
 * puts its id on every line written while serving it (an "unexpected error" line included).
 */
export interface RequestContext {
  requestId: string;
}

export const requestContext = new AsyncLocalStorage<RequestContext>();
