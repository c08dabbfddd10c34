/**
 * `berth history`: finished calls and ended claims the server keeps (SPEC S9, the History RPC), newest first, as a
 * table or `--json`; filtered by `--run-id`, `--state`, `--machine`, `--kind` and `--since` (a duration back from
 * now: 90s, 15m, 1h, 7d), at most `--limit`. Dials like `berth status` (`--server`, `--token`, TLS).
 * Exits 2 for a bad flag (naming it), 1 when the server cannot be reached or refuses the filter.
 */
import { Command } from 'commander';
import type { HistoryRequest, HistoryResponse } from '../../generated/ts/berth/v1/history.js';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { durationSeconds, OptionsError } from '../config/fields.js';
import { authMetadata, channelCredentials, resolveClientOptions, type ClientFlags } from './client.js';
import { onLeader } from '../ha/on-leader.js';
import { COMMANDS } from './commands.js';
import { renderHistory } from './render-history.js';

/** The flags of `berth history` besides the dialling ones. */
interface HistoryFlags extends ClientFlags {
  runId?: string;
  state?: string;
  machine?: string;
  kind?: string;
  since?: string;
  limit?: string;
  json?: boolean;
}

/** The History request of `flags`. @throws OptionsError naming --since or --limit when malformed. */
export function historyRequest(flags: HistoryFlags, now = Date.now()): HistoryRequest {
  let sinceMs = 0;
  if (flags.since !== undefined) {
    const s = durationSeconds(flags.since);
    if (s === undefined) {
      throw new OptionsError(
        `--since: expected a duration back from now, e.g. 90s, 15m, 1h or 7d (got "${flags.since}")`,
      );
    }
    sinceMs = Math.max(0, Math.floor(now - s * 1000));
  }
  const limit = flags.limit === undefined ? 0 : Number(flags.limit);
  if (flags.limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 10_000)) {
    throw new OptionsError(`--limit: expected 1 to 10000 (got "${flags.limit}")`);
  }
  return {
    runId: flags.runId ?? '',
    state: flags.state ?? '',
    machine: flags.machine ?? '',
    kind: flags.kind ?? '',
    sinceMs,
    untilMs: 0,
    limit,
  };
}

/** The `history` command. */
export function historyCommand(): Command {
  return new Command('history')
    .description(COMMANDS.history.description)
    .option('--run-id <id>', 'only this run')
    .option('--state <state>', 'only succeeded, failed, cancelled, lost or released')
    .option('--machine <name>', 'only work on this machine')
    .option('--kind <call|claim>', 'only calls or only claims')
    .option('--since <duration>', 'only what ended within this long, e.g. 15m, 1h, 7d')
    .option('--limit <n>', 'most entries, newest first, 1 to 10000 (default 100)')
    .option('--json', 'print the answer as JSON (for scripts)')
    .option(
      '--server <host:port,…>',
      'berth to ask; several: its HA cluster [env BERTH_SERVER] (default 127.0.0.1:50051)',
    )
    .option('--token <token>', 'token [env BERTH_TOKEN]')
    .option('--tls-ca <file>', 'use TLS, trusting this CA (PEM) for the server certificate [env BERTH_TLS_CA]')
    .option('--tls-cert <file>', 'client certificate (PEM) for mutual TLS [env BERTH_TLS_CERT]')
    .option('--tls-key <file>', 'private key for --tls-cert (PEM) [env BERTH_TLS_KEY]')
    .action(async (flags: HistoryFlags) => {
      const opts = resolveClientOptions(flags);
      const req = historyRequest(flags);
      // several addresses (an HA cluster): the standby's leader hint is followed, as `berth status` does (SPEC S7)
      const ask = (address: string) => {
        const client = new PlacementServiceClient(address, channelCredentials(opts));
        return new Promise<HistoryResponse>((resolve, reject) =>
          client.history(req, authMetadata(opts.token), { deadline: Date.now() + 10_000 }, (err, res) =>
            err ? reject(err) : resolve(res!),
          ),
        ).finally(() => client.close());
      };
      try {
        const { result: h } = await onLeader(opts.server, ask);
        process.stdout.write(`${flags.json ? JSON.stringify(h, null, 2) : renderHistory(h)}\n`);
      } catch (err) {
        const details = ((err as { details?: string }).details ?? String(err)).replace(/\s*Resolution note:\s*$/, '');
        throw new Error(`cannot get history from ${opts.server}: ${details}`);
      }
    });
}
