//! Layouts as call logs: the model replays the calls in order and
//! answers each one. The fixtures of `tests/fixtures/calllogs/` carry the
//! answers the running kernel gave (recorded by the agent's test
//! `call_log_kernel.rs`, which checks them again on every root run); the
//! model must give the same. The socket-list `{sockets, listenOrder, closed}`
//! form is converted to the calls it stood for, pinned here on the
//! repository's example layout.

use std::collections::BTreeSet;
use std::net::IpAddr;

use reuseport_model::lookup::{Call, CallLog, Host, Layout, Packet, MAX_CALLS};
use reuseport_model::reuseport::PacketCtx;
use reuseport_model::{Profile, Proto, Tuple};
use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");

fn errno_name(a: &Option<reuseport_model::message::Refusal>) -> String {
    match a {
        None => "ok".into(),
        Some(r) => serde_json::to_value(r.errno)
            .unwrap()
            .as_str()
            .unwrap()
            .to_string(),
    }
}

/// The sockets that receive 24 packets to `daddr:8080` from the sources
/// the agent's probes use (several in 127.0.0.0/8, or `::1`) and varied
/// ports, as the kernel side sends them.
fn receivers(host: &Host, proto: Proto, daddr: IpAddr) -> BTreeSet<usize> {
    const V4: [[u8; 4]; 6] = [
        [127, 0, 0, 1],
        [127, 0, 0, 3],
        [127, 0, 0, 7],
        [127, 0, 1, 9],
        [127, 2, 3, 4],
        [127, 9, 8, 7],
    ];
    (0..24u16)
        .filter_map(|k| {
            let saddr: IpAddr = match daddr {
                IpAddr::V4(_) => std::net::Ipv4Addr::from(V4[k as usize % 6]).into(),
                IpAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            };
            let x = host.lookup(&Packet {
                proto,
                tuple: Tuple {
                    saddr,
                    sport: 40000 + 977 * k,
                    daddr,
                    dport: 8080,
                },
                device: None,
                ctx: PacketCtx::default(),
            });
            x.socket
        })
        .collect()
}

/// The protocol of the log's sockets, when they share one.
fn proto_of(log: &CallLog) -> Option<Proto> {
    let mut protos = log.calls.iter().filter_map(|c| match c {
        Call::Socket { proto, .. } => Some(*proto),
        _ => None,
    });
    let first = protos.next()?;
    protos.all(|p| p == first).then_some(first)
}

#[test]
fn every_fixture_call_log_gets_the_kernels_recorded_answers() {
    let dir = format!("{FIXTURES}/calllogs");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    assert!(paths.len() >= 4);
    let mut wrong = Vec::new();
    for path in paths {
        let f: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let log: CallLog = serde_json::from_value(f["log"].clone()).unwrap();
        let k = &f["kernel"];
        let profile = Profile::named(k["release"].as_str().expect("a recorded release")).unwrap();
        let host = Host::run(profile, &log).unwrap();
        let answers: Vec<String> = host.answers().iter().map(errno_name).collect();
        let want: Vec<String> = serde_json::from_value(k["answers"].clone()).unwrap();
        if answers != want {
            wrong.push(format!(
                "{}: kernel {want:?}\n   model {answers:?}",
                path.display()
            ));
        }
        let Some(proto) = proto_of(&log) else {
            continue;
        };
        for (daddr, fds) in k["receivers"].as_object().unwrap() {
            let daddr: IpAddr = daddr.parse().unwrap();
            let want: BTreeSet<usize> = serde_json::from_value(fds.clone()).unwrap();
            let got = receivers(&host, proto, daddr);
            if got != want {
                wrong.push(format!(
                    "{}: to {daddr} the kernel delivered to {want:?}, the model picks among {got:?}",
                    path.display()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The example layout in the socket-list form becomes, call for call, the call
/// log written by hand next to it; both give the same answers.
#[test]
fn the_socket_list_form_converts_to_the_calls_it_stands_for() {
    let old = std::fs::read_to_string(format!("{FIXTURES}/layouts/addr-any.json")).unwrap();
    let new = std::fs::read_to_string(format!("{FIXTURES}/layouts/addr-any.calls.json")).unwrap();
    let converted: CallLog = serde_json::from_str(&old).unwrap();
    let written: CallLog = serde_json::from_str(&new).unwrap();
    assert_eq!(converted, written);
    let layout: Layout = serde_json::from_str(&old).unwrap();
    let p = Profile::named("6.18").unwrap();
    assert_eq!(
        replay_layout(p, &layout).unwrap().results(),
        Host::run(p, &written).unwrap().results()
    );
}

/// listenOrder and closed become listens after every bind and closes at
/// the end, in their orders; a TIME_WAIT socket connects, sets SO_LINGER
/// (so its close waits for the peer's ACK) and closes.
#[test]
fn listen_order_closed_and_time_wait_convert_in_order() {
    let old = r#"{"sockets": [
        {"family": "inet", "proto": "tcp", "addr": "127.0.0.1", "port": 80, "reuseport": true},
        {"family": "inet", "proto": "tcp", "addr": "127.0.0.1", "port": 80, "reuseport": true},
        {"family": "inet", "proto": "tcp", "addr": "127.0.0.1", "port": 80, "state": "time_wait"}
    ], "listenOrder": [1, 0], "closed": [0]}"#;
    let log: CallLog = serde_json::from_str(old).unwrap();
    let calls: Vec<String> = log
        .calls
        .iter()
        .map(|c| serde_json::to_string(c).unwrap())
        .collect();
    let want = [
        r#"{"call":"socket","family":"inet","proto":"tcp","uid":0}"#,
        r#"{"call":"setsockopt","fd":0,"opt":{"reuseport":true}}"#,
        r#"{"call":"bind","fd":0,"addr":"127.0.0.1","port":80}"#,
        r#"{"call":"socket","family":"inet","proto":"tcp","uid":0}"#,
        r#"{"call":"setsockopt","fd":1,"opt":{"reuseport":true}}"#,
        r#"{"call":"bind","fd":1,"addr":"127.0.0.1","port":80}"#,
        r#"{"call":"socket","family":"inet","proto":"tcp","uid":0}"#,
        r#"{"call":"bind","fd":2,"addr":"127.0.0.1","port":80}"#,
        r#"{"call":"connect","fd":2,"addr":"127.0.0.1","port":9}"#,
        r#"{"call":"setsockopt","fd":2,"opt":{"linger":1}}"#,
        r#"{"call":"close","fd":2}"#,
        r#"{"call":"listen","fd":1}"#,
        r#"{"call":"listen","fd":0}"#,
        r#"{"call":"close","fd":0}"#,
    ];
    assert_eq!(calls, want);
}

fn error_of(text: &str) -> String {
    match serde_json::from_str::<CallLog>(text) {
        Err(e) => e.to_string(),
        Ok(log) => match Host::run(Profile::named("6.18").unwrap(), &log) {
            Ok(_) => panic!("accepted: {text}"),
            Err(e) => e.to_string(),
        },
    }
}

#[test]
fn a_call_on_an_fd_no_socket_call_made_is_refused_naming_the_call_and_field() {
    let e = error_of(
        r#"{"calls": [{"call": "socket", "family": "inet", "proto": "udp"},
                      {"call": "bind", "fd": 1, "addr": "127.0.0.1", "port": 5}]}"#,
    );
    assert!(
        e.starts_with("calls[1].fd:") && e.contains("socket 1"),
        "{e}"
    );
}

#[test]
fn an_address_of_the_other_family_is_refused_naming_the_call_and_field() {
    let e = error_of(
        r#"{"calls": [{"call": "socket", "family": "inet6", "proto": "tcp"},
                      {"call": "bind", "fd": 0, "addr": "127.0.0.1", "port": 5}]}"#,
    );
    assert!(
        e.starts_with("calls[1].addr:") && e.contains("::ffff:127.0.0.1"),
        "{e}"
    );
}

#[test]
fn a_misspelt_call_field_or_option_is_refused_with_its_name() {
    let e =
        error_of(r#"{"calls": [{"call": "socket", "family": "inet", "proto": "tcp", "uuid": 3}]}"#);
    assert!(e.contains("uuid"), "{e}");
    let e = error_of(
        r#"{"calls": [{"call": "socket", "family": "inet", "proto": "tcp"},
                      {"call": "setsockopt", "fd": 0, "opt": {"reusePort": true}}]}"#,
    );
    assert!(e.contains("reusePort"), "{e}");
    let e = error_of(r#"{"calls": [{"call": "accept", "fd": 0}]}"#);
    assert!(e.contains("accept"), "{e}");
}

#[test]
fn both_forms_at_once_or_neither_is_refused() {
    let e = error_of(r#"{"calls": [], "sockets": []}"#);
    assert!(e.contains("not both"), "{e}");
    let e = error_of(r#"{"ephemeral": null}"#);
    assert!(e.contains("calls"), "{e}");
}

#[test]
fn a_log_past_the_call_bound_is_refused_naming_calls() {
    let log = CallLog {
        calls: vec![Call::Close { fd: 0 }; MAX_CALLS + 1],
        ..CallLog::default()
    };
    let e = match Host::run(Profile::named("6.18").unwrap(), &log) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted"),
    };
    assert!(
        e.starts_with("calls:") && e.contains(&MAX_CALLS.to_string()),
        "{e}"
    );
}

/// Why: `setsockopt SO_BINDTODEVICE` with a device the call log's
/// namespace does not have (or 50 MB of name) answered success, where the
/// kernel answers ENODEV (sock_setbindtodevice, net/core/sock.c). The
/// namespace has `lo` and the log's `devices`; a name is read up to 15
/// bytes, so a long one is an unknown name, not a bigger one.
#[test]
fn bindtodevice_answers_enodev_for_a_device_the_namespace_lacks() {
    let long = "x".repeat(50 << 20);
    let log: CallLog = serde_json::from_value(serde_json::json!({
        "devices": ["eth0"],
        "calls": [
            {"call": "socket", "family": "inet", "proto": "udp"},
            {"call": "setsockopt", "fd": 0, "opt": {"bindtodevice": "eth0"}},
            {"call": "setsockopt", "fd": 0, "opt": {"bindtodevice": "eth1"}},
            {"call": "setsockopt", "fd": 0, "opt": {"bindtodevice": long}},
            {"call": "setsockopt", "fd": 0, "opt": {"bindtodevice": "eth0 and more than 15 bytes"}},
            {"call": "setsockopt", "fd": 0, "opt": {"bindtodevice": "lo"}},
        ]
    }))
    .unwrap();
    for release in ["3.9", "6.18"] {
        let host = Host::run(Profile::named(release).unwrap(), &log).unwrap();
        let answers: Vec<String> = host.answers().iter().map(errno_name).collect();
        assert_eq!(
            answers,
            ["ok", "ok", "ENODEV", "ENODEV", "ENODEV", "ok"],
            "{release}"
        );
        let r = host.answers()[2].as_ref().unwrap();
        assert_eq!(
            (r.source.func.as_str(), r.source.file.as_str()),
            ("sock_setbindtodevice", "net/core/sock.c")
        );
    }
}

/// The host a socket-list layout stands for: its calls, replayed (the
/// reader's conversion, then the one replay).
fn replay_layout(
    p: &'static reuseport_model::Profile,
    l: &reuseport_model::lookup::Layout,
) -> Result<reuseport_model::lookup::Host, reuseport_model::lookup::LayoutError> {
    reuseport_model::lookup::Host::run(p, &reuseport_model::lookup::CallLog::from_layout(l)?)
}
