import { migrationSource } from './src/db/migrate.ts';

/**
 * For the knex command line against PostgreSQL. The server itself migrates on start, and
 * `npm run migrate` covers both PostgreSQL and the embedded default.
 */
export default {
  client: 'pg',
  connection: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/marketplace',
  migrations: { migrationSource },
};
