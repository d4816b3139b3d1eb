import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mutationGroups } from './groups.mjs';

/**
 * `npm run mutate [group ...] [stryker options]`: runs Stryker once per mutation group (all of
 * them without names), each on the embedded database and with its own incremental file, so a run
 * that was stopped resumes where its groups stood; then prints every group's score from its JSON
 * report. Stryker shows its own progress while each group runs.
 */
const args = process.argv.slice(2);
const named = args.filter((arg) => Object.hasOwn(mutationGroups, arg));
const strykerOptions = args.filter((arg) => !named.includes(arg));
const chosen = named.length > 0 ? named : Object.keys(mutationGroups);

for (const [index, name] of chosen.entries()) {
  console.log(`\nmutation group ${index + 1}/${chosen.length}: ${name} (${mutationGroups[name].mutate.join(', ')})`);
  const environment = { ...process.env, MUTATION_GROUP: name };
  delete environment.TEST_DATABASE_URL;
  delete environment.TEST_REDIS_URL;
  const command = mutationGroups[name].script ? ['node', [mutationGroups[name].script]] : ['npx', ['stryker', 'run', '--incremental', ...strykerOptions]];
  const run = spawnSync(command[0], command[1], { stdio: 'inherit', env: environment });
  if (run.status !== 0) process.exitCode = 1;
}

/** Stryker's mutation score: detected (killed or timed out) over detected plus undetected (survived or not covered). */
function scoreOf(report) {
  const counts = { killed: 0, timeout: 0, survived: 0, noCoverage: 0, other: 0 };
  for (const file of Object.values(report.files)) {
    for (const mutant of file.mutants) {
      const key = { Killed: 'killed', Timeout: 'timeout', Survived: 'survived', NoCoverage: 'noCoverage' }[mutant.status] ?? 'other';
      counts[key] += 1;
    }
  }
  const detected = counts.killed + counts.timeout;
  const undetected = counts.survived + counts.noCoverage;
  return { ...counts, score: detected + undetected === 0 ? null : (100 * detected) / (detected + undetected) };
}

console.log('\n| group | killed | timed out | survived | no coverage | score |\n|---|---:|---:|---:|---:|---:|');
for (const name of Object.keys(mutationGroups)) {
  const file = `.bench-out/mutation/${name}.json`;
  if (!existsSync(file)) {
    console.log(`| ${name} | not run yet | | | | |`);
    continue;
  }
  const score = scoreOf(JSON.parse(readFileSync(file, 'utf8')));
  console.log(`| ${name} | ${score.killed} | ${score.timeout} | ${score.survived} | ${score.noCoverage} | ${score.score === null ? '-' : `${score.score.toFixed(1)}%`} |`);
}
