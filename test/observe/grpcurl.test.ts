/**
 * Issue 13 item 1: a new user's grpcurl works through server reflection alone — no proto files —
 * for describe, a unary call, a server-streaming call and the health check. The real grpcurl
 * binary (pinned v1.9.3, installed by .ci/run) against a real server.
 */
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { claim } from '../support/claims.js';
import { startServer, type TestServer } from '../support/server.js';
import { grpcurlPath } from '../support/tools.js';

const run = promisify(execFile);
const GRPCURL = grpcurlPath();

/** Runs `grpcurl -plaintext FLAGS address ARGS`; resolves with stdout. */
async function grpcurl(address: string, flags: string[], ...args: string[]): Promise<string> {
  const { stdout } = await run(GRPCURL!, ['-plaintext', ...flags, address, ...args], { timeout: 20_000 });
  return stdout;
}

describe.skipIf(!GRPCURL)('grpcurl through server reflection, without proto files', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('describes PlacementService and a message with a google.protobuf.Struct field and a map field', async () => {
    t = await startServer();
    const service = await grpcurl(t.address, [], 'describe', 'berth.v1.PlacementService');
    expect(service).toContain(
      'rpc Satisfiable ( .berth.v1.SatisfiableRequest ) returns ( .berth.v1.SatisfiableResponse );',
    );
    expect(service).toContain(
      'rpc WatchEvents ( .berth.v1.WatchEventsRequest ) returns ( stream .berth.v1.WatchEventsResponse );',
    );
    const source = await grpcurl(t.address, [], 'describe', 'berth.v1.PythonSource');
    expect(source).toMatch(/\.google\.protobuf\.Struct kwargs = \d+;/);
    const ask = await grpcurl(t.address, [], 'describe', 'berth.v1.Ask');
    expect(ask).toMatch(/map<string, string> env = 8;/);
    expect(ask).toMatch(/optional \.berth\.v1\.OnOversize on_oversize = 9;/);
    const health = await grpcurl(t.address, [], 'describe', 'grpc.health.v1.HealthListResponse');
    expect(health).toMatch(/map<string, \.grpc\.health\.v1\.HealthCheckResponse> statuses = 1;/);
  });

  it('calls Satisfiable with a JSON ask and reads the structured verdict, also for a clamped ask', async () => {
    t = await startServer({ cpus: 4 });
    const fits = JSON.parse(
      await grpcurl(t.address, ['-d', '{"ask":{"cpus":2}}'], 'berth.v1.PlacementService/Satisfiable'),
    );
    expect(fits).toEqual({ verdict: 'VERDICT_RUNS_NOW' });
    const big = JSON.parse(
      await grpcurl(t.address, ['-d', '{"ask":{"cpus":64,"gpus":2}}'], 'berth.v1.PlacementService/Satisfiable'),
    );
    expect(big).toEqual({ verdict: 'VERDICT_CLAMPED', clampedTo: { cpus: 4 }, limiting: 'gpus' });
  });

  it('streams WatchEvents with -max-time and sees a claim placed and released with typed fields', async () => {
    t = await startServer({ cpus: 4 });
    const child = spawn(GRPCURL!, [
      '-plaintext',
      '-max-time',
      '20',
      '-d',
      '{}',
      t.address,
      'berth.v1.PlacementService/WatchEvents',
    ]);
    let out = '';
    const seen = (s: string) =>
      new Promise<void>((resolve, reject) => {
        const check = () => out.includes(s) && resolve();
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          check();
        });
        child.on('exit', () =>
          out.includes(s) ? resolve() : reject(new Error(`grpcurl exited before ${s}:\n${out}`)),
        );
        check();
      });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await seen('"watch_started"');
      const c = claim(t.placement, { cpus: 2, node: 'flow.grpcurl' });
      await c.granted;
      await c.release();
      await seen('"claim_released"');
    } finally {
      child.kill('SIGINT');
    }
    await exited;
    const events = out.split(/\n(?=\{)/).map((chunk) => JSON.parse(chunk) as Record<string, unknown>);
    const placed = events.find((e) => e.kind === 'node_placed');
    expect(placed).toMatchObject({ node: 'flow.grpcurl', machine: 'engine', asked: { cpus: 2 }, granted: { cpus: 2 } });
    expect(events.find((e) => e.kind === 'claim_released')).toMatchObject({
      node: 'flow.grpcurl',
      outcome: 'released',
      granted: { cpus: 2 },
    });
  });

  it('a -max-time watch ends by itself with DeadlineExceeded after printing watch_started', async () => {
    t = await startServer();
    const err = await run(
      GRPCURL!,
      ['-plaintext', '-max-time', '1', '-d', '{}', t.address, 'berth.v1.PlacementService/WatchEvents'],
      { timeout: 20_000 },
    ).then(
      () => undefined,
      (e: { stdout: string; stderr: string }) => e,
    );
    expect(err?.stdout).toContain('"kind": "watch_started"');
    expect(err?.stderr).toMatch(/DeadlineExceeded/);
  });

  it('answers the health check for the server and for PlacementService', async () => {
    t = await startServer();
    expect(JSON.parse(await grpcurl(t.address, [], 'grpc.health.v1.Health/Check'))).toEqual({ status: 'SERVING' });
    const one = await grpcurl(
      t.address,
      ['-d', '{"service":"berth.v1.PlacementService"}'],
      'grpc.health.v1.Health/Check',
    );
    expect(JSON.parse(one)).toEqual({ status: 'SERVING' });
  });
});
