//! The era table (`profile::PROFILES`) as one place: a new era or a stable
//! backport is one row or one field, and nothing outside the table reads a
//! profile's release number to decide what the kernel does.
//!
//! It also prints the table as Markdown for the history chapter and pins it
//! to `tests/eras.md`, whose generated part was read against
//! `shared/reference/kernel-history.md` §9 and §11 (its preamble says what
//! that review found). After a deliberate change to the table, rewrite the
//! generated part with `ERAS_MD_WRITE=1 cargo test -p reuseport-model --test
//! eras` and read the diff before committing it.

use std::fmt::Write as _;
use std::net::IpAddr;

use reuseport_model::hash::{trace, Keys};
use reuseport_model::lookup::rules::LookupRules;
use reuseport_model::lookup::{Family, Layout, Packet, SockState, SocketSpec};
use reuseport_model::message::{Errno, LaddrReason};
use reuseport_model::profile::{
    r, BasisTree, EraBasis, GroupScan, Profile, V4Form, V6Form, P3_9, P5_0, P5_15, P5_4, P6_12,
    P6_18, P7_2, PROFILES,
};
use reuseport_model::reuseport::{CpuPin, PacketCtx, Program};
use reuseport_model::sim::AcceptModel;
use reuseport_model::{GroupSpec, Proto, ReuseportGroup, Tuple};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

// ---------------------------------------------------------------------------
// Helpers: groups, flows and hosts built the same way under any profile.

const KEYS: Keys = Keys {
    v4: 0x5eed_1234,
    v6_outer: 0x0bad_cafe,
    v6_inner: 0x1357_9bdf,
};

fn leak(p: Profile) -> &'static Profile {
    Box::leak(Box::new(p))
}

/// Flow `i` towards `daddr:8080`, from an address of the same family.
fn flow(i: u32, daddr: IpAddr) -> Tuple {
    let saddr: IpAddr = match daddr {
        IpAddr::V4(_) => format!("10.{}.{}.{}", i % 200, (i / 7) % 250, 1 + i % 250)
            .parse()
            .unwrap(),
        IpAddr::V6(_) => format!("fd00::{:x}:{:x}", i % 4096, 1 + i).parse().unwrap(),
    };
    Tuple {
        saddr,
        sport: 20000 + (i * 37 % 40000) as u16,
        daddr,
        dport: 8080,
    }
}

/// A group of four bound to `bind`, and who it picks for 64 flows to `to`.
fn picks(
    p: &'static Profile,
    proto: Proto,
    bind: &str,
    to: &str,
    cpus: bool,
) -> Vec<(u32, Option<u32>)> {
    let mut spec = GroupSpec::new(proto, 4, bind.parse().unwrap(), 8080, KEYS);
    if cpus {
        spec.incoming_cpu = (0..4)
            .map(|i| CpuPin {
                listener: i,
                cpu: i,
            })
            .collect();
    }
    let g = ReuseportGroup::build(p, &spec).unwrap();
    (0..64)
        .map(|i| {
            let c = g.select(&flow(i, to.parse().unwrap()), i % 4).unwrap();
            (c.hash, c.listener)
        })
        .collect()
}

/// A listening SO_REUSEPORT socket on `addr:8080`, every other option at
/// the layout format's default.
fn sock(family: Family, proto: Proto, addr: &str) -> SocketSpec {
    let spec = serde_json::json!({
        "family": family, "proto": proto, "addr": addr, "port": 8080, "reuseport": true,
    });
    serde_json::from_value(spec).unwrap()
}

fn layout(sockets: Vec<SocketSpec>) -> Layout {
    let l = serde_json::from_value(serde_json::json!({ "sockets": sockets })).unwrap();
    Layout { keys: KEYS, ..l }
}

/// A host with a wildcard and a specific group per protocol and family.
fn busy_layout() -> Layout {
    let mut v = Vec::new();
    for proto in [Proto::Tcp, Proto::Udp] {
        for _ in 0..3 {
            v.push(sock(Family::Inet, proto, "0.0.0.0"));
            v.push(sock(Family::Inet6, proto, "::"));
        }
        for _ in 0..2 {
            v.push(sock(Family::Inet, proto, "127.0.0.1"));
        }
    }
    layout(v)
}

/// Each socket's bind() and listen() errno, in layout order.
type Calls = Vec<(Option<Errno>, Option<Errno>)>;

/// Which socket each of 48 packets reaches, and each socket's bind/listen errno.
fn host_answers(p: &'static Profile) -> (Vec<Option<usize>>, Calls) {
    let h = replay_layout(p, &busy_layout()).unwrap();
    let mut sockets = Vec::new();
    for proto in [Proto::Tcp, Proto::Udp] {
        for to in ["127.0.0.1", "127.0.0.2", "::1"] {
            for i in 0..8 {
                let packet = Packet {
                    proto,
                    tuple: flow(i, to.parse().unwrap()),
                    device: None,
                    ctx: PacketCtx::default(),
                };
                sockets.push(h.lookup(&packet).socket);
            }
        }
    }
    let calls = h
        .results()
        .iter()
        .map(|c| {
            (
                c.bind.as_ref().map(|f| f.errno),
                c.listen.as_ref().map(|f| f.errno),
            )
        })
        .collect();
    (sockets, calls)
}

/// Everything the model answers under a profile that does not name its
/// release: picks, hash functions, program rules, lookups and binds.
fn behaviour(p: &'static Profile) -> String {
    let mut out = String::new();
    for proto in [Proto::Tcp, Proto::Udp] {
        for (bind, to) in [
            ("127.0.0.1", "127.0.0.1"),
            ("0.0.0.0", "127.0.0.3"),
            ("::", "::1"),
        ] {
            let cpus = p.incoming_cpu_writable;
            writeln!(
                out,
                "{proto:?} {bind} {:?}",
                picks(p, proto, bind, to, cpus)
            )
            .unwrap();
            let t = trace(
                p,
                proto,
                to.parse().unwrap(),
                LaddrReason::WildcardZero,
                8080,
                flow(1, to.parse().unwrap()).saddr,
                1234,
                &KEYS,
            );
            writeln!(out, "  hash {} {} {}", t.function, t.source.file, t.hash).unwrap();
        }
        let spec = GroupSpec::new(proto, 3, "0.0.0.0".parse().unwrap(), 8080, KEYS);
        let g = ReuseportGroup::build(p, &spec).unwrap();
        for prog in [
            Program::Cpu,
            Program::Pass,
            Program::PayloadMod { modulus: 0 },
        ] {
            let refusal = g.attach_refusal(&prog).map(|(rule, _)| rule);
            let attached = g.clone().attach_program(prog.clone()).is_ok();
            writeln!(out, "  {prog:?}: {refusal:?} {attached}").unwrap();
        }
        let mut g = g;
        if g.attach_program(Program::Index { index: 9 }).is_ok() {
            writeln!(out, "  detach {}", g.attach_program(None).is_ok()).unwrap();
        }
    }
    for m in AcceptModel::ALL {
        writeln!(out, "{m:?} runs: {}", m.runs_on(p)).unwrap();
    }
    writeln!(out, "{:?}", host_answers(p)).unwrap();
    out
}

// ---------------------------------------------------------------------------
// No release comparison outside the table.

#[test]
fn every_profile_behaves_the_same_under_any_release_number() {
    // If any code decided by `release < x.y` instead of a field, one of the
    // two renumberings (older than every era, newer than every era) would
    // change some answer of that profile.
    for p in PROFILES {
        let want = behaviour(p);
        for release in [r(1, 0), r(99, 0)] {
            let renumbered = leak(Profile { release, ..*p });
            assert_eq!(
                behaviour(renumbered),
                want,
                "profile {} renumbered {release} answers differently",
                p.release
            );
        }
    }
}

#[test]
fn the_behaviour_probe_tells_eras_apart() {
    // The probe above would pass vacuously if it saw nothing era-specific.
    // Print which neighbouring rows with different rules it tells apart.
    let mut told = Vec::new();
    let mut untold = Vec::new();
    for w in PROFILES.windows(2) {
        let same_rules = Profile {
            release: w[0].release,
            basis: w[0].basis,
            notes: w[0].notes,
            ..w[1]
        } == w[0];
        if same_rules {
            continue;
        }
        let pair = format!("{}/{}", w[0].release, w[1].release);
        if behaviour(&w[0]) == behaviour(&w[1]) {
            untold.push(pair);
        } else {
            told.push(pair);
        }
    }
    println!("told apart: {told:?}\nnot told apart: {untold:?}");
    // What the probe does not reach: the 4.16 lhash2 switch past ten
    // listeners, the UDP wildcard past ten, a bad program index and the
    // 4.14 bind fast path (4.6/4.17); the UDP re-score and sk_lookup
    // (5.4/5.10); the device preference (5.14/5.15); a UDP wildcard bind
    // past ten sockets (6.6/6.12, 6.15/6.18; kernel_bind_rules.rs pins it);
    // a connect()ed UDP socket leaving its group (6.12/6.13, also pinned
    // there). Those fields are read only as fields
    // (`no_code_outside_the_table_compares_releases`).
    assert_eq!(
        untold,
        [
            "4.6/4.17",
            "5.4/5.10",
            "5.14/5.15",
            "6.6/6.12",
            "6.12/6.13",
            "6.15/6.18"
        ]
    );
    assert_eq!(told.len(), 14);
}

#[test]
fn no_code_outside_the_table_compares_releases() {
    // A text check of the model's sources, beside the behaviour probe: a
    // release may be built, printed and carried, but only src/profile/ (the
    // table and `uname` resolution) may compare one.
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let mut stack = vec![std::path::PathBuf::from(src)];
    let mut found = Vec::new();
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|x| x != "rs")
                || path.parent().is_some_and(|d| d.ends_with("profile"))
            {
                continue;
            }
            files += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap();
                let compares = [
                    "release <",
                    "release >",
                    "release ==",
                    "release !=",
                    "at_least(",
                ]
                .iter()
                .any(|w| code.contains(w));
                if compares || code.contains("Release::new(") && !code.contains("KernelSource::new")
                {
                    found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(files > 20, "read {files} source files");
    assert!(
        found.is_empty(),
        "release comparisons outside the table:\n{}",
        found.join("\n")
    );
}

// ---------------------------------------------------------------------------
// A new era is one row; a backport is one field.

/// A made-up 9.9 that returns TCP to the pre-6.15 hash (lport inside the
/// jhash), otherwise 7.2: one row.
static P9_9: Profile = Profile {
    release: r(9, 9),
    basis: BasisTree::mainline(9, 9).as_read(),
    tcp4: V4Form::Classic,
    tcp6: V6Form::ClassicJhash2,
    notes: &[],
    ..P7_2
};

#[test]
fn a_made_up_era_is_one_row_and_selects_and_looks_up_by_its_fields() {
    // TCP v4 picks as 6.12 does (the same classic hash, the same group
    // rules), not as 7.2 does (lport added outside).
    let made_up = picks(&P9_9, Proto::Tcp, "127.0.0.1", "127.0.0.1", false);
    assert_eq!(
        made_up,
        picks(&P6_12, Proto::Tcp, "127.0.0.1", "127.0.0.1", false)
    );
    assert_ne!(
        made_up,
        picks(&P7_2, Proto::Tcp, "127.0.0.1", "127.0.0.1", false)
    );
    // UDP was never changed by the row: as 7.2.
    assert_eq!(
        picks(&P9_9, Proto::Udp, "::", "::1", false),
        picks(&P7_2, Proto::Udp, "::", "::1", false)
    );
    // A full host lookup under the new row reaches the sockets 6.12 reaches.
    assert_eq!(host_answers(&P9_9), host_answers(&P6_12));
    // The hash is named as the pre-6.15 form, with the made-up release.
    let t = trace(
        &P9_9,
        Proto::Tcp,
        "127.0.0.1".parse().unwrap(),
        LaddrReason::WildcardZero,
        8080,
        "10.0.0.1".parse().unwrap(),
        1234,
        &KEYS,
    );
    assert_eq!(t.lport_added, None);
    assert_eq!(t.source.release, r(9, 9));
    assert!(P9_9.notes().is_empty());
}

#[test]
fn backporting_the_cpu_ring_scan_to_5_15_is_one_field() {
    // so_incoming_cpu.c: server i pinned to CPU i. Mainline 5.15 selects by
    // hash alone; with the 6.2 ring scan as a (made-up) 5.15.y backport,
    // every connection from CPU i lands on server i, as on 6.2.
    static P5_15_RING: Profile = Profile {
        group_scan: GroupScan::SkipConnectedPreferCpu,
        ..P5_15
    };
    let on_own_cpu = |p: &'static Profile| {
        picks(p, Proto::Tcp, "127.0.0.1", "127.0.0.1", true)
            .iter()
            .enumerate()
            .filter(|(i, (_, l))| *l == Some(*i as u32 % 4))
            .count()
    };
    assert_eq!(on_own_cpu(&P5_15_RING), 64);
    assert!(on_own_cpu(&P5_15) < 40, "mainline 5.15 ignores the pins");
}

#[test]
fn undoing_the_5_7_bind_cache_fix_on_6_18_is_one_lookup_field() {
    // [127.0.0.1], [127.0.0.2 SO_REUSEPORT], [0.0.0.0 SO_REUSEPORT], all
    // bound: 6.18 refuses the third (kernel_bind_rules.rs pins it to a
    // measurement); with `tcp_fast_sk_wildcard` back on, as 4.14 – 5.6,
    // the wildcard matches the recorded address and the bind succeeds.
    static P6_18_OLD_CACHE: Profile = Profile {
        lookup: LookupRules {
            tcp_fast_sk_wildcard: true,
            ..P6_18.lookup
        },
        ..P6_18
    };
    let bound = |mut s: SocketSpec, reuseport: bool| {
        s.state = SockState::Bound;
        s.reuseport = reuseport;
        s
    };
    let mut l = layout(vec![
        bound(sock(Family::Inet, Proto::Tcp, "127.0.0.1"), false),
        bound(sock(Family::Inet, Proto::Tcp, "127.0.0.2"), true),
        bound(sock(Family::Inet, Proto::Tcp, "0.0.0.0"), true),
    ]);
    l.listen_order = Some(vec![]);
    let binds = |p: &'static Profile| -> Vec<Option<Errno>> {
        replay_layout(p, &l)
            .unwrap()
            .results()
            .iter()
            .map(|c| c.bind.as_ref().map(|f| f.errno))
            .collect()
    };
    assert_eq!(binds(&P6_18), [None, None, Some(Errno::Eaddrinuse)]);
    assert_eq!(binds(&P6_18_OLD_CACHE), [None, None, None]);
}

// ---------------------------------------------------------------------------
// Rows checked against kernel source for backports (issues 12 and 13).

/// `reciprocal_scale(hash, n)` as `include/linux/kernel.h` writes it.
fn scale(hash: u32, n: u32) -> u32 {
    ((u64::from(hash) * u64::from(n)) >> 32) as u32
}

#[test]
fn acdcecc61285_connected_udp_members_are_skipped_from_5_4_not_in_5_0() {
    // "udp: correct reuseport selection with connected sockets" is mainline
    // 5.4 (stable 5.3.1, 5.2.17, 4.19.75); kernel.org's 5.0.y ended at
    // 5.0.21 three months before it was written. So 5.0 picks
    // `socks[reciprocal_scale(hash, n)]` even when that member is connected
    // (net/core/sock_reuseport.c 5.0.21), and 5.4 steps past it to the next.
    let connected = 2;
    let picks_with_one_connected = |p: &'static Profile| {
        let mut spec = GroupSpec::new(Proto::Udp, 4, "127.0.0.1".parse().unwrap(), 8080, KEYS);
        spec.connected = vec![connected];
        let g = ReuseportGroup::build(p, &spec).unwrap();
        (0..64)
            .map(|i| {
                let c = g.select(&flow(i, "127.0.0.1".parse().unwrap()), 0).unwrap();
                (scale(c.hash, 4), c.listener)
            })
            .collect::<Vec<_>>()
    };
    let mut hit = 0;
    for (i, l) in picks_with_one_connected(&P5_0) {
        assert_eq!(l, Some(i), "5.0.21 takes the hashed index as it is");
    }
    for (i, l) in picks_with_one_connected(&P5_4) {
        let want = if i == connected {
            hit += 1;
            connected + 1
        } else {
            i
        };
        assert_eq!(l, Some(want), "5.4 steps past the connected member");
    }
    assert!(hit > 0, "some flow hashed onto the connected member");
}

#[test]
fn acdcecc61285_a_connected_udp_socket_enters_its_group_in_5_0_and_not_from_5_4() {
    // udp4_lib_lookup2: 5.0.21 sends any SO_REUSEPORT socket that beats
    // the score to its group (`if (sk->sk_reuseport)`), so even the
    // connected member's own peer is hashed across the group; from 5.4
    // a connected socket is a result of its own (`sk_state !=
    // TCP_ESTABLISHED`) and the group does not end the scan (`has_conns`).
    let peer: std::net::SocketAddr = "127.0.0.9:40000".parse().unwrap();
    let mut sockets: Vec<SocketSpec> = (0..4)
        .map(|_| sock(Family::Inet, Proto::Udp, "127.0.0.1"))
        .collect();
    sockets[3].state = SockState::Connected;
    sockets[3].peer = Some(peer);
    let l = layout(sockets);
    let daddr: IpAddr = "127.0.0.1".parse().unwrap();
    let mut tuples = vec![Tuple {
        saddr: peer.ip(),
        sport: peer.port(),
        daddr,
        dport: 8080,
    }];
    tuples.extend((0..32).map(|i| flow(i, daddr)));
    let reached = |p: &'static Profile, t: &Tuple| {
        let h = replay_layout(p, &l).unwrap();
        h.lookup(&Packet {
            proto: Proto::Udp,
            tuple: *t,
            device: None,
            ctx: PacketCtx::default(),
        })
        .socket
    };
    let index = |p: &'static Profile, t: &Tuple| {
        let bind = LaddrReason::Specific {
            bind: "127.0.0.1".into(),
        };
        let h = trace(p, Proto::Udp, daddr, bind, 8080, t.saddr, t.sport, &KEYS).hash;
        // UDP members join at bind(), so socks[i] is socket i.
        scale(h, 4) as usize
    };
    let mut from_others_to_the_connected = 0;
    for (k, t) in tuples.iter().enumerate() {
        let i = index(&P5_0, t);
        assert_eq!(reached(&P5_0, t), Some(i), "5.0.21, tuple {k}");
        if k > 0 && i == 3 {
            from_others_to_the_connected += 1;
        }
        let want = if k == 0 {
            3
        } else if index(&P5_4, t) == 3 {
            0
        } else {
            index(&P5_4, t)
        };
        assert_eq!(reached(&P5_4, t), Some(want), "5.4, tuple {k}");
    }
    assert!(
        from_others_to_the_connected > 0,
        "5.0.21 hashed some other source onto the connected socket"
    );
}

#[test]
fn a_wildcard_udp_member_leaves_its_group_as_it_connects_in_every_group_era() {
    // connect() on a UDP socket bound to the wildcard sets its address to
    // the route's source (__ip4_datagram_connect, net/ipv4/datagram.c) and
    // rehashes it; udp_lib_rehash (net/ipv4/udp.c) then detaches it from
    // its group: read in 4.6.2, 6.1.192 and 6.12.117, and seen on 6.18.44
    // (agent/tests/udp_connect_leaves.rs). reuseport_has_conns_set runs
    // after the rehash and finds no group, so has_conns stays clear. A
    // member bound to a specific address stays, stepped over, until the
    // 6.13 hash4 detach (`lookup.udpConnectLeavesGroup`). Four members,
    // member 1 connects: swap-last-into-hole leaves [0, 3, 2] (a hand
    // count of reuseport_detach_sock).
    let mut eras = 0;
    for p in PROFILES {
        if p.udp_selection != reuseport_model::profile::Selection::Group {
            continue;
        }
        eras += 1;
        let group = |bind: &str| {
            let mut spec = GroupSpec::new(Proto::Udp, 4, bind.parse().unwrap(), 8080, KEYS);
            spec.connected = vec![1];
            ReuseportGroup::build(p, &spec).unwrap()
        };
        let any = group("0.0.0.0");
        assert_eq!(any.listening(), [0, 3, 2], "{}: wildcard", p.release);
        assert!(
            !any.summary().has_conns,
            "{}: wildcard has_conns",
            p.release
        );
        let any6 = group("::");
        assert_eq!(any6.listening(), [0, 3, 2], "{}: [::]", p.release);
        let specific = group("127.0.0.1");
        let want: &[u32] = if p.lookup.udp_connect_leaves_group {
            &[0, 3, 2]
        } else {
            &[0, 1, 2, 3]
        };
        assert_eq!(specific.listening(), want, "{}: 127.0.0.1", p.release);
        assert!(
            specific.summary().has_conns,
            "{}: 127.0.0.1 has_conns",
            p.release
        );
        // The three left share the hash: socks[reciprocal_scale(h, 3)].
        for i in 0..16 {
            let c = any
                .select(&flow(i, "127.0.0.1".parse().unwrap()), 0)
                .unwrap();
            assert_eq!(c.listener, Some([0, 3, 2][scale(c.hash, 3) as usize]));
        }
    }
    assert_eq!(
        eras,
        PROFILES.iter().filter(|p| p.release >= r(4, 5)).count()
    );
}

// ---------------------------------------------------------------------------
// Rules that hold between fields of one row.

#[test]
fn fields_changed_by_one_kernel_change_agree_in_every_row() {
    use reuseport_model::lookup::rules::ScanRule;
    use reuseport_model::profile::{BpfFallback, Selection};
    for p in PROFILES {
        let at = p.release;
        // 4.5/4.6: a group era's lookup runs the group; 4.16 removed the
        // reservoir after it and sent a bad program index to the hash.
        for (sel, scan) in [
            (p.tcp_selection, p.lookup.tcp_scan),
            (p.udp_selection, p.lookup.udp_scan),
        ] {
            let want = match (sel, p.bpf_invalid_index) {
                (Selection::Reservoir, _) => ScanRule::Reservoir,
                (Selection::Group, BpfFallback::Reservoir) => ScanRule::GroupThenReservoir,
                (Selection::Group, BpfFallback::Hash) => ScanRule::GroupThenFirst,
            };
            assert_eq!(scan, want, "{at}");
        }
        // 4.4 (70da268b569d): SO_INCOMING_CPU became writable and scored.
        assert_eq!(p.lookup.cpu_bonus, p.incoming_cpu_writable, "{at}");
        // SK_REUSEPORT programs (4.19) came after the hash fallback (4.16).
        assert!(
            !p.sk_reuseport_prog || p.bpf_invalid_index == BpfFallback::Hash,
            "{at}"
        );
        // The udp6 secret fix and the jhash2 fold are one 6.5 series, and
        // stable took them together.
        assert_eq!(
            p.udp6_outer_is_inner_plus_mix,
            p.per_proto_ehashfn && p.udp6 == V6Form::ClassicXorFold,
            "{at}"
        );
    }
}

#[test]
fn the_first_release_of_a_feature_is_read_from_the_rows() {
    use reuseport_model::profile::Selection;
    assert_eq!(
        Profile::first_with(|p| p.tcp_selection == Selection::Group),
        Some(r(4, 6))
    );
    assert_eq!(
        Profile::first_with(|p| p.udp_selection == Selection::Group),
        Some(r(4, 5))
    );
    assert_eq!(AcceptModel::EpollExclusive.since(), Some(r(4, 5)));
    assert_eq!(AcceptModel::ReuseportLeastLoaded.since(), Some(r(4, 19)));
    assert_eq!(Profile::first_with(|p| p.bpf_detach), Some(r(5, 4)));
    assert_eq!(Profile::first_with(|p| p.release > r(7, 2)), None);
}

// ---------------------------------------------------------------------------
// The table as Markdown.

/// A serialized value, with map entries in the order the struct declares them.
enum V {
    Leaf(String),
    Map(Vec<(String, V)>),
    List(Vec<V>),
}

impl<'de> Deserialize<'de> for V {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<V, D::Error> {
        struct Walk;
        impl<'de> Visitor<'de> for Walk {
            type Value = V;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a profile")
            }
            fn visit_bool<E>(self, b: bool) -> Result<V, E> {
                Ok(V::Leaf(if b { "yes" } else { "no" }.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<V, E> {
                Ok(V::Leaf(n.to_string()))
            }
            fn visit_str<E>(self, s: &str) -> Result<V, E> {
                Ok(V::Leaf(s.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<V, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(V::List(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<V, A::Error> {
                let mut v = Vec::new();
                while let Some(e) = a.next_entry()? {
                    v.push(e);
                }
                Ok(V::Map(v))
            }
        }
        d.deserialize_any(Walk)
    }
}

/// A profile's fields as (name, value) in declaration order; the lookup
/// rules as `lookup.name`; the release as `6.18`.
fn columns(p: &Profile) -> Vec<(String, String)> {
    fn text(v: &V) -> String {
        match v {
            V::Leaf(s) => s.clone(),
            V::List(l) if l.is_empty() => "–".into(),
            V::List(l) => l.iter().map(text).collect::<Vec<_>>().join(", "),
            // A release reads `6.18`; any other record `name value, …`.
            V::Map(m) if m.iter().any(|(k, _)| k == "major") => {
                m.iter().map(|(_, v)| text(v)).collect::<Vec<_>>().join(".")
            }
            V::Map(m) => m
                .iter()
                .map(|(k, v)| format!("{k} {}", text(v)))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
    let V::Map(fields) = serde_json::from_str::<V>(&serde_json::to_string(p).unwrap()).unwrap()
    else {
        panic!("a profile serializes as a map");
    };
    let mut out = Vec::new();
    for (name, v) in &fields {
        match (name.as_str(), v) {
            ("lookup", V::Map(rules)) => {
                out.extend(rules.iter().map(|(n, v)| (format!("lookup.{n}"), text(v))))
            }
            _ => out.push((name.clone(), text(v))),
        }
    }
    out
}

fn markdown(table: &[Profile]) -> String {
    let mut md = String::new();
    md.push_str("## Rows as written\n\n");
    md.push_str("Each row is the row before it with these fields changed.\n\n");
    md.push_str("| Profile | Rules from | Changed from the row before |\n|---|---|---|\n");
    let mut before: Option<Vec<(String, String)>> = None;
    for p in table {
        let cols = columns(p);
        let changed = match &before {
            None => "(the first row sets every field)".to_string(),
            Some(b) => {
                let d: Vec<_> = cols
                    .iter()
                    .zip(b)
                    .filter(|((n, v), (_, old))| n != "release" && n != "basis" && v != old)
                    .map(|((n, v), _)| format!("`{n}`: {v}"))
                    .collect();
                if d.is_empty() {
                    "nothing".into()
                } else {
                    d.join("; ")
                }
            }
        };
        writeln!(md, "| {} | {} | {changed} |", p.release, basis_en(&p.basis)).unwrap();
        before = Some(cols);
    }
    md.push_str("\n## Every field\n\n| Field |");
    for p in table {
        write!(md, " {} |", p.release).unwrap();
    }
    md.push_str("\n|---|");
    md.push_str(&"---|".repeat(table.len()));
    md.push('\n');
    let all: Vec<_> = table.iter().map(columns).collect();
    for (i, (name, _)) in all[0].iter().enumerate() {
        if name == "release" || name == "basis" {
            continue;
        }
        write!(md, "| `{name}` |").unwrap();
        for cols in &all {
            write!(md, " {} |", cols[i].1).unwrap();
        }
        md.push('\n');
    }
    md
}

/// A row's basis in English, as the site's English pages say it: the
/// templates of `messages/en.json` (the model itself holds no sentences).
fn basis_en(b: &EraBasis) -> String {
    let table: std::collections::BTreeMap<String, String> = serde_json::from_str(include_str!(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../messages/en.json")
    ))
    .expect("messages/en.json is a JSON object of strings");
    // `{name}` placeholders from the fields of a tagged value; a release reads `6.18`.
    let say = |group: &str, v: &serde_json::Value, given: &[(&str, &str)]| -> String {
        let key = format!("{group}.{}", v["kind"].as_str().expect("a tagged value"));
        let mut out = table
            .get(&key)
            .unwrap_or_else(|| panic!("en.json has {key}"))
            .clone();
        for (name, field) in v.as_object().unwrap() {
            let text = match (field, given.iter().find(|(n, _)| n == name)) {
                (_, Some((_, t))) => t.to_string(),
                (serde_json::Value::String(s), _) => s.clone(),
                (f, _) => format!("{}.{}", f["major"], f["minor"]),
            };
            out = out.replace(&format!("{{{name}}}"), &text);
        }
        out
    };
    let v = serde_json::to_value(b).unwrap();
    let tree = say("basis_tree", &v["tree"], &[]);
    let qualifier = v.get("qualifier").map(|q| say("basis_qualifier", q, &[]));
    let mut given = vec![("tree", tree.as_str())];
    if let Some(q) = &qualifier {
        given.push(("qualifier", q.as_str()));
    }
    say("era_basis", &v, &given)
}

const MARK: &str =
    "<!-- Generated below by wasm/model/tests/suite/eras.rs; do not edit by hand. -->\n";

#[test]
fn the_era_table_prints_as_the_reviewed_markdown() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/eras.md");
    let file = std::fs::read_to_string(path).expect("tests/eras.md exists");
    let (preamble, pinned) = file
        .split_once(MARK)
        .expect("tests/eras.md has the generated-part marker");
    let now = markdown(PROFILES);
    println!("{now}");
    if std::env::var_os("ERAS_MD_WRITE").is_some() {
        std::fs::write(path, format!("{preamble}{MARK}{now}")).unwrap();
        return;
    }
    assert!(
        pinned == now,
        "the era table changed: review the difference against kernel-history.md, then \
         rewrite tests/eras.md with ERAS_MD_WRITE=1 (the printed table is above)"
    );
}

#[test]
fn the_markdown_shows_a_one_field_backport_as_one_change() {
    // The printer itself: a row that changes one field reads as that field.
    static BACKPORT: Profile = Profile {
        release: r(6, 13),
        group_scan: GroupScan::SkipConnected,
        ..P6_12
    };
    let md = markdown(&[P6_12, BACKPORT, P3_9]);
    assert!(
        md.contains("| 6.13 | Debian's 6.12.117 tree | `groupScan`: skip_connected |"),
        "{md}"
    );
    assert!(
        md.contains("| `lookup.tcpFastStrict` | yes | yes | no |"),
        "{md}"
    );
}

/// The host a socket-list layout stands for: its calls, replayed (the
/// reader's conversion, then the one replay).
fn replay_layout(
    p: &'static reuseport_model::Profile,
    l: &reuseport_model::lookup::Layout,
) -> Result<reuseport_model::lookup::Host, reuseport_model::lookup::LayoutError> {
    reuseport_model::lookup::Host::run(p, &reuseport_model::lookup::CallLog::from_layout(l)?)
}
