/**
 * Measures the provisioning path through a real Slurm cluster (scripts/slurm-up.sh): for N rounds,
 * a 2-cpu `hpc` claim on a 1-cpu engine → sbatch → worker attaches → granted (grant latency), then
 * release → idle_timeout → scancel → the job leaves squeue (give-back time). Prints JSON.
 * Usage: node --import tsx scripts/provision-times.ts [rounds=3] [idle_timeout_s=2]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { PlacementServiceClient, type ClaimResponse } from '../generated/ts/berth/v1/placement.js';
import { Policy } from '../generated/ts/berth/v1/resources.js';
import { resolveServeOptions } from '../src/config/serve-options.js';
import { BerthServer } from '../src/server/server.js';

const rounds = Number(process.argv[2] ?? 3);
const idle = Number(process.argv[3] ?? 2);
const dir = mkdtempSync(join(tmpdir(), 'berth-times-'));
const config = join(dir, 'berth.yaml');
writeFileSync(
  config,
  `provisioners:
  - { name: hpct, kind: slurm, shapes: [{ cpus: 2, gpus: 0, ram_mb: 500, labels: [hpc] }], max_machines: 1, \
idle_timeout: ${idle} }
`,
);
const server = new BerthServer(resolveServeOptions({ listen: '127.0.0.1:0', grace: 1, config, stateDir: dir }, {}), {
  cpus: 1,
  gpuIds: [],
});
await server.start();
const client = new PlacementServiceClient(server.address, credentials.createInsecure());
const inQueue = (id: string) =>
  execFileSync('squeue', ['-h', '--name=berth-hpct', '-o', '%i'], { encoding: 'utf8' }).split('\n').includes(id);

const results: { grantMs: number; givebackMs: number; job: string }[] = [];
for (let i = 0; i < rounds; i++) {
  const t0 = performance.now();
  const call = client.claim();
  const machine = await new Promise<string>((resolve, reject) => {
    call.on('data', (r: ClaimResponse) => r.kind?.$case === 'granted' && resolve(r.kind.value.machine));
    call.on('error', reject);
    call.write({
      kind: {
        $case: 'ask',
        value: { cpus: 2, gpus: 0, label: 'hpc', policy: Policy.POLICY_REQUIRE, node: `n${i}`, runId: '', env: {} },
      },
    });
  });
  const grantMs = performance.now() - t0;
  const job = machine.replace('hpct-', '');
  const t1 = performance.now();
  call.write({ kind: { $case: 'release', value: {} } });
  call.end();
  while (inQueue(job)) await new Promise((r) => setTimeout(r, 100));
  results.push({ grantMs: Math.round(grantMs), givebackMs: Math.round(performance.now() - t1), job });
}
client.close();
await server.stop();
console.log(JSON.stringify({ idleTimeoutS: idle, rounds: results }, null, 1));
