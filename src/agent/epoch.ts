/**
 * The newest leader epoch the agent has seen (SPEC S7, issue 20 item 4). Every WorkerStreamResponse carries the
 * sending leader's epoch (the create revision of its election key; 0 from a server without a cluster); the agent
 * refuses every frame of an older epoch than the newest it has seen, on any stream, so nothing a deposed leader
 * sends after a takeover is acted on. Kept for the life of the agent process, across streams.
 */

/** The agent's epoch watermark. */
export class EpochGuard {
  /** The newest epoch seen so far (0 before any frame). */
  newest = 0;

  /**
   * True when a frame of `epoch` may be acted on (it is not older than the newest seen), raising the newest
   * to it; false when it is older and must be ignored.
   */
  admit(epoch: number): boolean {
    if (epoch < this.newest) return false;
    this.newest = epoch;
    return true;
  }
}
