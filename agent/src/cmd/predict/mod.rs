// Over 800 lines for now: the one-group form still builds a GroupSpec; once it is a call log too, split it into the group form and the layout form.
//! `predict`: which member of an SO_REUSEPORT group a given kernel picks for
//! each 4-tuple, as JSON Lines.
//!
//! The group is described by the options ([`PredictArgs`]) and built once
//! with the model ([`ReuseportGroup::build`]); every tuple line is then
//! answered with [`ReuseportGroup::select`], or [`ReuseportGroup::explain`]
//! with `--explain`. Input is read and output written line by line, so runs
//! of any length use constant memory.
//!
//! Output objects, one per tuple line, in input order:
//! - `{"line", "tuple", "profile", "listener", "slot", "hash"}`: `tuple` is
//!   the tuple as read, in the `SADDR:SPORT DADDR:DPORT` form; `profile` the
//!   kernel profile used (`"6.18"`); `listener` the chosen socket's number in
//!   listen order (bind order for UDP), `null` when the group returns none;
//!   `slot` its index in `socks[]`, `null` in the reservoir era (TCP up to
//!   4.5, UDP up to 4.4); `hash` the reuseport hash as `"0x%08x"`.
//! - with `--explain`: `line` plus every field of the model's [`Explain`](reuseport_model::Explain)
//!   record, serialized as the model defines it (its hex strings have no
//!   `0x`).
//! - `{"line", "error"}` for a line that cannot be answered.
//!
//! When `--bind` gives no port, or is absent, the group's port (and address)
//! come from the first tuple line that can be answered: a line that does
//! not parse, or an IPv6 line without `--inner-secret`, gets its error
//! object and the next line is tried. An impossible group is refused before
//! any input is read, so nothing reaches stdout.

use std::fmt::{self, Display};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr};

use clap::{Args, ValueEnum};
use reuseport_model::paste::{self, session, Basis, Decision, Detected, Format, LineNote, Sides};
use reuseport_model::reuseport::{CpuPin, PacketCtx, Payload, Program};
use reuseport_model::tuple::{parse_bind, parse_hex32, parse_tuple_line};
use reuseport_model::{
    GroupSpec, Keys, ParseError, Profile, Proto, Release, ReuseportGroup, SetupError, Tuple,
};
use serde::{Serialize, Serializer};

use crate::error::{Error, LineError};
use crate::kernel;

/// Transport protocol of the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProtoArg {
    /// TCP: members join the group at listen().
    Tcp,
    /// UDP: members join the group at bind().
    Udp,
}

impl From<ProtoArg> for Proto {
    fn from(p: ProtoArg) -> Proto {
        match p {
            ProtoArg::Tcp => Proto::Tcp,
            ProtoArg::Udp => Proto::Udp,
        }
    }
}

/// The `--bind` value: the group's address and, optionally, its port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bind {
    /// Specific, or `0.0.0.0` / `::` for a wildcard group.
    pub addr: IpAddr,
    /// The port, when given.
    pub port: Option<u16>,
}

fn bind_arg(s: &str) -> Result<Bind, ParseError> {
    let (addr, port) = parse_bind(s)?;
    Ok(Bind { addr, port })
}

/// The `--format` value: detected, or named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FormatArg {
    /// Detected from the first lines of the input.
    #[default]
    Auto,
    /// This format.
    Named(Format),
}

fn format_arg(s: &str) -> Result<FormatArg, paste::UnknownFormat> {
    if s.trim().eq_ignore_ascii_case("auto") {
        Ok(FormatArg::Auto)
    } else {
        s.parse().map(FormatArg::Named)
    }
}

/// Parses `--secret` and `--inner-secret`: hex. A value of decimal digits
/// only (`123`) reads differently as decimal and as hex, so it must carry
/// `0x`; `0` and values with a hex letter are unambiguous.
pub fn secret_arg(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let prefixed = t.starts_with("0x") || t.starts_with("0X");
    if !prefixed
        && !t.is_empty()
        && t.bytes().all(|b| b.is_ascii_digit())
        && t.bytes().any(|b| b != b'0')
    {
        let shown = reuseport_model::paste::shown(t);
        return Err(format!(
            "`{shown}` could be decimal or hex; the key is read as hex: write 0x{shown} if that is what you mean"
        ));
    }
    parse_hex32(t).map_err(|e| e.to_string())
}

/// Parses one `--incoming-cpu` item, `LISTENER=CPU`.
pub fn pin_arg(s: &str) -> Result<CpuPin, Error> {
    let bad = || Error::Pin(s.to_string());
    let (l, c) = s.split_once('=').ok_or_else(bad)?;
    Ok(CpuPin {
        listener: l.trim().parse().map_err(|_| bad())?,
        cpu: c.trim().parse().map_err(|_| bad())?,
    })
}

/// The options that describe a group beyond its protocol and size: where
/// it is bound, which members closed, shut down or connected, and the
/// socket options. Shared by the subcommands that build a group from the
/// command line (`predict`, `recover`).
#[derive(Debug, Clone, Default, Args)]
pub struct GroupOptions {
    // "[::1]:8080" below is an address in the --help text, not a doc link.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// The address the group is bound to, optionally with the port: 127.0.0.1, 10.0.0.1:8080, [::1]:8080; 0.0.0.0 or :: for a wildcard group. Default: the destination address of the first tuple line (a specific-address group). The port defaults to the first tuple line's destination port.
    #[arg(long, value_name = "ADDR[:PORT]", value_parser = bind_arg)]
    pub bind: Option<Bind>,

    /// Listeners closed, in this order, after all have joined (comma-separated, or repeat the option).
    #[arg(long, value_name = "I,J,...", value_delimiter = ',')]
    pub closed: Vec<u32>,

    /// TCP listeners shut down (not closed), in this order, after the closes. With --tcp-migrate-req (5.14+) they stay in the group's closed tail.
    #[arg(long, value_name = "I,J,...", value_delimiter = ',')]
    pub shutdown: Vec<u32>,

    /// Set net.ipv4.tcp_migrate_req (TCP, 5.14+): shut-down listeners keep their requests for migration.
    #[arg(long)]
    pub tcp_migrate_req: bool,

    /// SO_INCOMING_CPU settings as LISTENER=CPU pairs (4.4+), comma-separated: 0=1,3=1.
    #[arg(long, value_name = "L=C,...", value_delimiter = ',', value_parser = pin_arg)]
    pub incoming_cpu: Vec<CpuPin>,

    /// UDP members that connect()ed (they are skipped by the group from 5.4).
    #[arg(long, value_name = "I,J,...", value_delimiter = ',')]
    pub connected: Vec<u32>,

    /// IPV6_V6ONLY on an IPv6 group (without it an IPv6 wildcard group also receives IPv4). Ignored for an IPv4 group.
    #[arg(long)]
    pub v6only: bool,
}

impl GroupOptions {
    /// The group these options describe, for `proto` with `listeners`
    /// members bound to `bind:port` and keyed by `keys`.
    pub fn spec(
        &self,
        proto: Proto,
        listeners: u32,
        keys: Keys,
        bind: IpAddr,
        port: u16,
    ) -> GroupSpec {
        GroupSpec {
            v6only: self.v6only,
            closed: self.closed.clone(),
            shutdown: self.shutdown.clone(),
            tcp_migrate_req: self.tcp_migrate_req,
            incoming_cpu: self.incoming_cpu.clone(),
            connected: self.connected.clone(),
            ..GroupSpec::new(proto, listeners, bind, port, keys)
        }
    }
}

/// Options of `predict`.
#[derive(Debug, Clone, Args)]
pub struct PredictArgs {
    /// Kernel to model: a release such as 6.18, 6.18.44-fc or 5.19.3 (it follows the newest profile at or below it), or `auto` for the running kernel (Linux only).
    #[arg(long, value_name = "RELEASE|auto")]
    pub kernel: String,

    /// Transport protocol of the group (with --layout: of the packets; by default the layout's if all its sockets share one).
    #[arg(long, value_enum, required_unless_present = "layout")]
    pub proto: Option<ProtoArg>,

    /// How many sockets join the group, numbered 0..N-1 in listen() order (bind() order for UDP).
    #[arg(
        long,
        value_name = "N",
        required_unless_present = "layout",
        conflicts_with = "layout"
    )]
    pub listeners: Option<u32>,

    /// The 32-bit jhash initval the kernel keys the IPv4 hash with: the protocol's secret plus net_hash_mix, in hex (0x1a2b3c4d). Also the IPv6 outer value; for the 7.2 single-pass IPv6 TCP form give net_hash_mix alone. With --layout it replaces the layout's keys.v4 and keys.v6Outer. Without it (and without --layout), nothing is said per connection, since the secret is random at every boot: one object gives what holds for every secret, the spread of the connections over the listeners in --boots random boots (the lookup page's secret-free answer).
    #[arg(long, value_name = "0xHEX", value_parser = secret_arg)]
    pub secret: Option<u32>,

    /// Without --secret: how many random boots the spread is drawn from (seeded as the lookup page's, 0x5eed, so the two agree).
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub boots: u32,

    /// A JSON layout of several sockets in place of --listeners: a call log (`{"calls": [{"call": "socket", "family": "inet", "proto": "tcp"}, {"call": "bind", "fd": 0, ...}, ...]}`: socket, setsockopt, bind, listen, connect, shutdown, close, in order), or the earlier {sockets, listenOrder, closed} form, converted. The full listener lookup and the bind rules: the first output line gives each call's answer (`answers`) and where each socket ended up (`sockets`); then one object per tuple with the receiving `socket`.
    #[arg(long, value_name = "FILE")]
    pub layout: Option<std::path::PathBuf>,

    /// The IPv6 inner value (the initval of the foreign-address hash, or the only key of the 7.2 single-pass form), in hex. Required for IPv6 tuples: without it each IPv6 line gets an error object.
    #[arg(long, value_name = "0xHEX", value_parser = secret_arg)]
    pub inner_secret: Option<u32>,

    /// The group's address, closes, shutdowns and socket options.
    #[command(flatten)]
    pub group: GroupOptions,

    /// The CPU that receives the packets (matters with --incoming-cpu).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub cpu: u32,

    /// A program attached to the group after all members joined: a JSON program (`{"kind": "cbpf", "insns": [[code, jt, jf, k], ...]}` or any other kind the model runs), bpf_asm text, or the C array `tcpdump -dd` prints. Tuple lines may then end with `payload=HEX`, the datagram's payload the program reads.
    #[arg(long, value_name = "FILE", value_parser = program_arg)]
    pub program: Option<Program>,

    /// Print the model's full explain record for each line (hash inputs, every slot or chain step visited) instead of the short object.
    #[arg(long)]
    pub explain: bool,

    /// The input's format: auto (detected from its first lines), pairs (SADDR:SPORT DADDR:DPORT or SADDR SPORT DADDR DPORT, the client first), ss (ss -tn, -tan, -tnp, -tne), netstat (netstat -tn, -tun), conntrack (conntrack -L), tcpdump (one-line output of tcpdump -nn), proc-net (/proc/net/tcp, tcp6), csv (CSV, TSV or ;-separated columns), observed (a pair and the listener), page (the lookup page's `SADDR:SPORT -> DADDR:DPORT listener N`). Except for pairs, which side is the server is decided from --bind's port, the input's LISTEN lines, a port in every connection, or the format's own direction (a SYN, conntrack's original direction); lines it cannot decide are reported, and a summary of the lines read goes to stderr.
    #[arg(long, value_name = "FORMAT", default_value = "auto", value_parser = format_arg)]
    pub format: FormatArg,
}

impl PredictArgs {
    /// The group these options describe, bound to `bind:port`.
    pub fn spec(&self, bind: IpAddr, port: u16) -> GroupSpec {
        let secret = self.secret.unwrap_or(0);
        let keys = Keys {
            v4: secret,
            v6_outer: secret,
            v6_inner: self.inner_secret.unwrap_or(0),
        };
        let proto = self.proto.expect("required without --layout");
        let listeners = self.listeners.expect("required without --layout");
        GroupSpec {
            program: self.program.clone(),
            ..self.group.spec(proto.into(), listeners, keys, bind, port)
        }
    }

    /// The packet context of a line: the receiving CPU and its payload.
    fn ctx(&self, payload: Option<Payload>) -> PacketCtx {
        PacketCtx {
            payload,
            ..PacketCtx::on_cpu(self.cpu)
        }
    }

    fn build(
        &self,
        profile: &'static Profile,
        bind: IpAddr,
        port: u16,
    ) -> Result<ReuseportGroup, Error> {
        ReuseportGroup::build(profile, &self.spec(bind, port)).map_err(Error::Group)
    }
}

/// How a run went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Tuple lines answered.
    pub answered: u64,
    /// Tuple lines that got an error object.
    pub failed: u64,
}

/// Serializes any `Display` value as a JSON string, without an
/// intermediate `String`.
struct Shown<T>(T);

impl<T: Display> Serialize for Shown<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// A hash as `0x` and 8 hex digits.
struct HashHex(u32);

impl Display for HashHex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:08x}", self.0)
    }
}

#[derive(Serialize)]
struct Prediction<'a> {
    line: u64,
    tuple: Shown<&'a Tuple>,
    profile: Shown<Release>,
    listener: Option<u32>,
    slot: Option<u32>,
    hash: Shown<HashHex>,
    /// What the line said that the answer depends on (address translation,
    /// a dropped IPv6 zone), in English (`messages/en.json`).
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    /// What decided the server side, when each line is decided on its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    side: Option<&'static str>,
}

#[derive(Serialize)]
struct Explained<'a, T: Serialize> {
    line: u64,
    #[serde(flatten)]
    explain: &'a T,
}

#[derive(Serialize)]
struct Failure<'a> {
    line: u64,
    /// The input's format, for the formats other than plain pairs.
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<Format>,
    error: Shown<&'a LineError>,
}

fn emit(out: &mut impl Write, value: &impl Serialize) -> Result<(), Error> {
    serde_json::to_writer(&mut *out, value).map_err(|e| Error::Output(e.into()))?;
    out.write_all(b"\n").map_err(Error::Output)
}

/// The longest program file read (4096 instructions of `tcpdump -dd`
/// text take under 150 KiB).
const MAX_PROGRAM_FILE: u64 = 1 << 20;

/// Reads `--program FILE`: JSON, or classic BPF text in one of the forms
/// [`reuseport_model::reuseport::cbpf::parse`] reads.
pub fn program_arg(path: &str) -> Result<Program, String> {
    use std::io::Read as _;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_PROGRAM_FILE + 1).read_to_string(&mut text))
        .map_err(|e| format!("cannot read {path}: {e}"))?;
    if text.len() as u64 > MAX_PROGRAM_FILE {
        return Err(format!(
            "{path} is over {MAX_PROGRAM_FILE} bytes; a program is far shorter"
        ));
    }
    program_text(&text).map_err(|e| format!("{path}: {e}"))
}

/// A program from its text: JSON when it starts with `{"`, else classic
/// BPF text.
pub fn program_text(text: &str) -> Result<Program, String> {
    let t = text.trim_start();
    let json = t
        .strip_prefix('{')
        .is_some_and(|rest| rest.trim_start().starts_with('"'));
    if json {
        serde_json::from_str(t).map_err(|e| format!("not a program: {e}"))
    } else {
        reuseport_model::reuseport::cbpf::parse(text)
            .map(|insns| Program::Cbpf { insns })
            .map_err(|e| e.to_string())
    }
}

/// Splits a trailing `payload=HEX` field off a tuple line.
fn split_payload(text: &str) -> Result<(&str, Option<Payload>), LineError> {
    let trimmed = text.trim_end();
    match trimmed.rsplit_once(char::is_whitespace) {
        Some((head, last)) if last.starts_with("payload=") => {
            let p = Payload::from_hex(&last["payload=".len()..]).map_err(LineError::Payload)?;
            Ok((head, Some(p)))
        }
        _ => Ok((text, None)),
    }
}

fn parse_line(bytes: &[u8]) -> Result<Option<(Tuple, Option<Payload>)>, LineError> {
    let text = std::str::from_utf8(bytes).map_err(|_| LineError::NotText)?;
    let (text, payload) = split_payload(text)?;
    Ok(parse_tuple_line(text)?.map(|t| (t, payload)))
}

/// Runs `predict`: reads tuple lines from `input`, writes one JSON object
/// per tuple line to `out` (see the module docs).
///
/// Returns how many lines were answered and how many failed, or an
/// [`Error`] when the kernel or group is impossible (nothing is written
/// then) or the input or output fails. `out` is flushed whenever the input
/// holds no further complete line (before a read that may block) and at the
/// end, so interactive use sees each answer at once while bulk runs write in
/// large blocks.
pub fn run(args: &PredictArgs, input: impl Read, out: impl Write) -> Result<Outcome, Error> {
    run_reporting(args, input, out, std::io::stderr())
}

/// [`run`], writing the summary of a paste format's lines (counts and the
/// orientation decision) to `report` instead of stderr.
pub fn run_reporting(
    args: &PredictArgs,
    input: impl Read,
    mut out: impl Write,
    report: impl Write,
) -> Result<Outcome, Error> {
    let profile = kernel::resolve(&args.kernel)?;
    let reading = Reading {
        format: args.format,
        bind: args.group.bind,
        proto: args.proto.map(Proto::from),
        report: Box::new(report),
    };
    if let Some(path) = &args.layout {
        return run_layout(args, profile, path, input, out, reading);
    }
    if args.secret.is_none() {
        return run_spread(args, profile, input, out, reading);
    }
    let mut group = match args.group.bind {
        Some(Bind {
            addr,
            port: Some(port),
        }) => Some(args.build(profile, addr, port)?),
        bind => {
            // Address or port come from the first tuple line. Whether the
            // kernel accepts the group does not depend on them: find out now.
            let addr = bind.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |b| b.addr);
            args.build(profile, addr, 0)?;
            None
        }
    };

    answer_lines(input, &mut out, reading, |out, line, t, note| {
        if t.is_v6() && args.inner_secret.is_none() {
            return Ok(Err(SetupError::MissingInnerSecret.into()));
        }
        if group.is_none() {
            let bind = args.group.bind.map_or(t.daddr, |b| b.addr);
            let port = args.group.bind.and_then(|b| b.port).unwrap_or(t.dport);
            group = Some(args.build(profile, bind, port)?);
        }
        let g = group.as_ref().expect("built above");
        let ctx = args.ctx(note.payload.clone());
        let written = if args.explain {
            g.explain_ctx(&t, &ctx)
                .map(|x| emit(out, &Explained { line, explain: &x }))
        } else {
            g.select_ctx(&t, &ctx).map(|c| {
                emit(
                    out,
                    &Prediction {
                        line,
                        tuple: Shown(&t),
                        profile: Shown(profile.release),
                        listener: c.listener,
                        slot: c.slot,
                        hash: Shown(HashHex(c.hash)),
                        note: note.note(),
                        side: note.basis(),
                    },
                )
            })
        };
        match written {
            Ok(w) => w.map(Ok),
            Err(e) => Ok(Err(LineError::from(e))),
        }
    })
}

/// The seed of the random boots, the lookup page's (src/model/paste-worker.ts).
pub const SPREAD_SEED: u64 = 0x5eed;

/// `predict` without `--secret`: the connections are read (and oriented)
/// as with one, their line errors written as usual, and then one object
/// `{"spread": Spread, "seed"}`: per-listener counts over `--boots` random
/// boots ([`reuseport_model::spread`]), what holds for every secret.
fn run_spread(
    args: &PredictArgs,
    profile: &'static Profile,
    input: impl Read,
    mut out: impl Write,
    reading: Reading<'_>,
) -> Result<Outcome, Error> {
    let bind = args.group.bind;
    let addr = bind.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |b| b.addr);
    // An impossible group is refused before any input is read.
    args.build(profile, addr, 0)?;
    let mut tuples: Vec<Tuple> = Vec::new();
    let mut outcome = answer_lines(input, &mut out, reading, |_, _, t, _| {
        tuples.push(t);
        Ok(Ok(()))
    })?;
    let Some(first) = tuples.first() else {
        return Ok(outcome);
    };
    let group = args.build(
        profile,
        bind.map_or(first.daddr, |b| b.addr),
        bind.and_then(|b| b.port).unwrap_or(first.dport),
    )?;
    let mut run = reuseport_model::spread::SpreadRun::new(group, &tuples, SPREAD_SEED)
        .map_err(Error::Spread)?
        .on_cpu(args.cpu);
    run.step(args.boots);
    #[derive(Serialize)]
    struct Spread {
        spread: reuseport_model::spread::Spread,
        seed: String,
    }
    emit(
        &mut out,
        &Spread {
            spread: run.summary(),
            seed: format!("{SPREAD_SEED:#x}"),
        },
    )?;
    out.flush().map_err(Error::Output)?;
    // Lines answered: every tuple counted in the spread.
    outcome.answered = tuples.len() as u64;
    Ok(outcome)
}

/// How the input is read: its format, the user's bind (the server side for
/// orientation), and where the summary goes.
struct Reading<'r> {
    format: FormatArg,
    bind: Option<Bind>,
    /// The packets' protocol: a line that shows another is refused.
    proto: Option<Proto>,
    report: Box<dyn Write + 'r>,
}

/// The answer to one tuple: `Ok(Ok(()))` answered, `Ok(Err(_))` a line
/// error, `Err(_)` a stop.
type Answer = Result<Result<(), LineError>, Error>;

/// What a paste line says beside its tuple: its note, and what decided its
/// server side when each line is decided on its own.
#[derive(Debug, Clone, Default)]
struct Beside {
    note: Option<LineNote>,
    basis: Option<Basis>,
    /// The line's `payload=HEX` (plain pairs only).
    payload: Option<Payload>,
}

impl Beside {
    /// The note in English (`messages/en.json`).
    fn note(&self) -> Option<String> {
        self.note.map(|n| crate::messages::say("line_note", &n))
    }
    /// The line's own basis, in English.
    fn basis(&self) -> Option<&'static str> {
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
trait Answerer<W>: FnMut(&mut W, u64, Tuple, Beside) -> Answer {}
impl<W, F: FnMut(&mut W, u64, Tuple, Beside) -> Answer> Answerer<W> for F {}

/// The lines already in `reader`'s buffer after its first fill (without
/// a further read that might block): the sample format detection sees.
fn peek_lines(reader: &mut impl BufRead) -> Result<Vec<String>, Error> {
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
fn answer_lines<W: Write>(
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
fn next_line<R: Read>(
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

fn fail(
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
fn answer_pairs<W: Write, R: Read>(
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
struct Bound(Option<Decision>);

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
struct Tally {
    used: u64,
    skipped: u64,
    listening: u64,
    duplicate: u64,
    bad: u64,
}

/// A paste format: read by the model's [`paste::Session`] (parsed,
/// oriented, de-duplicated), each connection answered as the session hands
/// it out: at once when `--bind` gives the port, after the whole input
/// otherwise.
fn answer_paste<W: Write, R: Read>(
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
fn evidence(d: &Detected) -> String {
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
fn said(d: &Decision, format: Format) -> String {
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

/// One tuple's answer with `--layout`.
#[derive(Serialize)]
struct Routed<'a> {
    line: u64,
    tuple: Shown<&'a Tuple>,
    profile: Shown<Release>,
    socket: Option<usize>,
    group: Option<usize>,
    member: Option<u32>,
    /// Why that socket, in English (`messages/en.json`).
    reason: String,
    /// What the line said that the answer depends on, in English.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    /// What decided the server side, when each line is decided on its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    side: Option<&'static str>,
}

/// The first line with `--layout`: each call's answer (`null` for ok), in
/// call order, and where each socket ended up.
#[derive(Serialize)]
struct Header {
    answers: Vec<Option<Refused>>,
    sockets: Vec<SocketResult>,
}

/// One socket's last answers: a [`reuseport_model::lookup::CallResult`]
/// with each refusal's rule put into words.
#[derive(Serialize)]
struct SocketResult {
    socket: usize,
    /// Set when the kernel drew the port at random from this range (no
    /// `ephemeral` range in the layout): the port is not known.
    random_port: Option<RandomPort>,
    bind: Option<Refused>,
    listen: Option<Refused>,
    attach: Option<Refused>,
    receiving: bool,
    closed: bool,
    group: Option<usize>,
    member: Option<u32>,
}

/// The range the kernel drew a socket's port from, in this output's
/// snake_case.
#[derive(Serialize)]
struct RandomPort {
    low: u16,
    high: u16,
    autobind_reuse: bool,
}

/// A refused call: the errno, the rule and its kernel source in one
/// English sentence (`messages/en.json`), and the conflicting socket.
#[derive(Serialize)]
struct Refused {
    errno: reuseport_model::message::Errno,
    rule: String,
    with: Option<usize>,
}

impl From<&reuseport_model::message::Refusal> for Refused {
    fn from(r: &reuseport_model::message::Refusal) -> Refused {
        Refused {
            errno: r.errno,
            rule: crate::messages::refusal(r),
            with: r.with,
        }
    }
}

impl From<reuseport_model::lookup::CallResult> for SocketResult {
    fn from(c: reuseport_model::lookup::CallResult) -> SocketResult {
        let said = |r: Option<reuseport_model::message::Refusal>| r.as_ref().map(Refused::from);
        SocketResult {
            socket: c.socket,
            random_port: c.random_port.map(|e| RandomPort {
                low: e.low,
                high: e.high,
                autobind_reuse: e.autobind_reuse,
            }),
            bind: said(c.bind),
            listen: said(c.listen),
            attach: said(c.attach),
            receiving: c.receiving,
            closed: c.closed,
            group: c.group,
            member: c.member,
        }
    }
}

/// The largest layout file `predict --layout` reads: above the largest
/// call log the model replays (262,144 calls of a few hundred bytes).
pub const MAX_LAYOUT_BYTES: u64 = 64 << 20;

/// `predict --layout`: the full lookup over the sockets of a layout file.
fn run_layout(
    args: &PredictArgs,
    profile: &'static Profile,
    path: &std::path::Path,
    input: impl Read,
    mut out: impl Write,
    mut reading: Reading<'_>,
) -> Result<Outcome, Error> {
    use reuseport_model::lookup::{Call, CallLog, Host, Packet};
    let shown = path.display().to_string();
    let text = crate::read_capped(path, MAX_LAYOUT_BYTES, "a layout")
        .map_err(|e| Error::Layout(format!("cannot read {shown}: {e}")))?;
    // A call log, or the earlier {sockets, listenOrder, closed} form, converted.
    let mut layout: CallLog =
        serde_json::from_str(&text).map_err(|e| Error::Layout(format!("{shown}: {e}")))?;
    if let Some(secret) = args.secret {
        layout.keys.v4 = secret;
        layout.keys.v6_outer = secret;
    }
    if let Some(inner) = args.inner_secret {
        layout.keys.v6_inner = inner;
    }
    let proto = match args.proto {
        Some(p) => p.into(),
        None => {
            let mut protos = layout.calls.iter().filter_map(|c| match c {
                Call::Socket { proto, .. } => Some(*proto),
                _ => None,
            });
            let first = protos
                .next()
                .ok_or_else(|| Error::Layout(format!("{shown}: the layout has no sockets")))?;
            if protos.any(|p| p != first) {
                return Err(Error::Layout(format!(
                    "{shown} mixes TCP and UDP sockets: say which the packets are with --proto"
                )));
            }
            first
        }
    };
    let host = Host::run(profile, &layout).map_err(|e| Error::Layout(format!("{shown}: {e}")))?;
    emit(
        &mut out,
        &Header {
            answers: host
                .answers()
                .iter()
                .map(|a| a.as_ref().map(Refused::from))
                .collect(),
            sockets: host.results().into_iter().map(SocketResult::from).collect(),
        },
    )?;
    reading.proto = Some(proto);
    answer_lines(input, &mut out, reading, |out, line, t, note| {
        let packet = Packet {
            proto,
            tuple: t,
            device: None,
            ctx: args.ctx(note.payload.clone()),
        };
        let x = host.lookup(&packet);
        if args.explain {
            emit(out, &Explained { line, explain: &x })?;
        } else {
            let (group, member) = match &x.group {
                Some(g) if x.socket.is_some_and(|s| g.members.contains(&s)) => (
                    Some(g.group),
                    g.members
                        .iter()
                        .position(|&m| Some(m) == x.socket)
                        .map(|i| i as u32),
                ),
                _ => (None, None),
            };
            emit(
                out,
                &Routed {
                    line,
                    tuple: Shown(&t),
                    profile: Shown(profile.release),
                    socket: x.socket,
                    group,
                    member,
                    reason: x
                        .reason
                        .as_ref()
                        .map(|r| crate::messages::say("lookup_reason", r))
                        .unwrap_or_default(),
                    note: note.note(),
                    side: note.basis(),
                },
            )?;
        }
        Ok(Ok(()))
    })
}

impl crate::exit::Ending for Outcome {
    fn status(&self) -> crate::exit::Status {
        crate::exit::all_or_partial(self.failed == 0)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use clap::Parser;
    use serde_json::Value;

    use super::*;
    use crate::{Cli, Command};

    fn args(argv: &str) -> PredictArgs {
        let argv = std::iter::once("reuseport-agent")
            .chain(std::iter::once("predict"))
            .chain(argv.split_whitespace());
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Predict(a) => a,
            _ => unreachable!("parsed a predict command line"),
        }
    }

    fn predict(argv: &str, input: &str) -> (Result<Outcome, Error>, Vec<Value>) {
        let mut out = Vec::new();
        let r = run(&args(argv), input.as_bytes(), &mut out);
        let text = String::from_utf8(out).unwrap();
        (
            r,
            text.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect(),
        )
    }

    #[test]
    fn a_program_file_and_payload_fields_route_each_datagram() {
        // ldb [1]; ret a: the second payload byte is the index.
        let dir = std::env::temp_dir().join(format!("predict-program-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("p.bpf");
        std::fs::write(&file, "; second byte\nldb [1]\nret a\n").unwrap();
        let argv = format!(
            "--kernel 6.12 --proto udp --listeners 4 --secret 0x1 --bind 127.0.0.1:53 --program {}",
            file.display()
        );
        let input = "127.0.0.9 4000 127.0.0.1 53 payload=0002\n\
                     127.0.0.9 4001 127.0.0.1 53 payload=ff03aa\n\
                     127.0.0.9 4002 127.0.0.1 53 payload=zz\n";
        let (r, v) = predict(&argv, input);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            r.unwrap(),
            Outcome {
                answered: 2,
                failed: 1
            }
        );
        assert_eq!(
            (v[0]["slot"].as_u64(), v[1]["slot"].as_u64()),
            (Some(2), Some(3))
        );
        assert!(
            v[2]["error"].as_str().unwrap().contains("payload"),
            "{}",
            v[2]
        );
    }

    #[test]
    fn options_parse_into_the_spec() {
        let a = args("--kernel 6.18 --proto udp --listeners 4 --secret 0xabc --inner-secret 0x12 --closed 1,2 --closed 3 --connected 0 --incoming-cpu 0=1,2=3 --bind [::]:53 --v6only --cpu 2");
        let spec = a.spec("::".parse().unwrap(), 53);
        assert_eq!(spec.proto, Proto::Udp);
        assert_eq!(
            spec.keys,
            Keys {
                v4: 0xabc,
                v6_outer: 0xabc,
                v6_inner: 0x12
            }
        );
        assert_eq!(spec.closed, vec![1, 2, 3]);
        assert_eq!(spec.connected, vec![0]);
        assert_eq!(
            spec.incoming_cpu,
            vec![
                CpuPin {
                    listener: 0,
                    cpu: 1
                },
                CpuPin {
                    listener: 2,
                    cpu: 3
                }
            ]
        );
        assert_eq!(
            a.group.bind,
            Some(Bind {
                addr: "::".parse().unwrap(),
                port: Some(53)
            })
        );
        assert!(spec.v6only);
        assert_eq!(a.cpu, 2);
    }

    #[test]
    fn bad_pins_and_secrets_are_usage_errors() {
        for bad in [
            "--incoming-cpu 1",
            "--incoming-cpu a=1",
            "--secret 0xZZ",
            "--secret 0x123456789",
        ] {
            let argv =
                format!("predict --kernel 6.18 --proto tcp --listeners 2 --secret 0x1 {bad}");
            let e = Cli::try_parse_from(
                std::iter::once("reuseport-agent").chain(argv.split_whitespace()),
            )
            .unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
        }
        assert!(pin_arg("x")
            .unwrap_err()
            .to_string()
            .contains("LISTENER=CPU"));
    }

    #[test]
    fn blank_and_comment_lines_are_skipped_but_counted() {
        let (r, v) = predict(
            "--kernel 6.18 --proto tcp --listeners 8 --secret 0",
            "# header\n\n127.0.0.9 40000 127.0.0.1 8080\n",
        );
        assert_eq!(
            r.unwrap(),
            Outcome {
                answered: 1,
                failed: 0
            }
        );
        assert_eq!(v.len(), 1);
        assert_eq!(v[0]["line"], 3);
        assert_eq!(v[0]["tuple"], "127.0.0.9:40000 127.0.0.1:8080");
        assert_eq!(v[0]["profile"], "6.18");
    }

    #[test]
    fn the_first_good_line_binds_the_group() {
        let input = "127.0.0.9 99999 127.0.0.1 8080\n\
                     [fd02::5]:1 [::1]:8080\n\
                     127.0.0.9 40000 127.0.0.2 9090\n\
                     127.0.0.9 40000 127.0.0.1 8080\n\
                     127.0.0.9 40001 127.0.0.2 9090\n";
        let (r, v) = predict("--kernel 6.18 --proto tcp --listeners 8 --secret 0", input);
        assert_eq!(
            r.unwrap(),
            Outcome {
                answered: 2,
                failed: 3
            }
        );
        assert!(v[0]["error"].as_str().unwrap().contains("source port"));
        assert!(v[1]["error"].as_str().unwrap().contains("--inner-secret"));
        assert!(
            v[2]["listener"].is_u64(),
            "line 3 binds the group to 127.0.0.2:9090"
        );
        assert!(v[3]["error"]
            .as_str()
            .unwrap()
            .contains("does not reach the group bound to 127.0.0.2 port 9090"));
        assert_eq!(v[4]["line"], 5);
        assert!(v[4]["listener"].is_u64());
    }

    #[test]
    fn bind_without_port_takes_the_port_from_the_first_line() {
        let input =
            "10.0.0.2 1000 10.0.0.1 80\n10.0.0.2 1000 10.0.0.7 80\n10.0.0.2 1000 10.0.0.1 81\n";
        let (r, v) = predict(
            "--kernel 6.18 --proto udp --listeners 3 --secret 0x7 --bind 0.0.0.0",
            input,
        );
        assert_eq!(
            r.unwrap(),
            Outcome {
                answered: 2,
                failed: 1
            }
        );
        assert!(v[2]["error"].as_str().unwrap().contains("port 80"));
    }

    #[test]
    fn an_impossible_group_is_refused_before_any_output() {
        for argv in [
            "--kernel 6.18 --proto tcp --listeners 0 --secret 0",
            "--kernel 6.18 --proto tcp --listeners 4 --secret 0 --closed 4",
            "--kernel 6.18 --proto tcp --listeners 2 --secret 0 --connected 1",
            "--kernel 6.12 --proto udp --listeners 2 --secret 0 --tcp-migrate-req",
            "--kernel 2.6 --proto tcp --listeners 2 --secret 0",
        ] {
            let (r, v) = predict(argv, "bad line\n127.0.0.9 40000 127.0.0.1 8080\n");
            assert!(r.is_err(), "{argv}");
            assert!(v.is_empty(), "{argv}");
        }
    }

    #[test]
    fn explain_records_carry_the_line() {
        let (r, v) = predict(
            "--kernel 6.18 --proto tcp --listeners 8 --secret 0 --explain",
            "\n127.0.0.9 40000 127.0.0.1 8080\n",
        );
        assert_eq!(r.unwrap().answered, 1);
        assert_eq!(v[0]["line"], 2);
        assert_eq!(v[0]["listener"], v[0]["slot"]);
        assert_eq!(v[0]["group"]["listening"], 8);
        assert!(v[0]["hash"]["calls"].is_array());
    }

    #[test]
    fn not_utf8_is_a_line_error() {
        let mut out = Vec::new();
        let r = run(
            &args("--kernel 6.18 --proto tcp --listeners 2 --secret 0"),
            &b"\xff\xfe 1 2 3\n"[..],
            &mut out,
        );
        assert_eq!(
            r.unwrap(),
            Outcome {
                answered: 0,
                failed: 1
            }
        );
        assert!(String::from_utf8(out).unwrap().contains("not UTF-8"));
    }

    /// The output side of a pipe: what has been written through so far.
    #[derive(Clone, Default)]
    struct Pipe(Rc<RefCell<Vec<u8>>>);

    impl Write for Pipe {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Input that arrives one line per read, like a person typing; each read
    /// checks that every earlier answer has already reached the pipe.
    struct Typist {
        lines: Vec<&'static str>,
        given: usize,
        pipe: Pipe,
    }

    impl Read for Typist {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let seen = self.pipe.0.borrow().iter().filter(|&&b| b == b'\n').count();
            assert_eq!(
                seen, self.given,
                "answers to earlier lines must be flushed before a read that may block"
            );
            let Some(l) = self.lines.get(self.given) else {
                return Ok(0);
            };
            self.given += 1;
            buf[..l.len()].copy_from_slice(l.as_bytes());
            Ok(l.len())
        }
    }

    #[test]
    fn answers_are_flushed_before_waiting_for_input() {
        let pipe = Pipe::default();
        let typist = Typist {
            lines: vec![
                "127.0.0.9 40000 127.0.0.1 8080\n",
                "127.0.0.9 40001 127.0.0.1 8080\n",
                "x\n",
            ],
            given: 0,
            pipe: pipe.clone(),
        };
        let out = std::io::BufWriter::new(pipe.clone());
        let r = run(
            &args("--kernel 6.18 --proto tcp --listeners 8 --secret 0"),
            typist,
            out,
        )
        .unwrap();
        assert_eq!(
            r,
            Outcome {
                answered: 2,
                failed: 1
            }
        );
    }
}
