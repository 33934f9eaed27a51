//! The sockets of a Linux recording: the SO_REUSEPORT group set up in the
//! order that numbers its members, the options and program applied to it,
//! and the [`Driver`] that sends one connection or datagram at a time and
//! sees which member's descriptor becomes readable.

use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use reuseport_model::Proto;
use socket2::{Domain, SockRef, Socket};

use crate::calllog::socket_type;

use super::drive::{Delivery, Driver};
use super::sys;
use super::{GroupSetup, RecordError};

/// The kernel's cap on a group (`socks[]` cannot double past U16_MAX).
const GROUP_CAP: u32 = 32768;
/// listen() backlog of each member; events come one at a time.
const BACKLOG: i32 = 128;

enum Member {
    Tcp(TcpListener),
    Udp(UdpSocket),
    Closed,
}

impl Member {
    fn fd(&self) -> Option<RawFd> {
        match self {
            Member::Tcp(l) => Some(l.as_raw_fd()),
            Member::Udp(u) => Some(u.as_raw_fd()),
            Member::Closed => None,
        }
    }
}

/// A live group and the epoll set watching its open members.
pub struct Group {
    proto: Proto,
    members: Vec<Member>,
    epoll: OwnedFd,
    port: u16,
    dest: SocketAddr,
    wait: Duration,
    pinned: Option<u32>,
    stop: &'static AtomicBool,
}

fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}

fn fd_hint(e: &io::Error, listeners: u32) -> String {
    match errno(e) {
        libc::EMFILE => format!(
            "the process ran out of file descriptors; {listeners} listeners need about {}: raise the limit with `ulimit -n {}`",
            u64::from(listeners) + sys::FD_SLACK,
            u64::from(listeners) + sys::FD_SLACK
        ),
        libc::ENFILE => "the system ran out of file descriptors (fs.file-max); close programs or raise fs.file-max".into(),
        _ => String::new(),
    }
}

fn bind_hint(e: &io::Error, i: u32, s: &GroupSetup, port: u16) -> String {
    let order = if s.proto == Proto::Tcp {
        "listen"
    } else {
        "bind"
    };
    match errno(e) {
        libc::EADDRINUSE if s.proto == Proto::Udp && i >= GROUP_CAP => format!(
            "a reuseport group holds at most {GROUP_CAP} members (socks[] cannot grow past U16_MAX), so the kernel refuses the {}th {order}(); record at most {GROUP_CAP} listeners",
            i + 1
        ),
        libc::EADDRINUSE if i == 0 => format!(
            "port {port} on {} is taken by a socket outside this group (another program, or a socket without SO_REUSEPORT, or of another user); choose another --port, or leave --port 0 for a free one",
            s.bind
        ),
        libc::EADDRINUSE => format!(
            "listener {i} could not join the group listeners 0..{i} made on port {port}: a socket outside the group took a conflicting address on this port meanwhile; run again, or choose another --port"
        ),
        libc::EADDRNOTAVAIL => format!(
            "{} is not an address of this machine; bind to one of its addresses, or add --netns to put it on lo in a private network namespace",
            s.bind
        ),
        libc::EACCES => format!("port {port} is privileged; run as root or choose a port from 1024"),
        _ => fd_hint(e, s.listeners),
    }
}

fn setopt_err(what: String, e: io::Error) -> RecordError {
    RecordError::sys(what, e, "")
}

fn epoll_new() -> io::Result<OwnedFd> {
    // SAFETY: a new descriptor, owned from here on.
    let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn epoll_add(epoll: &OwnedFd, fd: RawFd, token: u64) -> io::Result<()> {
    let mut ev = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: token,
    };
    // SAFETY: both descriptors are open; the kernel copies the event.
    if unsafe { libc::epoll_ctl(epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Waits up to `timeout` for readable members; fills `ready` with their
/// numbers. EINTR gives an empty list.
fn epoll_wait(epoll: &OwnedFd, timeout: Duration, ready: &mut Vec<u32>) -> io::Result<()> {
    let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 16];
    let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
    // SAFETY: `evs` has room for the 16 events announced.
    let n = unsafe { libc::epoll_wait(epoll.as_raw_fd(), evs.as_mut_ptr(), evs.len() as i32, ms) };
    ready.clear();
    if n < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(())
        } else {
            Err(e)
        };
    }
    ready.extend(evs[..n as usize].iter().map(|e| e.u64 as u32));
    Ok(())
}

fn same_endpoint(a: &SocketAddr, b: &SocketAddr) -> bool {
    a.port() == b.port() && a.ip().to_canonical() == b.ip().to_canonical()
}

impl Group {
    /// Makes the group: for each member in turn, socket, SO_REUSEPORT,
    /// IPV6_V6ONLY, bind and (TCP) listen, so member i is the i-th to join
    /// (kernel-history.md §6.2); then SO_INCOMING_CPU, the program, the
    /// closes, and the epoll set. Member 0 binding port 0 picks the port.
    pub fn build(
        s: &GroupSetup,
        dest_addr: IpAddr,
        wait: Duration,
        stop: &'static AtomicBool,
    ) -> Result<Group, RecordError> {
        let domain = Domain::for_address(SocketAddr::new(s.bind, 0));
        let ty = socket_type(s.proto);
        let mut port = s.port;
        let mut members = Vec::with_capacity(s.listeners as usize);
        for i in 0..s.listeners {
            if i % 256 == 0 && stop.load(Ordering::Relaxed) {
                return Err(RecordError::Interrupted);
            }
            let sock = Socket::new(domain, ty, None).map_err(|e| {
                let hint = fd_hint(&e, s.listeners);
                RecordError::sys(format!("listener {i}: socket()"), e, hint)
            })?;
            sock.set_reuse_port(true)
                .map_err(|e| setopt_err(format!("listener {i}: SO_REUSEPORT"), e))?;
            if s.bind.is_ipv6() {
                sock.set_only_v6(s.v6only)
                    .map_err(|e| setopt_err(format!("listener {i}: IPV6_V6ONLY"), e))?;
            }
            sock.set_nonblocking(true)
                .map_err(|e| setopt_err(format!("listener {i}: O_NONBLOCK"), e))?;
            let at = SocketAddr::new(s.bind, port);
            sock.bind(&at.into()).map_err(|e| {
                let hint = bind_hint(&e, i, s, port);
                RecordError::sys(format!("listener {i}: bind({at})"), e, hint)
            })?;
            if port == 0 {
                port = sock
                    .local_addr()
                    .ok()
                    .and_then(|a| a.as_socket())
                    .map(|a| a.port())
                    .ok_or_else(|| {
                        RecordError::sys(
                            "listener 0: getsockname after bind to port 0",
                            io::Error::other("no port"),
                            "",
                        )
                    })?;
            }
            let member = match s.proto {
                Proto::Tcp => {
                    sock.listen(BACKLOG).map_err(|e| {
                        let hint = if errno(&e) == libc::ENOMEM && i >= GROUP_CAP {
                            format!("a reuseport group holds at most {GROUP_CAP} members (socks[] cannot grow past U16_MAX), so the kernel refuses the {}th listen(); record at most {GROUP_CAP} listeners", i + 1)
                        } else {
                            fd_hint(&e, s.listeners)
                        };
                        RecordError::sys(format!("listener {i}: listen() on port {port}"), e, hint)
                    })?;
                    Member::Tcp(sock.into())
                }
                Proto::Udp => Member::Udp(sock.into()),
            };
            members.push(member);
        }
        for pin in &s.pins {
            let sock = match &members[pin.listener as usize] {
                Member::Tcp(l) => SockRef::from(l),
                Member::Udp(u) => SockRef::from(u),
                Member::Closed => unreachable!("pins come before closes"),
            };
            sock.set_cpu_affinity(pin.cpu as usize).map_err(|e| {
                RecordError::sys(
                    format!(
                        "listener {}: setsockopt(SO_INCOMING_CPU, {})",
                        pin.listener, pin.cpu
                    ),
                    e,
                    "",
                )
            })?;
        }
        if let Some(bpf) = s.bpf {
            let fd = members[0].fd().expect("member 0 is open before the closes");
            crate::cbpf::attach(fd, &bpf.program()).map_err(|e| {
                let hint = match errno(&e) {
                    libc::EINVAL => "the kernel refused the program (SO_ATTACH_REUSEPORT_CBPF needs 4.5 for UDP, 4.6 for TCP)",
                    libc::EPERM => "attaching a program was not permitted; run as root",
                    _ => "",
                };
                RecordError::sys("listener 0: setsockopt(SO_ATTACH_REUSEPORT_CBPF)", e, hint)
            })?;
        }
        for &l in &s.closed {
            members[l as usize] = Member::Closed;
        }
        let epoll = epoll_new().map_err(|e| {
            let hint = fd_hint(&e, s.listeners);
            RecordError::sys("epoll_create1", e, hint)
        })?;
        for (i, m) in members.iter().enumerate() {
            if let Some(fd) = m.fd() {
                epoll_add(&epoll, fd, i as u64).map_err(|e| {
                    RecordError::sys(format!("listener {i}: epoll_ctl(ADD)"), e, "")
                })?;
            }
        }
        Ok(Group {
            proto: s.proto,
            members,
            epoll,
            port,
            dest: SocketAddr::new(dest_addr, port),
            wait,
            pinned: None,
            stop,
        })
    }

    /// The socket inodes of the open members.
    pub fn inodes(&self) -> std::collections::HashSet<u64> {
        self.members
            .iter()
            .filter_map(|m| m.fd().and_then(super::foreign::inode))
            .collect()
    }

    /// The group's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Where clients send.
    pub fn dest(&self) -> SocketAddr {
        self.dest
    }

    fn pin(&mut self, cpu: Option<u32>) -> Result<Option<u32>, RecordError> {
        let Some(c) = cpu else { return Ok(None) };
        if self.pinned != Some(c) {
            crate::process::pin_to(c).map_err(|e| {
                RecordError::sys(
                    format!("--pin-cpu: sched_setaffinity to CPU {c}"),
                    e,
                    "the CPU is offline or outside this process's cpuset; run without --pin-cpu or allow the CPU (taskset)",
                )
            })?;
            self.pinned = Some(c);
        }
        Ok(crate::process::current_cpu())
    }

    /// A client socket bound to `client` with SO_REUSEADDR, or why the pair
    /// is skipped.
    fn client_socket(&self, client: SocketAddr) -> Result<Result<Socket, String>, RecordError> {
        let ty = socket_type(self.proto);
        let sock = Socket::new(Domain::for_address(client), ty, None).map_err(|e| {
            let hint = fd_hint(&e, self.members.len() as u32);
            RecordError::sys(format!("client {client}: socket()"), e, hint)
        })?;
        sock.set_reuse_address(true)
            .map_err(|e| setopt_err(format!("client {client}: SO_REUSEADDR"), e))?;
        match sock.bind(&client.into()) {
            Ok(()) => Ok(Ok(sock)),
            Err(e) if errno(&e) == libc::EADDRINUSE => Ok(Err(format!("bind({client}): {e}"))),
            Err(e) if errno(&e) == libc::EADDRNOTAVAIL => Err(RecordError::sys(
                format!("client bind({client})"),
                e,
                format!("{} is not an address of this machine; give local --client addresses, or add --netns to put them on lo in a private network namespace", client.ip()),
            )),
            Err(e) => Err(RecordError::sys(format!("client bind({client})"), e, "")),
        }
    }

    /// Waits up to the wait time for the member that gets the event from
    /// `client` (with payload `seq` for UDP); latencies count from `t0`, the
    /// connect() or send(). Anything else that arrives (a late event given
    /// up on earlier) is drained and dropped.
    fn wait_for(
        &mut self,
        client: SocketAddr,
        seq: u64,
        t0: Instant,
    ) -> Result<Option<(u32, Duration)>, RecordError> {
        // From now, not from t0: a connect() whose SYN was retransmitted
        // returns after a second or more, and its child is then queued.
        let deadline = Instant::now() + self.wait;
        let mut ready = Vec::with_capacity(16);
        let payload = (seq as u32).to_be_bytes();
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            epoll_wait(&self.epoll, deadline - now, &mut ready)
                .map_err(|e| RecordError::sys("epoll_wait", e, ""))?;
            let mut found = None;
            for &l in &ready {
                match &self.members[l as usize] {
                    Member::Tcp(listener) => loop {
                        match listener.accept() {
                            Ok((conn, peer)) => {
                                if same_endpoint(&peer, &client) {
                                    found = Some((l, t0.elapsed()));
                                }
                                drop(conn);
                            }
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                            Err(e) if errno(&e) == libc::ECONNABORTED => continue,
                            Err(e) => {
                                let hint = fd_hint(&e, self.members.len() as u32);
                                return Err(RecordError::sys(
                                    format!("listener {l}: accept()"),
                                    e,
                                    hint,
                                ));
                            }
                        }
                    },
                    Member::Udp(sock) => loop {
                        let mut buf = [0u8; 64];
                        match sock.recv_from(&mut buf) {
                            Ok((n, from)) => {
                                if n == 4 && buf[..4] == payload && same_endpoint(&from, &client) {
                                    found = Some((l, t0.elapsed()));
                                }
                            }
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                            Err(e) => {
                                return Err(RecordError::sys(
                                    format!("listener {l}: recvfrom()"),
                                    e,
                                    "",
                                ))
                            }
                        }
                    },
                    Member::Closed => {}
                }
            }
            if found.is_some() {
                return Ok(found);
            }
        }
    }
}

impl Driver for Group {
    fn deliver(
        &mut self,
        seq: u64,
        client: SocketAddr,
        cpu: Option<u32>,
    ) -> Result<Delivery, RecordError> {
        let cpu = self.pin(cpu)?;
        let sock = match self.client_socket(client)? {
            Ok(s) => s,
            Err(why) => return Ok(Delivery::Skipped(why)),
        };
        let t0 = Instant::now();
        let sent = match self.proto {
            // Blocking: on loopback the handshake is done when it returns,
            // and the child waits in the chosen listener's accept queue.
            Proto::Tcp => sock.connect(&self.dest.into()),
            Proto::Udp => sock
                .send_to(&(seq as u32).to_be_bytes(), &self.dest.into())
                .map(|_| ()),
        };
        // A completed TCP handshake that none of ours accepts went to a
        // listener outside the group.
        let mut handshake = sent.is_ok() && self.proto == Proto::Tcp;
        let got = match sent {
            Ok(()) => self.wait_for(client, seq, t0)?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                if self.stop.load(Ordering::Relaxed) {
                    return Ok(Delivery::Stopped);
                }
                // Another signal: the handshake goes on without us.
                handshake = false;
                self.wait_for(client, seq, t0)?
            }
            // No member took it (refused, or the SYN was dropped until timeout).
            Err(e) if matches!(errno(&e), libc::ECONNREFUSED | libc::ETIMEDOUT) => None,
            // The 4-tuple is in use by a socket from elsewhere.
            Err(e) if errno(&e) == libc::EADDRNOTAVAIL || errno(&e) == libc::EADDRINUSE => {
                return Ok(Delivery::Skipped(format!(
                    "connect({client} -> {}): {e}",
                    self.dest
                )))
            }
            Err(e) => {
                let what = match self.proto {
                    Proto::Tcp => format!("client {client}: connect({})", self.dest),
                    Proto::Udp => format!("client {client}: sendto({})", self.dest),
                };
                return Err(RecordError::sys(what, e, ""));
            }
        };
        if self.proto == Proto::Tcp {
            // RST instead of FIN: no TIME_WAIT, so the pair can be used again
            // by the next run.
            let _ = sock.set_linger(Some(Duration::ZERO));
        }
        drop(sock);
        Ok(match got {
            Some((listener, latency)) => Delivery::Received {
                listener,
                latency_ns: latency.as_nanos() as u64,
                cpu,
            },
            None if self.stop.load(Ordering::Relaxed) => Delivery::Stopped,
            None if handshake => Delivery::Elsewhere,
            None => Delivery::Lost,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_and_plain_ipv4_endpoints_are_the_same() {
        let a: SocketAddr = "[::ffff:127.0.0.9]:20000".parse().unwrap();
        let b: SocketAddr = "127.0.0.9:20000".parse().unwrap();
        assert!(same_endpoint(&a, &b));
        assert!(!same_endpoint(&a, &"127.0.0.9:20001".parse().unwrap()));
    }
}
