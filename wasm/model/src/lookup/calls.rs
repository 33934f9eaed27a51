//! A layout as a program makes it: an ordered log of socket calls.
//!
//! Each [`Call`] is one system call on one socket; sockets are numbered by
//! their `socket()` call (the first `socket` is fd 0, the next fd 1, ...).
//! [`super::Host::run`] replays the calls in order, keeping what the kernel
//! keeps between them (the bind bucket's fast-reuse state, the groups, the
//! listening lists), and answers each call with `None` (ok) or a
//! [`Refusal`](crate::message::Refusal) (errno and rule).
//!
//! ```json
//! {"calls": [
//!   {"call": "socket", "family": "inet", "proto": "tcp"},
//!   {"call": "setsockopt", "fd": 0, "opt": {"reuseport": true}},
//!   {"call": "bind", "fd": 0, "addr": "127.0.0.1", "port": 8080},
//!   {"call": "listen", "fd": 0}
//! ]}
//! ```
//!
//! The earlier form, `{sockets, listenOrder, closed}` ([`Layout`]), is read
//! too: a [`CallLog`] deserializes from either, the earlier one converted
//! by [`CallLog::from_layout`] into the calls it stood for.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use serde::{Deserialize, Serialize};

use super::types::{Family, Layout, LayoutError, SkLookup, SockState, SocketSpec};
use crate::error::{GroupError, SetupError};
use crate::hash::Keys;
use crate::profile::rules::Ephemeral;
use crate::profile::Profile;
use crate::reuseport::{GroupSpec, Program, ReuseportGroup};
use crate::tuple::Proto;

/// The most sockets a call log creates: an input bound of the model (the
/// default `fs.nr_open` is 1 << 20; a layout is a handful of sockets).
pub const MAX_SOCKETS: usize = 1 << 16;
/// The most calls in one log.
pub const MAX_CALLS: usize = 1 << 18;

/// A socket option set with `setsockopt()`, by its kernel name:
/// `{"reuseport": true}`, `{"bindtodevice": "lo"}`, `{"incomingCpu": 2}`,
/// `{"linger": 1}`, `{"attachReuseport": {"kind": "cpu"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum SockOpt {
    /// SO_REUSEADDR.
    Reuseaddr(bool),
    /// SO_REUSEPORT.
    Reuseport(bool),
    /// IPV6_V6ONLY (AF_INET6, before `bind()`).
    V6only(bool),
    /// SO_BINDTODEVICE, by name; `null` unbinds.
    Bindtodevice(Option<String>),
    /// SO_INCOMING_CPU. The kernel reads an int: 4294967295 (-1) and any
    /// value of 2^31 or more is negative, which unsets it.
    IncomingCpu(u32),
    /// SO_LINGER: on with this timeout in seconds, or `null` for off (the
    /// default). It changes what `close()` of a connected TCP socket leaves
    /// on its port (see [`Call::Close`]).
    Linger(Option<u32>),
    /// SO_ATTACH_REUSEPORT_CBPF/EBPF: a program for the socket's group.
    AttachReuseport(Program),
}

/// One system call of a call log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(
    tag = "call",
    rename_all = "lowercase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Call {
    /// `socket(family, SOCK_STREAM or SOCK_DGRAM, 0)`, made by owner `uid`
    /// (`sock_i_uid`, the creator's fsuid). Its fd is the number of
    /// `socket` calls before it.
    Socket {
        /// AF_INET or AF_INET6.
        family: Family,
        /// TCP or UDP.
        proto: Proto,
        /// Owner UID.
        #[serde(default)]
        uid: u32,
    },
    /// `setsockopt(fd, opt)`.
    Setsockopt {
        /// The socket.
        fd: usize,
        /// The option and its value.
        opt: SockOpt,
    },
    /// `bind(fd, addr, port)`: IPv4 for AF_INET; IPv6 (`::ffff:a.b.c.d` for
    /// a v4-mapped bind) for AF_INET6; port 0 draws from the ephemeral range.
    Bind {
        /// The socket.
        fd: usize,
        /// The address.
        #[cfg_attr(feature = "ts", ts(as = "String"))]
        addr: IpAddr,
        /// The port.
        port: u16,
    },
    /// `listen(fd)` (TCP).
    Listen {
        /// The socket.
        fd: usize,
    },
    /// `connect(fd, addr, port)`: a UDP socket then receives only from that
    /// peer; a TCP socket is taken to reach an established connection.
    Connect {
        /// The socket.
        fd: usize,
        /// The peer's address.
        #[cfg_attr(feature = "ts", ts(as = "String"))]
        addr: IpAddr,
        /// The peer's port.
        port: u16,
    },
    /// `shutdown(fd, SHUT_RDWR)`: a TCP listener stops listening but stays
    /// bound (and, with `tcpMigrateReq` from 5.14, stays in its group's
    /// closed tail).
    Shutdown {
        /// The socket.
        fd: usize,
    },
    /// `close(fd)`. A TCP socket with an established connection (whose
    /// peer, never closed in a call log, stays open) sends its FIN and
    /// stays on its port: without SO_LINGER as an orphan in FIN_WAIT1, a
    /// full socket of its owner's UID, until the peer's ACK comes, which
    /// is after the calls that follow at once; with SO_LINGER on and a
    /// timeout, `close()` waits for that ACK and leaves a timewait socket
    /// (FIN_WAIT2, held like TIME_WAIT); with a zero timeout it sends a
    /// reset and leaves nothing. Any other socket leaves its lists and
    /// group.
    Close {
        /// The socket.
        fd: usize,
    },
}

impl Call {
    /// The socket the call acts on (`None` for `socket`, which makes one).
    pub fn fd(&self) -> Option<usize> {
        match self {
            Call::Socket { .. } => None,
            Call::Setsockopt { fd, .. }
            | Call::Bind { fd, .. }
            | Call::Listen { fd }
            | Call::Connect { fd, .. }
            | Call::Shutdown { fd }
            | Call::Close { fd } => Some(*fd),
        }
    }
}

/// A host's sockets as the calls that made them, with the settings that
/// are not calls on a socket.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", try_from = "LayoutFile")]
pub struct CallLog {
    /// The calls, in the order the program makes them.
    pub calls: Vec<Call>,
    /// An `sk_lookup` program (5.9+); `socket` is an fd.
    #[serde(default)]
    pub sk_lookup: Option<SkLookup>,
    /// The hash keys.
    #[serde(default)]
    pub keys: Keys,
    /// `net.ipv4.ip_local_port_range` and `ip_autobind_reuse`, for port 0.
    #[serde(default)]
    pub ephemeral: Option<Ephemeral>,
    /// `net.ipv4.tcp_migrate_req` (5.14+).
    #[serde(default)]
    pub tcp_migrate_req: bool,
    /// The network devices of the namespace besides `lo`, which every one
    /// has (a fresh namespace has `lo` alone): SO_BINDTODEVICE with any
    /// other name fails with ENODEV.
    #[serde(default)]
    pub devices: Vec<String>,
}

/// What a layout file may hold: a call log (`calls`), or the earlier form
/// (`sockets`, `listenOrder`, `closed`), with the settings both share.
/// [`CallLog`] reads through it, so either form deserializes to a call log.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LayoutFile {
    #[serde(default)]
    calls: Option<Vec<Call>>,
    #[serde(default)]
    sockets: Option<Vec<SocketSpec>>,
    #[serde(default)]
    listen_order: Option<Vec<usize>>,
    #[serde(default)]
    closed: Option<Vec<usize>>,
    #[serde(default)]
    sk_lookup: Option<SkLookup>,
    #[serde(default)]
    keys: Keys,
    #[serde(default)]
    ephemeral: Option<Ephemeral>,
    #[serde(default)]
    tcp_migrate_req: bool,
    #[serde(default)]
    devices: Vec<String>,
}

impl TryFrom<LayoutFile> for CallLog {
    type Error = LayoutError;

    fn try_from(f: LayoutFile) -> Result<CallLog, LayoutError> {
        let legacy = f.sockets.is_some() || f.listen_order.is_some() || f.closed.is_some();
        match (f.calls, legacy) {
            (Some(_), true) => Err(LayoutError::Calls(
                "give either calls or the earlier sockets/listenOrder/closed, not both".into(),
            )),
            (Some(calls), false) => Ok(CallLog {
                calls,
                sk_lookup: f.sk_lookup,
                keys: f.keys,
                ephemeral: f.ephemeral,
                tcp_migrate_req: f.tcp_migrate_req,
                devices: f.devices,
            }),
            (None, _) => {
                let Some(sockets) = f.sockets else {
                    return Err(LayoutError::Calls(
                        "missing: a layout lists its calls ({\"calls\": [{\"call\": \"socket\", ...}, ...]})".into(),
                    ));
                };
                let mut log = CallLog::from_layout(&Layout {
                    sockets,
                    listen_order: f.listen_order,
                    sk_lookup: f.sk_lookup,
                    keys: f.keys,
                    ephemeral: f.ephemeral,
                    closed: f.closed.unwrap_or_default(),
                })?;
                log.tcp_migrate_req = f.tcp_migrate_req;
                log.devices = f.devices;
                Ok(log)
            }
        }
    }
}

/// The SO_LINGER timeout (seconds) a TIME_WAIT socket of the earlier form
/// closes with, so that `close()` waits for the peer's ACK of its FIN and
/// leaves a timewait socket, not a FIN_WAIT1 orphan (see [`Call::Close`]).
pub const TIME_WAIT_LINGER: u32 = 1;

/// The peer a TIME_WAIT socket of the earlier form is taken to have
/// connected to when it names none: the discard port on loopback.
fn default_peer(family: Family) -> SocketAddr {
    match family {
        Family::Inet => SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 9),
        Family::Inet6 => SocketAddr::new(Ipv6Addr::LOCALHOST.into(), 9),
    }
}

impl CallLog {
    /// The calls the earlier `{sockets, listenOrder, closed}` form stood
    /// for: per socket in order, `socket`, its options, an attach made
    /// before bind, `bind`, then (without `listenOrder`) at once its
    /// `listen` (TCP), `connect` (connected UDP) or `connect`, SO_LINGER
    /// on and `close` (TIME_WAIT: a close that waits for the peer's ACK
    /// leaves the timewait socket), and a later attach; with `listenOrder`, the listens
    /// come after every bind, in that order; then the `closed` sockets
    /// close in order.
    pub fn from_layout(l: &Layout) -> Result<CallLog, LayoutError> {
        if l.sockets.len() > MAX_SOCKETS {
            return Err(LayoutError::Calls(format!(
                "the layout has {} sockets; at most {MAX_SOCKETS}",
                l.sockets.len()
            )));
        }
        for (i, s) in l.sockets.iter().enumerate() {
            let bad = |problem: String| Err(LayoutError::Socket { socket: i, problem });
            match (s.family, s.addr) {
                (Family::Inet, IpAddr::V6(_)) => {
                    return bad(format!(
                        "an AF_INET socket cannot bind the IPv6 address {}; use family inet6",
                        s.addr
                    ))
                }
                (Family::Inet6, IpAddr::V4(_)) => {
                    return bad(format!(
                        "an AF_INET6 socket binds IPv4 addresses as ::ffff:{}",
                        s.addr
                    ))
                }
                _ => {}
            }
            if s.state == SockState::Connected && (s.proto != Proto::Udp || s.peer.is_none()) {
                return bad("state connected is for UDP sockets and needs a peer address".into());
            }
            if s.state == SockState::Connected && s.addr.is_unspecified() {
                return bad("a connected UDP socket takes its source address as its bound address: give that address instead of the wildcard".into());
            }
            if s.state == SockState::TimeWait && s.proto != Proto::Tcp {
                return bad("TIME_WAIT is a TCP state".into());
            }
        }
        let mut seen = BTreeSet::new();
        for &i in &l.closed {
            if !seen.insert(i) {
                return Err(LayoutError::Closed(format!(
                    "lists socket {i} twice; a socket closes once"
                )));
            }
            if i >= l.sockets.len() {
                return Err(LayoutError::Closed(format!(
                    "names socket {i}, but the layout has {}",
                    l.sockets.len()
                )));
            }
        }
        let tcp_listeners: Vec<usize> = (0..l.sockets.len())
            .filter(|&i| {
                l.sockets[i].proto == Proto::Tcp && l.sockets[i].state == SockState::Listen
            })
            .collect();
        if let Some(o) = &l.listen_order {
            let mut sorted = o.clone();
            sorted.sort_unstable();
            if sorted != tcp_listeners {
                return Err(LayoutError::ListenOrder(format!(
                    "must list each TCP socket in state listen exactly once ({tcp_listeners:?}); got {o:?}"
                )));
            }
        }
        let mut calls = Vec::new();
        let later = l.listen_order.is_some();
        for (fd, s) in l.sockets.iter().enumerate() {
            calls.push(Call::Socket {
                family: s.family,
                proto: s.proto,
                uid: s.uid,
            });
            let mut opt = |opt: SockOpt| calls.push(Call::Setsockopt { fd, opt });
            if s.reuseaddr {
                opt(SockOpt::Reuseaddr(true));
            }
            if s.reuseport {
                opt(SockOpt::Reuseport(true));
            }
            if s.v6only {
                opt(SockOpt::V6only(true));
            }
            if let Some(d) = &s.device {
                opt(SockOpt::Bindtodevice(Some(d.clone())));
            }
            if let Some(cpu) = s.incoming_cpu {
                opt(SockOpt::IncomingCpu(cpu));
            }
            let attach = s.program.clone().map(SockOpt::AttachReuseport);
            if s.program_before_bind {
                if let Some(a) = attach.clone() {
                    opt(a);
                }
            }
            calls.push(Call::Bind {
                fd,
                addr: s.addr,
                port: s.port,
            });
            match s.state {
                SockState::Listen if s.proto == Proto::Tcp && !later => {
                    calls.push(Call::Listen { fd })
                }
                SockState::Connected | SockState::TimeWait => {
                    let peer = s.peer.unwrap_or_else(|| default_peer(s.family));
                    calls.push(Call::Connect {
                        fd,
                        addr: peer.ip(),
                        port: peer.port(),
                    });
                    if s.state == SockState::TimeWait {
                        calls.push(Call::Setsockopt {
                            fd,
                            opt: SockOpt::Linger(Some(TIME_WAIT_LINGER)),
                        });
                        calls.push(Call::Close { fd });
                    }
                }
                _ => {}
            }
            let listens_later = later && tcp_listeners.contains(&fd);
            if !s.program_before_bind && !listens_later {
                if let Some(a) = attach {
                    calls.push(Call::Setsockopt { fd, opt: a });
                }
            }
        }
        for &fd in l.listen_order.iter().flatten() {
            calls.push(Call::Listen { fd });
            let s = &l.sockets[fd];
            if let (Some(p), false) = (&s.program, s.program_before_bind) {
                calls.push(Call::Setsockopt {
                    fd,
                    opt: SockOpt::AttachReuseport(p.clone()),
                });
            }
        }
        for &fd in &l.closed {
            // A TIME_WAIT socket's fd is already closed.
            if l.sockets[fd].state != SockState::TimeWait {
                calls.push(Call::Close { fd });
            }
        }
        Ok(CallLog {
            calls,
            sk_lookup: l.sk_lookup.clone(),
            keys: l.keys,
            ephemeral: l.ephemeral,
            tcp_migrate_req: false,
            devices: Vec::new(),
        })
    }
}

impl CallLog {
    /// [`CallLog::from_group`] for a spec that must name a group: at least
    /// one listener and at most [`MAX_SOCKETS`], every listener it names
    /// among them, connections only for UDP members, shutdowns only for
    /// TCP ones, and `tcpMigrateReq` only where the sysctl exists. These
    /// are the shorthand's own words; what the kernel then refuses is in
    /// the replayed host's answers.
    pub fn from_group_checked(
        profile: &'static Profile,
        spec: &GroupSpec,
    ) -> Result<CallLog, SetupError> {
        if spec.listeners == 0 {
            return Err(SetupError::NoListeners);
        }
        if spec.listeners as usize > MAX_SOCKETS {
            return Err(SetupError::TooManyListeners {
                given: spec.listeners,
                max: MAX_SOCKETS as u32,
            });
        }
        ReuseportGroup::empty(profile, spec.proto, spec.bind, spec.port, spec.keys)
            .set_tcp_migrate_req(spec.tcp_migrate_req)?;
        let named = spec
            .closed
            .iter()
            .chain(&spec.shutdown)
            .chain(&spec.connected)
            .chain(spec.incoming_cpu.iter().map(|p| &p.listener));
        for &listener in named {
            if listener >= spec.listeners {
                return Err(GroupError::NoSuchListener {
                    listener,
                    count: spec.listeners,
                    order: spec.proto.join_call(),
                }
                .into());
            }
        }
        let only = |what: &str, why: &str| -> Result<(), SetupError> {
            Err(GroupError::Unsupported {
                what: what.into(),
                why: why.into(),
            }
            .into())
        };
        if !spec.connected.is_empty() && spec.proto != Proto::Udp {
            only(
                "connect() on a member",
                "only UDP members connect; a TCP listener cannot",
            )?;
        }
        if !spec.shutdown.is_empty() && spec.proto != Proto::Tcp {
            only(
                "shutdown of a member",
                "a UDP socket stays bound after shutdown(); close it instead",
            )?;
        }
        Ok(CallLog::from_group(spec))
    }

    /// The calls a program makes for the group a [`GroupSpec`] describes,
    /// in the order [`crate::ReuseportGroup::build`] applies them: per
    /// listener `socket` (AF_INET for an IPv4 address, AF_INET6 for an
    /// IPv6 one), SO_REUSEPORT, IPV6_V6ONLY when asked, `bind` and, for
    /// TCP, `listen`, so fd `i` is listener `i`; then the SO_INCOMING_CPU
    /// pins, the `connect`s of connected UDP members (to the discard port
    /// on loopback: the peer decides nothing of the group's choice), the
    /// program attached through fd 0, the `close`s and the `shutdown`s.
    /// One owner (UID 0) makes them all.
    pub fn from_group(spec: &GroupSpec) -> CallLog {
        let family = match spec.bind {
            IpAddr::V4(_) => Family::Inet,
            IpAddr::V6(_) => Family::Inet6,
        };
        let n = spec.listeners as usize;
        let mut calls = Vec::with_capacity(4 * n);
        for fd in 0..n {
            calls.push(Call::Socket {
                family,
                proto: spec.proto,
                uid: 0,
            });
            calls.push(Call::Setsockopt {
                fd,
                opt: SockOpt::Reuseport(true),
            });
            if spec.v6only && family == Family::Inet6 {
                calls.push(Call::Setsockopt {
                    fd,
                    opt: SockOpt::V6only(true),
                });
            }
            calls.push(Call::Bind {
                fd,
                addr: spec.bind,
                port: spec.port,
            });
            if spec.proto == Proto::Tcp {
                calls.push(Call::Listen { fd });
            }
        }
        for pin in &spec.incoming_cpu {
            calls.push(Call::Setsockopt {
                fd: pin.listener as usize,
                opt: SockOpt::IncomingCpu(pin.cpu),
            });
        }
        for &l in &spec.connected {
            let peer = default_peer(family);
            calls.push(Call::Connect {
                fd: l as usize,
                addr: peer.ip(),
                port: peer.port(),
            });
        }
        if let Some(p) = &spec.program {
            calls.push(Call::Setsockopt {
                fd: 0,
                opt: SockOpt::AttachReuseport(p.clone()),
            });
        }
        calls.extend(spec.closed.iter().map(|&l| Call::Close { fd: l as usize }));
        calls.extend(
            spec.shutdown
                .iter()
                .map(|&l| Call::Shutdown { fd: l as usize }),
        );
        CallLog {
            calls,
            sk_lookup: None,
            keys: spec.keys,
            ephemeral: None,
            tcp_migrate_req: spec.tcp_migrate_req,
            devices: Vec::new(),
        }
    }
}
