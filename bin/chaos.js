#!/usr/bin/env node
// `make chaos`: a longer chaos run (test/chaos/chaos.ts) against the real server, real `berth worker`
// agents and client processes. SEED (default 1), DURATION in seconds (default 120), CONCURRENCY
// (default 6). ETCD=1: against a cluster instead (SPEC S7) — an etcd member of its own (test/support/etcd.ts, the
// `etcd` binary), MEMBERS servers (2 or 3, default 3) with the leader lease LEADER_TTL (seconds, default 3), the
// leader SIGKILLed and SIGTERMed. Prints the report and writes it as JSON to
// test-results/chaos/seed-<seed>-<time>.json; keeps the server processes' logs in
// test-results/chaos/seed-<seed>-<time>-logs/; exits 1 when anything leaked or an answer was unexpected.
import { register } from 'tsx/esm/api';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

register();
const { formatReport, runChaos } = await import('../test/chaos/chaos.ts');
const { etcdMissing, startEtcd } = await import('../test/support/etcd.ts');
const num = (name, dflt) => {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  if (!/^\d+$/.test(v)) {
    console.error(`chaos: ${name} must be a whole number (got ${JSON.stringify(v)})`);
    process.exit(2);
  }
  return Number(v);
};
const seed = num('SEED', 1);
const durationS = num('DURATION', 120);
const concurrency = num('CONCURRENCY', 6);
const clustered = num('ETCD', 0) > 0;
const members = num('MEMBERS', 3);
const leaderTtlS = num('LEADER_TTL', 3);
if (clustered && (members < 2 || members > 3)) {
  console.error(`chaos: MEMBERS must be 2 or 3 (got ${members})`);
  process.exit(2);
}
const missing = clustered ? etcdMissing() : undefined;
if (missing) {
  console.error(`chaos: ETCD=1 needs etcd: ${missing}`);
  process.exit(2);
}
const etcd = clustered ? await startEtcd() : undefined;
const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'test-results', 'chaos');
const name = `${clustered ? 'cluster-' : ''}seed-${seed}-${new Date().toISOString().replace(/[:.]/g, '-')}`;
const logDir = join(dir, `${name}-logs`);
const ha = etcd ? { etcd: etcd.endpoint, members, leaderTtlS } : {};
let report;
try {
  report = await runChaos({
    seed,
    durationMs: durationS * 1000,
    concurrency,
    log: (l) => console.log(l),
    logDir,
    ...ha,
  });
} finally {
  await etcd?.stop();
}
console.log(formatReport(report));
mkdirSync(dir, { recursive: true });
const file = join(dir, `${name}.json`);
writeFileSync(
  file,
  JSON.stringify(
    {
      command:
        `make chaos SEED=${seed} DURATION=${durationS} CONCURRENCY=${concurrency}` +
        (clustered ? ` ETCD=1 MEMBERS=${members} LEADER_TTL=${leaderTtlS}` : ''),
      loadavg: os.loadavg(),
      ...report,
    },
    null,
    2,
  ) + '\n',
);
console.log(`report: ${file}`);
process.exit(report.leaks === 0 && report.unexpected.length === 0 ? 0 : 1);
