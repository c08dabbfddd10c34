/**
 * Placeholder for RPCs that a later issue builds: answers UNIMPLEMENTED saying so.
 */
import { BerthError } from '../../errors.js';

/** Throws UNIMPLEMENTED naming the RPC and the issue that builds it. */
export function notBuilt(rpc: string, issue: string): never {
  throw new BerthError('unimplemented', `${rpc} is not implemented yet (${issue})`);
}
