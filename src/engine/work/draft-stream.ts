import { setTimeout as sleep } from 'node:timers/promises';
import type { z } from 'zod';
import type { AiProvider } from '../../ai/provider.ts';
import { categoryCodes } from '../../domain/categories.ts';
import { type DraftField, type DraftInput, draftSkill } from '../../domain/skill-drafts.ts';
import { AppError, errorBody } from '../../errors.ts';
import { limits } from '../../limits.ts';
import { skillDraft } from '../../schemas/skills.ts';
import { jsonOfAnswer } from '../market/index.ts';

/**
 * AI-assisted skill creation (docs/skills.md "AI-assisted creation"): a stream of events ending in
 * one `draft` (valid against the create schema, not stored) or one `error`. With a model
 * configured its tokens are relayed as `delta` events as they arrive; without one, or when it
 * cannot start, the built-in drafter sends the fields one `field` event at a time. Nothing is
 * ever written: a client that leaves (the signal) stops the work, and the model's request with it.
 */
export type DraftEvent =
  | { event: 'progress'; data: { stage: 'started' | 'drafting' | 'checking' | 'fallback'; message: string } }
  | { event: 'field'; data: { field: string; value: unknown } }
  | { event: 'delta'; data: { text: string } }
  | { event: 'draft'; data: { draft: Record<string, unknown>; generated_by: 'builtin' | 'ai' } }
  | { event: 'error'; data: { code: number; message: string; detail: string } };

const draftPrompt = [
  'You draft a skill a person or agent offers on a work marketplace, from their short description.',
  'Answer with one JSON object and nothing else, with these fields: "name" (at most 100 characters), "description" (what is delivered and the boundaries),',
  `"category" (one of: ${categoryCodes.join(', ')}), "tags" (at most 10 short words), "pricing_model" (fixed, per_hour, per_day, per_use or negotiable),`,
  'and "ut_price" (a decimal text like "50.00") only when the description names a price. Write in the language of the description.',
].join('\n');

/** What one kind of draft (a skill, a task) brings to the shared stream. */
export interface DraftKind<I extends { prompt: string }> {
  /** Named in the log and the error ("skill", "task"). */
  name: string;
  /** The built-in drafter: the fields in the order they are streamed. */
  builtIn(input: I): DraftField[];
  /** The create schema (without its idempotency key) a final draft must pass. */
  schema: z.ZodType;
  /** What the model is asked for. */
  systemPrompt: string;
  /** The fields the model may set, and the caller's own choices that win over the model's. */
  modelFields: readonly string[];
  callerChoices(input: I): Record<string, unknown>;
}

export function createDraftStream<I extends { prompt: string }>(ai: AiProvider, kind: DraftKind<I>) {
  async function* builtIn(input: I, signal: AbortSignal): AsyncGenerator<DraftEvent> {
    const draft: Record<string, unknown> = {};
    for (const [field, value] of kind.builtIn(input)) {
      await sleep(limits.skillDraftStepDelayMs, undefined, { signal }).catch(() => {});
      if (signal.aborted) return;
      draft[field] = value;
      yield { event: 'field', data: { field, value } };
    }
    yield { event: 'progress', data: { stage: 'checking', message: 'checking the draft against the create schema' } };
    yield final(draft, 'builtin');
  }

  /** The draft as the create schema reads it, or an error event (never a draft that would be refused). */
  function final(draft: Record<string, unknown>, by: 'builtin' | 'ai'): DraftEvent {
    const checked = kind.schema.safeParse(draft);
    if (!checked.success) return failure('validation_error', `the draft is not a valid ${kind.name}`);
    return { event: 'draft', data: { draft, generated_by: by } };
  }

  async function* create(input: I, signal: AbortSignal): AsyncGenerator<DraftEvent> {
    yield { event: 'progress', data: { stage: 'started', message: 'reading the prompt' } };
    if (!ai.configured) {
      yield { event: 'progress', data: { stage: 'drafting', message: 'drafting with the built-in drafter' } };
      yield* builtIn(input, signal);
      return;
    }
    yield { event: 'progress', data: { stage: 'drafting', message: 'drafting with the language model' } };
    let text = '';
    let deltas = 0;
    let cutOff: string | null = null;
    const stream = ai.chatStream(
      [
        { role: 'system', content: kind.systemPrompt },
        { role: 'user', content: input.prompt },
      ],
      {
        purpose: `${kind.name} ai-create`,
        temperature: 0.3,
        signal,
        onCutOff: (reason) => (cutOff = reason),
      },
    );
    for await (const delta of stream) {
      if (signal.aborted) return;
      text += delta;
      deltas += 1;
      yield { event: 'delta', data: { text: delta } };
    }
    if (signal.aborted) return;
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- cutOff is set by the onCutOff callback during the stream
    if (cutOff !== null) {
      yield failure('callback_failed', 'the language model stopped in the middle of the draft; nothing was stored, try again');
      return;
    }
    const drafted = deltas === 0 ? null : modelDraft(text, kind, input);
    if (drafted) {
      yield { event: 'progress', data: { stage: 'checking', message: 'checking the draft against the create schema' } };
      yield final(drafted, 'ai');
      return;
    }
    yield {
      event: 'progress',
      data: {
        stage: 'fallback',
        message:
          deltas === 0
            ? 'the language model is unavailable; drafting with the built-in drafter'
            : "the model's draft was not valid; drafting with the built-in drafter",
      },
    };
    yield* builtIn(input, signal);
  }

  return { create };
}

/** The model's JSON, with the caller's own choices winning, if it is a valid draft. */
function modelDraft<I extends { prompt: string }>(text: string, kind: DraftKind<I>, input: I): Record<string, unknown> | null {
  const answer = jsonOfAnswer(text);
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) return null;
  const draft: Record<string, unknown> = Object.fromEntries(Object.entries(answer).filter(([key, value]) => kind.modelFields.includes(key) && value !== null));
  Object.assign(draft, kind.callerChoices(input));
  return kind.schema.safeParse(draft).success ? draft : null;
}

/** ai-create of skills (docs/skills.md "AI-assisted creation"). */
export const createSkillDrafts = (ai: AiProvider) =>
  createDraftStream<DraftInput>(ai, {
    name: 'skill',
    builtIn: draftSkill,
    schema: skillDraft,
    systemPrompt: draftPrompt,
    modelFields: ['name', 'description', 'category', 'tags', 'pricing_model', 'ut_price'],
    callerChoices: (input) => ({
      mode: input.mode ?? 'online',
      ...(input.category ? { category: input.category } : {}),
      ...(input.city ? { city: input.city } : {}),
    }),
  });

function failure(name: 'validation_error' | 'callback_failed', message: string): DraftEvent {
  const body = errorBody(new AppError(name, message));
  return { event: 'error', data: { code: body.code, message: body.message, detail: message } };
}

export type DraftStream = ReturnType<typeof createSkillDrafts>;
