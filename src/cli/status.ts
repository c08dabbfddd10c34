/**
 * `berth status`: prints every machine with its books, the waiting claims and the calls in flight;
 * `--watch` redraws on each event and every second (so waited/held times move), under a clock
 * line, until interrupted (exit 0) or the server goes away (exit 1, saying so); `--json` prints
 * the snapshot for scripts (one JSON line per event with --watch, no clock). Speaks TLS and
 * mutual TLS like the worker (`--tls-ca`, `--tls-cert`, `--tls-key`). Several `--server` addresses (an HA cluster,
 * SPEC S7): the first that answers, or the leader a standby names, is asked (and watched).
 */
import { Command } from 'commander';
import { COMMANDS } from './commands.js';
import { PlacementServiceClient, type GetSnapshotResponse } from '../../generated/ts/berth/v1/placement.js';
import { onLeader } from '../ha/on-leader.js';
import { authMetadata, channelCredentials, resolveClientOptions, type ClientFlags } from './client.js';
import { renderStatus } from './render-status.js';

function fetchSnapshot(client: PlacementServiceClient, token: string | undefined): Promise<GetSnapshotResponse> {
  return new Promise((resolve, reject) =>
    client.getSnapshot({}, authMetadata(token), { deadline: Date.now() + 10_000 }, (err, res) =>
      err ? reject(err) : resolve(res!),
    ),
  );
}

/** The `status` command. Exits 1 when no server can be reached, naming the address(es). */
export function statusCommand(): Command {
  return new Command('status')
    .description(COMMANDS.status.description)
    .option(
      '--server <host:port,…>',
      'berth to ask; several: its HA cluster [env BERTH_SERVER] (default 127.0.0.1:50051)',
    )
    .option('--token <token>', 'token [env BERTH_TOKEN]')
    .option('--tls-ca <file>', 'use TLS, trusting this CA (PEM) for the server certificate [env BERTH_TLS_CA]')
    .option('--tls-cert <file>', 'client certificate (PEM) for mutual TLS [env BERTH_TLS_CERT]')
    .option('--tls-key <file>', 'private key for --tls-cert (PEM) [env BERTH_TLS_KEY]')
    .option('--watch', 'redraw on every event and every second until interrupted')
    .option('--json', 'print the snapshot as JSON (for scripts)')
    .action(async (flags: ClientFlags & { watch?: boolean; json?: boolean }) => {
      const opts = resolveClientOptions(flags);
      let client: PlacementServiceClient | undefined;
      let server = opts.server;
      const draw = async (first?: GetSnapshotResponse) => {
        const s = first ?? (await fetchSnapshot(client!, opts.token));
        // --watch --json prints one snapshot per line (JSON lines) for scripts to follow.
        const text = flags.json ? JSON.stringify(s, null, flags.watch ? undefined : 2) : renderStatus(s);
        if (flags.watch && !flags.json && process.stdout.isTTY) process.stdout.write('\x1b[2J\x1b[H');
        const clock = flags.watch && !flags.json ? `${clockLine(server)}\n\n` : '';
        process.stdout.write(`${clock}${text}\n${flags.watch && !flags.json ? '\n' : ''}`);
      };
      try {
        const found = await onLeader(opts.server, async (address) => {
          const c = new PlacementServiceClient(address, channelCredentials(opts));
          try {
            return { c, s: await fetchSnapshot(c, opts.token) };
          } catch (e) {
            c.close();
            throw e;
          }
        });
        ({
          address: server,
          result: { c: client },
        } = found);
        await draw(found.result.s);
      } catch (err) {
        const details = ((err as { details?: string }).details ?? String(err)).replace(/\s*Resolution note:\s*$/, '');
        throw new Error(`cannot get status from ${opts.server}: ${details}`);
      }
      if (!flags.watch) {
        client.close();
        return;
      }
      const stream = client.watchEvents({}, authMetadata(opts.token));
      let drawing = Promise.resolve();
      const redraw = () =>
        (drawing = drawing
          .then(
            () => draw(),
            () => draw(),
          )
          .catch(() => {}));
      stream.on('data', redraw);
      // Times (WAITED, HELD, ELAPSED) move every second even without events (JSON lines follow events only).
      const tick = flags.json ? undefined : setInterval(redraw, 1000);
      let interrupted = false;
      await new Promise<void>((resolve, reject) => {
        const gone = (why: string) =>
          reject(new Error(`berth at ${server} went away (${why}); the last status above is stale`));
        stream.on('error', (e: { code?: number; details?: string }) =>
          interrupted ? resolve() : gone(e.details ?? 'stream error'),
        );
        stream.on('end', () => (interrupted ? resolve() : gone('server ended the stream')));
        const stop = () => {
          interrupted = true;
          stream.cancel();
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      }).finally(() => {
        clearInterval(tick);
        client.close();
      });
    });
}

/** The --watch clock line, e.g. "berth at 127.0.0.1:50051 · 2026-12-01 05:10:12 UTC · every 1 s, Ctrl-C stops". */
export function clockLine(server: string, now = new Date()): string {
  return `berth at ${server} · ${now.toISOString().slice(0, 19).replace('T', ' ')} UTC · every 1 s, Ctrl-C stops`;
}
