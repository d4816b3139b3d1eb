import { effectiveStatus, requireOpen } from '../../domain/demands.ts';
import { currencyOfSpace, formatAmount } from '../../domain/money.ts';
import {
  type MatchText,
  type ScoreParts,
  blendedSimilarity,
  combine,
  explain,
  languageOf,
  normalizedQuality,
  priceAlignment,
  sharedTerms,
} from '../../domain/scoring.ts';
import { cosineWithStored, flatTextOf, storedOrComputed, storedVectorOf, vectorOfStored } from '../../domain/term-vectors.ts';
import { searchQueryOf, termsOf } from '../../domain/text.ts';
import { limits } from '../../limits.ts';
import type { AlignmentItem, MatchCandidate } from '../../schemas/matching.ts';
import {
  type CapabilityCandidateRow,
  type CapabilityMatchRow,
  type DemandRow,
  capabilityCandidates,
  capabilityDescriptions,
  capabilityMatchColumns,
  demandCandidates,
  findDemand,
} from '../../store/demands.ts';
import { alignWith, discoverFor, seeDemand, authorize } from '../access/index.ts';
import type { EngineDependencies, Principal } from '../common/index.ts';
import type { EmbeddingItem, EmbeddingsUse, RowEmbeddings } from './embeddings.ts';

/**
 * Matching (docs/matching.md): the database finds candidates through the search-vector index,
 * then the engine reranks them precisely with the pure formula of domain/scoring.ts, from the term
 * vectors and, when an embedding model is configured, the embeddings stored with the rows.
 */
export interface MatchingOptions {
  embeddings?: RowEmbeddings;
}

export interface ScoredCapability<Row extends CapabilityCandidateRow = CapabilityCandidateRow> {
  row: Row;
  parts: ScoreParts;
}

const textOfDemand = (demand: DemandRow): MatchText => ({ title: demand.title, description: demand.description, tags: demand.tags });
const textOfCapability = (row: CapabilityMatchRow): MatchText => ({ title: row.title, description: row.description, tags: row.tags });
/** A demand without a digest of its words is no stored row (a conversation's draft): its words are embedded as they are. */
const demandItem = (demand: DemandRow): EmbeddingItem =>
  demand.words_sha ? { kind: 'demand', id: demand.id, words_sha: demand.words_sha } : { kind: 'demand', id: demand.id, draft: textOfDemand(demand) };
const capabilityItem = (row: CapabilityCandidateRow): EmbeddingItem => ({ kind: 'capability', id: row.id, words_sha: row.words_sha ?? '' });
/** Every stored row has its vector since migration 018; the words are the fallback of a row older than that. */
const vectorOfCandidate = (row: CapabilityCandidateRow & { description?: string }) =>
  row.term_vector ?? storedVectorOf({ ...row, description: row.description ?? '' });

export type { EmbeddingsUse };

export function createMatchingEngine({ db, now }: EngineDependencies, options: MatchingOptions = {}) {
  const embeddingSimilarities = (one: EmbeddingItem, others: EmbeddingItem[]) =>
    options.embeddings
      ? options.embeddings.similarities(one, others)
      : Promise.resolve({ similarities: others.map(() => null), use: 'not_configured' as EmbeddingsUse });

  /**
   * Scores capabilities for a demand, best first (ties by id, so every instance answers the same),
   * from the term vectors stored with the rows: no candidate's text is analysed again here.
   */
  async function scoreWithUse<Row extends CapabilityCandidateRow>(
    demand: DemandRow,
    rows: Row[],
  ): Promise<{ scored: ScoredCapability<Row>[]; embeddings: EmbeddingsUse }> {
    const demandText = textOfDemand(demand);
    const demandStored = storedOrComputed({ ...demandText, term_vector: demand.term_vector });
    const demandVector = vectorOfStored(demandStored);
    const embedded = await embeddingSimilarities(demandItem(demand), rows.map(capabilityItem));
    const maxPrice = demand.max_price === null ? null : BigInt(demand.max_price);
    const scored = rows.map((row, index) => {
      const similarity = blendedSimilarity(cosineWithStored(demandVector, demandStored.norm, vectorOfCandidate(row)), embedded.similarities[index]!);
      return { row, parts: combine(similarity, priceAlignment(BigInt(row.price), maxPrice), normalizedQuality(Number(row.quality_score))) };
    });
    scored.sort((left, right) => right.parts.score - left.parts.score || (left.row.id < right.row.id ? -1 : 1));
    return { scored, embeddings: embedded.use };
  }

  const scoreCapabilities = async <Row extends CapabilityCandidateRow>(demand: DemandRow, rows: Row[]) => (await scoreWithUse(demand, rows)).scored;

  /** The best capabilities for a demand among those offered in its space by others, with their descriptions. */
  async function rankWithUse(demand: DemandRow, topK: number): Promise<{ ranked: ScoredCapability<CapabilityMatchRow>[]; embeddings: EmbeddingsUse }> {
    const query = searchQueryOf(flatTextOf(textOfDemand(demand)), limits.matchQueryTermsMax);
    const rows = await capabilityCandidates(db, {
      query,
      space: demand.owner_type,
      excludeOwner: demand.owner_user_id,
      limit: Math.max(limits.matchCandidatesMax, topK),
      poolSize: limits.matchCandidatePoolMax,
    });
    const { scored, embeddings } = await scoreWithUse(demand, rows);
    const best = scored.filter((entry) => entry.parts.similarity > 0).slice(0, topK);
    const descriptions = await capabilityDescriptions(
      db,
      best.map((entry) => entry.row.id),
    );
    return { ranked: best.map(({ row, parts }) => ({ row: { ...row, description: descriptions.get(row.id) ?? '' }, parts })), embeddings };
  }

  const rankFor = async (demand: DemandRow, topK: number) => (await rankWithUse(demand, topK)).ranked;

  /** A demand the caller may see, that is still open (expired ones stop matching: 4090). */
  async function openDemandFor(principal: Principal, demandId: string): Promise<DemandRow> {
    const row = await findDemand(db, demandId);
    const status = row ? effectiveStatus(row.status, row.expires_at, now()) : 'open';
    const demand = authorize(seeDemand, principal, row && { ...row, effective_status: status }, 'demand');
    requireOpen(status, 'match');
    return demand;
  }

  async function match(principal: Principal, input: { demand_id: string; top_k: number }) {
    const demand = await openDemandFor(principal, input.demand_id);
    const { ranked, embeddings } = await rankWithUse(demand, input.top_k);
    const candidates: MatchCandidate[] = ranked.map(({ row, parts }) => ({
      entity_id: row.id,
      title: row.title,
      description: row.description,
      ...parts,
      price_ut: formatAmount(row.price),
      category: row.category,
    }));
    return { demand_id: demand.id, candidates, embeddings };
  }

  async function discoverDemands(principal: Principal, capabilityId: string, input: { top_k: number }) {
    // deleted_at is read for the access rules only: a deleted capability is hidden (4040).
    const found = await db<CapabilityMatchRow & { deleted_at: Date | null }>('capabilities')
      .where({ id: capabilityId })
      .first(...capabilityMatchColumns, 'deleted_at');
    const capability = authorize(discoverFor, principal, found, 'capability');
    const capabilityText = textOfCapability(capability);
    const query = searchQueryOf(flatTextOf(capabilityText), limits.matchQueryTermsMax);
    const demands = await demandCandidates(db, {
      query,
      space: capability.owner_type,
      excludeOwner: capability.owner_user_id,
      now: now(),
      limit: Math.max(limits.matchCandidatesMax, input.top_k),
    });
    const { scored, embedded } = await scoreDemands(capability, demands, true);
    const candidates: MatchCandidate[] = scored
      .filter((entry) => entry.parts.similarity > 0)
      .sort((left, right) => right.parts.score - left.parts.score || (left.demand.id < right.demand.id ? -1 : 1))
      .slice(0, input.top_k)
      .map(({ demand, parts }) => ({
        entity_id: demand.id,
        title: demand.title ?? demand.description.slice(0, 80),
        description: demand.description,
        ...parts,
        price_ut: demand.max_price === null ? null : formatAmount(demand.max_price),
        category: demand.category,
      }));
    return { capability_id: capability.id, candidates, embeddings: embedded.use };
  }

  /**
   * Demands scored against one capability, each demand's stored vector against the capability's
   * (no text is analysed again). With `useEmbeddings`, one batch of embeddings for all the demands
   * (not one call per demand); without, words alone, as when no embedding model is configured.
   */
  async function scoreDemands(capability: CapabilityMatchRow, demands: DemandRow[], useEmbeddings: boolean) {
    const capabilityStored = storedOrComputed(capability);
    const embedded = useEmbeddings
      ? await embeddingSimilarities(capabilityItem(capability), demands.map(demandItem))
      : { similarities: demands.map(() => null), use: 'not_configured' as EmbeddingsUse };
    const scored = demands.map((demand, index) => {
      const demandStored = storedOrComputed({ ...textOfDemand(demand), term_vector: demand.term_vector });
      const lexical = cosineWithStored(vectorOfStored(demandStored), demandStored.norm, capabilityStored);
      const maxPrice = demand.max_price === null ? null : BigInt(demand.max_price);
      const parts = combine(
        blendedSimilarity(lexical, embedded.similarities[index]!),
        priceAlignment(BigInt(capability.price), maxPrice),
        normalizedQuality(Number(capability.quality_score)),
      );
      return { demand, parts };
    });
    return { scored, embedded };
  }

  /** One demand against chosen capabilities of its space: the score parts and a sentence each. */
  async function evaluateAlignment(principal: Principal, input: { demand_id: string; capability_ids: string[] }) {
    const demand = await openDemandFor(principal, input.demand_id);
    const ids = [...new Set(input.capability_ids)];
    const rows = await db<CapabilityMatchRow>('capabilities')
      .whereIn('id', ids)
      .select(...capabilityMatchColumns);
    const byId = new Map(rows.map((row) => [row.id, row]));
    const visible = ids.map((id) => authorize(alignWith, principal, byId.get(id), 'capability'));
    const { scored: scoredRows, embeddings } = await scoreWithUse(demand, visible);
    const scored = new Map(scoredRows.map((entry) => [entry.row.id, entry.parts]));
    const language = languageOf(demand.description);
    const demandTerms = termsOf(flatTextOf(textOfDemand(demand)));
    const maxPrice = demand.max_price === null ? null : BigInt(demand.max_price);
    const results: AlignmentItem[] = visible.map((row) => {
      const parts = scored.get(row.id)!;
      const price = BigInt(row.price);
      const explanation = explain({
        parts,
        shared: sharedTerms(demandTerms, vectorOfCandidate(row), language),
        price,
        maxPrice,
        currency: currencyOfSpace(demand.owner_type),
        language,
      });
      return {
        capability_id: row.id,
        title: row.title,
        ...parts,
        price_ut: formatAmount(price),
        within_budget: maxPrice === null || price <= maxPrice,
        explanation,
      };
    });
    return { demand_id: demand.id, language, results, embeddings };
  }

  return { match, discoverDemands, evaluateAlignment, rankFor, scoreCapabilities, scoreDemands };
}

export type MatchingEngine = ReturnType<typeof createMatchingEngine>;
