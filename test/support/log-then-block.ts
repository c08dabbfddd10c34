/**
 * Test child: logs one line through berth's process logger (JSON, buffered), then blocks the event loop
 * on a synchronous read of stdin (as start-up work can hold it) until the parent has seen that line and
 * answers; then logs a second line and exits 0.
 */
import { readSync } from 'node:fs';
import { createLogger } from '../../src/log/logger.js';

const log = createLogger('info', false);
log.info('first, while the loop is about to be held');
readSync(0, Buffer.alloc(16));
log.info('second, after the answer');
