// Bench comparator (plain Node, run as its own process): a seed-style dispatcher that checks its
// running jobs every 100 ms and starts queued ones (in order) on the devices that have come free.
// Prints `DONE <label>` as each job's end is noticed. Usage: node bench/polling-dispatch.mjs batch.json DEVICES
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

const jobs = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const free = Array.from({ length: Number(process.argv[3] ?? 2) }, (_, i) => i);
const running = [];
let next = 0;
const tick = () => {
  for (const r of running.filter((x) => x.code !== undefined)) {
    free.push(...r.ids);
    running.splice(running.indexOf(r), 1);
    process.stdout.write(`DONE ${r.label}\n`);
  }
  while (next < jobs.length && free.length >= jobs[next].devices) {
    const job = jobs[next++];
    const ids = free.splice(0, job.devices);
    const [file, ...args] = job.argv.map((a) => a.replaceAll('{devices}', ids.join(',')));
    const r = { label: job.label, ids, code: undefined };
    const c = spawn(file, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CUDA_VISIBLE_DEVICES: ids.join(',') },
    });
    c.stdout.resume();
    c.stderr.resume();
    c.on('close', (code) => (r.code = code));
    running.push(r);
  }
  if (next < jobs.length || running.length > 0) setTimeout(tick, 100);
};
tick();
