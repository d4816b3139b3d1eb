/** A tiny structured logger: one JSON line per event, so logs stay greppable and parseable. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export function createLogger(level: LogLevel, write: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): Logger {
  const emit =
    (at: Exclude<LogLevel, 'silent'>) =>
    (message: string, fields: Record<string, unknown> = {}) => {
      if (order[at] < order[level]) return;
      write(JSON.stringify({ time: new Date().toISOString(), level: at, message, ...serializeFields(fields) }));
    };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}

/**
 * A logger that adds `fields` to every line, for code working on behalf of one request (its id).
 * The request's logger is handed down explicitly rather than found through AsyncLocalStorage,
 * whose promise hooks on Node 20 doubled the server's CPU per request (docs/benchmark-history.md).
 */
export function withFields(log: Logger, fields: Record<string, unknown>): Logger {
  const add =
    (write: Logger['info']) =>
    (message: string, more: Record<string, unknown> = {}) =>
      write(message, { ...fields, ...more });
  return { debug: add(log.debug), info: add(log.info), warn: add(log.warn), error: add(log.error) };
}

function serializeFields(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    out[key] = value instanceof Error ? describeError(value) : value;
  }
  return out;
}

/**
 * What a log line may say about an error. A database error's message and stack carry the whole
 * statement (knex even inlines the bound values) and its `detail` and `where` carry row values, so
 * any caller who can cause one could fill the log with text of their choosing. Of a database
 * error only a safe summary is kept: the SQLSTATE, the prepared statement's name when known
 * (db/prepared.ts), and the names of the constraint, table and column involved.
 */
export function describeError(error: Error): Record<string, unknown> {
  const { code, severity, constraint, table, column, statement } = error as Error & Record<string, unknown>;
  const fromDatabase = typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && typeof severity === 'string';
  if (!fromDatabase) return { name: error.name, message: error.message, stack: error.stack };
  return { name: 'DatabaseError', sqlstate: code, statement, constraint, table, column };
}
