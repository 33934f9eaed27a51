// The cost of `observe --trace` on a real server at saturation: nginx (Debian's, 2 reuseport
// workers on 127.0.0.1, run here, never as a service) answering new-connection HTTP requests as
// fast as client processes can send them, without and with the tracer attached, in one run.
//
// On a shared, noisy machine one pair of rounds says little, so the rounds are interleaved in pairs
// whose order alternates (untraced then traced, then traced then untraced: a load that drifts over
// the run falls on both sides alike), after one warm-up round that is not counted. It prints every
// round, each pair's ratio (traced / untraced), the medians of both sides, the ratio of the medians
// and the median and range of the pairs' ratios (the range is the noise the figure carries), and the
// records the tracer delivered and lost. It judges nothing: the target (at most 3% fewer
// requests) is read off these numbers, beside their range. Needs root (the tracer) and the release
// agent:
//
//   npm run bench:trace     # cargo build --release -p reuseport-agent, then this
//   node scripts/bench-trace.mjs [--seconds 8] [--rounds 5] [--clients 2] [--concurrency 32]
//
// Every request is a new connection (one SYN, so one record); each client process sends from its own
// 127.0.x.y source address, so the run does not run out of ephemeral ports. Loopback only.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const seconds = Number(arg('--seconds', '8'));
const rounds = Number(arg('--rounds', '5'));
const clients = Number(arg('--clients', '2'));
const concurrency = Number(arg('--concurrency', '32'));
const agent = arg('--agent', `${process.env.CARGO_TARGET_DIR ?? 'target'}/release/reuseport-agent`);
const nginx = '/usr/sbin/nginx';
const port = 18_491;
for (const [what, path] of [
  ['the release agent (cargo build --release -p reuseport-agent)', agent],
  ["nginx (scripts/setup.sh installs Debian's)", nginx],
]) {
  if (!existsSync(path)) {
    console.error(`bench-trace: ${path} is missing: ${what}`);
    process.exit(2);
  }
}
if (process.getuid?.() !== 0) {
  console.error('bench-trace: run as root: observe --trace loads an eBPF program');
  process.exit(2);
}

const dir = join(tmpdir(), `reuseport-bench-trace-${process.pid}`);
rmSync(dir, { recursive: true, force: true });
mkdirSync(join(dir, 'tmp'), { recursive: true });
writeFileSync(
  join(dir, 'nginx.conf'),
  `daemon off; master_process on; worker_processes 2; pid ${dir}/nginx.pid; error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http { access_log off; keepalive_timeout 0; client_body_temp_path ${dir}/tmp; proxy_temp_path ${dir}/tmp;
  fastcgi_temp_path ${dir}/tmp; uwsgi_temp_path ${dir}/tmp; scgi_temp_path ${dir}/tmp;
  server { listen 127.0.0.1:${port} reuseport backlog=4096; location / { return 200 "ok\\n"; } } }
`,
);
const server = spawn(nginx, ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: 'inherit' });
const cleanup = () => {
  server.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
};
process.on('exit', cleanup);
process.on('SIGINT', () => process.exit(130));

/** Resolves once nginx answers (bounded). */
async function answering() {
  for (let i = 0; i < 300; i++) {
    const ok = await new Promise((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nginx never answered (see ${dir}/error.log)`);
}

/** One client process: `concurrency` loops of new-connection GETs for `seconds`; resolves to requests answered. */
function client(i) {
  const src = `
    const http = require('node:http');
    const end = Date.now() + ${seconds * 1000};
    let n = 0, active = ${concurrency};
    const one = () => {
      if (Date.now() > end) { if (--active === 0) process.send(n); return; }
      const req = http.get({ host: '127.0.0.1', port: ${port}, path: '/', agent: false, localAddress: '127.0.${1 + i}.${1 + i}' }, (res) => {
        res.resume();
        res.on('end', () => { n++; one(); });
      });
      req.on('error', () => setImmediate(one));
    };
    for (let k = 0; k < ${concurrency}; k++) one();`;
  const child = spawn(process.execPath, ['-e', src], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve) => child.once('message', (n) => resolve(n)));
}

async function load() {
  const counts = await Promise.all(Array.from({ length: clients }, (_, i) => client(i)));
  return counts.reduce((a, b) => a + b, 0) / seconds;
}

/** A traced round: the agent attaches, the load runs, the agent's report says what it recorded. */
async function traced() {
  const report = join(dir, 'report.json');
  const child = spawn(agent, ['observe', '--port', String(port), '--trace', '--for', `${seconds + 3}s`, '--json', report, '--no-search'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  await new Promise((resolve, reject) => {
    child.stderr.on('data', (d) => {
      err += d;
      if (/observe: tracing|--trace refused/.test(err)) resolve();
    });
    child.once('exit', () => reject(new Error(`the agent ended before tracing: ${err}`)));
  });
  if (/--trace refused/.test(err)) throw new Error(err.trim());
  const rps = await load();
  await new Promise((resolve) => child.once('exit', resolve));
  const t = JSON.parse(readFileSync(report, 'utf8')).trace;
  return { rps, t };
}

await answering();
const median = (xs) => {
  const v = [...xs].sort((a, b) => a - b);
  const m = Math.floor(v.length / 2);
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
};
const off = [];
const on = [];
const ratios = [];
let records = 0;
let lostRing = 0;
let lostRate = 0;
console.log(
  `bench-trace: nginx, 2 reuseport workers; ${clients} client processes x ${concurrency} connections in flight, ${seconds} s a round, ` +
    `${rounds} pairs of rounds in alternating order after one warm-up round`,
);
console.log(`  warm-up (not counted): ${(await load()).toFixed(0)} requests/s`);
for (let r = 0; r < rounds; r++) {
  const untraced = async () => {
    const a = await load();
    console.log(`  pair ${r + 1} untraced: ${a.toFixed(0)} requests/s`);
    return a;
  };
  const traced1 = async () => {
    const { rps, t } = await traced();
    records += t.records;
    lostRing += t.lostRingFull;
    lostRate += t.lostRate;
    const lost = `lost ${t.lostRingFull} (ring buffer full) + ${t.lostRate} (over the rate)`;
    console.log(`  pair ${r + 1} traced (${t.attach} on ${t.symbol}): ${rps.toFixed(0)} requests/s; ${t.records} records, ${lost}`);
    return rps;
  };
  // Odd pairs run the traced round first, so a drift in the machine's load falls on both sides.
  const [a, b] = r % 2 === 0 ? [await untraced(), await traced1()] : await traced1().then(async (t) => [await untraced(), t]);
  off.push(a);
  on.push(b);
  ratios.push(b / a);
  console.log(`  pair ${r + 1} traced / untraced: ${(b / a).toFixed(3)}`);
}
const m0 = median(off);
const m1 = median(on);
const lost = lostRing + lostRate;
console.log(`median untraced ${m0.toFixed(0)} requests/s, median traced ${m1.toFixed(0)} requests/s: ratio ${(m1 / m0).toFixed(3)}`);
console.log(
  `pairs' ratio traced / untraced: median ${median(ratios).toFixed(3)}, from ${Math.min(...ratios).toFixed(3)} to ${Math.max(...ratios).toFixed(3)} ` +
    `over ${ratios.length} pairs`,
);
console.log(
  `records: ${records} delivered, ${lost} lost (${lostRing} ring buffer full, ${lostRate} over the rate), ` +
    `${records + lost ? ((100 * lost) / (records + lost)).toFixed(2) : '0.00'}% of those seen`,
);
process.exit(0);
