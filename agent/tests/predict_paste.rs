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
    let mut args = vec![
        "predict",
        "--kernel",
        "6.18",
        "--proto",
        "tcp",
        "--listeners",
        "4",
        "--secret",
        "0x1",
    ];
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
