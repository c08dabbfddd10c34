/**
 * A provisioner's ledger (SPEC V3, start-up reconcile): the machines it started and that are not
 * yet gone, kept in `<state-dir>/<name>.machines.json`, so that a server started after a crash
 * adopts what the previous one left instead of leaving it running. Emptied on a clean shutdown.
 */
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type { Shape } from '../placement/provisioner.js';

/** One started machine: its engine id, worker name and shape. */
export interface LedgerEntry {
  engineId: string;
  name: string;
  shape: Shape;
}

/** The ledger file at `path` (no file at all when `path` is undefined). */
export class Ledger {
  constructor(readonly path: string | undefined) {}

  /** What the file lists; [] when there is none or it cannot be read. */
  read(): LedgerEntry[] {
    if (!this.path) return [];
    try {
      const list = JSON.parse(readFileSync(this.path, 'utf8')) as unknown;
      const ok = (e: LedgerEntry) =>
        typeof e?.engineId === 'string' && typeof e?.name === 'string' && typeof e?.shape?.cpus === 'number';
      return Array.isArray(list) ? list.filter(ok) : [];
    } catch {
      return [];
    }
  }

  /** Replaces the list (a temporary file, then rename). @throws Error when the state dir cannot be written. */
  write(list: LedgerEntry[]): void {
    if (!this.path) return;
    writeFileSync(`${this.path}.tmp`, JSON.stringify(list));
    renameSync(`${this.path}.tmp`, this.path);
  }

  /** Removes the file. @throws Error when it cannot. */
  clear(): void {
    if (this.path) rmSync(this.path, { force: true });
  }
}
