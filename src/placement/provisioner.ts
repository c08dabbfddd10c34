/**
 * Provisioners (SPEC P10): backends that can start machines of known shapes (a local process
 * pool, a Slurm cluster, …). An ask no attached machine can hold but a provisioner covers waits
 * for the machine it starts instead of being clamped.
 */
import type { HostInventory } from '../resources/inventory.js';
import type { NormalizedAsk } from './types.js';

/** A backend that can start machines; started machines attach as workers. */
export interface Provisioner {
  /** Name shown in snapshots. */
  readonly name: string;
  /** True when a machine this provisioner can start would hold `ask`. */
  covers(ask: NormalizedAsk): boolean;
  /** Starts (or requests) a machine for `ask`; resolves once the request is made, not when it attaches. */
  provision(ask: NormalizedAsk): Promise<void>;
  /** Brings the provisioner's view in line with what is attached (names of attached machines). */
  reconcile(attached: string[]): Promise<void>;
  /** Shapes of machines it can start. */
  shapes(): HostInventory[];
  /** Human status, e.g. "idle" or "starting 1 machine". */
  status(): string;
}
