import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import type { Instance } from './servers.ts';
import { chaosAdminToken } from './servers.ts';

/**
 * The chaos run's clients: random operations over REST, JSON-RPC (HTTP and WebSocket) and MCP
 * against whichever instance they pick, each logged as ok, failed (an answered refusal) or unknown
 * (no answer: the instance died, the connection broke). What the books check afterwards needs
 * from here: every answer to every idempotency key, and every 5xx.
 */
export type Outcome = 'ok' | 'failed' | 'unknown';
export interface Party {
  id: string;
  headers: Record<string, string>;
}
export interface Market {
  buyers: Party[];
  sellers: Party[];
  capabilities: { id: string; seller: Party; invoke: boolean }[];
}

export interface Log {
  counts: Map<string, Record<Outcome, number>>;
  /** Every transaction id each creation key was answered with (one key must mean one purchase). */
  keyEffects: Map<string, Set<string>>;
  violations: string[];
}

export const newLog = (): Log => ({ counts: new Map(), keyEffects: new Map(), violations: [] });

const admin = { 'X-Admin-Token': chaosAdminToken };
const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;
const nextMove: Record<string, string> = { pending_freeze: 'freeze', frozen: 'accept', accepted: 'deliver', delivered: 'confirm', disputed: 'resolve' };

interface Answer {
  status: number;
  body: { code?: number; data?: any; result?: any; error?: any } | null;
  headers: Headers | null;
}

async function request(base: string, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
  try {
    const response = await fetch(`${base}${path}`, {
      method,
      signal: AbortSignal.timeout(15_000),
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : null, headers: response.headers };
  } catch {
    return { status: 0, body: null, headers: null };
  }
}

/** Records the outcome of one operation; a 5xx other than 503-with-Retry-After is a violation. */
function record(log: Log, kind: string, answer: Answer, rpcError = false) {
  const outcome: Outcome = answer.status === 0 || answer.status >= 500 ? 'unknown' : answer.status >= 400 || rpcError ? 'failed' : 'ok';
  const counts = log.counts.get(kind) ?? { ok: 0, failed: 0, unknown: 0 };
  counts[outcome] += 1;
  log.counts.set(kind, counts);
  if (answer.status >= 500 && !(answer.status === 503 && answer.headers?.get('retry-after'))) {
    log.violations.push(`${kind} answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
  }
}

export function createWorkload(instances: Instance[], market: Market, log: Log) {
  const base = () => pick(instances).url;
  const known: { id: string; buyer: Party; seller: Party; status?: string }[] = [];
  const keys: { key: string; buyer: Party; body: unknown }[] = [];

  function noteCreated(key: string, answer: Answer, buyer: Party, seller: Party) {
    const id = answer.body?.data?.id ?? answer.body?.data?.transaction?.id;
    if (typeof id !== 'string') return;
    log.keyEffects.set(key, (log.keyEffects.get(key) ?? new Set()).add(id));
    if (!known.some((each) => each.id === id)) known.push({ id, buyer, seller, status: answer.body?.data?.status ?? answer.body?.data?.transaction?.status });
  }

  async function create(buyer: Party) {
    const capability = pick(market.capabilities.filter((each) => !each.invoke));
    const retry = keys.length > 0 && Math.random() < 0.2 ? pick(keys) : null;
    const key = retry?.key ?? randomUUID();
    const actor = retry?.buyer ?? buyer;
    const body = retry?.body ?? { capability_id: capability.id, booked_hours: 1 };
    if (!retry) keys.push({ key, buyer, body });
    const answer = await request(base(), 'POST', '/api/v1/transactions', { ...actor.headers, 'Idempotency-Key': key }, body);
    record(log, retry ? 'create (retried key)' : 'create', answer);
    if (answer.status === 201)
      noteCreated(key, answer, actor, market.capabilities.find((each) => each.id === (body as { capability_id: string }).capability_id)!.seller);
  }

  async function move() {
    if (known.length === 0) return;
    const transaction = pick(known.slice(-40));
    // Mostly the move the transaction's last known status calls for, so that many get far.
    const natural = transaction.status ? nextMove[transaction.status] : undefined;
    const action = natural && Math.random() < 0.7 ? natural : pick(['freeze', 'accept', 'deliver', 'confirm', 'cancel', 'reject', 'dispute', 'resolve']);
    if (action === 'resolve') {
      const answer = await request(
        base(),
        'POST',
        `/api/v1/admin/transactions/${transaction.id}/resolve`,
        { ...admin, 'Idempotency-Key': randomUUID() },
        { outcome: pick(['settle', 'refund']) },
      );
      if (typeof answer.body?.data?.status === 'string') transaction.status = answer.body.data.status;
      return record(log, 'resolve', answer);
    }
    const sellerMoves = new Set(['accept', 'deliver', 'reject']);
    const actor = Math.random() < 0.05 ? pick(market.buyers) : sellerMoves.has(action) ? transaction.seller : transaction.buyer;
    const body = action === 'deliver' ? { result_payload: { done: true } } : {};
    const headers = Math.random() < 0.3 ? { ...actor.headers, 'Idempotency-Key': randomUUID() } : actor.headers;
    const path = `/api/v1/transactions/${transaction.id}/${action}`;
    const answer = await request(base(), 'POST', path, headers, body);
    record(log, action, answer);
    const status = answer.body?.data?.status;
    if (typeof status === 'string') transaction.status = status;
    // A duplicate send of the same move: one of the two may take effect.
    if (Math.random() < 0.1) record(log, `${action} (duplicate)`, await request(base(), 'POST', path, headers, body));
  }

  async function rpcPurchase(buyer: Party) {
    const capability = pick(market.capabilities.filter((each) => !each.invoke));
    const messageId = randomUUID();
    const call = {
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: {
        message: { kind: 'message', messageId, role: 'user', parts: [{ kind: 'data', data: { capability_id: capability.id, booked_hours: 1 } }] },
        configuration: { blocking: false },
      },
    };
    const answer = await request(base(), 'POST', '/api/v1/rpc', buyer.headers, call);
    record(log, 'json-rpc message/send', answer, Boolean(answer.body?.error));
    const id = answer.body?.result?.id;
    if (typeof id === 'string') {
      log.keyEffects.set(`rpc:${messageId}`, new Set([id]));
      if (!known.some((each) => each.id === id)) known.push({ id, buyer, seller: capability.seller });
    }
  }

  function rpcOverWebSocket(buyer: Party): Promise<void> {
    const transaction = known.length > 0 ? pick(known) : null;
    return new Promise((resolve) => {
      const socket = new WebSocket(`${base().replace('http', 'ws')}/api/v1/rpc/ws`, { headers: buyer.headers });
      const done = (answer: Answer, rpcError = false) => {
        record(log, 'json-rpc over WebSocket tasks/get', answer, rpcError);
        socket.terminate();
        resolve();
      };
      const timer = setTimeout(() => done({ status: 0, body: null, headers: null }), 10_000);
      socket.on('open', () => socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: transaction?.id ?? randomUUID() } })));
      socket.on('message', (data) => {
        clearTimeout(timer);
        const body = JSON.parse(String(data)) as { error?: unknown };
        done({ status: 200, body: body, headers: null }, Boolean(body.error));
      });
      socket.on('error', () => {
        clearTimeout(timer);
        done({ status: 0, body: null, headers: null });
      });
    });
  }

  async function mcpPurchase(buyer: Party) {
    const capability = pick(market.capabilities.filter((each) => !each.invoke));
    const key = randomUUID();
    const call = {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'buy_capability', arguments: { capability_id: capability.id, booked_hours: 1, idempotency_key: key } },
    };
    const answer = await request(base(), 'POST', '/mcp', buyer.headers, call);
    const text = answer.body?.result?.content?.[0]?.text as string | undefined;
    const result = text ? (JSON.parse(text) as { transaction?: { id: string } }) : null;
    record(log, 'mcp buy_capability', answer, Boolean(answer.body?.result?.isError || answer.body?.error));
    if (result?.transaction?.id) noteCreated(`mcp:${key}`, { ...answer, body: { data: { id: result.transaction.id } } }, buyer, capability.seller);
  }

  async function invoke(buyer: Party) {
    const capability = market.capabilities.find((each) => each.invoke)!;
    const key = randomUUID();
    const answer = await request(
      base(),
      'POST',
      `/api/v1/capabilities/${capability.id}/invoke`,
      { ...buyer.headers, 'Idempotency-Key': key },
      { input: { n: 1 } },
    );
    record(log, 'invoke', answer);
    const id = answer.body?.data?.transaction_id;
    if (typeof id === 'string') log.keyEffects.set(`invoke:${key}`, new Set([id]));
  }

  async function autoAcceptDemand(buyer: Party) {
    const answer = await request(
      base(),
      'POST',
      '/api/v1/demands',
      { ...buyer.headers, 'Idempotency-Key': randomUUID() },
      { description: 'An hour of legal translation of a contract into Chinese', max_price_ut: '5.00', auto_accept: true },
    );
    record(log, 'auto-accept demand', answer);
  }

  const skillKeys: { key: string; owner: Party }[] = [];
  const skills: { id: string; owner: Party }[] = [];
  /**
   * Skills (issue 17) under the same faults: a create (a fifth retry a key: one skill per key), a
   * status change by the owner, or a page of the hall ranked by a text query. No money moves, but
   * every answer must still be an envelope, never a 5xx other than 503.
   */
  async function skillWork(actor: Party) {
    const roll = Math.random();
    if (roll < 0.4) {
      const retry = skillKeys.length > 0 && Math.random() < 0.2 ? pick(skillKeys) : null;
      const entry = retry ?? { key: randomUUID(), owner: actor };
      if (!retry) skillKeys.push(entry);
      const body = { name: 'Contract translation', description: 'Legal contracts from English into Chinese', category: 'translation', ut_price: '3.00' };
      const answer = await request(base(), 'POST', '/api/v1/skills/', { ...entry.owner.headers, 'Idempotency-Key': entry.key }, body);
      record(log, retry ? 'skill create (retried key)' : 'skill create', answer);
      const id = answer.body?.data?.id;
      if (typeof id === 'string') {
        log.keyEffects.set(`skill:${entry.key}`, (log.keyEffects.get(`skill:${entry.key}`) ?? new Set()).add(id));
        if (!skills.some((each) => each.id === id)) skills.push({ id, owner: entry.owner });
      }
    } else if (roll < 0.6 && skills.length > 0) {
      const skill = pick(skills.slice(-40));
      const answer = await request(base(), 'PUT', `/api/v1/skills/${skill.id}`, skill.owner.headers, { status: pick(['active', 'inactive']) });
      record(log, 'skill status', answer);
    } else {
      const answer = await request(base(), 'GET', '/api/v1/skills/hall?q=translate%20a%20contract&page_size=10', actor.headers);
      record(log, 'skill hall', answer);
    }
  }

  const taskKeys: { key: string; owner: Party }[] = [];
  const tasks: { id: string; owner: Party }[] = [];
  const sellerSkills = new Map<string, string>();
  const applications: { id: string; task: { id: string; owner: Party }; applicant: Party }[] = [];
  /**
   * The work market (issue 18) under the same faults: publishing with a bounty held (a fifth retry
   * a key: one task per key), closing (the hold released), a seller applying with its skill, and
   * the publisher accepting, which turns the hold into an escrow transaction that the other moves
   * of this workload then carry on. The books check the task holds beside the transactions'.
   */
  async function taskWork(buyer: Party) {
    const roll = Math.random();
    if (roll < 0.35 || tasks.length === 0) {
      const retry = taskKeys.length > 0 && Math.random() < 0.2 ? pick(taskKeys) : null;
      const entry = retry ?? { key: randomUUID(), owner: buyer };
      if (!retry) taskKeys.push(entry);
      const body = {
        title: 'Translate a contract',
        description: 'Legal contract, English into Chinese',
        mode: 'online',
        category: 'translation',
        bounty_amount: '2.00',
      };
      const answer = await request(base(), 'POST', '/api/v1/tasks/', { ...entry.owner.headers, 'Idempotency-Key': entry.key }, body);
      record(log, retry ? 'task publish (retried key)' : 'task publish', answer);
      const id = answer.body?.data?.id;
      if (typeof id === 'string') {
        log.keyEffects.set(`task:${entry.key}`, (log.keyEffects.get(`task:${entry.key}`) ?? new Set()).add(id));
        if (!tasks.some((each) => each.id === id)) tasks.push({ id, owner: entry.owner });
      }
    } else if (roll < 0.6) {
      const seller = pick(market.sellers);
      let skillId = sellerSkills.get(seller.id);
      if (!skillId) {
        const made = await request(
          base(),
          'POST',
          '/api/v1/skills/',
          { ...seller.headers, 'Idempotency-Key': `chaos-skill-${seller.id}` },
          { name: 'Legal translation', description: 'Contracts', category: 'translation' },
        );
        if (typeof made.body?.data?.id !== 'string') return record(log, 'task apply (skill)', made);
        skillId = made.body.data.id as string;
        sellerSkills.set(seller.id, skillId);
      }
      const task = pick(tasks.slice(-20));
      const answer = await request(base(), 'POST', `/api/v1/tasks/${task.id}/applications`, seller.headers, { skill_id: skillId, proposed_price: '3.00' });
      record(log, 'task apply', answer);
      if (typeof answer.body?.data?.id === 'string') applications.push({ id: answer.body.data.id, task, applicant: seller });
    } else if (roll < 0.75 && applications.length > 0) {
      const application = pick(applications.slice(-20));
      // The proposals (3.00) are above the bounty (2.00): without max_price the accept is refused (4093), with it the price is paid.
      const body = Math.random() < 0.8 ? { max_price: '3.00' } : {};
      const answer = await request(
        base(),
        'POST',
        `/api/v1/tasks/${application.task.id}/applications/${application.id}/accept`,
        { ...application.task.owner.headers, 'Idempotency-Key': randomUUID() },
        body,
      );
      record(log, 'task accept', answer);
      const id = answer.body?.data?.transaction?.id;
      if (typeof id === 'string' && !known.some((each) => each.id === id))
        known.push({ id, buyer: application.task.owner, seller: application.applicant, status: 'frozen' });
    } else if (roll < 0.9 && sellerSkills.size > 0) {
      await selectionWork(pick(tasks.slice(-20)));
    } else {
      const task = pick(tasks.slice(-20));
      record(log, 'task close', await request(base(), 'POST', `/api/v1/tasks/${task.id}/close`, task.owner.headers, {}));
    }
  }

  const pushes: { id: string; task: { id: string; owner: Party }; seller: Party }[] = [];
  /**
   * Selections (issue 28, point 1): the publisher selects a seller's skill, lists its task's
   * pushes, withdraws one or lowers the bounty (refused below a waiting selection's price), and the
   * seller answers; an accepted selection is a transaction the other moves carry on.
   */
  async function selectionWork(task: { id: string; owner: Party }) {
    const roll = Math.random();
    if (roll < 0.35 || pushes.length === 0) {
      const [sellerId, skillId] = pick([...sellerSkills.entries()]);
      const answer = await request(base(), 'POST', `/api/v1/tasks/${task.id}/select-skill`, task.owner.headers, {
        skill_id: skillId,
        ...(Math.random() < 0.5 ? { price: '1.50' } : {}),
      });
      record(log, 'task select', answer);
      if (typeof answer.body?.data?.id === 'string')
        pushes.push({ id: answer.body.data.id, task, seller: market.sellers.find((each) => each.id === sellerId)! });
      return;
    }
    const push = pick(pushes.slice(-20));
    if (roll < 0.5) return record(log, 'task pushes list', await request(base(), 'GET', `/api/v1/tasks/${push.task.id}/pushes`, push.task.owner.headers));
    if (roll < 0.65)
      return record(log, 'task push withdraw', await request(base(), 'DELETE', `/api/v1/tasks/${push.task.id}/pushes/${push.id}`, push.task.owner.headers));
    if (roll < 0.75)
      return record(
        log,
        'task bounty lowered',
        await request(base(), 'PUT', `/api/v1/tasks/${push.task.id}`, push.task.owner.headers, { bounty_amount: '1.00' }),
      );
    const answer = await request(base(), 'POST', `/api/v1/tasks/pushes/${push.id}/respond`, push.seller.headers, {
      decision: Math.random() < 0.8 ? 'accept' : 'decline',
    });
    record(log, 'task push respond', answer);
    const id = answer.body?.data?.accepted?.transaction?.id;
    if (typeof id === 'string' && !known.some((each) => each.id === id)) known.push({ id, buyer: push.task.owner, seller: push.seller, status: 'frozen' });
  }

  const credits: { key: string; userId: string }[] = [];
  /** Money for the buyers as they spend it (purchases stop at 4020 otherwise); a fifth retry a key. */
  async function credit(buyer: Party) {
    const retry = credits.length > 0 && Math.random() < 0.2 ? pick(credits) : null;
    const entry = retry ?? { key: randomUUID(), userId: buyer.id };
    if (!retry) credits.push(entry);
    const answer = await request(
      base(),
      'POST',
      '/api/v1/admin/wallet/credit',
      { ...admin, 'Idempotency-Key': entry.key },
      { user_id: entry.userId, currency: 'UT', amount: '20.00' },
    );
    record(log, retry ? 'credit (retried key)' : 'credit', answer);
    const movement = answer.body?.data?.movement_id;
    if (typeof movement === 'string') log.keyEffects.set(`credit:${entry.key}`, (log.keyEffects.get(`credit:${entry.key}`) ?? new Set()).add(movement));
  }

  /** One client: operations back to back until the deadline. */
  async function client(buyer: Party, until: number) {
    while (Date.now() < until) {
      const roll = Math.random();
      if (roll < 0.04) await credit(buyer);
      else if (roll < 0.25) await create(buyer);
      else if (roll < 0.75) await move();
      else if (roll < 0.81) await rpcPurchase(buyer);
      else if (roll < 0.86) await rpcOverWebSocket(buyer);
      else if (roll < 0.91) await mcpPurchase(buyer);
      else if (roll < 0.95) await invoke(buyer);
      else if (roll < 0.965) await autoAcceptDemand(buyer);
      else if (roll < 0.98) await skillWork(buyer);
      else await taskWork(buyer);
    }
  }

  return { client, known };
}
