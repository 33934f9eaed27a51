//! The agent's errors. [`enum@Error`] stops a command (exit status 2, message on
//! stderr); [`LineError`] is why one input line got no answer (reported in
//! that line's JSON object while the run goes on). Every message says what
//! was wrong and how to put it right.

use std::io;

use reuseport_model::{ParseError, ProfileError, SetupError};
use thiserror::Error;

/// An error that stops a command.
#[derive(Debug, Error)]
pub enum Error {
    /// `--kernel` names no kernel the model knows.
    #[error("--kernel: {0}")]
    Kernel(#[from] ProfileError),
    /// `--kernel auto` on a system that is not Linux.
    #[error("--kernel auto reads the running kernel's release, but this system is not Linux; name the kernel to model instead, for example --kernel 6.18")]
    AutoNotLinux,
    /// `--kernel auto` and the running release could not be read.
    #[error("--kernel auto could not read the running kernel's release from {path}: {source}; name the kernel to model instead, for example --kernel 6.18")]
    RunningRelease {
        /// The file read.
        path: &'static str,
        /// Why it failed.
        #[source]
        source: io::Error,
    },
    /// The kernel would refuse the group the options describe.
    #[error("the group cannot be built: {0}")]
    Group(#[source] SetupError),
    /// A call the group options stand for, refused by the kernel (the
    /// 32769th member, SO_INCOMING_CPU before 4.4, a second close).
    #[error("the group cannot be built: call {call} of the calls the options stand for, {what}, fails with {errno}: {why}")]
    Refused {
        /// The call's index.
        call: usize,
        /// The call as JSON.
        what: String,
        /// The errno's name.
        errno: String,
        /// The rule, in words.
        why: String,
    },
    /// The calls the group options stand for are beyond what the model
    /// replays (a `connect()` from a wildcard address).
    #[error("the group cannot be built: {0}")]
    Shorthand(String),
    /// A `--incoming-cpu` item that is not `LISTENER=CPU`.
    #[error("`{0}` is not a LISTENER=CPU pair such as 0=2 (the listener's number in listen order, then the CPU given to SO_INCOMING_CPU)")]
    Pin(String),
    /// The `--layout` file cannot be read or replayed.
    #[error("--layout {0}")]
    Layout(String),
    /// The secret-free spread cannot be drawn (no listening member).
    #[error("without --secret the answer is the spread over random boots, but {0}")]
    Spread(#[source] reuseport_model::spread::SpreadError),
    /// Standard input could not be read.
    #[error("cannot read the tuples from standard input: {0}")]
    Input(#[source] io::Error),
    /// Standard output could not be written.
    #[error("cannot write the results to standard output: {0}")]
    Output(#[source] io::Error),
}

impl Error {
    /// Whether this is a write to a closed pipe (`| head -1`), which the
    /// commands treat as success: the reader has all it wanted.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Output(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }
}

/// Why one input line got no answer. The message is the model's own.
#[derive(Debug, Error)]
pub enum LineError {
    /// The line is not a tuple.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The tuple does not reach the group, or lacks a key (an IPv6 tuple
    /// without `--inner-secret`), or the group's eBPF program does not
    /// decide (said by the sentence tables, `crate::messages`).
    #[error("{}", crate::messages::setup_error(.0))]
    Setup(#[from] SetupError),
    /// The line is longer than the bound.
    #[error("the line is {len} bytes long, over the bound of {max} bytes a line (only its start was kept); it starts {start}")]
    TooLong {
        /// Its length.
        len: usize,
        /// The bound.
        max: usize,
        /// Its first bytes, escaped and cut.
        start: String,
    },
    /// A `payload=HEX` field that is not hex.
    #[error("{0}; write the payload as payload=HEX, such as payload=c000000001")]
    Payload(String),
    /// The line is not UTF-8.
    #[error("the line is not UTF-8 text; write tuples as plain ASCII such as `10.0.0.2 40000 10.0.0.1 8080`")]
    NotText,
    /// The line is not a connection of the input's format (ss, netstat,
    /// tcpdump, …).
    #[error(transparent)]
    Paste(#[from] reuseport_model::paste::LineError),
    /// The line is a connection, but which end is the server is not
    /// decided.
    #[error(transparent)]
    Undecided(#[from] reuseport_model::paste::Undecided),
}
