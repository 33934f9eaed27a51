//! The paste session's table: the filter, the rows and unusable lines in
//! view, the observations a key search takes, and the export.

use serde::Serialize;
use wasm_bindgen::prelude::*;

use super::{endpoint, BadGroup, BadOut, RowOut, WasmPaste, Why, NONE};
use crate::{to_js, JsResult};
use reuseport_model::Tuple;

#[wasm_bindgen(js_class = Paste)]
impl WasmPaste {
    /// Keeps rows whose listener (under the secret, else observed) is
    /// `listener` (-1: any) and whose text contains `query`; returns how many.
    pub fn filter(&mut self, listener: i32, query: &str) -> u32 {
        let q = query.trim();
        if listener < 0 && q.is_empty() {
            self.view = None;
            return self.rows.len() as u32;
        }
        let keyed = self.answers.iter().any(|&a| a != NONE);
        let view: Vec<u32> = (0..self.rows.len() as u32)
            .filter(|&i| {
                let r = &self.rows[i as usize];
                let l = if keyed {
                    self.answers[i as usize]
                } else {
                    r.observed
                };
                (listener < 0 || l == listener as u32)
                    && (q.is_empty() || {
                        let text = format!(
                            "{} {} {}",
                            r.line,
                            endpoint(r.tuple.saddr, r.tuple.sport),
                            endpoint(r.tuple.daddr, r.tuple.dport)
                        );
                        text.contains(q)
                    })
            })
            .collect();
        let n = view.len() as u32;
        self.view = Some(view);
        n
    }

    /// Rows shown (after the filter).
    #[wasm_bindgen(js_name = rowCount)]
    pub fn row_count(&self) -> u32 {
        self.view.as_ref().map_or(self.rows.len(), Vec::len) as u32
    }

    /// Rows `start .. start + count` of the filtered table (`Row[]`).
    #[wasm_bindgen(unchecked_return_type = "Row[]")]
    pub fn rows(&self, start: u32, count: u32) -> JsResult<JsValue> {
        let out: Vec<RowOut> = (start..start.saturating_add(count))
            .map_while(|i| self.index(i as usize))
            .map(|k| {
                let r = &self.rows[k];
                RowOut {
                    line: r.line,
                    client: endpoint(r.tuple.saddr, r.tuple.sport),
                    server: endpoint(r.tuple.daddr, r.tuple.dport),
                    listener: (self.answers[k] != NONE).then_some(self.answers[k]),
                    observed: (r.observed != NONE).then_some(r.observed),
                }
            })
            .collect();
        to_js(&out)
    }

    /// Unusable lines `start .. start + count` (`BadLine[]`).
    #[wasm_bindgen(unchecked_return_type = "BadLine[]")]
    pub fn bad(&self, start: u32, count: u32) -> JsResult<JsValue> {
        let fmt = self.session.detected().map(|d| d.format);
        let out: Vec<BadOut> = self
            .bad
            .iter()
            .skip(start as usize)
            .take(count as usize)
            .map(|b| BadOut {
                line: b.line,
                format: fmt,
                group: match b.why {
                    Why::Line(_) => BadGroup::LineError,
                    Why::Side(_) => BadGroup::Undecided,
                },
                reason: &b.why,
                text: &b.text,
            })
            .collect();
        to_js(&out)
    }

    /// Up to `max` rows that carry an observed listener: `{ tuple, listener }[]`.
    #[wasm_bindgen(unchecked_return_type = "Observation[]")]
    pub fn observations(&self, max: u32) -> JsResult<JsValue> {
        let out: Vec<Observation> = self
            .rows
            .iter()
            .filter(|r| r.observed != NONE)
            .take(max as usize)
            .map(|r| Observation {
                tuple: r.tuple,
                listener: r.observed,
            })
            .collect();
        to_js(&out)
    }

    /// Rows `start .. start + count` as CSV (with the header when `header`):
    /// the first column is the page's own line format, so an export reads back.
    #[wasm_bindgen(js_name = exportCsv)]
    pub fn export_csv(&self, start: u32, count: u32, header: bool) -> String {
        let mut s = String::new();
        if header {
            s.push_str("page_line,line,client,server,listener,observed\n");
        }
        for i in start..start.saturating_add(count) {
            let Some(k) = self.index(i as usize) else {
                break;
            };
            let r = &self.rows[k];
            let c = endpoint(r.tuple.saddr, r.tuple.sport);
            let d = endpoint(r.tuple.daddr, r.tuple.dport);
            let l = self.answers[k];
            let shown = |v: u32| {
                if v == NONE {
                    String::new()
                } else {
                    v.to_string()
                }
            };
            let page = if l != NONE {
                format!("{c} -> {d} listener {l}")
            } else {
                format!("{c} -> {d}")
            };
            s.push_str(&format!(
                "\"{page}\",{},\"{c}\",\"{d}\",{},{}\n",
                r.line,
                shown(l),
                shown(r.observed)
            ));
        }
        s
    }

    /// Rows `start .. start + count` as JSON objects, comma-separated.
    #[wasm_bindgen(js_name = exportJson)]
    pub fn export_json(&self, start: u32, count: u32) -> String {
        let mut parts = Vec::new();
        for i in start..start.saturating_add(count) {
            let Some(k) = self.index(i as usize) else {
                break;
            };
            let r = &self.rows[k];
            let opt = |v: u32| {
                if v == NONE {
                    "null".to_string()
                } else {
                    v.to_string()
                }
            };
            parts.push(format!(
                "{{\"line\":{},\"client\":\"{}\",\"server\":\"{}\",\"listener\":{},\"observed\":{}}}",
                r.line,
                endpoint(r.tuple.saddr, r.tuple.sport),
                endpoint(r.tuple.daddr, r.tuple.dport),
                opt(self.answers[k]),
                opt(r.observed)
            ));
        }
        parts.join(",")
    }
}

/// A row that carries an observed listener: what a key search uses.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize)]
pub(super) struct Observation {
    tuple: Tuple,
    listener: u32,
}
