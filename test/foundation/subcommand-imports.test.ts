/**
 * A CLI that starts at once (issue 11 item 3): each `berth` subcommand loads only what it uses.
 * The real bin/berth.js runs under a module hook (test/support/record-imports.mjs) that records
 * every module URL it resolves.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BERTH_BIN, finished, ROOT } from '../support/cli.js';

const dir = mkdtempSync(join(os.tmpdir(), 'berth-imports-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `berth ...args` recording imports; resolves with the exit code, output and module URLs. */
async function imports(name: string, args: string[]) {
  const log = join(dir, `${name}.log`);
  writeFileSync(log, '');
  const child = spawn(
    process.execPath,
    ['--import', join(ROOT, 'test', 'support', 'record-imports.mjs'), BERTH_BIN, ...args],
    {
      env: { ...process.env, BERTH_IMPORT_LOG: log, BERTH_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: dir,
    },
  );
  const r = await finished(child);
  return { ...r, urls: readFileSync(log, 'utf8').split('\n').filter(Boolean) };
}

const SERVER_SIDE = /@grpc\/reflection|grpc-health-check|@grpc\/proto-loader|prom-client/;

describe('berth subcommands load only what they use', () => {
  it(
    '`berth dispatch` of a local batch loads no gRPC at all: ' + 'no server, reflection, health or client code',
    async () => {
      writeFileSync(join(dir, 'one.yaml'), 'jobs:\n  - argv: ["true"]\n');
      const r = await imports('dispatch', ['dispatch', 'one.yaml', '--devices', '0', '--log-dir', join(dir, 'logs')]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^PASS\s+job1\b/m);
      // the recorder sees the CLI's modules
      expect(r.urls.some((u) => u.includes('/dist/chunks/dispatch-'))).toBe(true);
      expect(r.urls.filter((u) => SERVER_SIDE.test(u) || u.includes('@grpc/grpc-js'))).toEqual([]);
    },
  );

  it('`berth dispatch` of a JSON batch does not load the YAML parser; a YAML batch does', async () => {
    // issue 11: a fork costs more the more memory dispatch holds; yaml is ~8 MB of it
    const yamlIn = (urls: string[]) =>
      urls.some((u) => u.startsWith('file:') && /YAMLParseError/.test(readFileSync(new URL(u), 'utf8')));
    writeFileSync(join(dir, 'one.json'), '[{ "argv": ["true"] }]\n');
    const json = await imports('json', ['dispatch', 'one.json', '--devices', '0', '--log-dir', join(dir, 'logs-j')]);
    expect(json.code, json.stderr).toBe(0);
    expect(yamlIn(json.urls)).toBe(false);
    writeFileSync(join(dir, 'two.yaml'), '- argv: ["true"]\n');
    const yaml = await imports('yaml', ['dispatch', 'two.yaml', '--devices', '0', '--log-dir', join(dir, 'logs-y')]);
    expect(yaml.code, yaml.stderr).toBe(0);
    expect(yaml.stdout).toMatch(/^PASS\s+job1\b/m);
    expect(yamlIn(yaml.urls)).toBe(true); // the check finds the parser where it is loaded
  });

  it('`berth --help` lists every command without loading any of them', async () => {
    const r = await imports('help', ['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\s+dispatch\b/m);
    expect(r.urls.filter((u) => /\/dist\/chunks\/(serve|worker|dispatch|status)-|node_modules/.test(u))).toEqual([]);
  });

  it('`berth serve` does load reflection and health (so the recorder would catch them in dispatch)', async () => {
    const r = await imports('serve', ['serve', '--listen', 'nonsense']); // loads the command, then refuses the flag
    expect(r.code).toBe(2);
    expect(r.urls.some((u) => u.includes('@grpc/reflection'))).toBe(true);
    expect(r.urls.some((u) => u.includes('grpc-health-check'))).toBe(true);
  });
});
