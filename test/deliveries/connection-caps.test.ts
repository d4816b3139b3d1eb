import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/engine/common/index.ts';
import { createConnectionCap } from '../../src/engine/identity/index.ts';
import { AppError } from '../../src/errors.ts';

/**
 * The per-instance total of the stream and socket caps. Through HTTP it would take 20,000 open
 * streams (test/deliveries/stream-caps.test.ts covers the per-credential and per-key caps that way), so the
 * counting itself is driven here with small numbers.
 */
const agent = (user: number, key: number): Principal => ({
  user_id: `00000000-0000-4000-8000-${String(user).padStart(12, '0')}`,
  caller_type: 'agent',
  platform: 'custom_mcp',
  api_key_id: `00000000-0000-4000-9000-${String(key).padStart(12, '0')}`,
});

const refusal = (open: () => unknown) => {
  try {
    open();
  } catch (error) {
    return error instanceof AppError ? { code: error.code, detail: error.detail } : error;
  }
  return null;
};

describe('the per-instance total of a connection cap', () => {
  it('refuses the first connection over the total with 4290, whoever asks, and takes it back on release', () => {
    const cap = createConnectionCap('streams', 2, 10, 3);
    const releases = [cap.open(agent(1, 1)), cap.open(agent(2, 2)), cap.open(agent(3, 3))];
    expect(cap.openTotal).toBe(3);
    expect(refusal(() => cap.open(agent(4, 4)))).toMatchObject({ code: 4290, detail: 'this instance has 3 streams open' });
    releases[0]!();
    expect(cap.openTotal).toBe(2);
    expect(refusal(() => cap.open(agent(4, 4)))).toBeNull();
  });

  it('counts a release once, however often it is called', () => {
    const cap = createConnectionCap('streams', 1, 10, 10);
    const release = cap.open(agent(1, 1));
    release();
    release();
    expect(cap.openTotal).toBe(0);
    cap.open(agent(1, 1));
    // The credential's one place is taken again, so the double release did not free a second one.
    expect(refusal(() => cap.open(agent(1, 1)))).toMatchObject({ code: 4290 });
  });
});
