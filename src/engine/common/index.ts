/**
 * The common room: what every other room stands on and nothing market-specific. The engine's
 * dependencies (database, bus, clock, configuration), cursors and newest-first paging, the small
 * TTL cache and the sharing of overlapping lookups, the per-account cap lock and its refusal, the outbound network policy for callbacks,
 * and retention, which keeps the tables every room fills bounded. It imports no other room.
 */
export { capReached, lockAccount } from './caps.ts';
export { decodeCursor, encodeCursor, integerText, isoTimestamp, uuidText } from './cursor.ts';
export { type CallerType, type EngineDependencies, type Principal } from './dependencies.ts';
export { outboundNetwork } from './outbound.ts';
export { newestFirstPage } from './paging.ts';
export { createRetention } from './retention.ts';
export { SharedLoads } from './shared-loads.ts';
export { TtlCache } from './ttl-cache.ts';
