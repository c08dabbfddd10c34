/**
 * A worker's credential as the hub sees it (SPEC R7): the names it binds and the identity key
 * that decides whether a new stream may replace a live one (SPEC W1).
 */
import { BerthError } from '../errors.js';

/** What a worker's credentials prove, checked against its Hello. */
export interface WorkerCredential {
  /** Names the certificate allows (SAN DNS names, else the CN); undefined without mutual TLS. */
  certNames?: string[];
  /** The name of its `--worker-tokens` token; undefined when it used none. */
  tokenName?: string;
  /**
   * Same key = same identity (may replace a live stream, SPEC W1): certificate fingerprint, token
   * name, or 'shared'.
   */
  key: string;
  /** The identity in words, for refusals: e.g. `certificate CN=rogue`. */
  describe: string;
}

/**
 * Checks that a Hello's `name` is what `cred` binds (SPEC R7).
 * @throws BerthError permission_denied saying which credential names what.
 */
export function checkWorkerName(name: string, cred: WorkerCredential): void {
  if (cred.certNames && !cred.certNames.includes(name)) {
    const names = cred.certNames.map((n) => `'${n}'`).join(', ') || 'nothing';
    throw new BerthError(
      'permission_denied',
      `hello.name '${name}' does not match this worker's certificate (it names ${names})`,
    );
  }
  if (cred.tokenName !== undefined && cred.tokenName !== name) {
    const why = `hello.name '${name}' does not match its token's name '${cred.tokenName}'`;
    throw new BerthError('permission_denied', why);
  }
}
