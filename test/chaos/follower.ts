/**
 * A chaos client that follows the leader of a cluster (SPEC S7, issue 20 item 3): one stub per server address,
 * the one believed to lead used for every call; a standby's UNAVAILABLE with its leader hint (the `leader` trailer)
 * moves it to the hinted server, a broken link (connection refused or reset: the leader was killed) or a server
 * saying it stops to the next address in turn. With one address it is a plain client (the server restarts on
 * the same address).
 */
import { type ChannelOptions, credentials, type ServiceError } from '@grpc/grpc-js';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { leaderHint } from '../../src/ha/leader-hint.js';

/** What chaos operations call through: the stub to use now, and what they saw. */
export interface Leader {
  /** The stub of the server believed to lead. */
  stub(): PlacementServiceClient;
  /** The address `stub()` dials. */
  readonly current: string;
  /** Tells it a call's failure (null: success): a leader hint or a broken link may move it. */
  saw(err: ServiceError | null): void;
}

const RECONNECT = { 'grpc.initial_reconnect_backoff_ms': 100, 'grpc.max_reconnect_backoff_ms': 1000 };

/** No connection to the server (refused, reset, dropped), or a server saying it stops: try the next one. */
const NO_SERVER = /No connection established|ECONNREFUSED|ECONNRESET|Connection dropped|connection closed|is stopping/i;

/**
 * Follows the leader over `addresses`; `toAddress` maps a hinted (advertised) address to the one to dial;
 * `options` are each stub's channel options (default: reconnect within 100 ms to 1 s).
 */
export class Follower implements Leader {
  readonly #stubs = new Map<string, PlacementServiceClient>();
  #at = 0;
  #current: string;
  /** How often it moved: to a hinted leader, and to the next address after a broken link. */
  moves = { hinted: 0, rotated: 0 };

  constructor(
    readonly addresses: string[],
    readonly toAddress: (advertised: string) => string = (a) => a,
    readonly options: ChannelOptions = RECONNECT,
  ) {
    this.#current = addresses[0];
  }

  get current(): string {
    return this.#current;
  }

  stub(): PlacementServiceClient {
    let s = this.#stubs.get(this.#current);
    if (!s) {
      s = new PlacementServiceClient(this.#current, credentials.createInsecure(), this.options);
      this.#stubs.set(this.#current, s);
    }
    return s;
  }

  saw(err: ServiceError | null): void {
    if (!err || this.addresses.length < 2) return;
    const hint = leaderHint(err);
    if (hint) {
      const to = this.toAddress(hint);
      if (to !== this.#current) {
        this.#current = to;
        this.moves.hinted++;
      }
      return;
    }
    const fromStandbyWithoutLeader = /^standby of cluster/.test(err.details ?? '');
    if (!fromStandbyWithoutLeader && !NO_SERVER.test(err.details ?? '')) return;
    this.#at = (this.addresses.indexOf(this.#current) + 1) % this.addresses.length;
    this.#current = this.addresses[this.#at];
    this.moves.rotated++;
  }

  /** Closes every stub. */
  close(): void {
    for (const s of this.#stubs.values()) s.close();
  }
}

/** A Leader that is always `stub` (one server, at one address). */
export function fixed(stub: PlacementServiceClient, address = ''): Leader {
  return { stub: () => stub, current: address, saw: () => undefined };
}
