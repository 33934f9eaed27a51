//! One paste read line by line, for the page's worker and the command line
//! alike: the format detected from the first lines (or given), each line
//! parsed, the server side decided, every connection turned client first,
//! repeated 4-tuples dropped.
//!
//! A [`Session`] is fed whole lines ([`Session::line`]; cutting text into
//! lines, and refusing a line too long to hold, is the reader's part) and
//! hands out what each line gave as a [`Read`]. When the user's bind names
//! the port the side is known from the start and every line is handed out
//! as it arrives; otherwise the decision needs every line (LISTEN lines, a
//! port common to all), so the lines wait for [`Session::finish`] and come
//! out there in line order.

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};

use serde::Serialize;

use super::{detect, shown, Basis, Conn, Decision, Detected, Format, Line, LineError};
use super::{Parser, Sides, Skip, Undecided, DETECT_LINES};
use crate::tuple::{Proto, Tuple};

/// How a session reads.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The format, as the reader detected or chose it; `None`: detected
    /// from the first [`DETECT_LINES`] non-blank lines, as `named` when given.
    pub detected: Option<Detected>,
    /// The format the user named, when the session detects.
    pub named: Option<Format>,
    /// The user's bind (address, and port when known): the server side.
    pub bind: Option<(IpAddr, Option<u16>)>,
    /// Turn every oriented connection round (the user says the decision
    /// is the wrong way).
    pub flip: bool,
    /// The packets' protocol: a line that shows another is refused
    /// ([`LineError::ProtoMismatch`]) before its sides are decided.
    pub proto: Option<Proto>,
    /// The most connections kept (in line order, before repeats are
    /// dropped); the rest are counted ([`Counts::cut`]). `None`: no bound.
    pub max_rows: Option<usize>,
}

/// Why a line is not used: the parser's reason, or an undecidable side
/// (an error type for a [`Session`] whose caller keeps the two apart).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "BadReason"))]
#[serde(untagged)]
pub enum Unused {
    /// The line does not parse, or shows another protocol.
    Line(LineError),
    /// The connection's side is undecided.
    Side(Undecided),
}

impl From<LineError> for Unused {
    fn from(e: LineError) -> Unused {
        Unused::Line(e)
    }
}

impl From<Undecided> for Unused {
    fn from(u: Undecided) -> Unused {
        Unused::Side(u)
    }
}

/// What one line gave, once its side is known. `E` is the caller's error
/// type, made from a [`LineError`] or an [`Undecided`] side.
#[derive(Debug, Clone)]
pub enum Read<E> {
    /// A connection, client first.
    Row {
        /// The 1-based line number.
        line: u32,
        /// The packet, client first.
        tuple: Tuple,
        /// The connection as the line gave it (its observed listener,
        /// protocol and note).
        conn: Conn,
        /// Under a [`Basis::PerLine`] decision, what decided this line's
        /// side (its direction or its ports); `None` under any other.
        basis: Option<Basis>,
    },
    /// A line that cannot be used: it does not parse, shows another
    /// protocol, or its side is undecided.
    Bad {
        /// The 1-based line number.
        line: u32,
        /// Why.
        error: E,
        /// What the line held, fit to show ([`shown`]): the text, or the
        /// two endpoints of an undecided connection.
        text: String,
    },
}

/// What a session counted.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    /// Lines read.
    pub lines: u32,
    /// LISTEN lines.
    pub listening: u32,
    /// The first 16 distinct listening addresses.
    pub listening_addrs: Vec<SocketAddr>,
    /// Lines skipped, per kind, in the order first met.
    pub skipped: Vec<(Skip, u32)>,
    /// Lines that do not parse or show another protocol.
    pub bad: u32,
    /// Connections whose side is undecided.
    pub undecided: u32,
    /// Connections seen before (dropped).
    pub duplicates: u32,
    /// Connections past [`Options::max_rows`].
    pub cut: u32,
    /// Connections handed out.
    pub rows: u32,
}

enum Pending<E> {
    Conn(Conn),
    Bad(E, String),
}

/// One paste being read (see the module's text).
pub struct Session<E> {
    options: Options,
    parser: Option<Parser>,
    detected: Option<Detected>,
    /// Lines held back until the format is known.
    sample: Vec<String>,
    sample_nonblank: usize,
    sides: Sides,
    /// The decision, when the bind gave it before any line.
    streaming: Option<Decision>,
    pending: Vec<(u32, Pending<E>)>,
    seen: HashSet<Tuple>,
    conns: usize,
    counts: Counts,
}

impl<E: From<LineError> + From<Undecided>> Session<E> {
    /// A session that reads as `options` say.
    pub fn new(options: Options) -> Session<E> {
        let sides = Sides::new(options.bind);
        let now = sides.decide();
        let streaming = (now.basis == Basis::Bind).then_some(now);
        let parser = options.detected.as_ref().map(Parser::new);
        Session {
            detected: options.detected.clone(),
            options,
            parser,
            sample: Vec::new(),
            sample_nonblank: 0,
            sides,
            streaming,
            pending: Vec::new(),
            seen: HashSet::new(),
            conns: 0,
            counts: Counts::default(),
        }
    }

    /// The format, once known.
    pub fn detected(&self) -> Option<&Detected> {
        self.detected.as_ref()
    }

    /// What was counted so far.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// The decision the lines so far support.
    pub fn decision(&self) -> Decision {
        self.sides.decide()
    }

    /// Reads one line (without its end of line).
    pub fn line(&mut self, text: &str, out: &mut impl FnMut(Read<E>)) {
        if self.parser.is_none() {
            if !text.trim().is_empty() {
                self.sample_nonblank += 1;
            }
            self.sample.push(text.to_string());
            if self.sample_nonblank >= DETECT_LINES {
                self.detect_now(out);
            }
            return;
        }
        self.counts.lines += 1;
        let no = self.counts.lines;
        self.parse(no, text, out);
    }

    /// A line the reader refused before parsing (too long to hold, not
    /// text), in its place among the others.
    pub fn failed_line(&mut self, error: E, text: &str, out: &mut impl FnMut(Read<E>)) {
        if self.parser.is_none() {
            self.detect_now(out);
        }
        self.counts.lines += 1;
        let no = self.counts.lines;
        self.counts.bad += 1;
        self.put(no, Pending::Bad(error, shown(text)), out);
    }

    /// Ends the input: detects the format if no line did yet, decides the
    /// sides and hands out the lines that waited for it, in line order.
    /// Returns the decision.
    pub fn finish(&mut self, out: &mut impl FnMut(Read<E>)) -> Decision {
        if self.parser.is_none() {
            self.detect_now(out);
        }
        let decision = self.streaming.unwrap_or_else(|| self.sides.decide());
        for (no, p) in std::mem::take(&mut self.pending) {
            self.hand_out(&decision, no, p, out);
        }
        decision
    }

    fn detect_now(&mut self, out: &mut impl FnMut(Read<E>)) {
        let sample = std::mem::take(&mut self.sample);
        let refs: Vec<&str> = sample.iter().map(String::as_str).collect();
        let d = match self.options.named {
            Some(f) => Detected::named(f, &refs),
            None => detect(&refs),
        };
        self.parser = Some(Parser::new(&d));
        self.detected = Some(d);
        for l in sample {
            self.counts.lines += 1;
            let no = self.counts.lines;
            self.parse(no, &l, out);
        }
    }

    fn parse(&mut self, no: u32, text: &str, out: &mut impl FnMut(Read<E>)) {
        let parser = self.parser.as_ref().expect("detected before parsing");
        let format = parser.format();
        match parser.line(text) {
            Ok(Line::Conn(c)) => {
                self.sides.add(&c);
                let proto = self.options.proto;
                if let Err(e) = proto.map_or(Ok(()), |p| c.check_proto(format, p)) {
                    // Another protocol's line is refused as that, before
                    // its side is decided.
                    self.counts.bad += 1;
                    self.put(no, Pending::Bad(E::from(e), shown(text)), out);
                    return;
                }
                self.conns += 1;
                if self.options.max_rows.is_some_and(|m| self.conns > m) {
                    self.counts.cut += 1;
                    return;
                }
                self.put(no, Pending::Conn(c), out);
            }
            Ok(Line::Listening { addr, .. }) => {
                self.sides.listening(addr);
                self.counts.listening += 1;
                let addrs = &mut self.counts.listening_addrs;
                if addrs.len() < 16 && !addrs.contains(&addr) {
                    addrs.push(addr);
                }
            }
            Ok(Line::Skip(why)) => match self.counts.skipped.iter_mut().find(|(k, _)| *k == why) {
                Some((_, n)) => *n += 1,
                None => self.counts.skipped.push((why, 1)),
            },
            Err(e) => {
                self.counts.bad += 1;
                self.put(no, Pending::Bad(E::from(e), shown(text)), out);
            }
        }
    }

    fn put(&mut self, no: u32, p: Pending<E>, out: &mut impl FnMut(Read<E>)) {
        match self.streaming {
            Some(d) => self.hand_out(&d, no, p, out),
            None => self.pending.push((no, p)),
        }
    }

    fn hand_out(&mut self, d: &Decision, no: u32, p: Pending<E>, out: &mut impl FnMut(Read<E>)) {
        let c = match p {
            Pending::Bad(error, text) => {
                return out(Read::Bad {
                    line: no,
                    error,
                    text,
                })
            }
            Pending::Conn(c) => c,
        };
        match d.orient_basis(&c, self.options.flip) {
            Ok((tuple, _)) if !self.seen.insert(tuple) => self.counts.duplicates += 1,
            Ok((tuple, basis)) => {
                self.counts.rows += 1;
                out(Read::Row {
                    line: no,
                    tuple,
                    conn: c,
                    basis: (d.basis == Basis::PerLine).then_some(basis),
                })
            }
            Err(u) => {
                self.counts.undecided += 1;
                out(Read::Bad {
                    line: no,
                    error: E::from(u),
                    text: format!("{} {}", c.a, c.b),
                })
            }
        }
    }
}
