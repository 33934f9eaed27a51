/**
 * The native agent the tests take expected answers from (Vitest and Playwright alike): REUSEPORT_AGENT when set
 * (scripts/test.sh sets it to the one release build that its verify stages run too), else the release build under
 * CARGO_TARGET_DIR, or under target/. Playwright's global setup builds it when REUSEPORT_AGENT is not set.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

export const AGENT = resolve(root, process.env.REUSEPORT_AGENT ?? join(process.env.CARGO_TARGET_DIR ?? 'target', 'release', 'reuseport-agent'));

/** The newest modification time among the Rust sources and manifests the agent is built from. */
function newestSource(): number {
  let newest = 0;
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(rs|toml|c|h)$/.test(e.name)) newest = Math.max(newest, statSync(p).mtimeMs);
    }
  };
  for (const d of ['agent/src', 'agent/build.rs', 'wasm/model/src', 'agent/Cargo.toml', 'wasm/model/Cargo.toml', 'Cargo.lock'].map((d) => join(root, d))) {
    if (!existsSync(d)) continue;
    if (statSync(d).isDirectory()) walk(d);
    else newest = Math.max(newest, statSync(d).mtimeMs);
  }
  return newest;
}

/**
 * Whether the agent is there. When REUSEPORT_AGENT names it (npm test) and it is missing, that is an error, never
 * a reason to skip: a skipped comparison must not pass for one that ran. A release build found under the target
 * directory (npm run test:quick builds none) is taken only if it is newer than its sources: an older one would
 * answer for another model, and the comparisons with it are skipped, saying why.
 */
export function agentPresent(): boolean {
  if (process.env.REUSEPORT_AGENT) {
    if (existsSync(AGENT)) return true;
    throw new Error(`REUSEPORT_AGENT=${process.env.REUSEPORT_AGENT}: no agent there`);
  }
  if (!existsSync(AGENT)) return false;
  if (statSync(AGENT).mtimeMs < newestSource()) {
    console.warn(`${AGENT} is older than its sources: the comparisons with it are skipped (cargo build --release -p reuseport-agent)`);
    return false;
  }
  return true;
}
