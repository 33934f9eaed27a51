//! The reader at the edge for the socket-list form of a layout file,
//! `{sockets, listenOrder, closed}` ([`Layout`]): a [`CallLog`]
//! deserializes from it (or from `{calls}`), converted once, as the file is
//! read, into the calls it stands for ([`CallLog::from_layout`]). Nothing
//! past the reader takes a [`Layout`]: the host is stepped by calls.

use std::collections::BTreeSet;
use std::net::IpAddr;

use serde::Deserialize;

use super::calls::{default_peer, Call, CallLog, SockOpt, MAX_SOCKETS};
use super::types::{Family, Layout, LayoutError, SkLookup, SockState, SocketSpec};
use crate::hash::Keys;
use crate::profile::rules::Ephemeral;
use crate::tuple::Proto;

/// What a layout file may hold: a call log (`calls`), or the socket-list
/// form (`sockets`, `listenOrder`, `closed`), with the settings both share.
/// [`CallLog`] reads through it, so either form deserializes to a call log.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct LayoutFile {
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
                "give either calls or sockets/listenOrder/closed, not both".into(),
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

/// The SO_LINGER timeout (seconds) a TIME_WAIT socket of the socket-list form
/// closes with, so that `close()` waits for the peer's ACK of its FIN and
/// leaves a timewait socket, not a FIN_WAIT1 orphan (see [`Call::Close`]).
pub const TIME_WAIT_LINGER: u32 = 1;

impl CallLog {
    /// The calls the socket-list form `{sockets, listenOrder, closed}`
    /// stands for: per socket in order, `socket`, its options, an attach made
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
