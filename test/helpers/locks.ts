import type { Knex } from 'knex';

/** For tests that hold a row or table lock on real PostgreSQL to keep a request in flight. */
export async function lockWaiters(db: Knex): Promise<number> {
  const result = await db.raw(`SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
  return (result.rows[0] as { waiting: number }).waiting;
}

/** Waits (up to 5 s) until `condition` holds; the test's own assertions say what it expected. */
export async function until(condition: () => Promise<boolean>) {
  for (let attempt = 0; attempt < 500 && !(await condition()); attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
}
