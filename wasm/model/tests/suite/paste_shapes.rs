//! Output as people paste it: address translation, cut netstat
//! columns, the protocol of each line, IPv6 zones, UDP members, older and
//! richer `ss` layouts, shell debris, other systems and per-worker counts.
//! The fixtures in tests/fixtures/paste/ were captured in a network
//! namespace on the development machine (README there) or written by hand;
//! every expected value here is from that list or a hand count, never from
//! the parser's own output.

use std::net::SocketAddr;

use reuseport_model::paste::counts::{parse_counts, CountError, CountForm};
use reuseport_model::paste::{
    detect, Basis, Conn, Field, Format, Line, LineError, LineNote, Parser, Sides, Skip, Undecided,
};
use reuseport_model::Proto;

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/paste/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn ep(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// Every line of a file, read with the detected format, by line number.
struct Read {
    format: Format,
    lines: Vec<(usize, Result<Line, LineError>)>,
}

impl Read {
    fn of(name: &str) -> Read {
        let text = fixture(name);
        let lines: Vec<&str> = text.lines().collect();
        let d = detect(&lines);
        let p = Parser::new(&d);
        Read {
            format: d.format,
            lines: lines
                .iter()
                .enumerate()
                .map(|(i, l)| (i + 1, p.line(l)))
                .collect(),
        }
    }
    /// A file that must read as `format` with no line in error.
    fn clean(name: &str, format: Format) -> Read {
        let r = Read::of(name);
        assert_eq!(r.format, format, "{name}");
        assert!(r.errors().is_empty(), "{name}: {:?}", r.errors());
        r
    }
    fn conns(&self) -> Vec<(usize, Conn)> {
        self.lines
            .iter()
            .filter_map(|(n, r)| match r {
                Ok(Line::Conn(c)) => Some((*n, *c)),
                _ => None,
            })
            .collect()
    }
    /// The connections' two ends, in order.
    fn pairs(&self) -> Vec<(SocketAddr, SocketAddr)> {
        self.conns().iter().map(|(_, c)| (c.a, c.b)).collect()
    }
    fn listening(&self) -> Vec<(SocketAddr, Option<Proto>)> {
        self.lines
            .iter()
            .filter_map(|(_, r)| match r {
                Ok(Line::Listening { addr, proto }) => Some((*addr, *proto)),
                _ => None,
            })
            .collect()
    }
    fn errors(&self) -> Vec<(usize, LineError)> {
        self.lines
            .iter()
            .filter_map(|(n, r)| r.clone().err().map(|e| (*n, e)))
            .collect()
    }
    fn skips(&self, kind: Skip) -> usize {
        self.lines
            .iter()
            .filter(|(_, r)| matches!(r, Ok(Line::Skip(k)) if *k == kind))
            .count()
    }
}

#[test]
fn conntrack_dnat_answers_the_translated_tuple_and_says_so() {
    // A Kubernetes Service (DNS 10.96.0.10:53 to a pod, and 10.96.12.7:443
    // to a pod's 8443), a Docker published port (192.168.1.10:8080 to a
    // container's 80), a connection without translation, and an SNAT'd one:
    // the receiving socket hashes the reply direction reversed.
    let r = Read::clean("conntrack-dnat.txt", Format::Conntrack);
    let got: Vec<_> = r
        .conns()
        .iter()
        .map(|(n, c)| (*n, c.a, c.b, c.note))
        .collect();
    let tr = |s: &str| {
        Some(LineNote::Translated {
            original_server: ep(s),
        })
    };
    assert_eq!(
        got,
        vec![
            (
                1,
                ep("10.244.1.7:40123"),
                ep("10.244.2.5:53"),
                tr("10.96.0.10:53")
            ),
            (
                2,
                ep("10.0.0.9:51234"),
                ep("10.244.2.9:8443"),
                tr("10.96.12.7:443")
            ),
            (
                3,
                ep("192.168.1.50:51000"),
                ep("172.17.0.2:80"),
                tr("192.168.1.10:8080")
            ),
            (4, ep("203.0.113.7:40001"), ep("10.0.0.1:443"), None),
            (
                5,
                ep("192.0.2.1:61000"),
                ep("198.51.100.4:443"),
                tr("198.51.100.4:443")
            ),
        ]
    );
    assert_eq!(r.conns()[0].1.proto, Some(Proto::Udp));
}

#[test]
fn netstat_without_w_refuses_ipv6_columns_it_may_have_cut() {
    // Captured: fd00:1234:5678:9abc:def0:1234:5678:9abc and
    // fe80::230:18ff:fecb:1234 on ports 443, 8443, 51001, 51002, 52001.
    // Every field of those lines is 23 characters: cut (or exactly full).
    let r = Read::of("netstat-tn-cut.txt");
    assert_eq!(r.format, Format::Netstat);
    assert!(
        r.conns().is_empty(),
        "a cut column was read: {:?}",
        r.conns()
    );
    let errs = r.errors();
    assert_eq!(errs.len(), 6);
    for (_, e) in &errs {
        assert!(
            matches!(
                e,
                LineError::Cut {
                    field: Field::LocalAddress | Field::PeerAddress,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("netstat -W"), "{e}");
    }
    // `fe80::230:18ff:fe:52001` would read as fe80::230:18ff:fe port 52001.
    assert!(
        matches!(&errs[2].1, LineError::Cut { value, .. } if value == "fe80::230:18ff:fe:52001")
    );
    // LISTEN lines too: the listening address would be the cut one.
    let all = Read::of("netstat-tan-cut.txt");
    assert!(all.listening().is_empty());
    assert_eq!(all.errors().len(), 8);
    // With -W the same sockets read whole.
    let wide = Read::of("netstat-tnW.txt");
    assert!(wide.errors().is_empty(), "{:?}", wide.errors());
    let long = "fd00:1234:5678:9abc:def0:1234:5678:9abc";
    let conns = wide.pairs();
    assert_eq!(conns.len(), 6);
    assert!(conns.contains(&(ep(&format!("[{long}]:443")), ep(&format!("[{long}]:51002")))));
    assert!(conns.contains(&(
        ep("[fe80::230:18ff:fecb:1234]:52001"),
        ep("[fe80::230:18ff:fecb:1234]:8443")
    )));
}

#[test]
fn tcpdump_udp_lines_say_udp_and_a_tcp_group_refuses_them_by_name() {
    // DNS lines carry no `UDP,` (tcpdump decodes port 53), but no `Flags`
    // either: every TCP segment's line has Flags.
    let r = Read::of("tcpdump-udp-dns.txt");
    assert_eq!(r.format, Format::Tcpdump);
    let conns = r.conns();
    assert_eq!(conns.len(), 4);
    assert!(conns.iter().all(|(_, c)| c.proto == Some(Proto::Udp)));
    let e = conns[0]
        .1
        .check_proto(Format::Tcpdump, Proto::Tcp)
        .unwrap_err();
    assert_eq!(
        e,
        LineError::ProtoMismatch {
            format: Format::Tcpdump,
            line: Proto::Udp,
            chosen: Proto::Tcp
        }
    );
    assert!(e.to_string().contains("UDP"), "{e}");
    assert_eq!(conns[0].1.check_proto(Format::Tcpdump, Proto::Udp), Ok(()));
    // ss's Netid and netstat's Proto column say it too.
    let ss = Read::of("ss-an-netid.txt");
    let udp = ss
        .conns()
        .iter()
        .find(|(_, c)| c.a == ep("127.0.0.1:53001"))
        .unwrap()
        .1;
    assert_eq!(udp.proto, Some(Proto::Udp));
    assert!(udp.check_proto(Format::Ss, Proto::Tcp).is_err());
}

#[test]
fn ipv6_zones_are_noted_not_dropped_silently() {
    // Captured: the link-local connection fe80::230:18ff:fecb:1234, ports
    // 52001 and 8443, over rlv0; ss prints the zone on the bound side.
    let r = Read::of("ss-tn-zone.txt");
    let zoned: Vec<_> = r
        .conns()
        .into_iter()
        .filter_map(|(n, c)| match c.note {
            Some(LineNote::Zone { zone }) => Some((n, zone.to_string(), c.a)),
            _ => None,
        })
        .collect();
    assert_eq!(
        zoned,
        vec![
            (
                4,
                "rlv0".to_string(),
                ep("[fe80::230:18ff:fecb:1234]:52001")
            ),
            (5, "rlv0".to_string(), ep("[fe80::230:18ff:fecb:1234]:8443")),
        ]
    );
    // The long global address has no zone and no note.
    assert_eq!(
        r.conns().iter().filter(|(_, c)| c.note.is_none()).count(),
        4
    );
}

#[test]
fn ss_udp_unconn_sockets_are_the_groups_members() {
    // Captured: four UDP sockets with SO_REUSEPORT on 127.0.0.1:15353, one
    // on [::]:15354, and a connected client 127.0.0.1:53001.
    for name in ["ss-uan.txt", "ss-ulpn.txt", "ss-uap.txt"] {
        let r = Read::of(name);
        assert_eq!(r.format, Format::Ss, "{name}");
        let mut members = r.listening();
        members.sort();
        let mut want = vec![(ep("127.0.0.1:15353"), Some(Proto::Udp)); 4];
        want.push((ep("[::]:15354"), Some(Proto::Udp)));
        assert_eq!(members, want, "{name}");
    }
    let n = Read::of("netstat-uan.txt");
    assert_eq!(n.listening().len(), 5);
    assert_eq!(n.conns().len(), 1);
}

#[test]
fn ss_older_and_richer_layouts_are_read() {
    // Netid column, `*:53`, `:::30666`, v4-mapped peers, and wrapped
    // `users:` and TCP info lines (hand-written in ss 4.x's layout).
    let r = Read::clean("ss-old-layouts.txt", Format::Ss);
    assert_eq!(
        r.listening(),
        vec![
            (ep("[::]:53"), Some(Proto::Udp)),
            (ep("[::]:30666"), Some(Proto::Tcp))
        ]
    );
    let conns = r.pairs();
    assert_eq!(
        conns,
        vec![
            (ep("10.0.0.5:30666"), ep("10.0.0.9:51234")),
            (ep("10.0.0.5:30666"), ep("10.0.0.8:51235")),
            (ep("[fd00::5]:30666"), ep("[fd00::9]:51236")),
        ]
    );
    assert_eq!(r.skips(Skip::Continuation), 2);
    // Captured -e -p output: ino:, sk:, cgroup:, v6only:1, <->, and a
    // program name with a space ("Web Content").
    let e = Read::of("ss-tnep.txt");
    assert!(e.errors().is_empty(), "{:?}", e.errors());
    assert_eq!(e.conns().len(), 6);
    let l = Read::of("ss-tlnep.txt");
    assert_eq!(l.listening().len(), 2);
}

#[test]
fn shell_prompts_and_cat_n_numbers_are_not_lines_of_output() {
    let r = Read::clean("shell-debris.txt", Format::Ss);
    assert_eq!(r.skips(Skip::Comment), 2);
    let conns = r.pairs();
    assert_eq!(
        conns,
        vec![
            (ep("10.0.0.5:443"), ep("10.0.0.9:51234")),
            (ep("10.0.0.5:443"), ep("10.0.0.8:51235")),
        ]
    );
}

#[test]
fn freebsd_and_macos_output_is_refused_by_name_not_read_as_pairs() {
    for (name, command, refused) in [
        ("freebsd-netstat.txt", "netstat", 4),
        ("freebsd-sockstat.txt", "sockstat", 3),
    ] {
        let r = Read::of(name);
        assert_eq!(r.format, Format::Bsd, "{name}");
        assert!(r.conns().is_empty() && r.listening().is_empty(), "{name}");
        let errs = r.errors();
        assert_eq!(errs.len(), refused, "{name}: {errs:?}");
        for (_, e) in errs {
            assert!(
                matches!(&e, LineError::OtherSystem { command: c, .. } if c == command),
                "{e:?}"
            );
            assert!(e.to_string().contains("SO_REUSEPORT_LB"), "{e}");
        }
    }
}

#[test]
fn detection_names_its_evidence_and_a_mixed_paste() {
    let text = fixture("shell-debris.txt");
    let lines: Vec<&str> = text.lines().collect();
    let d = detect(&lines);
    // 5 non-blank lines: 2 prompts, a header and 2 connections.
    assert_eq!(
        (d.evidence.sample, d.evidence.read, d.evidence.sockets),
        (5, 3, 2)
    );
    assert_eq!(d.evidence.mixed, None);
    let mixed = format!("{}{}", fixture("ss-tn.txt"), fixture("netstat-tnW.txt"));
    let lines: Vec<&str> = mixed.lines().collect();
    let d = detect(&lines);
    assert_eq!(d.format, Format::Ss);
    let m = d.evidence.mixed.expect("netstat lines in an ss paste");
    assert_eq!((m.format, m.lines), (Format::Netstat, 6));
    // tcpdump without -n: recognised as tcpdump, its names counted once.
    let names = fixture("tcpdump-names.txt");
    let lines: Vec<&str> = names.lines().collect();
    let d = detect(&lines);
    assert_eq!(d.format, Format::Tcpdump);
    assert!(d.evidence.names > 0);
}

/// The counts as (label, count) pairs.
fn labelled(c: &reuseport_model::paste::counts::Counted) -> Vec<(&str, u64)> {
    c.counts
        .iter()
        .map(|x| (x.label.as_str(), x.count))
        .collect()
}

#[test]
fn worker_counts_are_read_in_every_posted_form_with_labels() {
    let c = parse_counts(&fixture("counts-envoy.txt"));
    assert_eq!(c.form, Some(CountForm::Envoy));
    let got = labelled(&c);
    assert_eq!(
        got,
        [("worker_0", 349), ("worker_1", 351), ("worker_2", 346)]
    );
    assert_eq!(c.skipped, 5);
    assert!(c.errors.is_empty());

    let c = parse_counts(&fixture("counts-uniq-c.txt"));
    assert_eq!(c.form, Some(CountForm::UniqC));
    let got = labelled(&c);
    assert_eq!(
        got,
        [
            ("pid 1503175", 349),
            ("pid 1503176", 351),
            ("pid 1503177", 12)
        ]
    );
    assert_eq!(c.values(), [349, 351, 12]);

    let c = parse_counts(&fixture("counts-worker-lines.txt"));
    assert_eq!(c.form, Some(CountForm::Labelled));
    let got = labelled(&c);
    assert_eq!(
        got,
        [
            ("worker PID 1503175", 349),
            ("worker PID 1503176", 351),
            ("worker PID 1503177", 12)
        ]
    );
    assert_eq!(c.errors.len(), 2);
    assert_eq!(c.errors[0].line, 4);
    assert_eq!(
        c.errors[0].error,
        CountError::Duplicate {
            label: "worker PID 1503175".into(),
            first: 1
        }
    );
    assert_eq!(c.errors[1].line, 5);

    let c = parse_counts(&fixture("counts-column.txt"));
    assert_eq!(c.form, Some(CountForm::Column));
    let got = labelled(&c);
    assert_eq!(
        got,
        [
            ("connections #1", 349),
            ("connections #2", 351),
            ("connections #3", 12)
        ]
    );

    // A header that puts the count last reads `pid count` pairs that way.
    let c = parse_counts("pid connections\n1503175 349\n1503176 351\n");
    let got = labelled(&c);
    assert_eq!(got, [("1503175", 349), ("1503176", 351)]);
}

/// One line oriented: (client, server, what decided), or why not.
type Oriented = Result<(SocketAddr, SocketAddr, Basis), Undecided>;

/// Orients every connection of a file by its own evidence, with the
/// decision's basis.
fn oriented(name: &str) -> (Basis, Vec<(usize, Oriented)>) {
    let r = Read::of(name);
    let mut sides = Sides::new(None);
    for (_, l) in &r.lines {
        match l {
            Ok(Line::Conn(c)) => sides.add(c),
            Ok(Line::Listening { addr, .. }) => sides.listening(*addr),
            _ => {}
        }
    }
    let d = sides.decide();
    let out = r
        .conns()
        .iter()
        .map(|(n, c)| {
            let o = d.orient_basis(c, false).map(|(t, b)| {
                (
                    SocketAddr::new(t.saddr, t.sport),
                    SocketAddr::new(t.daddr, t.dport),
                    b,
                )
            });
            (*n, o)
        })
        .collect();
    (d.basis, out)
}

#[test]
fn listen_rows_on_other_ports_do_not_decide_and_service_ports_do() {
    // A host that listens on 22 only, with outbound connections to 443 and
    // 6379, and one inbound ssh connection: the LISTEN row decides its own
    // port's line and nothing for the outbound ones (it used to make all of
    // them "not on port 22").
    let (basis, lines) = oriented("ss-tan-client.txt");
    assert_eq!(basis, Basis::PerLine);
    assert_eq!(
        lines,
        vec![
            (
                3,
                Ok((
                    ep("10.0.0.7:51234"),
                    ep("93.184.216.34:443"),
                    Basis::SystemPort
                ))
            ),
            (
                4,
                Ok((
                    ep("10.0.0.7:51240"),
                    ep("140.82.112.3:443"),
                    Basis::SystemPort
                ))
            ),
            (
                5,
                Ok((
                    ep("10.0.0.7:40022"),
                    ep("10.0.0.9:6379"),
                    Basis::ServicePort
                ))
            ),
            // The LISTEN row decides the line on its own port.
            (
                6,
                Ok((ep("10.0.0.1:50000"), ep("10.0.0.7:22"), Basis::Listening))
            ),
            // 18080 is no well-known port: nothing decides, and it says so.
            (7, Err(Undecided::NoBasis)),
        ]
    );
}

#[test]
fn a_clients_proc_net_tcp6_is_decided_line_by_line() {
    // Captured, the client's sockets only (the lines whose local port is
    // 51001, 51002 or 52001): [LONG]:51001 and :51002 to [LONG]:443 and
    // the link-local 52001 to 8443, and no LISTEN line.
    let long = "fd00:1234:5678:9abc:def0:1234:5678:9abc";
    let ll = "fe80::230:18ff:fecb:1234";
    let (basis, lines) = oriented("proc-net-tcp6-client.txt");
    assert_eq!(basis, Basis::PerLine);
    let got: Vec<_> = lines.into_iter().map(|(_, o)| o.unwrap()).collect();
    let c1 = (
        ep(&format!("[{long}]:51001")),
        ep(&format!("[{long}]:443")),
        Basis::SystemPort,
    );
    let c2 = (
        ep(&format!("[{long}]:51002")),
        ep(&format!("[{long}]:443")),
        Basis::SystemPort,
    );
    let c3 = (
        ep(&format!("[{ll}]:52001")),
        ep(&format!("[{ll}]:8443")),
        Basis::ServicePort,
    );
    assert_eq!(got, vec![c3, c1, c2]);
}

#[test]
fn a_headerless_netstat_tail_skips_raw_rows_and_the_unix_section_by_name() {
    // Hand-written in net-tools' layout: two connections to 10.0.0.5:443
    // without the header, a raw6 row, then the unix-socket section.
    let r = Read::clean("netstat-tail-unix.txt", Format::Netstat);
    assert_eq!(
        r.pairs(),
        vec![
            (ep("10.0.0.5:443"), ep("10.0.0.9:51234")),
            (ep("10.0.0.5:443"), ep("10.0.0.8:51235")),
        ]
    );
    // raw6 and the three unix rows; the section's title and its header.
    assert_eq!(r.skips(Skip::OtherProto), 4);
    assert_eq!(r.skips(Skip::Trailer), 1);
    assert_eq!(r.skips(Skip::Header), 1);
}

#[test]
fn envoy_blocks_of_several_listeners_keep_the_listener_in_the_label() {
    let text = "listener.0.0.0.0_80.worker_0.downstream_cx_total: 10\n\
                listener.0.0.0.0_80.worker_1.downstream_cx_total: 12\n\
                listener.0.0.0.0_443.worker_0.downstream_cx_total: 7\n";
    let c = parse_counts(text);
    let got = labelled(&c);
    assert_eq!(
        got,
        [
            ("0.0.0.0_80 worker_0", 10),
            ("0.0.0.0_80 worker_1", 12),
            ("0.0.0.0_443 worker_0", 7)
        ]
    );
}
