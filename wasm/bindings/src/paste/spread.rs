//! The secret-free simulation over a paste's rows: the skew the same
//! connections give over many random boots, and over other group sizes.

use serde::Serialize;
use wasm_bindgen::prelude::*;

use super::{group_of, AnswerRequest, WasmPaste};
use crate::{from_js, to_js, IntoJs, JsResult};
use reuseport_model::spread::SpreadRun;
use reuseport_model::{Keys, Profile, Tuple};

#[wasm_bindgen(js_class = Paste)]
impl WasmPaste {
    /// Starts the secret-free simulation over the rows for the request's group.
    #[wasm_bindgen(js_name = spreadStart)]
    pub fn spread_start(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "AnswerRequest")] req: JsValue,
        seed: f64,
    ) -> JsResult<()> {
        let req: AnswerRequest = from_js(req, "answer request")?;
        let group = group_of(&req, Keys::default())?;
        let tuples: Vec<Tuple> = self.rows.iter().map(|r| r.tuple).collect();
        self.spread = Some(SpreadRun::new(group, &tuples, seed as u64).js()?);
        Ok(())
    }

    /// Whether the simulation takes the vectorised path (IPv4 on a plain
    /// group): some twenty times faster, so the page can ask for more boots.
    #[wasm_bindgen(js_name = spreadVectorised)]
    pub fn spread_vectorised(&self) -> bool {
        self.spread.as_ref().is_some_and(SpreadRun::vectorised)
    }

    /// Runs `boots` more boots; returns how many are done.
    #[wasm_bindgen(js_name = spreadStep)]
    pub fn spread_step(&mut self, boots: u32) -> JsResult<u32> {
        let run = self
            .spread
            .as_mut()
            .ok_or_else(|| JsError::new("no simulation started"))?;
        run.step(boots);
        Ok(run.done())
    }

    /// What the boots so far give (`Spread`).
    #[wasm_bindgen(js_name = spreadSummary, unchecked_return_type = "Spread")]
    pub fn spread_summary(&self) -> JsResult<JsValue> {
        let run = self
            .spread
            .as_ref()
            .ok_or_else(|| JsError::new("no simulation started"))?;
        to_js(&run.summary())
    }

    /// Observed per-listener counts against the simulation (`Comparison`).
    #[wasm_bindgen(js_name = spreadCompare, unchecked_return_type = "Comparison")]
    pub fn spread_compare(&self, observed: Vec<u32>) -> JsResult<JsValue> {
        let run = self
            .spread
            .as_ref()
            .ok_or_else(|| JsError::new("no simulation started"))?;
        let counts: Vec<u64> = observed.into_iter().map(u64::from).collect();
        to_js(&run.compare(&counts).js()?)
    }

    /// The expected skew of these rows over other group sizes (`ByListeners`).
    #[wasm_bindgen(js_name = byListeners, unchecked_return_type = "ByListeners")]
    pub fn by_listeners(
        &self,
        #[wasm_bindgen(unchecked_param_type = "AnswerRequest")] req: JsValue,
        boots: u32,
    ) -> JsResult<JsValue> {
        let req: AnswerRequest = from_js(req, "answer request")?;
        let profile = Profile::resolve(&req.kernel, None).js()?;
        let tuples: Vec<Tuple> = self.rows.iter().map(|r| r.tuple).collect();
        let rows =
            reuseport_model::spread::by_listeners(profile, &req.group, &tuples, 0x5eed, boots)
                .js()?;
        to_js(&ByListeners { rows })
    }
}

/// The expected skew of the same connections over other group sizes.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize)]
pub(super) struct ByListeners {
    rows: Vec<reuseport_model::spread::ListenerRow>,
}
