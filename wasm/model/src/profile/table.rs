//! The era table: one row per kernel series, oldest first, each the row
//! before it with what changed (see [`super`] and `tests/eras.md`).

use super::rules::{Ephemeral, LookupRules, ScanRule, ScoreRule, TcpTables, UdpTables};
use super::{
    BpfFallback, EraNote, GroupScan, Profile, Release, Selection, V4Form, V6Form, WildcardLaddr,
};
use crate::jhash::JhashForm;

/// Shorthand for a release in the table.
pub const fn r(major: u16, minor: u16) -> Release {
    Release::new(major, minor)
}

// The era table. Each row is the row before it with what changed; the
// thresholds are the mainline releases of kernel-history.md §9 and §11, and a
// row read from a late stable tree also carries that tree's backports (its
// `notes` say which). Shorthands keep the rows short.
use super::{BasisQualifier as Q, BasisTree as T};
use GroupScan::{Plain, SkipConnected, SkipConnectedPreferCpu};
use JhashForm::{New, Old};
use ScanRule::{GroupThenFirst, GroupThenReservoir};
use ScoreRule::{Exact, ExactPreferDevice};
use Selection::{Group as Grp, Reservoir as Res};
use V4Form::{Classic, ClassicNumericFport, LportPlus};
use V6Form::{ClassicJhash2, ClassicXorFold, LportPlusJhash2, SinglePass};
use WildcardLaddr::{Daddr, Zero, ZeroAboveTen};

/// 3.9: SO_REUSEPORT for TCP and UDP (da5e36308d9f and related), reservoir
/// selection, one shared hash secret, the IPv4 UDP `htons` port swap.
pub const P3_9: Profile = Profile {
    release: r(3, 9),
    basis: T::stable("3.9.6").as_read(),
    jhash: Old,
    per_proto_ehashfn: false,
    tcp4: Classic,
    udp4: ClassicNumericFport,
    tcp6: ClassicXorFold,
    udp6: ClassicXorFold,
    udp6_outer_is_inner_plus_mix: false,
    tcp_selection: Res,
    udp_selection: Res,
    group_scan: Plain,
    tcp_wildcard_laddr: Daddr,
    udp_wildcard_laddr: ZeroAboveTen,
    incoming_cpu_writable: false,
    closed_tail: false,
    bpf_invalid_index: BpfFallback::Reservoir,
    sk_reuseport_prog: false,
    bpf_detach: false,
    epoll_exclusive: false,
    lookup: LookupRules {
        tcp_tables: TcpTables::PortList,
        udp_tables: UdpTables::PortSlotOrHash2,
        tcp_scan: ScanRule::Reservoir,
        udp_scan: ScanRule::Reservoir,
        score: ScoreRule::Classic,
        v6_reuseport_tail: false,
        cpu_bonus: false,
        udp_has_conns: false,
        udp_rescore: false,
        udp_connect_leaves_group: false,
        sk_lookup: false,
        bind_needs_no_group: false,
        tcp_fast_strict: false,
        tcp_fast_sk_wildcard: true,
        udp_first_overlap_decides: false,
        udp_bind_wildcard_hash2: true,
        tcp_bind_mapped_any_unseen: false,
        default_port_range: Ephemeral {
            low: 32768,
            high: 61000,
            autobind_reuse: false,
        },
    },
    notes: &[],
};

/// 3.13: per-protocol hash functions and secrets; `udp_ehashfn`; the
/// `htons` swap gone (read in 3.14.1).
pub const P3_13: Profile = Profile {
    release: r(3, 13),
    basis: T::stable("3.14.1").as_read(),
    per_proto_ehashfn: true,
    udp4: Classic,
    udp6_outer_is_inner_plus_mix: true,
    ..P3_9
};

/// 4.1: the new `jhash_3words` body.
pub const P4_1: Profile = Profile {
    release: r(4, 1),
    basis: T::stable("4.1.3").as_read(),
    jhash: New,
    ..P3_13
};

/// 4.4: SO_INCOMING_CPU writable, +1 in `compute_score`.
pub const P4_4: Profile = Profile {
    release: r(4, 4),
    basis: T::ubuntu("4.4.0-210", "4.4.262").as_read(),
    incoming_cpu_writable: true,
    lookup: LookupRules {
        cpu_bonus: true,
        ..P4_1.lookup
    },
    ..P4_1
};

/// 4.5: UDP groups and socket-filter programs; `EPOLLEXCLUSIVE`.
pub const P4_5: Profile = Profile {
    release: r(4, 5),
    basis: T::inferred(r(4, 4), r(4, 6)).as_read(),
    udp_selection: Grp,
    epoll_exclusive: true,
    lookup: LookupRules {
        udp_scan: GroupThenReservoir,
        udp_first_overlap_decides: true,
        ..P4_4.lookup
    },
    notes: &[EraNote::InferredFromNeighbours],
    ..P4_4
};

/// 4.6: TCP groups; IPv6 reuseport sockets at the tail; the default
/// ephemeral range ends at 60999 (07f4c90062f8).
pub const P4_6: Profile = Profile {
    release: r(4, 6),
    basis: T::stable("4.6.2").as_read(),
    tcp_selection: Grp,
    lookup: LookupRules {
        tcp_scan: GroupThenReservoir,
        v6_reuseport_tail: true,
        bind_needs_no_group: true,
        default_port_range: Ephemeral {
            high: 60999,
            ..P4_5.lookup.default_port_range
        },
        ..P4_5.lookup
    },
    notes: &[],
    ..P4_5
};

/// 4.17 (rules of 4.16): lhash2 and the count > 10 switch, no reservoir
/// after a group, an invalid program index falls back to the hash; the
/// TCP bind fast path of 4.14; UDP wildcard groups hash the destination.
pub const P4_17: Profile = Profile {
    release: r(4, 17),
    basis: T::stable("4.17.0").with(Q::unchanged_since(4, 16)),
    udp_wildcard_laddr: Daddr,
    bpf_invalid_index: BpfFallback::Hash,
    lookup: LookupRules {
        tcp_tables: TcpTables::PortListOrLhash2,
        tcp_scan: GroupThenFirst,
        udp_scan: GroupThenFirst,
        tcp_fast_strict: true,
        ..P4_6.lookup
    },
    ..P4_6
};

/// 4.19: SK_REUSEPORT programs on the 4.16 – 4.18 lookup.
///
/// 4.19.0's rules: the 4.19.y connected-UDP fixes are not carried. Stable
/// took acdcecc61285 ("udp: correct reuseport selection with connected
/// sockets") into 4.19.75 ("[PATCH 4.19 10/79]", 2019-09-20) and
/// efc6b6f6c311 ("udp: Improve load balancing for SO_REUSEPORT.") with
/// f2b2c55e5128 ("udp: Copy has_conns in reuseport_grow().") into 4.19.136
/// ("[PATCH 4.19 14/17]", "[PATCH 4.19 15/17]", 2020-07-30). Besides the
/// select-by-hash step (`net/core/sock_reuseport.c`), those changed
/// `udp4_lib_lookup2` (the hash2 path, past ten sockets on the port slot)
/// but not the port-slot scan of `__udp4_lib_lookup` that a 4.19 group of
/// ten or fewer takes, and `udp_has_conns` is one switch for both paths,
/// so the row keeps the commit out whole rather than half.
pub const P4_19: Profile = Profile {
    release: r(4, 19),
    basis: T::ubuntu("4.18.0-25", "4.18.20").with(Q::no_tree_read(4, 19)),
    sk_reuseport_prog: true,
    notes: &[EraNote::OlderLookupNewPrograms],
    ..P4_17
};

/// 5.0: lhash2 and hash2 only, exact address in two passes, wildcard
/// groups hash zero.
///
/// As kernel.org's last 5.0 stable, 5.0.21 (2019-06-04), left it: a group
/// picks `socks[reciprocal_scale(hash, n)]` even when that member is a
/// connected UDP socket, and a connected member is a group entry like any
/// other (`net/core/sock_reuseport.c`, `net/ipv4/udp.c` `udp4_lib_lookup2`).
/// The connected-UDP rules came with acdcecc61285 (mainline 5.4, authored
/// 2019-09-12, after the 5.0.y series ended). The Ubuntu 5.0.0-65 tree the
/// other rules were read from carries that commit as Ubuntu's own backport,
/// but not efc6b6f6c311 (2020), which the model's `has_conns` scan follows.
pub const P5_0: Profile = Profile {
    release: r(5, 0),
    basis: T::ubuntu("5.0.0-65", "5.0.21").with(Q::without_backport("acdcecc61285")),
    tcp_wildcard_laddr: Zero,
    udp_wildcard_laddr: Zero,
    lookup: LookupRules {
        tcp_tables: TcpTables::Lhash2,
        udp_tables: UdpTables::Hash2,
        score: Exact,
        ..P4_19.lookup
    },
    notes: &[],
    ..P4_19
};

/// 5.4 as in 5.4.291: SO_DETACH_REUSEPORT_BPF (5.3); connected UDP
/// members skipped by the group and scored on their own (acdcecc61285,
/// mainline 5.4), with the group's pick kept while the scan goes on
/// (efc6b6f6c311, mainline 5.8, stable 5.4.55); the 5.7 bind fast-path fix
/// (88d7fcfa3b1f, stable 5.4.44); and as backports the 6.5 IPv6 hash forms
/// and the 5.15 device preference.
pub const P5_4: Profile = Profile {
    release: r(5, 4),
    basis: T::ubuntu("5.4.0-216", "5.4.291").as_read(),
    tcp6: ClassicJhash2,
    udp6: ClassicJhash2,
    udp6_outer_is_inner_plus_mix: false,
    bpf_detach: true,
    group_scan: SkipConnected,
    lookup: LookupRules {
        score: ExactPreferDevice,
        udp_has_conns: true,
        tcp_fast_sk_wildcard: false,
        ..P5_0.lookup
    },
    notes: &[EraNote::LateStableIpv6Hash],
    ..P5_0
};

/// 5.10 as in 5.10.262: BPF `sk_lookup` (5.9) and the 6.5 UDP re-score
/// as a backport.
pub const P5_10: Profile = Profile {
    release: r(5, 10),
    basis: T::debian("5.10.262").as_read(),
    lookup: LookupRules {
        udp_rescore: true,
        sk_lookup: true,
        ..P5_4.lookup
    },
    ..P5_4
};

/// 5.14 mainline: the closed tail and request migration; without the
/// backports 5.10.262 carries.
pub const P5_14: Profile = Profile {
    release: r(5, 14),
    basis: T::mainline(5, 14).with(Q::RequestMigrationSeries),
    tcp6: ClassicXorFold,
    udp6: ClassicXorFold,
    udp6_outer_is_inner_plus_mix: true,
    closed_tail: true,
    lookup: LookupRules {
        score: Exact,
        udp_rescore: false,
        ..P5_10.lookup
    },
    notes: &[],
    ..P5_10
};

/// 5.15 mainline: the bound-device preference restored.
pub const P5_15: Profile = Profile {
    release: r(5, 15),
    basis: T::mainline(5, 15).with(Q::no_tree_read(5, 15)),
    lookup: LookupRules {
        score: ExactPreferDevice,
        ..P5_14.lookup
    },
    notes: &[EraNote::MainlineIpv6Hash],
    ..P5_14
};

/// 6.1 as in 6.1.192: the 6.2 CPU ring scan, the 6.5 IPv6 hash forms and
/// UDP re-score, and the UDP wildcard bind fix ("udp: Fix wildcard bind
/// conflict check when using hash2", 6.1.168) as backports.
pub const P6_1: Profile = Profile {
    release: r(6, 1),
    basis: T::debian("6.1.192").as_read(),
    tcp6: ClassicJhash2,
    udp6: ClassicJhash2,
    udp6_outer_is_inner_plus_mix: false,
    group_scan: SkipConnectedPreferCpu,
    lookup: LookupRules {
        udp_rescore: true,
        udp_bind_wildcard_hash2: false,
        tcp_bind_mapped_any_unseen: true,
        ..P5_15.lookup
    },
    notes: &[EraNote::StableIncomingCpuRing],
    ..P5_15
};

/// 6.2 mainline: the CPU ring scan, without 6.1.192's other backports.
pub const P6_2: Profile = Profile {
    release: r(6, 2),
    basis: T::mainline(6, 2).as_read(),
    tcp6: ClassicXorFold,
    udp6: ClassicXorFold,
    udp6_outer_is_inner_plus_mix: true,
    lookup: LookupRules {
        udp_rescore: false,
        udp_bind_wildcard_hash2: true,
        // Mainline 6.2 to 6.4 had wider bhash2 bind regressions (fixed in
        // 6.3 and 6.5); they are not modelled.
        tcp_bind_mapped_any_unseen: false,
        ..P6_1.lookup
    },
    notes: &[],
    ..P6_1
};

/// 6.5: jhash2 of the IPv6 foreign address, the udp6 secret fix, the UDP
/// re-score.
pub const P6_5: Profile = Profile {
    release: r(6, 5),
    basis: T::mainline(6, 5).as_read(),
    tcp6: ClassicJhash2,
    udp6: ClassicJhash2,
    udp6_outer_is_inner_plus_mix: false,
    lookup: LookupRules {
        udp_rescore: true,
        ..P6_2.lookup
    },
    ..P6_2
};

/// 6.6: the 6.5 rules.
pub const P6_6: Profile = Profile {
    release: r(6, 6),
    basis: T::mainline(6, 6).as_read(),
    ..P6_5
};

/// 6.12 as in 6.12.117: the 6.5 rules, and the UDP wildcard bind fix
/// ("udp: Fix wildcard bind conflict check when using hash2", 6.12.80).
pub const P6_12: Profile = Profile {
    release: r(6, 12),
    basis: T::debian("6.12.117").as_read(),
    lookup: LookupRules {
        udp_bind_wildcard_hash2: false,
        ..P6_6.lookup
    },
    ..P6_6
};

/// 6.13: connected UDP sockets get a 4-tuple hash, and `connect()` takes a
/// socket with a specific address out of its reuseport group
/// (`udp_lib_hash4` -> `reuseport_detach_sock`, net/ipv4/udp.c; commit
/// 78c91ae2c6de, "ipv4/udp: Add 4-tuple hash for connected socket", and its
/// IPv6 half in the same series). Mainline, so without the 6.12.80 bind fix.
pub const P6_13: Profile = Profile {
    release: r(6, 13),
    basis: T::mainline(6, 13).with(Q::commit("78c91ae2c6de")),
    lookup: LookupRules {
        udp_connect_leaves_group: true,
        ..P6_6.lookup
    },
    ..P6_6
};

/// 6.15: TCP adds lport outside the hash (commit 9544d60a2605).
pub const P6_15: Profile = Profile {
    release: r(6, 15),
    basis: T::mainline(6, 15).with(Q::commit("9544d60a2605")),
    tcp4: LportPlus,
    tcp6: LportPlusJhash2,
    ..P6_13
};

/// 6.18: the 6.15 rules, measured on this project's machine, and the UDP
/// wildcard bind fix, which 6.18.44 carries (measured).
pub const P6_18: Profile = Profile {
    release: r(6, 18),
    basis: T::measured("6.18.44").as_read(),
    lookup: LookupRules {
        udp_bind_wildcard_hash2: false,
        ..P6_15.lookup
    },
    ..P6_15
};

/// 7.2 as in 7.2.13: the single-pass IPv6 TCP hash.
pub const P7_2: Profile = Profile {
    release: r(7, 2),
    basis: T::debian("7.2.13").as_read(),
    tcp6: SinglePass,
    notes: &[EraNote::SinglePassFirstSeen],
    ..P6_18
};

/// Every profile, oldest first.
pub static PROFILES: &[Profile] = &[
    P3_9, P3_13, P4_1, P4_4, P4_5, P4_6, P4_17, P4_19, P5_0, P5_4, P5_10, P5_14, P5_15, P6_1, P6_2,
    P6_5, P6_6, P6_12, P6_13, P6_15, P6_18, P7_2,
];
