/**
 * The docs a newcomer follows (issue 24 item 5): the generated reference matches the code, every
 * relative link resolves, the link check itself catches what it should, and the front page's
 * TypeScript claim example works against a real server.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { brokenLinks } from '../../scripts/docs/links.js';
import { referencePages } from '../../scripts/docs/reference.js';
import { unexplainedRules } from '../../scripts/docs/rules-cited.js';
import { ROOT, finished } from '../support/cli.js';
import { startServer, type TestServer } from '../support/server.js';
import { freeOf, snapshot } from '../support/snapshot.js';

describe('the reference in docs/reference/', () => {
  it('is what the CLI and config definitions give today (else: make docs)', async () => {
    for (const [path, text] of Object.entries(await referencePages(ROOT))) {
      expect(readFileSync(join(ROOT, path), 'utf8'), `${path} is stale: run make docs`).toBe(text);
    }
  });

  it('lists every flag of berth serve with its env variable, and every provisioner key', async () => {
    const pages = await referencePages(ROOT);
    const cli = pages['docs/reference/cli.md'];
    expect(cli).toMatch(/\| `--reconnect-grace <s>` \| `BERTH_RECONNECT_GRACE` \| `30` \|/);
    expect(cli).toMatch(/\| `-j, --jobs <n\\\|auto>` \| {2}\| `auto` \|/);
    expect(cli).toContain('- `BERTH_TOKEN` (token)'); // the worker reads its token from the environment only
    const config = pages['docs/reference/config.md'];
    expect(config).toMatch(/\| `max_machines` \| {2}\| whole number 1–10000 \| `1` \|/);
    expect(config).toMatch(/\| `ram_mb` \| whole number 0–1073741824 \| {2}\| `--ram-mb` \|/);
  });
});

describe('links in README.md and docs/', () => {
  it('every relative link names a file and anchor that exist', () => {
    expect(brokenLinks(ROOT)).toEqual([]);
  });

  it('the check reports a missing file, a missing anchor and a pending page that has arrived', () => {
    const root = mkdtempSync(join(tmpdir(), 'berth-links-'));
    try {
      mkdirSync(join(root, 'docs'));
      mkdirSync(join(root, 'scripts', 'docs'), { recursive: true });
      writeFileSync(join(root, 'scripts', 'docs', 'pending-links.txt'), '# pending\ndocs/later.md\ndocs/here.md\n');
      writeFileSync(join(root, 'docs', 'here.md'), '# Here\n\n<a id="p5"></a>\n\n## Two words\n');
      writeFileSync(
        join(root, 'README.md'),
        [
          '[ok](docs/here.md#p5) [heading](docs/here.md#two-words) [web](https://example.org/x.md)',
          '[gone](docs/gone.md) [no anchor](docs/here.md#p6) [pending](docs/later.md)',
          '`[in code](docs/nope.md)`',
          '```',
          '[in a block](docs/nope.md)',
          '```',
        ].join('\n'),
      );
      expect(brokenLinks(root)).toEqual([
        'scripts/docs/pending-links.txt: docs/here.md exists now; delete its line',
        'README.md: docs/gone.md: no such file (docs/gone.md)',
        'README.md: docs/here.md#p6: docs/here.md has no anchor #p6',
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('the rules page', () => {
  it('explains every rule the code, tests, protos and docs cite as SPEC X', () => {
    expect(unexplainedRules(ROOT)).toEqual([]);
  });

  it('a citation of a rule it lacks, alone or inside a range, is reported with the file citing it', () => {
    const root = mkdtempSync(join(tmpdir(), 'berth-rules-'));
    try {
      mkdirSync(join(root, 'docs'));
      mkdirSync(join(root, 'src'));
      writeFileSync(join(root, 'docs', 'rules.md'), '<a id="p1"></a>\n<a id="p2"></a>\n<a id="r8"></a>\n');
      writeFileSync(join(root, 'README.md'), 'as SPEC P1–P3 says\n');
      // Written in two pieces so that this file does not cite a rule X9 itself.
      writeFileSync(join(root, 'src', 'x.ts'), `/** Refuses it (${'SPEC'} R8, X9). */\n`);
      expect(unexplainedRules(root)).toEqual(['P3 (README.md)', 'X9 (src/x.ts)']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("the front page's TypeScript example (examples/claim.ts)", () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('gets a grant on the engine host, releases it, and leaves the books full', async () => {
    t = await startServer({ cpus: 2 });
    const child = spawn(process.execPath, ['--import', 'tsx', 'examples/claim.ts', t.address], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const r = await finished(child);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^granted on engine: \{"cpus":1,"gpuIds":\[\],"env":\{"OMP_NUM_THREADS":"1"/);
    expect(await freeOf(t.placement, 'engine')).toEqual({ cpus: 2, gpus: 0 });
    expect((await snapshot(t.placement)).held).toEqual([]);
  });
});
