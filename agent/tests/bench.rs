//! `reuseport-agent bench`, in small bounded runs on loopback (2 workers,
//! 2 clients, 200 connections each): every mode completes, the counts add
//! up, the JSON has the documented fields, impossible options are refused,
//! and every child process is reaped and every descriptor closed, also
//! after `--timeout`, a setup error and Ctrl-C. Nothing here depends on
//! how fast the machine is.
//!
//! The tests take one lock: runs in parallel would share two CPUs, and the
//! in-process checks (descriptors, children) need the process to themselves.

#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::process::{Command as Process, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use clap::Parser;
use reuseport_agent::{cmd::bench, Cli, Command as Sub};
use serde_json::Value;

mod common;

use common::{Run, BIN};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn lock() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn agent(args: &[&str]) -> Run {
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    common::agent(&all, "", Duration::from_secs(30))
}

fn json(args: &[&str]) -> (i32, Value) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let r = agent(&all);
    (r.code, r.json().clone())
}

const SMALL: [&str; 8] = [
    "--workers",
    "2",
    "--clients",
    "2",
    "--connections",
    "200",
    "--timeout",
    "20",
];

fn counts(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

/// Whether any process is left in group `pgid`.
fn group_alive(pgid: i64) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(-(pgid as libc::pid_t), 0) == 0 }
}

/// The documented fields of a complete mode, and its counts.
fn check_complete_mode(m: &Value, mode: &str, epoll: bool) {
    assert_eq!(m["mode"], mode, "{m}");
    assert_eq!(m["complete"], true, "{m}");
    assert_eq!(m["stopped"], Value::Null);
    assert!(m["port"].as_u64().unwrap() > 0);
    assert!(m["seconds"].as_f64().unwrap() > 0.0);
    assert!(m["connections_per_second"].as_f64().unwrap() > 0.0);
    assert_eq!(m["connections"], 400);
    assert_eq!(m["connected"], 400);
    assert_eq!(m["accepted"], 400);
    let workers = counts(&m["per_worker"]);
    assert_eq!(workers.len(), 2);
    assert_eq!(workers.iter().sum::<u64>(), 2 * 200, "{m}");
    assert_eq!(counts(&m["per_client"]), [200, 200]);
    assert_eq!(m["errors"], serde_json::json!([]));
    if epoll {
        assert_eq!(counts(&m["empty_wakeups"]).len(), 2);
    } else {
        assert_eq!(m["empty_wakeups"], Value::Null);
    }
    // The spread figures agree with the counts.
    let (a, b) = (workers[0] as f64, workers[1] as f64);
    let jain = (a + b) * (a + b) / (2.0 * (a * a + b * b));
    assert!((m["jain"].as_f64().unwrap() - jain).abs() < 1e-9, "{m}");
    assert!(jain > 0.5 - 1e-9 && jain <= 1.0 + 1e-9);
    match m["max_min_ratio"].as_f64() {
        Some(r) => assert!((r - a.max(b) / a.min(b)).abs() < 1e-9, "{m}"),
        None => assert!(workers.contains(&0), "{m}"),
    }
    if mode == "reuseport" {
        // 400 connections from many distinct source ports, hashed over two
        // listeners: a listener with none has probability 2^-399.
        assert!(workers.iter().all(|&w| w > 0), "{m}");
    }
    assert!(!group_alive(m["process_group"].as_i64().unwrap()));
}

#[test]
fn both_modes_complete_and_the_counts_add_up() {
    let _l = lock();
    let (code, v) = json(&SMALL);
    assert_eq!(code, 0, "{v}");
    for field in [
        "nproc",
        "workers",
        "clients",
        "connections_per_client",
        "accept",
        "address",
        "timeout_secs",
        "complete",
        "stopped",
        "modes",
        "fork_over_reuseport",
        "note",
    ] {
        assert!(v.get(field).is_some(), "no {field} in {v}");
    }
    assert_eq!(v["workers"], 2);
    assert_eq!(v["clients"], 2);
    assert_eq!(v["connections_per_client"], 200);
    assert_eq!(v["accept"], "blocking");
    assert_eq!(v["address"], "127.0.0.1");
    assert_eq!(v["complete"], true);
    assert!(v["nproc"].as_u64().unwrap() >= 1);
    let modes = v["modes"].as_array().unwrap();
    assert_eq!(modes.len(), 2);
    check_complete_mode(&modes[0], "fork", false);
    check_complete_mode(&modes[1], "reuseport", false);
    let ratio = v["fork_over_reuseport"].as_f64().unwrap();
    let f = modes[0]["seconds"].as_f64().unwrap();
    let r = modes[1]["seconds"].as_f64().unwrap();
    assert!((ratio - f / r).abs() < 1e-9 * ratio.max(1.0));
}

#[test]
fn each_mode_alone_and_with_epoll() {
    let _l = lock();
    for (mode, epoll) in [
        ("fork", false),
        ("reuseport", false),
        ("fork", true),
        ("reuseport", true),
    ] {
        let mut args = SMALL.to_vec();
        args.extend(["--mode", mode]);
        if epoll {
            args.push("--epoll");
        }
        let (code, v) = json(&args);
        assert_eq!(code, 0, "{mode} {epoll}: {v}");
        assert_eq!(v["accept"], if epoll { "epoll" } else { "blocking" });
        let modes = v["modes"].as_array().unwrap();
        assert_eq!(modes.len(), 1);
        check_complete_mode(&modes[0], mode, epoll);
        assert_eq!(v["fork_over_reuseport"], Value::Null);
    }
}

#[test]
fn human_output_names_the_modes_the_machine_and_the_article() {
    let _l = lock();
    let r = agent(&SMALL);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let nproc = std::thread::available_parallelism().unwrap().get();
    for want in [
        &format!("nproc {nproc}") as &str,
        "not comparable",
        "4m45s",
        "fork       one listener",
        "reuseport  2 listeners with SO_REUSEPORT",
        "per worker",
        "Jain index",
        "max/min",
        "fork / reuseport time:",
    ] {
        assert!(r.stdout.contains(want), "no {want:?} in\n{}", r.stdout);
    }
    assert!(!r.stdout.contains("INCOMPLETE"));
}

#[test]
fn impossible_options_are_usage_errors() {
    let _l = lock();
    for bad in [
        &["--workers", "0"][..],
        &["--clients", "0"],
        &["--connections", "0"],
        &["--timeout", "0"],
        &["--workers", "1025"],
        &["--mode", "threads"],
        &["--epoll", "--blocking-accept"],
    ] {
        let r = agent(bad);
        assert_eq!(r.code, 2, "{bad:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{bad:?}");
        assert!(r.stderr.contains(bad[0]), "{bad:?}: {}", r.stderr);
    }
}

#[test]
fn a_port_in_use_is_refused_with_a_way_out() {
    let _l = lock();
    // A plain listener, without SO_REUSEPORT: neither mode can share it.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    for mode in ["fork", "reuseport"] {
        let mut args = SMALL.to_vec();
        args.extend(["--json", "--mode", mode, "--port", &port]);
        let r = agent(&args);
        assert_eq!(r.code, 2, "{mode}: {}", r.stderr);
        assert!(r.stdout.is_empty());
        assert!(
            r.stderr.contains(&format!("127.0.0.1:{port}")),
            "{}",
            r.stderr
        );
        assert!(r.stderr.contains("--port 0"), "{}", r.stderr);
    }
}

/// Why: two `bench --mode reuseport` runs on one port merged silently (one
/// accepted 12,915 of 12,000 connections). Another program's SO_REUSEPORT
/// listener on the port, which joins the workers' group, is refused and
/// named, as `record` refuses it.
#[test]
fn another_programs_reuseport_listener_on_the_port_refuses_the_run() {
    let _l = lock();
    let other = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    other.set_reuse_port(true).unwrap();
    other.set_reuse_address(true).unwrap();
    let at: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
    other.bind(&at.into()).unwrap();
    other.listen(128).unwrap();
    let port = other
        .local_addr()
        .unwrap()
        .as_socket()
        .unwrap()
        .port()
        .to_string();
    let mut args = SMALL.to_vec();
    args.extend(["--json", "--mode", "reuseport", "--port", &port]);
    let r = agent(&args);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(
        r.stderr.contains(&format!("127.0.0.1:{port} (uid")),
        "{}",
        r.stderr
    );
}

fn args_of(argv: &[&str]) -> bench::BenchArgs {
    let all = ["reuseport-agent", "bench"].iter().chain(argv);
    match Cli::try_parse_from(all).unwrap().command {
        Sub::Bench(a) => a,
        _ => unreachable!("parsed a bench command line"),
    }
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Asserts this process has no child left, reaped or not.
fn no_children() {
    let mut status = 0;
    // SAFETY: a non-blocking wait for any child.
    let r = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
    let errno = std::io::Error::last_os_error().raw_os_error();
    assert!(
        r == -1 && errno == Some(libc::ECHILD),
        "a child is left: waitpid gave {r}"
    );
}

#[test]
fn in_process_runs_leave_no_descriptor_and_no_child() {
    let _l = lock();
    let before = open_fds();

    let report = bench::run(&args_of(&SMALL), std::io::sink()).unwrap();
    assert!(report.complete);
    assert_eq!(open_fds(), before);
    no_children();

    // A setup error half-way: the workers of the first mode are forked
    // before the port turns out to be taken.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let mut args = SMALL.to_vec();
    args.extend(["--mode", "reuseport", "--port", &port]);
    let before_taken = open_fds();
    assert!(bench::run(&args_of(&args), std::io::sink()).is_err());
    assert_eq!(open_fds(), before_taken);
    no_children();
    drop(taken);

    // Stopped by --timeout in the middle of the clients' work.
    let report = bench::run(
        &args_of(&[
            "--workers",
            "2",
            "--clients",
            "2",
            "--connections",
            "100000000",
            "--timeout",
            "1",
        ]),
        std::io::sink(),
    )
    .unwrap();
    assert!(!report.complete);
    assert_eq!(report.stopped, Some(bench::Stop::Timeout));
    assert_eq!(report.modes.len(), 1, "the run stops at the first mode");
    assert!(!report.modes[0].complete);
    assert_eq!(open_fds(), before);
    no_children();
}

#[test]
fn timeout_reports_partial_results_and_exit_1() {
    let _l = lock();
    let (code, v) = json(&[
        "--workers",
        "2",
        "--clients",
        "2",
        "--connections",
        "100000000",
        "--timeout",
        "1",
    ]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["complete"], false);
    assert_eq!(v["stopped"], "timeout");
    assert_eq!(v["fork_over_reuseport"], Value::Null);
    let m = &v["modes"][0];
    assert_eq!(m["stopped"], "timeout");
    assert_eq!(m["complete"], false);
    assert_eq!(counts(&m["per_worker"]).len(), 2);
    assert_eq!(
        counts(&m["per_client"]).iter().sum::<u64>(),
        m["connected"].as_u64().unwrap()
    );
    assert!(!group_alive(m["process_group"].as_i64().unwrap()));
}

/// The children of `pid`, from /proc.
fn children_of(pid: u32) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stat")).ok())
        .filter(|stat| {
            // pid (comm) state ppid ...
            let after = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
            after.split_whitespace().nth(1) == Some(&pid.to_string())
        })
        .count()
}

#[test]
fn ctrl_c_kills_the_children_and_reports_what_was_done() {
    interrupted_by(libc::SIGINT);
}

#[test]
fn sighup_stops_the_run_as_ctrl_c_does() {
    // SIGHUP (the terminal closed) used to end bench at once: no report,
    // the children left to their parent-death signal.
    interrupted_by(libc::SIGHUP);
}

/// Starts a long bench, sends `sig` once its children are forked, and
/// checks the partial report and that every child is gone.
fn interrupted_by(sig: libc::c_int) {
    let _l = lock();
    let mut child = Process::new(BIN)
        .args([
            "bench",
            "--json",
            "--workers",
            "2",
            "--clients",
            "2",
            "--connections",
            "100000000",
            "--timeout",
            "30",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once workers and clients are forked, the signal handler is in place.
    let started = Instant::now();
    while children_of(child.id()) < 4 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the bench never forked its clients"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);

    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .lines()
        .for_each(|l| stderr.push_str(&l.unwrap()));
    // 130, as the exit table says for a run a signal stopped (it gave 1).
    assert_eq!(status.code(), Some(130), "{stdout} {stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["complete"], false);
    assert_eq!(v["stopped"], "interrupted");
    let modes = v["modes"].as_array().unwrap();
    assert_eq!(modes.len(), 1, "the run stops at the interrupted mode");
    assert_eq!(modes[0]["stopped"], "interrupted");
    assert!(!group_alive(modes[0]["process_group"].as_i64().unwrap()));
}
