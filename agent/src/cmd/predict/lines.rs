//! How `predict` reads its input: plain tuple pairs line by line, or a
//! paste format through the model's [`paste::Session`], each line bounded,
//! `out` flushed before any read that may block.

use std::io::{BufRead, BufReader, Read, Write};

use reuseport_model::paste::{self, session, Basis, Decision, Detected, Format, LineNote, Sides};
use reuseport_model::reuseport::Payload;
use reuseport_model::tuple::parse_tuple_line;
use reuseport_model::{Proto, Tuple};

use super::output::{emit, Failure, Shown};
use super::{Bind, FormatArg, Outcome};
use crate::error::{Error, LineError};

/// Splits a trailing `payload=HEX` field off a tuple line.
pub(super) fn split_payload(text: &str) -> Result<(&str, Option<Payload>), LineError> {
    let trimmed = text.trim_end();
    match trimmed.rsplit_once(char::is_whitespace) {
        Some((head, last)) if last.starts_with("payload=") => {
            let p = Payload::from_hex(&last["payload=".len()..]).map_err(LineError::Payload)?;
            Ok((head, Some(p)))
        }
        _ => Ok((text, None)),
    }
}

pub(super) fn parse_line(bytes: &[u8]) -> Result<Option<(Tuple, Option<Payload>)>, LineError> {
    let text = std::str::from_utf8(bytes).map_err(|_| LineError::NotText)?;
    let (text, payload) = split_payload(text)?;
    Ok(parse_tuple_line(text)?.map(|t| (t, payload)))
}

/// How the input is read: its format, the user's bind (the server side for
/// orientation), and where the summary goes.
pub(super) struct Reading<'r> {
    pub(super) format: FormatArg,
    pub(super) bind: Option<Bind>,
    /// The packets' protocol: a line that shows another is refused.
    pub(super) proto: Option<Proto>,
    pub(super) report: Box<dyn Write + 'r>,
}

/// The answer to one tuple: `Ok(Ok(()))` answered, `Ok(Err(_))` a line
/// error, `Err(_)` a stop.
pub(super) type Answer = Result<Result<(), LineError>, Error>;

/// What a paste line says beside its tuple: its note, and what decided its
/// server side when each line is decided on its own.
#[derive(Debug, Clone, Default)]
pub(super) struct Beside {
    pub(super) note: Option<LineNote>,
    pub(super) basis: Option<Basis>,
    /// The line's `payload=HEX` (plain pairs only).
    pub(super) payload: Option<Payload>,
}

impl Beside {
    /// The note in English (`messages/en.json`).
    pub(super) fn note(&self) -> Option<String> {
        self.note.map(|n| crate::messages::say("line_note", &n))
    }
    /// The line's own basis, in English.
    pub(super) fn basis(&self) -> Option<&'static str> {
        self.basis.map(|b| match b {
            Basis::Format => "the line's direction",
            Basis::SystemPort => "a system port against a higher one",
            Basis::ServicePort => "a well-known service port against an ephemeral one",
            _ => "the decision",
        })
    }
}

/// Answers one tuple, given the output, the line number, the tuple (client
/// first) and what the line says beside it.
pub(super) trait Answerer<W>: FnMut(&mut W, u64, Tuple, Beside) -> Answer {}
impl<W, F: FnMut(&mut W, u64, Tuple, Beside) -> Answer> Answerer<W> for F {}

/// The lines already in `reader`'s buffer after its first fill (without
/// a further read that might block): the sample format detection sees.
pub(super) fn peek_lines(reader: &mut impl BufRead) -> Result<Vec<String>, Error> {
    let buf = reader.fill_buf().map_err(Error::Input)?;
    Ok(String::from_utf8_lossy(buf)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(paste::DETECT_LINES)
        .map(str::to_string)
        .collect())
}

/// Reads tuple lines from `input`, flushing `out` before any read that may
/// block, and answers each connection with `answer` (given the 1-based
/// line number and the tuple, client first). A line that does not parse,
/// whose sides are undecided, or whose answer is a line error, gets a
/// `{"line", "error"}` object. Returns the counts.
///
/// The format is `--format`'s, or detected from the lines of the first
/// read. Plain pairs are read as before: each line is a tuple, client
/// first, answered as it arrives. Other formats are oriented by
/// [`Sides`]: at once when `--bind` gives the port, otherwise after the
/// whole input (LISTEN lines and a common port need every line); a tuple
/// seen before is not answered again, and the counts and the decision are
/// written to the report.
pub(super) fn answer_lines<W: Write>(
    input: impl Read,
    out: &mut W,
    mut reading: Reading<'_>,
    answer: impl Answerer<W>,
) -> Result<Outcome, Error> {
    let mut reader = BufReader::with_capacity(1 << 16, input);
    let detected = match reading.format {
        FormatArg::Named(Format::Pairs) => None,
        FormatArg::Named(f) => {
            let sample = peek_lines(&mut reader)?;
            let refs: Vec<&str> = sample.iter().map(String::as_str).collect();
            Some(Detected::named(f, &refs))
        }
        FormatArg::Auto => {
            let sample = peek_lines(&mut reader)?;
            let refs: Vec<&str> = sample.iter().map(String::as_str).collect();
            Some(paste::detect(&refs)).filter(|d| d.format != Format::Pairs)
        }
    };
    match detected {
        None => answer_pairs(reader, out, reading.bind, answer),
        Some(d) => answer_paste(reader, out, &d, &mut reading, answer),
    }
}

/// The longest input line read, in bytes (a tuple line is under 100; the
/// longest `ss -tnpe` line under 1000). A longer line gets a line error
/// and its bytes past the bound are skipped, never held.
pub const MAX_LINE: usize = 64 * 1024;

/// Reads one line, through its `\n`, into `buf`, keeping at most `max`
/// bytes of it: the rest of a longer line is read and dropped. Returns the
/// line's whole length, or `None` at the end of the input.
pub fn read_capped_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<usize>> {
    buf.clear();
    let mut len = 0usize;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok((len > 0).then_some(len));
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = max.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        len += take;
        reader.consume(take);
        if done {
            return Ok(Some(len));
        }
    }
}

/// The line error of a line longer than [`MAX_LINE`], with the start of
/// what was kept (escaped and cut).
pub fn too_long(len: usize, kept: &[u8]) -> LineError {
    let start = String::from_utf8_lossy(&kept[..kept.len().min(32)]);
    LineError::TooLong {
        len,
        max: MAX_LINE,
        start: reuseport_model::paste::shown(&start),
    }
}

/// Reads one line into `buf`, flushing `out` first when no complete line
/// is buffered. `None` at the end of the input; `Some(Err(_))` for a line
/// longer than [`MAX_LINE`].
pub(super) fn next_line<R: Read>(
    reader: &mut BufReader<R>,
    buf: &mut Vec<u8>,
    out: &mut impl Write,
) -> Result<Option<Result<(), LineError>>, Error> {
    if !reader.buffer().contains(&b'\n') {
        out.flush().map_err(Error::Output)?;
    }
    Ok(read_capped_line(reader, buf, MAX_LINE)
        .map_err(Error::Input)?
        .map(|len| {
            if len > MAX_LINE {
                Err(too_long(len, buf))
            } else {
                Ok(())
            }
        }))
}

pub(super) fn fail(
    out: &mut impl Write,
    line: u64,
    format: Option<Format>,
    e: &LineError,
) -> Result<(), Error> {
    emit(
        out,
        &Failure {
            line,
            format,
            error: Shown(e),
        },
    )
}

/// Plain pairs, client first: each line answered as it is read.
pub(super) fn answer_pairs<W: Write, R: Read>(
    mut reader: BufReader<R>,
    out: &mut W,
    bind: Option<Bind>,
    mut answer: impl Answerer<W>,
) -> Result<Outcome, Error> {
    let bound = Bound::new(bind);
    let mut buf = Vec::with_capacity(128);
    let mut outcome = Outcome::default();
    let mut line = 0u64;
    while let Some(read) = next_line(&mut reader, &mut buf, out)? {
        line += 1;
        let result = match read.and_then(|()| parse_line(&buf)) {
            Ok(None) => continue,
            Ok(Some((t, payload))) => answer(
                out,
                line,
                bound.orient(t),
                Beside {
                    payload,
                    ..Beside::default()
                },
            )?,
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => outcome.answered += 1,
            Err(e) => {
                fail(out, line, None, &e)?;
                outcome.failed += 1;
            }
        }
    }
    out.flush().map_err(Error::Output)?;
    Ok(outcome)
}

/// Plain pairs are read client first; with `--bind`'s port, a pair written
/// server first (`ss`'s Local and Peer columns alone, on the server) is
/// turned round by the bind, which says which side is the server. A pair
/// with neither or both ends on the port is left as written.
pub(super) struct Bound(Option<Decision>);

impl Bound {
    fn new(bind: Option<Bind>) -> Bound {
        let d = Sides::new(bind.map(|b| (b.addr, b.port))).decide();
        Bound((d.basis == Basis::Bind).then_some(d))
    }

    fn orient(&self, t: Tuple) -> Tuple {
        let Some(d) = &self.0 else { return t };
        let c = paste::Conn {
            a: std::net::SocketAddr::new(t.saddr, t.sport),
            b: std::net::SocketAddr::new(t.daddr, t.dport),
            meaning: paste::Meaning::Unknown,
            listener: None,
            proto: None,
            note: None,
        };
        d.orient(&c, false).unwrap_or(t)
    }
}

/// The counts of a paste format's lines.
#[derive(Debug, Default)]
pub(super) struct Tally {
    pub(super) used: u64,
    pub(super) skipped: u64,
    pub(super) listening: u64,
    pub(super) duplicate: u64,
    pub(super) bad: u64,
}

/// A paste format: read by the model's [`paste::Session`] (parsed,
/// oriented, de-duplicated), each connection answered as the session hands
/// it out: at once when `--bind` gives the port, after the whole input
/// otherwise.
pub(super) fn answer_paste<W: Write, R: Read>(
    mut reader: BufReader<R>,
    out: &mut W,
    detected: &Detected,
    reading: &mut Reading<'_>,
    mut answer: impl Answerer<W>,
) -> Result<Outcome, Error> {
    let format = detected.format;
    let mut session: paste::Session<LineError> = paste::Session::new(session::Options {
        detected: Some(detected.clone()),
        bind: reading.bind.map(|b| (b.addr, b.port)),
        proto: reading.proto,
        ..session::Options::default()
    });
    let mut tally = Tally::default();
    let mut handle = |out: &mut W, tally: &mut Tally, r: session::Read<LineError>| {
        let (line, result) = match r {
            session::Read::Bad { line, error, .. } => (line, Err(error)),
            session::Read::Row {
                line,
                tuple,
                conn,
                basis,
            } => {
                let beside = Beside {
                    payload: None,
                    note: conn.note,
                    basis,
                };
                (line, answer(out, u64::from(line), tuple, beside)?)
            }
        };
        match result {
            Ok(()) => tally.used += 1,
            Err(e) => {
                fail(out, u64::from(line), Some(format), &e)?;
                tally.bad += 1;
            }
        }
        Ok::<(), Error>(())
    };

    let mut ready = Vec::new();
    let mut buf = Vec::with_capacity(128);
    while let Some(read) = next_line(&mut reader, &mut buf, out)? {
        let mut take = |r| ready.push(r);
        match read.map(|()| std::str::from_utf8(&buf)) {
            Err(e) => session.failed_line(e, &String::from_utf8_lossy(&buf), &mut take),
            Ok(Err(_)) => session.failed_line(
                LineError::NotText,
                &String::from_utf8_lossy(&buf),
                &mut take,
            ),
            Ok(Ok(text)) => session.line(text, &mut take),
        }
        for r in ready.drain(..) {
            handle(out, &mut tally, r)?;
        }
    }
    let decision = session.finish(&mut |r| ready.push(r));
    for r in ready.drain(..) {
        handle(out, &mut tally, r)?;
    }
    let counts = session.counts();
    tally.skipped = counts.skipped.iter().map(|&(_, n)| u64::from(n)).sum();
    tally.listening = u64::from(counts.listening);
    tally.duplicate = u64::from(counts.duplicates);
    out.flush().map_err(Error::Output)?;
    // The summary is advice to a person: a closed stderr does not fail the run.
    let _ = writeln!(
        reading.report,
        "reuseport-agent predict: read {format}{}: {} used, {} skipped, {} listening, {} duplicate, {} bad line(s); the server side: {}; {}",
        if detected.header { " (with a header)" } else { "" },
        tally.used,
        tally.skipped,
        tally.listening,
        tally.duplicate,
        tally.bad,
        said(&decision, format),
        evidence(detected),
    );
    Ok(Outcome {
        answered: tally.used,
        failed: tally.bad,
    })
}

/// Why the format: how many of the sample's lines it read, and what else
/// the sample showed (names where numbers belong, another format's lines).
pub(super) fn evidence(d: &Detected) -> String {
    let e = &d.evidence;
    let mut out = format!(
        "why {}: {} of the first {} non-blank lines read as {} output, {} of them sockets",
        d.format, e.read, e.sample, d.format, e.sockets
    );
    if e.names > 0 {
        out.push_str(&format!(
            "; {} print host or service names: run the command again with -n (tcpdump: -nn)",
            e.names
        ));
    }
    if let Some(m) = e.mixed {
        out.push_str(&format!(
            "; {} line(s) are {} output: the paste mixes formats, and only {} is read",
            m.lines, m.format, d.format
        ));
    }
    out
}

/// The orientation decision in English.
pub(super) fn said(d: &Decision, format: Format) -> String {
    let at = |p: Option<u16>| match (d.addr, p) {
        (Some(a), Some(p)) => format!("{}", std::net::SocketAddr::new(a, p)),
        (None, Some(p)) => format!("port {p}"),
        (_, None) => "no port".to_string(),
    };
    match d.basis {
        Basis::Bind => format!("{} (from --bind)", at(d.port)),
        Basis::Listening => format!("{} (the input's LISTEN lines)", at(d.port)),
        Basis::CommonPort => format!("{} (the one port in every connection)", at(d.port)),
        Basis::Format => {
            format!("each line's own direction ({format} says which end is the client)")
        }
        Basis::PerLine => "each line on its own: its direction where the format gives one, else a system port (below 1024) or a well-known service port against an ephemeral one (each answer's `side` says which); a line with neither is undecided".to_string(),
        Basis::SystemPort | Basis::ServicePort => "each line's ports".to_string(),
        Basis::None => "undecided: give the listening port with --bind ADDR:PORT".to_string(),
    }
}
