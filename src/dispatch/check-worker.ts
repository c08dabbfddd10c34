/**
 * Entry point of `berth dispatch`'s input check when run on a worker thread (built to
 * dist/dispatch-check.js; checked-input.ts starts it): checks the CheckRequest it is given as
 * workerData (check.ts) and posts back the CheckReply — the options and jobs, or the error (its
 * name and message) that refuses them.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { checkRequest } from './check.js';
import type { CheckRequest } from './checked-input.js';

parentPort!.postMessage(await checkRequest(workerData as CheckRequest));
