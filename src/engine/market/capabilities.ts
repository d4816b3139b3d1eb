import { enqueueAutoAccept } from '../../store/auto-accept-jobs.ts';
import { wordColumnsOf } from '../../domain/term-vectors.ts';
import type { Knex } from 'knex';
import { categoryCodes } from '../../domain/categories.ts';
import { withTransaction } from '../../db/transaction.ts';
import { errorBody } from '../../errors.ts';
import {
  type BatchCapabilityView,
  type CapabilityListView,
  type CapabilityView,
  type CreateCapabilityInput,
  type CreatedCapabilityView,
  type DeletedCapabilityView,
  type ListCapabilitiesInput,
  type RotatedSecretView,
  type UpdateCapabilityInput,
  batchItem,
  wordsOf,
} from '../../schemas/capabilities.ts';
import { validationError } from '../../schemas/validation.ts';
import { capabilityListQuery, settledSalesOf, type CapabilityRow } from '../../store/capabilities.ts';
import { manageCapability, seeCapability, authorize } from '../access/index.ts';
import { changedColumns, newCallbackSecret, newCapabilityRow, requireCallbackAfterUpdate } from './capability-rows.ts';
import { newestFirstPage, type EngineDependencies, type Principal } from '../common/index.ts';
import type { Idempotency, IdempotencyRequest, Outcome } from '../money/index.ts';
import { capabilityView } from './capability-views.ts';

export { newCallbackSecret };

/** The capability use cases (docs/decisions/matching.md, "Capabilities: ..."), shared by REST and MCP. */
export function createCapabilityEngine({ db, now }: EngineDependencies, idempotency: Idempotency) {
  /** Registering is keyed like every state-changing POST: a retried request creates one capability. */
  function create(principal: Principal, input: CreateCapabilityInput, request: IdempotencyRequest | null): Promise<Outcome<CreatedCapabilityView>> {
    return idempotency.run(principal, request, 201, async ({ trx }) => (await insert(trx, principal, [input]))[0]!);
  }

  /** One multi-row INSERT; the answers come back in the order of `inputs`. */
  async function insert(trx: Knex, principal: Principal, inputs: CreateCapabilityInput[]): Promise<CreatedCapabilityView[]> {
    const at = now();
    const planned = inputs.map((input) => newCapabilityRow(principal, input, at));
    const rows = (await trx('capabilities').insert(planned).returning('*')) as CapabilityRow[];
    // Open auto-accept demands may wait for these: the job (engine/market/auto-accept-jobs.ts) commits with them.
    await enqueueAutoAccept(
      trx,
      rows.filter((row) => row.available).map((row) => row.id),
      at,
    );
    const byId = new Map(rows.map((row) => [row.id, row]));
    return planned.map(({ id }) => {
      const row = byId.get(id)!;
      return { ...capabilityView(row, 0), callback_secret: row.callback_secret! };
    });
  }

  /**
   * Batch registration: every item is checked on its own and the valid ones are registered
   * together, so one bad item fails alone (partial success). An item's error is the
   * `{code, message, data}` a single create would have answered, with paths from the request
   * body (`body.items.3.title`). Under an Idempotency-Key the whole answer is replayed.
   */
  function batch(principal: Principal, items: unknown[], request: IdempotencyRequest | null): Promise<Outcome<BatchCapabilityView>> {
    const checked = items.map((item, index) => {
      const parsed = batchItem.safeParse(item);
      return parsed.success ? { index, input: parsed.data } : { index, error: errorBody(validationError(parsed.error, `body.items.${index}`, item)) };
    });
    return idempotency.run(principal, request, 200, async ({ trx }) => {
      const valid = checked.filter((entry) => entry.input !== undefined);
      const created =
        valid.length > 0
          ? await insert(
              trx,
              principal,
              valid.map((entry) => entry.input),
            )
          : [];
      const createdByIndex = new Map(valid.map((entry, position) => [entry.index, created[position]!]));
      const results = checked.map(({ index, error }) =>
        error ? { index, success: false, error } : { index, success: true, data: createdByIndex.get(index)! },
      );
      return { total: items.length, succeeded: created.length, failed: items.length - created.length, results };
    });
  }

  /** Capabilities are visible only within their own space (access/capabilities.ts). */
  async function get(principal: Principal, id: string): Promise<CapabilityView> {
    const row = authorize(seeCapability, principal, await db<CapabilityRow>('capabilities').where({ id }).first(), 'capability');
    return viewWithSales(db, row);
  }

  async function viewWithSales(reader: Knex, row: CapabilityRow): Promise<CapabilityView> {
    const sales = await settledSalesOf(reader, [row.id]);
    return capabilityView(row, sales.get(row.id) ?? 0);
  }

  /**
   * Newest first, within the caller's space. With a cursor, keyset pagination on
   * (created_at, id), which capabilities registered meanwhile cannot shift.
   */
  async function list(principal: Principal, query: ListCapabilitiesInput): Promise<CapabilityListView> {
    const filter = {
      space: principal.caller_type,
      callerId: principal.user_id,
      availability: query.available,
      category: query.category,
      capabilityType: query.capability_type,
      pricingModel: query.pricing_model,
      minPrice: query.min_price_ut,
      maxPrice: query.max_price_ut,
      ownerId: query.owner === 'me' ? principal.user_id : query.owner,
      words: query.q === undefined ? [] : wordsOf(query.q),
    };
    const listed = await newestFirstPage<CapabilityRow>(() => capabilityListQuery(db, filter), query);
    const sales = await settledSalesOf(
      db,
      listed.items.map((row) => row.id),
    );
    return { ...listed, items: listed.items.map((row) => capabilityView(row, sales.get(row.id) ?? 0)) };
  }

  /**
   * A partial update by the owner, on the row locked for the decision: a concurrent update or
   * delete waits, and the callback rule is checked against what this update leaves. Past
   * transactions keep their terms (they copied price and auto-accept at creation).
   */
  function update(principal: Principal, id: string, patch: UpdateCapabilityInput): Promise<CapabilityView> {
    return withTransaction(db, async ({ trx }) => {
      const row = authorize(
        manageCapability,
        principal,
        await trx<CapabilityRow>('capabilities').where({ id }).forNoKeyUpdate().first(),
        'capability',
      ) as CapabilityRow;
      const columns = changedColumns(patch);
      // Checked when the update touches the rule's fields only: a capability registered before
      // per_use needed a callback can still be renamed or withdrawn without adding one first.
      if ('pricing_model' in columns || 'callback_url' in columns) {
        const callbackUrl = 'callback_url' in columns ? (columns.callback_url as string | null) : row.callback_url;
        requireCallbackAfterUpdate((columns.pricing_model as string | undefined) ?? row.pricing_model, callbackUrl);
      }
      // New words, new vector: computed once here, read by every match after.
      if ('title' in columns || 'description' in columns || 'tags' in columns) {
        const words = { ...row, ...columns } as { title: string; description: string; tags: string[] | string };
        const tags = typeof words.tags === 'string' ? (JSON.parse(words.tags) as string[]) : words.tags;
        Object.assign(columns, wordColumnsOf({ title: words.title, description: words.description, tags }));
      }
      const at = now();
      const [updated] = (await trx('capabilities')
        .where({ id })
        .update({ ...columns, updated_at: at })
        .returning('*')) as CapabilityRow[];
      // Offered after the change (a re-offer, a new price or text): auto-accept demands look again.
      if (updated!.available) await enqueueAutoAccept(trx, [id], at);
      return viewWithSales(trx, updated!);
    });
  }

  /**
   * Soft delete by the owner: the row stays so that past and in-flight transactions keep their
   * capability, but it is no longer visible, listed or buyable. A second delete is 4040.
   */
  function remove(principal: Principal, id: string): Promise<DeletedCapabilityView> {
    return withTransaction(db, async ({ trx }) => {
      authorize(manageCapability, principal, await trx<CapabilityRow>('capabilities').where({ id }).forNoKeyUpdate().first(), 'capability');
      const at = now();
      await trx('capabilities').where({ id }).update({ deleted_at: at, available: false, updated_at: at });
      return { id, deleted: true as const, deleted_at: at.toISOString() };
    });
  }

  /**
   * A new secret replaces the old one at once: callbacks signed after this commit carry the new
   * one. The owner deploys it before rotating again; there is no grace period with two secrets.
   */
  async function rotateSecret(principal: Principal, id: string): Promise<RotatedSecretView> {
    return db.transaction(async (trx) => {
      const row = await trx<CapabilityRow>('capabilities').where({ id }).forNoKeyUpdate().first();
      authorize(manageCapability, principal, row, 'capability');
      const at = now();
      const secret = newCallbackSecret();
      await trx('capabilities').where({ id }).update({ callback_secret: secret, updated_at: at });
      return { capability_id: id, callback_secret: secret, rotated_at: at.toISOString() };
    });
  }

  /**
   * Offered capabilities per category code in the caller's space, every code present (0 when
   * none): the MCP categories resource shows these counts. Deleted capabilities are never
   * available, so `available` alone selects them.
   */
  async function categoryCounts(principal: Principal): Promise<Record<string, number>> {
    const rows = await db('capabilities')
      .where({ owner_type: principal.caller_type, available: true })
      .groupBy('category')
      .select('category')
      .count<{ category: string; count: string }[]>('* as count');
    const counts: Record<string, number> = Object.fromEntries(categoryCodes.map((code) => [code, 0]));
    for (const row of rows) counts[row.category] = Number(row.count);
    return counts;
  }

  return { create, batch, get, list, update, remove, rotateSecret, categoryCounts };
}

export type CapabilityEngine = ReturnType<typeof createCapabilityEngine>;
