/**
 * Lookups of the same key that overlap share one: while a load of `key` is running, another caller
 * of the same key waits for its answer instead of sending its own query. A storm of clients
 * arriving with the same credentials at once (thousands of streams reconnecting after a restart)
 * then costs the database one lookup per credential, not one per client, and the server does not
 * hold thousands of queries' worth of objects while they wait for a pooled connection.
 *
 * Two rules keep a shared answer as true as the caller's own would be:
 * - A caller joins only a load of the same `generation`. The identity engine counts revocations
 *   heard: a load that began before a revocation may have read the key before it was revoked, so
 *   a caller after the revocation starts its own.
 * - Only an answer `shareable` says yes to is handed to the callers that joined. A refusal
 *   ("no such key") may have been read just before the row was written, which the joining caller
 *   may already have been told about: it looks again for itself, as it would have alone.
 *
 * Nothing is kept once a load ends: caching answers is TtlCache's work.
 */
export class SharedLoads<V> {
  private readonly running = new Map<string, { generation: number; answer: Promise<V> }>();

  constructor(private readonly shareable: (value: V) => boolean) {}

  async load(key: string, generation: number, load: () => PromiseLike<V>): Promise<V> {
    const current = this.running.get(key);
    if (current && current.generation === generation) {
      const value = await current.answer;
      return this.shareable(value) ? value : load();
    }
    // One promise for everyone: a query builder is a thenable that runs its query again at every
    // `then`, so each caller awaiting the builder itself would send its own query after all.
    const answer = Promise.resolve(load());
    const entry = { generation, answer };
    this.running.set(key, entry);
    try {
      return await answer;
    } finally {
      if (this.running.get(key) === entry) this.running.delete(key);
    }
  }

  /** Loads running now are not joined any more (their own callers still get their answers). */
  forget(key: string) {
    this.running.delete(key);
  }

  forgetAll() {
    this.running.clear();
  }
}
