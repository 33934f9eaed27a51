//! Packets as 4-tuples, their kernel byte order, and the text format people
//! paste (`SADDR SPORT DADDR DPORT` or `SADDR:SPORT DADDR:DPORT`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::echo::shown;
use crate::error::ParseError;

/// Transport protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    /// TCP: members join the group at `listen()`.
    Tcp,
    /// UDP: members join the group at `bind()`.
    Udp,
}

impl Proto {
    /// The protocol's name as people write it (`TCP`, `UDP`).
    pub fn name(self) -> &'static str {
        match self {
            Proto::Tcp => "TCP",
            Proto::Udp => "UDP",
        }
    }

    /// The call at which a socket joins its group (and so its number).
    pub fn join_call(self) -> &'static str {
        match self {
            Proto::Tcp => "listen",
            Proto::Udp => "bind",
        }
    }
}

impl FromStr for Proto {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "tcp" => Ok(Proto::Tcp),
            "udp" => Ok(Proto::Udp),
            _ => Err(format!("protocol `{s}` is neither tcp nor udp")),
        }
    }
}

/// One packet's addressing: S is the client (the SYN's or datagram's
/// source), D the server side where the group is bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Tuple {
    /// Client address.
    #[cfg_attr(feature = "ts", ts(as = "String"))]
    pub saddr: IpAddr,
    /// Client port (host order number).
    pub sport: u16,
    /// Server address (the packet's destination).
    #[cfg_attr(feature = "ts", ts(as = "String"))]
    pub daddr: IpAddr,
    /// Server port (host order number).
    pub dport: u16,
}

impl Tuple {
    /// Builds an IPv4 tuple.
    pub fn v4(saddr: Ipv4Addr, sport: u16, daddr: Ipv4Addr, dport: u16) -> Self {
        Tuple {
            saddr: saddr.into(),
            sport,
            daddr: daddr.into(),
            dport,
        }
    }

    /// Whether this is an IPv6 packet.
    pub fn is_v6(&self) -> bool {
        self.daddr.is_ipv6()
    }
}

impl std::fmt::Display for Tuple {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}",
            SocketAddr::new(self.saddr, self.sport),
            SocketAddr::new(self.daddr, self.dport)
        )
    }
}

/// An IPv4 address as the kernel's `__be32` reads on a little-endian host:
/// 127.0.0.1 is `0x0100007f` (kernel-history.md §1.4).
#[inline(always)]
pub fn v4_word(a: Ipv4Addr) -> u32 {
    u32::from_le_bytes(a.octets())
}

/// An IPv6 address as `s6_addr32[0..4]` on a little-endian host: ::1 is
/// `[0, 0, 0, 0x01000000]`.
pub fn v6_words(a: Ipv6Addr) -> [u32; 4] {
    let o = a.octets();
    std::array::from_fn(|i| {
        u32::from_le_bytes([o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]])
    })
}

/// A port as the kernel's `__be16` reads on a little-endian host, zero
/// extended: 40000 (0x9c40) is `0x409c`.
#[inline(always)]
pub fn port_raw(port: u16) -> u32 {
    port.swap_bytes() as u32
}

/// Treats `::ffff:a.b.c.d` as the IPv4 address it carries: such packets are
/// IPv4 on the wire.
pub(crate) fn canonical(a: IpAddr) -> IpAddr {
    match a {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(a),
        v4 => v4,
    }
}

/// The wildcard address of `a`'s family (`0.0.0.0` or `::`).
pub(crate) fn unspecified_like(a: IpAddr) -> IpAddr {
    match a {
        IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    }
}

fn parse_addr(field: &'static str, s: &str) -> Result<IpAddr, ParseError> {
    let t = s
        .strip_prefix('[')
        .and_then(|x| x.strip_suffix(']'))
        .unwrap_or(s);
    t.parse().map(canonical).map_err(|_| ParseError::Address {
        field,
        value: shown(s),
    })
}

fn parse_port(field: &'static str, s: &str) -> Result<u16, ParseError> {
    s.parse().map_err(|_| ParseError::Port {
        field,
        value: shown(s),
    })
}

fn parse_endpoint(which: &'static str, s: &str) -> Result<(IpAddr, u16), ParseError> {
    let (addr_field, port_field) = if which == "source" {
        ("source address", "source port")
    } else {
        ("destination address", "destination port")
    };
    // `[v6]:port` or `v4:port`; a bare IPv6 address has several colons and no brackets.
    let split = if let Some(rest) = s.strip_prefix('[') {
        rest.split_once("]:")
    } else if s.matches(':').count() == 1 {
        s.split_once(':')
    } else {
        None
    };
    let (a, p) = split.ok_or_else(|| ParseError::Address {
        field: addr_field,
        value: shown(s),
    })?;
    Ok((parse_addr(addr_field, a)?, parse_port(port_field, p)?))
}

fn build(saddr: IpAddr, sport: u16, daddr: IpAddr, dport: u16) -> Result<Tuple, ParseError> {
    if saddr.is_ipv4() != daddr.is_ipv4() {
        return Err(ParseError::MixedFamilies {
            saddr: saddr.to_string(),
            daddr: daddr.to_string(),
        });
    }
    Ok(Tuple {
        saddr,
        sport,
        daddr,
        dport,
    })
}

/// Splits a line into fields, ignoring `#` comments. Returns `None` for a
/// blank or comment-only line.
fn fields(line: &str) -> Option<Vec<&str>> {
    let body = line.split('#').next().unwrap_or("").trim();
    if body.is_empty() {
        None
    } else {
        Some(body.split_whitespace().collect())
    }
}

fn tuple_from(f: &[&str]) -> Result<Tuple, ParseError> {
    match f.len() {
        4 => build(
            parse_addr("source address", f[0])?,
            parse_port("source port", f[1])?,
            parse_addr("destination address", f[2])?,
            parse_port("destination port", f[3])?,
        ),
        2 => {
            let (sa, sp) = parse_endpoint("source", f[0])?;
            let (da, dp) = parse_endpoint("destination", f[1])?;
            build(sa, sp, da, dp)
        }
        n => Err(ParseError::FieldCount {
            found: n,
            extra: "",
        }),
    }
}

/// Parses one line of tuple text: `SADDR SPORT DADDR DPORT` or
/// `SADDR:SPORT DADDR:DPORT` (IPv6 as `[addr]:port`). Blank lines and `#`
/// comments give `Ok(None)`.
pub fn parse_tuple_line(line: &str) -> Result<Option<Tuple>, ParseError> {
    match fields(line) {
        None => Ok(None),
        Some(f) => tuple_from(&f).map(Some),
    }
}

/// Parses one line of an observed trace: a tuple followed by the listener
/// that received it (`SADDR SPORT DADDR DPORT LISTENER`, or the two-field
/// form plus `LISTENER`).
pub fn parse_observed_line(line: &str) -> Result<Option<(Tuple, u32)>, ParseError> {
    let Some(f) = fields(line) else {
        return Ok(None);
    };
    if f.len() != 5 && f.len() != 3 {
        return Err(ParseError::FieldCount {
            found: f.len(),
            extra: " followed by LISTENER",
        });
    }
    let (last, head) = f.split_last().expect("non-empty");
    let listener = last
        .parse()
        .map_err(|_| ParseError::Listener(last.to_string()))?;
    Ok(Some((tuple_from(head)?, listener)))
}

/// Parses a 32-bit value written in hex (`0x1a2b3c4d` or `1a2b3c4d`).
pub fn parse_hex32(s: &str) -> Result<u32, ParseError> {
    let t = s.trim();
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if digits.is_empty() || digits.len() > 8 {
        return Err(ParseError::Secret(shown(s)));
    }
    u32::from_str_radix(digits, 16).map_err(|_| ParseError::Secret(shown(s)))
}

/// Parses `i,j,k` into numbers (an empty string is an empty list).
pub fn parse_list(s: &str, what: &'static str) -> Result<Vec<u32>, ParseError> {
    if s.trim().is_empty() {
        return Ok(Vec::new());
    }
    s.split(',')
        .map(|x| {
            x.trim().parse().map_err(|_| ParseError::List {
                value: shown(s),
                what,
            })
        })
        .collect()
}

/// Parses a bind address with an optional port: `127.0.0.1`, `0.0.0.0:8080`,
/// `::`, `[::1]:8080`.
pub fn parse_bind(s: &str) -> Result<(IpAddr, Option<u16>), ParseError> {
    if let Ok(a) = s.parse::<IpAddr>() {
        return Ok((a, None));
    }
    let t = s
        .strip_prefix('[')
        .and_then(|x| x.strip_suffix(']'))
        .unwrap_or(s);
    if let Ok(a) = t.parse::<IpAddr>() {
        return Ok((a, None));
    }
    let (a, p) = parse_endpoint("destination", s).map_err(|_| ParseError::Address {
        field: "bind address",
        value: shown(s),
    })?;
    Ok((a, Some(p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_field_is_echoed_escaped_and_cut() {
        // A BOM, a right-to-left override and a huge field: shown, never raw.
        let line = "\u{feff}127.0.0.1 40000 127.0.0.1\u{202e} 8080".to_string();
        let e = parse_tuple_line(&line).unwrap_err().to_string();
        assert!(!e.contains('\u{feff}') && !e.contains('\u{202e}'), "{e}");
        assert!(e.contains("\\u{feff}") || e.contains("\\u{202e}"), "{e}");
        let long = format!("{} 40000 127.0.0.1 8080", "9".repeat(100_000));
        let e = parse_tuple_line(&long).unwrap_err().to_string();
        assert!(e.len() < 400, "{} bytes: {}", e.len(), &e[..200]);
    }

    #[test]
    fn byte_order_matches_the_kernel_on_little_endian() {
        assert_eq!(v4_word(Ipv4Addr::new(127, 0, 0, 1)), 0x0100_007f);
        assert_eq!(port_raw(40000), 0x409c);
        assert_eq!(v6_words("::1".parse().unwrap()), [0, 0, 0, 0x0100_0000]);
    }

    #[test]
    fn both_line_forms_parse_to_the_same_tuple() {
        let a = parse_tuple_line("127.0.0.9 40000 127.0.0.1 8080")
            .unwrap()
            .unwrap();
        let b = parse_tuple_line("127.0.0.9:40000 127.0.0.1:8080")
            .unwrap()
            .unwrap();
        assert_eq!(a, b);
        assert_eq!(a.sport, 40000);
        assert_eq!(a.dport, 8080);
    }

    #[test]
    fn ipv6_lines_parse_in_both_forms() {
        let a = parse_tuple_line("fd02::5 40000 ::1 8080").unwrap().unwrap();
        let b = parse_tuple_line("[fd02::5]:40000 [::1]:8080")
            .unwrap()
            .unwrap();
        assert_eq!(a, b);
        assert!(a.is_v6());
    }

    #[test]
    fn v4_mapped_addresses_become_ipv4() {
        let t = parse_tuple_line("::ffff:10.0.0.2 1234 ::ffff:10.0.0.1 80")
            .unwrap()
            .unwrap();
        assert!(!t.is_v6());
    }

    #[test]
    fn blank_and_comment_lines_are_skipped() {
        assert_eq!(parse_tuple_line("   ").unwrap(), None);
        assert_eq!(parse_tuple_line("# header").unwrap(), None);
    }

    #[test]
    fn bad_lines_name_the_field_at_fault() {
        let e = parse_tuple_line("127.0.0.1 70000 127.0.0.1 80").unwrap_err();
        assert!(e.to_string().contains("source port `70000`"), "{e}");
        let e = parse_tuple_line("127.0.0.1 1 300.0.0.1 80").unwrap_err();
        assert!(
            e.to_string().contains("destination address `300.0.0.1`"),
            "{e}"
        );
        let e = parse_tuple_line("127.0.0.1 1 ::1 80").unwrap_err();
        assert!(matches!(e, ParseError::MixedFamilies { .. }));
        let e = parse_tuple_line("127.0.0.1 1 127.0.0.1").unwrap_err();
        assert!(matches!(e, ParseError::FieldCount { found: 3, .. }));
    }

    #[test]
    fn observed_lines_carry_a_listener() {
        let (t, l) = parse_observed_line("127.0.0.9 40000 127.0.0.1 8080 3")
            .unwrap()
            .unwrap();
        assert_eq!((t.sport, l), (40000, 3));
        assert!(parse_observed_line("127.0.0.9 40000 127.0.0.1 8080 x").is_err());
    }

    #[test]
    fn hex_and_lists() {
        assert_eq!(parse_hex32("0xDEADbeef").unwrap(), 0xdead_beef);
        assert_eq!(parse_hex32("12").unwrap(), 0x12);
        assert!(parse_hex32("0x123456789").is_err());
        assert_eq!(parse_list("1, 3,0", "listeners").unwrap(), vec![1, 3, 0]);
        assert!(parse_list("1,,2", "listeners").is_err());
    }

    #[test]
    fn bind_addresses_with_and_without_port() {
        assert_eq!(
            parse_bind("0.0.0.0").unwrap(),
            ("0.0.0.0".parse().unwrap(), None)
        );
        assert_eq!(
            parse_bind("[::1]:8080").unwrap(),
            ("::1".parse().unwrap(), Some(8080))
        );
        assert_eq!(parse_bind("::").unwrap(), ("::".parse().unwrap(), None));
        assert_eq!(
            parse_bind("10.0.0.1:80").unwrap(),
            ("10.0.0.1".parse().unwrap(), Some(80))
        );
        assert!(parse_bind("nope").is_err());
    }
}
