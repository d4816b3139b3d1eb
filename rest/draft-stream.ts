import { z } from 'zod';
import type { Principal } from '../src/engine/common/index.ts';
import type { DraftEvent } from '../src/engine/work/index.ts';
import type { Engine } from '../src/engine/index.ts';
import { frame, openSse } from '../src/events/sse.ts';
import { type RouteInput, handled } from './route.ts';

/**
 * The ai-create streams (skills and tasks): the events as the OpenAPI document shows them, and
 * one way of serving them. The stream is capped per credential like every stream (4290 before it
 * opens); a client that leaves, or a revocation of its key, aborts the drafting and the model's
 * request; a failure after the stream started is told as its last event, never as a 500.
 */
export const draftEvents = (draft: z.ZodType, kind: string) =>
  z
    .union([
      z.object({ stage: z.enum(['started', 'drafting', 'checking', 'fallback']), message: z.string() }).meta({ description: 'event: progress' }),
      z.object({ field: z.string(), value: z.unknown() }).meta({ description: 'event: field (built-in drafter): one field of the draft' }),
      z.object({ text: z.string() }).meta({ description: "event: delta (language model): the model's tokens as they arrive" }),
      z
        .object({ draft, generated_by: z.enum(['builtin', 'ai']) })
        .meta({ description: `event: draft, the last event: a complete draft that creating a ${kind} accepts (not stored)` }),
      z.object({ code: z.number().int(), message: z.string(), detail: z.string() }).meta({ description: 'event: error, the last event: nothing was stored' }),
    ])
    .meta({ description: 'SSE events: `event` names the kind, `id` counts from 1, `data` is one of these objects' });

type Drafter<B> = (body: B, signal: AbortSignal) => AsyncGenerator<DraftEvent>;

export async function serveDraft<B>(input: RouteInput<B, unknown, unknown>, engine: Engine, draft: Drafter<B>) {
  const controller = new AbortController();
  const release = engine.admission.sseStreams.open(input.principal as Principal, () => controller.abort());
  const stream = openSse(input.response, () => {
    controller.abort();
    release();
  });
  let sequence = 0;
  try {
    for await (const item of draft(input.body, controller.signal)) {
      sequence += 1;
      if (!stream.sendFrame(frame(JSON.stringify(item.data), String(sequence), item.event))) break;
    }
  } catch (error) {
    engine.dependencies.log.error('ai-create failed', { error: error instanceof Error ? error.message : String(error) });
    stream.sendFrame(
      frame(
        JSON.stringify({ code: 5000, message: 'internal_error', detail: 'the draft could not be finished; nothing was stored' }),
        String(sequence + 1),
        'error',
      ),
    );
  } finally {
    stream.close();
  }
  return handled;
}
