/**
 * Builds the release agent the browser tests take expected answers from, once for the whole run (every worker and
 * spec file reads tests/agent.ts's AGENT). Under npm test, scripts/test.sh has built it already for its verify
 * stages and sets REUSEPORT_AGENT: nothing is built here then.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { AGENT } from '../agent';

export default function globalSetup() {
  // stdin closed: cargo's rustc probe would read it as Rust source.
  if (!process.env.REUSEPORT_AGENT) execFileSync('cargo', ['build', '--release', '-q', '-p', 'reuseport-agent'], { stdio: ['ignore', 'inherit', 'inherit'] });
  // Just built (or named by REUSEPORT_AGENT): current by construction, so only its presence is checked.
  if (!existsSync(AGENT)) throw new Error(`${AGENT} is missing after the build`);
}
