import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { jsonShape, type ShellBlock } from './doc-blocks.ts';

/**
 * Runs documents' shell blocks as a reader would: in order, in one bash session, each block as
 * written (sourced from a file of its own, so nothing is rewritten). What the test needs to know
 * is gathered around the blocks, not inside them:
 *
 * - HTTP answers: the blocks reach the server through a recording proxy (BASE points at it), and
 *   each block's curl sends `X-Docs-Test-Block: <n>` from a .curlrc of its own (CURL_HOME), so
 *   every answer is counted against the block that asked, including from a second shell.
 * - What each command printed: a DEBUG trap (inherited into sourced files with `set -T`) prints a
 *   marker with the block and the line before each top-level command of a block (also in the
 *   second shell, a subshell of the session); the output up to the next marker is that line's.
 *   Commands in functions, pipelines' subshells and command substitutions print no marker.
 * - Each block's exit status, after it.
 */
export interface BlockOutcome {
  block: ShellBlock;
  exitStatus: number | null;
  statuses: { status: number; request: string }[];
  /** What each top-level command line printed, by the block's line number. */
  printed: Map<number, string>;
}

export interface SessionResult {
  outcomes: BlockOutcome[];
  /** The shapes of every JSON answer the session got (doc-blocks.ts jsonShape). */
  answerShapes: Set<string>;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

const blockHeader = 'x-docs-test-block';

/** A pass-through proxy to `target` that records each answer's status under the block that asked. */
async function recordingProxy(target: URL) {
  const answers = new Map<number, { status: number; request: string }[]>();
  const shapes = new Set<string>();
  const server = http.createServer((request, response) => {
    const block = Number(request.headers[blockHeader] ?? -1);
    const headers = { ...request.headers };
    delete headers[blockHeader];
    const upstream = http.request({ host: target.hostname, port: target.port, method: request.method, path: request.url, headers }, (answer) => {
      const list = answers.get(block) ?? [];
      list.push({ status: answer.statusCode!, request: `${request.method} ${request.url}` });
      answers.set(block, list);
      response.writeHead(answer.statusCode!, answer.rawHeaders);
      if (String(answer.headers['content-type']).startsWith('application/json')) {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          try {
            shapes.add(jsonShape(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
          } catch {
            // Not JSON after all: no shape to compare.
          }
        });
      }
      answer.pipe(response);
    });
    upstream.on('error', () => response.destroy());
    response.on('close', () => upstream.destroy());
    request.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    answers,
    shapes,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const trap = `[ "$BASH_SUBSHELL" = "\${DOCS_TEST_SUBSHELL:-0}" ] && [ "\${#BASH_SOURCE[@]}" = 2 ] && [ "\${#FUNCNAME[@]}" = 0 ] && printf '\\n@@docs-test@@ %s %s\\n' "\${BASH_SOURCE[0]##*/}" "$LINENO"`;

function driverScript(directory: string, blocks: ShellBlock[]): string {
  const lines = ['set -T', `trap '${trap.replaceAll("'", `'\\''`)}' DEBUG`];
  const sourceBlock = (index: number) => [
    `export CURL_HOME=${directory}/curl-${index}`,
    `source ${directory}/block-${index}.sh`,
    `printf '\\n@@docs-test-exit@@ %s %s\\n' ${index} "$?"`,
  ];
  blocks.forEach((block, index) => {
    mkdirSync(path.join(directory, `curl-${index}`));
    writeFileSync(path.join(directory, `curl-${index}`, '.curlrc'), `header = "X-Docs-Test-Block: ${index}"\n`);
    writeFileSync(path.join(directory, `block-${index}.sh`), block.text);
  });
  blocks.forEach((block, index) => {
    if (block.secondShellWaitsFor) return;
    const second = blocks[index + 1]?.secondShellWaitsFor;
    if (second) {
      const wait = `for _ in $(seq 1200); do [ -s ${second} ] && break; sleep 0.1; done`;
      lines.push(`( DOCS_TEST_SUBSHELL=1; ${wait}; ${sourceBlock(index + 1).join('; ')} ) > ${directory}/second-shell.out 2>&1 &`, 'DOCS_TEST_SECOND_SHELL=$!');
    }
    lines.push(...sourceBlock(index));
    if (second) lines.push('wait $DOCS_TEST_SECOND_SHELL');
  });
  return `${lines.join('\n')}\n`;
}

function parseOutput(stdout: string) {
  const printed = new Map<string, string>();
  const exits = new Map<number, number>();
  let current: string | null = null;
  for (const line of stdout.split('\n')) {
    const marker = /^@@docs-test@@ block-(\d+)\.sh (\d+)$/.exec(line);
    const exit = /^@@docs-test-exit@@ (\d+) (\d+)$/.exec(line);
    if (marker) {
      current = `${marker[1]}:${marker[2]}`;
      if (!printed.has(current)) printed.set(current, '');
    } else if (exit) {
      exits.set(Number(exit[1]), Number(exit[2]));
      current = null;
    } else if (current) {
      printed.set(current, `${printed.get(current)}${line}\n`);
    }
  }
  return { printed, exits };
}

/** Runs `blocks` (the runnable ones, in order) in one bash session against the server at `serverUrl`. */
export async function runShellSession(
  blocks: ShellBlock[],
  options: { serverUrl: string; directory: string; environment: Record<string, string>; timeoutMs: number },
): Promise<SessionResult> {
  const proxy = await recordingProxy(new URL(options.serverUrl));
  const driver = path.join(options.directory, 'driver.sh');
  writeFileSync(driver, driverScript(options.directory, blocks));
  const temporary = path.join(options.directory, 'tmp');
  mkdirSync(temporary);
  const child = spawn('bash', ['--noprofile', '--norc', driver], {
    cwd: path.resolve(import.meta.dirname, '../..'),
    env: { ...process.env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH}`, TMPDIR: temporary, ...options.environment, BASE: proxy.url },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    process.kill(-child.pid!, 'SIGKILL');
  }, options.timeoutMs);
  await new Promise<void>((resolve) => child.once('close', () => resolve()));
  clearTimeout(timer);
  // Background processes a block started and did not stop (a failed block) go with the session.
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    // The group has ended already.
  }
  await proxy.close();
  let second = '';
  try {
    second = readFileSync(path.join(options.directory, 'second-shell.out'), 'utf8');
  } catch {
    // No block ran in a second shell.
  }
  const { printed, exits } = parseOutput(`${stdout}\n${second}`);
  const outcomes = blocks.map((block, index) => ({
    block,
    exitStatus: exits.get(index) ?? null,
    statuses: proxy.answers.get(index) ?? [],
    printed: new Map([...printed].filter(([key]) => key.startsWith(`${index}:`)).map(([key, text]) => [Number(key.split(':')[1]), text.trim()])),
  }));
  return { outcomes, answerShapes: proxy.shapes, stdout: `${stdout}\n----- second shell -----\n${second}`, stderr, timedOut };
}
