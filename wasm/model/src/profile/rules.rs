//! The lookup and bind rules of each profile, as data (kernel-history.md
//! §4, §5, §7 and the era table §11). The values of each era are written in
//! the era table, [`crate::profile::PROFILES`], as a field of each profile;
//! [`crate::lookup`] walks them (and re-exports this module as
//! `lookup::rules`).

use serde::{Deserialize, Serialize};

use super::Profile;

/// Which listener tables a TCP lookup walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum TcpTables {
    /// The port-keyed `listening_hash[32]` only (3.9 – 4.15,
    /// `net/ipv4/inet_hashtables.c` `__inet_lookup_listener`).
    PortList,
    /// `lhash2` by address and port when the port bucket holds more than 10
    /// sockets, the port list otherwise (4.16 – 4.20, commit 61b7c691c731).
    PortListOrLhash2,
    /// `lhash2` only: the destination address, then the wildcard
    /// (5.0+, commit d9fbc7f6431f).
    Lhash2,
}

/// Which tables a UDP lookup walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum UdpTables {
    /// The port slot, or `hash2` by address and port when the slot holds
    /// more than 10 sockets (3.9 – 4.20, `net/ipv4/udp.c` `__udp4_lib_lookup`).
    PortSlotOrHash2,
    /// `hash2` only: the destination address, then the wildcard (5.0+).
    Hash2,
}

/// What the scan does when a socket beats the best score so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum ScanRule {
    /// No groups: reservoir sampling over equal top scores (TCP ≤ 4.5, UDP ≤ 4.4).
    Reservoir,
    /// The group picks and the lookup returns; if it returns nothing the
    /// reservoir goes on (TCP 4.6 – 4.15, UDP 4.5 – 4.15).
    GroupThenReservoir,
    /// The group picks and the lookup returns; otherwise the socket is kept
    /// and the scan goes on for a strictly higher score (4.16+).
    GroupThenFirst,
}

/// `compute_score` variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum ScoreRule {
    /// Before 5.0: a wildcard socket matches any address; a bound address
    /// (+4 IPv4, +1 IPv6) and a bound device (+4 / +1) add to the score.
    Classic,
    /// 5.0 – 5.14: the address must equal the pass's address exactly; TCP:
    /// family only (2/1); UDP: +4 whenever the device matches (6da5b0f027a8).
    Exact,
    /// 5.15+: a bound device scores 2 (TCP) or +4 (UDP) over an unbound one
    /// (8d6c414cd2fb, backported to 5.4.y and 5.10.y).
    ExactPreferDevice,
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

/// The rules of one profile that govern lookups and binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct LookupRules {
    /// TCP tables (`net/ipv4/inet_hashtables.c`: port list to 4.15, lhash2
    /// beside it 4.16 – 4.20, lhash2 only from 5.0).
    pub tcp_tables: TcpTables,
    /// UDP tables (`net/ipv4/udp.c`: port slot or hash2 to 4.20, hash2
    /// only from 5.0).
    pub udp_tables: UdpTables,
    /// TCP scan (`net/ipv4/inet_hashtables.c`: reservoir to 4.5, group
    /// then reservoir 4.6 – 4.15, group then first from 4.16).
    pub tcp_scan: ScanRule,
    /// UDP scan (`net/ipv4/udp.c`: reservoir to 4.4, group then reservoir
    /// 4.5 – 4.15, group then first from 4.16).
    pub udp_scan: ScanRule,
    /// `compute_score` (`net/ipv4/inet_hashtables.c`, `net/ipv4/udp.c`:
    /// classic to 4.20, exact from 5.0, device preference from 5.15).
    pub score: ScoreRule,
    /// IPv6 reuseport sockets go to the tail of their lists (4.6,
    /// d894ba18d4e4, `net/ipv4/inet_hashtables.c`); everything else to the
    /// head.
    pub v6_reuseport_tail: bool,
    /// `compute_score` adds 1 for `sk_incoming_cpu == this CPU` (4.4,
    /// commit 70da268b569d, `net/ipv4/inet_hashtables.c`, `net/ipv4/udp.c`);
    /// it only changes a pick in the reservoir era.
    pub cpu_bonus: bool,
    /// Connected UDP sockets in groups (acdcecc61285, mainline 5.4,
    /// `net/ipv4/udp.c` `udp4_lib_lookup2`): a connected member is scored as
    /// itself and never enters its group, and a group with connected members
    /// (`has_conns`) does not end the scan; the group's pick is kept as the
    /// result meanwhile (efc6b6f6c311, mainline 5.8; stable 5.4.55,
    /// 4.19.136). Off, a connected SO_REUSEPORT socket enters its group like
    /// any other (kernel.org 5.0.21, 4.19.0).
    pub udp_has_conns: bool,
    /// The member a UDP group returned is re-scored (f0ea27e7bfe1, 6.5,
    /// `net/ipv4/udp.c`; the 5.10 and 6.1 profiles, read from late stable
    /// trees, carry it).
    pub udp_rescore: bool,
    /// `connect()` on a UDP socket with a specific address puts it in the
    /// 4-tuple hash and takes it out of its reuseport group, which keeps
    /// `has_conns`; a later socket that matches it makes a new group with it
    /// (`udp_lib_hash4`, net/ipv4/udp.c, 6.13: "udp: Add 4-tuple hash for
    /// connected sockets"; `udp_reuseport_add_sock` joins the first match
    /// in the port slot, the most recently bound).
    pub udp_connect_leaves_group: bool,
    /// BPF `sk_lookup` runs before the tables (5.9, 1559b4aa1db4,
    /// `net/ipv4/inet_hashtables.c`, `net/ipv4/udp.c`).
    pub sk_lookup: bool,
    /// A socket already in a group cannot use the SO_REUSEPORT bind
    /// exemption (4.6; `inet_csk_bind_conflict` in
    /// `net/ipv4/inet_connection_sock.c`, `udp_lib_lport_inuse` in
    /// `net/ipv4/udp.c`).
    pub bind_needs_no_group: bool,
    /// TCP bind bucket: a SO_REUSEPORT socket that joins a bucket whose
    /// fast path does not cover it records its own address there
    /// (`FASTREUSEPORT_STRICT`), and later SO_REUSEPORT sockets whose
    /// address matches it skip the conflict scan (637bc8bbe6c0, 4.14,
    /// `inet_csk_update_fastreuse`/`sk_reuseport_match`,
    /// net/ipv4/inet_connection_sock.c). Before it, the fast path held only
    /// while every owner was SO_REUSEPORT with one UID, where it answers as
    /// the scan does.
    pub tcp_fast_strict: bool,
    /// `sk_reuseport_match` lets the binding socket's own wildcard match
    /// the recorded address too (4.14 – 5.6); from 5.7 only the recorded
    /// address may be a wildcard ("net: inet_csk: Fix so_reuseport
    /// bind-address cache in tb->fast*", Martin KaFai Lau, May 2020, a fix
    /// with a Fixes: tag; the 5.4 profile follows the late 5.4.y tree,
    /// taken to carry it, which is not checked against that tree).
    pub tcp_fast_sk_wildcard: bool,
    /// UDP `bind()`: the first earlier socket on the port slot that
    /// overlaps without the SO_REUSEADDR exemption decides; if it grants
    /// the SO_REUSEPORT exemption the walk stops there and the bind
    /// succeeds, whatever sockets come after it (`udp_lib_lport_inuse`,
    /// net/ipv4/udp.c, from e32ea7e74727, 4.5). Before, any conflicting
    /// socket refuses.
    pub udp_first_overlap_decides: bool,
    /// UDP `bind()` to a port whose slot holds more than ten sockets checks
    /// `hash2` instead of the port slot (`udp_lib_get_port`, net/ipv4/udp.c,
    /// every release): the slot of the socket's own address, then, unless it
    /// is the wildcard, the wildcard's slot, each walked on its own. This
    /// field: a wildcard bind takes that path too, so only the wildcard's
    /// slot is looked at and sockets on specific addresses are missed.
    /// Fixed by "udp: Fix wildcard bind conflict check when using hash2"
    /// (`inet_use_hash2_on_bind`; 2026, stable 6.1.168 and 6.12.80; on
    /// 6.18.44 as measured), after which a wildcard bind walks the port slot.
    pub udp_bind_wildcard_hash2: bool,
    /// TCP bind of an AF_INET6 socket to a specific v4-mapped address does
    /// not see AF_INET6 sockets bound to `::ffff:0.0.0.0`: the bind takes
    /// the bhash2 path (`inet_use_hash2_on_bind`), and the wildcard check
    /// (`inet_bhash2_addr_any_conflict` -> `inet_bind2_bucket_match_addr_any`,
    /// net/ipv4/inet_hashtables.c) matches an AF_INET6 bucket only when its
    /// address is `::`. Debian 6.1.192's source; measured in Debian 6.1.176
    /// booted under QEMU (verify --kernels --layouts). Mainline fixed it when
    /// the bucket learnt its address type (6.5, `tb->addr_type`), and 6.12
    /// matches `IPV6_ADDR_MAPPED` buckets with address 0.
    pub tcp_bind_mapped_any_unseen: bool,
    /// The `ip_local_port_range` and `ip_autobind_reuse` a new network
    /// namespace starts with, which `bind(addr, 0)` and the autobind of
    /// `listen()`, `connect()` and `sendmsg()` draw from when the call log
    /// gives no range: 32768–60999 and 0 (`inet_init_net`,
    /// net/ipv4/af_inet.c, 6.18; `ip_autobind_reuse` from 5.9 defaults to
    /// 0), 32768–61000 before 4.6 (07f4c90062f8 made the count even).
    pub default_port_range: Ephemeral,
}

impl LookupRules {
    /// The lookup and bind rules of a profile: its `lookup` field, where the
    /// era table (`crate::profile::PROFILES`) writes them.
    pub fn of(p: &Profile) -> LookupRules {
        p.lookup
    }
}
