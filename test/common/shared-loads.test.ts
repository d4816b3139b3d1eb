import { describe, expect, it, vi } from 'vitest';
import { SharedLoads } from '../../src/engine/common/index.ts';

/** A load that answers when told to, counting how often it was started. */
function controlledLoad<V>() {
  let started = 0;
  const answers: ((value: V) => void)[] = [];
  const load = () => {
    started++;
    return new Promise<V>((resolve) => answers.push(resolve));
  };
  return { load, started: () => started, answer: (index: number, value: V) => answers[index]!(value) };
}

describe('overlapping lookups', () => {
  it('of the same key share one load and its answer', async () => {
    const loads = new SharedLoads<string | undefined>((value) => value !== undefined);
    const control = controlledLoad<string | undefined>();
    const callers = [loads.load('key', 0, control.load), loads.load('key', 0, control.load), loads.load('key', 0, control.load)];
    control.answer(0, 'row');
    expect(await Promise.all(callers)).toEqual(['row', 'row', 'row']);
    expect(control.started()).toBe(1);
  });

  it('run a query builder once however many callers wait for it (a builder runs again at every then)', async () => {
    const loads = new SharedLoads<string>(() => true);
    let runs = 0;
    const builder: PromiseLike<string> = { then: (onFulfilled, onRejected) => Promise.resolve(`row ${++runs}`).then(onFulfilled, onRejected) };
    const callers = [loads.load('key', 0, () => builder), loads.load('key', 0, () => builder), loads.load('key', 0, () => builder)];
    expect(await Promise.all(callers)).toEqual(['row 1', 'row 1', 'row 1']);
    expect(runs).toBe(1);
  });

  it('share nothing once the load ended: a later miss loads again', async () => {
    const loads = new SharedLoads<string>(() => true);
    let started = 0;
    const load = () => Promise.resolve(`row ${++started}`);
    expect(await loads.load('key', 0, load)).toBe('row 1');
    expect(await loads.load('key', 0, load)).toBe('row 2');
  });

  it('hand a refusal only to the caller who started the load: a joiner looks again for itself', async () => {
    const loads = new SharedLoads<string | undefined>((value) => value !== undefined);
    const control = controlledLoad<string | undefined>();
    const first = loads.load('key', 0, control.load);
    const joiner = loads.load('key', 0, control.load);
    control.answer(0, undefined);
    expect(await first).toBeUndefined();
    await vi.waitFor(() => expect(control.started()).toBe(2));
    control.answer(1, 'written meanwhile');
    expect(await joiner).toBe('written meanwhile');
  });

  it('of another generation (a revocation heard in between) do not join the running one', async () => {
    const loads = new SharedLoads<string>(() => true);
    const control = controlledLoad<string>();
    const before = loads.load('key', 0, control.load);
    const after = loads.load('key', 1, control.load);
    expect(control.started()).toBe(2);
    control.answer(0, 'read before the revocation');
    control.answer(1, 'read after it');
    expect(await before).toBe('read before the revocation');
    expect(await after).toBe('read after it');
  });

  it('that were forgotten are not joined, and their callers still get their answers', async () => {
    const loads = new SharedLoads<string>(() => true);
    const control = controlledLoad<string>();
    const running = loads.load('key', 0, control.load);
    loads.forget('key');
    const later = loads.load('key', 0, control.load);
    expect(control.started()).toBe(2);
    control.answer(0, 'first');
    control.answer(1, 'second');
    expect([await running, await later]).toEqual(['first', 'second']);
  });

  it('of different keys load each their own', async () => {
    const loads = new SharedLoads<string>(() => true);
    const control = controlledLoad<string>();
    const callers = [loads.load('a', 0, control.load), loads.load('b', 0, control.load)];
    control.answer(0, 'a');
    control.answer(1, 'b');
    expect(await Promise.all(callers)).toEqual(['a', 'b']);
    expect(control.started()).toBe(2);
  });

  it('pass a failed load to every caller that joined it', async () => {
    const loads = new SharedLoads<string>(() => true);
    let rejectLoad: (error: Error) => void = () => {};
    const load = () => new Promise<string>((_, reject) => (rejectLoad = reject));
    const callers = [loads.load('key', 0, load), loads.load('key', 0, load)];
    rejectLoad(new Error('connection lost'));
    for (const caller of callers) await expect(caller).rejects.toThrow('connection lost');
  });
});
