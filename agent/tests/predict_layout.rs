//! `predict --layout`: several sockets, the bind rules and the full lookup
//! through the command line, checked against reuseport_addr_any.c's
//! expectation (kernel-history.md §8.5).

use std::time::Duration;

mod common;

const LAYOUT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/layouts/addr-any.json"
);

/// `reuseport-agent predict ARGS` with `input` on stdin: the exit status,
/// the output's JSON lines and standard error.
fn predict(args: &[&str], input: &str) -> (i32, Vec<serde_json::Value>, String) {
    let mut all = vec!["predict"];
    all.extend_from_slice(args);
    let r = common::agent(&all, input, Duration::from_secs(120));
    let lines = r.lines().to_vec();
    (r.code, lines, r.stderr)
}

#[test]
fn the_specific_socket_wins_from_5_0_and_the_plain_one_cannot_bind() {
    let input: String = (40000..40020)
        .map(|p| format!("127.0.0.9 {p} 127.0.0.1 8888\n"))
        .collect();
    let (code, lines, err) = predict(
        &["--kernel", "6.18", "--layout", LAYOUT, "--secret", "0x5eed"],
        &input,
    );
    assert_eq!(code, 0, "{err}");
    let calls = lines[0]["sockets"].as_array().unwrap();
    assert_eq!(
        calls[9]["bind"]["errno"], "EADDRINUSE",
        "the socket without SO_REUSEPORT cannot share the port"
    );
    assert!(calls[..9]
        .iter()
        .all(|c| c["bind"].is_null() && c["listen"].is_null()));
    for l in &lines[1..] {
        assert_eq!(l["socket"], 4, "{l}");
    }
    // Before 5.0 a later-listened wildcard group hides the specific socket.
    let (_, old, _) = predict(
        &["--kernel", "4.17", "--layout", LAYOUT, "--secret", "0x5eed"],
        &input,
    );
    assert!(old[1..].iter().all(|l| l["socket"] != 4));
}

#[test]
fn layout_errors_name_the_file_and_refuse() {
    let (code, lines, err) = predict(&["--kernel", "6.18", "--layout", "/nonexistent.json"], "");
    assert_eq!(code, 2);
    assert!(lines.is_empty());
    assert!(err.contains("/nonexistent.json"), "{err}");
    let dir = std::env::temp_dir().join(format!("rl-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"sockets": [{"family": "inet", "proto": "tcp", "addr": "::1", "port": 80}]}"#,
    )
    .unwrap();
    let (code, _, err) = predict(&["--kernel", "6.18", "--layout", bad.to_str().unwrap()], "");
    assert_eq!(code, 2);
    assert!(err.contains("socket 0") && err.contains("inet6"), "{err}");
    let (code, _, _) = predict(
        &["--kernel", "6.18", "--layout", LAYOUT, "--listeners", "3"],
        "",
    );
    assert_eq!(code, 2, "--listeners and --layout exclude each other");
}

#[test]
fn a_misspelt_layout_field_is_refused_with_its_name() {
    // "reusePort" (for reuseport) and "listenorder" (for listenOrder) used to be
    // ignored, and the run exited 0 answering for a layout the file did not mean.
    let dir = std::env::temp_dir().join(format!("rl-layout-typo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text, field) in [
        (
            "socket.json",
            r#"{"sockets": [{"family": "inet", "proto": "tcp", "addr": "127.0.0.1", "port": 80, "reusePort": true}]}"#,
            "reusePort",
        ),
        (
            "layout.json",
            r#"{"sockets": [{"family": "inet", "proto": "tcp", "addr": "127.0.0.1", "port": 80}], "listenorder": [0]}"#,
            "listenorder",
        ),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let (code, lines, err) = predict(
            &["--kernel", "6.18", "--layout", path.to_str().unwrap()],
            "",
        );
        assert_eq!(code, 2, "{name}: {err}");
        assert!(lines.is_empty(), "{name}");
        assert!(
            err.contains(field) && err.contains("unknown field"),
            "{name}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
