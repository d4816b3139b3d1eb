import type { Command } from './command.ts';

/** Help text is generated from the command table, so it can never disagree with the parser. */
const invocation = 'npm run cli --';

export function generalHelp(commands: readonly Command[]): string {
  return [
    `Usage: ${invocation} <command> [options]`,
    '',
    'Operator commands for the marketplace. They act on the database the server uses:',
    'DATABASE_URL when it is set, otherwise the embedded database in DATA_DIR (default ./data).',
    'Results are printed to stdout as JSON; logs and notices go to stderr (LOG_LEVEL, default warn).',
    '',
    'Commands:',
    ...columns(commands.map((command) => [command.name, command.description])),
    '',
    `Run "${invocation} <command> --help" for a command's options.`,
    'Exit codes: 0 success, 1 the operation failed, 2 usage error.',
    '',
  ].join('\n');
}

export function commandHelp(command: Command): string {
  const required = Object.entries(command.options)
    .filter(([, spec]) => spec.required)
    .map(([name, spec]) => optionLabel(name, spec.type === 'string' ? spec.placeholder : undefined));
  const rows = Object.entries(command.options).map(([name, spec]): [string, string] => [
    optionLabel(name, spec.type === 'string' ? spec.placeholder : undefined),
    `${spec.required ? '(required) ' : ''}${spec.description}`,
  ]);
  rows.push(['--help', 'Show this help.']);
  return [`Usage: ${invocation} ${[command.name, ...required, '[options]'].join(' ')}`, '', command.description, '', 'Options:', ...columns(rows), ''].join(
    '\n',
  );
}

export const helpHint = (commandName?: string) =>
  commandName ? `Run "${invocation} ${commandName} --help" for usage.` : `Run "${invocation} --help" for the list of commands.`;

function optionLabel(name: string, placeholder: string | undefined): string {
  return placeholder ? `--${name} <${placeholder}>` : `--${name}`;
}

function columns(rows: [string, string][]): string[] {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`);
}
