import type { z } from 'zod';
import type { Runtime, RuntimeOptions } from '../bootstrap.ts';
import type { Engine } from '../engine/index.ts';
import type { Logger } from '../logger.ts';

/**
 * The shape every CLI command shares. A command is data (name, description, options) plus a run
 * function, so the dispatcher, the help text and the argument checks are written once and a new
 * command is one small file and one line in the table.
 */
export interface OptionSpec {
  type: 'string' | 'boolean';
  description: string;
  required?: boolean;
  /** Names the value in help text, e.g. `--user-id <uuid>`; only string options take one. */
  placeholder?: string;
}

/** What parseArgs hands back: option names as typed on the command line, without the dashes. */
export type OptionValues = Record<string, string | boolean | undefined>;

export interface CommandContext {
  runtime: Runtime;
  engine: Engine;
  log: Logger;
  /** Writes a line meant for the operator to stderr, so that stdout stays machine-readable JSON. */
  notice(line: string): void;
}

/** A command's work once its options are validated; the result is printed to stdout as JSON. */
export type CommandWork = (context: CommandContext) => Promise<unknown>;

export interface Command {
  name: string;
  description: string;
  options: Record<string, OptionSpec>;
  runtimeOptions?: RuntimeOptions;
  /**
   * Validates the parsed options and returns the work to run. Validation happens before the
   * database is opened, so a typo is reported at once instead of after a slow embedded start.
   */
  prepare(values: OptionValues): CommandWork;
}

export interface CommandSpec<Schema extends z.ZodType> {
  name: string;
  description: string;
  options: Record<string, OptionSpec>;
  /** Validates the options, keyed by their command-line names so errors can name the option. */
  input: Schema;
  runtimeOptions?: RuntimeOptions;
  run(input: z.output<Schema>, context: CommandContext): Promise<unknown>;
}

/** A usage mistake (unknown command or option, missing or invalid value): exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(
    message: string,
    readonly commandName?: string,
  ) {
    super(message);
  }
}

export function defineCommand<Schema extends z.ZodType>(spec: CommandSpec<Schema>): Command {
  return {
    name: spec.name,
    description: spec.description,
    options: spec.options,
    runtimeOptions: spec.runtimeOptions,
    prepare(values) {
      const parsed = spec.input.safeParse({ ...values });
      if (!parsed.success) throw new UsageError(describeIssues(parsed.error), spec.name);
      const input = parsed.data;
      return (context) => spec.run(input, context);
    },
  };
}

/**
 * Zod paths are option names here, so each problem reads as `--option: what is wrong`. Further
 * problems are indented to line up under the first one after the `error: ` prefix.
 */
function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => (issue.path.length > 0 ? `--${issue.path.map(String).join('.')}: ${issue.message}` : issue.message)).join('\n       ');
}
