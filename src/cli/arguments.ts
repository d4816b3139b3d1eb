import { parseArgs } from 'node:util';
import { type Command, type OptionValues, UsageError } from './command.ts';

/**
 * Parses one command's arguments strictly: an unknown option, a positional argument or a string
 * option without its value is a usage error. `--help` is accepted by every command.
 */
export function parseCommandArguments(command: Command, args: string[]): OptionValues & { help?: boolean } {
  const options = Object.fromEntries(Object.entries(command.options).map(([name, spec]) => [name, { type: spec.type }]));
  let values: OptionValues & { help?: boolean };
  try {
    ({ values } = parseArgs({ args, options: { ...options, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: false }));
  } catch (error) {
    throw new UsageError(describeParseError(error), command.name);
  }
  if (values.help) return values;
  const missing = Object.entries(command.options).filter(([name, spec]) => spec.required && values[name] === undefined);
  if (missing.length > 0) {
    const names = missing.map(([name]) => `--${name}`).join(', ');
    throw new UsageError(`missing required option${missing.length > 1 ? 's' : ''} ${names}`, command.name);
  }
  return values;
}

/**
 * parseArgs messages end with advice about `--` that does not apply to this CLI; the first
 * sentence names the problem, which is all the operator needs next to the help hint.
 */
function describeParseError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: string }).code;
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' || code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    return message.split('. ')[0]!.replace(/\.$/, '');
  }
  return message;
}
