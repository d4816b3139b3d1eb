import { readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { claimMatches, type ShellBlock, shellBlocks, shownAnswers } from '../helpers/doc-blocks.ts';
import { type BlockOutcome, runShellSession } from '../helpers/doc-session.ts';
import { cloneTemplate } from '../helpers/databases.ts';
import { startServer } from '../helpers/processes.ts';
import { temporaryDirectory } from '../helpers/temporary.ts';

/**
 * The README's and the docs' shell examples, run as written against a fresh server, so that they
 * cannot drift from what the server does. The conventions (also said at the top of each document
 * that is run):
 *
 * - The blocks of README.md, then those of docs/mcp.md (which continues the README's walk-through),
 *   run in order in one bash session from the repository directory. The test sets BASE (the
 *   server, through a recording proxy), DATA_DIR (the server's, where its generated admin token
 *   is) and TMPDIR (empty); the documents default BASE to http://localhost:3000.
 * - A block marked `<!-- not-run: reason -->` is skipped. Every other block must end with exit
 *   status 0 (or its `<!-- expect-exit: ... -->`), and every HTTP answer it gets must be 2xx, except
 *   the statuses its `<!-- expect-status: ... -->` marker lists, in order (test/helpers/doc-blocks.ts).
 * - A comment at the end of a command line is what the command prints (doc-blocks.ts claimMatches).
 * - An answer a document shows as JSON after a block that runs has the fields and types of an
 *   answer the run got (doc-blocks.ts shownAnswers; ids, times and amounts differ from run to run).
 * - The demo seller and webhook receiver of the walk-through listen on ports 4000 and 4001.
 */
const root = path.resolve(import.meta.dirname, '../..');
const walkThrough = ['README.md', 'docs/mcp.md'];
/** Documents whose shell blocks are not a walk-through against one server, and why. */
const notWalkThroughs: Record<string, string> = {
  'docs/a2a-conformance.md': 'installs Debian packages and runs the external A2A conformance kit from a clone',
  'docs/benchmark-history.md': 'the commands of past benchmark runs: minutes each, on PostgreSQL and Redis',
};

function documents(): string[] {
  return [
    'README.md',
    ...readdirSync(path.join(root, 'docs'))
      .filter((name) => name.endsWith('.md'))
      .map((name) => `docs/${name}`),
  ];
}

async function portIsFree(port: number): Promise<boolean> {
  const server = createServer();
  const free = await new Promise<boolean>((resolve) => server.once('error', () => resolve(false)).listen(port, '127.0.0.1', () => resolve(true)));
  if (free) await new Promise<void>((resolve) => server.close(() => resolve()));
  return free;
}

/** Everything wrong with one block's run, as sentences naming the document line. */
function problems(outcome: BlockOutcome): string[] {
  const { block } = outcome;
  const where = (line = 0) => `${block.file}:${block.fenceLine + line}`;
  const found: string[] = [];
  if (outcome.exitStatus !== block.expectExit)
    found.push(`${where()}: the block ended with exit status ${outcome.exitStatus ?? 'none (it did not finish)'}, not ${block.expectExit}`);
  const refused = outcome.statuses.filter(({ status }) => status < 200 || status > 299);
  const statuses = refused.map(({ status }) => status);
  if (JSON.stringify(statuses) !== JSON.stringify(block.expectStatus)) {
    found.push(`${where()}: answers other than 2xx ${JSON.stringify(refused)}, the block's expect-status marker says ${JSON.stringify(block.expectStatus)}`);
  }
  for (const { line, claim } of block.claims) {
    const printed = outcome.printed.get(line);
    if (printed === undefined)
      found.push(`${where(line)}: the comment says "${claim}", but no command ended on that line (write an explanation on a line of its own)`);
    else if (!claimMatches(printed, claim)) found.push(`${where(line)}: printed ${JSON.stringify(printed)}, the comment says "${claim}"`);
  }
  return found;
}

describe('the shell examples of the README and the docs', () => {
  it('every document with shell blocks is either run here or named as no walk-through, with why', () => {
    const withBlocks = documents().filter((file) => shellBlocks(path.join(root, file)).length > 0);
    expect(withBlocks.filter((file) => !walkThrough.includes(file) && !(file in notWalkThroughs))).toEqual([]);
    // A document named here must still have what it is named for.
    expect(Object.keys(notWalkThroughs).filter((file) => !withBlocks.includes(file))).toEqual([]);
  });

  it('the README walk-through and docs/mcp.md run as written against a fresh server', { timeout: 360_000 }, async () => {
    for (const port of [4000, 4001]) expect(await portIsFree(port), `port ${port}, which the walk-through's demo servers use, is taken`).toBe(true);
    const dataDirectory = temporaryDirectory('docs-examples-data');
    // The documents' default (`npm start`: the embedded database, secrets generated into DATA_DIR);
    // on the run with real backends, a fresh clone of the test template and Redis instead.
    const clone = process.env.TEST_DATABASE_URL ? await cloneTemplate(process.env.TEST_DATABASE_URL) : null;
    const server = await startServer(
      {
        DATA_DIR: dataDirectory,
        LOG_LEVEL: 'info',
        ADMIN_TOKEN: '',
        JWT_SECRET: '',
        CALLBACK_ALLOW_PRIVATE: 'true',
        DATABASE_URL: clone?.url ?? '',
        REDIS_URL: (clone && process.env.TEST_REDIS_URL) || '',
      },
      150_000,
    ).catch(async (error: unknown) => {
      await clone?.drop();
      throw error;
    });
    try {
      const blocks: ShellBlock[] = walkThrough.flatMap((file) => shellBlocks(path.join(root, file)).map((block) => ({ ...block, file })));
      const runnable = blocks.filter((block) => block.notRun === undefined);
      const session = await runShellSession(runnable, {
        serverUrl: server.url,
        directory: temporaryDirectory('docs-examples-session'),
        environment: { DATA_DIR: dataDirectory },
        timeoutMs: 180_000,
      });
      const found = session.outcomes.flatMap(problems);
      for (const file of walkThrough) {
        for (const { line, shape } of shownAnswers(path.join(root, file))) {
          if (!session.answerShapes.has(shape)) found.push(`${file}:${line}: no answer of the run has the fields and types shown: ${shape}`);
        }
      }
      if (session.timedOut) found.unshift('the session did not finish within 180 s');
      expect(found, `${found.join('\n')}\n\n----- stdout -----\n${session.stdout}\n----- stderr -----\n${session.stderr}`).toEqual([]);
    } finally {
      await server.stop();
      await clone?.drop();
    }
  });
});
