// Over 800 lines for now: one Host whose replay of calls, bind rules and lookup walk share its private socket and table state; to be split by those three seams.
//! The whole listener lookup: several sockets on a host, the `bind()` and
//! `listen()` rules that decide which of them may share a port, the
//! reuseport groups they form, the tables a packet's lookup walks, every
//! candidate's `compute_score`, and which socket wins (kernel-history.md
//! §4 – §7).
//!
//! A [`Layout`] lists sockets in `bind()` order (and, for TCP, an optional
//! `listen()` order). [`Host::build`] replays the calls and records each
//! one's answer; [`Host::lookup`] answers a packet with a [`LookupExplain`].
//!
//! Simplifications, each stated in the notes of an answer where it applies:
//! the hash tables are taken to hold only the sockets of the packet's port
//! (collisions with other ports depend on `net_hash_mix` and table sizes,
//! kernel-history.md §12.9); one network namespace; devices are names.

mod bucket;
pub mod calls;
pub mod rules;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::explain::Explain;
use crate::hash::{self, hex, Keys};
use crate::jhash::{next_pseudo_random32, reciprocal_scale};
pub use crate::message::Refusal;
use crate::message::{
    CandidateOutcome, Errno, Fallback, KernelSource, LaddrReason, LookupReason, Note, RefusalRule,
    SkLookupOutcome, TableName,
};
use crate::profile::{Profile, Release, UDP_HASH2_THRESHOLD};
use crate::reuseport::{GroupAnswer, GroupSpec, PacketCtx, Program, ReuseportGroup};
use crate::tuple::{unspecified_like, Proto, Tuple};
use bucket::{bucket_addr, Bucket, Class, WILDCARD};
pub use calls::{Call, CallLog, SockOpt, MAX_CALLS, MAX_SOCKETS};
use rules::{LookupRules, ScanRule, ScoreRule, TcpTables, UdpTables};

/// Address family of a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// AF_INET.
    Inet,
    /// AF_INET6 (may receive IPv4 unless `v6only`).
    Inet6,
}

/// What the socket does after `bind()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum SockState {
    /// TCP: `listen()`; UDP: receiving (bound). The default.
    #[default]
    Listen,
    /// Bound only (TCP: never listens).
    Bound,
    /// A TCP connection in TIME_WAIT on this address and port.
    TimeWait,
    /// UDP: `connect()`ed to `peer` (TCP_ESTABLISHED).
    Connected,
}

/// One socket of a layout: its options and where it binds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SocketSpec {
    /// AF_INET or AF_INET6.
    pub family: Family,
    /// TCP or UDP.
    pub proto: Proto,
    /// Bound address: IPv4 for AF_INET; IPv6 (`::ffff:a.b.c.d` for a
    /// v4-mapped bind) for AF_INET6; the wildcard `0.0.0.0` or `::`.
    #[cfg_attr(feature = "ts", ts(as = "String"))]
    pub addr: IpAddr,
    /// Bound port.
    pub port: u16,
    /// IPV6_V6ONLY.
    #[serde(default)]
    pub v6only: bool,
    /// SO_REUSEADDR.
    #[serde(default)]
    pub reuseaddr: bool,
    /// SO_REUSEPORT.
    #[serde(default)]
    pub reuseport: bool,
    /// Owner UID (`sock_i_uid`).
    #[serde(default)]
    pub uid: u32,
    /// SO_BINDTODEVICE, by name.
    #[serde(default)]
    pub device: Option<String>,
    /// What it does after bind.
    #[serde(default)]
    pub state: SockState,
    /// The peer of a connected UDP socket.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(as = "Option<String>"))]
    pub peer: Option<SocketAddr>,
    /// SO_INCOMING_CPU.
    #[serde(default)]
    pub incoming_cpu: Option<u32>,
    /// A program attached to this socket's group (SO_ATTACH_REUSEPORT_CBPF/EBPF).
    #[serde(default)]
    pub program: Option<Program>,
    /// Attach the program before `bind()`, as the selftests do: the socket
    /// then owns a one-member group, which from 4.6 denies it the
    /// SO_REUSEPORT bind exemption (kernel-history.md §6.4).
    #[serde(default)]
    pub program_before_bind: bool,
}

/// A BPF `sk_lookup` program (5.9+): it runs before the tables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum SkLookup {
    /// `bpf_sk_assign(socket)`; unless `noReuseport`, a reuseport socket's
    /// group then picks (BPF_SK_LOOKUP_F_NO_REUSEPORT skips that).
    Assign {
        /// The socket's index in the layout.
        socket: usize,
        /// BPF_SK_LOOKUP_F_NO_REUSEPORT.
        #[serde(default)]
        no_reuseport: bool,
    },
    /// SK_DROP: no socket.
    Drop,
    /// SK_PASS without assigning: the tables decide.
    Pass,
}

/// Sockets in `bind()` order, with the order of `listen()` calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Layout {
    /// The sockets; each binds in this order.
    pub sockets: Vec<SocketSpec>,
    /// Indexes of TCP sockets in the order they call `listen()`; by default
    /// the bind order. Listed sockets must be in state `listen`.
    #[serde(default)]
    pub listen_order: Option<Vec<usize>>,
    /// An `sk_lookup` program (5.9+).
    #[serde(default)]
    pub sk_lookup: Option<SkLookup>,
    /// The hash keys.
    #[serde(default)]
    pub keys: Keys,
    /// `net.ipv4.ip_local_port_range` and `ip_autobind_reuse`, for sockets
    /// that bind port 0.
    #[serde(default)]
    pub ephemeral: Option<Ephemeral>,
    /// Sockets closed, in this order, after every bind and listen: each
    /// leaves its lists, and its group moves the last member into its slot
    /// (`reuseport_detach_sock`).
    #[serde(default)]
    pub closed: Vec<usize>,
}

/// The ephemeral port range that `bind(addr, 0)` draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Ephemeral {
    /// Lowest port.
    pub low: u16,
    /// Highest port.
    pub high: u16,
    /// `net.ipv4.ip_autobind_reuse` (5.9+): a second, relaxed pass lets
    /// SO_REUSEADDR sockets share an ephemeral port.
    #[serde(default)]
    pub autobind_reuse: bool,
}

/// A layout that cannot be replayed at all.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LayoutError {
    /// Family and address disagree.
    #[error("socket {socket}: {problem}")]
    Socket {
        /// Its index.
        socket: usize,
        /// What is wrong and how to fix it.
        problem: String,
    },
    /// The listen order is not a permutation of listening TCP sockets.
    #[error("listenOrder: {0}")]
    ListenOrder(String),
    /// The ephemeral port range is empty or starts at port 0.
    #[error("ephemeral: {0}")]
    Ephemeral(String),
    /// `closed` names a socket twice.
    #[error("closed: {0}")]
    Closed(String),
    /// The sk_lookup program names no socket, or the profile lacks it.
    #[error("skLookup: {0}")]
    SkLookup(String),
    /// A call the model cannot replay, named by its index and field.
    #[error("calls[{index}].{field}: {problem}")]
    Call {
        /// The call's index in `calls`.
        index: usize,
        /// The field at fault.
        field: &'static str,
        /// What is wrong and how to fix it.
        problem: String,
    },
    /// Too many calls or sockets.
    #[error("calls: {0}")]
    Calls(String),
}

/// How one socket's calls went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct CallResult {
    /// The socket's index (its fd).
    pub socket: usize,
    /// Its family and protocol (`socket()`).
    pub family: Family,
    /// TCP or UDP.
    pub proto: Proto,
    /// Its address and port: the last bind's that succeeded (or the
    /// ephemeral port drawn), else the family's wildcard and 0.
    #[cfg_attr(feature = "ts", ts(as = "String"))]
    pub addr: IpAddr,
    /// Its port; 0 when `random_port` is set.
    pub port: u16,
    /// Set when the kernel drew the socket's port at random from this
    /// range: a `bind()` of port 0, or the autobind of `listen()` or
    /// `connect()` after a failed bind, with no `ephemeral`
    /// range in the call log, so the kernel's default range
    /// ([`LookupRules::default_port_range`]). `inet_csk_find_open_port`
    /// (net/ipv4/inet_connection_sock.c) and `udp_lib_get_port`
    /// (net/ipv4/udp.c) start at a random offset, so the port is unknown:
    /// the socket joins no group and no lookup of the layout's ports finds
    /// it.
    pub random_port: Option<Ephemeral>,
    /// `bind()`: `None` on success, else the errno and the rule.
    pub bind: Option<Refusal>,
    /// `listen()` for TCP sockets that listen.
    pub listen: Option<Refusal>,
    /// Attaching its program: `None` on success (or no program).
    pub attach: Option<Refusal>,
    /// Whether it ended up receiving (listening TCP, bound UDP).
    pub receiving: bool,
    /// Closed (`close()`).
    pub closed: bool,
    /// Its reuseport group (index into the host's groups).
    pub group: Option<usize>,
    /// Its member number in that group (join order).
    pub member: Option<u32>,
}

/// A packet to look up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Packet {
    /// TCP SYN or UDP datagram.
    pub proto: Proto,
    /// Its addresses and ports.
    pub tuple: Tuple,
    /// The device it arrived on (`lo` by default).
    #[serde(default)]
    pub device: Option<String>,
    /// Receiving CPU and payload word.
    #[serde(default)]
    pub ctx: PacketCtx,
}

/// One socket considered by a scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    /// The socket's index in the layout.
    pub socket: usize,
    /// Its `compute_score` (-1: no match).
    pub score: i32,
    /// What happened.
    pub outcome: CandidateOutcome,
}

/// One table (bucket) walked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TableWalk {
    /// Which table and bucket.
    pub table: TableName,
    /// The kernel function, file and release.
    pub source: KernelSource,
    /// The address the scores compare against and the hash sees.
    pub daddr: String,
    /// Sockets in list order.
    pub candidates: Vec<Candidate>,
}

/// The whole lookup of one packet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct LookupExplain {
    /// The profile.
    pub profile: Release,
    /// The packet.
    pub packet: Packet,
    /// What a BPF sk_lookup program did, if one ran.
    pub sk_lookup: Option<SkLookupOutcome>,
    /// Tables walked, in order.
    pub tables: Vec<TableWalk>,
    /// The reuseport group that picked, and how (its member numbers).
    pub group: Option<GroupPick>,
    /// The socket that receives the packet (index in the layout), if any.
    pub socket: Option<usize>,
    /// Why that socket, or why none (set on every answer).
    pub reason: Option<LookupReason>,
    /// Caveats for this answer.
    pub notes: Vec<Note>,
}

/// A group's part in a lookup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct GroupPick {
    /// The group's index.
    pub group: usize,
    /// The socket index of each member, by member number.
    pub members: Vec<usize>,
    /// The group's own record (hash, slot, program).
    pub explain: Explain,
}

struct Sock {
    /// The socket as it is now: family, protocol and owner from `socket`,
    /// options from `setsockopt`, address from `bind`.
    spec: SocketSpec,
    bound: bool,
    /// When its `bind()` succeeded, among all binds: the bucket's order.
    bind_seq: u64,
    /// TCP: `connect()`ed (not listening; TIME_WAIT once closed).
    established: bool,
    listening: bool,
    group: Option<usize>,
    member: Option<u32>,
    bind_refusal: Option<Refusal>,
    listen_refusal: Option<Refusal>,
    attach_refusal: Option<Refusal>,
    closed: bool,
    /// Bound to a port the kernel drew at random from this range (the
    /// call log gave none), which the model does not know: the socket is
    /// in no bucket, list or group the model keeps.
    random_port: Option<Ephemeral>,
    /// SO_LINGER: its timeout in seconds when on.
    linger: Option<u32>,
    /// Hashed at the tail of UDP's slots when it bound (AF_INET6 with
    /// SO_REUSEPORT then); see [`bucket`].
    slot_tail: bool,
    /// TCP: closed while connected without SO_LINGER, so still a full
    /// socket in FIN_WAIT1 on its port ([`Call::Close`]).
    closing: bool,
}

impl Sock {
    fn new(family: Family, proto: Proto, uid: u32) -> Sock {
        Sock {
            spec: SocketSpec {
                family,
                proto,
                addr: unspecified_of(family),
                port: 0,
                v6only: false,
                reuseaddr: false,
                reuseport: false,
                uid,
                device: None,
                state: match proto {
                    Proto::Tcp => SockState::Bound,
                    Proto::Udp => SockState::Listen,
                },
                peer: None,
                incoming_cpu: None,
                program: None,
                program_before_bind: false,
            },
            bound: false,
            bind_seq: 0,
            established: false,
            listening: false,
            group: None,
            member: None,
            bind_refusal: None,
            listen_refusal: None,
            attach_refusal: None,
            closed: false,
            random_port: None,
            linger: None,
            slot_tail: false,
            closing: false,
        }
    }
}

/// The wildcard of a family: `0.0.0.0` or `::`.
fn unspecified_of(family: Family) -> IpAddr {
    match family {
        Family::Inet => Ipv4Addr::UNSPECIFIED.into(),
        Family::Inet6 => Ipv6Addr::UNSPECIFIED.into(),
    }
}

struct GroupEntry {
    group: ReuseportGroup,
    /// Socket index per member number.
    members: Vec<usize>,
}

/// A host's sockets after the layout's calls, ready for lookups.
pub struct Host {
    profile: &'static Profile,
    rules: LookupRules,
    socks: Vec<Sock>,
    groups: Vec<GroupEntry>,
    /// Receiving sockets per protocol, in port-list order (head first).
    port_list: BTreeMap<(Proto, u16), Vec<usize>>,
    /// Receiving sockets per (protocol, bucket address, port), in list order.
    addr_list: BTreeMap<(Proto, IpAddr, u16), Vec<usize>>,
    /// Sockets that bound each (protocol, port), in bind order: the kernel's
    /// bind bucket, which the conflict rules walk (so a layout over many
    /// ports builds in near-linear time).
    bucket: BTreeMap<(Proto, u16), Bucket>,
    /// Groups per (protocol, port, bound address), for the join rule (which
    /// needs exactly the same address).
    groups_on: BTreeMap<(Proto, u16, IpAddr), Vec<usize>>,
    /// The TCP bind bucket's fast-path state per port.
    tcp_tb: BTreeMap<u16, TbFast>,
    sk_lookup: Option<SkLookup>,
    keys: Keys,
    ephemeral: Option<Ephemeral>,
    tcp_migrate_req: bool,
    /// The namespace's devices besides `lo` ([`CallLog::devices`]).
    devices: Vec<String>,
    /// A port drawn from the default range when every port of it may be
    /// held: the call log needs a range of its own.
    undecided_draw: bool,
    /// Each call's answer, in call order.
    answers: Vec<Option<Refusal>>,
    /// The next bind's sequence number.
    next_seq: u64,
}

/// The device name SO_BINDTODEVICE looks up for `given`: at most
/// `IFNAMSIZ - 1` = 15 bytes, up to the first NUL (sock_setbindtodevice,
/// net/core/sock.c, 3.9 to 7.2).
fn device_name(given: &str) -> String {
    const IFNAMSIZ: usize = 16;
    let bytes = &given.as_bytes()[..given.len().min(IFNAMSIZ - 1)];
    let bytes = bytes.split(|&b| b == 0).next().unwrap_or_default();
    String::from_utf8_lossy(bytes).into_owned()
}

/// The IPv4 address an AF_INET6 socket presents to IPv4 lookups
/// (`inet_rcv_saddr`): 0 for `::`, `a.b.c.d` for `::ffff:a.b.c.d`, and none
/// for a plain IPv6 address.
fn v4_view(s: &SocketSpec) -> Option<Ipv4Addr> {
    match s.addr {
        IpAddr::V4(a) => Some(a),
        IpAddr::V6(v6) if v6.is_unspecified() => (!s.v6only).then_some(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(v6) => v6.to_ipv4_mapped(),
    }
}

/// What the bind rules read of a socket's bound address: `sk_v6_rcv_saddr`
/// (AF_INET6 only), `sk_rcv_saddr` and `ipv6_only_sock`. An AF_INET6
/// socket bound to `::` has the IPv4 address 0 and one bound to
/// `::ffff:a.b.c.d` has `a.b.c.d`; any other IPv6 address gets
/// `LOOPBACK4_IPV6` (127.0.0.6), "invalid" as an IPv4 address
/// (`__inet6_bind`, net/ipv6/af_inet6.c, every release).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rcv {
    v6: Option<Ipv6Addr>,
    v4: Ipv4Addr,
    v6only: bool,
}

impl Rcv {
    fn of(s: &SocketSpec) -> Rcv {
        match (s.family, s.addr) {
            (Family::Inet6, a) => {
                let v6 = as_v6(a);
                let v4 = if v6.is_unspecified() {
                    Ipv4Addr::UNSPECIFIED
                } else {
                    v6.to_ipv4_mapped().unwrap_or(Ipv4Addr::new(127, 0, 0, 6))
                };
                Rcv {
                    v6: Some(v6),
                    v4,
                    v6only: s.v6only,
                }
            }
            (Family::Inet, a) => Rcv {
                v6: None,
                v4: match a {
                    IpAddr::V4(v) => v,
                    IpAddr::V6(v) => v.to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED),
                },
                v6only: false,
            },
        }
    }
}

/// `ipv4_rcv_saddr_equal` (net/ipv4/inet_connection_sock.c; the two
/// wildcard flags from 5.7, one before, which callers pass twice).
fn ipv4_rcv_saddr_equal(a: Ipv4Addr, b: Ipv4Addr, b_v6only: bool, w1: bool, w2: bool) -> bool {
    if b_v6only {
        return false;
    }
    a == b || (w1 && a.is_unspecified()) || (w2 && b.is_unspecified())
}

/// `ipv6_rcv_saddr_equal` (net/ipv4/inet_connection_sock.c): `b` without an
/// IPv6 address (an AF_INET socket) counts as v4-mapped.
fn ipv6_rcv_saddr_equal(a: Rcv, b: Rcv, w1: bool, w2: bool) -> bool {
    let a6 = a.v6.unwrap_or(Ipv6Addr::UNSPECIFIED);
    let mapped = |v: Ipv6Addr| v.to_ipv4_mapped().is_some();
    let a_any = a6.is_unspecified();
    let a_mapped = mapped(a6);
    let (b_any, b_mapped) = match b.v6 {
        Some(b6) => (b6.is_unspecified(), mapped(b6)),
        None => (false, true),
    };
    if a_mapped && b_mapped {
        return ipv4_rcv_saddr_equal(a.v4, b.v4, b.v6only, w1, w2);
    }
    if a_any && b_any {
        return true;
    }
    if b_any && w2 && !(b.v6only && a_mapped) {
        return true;
    }
    if a_any && w1 && !(a.v6only && b_mapped) {
        return true;
    }
    b.v6 == Some(a6)
}

/// `inet_rcv_saddr_equal(sk, sk2, ..)` with the wildcard flags for `sk`
/// (`a`) and `sk2` (`b`), by `sk`'s family.
fn rcv_saddr_equal(a: Rcv, b: Rcv, w1: bool, w2: bool) -> bool {
    match a.v6 {
        Some(_) => ipv6_rcv_saddr_equal(a, b, w1, w2),
        None => ipv4_rcv_saddr_equal(a.v4, b.v4, b.v6only, w1, w2),
    }
}

/// `inet_rcv_saddr_equal(sk, sk2, match_wildcard = true)`: whether the
/// binding socket `a` overlaps the earlier `b` for the bind-conflict rules.
fn overlaps(a: &SocketSpec, b: &SocketSpec) -> bool {
    rcv_saddr_equal(Rcv::of(a), Rcv::of(b), true, true)
}

/// An IPv6 address other than `::` and `::ffff:a.b.c.d`: binding it sets
/// IPV6_V6ONLY on the socket (`__inet6_bind`, net/ipv6/af_inet6.c; in
/// `inet6_bind` before 4.17; every release). Two sockets on `::1` are then
/// both v6only for the join rule whatever the option said.
fn binds_v6only(s: &SocketSpec) -> bool {
    match (s.family, s.addr) {
        (Family::Inet6, IpAddr::V6(v6)) => !v6.is_unspecified() && v6.to_ipv4_mapped().is_none(),
        _ => false,
    }
}

/// The TCP bind bucket's fast-path state for one port (`struct
/// inet_bind_bucket` `fastreuse`, `fastreuseport`, `fastuid`, `fast_*`;
/// include/net/inet_hashtables.h), kept between calls as the kernel does.
#[derive(Debug, Clone, Copy, Default)]
struct TbFast {
    owners: usize,
    fastreuse: bool,
    /// 0, `FASTREUSEPORT_ANY` (1) or `FASTREUSEPORT_STRICT` (2).
    fastreuseport: u8,
    fastuid: u32,
    fast: Option<Rcv>,
}

const FASTREUSEPORT_ANY: u8 = 1;
const FASTREUSEPORT_STRICT: u8 = 2;

fn as_v6(a: IpAddr) -> Ipv6Addr {
    match a {
        IpAddr::V6(v) => v,
        IpAddr::V4(v) => v.to_ipv6_mapped(),
    }
}

fn devices_compatible(a: &SocketSpec, b: &SocketSpec) -> bool {
    a.device.is_none() || b.device.is_none() || a.device == b.device
}

/// The `sock_reuseport` join rule (`inet_reuseport_add_sock`,
/// `udp_reuseport_add_sock`; kernel-history.md §6.1): same family,
/// `ipv6only`, device, port, SO_REUSEPORT, UID, and exactly the same address.
fn same_group(a: &SocketSpec, b: &SocketSpec) -> bool {
    a.family == b.family
        && a.proto == b.proto
        && a.v6only == b.v6only
        && a.device == b.device
        && a.port == b.port
        && a.reuseport
        && b.reuseport
        && a.uid == b.uid
        && a.addr == b.addr
}

/// Which bind-conflict rule refuses socket `s` against the earlier `e`
/// (kernel-history.md §7); `e_closing`: `e` is a TCP socket closed while
/// connected, still in FIN_WAIT1.
fn conflict_rule(s: &SocketSpec, e: &SocketSpec, e_closing: bool) -> RefusalRule {
    if s.reuseport && e.reuseport && s.uid != e.uid {
        if e_closing {
            RefusalRule::ClosingUidsDiffer {
                uid: s.uid,
                other_uid: e.uid,
            }
        } else {
            RefusalRule::UidsDiffer {
                uid: s.uid,
                other_uid: e.uid,
            }
        }
    } else if s.reuseaddr && e.reuseaddr && s.proto == Proto::Tcp {
        RefusalRule::ReuseaddrListener
    } else if s.reuseport != e.reuseport || !s.reuseport {
        RefusalRule::NoSharedOption
    } else {
        RefusalRule::Overlap
    }
}

impl Host {
    /// Replays the layout's calls in this profile: the earlier
    /// `{sockets, listenOrder, closed}` form, converted by
    /// [`CallLog::from_layout`].
    pub fn build(profile: &'static Profile, layout: &Layout) -> Result<Host, LayoutError> {
        Host::run(profile, &CallLog::from_layout(layout)?)
    }

    /// Replays a call log in this profile, in order, answering each call.
    /// Input the model cannot replay (an fd no `socket` call made, an
    /// address of the wrong family, too many calls) is an error naming the
    /// call's index and field; a call the kernel refuses is an answer
    /// ([`Host::answers`]).
    pub fn run(profile: &'static Profile, log: &CallLog) -> Result<Host, LayoutError> {
        let rules = LookupRules::of(profile);
        if log.calls.len() > MAX_CALLS {
            return Err(LayoutError::Calls(format!(
                "{} calls; at most {MAX_CALLS}",
                log.calls.len()
            )));
        }
        if let Some(e) = log.ephemeral {
            if e.low == 0 {
                return Err(LayoutError::Ephemeral(
                    "low is 0; the range starts at port 1 or above (net.ipv4.ip_local_port_range)"
                        .into(),
                ));
            }
            if e.low > e.high {
                return Err(LayoutError::Ephemeral(format!(
                    "low ({}) is above high ({}); give low <= high",
                    e.low, e.high
                )));
            }
        }
        let sockets = log
            .calls
            .iter()
            .filter(|c| matches!(c, Call::Socket { .. }))
            .count();
        if sockets > MAX_SOCKETS {
            return Err(LayoutError::Calls(format!(
                "{sockets} socket calls; at most {MAX_SOCKETS}"
            )));
        }
        if let Some(sk) = &log.sk_lookup {
            if !rules.sk_lookup {
                return Err(LayoutError::SkLookup(format!(
                    "BPF sk_lookup arrived in 5.9; profile {} does not have it",
                    profile.release
                )));
            }
            if let SkLookup::Assign { socket, .. } = sk {
                if *socket >= sockets {
                    return Err(LayoutError::SkLookup(format!(
                        "assigns socket {socket}, but the layout has {sockets}"
                    )));
                }
            }
        }
        let mut host = Host {
            profile,
            rules,
            socks: Vec::with_capacity(sockets),
            groups: Vec::new(),
            port_list: BTreeMap::new(),
            addr_list: BTreeMap::new(),
            bucket: BTreeMap::new(),
            groups_on: BTreeMap::new(),
            tcp_tb: BTreeMap::new(),
            sk_lookup: log.sk_lookup.clone(),
            keys: log.keys,
            ephemeral: log.ephemeral,
            tcp_migrate_req: log.tcp_migrate_req,
            devices: log.devices.clone(),
            undecided_draw: false,
            answers: Vec::with_capacity(log.calls.len()),
            next_seq: 0,
        };
        for (index, call) in log.calls.iter().enumerate() {
            let answer = host.call(index, call)?;
            if host.undecided_draw {
                let range = host.rules.default_port_range;
                return Err(LayoutError::Call {
                    index,
                    field: "fd",
                    problem: format!(
                        "the kernel draws this socket's port from {}-{} (the default ip_local_port_range), and every port of it may be held by the sockets before it: the model cannot tell whether one is free; give an `ephemeral` range",
                        range.low, range.high
                    ),
                });
            }
            host.answers.push(answer);
        }
        Ok(host)
    }

    /// One call: its answer, or an error naming the call when the model
    /// cannot replay it.
    fn call(&mut self, index: usize, call: &Call) -> Result<Option<Refusal>, LayoutError> {
        let bad = |field: &'static str, problem: String| {
            Err(LayoutError::Call {
                index,
                field,
                problem,
            })
        };
        if let Call::Socket { family, proto, uid } = *call {
            self.socks.push(Sock::new(family, proto, uid));
            return Ok(None);
        }
        let Some(i) = call.fd() else {
            return Ok(None);
        };
        if i >= self.socks.len() {
            return bad(
                "fd",
                format!(
                    "socket {i} does not exist yet: {} socket calls come before this call, making fds 0 to {}",
                    self.socks.len(),
                    self.socks.len() as i64 - 1
                ),
            );
        }
        if self.socks[i].closed {
            // The fd was closed (close(2) then any call: EBADF).
            return Ok(Some(self.refusal(
                Errno::Ebadf,
                RefusalRule::FdClosed,
                "fdget",
                "include/linux/file.h",
            )));
        }
        let (family, proto) = (self.socks[i].spec.family, self.socks[i].spec.proto);
        match call {
            Call::Socket { .. } => Ok(None),
            Call::Setsockopt { opt, .. } => Ok(self.setsockopt(i, opt)),
            Call::Bind { addr, port, .. } => {
                match (family, addr) {
                    (Family::Inet, IpAddr::V6(_)) => {
                        return bad(
                            "addr",
                            format!(
                            "socket {i} is AF_INET and cannot bind the IPv6 address {addr}; make it with family inet6"
                        ),
                        )
                    }
                    (Family::Inet6, IpAddr::V4(_)) => {
                        return bad(
                            "addr",
                            format!("socket {i} is AF_INET6: it binds IPv4 addresses as ::ffff:{addr}"),
                        )
                    }
                    _ => {}
                }
                Ok(self.bind(i, *addr, *port))
            }
            Call::Listen { .. } => {
                if proto == Proto::Udp {
                    // inet_dgram_ops .listen = sock_no_listen.
                    return Ok(Some(self.refusal(
                        Errno::Eopnotsupp,
                        RefusalRule::UdpCannotListen,
                        "sock_no_listen",
                        "net/core/sock.c",
                    )));
                }
                if self.socks[i].established || self.socks[i].spec.state == SockState::Connected {
                    return Ok(Some(self.refusal(
                        Errno::Einval,
                        RefusalRule::ListenConnected,
                        "inet_listen",
                        "net/ipv4/af_inet.c",
                    )));
                }
                if self.socks[i].listening {
                    // Listening already: listen() only changes the backlog.
                    return Ok(None);
                }
                if !self.socks[i].bound {
                    // inet_csk_listen_start -> get_port(sk, 0): an ephemeral
                    // port, from the call log's range or the kernel's own.
                    let any = unspecified_of(family);
                    let bind_answer = self.socks[i].bind_refusal.clone();
                    let r = self.bind(i, any, 0);
                    self.socks[i].bind_refusal = bind_answer;
                    if let Some(r) = r {
                        self.socks[i].listen_refusal = Some(r.clone());
                        return Ok(Some(r));
                    }
                }
                let r = self.listen_or_receive(i);
                self.socks[i].listen_refusal = r.clone();
                Ok(r)
            }
            Call::Connect { addr, port, .. } => {
                if addr.is_ipv6() != (family == Family::Inet6) {
                    return bad(
                        "addr",
                        format!("socket {i} is {family:?} and cannot connect to {addr}; give a peer of its family (::ffff:a.b.c.d for IPv4 through AF_INET6)"),
                    );
                }
                Ok(self.connect(index, i, SocketAddr::new(*addr, *port))?)
            }
            Call::Shutdown { .. } => Ok(self.shutdown(i)),
            Call::Close { .. } => {
                self.close_socket(i);
                Ok(None)
            }
        }
    }

    fn refusal(&self, errno: Errno, rule: RefusalRule, func: &str, file: &str) -> Refusal {
        Refusal {
            errno,
            rule,
            source: KernelSource::new(func, file, self.profile.release),
            with: None,
        }
    }

    /// `bind(i, addr, port)`.
    fn bind(&mut self, i: usize, addr: IpAddr, port: u16) -> Option<Refusal> {
        if self.socks[i].bound || self.socks[i].established {
            // inet_bind / __inet6_bind: `inet_num` already set.
            let r = self.refusal(
                Errno::Einval,
                RefusalRule::AlreadyBound,
                "__inet_bind",
                "net/ipv4/af_inet.c",
            );
            self.socks[i].bind_refusal = Some(r.clone());
            return Some(r);
        }
        let saved = self.socks[i].spec.clone();
        let s = &mut self.socks[i].spec;
        s.addr = addr;
        s.port = port;
        s.v6only = s.v6only || binds_v6only(s);
        let refused = match (port, self.ephemeral) {
            (0, Some(eph)) => self.autobind(i, eph),
            (0, None) => {
                self.draw_random_port(i);
                None
            }
            _ => self.bind_conflict(i),
        };
        if let Some(r) = refused {
            // On failure the address and IPV6_V6ONLY go back (inet_reset_saddr).
            self.socks[i].spec = saved;
            self.socks[i].bind_refusal = Some(r.clone());
            return Some(r);
        }
        self.socks[i].bind_refusal = None;
        let drawn = self.socks[i].random_port.is_some();
        if !drawn {
            self.tcp_fast_update(i, false);
        }
        self.socks[i].bound = true;
        self.socks[i].bind_seq = self.next_seq;
        self.next_seq += 1;
        if drawn {
            // Alone on a port the model does not know: UDP receives there
            // (udp_lib_get_port hashes it), in no list the model walks.
            self.socks[i].listening = self.socks[i].spec.proto == Proto::Udp;
            return None;
        }
        // udp_lib_get_port: the slot's tail for AF_INET6 with SO_REUSEPORT
        // now, where it stays whatever the option says later.
        let s = &self.socks[i].spec;
        let (key, seq) = ((s.proto, s.port), self.socks[i].bind_seq);
        self.socks[i].slot_tail = s.family == Family::Inet6 && s.reuseport;
        let class = self.class_of(i, false);
        self.bucket.entry(key).or_default().insert((seq, i), class);
        if self.socks[i].spec.proto == Proto::Udp {
            // udp_lib_get_port hashes the socket at bind: it receives.
            if let Some(r) = self.receive(i) {
                self.socks[i].bind_refusal = Some(r.clone());
                return Some(r);
            }
        }
        None
    }

    /// `connect(i, peer)`: UDP receives only from the peer from now on
    /// (TCP_ESTABLISHED, which a group counts from 5.4); TCP is taken to
    /// reach an established connection, not listening, still on its port.
    fn connect(
        &mut self,
        index: usize,
        i: usize,
        peer: SocketAddr,
    ) -> Result<Option<Refusal>, LayoutError> {
        let sock = &self.socks[i];
        if sock.listening && sock.spec.proto == Proto::Tcp {
            // __inet_stream_connect: a listener is not TCP_CLOSE.
            return Ok(Some(self.refusal(
                Errno::Eisconn,
                RefusalRule::ConnectListener,
                "__inet_stream_connect",
                "net/ipv4/af_inet.c",
            )));
        }
        if sock.established {
            return Ok(Some(self.refusal(
                Errno::Eisconn,
                RefusalRule::AlreadyConnected,
                "__inet_stream_connect",
                "net/ipv4/af_inet.c",
            )));
        }
        if sock.spec.family == Family::Inet6
            && sock.spec.v6only
            && as_v6(peer.ip()).to_ipv4_mapped().is_some()
        {
            // An IPV6_V6ONLY socket and a v4-mapped peer: ENETUNREACH before
            // any autobind (__ip6_datagram_connect, net/ipv6/datagram.c;
            // tcp_v6_connect, net/ipv6/tcp_ipv6.c). Measured on 6.18.44 by
            // verify --layouts --call-logs (2026-11-24).
            let (func, file) = match sock.spec.proto {
                Proto::Udp => ("__ip6_datagram_connect", "net/ipv6/datagram.c"),
                Proto::Tcp => ("tcp_v6_connect", "net/ipv6/tcp_ipv6.c"),
            };
            return Ok(Some(self.refusal(
                Errno::Enetunreach,
                RefusalRule::V6onlyMappedPeer,
                func,
                file,
            )));
        }
        let unplaced = !sock.bound || sock.spec.addr.is_unspecified() || sock.spec.port == 0;
        if unplaced && sock.random_port.is_none() {
            if !sock.bound && sock.bind_refusal.is_some() && self.ephemeral.is_none() {
                // Its bind failed: connect() binds an ephemeral port first
                // (inet_autobind for UDP, net/ipv4/af_inet.c;
                // inet_hash_connect for TCP, net/ipv4/inet_hashtables.c), at
                // random in the kernel's range. The socket's bind answer
                // stays its own bind() call's. A socket that made no bind
                // stays unreplayable: where connect() autobinds it from
                // scratch is not modelled.
                let any = unspecified_of(sock.spec.family);
                let bind_answer = sock.bind_refusal.clone();
                let r = self.bind(i, any, 0);
                self.socks[i].bind_refusal = bind_answer;
                if r.is_some() {
                    return Ok(r);
                }
            } else {
                return Err(LayoutError::Call {
                index,
                field: "fd",
                problem: format!(
                    "connect on socket {i}, which is not bound to a specific address and port: the model does not choose a source address; bind one first"
                ),
            });
            }
        }
        match self.socks[i].spec.proto {
            Proto::Udp => {
                self.socks[i].spec.state = SockState::Connected;
                self.socks[i].spec.peer = Some(peer);
                if let (Some(g), Some(m)) = (self.socks[i].group, self.socks[i].member) {
                    let _ = self.groups[g].group.connect(m);
                    if self.rules.udp_connect_leaves_group {
                        // udp_lib_hash4 (6.13+): reuseport_detach_sock.
                        let _ = self.groups[g].group.close(m);
                        self.socks[i].group = None;
                        self.socks[i].member = None;
                    }
                }
            }
            Proto::Tcp => self.socks[i].established = true,
        }
        Ok(None)
    }

    /// `shutdown(i, SHUT_RDWR)`: a TCP listener stops listening
    /// (`inet_shutdown` -> `tcp_disconnect` -> `inet_csk_listen_stop`) and
    /// keeps its port, bound by address (SOCK_BINDPORT_LOCK); unconnected
    /// sockets answer ENOTCONN (net/ipv4/af_inet.c).
    fn shutdown(&mut self, i: usize) -> Option<Refusal> {
        let s = &self.socks[i];
        let connected = s.established || s.spec.state == SockState::Connected;
        if s.spec.proto == Proto::Tcp && s.listening {
            self.leave_lists(i);
            self.set_listening(i, false);
            if let (Some(g), Some(m)) = (self.socks[i].group, self.socks[i].member) {
                let _ = self.groups[g].group.shutdown(m);
            }
            return None;
        }
        if connected {
            return None;
        }
        Some(self.refusal(
            Errno::Enotconn,
            RefusalRule::NotConnected,
            "inet_shutdown",
            "net/ipv4/af_inet.c",
        ))
    }

    /// `setsockopt(i, opt)`. Options change what later calls read of the
    /// socket; a bind already done stays as it was.
    fn setsockopt(&mut self, i: usize, opt: &SockOpt) -> Option<Refusal> {
        let family = self.socks[i].spec.family;
        match opt {
            SockOpt::Reuseaddr(on) => self.reclass(i, |s| s.spec.reuseaddr = *on),
            SockOpt::Reuseport(on) => self.reclass(i, |s| s.spec.reuseport = *on),
            SockOpt::V6only(on) => {
                if family == Family::Inet {
                    // ip_setsockopt: level IPPROTO_IPV6 is not AF_INET's.
                    return Some(self.refusal(
                        Errno::Enoprotoopt,
                        RefusalRule::V6onlyOnInet,
                        "ip_setsockopt",
                        "net/ipv4/ip_sockglue.c",
                    ));
                }
                if self.socks[i].bound {
                    // do_ipv6_setsockopt: `inet_num` set, EINVAL.
                    return Some(self.refusal(
                        Errno::Einval,
                        RefusalRule::V6onlyAfterBind,
                        "do_ipv6_setsockopt",
                        "net/ipv6/ipv6_sockglue.c",
                    ));
                }
                self.socks[i].spec.v6only = *on;
            }
            SockOpt::Bindtodevice(d) => {
                // sock_setbindtodevice (net/core/sock.c, 3.9 to 7.2): the
                // name is cut to IFNAMSIZ - 1 = 15 bytes and ends at a NUL;
                // an empty one unbinds; one no device of the namespace has
                // is ENODEV (dev_get_by_name_rcu found none), and the
                // socket stays as it was.
                let name = d.as_deref().map(device_name).filter(|n| !n.is_empty());
                if let Some(n) = &name {
                    if n != "lo" && !self.devices.iter().any(|d| d == n) {
                        return Some(self.refusal(
                            Errno::Enodev,
                            RefusalRule::UnknownDevice,
                            "sock_setbindtodevice",
                            "net/core/sock.c",
                        ));
                    }
                }
                self.reclass(i, |s| s.spec.device = name)
            }
            SockOpt::Linger(l) => self.socks[i].linger = *l,
            SockOpt::IncomingCpu(cpu) => {
                self.socks[i].spec.incoming_cpu = Some(*cpu);
                if let (Some(g), Some(m)) = (self.socks[i].group, self.socks[i].member) {
                    let _ = self.groups[g].group.set_incoming_cpu(m, Some(*cpu));
                }
            }
            SockOpt::AttachReuseport(p) => {
                let r = self.attach(i, p);
                self.socks[i].attach_refusal = r.clone();
                return r;
            }
        }
        None
    }

    /// SO_ATTACH_REUSEPORT_CBPF/EBPF (`reuseport_attach_prog`,
    /// net/core/sock_reuseport.c, 4.5+): to the socket's group; a socket
    /// not yet hashed (before bind for UDP, before listen for TCP) with
    /// SO_REUSEPORT gets a group of its own, which it keeps until it joins
    /// another; without SO_REUSEPORT and no group, EINVAL.
    fn attach(&mut self, i: usize, p: &Program) -> Option<Refusal> {
        let s = &self.socks[i];
        let einval = |rule: RefusalRule, source: KernelSource| Refusal {
            errno: Errno::Einval,
            rule,
            source,
            with: None,
        };
        if let (Some(g), Some(_), true) = (s.group, s.member, s.listening) {
            let group = &mut self.groups[g].group;
            if let Some((rule, source)) = group.attach_refusal(p) {
                return Some(einval(rule, source));
            }
            let _ = group.attach_program(p.clone());
            return None;
        }
        if !s.spec.reuseport || s.listening {
            // reuseport_bpf.c test_filter_no_reuseport.
            return Some(einval(
                RefusalRule::ProgramNeedsReuseport,
                KernelSource::new(
                    "sk_reuseport_attach_filter",
                    "net/core/sock.c",
                    self.profile.release,
                ),
            ));
        }
        let spec = GroupSpec::new(s.spec.proto, 0, s.spec.addr, s.spec.port, self.keys);
        let own = ReuseportGroup::build_empty(self.profile, &spec);
        if let Some((rule, source)) = own.attach_refusal(p) {
            return Some(einval(rule, source));
        }
        self.socks[i].spec.program = Some(p.clone());
        self.socks[i].spec.program_before_bind = true;
        None
    }

    /// Changes socket `i`'s options, moving it to its new class in the
    /// bind bucket when it is bound.
    fn reclass(&mut self, i: usize, change: impl FnOnce(&mut Sock)) {
        let s = &self.socks[i];
        let key = (s.spec.proto, s.spec.port);
        let at = (s.bind_seq, i);
        let old = self.class_of(i, s.listening);
        change(&mut self.socks[i]);
        let s = &self.socks[i];
        if s.bound {
            let new = self.class_of(i, s.listening);
            if let Some(b) = self.bucket.get_mut(&key) {
                b.remove(at, &old);
                b.insert(at, new);
            }
        }
    }

    /// What the conflict rules read of socket `i`, listening or not, and
    /// where it sits in UDP's slots: its class in the bind bucket.
    fn class_of(&self, i: usize, listening: bool) -> Class {
        let s = &self.socks[i];
        Class::of(&s.spec, listening, s.slot_tail, s.closing)
    }

    /// Socket `i` leaves the listening lists.
    fn leave_lists(&mut self, i: usize) {
        for list in self
            .port_list
            .values_mut()
            .chain(self.addr_list.values_mut())
        {
            list.retain(|&x| x != i);
        }
    }

    /// `close()`: a TCP socket with an established connection sends its FIN
    /// and stays on its port (the active close, `__tcp_close` in
    /// net/ipv4/tcp.c): without SO_LINGER as an orphan in FIN_WAIT1, a full
    /// socket that keeps its owner's UID, until the peer acknowledges the
    /// FIN, which is after the calls that follow at once; with SO_LINGER
    /// and a timeout, close() waits in `sk_stream_wait_close` for that ACK
    /// (FIN_WAIT2), and `tcp_time_wait(sk, TCP_FIN_WAIT2, ..)` leaves a
    /// timewait socket, whose `sk_state` reads TCP_TIME_WAIT to the bind
    /// rules; with a zero timeout, `tcp_disconnect` sends a reset and the
    /// port is free. Every release. Any other socket leaves its lists, and
    /// its group with the last member moved into its slot.
    fn close_socket(&mut self, i: usize) {
        if self.socks[i].closed {
            return;
        }
        self.socks[i].closed = true;
        if self.socks[i].established && self.socks[i].bound {
            match self.socks[i].linger {
                None => {
                    self.reclass(i, |s| s.closing = true);
                    return;
                }
                Some(0) => {}
                Some(_) => {
                    self.reclass(i, |s| s.spec.state = SockState::TimeWait);
                    return;
                }
            }
        }
        let was_receiving = self.socks[i].listening;
        let in_group = self.socks[i].group;
        self.unbind(i);
        self.socks[i].listening = false;
        if !was_receiving && in_group.is_none() {
            return;
        }
        self.leave_lists(i);
        if let (Some(g), Some(m)) = (self.socks[i].group, self.socks[i].member) {
            let _ = self.groups[g].group.close(m);
        }
    }

    /// `bind()`: the conflict rules against every socket bound before on the
    /// same protocol and port (kernel-history.md §7; `inet_bind_conflict`,
    /// net/ipv4/inet_connection_sock.c 6.12; `udp_lib_lport_inuse`,
    /// net/ipv4/udp.c).
    fn bind_conflict(&self, i: usize) -> Option<Refusal> {
        let s = &self.socks[i].spec;
        // A socket that already owns a group (a program attached before
        // bind) cannot use the SO_REUSEPORT exemption from 4.6.
        let in_group = self.owns_group(i);
        if s.family == Family::Inet6 && s.v6only && as_v6(s.addr).to_ipv4_mapped().is_some() {
            return Some(Refusal {
                errno: Errno::Einval,
                rule: RefusalRule::V6onlyMapped,
                source: KernelSource::new(
                    "inet6_bind",
                    "net/ipv6/af_inet6.c",
                    self.profile.release,
                ),
                with: None,
            });
        }
        if s.proto == Proto::Tcp && self.tcp_fast_path(i, false) {
            return None;
        }
        let first_decides = s.proto == Proto::Udp && self.rules.udp_first_overlap_decides;
        let tail = self.rules.v6_reuseport_tail;
        let bucket = self.bucket.get(&(s.proto, s.port));
        // udp_lib_get_port: past ten sockets on the port slot, the hash2
        // slots of the address and of the wildcard, each walked on its own
        // (udp_lib_lport_inuse2); a wildcard bind only from the 2026 fix on
        // walks the port slot instead (inet_use_hash2_on_bind).
        let wildcard = bucket_addr(s.addr) == WILDCARD;
        let hash2 = s.proto == Proto::Udp
            && bucket.is_some_and(|b| b.count() > UDP_HASH2_THRESHOLD as usize)
            && (!wildcard || self.rules.udp_bind_wildcard_hash2);
        let walks: Vec<Vec<usize>> = match bucket {
            None => Vec::new(),
            Some(b) if hash2 => {
                let mut w = vec![b.hash2_order(s.addr, i, tail)];
                if !wildcard {
                    w.push(b.hash2_order(WILDCARD, i, tail));
                }
                w
            }
            Some(b) if first_decides => vec![b.slot_order(s.addr, i, tail)],
            Some(_) => vec![self.bound_on(s.proto, s.port, s.addr, i)],
        };
        'slots: for walk in walks {
            for j in walk {
                let o = &self.socks[j];
                let e = &o.spec;
                if !o.bound || !devices_compatible(s, e) || !overlaps(s, e) {
                    continue;
                }
                if s.proto == Proto::Tcp && self.mapped_any_unseen(s, e) {
                    continue;
                }
                if first_decides {
                    // udp_lib_lport_inuse (4.5+): the first socket without the
                    // SO_REUSEADDR exemption decides, and the walk of this slot
                    // ends there (udp_lib_lport_inuse2: the next hash2 slot is
                    // still walked).
                    if s.reuseaddr && e.reuseaddr {
                        continue;
                    }
                    if s.reuseport && e.reuseport && !in_group && e.uid == s.uid {
                        continue 'slots;
                    }
                }
                let allowed = match s.proto {
                    Proto::Tcp => {
                        let e_listening = self.socks[j].listening;
                        (s.reuseaddr && e.reuseaddr && !e_listening)
                            || (s.reuseport
                                && e.reuseport
                                && !in_group
                                && (e.state == SockState::TimeWait || e.uid == s.uid))
                    }
                    Proto::Udp => {
                        (s.reuseaddr && e.reuseaddr)
                            || (s.reuseport && e.reuseport && !in_group && e.uid == s.uid)
                    }
                };
                if !allowed {
                    // reuseport_bpf.c test_extra_filter for the group owner.
                    let rule = if in_group {
                        RefusalRule::OwnsGroupBeforeBind
                    } else {
                        conflict_rule(s, e, o.closing)
                    };
                    return Some(Refusal {
                        errno: Errno::Eaddrinuse,
                        rule,
                        source: self.conflict_source(s.proto),
                        with: Some(j),
                    });
                }
            }
        }
        None
    }

    /// One socket of each class bound to `proto`/`port` whose address can
    /// overlap `addr`, other than `except`, in bind order (see [`bucket`]).
    fn bound_on(&self, proto: Proto, port: u16, addr: IpAddr, except: usize) -> Vec<usize> {
        self.bucket
            .get(&(proto, port))
            .map_or_else(Vec::new, |b| b.candidates(addr, except))
    }

    /// Socket `i`'s `listening` changes: its class in the bind bucket too.
    fn set_listening(&mut self, i: usize, on: bool) {
        let s = &self.socks[i];
        if s.bound {
            let key = (s.spec.proto, s.spec.port);
            let old = self.class_of(i, s.listening);
            let new = self.class_of(i, on);
            let at = (s.bind_seq, i);
            if let Some(b) = self.bucket.get_mut(&key) {
                b.remove(at, &old);
                b.insert(at, new);
            }
        }
        self.socks[i].listening = on;
    }

    /// Socket `i` is no longer bound: out of its bind bucket.
    fn unbind(&mut self, i: usize) {
        let s = &self.socks[i];
        if s.bound && s.spec.proto == Proto::Tcp {
            if let Some(tb) = self.tcp_tb.get_mut(&s.spec.port) {
                tb.owners = tb.owners.saturating_sub(1);
                if tb.owners == 0 {
                    // inet_bind_bucket_destroy: the next owner starts afresh.
                    self.tcp_tb.remove(&s.spec.port);
                }
            }
        }
        let s = &self.socks[i];
        if s.bound {
            let key = (s.spec.proto, s.spec.port);
            let class = self.class_of(i, s.listening);
            let at = (s.bind_seq, i);
            if let Some(b) = self.bucket.get_mut(&key) {
                b.remove(at, &class);
            }
        }
        self.socks[i].bound = false;
    }

    /// `sk_reuseport_match(tb, sk)` (net/ipv4/inet_connection_sock.c): the
    /// bucket's recorded SO_REUSEPORT owner covers socket `i`.
    fn tcp_reuseport_match(&self, tb: &TbFast, i: usize) -> bool {
        let s = &self.socks[i].spec;
        let in_group = self.owns_group(i);
        if tb.fastreuseport == 0 || !s.reuseport || in_group || tb.fastuid != s.uid {
            return false;
        }
        if tb.fastreuseport == FASTREUSEPORT_ANY || !self.rules.tcp_fast_strict {
            return true;
        }
        let Some(fast) = tb.fast else {
            return true;
        };
        // The recorded address may be a wildcard; the binding socket's may
        // too before 5.7.
        rcv_saddr_equal(fast, Rcv::of(s), true, self.rules.tcp_fast_sk_wildcard)
    }

    /// The fast path of `inet_csk_get_port` (net/ipv4/inet_connection_sock.c,
    /// every release): with owners on the port, `tb->fastreuse` and a
    /// SO_REUSEADDR socket that is not listening, or `sk_reuseport_match`,
    /// succeed without the conflict scan. At `listen()` the socket counts
    /// as listening, so only the second applies.
    fn tcp_fast_path(&self, i: usize, listening: bool) -> bool {
        let s = &self.socks[i].spec;
        let Some(tb) = self.tcp_tb.get(&s.port) else {
            return false;
        };
        if tb.owners == 0 {
            return false;
        }
        let reuse = s.reuseaddr && !listening;
        (tb.fastreuse && reuse) || self.tcp_reuseport_match(tb, i)
    }

    /// `inet_csk_update_fastreuse` (4.14+; inline in `inet_csk_get_port`
    /// before): after a successful `bind()` or `listen()` of socket `i`.
    fn tcp_fast_update(&mut self, i: usize, listening: bool) {
        let s = &self.socks[i].spec;
        if s.proto != Proto::Tcp {
            return;
        }
        let port = s.port;
        let tb = self.tcp_tb.get(&port).copied().unwrap_or_default();
        let reuse = s.reuseaddr && !listening;
        // hlist_empty(&tb->owners): at listen() the socket is already one.
        let first = !listening && tb.owners == 0;
        let mut new = tb;
        let record = |t: &mut TbFast, mode: u8| {
            t.fastreuseport = mode;
            t.fastuid = s.uid;
            t.fast = Some(Rcv::of(s));
        };
        if first {
            new.fastreuse = reuse;
            if s.reuseport {
                record(&mut new, FASTREUSEPORT_ANY);
            } else {
                new.fastreuseport = 0;
            }
        } else {
            if !reuse {
                new.fastreuse = false;
            }
            if s.reuseport {
                if self.rules.tcp_fast_strict {
                    if !self.tcp_reuseport_match(&tb, i) {
                        record(&mut new, FASTREUSEPORT_STRICT);
                    }
                } else if tb.fastuid != s.uid {
                    new.fastreuseport = 0;
                }
            } else {
                new.fastreuseport = 0;
            }
        }
        if !listening {
            new.owners += 1;
        }
        self.tcp_tb.insert(port, new);
    }

    /// `listen()` of a bound TCP socket: the port is checked again, then
    /// the socket receives.
    fn listen_or_receive(&mut self, i: usize) -> Option<Refusal> {
        if self.socks[i].random_port.is_some() {
            // On its randomly drawn port, which no bound socket overlapped
            // when it was drawn: it listens there, alone.
            self.socks[i].listening = true;
            return None;
        }
        if self.socks[i].spec.proto == Proto::Tcp {
            if !self.tcp_fast_path(i, true) {
                if let Some(r) = self.listen_conflict(i) {
                    return Some(r);
                }
            }
            self.tcp_fast_update(i, true);
        }
        self.receive(i)
    }

    /// `bind(addr, 0)` or an autobind with no range in the call log: the
    /// kernel draws from its default range
    /// ([`LookupRules::default_port_range`]), from a random offset
    /// (`inet_csk_find_open_port`, net/ipv4/inet_connection_sock.c;
    /// `udp_lib_get_port`, net/ipv4/udp.c), a port no bound socket
    /// overlaps. The model marks the socket as on that unknown port. Each
    /// other socket holds at most one port of the range, so while fewer
    /// sockets hold one than the range has ports a free port exists; past
    /// that the model cannot tell, and says so ([`Host::run`] fails naming
    /// the call). A later bind that happens to pick the same port is not
    /// modelled (the chance is one in the range's size).
    fn draw_random_port(&mut self, i: usize) {
        let range = self.rules.default_port_range;
        let proto = self.socks[i].spec.proto;
        let ports = usize::from(range.high - range.low) + 1;
        let held = self
            .socks
            .iter()
            .enumerate()
            .filter(|&(j, o)| {
                j != i
                    && o.bound
                    && o.spec.proto == proto
                    && (o.random_port.is_some() || (range.low..=range.high).contains(&o.spec.port))
            })
            .count();
        if held >= ports {
            self.undecided_draw = true;
        }
        self.socks[i].spec.port = 0;
        self.socks[i].random_port = Some(range);
    }

    /// `bind(addr, 0)` over TCP: `inet_csk_find_open_port` tries each port of
    /// the range with the strict rule (no exemption at all), then, with
    /// `ip_autobind_reuse`, again letting two SO_REUSEADDR sockets share a
    /// port unless both also set SO_REUSEPORT with the same owner
    /// (net/ipv4/inet_connection_sock.c; reuseaddr_ports_exhausted.c).
    fn autobind(&mut self, i: usize, eph: Ephemeral) -> Option<Refusal> {
        let passes: &[bool] = if eph.autobind_reuse {
            &[false, true]
        } else {
            &[false]
        };
        for &relax in passes {
            for port in eph.low..=eph.high {
                self.socks[i].spec.port = port;
                let s = &self.socks[i].spec;
                let taken = self
                    .bound_on(s.proto, port, s.addr, i)
                    .into_iter()
                    .any(|j| {
                        let o = &self.socks[j];
                        let e = &o.spec;
                        if !o.bound || !devices_compatible(s, e) || !overlaps(s, e) {
                            return false;
                        }
                        if !relax {
                            return true;
                        }
                        if s.reuseaddr && e.reuseaddr && !o.listening {
                            s.reuseport
                                && e.reuseport
                                && (e.state == SockState::TimeWait || e.uid == s.uid)
                        } else {
                            true
                        }
                    });
                if !taken {
                    return None;
                }
            }
        }
        self.socks[i].spec.port = 0;
        let (low, high) = (eph.low, eph.high);
        Some(Refusal {
            errno: Errno::Eaddrinuse,
            rule: if eph.autobind_reuse {
                RefusalRule::EphemeralExhaustedAutobindReuse { low, high }
            } else {
                RefusalRule::EphemeralExhausted { low, high }
            },
            source: KernelSource::new(
                "inet_csk_find_open_port",
                "net/ipv4/inet_connection_sock.c",
                self.profile.release,
            ),
            with: None,
        })
    }

    /// `listen()`: `inet_csk_get_port` runs again with the socket in
    /// TCP_LISTEN, so the SO_REUSEADDR exemption no longer covers another
    /// listener (net/ipv4/inet_connection_sock.c `inet_csk_listen_start`).
    fn listen_conflict(&self, i: usize) -> Option<Refusal> {
        let s = &self.socks[i].spec;
        // A socket that owns a group (a program attached before listen)
        // has `sk_reuseport_cb` set: no SO_REUSEPORT exemption, from 4.6.
        let in_group = self.owns_group(i);
        for j in self.bound_on(Proto::Tcp, s.port, s.addr, i) {
            let o = &self.socks[j];
            let e = &o.spec;
            if j == i || !o.bound || !devices_compatible(s, e) || !overlaps(s, e) {
                continue;
            }
            if self.mapped_any_unseen(s, e) {
                continue;
            }
            let allowed = (s.reuseaddr && e.reuseaddr && !o.listening)
                || (s.reuseport
                    && e.reuseport
                    && !in_group
                    && (e.state == SockState::TimeWait || e.uid == s.uid));
            if !allowed {
                return Some(Refusal {
                    errno: Errno::Eaddrinuse,
                    rule: if in_group {
                        RefusalRule::OwnsGroupBeforeBind
                    } else {
                        conflict_rule(s, e, o.closing)
                    },
                    source: self.conflict_source(Proto::Tcp),
                    with: Some(j),
                });
            }
        }
        None
    }

    /// A TCP `bind()` or `listen()` of `s` that does not see `e`, an
    /// AF_INET6 socket on `::ffff:0.0.0.0` (`inet_csk_get_port` runs the
    /// same bhash2 check at both; see
    /// [`LookupRules::tcp_bind_mapped_any_unseen`]).
    fn mapped_any_unseen(&self, s: &SocketSpec, e: &SocketSpec) -> bool {
        self.rules.tcp_bind_mapped_any_unseen
            && mapped_specific(s)
            && e.family == Family::Inet6
            && as_v6(e.addr) == Ipv4Addr::UNSPECIFIED.to_ipv6_mapped()
    }

    /// Socket `i` owns a reuseport group of its own before joining one (a
    /// program attached while it was not hashed), so `sk_reuseport_cb` is
    /// set and, from 4.6, the SO_REUSEPORT exemption of `bind()` and
    /// `listen()` is denied it (`inet_bind_conflict`, `sk_reuseport_match`,
    /// net/ipv4/inet_connection_sock.c; `udp_lib_lport_inuse`).
    fn owns_group(&self, i: usize) -> bool {
        let s = &self.socks[i].spec;
        self.rules.bind_needs_no_group
            && s.reuseport
            && s.program.is_some()
            && s.program_before_bind
    }

    /// Where the bind-conflict rules live: `inet_bind_conflict` (TCP, also
    /// at `listen()`) or `udp_lib_lport_inuse`.
    fn conflict_source(&self, proto: Proto) -> KernelSource {
        let (func, file) = match proto {
            Proto::Tcp => ("inet_bind_conflict", "net/ipv4/inet_connection_sock.c"),
            Proto::Udp => ("udp_lib_lport_inuse", "net/ipv4/udp.c"),
        };
        KernelSource::new(func, file, self.profile.release)
    }

    /// The socket starts receiving: joins or makes its group and enters
    /// the lists. A TCP listener shut down and listening again goes back
    /// into its group (`reuseport_resurrect` from its closed tail, or a
    /// new join). The refusal is that of a full group.
    fn receive(&mut self, i: usize) -> Option<Refusal> {
        let keys = self.keys;
        let spec = self.socks[i].spec.clone();
        let rejoin = match (self.socks[i].group, self.socks[i].member) {
            (Some(g), Some(m)) => self.groups[g].group.relisten(m).is_ok(),
            _ => false,
        };
        if spec.reuseport && self.group_era(spec.proto) && !rejoin {
            let on_port = self.groups_on.get(&(spec.proto, spec.port, spec.addr));
            // inet_reuseport_add_sock / udp_reuseport_add_sock: a socket
            // on the list with the same attributes; its group.
            let found = if spec.proto == Proto::Udp && self.rules.udp_connect_leaves_group {
                self.udp_group_to_join(i, keys)
            } else {
                on_port.into_iter().flatten().copied().find(|&g| {
                    self.groups[g]
                        .members
                        .iter()
                        .any(|&m| self.socks[m].listening && same_group(&self.socks[m].spec, &spec))
                })
            };
            // A receiving socket with the same attributes that set
            // SO_REUSEPORT only after it was hashed has no group yet: the
            // joiner makes one for it first (`reuseport_add_sock` ->
            // `reuseport_alloc(sk2)`, net/core/sock_reuseport.c).
            let partner = match found {
                Some(_) => None,
                None => self
                    .addr_list
                    .get(&(spec.proto, bucket_addr(spec.addr), spec.port))
                    .into_iter()
                    .flatten()
                    .copied()
                    .find(|&j| {
                        j != i
                            && self.socks[j].group.is_none()
                            && same_group(&self.socks[j].spec, &spec)
                    }),
            };
            let g = match found {
                Some(g) => g,
                None => self.new_group(&spec, keys),
            };
            if let Some(j) = partner {
                let entry = &mut self.groups[g];
                if entry.group.join().is_ok() {
                    entry.members.push(j);
                    let sj = self.socks[j].spec.clone();
                    if let Some(cpu) = sj.incoming_cpu {
                        let _ = entry.group.set_incoming_cpu(0, Some(cpu));
                    }
                    if sj.state == SockState::Connected {
                        let _ = entry.group.connect(0);
                    }
                    self.socks[j].group = Some(g);
                    self.socks[j].member = Some(0);
                }
            }
            let entry = &mut self.groups[g];
            match entry.group.join() {
                Ok(_) => {
                    let member = entry.members.len() as u32;
                    entry.members.push(i);
                    if let Some(cpu) = spec.incoming_cpu {
                        let _ = entry.group.set_incoming_cpu(member, Some(cpu));
                    }
                    let mut left = false;
                    if spec.state == SockState::Connected {
                        let _ = entry.group.connect(member);
                        if self.rules.udp_connect_leaves_group {
                            // udp_lib_hash4: reuseport_detach_sock.
                            let _ = entry.group.close(member);
                            left = true;
                        }
                    }
                    if let Some(p) = &spec.program {
                        if let Some((rule, source)) = entry.group.attach_refusal(p) {
                            self.socks[i].attach_refusal = Some(Refusal {
                                errno: Errno::Einval,
                                rule,
                                source,
                                with: None,
                            });
                        } else {
                            let _ = entry.group.attach_program(p.clone());
                        }
                    }
                    if !left {
                        self.socks[i].group = Some(g);
                        self.socks[i].member = Some(member);
                    }
                }
                Err(_) => {
                    // reuseport_grow cannot double socks[] past U16_MAX.
                    let r = Refusal {
                        errno: if spec.proto == Proto::Tcp {
                            Errno::Enomem
                        } else {
                            Errno::Eaddrinuse
                        },
                        rule: RefusalRule::GroupFull,
                        source: KernelSource::new(
                            "reuseport_grow",
                            "net/core/sock_reuseport.c",
                            self.profile.release,
                        ),
                        with: None,
                    };
                    if spec.proto == Proto::Udp {
                        self.unbind(i);
                    }
                    return Some(r);
                }
            }
        }
        self.set_listening(i, true);
        let tail = self.rules.v6_reuseport_tail && spec.reuseport && spec.family == Family::Inet6;
        for list in [
            self.port_list.entry((spec.proto, spec.port)).or_default(),
            self.addr_list
                .entry((spec.proto, bucket_addr(spec.addr), spec.port))
                .or_default(),
        ] {
            if tail {
                list.push(i);
            } else {
                list.insert(0, i);
            }
        }
        None
    }

    /// A new, empty group for `spec`'s address; a TCP group migrates
    /// requests when the call log sets `tcp_migrate_req`.
    fn new_group(&mut self, spec: &SocketSpec, keys: Keys) -> usize {
        let gs = GroupSpec {
            v6only: spec.v6only,
            tcp_migrate_req: self.tcp_migrate_req && spec.proto == Proto::Tcp,
            ..GroupSpec::new(spec.proto, 0, spec.addr, spec.port, keys)
        };
        self.groups.push(GroupEntry {
            group: ReuseportGroup::build_empty(self.profile, &gs),
            members: Vec::new(),
        });
        let g = self.groups.len() - 1;
        self.groups_on
            .entry((spec.proto, spec.port, spec.addr))
            .or_default()
            .push(g);
        g
    }

    /// The group UDP socket `i` joins when connected sockets leave theirs
    /// (6.13+): that of the first socket it matches as
    /// `udp_reuseport_add_sock` walks the port slot from its head
    /// (net/ipv4/udp.c). `udp_lib_get_port` puts AF_INET6 SO_REUSEPORT
    /// sockets at the slot's tail (4.6, d894ba18d4e4: `v6_reuseport_tail`)
    /// and others at its head, so the walk meets AF_INET matches newest bind
    /// first and AF_INET6 ones (v4-mapped too) oldest first: an AF_INET6
    /// socket bound after a `connect()`ed one joins the earlier unconnected
    /// sockets' group, an AF_INET one the connected socket (recorded on
    /// 6.18.44; kernel_bind_rules.rs). A match outside any group gets a new
    /// one with itself as the first member (`reuseport_add_sock`,
    /// net/core/sock_reuseport.c).
    fn udp_group_to_join(&mut self, i: usize, keys: Keys) -> Option<usize> {
        let spec = self.socks[i].spec.clone();
        let mut matches: Vec<usize> = (0..self.socks.len())
            .filter(|&j| {
                let o = &self.socks[j];
                j != i && o.bound && !o.closed && o.listening && same_group(&o.spec, &spec)
            })
            .collect();
        // The slot's order: sockets hashed at its head, newest first, then
        // those at its tail, oldest first (each placed by its SO_REUSEPORT
        // when it bound).
        let tail = self.rules.v6_reuseport_tail;
        matches.sort_by_key(|&j| {
            let o = &self.socks[j];
            if tail && o.slot_tail {
                (1, o.bind_seq)
            } else {
                (0, u64::MAX - o.bind_seq)
            }
        });
        let j = matches.first().copied()?;
        if let Some(g) = self.socks[j].group {
            return Some(g);
        }
        let g = self.new_group(&self.socks[j].spec.clone(), keys);
        let entry = &mut self.groups[g];
        let joined = if self.socks[j].spec.state == SockState::Connected {
            entry.group.join_connected()
        } else {
            entry.group.join()
        };
        if joined.is_err() {
            return None;
        }
        if let Some(cpu) = self.socks[j].spec.incoming_cpu {
            let _ = entry.group.set_incoming_cpu(0, Some(cpu));
        }
        entry.members.push(j);
        self.socks[j].group = Some(g);
        self.socks[j].member = Some(0);
        Some(g)
    }

    fn group_era(&self, proto: Proto) -> bool {
        let scan = match proto {
            Proto::Tcp => self.rules.tcp_scan,
            Proto::Udp => self.rules.udp_scan,
        };
        scan != ScanRule::Reservoir
    }

    /// Each call's answer, in call order: `None` for ok, else the errno
    /// and the rule.
    pub fn answers(&self) -> &[Option<Refusal>] {
        &self.answers
    }

    /// Each socket's last `bind()`/`listen()`/attach answer and where it is now.
    pub fn results(&self) -> Vec<CallResult> {
        self.socks
            .iter()
            .enumerate()
            .map(|(socket, s)| CallResult {
                socket,
                family: s.spec.family,
                proto: s.spec.proto,
                addr: s.spec.addr,
                port: s.spec.port,
                random_port: s.random_port,
                bind: s.bind_refusal.clone(),
                listen: s.listen_refusal.clone(),
                attach: s.attach_refusal.clone(),
                receiving: s.listening,
                closed: s.closed,
                group: s.group,
                member: s.member,
            })
            .collect()
    }

    /// The lookup rules in force.
    pub fn rules(&self) -> LookupRules {
        self.rules
    }

    /// The socket index of each member of group `g`.
    pub fn group_members(&self, g: usize) -> Option<&[usize]> {
        self.groups.get(g).map(|e| e.members.as_slice())
    }

    /// `compute_score` of socket `i` for the packet, against `daddr` (the
    /// pass's address), per era and family (kernel-history.md §4.1, §4.4,
    /// §5.1, §5.4; net/ipv4/inet_hashtables.c, net/ipv6/inet6_hashtables.c,
    /// net/ipv4/udp.c, net/ipv6/udp.c).
    fn score(&self, i: usize, p: &Packet, daddr: IpAddr) -> i32 {
        let s = &self.socks[i].spec;
        if s.port != p.tuple.dport || s.proto != p.proto {
            return -1;
        }
        let dev_ok = s
            .device
            .as_deref()
            .is_none_or(|d| d == p.device.as_deref().unwrap_or("lo"));
        let cpu = (self.rules.cpu_bonus && s.incoming_cpu == Some(p.ctx.cpu)) as i32;
        let v6_packet = p.tuple.daddr.is_ipv6();
        let exact = self.rules.score != ScoreRule::Classic;
        let bound_dev = s.device.is_some();
        // The socket's address as this lookup sees it.
        let addr_match: Option<bool> = if v6_packet {
            if s.family != Family::Inet6 {
                return -1;
            }
            let mine = as_v6(s.addr);
            let want = as_v6(daddr);
            Some(mine == want || (!exact && mine.is_unspecified()))
        } else {
            if s.family == Family::Inet6 && s.v6only {
                return -1;
            }
            match v4_view(s) {
                None => return -1,
                Some(mine) => {
                    let want = match daddr {
                        IpAddr::V4(d) => d,
                        IpAddr::V6(_) => return -1,
                    };
                    Some(mine == want || (!exact && mine.is_unspecified()))
                }
            }
        };
        if addr_match != Some(true) || !dev_ok {
            return -1;
        }
        // A bound address as the packet's family sees it: `::ffff:0.0.0.0`
        // is IPv4's wildcard (`sk_rcv_saddr` 0), not a specific address.
        let specific = if v6_packet {
            !as_v6(s.addr).is_unspecified()
        } else {
            v4_view(s).is_some_and(|a| !a.is_unspecified())
        };
        let af_inet = s.family == Family::Inet;
        match p.proto {
            Proto::Tcp => {
                if v6_packet {
                    match self.rules.score {
                        ScoreRule::Classic => 1 + specific as i32 + bound_dev as i32 + cpu,
                        ScoreRule::Exact => 1 + cpu,
                        ScoreRule::ExactPreferDevice => (if bound_dev { 2 } else { 1 }) + cpu,
                    }
                } else {
                    match self.rules.score {
                        ScoreRule::Classic => {
                            (if af_inet { 2 } else { 1 })
                                + 4 * specific as i32
                                + 4 * bound_dev as i32
                                + cpu
                        }
                        ScoreRule::Exact => (if af_inet { 2 } else { 1 }) + cpu,
                        ScoreRule::ExactPreferDevice => {
                            (if bound_dev { 2 } else { 1 }) + af_inet as i32 + cpu
                        }
                    }
                }
            }
            Proto::Udp => {
                // Connected sockets must match the packet's source.
                let (conn, peer_ok) = match (s.state, s.peer) {
                    (SockState::Connected, Some(peer)) => (
                        true,
                        peer.ip() == p.tuple.saddr && peer.port() == p.tuple.sport,
                    ),
                    _ => (false, true),
                };
                if !peer_ok {
                    return -1;
                }
                if v6_packet {
                    // net/ipv6/udp.c: base 0; +1 for the peer's port, +1 for its address.
                    let dev = match self.rules.score {
                        ScoreRule::Classic | ScoreRule::ExactPreferDevice => bound_dev as i32,
                        ScoreRule::Exact => 1,
                    };
                    2 * conn as i32 + (specific && !exact) as i32 + dev + cpu
                } else {
                    let dev = match self.rules.score {
                        ScoreRule::Classic | ScoreRule::ExactPreferDevice => 4 * bound_dev as i32,
                        ScoreRule::Exact => 4,
                    };
                    (if af_inet { 2 } else { 1 })
                        + 8 * conn as i32
                        + 4 * (specific && !exact) as i32
                        + dev
                        + cpu
                }
            }
        }
    }

    /// Looks up one packet.
    pub fn lookup(&self, p: &Packet) -> LookupExplain {
        let mut x = LookupExplain {
            profile: self.profile.release,
            packet: p.clone(),
            sk_lookup: None,
            tables: Vec::new(),
            group: None,
            socket: None,
            reason: None,
            notes: vec![Note::TablesHoldOnlyThisPort],
        };
        let t = p.tuple;
        let zero = unspecified_like(t.daddr);
        match p.proto {
            Proto::Tcp => {
                if self.run_sk_lookup(p, &mut x) {
                    return x;
                }
                match self.rules.tcp_tables {
                    TcpTables::Lhash2 => {
                        if self.walk_addr(p, t.daddr, t.daddr, &mut x) {
                            return x;
                        }
                        self.walk_addr(p, zero, zero, &mut x);
                    }
                    TcpTables::PortList => {
                        self.walk_port(p, &mut x);
                    }
                    TcpTables::PortListOrLhash2 => {
                        let count = self.port_list.get(&(p.proto, t.dport)).map_or(0, Vec::len);
                        if count <= 10 {
                            x.notes.push(Note::PortListWalked {
                                count: count as u32,
                            });
                            self.walk_port(p, &mut x);
                        } else {
                            x.notes.push(Note::Lhash2Walked {
                                count: count as u32,
                            });
                            if !self.walk_addr(p, t.daddr, t.daddr, &mut x) {
                                // 4.16–4.20 pass the real daddr to the wildcard bucket scan too.
                                self.walk_addr(p, zero, t.daddr, &mut x);
                            }
                        }
                    }
                }
            }
            Proto::Udp => match self.rules.udp_tables {
                UdpTables::Hash2 if self.hash4(p, &mut x) => {}
                UdpTables::Hash2 => {
                    let found = self.walk_addr(p, t.daddr, t.daddr, &mut x);
                    let connected = x
                        .socket
                        .is_some_and(|s| self.socks[s].spec.state == SockState::Connected);
                    if found && connected {
                        return x;
                    }
                    if self.run_sk_lookup(p, &mut x) {
                        return x;
                    }
                    if found || x.socket.is_some() {
                        return x;
                    }
                    self.walk_addr(p, zero, zero, &mut x);
                }
                UdpTables::PortSlotOrHash2 => {
                    let count = self.port_list.get(&(p.proto, t.dport)).map_or(0, Vec::len);
                    if count > 10 {
                        x.notes.push(Note::Hash2Walked {
                            count: count as u32,
                        });
                        if !self.walk_addr(p, t.daddr, t.daddr, &mut x) {
                            let wild_laddr = match self.profile.udp_wildcard_laddr {
                                crate::profile::WildcardLaddr::Daddr => t.daddr,
                                _ => zero,
                            };
                            self.walk_addr_with(p, zero, zero, wild_laddr, &mut x);
                        }
                    } else {
                        self.walk_port(p, &mut x);
                    }
                }
            },
        }
        if x.socket.is_none() && x.reason.is_none() {
            x.reason = Some(match p.proto {
                Proto::Tcp => LookupReason::NoListener,
                Proto::Udp => LookupReason::NoSocket,
            });
        }
        x
    }

    /// The 4-tuple hash of connected UDP sockets (6.13+), looked up before
    /// hash2: a socket connected to the packet's source, bound to its
    /// destination, receives it (`udp4_lib_lookup4`, net/ipv4/udp.c;
    /// `udp6_lib_lookup4`, net/ipv6/udp.c). Returns true when one matched.
    fn hash4(&self, p: &Packet, x: &mut LookupExplain) -> bool {
        if !self.rules.udp_connect_leaves_group {
            return false;
        }
        let t = p.tuple;
        let found = self.port_list.get(&(Proto::Udp, t.dport)).and_then(|l| {
            l.iter().copied().find(|&i| {
                let s = &self.socks[i].spec;
                s.state == SockState::Connected
                    && s.peer == Some(SocketAddr::new(t.saddr, t.sport))
                    && as_v6(s.addr) == as_v6(t.daddr)
                    && self.score(i, p, t.daddr) >= 0
            })
        });
        if let Some(i) = found {
            x.socket = Some(i);
            x.reason = Some(LookupReason::BestScore { socket: i });
        }
        found.is_some()
    }

    /// BPF sk_lookup (5.9+). Returns true when it decided.
    fn run_sk_lookup(&self, p: &Packet, x: &mut LookupExplain) -> bool {
        let Some(prog) = &self.sk_lookup else {
            return false;
        };
        match prog {
            SkLookup::Pass => {
                x.sk_lookup = Some(SkLookupOutcome::Passed);
                false
            }
            SkLookup::Drop => {
                x.sk_lookup = Some(SkLookupOutcome::Dropped);
                x.reason = Some(LookupReason::SkLookupDropped);
                true
            }
            SkLookup::Assign {
                socket,
                no_reuseport,
            } => {
                let s = *socket;
                let sock = &self.socks[s];
                if !sock.listening || sock.spec.proto != p.proto {
                    x.sk_lookup = Some(SkLookupOutcome::Unusable { socket: s });
                    return false;
                }
                let source = KernelSource::new(
                    "inet_lookup_run_sk_lookup",
                    "net/ipv4/inet_hashtables.c",
                    self.profile.release,
                );
                x.sk_lookup = Some(if *no_reuseport {
                    SkLookupOutcome::AssignedNoReuseport { socket: s, source }
                } else {
                    SkLookupOutcome::Assigned { socket: s, source }
                });
                if !no_reuseport && sock.spec.reuseport {
                    if let Some(g) = sock.group {
                        // The reuseport hash uses the real destination here.
                        if let Some((sk, pick)) =
                            self.group_select(g, p, p.tuple.daddr, LaddrReason::SkLookupReselect)
                        {
                            x.group = Some(pick);
                            if let Some(sk) = sk {
                                x.socket = Some(sk);
                                x.reason = Some(LookupReason::SkLookupGroupPicked {
                                    assigned: s,
                                    socket: sk,
                                });
                                return true;
                            }
                        }
                    }
                }
                x.socket = Some(s);
                x.reason = Some(LookupReason::SkLookupAssigned { socket: s });
                true
            }
        }
    }

    fn walk_port(&self, p: &Packet, x: &mut LookupExplain) -> bool {
        let chain = self
            .port_list
            .get(&(p.proto, p.tuple.dport))
            .map_or(&[][..], Vec::as_slice);
        let port = p.tuple.dport;
        // The port-keyed tables of 3.9 – 4.20.
        let (table, func, file) = match p.proto {
            Proto::Tcp => (
                TableName::ListeningHash { port },
                "__inet_lookup_listener",
                "net/ipv4/inet_hashtables.c",
            ),
            Proto::Udp => (
                TableName::UdpPortSlot { port },
                "__udp4_lib_lookup",
                "net/ipv4/udp.c",
            ),
        };
        let source = KernelSource::new(func, file, self.profile.release);
        self.scan(p, chain, p.tuple.daddr, p.tuple.daddr, table, source, x)
    }

    fn walk_addr(&self, p: &Packet, bucket: IpAddr, daddr: IpAddr, x: &mut LookupExplain) -> bool {
        self.walk_addr_with(p, bucket, daddr, daddr, x)
    }

    fn walk_addr_with(
        &self,
        p: &Packet,
        bucket: IpAddr,
        daddr: IpAddr,
        laddr: IpAddr,
        x: &mut LookupExplain,
    ) -> bool {
        let chain = self
            .addr_list
            .get(&(p.proto, bucket_addr(bucket), p.tuple.dport))
            .map_or(&[][..], Vec::as_slice);
        let (addr, port) = (bucket.to_string(), p.tuple.dport);
        let (func, file) = match (p.proto, p.tuple.daddr.is_ipv6()) {
            (Proto::Tcp, false) => ("inet_lhash2_lookup", "net/ipv4/inet_hashtables.c"),
            (Proto::Tcp, true) => ("inet6_lhash2_lookup", "net/ipv6/inet6_hashtables.c"),
            (Proto::Udp, false) => ("udp4_lib_lookup2", "net/ipv4/udp.c"),
            (Proto::Udp, true) => ("udp6_lib_lookup2", "net/ipv6/udp.c"),
        };
        let table = match p.proto {
            Proto::Tcp => TableName::Lhash2 { addr, port },
            Proto::Udp => TableName::UdpHash2 { addr, port },
        };
        let source = KernelSource::new(func, file, self.profile.release);
        self.scan(p, chain, daddr, laddr, table, source, x)
    }

    /// One list walk with the era's scan rule. Returns true when it found a socket.
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        p: &Packet,
        chain: &[usize],
        daddr: IpAddr,
        laddr: IpAddr,
        table: TableName,
        source: KernelSource,
        x: &mut LookupExplain,
    ) -> bool {
        let rule = match p.proto {
            Proto::Tcp => self.rules.tcp_scan,
            Proto::Udp => self.rules.udp_scan,
        };
        let udp_v6 = p.proto == Proto::Udp && p.tuple.daddr.is_ipv6();
        let mut hi: i32 = if udp_v6 { -1 } else { 0 };
        let mut result: Option<usize> = None;
        let mut cands = Vec::new();
        let mut matches = 0u32;
        let mut phash = 0u32;
        let mut reservoir_on = false;
        let h = self.packet_hash(p, laddr);
        let mut done = false;
        for &i in chain {
            let s = self.score(i, p, daddr);
            let sock = &self.socks[i];
            if done {
                break;
            }
            if s > hi {
                hi = s;
                // UDP from 5.4 (acdcecc61285): a connected socket is a result
                // of its own, never a group entry; before, `sk_reuseport`
                // alone sent it to its group (net/ipv4/udp.c udp4_lib_lookup2).
                let connected = self.rules.udp_has_conns && sock.spec.state == SockState::Connected;
                if rule != ScanRule::Reservoir && sock.spec.reuseport && !connected {
                    if let Some(g) = sock.group {
                        let why = LaddrReason::LookupPass {
                            socket: i,
                            score: s,
                        };
                        match self.group_select(g, p, laddr, why) {
                            Some((Some(chosen), pick)) => {
                                let has_conns = p.proto == Proto::Udp
                                    && self.rules.udp_has_conns
                                    && pick.explain.group.has_conns;
                                x.group = Some(pick);
                                if has_conns {
                                    cands.push(Candidate {
                                        socket: i,
                                        score: s,
                                        outcome: CandidateOutcome::GroupChoseScanGoesOn { chosen },
                                    });
                                    result = Some(chosen);
                                    if self.rules.udp_rescore {
                                        // f0ea27e7bfe1: the chosen member is scored; only a higher score raises the bar.
                                        hi = hi.max(self.score(chosen, p, daddr));
                                    }
                                    continue;
                                }
                                cands.push(Candidate {
                                    socket: i,
                                    score: s,
                                    outcome: CandidateOutcome::GroupChose { chosen },
                                });
                                x.socket = Some(chosen);
                                x.reason = Some(LookupReason::GroupPicked {
                                    first: i,
                                    socket: chosen,
                                });
                                done = true;
                                continue;
                            }
                            Some((None, pick)) => {
                                let dropped = pick.explain.fallback == Some(Fallback::SkDrop);
                                x.group = Some(pick);
                                if dropped {
                                    cands.push(Candidate {
                                        socket: i,
                                        score: s,
                                        outcome: CandidateOutcome::GroupDropped,
                                    });
                                    x.reason = Some(LookupReason::GroupProgramDropped);
                                    x.tables.push(TableWalk {
                                        table,
                                        source,
                                        daddr: daddr.to_string(),
                                        candidates: cands,
                                    });
                                    return true;
                                }
                                cands.push(Candidate {
                                    socket: i,
                                    score: s,
                                    outcome: CandidateOutcome::GroupReturnedNone,
                                });
                            }
                            None => {}
                        }
                    }
                }
                if rule != ScanRule::GroupThenFirst && sock.spec.reuseport {
                    reservoir_on = true;
                    matches = 1;
                    phash = h;
                } else {
                    reservoir_on = false;
                }
                result = Some(i);
                cands.push(Candidate {
                    socket: i,
                    score: s,
                    outcome: CandidateOutcome::Kept,
                });
            } else if s == hi && s >= 0 && reservoir_on {
                matches += 1;
                let sc = reciprocal_scale(phash, matches);
                let took = sc == 0;
                if took {
                    result = Some(i);
                }
                cands.push(Candidate {
                    socket: i,
                    score: s,
                    outcome: if took {
                        CandidateOutcome::ReservoirTaken {
                            phash: hex(phash),
                            matches,
                        }
                    } else {
                        CandidateOutcome::ReservoirNotTaken {
                            phash: hex(phash),
                            matches,
                            scaled: sc,
                        }
                    },
                });
                phash = next_pseudo_random32(phash);
            } else {
                cands.push(Candidate {
                    socket: i,
                    score: s,
                    outcome: if s < 0 {
                        CandidateOutcome::NoMatch
                    } else {
                        CandidateOutcome::DoesNotBeat { best: hi }
                    },
                });
            }
        }
        x.tables.push(TableWalk {
            table,
            source,
            daddr: daddr.to_string(),
            candidates: cands,
        });
        if done {
            return true;
        }
        if let Some(r) = result {
            x.socket = Some(r);
            if x.reason.is_none() || x.group.is_some() {
                x.reason = Some(LookupReason::BestScore { socket: r });
            }
            return true;
        }
        false
    }

    /// The reuseport hash of the packet with the given local address, for
    /// the reservoir (the group computes its own in its record).
    fn packet_hash(&self, p: &Packet, laddr: IpAddr) -> u32 {
        let t = p.tuple;
        hash::reuseport_hash(
            self.profile,
            p.proto,
            laddr,
            t.dport,
            t.saddr,
            t.sport,
            &self.keys,
        )
        .unwrap_or(0)
    }

    /// Asks group `g` to pick with the pass's local address.
    fn group_select(
        &self,
        g: usize,
        p: &Packet,
        laddr: IpAddr,
        why: LaddrReason,
    ) -> Option<(Option<usize>, GroupPick)> {
        let e = &self.groups[g];
        let (answer, explain) = e
            .group
            .select_for_lookup(&p.tuple, &p.ctx, laddr, why)
            .ok()?;
        let sk = match answer {
            GroupAnswer::Member(m) => Some(e.members[m as usize]),
            GroupAnswer::Null | GroupAnswer::Drop => None,
        };
        Some((
            sk,
            GroupPick {
                group: g,
                members: e.members.clone(),
                explain,
            },
        ))
    }
}

/// An AF_INET6 socket on a v4-mapped address other than `::ffff:0.0.0.0`.
fn mapped_specific(s: &SocketSpec) -> bool {
    s.family == Family::Inet6
        && as_v6(s.addr)
            .to_ipv4_mapped()
            .is_some_and(|a| !a.is_unspecified())
}
