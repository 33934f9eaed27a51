//! A server's port diagnosed (`reuseport_model::diagnose`): pasted socket
//! tables or counts read by the model, and a [`WasmDiagnose`] handle that
//! each search Web Worker holds to search its part of the key space, and
//! that the page's session finishes with what every part found.

use reuseport_model::diagnose::counts::diagnose_counts;
use reuseport_model::diagnose::paste::read_server;
use reuseport_model::diagnose::{prepare, Prepared, Snapshot};
use reuseport_model::recover::{Found, LIST_CAP, SPACE};
use reuseport_model::tuple::Proto;
use reuseport_model::Profile;
use wasm_bindgen::prelude::*;

use crate::{from_js, to_js, IntoJs, JsResult, SearchPart};

#[wasm_bindgen(typescript_custom_section)]
const TS_DIAGNOSE: &str = r#"
import type { Snapshot } from "../generated/Snapshot";
import type { Diagnosis } from "../generated/Diagnosis";
import type { Reason } from "../generated/Reason";
import type { CountsDiagnosis } from "../generated/CountsDiagnosis";
import type { ServerInput } from "../generated/ServerInput";
import type { DiagnosePlan } from "../generated/DiagnosePlan";
export type { DiagnosePlan };
"#;

/// What the labelled key search works with: the connections it takes, the
/// labels (pids) among them, and the keys expected to fit by chance.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct DiagnosePlan {
    connections: usize,
    labels: usize,
    members: u32,
    expected_false_matches: f64,
    more_needed: Option<f64>,
}

/// Reads pasted text with the model's reader: socket tables (`ss -tanpe`,
/// or `ss -ltnpe` and `ss -tnpe`) as a `Snapshot` with an account of every
/// line, or per-worker counts (`ServerInput`). `port` (0: decide) picks the
/// port diagnosed; `proto` is `"tcp"`, `"udp"` or empty (decide).
#[wasm_bindgen(js_name = readServer, unchecked_return_type = "ServerInput")]
pub fn wasm_read_server(text: &str, port: u16, proto: &str) -> JsResult<JsValue> {
    let proto = match proto {
        "tcp" => Some(Proto::Tcp),
        "udp" => Some(Proto::Udp),
        "" => None,
        other => {
            return Err(JsError::new(&format!(
                "proto {other:?} is neither tcp nor udp"
            )))
        }
    };
    to_js(&read_server(text, (port != 0).then_some(port), proto).js()?)
}

/// Per-worker counts judged by their total (`CountsDiagnosis`); `workers`
/// says how many workers there are when some got none and are not listed.
#[wasm_bindgen(js_name = diagnoseCounts, unchecked_return_type = "CountsDiagnosis")]
pub fn wasm_diagnose_counts(counts: Vec<f64>, workers: Option<u32>) -> JsResult<JsValue> {
    let mut c = Vec::with_capacity(counts.len());
    for (i, &x) in counts.iter().enumerate() {
        if !(x >= 0.0 && x.fract() == 0.0 && x <= 1e15) {
            return Err(JsError::new(&format!(
                "counts[{i}]: {x} is not a whole number of connections"
            )));
        }
        c.push(x as u64);
    }
    to_js(&diagnose_counts(&c, workers).js()?)
}

/// One port's sockets grouped, and the labelled key search over them: what
/// the parts searched here found, and what other parts reported.
#[wasm_bindgen(js_name = Diagnose)]
pub struct WasmDiagnose {
    prepared: Prepared,
    found: Found,
    /// Keys searched here or reported by [`WasmDiagnose::merge`].
    covered: u64,
}

#[wasm_bindgen(js_class = Diagnose)]
impl WasmDiagnose {
    /// Groups `snapshot` (`Snapshot`) under the rules of `kernel` (a profile
    /// name or a release such as `6.1.0-18-amd64`); throws naming what is
    /// wrong with the snapshot.
    #[wasm_bindgen(constructor)]
    pub fn new(
        kernel: &str,
        #[wasm_bindgen(unchecked_param_type = "Snapshot")] snapshot: JsValue,
    ) -> JsResult<WasmDiagnose> {
        let profile = Profile::resolve(kernel, None).js()?;
        let snap: Snapshot = from_js(snapshot, "snapshot")?;
        Ok(WasmDiagnose {
            prepared: prepare(profile, &snap).js()?,
            found: Found::new(LIST_CAP),
            covered: 0,
        })
    }

    /// Whether there is a key to search for.
    pub fn searchable(&self) -> bool {
        self.prepared.searchable()
    }

    /// Why there is no search (`Reason`), or null.
    #[wasm_bindgen(js_name = noSearch, unchecked_return_type = "Reason | null")]
    pub fn no_search(&self) -> JsResult<JsValue> {
        to_js(&self.prepared.no_search())
    }

    /// The search's figures (`DiagnosePlan`), or null without a search.
    #[wasm_bindgen(unchecked_return_type = "DiagnosePlan | null")]
    pub fn plan(&self) -> JsResult<JsValue> {
        to_js(&self.prepared.plan().map(|p| {
            DiagnosePlan {
                connections: p.observations().count(),
                labels: p.labels().len(),
                members: p.members(),
                expected_false_matches: p.expected_false_matches(),
                more_needed: p
                    .more_needed(reuseport_model::recover::TARGET)
                    .map(|n| n as f64),
            }
        }))
    }

    /// Searches keys `start..end` (within `0..2^32`), adds what it finds to
    /// this handle's and returns it (`SearchPart`).
    #[wasm_bindgen(unchecked_return_type = "SearchPart")]
    pub fn search(&mut self, start: f64, end: f64) -> JsResult<JsValue> {
        let space = SPACE as f64;
        if !(0.0..=space).contains(&start) || !(start..=space).contains(&end) {
            return Err(JsError::new(&format!(
                "search range {start}..{end} is not within 0..2^32"
            )));
        }
        let mut part = Found::new(LIST_CAP);
        self.prepared.search(start as u64..end as u64, &mut part);
        self.add(part.count, &part.values, end as u64 - start as u64);
        to_js(&SearchPart {
            count: part.count as f64,
            values: part.values,
        })
    }

    /// Adds what another handle found over `searched` keys of its own part.
    pub fn merge(&mut self, count: f64, values: Vec<u32>, searched: f64) {
        self.add(count as u64, &values, searched as u64);
    }

    fn add(&mut self, count: u64, values: &[u32], searched: u64) {
        self.found.count += count;
        let room = self.found.cap.saturating_sub(self.found.values.len());
        self.found
            .values
            .extend_from_slice(&values[..values.len().min(room)]);
        self.found.values.sort_unstable();
        self.covered = (self.covered + searched).min(SPACE);
    }

    /// Keys searched so far, here and in merged parts.
    pub fn searched(&self) -> f64 {
        self.covered as f64
    }

    /// The diagnosis (`Diagnosis`): with the key when the whole space was
    /// searched, else as if not searched (the reason says so).
    #[wasm_bindgen(unchecked_return_type = "Diagnosis")]
    pub fn finish(&self) -> JsResult<JsValue> {
        let found = (self.covered >= SPACE).then_some(&self.found);
        to_js(&self.prepared.finish(found))
    }
}

/// Writes this module's records as TypeScript (see `ts_export` in lib.rs).
#[cfg(all(test, feature = "ts"))]
pub(crate) fn export_ts(cfg: &ts_rs::Config) -> Result<(), ts_rs::ExportError> {
    use ts_rs::TS;
    DiagnosePlan::export_all(cfg)?;
    Ok(())
}
