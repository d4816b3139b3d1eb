import type { Party } from './workload.ts';
import type { Instance } from './servers.ts';

/**
 * Subscribers of the chaos run: each follows one user's event stream (SSE) on whichever instance
 * answers, and when the stream breaks (the instance was killed, a backend restarted) reconnects
 * with Last-Event-ID. What each receives must be the user's stream with no gap, duplicate or
 * reordering, and each transaction's events in order.
 */
export interface Subscription {
  received: number;
  reconnects: number;
  violations: string[];
}

export function subscribe(instances: Instance[], party: Party, until: () => boolean): { subscription: Subscription; done: Promise<void> } {
  const subscription: Subscription = { received: 0, reconnects: 0, violations: [] };
  let lastId: number | null = null;
  const transactionSequences = new Map<string, number>();

  function accept(id: number, data: { transaction_id?: string; transaction_sequence?: number }) {
    if (lastId !== null && id !== lastId + 1) subscription.violations.push(`stream of ${party.id}: event ${id} after ${lastId}`);
    lastId = Math.max(lastId ?? 0, id);
    subscription.received += 1;
    if (typeof data.transaction_id !== 'string' || typeof data.transaction_sequence !== 'number') return;
    const before = transactionSequences.get(data.transaction_id);
    if (before !== undefined && data.transaction_sequence !== before + 1) {
      subscription.violations.push(`stream of ${party.id}: transaction ${data.transaction_id} event ${data.transaction_sequence} after ${before}`);
    }
    transactionSequences.set(data.transaction_id, Math.max(before ?? 0, data.transaction_sequence));
  }

  async function follow(instance: Instance) {
    const abort = new AbortController();
    const stop = setInterval(() => until() && abort.abort(), 500);
    try {
      const headers: Record<string, string> = {
        ...party.headers,
        Accept: 'text/event-stream',
        ...(lastId === null ? {} : { 'Last-Event-ID': String(lastId) }),
      };
      const response = await fetch(`${instance.url}/api/v1/transactions/events`, { headers, signal: abort.signal });
      if (!response.ok || !response.body) return;
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let text = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        text += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = text.indexOf('\n\n')) >= 0) {
          const frame = text.slice(0, end);
          text = text.slice(end + 2);
          const id = /^id: (\d+)$/m.exec(frame)?.[1];
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (/^event: too_old$/m.test(frame)) subscription.violations.push(`stream of ${party.id}: resumed too late (too_old)`);
          else if (id && data) accept(Number(id), JSON.parse(data));
        }
      }
    } catch {
      // The instance died or a backend went away: reconnect below.
    } finally {
      clearInterval(stop);
    }
  }

  const done = (async () => {
    while (!until()) {
      const up = instances.filter((instance) => instance.up);
      if (up.length > 0) await follow(up[Math.floor(Math.random() * up.length)]!);
      if (until()) break;
      subscription.reconnects += 1;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  return { subscription, done };
}
