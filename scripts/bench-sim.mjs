// Simulator speed, native and wasm side by side on the same scenario: a
// million short connections over four workers, for a shared socket (epoll)
// and for SO_REUSEPORT (which asks the model's selection per SYN). Also
// checks that both builds give the same report (same seed, same run). Prints
// numbers; asserts nothing about time. `npm run bench:sim` (builds first).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const N = Number(process.env.BENCH_CONNECTIONS ?? 1_000_000);

process.stderr.write('bench-sim: native (cargo bench --bench sim)...\n');
const native = execFileSync('cargo', ['bench', '-q', '-p', 'reuseport-model', '--bench', 'sim'], {
  cwd: root,
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'inherit'],
});
process.stdout.write(native);

const { initSync, Simulation, curatedScenario } = await import(join(root, 'src/model/pkg-lookup/reuseport.js'));
initSync({ module: readFileSync(join(root, 'src/model/pkg-lookup/reuseport_bg.wasm')) });
for (const variant of ['epoll', 'reuseport']) {
  const s = curatedScenario('shared-queue-under-load', variant);
  s.connections = N;
  s.arrivals = { kind: 'poisson', ratePerSec: 5000 };
  const t = performance.now();
  const sim = new Simulation(s);
  while (!sim.step(1 << 20));
  const r = sim.report();
  sim.free();
  const secs = (performance.now() - t) / 1e3;
  const accepts = r.workers.map((w) => w.accepts).join(' ');
  console.log(
    `wasm ${N.toLocaleString('en')} connections, ${variant}: ${secs.toFixed(2)} s, ${Math.round(N / secs).toLocaleString('en')} connections/s, ` +
      `${Math.round(r.events / secs).toLocaleString('en')} events/s; accepts ${accepts}`,
  );
}
