/**
 * The agent attaches over mutual TLS (SPEC R2) with certificates made by openssl for the test.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkerAgent } from '../../src/agent/agent.js';
import { silentLogger } from '../../src/log/logger.js';
import { startServer } from '../support/server.js';

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'berth-tls-'));
  const script = `set -e
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=berth-test-ca 2>/dev/null
for who in server client; do
  openssl req -newkey rsa:2048 -nodes -keyout $who.key -out $who.csr -subj /CN=$who 2>/dev/null
  # The worker's name must be its certificate's name (SPEC R7): the client certificate names 'secure'.
  if [ $who = server ]; then san=IP:127.0.0.1,DNS:localhost; else san=DNS:secure; fi
  printf 'subjectAltName=%s\\n' "$san" > $who.ext
  openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $who.pem -days 1 \
-extfile $who.ext 2>/dev/null
done`;
  execFileSync('bash', ['-c', script], { cwd: dir });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('berth worker over TLS', () => {
  it('attaches to a mutual-TLS server with --tls-ca, --tls-cert and --tls-key', async () => {
    const f = (n: string) => join(dir, n);
    const s = await startServer({
      cpus: 1,
      flags: { tlsCert: f('server.pem'), tlsKey: f('server.key'), tlsCa: f('ca.pem') },
    });
    const agent = new WorkerAgent(
      {
        server: s.address,
        name: 'secure',
        labels: [],
        inventory: { cpus: 1, gpuIds: [] },
        maxParallel: 0,
        graceMs: 1000,
        tls: { ca: f('ca.pem'), cert: f('client.pem'), key: f('client.key') },
      },
      silentLogger,
    );
    try {
      const attached = agent.nextAttach();
      agent.start();
      await attached;
      expect(s.server.context.placer.snapshot().machines.map((m) => m.name)).toContain('secure');
    } finally {
      await agent.stop();
      await s.close();
    }
  });
});
