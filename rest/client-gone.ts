import type { Response } from 'express';

/**
 * A signal that aborts when the client goes away before its answer was sent, for handlers that
 * wait on the outside world on the client's behalf (a language model): nobody would read the
 * answer, so the call stops costing tokens and a connection. Made only by the handlers that need
 * it, so other requests pay nothing for it.
 */
export function clientGoneSignal(response: Response): AbortSignal {
  const controller = new AbortController();
  response.once('close', () => {
    if (!response.writableFinished) controller.abort(new Error('the client disconnected'));
  });
  return controller.signal;
}
