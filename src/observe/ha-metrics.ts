/**
 * Metrics of a clustered server and of its store (issue 20, SPEC S7), on the BerthMetrics registry:
 * `berth_ha_leader` (1 while this server leads and acts), `berth_ha_epoch` (its epoch while it leads, else 0),
 * `berth_ha_elections_total` (elections it won), `berth_ha_leader_seconds` (how long it has led) and
 * `berth_store_write_seconds` (latency of each journal commit, etcd or embedded). Gauges are read at scrape time.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ClusterInfo } from '../ha/cluster.js';

/** Registers the cluster gauges and counter; returns what counts an election won. */
export function clusterMetrics(r: Registry, info: () => ClusterInfo): { elected(): void } {
  const gauge = (name: string, help: string, read: (c: ClusterInfo) => number) =>
    new Gauge({
      name,
      help,
      registers: [r],
      collect() {
        this.set(read(info()));
      },
    });
  gauge('berth_ha_leader', '1 while this server leads its cluster and acts, else 0 (SPEC S7).', (c) =>
    c.epoch > 0 ? 1 : 0,
  );
  gauge(
    'berth_ha_epoch',
    "This server's epoch while it leads (its etcd election key's revision), else 0.",
    (c) => c.epoch,
  );
  gauge('berth_ha_leader_seconds', 'How long this server has led its cluster, in seconds (0 when it does not).', (c) =>
    c.leaderSinceMs ? (Date.now() - c.leaderSinceMs) / 1000 : 0,
  );
  const elections = new Counter({
    name: 'berth_ha_elections_total',
    help: 'Elections this server won (0 or 1: a deposed leader exits).',
    registers: [r],
  });
  return { elected: () => elections.inc() };
}

/** Registers `berth_store_write_seconds`; returns the journal's commit observer (ms, records). */
export function storeMetrics(r: Registry, store: string): (ms: number, records: number) => void {
  const h = new Histogram({
    name: 'berth_store_write_seconds',
    help: 'Latency of one journal commit (a group of writes), in seconds, by store (embedded or etcd).',
    labelNames: ['store'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
    registers: [r],
  });
  return (ms) => h.observe({ store }, ms / 1000);
}
