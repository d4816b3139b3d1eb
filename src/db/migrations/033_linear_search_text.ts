import type { Knex } from 'knex';

/**
 * `market_search_text` (migration 012) in linear time (issue 28, point 8). The first version built
 * its Chinese pieces by appending to a growing string, one `substr` at a time: each append copies
 * everything so far and each `substr` walks the run from its start, so 10,000 Chinese characters
 * took 446 ms and 20,000 took 1.2 s inside every write of a row. This version makes the pieces of
 * a run with three passes of `regexp_replace` over it: every character doubled ("翻译服务" ->
 * "翻翻译译服服务务"), the first and last character dropped ("翻译译服服务"), a space before every
 * two characters (" 翻译 译服 服务"); the runs' pieces are joined in order by one `string_agg`.
 * Each step is one pass, so the cost grows with the length of the text (2 ms for 10,000
 * distinct Chinese characters, against 22 ms for an array-and-unnest version and 450 ms before).
 *
 * The output is the same, character for character (test/work/search-text.test.ts compares both on a
 * varied corpus), so the stored generated columns of migrations 012, 021 and 022 stay valid and
 * need no rewrite; CREATE OR REPLACE keeps the function's identity, which those columns depend on.
 * A run of one character is kept as it is, as before. Plain SQL (no PL/pgSQL), tested on
 * PostgreSQL 15 and PGlite. The replacement's back references (\\1) are written with doubled
 * backslashes because this is a JavaScript template literal.
 */
const chinese = String.raw`[\u3400-\u9fff\uf900-\ufaff]+`;

export const linearDefinition = (name = 'market_search_text') => `CREATE OR REPLACE FUNCTION ${name}(source text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(regexp_replace(lower(source), '${chinese}', ' ', 'g') || coalesce((
    SELECT string_agg(
      CASE WHEN char_length(run.match[1]) = 1 THEN ' ' || run.match[1]
      ELSE regexp_replace(substr(regexp_replace(run.match[1], '(.)', '\\1\\1', 'g'), 2, 2 * char_length(run.match[1]) - 2), '(..)', ' \\1', 'g')
      END, '' ORDER BY run.number)
    FROM regexp_matches(lower(source), '${chinese}', 'g') WITH ORDINALITY AS run(match, number)
  ), ''), '')
$$`;

/** Migration 012's definition, restored by `down` and compared with the new one by the tests. */
export const quadraticDefinition = (name = 'market_search_text') => `CREATE OR REPLACE FUNCTION ${name}(source text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
    DECLARE
      run text;
      pieces text := '';
      position integer;
    BEGIN
      IF source IS NULL THEN RETURN ''; END IF;
      FOR run IN SELECT (regexp_matches(lower(source), '${chinese}', 'g'))[1] LOOP
        IF char_length(run) = 1 THEN
          pieces := pieces || ' ' || run;
        ELSE
          FOR position IN 1 .. char_length(run) - 1 LOOP
            pieces := pieces || ' ' || substr(run, position, 2);
          END LOOP;
        END IF;
      END LOOP;
      RETURN regexp_replace(lower(source), '${chinese}', ' ', 'g') || pieces;
    END $$`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(linearDefinition());
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(quadraticDefinition());
}
