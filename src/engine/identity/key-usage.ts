import type { Knex } from 'knex';
import { limits } from '../../limits.ts';
import { touchApiKey } from '../../store/identity.ts';
import type { EngineDependencies } from '../common/index.ts';

/**
 * "Last used" of a person's keys (the console's My agents page): an authenticated request notes
 * the key's use without waiting for it, and each instance writes it at most once a minute per key
 * (limits.apiKeyLastUsedResolutionMs), so a busy agent costs one small UPDATE a minute, not one per
 * request. A failed write is logged and forgotten: it never fails the request.
 */
const lastWritten = new WeakMap<Knex, Map<string, number>>();

export function noteKeyUse({ db, now, log }: Pick<EngineDependencies, 'db' | 'now' | 'log'>, apiKeyId: string): void {
  let written = lastWritten.get(db);
  if (!written) {
    written = new Map();
    lastWritten.set(db, written);
  }
  const at = now();
  const previous = written.get(apiKeyId);
  if (previous !== undefined && at.getTime() - previous < limits.apiKeyLastUsedResolutionMs) return;
  // The map forgets keys written long ago, so it holds at most the keys used in the last minute or so.
  if (written.size > 10_000) for (const [id, time] of written) if (at.getTime() - time >= limits.apiKeyLastUsedResolutionMs) written.delete(id);
  written.set(apiKeyId, at.getTime());
  touchApiKey(db, apiKeyId, at, new Date(at.getTime() - limits.apiKeyLastUsedResolutionMs)).then(
    () => undefined,
    (error: unknown) => log.warn('could not note the use of an API key', { error, api_key_id: apiKeyId }),
  );
}
