/**
 * Errors that mean a backend (PostgreSQL or Redis) cannot be reached right now, as opposed to a
 * fault of the request or of our code (issue 16: "while PostgreSQL or Redis is down, requests
 * answer 503 with Retry-After, never 500"). They are recognised by what the drivers throw:
 * socket errors, PostgreSQL's shutdown and connection-exception SQLSTATEs, knex's pool timeout,
 * node-postgres's and ioredis's own "connection closed" errors.
 */
export type Dependency = 'database' | 'bus';

const socketCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTCONN', 'EAI_AGAIN']);
/** admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections; class 08 is connection exceptions. */
const postgresStates = new Set(['57P01', '57P02', '57P03', '53300']);
const postgresMessages =
  /Connection terminated|Client has encountered a connection error|Knex: Timeout acquiring a connection|Unable to acquire a connection|Connection ended unexpectedly|terminating connection/i;
const redisMessages = /Connection is closed|MaxRetriesPerRequest|Stream isn't writeable|Redis connection|ioredis/i;

export function dependencyFailureOf(error: unknown): Dependency | null {
  for (let cause = error, depth = 0; cause && depth < 5; cause = (cause as { cause?: unknown }).cause, depth++) {
    const { code, message, name } = cause as { code?: unknown; message?: unknown; name?: unknown };
    const text = typeof message === 'string' ? message : '';
    if (name === 'MaxRetriesPerRequestError' || redisMessages.test(text)) return 'bus';
    if (name === 'KnexTimeoutError' || postgresMessages.test(text)) return 'database';
    if (typeof code === 'string' && (postgresStates.has(code) || code.startsWith('08'))) return 'database';
    if (typeof code === 'string' && socketCodes.has(code)) return /6379|redis/i.test(text) ? 'bus' : 'database';
  }
  return null;
}
