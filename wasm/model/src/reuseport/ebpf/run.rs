//! The interpreter: one program, one packet.
//!
//! Instruction semantics are `___bpf_prog_run` (kernel/bpf/core.c, 6.x):
//! 32-bit ALU results are zero-extended; a shift uses the count masked to
//! the width (`& 63`, `& 31`); division by zero gives 0 and modulo by zero
//! leaves the dividend (the verifier's rewrite since 5.2 and the
//! interpreter agree); `BPF_END` swaps to or from big-endian. Registers
//! hold numbers or tagged pointers ([`Val`]); the context is the kernel's
//! converted view:
//!
//! - `sk_reuseport_md` (`sk_reuseport_convert_ctx_access`,
//!   net/core/filter.c 4.19+): `data` is the transport header (the lookup
//!   runs before the UDP or TCP layer pulls it), `data_end` the end of the
//!   linear part, `len` `skb->len` from the transport header, `eth_protocol`
//!   `skb->protocol` (big-endian, so `0x0008` for IPv4), `ip_protocol` the
//!   listener's protocol, `bind_inany` whether the group is bound to the
//!   wildcard address, `hash` the group's hash of the packet, `sk` (5.14)
//!   the listener the lookup found, `migrating_sk` (5.14) NULL outside a
//!   migration; in a migration (`reuseport_migrate_sock`,
//!   net/core/sock_reuseport.c 5.14+) `sk` is the closing listener,
//!   `migrating_sk` the child or request ([`Migrating`]), and on the close
//!   path and the SYN+ACK timer the skb is the empty one
//!   `reuseport_migrate_sock` allocates (`alloc_skb(0)`: `len` 0,
//!   `eth_protocol` 0, `data == data_end`); before 5.14 the structure ends
//!   at `hash`, so the verifier refuses a read of `sk` or `migrating_sk`
//!   (`sk_reuseport_is_valid_access`, net/core/filter.c);
//! - `__sk_buff` for socket filters (`bpf_convert_ctx_access`): `run_bpf_filter`
//!   (net/core/sock_reuseport.c 4.5+) pulls the transport header first, so
//!   `len` is the payload's length and `LD_ABS` offset 0 its first byte;
//!   a failed `LD_ABS`/`LD_IND` ends the program with 0 (`bpf_gen_ld_abs`,
//!   net/core/filter.c 4.19+, the classic rule kept).

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::maps::{errno, MapState, Stored};
use super::{hex, map_type, EbpfProgram, Insn, ProgKind, STACK_SIZE};
use crate::reuseport::cbpf::AncInputs;
use crate::tuple::Proto;

/// The most instructions one run takes: a bound of the model (the kernel's
/// verifier bounds loops; a program that runs longer here is refused).
pub const MAX_STEPS: u32 = 1_000_000;
/// The most steps a run record lists; the count of the rest is kept.
pub const MAX_RECORDED_STEPS: usize = 4096;
/// The most helper calls a run record lists.
const MAX_RECORDED_CALLS: usize = 1024;

/// The packet and the group as the program sees them.
#[derive(Debug, Clone)]
pub struct Packet<'a> {
    /// TCP or UDP.
    pub proto: Proto,
    /// Source address.
    pub saddr: IpAddr,
    /// Destination address.
    pub daddr: IpAddr,
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// The payload (after the transport header).
    pub payload: &'a [u8],
    /// The CPU running the program.
    pub cpu: u32,
    /// The group's hash of the packet (`sk_reuseport_md.hash`).
    pub hash: u32,
    /// The group is bound to the wildcard address.
    pub bind_inany: bool,
    /// The listeners in `socks[]` (those a selection can return).
    pub in_group: &'a [u32],
    /// The listener the lookup found first (`reuse_kern->sk`).
    pub first: u32,
    /// Ancillary values a socket filter may read (`__sk_buff` fields).
    pub anc: &'a AncInputs,
    /// The seed of `bpf_get_prandom_u32`'s draws.
    pub seed: u64,
    /// The kernel has the 5.14 additions: `sk_reuseport_md.sk` and
    /// `.migrating_sk`, and `bpf_get_socket_cookie` for SK_REUSEPORT
    /// programs (`sk_reuseport_func_proto`, net/core/filter.c).
    pub since_5_14: bool,
    /// The sockets' cookies (`SO_COOKIE`) as user space read them, by
    /// listener: the kernel hands them out from a counter on first use
    /// (`sock_gen_cookie`, net/core/sock_diag.c), so they are inputs.
    pub cookies: &'a [(u32, u64)],
    /// A migration's run rather than a packet's: the socket that moves.
    pub migrating: Option<Migrating>,
}

/// Where in its life a migrating socket is (`reuseport_migrate_sock`'s
/// three callers, 5.14+).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum MigrateStage {
    /// An established child in the closing listener's accept queue
    /// (`inet_csk_listen_stop`, net/ipv4/inet_connection_sock.c): no skb,
    /// `migrating_sk->state` is `BPF_TCP_ESTABLISHED`.
    AcceptQueue,
    /// A request whose SYN+ACK timer fires after its listener closed
    /// (`reqsk_timer_handler`, same file): no skb, state
    /// `BPF_TCP_NEW_SYN_RECV`.
    SynAckTimer,
    /// A request whose final ACK arrives after its listener closed
    /// (`tcp_v4_rcv` / `tcp_v6_rcv`, net/ipv4/tcp_ipv4.c): the skb is that
    /// ACK, state `BPF_TCP_NEW_SYN_RECV`.
    FinalAck,
}

impl MigrateStage {
    /// `migrating_sk->state` (`enum` in include/uapi/linux/bpf.h:
    /// `BPF_TCP_ESTABLISHED` 1, `BPF_TCP_NEW_SYN_RECV` 12).
    pub fn state(self) -> u32 {
        match self {
            MigrateStage::AcceptQueue => 1,
            MigrateStage::SynAckTimer | MigrateStage::FinalAck => 12,
        }
    }

    /// Whether `reuseport_migrate_sock` runs the program on an skb of its
    /// own making, empty (`skb == NULL` from the caller).
    pub fn empty_skb(self) -> bool {
        !matches!(self, MigrateStage::FinalAck)
    }
}

/// The socket a migration moves, as `sk_reuseport_md.migrating_sk`
/// shows it (a `struct bpf_sock` read through `PTR_TO_SOCK_COMMON`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migrating {
    /// Where it is in the handshake.
    pub stage: MigrateStage,
    /// The closing listener (`sk_reuseport_md.sk` in this run).
    pub closing: u32,
}

/// One instruction taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct EbpfStep {
    /// The instruction's index.
    pub pc: u32,
    /// The register written, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub reg: Option<u8>,
    /// What it holds after: a hex number, or a pointer (`ctx+8`,
    /// `packet+12`, `stack-16`, `map value result_map[0]+4`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub value: Option<String>,
}

/// One helper call and its result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct EbpfCall {
    /// The call instruction.
    pub pc: u32,
    /// The helper (`bpf_map_lookup_elem`, ...).
    pub helper: String,
    /// Its arguments, as the model read them.
    pub args: Vec<String>,
    /// What it returned: a number, `-ENOENT`, a pointer, `NULL`.
    pub result: String,
    /// The kernel function that decides it, with file and release.
    pub rule: String,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum EbpfEnd {
    /// `exit` with R0 (a socket filter's failed `LD_ABS` returns 0 here).
    Returned {
        /// R0, as a decimal string (64 bits).
        value: String,
    },
    /// The run needed a value the model's packet does not hold.
    Unknown {
        /// The instruction.
        pc: u32,
        /// What.
        what: String,
    },
    /// The program did what the verifier refuses, or what the model does
    /// not run: the message names it.
    Fault {
        /// The instruction.
        pc: u32,
        /// What.
        why: String,
    },
}

/// One run: what it did and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct EbpfRun {
    /// The program's name and kind.
    pub program: String,
    /// The first [`MAX_RECORDED_STEPS`] instructions taken.
    pub steps: Vec<EbpfStep>,
    /// Instructions taken in all.
    pub taken: u32,
    /// The helper calls, in order.
    pub calls: Vec<EbpfCall>,
    /// How it ended.
    pub end: EbpfEnd,
    /// The listener `bpf_sk_select_reuseport` chose last (SK_REUSEPORT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub selected: Option<u32>,
    /// The run read `hash` (a value keyed by the boot's secret).
    pub read_hash: bool,
    /// The run drew from `bpf_get_prandom_u32` (seeded in the model).
    pub drew_random: bool,
    /// The maps after the run (a program's updates included).
    #[serde(skip)]
    pub maps_after: Option<MapState>,
}

impl EbpfRun {
    /// R0 when the program exited.
    pub fn value(&self) -> Option<u64> {
        match &self.end {
            EbpfEnd::Returned { value } => value.parse().ok(),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Region {
    Ctx,
    Stack,
    Packet,
    Map(usize),
    Value {
        map: usize,
        slot: usize,
    },
    Sock(u32),
    /// `migrating_sk`.
    Child,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ptr {
    region: Region,
    off: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Val {
    #[default]
    Uninit,
    Num(u64),
    Unknown(String),
    Ptr(Ptr),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cell {
    Uninit,
    Byte(u8),
    Unknown(u16),
    Ptr(u16, u8),
}

enum Stop {
    Unknown(String),
    Fault(String),
}

type R<T> = Result<T, Stop>;

fn fault<T>(why: impl Into<String>) -> R<T> {
    Err(Stop::Fault(why.into()))
}

struct Vm<'a, 'p> {
    prog: &'a EbpfProgram,
    pkt: &'a Packet<'p>,
    kind: ProgKind,
    maps: MapState,
    reg: [Val; 11],
    stack: Vec<Cell>,
    spilled: Vec<Ptr>,
    unknowns: Vec<String>,
    /// The bytes `data` points at, `None` where unknown.
    data: Vec<Option<u8>>,
    /// The IP header then `data`, for `BPF_HDR_START_NET` reads.
    net: Vec<Option<u8>>,
    /// Socket filter `cb[]`.
    cb: [u8; 20],
    rng: u64,
    selected: Option<u32>,
    calls: Vec<EbpfCall>,
    read_hash: bool,
    drew_random: bool,
}

/// The bytes from the transport header on, and from the network header on,
/// as far as the model knows them: addresses, ports, lengths and protocol
/// are known; an IP ID, TTL, TOS, checksum or TCP sequence and options are
/// not.
fn frames(p: &Packet, kind: ProgKind) -> (Vec<Option<u8>>, Vec<Option<u8>>) {
    let pay: Vec<Option<u8>> = p.payload.iter().map(|&b| Some(b)).collect();
    if kind == ProgKind::SocketFilter {
        return (pay, Vec::new());
    }
    if p.migrating.is_some_and(|m| m.stage.empty_skb()) {
        // alloc_skb(0) in reuseport_migrate_sock: no bytes at all.
        return (Vec::new(), Vec::new());
    }
    let mut l4: Vec<Option<u8>> = Vec::new();
    l4.extend(p.sport.to_be_bytes().map(Some));
    l4.extend(p.dport.to_be_bytes().map(Some));
    match p.proto {
        Proto::Udp => {
            let len = (8 + p.payload.len()) as u16;
            l4.extend(len.to_be_bytes().map(Some));
            l4.extend([None, None]);
            l4.extend(pay);
        }
        // A SYN: sequence number, flags and options are not the model's.
        Proto::Tcp => l4.extend(vec![None; 16]),
    }
    let l4len = l4.len();
    let mut net: Vec<Option<u8>> = Vec::new();
    match (p.saddr, p.daddr) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let tot = (20 + l4len) as u16;
            net.push(Some(0x45));
            net.push(None);
            net.extend(tot.to_be_bytes().map(Some));
            net.extend([None; 4]);
            net.push(None);
            net.push(Some(match p.proto {
                Proto::Udp => 17,
                Proto::Tcp => 6,
            }));
            net.extend([None; 2]);
            net.extend(s.octets().map(Some));
            net.extend(d.octets().map(Some));
        }
        (s, d) => {
            let v6 = |a: IpAddr| match a {
                IpAddr::V6(a) => a.octets(),
                IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
            };
            net.extend([None; 4]);
            net.extend((l4len as u16).to_be_bytes().map(Some));
            net.push(Some(match p.proto {
                Proto::Udp => 17,
                Proto::Tcp => 6,
            }));
            net.push(None);
            net.extend(v6(s).map(Some));
            net.extend(v6(d).map(Some));
        }
    }
    net.extend(l4.iter().copied());
    (l4, net)
}

/// Runs `prog` on one packet with the maps as `maps` holds them.
pub fn run(prog: &EbpfProgram, maps: &MapState, pkt: &Packet) -> EbpfRun {
    let kind = prog.kind.unwrap_or(ProgKind::SkReuseport);
    let (data, net) = frames(pkt, kind);
    let mut vm = Vm {
        prog,
        pkt,
        kind,
        maps: maps.clone(),
        reg: Default::default(),
        stack: vec![Cell::Uninit; STACK_SIZE],
        spilled: Vec::new(),
        unknowns: Vec::new(),
        data,
        net,
        cb: [0; 20],
        rng: pkt.seed,
        selected: None,
        calls: Vec::new(),
        read_hash: false,
        drew_random: false,
    };
    vm.reg[1] = Val::Ptr(Ptr {
        region: Region::Ctx,
        off: 0,
    });
    vm.reg[10] = Val::Ptr(Ptr {
        region: Region::Stack,
        off: STACK_SIZE as i64,
    });
    let mut steps = Vec::new();
    let mut taken = 0u32;
    let mut pc = 0usize;
    let end = loop {
        if taken >= MAX_STEPS {
            break EbpfEnd::Fault {
                pc: pc as u32,
                why: format!(
                    "the run took {MAX_STEPS} instructions without exiting (the model's bound)"
                ),
            };
        }
        let Some(&insn) = prog.insns.get(pc) else {
            break EbpfEnd::Fault {
                pc: pc as u32,
                why: format!(
                    "the program runs past its last instruction ({})",
                    prog.insns.len()
                ),
            };
        };
        taken += 1;
        match vm.step(pc, insn) {
            Ok(Flow::Next(n, written)) => {
                if steps.len() < MAX_RECORDED_STEPS {
                    steps.push(EbpfStep {
                        pc: pc as u32,
                        reg: written,
                        value: written.map(|r| vm.show(&vm.reg[r as usize])),
                    });
                }
                pc = n;
            }
            Ok(Flow::Exit(v)) => {
                if steps.len() < MAX_RECORDED_STEPS {
                    steps.push(EbpfStep {
                        pc: pc as u32,
                        reg: None,
                        value: None,
                    });
                }
                break EbpfEnd::Returned {
                    value: v.to_string(),
                };
            }
            Err(Stop::Unknown(what)) => {
                break EbpfEnd::Unknown {
                    pc: pc as u32,
                    what,
                }
            }
            Err(Stop::Fault(why)) => break EbpfEnd::Fault { pc: pc as u32, why },
        }
    };
    let name = match kind {
        ProgKind::SkReuseport => "sk_reuseport",
        ProgKind::SkReuseportMigrate => "sk_reuseport/migrate",
        ProgKind::SocketFilter => "socket filter",
    };
    EbpfRun {
        program: format!("{} ({name})", prog.name),
        steps,
        taken,
        calls: vm.calls,
        end,
        selected: vm.selected,
        read_hash: vm.read_hash,
        drew_random: vm.drew_random,
        maps_after: Some(vm.maps),
    }
}

enum Flow {
    Next(usize, Option<u8>),
    Exit(u64),
}

const EXIT_ON_LD_ABS_FAIL: u64 = 0;

impl Vm<'_, '_> {
    fn show(&self, v: &Val) -> String {
        match v {
            Val::Uninit => "uninit".into(),
            Val::Num(n) => format!("{n:#x}"),
            Val::Unknown(w) => format!("unknown ({w})"),
            Val::Ptr(p) => self.show_ptr(p),
        }
    }

    fn show_ptr(&self, p: &Ptr) -> String {
        let base = match p.region {
            Region::Ctx => "ctx".to_string(),
            Region::Stack => return format!("fp{:+}", p.off - STACK_SIZE as i64),
            Region::Packet => "data".to_string(),
            Region::Map(m) => format!("map {}", self.maps.maps[m].def.name),
            Region::Value { map, slot } => {
                let m = &self.maps.maps[map];
                let key = m
                    .entries
                    .iter()
                    .find(|(_, &s)| s == slot)
                    .map_or("deleted".into(), |(k, _)| hex(k));
                format!("{}[{key}]", m.def.name)
            }
            Region::Sock(l) => format!("socket {l}"),
            Region::Child => "migrating_sk".to_string(),
        };
        if p.off == 0 {
            base
        } else {
            format!("{base}{:+}", p.off)
        }
    }

    fn get(&self, r: u8) -> R<Val> {
        match self.reg.get(r as usize) {
            None => fault(format!("register r{r} does not exist")),
            Some(Val::Uninit) => fault(format!(
                "reads r{r}, which holds no value here (the verifier refuses: R{r} !read_ok)"
            )),
            Some(v) => Ok(v.clone()),
        }
    }

    fn num(&self, r: u8) -> R<u64> {
        match self.get(r)? {
            Val::Num(n) => Ok(n),
            Val::Unknown(w) => Err(Stop::Unknown(w)),
            Val::Ptr(p) => fault(format!(
                "uses r{r}, a pointer ({}), as a number (the verifier refuses pointer arithmetic of this kind)",
                self.show_ptr(&p)
            )),
            Val::Uninit => unreachable!(),
        }
    }

    fn set(&mut self, r: u8, v: Val) -> R<()> {
        if r >= 10 {
            return fault(format!("writes r{r} (the frame pointer is read-only)"));
        }
        self.reg[r as usize] = v;
        Ok(())
    }

    fn step(&mut self, pc: usize, i: Insn) -> R<Flow> {
        let class = i.code & 0x07;
        match class {
            0x04 | 0x07 => self
                .alu(i, class == 0x07)
                .map(|_| Flow::Next(pc + 1, Some(i.dst))),
            0x05 | 0x06 => self.jmp(pc, i, class == 0x06),
            0x00 => self.ld(pc, i),
            0x01 => {
                let size = size_of(i.code);
                let base = self.get(i.src)?;
                let v = self.load(&base, i.off as i64, size)?;
                let v = if i.code & 0xe0 == 0x80 {
                    // BPF_MEMSX (6.6): sign-extending load.
                    match v {
                        Val::Num(n) => Val::Num(sext(n, size * 8)),
                        other => other,
                    }
                } else {
                    v
                };
                self.set(i.dst, v)?;
                Ok(Flow::Next(pc + 1, Some(i.dst)))
            }
            0x02 => {
                let base = self.get(i.dst)?;
                self.store(
                    &base,
                    i.off as i64,
                    size_of(i.code),
                    Val::Num(i.imm as i64 as u64),
                )?;
                Ok(Flow::Next(pc + 1, None))
            }
            0x03 => {
                let base = self.get(i.dst)?;
                let size = size_of(i.code);
                if i.code & 0xe0 == 0xc0 {
                    return self.atomic(pc, i, &base, size);
                }
                let v = self.get(i.src)?;
                self.store(&base, i.off as i64, size, v)?;
                Ok(Flow::Next(pc + 1, None))
            }
            _ => fault(format!("opcode {:#04x} is no instruction", i.code)),
        }
    }

    fn atomic(&mut self, pc: usize, i: Insn, base: &Val, size: u32) -> R<Flow> {
        if size != 4 && size != 8 {
            return fault("an atomic operation on other than 4 or 8 bytes");
        }
        let old = match self.load(base, i.off as i64, size)? {
            Val::Num(n) => n,
            Val::Unknown(w) => return Err(Stop::Unknown(w)),
            _ => return fault("an atomic operation on a pointer"),
        };
        let src = self.num(i.src)?;
        let mask = if size == 4 { 0xffff_ffff } else { u64::MAX };
        let op = i.imm & !0x01;
        let new = match op {
            0x00 => old.wrapping_add(src),
            0x40 => old | src,
            0x50 => old & src,
            0xa0 => old ^ src,
            0xe0 => src,
            0xf0 => {
                // BPF_CMPXCHG: compares with R0.
                let r0 = self.num(0)? & mask;
                let new = if r0 == old & mask { src } else { old };
                self.store(base, i.off as i64, size, Val::Num(new & mask))?;
                self.set(0, Val::Num(old & mask))?;
                return Ok(Flow::Next(pc + 1, Some(0)));
            }
            _ => {
                return fault(format!(
                    "atomic operation {:#x} is not one the model runs",
                    i.imm
                ))
            }
        } & mask;
        self.store(base, i.off as i64, size, Val::Num(new))?;
        if i.imm & 0x01 != 0 {
            self.set(i.src, Val::Num(old & mask))?;
            return Ok(Flow::Next(pc + 1, Some(i.src)));
        }
        Ok(Flow::Next(pc + 1, None))
    }

    fn alu(&mut self, i: Insn, wide: bool) -> R<()> {
        let op = i.code & 0xf0;
        let from_reg = i.code & 0x08 != 0;
        if op == 0xb0 {
            // MOV (and MOVSX, 6.6: off 8, 16 or 32).
            let v = if from_reg {
                self.get(i.src)?
            } else {
                Val::Num(i.imm as i64 as u64)
            };
            let v = match v {
                Val::Num(n) => {
                    let n = if i.off != 0 { sext(n, i.off as u32) } else { n };
                    Val::Num(if wide { n } else { n & 0xffff_ffff })
                }
                Val::Ptr(p) if wide => Val::Ptr(p),
                Val::Ptr(_) => return fault("a 32-bit move of a pointer (the verifier refuses)"),
                other => other,
            };
            return self.set(i.dst, v);
        }
        if op == 0xd0 {
            let n = match self.get(i.dst)? {
                Val::Num(n) => n,
                Val::Unknown(w) => return self.set(i.dst, Val::Unknown(w)),
                _ => return fault("a byte swap of a pointer"),
            };
            let bits = i.imm as u32;
            let v = if wide || i.code & 0x08 != 0 {
                // BPF_TO_BE on little-endian, or ALU64 BSWAP (6.6): swap.
                match bits {
                    16 => (n as u16).swap_bytes() as u64,
                    32 => (n as u32).swap_bytes() as u64,
                    64 => n.swap_bytes(),
                    _ => return fault(format!("a byte swap of {bits} bits")),
                }
            } else {
                match bits {
                    16 => n & 0xffff,
                    32 => n & 0xffff_ffff,
                    64 => n,
                    _ => return fault(format!("a byte swap of {bits} bits")),
                }
            };
            return self.set(i.dst, Val::Num(v));
        }
        let dst = self.get(i.dst)?;
        let src = if op == 0x80 {
            Val::Num(0)
        } else if from_reg {
            self.get(i.src)?
        } else {
            Val::Num(i.imm as i64 as u64)
        };
        // Pointer arithmetic: pointer ± number, pointer − pointer.
        match (&dst, &src) {
            (Val::Ptr(p), Val::Num(n)) if wide && (op == 0x00 || op == 0x10) => {
                let d = if op == 0x00 {
                    *n as i64
                } else {
                    (*n as i64).wrapping_neg()
                };
                return self.set(
                    i.dst,
                    Val::Ptr(Ptr {
                        region: p.region,
                        off: p.off.wrapping_add(d),
                    }),
                );
            }
            (Val::Num(n), Val::Ptr(p)) if wide && op == 0x00 => {
                return self.set(
                    i.dst,
                    Val::Ptr(Ptr {
                        region: p.region,
                        off: p.off.wrapping_add(*n as i64),
                    }),
                );
            }
            (Val::Ptr(a), Val::Ptr(b)) if wide && op == 0x10 && a.region == b.region => {
                return self.set(i.dst, Val::Num(a.off.wrapping_sub(b.off) as u64));
            }
            (Val::Ptr(_), _) | (_, Val::Ptr(_)) => {
                return fault(format!(
                    "ALU operation {op:#04x} on a pointer (the verifier refuses it)"
                ))
            }
            (Val::Unknown(w), _) | (_, Val::Unknown(w)) => {
                let w = w.clone();
                return self.set(i.dst, Val::Unknown(w));
            }
            _ => {}
        }
        let (Val::Num(a), Val::Num(b)) = (dst, src) else {
            unreachable!("numbers after the pointer cases")
        };
        let signed = i.off == 1;
        let v = if wide {
            alu64(op, a, b, signed)?
        } else {
            alu32(op, a as u32, b as u32, signed)? as u64
        };
        self.set(i.dst, Val::Num(v))
    }

    fn jmp(&mut self, pc: usize, i: Insn, j32: bool) -> R<Flow> {
        let op = i.code & 0xf0;
        let target = |off: i64| -> R<usize> {
            let t = pc as i64 + 1 + off;
            if t < 0 || t as usize >= self.prog.insns.len() {
                return fault(format!("a jump to {t}, outside the program"));
            }
            Ok(t as usize)
        };
        match op {
            0x00 => {
                let off = if j32 { i.imm as i64 } else { i.off as i64 };
                return Ok(Flow::Next(target(off)?, None));
            }
            0x80 => {
                if i.src != 0 {
                    return fault(
                        "a BPF-to-BPF or kfunc call (the model runs programs without them)",
                    );
                }
                self.call(pc, i.imm)?;
                return Ok(Flow::Next(pc + 1, Some(0)));
            }
            0x90 => {
                return match self.get(0)? {
                    Val::Num(n) => Ok(Flow::Exit(n)),
                    Val::Unknown(w) => Err(Stop::Unknown(w)),
                    _ => fault("exits with a pointer in r0 (the verifier refuses)"),
                };
            }
            _ => {}
        }
        let a = self.get(i.dst)?;
        let b = if i.code & 0x08 != 0 {
            self.get(i.src)?
        } else {
            Val::Num(i.imm as i64 as u64)
        };
        let taken = match (&a, &b) {
            (Val::Num(x), Val::Num(y)) => {
                let (x, y) = if j32 {
                    (*x & 0xffff_ffff, *y & 0xffff_ffff)
                } else {
                    (*x, *y)
                };
                cmp(op, x, y, j32)?
            }
            (Val::Ptr(p), Val::Ptr(q)) if p.region == q.region => {
                cmp(op, p.off as u64, q.off as u64, false)?
            }
            // A pointer that a helper returned is not NULL.
            (Val::Ptr(_), Val::Num(0)) | (Val::Num(0), Val::Ptr(_)) if op == 0x10 => false,
            (Val::Ptr(_), Val::Num(0)) | (Val::Num(0), Val::Ptr(_)) if op == 0x50 => true,
            (Val::Ptr(_), Val::Num(0)) if op == 0x20 => true,
            (Val::Unknown(w), _) | (_, Val::Unknown(w)) => {
                return Err(Stop::Unknown(w.clone()));
            }
            _ => {
                return fault(format!(
                    "compares {} with {} (the verifier refuses)",
                    self.show(&a),
                    self.show(&b)
                ))
            }
        };
        let n = if taken { target(i.off as i64)? } else { pc + 1 };
        Ok(Flow::Next(n, None))
    }

    fn ld(&mut self, pc: usize, i: Insn) -> R<Flow> {
        if i.code == 0x18 {
            let Some(next) = self.prog.insns.get(pc + 1) else {
                return fault("ld_imm64 without its second half");
            };
            let v = match i.src {
                0 => Val::Num((i.imm as u32 as u64) | ((next.imm as u32 as u64) << 32)),
                1 | 2 => {
                    let m = i.imm as usize;
                    if m >= self.maps.maps.len() {
                        return fault(format!("ld_imm64 of map {m}, which the object lacks"));
                    }
                    if i.src == 1 {
                        Val::Ptr(Ptr {
                            region: Region::Map(m),
                            off: 0,
                        })
                    } else {
                        let slot = self.maps.maps[m]
                            .find(&0u32.to_le_bytes())
                            .ok_or(Stop::Fault("global data without its entry".into()))?;
                        Val::Ptr(Ptr {
                            region: Region::Value { map: m, slot },
                            off: next.imm as i64,
                        })
                    }
                }
                s => {
                    return fault(format!(
                        "ld_imm64 with src {s}, which the model does not resolve"
                    ))
                }
            };
            self.set(i.dst, v)?;
            return Ok(Flow::Next(pc + 2, Some(i.dst)));
        }
        let mode = i.code & 0xe0;
        if mode != 0x20 && mode != 0x40 {
            return fault(format!("opcode {:#04x} is no load the model runs", i.code));
        }
        if self.kind != ProgKind::SocketFilter {
            return fault("LD_ABS/LD_IND in an SK_REUSEPORT program (the verifier refuses)");
        }
        let size = size_of(i.code);
        let mut off = i.imm as i64;
        if mode == 0x40 {
            off += self.num(i.src)? as u32 as i32 as i64;
        }
        for r in 1..=5 {
            self.reg[r] = Val::Uninit;
        }
        if off < 0 {
            return Err(Stop::Unknown(format!(
                "LD_ABS at negative offset {off} (the network or link header), which the model does not hold for socket filters"
            )));
        }
        let end = off as usize + size as usize;
        if end > self.data.len() {
            // bpf_skb_load_helper_* fails: the program returns 0.
            return Ok(Flow::Exit(EXIT_ON_LD_ABS_FAIL));
        }
        let mut v = 0u64;
        for b in &self.data[off as usize..end] {
            v = (v << 8) | b.expect("socket filter payload bytes are known") as u64;
        }
        self.set(0, Val::Num(v))?;
        Ok(Flow::Next(pc + 1, Some(0)))
    }

    /// Reads `size` bytes little-endian at `base + off`.
    fn load(&mut self, base: &Val, off: i64, size: u32) -> R<Val> {
        let p = match base {
            Val::Ptr(p) => *p,
            Val::Unknown(w) => return Err(Stop::Unknown(w.clone())),
            _ => return fault("a load through a number (the verifier refuses: not a pointer)"),
        };
        let at = p.off + off;
        match p.region {
            Region::Ctx => self.ctx_load(at, size),
            Region::Stack => self.stack_load(at, size),
            Region::Packet => {
                if at < 0 || at as usize + size as usize > self.data.len() {
                    return fault(format!(
                        "reads data+{at}..+{size}, past data_end ({}) (the verifier refuses an unchecked packet read)",
                        self.data.len()
                    ));
                }
                let mut v = 0u64;
                for (k, b) in self.data[at as usize..at as usize + size as usize]
                    .iter()
                    .enumerate()
                {
                    match b {
                        Some(b) => v |= (*b as u64) << (8 * k),
                        None => {
                            return Err(Stop::Unknown(format!(
                                "packet byte data+{} (a checksum or header field the model does not know)",
                                at as usize + k
                            )))
                        }
                    }
                }
                Ok(Val::Num(v))
            }
            Region::Value { map, slot } => {
                let Stored::Bytes(b) = self.maps.maps[map].slot(slot) else {
                    return fault("reads a socket or map entry as bytes");
                };
                if at < 0 || at as usize + size as usize > b.len() {
                    return fault(format!(
                        "reads {}+{at}..+{size}, past the value's {} bytes",
                        self.maps.maps[map].def.name,
                        b.len()
                    ));
                }
                let mut v = 0u64;
                for (k, x) in b[at as usize..at as usize + size as usize]
                    .iter()
                    .enumerate()
                {
                    v |= (*x as u64) << (8 * k);
                }
                Ok(Val::Num(v))
            }
            Region::Map(_) => fault("reads through a map pointer (the verifier refuses)"),
            Region::Sock(_) => Err(Stop::Unknown(
                "a field of struct bpf_sock (the model does not hold the socket's fields)".into(),
            )),
            Region::Child => self.child_load(at, size),
        }
    }

    /// A field of `migrating_sk` (`struct bpf_sock` through
    /// `PTR_TO_SOCK_COMMON`: `bpf_sock_common_is_valid_access` refuses
    /// `type` to `priority`; `bpf_sock_convert_ctx_access`, net/core/filter.c
    /// 5.14+). The child's addresses are the packet's, its local side first.
    fn child_load(&self, at: i64, size: u32) -> R<Val> {
        let p = self.pkt;
        let state = p.migrating.map_or(0, |m| m.stage.state());
        let v4 = |a: IpAddr| match a {
            IpAddr::V4(a) => Some(u32::from_le_bytes(a.octets()) as u64),
            IpAddr::V6(_) => None,
        };
        let field = |v: u64, start: i64, fsize: u32| -> R<Val> {
            if size > fsize || (at - start) % size as i64 != 0 {
                return fault(format!(
                    "reads migrating_sk at offset {at}, size {size} (the verifier refuses)"
                ));
            }
            Ok(Val::Num(narrow(v, at - start, size)))
        };
        let unknown = |what: &str| {
            Err(Stop::Unknown(format!(
                "migrating_sk->{what}, which the model does not hold"
            )))
        };
        match at {
            4..=7 => field(if p.saddr.is_ipv6() { 10 } else { 2 }, 4, 4),
            8..=23 => fault(format!(
                "reads migrating_sk at offset {at} (type to priority: bpf_sock_common_is_valid_access refuses)"
            )),
            24..=27 => match v4(p.daddr) {
                Some(a) => field(a, 24, 4),
                None => unknown("src_ip4 of an IPv6 socket"),
            },
            44..=47 => field(p.dport as u64, 44, 4),
            48..=49 => field(u16::from_le_bytes(p.sport.to_be_bytes()) as u64, 48, 2),
            52..=55 => match v4(p.saddr) {
                Some(a) => field(a, 52, 4),
                None => unknown("dst_ip4 of an IPv6 socket"),
            },
            72..=75 => field(state as u64, 72, 4),
            0..=3 => unknown("bound_dev_if"),
            28..=43 => unknown("src_ip6"),
            56..=71 => unknown("dst_ip6"),
            76..=79 => unknown("rx_queue_mapping"),
            _ => fault(format!(
                "reads migrating_sk at offset {at}, past struct bpf_sock (the verifier refuses)"
            )),
        }
    }

    fn store(&mut self, base: &Val, off: i64, size: u32, v: Val) -> R<()> {
        let p = match base {
            Val::Ptr(p) => *p,
            _ => return fault("a store through a number (the verifier refuses)"),
        };
        let at = p.off + off;
        match p.region {
            Region::Stack => {
                if at < 0 || at as usize + size as usize > STACK_SIZE {
                    return fault(format!(
                        "a stack write at fp{:+}, outside the 512-byte stack",
                        at - STACK_SIZE as i64
                    ));
                }
                let at = at as usize;
                match v {
                    Val::Num(n) => {
                        for k in 0..size as usize {
                            self.stack[at + k] = Cell::Byte((n >> (8 * k)) as u8);
                        }
                    }
                    Val::Ptr(q) => {
                        if size != 8 {
                            return fault("a partial spill of a pointer (the verifier refuses)");
                        }
                        let idx = self.spilled.len() as u16;
                        self.spilled.push(q);
                        for k in 0..8 {
                            self.stack[at + k] = Cell::Ptr(idx, k as u8);
                        }
                    }
                    Val::Unknown(w) => {
                        let idx = self.unknowns.len() as u16;
                        self.unknowns.push(w);
                        for k in 0..size as usize {
                            self.stack[at + k] = Cell::Unknown(idx);
                        }
                    }
                    Val::Uninit => unreachable!(),
                }
                Ok(())
            }
            Region::Value { map, slot } => {
                let n = match v {
                    Val::Num(n) => n,
                    Val::Unknown(w) => return Err(Stop::Unknown(w)),
                    _ => return fault("stores a pointer in a map value (the verifier refuses)"),
                };
                if self.maps.maps[map].def.data.is_some()
                    && self.maps.maps[map].def.name == ".rodata"
                {
                    return fault("writes to .rodata (the verifier refuses: the map is frozen)");
                }
                let Stored::Bytes(b) = self.maps.maps[map].slot_mut(slot) else {
                    return fault("writes a socket or map entry as bytes");
                };
                if at < 0 || at as usize + size as usize > b.len() {
                    return fault("a write past the map value's end");
                }
                for k in 0..size as usize {
                    b[at as usize + k] = (n >> (8 * k)) as u8;
                }
                Ok(())
            }
            Region::Ctx if self.kind == ProgKind::SocketFilter && (48..68).contains(&at) => {
                let n = match v {
                    Val::Num(n) => n,
                    Val::Unknown(w) => return Err(Stop::Unknown(w)),
                    _ => return fault("stores a pointer in cb[] (the verifier refuses)"),
                };
                let at = at as usize - 48;
                if at + size as usize > 20 {
                    return fault("a cb[] write past its 20 bytes");
                }
                for k in 0..size as usize {
                    self.cb[at + k] = (n >> (8 * k)) as u8;
                }
                Ok(())
            }
            Region::Ctx => fault(format!("writes the context at {at} (the verifier refuses)")),
            Region::Packet => {
                fault("writes the packet (the verifier refuses for this program type)")
            }
            Region::Map(_) | Region::Sock(_) | Region::Child => {
                fault("writes through a map or socket pointer")
            }
        }
    }

    fn stack_load(&self, at: i64, size: u32) -> R<Val> {
        if at < 0 || at as usize + size as usize > STACK_SIZE {
            return fault(format!(
                "a stack read at fp{:+}, outside the 512-byte stack",
                at - STACK_SIZE as i64
            ));
        }
        let cells = &self.stack[at as usize..at as usize + size as usize];
        if let Cell::Ptr(idx, 0) = cells[0] {
            if size == 8
                && cells
                    .iter()
                    .enumerate()
                    .all(|(k, c)| *c == Cell::Ptr(idx, k as u8))
            {
                return Ok(Val::Ptr(self.spilled[idx as usize]));
            }
            return fault("a partial read of a spilled pointer (the verifier refuses)");
        }
        let mut v = 0u64;
        for (k, c) in cells.iter().enumerate() {
            match c {
                Cell::Byte(b) => v |= (*b as u64) << (8 * k),
                Cell::Uninit => {
                    return fault(format!(
                        "reads stack byte fp{:+}, never written (the verifier refuses: invalid read from stack)",
                        at + k as i64 - STACK_SIZE as i64
                    ))
                }
                Cell::Unknown(i) => return Ok(Val::Unknown(self.unknowns[*i as usize].clone())),
                Cell::Ptr(..) => return fault("reads part of a spilled pointer as a number"),
            }
        }
        Ok(Val::Num(v))
    }

    /// Bytes at a pointer, for a helper's key or value argument.
    fn bytes_at(&self, v: &Val, len: u32, what: &str) -> R<Vec<u8>> {
        let Val::Ptr(p) = v else {
            return fault(format!("{what} is not a pointer (the verifier refuses)"));
        };
        let mut out = Vec::with_capacity(len as usize);
        for k in 0..len as i64 {
            let b = match p.region {
                Region::Stack => match self.stack_load(p.off + k, 1)? {
                    Val::Num(n) => n as u8,
                    Val::Unknown(w) => return Err(Stop::Unknown(w)),
                    _ => return fault(format!("{what} holds a pointer")),
                },
                Region::Value { map, slot } => match self.maps.maps[map].slot(slot) {
                    Stored::Bytes(b) => *b
                        .get((p.off + k) as usize)
                        .ok_or(Stop::Fault(format!("{what} runs past the map value")))?,
                    _ => return fault(format!("{what} points into a socket or map entry")),
                },
                Region::Packet => match self.data.get((p.off + k) as usize) {
                    Some(Some(b)) => *b,
                    Some(None) => {
                        return Err(Stop::Unknown(format!(
                            "packet byte data+{} in {what}",
                            p.off + k
                        )))
                    }
                    None => return fault(format!("{what} runs past data_end")),
                },
                _ => return fault(format!("{what} points at {}", self.show_ptr(p))),
            };
            out.push(b);
        }
        Ok(out)
    }

    /// Writes bytes at a stack or map value pointer (a helper's output).
    fn write_at(&mut self, v: &Val, bytes: &[u8], what: &str) -> R<()> {
        let Val::Ptr(p) = v else {
            return fault(format!("{what} is not a pointer"));
        };
        for (k, b) in bytes.iter().enumerate() {
            self.store(&Val::Ptr(*p), k as i64, 1, Val::Num(*b as u64))?;
        }
        Ok(())
    }

    fn ctx_load(&mut self, at: i64, size: u32) -> R<Val> {
        let p = self.pkt;
        if self.kind == ProgKind::SocketFilter {
            let field = |v: u32| Ok(Val::Num(narrow(v as u64, at & 3, size)));
            return match at & !3 {
                0 => field(p.payload.len() as u32),
                4 => field(p.anc.pkttype.unwrap_or(0)),
                8 => field(p.anc.mark.unwrap_or(0)),
                12 => field(p.anc.queue.unwrap_or(0)),
                // skb->protocol, big-endian in memory.
                16 => field(u16::from_be_bytes(if p.saddr.is_ipv6() {
                    [0xdd, 0x86]
                } else {
                    [0x00, 0x08]
                }) as u32),
                40 => field(p.anc.ifindex.unwrap_or(1)),
                48..=64 => {
                    let o = at as usize - 48;
                    if o + size as usize > 20 {
                        return fault("a cb[] read past its 20 bytes");
                    }
                    let mut v = 0u64;
                    for k in 0..size as usize {
                        v |= (self.cb[o + k] as u64) << (8 * k);
                    }
                    Ok(Val::Num(v))
                }
                68 => match p.anc.rxhash {
                    Some(h) => field(h),
                    None => Err(Stop::Unknown(
                        "__sk_buff.hash (skb->hash: the sender's flow hash, not the model's)"
                            .into(),
                    )),
                },
                _ => Err(Stop::Unknown(format!(
                    "__sk_buff field at offset {at}, which the model does not hold"
                ))),
            };
        }
        let num = |v: u64, fsize: i64| -> R<Val> { Ok(Val::Num(narrow(v, at % fsize, size))) };
        let empty_skb = p.migrating.is_some_and(|m| m.stage.empty_skb());
        if (40..56).contains(&at) && !p.since_5_14 {
            return fault(format!(
                "reads sk_reuseport_md at offset {at}: before 5.14 the structure ends at `hash` \
                 (sk_reuseport_is_valid_access, net/core/filter.c; the verifier refuses)"
            ));
        }
        match at {
            // alloc_skb(0): skb->len 0 and skb->protocol 0.
            16..=23 if empty_skb => num(0, 4),
            0 | 8 if size == 8 => Ok(Val::Ptr(Ptr {
                region: Region::Packet,
                off: if at == 0 { 0 } else { self.data.len() as i64 },
            })),
            16..=19 => {
                if p.proto == Proto::Tcp {
                    return Err(Stop::Unknown(if p.migrating.is_some() {
                        "sk_reuseport_md.len of the final ACK (its TCP options' length)".into()
                    } else {
                        "sk_reuseport_md.len of a SYN (its TCP options' length)".into()
                    }));
                }
                num(self.data.len() as u64, 4)
            }
            20..=23 => num(
                u16::from_le_bytes(if p.saddr.is_ipv6() {
                    [0x86, 0xdd]
                } else {
                    [0x08, 0x00]
                }) as u64,
                4,
            ),
            24..=27 => num(
                match p.proto {
                    Proto::Udp => 17,
                    Proto::Tcp => 6,
                },
                4,
            ),
            28..=31 => num(p.bind_inany as u64, 4),
            32..=35 => {
                self.read_hash = true;
                num(p.hash as u64, 4)
            }
            40 if size == 8 => Ok(Val::Ptr(Ptr {
                region: Region::Sock(p.migrating.map_or(p.first, |m| m.closing)),
                off: 0,
            })),
            48 if size == 8 => Ok(match p.migrating {
                Some(_) => Val::Ptr(Ptr {
                    region: Region::Child,
                    off: 0,
                }),
                None => Val::Num(0),
            }),
            _ => fault(format!(
                "reads sk_reuseport_md at offset {at}, size {size} (the verifier refuses)"
            )),
        }
    }

    fn draw(&mut self) -> u32 {
        // splitmix64: the model's seeded stand-in for the kernel's per-CPU
        // prandom state, which no one outside the kernel can read.
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) as u32
    }

    fn map_of(&self, v: &Val, what: &str) -> R<usize> {
        match v {
            Val::Ptr(Ptr {
                region: Region::Map(m),
                off: 0,
            }) => Ok(*m),
            _ => fault(format!("{what} is not a map (the verifier refuses)")),
        }
    }

    fn call(&mut self, pc: usize, id: i32) -> R<()> {
        let args: Vec<Val> = (1..=5).map(|r| self.reg[r].clone()).collect();
        let (helper, shown, ret, rule): (&str, Vec<String>, Val, &str) = match id {
            1 => {
                let m = self.map_of(&args[0], "r1")?;
                let def = self.maps.maps[m].def.clone();
                let key = self.bytes_at(&args[1], def.key_size, "the key")?;
                let found = self.maps.maps[m].find(&key);
                let ret = match (found, def.map_type) {
                    (None, _) => Val::Num(0),
                    (Some(s), t) if t == map_type::ARRAY_OF_MAPS || t == map_type::HASH_OF_MAPS => {
                        match self.maps.maps[m].slot(s) {
                            Stored::Map(inner) => Val::Ptr(Ptr {
                                region: Region::Map(*inner),
                                off: 0,
                            }),
                            _ => Val::Num(0),
                        }
                    }
                    (Some(_), t)
                        if t == map_type::SOCKMAP
                            || t == map_type::SOCKHASH
                            || t == map_type::REUSEPORT_SOCKARRAY =>
                    {
                        return fault(format!(
                            "bpf_map_lookup_elem on a {}: the model does not run socket lookups from a program",
                            map_type::name(t)
                        ))
                    }
                    (Some(_), t) if t == map_type::PERCPU_ARRAY || t == map_type::PERCPU_HASH => {
                        return fault("per-CPU maps are not in the model")
                    }
                    (Some(s), _) => Val::Ptr(Ptr {
                        region: Region::Value { map: m, slot: s },
                        off: 0,
                    }),
                };
                (
                    "bpf_map_lookup_elem",
                    vec![def.name.clone(), format!("key {}", hex(&key))],
                    ret,
                    "map_lookup_elem of the map's type (kernel/bpf/arraymap.c, hashtab.c, 6.x): NULL when absent",
                )
            }
            2 => {
                let m = self.map_of(&args[0], "r1")?;
                let def = self.maps.maps[m].def.clone();
                if matches!(
                    def.map_type,
                    map_type::SOCKMAP | map_type::SOCKHASH | map_type::REUSEPORT_SOCKARRAY
                ) || def.map_type == map_type::ARRAY_OF_MAPS
                    || def.map_type == map_type::HASH_OF_MAPS
                {
                    return fault(format!(
                        "bpf_map_update_elem on a {} (not run by the model)",
                        map_type::name(def.map_type)
                    ));
                }
                if def.name == ".rodata" {
                    return fault("updates .rodata (frozen)");
                }
                let key = self.bytes_at(&args[1], def.key_size, "the key")?;
                let val = self.bytes_at(&args[2], def.value_size, "the value")?;
                let flags = match &args[3] {
                    Val::Num(n) => *n,
                    Val::Unknown(w) => return Err(Stop::Unknown(w.clone())),
                    _ => return fault("flags is not a number"),
                };
                let r = self.maps.maps[m].update(&key, val.clone(), flags);
                (
                    "bpf_map_update_elem",
                    vec![
                        def.name.clone(),
                        format!("key {}", hex(&key)),
                        format!("value {}", hex(&val)),
                        format!("flags {flags}"),
                    ],
                    Val::Num(r as u64),
                    "array_map_update_elem / htab_map_update_elem (kernel/bpf/arraymap.c, hashtab.c, 6.x)",
                )
            }
            3 => {
                let m = self.map_of(&args[0], "r1")?;
                let def = self.maps.maps[m].def.clone();
                if matches!(def.map_type, map_type::SOCKMAP | map_type::SOCKHASH) {
                    return fault("bpf_map_delete_elem on a socket map (not run by the model)");
                }
                let key = self.bytes_at(&args[1], def.key_size, "the key")?;
                let r = self.maps.maps[m].delete(&key);
                (
                    "bpf_map_delete_elem",
                    vec![def.name.clone(), format!("key {}", hex(&key))],
                    Val::Num(r as u64),
                    "array_map_delete_elem (-EINVAL) / htab_map_delete_elem (kernel/bpf/arraymap.c, hashtab.c, 6.x)",
                )
            }
            7 => {
                self.drew_random = true;
                let v = self.draw();
                (
                    "bpf_get_prandom_u32",
                    vec![],
                    Val::Num(v as u64),
                    "bpf_user_rnd_u32 (kernel/bpf/core.c): per-CPU state; the model draws from its seed instead",
                )
            }
            8 => (
                "bpf_get_smp_processor_id",
                vec![],
                Val::Num(self.pkt.cpu as u64),
                "bpf_get_smp_processor_id (kernel/bpf/helpers.c): the receiving CPU",
            ),
            26 => {
                let off = self.num(2)?;
                let len = self.num(4)?;
                let mut ret = 0i64;
                let bytes: Vec<u8> = if off > i32::MAX as u64
                    || off as usize + len as usize > self.data.len()
                    || len == 0
                {
                    ret = errno::EFAULT;
                    vec![0; len as usize]
                } else {
                    let mut v = Vec::new();
                    for k in 0..len as usize {
                        match self.data[off as usize + k] {
                            Some(b) => v.push(b),
                            None => {
                                return Err(Stop::Unknown(format!(
                                    "packet byte data+{} read by bpf_skb_load_bytes",
                                    off as usize + k
                                )))
                            }
                        }
                    }
                    v
                };
                self.write_at(&args[2], &bytes, "the buffer")?;
                (
                    "bpf_skb_load_bytes",
                    vec![format!("offset {off}"), format!("len {len}")],
                    Val::Num(ret as u64),
                    "bpf_skb_load_bytes / sk_reuseport_load_bytes (net/core/filter.c 4.19+): -EFAULT and a zeroed buffer past the end",
                )
            }
            68 => {
                let off = self.num(2)?;
                let len = self.num(4)?;
                let start = self.num(5)?;
                let (src, base): (&[Option<u8>], i64) = match start {
                    // BPF_HDR_START_NET: from the network header; the
                    // bytes may run on into the transport header.
                    1 if self.kind != ProgKind::SocketFilter => (&self.net, 0),
                    0 | 1 => {
                        return Err(Stop::Unknown(
                            "bpf_skb_load_bytes_relative from the link-layer header (or a socket filter's network header)"
                                .into(),
                        ))
                    }
                    _ => (&[], -1),
                };
                let mut ret = 0;
                let bytes: Vec<u8> = if base < 0
                    || len == 0
                    || off as usize + len as usize > src.len()
                {
                    ret = errno::EFAULT;
                    vec![0; len as usize]
                } else {
                    let mut v = Vec::new();
                    for k in 0..len as usize {
                        match src[off as usize + k] {
                            Some(b) => v.push(b),
                            None => {
                                return Err(Stop::Unknown(format!(
                                    "header byte {} from the network header (an IP ID, TTL, TOS or checksum)",
                                    off as usize + k
                                )))
                            }
                        }
                    }
                    v
                };
                self.write_at(&args[2], &bytes, "the buffer")?;
                (
                    "bpf_skb_load_bytes_relative",
                    vec![format!("offset {off}"), format!("len {len}"), format!("start {start}")],
                    Val::Num(ret as u64),
                    "____bpf_skb_load_bytes_relative (net/core/filter.c 4.18+): -EFAULT and a zeroed buffer outside the header to the tail",
                )
            }
            82 => {
                if !self.kind.is_sk_reuseport() {
                    return fault("bpf_sk_select_reuseport outside an SK_REUSEPORT program");
                }
                let m = self.map_of(&args[1], "r2")?;
                let def = self.maps.maps[m].def.clone();
                if !matches!(
                    def.map_type,
                    map_type::REUSEPORT_SOCKARRAY | map_type::SOCKMAP | map_type::SOCKHASH
                ) {
                    return fault(format!(
                        "bpf_sk_select_reuseport on a {} (the verifier refuses; it takes REUSEPORT_SOCKARRAY, SOCKMAP or SOCKHASH)",
                        map_type::name(def.map_type)
                    ));
                }
                let key = self.bytes_at(&args[2], def.key_size, "the key")?;
                let found = self.maps.maps[m].find(&key).map(|s| self.maps.maps[m].slot(s).clone());
                let (r, note) = match found {
                    Some(Stored::Socket(l)) if self.pkt.in_group.contains(&l) => {
                        self.selected = Some(l);
                        (0, format!("selected listener {l}"))
                    }
                    // A closed member left the map with its group
                    // (bpf_sk_reuseport_detach, kernel/bpf/reuseport_array.c;
                    // sock_map_unhash, net/core/sock_map.c).
                    Some(Stored::Socket(l)) => (
                        errno::ENOENT,
                        format!("listener {l} is not in the group (closed): its entry is gone"),
                    ),
                    _ => (errno::ENOENT, "no socket at this key".to_string()),
                };
                (
                    "bpf_sk_select_reuseport",
                    vec![def.name.clone(), format!("key {}", hex(&key)), note],
                    Val::Num(r as u64),
                    "sk_select_reuseport (net/core/filter.c 4.19; SOCKMAP and SOCKHASH 5.6): -ENOENT when the key holds no socket",
                )
            }
            46 => {
                if self.kind == ProgKind::SocketFilter {
                    return fault(
                        "bpf_get_socket_cookie in a socket filter (the model runs it in SK_REUSEPORT programs only)",
                    );
                }
                if !self.pkt.since_5_14 {
                    return fault(
                        "bpf_get_socket_cookie: SK_REUSEPORT programs are offered it from 5.14 \
                         (sk_reuseport_func_proto, net/core/filter.c); the verifier refuses it before",
                    );
                }
                let ret = match &args[0] {
                    Val::Ptr(Ptr {
                        region: Region::Sock(l),
                        off: 0,
                    }) => match self.pkt.cookies.iter().find(|(s, _)| s == l) {
                        Some((_, c)) => Val::Num(*c),
                        None => {
                            return Err(Stop::Unknown(format!(
                                "the cookie of listener {l} (SO_COOKIE, handed out by the kernel): give it in `cookies`"
                            )))
                        }
                    },
                    Val::Ptr(Ptr {
                        region: Region::Child,
                        off: 0,
                    }) => {
                        return Err(Stop::Unknown(
                            "the cookie of the migrating socket (the kernel hands it out on first use)"
                                .into(),
                        ))
                    }
                    v => {
                        return fault(format!(
                            "bpf_get_socket_cookie of {} (it takes a socket: the verifier refuses)",
                            self.show(v)
                        ))
                    }
                };
                (
                    "bpf_get_socket_cookie",
                    vec![self.show(&args[0])],
                    ret,
                    "bpf_get_socket_ptr_cookie (net/core/filter.c 5.14+): the socket's cookie, sock_gen_cookie",
                )
            }
            6 => (
                "bpf_trace_printk",
                vec![],
                Val::Num(0),
                "bpf_trace_printk (kernel/trace/bpf_trace.c): writes to the trace pipe; the model returns 0",
            ),
            _ => {
                return fault(format!(
                    "calls helper {id}, which the model does not run"
                ))
            }
        };
        let result = match &ret {
            Val::Num(n) => match errno::name(*n as i64) {
                Some(name) => name.to_string(),
                None => format!("{}", *n as i64),
            },
            Val::Ptr(p) => self.show_ptr(p),
            _ => "?".into(),
        };
        if self.calls.len() < MAX_RECORDED_CALLS {
            self.calls.push(EbpfCall {
                pc: pc as u32,
                helper: helper.into(),
                args: shown,
                result,
                rule: rule.into(),
            });
        }
        self.reg[0] = ret;
        for r in 1..=5 {
            self.reg[r] = Val::Uninit;
        }
        Ok(())
    }
}

fn size_of(code: u8) -> u32 {
    match code & 0x18 {
        0x00 => 4,
        0x08 => 2,
        0x10 => 1,
        _ => 8,
    }
}

fn sext(n: u64, bits: u32) -> u64 {
    if bits >= 64 {
        return n;
    }
    let s = 64 - bits;
    (((n << s) as i64) >> s) as u64
}

/// A narrow context load: `size` bytes at byte `at` of a little-endian field.
fn narrow(v: u64, at: i64, size: u32) -> u64 {
    let v = v >> (8 * at);
    if size >= 8 {
        v
    } else {
        v & ((1u64 << (8 * size)) - 1)
    }
}

fn alu64(op: u8, a: u64, b: u64, signed: bool) -> R<u64> {
    Ok(match op {
        0x00 => a.wrapping_add(b),
        0x10 => a.wrapping_sub(b),
        0x20 => a.wrapping_mul(b),
        0x30 if b == 0 => 0,
        0x30 if signed => (a as i64).wrapping_div(b as i64) as u64,
        0x30 => a / b,
        0x40 => a | b,
        0x50 => a & b,
        0x60 => a << (b & 63),
        0x70 => a >> (b & 63),
        0x80 => (a as i64).wrapping_neg() as u64,
        0x90 if b == 0 => a,
        0x90 if signed => (a as i64).wrapping_rem(b as i64) as u64,
        0x90 => a % b,
        0xa0 => a ^ b,
        0xc0 => ((a as i64) >> (b & 63)) as u64,
        _ => return fault(format!("ALU64 operation {op:#04x} is no instruction")),
    })
}

fn alu32(op: u8, a: u32, b: u32, signed: bool) -> R<u32> {
    Ok(match op {
        0x00 => a.wrapping_add(b),
        0x10 => a.wrapping_sub(b),
        0x20 => a.wrapping_mul(b),
        0x30 if b == 0 => 0,
        0x30 if signed => (a as i32).wrapping_div(b as i32) as u32,
        0x30 => a / b,
        0x40 => a | b,
        0x50 => a & b,
        0x60 => a << (b & 31),
        0x70 => a >> (b & 31),
        0x80 => (a as i32).wrapping_neg() as u32,
        0x90 if b == 0 => a,
        0x90 if signed => (a as i32).wrapping_rem(b as i32) as u32,
        0x90 => a % b,
        0xa0 => a ^ b,
        0xc0 => ((a as i32) >> (b & 31)) as u32,
        _ => return fault(format!("ALU operation {op:#04x} is no instruction")),
    })
}

fn cmp(op: u8, a: u64, b: u64, j32: bool) -> R<bool> {
    let (sa, sb) = if j32 {
        (a as u32 as i32 as i64, b as u32 as i32 as i64)
    } else {
        (a as i64, b as i64)
    };
    Ok(match op {
        0x10 => a == b,
        0x20 => a > b,
        0x30 => a >= b,
        0x40 => a & b != 0,
        0x50 => a != b,
        0x60 => sa > sb,
        0x70 => sa >= sb,
        0xa0 => a < b,
        0xb0 => a <= b,
        0xc0 => sa < sb,
        0xd0 => sa <= sb,
        _ => return fault(format!("jump operation {op:#04x} is no instruction")),
    })
}
