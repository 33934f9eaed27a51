//! The paste session behind the page's paste worker: the model's parsers
//! and side decision over streamed text, then the model's selection per
//! connection. It holds the connections in wasm memory and hands the page
//! counts and the rows in view; it decides nothing the model does not.

use std::net::SocketAddr;

use reuseport_model::lookup::Host;
use reuseport_model::paste::session::{self, Read, Session, Unused as Why};
use reuseport_model::paste::{
    self, Conn, Decision, Detected, Evidence, Format, LineError, LineNote,
};
use reuseport_model::spread::SpreadRun;
use reuseport_model::tuple::parse_bind;
use reuseport_model::{GroupSpec, Keys, Profile, Proto, ReuseportGroup, Tuple};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use crate::{from_js, to_js, IntoJs, JsResult};

// The session's other exports: the table in view and its export (table.rs),
// and the secret-free simulation over the rows (spread.rs).
mod spread;
mod table;

// The session's requests and answers are the records below, written as
// TypeScript by ts-rs (feature `ts`) into src/model/generated/;
// src/model/paste-protocol.ts names them for the page and the paste worker.
#[wasm_bindgen(typescript_custom_section)]
const TS_PASTE_TYPES: &str = r#"
import type { AnswerRequest } from "../generated/AnswerRequest";
import type { Answered } from "../generated/Answered";
import type { BadLine } from "../generated/BadLine";
import type { ByListeners } from "../generated/ByListeners";
import type { ExplainedRow } from "../generated/ExplainedRow";
import type { LayoutAnswered } from "../generated/LayoutAnswered";
import type { LookupRow } from "../generated/LookupRow";
import type { NotedLine } from "../generated/NotedLine";
import type { Observation } from "../generated/Observation";
import type { ReadOptions } from "../generated/ReadOptions";
import type { Row } from "../generated/Row";
import type { LayoutRequest, ReadSummary } from "../paste-protocol";
import type { Counted } from "../generated/Counted";
import type { Comparison } from "../generated/Comparison";
import type { Spread } from "../generated/Spread";
"#;

/// Lines longer than the model's bound are cut here first, so a huge line
/// never has to be buffered whole.
const MAX_PENDING: usize = 2 * paste::MAX_LINE_BYTES;
/// Unusable lines kept for listing (all are counted).
const MAX_BAD_KEPT: usize = 100_000;
/// Connections kept (the rest are counted as cut).
pub const MAX_ROWS: usize = 5_000_000;
/// No listener.
const NONE: u32 = u32::MAX;

#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "ReadOptions"))]
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PasteConfig {
    format: Option<String>,
    /// CSV columns as the reader chose them (skips detection).
    #[serde(default)]
    columns: Option<paste::Columns>,
    bind: Option<String>,
    #[serde(default)]
    flip: bool,
}

#[derive(Clone)]
struct Bad {
    line: u32,
    why: Why,
    text: String,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "BadLine"))]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BadOut<'a> {
    line: u32,
    format: Option<Format>,
    group: BadGroup,
    reason: &'a Why,
    text: &'a str,
}

/// Which message table says a bad line's reason.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
enum BadGroup {
    /// A line the parser refused (`LineError`).
    LineError,
    /// A connection whose sides were not decided (`Undecided`).
    Undecided,
}

#[derive(Clone, Copy)]
struct Rec {
    line: u32,
    tuple: Tuple,
    observed: u32,
    /// The protocol the line shows, if it does.
    proto: Option<Proto>,
}

/// Notes kept for listing (all are counted).
const MAX_NOTES_KEPT: usize = 100_000;

/// A line read with a note (`LineNote`), for the page's list.
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "NotedLine"))]
#[derive(Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
struct Noted {
    line: u32,
    note: LineNote,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "PasteServer"))]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Server {
    addr: String,
    port: u16,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "PasteSummary"))]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    detected: Option<Detected>,
    lines: u32,
    connections: u32,
    listening: u32,
    listening_addrs: Vec<String>,
    skipped: std::collections::BTreeMap<String, u32>,
    bad: u32,
    decision: Decision,
    /// Under the per-line decision: the rows each line basis decided
    /// (`listening`, `format`, `systemPort`, `servicePort`).
    sides: std::collections::BTreeMap<String, u32>,
    undecided: u32,
    duplicates: u32,
    rows: u32,
    observed: u32,
    server: Option<Server>,
    partial: bool,
    cut: u32,
    /// Rows that are IPv6 (their answers need the IPv6 keys too).
    v6: u32,
    /// Rows read with a note (address translation, a dropped zone).
    notes: u32,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "AnswerRequest"))]
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerRequest {
    kernel: String,
    group: GroupSpec,
    keys: Option<Keys>,
    #[serde(default)]
    cpu: u32,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "Answered"))]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Answered {
    listeners: u32,
    counts: Option<Vec<u32>>,
    observed: Option<Vec<u32>>,
    unrouted: u32,
    disagree: u32,
    /// Rows whose line shows another protocol than the group's: not
    /// answered.
    mismatched: u32,
    /// The first of them, as the model refuses it.
    mismatch: Option<LineError>,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "Row"))]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RowOut {
    line: u32,
    client: String,
    server: String,
    listener: Option<u32>,
    observed: Option<u32>,
}

/// A paste being read, then answered.
#[wasm_bindgen(js_name = Paste)]
pub struct WasmPaste {
    /// The model's reading of the lines ([`paste::Session`]).
    session: Session<Why>,
    /// What the session handed out and is not yet kept below.
    ready: Vec<Read<Why>>,
    pending: String,
    skipping_long: bool,
    bad: Vec<Bad>,
    notes: Vec<Noted>,
    notes_count: u32,
    /// Under a per-line decision: the rows each line basis decided.
    sides: std::collections::BTreeMap<String, u32>,
    rows: Vec<Rec>,
    answers: Vec<u32>,
    view: Option<Vec<u32>>,
    spread: Option<SpreadRun>,
    /// The layout answered last, for explanations (feature `lookup`).
    host: Option<(reuseport_model::lookup::Host, Proto)>,
}

/// A layout request: several sockets, as a call log, instead of one group.
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "LayoutRequest"))]
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LayoutRequest {
    kernel: String,
    layout: reuseport_model::lookup::CallLog,
    keys: Option<Keys>,
    proto: Proto,
    #[serde(default)]
    cpu: u32,
}

/// The layout's answers (`answerLayout`): each socket's calls, and
/// per-socket counts under the keys.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LayoutAnswered {
    results: Vec<reuseport_model::lookup::CallResult>,
    sockets: u32,
    counts: Option<Vec<u32>>,
    unrouted: u32,
    /// Rows whose line shows another protocol than the packets': not
    /// answered.
    mismatched: u32,
    /// The first of them, as the model refuses it.
    mismatch: Option<LineError>,
}

/// The full lookup's record for one row, under the layout answered last.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize)]
struct LookupRow {
    line: u32,
    explain: reuseport_model::lookup::LookupExplain,
}

/// The model's record for one row of the table (under a named secret).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize)]
struct ExplainedRow {
    line: u32,
    explain: reuseport_model::Explain,
}

fn group_of(req: &AnswerRequest, keys: Keys) -> JsResult<ReuseportGroup> {
    let profile = Profile::resolve(&req.kernel, None).js()?;
    let spec = GroupSpec {
        keys,
        ..req.group.clone()
    };
    Host::shorthand_group(profile, &spec).js()
}

fn endpoint(a: std::net::IpAddr, p: u16) -> String {
    SocketAddr::new(a, p).to_string()
}

#[wasm_bindgen(js_class = Paste)]
impl WasmPaste {
    /// `{ format: string | null, bind: string | null, flip }`; throws naming a bad format or bind.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "ReadOptions")] config: JsValue,
    ) -> JsResult<WasmPaste> {
        let cfg: PasteConfig = from_js(config, "paste configuration")?;
        let named = match cfg.format.as_deref() {
            None | Some("auto") => None,
            Some(f) => Some(f.parse::<Format>().js()?),
        };
        let bind = match cfg.bind.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(b) => match b.strip_prefix(':') {
                Some(port) => Some((
                    std::net::Ipv4Addr::UNSPECIFIED.into(),
                    Some(port.parse::<u16>().map_err(|_| {
                        JsError::new(&format!(
                            "listening port `{port}` is not a port number from 0 to 65535"
                        ))
                    })?),
                )),
                None => Some(parse_bind(b).js()?),
            },
        };
        // Columns the reader chose make the format CSV with exactly those roles.
        let detected = cfg.columns.map(|c| Detected {
            format: Format::Csv,
            header: c.header,
            columns: Some(c),
            evidence: Evidence::default(),
        });
        Ok(WasmPaste {
            session: Session::new(session::Options {
                detected,
                named,
                bind,
                flip: cfg.flip,
                proto: None,
                max_rows: Some(MAX_ROWS),
            }),
            ready: Vec::new(),
            pending: String::new(),
            skipping_long: false,
            bad: Vec::new(),
            notes: Vec::new(),
            notes_count: 0,
            sides: Default::default(),
            rows: Vec::new(),
            answers: Vec::new(),
            view: None,
            spread: None,
            host: None,
        })
    }

    /// Takes the next piece of text (any size, cut anywhere).
    pub fn feed(&mut self, chunk: &str) {
        let mut rest = chunk;
        while let Some(nl) = rest.find('\n') {
            let (head, tail) = rest.split_at(nl);
            self.push_part(head);
            let line = std::mem::take(&mut self.pending);
            let long = std::mem::replace(&mut self.skipping_long, false);
            self.take_line(line, long);
            rest = &tail[1..];
        }
        self.push_part(rest);
    }

    fn push_part(&mut self, s: &str) {
        if self.skipping_long {
            return;
        }
        if self.pending.len() + s.len() > MAX_PENDING {
            // Keep a prefix to show; the rest of the line is dropped as it arrives.
            let room = MAX_PENDING.saturating_sub(self.pending.len());
            let mut cut = room.min(s.len());
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            self.pending.push_str(&s[..cut]);
            self.skipping_long = true;
        } else {
            self.pending.push_str(s);
        }
    }

    fn take_line(&mut self, mut line: String, long: bool) {
        if line.ends_with('\r') {
            line.pop();
        }
        if long {
            // Past the model's bound: the parser refuses it as too long.
            line.push_str(&"x".repeat(paste::MAX_LINE_BYTES));
        }
        let ready = &mut self.ready;
        self.session.line(&line, &mut |r| ready.push(r));
        self.keep_ready();
    }

    /// Keeps what the session handed out: rows, notes, and unusable lines
    /// for listing (all are counted).
    fn keep_ready(&mut self) {
        for r in self.ready.drain(..) {
            match r {
                Read::Row {
                    line,
                    tuple,
                    conn,
                    basis,
                } => {
                    if let Some(b) = basis {
                        *self.sides.entry(serde_plain(&b)).or_default() += 1;
                    }
                    self.rows.push(Rec {
                        line,
                        tuple,
                        observed: conn.listener.unwrap_or(NONE),
                        proto: conn.proto,
                    });
                    if let Some(note) = conn.note {
                        self.notes_count += 1;
                        if self.notes.len() < MAX_NOTES_KEPT {
                            self.notes.push(Noted { line, note });
                        }
                    }
                }
                Read::Bad { line, error, text } => {
                    if self.bad.len() < MAX_BAD_KEPT {
                        self.bad.push(Bad {
                            line,
                            why: error,
                            text,
                        });
                    }
                }
            }
        }
    }

    /// Ends the input (`partial`: the reader stopped early): decides the
    /// sides, orients every connection, drops repeated 4-tuples, and
    /// returns the summary (`ReadSummary`: the generated `PasteSummary`).
    #[wasm_bindgen(unchecked_return_type = "ReadSummary")]
    pub fn finish(&mut self, partial: bool) -> JsResult<JsValue> {
        // The last line, unless the reading stopped in the middle of it.
        if !partial && (!self.pending.is_empty() || self.skipping_long) {
            let line = std::mem::take(&mut self.pending);
            let long = std::mem::replace(&mut self.skipping_long, false);
            self.take_line(line, long);
        }
        let ready = &mut self.ready;
        let decision = self.session.finish(&mut |r| ready.push(r));
        self.keep_ready();
        self.bad.sort_by_key(|b| b.line);
        self.answers = vec![NONE; self.rows.len()];
        self.view = None;
        let server = self.rows.first().map(|r| Server {
            addr: r.tuple.daddr.to_string(),
            port: r.tuple.dport,
        });
        let observed = self.rows.iter().filter(|r| r.observed != NONE).count() as u32;
        let counts = self.session.counts();
        // The counts by reason are a plain object for the page, not a Map.
        let summary = Summary {
            detected: self.session.detected().cloned(),
            lines: counts.lines,
            connections: self.rows.len() as u32 + counts.duplicates + counts.undecided,
            listening: counts.listening,
            listening_addrs: counts
                .listening_addrs
                .iter()
                .map(|a| a.to_string())
                .collect(),
            skipped: counts
                .skipped
                .iter()
                .map(|(k, n)| (serde_plain(k), *n))
                .collect(),
            bad: counts.bad,
            decision,
            sides: self.sides.clone(),
            undecided: counts.undecided,
            duplicates: counts.duplicates,
            rows: self.rows.len() as u32,
            observed,
            server,
            partial,
            cut: counts.cut,
            v6: self.rows.iter().filter(|r| r.tuple.is_v6()).count() as u32,
            notes: self.notes_count,
        };
        summary
            .serialize(
                &serde_wasm_bindgen::Serializer::new()
                    .serialize_missing_as_null(true)
                    .serialize_maps_as_objects(true),
            )
            .js()
    }

    /// Answers every row for the group (`AnswerRequest` in, `Answered` out):
    /// per-listener counts under the keys when given, and as observed.
    #[wasm_bindgen(unchecked_return_type = "Answered")]
    pub fn answer(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "AnswerRequest")] req: JsValue,
    ) -> JsResult<JsValue> {
        let req: AnswerRequest = from_js(req, "answer request")?;
        let group = group_of(&req, req.keys.unwrap_or_default())?;
        let n = group.members().len();
        let mut counts = vec![0u32; n];
        let mut observed = vec![0u32; n];
        let mut any_observed = false;
        let mut unrouted = 0;
        let mut disagree = 0;
        let (mut mismatched, mut mismatch) = (0u32, None);
        let format = self.format();
        let proto = req.group.proto;
        for (i, r) in self.rows.iter().enumerate() {
            if let Err(e) = line_proto(r, format, proto) {
                mismatched += 1;
                mismatch.get_or_insert(e);
                self.answers[i] = NONE;
                continue;
            }
            let l = match group.select(&r.tuple, req.cpu) {
                Ok(c) => c.listener.unwrap_or(NONE),
                Err(_) => {
                    unrouted += 1;
                    NONE
                }
            };
            self.answers[i] = if req.keys.is_some() { l } else { NONE };
            if l != NONE && req.keys.is_some() {
                counts[l as usize] += 1;
            }
            if r.observed != NONE {
                any_observed = true;
                if let Some(c) = observed.get_mut(r.observed as usize) {
                    *c += 1;
                }
                if req.keys.is_some() && r.observed != l {
                    disagree += 1;
                }
            }
        }
        self.view = None;
        to_js(&Answered {
            listeners: n as u32,
            counts: req.keys.is_some().then_some(counts),
            observed: any_observed.then_some(observed),
            unrouted,
            disagree,
            mismatched,
            mismatch,
        })
    }

    /// The format read (CSV before any line).
    fn format(&self) -> Format {
        self.session.detected().map_or(Format::Csv, |d| d.format)
    }

    /// Rows read with a note, `start .. start + count` (`{ line, note: LineNote }[]`).
    #[wasm_bindgen(unchecked_return_type = "NotedLine[]")]
    pub fn notes(&self, start: u32, count: u32) -> JsResult<JsValue> {
        let out: Vec<Noted> = self
            .notes
            .iter()
            .skip(start as usize)
            .take(count as usize)
            .copied()
            .collect();
        to_js(&out)
    }

    /// Answers every row with the full listener lookup over a layout of
    /// sockets (`{ kernel, layout: CallLog, keys, proto, cpu }`): each
    /// socket's bind and listen answers, and the receiving socket per row
    /// (its fd) under the keys when given.
    #[wasm_bindgen(js_name = answerLayout, unchecked_return_type = "LayoutAnswered")]
    pub fn answer_layout(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "LayoutRequest")] req: JsValue,
    ) -> JsResult<JsValue> {
        use reuseport_model::lookup::Packet;
        use reuseport_model::reuseport::PacketCtx;
        let mut req: LayoutRequest = from_js(req, "layout request")?;
        if let Some(k) = req.keys {
            req.layout.keys = k;
        }
        let profile = Profile::resolve(&req.kernel, None).js()?;
        let host = Host::run(profile, &req.layout).js()?;
        let n = host.results().len();
        let mut counts = vec![0u32; n];
        let mut unrouted = 0;
        let ctx = PacketCtx::on_cpu(req.cpu);
        let (mut mismatched, mut mismatch) = (0u32, None);
        let format = self.format();
        for (i, r) in self.rows.iter().enumerate() {
            if let Err(e) = line_proto(r, format, req.proto) {
                mismatched += 1;
                mismatch.get_or_insert(e);
                self.answers[i] = NONE;
                continue;
            }
            let p = Packet {
                proto: req.proto,
                tuple: r.tuple,
                device: None,
                ctx: ctx.clone(),
            };
            let s = host.lookup(&p).socket;
            match s {
                Some(s) => counts[s] += 1,
                None => unrouted += 1,
            }
            self.answers[i] = match (req.keys, s) {
                (Some(_), Some(s)) => s as u32,
                _ => NONE,
            };
        }
        let out = LayoutAnswered {
            results: host.results(),
            sockets: n as u32,
            counts: req.keys.is_some().then_some(counts),
            unrouted,
            mismatched,
            mismatch,
        };
        self.host = Some((host, req.proto));
        self.view = None;
        to_js(&out)
    }

    /// The full lookup's record for row `index` of the filtered table, under
    /// the layout answered last (`{ line, explain: LookupExplain }`).
    #[wasm_bindgen(js_name = explainLayout, unchecked_return_type = "LookupRow")]
    pub fn explain_layout(&self, index: u32, cpu: u32) -> JsResult<JsValue> {
        use reuseport_model::lookup::Packet;
        use reuseport_model::reuseport::PacketCtx;
        let (host, proto) = self
            .host
            .as_ref()
            .ok_or_else(|| JsError::new("no layout has been answered"))?;
        let k = self
            .index(index as usize)
            .ok_or_else(|| JsError::new(&format!("row {index} is not in the table")))?;
        let r = &self.rows[k];
        let p = Packet {
            proto: *proto,
            tuple: r.tuple,
            device: None,
            ctx: PacketCtx::on_cpu(cpu),
        };
        to_js(&LookupRow {
            line: r.line,
            explain: host.lookup(&p),
        })
    }

    fn index(&self, i: usize) -> Option<usize> {
        match &self.view {
            Some(v) => v.get(i).map(|&x| x as usize),
            None => (i < self.rows.len()).then_some(i),
        }
    }

    /// The model's record for row `index` of the filtered table under the request's keys.
    #[wasm_bindgen(unchecked_return_type = "ExplainedRow")]
    pub fn explain(
        &self,
        index: u32,
        #[wasm_bindgen(unchecked_param_type = "AnswerRequest")] req: JsValue,
    ) -> JsResult<JsValue> {
        let req: AnswerRequest = from_js(req, "answer request")?;
        let keys = req
            .keys
            .ok_or_else(|| JsError::new("an explanation needs a named secret"))?;
        let k = self
            .index(index as usize)
            .ok_or_else(|| JsError::new(&format!("row {index} is not in the table")))?;
        let group = group_of(&req, keys)?;
        let r = &self.rows[k];
        to_js(&ExplainedRow {
            line: r.line,
            explain: group.explain(&r.tuple, req.cpu).js()?,
        })
    }
}

/// A row's protocol against the group's: the model's refusal when they differ.
fn line_proto(r: &Rec, format: Format, chosen: Proto) -> Result<(), LineError> {
    Conn {
        a: SocketAddr::new(r.tuple.saddr, r.tuple.sport),
        b: SocketAddr::new(r.tuple.daddr, r.tuple.dport),
        meaning: paste::Meaning::ClientFirst,
        listener: None,
        proto: r.proto,
        note: None,
    }
    .check_proto(format, chosen)
}

/// Per-worker counts as people post them (Envoy stats, `uniq -c`,
/// `worker PID … -> N connections`, a column of numbers): the model's
/// reading, `Counted` (`{ form, counts: { label, count }[], errors: { line,
/// error: CountError }[], skipped }`), for the observed counts and the
/// scenario matcher. Labels name workers, never listeners.
#[wasm_bindgen(js_name = parseCounts, unchecked_return_type = "Counted")]
pub fn wasm_parse_counts(text: &str) -> JsResult<JsValue> {
    to_js(&paste::counts::parse_counts(text))
}

/// A unit enum variant's serde name (`"blank"`), for the skipped counts.
fn serde_plain<T: Serialize>(v: &T) -> String {
    match v.serialize(&serde_wasm_bindgen::Serializer::new().serialize_maps_as_objects(true)) {
        Ok(js) => js.as_string().unwrap_or_else(|| {
            js_sys::Reflect::get(&js, &JsValue::from_str("kind"))
                .ok()
                .and_then(|k| k.as_string())
                .unwrap_or_else(|| "other".into())
        }),
        Err(_) => "other".into(),
    }
}

/// Writes this module's records as TypeScript (see `ts_export` in lib.rs).
#[cfg(all(test, feature = "ts"))]
pub(crate) fn export_ts(cfg: &ts_rs::Config) -> Result<(), ts_rs::ExportError> {
    use ts_rs::TS;
    PasteConfig::export_all(cfg)?;
    BadOut::export_all(cfg)?;
    Noted::export_all(cfg)?;
    Server::export_all(cfg)?;
    Summary::export_all(cfg)?;
    AnswerRequest::export_all(cfg)?;
    Answered::export_all(cfg)?;
    RowOut::export_all(cfg)?;
    LayoutRequest::export_all(cfg)?;
    LayoutAnswered::export_all(cfg)?;
    LookupRow::export_all(cfg)?;
    ExplainedRow::export_all(cfg)?;
    table::Observation::export_all(cfg)?;
    spread::ByListeners::export_all(cfg)?;
    Ok(())
}
