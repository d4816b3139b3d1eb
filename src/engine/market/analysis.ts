import { z } from 'zod';
import type { AiProvider } from '../../ai/provider.ts';
import { type ClarityAssessment, analyseClarity, detectLanguage } from '../../domain/clarity.ts';
import { limits } from '../../limits.ts';
import type { Logger } from '../../logger.ts';

/**
 * Text analysis use cases (decisions section 8). Each asks the language model when one is
 * configured and checks its answer strictly; anything missing, malformed or in the wrong language
 * falls back to the deterministic built-in analyser, so the answer's shape never depends on the
 * model. `basis` tells the caller which one answered.
 */
export interface ClarityEvaluation extends ClarityAssessment {
  basis: 'built_in' | 'llm';
}

const itemText = z.string().trim().min(1).max(limits.aiAnswerItemLengthMax);
const modelClarity = z.object({
  score: z.number().min(0).max(1),
  reasons: z.array(itemText).min(1).max(limits.aiAnswerItemsMax),
  suggestions: z.array(itemText).max(limits.aiAnswerItemsMax),
});

const languageName = { zh: 'Simplified Chinese', en: 'English' } as const;

function clarityPrompt(language: 'zh' | 'en') {
  return [
    'You rate how clearly a marketplace demand describes the work wanted.',
    'Consider: a concrete deliverable, quantity or size, format, deadline, budget, acceptance criteria, and vague wording.',
    'Answer with one JSON object and nothing else: {"score": number from 0 to 1, "reasons": [strings], "suggestions": [concrete strings]}.',
    `Write every reason and suggestion in ${languageName[language]}. At most ${limits.aiAnswerItemsMax} of each.`,
  ].join('\n');
}

/** The JSON object in a model's answer, which some models wrap in a Markdown code fence. */
export function jsonOfAnswer(answer: string): unknown {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/i.exec(answer);
  try {
    return JSON.parse((fenced ? fenced[1]! : answer).trim());
  } catch {
    return undefined;
  }
}

export function createAnalysisEngine({ ai, log }: { ai: AiProvider; log: Logger }) {
  /**
   * How clearly `text` describes a demand: score 0..1, reasons and suggestions in the text's own
   * language. Text past `limits.clarityTextLengthMax` is not read (a demand's description is
   * bounded well below it when it is stored).
   */
  async function evaluateClarity(text: string, signal?: AbortSignal): Promise<ClarityEvaluation> {
    const bounded = text.slice(0, limits.clarityTextLengthMax);
    const builtIn = analyseClarity(bounded);
    // Without a model the provider answers null at once and logs why (once at info level).
    if (bounded.trim() === '') return { ...builtIn, basis: 'built_in' };
    const answer = await ai.chat(
      [
        { role: 'system', content: clarityPrompt(builtIn.language) },
        { role: 'user', content: bounded },
      ],
      { purpose: 'clarity', temperature: 0, signal },
    );
    if (answer === null) return { ...builtIn, basis: 'built_in' };
    const parsed = modelClarity.safeParse(jsonOfAnswer(answer));
    const problem = !parsed.success
      ? 'not the JSON asked for'
      : detectLanguage([...parsed.data.reasons, ...parsed.data.suggestions].join(' ')) !== builtIn.language
        ? `not in ${languageName[builtIn.language]}`
        : null;
    if (problem || !parsed.success) {
      log.warn('AI clarity answer refused; falling back to the built-in analyser', { purpose: 'clarity', reason: `answer is ${problem}` });
      return { ...builtIn, basis: 'built_in' };
    }
    const { score, reasons, suggestions } = parsed.data;
    return { score: Math.round(score * 100) / 100, language: builtIn.language, reasons, suggestions, basis: 'llm' };
  }

  return { evaluateClarity };
}

export type AnalysisEngine = ReturnType<typeof createAnalysisEngine>;
