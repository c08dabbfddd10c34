/**
 * Names of provisioned workers (issue 12, SPEC V1, W1): a provisioner never starts a worker under
 * a name already attached, so it never takes over someone else's worker.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Policy } from '../../generated/ts/berth/v1/resources.js';
import { claim } from '../support/claims.js';
import { finished, spawnBerth } from '../support/cli.js';
import { configFile, tempDir, removeTempDirs } from '../support/provisioning.js';
import { startServer, type TestServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

afterAll(removeTempDirs);

const pool = `
provisioners:
  - name: local
    kind: local
    shapes: [{ cpus: 2, gpus: 0, labels: [pool] }]
    max_machines: 1
    idle_timeout: 60
    start_timeout: 60
`;

describe('local provisioner: worker names (issue 12)', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("a worker attached by hand as local-1 keeps its name: the provisioner's worker is local-2", async () => {
    t = await startServer({ cpus: 1, flags: { config: configFile(tempDir(), pool), stateDir: tempDir() } });
    const mine = spawnBerth(['worker', '--server', t.address, '--name', 'local-1', '--labels', 'mine', '--cpus', '1'], {
      BERTH_STATE_DIR: tempDir(),
    });
    const exited = finished(mine);
    try {
      await until(async () => (await snapshot(t!.placement)).machines.some((m) => m.name === 'local-1'));
      const c = claim(t.placement, { cpus: 2, label: 'pool', policy: Policy.POLICY_REQUIRE, node: 'big' });
      const g = await c.granted;
      expect(g.machine).toBe('local-2');
      const machines = (await snapshot(t.placement)).machines;
      expect(machines.find((m) => m.name === 'local-1')?.labels).toEqual(['mine']); // still the hand-attached one
      expect(mine.exitCode).toBeNull();
      await c.release();
    } finally {
      mine.kill('SIGTERM');
      await exited;
    }
  }, 60_000);
});
