//! `reuseport-agent recover` end to end. The observations are made by
//! `reuseport-agent predict` (the oracle: which listener a kernel with a
//! given key picks), written as lines or as trace files, and `recover` must
//! find that key again. The last test reads traces recorded on the real
//! 6.18 kernel (public/traces): one key per protocol must explain all of
//! their events. A debug build cannot search all 2^32 keys in a test's
//! time, so the searches use `--range` windows holding the key; the full
//! range is measured in release (`cargo bench -p reuseport-model --bench
//! recover`, or `reuseport-agent recover` built with `--release`).
//!
//! One file on purpose: its tests share the oracle (`predict`) and the
//! key windows they search.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command as Process, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use clap::Parser;
use reuseport_agent::trace::{
    Counts, Event, KernelInfo, MachineInfo, Trace, TraceGroup, FORMAT, VERSION,
};
use reuseport_agent::{cmd::recover, Cli};
use reuseport_model::Proto;
use serde_json::Value;

mod common;

use common::{Run, BIN};
const SECRET: &str = "0x1b873593";
/// A window of 2^20 keys around SECRET.
const WINDOW: &str = "0x1b800000-0x1b900000";

fn recover(args: &[&str], stdin: &str) -> Run {
    let mut all = vec!["recover"];
    all.extend_from_slice(args);
    common::agent(&all, stdin, Duration::from_secs(300))
}

/// Client `10.x.y.z:port` number `i`.
fn client(i: u32) -> (String, u16) {
    let a = 0x0a00_0000 | (i.wrapping_mul(2_654_435_761) >> 8);
    let a = std::net::Ipv4Addr::from(a);
    (a.to_string(), (32768 + i.wrapping_mul(7919) % 28000) as u16)
}

/// `count` tuples to `daddr:dport`, and the listener `predict` says each
/// gets under `predict_args`: lines `S SP D DP LISTENER`.
fn observe(count: u32, daddr: &str, dport: u16, predict_args: &[&str]) -> String {
    let tuples: String = (0..count)
        .map(|i| {
            let (s, sp) = client(i);
            format!("{s} {sp} {daddr} {dport}\n")
        })
        .collect();
    let out = Command::new(BIN)
        .arg("predict")
        .args(predict_args)
        .write_stdin(tuples.clone())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers = String::from_utf8(out.stdout).unwrap();
    tuples
        .lines()
        .zip(answers.lines())
        .map(|(t, a)| {
            let a: Value = serde_json::from_str(a).unwrap();
            format!("{t} {}\n", a["listener"].as_u64().expect("a listener"))
        })
        .collect()
}

fn args<'a>(
    kernel: &'a str,
    proto: &'a str,
    listeners: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut v = vec![
        "--kernel",
        kernel,
        "--proto",
        proto,
        "--listeners",
        listeners,
    ];
    v.extend_from_slice(extra);
    v
}

fn assert_found(r: &Run, secret: &str, form: &str) {
    assert_eq!(r.code, 0, "{}\n{}", r.stderr, r.json());
    assert_eq!(r.json()["secret"], secret, "{}", r.json());
    assert_eq!(r.json()["candidates"], 1);
    assert_eq!(r.json()["all"], serde_json::json!([secret]));
    assert_eq!(r.json()["form"], form);
    assert_eq!(r.json()["complete"], true);
    assert_eq!(r.json()["verified"], true);
    assert!(r.json()["expectedFalseMatches"].as_f64().unwrap() < 1e-6);
    assert!(r.json()["seconds"].as_f64().unwrap() > 0.0);
    assert!(r.json()["candidatesPerSecond"].as_f64().unwrap() > 0.0);
    assert!(r.json()["isa"].is_string());
}

#[test]
fn recovers_the_secret_predict_used_6_18_tcp() {
    let p = args("6.18", "tcp", "8", &["--secret", SECRET]);
    let lines = observe(40, "127.0.0.1", 8080, &p);
    let r = recover(
        &[
            &args("6.18", "tcp", "8", &[]),
            &["--lines", "-", "--range", WINDOW][..],
        ]
        .concat(),
        &lines,
    );
    assert_found(&r, SECRET, "lport_plus");
    assert_eq!(r.json()["profile"], "6.18");
    assert_eq!(r.json()["observations"], 40);
    assert_eq!(r.json()["constraints"], 40);
    assert_eq!(r.json()["range"]["start"], "0x1b800000");
    assert_eq!(r.json()["searches"][0]["searched"]["end"], "0x1b900000");
    // The same from a file, with the kernel given as a full release.
    let file = tmp("obs-6.18.txt");
    std::fs::write(&file, &lines).unwrap();
    let f = file.to_str().unwrap();
    let r = recover(
        &[
            &args("6.18.44-fc", "tcp", "8", &[]),
            &["--lines", f, "--range", WINDOW, "-q"][..],
        ]
        .concat(),
        "",
    );
    assert_found(&r, SECRET, "lport_plus");
    assert!(r.stderr.is_empty(), "--quiet: {}", r.stderr);
}

#[test]
fn classic_form_wildcard_bind_and_closed_listeners() {
    // 6.12 TCP (classic form), a wildcard group (hashed with laddr 0), two
    // closed members (the last moves into each hole).
    let secret = "0x9abcdef0";
    let group = ["--bind", "0.0.0.0:443", "--closed", "2,5"];
    let p = args(
        "6.12",
        "tcp",
        "7",
        &[&["--secret", secret][..], &group].concat(),
    );
    let lines = observe(30, "192.0.2.1", 443, &p);
    assert!(lines
        .lines()
        .all(|l| !l.ends_with(" 2") && !l.ends_with(" 5")));
    let r = recover(
        &[
            &args("6.12", "tcp", "7", &group),
            &["--lines", "-", "--range", "0x9abc0000-0x9abd0000"][..],
        ]
        .concat(),
        &lines,
    );
    assert_found(&r, secret, "classic");
    // UDP 6.18 keeps the classic form.
    let p = args("6.18", "udp", "5", &["--secret", secret]);
    let lines = observe(30, "127.0.0.1", 53, &p);
    let r = recover(
        &[
            &args("6.18", "udp", "5", &[]),
            &["--lines", "-", "--range", "0x9abc0000-0x9abd0000"][..],
        ]
        .concat(),
        &lines,
    );
    assert_found(&r, secret, "classic");
}

#[test]
fn kernel_any_reports_the_form_that_matched() {
    for (kernel, form, profile) in [("6.12", "classic", "6.12"), ("6.18", "lport_plus", "6.18")] {
        let p = args(kernel, "tcp", "8", &["--secret", SECRET]);
        let lines = observe(32, "127.0.0.1", 8080, &p);
        let r = recover(
            &[
                &args("any", "tcp", "8", &[]),
                &["--lines", "-", "--range", WINDOW, "-q"][..],
            ]
            .concat(),
            &lines,
        );
        assert_found(&r, SECRET, form);
        assert!(
            r.json()["profile"].as_str().unwrap().contains(profile),
            "{}",
            r.json()
        );
        let searches = r.json()["searches"].as_array().unwrap();
        assert_eq!(
            searches.len(),
            2,
            "TCP group eras use two IPv4 forms: {}",
            r.json()
        );
        let hit: Vec<_> = searches.iter().filter(|s| s["candidates"] != 0).collect();
        assert_eq!(hit.len(), 1);
        assert_eq!(hit[0]["form"], form);
        assert!(r.json()["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("reservoir"));
    }
}

#[test]
fn too_little_evidence_lists_the_candidates_and_says_how_much_more() {
    let p = args("6.18", "tcp", "8", &["--secret", SECRET]);
    let lines = observe(40, "127.0.0.1", 8080, &p);
    let r = recover(
        &[
            &args("6.18", "tcp", "8", &[]),
            &[
                "--lines",
                "-",
                "--range",
                WINDOW,
                "--max-observations",
                "3",
                "-q",
            ][..],
        ]
        .concat(),
        &lines,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.json()["observations"], 3);
    assert_eq!(r.json()["observationsRead"], 40);
    // 3 observations of 8: 2^32 / 8^3 = 2^23 expected over all keys, 2^11 in the window.
    assert_eq!(r.json()["expectedFalseMatches"], 8388608.0);
    let n = r.json()["candidates"].as_u64().unwrap();
    assert!((1700..2400).contains(&n), "{n}");
    assert_eq!(r.json()["all"].as_array().unwrap().len(), 1000);
    assert_eq!(r.json()["allTruncated"], true);
    assert!(r.json()["all"].as_array().unwrap().contains(&SECRET.into()) || n > 1000);
    // 2^23 · 8^-k < 0.001 needs k = 11.
    assert_eq!(r.json()["moreObservationsNeeded"], 11);
    assert!(
        r.stderr.contains("more evidence is needed") && r.stderr.contains("11 more"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("keys satisfy every observation"),
        "{}",
        r.stderr
    );
}

#[test]
fn wrong_group_options_find_nothing() {
    // Recorded with 8 listeners, searched as if there were 7.
    let p = args("6.18", "tcp", "8", &["--secret", SECRET]);
    let lines = observe(40, "127.0.0.1", 8080, &p).replace(" 7\n", " 6\n");
    let r = recover(
        &[
            &args("6.18", "tcp", "7", &[]),
            &["--lines", "-", "--range", WINDOW, "-q"][..],
        ]
        .concat(),
        &lines,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.json()["candidates"], 0);
    assert_eq!(r.json()["secret"], Value::Null);
    assert!(
        r.stderr.contains("no key satisfies every observation"),
        "{}",
        r.stderr
    );
}

fn refused(a: &[&str], stdin: &str, needle: &str) {
    let r = recover(a, stdin);
    assert_eq!(r.code, 2, "{a:?}: {}", r.stderr);
    assert_eq!(*r.json(), Value::Null, "nothing on stdout");
    assert!(
        r.stderr.contains(needle),
        "{a:?}: want `{needle}` in {}",
        r.stderr
    );
}

#[test]
fn unusable_input_is_refused_naming_the_line() {
    let ok = "10.0.0.2 40000 127.0.0.1 8080 1\n";
    let g = args("6.18", "tcp", "8", &["--lines", "-"]);
    refused(
        &g,
        &format!("{ok}\n# comment\n10.0.0.2 4x 127.0.0.1 8080 1\n"),
        "line 4: source port `4x`",
    );
    refused(
        &g,
        &format!("{ok}10.0.0.3 40000 127.0.0.1 8080\n"),
        "line 2: expected",
    );
    refused(
        &g,
        &format!("{ok}10.0.0.3 40000 127.0.0.1 8080 8\n"),
        "line 2: listener 8 does not exist",
    );
    refused(
        &g,
        &format!("{ok}10.0.0.3 40000 127.0.0.2 8080 1\n"),
        "line 2: destination 127.0.0.2 port 8080 does not reach the group",
    );
    refused(
        &[&g[..], &["--bind", "::"]].concat(),
        "fd00::2 40000 fd00::1 8080 1\n",
        "2^64 candidates",
    );
    refused(
        &[&g[..], &["--closed", "3"]].concat(),
        "10.0.0.2 40000 127.0.0.1 8080 3\n",
        "line 1: listener 3 is closed",
    );
    refused(
        &g,
        &format!("{ok}{ok}10.0.0.2 40000 127.0.0.1 8080 2\n"),
        "line 3: this packet hashes exactly like observation 0",
    );
    refused(&g, "\n# nothing\n", "standard input holds no observation");
    refused(
        &args("4.4", "tcp", "8", &["--lines", "-"]),
        ok,
        "reservoir scan",
    );
    refused(
        &args(
            "6.18",
            "tcp",
            "8",
            &["--lines", "-", "--incoming-cpu", "0=1"],
        ),
        ok,
        "SO_INCOMING_CPU",
    );
    // 5.4 - 6.12 step over a connected member; from 6.13 it leaves the
    // group as it connects, so 6.18 has nothing to refuse here.
    refused(
        &args("6.12", "udp", "8", &["--lines", "-", "--connected", "1"]),
        ok,
        "listener 1 is connected",
    );
    refused(
        &["--lines", "-", "--kernel", "6.18", "--proto", "tcp"],
        ok,
        "--lines needs --listeners",
    );
    refused(&[], "", "no observations");
    refused(
        &[
            "--lines",
            "/nonexistent/obs.txt",
            "--proto",
            "tcp",
            "--listeners",
            "2",
            "--kernel",
            "6.18",
        ],
        "",
        "cannot read /nonexistent/obs.txt",
    );
    for bad in [
        "--range 5-1",
        "--range 0-0x100000001",
        "--range x",
        "--threads 0",
    ] {
        let mut a = args("6.18", "tcp", "8", &["--lines", "-"]);
        a.extend(bad.split(' '));
        let r = recover(&a, ok);
        assert_eq!(r.code, 2, "{bad}: {}", r.stderr);
    }
}

// ---------------------------------------------------------------------------
// Trace files

fn tmp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("recover-tests");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A trace of `lines` (as `observe` writes them) for a TCP group.
fn trace(
    release: &str,
    listeners: u32,
    bind: &str,
    port: u16,
    closed: Vec<u32>,
    lines: &str,
) -> Trace {
    let events: Vec<Event> = lines
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Event {
                saddr: f[0].parse().unwrap(),
                sport: f[1].parse().unwrap(),
                daddr: f[2].parse().unwrap(),
                dport: f[3].parse().unwrap(),
                listener: f[4].parse().unwrap(),
                slot: None,
                seq: None,
                cpu: None,
                t_ns: None,
                latency_ns: None,
                hash: None,
            }
        })
        .collect();
    let mut per_listener = vec![0; listeners as usize];
    for e in &events {
        per_listener[e.listener as usize] += 1;
    }
    Trace {
        format: FORMAT.into(),
        version: VERSION,
        recorded: None,
        command: Some("hand-made by agent/tests/recover.rs".into()),
        kernel: KernelInfo {
            release: release.into(),
            profile: None,
        },
        machine: MachineInfo {
            cpus: Some(2),
            netns: Some("host".into()),
        },
        group: TraceGroup {
            proto: Proto::Tcp,
            bind: bind.parse().unwrap(),
            port,
            listeners,
            v6only: false,
            closed,
            incoming_cpu: vec![],
            bpf: None,
            tcp_migrate_req: false,
            slots: vec![],
        },
        options: serde_json::json!({}),
        counts: Counts {
            events: events.len() as u64,
            recorded: Some(events.len() as u64),
            per_listener,
            lost: None,
        },
        sampling: None,
        events,
    }
}

fn write(name: &str, t: &Trace) -> String {
    let path = tmp(name);
    std::fs::write(&path, t.to_json()).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn traces_carry_their_group_and_kernel() {
    let p = args("6.18", "tcp", "6", &["--secret", SECRET, "--closed", "1"]);
    let lines = observe(30, "127.0.0.1", 9000, &p);
    let one = write(
        "one.json",
        &trace("6.18.44-fc", 6, "127.0.0.1", 9000, vec![1], &lines),
    );
    let r = recover(&[one.as_str(), "--range", WINDOW, "-q"], "");
    assert_found(&r, SECRET, "lport_plus");
    assert_eq!(r.json()["profile"], "6.18");
    let r = recover(
        &[
            one.as_str(),
            "--range",
            WINDOW,
            "-q",
            "--max-observations",
            "5",
        ],
        "",
    );
    assert_eq!(
        (
            r.json()["observations"].as_u64(),
            r.json()["observationsRead"].as_u64()
        ),
        (Some(5), Some(30))
    );

    // Two groups of the same boot combine: neither alone is enough.
    let p2 = args(
        "6.18",
        "tcp",
        "3",
        &["--secret", SECRET, "--bind", "0.0.0.0:7000"],
    );
    let few = |l: &str, n: usize| {
        l.lines()
            .take(n)
            .map(|x| format!("{x}\n"))
            .collect::<String>()
    };
    let a = write(
        "a.json",
        &trace("6.18.44-fc", 6, "127.0.0.1", 9000, vec![1], &few(&lines, 6)),
    );
    let b = write(
        "b.json",
        &trace(
            "6.18.44-fc",
            3,
            "0.0.0.0",
            7000,
            vec![],
            &few(&observe(8, "10.1.1.1", 7000, &p2), 8),
        ),
    );
    let mut product = 1.0 / (1u64 << 32) as f64;
    for alone in [&a, &b] {
        let r = recover(&[alone.as_str(), "--range", WINDOW, "-q"], "");
        assert_eq!(r.code, 1, "{alone}: {}", r.json());
        assert!(r.json()["all"].as_array().unwrap().contains(&SECRET.into()));
        product *= r.json()["expectedFalseMatches"].as_f64().unwrap();
    }
    let r = recover(&[a.as_str(), b.as_str(), "--range", WINDOW, "-q"], "");
    assert_eq!(r.code, 0, "{}", r.json());
    assert_eq!(r.json()["all"], serde_json::json!([SECRET]));
    assert_eq!(r.json()["observations"], 14);
    // 2^32 · 5^-6 · 3^-8: independent groups multiply.
    let e = r.json()["expectedFalseMatches"].as_f64().unwrap();
    assert!(
        (e - product).abs() < 1e-6 * product && (41.0..43.0).contains(&e),
        "{e} vs {product}"
    );

    // Classic form from the trace's release, overridden by --kernel.
    let p = args("6.12", "tcp", "6", &["--secret", SECRET, "--closed", "1"]);
    let classic = write(
        "classic.json",
        &trace(
            "6.12.0-1-amd64",
            6,
            "127.0.0.1",
            9000,
            vec![1],
            &observe(30, "127.0.0.1", 9000, &p),
        ),
    );
    assert_found(
        &recover(&[classic.as_str(), "--range", WINDOW, "-q"], ""),
        SECRET,
        "classic",
    );
    let r = recover(
        &[
            classic.as_str(),
            "--range",
            WINDOW,
            "-q",
            "--kernel",
            "6.18",
        ],
        "",
    );
    assert_eq!(r.code, 1, "{}", r.json());
}

#[test]
fn traces_that_cannot_share_a_key_or_be_inverted_are_refused() {
    let lines = "10.0.0.2 40000 127.0.0.1 8080 1\n";
    let t = trace("6.18.44", 4, "127.0.0.1", 8080, vec![], lines);
    let good = write("good.json", &t);
    let other = write(
        "other.json",
        &Trace {
            kernel: KernelInfo {
                release: "6.12.1".into(),
                profile: None,
            },
            ..t.clone()
        },
    );
    refused(&[good.as_str(), other.as_str()], "", "cannot share one key");
    let mut bpf = t.clone();
    bpf.group.bpf = Some(reuseport_agent::trace::BpfInfo {
        kind: "cpu".into(),
        modulus: None,
    });
    refused(&[write("bpf.json", &bpf).as_str()], "", "BPF program");
    let old = write(
        "old.json",
        &Trace {
            kernel: KernelInfo {
                release: "4.4.0-210".into(),
                profile: None,
            },
            ..t.clone()
        },
    );
    refused(&[old.as_str()], "", "reservoir scan");
    refused(
        &[good.as_str(), "--listeners", "4"],
        "",
        "--listeners describes a --lines group",
    );
    let mut broken: Value = serde_json::from_str(&t.to_json()).unwrap();
    broken["events"][0]["sport"] = 70000.into();
    let path = tmp("broken.json");
    std::fs::write(&path, broken.to_string()).unwrap();
    refused(&[path.to_str().unwrap()], "", "/events/0/sport");
    let mut closed = t.clone();
    closed.group.closed = vec![1];
    refused(
        &[write("closed.json", &closed).as_str()],
        "",
        "events[0]: listener 1 is closed",
    );
}

#[test]
fn an_invalid_address_in_a_trace_is_named_by_its_json_path() {
    let t = trace(
        "6.18.44",
        4,
        "127.0.0.1",
        8080,
        vec![],
        "10.0.0.2 40000 127.0.0.1 8080 1\n10.0.0.3 40000 127.0.0.1 8080 2\n",
    );
    let mut v: Value = serde_json::from_str(&t.to_json()).unwrap();
    v["events"][1]["saddr"] = "999.0.0.1".into();
    let path = tmp("bad-ip.json");
    std::fs::write(&path, v.to_string()).unwrap();
    refused(&[path.to_str().unwrap()], "", "/events/1/saddr");
    v["events"][1]["saddr"] = "10.0.0.3".into();
    v["group"]["bind"] = "localhost\u{202e}".into();
    std::fs::write(&path, v.to_string()).unwrap();
    let r = recover(&[path.to_str().unwrap()], "");
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("/group/bind") && !r.stderr.contains('\u{202e}'),
        "{}",
        r.stderr
    );
}

#[test]
fn repeated_observations_are_counted_as_duplicates_and_searched_once() {
    // One line 50,000 times and two others: three observations to search,
    // the repeats counted.
    let p = args("6.18", "tcp", "8", &["--secret", SECRET]);
    let lines = observe(3, "127.0.0.1", 8080, &p);
    let first = lines.lines().next().unwrap();
    let mut input = format!("{first}\n").repeat(50_000);
    input.push_str(&lines);
    let r = recover(
        &args(
            "6.18",
            "tcp",
            "8",
            &["--lines", "-", "--range", WINDOW, "-q"],
        ),
        &input,
    );
    assert_eq!(r.json()["observationsRead"], 50_003, "{}", r.stderr);
    assert_eq!(r.json()["observations"], 50_003);
    assert_eq!(r.json()["duplicates"], 50_000);
    assert_eq!(r.json()["constraints"], 3);
    // --max-observations counts the repeats too.
    let r = recover(
        &args(
            "6.18",
            "tcp",
            "8",
            &[
                "--lines",
                "-",
                "--range",
                WINDOW,
                "-q",
                "--max-observations",
                "10",
            ],
        ),
        &input,
    );
    assert_eq!(r.json()["observationsRead"], 50_003, "{}", r.stderr);
    assert_eq!(r.json()["observations"], 10);
    assert_eq!(
        (
            r.json()["duplicates"].as_u64(),
            r.json()["constraints"].as_u64()
        ),
        (Some(9), Some(1))
    );
}

#[test]
fn max_observations_0_is_a_usage_error() {
    let r = recover(
        &args(
            "6.18",
            "tcp",
            "8",
            &["--lines", "-", "--max-observations", "0"],
        ),
        "10.0.0.2 40000 127.0.0.1 8080 1\n",
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--max-observations"), "{}", r.stderr);
    assert_eq!(*r.json(), Value::Null, "nothing searched");
}

#[test]
fn an_overlong_line_is_refused_naming_it_with_a_short_escaped_start() {
    let mut input = "10.0.0.2 40000 127.0.0.1 8080 1\n".to_string();
    input.push('\u{202e}');
    input.push_str(&"7".repeat(200_000));
    input.push_str(" 40000 127.0.0.1 8080 1\n");
    let r = recover(&args("6.18", "tcp", "8", &["--lines", "-"]), &input);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("line 2")
            && r.stderr.contains("200027 bytes long")
            && r.stderr.contains("\\u{202e}"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.len() < 600, "{} bytes of stderr", r.stderr.len());
}

// ---------------------------------------------------------------------------
// Stopping early

/// `recover --lines - --kernel KERNEL` on one observation of an 8-member
/// TCP group, run in process with the stop flag already raised (as by
/// Ctrl-C before the first chunk): what it returns, its stdout and stderr.
fn stopped_at_once(kernel: &str) -> (recover::Outcome, Vec<u8>, String) {
    let Ok(cli) = Cli::try_parse_from([
        "reuseport-agent",
        "recover",
        "--lines",
        "-",
        "--kernel",
        kernel,
        "--proto",
        "tcp",
        "--listeners",
        "8",
        "-q",
    ]) else {
        panic!("parses")
    };
    let reuseport_agent::Command::Recover(a) = cli.command else {
        unreachable!("parsed a recover command line")
    };
    let stop = AtomicBool::new(true);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let line = "10.0.0.2 40000 127.0.0.1 8080 1\n";
    let o = recover::run(&a, line.as_bytes(), &mut out, &mut err, &stop).unwrap();
    (o, out, String::from_utf8(err).unwrap())
}

#[test]
fn a_stop_flag_ends_the_search_with_the_part_searched() {
    let (o, out, err) = stopped_at_once("6.18");
    assert!(!o.complete);
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["complete"], false);
    assert_eq!(v["searches"][0]["searched"]["end"], "0x00000000");
    assert!(err.contains("interrupted"));
}

#[test]
fn an_interrupted_search_says_the_rest_was_not_tried_and_never_to_try_kernel_any() {
    for kernel in ["any", "6.18"] {
        let (_, _, err) = stopped_at_once(kernel);
        assert!(!err.contains("try --kernel any"), "{kernel}: {err}");
        assert!(err.contains("run it to the end"), "{kernel}: {err}");
    }
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_the_workers_and_reports_exit_130() {
    stops_on("-INT");
}

#[cfg(unix)]
#[test]
fn sigterm_and_sighup_stop_the_search_like_ctrl_c_with_the_json_report() {
    // SIGTERM used to end recover at once (exit 143) with no JSON.
    stops_on("-TERM");
    stops_on("-HUP");
}

#[cfg(unix)]
fn stops_on(signal: &str) {
    let p = args("6.18", "tcp", "8", &["--secret", SECRET]);
    let lines = observe(32, "127.0.0.1", 8080, &p);
    let mut child = Process::new(BIN)
        .args([
            "recover",
            "--lines",
            "-",
            "--kernel",
            "6.18",
            "--proto",
            "tcp",
            "--listeners",
            "8",
            // One thread on the baseline copy: several seconds of work, so
            // the signal lands mid-search even on a fast idle machine (two
            // threads of the widest copy finish 2^32 keys in under a second).
            "--threads",
            "1",
            "--isa",
            "portable",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::{BufRead, Write};
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    // Signal once the search shows progress (a condition, not a sleep); the
    // reader keeps the rest of stderr.
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("ETA") {
                let _ = tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    rx.recv_timeout(Duration::from_secs(300))
        .expect("a progress line within 300 s");
    let started = Instant::now();
    let sent = Process::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = child.wait().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "workers stop after their chunk"
    );
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let err = reader.join().unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["complete"], false);
    let end = &v["searches"][0]["searched"]["end"];
    let end = u64::from_str_radix(end.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    assert!(end > 0 && end < 1 << 32, "{end:#x}");
    assert_eq!(end % recover::CHUNK, 0, "whole chunks only");
    assert!(
        err.contains("recover:") && err.contains("ETA"),
        "progress on stderr: {err}"
    );
    assert!(err.contains("interrupted"), "{err}");
}

// ---------------------------------------------------------------------------
// Traces recorded on the real 6.18 kernel of this project's machine
// (public/traces, made by scripts/record-traces.sh in one boot).

fn public_trace(name: &str) -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../public/traces/").to_string() + name
}

#[test]
fn real_kernel_traces_are_explained_by_one_key_per_protocol() {
    // 4000 TCP connections in four groups (specific, wildcard, two closed,
    // 130 members): one key explains every one, in the 6.15+ lport+ form.
    let tcp: Vec<String> = [
        "tcp-v4-specific-8.json",
        "tcp-v4-wildcard-8.json",
        "tcp-v4-closed-1-5.json",
        "tcp-v4-130.json",
    ]
    .iter()
    .map(|n| public_trace(n))
    .collect();
    let mut a: Vec<&str> = tcp.iter().map(String::as_str).collect();
    a.extend(["--range", "0x2f300000-0x2f400000", "-q"]);
    let r = recover(&a, "");
    assert_found(&r, "0x2f3923d9", "lport_plus");
    assert_eq!(r.json()["observations"], 4000);
    // The classic (pre-6.15) form explains none of them.
    let one = public_trace("tcp-v4-specific-8.json");
    let r = recover(
        &[
            one.as_str(),
            "--kernel",
            "any",
            "--range",
            "0x2f300000-0x2f400000",
            "-q",
        ],
        "",
    );
    assert_found(&r, "0x2f3923d9", "lport_plus");
    let classic = &r.json()["searches"][0];
    assert_eq!(
        (classic["form"].as_str(), classic["candidates"].as_u64()),
        (Some("classic"), Some(0))
    );
    // UDP has its own key.
    let udp = public_trace("udp-v4-specific-8.json");
    let r = recover(
        &[udp.as_str(), "--range", "0xae300000-0xae400000", "-q"],
        "",
    );
    assert_found(&r, "0xae3f9302", "classic");
    // What the hash alone does not decide is refused.
    refused(
        &[public_trace("tcp-v4-incoming-cpu.json").as_str()],
        "",
        "SO_INCOMING_CPU",
    );
    refused(
        &[public_trace("udp-v4-bpf-cpu.json").as_str()],
        "",
        "BPF program",
    );
    refused(
        &[public_trace("tcp-v6-wildcard-netns.json").as_str()],
        "",
        "2^64",
    );
}

// ---------------------------------------------------------------------------
// Fuzzing, bounded: a valid trace with bytes replaced, inserted or cut off
// is read or refused with a short message, never a panic.

mod fuzz {
    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Edit {
        Replace(usize, u8),
        Insert(usize, String),
        Cut(usize),
    }

    fn edit() -> impl Strategy<Value = Edit> {
        prop_oneof![
            (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Replace(i, b)),
            (
                any::<usize>(),
                prop::sample::select(vec![
                    "\"",
                    "{",
                    "}",
                    "[",
                    "]",
                    ",",
                    ":",
                    "-1",
                    "1e400",
                    "null",
                    "\"999.0.0.1\"",
                    "\"\u{202e}\"",
                    "\"events\":[]",
                    "99999999999999999999",
                ])
            )
                .prop_map(|(i, s)| Edit::Insert(i, s.to_string())),
            any::<usize>().prop_map(Edit::Cut),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn a_damaged_trace_is_read_or_refused_with_a_short_message(
            edits in prop::collection::vec(edit(), 1..4),
        ) {
            let lines = "10.0.0.2 40000 127.0.0.1 8080 1\n10.0.0.3 40001 127.0.0.1 8080 3\n";
            let mut bytes = trace("6.18.44", 4, "127.0.0.1", 8080, vec![], lines)
                .to_json()
                .into_bytes();
            for e in edits {
                let at = |i: usize, len: usize| i % (len + 1);
                match e {
                    Edit::Replace(i, b) if !bytes.is_empty() => {
                        let i = i % bytes.len();
                        bytes[i] = b;
                    }
                    Edit::Replace(..) => {}
                    Edit::Insert(i, s) => {
                        let i = at(i, bytes.len());
                        bytes.splice(i..i, s.into_bytes());
                    }
                    Edit::Cut(i) => bytes.truncate(at(i, bytes.len())),
                }
            }
            let mut events = 0usize;
            match Trace::stream(&bytes[..], "t.json", &mut |_, _| events += 1) {
                Ok(t) => prop_assert!(t.group.listeners >= 1),
                Err(e) => {
                    let e = e.to_string();
                    prop_assert!(e.len() < 4000, "{} bytes: {}", e.len(), e);
                    prop_assert!(!e.contains('\u{202e}'), "{}", e);
                }
            }
        }
    }
}

/// Whether process `pid` catches signal `sig` (its `SigCgt` mask in
/// `/proc/PID/status`).
#[cfg(target_os = "linux")]
fn catches(pid: u32, sig: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let mask = s.lines().find_map(|l| l.strip_prefix("SigCgt:"))?;
            u64::from_str_radix(mask.trim(), 16).ok()
        })
        .is_some_and(|m| m & (1 << (sig - 1)) != 0)
}

/// Why: `recover --lines -` waiting on its standard input ignored the first
/// SIGTERM or SIGINT: the read was retried after the handler set the flag.
/// The first signal ends it now, with status 130. (Standard input stays
/// open and empty, so only the signal can end the read; it is closed
/// after 60 s so that a run that ignores the signal still ends.)
#[cfg(target_os = "linux")]
#[test]
fn sigterm_while_reading_stdin_stops_recover_at_once_with_130() {
    let mut child = Process::new(BIN)
        .args([
            "recover",
            "--lines",
            "-",
            "--kernel",
            "6.18",
            "--proto",
            "tcp",
            "--listeners",
            "8",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while !catches(child.id(), libc::SIGTERM) {
        assert!(child.try_wait().unwrap().is_none(), "recover ended early");
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let started = Instant::now();
    let mut stdin = child.stdin.take();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > Duration::from_secs(60) {
            stdin = None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}: {err}");
    assert!(err.contains("interrupted while reading"), "{err}");
}
