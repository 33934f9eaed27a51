//! # reuseport-model
//!
//! A bit-exact model of how Linux hands a packet to one member of an
//! SO_REUSEPORT group, for every kernel era from 3.9 to 7.2. Pure and
//! deterministic: no I/O, no clocks, no global state.
//!
//! The stages of one lookup, as the kernel runs them:
//!
//! 1. **Profile** ([`profile`]): the kernel series decides every rule below;
//!    eras are data ([`Profile`], [`profile::PROFILES`]).
//! 2. **Hash** ([`hash`]): the connection hash of the packet's 4-tuple with
//!    the era's exact inputs and byte order, keyed by the per-boot values
//!    ([`Keys`]); built on the Jenkins primitives in [`jhash`].
//! 3. **Group** ([`group`]): the `sock_reuseport` array (`socks[]` of 128,
//!    doubling to the 32768 cap, the last member moved into a closed one's
//!    slot, the closed tail of 5.14+), or before it the listener chain.
//! 4. **Selection** ([`reuseport`]): `reciprocal_scale` over `socks[]` with
//!    the era's skips (connected UDP members from 5.4, the SO_INCOMING_CPU
//!    ring from 6.2), or the 3.9–4.5 reservoir scan.
//! 5. **Explain** ([`explain`]): the record of all of the above for one
//!    packet, which every view renders.
//!
//! Records carry outcomes as data, never sentences ([`message`]): the
//! sentence tables in `messages/` at the repository root put them into words,
//! one table per language.
//!
//! Bulk selection for benchmarks and animations is in [`batch`]; the
//! plain tuple lines are parsed in [`mod@tuple`], and what people paste from
//! their own servers (`ss`, `netstat`, `conntrack`, tcpdump,
//! `/proc/net/tcp`, CSV) in [`paste`], which also decides which side is the
//! server.
//!
//! The rules follow `shared/reference/kernel-history.md`; each names its
//! kernel file and release where it is implemented.

pub mod batch;
pub mod diagnose;
pub mod error;
pub mod explain;
pub mod group;
pub mod hash;
pub mod isa;
pub mod jhash;
pub mod lookup;
pub mod message;
pub mod paste;
pub mod profile;
pub mod recover;
pub mod reuseport;
pub mod sim;
pub mod spread;
pub mod tuple;

pub use error::{GroupError, ObservedError, ParseError, ProfileError, SetupError, SimError};
pub use explain::Explain;
pub use hash::Keys;
pub use profile::{Profile, Release};
pub use reuseport::{Choice, GroupSpec, ReuseportGroup};
pub use tuple::{Proto, Tuple};

/// The model's version (the crate version).
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}
