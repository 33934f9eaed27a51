// Batch selection speed, native and wasm side by side on the very same
// packets, plus the wasm file's gzipped size. Prints numbers; asserts
// nothing about time. Run through `npm run bench` (which builds first).
//
// 1. Generates a million IPv4 packets (seeded, so runs compare) and writes
//    them in the layout benches/select.rs reads.
// 2. Runs the native benchmark on them (cargo bench, release profile).
// 3. Runs the same selections through the wasm build under Node.
// 4. Prints one table: selections per second, the wasm/native ratio, and
//    whether both produced the same answers (output checksums).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { xorshift32 } from './bench-util.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const N = Number(process.env.BENCH_PACKETS ?? 1_000_000);
const ROUNDS = 15;

// The recipe of benches/select.rs's own generator: xorshift32 from 0x2545f491,
// an address word then a port per packet.
function packets(n) {
  const next = xorshift32(0x2545f491);
  const saddr = new Uint32Array(n);
  const sport = new Uint16Array(n);
  const daddr = new Uint32Array(n);
  const dport = new Uint16Array(n);
  for (let i = 0; i < n; i++) {
    saddr[i] = (0x7f000000 | (next() & 0x00ffffff)) >>> 0;
    sport[i] = (next() % 28232) + 32768;
    daddr[i] = 0x7f000001;
    dport[i] = 8080;
  }
  return { saddr, sport, daddr, dport };
}

function fileOf(p) {
  const n = p.saddr.length;
  const buf = Buffer.alloc(4 + n * 12);
  let o = buf.writeUInt32LE(n, 0);
  for (const v of p.saddr) o = buf.writeUInt32LE(v, o);
  for (const v of p.sport) o = buf.writeUInt16LE(v, o);
  for (const v of p.daddr) o = buf.writeUInt32LE(v, o);
  for (const v of p.dport) o = buf.writeUInt16LE(v, o);
  return buf;
}

// FNV-1a over the u32 outputs, as benches/select.rs computes it.
function checksum(out) {
  let h = 0xcbf29ce484222325n;
  const mask = (1n << 64n) - 1n;
  for (const v of out) h = ((h ^ BigInt(v)) * 0x100000001b3n) & mask;
  return h.toString(16).padStart(16, '0');
}

function bestOf(rounds, f) {
  let best = Infinity;
  for (let i = 0; i < rounds; i++) {
    const t = process.hrtime.bigint();
    f();
    best = Math.min(best, Number(process.hrtime.bigint() - t) / 1e9);
  }
  return best;
}

const p = packets(N);
const dir = mkdtempSync(join(tmpdir(), 'rl-bench-'));
const file = join(dir, 'packets.bin');
writeFileSync(file, fileOf(p));

process.stderr.write(`bench: native run (cargo bench, release) on ${N} packets...\n`);
const nativeOut = execFileSync('cargo', ['bench', '-q', '-p', 'reuseport-model', '--bench', 'select', '--', '--json', '--tuples', file], {
  cwd: root,
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'inherit'],
});
rmSync(dir, { recursive: true, force: true });
const rows = nativeOut
  .split('\n')
  .filter((l) => l.startsWith('{'))
  .map((l) => JSON.parse(l));

process.stderr.write('bench: wasm run under Node...\n');
const wasmPath = join(root, 'src/model/pkg/reuseport_bg.wasm');
const wasmBytes = readFileSync(wasmPath);
const { initSync, Group, V4Batch } = await import(join(root, 'src/model/pkg/reuseport.js'));
initSync({ module: wasmBytes });
const batch = new V4Batch(N);
const v = { saddr: batch.saddr(), sport: batch.sport(), daddr: batch.daddr(), dport: batch.dport() };
v.saddr.set(p.saddr);
v.sport.set(p.sport);
v.daddr.set(p.daddr);
v.dport.set(p.dport);
for (const kernel of ['6.18', '6.12']) {
  const g = new Group({
    kernel,
    group: {
      proto: 'tcp',
      listeners: 64,
      bind: '127.0.0.1',
      port: 8080,
      v6only: false,
      keys: { v4: 0x12345678, v6Outer: 0, v6Inner: 0 },
      closed: [],
      shutdown: [],
      tcpMigrateReq: false,
      incomingCpu: [],
      connected: [],
    },
  });
  const secs = bestOf(ROUNDS, () => g.selectBatchV4(batch, N, 0));
  rows.push({ path: 'wasm simd128 (Node)', kernel, packets: N, perSecond: N / secs, checksum: checksum(batch.out()) });
  g.free();
}
batch.free();

const gz = gzipSync(wasmBytes, { level: 9 }).length;
const lookupBytes = readFileSync(join(root, 'src/model/pkg-lookup/reuseport_bg.wasm'));
const lookupGz = gzipSync(lookupBytes, { level: 9 }).length;
const fmt = (x) => (x / 1e9).toFixed(3);
console.log(`\nBatch selection, ${N} IPv4 packets, TCP group of 64 on 127.0.0.1:8080 (best of ${ROUNDS} runs; 1 core)\n`);
console.log('path                       kernel   G sel/s   vs native best   checksum');
for (const kernel of ['6.18', '6.12']) {
  const mine = rows.filter((r) => r.kernel === kernel);
  const best = Math.max(...mine.filter((r) => r.path.startsWith('native') && !r.path.includes('one-at')).map((r) => r.perSecond));
  const ref = mine.find((r) => r.path.startsWith('native') && !r.path.includes('one-at'))?.checksum;
  for (const r of mine) {
    const same = r.checksum === '0000000000000000' ? 'n/a' : r.checksum === ref ? `${r.checksum} same` : `${r.checksum} DIFFERENT`;
    console.log(`${r.path.padEnd(26)} ${kernel.padEnd(8)} ${fmt(r.perSecond).padStart(7)}   ${(r.perSecond / best).toFixed(2).padStart(14)}   ${same}`);
  }
}
console.log(`\nwasm core package (pkg): ${wasmBytes.length} bytes, ${gz} bytes gzipped (${(gz / 1024).toFixed(1)} KiB)`);
console.log(
  `wasm lookup package (pkg-lookup, adds the full listener lookup): ${lookupBytes.length} bytes, ${lookupGz} bytes gzipped ` +
    `(${(lookupGz / 1024).toFixed(1)} KiB)`,
);
if (rows.some((r) => r.checksum !== '0000000000000000' && rows.find((q) => q.kernel === r.kernel && q.path.startsWith('native'))?.checksum !== r.checksum)) {
  console.error('bench: native and wasm answers differ: this is a bug, not a speed result');
  process.exit(1);
}
