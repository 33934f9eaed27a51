//! The bind bucket of one (protocol, port): the sockets bound to it, kept so
//! that the conflict rules look only at sockets that can matter.
//!
//! The kernel walks every owner of the port's bind bucket
//! (`inet_bind_conflict`, net/ipv4/inet_connection_sock.c;
//! `udp_lib_lport_inuse`, net/ipv4/udp.c). The model gives the same answer
//! faster: sockets are grouped by bucket address (`::` and `0.0.0.0` share
//! one, as do `::ffff:a.b.c.d` and `a.b.c.d`) and then by everything the
//! rules read of the other socket. Every socket of one class gets the same
//! verdict, so one check per class decides, and the first socket of the
//! first class that conflicts (in bind order) is the one the kernel's walk
//! would have reported first. Sockets are kept by their bind sequence
//! number (the order their `bind()` calls succeeded), with their index.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::types::{as_v6, Family, SockState, SocketSpec};

/// What the conflict rules read of an earlier socket, and where it sits in
/// UDP's slots.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Class {
    inet6: bool,
    /// Hashed at the tail of UDP's slots: AF_INET6 with SO_REUSEPORT *when
    /// it bound* (`udp_lib_get_port`, net/ipv4/udp.c, from 4.6); an option
    /// changed later moves nothing, while the rules read its current value.
    slot_tail: bool,
    /// A TCP socket closed while connected, still in FIN_WAIT1.
    closing: bool,
    addr: IpAddr,
    v6only: bool,
    device: Option<String>,
    reuseaddr: bool,
    reuseport: bool,
    uid: u32,
    time_wait: bool,
    listening: bool,
}

impl Class {
    pub(super) fn of(s: &SocketSpec, listening: bool, slot_tail: bool, closing: bool) -> Class {
        Class {
            inet6: s.family == Family::Inet6,
            slot_tail,
            closing,
            addr: s.addr,
            v6only: s.v6only,
            device: s.device.clone(),
            reuseaddr: s.reuseaddr,
            reuseport: s.reuseport,
            uid: s.uid,
            time_wait: s.state == SockState::TimeWait,
            listening,
        }
    }
}

/// `::` and `0.0.0.0` share a bucket address, as do `::ffff:a.b.c.d` and
/// `a.b.c.d` (`ipv6_portaddr_hash`, include/net/ipv6.h).
pub(super) fn bucket_addr(a: IpAddr) -> IpAddr {
    match a {
        IpAddr::V6(v6) if v6.is_unspecified() => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(a),
        v4 => v4,
    }
}

pub(super) const WILDCARD: IpAddr = IpAddr::V4(Ipv4Addr::UNSPECIFIED);

/// The sockets bound to one (protocol, port).
#[derive(Debug, Default, Clone)]
pub(super) struct Bucket {
    by_addr: BTreeMap<IpAddr, BTreeMap<Class, BTreeSet<(u64, usize)>>>,
    /// How many sockets are in it.
    len: usize,
}

impl Bucket {
    pub(super) fn insert(&mut self, i: (u64, usize), class: Class) {
        let a = bucket_addr(class.addr);
        let new = self
            .by_addr
            .entry(a)
            .or_default()
            .entry(class)
            .or_default()
            .insert(i);
        self.len += usize::from(new);
    }

    pub(super) fn remove(&mut self, i: (u64, usize), class: &Class) {
        let a = bucket_addr(class.addr);
        if let Some(classes) = self.by_addr.get_mut(&a) {
            if let Some(set) = classes.get_mut(class) {
                if set.remove(&i) {
                    self.len -= 1;
                }
                if set.is_empty() {
                    classes.remove(class);
                }
            }
            if classes.is_empty() {
                self.by_addr.remove(&a);
            }
        }
    }

    /// One socket of each class whose address can overlap `addr`'s, other
    /// than `except`, in the order of UDP's port slot (`hslot`), which
    /// `udp_lib_get_port` fills at the head, except that, when
    /// `v6_reuseport_tail`, AF_INET6 sockets with SO_REUSEPORT at their
    /// bind go to the tail (net/ipv4/udp.c): the newest head socket of each
    /// class first, then the oldest tail socket.
    pub(super) fn slot_order(
        &self,
        addr: IpAddr,
        except: usize,
        v6_reuseport_tail: bool,
    ) -> Vec<usize> {
        Self::order(self.lists(addr), except, v6_reuseport_tail)
    }

    /// As [`Bucket::slot_order`], but only the sockets whose bucket address
    /// is `addr`'s: UDP's `hash2` slot of (`addr`, port), filled by the same
    /// head-or-tail rule (`udp_lib_get_port`, net/ipv4/udp.c). Addresses
    /// that collide in the hash table are left out.
    pub(super) fn hash2_order(
        &self,
        addr: IpAddr,
        except: usize,
        v6_reuseport_tail: bool,
    ) -> Vec<usize> {
        let list = self.by_addr.get(&bucket_addr(addr));
        Self::order(list.into_iter().collect(), except, v6_reuseport_tail)
    }

    /// How many sockets are bound to the port: the `count` of UDP's port
    /// slot when a socket binds (it is not in the bucket yet; other ports
    /// that share the slot are left out).
    pub(super) fn count(&self) -> usize {
        self.len
    }

    fn order(
        lists: Vec<&BTreeMap<Class, BTreeSet<(u64, usize)>>>,
        except: usize,
        v6_reuseport_tail: bool,
    ) -> Vec<usize> {
        let (mut head, mut tail) = (Vec::new(), Vec::new());
        for classes in lists {
            for (class, set) in classes {
                if v6_reuseport_tail && class.slot_tail {
                    tail.extend(set.iter().copied().find(|&(_, j)| j != except));
                } else {
                    head.extend(set.iter().rev().copied().find(|&(_, j)| j != except));
                }
            }
        }
        head.sort_unstable_by(|a, b| b.cmp(a));
        tail.sort_unstable();
        head.extend(tail);
        head.into_iter().map(|(_, j)| j).collect()
    }

    fn lists(&self, addr: IpAddr) -> Vec<&BTreeMap<Class, BTreeSet<(u64, usize)>>> {
        // `::`, `0.0.0.0` and the v4-mapped `::ffff:0.0.0.0` (IPv4's
        // wildcard through an AF_INET6 socket) overlap every address.
        let wildcard = bucket_addr(addr) == WILDCARD;
        let mut lists: Vec<&BTreeMap<Class, BTreeSet<(u64, usize)>>> = Vec::new();
        if wildcard {
            lists.extend(self.by_addr.values());
        } else {
            let a = bucket_addr(addr);
            lists.extend(self.by_addr.get(&a));
            if a != WILDCARD {
                lists.extend(self.by_addr.get(&WILDCARD));
            }
        }
        lists
    }

    /// The first socket (in bind order) of each class whose address can
    /// overlap `addr`'s, leaving out `except`: one representative per class.
    pub(super) fn candidates(&self, addr: IpAddr, except: usize) -> Vec<usize> {
        let mut out: Vec<(u64, usize)> = self
            .lists(addr)
            .into_iter()
            .flat_map(|classes| classes.values())
            .filter_map(|set| set.iter().copied().find(|&(_, j)| j != except))
            .collect();
        out.sort_unstable();
        out.into_iter().map(|(_, j)| j).collect()
    }
}

/// What the bind rules read of a socket's bound address: `sk_v6_rcv_saddr`
/// (AF_INET6 only), `sk_rcv_saddr` and `ipv6_only_sock`. An AF_INET6
/// socket bound to `::` has the IPv4 address 0 and one bound to
/// `::ffff:a.b.c.d` has `a.b.c.d`; any other IPv6 address gets
/// `LOOPBACK4_IPV6` (127.0.0.6), "invalid" as an IPv4 address
/// (`__inet6_bind`, net/ipv6/af_inet6.c, every release).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rcv {
    pub(super) v6: Option<Ipv6Addr>,
    pub(super) v4: Ipv4Addr,
    pub(super) v6only: bool,
}

impl Rcv {
    pub(super) fn of(s: &SocketSpec) -> Rcv {
        match (s.family, s.addr) {
            (Family::Inet6, a) => {
                let v6 = as_v6(a);
                let v4 = if v6.is_unspecified() {
                    Ipv4Addr::UNSPECIFIED
                } else {
                    v6.to_ipv4_mapped().unwrap_or(Ipv4Addr::new(127, 0, 0, 6))
                };
                Rcv {
                    v6: Some(v6),
                    v4,
                    v6only: s.v6only,
                }
            }
            (Family::Inet, a) => Rcv {
                v6: None,
                v4: match a {
                    IpAddr::V4(v) => v,
                    IpAddr::V6(v) => v.to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED),
                },
                v6only: false,
            },
        }
    }
}

/// The TCP bind bucket's fast-path state for one port (`struct
/// inet_bind_bucket` `fastreuse`, `fastreuseport`, `fastuid`, `fast_*`;
/// include/net/inet_hashtables.h), kept between calls as the kernel does.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct TbFast {
    pub(super) owners: usize,
    pub(super) fastreuse: bool,
    /// 0, `FASTREUSEPORT_ANY` (1) or `FASTREUSEPORT_STRICT` (2).
    pub(super) fastreuseport: u8,
    pub(super) fastuid: u32,
    pub(super) fast: Option<Rcv>,
}

pub(super) const FASTREUSEPORT_ANY: u8 = 1;
pub(super) const FASTREUSEPORT_STRICT: u8 = 2;
