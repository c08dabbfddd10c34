/**
 * Test child: logs lines through berth's process logger (JSON, buffered) and then dies of an uncaught
 * exception, so a test can check the lines reach stderr, in order, before the crash's stack.
 * argv[2]: how many lines to log (default 3).
 */
import { createLogger } from '../../src/log/logger.js';

const log = createLogger('info', false);
const n = Number(process.argv[2] ?? 3);
for (let i = 1; i <= n; i++) log.info({ i }, `line ${i}`);
setTimeout(() => {
  throw new Error('crash after logging');
}, 5);
