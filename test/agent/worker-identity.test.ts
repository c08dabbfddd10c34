/**
 * A worker's name is bound to its credential (SPEC R7, issue 10 item 5): under mutual TLS to its
 * certificate (SAN DNS name, else CN), without TLS to its `--worker-tokens` token. A Hello naming
 * another worker, or a worker a live stream of another identity holds, is refused
 * PERMISSION_DENIED; the refused agent stops (the CLI exits 1 printing why) and the live worker
 * keeps its calls. The same identity re-attaching still replaces (SPEC W1).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, status } from '@grpc/grpc-js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { WorkerAgent, type AgentOptions } from '../../src/agent/agent.js';
import { silentLogger } from '../../src/log/logger.js';
import { runBerth } from '../support/cli.js';
import { run, runRequest, terminal } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';

let dir = '';
const f = (n: string) => join(dir, n);
const TOKENS = { gpu1: 'gpu1-token-0123456789abcdef', gpu2: 'gpu2-token-0123456789abcdef' };

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'berth-ident-'));
  // gpu1 and gpu1b both name gpu1 (two certificates: two identities); rogue has only a CN.
  const script = `set -e
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=berth-test-ca 2>/dev/null
cert() { # file cn san
  openssl req -newkey rsa:2048 -nodes -keyout $1.key -out $1.csr -subj /CN=$2 2>/dev/null
  if [ -n "$3" ]; then printf 'subjectAltName=%s\\n' "$3" > $1.ext; else : > $1.ext; fi
  openssl x509 -req -in $1.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $1.pem -days 1 -extfile $1.ext 2>/dev/null
}
cert server server IP:127.0.0.1,DNS:localhost
cert gpu1 ignored-cn DNS:gpu1
cert gpu1b ignored-cn DNS:gpu1
cert rogue rogue ""
cert engine engine-client ""`;
  execFileSync('bash', ['-c', script], { cwd: dir });
  writeFileSync(
    f('workers.yaml'),
    Object.entries(TOKENS)
      .map(([n, t]) => `${n}: ${t}\n`)
      .join(''),
  );
  // Waits until the test creates `release`: a call that runs exactly as long as the test needs.
  writeFileSync(f('wait.sh'), `while [ ! -e "${f('release')}" ]; do sleep 0.02; done; echo done\n`);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
  rmSync(f('release'), { force: true });
});

function agent(s: { address: string }, name: string, extra: Partial<AgentOptions>): WorkerAgent {
  const a = new WorkerAgent(
    {
      server: s.address,
      name,
      labels: ['gpu'],
      inventory: { cpus: 1, gpuIds: [] },
      maxParallel: 0,
      graceMs: 500,
      backoff: { baseMs: 20, capMs: 50 },
      ...extra,
    },
    silentLogger,
  );
  open.push(() => a.stop());
  return a;
}

async function attached(a: WorkerAgent): Promise<void> {
  const p = a.nextAttach();
  a.start();
  await p;
}

const mtls = (who: string) => ({ tls: { ca: f('ca.pem'), cert: f(`${who}.pem`), key: f(`${who}.key`) } });

async function mtlsServer(): Promise<{ s: TestServer; client: PlacementServiceClient }> {
  const s = await startServer({
    cpus: 0,
    flags: { tlsCert: f('server.pem'), tlsKey: f('server.key'), tlsCa: f('ca.pem') },
  });
  open.push(() => s.close());
  const client = new PlacementServiceClient(
    s.address,
    credentials.createSsl(readFileSync(f('ca.pem')), readFileSync(f('engine.key')), readFileSync(f('engine.pem'))),
  );
  open.push(() => client.close());
  return { s, client };
}

/** Starts a call on the worker labelled gpu that runs until `release` exists. */
function longCall(client: PlacementServiceClient) {
  return run(client, runRequest({ label: 'gpu', cpus: 1, argv: ['sh', f('wait.sh')] }));
}

describe('worker identity under mutual TLS', () => {
  it(
    'a Hello naming gpu1 with a certificate for "rogue" is refused; ' + 'the live gpu1 keeps its call and its result',
    async () => {
      const { s, client } = await mtlsServer();
      const real = agent(s, 'gpu1', mtls('gpu1'));
      await attached(real);
      const call = longCall(client);
      await new Promise<void>((resolve) =>
        s.server.context.events.subscribe((e) => e.kind === 'call_started' && resolve()),
      );

      const rogue = agent(s, 'gpu1', mtls('rogue'));
      rogue.start();
      await rogue.finished;
      expect(rogue.fatal).toBe(
        "the server refused this worker: hello.name 'gpu1' does not match this worker's certificate (it names 'rogue')",
      );
      expect(rogue.status().attaches).toBe(0);

      writeFileSync(f('release'), '');
      const out = await call.done;
      expect(out.error).toBeNull();
      expect(terminal(out)?.$case).toBe('result');
      expect(out.responses[0].kind?.$case === 'started' && out.responses[0].kind.value.machine).toBe('gpu1');
      expect(real.status()).toMatchObject({ attached: true, attaches: 1 });
    },
  );

  it(
    'a second certificate for gpu1 cannot take over the live gpu1: ' + '"held by a live stream of another identity"',
    async () => {
      const { s, client } = await mtlsServer();
      const real = agent(s, 'gpu1', mtls('gpu1'));
      await attached(real);
      const call = longCall(client);
      await new Promise<void>((resolve) =>
        s.server.context.events.subscribe((e) => e.kind === 'call_started' && resolve()),
      );

      const other = agent(s, 'gpu1', mtls('gpu1b'));
      other.start();
      await other.finished;
      expect(other.fatal).toMatch(
        new RegExp(
          /^the server refused this worker: worker gpu1 is held by a live stream of another identity /.source +
            /\(certificate CN=ignored-cn \(DNS:gpu1\)\)/.source,
        ),
      );

      writeFileSync(f('release'), '');
      expect(terminal(await call.done)?.$case).toBe('result');
      expect(real.status()).toMatchObject({ attached: true, attaches: 1 });
    },
  );

  it('the same certificate attaching again replaces the old stream (SPEC W1)', async () => {
    const { s } = await mtlsServer();
    const first = agent(s, 'gpu1', mtls('gpu1'));
    await attached(first);
    const second = agent(s, 'gpu1', mtls('gpu1'));
    await attached(second);
    await first.finished;
    expect(first.fatal).toBe("name 'gpu1' was taken over by another worker; not reconnecting");
    expect(s.server.context.hub.workers.size).toBe(1);
  });
});

describe('client identity under mutual TLS', () => {
  it(
    "a client is scoped by its certificate's name: another certificate cannot run in its claim or " + 'cancel its run',
    async () => {
      const { s, client } = await mtlsServer(); // `client` presents CN=engine-client
      const other = new PlacementServiceClient(
        s.address,
        credentials.createSsl(readFileSync(f('ca.pem')), readFileSync(f('rogue.key')), readFileSync(f('rogue.pem'))),
      );
      open.push(() => other.close());
      const real = agent(s, 'gpu1', mtls('gpu1'));
      await attached(real);
      const held = client.claim();
      const granted = new Promise<string>((resolve) =>
        held.on('data', (r) => r.kind?.$case === 'granted' && resolve(r.kind.value.claimId)),
      );
      held.on('error', () => undefined);
      held.write({
        kind: {
          $case: 'ask',
          value: {
            cpus: 1,
            gpus: 0,
            label: 'gpu',
            policy: 2,
            node: 'n',
            runId: 'mine',
            env: {},
            holdMs: 0,
            resources: {},
          },
        },
      });
      const claimId = await granted;
      const stolen = await run(other, runRequest({ claimId, runId: 'theirs', argv: ['true'] })).done;
      expect(stolen.error?.code).toBe(status.NOT_FOUND);
      const call = run(client, runRequest({ claimId, runId: 'mine', argv: ['sh', f('wait.sh')] }));
      await new Promise<void>((resolve) =>
        s.server.context.events.subscribe((e) => e.kind === 'call_started' && resolve()),
      );
      const cancelled = await new Promise((resolve, reject) =>
        other.cancel({ runId: 'mine' }, (e, r) => (e ? reject(e) : resolve(r))),
      );
      expect(cancelled).toEqual({ calls: 0, claims: 0 });
      writeFileSync(f('release'), '');
      expect(terminal(await call.done)?.$case).toBe('result');
      held.end();
    },
  );
});

describe('worker identity with --worker-tokens', () => {
  const tokenServer = async () => {
    const s = await startServer({
      cpus: 0,
      flags: { workerTokens: f('workers.yaml'), token: 'shared-token-0123456789' },
    });
    open.push(() => s.close());
    return s;
  };

  it("berth worker --name gpu1 holding gpu2's token exits 1 saying the name does not match the token", async () => {
    const s = await tokenServer();
    const r = await runBerth(['worker', '--server', s.address, '--name', 'gpu1', '--cpus', '1', '--gpus', ''], {
      BERTH_TOKEN: TOKENS.gpu2,
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "berth worker: the server refused this worker: hello.name 'gpu1' does not match its token's name 'gpu2'",
    );
    expect(s.server.context.hub.workers.size).toBe(0);
  });

  it(
    "the shared token cannot attach a worker; gpu1's own token can, " + 'and keeps its call while gpu2 tries its name',
    async () => {
      const s = await tokenServer();
      const shared = agent(s, 'gpu1', { token: 'shared-token-0123456789' });
      shared.start();
      await shared.finished;
      expect(shared.fatal).toMatch(/binds worker names to tokens \(--worker-tokens\)/);

      const real = agent(s, 'gpu1', { token: TOKENS.gpu1 });
      await attached(real);
      const client = s.placement;
      const md = (await import('../support/server.js')).bearer('shared-token-0123456789');
      const call = client.run(runRequest({ label: 'gpu', cpus: 1, argv: ['sh', f('wait.sh')] }), md);
      const ended = new Promise<{ code: number; kinds: string[] }>((resolve) => {
        const kinds: string[] = [];
        call.on('data', (r) => kinds.push(r.kind?.$case ?? '?'));
        call.on('error', (e: { code: number }) => resolve({ code: e.code, kinds }));
        call.on('status', (st) => st.code === 0 && resolve({ code: 0, kinds }));
      });
      await new Promise<void>((resolve) =>
        s.server.context.events.subscribe((e) => e.kind === 'call_started' && resolve()),
      );
      const thief = agent(s, 'gpu1', { token: TOKENS.gpu2 });
      thief.start();
      await thief.finished;
      expect(thief.fatal).toContain("does not match its token's name 'gpu2'");
      writeFileSync(f('release'), '');
      expect(await ended).toEqual({ code: 0, kinds: ['started', 'event', 'result'] });
    },
  );
});
