/**
 * The etcd client of a clustered server (issue 20): dials the `--store etcd://…` endpoints, over TLS when
 * `--etcd-ca` (or a client certificate) is given, with `--etcd-user` and the password read from
 * `--etcd-password-file`. Every unary call has a deadline, so no store write or read can hang the server.
 */
import { Etcd3 } from 'etcd3';
import { readFlagFile } from '../config/fields.js';
import type { ServeOptions } from '../config/serve-options.js';

/** Deadline of each unary etcd call (a txn, a range, a lease grant), in ms. */
export const ETCD_CALL_MS = 5000;

/**
 * A client of the endpoints in `options.store`.
 * @throws Error `--etcd-…: cannot read '<file>': …` when a TLS or password file cannot be read.
 */
export function etcdClient(options: ServeOptions): Etcd3 {
  if (!options.store) throw new Error('etcdClient: no --store etcd://… given');
  const tls = Boolean(options.etcdCa || options.etcdCert);
  const password = options.etcdPasswordFile
    ? readFlagFile('--etcd-password-file', options.etcdPasswordFile).toString('utf8').split(/\r?\n/)[0]
    : undefined;
  return new Etcd3({
    hosts: options.store.endpoints.map((e) => `${tls ? 'https' : 'http'}://${e}`),
    dialTimeout: 2000,
    defaultCallOptions: (c) => (c.isStream ? {} : { deadline: Date.now() + ETCD_CALL_MS }),
    credentials: tls
      ? {
          // no --etcd-ca: the system's roots (grpc-js reads null so; etcd3's type wants a Buffer)
          rootCertificate: options.etcdCa ? readFlagFile('--etcd-ca', options.etcdCa) : (null as unknown as Buffer),
          privateKey: options.etcdKey ? readFlagFile('--etcd-key', options.etcdKey) : undefined,
          certChain: options.etcdCert ? readFlagFile('--etcd-cert', options.etcdCert) : undefined,
        }
      : undefined,
    auth: options.etcdUser && password !== undefined ? { username: options.etcdUser, password } : undefined,
  });
}

/** The etcd key prefix of `cluster`: `/berth/<cluster>`. */
export function clusterPrefix(cluster: string): string {
  return `/berth/${cluster}`;
}
