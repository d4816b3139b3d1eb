import { openRuntime } from '../bootstrap.ts';
import { ConfigError, loadConfig } from '../config.ts';
import { AppError } from '../errors.ts';
import { createLogger, type Logger } from '../logger.ts';
import { parseCommandArguments } from './arguments.ts';
import { type Command, type CommandWork, UsageError } from './command.ts';
import { commands } from './commands/index.ts';
import { commandHelp, generalHelp, helpHint } from './help.ts';

/** Where the CLI reads its environment and writes its output; the process by default. */
export interface CliIo {
  environment: NodeJS.ProcessEnv;
  stdout(text: string): void;
  stderr(text: string): void;
}

export const exitCodes = { success: 0, failure: 1, usage: 2 } as const;

/** Runs one command line and returns the exit code; it never throws and never exits itself. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const [name, ...args] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    io.stdout(generalHelp(commands));
    return exitCodes.success;
  }
  if (name === undefined || name.startsWith('-')) {
    io.stderr(`error: ${name === undefined ? 'no command given' : `expected a command before ${name}`}\n\n${generalHelp(commands)}`);
    return exitCodes.usage;
  }
  const command = commands.find((candidate) => candidate.name === name);
  if (!command) {
    io.stderr(`error: unknown command "${name}"\n${helpHint()}\n`);
    return exitCodes.usage;
  }
  try {
    const values = parseCommandArguments(command, args);
    if (values.help) {
      io.stdout(commandHelp(command));
      return exitCodes.success;
    }
    return await execute(command, command.prepare(values), io);
  } catch (error) {
    return reportFailure(error, io);
  }
}

/**
 * Opens the same backends as the server, runs the command's work and always closes them again.
 * Logs default to warn so that migration chatter does not drown the result.
 */
async function execute(command: Command, work: CommandWork, io: CliIo): Promise<number> {
  const config = loadConfig({ ...io.environment, LOG_LEVEL: io.environment.LOG_LEVEL || 'warn' });
  const log = createLogger(config.LOG_LEVEL, (line) => io.stderr(`${line}\n`));
  try {
    const runtime = await openRuntime(config, log, command.runtimeOptions);
    try {
      const result = await work({ runtime, engine: runtime.engine, log, notice: (line) => io.stderr(`${line}\n`) });
      io.stdout(`${toJson(result)}\n`);
      return exitCodes.success;
    } finally {
      await runtime.close();
    }
  } catch (error) {
    logUnexpected(error, log);
    throw error;
  }
}

/** Maps a failure to its message and exit code. Stack traces are only logged, at debug level. */
function reportFailure(error: unknown, io: CliIo): number {
  if (error instanceof UsageError) {
    io.stderr(`error: ${error.message}\n${helpHint(error.commandName)}\n`);
    return exitCodes.usage;
  }
  if (error instanceof AppError) {
    const data = error.data ? `\n${toJson(error.data)}` : '';
    io.stderr(`error: ${error.message} (${error.errorName}, code ${error.code})${data}\n`);
    return exitCodes.failure;
  }
  if (error instanceof ConfigError) {
    io.stderr(`${error.message}\n`);
    return exitCodes.failure;
  }
  io.stderr(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  return exitCodes.failure;
}

function logUnexpected(error: unknown, log: Logger) {
  if (!(error instanceof AppError)) log.debug('command failed', { error });
}

/** Bigints (money in minor units) are printed as strings, because JSON numbers would be floats. */
function toJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item), 2);
}
