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
    /// Each line by its own evidence: the format's direction where it says
    /// one, else a system or well-known service port against an ephemeral
    /// one ([`port_rule`]); a line with neither is undecided.
    PerLine,
    /// A system port (below 1024) against a port of 1024 or more: the
    /// system port is the server's (a line's basis under [`Basis::PerLine`]).
    SystemPort,
    /// A well-known service port ([`SERVICE_PORTS`]: 3306, 5432, 6379,
    /// 8080, …) against an ephemeral port (32768 or more): the service port
    /// is the server's (a line's basis under [`Basis::PerLine`]).
    ServicePort,
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
    /// Under [`Basis::PerLine`]: the paste's listening ports that its
    /// connections use, each deciding the lines on it.
    #[serde(skip)]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub listening: ListenPorts,
}

/// Up to [`ListenPorts::MAX`] listening ports, inline so [`Decision`] stays
/// `Copy`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListenPorts {
    len: u8,
    ports: [u16; ListenPorts::MAX],
}

impl ListenPorts {
    /// The most ports kept; a paste whose connections use more listening
    /// ports is decided line by line without them.
    pub const MAX: usize = 16;

    /// The ports.
    pub fn ports(&self) -> &[u16] {
        &self.ports[..self.len as usize]
    }

    fn push(&mut self, p: u16) -> bool {
        if (self.len as usize) < Self::MAX {
            self.ports[self.len as usize] = p;
            self.len += 1;
            true
        } else {
            false
        }
    }
}

/// Well-known service ports of 1024 and above, which servers listen on and
/// clients do not connect from (IANA's registrations of the common
/// databases, brokers, proxies and web ports).
pub const SERVICE_PORTS: [u16; 34] = [
    1080, 1433, 1521, 1883, 2049, 2181, 2379, 2380, 3000, 3306, 3389, 4222, 5000, 5222, 5432, 5672,
    5900, 6379, 6443, 7000, 8000, 8080, 8443, 8888, 9000, 9042, 9090, 9092, 9200, 9300, 11211,
    15672, 25565, 27017,
];

/// The lowest ephemeral port of the Linux default `ip_local_port_range`
/// (32768 60999) and of the IANA range (49152) both: a port at or above it
/// against a service port is the client's.
pub const EPHEMERAL_LOW: u16 = 32768;

/// Which endpoint the ports alone say is the server: `Some((a_is_server,
/// basis))`, or `None` when they do not.
pub fn port_rule(a: u16, b: u16) -> Option<(bool, Basis)> {
    let system = |p: u16| p < 1024;
    let service = |p: u16| SERVICE_PORTS.contains(&p);
    let ephemeral = |p: u16| p >= EPHEMERAL_LOW && !service(p);
    if system(a) && !system(b) {
        Some((true, Basis::SystemPort))
    } else if system(b) && !system(a) {
        Some((false, Basis::SystemPort))
    } else if service(a) && ephemeral(b) {
        Some((true, Basis::ServicePort))
    } else if service(b) && ephemeral(a) {
        Some((false, Basis::ServicePort))
    } else {
        None
    }
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

/// The most listening ports [`Sides`] keeps apart; LISTEN lines on further
/// ports are not counted.
pub const MAX_LISTENING: usize = 1024;

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
/// candidate ports, the listening ports and their addresses, a counter per
/// port, counts): no line is kept, and each line costs O(1) (a LISTEN line
/// O([`MAX_LISTENING`])).
#[derive(Debug, Clone)]
pub struct Sides {
    bind: Option<(IpAddr, Option<u16>)>,
    /// Listening ports, each with its address (at most [`MAX_LISTENING`]).
    listening: Vec<(u16, Seen<IpAddr>)>,
    /// Connections with an endpoint on each port (65,536 counters, so a
    /// LISTEN line decides only for the ports the connections use, in
    /// whatever order the lines come).
    on_port: Vec<u32>,
    /// Connections whose own line decides (a direction or the ports).
    per_line: u64,
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
            listening: Vec::new(),
            on_port: vec![0; 1 << 16],
            per_line: 0,
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
        if c.meaning.decides() || port_rule(pa, pb).is_some() {
            self.per_line += 1;
        }
        for p in [pa, pb] {
            self.on_port[p as usize] = self.on_port[p as usize].saturating_add(1);
        }
        self.common = Some(match self.common {
            None => [Some(pa), (pb != pa).then_some(pb)],
            Some(cands) => cands.map(|x| x.filter(|&p| p == pa || p == pb)),
        });
    }

    /// Counts a listening socket.
    pub fn listening(&mut self, addr: SocketAddr) {
        let ip = canonical(addr.ip());
        if let Some((_, a)) = self.listening.iter_mut().find(|(p, _)| *p == addr.port()) {
            a.add(ip);
        } else if self.listening.len() < MAX_LISTENING {
            let mut a = Seen::Nothing;
            a.add(ip);
            self.listening.push((addr.port(), a));
        }
    }

    /// How many connections were counted.
    pub fn conns(&self) -> u64 {
        self.conns
    }

    /// The decision the evidence so far supports.
    pub fn decide(&self) -> Decision {
        let specific = |a: IpAddr| (!a.is_unspecified()).then_some(a);
        let decision = |basis, port, addr| Decision {
            basis,
            port,
            addr,
            listening: ListenPorts::default(),
        };
        if let Some((addr, Some(port))) = self.bind {
            return decision(Basis::Bind, Some(port), specific(addr));
        }
        // The LISTEN lines on ports the connections use. One such port in
        // every connection decides them all; otherwise each decides the
        // lines on it, and LISTEN lines on other ports (a host that also
        // listens elsewhere, a client's own listeners) decide nothing.
        let used: Vec<&(u16, Seen<IpAddr>)> = self
            .listening
            .iter()
            .filter(|(p, _)| self.on_port[*p as usize] > 0)
            .collect();
        if let [&(port, addr)] = used[..] {
            if u64::from(self.on_port[port as usize]) == self.conns {
                return decision(Basis::Listening, Some(port), addr.get().and_then(specific));
            }
        }
        if let Some([Some(p), None] | [None, Some(p)]) = self.common {
            return decision(Basis::CommonPort, Some(p), None);
        }
        let mut listening = ListenPorts::default();
        let kept = used.iter().all(|(p, _)| listening.push(*p));
        let basis = if self.conns > 0 && self.undetermined == 0 {
            Basis::Format
        } else if self.per_line > 0 || (kept && !used.is_empty()) {
            Basis::PerLine
        } else {
            Basis::None
        };
        Decision {
            listening: if kept {
                listening
            } else {
                ListenPorts::default()
            },
            ..decision(basis, None, None)
        }
    }
}

impl Decision {
    /// What decides one line under [`Basis::PerLine`]: a listening port
    /// the connections use on one end only, else the ports
    /// ([`port_rule`]).
    fn per_line(&self, a: u16, b: u16) -> Option<(bool, Basis)> {
        let l = self.listening.ports();
        match (l.contains(&a), l.contains(&b)) {
            (true, false) => Some((true, Basis::Listening)),
            (false, true) => Some((false, Basis::Listening)),
            _ => port_rule(a, b),
        }
    }

    /// The connection as a tuple, client first, by this decision; `flip`
    /// swaps client and server (the user's correction).
    pub fn orient(&self, c: &Conn, flip: bool) -> Result<Tuple, Undecided> {
        self.orient_basis(c, flip).map(|(t, _)| t)
    }

    /// [`Decision::orient`], with what decided this line: the decision's
    /// basis, or under [`Basis::PerLine`] the line's own ([`Basis::Format`],
    /// [`Basis::SystemPort`], [`Basis::ServicePort`]).
    pub fn orient_basis(&self, c: &Conn, flip: bool) -> Result<(Tuple, Basis), Undecided> {
        let (a, b) = (
            SocketAddr::new(canonical(c.a.ip()), c.a.port()),
            SocketAddr::new(canonical(c.b.ip()), c.b.port()),
        );
        if a.is_ipv4() != b.is_ipv4() {
            return Err(Undecided::MixedFamilies);
        }
        let mut basis = self.basis;
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
            (Basis::Format | Basis::PerLine, _) => match c.meaning {
                Meaning::ClientFirst => {
                    basis = Basis::Format;
                    true
                }
                Meaning::ServerFirst => {
                    basis = Basis::Format;
                    false
                }
                Meaning::LocalFirst | Meaning::Unknown => match self.per_line(a.port(), b.port()) {
                    Some((a_is_server, by)) if self.basis == Basis::PerLine => {
                        basis = by;
                        !a_is_server
                    }
                    _ => return Err(Undecided::NoBasis),
                },
            },
            _ => return Err(Undecided::NoBasis),
        };
        let (client, server) = if a_is_client != flip { (a, b) } else { (b, a) };
        let t = Tuple {
            saddr: client.ip(),
            sport: client.port(),
            daddr: server.ip(),
            dport: server.port(),
        };
        Ok((t, basis))
    }
}
