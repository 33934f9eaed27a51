//! # reuseport-model
//!
//! A bit-exact model of how Linux hands a packet to one member of an
//! SO_REUSEPORT group, for every kernel era from 3.9 to 7.2. Pure and
//! deterministic: no I/O, no clocks, no global state.
//!
//! The map, bottom up: each module uses only modules above it in this
//! list, so the crate reads from the top.
//!
//! 1. **Leaves.** [`release`]: kernel release numbers ([`Release`]);
//!    [`jhash`]: the Jenkins primitives; [`isa`]: which CPU features the
//!    wide search may use; [`echo`]: a user's text shown back safely.
//! 2. **Words as data.** [`error`]: one error enum per concern;
//!    [`message`]: outcomes as data, never sentences (the sentence tables in
//!    `messages/` at the repository root put them into words, one table per
//!    language).
//! 3. **Tuples** ([`mod@tuple`]): the 4-tuple and its plain text lines.
//! 4. **Profile** ([`profile`]): the kernel series decides every rule below;
//!    eras are data ([`Profile`], [`profile::PROFILES`]), the lookup and
//!    bind rules among them ([`profile::rules`]). Beside it, [`paste`]
//!    reads what people paste from their own servers (`ss`, `netstat`,
//!    `conntrack`, tcpdump, `/proc/net/tcp`, CSV) and decides which side is
//!    the server.
//! 5. **Hash** ([`hash`]): the connection hash of the packet's 4-tuple with
//!    the era's exact inputs and byte order, keyed by the per-boot values
//!    ([`Keys`]). **Group** ([`group`]): the `sock_reuseport` array
//!    (`socks[]` of 128, doubling to the 32768 cap, the last member moved
//!    into a closed one's slot, the closed tail of 5.14+).
//! 6. **Explain** ([`explain`]): the record of one packet's selection,
//!    which every view renders.
//! 7. **Selection** ([`reuseport`]): `reciprocal_scale` over `socks[]` with
//!    the era's skips (connected UDP members from 5.4, the SO_INCOMING_CPU
//!    ring from 6.2), or the 3.9–4.5 reservoir scan, and the attached
//!    programs ([`ReuseportGroup`]).
//! 8. **Uses of one group.** [`batch`]: bulk selection for benchmarks and
//!    animations; [`lookup`]: several sockets on a host, the `bind()` and
//!    `listen()` rules, the listener tables and `compute_score`, replayed
//!    from a call log; [`recover`]: the hash secret back from observed
//!    picks, by the 2^32 search.
//! 9. **Spread** ([`spread`]): how evenly many connections fall across a
//!    group.
//! 10. **Over time and in the wild.** [`sim`]: the discrete-event simulator
//!     of workers and accept models; [`diagnose`]: what a snapshot of a real
//!     server says; [`quic`]: QUIC datagrams as a program reads them, and a
//!     QUIC server's reload with and without the connection-ID program.
//!
//! The rules follow `shared/reference/kernel-history.md`; each names its
//! kernel file and release where it is implemented.

pub mod batch;
pub mod diagnose;
pub mod echo;
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
pub mod quic;
pub mod recover;
pub mod release;
pub mod reuseport;
pub mod sim;
pub mod spread;
pub mod tuple;

pub use error::{GroupError, ObservedError, ParseError, ProfileError, SetupError};
pub use explain::Explain;
pub use hash::Keys;
pub use profile::{Profile, Release};
pub use reuseport::{Choice, GroupSpec, ReuseportGroup};
pub use sim::SimError;
pub use tuple::{Proto, Tuple};

/// The model's version (the crate version).
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}
