/**
 * A waiting group is demand for provisioners (rule G5, issue 21): a ClaimGroup whose members need a label only a
 * provisioner shape carries waits (it is not refused), the local provisioner starts a `berth worker` process for
 * it, and the whole group is granted on the started machine.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Policy } from '../../generated/ts/berth/v1/resources.js';
import { claimGroup } from '../support/groups.js';
import { configFile, removeTempDirs, tempDir } from '../support/provisioning.js';
import { startServer, type TestServer } from '../support/server.js';

afterAll(removeTempDirs);

const POOL = `
provisioners:
  - name: local
    kind: local
    shapes: [{ cpus: 2, gpus: 0, labels: [pool] }]
    max_machines: 1
    idle_timeout: 1
    start_timeout: 60
`;

describe('a group only a provisioner shape can hold', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('waits, starts a worker process, and is granted whole on it', async () => {
    t = await startServer({ cpus: 1, flags: { config: configFile(tempDir(), POOL) } });
    const member = { cpus: 1, label: 'pool', policy: Policy.POLICY_REQUIRE };
    const g = claimGroup(t.placement, [member, member]);
    await g.queued;
    const granted = await g.granted;
    expect(granted.members.map((m) => m.machine)).toEqual(['local-1', 'local-1']);
    g.call.end();
  }, 30_000);
});
