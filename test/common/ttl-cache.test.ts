import { describe, expect, it } from 'vitest';
import { TtlCache } from '../../src/engine/common/index.ts';

describe('the credential cache', () => {
  it('forgets an entry once its time to live has passed', () => {
    let now = 0;
    const cache = new TtlCache<string>(1000, 10, () => now);
    cache.set('key', 'value');
    now = 999;
    expect(cache.get('key')).toBe('value');
    now = 1000;
    expect(cache.get('key')).toBeUndefined();
  });

  it('never holds more than its bound, evicting the oldest first', () => {
    const cache = new TtlCache<number>(60_000, 3);
    for (const index of [1, 2, 3, 4]) cache.set(`key-${index}`, index);
    expect(cache.get('key-1')).toBeUndefined();
    expect([cache.get('key-2'), cache.get('key-3'), cache.get('key-4')]).toEqual([2, 3, 4]);
  });

  it('forgets an entry it is told is no longer true', () => {
    const cache = new TtlCache<string>(60_000, 10);
    cache.set('key', 'value');
    cache.delete('key');
    expect(cache.get('key')).toBeUndefined();
  });
});
