/**
 * The simulation worker: runs the model's discrete-event simulator
 * (wasm `Simulation`, in the larger package) off the page's thread, in
 * slices, reporting progress between them and stopping early when asked
 * (the report then says `partial`). It also ranks the curated scenarios
 * against what a user observed (the model's `rankScenarios`).
 */
import { Simulation, curatedScenarios, rankScenarios } from './pkg-lookup/reuseport.js';
import { loadLookup as ready } from './lookup';
import { breathe, serve, type Ctx } from './rpc';
import type { Scenario, SimProgress, SimProtocol, SimReport } from './sim';

/** Events per slice: about 10 ms of simulation on this machine. */
const SLICE = 20_000;

async function runAll(scenarios: Scenario[], ctx: Ctx<SimProgress>): Promise<SimReport[]> {
  const out: SimReport[] = [];
  for (let i = 0; i < scenarios.length && !ctx.stopped(); i++) {
    const sim = new Simulation(scenarios[i]!);
    try {
      let done = false;
      while (!done && !ctx.stopped()) {
        done = sim.step(SLICE);
        const [arrived = 0, total = 0] = sim.progress();
        ctx.progress({ run: i, runs: scenarios.length, arrived, total });
        await breathe();
      }
      out.push(sim.report());
    } finally {
      sim.free();
    }
  }
  return out;
}

serve<SimProtocol>({
  async curated() {
    await ready();
    return curatedScenarios();
  },
  async run(args, ctx) {
    await ready();
    return runAll(args.scenarios, ctx);
  },
  /** Every curated variant, run, then ranked by the model against what the user observed. */
  async match(args, ctx) {
    await ready();
    // The observation is checked before anything runs, so a bad one is answered at once.
    rankScenarios(args.observed, []);
    const all = curatedScenarios();
    const runs = all.flatMap((c) => c.variants.map((v, i) => ({ name: c.name, variant: v, scenario: c.scenarios[i]! })));
    const reports = await runAll(
      runs.map((r) => r.scenario),
      ctx,
    );
    const { observed, ranked } = rankScenarios(args.observed, reports);
    return {
      observed,
      partial: reports.length < runs.length || reports.some((r) => r.partial),
      ranked: ranked.map((m) => ({
        name: runs[m.run]!.name,
        variant: runs[m.run]!.variant,
        distance: m.distance,
        shape: m.shape,
        accepts: reports[m.run]!.workers.map((w) => w.accepts),
      })),
    };
  },
});
