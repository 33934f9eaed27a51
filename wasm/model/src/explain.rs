//! The `explain` record: everything the kernel did to pick a socket for one
//! packet. Every animation and inspector renders this record; nothing on the
//! TypeScript side recomputes any of it.

use serde::{Deserialize, Serialize};

use crate::hash::HashTrace;
use crate::message::{
    Fallback, KernelSource, Note, ProgramOutcome, ProgramReturn, ProgramSummary, ReservoirOutcome,
    RingOutcome,
};
use crate::paste::tuple_lines::Absent;
use crate::paste::LineError;
use crate::profile::{Release, Selection};
use crate::tuple::{Proto, Tuple};

/// One packet's path through the group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Explain {
    /// The kernel profile used.
    pub profile: Release,
    /// TCP or UDP.
    pub proto: Proto,
    /// The packet.
    pub tuple: Tuple,
    /// The CPU the packet is received on (`raw_smp_processor_id()`).
    pub cpu: u32,
    /// The group as it stood.
    pub group: GroupSummary,
    /// The hash and its exact inputs.
    pub hash: HashTrace,
    /// How the member was picked.
    pub pick: Pick,
    /// The chosen listener, numbered in join order; `None` when the group
    /// returned no socket.
    pub listener: Option<u32>,
    /// Its index in `socks[]` (group era only).
    pub slot: Option<u32>,
    /// A fallback the kernel took.
    pub fallback: Option<Fallback>,
    /// Caveats and simplifications that apply to this answer.
    pub notes: Vec<Note>,
}

/// The group at the moment of the lookup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct GroupSummary {
    /// Bound address (`0.0.0.0` or `::` for a wildcard group).
    pub bind: String,
    /// Bound port.
    pub port: u16,
    /// Reservoir scan or group array.
    pub selection: Selection,
    /// Listening members.
    pub listening: u32,
    /// `max_socks` (group era).
    pub max_socks: Option<u32>,
    /// Members in the closed tail (5.14+ with migration).
    pub closed_tail: u32,
    /// The group's `incoming_cpu` counter (6.2+): members with SO_INCOMING_CPU set.
    pub incoming_cpu: u32,
    /// Whether any member is connected (`has_conns`, UDP).
    pub has_conns: bool,
}

/// How the member was picked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Pick {
    /// `reuseport_select_sock` → select by hash over `socks[]`.
    ByHash {
        /// Kernel function, file and release.
        source: KernelSource,
        /// `num_socks`, the `n` of `reciprocal_scale`.
        num_socks: u32,
        /// `hash * num_socks` as a 64-bit product, decimal.
        product: String,
        /// The same product, hex.
        product_hex: String,
        /// `product >> 32`: the first slot tried.
        scaled: u32,
        /// Each slot visited, in order (one entry on the fast path).
        steps: Vec<RingStep>,
    },
    /// A program attached to the group decided, or handed over.
    Program {
        /// Kernel function, file and release.
        source: KernelSource,
        /// What the program does.
        program: ProgramSummary,
        /// What it returned.
        returned: ProgramReturn,
        /// What the kernel made of that.
        outcome: ProgramOutcome,
        /// The selection that followed, when the program did not decide.
        #[cfg_attr(feature = "ts", ts(as = "Option<Pick>"))]
        then: Option<Box<Pick>>,
        /// A classic program's run: the instructions taken, with A and X
        /// after each, and how it ended.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        run: Option<crate::reuseport::cbpf::CbpfRun>,
        /// An eBPF program's run: the instructions taken, the helper calls
        /// with their results, and how it ended.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        ebpf_run: Option<crate::reuseport::ebpf::EbpfRun>,
    },
    /// The 3.9–4.5 reservoir scan over the listener chain.
    Reservoir {
        /// Kernel function, file and release.
        source: KernelSource,
        /// The listeners on the chain, in chain order (newest first): the
        /// first [`EXPLAIN_STEPS`], then only those that took the lead, so the
        /// chosen one is always here.
        steps: Vec<ReservoirStep>,
        /// Listeners the scan visited that `steps` leaves out (past the first
        /// [`EXPLAIN_STEPS`], not taken): `steps.len() + omitted` is the
        /// chain's length.
        omitted: u32,
    },
}

/// How many reservoir steps an explain record lists before it keeps only
/// the steps that took the lead: a bound of the record (a chain can hold a
/// million listeners, and a step a line of output each), not of the scan.
pub const EXPLAIN_STEPS: u32 = 256;

/// One slot visited by select-by-hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RingStep {
    /// Index in `socks[]`.
    pub slot: u32,
    /// The listener there.
    pub listener: u32,
    /// What happened there.
    pub outcome: RingOutcome,
    /// Whether this slot's member was returned.
    pub chosen: bool,
}

/// One listener on the chain during a reservoir scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ReservoirStep {
    /// Position on the chain (0 = head, the newest listener).
    pub position: u32,
    /// The listener.
    pub listener: u32,
    /// Its `compute_score`.
    pub score: i32,
    /// `matches` after this socket.
    pub matches: u32,
    /// The value tested (`phash`), hex: the hash itself for the second
    /// equal socket, then successive `next_pseudo_random32` values.
    pub phash: Option<String>,
    /// `reciprocal_scale(phash, matches)`; the socket replaces the current
    /// pick when this is 0.
    pub scaled: Option<u32>,
    /// Whether this socket became the current pick.
    pub taken: bool,
    /// What happened.
    pub outcome: ReservoirOutcome,
}

/// One answered line of pasted text: the model's record, or why there is
/// none.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(untagged)]
pub enum LineAnswer {
    /// The group's answer for the line's tuple.
    Explain {
        /// The line number, from 1.
        line: u32,
        /// The whole selection (boxed: the other answers are small).
        explain: Box<Explain>,
        /// Never written.
        #[serde(skip_serializing)]
        #[cfg_attr(feature = "ts", ts(optional, type = "undefined"))]
        error: Absent,
        /// Never written.
        #[serde(skip_serializing)]
        #[cfg_attr(feature = "ts", ts(optional, type = "undefined"))]
        refused: Absent,
    },
    /// The line is not a tuple.
    Error {
        /// The line number, from 1.
        line: u32,
        /// Why, as the model's structured line error.
        error: LineError,
        /// Never written.
        #[serde(skip_serializing)]
        #[cfg_attr(feature = "ts", ts(optional, type = "undefined"))]
        explain: Absent,
        /// Never written.
        #[serde(skip_serializing)]
        #[cfg_attr(feature = "ts", ts(optional, type = "undefined"))]
        refused: Absent,
    },
    /// The tuple is one the group cannot answer.
    Refused {
        /// The line number, from 1.
        line: u32,
        /// The model's sentence saying why.
        refused: String,
        /// Never written.
        #[serde(skip_serializing)]
        #[cfg_attr(feature = "ts", ts(optional, type = "undefined"))]
        explain: Absent,
        /// Never written.
        #[serde(skip_serializing)]
        #[cfg_attr(feature = "ts", ts(optional, type = "undefined"))]
        error: Absent,
    },
}
