/**
 * The error of a bad flag, env var or config value, in a module of its own (no zod): code that
 * only throws or recognises it, such as `berth dispatch`'s job-starting process, stays small.
 */

/**
 * Thrown when options do not validate; `message` names the flag and the value, e.g.
 * `--cpus: must be at least 0 (got '-3')`. The CLI prints it and exits 2.
 */
export class OptionsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OptionsError';
  }
}
