//! The programs a group can carry (`SO_ATTACH_REUSEPORT_CBPF`/`_EBPF`, 4.5
//! UDP and 4.6 TCP; `BPF_PROG_TYPE_SK_REUSEPORT`, 4.19) and what each
//! returns for a packet (`net/core/sock_reuseport.c`, `net/core/filter.c`).

use super::*;

/// A program attached to the group: `SO_ATTACH_REUSEPORT_CBPF`/`_EBPF`
/// socket filters that return an index into `socks[]` (4.5 UDP, 4.6 TCP), or
/// `BPF_PROG_TYPE_SK_REUSEPORT` programs (4.19+). The model runs the
/// programs the kernel selftests use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Program {
    /// Returns the receiving CPU (`ld [SKF_AD_OFF + SKF_AD_CPU]`), as
    /// tools/testing/selftests/net/reuseport_bpf_cpu.c.
    Cpu,
    /// Returns the first payload word modulo `modulus`, as reuseport_bpf.c.
    PayloadMod {
        /// The divisor.
        modulus: u32,
    },
    /// Returns a fixed index (shows what an out-of-range index does).
    Index {
        /// The index returned.
        index: u32,
    },
    /// SK_REUSEPORT: `bpf_sk_select_reuseport(sockarray, key = payload word)`,
    /// as prog_tests/select_reuseport.c; on a missing entry, SK_PASS without
    /// a selection when `passOnFailure`, else SK_DROP.
    SockArray {
        /// The REUSEPORT_SOCKARRAY map: listener number per key.
        sockarray: Vec<u32>,
        /// Pass (to select-by-hash) rather than drop when the lookup fails.
        pass_on_failure: bool,
    },
    /// SK_REUSEPORT returning SK_PASS without selecting.
    Pass,
    /// SK_REUSEPORT returning SK_DROP.
    Drop,
    /// A classic BPF program of the user's own: the kernel's
    /// `struct sock_filter` array, `[[code, jt, jf, k], ...]`.
    Cbpf {
        /// The instructions.
        #[cfg_attr(feature = "ts", ts(as = "Vec<(u16, u8, u8, u32)>"))]
        insns: Vec<cbpf::Insn>,
    },
    /// An eBPF program of the user's own, read from the ELF object clang
    /// wrote ([`ebpf::read`]), with what user space put in its maps.
    Ebpf {
        /// The program, its instructions relocated.
        program: ebpf::EbpfProgram,
        /// The maps' contents: which socket at which key, and so on.
        #[serde(default)]
        maps: Vec<ebpf::MapFill>,
        /// Maps user space made that the object does not define (an
        /// inner map of an array of maps, say).
        #[serde(default)]
        extra_maps: Vec<ebpf::MapDef>,
        /// The seed of the model's `bpf_get_prandom_u32` draws (the
        /// kernel's per-CPU state cannot be read; the model's draws are
        /// its own, reproducible from this seed).
        #[serde(default)]
        seed: u64,
        /// The listeners' socket cookies as user space read them
        /// (`SO_COOKIE`): `[listener, cookie]` pairs, for a program that
        /// calls `bpf_get_socket_cookie` (5.14+).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        #[cfg_attr(feature = "ts", ts(optional, as = "Option<Vec<(u32, u64)>>"))]
        cookies: Vec<(u32, u64)>,
    },
}

/// What an eBPF program sees of the group and the packet, beyond the
/// packet context.
pub(super) struct EbpfFacts<'a> {
    pub(super) tuple: &'a Tuple,
    pub(super) proto: Proto,
    pub(super) hash: u32,
    pub(super) bind_inany: bool,
    pub(super) in_group: &'a [u32],
    /// Open members in no group (UDP members that left as they connected).
    pub(super) outside_group: Vec<u32>,
    pub(super) members: u32,
    /// `sk_reuseport_md.sk` and `.migrating_sk` exist (5.14).
    pub(super) since_5_14: bool,
    /// A migration's run: the socket that moves.
    pub(super) migrating: Option<ebpf::Migrating>,
}

/// What a program decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ProgramResult {
    Index(u32),
    /// A classic program read what the model does not know.
    Unknown(cbpf::Unknown),
    Selected(u32),
    PassWithoutSelection(Miss),
    Drop(Miss),
}

/// Why an SK_REUSEPORT program selected nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Miss {
    NoPayload,
    NotListening { key: u32, listener: u32 },
    NoEntry { key: u32 },
    SelectedNothing,
    ReturnedDrop,
}

impl Miss {
    /// What the kernel made of it: select-by-hash decides, or the packet
    /// is dropped.
    pub(super) fn outcome(self, pass: bool) -> ProgramOutcome {
        use ProgramOutcome as O;
        match (self, pass) {
            (Miss::NoPayload, true) => O::PassNoPayload,
            (Miss::NoPayload, false) => O::DropNoPayload,
            (Miss::NotListening { key, listener }, true) => O::PassNotListening { key, listener },
            (Miss::NotListening { key, listener }, false) => O::DropNotListening { key, listener },
            (Miss::NoEntry { key }, true) => O::PassNoEntry { key },
            (Miss::NoEntry { key }, false) => O::DropNoEntry { key },
            (Miss::SelectedNothing, _) => O::PassSelectedNothing,
            (Miss::ReturnedDrop, _) => O::DropReturned,
        }
    }
}

impl Program {
    /// An eBPF program with the maps user space filled, the draws' seed 0
    /// and no cookies.
    pub fn ebpf(
        program: ebpf::EbpfProgram,
        maps: Vec<ebpf::MapFill>,
        extra_maps: Vec<ebpf::MapDef>,
    ) -> Program {
        Program::Ebpf {
            program,
            maps,
            extra_maps,
            seed: 0,
            cookies: Vec::new(),
        }
    }

    pub(super) fn is_sk_reuseport(&self) -> bool {
        match self {
            Program::SockArray { .. } | Program::Pass | Program::Drop => true,
            Program::Ebpf { program, .. } => program.kind.is_some_and(|k| k.is_sk_reuseport()),
            _ => false,
        }
    }

    /// Takes listener `l` out of the socket maps user space filled, as
    /// the kernel does when the socket leaves its group: a
    /// REUSEPORT_SOCKARRAY entry goes whenever it leaves
    /// (`reuseport_detach_sock` and `reuseport_stop_listen_sock` call
    /// `bpf_sk_reuseport_detach`, net/core/sock_reuseport.c, which clears
    /// it, kernel/bpf/reuseport_array.c, 4.19+); SOCKMAP and SOCKHASH
    /// entries go only when it is unhashed (`sock_map_unhash`,
    /// `sock_map_close`, net/core/sock_map.c), on close or a listener's
    /// shutdown, not when a connected UDP socket leaves. Nothing puts an
    /// entry back when the socket joins again. Returns whether a
    /// [`Program::SockArray`] lost `l` (its map has no place for a hole;
    /// the group keeps the list).
    pub(super) fn forget(&mut self, l: u32, unhashed: bool) -> bool {
        use ebpf::map_type as t;
        match self {
            Program::SockArray { sockarray, .. } => sockarray.contains(&l),
            Program::Ebpf {
                program,
                maps,
                extra_maps,
                ..
            } => {
                let type_of = |name: &str| {
                    program
                        .maps
                        .iter()
                        .chain(extra_maps.iter())
                        .find(|d| d.name == name && d.map_type != 0)
                        .map(|d| d.map_type)
                };
                for fill in maps.iter_mut() {
                    let clears = match type_of(&fill.map) {
                        Some(t::REUSEPORT_SOCKARRAY) => true,
                        Some(t::SOCKMAP | t::SOCKHASH) => unhashed,
                        _ => false,
                    };
                    if clears {
                        fill.entries.retain(|(_, v)| match v {
                            ebpf::MapValue::Socket { socket } => *socket != l,
                            ebpf::MapValue::Num(n) => *n != l as u64,
                            _ => true,
                        });
                    }
                }
                false
            }
            _ => false,
        }
    }

    /// Loaded with `BPF_SK_REUSEPORT_SELECT_OR_MIGRATE` (5.14): the group
    /// keeps closed listeners and runs it for their requests
    /// (`reuseport_stop_listen_sock`, `reuseport_migrate_sock`,
    /// net/core/sock_reuseport.c).
    pub(super) fn migrates(&self) -> bool {
        matches!(self, Program::Ebpf { program, .. } if program.kind == Some(ebpf::ProgKind::SkReuseportMigrate))
    }

    /// An eBPF program's run on this packet (`None` for the others), or why
    /// it cannot run: its kind is not said, or its maps are not right.
    pub(super) fn ebpf_run(
        &self,
        ctx: &PacketCtx,
        f: &EbpfFacts,
    ) -> Option<Result<ebpf::EbpfRun, SetupError>> {
        let Program::Ebpf {
            program,
            maps,
            extra_maps,
            seed,
            cookies,
        } = self
        else {
            return None;
        };
        if program.kind.is_none() {
            return Some(Err(SetupError::EbpfKindUnsaid {
                section: program.section.clone(),
            }));
        }
        let mut defs = program.maps.clone();
        defs.extend(extra_maps.iter().cloned());
        let state = match ebpf::MapState::build(&defs, maps, f.members) {
            Ok(s) => s,
            Err(why) => return Some(Err(SetupError::EbpfInput { why })),
        };
        let bytes = ctx.payload.as_ref().map(|p| p.bytes()).unwrap_or_default();
        let pkt = ebpf::Packet {
            proto: f.proto,
            saddr: f.tuple.saddr,
            daddr: f.tuple.daddr,
            sport: f.tuple.sport,
            dport: f.tuple.dport,
            payload: &bytes,
            cpu: ctx.cpu,
            hash: f.hash,
            bind_inany: f.bind_inany,
            in_group: f.in_group,
            outside_group: &f.outside_group,
            first: f.in_group.first().copied().unwrap_or(0),
            anc: &ctx.anc,
            seed: *seed,
            since_5_14: f.since_5_14,
            cookies,
            migrating: f.migrating,
        };
        Some(Ok(ebpf::run(program, &state, &pkt)))
    }

    /// Where the kernel runs the program: `bpf_run_sk_reuseport` (4.19+,
    /// called from `reuseport_select_sock`) or `run_bpf_filter` (4.5 UDP,
    /// 4.6 TCP).
    pub(super) fn source(&self, release: Release) -> KernelSource {
        if self.is_sk_reuseport() {
            KernelSource::new("bpf_run_sk_reuseport", "net/core/filter.c", release)
        } else {
            KernelSource::new("run_bpf_filter", "net/core/sock_reuseport.c", release)
        }
    }

    pub(super) fn describe(&self) -> ProgramSummary {
        match self {
            Program::Cpu => ProgramSummary::Cpu,
            Program::PayloadMod { modulus } => ProgramSummary::PayloadMod { modulus: *modulus },
            Program::Index { index } => ProgramSummary::Index { index: *index },
            Program::SockArray {
                sockarray,
                pass_on_failure,
            } => {
                let entries = sockarray.len() as u32;
                if *pass_on_failure {
                    ProgramSummary::SockArrayPass { entries }
                } else {
                    ProgramSummary::SockArrayDrop { entries }
                }
            }
            Program::Pass => ProgramSummary::Pass,
            Program::Drop => ProgramSummary::Drop,
            Program::Cbpf { insns } => ProgramSummary::Cbpf {
                len: insns.len() as u32,
            },
            Program::Ebpf { program, .. } => ProgramSummary::Ebpf {
                name: program.name.clone(),
                section: program.section.clone(),
                sk_reuseport: self.is_sk_reuseport(),
                len: program.insns.len() as u32,
            },
        }
    }

    /// A classic program's run on this packet (`None` for the others).
    pub(super) fn cbpf_run(
        &self,
        ctx: &PacketCtx,
        proto: Proto,
        ipv6: bool,
    ) -> Option<cbpf::CbpfRun> {
        let Program::Cbpf { insns } = self else {
            return None;
        };
        let bytes = ctx.payload.as_ref().map(|p| p.bytes());
        let input = cbpf::Input {
            payload: bytes.as_deref().unwrap_or(&[]),
            proto,
            ipv6,
            cpu: ctx.cpu,
            anc: &ctx.anc,
        };
        Some(cbpf::run(insns, &input))
    }

    /// Runs the program. A classic BPF load past the end of the packet ends
    /// the program with 0, so a payload program on an empty packet returns 0.
    pub(super) fn run(
        &self,
        ctx: &PacketCtx,
        (proto, ipv6): (Proto, bool),
        listening: &[u32],
        is_listening: impl Fn(u32) -> bool,
        gone: &[u32],
        erun: Option<&ebpf::EbpfRun>,
    ) -> ProgramResult {
        let word = ctx.payload.as_ref().and_then(Payload::word);
        match self {
            Program::Cpu => ProgramResult::Index(ctx.cpu),
            Program::PayloadMod { modulus } => {
                ProgramResult::Index(word.map_or(0, |w| w % modulus))
            }
            Program::Cbpf { .. } => {
                let run = self.cbpf_run(ctx, proto, ipv6).expect("a classic program");
                match (run.value(), run.end) {
                    (Some(v), _) => ProgramResult::Index(v),
                    (None, cbpf::End::Unknown { what, .. }) => ProgramResult::Unknown(what),
                    (None, _) => unreachable!("only an unknown end has no value"),
                }
            }
            Program::Index { index } => ProgramResult::Index(*index),
            Program::Ebpf { .. } => {
                let run = erun.expect("an eBPF program's run");
                let Some(v) = run.value() else {
                    // The entry points refuse such a packet first (`decided`).
                    return ProgramResult::Drop(Miss::ReturnedDrop);
                };
                if !self.is_sk_reuseport() {
                    // `run_bpf_filter` takes the u32 the program returns
                    // (net/core/sock_reuseport.c 4.5+).
                    return ProgramResult::Index(v as u32);
                }
                // bpf_run_sk_reuseport (net/core/filter.c 4.19+): SK_PASS
                // (1) returns the selected socket, or NULL and the hash
                // decides; anything else is ERR_PTR(-ECONNREFUSED), a drop.
                match (v as u32, run.selected) {
                    (1, Some(l)) => ProgramResult::Selected(l),
                    (1, None) => ProgramResult::PassWithoutSelection(Miss::SelectedNothing),
                    _ => ProgramResult::Drop(Miss::ReturnedDrop),
                }
            }
            Program::SockArray {
                sockarray,
                pass_on_failure,
            } => {
                let failed = |why: Miss| {
                    if *pass_on_failure {
                        ProgramResult::PassWithoutSelection(why)
                    } else {
                        ProgramResult::Drop(why)
                    }
                };
                let Some(key) = word else {
                    return failed(Miss::NoPayload);
                };
                match sockarray.get(key as usize) {
                    // Its entry went as it left the group, and listening
                    // again does not restore it: the array holds NULL
                    // there, -ENOENT (`bpf_sk_reuseport_detach`,
                    // kernel/bpf/reuseport_array.c 4.19+).
                    Some(&l) if gone.contains(&l) => failed(Miss::NoEntry { key }),
                    Some(&l) if listening.contains(&l) && is_listening(l) => {
                        ProgramResult::Selected(l)
                    }
                    Some(&l) => failed(Miss::NotListening { key, listener: l }),
                    None => failed(Miss::NoEntry { key }),
                }
            }
            Program::Pass => ProgramResult::PassWithoutSelection(Miss::SelectedNothing),
            Program::Drop => ProgramResult::Drop(Miss::ReturnedDrop),
        }
    }
}
