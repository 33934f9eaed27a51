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
use super::said::{CallArg, EbpfFault, EbpfUnknown, HelperRule, HelperSource, Operand};
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
    /// Listeners that are open but in no group: UDP members that left
    /// their group as they connected.
    pub outside_group: &'a [u32],
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
    /// `data+12`, `fp-16`, `&result_map` for the map, `result_map[00000000]+4`
    /// into a value, `sk 2` for a listener); absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub value: Option<String>,
    /// What the register holds when the model does not know it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub unknown: Option<EbpfUnknown>,
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
    pub args: Vec<CallArg>,
    /// What it returned: a number, `-ENOENT`, a pointer, `NULL`.
    pub result: String,
    /// The kernel rule that decides it.
    pub rule: HelperRule,
    /// Where the kernel applies that rule.
    pub source: HelperSource,
}

/// How a run ended (said by `ebpf_end.<kind>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
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
        /// What (boxed: the run record stays small).
        what: Box<EbpfUnknown>,
    },
    /// The program did what the verifier refuses, or what the model does
    /// not run: the record names it.
    Fault {
        /// The instruction.
        pc: u32,
        /// What (boxed: the run record stays small).
        why: Box<EbpfFault>,
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
    Unknown(EbpfUnknown),
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
    Unknown(EbpfUnknown),
    Fault(EbpfFault),
}

type R<T> = Result<T, Stop>;

fn fault<T>(why: EbpfFault) -> R<T> {
    Err(Stop::Fault(why))
}

/// A stack offset as the run table writes it: `fp-8`.
fn fp(at: i64) -> String {
    format!("fp{:+}", at - STACK_SIZE as i64)
}

struct Vm<'a, 'p> {
    prog: &'a EbpfProgram,
    pkt: &'a Packet<'p>,
    kind: ProgKind,
    maps: MapState,
    reg: [Val; 11],
    stack: Vec<Cell>,
    spilled: Vec<Ptr>,
    unknowns: Vec<EbpfUnknown>,
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
                why: Box::new(EbpfFault::TooManySteps { max: MAX_STEPS }),
            };
        }
        let Some(&insn) = prog.insns.get(pc) else {
            break EbpfEnd::Fault {
                pc: pc as u32,
                why: Box::new(EbpfFault::PastEnd {
                    len: prog.insns.len() as u32,
                }),
            };
        };
        taken += 1;
        match vm.step(pc, insn) {
            Ok(Flow::Next(n, written)) => {
                if steps.len() < MAX_RECORDED_STEPS {
                    let held = written.map(|r| &vm.reg[r as usize]);
                    steps.push(EbpfStep {
                        pc: pc as u32,
                        reg: written,
                        value: held
                            .filter(|v| !matches!(v, Val::Unknown(_)))
                            .map(|v| vm.show(v)),
                        unknown: match held {
                            Some(Val::Unknown(w)) => Some(w.clone()),
                            _ => None,
                        },
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
                        unknown: None,
                    });
                }
                break EbpfEnd::Returned {
                    value: v.to_string(),
                };
            }
            Err(Stop::Unknown(what)) => {
                break EbpfEnd::Unknown {
                    pc: pc as u32,
                    what: Box::new(what),
                }
            }
            Err(Stop::Fault(why)) => {
                break EbpfEnd::Fault {
                    pc: pc as u32,
                    why: Box::new(why),
                }
            }
        }
    };
    let name = match kind {
        ProgKind::SkReuseport => "sk_reuseport",
        ProgKind::SkReuseportMigrate => "sk_reuseport/migrate",
        ProgKind::SocketFilter => "socket_filter",
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
            // What it is unknown is recorded beside (EbpfStep::unknown).
            Val::Unknown(_) => "?".into(),
            Val::Ptr(p) => self.show_ptr(p),
        }
    }

    fn show_ptr(&self, p: &Ptr) -> String {
        let base = match p.region {
            Region::Ctx => "ctx".to_string(),
            Region::Stack => return fp(p.off),
            Region::Packet => "data".to_string(),
            // The map's address, as C writes it: `&ngx_quic_sockmap`.
            Region::Map(m) => format!("&{}", self.maps.maps[m].def.name),
            Region::Value { map, slot } => {
                let m = &self.maps.maps[map];
                let key = m
                    .entries
                    .iter()
                    .find(|(_, &s)| s == slot)
                    // A deleted entry's value has no key left.
                    .map_or("-".into(), |(k, _)| hex(k));
                format!("{}[{key}]", m.def.name)
            }
            Region::Sock(l) => format!("sk {l}"),
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
            None => fault(EbpfFault::NoRegister { reg: r }),
            Some(Val::Uninit) => fault(EbpfFault::UninitRegister { reg: r }),
            Some(v) => Ok(v.clone()),
        }
    }

    fn num(&self, r: u8) -> R<u64> {
        match self.get(r)? {
            Val::Num(n) => Ok(n),
            Val::Unknown(w) => Err(Stop::Unknown(w)),
            Val::Ptr(p) => fault(EbpfFault::PointerAsNumber {
                reg: r,
                ptr: self.show_ptr(&p),
            }),
            Val::Uninit => unreachable!(),
        }
    }

    fn set(&mut self, r: u8, v: Val) -> R<()> {
        if r >= 10 {
            return fault(EbpfFault::WritesFramePointer { reg: r });
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
            _ => fault(EbpfFault::BadOpcode {
                code: format!("{:#04x}", i.code),
            }),
        }
    }

    fn atomic(&mut self, pc: usize, i: Insn, base: &Val, size: u32) -> R<Flow> {
        if size != 4 && size != 8 {
            return fault(EbpfFault::AtomicSize);
        }
        let old = match self.load(base, i.off as i64, size)? {
            Val::Num(n) => n,
            Val::Unknown(w) => return Err(Stop::Unknown(w)),
            _ => return fault(EbpfFault::AtomicPointer),
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
                return fault(EbpfFault::AtomicOp {
                    imm: format!("{:#x}", i.imm),
                })
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
                Val::Ptr(_) => return fault(EbpfFault::Mov32Pointer),
                other => other,
            };
            return self.set(i.dst, v);
        }
        if op == 0xd0 {
            let n = match self.get(i.dst)? {
                Val::Num(n) => n,
                Val::Unknown(w) => return self.set(i.dst, Val::Unknown(w)),
                _ => return fault(EbpfFault::SwapPointer),
            };
            let bits = i.imm as u32;
            let v = if wide || i.code & 0x08 != 0 {
                // BPF_TO_BE on little-endian, or ALU64 BSWAP (6.6): swap.
                match bits {
                    16 => (n as u16).swap_bytes() as u64,
                    32 => (n as u32).swap_bytes() as u64,
                    64 => n.swap_bytes(),
                    _ => return fault(EbpfFault::SwapWidth { bits }),
                }
            } else {
                match bits {
                    16 => n & 0xffff,
                    32 => n & 0xffff_ffff,
                    64 => n,
                    _ => return fault(EbpfFault::SwapWidth { bits }),
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
                return fault(EbpfFault::AluPointer {
                    op: format!("{op:#04x}"),
                })
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
                return fault(EbpfFault::JumpOutside { target: t });
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
                    return fault(EbpfFault::Subprogram);
                }
                self.call(pc, i.imm)?;
                return Ok(Flow::Next(pc + 1, Some(0)));
            }
            0x90 => {
                return match self.get(0)? {
                    Val::Num(n) => Ok(Flow::Exit(n)),
                    Val::Unknown(w) => Err(Stop::Unknown(w)),
                    _ => fault(EbpfFault::ExitPointer),
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
                return fault(EbpfFault::Compare {
                    a: self.show(&a),
                    b: self.show(&b),
                })
            }
        };
        let n = if taken { target(i.off as i64)? } else { pc + 1 };
        Ok(Flow::Next(n, None))
    }

    fn ld(&mut self, pc: usize, i: Insn) -> R<Flow> {
        if i.code == 0x18 {
            let Some(next) = self.prog.insns.get(pc + 1) else {
                return fault(EbpfFault::LdImm64Half);
            };
            let v = match i.src {
                0 => Val::Num((i.imm as u32 as u64) | ((next.imm as u32 as u64) << 32)),
                1 | 2 => {
                    let m = i.imm as usize;
                    if m >= self.maps.maps.len() {
                        return fault(EbpfFault::LdImm64Map { map: m as u32 });
                    }
                    if i.src == 1 {
                        Val::Ptr(Ptr {
                            region: Region::Map(m),
                            off: 0,
                        })
                    } else {
                        let slot = self.maps.maps[m]
                            .find(&0u32.to_le_bytes())
                            .ok_or(Stop::Fault(EbpfFault::GlobalDataEntry))?;
                        Val::Ptr(Ptr {
                            region: Region::Value { map: m, slot },
                            off: next.imm as i64,
                        })
                    }
                }
                s => return fault(EbpfFault::LdImm64Src { src: s }),
            };
            self.set(i.dst, v)?;
            return Ok(Flow::Next(pc + 2, Some(i.dst)));
        }
        let mode = i.code & 0xe0;
        if mode != 0x20 && mode != 0x40 {
            return fault(EbpfFault::BadLoad {
                code: format!("{:#04x}", i.code),
            });
        }
        if self.kind != ProgKind::SocketFilter {
            return fault(EbpfFault::LdAbsInSkReuseport);
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
            return Err(Stop::Unknown(EbpfUnknown::NegativeLdAbs { off }));
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
            _ => return fault(EbpfFault::LoadThroughNumber),
        };
        let at = p.off + off;
        match p.region {
            Region::Ctx => self.ctx_load(at, size),
            Region::Stack => self.stack_load(at, size),
            Region::Packet => {
                if at < 0 || at as usize + size as usize > self.data.len() {
                    return fault(EbpfFault::PacketPastEnd {
                        at,
                        size,
                        end: self.data.len() as u32,
                    });
                }
                let mut v = 0u64;
                for (k, b) in self.data[at as usize..at as usize + size as usize]
                    .iter()
                    .enumerate()
                {
                    match b {
                        Some(b) => v |= (*b as u64) << (8 * k),
                        None => {
                            return Err(Stop::Unknown(EbpfUnknown::PacketByte {
                                at: at + k as i64,
                            }))
                        }
                    }
                }
                Ok(Val::Num(v))
            }
            Region::Value { map, slot } => {
                let Stored::Bytes(b) = self.maps.maps[map].slot(slot) else {
                    return fault(EbpfFault::ReadsEntryAsBytes);
                };
                if at < 0 || at as usize + size as usize > b.len() {
                    return fault(EbpfFault::ValuePastEnd {
                        map: self.maps.maps[map].def.name.clone(),
                        at,
                        size,
                        len: b.len() as u32,
                    });
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
            Region::Map(_) => fault(EbpfFault::ReadsThroughMap),
            Region::Sock(_) => Err(Stop::Unknown(EbpfUnknown::SocketField)),
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
                return fault(EbpfFault::MigratingRead { at, size });
            }
            Ok(Val::Num(narrow(v, at - start, size)))
        };
        let unknown = |field: &str| {
            Err(Stop::Unknown(EbpfUnknown::MigratingField {
                field: field.into(),
            }))
        };
        let ip4_of_v6 = |field: &str| {
            Err(Stop::Unknown(EbpfUnknown::MigratingIp4OfV6 {
                field: field.into(),
            }))
        };
        match at {
            4..=7 => field(if p.saddr.is_ipv6() { 10 } else { 2 }, 4, 4),
            8..=23 => fault(EbpfFault::MigratingHidden {
                at,
                func: "bpf_sock_common_is_valid_access".into(),
            }),
            24..=27 => match v4(p.daddr) {
                Some(a) => field(a, 24, 4),
                None => ip4_of_v6("src_ip4"),
            },
            44..=47 => field(p.dport as u64, 44, 4),
            48..=49 => field(u16::from_le_bytes(p.sport.to_be_bytes()) as u64, 48, 2),
            52..=55 => match v4(p.saddr) {
                Some(a) => field(a, 52, 4),
                None => ip4_of_v6("dst_ip4"),
            },
            72..=75 => field(state as u64, 72, 4),
            0..=3 => unknown("bound_dev_if"),
            28..=43 => unknown("src_ip6"),
            56..=71 => unknown("dst_ip6"),
            76..=79 => unknown("rx_queue_mapping"),
            _ => fault(EbpfFault::MigratingPastEnd { at }),
        }
    }

    fn store(&mut self, base: &Val, off: i64, size: u32, v: Val) -> R<()> {
        let p = match base {
            Val::Ptr(p) => *p,
            _ => return fault(EbpfFault::StoreThroughNumber),
        };
        let at = p.off + off;
        match p.region {
            Region::Stack => {
                if at < 0 || at as usize + size as usize > STACK_SIZE {
                    return fault(EbpfFault::StackWrite { slot: fp(at) });
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
                            return fault(EbpfFault::PartialSpill);
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
                    _ => return fault(EbpfFault::PointerInValue),
                };
                if self.maps.maps[map].def.data.is_some()
                    && self.maps.maps[map].def.name == ".rodata"
                {
                    return fault(EbpfFault::WritesRodata);
                }
                let Stored::Bytes(b) = self.maps.maps[map].slot_mut(slot) else {
                    return fault(EbpfFault::WritesEntryAsBytes);
                };
                if at < 0 || at as usize + size as usize > b.len() {
                    return fault(EbpfFault::ValueWritePastEnd);
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
                    _ => return fault(EbpfFault::PointerInCb),
                };
                let at = at as usize - 48;
                if at + size as usize > 20 {
                    return fault(EbpfFault::CbWritePastEnd);
                }
                for k in 0..size as usize {
                    self.cb[at + k] = (n >> (8 * k)) as u8;
                }
                Ok(())
            }
            Region::Ctx => fault(EbpfFault::WritesContext { at }),
            Region::Packet => fault(EbpfFault::WritesPacket),
            Region::Map(_) | Region::Sock(_) | Region::Child => {
                fault(EbpfFault::WritesThroughMapOrSocket)
            }
        }
    }

    fn stack_load(&self, at: i64, size: u32) -> R<Val> {
        if at < 0 || at as usize + size as usize > STACK_SIZE {
            return fault(EbpfFault::StackRead { slot: fp(at) });
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
            return fault(EbpfFault::PartialSpillRead);
        }
        let mut v = 0u64;
        for (k, c) in cells.iter().enumerate() {
            match c {
                Cell::Byte(b) => v |= (*b as u64) << (8 * k),
                Cell::Uninit => {
                    return fault(EbpfFault::StackUninit {
                        slot: fp(at + k as i64),
                    })
                }
                Cell::Unknown(i) => return Ok(Val::Unknown(self.unknowns[*i as usize].clone())),
                Cell::Ptr(..) => return fault(EbpfFault::SpillAsNumber),
            }
        }
        Ok(Val::Num(v))
    }

    /// Bytes at a pointer, for a helper's key or value argument.
    fn bytes_at(&self, v: &Val, len: u32, arg: Operand) -> R<Vec<u8>> {
        let Val::Ptr(p) = v else {
            return fault(EbpfFault::ArgNotPointer { arg });
        };
        let mut out = Vec::with_capacity(len as usize);
        for k in 0..len as i64 {
            let b = match p.region {
                Region::Stack => match self.stack_load(p.off + k, 1)? {
                    Val::Num(n) => n as u8,
                    Val::Unknown(w) => return Err(Stop::Unknown(w)),
                    _ => return fault(EbpfFault::ArgHoldsPointer { arg }),
                },
                Region::Value { map, slot } => match self.maps.maps[map].slot(slot) {
                    Stored::Bytes(b) => *b
                        .get((p.off + k) as usize)
                        .ok_or(Stop::Fault(EbpfFault::ArgPastValue { arg }))?,
                    _ => return fault(EbpfFault::ArgInEntry { arg }),
                },
                Region::Packet => match self.data.get((p.off + k) as usize) {
                    Some(Some(b)) => *b,
                    Some(None) => {
                        return Err(Stop::Unknown(EbpfUnknown::PacketByteIn {
                            at: p.off + k,
                            arg,
                        }))
                    }
                    None => return fault(EbpfFault::ArgPastPacket { arg }),
                },
                _ => {
                    return fault(EbpfFault::ArgPointsAt {
                        arg,
                        ptr: self.show_ptr(p),
                    })
                }
            };
            out.push(b);
        }
        Ok(out)
    }

    /// Writes bytes at a stack or map value pointer (a helper's output).
    fn write_at(&mut self, v: &Val, bytes: &[u8], arg: Operand) -> R<()> {
        let Val::Ptr(p) = v else {
            return fault(EbpfFault::ArgNotPointer { arg });
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
                        return fault(EbpfFault::CbReadPastEnd);
                    }
                    let mut v = 0u64;
                    for k in 0..size as usize {
                        v |= (self.cb[o + k] as u64) << (8 * k);
                    }
                    Ok(Val::Num(v))
                }
                68 => match p.anc.rxhash {
                    Some(h) => field(h),
                    None => Err(Stop::Unknown(EbpfUnknown::SkbHash)),
                },
                _ => Err(Stop::Unknown(EbpfUnknown::SkbField { at })),
            };
        }
        let num = |v: u64, fsize: i64| -> R<Val> { Ok(Val::Num(narrow(v, at % fsize, size))) };
        let empty_skb = p.migrating.is_some_and(|m| m.stage.empty_skb());
        if (40..56).contains(&at) && !p.since_5_14 {
            return fault(EbpfFault::CtxFieldBefore514 {
                at,
                func: "sk_reuseport_is_valid_access".into(),
                file: "net/core/filter.c".into(),
            });
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
                        EbpfUnknown::FinalAckLen
                    } else {
                        EbpfUnknown::SynLen
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
            _ => fault(EbpfFault::BadCtxRead { at, size }),
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

    fn map_of(&self, v: &Val, reg: u8) -> R<usize> {
        match v {
            Val::Ptr(Ptr {
                region: Region::Map(m),
                off: 0,
            }) => Ok(*m),
            _ => fault(EbpfFault::NotAMap { reg }),
        }
    }

    fn call(&mut self, pc: usize, id: i32) -> R<()> {
        let args: Vec<Val> = (1..=5).map(|r| self.reg[r].clone()).collect();
        let (helper, shown, ret, rule): (&str, Vec<CallArg>, Val, HelperRule) = match id {
            1 => {
                let m = self.map_of(&args[0], 1)?;
                let def = self.maps.maps[m].def.clone();
                let key = self.bytes_at(&args[1], def.key_size, Operand::Key)?;
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
                        return fault(EbpfFault::LookupSocketMap {
                            map_type: map_type::name(t).into(),
                        })
                    }
                    (Some(_), t) if t == map_type::PERCPU_ARRAY || t == map_type::PERCPU_HASH => {
                        return fault(EbpfFault::PerCpuMap)
                    }
                    (Some(s), _) => Val::Ptr(Ptr {
                        region: Region::Value { map: m, slot: s },
                        off: 0,
                    }),
                };
                (
                    "bpf_map_lookup_elem",
                    vec![map_arg(&def.name), CallArg::Key { hex: hex(&key) }],
                    ret,
                    HelperRule::MapLookup,
                )
            }
            2 => {
                let m = self.map_of(&args[0], 1)?;
                let def = self.maps.maps[m].def.clone();
                if matches!(
                    def.map_type,
                    map_type::SOCKMAP | map_type::SOCKHASH | map_type::REUSEPORT_SOCKARRAY
                ) || def.map_type == map_type::ARRAY_OF_MAPS
                    || def.map_type == map_type::HASH_OF_MAPS
                {
                    return fault(EbpfFault::UpdateNotRun {
                        map_type: map_type::name(def.map_type).into(),
                    });
                }
                if def.name == ".rodata" {
                    return fault(EbpfFault::UpdatesRodata);
                }
                let key = self.bytes_at(&args[1], def.key_size, Operand::Key)?;
                let val = self.bytes_at(&args[2], def.value_size, Operand::Value)?;
                let flags = match &args[3] {
                    Val::Num(n) => *n,
                    Val::Unknown(w) => return Err(Stop::Unknown(w.clone())),
                    _ => return fault(EbpfFault::FlagsNotNumber),
                };
                let r = self.maps.maps[m].update(&key, val.clone(), flags);
                (
                    "bpf_map_update_elem",
                    vec![
                        map_arg(&def.name),
                        CallArg::Key { hex: hex(&key) },
                        CallArg::Value { hex: hex(&val) },
                        CallArg::Flags { flags },
                    ],
                    Val::Num(r as u64),
                    HelperRule::MapUpdate,
                )
            }
            3 => {
                let m = self.map_of(&args[0], 1)?;
                let def = self.maps.maps[m].def.clone();
                if matches!(def.map_type, map_type::SOCKMAP | map_type::SOCKHASH) {
                    return fault(EbpfFault::DeleteSocketMap);
                }
                let key = self.bytes_at(&args[1], def.key_size, Operand::Key)?;
                let r = self.maps.maps[m].delete(&key);
                (
                    "bpf_map_delete_elem",
                    vec![map_arg(&def.name), CallArg::Key { hex: hex(&key) }],
                    Val::Num(r as u64),
                    HelperRule::MapDelete,
                )
            }
            7 => {
                self.drew_random = true;
                let v = self.draw();
                (
                    "bpf_get_prandom_u32",
                    vec![],
                    Val::Num(v as u64),
                    HelperRule::PrandomU32,
                )
            }
            8 => (
                "bpf_get_smp_processor_id",
                vec![],
                Val::Num(self.pkt.cpu as u64),
                HelperRule::SmpProcessorId,
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
                                return Err(Stop::Unknown(EbpfUnknown::LoadedByte {
                                    at: off + k as u64,
                                }))
                            }
                        }
                    }
                    v
                };
                self.write_at(&args[2], &bytes, Operand::Buffer)?;
                (
                    "bpf_skb_load_bytes",
                    vec![CallArg::Offset { offset: off }, CallArg::Len { len }],
                    Val::Num(ret as u64),
                    HelperRule::SkbLoadBytes,
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
                    0 | 1 => return Err(Stop::Unknown(EbpfUnknown::LinkHeader)),
                    _ => (&[], -1),
                };
                let mut ret = 0;
                let bytes: Vec<u8> =
                    if base < 0 || len == 0 || off as usize + len as usize > src.len() {
                        ret = errno::EFAULT;
                        vec![0; len as usize]
                    } else {
                        let mut v = Vec::new();
                        for k in 0..len as usize {
                            match src[off as usize + k] {
                                Some(b) => v.push(b),
                                None => {
                                    return Err(Stop::Unknown(EbpfUnknown::HeaderByte {
                                        at: off + k as u64,
                                    }))
                                }
                            }
                        }
                        v
                    };
                self.write_at(&args[2], &bytes, Operand::Buffer)?;
                (
                    "bpf_skb_load_bytes_relative",
                    vec![
                        CallArg::Offset { offset: off },
                        CallArg::Len { len },
                        CallArg::Start { start },
                    ],
                    Val::Num(ret as u64),
                    HelperRule::SkbLoadBytesRelative,
                )
            }
            82 => {
                if !self.kind.is_sk_reuseport() {
                    return fault(EbpfFault::SelectOutside);
                }
                let m = self.map_of(&args[1], 2)?;
                let def = self.maps.maps[m].def.clone();
                if !matches!(
                    def.map_type,
                    map_type::REUSEPORT_SOCKARRAY | map_type::SOCKMAP | map_type::SOCKHASH
                ) {
                    return fault(EbpfFault::SelectBadMap {
                        map_type: map_type::name(def.map_type).into(),
                    });
                }
                let key = self.bytes_at(&args[2], def.key_size, Operand::Key)?;
                let found = self.maps.maps[m]
                    .find(&key)
                    .map(|s| self.maps.maps[m].slot(s).clone());
                let (r, note) = match found {
                    Some(Stored::Socket(l)) if self.pkt.in_group.contains(&l) => {
                        self.selected = Some(l);
                        (0, CallArg::Selected { listener: l })
                    }
                    // A socket map entry whose socket has no group
                    // (`!reuse`): -ENOENT for a REUSEPORT_SOCKARRAY, -EINVAL
                    // for the others (sk_select_reuseport, net/core/filter.c).
                    Some(Stored::Socket(l))
                        if self.pkt.outside_group.contains(&l)
                            && def.map_type != map_type::REUSEPORT_SOCKARRAY =>
                    {
                        (errno::EINVAL, CallArg::OutsideGroup { listener: l })
                    }
                    // A closed member left the map with its group
                    // (bpf_sk_reuseport_detach, kernel/bpf/reuseport_array.c;
                    // sock_map_unhash, net/core/sock_map.c).
                    Some(Stored::Socket(l)) => (errno::ENOENT, CallArg::Closed { listener: l }),
                    _ => (errno::ENOENT, CallArg::NoSocket),
                };
                (
                    "bpf_sk_select_reuseport",
                    vec![map_arg(&def.name), CallArg::Key { hex: hex(&key) }, note],
                    Val::Num(r as u64),
                    HelperRule::SkSelectReuseport,
                )
            }
            46 => {
                if self.kind == ProgKind::SocketFilter {
                    return fault(EbpfFault::CookieInFilter);
                }
                if !self.pkt.since_5_14 {
                    return fault(EbpfFault::CookieBefore514 {
                        func: "sk_reuseport_func_proto".into(),
                        file: "net/core/filter.c".into(),
                    });
                }
                let (ret, arg) = match &args[0] {
                    Val::Ptr(Ptr {
                        region: Region::Sock(l),
                        off: 0,
                    }) => match self.pkt.cookies.iter().find(|(s, _)| s == l) {
                        Some((_, c)) => (Val::Num(*c), CallArg::Socket { listener: *l }),
                        None => {
                            return Err(Stop::Unknown(EbpfUnknown::SocketCookie { listener: *l }))
                        }
                    },
                    Val::Ptr(Ptr {
                        region: Region::Child,
                        off: 0,
                    }) => return Err(Stop::Unknown(EbpfUnknown::MigratingCookie)),
                    v => return fault(EbpfFault::CookieOfNonSocket { ptr: self.show(v) }),
                };
                (
                    "bpf_get_socket_cookie",
                    vec![arg],
                    ret,
                    HelperRule::GetSocketCookie,
                )
            }
            6 => (
                "bpf_trace_printk",
                vec![],
                Val::Num(0),
                HelperRule::TracePrintk,
            ),
            _ => return fault(EbpfFault::UnknownHelper { id }),
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
                rule,
                source: rule.source(),
            });
        }
        self.reg[0] = ret;
        for r in 1..=5 {
            self.reg[r] = Val::Uninit;
        }
        Ok(())
    }
}

/// A map argument: the map, by name.
fn map_arg(name: &str) -> CallArg {
    CallArg::Map { name: name.into() }
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
        _ => {
            return fault(EbpfFault::BadAlu64 {
                op: format!("{op:#04x}"),
            })
        }
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
        _ => {
            return fault(EbpfFault::BadAlu32 {
                op: format!("{op:#04x}"),
            })
        }
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
        _ => {
            return fault(EbpfFault::BadJump {
                op: format!("{op:#04x}"),
            })
        }
    })
}
