//! A call log ([`reuseport_model::lookup::CallLog`]) replayed on the running
//! kernel: each call made as written, each answer kept as its errno, and
//! probes over loopback that say which socket receives.
//!
//! This is the kernel side of `verify --layouts` and of the tests that pin
//! the model's call-log answers to the kernel's.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reuseport_model::lookup::{Call, CallLog, Family, SockOpt};
use reuseport_model::message::Errno;
use reuseport_model::Proto;

/// A call's answer: `None` on success, else the errno number.
pub type Answer = Option<i32>;

/// The errno number of a model errno.
pub fn errno_number(e: &Errno) -> i32 {
    match e {
        Errno::Eaddrinuse => libc::EADDRINUSE,
        Errno::Einval => libc::EINVAL,
        Errno::Enomem => libc::ENOMEM,
        Errno::Ebadf => libc::EBADF,
        Errno::Eopnotsupp => libc::EOPNOTSUPP,
        Errno::Enoprotoopt => libc::ENOPROTOOPT,
        Errno::Eisconn => libc::EISCONN,
        Errno::Enotconn => libc::ENOTCONN,
        Errno::Enetunreach => libc::ENETUNREACH,
        Errno::Enodev => libc::ENODEV,
    }
}

/// An answer's name: `ok`, `EADDRINUSE`, ...
pub fn errno_name(e: Answer) -> String {
    let known = [
        (libc::EADDRINUSE, "EADDRINUSE"),
        (libc::EINVAL, "EINVAL"),
        (libc::ENOMEM, "ENOMEM"),
        (libc::EADDRNOTAVAIL, "EADDRNOTAVAIL"),
        (libc::EBADF, "EBADF"),
        (libc::EOPNOTSUPP, "EOPNOTSUPP"),
        (libc::ENOPROTOOPT, "ENOPROTOOPT"),
        (libc::EISCONN, "EISCONN"),
        (libc::ENOTCONN, "ENOTCONN"),
        (libc::ECONNREFUSED, "ECONNREFUSED"),
        (libc::ENETUNREACH, "ENETUNREACH"),
        (libc::ENODEV, "ENODEV"),
    ];
    match e {
        None => "ok".into(),
        Some(n) => known
            .iter()
            .find(|(k, _)| *k == n)
            .map_or_else(|| format!("errno {n}"), |(_, s)| s.to_string()),
    }
}

/// The model's answers to a call log, as errno numbers.
pub fn model_answers(host: &reuseport_model::lookup::Host) -> Vec<Answer> {
    host.answers()
        .iter()
        .map(|a| a.as_ref().map(|r| errno_number(&r.errno)))
        .collect()
}

/// The protocol of the log's sockets, if they share one.
pub fn proto_of(log: &CallLog) -> Option<Proto> {
    let mut protos = log.calls.iter().filter_map(|c| match c {
        Call::Socket { proto, .. } => Some(*proto),
        _ => None,
    });
    let first = protos.next()?;
    protos.all(|p| p == first).then_some(first)
}

/// The socket type a protocol's sockets are made with: `SOCK_STREAM` for
/// TCP, `SOCK_DGRAM` for UDP. Every live socket the agent makes takes it
/// from here.
pub fn socket_type(proto: Proto) -> socket2::Type {
    match proto {
        Proto::Tcp => socket2::Type::STREAM,
        Proto::Udp => socket2::Type::DGRAM,
    }
}

#[cfg(target_os = "linux")]
pub use kernel::*;

#[cfg(target_os = "linux")]
mod kernel {
    use super::*;
    use socket2::{Domain, SockAddr, Socket, Type};
    use std::os::fd::AsRawFd;
    use std::time::{Duration, Instant};

    fn errno_of(e: &std::io::Error) -> i32 {
        e.raw_os_error().unwrap_or(libc::EIO)
    }

    /// Moves this thread into a new network namespace with lo up; false
    /// when the process may not (not root).
    pub fn private_netns() -> bool {
        // SAFETY: unshare only changes this thread's namespace.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return false;
        }
        let Ok(s) = Socket::new(Domain::IPV4, Type::DGRAM, None) else {
            return false;
        };
        // SAFETY: ifreq is plain data; the ioctls read and write it.
        unsafe {
            let mut ifr: libc::ifreq = std::mem::zeroed();
            for (d, c) in ifr.ifr_name.iter_mut().zip(b"lo\0") {
                *d = *c as libc::c_char;
            }
            if libc::ioctl(s.as_raw_fd(), libc::SIOCGIFFLAGS as _, &mut ifr) != 0 {
                return false;
            }
            ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            if libc::ioctl(s.as_raw_fd(), libc::SIOCSIFFLAGS as _, &ifr) != 0 {
                return false;
            }
        }
        // ::1 appears on lo once it is up.
        Socket::new(Domain::IPV6, Type::DGRAM, None)
            .and_then(|s| s.bind(&SocketAddr::new(Ipv6Addr::LOCALHOST.into(), 0).into()))
            .is_ok()
    }

    /// `setsockopt` of one int: its errno when refused.
    fn set_int(s: &Socket, level: i32, opt: i32, v: i32) -> Result<(), i32> {
        // SAFETY: `s` is a live socket for the call.
        if unsafe { crate::process::set_int(s.as_raw_fd(), level, opt, v) } {
            Ok(())
        } else {
            Err(crate::process::errno())
        }
    }

    /// A call log after its calls on this kernel.
    pub struct KernelRun {
        /// Each call's answer.
        pub answers: Vec<Answer>,
        /// The sockets by fd (`None` once closed, or never made).
        pub socks: Vec<Option<Socket>>,
        /// Whether each socket receives: a TCP listen succeeded and no
        /// shutdown since, or a UDP bind succeeded; and not closed.
        pub receiving: Vec<bool>,
        /// Each socket's protocol.
        pub protos: Vec<Proto>,
    }

    /// Makes the calls on this kernel, in order. Sockets of owner UID other
    /// than 0 are made with that fsuid (this thread's only), which needs
    /// root.
    pub fn replay(log: &CallLog) -> KernelRun {
        let mut run = KernelRun {
            answers: Vec::with_capacity(log.calls.len()),
            socks: Vec::new(),
            receiving: Vec::new(),
            protos: Vec::new(),
        };
        for call in &log.calls {
            let answer = one(&mut run, call);
            run.answers.push(answer);
        }
        run
    }

    fn one(run: &mut KernelRun, call: &Call) -> Answer {
        if let Call::Socket { family, proto, uid } = *call {
            let domain = match family {
                Family::Inet => Domain::IPV4,
                Family::Inet6 => Domain::IPV6,
            };
            let ty = socket_type(proto);
            // The owner UID is the creator's fsuid (sock_init_data).
            // SAFETY: setfsuid changes only this thread's credentials.
            if uid != 0 {
                unsafe { libc::setfsuid(uid) };
            }
            let made = Socket::new(domain, ty, None);
            if uid != 0 {
                // SAFETY: as above, back to root.
                unsafe { libc::setfsuid(0) };
            }
            run.protos.push(proto);
            run.receiving.push(false);
            return match made.and_then(|s| s.set_nonblocking(true).map(|_| s)) {
                Ok(s) => {
                    run.socks.push(Some(s));
                    None
                }
                Err(e) => {
                    run.socks.push(None);
                    Some(errno_of(&e))
                }
            };
        }
        let fd = call.fd().unwrap_or(usize::MAX);
        let Some(Some(s)) = run.socks.get(fd) else {
            return Some(libc::EBADF);
        };
        let proto = run.protos[fd];
        let r: Result<(), i32> = match call {
            Call::Socket { .. } => Ok(()),
            Call::Setsockopt { opt, .. } => match opt {
                SockOpt::Reuseaddr(on) => s.set_reuse_address(*on).map_err(|e| errno_of(&e)),
                SockOpt::Reuseport(on) => s.set_reuse_port(*on).map_err(|e| errno_of(&e)),
                SockOpt::V6only(on) => {
                    set_int(s, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, *on as i32)
                }
                SockOpt::Bindtodevice(d) => s
                    .bind_device(d.as_deref().map(str::as_bytes))
                    .map_err(|e| errno_of(&e)),
                SockOpt::Linger(l) => s
                    .set_linger(l.map(|t| Duration::from_secs(t.into())))
                    .map_err(|e| errno_of(&e)),
                SockOpt::IncomingCpu(cpu) => {
                    set_int(s, libc::SOL_SOCKET, libc::SO_INCOMING_CPU, *cpu as i32)
                }
                SockOpt::AttachReuseport(p) => {
                    crate::cbpf::attach(s.as_raw_fd(), p).map_err(|e| errno_of(&e))
                }
            },
            Call::Bind { addr, port, .. } => {
                let r = s
                    .bind(&SockAddr::from(SocketAddr::new(*addr, *port)))
                    .map_err(|e| errno_of(&e));
                if r.is_ok() && proto == Proto::Udp {
                    run.receiving[fd] = true;
                }
                r
            }
            Call::Listen { .. } => {
                let r = s.listen(64).map_err(|e| errno_of(&e));
                if r.is_ok() {
                    run.receiving[fd] = true;
                }
                r
            }
            Call::Connect { addr, port, .. } => {
                match s.connect(&SockAddr::from(SocketAddr::new(*addr, *port))) {
                    Ok(()) => Ok(()),
                    // A non-blocking TCP connect under way.
                    Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {
                        let mut p = libc::pollfd {
                            fd: s.as_raw_fd(),
                            events: libc::POLLOUT,
                            revents: 0,
                        };
                        // SAFETY: one pollfd, alive for the call.
                        unsafe { libc::poll(&mut p, 1, 1000) };
                        match s.take_error() {
                            Ok(None) => Ok(()),
                            Ok(Some(e)) => Err(errno_of(&e)),
                            Err(e) => Err(errno_of(&e)),
                        }
                    }
                    Err(e) => Err(errno_of(&e)),
                }
            }
            Call::Shutdown { .. } => {
                let r = s
                    .shutdown(std::net::Shutdown::Both)
                    .map_err(|e| errno_of(&e));
                if proto == Proto::Tcp {
                    // A listener shut down stops listening (whatever the answer).
                    run.receiving[fd] = false;
                }
                r
            }
            Call::Close { .. } => {
                run.socks[fd] = None;
                run.receiving[fd] = false;
                Ok(())
            }
        };
        r.err()
    }

    /// A probing client bound to `src` (port 0), closed with a reset (linger 0) so no TIME_WAIT is left behind.
    pub fn client(src: IpAddr, ty: Type) -> Option<Socket> {
        let domain = if src.is_ipv4() {
            Domain::IPV4
        } else {
            Domain::IPV6
        };
        let c = Socket::new(domain, ty, None).ok()?;
        c.set_linger(Some(Duration::ZERO)).ok()?;
        c.bind(&SocketAddr::new(src, 0).into()).ok()?;
        Some(c)
    }

    /// Waits up to `ms` milliseconds until one of the sockets `which` names is readable.
    pub fn wait_readable(socks: &[Option<Socket>], which: &[usize], ms: i32) -> bool {
        let mut fds: Vec<libc::pollfd> = which
            .iter()
            .filter_map(|&i| socks[i].as_ref())
            .map(|s| libc::pollfd {
                fd: s.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: fds is a valid array of pollfd for the call's duration.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) > 0 }
    }

    /// One TCP connection from `src` to `daddr:port`: which of the
    /// listeners `receiving` names (indexes into `socks`) has it in its
    /// accept queue within `wait`. The connection is accepted and both ends
    /// are closed with a reset, so no TIME_WAIT is left.
    pub fn probe_tcp(
        socks: &[Option<Socket>],
        receiving: &[usize],
        src: IpAddr,
        daddr: IpAddr,
        port: u16,
        wait: Duration,
    ) -> Option<usize> {
        let c = client(src, Type::STREAM)?;
        c.set_read_timeout(Some(wait)).ok()?;
        // Bounded too, generously (a guest under TCG is slow): a SYN nobody
        // answers (a full accept queue drops it) would otherwise block in
        // connect() through the kernel's SYN retries, about two minutes.
        let handshake = wait.max(Duration::from_secs(5));
        if c.connect_timeout(&SocketAddr::new(daddr, port).into(), handshake)
            .is_err()
        {
            return None;
        }
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            for &i in receiving {
                if let Some(s) = &socks[i] {
                    if let Ok((a, _)) = s.accept() {
                        let _ = a.set_linger(Some(Duration::ZERO));
                        return Some(i);
                    }
                }
            }
            wait_readable(socks, receiving, 50);
        }
        None
    }

    /// One UDP datagram from `src` to `daddr:port`, carrying a tag no
    /// other probe of this process carries: which of the sockets
    /// `receiving` names (indexes into `socks`) reads it within `wait`.
    /// Datagrams of earlier probes still queued are read and passed over.
    pub fn probe_udp(
        socks: &[Option<Socket>],
        receiving: &[usize],
        src: IpAddr,
        daddr: IpAddr,
        port: u16,
        wait: Duration,
    ) -> Option<usize> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
        let tag = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let c = client(src, Type::DGRAM)?;
        c.send_to(&tag.to_be_bytes(), &SocketAddr::new(daddr, port).into())
            .ok()?;
        let deadline = Instant::now() + wait;
        loop {
            for &i in receiving {
                if let Some(s) = &socks[i] {
                    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 8];
                    while let Ok(n) = s.recv(&mut buf) {
                        // SAFETY: recv initialised the first n bytes.
                        let b: Vec<u8> = buf[..n]
                            .iter()
                            .map(|x| unsafe { x.assume_init() })
                            .collect();
                        if b == tag.to_be_bytes() {
                            return Some(i);
                        }
                    }
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            wait_readable(socks, receiving, left.as_millis().max(1) as i32);
        }
    }

    impl KernelRun {
        fn receivers(&self, proto: Proto) -> Vec<usize> {
            (0..self.socks.len())
                .filter(|&i| self.receiving[i] && self.protos[i] == proto)
                .collect()
        }

        /// One TCP connection or UDP datagram from `src` to `daddr:port`:
        /// the socket that receives it, if any within the wait.
        pub fn probe(
            &self,
            proto: Proto,
            src: IpAddr,
            daddr: IpAddr,
            port: u16,
            wait: Duration,
        ) -> Option<usize> {
            let receiving = self.receivers(proto);
            match proto {
                Proto::Tcp => probe_tcp(&self.socks, &receiving, src, daddr, port, wait),
                Proto::Udp => probe_udp(&self.socks, &receiving, src, daddr, port, wait),
            }
        }

        /// The sockets that receive `tries` probes from several sources to
        /// `daddr:port` (127.0.0.0/8 sources for IPv4, `::1` for IPv6).
        pub fn receivers_of(
            &self,
            proto: Proto,
            daddr: IpAddr,
            port: u16,
            tries: usize,
        ) -> BTreeSet<usize> {
            (0..tries)
                .filter_map(|k| {
                    self.probe(
                        proto,
                        source(daddr, k),
                        daddr,
                        port,
                        Duration::from_millis(250),
                    )
                })
                .collect()
        }
    }
}

/// The `k`th probe source toward `daddr`: several in 127.0.0.0/8, or `::1`.
pub fn source(daddr: IpAddr, k: usize) -> IpAddr {
    const V4: [[u8; 4]; 6] = [
        [127, 0, 0, 1],
        [127, 0, 0, 3],
        [127, 0, 0, 7],
        [127, 0, 1, 9],
        [127, 2, 3, 4],
        [127, 9, 8, 7],
    ];
    match daddr {
        IpAddr::V4(_) => Ipv4Addr::from(V4[k % V4.len()]).into(),
        IpAddr::V6(_) => Ipv6Addr::LOCALHOST.into(),
    }
}

#[cfg(all(test, target_os = "linux"))]
mod probe_tests {
    use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream};
    use std::time::{Duration, Instant};

    use socket2::Socket;

    /// Why: a probe's connect() was unbounded. A listener whose accept
    /// queue is full drops the SYN, and connect() then waits through the
    /// SYN retries (about two minutes) before the probe's own deadline is
    /// even looked at; a differential run with such a socket hung.
    #[test]
    fn a_probe_to_a_listener_that_drops_its_syn_gives_up_within_its_bound() {
        let full: Socket = TcpListener::bind("127.0.0.1:0").unwrap().into();
        full.listen(0).unwrap();
        let addr = full.local_addr().unwrap().as_socket().unwrap();
        // listen(0) queues one connection (backlog + 1): fill it, never accept.
        let mut held = Vec::new();
        for _ in 0..2 {
            if let Ok(s) = TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
                held.push(s);
            }
        }
        let socks = [Some(full)];
        let from = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));
        let t = Instant::now();
        // The listener is not named as receiving: nothing accepts.
        let got = super::probe_tcp(
            &socks,
            &[],
            from,
            addr.ip(),
            addr.port(),
            Duration::from_millis(250),
        );
        assert_eq!(got, None);
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "took {:?}",
            t.elapsed()
        );
    }
}
