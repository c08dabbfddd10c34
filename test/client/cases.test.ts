/**
 * The shared behaviour list of both clients (test/cases/clients.json, issue 24 item 2) run with the
 * TypeScript BerthClient through real `berth serve` processes and real `berth worker` agents; the
 * Python clients run the same list in test/python/test_cases.py.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { type CaseServer, readCases, startCaseServer } from '../support/case-servers.js';
import { runCase } from './case-runner.js';

const file = readCases();

for (const [name, spec] of Object.entries(file.servers)) {
  const cases = file.cases.filter((c) => c.server === name);
  describe(`shared client cases on the ${name} server`, () => {
    let server: CaseServer | undefined;
    beforeAll(async () => {
      server = await startCaseServer(spec);
    }, 60_000);
    afterAll(async () => {
      await server?.stop();
    });
    for (const c of cases) it(c.id as string, () => runCase(c, server!), 60_000);
  });
}
