//! Classic BPF programs of the user's own (`SO_ATTACH_REUSEPORT_CBPF`, 4.5
//! UDP and 4.6 TCP): the `struct sock_filter` array as data, the checks
//! the kernel makes before it attaches one ([`check`]), what it does with a
//! packet ([`run`]), and the text forms people have: `bpf_asm` and
//! `tcpdump -dd` ([`parse`]).
//!
//! The kernel sources followed are `net/core/filter.c` (`bpf_check_basics_ok`,
//! `bpf_check_classic`, `check_load_and_stores`, `chk_code_allowed`,
//! `bpf_convert_filter`, `convert_bpf_extensions`, `convert_bpf_ld_abs`,
//! `bpf_skb_load_helper_*`, `bpf_internal_load_pointer_neg_helper`),
//! `kernel/bpf/core.c` (`___bpf_prog_run`) and `net/core/sock_reuseport.c`
//! (`run`/`run_bpf_filter`, `reuseport_select_sock`). The checker's rules,
//! the shift check among them, and the ancillary conversions were read in
//! the 4.5-era filter.c; the same rules hold on 6.18, where the live kernel
//! checks them (`reuseport-agent verify --programs`). Later kernels moved
//! the length check into `bpf_check_basics_ok` without changing it.

use serde::{Deserialize, Serialize};

pub mod ancillary;
mod check;
mod parse;
mod run;

pub use ancillary::{Ancillary, Unknown};
pub use check::{check, CheckError};
pub use parse::{parse, parse_located, ParseError as CbpfParseError, MAX_TEXT};
pub use run::{run, AncInputs, CbpfRun, End, Input, Step};

/// `BPF_MAXINSNS` (include/uapi/linux/bpf_common.h, 3.x to 7.2).
pub const MAX_INSNS: usize = 4096;
/// `BPF_MEMWORDS`: the scratch cells `M[0..16)` (include/uapi/linux/filter.h).
pub const MEMWORDS: u32 = 16;
pub use ancillary::SKF_AD_OFF;
/// `SKF_NET_OFF`: loads relative to the network header.
pub const SKF_NET_OFF: i32 = -0x100000;
/// `SKF_LL_OFF`: loads relative to the link-layer header.
pub const SKF_LL_OFF: i32 = -0x200000;

/// One classic BPF instruction, the kernel's `struct sock_filter`
/// (include/uapi/linux/filter.h): written as `[code, jt, jf, k]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "(u16, u8, u8, u32)", into = "(u16, u8, u8, u32)")]
pub struct Insn {
    /// The opcode: class, size or operation, mode or source.
    pub code: u16,
    /// Forward offset taken when a conditional jump's test holds.
    pub jt: u8,
    /// Forward offset taken when it does not.
    pub jf: u8,
    /// The constant operand.
    pub k: u32,
}

impl From<(u16, u8, u8, u32)> for Insn {
    fn from((code, jt, jf, k): (u16, u8, u8, u32)) -> Insn {
        Insn { code, jt, jf, k }
    }
}

impl From<Insn> for (u16, u8, u8, u32) {
    fn from(i: Insn) -> (u16, u8, u8, u32) {
        (i.code, i.jt, i.jf, i.k)
    }
}

impl Insn {
    /// An instruction without jump offsets (`BPF_STMT`).
    pub const fn stmt(code: u16, k: u32) -> Insn {
        Insn {
            code,
            jt: 0,
            jf: 0,
            k,
        }
    }

    /// A conditional jump (`BPF_JUMP`).
    pub const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
        Insn { code, jt, jf, k }
    }
}

/// Opcode parts (include/uapi/linux/bpf_common.h).
pub mod op {
    #![allow(missing_docs)]
    pub const LD: u16 = 0x00;
    pub const LDX: u16 = 0x01;
    pub const ST: u16 = 0x02;
    pub const STX: u16 = 0x03;
    pub const ALU: u16 = 0x04;
    pub const JMP: u16 = 0x05;
    pub const RET: u16 = 0x06;
    pub const MISC: u16 = 0x07;
    pub const W: u16 = 0x00;
    pub const H: u16 = 0x08;
    pub const B: u16 = 0x10;
    pub const IMM: u16 = 0x00;
    pub const ABS: u16 = 0x20;
    pub const IND: u16 = 0x40;
    pub const MEM: u16 = 0x60;
    pub const LEN: u16 = 0x80;
    pub const MSH: u16 = 0xa0;
    pub const ADD: u16 = 0x00;
    pub const SUB: u16 = 0x10;
    pub const MUL: u16 = 0x20;
    pub const DIV: u16 = 0x30;
    pub const OR: u16 = 0x40;
    pub const AND: u16 = 0x50;
    pub const LSH: u16 = 0x60;
    pub const RSH: u16 = 0x70;
    pub const NEG: u16 = 0x80;
    pub const MOD: u16 = 0x90;
    pub const XOR: u16 = 0xa0;
    pub const JA: u16 = 0x00;
    pub const JEQ: u16 = 0x10;
    pub const JGT: u16 = 0x20;
    pub const JGE: u16 = 0x30;
    pub const JSET: u16 = 0x40;
    pub const K: u16 = 0x00;
    pub const X: u16 = 0x08;
    pub const A: u16 = 0x10;
    pub const TAX: u16 = 0x00;
    pub const TXA: u16 = 0x80;
}
