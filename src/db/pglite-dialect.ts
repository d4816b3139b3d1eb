import { PGlite } from '@electric-sql/pglite';
// knex ships its postgres client as CommonJS without its own type for this path.
// @ts-expect-error no declaration file for the internal dialect module
import PostgresClientModule from 'knex/lib/dialects/postgres/index.js';

// The internal client is untyped; this is the little of its shape the dialect relies on.
// biome-ignore lint: the base class is dynamic by nature
type AnyMembers = { dialect: string; driverName: string; [member: string]: any };
const PostgresClient = PostgresClientModule as new (config: object) => AnyMembers;

/**
 * A knex dialect over embedded PGlite. It reuses knex's postgres query compiler and only swaps the
 * driver, so SQL is identical on PGlite and on PostgreSQL. Two behaviours are made to match pg:
 * int8 and numeric come back as strings (never a lossy number or a BigInt that JSON cannot
 * serialize), and update/delete answer with a row count.
 */
const int8TypeId = 20;
const numericTypeId = 1700;
const identity = (value: string) => value;

interface PgliteQueryResult {
  rows: unknown[];
  affectedRows?: number;
  fields: { name: string; dataTypeID: number }[];
}

const commandByMethod: Record<string, string> = {
  select: 'SELECT',
  first: 'SELECT',
  pluck: 'SELECT',
  insert: 'INSERT',
  update: 'UPDATE',
  del: 'DELETE',
  counter: 'UPDATE',
};

export class PgliteClient extends PostgresClient {
  declare config: { connection: { pglite: PGlite } };
  constructor(config: { connection: { pglite: PGlite } }) {
    super({ ...config, client: 'pg' });
    this.dialect = 'postgresql';
    this.driverName = 'pglite';
  }

  _driver() {
    return {};
  }

  async _acquireOnlyConnection() {
    return this.config.connection.pglite;
  }

  async destroyRawConnection() {
    // The PGlite instance is owned and closed by createDatabase, not by the pool.
  }

  async checkVersion() {
    return '16.0';
  }

  async setSchemaSearchPath() {
    return true;
  }

  async _query(connection: PGlite, queryObject: { sql: string; bindings?: unknown[]; method?: string; response?: unknown }) {
    const result = (await connection.query(queryObject.sql, queryObject.bindings ?? [], {
      parsers: { [int8TypeId]: identity, [numericTypeId]: identity },
    })) as PgliteQueryResult;
    const command = commandByMethod[queryObject.method ?? ''] ?? 'SELECT';
    queryObject.response = {
      rows: result.rows,
      rowCount: command === 'SELECT' ? result.rows.length : (result.affectedRows ?? result.rows.length),
      command,
      fields: result.fields,
    };
    return queryObject;
  }
}
