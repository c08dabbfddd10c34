/**
 * Client-side connection options shared by CLI commands that dial berth (`status`, `dispatch
 * --server`, `worker`): address and token, from flags or BERTH_SERVER / BERTH_TOKEN, and TLS like
 * the worker's (issue 13): `--tls-ca` turns TLS on trusting that CA, `--tls-cert` + `--tls-key`
 * add a client certificate (mutual TLS); env BERTH_TLS_CA / BERTH_TLS_CERT / BERTH_TLS_KEY.
 */
import { credentials, Metadata, type ChannelCredentials } from '@grpc/grpc-js';
import * as z from 'zod';
import { OptionsError, parseOptions, readableFile, readFlagFile, serverList } from '../config/fields.js';

/** Default address clients dial. */
export const DEFAULT_SERVER = '127.0.0.1:50051';

/** Where to dial, with what token, and over TLS when `tlsCa` is set (PEM file paths). */
export interface ClientOptions {
  server: string;
  token?: string;
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
}

/** The flags a dialling command accepts. */
export interface ClientFlags {
  server?: string;
  token?: string;
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
}

const schema = z.object({
  server: serverList.default(DEFAULT_SERVER),
  token: z.string().min(1).optional(),
  tlsCa: readableFile.optional(),
  tlsCert: readableFile.optional(),
  tlsKey: readableFile.optional(),
});

const ENV: Record<keyof ClientFlags, [flag: string, env: string]> = {
  server: ['--server', 'BERTH_SERVER'],
  token: ['--token', 'BERTH_TOKEN'],
  tlsCa: ['--tls-ca', 'BERTH_TLS_CA'],
  tlsCert: ['--tls-cert', 'BERTH_TLS_CERT'],
  tlsKey: ['--tls-key', 'BERTH_TLS_KEY'],
};

/**
 * Validates `--server`/`--token`/`--tls-*` (falling back to BERTH_SERVER, BERTH_TOKEN, BERTH_TLS_*).
 * @throws OptionsError naming the flag or env var: a bad address, an unreadable PEM file, a
 *   certificate without its key, a client certificate without `--tls-ca`.
 */
export function resolveClientOptions(flags: ClientFlags, env: NodeJS.ProcessEnv = process.env): ClientOptions {
  const raw: Record<string, unknown> = {};
  const names: Record<string, string> = {};
  for (const [key, [flag, envName]] of Object.entries(ENV)) {
    raw[key] = flags[key as keyof ClientFlags] ?? (env[envName] || undefined);
    names[key] = flags[key as keyof ClientFlags] !== undefined ? flag : envName;
  }
  const o: ClientOptions = parseOptions(schema, raw, names);
  if ((o.tlsCert === undefined) !== (o.tlsKey === undefined))
    throw new OptionsError('--tls-cert and --tls-key must be given together');
  if (o.tlsCert && !o.tlsCa)
    throw new OptionsError('--tls-cert needs --tls-ca (the CA that signed the server certificate)');
  return o;
}

/** PEM material for channelCredentials: a file path, or the PEM bytes themselves (the TypeScript client's option). */
export type Pem = string | Buffer;

/** The names errors give the three TLS settings: the CLI's flags by default. */
const TLS_FLAGS = { tlsCa: '--tls-ca', tlsCert: '--tls-cert', tlsKey: '--tls-key' } as const;

/**
 * Channel credentials for `o`: plaintext without `tlsCa`; TLS trusting `tlsCa`; mutual TLS with
 * `tlsCert` + `tlsKey`. Each is a PEM file path or PEM bytes; `names` are what errors call them
 * (default the flags). @throws Error `--tls-ca: cannot read '<file>': …` and the like.
 */
export function channelCredentials(
  o: { tlsCa?: Pem; tlsCert?: Pem; tlsKey?: Pem } = {},
  names: Record<keyof typeof TLS_FLAGS, string> = TLS_FLAGS,
): ChannelCredentials {
  if (!o.tlsCa) return credentials.createInsecure();
  const pem = (k: keyof typeof TLS_FLAGS) => {
    const v = o[k];
    return v === undefined || v === '' ? null : typeof v === 'string' ? readFlagFile(names[k], v) : v;
  };
  return credentials.createSsl(pem('tlsCa'), pem('tlsKey'), pem('tlsCert'));
}

/** Call metadata carrying the token, when there is one. */
export function authMetadata(token?: string): Metadata {
  const md = new Metadata();
  if (token) md.set('authorization', `Bearer ${token}`);
  return md;
}

/** The flag table and schema of the dialling commands, read by the generated reference (scripts/gen-reference.ts). */
export { ENV as CLIENT_FLAGS, schema as clientSchema };
