/**
 * The error of a batch file that cannot be read or does not validate, in a module of its own (no
 * zod, no YAML): the process that starts jobs recognises it without loading the validators.
 */

/** A batch file that cannot be read or does not validate; the message names the job and the field. CLI exit 2. */
export class BatchError extends Error {
  /**
   * @param at where in the batch the error is, as a path into the list of jobs (`[2, 'shel']`), when the
   * message would gain its line number (batch.ts adds it).
   */
  constructor(
    message: string,
    readonly at?: readonly (string | number)[],
  ) {
    super(message);
    this.name = 'BatchError';
  }
}

/** How errors name a job: its place in the list (0-based, as `jobs[2]` in the file) and its name. */
export function jobRef(job: { index: number; name: string }): string {
  return `jobs[${job.index}] (${JSON.stringify(job.name)})`;
}
