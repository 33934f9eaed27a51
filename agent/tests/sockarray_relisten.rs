//! What a REUSEPORT_SOCKARRAY holds for a TCP listener that is shut down
//! and listens again, asked of the running kernel beside the model.
//!
//! The kernel clears the socket's entry as it leaves the group
//! (`reuseport_detach_sock` and `reuseport_stop_listen_sock` call
//! `bpf_sk_reuseport_detach`, net/core/sock_reuseport.c;
//! kernel/bpf/reuseport_array.c, 4.19+), and nothing puts it back when it
//! listens again. The model once kept the entry, so a program selecting
//! that key found the re-listened socket where the kernel finds nothing.
//!
//! Four listeners on 127.0.0.1 in a private network namespace, with the
//! hand-assembled program `tests/fixtures/ebpf/select_key_2_or_drop.json`
//! (select key 2, SK_DROP when that fails) and socket i at key i. One
//! connection in each of four phases: before, after `shutdown()` of
//! socket 2, after it listens again, and after user space puts it back at
//! key 2. The kernel's answer (accepted on socket i, or refused) and the
//! model's must agree in every phase. No answer depends on the hash.
//! Needs root for the namespace; otherwise `SKIPPED`.
//!
//! The second test asks the same of a SOCKMAP and a UDP member that
//! leaves its group as it connects (6.13+ with a specific address): the
//! map keeps the socket (only unhashing drops it from a sockmap), and
//! `sk_select_reuseport` (net/core/filter.c) answers -EINVAL for a socket
//! in no group, where the model once answered -ENOENT.

mod common;

/// Root, for the namespace and BPF; otherwise says `SKIPPED`.
fn can_run() -> bool {
    let root = common::is_root();
    if !root {
        common::skip(
            "sockarray_relisten",
            "needs root for a private network namespace and BPF",
        );
    }
    root
}

#[test]
#[cfg_attr(
    not(all(target_os = "linux", feature = "trace")),
    ignore = "loads an eBPF program with libbpf on Linux"
)]
fn a_sockmap_entry_of_a_member_that_left_on_connect_answers_einval() {
    #[cfg(all(target_os = "linux", feature = "trace"))]
    if can_run() {
        live::sockmap();
    }
}

#[test]
#[cfg_attr(
    not(all(target_os = "linux", feature = "trace")),
    ignore = "loads an eBPF program with libbpf on Linux"
)]
fn a_sockarray_entry_stays_gone_after_shutdown_and_listen_again() {
    #[cfg(all(target_os = "linux", feature = "trace"))]
    if can_run() {
        live::run();
    }
}

#[cfg(all(target_os = "linux", feature = "trace"))]
mod live {
    use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpStream};
    use std::time::{Duration, Instant};

    use reuseport_agent::cmd::verify::ebpf;
    use reuseport_model::reuseport::ebpf::{EbpfProgram, MapKey, MapValue};
    use reuseport_model::reuseport::Program;
    use reuseport_model::{GroupSpec, Keys, Proto, ReuseportGroup, Tuple};
    use socket2::{Domain, Socket, Type};

    /// Listeners in the group.
    const N: usize = 4;
    /// How long an accepted connection may take to show up on loopback.
    const WAIT: Duration = Duration::from_secs(2);

    fn program() -> EbpfProgram {
        fixture("select_key_2_or_drop.json")
    }

    fn fixture(name: &str) -> EbpfProgram {
        let path = format!(
            "{}/../tests/fixtures/ebpf/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(path).expect("the fixture is there");
        serde_json::from_str(&text).expect("the fixture is an EbpfProgram")
    }

    /// `N` SO_REUSEPORT sockets of `ty` on one port of 127.0.0.1 (the
    /// first bind picks it), and the port.
    fn bound(ty: Type) -> (Vec<Socket>, u16) {
        let one = |port: u16| {
            let s = Socket::new(Domain::IPV4, ty, None).unwrap();
            s.set_reuse_port(true).unwrap();
            s.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, port)).into())
                .unwrap();
            s
        };
        let first = one(0);
        let port = first
            .local_addr()
            .unwrap()
            .as_socket()
            .map_or(0, |a| a.port());
        let mut socks = vec![first];
        for _ in 1..N {
            socks.push(one(port));
        }
        (socks, port)
    }

    /// Which listener accepted one new connection, or `None` when the
    /// kernel refused it.
    fn connect(socks: &[Socket], port: u16) -> Option<usize> {
        let to = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        match TcpStream::connect_timeout(&to, WAIT) {
            Ok(_client) => {
                let deadline = Instant::now() + WAIT;
                while Instant::now() < deadline {
                    for (i, s) in socks.iter().enumerate() {
                        if s.accept().is_ok() {
                            return Some(i);
                        }
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                panic!("a connection was made but no listener accepted it");
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => None,
            Err(e) => panic!("connect: {e}"),
        }
    }

    /// The kernel's answers in the four phases, and the model's.
    pub fn run() {
        let (kernel, model) = std::thread::spawn(|| {
            assert!(
                reuseport_agent::calllog::private_netns(),
                "a private network namespace could not be made"
            );
            let prog = program();
            let (socks, port) = bound(Type::STREAM);
            for s in &socks {
                s.listen(16).unwrap();
                s.set_nonblocking(true).unwrap();
            }
            let (live, fills, extra) = ebpf::build(&prog, &socks).expect("the kernel loads it");

            // The model's group: the same listeners, program and maps.
            let profile = reuseport_agent::kernel::resolve("auto").expect("a profile");
            let spec = GroupSpec {
                program: Some(Program::ebpf(prog.clone(), fills.clone(), extra.clone())),
                ..GroupSpec::new(
                    Proto::Tcp,
                    N as u32,
                    Ipv4Addr::LOCALHOST.into(),
                    port,
                    Keys::default(),
                )
            };
            let mut g = ReuseportGroup::build(profile, &spec).unwrap();
            let t = Tuple::v4(
                Ipv4Addr::new(127, 0, 0, 1),
                40000,
                Ipv4Addr::LOCALHOST,
                port,
            );
            let pick = |g: &ReuseportGroup| g.select(&t, 0).unwrap().listener.map(|l| l as usize);

            let mut kernel = Vec::new();
            let mut model = Vec::new();
            kernel.push(connect(&socks, port));
            model.push(pick(&g));

            socks[2].shutdown(Shutdown::Both).unwrap();
            g.shutdown(2).unwrap();
            kernel.push(connect(&socks, port));
            model.push(pick(&g));

            socks[2].listen(16).unwrap();
            g.relisten(2).unwrap();
            kernel.push(connect(&socks, port));
            model.push(pick(&g));

            live.put_socket(0, 2, &socks[2])
                .expect("key 2 takes socket 2 again");
            let mut refilled = fills;
            refilled[0]
                .entries
                .push((MapKey::Num(2), MapValue::Socket { socket: 2 }));
            g.attach_program(Program::ebpf(prog, refilled, extra))
                .unwrap();
            kernel.push(connect(&socks, port));
            model.push(pick(&g));
            drop(live);
            (kernel, model)
        })
        .join()
        .expect("the test thread panicked");

        let release = reuseport_agent::kernel::running_release().unwrap_or_default();
        println!("{release}: kernel {kernel:?}, model {model:?}");
        assert_eq!(model, kernel, "the model against {release}");
    }

    /// Four UDP members on 127.0.0.1, the SOCKMAP program
    /// (`sockmap_key_2_pass_on_einval.json`: SK_PASS only on -EINVAL);
    /// one datagram from another client before and after member 2
    /// connects to 127.0.0.1:9. Delivered (to whichever member the hash
    /// picks) or dropped, on the kernel and in the model.
    pub fn sockmap() {
        use reuseport_agent::calllog::source;
        use std::net::{IpAddr, UdpSocket};

        let profile = reuseport_agent::kernel::resolve("auto").expect("a profile");
        let release = reuseport_agent::kernel::running_release().unwrap_or_default();
        if !profile.lookup.udp_connect_leaves_group {
            println!(
                "SKIPPED sockarray_relisten: on {release} a connected member stays in its group"
            );
            return;
        }
        let (kernel, model) = std::thread::spawn(move || {
            assert!(
                reuseport_agent::calllog::private_netns(),
                "a private network namespace could not be made"
            );
            let prog = fixture("sockmap_key_2_pass_on_einval.json");
            let (socks, port) = bound(Type::DGRAM);
            for s in &socks {
                s.set_nonblocking(true).unwrap();
            }
            let (live, fills, extra) = ebpf::build(&prog, &socks).expect("the kernel loads it");
            let spec = GroupSpec {
                program: Some(Program::ebpf(prog, fills, extra)),
                ..GroupSpec::new(
                    Proto::Udp,
                    N as u32,
                    Ipv4Addr::LOCALHOST.into(),
                    port,
                    Keys::default(),
                )
            };
            let mut g = ReuseportGroup::build(profile, &spec).unwrap();
            let to = IpAddr::V4(Ipv4Addr::LOCALHOST);
            let mut kernel = Vec::new();
            let mut model = Vec::new();
            for (phase, k) in [(0, 1), (1, 2)] {
                if phase == 1 {
                    socks[2]
                        .connect(&SocketAddr::from((Ipv4Addr::LOCALHOST, 9)).into())
                        .unwrap();
                    g.connect(2).unwrap();
                }
                let from = source(to, k);
                let client = UdpSocket::bind((from, 0)).unwrap();
                let sport = client.local_addr().unwrap().port();
                client.send_to(b"x", (to, port)).unwrap();
                let deadline = Instant::now() + WAIT;
                let mut got = false;
                while !got && Instant::now() < deadline {
                    got = socks
                        .iter()
                        .any(|s| s.recv(&mut [std::mem::MaybeUninit::new(0); 16]).is_ok());
                    std::thread::sleep(Duration::from_millis(1));
                }
                kernel.push(got);
                let t = Tuple {
                    saddr: from,
                    sport,
                    daddr: to,
                    dport: port,
                };
                model.push(g.select(&t, 0).unwrap().listener.is_some());
            }
            drop(live);
            (kernel, model)
        })
        .join()
        .expect("the test thread panicked");
        println!("{release}: delivered, kernel {kernel:?}, model {model:?}");
        assert_eq!(model, kernel, "the model against {release}");
    }
}
