// Adds each curated trace's per-boot key to public/traces/manifest.json, as
// `reuseport-agent verify --trace` recovers it (and its agreement on the
// events after the 48 used for the search). A trace whose key cannot be
// searched (a program or SO_INCOMING_CPU chose, or IPv6) borrows the key of
// the same protocol and kernel release when every trace of that protocol
// recorded in the same run gave one and the same key (`keyFrom` names one).
// Run by scripts/record-traces.sh after recording; needs the release agent.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

const agent = process.env.AGENT ?? `${process.env.CARGO_TARGET_DIR ?? 'target'}/release/reuseport-agent`;
const path = 'public/traces/manifest.json';
const manifest = JSON.parse(readFileSync(path, 'utf8'));
const found = new Map(); // `${proto} ${kernel}` → Set of keys, first file

for (const t of manifest.traces.filter((t) => t.kind === 'trace')) {
  delete t.key;
  delete t.keyFrom;
  delete t.verify;
  try {
    const out = execFileSync(agent, ['verify', '--trace', `public/traces/${t.file}`, '--json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const r = JSON.parse(out).layouts[0];
    if (r.candidates !== 1 || !r.secret) continue;
    t.key = r.secret;
    t.verify = { tested: r.tested, agreed: r.agreed };
    const k = `${t.proto} ${t.kernel}`;
    const e = found.get(k) ?? { keys: new Set(), file: t.file };
    e.keys.add(r.secret);
    found.set(k, e);
  } catch (err) {
    const why = String(err.stderr ?? err.message)
      .trim()
      .split('\n')
      .pop();
    console.error(`trace-keys: ${t.file}: no key of its own (${why})`);
  }
}
for (const t of manifest.traces.filter((t) => t.kind === 'trace' && !t.key)) {
  const e = found.get(`${t.proto} ${t.kernel}`);
  const v6 = JSON.parse(readFileSync(`public/traces/${t.file}`, 'utf8')).group.bind.includes(':');
  if (e && e.keys.size === 1 && !v6) {
    t.key = [...e.keys][0];
    t.keyFrom = e.file;
  }
}
writeFileSync(path, `${JSON.stringify(manifest, null, 2)}\n`);
for (const t of manifest.traces)
  console.error(
    `trace-keys: ${t.file}: ${t.key ?? '-'}${t.keyFrom ? ` (from ${t.keyFrom})` : ''}${t.verify ? ` verify ${t.verify.agreed}/${t.verify.tested}` : ''}`,
  );
