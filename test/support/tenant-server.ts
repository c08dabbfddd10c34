/**
 * Test support: a real server with two tenants' client tokens (`alice`, `bob`, SPEC R7) and a config file in a
 * fresh temporary directory, with a generated PlacementService client per tenant. `close()` ends the clients and
 * the server and removes the directory.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { startServer, type TestServer } from './server.js';
import { clientWithToken } from './token-client.js';

/** The tenants' tokens, and the shared token (metrics, the page). */
export const TOKENS = { alice: 'alice-token-0123456789abcdef', bob: 'bob-token-0123456789abcdef01' };
export const SHARED = 'shared-token-0123456789';

/** A server of two tenants and what a test reaches it with. */
export interface TenantServer {
  t: TestServer;
  /** The temporary directory holding `clients.yaml` and `berth.yaml`. */
  dir: string;
  alice: PlacementServiceClient;
  bob: PlacementServiceClient;
  /** The /metrics URL (read with `authorization: Bearer <SHARED>`). */
  metricsUrl: string;
  /** Replaces the config file (then `t.server.reloadPriorityClasses()` re-reads it, as SIGHUP does). */
  writeConfig(text: string): void;
  close(): Promise<void>;
}

/** Starts a server with `gpus` GPUs (`cpus` cores, default 32), `config` as its config file and extra `flags`. */
export async function tenantServer(
  config: string,
  o: { gpus: number; cpus?: number; flags?: Record<string, unknown> },
): Promise<TenantServer> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-tenants-'));
  writeFileSync(join(dir, 'clients.yaml'), `alice: ${TOKENS.alice}\nbob: ${TOKENS.bob}\n`);
  const writeConfig = (text: string) => writeFileSync(join(dir, 'berth.yaml'), text);
  writeConfig(config);
  let t: TestServer;
  try {
    t = await startServer({
      cpus: o.cpus ?? 32,
      gpuIds: [...Array(o.gpus).keys()],
      flags: {
        clientTokens: join(dir, 'clients.yaml'),
        token: SHARED,
        config: join(dir, 'berth.yaml'),
        metricsListen: '127.0.0.1:0',
        ...o.flags,
      },
    });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const alice = clientWithToken(t.address, TOKENS.alice);
  const bob = clientWithToken(t.address, TOKENS.bob);
  return {
    t,
    dir,
    alice,
    bob,
    metricsUrl: `${t.server.observe!.url}/metrics`,
    writeConfig,
    async close() {
      alice.close();
      bob.close();
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
