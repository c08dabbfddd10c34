/**
 * Who an agent is (SPEC S2, R7): `agent_id` names the agent across its restarts — its host and its
 * absolute state directory (or, with none, its worker name); `instance_id` names this start of it, so
 * the server can tell a reconnect (same instance, its held calls still run) from a restart (a new
 * instance holds none of the old one's calls).
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { resolve } from 'node:path';

/** `<host>:<absolute state dir>`, or `<host>:<name>` when the agent has no state directory. */
export function agentId(stateDir: string | undefined, name: string): string {
  return `${os.hostname()}:${stateDir ? resolve(stateDir) : name}`;
}

/** A fresh instance id: 96 random bits, base64url. */
export function newInstanceId(): string {
  return randomBytes(12).toString('base64url');
}
