//! The simulator across the boundary: a run held behind a handle and
//! stepped in slices (so a worker can report progress and stop between
//! them), and the gallery's curated scenarios. Only in the larger package.

use reuseport_model::sim::{curated::CuratedView, Curated, Scenario, Simulation, CURATED};
use wasm_bindgen::prelude::*;

use crate::{from_js, to_js, IntoJs, JsResult};

#[wasm_bindgen(typescript_custom_section)]
const TS_SIM_TYPES: &str = r#"
import type { CuratedView } from "../generated/CuratedView";
import type { Match } from "../generated/Match";
import type { Observed } from "../generated/Observed";
import type { Scenario } from "../generated/Scenario";
import type { Shape } from "../generated/Shape";
import type { SimReport } from "../generated/SimReport";
import type { RankAnswer } from "../generated/RankAnswer";
export type { RankAnswer };
"#;

/// One run (`Scenario` in, `SimReport` out).
#[wasm_bindgen(js_name = Simulation)]
pub struct WasmSimulation {
    sim: Simulation,
}

#[wasm_bindgen(js_class = Simulation)]
impl WasmSimulation {
    /// Checks the scenario (errors name the field) and sets the run up.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "Scenario")] scenario: JsValue,
    ) -> JsResult<WasmSimulation> {
        let s: Scenario = from_js(scenario, "scenario")?;
        Ok(WasmSimulation {
            sim: Simulation::new(s.check().js()?),
        })
    }

    /// Processes up to `budget` events; true when the run is over.
    pub fn step(&mut self, budget: u32) -> bool {
        self.sim.step(budget as u64)
    }

    /// Connections arrived so far, and in all: `[arrived, total]`.
    pub fn progress(&self) -> Vec<u32> {
        let (a, t) = self.sim.progress();
        vec![a, t]
    }

    /// The report so far (`SimReport`; `partial` until the run is over).
    #[wasm_bindgen(unchecked_return_type = "SimReport")]
    pub fn report(&self) -> JsResult<JsValue> {
        to_js(&self.sim.report())
    }
}

/// The gallery's scenarios (`CuratedView[]`).
#[wasm_bindgen(js_name = curatedScenarios, unchecked_return_type = "CuratedView[]")]
pub fn wasm_curated_scenarios() -> JsResult<JsValue> {
    let all: Vec<CuratedView> = CURATED.iter().map(CuratedView::from).collect();
    to_js(&all)
}

/// One curated scenario as one of its variants runs it (`Scenario`).
#[wasm_bindgen(js_name = curatedScenario, unchecked_return_type = "Scenario")]
pub fn wasm_curated_scenario(name: &str, variant: &str) -> JsResult<JsValue> {
    let c = Curated::named(name)
        .ok_or_else(|| JsError::new(&format!("no curated scenario named `{name}`")))?;
    let v = c
        .variant(variant)
        .ok_or_else(|| JsError::new(&format!("scenario `{name}` has no variant `{variant}`")))?;
    to_js(&c.with(v))
}

/// The runs (`SimReport[]`) ranked by how close each is to what a user
/// observed (`Observed`): `{ observed: Shape, ranked: Match[] }`.
#[wasm_bindgen(js_name = rankScenarios, unchecked_return_type = "RankAnswer")]
pub fn wasm_rank_scenarios(
    #[wasm_bindgen(unchecked_param_type = "Observed")] observed: JsValue,
    #[wasm_bindgen(unchecked_param_type = "SimReport[]")] runs: JsValue,
) -> JsResult<JsValue> {
    let o: reuseport_model::sim::matcher::Observed = from_js(observed, "observed")?;
    let runs: Vec<reuseport_model::sim::SimReport> = from_js(runs, "runs")?;
    let (shape, ranked) = reuseport_model::sim::matcher::rank(&o, &runs).js()?;
    to_js(&RankAnswer {
        observed: shape,
        ranked,
    })
}

/// The runs ranked against an observation: the observation's shape, and
/// the runs closest first.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(serde::Serialize)]
struct RankAnswer {
    observed: reuseport_model::sim::matcher::Shape,
    ranked: Vec<reuseport_model::sim::matcher::Match>,
}

/// Writes this module's records as TypeScript (see `ts_export` in lib.rs).
#[cfg(all(test, feature = "ts"))]
pub(crate) fn export_ts(cfg: &ts_rs::Config) -> Result<(), ts_rs::ExportError> {
    use ts_rs::TS;
    RankAnswer::export_all(cfg)?;
    Ok(())
}
