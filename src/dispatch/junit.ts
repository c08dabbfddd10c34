/**
 * JUnit XML for a batch (SPEC D7): one testsuite, one testcase per job in file order with its
 * time (s), status and recent output. failed / timed_out → <failure>, spawn_error / error /
 * cancelled → <error>, skipped → <skipped>. Built with xmlbuilder2, which escapes text and replaces characters
 * XML cannot hold (control bytes from job output) with U+FFFD.
 */
import { writeFileSync } from 'node:fs';
import { create } from 'xmlbuilder2';
import type { JobResult } from './job.js';
import { endText } from './reporter.js';

/** The JUnit XML text for `results`; `wallMs` is the batch's wall time. */
export function junitXml(results: readonly JobResult[], wallMs: number, suite = 'berth dispatch'): string {
  const count = (pred: (r: JobResult) => boolean) => String(results.filter(pred).length);
  const doc = create({ version: '1.0', encoding: 'UTF-8', invalidCharReplacement: '\uFFFD' });
  const attrs = {
    name: suite,
    tests: String(results.length),
    failures: count((r) => r.status === 'failed' || r.status === 'timed_out'),
    errors: count((r) => r.status === 'spawn_error' || r.status === 'error' || r.status === 'cancelled'),
    skipped: count((r) => r.status === 'skipped'),
    time: (wallMs / 1000).toFixed(3),
  };
  const ts = doc.ele('testsuites', attrs).ele('testsuite', attrs);
  for (const r of results) {
    const tc = ts.ele('testcase', { name: r.name, classname: 'dispatch', time: (r.durationMs / 1000).toFixed(3) });
    const message = `${r.status}: ${endText(r)}`;
    if (r.status === 'failed') tc.ele('failure', { message, type: 'failed' }).txt(message);
    else if (r.status === 'timed_out') tc.ele('failure', { message, type: 'timed_out' }).txt(message);
    else if (r.status === 'spawn_error' || r.status === 'error' || r.status === 'cancelled')
      tc.ele('error', { message, type: r.status }).txt(message);
    else if (r.status === 'skipped') tc.ele('skipped', { message: 'not started: the batch was stopped' });
    if (r.tail !== '') tc.ele('system-out').txt(r.tail);
  }
  return doc.end({ prettyPrint: true });
}

/** Writes the JUnit XML to `file`. @throws Error from the file system. */
export function writeJunit(file: string, results: readonly JobResult[], wallMs: number): void {
  writeFileSync(file, junitXml(results, wallMs));
}
