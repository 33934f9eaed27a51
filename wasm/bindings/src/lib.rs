//! # reuseport-wasm
//!
//! The thin WebAssembly layer over `reuseport-model`. It holds no kernel
//! rule of its own: it converts inputs, calls the model and hands back what
//! the model says.
//!
//! Boundary vocabulary:
//! - Every exported item is prefixed `Wasm` on the Rust side and carries a
//!   camelCase `js_name`; the TypeScript facade (`src/model/`) is the only
//!   caller.
//! - Structured inputs cross as one object (serde-wasm-bindgen). The
//!   generated `.d.ts` names the model's types (`src/model/generated/`,
//!   written by ts-rs) for every such parameter and result
//!   (`unchecked_param_type` / `unchecked_return_type`); the boundary's own
//!   small shapes are declared in TypeScript beside their Rust structs.
//! - Errors cross as `JsError` whose message is the model's full sentence.
//! - Group state lives here behind an opaque handle ([`WasmGroup`]); a
//!   host's sockets too ([`WasmHost`]), stepped by calls.
//! - Bulk packets cross as typed arrays living in wasm memory
//!   ([`WasmV4Batch`]), so a million selections cost no copying.

// The paste analyser's session and the key search live in the larger package
// only: the core package, which every widget loads, stays small.
#[cfg(feature = "lookup")]
mod diagnose;
#[cfg(feature = "lookup")]
mod editor;
#[cfg(feature = "lookup")]
mod paste;
#[cfg(feature = "lookup")]
mod sim;
#[cfg(all(test, feature = "ts"))]
mod ts_export;

use reuseport_model::batch::V4Batch;
use reuseport_model::group::AddEffect;
use reuseport_model::lookup::{Call, CallLog, Host, Packet};
use reuseport_model::reuseport::{Change, PacketCtx};
use reuseport_model::tuple::{parse_bind, Proto, Tuple};
use reuseport_model::{GroupSpec, Profile, ReuseportGroup};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use wasm_bindgen::prelude::*;

// The model's types the declarations below name (ts-rs writes them to
// src/model/generated/; both packages sit beside it, in src/model/).
#[wasm_bindgen(typescript_custom_section)]
const TS_MODEL_TYPES: &str = r#"
import type { Change } from "../generated/Change";
import type { Explain } from "../generated/Explain";
import type { GroupSpec } from "../generated/GroupSpec";
import type { GroupSummary } from "../generated/GroupSummary";
import type { Keys } from "../generated/Keys";
import type { Member } from "../generated/Member";
import type { PacketCtx } from "../generated/PacketCtx";
import type { Profile } from "../generated/Profile";
import type { Tuple } from "../generated/Tuple";
import type { EbpfObject } from "../generated/EbpfObject";
import type { MapFill } from "../generated/MapFill";
import type { MapDef } from "../generated/MapDef";
import type { EbpfProgram } from "../generated/EbpfProgram";
import type { EbpfRun } from "../generated/EbpfRun";
import type { Holds } from "../generated/Holds";
import type { Note } from "../generated/message/Note";
import type { LineError } from "../generated/message/LineError";
import type { MapRefusal } from "../generated/message/MapRefusal";
import type { ElfError } from "../generated/message/ElfError";
import type { LineAnswer } from "../generated/LineAnswer";
import type { ParsedLine } from "../generated/ParsedLine";
"#;

/// Every fallible export returns this.
pub type JsResult<T> = Result<T, JsError>;

/// One conversion from the model's errors to JavaScript's.
trait IntoJs<T> {
    fn js(self) -> JsResult<T>;
}

impl<T, E: std::fmt::Display> IntoJs<T> for Result<T, E> {
    fn js(self) -> JsResult<T> {
        self.map_err(|e| JsError::new(&e.to_string()))
    }
}

fn to_js<T: Serialize>(v: &T) -> JsResult<JsValue> {
    v.serialize(&serde_wasm_bindgen::Serializer::new().serialize_missing_as_null(true))
        .js()
}

fn from_js<T: for<'de> Deserialize<'de>>(v: JsValue, what: &str) -> JsResult<T> {
    serde_wasm_bindgen::from_value(v).map_err(|e| JsError::new(&format!("{what}: {e}")))
}

/// The most members a reuseport group holds from 4.6 (`socks[]` stops
/// doubling at 32768: `reuseport_grow`, `net/core/sock_reuseport.c`).
#[wasm_bindgen(js_name = maxGroupMembers)]
pub fn wasm_max_group_members() -> u32 {
    reuseport_model::profile::MAX_SOCKS
}

/// The most listeners the model builds: a 3.9–4.5 chain has no kernel
/// limit but one process's file descriptors (the default `fs.nr_open`).
#[wasm_bindgen(js_name = maxListeners)]
pub fn wasm_max_listeners() -> u32 {
    reuseport_model::reuseport::MAX_LISTENERS
}

/// The model's version.
#[wasm_bindgen(js_name = modelVersion)]
pub fn wasm_model_version() -> String {
    reuseport_model::version().to_string()
}

/// Every kernel profile, oldest first (`Profile[]`).
#[wasm_bindgen(js_name = profiles, unchecked_return_type = "Profile[]")]
pub fn wasm_profiles() -> JsResult<JsValue> {
    to_js(&reuseport_model::profile::PROFILES)
}

/// The profile a `--kernel` style string resolves to (`Profile`).
#[wasm_bindgen(js_name = resolveProfile, unchecked_return_type = "Profile")]
pub fn wasm_resolve_profile(kernel: &str) -> JsResult<JsValue> {
    to_js(Profile::resolve(kernel, None).js()?)
}

/// Parses pasted tuple text with the model's parser
/// ([`reuseport_model::paste::parse_tuples`]): `ParsedLine[]`, blank and
/// `#` lines skipped.
#[wasm_bindgen(js_name = parseTuples, unchecked_return_type = "ParsedLine[]")]
pub fn wasm_parse_tuples(text: &str) -> JsResult<JsValue> {
    to_js(&reuseport_model::paste::parse_tuples(text))
}

/// Parses a bound address with an optional port (`0.0.0.0`, `[::1]:8080`):
/// `{ addr, port }` with `port` null when absent; throws naming the problem.
#[wasm_bindgen(js_name = parseBind, unchecked_return_type = "ParsedBind")]
pub fn wasm_parse_bind(text: &str) -> JsResult<JsValue> {
    /// TypeScript: `ParsedBind`.
    #[derive(Serialize)]
    struct Bind {
        addr: String,
        port: Option<u16>,
    }
    let (a, p) = parse_bind(text.trim()).js()?;
    to_js(&Bind {
        addr: a.to_string(),
        port: p,
    })
}

/// Reads a classic BPF program in the forms people have: `bpf_asm` text,
/// the C array `tcpdump -dd` prints, or `tcpdump -ddd`'s decimal lines.
/// Returns the program (`{ kind: "cbpf", insns }`); throws naming the line.
#[wasm_bindgen(js_name = parseCbpf, unchecked_return_type = "Program")]
pub fn wasm_parse_cbpf(text: &str) -> JsResult<JsValue> {
    let insns = reuseport_model::reuseport::cbpf::parse(text).js()?;
    to_js(&reuseport_model::reuseport::Program::Cbpf { insns })
}

/// Reads the ELF object clang wrote for eBPF programs (`clang -target bpf
/// -O2 -c`; the bytes of a dropped `.o` file). Returns an `EbpfObject`:
///
/// - `programs`: each function of an executable section, with its `name`,
///   `section`, `kind` (`"sk_reuseport"`, `"sk_reuseport_migrate"`,
///   `"socket_filter"`, or `null` when the section name does not say it:
///   the page then asks the reader), its relocated `insns` as
///   `[code, dst, src, off, imm]`, and the object's `maps`;
/// - `maps`: each map's `name`, `mapType` (the uapi number; see
///   [`wasm_ebpf_map_type_name`]), `keySize`, `valueSize`, `maxEntries`;
/// - `license`.
///
/// To run one program in a group, give the group (`new Group({ kernel,
/// group })`) the program `{ kind: "ebpf", program, maps, extraMaps, seed }`
/// where `program` is one of `programs` (its `kind` set), `maps` is
/// `MapFill[]` (`{ map: "name", entries: [[key, value], ...] }`; a key is a
/// number or hex; a value is `{ socket: N }` for a socket map (listener N by
/// join order), `{ map: "name" }` for an array of maps, or a number or hex
/// bytes), `extraMaps` the maps user space made that the object does not
/// define (e.g. the inner `REUSEPORT_SOCKARRAY`), and `seed` the seed of
/// `bpf_get_prandom_u32`. Then `group.explainCtx(tuple, { cpu, payload: {
/// bytes: "hex" } })` returns the `Explain`, whose program pick holds
/// `ebpfRun`: the instructions taken, the helper calls with their results,
/// and how the run ended; `group.ebpfMapsAfter(tuple, ctx)` gives the maps
/// after that packet, to carry into the next. Returns `{ object, refused:
/// null }`, or for a bad object `{ object: null, refused }` with the
/// `ElfError` naming the section or instruction (said by the sentence
/// tables, `elf_error.<kind>`).
#[wasm_bindgen(js_name = readEbpf, unchecked_return_type = "EbpfRead")]
pub fn wasm_read_ebpf(bytes: &[u8]) -> JsResult<JsValue> {
    let (object, refused) = match reuseport_model::reuseport::ebpf::read(bytes) {
        Ok(o) => (Some(o), None),
        Err(e) => (None, Some(e)),
    };
    to_js(&EbpfRead { object, refused })
}

/// The result of [`wasm_read_ebpf`] (TypeScript: `EbpfRead`).
#[derive(Serialize)]
struct EbpfRead {
    object: Option<reuseport_model::reuseport::ebpf::EbpfObject>,
    refused: Option<reuseport_model::reuseport::ebpf::ElfError>,
}

/// The uapi name of a map type number (`BPF_MAP_TYPE_REUSEPORT_SOCKARRAY`
/// for 20), for the map table's labels.
#[wasm_bindgen(js_name = ebpfMapTypeName)]
pub fn wasm_ebpf_map_type_name(map_type: u32) -> String {
    reuseport_model::reuseport::ebpf::map_type::name(map_type).to_string()
}

/// The largest ELF object [`wasm_read_ebpf`] reads, in bytes (a page
/// checks a file's size against it before reading the file).
#[wasm_bindgen(js_name = ebpfMaxElfBytes)]
pub fn wasm_ebpf_max_elf_bytes() -> u32 {
    reuseport_model::reuseport::ebpf::MAX_ELF_BYTES as u32
}

/// The model's bounds on a map a reader defines (TypeScript:
/// `EbpfMapBounds`): the largest key and value in bytes and the most
/// entries, for the form's number inputs.
#[wasm_bindgen(js_name = ebpfMapBounds, unchecked_return_type = "EbpfMapBounds")]
pub fn wasm_ebpf_map_bounds() -> JsResult<JsValue> {
    use reuseport_model::reuseport::ebpf as e;
    to_js(&EbpfMapBounds {
        key_size: e::MAX_KEY_SIZE,
        value_size: e::MAX_VALUE_SIZE,
        max_entries: e::MAX_MAP_ENTRIES as u32,
    })
}

/// The result of [`wasm_ebpf_map_bounds`].
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EbpfMapBounds {
    key_size: u32,
    value_size: u32,
    max_entries: u32,
}

/// The map types the model runs, for a form's choice: each with its uapi
/// `name` and what its values are (`holds`: `"sockets"`, `"maps"` or
/// `"bytes"`), so the form asks for a socket, a map or a number.
#[wasm_bindgen(js_name = ebpfMapTypes, unchecked_return_type = "EbpfMapType[]")]
pub fn wasm_ebpf_map_types() -> JsResult<JsValue> {
    use reuseport_model::reuseport::ebpf::{fill, map_type};
    let all: Vec<EbpfMapType> = fill::KNOWN_TYPES
        .iter()
        .map(|&t| EbpfMapType {
            map_type: t,
            name: map_type::name(t),
            holds: fill::holds(t),
        })
        .collect();
    to_js(&all)
}

/// One entry of [`wasm_ebpf_map_types`] (TypeScript: `EbpfMapType`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EbpfMapType {
    map_type: u32,
    name: &'static str,
    holds: reuseport_model::reuseport::ebpf::fill::Holds,
}

/// What a map of type `mapType` holds: `"sockets"`, `"maps"` or `"bytes"`.
#[wasm_bindgen(js_name = ebpfMapHolds, unchecked_return_type = "Holds")]
pub fn wasm_ebpf_map_holds(map_type: u32) -> JsResult<JsValue> {
    to_js(&reuseport_model::reuseport::ebpf::fill::holds(map_type))
}

/// The maps a group of `sockets` listeners starts with for `program` (an
/// `EbpfProgram` from [`wasm_read_ebpf`]): `{ maps: MapFill[], extraMaps:
/// MapDef[] }`, by the rule `reuseport-agent verify --program` fills its
/// live maps with (listener i at key i; a map the object only declares is
/// a SOCKHASH of u64 keys, as nginx makes it).
#[wasm_bindgen(js_name = ebpfDefaultMaps, unchecked_return_type = "EbpfMaps")]
pub fn wasm_ebpf_default_maps(
    #[wasm_bindgen(unchecked_param_type = "EbpfProgram")] program: JsValue,
    sockets: u32,
) -> JsResult<JsValue> {
    let p: reuseport_model::reuseport::ebpf::EbpfProgram = from_js(program, "eBPF program")?;
    let (maps, extra_maps) = reuseport_model::reuseport::ebpf::fill::default_maps(&p, sockets);
    to_js(&EbpfMaps { maps, extra_maps })
}

/// The maps of an eBPF program as given (TypeScript: `EbpfMaps`).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EbpfMaps {
    maps: Vec<reuseport_model::reuseport::ebpf::MapFill>,
    extra_maps: Vec<reuseport_model::reuseport::ebpf::MapDef>,
}

/// Checks the maps as the reader filled them (`{ maps, extraMaps }`) for
/// `program` in a group of `sockets` listeners, by the rules the run
/// builds them with: `null` when they build, else the `MapRefusal` naming
/// the map and key at fault (said by the sentence tables,
/// `map_refusal.<kind>`).
#[wasm_bindgen(js_name = ebpfCheckMaps, unchecked_return_type = "MapRefusal | null")]
pub fn wasm_ebpf_check_maps(
    #[wasm_bindgen(unchecked_param_type = "EbpfProgram")] program: JsValue,
    #[wasm_bindgen(unchecked_param_type = "EbpfMaps")] maps: JsValue,
    sockets: u32,
) -> JsResult<JsValue> {
    let p: reuseport_model::reuseport::ebpf::EbpfProgram = from_js(program, "eBPF program")?;
    let m: EbpfMaps = from_js(maps, "maps")?;
    match reuseport_model::reuseport::ebpf::fill::check_maps(&p, &m.maps, &m.extra_maps, sockets) {
        Ok(()) => Ok(JsValue::NULL),
        Err(why) => to_js(&why),
    }
}

#[wasm_bindgen(typescript_custom_section)]
const TS_BOUNDARY: &str = r#"
/** A map type the model runs: its uapi number and name, and what its values are. */
export type EbpfMapType = { mapType: number; name: string; holds: Holds };
/** An ELF object as the model read it, or why it could not. */
export type EbpfRead = { object: EbpfObject; refused: null } | { object: null; refused: ElfError };
/** An eBPF program's maps as user space filled them, and the maps it made that the object does not define. */
export type EbpfMaps = { maps: MapFill[]; extraMaps: MapDef[] };
/** The model's bounds on a map a reader defines: the largest key and value in bytes, the most entries. */
export type EbpfMapBounds = { keySize: number; valueSize: number; maxEntries: number };
/** A bound address and its port (null when none was given). */
export type ParsedBind = { addr: string; port: number | null };
/** A kernel profile name or release (`6.18`, `5.19.3`), and a group. */
export type GroupConfig = { kernel: string; group: GroupSpec };
"#;

/// A packet as the page gives it: its `Tuple` and its `PacketCtx`.
fn packet(
    tuple: JsValue,
    ctx: JsValue,
) -> JsResult<(Tuple, reuseport_model::reuseport::PacketCtx)> {
    Ok((from_js(tuple, "tuple")?, from_js(ctx, "packet context")?))
}

/// The input of [`WasmGroup::new`]: a kernel profile name or release, and
/// the group (TypeScript: `GroupConfig`).
#[derive(Deserialize)]
struct GroupConfig {
    kernel: String,
    group: GroupSpec,
}

impl GroupConfig {
    /// The profile and the group that `{ kernel, group: GroupSpec }` names.
    fn read(config: JsValue) -> JsResult<(&'static Profile, GroupSpec)> {
        let cfg: GroupConfig = from_js(config, "group configuration")?;
        let profile = Profile::resolve(&cfg.kernel, None).js()?;
        Ok((profile, cfg.group))
    }
}

/// A reuseport group in one kernel era, held in wasm memory.
#[wasm_bindgen(js_name = Group)]
pub struct WasmGroup {
    inner: ReuseportGroup,
}

#[wasm_bindgen(js_class = Group)]
impl WasmGroup {
    /// Builds a group from `{ kernel, group: GroupSpec }`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "GroupConfig")] config: JsValue,
    ) -> JsResult<WasmGroup> {
        let (profile, spec) = GroupConfig::read(config)?;
        // The host's group; a 3.9–4.5 chain it cannot hold is built where
        // the model says why (`Host::shorthand_group`).
        Ok(WasmGroup {
            inner: Host::shorthand_group(profile, &spec).js()?,
        })
    }

    /// The full path of one packet (`Tuple` in, `Explain` out).
    #[wasm_bindgen(unchecked_return_type = "Explain")]
    pub fn explain(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Tuple")] tuple: JsValue,
        cpu: u32,
    ) -> JsResult<JsValue> {
        let t: Tuple = from_js(tuple, "tuple")?;
        to_js(&self.inner.explain(&t, cpu).js()?)
    }

    /// The full path of one packet in a context (`Tuple`, `PacketCtx` with
    /// the receiving CPU and the first payload word, for programs).
    #[wasm_bindgen(js_name = explainCtx, unchecked_return_type = "Explain")]
    pub fn explain_ctx(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Tuple")] tuple: JsValue,
        #[wasm_bindgen(unchecked_param_type = "PacketCtx")] ctx: JsValue,
    ) -> JsResult<JsValue> {
        let (t, c) = packet(tuple, ctx)?;
        to_js(&self.inner.explain_ctx(&t, &c).js()?)
    }

    /// The run of the group's eBPF program on a packet (`Tuple`,
    /// `PacketCtx`), also when it does not decide (where `explainCtx`
    /// throws): `EbpfRun`, whose `end` says where and why it stopped, or
    /// `null` when the group has no eBPF program.
    #[wasm_bindgen(js_name = ebpfRun, unchecked_return_type = "EbpfRun | null")]
    pub fn ebpf_run(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Tuple")] tuple: JsValue,
        #[wasm_bindgen(unchecked_param_type = "PacketCtx")] ctx: JsValue,
    ) -> JsResult<JsValue> {
        let (t, c) = packet(tuple, ctx)?;
        to_js(&self.inner.ebpf_run(&t, &c).js()?)
    }

    /// The maps of the group's eBPF program after its run on this packet
    /// (`Tuple`, `PacketCtx`): `MapFill[]` with the program's updates, to
    /// give the next packet's group, or `null` when the group has no eBPF
    /// program. Throws, as `explainCtx` does, when the run does not decide.
    #[wasm_bindgen(js_name = ebpfMapsAfter, unchecked_return_type = "MapFill[] | null")]
    pub fn ebpf_maps_after(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Tuple")] tuple: JsValue,
        #[wasm_bindgen(unchecked_param_type = "PacketCtx")] ctx: JsValue,
    ) -> JsResult<JsValue> {
        let (t, c) = packet(tuple, ctx)?;
        to_js(&self.inner.ebpf_maps_after(&t, &c).js()?)
    }

    /// Explains every line of pasted text (`SADDR SPORT DADDR DPORT` or
    /// `SADDR:SPORT DADDR:DPORT`); blank and `#` lines are skipped. Returns
    /// `{ line, explain } | { line, error } | { line, refused }[]` (`error`:
    /// the model's structured line error; `refused`: why the group cannot
    /// answer the tuple), never throwing for a bad line.
    #[wasm_bindgen(js_name = explainText, unchecked_return_type = "LineAnswer[]")]
    pub fn explain_text(&self, text: &str, cpu: u32) -> JsResult<JsValue> {
        to_js(&self.inner.explain_text(text, cpu))
    }

    /// The group at a glance (`GroupSummary`).
    #[wasm_bindgen(unchecked_return_type = "GroupSummary")]
    pub fn summary(&self) -> JsResult<JsValue> {
        to_js(&self.inner.summary())
    }

    /// Every member ever joined (`Member[]`, indexed by listener number).
    #[wasm_bindgen(unchecked_return_type = "Member[]")]
    pub fn members(&self) -> JsResult<JsValue> {
        to_js(&self.inner.members())
    }

    /// `socks[]` as it stands: listener numbers, `0xffffffff` for empty
    /// slots; empty in the reservoir era. Length is `max_socks`.
    pub fn socks(&self) -> Vec<u32> {
        self.inner
            .sock_array()
            .map(|a| a.raw().to_vec())
            .unwrap_or_default()
    }

    /// The listening members in slot order (group era) or chain order,
    /// head first (reservoir era).
    pub fn listening(&self) -> Vec<u32> {
        self.inner.listening().to_vec()
    }

    /// A new socket joins (`Change`).
    #[wasm_bindgen(unchecked_return_type = "Change")]
    pub fn join(&mut self) -> JsResult<JsValue> {
        to_js(&self.inner.join().js()?)
    }

    /// Closes a listener (`Change`).
    #[wasm_bindgen(unchecked_return_type = "Change")]
    pub fn close(&mut self, listener: u32) -> JsResult<JsValue> {
        to_js(&self.inner.close(listener).js()?)
    }

    /// Shuts a TCP listener down (`Change`).
    #[wasm_bindgen(unchecked_return_type = "Change")]
    pub fn shutdown(&mut self, listener: u32) -> JsResult<JsValue> {
        to_js(&self.inner.shutdown(listener).js()?)
    }

    /// Listens again after a shutdown (`Change`).
    #[wasm_bindgen(unchecked_return_type = "Change")]
    pub fn relisten(&mut self, listener: u32) -> JsResult<JsValue> {
        to_js(&self.inner.relisten(listener).js()?)
    }

    /// Sets (`cpu` a number) or clears (`undefined`) SO_INCOMING_CPU.
    #[wasm_bindgen(js_name = setIncomingCpu, unchecked_return_type = "Change")]
    pub fn set_incoming_cpu(&mut self, listener: u32, cpu: Option<u32>) -> JsResult<JsValue> {
        to_js(&self.inner.set_incoming_cpu(listener, cpu).js()?)
    }

    /// Connects a UDP member (`Change`).
    #[wasm_bindgen(unchecked_return_type = "Change")]
    pub fn connect(&mut self, listener: u32) -> JsResult<JsValue> {
        to_js(&self.inner.connect(listener).js()?)
    }

    /// Replaces the hash keys (a new boot), `Keys`.
    #[wasm_bindgen(js_name = setKeys)]
    pub fn set_keys(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "Keys")] keys: JsValue,
    ) -> JsResult<()> {
        self.inner.set_keys(from_js(keys, "keys")?);
        Ok(())
    }

    /// Selects for every packet in `batch` (its first `len` entries),
    /// writing listener numbers (or `0xffffffff`) into the batch's output.
    #[wasm_bindgen(js_name = selectBatchV4)]
    pub fn select_batch_v4(&self, batch: &mut WasmV4Batch, len: usize, cpu: u32) -> JsResult<()> {
        let n = len.min(batch.out.len());
        let b = V4Batch {
            saddr: &batch.saddr[..n],
            sport: &batch.sport[..n],
            daddr: &batch.daddr[..n],
            dport: &batch.dport[..n],
        };
        self.inner.select_batch_v4(b, cpu, &mut batch.out[..n]).js()
    }

    /// Whether batches for this group take the vectorised path.
    #[wasm_bindgen(js_name = batchIsVectorised)]
    pub fn batch_is_vectorised(&self) -> bool {
        self.inner.batch_is_vectorised()
    }
}

/// IPv4 packets in wasm memory, structure of arrays (layout in
/// `reuseport_model::batch`): fill the views, call
/// [`WasmGroup::select_batch_v4`], read `out`. Views are invalidated when
/// wasm memory grows; take them again after any other call that allocates.
#[wasm_bindgen(js_name = V4Batch)]
pub struct WasmV4Batch {
    saddr: Vec<u32>,
    sport: Vec<u16>,
    daddr: Vec<u32>,
    dport: Vec<u16>,
    out: Vec<u32>,
}

#[wasm_bindgen(js_class = V4Batch)]
impl WasmV4Batch {
    /// Room for `capacity` packets.
    #[wasm_bindgen(constructor)]
    pub fn new(capacity: usize) -> WasmV4Batch {
        WasmV4Batch {
            saddr: vec![0; capacity],
            sport: vec![0; capacity],
            daddr: vec![0; capacity],
            dport: vec![0; capacity],
            out: vec![0; capacity],
        }
    }

    /// How many packets fit.
    pub fn capacity(&self) -> usize {
        self.out.len()
    }

    /// Client addresses, host-order numbers (a view into wasm memory).
    pub fn saddr(&mut self) -> js_sys::Uint32Array {
        // SAFETY: the view is used before any further wasm allocation; see the type's docs.
        unsafe { js_sys::Uint32Array::view_mut_raw(self.saddr.as_mut_ptr(), self.saddr.len()) }
    }

    /// Client ports (a view into wasm memory).
    pub fn sport(&mut self) -> js_sys::Uint16Array {
        // SAFETY: as for `saddr`.
        unsafe { js_sys::Uint16Array::view_mut_raw(self.sport.as_mut_ptr(), self.sport.len()) }
    }

    /// Destination addresses, host-order numbers (a view into wasm memory).
    pub fn daddr(&mut self) -> js_sys::Uint32Array {
        // SAFETY: as for `saddr`.
        unsafe { js_sys::Uint32Array::view_mut_raw(self.daddr.as_mut_ptr(), self.daddr.len()) }
    }

    /// Destination ports (a view into wasm memory).
    pub fn dport(&mut self) -> js_sys::Uint16Array {
        // SAFETY: as for `saddr`.
        unsafe { js_sys::Uint16Array::view_mut_raw(self.dport.as_mut_ptr(), self.dport.len()) }
    }

    /// Chosen listeners, `0xffffffff` for none (a view into wasm memory).
    pub fn out(&mut self) -> js_sys::Uint32Array {
        // SAFETY: as for `saddr`.
        unsafe { js_sys::Uint32Array::view_mut_raw(self.out.as_mut_ptr(), self.out.len()) }
    }
}

#[wasm_bindgen(typescript_custom_section)]
const TS_HOST: &str = r#"
import type { Call } from "../generated/Call";
import type { CallLog } from "../generated/CallLog";
import type { CallResult } from "../generated/CallResult";
import type { Layout } from "../generated/Layout";
import type { LookupExplain } from "../generated/LookupExplain";
import type { LookupRules } from "../generated/LookupRules";
import type { Packet } from "../generated/Packet";
import type { Proto } from "../generated/Proto";
import type { Refusal } from "../generated/message/Refusal";
/** A kernel and a layout: a call log, or the socket-list form {sockets, listenOrder, closed} (`Layout`), which the reader converts into calls. */
export type HostConfig = { kernel: string; layout: CallLog | Layout };
/** One packet's lookup as an animation needs it: the receiving socket, the hash the kernel computed for the choice (none when no reuseport choice was made), the group's own record when a group picked. */
export type Dispatched = { socket: number | null; hash: number | null; explain: Explain | null };
/** What the last call did to a reuseport group: the group, and its record with members named by socket (fd). */
export type HostChange = { group: number; change: Change };
"#;

/// The input of [`WasmHost::new`] (TypeScript: `HostConfig`): a kernel and
/// a layout, a call log (the socket-list `{sockets, listenOrder, closed}` form
/// is read too, converted).
#[derive(Deserialize)]
struct HostConfig {
    kernel: String,
    layout: CallLog,
}

/// One packet's lookup as an animation needs it (TypeScript: `Dispatched`).
#[derive(Serialize)]
struct Dispatched {
    socket: Option<usize>,
    hash: Option<u32>,
    explain: Option<reuseport_model::Explain>,
}

/// What the last call did to a group (TypeScript: `HostChange`).
#[derive(Serialize)]
struct HostChange {
    group: usize,
    change: Change,
}

/// Several sockets on one host, stepped by calls ([`Host::apply`]): the
/// full listener lookup, and the groups inside for the hot paths. In the
/// core package: the visualizer steps one as its scene.
#[wasm_bindgen(js_name = Host)]
pub struct WasmHost {
    inner: Host,
}

#[wasm_bindgen(js_class = Host)]
impl WasmHost {
    /// Replays `{ kernel, layout: CallLog }`; throws naming the call and
    /// field at fault.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "HostConfig")] config: JsValue,
    ) -> JsResult<WasmHost> {
        let cfg: HostConfig = from_js(config, "host configuration")?;
        WasmHost::on(&cfg.kernel, |p| Host::run(p, &cfg.layout))
    }

    /// The host a group shorthand stands for (`{ kernel, group: GroupSpec }`):
    /// the calls a program makes for it ([`CallLog::from_group`]), replayed;
    /// listener `i` is socket (fd) `i`.
    #[wasm_bindgen(js_name = fromGroup)]
    pub fn from_group(
        #[wasm_bindgen(unchecked_param_type = "GroupConfig")] config: JsValue,
    ) -> JsResult<WasmHost> {
        let cfg: GroupConfig = from_js(config, "group configuration")?;
        WasmHost::on(&cfg.kernel, |p| Host::from_group(p, &cfg.group))
    }

    /// The calls applied so far with the host's settings (`CallLog`): the
    /// log given, or the calls a socket-list layout stands for as the
    /// model converted it, then every call applied since, so a page shows
    /// and edits calls only.
    #[wasm_bindgen(unchecked_return_type = "CallLog")]
    pub fn calls(&self) -> JsResult<JsValue> {
        to_js(&self.inner.log())
    }

    /// Steps the host by one call (`Call`): the kernel's answer, `null`
    /// for success or the `Refusal`; throws naming the field when the
    /// model cannot replay the call.
    #[wasm_bindgen(unchecked_return_type = "Refusal | null")]
    pub fn apply(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "Call")] call: JsValue,
    ) -> JsResult<JsValue> {
        let c: Call = from_js(call, "call")?;
        to_js(&self.inner.apply(c).js()?)
    }

    /// What the last call did to a reuseport group (`HostChange`), its
    /// members named by socket; `undefined` when it changed none.
    #[wasm_bindgen(js_name = lastChange, unchecked_return_type = "HostChange | undefined")]
    pub fn last_change(&self) -> JsResult<JsValue> {
        let Some((g, c)) = self.inner.last_change() else {
            return Ok(JsValue::UNDEFINED);
        };
        let fds = self.inner.group_members(g).unwrap_or_default();
        let fd = |m: u32| fds.get(m as usize).map_or(m, |&f| f as u32);
        let change = match c {
            Change::Joined {
                listener,
                slot,
                effect,
            } => Change::Joined {
                listener: fd(listener),
                slot,
                effect: match effect {
                    AddEffect::EvictedClosed { listener } => AddEffect::EvictedClosed {
                        listener: fd(listener),
                    },
                    e => e,
                },
            },
            Change::Left {
                listener,
                slot,
                moved,
            } => Change::Left {
                listener: fd(listener),
                slot,
                moved: moved.map(fd),
            },
            Change::Unchanged => Change::Unchanged,
        };
        to_js(&HostChange { group: g, change })
    }

    /// A new boot: the same sockets, hashed with new keys (`Keys`).
    #[wasm_bindgen(js_name = setKeys)]
    pub fn set_keys(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "Keys")] keys: JsValue,
    ) -> JsResult<()> {
        self.inner.set_keys(from_js(keys, "keys")?);
        Ok(())
    }

    /// Each call's answer, in call order (`null` for ok).
    #[wasm_bindgen(unchecked_return_type = "(Refusal | null)[]")]
    pub fn answers(&self) -> JsResult<JsValue> {
        to_js(&self.inner.answers())
    }

    /// Each socket's last answers and where it ended up.
    #[wasm_bindgen(unchecked_return_type = "CallResult[]")]
    pub fn results(&self) -> JsResult<JsValue> {
        to_js(&self.inner.results())
    }

    /// The lookup rules in force.
    #[wasm_bindgen(unchecked_return_type = "LookupRules")]
    pub fn rules(&self) -> JsResult<JsValue> {
        to_js(&self.inner.rules())
    }

    /// Looks up one packet.
    #[wasm_bindgen(unchecked_return_type = "LookupExplain")]
    pub fn lookup(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Packet")] packet: JsValue,
    ) -> JsResult<JsValue> {
        let p: Packet = from_js(packet, "packet")?;
        to_js(&self.inner.lookup(&p))
    }

    /// Looks up one packet and hands back what an animation of it needs
    /// (`Dispatched`): the receiving socket, the reuseport hash the kernel
    /// computed for the choice, and the group's own record when a group
    /// picked. The walk's candidates stay here ([`WasmHost::lookup`] gives
    /// them): in the 3.9–4.5 reservoir era a packet meets every listener.
    #[wasm_bindgen(unchecked_return_type = "Dispatched")]
    pub fn dispatch(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Packet")] packet: JsValue,
    ) -> JsResult<JsValue> {
        use reuseport_model::message::CandidateOutcome;
        let p: Packet = from_js(packet, "packet")?;
        let x = self.inner.lookup(&p);
        let explain = x.group.map(|g| g.explain);
        // The reservoir scan records the value it tests per equal score; the
        // first one tested (at the second match) is the packet's hash.
        let reservoir = || {
            x.tables
                .iter()
                .flat_map(|t| &t.candidates)
                .find_map(|c| match &c.outcome {
                    CandidateOutcome::ReservoirTaken { phash, matches: 2 }
                    | CandidateOutcome::ReservoirNotTaken {
                        phash, matches: 2, ..
                    } => u32::from_str_radix(phash, 16).ok(),
                    _ => None,
                })
        };
        let hash = explain.as_ref().map(|e| e.hash.hash).or_else(reservoir);
        to_js(&Dispatched {
            socket: x.socket,
            hash,
            explain,
        })
    }

    /// Looks up every packet in `batch` (its first `len` entries, `proto`,
    /// received on `cpu`), writing the receiving socket (or `0xffffffff`
    /// for none) into the batch's output: the full lookup per packet, with
    /// nothing crossing the boundary but the arrays.
    #[wasm_bindgen(js_name = lookupBatchV4)]
    pub fn lookup_batch_v4(
        &self,
        batch: &mut WasmV4Batch,
        len: usize,
        #[wasm_bindgen(unchecked_param_type = "Proto")] proto: JsValue,
        cpu: u32,
    ) -> JsResult<()> {
        let proto: Proto = from_js(proto, "proto")?;
        let n = len.min(batch.out.len());
        for i in 0..n {
            let p = Packet {
                proto,
                tuple: Tuple {
                    saddr: Ipv4Addr::from(batch.saddr[i]).into(),
                    sport: batch.sport[i],
                    daddr: Ipv4Addr::from(batch.daddr[i]).into(),
                    dport: batch.dport[i],
                },
                device: None,
                ctx: PacketCtx::on_cpu(cpu),
            };
            batch.out[i] = self.inner.lookup(&p).socket.map_or(u32::MAX, |s| s as u32);
        }
        Ok(())
    }

    /// The group socket `fd` is in now (`undefined`: none, as in the
    /// 3.9–4.5 reservoir era or after its close).
    #[wasm_bindgen(js_name = groupOf)]
    pub fn group_of(&self, fd: usize) -> Option<usize> {
        self.inner.group_of(fd)
    }

    /// Group `g` at a glance (`GroupSummary`).
    #[wasm_bindgen(js_name = groupSummary, unchecked_return_type = "GroupSummary")]
    pub fn group_summary(&self, g: usize) -> JsResult<JsValue> {
        to_js(&self.group(g)?.summary())
    }

    /// Group `g`'s members by member number (`Member[]`).
    #[wasm_bindgen(js_name = groupMemberStates, unchecked_return_type = "Member[]")]
    pub fn group_member_states(&self, g: usize) -> JsResult<JsValue> {
        to_js(&self.group(g)?.members())
    }

    /// The socket (fd) of each of group `g`'s members, by member number.
    #[wasm_bindgen(js_name = groupMembers)]
    pub fn group_members(&self, g: usize) -> JsResult<Vec<u32>> {
        let fds = self
            .inner
            .group_members(g)
            .ok_or_else(|| JsError::new(&format!("the host has no group {g}")))?;
        Ok(fds.iter().map(|&f| f as u32).collect())
    }

    /// Group `g`'s listening members as sockets (fds), in slot order.
    #[wasm_bindgen(js_name = groupListening)]
    pub fn group_listening(&self, g: usize) -> JsResult<Vec<u32>> {
        let fds = self.inner.group_members(g).unwrap_or_default();
        Ok(self
            .group(g)?
            .listening()
            .iter()
            .map(|&m| fds.get(m as usize).map_or(m, |&f| f as u32))
            .collect())
    }

    /// The receiving sockets on (`proto`, `addr`, `port`), in the order a
    /// lookup walks them: the reservoir era's chain.
    #[wasm_bindgen(js_name = receivingOn)]
    pub fn receiving_on(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Proto")] proto: JsValue,
        addr: &str,
        port: u16,
    ) -> JsResult<Vec<u32>> {
        let proto: Proto = from_js(proto, "proto")?;
        let a: std::net::IpAddr = addr
            .parse()
            .map_err(|_| JsError::new(&format!("address: `{addr}` is not an IP address")))?;
        Ok(self
            .inner
            .receiving_on(proto, a, port)
            .iter()
            .map(|&f| f as u32)
            .collect())
    }
}

impl WasmHost {
    /// The host `build` makes in the profile `kernel` resolves to.
    fn on(
        kernel: &str,
        build: impl FnOnce(&'static Profile) -> Result<Host, reuseport_model::lookup::LayoutError>,
    ) -> JsResult<WasmHost> {
        let profile = Profile::resolve(kernel, None).js()?;
        Ok(WasmHost {
            inner: build(profile).js()?,
        })
    }

    fn group(&self, g: usize) -> JsResult<&ReuseportGroup> {
        self.inner
            .group(g)
            .ok_or_else(|| JsError::new(&format!("the host has no group {g}")))
    }
}

#[cfg(feature = "lookup")]
#[wasm_bindgen(typescript_custom_section)]
const TS_RECOVERY: &str = r#"
/** What adding an observation did. */
export type Added = "new" | "duplicate" | "uninformative";
/** What a recovery search found in its part of the key space: how many keys, and the first of them, increasing. */
export type SearchPart = { count: number; values: number[] };
"#;

/// What a recovery search found in its part of the key space (TypeScript: `SearchPart`).
#[cfg(feature = "lookup")]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SearchPart {
    /// Keys in the part that satisfy every observation.
    count: f64,
    /// The first [`reuseport_model::recover::LIST_CAP`] of them, in increasing order.
    values: Vec<u32>,
}

/// Observations of one group's key and a search over its 2^32 candidates
/// (`reuseport_model::recover::Plan`): each Web Worker holds one and
/// searches its own part of the range, as `reuseport-agent recover`'s
/// threads do.
#[cfg(feature = "lookup")]
#[wasm_bindgen(js_name = Recovery)]
pub struct WasmRecovery {
    plan: reuseport_model::recover::Plan,
}

#[cfg(feature = "lookup")]
#[wasm_bindgen(js_class = Recovery)]
impl WasmRecovery {
    /// An empty plan for the group `{ kernel, group: GroupSpec }` (its keys are ignored).
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "GroupConfig")] config: JsValue,
    ) -> JsResult<WasmRecovery> {
        let (profile, spec) = GroupConfig::read(config)?;
        let group = Host::spec_group(profile, &spec).js()?;
        Ok(WasmRecovery {
            plan: reuseport_model::recover::Plan::new(&group).js()?,
        })
    }

    /// Adds "`tuple` reached `listener`": `"new"`, `"duplicate"` or
    /// `"uninformative"`; throws on a contradiction or an impossible listener.
    #[wasm_bindgen(unchecked_return_type = "Added")]
    pub fn add(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "Tuple")] tuple: JsValue,
        listener: u32,
    ) -> JsResult<String> {
        use reuseport_model::recover::Added;
        let t: Tuple = from_js(tuple, "tuple")?;
        Ok(match self.plan.add(0, &t, listener).js()? {
            Added::New => "new",
            Added::Duplicate => "duplicate",
            Added::Uninformative => "uninformative",
        }
        .into())
    }

    /// Distinct informative observations.
    pub fn constraints(&self) -> usize {
        self.plan.constraints().len()
    }

    /// Observations that repeated an earlier packet.
    pub fn duplicates(&self) -> usize {
        self.plan.duplicates()
    }

    /// Keys expected to satisfy every observation by chance (`2^32 · Π p_i`).
    #[wasm_bindgen(js_name = expectedFalseMatches)]
    pub fn expected_false_matches(&self) -> f64 {
        self.plan.expected_false_matches()
    }

    /// Observations to add to bring that below the model's target
    /// (`undefined` when no observation carries information).
    #[wasm_bindgen(js_name = moreNeeded)]
    pub fn more_needed(&self) -> Option<f64> {
        self.plan
            .more_needed(reuseport_model::recover::TARGET)
            .map(|n| n as f64)
    }

    /// Searches keys `start..end` (within `0..2^32`) on the SIMD128 copy of
    /// the search loop (`SearchPart`).
    #[wasm_bindgen(unchecked_return_type = "SearchPart")]
    pub fn search(&self, start: f64, end: f64) -> JsResult<JsValue> {
        let space = reuseport_model::recover::SPACE as f64;
        if !(0.0..=space).contains(&start) || !(start..=space).contains(&end) {
            return Err(JsError::new(&format!(
                "search range {start}..{end} is not within 0..2^32"
            )));
        }
        let mut found = reuseport_model::recover::Found::new(reuseport_model::recover::LIST_CAP);
        self.plan.search(
            reuseport_model::isa::Isa::Best,
            start as u64..end as u64,
            &mut found,
        );
        to_js(&SearchPart {
            count: found.count as f64,
            values: found.values,
        })
    }

    /// Checks candidates through the model's own selection: per candidate,
    /// the index of the first observation it does not reproduce, or -1.
    pub fn verify(&self, candidates: Vec<u32>) -> Vec<i32> {
        self.plan
            .verify(&candidates)
            .into_iter()
            .map(|b| b.map_or(-1, |i| i as i32))
            .collect()
    }

    /// The compiled copy of the search loop that runs (`simd128` in a browser).
    pub fn isa(&self) -> String {
        reuseport_model::recover::isa_used(reuseport_model::isa::Isa::Best).into()
    }
}

/// What [`reuseport_model::Profile::resolve`] made of a kernel string
/// (`Note[]`: a release between profiles, a distribution build).
#[wasm_bindgen(js_name = resolveNotes, unchecked_return_type = "Note[]")]
pub fn wasm_resolve_notes(kernel: &str) -> JsResult<JsValue> {
    to_js(&Profile::resolve_notes(kernel, None))
}
