//! Kernel eras as data.
//!
//! A [`Profile`] says, for one kernel series, everything the model lets an
//! era decide: which hash form each protocol and family uses, how a reuseport
//! group picks a member, which group and program features exist, the lookup
//! and bind rules ([`LookupRules`]), and the notes a reader should see. Every
//! field names the kernel file and the release that fixes it; the era table is
//! `shared/reference/kernel-history.md` §9 and §11, and [`PROFILES`] writes
//! it as rows, each the row before it with what changed. No code outside the
//! table compares release numbers. `tests/suite/eras.rs` prints the table as
//! Markdown and pins it to `tests/eras.md`.
//!
//! A profile describes the newest stable release of its series as read in the
//! reference trees (for example 6.1 is Debian's 6.1.192), so it includes the
//! fixes that stable backported into that series. [`Profile::notes`] lists them.

use serde::{Deserialize, Serialize};

use crate::jhash::JhashForm;
use crate::message::Note;
use crate::release::ProfileError;
pub use crate::release::Release;
use crate::tuple::Proto;

mod basis;
pub mod rules;
mod table;
pub use basis::{BasisQualifier, BasisTree, EraBasis};
use rules::LookupRules;
pub use table::*;

/// How an IPv4 reuseport hash is formed (`inet_ehashfn`, `udp_ehashfn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum V4Form {
    /// `jhash_3words(laddr, faddr, lport << 16 | fport_raw, initval)`.
    /// TCP before 6.15 (`net/ipv4/inet_hashtables.c`), UDP from 3.13 on
    /// (`net/ipv4/udp.c` `udp_ehashfn`).
    Classic,
    /// 3.9 – 3.12 IPv4 UDP: the caller passed `htons(sport)`, swapping the
    /// already network-order port back, so the low half-word is the numeric
    /// source port (`net/ipv4/udp.c` 3.9, `udp4_lib_lookup2`).
    ClassicNumericFport,
    /// `lport + jhash_3words(laddr, faddr, fport_raw, initval)`: TCP from 6.15
    /// (commit 9544d60a2605, `net/ipv4/inet_hashtables.c` 6.15).
    LportPlus,
}

/// How an IPv6 reuseport hash is formed (`inet6_ehashfn`, `udp6_ehashfn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum V6Form {
    /// `jhash_3words(laddr[3], F, lport << 16 | fport_raw, outer)` with
    /// `F = jhash_3words(f0 ^ f1, f2, f3, inner)` (XOR-folded foreign address).
    /// 3.9 – 6.4 (`net/ipv6/inet6_hashtables.c`, `include/net/ipv6.h`).
    ClassicXorFold,
    /// As [`V6Form::ClassicXorFold`] with `F = jhash2(faddr, 4, inner)`: 6.5 on
    /// (commit d11b0df7ddf1, backported to 5.4.y and 5.10.y); UDP keeps it in 7.2.
    ClassicJhash2,
    /// `lport + jhash_3words(laddr[3], F, fport_raw, outer)`, F by jhash2: TCP
    /// 6.15 – 6.18 (commit 9544d60a2605).
    LportPlusJhash2,
    /// The single-pass form found in 7.2.13 `net/ipv6/inet6_hashtables.c`:
    /// nine words, one jhash, keyed by the inner secret, with `net_hash_mix`
    /// XORed into the first local word; `lport` added outside.
    SinglePass,
}

/// How one reuseport group hands out a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Selection {
    /// No group array: a reservoir scan over the listener chain, the first
    /// equal-score socket tested against the hash, later ones against
    /// `next_pseudo_random32` steps of it. TCP 3.9 – 4.5, UDP 3.9 – 4.4
    /// (`net/ipv4/inet_hashtables.c` `__inet_lookup_listener`, `net/ipv4/udp.c`).
    Reservoir,
    /// `socks[reciprocal_scale(hash, num_socks)]` from the `sock_reuseport`
    /// group (`net/core/sock_reuseport.c`), UDP from 4.5, TCP from 4.6.
    Group,
}

/// Which step-over rule the group's select-by-hash applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum GroupScan {
    /// `socks[i]` as it is, even a connected UDP member (4.5 – 5.3).
    Plain,
    /// Step `i` forward past connected (TCP_ESTABLISHED) members, NULL if all
    /// are (commit acdcecc61285, 5.4; `net/core/sock_reuseport.c`).
    SkipConnected,
    /// 6.2 ring scan: also prefer the first member whose `SO_INCOMING_CPU`
    /// equals the receiving CPU when any member set it (commit b261eda84ec1;
    /// stable 6.0.y/6.1.y).
    SkipConnectedPreferCpu,
}

/// Which local address a wildcard-bound group feeds to the hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum WildcardLaddr {
    /// The packet's destination address (TCP 3.9 – 4.20, UDP 4.15 – 4.20).
    Daddr,
    /// Zero when the port slot holds more than 10 sockets (the `hash2` path
    /// passes `htonl(INADDR_ANY)`), the destination otherwise: UDP 3.9 – 4.6
    /// (`net/ipv4/udp.c` `__udp4_lib_lookup`).
    ZeroAboveTen,
    /// Always zero: the second lookup pass runs with `daddr = INADDR_ANY`
    /// (5.0 on, `net/ipv4/inet_hashtables.c` and `net/ipv4/udp.c`).
    Zero,
}

/// The rules of one kernel series, as data: everything an era decides.
///
/// The table below ([`PROFILES`]) writes each row as a difference from the
/// row before it, so a stable backport is one changed field. No code outside
/// the table compares release numbers: what a profile does follows from its
/// fields alone (`tests/suite/eras.rs` checks this with made-up rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    /// The series this profile describes.
    pub release: Release,
    /// Where the rules were read (kernel-history.md §0.1): data, said by
    /// the sentence tables.
    pub basis: EraBasis,
    /// `jhash_3words` body (`include/linux/jhash.h`): old up to 4.0, new from 4.1.
    pub jhash: JhashForm,
    /// Each protocol hashes with its own function and secret in its own
    /// file (`inet_ehashfn` in `net/ipv4/inet_hashtables.c`, `udp_ehashfn`
    /// in `net/ipv4/udp.c`, and the IPv6 pair; 3.13, 65cd8033ff37). Before,
    /// TCP and UDP both called the inline `inet_ehashfn` of
    /// `include/net/inet_sock.h` and `inet6_ehashfn` of
    /// `include/net/inet6_hashtables.h` (3.9 – 3.12).
    pub per_proto_ehashfn: bool,
    /// IPv4 TCP hash (`net/ipv4/inet_hashtables.c` `inet_ehashfn`; lport
    /// outside the hash from 6.15).
    pub tcp4: V4Form,
    /// IPv4 UDP hash (`net/ipv4/udp.c` `udp_ehashfn`; `inet_ehashfn` before 3.13).
    pub udp4: V4Form,
    /// IPv6 TCP hash (`net/ipv6/inet6_hashtables.c` `inet6_ehashfn`; jhash2
    /// of the foreign address from 6.5, lport outside from 6.15).
    pub tcp6: V6Form,
    /// IPv6 UDP hash (`net/ipv6/udp.c` `udp6_ehashfn`; jhash2 from 6.5).
    pub udp6: V6Form,
    /// Before 6.5 `udp6_ehashfn` keyed its outer jhash with the inner secret
    /// plus `net_hash_mix` ("udp6: fix udp6_ehashfn() typo", 2023,
    /// `net/ipv6/udp.c`), so the two IPv6 UDP values are not independent.
    pub udp6_outer_is_inner_plus_mix: bool,
    /// How a TCP group picks: reservoir up to 4.5, group from 4.6
    /// (`net/ipv4/inet_hashtables.c`, `net/core/sock_reuseport.c`).
    pub tcp_selection: Selection,
    /// How a UDP group picks: reservoir up to 4.4, group from 4.5
    /// (`net/ipv4/udp.c`, `net/core/sock_reuseport.c`).
    pub udp_selection: Selection,
    /// The group's select-by-hash rule (`net/core/sock_reuseport.c`: plain
    /// 4.5, skip connected 5.4, CPU ring 6.2).
    pub group_scan: GroupScan,
    /// Local address hashed for a TCP wildcard group (the destination until
    /// 4.20, zero from 5.0; `net/ipv4/inet_hashtables.c`).
    pub tcp_wildcard_laddr: WildcardLaddr,
    /// Local address hashed for a UDP wildcard group (`net/ipv4/udp.c`
    /// `__udp4_lib_lookup`: zero on the hash2 path until 4.6, the
    /// destination until 4.20, zero from 5.0).
    pub udp_wildcard_laddr: WildcardLaddr,
    /// `setsockopt(SO_INCOMING_CPU)` exists (commit 70da268b569d, 4.4,
    /// `net/core/sock.c`).
    pub incoming_cpu_writable: bool,
    /// Shut-down listeners may stay in the group's closed tail for request
    /// migration (`net.ipv4.tcp_migrate_req`, 5.14, commit f9ac779f881c,
    /// `net/core/sock_reuseport.c`).
    pub closed_tail: bool,
    /// What an out-of-range index from a socket-filter program does
    /// (SO_ATTACH_REUSEPORT_CBPF/EBPF; `net/core/sock_reuseport.c`; the
    /// hash fallback from 4.16).
    pub bpf_invalid_index: BpfFallback,
    /// `BPF_PROG_TYPE_SK_REUSEPORT` programs exist (4.19, Martin KaFai Lau's
    /// series; `net/core/filter.c` `bpf_run_sk_reuseport`).
    pub sk_reuseport_prog: bool,
    /// `SO_DETACH_REUSEPORT_BPF` exists ("bpf: net: Add
    /// SO_DETACH_REUSEPORT_BPF", 5.3; `include/uapi/asm-generic/socket.h`,
    /// `net/core/sock.c`).
    pub bpf_detach: bool,
    /// `epoll_ctl` accepts `EPOLLEXCLUSIVE` ("epoll: add EPOLLEXCLUSIVE
    /// flag", 4.5, `fs/eventpoll.c`): not a reuseport rule, but what the
    /// accept-model simulator needs of a kernel.
    pub epoll_exclusive: bool,
    /// The lookup and bind rules (`net/ipv4/inet_hashtables.c`,
    /// `net/ipv4/udp.c`, `net/ipv4/inet_connection_sock.c`); each field
    /// names its release.
    pub lookup: LookupRules,
    /// What a reader should know beside a result of this profile: the
    /// stable backports it carries and how sure its row is. Read through
    /// [`Profile::notes`].
    pub notes: &'static [EraNote],
}

/// What the kernel does when a group's socket-filter program returns an
/// index that is not a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum BpfFallback {
    /// 4.5 – 4.15: `reuseport_select_sock` returns NULL and the caller runs
    /// the reservoir scan over the listener chain.
    Reservoir,
    /// 4.16 on: "no bpf or invalid bpf result: fall back to hash usage".
    Hash,
}

/// A caveat carried by a row of the table; [`Profile::notes`] turns it into
/// a [`Note`] naming the profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum EraNote {
    /// See [`Note::LateStableIpv6Hash`].
    LateStableIpv6Hash,
    /// See [`Note::StableIncomingCpuRing`].
    StableIncomingCpuRing,
    /// See [`Note::MainlineIpv6Hash`].
    MainlineIpv6Hash,
    /// See [`Note::OlderLookupNewPrograms`].
    OlderLookupNewPrograms,
    /// See [`Note::InferredFromNeighbours`].
    InferredFromNeighbours,
    /// See [`Note::SinglePassFirstSeen`].
    SinglePassFirstSeen,
}

impl EraNote {
    /// The note, naming the profile it is read for.
    pub fn note(self, release: Release) -> Note {
        match self {
            EraNote::LateStableIpv6Hash => Note::LateStableIpv6Hash { release },
            EraNote::StableIncomingCpuRing => Note::StableIncomingCpuRing { release },
            EraNote::MainlineIpv6Hash => Note::MainlineIpv6Hash { release },
            EraNote::OlderLookupNewPrograms => Note::OlderLookupNewPrograms { release },
            EraNote::InferredFromNeighbours => Note::InferredFromNeighbours { release },
            EraNote::SinglePassFirstSeen => Note::SinglePassFirstSeen { release },
        }
    }
}

/// The listener table size in the reservoir era and the group's first
/// `socks[]` size (`INIT_SOCKS`, `net/core/sock_reuseport.c`).
pub const INIT_SOCKS: u32 = 128;
/// The largest group: `max_socks` doubles while `2 * max_socks <= U16_MAX`
/// (`reuseport_grow`, `net/core/sock_reuseport.c` 4.6 – 7.2).
pub const MAX_SOCKS: u32 = 32768;
/// UDP takes the `hash2` path when the port slot holds more than this many
/// sockets (`net/ipv4/udp.c` 3.9 – 4.20).
pub const UDP_HASH2_THRESHOLD: u32 = 10;

impl Profile {
    /// The profile of exactly this series (`"6.18"`), or the newest profile not
    /// newer than a `uname -r` string, or the newest of all for `"auto"` given
    /// no release. See [`Profile::resolve`] for `auto`.
    pub fn named(name: &str) -> Result<&'static Profile, ProfileError> {
        let rel = Release::parse_uname(name)?;
        PROFILES
            .iter()
            .find(|p| p.release == rel)
            .ok_or_else(|| ProfileError::Unknown {
                name: name.to_string(),
                known: Self::names(),
            })
    }

    /// Maps a running kernel's release (`uname -r`) to the profile whose rules
    /// it follows: the newest profile at or below it. Errors below 3.9, which
    /// has no SO_REUSEPORT.
    pub fn for_release(uname: &str) -> Result<&'static Profile, ProfileError> {
        let rel = Release::parse_uname(uname)?;
        PROFILES
            .iter()
            .rev()
            .find(|p| p.release <= rel)
            .ok_or(ProfileError::TooOld(rel))
    }

    /// Resolves a `--kernel` argument: `auto` with the running release, a
    /// series name that is a profile, or any release string (`5.19.3`), which
    /// maps to the newest profile at or below it.
    pub fn resolve(arg: &str, running: Option<&str>) -> Result<&'static Profile, ProfileError> {
        if arg == "auto" {
            let uname = running.ok_or(ProfileError::AutoWithoutRelease)?;
            return Self::for_release(uname);
        }
        Self::named(arg).or_else(|_| Self::for_release(arg))
    }

    /// What a reader should know about how [`Self::resolve`] read `arg`: a
    /// release between profiles ([`Note::NearestOlderProfile`]) and a
    /// distribution build, whose vendor may have backported newer rules
    /// ([`Note::VendorKernel`]). Empty for an exact series or a mainline
    /// release string (`6.18`, `6.18.44`, `6.19-rc3`).
    pub fn resolve_notes(arg: &str, running: Option<&str>) -> Vec<Note> {
        let uname = if arg == "auto" {
            running.unwrap_or("")
        } else {
            arg
        };
        let (Ok(p), Ok(asked)) = (Self::resolve(arg, running), Release::parse_uname(uname)) else {
            return Vec::new();
        };
        let mut notes = Vec::new();
        if p.release != asked {
            notes.push(Note::NearestOlderProfile {
                asked,
                release: p.release,
            });
        }
        if is_vendor_build(uname) {
            notes.push(Note::VendorKernel {
                uname: uname.trim().chars().take(64).collect(),
                release: p.release,
            });
        }
        notes
    }

    /// Names of all profiles, oldest first.
    pub fn names() -> String {
        PROFILES
            .iter()
            .map(|p| p.release.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// What this profile includes that its mainline x.y.0 did not, and other
    /// caveats a reader should see beside a result (the row's `notes`).
    pub fn notes(&self) -> Vec<Note> {
        self.notes.iter().map(|n| n.note(self.release)).collect()
    }

    /// The release of the oldest profile in the table for which `has`
    /// holds: when a feature of the table first appears ("TCP groups since
    /// 4.6"), read from the rows rather than written twice.
    pub fn first_with(has: impl Fn(&Profile) -> bool) -> Option<Release> {
        PROFILES.iter().find(|p| has(p)).map(|p| p.release)
    }

    /// How a group of this protocol picks in this profile.
    pub fn selection(&self, proto: Proto) -> Selection {
        match proto {
            Proto::Tcp => self.tcp_selection,
            Proto::Udp => self.udp_selection,
        }
    }
}

/// Whether a `uname -r` string names a distribution build: anything after
/// `MAJOR.MINOR[.PATCH]` other than a mainline `-rcN` (`-513.el8`,
/// `-18-amd64`, `-91-generic`, `+deb13-amd64`).
fn is_vendor_build(uname: &str) -> bool {
    let t = uname.trim();
    let numeric = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let rest = &t[numeric..];
    let rc = rest
        .strip_prefix("-rc")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    !rest.is_empty() && !rc
}

#[cfg(test)]
mod tests {
    use super::*;
    use V4Form::LportPlus;

    #[test]
    fn profiles_are_sorted_and_unique() {
        for w in PROFILES.windows(2) {
            assert!(
                w[0].release < w[1].release,
                "{} before {}",
                w[0].release,
                w[1].release
            );
        }
    }

    #[test]
    fn the_required_series_all_have_profiles() {
        for name in [
            "3.9", "4.4", "4.6", "4.17", "5.4", "5.10", "5.15", "6.1", "6.6", "6.12", "6.18", "7.2",
        ] {
            assert!(Profile::named(name).is_ok(), "missing profile {name}");
        }
    }

    #[test]
    fn uname_strings_map_to_the_newest_profile_not_newer() {
        assert_eq!(
            Profile::for_release("6.18.44-fc-v657").unwrap().release,
            r(6, 18)
        );
        assert_eq!(
            Profile::for_release("5.15.0-91-generic").unwrap().release,
            r(5, 15)
        );
        assert_eq!(Profile::for_release("6.14.2").unwrap().release, r(6, 13));
        assert_eq!(Profile::for_release("6.12.80").unwrap().release, r(6, 12));
        assert_eq!(Profile::for_release("4.19.0").unwrap().release, r(4, 19));
        assert_eq!(Profile::for_release("4.18.5").unwrap().release, r(4, 17));
        assert_eq!(Profile::for_release("8.0.1").unwrap().release, r(7, 2));
        assert!(matches!(
            Profile::for_release("3.8.13"),
            Err(ProfileError::TooOld(_))
        ));
        assert!(matches!(
            Profile::for_release("banana"),
            Err(ProfileError::BadRelease(_))
        ));
    }

    #[test]
    fn resolve_accepts_auto_series_and_full_releases() {
        assert_eq!(
            Profile::resolve("auto", Some("6.1.0-40-amd64"))
                .unwrap()
                .release,
            r(6, 1)
        );
        assert_eq!(Profile::resolve("6.6", None).unwrap().release, r(6, 6));
        assert_eq!(Profile::resolve("5.19.3", None).unwrap().release, r(5, 15));
        assert!(matches!(
            Profile::resolve("auto", None),
            Err(ProfileError::AutoWithoutRelease)
        ));
    }

    #[test]
    fn a_vendor_kernel_between_profiles_gets_both_notes() {
        // RHEL 8: 4.18 has no profile, and el8 is a distribution build.
        let notes = Profile::resolve_notes("4.18.0-513.el8", None);
        let asked = r(4, 18);
        let used = Profile::resolve("4.18.0-513.el8", None).unwrap().release;
        assert!(used < asked);
        assert_eq!(
            notes,
            vec![
                Note::NearestOlderProfile {
                    asked,
                    release: used
                },
                Note::VendorKernel {
                    uname: "4.18.0-513.el8".into(),
                    release: used
                },
            ]
        );
    }

    #[test]
    fn mainline_releases_and_exact_series_get_no_resolution_note() {
        for arg in ["6.18", "6.18.44", "6.1", "6.12-rc3"] {
            let notes = Profile::resolve_notes(arg, None);
            assert!(
                !notes.iter().any(|n| matches!(n, Note::VendorKernel { .. })),
                "{arg}: {notes:?}"
            );
        }
        assert!(Profile::resolve_notes("6.18", None).is_empty());
        // A Debian build is a vendor kernel even on an exact series.
        assert!(matches!(
            Profile::resolve_notes("auto", Some("6.1.0-18-amd64")).as_slice(),
            [Note::VendorKernel { .. }]
        ));
    }

    #[test]
    fn tcp_lport_plus_starts_at_6_15_and_udp_never_changes() {
        for p in PROFILES {
            assert_eq!(p.tcp4 == LportPlus, p.release >= r(6, 15), "{}", p.release);
            assert_ne!(p.udp4, LportPlus, "{}", p.release);
        }
    }
}
