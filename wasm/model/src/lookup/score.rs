//! `compute_score`: how well one socket matches a packet, per era and
//! family (kernel-history.md §4.1, §4.4, §5.1, §5.4).

use std::net::{IpAddr, Ipv4Addr};

use super::host::Host;
use super::types::{as_v6, Family, Packet, SockState, SocketSpec};
use crate::profile::rules::ScoreRule;
use crate::tuple::Proto;

/// The IPv4 address an AF_INET6 socket presents to IPv4 lookups
/// (`inet_rcv_saddr`): 0 for `::`, `a.b.c.d` for `::ffff:a.b.c.d`, and none
/// for a plain IPv6 address.
fn v4_view(s: &SocketSpec) -> Option<Ipv4Addr> {
    match s.addr {
        IpAddr::V4(a) => Some(a),
        IpAddr::V6(v6) if v6.is_unspecified() => (!s.v6only).then_some(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(v6) => v6.to_ipv4_mapped(),
    }
}

impl Host {
    /// `compute_score` of socket `i` for the packet, against `daddr` (the
    /// pass's address), per era and family (kernel-history.md §4.1, §4.4,
    /// §5.1, §5.4; net/ipv4/inet_hashtables.c, net/ipv6/inet6_hashtables.c,
    /// net/ipv4/udp.c, net/ipv6/udp.c).
    pub(super) fn score(&self, i: usize, p: &Packet, daddr: IpAddr) -> i32 {
        let s = &self.socks[i].spec;
        if s.port != p.tuple.dport || s.proto != p.proto {
            return -1;
        }
        let dev_ok = s
            .device
            .as_deref()
            .is_none_or(|d| d == p.device.as_deref().unwrap_or("lo"));
        let cpu = (self.rules.cpu_bonus && s.incoming_cpu == Some(p.ctx.cpu)) as i32;
        let v6_packet = p.tuple.daddr.is_ipv6();
        let exact = self.rules.score != ScoreRule::Classic;
        let bound_dev = s.device.is_some();
        // The socket's address as this lookup sees it.
        let addr_match: Option<bool> = if v6_packet {
            if s.family != Family::Inet6 {
                return -1;
            }
            let mine = as_v6(s.addr);
            let want = as_v6(daddr);
            Some(mine == want || (!exact && mine.is_unspecified()))
        } else {
            if s.family == Family::Inet6 && s.v6only {
                return -1;
            }
            match v4_view(s) {
                None => return -1,
                Some(mine) => {
                    let want = match daddr {
                        IpAddr::V4(d) => d,
                        IpAddr::V6(_) => return -1,
                    };
                    Some(mine == want || (!exact && mine.is_unspecified()))
                }
            }
        };
        if addr_match != Some(true) || !dev_ok {
            return -1;
        }
        // A bound address as the packet's family sees it: `::ffff:0.0.0.0`
        // is IPv4's wildcard (`sk_rcv_saddr` 0), not a specific address.
        let specific = if v6_packet {
            !as_v6(s.addr).is_unspecified()
        } else {
            v4_view(s).is_some_and(|a| !a.is_unspecified())
        };
        let af_inet = s.family == Family::Inet;
        match p.proto {
            Proto::Tcp => {
                if v6_packet {
                    match self.rules.score {
                        ScoreRule::Classic => 1 + specific as i32 + bound_dev as i32 + cpu,
                        ScoreRule::Exact => 1 + cpu,
                        ScoreRule::ExactPreferDevice => (if bound_dev { 2 } else { 1 }) + cpu,
                    }
                } else {
                    match self.rules.score {
                        ScoreRule::Classic => {
                            (if af_inet { 2 } else { 1 })
                                + 4 * specific as i32
                                + 4 * bound_dev as i32
                                + cpu
                        }
                        ScoreRule::Exact => (if af_inet { 2 } else { 1 }) + cpu,
                        ScoreRule::ExactPreferDevice => {
                            (if bound_dev { 2 } else { 1 }) + af_inet as i32 + cpu
                        }
                    }
                }
            }
            Proto::Udp => {
                // Connected sockets must match the packet's source.
                let (conn, peer_ok) = match (s.state, s.peer) {
                    (SockState::Connected, Some(peer)) => (
                        true,
                        peer.ip() == p.tuple.saddr && peer.port() == p.tuple.sport,
                    ),
                    _ => (false, true),
                };
                if !peer_ok {
                    return -1;
                }
                if v6_packet {
                    // net/ipv6/udp.c: base 0; +1 for the peer's port, +1 for its address.
                    let dev = match self.rules.score {
                        ScoreRule::Classic | ScoreRule::ExactPreferDevice => bound_dev as i32,
                        ScoreRule::Exact => 1,
                    };
                    2 * conn as i32 + (specific && !exact) as i32 + dev + cpu
                } else {
                    let dev = match self.rules.score {
                        ScoreRule::Classic | ScoreRule::ExactPreferDevice => 4 * bound_dev as i32,
                        ScoreRule::Exact => 4,
                    };
                    (if af_inet { 2 } else { 1 })
                        + 8 * conn as i32
                        + 4 * (specific && !exact) as i32
                        + dev
                        + cpu
                }
            }
        }
    }
}
