/**
 * Test support: an in-process provisioner covering asks up to a GPU count with one shape
 * (SPEC P10). It records provision requests and starts nothing by itself.
 */
import type { Provisioner } from '../../src/placement/provisioner.js';
import type { NormalizedAsk } from '../../src/placement/types.js';
import type { HostInventory } from '../../src/resources/inventory.js';

/** A provisioner whose machines have `shape`; it covers asks that fit the shape. */
export class TestProvisioner implements Provisioner {
  readonly name = 'test';
  readonly requests: NormalizedAsk[] = [];
  constructor(readonly shape: HostInventory) {}

  covers(ask: NormalizedAsk): boolean {
    return ask.gpus <= this.shape.gpuIds.length && ask.cpus <= this.shape.cpus && (ask.ramMb ?? 0) <= (this.shape.ramMb ?? Infinity);
  }

  async provision(ask: NormalizedAsk): Promise<void> {
    this.requests.push(ask);
  }

  async reconcile(): Promise<void> {}

  shapes(): HostInventory[] {
    return [this.shape];
  }

  status(): string {
    return `${this.requests.length} request(s)`;
  }
}
