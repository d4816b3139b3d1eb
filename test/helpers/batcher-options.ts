import type { BatcherOptions } from '../../src/engine/money/index.ts';

/**
 * A batcher's options for unit tests: one batch in flight, no linger and no wait for the callers
 * answered, so a test decides when statements leave; each test turns on what it checks.
 */
export function batcherOptions(overrides: Partial<BatcherOptions> = {}): BatcherOptions {
  return { changesMax: 64, inFlightMax: 1, lingerMs: 0, rejoinWaitMs: 0, rejoinBelowChanges: 16, ...overrides };
}
