/**
 * Issue 13 item 2: Prometheus metrics on the opt-in HTTP port, scraped from the real endpoint
 * after a scripted sequence of claims, calls and a worker coming and going.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { claim, fakeWorker, watch } from '../support/claims.js';
import { testProvisioner } from '../support/provisioner.js';
import { run, runRequest } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';
import { until } from '../support/until.js';

/** Parses the exposition text into `name{labels}` → value (labels as written, sorted by prom-client). */
function parse(text: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    m.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return m;
}

async function scrape(t: TestServer, headers: Record<string, string> = {}): Promise<Map<string, number>> {
  const res = await fetch(`${t.server.observe!.url}/metrics`, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  return parse(await res.text());
}

describe('metrics on --metrics-listen', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('provisioned machines by state: a series per state, 0 when empty; a machine moves between them', async () => {
    const prov = testProvisioner({ cpus: 16, gpus: 2, ramMb: 65536, labels: [] });
    t = await startServer({ cpus: 4, provisioning: prov.make, flags: { metricsListen: '127.0.0.1:0' } });
    const series = (state: string) => `berth_provisioner_machines{provisioner="test",state="${state}"}`;
    let m = await scrape(t);
    for (const state of ['starting', 'running', 'idle', 'stopping']) expect(m.get(series(state))).toBe(0);
    const c = claim(t.placement, { cpus: 1, gpus: 1, node: 'wants.gpu' }); // only the provisioner's shape holds it
    await c.queued;
    await until(async () => (await scrape(t!)).get(series('starting')) === 1);
    const w = fakeWorker(t.worker, 'prov-1', { cpus: 16, gpuIds: [0, 1], ramMb: 65536 });
    await c.granted;
    m = await scrape(t);
    expect(m.get(series('starting'))).toBe(0); // still there, at 0
    expect(m.get(series('running'))).toBe(1);
    await c.release();
    w.close();
  });

  it(
    'follows a scripted sequence: grants, a wait, ' + 'releases by outcome, a clamp, a worker, calls by outcome',
    async () => {
      t = await startServer({ cpus: 4, gpuIds: [0, 1], ramMb: 1000, flags: { metricsListen: '127.0.0.1:0' } });
      const w = watch(t.placement);
      await w.ready;
      let m = await scrape(t);
      expect(m.get('berth_machines{kind="engine"}')).toBe(1);
      expect(m.get('berth_machines{kind="worker"}')).toBe(0);
      expect(m.get('berth_machine_cpus{machine="engine"}')).toBe(4);
      expect(m.get('berth_machine_gpus{machine="engine"}')).toBe(2);
      expect(m.get('berth_machine_ram_bytes{machine="engine"}')).toBe(1000 * 1024 * 1024);
      expect(m.get('berth_claims_granted_total')).toBeUndefined(); // no label set observed yet

      const a = claim(t.placement, { cpus: 3, gpus: 1, ramMb: 400, node: 'f.a' });
      await a.granted;
      const b = claim(t.placement, { cpus: 2, node: 'f.b' });
      await b.queued;
      m = await scrape(t);
      expect(m.get('berth_claims_granted_total{machine="engine",clamped="false",fell_back="false"}')).toBe(1);
      expect(m.get('berth_claims_queued_total')).toBe(1);
      expect(m.get('berth_claims_waiting')).toBe(1);
      expect(m.get('berth_claims_held')).toBe(1);
      expect(m.get('berth_machine_cpus_free{machine="engine"}')).toBe(1);
      expect(m.get('berth_machine_gpus_free{machine="engine"}')).toBe(1);
      expect(m.get('berth_machine_ram_free_bytes{machine="engine"}')).toBe(600 * 1024 * 1024);
      expect(m.get('berth_machine_claims{machine="engine"}')).toBe(1);

      await a.release();
      await b.granted;
      b.call.end(); // half-close ends the lease
      await w.next((e) => e.kind === 'claim_released' && e.node === 'f.b');
      const big = claim(t.placement, { cpus: 2, gpus: 8, node: 'f.big' });
      expect((await big.granted).clamped).toBe(true);
      await big.release();
      m = await scrape(t);
      expect(m.get('berth_claims_granted_total{machine="engine",clamped="false",fell_back="false"}')).toBe(2);
      expect(m.get('berth_claims_granted_total{machine="engine",clamped="true",fell_back="false"}')).toBe(1);
      expect(m.get('berth_claims_released_total{outcome="released"}')).toBe(2);
      expect(m.get('berth_claims_released_total{outcome="half_closed"}')).toBe(1);
      expect(m.get('berth_claims_clamped_total{limiting="gpus"}')).toBe(1);
      expect(m.get('berth_claims_waiting')).toBe(0);
      expect(m.get('berth_claims_held')).toBe(0);
      expect(m.get('berth_machine_cpus_free{machine="engine"}')).toBe(4);
      expect(m.get('berth_claim_wait_seconds_count')).toBe(3);
      expect(m.get('berth_claim_wait_seconds_bucket{le="+Inf"}')).toBe(3);
      expect(m.get('berth_placement_decision_seconds_count')).toBe(3);

      const worker = fakeWorker(t.worker, 'w1', { cpus: 8, gpuIds: [0, 1, 2, 3] }, ['gpu']);
      await worker.welcomed;
      m = await scrape(t);
      expect(m.get('berth_machines{kind="worker"}')).toBe(1);
      expect(m.get('berth_machine_gpus{machine="w1"}')).toBe(4);
      expect(m.has('berth_machine_ram_bytes{machine="w1"}')).toBe(false); // not limited
      expect(m.get('berth_worker_attaches_total')).toBe(1);
      worker.close();
      await w.next((e) => e.kind === 'worker_detached');

      expect(
        (await run(t.placement, runRequest({ argv: ['true'], runId: 'r1', node: 'ok', cpus: 1 })).done).error,
      ).toBeNull();
      expect(
        (await run(t.placement, runRequest({ argv: ['false'], runId: 'r1', node: 'bad', cpus: 1 })).done).error,
      ).toBeNull();
      m = await scrape(t);
      expect(m.get('berth_worker_detaches_total')).toBe(1);
      expect(m.get('berth_machines{kind="worker"}')).toBe(0);
      expect(m.get('berth_calls_total{outcome="result",failure_type=""}')).toBe(1);
      expect(
        [...m.keys()].filter((k) => k.startsWith('berth_calls_total{outcome="failure"')).map((k) => m.get(k)),
      ).toEqual([1]);
      expect(m.get('berth_calls_in_flight')).toBe(0);
      expect(m.get('process_cpu_user_seconds_total')).toBeGreaterThan(0);
      expect(m.has('nodejs_eventloop_lag_seconds')).toBe(true);
      w.cancel();
    },
  );

  it('is off unless --metrics-listen is given, and with a token requires it on /metrics', async () => {
    t = await startServer();
    expect(t.server.observe).toBeUndefined();
    await t.close();
    t = await startServer({ flags: { metricsListen: '127.0.0.1:0', token: 's3cret' } });
    const url = `${t.server.observe!.url}/metrics`;
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { authorization: 'Bearer nope' } })).status).toBe(401);
    const m = await scrape(t, { authorization: 'Bearer s3cret' });
    expect(m.get('berth_machines{kind="engine"}')).toBe(1);
    expect((await fetch(url, { method: 'POST', headers: { authorization: 'Bearer s3cret' } })).status).toBe(405);
  });
});
