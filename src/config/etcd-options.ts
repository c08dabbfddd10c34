/**
 * The etcd options of `berth serve` (issue 20, SPEC S7): `--store etcd://host:port[,host:port…]` and the TLS and
 * credentials options named as etcd's own clients name them. Parsed here; dialled by src/ha/etcd-client.ts.
 */
import * as z from 'zod';
import { OptionsError } from './fields.js';

const ENDPOINT = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):(\d{1,5})$/;

/**
 * `--store`: `etcd://host:port[,host:port…]` → `{ url, endpoints }` (endpoints as `host:port`); `embedded` (or
 * unset) is the journal under --state-dir. Refused: another scheme, no endpoint, an endpoint that is not host:port.
 */
export const storeUrl = z.string().transform((s, ctx) => {
  const url = s.trim();
  if (url === 'embedded') return undefined;
  if (!url.startsWith('etcd://')) {
    ctx.addIssue({ code: 'custom', message: "expected 'embedded' or etcd://host:port[,host:port…]" });
    return z.NEVER;
  }
  const endpoints = url
    .slice('etcd://'.length)
    .replace(/\/+$/, '')
    .split(',')
    .map((e) => e.trim());
  const bad = endpoints.find((e) => {
    const m = ENDPOINT.exec(e);
    return m === null || Number(m[2]) > 65535;
  });
  if (bad !== undefined) {
    ctx.addIssue({ code: 'custom', message: `endpoint '${bad}' is not host:port, e.g. etcd://127.0.0.1:2379` });
    return z.NEVER;
  }
  return { url, endpoints };
});

/** The etcd store as resolved: endpoints, cluster and how to authenticate to etcd. */
export interface EtcdSettings {
  endpoints: string[];
  cluster: string;
  ca?: string;
  cert?: string;
  key?: string;
  user?: string;
  passwordFile?: string;
}

/** The option keys checked together below (a subset of ServeOptions). */
interface EtcdRaw {
  store?: { url: string; endpoints: string[] };
  journal: 'on' | 'off';
  etcdCa?: string;
  etcdCert?: string;
  etcdKey?: string;
  etcdUser?: string;
  etcdPasswordFile?: string;
}

/**
 * The combinations a single flag cannot check.
 * @throws OptionsError naming the flags: --etcd-* without --store etcd://…, --store etcd with --journal off,
 *   --etcd-cert without --etcd-key (or the reverse), --etcd-user without --etcd-password-file (or the reverse).
 */
export function checkEtcdOptions(o: EtcdRaw): void {
  const given = (['etcdCa', 'etcdCert', 'etcdKey', 'etcdUser', 'etcdPasswordFile'] as const).filter((k) => o[k]);
  if (!o.store && given.length) {
    const flag = given[0].replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    throw new OptionsError(`--${flag} needs --store etcd://host:port (the embedded journal uses no etcd)`);
  }
  if (o.store && o.journal === 'off') {
    throw new OptionsError(`--store ${o.store.url} with --journal off: the etcd store is the journal; drop one`);
  }
  if (Boolean(o.etcdCert) !== Boolean(o.etcdKey)) {
    throw new OptionsError('--etcd-cert and --etcd-key must be given together');
  }
  if (Boolean(o.etcdUser) !== Boolean(o.etcdPasswordFile)) {
    throw new OptionsError('--etcd-user and --etcd-password-file must be given together');
  }
}
