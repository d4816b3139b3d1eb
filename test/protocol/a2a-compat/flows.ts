import { expect, it } from 'vitest';
import type { Actor } from '../../helpers/actors.ts';
import type { TestApp } from '../../helpers/app.ts';
import { agentMarket, balance } from '../../helpers/market.ts';
import { acceptAndDeliver, numberOf, textMarket, uuidPattern } from './harness.ts';

/**
 * The market steps every client generation must complete, written once. Each client file gives
 * an adapter that drives the real client and reads the client's own parsed objects; the views
 * below only pick fields out of those objects (a shape the client could not parse fails in the
 * client, before any view exists).
 */
export interface TaskView {
  id: string;
  /** The context (v0.1: session) id the client read, when the object carries one. */
  contextId: string | undefined;
  /** The state as the client spells it (an enum name for v1.0). */
  state: string;
  marketplace: Record<string, unknown>;
  /** The status message's text parts and data parts. */
  texts: string[];
  data: unknown[];
  /** The data of every part of every artifact. */
  artifactData: unknown[];
  /** The history's messages, when the object carries a history. */
  history: { role: string; texts: string[]; data: unknown[] }[] | undefined;
}

export interface EventView {
  kind: 'status' | 'artifact';
  taskId: string;
  state?: string;
  marketplace?: Record<string, unknown>;
  artifactData?: unknown[];
}

export interface Outgoing {
  text?: string;
  data?: Record<string, unknown>;
  taskId?: string;
  contextId?: string;
}

export interface CompatClient {
  states: Record<'submitted' | 'working' | 'inputRequired' | 'completed' | 'canceled', string>;
  /** A context id as this generation's clients make one; undefined when they send none. */
  newContextId(): string | undefined;
  /** A context id for a conversation (clients that send one send free text or their own format). */
  conversationContextId(): string;
  /** v0.1: the client chooses every task id (uuid4().hex), conversations included. */
  clientNamesTasks: boolean;
  /** The user role as this generation spells it (an enum name for v1.0). */
  userRole: string;
  send(actor: Actor, message: Outgoing): Promise<TaskView>;
  stream(actor: Actor, message: Outgoing): AsyncGenerator<EventView>;
  get(actor: Actor, id: string, historyLength?: number): Promise<TaskView>;
}

/** What the conversation needs of a client: everything but streaming. */
export type ConversationClient = Omit<CompatClient, 'stream'>;

/** Buys by data part over a stream, lets the seller deliver over REST, reads and confirms by data part. */
export function dataPartFlow(app: () => { test: TestApp }, client: () => CompatClient) {
  it('buys by data part over a stream to input-required while the seller delivers over REST, reads it, confirms by data part', async () => {
    const { test } = app();
    const adapter = client();
    const { buyer, seller, capability } = await agentMarket(test);
    const contextId = adapter.newContextId();
    const events: EventView[] = [];
    let transactionId = '';
    for await (const event of adapter.stream(buyer, { data: { capability_id: capability.id }, text: 'one summary please', contextId })) {
      events.push(event);
      if (events.length === 1) {
        transactionId = String(event.marketplace?.transaction_id);
        await acceptAndDeliver(test, seller, transactionId, { summary: 'short' });
      }
    }
    const states = events.filter((event) => event.kind === 'status').map((event) => event.state);
    expect(states).toEqual([adapter.states.submitted, adapter.states.working, adapter.states.inputRequired]);
    expect(events.at(-2)).toMatchObject({ kind: 'artifact', artifactData: [{ summary: 'short' }] });
    expect(transactionId).toMatch(uuidPattern);

    // The purchase task is named by the transaction id (v0.1: by the id the client chose).
    const taskId = events[0]!.taskId;
    const delivered = await adapter.get(buyer, taskId);
    expect(delivered).toMatchObject({
      state: adapter.states.inputRequired,
      artifactData: [{ summary: 'short' }],
      marketplace: { status: 'delivered', transaction_id: transactionId },
    });

    const confirmed = await adapter.send(buyer, { data: { action: 'confirm' }, taskId, contextId });
    expect(confirmed).toMatchObject({ id: taskId, state: adapter.states.completed, marketplace: { status: 'settled' } });
    expect(await balance(test, seller)).toMatchObject({ available: '10.00' });
    expect(await balance(test, buyer)).toMatchObject({ available: '90.00', frozen: '0.00' });
  });
}

/**
 * The conversation of the A2A contract: a text-only message answers input-required with numbered
 * candidates (text and data part), a pick by number buys, the same task id then shows the
 * transaction, history keeps the buyer's messages, and the word "confirm" settles the delivery.
 */
export function textFlow(app: () => { test: TestApp }, client: () => ConversationClient, pick: (number: number) => string) {
  it('buys by text: candidates, a pick by number, the transaction on the same task, history, confirm in words', async () => {
    const { test } = app();
    const adapter = client();
    const { buyer, seller, capability, request } = await textMarket(test);
    const contextId = adapter.conversationContextId();

    const choosing = await adapter.send(buyer, { text: request, contextId });
    expect(choosing).toMatchObject({ state: adapter.states.inputRequired, contextId });
    // The conversation's id is a new uuid, shown as the task id unless the client chose the task id.
    const conversationId = String(choosing.marketplace.conversation_id);
    expect(conversationId).toMatch(uuidPattern);
    if (!adapter.clientNamesTasks) expect(choosing.id).toBe(conversationId);
    expect(choosing.marketplace).toMatchObject({ demand_id: expect.stringMatching(uuidPattern), transaction_id: null, status: 'choosing' });
    expect(choosing.texts.join('\n')).toMatch(/^1\. /m);
    expect(choosing.data).toHaveLength(1);
    const number = numberOf(choosing.data[0], capability.id);
    expect(choosing.texts.join('\n')).toContain(`${number}. Count `);

    const bought = await adapter.send(buyer, { text: pick(number), taskId: choosing.id, contextId });
    expect(bought).toMatchObject({
      id: choosing.id,
      state: adapter.states.submitted,
      contextId,
      marketplace: { status: 'frozen', transaction_id: expect.stringMatching(uuidPattern) },
    });
    const transactionId = String(bought.marketplace.transaction_id);
    expect(transactionId).not.toBe(conversationId);
    expect(await balance(test, buyer)).toMatchObject({ available: '88.00', frozen: '12.00' });

    const read = await adapter.get(buyer, choosing.id, 10);
    expect(read).toMatchObject({ id: choosing.id, state: adapter.states.submitted, marketplace: { transaction_id: transactionId } });
    expect(await adapter.get(buyer, transactionId)).toMatchObject({ state: adapter.states.submitted, marketplace: { transaction_id: transactionId } });
    const asked = read.history?.filter((message) => message.role === adapter.userRole).map((message) => message.texts.join(' '));
    expect(asked).toEqual([request, pick(number)]);

    await acceptAndDeliver(test, seller, transactionId, { colonies: 7 });
    expect(await adapter.get(buyer, choosing.id)).toMatchObject({ state: adapter.states.inputRequired, artifactData: [{ colonies: 7 }] });
    const confirmed = await adapter.send(buyer, { text: 'Confirm', taskId: choosing.id, contextId });
    expect(confirmed).toMatchObject({ id: choosing.id, state: adapter.states.completed, marketplace: { status: 'settled', transaction_id: transactionId } });
    expect(await balance(test, seller)).toMatchObject({ available: '12.00' });
  });
}
