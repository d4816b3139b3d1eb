import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../../src/engine/index.ts';
import type { Principal } from '../../src/engine/common/index.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import type { Actor } from '../helpers/actors.ts';
import { act, agentMarket, balance, buy } from '../helpers/market.ts';

/**
 * An instance remembers the rows it wrote, so that the next move needs no read. These tests
 * change a transaction through a second engine on the same database (another server instance
 * behind the load balancer) and then move it through the first: every answer must be the one the
 * current row calls for, and money must move as the current state requires.
 */
let test: TestApp;
let other: Engine;
beforeAll(async () => {
  test = await startTestApp();
  other = await createEngine(test.runtime.engine.dependencies);
});
afterAll(async () => {
  await other.close();
  await test.close();
});

const principalOf = (actor: Actor): Principal => ({ user_id: actor.userId, caller_type: 'agent', platform: null, api_key_id: null });

describe('a move after another instance changed the transaction', () => {
  it('refuses with the current status, not the remembered one (4090), and moves no money', async () => {
    const { buyer, capability } = await agentMarket(test, '10.00', { price_ut: '1.00' });
    const { id } = await buy(test, buyer, capability.id);
    await other.transactions.act(principalOf(buyer), id, 'cancel', {}, null);

    const response = await act(test, buyer, id, 'freeze');
    expect(response.status, JSON.stringify(response.body)).toBe(409);
    expect(response.body).toMatchObject({ code: 4090, data: { status: 'cancelled_by_buyer', action: 'freeze' } });
    expect(await balance(test, buyer)).toMatchObject({ available: '10.00', frozen: '0.00' });
  });

  it('succeeds when the current state allows what the remembered one did not', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '10.00', { price_ut: '1.00' });
    const { id } = await buy(test, buyer, capability.id);
    await other.transactions.act(principalOf(buyer), id, 'freeze', {}, null);

    const response = await act(test, seller, id, 'accept');
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body.data.status).toBe('accepted');
  });

  it('releases the money a cancel must release although the remembered state held none', async () => {
    const { buyer, capability } = await agentMarket(test, '10.00', { price_ut: '1.00' });
    const { id } = await buy(test, buyer, capability.id);
    await other.transactions.act(principalOf(buyer), id, 'freeze', {}, null);
    expect(await balance(test, buyer)).toMatchObject({ available: '9.00', frozen: '1.00' });

    // Remembered: pending_freeze, where a cancel moves no money. Current: frozen.
    const response = await act(test, buyer, id, 'cancel');
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body.data.status).toBe('cancelled_by_buyer');
    expect(await balance(test, buyer)).toMatchObject({ available: '10.00', frozen: '0.00' });
    const events = await test.runtime.database.db('outbox_events').where({ transaction_id: id }).orderBy('transaction_sequence').pluck('event_type');
    expect(events).toEqual(['transaction.pending_freeze', 'transaction.frozen', 'transaction.cancelled_by_buyer']);
  });

  it('settles once when both instances confirm the same delivery', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '10.00', { price_ut: '1.00' });
    const { id } = await buy(test, buyer, capability.id);
    for (const action of ['freeze', 'accept', 'deliver'] as const) {
      const actor = action === 'freeze' ? buyer : seller;
      expect((await act(test, actor, id, action, action === 'deliver' ? { result_payload: { ok: true } } : undefined)).status).toBe(200);
    }
    await other.transactions.act(principalOf(buyer), id, 'confirm', {}, null);
    const response = await act(test, buyer, id, 'confirm');
    expect(response.status).toBe(409);
    expect(response.body).toMatchObject({ code: 4090, data: { status: 'settled' } });
    expect(await balance(test, seller)).toMatchObject({ available: '1.00', frozen: '0.00' });
    expect(await balance(test, buyer)).toMatchObject({ available: '9.00', frozen: '0.00' });
  });
});
