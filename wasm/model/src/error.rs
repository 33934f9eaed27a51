//! Errors, one enum per concern. Every message says what was wrong and how to
//! put it right.

use thiserror::Error;

pub use crate::release::ProfileError;

/// A group that the kernel would refuse to build, or an operation on a
/// member that does not apply.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GroupError {
    /// The 32769th member: `reuseport_grow` cannot double past `U16_MAX`.
    #[error("listener {listener} cannot join: the group already holds 32768 members, the kernel's cap (socks[] cannot grow past U16_MAX); {call}() fails with {errno}")]
    Full {
        /// The listener that could not join (0-based, in join order).
        listener: u32,
        /// `listen` for TCP, `bind` for UDP.
        call: &'static str,
        /// `ENOMEM` for TCP, `EADDRINUSE` for UDP.
        errno: &'static str,
    },
    /// A member number past the end.
    #[error("listener {listener} does not exist: the group has {count} listener(s), numbered from 0 in {order} order (the last is {})", .count.saturating_sub(1))]
    NoSuchListener {
        /// The number given.
        listener: u32,
        /// How many listeners there are.
        count: u32,
        /// `listen()` or `bind()`.
        order: &'static str,
    },
    /// Closing or shutting down a listener twice, or re-listening one that is
    /// already listening.
    #[error("listener {listener} is {state}; {action} applies only to {needed} listeners")]
    WrongState {
        /// The listener.
        listener: u32,
        /// Its state now.
        state: &'static str,
        /// What was asked.
        action: &'static str,
        /// The state the action needs.
        needed: &'static str,
    },
    /// An option the chosen kernel or protocol does not have.
    #[error("{what} is not available here: {why}")]
    Unsupported {
        /// The option or operation.
        what: String,
        /// Which kernel or protocol rule says so.
        why: String,
    },
}

/// A group description that is inconsistent, or a packet the group cannot
/// receive.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SetupError {
    /// A profile problem.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// A group problem.
    #[error(transparent)]
    Group(#[from] GroupError),
    /// Zero listeners.
    #[error("a group needs at least one listener; give --listeners 1 or more")]
    NoListeners,
    /// More listeners than the model builds (a bound on input, not a kernel rule).
    #[error("{given} listeners is more than the model builds ({max}): a 3.9–4.5 chain has no kernel limit but one process's file descriptors (fs.nr_open, 1048576 by default), and the group array from 4.6 stops at 32768 members")]
    TooManyListeners {
        /// Listeners asked for.
        given: u32,
        /// The bound.
        max: u32,
    },
    /// The packet's destination is not where the group is bound.
    #[error("destination {daddr} port {dport} does not reach the group bound to {bind} port {port}: the kernel finds no listener here ({consequence}); check the tuple's order (client first) or --bind")]
    NotForThisGroup {
        /// Destination address of the packet.
        daddr: String,
        /// Destination port of the packet.
        dport: u16,
        /// The group's bound address.
        bind: String,
        /// The group's port.
        port: u16,
        /// What the kernel then does.
        consequence: &'static str,
    },
    /// An IPv6 packet and no inner secret.
    #[error(
        "an IPv6 tuple needs both IPv6 hash values: give the inner secret as well (--inner-secret)"
    )]
    MissingInnerSecret,
    /// A payload longer than a datagram can be.
    #[error("a payload of {len} bytes is longer than a UDP datagram can carry ({max})")]
    PayloadTooLong {
        /// Its length.
        len: usize,
        /// The most.
        max: usize,
    },
    /// A classic program read a value the packet context does not give.
    #[error("the program's instruction {pc} reads {}, which the model does not know for this packet; give it in the packet context to decide", unknown_words(.what))]
    ProgramReadsUnknown {
        /// The instruction.
        pc: u32,
        /// What it read.
        what: crate::reuseport::cbpf::ancillary::Unknown,
    },
    /// An eBPF program's run that does not decide: it read what the
    /// packet does not hold, or did what the verifier refuses.
    /// Its words are the sentence tables' (`ebpf_end.<kind>`, said by the
    /// site and by the agent); this message is the bare record.
    #[error("the eBPF program's run does not decide: {end:?}")]
    EbpfUndecided {
        /// How the run ended: [`crate::reuseport::ebpf::EbpfEnd::Unknown`]
        /// or [`crate::reuseport::ebpf::EbpfEnd::Fault`].
        end: crate::reuseport::ebpf::EbpfEnd,
    },
    /// An eBPF program whose section does not say its kind, and the
    /// reader has not.
    #[error(
        "section `{section}` does not say the program's kind: give `kind` \
         (sk_reuseport, sk_reuseport_migrate or socket_filter)"
    )]
    EbpfKindUnsaid {
        /// The program's section.
        section: String,
    },
    /// An eBPF program whose maps cannot be built as given.
    /// Its words are the sentence tables' (`map_refusal.<kind>`, said by
    /// the site and by the agent); this message is the bare record.
    #[error("the eBPF program's maps cannot be built: {why:?}")]
    EbpfInput {
        /// Why, naming the map and key.
        why: crate::reuseport::ebpf::MapRefusal,
    },
}

fn unknown_words(u: &crate::reuseport::cbpf::ancillary::Unknown) -> String {
    use crate::reuseport::cbpf::ancillary::Unknown as U;
    match u {
        U::Ancillary { field } => format!("the ancillary value SKF_AD_{} (`anc.{}`)", format!("{field:?}").to_uppercase(), anc_field(*field)),
        U::NetworkHeader { offset } => format!("byte {offset} of the IP/transport headers (SKF_NET_OFF + {offset})"),
        U::LinkHeader { offset } => format!("byte {offset} of the link-layer header (SKF_LL_OFF + {offset})"),
        U::Nonlinear { len } => format!("a netlink attribute of a {len}-byte datagram, which may not be in one piece (skb_is_nonlinear)"),
    }
}

fn anc_field(a: crate::reuseport::cbpf::ancillary::Ancillary) -> &'static str {
    use crate::reuseport::cbpf::ancillary::Ancillary as A;
    match a {
        A::Rxhash => "rxhash",
        A::Random => "random",
        A::PayOffset => "payOffset",
        _ => "?",
    }
}

/// A line of tuple text that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseError {
    /// Wrong number of fields.
    #[error("expected `SADDR SPORT DADDR DPORT` or `SADDR:SPORT DADDR:DPORT`{extra}, found {found} field(s)")]
    FieldCount {
        /// How many fields the line had.
        found: usize,
        /// Description of an extra trailing field, if the format has one.
        extra: &'static str,
    },
    /// An address that is neither IPv4 nor IPv6.
    #[error("{field} `{value}` is not an IPv4 or IPv6 address (IPv6 with a port is written [addr]:port)")]
    Address {
        /// Which field.
        field: &'static str,
        /// What was there.
        value: String,
    },
    /// A port that is not 0..65535.
    #[error("{field} `{value}` is not a port number from 0 to 65535")]
    Port {
        /// Which field.
        field: &'static str,
        /// What was there.
        value: String,
    },
    /// Source and destination of different families.
    #[error("source {saddr} and destination {daddr} are of different families; write an IPv4 client to an IPv6 socket as ::ffff:a.b.c.d on both sides, or both as IPv4")]
    MixedFamilies {
        /// Source.
        saddr: String,
        /// Destination.
        daddr: String,
    },
    /// A listener number field that is not a number.
    #[error("listener `{0}` is not a listener number (0, 1, 2, … in listen order)")]
    Listener(String),
    /// A hex secret that does not parse.
    #[error("`{0}` is not a 32-bit hexadecimal value such as 0x1a2b3c4d")]
    Secret(String),
    /// A comma list that does not parse.
    #[error("`{value}` is not a comma-separated list of {what}")]
    List {
        /// What was there.
        value: String,
        /// What the list should hold.
        what: &'static str,
    },
}

/// Observed counts or latencies that cannot be compared with the
/// scenarios ([`crate::sim::matcher`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ObservedError {
    /// Fewer than two workers, or too many.
    #[error("counts has {0} worker(s); give 2 to 4096, one count per worker")]
    Workers(usize),
    /// Nothing was counted.
    #[error("counts are all 0; give each worker's connections or requests")]
    Empty,
    /// A latency that is not a positive number.
    #[error("{field} is {value}; give a positive number of milliseconds")]
    Latency {
        /// `p50Ms` or `p99Ms`.
        field: &'static str,
        /// What was given.
        value: String,
    },
}
