import { autoAcceptScoreMin } from '../../domain/scoring.ts';
import { currencyOfSpace, formatAmount } from '../../domain/money.ts';
import { searchQueryOf } from '../../domain/text.ts';
import { AppError } from '../../errors.ts';
import { limits } from '../../limits.ts';
import { userAccountId } from '../../store/accounts.ts';
import { type CapabilityMatchRow, type DemandRow, capabilityMatchColumns, demandCandidates, findDemand } from '../../store/demands.ts';
import type { EngineDependencies, Principal } from '../common/index.ts';
import type { MatchingEngine } from './matching.ts';
import type { TransactionEngine } from '../money/index.ts';

/**
 * auto_accept on a demand (docs/matching.md): when a capability of the demand's space scores at
 * least autoAcceptScoreMin and costs at most max_price_ut, the requester buys it (create and
 * freeze) through the ordinary transaction engine, so the ledger, the events and the requester's
 * stream are those of any purchase. A demand buys at most once: an attempt first takes the
 * demand with a compare-and-set on auto_accept_claimed_at, so two capabilities appearing at once
 * (on any instances) cannot both buy; success marks the demand fulfilled. Without the money the
 * demand stays open, nothing is bought, and a line is logged.
 *
 * Only capabilities priced per use, per query or by subscription are bought automatically: an
 * hourly or daily price needs a number of hours that a demand does not state.
 */
const unitPricedModels = new Set(['per_use', 'per_query', 'subscription']);
const endedStatuses = ['pending_freeze', 'cancelled_by_buyer', 'rejected_by_seller', 'failed', 'refunded'];

type Attempt = 'bought' | 'skipped' | 'held';

export function createAutoAccept({ db, now, log }: EngineDependencies, transactions: TransactionEngine, matching: MatchingEngine) {
  // The requester, spending within the agent budget of the key that made the demand, if a person's own.
  const requesterOf = (demand: DemandRow): Principal => ({
    user_id: demand.owner_user_id,
    caller_type: demand.owner_type,
    platform: null,
    api_key_id: null,
    budget_key_id: demand.budget_key_id ?? null,
  });
  const eligible = (demand: DemandRow, capability: CapabilityMatchRow) =>
    unitPricedModels.has(capability.pricing_model) &&
    demand.max_price !== null &&
    BigInt(capability.price) <= BigInt(demand.max_price) &&
    capability.owner_user_id !== demand.owner_user_id;

  /** Takes the demand for one attempt, or returns null when it is not open or another attempt holds it. */
  async function claim(demandId: string): Promise<{ at: Date; attempt: number } | null> {
    const at = now();
    const [row] = await db('demands')
      .where({ id: demandId, status: 'open', auto_accept: true })
      .where((open) => {
        open.whereNull('expires_at').orWhere('expires_at', '>', at);
      })
      .where((free) => {
        free.whereNull('auto_accept_claimed_at').orWhere('auto_accept_claimed_at', '<', new Date(at.getTime() - limits.autoAcceptClaimStaleMs));
      })
      .update({ auto_accept_claimed_at: at, auto_accept_attempts: db.raw('auto_accept_attempts + 1') })
      .returning(['auto_accept_attempts']);
    return row ? { at, attempt: row.auto_accept_attempts as number } : null;
  }

  const release = (demandId: string, at: Date) => db('demands').where({ id: demandId, auto_accept_claimed_at: at }).update({ auto_accept_claimed_at: null });

  /**
   * Why this attempt did not buy, kept on the demand for its owner to read (point 14 of issue 15):
   * the refusal as the purchase said it, and the capability it was for. A later purchase clears it.
   */
  const recordFailure = (demandId: string, capabilityId: string, refusal: Pick<AppError, 'code' | 'errorName' | 'data'>) =>
    db('demands')
      .where({ id: demandId })
      .update({
        auto_accept_failure: JSON.stringify({
          code: refusal.code,
          message: refusal.errorName,
          data: refusal.data ?? null,
          capability_id: capabilityId,
          at: now().toISOString(),
        }),
      });

  /**
   * Marks the demand fulfilled only while this attempt still holds it: an attempt slower than the
   * stale window may have lost the demand to a cancel or to another attempt, whose outcome must
   * not be overwritten. Answers whether the demand was marked.
   */
  async function finish(demandId: string, held: { at: Date }, transactionId: string): Promise<boolean> {
    const updated = await db('demands')
      .where({ id: demandId, status: 'open', auto_accept_claimed_at: held.at })
      .update({ status: 'fulfilled', transaction_id: transactionId, auto_accept_claimed_at: null, auto_accept_failure: null, updated_at: now() });
    return Number(updated) === 1;
  }

  /**
   * A purchase for this demand that an earlier attempt made: one that holds or moved money, or an
   * unfunded one young enough that its attempt may still be freezing it. An older unfunded one
   * was abandoned by an attempt that crashed, and moved no money.
   */
  const earlierPurchase = (demand: DemandRow) =>
    db('transactions')
      .where({ demand_id: demand.id, buyer_user_id: demand.owner_user_id })
      .where((live) => {
        live.whereNotIn('status', endedStatuses).orWhere((young) => {
          young.where({ status: 'pending_freeze' }).where('created_at', '>', new Date(now().getTime() - limits.autoAcceptClaimStaleMs));
        });
      })
      .first('id', 'status');

  /** Buys through the ordinary purchase; null when it was refused or not funded (nothing is bought then). */
  async function buy(demand: DemandRow, capability: CapabilityMatchRow, held: { attempt: number }): Promise<string | null> {
    const principal = requesterOf(demand);
    const command = {
      capability_id: capability.id,
      demand_id: demand.id,
      note: 'bought automatically for a demand (auto_accept)',
      max_price: BigInt(demand.max_price!),
    };
    let outcome: Awaited<ReturnType<TransactionEngine['purchase']>>;
    try {
      outcome = await transactions.purchase(principal, command, `auto-accept:${demand.id}:${held.attempt}`);
    } catch (error) {
      // The capability changed since it was scored (a price above the budget, withdrawn): nothing was written.
      if (!(error instanceof AppError)) throw error;
      log.info('auto-accept refused by the purchase; the demand stays open', {
        demand_id: demand.id,
        capability_id: capability.id,
        code: error.code,
        message: error.message,
      });
      await recordFailure(demand.id, capability.id, error);
      return null;
    }
    const { view, failure } = outcome;
    if (failure || view.status === 'pending_freeze') {
      // The balance changed since the check: the unfunded transaction is withdrawn, no money moved.
      if (view.status === 'pending_freeze') await transactions.act(principal, view.id, 'cancel', {}, null);
      log.info('auto-accept failed to freeze; the demand stays open', { demand_id: demand.id, capability_id: capability.id, code: failure?.code });
      if (failure) await recordFailure(demand.id, capability.id, failure);
      return null;
    }
    return view.id;
  }

  /**
   * Attempts running on this instance, by demand. A demand's create whose own attempt finds the
   * demand held by another one here (a capability's job that found the new demand first) waits
   * for it, so that the create's answer says what was bought or why not, as when it buys itself.
   * An attempt of another instance is not seen: that create answers the demand still open, and its
   * stream carries the purchase.
   */
  const running = new Map<string, Promise<Attempt>>();

  async function attempt(demand: DemandRow, capability: CapabilityMatchRow): Promise<Attempt> {
    const held = await claim(demand.id);
    if (!held) return 'held';
    const work = attemptHeld(demand, capability, held);
    running.set(demand.id, work);
    try {
      return await work;
    } finally {
      if (running.get(demand.id) === work) running.delete(demand.id);
    }
  }

  /** Waits, at most limits.autoAcceptHeldWaitMs, for the attempt of this instance that holds the demand. */
  async function heldElsewhere(demandId: string): Promise<void> {
    const other = running.get(demandId);
    if (other === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, limits.autoAcceptHeldWaitMs);
      timer.unref();
    });
    try {
      await Promise.race([
        other.then(
          () => undefined,
          () => undefined,
        ),
        timeout,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  async function attemptHeld(demand: DemandRow, capability: CapabilityMatchRow, held: { at: Date; attempt: number }): Promise<Attempt> {
    try {
      // An attempt that bought and then crashed before marking the demand: its purchase counts.
      // One that is still freezing (it outlived the stale window) is left to finish on its own.
      const earlier = await earlierPurchase(demand);
      if (earlier?.status === 'pending_freeze') {
        await release(demand.id, held.at);
        return 'held';
      }
      if (earlier) {
        if (!(await finish(demand.id, held, earlier.id as string)))
          log.info('auto-accept lost its demand before marking an earlier purchase', { demand_id: demand.id, transaction_id: earlier.id });
        return 'bought';
      }
      const account = await db('accounts')
        .where({ id: userAccountId(demand.owner_user_id, currencyOfSpace(demand.owner_type)) })
        .first('available');
      if (BigInt(account?.available ?? 0) < BigInt(capability.price)) {
        log.info('auto-accept skipped: insufficient balance; the demand stays open', { demand_id: demand.id, capability_id: capability.id });
        const currency = currencyOfSpace(demand.owner_type);
        await recordFailure(
          demand.id,
          capability.id,
          new AppError('insufficient_balance', 'not enough money to buy the match', {
            currency,
            available: formatAmount(account?.available ?? 0),
            required: formatAmount(capability.price),
          }),
        );
        await release(demand.id, held.at);
        return 'skipped';
      }
      const transactionId = await buy(demand, capability, held);
      if (transactionId === null) {
        await release(demand.id, held.at);
        return 'skipped';
      }
      if (!(await finish(demand.id, held, transactionId))) {
        // The demand was cancelled or taken by another attempt meanwhile: the buyer's cancel
        // releases the funds this attempt froze, so the requester pays for nothing unasked.
        await transactions.act(requesterOf(demand), transactionId, 'cancel', {}, null);
        log.info('auto-accept lost its demand during the purchase; the purchase was cancelled', {
          demand_id: demand.id,
          capability_id: capability.id,
          transaction_id: transactionId,
        });
        return 'held';
      }
      log.info('auto-accept bought a capability for a demand', { demand_id: demand.id, capability_id: capability.id, transaction_id: transactionId });
      return 'bought';
    } catch (error) {
      await release(demand.id, held.at);
      throw error;
    }
  }

  /** A good match that costs more than the demand's budget is why nothing was bought: say so. */
  async function sayOverBudget(demand: DemandRow, ranked: Awaited<ReturnType<MatchingEngine['rankFor']>>) {
    const over = ranked.find(
      ({ row, parts }) => parts.score >= autoAcceptScoreMin && unitPricedModels.has(row.pricing_model) && row.owner_user_id !== demand.owner_user_id,
    );
    if (!over || BigInt(over.row.price) <= BigInt(demand.max_price!)) return;
    const refusal = new AppError('price_above_ceiling', 'the best match costs more than max_price_ut', {
      currency: currencyOfSpace(demand.owner_type),
      price: formatAmount(over.row.price),
      max_price: formatAmount(demand.max_price!),
    });
    await recordFailure(demand.id, over.row.id, refusal);
  }

  /** Called after a demand with auto_accept is created: the best qualifying capabilities, in turn. */
  async function forDemand(demandId: string): Promise<void> {
    try {
      const demand = await findDemand(db, demandId);
      if (!demand || !demand.auto_accept || demand.status !== 'open') return;
      const ranked = await matching.rankFor(demand, limits.matchTopKMax);
      const qualifying = ranked
        .filter(({ row, parts }) => parts.score >= autoAcceptScoreMin && eligible(demand, row))
        .slice(0, limits.autoAcceptAttemptsPerRunMax);
      for (const { row } of qualifying) {
        const result = await attempt(demand, row);
        if (result === 'held') await heldElsewhere(demand.id);
        if (result !== 'skipped') return;
      }
      if (qualifying.length === 0) await sayOverBudget(demand, ranked);
    } catch (error) {
      log.warn('auto-accept for a demand failed; the demand stays open', { demand_id: demandId, error: String(error) });
    }
  }

  /**
   * Called after a capability is created or offered again: the open auto-accept demands of its
   * space within whose budget it falls, and which it matches well enough, try to buy it.
   */
  async function forCapability(capabilityId: string): Promise<void> {
    try {
      const capability = await db<CapabilityMatchRow>('capabilities')
        .where({ id: capabilityId })
        .first(...capabilityMatchColumns);
      if (!capability || !capability.available || !unitPricedModels.has(capability.pricing_model)) return;
      const query = searchQueryOf(`${capability.title} ${capability.tags.join(' ')} ${capability.description}`, limits.matchQueryTermsMax);
      const demands = await demandCandidates(db, {
        query,
        space: capability.owner_type,
        excludeOwner: capability.owner_user_id,
        now: now(),
        limit: limits.autoAcceptDemandsPerCapabilityMax,
        autoAcceptWithin: capability.price,
      });
      for (const demand of demands) {
        const [scored] = await matching.scoreCapabilities(demand, [capability]);
        if (scored!.parts.score >= autoAcceptScoreMin && eligible(demand, capability)) await attempt(demand, capability);
      }
    } catch (error) {
      log.warn('auto-accept for a capability failed', { capability_id: capabilityId, error: String(error) });
    }
  }

  return { forDemand, forCapability };
}

export type AutoAccept = ReturnType<typeof createAutoAccept>;
