// Writes tests/fixtures/server/ss-tanpe-reuseport-4.txt: what `ss -tanpe` shows of nginx with
// `listen 127.0.0.1:18080 reuseport` and 4 workers, 120 connections each placed by the model's
// own selection (kernel 6.18) under the initval 0x5eedcafe, the workers' pids numbered in an
// order unrelated to their slots (as listen() order is to pids). Run: node scripts/server-fixture.mjs
import { readFileSync, writeFileSync } from 'node:fs';
import { Group, initSync } from '../src/model/pkg/reuseport.js';

initSync({ module: readFileSync(new URL('../src/model/pkg/reuseport_bg.wasm', import.meta.url)) });
const KEY = 0x5eedcafe;
const spec = {
  proto: 'tcp',
  listeners: 4,
  bind: '127.0.0.1',
  port: 18080,
  v6only: false,
  keys: { v4: KEY, v6Outer: 0, v6Inner: 0 },
  closed: [],
  shutdown: [],
  tcpMigrateReq: false,
  incomingCpu: [],
  connected: [],
  program: null,
};
const g = new Group({ kernel: '6.18', group: spec });
/** The worker accepting from each slot: pids not in slot order. */
const pidOfSlot = [2103, 2101, 2104, 2102];
const inode = [51007, 51004, 51010, 51001];
let x = 0x2468ace1;
const next = () => {
  x ^= x << 13;
  x ^= x >>> 17;
  x ^= x << 5;
  return x >>> 0;
};
const users = (pids) => `users:(${pids.map((p) => `("nginx",pid=${p},fd=${p === 2100 ? 6 : 8})`).join(',')})`;
const lines = ['State  Recv-Q Send-Q   Local Address:Port     Peer Address:Port Process'];
for (const [slot, ino] of inode.entries())
  lines.push(`LISTEN 0      511        127.0.0.1:18080        0.0.0.0:*     ${users([pidOfSlot[slot], 2100])} ino:${ino} sk:${slot + 1} cgroup:/ <->`);
const fd = new Map();
for (let i = 0; i < 120; i++) {
  const r = next();
  const saddr = `127.${(r >>> 16) & 255}.${(r >>> 8) & 255}.${(r & 255) | 1}`;
  const sport = 32768 + (next() % 28000);
  const e = g.explain({ saddr, sport, daddr: '127.0.0.1', dport: 18080 }, 0);
  const pid = pidOfSlot[e.slot];
  const f = (fd.get(pid) ?? 9) + 1;
  fd.set(pid, f);
  const ids = `uid:33 ino:${60000 + i} sk:${100 + i} cgroup:/ <->`;
  lines.push(`ESTAB  0      0          127.0.0.1:18080  ${saddr}:${sport} users:(("nginx",pid=${pid},fd=${f})) ${ids}`);
}
writeFileSync(new URL('../tests/fixtures/server/ss-tanpe-reuseport-4.txt', import.meta.url), `${lines.join('\n')}\n`);
