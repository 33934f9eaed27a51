//! eBPF programs of the user's own: `BPF_PROG_TYPE_SOCKET_FILTER` programs
//! attached with `SO_ATTACH_REUSEPORT_EBPF` (4.5 UDP, 4.6 TCP) that return
//! an index into `socks[]`, and `BPF_PROG_TYPE_SK_REUSEPORT` programs
//! (4.19; the `BPF_SK_REUSEPORT_SELECT_OR_MIGRATE` attach type from 5.14)
//! that select a socket with `bpf_sk_select_reuseport` and return
//! `SK_PASS` or `SK_DROP`.
//!
//! - [`elf`] reads the object clang writes: programs, maps, relocations.
//! - [`maps`] holds what user space put in the maps ([`MapFill`]): which
//!   socket is in which key, which inner map in an array of maps, and
//!   plain bytes.
//! - [`refused`]: why maps as given cannot be built, as data (the map,
//!   the key, the sizes and bounds), said by the sentence tables; the
//!   reader's own faults are [`ElfError`] and [`BtfProblem`], data too.
//! - [`said`]: what a run records as data (the helpers' rules, their
//!   arguments, the values it lacked, the faults), said by the sentence
//!   tables.
//! - [`run()`] is the interpreter: the instruction set of
//!   kernel/bpf/core.c (`___bpf_prog_run`, 6.x), the context each program
//!   type sees (`sk_reuseport_convert_ctx_access` and
//!   `bpf_convert_ctx_access`, net/core/filter.c), and the helpers these
//!   programs call, each with the kernel's error returns.
//!
//! The interpreter is written here rather than taken from a crate. `rbpf`
//! runs eBPF on plain memory regions: a program's pointers are host
//! addresses, a map is a helper the caller registers, and a context field
//! is a byte offset into a buffer. The kernel's answer depends on what the
//! verifier makes of those (a context load is rewritten into a load of the
//! kernel's own field; `data_end` bounds direct packet reads; a map lookup
//! returns a pointer or NULL), so the model keeps each register's value
//! tagged: a number, or a pointer into the context, the stack, the packet
//! or a map value. A run that does what the verifier would have refused
//! stops with an error naming the instruction; a run that reads what the
//! model's packet does not hold (a checksum, an IP ID) stops and names it,
//! rather than guess.
//!
//! The model does not repeat the verifier: the live kernel is the judge of
//! which programs load (`reuseport-agent verify --program FILE`).

use serde::{Deserialize, Serialize};

mod btf;
pub mod elf;
pub mod fill;
pub mod maps;
pub mod refused;
mod run;
pub mod said;

pub use elf::{kind_of_section, read, BtfProblem, ElfError, MAX_ELF_BYTES};
pub use maps::{MapFill, MapKey, MapState, MapValue, MAX_MAP_ENTRIES};
pub use refused::{MapDefProblem, MapRefusal};
pub use run::{
    run, EbpfCall, EbpfEnd, EbpfRun, EbpfStep, MigrateStage, Migrating, Packet, MAX_RECORDED_STEPS,
    MAX_STEPS,
};
pub use said::{CallArg, EbpfFault, EbpfUnknown, HelperRule, HelperSource, Operand};

/// The most instructions of one program the model runs: the kernel's
/// `BPF_COMPLEXITY_LIMIT_INSNS` (1,000,000, kernel/bpf/verifier.c 5.2+)
/// counts verifier states, not instructions; programs are far shorter,
/// and this bound keeps an input small.
pub const MAX_INSNS: usize = 65_536;
/// The most maps in one object (libbpf has no such bound; this is the
/// model's input bound).
pub const MAX_MAPS: usize = 64;
/// `MAX_BPF_STACK` (include/linux/filter.h): 512 bytes of stack.
pub const STACK_SIZE: usize = 512;
/// The largest map key the model holds, in bytes: a key a program passes
/// to a map helper is built on its stack, which holds [`STACK_SIZE`] bytes
/// (an input bound of the model).
pub const MAX_KEY_SIZE: u32 = STACK_SIZE as u32;
/// The largest map value the model holds, in bytes (an input bound of the
/// model; the kernel's own bound is the allocator's, far larger).
pub const MAX_VALUE_SIZE: u32 = 1 << 16;

/// Map types the model knows (`enum bpf_map_type`, include/uapi/linux/bpf.h).
pub mod map_type {
    #![allow(missing_docs)]
    pub const HASH: u32 = 1;
    pub const ARRAY: u32 = 2;
    pub const PERCPU_HASH: u32 = 5;
    pub const PERCPU_ARRAY: u32 = 6;
    pub const LRU_HASH: u32 = 9;
    pub const ARRAY_OF_MAPS: u32 = 12;
    pub const HASH_OF_MAPS: u32 = 13;
    pub const SOCKMAP: u32 = 15;
    pub const SOCKHASH: u32 = 18;
    pub const REUSEPORT_SOCKARRAY: u32 = 20;

    /// The uapi name of a map type.
    pub fn name(t: u32) -> &'static str {
        match t {
            HASH => "BPF_MAP_TYPE_HASH",
            ARRAY => "BPF_MAP_TYPE_ARRAY",
            PERCPU_HASH => "BPF_MAP_TYPE_PERCPU_HASH",
            PERCPU_ARRAY => "BPF_MAP_TYPE_PERCPU_ARRAY",
            LRU_HASH => "BPF_MAP_TYPE_LRU_HASH",
            ARRAY_OF_MAPS => "BPF_MAP_TYPE_ARRAY_OF_MAPS",
            HASH_OF_MAPS => "BPF_MAP_TYPE_HASH_OF_MAPS",
            SOCKMAP => "BPF_MAP_TYPE_SOCKMAP",
            SOCKHASH => "BPF_MAP_TYPE_SOCKHASH",
            REUSEPORT_SOCKARRAY => "BPF_MAP_TYPE_REUSEPORT_SOCKARRAY",
            _ => "a map type the model does not run",
        }
    }
}

/// Lower-case hex of bytes.
pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Bytes from hex (spaces allowed between bytes).
pub(crate) fn unhex(s: &str) -> Result<Vec<u8>, String> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    let s = s.strip_prefix("0x").unwrap_or(&s);
    if !s.len().is_multiple_of(2) {
        return Err(format!("`{s}` has an odd number of hex digits"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&s[i..i + 2], 16)
                .map_err(|_| format!("`{}` is not a hex byte", &s[i..i + 2]))
        })
        .collect()
}

/// One eBPF instruction (`struct bpf_insn`, include/uapi/linux/bpf.h),
/// written as `[code, dst, src, off, imm]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "(u8, u8, u8, i16, i32)", into = "(u8, u8, u8, i16, i32)")]
pub struct Insn {
    /// The opcode.
    pub code: u8,
    /// The destination register.
    pub dst: u8,
    /// The source register (for `ld_imm64`: 1 a map, 2 a map value).
    pub src: u8,
    /// The offset.
    pub off: i16,
    /// The immediate.
    pub imm: i32,
}

impl From<(u8, u8, u8, i16, i32)> for Insn {
    fn from((code, dst, src, off, imm): (u8, u8, u8, i16, i32)) -> Insn {
        Insn {
            code,
            dst,
            src,
            off,
            imm,
        }
    }
}

impl From<Insn> for (u8, u8, u8, i16, i32) {
    fn from(i: Insn) -> (u8, u8, u8, i16, i32) {
        (i.code, i.dst, i.src, i.off, i.imm)
    }
}

impl Insn {
    /// Decodes eight little-endian bytes.
    pub fn from_bytes(b: &[u8]) -> Insn {
        Insn {
            code: b[0],
            dst: b[1] & 0x0f,
            src: b[1] >> 4,
            off: i16::from_le_bytes([b[2], b[3]]),
            imm: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }

    /// Encodes as the kernel reads it.
    pub fn to_bytes(self) -> [u8; 8] {
        let o = self.off.to_le_bytes();
        let i = self.imm.to_le_bytes();
        [
            self.code,
            (self.src << 4) | (self.dst & 0x0f),
            o[0],
            o[1],
            i[0],
            i[1],
            i[2],
            i[3],
        ]
    }
}

/// Which kind of program, and how it is attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum ProgKind {
    /// `BPF_PROG_TYPE_SK_REUSEPORT`, `BPF_SK_REUSEPORT_SELECT` (4.19).
    SkReuseport,
    /// `BPF_PROG_TYPE_SK_REUSEPORT`, `BPF_SK_REUSEPORT_SELECT_OR_MIGRATE`
    /// (5.14): also run when a closing listener's requests migrate.
    SkReuseportMigrate,
    /// `BPF_PROG_TYPE_SOCKET_FILTER` attached with
    /// `SO_ATTACH_REUSEPORT_EBPF`: the return value indexes `socks[]`.
    SocketFilter,
}

impl ProgKind {
    /// An SK_REUSEPORT program.
    pub fn is_sk_reuseport(self) -> bool {
        !matches!(self, ProgKind::SocketFilter)
    }
}

/// A map as the object defines it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct MapDef {
    /// Its name (the variable's, or `.rodata`, `.data`, `.bss`).
    pub name: String,
    /// `enum bpf_map_type`; 0 for a map the object names but does not
    /// define (an `extern`), which the reader defines in `extraMaps`.
    pub map_type: u32,
    /// Key bytes.
    pub key_size: u32,
    /// Value bytes.
    pub value_size: u32,
    /// Entries.
    pub max_entries: u32,
    /// `map_flags`.
    #[serde(default)]
    pub flags: u32,
    /// Global data: the section's bytes, hex (the one entry's value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub data: Option<String>,
}

impl MapDef {
    /// Checks the sizes against the model's bounds and the kernel's rules
    /// for socket maps (`reuseport_array_alloc_check`,
    /// kernel/bpf/reuseport_array.c 4.19+: value size 4 or 8, key size 4).
    pub fn check(&self) -> Result<(), MapDefProblem> {
        use map_type::*;
        if self.map_type == 0 {
            return Ok(());
        }
        if self.max_entries == 0 {
            return Err(MapDefProblem::MaxEntriesZero);
        }
        if self.max_entries as usize > MAX_MAP_ENTRIES {
            return Err(MapDefProblem::MaxEntriesOver {
                max_entries: self.max_entries,
                bound: MAX_MAP_ENTRIES as u32,
            });
        }
        if self.key_size > MAX_KEY_SIZE || self.value_size > MAX_VALUE_SIZE {
            return Err(MapDefProblem::SizesOver {
                key_size: self.key_size,
                value_size: self.value_size,
                key_bound: MAX_KEY_SIZE,
                value_bound: MAX_VALUE_SIZE,
            });
        }
        match self.map_type {
            REUSEPORT_SOCKARRAY | SOCKMAP | ARRAY | PERCPU_ARRAY | ARRAY_OF_MAPS
                if self.key_size != 4 =>
            {
                Err(MapDefProblem::KeySize {
                    map_type: name(self.map_type).to_string(),
                    key_size: self.key_size,
                })
            }
            REUSEPORT_SOCKARRAY | SOCKMAP | SOCKHASH
                if self.value_size != 4 && self.value_size != 8 =>
            {
                Err(MapDefProblem::ValueSize {
                    map_type: name(self.map_type).to_string(),
                    value_size: self.value_size,
                })
            }
            _ => Ok(()),
        }
    }
}

/// One program read from an object, its instructions relocated: a
/// `ld_imm64` of a map has `src` 1 and `imm` the map's index in `maps`; of
/// global data, `src` 2, `imm` the map and the second half's `imm` the
/// offset.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct EbpfProgram {
    /// The function's name.
    pub name: String,
    /// The ELF section it sits in.
    pub section: String,
    /// The kind its section names, or the reader's choice (`None`: the
    /// section does not say, and the reader has not).
    pub kind: Option<ProgKind>,
    /// The instructions.
    #[cfg_attr(feature = "ts", ts(as = "Vec<(u8, u8, u8, i16, i32)>"))]
    pub insns: Vec<Insn>,
    /// The object's maps.
    pub maps: Vec<MapDef>,
}

/// What an object holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct EbpfObject {
    /// Its programs.
    pub programs: Vec<EbpfProgram>,
    /// Its maps.
    pub maps: Vec<MapDef>,
    /// The `license` section's string.
    pub license: Option<String>,
}
