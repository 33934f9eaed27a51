//! `reuseport-agent record` on the running kernel, over loopback: every
//! trace must validate against the schema, and the listeners it names must
//! follow the kernel's documented structure (kernel-history.md §3, §6.2,
//! §8.2, §8.6 and experiment E4 of §10). Each test drives at most 2000
//! events and is bounded by `--duration`; tests that need Linux, root or a
//! newer kernel say "skipped" and return.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, TcpListener};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use reuseport_agent::trace::Trace;

const BIN: &str = env!("CARGO_BIN_EXE_reuseport-agent");

struct Run {
    code: i32,
    trace: Option<Trace>,
    stderr: String,
}

/// Runs `record` with the trace on stdout; a trace that does not validate
/// fails the test.
fn record(args: &[&str]) -> Run {
    let out = Command::new(BIN).arg("record").args(args).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    let trace = (!stdout.is_empty()).then(|| {
        Trace::parse(&stdout, "stdout").unwrap_or_else(|e| panic!("{e}\nstderr: {stderr}"))
    });
    Run {
        code: out.status.code().expect("exited"),
        trace,
        stderr,
    }
}

/// A successful recording's trace.
fn recorded(args: &[&str]) -> Trace {
    let r = record(args);
    assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    r.trace.expect("a trace on stdout")
}

fn linux() -> bool {
    if cfg!(target_os = "linux") {
        return true;
    }
    eprintln!("skipped: record needs Linux");
    false
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
fn a_tcp_group_of_8_on_127_0_0_1_spreads_300_connections_over_every_listener() {
    if !linux() {
        return;
    }
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
fn a_closed_listener_gets_nothing_and_the_last_listener_takes_its_slot() {
    if !linux() {
        return;
    }
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
fn a_udp_wildcard_group_of_5_receives_every_datagram() {
    if !linux() {
        return;
    }
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
fn a_group_of_130_grows_past_128_and_its_late_members_receive() {
    if !linux() {
        return;
    }
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
fn incoming_cpu_sends_each_connection_to_a_listener_pinned_to_its_cpu() {
    if !linux() {
        return;
    }
    if release() < (6, 2) {
        eprintln!(
            "skipped: SO_INCOMING_CPU steers group selection from 6.2 (kernel-history.md §8.6)"
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
fn bpf_cpu_sends_each_datagram_to_the_index_of_its_cpu() {
    if !linux() {
        return;
    }
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
        eprintln!("skipped: CPU ids past 63 are not indexes of a 64-member group");
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
fn bpf_payload_mod_sends_sequence_k_to_listener_k_mod_4() {
    if !linux() {
        return;
    }
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
fn payload_mod_is_refused_for_tcp() {
    if !linux() {
        return;
    }
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
fn an_ipv6_wildcard_group_in_a_private_namespace_takes_many_fd00_clients() {
    if !linux() {
        return;
    }
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
        eprintln!(
            "skipped: needs root (and iproute2) for --netns: {}",
            r.stderr.trim()
        );
        return;
    }
    assert_eq!(r.code, 0, "{}", r.stderr);
    let t = r.trace.unwrap();
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
fn ipv4_clients_reach_a_dual_stack_ipv6_group() {
    if !linux() {
        return;
    }
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
fn tcp_migrate_req_is_set_for_the_run_and_restored_after() {
    if !linux() {
        return;
    }
    let _one_at_a_time = SYSCTL.lock().unwrap_or_else(|e| e.into_inner());
    let Ok(before) = std::fs::read_to_string(MIGRATE_REQ) else {
        eprintln!("skipped: no {MIGRATE_REQ} (5.14+)");
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
        eprintln!("skipped: needs root to set {MIGRATE_REQ}");
        return;
    }
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(MIGRATE_REQ).unwrap(), before);
    let t = r.trace.unwrap();
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
    if !linux() {
        return;
    }
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
        eprintln!("skipped: the run finished before the signal came");
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
fn impossible_options_exit_2_with_a_message() {
    if !linux() {
        return;
    }
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
        assert!(r.trace.is_none());
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn a_port_held_by_another_program_is_named_with_the_fix() {
    if !linux() {
        return;
    }
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port().to_string();
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("eaddrinuse.json");
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
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("listener 0") && r.stderr.contains("another program"),
        "{}",
        r.stderr
    );
    assert!(!out.exists(), "no trace file is left behind");
}

#[test]
fn sampling_keeps_every_tenth_event_and_counts_all() {
    if !linux() {
        return;
    }
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
fn e4_closing_listener_1_of_4_moves_tcp_flows_as_measured() {
    if linux() {
        e4("tcp");
    }
}

#[test]
fn e4_closing_listener_1_of_4_moves_udp_flows_as_measured() {
    if linux() {
        e4("udp");
    }
}

#[test]
fn a_reader_of_standard_error_that_goes_away_does_not_end_the_recording() {
    if !linux() {
        return;
    }
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
