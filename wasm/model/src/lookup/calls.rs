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
//! A layout file may also list its sockets (`{sockets, listenOrder,
//! closed}`): its reader converts that form into calls once, as the file
//! is read ([`super::layout_file`]); everything past the reader takes a
//! [`CallLog`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use serde::{Deserialize, Serialize};

use super::types::{Family, SkLookup};
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
#[serde(rename_all = "camelCase", try_from = "super::layout_file::LayoutFile")]
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

/// The peer a socket connects to when its description names none (a
/// TIME_WAIT socket of the socket-list form, a connected member of a
/// group spec): the discard port on loopback.
pub(super) fn default_peer(family: Family) -> SocketAddr {
    match family {
        Family::Inet => SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 9),
        Family::Inet6 => SocketAddr::new(Ipv6Addr::LOCALHOST.into(), 9),
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
