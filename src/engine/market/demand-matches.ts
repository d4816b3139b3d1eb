import { demandMatchedScoreMin } from '../../domain/scoring.ts';
import { currencyOfSpace, formatAmount } from '../../domain/money.ts';
import { searchQueryOf } from '../../domain/text.ts';
import { demandMatched } from '../../domain/webhooks.ts';
import { limits } from '../../limits.ts';
import type { DemandMatchedEvent } from '../../schemas/webhooks.ts';
import { type CapabilityMatchRow, capabilityMatchColumns, demandCandidates } from '../../store/demands.ts';
import type { EngineDependencies } from '../common/index.ts';
import type { MatchingEngine } from './matching.ts';

/** A demand_events row (migration 028). */
export interface DemandEventRow {
  id: string;
  demand_id: string;
  capability_id: string;
  recipient_user_id: string;
  space: 'agent' | 'human';
  type: string;
  payload: Omit<DemandMatchedEvent, 'id' | 'created_at'>;
  created_at: Date;
}

export const toDemandEvent = (row: DemandEventRow): DemandMatchedEvent => ({
  id: String(row.id),
  ...row.payload,
  created_at: new Date(row.created_at).toISOString(),
});

/**
 * `demand.matched` (docs/webhooks.md "Event kinds"): when a capability is offered (anew), the open
 * demands of its space, of other users, that it matches at least as well as auto-accept asks
 * (demandMatchedScoreMin, on the words alone) are told, through the webhook pipeline. Run by the capability's
 * auto-accept job, off the request path; a job run twice tells nobody twice (one row per demand
 * and capability). At most limits.demandMatchEventsPerCapabilityMax demands per offer, the ones
 * the text search ranks first.
 */
export function createDemandMatches({ db, now, log }: EngineDependencies, matching: MatchingEngine) {
  async function forCapability(capabilityId: string): Promise<number> {
    try {
      const capability = await db<CapabilityMatchRow>('capabilities')
        .where({ id: capabilityId })
        .whereNull('deleted_at')
        .first(...capabilityMatchColumns);
      if (!capability || !capability.available) return 0;
      const query = searchQueryOf(`${capability.title} ${capability.tags.join(' ')} ${capability.description}`, limits.matchQueryTermsMax);
      const demands = await demandCandidates(db, {
        query,
        space: capability.owner_type,
        excludeOwner: capability.owner_user_id,
        now: now(),
        limit: limits.demandMatchEventsPerCapabilityMax,
      });
      const at = now();
      const rows = [];
      // Words alone: telling of an offer never costs the embedding provider a call, and the row's
      // own embedding is made once, by the embeddings job, when it is written.
      const { scored: ranked } = await matching.scoreDemands(capability, demands, false);
      for (const scored of ranked) {
        const demand = scored.demand;
        if (scored.parts.score < demandMatchedScoreMin) continue;
        const payload: DemandEventRow['payload'] = {
          type: 'demand.matched',
          demand_id: demand.id,
          capability: {
            id: capability.id,
            title: capability.title,
            price: formatAmount(capability.price),
            currency: currencyOfSpace(capability.owner_type),
            pricing_model: capability.pricing_model,
            category: capability.category,
          },
          ...scored.parts,
        };
        rows.push({
          demand_id: demand.id,
          capability_id: capability.id,
          recipient_user_id: demand.owner_user_id,
          space: demand.owner_type,
          type: demandMatched,
          payload: JSON.stringify(payload),
          created_at: at,
        });
      }
      if (rows.length > 0) await db('demand_events').insert(rows).onConflict(['demand_id', 'capability_id', 'type']).ignore();
      return rows.length;
    } catch (error) {
      log.warn('demand matches for a capability failed', { capability_id: capabilityId, error: String(error) });
      return 0;
    }
  }

  return { forCapability };
}

export type DemandMatches = ReturnType<typeof createDemandMatches>;
