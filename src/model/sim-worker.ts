/**
 * The simulation worker: runs the model's discrete-event simulator
 * (wasm `Simulation`, in the larger package) off the page's thread, in
 * slices, reporting progress between them and stopping early when asked
 * (the report then says `partial`).
 */
import init, { Simulation, curatedScenarios } from './pkg-lookup/reuseport.js';
import { breathe, serve } from './rpc';
import type { Scenario } from './generated/Scenario';
import type { SimReport } from './generated/SimReport';
import type { CuratedView } from './generated/CuratedView';

let loaded: Promise<unknown> | undefined;
const ready = () => (loaded ??= init());

/** Events per slice: about 10 ms of simulation on this machine. */
const SLICE = 20_000;

serve({
  async curated(): Promise<CuratedView[]> {
    await ready();
    return curatedScenarios() as CuratedView[];
  },
  async run(args: { scenarios: Scenario[] }, ctx): Promise<SimReport[]> {
    await ready();
    const out: SimReport[] = [];
    for (let i = 0; i < args.scenarios.length; i++) {
      const sim = new Simulation(args.scenarios[i]);
      try {
        let done = false;
        while (!done && !ctx.stopped()) {
          done = sim.step(SLICE);
          const [arrived, total] = sim.progress();
          ctx.progress({ run: i, runs: args.scenarios.length, arrived, total });
          await breathe();
        }
        out.push(sim.report() as SimReport);
      } finally {
        sim.free();
      }
      if (ctx.stopped()) break;
    }
    return out;
  },
});
