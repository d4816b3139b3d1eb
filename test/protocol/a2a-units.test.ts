import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  actionOf,
  contextIdOf,
  messageKeyOf,
  milestonesOf,
  type MilestoneSource,
  partsForHistory,
  pickOf,
  titleOf,
  v01MessageIdOf,
} from '../../src/domain/a2a.ts';

/**
 * The A2A rules without a protocol around them (src/domain/a2a.ts): context ids, message keys,
 * how history keeps parts, demand titles, a buyer's words (a pick, confirm, dispute) and the
 * states a transaction went through. The A2A tests meet them through three generations; these
 * pin each edge (issue 16, mutation testing of the text group).
 */
describe('ids of contexts and messages', () => {
  it('keeps a UUID context id (lower-cased) and maps anything else to its version 5 UUID, the same every time', () => {
    expect(contextIdOf('0B6F3C1E-1D2A-4C3B-9E8F-0A1B2C3D4E5F')).toBe('0b6f3c1e-1d2a-4c3b-9e8f-0a1b2c3d4e5f');
    const free = contextIdOf('my session 42');
    expect(free).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(contextIdOf('my session 42')).toBe(free);
    expect(contextIdOf('my session 43')).not.toBe(free);
    const digest = createHash('sha1').update(Buffer.from('9b0e4c52d1f84e7a8f3c6a1d2e5b7c90', 'hex')).update('my session 42', 'utf8').digest('hex');
    expect(free.replace(/-/g, '').slice(0, 12)).toBe(digest.slice(0, 12));
    expect(free.replace(/-/g, '').slice(16 + 1, 32)).toBe(digest.slice(17, 32));
  });

  it('uses a message id as its key when it is a valid key, else its hash', () => {
    expect(messageKeyOf('msg-1')).toBe('msg-1');
    expect(messageKeyOf('x'.repeat(64))).toBe('x'.repeat(64));
    const hashOf = (text: string) => `msg-sha256:${createHash('sha256').update(text, 'utf8').digest('base64url')}`;
    expect(messageKeyOf('x'.repeat(65))).toBe(hashOf('x'.repeat(65)));
    expect(messageKeyOf('has space')).toBe(hashOf('has space'));
    expect(messageKeyOf('消息')).toBe(hashOf('消息'));
    expect(messageKeyOf('ok~!')).toBe('ok~!');
  });

  it('names a v0.1 message by its task and content: the same resend, the same id', () => {
    const id = v01MessageIdOf('task-1', [{ type: 'text', text: 'hi' }]);
    expect(id).toBe(
      `v01:${createHash('sha256')
        .update(`task-1\n${JSON.stringify([{ type: 'text', text: 'hi' }])}`, 'utf8')
        .digest('base64url')}`,
    );
    expect(v01MessageIdOf('task-1', [{ type: 'text', text: 'hi' }])).toBe(id);
    expect(v01MessageIdOf('task-2', [{ type: 'text', text: 'hi' }])).not.toBe(id);
  });
});

describe('history and titles', () => {
  it('keeps parts while they fit, and leaves a marker for each that does not, text keeping its beginning', () => {
    const small = { kind: 'text' as const, text: 'hello' };
    const bigData = { kind: 'data' as const, data: { blob: 'x'.repeat(2_000) } };
    const bigText = { kind: 'text' as const, text: 'y'.repeat(3_000) };
    const kept = partsForHistory([small, bigData, bigText], 1_000);
    expect(kept[0]).toEqual(small);
    expect(kept[1]).toEqual({
      kind: 'data',
      data: { history_omitted_bytes: Buffer.byteLength(JSON.stringify(bigData)), reason: 'history keeps at most 1000 bytes of parts per message' },
    });
    const cut = (kept[2] as { text: string }).text;
    expect(cut.startsWith('y'.repeat(100))).toBe(true);
    expect(cut).toContain(`… [${Buffer.byteLength(JSON.stringify(bigText))} bytes cut: history keeps at most 1000 bytes of parts per message]`);
    expect(Buffer.byteLength(JSON.stringify(kept))).toBeLessThan(1_400);
    const exact = Buffer.byteLength(JSON.stringify(small));
    expect(partsForHistory([small], exact)).toEqual([small]);
    expect(partsForHistory([small], exact - 1)[0]).not.toEqual(small);
    expect((partsForHistory([bigText], 100)[0] as { text: string }).text.startsWith('…')).toBe(true);
  });

  it('counts every part kept, whole or cut, against the limit, and cuts a text to what the earlier parts left', () => {
    const small = { kind: 'text' as const, text: 'hello' };
    const size = Buffer.byteLength(JSON.stringify(small));
    expect(partsForHistory([small, { kind: 'text', text: 'world' }], size + 10)).toEqual([
      small,
      { kind: 'text', text: `… [${size} bytes cut: history keeps at most ${size + 10} bytes of parts per message]` },
    ]);
    const bigText = { kind: 'text' as const, text: 'y'.repeat(3_000) };
    // (1000 - 30 bytes of "hello" - 200) / 6 = 128 characters.
    expect(partsForHistory([small, bigText], 1_000)[1]).toEqual({
      kind: 'text',
      text: `${'y'.repeat(128)}… [3025 bytes cut: history keeps at most 1000 bytes of parts per message]`,
    });
    const medium = { kind: 'text' as const, text: 'm'.repeat(850) };
    const [, after] = partsForHistory([bigText, medium], 1_000) as { kind: string; text: string }[];
    // The cut first part took 208 bytes: (1000 - 208 - 200) / 6 = 98 characters of the second are kept.
    expect(after).toEqual({ kind: 'text', text: `${'m'.repeat(98)}… [875 bytes cut: history keeps at most 1000 bytes of parts per message]` });
  });

  it('titles a demand by its first line, cut at a word within the limit', () => {
    expect(titleOf('  Translate my contract  \nmore lines', 50)).toBe('Translate my contract');
    // Blank lines before the words are not the title.
    expect(titleOf('\n\n  Translate my contract\nmore lines', 50)).toBe('Translate my contract');
    expect(titleOf('abcdefghij', 10)).toBe('abcdefghij');
    expect(titleOf('Translate a long legal contract into Chinese', 20)).toBe('Translate a long…');
    expect(titleOf('Supercalifragilistic expialidocious', 12)).toBe('Supercalifr…');
    expect(titleOf('ab cdefghijklmnop', 10)).toBe('ab cdefgh…');
    expect(titleOf('aaaaaaaaaaaa  bbbbbbbbbb', 20)).toBe('aaaaaaaaaaaa…');
    // A last space at exactly half the limit is too early to cut at.
    expect(titleOf('abcdefghij klmnopqrstuvwxyz', 20)).toBe('abcdefghij klmnopqr…');
  });
});

describe("a buyer's words", () => {
  it.each([
    ['1', { number: 1 }],
    ['#2', { number: 2 }],
    ['buy 3', { number: 3 }],
    ['Take 12.', { number: 12 }],
    ['选 1', { number: 1 }],
    ['第2个', { number: 2 }],
    ['no. 4', { number: 4 }],
    ['0b6f3c1e-1d2a-4c3b-9e8f-0a1b2c3d4e5f', { capabilityId: '0b6f3c1e-1d2a-4c3b-9e8f-0a1b2c3d4e5f' }],
    ['buy 0B6F3C1E', { capabilityId: '0b6f3c1e' }],
    ['0b6f3c1e-1d', { capabilityId: '0b6f3c1e-1d' }],
    ['0b6f-3c1e', { capabilityId: '0b6f-3c1e' }],
  ] as const)('reads %j as a pick', (text, pick) => {
    expect(pickOf(text)).toEqual(pick);
  });

  it('reads a pick or an answer with blank space or a line break around it as without', () => {
    expect(pickOf('  buy 2.\n')).toEqual({ number: 2 });
    expect(pickOf('0b6f3c1e!  ')).toEqual({ capabilityId: '0b6f3c1e' });
    expect(actionOf(' confirm.\n')).toEqual({ action: 'confirm' });
    expect(actionOf('\t确认\n')).toEqual({ action: 'confirm' });
  });

  it.each(['1234', 'buy the first one', 'translate 2 pages', '0b6f3c1', '0b6f-3c1', 'pick me', ''])('reads %j as no pick', (text) => {
    expect(pickOf(text)).toBeNull();
  });

  it('reads confirm and dispute (with or without a reason) in both languages, and nothing else', () => {
    for (const text of ['confirm', 'Confirmed!', 'accept', 'accepted.', '确认', '确认收货。']) expect(actionOf(text)).toEqual({ action: 'confirm' });
    expect(actionOf('dispute')).toEqual({ action: 'dispute' });
    expect(actionOf('dispute: the file is empty')).toEqual({ action: 'dispute', reason: 'the file is empty' });
    expect(actionOf('争议：文件是空的')).toEqual({ action: 'dispute', reason: '文件是空的' });
    expect(actionOf('dispute -  ')).toEqual({ action: 'dispute' });
    for (const text of ['I confirm nothing', 'disputed', 'disputes', 'ok', '']) expect(actionOf(text)).toBeNull();
  });
});

describe('the states a transaction went through', () => {
  const base: MilestoneSource = {
    status: 'pending_freeze',
    created_at: 't0',
    updated_at: 't9',
    frozen_at: null,
    accepted_at: null,
    delivered_at: null,
    settled_at: null,
    dispute_reason: null,
  };

  it('reads them from the timestamps, in order', () => {
    expect(milestonesOf(base)).toEqual([{ status: 'pending_freeze', at: 't0' }]);
    expect(milestonesOf({ ...base, status: 'frozen', frozen_at: 't1' })).toEqual([{ status: 'frozen', at: 't1' }]);
    expect(
      milestonesOf({ ...base, status: 'settled', frozen_at: 't1', accepted_at: 't2', delivered_at: 't3', settled_at: 't4' }).map((each) => [
        each.status,
        each.at,
      ]),
    ).toEqual([
      ['frozen', 't1'],
      ['accepted', 't2'],
      ['delivered', 't3'],
      ['settled', 't4'],
    ]);
  });

  it('shows delivered only after an accept, disputes where they happened, and ends without a settlement time at the last change', () => {
    expect(milestonesOf({ ...base, status: 'settled', frozen_at: 't1', delivered_at: 't3', settled_at: 't4' }).map((each) => each.status)).toEqual([
      'frozen',
      'settled',
    ]);
    expect(milestonesOf({ ...base, status: 'disputed', frozen_at: 't1', accepted_at: 't2', delivered_at: 't3' }).map((each) => [each.status, each.at])).toEqual(
      [
        ['frozen', 't1'],
        ['accepted', 't2'],
        ['delivered', 't3'],
        ['disputed', 't9'],
      ],
    );
    expect(milestonesOf({ ...base, status: 'refunded', frozen_at: 't1', accepted_at: 't2', delivered_at: 't3' }).map((each) => each.status)).toEqual([
      'frozen',
      'accepted',
      'delivered',
      'disputed',
      'refunded',
    ]);
    expect(
      milestonesOf({ ...base, status: 'settled', frozen_at: 't1', accepted_at: 't2', delivered_at: 't3', settled_at: 't4', dispute_reason: 'late' }).map(
        (each) => each.status,
      ),
    ).toEqual(['frozen', 'accepted', 'delivered', 'disputed', 'settled']);
    expect(milestonesOf({ ...base, status: 'cancelled_by_buyer' }).map((each) => [each.status, each.at])).toEqual([
      ['pending_freeze', 't0'],
      ['cancelled_by_buyer', 't9'],
    ]);
    for (const status of ['rejected_by_seller', 'failed'] as const)
      expect(milestonesOf({ ...base, status, frozen_at: 't1' }).at(-1)).toEqual({ status, at: 't9' });
    expect(milestonesOf({ ...base, status: 'accepted', frozen_at: 't1', accepted_at: 't2' }).at(-1)).toEqual({ status: 'accepted', at: 't2' });
  });
});
