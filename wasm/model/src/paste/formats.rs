//! One function per line format. Each gets a trimmed, non-blank line of at
//! most `MAX_LINE_BYTES` that is not a comment.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::{shown, Conn, Field, Format, Line, LineError, LineNote, Meaning, Skip, Zone};
use crate::tuple::{canonical, Proto};

/// Which endpoint of a line, for naming its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    Local,
    Peer,
    Source,
    Destination,
}

impl End {
    pub(super) fn addr(self) -> Field {
        match self {
            End::Local => Field::LocalAddress,
            End::Peer => Field::PeerAddress,
            End::Source => Field::SourceAddress,
            End::Destination => Field::DestinationAddress,
        }
    }
    pub(super) fn port(self) -> Field {
        match self {
            End::Local => Field::LocalPort,
            End::Peer => Field::PeerPort,
            End::Source => Field::SourcePort,
            End::Destination => Field::DestinationPort,
        }
    }
}

/// A host name (or service name) rather than garbage: what `ss`,
/// `netstat` and tcpdump print without `-n`.
fn looks_like_name(s: &str) -> bool {
    s.len() <= 253
        && s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

/// An address, or the error naming `field`. Accepts `[v6]`, a `%scope`
/// suffix, and treats `::ffff:a.b.c.d` as IPv4.
pub(super) fn addr(format: Format, end: End, s: &str) -> Result<IpAddr, LineError> {
    addr_zoned(format, end, s).map(|(a, _)| a)
}

/// [`addr`], with the zone it dropped.
fn addr_zoned(format: Format, end: End, s: &str) -> Result<(IpAddr, Option<Zone>), LineError> {
    let t = s
        .strip_prefix('[')
        .and_then(|x| x.strip_suffix(']'))
        .unwrap_or(s);
    let (t, zone) = match t.split_once('%') {
        Some((a, z)) => (a, Some(z)),
        None => (t, None),
    };
    let zone = zone.map(Zone::new);
    match (t.parse::<IpAddr>(), zone) {
        (Ok(a), None) => Ok((canonical(a), None)),
        (Ok(a @ IpAddr::V6(_)), Some(Some(z))) => Ok((canonical(a), Some(z))),
        _ => Err(bad_value(format, end.addr(), s, |format, field, value| {
            LineError::Address {
                format,
                field,
                value,
            }
        })),
    }
}

/// The error for `s` in `field`: a name where a number belongs (what the
/// commands print without `-n`), else `other`'s.
fn bad_value(
    format: Format,
    field: Field,
    s: &str,
    other: fn(Format, Field, String) -> LineError,
) -> LineError {
    let value = shown(s);
    if looks_like_name(s) {
        LineError::Name {
            format,
            field,
            value,
        }
    } else {
        other(format, field, value)
    }
}

/// A port number, or the error naming `field`.
pub(super) fn port(format: Format, end: End, s: &str) -> Result<u16, LineError> {
    if !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(p) = s.parse() {
            return Ok(p);
        }
    }
    Err(bad_value(format, end.port(), s, |format, field, value| {
        LineError::Port {
            format,
            field,
            value,
        }
    }))
}

/// An endpoint of `ss`/`netstat`/pairs: `v4:port`, `[v6]:port`,
/// `[v6]%dev:port`, or with `bare_v6` also `v6:port` (netstat and older
/// ss: `::1:8080`, `:::80`). `None` for the port means `*` (any).
pub(super) fn endpoint(
    format: Format,
    end: End,
    s: &str,
    bare_v6: bool,
) -> Result<(IpAddr, Option<u16>), LineError> {
    endpoint_zoned(format, end, s, bare_v6).map(|(a, p, _)| (a, p))
}

/// An endpoint: [`endpoint`] with the IPv6 zone it dropped.
pub(super) type Endpoint = (IpAddr, Option<u16>, Option<Zone>);

/// [`endpoint`], with the IPv6 zone (`%eth0`) it dropped, so the caller
/// can say so.
pub(super) fn endpoint_zoned(
    format: Format,
    end: End,
    s: &str,
    bare_v6: bool,
) -> Result<Endpoint, LineError> {
    let mut bracket_zone = None;
    let (a, p) = if s.starts_with('[') {
        // `[addr]:port` or `[addr]%dev:port`
        match s.find(']') {
            Some(close) => {
                let (a, rest) = s.split_at(close + 1);
                let rest = match rest.strip_prefix('%') {
                    Some(dev) => match dev.rfind(':') {
                        Some(i) => {
                            bracket_zone = Some(&dev[..i]);
                            &dev[i..]
                        }
                        None => return Err(missing_port(format, end, s)),
                    },
                    None => rest,
                };
                match rest.strip_prefix(':') {
                    Some(p) => (a, p),
                    None => return Err(missing_port(format, end, s)),
                }
            }
            None => return Err(addr(format, end, s).unwrap_err()),
        }
    } else {
        let colons = s.matches(':').count();
        if colons == 1 || (bare_v6 && colons > 1) {
            s.rsplit_once(':').expect("has a colon")
        } else if colons == 0 {
            return Err(missing_port(format, end, s));
        } else {
            return Err(LineError::Address {
                format,
                field: end.addr(),
                value: shown(s),
            });
        }
    };
    let (ip, zone) = match (a, bracket_zone) {
        ("*", _) => (IpAddr::V6(Ipv6Addr::UNSPECIFIED), None),
        (_, None) => addr_zoned(format, end, a)?,
        // `[fe80::1]%eth0`: the zone of an IPv6 address, at most an
        // interface name long.
        (_, Some(z)) => match (addr_zoned(format, end, a)?, Zone::new(z)) {
            ((ip @ IpAddr::V6(_), _), Some(zone)) => (ip, Some(zone)),
            _ => {
                return Err(LineError::Address {
                    format,
                    field: end.addr(),
                    value: shown(s),
                })
            }
        },
    };
    let port = if p == "*" {
        None
    } else {
        Some(port(format, end, p)?)
    };
    Ok((ip, port, zone))
}

/// The note for the zones an endpoint pair dropped.
fn zone_note(a: Option<Zone>, b: Option<Zone>) -> Option<LineNote> {
    a.or(b).map(|zone| LineNote::Zone { zone })
}

fn missing_port(format: Format, end: End, s: &str) -> LineError {
    if looks_like_name(s) {
        LineError::Name {
            format,
            field: end.addr(),
            value: shown(s),
        }
    } else {
        LineError::Port {
            format,
            field: end.port(),
            value: shown(s),
        }
    }
}

/// Builds the connection with its note, refusing mixed families.
pub(super) fn conn(
    format: Format,
    a: SocketAddr,
    b: SocketAddr,
    meaning: Meaning,
    listener: Option<u32>,
    proto: Option<Proto>,
    note: Option<LineNote>,
) -> Result<Line, LineError> {
    if a.is_ipv4() != b.is_ipv4() {
        return Err(LineError::MixedFamilies {
            format,
            a: a.ip().to_string(),
            b: b.ip().to_string(),
        });
    }
    Ok(Line::Conn(Conn {
        a,
        b,
        meaning,
        listener,
        proto,
        note,
    }))
}

fn unrecognized(format: Format, t: &str) -> LineError {
    LineError::Unrecognized {
        format,
        value: shown(t),
    }
}

fn is_count(s: &str) -> bool {
    !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit())
}

/// The wildcard socket address of the family of `ip` (for a LISTEN line's
/// `*` port, which does not happen, and for `*` addresses).
fn listening(ip: IpAddr, port: Option<u16>, proto: Option<Proto>) -> Line {
    Line::Listening {
        addr: SocketAddr::new(ip, port.unwrap_or(0)),
        proto,
    }
}

/// What a TCP state name says: a listener, a socket that is not a
/// connection, or a connection whose local side is the client (SYN-SENT),
/// the server (SYN-RECV) or either.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Listen,
    Unconnected,
    Conn(Meaning),
}

/// ss (`ESTAB`, `SYN-SENT`, `UNCONN`) and netstat (`ESTABLISHED`,
/// `SYN_SENT`) state names; `None` for a word that is no state.
fn state(s: &str) -> Option<State> {
    let u = s.to_ascii_uppercase().replace('_', "-");
    Some(match u.as_str() {
        "LISTEN" => State::Listen,
        "UNCONN" | "CLOSE" | "CLOSED" => State::Unconnected,
        "SYN-SENT" => State::Conn(Meaning::ClientFirst),
        "SYN-RECV" => State::Conn(Meaning::ServerFirst),
        "ESTAB" | "ESTABLISHED" | "FIN-WAIT-1" | "FIN-WAIT-2" | "FIN-WAIT1" | "FIN-WAIT2"
        | "TIME-WAIT" | "CLOSE-WAIT" | "LAST-ACK" | "CLOSING" | "UNKNOWN" | "BOUND"
        | "NEW-SYN-RECV" => State::Conn(Meaning::LocalFirst),
        _ => return None,
    })
}

/// The local and peer endpoints with a state, as ss, netstat and
/// /proc/net give them. With `udp_member`, an unconnected socket with a
/// wildcard peer is a member of the port's group: UDP has no LISTEN state,
/// so `ss -uan` shows the group's sockets as `UNCONN` and netstat with no
/// state (a UDP socket joins its group at bind()).
fn socket_line(
    format: Format,
    local: Endpoint,
    peer: Endpoint,
    state: Option<State>,
    proto: Option<Proto>,
    udp_member: bool,
) -> Result<Line, LineError> {
    let peer_wild = peer.1.is_none() || (peer.1 == Some(0) && peer.0.is_unspecified());
    match state {
        Some(State::Listen) => Ok(listening(local.0, local.1, proto)),
        Some(State::Unconnected) | None if peer_wild && udp_member && local.1.is_some() => {
            Ok(listening(local.0, local.1, Some(Proto::Udp)))
        }
        _ if peer_wild => Ok(Line::Skip(Skip::NotConnection)),
        Some(State::Unconnected) if peer.0.is_unspecified() => Ok(Line::Skip(Skip::NotConnection)),
        _ => {
            let Some(lport) = local.1 else {
                return Ok(Line::Skip(Skip::NotConnection));
            };
            let meaning = match state {
                Some(State::Conn(m)) => m,
                _ => Meaning::LocalFirst,
            };
            conn(
                format,
                SocketAddr::new(local.0, lport),
                SocketAddr::new(peer.0, peer.1.expect("not wild")),
                meaning,
                None,
                proto,
                zone_note(local.2, peer.2),
            )
        }
    }
}

/// ss Netid values (`ss -a` without a family option).
fn ss_netid(s: &str) -> Option<Option<Proto>> {
    match s {
        "tcp" | "mptcp" => Some(Some(Proto::Tcp)),
        "udp" => Some(Some(Proto::Udp)),
        "u_str" | "u_dgr" | "u_seq" | "raw" | "p_raw" | "p_dgr" | "nl" | "sctp" | "dccp"
        | "tipc" | "xdp" | "v_str" | "v_dgr" | "icmp6" | "???" => Some(None),
        _ => None,
    }
}

/// The start of a line that is the rest of the `ss` line above, wrapped:
/// the process and `-e` extras (`users:((…))`, `ino:`, `sk:`, `cgroup:`,
/// `uid:`, `v6only:1`, `<->`), timers and memory (`timer:(…)`,
/// `skmem:(…)`) and `-i`'s TCP info (`cubic wscale:7,7 rto:204 …`).
fn ss_continuation(first: &str) -> bool {
    if first == "<->" || first == "->" || first == "<-" {
        return true;
    }
    let key = first.split([':', '(']).next().unwrap_or("");
    let known = matches!(
        key,
        "users"
            | "ino"
            | "sk"
            | "cgroup"
            | "uid"
            | "v6only"
            | "timer"
            | "skmem"
            | "fwmark"
            | "tos"
            | "tclass"
            | "class"
            | "mem"
            | "wscale"
            | "rto"
            | "rtt"
            | "mss"
            | "pmtu"
            | "rcvmss"
            | "advmss"
            | "cwnd"
            | "ssthresh"
            | "bytes_sent"
            | "bytes_acked"
            | "bytes_received"
            | "segs_out"
            | "segs_in"
            | "send"
            | "lastsnd"
            | "lastrcv"
            | "lastack"
            | "pacing_rate"
            | "delivery_rate"
            | "app_limited"
            | "busy"
            | "rcv_space"
            | "rcv_ssthresh"
            | "minrtt"
            | "snd_wnd"
            | "data_segs_out"
            | "data_segs_in"
    );
    let tcp_info = matches!(
        first,
        "cubic"
            | "bbr"
            | "bbr2"
            | "reno"
            | "dctcp"
            | "htcp"
            | "vegas"
            | "westwood"
            | "ts"
            | "sack"
            | "ecn"
            | "ecnseen"
            | "fastopen"
            | "nodelay"
    );
    known && first.len() > key.len() || tcp_info
}

/// `ss`: `[Netid] [State] Recv-Q Send-Q Local Peer [Process / -e / -p …]`.
/// The State column is absent with a state filter (`ss -tn state
/// established`); the rest of the line (`users:((…))`, `ino:`, `uid:`,
/// `cgroup:`, timers) is ignored, and so is that rest wrapped onto a line
/// of its own. `UNCONN` sockets with a wildcard peer are UDP group members
/// (unless the Netid says TCP).
pub(super) fn ss(t: &str) -> Result<Line, LineError> {
    const F: Format = Format::Ss;
    let mut f = t.split_whitespace();
    let first = f.next().unwrap_or("");
    if matches!(first, "State" | "Netid" | "Recv-Q") {
        return Ok(Line::Skip(Skip::Header));
    }
    let mut tok = first;
    let mut proto = None;
    if let Some(p) = ss_netid(tok) {
        if p.is_none() {
            return Ok(Line::Skip(Skip::OtherProto));
        }
        proto = p;
        tok = f.next().unwrap_or("");
    }
    let st = state(tok);
    if st.is_some() {
        tok = f.next().unwrap_or("");
    } else if proto.is_none() && ss_continuation(first) {
        return Ok(Line::Skip(Skip::Continuation));
    }
    let send = f.next().unwrap_or("");
    if !is_count(tok) || !is_count(send) {
        return Err(unrecognized(F, t));
    }
    let (Some(l), Some(p)) = (f.next(), f.next()) else {
        return Err(LineError::FieldCount {
            format: F,
            found: t.split_whitespace().count(),
        });
    };
    let local = endpoint_zoned(F, End::Local, l, true)?;
    let peer = endpoint_zoned(F, End::Peer, p, true)?;
    let member = st == Some(State::Unconnected) && proto != Some(Proto::Tcp);
    socket_line(F, local, peer, st, proto, member)
}

/// net-tools netstat's address column without `-W`: `ADDR:PORT` is cut to
/// 23 characters, the address losing its end and the port kept
/// (netstat.c, `tcp_do_one`: `if (strlen(local_addr) + strlen(buffer) >
/// 22) local_addr[22 - strlen(buffer)] = '\0'`). A field of exactly 23
/// characters may be cut; IPv4 (at most 21) never is.
const NETSTAT_COLUMN: usize = 23;

/// `netstat -tn` / `-tun` / `-tan`: `Proto Recv-Q Send-Q Local Foreign
/// [State] [PID/Program]`. An IPv6 field that fills its column is refused
/// as possibly cut ([`LineError::Cut`]) unless a longer field on the line
/// shows `-W`. A UDP socket with a wildcard peer is a group member.
pub(super) fn netstat(t: &str) -> Result<Line, LineError> {
    const F: Format = Format::Netstat;
    if t.starts_with("Active ") {
        return Ok(Line::Skip(Skip::Trailer));
    }
    let f: Vec<&str> = t.split_whitespace().take(7).collect();
    if f[0] == "Proto" {
        return Ok(Line::Skip(Skip::Header));
    }
    let proto = match f[0] {
        "tcp" | "tcp6" => Proto::Tcp,
        "udp" | "udp6" => Proto::Udp,
        "unix" | "raw" | "raw6" | "udpl" | "udpl6" | "sctp" | "ax25" | "ipx" | "netrom" => {
            return Ok(Line::Skip(Skip::OtherProto))
        }
        _ => return Err(unrecognized(F, t)),
    };
    if f.len() < 5 {
        return Err(LineError::FieldCount {
            format: F,
            found: f.len(),
        });
    }
    if !is_count(f[1]) || !is_count(f[2]) {
        return Err(unrecognized(F, t));
    }
    let wide = f[3].len() > NETSTAT_COLUMN || f[4].len() > NETSTAT_COLUMN;
    for (s, end) in [(f[3], End::Local), (f[4], End::Peer)] {
        if !wide && s.len() == NETSTAT_COLUMN && s.matches(':').count() > 1 {
            return Err(LineError::Cut {
                format: F,
                field: end.addr(),
                value: shown(s),
            });
        }
    }
    let local = endpoint_zoned(F, End::Local, f[3], true)?;
    let peer = endpoint_zoned(F, End::Peer, f[4], true)?;
    let st = f.get(5).and_then(|s| state(s));
    socket_line(F, local, peer, st, Some(proto), proto == Proto::Udp)
}

/// A hex address of /proc/net/tcp: the `__be32` words printed as host-order
/// (little-endian) `%08X` (net/ipv4/tcp_ipv4.c `get_tcp4_sock`,
/// net/ipv6/tcp_ipv6.c `get_tcp6_sock`), so each word's bytes are in
/// reverse. Assumes the paste came from a little-endian host (x86, arm64).
fn proc_addr(s: &str) -> Option<IpAddr> {
    if !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let word = |i: usize| u32::from_str_radix(&s[8 * i..8 * i + 8], 16).ok();
    match s.len() {
        8 => Some(IpAddr::V4(Ipv4Addr::from(word(0)?.to_le_bytes()))),
        32 => {
            let mut o = [0u8; 16];
            for i in 0..4 {
                o[4 * i..4 * i + 4].copy_from_slice(&word(i)?.to_le_bytes());
            }
            Some(IpAddr::V6(Ipv6Addr::from(o)))
        }
        _ => None,
    }
}

fn proc_endpoint(end: End, s: &str) -> Result<(IpAddr, u16), LineError> {
    const F: Format = Format::ProcNet;
    let (a, p) = s.split_once(':').ok_or_else(|| LineError::Address {
        format: F,
        field: end.addr(),
        value: shown(s),
    })?;
    let ip = proc_addr(a).ok_or_else(|| LineError::Address {
        format: F,
        field: end.addr(),
        value: shown(a),
    })?;
    let port = (p.len() == 4)
        .then(|| u16::from_str_radix(p, 16).ok())
        .flatten()
        .ok_or_else(|| LineError::Port {
            format: F,
            field: end.port(),
            value: shown(p),
        })?;
    Ok((canonical(ip), port))
}

/// `/proc/net/tcp`, `/proc/net/tcp6` (and `udp`, `udp6`): `sl: local rem st
/// …`. The states are include/net/tcp_states.h's: `0A` is LISTEN, `01`
/// ESTABLISHED, `02` SYN_SENT, `03` SYN_RECV, `07` CLOSE (unconnected UDP).
pub(super) fn proc_net(t: &str) -> Result<Line, LineError> {
    const F: Format = Format::ProcNet;
    let f: Vec<&str> = t.split_whitespace().take(4).collect();
    if f[0] == "sl" {
        return Ok(Line::Skip(Skip::Header));
    }
    let sl = f[0].strip_suffix(':');
    if !sl.is_some_and(is_count) {
        return Err(unrecognized(F, t));
    }
    if f.len() < 4 {
        return Err(LineError::FieldCount {
            format: F,
            found: f.len(),
        });
    }
    let local = proc_endpoint(End::Local, f[1])?;
    let peer = proc_endpoint(End::Peer, f[2])?;
    let st = match u8::from_str_radix(f[3], 16)
        .ok()
        .filter(|_| f[3].len() == 2)
    {
        Some(0x0a) => Some(State::Listen),
        Some(0x07) => Some(State::Unconnected),
        Some(0x02) => Some(State::Conn(Meaning::ClientFirst)),
        Some(0x03) | Some(0x0c) => Some(State::Conn(Meaning::ServerFirst)),
        Some(1..=0x0b) => Some(State::Conn(Meaning::LocalFirst)),
        _ => {
            return Err(LineError::Unrecognized {
                format: F,
                value: shown(f[3]),
            })
        }
    };
    let wild = peer.0.is_unspecified() && peer.1 == 0;
    socket_line(
        F,
        (local.0, Some(local.1), None),
        (peer.0, (!wild).then_some(peer.1), None),
        st,
        None,
        false,
    )
}

/// `conntrack -L` (and `/proc/net/nf_conntrack`, which starts with
/// `ipv4 2`): `PROTO NUM TIMEOUT [STATE] src= dst= sport= dport= … src=
/// dst= sport= dport= … [ASSURED] mark= use=`. The first quadruple is the
/// original direction, whose source is the client, the second the reply
/// direction (conntrack(8); the fields are printed by
/// libnetfilter_conntrack's `__snprintf_conntrack_default`). When the
/// reply is not the original swapped, the connection was translated (DNAT
/// to a Service's pod, a published port, a VIP; or SNAT): the receiving
/// socket sees the reply direction reversed, so that is the connection,
/// with [`LineNote::Translated`] naming the original.
pub(super) fn conntrack(t: &str) -> Result<Line, LineError> {
    const F: Format = Format::Conntrack;
    if t.starts_with("conntrack v") && t.contains("flow entries") {
        return Ok(Line::Skip(Skip::Trailer));
    }
    let mut f = t
        .split_whitespace()
        .skip_while(|w| w.starts_with('[') && w.ends_with(']'))
        .peekable();
    if matches!(f.peek(), Some(&"ipv4") | Some(&"ipv6")) {
        f.next();
        f.next();
    }
    let name = f.next().unwrap_or("");
    let proto = match name {
        "tcp" => Proto::Tcp,
        "udp" => Proto::Udp,
        "icmp" | "icmpv6" | "udplite" | "sctp" | "dccp" | "gre" | "unknown" => {
            return Ok(Line::Skip(Skip::OtherProto))
        }
        _ => return Err(unrecognized(F, t)),
    };
    // [src, dst, sport, dport] of the original, then the reply direction.
    let mut dirs: [[Option<&str>; 4]; 2] = [[None; 4]; 2];
    for w in f {
        let Some((k, v)) = w.split_once('=') else {
            continue;
        };
        let i = match k {
            "src" => 0,
            "dst" => 1,
            "sport" => 2,
            "dport" => 3,
            _ => continue,
        };
        match dirs.iter_mut().find(|d| d[i].is_none()) {
            Some(d) => d[i] = Some(v),
            None => break,
        }
    }
    fn need(v: Option<&str>, field: Field) -> Result<&str, LineError> {
        v.ok_or(LineError::Missing { format: F, field })
    }
    let [o, r] = dirs;
    let src = addr(F, End::Source, need(o[0], Field::SourceAddress)?)?;
    let dst = addr(F, End::Destination, need(o[1], Field::DestinationAddress)?)?;
    let sport = port(F, End::Source, need(o[2], Field::SourcePort)?)?;
    let dport = port(F, End::Destination, need(o[3], Field::DestinationPort)?)?;
    let (client, server) = (SocketAddr::new(src, sport), SocketAddr::new(dst, dport));
    // The reply direction, when all four fields are there: its source is
    // the server as it really is, its destination the client as the server
    // sees it.
    let reply = match r {
        [Some(rs), Some(rd), Some(rsp), Some(rdp)] => Some((
            SocketAddr::new(
                addr(F, End::Destination, rs)?,
                port(F, End::Destination, rsp)?,
            ),
            SocketAddr::new(addr(F, End::Source, rd)?, port(F, End::Source, rdp)?),
        )),
        _ => None,
    };
    match reply {
        Some((real_server, seen_client)) if (seen_client, real_server) != (client, server) => conn(
            F,
            seen_client,
            real_server,
            Meaning::ClientFirst,
            None,
            Some(proto),
            Some(LineNote::Translated {
                original_server: server,
            }),
        ),
        _ => conn(
            F,
            client,
            server,
            Meaning::ClientFirst,
            None,
            Some(proto),
            None,
        ),
    }
}

/// A tcpdump endpoint, `ADDR.PORT` (IPv4 `127.0.0.1.8080`, IPv6 `::1.8080`).
fn dump_endpoint(end: End, s: &str) -> Result<SocketAddr, LineError> {
    const F: Format = Format::Tcpdump;
    let Some((a, p)) = s.rsplit_once('.') else {
        return Err(LineError::Address {
            format: F,
            field: end.addr(),
            value: shown(s),
        });
    };
    // A host name: `localhost.42001`, `web-1.example.com.http`.
    if a.parse::<IpAddr>().is_err() && looks_like_name(a) {
        return Err(LineError::Name {
            format: F,
            field: end.addr(),
            value: shown(s),
        });
    }
    let ip = addr(F, end, a)?;
    let port = port(F, end, p)?;
    Ok(SocketAddr::new(ip, port))
}

/// tcpdump's one-line output: `[TIME] [IFACE DIR] IP|IP6 SRC.PORT >
/// DST.PORT: Flags [S], …` or `…: UDP, length 5` (print-tcp.c,
/// print-udp.c). A SYN without ACK (`[S]`, `[SE]`, `[SEW]`) comes from the
/// client, a SYN-ACK (`[S.]`) from the server; other packets say nothing.
/// The `-v` continuation line (`    SRC > DST: …`) reads the same.
pub(super) fn tcpdump(t: &str) -> Result<Line, LineError> {
    const F: Format = Format::Tcpdump;
    if t.starts_with("tcpdump:") || t.starts_with("listening on ") {
        return Ok(Line::Skip(Skip::Header));
    }
    let words: Vec<&str> = t.split_whitespace().take(64).collect();
    if words.len() == 3
        && is_count(words[0])
        && words[1] == "packets"
        && matches!(words[2], "captured" | "dropped" | "received")
        || t.ends_with("packets received by filter")
        || t.ends_with("packets dropped by kernel")
    {
        return Ok(Line::Skip(Skip::Trailer));
    }
    let Some(gt) = (1..words.len().saturating_sub(1))
        .find(|&i| words[i] == ">" && words[i + 1].ends_with(':'))
    else {
        let other = words
            .iter()
            .take(8)
            .any(|w| matches!(*w, "ARP," | "ARP" | "STP" | "LLDP" | "IP" | "IP6"));
        return if other {
            Ok(Line::Skip(Skip::OtherProto))
        } else {
            Err(unrecognized(F, t))
        };
    };
    let src = words[gt - 1];
    let dst = words[gt + 1].trim_end_matches(':');
    let after = words.get(gt + 2).copied().unwrap_or("");
    // ICMP and other protocols without ports: `IP 10.0.0.1 > 10.0.0.2: ICMP echo request`.
    if src.parse::<IpAddr>().is_ok()
        || matches!(
            after,
            "ICMP" | "ICMP6" | "IGMP" | "GREv0," | "VRRPv2," | "OSPFv2,"
        )
    {
        return Ok(Line::Skip(Skip::OtherProto));
    }
    let a = dump_endpoint(End::Source, src)?;
    let b = dump_endpoint(End::Destination, dst)?;
    // tcpdump prints `Flags [..]` first for every TCP segment (print-tcp.c,
    // `tcp_print`); what else has two ports is UDP: `UDP, length N`
    // (print-udp.c) or, for the ports it decodes (DNS on 53, NTP, QUIC,
    // syslog), that protocol's own words, with no `UDP` at all.
    let (meaning, proto) = if after == "Flags" {
        let flags = words.get(gt + 3).copied().unwrap_or("");
        let m = if flags.contains('S') && flags.contains('.') {
            Meaning::ServerFirst
        } else if flags.contains('S') {
            Meaning::ClientFirst
        } else {
            Meaning::Unknown
        };
        (m, Some(Proto::Tcp))
    } else if after.eq_ignore_ascii_case("sctp")
        || after.starts_with("DCCP")
        || after.starts_with("UDPLITE")
    {
        return Ok(Line::Skip(Skip::OtherProto));
    } else {
        (Meaning::Unknown, Some(Proto::Udp))
    };
    conn(F, a, b, meaning, None, proto, None)
}

/// Body fields of the plain formats: split on white space, `#` starts a
/// comment.
fn plain_fields(t: &str) -> Vec<&str> {
    t.split('#')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .take(8)
        .collect()
}

/// Two endpoints from 2 (`a:p b:p`) or 4 (`a p b p`) fields, and the
/// note for an IPv6 zone they dropped.
fn two_ends(
    format: Format,
    f: &[&str],
    found: usize,
) -> Result<(SocketAddr, SocketAddr, Option<LineNote>), LineError> {
    let ((sa, sz), sp, (da, dz), dp) = match f.len() {
        4 => (
            addr_zoned(format, End::Source, f[0])?,
            port(format, End::Source, f[1])?,
            addr_zoned(format, End::Destination, f[2])?,
            port(format, End::Destination, f[3])?,
        ),
        2 => {
            let (sa, sp, sz) = endpoint_zoned(format, End::Source, f[0], false)?;
            let (da, dp, dz) = endpoint_zoned(format, End::Destination, f[1], false)?;
            let star = |end: End| LineError::Port {
                format,
                field: end.port(),
                value: "*".into(),
            };
            (
                (sa, sz),
                sp.ok_or_else(|| star(End::Source))?,
                (da, dz),
                dp.ok_or_else(|| star(End::Destination))?,
            )
        }
        _ => return Err(LineError::FieldCount { format, found }),
    };
    Ok((
        SocketAddr::new(sa, sp),
        SocketAddr::new(da, dp),
        zone_note(sz, dz),
    ))
}

fn listener(format: Format, s: &str) -> Result<u32, LineError> {
    if is_count(s) {
        if let Ok(n) = s.parse() {
            return Ok(n);
        }
    }
    Err(LineError::Listener {
        format,
        value: shown(s),
    })
}

/// `SADDR:SPORT DADDR:DPORT` or `SADDR SPORT DADDR DPORT`: which side is
/// the client is not said.
pub(super) fn pairs(t: &str) -> Result<Line, LineError> {
    let f = plain_fields(t);
    let (a, b, note) = two_ends(Format::Pairs, &f, f.len())?;
    conn(Format::Pairs, a, b, Meaning::Unknown, None, None, note)
}

/// A pair and the listener that received it (3 or 5 fields), client first:
/// what `reuseport-agent recover --lines` reads.
pub(super) fn observed(t: &str) -> Result<Line, LineError> {
    const F: Format = Format::Observed;
    let f = plain_fields(t);
    if f.len() != 3 && f.len() != 5 {
        return Err(LineError::FieldCount {
            format: F,
            found: f.len(),
        });
    }
    let (last, head) = f.split_last().expect("3 or 5 fields");
    let (a, b, note) = two_ends(F, head, f.len())?;
    let l = listener(F, last)?;
    conn(F, a, b, Meaning::ClientFirst, Some(l), None, note)
}

/// The lookup page's line: `SADDR:SPORT -> DADDR:DPORT listener N`, tabs or
/// spaces between, an optional `# comment` after.
pub(super) fn page(t: &str) -> Result<Line, LineError> {
    const F: Format = Format::Page;
    let f = plain_fields(t);
    if f.len() != 5 {
        return Err(LineError::FieldCount {
            format: F,
            found: f.len(),
        });
    }
    if f[1] != "->" || f[3] != "listener" {
        return Err(unrecognized(F, t));
    }
    let (a, b, note) = two_ends(F, &[f[0], f[2]], 5)?;
    let l = listener(F, f[4])?;
    conn(F, a, b, Meaning::ClientFirst, Some(l), None, note)
}

/// A BSD endpoint: `ADDR.PORT` (`10.0.0.1.22`, `fe80::1%lo0.631`, `*.443`,
/// `*.*`) as netstat prints it, or `ADDR:PORT` (`*:80`, `10.0.0.1:22`) as
/// sockstat does.
fn bsd_endpoint(s: &str, sep: char) -> bool {
    let Some((a, p)) = s.rsplit_once(sep) else {
        return false;
    };
    let port =
        p == "*" || (!p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    let a = a.split_once('%').map_or(a, |(x, _)| x);
    let a = a
        .strip_prefix('[')
        .and_then(|x| x.strip_suffix(']'))
        .unwrap_or(a);
    port && (a == "*" || a.parse::<IpAddr>().is_ok())
}

/// FreeBSD's and macOS's protocol names, which Linux never prints
/// (`tcp46` is a dual-stack socket).
fn bsd_proto(s: &str) -> bool {
    matches!(s, "tcp4" | "tcp6" | "tcp46" | "udp4" | "udp6" | "udp46")
}

/// FreeBSD and macOS `netstat -an` (`Proto Recv-Q Send-Q Local Address
/// Foreign Address (state)`, rows `tcp4 0 0 10.0.0.1.22 10.0.0.2.51234
/// ESTABLISHED`) and FreeBSD `sockstat` (`USER COMMAND PID FD PROTO LOCAL
/// ADDRESS FOREIGN ADDRESS`). Each socket line is refused naming the
/// system: there SO_REUSEPORT lets the last socket bound take the port,
/// and FreeBSD's hashing groups are SO_REUSEPORT_LB, so no answer of the
/// Linux model applies.
pub(super) fn bsd(t: &str) -> Result<Line, LineError> {
    const F: Format = Format::Bsd;
    if t.starts_with("Active ") {
        return Ok(Line::Skip(Skip::Trailer));
    }
    let f: Vec<&str> = t.split_whitespace().take(8).collect();
    let netstat_header = f[0] == "Proto" && t.contains("(state)");
    let sockstat_header = f.len() >= 5 && f[..5] == ["USER", "COMMAND", "PID", "FD", "PROTO"];
    if netstat_header || sockstat_header {
        return Ok(Line::Skip(Skip::Header));
    }
    let refuse = |command: &str| {
        Err(LineError::OtherSystem {
            format: F,
            command: command.into(),
        })
    };
    // netstat: PROTO RECV-Q SEND-Q LOCAL FOREIGN [STATE]
    let netstat_row = f.len() >= 5 && bsd_proto(f[0]) && is_count(f[1]) && is_count(f[2]);
    if netstat_row && bsd_endpoint(f[3], '.') && bsd_endpoint(f[4], '.') {
        return refuse("netstat");
    }
    // sockstat: USER COMMAND PID FD PROTO LOCAL FOREIGN
    if f.len() >= 7 && is_count(f[2]) && bsd_proto(f[4]) {
        return refuse("sockstat");
    }
    if f.len() >= 5 && matches!(f[4], "stream" | "dgram" | "seqpac")
        || matches!(f[0], "unix" | "divert" | "icm6" | "ip6" | "rip6" | "icmp6")
    {
        return Ok(Line::Skip(Skip::OtherProto));
    }
    Err(unrecognized(F, t))
}
