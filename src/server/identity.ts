/**
 * Who is calling (SPEC R2, R7). Clients: a name from `--client-tokens` or from their certificate
 * under mutual TLS, else the shared identity ('') of `--token` holders. Workers: names bound by
 * their certificate (a SAN DNS name when present, else the CN) and by their `--worker-tokens`
 * token; a Hello must name what its credentials bind. Token files are re-read by `reload()` (SIGHUP).
 */
import type { Metadata } from '@grpc/grpc-js';
import type { AuthContext } from '@grpc/grpc-js/build/src/auth-context.js';
import { timingSafeEqual } from 'node:crypto';
import type { PeerCertificate } from 'node:tls';
import { readTokenFile, type TokenMap } from '../config/token-file.js';
import { BerthError } from '../errors.js';
import type { WorkerCredential } from '../workers/credential.js';

/**
 * UNAUTHENTICATED detail for a call without a token: what to send, for any gRPC client (grpcurl `-H`),
 * and berth's own (SPEC R2).
 */
export const MISSING_TOKEN =
  "missing token: send metadata 'authorization: Bearer <token>' (berth's CLI, workers and clients read BERTH_TOKEN)";

export type { WorkerCredential } from '../workers/credential.js';

/** A client as the RPC handlers see it. `scoped`: client identities are configured (SPEC R7). */
export interface Caller {
  /** Owner key of what it claims and runs: a token or certificate name, '' for the shared identity. */
  name: string;
  scoped: boolean;
}

/** Settings: the shared token, the token files, and whether clients present verified certificates. */
export interface IdentityOptions {
  token?: string;
  workerTokens?: string;
  clientTokens?: string;
  mtls: boolean;
}

/** A call as far as identity goes: its metadata and, under TLS, its peer certificate. */
export interface CallCredentials {
  metadata: Metadata;
  getAuthContext?: () => AuthContext | null;
}

/** The identities of one server. */
export class Identities {
  #workers?: TokenMap;
  #clients?: TokenMap;

  /** @throws OptionsError for an unreadable or bad token file. */
  constructor(readonly o: IdentityOptions) {
    this.reload();
  }

  /**
   * Re-reads both token files (SIGHUP). All or nothing: on error the old tokens stay.
   * @throws OptionsError naming the flag and file.
   */
  reload(): void {
    const workers = this.o.workerTokens ? readTokenFile('--worker-tokens', this.o.workerTokens) : undefined;
    const clients = this.o.clientTokens ? readTokenFile('--client-tokens', this.o.clientTokens) : undefined;
    this.#workers = workers;
    this.#clients = clients;
  }

  /** True when client calls are scoped to their identity (client tokens or mutual TLS). */
  get clientScoped(): boolean {
    return Boolean(this.o.clientTokens) || this.o.mtls;
  }

  /**
   * The client making `call`.
   * @throws BerthError unauthenticated when a token is required and missing or wrong.
   */
  client(call: CallCredentials): Caller {
    const given = bearer(call.metadata);
    const scoped = this.clientScoped;
    const byToken = given ? lookup(this.#clients, given) : undefined;
    if (byToken !== undefined) return { name: byToken, scoped };
    const needed = Boolean(this.o.token) || Boolean(this.o.clientTokens);
    if (needed && !(given && this.o.token && sameSecret(given, this.o.token))) {
      throw new BerthError('unauthenticated', given ? 'wrong token' : MISSING_TOKEN);
    }
    const cert = this.#peerCertificate(call);
    return { name: cert ? certNames(cert)[0] : '', scoped };
  }

  /**
   * The credentials of a worker stream.
   * @throws BerthError unauthenticated for a missing or wrong token; permission_denied for the
   *   shared token when `--worker-tokens` binds worker names.
   */
  worker(call: CallCredentials): WorkerCredential {
    const given = bearer(call.metadata);
    const tokenName = given ? lookup(this.#workers, given) : undefined;
    const shared = Boolean(given && this.o.token && sameSecret(given, this.o.token));
    const needed = Boolean(this.o.token) || Boolean(this.o.workerTokens);
    if (tokenName === undefined) {
      if (needed && !shared) {
        throw new BerthError('unauthenticated', given ? 'wrong token' : MISSING_TOKEN);
      }
      if (this.o.workerTokens) {
        throw new BerthError(
          'permission_denied',
          "this server binds worker names to tokens (--worker-tokens): attach with the worker's own token, " +
            'not the shared one',
        );
      }
    }
    const cert = this.#peerCertificate(call);
    if (cert) {
      const names = certNames(cert);
      const describe = `certificate ${describeCert(cert)}`;
      return { certNames: names, tokenName, key: `cert:${cert.fingerprint256}`, describe };
    }
    if (tokenName !== undefined) {
      return { tokenName, key: `token:${tokenName}`, describe: `worker token of '${tokenName}'` };
    }
    return { key: 'shared', describe: this.o.token ? 'the shared token' : 'no credential' };
  }

  /** The verified client certificate of `call`; none without mutual TLS, so its auth context is not even read. */
  #peerCertificate(call: CallCredentials): PeerCertificate | undefined {
    return this.o.mtls ? call.getAuthContext?.()?.sslPeerCertificate : undefined;
  }
}

/** The names a certificate proves: its SAN DNS names when it has any, else its CN. */
export function certNames(cert: PeerCertificate): string[] {
  const sans = (cert.subjectaltname ?? '').split(',').map((s) => s.trim());
  const dns = sans.filter((s) => s.startsWith('DNS:')).map((s) => s.slice(4));
  if (dns.length) return dns;
  const cn = cert.subject?.CN;
  return cn ? [Array.isArray(cn) ? cn[0] : cn] : [];
}

function describeCert(cert: PeerCertificate): string {
  const cn = cert.subject?.CN;
  return `CN=${Array.isArray(cn) ? cn[0] : (cn ?? '')}${cert.subjectaltname ? ` (${cert.subjectaltname})` : ''}`;
}

/** The token of `authorization: Bearer <token>` or `x-berth-token`, '' when none. */
export function bearer(metadata: Metadata): string {
  const auth = String(metadata.get('authorization')[0] ?? '');
  return auth.startsWith('Bearer ') ? auth.slice(7) : String(metadata.get('x-berth-token')[0] ?? '');
}

/** The name holding `given` in `tokens`, compared in constant time per entry. */
function lookup(tokens: TokenMap | undefined, given: string): string | undefined {
  if (!tokens) return undefined;
  let found: string | undefined;
  for (const [token, name] of tokens) if (sameSecret(given, token)) found = name;
  return found;
}

/** True when `a` is `b`, compared in constant time (tokens). */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
