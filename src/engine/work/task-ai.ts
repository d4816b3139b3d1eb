import { z } from 'zod';
import type { AiProvider } from '../../ai/provider.ts';
import { categoryCodes } from '../../domain/categories.ts';
import { optimizeDescription } from '../../domain/description-optimizer.ts';
import { draftTask, type TaskDraftInput } from '../../domain/task-drafts.ts';
import { limits } from '../../limits.ts';
import type { Logger } from '../../logger.ts';
import { taskDraft } from '../../schemas/tasks.ts';
import { jsonOfAnswer } from '../market/index.ts';
import { createDraftStream } from './draft-stream.ts';

/**
 * AI help for tasks (docs/tasks.md "AI help"): ai-create streams a task draft exactly as skills'
 * does (engine/work/draft-stream.ts), and description-optimize answers a clearer description with the
 * changes listed. Both work without a model (built-in, deterministic); a model's answer is used
 * only when it is valid.
 */
const draftPrompt = [
  'You draft a task someone publishes on a work marketplace, from their short description.',
  'Answer with one JSON object and nothing else, with these fields: "title" (at most 200 characters), "description" (what is wanted, the deliverables and how they are accepted),',
  `"category" (one of: ${categoryCodes.join(', ')}), "tags" (at most 10 short words), "delivery_hours" (a whole number of hours),`,
  '"preferred_billing_model" (fixed, per_hour, per_day, per_use or negotiable), and "bounty_amount" (a decimal text like "50.00") only when the description names one. Write in the language of the description.',
].join('\n');

const optimizePrompt = [
  'You make a task description on a work marketplace clearer: what is delivered, how much, in which format, by when, for how much, how it is accepted.',
  'Never invent facts (no deadline or price the text does not give: leave a labelled blank instead). Keep the language of the text.',
  `Answer with one JSON object and nothing else: {"optimized_description": string, "changes": [short strings, at most ${limits.aiAnswerItemsMax}]}.`,
].join('\n');

const modelOptimization = z.object({
  optimized_description: z.string().trim().min(1).max(limits.taskDescriptionLengthMax),
  changes: z.array(z.string().trim().min(1).max(limits.aiAnswerItemLengthMax)).max(limits.aiAnswerItemsMax),
});

export function createTaskAi(ai: AiProvider, log: Logger) {
  const drafts = createDraftStream<TaskDraftInput>(ai, {
    name: 'task',
    builtIn: draftTask,
    schema: taskDraft,
    systemPrompt: draftPrompt,
    modelFields: ['title', 'description', 'category', 'tags', 'delivery_hours', 'preferred_billing_model', 'bounty_amount'],
    callerChoices: (input) => ({
      mode: input.mode ?? 'online',
      ...(input.category ? { category: input.category } : {}),
      ...(input.city ? { city: input.city } : {}),
    }),
  });

  async function optimize(input: { description: string; title?: string }, signal?: AbortSignal) {
    const builtIn = optimizeDescription(input.description);
    if (!ai.configured) return { ...builtIn, optimized_by: 'builtin' as const };
    const text = input.title ? `${input.title}\n\n${input.description}` : input.description;
    const answer = await ai.chat(
      [
        { role: 'system', content: optimizePrompt },
        { role: 'user', content: text },
      ],
      { purpose: 'description optimisation', temperature: 0.2, signal },
    );
    const parsed = answer === null ? null : modelOptimization.safeParse(jsonOfAnswer(answer));
    if (!parsed?.success) {
      if (answer !== null) log.warn('AI description optimisation answer refused; using the built-in optimiser', { reason: 'not the expected JSON' });
      return { ...builtIn, optimized_by: 'builtin' as const };
    }
    return { language: builtIn.language, ...parsed.data, optimized_by: 'ai' as const };
  }

  return { drafts, optimize };
}
