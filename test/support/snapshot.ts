/**
 * Test support: GetSnapshot as a promise, and lookups in it.
 */
import type { GetSnapshotResponse, Machine, PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';

/** Calls GetSnapshot. */
export function snapshot(client: PlacementServiceClient): Promise<GetSnapshotResponse> {
  return new Promise((resolve, reject) => client.getSnapshot({}, (err, res) => (err ? reject(err) : resolve(res!))));
}

/** The machine named `name` in a snapshot (throws when absent). */
export function machine(s: GetSnapshotResponse, name: string): Machine {
  const m = s.machines.find((x) => x.name === name);
  if (!m) throw new Error(`no machine ${name} in snapshot: ${s.machines.map((x) => x.name).join(', ')}`);
  return m;
}

/** Free cpus and GPUs of a machine, as a pair. */
export async function freeOf(client: PlacementServiceClient, name: string): Promise<{ cpus: number; gpus: number }> {
  const m = machine(await snapshot(client), name);
  return { cpus: m.free!.cpus, gpus: m.free!.gpus };
}
