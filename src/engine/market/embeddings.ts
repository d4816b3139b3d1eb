import type { AiProvider } from '../../ai/provider.ts';
import { type MatchText, denseCosine } from '../../domain/scoring.ts';
import { flatTextOf } from '../../domain/term-vectors.ts';
import { limits } from '../../limits.ts';
import { kickedRunner, periodic } from '../../periodic.ts';
import { type EmbeddableRow, type EmbeddedKind, embeddableRows, rowsWithoutEmbedding, saveEmbeddings, storedEmbeddings } from '../../store/embeddings.ts';
import type { EngineDependencies } from '../common/index.ts';

/** Whether embeddings refined an answer's similarity, and if not, why not. */
export type EmbeddingsUse = 'used' | 'not_configured' | 'failed';

/**
 * A row to have a vector of: a stored row by its id and the digest of its present words (its text
 * is read only if it must be embedded now), or a draft's words that are no row's (a conversation's
 * demand before it is stored), embedded and never kept.
 */
export type EmbeddingItem = { kind: EmbeddedKind; id: string; words_sha: string; draft?: undefined } | { kind: EmbeddedKind; id: string; draft: MatchText };

/** Words to embed now, and whether the vector is kept with a row. */
interface Embeddable {
  kind: EmbeddedKind;
  row: EmbeddableRow;
  keep: boolean;
}

const kinds: EmbeddedKind[] = ['capability', 'demand'];
const keyOf = (item: { kind: EmbeddedKind; id: string }) => `${item.kind}:${item.id}`;

/**
 * Embeddings stored with the rows (docs/decisions/matching.md "Stored embeddings"). A row's words are
 * embedded once: after the commit that wrote them (rows noted here, embedded in batches of
 * aiEmbeddingTextsMax), by the periodic sweep for what that missed (a crash, a model that was
 * down, a new model), or at the latest by the first match that needs them, which stores them too.
 * A match then reads vectors instead of asking the model about every candidate.
 */
export function createRowEmbeddings({ db, now, log }: EngineDependencies, ai: Pick<AiProvider, 'embed' | 'embeddingModel'>) {
  const model = ai.embeddingModel;

  /** Vectors for these rows in one call per batch of texts, stored; null when the model did not answer. */
  async function embedAndStore(items: Embeddable[]): Promise<Map<string, number[]> | null> {
    const made = new Map<string, number[]>();
    for (let start = 0; start < items.length; start += limits.aiEmbeddingTextsMax) {
      const chunk = items.slice(start, start + limits.aiEmbeddingTextsMax);
      const vectors = await ai.embed(chunk.map((item) => flatTextOf(item.row)));
      if (!vectors || vectors.length !== chunk.length || vectors.some((vector) => vector.length > limits.embeddingDimensionsMax)) return null;
      chunk.forEach((item, index) => made.set(keyOf({ kind: item.kind, id: item.row.id }), vectors[index]!));
      for (const kind of kinds) {
        const entries = chunk.flatMap((item, index) => (item.kind === kind && item.keep ? [{ row: item.row, vector: vectors[index]! }] : []));
        // A row deleted meanwhile only loses its stored vector; this answer still has it.
        await saveEmbeddings(db, kind, model!, entries, now()).catch((error: unknown) => log.warn('storing embeddings failed', { kind, error: String(error) }));
      }
    }
    return made;
  }

  /** Each item's vector: the stored one of its present words, else made now (and stored). */
  async function vectorsOf(items: EmbeddingItem[]): Promise<number[][] | null> {
    const vectors = new Map<string, number[]>();
    const missing: Embeddable[] = [];
    for (const kind of kinds) {
      const rows = items.filter((item) => item.kind === kind);
      const ids = [...new Set(rows.flatMap((item) => (item.draft ? [] : [item.id])))];
      for (const [id, vector] of await storedEmbeddings(db, kind, model!, ids)) vectors.set(`${kind}:${id}`, vector);
      // The words of rows without a present vector are read now: a match reads no candidate's text otherwise.
      const unembedded = ids.filter((id) => !vectors.has(`${kind}:${id}`));
      for (const row of await embeddableRows(db, kind, unembedded)) missing.push({ kind, row, keep: true });
      for (const item of rows) if (item.draft) missing.push({ kind, row: { id: item.id, ...item.draft, words_sha: '' }, keep: false });
    }
    if (missing.length > 0) {
      const made = await embedAndStore(missing);
      if (!made) return null;
      for (const [key, vector] of made) vectors.set(key, vector);
    }
    const ordered = items.map((item) => vectors.get(keyOf(item)));
    // A row gone meanwhile has no words to embed: no candidate is scored on a different scale.
    return ordered.every((vector) => vector !== undefined) ? ordered : null;
  }

  /**
   * The embedding cosine of `one` with each of `others`. All or none: when a vector cannot be had,
   * every candidate is scored on its words alone, so no candidate is ranked on a different scale.
   */
  async function similarities(one: EmbeddingItem, others: EmbeddingItem[]): Promise<{ similarities: (number | null)[]; use: EmbeddingsUse }> {
    const none = (use: EmbeddingsUse) => ({ similarities: others.map(() => null), use });
    if (!model) return none('not_configured');
    if (others.length === 0) return none('used');
    const vectors = await vectorsOf([one, ...others]);
    if (!vectors) return none('failed');
    return { similarities: others.map((_, index) => denseCosine(vectors[0]!, vectors[index + 1]!)), use: 'used' };
  }

  const pending: Record<EmbeddedKind, Set<string>> = { capability: new Set(), demand: new Set() };

  /** One batch of noted rows that still lack a present embedding; true while there is work. */
  async function embedPending(): Promise<boolean> {
    for (const kind of kinds) {
      const ids = [...pending[kind]].slice(0, limits.aiEmbeddingTextsMax);
      if (ids.length === 0) continue;
      ids.forEach((id) => pending[kind].delete(id));
      const rows = await rowsWithoutEmbedding(db, kind, model!, ids, ids.length);
      // The model is down: the sweep embeds these later, so the noted rows are not kept.
      if (rows.length > 0 && !(await embedAndStore(rows.map((row) => ({ kind, row, keep: true }))))) return false;
      return true;
    }
    return false;
  }

  /** Rows of any instance without a present embedding (a new model re-embeds them all), a few batches per run. */
  async function sweep(): Promise<number> {
    let embedded = 0;
    for (const kind of kinds) {
      for (let batch = 0; batch < limits.embeddingSweepBatchesPerRunMax; batch++) {
        const rows = await rowsWithoutEmbedding(db, kind, model!, null, limits.aiEmbeddingTextsMax);
        if (rows.length === 0) break;
        if (!(await embedAndStore(rows.map((row) => ({ kind, row, keep: true }))))) return embedded;
        embedded += rows.length;
      }
    }
    return embedded;
  }

  const runner = kickedRunner('embedding written rows', embedPending, log);

  /** Rows whose words were just written (after their commit): embedded shortly, off the request path. */
  function note(kind: EmbeddedKind, ids: string[]): void {
    if (!model || ids.length === 0) return;
    for (const id of ids) if (pending[kind].size < limits.embeddingPendingRowsMax) pending[kind].add(id);
    runner.kick();
  }

  const schedule = periodic('embeddings sweep', sweep, log);
  return {
    model,
    similarities,
    note,
    sweep,
    start: (intervalMs: number = limits.embeddingSweepIntervalMs) => (model ? schedule.start(intervalMs) : undefined),
    stop: schedule.stop,
    idle: async () => {
      await runner.idle();
      await schedule.idle();
    },
  };
}

export type RowEmbeddings = ReturnType<typeof createRowEmbeddings>;
