import { afterAll, describe, expect, it } from 'vitest';
import { resolveServeOptions } from '../../src/config/serve-options.js';
import { runBerth } from '../support/cli.js';
import { configFile, tempDir, removeTempDirs } from '../support/provisioning.js';

afterAll(removeTempDirs);

const good = `listen: 127.0.0.1:0
cpus: 3
engine_labels: [a, b]
reconnect_grace: 5
provisioners:
  - name: local
    kind: local
    shapes: [{ cpus: 1, gpus: 0 }]
    max_machines: 2
    idle_timeout: 30
`;

describe('berth serve --config FILE (issue 12, SPEC V1)', () => {
  it('the file sets serve options in snake_case and provisioners; flags, then BERTH_* env, override it', () => {
    const path = configFile(tempDir(), good);
    const o = resolveServeOptions({ config: path, cpus: '1' }, { BERTH_RECONNECT_GRACE: '7' });
    expect(o).toMatchObject({
      listen: '127.0.0.1:0',
      cpus: 1,
      engineLabels: ['a', 'b'],
      reconnectGrace: 7,
      config: path,
    });
    expect(o.provisioners).toEqual([
      {
        name: 'local',
        kind: 'local',
        shapes: [{ cpus: 1, gpus: 0, labels: [] }],
        max_machines: 2,
        idle_timeout: 30,
        start_timeout: 300,
        sbatch_args: [],
      },
    ]);
    expect(resolveServeOptions({}, { BERTH_CONFIG: path }).cpus).toBe(3);
  });

  it.each([
    ['an unknown serve key', 'listen: 127.0.0.1:0\ncpuz: 3\n', /berth\.yaml line 2: cpuz: unknown key/],
    [
      'an unknown provisioner key',
      good.replace('max_machines: 2', 'max_machine: 2'),
      /berth\.yaml line 9: provisioners\[0\]\.max_machine: unknown key/,
    ],
    [
      'an unknown shape key',
      good.replace('gpus: 0', 'gpu: 0'),
      /berth\.yaml line 8: provisioners\[0\]\.shapes\[0\]\.gpu: unknown key/,
    ],
    [
      'a bad serve value',
      good.replace('cpus: 3', 'cpus: -3'),
      /berth\.yaml line 2: cpus: must be at least 0 \(got -3\)/,
    ],
    [
      'a bad provisioner value',
      good.replace('max_machines: 2', 'max_machines: 0'),
      /berth\.yaml line 9: provisioners\[0\]\.max_machines: must be at least 1 \(got 0\)/,
    ],
    [
      'a bad kind',
      good.replace('kind: local', 'kind: k8s'),
      /berth\.yaml line 7: provisioners\[0\]\.kind: expected slurm or local \(got "k8s"\)/,
    ],
    [
      'a start_timeout of 0 (every start would fail at once)',
      good.replace('idle_timeout: 30', 'idle_timeout: 30\n    start_timeout: 0'),
      /berth\.yaml line 11: provisioners\[0\]\.start_timeout: must be more than 0 \(got 0\)/,
    ],
    [
      "a bare number as the engine gpus (ids, unlike a shape's count)",
      good.replace('cpus: 3\n', 'cpus: 3\ngpus: 4\n'),
      /berth\.yaml line 3: gpus: device ids, not a count: .* or '4-4' for the one GPU with id 4 \(got 4\)/,
    ],
    [
      'a provisioner without a name',
      good.replace('  - name: local\n    kind: local', '  - kind: local'),
      /berth\.yaml line 6: provisioners\[0\]\.name: required$/,
    ],
    [
      'a mapping where a list belongs',
      'provisioners: { a: 1 }\n',
      /berth\.yaml line 1: provisioners: expected a list \(got \{"a":1\}\)$/,
    ],
    [
      'labels as text, not a list',
      good.replace('{ cpus: 1, gpus: 0 }', '{ cpus: 1, gpus: 0, labels: pool }'),
      /provisioners\[0\]\.shapes\[0\]\.labels: expected a list \(got "pool"\)$/,
    ],
    [
      'a misspelt provisioner key (the known ones listed)',
      good.replace('max_machines: 2', 'max_machines: 2\n    partitoin: main'),
      /provisioners\[0\]\.partitoin: unknown key \(known: name, kind, partition, shapes, max_machines, .*\)$/,
    ],
    ['a YAML syntax error', 'cpus: [1\n', /berth\.yaml line \d+: /],
  ])('%s is refused naming the file, the line, the key and the value', (_what, yaml, message) => {
    expect(() => resolveServeOptions({ config: configFile(tempDir(), yaml) }, {})).toThrow(message);
  });

  it('worker tokens with provisioners are refused: the workers a provisioner starts carry the shared token', () => {
    const dir = tempDir();
    const tokens = configFile(dir, 'gpu1: 3f6c0a9b8e7d6c5b4a39281706f5e4d3\n', 'workers.yaml');
    const path = configFile(dir, `worker_tokens: ${tokens}\n${good}`);
    expect(() => resolveServeOptions({ config: path }, {})).toThrow(
      /--worker-tokens with provisioners \(.*berth\.yaml\): the workers a provisioner starts attach with the shared/,
    );
    expect(
      resolveServeOptions({ config: configFile(dir, `worker_tokens: ${tokens}\n`, 'alone.yaml') }, {}),
    ).toMatchObject({ workerTokens: tokens, provisioners: [] });
  });

  it('an unusable --state-dir with provisioners stops berth serve at start, naming it', async () => {
    const dir = tempDir();
    const notADir = configFile(dir, 'a file', 'state');
    const r = await runBerth(['serve', '--config', configFile(dir, good), '--state-dir', `${notADir}/sub`]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--state-dir .*state\/sub cannot be used: ENOTDIR/);
  });

  it.concurrent.each([
    [
      'a bad key',
      () => configFile(tempDir(), 'listen: 127.0.0.1:0\ncpuz: 3\n'),
      /^berth: .*berth\.yaml line 2: cpuz: unknown key/,
    ],
    [
      'a bad value',
      () => configFile(tempDir(), 'cpus: -3\n'),
      /^berth: .*berth\.yaml line 1: cpus: must be at least 0 \(got -3\)/,
    ],
    [
      'an unreadable file',
      () => '/nonexistent/berth.yaml',
      /^berth: --config: cannot read '\/nonexistent\/berth\.yaml': no such file/,
    ],
  ])('berth serve --config with %s exits 2 naming it', async (_what, path, message) => {
    const r = await runBerth(['serve', '--config', path(), '--log-level', 'silent']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });
});
