//! Which side of the pasted connections is the server: decided from the
//! evidence, never assumed.

use std::net::{IpAddr, SocketAddr};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::{Conn, Meaning};
use crate::tuple::{canonical, Tuple};

/// What decided which side is the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(rename_all = "camelCase")]
pub enum Basis {
    /// The user gave the listening port (and perhaps address).
    Bind,
    /// The paste's own LISTEN lines, all on one port.
    Listening,
    /// One port is on one side of every connection line (and no other port
    /// is).
    CommonPort,
    /// Every line's format says which endpoint is the client (a SYN, a
    /// SYN-ACK, conntrack's original direction, observed and page lines).
    Format,
    /// Nothing decides.
    None,
}

/// The decision: its basis, and the server's port and address when the
/// basis gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Decision {
    /// What decided.
    pub basis: Basis,
    /// The server's port (bind, listening and common-port bases).
    pub port: Option<u16>,
    /// The server's address, when one specific address is known.
    #[cfg_attr(feature = "ts", ts(as = "Option<String>"))]
    pub addr: Option<IpAddr>,
}

/// Why one connection could not be turned into a tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Undecided {
    /// Neither endpoint is on the server's port (and address).
    #[error("neither endpoint is on the server's port {port}, so this connection is not to the group; leave it out or give the right --bind")]
    NeitherOnPort {
        /// The server's port.
        port: u16,
    },
    /// Both endpoints are on the server's port.
    #[error("both endpoints are on port {port}, so the port cannot say which is the server; give the listening address with --bind ADDR:PORT")]
    BothOnPort {
        /// The server's port.
        port: u16,
    },
    /// Nothing says which side is the server.
    #[error("nothing says which side is the server: give the listening port (--bind ADDR:PORT), include the LISTEN lines, or paste more connections to one port")]
    NoBasis,
    /// The endpoints mix IPv4 and IPv6.
    #[error("the endpoints mix IPv4 and IPv6; a connection has one family")]
    MixedFamilies,
}

/// At most one value, or several.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen<T> {
    Nothing,
    Once(T),
    Many,
}

impl<T: PartialEq + Copy> Seen<T> {
    fn add(&mut self, v: T) {
        *self = match *self {
            Seen::Nothing => Seen::Once(v),
            Seen::Once(x) if x == v => Seen::Once(x),
            _ => Seen::Many,
        }
    }
    fn get(self) -> Option<T> {
        match self {
            Seen::Once(v) => Some(v),
            _ => None,
        }
    }
}

/// Gathers the evidence of a stream of lines in constant memory (two
/// candidate ports, one listening port and address, counts): no line is
/// kept, and each line costs O(1).
#[derive(Debug, Clone)]
pub struct Sides {
    bind: Option<(IpAddr, Option<u16>)>,
    listen_port: Seen<u16>,
    listen_addr: Seen<IpAddr>,
    /// The ports on one side of every connection so far (`None` before the
    /// first connection).
    common: Option<[Option<u16>; 2]>,
    conns: u64,
    undetermined: u64,
}

impl Sides {
    /// Starts with the user's bind (address, and port when given), if any.
    pub fn new(bind: Option<(IpAddr, Option<u16>)>) -> Sides {
        Sides {
            bind: bind.map(|(a, p)| (canonical(a), p)),
            listen_port: Seen::Nothing,
            listen_addr: Seen::Nothing,
            common: None,
            conns: 0,
            undetermined: 0,
        }
    }

    /// Counts a connection.
    pub fn add(&mut self, c: &Conn) {
        self.conns += 1;
        if !c.meaning.decides() {
            self.undetermined += 1;
        }
        let (pa, pb) = (c.a.port(), c.b.port());
        self.common = Some(match self.common {
            None => [Some(pa), (pb != pa).then_some(pb)],
            Some(cands) => cands.map(|x| x.filter(|&p| p == pa || p == pb)),
        });
    }

    /// Counts a listening socket.
    pub fn listening(&mut self, addr: SocketAddr) {
        self.listen_port.add(addr.port());
        self.listen_addr.add(canonical(addr.ip()));
    }

    /// How many connections were counted.
    pub fn conns(&self) -> u64 {
        self.conns
    }

    /// The decision the evidence so far supports.
    pub fn decide(&self) -> Decision {
        let specific = |a: IpAddr| (!a.is_unspecified()).then_some(a);
        if let Some((addr, Some(port))) = self.bind {
            return Decision {
                basis: Basis::Bind,
                port: Some(port),
                addr: specific(addr),
            };
        }
        if let Some(port) = self.listen_port.get() {
            return Decision {
                basis: Basis::Listening,
                port: Some(port),
                addr: self.listen_addr.get().and_then(specific),
            };
        }
        if let Some([Some(p), None] | [None, Some(p)]) = self.common {
            return Decision {
                basis: Basis::CommonPort,
                port: Some(p),
                addr: None,
            };
        }
        let basis = if self.conns > 0 && self.undetermined == 0 {
            Basis::Format
        } else {
            Basis::None
        };
        Decision {
            basis,
            port: None,
            addr: None,
        }
    }
}

impl Decision {
    /// The connection as a tuple, client first, by this decision; `flip`
    /// swaps client and server (the user's correction).
    pub fn orient(&self, c: &Conn, flip: bool) -> Result<Tuple, Undecided> {
        let (a, b) = (
            SocketAddr::new(canonical(c.a.ip()), c.a.port()),
            SocketAddr::new(canonical(c.b.ip()), c.b.port()),
        );
        if a.is_ipv4() != b.is_ipv4() {
            return Err(Undecided::MixedFamilies);
        }
        let a_is_client = match (self.basis, self.port) {
            (Basis::Bind | Basis::Listening | Basis::CommonPort, Some(port)) => {
                let on = |s: SocketAddr| s.port() == port && self.addr.is_none_or(|x| x == s.ip());
                match (on(a), on(b)) {
                    (false, true) => true,
                    (true, false) => false,
                    (true, true) => return Err(Undecided::BothOnPort { port }),
                    (false, false) => return Err(Undecided::NeitherOnPort { port }),
                }
            }
            (Basis::Format, _) => match c.meaning {
                Meaning::ClientFirst => true,
                Meaning::ServerFirst => false,
                Meaning::LocalFirst | Meaning::Unknown => return Err(Undecided::NoBasis),
            },
            _ => return Err(Undecided::NoBasis),
        };
        let (client, server) = if a_is_client != flip { (a, b) } else { (b, a) };
        Ok(Tuple {
            saddr: client.ip(),
            sport: client.port(),
            daddr: server.ip(),
            dport: server.port(),
        })
    }
}
