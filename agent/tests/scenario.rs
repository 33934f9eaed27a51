//! `reuseport-agent scenario` on the real kernel and `calibrate` on the
//! committed traces. The kernel facts asserted are Cloudflare's: six
//! connections, one at a time, to three idle workers blocked in accept()
//! go round robin (2,2,2), and with EPOLLEXCLUSIVE all six go to one
//! worker (6,0,0). Nothing here depends on how fast the machine is.
//!
//! The tests that run workers take one lock: runs in parallel would share
//! the CPUs, and the cleanup checks look at the process table.

#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command as Process, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use reuseport_agent::cmd::calibrate::Calibration;
use reuseport_agent::cmd::scenario::schema_problems;
use reuseport_model::sim::{simulate, Curated};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_reuseport-agent");

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn lock() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn tmp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("rl-scenario-{}-{name}", std::process::id()))
}

/// Every key path of a JSON value (array elements collapsed to `[]`).
fn shape(v: &Value, at: String, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{at}.{k}");
                out.insert(p.clone());
                shape(x, p, out);
            }
        }
        Value::Array(xs) => {
            for x in xs {
                shape(x, format!("{at}[]"), out);
            }
        }
        _ => {}
    }
}

fn accepts(run: &Value) -> Vec<u64> {
    run["measured"]["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["accepts"].as_u64().unwrap())
        .collect()
}

/// Runs six-connections with two variants; the trace.
fn six(variants: [&str; 2]) -> Value {
    let out = tmp("six.json");
    let run = Command::new(BIN)
        .args([
            "scenario",
            "six-connections",
            "--variant",
            variants[0],
            "--variant",
            variants[1],
            "--timeout",
            "20",
            "-o",
        ])
        .arg(&out)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "stderr: {stderr}");
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    std::fs::remove_file(&out).ok();
    t
}

/// The slowest accept or answer of a run, in microseconds.
fn slowest(run: &Value) -> f64 {
    let m = &run["measured"];
    let max = |k: &str| m[k]["maxUs"].as_f64().unwrap();
    max("acceptLatency").max(max("requestLatency"))
}

#[test]
fn six_idle_connections_go_round_robin_with_blocking_accept_and_all_to_one_with_epollexclusive() {
    let _l = lock();
    // The facts are about idle workers: each connection (100 ms apart) is
    // accepted long before the next arrives. On a machine so busy that an
    // accept or an answer takes 50 ms that is not so, and the run is
    // repeated (at most three times), saying why.
    let mut t = Value::Null;
    for attempt in 1..=3 {
        t = six(["blocking", "epoll-exclusive"]);
        let slowest = t["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(slowest)
            .fold(0.0, f64::max);
        if slowest < 50_000.0 {
            break;
        }
        assert!(
            attempt < 3,
            "three runs in a row had an accept or an answer take {slowest:.0} us (the connections are 100 ms apart): this machine is too busy for the workers to be idle, which is what the test is about"
        );
        eprintln!("attempt {attempt}: an accept or an answer took {slowest:.0} us, the workers were not idle; running again");
    }
    assert_eq!(schema_problems(&t), Vec::<String>::new());
    let runs = t["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["variant"], "blocking");
    assert_eq!(
        accepts(&runs[0]),
        [2, 2, 2],
        "blocking accept() wakes the longest-waiting worker: in turn"
    );
    assert_eq!(runs[1]["variant"], "epoll-exclusive");
    assert_eq!(
        accepts(&runs[1]),
        [6, 0, 0],
        "EPOLLEXCLUSIVE wakes the first registered idle worker every time"
    );
    for r in runs {
        let o = &r["measured"]["outcomes"];
        assert_eq!(o["arrived"], 6);
        assert_eq!(o["done"], 6, "{r}");
        assert_eq!(r["measured"]["requestLatency"]["count"], 6);
        assert_eq!(r["complete"], true);
        assert_eq!(
            r["measured"]["series"]["accepts"].as_array().unwrap().len(),
            r["scenario"]["buckets"].as_u64().unwrap() as usize,
            "the series has the scenario's bucket count"
        );
    }
    assert!(!t["kernel"]["release"].as_str().unwrap().is_empty());
}

#[test]
fn the_measured_part_has_exactly_the_simulators_report_shape() {
    let _l = lock();
    let out = tmp("shape.json");
    let run = Command::new(BIN)
        .args([
            "scenario",
            "six-connections",
            "--variant",
            "reuseport",
            "-o",
        ])
        .arg(&out)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0));
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    std::fs::remove_file(&out).ok();
    let r = &t["runs"][0];
    // The scenario as run goes straight back into the simulator.
    let s: reuseport_model::sim::Scenario = serde_json::from_value(r["scenario"].clone()).unwrap();
    let sim = serde_json::to_value(simulate(s).unwrap()).unwrap();
    let (mut a, mut b) = (BTreeSet::new(), BTreeSet::new());
    shape(&r["measured"], String::new(), &mut a);
    shape(&sim, String::new(), &mut b);
    assert_eq!(a, b);
}

#[test]
fn a_trace_that_breaks_the_schema_is_named() {
    let mut t: Value = serde_json::from_str(
        &std::fs::read_to_string("../public/traces/scenario-six-connections.json").unwrap(),
    )
    .unwrap();
    assert_eq!(schema_problems(&t), Vec::<String>::new());
    t["runs"][0]["measured"]["outcomes"]
        .as_object_mut()
        .unwrap()
        .remove("synDrops");
    let p = schema_problems(&t);
    assert!(p.iter().any(|m| m.contains("synDrops")), "{p:?}");
}

#[test]
fn unknown_scenarios_and_variants_are_refused_with_the_names_to_use() {
    let r = Command::new(BIN)
        .args(["scenario", "no-such"])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("--list"));
    let r = Command::new(BIN)
        .args(["scenario", "six-connections", "--variant", "nope"])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("blocking, epoll"));
    let r = Command::new(BIN)
        .args(["scenario", "--list"])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(0));
    let list = String::from_utf8_lossy(&r.stdout);
    for c in reuseport_model::sim::CURATED {
        assert!(list.contains(c.name), "{} is listed", c.name);
    }
}

fn children_of(pid: u32) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f[1].parse::<u32>().ok() == Some(pid) {
            out.push((p, f[2].parse().unwrap()));
        }
    }
    out
}

fn group_alive(pgid: u32) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            return false;
        };
        std::fs::read_to_string(format!("/proc/{p}/stat"))
            .map(|stat| {
                let rest = &stat[stat.rfind(')').unwrap() + 2..];
                let f: Vec<&str> = rest.split_whitespace().collect();
                f[0] != "Z" && f[2].parse::<u32>().ok() == Some(pgid)
            })
            .unwrap_or(false)
    })
}

#[test]
fn sigint_mid_run_kills_every_child_restores_tcp_migrate_req_and_keeps_the_partial_trace() {
    let _l = lock();
    let sysctl = Path::new("/proc/sys/net/ipv4/tcp_migrate_req");
    let Ok(before) = std::fs::read_to_string(sysctl) else {
        panic!("this kernel has no net.ipv4.tcp_migrate_req (5.14+): the reload scenario's migrate variant cannot run here");
    };
    // SAFETY: no arguments.
    let root = unsafe { libc::geteuid() } == 0;
    // Setting the sysctl needs root; without it the plain variant still
    // checks the cleanup (as record's tests do, saying so).
    let variant = if root {
        "reuseport-migrate"
    } else {
        eprintln!("not root: the tcp_migrate_req part is not checked (it needs root to set)");
        "reuseport"
    };
    let out = tmp("sigint.json");
    let mut child = Process::new(BIN)
        .args(["scenario", "reload", "--variant", variant, "-o"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait until its workers are up, then note their process group.
    let start = Instant::now();
    let mut pgid = None;
    while start.elapsed() < Duration::from_secs(20) {
        if let Some(&(_, g)) = children_of(pid).iter().find(|(_, g)| *g != 0) {
            pgid = Some(g);
            if children_of(pid).len() >= 4 {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let pgid = pgid.expect("the agent forked its workers");
    let during = std::fs::read_to_string(sysctl).unwrap();
    assert_eq!(
        during.trim(),
        "1",
        "the variant runs with tcp_migrate_req on"
    );
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(!group_alive(pgid), "a worker or client outlived the agent");
    assert_eq!(std::fs::read_to_string(sysctl).unwrap(), before);
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    std::fs::remove_file(&out).ok();
    assert_eq!(schema_problems(&t), Vec::<String>::new());
    assert_eq!(t["runs"][0]["stopped"], "interrupted");
    assert_eq!(t["runs"][0]["measured"]["partial"], true);
}

/// The host's tcp_migrate_req set to a value for a test, and put back as
/// it was when dropped.
struct SysctlAs(String);

impl SysctlAs {
    const PATH: &'static str = "/proc/sys/net/ipv4/tcp_migrate_req";
    fn set(v: &str) -> SysctlAs {
        let before = std::fs::read_to_string(Self::PATH).unwrap();
        std::fs::write(Self::PATH, format!("{v}\n")).unwrap();
        SysctlAs(before)
    }
    fn now() -> String {
        std::fs::read_to_string(Self::PATH)
            .unwrap()
            .trim()
            .to_string()
    }
}

impl Drop for SysctlAs {
    fn drop(&mut self) {
        let _ = std::fs::write(Self::PATH, &self.0);
    }
}

/// SIGKILL runs no code in the agent, so a scenario killed mid-run leaves
/// tcp_migrate_req at its variant's 1. The state file the run wrote before
/// setting it makes the next run of the agent (here a scenario variant that
/// asks for 0) put back the value from before the killed run, say so, and
/// remove the file.
#[test]
fn after_a_sigkill_mid_scenario_the_next_run_restores_tcp_migrate_req() {
    let _l = lock();
    let test = "after_a_sigkill_mid_scenario";
    if std::fs::metadata(SysctlAs::PATH).is_err() {
        common::skip_fact(test, "no net.ipv4.tcp_migrate_req (5.14+)");
        return;
    }
    if !common::is_root() {
        common::skip(test, "needs root to set net.ipv4.tcp_migrate_req");
        return;
    }
    let _sysctl = SysctlAs::set("0");
    let state = tmp("sigkill-state");
    let _ = std::fs::remove_file(&state);
    let out = tmp("sigkill.json");
    let mut child = Process::new(BIN)
        .args(["scenario", "reload", "--variant", "reuseport-migrate", "-o"])
        .arg(&out)
        .env("REUSEPORT_AGENT_STATE", &state)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let start = Instant::now();
    while SysctlAs::now() != "1" && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        SysctlAs::now(),
        "1",
        "the variant runs with tcp_migrate_req on"
    );
    let written =
        std::fs::read_to_string(&state).expect("the state file is written before the sysctl");
    assert!(written.contains("previous=0\n"), "{written}");
    let pgid = children_of(pid).iter().map(|&(_, g)| g).find(|&g| g != 0);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    child.wait().unwrap();
    if let Some(g) = pgid {
        // The workers die with their parent (PR_SET_PDEATHSIG); wait for it.
        let start = Instant::now();
        while group_alive(g) && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!group_alive(g), "a worker outlived the killed agent");
    }
    assert_eq!(
        SysctlAs::now(),
        "1",
        "SIGKILL cannot be caught: the killed run leaves its 1"
    );
    assert!(state.exists(), "the killed run leaves its state file");

    let next = Command::new(BIN)
        .args([
            "scenario",
            "reload",
            "--variant",
            "reuseport",
            "--scale",
            "0.05",
            "-o",
        ])
        .arg(&out)
        .env("REUSEPORT_AGENT_STATE", &state)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    std::fs::remove_file(&out).ok();
    let stderr = String::from_utf8_lossy(&next.stderr);
    assert_eq!(next.status.code(), Some(0), "{stderr}");
    assert_eq!(SysctlAs::now(), "0", "{stderr}");
    assert!(stderr.contains("was killed"), "{stderr}");
    assert!(
        !state.exists(),
        "the state file goes once the value is restored"
    );
}

#[test]
fn calibration_reproduces_its_recorded_runs_within_the_stated_agreement() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let traces = root.join("public/traces");
    let file = traces.join("calibration.json");
    let c: Calibration = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    // Every recorded scenario is in it, and every curated one was recorded.
    let mut on_disk: Vec<String> = std::fs::read_dir(&traces)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("scenario-") && n.ends_with(".json"))
        .collect();
    on_disk.sort();
    assert_eq!(c.traces, on_disk);
    for cur in reuseport_model::sim::CURATED {
        assert!(
            on_disk.contains(&format!("scenario-{}.json", cur.name)),
            "{} has a recorded run",
            cur.name
        );
        assert!(Curated::named(cur.name).is_some());
    }
    // What it claims is consistent with its thresholds.
    for a in &c.runs {
        assert_eq!(
            a.agrees,
            a.share_error <= c.share_threshold && a.latency_distance <= c.latency_threshold,
            "{}/{}",
            a.scenario,
            a.variant
        );
        let named = c
            .disagrees
            .iter()
            .any(|d| d.starts_with(&format!("{}/{}:", a.scenario, a.variant)));
        assert_eq!(
            named, !a.agrees,
            "{}/{} is listed iff it disagrees",
            a.scenario, a.variant
        );
    }
    assert_eq!(
        c.extrapolation.iter().map(|e| e.cpus).collect::<Vec<_>>(),
        [2, 8, 16, 48]
    );
    assert!(c.sensitivity.iter().any(|s| s.param == c.driver));
    // And the simulator, given its parameters, gives each figure it states.
    let run = Command::new(BIN)
        .args(["calibrate", "--traces"])
        .arg(&traces)
        .arg("--check")
        .arg(&file)
        .timeout(Duration::from_secs(600))
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "calibrate --check: {}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// `scenario quic-reload` on the running kernel. Besides the agent's own
/// comparison with the model (every datagram), the flows are read from the
/// datagrams themselves, not from the script's counts: with the
/// connection-ID program each old flow's datagram during the drain reaches
/// the socket its 1-RTT datagram reached before the reload; without it,
/// most do not (the hash over eight slots keeps about one in eight).
#[test]
fn quic_reload_on_the_kernel_keeps_flows_only_with_the_program_and_agrees_with_the_model() {
    if !common::is_root() {
        common::skip(
            "quic_reload_on_the_kernel_keeps_flows_only_with_the_program_and_agrees_with_the_model",
            "the UDP group runs in a private network namespace, which needs root",
        );
        return;
    }
    let r = Command::new(BIN)
        .args(["scenario", "quic-reload"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let v: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert!(v["key"].is_u64(), "one key recovered");
    for run in v["runs"].as_array().unwrap() {
        let variant = run["variant"].as_str().unwrap();
        assert!(run["compared"].as_u64().unwrap() > 0);
        assert_eq!(run["agreed"], run["compared"], "{variant}");
        let datagrams = run["measured"]["datagrams"].as_array().unwrap();
        let short = |phase: &str| -> std::collections::BTreeMap<u64, u64> {
            datagrams
                .iter()
                .filter(|d| d["phase"] == phase && d["form"] == "short")
                .filter_map(|d| Some((d["sport"].as_u64()?, d["socket"].as_u64()?)))
                .collect()
        };
        let (before, drain) = (short("before"), short("drain"));
        let kept = before
            .iter()
            .filter(|(p, s)| drain.get(p) == Some(s))
            .count();
        assert_eq!(
            before.len(),
            64,
            "{variant}: every flow was answered before the reload"
        );
        if variant == "cid-program" {
            assert_eq!(kept, 64, "the program keeps every old flow");
        } else {
            assert!(
                kept < 32,
                "without a program the flows rehash: {kept} of 64 kept"
            );
        }
    }
}
