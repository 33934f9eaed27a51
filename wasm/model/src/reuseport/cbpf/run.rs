//! What a classic BPF program does with one packet in a reuseport group.
//!
//! `run_bpf_filter` (net/core/sock_reuseport.c, 4.5 to 7.2) pulls the skb
//! past the transport header (`hdr_len`: the UDP header, or the TCP
//! header with its options), so offset 0 is the first payload byte and
//! `len` is the payload's length; the program's return value is the index
//! into `socks[]`. The kernel runs the program converted to eBPF
//! (`bpf_convert_filter`, net/core/filter.c) and interpreted or JITed; the
//! rules here are those of the converted program, which the JIT keeps:
//!
//! - A and X start at 0 (cleared before a converted classic program runs:
//!   by the interpreter and JITs in 4.x, by the conversion's prologue later);
//! - ALU is 32-bit and wraps; a shift by X uses X & 31 (the interpreter
//!   masks it, `___bpf_prog_run`, kernel/bpf/core.c 5.x on; the x86-64 JIT's
//!   `shl`/`shr` by `cl` do the same in every era);
//! - division or modulo by X = 0 ends the program with 0 (the conversion
//!   emits that test before each);
//! - a load past the end of the packet ends it with 0
//!   (`bpf_skb_load_helper_*` returns -EFAULT, the converted program
//!   returns 0); the load's offset is `k` (`ld [k]`) or the 32-bit sum
//!   X + k taken as a signed int (`ld [x + k]`);
//! - a negative offset reads the network header (`SKF_NET_OFF`) or the
//!   link-layer header (`SKF_LL_OFF`) through
//!   `bpf_internal_load_pointer_neg_helper`, or fails below them;
//! - ancillary loads (`SKF_AD_*`) load the same full value whatever their
//!   size (`convert_bpf_extensions` looks at `k` only).
//!
//! Some values are not in a packet the model holds. A run that reads one
//! stops with [`End::Unknown`] and names it, rather than guess; the caller
//! can give it in [`AncInputs`].

use serde::{Deserialize, Serialize};

use super::op::*;
use super::{Ancillary, Insn, Unknown, SKF_LL_OFF, SKF_NET_OFF};
use crate::tuple::Proto;

/// Ancillary values a packet carries that the model does not derive from
/// the tuple. Each has the value a unicast packet received on `lo` has
/// unless given, except `rxhash`, `random` and `payOffset`, which are
/// unknown unless given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AncInputs {
    /// `skb->pkt_type`; `PACKET_HOST` (0) by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pkttype: Option<u32>,
    /// The receiving device's ifindex; 1 (`lo` in every namespace) by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ifindex: Option<u32>,
    /// `skb->mark`; 0 by default (no SO_MARK on the sender, no netfilter mark).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<u32>,
    /// `skb->queue_mapping`; 0 by default (`lo` has one queue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<u32>,
    /// The device's ARPHRD type; 772 (`ARPHRD_LOOPBACK`) by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hatype: Option<u32>,
    /// `skb->hash`: unknown unless given (it is the sender socket's
    /// `sk_txhash`, random per connected socket, or 0, or a NIC's hash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rxhash: Option<u32>,
    /// What `SKF_AD_RANDOM` draws: unknown unless given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random: Option<u32>,
    /// `skb_get_poff()`: the flow dissector's payload offset, unknown
    /// unless given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pay_offset: Option<u32>,
}

impl AncInputs {
    /// Nothing given.
    pub fn is_empty(&self) -> bool {
        *self == AncInputs::default()
    }
}

/// The packet as the program sees it.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The payload (offset 0 is its first byte).
    pub payload: &'a [u8],
    /// TCP or UDP.
    pub proto: Proto,
    /// An IPv6 packet (an IPv4 one reaching an IPv6 socket is IPv4).
    pub ipv6: bool,
    /// The CPU running the program.
    pub cpu: u32,
    /// The other ancillary values.
    pub anc: &'a AncInputs,
}

/// One instruction taken, with A and X after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Step {
    /// The instruction's index.
    pub pc: u32,
    /// A after it.
    pub a: u32,
    /// X after it.
    pub x: u32,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum End {
    /// `ret`: the value is the index.
    Returned {
        /// The value.
        value: u32,
    },
    /// A load past the end of the data: the program returns 0.
    LoadFailed {
        /// The instruction.
        pc: u32,
        /// The offset read, as the kernel took it (a signed int).
        offset: i32,
        /// Bytes read.
        size: u32,
    },
    /// Division or modulo by X = 0: the program returns 0.
    DivByZero {
        /// The instruction.
        pc: u32,
    },
    /// The run needed a value the model does not have.
    Unknown {
        /// The instruction.
        pc: u32,
        /// What.
        what: Unknown,
    },
}

/// One run: the instructions taken and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CbpfRun {
    /// Every instruction taken, in order (a program has no loops, so at
    /// most its length).
    pub steps: Vec<Step>,
    /// How it ended.
    pub end: End,
}

impl CbpfRun {
    /// The value the program returns, or `None` when the model cannot tell.
    pub fn value(&self) -> Option<u32> {
        match self.end {
            End::Returned { value } => Some(value),
            End::LoadFailed { .. } | End::DivByZero { .. } => Some(0),
            End::Unknown { .. } => None,
        }
    }
}

/// How a load at a byte offset went.
enum Load {
    Value(u32),
    Failed,
    Unknown(Unknown),
}

/// Header lengths below the payload: IPv4 20 (the kernel's UDP and TCP
/// send no IP options) or IPv6 40, then UDP 8; a TCP header's length
/// depends on its options, so it is `None`.
fn headers(inp: &Input) -> (u32, Option<u32>) {
    let ip = if inp.ipv6 { 40 } else { 20 };
    let l4 = match inp.proto {
        Proto::Udp => Some(8),
        Proto::Tcp => None,
    };
    (ip, l4)
}

fn read_be(bytes: &[u8], at: usize, size: usize) -> u32 {
    bytes[at..at + size]
        .iter()
        .fold(0u32, |acc, &b| (acc << 8) | b as u32)
}

/// A load of `size` bytes at `offset` (`bpf_skb_load_helper_*`,
/// `bpf_internal_load_pointer_neg_helper`).
fn load(inp: &Input, offset: i32, size: u32) -> Load {
    let len = inp.payload.len() as u64;
    if offset >= 0 {
        let end = offset as u64 + size as u64;
        return if end <= len {
            Load::Value(read_be(inp.payload, offset as usize, size as usize))
        } else {
            Load::Failed
        };
    }
    let (base, link) = if offset >= SKF_NET_OFF {
        (SKF_NET_OFF, 0)
    } else if offset >= SKF_LL_OFF {
        // An Ethernet header on lo (eth_type_trans in loopback_xmit).
        (SKF_LL_OFF, 14)
    } else {
        return Load::Failed;
    };
    let rel = (offset as i64 - base as i64) as u64;
    let (ip, l4) = headers(inp);
    let below = link + ip + l4.unwrap_or(60);
    let unknown = || {
        if link == 0 {
            Unknown::NetworkHeader { offset: rel as u32 }
        } else {
            Unknown::LinkHeader { offset: rel as u32 }
        }
    };
    if rel + size as u64 > below as u64 + len {
        return Load::Failed;
    }
    match l4 {
        Some(l4) if rel >= (link + ip + l4) as u64 => {
            let at = rel as usize - (link + ip + l4) as usize;
            Load::Value(read_be(inp.payload, at, size as usize))
        }
        _ => Load::Unknown(unknown()),
    }
}

/// `NLA_TYPE_MASK`: the type without the nested and byte-order flags.
const NLA_TYPE_MASK: u16 = !(0x8000 | 0x4000);

/// `nla_find` (lib/nlattr.c) over `data[start..start + len]`: the offset of
/// the first attribute of type `want`, in host (little-endian) order.
fn nla_find(data: &[u8], start: usize, len: i64, want: u32) -> Option<usize> {
    let (mut pos, mut rem) = (start, len);
    while rem >= 4 {
        let nla_len = u16::from_le_bytes([data[pos], data[pos + 1]]);
        if nla_len < 4 || nla_len as i64 > rem {
            break;
        }
        let kind = u16::from_le_bytes([data[pos + 2], data[pos + 3]]) & NLA_TYPE_MASK;
        if kind as u32 == want && want <= i32::MAX as u32 {
            return Some(pos);
        }
        let step = (nla_len as usize + 3) & !3;
        rem -= step as i64;
        pos += step;
    }
    None
}

/// Payloads above this length may be paged rather than linear on `lo`
/// (`__ip_append_data` allocates linear buffers up to about 16 KiB): the
/// netlink searches, which give 0 on a paged skb, are then not decided.
const LINEAR_SURE: usize = 8192;

/// `__skb_get_nlattr` and `__skb_get_nlattr_nest` (net/core/filter.c).
fn nlattr(inp: &Input, a: u32, x: u32, nest: bool) -> Result<u32, Unknown> {
    let data = inp.payload;
    if data.len() > LINEAR_SURE {
        return Err(Unknown::Nonlinear {
            len: data.len() as u32,
        });
    }
    let len = data.len();
    if len < 4 || a as usize > len - 4 {
        return Ok(0);
    }
    let a = a as usize;
    let found = if nest {
        let nla_len = u16::from_le_bytes([data[a], data[a + 1]]) as usize;
        if nla_len > len - a {
            return Ok(0);
        }
        nla_find(data, a + 4, nla_len as i64 - 4, x)
    } else {
        nla_find(data, a, (len - a) as i64, x)
    };
    Ok(found.map_or(0, |p| p as u32))
}

/// The value of an ancillary load (`convert_bpf_extensions`).
fn ancillary(inp: &Input, which: Ancillary, a: u32, x: u32) -> Result<u32, Unknown> {
    let given = |v: Option<u32>| v.ok_or(Unknown::Ancillary { field: which });
    Ok(match which {
        Ancillary::Protocol => {
            if inp.ipv6 {
                0x86dd
            } else {
                0x0800
            }
        }
        Ancillary::Pkttype => inp.anc.pkttype.unwrap_or(0),
        Ancillary::Ifindex => inp.anc.ifindex.unwrap_or(1),
        Ancillary::Mark => inp.anc.mark.unwrap_or(0),
        Ancillary::Queue => inp.anc.queue.unwrap_or(0),
        Ancillary::Hatype => inp.anc.hatype.unwrap_or(772),
        Ancillary::Rxhash => given(inp.anc.rxhash)?,
        Ancillary::Random => given(inp.anc.random)?,
        Ancillary::PayOffset => given(inp.anc.pay_offset)?,
        Ancillary::Cpu => inp.cpu,
        Ancillary::AluXorX => a ^ x,
        // The model's packets carry no VLAN tag: skb->vlan_tci,
        // vlan_proto and the present bit are all 0.
        Ancillary::VlanTag | Ancillary::VlanTagPresent | Ancillary::VlanTpid => 0,
        Ancillary::Nlattr => nlattr(inp, a, x, false)?,
        Ancillary::NlattrNest => nlattr(inp, a, x, true)?,
    })
}

fn size_of(code: u16) -> u32 {
    match code & 0x18 {
        W => 4,
        H => 2,
        _ => 1,
    }
}

/// Runs a program (already checked by [`super::check`]) on one packet.
pub fn run(insns: &[Insn], inp: &Input) -> CbpfRun {
    let (mut a, mut x) = (0u32, 0u32);
    let mut mem = [0u32; 16];
    let mut steps = Vec::new();
    let mut pc = 0usize;
    let end = loop {
        let Some(&i) = insns.get(pc) else {
            // A checked program ends in `ret`; keep the model total anyway.
            break End::Returned { value: 0 };
        };
        let pcu = pc as u32;
        let mut next = pc + 1;
        macro_rules! load_or_end {
            ($offset:expr, $size:expr) => {
                match load(inp, $offset, $size) {
                    Load::Value(v) => v,
                    Load::Failed => {
                        break End::LoadFailed {
                            pc: pcu,
                            offset: $offset,
                            size: $size,
                        }
                    }
                    Load::Unknown(what) => break End::Unknown { pc: pcu, what },
                }
            };
        }
        match i.code & 0x07 {
            LD => match i.code & 0xe0 {
                IMM => a = i.k,
                ABS => match Ancillary::from_k(i.k) {
                    Some(which) => match ancillary(inp, which, a, x) {
                        Ok(v) => a = v,
                        Err(what) => break End::Unknown { pc: pcu, what },
                    },
                    None => a = load_or_end!(i.k as i32, size_of(i.code)),
                },
                IND => a = load_or_end!(x.wrapping_add(i.k) as i32, size_of(i.code)),
                MEM => a = mem[i.k as usize & 15],
                _ => a = inp.payload.len() as u32, // LEN
            },
            LDX => match i.code & 0xe0 {
                IMM => x = i.k,
                MEM => x = mem[i.k as usize & 15],
                MSH => x = (load_or_end!(i.k as i32, 1) & 0xf) << 2,
                _ => x = inp.payload.len() as u32, // LEN
            },
            ST => mem[i.k as usize & 15] = a,
            STX => mem[i.k as usize & 15] = x,
            ALU => {
                let src = if i.code & X != 0 { x } else { i.k };
                a = match i.code & 0xf0 {
                    ADD => a.wrapping_add(src),
                    SUB => a.wrapping_sub(src),
                    MUL => a.wrapping_mul(src),
                    DIV | MOD if src == 0 => break End::DivByZero { pc: pcu },
                    DIV => a / src,
                    MOD => a % src,
                    OR => a | src,
                    AND => a & src,
                    XOR => a ^ src,
                    LSH => a << (src & 31),
                    RSH => a >> (src & 31),
                    _ => a.wrapping_neg(), // NEG
                };
            }
            JMP => {
                let src = if i.code & X != 0 { x } else { i.k };
                let taken = match i.code & 0xf0 {
                    JA => {
                        next = pc + 1 + i.k as usize;
                        None
                    }
                    JEQ => Some(a == src),
                    JGT => Some(a > src),
                    JGE => Some(a >= src),
                    _ => Some(a & src != 0), // JSET
                };
                if let Some(t) = taken {
                    next = pc + 1 + if t { i.jt } else { i.jf } as usize;
                }
            }
            RET => {
                steps.push(Step { pc: pcu, a, x });
                break End::Returned {
                    value: if i.code & 0x18 == A { a } else { i.k },
                };
            }
            _ => {
                if i.code & 0xf8 == TXA {
                    a = x
                } else {
                    x = a
                }
            }
        }
        steps.push(Step { pc: pcu, a, x });
        pc = next;
    };
    match end {
        End::LoadFailed { pc, .. } | End::DivByZero { pc } | End::Unknown { pc, .. } => {
            steps.push(Step { pc, a, x })
        }
        End::Returned { .. } => {}
    }
    CbpfRun { steps, end }
}
