/**
 * Client-side connection options shared by CLI commands that dial berth (`status`, `dispatch
 * --server`, `worker`): address and token, from flags or BERTH_SERVER / BERTH_TOKEN.
 */
import { credentials, Metadata, type ChannelCredentials } from '@grpc/grpc-js';
import { z } from 'zod';
import { address, parseOptions } from '../config/fields.js';

/** Default address clients dial. */
export const DEFAULT_SERVER = '127.0.0.1:50051';

/** Where to dial and with what token. */
export interface ClientOptions {
  server: string;
  token?: string;
}

const schema = z.object({ server: address.default(DEFAULT_SERVER), token: z.string().min(1).optional() });

/** Validates `--server`/`--token` (falling back to BERTH_SERVER/BERTH_TOKEN). @throws OptionsError. */
export function resolveClientOptions(flags: { server?: string; token?: string }, env: NodeJS.ProcessEnv = process.env): ClientOptions {
  const raw = { server: flags.server ?? (env.BERTH_SERVER || undefined), token: flags.token ?? (env.BERTH_TOKEN || undefined) };
  return parseOptions(schema, raw, { server: flags.server ? '--server' : 'BERTH_SERVER', token: flags.token ? '--token' : 'BERTH_TOKEN' });
}

/** Plaintext credentials (TLS clients are configured by the engine's own client). */
export function channelCredentials(): ChannelCredentials {
  return credentials.createInsecure();
}

/** Call metadata carrying the token, when there is one. */
export function authMetadata(token?: string): Metadata {
  const md = new Metadata();
  if (token) md.set('authorization', `Bearer ${token}`);
  return md;
}
