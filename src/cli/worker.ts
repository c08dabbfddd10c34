/**
 * `berth worker`: attach this machine to a berth server and run the calls sent to it (SPEC W6).
 * Calls outlive a lost link for --disconnect-grace (SPEC S1). Stops on SIGINT/SIGTERM: tells the server
 * (Stopping), then running calls get SIGTERM, then SIGKILL after --grace.
 */
import { Command } from 'commander';
import { COMMANDS } from './commands.js';
import { AGENT_VERSION, WorkerAgent } from '../agent/agent.js';
import { KEEPER_BACKOFF } from '../agent/backoff.js';
import { resolveWorkerOptions } from '../config/worker-options.js';
import { OptionsError } from '../config/fields.js';
import { flushLogs } from '../log/flush.js';
import { createLogger } from '../log/logger.js';
import { routeGrpcLogs } from '../server/grpc-log.js';
import { formatRange } from '../resources/ranges.js';
import { detectInventory } from '../resources/inventory.js';

/** Registers the `worker` command. */
export function workerCommand(): Command {
  return new Command('worker')
    .description(COMMANDS.worker.description)
    .option(
      '--server <host:port,…>',
      'berth server to attach to; several comma-separated (or a DNS name with several records): the servers of ' +
        'an HA cluster [env BERTH_SERVER] (default 127.0.0.1:50051)',
    )
    .option(
      '--name <name>',
      'machine name; re-attaching under a name replaces it [env BERTH_WORKER_NAME] (default: host name)',
    )
    .option('--labels <a,b>', 'labels this machine carries, e.g. gpu,a100 [env BERTH_WORKER_LABELS]')
    .option('--cpus <n>', 'cores to offer, overriding detection [env BERTH_CPUS]')
    .option('--gpus <ids>', "GPU ids to offer as a range, e.g. 0-3 or '' for none [env BERTH_GPUS]")
    .option(
      '--gpu-type <type>',
      'the type of these GPUs, e.g. a100 or 1g.10gb; asks may require it [env BERTH_GPU_TYPE]',
    )
    .option(
      '--gpu-names <a,b>',
      'device names for CUDA_VISIBLE_DEVICES in GPU id order (UUIDs, MIG instances), passed to calls unchanged ' +
        '[env BERTH_GPU_NAMES]',
    )
    .option('--ram-mb <mb>', 'memory to offer in MB [env BERTH_RAM_MB]')
    .option('--resources <name=n,…>', 'named resources to offer, e.g. trainer=1,nic=2 [env BERTH_RESOURCES]')
    .option('--max-parallel <k>', 'most calls at once, 0 = unlimited [env BERTH_MAX_PARALLEL] (default 0)')
    .option(
      '--grace <s>',
      'seconds between SIGTERM and SIGKILL when a call is cancelled [env BERTH_GRACE] (default 10)',
    )
    .option(
      '--disconnect-grace <s>',
      'seconds calls keep running while the server is unreachable; then they are stopped ' +
        '[env BERTH_DISCONNECT_GRACE] (default 120)',
    )
    .option('--tls-ca <file>', 'use TLS, trusting this CA (PEM) for the server certificate [env BERTH_TLS_CA]')
    .option('--tls-cert <file>', 'client certificate (PEM) for mutual TLS [env BERTH_TLS_CERT]')
    .option('--tls-key <file>', 'private key for --tls-cert (PEM) [env BERTH_TLS_KEY]')
    .option(
      '--state-dir <dir>',
      'where this worker records the process groups it runs; on start it ends what a killed predecessor left ' +
        'there [env BERTH_STATE_DIR] (default ~/.local/state/berth/worker-<name>@<server>)',
    )
    .option(
      '--log-level <level>',
      'fatal|error|warn|info|debug|trace|silent, any case [env BERTH_LOG_LEVEL] (default info)',
    )
    .addHelpText(
      'after',
      '\nThe token, when the server requires one, is read from BERTH_TOKEN.\n\nExample:\n' +
        '  berth worker --server 10.0.0.5:50051 --name gpu1 --labels gpu --gpus 0-3 --max-parallel 4',
    )
    .action(async (flags: Record<string, unknown>) => {
      const o = resolveWorkerOptions(flags);
      // The engine keeper's secret (issue 19 item 5): from its server only, and never in the calls' environment.
      const keeperSecret = process.env.BERTH_KEEPER_SECRET || undefined;
      delete process.env.BERTH_KEEPER_SECRET;
      const log = createLogger(o.logLevel);
      routeGrpcLogs(log);
      const named = o.gpuNames;
      if (named && o.gpus && o.gpus.length !== named.length)
        throw new OptionsError(`--gpu-names: ${named.length} name(s) for ${o.gpus.length} GPU id(s) of --gpus`);
      const gpuIds = o.gpus ?? named?.map((_, i) => i);
      const inventory = await detectInventory({ cpus: o.cpus, gpuIds, ramMb: o.ramMb, resources: o.resources });
      if (o.gpuType) inventory.gpuType = o.gpuType;
      if (named) inventory.gpuNames = named;
      log.info(
        {
          name: o.name,
          server: o.server,
          labels: o.labels,
          cpus: inventory.cpus,
          gpus: formatRange(inventory.gpuIds),
          ramMb: inventory.ramMb,
          maxParallel: o.maxParallel,
          version: AGENT_VERSION,
        },
        'berth worker starting',
      );
      const agent = new WorkerAgent(
        {
          server: o.server,
          name: o.name,
          labels: o.labels,
          inventory,
          maxParallel: o.maxParallel,
          graceMs: o.grace * 1000,
          disconnectGraceMs: Math.round(o.disconnectGrace * 1000),
          token: o.token,
          tls: o.tlsCa ? { ca: o.tlsCa, cert: o.tlsCert, key: o.tlsKey } : undefined,
          stateDir: o.stateDir,
          keeperSecret,
          backoff: keeperSecret ? KEEPER_BACKOFF : undefined,
        },
        log,
      );
      agent.start();
      let signals = 0;
      const onSignal = (sig: NodeJS.Signals) => {
        if (++signals > 1) {
          agent.executors.killAll(); // running calls' process groups: SIGKILL now, before exiting
          process.exit(130);
        }
        log.info({ sig }, 'worker stopping');
        void agent.stop(sig).then(() => process.exit(0));
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      await agent.finished;
      if (agent.idle) {
        await agent.stop('idle');
        process.exit(0);
      }
      if (agent.fatal) {
        await agent.stop();
        flushLogs(); // the log lines that led here come before the reason
        process.stderr.write(`berth worker: ${agent.fatal}\n`);
        process.exit(1);
      }
    });
}
