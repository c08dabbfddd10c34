/**
 * `berth drain`: asks a running `berth serve` to drain (SPEC R3) and stop — no new claims, workers told, in-flight
 * work given the grace, then cancelled — and waits until the drain is over. A plain SIGTERM of `berth serve` stops
 * the control plane and leaves the work running instead (SPEC S5). Exit 0 once drained; 1 when the server cannot
 * be reached or refuses; 2 for bad flags. Several `--server` addresses (an HA cluster, SPEC S7): the leader is
 * drained, found in turn or through a standby's hint.
 */
import { Command } from 'commander';
import * as z from 'zod';
import { PlacementServiceClient, type DrainResponse } from '../../generated/ts/berth/v1/placement.js';
import { parseOptions, seconds } from '../config/fields.js';
import { onLeader } from '../ha/on-leader.js';
import { COMMANDS } from './commands.js';
import { authMetadata, channelCredentials, resolveClientOptions, type ClientFlags } from './client.js';

/** Longest --grace: a day (the Drain RPC's bound). */
const graceSchema = z.object({ grace: seconds.refine((s) => s <= 86_400, 'at most 86400 (a day)').optional() });

/** The `drain` command. */
export function drainCommand(): Command {
  return new Command('drain')
    .description(COMMANDS.drain.description)
    .option(
      '--server <host:port,…>',
      'berth to drain; several: its HA cluster [env BERTH_SERVER] (default 127.0.0.1:50051)',
    )
    .option('--token <token>', 'token [env BERTH_TOKEN]')
    .option('--tls-ca <file>', 'use TLS, trusting this CA (PEM) for the server certificate [env BERTH_TLS_CA]')
    .option('--tls-cert <file>', 'client certificate (PEM) for mutual TLS [env BERTH_TLS_CERT]')
    .option('--tls-key <file>', 'private key for --tls-cert (PEM) [env BERTH_TLS_KEY]')
    .option('--grace <s>', "seconds in-flight work gets before it is cancelled (default: the server's --grace)")
    .action(async (flags: ClientFlags & { grace?: string }) => {
      const opts = resolveClientOptions(flags);
      const { grace } = parseOptions(graceSchema, { grace: flags.grace }, { grace: '--grace' });
      process.stdout.write(`berth drain: draining ${opts.server}${grace === undefined ? '' : ` (grace ${grace} s)`}\n`);
      const drain = (address: string) => {
        const client = new PlacementServiceClient(address, channelCredentials(opts));
        return new Promise<DrainResponse>((resolve, reject) =>
          client.drain({ graceMs: Math.round((grace ?? 0) * 1000) }, authMetadata(opts.token), (err, r) =>
            err ? reject(err) : resolve(r!),
          ),
        ).finally(() => client.close());
      };
      try {
        const { address, result: res } = await onLeader(opts.server, drain);
        process.stdout.write(
          `berth drain: drained${address === opts.server ? '' : ` ${address}`}: ${res.finished} call(s) and ` +
            `claim(s) finished within the grace, ${res.cancelled} cancelled when it ended; the server is stopping\n`,
        );
      } catch (err) {
        const details = ((err as { details?: string }).details ?? String(err)).replace(/\s*Resolution note:\s*$/, '');
        throw new Error(`cannot drain ${opts.server}: ${details}`);
      }
    });
}
