//! The packet side of a group: which local address is hashed, the hash,
//! and the member the group picks for a packet in each era (select by hash,
//! the CPU ring scan, the reservoir scan, a program, request migration;
//! `net/core/sock_reuseport.c`, kernel-history.md §3 and §4).

use super::*;
use crate::explain::LineAnswer;

/// Where a closed listener's pending request goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Migration {
    /// To this listening member.
    To {
        /// The listener.
        listener: u32,
        /// Its slot.
        slot: u32,
        /// The request's hash.
        hash: u32,
        /// A SELECT_OR_MIGRATE program chose it (else select by hash did).
        by_program: bool,
    },
    /// The request is reset.
    Reset {
        /// Why.
        reason: ResetReason,
    },
}

/// A migration with the program's run, when a SELECT_OR_MIGRATE program ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct MigrationRun {
    /// Where the request went.
    pub migration: Migration,
    /// The program's run (instructions, helper calls, end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub ebpf_run: Option<ebpf::EbpfRun>,
}

/// What a group answers inside a full lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupAnswer {
    /// This member (join-order number).
    Member(u32),
    /// No socket: every member connected, or an invalid index before 4.16.
    Null,
    /// An SK_REUSEPORT program dropped the packet.
    Drop,
}

/// The internal result of a selection.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    listener: Option<u32>,
    slot: Option<u32>,
    pick: Option<Pick>,
    fallback: Option<Fallback>,
    notes: Vec<Note>,
}

impl ReuseportGroup {
    /// Checks that a packet is addressed to this group, and returns it with
    /// any `::ffff:` addresses made IPv4.
    pub fn accepts(&self, t: &Tuple) -> Result<Tuple, SetupError> {
        let t = Tuple {
            saddr: canonical(t.saddr),
            daddr: canonical(t.daddr),
            ..*t
        };
        let reaches = t.dport == self.port
            && match (t.daddr, self.bind) {
                (IpAddr::V4(d), IpAddr::V4(b)) => b.is_unspecified() || b == d,
                (IpAddr::V4(d), IpAddr::V6(b)) => {
                    !self.v6only && (b.is_unspecified() || b.to_ipv4_mapped() == Some(d))
                }
                (IpAddr::V6(d), IpAddr::V6(b)) => b.is_unspecified() || b == d,
                (IpAddr::V6(_), IpAddr::V4(_)) => false,
            };
        if reaches {
            Ok(t)
        } else {
            Err(SetupError::NotForThisGroup {
                daddr: t.daddr.to_string(),
                dport: t.dport,
                bind: self.bind.to_string(),
                port: self.port,
                consequence: match self.proto {
                    Proto::Tcp => "a SYN is answered with RST",
                    Proto::Udp => "a datagram is dropped with ICMP port unreachable",
                },
            })
        }
    }

    /// Refuses a packet whose answer the model cannot give: a payload
    /// longer than a datagram, or a classic program that reads a value the
    /// packet context does not hold (the error names it).
    fn decided(&self, t: &Tuple, ctx: &PacketCtx) -> Result<(), SetupError> {
        if let Some(p) = &ctx.payload {
            let len = p.bytes().len();
            if len > MAX_PAYLOAD {
                return Err(SetupError::PayloadTooLong {
                    len,
                    max: MAX_PAYLOAD,
                });
            }
        }
        if self.selection() == Selection::Reservoir {
            return Ok(());
        }
        let Some(program) = &self.program else {
            return Ok(());
        };
        if let Layout::Array(a) = &self.layout {
            let h = self.hash_of(t);
            match program.ebpf_run(ctx, &self.ebpf_facts(t, h, a)) {
                Some(Err(e)) => return Err(e),
                Some(Ok(run)) => match run.end {
                    ebpf::EbpfEnd::Returned { .. } => {}
                    end => return Err(SetupError::EbpfUndecided { end }),
                },
                None => {}
            }
        }
        match program
            .cbpf_run(ctx, self.proto, t.saddr.is_ipv6())
            .map(|r| r.end)
        {
            Some(cbpf::End::Unknown { pc, what }) => {
                Err(SetupError::ProgramReadsUnknown { pc, what })
            }
            _ => Ok(()),
        }
    }

    /// What an eBPF program sees of this group.
    fn ebpf_facts<'a>(&self, t: &'a Tuple, h: u32, a: &'a SockArray) -> EbpfFacts<'a> {
        EbpfFacts {
            tuple: t,
            proto: self.proto,
            hash: h,
            bind_inany: self.bind.is_unspecified(),
            in_group: a.listening(),
            outside_group: self.left_on_connect(),
            members: self.members.len() as u32,
            since_5_14: self.profile.closed_tail,
            migrating: None,
        }
    }

    /// Which rule decides the hashed local address for this packet.
    fn laddr_rule(&self) -> LaddrRule {
        if !self.bind.is_unspecified() {
            return LaddrRule::Specific;
        }
        let rule = match self.proto {
            Proto::Tcp => self.profile.tcp_wildcard_laddr,
            Proto::Udp => self.profile.udp_wildcard_laddr,
        };
        match rule {
            WildcardLaddr::Zero => LaddrRule::WildcardZero,
            WildcardLaddr::Daddr => LaddrRule::WildcardDaddr,
            WildcardLaddr::ZeroAboveTen => {
                let count = self.listening().len() as u32;
                if count > UDP_HASH2_THRESHOLD {
                    LaddrRule::PortSlotOverTen(count)
                } else {
                    LaddrRule::PortSlotTenOrFewer(count)
                }
            }
        }
    }

    /// Whether the hash sees local address 0 rather than the destination
    /// (a wildcard group in the eras of kernel-history.md §2.6).
    pub(crate) fn hashes_laddr_zero(&self) -> bool {
        matches!(
            self.laddr_rule(),
            LaddrRule::WildcardZero | LaddrRule::PortSlotOverTen(_)
        )
    }

    /// The local address the lookup pass that finds this group feeds to the
    /// hash, and why (kernel-history.md §2.6).
    pub fn hashed_laddr(&self, t: &Tuple) -> (IpAddr, LaddrReason) {
        let rule = self.laddr_rule();
        let why = match rule {
            LaddrRule::Specific => LaddrReason::Specific {
                bind: self.bind.to_string(),
            },
            LaddrRule::WildcardZero => LaddrReason::WildcardZero,
            LaddrRule::WildcardDaddr => LaddrReason::WildcardDaddr,
            LaddrRule::PortSlotOverTen(count) => LaddrReason::PortSlotOverTen { count },
            LaddrRule::PortSlotTenOrFewer(count) => LaddrReason::PortSlotTenOrFewer { count },
        };
        (rule.apply(t.daddr), why)
    }

    /// The reuseport hash of a packet (already checked with [`Self::accepts`]).
    pub fn hash_of(&self, t: &Tuple) -> u32 {
        self.hash_with_laddr(t, self.laddr_rule().apply(t.daddr))
    }

    fn hash_trace(&self, t: &Tuple) -> HashTrace {
        let (laddr, reason) = self.hashed_laddr(t);
        hash::trace(
            self.profile,
            self.proto,
            laddr,
            reason,
            t.dport,
            t.saddr,
            t.sport,
            &self.keys,
        )
    }

    /// `compute_score` of a member for this packet in the reservoir era
    /// (kernel-history.md §4.1 and §5.1). All members share address, port and
    /// device, so only the CPU bonus (4.4+) tells them apart.
    fn reservoir_score(&self, t: &Tuple, member: &Member, cpu: u32) -> i32 {
        let specific = !self.bind.is_unspecified();
        let udp_hash2_path =
            self.proto == Proto::Udp && self.listening().len() as u32 > UDP_HASH2_THRESHOLD;
        let base = match (self.proto, t.daddr.is_ipv6()) {
            // AF_INET 2, AF_INET6 1; +4 for a bound address (compute_score, net/ipv4/inet_hashtables.c).
            (Proto::Tcp, false) => {
                (if self.bind.is_ipv4() { 2 } else { 1 }) + if specific { 4 } else { 0 }
            }
            // net/ipv6/inet6_hashtables.c: 1, +1 for a bound address.
            (Proto::Tcp, true) => 1 + specific as i32,
            // net/ipv4/udp.c: 2/1, +4 for a bound address on the port-slot scan only.
            (Proto::Udp, false) => {
                (if self.bind.is_ipv4() { 2 } else { 1 })
                    + if specific && !udp_hash2_path { 4 } else { 0 }
            }
            // net/ipv6/udp.c: 0, +1 for a bound address.
            (Proto::Udp, true) => specific as i32,
        };
        let cpu_bonus = self.profile.lookup.cpu_bonus
            && member.incoming_cpu >= 0
            && member.incoming_cpu as u32 == cpu;
        base + cpu_bonus as i32
    }

    /// Which listener the kernel picks for this packet, received on `cpu`.
    pub fn select(&self, t: &Tuple, cpu: u32) -> Result<Choice, SetupError> {
        self.select_ctx(t, &PacketCtx::on_cpu(cpu))
    }

    /// Which listener the kernel picks for this packet in this context.
    pub fn select_ctx(&self, t: &Tuple, ctx: &PacketCtx) -> Result<Choice, SetupError> {
        let t = self.accepts(t)?;
        self.decided(&t, ctx)?;
        let hash = self.hash_of(&t);
        let o = self.pick(&t, hash, ctx, false, true);
        Ok(Choice {
            listener: o.listener,
            slot: o.slot,
            hash,
        })
    }

    /// Which listener the group picks for this packet when the hash is given
    /// rather than computed: a trace's record carries the kernel's own hash,
    /// and an IPv6 record's hash has two per-boot secrets a trace cannot pin
    /// down, so the pick from the kernel's hash is what can be checked. The
    /// selection is the one [`Self::select`] runs (`reuseport_select_sock`,
    /// net/core/sock_reuseport.c), from `hash` instead of the group's keys.
    pub fn select_with_hash(&self, t: &Tuple, hash: u32, cpu: u32) -> Result<Choice, SetupError> {
        let ctx = PacketCtx::on_cpu(cpu);
        let t = self.accepts(t)?;
        self.decided(&t, &ctx)?;
        let o = self.pick(&t, hash, &ctx, false, true);
        Ok(Choice {
            listener: o.listener,
            slot: o.slot,
            hash,
        })
    }

    /// The run of the group's eBPF program on this packet, also when it
    /// does not decide (it ends [`ebpf::EbpfEnd::Unknown`] or
    /// [`ebpf::EbpfEnd::Fault`]): what it did up to there. `None` when the
    /// group has no eBPF program or selects without running it.
    pub fn ebpf_run(
        &self,
        t: &Tuple,
        ctx: &PacketCtx,
    ) -> Result<Option<ebpf::EbpfRun>, SetupError> {
        let t = self.accepts(t)?;
        if self.selection() == Selection::Reservoir {
            return Ok(None);
        }
        let (Some(program), Layout::Array(a)) = (&self.program, &self.layout) else {
            return Ok(None);
        };
        let h = self.hash_of(&t);
        program
            .ebpf_run(ctx, &self.ebpf_facts(&t, h, a))
            .transpose()
    }

    /// The maps of the group's eBPF program after its run on this packet
    /// (the program's updates included), in the form a [`Program::Ebpf`]
    /// takes, so the next packet runs on them as it would in the kernel,
    /// where map contents outlive a run. `None` when the group has no eBPF
    /// program, or selects without running it (a reservoir era).
    pub fn ebpf_maps_after(
        &self,
        t: &Tuple,
        ctx: &PacketCtx,
    ) -> Result<Option<Vec<ebpf::MapFill>>, SetupError> {
        let t = self.accepts(t)?;
        self.decided(&t, ctx)?;
        let (Some(program), Layout::Array(a)) = (&self.program, &self.layout) else {
            return Ok(None);
        };
        let h = self.hash_of(&t);
        Ok(program
            .ebpf_run(ctx, &self.ebpf_facts(&t, h, a))
            .and_then(Result::ok)
            .and_then(|r| r.maps_after)
            .map(|m| m.to_fills()))
    }

    /// Explains every line of pasted text (`SADDR SPORT DADDR DPORT` or
    /// `SADDR:SPORT DADDR:DPORT`) on `cpu`: per line its [`Explain`], its
    /// line error, or the sentence saying why the group cannot answer its
    /// tuple. Blank and `#` lines are skipped; a bad line never fails the
    /// rest.
    pub fn explain_text(&self, text: &str, cpu: u32) -> Vec<LineAnswer> {
        crate::paste::tuple_lines::tuple_lines(text)
            .map(
                |(line, parsed)| match parsed.map(|t| self.explain(&t, cpu)) {
                    Ok(Ok(explain)) => LineAnswer::Explain {
                        line,
                        explain: Box::new(explain),
                        error: None,
                        refused: None,
                    },
                    Ok(Err(e)) => LineAnswer::Refused {
                        line,
                        refused: e.to_string(),
                        explain: None,
                        error: None,
                    },
                    Err(error) => LineAnswer::Error {
                        line,
                        error,
                        explain: None,
                        refused: None,
                    },
                },
            )
            .collect()
    }

    /// The whole path of one packet, received on `cpu`.
    pub fn explain(&self, t: &Tuple, cpu: u32) -> Result<Explain, SetupError> {
        self.explain_ctx(t, &PacketCtx::on_cpu(cpu))
    }

    /// The whole path of one packet in this context.
    pub fn explain_ctx(&self, t: &Tuple, ctx: &PacketCtx) -> Result<Explain, SetupError> {
        let t = self.accepts(t)?;
        self.decided(&t, ctx)?;
        let hash = self.hash_trace(&t);
        Ok(self.explain_from(t, hash, ctx, true).1)
    }

    /// The group's answer inside a full listener lookup: the lookup pass
    /// decides the local address the hash sees (`laddr`, with `why`), and an
    /// invalid program index before 4.16 returns NULL to the caller, whose
    /// own reservoir scan goes on ([`crate::lookup`]).
    pub fn select_for_lookup(
        &self,
        t: &Tuple,
        ctx: &PacketCtx,
        laddr: IpAddr,
        why: LaddrReason,
    ) -> Result<(GroupAnswer, Explain), SetupError> {
        let t = Tuple {
            saddr: canonical(t.saddr),
            daddr: canonical(t.daddr),
            ..*t
        };
        let laddr = canonical(laddr);
        if t.saddr.is_ipv4() != laddr.is_ipv4() {
            return Err(SetupError::NotForThisGroup {
                daddr: t.daddr.to_string(),
                dport: t.dport,
                bind: self.bind.to_string(),
                port: self.port,
                consequence: "the families differ",
            });
        }
        let hash = hash::trace(
            self.profile,
            self.proto,
            laddr,
            why,
            t.dport,
            t.saddr,
            t.sport,
            &self.keys,
        );
        self.decided(&t, ctx)?;
        let (answer, e) = self.explain_from(t, hash, ctx, false);
        Ok((answer, e))
    }

    fn explain_from(
        &self,
        t: Tuple,
        hash: HashTrace,
        ctx: &PacketCtx,
        standalone: bool,
    ) -> (GroupAnswer, Explain) {
        let o = self.pick(&t, hash.hash, ctx, true, standalone);
        let answer = match (o.listener, o.fallback) {
            (Some(l), _) => GroupAnswer::Member(l),
            (None, Some(Fallback::SkDrop)) => GroupAnswer::Drop,
            (None, _) => GroupAnswer::Null,
        };
        let mut notes = self.profile.notes();
        notes.extend(o.notes);
        if self.selection() == Selection::Reservoir && self.members.iter().any(|m| m.connected) {
            notes.push(Note::ConnectedMembersUnmatched);
        }
        if standalone
            && self.profile.udp_wildcard_laddr == WildcardLaddr::ZeroAboveTen
            && self.proto == Proto::Udp
            && self.bind.is_unspecified()
        {
            notes.push(Note::PortSlotAssumedAlone);
        }
        let e = Explain {
            profile: self.profile.release,
            proto: self.proto,
            tuple: t,
            cpu: ctx.cpu,
            group: self.summary(),
            hash,
            pick: o.pick.expect("recorded"),
            listener: o.listener,
            slot: o.slot,
            fallback: o.fallback,
            notes,
        };
        (answer, e)
    }

    /// The chain a reservoir scan walks in the group era (the 4.5–4.15
    /// fallback for an invalid program index): listening members in
    /// `listening_hash` order, newest first, but IPv6 reuseport sockets at
    /// the tail from 4.6 (d894ba18d4e4).
    fn group_era_chain(&self) -> Vec<u32> {
        let mut chain: Vec<u32> = self.listening().to_vec();
        chain.sort_by_key(|&l| std::cmp::Reverse(self.join_seq[l as usize]));
        if self.bind.is_ipv6() {
            chain.reverse();
        }
        chain
    }

    fn slot_of(&self, listener: u32) -> Option<u32> {
        self.sock_array()?
            .listening()
            .iter()
            .position(|&l| l == listener)
            .map(|i| i as u32)
    }

    /// The selection proper: program, select-by-hash or reservoir, with the
    /// record built only when asked.
    fn pick(&self, t: &Tuple, h: u32, ctx: &PacketCtx, record: bool, standalone: bool) -> Outcome {
        let mut o = Outcome::default();
        let a = match &self.layout {
            Layout::Chain(c) => {
                let mut steps = Vec::new();
                o.listener = self.reservoir(c, t, h, ctx.cpu, record.then_some(&mut steps));
                if o.listener.is_none() {
                    o.fallback = Some(Fallback::NoListeningMatch);
                }
                if record {
                    o.pick = Some(Pick::Reservoir {
                        source: self.reservoir_source(),
                        omitted: (c.len() - steps.len()) as u32,
                        steps,
                    });
                }
                return o;
            }
            Layout::Array(a) => a,
        };
        let Some(program) = &self.program else {
            return self.by_hash(a, h, ctx.cpu, record);
        };
        let n = a.num_socks();
        let ipv6 = t.saddr.is_ipv6();
        let erun = program
            .ebpf_run(ctx, &self.ebpf_facts(t, h, a))
            .and_then(Result::ok);
        let ran = program.run(
            ctx,
            (self.proto, ipv6),
            a.listening(),
            |l| self.members[l as usize].state == MemberState::Listening,
            &self.sockarray_gone,
            erun.as_ref(),
        );
        let describe = |then: Option<Box<Pick>>,
                        returned: ProgramReturn,
                        outcome: ProgramOutcome| Pick::Program {
            source: program.source(self.profile.release),
            program: program.describe(),
            returned,
            outcome,
            then,
            run: program.cbpf_run(ctx, self.proto, ipv6),
            ebpf_run: erun.clone(),
        };
        match ran {
            ProgramResult::Index(i) if i < n => {
                o.slot = Some(i);
                o.listener = Some(a.listening()[i as usize]);
                if record {
                    o.pick = Some(describe(
                        None,
                        ProgramReturn::Index { index: i },
                        ProgramOutcome::InRange {
                            index: i,
                            num_socks: n,
                        },
                    ));
                }
                o
            }
            ProgramResult::Index(i) => match self.profile.bpf_invalid_index {
                BpfFallback::Hash => {
                    let inner = self.by_hash(a, h, ctx.cpu, record);
                    Outcome {
                        pick: record.then(|| {
                            describe(
                                inner.pick.map(Box::new),
                                ProgramReturn::Index { index: i },
                                ProgramOutcome::InvalidThenHash {
                                    index: i,
                                    num_socks: n,
                                },
                            )
                        }),
                        ..inner
                    }
                }
                BpfFallback::Reservoir if !standalone => {
                    o.fallback = Some(Fallback::InvalidIndexNull);
                    if record {
                        o.pick = Some(describe(
                            None,
                            ProgramReturn::Index { index: i },
                            ProgramOutcome::InvalidReturnsNull {
                                index: i,
                                num_socks: n,
                            },
                        ));
                    }
                    o
                }
                BpfFallback::Reservoir => {
                    let mut steps = Vec::new();
                    let chain = self.group_era_chain();
                    let l = self.reservoir(&chain, t, h, ctx.cpu, record.then_some(&mut steps));
                    o.listener = l;
                    o.slot = l.and_then(|l| self.slot_of(l));
                    if record {
                        // The caller's reservoir scan over listening_hash (4.5 – 4.15).
                        let inner = Pick::Reservoir {
                            source: self.reservoir_source(),
                            omitted: (chain.len() - steps.len()) as u32,
                            steps,
                        };
                        o.pick = Some(describe(
                            Some(Box::new(inner)),
                            ProgramReturn::Index { index: i },
                            ProgramOutcome::InvalidThenReservoir {
                                index: i,
                                num_socks: n,
                            },
                        ));
                    }
                    o
                }
            },
            ProgramResult::Selected(l) => {
                o.listener = Some(l);
                o.slot = self.slot_of(l);
                if record {
                    o.pick = Some(describe(
                        None,
                        ProgramReturn::Selected,
                        ProgramOutcome::Selected { listener: l },
                    ));
                }
                o
            }
            ProgramResult::PassWithoutSelection(why) => {
                let inner = self.by_hash(a, h, ctx.cpu, record);
                Outcome {
                    pick: record.then(|| {
                        describe(
                            inner.pick.map(Box::new),
                            ProgramReturn::PassWithoutSelection,
                            why.outcome(true),
                        )
                    }),
                    ..inner
                }
            }
            ProgramResult::Unknown(_) => {
                // The entry points refuse such a packet first (`decided`).
                debug_assert!(false, "a program run the model cannot decide");
                self.by_hash(a, h, ctx.cpu, record)
            }
            ProgramResult::Drop(why) => {
                o.fallback = Some(Fallback::SkDrop);
                if record {
                    o.pick = Some(describe(None, ProgramReturn::Drop, why.outcome(false)));
                }
                o
            }
        }
    }

    /// The reservoir scan of the listener lookup (3.9 – 4.5 TCP, 3.9 – 4.4
    /// UDP, and the 4.5 – 4.15 fallback for an invalid program index).
    fn reservoir_source(&self) -> KernelSource {
        let release = self.profile.release;
        let (func, file) = match (self.proto, self.bind.is_ipv6()) {
            (Proto::Tcp, false) => ("__inet_lookup_listener", "net/ipv4/inet_hashtables.c"),
            (Proto::Tcp, true) => ("inet6_lookup_listener", "net/ipv6/inet6_hashtables.c"),
            (Proto::Udp, false) => ("__udp4_lib_lookup", "net/ipv4/udp.c"),
            (Proto::Udp, true) => ("__udp6_lib_lookup", "net/ipv6/udp.c"),
        };
        KernelSource::new(func, file, release)
    }

    fn by_hash(&self, a: &SockArray, h: u32, cpu: u32, record: bool) -> Outcome {
        let mut steps = Vec::new();
        let n = a.num_socks();
        let got = self.select_by_hash(a, h, cpu, record.then_some(&mut steps));
        let mut o = Outcome {
            listener: got.map(|(_, l)| l),
            slot: got.map(|(s, _)| s),
            ..Outcome::default()
        };
        if got.is_none() {
            o.fallback = Some(if n == 0 {
                Fallback::NoListeningMember
            } else {
                Fallback::AllConnected
            });
        }
        if record {
            // 4.5 – 5.3 plain; 5.4+ skips connected members; 6.2+ the
            // SO_INCOMING_CPU ring scan in its own function.
            let func = match self.profile.group_scan {
                GroupScan::Plain | GroupScan::SkipConnected => "reuseport_select_sock",
                GroupScan::SkipConnectedPreferCpu => "reuseport_select_sock_by_hash",
            };
            let source = KernelSource::new(func, "net/core/sock_reuseport.c", self.profile.release);
            let product = h as u64 * n as u64;
            o.pick = Some(Pick::ByHash {
                source,
                num_socks: n,
                product: product.to_string(),
                product_hex: format!("{product:x}"),
                scaled: if n == 0 { 0 } else { reciprocal_scale(h, n) },
                steps,
            });
        }
        o
    }

    /// Where a child or request of listener `closing`, which has just been
    /// shut down or closed, goes (5.14+, `reuseport_migrate_sock`,
    /// net/core/sock_reuseport.c 6.12), at `stage` of its handshake, on `cpu`.
    /// See [`Self::migrate_run`].
    pub fn migrate(
        &self,
        closing: u32,
        t: &Tuple,
        stage: ebpf::MigrateStage,
        cpu: u32,
    ) -> Result<Migration, SetupError> {
        self.migrate_run(closing, t, stage, cpu)
            .map(|r| r.migration)
    }

    /// [`Self::migrate`] with the program's run. The rules of
    /// `reuseport_migrate_sock` (net/core/sock_reuseport.c, 5.14 – 6.12):
    ///
    /// - before 5.14, or for UDP, nothing migrates: the request is reset;
    /// - the closing listener stayed in the group only if
    ///   `net.ipv4.tcp_migrate_req` is 1 or the group's program was loaded
    ///   with `BPF_SK_REUSEPORT_SELECT_OR_MIGRATE`
    ///   (`reuseport_stop_listen_sock`); otherwise it left, and the request
    ///   is reset;
    /// - with no listening member left, the request is reset (the program
    ///   does not run);
    /// - the hash is the request's own (`migrating_sk->sk_hash`: the
    ///   established hash of its 4-tuple, the real local address even in a
    ///   wildcard group);
    /// - without a SELECT_OR_MIGRATE program: select by hash if the sysctl
    ///   is 1, else reset;
    /// - with one, it runs with `sk` the closing listener and
    ///   `migrating_sk` the request ([`ebpf::Migrating`]): `SK_PASS` with a
    ///   selection migrates there; `SK_PASS` without one falls back to
    ///   select by hash, whatever the sysctl; anything else is
    ///   `ERR_PTR(-ECONNREFUSED)` (`bpf_run_sk_reuseport`,
    ///   net/core/filter.c), and the request is reset with no fallback.
    ///
    /// A selection is always a listening member: `bpf_sk_select_reuseport`
    /// returns -ENOENT for a socket the sockarray no longer holds (a closed
    /// member is removed from it on shutdown, `bpf_sk_reuseport_detach`),
    /// and the program then decides with that error in hand.
    pub fn migrate_run(
        &self,
        closing: u32,
        t: &Tuple,
        stage: ebpf::MigrateStage,
        cpu: u32,
    ) -> Result<MigrationRun, SetupError> {
        let t = Tuple {
            saddr: canonical(t.saddr),
            daddr: canonical(t.daddr),
            ..*t
        };
        let reset = |reason| {
            Ok(MigrationRun {
                migration: Migration::Reset { reason },
                ebpf_run: None,
            })
        };
        if self.proto != Proto::Tcp || !self.profile.closed_tail {
            return reset(ResetReason::NoMigration {
                release: self.profile.release,
            });
        }
        let migrate_prog = self.program.as_ref().filter(|p| p.migrates());
        if !self.tcp_migrate_req && migrate_prog.is_none() {
            return reset(ResetReason::MigrateReqOff);
        }
        let a = self.sock_array().expect("group era from 5.14");
        if a.num_socks() == 0 {
            return reset(ResetReason::NoListenerLeft);
        }
        let hash = self.hash_with_laddr(&t, t.daddr);
        let by_hash =
            |ebpf_run: Option<ebpf::EbpfRun>| match self.select_by_hash(a, hash, cpu, None) {
                Some((slot, listener)) => Ok(MigrationRun {
                    migration: Migration::To {
                        listener,
                        slot,
                        hash,
                        by_program: false,
                    },
                    ebpf_run,
                }),
                None => Ok(MigrationRun {
                    migration: Migration::Reset {
                        reason: ResetReason::NoListenerLeft,
                    },
                    ebpf_run,
                }),
            };
        let Some(program) = migrate_prog else {
            return by_hash(None);
        };
        let facts = EbpfFacts {
            migrating: Some(ebpf::Migrating { stage, closing }),
            ..self.ebpf_facts(&t, hash, a)
        };
        let run = match program.ebpf_run(&PacketCtx::on_cpu(cpu), &facts) {
            Some(Ok(run)) => run,
            Some(Err(e)) => return Err(e),
            None => unreachable!("a SELECT_OR_MIGRATE program is an eBPF program"),
        };
        match (&run.end, run.value()) {
            (ebpf::EbpfEnd::Unknown { .. } | ebpf::EbpfEnd::Fault { .. }, _) => {
                Err(SetupError::EbpfUndecided {
                    end: run.end.clone(),
                })
            }
            (_, Some(1)) => match run.selected {
                Some(listener) => Ok(MigrationRun {
                    migration: Migration::To {
                        listener,
                        slot: self.slot_of(listener).expect("a selection is listening"),
                        hash,
                        by_program: true,
                    },
                    ebpf_run: Some(run),
                }),
                None => by_hash(Some(run)),
            },
            _ => Ok(MigrationRun {
                migration: Migration::Reset {
                    reason: ResetReason::ProgramDropped,
                },
                ebpf_run: Some(run),
            }),
        }
    }

    fn hash_with_laddr(&self, t: &Tuple, laddr: IpAddr) -> u32 {
        hash::reuseport_hash(
            self.profile,
            self.proto,
            laddr,
            t.dport,
            t.saddr,
            t.sport,
            &self.keys,
        )
        .expect("accepts() makes both addresses the same family")
    }

    /// Select by hash over the listening prefix, per era
    /// (`net/core/sock_reuseport.c`, kernel-history.md §3.4). Returns the slot
    /// and listener, recording each visited slot when asked.
    fn select_by_hash(
        &self,
        a: &SockArray,
        hash: u32,
        cpu: u32,
        mut rec: Option<&mut Vec<RingStep>>,
    ) -> Option<(u32, u32)> {
        let socks = a.listening();
        let n = socks.len() as u32;
        if n == 0 {
            return None;
        }
        let start = reciprocal_scale(hash, n);
        let mut push = |slot: u32, outcome: RingOutcome, chosen: bool| {
            if let Some(r) = rec.as_deref_mut() {
                r.push(RingStep {
                    slot,
                    listener: socks[slot as usize],
                    outcome,
                    chosen,
                });
            }
        };
        let scan = self.profile.group_scan;
        if scan == GroupScan::Plain {
            push(start, RingOutcome::Plain, true);
            return Some((start, socks[start as usize]));
        }
        let prefer_cpu = scan == GroupScan::SkipConnectedPreferCpu && self.incoming_cpu > 0;
        let mut first: Option<u32> = None;
        let mut i = start;
        loop {
            let m = &self.members[socks[i as usize] as usize];
            if m.connected {
                push(i, RingOutcome::ConnectedSkipped, false);
            } else if !prefer_cpu {
                let why = if scan == GroupScan::SkipConnectedPreferCpu {
                    RingOutcome::NotConnectedNoIncomingCpu
                } else {
                    RingOutcome::NotConnected
                };
                push(i, why, true);
                return Some((i, socks[i as usize]));
            } else if m.incoming_cpu >= 0 && m.incoming_cpu as u32 == cpu {
                push(i, RingOutcome::CpuMatch { cpu }, true);
                return Some((i, socks[i as usize]));
            } else {
                let outcome = match (m.incoming_cpu, first.is_none()) {
                    (c, true) if c < 0 => RingOutcome::CpuUnsetFirst { cpu },
                    (c, false) if c < 0 => RingOutcome::CpuUnset { cpu },
                    (c, true) => RingOutcome::CpuOtherFirst {
                        incoming_cpu: c as u32,
                        cpu,
                    },
                    (c, false) => RingOutcome::CpuOther {
                        incoming_cpu: c as u32,
                        cpu,
                    },
                };
                push(i, outcome, false);
                first.get_or_insert(i);
            }
            i = if i + 1 >= n { 0 } else { i + 1 };
            if i == start {
                break;
            }
        }
        if let (Some(f), Some(r)) = (first, rec) {
            r.push(RingStep {
                slot: f,
                listener: socks[f as usize],
                outcome: RingOutcome::FirstValid,
                chosen: true,
            });
        }
        first.map(|f| (f, socks[f as usize]))
    }

    /// The reservoir scan (3.9–4.5 TCP, 3.9–4.4 UDP; kernel-history.md §4.1).
    /// `rec` gets the first [`EXPLAIN_STEPS`] steps and every later one that
    /// took the lead; the scan itself visits the whole chain.
    fn reservoir(
        &self,
        chain: &[u32],
        t: &Tuple,
        hash: u32,
        cpu: u32,
        mut rec: Option<&mut Vec<ReservoirStep>>,
    ) -> Option<u32> {
        let mut result = None;
        let mut hi = 0i32;
        let mut matches = 0u32;
        let mut phash = 0u32;
        for (pos, &l) in chain.iter().enumerate() {
            let m = &self.members[l as usize];
            if m.connected {
                if let Some(r) = rec.as_deref_mut().filter(|_| (pos as u32) < EXPLAIN_STEPS) {
                    r.push(ReservoirStep {
                        position: pos as u32,
                        listener: l,
                        score: -1,
                        matches,
                        phash: None,
                        scaled: None,
                        taken: false,
                        outcome: ReservoirOutcome::Connected,
                    });
                }
                continue;
            }
            let s = self.reservoir_score(t, m, cpu);
            let before = hi;
            let (taken, tested) = if s > hi {
                result = Some(l);
                hi = s;
                phash = hash;
                matches = 1;
                (true, None)
            } else if s == hi {
                matches += 1;
                let tested = phash;
                let take = reciprocal_scale(tested, matches) == 0;
                if take {
                    result = Some(l);
                }
                phash = next_pseudo_random32(phash);
                (take, Some(tested))
            } else {
                (false, None)
            };
            if let Some(r) = rec
                .as_deref_mut()
                .filter(|_| taken || (pos as u32) < EXPLAIN_STEPS)
            {
                let scaled = tested.map(|x| reciprocal_scale(x, matches));
                let outcome = match (tested, scaled) {
                    (Some(x), Some(0)) => ReservoirOutcome::EqualTaken {
                        phash: hex(x),
                        matches,
                    },
                    (Some(x), Some(sc)) => ReservoirOutcome::EqualKept {
                        phash: hex(x),
                        matches,
                        scaled: sc,
                    },
                    _ if taken && pos == 0 => ReservoirOutcome::FirstMatch { score: s },
                    _ if taken => ReservoirOutcome::Beats { score: s, before },
                    _ => ReservoirOutcome::Below { score: s, best: hi },
                };
                r.push(ReservoirStep {
                    position: pos as u32,
                    listener: l,
                    score: s,
                    matches,
                    phash: tested.map(hex),
                    scaled,
                    taken,
                    outcome,
                });
            }
        }
        result
    }
}
