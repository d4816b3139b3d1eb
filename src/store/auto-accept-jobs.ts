import type { Knex } from 'knex';

/** Records that these capabilities were offered (anew) and await auto-accept scoring; a pending job is made due again. */
export async function enqueueAutoAccept(trx: Knex, capabilityIds: string[], at: Date): Promise<void> {
  if (capabilityIds.length === 0) return;
  await trx('auto_accept_jobs')
    .insert(capabilityIds.map((capability_id) => ({ capability_id, due_at: at, claimed_at: null, attempts: 0 })))
    .onConflict('capability_id')
    .merge(['due_at', 'claimed_at', 'attempts']);
}

/**
 * Takes up to `batchSize` due jobs that nobody holds (or whose holder's claim went stale), for
 * this run: one statement, SKIP LOCKED, so instances running it at once take different jobs.
 */
export async function claimAutoAcceptJobs(db: Knex, at: Date, staleBefore: Date, batchSize: number): Promise<{ capability_id: string; attempts: number }[]> {
  const result = await db.raw(
    `UPDATE auto_accept_jobs SET claimed_at = ?, attempts = attempts + 1
     WHERE capability_id IN (
       SELECT capability_id FROM auto_accept_jobs WHERE due_at <= ? AND (claimed_at IS NULL OR claimed_at < ?)
       ORDER BY due_at LIMIT ? FOR UPDATE SKIP LOCKED)
     RETURNING capability_id, attempts`,
    [at, at, staleBefore, batchSize],
  );
  return result.rows as { capability_id: string; attempts: number }[];
}

/** Done: deleted only if this run still holds it (a new offer meanwhile made it due again, unclaimed). */
export const finishAutoAcceptJob = (db: Knex, capabilityId: string, claimedAt: Date) =>
  db('auto_accept_jobs').where({ capability_id: capabilityId, claimed_at: claimedAt }).del();
