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
 * How to reach etcd: endpoints, TLS material and credentials, as plain data (it is handed to the lease renewer's
 * thread, renewer.ts, which dials etcd on a connection of its own).
 */
export interface EtcdConnection {
  hosts: string[];
  credentials?: { rootCertificate: Buffer; privateKey?: Buffer; certChain?: Buffer };
  auth?: { username: string; password: string };
}

/**
 * The connection `options.store` names.
 * @throws Error `--etcd-…: cannot read '<file>': …` when a TLS or password file cannot be read.
 */
export function etcdConnection(options: ServeOptions): EtcdConnection {
  if (!options.store) throw new Error('etcdConnection: no --store etcd://… given');
  const tls = Boolean(options.etcdCa || options.etcdCert);
  const password = options.etcdPasswordFile
    ? readFlagFile('--etcd-password-file', options.etcdPasswordFile).toString('utf8').split(/\r?\n/)[0]
    : undefined;
  return {
    hosts: options.store.endpoints.map((e) => `${tls ? 'https' : 'http'}://${e}`),
    credentials: tls
      ? {
          // no --etcd-ca: the system's roots (grpc-js reads null so; etcd3's type wants a Buffer)
          rootCertificate: options.etcdCa ? readFlagFile('--etcd-ca', options.etcdCa) : (null as unknown as Buffer),
          privateKey: options.etcdKey ? readFlagFile('--etcd-key', options.etcdKey) : undefined,
          certChain: options.etcdCert ? readFlagFile('--etcd-cert', options.etcdCert) : undefined,
        }
      : undefined,
    auth: options.etcdUser && password !== undefined ? { username: options.etcdUser, password } : undefined,
  };
}

/**
 * A client on `connection`, every unary call with a deadline of ETCD_CALL_MS, and no receive limit below etcd's own
 * client's (`MaxCallRecvMsgSize`, 2 GiB): gRPC's default of 4 MiB would refuse a page of large journal records.
 */
export function etcdClient(connection: EtcdConnection): Etcd3 {
  return new Etcd3({
    ...connection,
    grpcOptions: { 'grpc.max_receive_message_length': 2 ** 31 - 1 },
    dialTimeout: 2000,
    defaultCallOptions: (c) => (c.isStream ? {} : { deadline: Date.now() + ETCD_CALL_MS }),
  });
}

/** The etcd key prefix of `cluster`: `/berth/<cluster>`. */
export function clusterPrefix(cluster: string): string {
  return `/berth/${cluster}`;
}
