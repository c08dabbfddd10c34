/**
 * Test support: the real command-line tools the observability tests drive (grpcurl, Chromium).
 * `.ci/run` installs them; a test finds one through its env var, the project-local tool dir,
 * ~/go/bin or PATH. Outside CI a missing tool skips the test (`describe.skipIf`); in CI
 * (CI=true) a missing tool fails it, so CI can never pass without the real tool.
 */
import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');

function executable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The path of tool `name`: `$envVar` if set, else the first executable among `extra`, the
 * project's .tools/bin, ~/go/bin and PATH; undefined when absent.
 * @throws Error in CI (CI=true) when the tool is absent, naming the env var and `.ci/run`.
 */
export function findTool(name: string, envVar: string, extra: string[] = []): string | undefined {
  const fromEnv = process.env[envVar];
  const candidates = fromEnv
    ? [fromEnv]
    : [
        ...extra,
        join(ROOT, '.tools', 'bin', name),
        join(homedir(), 'go', 'bin', name),
        ...(process.env.PATH ?? '')
          .split(delimiter)
          .filter(Boolean)
          .map((d) => join(d, name)),
      ];
  const found = candidates.find(executable);
  if (!found && process.env.CI === 'true') {
    throw new Error(`${name} not found (set ${envVar} or run .ci/run, which installs it); CI must not skip this test`);
  }
  return found;
}

/** grpcurl (`go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3` in .ci/run); env BERTH_GRPCURL. */
export const grpcurlPath = () => findTool('grpcurl', 'BERTH_GRPCURL');

/** Chromium (Debian's `chromium` in .ci/run); env BERTH_CHROMIUM. */
export const chromiumPath = () => findTool('chromium', 'BERTH_CHROMIUM', ['/usr/bin/chromium']);
