/**
 * The `berth` CLI: serve, worker, dispatch, status. Bad options exit 2 with a message naming
 * the flag and the value.
 */
import { Command, CommanderError } from 'commander';
import { OptionsError } from '../config/fields.js';
import { BatchError } from '../dispatch/batch.js';
import { RangeSpecError } from '../resources/ranges.js';
import { dispatchCommand } from './dispatch.js';
import { serveCommand } from './serve.js';
import { statusCommand } from './status.js';
import { workerCommand } from './worker.js';

/** Exit code for bad usage or options. */
export const EXIT_USAGE = 2;

/** Builds the program; exported for tests. */
export function buildProgram(): Command {
  const program = new Command('berth')
    .description('berth: placement service for job and dataflow engines — claims as leases on every machine attached')
    .version('0.1.0')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  program.addCommand(serveCommand());
  program.addCommand(workerCommand());
  program.addCommand(dispatchCommand());
  program.addCommand(statusCommand());
  for (const c of program.commands) c.exitOverride();
  return program;
}

/** Runs the CLI with `argv` (as process.argv). */
export async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exit(err.exitCode === 0 ? 0 : EXIT_USAGE);
    }
    if (err instanceof OptionsError || err instanceof RangeSpecError || err instanceof BatchError) {
      process.stderr.write(`berth: ${err.message}\n`);
      process.exit(EXIT_USAGE);
    }
    process.stderr.write(`berth: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}

await main(process.argv);
