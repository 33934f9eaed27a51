//! `predict`'s output objects, one JSON line each, and how they are written.

use std::fmt::{self, Display};
use std::io::Write;

use reuseport_model::paste::Format;
use reuseport_model::{Release, Tuple};
use serde::{Serialize, Serializer};

use crate::error::{Error, LineError};

/// Serializes any `Display` value as a JSON string, without an
/// intermediate `String`.
pub(super) struct Shown<T>(pub(super) T);

impl<T: Display> Serialize for Shown<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// A hash as `0x` and 8 hex digits.
pub(super) struct HashHex(pub(super) u32);

impl Display for HashHex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:08x}", self.0)
    }
}

#[derive(Serialize)]
pub(super) struct Prediction<'a> {
    pub(super) line: u64,
    pub(super) tuple: Shown<&'a Tuple>,
    pub(super) profile: Shown<Release>,
    pub(super) listener: Option<u32>,
    pub(super) slot: Option<u32>,
    pub(super) hash: Shown<HashHex>,
    /// What the line said that the answer depends on (address translation,
    /// a dropped IPv6 zone), in English (`messages/en.json`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) note: Option<String>,
    /// What decided the server side, when each line is decided on its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) side: Option<&'static str>,
}

#[derive(Serialize)]
pub(super) struct Explained<'a, T: Serialize> {
    pub(super) line: u64,
    #[serde(flatten)]
    pub(super) explain: &'a T,
}

#[derive(Serialize)]
pub(super) struct Failure<'a> {
    pub(super) line: u64,
    /// The input's format, for the formats other than plain pairs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) format: Option<Format>,
    pub(super) error: Shown<&'a LineError>,
}

pub(super) fn emit(out: &mut impl Write, value: &impl Serialize) -> Result<(), Error> {
    serde_json::to_writer(&mut *out, value).map_err(|e| Error::Output(e.into()))?;
    out.write_all(b"\n").map_err(Error::Output)
}

/// One tuple's answer with `--layout`.
#[derive(Serialize)]
pub(super) struct Routed<'a> {
    pub(super) line: u64,
    pub(super) tuple: Shown<&'a Tuple>,
    pub(super) profile: Shown<Release>,
    pub(super) socket: Option<usize>,
    pub(super) group: Option<usize>,
    pub(super) member: Option<u32>,
    /// Why that socket, in English (`messages/en.json`).
    pub(super) reason: String,
    /// What the line said that the answer depends on, in English.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) note: Option<String>,
    /// What decided the server side, when each line is decided on its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) side: Option<&'static str>,
}

/// The first line with `--layout`: each call's answer (`null` for ok), in
/// call order, and where each socket ended up.
#[derive(Serialize)]
pub(super) struct Header {
    pub(super) answers: Vec<Option<Refused>>,
    pub(super) sockets: Vec<SocketResult>,
}

/// One socket's last answers: a [`reuseport_model::lookup::CallResult`]
/// with each refusal's rule put into words.
#[derive(Serialize)]
pub(super) struct SocketResult {
    pub(super) socket: usize,
    /// Set when the kernel drew the port at random from this range (no
    /// `ephemeral` range in the layout): the port is not known.
    pub(super) random_port: Option<RandomPort>,
    pub(super) bind: Option<Refused>,
    pub(super) listen: Option<Refused>,
    pub(super) attach: Option<Refused>,
    pub(super) receiving: bool,
    pub(super) closed: bool,
    pub(super) group: Option<usize>,
    pub(super) member: Option<u32>,
}

/// The range the kernel drew a socket's port from, in this output's
/// snake_case.
#[derive(Serialize)]
pub(super) struct RandomPort {
    pub(super) low: u16,
    pub(super) high: u16,
    pub(super) autobind_reuse: bool,
}

/// A refused call: the errno, the rule and its kernel source in one
/// English sentence (`messages/en.json`), and the conflicting socket.
#[derive(Serialize)]
pub(super) struct Refused {
    pub(super) errno: reuseport_model::message::Errno,
    pub(super) rule: String,
    pub(super) with: Option<usize>,
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
