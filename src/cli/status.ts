/**
 * `berth status`: prints every machine with its books, the waiting claims and the calls in flight;
 * `--watch` redraws on each event; `--json` prints the snapshot for scripts.
 */
import { Command } from 'commander';
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
    .description('show machines (books, free GPU ids), waiting claims with their reasons, calls in flight')
    .option('--server <host:port>', 'berth to ask [env BERTH_SERVER] (default 127.0.0.1:50051)')
    .option('--token <token>', 'token [env BERTH_TOKEN]')
    .option('--watch', 'redraw on every event until interrupted')
    .option('--json', 'print the snapshot as JSON (for scripts)')
    .action(async (flags: { server?: string; token?: string; watch?: boolean; json?: boolean }) => {
      const opts = resolveClientOptions(flags);
      const client = new PlacementServiceClient(opts.server, channelCredentials());
      const draw = async () => {
        const s = await fetchSnapshot(client, opts.token);
        const text = flags.json ? JSON.stringify(s, null, 2) : renderStatus(s);
        if (flags.watch && process.stdout.isTTY) process.stdout.write('\x1b[2J\x1b[H');
        process.stdout.write(`${text}\n${flags.watch && !flags.json ? '\n' : ''}`);
      };
      try {
        await draw();
      } catch (err) {
        client.close();
        throw new Error(`cannot get status from ${opts.server}: ${(err as { details?: string }).details ?? String(err)}`);
      }
      if (!flags.watch) {
        client.close();
        return;
      }
      const stream = client.watchEvents({}, authMetadata(opts.token));
      let drawing = Promise.resolve();
      stream.on('data', () => (drawing = drawing.then(draw, draw).catch(() => {})));
      await new Promise<void>((resolve, reject) => {
        stream.on('error', (e: { code?: number; details?: string }) => (e.code === 1 ? resolve() : reject(new Error(`watch ended: ${e.details ?? ''}`))));
        stream.on('end', resolve);
        const stop = () => stream.cancel();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      client.close();
    });
}
