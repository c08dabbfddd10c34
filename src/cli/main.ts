/**
 * The `berth` CLI: serve, worker, dispatch, status. Bad options exit 2 with a message naming
 * the flag and the value. Only the subcommand being run is imported (src/cli/commands.ts).
 */
import { Command, CommanderError } from 'commander';
import { flushLogs } from '../log/flush.js';
import { VERSION } from '../package-info.js';
import { COMMANDS } from './commands.js';

/** Exit code for bad usage or options. */
export const EXIT_USAGE = 2;

/** The subcommand `argv` (as process.argv) names, also through `berth help X`; undefined when none. */
function named(argv: readonly string[]): string | undefined {
  const words = argv.slice(2).filter((a) => !a.startsWith('-'));
  const name = words[0] === 'help' ? words[1] : words[0];
  return name !== undefined && Object.hasOwn(COMMANDS, name) ? name : undefined;
}

/**
 * Builds the program for `argv`: the named subcommand in full, the others as name and description
 * only (enough for `berth --help`); exported for tests.
 */
export async function buildProgram(argv: readonly string[]): Promise<Command> {
  const program = new Command('berth')
    .description('berth: placement service for job and dataflow engines — claims as leases on every machine attached')
    .version(VERSION)
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  const wanted = named(argv);
  for (const [name, entry] of Object.entries(COMMANDS)) {
    program.addCommand(name === wanted ? await entry.load() : new Command(name).description(entry.description));
  }
  for (const c of program.commands) c.exitOverride();
  return program;
}

/** True for the errors that mean bad usage (exit 2): options, ranges, the batch file. */
function isUsageError(err: unknown): boolean {
  return err instanceof Error && ['OptionsError', 'RangeSpecError', 'BatchError'].includes(err.name);
}

/** Runs the CLI with `argv` (as process.argv). */
export async function main(argv: string[]): Promise<void> {
  try {
    await (await buildProgram(argv)).parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exit(err.exitCode === 0 ? 0 : EXIT_USAGE);
    }
    flushLogs(); // the log lines that led here come before the message
    if (isUsageError(err)) {
      process.stderr.write(`berth: ${(err as Error).message}\n`);
      process.exit(EXIT_USAGE);
    }
    process.stderr.write(`berth: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}

await main(process.argv);
