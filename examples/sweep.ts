/**
 * An engine in TypeScript: a small hyper-parameter sweep through berth's client. Each point of the grid
 * is one call of a Python node, placed by berth on whichever machine has room (a worker, or the engine
 * host), at most `--parallel` at once; metrics stream back while the calls run; Ctrl-C cancels the run.
 *
 * Usage: npx tsx examples/sweep.ts [host:port[,host:port...]] [--parallel N]
 * (start `berth serve` and a `berth worker` first). In an engine of your own, import from 'berth/client'.
 */
import { BerthClient, RemoteError } from '../src/client/index.js';

const args = process.argv.slice(2);
const flag = args.indexOf('--parallel');
const parallel = flag >= 0 ? Number(args[flag + 1]) : 2;
const address = args.find((a, i) => !a.startsWith('--') && i !== flag + 1) ?? '127.0.0.1:50051';

// The node: trains nothing, but reports a loss per step and returns the final one.
const source = `
def process(lr, depth):
    loss = 1.0
    for step in range(5):
        loss = loss * (1 - lr) + 0.01 * depth
        report("loss", loss)
    if lr >= 1:
        raise ValueError(f"lr {lr} diverges")
    return {"lr": lr, "depth": depth, "loss": round(loss, 4)}
`;

const grid = [0.1, 0.3, 1.0].flatMap((lr) => [1, 2].map((depth) => ({ lr, depth })));
const runId = `sweep-${process.pid}`;
const client = new BerthClient({ address });
const stop = new AbortController();
process.once('SIGINT', () => {
  stop.abort(new Error('interrupted'));
  void client.cancel(runId).catch(() => {});
});

type Point = { lr: number; depth: number; loss: number };
const results: Point[] = [];
const failures: string[] = [];
let next = 0;

/** Takes grid points one after another until none is left: `parallel` of these run side by side. */
async function lane(): Promise<void> {
  while (next < grid.length && !stop.signal.aborted) {
    const i = next++;
    const point = grid[i];
    let steps = 0;
    try {
      const value = (await client.run(
        { source, kwargs: point, flow: 'sweep', node: `p${i}`, runId, cpus: 1, timeoutMs: 60_000 },
        {
          signal: stop.signal,
          onEvent: (item) => {
            if (item.$case === 'started') console.log(`p${i} ${JSON.stringify(point)} on ${item.value.machine}`);
            if (item.$case === 'metric') steps++;
          },
        },
      )) as Point;
      console.log(`p${i} done after ${steps} metrics: loss ${value.loss}`);
      results.push(value);
    } catch (e) {
      if (!(e instanceof RemoteError)) throw e; // berth's own errors stop the sweep
      failures.push(`p${i} ${e.remoteType}: ${e.message}`);
      console.log(`p${i} failed: ${e.remoteType}: ${e.message}`);
    }
  }
}

try {
  await Promise.all(Array.from({ length: parallel }, lane));
  const best = results.sort((a, b) => a.loss - b.loss)[0];
  console.log(`sweep: ${results.length} points, ${failures.length} failed; best ${JSON.stringify(best)}`);
} finally {
  client.close();
}
