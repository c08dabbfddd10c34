/**
 * Test support for the shared client cases (test/cases/clients.json): the real `berth serve` and
 * `berth worker` processes a case's `server` names, on loopback, each with its own temporary state dir,
 * and the test certificates (test/cases/make-certs.sh). `stop()` ends every process it started, also
 * when a start failed half-way.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { finished, ROOT, spawnBerth, waitForLine } from './cli.js';

/** A server of the case file: its `berth serve` flags and the workers attached to it. */
export interface ServerSpec {
  serve: string[];
  workers: { name: string; flags: string[] }[];
}

/** The shared case file, parsed. */
export interface CaseFile {
  servers: Record<string, ServerSpec>;
  cases: Record<string, unknown>[];
}

/** Reads test/cases/clients.json. */
export function readCases(): CaseFile {
  return JSON.parse(readFileSync(join(ROOT, 'test', 'cases', 'clients.json'), 'utf8')) as CaseFile;
}

/** `s` with every `{name}` replaced by `vars[name]` (deeply, in strings, arrays and objects). */
export function fill<T>(s: T, vars: Record<string, string>): T {
  if (typeof s === 'string') return s.replace(/\{(\w+)\}/g, (m, k: string) => vars[k] ?? m) as T;
  if (Array.isArray(s)) return s.map((x) => fill(x, vars)) as T;
  if (s && typeof s === 'object') return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, fill(v, vars)])) as T;
  return s;
}

/** A started server of the case file. */
export interface CaseServer {
  address: string;
  /** Directory with ca.pem, server.pem/.key, client.pem/.key. */
  certs: string;
  /** A scratch directory for the cases ({release} files). */
  scratch: string;
  stop(): Promise<void>;
}

async function end(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = finished(child);
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await done;
  clearTimeout(timer);
}

/** Starts `spec` (certificates first: its flags may name {certs}), its workers attached before it resolves. */
export async function startCaseServer(spec: ServerSpec): Promise<CaseServer> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-cases-'));
  const certs = join(dir, 'certs');
  execFileSync('mkdir', ['-p', certs]);
  const children: ChildProcess[] = [];
  const stop = async () => {
    for (const c of children.reverse()) await end(c);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    execFileSync('bash', [join(ROOT, 'test', 'cases', 'make-certs.sh')], { cwd: certs, stdio: 'ignore' });
    const vars = { certs };
    const flags = ['--listen', '127.0.0.1:0', '--grace', '1', '--reconnect-grace', '0', '--state-dir', join(dir, 's')];
    const server = spawnBerth(['serve', ...flags, ...fill(spec.serve, vars)], { BERTH_LOG_LEVEL: 'info' });
    children.push(server);
    const line = await waitForLine(server, /"msg":"berth serving"/);
    const address = (JSON.parse(line) as { address: string }).address;
    for (const w of spec.workers) {
      const state = join(dir, `worker-${w.name}`);
      const args = ['worker', '--server', address, '--name', w.name, '--state-dir', state, '--log-level', 'info'];
      const child = spawnBerth([...args, ...fill(w.flags, vars)]);
      children.push(child);
      await waitForLine(child, /attached to server/);
    }
    return { address, certs, scratch: dir, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
