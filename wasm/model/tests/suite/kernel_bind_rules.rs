//! The three kinds of disagreement `verify --layouts` found between the
//! model and the running kernel, each pinned to the kernel code
//! behind it. Every expected value is what Linux 6.18.44 answered when the
//! same calls were made in a private network namespace on this project's
//! machine (recorded 2026-11-23 with `verify --layouts` and by hand); the
//! eras before are read from source, and say so.
//!
//! One file on purpose: every bind rule the kernel was measured to
//! disagree on, one test each, with its measurement beside it.

use reuseport_model::lookup::{Family, Host, Layout, Packet, SockState, SocketSpec};
use reuseport_model::message::Errno;
use reuseport_model::profile::PROFILES;
use reuseport_model::reuseport::PacketCtx;
use reuseport_model::{Keys, Profile, Proto, Release, Tuple};

fn sock(family: Family, proto: Proto, addr: &str) -> SocketSpec {
    SocketSpec {
        family,
        proto,
        addr: addr.parse().unwrap(),
        port: 9000,
        v6only: false,
        reuseaddr: false,
        reuseport: false,
        uid: 0,
        device: None,
        state: SockState::Listen,
        peer: None,
        incoming_cpu: None,
        program: None,
        program_before_bind: false,
    }
}

fn with(mut s: SocketSpec, f: impl FnOnce(&mut SocketSpec)) -> SocketSpec {
    f(&mut s);
    s
}

fn ra(s: SocketSpec) -> SocketSpec {
    with(s, |s| s.reuseaddr = true)
}
fn rp(s: SocketSpec) -> SocketSpec {
    with(s, |s| s.reuseport = true)
}

/// Every bind() first, then the listens in `listen_order`, as
/// `verify --layouts` makes the calls.
fn layout(sockets: Vec<SocketSpec>, listen_order: Option<Vec<usize>>) -> Layout {
    Layout {
        sockets,
        listen_order,
        sk_lookup: None,
        keys: Keys::default(),
        ephemeral: None,
        closed: Vec::new(),
    }
}

fn profile(major: u16, minor: u16) -> &'static Profile {
    PROFILES
        .iter()
        .find(|p| p.release == Release::new(major, minor))
        .unwrap()
}

/// Each socket's bind() errno (None: success).
fn binds(h: &Host) -> Vec<Option<Errno>> {
    h.results()
        .iter()
        .map(|r| r.bind.as_ref().map(|f| f.errno))
        .collect()
}

fn listens(h: &Host) -> Vec<Option<Errno>> {
    h.results()
        .iter()
        .map(|r| r.listen.as_ref().map(|f| f.errno))
        .collect()
}

const V4: Family = Family::Inet;
const V6: Family = Family::Inet6;

// Kind 1: __inet6_bind (net/ipv6/af_inet6.c) sets sk_ipv6only when the
// address is neither :: nor v4-mapped, so the join rule's
// `ipv6_only_sock(sk2) == ipv6_only_sock(sk)` (inet_reuseport_add_sock,
// net/ipv4/inet_hashtables.c; udp_reuseport_add_sock, net/ipv4/udp.c) holds
// for two sockets on ::1 whatever IPV6_V6ONLY said before bind().

#[test]
fn binding_ipv6_loopback_sets_v6only_so_tcp_sockets_on_1_share_one_group() {
    // 6.18: both bind and listen; IPV6_V6ONLY reads 1 on the second socket
    // after its bind (it was set to 0); 64 connections to [::1] reached
    // both sockets, so they are one group.
    let l = layout(
        vec![
            with(rp(sock(V6, Proto::Tcp, "::1")), |s| s.v6only = true),
            ra(rp(sock(V6, Proto::Tcp, "::1"))),
        ],
        Some(vec![0, 1]),
    );
    for p in PROFILES.iter().filter(|p| p.release >= Release::new(4, 6)) {
        let h = replay_layout(p, &l).unwrap();
        assert_eq!(binds(&h), [None, None], "{}", p.release);
        assert_eq!(listens(&h), [None, None], "{}", p.release);
        let r = h.results();
        assert!(r[0].group.is_some(), "{}", p.release);
        assert_eq!(r[0].group, r[1].group, "{}: one group", p.release);
    }
}

#[test]
fn binding_ipv6_loopback_sets_v6only_so_udp_sockets_on_1_share_one_group() {
    // 6.18 (verify --layouts, seed 100, drawn layouts 130 and 163): 48
    // datagrams to [::1] reached both sockets.
    let l = layout(
        vec![
            with(rp(sock(V6, Proto::Udp, "::1")), |s| s.v6only = true),
            ra(rp(sock(V6, Proto::Udp, "::1"))),
        ],
        None,
    );
    for p in PROFILES.iter().filter(|p| p.release >= Release::new(4, 5)) {
        let h = replay_layout(p, &l).unwrap();
        let r = h.results();
        assert_eq!(binds(&h), [None, None], "{}", p.release);
        assert_eq!(r[0].group, r[1].group, "{}: one group", p.release);
        assert_eq!(h.group_members(r[0].group.unwrap()).unwrap(), [0, 1]);
    }
}

// Kind 2: udp_lib_lport_inuse (net/ipv4/udp.c, 4.5+, e32ea7e74727) walks
// the port slot and the first socket that overlaps without the
// SO_REUSEADDR exemption decides: a SO_REUSEPORT match there returns "not
// in use" at once, so sockets further down the slot are never looked at.
// udp_lib_get_port adds sockets at the slot's head, AF_INET6 SO_REUSEPORT
// sockets at its tail.

#[test]
fn udp_wildcard_reuseport_bind_stops_at_the_newest_overlapping_reuseport_socket() {
    // 6.18: all three bind. Socket 1 (newest, SO_REUSEPORT) is met first;
    // socket 0 (127.0.0.1, SO_REUSEADDR only) would conflict.
    let l = layout(
        vec![
            ra(sock(V4, Proto::Udp, "127.0.0.1")),
            with(ra(rp(sock(V4, Proto::Udp, "127.0.0.2"))), |s| {
                s.device = Some("lo".into())
            }),
            rp(sock(V4, Proto::Udp, "0.0.0.0")),
        ],
        None,
    );
    let h = replay_layout(profile(6, 18), &l).unwrap();
    assert_eq!(binds(&h), [None, None, None]);
    // Before 4.5 any conflicting socket refuses (udp_lib_lport_inuse in
    // 3.9.6 and 4.4, read from source).
    let h = replay_layout(profile(4, 4), &l).unwrap();
    assert_eq!(binds(&h), [None, None, Some(Errno::Eaddrinuse)]);
}

#[test]
fn udp_af_inet6_reuseport_sockets_sit_at_the_slot_tail_so_an_older_conflict_is_met_first() {
    // 6.18: [127.0.0.1 SO_REUSEADDR], [:: SO_REUSEADDR+SO_REUSEPORT],
    // [0.0.0.0 SO_REUSEPORT]: the third bind fails, as the AF_INET6
    // socket, though newer, is behind socket 0 in the slot.
    let l = layout(
        vec![
            ra(sock(V4, Proto::Udp, "127.0.0.1")),
            ra(rp(sock(V6, Proto::Udp, "::"))),
            rp(sock(V4, Proto::Udp, "0.0.0.0")),
        ],
        None,
    );
    let h = replay_layout(profile(6, 18), &l).unwrap();
    assert_eq!(binds(&h), [None, None, Some(Errno::Eaddrinuse)]);
    // The same with an AF_INET wildcard in the middle: it is at the head,
    // met first, and the bind succeeds (6.18: all three bind).
    let mut l2 = l.clone();
    l2.sockets[1] = ra(rp(sock(V4, Proto::Udp, "0.0.0.0")));
    let h = replay_layout(profile(6, 18), &l2).unwrap();
    assert_eq!(binds(&h), [None, None, None]);
}

// Kind 3: the TCP bind bucket's fast path (inet_csk_get_port and
// inet_csk_update_fastreuse / sk_reuseport_match,
// net/ipv4/inet_connection_sock.c). A SO_REUSEPORT socket that joins a
// bucket whose fastreuseport does not cover it records its own address
// (FASTREUSEPORT_STRICT, 637bc8bbe6c0, 4.14); a later SO_REUSEPORT socket
// whose address that record matches succeeds without the conflict scan.

#[test]
fn tcp_reuseport_bind_matching_the_buckets_recorded_address_skips_the_conflict_scan() {
    // 6.18: [0.0.0.0 SO_REUSEADDR, listens], [::ffff:127.0.0.1
    // SO_REUSEADDR+SO_REUSEPORT, bound only], [127.0.0.1 SO_REUSEPORT,
    // listens]: all three bind; then listen() of socket 0 fails with
    // EADDRINUSE and listen() of socket 2 succeeds.
    let l = layout(
        vec![
            ra(sock(V4, Proto::Tcp, "0.0.0.0")),
            with(ra(rp(sock(V6, Proto::Tcp, "::ffff:127.0.0.1"))), |s| {
                s.state = SockState::Bound
            }),
            rp(sock(V4, Proto::Tcp, "127.0.0.1")),
        ],
        Some(vec![0, 2]),
    );
    let h = replay_layout(profile(6, 18), &l).unwrap();
    assert_eq!(binds(&h), [None, None, None]);
    assert_eq!(listens(&h), [Some(Errno::Eaddrinuse), None, None]);
    // 6.18: without the middle socket nothing is recorded, the scan runs,
    // and the third bind fails.
    let l2 = layout(
        vec![l.sockets[0].clone(), l.sockets[2].clone()],
        Some(vec![0, 1]),
    );
    let h = replay_layout(profile(6, 18), &l2).unwrap();
    assert_eq!(binds(&h), [None, Some(Errno::Eaddrinuse)]);
}

#[test]
fn tcp_wildcard_reuseport_bind_no_longer_matches_a_recorded_specific_address_from_5_7() {
    // 6.18: [127.0.0.1], [127.0.0.2 SO_REUSEPORT], [0.0.0.0 SO_REUSEPORT]:
    // the third bind fails (the record, 127.0.0.2, may not be matched by
    // the binding socket's wildcard, so the scan runs and meets socket 0).
    let bound = |s: SocketSpec| with(s, |s| s.state = SockState::Bound);
    let l = layout(
        vec![
            bound(sock(V4, Proto::Tcp, "127.0.0.1")),
            bound(rp(sock(V4, Proto::Tcp, "127.0.0.2"))),
            bound(rp(sock(V4, Proto::Tcp, "0.0.0.0"))),
        ],
        Some(vec![]),
    );
    let h = replay_layout(profile(6, 18), &l).unwrap();
    assert_eq!(binds(&h), [None, None, Some(Errno::Eaddrinuse)]);
    // 4.14 – 5.6 (from the fix's own description, "Still Succeed where it
    // shouldn't"): the wildcard matched the record and the bind succeeded.
    let h = replay_layout(profile(5, 0), &l).unwrap();
    assert_eq!(binds(&h), [None, None, None]);
    // Before 4.14 nothing was recorded once a non-SO_REUSEPORT socket
    // owned the port: the scan refuses (4.6.2, read from source).
    let h = replay_layout(profile(4, 6), &l).unwrap();
    assert_eq!(binds(&h), [None, None, Some(Errno::Eaddrinuse)]);
}

// ---------------------------------------------------------------------------
// UDP bind() past ten sockets on the port slot: the hash2 path of
// `udp_lib_get_port` (net/ipv4/udp.c). Measured on 6.18.44 on 2026-11-24
// in a private network namespace (loopback only): Python's socket module
// making the same binds in the same order.

/// `pad` sockets on 127.0.0.2, 127.0.0.3, … (SO_REUSEADDR, so they pass
/// the wildcard socket of the first test), port 9000.
fn padding(pad: usize) -> Vec<SocketSpec> {
    (0..pad)
        .map(|k| ra(sock(V4, Proto::Udp, &format!("127.0.0.{}", k + 2))))
        .collect()
}

#[test]
fn udp_bind_past_ten_sockets_walks_the_address_slot_then_the_wildcard_slot() {
    // 0.0.0.0 (SO_REUSEADDR), 127.0.0.1 (SO_REUSEADDR, SO_REUSEPORT), the
    // padding, then 127.0.0.1 with SO_REUSEPORT only. With ten sockets or
    // fewer on the port, udp_lib_lport_inuse walks the port slot newest
    // first: the SO_REUSEPORT socket on 127.0.0.1 grants the exemption and
    // ends the walk. Past ten, udp_lib_lport_inuse2 walks the hash2 slot of
    // 127.0.0.1 (the same exemption ends that slot), then the wildcard's
    // slot, where 0.0.0.0 has no SO_REUSEPORT: EADDRINUSE. 6.18.44 answered
    // ok, ok, EADDRINUSE, EADDRINUSE for 2, 10, 11 and 12 sockets before it.
    for (pad, want) in [
        (0, None),
        (8, None),
        (9, Some(Errno::Eaddrinuse)),
        (10, Some(Errno::Eaddrinuse)),
    ] {
        let mut v = vec![
            ra(sock(V4, Proto::Udp, "0.0.0.0")),
            ra(rp(sock(V4, Proto::Udp, "127.0.0.1"))),
        ];
        v.extend(padding(pad));
        v.push(rp(sock(V4, Proto::Udp, "127.0.0.1")));
        let n = v.len();
        // Every era with the 4.5 first-overlap rule walks this way.
        for p in PROFILES
            .iter()
            .filter(|p| p.lookup.udp_first_overlap_decides)
        {
            let got = binds(&replay_layout(p, &layout(v.clone(), None)).unwrap());
            assert_eq!(got[..n - 1], vec![None; n - 1], "{} pad {pad}", p.release);
            assert_eq!(got[n - 1], want, "{} with {} before", p.release, n - 1);
        }
    }
}

#[test]
fn udp_wildcard_bind_past_ten_sees_specific_sockets_only_after_the_2026_fix() {
    // 127.0.0.1 (no options), the padding, then 0.0.0.0 (no options).
    // Before "udp: Fix wildcard bind conflict check when using hash2", a
    // wildcard bind past ten walks only the wildcard's hash2 slot, which is
    // empty here, and succeeds (Debian 5.10.262 udp_lib_get_port:
    // `if (hslot->count > 10)`). From the fix (inet_use_hash2_on_bind;
    // Debian 6.1.192 from 6.1.168, 6.12.117 from 6.12.80) it walks the port
    // slot and meets 127.0.0.1. 6.18.44 answered EADDRINUSE for 6, 11 and
    // 12 sockets before it.
    for (pad, before_fix) in [(5, Some(Errno::Eaddrinuse)), (10, None), (11, None)] {
        let mut v = vec![sock(V4, Proto::Udp, "127.0.0.1")];
        v.extend(padding(pad));
        v.push(sock(V4, Proto::Udp, "0.0.0.0"));
        let last = |p: &'static Profile| {
            *binds(&replay_layout(p, &layout(v.clone(), None)).unwrap())
                .last()
                .unwrap()
        };
        for (major, minor) in [(6, 1), (6, 12), (6, 18), (7, 2)] {
            assert_eq!(last(profile(major, minor)), Some(Errno::Eaddrinuse));
        }
        for (major, minor) in [(3, 9), (4, 6), (5, 4), (5, 10), (6, 6), (6, 15)] {
            assert_eq!(
                last(profile(major, minor)),
                before_fix,
                "{major}.{minor} pad {pad}"
            );
        }
    }
}

// Connected UDP (found by verify --layouts' TIME_WAIT / connected UDP /
// SO_INCOMING_CPU draws, seeds 2, 4, 5, 6): from 6.13 `connect()` puts a UDP
// socket with a specific address in the 4-tuple hash and takes it out of its
// reuseport group (`udp_lib_hash4` calls `reuseport_detach_sock`,
// net/ipv4/udp.c, "udp: Add 4-tuple hash for connected sockets"); the old
// group keeps `has_conns`. A later bind joins the group of the most recently
// bound socket it matches (`udp_reuseport_add_sock` walks the port slot from
// its head): the connected one, outside any group, so `reuseport_add_sock`
// makes a new group of the two, whose `has_conns` is clear.

/// The sockets that receive `proto` packets to `daddr`:9000 from 64 sources
/// and ports (IPv4 sources for an IPv4 or v4-mapped destination, else ::1).
fn receivers_of(h: &Host, proto: Proto, daddr: &str) -> std::collections::BTreeSet<usize> {
    let native_v6 = matches!(daddr.parse::<std::net::IpAddr>().unwrap(),
        std::net::IpAddr::V6(a) if a.to_ipv4_mapped().is_none());
    (0..64u16)
        .filter_map(|k| {
            let p = Packet {
                proto,
                tuple: Tuple {
                    saddr: if native_v6 {
                        "::1".parse().unwrap()
                    } else {
                        format!("127.0.{}.{}", k / 8, 1 + k % 8).parse().unwrap()
                    },
                    sport: 40_000 + k,
                    daddr: daddr.parse().unwrap(),
                    dport: 9000,
                },
                device: None,
                ctx: PacketCtx::default(),
            };
            h.lookup(&p).socket
        })
        .collect()
}

/// The sockets that receive datagrams to `daddr`:9000.
fn receivers(h: &Host, daddr: &str) -> std::collections::BTreeSet<usize> {
    receivers_of(h, Proto::Udp, daddr)
}

#[test]
fn udp_connect_leaves_the_group_from_6_13_so_the_next_bind_groups_with_the_connected_socket() {
    // 6.18: [127.0.0.2 SO_REUSEPORT], [the same, connect()ed to
    // 127.0.0.5:4001], [the same]: every datagram to 127.0.0.2 from other
    // peers reaches socket 2, never socket 0.
    let connected = with(rp(sock(V4, Proto::Udp, "127.0.0.2")), |s| {
        s.state = SockState::Connected;
        s.peer = Some("127.0.0.5:4001".parse().unwrap());
    });
    let l = layout(
        vec![
            rp(sock(V4, Proto::Udp, "127.0.0.2")),
            connected,
            rp(sock(V4, Proto::Udp, "127.0.0.2")),
        ],
        None,
    );
    let h = replay_layout(profile(6, 18), &l).unwrap();
    assert_eq!(receivers(&h, "127.0.0.2"), [2].into());
    let r = h.results();
    assert_eq!(
        r[1].group, r[2].group,
        "the bind after groups with the connected socket"
    );
    assert_ne!(r[0].group, r[2].group);
    // 6.12 (read from source: no 4-tuple hash): the connected socket stays
    // in the one group, which skips it, and has_conns keeps the scan going;
    // sockets 0 and 2 share the datagrams.
    let h = replay_layout(profile(6, 12), &l).unwrap();
    assert_eq!(receivers(&h, "127.0.0.2"), [0, 2].into());
}

/// `n` UDP SO_REUSEPORT sockets on `addr`, socket `c` `connect()`ed to
/// `peer` right after its bind.
fn udp_with_connected(family: Family, addr: &str, n: usize, c: usize, peer: &str) -> Layout {
    let socks = (0..n)
        .map(|i| {
            with(rp(sock(family, Proto::Udp, addr)), |s| {
                if i == c {
                    s.state = SockState::Connected;
                    s.peer = Some(peer.parse().unwrap());
                }
            })
        })
        .collect();
    layout(socks, None)
}

#[test]
fn udp_inet6_bind_after_a_connect_joins_the_earlier_unconnected_group_as_the_slot_keeps_v6_at_its_tail(
) {
    // Recorded on 6.18.44 (2026-11-24, 300 datagrams from ephemeral ports
    // of ::1 or 127.0.0.2 each): AF_INET6 on ::1 and on ::ffff:127.0.0.2,
    // [SO_REUSEPORT] x n with socket `c` connect()ed. The sockets bound
    // after the connected one share the datagrams with socket 0 (about
    // evenly: one group without the connected socket), where AF_INET joins
    // the connected socket's new group and socket 0 receives none.
    let v6 = Family::Inet6;
    for (addr, peer) in [
        ("::1", "[::1]:4001"),
        ("::ffff:127.0.0.2", "[::ffff:127.0.0.5]:4001"),
    ] {
        let h = replay_layout(profile(6, 18), &udp_with_connected(v6, addr, 3, 1, peer)).unwrap();
        assert_eq!(
            receivers(&h, addr),
            [0, 2].into(),
            "{addr}: [0, 1 connected, 2]"
        );
        let h = replay_layout(profile(6, 18), &udp_with_connected(v6, addr, 4, 1, peer)).unwrap();
        assert_eq!(
            receivers(&h, addr),
            [0, 2, 3].into(),
            "{addr}: [0, 1 connected, 2, 3]"
        );
        let h = replay_layout(profile(6, 18), &udp_with_connected(v6, addr, 4, 2, peer)).unwrap();
        assert_eq!(
            receivers(&h, addr),
            [0, 1, 3].into(),
            "{addr}: [0, 1, 2 connected, 3]"
        );
    }
    let v4 = |n, c| udp_with_connected(V4, "127.0.0.2", n, c, "127.0.0.5:4001");
    let h = replay_layout(profile(6, 18), &v4(4, 1)).unwrap();
    assert_eq!(
        receivers(&h, "127.0.0.2"),
        [2, 3].into(),
        "AF_INET [0, 1 connected, 2, 3]"
    );
    let h = replay_layout(profile(6, 18), &v4(4, 2)).unwrap();
    assert_eq!(
        receivers(&h, "127.0.0.2"),
        [3].into(),
        "AF_INET [0, 1, 2 connected, 3]"
    );
}

#[test]
fn tcp_mapped_bind_misses_a_mapped_wildcard_socket_in_debian_6_1_only() {
    // [AF_INET6 ::ffff:0.0.0.0, bound], [AF_INET6 ::ffff:127.0.0.1
    // SO_REUSEPORT]: Debian 6.1.176 booted under QEMU let the second bind
    // succeed (verify --kernels 6.1 --layouts 200, seed 11, drawn layout
    // 188); its bhash2 wildcard check matches an AF_INET6 bucket only at `::`
    // (inet_bind2_bucket_match_addr_any, net/ipv4/inet_hashtables.c in
    // 6.1.192). 6.18.44 refuses it (measured by hand, 2026-11-24).
    let l = layout(
        vec![
            with(sock(Family::Inet6, Proto::Tcp, "::ffff:0.0.0.0"), |s| {
                s.state = SockState::Bound
            }),
            rp(sock(Family::Inet6, Proto::Tcp, "::ffff:127.0.0.1")),
        ],
        None,
    );
    let h = replay_layout(profile(6, 1), &l).unwrap();
    assert_eq!(binds(&h), [None, None]);
    // listen() runs the same check (inet_csk_get_port): 6.1.176 let socket
    // 1 listen and receive the connections to 127.0.0.1.
    assert_eq!(listens(&h), [None, None]);
    let h = replay_layout(profile(6, 18), &l).unwrap();
    assert_eq!(binds(&h), [None, Some(Errno::Eaddrinuse)]);
    // An AF_INET socket on 127.0.0.1 is still refused in 6.1: a bucket of
    // the other family matches at ::ffff:0.0.0.0.
    let l4 = layout(
        vec![
            with(sock(Family::Inet6, Proto::Tcp, "::ffff:0.0.0.0"), |s| {
                s.state = SockState::Bound
            }),
            rp(sock(V4, Proto::Tcp, "127.0.0.1")),
        ],
        None,
    );
    let h = replay_layout(profile(6, 1), &l4).unwrap();
    assert_eq!(binds(&h), [None, Some(Errno::Eaddrinuse)]);
}

/// A call log in JSON, replayed on 6.18.
fn replay_6_18(log: &str) -> Host {
    let log: reuseport_model::lookup::CallLog = serde_json::from_str(log).unwrap();
    Host::run(profile(6, 18), &log).unwrap()
}

#[test]
fn listen_and_connect_after_a_failed_bind_autobind_a_random_port_of_the_default_range() {
    // The bind checker answered "listen() refused: EINVAL" here, for want of
    // an `ephemeral` range in the call log. Linux 6.18.44 answers ok
    // (measured 2026-11-24 on loopback, twice; /proc/sys/net/ipv4/
    // ip_local_port_range read 32768 60999, ip_autobind_reuse 0): next to
    // two SO_REUSEPORT listeners of UID 0 on 127.0.0.1:P, a UID 1000
    // SO_REUSEPORT socket's bind to it fails (EADDRINUSE) and its listen()
    // succeeds on 0.0.0.0 and a random port (43911, 46931:
    // inet_csk_listen_start -> inet_csk_find_open_port); a plain socket's
    // bind fails and its connect() to P succeeds from a random port (56946,
    // 46938); a UDP socket whose bind failed connects from one (36954,
    // 44736: inet_autobind). Connections to P reach the two listeners only.
    // The port is random, so the model gives the range, not a port, and
    // keeps the socket out of the listeners' group.
    let h = replay_6_18(
        r#"{"calls": [
        {"call": "socket", "family": "inet", "proto": "tcp"},
        {"call": "setsockopt", "fd": 0, "opt": {"reuseport": true}},
        {"call": "bind", "fd": 0, "addr": "127.0.0.1", "port": 9000},
        {"call": "listen", "fd": 0},
        {"call": "socket", "family": "inet", "proto": "tcp"},
        {"call": "setsockopt", "fd": 1, "opt": {"reuseport": true}},
        {"call": "bind", "fd": 1, "addr": "127.0.0.1", "port": 9000},
        {"call": "listen", "fd": 1},
        {"call": "socket", "family": "inet", "proto": "udp"},
        {"call": "bind", "fd": 2, "addr": "127.0.0.1", "port": 9001},
        {"call": "socket", "family": "inet", "proto": "tcp", "uid": 1000},
        {"call": "setsockopt", "fd": 3, "opt": {"reuseport": true}},
        {"call": "bind", "fd": 3, "addr": "127.0.0.1", "port": 9000},
        {"call": "listen", "fd": 3},
        {"call": "socket", "family": "inet", "proto": "tcp", "uid": 1000},
        {"call": "bind", "fd": 4, "addr": "127.0.0.1", "port": 9000},
        {"call": "connect", "fd": 4, "addr": "127.0.0.1", "port": 9000},
        {"call": "socket", "family": "inet", "proto": "udp", "uid": 1000},
        {"call": "bind", "fd": 5, "addr": "127.0.0.1", "port": 9001},
        {"call": "connect", "fd": 5, "addr": "127.0.0.1", "port": 9001}
    ]}"#,
    );
    let answers: Vec<Option<Errno>> = h
        .answers()
        .iter()
        .map(|a| a.as_ref().map(|r| r.errno))
        .collect();
    let ok = None;
    let inuse = Some(Errno::Eaddrinuse);
    assert_eq!(
        answers,
        [
            ok, ok, ok, ok, // 0: listener on 9000
            ok, ok, ok, ok, // 1: its partner
            ok, ok, // 2: UDP on 9001
            ok, ok, inuse, ok, // 3: UID 1000, bind refused, listen autobinds
            ok, inuse, ok, // 4: bind refused, connect autobinds
            ok, inuse, ok, // 5: UDP bind refused, connect autobinds
        ],
        "each call's answer as 6.18.44 gave it"
    );
    let r = h.results();
    let range = r[3].random_port.expect("listen() drew a port");
    assert_eq!(
        (range.low, range.high, range.autobind_reuse),
        (32768, 60999, false)
    );
    assert!(r[3].receiving, "the autobound socket listens");
    assert_eq!(r[3].group, None, "not in the listeners' group on 9000");
    assert!(r[0].group.is_some() && r[0].group == r[1].group);
    assert!(r[4].random_port.is_some() && r[5].random_port.is_some());
    assert_eq!(r[1].random_port, None, "a bind to 9000 draws nothing");
    let mut reached = std::collections::BTreeSet::new();
    for k in 0..64u16 {
        let p = Packet {
            proto: Proto::Tcp,
            tuple: Tuple {
                saddr: "127.0.0.1".parse().unwrap(),
                sport: 40_000 + k,
                daddr: "127.0.0.1".parse().unwrap(),
                dport: 9000,
            },
            device: None,
            ctx: PacketCtx::default(),
        };
        reached.extend(h.lookup(&p).socket);
    }
    assert_eq!(
        reached,
        [0, 1].into(),
        "connections to 9000 reach the two listeners"
    );
}

#[test]
fn the_default_ephemeral_range_ends_at_61000_before_4_6() {
    // 07f4c90062f8 (4.6) moved the high end from 61000 to 60999; read from
    // source (inet_init_net, net/ipv4/af_inet.c), not measured.
    let log: reuseport_model::lookup::CallLog = serde_json::from_str(
        r#"{"calls": [
        {"call": "socket", "family": "inet", "proto": "tcp"},
        {"call": "listen", "fd": 0}
    ]}"#,
    )
    .unwrap();
    let high = |p: &'static Profile| {
        Host::run(p, &log).unwrap().results()[0]
            .random_port
            .map(|e| e.high)
    };
    assert_eq!(high(profile(4, 5)), Some(61000));
    assert_eq!(high(profile(4, 6)), Some(60999));
}

#[test]
fn a_v6only_socket_connecting_to_a_v4_mapped_peer_is_refused_enetunreach_before_any_autobind() {
    // verify --layouts 100 --call-logs (seed 11) on 6.18.44, 2026-11-24:
    // an AF_INET6 IPV6_V6ONLY socket whose bind to ::ffff:127.0.0.1 failed
    // (EINVAL) then connect()s to ::ffff:127.0.0.5; the kernel answered
    // errno 101, ENETUNREACH, over TCP and UDP (tcp_v6_connect,
    // __ip6_datagram_connect), where the model had autobound and said ok.
    for proto in ["tcp", "udp"] {
        let h = replay_6_18(&format!(
            r#"{{"calls": [
            {{"call": "socket", "family": "inet6", "proto": "{proto}"}},
            {{"call": "setsockopt", "fd": 0, "opt": {{"v6only": true}}}},
            {{"call": "bind", "fd": 0, "addr": "::ffff:127.0.0.1", "port": 8080}},
            {{"call": "connect", "fd": 0, "addr": "::ffff:127.0.0.5", "port": 4001}}
        ]}}"#
        ));
        let answers: Vec<Option<Errno>> = h
            .answers()
            .iter()
            .map(|a| a.as_ref().map(|r| r.errno))
            .collect();
        assert_eq!(
            answers,
            [None, None, Some(Errno::Einval), Some(Errno::Enetunreach)],
            "{proto}"
        );
        assert_eq!(h.results()[0].random_port, None, "{proto}: nothing drawn");
    }
}

/// A call log in JSON, replayed in profile `p`: each call's errno.
fn answers_in(p: &'static Profile, log: &str) -> (Host, Vec<Option<Errno>>) {
    let log: reuseport_model::lookup::CallLog = serde_json::from_str(log).unwrap();
    let h = Host::run(p, &log).unwrap();
    let a = h
        .answers()
        .iter()
        .map(|a| a.as_ref().map(|r| r.errno))
        .collect();
    (h, a)
}

/// Socket 0 (`first`, UID `uid0`) binds `addr0`, connects to the peer and
/// closes, with SO_LINGER `linger` (JSON) set before the close when given;
/// then socket 1 (`second`, UID `uid1`, SO_REUSEPORT) binds `addr1`.
fn closed_then_bind(
    first: (&str, u32, &str, &str),
    second: (&str, u32, &str),
    linger: Option<&str>,
) -> String {
    let (fam0, uid0, addr0, peer) = first;
    let (fam1, uid1, addr1) = second;
    let linger = linger.map_or(String::new(), |l| {
        format!(r#"{{"call": "setsockopt", "fd": 0, "opt": {{"linger": {l}}}}},"#)
    });
    format!(
        r#"{{"calls": [
        {{"call": "socket", "family": "{fam0}", "proto": "tcp", "uid": {uid0}}},
        {{"call": "setsockopt", "fd": 0, "opt": {{"reuseport": true}}}},
        {{"call": "socket", "family": "{fam1}", "proto": "tcp", "uid": {uid1}}},
        {{"call": "setsockopt", "fd": 1, "opt": {{"reuseport": true}}}},
        {{"call": "bind", "fd": 0, "addr": "{addr0}", "port": 9000}},
        {{"call": "connect", "fd": 0, "addr": "{peer}", "port": 4001}},
        {linger}
        {{"call": "close", "fd": 0}},
        {{"call": "bind", "fd": 1, "addr": "{addr1}", "port": 9000}}
    ]}}"#
    )
}

#[test]
fn a_tcp_socket_closed_while_connected_is_still_its_owners_in_fin_wait1_so_another_uid_cannot_bind()
{
    // verify --layouts 500 --call-logs on 6.18.44 (2026-11-24), seeds 5 and
    // 7, seven drawn logs shrunk to these calls: the kernel answered the
    // last bind EADDRINUSE where the model, taking the closed socket for
    // TIME_WAIT, said ok. By hand (Python, a private netns, the peer a
    // listener on 127.0.0.5:4001 whose queue is never drained): right after
    // close() /proc/net/tcp shows the socket in FIN_WAIT1 (st 04), a full
    // socket with its retransmit timer and UID 1000, and a UID 0 bind fails;
    // the peer's delayed ACK of the FIN turns it, 1 – 25 ms later, into a
    // timewait socket (st 05 FIN_WAIT2, timer 3, uid 0 shown), and from
    // then on the bind succeeds. inet_bind_conflict
    // (net/ipv4/inet_connection_sock.c) waives the UID only for sk_state
    // TCP_TIME_WAIT; a timewait socket (inet_twsk_alloc, whatever its
    // substate) reads so, an orphan in FIN_WAIT1 does not. A call log's
    // calls follow at once, so the model answers as the kernel does then.
    let v4 = ("inet", 1000, "127.0.0.1", "127.0.0.5");
    let mapped = ("inet6", 1000, "::ffff:127.0.0.1", "::ffff:127.0.0.5");
    let logs = [
        closed_then_bind(v4, ("inet", 0, "127.0.0.1"), None), // seed 7, log 317
        closed_then_bind(
            ("inet", 0, "127.0.0.2", "127.0.0.5"),
            ("inet", 1000, "0.0.0.0"),
            None,
        ), // seed 5, log 78
        closed_then_bind(
            ("inet", 0, "127.0.0.1", "127.0.0.5"),
            ("inet6", 1000, "::ffff:0.0.0.0"),
            None,
        ), // seed 5, log 13
        closed_then_bind(mapped, ("inet", 0, "0.0.0.0"), None), // seed 7, log 45
        closed_then_bind(
            ("inet6", 0, "::ffff:127.0.0.1", "::ffff:127.0.0.5"),
            ("inet6", 1000, "::ffff:127.0.0.1"),
            None,
        ), // seed 7, log 452
    ];
    let ok = None;
    for p in PROFILES.iter() {
        for log in &logs {
            let (h, a) = answers_in(p, log);
            assert_eq!(
                a,
                [ok, ok, ok, ok, ok, ok, ok, Some(Errno::Eaddrinuse)],
                "{}: {log}",
                p.release
            );
            let r = h.answers()[7].as_ref().unwrap();
            assert!(
                matches!(
                    r.rule,
                    reuseport_model::message::RefusalRule::ClosingUidsDiffer { .. }
                ),
                "{}: {:?}",
                p.release,
                r.rule
            );
            assert_eq!(r.with, Some(0));
        }
        // The same UID shares the port, closed socket or not (6.18: ok).
        let (_, a) = answers_in(p, &closed_then_bind(v4, ("inet", 1000, "127.0.0.1"), None));
        assert_eq!(a[7], ok, "{}", p.release);
    }
}

#[test]
fn so_linger_makes_close_wait_for_the_ack_and_leave_a_timewait_socket_or_with_0_a_reset() {
    // 6.18.44, by hand (2026-11-24): with SO_LINGER {1, 1} or {1, 5}
    // close() returns after 0.5 – 6 ms, the socket already a timewait
    // socket (FIN_WAIT2, uid 0 in /proc/net/tcp), and a SO_REUSEPORT bind
    // of another UID succeeds, while one without SO_REUSEPORT (or with
    // SO_REUSEADDR alone against a socket without it) still fails. With
    // {1, 0} close() resets the connection, nothing is left, and every
    // bind succeeds. __tcp_close (net/ipv4/tcp.c): sk_stream_wait_close
    // waits while FIN_WAIT1, then tcp_time_wait(sk, TCP_FIN_WAIT2, ..);
    // a zero linger time calls tcp_disconnect. Every release.
    let v4 = ("inet", 1000, "127.0.0.1", "127.0.0.5");
    let ok = None;
    let inuse = Some(Errno::Eaddrinuse);
    for p in PROFILES.iter() {
        for linger in ["1", "5"] {
            let (_, a) = answers_in(
                p,
                &closed_then_bind(v4, ("inet", 0, "127.0.0.1"), Some(linger)),
            );
            assert_eq!(a[8], ok, "{} linger {linger}", p.release);
            let plain = closed_then_bind(v4, ("inet", 0, "127.0.0.1"), Some(linger)).replace(
                r#"{"call": "setsockopt", "fd": 1, "opt": {"reuseport": true}}"#,
                r#"{"call": "setsockopt", "fd": 1, "opt": {"reuseaddr": true}}"#,
            );
            let (_, a) = answers_in(p, &plain);
            assert_eq!(a[8], inuse, "{} linger {linger}, SO_REUSEADDR", p.release);
        }
        let (_, a) = answers_in(
            p,
            &closed_then_bind(v4, ("inet", 0, "127.0.0.1"), Some("0")),
        );
        assert_eq!(a[8], ok, "{} linger 0", p.release);
        let plain = closed_then_bind(v4, ("inet", 0, "127.0.0.1"), Some("0")).replace(
            r#"{"call": "setsockopt", "fd": 1, "opt": {"reuseport": true}}"#,
            r#"{"call": "setsockopt", "fd": 1, "opt": {"reuseaddr": true}}"#,
        );
        let (_, a) = answers_in(p, &plain);
        assert_eq!(a[8], ok, "{} linger 0: the port is free", p.release);
        // SO_LINGER off again: FIN_WAIT1, as without it.
        let (_, a) = answers_in(
            p,
            &closed_then_bind(v4, ("inet", 0, "127.0.0.1"), Some("null")),
        );
        assert_eq!(a[8], inuse, "{} linger null", p.release);
    }
}

#[test]
fn the_earlier_forms_time_wait_socket_closes_with_so_linger_so_its_owner_does_not_count() {
    // The layout form's TIME_WAIT socket (verify --layouts makes a real one:
    // the peer closes too) keeps the UID waiver: its calls set SO_LINGER
    // before close().
    let l = layout(
        vec![
            with(rp(sock(V4, Proto::Tcp, "127.0.0.1")), |s| {
                s.state = SockState::TimeWait;
                s.uid = 1000
            }),
            rp(sock(V4, Proto::Tcp, "127.0.0.1")),
        ],
        None,
    );
    for p in PROFILES.iter() {
        let h = replay_layout(p, &l).unwrap();
        assert_eq!(binds(&h), [None, None], "{}", p.release);
    }
}

/// Replays `log` (sockets on port 9000) in 6.18: each call's errno.
fn on_6_18(log: &str) -> (Host, Vec<Option<Errno>>) {
    answers_in(profile(6, 18), log)
}

#[test]
fn udp_slot_place_is_fixed_at_bind_while_the_bind_check_reads_so_reuseport_as_it_is_now() {
    // verify --layouts 1000 --call-logs --seed 7, drawn log 979 (6.18.44,
    // 2026-11-24), and by hand. udp_lib_get_port (net/ipv4/udp.c) puts an
    // AF_INET6 socket at the port slot's tail only if it has SO_REUSEPORT
    // when it binds (4.6, d894ba18d4e4); udp_lib_lport_inuse reads the
    // other socket's sk_reuseport as it is at the later bind. Here socket
    // 1 (::, SO_REUSEADDR) binds without SO_REUSEPORT, so at the head,
    // and sets it afterwards: socket 0's bind meets it first and succeeds
    // (the model had put it at the tail, behind socket 2, and refused).
    // 6.18: every call ok; datagrams to 127.0.0.2 and ::1 reach 0 and 1.
    let (h, a) = on_6_18(
        r#"{"calls": [
        {"call": "socket", "family": "inet6", "proto": "udp"},
        {"call": "setsockopt", "fd": 0, "opt": {"reuseport": true}},
        {"call": "socket", "family": "inet6", "proto": "udp"},
        {"call": "setsockopt", "fd": 1, "opt": {"reuseaddr": true}},
        {"call": "socket", "family": "inet", "proto": "udp"},
        {"call": "setsockopt", "fd": 2, "opt": {"reuseaddr": true}},
        {"call": "bind", "fd": 2, "addr": "127.0.0.1", "port": 9000},
        {"call": "bind", "fd": 1, "addr": "::", "port": 9000},
        {"call": "setsockopt", "fd": 1, "opt": {"reuseport": true}},
        {"call": "bind", "fd": 0, "addr": "::", "port": 9000}
    ]}"#,
    );
    assert_eq!(a, [None; 10]);
    assert_eq!(receivers(&h, "127.0.0.2"), [0, 1].into());
    assert_eq!(receivers(&h, "::1"), [0, 1].into());
    // The control: socket 1 with SO_REUSEPORT before its bind sits at the
    // tail, socket 0 (127.0.0.1, SO_REUSEADDR) is met first, and the third
    // bind fails (6.18: EADDRINUSE; 127.0.0.1 reaches 0, ::1 reaches 1).
    let log = |late: bool| {
        let (before, after) = if late {
            (
                "",
                r#"{"call": "setsockopt", "fd": 1, "opt": {"reuseport": true}},"#,
            )
        } else {
            (
                r#"{"call": "setsockopt", "fd": 1, "opt": {"reuseport": true}},"#,
                "",
            )
        };
        format!(
            r#"{{"calls": [
            {{"call": "socket", "family": "inet", "proto": "udp"}},
            {{"call": "setsockopt", "fd": 0, "opt": {{"reuseaddr": true}}}},
            {{"call": "bind", "fd": 0, "addr": "127.0.0.1", "port": 9000}},
            {{"call": "socket", "family": "inet6", "proto": "udp"}},
            {{"call": "setsockopt", "fd": 1, "opt": {{"reuseaddr": true}}}},
            {before}
            {{"call": "bind", "fd": 1, "addr": "::", "port": 9000}},
            {after}
            {{"call": "socket", "family": "inet6", "proto": "udp"}},
            {{"call": "setsockopt", "fd": 2, "opt": {{"reuseport": true}}}},
            {{"call": "bind", "fd": 2, "addr": "::", "port": 9000}}
        ]}}"#
        )
    };
    let (h, a) = on_6_18(&log(false));
    assert_eq!(a.last().unwrap(), &Some(Errno::Eaddrinuse));
    assert_eq!(receivers(&h, "127.0.0.1"), [0].into());
    assert_eq!(receivers(&h, "::1"), [1].into());
    // 6.18: with SO_REUSEPORT set after the bind, every call ok;
    // 127.0.0.1 reaches 0, ::1 reaches 1 and 2.
    let (h, a) = on_6_18(&log(true));
    assert!(a.iter().all(Option::is_none), "{a:?}");
    assert_eq!(receivers(&h, "127.0.0.1"), [0].into());
    assert_eq!(receivers(&h, "::1"), [1, 2].into());
}

/// Two sockets on 127.0.0.1:9000 of `proto`: socket 0 binds first, with
/// `calls0` around its bind (`{B}` marks the bind); then socket 1, with
/// SO_REUSEPORT, binds, and `tail` follows.
fn late_option(proto: &str, calls0: &str, tail: &str) -> String {
    let calls0 = calls0.replace(
        "{B}",
        r#"{"call": "bind", "fd": 0, "addr": "127.0.0.1", "port": 9000}"#,
    );
    format!(
        r#"{{"calls": [
        {{"call": "socket", "family": "inet", "proto": "{proto}"}},
        {calls0},
        {{"call": "socket", "family": "inet", "proto": "{proto}"}},
        {{"call": "setsockopt", "fd": 1, "opt": {{"reuseport": true}}}},
        {{"call": "bind", "fd": 1, "addr": "127.0.0.1", "port": 9000}}
        {tail}
    ]}}"#
    )
}

const RP0_ON: &str = r#"{"call": "setsockopt", "fd": 0, "opt": {"reuseport": true}}"#;
const RP0_OFF: &str = r#"{"call": "setsockopt", "fd": 0, "opt": {"reuseport": false}}"#;

#[test]
fn udp_so_reuseport_set_or_cleared_after_bind_is_what_a_later_bind_reads() {
    // 6.18.44 by hand (2026-11-24): set after socket 0's bind, the second
    // bind succeeds and 48 datagrams to 127.0.0.1 reach both (socket 1's
    // join makes a group for socket 0 first: reuseport_add_sock ->
    // reuseport_alloc, net/core/sock_reuseport.c); cleared after its bind,
    // the second bind fails EADDRINUSE and only socket 0 receives.
    let (h, a) = on_6_18(&late_option("udp", &format!("{{B}}, {RP0_ON}"), ""));
    assert!(a.iter().all(Option::is_none), "{a:?}");
    assert_eq!(receivers(&h, "127.0.0.1"), [0, 1].into());
    let (h, a) = on_6_18(&late_option(
        "udp",
        &format!("{RP0_ON}, {{B}}, {RP0_OFF}"),
        "",
    ));
    assert_eq!(a.last().unwrap(), &Some(Errno::Eaddrinuse));
    assert_eq!(receivers(&h, "127.0.0.1"), [0].into());
}

/// The listeners that TCP connections to 127.0.0.1:9000 reach.
fn tcp_receivers(h: &Host) -> std::collections::BTreeSet<usize> {
    receivers_of(h, Proto::Tcp, "127.0.0.1")
}

#[test]
fn tcp_so_reuseport_changed_after_bind_or_listen_is_what_later_binds_listens_and_joins_read() {
    // 6.18.44 by hand (2026-11-24), 48 connections to 127.0.0.1 each.
    let listen = |fd: usize| format!(r#", {{"call": "listen", "fd": {fd}}}"#);
    let ok = |a: &[Option<Errno>]| a.iter().all(Option::is_none);
    // Set after bind: the second bind passes the conflict scan
    // (inet_bind_conflict reads sk2->sk_reuseport now); both listen and
    // share a group: both receive.
    let (h, a) = on_6_18(&late_option(
        "tcp",
        &format!("{{B}}, {RP0_ON}"),
        &(listen(0) + &listen(1)),
    ));
    assert!(ok(&a), "{a:?}");
    assert_eq!(tcp_receivers(&h), [0, 1].into());
    // Set after listen: socket 1's listen joins socket 0, which gets its
    // group then (inet_reuseport_add_sock -> reuseport_add_sock): both.
    let (h, a) = on_6_18(&late_option(
        "tcp",
        &format!("{{B}}, {{\"call\": \"listen\", \"fd\": 0}}, {RP0_ON}"),
        &listen(1),
    ));
    assert!(ok(&a), "{a:?}");
    assert_eq!(tcp_receivers(&h), [0, 1].into());
    // Cleared after both bound: socket 0's listen() checks the port again
    // (inet_csk_get_port from inet_csk_listen_start), no longer covered by
    // SO_REUSEPORT: EADDRINUSE; socket 1 alone receives.
    let (h, a) = on_6_18(&late_option(
        "tcp",
        &format!("{RP0_ON}, {{B}}"),
        &format!(", {RP0_OFF}{}{}", listen(1), listen(0)),
    ));
    assert_eq!(a.last().unwrap(), &Some(Errno::Eaddrinuse));
    assert!(a[..a.len() - 1].iter().all(Option::is_none), "{a:?}");
    assert_eq!(tcp_receivers(&h), [1].into());
    // Cleared after socket 0 listens: socket 1's bind and listen succeed
    // without the conflict scan, as the bind bucket still records
    // FASTREUSEPORT_ANY for UID 0 (sk_reuseport_match); socket 1 makes a
    // group of its own, is first in the list, and takes every connection.
    let (h, a) = on_6_18(&late_option(
        "tcp",
        &format!("{RP0_ON}, {{B}}, {{\"call\": \"listen\", \"fd\": 0}}, {RP0_OFF}"),
        &listen(1),
    ));
    assert!(ok(&a), "{a:?}");
    assert_eq!(tcp_receivers(&h), [1].into());
}

/// The host a socket-list layout stands for: its calls, replayed (the
/// reader's conversion, then the one replay).
fn replay_layout(
    p: &'static reuseport_model::Profile,
    l: &reuseport_model::lookup::Layout,
) -> Result<reuseport_model::lookup::Host, reuseport_model::lookup::LayoutError> {
    reuseport_model::lookup::Host::run(p, &reuseport_model::lookup::CallLog::from_layout(l)?)
}
