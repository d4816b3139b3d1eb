import type { NeutralPart } from '../../domain/a2a.ts';
import type { Candidate } from '../../store/a2a.ts';

/**
 * The agent's words in a conversation. They are stored as the message's parts when sent, so the
 * history shows exactly what the buyer was told, and the data part carries the same facts for
 * programs.
 */
export const replyHint = 'Reply with a number or a capability id to buy, or describe what you need in other words.';

const candidateLine = (candidate: Candidate) =>
  `${candidate.number}. ${candidate.title} — ${candidate.price} ${candidate.currency} ${candidate.pricing_model} (score ${candidate.score.toFixed(2)}, id ${candidate.capability_id})`;

export function candidatesParts(demandId: string, candidates: Candidate[]): NeutralPart[] {
  const text =
    candidates.length === 0
      ? 'Nothing offered matches this yet. Your demand is open: sellers can discover it and offer what you need. Send another message to describe it in other words (the result you expect, its subject, its language) and I will look again, or cancel this task.'
      : [
          `${candidates.length === 1 ? 'One capability matches' : `${candidates.length} capabilities match`}, best first:`,
          ...candidates.map(candidateLine),
          replyHint,
        ].join('\n');
  return [
    { kind: 'text', text },
    { kind: 'data', data: { demand_id: demandId, candidates } },
  ];
}

export const cancelledParts = (demandId: string): NeutralPart[] => [
  { kind: 'text', text: 'Cancelled: nothing was bought, and the demand was cancelled.' },
  { kind: 'data', data: { demand_id: demandId, status: 'cancelled' } },
];
