/**
 * berth as users install it (issue 24 item 3): the tarball `npm pack` makes, installed with
 * `npm install -g --prefix <empty dir>` (runtime dependencies only, from the npm cache when it has
 * them), runs `berth serve`, `berth worker`, `berth status` and `berth dispatch` from a directory
 * outside the repository, with HOME and XDG_STATE_HOME in a temporary directory, and an engine
 * with the package in its node_modules claims and runs through the packaged TypeScript client
 * (`berth`, `berth/client`): the descriptors (server reflection), the Python harness (the Run on
 * the worker) and the status page come from the package itself. The client's type declarations
 * (tsc, in prepack) are checked by scripts/check-deploy.sh, which packs with prepack. Packed with --ignore-scripts: globalSetup has just built dist/, and prepack's
 * rebuild would rewrite files other test forks are running.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finished, ROOT, waitForLine } from '../support/cli.js';

const exec = promisify(execFile);
const tmp = mkdtempSync(join(os.tmpdir(), 'berth-package-'));
const prefix = join(tmp, 'prefix');
const home = join(tmp, 'home');
const cwd = join(tmp, 'elsewhere');
const berth = join(prefix, 'bin', 'berth');
const installed = join(prefix, 'lib', 'node_modules', 'berth');
const app = join(tmp, 'app');
/** An engine using the packaged client (`berth` and `berth/client`): claims a core, runs Python in the lease. */
const ENGINE = `
import { BerthClient } from 'berth';
import * as viaClient from 'berth/client';
const client = new BerthClient({ address: process.argv[2] });
const lease = await client.claim({ cpus: 1, node: 'pkg.twice' });
const source = 'import sys\\ndef process(x):\\n    return {"twice": 2 * x, "python": sys.version_info[0]}\\n';
const value = await client.run({ source, kwargs: { x: 21 }, claim: lease, runId: 'pkg', flow: 'pkg', node: 'twice' });
await lease.release();
client.close();
const same = viaClient.BerthClient === BerthClient;
console.log(JSON.stringify({ machine: lease.machine, remote: lease.remote, same, value }));
`;
const children: ChildProcess[] = [];
let packed: string[] = [];

/** What the installed CLI sees: no BERTH_* settings, node and the system's tools on PATH, a temporary home. */
function env(): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('BERTH_')));
  return {
    ...clean,
    PATH: [join(prefix, 'bin'), dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(':'),
    HOME: home,
    XDG_STATE_HOME: join(tmp, 'state'),
  };
}

/** Starts the installed `berth ...args` in `cwd`; ended in afterAll if the test does not. */
function start(args: string[]): ChildProcess {
  const child = spawn(berth, args, { cwd, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return child;
}

beforeAll(async () => {
  mkdirSync(home);
  mkdirSync(cwd);
  const pack = await exec('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', tmp], { cwd: ROOT });
  const [info] = JSON.parse(pack.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  packed = info.files.map((f) => f.path);
  mkdirSync(join(app, 'node_modules'), { recursive: true });
  symlinkSync(installed, join(app, 'node_modules', 'berth'));
  writeFileSync(join(app, 'engine.mjs'), ENGINE);
  await exec(
    'npm',
    ['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', join(tmp, info.filename)],
    { cwd: tmp, timeout: 180_000 },
  );
}, 200_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all(children.map((c) => (c.exitCode === null && c.signalCode === null ? finished(c) : null)));
  rmSync(tmp, { recursive: true, force: true });
});

describe('the package installed from its tarball into an empty prefix', () => {
  it('carries the built CLI, the descriptors, the harness and the protos, and no sources or build tools', () => {
    for (const f of ['bin/berth.js', 'dist/main.js', 'dist/client.js', 'dist/chunks/harness.py'])
      expect(packed).toContain(f);
    expect(packed).toContain('generated/descriptors/berth.binpb');
    expect(packed).toContain('proto/berth/v1/placement.proto');
    expect(packed.filter((f) => /^(src|test|bench|examples|clients)\/|(?<!\.d)\.ts$|\.map$/.test(f))).toEqual([]);
    const deps = readdirSync(join(installed, 'node_modules'));
    for (const tool of ['tsx', 'esbuild', 'typescript', 'vitest', 'zod', 'commander', 'yaml']) {
      expect(deps).not.toContain(tool);
    }
    expect(existsSync(join(installed, 'node_modules', '@grpc', 'grpc-js'))).toBe(true);
  });

  it('serves, attaches a worker, shows it in berth status and the page; its client claims the worker and runs Python', async () => {
    const server = start([
      'serve',
      '--listen',
      '127.0.0.1:0',
      '--cpus',
      '0',
      '--gpus',
      '',
      '--grace',
      '1',
      '--metrics-listen',
      '127.0.0.1:0',
    ]);
    const pageLine = waitForLine(server, /"status page and metrics"/);
    const { address } = JSON.parse(await waitForLine(server, /"berth serving"/)) as { address: string };
    const { url } = JSON.parse(await pageLine) as { url: string };
    const worker = start(['worker', '--server', address, '--name', 'pkg-w', '--cpus', '1', '--gpus', '']);
    await waitForLine(worker, /attached to server/);

    const status = await exec(berth, ['status', '--server', address], { cwd, env: env() });
    expect(status.stdout).toMatch(/^\s*pkg-w\b/m);
    const html = await fetch(url);
    expect(html.status).toBe(200);
    expect(await html.text()).toContain('<html');

    // an engine of its own (a directory with the package in node_modules) claims through the packaged client
    const value = JSON.parse(
      (await exec(process.execPath, [join(app, 'engine.mjs'), address], { cwd: app, env: env() })).stdout,
    );
    expect(value).toEqual({ machine: 'pkg-w', remote: true, same: true, value: { twice: 42, python: 3 } });
    // the worker kept its records, and the server its journal, lock and engine keeper's secret, under XDG_STATE_HOME (the temporary one),
    // not in the real home
    expect(readdirSync(join(tmp, 'state', 'berth')).sort()).toEqual([
      'engine-keeper',
      'journal',
      'server.lock',
      `worker-pkg-w@${address.replace(/[^A-Za-z0-9_.-]/g, '_')}`,
    ]);

    worker.kill('SIGTERM');
    expect((await finished(worker)).code).toBe(0);
    server.kill('SIGTERM');
    expect((await finished(server)).code).toBe(0);
  }, 60_000); // three CLI processes and a Python harness start: about 3 s, 20 s seen at a load of 30

  it('berth dispatch runs a local batch from any directory', async () => {
    writeFileSync(join(cwd, 'batch.yaml'), 'jobs:\n  - argv: ["echo", "hello"]\n');
    const r = await exec(berth, ['dispatch', 'batch.yaml', '--devices', '0', '--log-dir', 'logs'], { cwd, env: env() });
    expect(r.stdout).toMatch(/^PASS\s+job1\b/m);
  });
});
