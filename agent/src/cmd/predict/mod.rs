//! `predict`: which socket a given kernel picks for each 4-tuple, as JSON
//! Lines.
//!
//! It has one way in: a host stepped by socket calls
//! ([`reuseport_model::lookup::Host`]), replayed once (`calls.rs`). The
//! calls come from `--layout FILE` (a call log, read at the edge), or the
//! group options ([`PredictArgs`]) are a shorthand that writes them
//! ([`reuseport_model::lookup::CallLog::from_group`]): one socket, bind
//! and listen per listener, then the options, connects, closes and
//! shutdowns. A call the kernel refuses makes the group impossible. Every
//! tuple line is then answered by the group the host holds
//! ([`reuseport_model::lookup::Host::group`], the reservoir era's chain
//! before it) with [`reuseport_model::ReuseportGroup::select`], or
//! [`reuseport_model::ReuseportGroup::explain`] with `--explain`; with
//! `--layout` by the host's full lookup. Input is read and output written
//! line by line (`lines.rs`), so runs of any length use constant memory.
//!
//! Output objects, one per tuple line, in input order (`output.rs`):
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

use std::io::{Read, Write};
use std::net::IpAddr;

use clap::{Args, ValueEnum};
use reuseport_model::paste::{self, Format};
use reuseport_model::reuseport::{CpuPin, PacketCtx, Payload, Program};
use reuseport_model::tuple::{parse_bind, parse_hex32};
use reuseport_model::{GroupSpec, Keys, ParseError, Proto};

use crate::error::Error;
use crate::kernel;

mod calls;
mod lines;
mod output;
#[cfg(test)]
mod tests;

pub use calls::{MAX_LAYOUT_BYTES, SPREAD_SEED};
pub use lines::{read_capped_line, too_long, MAX_LINE};

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

    /// A JSON layout of several sockets in place of --listeners: a call log (`{"calls": [{"call": "socket", "family": "inet", "proto": "tcp"}, {"call": "bind", "fd": 0, ...}, ...]}`: socket, setsockopt, bind, listen, connect, shutdown, close, in order), or the socket-list form {sockets, listenOrder, closed}, converted into calls as it is read. The full listener lookup and the bind rules: the first output line gives each call's answer (`answers`) and where each socket ended up (`sockets`); then one object per tuple with the receiving `socket`.
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
    pub(crate) fn ctx(&self, payload: Option<Payload>) -> PacketCtx {
        PacketCtx {
            payload,
            ..PacketCtx::on_cpu(self.cpu)
        }
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

/// The longest program file read (4096 instructions of `tcpdump -dd`
/// text take under 150 KiB).
const MAX_PROGRAM_FILE: u64 = 1 << 20;

/// Reads `--program FILE`: JSON, or classic BPF text in one of the forms
/// [`reuseport_model::reuseport::cbpf::parse`] reads.
pub fn program_arg(path: &str) -> Result<Program, String> {
    use std::io::Read as _;
    let mut head = [0u8; 4];
    let elf = std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && head == *b"\x7fELF";
    if elf {
        // An ELF object clang wrote: its first program, maps empty (the
        // reader fills them; verify fills them by its rule).
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?;
        let obj = reuseport_model::reuseport::ebpf::read(&bytes)
            .map_err(|e| format!("{path}: {}", crate::messages::elf_error(&e)))?;
        let program = obj
            .programs
            .into_iter()
            .next()
            .ok_or(format!("{path}: no program"))?;
        return Ok(Program::Ebpf {
            program,
            maps: Vec::new(),
            extra_maps: Vec::new(),
            seed: 0,
            cookies: Vec::new(),
        });
    }
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
    out: impl Write,
    report: impl Write,
) -> Result<Outcome, Error> {
    let profile = kernel::resolve(&args.kernel)?;
    let reading = lines::Reading {
        format: args.format,
        bind: args.group.bind,
        proto: args.proto.map(Proto::from),
        report: Box::new(report),
    };
    match &args.layout {
        Some(path) => calls::run_layout(args, profile, path, input, out, reading),
        None if args.secret.is_none() => calls::run_spread(args, profile, input, out, reading),
        None => calls::run_group(args, profile, input, out, reading),
    }
}

impl crate::exit::Ending for Outcome {
    fn status(&self) -> crate::exit::Status {
        crate::exit::all_or_partial(self.failed == 0)
    }
}
