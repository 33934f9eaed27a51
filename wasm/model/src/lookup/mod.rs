//! The whole listener lookup: several sockets on a host, the `bind()` and
//! `listen()` rules that decide which of them may share a port, the
//! reuseport groups they form, the tables a packet's lookup walks, every
//! candidate's `compute_score`, and which socket wins (kernel-history.md
//! §4 – §7).
//!
//! A [`CallLog`] lists a program's socket calls. [`Host::run`] replays them
//! ([`Host::apply`] steps one) and records each one's answer;
//! [`Host::lookup`] answers a packet with a [`LookupExplain`]. A layout
//! file that lists sockets instead is converted into calls by its reader
//! ([`layout_file`]).
//!
//! Simplifications, each stated in the notes of an answer where it applies:
//! the hash tables are taken to hold only the sockets of the packet's port
//! (collisions with other ports depend on `net_hash_mix` and table sizes,
//! kernel-history.md §12.9); one network namespace; devices are names.
//!
//! The files, bottom up: [`types`] (the records), `bucket` (the bind
//! bucket and its fast path), `host` (the state and its upkeep), `bind`
//! (the conflict rules), `replay` (the calls), `score` (`compute_score`)
//! and `walk` (the lookup).

mod bind;
mod bucket;
pub mod calls;
mod host;
pub mod layout_file;
mod replay;
mod score;
pub mod types;
mod walk;

pub use crate::message::Refusal;
pub use crate::profile::rules;
pub use calls::{Call, CallLog, SockOpt, MAX_CALLS, MAX_SOCKETS};
pub use host::Host;
pub use layout_file::TIME_WAIT_LINGER;
pub use rules::Ephemeral;
pub use types::{
    Answer, CallResult, Candidate, Family, GroupPick, Layout, LayoutError, LookupExplain, Packet,
    SkLookup, SockState, SocketSpec, TableWalk,
};
