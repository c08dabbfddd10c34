// The lease renewer of a clustered server (SPEC S7, issue 20), run in a worker thread of its own (renewer.ts starts
// it) so that no work on the server's event loop — a takeover restoring thousands of claims, their holders all
// resuming, a long GC pause — can delay a keep-alive. It grants the candidate's lease on its own etcd connection,
// sends one keep-alive every `intervalMs` (each its own request with a deadline of `callMs`), and stores the send
// time of the newest one etcd answered in `renewed[0]` (ms since the Unix epoch): the leader's deadline is that
// plus the TTL less a margin, read by the main thread without waiting for any message. Plain JavaScript: the
// build copies this file next to the bundle (bin/build.mjs).
// Messages to the parent: { type: 'granted', id } | { type: 'failed', message } | { type: 'lost', message } |
// { type: 'revoked' }. From the parent: { type: 'revoke' } (revokes the lease, then the thread ends).
import { parentPort, workerData } from 'node:worker_threads';
import { Etcd3 } from 'etcd3';

const { connection, ttlS, intervalMs, callMs, renewed } = workerData;
const sentAt = new BigInt64Array(renewed);
// Buffers reach a thread as plain Uint8Arrays; grpc-js wants Buffers (a null root certificate: the system's roots)
const buffer = (b) => (b ? Buffer.from(b.buffer, b.byteOffset, b.byteLength) : b);
const tls = connection.credentials;
const credentials = tls && {
  rootCertificate: buffer(tls.rootCertificate),
  privateKey: buffer(tls.privateKey),
  certChain: buffer(tls.certChain),
};
const client = new Etcd3({ ...connection, credentials, dialTimeout: 2000 });
/** Stores `t` as the newest answered send time unless a later one was stored already. */
function renewedAt(t) {
  for (;;) {
    const old = Atomics.load(sentAt, 0);
    if (old >= BigInt(t) || Atomics.compareExchange(sentAt, 0, old, BigInt(t)) === old) return;
  }
}

let over = false;
let granted = false;
const granting = Date.now();
const lease = client.lease(ttlS, { autoKeepAlive: false, deadline: granting + callMs });
lease.on('lost', (err) => {
  if (over || !granted) return; // a failed grant is reported as 'failed'
  over = true;
  clearInterval(timer);
  parentPort.postMessage({ type: 'lost', message: err.message });
});
let timer;
try {
  const id = await lease.grant();
  if (typeof id !== 'string') throw id; // etcd3 resolves a failed grant with its error
  granted = true;
  renewedAt(granting);
  parentPort.postMessage({ type: 'granted', id });
  timer = setInterval(() => {
    const t = Date.now();
    lease.keepaliveOnce({ deadline: t + callMs }).then(
      () => renewedAt(t),
      () => undefined, // unanswered: the parent's deadline decides; an expired lease fires 'lost'
    );
  }, intervalMs);
} catch (err) {
  over = true;
  parentPort.postMessage({ type: 'failed', message: err.message });
}

parentPort.on('message', async (m) => {
  if (m.type !== 'revoke') return;
  over = true;
  clearInterval(timer);
  await lease.revoke({ deadline: Date.now() + callMs }).catch(() => undefined);
  parentPort.postMessage({ type: 'revoked' });
  client.close();
  parentPort.close();
});
