/**
 * The native agent the tests take expected answers from (Vitest and Playwright alike): REUSEPORT_AGENT when set
 * (scripts/test.sh sets it to the one release build that its verify stages run too), else the release build under
 * CARGO_TARGET_DIR, or under target/. Playwright's global setup builds it when REUSEPORT_AGENT is not set.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

export const AGENT = resolve(root, process.env.REUSEPORT_AGENT ?? join(process.env.CARGO_TARGET_DIR ?? 'target', 'release', 'reuseport-agent'));

/**
 * Whether the agent is there. When REUSEPORT_AGENT names it (npm test) and it is missing, that is an error, never
 * a reason to skip: a skipped comparison must not pass for one that ran.
 */
export function agentPresent(): boolean {
  if (existsSync(AGENT)) return true;
  if (process.env.REUSEPORT_AGENT) throw new Error(`REUSEPORT_AGENT=${process.env.REUSEPORT_AGENT}: no agent there`);
  return false;
}
