/**
 * Test support: polling for a condition that becomes true on its own (a process exits, a worker
 * attaches), with a bound so that a test fails rather than hangs.
 */

/** Resolves once `cond` holds, checking every `stepMs`; throws after `ms` without it. */
export async function until(cond: () => boolean | Promise<boolean>, ms = 15_000, stepMs = 20): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
