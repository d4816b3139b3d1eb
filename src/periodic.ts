import type { Logger } from './logger.ts';

/**
 * Runs a background job every `intervalMs` without ever overlapping two runs in one instance.
 * A failed run is logged and the next one happens as scheduled. `idle()` waits for a run in
 * progress, so shutdown can let it finish.
 */
export function periodic(name: string, job: () => Promise<unknown>, log: Logger) {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<unknown> | null = null;

  function start(intervalMs: number) {
    stop();
    timer = setInterval(() => {
      if (running) return;
      running = job()
        .catch((error: unknown) => log.error(`${name} failed`, { error }))
        .finally(() => {
          running = null;
        });
    }, intervalMs);
    timer.unref();
  }

  function stop() {
    if (timer) clearInterval(timer);
    timer = null;
  }

  return { start, stop, idle: () => running ?? Promise.resolve() };
}
