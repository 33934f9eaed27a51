//! One SO_REUSEPORT group as the kernel holds it in a given era, and the
//! choice it makes for each packet.
//!
//! In the group era (TCP 4.6+, UDP 4.5+) the members sit in the
//! `sock_reuseport` array ([`SockArray`]); before it they sit on the
//! listener chain, newest first, and a reservoir scan picks
//! (kernel-history.md §3 and §4.1).

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::error::{GroupError, SetupError};
use crate::explain::{Explain, GroupSummary, Pick, ReservoirStep, RingStep, EXPLAIN_STEPS};
use crate::group::{AddEffect, SockArray};
use crate::hash::{self, hex, HashTrace, Keys};
use crate::jhash::{next_pseudo_random32, reciprocal_scale};
use crate::message::{
    Fallback, KernelSource, LaddrReason, Note, ProgramOutcome, ProgramReturn, ProgramSummary,
    RefusalRule, ReservoirOutcome, ResetReason, RingOutcome,
};
use crate::profile::{
    BpfFallback, GroupScan, Profile, Release, Selection, WildcardLaddr, UDP_HASH2_THRESHOLD,
};
use crate::tuple::{canonical, unspecified_like, Proto, Tuple};

/// The most listeners a group is built with: an input bound of the model,
/// not a kernel rule. It is the default `fs.nr_open` (1 << 20), the file
/// descriptors one process can hold; the group array (4.6 on) refuses
/// members past 32768 on its own ([`crate::profile::MAX_SOCKS`]).
pub const MAX_LISTENERS: u32 = 1 << 20;

/// `SO_INCOMING_CPU` set on one listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CpuPin {
    /// The listener (join order).
    pub listener: u32,
    /// The CPU number given to `setsockopt(SO_INCOMING_CPU)`.
    pub cpu: u32,
}

/// The receiving side of one packet: what programs and the CPU preference see.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PacketCtx {
    /// The CPU that processes the packet (`raw_smp_processor_id()`; on
    /// loopback, the sender's CPU).
    pub cpu: u32,
    /// The payload, when the packet carries one (a UDP datagram, a TCP
    /// Fast Open SYN): a number stands for its four bytes, big-endian.
    pub payload: Option<Payload>,
    /// Ancillary values classic BPF programs may read that the tuple does
    /// not give ([`cbpf::AncInputs`]).
    #[serde(default, skip_serializing_if = "cbpf::AncInputs::is_empty")]
    #[cfg_attr(feature = "ts", ts(optional, as = "Option<cbpf::AncInputs>"))]
    pub anc: cbpf::AncInputs,
}

impl PacketCtx {
    /// Received on `cpu`, no payload.
    pub fn on_cpu(cpu: u32) -> PacketCtx {
        PacketCtx {
            cpu,
            ..PacketCtx::default()
        }
    }

    /// Received on `cpu` with a four-byte payload, `word` big-endian.
    pub fn with_word(cpu: u32, word: u32) -> PacketCtx {
        PacketCtx {
            cpu,
            payload: Some(Payload::Word(word)),
            ..PacketCtx::default()
        }
    }
}

/// A packet's payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(untagged)]
pub enum Payload {
    /// Four bytes: this number, big-endian (a datagram's sequence number).
    Word(u32),
    /// These bytes.
    Bytes(Vec<u8>),
}

/// The longest payload the model takes: a UDP datagram's most over IPv4
/// (65535 less the IP and UDP headers).
pub const MAX_PAYLOAD: usize = 65507;

impl Payload {
    /// The bytes.
    pub fn bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        match self {
            Payload::Word(w) => std::borrow::Cow::Owned(w.to_be_bytes().to_vec()),
            Payload::Bytes(b) => std::borrow::Cow::Borrowed(b),
        }
    }

    /// The first four bytes as a big-endian number, when there are four.
    pub fn word(&self) -> Option<u32> {
        match self {
            Payload::Word(w) => Some(*w),
            Payload::Bytes(b) => b
                .get(..4)
                .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]])),
        }
    }

    /// Reads hex digits (`payload=HEX` in tuple lines): pairs of digits,
    /// any case, an optional `0x`.
    pub fn from_hex(s: &str) -> Result<Payload, String> {
        let h = s.strip_prefix("0x").unwrap_or(s);
        if !h.len().is_multiple_of(2) {
            return Err(format!("payload `{s}` has an odd number of hex digits"));
        }
        if h.len() / 2 > MAX_PAYLOAD {
            return Err(format!(
                "payload of {} bytes is longer than a UDP datagram can be ({MAX_PAYLOAD})",
                h.len() / 2
            ));
        }
        (0..h.len())
            .step_by(2)
            .map(|i| {
                u8::from_str_radix(&h[i..i + 2], 16)
                    .map_err(|_| format!("payload `{s}`: `{}` is not two hex digits", &h[i..i + 2]))
            })
            .collect::<Result<Vec<u8>, String>>()
            .map(Payload::Bytes)
    }
}

pub mod cbpf;
pub mod datagram;
pub mod ebpf;
mod members;
mod program;
mod select;

pub use program::Program;
use program::{EbpfFacts, ProgramResult};
pub use select::{GroupAnswer, Migration, MigrationRun};

/// Everything that describes one group: one typed object, the same across
/// the command line, the wasm boundary and the tests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct GroupSpec {
    /// TCP or UDP.
    pub proto: Proto,
    /// How many sockets join, numbered 0..N-1 in `listen()` (TCP) or
    /// `bind()` (UDP) order.
    pub listeners: u32,
    /// The bound address: specific, or `0.0.0.0` / `::` for a wildcard group.
    #[cfg_attr(feature = "ts", ts(as = "String"))]
    pub bind: IpAddr,
    /// The bound port.
    pub port: u16,
    /// `IPV6_V6ONLY` on an IPv6 group (an IPv6 wildcard group without it
    /// also receives IPv4).
    #[serde(default)]
    pub v6only: bool,
    /// The hash keys.
    #[serde(default)]
    pub keys: Keys,
    /// Listeners closed, in this order, after all have joined.
    #[serde(default)]
    pub closed: Vec<u32>,
    /// TCP listeners shut down (not closed), in this order, after the
    /// closes. With `tcpMigrateReq` on 5.14+, they stay in the closed tail.
    #[serde(default)]
    pub shutdown: Vec<u32>,
    /// `net.ipv4.tcp_migrate_req` (5.14+, TCP).
    #[serde(default)]
    pub tcp_migrate_req: bool,
    /// `SO_INCOMING_CPU` settings (4.4+).
    #[serde(default)]
    pub incoming_cpu: Vec<CpuPin>,
    /// UDP members that `connect()`ed (their state is TCP_ESTABLISHED).
    #[serde(default)]
    pub connected: Vec<u32>,
    /// A program attached to the group after all members joined.
    #[serde(default)]
    pub program: Option<Program>,
}

impl GroupSpec {
    /// A plain group: `listeners` sockets bound to `bind:port`, nothing else.
    pub fn new(proto: Proto, listeners: u32, bind: IpAddr, port: u16, keys: Keys) -> Self {
        GroupSpec {
            proto,
            listeners,
            bind,
            port,
            v6only: false,
            keys,
            closed: Vec::new(),
            shutdown: Vec::new(),
            tcp_migrate_req: false,
            incoming_cpu: Vec::new(),
            connected: Vec::new(),
            program: None,
        }
    }
}

/// Where a member is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum MemberState {
    /// In the listening set (`socks[0..num_socks)` or on the chain).
    Listening,
    /// Shut down with migration on: in the closed tail (5.14+).
    ClosedTail,
    /// Shut down without migration: out of the group, may listen again.
    ShutDown,
    /// Closed for good.
    Closed,
}

impl MemberState {
    fn word(self) -> &'static str {
        match self {
            MemberState::Listening => "listening",
            MemberState::ClosedTail => "in the closed tail",
            MemberState::ShutDown => "shut down",
            MemberState::Closed => "closed",
        }
    }
}

/// One socket of the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Member {
    /// Where it is.
    pub state: MemberState,
    /// `sk_incoming_cpu`; -1 when unset.
    pub incoming_cpu: i32,
    /// Connected (UDP), so TCP_ESTABLISHED.
    pub connected: bool,
}

#[derive(Debug, Clone)]
enum Layout {
    /// Reservoir era: the chain, head (newest) first.
    Chain(Vec<u32>),
    /// Group era.
    Array(SockArray),
}

/// One reuseport group in one kernel era.
#[derive(Debug, Clone)]
pub struct ReuseportGroup {
    profile: &'static Profile,
    proto: Proto,
    bind: IpAddr,
    port: u16,
    v6only: bool,
    keys: Keys,
    tcp_migrate_req: bool,
    members: Vec<Member>,
    layout: Layout,
    incoming_cpu: u32,
    has_conns: bool,
    program: Option<Program>,
    /// Listeners whose entries in a [`Program::SockArray`] map the kernel
    /// removed as they left the group since the program was attached
    /// (`bpf_sk_reuseport_detach`, kernel/bpf/reuseport_array.c 4.19+): a
    /// listener that listens again is not put back.
    sockarray_gone: Vec<u32>,
    /// Per member, when it last joined (listen or re-listen): the chain order.
    join_seq: Vec<u64>,
    next_seq: u64,
}

/// What a select returned: the listener and, in the group era, its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Choice {
    /// The chosen listener, or `None` when the group returns no socket.
    pub listener: Option<u32>,
    /// Its index in `socks[]` (group era).
    pub slot: Option<u32>,
    /// The reuseport hash.
    pub hash: u32,
}

/// What closing or adding a member did to `socks[]`, for animations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// A member joined (`add` effect).
    Joined {
        /// Its number.
        listener: u32,
        /// Its slot (group era).
        slot: Option<u32>,
        /// Growth or eviction on the way.
        effect: AddEffect,
    },
    /// A member left the listening set.
    Left {
        /// Its number.
        listener: u32,
        /// The slot it freed (group era).
        slot: Option<u32>,
        /// The last member, moved into that slot.
        moved: Option<u32>,
    },
    /// Nothing in `socks[]` changed (a closed-tail member left, an option was set).
    Unchanged,
}

/// The rule that picks the hashed local address (kernel-history.md §2.6).
#[derive(Debug, Clone, Copy)]
enum LaddrRule {
    Specific,
    WildcardZero,
    WildcardDaddr,
    PortSlotOverTen(u32),
    PortSlotTenOrFewer(u32),
}

impl LaddrRule {
    fn apply(self, daddr: IpAddr) -> IpAddr {
        match self {
            LaddrRule::WildcardZero | LaddrRule::PortSlotOverTen(_) => unspecified_like(daddr),
            _ => daddr,
        }
    }
}

impl ReuseportGroup {
    /// An empty group bound to `bind:port` in the given era.
    pub fn empty(
        profile: &'static Profile,
        proto: Proto,
        bind: IpAddr,
        port: u16,
        keys: Keys,
    ) -> Self {
        let selection = match proto {
            Proto::Tcp => profile.tcp_selection,
            Proto::Udp => profile.udp_selection,
        };
        ReuseportGroup {
            profile,
            proto,
            bind,
            port,
            v6only: false,
            keys,
            tcp_migrate_req: false,
            members: Vec::new(),
            layout: match selection {
                Selection::Reservoir => Layout::Chain(Vec::new()),
                Selection::Group => Layout::Array(SockArray::new()),
            },
            incoming_cpu: 0,
            has_conns: false,
            program: None,
            sockarray_gone: Vec::new(),
            join_seq: Vec::new(),
            next_seq: 0,
        }
    }

    /// An empty group as a spec describes it (bind, port, keys, v6only),
    /// for members to join one by one.
    pub fn build_empty(profile: &'static Profile, spec: &GroupSpec) -> Self {
        let mut g = ReuseportGroup::empty(profile, spec.proto, spec.bind, spec.port, spec.keys);
        g.v6only = spec.v6only && spec.bind.is_ipv6();
        g
    }

    /// Builds the group a spec describes: all listeners join in order, then
    /// options are set, members connect, and the closes and shutdowns run in
    /// the order given.
    pub fn build(profile: &'static Profile, spec: &GroupSpec) -> Result<Self, SetupError> {
        if spec.listeners == 0 {
            return Err(SetupError::NoListeners);
        }
        if spec.listeners > MAX_LISTENERS {
            return Err(SetupError::TooManyListeners {
                given: spec.listeners,
                max: MAX_LISTENERS,
            });
        }
        let mut g = ReuseportGroup::empty(profile, spec.proto, spec.bind, spec.port, spec.keys);
        g.v6only = spec.v6only && spec.bind.is_ipv6();
        g.set_tcp_migrate_req(spec.tcp_migrate_req)?;
        g.join_all(spec.listeners)?;
        for pin in &spec.incoming_cpu {
            g.set_incoming_cpu(pin.listener, Some(pin.cpu))?;
        }
        for &l in &spec.connected {
            g.connect(l)?;
        }
        if let Some(p) = &spec.program {
            g.attach_program(p.clone())?;
        }
        for &l in &spec.closed {
            g.close(l)?;
        }
        for &l in &spec.shutdown {
            g.shutdown(l)?;
        }
        Ok(g)
    }

    /// The profile in force.
    pub fn profile(&self) -> &'static Profile {
        self.profile
    }

    /// The protocol.
    pub fn proto(&self) -> Proto {
        self.proto
    }

    /// The bound address and port.
    pub fn bound(&self) -> (IpAddr, u16) {
        (self.bind, self.port)
    }

    /// The hash keys.
    pub fn keys(&self) -> Keys {
        self.keys
    }

    /// Replaces the hash keys (a new boot).
    pub fn set_keys(&mut self, keys: Keys) {
        self.keys = keys;
    }

    /// The same members, in the same slots, bound to `bind:port` instead:
    /// no kernel call does this, it saves a test or a benchmark that asks
    /// many addresses of one large group from building it again for each
    /// (a group of 32,768 takes 32,768 joins). `IPV6_V6ONLY` stays only on
    /// an IPv6 address.
    pub fn rebind(&mut self, bind: IpAddr, port: u16) {
        self.v6only = self.v6only && bind.is_ipv6();
        self.bind = bind;
        self.port = port;
    }

    /// Reservoir scan or group array.
    pub fn selection(&self) -> Selection {
        match self.layout {
            Layout::Chain(_) => Selection::Reservoir,
            Layout::Array(_) => Selection::Group,
        }
    }

    /// All members ever joined, by number.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The group array (group era only).
    pub fn sock_array(&self) -> Option<&SockArray> {
        match &self.layout {
            Layout::Array(a) => Some(a),
            Layout::Chain(_) => None,
        }
    }

    /// The chain, head first (reservoir era only).
    pub fn chain(&self) -> Option<&[u32]> {
        match &self.layout {
            Layout::Chain(c) => Some(c),
            Layout::Array(_) => None,
        }
    }

    /// Listening members, in slot order (group era) or chain order.
    pub fn listening(&self) -> &[u32] {
        match &self.layout {
            Layout::Array(a) => a.listening(),
            Layout::Chain(c) => c,
        }
    }

    /// Why the kernel would refuse to attach `program` to this group, with
    /// the place it does so; `None` when the attach succeeds.
    pub fn attach_refusal(&self, program: &Program) -> Option<(RefusalRule, KernelSource)> {
        let release = self.profile.release;
        if program.is_sk_reuseport() && !self.profile.sk_reuseport_prog {
            // BPF_PROG_TYPE_SK_REUSEPORT arrived in 4.19: an unknown type to BPF_PROG_LOAD.
            return Some((
                RefusalRule::NoSkReuseportProgram,
                KernelSource::new("find_prog_type", "kernel/bpf/syscall.c", release),
            ));
        }
        if self.selection() == Selection::Reservoir {
            // The first profile whose groups exist for this protocol.
            let since = Profile::first_with(|p| p.selection(self.proto) == Selection::Group)
                .expect("the era table has group eras");
            return Some((
                RefusalRule::NoGroups { since },
                KernelSource::new("sock_setsockopt", "net/core/sock.c", release),
            ));
        }
        if matches!(program, Program::PayloadMod { modulus: 0 }) {
            return Some((
                RefusalRule::PayloadModZero,
                KernelSource::new("bpf_check_classic", "net/core/filter.c", release),
            ));
        }
        if let Program::Cbpf { insns } = program {
            if let Err(e) = cbpf::check(insns) {
                let func = match e {
                    cbpf::CheckError::Length { .. } => "bpf_check_basics_ok",
                    cbpf::CheckError::MemUnset { .. } => "check_load_and_stores",
                    cbpf::CheckError::Opcode { .. } => "chk_code_allowed",
                    _ => "bpf_check_classic",
                };
                return Some((
                    e.into(),
                    KernelSource::new(func, "net/core/filter.c", release),
                ));
            }
        }
        None
    }

    /// Attaches (or replaces, for the whole group) a program, or detaches it
    /// with `None` (`SO_DETACH_REUSEPORT_BPF`, 5.3+).
    pub fn attach_program(
        &mut self,
        program: impl Into<Option<Program>>,
    ) -> Result<Change, GroupError> {
        let program = program.into();
        match &program {
            None if self.program.is_some() && !self.profile.bpf_detach => {
                return Err(GroupError::Unsupported {
                    what: "SO_DETACH_REUSEPORT_BPF".into(),
                    why: format!("it arrived in 5.3; profile {} cannot detach a program", self.profile.release),
                })
            }
            Some(p) => match self.attach_refusal(p).map(|(rule, _)| rule) {
                Some(RefusalRule::NoSkReuseportProgram) => {
                    return Err(GroupError::Unsupported {
                        what: "an SK_REUSEPORT program".into(),
                        why: format!("BPF_PROG_TYPE_SK_REUSEPORT arrived in 4.19; profile {} does not have it", self.profile.release),
                    })
                }
                Some(RefusalRule::NoGroups { since }) => {
                    return Err(GroupError::Unsupported {
                        what: "SO_ATTACH_REUSEPORT_CBPF/EBPF".into(),
                        why: format!(
                            "{} reuseport groups, which programs attach to, arrived in {since}; profile {} has none",
                            if self.proto == Proto::Tcp { "TCP" } else { "UDP" },
                            self.profile.release
                        ),
                    })
                }
                Some(RefusalRule::PayloadModZero) => {
                    return Err(GroupError::Unsupported {
                        what: "a payload modulo 0".into(),
                        why: "the classic BPF verifier refuses a division by the constant 0 (EINVAL)".into(),
                    })
                }
                Some(_) => {
                    let Program::Cbpf { insns } = p else {
                        unreachable!("only classic programs have other refusals")
                    };
                    let e = cbpf::check(insns).expect_err("refused above");
                    return Err(GroupError::Unsupported {
                        what: "this classic BPF program".into(),
                        why: format!("the kernel refuses it with EINVAL: {e}"),
                    });
                }
                None => {}
            },
            _ => {}
        }
        // The program's maps are as user space filled them now.
        self.sockarray_gone.clear();
        self.program = program;
        Ok(Change::Unchanged)
    }

    /// The attached program.
    pub fn program(&self) -> Option<&Program> {
        self.program.as_ref()
    }

    /// The group's `incoming_cpu` counter: members in the group with
    /// SO_INCOMING_CPU set (`net/core/sock_reuseport.c`, 6.2).
    pub fn incoming_cpu_count(&self) -> u32 {
        self.incoming_cpu
    }

    /// The group at a glance.
    pub fn summary(&self) -> GroupSummary {
        GroupSummary {
            bind: self.bind.to_string(),
            port: self.port,
            selection: self.selection(),
            listening: self.listening().len() as u32,
            max_socks: self.sock_array().map(|a| a.max_socks()),
            closed_tail: self.sock_array().map(|a| a.num_closed_socks()).unwrap_or(0),
            incoming_cpu: self.incoming_cpu,
            has_conns: self.has_conns,
        }
    }
}
