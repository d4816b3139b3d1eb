import { readFileSync } from 'node:fs';

/**
 * The fenced shell blocks (```bash, ```sh) of a Markdown document, with the markers the docs
 * test reads from the HTML comments on the lines right above a block's fence:
 *
 *   <!-- not-run: <reason> -->        the block is not run (it installs, starts a server, needs a browser, ...)
 *   <!-- expect-status: <n> ... -->   the answers other than 2xx its requests get, in order (default none)
 *   <!-- expect-exit: <n>, <why> -->  its exit status (default 0), e.g. 124 when `timeout` ends a stream
 *   <!-- second-shell: once <file> exists, beside the block before -->
 *                                     it runs in a second shell while the block before runs, once <file> is written
 */
export interface ShellBlock {
  file: string;
  /** The document's line of the opening fence; the block's line n is the document's line fenceLine + n. */
  fenceLine: number;
  text: string;
  notRun?: string;
  expectStatus: number[];
  expectExit: number;
  secondShellWaitsFor?: string;
  /** Comments at the end of a command line: what the command prints (docs/... convention, see claimMatches). */
  claims: { line: number; claim: string }[];
}

const markerPattern = /^<!-- (not-run|expect-status|expect-exit|second-shell): (.+?) -->$/;
const secondShellPattern = /^once (.+) exists, beside the block before$/;

export function shellBlocks(file: string): ShellBlock[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const blocks: ShellBlock[] = [];
  let index = 0;
  while (index < lines.length) {
    const fence = /^(\s*)```(\S*)\s*$/.exec(lines[index]!);
    if (!fence) {
      index++;
      continue;
    }
    const indent = fence[1]!.length;
    const body: string[] = [];
    let end = index + 1;
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end]!)) body.push(lines[end++]!.slice(indent));
    if (fence[2] === 'bash' || fence[2] === 'sh') blocks.push(readBlock(file, lines, index, body));
    index = end + 1;
  }
  return blocks;
}

function readBlock(file: string, lines: string[], fenceIndex: number, body: string[]): ShellBlock {
  const block: ShellBlock = { file, fenceLine: fenceIndex + 1, text: `${body.join('\n')}\n`, expectStatus: [], expectExit: 0, claims: [] };
  for (let above = fenceIndex - 1; above >= 0 && /^<!--.*-->$/.test(lines[above]!.trim()); above--) {
    const marker = markerPattern.exec(lines[above]!.trim());
    if (!marker) continue;
    const [, kind, value] = marker as unknown as [string, string, string];
    if (kind === 'not-run') block.notRun = value;
    if (kind === 'expect-status') block.expectStatus = value.split(/\s+/).map(Number);
    if (kind === 'expect-exit') block.expectExit = Number.parseInt(value, 10);
    if (kind === 'second-shell') {
      const waits = secondShellPattern.exec(value);
      if (!waits) throw new Error(`${file}:${above + 1}: a second-shell marker says "once <file> exists, beside the block before"`);
      block.secondShellWaitsFor = waits[1];
    }
  }
  let inFunction = false;
  body.forEach((line, at) => {
    // A function's body runs where it is called: its comments explain, they claim no output.
    if (/^\w+\(\) \{$/.test(line)) inFunction = true;
    if (inFunction) {
      if (line === '}') inFunction = false;
      return;
    }
    // A comment after a command (not a line that is only a comment) says what the command prints.
    const comment = /^(\s*[^\s#].*?)\s+# (.+)$/.exec(line);
    if (comment) block.claims.push({ line: at + 1, claim: comment[2]!.trim() });
  });
  return block;
}

/**
 * Whether what a command printed is what its comment says: the same text; or the text followed
 * by an explanation after ": " or " (" ("12.50: the one listed price", "3 (order-1, ...)"); or,
 * for a comment ending in "...", text that starts with what comes before it ("whsec_...").
 */
export function claimMatches(printed: string, claim: string): boolean {
  if (printed === '') return false;
  if (printed === claim) return true;
  if (claim.endsWith('...') && printed.startsWith(claim.slice(0, -3))) return true;
  return [': ', ' ('].some((separator) => claim.startsWith(`${printed}${separator}`));
}

/** The shape of a JSON value: object keys and value types, arrays by their first item. */
export function jsonShape(value: unknown): string {
  if (Array.isArray(value)) return `[${value.length > 0 ? jsonShape(value[0]) : ''}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${key}:${jsonShape((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return value === null ? 'null' : typeof value;
}

/**
 * The answers a document shows after a block that runs: the JSON objects of the ```text, ```json
 * and bare blocks between a runnable shell block and the next shell block (a whole block that is
 * one JSON document, or each line that is one). Lines that are not JSON (a history line, prose
 * with "...") are not shown answers.
 */
export function shownAnswers(file: string): { line: number; shape: string }[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const shown: { line: number; shape: string }[] = [];
  let afterRunnable = false;
  for (let index = 0; index < lines.length; index++) {
    const fence = /^\s*```(\S*)\s*$/.exec(lines[index]!);
    if (!fence) continue;
    let end = index + 1;
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end]!)) end++;
    const kind = fence[1]!;
    if (kind === 'bash' || kind === 'sh') afterRunnable = !/^<!-- not-run:/.test(lines[index - 1]?.trim() ?? '');
    else if (afterRunnable && ['text', 'json', ''].includes(kind)) shown.push(...answersIn(lines.slice(index + 1, end), index + 2));
    index = end;
  }
  return shown;
}

function answersIn(body: string[], firstLine: number): { line: number; shape: string }[] {
  const parse = (text: string): unknown => {
    try {
      return JSON.parse(text);
    } catch {
      return undefined;
    }
  };
  const whole = parse(body.join('\n'));
  if (whole !== null && typeof whole === 'object') return [{ line: firstLine, shape: jsonShape(whole) }];
  return body.flatMap((text, at) => {
    const value = parse(text);
    return value !== null && typeof value === 'object' ? [{ line: firstLine + at, shape: jsonShape(value) }] : [];
  });
}
