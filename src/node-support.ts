/**
 * Which Node lines the product supports (package.json "engines"), checked before anything else
 * loads (issue 28, point 17): on Node 20, `npm ci` printed 51 EBADENGINE warnings of dependencies
 * and `npm start` then ran without a word, so a newcomer never learned which Node to use. An
 * unsupported line is named in one line on stderr, and the program goes on: it may work, and
 * refusing would stop people who know what they do. `src/main.ts` imports this module first;
 * `npm test` runs it as its pretest step.
 */
export const supportedNodeRange = '^22.12.0 || >=24.0.0';

/** Whether `version` (as in process.versions.node) is on a supported line. */
export function isSupportedNode(version: string): boolean {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number);
  return (major === 22 && minor >= 12) || major >= 24;
}

/** The line to print for `version`, or null when it is supported. */
export function nodeSupportNotice(version: string, what: string): string | null {
  if (isSupportedNode(version)) return null;
  return `Node ${version} is not supported (package.json engines: ${supportedNodeRange}): use Node 22.12 or later, or 24; ${what} goes on anyway, unsupported.`;
}

const notice = nodeSupportNotice(process.versions.node, process.env.npm_lifecycle_event === 'pretest' ? 'npm test' : 'the server');
if (notice !== null) process.stderr.write(`${notice}\n`);
