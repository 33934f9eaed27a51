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

use crate::release::Release;

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
    /// `EBADF`: the fd was closed.
    Ebadf,
    /// `EOPNOTSUPP`: the socket type has no such call (`listen()` on UDP).
    Eopnotsupp,
    /// `ENOPROTOOPT`: the option is not of this socket's family.
    Enoprotoopt,
    /// `EISCONN`: the socket is already connected or listening.
    Eisconn,
    /// `ENOTCONN`: `shutdown()` of a socket that is not connected.
    Enotconn,
    /// `ENETUNREACH`: an IPV6_V6ONLY socket cannot reach an IPv4 peer.
    Enetunreach,
    /// `ENODEV`: SO_BINDTODEVICE names no device of the namespace.
    Enodev,
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
    /// Both set SO_REUSEPORT and their owners differ, and the other is a
    /// TCP socket closed while connected: for the calls right after its
    /// `close()` it is still a full socket in FIN_WAIT1 (its FIN not yet
    /// acknowledged), so its UID counts; the timewait socket it becomes
    /// once the peer's ACK arrives (milliseconds later, at once with
    /// SO_LINGER) would not refuse.
    ClosingUidsDiffer {
        /// This socket's UID.
        uid: u32,
        /// The closed socket's UID.
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
    /// A classic program of 0 or more than 4096 instructions.
    CbpfLength {
        /// Its length.
        len: u32,
    },
    /// An opcode the kernel's classic table does not have.
    CbpfOpcode {
        /// The instruction.
        pc: u32,
        /// The opcode.
        code: u16,
    },
    /// Division or modulo by the constant 0.
    CbpfDivZero {
        /// The instruction.
        pc: u32,
    },
    /// A shift by a constant of 32 or more.
    CbpfShift {
        /// The instruction.
        pc: u32,
        /// The shift.
        k: u32,
    },
    /// A scratch cell past `M[15]`.
    CbpfMemCell {
        /// The instruction.
        pc: u32,
        /// The cell.
        k: u32,
    },
    /// A jump past the last instruction.
    CbpfJumpOut {
        /// The instruction.
        pc: u32,
    },
    /// An offset in the ancillary range that names no ancillary field.
    CbpfAncillary {
        /// The instruction.
        pc: u32,
        /// The offset.
        k: u32,
    },
    /// The last instruction is not a return.
    CbpfNoRet,
    /// A scratch cell read before it is written on some path.
    CbpfMemUnset {
        /// The instruction.
        pc: u32,
        /// The cell.
        k: u32,
    },
    /// A call on an fd already closed.
    FdClosed,
    /// `bind()` of a socket that already has a port.
    AlreadyBound,
    /// `listen()` on a UDP socket.
    UdpCannotListen,
    /// `listen()` on a connected TCP socket.
    ListenConnected,
    /// `connect()` on a TCP listener.
    ConnectListener,
    /// `connect()` of an IPV6_V6ONLY socket to a v4-mapped peer.
    V6onlyMappedPeer,
    /// `connect()` on a TCP socket already connected.
    AlreadyConnected,
    /// `shutdown()` of a socket neither listening nor connected.
    NotConnected,
    /// IPV6_V6ONLY after `bind()`.
    V6onlyAfterBind,
    /// IPV6_V6ONLY on an AF_INET socket.
    V6onlyOnInet,
    /// SO_BINDTODEVICE with a name no device of the namespace has.
    UnknownDevice,
    /// SO_INCOMING_CPU set before 4.4, when it could only be read.
    IncomingCpuReadOnly,
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

/// What a program attached to a group does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ProgramSummary {
    /// A socket filter returning the receiving CPU (`SKF_AD_CPU`).
    Cpu,
    /// A socket filter returning the first payload word modulo `modulus`.
    PayloadMod {
        /// The divisor.
        modulus: u32,
    },
    /// A socket filter returning a fixed index.
    Index {
        /// The index.
        index: u32,
    },
    /// SK_REUSEPORT selecting `sockarray[payload word]`, passing on failure.
    SockArrayPass {
        /// Entries in the map.
        entries: u32,
    },
    /// SK_REUSEPORT selecting `sockarray[payload word]`, dropping on failure.
    SockArrayDrop {
        /// Entries in the map.
        entries: u32,
    },
    /// SK_REUSEPORT returning SK_PASS without selecting.
    Pass,
    /// SK_REUSEPORT returning SK_DROP.
    Drop,
    /// A classic BPF program of the user's own.
    Cbpf {
        /// Its instructions.
        len: u32,
    },
    /// An eBPF program of the user's own.
    Ebpf {
        /// The function's name.
        name: String,
        /// Its ELF section.
        section: String,
        /// An SK_REUSEPORT program (else a socket filter returning an index).
        sk_reuseport: bool,
        /// Its instructions.
        len: u32,
    },
}

/// What a program returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ProgramReturn {
    /// A socket filter's index into `socks[]`.
    Index {
        /// The index.
        index: u32,
    },
    /// SK_PASS with a socket selected.
    Selected,
    /// SK_PASS without a selection.
    PassWithoutSelection,
    /// SK_DROP.
    Drop,
}

/// What the kernel made of a program's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ProgramOutcome {
    /// An index below `num_socks`: that slot's member.
    InRange {
        /// The index.
        index: u32,
        /// `num_socks`.
        num_socks: u32,
    },
    /// An invalid index: select-by-hash decides (4.16+).
    InvalidThenHash {
        /// The index.
        index: u32,
        /// `num_socks`.
        num_socks: u32,
    },
    /// An invalid index: the group returns NULL to the lookup (before 4.16).
    InvalidReturnsNull {
        /// The index.
        index: u32,
        /// `num_socks`.
        num_socks: u32,
    },
    /// An invalid index: NULL, and the lookup's reservoir scan decides
    /// (before 4.16).
    InvalidThenReservoir {
        /// The index.
        index: u32,
        /// `num_socks`.
        num_socks: u32,
    },
    /// `bpf_sk_select_reuseport` chose this listener.
    Selected {
        /// The listener.
        listener: u32,
    },
    /// No payload to read the key from; select-by-hash decides.
    PassNoPayload,
    /// The map entry is not a listening member; select-by-hash decides.
    PassNotListening {
        /// The key.
        key: u32,
        /// The listener the entry holds.
        listener: u32,
    },
    /// No map entry for the key (`-ENOENT`); select-by-hash decides.
    PassNoEntry {
        /// The key.
        key: u32,
    },
    /// The program selected nothing; select-by-hash decides.
    PassSelectedNothing,
    /// No payload to read the key from: dropped.
    DropNoPayload,
    /// The map entry is not a listening member: dropped.
    DropNotListening {
        /// The key.
        key: u32,
        /// The listener the entry holds.
        listener: u32,
    },
    /// No map entry for the key (`-ENOENT`): dropped.
    DropNoEntry {
        /// The key.
        key: u32,
    },
    /// The program returned SK_DROP.
    DropReturned,
}

/// What happened at one slot visited by select-by-hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum RingOutcome {
    /// `socks[reciprocal_scale(hash, num_socks)]`, no skips (4.5 – 5.3).
    Plain,
    /// A connected member (TCP_ESTABLISHED): skipped.
    ConnectedSkipped,
    /// Not connected: returned.
    NotConnected,
    /// Not connected, and no member set SO_INCOMING_CPU: returned (6.2+).
    NotConnectedNoIncomingCpu,
    /// SO_INCOMING_CPU equals the receiving CPU: returned.
    CpuMatch {
        /// The CPU.
        cpu: u32,
    },
    /// SO_INCOMING_CPU unset: not this CPU's member.
    CpuUnset {
        /// The receiving CPU.
        cpu: u32,
    },
    /// SO_INCOMING_CPU unset, and the first valid member: remembered.
    CpuUnsetFirst {
        /// The receiving CPU.
        cpu: u32,
    },
    /// SO_INCOMING_CPU set to another CPU.
    CpuOther {
        /// The member's SO_INCOMING_CPU.
        incoming_cpu: u32,
        /// The receiving CPU.
        cpu: u32,
    },
    /// SO_INCOMING_CPU set to another CPU, and the first valid member:
    /// remembered.
    CpuOtherFirst {
        /// The member's SO_INCOMING_CPU.
        incoming_cpu: u32,
        /// The receiving CPU.
        cpu: u32,
    },
    /// No member on this CPU: the first valid member is returned.
    FirstValid,
}

/// What happened to one listener during a reservoir scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ReservoirOutcome {
    /// Connected to another peer: no match (score -1).
    Connected,
    /// An equal score, and `reciprocal_scale(phash, matches)` is 0: taken.
    EqualTaken {
        /// The value tested, hex.
        phash: String,
        /// Matches so far.
        matches: u32,
    },
    /// An equal score, and the current pick stays.
    EqualKept {
        /// The value tested, hex.
        phash: String,
        /// Matches so far.
        matches: u32,
        /// `reciprocal_scale(phash, matches)`.
        scaled: u32,
    },
    /// The first match: taken, and the reservoir starts with the hash.
    FirstMatch {
        /// Its score.
        score: i32,
    },
    /// A higher score: taken, and the reservoir restarts with the hash.
    Beats {
        /// Its score.
        score: i32,
        /// The best score before it.
        before: i32,
    },
    /// A lower score: ignored.
    Below {
        /// Its score.
        score: i32,
        /// The best score so far.
        best: i32,
    },
}

/// A fallback the kernel took when the group returned no member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Fallback {
    /// The reservoir scan found no listening member that matches.
    NoListeningMatch,
    /// An invalid program index before 4.16: NULL, and the caller's
    /// reservoir scan goes on.
    InvalidIndexNull,
    /// SK_DROP: `ERR_PTR(-ECONNREFUSED)`, the packet is dropped.
    SkDrop,
    /// The group has no listening member.
    NoListeningMember,
    /// Every member is connected: NULL, and the lookup keeps scanning.
    AllConnected,
}

/// A caveat or simplification that applies to an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Note {
    /// 5.4 and 5.10 as in their late stable releases: the IPv6 jhash2
    /// (d11b0df7ddf1) and the udp6 secret fix are backports.
    LateStableIpv6Hash {
        /// The profile.
        release: Release,
    },
    /// 6.1 as in its stable releases: the SO_INCOMING_CPU ring scan
    /// (b261eda84ec1) and the IPv6 jhash2 change are backports.
    StableIncomingCpuRing {
        /// The profile.
        release: Release,
    },
    /// 5.15: no tree read; the IPv6 hash form follows mainline 5.15.0.
    MainlineIpv6Hash {
        /// The profile.
        release: Release,
    },
    /// 4.19: the 4.16 – 4.18 lookup with 4.19's SK_REUSEPORT programs.
    OlderLookupNewPrograms {
        /// The profile.
        release: Release,
    },
    /// 4.5: inferred from the commit messages and the 4.4 and 4.6 trees.
    InferredFromNeighbours {
        /// The profile.
        release: Release,
    },
    /// 7.2: the single-pass IPv6 TCP hash, first seen in 7.2.13.
    SinglePassFirstSeen {
        /// The profile.
        release: Release,
    },
    /// Connected members are treated as not matching (reservoir era).
    ConnectedMembersUnmatched,
    /// The port-slot count assumes no other UDP socket on the slot.
    PortSlotAssumedAlone,
    /// Each table is taken to hold only this port's sockets.
    TablesHoldOnlyThisPort,
    /// 10 or fewer listeners on the port: the port list is walked (4.16 – 4.20).
    PortListWalked {
        /// Listeners on the port.
        count: u32,
    },
    /// More than 10 listeners on the port: lhash2 is walked (4.16 – 4.20).
    Lhash2Walked {
        /// Listeners on the port.
        count: u32,
    },
    /// More than 10 sockets on the UDP port slot: hash2 is walked.
    Hash2Walked {
        /// Sockets on the slot.
        count: u32,
    },
    /// The release asked for has no profile of its own: the newest profile
    /// below it applies ([`crate::Profile::resolve`]).
    NearestOlderProfile {
        /// The release asked for.
        asked: Release,
        /// The profile used.
        release: Release,
    },
    /// A distribution build (`4.18.0-513.el8`, `6.1.0-18-amd64`): vendors
    /// backport mainline changes, so its rules may be those of a newer
    /// release than its number says.
    VendorKernel {
        /// The `uname -r` string given.
        uname: String,
        /// The profile used.
        release: Release,
    },
}

/// Why a lookup answered as it did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum LookupReason {
    /// TCP: no listener matches, and the SYN is answered with RST.
    NoListener,
    /// UDP: no socket matches, and the datagram is dropped with ICMP port
    /// unreachable.
    NoSocket,
    /// BPF sk_lookup dropped the packet.
    SkLookupDropped,
    /// BPF sk_lookup assigned a socket.
    SkLookupAssigned {
        /// The socket.
        socket: usize,
    },
    /// BPF sk_lookup assigned a socket, and its reuseport group picked.
    SkLookupGroupPicked {
        /// The socket assigned.
        assigned: usize,
        /// The socket the group picked.
        socket: usize,
    },
    /// The first socket with the best score so far belongs to a reuseport
    /// group, which picked.
    GroupPicked {
        /// The socket with the best score.
        first: usize,
        /// The socket the group picked.
        socket: usize,
    },
    /// The group's SK_REUSEPORT program returned SK_DROP.
    GroupProgramDropped,
    /// The socket with the best score in the table.
    BestScore {
        /// The socket.
        socket: usize,
    },
}

/// What a BPF `sk_lookup` program did (5.9+).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum SkLookupOutcome {
    /// SK_PASS without assigning: the tables decide.
    Passed,
    /// SK_DROP.
    Dropped,
    /// It assigned a socket that cannot take this packet: the tables decide.
    Unusable {
        /// The socket.
        socket: usize,
    },
    /// It assigned a socket.
    Assigned {
        /// The socket.
        socket: usize,
        /// Where the kernel runs the program.
        source: KernelSource,
    },
    /// It assigned a socket with `BPF_SK_LOOKUP_F_NO_REUSEPORT`.
    AssignedNoReuseport {
        /// The socket.
        socket: usize,
        /// Where the kernel runs the program.
        source: KernelSource,
    },
}

/// A listener table (one bucket) a lookup walks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum TableName {
    /// TCP `lhash2`, keyed by address and port.
    Lhash2 {
        /// The bucket's address.
        addr: String,
        /// The port.
        port: u16,
    },
    /// UDP `hash2`, keyed by address and port.
    UdpHash2 {
        /// The bucket's address.
        addr: String,
        /// The port.
        port: u16,
    },
    /// TCP `listening_hash`, port-keyed, 32 buckets (up to 4.20).
    ListeningHash {
        /// The port.
        port: u16,
    },
    /// The UDP port slot (up to 4.20).
    UdpPortSlot {
        /// The port.
        port: u16,
    },
}

/// Why the hash sees the local address it does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum LaddrReason {
    /// The group is bound to a specific address: the exact-address pass
    /// hashes the destination.
    Specific {
        /// The group's address.
        bind: String,
    },
    /// A wildcard group from 5.0: the second lookup pass runs with
    /// `daddr = INADDR_ANY`, so the hash sees 0.
    WildcardZero,
    /// A wildcard group before 5.0: the lookup hashes the real destination.
    WildcardDaddr,
    /// A wildcard UDP group with more than 10 sockets on the port slot
    /// (3.9 – 4.6): the hash2 path's wildcard pass hashes `INADDR_ANY`.
    PortSlotOverTen {
        /// Sockets on the slot.
        count: u32,
    },
    /// A wildcard UDP group with 10 or fewer sockets on the port slot
    /// (3.9 – 4.6): the port-slot scan hashes the real destination.
    PortSlotTenOrFewer {
        /// Sockets on the slot.
        count: u32,
    },
    /// In a full lookup: this socket has the best score so far and
    /// SO_REUSEPORT, so its group picks with the pass's address.
    LookupPass {
        /// The socket.
        socket: usize,
        /// Its score.
        score: i32,
    },
    /// BPF sk_lookup assigned a reuseport socket: its group re-selects
    /// with the real destination address.
    SkLookupReselect,
}

/// What one Jenkins hash call computes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum JhashRole {
    /// The whole hash (IPv4).
    WholeHash,
    /// The whole hash in one pass, `net_hash_mix` XORed into the first word
    /// (IPv6 TCP, 7.2).
    WholeHashSinglePass {
        /// `net_hash_mix`, hex.
        net_hash_mix: String,
    },
    /// The foreign address, XOR-folded (`__ipv6_addr_jhash`).
    ForeignAddressXorFolded,
    /// The foreign address, all 128 bits (`__ipv6_addr_jhash`, 6.5+).
    ForeignAddressJhash2,
    /// The whole IPv6 hash: the last word of the local address, the foreign
    /// hash, the ports.
    WholeHashV6,
}

/// Why a closed listener's pending request is reset instead of migrated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ResetReason {
    /// Request migration arrived in 5.14, for TCP only.
    NoMigration {
        /// The profile.
        release: Release,
    },
    /// `net.ipv4.tcp_migrate_req` is 0.
    MigrateReqOff,
    /// No listening member is left to take the request.
    NoListenerLeft,
    /// The group's SELECT_OR_MIGRATE program returned `SK_DROP`
    /// (`bpf_run_sk_reuseport` gives `ERR_PTR(-ECONNREFUSED)`, and
    /// `reuseport_migrate_sock` does not fall back to the hash).
    ProgramDropped,
}
