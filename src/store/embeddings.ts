import type { Knex } from 'knex';
import type { MatchText } from '../domain/scoring.ts';

/** The kinds of rows that carry words to embed, and where their embeddings are kept. */
export type EmbeddedKind = 'capability' | 'demand';

const places = {
  capability: { rows: 'capabilities', embeddings: 'capability_embeddings', key: 'capability_id', live: 'deleted_at IS NULL' },
  demand: { rows: 'demands', embeddings: 'demand_embeddings', key: 'demand_id', live: "status = 'open'" },
} as const;

/** A row's words and their digest: what an embedding is made from and checked against. */
export interface EmbeddableRow extends MatchText {
  id: string;
  words_sha: string;
}

/** float32, little-endian: the stored form of a vector (a quarter of its size as JSON text). */
export function encodeVector(vector: readonly number[]): Buffer {
  const buffer = Buffer.alloc(vector.length * 4);
  vector.forEach((value, index) => buffer.writeFloatLE(value, index * 4));
  return buffer;
}

export function decodeVector(bytes: Uint8Array): number[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const vector = new Array<number>(bytes.byteLength / 4);
  for (let index = 0; index < vector.length; index++) vector[index] = view.getFloat32(index * 4, true);
  return vector;
}

/**
 * The stored vectors of these rows that were made by `model` from the words the rows hold now
 * (an embedding of older words has another digest and is not returned).
 */
export async function storedEmbeddings(db: Knex, kind: EmbeddedKind, model: string, ids: string[]): Promise<Map<string, number[]>> {
  if (ids.length === 0) return new Map();
  const place = places[kind];
  const rows = (await db(`${place.embeddings} as e`)
    .join(`${place.rows} as r`, function joinOnWords() {
      this.on('r.id', '=', `e.${place.key}`).andOn('r.words_sha', '=', 'e.words_sha');
    })
    .where('e.model', model)
    .whereIn(`e.${place.key}`, ids)
    .select({ id: `e.${place.key}`, vector: 'e.vector' })) as { id: string; vector: Uint8Array }[];
  return new Map(rows.map((row) => [row.id, decodeVector(row.vector)]));
}

export async function saveEmbeddings(
  db: Knex,
  kind: EmbeddedKind,
  model: string,
  entries: { row: EmbeddableRow; vector: number[] }[],
  at: Date,
): Promise<void> {
  if (entries.length === 0) return;
  const place = places[kind];
  await db(place.embeddings)
    .insert(entries.map(({ row, vector }) => ({ [place.key]: row.id, model, words_sha: row.words_sha, vector: encodeVector(vector), created_at: at })))
    .onConflict([place.key, 'model'])
    .merge(['words_sha', 'vector', 'created_at']);
}

const withTagsParsed = (row: EmbeddableRow & { tags: string[] | string }): EmbeddableRow => ({
  ...row,
  tags: typeof row.tags === 'string' ? (JSON.parse(row.tags) as string[]) : row.tags,
});

/** These rows' words and digests, to embed them. */
export async function embeddableRows(db: Knex, kind: EmbeddedKind, ids: string[]): Promise<EmbeddableRow[]> {
  if (ids.length === 0) return [];
  const rows = (await db(places[kind].rows)
    .whereIn('id', ids)
    .whereNotNull('words_sha')
    .select('id', 'title', 'description', 'tags', 'words_sha')) as (EmbeddableRow & { tags: string[] | string })[];
  return rows.map(withTagsParsed);
}

/**
 * Live rows (capabilities not deleted, open demands) with no embedding by `model` of their present
 * words: among `ids` when given, else any, up to `limit`.
 */
export async function rowsWithoutEmbedding(db: Knex, kind: EmbeddedKind, model: string, ids: string[] | null, limit: number): Promise<EmbeddableRow[]> {
  const place = places[kind];
  const query = db(`${place.rows} as r`)
    .whereRaw(place.live)
    .whereNotNull('r.words_sha')
    .whereNotExists(function withPresentEmbedding() {
      this.select(db.raw('1'))
        .from(`${place.embeddings} as e`)
        .whereRaw(`e.${place.key} = r.id`)
        .andWhere('e.model', model)
        .andWhereRaw('e.words_sha = r.words_sha');
    })
    .limit(limit)
    .select('r.id', 'r.title', 'r.description', 'r.tags', 'r.words_sha');
  if (ids) query.whereIn('r.id', ids);
  const rows = (await query) as (EmbeddableRow & { tags: string[] | string })[];
  return rows.map(withTagsParsed);
}
