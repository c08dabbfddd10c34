/**
 * Which server the agent dials next (SPEC S7, issue 20): the `--server` addresses in turn (`a:1,b:2`; a single
 * DNS name with several records is expanded to each of them), and the leader a standby named (its `leader`
 * trailer) before the rest. A whole round of addresses that all failed raises the backoff (backoff.ts, SPEC W6); a
 * step within a round waits only the shortest delay.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

/** One dial target: the address to connect to, and the host name TLS checks when it was a DNS record. */
export interface Target {
  address: string;
  /** Set when `address` is one record of a DNS name: TLS verifies that name (grpc.ssl_target_name_override). */
  serverName?: string;
}

/** Resolves a host name to all its records (default: the system resolver, `dns.lookup` with `all`). */
export type LookupAll = (host: string) => Promise<Array<{ address: string; family: number }>>;

const systemLookup: LookupAll = (host) => lookup(host, { all: true });

/** The agent's list of servers and where it stands in it. */
export class ServerTargets {
  readonly addresses: readonly string[];
  #targets: Target[] = [];
  #next = 0;
  #hint?: string;
  /** Failed dials since the last Welcome; `rounds` is how many whole rounds that makes. */
  #failures = 0;

  /** `spec`: "host:port" or several comma-separated (validated by config/fields.ts `serverList`). */
  constructor(
    spec: string,
    readonly lookupAll: LookupAll = systemLookup,
  ) {
    this.addresses = spec
      .split(',')
      .map((a) => a.trim())
      .filter(Boolean);
  }

  /** Whole rounds of the list that failed since the last Welcome (the backoff attempt). */
  get rounds(): number {
    return Math.floor(this.#failures / Math.max(1, this.#targets.length || this.addresses.length));
  }

  /**
   * The next target: the leader hint if a standby gave one, else the next address in turn. At the start of
   * each round a lone DNS name is resolved again (records change); a failed lookup keeps the name as it is.
   */
  async next(): Promise<Target> {
    const hint = this.#hint;
    this.#hint = undefined;
    if (hint) return { address: hint };
    if (this.#next === 0 || !this.#targets.length) this.#targets = await expand(this.addresses, this.lookupAll);
    const t = this.#targets[this.#next % this.#targets.length];
    this.#next = (this.#next + 1) % this.#targets.length;
    return t;
  }

  /**
   * The dial failed or the stream ended before a Welcome; `leader`: the address a standby named. A standby's
   * answer (`standby`) does not raise the backoff: it answers at once, and during an election the next leader
   * is seconds away, so the agent keeps asking at the shortest delay.
   */
  failed(leader?: string, standby = false): void {
    if (!standby) this.#failures++;
    this.#hint = leader;
  }

  /** A Welcome arrived: the backoff starts over. */
  welcomed(): void {
    this.#failures = 0;
  }

  /**
   * A welcomed stream ended (or was dropped for an older epoch): the next dial goes to `leader` if the
   * ending named one, else to the next address in turn (the same one when there is only one).
   */
  lost(leader?: string): void {
    this.#hint = leader;
  }
}

/** `addresses`, where a lone DNS name (not an IP) with several records becomes one target per record. */
async function expand(addresses: readonly string[], lookupAll: LookupAll): Promise<Target[]> {
  if (addresses.length !== 1) return addresses.map((address) => ({ address }));
  const [only] = addresses;
  const cut = only.lastIndexOf(':');
  const host = only.slice(0, cut);
  const port = only.slice(cut + 1);
  if (isIP(host.replace(/^\[|\]$/g, '')) || host === 'localhost') return [{ address: only }];
  const records = await lookupAll(host).catch(() => []);
  if (records.length < 2) return [{ address: only }];
  return records.map((r) => ({
    address: r.family === 6 ? `[${r.address}]:${port}` : `${r.address}:${port}`,
    serverName: host,
  }));
}
