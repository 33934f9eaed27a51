// Writes public/traces/manifest.json after scripts/record-traces.sh has
// recorded the curated list (`reuseport-agent curated`, JSON Lines): one
// entry per listed recording, made from its file, in the list's order, then
// the entries of other kinds (scenario runs, the calibration) as they were.
// The per-boot keys are added afterwards by scripts/trace-keys.mjs.
//
//   node scripts/trace-manifest.mjs --list FILE [--manifest PATH]
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    list: { type: 'string' },
    manifest: { type: 'string', default: 'public/traces/manifest.json' },
  },
});
if (!values.list) {
  console.error('trace-manifest: --list FILE is required (the output of `reuseport-agent curated`)');
  process.exit(2);
}
const path = values.manifest;
const dir = dirname(path);
const listed = [];
for (const [i, l] of readFileSync(values.list, 'utf8').split('\n').entries()) {
  if (!l.trim()) continue;
  try {
    listed.push(JSON.parse(l));
  } catch (e) {
    console.error(`trace-manifest: ${values.list} line ${i + 1} is not JSON: ${e.message}`);
    process.exit(2);
  }
}
const old = existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : { traces: [] };

/** The manifest entry of one listed recording, read from its file. */
function entry(r) {
  const command = `reuseport-agent ${r.args.join(' ')}`;
  const head = { file: r.file, kind: r.kind, shows: r.shows, command };
  if (r.kind !== 'trace') return { ...head, kernel: os.release() };
  const t = JSON.parse(readFileSync(join(dir, r.file), 'utf8'));
  return {
    ...head,
    kernel: t.kernel.release,
    profile: t.kernel.profile,
    proto: t.group.proto,
    listeners: t.group.listeners,
    events: t.counts.events,
    recorded: t.counts.recorded ?? t.events.length,
  };
}

const made = new Set(listed.map((r) => r.file));
const kept = old.traces.filter((e) => !made.has(e.file) && e.kind !== 'trace' && e.kind !== 'bench');
const manifest = {
  format: 'reuseport-lab-trace-manifest',
  version: 1,
  machine: { cpus: os.cpus().length, kernel: os.release() },
  traces: [...listed.map(entry), ...kept],
};
writeFileSync(path, `${JSON.stringify(manifest, null, 2)}\n`);
console.error(`trace-manifest: wrote ${path} (${listed.length} recorded, ${kept.length} other entries kept)`);
