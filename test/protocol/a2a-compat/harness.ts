import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import type { Actor } from '../../helpers/actors.ts';
import { type TestApp, startTestApp } from '../../helpers/app.ts';
import { act, agentMarket, createCapability } from '../../helpers/market.ts';

/**
 * What every file of the client compatibility suite shares: one listening app, credentials the
 * way each client can carry them, and the market steps the seller performs over REST.
 */
export interface ListeningApp {
  test: TestApp;
  baseUrl: string;
  close(): Promise<void>;
}

/**
 * The agent card's URLs come from PUBLIC_BASE_URL, so the port is chosen before the app is built
 * (listen() of test/helpers/server.ts needs the app first): the server hands requests to the app
 * once it exists.
 */
export async function startListeningApp(env: Record<string, string> = {}): Promise<ListeningApp> {
  let app: TestApp['app'] | null = null;
  const server: Server = createServer((request, response) => app!(request, response));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // Push notifications go to receivers on loopback, which only the operator's private-address setting allows.
  const test = await startTestApp({ PUBLIC_BASE_URL: baseUrl, CALLBACK_ALLOW_PRIVATE: 'true', ...env });
  app = test.app;
  return {
    test,
    baseUrl,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await test.close();
    },
  };
}

/** The platform's fetch, kept before wrapGlobalFetch() replaces the global one. */
const platformFetch = globalThis.fetch;

/** A fetch that adds the actor's credentials to every request, as an agent wires its client's fetch. */
export const fetchAs =
  (actor: Actor | null): typeof fetch =>
  (input, init) => {
    const headers = new Headers(init?.headers);
    for (const [name, value] of Object.entries(actor?.headers ?? {})) headers.set(name, value);
    return platformFetch(input, { ...init, headers });
  };

/**
 * Clients without a fetch option (@a2a-js/sdk 0.2.x) call the global fetch; an agent using them
 * wraps it. The wrapper adds the credentials of the actor the current call runs for.
 */
const currentActor = new AsyncLocalStorage<Actor>();

export function wrapGlobalFetch(): () => void {
  globalThis.fetch = (input, init) => fetchAs(currentActor.getStore() ?? null)(input, init);
  return () => {
    globalThis.fetch = platformFetch;
  };
}

export const runAs = <T>(actor: Actor, work: () => Promise<T>): Promise<T> => currentActor.run(actor, work);

/** Iterates a stream with every step (and so the request that opens it) run for `actor`. */
export async function* streamAs<T>(actor: Actor, events: AsyncGenerator<T>): AsyncGenerator<T> {
  for (;;) {
    const step = await currentActor.run(actor, () => events.next());
    if (step.done) return;
    yield step.value;
  }
}

/** The buyer's real platform key with a wrong secret: a caller whose credentials are refused. */
export function wrongCredentials(agent: Actor & { apiKey: string }): Actor {
  const key = `${agent.apiKey.slice(0, agent.apiKey.lastIndexOf('_') + 1)}${randomBytes(32).toString('base64url')}`;
  return { userId: agent.userId, headers: { ...agent.headers, 'X-Api-Key': key } };
}

/** The seller's side of a purchase, over REST while the buyer's client waits. */
export async function acceptAndDeliver(test: TestApp, seller: Actor, transactionId: string, result: Record<string, unknown>) {
  await act(test, seller, transactionId, 'accept').expect(200);
  await act(test, seller, transactionId, 'deliver', { result_payload: result }).expect(200);
}

/**
 * A funded buyer, a seller and a capability whose title carries a word nothing else in the
 * market uses, so that a text naming the word finds it among the candidates.
 */
export async function textMarket(test: TestApp) {
  const market = await agentMarket(test);
  const word = `quokka${randomBytes(3).toString('hex')}`;
  const capability = await createCapability(test, market.seller, {
    title: `Count ${word} colonies from aerial photos`,
    description: `Counts ${word} colonies in aerial photographs and returns a census table`,
    price_ut: '12.00',
  });
  return { ...market, capability, request: `I need someone to count ${word} colonies in my aerial photos` };
}

/** A candidate of a conversation's data part (docs: a2a-contract, "Conversation task"). */
export interface Candidate {
  number: number;
  capability_id: string;
  title: string;
  price: string;
  currency: string;
  pricing_model: string;
  score: number;
}

/** Checks the conversation's data part and answers the number the capability is listed under. */
export function numberOf(choice: unknown, capabilityId: string): number {
  expect(choice).toMatchObject({ demand_id: expect.stringMatching(uuidPattern), candidates: expect.any(Array) });
  const candidates = (choice as { candidates: Candidate[] }).candidates;
  candidates.forEach((candidate, index) => {
    expect(candidate).toMatchObject({
      number: index + 1,
      capability_id: expect.stringMatching(uuidPattern),
      title: expect.any(String),
      price: expect.any(String),
      currency: 'UT',
      score: expect.any(Number),
    });
  });
  const found = candidates.find((candidate) => candidate.capability_id === capabilityId);
  expect(found, `capability ${capabilityId} among ${JSON.stringify(candidates)}`).toBeDefined();
  expect(found).toMatchObject({ price: '12.00', pricing_model: 'per_use' });
  return found!.number;
}

export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
