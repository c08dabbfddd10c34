/**
 * `berth status`: prints every machine with its books, the waiting claims and the calls in flight;
 * `--watch` redraws on each event until interrupted (exit 0) or the server goes away (exit 1,
 * saying so); `--json` prints the snapshot for scripts (one JSON line per snapshot with --watch).
 */
import { Command } from 'commander';
import { COMMANDS } from './commands.js';
import { PlacementServiceClient, type GetSnapshotResponse } from '../../generated/ts/berth/v1/placement.js';
import { authMetadata, channelCredentials, resolveClientOptions } from './client.js';
import { renderStatus } from './render-status.js';

function fetchSnapshot(client: PlacementServiceClient, token: string | undefined): Promise<GetSnapshotResponse> {
  return new Promise((resolve, reject) =>
    client.getSnapshot({}, authMetadata(token), { deadline: Date.now() + 10_000 }, (err, res) => (err ? reject(err) : resolve(res!))));
}

/** The `status` command. Exits 1 when the server cannot be reached, naming the address. */
export function statusCommand(): Command {
  return new Command('status')
    .description(COMMANDS.status.description)
    .option('--server <host:port>', 'berth to ask [env BERTH_SERVER] (default 127.0.0.1:50051)')
    .option('--token <token>', 'token [env BERTH_TOKEN]')
    .option('--watch', 'redraw on every event until interrupted')
    .option('--json', 'print the snapshot as JSON (for scripts)')
    .action(async (flags: { server?: string; token?: string; watch?: boolean; json?: boolean }) => {
      const opts = resolveClientOptions(flags);
      const client = new PlacementServiceClient(opts.server, channelCredentials());
      const draw = async () => {
        const s = await fetchSnapshot(client, opts.token);
        // --watch --json prints one snapshot per line (JSON lines) for scripts to follow.
        const text = flags.json ? JSON.stringify(s, null, flags.watch ? undefined : 2) : renderStatus(s);
        if (flags.watch && !flags.json && process.stdout.isTTY) process.stdout.write('\x1b[2J\x1b[H');
        process.stdout.write(`${text}\n${flags.watch && !flags.json ? '\n' : ''}`);
      };
      try {
        await draw();
      } catch (err) {
        client.close();
        const details = ((err as { details?: string }).details ?? String(err)).replace(/\s*Resolution note:\s*$/, '');
        throw new Error(`cannot get status from ${opts.server}: ${details}`);
      }
      if (!flags.watch) {
        client.close();
        return;
      }
      const stream = client.watchEvents({}, authMetadata(opts.token));
      let drawing = Promise.resolve();
      stream.on('data', () => (drawing = drawing.then(draw, draw).catch(() => {})));
      let interrupted = false;
      await new Promise<void>((resolve, reject) => {
        const gone = (why: string) => reject(new Error(`berth at ${opts.server} went away (${why}); the last status above is stale`));
        stream.on('error', (e: { code?: number; details?: string }) => (interrupted ? resolve() : gone(e.details ?? 'stream error')));
        stream.on('end', () => (interrupted ? resolve() : gone('server ended the stream')));
        const stop = () => {
          interrupted = true;
          stream.cancel();
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      }).finally(() => client.close());
    });
}
