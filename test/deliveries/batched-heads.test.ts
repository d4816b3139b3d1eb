import { afterEach, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.ts';
import { batchedHeads } from '../../src/events/sources.ts';
import { limits } from '../../src/limits.ts';

/**
 * The heads of streams opening together are read together (events/sources.ts batchedHeads). The
 * database is a stand-in that records each read's owners and answers when the test lets it, from
 * the heads as they are when it answers.
 */
const [alice, bob, carol] = ['00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-00000000000b', '00000000-0000-4000-8000-00000000000c'];

function stubDatabase(heads: Map<string, number>) {
  const reads: string[][] = [];
  const waiting: (() => void)[] = [];
  let failing = false;
  const db = (() => ({
    whereIn: (_column: string, owners: string[]) => ({
      select: async () => {
        reads.push(owners);
        await new Promise<void>((resolve) => waiting.push(resolve));
        if (failing) throw new Error('connection refused');
        return owners.filter((owner) => heads.has(owner)).map((owner) => ({ owner_user_id: owner, last_sequence: String(heads.get(owner)) }));
      },
    }),
  })) as unknown as Database;
  return {
    db,
    reads,
    /** Answers every read sent so far. */
    answer: () => waiting.splice(0).forEach((resolve) => resolve()),
    failing: (value: boolean) => (failing = value),
  };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));
const partMaxBefore = limits.streamHeadsPerQueryMax;
afterEach(() => {
  (limits as { streamHeadsPerQueryMax: number }).streamHeadsPerQueryMax = partMaxBefore;
});

describe('heads of streams opening together', () => {
  it('are read in one query, each stream getting its own user head (0 for a user without events)', async () => {
    const stub = stubDatabase(
      new Map([
        [alice, 7],
        [bob, 3],
      ]),
    );
    const head = batchedHeads(stub.db, 'event_streams');
    const asked = [head(alice), head(bob), head(alice.toUpperCase()), head(carol), head(alice)];
    await turn();
    stub.answer();
    expect(await Promise.all(asked)).toEqual([7n, 3n, 7n, 0n, 7n]);
    expect(stub.reads).toEqual([[alice, bob, carol]]);
  });

  it('asked while a read is in the database go in the next read, never in the one already sent', async () => {
    const heads = new Map([[alice, 1]]);
    const stub = stubDatabase(heads);
    const head = batchedHeads(stub.db, 'event_streams');
    const first = head(alice);
    await turn();
    // Registered after the first read was sent: an event committed now must be behind its head.
    heads.set(alice, 2);
    const second = head(alice);
    stub.answer();
    expect(await first).toBe(2n);
    await turn();
    heads.set(alice, 3);
    stub.answer();
    expect(await second).toBe(3n);
    expect(stub.reads).toEqual([[alice], [alice]]);
  });

  it('are split into parts of at most streamHeadsPerQueryMax owners, all sent at once', async () => {
    (limits as { streamHeadsPerQueryMax: number }).streamHeadsPerQueryMax = 2;
    const stub = stubDatabase(
      new Map([
        [alice, 1],
        [bob, 2],
        [carol, 3],
      ]),
    );
    const head = batchedHeads(stub.db, 'event_streams');
    const asked = [head(alice), head(bob), head(carol)];
    await turn();
    // Both parts are in the database before either answers.
    expect(stub.reads).toEqual([[alice, bob], [carol]]);
    stub.answer();
    expect(await Promise.all(asked)).toEqual([1n, 2n, 3n]);
  });

  it('whose read fails all get its error, and the next stream is read again', async () => {
    const stub = stubDatabase(new Map([[alice, 4]]));
    const head = batchedHeads(stub.db, 'event_streams');
    const failed = [head(alice), head(bob)];
    await turn();
    stub.failing(true);
    stub.answer();
    for (const asked of failed) await expect(asked).rejects.toThrow('connection refused');
    stub.failing(false);
    const later = head(alice);
    await turn();
    stub.answer();
    expect(await later).toBe(4n);
  });
});
