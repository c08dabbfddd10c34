/**
 * Test support: a real BerthServer on an ephemeral loopback port with generated clients.
 * Every test closes its clients and awaits shutdown through `close()`.
 */
import { credentials, Metadata, type CallOptions } from '@grpc/grpc-js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { WorkerServiceClient } from '../../generated/ts/berth/v1/worker.js';
import { resolveServeOptions } from '../../src/config/serve-options.js';
import type { HostInventory } from '../../src/resources/inventory.js';
import type { EventBus } from '../../src/events.js';
import type { ProvisioningLoop } from '../../src/provision/loop.js';
import { BerthServer, type KeepaliveOptions } from '../../src/server/server.js';

/** Engine inventory and serve flags for a test server. */
export interface TestServerOptions {
  cpus?: number;
  gpuIds?: number[];
  ramMb?: number;
  /** The engine host's named resources, in units of 1e-4 (`{ trainer: 10_000 }` is one trainer). */
  resources?: Record<string, number>;
  /** Builds the provisioning loop (SPEC P10) on the server's event bus; without it, the config file's provisioners. */
  provisioning?: (events: EventBus) => ProvisioningLoop;
  /**
   * Extra `berth serve` flags (as option keys, e.g. { token: 's3cret', grace: 1 }). Without `stateDir` the server
   * gets a temporary state directory (its journal), removed by `close()`.
   */
  flags?: Record<string, unknown>;
  /** Server keepalive (default DEFAULT_KEEPALIVE: 10 s ping, 5 s timeout). */
  keepalive?: KeepaliveOptions;
}

/** A running test server and clients bound to it. */
export interface TestServer {
  server: BerthServer;
  address: string;
  placement: PlacementServiceClient;
  worker: WorkerServiceClient;
  /** Books invariant violations seen after any event (SPEC P8); must stay empty. */
  invariantErrors: string[];
  /** Closes the clients and stops the server (grace 1 s unless given); throws if a books invariant broke. */
  close(graceMs?: number): Promise<void>;
}

/** Starts a server on 127.0.0.1:0 with the given engine inventory (default 4 cpus, no GPU). */
export async function startServer(o: TestServerOptions = {}): Promise<TestServer> {
  const temp = o.flags?.stateDir === undefined ? tempStateDir() : undefined;
  // no BERTH_* from the environment; XDG_STATE_HOME (the test file's temporary one) for what defaults to it
  const env = { XDG_STATE_HOME: process.env.XDG_STATE_HOME };
  // In-process test servers run engine-host calls in-process unless a test asks for the engine keeper (issue 19
  // item 5), which runs dist's `berth worker`; the keeper's own tests go through real `berth serve` processes.
  const options = resolveServeOptions(
    { listen: '127.0.0.1:0', grace: 1, stateDir: temp, engineKeeper: 'off', ...o.flags },
    env,
  );
  const engine: HostInventory = { cpus: o.cpus ?? 4, gpuIds: o.gpuIds ?? [], ramMb: o.ramMb, resources: o.resources };
  const server = new BerthServer(options, engine, { provisioning: o.provisioning, keepalive: o.keepalive });
  const removeTemp = () => temp && rmSync(temp, { recursive: true, force: true });
  await server.start().catch((err: unknown) => {
    removeTemp();
    throw err;
  });
  const address = server.address;
  const invariantErrors: string[] = [];
  server.context.events.subscribe((e) => {
    try {
      server.context.placer.checkInvariants();
    } catch (err) {
      invariantErrors.push(`after ${e.kind}: ${(err as Error).message}`);
    }
  });
  const placement = new PlacementServiceClient(address, credentials.createInsecure());
  const worker = new WorkerServiceClient(address, credentials.createInsecure());
  return {
    server,
    address,
    placement,
    worker,
    invariantErrors,
    async close(graceMs = 1000) {
      placement.close();
      worker.close();
      await server.stop(graceMs);
      removeTemp();
      if (invariantErrors.length) throw new Error(`books invariants broken (SPEC P8):\n${invariantErrors.join('\n')}`);
    },
  };
}

/** A fresh temporary state directory for a test server (the caller removes it). */
export function tempStateDir(): string {
  return mkdtempSync(join(tmpdir(), 'berth-state-'));
}

/** Call options with a deadline `ms` from now. */
export function deadline(ms: number): Partial<CallOptions> {
  return { deadline: Date.now() + ms };
}

/** Metadata carrying a bearer token. */
export function bearer(token: string): Metadata {
  const md = new Metadata();
  md.set('authorization', `Bearer ${token}`);
  return md;
}
