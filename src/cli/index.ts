import { runCli } from './run.ts';

/**
 * Entry point of `npm run cli -- <command> [options]`.
 *
 * Libraries such as knex print their warnings with console.log. Stdout carries only the
 * command's JSON result (written with process.stdout.write), so console output is sent to stderr
 * where it cannot corrupt what a script parses.
 */
console.log = console.info = console.debug = (...items: unknown[]) => console.error(...items);

// The exit code is set rather than forced with process.exit, so that output still buffered for a
// pipe is written before Node ends.
process.exitCode = await runCli(process.argv.slice(2), {
  environment: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});
