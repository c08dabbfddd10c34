/**
 * Resume tokens (SPEC S3): the secret every Granted carries so that the claim's holder can take it
 * back after its stream broke. 128 random bits; the server keeps only the SHA-256 (a journal stores
 * the same). Never logged, never put in an event.
 */
import { createHash, randomFillSync } from 'node:crypto';

/** Random bytes for 256 tokens, refilled when used up: one CSPRNG call per 256 grants, as randomUUID does. */
const pool = Buffer.allocUnsafe(16 * 256);
let used = pool.length;

/**
 * A fresh resume token: 16 random bytes (128 bits, from the CSPRNG) as base64url (22 characters).
 * Pooled: ~0.7 µs instead of ~10 µs for randomBytes(16) per grant (measured, node -e, 200,000 tokens).
 */
export function newResumeToken(): string {
  if (used === pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const token = pool.toString('base64url', used, used + 16);
  used += 16;
  return token;
}

/** What the server keeps of a token (and what a journal stores): its SHA-256, 32 bytes. */
export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}
