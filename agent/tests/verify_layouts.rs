//! `verify --layouts N`: the differential test of the lookup and bind rules
//! (agent/src/cmd/verify/layouts.rs): its argument, its shrinker, and one short run on
//! the running kernel.

use std::net::IpAddr;
use std::process::Command;

use reuseport_agent::cmd::verify::differential::Rng;
use reuseport_agent::cmd::verify::layouts;
use reuseport_agent::cmd::verify::{layouts_arg, recording, LayoutName, LayoutsArg};

const BIN: &str = env!("CARGO_BIN_EXE_reuseport-agent");

#[test]
fn layouts_takes_a_count_or_curated_names() {
    assert_eq!(layouts_arg("60"), Ok(LayoutsArg::Random(60)));
    assert_eq!(
        layouts_arg("udp,closed"),
        Ok(LayoutsArg::Named(vec![LayoutName::Udp, LayoutName::Closed]))
    );
    let zero = layouts_arg("0").unwrap_err();
    assert!(zero.contains("1 to 100000"), "{zero}");
    let bad = layouts_arg("udp,banana").unwrap_err();
    assert!(
        bad.contains("'banana'") && bad.contains("tcp-specific"),
        "{bad}"
    );
}

#[test]
fn the_same_seed_draws_the_same_layouts_and_another_seed_others() {
    let a: Vec<_> = (0..20)
        .scan(Rng::new(5), |r, _| Some(layouts::draw(r, 9000)))
        .collect();
    let b: Vec<_> = (0..20)
        .scan(Rng::new(5), |r, _| Some(layouts::draw(r, 9000)))
        .collect();
    let c: Vec<_> = (0..20)
        .scan(Rng::new(6), |r, _| Some(layouts::draw(r, 9000)))
        .collect();
    assert_eq!(a, b);
    assert_ne!(a, c);
    for l in &a {
        assert!((2..=7).contains(&l.sockets.len()));
        assert!(l.sockets.iter().all(|s| s.port == 9000));
    }
}

/// The draws reach TIME_WAIT, connected UDP and SO_INCOMING_CPU, each only
/// where the model can replay it (TIME_WAIT and connect() on a specific
/// address, a TIME_WAIT socket never in `closed`), and the printed layout
/// keeps SO_INCOMING_CPU 0, which is not a default.
#[test]
fn draws_reach_time_wait_connected_udp_and_incoming_cpu_where_the_model_replays_them() {
    use reuseport_model::lookup::{CallLog, Host, SockState};
    let profile = reuseport_model::Profile::for_release("6.18").unwrap();
    let mut rng = Rng::new(9);
    let drawn: Vec<_> = (0..400).map(|_| layouts::draw(&mut rng, 9000)).collect();
    let socks = || drawn.iter().flat_map(|l| l.sockets.iter());
    let time_wait = socks().filter(|s| s.state == SockState::TimeWait).count();
    let connected = socks().filter(|s| s.state == SockState::Connected).count();
    let cpu0 = socks().filter(|s| s.incoming_cpu == Some(0)).count();
    let cpu1 = socks().filter(|s| s.incoming_cpu == Some(1)).count();
    assert!(time_wait > 20 && connected > 20, "{time_wait} {connected}");
    assert!(cpu0 > 20 && cpu1 > 20, "{cpu0} {cpu1}");
    for l in &drawn {
        let log = CallLog::from_layout(l);
        assert!(
            log.is_ok_and(|log| Host::run(profile, &log).is_ok()),
            "{}",
            layouts::compact(l)
        );
        for (i, s) in l.sockets.iter().enumerate() {
            if matches!(s.state, SockState::TimeWait | SockState::Connected) {
                assert!(!s.addr.is_unspecified() && s.addr.to_string() != "::ffff:0.0.0.0");
            }
            if s.state == SockState::TimeWait {
                assert!(!l.closed.contains(&i));
            }
            assert_eq!(s.state == SockState::Connected, s.peer.is_some());
        }
    }
    let with_cpu0 = drawn
        .iter()
        .find(|l| {
            l.sockets.iter().any(|s| s.incoming_cpu == Some(0))
                && l.listen_order.as_ref().is_none_or(|o| !o.is_empty())
        })
        .unwrap();
    let mut back: reuseport_model::lookup::Layout =
        serde_json::from_str(&layouts::compact(with_cpu0)).unwrap();
    back.keys = with_cpu0.keys;
    assert_eq!(&back, with_cpu0);
}

#[test]
fn shrink_keeps_only_the_sockets_the_disagreement_needs_and_renumbers_listens() {
    let mut rng = Rng::new(3);
    // A TCP layout with at least four listening sockets.
    let layout = std::iter::repeat_with(|| layouts::draw(&mut rng, 8080))
        .find(|l| {
            l.listen_order.as_ref().is_some_and(|o| o.len() >= 4)
                && l.sockets
                    .iter()
                    .filter(|s| s.addr == "127.0.0.1".parse::<IpAddr>().unwrap())
                    .count()
                    == 0
        })
        .unwrap();
    let o = layout.listen_order.clone().unwrap();
    // The "disagreement" needs the listeners at the 2nd and 4th place of the
    // drawn listen order, and nothing else.
    let (x, y) = (o[1], o[3]);
    let mut marked = layout.clone();
    marked.sockets[x].addr = "127.0.0.1".parse().unwrap();
    marked.sockets[x].family = reuseport_model::lookup::Family::Inet;
    marked.sockets[y].device = Some("marker".into());
    let small = layouts::shrink(&marked, |l| {
        l.sockets
            .iter()
            .any(|s| s.addr == "127.0.0.1".parse::<IpAddr>().unwrap())
            && l.sockets
                .iter()
                .any(|s| s.device.as_deref() == Some("marker"))
    });
    assert_eq!(small.sockets.len(), 2);
    assert_eq!(
        small.sockets[..],
        [
            marked.sockets[x.min(y)].clone(),
            marked.sockets[x.max(y)].clone()
        ]
    );
    let want = if x < y { vec![0, 1] } else { vec![1, 0] };
    assert_eq!(small.listen_order, Some(want));
}

#[cfg(target_os = "linux")]
#[test]
fn a_short_run_on_this_kernel_reports_every_count_and_exits_by_agreement() {
    let out = Command::new(BIN)
        .args(["verify", "--layouts", "8", "--seed", "7", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("seed 7"), "the seed is printed: {stderr}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(r["seed"], 7);
    assert_eq!(r["layouts"], 8);
    assert!(r["calls"].as_u64().unwrap() >= 16, "every socket binds");
    assert!(
        r["lookups"].as_u64().unwrap() == 24,
        "three destinations each"
    );
    assert!(r["probes"].as_u64().unwrap() >= 48);
    let disagreements = r["disagreements"].as_array().unwrap();
    let want = if disagreements.is_empty() { 0 } else { 1 };
    assert_eq!(out.status.code(), Some(want), "{r}");
    for d in disagreements {
        assert!(!d["differences"].as_array().unwrap().is_empty());
    }
}

#[test]
fn a_count_out_of_bounds_is_refused_naming_the_option() {
    let out = Command::new(BIN)
        .args(["verify", "--layouts", "100001"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--layouts"), "{stderr}");
}

#[test]
fn events_needed_grows_as_the_group_shrinks() {
    use reuseport_agent::cmd::verify::events_needed;
    // 2^32 keys, each event keeps 1/n of them: n^T > 100 * 2^32.
    assert_eq!(events_needed(8), 13);
    assert_eq!(events_needed(2), 39);
    assert_eq!(events_needed(130), 6);
    assert_eq!(events_needed(1), 0);
}

/// The curated wildcard layouts would listen on every address of the host:
/// as root, verify records them in a private network namespace (where the
/// key differs from the host's: the namespace has its own `net_hash_mix`).
#[test]
fn wildcard_layouts_are_recorded_in_a_private_network_namespace_when_root() {
    for name in [LayoutName::TcpWildcard, LayoutName::UdpWildcard] {
        assert!(recording(name, 300, 1, true).netns, "{}", name.name());
        assert!(!recording(name, 300, 1, false).netns, "{}", name.name());
    }
    for name in [
        LayoutName::TcpSpecific,
        LayoutName::Udp,
        LayoutName::Closed,
        LayoutName::Large,
    ] {
        assert!(!recording(name, 300, 1, true).netns, "{}", name.name());
    }
}

/// `--call-logs` draws what only a call log can say (an option set after
/// bind, binds in another order than the sockets were made, a listener shut
/// down and listening again, a close between other sockets' binds) besides
/// TIME_WAIT, a reset and connected UDP; a TCP socket closing right after
/// its connect() sets SO_LINGER first (without it, what the next bind meets
/// depends on when the peer's ACK comes); the same seed draws the same
/// logs, and the model replays every one of them.
#[test]
fn call_log_draws_reach_what_only_calls_say_and_the_model_replays_them() {
    use reuseport_agent::cmd::verify::calldraw;
    use reuseport_model::lookup::{Call, Host, SockOpt};
    let profile = reuseport_model::Profile::for_release("6.18").unwrap();
    let draw = |seed| -> Vec<_> {
        let mut rng = Rng::new(seed);
        (0..400)
            .map(|_| calldraw::draw(&mut rng, 9000, true, true))
            .collect()
    };
    let drawn = draw(5);
    assert_eq!(drawn, draw(5));
    assert_ne!(drawn, draw(6));
    let (mut late_opt, mut reordered, mut relisten, mut close_between) = (0, 0, 0, 0);
    let (mut time_wait, mut reset, mut connected_udp) = (0, 0, 0);
    for log in &drawn {
        assert!(
            Host::run(profile, log).is_ok(),
            "{}",
            calldraw::compact(log)
        );
        let c = &log.calls;
        let bind_at = |fd: usize| {
            c.iter()
                .position(|x| matches!(x, Call::Bind { fd: f, .. } if *f == fd))
        };
        let binds: Vec<usize> = c
            .iter()
            .filter_map(|x| match x {
                Call::Bind { fd, .. } => Some(*fd),
                _ => None,
            })
            .collect();
        assert!(binds
            .iter()
            .all(|&fd| calldraw::port_of(log) == 9000 && bind_at(fd).is_some()));
        reordered += usize::from(binds.windows(2).any(|w| w[0] > w[1]));
        let tcp = matches!(
            c[0],
            Call::Socket {
                proto: reuseport_model::Proto::Tcp,
                ..
            }
        );
        for (i, x) in c.iter().enumerate() {
            match x {
                Call::Setsockopt {
                    fd,
                    opt: SockOpt::Reuseport(_) | SockOpt::Reuseaddr(_),
                } if bind_at(*fd).is_some_and(|b| b < i) => late_opt += 1,
                Call::Shutdown { fd }
                    if c[i + 1..]
                        .iter()
                        .any(|y| matches!(y, Call::Listen { fd: f } if f == fd)) =>
                {
                    relisten += 1
                }
                Call::Close { fd } => {
                    // A TCP socket closes right after connect() only with
                    // SO_LINGER set, so the close is definite.
                    let after_connect =
                        i > 1 && matches!(c[i - 2], Call::Connect { fd: f, .. } if f == *fd);
                    match &c[i - 1] {
                        Call::Setsockopt {
                            fd: f,
                            opt: SockOpt::Linger(Some(n)),
                        } if f == fd && after_connect => {
                            if *n > 0 {
                                time_wait += 1;
                            } else {
                                reset += 1;
                            }
                        }
                        Call::Connect { fd: f, .. } if tcp => {
                            panic!("fd {f} closes right after connect() without SO_LINGER")
                        }
                        _ if c[i + 1..].iter().any(|y| matches!(y, Call::Bind { .. })) => {
                            close_between += 1
                        }
                        _ => {}
                    }
                }
                Call::Connect { .. }
                    if !matches!(
                        c.get(i + 1),
                        Some(Call::Setsockopt {
                            opt: SockOpt::Linger(_),
                            ..
                        })
                    ) =>
                {
                    connected_udp += 1
                }
                _ => {}
            }
        }
    }
    for (what, n) in [
        ("options after bind", late_opt),
        ("binds out of socket order", reordered),
        ("shutdown then listen", relisten),
        ("closes between binds", close_between),
        ("TIME_WAIT", time_wait),
        ("reset", reset),
        ("connected UDP", connected_udp),
    ] {
        assert!(n >= 10, "{what}: {n} in 400 logs");
    }
}

#[test]
fn call_log_shrink_drops_sockets_and_calls_and_renumbers_fds() {
    use reuseport_agent::cmd::verify::calldraw;
    use reuseport_model::lookup::{Call, CallLog, Family, SockOpt};
    use reuseport_model::Proto;
    let sock = || Call::Socket {
        family: Family::Inet,
        proto: Proto::Tcp,
        uid: 0,
    };
    let bind = |fd| Call::Bind {
        fd,
        addr: "127.0.0.1".parse().unwrap(),
        port: 8080,
    };
    let log = CallLog {
        calls: vec![
            sock(),
            sock(),
            sock(),
            Call::Setsockopt {
                fd: 2,
                opt: SockOpt::Reuseport(true),
            },
            bind(0),
            bind(2),
            bind(1),
            Call::Listen { fd: 2 },
            Call::Listen { fd: 0 },
        ],
        ..CallLog::default()
    };
    // The "disagreement" needs a listen on a socket with SO_REUSEPORT.
    let small = calldraw::shrink(&log, |l| {
        l.calls.iter().any(|c| {
            match c {
            Call::Listen { fd } => l.calls.iter().any(|o| {
                matches!(o, Call::Setsockopt { fd: f, opt: SockOpt::Reuseport(true) } if f == fd)
            }),
            _ => false,
        }
        })
    });
    assert_eq!(
        small.calls,
        vec![
            sock(),
            Call::Setsockopt {
                fd: 0,
                opt: SockOpt::Reuseport(true)
            },
            Call::Listen { fd: 0 },
        ]
    );
    // What is printed reads back as the same call log.
    let back: CallLog = serde_json::from_str(&calldraw::compact(&small)).unwrap();
    assert_eq!(back, small);
}

/// Inside a `verify --kernels` guest the call logs' answers are written
/// without the logs; the host draws them again from the seed and compares
/// every call (as root: the logs run in a private network namespace).
#[cfg(target_os = "linux")]
#[test]
fn call_log_kernel_answers_are_checked_against_the_logs_drawn_again_from_the_seed() {
    use reuseport_agent::cmd::verify::calldraw;
    use reuseport_agent::cmd::verify::differential::check_kernel_answers;
    let text = guest_file(&["--call-logs"]);
    // The guest here is this machine: its answers are this kernel's.
    let profile = reuseport_agent::kernel::resolve("auto").unwrap();
    let a = check_kernel_answers::<calldraw::CallLogs>(profile, &text, 4, 6).unwrap();
    assert_eq!(a.layouts, 6);
    let lines: Vec<calldraw::CallsLine> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut rng = Rng::new(4);
    let calls: usize = lines
        .iter()
        .map(|l| {
            calldraw::draw(&mut rng, l.port, l.pinned, l.two_uids)
                .calls
                .len()
        })
        .sum();
    assert_eq!(
        a.calls, calls as u64,
        "every call of the redrawn logs is compared"
    );
    assert_eq!(a.lookups, 18, "three destinations each");
    // A seed other than the guest's draws other logs: the check says so.
    assert!(
        check_kernel_answers::<calldraw::CallLogs>(profile, &text, 5, 6)
            .map_or(true, |b| b.calls != a.calls
                || b.agreed != a.agreed
                || b.disagreements != a.disagreements)
    );
}

/// The layout draw's guest file carries each layout, so the host checks it
/// without drawing again: a seed other than the guest's changes nothing,
/// and a line whose answer was altered is a disagreement naming the call.
#[cfg(target_os = "linux")]
#[test]
fn layout_kernel_answers_carry_their_layouts_and_are_checked_on_the_host() {
    use reuseport_agent::cmd::verify::differential::check_kernel_answers;
    use reuseport_agent::cmd::verify::layouts::{KernelLine, Layouts};
    let text = guest_file(&[]);
    let profile = reuseport_agent::kernel::resolve("auto").unwrap();
    let a = check_kernel_answers::<Layouts>(profile, &text, 4, 6).unwrap();
    assert_eq!((a.layouts, a.agreed), (6, 6), "{:?}", a.disagreements);
    assert_eq!(a.lookups, 18, "three destinations each");
    let other = check_kernel_answers::<Layouts>(profile, &text, 99, 6).unwrap();
    assert_eq!((other.agreed, other.calls), (6, a.calls));
    // The first socket's bind() said EADDRINUSE instead.
    let mut lines: Vec<KernelLine> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines[0].bind[0] = 98;
    let altered: String = lines
        .iter()
        .map(|l| serde_json::to_string(l).unwrap() + "\n")
        .collect();
    let b = check_kernel_answers::<Layouts>(profile, &altered, 4, 6).unwrap();
    assert_eq!(b.agreed, 5);
    assert_eq!(b.calls_agreed, a.calls_agreed - 1);
    assert!(
        b.disagreements[0].contains("socket 0 bind(): kernel EADDRINUSE, model ok"),
        "{:?}",
        b.disagreements
    );
    assert!(check_kernel_answers::<Layouts>(profile, &text, 4, 7)
        .unwrap_err()
        .contains("6 of 7 layouts"));
}

/// What `verify --layouts 6 --seed 4 --kernel-answers --output FILE`
/// (with `extra`) writes, as a `verify --kernels` guest would.
#[cfg(target_os = "linux")]
fn guest_file(extra: &[&str]) -> String {
    let dir =
        std::env::temp_dir().join(format!("guest-file-{}-{}", std::process::id(), extra.len()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("answers.jsonl");
    let out = Command::new(BIN)
        .args(["verify", "--layouts", "6", "--seed", "4"])
        .args(extra)
        .args(["--kernel-answers", "--output"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    text
}
