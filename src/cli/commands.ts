/**
 * The `berth` subcommands by name: their one-line description (shown by `berth --help` without
 * loading them) and the module that builds the full command. `berth X` imports only X's module,
 * so `berth --help` and `berth dispatch` never load the server (issue 11).
 */
import type { Command } from 'commander';

/** One subcommand: description and a loader of its full Command. */
export interface CommandEntry {
  description: string;
  load: () => Promise<Command>;
}

/** Every subcommand, in the order `berth --help` lists them. */
export const COMMANDS: Record<string, CommandEntry> = {
  serve: {
    description: 'start the placement server (loopback by default)',
    load: async () => (await import('./serve.js')).serveCommand(),
  },
  worker: {
    description: 'attach this machine as a worker and run calls sent to it',
    load: async () => (await import('./worker.js')).workerCommand(),
  },
  dispatch: {
    description: 'run a batch of device-hungry jobs in parallel up to the devices that exist',
    load: async () => (await import('./dispatch.js')).dispatchCommand(),
  },
  drain: {
    description: 'drain a running server (no new claims, in-flight work gets the grace) and stop it',
    load: async () => (await import('./drain.js')).drainCommand(),
  },
  status: {
    description: 'show machines (books, free GPU ids), waiting claims with their reasons, calls in flight',
    load: async () => (await import('./status.js')).statusCommand(),
  },
  history: {
    description: 'list finished calls and ended claims (filters: run id, state, machine, since)',
    load: async () => (await import('./history.js')).historyCommand(),
  },
};
