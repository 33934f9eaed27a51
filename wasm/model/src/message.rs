//! What the model says happened, as data: tagged outcomes with the numbers
//! and kernel identifiers they need, never sentences.
//!
//! Every type here is put into words by the sentence tables at the
//! repository root, one per language (`messages/en.json`,
//! `messages/zh-CN.json`): a tagged enum `FooBar` with the tag `kind` is
//! said by the template `"foo_bar.<kind>"`, a plain struct `FooBar` by
//! `"foo_bar"`, and a template's `{placeholders}` are the fields of its tag.
//! The site renders them in the page's language (`src/model/messages.ts`),
//! the agent in English. The TypeScript declarations of these types go to
//! `src/model/generated/message/`, which is how the tables' test knows
//! every tag there is.
//!
//! Kernel function names, file names and releases are data: they stay in
//! fields ([`KernelSource`]), not in the templates.

use serde::{Deserialize, Serialize};

use crate::profile::Release;

/// An errno a refused call returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(rename_all = "UPPERCASE")]
pub enum Errno {
    /// `EADDRINUSE`: the address and port are taken.
    Eaddrinuse,
    /// `EINVAL`: the call or its argument is invalid.
    Einval,
    /// `ENOMEM`: the kernel could not allocate (a full reuseport group).
    Enomem,
}

/// Where in the kernel sources a rule is applied: the function, its file,
/// and the release whose tree the model follows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
pub struct KernelSource {
    /// The function (`inet_bind_conflict`).
    pub func: String,
    /// The file, relative to the kernel tree (`net/ipv4/inet_connection_sock.c`).
    pub file: String,
    /// The release (the profile's).
    pub release: Release,
}

impl KernelSource {
    /// A source in the given release.
    pub fn new(func: &str, file: &str, release: Release) -> Self {
        KernelSource {
            func: func.into(),
            file: file.into(),
            release,
        }
    }
}

/// A refused call: the kernel's answer. Said by the template `"refusal"`,
/// whose `{rule}` and `{source}` are this record's rule and source, each
/// said by its own template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(rename_all = "camelCase")]
pub struct Refusal {
    /// What the call returns.
    pub errno: Errno,
    /// The rule that decided.
    pub rule: RefusalRule,
    /// Where the kernel applies it: function, file and release.
    pub source: KernelSource,
    /// The socket it conflicts with, if any.
    pub with: Option<usize>,
}

/// Why the kernel refused a `bind()`, `listen()` or program attach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum RefusalRule {
    /// An IPV6_V6ONLY socket binding a v4-mapped address.
    V6onlyMapped,
    /// A socket that owns a reuseport group (its program attached before
    /// `bind()`) cannot use the SO_REUSEPORT exemption (4.6+; reuseport_bpf.c
    /// `test_extra_filter`).
    OwnsGroupBeforeBind,
    /// Both set SO_REUSEPORT, but their owners differ.
    UidsDiffer {
        /// This socket's UID.
        uid: u32,
        /// The other socket's UID.
        other_uid: u32,
    },
    /// Both set SO_REUSEADDR, but the other is (or this one becomes) a TCP
    /// listener, which that exemption never covers.
    ReuseaddrListener,
    /// The addresses overlap, and the two do not both set SO_REUSEPORT nor
    /// both SO_REUSEADDR.
    NoSharedOption,
    /// The addresses overlap.
    Overlap,
    /// Port 0 and no ephemeral range in the layout to draw from.
    NoEphemeralRange,
    /// Every port of the ephemeral range is taken for this socket.
    EphemeralExhausted {
        /// Lowest port of `ip_local_port_range`.
        low: u16,
        /// Highest port.
        high: u16,
    },
    /// Every port is taken even with `ip_autobind_reuse`'s second pass.
    EphemeralExhaustedAutobindReuse {
        /// Lowest port of `ip_local_port_range`.
        low: u16,
        /// Highest port.
        high: u16,
    },
    /// The group holds 32768 members: `socks[]` cannot grow past `U16_MAX`.
    GroupFull,
    /// SO_ATTACH_REUSEPORT_CBPF/EBPF on a socket without SO_REUSEPORT.
    ProgramNeedsReuseport,
    /// An SK_REUSEPORT program before 4.19.
    NoSkReuseportProgram,
    /// A program on a kernel whose protocol has no reuseport groups yet
    /// (TCP before 4.6, UDP before 4.5).
    NoGroups {
        /// The release that brought groups to this protocol.
        since: Release,
    },
    /// A classic BPF program dividing by the constant 0.
    PayloadModZero,
}

/// What happened to one socket during a lookup's table scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum CandidateOutcome {
    /// The best score so far and SO_REUSEPORT: its group chose a socket, and
    /// the lookup returns it.
    GroupChose {
        /// The socket the group chose.
        chosen: usize,
    },
    /// The group chose a socket, but has connected members (UDP, 5.4+), so
    /// the scan goes on.
    GroupChoseScanGoesOn {
        /// The socket the group chose.
        chosen: usize,
    },
    /// The group's program dropped the packet.
    GroupDropped,
    /// The group returned no socket, so this socket is kept.
    GroupReturnedNone,
    /// A score above the best so far: kept.
    Kept,
    /// An equal score, and the reservoir takes this socket.
    ReservoirTaken {
        /// The value tested, hex.
        phash: String,
        /// Matches so far.
        matches: u32,
    },
    /// An equal score, and the reservoir keeps the current pick.
    ReservoirNotTaken {
        /// The value tested, hex.
        phash: String,
        /// Matches so far.
        matches: u32,
        /// `reciprocal_scale(phash, matches)`, not 0.
        scaled: u32,
    },
    /// A score that does not beat the best so far.
    DoesNotBeat {
        /// The best score so far.
        best: i32,
    },
    /// The socket does not match the packet.
    NoMatch,
}
