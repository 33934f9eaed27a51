//! The walk: one packet through `sk_lookup`, the 4-tuple hash and the
//! listener tables, scoring each candidate and asking its group.

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};

use super::bucket::bucket_addr;
use super::host::Host;
use super::types::{
    as_v6, Candidate, GroupPick, LookupExplain, Packet, SkLookup, SockState, TableWalk,
};
use crate::hash::{self, hex};
use crate::jhash::{next_pseudo_random32, reciprocal_scale};
use crate::message::{
    CandidateOutcome, Fallback, KernelSource, LaddrReason, LookupReason, Note, SkLookupOutcome,
    TableName,
};
use crate::profile::rules::{ScanRule, TcpTables, UdpTables};
use crate::reuseport::GroupAnswer;
use crate::tuple::{unspecified_like, Proto};

/// The list of a port or address no socket receives on.
static NO_SOCKETS: VecDeque<usize> = VecDeque::new();

impl Host {
    /// Looks up one packet.
    pub fn lookup(&self, p: &Packet) -> LookupExplain {
        let mut x = LookupExplain {
            profile: self.profile.release,
            packet: p.clone(),
            sk_lookup: None,
            tables: Vec::new(),
            group: None,
            socket: None,
            reason: None,
            notes: vec![Note::TablesHoldOnlyThisPort],
        };
        let t = p.tuple;
        let zero = unspecified_like(t.daddr);
        match p.proto {
            Proto::Tcp => {
                if self.run_sk_lookup(p, &mut x) {
                    return x;
                }
                match self.rules.tcp_tables {
                    TcpTables::Lhash2 => {
                        if self.walk_addr(p, t.daddr, t.daddr, &mut x) {
                            return x;
                        }
                        self.walk_addr(p, zero, zero, &mut x);
                    }
                    TcpTables::PortList => {
                        self.walk_port(p, &mut x);
                    }
                    TcpTables::PortListOrLhash2 => {
                        let count = self
                            .port_list
                            .get(&(p.proto, t.dport))
                            .map_or(0, VecDeque::len);
                        if count <= 10 {
                            x.notes.push(Note::PortListWalked {
                                count: count as u32,
                            });
                            self.walk_port(p, &mut x);
                        } else {
                            x.notes.push(Note::Lhash2Walked {
                                count: count as u32,
                            });
                            if !self.walk_addr(p, t.daddr, t.daddr, &mut x) {
                                // 4.16–4.20 pass the real daddr to the wildcard bucket scan too.
                                self.walk_addr(p, zero, t.daddr, &mut x);
                            }
                        }
                    }
                }
            }
            Proto::Udp => match self.rules.udp_tables {
                UdpTables::Hash2 if self.hash4(p, &mut x) => {}
                UdpTables::Hash2 => {
                    let found = self.walk_addr(p, t.daddr, t.daddr, &mut x);
                    let connected = x
                        .socket
                        .is_some_and(|s| self.socks[s].spec.state == SockState::Connected);
                    if found && connected {
                        return x;
                    }
                    if self.run_sk_lookup(p, &mut x) {
                        return x;
                    }
                    if found || x.socket.is_some() {
                        return x;
                    }
                    self.walk_addr(p, zero, zero, &mut x);
                }
                UdpTables::PortSlotOrHash2 => {
                    let count = self
                        .port_list
                        .get(&(p.proto, t.dport))
                        .map_or(0, VecDeque::len);
                    if count > 10 {
                        x.notes.push(Note::Hash2Walked {
                            count: count as u32,
                        });
                        if !self.walk_addr(p, t.daddr, t.daddr, &mut x) {
                            let wild_laddr = match self.profile.udp_wildcard_laddr {
                                crate::profile::WildcardLaddr::Daddr => t.daddr,
                                _ => zero,
                            };
                            self.walk_addr_with(p, zero, zero, wild_laddr, &mut x);
                        }
                    } else {
                        self.walk_port(p, &mut x);
                    }
                }
            },
        }
        if x.socket.is_none() && x.reason.is_none() {
            x.reason = Some(match p.proto {
                Proto::Tcp => LookupReason::NoListener,
                Proto::Udp => LookupReason::NoSocket,
            });
        }
        x
    }

    /// The 4-tuple hash of connected UDP sockets (6.13+), looked up before
    /// hash2: a socket connected to the packet's source, bound to its
    /// destination, receives it (`udp4_lib_lookup4`, net/ipv4/udp.c;
    /// `udp6_lib_lookup4`, net/ipv6/udp.c). Returns true when one matched.
    fn hash4(&self, p: &Packet, x: &mut LookupExplain) -> bool {
        if !self.rules.udp_connect_leaves_group {
            return false;
        }
        let t = p.tuple;
        let found = self.port_list.get(&(Proto::Udp, t.dport)).and_then(|l| {
            l.iter().copied().find(|&i| {
                let s = &self.socks[i].spec;
                s.state == SockState::Connected
                    && s.peer == Some(SocketAddr::new(t.saddr, t.sport))
                    && as_v6(s.addr) == as_v6(t.daddr)
                    && self.score(i, p, t.daddr) >= 0
            })
        });
        if let Some(i) = found {
            x.socket = Some(i);
            x.reason = Some(LookupReason::BestScore { socket: i });
        }
        found.is_some()
    }

    /// BPF sk_lookup (5.9+). Returns true when it decided.
    fn run_sk_lookup(&self, p: &Packet, x: &mut LookupExplain) -> bool {
        let Some(prog) = &self.sk_lookup else {
            return false;
        };
        match prog {
            SkLookup::Pass => {
                x.sk_lookup = Some(SkLookupOutcome::Passed);
                false
            }
            SkLookup::Drop => {
                x.sk_lookup = Some(SkLookupOutcome::Dropped);
                x.reason = Some(LookupReason::SkLookupDropped);
                true
            }
            SkLookup::Assign {
                socket,
                no_reuseport,
            } => {
                let s = *socket;
                let sock = &self.socks[s];
                if !sock.listening || sock.spec.proto != p.proto {
                    x.sk_lookup = Some(SkLookupOutcome::Unusable { socket: s });
                    return false;
                }
                let source = KernelSource::new(
                    "inet_lookup_run_sk_lookup",
                    "net/ipv4/inet_hashtables.c",
                    self.profile.release,
                );
                x.sk_lookup = Some(if *no_reuseport {
                    SkLookupOutcome::AssignedNoReuseport { socket: s, source }
                } else {
                    SkLookupOutcome::Assigned { socket: s, source }
                });
                if !no_reuseport && sock.spec.reuseport {
                    if let Some(g) = sock.group {
                        // The reuseport hash uses the real destination here.
                        if let Some((sk, pick)) =
                            self.group_select(g, p, p.tuple.daddr, LaddrReason::SkLookupReselect)
                        {
                            x.group = Some(pick);
                            if let Some(sk) = sk {
                                x.socket = Some(sk);
                                x.reason = Some(LookupReason::SkLookupGroupPicked {
                                    assigned: s,
                                    socket: sk,
                                });
                                return true;
                            }
                        }
                    }
                }
                x.socket = Some(s);
                x.reason = Some(LookupReason::SkLookupAssigned { socket: s });
                true
            }
        }
    }

    fn walk_port(&self, p: &Packet, x: &mut LookupExplain) -> bool {
        let chain = self
            .port_list
            .get(&(p.proto, p.tuple.dport))
            .unwrap_or(&NO_SOCKETS);
        let port = p.tuple.dport;
        // The port-keyed tables of 3.9 – 4.20.
        let (table, func, file) = match p.proto {
            Proto::Tcp => (
                TableName::ListeningHash { port },
                "__inet_lookup_listener",
                "net/ipv4/inet_hashtables.c",
            ),
            Proto::Udp => (
                TableName::UdpPortSlot { port },
                "__udp4_lib_lookup",
                "net/ipv4/udp.c",
            ),
        };
        let source = KernelSource::new(func, file, self.profile.release);
        self.scan(p, chain, p.tuple.daddr, p.tuple.daddr, table, source, x)
    }

    fn walk_addr(&self, p: &Packet, bucket: IpAddr, daddr: IpAddr, x: &mut LookupExplain) -> bool {
        self.walk_addr_with(p, bucket, daddr, daddr, x)
    }

    fn walk_addr_with(
        &self,
        p: &Packet,
        bucket: IpAddr,
        daddr: IpAddr,
        laddr: IpAddr,
        x: &mut LookupExplain,
    ) -> bool {
        let chain = self
            .addr_list
            .get(&(p.proto, bucket_addr(bucket), p.tuple.dport))
            .unwrap_or(&NO_SOCKETS);
        let (addr, port) = (bucket.to_string(), p.tuple.dport);
        let (func, file) = match (p.proto, p.tuple.daddr.is_ipv6()) {
            (Proto::Tcp, false) => ("inet_lhash2_lookup", "net/ipv4/inet_hashtables.c"),
            (Proto::Tcp, true) => ("inet6_lhash2_lookup", "net/ipv6/inet6_hashtables.c"),
            (Proto::Udp, false) => ("udp4_lib_lookup2", "net/ipv4/udp.c"),
            (Proto::Udp, true) => ("udp6_lib_lookup2", "net/ipv6/udp.c"),
        };
        let table = match p.proto {
            Proto::Tcp => TableName::Lhash2 { addr, port },
            Proto::Udp => TableName::UdpHash2 { addr, port },
        };
        let source = KernelSource::new(func, file, self.profile.release);
        self.scan(p, chain, daddr, laddr, table, source, x)
    }

    /// One list walk with the era's scan rule. Returns true when it found a socket.
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        p: &Packet,
        chain: &VecDeque<usize>,
        daddr: IpAddr,
        laddr: IpAddr,
        table: TableName,
        source: KernelSource,
        x: &mut LookupExplain,
    ) -> bool {
        let rule = match p.proto {
            Proto::Tcp => self.rules.tcp_scan,
            Proto::Udp => self.rules.udp_scan,
        };
        let udp_v6 = p.proto == Proto::Udp && p.tuple.daddr.is_ipv6();
        let mut hi: i32 = if udp_v6 { -1 } else { 0 };
        let mut result: Option<usize> = None;
        let mut cands = Vec::new();
        let mut matches = 0u32;
        let mut phash = 0u32;
        let mut reservoir_on = false;
        let h = self.packet_hash(p, laddr);
        let mut done = false;
        for &i in chain {
            let s = self.score(i, p, daddr);
            let sock = &self.socks[i];
            if done {
                break;
            }
            if s > hi {
                hi = s;
                // UDP from 5.4 (acdcecc61285): a connected socket is a result
                // of its own, never a group entry; before, `sk_reuseport`
                // alone sent it to its group (net/ipv4/udp.c udp4_lib_lookup2).
                let connected = self.rules.udp_has_conns && sock.spec.state == SockState::Connected;
                if rule != ScanRule::Reservoir && sock.spec.reuseport && !connected {
                    if let Some(g) = sock.group {
                        let why = LaddrReason::LookupPass {
                            socket: i,
                            score: s,
                        };
                        match self.group_select(g, p, laddr, why) {
                            Some((Some(chosen), pick)) => {
                                let has_conns = p.proto == Proto::Udp
                                    && self.rules.udp_has_conns
                                    && pick.explain.group.has_conns;
                                x.group = Some(pick);
                                if has_conns {
                                    cands.push(Candidate {
                                        socket: i,
                                        score: s,
                                        outcome: CandidateOutcome::GroupChoseScanGoesOn { chosen },
                                    });
                                    result = Some(chosen);
                                    if self.rules.udp_rescore {
                                        // f0ea27e7bfe1: the chosen member is scored; only a higher score raises the bar.
                                        hi = hi.max(self.score(chosen, p, daddr));
                                    }
                                    continue;
                                }
                                cands.push(Candidate {
                                    socket: i,
                                    score: s,
                                    outcome: CandidateOutcome::GroupChose { chosen },
                                });
                                x.socket = Some(chosen);
                                x.reason = Some(LookupReason::GroupPicked {
                                    first: i,
                                    socket: chosen,
                                });
                                done = true;
                                continue;
                            }
                            Some((None, pick)) => {
                                let dropped = pick.explain.fallback == Some(Fallback::SkDrop);
                                x.group = Some(pick);
                                if dropped {
                                    cands.push(Candidate {
                                        socket: i,
                                        score: s,
                                        outcome: CandidateOutcome::GroupDropped,
                                    });
                                    x.reason = Some(LookupReason::GroupProgramDropped);
                                    x.tables.push(TableWalk {
                                        table,
                                        source,
                                        daddr: daddr.to_string(),
                                        candidates: cands,
                                    });
                                    return true;
                                }
                                cands.push(Candidate {
                                    socket: i,
                                    score: s,
                                    outcome: CandidateOutcome::GroupReturnedNone,
                                });
                            }
                            None => {}
                        }
                    }
                }
                if rule != ScanRule::GroupThenFirst && sock.spec.reuseport {
                    reservoir_on = true;
                    matches = 1;
                    phash = h;
                } else {
                    reservoir_on = false;
                }
                result = Some(i);
                cands.push(Candidate {
                    socket: i,
                    score: s,
                    outcome: CandidateOutcome::Kept,
                });
            } else if s == hi && s >= 0 && reservoir_on {
                matches += 1;
                let sc = reciprocal_scale(phash, matches);
                let took = sc == 0;
                if took {
                    result = Some(i);
                }
                cands.push(Candidate {
                    socket: i,
                    score: s,
                    outcome: if took {
                        CandidateOutcome::ReservoirTaken {
                            phash: hex(phash),
                            matches,
                        }
                    } else {
                        CandidateOutcome::ReservoirNotTaken {
                            phash: hex(phash),
                            matches,
                            scaled: sc,
                        }
                    },
                });
                phash = next_pseudo_random32(phash);
            } else {
                cands.push(Candidate {
                    socket: i,
                    score: s,
                    outcome: if s < 0 {
                        CandidateOutcome::NoMatch
                    } else {
                        CandidateOutcome::DoesNotBeat { best: hi }
                    },
                });
            }
        }
        x.tables.push(TableWalk {
            table,
            source,
            daddr: daddr.to_string(),
            candidates: cands,
        });
        if done {
            return true;
        }
        if let Some(r) = result {
            x.socket = Some(r);
            if x.reason.is_none() || x.group.is_some() {
                x.reason = Some(LookupReason::BestScore { socket: r });
            }
            return true;
        }
        false
    }

    /// The reuseport hash of the packet with the given local address, for
    /// the reservoir (the group computes its own in its record).
    fn packet_hash(&self, p: &Packet, laddr: IpAddr) -> u32 {
        let t = p.tuple;
        hash::reuseport_hash(
            self.profile,
            p.proto,
            laddr,
            t.dport,
            t.saddr,
            t.sport,
            &self.keys,
        )
        .unwrap_or(0)
    }

    /// Asks group `g` to pick with the pass's local address.
    fn group_select(
        &self,
        g: usize,
        p: &Packet,
        laddr: IpAddr,
        why: LaddrReason,
    ) -> Option<(Option<usize>, GroupPick)> {
        let e = &self.groups[g];
        let (answer, explain) = e
            .group
            .select_for_lookup(&p.tuple, &p.ctx, laddr, why)
            .ok()?;
        let sk = match answer {
            GroupAnswer::Member(m) => Some(e.members[m as usize]),
            GroupAnswer::Null | GroupAnswer::Drop => None,
        };
        Some((
            sk,
            GroupPick {
                group: g,
                members: e.members.clone(),
                explain,
            },
        ))
    }
}
