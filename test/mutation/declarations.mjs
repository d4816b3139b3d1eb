import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Mutation testing of the route table's declarations (docs/decisions/operations-and-testing.md
 * "Mutation testing"). Stryker cannot test them: a route's `auth` is evaluated when the app is
 * built, before any test runs, so Stryker counts it as static and never activates it. This does
 * what Stryker would, for that one field: in a copy of the project, each route's declared `auth`
 * is changed in its source to a requirement that lets in someone it should not (or shuts out
 * someone it should let in), and the access matrix test is run for the routes whose declaration
 * changed, with its check of which routes are open. The mutant is killed when the test fails (or
 * runs past its time, as Stryker counts a timeout). Run by `npm run mutate -- declarations`.
 */
const root = process.cwd();
const sandbox = path.join(root, '.stryker-tmp', 'declarations');
const reportFile = path.join(root, '.bench-out', 'mutation', 'declarations.json');
const declarationFiles = [
  ...readdirSync(path.join(root, 'rest', 'routes')).filter((name) => name.endsWith('.ts')).map((name) => `rest/routes/${name}`),
  'rpc/card.ts', 'src/app.ts',
];
/** What each requirement is changed to: opened to everyone, or to the other caller type. */
const alternatives = { none: ['user'], user: ['none'], agent: ['none', 'user'], human: ['none', 'user'], admin: ['none', 'user'] };
const declaration = /auth: '(none|user|agent|human|admin)'/g;
const leftOut = new Set(['node_modules', '.git', '.bench-out', '.stryker-tmp', '.scratch', 'data']);

function prepareSandbox() {
  rmSync(sandbox, { recursive: true, force: true });
  mkdirSync(sandbox, { recursive: true });
  for (const entry of readdirSync(root)) {
    if (!leftOut.has(entry)) cpSync(path.join(root, entry), path.join(sandbox, entry), { recursive: true });
  }
  symlinkSync(path.join(root, 'node_modules'), path.join(sandbox, 'node_modules'), 'dir');
}

/** Runs the access matrix test in the sandbox; true when it passed. */
function matrixPasses(testName, environment) {
  const env = { ...process.env, ...environment };
  delete env.TEST_DATABASE_URL;
  delete env.TEST_REDIS_URL;
  const run = spawnSync('npx', ['vitest', 'run', 'test/access/access-matrix.test.ts', '-t', testName], { cwd: sandbox, env, encoding: 'utf8', timeout: 600_000 });
  return run.status === 0;
}

/** Every declaration of the listed files, with its place in the source. */
function declarationsOf(file) {
  const source = readFileSync(path.join(root, file), 'utf8');
  return [...source.matchAll(declaration)].map((match) => {
    const before = source.slice(0, match.index);
    const line = before.split('\n').length;
    const column = match.index - before.lastIndexOf('\n');
    return { file, source, index: match.index, text: match[0], requirement: match[1], line, column };
  });
}

prepareSandbox();
const record = path.join(sandbox, 'declared.json');
if (!matrixPasses('has a row for every route', { ACCESS_MATRIX_RECORD: record }) || !existsSync(record)) {
  console.error('the access matrix test does not pass unchanged: nothing to mutate against');
  process.exit(1);
}
const mutants = declarationFiles.flatMap(declarationsOf).flatMap((found) => alternatives[found.requirement].map((to) => ({ ...found, to })));
const files = {};
let killed = 0;
for (const [index, mutant] of mutants.entries()) {
  const target = path.join(sandbox, mutant.file);
  const replacement = `auth: '${mutant.to}'`;
  writeFileSync(target, mutant.source.slice(0, mutant.index) + replacement + mutant.source.slice(mutant.index + mutant.text.length));
  const passed = matrixPasses('has a row for every route|answers every route as its row says', { ACCESS_MATRIX_DECLARED: record });
  writeFileSync(target, mutant.source);
  if (!passed) killed += 1;
  console.log(`declarations ${index + 1}/${mutants.length}: ${mutant.file}:${mutant.line} ${mutant.text} -> ${replacement}: ${passed ? 'SURVIVED' : 'killed'} (${killed} killed so far)`);
  files[mutant.file] ??= { language: 'typescript', source: mutant.source, mutants: [] };
  files[mutant.file].mutants.push({
    id: String(index), mutatorName: 'AuthRequirement', replacement, status: passed ? 'Survived' : 'Killed',
    location: { start: { line: mutant.line, column: mutant.column }, end: { line: mutant.line, column: mutant.column + mutant.text.length } },
  });
}
mkdirSync(path.dirname(reportFile), { recursive: true });
writeFileSync(reportFile, JSON.stringify({ schemaVersion: '1', thresholds: { high: 90, low: 85 }, files }, null, 2));
console.log(`declarations: ${killed} of ${mutants.length} killed; report in ${path.relative(root, reportFile)}`);
