//! The lookup's public records: the sockets of a [`Layout`], the packet,
//! and the answers ([`CallResult`], [`LookupExplain`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::explain::Explain;
use crate::hash::Keys;
use crate::message::{
    CandidateOutcome, KernelSource, LookupReason, Note, Refusal, SkLookupOutcome, TableName,
};
use crate::profile::rules::Ephemeral;
use crate::profile::Release;
use crate::reuseport::{PacketCtx, Program};
use crate::tuple::{Proto, Tuple};

/// What the kernel answered one call: `None` for success, or its refusal
/// (errno, rule and source).
pub type Answer = Option<Refusal>;

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
    /// ([`crate::profile::rules::LookupRules::default_port_range`]).
    /// `inet_csk_find_open_port`
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

/// The wildcard of a family: `0.0.0.0` or `::`.
pub(super) fn unspecified_of(family: Family) -> IpAddr {
    match family {
        Family::Inet => Ipv4Addr::UNSPECIFIED.into(),
        Family::Inet6 => Ipv6Addr::UNSPECIFIED.into(),
    }
}

/// An address as IPv6: a v4 one as `::ffff:a.b.c.d`.
pub(super) fn as_v6(a: IpAddr) -> Ipv6Addr {
    match a {
        IpAddr::V6(v) => v,
        IpAddr::V4(v) => v.to_ipv6_mapped(),
    }
}

/// The `sock_reuseport` join rule (`inet_reuseport_add_sock`,
/// `udp_reuseport_add_sock`; kernel-history.md §6.1): same family,
/// `ipv6only`, device, port, SO_REUSEPORT, UID, and exactly the same address.
pub(super) fn same_group(a: &SocketSpec, b: &SocketSpec) -> bool {
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
