//! The paste parsers against real command output captured on a Linux
//! machine (tests/fixtures/paste/, whose README lists the connections that
//! were open), with the expected tuples written from that list — never
//! from the parser's own output.
//!
//! One file on purpose: a test per format beside its fixture's expected
//! tuples, all read from the one fixtures README.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use proptest::prelude::*;
use reuseport_model::paste::{
    detect, shown, Basis, Column, Columns, Conn, Decision, Detected, Field, Format, Line,
    LineError, ListenPorts, Meaning, Parser, Role, Side, Sides, Skip, Undecided, MAX_LINE_BYTES,
};
use reuseport_model::{Proto, Tuple};

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/paste/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn ep(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// The TCP connections the capture script held open, client first, with
/// the server side as the server's socket names it (the dual-stack server's
/// side is `::ffff:127.0.0.1`, which is IPv4).
const TCP: [(&str, &str); 7] = [
    ("127.0.0.1:41001", "127.0.0.1:18080"),
    ("127.0.0.1:41002", "127.0.0.1:18080"),
    ("127.0.0.1:41003", "127.0.0.1:18080"),
    ("127.0.0.2:41004", "127.0.0.1:18080"),
    ("[::1]:41011", "[::1]:18081"),
    ("[::1]:41012", "[::1]:18081"),
    ("127.0.0.1:41021", "127.0.0.1:18082"),
];
const UDP: (&str, &str) = ("127.0.0.1:41031", "127.0.0.1:15353");

/// What a file gives: its connections as (a, b, meaning, proto) and its
/// listening sockets, with every line's error.
struct Read {
    detected: Detected,
    conns: Vec<Conn>,
    listening: Vec<SocketAddr>,
    errors: Vec<(usize, LineError)>,
}

fn read(text: &str) -> Read {
    let lines: Vec<&str> = text.lines().collect();
    let detected = detect(&lines);
    let parser = Parser::new(&detected);
    let mut r = Read {
        detected,
        conns: vec![],
        listening: vec![],
        errors: vec![],
    };
    for (i, l) in lines.iter().enumerate() {
        match parser.line(l) {
            Ok(Line::Conn(c)) => r.conns.push(c),
            Ok(Line::Listening { addr, .. }) => r.listening.push(addr),
            Ok(Line::Skip(_)) => {}
            Err(e) => r.errors.push((i + 1, e)),
        }
    }
    r
}

fn pairs_of(conns: &[Conn]) -> Vec<(SocketAddr, SocketAddr)> {
    let mut v: Vec<_> = conns.iter().map(|c| (c.a, c.b)).collect();
    v.sort();
    v
}

/// Both ends of each connection, as a host listing loopback sockets shows
/// them: once from the client's socket, once from the server's.
fn both_ends<'a>(
    conns: impl IntoIterator<Item = &'a (&'a str, &'a str)>,
) -> Vec<(SocketAddr, SocketAddr)> {
    let mut v = vec![];
    for (c, s) in conns {
        v.push((ep(c), ep(s)));
        v.push((ep(s), ep(c)));
    }
    v.sort();
    v
}

fn sorted(mut v: Vec<(SocketAddr, SocketAddr)>) -> Vec<(SocketAddr, SocketAddr)> {
    v.sort();
    v
}

#[test]
fn ss_listings_give_both_ends_of_every_loopback_connection() {
    // ss -tn, -tnp (users:(("python3",…))), -tne (ino:, sk:, cgroup:) and
    // -tnH list the same sockets; the extra columns are ignored.
    for name in [
        "ss-tn.txt",
        "ss-tnp.txt",
        "ss-tne.txt",
        "ss-tn-noheader.txt",
    ] {
        let r = read(&fixture(name));
        assert_eq!(r.detected.format, Format::Ss, "{name}");
        assert_eq!(r.detected.header, name != "ss-tn-noheader.txt", "{name}");
        assert!(r.errors.is_empty(), "{name}: {:?}", r.errors);
        assert_eq!(pairs_of(&r.conns), both_ends(&TCP), "{name}");
        assert!(r.conns.iter().all(|c| c.meaning == Meaning::LocalFirst));
        assert!(r.listening.is_empty(), "{name}");
    }
}

#[test]
fn ss_all_states_give_the_listeners_and_the_netid_protocol() {
    let r = read(&fixture("ss-tan.txt"));
    assert_eq!(r.detected.format, Format::Ss);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(pairs_of(&r.conns), both_ends(&TCP));
    let listening: BTreeSet<_> = r.listening.iter().copied().collect();
    assert_eq!(
        listening,
        BTreeSet::from([ep("127.0.0.1:18080"), ep("[::1]:18081"), ep("[::]:18082")])
    );

    // ss -an has the Netid column: tcp and udp; the unconnected UDP server
    // is no connection but a member of its port's group (UDP has no LISTEN
    // state), the connected client is a connection.
    let r = read(&fixture("ss-an.txt"));
    assert_eq!(r.detected.format, Format::Ss);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let mut want = both_ends(&TCP);
    want.push((ep(UDP.0), ep(UDP.1)));
    assert_eq!(pairs_of(&r.conns), sorted(want));
    let udp: Vec<_> = r
        .conns
        .iter()
        .filter(|c| c.proto == Some(Proto::Udp))
        .collect();
    assert_eq!(udp.len(), 1);
    assert!(r.conns.iter().all(|c| c.proto.is_some()));
    assert_eq!(r.listening.len(), 4);
    assert!(r.listening.contains(&ep(UDP.1)));
}

#[test]
fn ss_ipv6_listing_reads_brackets_and_v4_mapped_addresses() {
    let r = read(&fixture("ss-tn6.txt"));
    assert_eq!(r.detected.format, Format::Ss);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    // The IPv6 sockets: both ends of the ::1 connections, and the
    // dual-stack server's end of 41021, whose v4-mapped address is IPv4.
    let mut want = both_ends(&TCP[4..6]);
    want.push((ep(TCP[6].1), ep(TCP[6].0)));
    assert_eq!(pairs_of(&r.conns), sorted(want));
    assert!(r.conns.iter().any(|c| c.a.is_ipv4()));
}

#[test]
fn netstat_listings_give_the_same_sockets_as_ss() {
    for name in ["netstat-tn.txt", "netstat-tun.txt", "netstat-tan.txt"] {
        let r = read(&fixture(name));
        assert_eq!(r.detected.format, Format::Netstat, "{name}");
        assert!(r.detected.header, "{name}");
        assert!(r.errors.is_empty(), "{name}: {:?}", r.errors);
        let mut want = both_ends(&TCP);
        if name == "netstat-tun.txt" {
            want.push((ep(UDP.0), ep(UDP.1)));
        }
        assert_eq!(pairs_of(&r.conns), sorted(want), "{name}");
        assert!(r.conns.iter().all(|c| c.proto.is_some()), "{name}");
        let listening: BTreeSet<_> = r.listening.iter().copied().collect();
        if name == "netstat-tan.txt" {
            assert_eq!(
                listening,
                BTreeSet::from([ep("127.0.0.1:18080"), ep("[::1]:18081"), ep("[::]:18082")])
            );
        } else {
            assert!(listening.is_empty(), "{name}");
        }
    }
}

#[test]
fn proc_net_tcp_hex_is_read_in_the_kernels_byte_order() {
    // The brief's own example, worked by hand: 0100007F is the __be32 of
    // 127.0.0.1 printed as a little-endian u32, 1F90 is 8080.
    let d = Detected::named(Format::ProcNet, &[]);
    let l = Parser::new(&d)
        .line("   0: 0100007F:1F90 0200007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 1 1 0")
        .unwrap();
    let Line::Conn(c) = l else { panic!("{l:?}") };
    assert_eq!((c.a, c.b), (ep("127.0.0.1:8080"), ep("127.0.0.2:40000")));

    let r = read(&fixture("proc-net-tcp.txt"));
    assert_eq!(r.detected.format, Format::ProcNet);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    // The AF_INET sockets: both ends of 41001-41004, the client end of 41021.
    let mut want = both_ends(&TCP[..4]);
    want.push((ep(TCP[6].0), ep(TCP[6].1)));
    assert_eq!(pairs_of(&r.conns), sorted(want));
    assert_eq!(r.listening, vec![ep("127.0.0.1:18080")]);

    let r = read(&fixture("proc-net-tcp6.txt"));
    assert_eq!(r.detected.format, Format::ProcNet);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let mut want = both_ends(&TCP[4..6]);
    want.push((ep(TCP[6].1), ep(TCP[6].0)));
    assert_eq!(pairs_of(&r.conns), sorted(want));
    let listening: BTreeSet<_> = r.listening.iter().copied().collect();
    assert_eq!(
        listening,
        BTreeSet::from([ep("[::1]:18081"), ep("[::]:18082")])
    );
}

/// The packets of the tcpdump captures: one TCP connection per family to
/// port 8080, then one UDP datagram per family to 15353.
const DUMP_TCP: [(&str, &str); 2] = [
    ("127.0.0.1:42001", "127.0.0.1:8080"),
    ("[::1]:42002", "[::1]:8080"),
];
const DUMP_UDP: [(&str, &str); 2] = [
    ("127.0.0.1:42003", "127.0.0.1:15353"),
    ("[::1]:42004", "[::1]:15353"),
];

#[test]
fn tcpdump_syn_says_the_client_and_syn_ack_the_server() {
    for name in ["tcpdump-nn.txt", "tcpdump-tt.txt", "tcpdump-any-tttt.txt"] {
        let r = read(&fixture(name));
        assert_eq!(r.detected.format, Format::Tcpdump, "{name}");
        assert!(r.errors.is_empty(), "{name}: {:?}", r.errors);
        // 8 packets per TCP connection, 1 per datagram.
        assert_eq!(r.conns.len(), 18, "{name}");
        let with = |m: Meaning| -> Vec<_> {
            sorted(
                r.conns
                    .iter()
                    .filter(|c| c.meaning == m)
                    .map(|c| (c.a, c.b))
                    .collect(),
            )
        };
        let want: Vec<_> = sorted(DUMP_TCP.iter().map(|(c, s)| (ep(c), ep(s))).collect());
        assert_eq!(with(Meaning::ClientFirst), want, "{name}");
        let back: Vec<_> = sorted(DUMP_TCP.iter().map(|(c, s)| (ep(s), ep(c))).collect());
        assert_eq!(with(Meaning::ServerFirst), back, "{name}");
        let udp: Vec<_> = sorted(
            r.conns
                .iter()
                .filter(|c| c.proto == Some(Proto::Udp))
                .map(|c| (c.a, c.b))
                .collect(),
        );
        assert_eq!(
            udp,
            sorted(DUMP_UDP.iter().map(|(c, s)| (ep(c), ep(s))).collect())
        );
        // Oriented by the server port the user names, every TCP packet is
        // one of the two connections.
        let d = Decision {
            basis: Basis::Bind,
            port: Some(8080),
            addr: None,
            listening: ListenPorts::default(),
        };
        let tuples: BTreeSet<_> = r
            .conns
            .iter()
            .filter(|c| c.proto == Some(Proto::Tcp))
            .map(|c| d.orient(c, false).unwrap())
            .map(|t| {
                (
                    SocketAddr::new(t.saddr, t.sport),
                    SocketAddr::new(t.daddr, t.dport),
                )
            })
            .collect();
        assert_eq!(tuples, want.into_iter().collect(), "{name}");
    }
}

#[test]
fn tcpdump_without_nn_names_hosts_and_the_error_says_to_use_nn() {
    let r = read(&fixture("tcpdump-names.txt"));
    assert_eq!(r.detected.format, Format::Tcpdump);
    // Every line names localhost or http-alt except the IPv6 datagram.
    assert_eq!(r.errors.len(), 17, "{:?}", r.errors);
    assert_eq!(
        pairs_of(&r.conns),
        vec![(ep(DUMP_UDP[1].0), ep(DUMP_UDP[1].1))]
    );
    let (_, first) = &r.errors[0];
    assert_eq!(
        first,
        &LineError::Name {
            format: Format::Tcpdump,
            field: Field::SourceAddress,
            value: "localhost.42001".into()
        }
    );
    assert!(first.to_string().contains("-nn"), "{first}");
    let v6 = &r.errors[8].1;
    assert!(
        matches!(
            v6,
            LineError::Name {
                field: Field::DestinationPort,
                ..
            }
        ),
        "{v6:?}"
    );
}

#[test]
fn conntrack_original_direction_is_client_first() {
    let r = read(&fixture("conntrack-L.txt"));
    assert_eq!(r.detected.format, Format::Conntrack);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let want = sorted(
        [
            ("10.0.0.2:51234", "10.0.0.1:80"),
            ("10.0.0.3:51235", "10.0.0.1:80"),
            ("192.168.2.100:34846", "10.0.0.1:80"),
            ("10.0.0.2:40000", "10.0.0.1:53"),
            ("[fd00::2]:40002", "[fd00::1]:80"),
        ]
        .iter()
        .map(|(c, s)| (ep(c), ep(s)))
        .collect(),
    );
    assert_eq!(pairs_of(&r.conns), want);
    assert!(r.conns.iter().all(|c| c.meaning == Meaning::ClientFirst));
    assert_eq!(
        r.conns
            .iter()
            .filter(|c| c.proto == Some(Proto::Udp))
            .count(),
        1
    );
    // Every line says its client: the format decides, and orients.
    let mut sides = Sides::new(None);
    r.conns.iter().for_each(|c| sides.add(c));
    let d = sides.decide();
    assert_eq!(d.basis, Basis::Format);
    let t = d.orient(&r.conns[0], false).unwrap();
    assert_eq!((t.sport, t.dport), (51234, 80));
    let f = d.orient(&r.conns[0], true).unwrap();
    assert_eq!(
        (f.sport, f.dport),
        (80, 51234),
        "flip swaps the decided sides"
    );
}

#[test]
fn ss_local_and_peer_columns_alone_are_oriented_by_the_common_port() {
    // The Local and Peer columns of the ss -tn lines of port 18080, as
    // someone copies them: half the lines have the server first. Two
    // fields a:p b:p are the pairs format, which says nothing of sides.
    let text = fixture("ss-tn.txt");
    let cols: Vec<String> = text
        .lines()
        .filter(|l| l.contains(":18080"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            format!("{} {}", f[3], f[4])
        })
        .collect();
    assert_eq!(cols.len(), 8);
    let lines: Vec<&str> = cols.iter().map(String::as_str).collect();
    let detected = detect(&lines);
    assert_eq!(detected.format, Format::Pairs);
    let parser = Parser::new(&detected);
    let conns: Vec<Conn> = lines
        .iter()
        .map(|l| match parser.line(l).unwrap() {
            Line::Conn(c) => c,
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(conns.iter().all(|c| c.meaning == Meaning::Unknown));
    assert!(
        conns.iter().any(|c| c.a.port() == 18080),
        "some lines are server first"
    );
    let mut sides = Sides::new(None);
    conns.iter().for_each(|c| sides.add(c));
    let d = sides.decide();
    assert_eq!(
        d,
        Decision {
            basis: Basis::CommonPort,
            port: Some(18080),
            addr: None,
            listening: ListenPorts::default(),
        }
    );
    let got: Vec<Tuple> = conns.iter().map(|c| d.orient(c, false).unwrap()).collect();
    let mut clients: Vec<SocketAddr> = got
        .iter()
        .map(|t| SocketAddr::new(t.saddr, t.sport))
        .collect();
    clients.sort();
    let mut want: Vec<SocketAddr> = TCP[..4].iter().flat_map(|(c, _)| [ep(c), ep(c)]).collect();
    want.sort();
    assert_eq!(clients, want);
    assert!(got
        .iter()
        .all(|t| SocketAddr::new(t.daddr, t.dport) == ep("127.0.0.1:18080")));
}

#[test]
fn a_line_whose_side_cannot_be_decided_is_reported_not_guessed() {
    // One pair: both its ports are on one side of every line, so neither
    // is the common port, and neither is a system or well-known port (8080
    // would be: tests/suite/paste_shapes.rs).
    let c = Conn {
        a: ep("10.0.0.2:40000"),
        b: ep("10.0.0.1:18080"),
        meaning: Meaning::Unknown,
        listener: None,
        proto: None,
        note: None,
    };
    let mut sides = Sides::new(None);
    sides.add(&c);
    let d = sides.decide();
    assert_eq!(d.basis, Basis::None);
    assert_eq!(d.orient(&c, false), Err(Undecided::NoBasis));
    assert_eq!(d.orient(&c, true), Err(Undecided::NoBasis));

    // A whole ss listing of three servers: ss says which side is local,
    // not which is the server, and no port is in every line.
    let r = read(&fixture("ss-tn.txt"));
    let mut sides = Sides::new(None);
    r.conns.iter().for_each(|c| sides.add(c));
    let d = sides.decide();
    assert_eq!(d.basis, Basis::None);
    assert!(r
        .conns
        .iter()
        .all(|c| d.orient(c, false) == Err(Undecided::NoBasis)));

    // With the user's port, the other servers' connections are not guessed
    // either.
    let sides = Sides::new(Some(("127.0.0.1".parse().unwrap(), Some(18080))));
    let d = sides.decide();
    assert_eq!(d.basis, Basis::Bind);
    let v6 = r.conns.iter().find(|c| c.a.port() == 18081).unwrap();
    assert_eq!(
        d.orient(v6, false),
        Err(Undecided::NeitherOnPort { port: 18080 })
    );
    let both = Conn {
        a: ep("127.0.0.1:18080"),
        b: ep("127.0.0.1:18080"),
        ..c
    };
    assert_eq!(
        d.orient(&both, false),
        Err(Undecided::BothOnPort { port: 18080 })
    );
    let mixed = Conn {
        a: ep("[::1]:18080"),
        b: ep("127.0.0.1:1"),
        ..c
    };
    assert_eq!(d.orient(&mixed, false), Err(Undecided::MixedFamilies));
}

#[test]
fn listen_lines_on_one_port_decide_the_server() {
    let text = fixture("ss-tan.txt");
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(":18080") || l.starts_with("State"))
        .collect();
    let detected = detect(&lines);
    let parser = Parser::new(&detected);
    let mut sides = Sides::new(None);
    let mut conns = vec![];
    for l in &lines {
        match parser.line(l).unwrap() {
            Line::Conn(c) => {
                sides.add(&c);
                conns.push(c);
            }
            Line::Listening { addr, .. } => sides.listening(addr),
            Line::Skip(_) => {}
        }
    }
    let d = sides.decide();
    assert_eq!(
        d,
        Decision {
            basis: Basis::Listening,
            port: Some(18080),
            addr: Some("127.0.0.1".parse().unwrap()),
            listening: ListenPorts::default(),
        }
    );
    for c in &conns {
        let t = d.orient(c, false).unwrap();
        assert_eq!(SocketAddr::new(t.daddr, t.dport), ep("127.0.0.1:18080"));
    }
    // Three listening ports, each used by its own connections: no one of
    // them decides every line, so each decides the lines on it (the
    // servers of the capture are on 18080, 18081 and 18082).
    let r = read(&text);
    let mut sides = Sides::new(None);
    r.listening.iter().for_each(|a| sides.listening(*a));
    r.conns.iter().for_each(|c| sides.add(c));
    let d = sides.decide();
    assert_eq!(d.basis, Basis::PerLine);
    let servers: BTreeSet<u16> = r
        .conns
        .iter()
        .map(|c| {
            let (t, basis) = d.orient_basis(c, false).unwrap();
            assert_eq!(basis, Basis::Listening);
            t.dport
        })
        .collect();
    assert_eq!(servers, BTreeSet::from([18080, 18081, 18082]));
}

#[test]
fn common_port_is_found_over_a_million_lines_in_one_pass() {
    // O(1) per line, no line kept: the only state is two candidate ports.
    let mut sides = Sides::new(None);
    for i in 0..1_000_000u32 {
        let client = SocketAddr::new(
            [10, 0, (i >> 16) as u8, (i >> 8) as u8].into(),
            (1024 + i % 60000) as u16,
        );
        let server = ep("10.0.0.1:443");
        let (a, b) = if i % 2 == 0 {
            (client, server)
        } else {
            (server, client)
        };
        sides.add(&Conn {
            a,
            b,
            meaning: Meaning::Unknown,
            listener: None,
            proto: None,
            note: None,
        });
    }
    assert_eq!(sides.decide().port, Some(443));
    assert!(std::mem::size_of::<Sides>() < 256);
}

#[test]
fn page_lines_round_trip_and_observed_lines_carry_the_listener() {
    let t = Tuple {
        saddr: "10.0.0.2".parse().unwrap(),
        sport: 40000,
        daddr: "10.0.0.1".parse().unwrap(),
        dport: 80,
    };
    // What the page writes: SADDR:SPORT -> DADDR:DPORT listener N.
    let written = format!(
        "{} -> {} listener 3",
        SocketAddr::new(t.saddr, t.sport),
        SocketAddr::new(t.daddr, t.dport)
    );
    for text in [
        written.clone(),
        written.replace(' ', "\t"),
        format!("{written}  # from the page"),
    ] {
        let lines = [text.as_str(), text.as_str()];
        let d = detect(&lines);
        assert_eq!(d.format, Format::Page, "{text}");
        let Line::Conn(c) = Parser::new(&d).line(&text).unwrap() else {
            panic!()
        };
        assert_eq!((c.meaning, c.listener), (Meaning::ClientFirst, Some(3)));
        let mut sides = Sides::new(None);
        sides.add(&c);
        assert_eq!(sides.decide().orient(&c, false), Ok(t));
    }
    let v6 = "[fd02::5]:40000 -> [::1]:8080 listener 0";
    let Line::Conn(c) = Parser::new(&Detected::named(Format::Page, &[]))
        .line(v6)
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(c.b, ep("[::1]:8080"));

    for text in [
        "10.0.0.2 40000 10.0.0.1 80 7",
        "10.0.0.2:40000 10.0.0.1:80 7",
    ] {
        let d = detect(&[text]);
        assert_eq!(d.format, Format::Observed, "{text}");
        let Line::Conn(c) = Parser::new(&d).line(text).unwrap() else {
            panic!()
        };
        assert_eq!(
            (c.a, c.listener, c.meaning),
            (ep("10.0.0.2:40000"), Some(7), Meaning::ClientFirst)
        );
    }
    let e = Parser::new(&Detected::named(Format::Observed, &[]))
        .line("10.0.0.2 1 10.0.0.1 80 x")
        .unwrap_err();
    assert!(matches!(e, LineError::Listener { .. }), "{e:?}");
}

fn csv(text: &str) -> (Detected, Vec<Conn>) {
    let lines: Vec<&str> = text.lines().collect();
    let d = detect(&lines);
    let p = Parser::new(&d);
    let conns = lines
        .iter()
        .filter_map(|l| match p.line(l) {
            Ok(Line::Conn(c)) => Some(c),
            Ok(Line::Skip(Skip::Header)) => None,
            other => panic!("{l}: {other:?}"),
        })
        .collect();
    (d, conns)
}

#[test]
fn csv_header_names_say_which_column_is_the_client() {
    let (d, c) =
        csv("client,server,listener\n10.0.0.2:40000,10.0.0.1:80,3\n10.0.0.3:40001,10.0.0.1:80,1\n");
    assert_eq!(d.format, Format::Csv);
    assert!(d.header);
    let cols = d.columns.unwrap();
    assert_eq!(cols.delimiter, ',');
    assert_eq!(
        cols.columns,
        vec![
            Column {
                name: "client".into(),
                role: Role::Endpoint { side: Side::Client }
            },
            Column {
                name: "server".into(),
                role: Role::Endpoint { side: Side::Server }
            },
            Column {
                name: "listener".into(),
                role: Role::Listener
            },
        ]
    );
    assert_eq!(c.len(), 2);
    assert_eq!(
        (c[0].a, c[0].b, c[0].meaning, c[0].listener),
        (
            ep("10.0.0.2:40000"),
            ep("10.0.0.1:80"),
            Meaning::ClientFirst,
            Some(3)
        )
    );

    // Quoted header and cells, server columns first.
    let (d, c) = csv(
        "\"daddr\",\"dport\",\"saddr\",\"sport\"\n\"10.0.0.1\",\"80\",\"10.0.0.2\",\"40000\"\n",
    );
    assert!(d.header);
    assert_eq!(
        (c[0].a, c[0].b, c[0].meaning),
        (
            ep("10.0.0.2:40000"),
            ep("10.0.0.1:80"),
            Meaning::ClientFirst
        )
    );

    // ;-separated local and peer columns.
    let (_, c) = csv("Local;Peer\n10.0.0.1:80;10.0.0.2:40000\n");
    assert_eq!(
        (c[0].a, c[0].meaning),
        (ep("10.0.0.1:80"), Meaning::LocalFirst)
    );
}

#[test]
fn csv_without_header_finds_columns_by_content_and_the_caller_can_change_them() {
    // (Tab-separated, the same columns are the observed format.)
    let text = "10.0.0.2,40000,10.0.0.1,80,2\n10.0.0.3,40001,10.0.0.1,80,0\n";
    let (d, c) = csv(text);
    assert_eq!(d.format, Format::Csv);
    assert!(!d.header);
    let cols = d.columns.clone().unwrap();
    assert_eq!(cols.delimiter, ',');
    let roles: Vec<Role> = cols.columns.iter().map(|c| c.role).collect();
    assert_eq!(
        roles,
        vec![
            Role::Address { side: Side::First },
            Role::Port { side: Side::First },
            Role::Address { side: Side::Second },
            Role::Port { side: Side::Second },
            Role::Listener,
        ]
    );
    assert_eq!(cols.columns[0].name, "1");
    assert_eq!(
        (c[1].a, c[1].meaning, c[1].listener),
        (ep("10.0.0.3:40001"), Meaning::Unknown, Some(0))
    );

    // The user says the second pair is the client.
    let mut mine: Columns = cols;
    for col in &mut mine.columns {
        col.role = match col.role {
            Role::Address { side: Side::First } => Role::Address { side: Side::Server },
            Role::Port { side: Side::First } => Role::Port { side: Side::Server },
            Role::Address { side: Side::Second } => Role::Address { side: Side::Client },
            Role::Port { side: Side::Second } => Role::Port { side: Side::Client },
            r => r,
        };
    }
    let p = Parser::new(&Detected {
        columns: Some(mine),
        ..d
    });
    let Line::Conn(c) = p.line("10.0.0.2,40000,10.0.0.1,80,2").unwrap() else {
        panic!()
    };
    assert_eq!(
        (c.a, c.b, c.meaning),
        (
            ep("10.0.0.1:80"),
            ep("10.0.0.2:40000"),
            Meaning::ClientFirst
        )
    );
}

#[test]
fn errors_echo_values_safely_and_serialize_with_their_field() {
    let long = "x".repeat(MAX_LINE_BYTES + 1);
    let p = Parser::new(&Detected::named(Format::Pairs, &[]));
    assert_eq!(
        p.line(&long),
        Err(LineError::TooLong {
            max: MAX_LINE_BYTES,
            length: MAX_LINE_BYTES + 1
        })
    );
    // A bidi override would reorder the rest of an error message.
    let e = p.line("10.0.0.\u{202e}1:80 10.0.0.2:1").unwrap_err();
    let LineError::Address { ref value, .. } = e else {
        panic!("{e:?}")
    };
    assert_eq!(value, "10.0.0.\\u{202e}1");
    assert!(!e.to_string().contains('\u{202e}'));
    let json = serde_json::to_value(&e).unwrap();
    assert_eq!(json["kind"], "address");
    assert_eq!(json["format"], "pairs");
    assert_eq!(json["field"], "sourceAddress");
    let e = p
        .line(&format!("{}:1 10.0.0.2:1", "a".repeat(200)))
        .unwrap_err();
    let LineError::Name { value, .. } = e else {
        panic!("{e:?}")
    };
    assert_eq!(value.chars().count(), 64);
    assert!(value.ends_with('…'));
    assert_eq!(
        shown("\u{feff}a\u{200b}\tb"),
        "\\u{feff}a\\u{200b}\\u{0009}b"
    );
    assert_eq!("proc".parse::<Format>(), Ok(Format::ProcNet));
    assert_eq!("proc-net".parse::<Format>(), Ok(Format::ProcNet));
    assert!("nope".parse::<Format>().is_err());
    assert_eq!(serde_json::to_value(Format::ProcNet).unwrap(), "proc-net");
    let skip = serde_json::to_value(Line::Skip(Skip::Header)).unwrap();
    assert_eq!(
        (&skip["type"], &skip["kind"]),
        (&"skip".into(), &"header".into())
    );
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..300).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        "[ -~\u{202a}-\u{202e}\u{2066}-\u{2069}\u{feff}\u{200b}\t\r]{0,200}",
        "(<script>|</a>|&amp;|\\[|\\]|:|\\.|>|,|;|\"|tcp|udp|ESTAB|LISTEN|IP6?|Flags|src=|dport=|::|ffff|[0-9]{1,6}| )*",
        (1usize..3, "[0-9a-f:.\\[\\] ]{1,40}").prop_map(|(n, s)| s.repeat(n * 200)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn no_input_makes_detect_or_any_parser_panic(lines in prop::collection::vec(any_text(), 1..6)) {
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let found = detect(&refs);
        let mut parsers = vec![Parser::new(&found)];
        parsers.extend(Format::ALL.iter().map(|f| Parser::new(&Detected::named(*f, &refs))));
        for p in &parsers {
            for l in &refs {
                if let Err(e) = p.line(l) {
                    let json = serde_json::to_value(&e).unwrap();
                    if let Some(v) = json.get("value").and_then(|v| v.as_str()) {
                        prop_assert!(v.chars().count() <= 64);
                        let bidi = '\u{202a}'..='\u{202e}';
                        prop_assert!(!v.chars().any(|c| c.is_control() || bidi.contains(&c)), "{}", v);
                    }
                    let _ = e.to_string();
                }
            }
        }
        if let Some(Ok(Line::Conn(c))) = refs.first().map(|l| parsers[0].line(l)) {
            let mut s = Sides::new(None);
            s.add(&c);
            let _ = s.decide().orient(&c, true);
        }
    }
}
