//! `reuseport-agent predict` reading pasted listings: the `ss -tn` output
//! captured on a real machine (wasm/model/tests/fixtures/paste/, whose
//! README lists the loopback connections that were open), checked against
//! that list.

use std::collections::BTreeSet;

use std::time::Duration;

use common::Run;
use serde_json::Value;

mod common;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/../wasm/model/tests/fixtures/paste/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn predict(extra: &[&str], input: &str) -> Run {
    run("tcp", "4", Some("0x1"), extra, input)
}

/// `predict --kernel 6.18` with the protocol, group size and secret given.
fn run(proto: &str, listeners: &str, secret: Option<&str>, extra: &[&str], input: &str) -> Run {
    let mut args = vec!["predict", "--kernel", "6.18", "--proto", proto];
    args.extend(["--listeners", listeners]);
    if let Some(s) = secret {
        args.extend(["--secret", s]);
    }
    args.extend_from_slice(extra);
    common::agent(&args, input, Duration::from_secs(60))
}

/// The clients of 127.0.0.1:18080 in the capture.
const CLIENTS: [&str; 4] = [
    "127.0.0.1:41001",
    "127.0.0.1:41002",
    "127.0.0.1:41003",
    "127.0.0.2:41004",
];

fn answered(r: &Run) -> BTreeSet<String> {
    r.lines()
        .iter()
        .filter(|v| v.get("listener").is_some())
        .map(|v| v["tuple"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn ss_output_with_bind_answers_each_connection_to_the_port_once() {
    let r = predict(&["--bind", "127.0.0.1:18080"], &fixture("ss-tn.txt"));
    let want: BTreeSet<String> = CLIENTS
        .iter()
        .map(|c| format!("{c} 127.0.0.1:18080"))
        .collect();
    assert_eq!(answered(&r), want);
    // Both ends of each connection are listed: the second is a duplicate.
    // The ::1 and 18082 connections are not to the group: reported with
    // their line number and format, not guessed.
    let errors: Vec<&Value> = r
        .lines()
        .iter()
        .filter(|v| v.get("error").is_some())
        .collect();
    assert_eq!(errors.len(), 6, "{:?}", r.lines());
    for e in &errors {
        assert_eq!(e["format"], "ss");
        assert!(
            e["error"]
                .as_str()
                .unwrap()
                .contains("neither endpoint is on the server's port 18080"),
            "{e}"
        );
    }
    assert_eq!(
        errors[0]["line"], 9,
        "the first line of 127.0.0.1:41021 -> :18082"
    );
    assert_eq!(r.code, 1, "unusable lines make the exit status 1");
    assert!(
        r.stderr.contains(
            "read ss (with a header): 4 used, 1 skipped, 0 listening, 4 duplicate, 6 bad line(s)"
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("127.0.0.1:18080 (from --bind)"),
        "{}",
        r.stderr
    );
}

#[test]
fn ss_output_of_one_server_needs_no_bind() {
    // Only the lines of port 18080: that port is in every connection.
    let text: String = fixture("ss-tn.txt")
        .lines()
        .filter(|l| l.starts_with("State") || l.contains(":18080 "))
        .map(|l| format!("{l}\n"))
        .collect();
    let r = predict(&[], &text);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let want: BTreeSet<String> = CLIENTS
        .iter()
        .map(|c| format!("{c} 127.0.0.1:18080"))
        .collect();
    assert_eq!(answered(&r), want);
    assert!(
        r.stderr
            .contains("port 18080 (the one port in every connection)"),
        "{}",
        r.stderr
    );

    // Named explicitly, the same.
    let named = predict(&["--format", "ss"], &text);
    assert_eq!(answered(&named), want);
}

#[test]
fn ss_output_of_several_servers_without_bind_is_undecided() {
    let r = predict(&[], &fixture("ss-tn.txt"));
    assert_eq!(r.code, 1);
    assert!(answered(&r).is_empty());
    assert!(r.lines().iter().all(|v| v["error"]
        .as_str()
        .unwrap()
        .contains("nothing says which side is the server")));
    assert!(r.stderr.contains("undecided"), "{}", r.stderr);
}

#[test]
fn an_unknown_format_is_a_usage_error() {
    let r = predict(&["--format", "xml"], "");
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("unknown format `xml`"), "{}", r.stderr);
}

#[test]
fn conntrack_dnat_is_answered_for_the_translated_tuple_with_a_note() {
    // Line 2 of the fixture: a client 10.0.0.9:51234 of the Service
    // 10.96.12.7:443, translated to the pod's 10.244.2.9:8443. Line 1 is
    // UDP (DNS), refused by name for a TCP group.
    let r = predict(
        &["--bind", "10.244.2.9:8443"],
        &fixture("conntrack-dnat.txt"),
    );
    let line2 = r.lines().iter().find(|v| v["line"] == 2).expect("line 2");
    assert_eq!(line2["tuple"], "10.0.0.9:51234 10.244.2.9:8443", "{line2}");
    let note = line2["note"].as_str().expect("a note");
    assert!(
        note.contains("address translation") && note.contains("10.96.12.7:443"),
        "{note}"
    );
    let line1 = r.lines().iter().find(|v| v["line"] == 1).expect("line 1");
    let e = line1["error"].as_str().expect("an error");
    assert!(e.contains("UDP") && e.contains("group is TCP"), "{e}");
    // The untranslated connection to 10.0.0.1:443 is not to this group.
    let line4 = r.lines().iter().find(|v| v["line"] == 4).expect("line 4");
    assert!(
        line4["error"]
            .as_str()
            .unwrap()
            .contains("neither endpoint"),
        "{line4}"
    );
}

#[test]
fn tcpdump_udp_lines_are_refused_for_a_tcp_group_and_answered_for_udp() {
    let text = fixture("tcpdump-udp-dns.txt");
    let r = predict(&["--bind", "10.0.0.1:53"], &text);
    assert!(answered(&r).is_empty(), "{:?}", r.lines());
    let errors: Vec<&str> = r
        .lines()
        .iter()
        .filter_map(|v| v["error"].as_str())
        .collect();
    // All four lines are UDP: each is refused as that, before its sides.
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert!(errors.iter().all(|e| e.contains("UDP")), "{errors:?}");
    let udp = run("udp", "4", Some("0x1"), &["--bind", "10.0.0.1:53"], &text);
    assert_eq!(
        answered(&udp),
        BTreeSet::from([
            "10.0.0.2:41234 10.0.0.1:53".to_string(),
            "10.0.0.3:41235 10.0.0.1:53".to_string()
        ])
    );
    assert!(
        udp.stderr.contains("why tcpdump: 4 of the first 4"),
        "{}",
        udp.stderr
    );
}

#[test]
fn a_server_first_pair_paste_is_turned_round_by_the_bind() {
    // ss's Local and Peer columns alone, on the server 10.0.0.5:443: each
    // line is server first. The bind says which side is the server.
    let text =
        "10.0.0.5:443 10.0.0.9:51234\n10.0.0.5:443 10.0.0.8:51235\n10.0.0.7:40000 10.0.0.5:443\n";
    let r = predict(&["--bind", "10.0.0.5:443"], text);
    assert_eq!(r.code, 0, "{:?}", r.lines());
    assert_eq!(
        answered(&r),
        BTreeSet::from([
            "10.0.0.9:51234 10.0.0.5:443".to_string(),
            "10.0.0.8:51235 10.0.0.5:443".to_string(),
            "10.0.0.7:40000 10.0.0.5:443".to_string(),
        ])
    );
}

#[test]
fn each_line_says_what_decided_its_side_when_nothing_decides_them_all() {
    // A host listening on 22 only, connected out to 443 and 6379: the LISTEN
    // row decides its own line, the ports decide the others, and 18080
    // against 41000 stays undecided.
    let r = predict(&[], &fixture("ss-tan-client.txt"));
    let side = |line: u64| {
        let v = r
            .lines()
            .iter()
            .find(|v| v["line"] == line)
            .unwrap()
            .clone();
        (v["tuple"].clone(), v["side"].clone(), v["error"].clone())
    };
    assert_eq!(side(3).0, "10.0.0.7:51234 93.184.216.34:443");
    assert_eq!(side(3).1, "a system port against a higher one");
    // The group is the first answered line's, 93.184.216.34:443: the
    // connection to 6379, oriented by its ports, is another server's.
    let e5 = side(5).2;
    assert!(
        e5.as_str()
            .unwrap()
            .contains("destination 10.0.0.9 port 6379 does not reach"),
        "{e5}"
    );
    assert!(
        side(7)
            .2
            .as_str()
            .unwrap()
            .contains("nothing says which side"),
        "{:?}",
        side(7)
    );
    assert!(r.stderr.contains("each line on its own"), "{}", r.stderr);
}

#[test]
fn without_a_secret_the_answer_is_what_holds_for_every_secret() {
    // Four connections to 10.0.0.5:443 and one to port 8443 (not to the
    // group), over two listeners: in every boot the four routed ones are
    // shared out, so one listener holds 4 / 2 = 2 on average, and the
    // busiest holds at least half.
    let text = "10.0.0.9:51234 10.0.0.5:443\n10.0.0.8:51235 10.0.0.5:443\n\
                10.0.0.7:40000 10.0.0.5:443\n10.0.0.6:40001 10.0.0.5:443\n10.0.0.6:40002 10.0.0.5:8443\n";
    let extra = ["--bind", "10.0.0.5:443", "--boots", "300"];
    let r = run("tcp", "2", None, &extra, text);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines = r.lines();
    assert_eq!(
        lines.len(),
        1,
        "no per-connection answer without a secret: {lines:?}"
    );
    let s = &lines[0]["spread"];
    assert_eq!(s["boots"], 300);
    assert_eq!(s["tuples"], 5);
    assert_eq!(s["listeners"], 2);
    assert_eq!(s["unrouted"], 1);
    assert_eq!(s["band"]["mean"], 2.0);
    assert!(s["maxShare"]["p5"].as_f64().unwrap() >= 0.5, "{s}");
    assert_eq!(lines[0]["seed"], "0x5eed");
}
