//! The bind rules: which earlier sockets a `bind()` or `listen()` conflicts
//! with, the TCP bind bucket's fast path, and the ephemeral port draw
//! (kernel-history.md §7).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::bucket::{bucket_addr, Rcv, TbFast, FASTREUSEPORT_ANY, FASTREUSEPORT_STRICT, WILDCARD};
use super::host::Host;
use super::types::{as_v6, Family, SockState, SocketSpec};
use crate::message::{Errno, KernelSource, Refusal, RefusalRule};
use crate::profile::rules::Ephemeral;
use crate::profile::UDP_HASH2_THRESHOLD;
use crate::tuple::Proto;

/// `ipv4_rcv_saddr_equal` (net/ipv4/inet_connection_sock.c; the two
/// wildcard flags from 5.7, one before, which callers pass twice).
fn ipv4_rcv_saddr_equal(a: Ipv4Addr, b: Ipv4Addr, b_v6only: bool, w1: bool, w2: bool) -> bool {
    if b_v6only {
        return false;
    }
    a == b || (w1 && a.is_unspecified()) || (w2 && b.is_unspecified())
}

/// `ipv6_rcv_saddr_equal` (net/ipv4/inet_connection_sock.c): `b` without an
/// IPv6 address (an AF_INET socket) counts as v4-mapped.
fn ipv6_rcv_saddr_equal(a: Rcv, b: Rcv, w1: bool, w2: bool) -> bool {
    let a6 = a.v6.unwrap_or(Ipv6Addr::UNSPECIFIED);
    let mapped = |v: Ipv6Addr| v.to_ipv4_mapped().is_some();
    let a_any = a6.is_unspecified();
    let a_mapped = mapped(a6);
    let (b_any, b_mapped) = match b.v6 {
        Some(b6) => (b6.is_unspecified(), mapped(b6)),
        None => (false, true),
    };
    if a_mapped && b_mapped {
        return ipv4_rcv_saddr_equal(a.v4, b.v4, b.v6only, w1, w2);
    }
    if a_any && b_any {
        return true;
    }
    if b_any && w2 && !(b.v6only && a_mapped) {
        return true;
    }
    if a_any && w1 && !(a.v6only && b_mapped) {
        return true;
    }
    b.v6 == Some(a6)
}

/// `inet_rcv_saddr_equal(sk, sk2, ..)` with the wildcard flags for `sk`
/// (`a`) and `sk2` (`b`), by `sk`'s family.
fn rcv_saddr_equal(a: Rcv, b: Rcv, w1: bool, w2: bool) -> bool {
    match a.v6 {
        Some(_) => ipv6_rcv_saddr_equal(a, b, w1, w2),
        None => ipv4_rcv_saddr_equal(a.v4, b.v4, b.v6only, w1, w2),
    }
}

/// `inet_rcv_saddr_equal(sk, sk2, match_wildcard = true)`: whether the
/// binding socket `a` overlaps the earlier `b` for the bind-conflict rules.
fn overlaps(a: &SocketSpec, b: &SocketSpec) -> bool {
    rcv_saddr_equal(Rcv::of(a), Rcv::of(b), true, true)
}

/// An IPv6 address other than `::` and `::ffff:a.b.c.d`: binding it sets
/// IPV6_V6ONLY on the socket (`__inet6_bind`, net/ipv6/af_inet6.c; in
/// `inet6_bind` before 4.17; every release). Two sockets on `::1` are then
/// both v6only for the join rule whatever the option said.
fn binds_v6only(s: &SocketSpec) -> bool {
    match (s.family, s.addr) {
        (Family::Inet6, IpAddr::V6(v6)) => !v6.is_unspecified() && v6.to_ipv4_mapped().is_none(),
        _ => false,
    }
}

fn devices_compatible(a: &SocketSpec, b: &SocketSpec) -> bool {
    a.device.is_none() || b.device.is_none() || a.device == b.device
}

/// Which bind-conflict rule refuses socket `s` against the earlier `e`
/// (kernel-history.md §7); `e_closing`: `e` is a TCP socket closed while
/// connected, still in FIN_WAIT1.
fn conflict_rule(s: &SocketSpec, e: &SocketSpec, e_closing: bool) -> RefusalRule {
    if s.reuseport && e.reuseport && s.uid != e.uid {
        if e_closing {
            RefusalRule::ClosingUidsDiffer {
                uid: s.uid,
                other_uid: e.uid,
            }
        } else {
            RefusalRule::UidsDiffer {
                uid: s.uid,
                other_uid: e.uid,
            }
        }
    } else if s.reuseaddr && e.reuseaddr && s.proto == Proto::Tcp {
        RefusalRule::ReuseaddrListener
    } else if s.reuseport != e.reuseport || !s.reuseport {
        RefusalRule::NoSharedOption
    } else {
        RefusalRule::Overlap
    }
}

impl Host {
    /// `bind(i, addr, port)`.
    pub(super) fn bind(&mut self, i: usize, addr: IpAddr, port: u16) -> Option<Refusal> {
        if self.socks[i].bound || self.socks[i].established {
            // inet_bind / __inet6_bind: `inet_num` already set.
            let r = self.refusal(
                Errno::Einval,
                RefusalRule::AlreadyBound,
                "__inet_bind",
                "net/ipv4/af_inet.c",
            );
            self.socks[i].bind_refusal = Some(r.clone());
            return Some(r);
        }
        let saved = self.socks[i].spec.clone();
        let s = &mut self.socks[i].spec;
        s.addr = addr;
        s.port = port;
        s.v6only = s.v6only || binds_v6only(s);
        let refused = match (port, self.ephemeral) {
            (0, Some(eph)) => self.autobind(i, eph),
            (0, None) => {
                self.draw_random_port(i);
                None
            }
            _ => self.bind_conflict(i),
        };
        if let Some(r) = refused {
            // On failure the address and IPV6_V6ONLY go back (inet_reset_saddr).
            self.socks[i].spec = saved;
            self.socks[i].bind_refusal = Some(r.clone());
            return Some(r);
        }
        self.socks[i].bind_refusal = None;
        let drawn = self.socks[i].random_port.is_some();
        if !drawn {
            self.tcp_fast_update(i, false);
        }
        self.socks[i].bound = true;
        self.socks[i].bind_seq = self.next_seq;
        self.next_seq += 1;
        if drawn {
            // Alone on a port the model does not know: UDP receives there
            // (udp_lib_get_port hashes it), in no list the model walks.
            self.socks[i].listening = self.socks[i].spec.proto == Proto::Udp;
            return None;
        }
        // udp_lib_get_port: the slot's tail for AF_INET6 with SO_REUSEPORT
        // now, where it stays whatever the option says later.
        let s = &self.socks[i].spec;
        let (key, seq) = ((s.proto, s.port), self.socks[i].bind_seq);
        self.socks[i].slot_tail = s.family == Family::Inet6 && s.reuseport;
        let class = self.class_of(i, false);
        self.bucket.entry(key).or_default().insert((seq, i), class);
        if self.socks[i].spec.proto == Proto::Udp {
            // udp_lib_get_port hashes the socket at bind: it receives.
            if let Some(r) = self.receive(i) {
                self.socks[i].bind_refusal = Some(r.clone());
                return Some(r);
            }
        }
        None
    }

    /// `bind()`: the conflict rules against every socket bound before on the
    /// same protocol and port (kernel-history.md §7; `inet_bind_conflict`,
    /// net/ipv4/inet_connection_sock.c 6.12; `udp_lib_lport_inuse`,
    /// net/ipv4/udp.c).
    fn bind_conflict(&self, i: usize) -> Option<Refusal> {
        let s = &self.socks[i].spec;
        // A socket that already owns a group (a program attached before
        // bind) cannot use the SO_REUSEPORT exemption from 4.6.
        let in_group = self.owns_group(i);
        if s.family == Family::Inet6 && s.v6only && as_v6(s.addr).to_ipv4_mapped().is_some() {
            return Some(Refusal {
                errno: Errno::Einval,
                rule: RefusalRule::V6onlyMapped,
                source: KernelSource::new(
                    "inet6_bind",
                    "net/ipv6/af_inet6.c",
                    self.profile.release,
                ),
                with: None,
            });
        }
        if s.proto == Proto::Tcp && self.tcp_fast_path(i, false) {
            return None;
        }
        let first_decides = s.proto == Proto::Udp && self.rules.udp_first_overlap_decides;
        let tail = self.rules.v6_reuseport_tail;
        let bucket = self.bucket.get(&(s.proto, s.port));
        // udp_lib_get_port: past ten sockets on the port slot, the hash2
        // slots of the address and of the wildcard, each walked on its own
        // (udp_lib_lport_inuse2); a wildcard bind only from the 2026 fix on
        // walks the port slot instead (inet_use_hash2_on_bind).
        let wildcard = bucket_addr(s.addr) == WILDCARD;
        let hash2 = s.proto == Proto::Udp
            && bucket.is_some_and(|b| b.count() > UDP_HASH2_THRESHOLD as usize)
            && (!wildcard || self.rules.udp_bind_wildcard_hash2);
        let walks: Vec<Vec<usize>> = match bucket {
            None => Vec::new(),
            Some(b) if hash2 => {
                let mut w = vec![b.hash2_order(s.addr, i, tail)];
                if !wildcard {
                    w.push(b.hash2_order(WILDCARD, i, tail));
                }
                w
            }
            Some(b) if first_decides => vec![b.slot_order(s.addr, i, tail)],
            Some(_) => vec![self.bound_on(s.proto, s.port, s.addr, i)],
        };
        'slots: for walk in walks {
            for j in walk {
                let o = &self.socks[j];
                let e = &o.spec;
                if !o.bound || !devices_compatible(s, e) || !overlaps(s, e) {
                    continue;
                }
                if s.proto == Proto::Tcp && self.mapped_any_unseen(s, e) {
                    continue;
                }
                if first_decides {
                    // udp_lib_lport_inuse (4.5+): the first socket without the
                    // SO_REUSEADDR exemption decides, and the walk of this slot
                    // ends there (udp_lib_lport_inuse2: the next hash2 slot is
                    // still walked).
                    if s.reuseaddr && e.reuseaddr {
                        continue;
                    }
                    if s.reuseport && e.reuseport && !in_group && e.uid == s.uid {
                        continue 'slots;
                    }
                }
                let allowed = match s.proto {
                    Proto::Tcp => {
                        let e_listening = self.socks[j].listening;
                        (s.reuseaddr && e.reuseaddr && !e_listening)
                            || (s.reuseport
                                && e.reuseport
                                && !in_group
                                && (e.state == SockState::TimeWait || e.uid == s.uid))
                    }
                    Proto::Udp => {
                        (s.reuseaddr && e.reuseaddr)
                            || (s.reuseport && e.reuseport && !in_group && e.uid == s.uid)
                    }
                };
                if !allowed {
                    // reuseport_bpf.c test_extra_filter for the group owner.
                    let rule = if in_group {
                        RefusalRule::OwnsGroupBeforeBind
                    } else {
                        conflict_rule(s, e, o.closing)
                    };
                    return Some(Refusal {
                        errno: Errno::Eaddrinuse,
                        rule,
                        source: self.conflict_source(s.proto),
                        with: Some(j),
                    });
                }
            }
        }
        None
    }

    /// `sk_reuseport_match(tb, sk)` (net/ipv4/inet_connection_sock.c): the
    /// bucket's recorded SO_REUSEPORT owner covers socket `i`.
    fn tcp_reuseport_match(&self, tb: &TbFast, i: usize) -> bool {
        let s = &self.socks[i].spec;
        let in_group = self.owns_group(i);
        if tb.fastreuseport == 0 || !s.reuseport || in_group || tb.fastuid != s.uid {
            return false;
        }
        if tb.fastreuseport == FASTREUSEPORT_ANY || !self.rules.tcp_fast_strict {
            return true;
        }
        let Some(fast) = tb.fast else {
            return true;
        };
        // The recorded address may be a wildcard; the binding socket's may
        // too before 5.7.
        rcv_saddr_equal(fast, Rcv::of(s), true, self.rules.tcp_fast_sk_wildcard)
    }

    /// The fast path of `inet_csk_get_port` (net/ipv4/inet_connection_sock.c,
    /// every release): with owners on the port, `tb->fastreuse` and a
    /// SO_REUSEADDR socket that is not listening, or `sk_reuseport_match`,
    /// succeed without the conflict scan. At `listen()` the socket counts
    /// as listening, so only the second applies.
    pub(super) fn tcp_fast_path(&self, i: usize, listening: bool) -> bool {
        let s = &self.socks[i].spec;
        let Some(tb) = self.tcp_tb.get(&s.port) else {
            return false;
        };
        if tb.owners == 0 {
            return false;
        }
        let reuse = s.reuseaddr && !listening;
        (tb.fastreuse && reuse) || self.tcp_reuseport_match(tb, i)
    }

    /// `inet_csk_update_fastreuse` (4.14+; inline in `inet_csk_get_port`
    /// before): after a successful `bind()` or `listen()` of socket `i`.
    pub(super) fn tcp_fast_update(&mut self, i: usize, listening: bool) {
        let s = &self.socks[i].spec;
        if s.proto != Proto::Tcp {
            return;
        }
        let port = s.port;
        let tb = self.tcp_tb.get(&port).copied().unwrap_or_default();
        let reuse = s.reuseaddr && !listening;
        // hlist_empty(&tb->owners): at listen() the socket is already one.
        let first = !listening && tb.owners == 0;
        let mut new = tb;
        let record = |t: &mut TbFast, mode: u8| {
            t.fastreuseport = mode;
            t.fastuid = s.uid;
            t.fast = Some(Rcv::of(s));
        };
        if first {
            new.fastreuse = reuse;
            if s.reuseport {
                record(&mut new, FASTREUSEPORT_ANY);
            } else {
                new.fastreuseport = 0;
            }
        } else {
            if !reuse {
                new.fastreuse = false;
            }
            if s.reuseport {
                if self.rules.tcp_fast_strict {
                    if !self.tcp_reuseport_match(&tb, i) {
                        record(&mut new, FASTREUSEPORT_STRICT);
                    }
                } else if tb.fastuid != s.uid {
                    new.fastreuseport = 0;
                }
            } else {
                new.fastreuseport = 0;
            }
        }
        if !listening {
            new.owners += 1;
        }
        self.tcp_tb.insert(port, new);
    }

    /// `bind(addr, 0)` or an autobind with no range in the call log: the
    /// kernel draws from its default range
    /// ([`LookupRules::default_port_range`]), from a random offset
    /// (`inet_csk_find_open_port`, net/ipv4/inet_connection_sock.c;
    /// `udp_lib_get_port`, net/ipv4/udp.c), a port no bound socket
    /// overlaps. The model marks the socket as on that unknown port. Each
    /// other socket holds at most one port of the range, so while fewer
    /// sockets hold one than the range has ports a free port exists; past
    /// that the model cannot tell, and says so ([`Host::run`] fails naming
    /// the call). A later bind that happens to pick the same port is not
    /// modelled (the chance is one in the range's size).
    fn draw_random_port(&mut self, i: usize) {
        let range = self.rules.default_port_range;
        let proto = self.socks[i].spec.proto;
        let ports = usize::from(range.high - range.low) + 1;
        let held = self
            .socks
            .iter()
            .enumerate()
            .filter(|&(j, o)| {
                j != i
                    && o.bound
                    && o.spec.proto == proto
                    && (o.random_port.is_some() || (range.low..=range.high).contains(&o.spec.port))
            })
            .count();
        if held >= ports {
            self.undecided_draw = true;
        }
        self.socks[i].spec.port = 0;
        self.socks[i].random_port = Some(range);
    }

    /// `bind(addr, 0)` over TCP: `inet_csk_find_open_port` tries each port of
    /// the range with the strict rule (no exemption at all), then, with
    /// `ip_autobind_reuse`, again letting two SO_REUSEADDR sockets share a
    /// port unless both also set SO_REUSEPORT with the same owner
    /// (net/ipv4/inet_connection_sock.c; reuseaddr_ports_exhausted.c).
    fn autobind(&mut self, i: usize, eph: Ephemeral) -> Option<Refusal> {
        let passes: &[bool] = if eph.autobind_reuse {
            &[false, true]
        } else {
            &[false]
        };
        for &relax in passes {
            for port in eph.low..=eph.high {
                self.socks[i].spec.port = port;
                let s = &self.socks[i].spec;
                let taken = self
                    .bound_on(s.proto, port, s.addr, i)
                    .into_iter()
                    .any(|j| {
                        let o = &self.socks[j];
                        let e = &o.spec;
                        if !o.bound || !devices_compatible(s, e) || !overlaps(s, e) {
                            return false;
                        }
                        if !relax {
                            return true;
                        }
                        if s.reuseaddr && e.reuseaddr && !o.listening {
                            s.reuseport
                                && e.reuseport
                                && (e.state == SockState::TimeWait || e.uid == s.uid)
                        } else {
                            true
                        }
                    });
                if !taken {
                    return None;
                }
            }
        }
        self.socks[i].spec.port = 0;
        let (low, high) = (eph.low, eph.high);
        Some(Refusal {
            errno: Errno::Eaddrinuse,
            rule: if eph.autobind_reuse {
                RefusalRule::EphemeralExhaustedAutobindReuse { low, high }
            } else {
                RefusalRule::EphemeralExhausted { low, high }
            },
            source: KernelSource::new(
                "inet_csk_find_open_port",
                "net/ipv4/inet_connection_sock.c",
                self.profile.release,
            ),
            with: None,
        })
    }

    /// `listen()`: `inet_csk_get_port` runs again with the socket in
    /// TCP_LISTEN, so the SO_REUSEADDR exemption no longer covers another
    /// listener (net/ipv4/inet_connection_sock.c `inet_csk_listen_start`).
    pub(super) fn listen_conflict(&self, i: usize) -> Option<Refusal> {
        let s = &self.socks[i].spec;
        // A socket that owns a group (a program attached before listen)
        // has `sk_reuseport_cb` set: no SO_REUSEPORT exemption, from 4.6.
        let in_group = self.owns_group(i);
        for j in self.bound_on(Proto::Tcp, s.port, s.addr, i) {
            let o = &self.socks[j];
            let e = &o.spec;
            if j == i || !o.bound || !devices_compatible(s, e) || !overlaps(s, e) {
                continue;
            }
            if self.mapped_any_unseen(s, e) {
                continue;
            }
            let allowed = (s.reuseaddr && e.reuseaddr && !o.listening)
                || (s.reuseport
                    && e.reuseport
                    && !in_group
                    && (e.state == SockState::TimeWait || e.uid == s.uid));
            if !allowed {
                return Some(Refusal {
                    errno: Errno::Eaddrinuse,
                    rule: if in_group {
                        RefusalRule::OwnsGroupBeforeBind
                    } else {
                        conflict_rule(s, e, o.closing)
                    },
                    source: self.conflict_source(Proto::Tcp),
                    with: Some(j),
                });
            }
        }
        None
    }

    /// A TCP `bind()` or `listen()` of `s` that does not see `e`, an
    /// AF_INET6 socket on `::ffff:0.0.0.0` (`inet_csk_get_port` runs the
    /// same bhash2 check at both; see
    /// [`LookupRules::tcp_bind_mapped_any_unseen`]).
    fn mapped_any_unseen(&self, s: &SocketSpec, e: &SocketSpec) -> bool {
        self.rules.tcp_bind_mapped_any_unseen
            && mapped_specific(s)
            && e.family == Family::Inet6
            && as_v6(e.addr) == Ipv4Addr::UNSPECIFIED.to_ipv6_mapped()
    }

    /// Where the bind-conflict rules live: `inet_bind_conflict` (TCP, also
    /// at `listen()`) or `udp_lib_lport_inuse`.
    fn conflict_source(&self, proto: Proto) -> KernelSource {
        let (func, file) = match proto {
            Proto::Tcp => ("inet_bind_conflict", "net/ipv4/inet_connection_sock.c"),
            Proto::Udp => ("udp_lib_lport_inuse", "net/ipv4/udp.c"),
        };
        KernelSource::new(func, file, self.profile.release)
    }
}

/// An AF_INET6 socket on a v4-mapped address other than `::ffff:0.0.0.0`.
fn mapped_specific(s: &SocketSpec) -> bool {
    s.family == Family::Inet6
        && as_v6(s.addr)
            .to_ipv4_mapped()
            .is_some_and(|a| !a.is_unspecified())
}
