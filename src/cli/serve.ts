/**
 * `berth serve`: detect the engine host, start the server (and its provisioners, from --config). SIGINT/SIGTERM
 * stop the control plane and leave the work running (SPEC S5), or drain first with `--on-stop drain` (SPEC R3:
 * then started workers and Slurm jobs are stopped before it exits); a Drain RPC (`berth drain`) drains and exits.
 * With `--store etcd://…` (SPEC S7) a signal on the leader hands over at once; a deposed server exits with status 3.
 */
import { Command } from 'commander';
import { COMMANDS } from './commands.js';
import { resolveServeOptions } from '../config/serve-options.js';
import { createLogger } from '../log/logger.js';
import { formatRange } from '../resources/ranges.js';
import { detectInventory } from '../resources/inventory.js';
import { OptionsError } from '../config/options-error.js';
import { routeGrpcLogs } from '../server/grpc-log.js';
import { BerthServer } from '../server/server.js';

/** Registers the `serve` command on `program`. */
export function serveCommand(): Command {
  return new Command('serve')
    .description(COMMANDS.serve.description)
    .option('--listen <host:port>', 'address to listen on [env BERTH_LISTEN] (default 127.0.0.1:50051)')
    .option('--cpus <n>', 'engine host cores, overriding detection [env BERTH_CPUS]')
    .option('--gpus <ids>', "engine host GPU ids as a range, e.g. 0-3 or '' for none [env BERTH_GPUS]")
    .option('--ram-mb <mb>', 'engine host memory in MB [env BERTH_RAM_MB]')
    .option('--resources <name=n,…>', 'named resources of the engine host, e.g. trainer=1 [env BERTH_RESOURCES]')
    .option(
      '--gpu-type <type>',
      'the type of the engine host GPUs, e.g. a100, for asks naming gpu_type [env BERTH_GPU_TYPE]',
    )
    .option('--pools <name=n,…>', 'cluster-wide pools taken with a machine, e.g. license/matlab=30 [env BERTH_POOLS]')
    .option(
      '--default-ram-mb-per-cpu <mb>',
      'memory in MB an ask without ram_mb gets per core it asks, 0 for none [env BERTH_DEFAULT_RAM_MB_PER_CPU] ' +
        '(default 0)',
    )
    .option('--engine-name <name>', 'machine name of the engine host [env BERTH_ENGINE_NAME] (default engine)')
    .option('--engine-labels <a,b>', 'labels of the engine host [env BERTH_ENGINE_LABELS]')
    .option('--grace <s>', 'seconds in-flight work gets on shutdown [env BERTH_GRACE] (default 10)')
    .option(
      '--reconnect-grace <s>',
      'seconds a detached worker label (and, after the server starts, ' +
        'any required label) still counts as coming back [env BERTH_RECONNECT_GRACE] (default 30)',
    )
    .option(
      '--restart-hold <s>',
      'after a restart, seconds a worker the journal knows is held for its agent to come back; asks wait for it ' +
        '[env BERTH_RESTART_HOLD] (default 60)',
    )
    .option(
      '--claim-hold <s>',
      'after a restart, seconds a journaled claim awaits its holder before it is released ' +
        '[env BERTH_CLAIM_HOLD] (default 30)',
    )
    .option(
      '--preemption-grace <s>',
      'seconds the holder of a claim preempted by a higher-priority class has to give it back before berth ' +
        'releases it and stops its runs [env BERTH_PREEMPTION_GRACE] (default 30)',
    )
    .option(
      '--preemption-min-runtime <s>',
      'seconds a claim is held before a higher-priority class may preempt it; a preemptor waits and looks again ' +
        'each second [env BERTH_PREEMPTION_MIN_RUNTIME] (default 0)',
    )
    .option(
      '--preemption-limit <n>',
      "the same work (a client's node of one run) is preempted at most n times per --preemption-window; past " +
        'that its claims are not victims [env BERTH_PREEMPTION_LIMIT] (default 3)',
    )
    .option(
      '--preemption-window <s>',
      'the window of --preemption-limit, in seconds [env BERTH_PREEMPTION_WINDOW] (default 600)',
    )
    .option(
      '--journal <on|off>',
      'keep what survives a restart under --state-dir; off: nothing survives (and every start gives required ' +
        'labels the reconnect grace) [env BERTH_JOURNAL] (default on)',
    )
    .option(
      '--engine-keeper <on|off>',
      "run the engine host's commands in a local keeper process that outlives the server and is re-adopted " +
        'after a restart; off: as children of the server [env BERTH_ENGINE_KEEPER] (default on)',
    )
    .option(
      '--history-retention <duration>',
      'how long finished calls and ended claims stay in `berth history`, e.g. 90m, 24h, 7d; journaled, so they ' +
        'survive a restart (with --journal off: in memory, for the life of the process) ' +
        '[env BERTH_HISTORY_RETENTION] (default 24h)',
    )
    .option(
      '--history-max <n>',
      'most finished calls and ended claims the history keeps; the oldest go first [env BERTH_HISTORY_MAX] ' +
        '(default 100000)',
    )
    .option(
      '--worker-hold <s>',
      'seconds a worker whose link broke is held with its calls, for calls that asked no disconnect_grace_ms; ' +
        '0 to 3600 [env BERTH_WORKER_HOLD] (default 2)',
    )
    .option('--token <token>', 'require this token of clients and workers [env BERTH_TOKEN]')
    .option('--tls-cert <file>', 'serve TLS with this certificate chain (PEM) [env BERTH_TLS_CERT]')
    .option('--tls-key <file>', 'private key for --tls-cert (PEM) [env BERTH_TLS_KEY]')
    .option('--tls-ca <file>', 'require client certificates signed by this CA (mutual TLS) [env BERTH_TLS_CA]')
    .option(
      '--worker-tokens <file>',
      "YAML map of worker name: token; a worker must attach under its token's name; " +
        're-read on SIGHUP [env BERTH_WORKER_TOKENS]',
    )
    .option(
      '--client-tokens <file>',
      'YAML map of client name: token; clients act only on their own claims and runs; ' +
        're-read on SIGHUP [env BERTH_CLIENT_TOKENS]',
    )
    .option(
      '--metrics-listen <host:port>',
      'serve Prometheus /metrics and the live status page / on this HTTP address, ' +
        'e.g. 127.0.0.1:9464 [env BERTH_METRICS_LISTEN] (default off)',
    )
    .option(
      '--log-level <level>',
      'fatal|error|warn|info|debug|trace|silent, any case [env BERTH_LOG_LEVEL] (default info)',
    )
    .option(
      '--config <file>',
      'YAML file with serve options (snake_case), provisioners, priority_classes and tenants (re-read on SIGHUP); ' +
        'flags and env override it [env BERTH_CONFIG]',
    )
    .option(
      '--state-dir <dir>',
      'the journal (what survives a restart) and where started workers log; one server per directory ' +
        '[env BERTH_STATE_DIR] (default $XDG_STATE_HOME/berth or ~/.local/state/berth)',
    )
    .option(
      '--advertise <host:port>',
      'address started workers dial, and the leader address standbys give clients [env BERTH_ADVERTISE] ' +
        '(default the listen address)',
    )
    .option(
      '--store <url>',
      'where the journal lives: embedded (under --state-dir) or etcd://host:port[,host:port…], shared by the ' +
        'servers of a cluster, one leading and the others standing by [env BERTH_STORE] (default embedded)',
    )
    .option(
      '--cluster <name>',
      'with --store etcd://…: the cluster this server belongs to (etcd keys under /berth/<name>) ' +
        '[env BERTH_CLUSTER] (default default)',
    )
    .option(
      '--leader-ttl <s>',
      "with --store etcd://…: the leader's lease in whole seconds, 2 to 600; a dead leader is replaced within " +
        'about this [env BERTH_LEADER_TTL] (default 5)',
    )
    .option('--etcd-ca <file>', 'verify etcd with this CA (PEM); dials etcd over TLS [env BERTH_ETCD_CA]')
    .option('--etcd-cert <file>', 'client certificate (PEM) for etcd [env BERTH_ETCD_CERT]')
    .option('--etcd-key <file>', 'private key (PEM) for --etcd-cert [env BERTH_ETCD_KEY]')
    .option('--etcd-user <name>', 'etcd user (with --etcd-password-file) [env BERTH_ETCD_USER]')
    .option(
      '--etcd-password-file <file>',
      "file holding --etcd-user's password (one line) [env BERTH_ETCD_PASSWORD_FILE]",
    )
    .option(
      '--on-stop <stop|drain>',
      'what SIGTERM/SIGINT do: stop the control plane and leave the work running, or drain it first ' +
        '[env BERTH_ON_STOP] (default stop)',
    )
    .action(async (flags: Record<string, unknown>) => {
      const options = resolveServeOptions(flags);
      const log = createLogger(options.logLevel);
      routeGrpcLogs(log);
      const engine = await detectInventory({
        cpus: options.cpus,
        gpuIds: options.gpus,
        ramMb: options.ramMb,
        resources: options.resources,
      });
      if (options.gpuType) {
        if (!engine.gpuIds.length)
          throw new OptionsError(`--gpu-type ${options.gpuType}: the engine host has no GPUs (give --gpus, e.g. 0-3)`);
        engine.gpuType = options.gpuType;
      }
      log.info(
        { machine: options.engineName, cpus: engine.cpus, gpus: formatRange(engine.gpuIds), ramMb: engine.ramMb },
        'engine inventory',
      );
      // A deposed leader (SPEC S7) has stopped acting: it exits non-zero for its supervisor to start a new candidate.
      const onDeposed = () => process.exit(server.exitCode);
      const server = new BerthServer(options, engine, { log, onDeposed });
      let signals = 0;
      const onSignal = (sig: NodeJS.Signals) => {
        signals++;
        if (signals > 1) {
          log.warn({ sig }, 'second signal: killing engine-host processes and started machines, exiting now');
          server.killNow();
          process.exit(130);
        }
        log.info({ sig, onStop: options.onStop }, 'shutting down');
        void (options.onStop === 'drain' ? server.stop() : server.halt()).then(() => process.exit(server.exitCode));
      };
      // A Drain RPC (`berth drain`) stops the server too: exit once it has.
      server.lifecycle.onChange((state) => {
        if (state === 'stopped') setImmediate(() => process.exit(server.exitCode));
      });
      // Handlers go in before binding, so a signal right after "berth serving" still drains.
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      process.on('SIGHUP', () => {
        try {
          server.reloadIdentities();
        } catch (err) {
          log.error({ reason: (err as Error).message }, 'token files not re-read; the old tokens stay');
        }
        try {
          server.reloadPriorityClasses();
        } catch (err) {
          log.error(
            { reason: (err as Error).message },
            'config not re-read; the old priority classes and tenant quotas stay',
          );
        }
      });
      await server.start();
    });
}
