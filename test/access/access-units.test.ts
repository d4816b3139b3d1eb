import { describe, expect, it } from 'vitest';
import {
  alignWith,
  linkPurchaseTo,
  seeDemand,
  type Caller,
  type Rule,
  authorize,
  manageSkill,
  seeTask,
  authorizeAction,
  canSee,
  canSeeEventOf,
  partyOf,
  historyAccountIds,
} from '../../src/engine/access/index.ts';
import { AppError } from '../../src/errors.ts';
import { userAccountId } from '../../src/store/accounts.ts';

/**
 * The access rules (src/engine/access/) case by case, for the cases the access matrix does not
 * build (issue 16, mutation testing of the access group): a draft task, a demand that is no longer
 * open, a purchase naming a demand, an event on a stream, a deleted skill, a history filtered on the
 * caller's own currency. Each answer is the one a client gets: the row, 4040 (the caller may not know
 * it exists) or 4030.
 */
const owner: Caller = { user_id: '00000000-0000-4000-8000-000000000001', caller_type: 'agent' };
const other: Caller = { user_id: '00000000-0000-4000-8000-000000000002', caller_type: 'agent' };
const ownerAsHuman: Caller = { user_id: owner.user_id, caller_type: 'human' };

/** What a caller gets from a check: 'allow', or the refusal's code and message. */
function outcomeOf(check: () => unknown): 'allow' | { code: number; message: string } {
  try {
    check();
    return 'allow';
  } catch (error) {
    if (error instanceof AppError) return { code: error.code, message: error.message };
    throw error;
  }
}
const answer = <Resource>(rules: readonly Rule<Resource>[], caller: Caller, row: Resource, name = 'resource') =>
  outcomeOf(() => authorize(rules, caller, row, name));
const hidden = expect.objectContaining({ code: 4040 });

describe('any resource', () => {
  it('answers a row that is not there, missing or null, "not found" before asking any rule', () => {
    const rules: Rule<{ owner_user_id: string }>[] = [{ says: 'owned', holds: (caller, row) => row.owner_user_id === caller.user_id, otherwise: 'not_found' }];
    expect(answer(rules, owner, undefined as unknown as { owner_user_id: string }, 'skill')).toEqual({ code: 4040, message: 'skill not found' });
    expect(answer(rules, owner, null as unknown as { owner_user_id: string }, 'skill')).toEqual({ code: 4040, message: 'skill not found' });
  });
});

describe('tasks', () => {
  const task = (status: string) => ({ owner_user_id: owner.user_id, owner_type: 'agent', status });

  it('shows a draft to its publisher only, and a published task of any status to the space', () => {
    expect(answer(seeTask, owner, task('draft'))).toBe('allow');
    expect(answer(seeTask, other, task('draft'), 'task')).toEqual({ code: 4040, message: 'task not found' });
    for (const status of ['open', 'in_progress', 'closed', 'cancelled']) expect(answer(seeTask, other, task(status))).toBe('allow');
  });
});

describe('demands', () => {
  const demand = (effective_status: 'open' | 'cancelled' | 'fulfilled' | 'expired', owner_type: 'agent' | 'human' = 'agent') => ({
    owner_user_id: owner.user_id,
    owner_type,
    effective_status,
  });

  it('shows an open demand to its space, and one no longer open to its owner only', () => {
    expect(answer(seeDemand, other, demand('open'))).toBe('allow');
    for (const status of ['cancelled', 'fulfilled', 'expired'] as const) {
      expect(answer(seeDemand, owner, demand(status))).toBe('allow');
      expect(answer(seeDemand, other, demand(status))).toEqual(hidden);
    }
    expect(answer(seeDemand, ownerAsHuman, demand('cancelled'))).toEqual(hidden);
  });

  it("lets a purchase name only a demand of the buyer's own, in the space it buys in, and hides every other", () => {
    const row = { owner_user_id: owner.user_id, owner_type: 'agent' as const };
    expect(answer(linkPurchaseTo, owner, row)).toBe('allow');
    expect(answer(linkPurchaseTo, other, row, 'demand')).toEqual({ code: 4040, message: 'demand not found' });
    expect(answer(linkPurchaseTo, ownerAsHuman, row)).toEqual(hidden);
  });

  it("aligns only with capabilities offered in the caller's space", () => {
    expect(answer(alignWith, other, { owner_type: 'agent', available: true })).toBe('allow');
    expect(answer(alignWith, ownerAsHuman, { owner_type: 'agent', available: true })).toEqual(hidden);
    expect(answer(alignWith, other, { owner_type: 'agent', available: false })).toEqual(hidden);
  });
});

describe('skills', () => {
  it('lets nobody change a deleted skill, its owner neither (4040)', () => {
    const skill = { owner_user_id: owner.user_id, owner_type: 'agent', deleted_at: null };
    expect(answer(manageSkill, owner, skill)).toBe('allow');
    expect(answer(manageSkill, owner, { ...skill, deleted_at: new Date('2026-11-24T00:00:00Z') }, 'skill')).toEqual({ code: 4040, message: 'skill not found' });
    expect(answer(manageSkill, other, skill)).toEqual(expect.objectContaining({ code: 4030, message: 'only the owner can change a skill' }));
  });
});

describe('transactions', () => {
  const row = { space: 'agent' as const, buyer_user_id: owner.user_id, seller_user_id: other.user_id };
  const stranger: Caller = { user_id: '00000000-0000-4000-8000-000000000003', caller_type: 'agent' };

  it("finds a transaction by the buyer's own task id only for a party in its space", () => {
    expect([canSee(owner, row), canSee(other, row), canSee(stranger, row), canSee(ownerAsHuman, row)]).toEqual([true, true, false, false]);
    expect(canSee(owner, { ...row, space: 'human' as const })).toBe(false);
  });

  it('answers a caller who is no party "transaction not found", and names each party\'s part', () => {
    expect(() => partyOf(stranger, row)).toThrow('transaction not found');
    expect(partyOf(owner, row).party).toBe('buyer');
    expect(partyOf(other, row).party).toBe('seller');
  });

  it("puts an event on a party's stream only when it is in the currency of the caller's space", () => {
    const view = { currency: 'UT', buyer_user_id: owner.user_id, seller_user_id: other.user_id };
    expect(canSeeEventOf(owner, view)).toBe(true);
    expect(canSeeEventOf(other, view)).toBe(true);
    expect(canSeeEventOf(stranger, view)).toBe(false);
    // The same user id, listening as a human (CNY), does not see its agent transactions' events.
    expect(canSeeEventOf(ownerAsHuman, view)).toBe(false);
    expect(canSeeEventOf(ownerAsHuman, { ...view, currency: 'CNY' })).toBe(true);
    expect(canSeeEventOf(owner, { ...view, currency: 'CNY' })).toBe(false);
    expect(canSeeEventOf(owner, {})).toBe(false);
  });

  it("refuses a party the other party's move (4030), and the sweeper or the operator a move not theirs as one that does not exist (4090)", () => {
    expect(outcomeOf(() => authorizeAction('buyer', 'confirm', 'delivered'))).toBe('allow');
    expect(outcomeOf(() => authorizeAction('system', 'auto_confirm', 'delivered'))).toBe('allow');
    expect(outcomeOf(() => authorizeAction('seller', 'confirm', 'delivered'))).toEqual({ code: 4030, message: 'only the buyer may confirm' });
    expect(outcomeOf(() => authorizeAction('system', 'confirm', 'delivered'))).toEqual({
      code: 4090,
      message: 'cannot confirm a transaction that is delivered',
    });
    expect(outcomeOf(() => authorizeAction('admin', 'deliver', 'accepted'))).toEqual({ code: 4090, message: 'cannot deliver a transaction that is accepted' });
  });
});

describe('wallet history', () => {
  it("shows the caller's own space's account, filtered on its currency or not, and nothing for the other currency", () => {
    const own = [userAccountId(owner.user_id, 'UT')];
    expect(historyAccountIds(owner)).toEqual(own);
    expect(historyAccountIds(owner, 'UT')).toEqual(own);
    expect(historyAccountIds(owner, 'CNY')).toEqual([]);
    expect(historyAccountIds(ownerAsHuman, 'CNY')).toEqual([userAccountId(owner.user_id, 'CNY')]);
  });
});
