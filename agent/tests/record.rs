//! `reuseport-agent record` on the running kernel, over loopback: every
//! trace must validate against the schema, and the listeners it names must
//! follow the kernel's documented structure (kernel-history.md §3, §6.2,
//! §8.2, §8.6 and experiment E4 of §10). Each test drives at most 2000
//! events and is bounded by `--duration`. Off Linux every test is ignored
//! (with the reason); a test that needs root or a newer kernel says
//! `SKIPPED` on stderr, and fails instead under `REUSEPORT_REQUIRE_ROOT=1`
//! when root is what it lacks ([`common`]).
//!
//! One file on purpose: its tests share one lock (they bind the same
//! loopback ports), the port choice and the root checks.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, TcpListener};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use reuseport_agent::trace::Trace;

mod common;

use common::{Run, BIN};

/// Runs `record` with the trace on stdout; a trace that does not validate
/// fails the test.
fn record(args: &[&str]) -> Run {
    let mut all = vec!["record"];
    all.extend_from_slice(args);
    let r = common::agent(&all, "", Duration::from_secs(120));
    trace(&r);
    r
}

/// The trace a run wrote on stdout, validated; `None` when it wrote none.
fn trace(r: &Run) -> Option<Trace> {
    (!r.stdout.is_empty()).then(|| {
        Trace::parse(&r.stdout, "stdout").unwrap_or_else(|e| panic!("{e}\nstderr: {}", r.stderr))
    })
}

/// A successful recording's trace.
fn recorded(args: &[&str]) -> Trace {
    let r = record(args);
    assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    trace(&r).expect("a trace on stdout")
}

/// The running kernel's (major, minor).
fn release() -> (u32, u32) {
    let r = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut it = r.trim().split(['.', '-']).map(|x| x.parse().unwrap_or(0));
    (it.next().unwrap(), it.next().unwrap())
}

/// A TCP and UDP port free on 127.0.0.1 just now.
fn free_port() -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// What every trace must satisfy: counts add up, events are addressed to
/// the group, name listeners that exist, and never repeat a client pair.
fn check(t: &Trace, listeners: u32) {
    let c = &t.counts;
    assert_eq!(t.group.listeners, listeners);
    assert_eq!(c.per_listener.len(), listeners as usize);
    assert_eq!(
        c.per_listener.iter().sum::<u64>() + c.lost.unwrap_or(0),
        c.events
    );
    assert_eq!(c.recorded, Some(t.events.len() as u64));
    let mut pairs = HashSet::new();
    let mut last = None;
    for e in &t.events {
        assert!(e.listener < listeners, "{e:?}");
        assert_eq!(e.dport, t.group.port);
        assert!(pairs.insert((e.saddr, e.sport)), "pair repeated: {e:?}");
        assert!(e.seq > last, "seq increases: {e:?}");
        last = e.seq;
        if !t.group.slots.is_empty() {
            let slot = e.slot.expect("a slot when the model gave slots") as usize;
            assert_eq!(t.group.slots[slot], e.listener, "{e:?}");
        }
    }
    assert!(t.recorded.as_deref().unwrap().ends_with('Z'));
    assert!(t.command.as_deref().unwrap().contains("record"));
}

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "record needs Linux")]
fn a_tcp_group_of_8_on_127_0_0_1_spreads_300_connections_over_every_listener() {
    let t = recorded(&[
        "--proto",
        "tcp",
        "--listeners",
        "8",
        "--count",
        "300",
        "--duration",
        "10",
    ]);
    check(&t, 8);
    assert_eq!(t.counts.events, 300);
    assert_eq!(t.counts.lost, Some(0));
    assert_eq!(t.counts.per_listener.iter().sum::<u64>(), 300);
    assert!(
        t.counts.per_listener.iter().all(|&n| n > 0),
        "{:?}",
        t.counts.per_listener
    );
    assert_eq!(t.group.slots, (0..8).collect::<Vec<_>>());
    assert!(t.events.iter().all(|e| e.slot == Some(e.listener)));
    assert!(t.events.iter().all(|e| e.daddr.to_string() == "127.0.0.1"));
    assert_eq!(t.machine.netns.as_deref(), Some("host"));
    assert!(
        t.kernel.profile.is_some(),
        "the running kernel maps to a profile"
    );
    assert_eq!(t.options["seed"], 0);
    assert_eq!(t.options["stoppedBy"], "count");
}

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "record needs Linux")]
fn a_closed_listener_gets_nothing_and_the_last_listener_takes_its_slot() {
    let t = recorded(&[
        "--proto",
        "tcp",
        "--listeners",
        "8",
        "--closed",
        "1",
        "--count",
        "300",
        "--duration",
        "10",
    ]);
    check(&t, 8);
    assert_eq!(t.group.closed, vec![1]);
    assert_eq!(t.group.slots, vec![0, 7, 2, 3, 4, 5, 6]);
    assert_eq!(t.counts.per_listener[1], 0);
    assert!(t.events.iter().all(|e| e.listener != 1));
    assert!(t
        .events
        .iter()
        .filter(|e| e.listener == 7)
        .all(|e| e.slot == Some(1)));
    assert_eq!(t.counts.events, 300);
}

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "record needs Linux")]
fn a_udp_wildcard_group_of_5_receives_every_datagram() {
    let t = recorded(&[
        "--proto",
        "udp",
        "--bind",
        "0.0.0.0",
        "--listeners",
        "5",
        "--count",
        "300",
        "--duration",
        "10",
    ]);
    check(&t, 5);
    assert_eq!(t.group.bind.to_string(), "0.0.0.0");
    assert_eq!(t.counts.events, 300);
    assert_eq!(t.counts.lost, Some(0));
    assert!(
        t.counts.per_listener.iter().all(|&n| n > 0),
        "{:?}",
        t.counts.per_listener
    );
    assert!(t.events.iter().all(|e| e.daddr.to_string() == "127.0.0.1"));
}

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "record needs Linux")]
fn a_group_of_130_grows_past_128_and_its_late_members_receive() {
    let t = recorded(&[
        "--proto",
        "tcp",
        "--listeners",
        "130",
        "--count",
        "500",
        "--duration",
        "10",
    ]);
    check(&t, 130);
    assert_eq!(t.counts.events, 500);
    assert_eq!(t.group.slots.len(), 130);
    // Listeners 120..130 expect ~38 connections between them; none at all
    // would mean the grown array is not selected from.
    let late: u64 = t.counts.per_listener[120..].iter().sum();
    assert!(late > 0, "{:?}", t.counts.per_listener);
}

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "record needs Linux")]
fn incoming_cpu_sends_each_connection_to_a_listener_pinned_to_its_cpu() {
    if release() < (6, 2) {
        common::skip_fact(
            "incoming_cpu",
            "SO_INCOMING_CPU steers group selection from 6.2 (kernel-history.md §8.6)",
        );
        return;
    }
    let t = recorded(&[
        "--proto",
        "tcp",
        "--listeners",
        "6",
        "--incoming-cpu-all",
        "--pin-cpu",
        "--count",
        "300",
        "--duration",
        "10",
    ]);
    check(&t, 6);
    let pinned: HashMap<u32, u32> = t
        .group
        .incoming_cpu
        .iter()
        .map(|p| (p.listener, p.cpu))
        .collect();
    assert_eq!(pinned.len(), 6);
    for e in &t.events {
        let cpu = e.cpu.expect("--pin-cpu records the CPU");
        assert_eq!(pinned[&e.listener], cpu, "{e:?}");
    }
    assert_eq!(t.counts.events, 300);
}

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "record needs Linux")]
fn bpf_cpu_sends_each_datagram_to_the_index_of_its_cpu() {
    // Enough members that every CPU id here is an index (§8.2).
    let t = recorded(&[
        "--proto",
        "udp",
        "--bind",
        "0.0.0.0",
        "--listeners",
        "64",
        "--bpf",
        "cpu",
        "--pin-cpu",
        "--count",
        "200",
        "--duration",
        "10",
    ]);
    check(&t, 64);
    assert_eq!(t.group.bpf.as_ref().unwrap().kind, "cpu");
    let cpus: Vec<u64> = serde_json::from_value(t.options["pinCpus"].clone()).unwrap();
    if cpus.iter().any(|&c| c >= 64) {
        common::skip_fact(
            "bpf_cpu",
            "CPU ids past 63 are not indexes of a 64-member group",
        );
        return;
    }
    assert!(
        t.events.iter().all(|e| Some(e.listener) == e.cpu),
        "{:?}",
        t.events.iter().find(|e| Some(e.listener) != e.cpu)
    );
    assert_eq!(t.counts.events, 200);
}

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "record needs Linux")]
fn bpf_payload_mod_sends_sequence_k_to_listener_k_mod_4() {
    let t = recorded(&[
        "--proto",
        "udp",
        "--listeners",
        "8",
        "--bpf",
        "payload-mod:4",
        "--count",
        "200",
        "--duration",
        "10",
    ]);
    check(&t, 8);
    let bpf = t.group.bpf.as_ref().unwrap();
    assert_eq!((bpf.kind.as_str(), bpf.modulus), ("payload-mod", Some(4)));
    for e in &t.events {
        assert_eq!(u64::from(e.listener), e.seq.unwrap() % 4, "{e:?}");
    }
    assert_eq!(&t.counts.per_listener[4..], &[0, 0, 0, 0]);
    assert_eq!(t.counts.events, 200);
}

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "record needs Linux")]
fn payload_mod_is_refused_for_tcp() {
    let r = record(&[
        "--proto",
        "tcp",
        "--listeners",
        "2",
        "--bpf",
        "payload-mod:2",
    ]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("TCP_FASTOPEN"), "{}", r.stderr);
}

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "record needs Linux")]
fn an_ipv6_wildcard_group_in_a_private_namespace_takes_many_fd00_clients() {
    let r = record(&[
        "--proto",
        "tcp",
        "--bind",
        "::",
        "--netns",
        "--clients",
        "200",
        "--listeners",
        "8",
        "--count",
        "300",
        "--duration",
        "10",
    ]);
    if r.code == 2 && (r.stderr.contains("needs root") || r.stderr.contains("`ip`")) {
        common::skip(
            "ipv6 wildcard in a private namespace",
            &format!("needs root (and iproute2) for --netns: {}", r.stderr.trim()),
        );
        return;
    }
    assert_eq!(r.code, 0, "{}", r.stderr);
    let t = trace(&r).unwrap();
    check(&t, 8);
    assert_eq!(t.machine.netns.as_deref(), Some("private (unshare)"));
    assert_eq!(t.counts.events, 300);
    assert_eq!(t.counts.lost, Some(0));
    let sources: HashSet<IpAddr> = t.events.iter().map(|e| e.saddr).collect();
    assert!(sources.len() > 100, "{} sources", sources.len());
    assert!(sources.iter().all(|a| a.to_string().starts_with("fd00::")));
    assert!(t.events.iter().all(|e| e.daddr.to_string() == "::1"));
}

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "record needs Linux")]
fn ipv4_clients_reach_a_dual_stack_ipv6_group() {
    let t = recorded(&[
        "--proto",
        "udp",
        "--bind",
        "::",
        "--client",
        "127.0.0.5",
        "--client",
        "127.0.0.6",
        "--listeners",
        "4",
        "--count",
        "100",
        "--duration",
        "10",
    ]);
    check(&t, 4);
    assert_eq!(t.counts.lost, Some(0));
    assert!(t
        .events
        .iter()
        .all(|e| e.saddr.is_ipv4() && e.daddr.to_string() == "127.0.0.1"));
}

const MIGRATE_REQ: &str = "/proc/sys/net/ipv4/tcp_migrate_req";

/// Held by the tests that change the host's tcp_migrate_req, so that one
/// does not read the other's value as the one to restore.
static SYSCTL: Mutex<()> = Mutex::new(());

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "record needs Linux")]
fn tcp_migrate_req_is_set_for_the_run_and_restored_after() {
    let _one_at_a_time = SYSCTL.lock().unwrap_or_else(|e| e.into_inner());
    let Ok(before) = std::fs::read_to_string(MIGRATE_REQ) else {
        common::skip_fact("tcp_migrate_req", &format!("no {MIGRATE_REQ} (5.14+)"));
        return;
    };
    let r = record(&[
        "--proto",
        "tcp",
        "--listeners",
        "4",
        "--closed",
        "2",
        "--tcp-migrate-req",
        "--count",
        "100",
        "--duration",
        "10",
    ]);
    if r.code == 2 && r.stderr.contains("needs root") {
        common::skip(
            "tcp_migrate_req",
            &format!("needs root to set {MIGRATE_REQ}"),
        );
        return;
    }
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(MIGRATE_REQ).unwrap(), before);
    let t = trace(&r).unwrap();
    check(&t, 4);
    assert!(t.group.tcp_migrate_req);
    assert_eq!(t.options["tcpMigrateReqBefore"], before.trim());
    assert_eq!(t.group.slots, vec![0, 1, 3]);
}

#[cfg(not(target_os = "linux"))]
#[test]
fn off_linux_record_exits_2_saying_it_needs_linux() {
    let r = record(&["--proto", "tcp", "--listeners", "2"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("record needs Linux"), "{}", r.stderr);
}

#[cfg(target_os = "linux")]
#[test]
fn sigint_writes_what_was_recorded_restores_the_sysctl_and_exits_130() {
    let _one_at_a_time = SYSCTL.lock().unwrap_or_else(|e| e.into_inner());
    let migrate = std::fs::read_to_string(MIGRATE_REQ).ok();
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("sigint.json");
    let mut cmd = Command::new(BIN);
    cmd.args([
        "record",
        "--proto",
        "tcp",
        "--listeners",
        "4",
        "--count",
        "2000",
        "--duration",
        "10",
    ])
    .arg("--output")
    .arg(&out)
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    // As root, also check that the sysctl comes back after a signal.
    let as_root = migrate.is_some() && unsafe { libc::geteuid() } == 0;
    if as_root {
        cmd.arg("--tcp-migrate-req");
    }
    // The first progress line comes when the traffic starts: signal then.
    let mut child = cmd.spawn().unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stderr.as_mut().unwrap()),
        &mut first,
    )
    .unwrap();
    assert!(first.starts_with("record: 0/2000"), "{first}");
    std::thread::sleep(std::time::Duration::from_millis(30));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    let code = done.status.code().unwrap();
    if let Some(m) = &migrate {
        assert_eq!(
            &std::fs::read_to_string(MIGRATE_REQ).unwrap(),
            m,
            "sysctl restored"
        );
    }
    if code == 0 {
        common::skip_fact("sigint", "the run finished before the signal came");
        return;
    }
    assert_eq!(code, 130, "{stderr}");
    if stderr.contains("nothing was recorded") {
        return; // the signal came during setup
    }
    let t = Trace::read(&out).unwrap();
    check(&t, 4);
    eprintln!("interrupted after {} events", t.counts.events);
    assert!(t.counts.events < 2000);
    assert_eq!(t.options["stoppedBy"], "signal");
}

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "record needs Linux")]
fn impossible_options_exit_2_with_a_message() {
    for (args, says) in [
        (&["--listeners", "0"][..], "at least one listener"),
        (
            &["--listeners", "4", "--closed", "9"][..],
            "has 4 listener(s), numbered from 0",
        ),
        (
            &["--listeners", "4", "--closed", "0,1,2,3"][..],
            "leave at least one",
        ),
    ] {
        let r = record(&[&["--proto", "tcp"][..], args].concat());
        assert_eq!(r.code, 2, "{args:?}");
        assert!(trace(&r).is_none());
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
}

/// `record --port P --output OUT` with P held by a plain listener.
fn record_on_a_held_port(out: &std::path::Path) -> Run {
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port().to_string();
    let r = record(&[
        "--proto",
        "tcp",
        "--listeners",
        "2",
        "--port",
        &port,
        "--count",
        "10",
        "--output",
        out.to_str().unwrap(),
    ]);
    r
}

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "record needs Linux")]
fn a_port_held_by_another_program_is_named_with_the_fix() {
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("eaddrinuse.json");
    let r = record_on_a_held_port(&out);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("listener 0") && r.stderr.contains("another program"),
        "{}",
        r.stderr
    );
    assert!(!out.exists(), "no trace file is left behind");
}

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "record needs Linux")]
fn sampling_keeps_every_tenth_event_and_counts_all() {
    let t = recorded(&[
        "--proto",
        "udp",
        "--listeners",
        "3",
        "--count",
        "300",
        "--sample",
        "10",
        "--duration",
        "10",
    ]);
    check(&t, 3);
    assert_eq!(t.counts.events, 300);
    assert_eq!(t.events.len(), 30);
    assert_eq!(t.sampling.as_ref().map(|s| s.every), Some(10));
}

/// Experiment E4 (kernel-history.md §10) on this kernel: closing listener 1
/// of 4 moves the last listener into its slot, and reciprocal_scale over 3
/// instead of 4 then maps old 0 → 0, old 3 → 2, old 1 → {0, 3}, old 2 →
/// {2, 3}. Both runs use the same port and seed, so the same 400 client
/// pairs hash the same way.
fn e4(proto: &str) {
    let port = free_port().to_string();
    let base = [
        "--proto",
        proto,
        "--listeners",
        "4",
        "--port",
        &port,
        "--seed",
        "4",
        "--count",
        "400",
        "--duration",
        "10",
    ];
    let before = recorded(&base);
    let after = recorded(&[&base[..], &["--closed", "1"]].concat());
    check(&before, 4);
    check(&after, 4);
    let old: HashMap<(IpAddr, u16), u32> = before
        .events
        .iter()
        .map(|e| ((e.saddr, e.sport), e.listener))
        .collect();
    let mut seen: HashMap<u32, HashSet<u32>> = HashMap::new();
    for e in &after.events {
        let o = old[&(e.saddr, e.sport)];
        seen.entry(o).or_default().insert(e.listener);
    }
    let allowed: [&[u32]; 4] = [&[0], &[0, 3], &[2, 3], &[2]];
    for (o, news) in &seen {
        assert!(
            news.iter().all(|n| allowed[*o as usize].contains(n)),
            "{proto}: old {o} went to {news:?}"
        );
    }
    assert_eq!(
        seen.len(),
        4,
        "{proto}: every old listener got flows: {seen:?}"
    );
    assert_eq!(before.counts.events, 400);
    assert_eq!(after.counts.events, 400);
}

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "record needs Linux")]
fn e4_closing_listener_1_of_4_moves_tcp_flows_as_measured() {
    e4("tcp");
}

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "record needs Linux")]
fn e4_closing_listener_1_of_4_moves_udp_flows_as_measured() {
    e4("udp");
}

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "record needs Linux")]
fn a_reader_of_standard_error_that_goes_away_does_not_end_the_recording() {
    // `record … 2>&1 >/dev/null | head -1`: the progress lines' reader reads
    // one line and closes its end; the recording must still finish and write
    // its whole trace (a panic on the broken pipe used to exit 101 with a
    // 0-byte trace).
    let dir = std::env::temp_dir().join(format!("rl-epipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("trace.json");
    let mut child = Command::new(BIN)
        .args([
            "record",
            "--proto",
            "tcp",
            "--listeners",
            "4",
            "--count",
            "1500",
            "--duration",
            "20",
            "--output",
        ])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::BufRead;
        let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut first = String::new();
        err.read_line(&mut first).unwrap();
        // Dropping the reader closes the pipe's only read end.
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "record ended with {status}");
    let text = std::fs::read_to_string(&out).unwrap();
    let t = Trace::parse(&text, "trace.json").unwrap();
    assert_eq!(t.counts.recorded, Some(1500));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts `record` with `args`, stdout discarded, and returns it once its
/// first progress line says the traffic has started; the rest of its
/// stderr is collected on a thread.
#[cfg(target_os = "linux")]
fn started(
    args: &[&str],
    envs: &[(&str, &std::path::Path)],
) -> (std::process::Child, std::thread::JoinHandle<String>) {
    let mut cmd = Command::new(BIN);
    cmd.arg("record")
        .args(args)
        .envs(envs.iter().map(|(k, v)| (k, v.as_os_str())));
    started_as(cmd)
}

/// [`started`] for any command that ends up running `record`.
#[cfg(target_os = "linux")]
fn started_as(mut cmd: Command) -> (std::process::Child, std::thread::JoinHandle<String>) {
    use std::io::{BufRead, Read};
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    loop {
        first.clear();
        assert_ne!(err.read_line(&mut first).unwrap(), 0, "record ended early");
        if first.starts_with("record: 0/") {
            break;
        }
    }
    let rest = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    (child, rest)
}

#[cfg(target_os = "linux")]
fn signal(child: &std::process::Child, sig: i32) {
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
}

/// A scratch directory for one test.
fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[cfg(target_os = "linux")]
#[test]
fn an_existing_output_file_keeps_its_content_until_the_whole_trace_replaces_it() {
    let dir = scratch("keep-output");
    let out = dir.join("trace.json");
    std::fs::write(&out, "an earlier trace\n").unwrap();
    let out_s = out.to_str().unwrap();
    let (child, rest) = started(
        &[
            "--proto",
            "tcp",
            "--listeners",
            "4",
            "--count",
            "300",
            "--duration",
            "20",
            "--output",
            out_s,
        ],
        &[],
    );
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "an earlier trace\n",
        "the output file was emptied while recording"
    );
    let done = child.wait_with_output().unwrap();
    let stderr = rest.join().unwrap();
    assert_eq!(done.status.code(), Some(0), "{stderr}");
    let t = Trace::read(&out).unwrap();
    check(&t, 4);
    assert_eq!(t.counts.events, 300);
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "no temporary file is left: {left:?}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_failed_run_leaves_an_existing_output_file_as_it_was() {
    let dir = scratch("failed-keeps-output");
    let out = dir.join("trace.json");
    std::fs::write(&out, "an earlier trace\n").unwrap();
    let r = record_on_a_held_port(&out);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "an earlier trace\n");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        1,
        "no temporary file is left"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn every_terminating_signal_stops_the_recording_as_sigint_does() {
    let _one_at_a_time = SYSCTL.lock().unwrap_or_else(|e| e.into_inner());
    let migrate = std::fs::read_to_string(MIGRATE_REQ).ok();
    let as_root = migrate.is_some() && common::is_root();
    let dir = scratch("signals");
    for (name, sig) in [
        ("SIGHUP", libc::SIGHUP),
        ("SIGTERM", libc::SIGTERM),
        ("SIGQUIT", libc::SIGQUIT),
        ("SIGUSR1", libc::SIGUSR1),
        ("SIGALRM", libc::SIGALRM),
    ] {
        let out = dir.join(format!("{name}.json"));
        let mut args = vec![
            "--proto",
            "tcp",
            "--listeners",
            "4",
            "--count",
            "20000",
            "--duration",
            "20",
            "--output",
            out.to_str().unwrap(),
        ];
        // As root, the sysctl must come back too.
        if as_root {
            args.push("--tcp-migrate-req");
        }
        let (child, rest) = started(&args, &[]);
        std::thread::sleep(std::time::Duration::from_millis(50));
        signal(&child, sig);
        let done = child.wait_with_output().unwrap();
        let stderr = rest.join().unwrap();
        assert_eq!(
            done.status.code(),
            Some(130),
            "{name}: {:?} {stderr}",
            done.status
        );
        if let Some(m) = &migrate {
            assert_eq!(
                &std::fs::read_to_string(MIGRATE_REQ).unwrap(),
                m,
                "{name}: sysctl restored"
            );
        }
        let t = Trace::read(&out).unwrap_or_else(|e| panic!("{name}: {e}"));
        check(&t, 4);
        assert!(
            t.counts.events > 0 && t.counts.events < 20000,
            "{name}: {}",
            t.counts.events
        );
        assert_eq!(t.options["stoppedBy"], "signal", "{name}");
    }
    if !as_root {
        common::skip(
            "every_terminating_signal (the sysctl part)",
            "needs root and net.ipv4.tcp_migrate_req to check the sysctl is restored",
        );
    }
}

/// Sets the host's tcp_migrate_req for a test and puts the value found
/// back when dropped.
#[cfg(target_os = "linux")]
struct SysctlAs(String);

#[cfg(target_os = "linux")]
impl SysctlAs {
    fn set(v: &str) -> SysctlAs {
        let before = std::fs::read_to_string(MIGRATE_REQ).unwrap();
        std::fs::write(MIGRATE_REQ, format!("{v}\n")).unwrap();
        SysctlAs(before)
    }
}

#[cfg(target_os = "linux")]
impl Drop for SysctlAs {
    fn drop(&mut self) {
        let _ = std::fs::write(MIGRATE_REQ, &self.0);
    }
}

/// The host's tcp_migrate_req held for one test and set to `value`
/// (back as it was when dropped), or `None` when this machine cannot set
/// it (said as a skip).
#[cfg(target_os = "linux")]
fn migrate_req_as_root(
    test: &str,
    value: &str,
) -> Option<(SysctlAs, std::sync::MutexGuard<'static, ()>)> {
    let one_at_a_time = SYSCTL.lock().unwrap_or_else(|e| e.into_inner());
    if std::fs::metadata(MIGRATE_REQ).is_err() {
        common::skip_fact(test, &format!("no {MIGRATE_REQ} (5.14+)"));
        return None;
    }
    if !common::is_root() {
        common::skip(test, &format!("needs root to set {MIGRATE_REQ}"));
        return None;
    }
    // The sysctl (first) is put back before the lock (second) is released.
    Some((SysctlAs::set(value), one_at_a_time))
}

/// A short `record --tcp-migrate-req` run with its state file at `state`.
#[cfg(target_os = "linux")]
fn short_migrate_run(state: &std::path::Path) -> std::process::Output {
    Command::new(BIN)
        .args([
            "record",
            "--proto",
            "tcp",
            "--listeners",
            "2",
            "--tcp-migrate-req",
            "--count",
            "20",
            "--duration",
            "10",
        ])
        .env("REUSEPORT_AGENT_STATE", state)
        .output()
        .unwrap()
}

#[cfg(target_os = "linux")]
#[test]
fn after_a_sigkill_the_next_run_restores_the_value_from_before_the_killed_run() {
    let Some(_sysctl) = migrate_req_as_root("after_a_sigkill", "0") else {
        return;
    };
    let dir = scratch("sigkill");
    let state = dir.join("state");
    let killed = dir.join("killed.json");
    let mut cmd = Command::new(BIN);
    cmd.args(LONG_MIGRATE_RUN)
        .args(["--output", killed.to_str().unwrap()])
        .env("REUSEPORT_AGENT_STATE", &state);
    killed_once_started(cmd);
    assert_eq!(
        std::fs::read_to_string(MIGRATE_REQ).unwrap().trim(),
        "1",
        "SIGKILL cannot be caught: the killed run leaves its 1"
    );
    assert!(
        !killed.exists(),
        "a killed run leaves no trace under the output's name"
    );
    // The next run must put back 0, the value from before the killed run.
    let out = short_migrate_run(&state);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(MIGRATE_REQ).unwrap().trim(),
        "0",
        "{stderr}"
    );
    assert!(stderr.contains("was killed"), "{stderr}");
    let t = Trace::parse(&String::from_utf8(out.stdout).unwrap(), "stdout").unwrap();
    assert_eq!(t.options["tcpMigrateReqBefore"], "0");
    assert!(
        !state.exists(),
        "the state file goes once the value is restored"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_sysctl_already_at_1_is_warned_about_with_the_command_that_restores_it() {
    let Some(_sysctl) = migrate_req_as_root("a_sysctl_already_at_1", "1") else {
        return;
    };
    let state = scratch("already-1").join("state");
    let out = short_migrate_run(&state);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("already 1") && stderr.contains("sysctl -w net.ipv4.tcp_migrate_req=0"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(MIGRATE_REQ).unwrap().trim(), "1");
}

/// A TCP listener with SO_REUSEPORT on `addr` (port 0: a free one), as
/// another program of the same user would hold it.
#[cfg(target_os = "linux")]
fn reuseport_listener(addr: &str) -> socket2::Socket {
    use socket2::{Domain, Socket, Type};
    let at: std::net::SocketAddr = addr.parse().unwrap();
    let s = Socket::new(Domain::for_address(at), Type::STREAM, None).unwrap();
    s.set_reuse_port(true).unwrap();
    s.bind(&at.into()).unwrap();
    s.listen(128).unwrap();
    s
}

#[cfg(target_os = "linux")]
fn port_of(s: &socket2::Socket) -> String {
    s.local_addr()
        .unwrap()
        .as_socket()
        .unwrap()
        .port()
        .to_string()
}

#[cfg(target_os = "linux")]
#[test]
fn another_programs_reuseport_listener_on_the_port_refuses_the_run_naming_it() {
    // On 127.0.0.1 it joins the group and takes a share; to a wildcard
    // group it is preferred for every event to 127.0.0.1.
    for bind in ["127.0.0.1", "0.0.0.0"] {
        // The port comes from the ephemeral range, which other tests' client
        // sockets share: one of them may hold it on some address, and then
        // the wildcard bind fails for that reason instead. Such a run is
        // drawn again (a few times at most); the refusal asked about names
        // the foreign listener.
        let mut tries = 0;
        let (r, port, _other) = loop {
            let other = reuseport_listener("127.0.0.1:0");
            let port = port_of(&other);
            let r = record(&[
                "--proto",
                "tcp",
                "--bind",
                bind,
                "--listeners",
                "4",
                "--port",
                &port,
                "--count",
                "50",
                "--duration",
                "5",
            ]);
            tries += 1;
            if tries < 5 && r.stderr.contains("Address already in use") {
                continue;
            }
            break (r, port, other);
        };
        assert_eq!(r.code, 2, "{bind}: {}", r.stderr);
        assert!(
            trace(&r).is_none(),
            "{bind}: no trace that claims 4 listeners"
        );
        assert!(
            r.stderr.contains(&format!("127.0.0.1:{port}"))
                && r.stderr.contains("--allow-foreign-listeners"),
            "{bind}: {}",
            r.stderr
        );
    }
}

#[cfg(target_os = "linux")]
#[test]
fn with_allow_foreign_listeners_the_trace_names_them_and_counts_what_they_took() {
    let other = reuseport_listener("127.0.0.1:0");
    let port = port_of(&other);
    // Three of the four members are the other program's: with 8
    // connections, none reaching them has probability 4^-8 (1.5e-5).
    let _more: Vec<_> = (0..2)
        .map(|_| reuseport_listener(&format!("127.0.0.1:{port}")))
        .collect();
    let r = record(&[
        "--proto",
        "tcp",
        "--listeners",
        "1",
        "--port",
        &port,
        "--count",
        "8",
        "--duration",
        "30",
        "--allow-foreign-listeners",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let t = trace(&r).unwrap();
    check(&t, 1);
    let named = t.options["foreignListeners"].to_string();
    assert_eq!(
        named.matches(&format!("127.0.0.1:{port}")).count(),
        3,
        "{named}"
    );
    let elsewhere = t.options["deliveredElsewhere"].as_u64().unwrap();
    assert!(elsewhere > 0, "{}", r.stderr);
    assert_eq!(t.counts.lost, Some(elsewhere));
    assert!(
        r.stderr.contains("reached none of the group's sockets"),
        "{}",
        r.stderr
    );
}

/// A long `record --tcp-migrate-req` run's arguments.
#[cfg(target_os = "linux")]
const LONG_MIGRATE_RUN: &[&str] = &[
    "record",
    "--proto",
    "tcp",
    "--listeners",
    "2",
    "--tcp-migrate-req",
    "--count",
    "20000",
    "--duration",
    "20",
];

/// Runs `cmd` (a `record`) until its traffic has started, then kills it
/// with SIGKILL, which no code of it sees.
#[cfg(target_os = "linux")]
fn killed_once_started(cmd: Command) {
    let (mut child, rest) = started_as(cmd);
    signal(&child, libc::SIGKILL);
    child.wait().unwrap();
    drop(rest.join());
}

/// Why: a run's liveness was judged by `reuseport-agent` in its command
/// line, so a renamed copy of the binary holding the sysctl was taken for
/// dead, and a second run reset the sysctl under it. The state file's lock
/// is the test now.
#[cfg(target_os = "linux")]
#[test]
fn a_renamed_binary_holding_the_sysctl_refuses_a_second_run() {
    let Some(_sysctl) = migrate_req_as_root("a_renamed_binary", "0") else {
        return;
    };
    let dir = scratch("renamed");
    let state = dir.join("state");
    let copy = dir.join("renamed-copy");
    std::fs::copy(BIN, &copy).unwrap();
    let mut cmd = Command::new(&copy);
    cmd.args(LONG_MIGRATE_RUN)
        .env("REUSEPORT_AGENT_STATE", &state);
    let (child, rest) = started_as(cmd);
    let pid = child.id();
    let second = short_migrate_run(&state);
    let stderr = String::from_utf8_lossy(&second.stderr);
    signal(&child, libc::SIGINT);
    let first = child.wait_with_output().unwrap();
    let first_err = rest.join().unwrap();
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("another reuseport-agent run (pid {pid})")),
        "{stderr}"
    );
    assert_eq!(first.status.code(), Some(130), "{first_err}");
    assert_eq!(std::fs::read_to_string(MIGRATE_REQ).unwrap().trim(), "0");
    assert!(!state.exists(), "the first run removed its state file");
}

/// Why: a run that set the sysctl inside another network namespace and was
/// killed left a state file that made the next run in the host "restore"
/// that namespace's value into the host's sysctl. The file names its
/// namespace now, and only a run in the same one acts on it.
#[cfg(target_os = "linux")]
#[test]
fn a_killed_run_in_another_namespace_is_not_restored_into_the_host() {
    let Some(_sysctl) = migrate_req_as_root("a_killed_run_in_another_namespace", "0") else {
        return;
    };
    let dir = scratch("other-netns");
    let state = dir.join("state");
    // The namespace's own sysctl is 1 before its run, so its state file
    // keeps 1; the namespace dies with the killed run.
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--net",
        "sh",
        "-c",
        "ip link set lo up && echo 1 > /proc/sys/net/ipv4/tcp_migrate_req && exec \"$0\" \"$@\"",
        BIN,
    ])
    .args(LONG_MIGRATE_RUN)
    .env("REUSEPORT_AGENT_STATE", &state);
    killed_once_started(cmd);
    assert!(state.exists(), "the killed run left its state file");
    let out = short_migrate_run(&state);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(MIGRATE_REQ).unwrap().trim(),
        "0",
        "the host's value stays: {stderr}"
    );
    assert!(stderr.contains("another network namespace"), "{stderr}");
}

/// Why: the README promised that a plain `record` after a `kill -9` of a
/// `--tcp-migrate-req` run puts the sysctl back; only another
/// `--tcp-migrate-req` run (or a scenario) did.
#[cfg(target_os = "linux")]
#[test]
fn a_plain_record_after_a_sigkill_restores_the_value_from_before_the_killed_run() {
    let Some(_sysctl) = migrate_req_as_root("a_plain_record_after_a_sigkill", "0") else {
        return;
    };
    let dir = scratch("plain-after-kill");
    let state = dir.join("state");
    let mut cmd = Command::new(BIN);
    cmd.args(LONG_MIGRATE_RUN)
        .env("REUSEPORT_AGENT_STATE", &state);
    killed_once_started(cmd);
    assert_eq!(std::fs::read_to_string(MIGRATE_REQ).unwrap().trim(), "1");
    let out = Command::new(BIN)
        .args([
            "record",
            "--proto",
            "tcp",
            "--listeners",
            "2",
            "--count",
            "20",
        ])
        .env("REUSEPORT_AGENT_STATE", &state)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(MIGRATE_REQ).unwrap().trim(),
        "0",
        "{stderr}"
    );
    assert!(stderr.contains("was killed"), "{stderr}");
    assert!(
        !state.exists(),
        "the state file goes once the value is back"
    );
}
