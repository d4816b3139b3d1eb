import { randomUUID } from 'node:crypto';
import { unauthenticated } from '../../errors.ts';
import { limits } from '../../limits.ts';
import { periodic } from '../../periodic.ts';
import * as store from '../../store/identity.ts';
import type { Admission } from './admission.ts';
import type { EngineDependencies, Principal } from '../common/index.ts';

/** Every instance hears on this channel which key was revoked, and forgets it at once. */
export const apiKeyRevokedChannel = 'identity.api-key-revoked';
/** Each instance says on this channel that it has forgotten a revoked key (the announcement's id). */
export const apiKeyForgottenChannel = 'identity.api-key-forgotten';

export interface RevokedKey {
  key_prefix: string;
  api_key_id: string;
}

/** What the identity engine caches about keys, so that a revocation can empty it. */
export interface KeyCache {
  forget(prefix: string): void;
  forgetAll(): void;
}

/**
 * How a revoked API key stops working on every instance (docs/decisions/identity-and-access.md
 * "Device authorization: the issued key and its revocation"). The revocation is announced on the bus, and each instance forgets the key and
 * ends what it has open with it. Pub/sub keeps nothing, so an announcement can be lost (Redis down
 * when it is published, a subscriber reconnecting): each instance therefore also asks the
 * database, every STREAM_HEARTBEAT_MS and whenever its bus connection comes back, which of the
 * keys its streams and sockets use are revoked, and ends those.
 */
export function createKeyRevocations({ db, bus, log, config }: EngineDependencies, admission: Admission, cache: KeyCache) {
  const acknowledgements = createAcknowledgements();
  // Counts the revocations heard (and the bus reconnections, after which any may have been
  // missed). Work that read a key before a revocation and ends after it compares the count.
  let heard = 0;
  // The count when each API-key principal started to authenticate.
  const heardAtAuthentication = new WeakMap<Principal, number>();

  /** This instance stops accepting the key and ends the streams and sockets open with it. */
  function forget(revoked: RevokedKey) {
    heard += 1;
    cache.forget(revoked.key_prefix);
    admission.sseStreams.endApiKey(revoked.api_key_id);
    admission.webSockets.endApiKey(revoked.api_key_id);
  }

  /** The catch-up for lost announcements: one query for the keys in use here; returns how many were revoked. */
  async function endRevokedInUse(): Promise<number> {
    const inUse = [...new Set([...admission.sseStreams.openApiKeyIds(), ...admission.webSockets.openApiKeyIds()])];
    if (inUse.length === 0) return 0;
    const revoked = await store.findRevokedApiKeys(db, inUse);
    for (const key of revoked) forget({ key_prefix: key.key_prefix, api_key_id: key.id });
    return revoked.length;
  }

  const check = periodic('revoked API key check', endRevokedInUse, log);

  async function listen(): Promise<() => Promise<void>> {
    bus.onReconnect(() => {
      heard += 1;
      cache.forgetAll();
      endRevokedInUse().catch((error: unknown) => log.error('revoked API key check failed', { error }));
    });
    const stopAcknowledging = await bus.subscribe(apiKeyForgottenChannel, (message) => acknowledgements.heard(message));
    const unsubscribe = await bus.subscribe(apiKeyRevokedChannel, (message) => {
      try {
        const revoked = JSON.parse(message) as { key_prefix: unknown; api_key_id: unknown; announcement?: unknown };
        forget({ key_prefix: String(revoked.key_prefix), api_key_id: String(revoked.api_key_id) });
        // Tells the announcing instance this one no longer accepts the key.
        if (typeof revoked.announcement === 'string') {
          bus
            .publish(apiKeyForgottenChannel, revoked.announcement)
            .catch((error: unknown) => log.warn('could not acknowledge an API key revocation', { error }));
        }
      } catch (error) {
        log.warn('unreadable API key revocation on the bus', { error });
      }
    });
    check.start(config.STREAM_HEARTBEAT_MS);
    return async () => {
      check.stop();
      await check.idle();
      await unsubscribe();
      await stopAcknowledging();
    };
  }

  /**
   * Announces a committed revocation: here at once, elsewhere through the bus, and returns once
   * every instance that heard it has said it forgot the key (docs/decisions/identity-and-access.md
   * "A revocation holds everywhere when its DELETE answers"), or after
   * limits.apiKeyRevocationAcknowledgementWaitMs: so when the revoking request is answered, no
   * instance accepts the key any more. On Redis the publish says how many instances heard it;
   * the in-process bus tells its listeners before publish returns.
   */
  async function announce(revoked: RevokedKey) {
    forget(revoked);
    if (!bus.shared) {
      await bus.publish(apiKeyRevokedChannel, JSON.stringify(revoked));
      return;
    }
    const { redis, keyPrefix } = bus.shared;
    const announcement = randomUUID();
    const waiting = acknowledgements.expect(announcement);
    try {
      const listeners = await redis.publish(keyPrefix + apiKeyRevokedChannel, JSON.stringify({ ...revoked, announcement }));
      if (!(await waiting.until(listeners, limits.apiKeyRevocationAcknowledgementWaitMs))) {
        log.warn('an API key revocation was not acknowledged by every instance in time; those forget the key when their cache entry ends', {
          api_key_id: revoked.api_key_id,
          instances: listeners,
        });
      }
    } finally {
      waiting.done();
    }
  }

  /**
   * A stream registers for revocation only after authentication and a rate-limit round trip; a
   * revocation heard in that gap would miss it. Called once the stream is registered (so that any
   * later revocation ends it): if a revocation was heard since the principal started to
   * authenticate, the key is read again, and a revoked one is refused (4010).
   */
  async function refuseIfRevokedSince(principal: Principal) {
    if (principal.api_key_id === null || heardAtAuthentication.get(principal) === heard) return;
    const key = await store.findApiKeyById(db, principal.api_key_id);
    if (!key || key.revoked_at !== null) throw unauthenticated('this API key was revoked');
  }

  return {
    get heard() {
      return heard;
    },
    noteAuthenticated: (principal: Principal, heardBefore: number) => heardAtAuthentication.set(principal, heardBefore),
    forget,
    listen,
    announce,
    refuseIfRevokedSince,
    endRevokedInUse,
  };
}

export type KeyRevocations = ReturnType<typeof createKeyRevocations>;

/** Counts the acknowledgements of each announcement this instance waits for. */
function createAcknowledgements() {
  const waiting = new Map<string, { count: number; wake: () => void }>();
  return {
    heard(announcement: string) {
      const entry = waiting.get(announcement);
      if (!entry) return;
      entry.count += 1;
      entry.wake();
    },
    expect(announcement: string) {
      const entry = { count: 0, wake: () => {} };
      waiting.set(announcement, entry);
      return {
        /** Whether `expected` acknowledgements arrived within `waitMs`. */
        until(expected: number, waitMs: number): Promise<boolean> {
          return new Promise((resolve) => {
            const timer = setTimeout(() => resolve(entry.count >= expected), waitMs);
            entry.wake = () => {
              if (entry.count < expected) return;
              clearTimeout(timer);
              resolve(true);
            };
            entry.wake();
          });
        },
        done: () => waiting.delete(announcement),
      };
    },
  };
}
