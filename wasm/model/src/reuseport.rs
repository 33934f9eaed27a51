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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PacketCtx {
    /// The CPU that processes the packet (`raw_smp_processor_id()`; on
    /// loopback, the sender's CPU).
    pub cpu: u32,
    /// The first four payload bytes as a big-endian u32, when the packet
    /// carries any (a UDP datagram, a TCP Fast Open SYN).
    pub payload: Option<u32>,
}

/// A program attached to the group: `SO_ATTACH_REUSEPORT_CBPF`/`_EBPF`
/// socket filters that return an index into `socks[]` (4.5 UDP, 4.6 TCP), or
/// `BPF_PROG_TYPE_SK_REUSEPORT` programs (4.19+). The model runs the
/// programs the kernel selftests use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Program {
    /// Returns the receiving CPU (`ld [SKF_AD_OFF + SKF_AD_CPU]`), as
    /// tools/testing/selftests/net/reuseport_bpf_cpu.c.
    Cpu,
    /// Returns the first payload word modulo `modulus`, as reuseport_bpf.c.
    PayloadMod {
        /// The divisor.
        modulus: u32,
    },
    /// Returns a fixed index (shows what an out-of-range index does).
    Index {
        /// The index returned.
        index: u32,
    },
    /// SK_REUSEPORT: `bpf_sk_select_reuseport(sockarray, key = payload word)`,
    /// as prog_tests/select_reuseport.c; on a missing entry, SK_PASS without
    /// a selection when `passOnFailure`, else SK_DROP.
    SockArray {
        /// The REUSEPORT_SOCKARRAY map: listener number per key.
        sockarray: Vec<u32>,
        /// Pass (to select-by-hash) rather than drop when the lookup fails.
        pass_on_failure: bool,
    },
    /// SK_REUSEPORT returning SK_PASS without selecting.
    Pass,
    /// SK_REUSEPORT returning SK_DROP.
    Drop,
}

/// What a program decided.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ProgramResult {
    Index(u32),
    Selected(u32),
    PassWithoutSelection(Miss),
    Drop(Miss),
}

/// Why an SK_REUSEPORT program selected nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Miss {
    NoPayload,
    NotListening { key: u32, listener: u32 },
    NoEntry { key: u32 },
    SelectedNothing,
    ReturnedDrop,
}

impl Miss {
    /// What the kernel made of it: select-by-hash decides, or the packet
    /// is dropped.
    fn outcome(self, pass: bool) -> ProgramOutcome {
        use ProgramOutcome as O;
        match (self, pass) {
            (Miss::NoPayload, true) => O::PassNoPayload,
            (Miss::NoPayload, false) => O::DropNoPayload,
            (Miss::NotListening { key, listener }, true) => O::PassNotListening { key, listener },
            (Miss::NotListening { key, listener }, false) => O::DropNotListening { key, listener },
            (Miss::NoEntry { key }, true) => O::PassNoEntry { key },
            (Miss::NoEntry { key }, false) => O::DropNoEntry { key },
            (Miss::SelectedNothing, _) => O::PassSelectedNothing,
            (Miss::ReturnedDrop, _) => O::DropReturned,
        }
    }
}

impl Program {
    fn is_sk_reuseport(&self) -> bool {
        matches!(
            self,
            Program::SockArray { .. } | Program::Pass | Program::Drop
        )
    }

    /// Where the kernel runs the program: `bpf_run_sk_reuseport` (4.19+,
    /// called from `reuseport_select_sock`) or `run_bpf_filter` (4.5 UDP,
    /// 4.6 TCP).
    fn source(&self, release: Release) -> KernelSource {
        if self.is_sk_reuseport() {
            KernelSource::new("bpf_run_sk_reuseport", "net/core/filter.c", release)
        } else {
            KernelSource::new("run_bpf_filter", "net/core/sock_reuseport.c", release)
        }
    }

    fn describe(&self) -> ProgramSummary {
        match self {
            Program::Cpu => ProgramSummary::Cpu,
            Program::PayloadMod { modulus } => ProgramSummary::PayloadMod { modulus: *modulus },
            Program::Index { index } => ProgramSummary::Index { index: *index },
            Program::SockArray {
                sockarray,
                pass_on_failure,
            } => {
                let entries = sockarray.len() as u32;
                if *pass_on_failure {
                    ProgramSummary::SockArrayPass { entries }
                } else {
                    ProgramSummary::SockArrayDrop { entries }
                }
            }
            Program::Pass => ProgramSummary::Pass,
            Program::Drop => ProgramSummary::Drop,
        }
    }

    /// Runs the program. A classic BPF load past the end of the packet ends
    /// the program with 0, so a payload program on an empty packet returns 0.
    fn run(
        &self,
        ctx: &PacketCtx,
        listening: &[u32],
        is_listening: impl Fn(u32) -> bool,
    ) -> ProgramResult {
        match self {
            Program::Cpu => ProgramResult::Index(ctx.cpu),
            Program::PayloadMod { modulus } => {
                ProgramResult::Index(ctx.payload.map_or(0, |w| w % modulus))
            }
            Program::Index { index } => ProgramResult::Index(*index),
            Program::SockArray {
                sockarray,
                pass_on_failure,
            } => {
                let failed = |why: Miss| {
                    if *pass_on_failure {
                        ProgramResult::PassWithoutSelection(why)
                    } else {
                        ProgramResult::Drop(why)
                    }
                };
                let Some(key) = ctx.payload else {
                    return failed(Miss::NoPayload);
                };
                match sockarray.get(key as usize) {
                    Some(&l) if listening.contains(&l) && is_listening(l) => {
                        ProgramResult::Selected(l)
                    }
                    Some(&l) => failed(Miss::NotListening { key, listener: l }),
                    None => failed(Miss::NoEntry { key }),
                }
            }
            Program::Pass => ProgramResult::PassWithoutSelection(Miss::SelectedNothing),
            Program::Drop => ProgramResult::Drop(Miss::ReturnedDrop),
        }
    }
}

/// Where a closed listener's pending request goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Migration {
    /// To this listening member.
    To {
        /// The listener.
        listener: u32,
        /// Its slot.
        slot: u32,
        /// The request's hash.
        hash: u32,
    },
    /// The request is reset.
    Reset {
        /// Why.
        reason: ResetReason,
    },
}

/// What a group answers inside a full lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupAnswer {
    /// This member (join-order number).
    Member(u32),
    /// No socket: every member connected, or an invalid index before 4.16.
    Null,
    /// An SK_REUSEPORT program dropped the packet.
    Drop,
}

/// The internal result of a selection.
#[derive(Debug, Default)]
struct Outcome {
    listener: Option<u32>,
    slot: Option<u32>,
    pick: Option<Pick>,
    fallback: Option<Fallback>,
    notes: Vec<Note>,
}

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

    fn member(&self, l: u32) -> Result<Member, GroupError> {
        self.members
            .get(l as usize)
            .copied()
            .ok_or(GroupError::NoSuchListener {
                listener: l,
                count: self.members.len() as u32,
                order: self.proto.join_call(),
            })
    }

    fn wrong_state(&self, l: u32, action: &'static str, needed: &'static str) -> GroupError {
        GroupError::WrongState {
            listener: l,
            state: self.members[l as usize].state.word(),
            action,
            needed,
        }
    }

    /// `net.ipv4.tcp_migrate_req`: keeps shut-down TCP listeners in the
    /// closed tail (5.14+, `net/core/sock_reuseport.c` `reuseport_stop_listen_sock`).
    pub fn set_tcp_migrate_req(&mut self, on: bool) -> Result<(), GroupError> {
        if on && !self.profile.closed_tail {
            return Err(GroupError::Unsupported {
                what: "net.ipv4.tcp_migrate_req".into(),
                why: format!(
                    "the sysctl arrived in 5.14; profile {} does not have it",
                    self.profile.release
                ),
            });
        }
        if on && self.proto != Proto::Tcp {
            return Err(GroupError::Unsupported {
                what: "net.ipv4.tcp_migrate_req".into(),
                why: "it applies to TCP listeners only".into(),
            });
        }
        self.tcp_migrate_req = on;
        Ok(())
    }

    fn in_group(state: MemberState) -> bool {
        matches!(state, MemberState::Listening | MemberState::ClosedTail)
    }

    fn add_to_layout(&mut self, l: u32) -> Result<Change, GroupError> {
        if self.join_seq.len() <= l as usize {
            self.join_seq.resize(l as usize + 1, 0);
        }
        self.join_seq[l as usize] = self.next_seq;
        self.next_seq += 1;
        let (call, errno) = match self.proto {
            Proto::Tcp => ("listen", "ENOMEM"),
            Proto::Udp => ("bind", "EADDRINUSE"),
        };
        match &mut self.layout {
            Layout::Chain(c) => {
                // __inet_hash / udp_lib_get_port: head insertion (3.9 – 4.5).
                c.insert(0, l);
                Ok(Change::Joined {
                    listener: l,
                    slot: None,
                    effect: AddEffect::Appended,
                })
            }
            Layout::Array(a) => {
                let effect = a.add(l).map_err(|_| GroupError::Full {
                    listener: l,
                    call,
                    errno,
                })?;
                if let AddEffect::EvictedClosed { listener } = effect {
                    let m = &mut self.members[listener as usize];
                    m.state = MemberState::Closed;
                    if m.incoming_cpu >= 0 {
                        self.incoming_cpu -= 1;
                    }
                }
                Ok(Change::Joined {
                    listener: l,
                    slot: Some(a.num_socks() - 1),
                    effect,
                })
            }
        }
    }

    /// `n` sockets join in order, as `n` calls of [`ReuseportGroup::join`]
    /// would leave the group, in time linear in `n` (a chain built by head
    /// insertions one by one is quadratic: 54 s for a million members).
    fn join_all(&mut self, n: u32) -> Result<(), GroupError> {
        if let Layout::Chain(c) = &mut self.layout {
            let first = self.members.len() as u32;
            let mut fresh: Vec<u32> = (first..first + n).rev().collect();
            fresh.extend_from_slice(c);
            *c = fresh;
            self.join_seq.resize((first + n) as usize, 0);
            for l in first..first + n {
                self.members.push(Member {
                    state: MemberState::Listening,
                    incoming_cpu: -1,
                    connected: false,
                });
                self.join_seq[l as usize] = self.next_seq;
                self.next_seq += 1;
            }
            return Ok(());
        }
        for _ in 0..n {
            self.join()?;
        }
        Ok(())
    }

    /// A new socket joins (TCP `listen()`, UDP `bind()`): appended to
    /// `socks[]`, growing it when full, or put at the chain's head.
    pub fn join(&mut self) -> Result<Change, GroupError> {
        let l = self.members.len() as u32;
        self.members.push(Member {
            state: MemberState::Listening,
            incoming_cpu: -1,
            connected: false,
        });
        match self.add_to_layout(l) {
            Ok(c) => Ok(c),
            Err(e) => {
                self.members.pop();
                Err(e)
            }
        }
    }

    fn remove_from_listening(&mut self, l: u32) -> Change {
        match &mut self.layout {
            Layout::Chain(c) => {
                c.retain(|&x| x != l);
                Change::Left {
                    listener: l,
                    slot: None,
                    moved: None,
                }
            }
            Layout::Array(a) => {
                let (slot, moved) = a.detach(l).expect("listening member is in the prefix");
                Change::Left {
                    listener: l,
                    slot: Some(slot),
                    moved,
                }
            }
        }
    }

    /// `close()`: the member leaves the group for good; in the group era the
    /// last listening member moves into its slot (`reuseport_detach_sock`).
    pub fn close(&mut self, l: u32) -> Result<Change, GroupError> {
        let m = self.member(l)?;
        let change = match m.state {
            MemberState::Listening => self.remove_from_listening(l),
            MemberState::ClosedTail => {
                if let Layout::Array(a) = &mut self.layout {
                    a.detach_closed(l);
                }
                Change::Unchanged
            }
            MemberState::ShutDown => Change::Unchanged,
            MemberState::Closed => return Err(self.wrong_state(l, "close", "open")),
        };
        if Self::in_group(m.state) && m.incoming_cpu >= 0 && self.selection() == Selection::Group {
            self.incoming_cpu -= 1;
        }
        self.members[l as usize].state = MemberState::Closed;
        Ok(change)
    }

    /// `shutdown()` of a TCP listener: with `tcp_migrate_req` (5.14+) it moves
    /// to the closed tail; otherwise it leaves the group as on close, but may
    /// listen again.
    pub fn shutdown(&mut self, l: u32) -> Result<Change, GroupError> {
        if self.proto != Proto::Tcp {
            return Err(GroupError::Unsupported {
                what: "shutdown of a member".into(),
                why: "a UDP socket stays bound after shutdown(); close it instead".into(),
            });
        }
        let m = self.member(l)?;
        if m.state != MemberState::Listening {
            return Err(self.wrong_state(l, "shutdown", "listening"));
        }
        let migrate = self.tcp_migrate_req && self.profile.closed_tail;
        let change = match &mut self.layout {
            Layout::Array(a) if migrate => {
                let (slot, moved) = a.stop_listen(l).expect("listening member is in the prefix");
                Change::Left {
                    listener: l,
                    slot: Some(slot),
                    moved,
                }
            }
            _ => self.remove_from_listening(l),
        };
        if !migrate && m.incoming_cpu >= 0 && self.selection() == Selection::Group {
            self.incoming_cpu -= 1;
        }
        self.members[l as usize].state = if migrate {
            MemberState::ClosedTail
        } else {
            MemberState::ShutDown
        };
        Ok(change)
    }

    /// `listen()` again after `shutdown()`: out of the closed tail
    /// (`reuseport_resurrect`) or back in as a new join, appended either way.
    pub fn relisten(&mut self, l: u32) -> Result<Change, GroupError> {
        let m = self.member(l)?;
        match m.state {
            MemberState::ClosedTail => {
                let Layout::Array(a) = &mut self.layout else {
                    unreachable!("closed tail exists only in the group era")
                };
                a.resurrect(l);
                let slot = a.num_socks() - 1;
                self.join_seq[l as usize] = self.next_seq;
                self.next_seq += 1;
                self.members[l as usize].state = MemberState::Listening;
                Ok(Change::Joined {
                    listener: l,
                    slot: Some(slot),
                    effect: AddEffect::Appended,
                })
            }
            MemberState::ShutDown => {
                self.members[l as usize].state = MemberState::Listening;
                let change = self
                    .add_to_layout(l)
                    .inspect_err(|_| self.members[l as usize].state = MemberState::ShutDown)?;
                if m.incoming_cpu >= 0 && self.selection() == Selection::Group {
                    self.incoming_cpu += 1;
                }
                Ok(change)
            }
            _ => Err(self.wrong_state(l, "listen again", "shut-down")),
        }
    }

    /// `setsockopt(SO_INCOMING_CPU)` (4.4+), or `None` to clear it (-1). In
    /// the group era this keeps the group's `incoming_cpu` counter
    /// (`reuseport_update_incoming_cpu`, 6.2).
    pub fn set_incoming_cpu(&mut self, l: u32, cpu: Option<u32>) -> Result<Change, GroupError> {
        if !self.profile.incoming_cpu_writable {
            return Err(GroupError::Unsupported {
                what: "setsockopt(SO_INCOMING_CPU)".into(),
                why: format!(
                    "it became writable in 4.4 (70da268b569d); on {} it fails with ENOPROTOOPT",
                    self.profile.release
                ),
            });
        }
        let m = self.member(l)?;
        if m.state == MemberState::Closed {
            return Err(self.wrong_state(l, "SO_INCOMING_CPU", "open"));
        }
        let new = cpu.map(|c| c as i32).unwrap_or(-1);
        if Self::in_group(m.state) && self.selection() == Selection::Group {
            if m.incoming_cpu < 0 && new >= 0 {
                self.incoming_cpu += 1;
            } else if m.incoming_cpu >= 0 && new < 0 {
                self.incoming_cpu -= 1;
            }
        }
        self.members[l as usize].incoming_cpu = new;
        Ok(Change::Unchanged)
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
                Some(_) => {
                    return Err(GroupError::Unsupported {
                        what: "a payload modulo 0".into(),
                        why: "the classic BPF verifier refuses a division by the constant 0 (EINVAL)".into(),
                    })
                }
                None => {}
            },
            _ => {}
        }
        self.program = program;
        Ok(Change::Unchanged)
    }

    /// The attached program.
    pub fn program(&self) -> Option<&Program> {
        self.program.as_ref()
    }

    /// `connect()` on a UDP member: it becomes TCP_ESTABLISHED and the group
    /// records `has_conns` (5.4+), which is never cleared.
    pub fn connect(&mut self, l: u32) -> Result<Change, GroupError> {
        if self.proto != Proto::Udp {
            return Err(GroupError::Unsupported {
                what: "connect() on a member".into(),
                why: "only UDP members connect; a TCP listener cannot".into(),
            });
        }
        let m = self.member(l)?;
        if m.state != MemberState::Listening {
            return Err(self.wrong_state(l, "connect", "bound"));
        }
        self.members[l as usize].connected = true;
        self.has_conns = true;
        Ok(Change::Unchanged)
    }

    /// Checks that a packet is addressed to this group, and returns it with
    /// any `::ffff:` addresses made IPv4.
    pub fn accepts(&self, t: &Tuple) -> Result<Tuple, SetupError> {
        let t = Tuple {
            saddr: canonical(t.saddr),
            daddr: canonical(t.daddr),
            ..*t
        };
        let reaches = t.dport == self.port
            && match (t.daddr, self.bind) {
                (IpAddr::V4(d), IpAddr::V4(b)) => b.is_unspecified() || b == d,
                (IpAddr::V4(d), IpAddr::V6(b)) => {
                    !self.v6only && (b.is_unspecified() || b.to_ipv4_mapped() == Some(d))
                }
                (IpAddr::V6(d), IpAddr::V6(b)) => b.is_unspecified() || b == d,
                (IpAddr::V6(_), IpAddr::V4(_)) => false,
            };
        if reaches {
            Ok(t)
        } else {
            Err(SetupError::NotForThisGroup {
                daddr: t.daddr.to_string(),
                dport: t.dport,
                bind: self.bind.to_string(),
                port: self.port,
                consequence: match self.proto {
                    Proto::Tcp => "a SYN is answered with RST",
                    Proto::Udp => "a datagram is dropped with ICMP port unreachable",
                },
            })
        }
    }

    /// Which rule decides the hashed local address for this packet.
    fn laddr_rule(&self) -> LaddrRule {
        if !self.bind.is_unspecified() {
            return LaddrRule::Specific;
        }
        let rule = match self.proto {
            Proto::Tcp => self.profile.tcp_wildcard_laddr,
            Proto::Udp => self.profile.udp_wildcard_laddr,
        };
        match rule {
            WildcardLaddr::Zero => LaddrRule::WildcardZero,
            WildcardLaddr::Daddr => LaddrRule::WildcardDaddr,
            WildcardLaddr::ZeroAboveTen => {
                let count = self.listening().len() as u32;
                if count > UDP_HASH2_THRESHOLD {
                    LaddrRule::PortSlotOverTen(count)
                } else {
                    LaddrRule::PortSlotTenOrFewer(count)
                }
            }
        }
    }

    /// Whether the hash sees local address 0 rather than the destination
    /// (a wildcard group in the eras of kernel-history.md §2.6).
    pub(crate) fn hashes_laddr_zero(&self) -> bool {
        matches!(
            self.laddr_rule(),
            LaddrRule::WildcardZero | LaddrRule::PortSlotOverTen(_)
        )
    }

    /// The local address the lookup pass that finds this group feeds to the
    /// hash, and why (kernel-history.md §2.6).
    pub fn hashed_laddr(&self, t: &Tuple) -> (IpAddr, LaddrReason) {
        let rule = self.laddr_rule();
        let why = match rule {
            LaddrRule::Specific => LaddrReason::Specific {
                bind: self.bind.to_string(),
            },
            LaddrRule::WildcardZero => LaddrReason::WildcardZero,
            LaddrRule::WildcardDaddr => LaddrReason::WildcardDaddr,
            LaddrRule::PortSlotOverTen(count) => LaddrReason::PortSlotOverTen { count },
            LaddrRule::PortSlotTenOrFewer(count) => LaddrReason::PortSlotTenOrFewer { count },
        };
        (rule.apply(t.daddr), why)
    }

    /// The reuseport hash of a packet (already checked with [`Self::accepts`]).
    pub fn hash_of(&self, t: &Tuple) -> u32 {
        self.hash_with_laddr(t, self.laddr_rule().apply(t.daddr))
    }

    fn hash_trace(&self, t: &Tuple) -> HashTrace {
        let (laddr, reason) = self.hashed_laddr(t);
        hash::trace(
            self.profile,
            self.proto,
            laddr,
            reason,
            t.dport,
            t.saddr,
            t.sport,
            &self.keys,
        )
    }

    /// `compute_score` of a member for this packet in the reservoir era
    /// (kernel-history.md §4.1 and §5.1). All members share address, port and
    /// device, so only the CPU bonus (4.4+) tells them apart.
    fn reservoir_score(&self, t: &Tuple, member: &Member, cpu: u32) -> i32 {
        let specific = !self.bind.is_unspecified();
        let udp_hash2_path =
            self.proto == Proto::Udp && self.listening().len() as u32 > UDP_HASH2_THRESHOLD;
        let base = match (self.proto, t.daddr.is_ipv6()) {
            // AF_INET 2, AF_INET6 1; +4 for a bound address (compute_score, net/ipv4/inet_hashtables.c).
            (Proto::Tcp, false) => {
                (if self.bind.is_ipv4() { 2 } else { 1 }) + if specific { 4 } else { 0 }
            }
            // net/ipv6/inet6_hashtables.c: 1, +1 for a bound address.
            (Proto::Tcp, true) => 1 + specific as i32,
            // net/ipv4/udp.c: 2/1, +4 for a bound address on the port-slot scan only.
            (Proto::Udp, false) => {
                (if self.bind.is_ipv4() { 2 } else { 1 })
                    + if specific && !udp_hash2_path { 4 } else { 0 }
            }
            // net/ipv6/udp.c: 0, +1 for a bound address.
            (Proto::Udp, true) => specific as i32,
        };
        let cpu_bonus = self.profile.lookup.cpu_bonus
            && member.incoming_cpu >= 0
            && member.incoming_cpu as u32 == cpu;
        base + cpu_bonus as i32
    }

    /// Which listener the kernel picks for this packet, received on `cpu`.
    pub fn select(&self, t: &Tuple, cpu: u32) -> Result<Choice, SetupError> {
        self.select_ctx(t, &PacketCtx { cpu, payload: None })
    }

    /// Which listener the kernel picks for this packet in this context.
    pub fn select_ctx(&self, t: &Tuple, ctx: &PacketCtx) -> Result<Choice, SetupError> {
        let t = self.accepts(t)?;
        let hash = self.hash_of(&t);
        let o = self.pick(&t, hash, ctx, false, true);
        Ok(Choice {
            listener: o.listener,
            slot: o.slot,
            hash,
        })
    }

    /// The whole path of one packet, received on `cpu`.
    pub fn explain(&self, t: &Tuple, cpu: u32) -> Result<Explain, SetupError> {
        self.explain_ctx(t, &PacketCtx { cpu, payload: None })
    }

    /// The whole path of one packet in this context.
    pub fn explain_ctx(&self, t: &Tuple, ctx: &PacketCtx) -> Result<Explain, SetupError> {
        let t = self.accepts(t)?;
        let hash = self.hash_trace(&t);
        Ok(self.explain_from(t, hash, ctx, true).1)
    }

    /// The group's answer inside a full listener lookup: the lookup pass
    /// decides the local address the hash sees (`laddr`, with `why`), and an
    /// invalid program index before 4.16 returns NULL to the caller, whose
    /// own reservoir scan goes on ([`crate::lookup`]).
    pub fn select_for_lookup(
        &self,
        t: &Tuple,
        ctx: &PacketCtx,
        laddr: IpAddr,
        why: LaddrReason,
    ) -> Result<(GroupAnswer, Explain), SetupError> {
        let t = Tuple {
            saddr: canonical(t.saddr),
            daddr: canonical(t.daddr),
            ..*t
        };
        let laddr = canonical(laddr);
        if t.saddr.is_ipv4() != laddr.is_ipv4() {
            return Err(SetupError::NotForThisGroup {
                daddr: t.daddr.to_string(),
                dport: t.dport,
                bind: self.bind.to_string(),
                port: self.port,
                consequence: "the families differ",
            });
        }
        let hash = hash::trace(
            self.profile,
            self.proto,
            laddr,
            why,
            t.dport,
            t.saddr,
            t.sport,
            &self.keys,
        );
        let (answer, e) = self.explain_from(t, hash, ctx, false);
        Ok((answer, e))
    }

    fn explain_from(
        &self,
        t: Tuple,
        hash: HashTrace,
        ctx: &PacketCtx,
        standalone: bool,
    ) -> (GroupAnswer, Explain) {
        let o = self.pick(&t, hash.hash, ctx, true, standalone);
        let answer = match (o.listener, o.fallback) {
            (Some(l), _) => GroupAnswer::Member(l),
            (None, Some(Fallback::SkDrop)) => GroupAnswer::Drop,
            (None, _) => GroupAnswer::Null,
        };
        let mut notes = self.profile.notes();
        notes.extend(o.notes);
        if self.selection() == Selection::Reservoir && self.members.iter().any(|m| m.connected) {
            notes.push(Note::ConnectedMembersUnmatched);
        }
        if standalone
            && self.profile.udp_wildcard_laddr == WildcardLaddr::ZeroAboveTen
            && self.proto == Proto::Udp
            && self.bind.is_unspecified()
        {
            notes.push(Note::PortSlotAssumedAlone);
        }
        let e = Explain {
            profile: self.profile.release,
            proto: self.proto,
            tuple: t,
            cpu: ctx.cpu,
            group: self.summary(),
            hash,
            pick: o.pick.expect("recorded"),
            listener: o.listener,
            slot: o.slot,
            fallback: o.fallback,
            notes,
        };
        (answer, e)
    }

    /// The chain a reservoir scan walks in the group era (the 4.5–4.15
    /// fallback for an invalid program index): listening members in
    /// `listening_hash` order, newest first, but IPv6 reuseport sockets at
    /// the tail from 4.6 (d894ba18d4e4).
    fn group_era_chain(&self) -> Vec<u32> {
        let mut chain: Vec<u32> = self.listening().to_vec();
        chain.sort_by_key(|&l| std::cmp::Reverse(self.join_seq[l as usize]));
        if self.bind.is_ipv6() {
            chain.reverse();
        }
        chain
    }

    fn slot_of(&self, listener: u32) -> Option<u32> {
        self.sock_array()?
            .listening()
            .iter()
            .position(|&l| l == listener)
            .map(|i| i as u32)
    }

    /// The selection proper: program, select-by-hash or reservoir, with the
    /// record built only when asked.
    fn pick(&self, t: &Tuple, h: u32, ctx: &PacketCtx, record: bool, standalone: bool) -> Outcome {
        let mut o = Outcome::default();
        let a = match &self.layout {
            Layout::Chain(c) => {
                let mut steps = Vec::new();
                o.listener = self.reservoir(c, t, h, ctx.cpu, record.then_some(&mut steps));
                if o.listener.is_none() {
                    o.fallback = Some(Fallback::NoListeningMatch);
                }
                if record {
                    o.pick = Some(Pick::Reservoir {
                        source: self.reservoir_source(),
                        omitted: (c.len() - steps.len()) as u32,
                        steps,
                    });
                }
                return o;
            }
            Layout::Array(a) => a,
        };
        let Some(program) = &self.program else {
            return self.by_hash(a, h, ctx.cpu, record);
        };
        let n = a.num_socks();
        let ran = program.run(ctx, a.listening(), |l| {
            self.members[l as usize].state == MemberState::Listening
        });
        let describe = |then: Option<Box<Pick>>,
                        returned: ProgramReturn,
                        outcome: ProgramOutcome| Pick::Program {
            source: program.source(self.profile.release),
            program: program.describe(),
            returned,
            outcome,
            then,
        };
        match ran {
            ProgramResult::Index(i) if i < n => {
                o.slot = Some(i);
                o.listener = Some(a.listening()[i as usize]);
                if record {
                    o.pick = Some(describe(
                        None,
                        ProgramReturn::Index { index: i },
                        ProgramOutcome::InRange {
                            index: i,
                            num_socks: n,
                        },
                    ));
                }
                o
            }
            ProgramResult::Index(i) => match self.profile.bpf_invalid_index {
                BpfFallback::Hash => {
                    let inner = self.by_hash(a, h, ctx.cpu, record);
                    Outcome {
                        pick: record.then(|| {
                            describe(
                                inner.pick.map(Box::new),
                                ProgramReturn::Index { index: i },
                                ProgramOutcome::InvalidThenHash {
                                    index: i,
                                    num_socks: n,
                                },
                            )
                        }),
                        ..inner
                    }
                }
                BpfFallback::Reservoir if !standalone => {
                    o.fallback = Some(Fallback::InvalidIndexNull);
                    if record {
                        o.pick = Some(describe(
                            None,
                            ProgramReturn::Index { index: i },
                            ProgramOutcome::InvalidReturnsNull {
                                index: i,
                                num_socks: n,
                            },
                        ));
                    }
                    o
                }
                BpfFallback::Reservoir => {
                    let mut steps = Vec::new();
                    let chain = self.group_era_chain();
                    let l = self.reservoir(&chain, t, h, ctx.cpu, record.then_some(&mut steps));
                    o.listener = l;
                    o.slot = l.and_then(|l| self.slot_of(l));
                    if record {
                        // The caller's reservoir scan over listening_hash (4.5 – 4.15).
                        let inner = Pick::Reservoir {
                            source: self.reservoir_source(),
                            omitted: (chain.len() - steps.len()) as u32,
                            steps,
                        };
                        o.pick = Some(describe(
                            Some(Box::new(inner)),
                            ProgramReturn::Index { index: i },
                            ProgramOutcome::InvalidThenReservoir {
                                index: i,
                                num_socks: n,
                            },
                        ));
                    }
                    o
                }
            },
            ProgramResult::Selected(l) => {
                o.listener = Some(l);
                o.slot = self.slot_of(l);
                if record {
                    o.pick = Some(describe(
                        None,
                        ProgramReturn::Selected,
                        ProgramOutcome::Selected { listener: l },
                    ));
                }
                o
            }
            ProgramResult::PassWithoutSelection(why) => {
                let inner = self.by_hash(a, h, ctx.cpu, record);
                Outcome {
                    pick: record.then(|| {
                        describe(
                            inner.pick.map(Box::new),
                            ProgramReturn::PassWithoutSelection,
                            why.outcome(true),
                        )
                    }),
                    ..inner
                }
            }
            ProgramResult::Drop(why) => {
                o.fallback = Some(Fallback::SkDrop);
                if record {
                    o.pick = Some(describe(None, ProgramReturn::Drop, why.outcome(false)));
                }
                o
            }
        }
    }

    /// The reservoir scan of the listener lookup (3.9 – 4.5 TCP, 3.9 – 4.4
    /// UDP, and the 4.5 – 4.15 fallback for an invalid program index).
    fn reservoir_source(&self) -> KernelSource {
        let release = self.profile.release;
        let (func, file) = match (self.proto, self.bind.is_ipv6()) {
            (Proto::Tcp, false) => ("__inet_lookup_listener", "net/ipv4/inet_hashtables.c"),
            (Proto::Tcp, true) => ("inet6_lookup_listener", "net/ipv6/inet6_hashtables.c"),
            (Proto::Udp, false) => ("__udp4_lib_lookup", "net/ipv4/udp.c"),
            (Proto::Udp, true) => ("__udp6_lib_lookup", "net/ipv6/udp.c"),
        };
        KernelSource::new(func, file, release)
    }

    fn by_hash(&self, a: &SockArray, h: u32, cpu: u32, record: bool) -> Outcome {
        let mut steps = Vec::new();
        let n = a.num_socks();
        let got = self.select_by_hash(a, h, cpu, record.then_some(&mut steps));
        let mut o = Outcome {
            listener: got.map(|(_, l)| l),
            slot: got.map(|(s, _)| s),
            ..Outcome::default()
        };
        if got.is_none() {
            o.fallback = Some(if n == 0 {
                Fallback::NoListeningMember
            } else {
                Fallback::AllConnected
            });
        }
        if record {
            // 4.5 – 5.3 plain; 5.4+ skips connected members; 6.2+ the
            // SO_INCOMING_CPU ring scan in its own function.
            let func = match self.profile.group_scan {
                GroupScan::Plain | GroupScan::SkipConnected => "reuseport_select_sock",
                GroupScan::SkipConnectedPreferCpu => "reuseport_select_sock_by_hash",
            };
            let source = KernelSource::new(func, "net/core/sock_reuseport.c", self.profile.release);
            let product = h as u64 * n as u64;
            o.pick = Some(Pick::ByHash {
                source,
                num_socks: n,
                product: product.to_string(),
                product_hex: format!("{product:x}"),
                scaled: if n == 0 { 0 } else { reciprocal_scale(h, n) },
                steps,
            });
        }
        o
    }

    /// Where a pending request (SYN_RECV / NEW_SYN_RECV child) of a listener
    /// that has just been shut down or closed goes (5.14+,
    /// `reuseport_migrate_sock`, net/core/sock_reuseport.c): with
    /// `net.ipv4.tcp_migrate_req` on, select-by-hash over the listening
    /// members with the request's own hash (`sk_hash`, the established hash
    /// of its 4-tuple, so the real local address even for a wildcard group);
    /// otherwise the request is reset.
    pub fn migrate(&self, t: &Tuple, cpu: u32) -> Result<Migration, SetupError> {
        let t = Tuple {
            saddr: canonical(t.saddr),
            daddr: canonical(t.daddr),
            ..*t
        };
        if self.proto != Proto::Tcp || !self.profile.closed_tail {
            return Ok(Migration::Reset {
                reason: ResetReason::NoMigration {
                    release: self.profile.release,
                },
            });
        }
        if !self.tcp_migrate_req {
            return Ok(Migration::Reset {
                reason: ResetReason::MigrateReqOff,
            });
        }
        let a = self.sock_array().expect("group era from 5.14");
        let hash = self.hash_with_laddr(&t, t.daddr);
        match self.select_by_hash(a, hash, cpu, None) {
            Some((slot, listener)) => Ok(Migration::To {
                listener,
                slot,
                hash,
            }),
            None => Ok(Migration::Reset {
                reason: ResetReason::NoListenerLeft,
            }),
        }
    }

    fn hash_with_laddr(&self, t: &Tuple, laddr: IpAddr) -> u32 {
        hash::reuseport_hash(
            self.profile,
            self.proto,
            laddr,
            t.dport,
            t.saddr,
            t.sport,
            &self.keys,
        )
        .expect("accepts() makes both addresses the same family")
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

    /// Select by hash over the listening prefix, per era
    /// (`net/core/sock_reuseport.c`, kernel-history.md §3.4). Returns the slot
    /// and listener, recording each visited slot when asked.
    fn select_by_hash(
        &self,
        a: &SockArray,
        hash: u32,
        cpu: u32,
        mut rec: Option<&mut Vec<RingStep>>,
    ) -> Option<(u32, u32)> {
        let socks = a.listening();
        let n = socks.len() as u32;
        if n == 0 {
            return None;
        }
        let start = reciprocal_scale(hash, n);
        let mut push = |slot: u32, outcome: RingOutcome, chosen: bool| {
            if let Some(r) = rec.as_deref_mut() {
                r.push(RingStep {
                    slot,
                    listener: socks[slot as usize],
                    outcome,
                    chosen,
                });
            }
        };
        let scan = self.profile.group_scan;
        if scan == GroupScan::Plain {
            push(start, RingOutcome::Plain, true);
            return Some((start, socks[start as usize]));
        }
        let prefer_cpu = scan == GroupScan::SkipConnectedPreferCpu && self.incoming_cpu > 0;
        let mut first: Option<u32> = None;
        let mut i = start;
        loop {
            let m = &self.members[socks[i as usize] as usize];
            if m.connected {
                push(i, RingOutcome::ConnectedSkipped, false);
            } else if !prefer_cpu {
                let why = if scan == GroupScan::SkipConnectedPreferCpu {
                    RingOutcome::NotConnectedNoIncomingCpu
                } else {
                    RingOutcome::NotConnected
                };
                push(i, why, true);
                return Some((i, socks[i as usize]));
            } else if m.incoming_cpu >= 0 && m.incoming_cpu as u32 == cpu {
                push(i, RingOutcome::CpuMatch { cpu }, true);
                return Some((i, socks[i as usize]));
            } else {
                let outcome = match (m.incoming_cpu, first.is_none()) {
                    (c, true) if c < 0 => RingOutcome::CpuUnsetFirst { cpu },
                    (c, false) if c < 0 => RingOutcome::CpuUnset { cpu },
                    (c, true) => RingOutcome::CpuOtherFirst {
                        incoming_cpu: c as u32,
                        cpu,
                    },
                    (c, false) => RingOutcome::CpuOther {
                        incoming_cpu: c as u32,
                        cpu,
                    },
                };
                push(i, outcome, false);
                first.get_or_insert(i);
            }
            i = if i + 1 >= n { 0 } else { i + 1 };
            if i == start {
                break;
            }
        }
        if let (Some(f), Some(r)) = (first, rec) {
            r.push(RingStep {
                slot: f,
                listener: socks[f as usize],
                outcome: RingOutcome::FirstValid,
                chosen: true,
            });
        }
        first.map(|f| (f, socks[f as usize]))
    }

    /// The reservoir scan (3.9–4.5 TCP, 3.9–4.4 UDP; kernel-history.md §4.1).
    /// `rec` gets the first [`EXPLAIN_STEPS`] steps and every later one that
    /// took the lead; the scan itself visits the whole chain.
    fn reservoir(
        &self,
        chain: &[u32],
        t: &Tuple,
        hash: u32,
        cpu: u32,
        mut rec: Option<&mut Vec<ReservoirStep>>,
    ) -> Option<u32> {
        let mut result = None;
        let mut hi = 0i32;
        let mut matches = 0u32;
        let mut phash = 0u32;
        for (pos, &l) in chain.iter().enumerate() {
            let m = &self.members[l as usize];
            if m.connected {
                if let Some(r) = rec.as_deref_mut().filter(|_| (pos as u32) < EXPLAIN_STEPS) {
                    r.push(ReservoirStep {
                        position: pos as u32,
                        listener: l,
                        score: -1,
                        matches,
                        phash: None,
                        scaled: None,
                        taken: false,
                        outcome: ReservoirOutcome::Connected,
                    });
                }
                continue;
            }
            let s = self.reservoir_score(t, m, cpu);
            let before = hi;
            let (taken, tested) = if s > hi {
                result = Some(l);
                hi = s;
                phash = hash;
                matches = 1;
                (true, None)
            } else if s == hi {
                matches += 1;
                let tested = phash;
                let take = reciprocal_scale(tested, matches) == 0;
                if take {
                    result = Some(l);
                }
                phash = next_pseudo_random32(phash);
                (take, Some(tested))
            } else {
                (false, None)
            };
            if let Some(r) = rec
                .as_deref_mut()
                .filter(|_| taken || (pos as u32) < EXPLAIN_STEPS)
            {
                let scaled = tested.map(|x| reciprocal_scale(x, matches));
                let outcome = match (tested, scaled) {
                    (Some(x), Some(0)) => ReservoirOutcome::EqualTaken {
                        phash: hex(x),
                        matches,
                    },
                    (Some(x), Some(sc)) => ReservoirOutcome::EqualKept {
                        phash: hex(x),
                        matches,
                        scaled: sc,
                    },
                    _ if taken && pos == 0 => ReservoirOutcome::FirstMatch { score: s },
                    _ if taken => ReservoirOutcome::Beats { score: s, before },
                    _ => ReservoirOutcome::Below { score: s, best: hi },
                };
                r.push(ReservoirStep {
                    position: pos as u32,
                    listener: l,
                    score: s,
                    matches,
                    phash: tested.map(hex),
                    scaled,
                    taken,
                    outcome,
                });
            }
        }
        result
    }
}
