/**
 * Test support for provisioners (issue 12): config files, waiting for a Queued reason, and the
 * real Slurm commands (squeue) a test checks the cluster with.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { credentials } from '@grpc/grpc-js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PlacementServiceClient, type ClaimResponse, type Queued } from '../../generated/ts/berth/v1/placement.js';
import type { ClaimHandle } from './claims.js';
import { finished, spawnBerth, waitForLine, type CliResult } from './cli.js';

const made: string[] = [];

/** A fresh temporary directory (state dir and config files of one test); removed by `removeTempDirs`. */
export function tempDir(prefix = 'berth-prov-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Removes every directory `tempDir` made (call in afterAll). */
export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Writes `yaml` to `<dir>/<name>` and returns the path. */
export function configFile(dir: string, yaml: string, name = 'berth.yaml'): string {
  const path = join(dir, name);
  writeFileSync(path, yaml);
  return path;
}

/** Resolves with the first Queued (already received or coming) whose detail matches `re`. */
export function queuedMatching(h: ClaimHandle, re: RegExp): Promise<Queued> {
  const hit = (r: ClaimResponse) =>
    r.kind?.$case === 'queued' && re.test(r.kind.value.detail) ? r.kind.value : undefined;
  for (const r of h.responses) {
    const q = hit(r);
    if (q) return Promise.resolve(q);
  }
  return new Promise((resolve, reject) => {
    const onData = (r: ClaimResponse) => {
      const q = hit(r);
      if (!q) return;
      h.call.off('data', onData);
      resolve(q);
    };
    h.call.on('data', onData);
    h.ended.then(() => reject(new Error(`claim ended before a Queued matching ${re}: ${JSON.stringify(h.responses)}`)));
  });
}

/** Why Slurm cannot be used here ('' when `sinfo` shows an idle or mixed node). */
export function slurmMissing(): string {
  try {
    const out = execFileSync('sinfo', ['-h', '-o', '%T'], { encoding: 'utf8', timeout: 10_000 });
    return /idle|mix|alloc/.test(out) ? '' : `sinfo shows no usable node (${out.trim() || 'none'})`;
  } catch (e) {
    return `sinfo failed: ${(e as Error).message.split('\n')[0]}`;
  }
}

/** Ids of the jobs in squeue (any state squeue shows, completing included) named `berth-<provisioner>`. */
export function squeueIds(provisioner: string): string[] {
  const out = execFileSync('squeue', ['-h', `--name=berth-${provisioner}`, '-o', '%i'], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  return out
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
}

/**
 * `berth serve --config <file>` as a real process (grace 1 s; `extra` flags come last and win); resolves once it
 * serves, with its address and a client.
 */
export async function serveCli(
  config: string,
  stateDir: string,
  extra: string[] = [],
): Promise<{ child: ChildProcess; placement: PlacementServiceClient; exited: Promise<CliResult> }> {
  const child = spawnBerth([
    'serve',
    '--config',
    config,
    '--listen',
    '127.0.0.1:0',
    '--cpus',
    '1',
    '--state-dir',
    stateDir,
    '--grace',
    '1',
    ...extra,
  ]);
  const exited = finished(child);
  const line = await waitForLine(child, /"msg":"berth serving"/);
  const address = (JSON.parse(line) as { address: string }).address;
  return { child, placement: new PlacementServiceClient(address, credentials.createInsecure()), exited };
}
