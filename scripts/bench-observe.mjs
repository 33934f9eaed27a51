// observe's costs beside a busy server: how long one look at the socket tables
// takes with N connections held on the port (sock_diag dump, the /proc scan,
// the diagnosis without the key search), and the CPU that `observe --for 10s
// --every 1s` uses while watching it. Prints numbers; never fails on time.
//
//   node scripts/bench-observe.mjs [--connections 10000] [--agent target/release/reuseport-agent]
//
// Needs the release agent (cargo build --release -p reuseport-agent). The
// server and the clients live in two processes, so N connections need a
// descriptor limit above N in each (ulimit -n); the diagnosis of 100,000
// connections alone is in `cargo bench -p reuseport-model --bench diagnose`.
// Everything runs on loopback: the server on 127.0.0.1, clients from 127.0.0.0/8.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const agent = arg('--agent', `${process.env.CARGO_TARGET_DIR ?? 'target'}/release/reuseport-agent`);
const sizes = arg('--connections', '10000').split(',').map(Number);
if (!existsSync(agent)) {
  console.error(`bench-observe: ${agent} is missing; build it with cargo build --release -p reuseport-agent`);
  process.exit(2);
}

const port = 18_490;

/** A child holding the server: one listener, every accepted socket kept. */
function startServer() {
  const src = `
    const net = require('node:net');
    const held = [];
    const s = net.createServer((c) => { held.push(c); c.on('error', () => {}); });
    s.listen({ host: '127.0.0.1', port: ${port}, backlog: 4096 }, () => process.send('ready'));`;
  const child = spawn(process.execPath, ['-e', src], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve) => child.once('message', () => resolve(child)));
}

/** Opens `n` connections from 127.0.0.0/8 source addresses, 256 at a time. */
async function connectMany(n) {
  const socks = [];
  for (let i = 0; i < n; i += 256) {
    const batch = [];
    for (let j = i; j < Math.min(n, i + 256); j++) {
      const a = 2 + j;
      const local = `127.${(a >> 16) & 255}.${(a >> 8) & 255}.${a & 255}`;
      batch.push(
        new Promise((resolve, reject) => {
          const s = net.connect({ host: '127.0.0.1', port, localAddress: local }, () => resolve(s));
          s.on('error', reject);
        }),
      );
    }
    socks.push(...(await Promise.all(batch)));
  }
  return socks;
}

/** Runs a shell line and returns its wall time and its children's user+system CPU seconds (bash `times`). */
function timed(line) {
  const t0 = process.hrtime.bigint();
  const out = execFileSync('bash', ['-c', `${line} >/dev/null 2>&1; times`], { encoding: 'utf8' });
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const secs = (s) => {
    const m = /(\d+)m([\d.]+)s/.exec(s);
    return m ? Number(m[1]) * 60 + Number(m[2]) : 0;
  };
  const [user, sys] = out.trim().split('\n').pop().split(/\s+/);
  return { wall, cpu: secs(user) + secs(sys) };
}

for (const n of sizes) {
  const server = await startServer();
  let socks = [];
  try {
    socks = await connectMany(n);
    const one = timed(`${agent} observe --port ${port} --no-search --json /dev/null`);
    console.log(`observe, one look at ${n} connections: ${one.wall.toFixed(2)} s wall, ${one.cpu.toFixed(2)} s CPU`);
    if (n <= 10_000) {
      const watch = timed(`${agent} observe --port ${port} --no-search --for 10s --every 1s --json /dev/null`);
      const share = ((100 * watch.cpu) / watch.wall).toFixed(1);
      console.log(`observe --for 10s --every 1s beside ${n} connections: ${watch.cpu.toFixed(2)} s CPU in ${watch.wall.toFixed(1)} s (${share} % of one core)`);
    }
  } catch (e) {
    console.log(`observe at ${n} connections: not measured: ${e.message} (raise the descriptor limit: ulimit -n 300000)`);
  } finally {
    for (const s of socks) s.destroy();
    server.kill();
  }
}
