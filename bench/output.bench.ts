/**
 * Output at pipe speed (issue 11 item 2): a Python node printing 100,000 lines
 * (`for i in range(100000): print(i)`) through Run, read by a Node caller, on the engine host and
 * through a remote worker on loopback, against the same loop into a pipe. Targets: remote within 2×
 * of the engine host; engine host ≥ 100,000 lines/s end to end.
 */
import { spawnSync } from 'node:child_process';
import { credentials } from '@grpc/grpc-js';
import { PlacementServiceClient, type RunResponse } from '../generated/ts/berth/v1/placement.js';
import { Policy } from '../generated/ts/berth/v1/resources.js';
import { report, startBerth } from './support.js';

const LINES = 100_000;
const SOURCE = `def process():\n    for i in range(${LINES}):\n        print(i)\n    return 0\n`;

/** Ms for one Run of the printing node; checks every line arrived, in order. */
function printRun(client: PlacementServiceClient, label: string, node: string): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const call = client.run({
      placement: {
        $case: 'ask',
        value: {
          cpus: 1,
          gpus: 0,
          label,
          policy: label ? Policy.POLICY_REQUIRE : Policy.POLICY_UNSPECIFIED,
          node: '',
          runId: '',
          env: {},
          holdMs: 0,
          resources: {},
        },
      },
      payload: { $case: 'source', value: { source: SOURCE, kwargs: {} } },
      flow: 'bench',
      node,
      runId: 'out',
      timeoutMs: 0,
      disconnectGraceMs: 0,
      maxRetries: 0,
      retryOnFailure: false,
      follow: undefined,
    });
    let next = 0;
    const line = (l: { stream: string; line: string }) => {
      if (l.stream === 'stdout' && l.line === String(next)) next++;
    };
    call.on('data', (r: RunResponse) => {
      const k = r.kind;
      if (k?.$case !== 'event') return;
      const e = k.value.kind as { $case: string; value: unknown } | undefined;
      if (e?.$case === 'log') line(e.value as { stream: string; line: string });
      if (e?.$case === 'logs') {
        const batch = e.value as { stream: string; lines: string[] };
        for (const l of batch.lines) line({ stream: batch.stream, line: l });
      }
    });
    call.on('error', reject);
    call.on('status', (s) => {
      if (s.code !== 0) return;
      if (next === LINES) resolve(performance.now() - t0);
      else reject(new Error(`saw ${next} of ${LINES} lines in order`));
    });
  });
}

const t = performance.now();
spawnSync('sh', ['-c', `python3 -c 'for i in range(${LINES}): print(i)' | cat > /dev/null`]);
const pipeMs = performance.now() - t;
const berth = await startBerth(64, { cpus: 64 });
const client = new PlacementServiceClient(berth.address, credentials.createInsecure());
try {
  await printRun(client, '', 'warm-engine');
  await printRun(client, 'remote', 'warm-remote');
  const engine = await printRun(client, '', 'engine');
  const remote = await printRun(client, 'remote', 'remote');
  const lps = LINES / (engine / 1000);
  report('output', `a Python node printing ${LINES.toLocaleString('en')} lines, read by a Node caller through Run`, [
    { name: 'python loop into a pipe (| cat)', value: pipeMs, unit: 'ms', ratio: pipeMs / engine },
    { name: 'engine host', value: engine, unit: 'ms', ratio: 1 },
    {
      name: 'remote worker (loopback)',
      value: remote,
      unit: 'ms',
      ratio: remote / engine,
      target: '≤ 2× engine',
      met: remote <= 2 * engine,
    },
    {
      name: 'engine host, lines per second',
      value: lps,
      unit: 'lines/s',
      ratio: lps / 100_000,
      target: '≥ 100,000/s',
      met: lps >= 100_000,
    },
  ]);
} finally {
  client.close();
  await berth.stop();
}
