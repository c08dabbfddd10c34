/**
 * Finding the leader among several servers for one call (SPEC S7, issue 20): the CLI's `status`, `drain` and
 * `dispatch --server` try the addresses in turn, and the leader a standby names (its `leader` trailer) next.
 */
import { status } from '@grpc/grpc-js';
import { leaderHint } from './leader-hint.js';

/** The addresses of a `--server` value ("a:1,b:2"). */
export function splitServers(spec: string): string[] {
  return spec
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
}

/**
 * Runs `call(address)` on the addresses of `spec` in turn until one answers, dialling the leader a standby names
 * before the rest (each address at most once). Resolves with the address that answered and its result.
 * @throws the first error that is not UNAVAILABLE (the server answered: no other would do better), else the
 *   last UNAVAILABLE once every address was tried.
 */
export async function onLeader<T>(
  spec: string,
  call: (address: string) => Promise<T>,
): Promise<{ address: string; result: T }> {
  const order = splitServers(spec);
  const tried = new Set<string>();
  let hint: string | undefined;
  let last: unknown;
  for (;;) {
    const address = hint && !tried.has(hint) ? hint : order.shift();
    hint = undefined;
    if (address === undefined) throw last;
    if (tried.has(address)) continue;
    tried.add(address);
    try {
      return { address, result: await call(address) };
    } catch (e) {
      if ((e as { code?: number }).code !== status.UNAVAILABLE) throw e;
      hint = leaderHint(e);
      last = e;
    }
  }
}
