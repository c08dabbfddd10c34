/**
 * The error of a batch file that cannot be read or does not validate, in a module of its own (no
 * zod, no YAML): the process that starts jobs recognises it without loading the validators.
 */

/** A batch file that cannot be read or does not validate; the message names the job and the field. CLI exit 2. */
export class BatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BatchError';
  }
}
