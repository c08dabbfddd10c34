/** The generated reference pages: each path under the repository root with a function producing its text. */
import { cliReference } from './cli-reference.js';
import { configReference } from './config-reference.js';

/** docs/reference/*.md by path, each built from the code (see cli-reference.ts, config-reference.ts). */
export async function referencePages(root: string): Promise<Record<string, string>> {
  return {
    'docs/reference/cli.md': await cliReference(root),
    'docs/reference/config.md': await configReference(),
  };
}
