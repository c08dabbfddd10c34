/**
 * From the config file's `provisioners:` (SPEC V1) to a running provisioning loop: one pool per
 * entry, its backend (slurm or local) starting workers that dial `target.server`, its ledger at
 * `<stateDir>/<name>.machines.json`.
 */
import { join } from 'node:path';
import type { ProvisionerConfig } from '../config/provisioner-options.js';
import type { EventBus } from '../events.js';
import type { Logger } from '../log/logger.js';
import type { Shape } from '../placement/provisioner.js';
import type { Backend } from './backend.js';
import { LocalBackend } from './local.js';
import { ProvisioningLoop, type LoopTiming } from './loop.js';
import { Pool } from './pool.js';
import { SlurmBackend } from './slurm.js';
import type { WorkerTarget } from './worker-command.js';

/** Builds the loop for `configs` (not started: call `start()` once the server's address is known). */
export function buildProvisioning(
  configs: ProvisionerConfig[],
  stateDir: string,
  target: () => WorkerTarget,
  deps: { events: EventBus; log: Logger; timing?: LoopTiming },
): ProvisioningLoop {
  let loop: ProvisioningLoop | undefined;
  const pools = configs.map((c) => {
    const shapes: Shape[] | undefined = c.shapes?.map((s) => ({
      cpus: s.cpus,
      gpus: s.gpus,
      ramMb: s.ram_mb,
      labels: s.labels,
      ...(s.resources && Object.keys(s.resources).length ? { resources: s.resources } : {}),
      ...(s.gpu_type === undefined ? {} : { gpuType: s.gpu_type }),
    }));
    const t = lazyTarget(target);
    const backend: Backend =
      c.kind === 'slurm'
        ? new SlurmBackend({ name: c.name, partition: c.partition, shapes, sbatchArgs: c.sbatch_args }, t)
        : new LocalBackend(c.name, shapes ?? [], t);
    return new Pool(
      {
        name: c.name,
        maxMachines: c.max_machines,
        idleTimeoutMs: c.idle_timeout * 1000,
        startTimeoutMs: c.start_timeout * 1000,
        ledger: join(stateDir, `${c.name}.machines.json`),
      },
      backend,
      { events: deps.events, log: deps.log, changed: () => loop?.replan() },
    );
  });
  loop = new ProvisioningLoop(pools, deps.log, deps.timing, { dir: stateDir, serving: () => target().server });
  return loop;
}

/** A WorkerTarget read when first used (the advertised address is known only once the server is bound). */
function lazyTarget(get: () => WorkerTarget): WorkerTarget {
  return {
    get server() {
      return get().server;
    },
    get token() {
      return get().token;
    },
    get stateDir() {
      return get().stateDir;
    },
  };
}
