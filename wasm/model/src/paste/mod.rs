//! Connections as people paste them: `ss`, `netstat`, `conntrack`,
//! tcpdump, `/proc/net/tcp`, CSV, address pairs, observed lines and the
//! lookup page's own lines.
//!
//! Three steps, each returning data, never sentences:
//!
//! 1. [`detect`] looks at the first [`DETECT_LINES`] non-blank lines and
//!    names the [`Format`] whose parser accepts most of them ([`Detected`];
//!    for CSV also the [`Columns`], which the caller may replace).
//! 2. A [`Parser`] reads each line into a [`Line`]: a connection ([`Conn`])
//!    with what the format says about its first endpoint ([`Meaning`]), a
//!    listening socket, a line to skip ([`Skip`]), or a [`LineError`]
//!    naming the field at fault. No input makes it panic.
//! 3. [`Sides`] decides which side of the connections is the server — from
//!    the user's bind, the paste's LISTEN lines, a port common to every
//!    line, or the format itself — and [`Decision::orient`] turns each
//!    connection into a [`Tuple`], or says why it cannot ([`Undecided`]).
//!    Nothing is assumed: a line that cannot be oriented is reported.

pub mod counts;
mod csv;
mod formats;
pub mod session;
mod sides;
pub mod tuple_lines;

use std::net::SocketAddr;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use csv::{Column, Columns, Role, Side};
pub use session::Session;
pub use sides::{
    port_rule, Basis, Decision, ListenPorts, Sides, Undecided, EPHEMERAL_LOW, MAX_LISTENING,
    SERVICE_PORTS,
};
pub use tuple_lines::{parse_tuples, ParsedLine};

pub use crate::echo::{shown, SHOWN_CHARS};
use crate::tuple::Proto;
#[allow(unused_imports)]
use crate::tuple::Tuple;

/// Lines longer than this many bytes are refused ([`LineError::TooLong`]).
pub const MAX_LINE_BYTES: usize = 4096;

/// How many non-blank lines [`detect`] looks at.
pub const DETECT_LINES: usize = 64;

/// A text format of connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// `ss -tn` (also `-tan`, `-tnp`, `-tne`, `-an`, `-H`): State, Recv-Q,
    /// Send-Q, Local, Peer, with an optional Netid column first.
    Ss,
    /// `netstat -tn` / `-tun` / `-tan`: Proto, Recv-Q, Send-Q, Local,
    /// Foreign, State.
    Netstat,
    /// `conntrack -L`: the original direction's `src= dst= sport= dport=`.
    Conntrack,
    /// tcpdump's one-line output, `SRC.PORT > DST.PORT:`, run with `-nn`.
    Tcpdump,
    /// `/proc/net/tcp`, `/proc/net/tcp6` (and the `udp` files): hex
    /// addresses in the kernel's byte order.
    ProcNet,
    /// CSV, TSV or `;`-separated columns, with or without a header.
    Csv,
    /// `SADDR:SPORT DADDR:DPORT` or `SADDR SPORT DADDR DPORT`.
    Pairs,
    /// A pair followed by the listener that received it.
    Observed,
    /// The lookup page's own line: `SADDR:SPORT -> DADDR:DPORT listener N`.
    Page,
    /// FreeBSD or macOS `netstat -an` (`tcp4`, `SRC.PORT`, `(state)`) or
    /// FreeBSD `sockstat`: recognised so that each line is refused by name
    /// ([`LineError::OtherSystem`]), never read as Linux sockets.
    Bsd,
}

impl Format {
    /// Every format, most specific first: the order [`detect`] breaks ties in.
    pub const ALL: [Format; 10] = [
        Format::Page,
        Format::Bsd,
        Format::Conntrack,
        Format::Tcpdump,
        Format::ProcNet,
        Format::Netstat,
        Format::Ss,
        Format::Observed,
        Format::Pairs,
        Format::Csv,
    ];

    /// The name `--format` and serde use (`proc-net`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Ss => "ss",
            Format::Netstat => "netstat",
            Format::Conntrack => "conntrack",
            Format::Tcpdump => "tcpdump",
            Format::ProcNet => "proc-net",
            Format::Csv => "csv",
            Format::Pairs => "pairs",
            Format::Observed => "observed",
            Format::Page => "page",
            Format::Bsd => "bsd",
        }
    }

    /// What the format is, for an English message (`ss output`).
    fn what(self) -> &'static str {
        match self {
            Format::Ss => "ss output",
            Format::Netstat => "netstat output",
            Format::Conntrack => "conntrack -L output",
            Format::Tcpdump => "tcpdump output",
            Format::ProcNet => "/proc/net/tcp",
            Format::Csv => "CSV",
            Format::Pairs => "an address pair",
            Format::Observed => "an observed line",
            Format::Page => "a lookup page line",
            Format::Bsd => "FreeBSD or macOS netstat/sockstat output",
        }
    }

    /// The fields a line of this format has, for an English message.
    fn expected(self) -> &'static str {
        match self {
            Format::Pairs => "2 (SADDR:SPORT DADDR:DPORT) or 4 (SADDR SPORT DADDR DPORT)",
            Format::Observed => {
                "3 (SADDR:SPORT DADDR:DPORT LISTENER) or 5 (SADDR SPORT DADDR DPORT LISTENER)"
            }
            Format::Page => "5 (SADDR:SPORT -> DADDR:DPORT listener N)",
            Format::Csv => "as many as the columns",
            Format::Ss => "at least 4 (Recv-Q Send-Q Local Peer)",
            Format::Netstat => "at least 5 (Proto Recv-Q Send-Q Local Foreign)",
            Format::ProcNet => "at least 4 (sl local_address rem_address st)",
            Format::Conntrack | Format::Tcpdump | Format::Bsd => "more",
        }
    }

    /// The advice for a host or service name where a number belongs.
    fn numeric_hint(self) -> &'static str {
        match self {
            Format::Tcpdump => "run tcpdump with -nn so it prints numeric addresses and ports",
            Format::Ss => "run ss with -n so it prints numeric addresses and ports",
            Format::Netstat => "run netstat with -n so it prints numeric addresses and ports",
            _ => "write numeric addresses and ports",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--format` value that names no format.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown format `{0}`; known formats: ss, netstat, conntrack, tcpdump, proc-net, csv, pairs, observed, page, bsd")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;
    fn from_str(s: &str) -> Result<Self, UnknownFormat> {
        let t = s.trim().to_ascii_lowercase();
        let alias = match t.as_str() {
            "proc" | "procnet" | "proc_net" | "/proc/net/tcp" | "/proc/net/tcp6" => "proc-net",
            "tsv" => "csv",
            "tuples" | "pair" => "pairs",
            other => other,
        };
        Format::ALL
            .into_iter()
            .find(|f| f.name() == alias)
            .ok_or_else(|| UnknownFormat(shown(s)))
    }
}

/// What detection found: the format, its CSV columns, and whether a
/// header line was seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Detected {
    /// The format.
    pub format: Format,
    /// For [`Format::Csv`]: the columns and their roles.
    pub columns: Option<Columns>,
    /// Whether the sample had a header line.
    pub header: bool,
    /// Why this format: what the sample's lines showed.
    #[serde(default)]
    pub evidence: Evidence,
}

/// What detection saw in the sample, for saying why a format was named.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// Non-blank lines looked at (at most [`DETECT_LINES`]).
    pub sample: u32,
    /// Of those, lines the format read: sockets, headers, trailers and the
    /// lines of other protocols it names.
    pub read: u32,
    /// Of those, lines holding a connection or a listening socket.
    pub sockets: u32,
    /// Lines of the format that print host or service names where numbers
    /// belong (the command was run without `-n`): said once for the paste.
    pub names: u32,
    /// Another format that reads sample lines this one cannot: the paste
    /// mixes outputs.
    pub mixed: Option<Mixed>,
}

/// A second format in one paste.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Mixed {
    /// The other format.
    pub format: Format,
    /// Sample lines it reads that the detected format does not.
    pub lines: u32,
}

impl Detected {
    /// An explicitly named format (no detection). For CSV the columns are
    /// still found from `lines`.
    pub fn named(format: Format, lines: &[&str]) -> Detected {
        let sample = sample(lines);
        let (columns, header) = if format == Format::Csv {
            match csv::detect_columns(&sample) {
                Some(c) => {
                    let h = c.header;
                    (Some(c), h)
                }
                None => (None, false),
            }
        } else {
            let p = Parser::new(&Detected {
                format,
                columns: None,
                header: false,
                evidence: Evidence::default(),
            });
            let h = sample
                .iter()
                .any(|l| matches!(p.line(l), Ok(Line::Skip(Skip::Header))));
            (None, h)
        };
        let evidence = evidence(format, columns.as_ref(), &sample);
        Detected {
            format,
            columns,
            header,
            evidence,
        }
    }
}

/// What a format says about a connection's first endpoint `a`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(rename_all = "camelCase")]
pub enum Meaning {
    /// `a` is the client (conntrack's original direction, a SYN, observed
    /// and page lines, CSV client/server columns).
    ClientFirst,
    /// `a` is the server (a SYN-ACK).
    ServerFirst,
    /// `a` is this host's side (ss, netstat, /proc/net): client or server.
    LocalFirst,
    /// Nothing (pairs, CSV without role names, other TCP flags, UDP).
    Unknown,
}

impl Meaning {
    /// Whether this meaning alone says which endpoint is the client.
    pub fn decides(self) -> bool {
        matches!(self, Meaning::ClientFirst | Meaning::ServerFirst)
    }
}

/// One connection as the line gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Conn {
    /// The first endpoint (see `meaning`).
    #[cfg_attr(feature = "ts", ts(as = "String"))]
    pub a: SocketAddr,
    /// The second endpoint.
    #[cfg_attr(feature = "ts", ts(as = "String"))]
    pub b: SocketAddr,
    /// What the format says about `a`.
    pub meaning: Meaning,
    /// The listener that received it (observed and page lines, a CSV
    /// listener column).
    pub listener: Option<u32>,
    /// The protocol, when the line says.
    pub proto: Option<Proto>,
    /// What the line said that the answer depends on (address translation,
    /// a dropped IPv6 zone), to say beside the answer.
    pub note: Option<LineNote>,
}

impl Conn {
    /// Refuses a connection whose line names another protocol than
    /// `chosen`: since 6.x TCP and UDP hash differently, so its answer under
    /// `chosen` would be wrong.
    pub fn check_proto(&self, format: Format, chosen: Proto) -> Result<(), LineError> {
        match self.proto {
            Some(line) if line != chosen => Err(LineError::ProtoMismatch {
                format,
                line,
                chosen,
            }),
            _ => Ok(()),
        }
    }
}

/// Something a line said that its answer depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum LineNote {
    /// conntrack's two directions differ beyond the swap (DNAT, SNAT, a
    /// Service or published port): the connection is the reply direction
    /// reversed, the tuple the receiving socket hashes, not the original
    /// direction, whose destination no socket is bound to.
    Translated {
        /// The original direction's destination (before translation). The
        /// original source is not kept: it is the client's own unless
        /// SNAT changed it, and the answer does not depend on it (keeping
        /// it would double the size of every [`Conn`]).
        #[cfg_attr(feature = "ts", ts(as = "String"))]
        original_server: SocketAddr,
    },
    /// An IPv6 address carried a zone (`%eth0`), which was left out: the
    /// reuseport hash reads addresses and ports only.
    Zone {
        /// The zone as written.
        #[cfg_attr(feature = "ts", ts(as = "String"))]
        zone: Zone,
    },
}

/// An IPv6 zone as written after `%`: an interface name (at most 15 bytes,
/// `IFNAMSIZ` less its NUL) or index. Kept inline so [`Conn`] stays `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Zone {
    len: u8,
    bytes: [u8; 15],
}

impl Zone {
    /// The zone of `s`, or `None` when it is empty or longer than an
    /// interface name can be.
    pub fn new(s: &str) -> Option<Zone> {
        if s.is_empty() || s.len() > 15 {
            return None;
        }
        let mut bytes = [0u8; 15];
        bytes[..s.len()].copy_from_slice(s.as_bytes());
        Some(Zone {
            len: s.len() as u8,
            bytes,
        })
    }

    /// The zone's text.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("")
    }
}

impl std::fmt::Debug for Zone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Zone({:?})", self.as_str())
    }
}

impl std::fmt::Display for Zone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Zone {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Zone {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Zone, D::Error> {
        let s = String::deserialize(d)?;
        Zone::new(&s).ok_or_else(|| serde::de::Error::custom("a zone is 1 to 15 bytes"))
    }
}

/// A line that holds no connection and is not an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Skip {
    /// Empty or only white space.
    Blank,
    /// A `#` comment, or a shell prompt line (`$ ss -tn`).
    Comment,
    /// A column header (`State Recv-Q …`, `Proto Recv-Q …`, `sl local_address …`).
    Header,
    /// A summary or trailer (`conntrack v1.4.7 …: 2 flow entries have been
    /// shown.`, `18 packets captured`, `Active Internet connections`).
    Trailer,
    /// A protocol other than TCP and UDP (unix sockets, ICMP, ARP).
    OtherProto,
    /// A socket that is not a connection (unconnected UDP, a wildcard peer).
    NotConnection,
    /// The rest of the line above, wrapped onto its own line (`ss`'s
    /// `users:((…))`, `ino:`, `sk:`, `cgroup:`, `<->`, TCP info).
    Continuation,
}

/// One parsed line. Tagged `type` (`conn`, `listening`, `skip`), since a
/// skip's own tag is `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Line {
    /// A connection.
    Conn(Conn),
    /// A listening socket (state LISTEN).
    Listening {
        /// Its address and port (the unspecified address for a wildcard).
        #[cfg_attr(feature = "ts", ts(as = "String"))]
        addr: SocketAddr,
        /// Its protocol, when the line says.
        proto: Option<Proto>,
    },
    /// Nothing to use, and nothing wrong.
    Skip(Skip),
}

/// The field of a line that is at fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub enum Field {
    LocalAddress,
    LocalPort,
    PeerAddress,
    PeerPort,
    SourceAddress,
    SourcePort,
    DestinationAddress,
    DestinationPort,
    Listener,
    Proto,
    State,
}

impl Field {
    fn words(self) -> &'static str {
        match self {
            Field::LocalAddress => "local address",
            Field::LocalPort => "local port",
            Field::PeerAddress => "peer address",
            Field::PeerPort => "peer port",
            Field::SourceAddress => "source address",
            Field::SourcePort => "source port",
            Field::DestinationAddress => "destination address",
            Field::DestinationPort => "destination port",
            Field::Listener => "listener",
            Field::Proto => "protocol",
            Field::State => "state",
        }
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.words())
    }
}

/// Why one line holds no usable connection. Values are echoed through
/// [`shown`]: at most [`SHOWN_CHARS`] characters, invisible ones escaped.
#[derive(Debug, Clone, PartialEq, Eq, Error, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum LineError {
    /// The line is longer than [`MAX_LINE_BYTES`].
    #[error("the line is {length} bytes long, more than the {max} a line may have; paste one connection per line")]
    TooLong {
        /// The limit.
        max: usize,
        /// The line's length in bytes.
        length: usize,
    },
    /// The line has the wrong number of fields.
    #[error("{} has {} fields, but this line has {found}", .format.what(), .format.expected())]
    FieldCount {
        /// The format.
        format: Format,
        /// How many fields the line has.
        found: usize,
    },
    /// An address that is not an IPv4 or IPv6 address.
    #[error("{field} `{value}` in {} is not an IPv4 or IPv6 address", .format.what())]
    Address {
        /// The format.
        format: Format,
        /// The field.
        field: Field,
        /// What it holds.
        value: String,
    },
    /// A port that is not a number from 0 to 65535.
    #[error("{field} `{value}` in {} is not a port number (0 to 65535)", .format.what())]
    Port {
        /// The format.
        format: Format,
        /// The field.
        field: Field,
        /// What it holds.
        value: String,
    },
    /// A host or service name where a numeric address or port belongs.
    #[error("{field} `{value}` in {} is a name, not a number: {}", .format.what(), .format.numeric_hint())]
    Name {
        /// The format.
        format: Format,
        /// The field.
        field: Field,
        /// What it holds.
        value: String,
    },
    /// The two endpoints are of different families.
    #[error("the endpoints {a} and {b} mix IPv4 and IPv6; a connection has one family")]
    MixedFamilies {
        /// The format.
        format: Format,
        /// The first endpoint's address.
        a: String,
        /// The second endpoint's address.
        b: String,
    },
    /// A listener number that is not a non-negative integer.
    #[error("listener `{value}` in {} is not a listener number (0, 1, 2, …)", .format.what())]
    Listener {
        /// The format.
        format: Format,
        /// What it holds.
        value: String,
    },
    /// A field the format needs is not on the line.
    #[error("the line has no {field}, which {} always has", .format.what())]
    Missing {
        /// The format.
        format: Format,
        /// The missing field.
        field: Field,
    },
    /// The line does not have the shape of the format at all.
    #[error("`{value}` is not a line of {}", .format.what())]
    Unrecognized {
        /// The format.
        format: Format,
        /// The line's start.
        value: String,
    },
    /// An address column netstat may have cut short: without `-W` net-tools
    /// netstat cuts `ADDR:PORT` to its 23-character column, keeping the
    /// port (netstat.c, `tcp_do_one`), so a cut IPv6 address still parses,
    /// as another address.
    #[error("{field} `{value}` fills netstat's 23-character column, so netstat may have cut the address short; run netstat -W (wide) or ss -tn, which print whole addresses")]
    Cut {
        /// The format.
        format: Format,
        /// The field.
        field: Field,
        /// What it holds.
        value: String,
    },
    /// The line's protocol is not the group's.
    #[error("this line is {} (as {} shows it), but the group is {}: TCP and UDP hash differently, so choose {} or leave the line out", .line.name(), .format.what(), .chosen.name(), .line.name())]
    ProtoMismatch {
        /// The format.
        format: Format,
        /// The protocol the line shows.
        line: Proto,
        /// The protocol chosen for the group.
        chosen: Proto,
    },
    /// Output of another system, whose SO_REUSEPORT is not Linux's.
    #[error("this is {command} output from FreeBSD or macOS, where SO_REUSEPORT lets the last socket bound take the port (FreeBSD's load-balancing groups are SO_REUSEPORT_LB), not Linux's hash: the model answers for Linux only")]
    OtherSystem {
        /// The format.
        format: Format,
        /// The command: `netstat` or `sockstat`.
        command: String,
    },
}

impl LineError {
    /// A tuple line's parse error ([`crate::tuple::parse_tuple_line`],
    /// [`crate::tuple::parse_observed_line`]) as the line error of the
    /// address-pair formats, with its field named by [`Field`], so that the
    /// sentence tables say it in the reader's language; `None` for an error
    /// that is not about a line (a secret, a list).
    pub fn from_tuple(e: &crate::ParseError) -> Option<LineError> {
        use crate::ParseError as P;
        let field = |f: &str| match f {
            "source port" => Field::SourcePort,
            "destination address" => Field::DestinationAddress,
            "destination port" => Field::DestinationPort,
            _ => Field::SourceAddress,
        };
        Some(match e {
            P::FieldCount { found, extra } => LineError::FieldCount {
                format: if extra.is_empty() {
                    Format::Pairs
                } else {
                    Format::Observed
                },
                found: *found,
            },
            P::Address { field: f, value } => LineError::Address {
                format: Format::Pairs,
                field: field(f),
                value: value.clone(),
            },
            P::Port { field: f, value } => LineError::Port {
                format: Format::Pairs,
                field: field(f),
                value: value.clone(),
            },
            P::MixedFamilies { saddr, daddr } => LineError::MixedFamilies {
                format: Format::Pairs,
                a: saddr.clone(),
                b: daddr.clone(),
            },
            P::Listener(value) => LineError::Listener {
                format: Format::Observed,
                value: value.clone(),
            },
            P::Secret(_) | P::List { .. } => return None,
        })
    }

    /// The format the error is about, when it names one.
    pub fn format(&self) -> Option<Format> {
        match self {
            LineError::TooLong { .. } => None,
            LineError::FieldCount { format, .. }
            | LineError::Address { format, .. }
            | LineError::Port { format, .. }
            | LineError::Name { format, .. }
            | LineError::MixedFamilies { format, .. }
            | LineError::Listener { format, .. }
            | LineError::Missing { format, .. }
            | LineError::Unrecognized { format, .. }
            | LineError::Cut { format, .. }
            | LineError::ProtoMismatch { format, .. }
            | LineError::OtherSystem { format, .. } => Some(*format),
        }
    }
}

/// Reads lines of one format.
#[derive(Debug, Clone)]
pub struct Parser {
    format: Format,
    columns: Option<Columns>,
}

impl Parser {
    /// A parser for what [`detect`] found (or the caller chose).
    pub fn new(detected: &Detected) -> Parser {
        Parser {
            format: detected.format,
            columns: detected.columns.clone(),
        }
    }

    /// The format read.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Reads one line (with or without its line ending).
    pub fn line(&self, text: &str) -> Result<Line, LineError> {
        if text.len() > MAX_LINE_BYTES {
            return Err(LineError::TooLong {
                max: MAX_LINE_BYTES,
                length: text.len(),
            });
        }
        let t = text.trim_start_matches('\u{feff}').trim();
        if t.is_empty() {
            return Ok(Line::Skip(Skip::Blank));
        }
        if t.starts_with('#') || t.starts_with("$ ") || t == "$" || is_prompt(t) {
            return Ok(Line::Skip(Skip::Comment));
        }
        // `cat -n` numbers each line as `%6d\t`; a CSV's first column is
        // its own business.
        let t = match self.format {
            Format::Csv => t,
            _ => strip_line_number(t),
        };
        match self.format {
            Format::Bsd => formats::bsd(t),
            Format::Ss => formats::ss(t),
            Format::Netstat => formats::netstat(t),
            Format::Conntrack => formats::conntrack(t),
            Format::Tcpdump => formats::tcpdump(t),
            Format::ProcNet => formats::proc_net(t),
            Format::Pairs => formats::pairs(t),
            Format::Observed => formats::observed(t),
            Format::Page => formats::page(t),
            Format::Csv => match &self.columns {
                Some(c) => csv::line(c, t),
                None => Err(LineError::Unrecognized {
                    format: Format::Csv,
                    value: shown(t),
                }),
            },
        }
    }
}

/// A shell prompt with the command after it: `user@host:~$ ss -tnp`,
/// `web1:~# netstat -tn`, `[root@web1 ~]# conntrack -L`. The part before
/// the prompt character is one word with `@` or `~`, or one `[…]` group,
/// and a command follows.
pub(crate) fn is_prompt(t: &str) -> bool {
    // Most lines are output: their first word has no `@` or `~` and no `[`.
    let first = t.as_bytes().iter().take_while(|&&b| b != b' ');
    if !t.starts_with('[') && !first.into_iter().any(|&b| b == b'@' || b == b'~') {
        return false;
    }
    let Some(i) = t.find(['$', '#', '%', '>']) else {
        return false;
    };
    let (before, after) = (&t[..i], &t[i + 1..]);
    let Some(cmd) = after.strip_prefix(' ') else {
        return false;
    };
    let bracketed =
        before.starts_with('[') && before.ends_with(']') && before.matches('[').count() == 1;
    let word = !before.contains(char::is_whitespace) && before.contains(['@', '~']);
    (bracketed || word)
        && cmd
            .trim_start()
            .starts_with(|c: char| c.is_ascii_alphabetic() || c == '/')
}

/// The line without a `cat -n` number (`     3\tESTAB …`).
fn strip_line_number(t: &str) -> &str {
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if (1..=10).contains(&digits) && t.as_bytes().get(digits) == Some(&b'\t') {
        t[digits + 1..].trim_start()
    } else {
        t
    }
}

/// The first [`DETECT_LINES`] non-blank lines, trimmed.
fn sample<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    lines
        .iter()
        .map(|l| l.trim_start_matches('\u{feff}').trim())
        .filter(|l| !l.is_empty() && l.len() <= MAX_LINE_BYTES)
        .take(DETECT_LINES)
        .collect()
}

/// How one sample line counts for a format.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reads {
    /// A connection or listening socket.
    Socket,
    /// A header, trailer, other protocol, continuation or refused system.
    Other,
    /// A line of this format run without `-n`: names where numbers belong.
    Names,
    /// Not read.
    No,
}

fn reads(parser: &Parser, l: &str) -> Reads {
    match parser.line(l) {
        Ok(Line::Conn(_)) | Ok(Line::Listening { .. }) => Reads::Socket,
        Err(LineError::OtherSystem { .. } | LineError::Cut { .. }) => Reads::Socket,
        Ok(Line::Skip(
            Skip::Header
            | Skip::Trailer
            | Skip::OtherProto
            | Skip::NotConnection
            | Skip::Continuation,
        )) => Reads::Other,
        Err(LineError::Name { .. }) if parser.format != Format::Pairs => Reads::Names,
        Ok(Line::Skip(_)) | Err(_) => Reads::No,
    }
}

/// What the sample shows for `format` (its columns for CSV).
fn evidence(format: Format, columns: Option<&Columns>, sample: &[&str]) -> Evidence {
    let parser = Parser {
        format,
        columns: columns.cloned(),
    };
    let mut e = Evidence {
        sample: sample.len() as u32,
        ..Evidence::default()
    };
    let mut unread = Vec::new();
    for l in sample {
        match reads(&parser, l) {
            Reads::Socket => {
                e.read += 1;
                e.sockets += 1;
            }
            Reads::Other => e.read += 1,
            Reads::Names => {
                e.read += 1;
                e.names += 1;
            }
            Reads::No => {
                if !matches!(parser.line(l), Ok(Line::Skip(Skip::Blank | Skip::Comment))) {
                    unread.push(*l);
                }
            }
        }
    }
    // Another format holding sockets on the lines this one cannot read.
    for other in Format::ALL {
        if other == format || matches!(other, Format::Csv | Format::Pairs) {
            continue;
        }
        let p = Parser {
            format: other,
            columns: None,
        };
        let n = unread
            .iter()
            .filter(|l| reads(&p, l) == Reads::Socket)
            .count() as u32;
        if n > 0 && e.mixed.is_none_or(|m| n > m.lines) {
            e.mixed = Some(Mixed {
                format: other,
                lines: n,
            });
        }
    }
    e
}

/// Names the format of `lines` from the first [`DETECT_LINES`] non-blank
/// ones: the format whose parser accepts most of them (a connection, a
/// listening socket, a header or trailer, another protocol's line, a line
/// with names where numbers belong), ties going to the more specific
/// format ([`Format::ALL`]'s order), and says why ([`Evidence`]). With
/// nothing recognised it answers [`Format::Pairs`], the plain format, so
/// each line's error says what a pair looks like.
pub fn detect(lines: &[&str]) -> Detected {
    let sample = sample(lines);
    let mut best: Option<(usize, Detected)> = None;
    for format in Format::ALL {
        let detected = if format == Format::Csv {
            match csv::detect_columns(&sample) {
                Some(c) => Detected {
                    format,
                    header: c.header,
                    columns: Some(c),
                    evidence: Evidence::default(),
                },
                None => continue,
            }
        } else {
            Detected {
                format,
                columns: None,
                header: false,
                evidence: Evidence::default(),
            }
        };
        let parser = Parser::new(&detected);
        let mut score = 0usize;
        let mut header = false;
        let mut real = false;
        for l in &sample {
            match reads(&parser, l) {
                Reads::Socket | Reads::Names => {
                    score += 1;
                    real = true;
                }
                Reads::Other => {
                    score += 1;
                    header |= matches!(parser.line(l), Ok(Line::Skip(Skip::Header)));
                }
                Reads::No => {}
            }
        }
        // A format is only named by lines that hold sockets, not by its
        // headers alone.
        if !real {
            continue;
        }
        if best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((
                score,
                Detected {
                    header: header || detected.header,
                    ..detected
                },
            ));
        }
    }
    let mut d = best.map(|(_, d)| d).unwrap_or(Detected {
        format: Format::Pairs,
        columns: None,
        header: false,
        evidence: Evidence::default(),
    });
    d.evidence = evidence(d.format, d.columns.as_ref(), &sample);
    d
}
