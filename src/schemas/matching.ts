import { z } from 'zod';
import { limits } from '../limits.ts';
import { uuid } from './common.ts';
import { amountOutput } from './money.ts';

const topK = z.number().int().min(1).max(limits.matchTopKMax).default(limits.matchTopKDefault);

export const matchBody = z.strictObject({ demand_id: uuid, top_k: topK }).meta({ id: 'MatchRequest' });
export const discoverBody = z.strictObject({ top_k: topK }).meta({ id: 'DiscoverDemandsRequest' });
export const alignmentBody = z
  .strictObject({ demand_id: uuid, capability_ids: z.array(uuid).min(1).max(limits.alignmentCapabilitiesMax) })
  .meta({ id: 'EvaluateAlignmentRequest' });

const scoreParts = {
  score: z.number().meta({ description: '0.70 x similarity + 0.20 x price_alignment + 0.10 x quality_score (docs/matching.md)' }),
  similarity: z.number().meta({ description: 'Text similarity 0..1 (terms, Chinese pieces, bilingual glossary; embeddings when configured)' }),
  price_alignment: z.number().meta({ description: '1 within the budget or without one; budget / price above it' }),
  quality_score: z.number().meta({ description: "The capability's quality_score scaled to 0..1" }),
};

export const matchCandidate = z
  .object({
    entity_id: uuid.meta({ description: 'The capability (match) or the demand (discover-demands)' }),
    title: z.string(),
    description: z.string(),
    ...scoreParts,
    price_ut: amountOutput.nullable().meta({ description: "The capability's price, or the demand's budget" }),
    category: z.string().nullable(),
  })
  .meta({ id: 'MatchCandidate' });

/** Says whether a model's embeddings refined the similarity, so a silent fallback is never mistaken for their use. */
const embeddingsUse = z.enum(['used', 'not_configured', 'failed']).meta({
  description:
    'used: embeddings refined the similarity; not_configured: no embedding model is set (text similarity only); failed: the model did not answer, so this answer used text similarity only',
});

export const matchResponse = z.object({ demand_id: uuid, candidates: z.array(matchCandidate), embeddings: embeddingsUse }).meta({ id: 'MatchResult' });
export const discoverResponse = z
  .object({ capability_id: uuid, candidates: z.array(matchCandidate), embeddings: embeddingsUse })
  .meta({ id: 'DiscoverDemandsResult' });

export const alignmentItem = z
  .object({ capability_id: uuid, title: z.string(), ...scoreParts, price_ut: amountOutput, within_budget: z.boolean(), explanation: z.string() })
  .meta({ id: 'AlignmentResult' });
export const alignmentResponse = z
  .object({ demand_id: uuid, language: z.enum(['zh', 'en']), results: z.array(alignmentItem), embeddings: embeddingsUse })
  .meta({ id: 'EvaluateAlignmentResult' });

export type MatchCandidate = z.infer<typeof matchCandidate>;
export type AlignmentItem = z.infer<typeof alignmentItem>;
