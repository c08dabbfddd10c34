/**
 * Priority classes limited to tenants (SPEC Q1, issue 22 item 1: "a tenant may be limited to some classes"), through
 * the real server with per-client tokens: a class listing `tenants` may be named only by those clients
 * (PERMISSION_DENIED naming `ask.priority_class` and who may); a bare priority is at most the highest class open to
 * the caller (PERMISSION_DENIED naming `ask.priority`), so a number cannot skip the restriction; groups likewise; a
 * default class with tenants is a config error naming the key.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import type { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { resolveServeOptions } from '../../src/config/serve-options.js';
import { claim } from '../support/claims.js';
import { claimGroup } from '../support/groups.js';
import { clientWithToken } from '../support/token-client.js';
import { startServer, type TestServer } from '../support/server.js';

const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-0123456789abcdef01';
const CLASSES = `priority_classes:
  urgent: { value: 100, tenants: [alice] }
  normal: { value: 10 }
  batch: { value: 0, default: true }
`;

let dir = '';
const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = '';
});

/** A server with alice's and bob's tokens and CLASSES in its config file. */
async function serve(config = CLASSES): Promise<TestServer> {
  dir = mkdtempSync(join(tmpdir(), 'berth-class-tenants-'));
  writeFileSync(join(dir, 'clients.yaml'), `alice: ${ALICE}\nbob: ${BOB}\n`);
  writeFileSync(join(dir, 'berth.yaml'), config);
  const t = await startServer({
    cpus: 4,
    flags: {
      clientTokens: join(dir, 'clients.yaml'),
      token: 'shared-token-0123456789',
      config: join(dir, 'berth.yaml'),
    },
  });
  open.push(() => t.close());
  return t;
}

/** A client whose every call carries `token`, closed after the test. */
function clientWith(address: string, token: string): PlacementServiceClient {
  const c = clientWithToken(address, token);
  open.push(() => c.close());
  return c;
}

describe('a class open to some tenants only', () => {
  it('is granted to alice, refused to bob naming the field and who may; a bare number cannot skip it', async () => {
    const t = await serve();
    const alice = clientWith(t.address, ALICE);
    const bob = clientWith(t.address, BOB);
    const a = claim(alice, { cpus: 1, priorityClass: 'urgent' });
    await a.granted;
    await a.release();

    const refused = await claim(bob, { cpus: 1, priorityClass: 'urgent' }).ended;
    expect(refused?.code).toBe(status.PERMISSION_DENIED);
    expect(refused?.details).toBe('ask.priority_class: class "urgent" is not open to client bob (open to: alice)');
    const bare = await claim(bob, { cpus: 1, priority: 50 }).ended;
    expect(bare?.code).toBe(status.PERMISSION_DENIED);
    expect(bare?.details).toBe('ask.priority: at most 10 for client bob (the highest class open to it; got 50)');
    const ok = claim(bob, { cpus: 1, priority: 10 }); // up to `normal`, open to all
    await ok.granted;
    await ok.release();
    const group = await claimGroup(bob, [{ cpus: 1 }], undefined, undefined, { priorityClass: 'urgent' }).ended;
    expect(group?.code).toBe(status.PERMISSION_DENIED);
    expect(group?.details).toMatch(/^priority_class: class "urgent" is not open to client bob/);
  });

  it('a default class with tenants is a config error naming the key', async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-class-tenants-'));
    const path = join(dir, 'berth.yaml');
    writeFileSync(path, 'priority_classes:\n  batch: { value: 0, default: true, tenants: [alice] }\n');
    expect(() => resolveServeOptions({ config: path }, {})).toThrow(
      /berth\.yaml.*priority_classes\.batch\.tenants: the default class is every caller's: no tenants/,
    );
  });
});
