use wasm_bindgen::prelude::*;
#[wasm_bindgen(js_name = modelVersion)]
pub fn model_version() -> String { reuseport_model::version().to_string() }
