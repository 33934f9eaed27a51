//! CSV, TSV and `;`-separated connections: columns found from a header's
//! names or from what the cells hold, shown to the user as [`Columns`], and
//! replaceable by the caller.

use std::net::{IpAddr, SocketAddr};

use serde::{Deserialize, Serialize};

use super::formats::{addr, conn, endpoint, port, End};
use super::{shown, Field, Format, Line, LineError, Meaning, Skip};
use crate::tuple::Proto;

/// The most columns read from one line; later ones are ignored.
const MAX_COLUMNS: usize = 64;

/// Which endpoint a column belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(rename_all = "camelCase")]
pub enum Side {
    /// The client (`client`, `src`, `source`, `saddr`, `sport`).
    Client,
    /// The server (`server`, `dst`, `dest`, `daddr`, `dport`).
    Server,
    /// This host's side (`local`).
    Local,
    /// The other host's side (`peer`, `remote`, `foreign`).
    Peer,
    /// The first endpoint of a file without role names.
    First,
    /// The second endpoint of a file without role names.
    Second,
}

impl Side {
    fn end(self) -> End {
        match self {
            Side::Local => End::Local,
            Side::Peer => End::Peer,
            Side::Client | Side::First => End::Source,
            Side::Server | Side::Second => End::Destination,
        }
    }
}

/// What one column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Role {
    /// An address of one side.
    Address {
        /// The side.
        side: Side,
    },
    /// A port of one side.
    Port {
        /// The side.
        side: Side,
    },
    /// `addr:port` (`[v6]:port`) of one side.
    Endpoint {
        /// The side.
        side: Side,
    },
    /// The listener that received the connection.
    Listener,
    /// `tcp` or `udp`.
    Proto,
    /// Not used.
    Ignore,
}

/// One column: the name shown (the header's, or `1`, `2`, … without a
/// header) and its role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Column {
    /// The name to show.
    pub name: String,
    /// What it holds.
    pub role: Role,
}

/// How a CSV file's lines are read: the separator, whether the first line
/// names the columns, and each column's role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Columns {
    /// `,`, tab or `;`.
    pub delimiter: char,
    /// Whether a header line names the columns (it is skipped).
    pub header: bool,
    /// The columns, in order.
    pub columns: Vec<Column>,
}

/// Splits a CSV line: fields may be quoted with `"`, a quote inside doubled.
pub fn split(line: &str, delimiter: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut at_start = true;
    while let Some(c) = chars.next() {
        if out.len() >= MAX_COLUMNS {
            return out;
        }
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    cur.push('"');
                } else {
                    quoted = false;
                }
            } else {
                cur.push(c);
            }
        } else if c == '"' && at_start {
            quoted = true;
            at_start = false;
        } else if c == delimiter {
            out.push(std::mem::take(&mut cur).trim().to_string());
            at_start = true;
        } else {
            if !(c == ' ' && at_start) {
                at_start = false;
            }
            cur.push(c);
        }
    }
    out.push(cur.trim().to_string());
    out
}

/// What a cell's text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cell {
    Endpoint,
    Address,
    Integer,
    Other,
}

fn cell(s: &str) -> Cell {
    if s.parse::<IpAddr>().is_ok() {
        Cell::Address
    } else if endpoint(Format::Csv, End::Source, s, false).is_ok_and(|(_, p)| p.is_some()) {
        Cell::Endpoint
    } else if !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit()) {
        Cell::Integer
    } else {
        Cell::Other
    }
}

/// The role a header name gives: its side (if any) and kind.
fn named(name: &str) -> Option<(Option<Side>, &'static str)> {
    let n: String = name
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    if ["listener", "worker", "member", "socket", "slot"]
        .iter()
        .any(|k| n.contains(k))
    {
        return Some((None, "listener"));
    }
    if matches!(n.as_str(), "proto" | "protocol" | "netid" | "l4") {
        return Some((None, "proto"));
    }
    let side = if n.contains("local") {
        Side::Local
    } else if ["peer", "remote", "foreign"].iter().any(|k| n.contains(k)) {
        Side::Peer
    } else if ["client", "src", "source", "saddr", "sport", "orig"]
        .iter()
        .any(|k| n.contains(k))
    {
        Side::Client
    } else if ["server", "dst", "dest", "daddr", "dport"]
        .iter()
        .any(|k| n.contains(k))
    {
        Side::Server
    } else {
        return None;
    };
    let kind = if n.contains("port") && !(n.contains("addr") || n.contains("ip")) {
        "port"
    } else if ["addr", "ip", "host"].iter().any(|k| n.contains(k)) && !n.contains("port") {
        "address"
    } else {
        "either"
    };
    Some((Some(side), kind))
}

/// Finds the separator, header and column roles from the sample, or
/// `None` when no reading gives two endpoints.
pub(super) fn detect_columns(sample: &[&str]) -> Option<Columns> {
    let mut best: Option<(usize, Columns)> = None;
    for delimiter in [',', '\t', ';'] {
        let rows: Vec<Vec<String>> = sample
            .iter()
            .filter(|l| l.contains(delimiter))
            .map(|l| split(l, delimiter))
            .collect();
        let Some(c) = columns_of(&rows, delimiter) else {
            continue;
        };
        let parsed = sample
            .iter()
            .filter(|l| matches!(line(&c, l), Ok(Line::Conn(_))))
            .count();
        if parsed > 0 && best.as_ref().is_none_or(|(n, _)| parsed > *n) {
            best = Some((parsed, c));
        }
    }
    best.map(|(_, c)| c)
}

fn columns_of(rows: &[Vec<String>], delimiter: char) -> Option<Columns> {
    let first = rows.first()?;
    let header = first.iter().all(|c| matches!(cell(c), Cell::Other))
        && first.iter().any(|c| c.chars().any(char::is_alphabetic));
    let body: Vec<&Vec<String>> = rows.iter().skip(header as usize).collect();
    let width = if header {
        first.len()
    } else {
        body.iter().map(|r| r.len()).max()?
    };
    if width < 2 {
        return None;
    }
    // What every body cell of each column holds (Other when they differ).
    let kinds: Vec<Cell> = (0..width)
        .map(|i| {
            let mut k = None;
            for r in &body {
                let c = r.get(i).map_or(Cell::Other, |s| cell(s));
                k = match k {
                    None => Some(c),
                    Some(p) if p == c => Some(p),
                    Some(_) => Some(Cell::Other),
                };
            }
            k.unwrap_or(Cell::Other)
        })
        .collect();
    let mut roles = vec![Role::Ignore; width];
    let mut any_named_side = false;
    if header {
        for (i, name) in first.iter().enumerate() {
            let Some((side, kind)) = named(name) else {
                continue;
            };
            roles[i] = match (side, kind) {
                (None, "listener") => Role::Listener,
                (None, _) => Role::Proto,
                (Some(side), kind) => {
                    any_named_side = true;
                    match (kind, kinds[i]) {
                        ("port", _) => Role::Port { side },
                        ("address", _) => Role::Address { side },
                        (_, Cell::Endpoint) => Role::Endpoint { side },
                        (_, Cell::Integer) => Role::Port { side },
                        _ => Role::Address { side },
                    }
                }
            };
        }
    }
    if !any_named_side {
        // By content: endpoints or addresses in order are the first and
        // second sides; the number after an address is its port; the next
        // number after both is the listener.
        let mut sides = [Side::First, Side::Second].into_iter();
        let mut last_addr: Option<Side> = None;
        let mut have_listener = roles.contains(&Role::Listener);
        for i in 0..width {
            if roles[i] != Role::Ignore {
                continue;
            }
            match kinds[i] {
                Cell::Endpoint | Cell::Address => {
                    let Some(side) = sides.next() else { break };
                    roles[i] = if kinds[i] == Cell::Endpoint {
                        last_addr = None;
                        Role::Endpoint { side }
                    } else {
                        last_addr = Some(side);
                        Role::Address { side }
                    };
                }
                Cell::Integer => {
                    if let Some(side) = last_addr.take() {
                        roles[i] = Role::Port { side };
                    } else if !have_listener && sides.len() == 0 {
                        roles[i] = Role::Listener;
                        have_listener = true;
                    }
                }
                Cell::Other => {}
            }
        }
    }
    let columns = Columns {
        delimiter,
        header,
        columns: roles
            .into_iter()
            .enumerate()
            .map(|(i, role)| Column {
                name: if header {
                    shown(&first[i])
                } else {
                    (i + 1).to_string()
                },
                role,
            })
            .collect(),
    };
    columns.ends().map(|_| columns)
}

/// One side's columns: the endpoint column, or the address and port ones.
#[derive(Debug, Clone, Copy, Default)]
struct SideCols {
    endpoint: Option<usize>,
    address: Option<usize>,
    port: Option<usize>,
}

/// The two sides of a connection (first `a`, then `b`) and what that order
/// means.
type Ends = ((Side, SideCols), (Side, SideCols), Meaning);

impl Columns {
    /// The two sides the columns describe, in the order of the connection
    /// (client, local or first side as `a`), and what that order means.
    fn ends(&self) -> Option<Ends> {
        let mut found: Vec<(Side, SideCols)> = Vec::new();
        for (i, c) in self.columns.iter().enumerate() {
            let (side, put): (Side, fn(&mut SideCols, usize)) = match c.role {
                Role::Endpoint { side } => (side, |s, i| s.endpoint = Some(i)),
                Role::Address { side } => (side, |s, i| s.address = Some(i)),
                Role::Port { side } => (side, |s, i| s.port = Some(i)),
                _ => continue,
            };
            match found.iter_mut().find(|(s, _)| *s == side) {
                Some((_, cols)) => put(cols, i),
                None => {
                    let mut cols = SideCols::default();
                    put(&mut cols, i);
                    found.push((side, cols));
                }
            }
        }
        let complete =
            |c: &SideCols| c.endpoint.is_some() || (c.address.is_some() && c.port.is_some());
        if found.len() != 2 || !found.iter().all(|(_, c)| complete(c)) {
            return None;
        }
        let (mut x, mut y) = (found[0], found[1]);
        let rank = |s: Side| match s {
            Side::Client | Side::Local | Side::First => 0,
            Side::Server | Side::Peer | Side::Second => 1,
        };
        if rank(x.0) > rank(y.0) {
            std::mem::swap(&mut x, &mut y);
        }
        let meaning = match (x.0, y.0) {
            (Side::Client, _) | (_, Side::Server) => Meaning::ClientFirst,
            (Side::Local, _) | (_, Side::Peer) => Meaning::LocalFirst,
            _ => Meaning::Unknown,
        };
        Some((x, y, meaning))
    }
}

fn side_addr(cells: &[String], side: Side, c: SideCols) -> Result<SocketAddr, LineError> {
    const F: Format = Format::Csv;
    let end = side.end();
    let get = |i: usize| cells.get(i).map(String::as_str).unwrap_or("");
    if let Some(i) = c.endpoint {
        let (ip, p) = endpoint(F, end, get(i), true)?;
        let p = p.ok_or_else(|| LineError::Port {
            format: F,
            field: end.port(),
            value: "*".into(),
        })?;
        return Ok(SocketAddr::new(ip, p));
    }
    let a = c.address.expect("complete side");
    let p = c.port.expect("complete side");
    Ok(SocketAddr::new(
        addr(F, end, get(a))?,
        port(F, end, get(p))?,
    ))
}

/// Reads one CSV line with `columns`.
pub(super) fn line(columns: &Columns, t: &str) -> Result<Line, LineError> {
    const F: Format = Format::Csv;
    let cells = split(t, columns.delimiter);
    if columns.header
        && cells.len() == columns.columns.len()
        && cells
            .iter()
            .zip(&columns.columns)
            .all(|(c, col)| shown(c) == col.name)
    {
        return Ok(Line::Skip(Skip::Header));
    }
    let Some(((xs, xc), (ys, yc), meaning)) = columns.ends() else {
        return Err(LineError::Missing {
            format: F,
            field: Field::DestinationAddress,
        });
    };
    let needed = columns
        .columns
        .iter()
        .rposition(|c| c.role != Role::Ignore)
        .map_or(0, |i| i + 1);
    if cells.len() < needed {
        return Err(LineError::FieldCount {
            format: F,
            found: cells.len(),
        });
    }
    let a = side_addr(&cells, xs, xc)?;
    let b = side_addr(&cells, ys, yc)?;
    let mut listener = None;
    let mut proto = None;
    for (i, c) in columns.columns.iter().enumerate() {
        let v = cells.get(i).map(String::as_str).unwrap_or("");
        match c.role {
            Role::Listener => {
                let n = (!v.is_empty() && v.len() <= 10 && v.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| v.parse::<u32>().ok())
                    .flatten();
                listener = Some(n.ok_or_else(|| LineError::Listener {
                    format: F,
                    value: shown(v),
                })?);
            }
            Role::Proto => {
                proto = match v.to_ascii_lowercase().as_str() {
                    "tcp" | "tcp6" | "6" => Some(Proto::Tcp),
                    "udp" | "udp6" | "17" => Some(Proto::Udp),
                    "" => None,
                    _ => return Ok(Line::Skip(Skip::OtherProto)),
                };
            }
            _ => {}
        }
    }
    conn(F, a, b, meaning, listener, proto, None)
}
