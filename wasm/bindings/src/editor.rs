//! The program editor's inputs (feature `lookup`): a program in any form
//! people have, datagram lines, and QUIC packets to put in them. Each
//! reader is the model's; this file converts and names the line.

use reuseport_model::quic::{self, QuicPacketSpec};
use reuseport_model::reuseport::cbpf;
use reuseport_model::reuseport::datagram::parse_datagram_line;
use reuseport_model::reuseport::Program;
use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::{from_js, to_js, IntoJs, JsResult};

#[wasm_bindgen(typescript_custom_section)]
const TS_EDITOR: &str = r#"
import type { Datagram } from "../generated/Datagram";
import type { QuicPacketSpec } from "../generated/QuicPacketSpec";
import type { ReloadReport } from "../generated/ReloadReport";
import type { ReloadSpec } from "../generated/ReloadSpec";
/** A program read from text, with the line (from 1) of each classic instruction (empty for other kinds). */
export type ReadProgram = { program: Program; lines: number[]; form: "json" | "text" };
/** One line of datagram text: the datagram, or why the line is not one. */
export type DatagramLine = { line: number; datagram: Datagram; error?: undefined } | { line: number; error: string; datagram?: undefined };
"#;

/// What [`wasm_read_program`] returns (TypeScript: `ReadProgram`).
#[derive(Serialize)]
struct ReadProgram {
    program: Program,
    lines: Vec<u32>,
    form: &'static str,
}

/// The longest program text read (the model's bound for classic text).
const MAX_PROGRAM_TEXT: usize = cbpf::MAX_TEXT;

/// The line of each instruction in a JSON program: the `[` that opens each
/// array two levels down (`[[..], ..]` or `{"insns": [[..], ..]}`).
fn json_insn_lines(text: &str) -> Vec<u32> {
    let (mut depth, mut line, mut in_str, mut esc) = (0u32, 1u32, false, false);
    let mut out = Vec::new();
    for c in text.chars() {
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, '\\') => esc = true,
                (false, '"') => in_str = false,
                _ => {}
            }
        } else {
            match c {
                '"' => in_str = true,
                '[' => {
                    depth += 1;
                    if depth == 2 {
                        out.push(line);
                    }
                }
                ']' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        if c == '\n' {
            line += 1;
        }
    }
    out
}

/// Reads a program: JSON (`{"kind": "cbpf", "insns": [[code, jt, jf, k], ...]}`,
/// any other kind the model runs, or a bare `[[code, jt, jf, k], ...]`),
/// `bpf_asm` text, the C array `tcpdump -dd` prints, or `tcpdump -ddd`'s
/// decimal lines. Throws a sentence that starts with `line N:`.
#[wasm_bindgen(js_name = readProgram, unchecked_return_type = "ReadProgram")]
pub fn wasm_read_program(text: &str) -> JsResult<JsValue> {
    if text.len() > MAX_PROGRAM_TEXT {
        return Err(JsError::new(&format!(
            "line 1: the text is {} bytes; programs are read up to {MAX_PROGRAM_TEXT}",
            text.len()
        )));
    }
    let t = text.trim_start();
    let object = t
        .strip_prefix('{')
        .is_some_and(|r| r.trim_start().starts_with('"'));
    let array = t
        .strip_prefix('[')
        .is_some_and(|r| r.trim_start().starts_with('['));
    let json_err = |e: serde_json::Error| JsError::new(&format!("line {}: {e}", e.line().max(1)));
    let (program, lines, form) = if object {
        let p: Program = serde_json::from_str(text).map_err(json_err)?;
        let lines = match &p {
            Program::Cbpf { .. } => json_insn_lines(text),
            _ => Vec::new(),
        };
        (p, lines, "json")
    } else if array {
        let insns: Vec<cbpf::Insn> = serde_json::from_str(text).map_err(json_err)?;
        (Program::Cbpf { insns }, json_insn_lines(text), "json")
    } else {
        let located = cbpf::parse_located(text).js()?;
        let lines = located.iter().map(|&(_, l)| l as u32).collect();
        let insns = located.into_iter().map(|(i, _)| i).collect();
        (Program::Cbpf { insns }, lines, "text")
    };
    to_js(&ReadProgram {
        program,
        lines,
        form,
    })
}

/// One line of [`wasm_parse_datagrams`] (TypeScript: `DatagramLine`).
#[derive(Serialize)]
struct DatagramLine {
    line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    datagram: Option<reuseport_model::reuseport::datagram::Datagram>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// Reads datagram lines (`SADDR:SPORT DADDR:DPORT [payload=HEX] [cpu=N]`),
/// at most `max` of them; blank and `#` lines are skipped; a bad line gives
/// its error, never a throw.
#[wasm_bindgen(js_name = parseDatagrams, unchecked_return_type = "DatagramLine[]")]
pub fn wasm_parse_datagrams(text: &str, max: usize) -> JsResult<JsValue> {
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if out.len() >= max {
            break;
        }
        let line = i as u32 + 1;
        match parse_datagram_line(l) {
            Ok(None) => {}
            Ok(Some(d)) => out.push(DatagramLine {
                line,
                datagram: Some(d),
                error: None,
            }),
            Err(e) => out.push(DatagramLine {
                line,
                datagram: None,
                error: Some(e),
            }),
        }
    }
    to_js(&out)
}

/// The bytes of a QUIC packet (`QuicPacketSpec`), as lowercase hex.
#[wasm_bindgen(js_name = quicPacket)]
pub fn wasm_quic_packet(
    #[wasm_bindgen(unchecked_param_type = "QuicPacketSpec")] spec: JsValue,
) -> JsResult<String> {
    let s: QuicPacketSpec = from_js(spec, "QUIC packet")?;
    let bytes = quic::packet(&s).js()?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The QUIC reload scenario in the model (`ReloadSpec`, a kernel profile
/// or release, and the IPv4 hash key): `ReloadReport`.
#[wasm_bindgen(js_name = quicReload, unchecked_return_type = "ReloadReport")]
pub fn wasm_quic_reload(
    #[wasm_bindgen(unchecked_param_type = "ReloadSpec")] spec: JsValue,
    kernel: &str,
    key: u32,
) -> JsResult<JsValue> {
    let s: quic::reload::ReloadSpec = from_js(spec, "reload scenario")?;
    let profile = reuseport_model::Profile::resolve(kernel, None).js()?;
    let keys = reuseport_model::Keys {
        v4: key,
        v6_outer: 0,
        v6_inner: 0,
    };
    let report = quic::reload::simulate(profile, &s, keys).map_err(|e| JsError::new(&e))?;
    to_js(&report)
}

/// The connection-ID program (nginx's helper logic in classic BPF), as `bpf_asm` text.
#[wasm_bindgen(js_name = cidProgram)]
pub fn wasm_cid_program() -> String {
    quic::CID_PROGRAM.into()
}

#[cfg(test)]
mod tests {
    use super::json_insn_lines;

    #[test]
    fn json_instructions_are_found_on_their_lines() {
        let text = "{\"kind\": \"cbpf\", \"insns\": [\n  [32, 0, 0, 0],\n\n  [22, 0, 0, 0]\n]}";
        assert_eq!(json_insn_lines(text), vec![2, 4]);
        assert_eq!(json_insn_lines("[[6,0,0,1]]"), vec![1]);
    }
}
