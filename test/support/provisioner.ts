/**
 * Test support: a provisioning loop over an in-process backend with one shape (SPEC P10). The
 * backend records what it was asked to start and starts nothing: the test attaches the worker
 * (named `prov-1`, `prov-2`, …) itself. The loop, pools and packing are the real ones.
 */
import type { Shape } from '../../src/placement/provisioner.js';
import type { Backend, EngineState } from '../../src/provision/backend.js';
import { ProvisioningLoop } from '../../src/provision/loop.js';
import { Pool } from '../../src/provision/pool.js';
import { silentLogger } from '../../src/log/logger.js';
import type { EventBus } from '../../src/events.js';

/** A backend whose machines are started by the test. */
export class RecordingBackend implements Backend {
  readonly kind = 'local';
  readonly requests: Shape[] = [];
  constructor(readonly shape: Shape) {}
  async shapes(): Promise<Shape[]> {
    return [this.shape];
  }
  async provision(shape: Shape): Promise<{ engineId: string; name: string }> {
    this.requests.push(shape);
    return { engineId: String(this.requests.length), name: `prov-${this.requests.length}` };
  }
  async reconcile(ids: string[]): Promise<Map<string, EngineState>> {
    return new Map(ids.map((id) => [id, { state: 'running', reason: '' }]));
  }
  async stop(): Promise<void> {}
  owns(): boolean {
    return false;
  }
  gone(id: string): string {
    return `test machine ${id} is gone`;
  }
  logOf(id: string): string {
    return `/nonexistent/test-machine-${id}.log`;
  }
  describe(id: string): string {
    return id ? `test machine ${id}` : 'starting a test machine';
  }
  killNow(): void {}
  async close(): Promise<void> {}
}

/** A provisioner named `test` over a RecordingBackend with `shape`: pass `make` to startServer({ provisioning }). */
export function testProvisioner(shape: Shape): {
  backend: RecordingBackend;
  make: (events: EventBus) => ProvisioningLoop;
} {
  const backend = new RecordingBackend(shape);
  const make = (events: EventBus) => {
    let loop: ProvisioningLoop | undefined;
    const pool = new Pool({ name: 'test', maxMachines: 4, idleTimeoutMs: 60_000, startTimeoutMs: 60_000 }, backend, {
      events,
      log: silentLogger,
      changed: () => loop?.replan(),
    });
    loop = new ProvisioningLoop([pool], silentLogger);
    return loop;
  };
  return { backend, make };
}
