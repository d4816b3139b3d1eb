import { createHash } from 'node:crypto';
import { limits } from '../limits.ts';
import { type MatchText, type TermVector, vectorOf } from './scoring.ts';

/**
 * A row's term vector as it is stored (docs/decisions/matching.md "Matching cost"): computed once when the
 * row's words are written, so a match reads it instead of analysing every candidate's text again
 * (200 capabilities of 10,000 characters cost seconds per match that way). At most
 * `matchTermsPerTextMax` terms are kept, the heaviest (ties by term, so every instance keeps the
 * same), and the vector's norm is stored beside them.
 */
export interface StoredTermVector {
  terms: [string, number][];
  norm: number;
}

export function storedVectorOf(text: MatchText, termsMax: number = limits.matchTermsPerTextMax): StoredTermVector {
  const terms = [...vectorOf(text)]
    .sort(([leftTerm, leftWeight], [rightTerm, rightWeight]) => rightWeight - leftWeight || (leftTerm < rightTerm ? -1 : 1))
    .slice(0, termsMax)
    .map(([term, weight]): [string, number] => [term, Math.round(weight * 1000) / 1000]);
  return { terms, norm: Math.sqrt(terms.reduce((sum, [, weight]) => sum + weight * weight, 0)) };
}

/** The same vector as a map, for the cosine with a demand's. */
export function vectorOfStored(stored: StoredTermVector): TermVector {
  return new Map(stored.terms);
}

/** Cosine of a vector against a stored one, reading the stored norm instead of computing it. */
export function cosineWithStored(vector: TermVector, vectorNorm: number, stored: StoredTermVector): number {
  if (vectorNorm === 0 || stored.norm === 0) return 0;
  let dot = 0;
  for (const [term, weight] of stored.terms) dot += weight * (vector.get(term) ?? 0);
  return dot / (vectorNorm * stored.norm);
}

export const normOf = (vector: TermVector) => Math.sqrt([...vector.values()].reduce((sum, weight) => sum + weight * weight, 0));

/** The stored vector, or one computed now for a row written before vectors were stored. */
export const storedOrComputed = (row: MatchText & { term_vector?: StoredTermVector | null }): StoredTermVector => row.term_vector ?? storedVectorOf(row);

/**
 * The one text a row's words make for a model (title, tags, description), the text its stored
 * embedding was made from.
 */
export const flatTextOf = (text: MatchText) => `${text.title ?? ''} ${(text.tags ?? []).join(' ')} ${text.description}`;

/**
 * A digest of the words, stored with the row when its words are written. A stored embedding keeps
 * the digest of the words it was made from, so an embedding of older words never matches the row
 * again, whatever order a rewording and an embedding write commit in.
 */
export const wordsDigestOf = (text: MatchText) => createHash('sha256').update(flatTextOf(text)).digest('base64url');

/** The columns a write of a row's words sets with them: the term vector and the words' digest. */
export function wordColumnsOf(text: MatchText): { term_vector: string; words_sha: string } {
  return { term_vector: JSON.stringify(storedVectorOf(text)), words_sha: wordsDigestOf(text) };
}
