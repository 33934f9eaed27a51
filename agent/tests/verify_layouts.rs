//! `verify --layouts N`: the differential test of the lookup and bind rules
//! (agent/src/cmd/verify/calldraw.rs): its argument, its shrinker, and one short run on
//! the running kernel.

use std::process::Command;

use reuseport_agent::cmd::verify::calldraw::{self, Layouts};
use reuseport_agent::cmd::verify::differential::{shrink, Rng};
use reuseport_agent::cmd::verify::{layouts_arg, recording, LayoutName, LayoutsArg};
use reuseport_model::lookup::{Call, CallLog, SockOpt};

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

/// A layout of the profile's own drawing.
fn layout(rng: &mut Rng, port: u16) -> CallLog {
    calldraw::draw(rng, port, &calldraw::LAYOUTS, true, true)
}

#[test]
fn the_same_seed_draws_the_same_layouts_and_another_seed_others() {
    let a: Vec<_> = (0..20)
        .scan(Rng::new(5), |r, _| Some(layout(r, 9000)))
        .collect();
    let b: Vec<_> = (0..20)
        .scan(Rng::new(5), |r, _| Some(layout(r, 9000)))
        .collect();
    let c: Vec<_> = (0..20)
        .scan(Rng::new(6), |r, _| Some(layout(r, 9000)))
        .collect();
    assert_eq!(a, b);
    assert_ne!(a, c);
    for l in &a {
        assert!((2..=7).contains(&calldraw::sockets_in(l)));
        assert!(l.calls.iter().all(|c| match c {
            Call::Bind { port, .. } => *port == 9000,
            _ => true,
        }));
    }
}

/// Per fd, the index of its `socket` call (fd `k` is the `k`th made).
fn made_at(log: &CallLog) -> Vec<usize> {
    (log.calls.iter().enumerate())
        .filter(|(_, c)| matches!(c, Call::Socket { .. }))
        .map(|(i, _)| i)
        .collect()
}

/// The layout profile draws only what the socket-list form of a layout
/// file says, in the order that form implies (`CallLog::from_layout`):
/// per socket in fd order its `socket`, its options, its `bind` and then
/// at once its `connect` (connected UDP) or `connect`, SO_LINGER 1 and
/// `close` (TIME_WAIT); then the listens; then closes. So no option after
/// a bind, no listen before the last bind, no shutdown and no reset.
#[test]
fn the_layout_profile_draws_only_what_a_layout_says_in_its_order() {
    let mut rng = Rng::new(9);
    for log in (0..400).map(|_| layout(&mut rng, 9000)) {
        let c = &log.calls;
        let at = made_at(&log);
        let last_bind = c.iter().rposition(|x| matches!(x, Call::Bind { .. }));
        let first_listen = c.iter().position(|x| matches!(x, Call::Listen { .. }));
        if let (Some(b), Some(l)) = (last_bind, first_listen) {
            assert!(
                b < l,
                "a listen before the last bind: {}",
                calldraw::compact(&log)
            );
        }
        for (fd, &start) in at.iter().enumerate() {
            // The socket's calls up to its bind are its own and in order.
            let end = at.get(fd + 1).copied().unwrap_or(c.len());
            let own = &c[start..end];
            let bind = own
                .iter()
                .position(|x| matches!(x, Call::Bind { .. }))
                .expect("every socket binds right after its options");
            assert!(own[1..bind]
                .iter()
                .all(|x| matches!(x, Call::Setsockopt { fd: f, .. } if *f == fd)));
            assert!(matches!(own[bind], Call::Bind { fd: f, .. } if f == fd));
            match &own[bind + 1..] {
                [] => {}
                [Call::Connect { fd: f, .. }] if *f == fd => {}
                [Call::Connect { fd: a, .. }, Call::Setsockopt {
                    fd: b,
                    opt: SockOpt::Linger(Some(1)),
                }, Call::Close { fd: d }]
                    if *a == fd && *b == fd && *d == fd => {}
                // The last socket's calls run on into the listens and closes.
                rest if fd + 1 == at.len() => assert!(
                    rest.iter().all(|x| matches!(
                        x,
                        Call::Listen { .. }
                            | Call::Close { .. }
                            | Call::Connect { .. }
                            | Call::Setsockopt {
                                opt: SockOpt::Linger(Some(1)),
                                ..
                            }
                    )),
                    "{}",
                    calldraw::compact(&log)
                ),
                rest => panic!("socket {fd} then {rest:?}: {}", calldraw::compact(&log)),
            }
        }
        assert!(!c.iter().any(|x| matches!(
            x,
            Call::Shutdown { .. }
                | Call::Setsockopt {
                    opt: SockOpt::Linger(Some(0)),
                    ..
                }
        )));
    }
}

/// The draws reach TIME_WAIT, connected UDP and SO_INCOMING_CPU, each only
/// where the model can replay it (TIME_WAIT and connect() on a specific
/// address), and the printed layout keeps SO_INCOMING_CPU 0, which is not
/// a default.
#[test]
fn draws_reach_time_wait_connected_udp_and_incoming_cpu_where_the_model_replays_them() {
    use reuseport_model::lookup::Host;
    let profile = reuseport_model::Profile::for_release("6.18").unwrap();
    let mut rng = Rng::new(9);
    let drawn: Vec<_> = (0..400).map(|_| layout(&mut rng, 9000)).collect();
    let calls = || drawn.iter().flat_map(|l| l.calls.iter());
    let time_wait = calls()
        .filter(|c| {
            matches!(
                c,
                Call::Setsockopt {
                    opt: SockOpt::Linger(Some(1)),
                    ..
                }
            )
        })
        .count();
    let connects = calls()
        .filter(|c| matches!(c, Call::Connect { .. }))
        .count();
    let cpu = |n| {
        calls()
            .filter(
                |c| matches!(c, Call::Setsockopt { opt: SockOpt::IncomingCpu(k), .. } if *k == n),
            )
            .count()
    };
    let connected = connects - time_wait;
    assert!(time_wait > 20 && connected > 20, "{time_wait} {connected}");
    assert!(cpu(0) > 20 && cpu(1) > 20, "{} {}", cpu(0), cpu(1));
    for l in &drawn {
        assert!(Host::run(profile, l).is_ok(), "{}", calldraw::compact(l));
        for c in &l.calls {
            if let Call::Connect { fd, .. } = c {
                let bound = l.calls.iter().find_map(|b| match b {
                    Call::Bind { fd: f, addr, .. } if f == fd => Some(*addr),
                    _ => None,
                });
                let addr = bound.unwrap();
                assert!(!addr.is_unspecified() && addr.to_string() != "::ffff:0.0.0.0");
            }
        }
    }
    let with_cpu0 = drawn
        .iter()
        .find(|l| {
            l.calls.iter().any(|c| {
                matches!(
                    c,
                    Call::Setsockopt {
                        opt: SockOpt::IncomingCpu(0),
                        ..
                    }
                )
            })
        })
        .unwrap();
    let back: CallLog = serde_json::from_str(&calldraw::compact(with_cpu0)).unwrap();
    assert_eq!(&back, with_cpu0);
}

#[test]
fn shrink_keeps_only_the_sockets_the_disagreement_needs_and_renumbers_listens() {
    let mut rng = Rng::new(3);
    let listens = |l: &CallLog| -> Vec<usize> {
        l.calls
            .iter()
            .filter_map(|c| match c {
                Call::Listen { fd } => Some(*fd),
                _ => None,
            })
            .collect()
    };
    let marker = Call::Setsockopt {
        fd: 0,
        opt: SockOpt::Bindtodevice(Some("marker".into())),
    };
    // A TCP layout with at least four listening sockets, none marked.
    let log = std::iter::repeat_with(|| layout(&mut rng, 8080))
        .find(|l| listens(l).len() >= 4)
        .unwrap();
    let o = listens(&log);
    // The "disagreement" needs the listeners at the 2nd and 4th place of the
    // drawn listen order, and nothing else: each carries a marker option.
    let (x, y) = (o[1], o[3]);
    let mut marked = log.clone();
    for fd in [x, y] {
        let at = made_at(&marked)[fd];
        let mut m = marker.clone();
        if let Call::Setsockopt { fd: f, .. } = &mut m {
            *f = fd;
        }
        marked.calls.insert(at + 1, m);
    }
    let is_marker = |c: &Call| matches!(c, Call::Setsockopt { opt: SockOpt::Bindtodevice(Some(d)), .. } if d == "marker");
    let small = shrink::<Layouts>(&marked, |l| {
        l.calls.iter().filter(|c| is_marker(c)).count() == 2 && listens(l).len() >= 2
    });
    assert_eq!(calldraw::sockets_in(&small), 2);
    // The two sockets' own calls, in the order drawn, renumbered 0 and 1.
    let renumber = |fd: usize| usize::from(fd == x.max(y));
    let want: Vec<Call> = marked
        .calls
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let fd = match c.fd() {
                Some(fd) => fd,
                None => made_at(&marked).iter().position(|&k| k == i)?,
            };
            if fd != x && fd != y {
                return None;
            }
            let mut c = c.clone();
            match &mut c {
                Call::Setsockopt { fd, .. }
                | Call::Bind { fd, .. }
                | Call::Listen { fd }
                | Call::Connect { fd, .. }
                | Call::Shutdown { fd }
                | Call::Close { fd } => *fd = renumber(*fd),
                Call::Socket { .. } => {}
            }
            Some(c)
        })
        .collect();
    assert_eq!(small.calls, want);
    let want = if x < y { vec![0, 1] } else { vec![1, 0] };
    assert_eq!(listens(&small), want);
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
            .map(|_| calldraw::draw(&mut rng, 9000, &calldraw::CALL_LOGS, true, true))
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
    let small = shrink::<calldraw::CallLogs>(&log, |l| {
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
            calldraw::draw(&mut rng, l.port, &calldraw::CALL_LOGS, l.pinned, l.two_uids)
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

/// The layout profile's guest file, like the call logs', carries the
/// answers without the layouts: the host draws them again from the seed
/// with the layout profile. A line whose answer was altered is a
/// disagreement naming the call, and a missing line is named.
#[cfg(target_os = "linux")]
#[test]
fn layout_kernel_answers_are_checked_against_the_layouts_drawn_again_from_the_seed() {
    use reuseport_agent::cmd::verify::calldraw::CallsLine;
    use reuseport_agent::cmd::verify::differential::check_kernel_answers;
    let text = guest_file(&[]);
    let profile = reuseport_agent::kernel::resolve("auto").unwrap();
    let a = check_kernel_answers::<Layouts>(profile, &text, 4, 6).unwrap();
    assert_eq!((a.layouts, a.agreed), (6, 6), "{:?}", a.disagreements);
    assert_eq!(a.lookups, 18, "three destinations each");
    let mut lines: Vec<CallsLine> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut rng = Rng::new(4);
    let redrawn: Vec<CallLog> = lines
        .iter()
        .map(|l| calldraw::draw(&mut rng, l.port, &calldraw::LAYOUTS, l.pinned, l.two_uids))
        .collect();
    let calls: usize = redrawn.iter().map(|l| l.calls.len()).sum();
    assert_eq!(a.calls, calls as u64, "every call of the redrawn layouts");
    // The first socket's bind() said EADDRINUSE instead.
    let bind = redrawn[0]
        .calls
        .iter()
        .position(|c| matches!(c, Call::Bind { fd: 0, .. }))
        .unwrap();
    assert_eq!(lines[0].answers.calls[bind], None);
    lines[0].answers.calls[bind] = Some(98);
    let altered: String = lines
        .iter()
        .map(|l| serde_json::to_string(l).unwrap() + "\n")
        .collect();
    let b = check_kernel_answers::<Layouts>(profile, &altered, 4, 6).unwrap();
    assert_eq!(b.agreed, 5);
    assert_eq!(b.calls_agreed, a.calls_agreed - 1);
    assert!(
        b.disagreements[0].contains(&format!("call {bind} {{\"call\":\"bind\",\"fd\":0,"))
            && b.disagreements[0].contains("kernel EADDRINUSE, model ok"),
        "{:?}",
        b.disagreements
    );
    // A seed other than the guest's draws other layouts: the check says so.
    assert!(check_kernel_answers::<Layouts>(profile, &text, 5, 6)
        .map_or(true, |o| o.calls != a.calls || o.agreed != a.agreed));
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
