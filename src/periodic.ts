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

/**
 * Runs `pass` at once when kicked (after a commit that left work), again while a pass reports
 * work done, and once more when kicked during a run, never two passes at a time in one instance.
 * A failed pass is logged; the periodic run of the same work picks up what it left.
 */
export function kickedRunner(name: string, pass: () => Promise<boolean>, log: Logger) {
  let running: Promise<void> | null = null;
  let kickedAgain = false;
  function kick(): void {
    if (running) {
      kickedAgain = true;
      return;
    }
    running = (async () => {
      do {
        kickedAgain = false;
        while (await pass());
        // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- kickedAgain is set by kick() while the pass awaits
      } while (kickedAgain);
    })()
      .catch((error: unknown) => log.error(`${name} failed; the periodic run retries`, { error }))
      .finally(() => {
        running = null;
        // A kick that came after the last pass but before this point found `running` still set:
        // it would be lost without this (a pass it wanted would wait for the periodic run).
        if (kickedAgain) kick();
      });
  }
  /** Resolves when no pass is in progress on this instance. */
  async function idle(): Promise<void> {
    while (running) await running;
  }
  return { kick, idle };
}
