import { describe, expect, it } from 'vitest';
import { isUuid } from '../../src/domain/ids.ts';
import { amountProblem, currencyOfSpace, feeOf, formatAmount, parseAmount } from '../../src/domain/money.ts';
import { assertWithinCeiling, transactionPrice } from '../../src/domain/pricing.ts';
import { secondsUntilEnd, usageWindow } from '../../src/domain/usage-windows.ts';
import { nextState, terminalStatuses, transactionStatuses } from '../../src/domain/escrow.ts';
import { nextAttemptAt, wantsKind } from '../../src/domain/webhooks.ts';
import { AppError } from '../../src/errors.ts';
import { missingRestated, nextApplicationState, nextTaskState, taskHallSortOf } from '../../src/domain/tasks.ts';
import { actionTowards, averageRatingOf, hallSortOf, nextSkillStatus, qualityScoreOf } from '../../src/domain/skills.ts';
import { normalizeUserCode, userCodeAlphabet, userCodeLength } from '../../src/domain/device-codes.ts';
import { limits } from '../../src/limits.ts';

/**
 * The money, pricing, window and id rules on their own (issue 16, mutation testing): each case is
 * one a client could send or meet, with the answer it must get. The API tests reach these rules
 * too; these pin every boundary of them without a server.
 */
const refusalOf = (run: () => unknown): AppError => {
  try {
    run();
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
};

describe('amounts', () => {
  it.each([
    ['12.5', 1250n],
    ['12.50', 1250n],
    ['0', 0n],
    ['0.05', 5n],
    [' 7 ', 700n],
    [12.5, 1250n],
    [3, 300n],
    [0.1, 10n],
    ['10000000000000000.00', null],
    ['9999999999999999.99', null],
    ['10000000000000.00', 1_000_000_000_000_000n],
    ['9999999999999.99', 999_999_999_999_999n],
  ] as const)('parses %j as %s minor units', (input, expected) => {
    expect(parseAmount(input)).toBe(expected);
  });

  it.each(['-1', '1.234', '1e3', 'abc', '12.', '.5', '1,5', '', 'x12.50', '12.50x', '12.5.0', '12345678901234567'])('refuses %j', (input) => {
    expect(parseAmount(input)).toBeNull();
  });

  it('refuses numbers that are not finite or not plain decimals', () => {
    for (const input of [Number.NaN, Number.POSITIVE_INFINITY, -1, 1.005, 1e21]) expect(parseAmount(input)).toBeNull();
  });

  it('refuses one minor unit above the maximum, and says the maximum when only the size is wrong', () => {
    const over = limits.amountMinorUnitsMax + 1n;
    expect(parseAmount(formatAmount(over))).toBeNull();
    expect(amountProblem(formatAmount(over))).toBe(`must be at most ${formatAmount(limits.amountMinorUnitsMax)}`);
    expect(amountProblem(1e21)).toMatch(/^must be a non-negative amount like "12\.50"/);
    expect(amountProblem('1.234')).toMatch(/with at most two fraction digits$/);
    expect(amountProblem(' 99999999999999999 ')).toBe(`must be at most ${formatAmount(limits.amountMinorUnitsMax)}`);
    expect(amountProblem(Number.NaN)).toMatch(/^must be a non-negative amount/);
    expect(amountProblem('x1')).toMatch(/^must be a non-negative amount/);
    expect(amountProblem('1x')).toMatch(/^must be a non-negative amount/);
  });

  it('formats minor units as a two-decimal string, negative ones with a sign', () => {
    expect([formatAmount(0n), formatAmount(5n), formatAmount(1250n), formatAmount('-1250'), formatAmount(-5), formatAmount(100)]).toEqual([
      '0.00',
      '0.05',
      '12.50',
      '-12.50',
      '-0.05',
      '1.00',
    ]);
  });

  it("takes fees in basis points rounded down, and names each space's currency", () => {
    expect([feeOf(1000n, 250), feeOf(999n, 250), feeOf(1n, 9999), feeOf(10_000n, 10_000)]).toEqual([25n, 24n, 0n, 10_000n]);
    expect([currencyOfSpace('agent'), currencyOfSpace('human')]).toEqual(['UT', 'CNY']);
  });
});

describe('transaction prices', () => {
  it('prices per hour by hours, per day by started days, and the others at the unit price', () => {
    expect(transactionPrice('per_hour', 300n, 5)).toBe(1500n);
    expect(transactionPrice('per_day', 1000n, 24)).toBe(1000n);
    expect(transactionPrice('per_day', 1000n, 25)).toBe(2000n);
    expect(transactionPrice('per_day', 1000n, 1)).toBe(1000n);
    for (const model of ['per_use', 'per_query', 'subscription'] as const) expect(transactionPrice(model, 700n, undefined)).toBe(700n);
  });

  it('requires booked_hours where it prices, and refuses it where it does not, naming the field', () => {
    for (const model of ['per_hour', 'per_day'] as const) {
      const refusal = refusalOf(() => transactionPrice(model, 100n, undefined));
      expect(refusal).toMatchObject({
        code: 4000,
        message: 'booked_hours is required',
        data: { errors: [{ path: 'body.booked_hours', message: `required for a ${model} capability` }] },
      });
    }
    const refusal = refusalOf(() => transactionPrice('per_use', 100n, 2));
    expect(refusal).toMatchObject({
      code: 4000,
      message: 'booked_hours is only for per_hour and per_day capabilities',
      data: { errors: [{ path: 'body.booked_hours', message: 'not allowed for a per_use capability' }] },
    });
  });

  it('lets a price up to the ceiling through and refuses one minor unit above it with 4093 and the numbers', () => {
    expect(() => assertWithinCeiling(500n, undefined, 'UT')).not.toThrow();
    expect(() => assertWithinCeiling(500n, 500n, 'UT')).not.toThrow();
    expect(() => assertWithinCeiling(499n, 500n, 'UT')).not.toThrow();
    const refusal = refusalOf(() => assertWithinCeiling(501n, 500n, 'CNY'));
    expect(refusal).toMatchObject({
      code: 4093,
      message: 'the price is above the max_price you sent',
      data: { currency: 'CNY', price: '5.01', max_price: '5.00' },
    });
    expect((refusal.data as { detail: string }).detail).toBe(
      'the price is above the max_price you sent; nothing was charged. To pay 5.01 CNY, send max_price "5.01" or more.',
    );
    expect(refusalOf(() => assertWithinCeiling(2n, 1n, 'UT', 'the price changed')).message).toBe('the price changed');
  });
});

describe('usage windows', () => {
  it('cuts calendar minutes and UTC days, each ending when the next begins', () => {
    const at = new Date('2026-11-24T15:42:17.250Z');
    expect(usageWindow('minute', at)).toEqual({ kind: 'minute', start: new Date('2026-11-24T15:42:00.000Z'), end: new Date('2026-11-24T15:43:00.000Z') });
    expect(usageWindow('day', at)).toEqual({ kind: 'day', start: new Date('2026-11-24T00:00:00.000Z'), end: new Date('2026-11-25T00:00:00.000Z') });
    expect(usageWindow('minute', new Date('2026-11-24T15:43:00.000Z')).start).toEqual(new Date('2026-11-24T15:43:00.000Z'));
  });

  it('tells whole seconds until the window ends, rounded up and never below 1', () => {
    const window = usageWindow('minute', new Date('2026-11-24T15:42:00.000Z'));
    expect(secondsUntilEnd(window, new Date('2026-11-24T15:42:17.250Z'))).toBe(43);
    expect(secondsUntilEnd(window, new Date('2026-11-24T15:42:59.999Z'))).toBe(1);
    expect(secondsUntilEnd(window, new Date('2026-11-24T15:43:05.000Z'))).toBe(1);
    expect(secondsUntilEnd(window, new Date('2026-11-24T15:42:00.000Z'))).toBe(60);
  });
});

describe('ids and final statuses', () => {
  it('takes a whole UUID in any case, and nothing around it', () => {
    expect(isUuid('0b6f3c1e-1d2a-4c3b-9e8f-0a1b2c3d4e5f')).toBe(true);
    expect(isUuid('0B6F3C1E-1D2A-4C3B-9E8F-0A1B2C3D4E5F')).toBe(true);
    for (const text of ['x0b6f3c1e-1d2a-4c3b-9e8f-0a1b2c3d4e5f', '0b6f3c1e-1d2a-4c3b-9e8f-0a1b2c3d4e5fx', '0b6f3c1e1d2a4c3b9e8f0a1b2c3d4e5f', ''])
      expect(isUuid(text)).toBe(false);
  });

  it('refuses a move the table does not have with 4090, saying the move and the status', () => {
    expect(refusalOf(() => nextState('frozen', 'freeze'))).toMatchObject({
      code: 4090,
      message: 'cannot freeze a transaction that is frozen',
      data: { status: 'frozen', action: 'freeze' },
    });
  });

  it('names exactly the statuses no move leaves', () => {
    expect([...terminalStatuses].sort()).toEqual(['cancelled_by_buyer', 'failed', 'refunded', 'rejected_by_seller', 'settled']);
    expect(transactionStatuses.filter((status) => !terminalStatuses.has(status))).toEqual(['pending_freeze', 'frozen', 'accepted', 'delivered', 'disputed']);
  });
});

describe('webhook rules', () => {
  it('matches a kind by name, by family or by *, and always the ping', () => {
    expect(wantsKind(['transaction.*'], 'transaction.settled')).toBe(true);
    expect(wantsKind(['transaction.settled'], 'transaction.settled')).toBe(true);
    expect(wantsKind(['*'], 'application.accepted')).toBe(true);
    expect(wantsKind(['task.*'], 'application.accepted')).toBe(false);
    expect(wantsKind(['transaction.frozen'], 'transaction.settled')).toBe(false);
    expect(wantsKind(['task.published'], 'webhook.ping')).toBe(true);
    // A subscription naming several kinds gets each of them, not only events every name matches.
    expect(wantsKind(['task.published', 'transaction.settled'], 'transaction.settled')).toBe(true);
    expect(wantsKind(['demand.*', 'task.published'], 'demand.matched')).toBe(true);
  });

  it('backs off exponentially with jitter, capped, and gives up past the window', () => {
    const schedule = { firstDelayMs: 10_000, delayMaxMs: 60_000, windowMs: 300_000 };
    const created = new Date('2026-11-24T00:00:00.000Z');
    const at = (ms: number) => new Date(created.getTime() + ms);
    expect(nextAttemptAt(schedule, created, created, 1, 0.5)).toEqual(at(10_000));
    expect(nextAttemptAt(schedule, created, created, 2, 0.5)).toEqual(at(20_000));
    expect(nextAttemptAt(schedule, created, created, 3, 0)).toEqual(at(32_000));
    expect(nextAttemptAt(schedule, created, created, 3, 0.999)).toEqual(at(Math.round(40_000 * (0.8 + 0.4 * 0.999))));
    expect(nextAttemptAt(schedule, created, created, 9, 0.5)).toEqual(at(60_000));
    expect(nextAttemptAt(schedule, created, at(240_000), 9, 0.5)).toEqual(at(300_000));
    expect(nextAttemptAt(schedule, created, at(240_001), 9, 0.5)).toBeNull();
    expect(nextAttemptAt(schedule, created, created, 1_000, 0.5)).toEqual(at(60_000));
  });
});

describe('task, application and skill rules', () => {
  it('moves tasks and applications only along their tables, refusing with 4090 naming the status and the move', () => {
    expect(nextTaskState('open', 'close')).toMatchObject({ to: 'closed', money: 'release' });
    expect(refusalOf(() => nextTaskState('closed', 'publish'))).toMatchObject({
      code: 4090,
      message: 'cannot publish a task that is closed',
      data: { status: 'closed', action: 'publish' },
    });
    expect(refusalOf(() => nextTaskState('open', 'publish'))).toMatchObject({ code: 4090, data: { status: 'open', action: 'publish' } });
    expect(nextApplicationState('pending', 'accept')).toBe('accepted');
    expect(nextApplicationState('pending', 'withdraw')).toBe('withdrawn');
    expect(refusalOf(() => nextApplicationState('rejected', 'accept'))).toMatchObject({
      code: 4090,
      message: 'cannot accept an application that is rejected',
      data: { status: 'rejected', action: 'accept' },
    });
    expect(refusalOf(() => nextApplicationState('accepted', 'reject'))).toMatchObject({ code: 4090, data: { status: 'accepted', action: 'reject' } });
    expect(nextSkillStatus('active', 'deactivate')).toBe('inactive');
    expect(refusalOf(() => nextSkillStatus('active', 'activate'))).toMatchObject({
      code: 4090,
      message: 'cannot activate a skill that is active',
      data: { status: 'active', action: 'activate' },
    });
  });

  it('orders a hall by relevance with a query and by newest without, and refuses relevance without one', () => {
    for (const sortOf of [taskHallSortOf, hallSortOf] as const) {
      expect(sortOf(undefined, true)).toBe('relevance');
      expect(sortOf(undefined, false)).toBe('newest');
      expect(sortOf('newest', true)).toBe('newest');
      expect(sortOf('relevance', true)).toBe('relevance');
      expect(refusalOf(() => sortOf('relevance', false))).toMatchObject({
        code: 4000,
        message: 'sort=relevance needs a text query',
        data: { errors: [{ path: 'query.sort', message: 'relevance needs q' }] },
      });
    }
  });

  it('names the restated fields a body lacks, in order, counting an undefined value as missing', () => {
    expect(missingRestated('publish', {})).toEqual(['delivery_hours']);
    expect(missingRestated('publish', { delivery_hours: 2 })).toEqual([]);
    expect(missingRestated('reuse', { delivery_hours: undefined })).toEqual(['delivery_hours', 'bounty_amount']);
    expect(missingRestated('reuse', { delivery_hours: 2, bounty_amount: null })).toEqual([]);
    expect(missingRestated('reuse', { bounty_amount: '1.00' })).toEqual(['delivery_hours']);
  });

  it('scores quality as a Bayesian average and shows the plain average to two decimals', () => {
    expect(qualityScoreOf(0, 0)).toBe(3);
    expect(qualityScoreOf(1, 5)).toBe(3.333);
    expect(qualityScoreOf(50, 250)).toBe(4.818);
    expect(averageRatingOf(0, 0)).toBeNull();
    expect(averageRatingOf(3, 13)).toBe(4.33);
    expect(averageRatingOf(2, 9)).toBe(4.5);
    expect(actionTowards('active', 'active')).toBeNull();
    expect(actionTowards('active', 'inactive')).toBe('deactivate');
    expect(actionTowards('inactive', 'active')).toBe('activate');
  });

  it('reads a typed user code whatever its case, spaces and dashes, and refuses a wrong length or letter', () => {
    const code = userCodeAlphabet.slice(0, userCodeLength);
    expect(normalizeUserCode(code.toLowerCase())).toBe(code);
    expect(normalizeUserCode(` ${code.slice(0, 4)}-${code.slice(4)} `)).toBe(code);
    expect(normalizeUserCode(code.slice(1))).toBeNull();
    expect(normalizeUserCode(`${code}${code[0]}`)).toBeNull();
    const outside = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'].find((letter) => !userCodeAlphabet.includes(letter))!;
    expect(normalizeUserCode(`${outside}${code.slice(1)}`)).toBeNull();
  });
});
