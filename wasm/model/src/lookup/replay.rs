//! The replay: the host stepped by calls ([`Host::apply`]), each
//! answered; receiving sockets join or make their reuseport group.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use super::bucket::bucket_addr;
use super::calls::{Call, CallLog, SockOpt, MAX_CALLS, MAX_SOCKETS};
use super::host::{GroupEntry, Host, Sock};
use super::types::same_group;
use super::types::{
    as_v6, unspecified_of, Answer, Family, LayoutError, SkLookup, SockState, SocketSpec,
};
use crate::error::{GroupError, SetupError};
use crate::hash::Keys;
use crate::message::{Errno, KernelSource, Refusal, RefusalRule};
use crate::profile::rules::LookupRules;
use crate::profile::{Profile, Selection};
use crate::reuseport::{GroupSpec, Program, ReuseportGroup};
use crate::tuple::Proto;

/// The device name SO_BINDTODEVICE looks up for `given`: at most
/// `IFNAMSIZ - 1` = 15 bytes, up to the first NUL (sock_setbindtodevice,
/// net/core/sock.c, 3.9 to 7.2).
fn device_name(given: &str) -> String {
    const IFNAMSIZ: usize = 16;
    let bytes = &given.as_bytes()[..given.len().min(IFNAMSIZ - 1)];
    let bytes = bytes.split(|&b| b == 0).next().unwrap_or_default();
    String::from_utf8_lossy(bytes).into_owned()
}

impl Host {
    /// Replays a call log in this profile: its settings, then each call in
    /// order through [`Host::apply`].
    /// Input the model cannot replay (an fd no `socket` call made, an
    /// address of the wrong family, too many calls) is an error naming the
    /// call's index and field; a call the kernel refuses is an answer
    /// ([`Host::answers`]).
    pub fn run(profile: &'static Profile, log: &CallLog) -> Result<Host, LayoutError> {
        let rules = LookupRules::of(profile);
        if log.calls.len() > MAX_CALLS {
            return Err(LayoutError::Calls(format!(
                "{} calls; at most {MAX_CALLS}",
                log.calls.len()
            )));
        }
        if let Some(e) = log.ephemeral {
            if e.low == 0 {
                return Err(LayoutError::Ephemeral(
                    "low is 0; the range starts at port 1 or above (net.ipv4.ip_local_port_range)"
                        .into(),
                ));
            }
            if e.low > e.high {
                return Err(LayoutError::Ephemeral(format!(
                    "low ({}) is above high ({}); give low <= high",
                    e.low, e.high
                )));
            }
        }
        let sockets = log
            .calls
            .iter()
            .filter(|c| matches!(c, Call::Socket { .. }))
            .count();
        if sockets > MAX_SOCKETS {
            return Err(LayoutError::Calls(format!(
                "{sockets} socket calls; at most {MAX_SOCKETS}"
            )));
        }
        if let Some(sk) = &log.sk_lookup {
            if !rules.sk_lookup {
                return Err(LayoutError::SkLookup(format!(
                    "BPF sk_lookup arrived in 5.9; profile {} does not have it",
                    profile.release
                )));
            }
            if let SkLookup::Assign { socket, .. } = sk {
                if *socket >= sockets {
                    return Err(LayoutError::SkLookup(format!(
                        "assigns socket {socket}, but the layout has {sockets}"
                    )));
                }
            }
        }
        let mut host = Host {
            profile,
            rules,
            socks: Vec::with_capacity(sockets),
            groups: Vec::new(),
            port_list: BTreeMap::new(),
            addr_list: BTreeMap::new(),
            bucket: BTreeMap::new(),
            groups_on: BTreeMap::new(),
            tcp_tb: BTreeMap::new(),
            sk_lookup: log.sk_lookup.clone(),
            keys: log.keys,
            ephemeral: log.ephemeral,
            tcp_migrate_req: log.tcp_migrate_req,
            devices: log.devices.clone(),
            undecided_draw: false,
            answers: Vec::with_capacity(log.calls.len()),
            calls: Vec::with_capacity(log.calls.len()),
            next_seq: 0,
            last_change: None,
        };
        for call in &log.calls {
            host.apply(call.clone())?;
        }
        Ok(host)
    }

    /// The host a [`GroupSpec`] shorthand stands for: the calls
    /// [`CallLog::from_group`] writes, replayed. Listener `i` is fd `i`;
    /// [`Host::group`] of [`Host::group_of`]`(0)` is the group itself.
    pub fn from_group(profile: &'static Profile, spec: &GroupSpec) -> Result<Host, LayoutError> {
        Host::run(profile, &CallLog::from_group(spec))
    }

    /// The reuseport group a [`GroupSpec`] shorthand stands for, handed out
    /// of the host that replays the calls it writes
    /// ([`CallLog::from_group_checked`]), for the hot paths that ask one
    /// group many times (the key search, the spread, batch selection, a
    /// trace's check). Listener `i` is fd `i` and member `i`. A call the
    /// kernel refuses is an error naming it. The reservoir era keeps no
    /// group: there it is the chain's stand-in ([`Host::chain_of`]), whose
    /// members are the listeners in order while none has closed.
    pub fn spec_group(
        profile: &'static Profile,
        spec: &GroupSpec,
    ) -> Result<ReuseportGroup, SetupError> {
        let log = CallLog::from_group_checked(profile, spec)?;
        let unsupported = |why: String| {
            SetupError::from(GroupError::Unsupported {
                what: "the group's calls".into(),
                why,
            })
        };
        let host = Host::run(profile, &log).map_err(|e| unsupported(e.to_string()))?;
        if let Some((i, r)) =
            (host.answers().iter().enumerate()).find_map(|(i, a)| a.as_ref().map(|r| (i, r)))
        {
            return Err(unsupported(format!(
                "call {i} ({:?}) fails with {}",
                log.calls[i],
                format!("{:?}", r.errno).to_uppercase()
            )));
        }
        if host.group_era(spec.proto) {
            let g = host.group_of(0).unwrap_or(0);
            host.into_group(g)
        } else {
            let fd = (0..host.sockets()).find(|&fd| host.chain_of(fd).is_some());
            fd.and_then(|fd| host.chain_of(fd)).map(|(g, _)| g)
        }
        .ok_or(SetupError::NoListeners)
    }

    /// Whether [`Host::spec_group`] hands out the group `spec` stands for
    /// numbered as the spec numbers its listeners: every group-era spec,
    /// and a chain-era one (TCP before 4.6, UDP before 4.5) of at most
    /// [`MAX_SOCKETS`] listeners, none closed or shut down.
    pub fn holds_spec(profile: &'static Profile, spec: &GroupSpec) -> bool {
        profile.selection(spec.proto) == Selection::Group
            || (spec.listeners as usize <= MAX_SOCKETS
                && spec.closed.is_empty()
                && spec.shutdown.is_empty())
    }

    /// The group a [`GroupSpec`] shorthand stands for, for whoever holds
    /// one and asks it packet by packet (the wasm `Group` of the visualizer
    /// and the lookup page, the paste page's answers, the spread, diagnose,
    /// the QUIC reload model, and the agent's record and verify): the
    /// host's ([`Host::spec_group`]) wherever it holds it
    /// ([`Host::holds_spec`]).
    ///
    /// The rest of the chain era is built here without a host
    /// ([`ReuseportGroup::build`]), and only here, for two reasons:
    /// - a 3.9–4.5 chain has no kernel bound but one process's file
    ///   descriptors, so a page may ask for up to
    ///   [`crate::reuseport::MAX_LISTENERS`] (2^20) listeners, and a host
    ///   holds at most [`MAX_SOCKETS`] (2^16) sockets: raising that bound
    ///   would make every host a million sockets deep for a chain's sake;
    /// - the kernel keeps no group there: the host's stand-in
    ///   ([`Host::chain_of`]) numbers the chain's live members oldest
    ///   first, so after a close its numbers are no longer the spec's
    ///   listener numbers, which the pages show and count by.
    ///
    /// Either way the group explains every packet as the spec's direct
    /// build does (the suite's `host_calls` tests hold them to it, chain
    /// and group era alike).
    pub fn shorthand_group(
        profile: &'static Profile,
        spec: &GroupSpec,
    ) -> Result<ReuseportGroup, SetupError> {
        if Host::holds_spec(profile, spec) {
            Host::spec_group(profile, spec)
        } else {
            ReuseportGroup::build(profile, spec)
        }
    }

    /// Steps the host by one more call, as a program makes it, and returns
    /// the kernel's answer: `None` for success, or the refusal (errno and
    /// rule). The call joins [`Host::log`] and its answer [`Host::answers`].
    /// A call the model cannot replay (an fd no `socket` call made, an
    /// address of the wrong family, past the bounds, a port draw it cannot
    /// decide) is an error naming its index and field, and is not recorded.
    pub fn apply(&mut self, call: Call) -> Result<Answer, LayoutError> {
        let index = self.answers.len();
        if index >= MAX_CALLS {
            return Err(LayoutError::Calls(format!(
                "{} calls; at most {MAX_CALLS}",
                index + 1
            )));
        }
        if matches!(call, Call::Socket { .. }) && self.socks.len() >= MAX_SOCKETS {
            return Err(LayoutError::Calls(format!(
                "{} socket calls; at most {MAX_SOCKETS}",
                self.socks.len() + 1
            )));
        }
        self.last_change = None;
        let answer = self.call(index, &call)?;
        if self.undecided_draw {
            let range = self.rules.default_port_range;
            return Err(LayoutError::Call {
                index,
                field: "fd",
                problem: format!(
                    "the kernel draws this socket's port from {}-{} (the default ip_local_port_range), and every port of it may be held by the sockets before it: the model cannot tell whether one is free; give an `ephemeral` range",
                    range.low, range.high
                ),
            });
        }
        self.answers.push(answer.clone());
        self.calls.push(call);
        Ok(answer)
    }

    /// One call: its answer, or an error naming the call when the model
    /// cannot replay it.
    fn call(&mut self, index: usize, call: &Call) -> Result<Option<Refusal>, LayoutError> {
        let bad = |field: &'static str, problem: String| {
            Err(LayoutError::Call {
                index,
                field,
                problem,
            })
        };
        if let Call::Socket { family, proto, uid } = *call {
            self.socks.push(Sock::new(family, proto, uid));
            return Ok(None);
        }
        let Some(i) = call.fd() else {
            return Ok(None);
        };
        if i >= self.socks.len() {
            return bad(
                "fd",
                format!(
                    "socket {i} does not exist yet: {} socket calls come before this call, making fds 0 to {}",
                    self.socks.len(),
                    self.socks.len() as i64 - 1
                ),
            );
        }
        if self.socks[i].closed {
            // The fd was closed (close(2) then any call: EBADF).
            return Ok(Some(self.refusal(
                Errno::Ebadf,
                RefusalRule::FdClosed,
                "fdget",
                "include/linux/file.h",
            )));
        }
        let (family, proto) = (self.socks[i].spec.family, self.socks[i].spec.proto);
        match call {
            Call::Socket { .. } => Ok(None),
            Call::Setsockopt { opt, .. } => Ok(self.setsockopt(i, opt)),
            Call::Bind { addr, port, .. } => {
                match (family, addr) {
                    (Family::Inet, IpAddr::V6(_)) => {
                        return bad(
                            "addr",
                            format!(
                            "socket {i} is AF_INET and cannot bind the IPv6 address {addr}; make it with family inet6"
                        ),
                        )
                    }
                    (Family::Inet6, IpAddr::V4(_)) => {
                        return bad(
                            "addr",
                            format!("socket {i} is AF_INET6: it binds IPv4 addresses as ::ffff:{addr}"),
                        )
                    }
                    _ => {}
                }
                Ok(self.bind(i, *addr, *port))
            }
            Call::Listen { .. } => {
                if proto == Proto::Udp {
                    // inet_dgram_ops .listen = sock_no_listen.
                    return Ok(Some(self.refusal(
                        Errno::Eopnotsupp,
                        RefusalRule::UdpCannotListen,
                        "sock_no_listen",
                        "net/core/sock.c",
                    )));
                }
                if self.socks[i].established || self.socks[i].spec.state == SockState::Connected {
                    return Ok(Some(self.refusal(
                        Errno::Einval,
                        RefusalRule::ListenConnected,
                        "inet_listen",
                        "net/ipv4/af_inet.c",
                    )));
                }
                if self.socks[i].listening {
                    // Listening already: listen() only changes the backlog.
                    return Ok(None);
                }
                if !self.socks[i].bound {
                    // inet_csk_listen_start -> get_port(sk, 0): an ephemeral
                    // port, from the call log's range or the kernel's own.
                    let any = unspecified_of(family);
                    let bind_answer = self.socks[i].bind_refusal.clone();
                    let r = self.bind(i, any, 0);
                    self.socks[i].bind_refusal = bind_answer;
                    if let Some(r) = r {
                        self.socks[i].listen_refusal = Some(r.clone());
                        return Ok(Some(r));
                    }
                }
                let r = self.listen_or_receive(i);
                self.socks[i].listen_refusal = r.clone();
                Ok(r)
            }
            Call::Connect { addr, port, .. } => {
                if addr.is_ipv6() != (family == Family::Inet6) {
                    return bad(
                        "addr",
                        format!("socket {i} is {family:?} and cannot connect to {addr}; give a peer of its family (::ffff:a.b.c.d for IPv4 through AF_INET6)"),
                    );
                }
                Ok(self.connect(index, i, SocketAddr::new(*addr, *port))?)
            }
            Call::Shutdown { .. } => Ok(self.shutdown(i)),
            Call::Close { .. } => {
                self.close_socket(i);
                Ok(None)
            }
        }
    }

    pub(super) fn refusal(
        &self,
        errno: Errno,
        rule: RefusalRule,
        func: &str,
        file: &str,
    ) -> Refusal {
        Refusal {
            errno,
            rule,
            source: KernelSource::new(func, file, self.profile.release),
            with: None,
        }
    }

    /// `connect(i, peer)`: UDP receives only from the peer from now on
    /// (TCP_ESTABLISHED, which a group counts from 5.4); TCP is taken to
    /// reach an established connection, not listening, still on its port.
    fn connect(
        &mut self,
        index: usize,
        i: usize,
        peer: SocketAddr,
    ) -> Result<Option<Refusal>, LayoutError> {
        let sock = &self.socks[i];
        if sock.listening && sock.spec.proto == Proto::Tcp {
            // __inet_stream_connect: a listener is not TCP_CLOSE.
            return Ok(Some(self.refusal(
                Errno::Eisconn,
                RefusalRule::ConnectListener,
                "__inet_stream_connect",
                "net/ipv4/af_inet.c",
            )));
        }
        if sock.established {
            return Ok(Some(self.refusal(
                Errno::Eisconn,
                RefusalRule::AlreadyConnected,
                "__inet_stream_connect",
                "net/ipv4/af_inet.c",
            )));
        }
        if sock.spec.family == Family::Inet6
            && sock.spec.v6only
            && as_v6(peer.ip()).to_ipv4_mapped().is_some()
        {
            // An IPV6_V6ONLY socket and a v4-mapped peer: ENETUNREACH before
            // any autobind (__ip6_datagram_connect, net/ipv6/datagram.c;
            // tcp_v6_connect, net/ipv6/tcp_ipv6.c). Measured on 6.18.44 by
            // verify --layouts --call-logs (2026-11-24).
            let (func, file) = match sock.spec.proto {
                Proto::Udp => ("__ip6_datagram_connect", "net/ipv6/datagram.c"),
                Proto::Tcp => ("tcp_v6_connect", "net/ipv6/tcp_ipv6.c"),
            };
            return Ok(Some(self.refusal(
                Errno::Enetunreach,
                RefusalRule::V6onlyMappedPeer,
                func,
                file,
            )));
        }
        let unplaced = !sock.bound || sock.spec.addr.is_unspecified() || sock.spec.port == 0;
        if unplaced && sock.random_port.is_none() {
            if !sock.bound && sock.bind_refusal.is_some() && self.ephemeral.is_none() {
                // Its bind failed: connect() binds an ephemeral port first
                // (inet_autobind for UDP, net/ipv4/af_inet.c;
                // inet_hash_connect for TCP, net/ipv4/inet_hashtables.c), at
                // random in the kernel's range. The socket's bind answer
                // stays its own bind() call's. A socket that made no bind
                // stays unreplayable: where connect() autobinds it from
                // scratch is not modelled.
                let any = unspecified_of(sock.spec.family);
                let bind_answer = sock.bind_refusal.clone();
                let r = self.bind(i, any, 0);
                self.socks[i].bind_refusal = bind_answer;
                if r.is_some() {
                    return Ok(r);
                }
            } else {
                return Err(LayoutError::Call {
                index,
                field: "fd",
                problem: format!(
                    "connect on socket {i}, which is not bound to a specific address and port: the model does not choose a source address; bind one first"
                ),
            });
            }
        }
        match self.socks[i].spec.proto {
            Proto::Udp => {
                self.socks[i].spec.state = SockState::Connected;
                self.socks[i].spec.peer = Some(peer);
                if let (Some(g), Some(m)) = (self.socks[i].group, self.socks[i].member) {
                    // From 6.13 the member leaves its group as it connects
                    // (udp_lib_hash4: reuseport_detach_sock).
                    if let Ok(c) = self.groups[g].group.connect(m) {
                        self.last_change = Some((g, c));
                    }
                    if self.rules.udp_connect_leaves_group {
                        self.socks[i].group = None;
                        self.socks[i].member = None;
                    }
                }
            }
            Proto::Tcp => self.socks[i].established = true,
        }
        Ok(None)
    }

    /// `shutdown(i, SHUT_RDWR)`: a TCP listener stops listening
    /// (`inet_shutdown` -> `tcp_disconnect` -> `inet_csk_listen_stop`) and
    /// keeps its port, bound by address (SOCK_BINDPORT_LOCK); unconnected
    /// sockets answer ENOTCONN (net/ipv4/af_inet.c).
    fn shutdown(&mut self, i: usize) -> Option<Refusal> {
        let s = &self.socks[i];
        let connected = s.established || s.spec.state == SockState::Connected;
        if s.spec.proto == Proto::Tcp && s.listening {
            self.leave_lists(i);
            self.set_listening(i, false);
            if let (Some(g), Some(m)) = (self.socks[i].group, self.socks[i].member) {
                let _ = self.groups[g].group.shutdown(m);
            }
            return None;
        }
        if connected {
            return None;
        }
        Some(self.refusal(
            Errno::Enotconn,
            RefusalRule::NotConnected,
            "inet_shutdown",
            "net/ipv4/af_inet.c",
        ))
    }

    /// `setsockopt(i, opt)`. Options change what later calls read of the
    /// socket; a bind already done stays as it was.
    fn setsockopt(&mut self, i: usize, opt: &SockOpt) -> Option<Refusal> {
        let family = self.socks[i].spec.family;
        match opt {
            SockOpt::Reuseaddr(on) => self.reclass(i, |s| s.spec.reuseaddr = *on),
            SockOpt::Reuseport(on) => self.reclass(i, |s| s.spec.reuseport = *on),
            SockOpt::V6only(on) => {
                if family == Family::Inet {
                    // ip_setsockopt: level IPPROTO_IPV6 is not AF_INET's.
                    return Some(self.refusal(
                        Errno::Enoprotoopt,
                        RefusalRule::V6onlyOnInet,
                        "ip_setsockopt",
                        "net/ipv4/ip_sockglue.c",
                    ));
                }
                if self.socks[i].bound {
                    // do_ipv6_setsockopt: `inet_num` set, EINVAL.
                    return Some(self.refusal(
                        Errno::Einval,
                        RefusalRule::V6onlyAfterBind,
                        "do_ipv6_setsockopt",
                        "net/ipv6/ipv6_sockglue.c",
                    ));
                }
                self.socks[i].spec.v6only = *on;
            }
            SockOpt::Bindtodevice(d) => {
                // sock_setbindtodevice (net/core/sock.c, 3.9 to 7.2): the
                // name is cut to IFNAMSIZ - 1 = 15 bytes and ends at a NUL;
                // an empty one unbinds; one no device of the namespace has
                // is ENODEV (dev_get_by_name_rcu found none), and the
                // socket stays as it was.
                let name = d.as_deref().map(device_name).filter(|n| !n.is_empty());
                if let Some(n) = &name {
                    if n != "lo" && !self.devices.iter().any(|d| d == n) {
                        return Some(self.refusal(
                            Errno::Enodev,
                            RefusalRule::UnknownDevice,
                            "sock_setbindtodevice",
                            "net/core/sock.c",
                        ));
                    }
                }
                self.reclass(i, |s| s.spec.device = name)
            }
            SockOpt::Linger(l) => self.socks[i].linger = *l,
            SockOpt::IncomingCpu(cpu) => {
                if !self.profile.incoming_cpu_writable {
                    // sock_setsockopt (net/core/sock.c) has no SO_INCOMING_CPU
                    // case to set before 70da268b569d ("net: SO_INCOMING_CPU
                    // setsockopt() support", 4.4): its default, ENOPROTOOPT.
                    return Some(self.refusal(
                        Errno::Enoprotoopt,
                        RefusalRule::IncomingCpuReadOnly,
                        "sock_setsockopt",
                        "net/core/sock.c",
                    ));
                }
                // The kernel reads an int: 2^31 and above are negative, and
                // a negative sk_incoming_cpu is "none" (-1 unsets it; on
                // 6.2+ reuseport_update_incoming_cpu,
                // net/core/sock_reuseport.c, then lowers the group's count).
                let cpu = i32::try_from(*cpu).ok().map(|c| c as u32);
                self.socks[i].spec.incoming_cpu = cpu;
                if let (Some(g), Some(m)) = (self.socks[i].group, self.socks[i].member) {
                    if let Ok(c) = self.groups[g].group.set_incoming_cpu(m, cpu) {
                        self.last_change = Some((g, c));
                    }
                }
            }
            SockOpt::AttachReuseport(p) => {
                let r = self.attach(i, p);
                self.socks[i].attach_refusal = r.clone();
                return r;
            }
        }
        None
    }

    /// SO_ATTACH_REUSEPORT_CBPF/EBPF (`reuseport_attach_prog`,
    /// net/core/sock_reuseport.c, 4.5+): to the socket's group; a socket
    /// not yet hashed (before bind for UDP, before listen for TCP) with
    /// SO_REUSEPORT gets a group of its own, which it keeps until it joins
    /// another; without SO_REUSEPORT and no group, EINVAL.
    fn attach(&mut self, i: usize, p: &Program) -> Option<Refusal> {
        let s = &self.socks[i];
        let einval = |rule: RefusalRule, source: KernelSource| Refusal {
            errno: Errno::Einval,
            rule,
            source,
            with: None,
        };
        if let (Some(g), Some(_), true) = (s.group, s.member, s.listening) {
            let group = &mut self.groups[g].group;
            if let Some((rule, source)) = group.attach_refusal(p) {
                return Some(einval(rule, source));
            }
            let _ = group.attach_program(p.clone());
            return None;
        }
        if !s.spec.reuseport || s.listening {
            // reuseport_bpf.c test_filter_no_reuseport.
            return Some(einval(
                RefusalRule::ProgramNeedsReuseport,
                KernelSource::new(
                    "sk_reuseport_attach_filter",
                    "net/core/sock.c",
                    self.profile.release,
                ),
            ));
        }
        let spec = GroupSpec::new(s.spec.proto, 0, s.spec.addr, s.spec.port, self.keys);
        let own = ReuseportGroup::build_empty(self.profile, &spec);
        if let Some((rule, source)) = own.attach_refusal(p) {
            return Some(einval(rule, source));
        }
        self.socks[i].spec.program = Some(p.clone());
        self.socks[i].spec.program_before_bind = true;
        None
    }

    /// `close()`: a TCP socket with an established connection sends its FIN
    /// and stays on its port (the active close, `__tcp_close` in
    /// net/ipv4/tcp.c): without SO_LINGER as an orphan in FIN_WAIT1, a full
    /// socket that keeps its owner's UID, until the peer acknowledges the
    /// FIN, which is after the calls that follow at once; with SO_LINGER
    /// and a timeout, close() waits in `sk_stream_wait_close` for that ACK
    /// (FIN_WAIT2), and `tcp_time_wait(sk, TCP_FIN_WAIT2, ..)` leaves a
    /// timewait socket, whose `sk_state` reads TCP_TIME_WAIT to the bind
    /// rules; with a zero timeout, `tcp_disconnect` sends a reset and the
    /// port is free. Every release. Any other socket leaves its lists, and
    /// its group with the last member moved into its slot.
    fn close_socket(&mut self, i: usize) {
        if self.socks[i].closed {
            return;
        }
        self.socks[i].closed = true;
        if self.socks[i].established && self.socks[i].bound {
            match self.socks[i].linger {
                None => {
                    self.reclass(i, |s| s.closing = true);
                    return;
                }
                Some(0) => {}
                Some(_) => {
                    self.reclass(i, |s| s.spec.state = SockState::TimeWait);
                    return;
                }
            }
        }
        let was_receiving = self.socks[i].listening;
        let in_group = self.socks[i].group;
        self.unbind(i);
        self.socks[i].listening = false;
        if !was_receiving && in_group.is_none() {
            return;
        }
        self.leave_lists(i);
        if let (Some(g), Some(m)) = (self.socks[i].group, self.socks[i].member) {
            if let Ok(c) = self.groups[g].group.close(m) {
                self.last_change = Some((g, c));
            }
        }
    }

    /// `listen()` of a bound TCP socket: the port is checked again, then
    /// the socket receives.
    fn listen_or_receive(&mut self, i: usize) -> Option<Refusal> {
        if self.socks[i].random_port.is_some() {
            // On its randomly drawn port, which no bound socket overlapped
            // when it was drawn: it listens there, alone.
            self.socks[i].listening = true;
            return None;
        }
        if self.socks[i].spec.proto == Proto::Tcp {
            if !self.tcp_fast_path(i, true) {
                if let Some(r) = self.listen_conflict(i) {
                    return Some(r);
                }
            }
            self.tcp_fast_update(i, true);
        }
        self.receive(i)
    }

    /// The socket starts receiving: joins or makes its group and enters
    /// the lists. A TCP listener shut down and listening again goes back
    /// into its group (`reuseport_resurrect` from its closed tail, or a
    /// new join). The refusal is that of a full group.
    pub(super) fn receive(&mut self, i: usize) -> Option<Refusal> {
        let keys = self.keys;
        let spec = self.socks[i].spec.clone();
        let rejoin = match (self.socks[i].group, self.socks[i].member) {
            (Some(g), Some(m)) => self.groups[g].group.relisten(m).is_ok(),
            _ => false,
        };
        if spec.reuseport && self.group_era(spec.proto) && !rejoin {
            let on_port = self.groups_on.get(&(spec.proto, spec.port, spec.addr));
            // inet_reuseport_add_sock / udp_reuseport_add_sock: a socket
            // on the list with the same attributes; its group.
            let found = if spec.proto == Proto::Udp && self.rules.udp_connect_leaves_group {
                self.udp_group_to_join(i, keys)
            } else {
                on_port.into_iter().flatten().copied().find(|&g| {
                    self.groups[g]
                        .members
                        .iter()
                        .any(|&m| self.socks[m].listening && same_group(&self.socks[m].spec, &spec))
                })
            };
            // A receiving socket with the same attributes that set
            // SO_REUSEPORT only after it was hashed has no group yet: the
            // joiner makes one for it first (`reuseport_add_sock` ->
            // `reuseport_alloc(sk2)`, net/core/sock_reuseport.c).
            let partner = match found {
                Some(_) => None,
                None => self
                    .addr_list
                    .get(&(spec.proto, bucket_addr(spec.addr), spec.port))
                    .into_iter()
                    .flatten()
                    .copied()
                    .find(|&j| {
                        j != i
                            && self.socks[j].group.is_none()
                            && same_group(&self.socks[j].spec, &spec)
                    }),
            };
            let g = match found {
                Some(g) => g,
                None => self.new_group(&spec, keys),
            };
            if let Some(j) = partner {
                let entry = &mut self.groups[g];
                if entry.group.join().is_ok() {
                    entry.members.push(j);
                    let sj = self.socks[j].spec.clone();
                    if let Some(cpu) = sj.incoming_cpu {
                        let _ = entry.group.set_incoming_cpu(0, Some(cpu));
                    }
                    if sj.state == SockState::Connected {
                        let _ = entry.group.connect(0);
                    }
                    self.socks[j].group = Some(g);
                    self.socks[j].member = Some(0);
                }
            }
            let entry = &mut self.groups[g];
            match entry.group.join() {
                Ok(change) => {
                    self.last_change = Some((g, change));
                    let entry = &mut self.groups[g];
                    let member = entry.members.len() as u32;
                    entry.members.push(i);
                    if let Some(cpu) = spec.incoming_cpu {
                        let _ = entry.group.set_incoming_cpu(member, Some(cpu));
                    }
                    let mut left = false;
                    if spec.state == SockState::Connected {
                        // From 6.13 it leaves as it connects (udp_lib_hash4:
                        // reuseport_detach_sock).
                        let _ = entry.group.connect(member);
                        left = self.rules.udp_connect_leaves_group;
                    }
                    if let Some(p) = &spec.program {
                        if let Some((rule, source)) = entry.group.attach_refusal(p) {
                            self.socks[i].attach_refusal = Some(Refusal {
                                errno: Errno::Einval,
                                rule,
                                source,
                                with: None,
                            });
                        } else {
                            let _ = entry.group.attach_program(p.clone());
                        }
                    }
                    if !left {
                        self.socks[i].group = Some(g);
                        self.socks[i].member = Some(member);
                    }
                }
                Err(_) => {
                    // reuseport_grow cannot double socks[] past U16_MAX.
                    let r = Refusal {
                        errno: if spec.proto == Proto::Tcp {
                            Errno::Enomem
                        } else {
                            Errno::Eaddrinuse
                        },
                        rule: RefusalRule::GroupFull,
                        source: KernelSource::new(
                            "reuseport_grow",
                            "net/core/sock_reuseport.c",
                            self.profile.release,
                        ),
                        with: None,
                    };
                    if spec.proto == Proto::Udp {
                        self.unbind(i);
                    }
                    return Some(r);
                }
            }
        }
        self.set_listening(i, true);
        let tail = self.rules.v6_reuseport_tail && spec.reuseport && spec.family == Family::Inet6;
        for list in [
            self.port_list.entry((spec.proto, spec.port)).or_default(),
            self.addr_list
                .entry((spec.proto, bucket_addr(spec.addr), spec.port))
                .or_default(),
        ] {
            if tail {
                list.push_back(i);
            } else {
                list.push_front(i);
            }
        }
        None
    }

    /// A new, empty group for `spec`'s address; a TCP group migrates
    /// requests when the call log sets `tcp_migrate_req`.
    fn new_group(&mut self, spec: &SocketSpec, keys: Keys) -> usize {
        let gs = GroupSpec {
            v6only: spec.v6only,
            tcp_migrate_req: self.tcp_migrate_req && spec.proto == Proto::Tcp,
            ..GroupSpec::new(spec.proto, 0, spec.addr, spec.port, keys)
        };
        let mut group = ReuseportGroup::build_empty(self.profile, &gs);
        // The sysctl, where the era has it (5.14+): a listener shut down
        // then moves to the group's closed tail (reuseport_stop_listen_sock,
        // net/core/sock_reuseport.c). Before 5.14 there is no such sysctl
        // to set, and the group goes on without it.
        let _ = group.set_tcp_migrate_req(gs.tcp_migrate_req);
        self.groups.push(GroupEntry {
            group,
            members: Vec::new(),
        });
        let g = self.groups.len() - 1;
        self.groups_on
            .entry((spec.proto, spec.port, spec.addr))
            .or_default()
            .push(g);
        g
    }

    /// The group UDP socket `i` joins when connected sockets leave theirs
    /// (6.13+): that of the first socket it matches as
    /// `udp_reuseport_add_sock` walks the port slot from its head
    /// (net/ipv4/udp.c). `udp_lib_get_port` puts AF_INET6 SO_REUSEPORT
    /// sockets at the slot's tail (4.6, d894ba18d4e4: `v6_reuseport_tail`)
    /// and others at its head, so the walk meets AF_INET matches newest bind
    /// first and AF_INET6 ones (v4-mapped too) oldest first: an AF_INET6
    /// socket bound after a `connect()`ed one joins the earlier unconnected
    /// sockets' group, an AF_INET one the connected socket (recorded on
    /// 6.18.44; kernel_bind_rules.rs). A match outside any group gets a new
    /// one with itself as the first member (`reuseport_add_sock`,
    /// net/core/sock_reuseport.c).
    fn udp_group_to_join(&mut self, i: usize, keys: Keys) -> Option<usize> {
        let spec = self.socks[i].spec.clone();
        // The slot's order: sockets hashed at its head, newest first, then
        // those at its tail, oldest first (each placed by its SO_REUSEPORT
        // when it bound), which is the order of the address's list, kept
        // beside the port's by the same inserts ([`Host::receive`]).
        let j = self
            .addr_list
            .get(&(spec.proto, bucket_addr(spec.addr), spec.port))
            .into_iter()
            .flatten()
            .copied()
            .find(|&j| {
                let o = &self.socks[j];
                j != i && o.bound && !o.closed && o.listening && same_group(&o.spec, &spec)
            })?;
        if let Some(g) = self.socks[j].group {
            return Some(g);
        }
        let g = self.new_group(&self.socks[j].spec.clone(), keys);
        let entry = &mut self.groups[g];
        let joined = if self.socks[j].spec.state == SockState::Connected {
            entry.group.join_connected()
        } else {
            entry.group.join()
        };
        if joined.is_err() {
            return None;
        }
        if let Some(cpu) = self.socks[j].spec.incoming_cpu {
            let _ = entry.group.set_incoming_cpu(0, Some(cpu));
        }
        entry.members.push(j);
        self.socks[j].group = Some(g);
        self.socks[j].member = Some(0);
        Some(g)
    }
}
