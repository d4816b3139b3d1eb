import type { Knex } from 'knex';
import { createIndexConcurrently } from '../concurrent-index.ts';

/**
 * The capability list (GET /api/v1/capabilities) shows a space's offered capabilities newest
 * first, most often unfiltered or by category, and the MCP categories resource counts them per
 * category. These partial indexes serve both in index order, so a page costs the rows it shows
 * rather than a sort of the whole space; withdrawn and deleted capabilities are not in them.
 * Lists of one owner use the owner_user_id index of migration 002.
 *
 * Built CONCURRENTLY, as in migration 008, so that a large table keeps taking writes meanwhile;
 * a build that failed halfway leaves an invalid index, which is dropped and built again.
 */
export const config = { transaction: false };

const indexes = {
  capabilities_offered_newest: 'ON capabilities (owner_type, created_at DESC, id DESC) WHERE available',
  capabilities_offered_category_newest: 'ON capabilities (owner_type, category, created_at DESC, id DESC) WHERE available',
};

export async function up(knex: Knex): Promise<void> {
  for (const [name, definition] of Object.entries(indexes)) await createIndexConcurrently(knex, name, definition);
}

export async function down(knex: Knex): Promise<void> {
  for (const name of Object.keys(indexes)) await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
}
