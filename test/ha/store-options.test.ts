/**
 * The etcd options of `berth serve` (issue 20): `--store etcd://h:p[,h:p…]`, `--cluster`, `--leader-ttl` and the
 * etcd TLS and credentials flags, each refused with an error naming the flag and the value; the embedded journal
 * stays the default.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveServeOptions } from '../../src/config/serve-options.js';

const dir = mkdtempSync(join(tmpdir(), 'berth-etcd-opts-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const pem = join(dir, 'x.pem');
writeFileSync(pem, 'x');
const resolve = (flags: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) =>
  resolveServeOptions({ stateDir: dir, ...flags }, env);

describe('serve options for etcd', () => {
  it('the embedded journal is the default; --store etcd:// parses its endpoints, cluster and TTL default', () => {
    expect(resolve({}).store).toBeUndefined();
    expect(resolve({ store: 'embedded' }).store).toBeUndefined();
    const o = resolve({ store: 'etcd://10.0.0.1:2379, etcd-2:2379/' });
    expect(o.store?.endpoints).toEqual(['10.0.0.1:2379', 'etcd-2:2379']);
    expect([o.cluster, o.leaderTtl]).toEqual(['default', 5]);
    const e = resolve({}, { BERTH_STORE: 'etcd://h:1', BERTH_CLUSTER: 'lab', BERTH_LEADER_TTL: '3' });
    expect([e.store?.endpoints, e.cluster, e.leaderTtl]).toEqual([['h:1'], 'lab', 3]);
  });

  it.each([
    [{ store: 'http://h:2379' }, /^--store: expected 'embedded' or etcd:\/\/host:port.*\(got "http:\/\/h:2379"\)/],
    [{ store: 'etcd://h' }, /^--store: endpoint 'h' is not host:port/],
    [{ store: 'etcd://h:1,,h:2' }, /^--store: endpoint '' is not host:port/],
    [{ store: 'etcd://h:1', cluster: 'a/b' }, /^--cluster: names are letters, digits/],
    [{ store: 'etcd://h:1', leaderTtl: '1' }, /^--leader-ttl: must be at least 2 \(got "1"\)/],
    [{ store: 'etcd://h:1', leaderTtl: '2.5' }, /^--leader-ttl: expected a whole number/],
    [{ store: 'etcd://h:1', etcdCa: join(dir, 'none.pem') }, /^--etcd-ca: cannot read/],
    [{ etcdCa: pem }, /^--etcd-ca needs --store etcd:\/\/host:port/],
    [{ store: 'etcd://h:1', etcdCert: pem }, /--etcd-cert and --etcd-key must be given together/],
    [{ store: 'etcd://h:1', etcdUser: 'u' }, /--etcd-user and --etcd-password-file must be given together/],
    [{ store: 'etcd://h:1', journal: 'off' }, /--store etcd:\/\/h:1 with --journal off/],
  ])('refuses %j naming the flag', (flags, message) => {
    expect(() => resolve(flags)).toThrow(message);
  });
});
