import { wordColumnsOf } from '../../domain/term-vectors.ts';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { effectiveStatus, requireOpen } from '../../domain/demands.ts';
import { AppError } from '../../errors.ts';
import { limits } from '../../limits.ts';
import { currencyOfSpace, formatAmount } from '../../domain/money.ts';
import type { CreateDemandInput, DemandView, ListDemandsInput } from '../../schemas/demands.ts';
import { type DemandRow, demandColumns, demandListQuery, findDemand } from '../../store/demands.ts';
import { ownDemand, seeDemand, authorize } from '../access/index.ts';
import { newestFirstPage, type EngineDependencies, type Principal } from '../common/index.ts';
import type { Idempotency, IdempotencyRequest, Outcome } from '../money/index.ts';
import type { AutoAccept } from './auto-accept.ts';
import type { AnalysisEngine, ClarityEvaluation } from './analysis.ts';

/** Demands: a requester's published need (docs/decisions/matching.md "Demands and matching"). */
const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());

export function demandView(row: DemandRow, now: Date): DemandView {
  return {
    id: row.id,
    user_id: row.owner_user_id,
    owner_type: row.owner_type,
    title: row.title,
    description: row.description,
    category: row.category,
    tags: row.tags,
    max_price_ut: row.max_price === null ? null : formatAmount(row.max_price),
    currency: currencyOfSpace(row.owner_type),
    auto_accept: row.auto_accept,
    demand_type: row.demand_type,
    status: effectiveStatus(row.status, row.expires_at, now),
    expires_at: iso(row.expires_at),
    transaction_id: row.transaction_id,
    auto_accept_failure: row.auto_accept_failure ?? null,
    cancelled_at: iso(row.cancelled_at),
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

/** The demand's words as the clarity analyser reads them: the title (when there is one) leads. */
export const clarityTextOf = (row: Pick<DemandRow, 'title' | 'description'>) => (row.title ? `${row.title}\n\n${row.description}` : row.description);

/**
 * A demand that expires at or before its creation would be born expired: refused as bad input.
 * The schema cannot judge this, because "now" is the engine's clock (tests move it), so the
 * engine refuses with the same 4000 shape a schema failure has (src/schemas/validation.ts).
 */
function requireFutureExpiry(expiresAt: string | undefined, at: Date) {
  if (expiresAt === undefined || new Date(expiresAt).getTime() > at.getTime()) return;
  throw new AppError('validation_error', 'request failed validation', { errors: [{ path: 'body.expires_at', message: 'must be after the current time' }] });
}

export function createDemandEngine({ db, now }: EngineDependencies, idempotency: Idempotency, autoAccept: AutoAccept, analysis: AnalysisEngine) {
  const seen = (row: DemandRow | undefined) => row && { ...row, effective_status: effectiveStatus(row.status, row.expires_at, now()) };

  /**
   * Keyed like every state-changing POST. The answer is the demand as it stands after any
   * auto-accept, also on a replay, so a retried request learns the transaction that was bought.
   */
  async function create(principal: Principal, input: CreateDemandInput, request: IdempotencyRequest | null): Promise<Outcome<DemandView>> {
    const outcome = await idempotency.run(principal, request, 201, async ({ trx }) => insert(trx, principal, input));
    if (outcome.data.auto_accept && !outcome.replayed) await autoAccept.forDemand(outcome.data.id);
    if (!outcome.data.auto_accept) return outcome;
    return { ...outcome, data: demandView((await findDemand(db, outcome.data.id))!, now()) };
  }

  async function insert(trx: Knex, principal: Principal, input: CreateDemandInput): Promise<DemandView> {
    const at = now();
    requireFutureExpiry(input.expires_at, at);
    const [row] = (await trx('demands')
      .insert({
        id: randomUUID(),
        owner_user_id: principal.user_id,
        owner_type: principal.caller_type,
        title: input.title ?? null,
        description: input.description,
        category: input.category ?? null,
        tags: JSON.stringify(input.tags ?? []),
        max_price: input.max_price_ut === undefined ? null : String(input.max_price_ut),
        auto_accept: input.auto_accept ?? false,
        // What auto_accept buys later is charged to the agent budget of the key that asked for it.
        budget_key_id: principal.budget_key_id ?? null,
        demand_type: input.demand_type ?? 'explicit',
        status: 'open',
        expires_at: input.expires_at ? new Date(input.expires_at) : null,
        ...wordColumnsOf({ title: input.title ?? null, description: input.description, tags: input.tags ?? [] }),
        created_at: at,
        updated_at: at,
      })
      .returning([...demandColumns])) as DemandRow[];
    return demandView(row!, at);
  }

  async function get(principal: Principal, id: string): Promise<DemandView> {
    const row = authorize(seeDemand, principal, seen(await findDemand(db, id)), 'demand');
    return demandView(row, now());
  }

  /**
   * How clearly a demand says what is wanted, for whoever may read it (the same rule as details:
   * its requester always, others of its space while it is open). A read: nothing is stored, so
   * no idempotency key; a model, when configured, may answer differently on a second call.
   */
  async function evaluateClarity(principal: Principal, id: string, signal?: AbortSignal): Promise<ClarityEvaluation & { demand_id: string }> {
    const row = authorize(seeDemand, principal, seen(await findDemand(db, id)), 'demand');
    return { demand_id: row.id, ...(await analysis.evaluateClarity(clarityTextOf(row), signal)) };
  }

  /** Only the requester cancels, and only an open demand (4090 otherwise, with its status). */
  async function cancel(principal: Principal, id: string, request: IdempotencyRequest | null): Promise<Outcome<DemandView>> {
    return idempotency.run(principal, request, 200, async ({ trx }) => {
      const row = authorize(
        ownDemand,
        principal,
        seen(
          await trx<DemandRow>('demands')
            .where({ id })
            .forUpdate()
            .first(...demandColumns),
        ),
        'demand',
      );
      requireOpen(row.effective_status, 'cancel');
      const at = now();
      // An automatic purchase in progress is not cut off halfway; the requester retries shortly.
      if (row.auto_accept_claimed_at && new Date(row.auto_accept_claimed_at).getTime() > at.getTime() - limits.autoAcceptClaimStaleMs) {
        throw new AppError('conflict', 'an automatic purchase for this demand is in progress; retry shortly');
      }
      const [updated] = (await trx('demands')
        .where({ id, status: 'open' })
        .update({ status: 'cancelled', cancelled_at: at, updated_at: at })
        .returning([...demandColumns])) as DemandRow[];
      return demandView(updated!, at);
    });
  }

  /**
   * An A2A conversation (engine/a2a) writes its demand inside its own database transaction: a
   * create without the idempotency and auto-accept steps (the conversation is keyed itself, and
   * its demands never auto-accept), and a rewording while the demand is open. False when it is not.
   */
  const insertWithin = insert;
  async function rewordWithin(trx: Knex, id: string, words: { title: string; description: string }): Promise<boolean> {
    const columns = wordColumnsOf({ title: words.title, description: words.description, tags: [] });
    const updated = await trx('demands')
      .where({ id, status: 'open' })
      .update({ ...words, ...columns, updated_at: now() });
    return updated === 1;
  }

  /** The caller's own demands, newest first; page/page_size or a keyset cursor, as transactions. */
  async function list(principal: Principal, query: ListDemandsInput) {
    const filter = { userId: principal.user_id, space: principal.caller_type, status: query.status, now: now() };
    const listed = await newestFirstPage<DemandRow>(() => demandListQuery(db, filter), query, { select: demandColumns });
    const at = now();
    return { ...listed, items: listed.items.map((row) => demandView(row, at)) };
  }

  return { create, get, cancel, list, evaluateClarity, insertWithin, rewordWithin };
}

export type DemandEngine = ReturnType<typeof createDemandEngine>;
