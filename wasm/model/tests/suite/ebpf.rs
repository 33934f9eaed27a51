//! eBPF programs of the user's own: the ELF reader on objects clang
//! compiles at test time from sources nobody here wrote (the kernel
//! selftests' `test_select_reuseport_kern.c`, tests/fixtures/ebpf/), the
//! interpreter's instruction rules on hand-assembled programs, and a
//! program inside a group. Expected values are counted by hand from the C
//! source or the instructions; `reuseport-agent verify --program FILE`
//! holds the same runs against the live kernel.

use std::net::Ipv4Addr;

use reuseport_model::explain::Pick;
use reuseport_model::message::ProgramOutcome;
use reuseport_model::reuseport::ebpf::{
    self, map_type, EbpfEnd, EbpfProgram, Insn, MapDef, MapFill, MapKey, MapValue, ProgKind,
};
use reuseport_model::reuseport::{PacketCtx, Payload, Program};
use reuseport_model::{GroupSpec, Keys, Proto, ReuseportGroup, SetupError, Tuple};

use crate::common;

/// Compiles a fixture as the selftests' Makefile does (clang -target bpf
/// -O2 -g, libbpf's headers), or says SKIPPED when clang is missing.
fn compile(src: &str) -> Option<Vec<u8>> {
    compile_with(src, &[])
}

fn compile_with(src: &str, flags: &[&str]) -> Option<Vec<u8>> {
    common::compile_fixture(src, flags)
}

fn sockarray(n: u32) -> MapDef {
    MapDef {
        name: "reuseport_array".into(),
        map_type: map_type::REUSEPORT_SOCKARRAY,
        key_size: 4,
        value_size: 8,
        max_entries: n,
        flags: 0,
        data: None,
    }
}

/// The selftest's user space (prog_tests/select_reuseport.c): the outer
/// map holds the socket array, the override is -1, each socket at its index.
fn selftest_program(prog: EbpfProgram, n: u32, filled: u32) -> Program {
    Program::Ebpf {
        program: EbpfProgram {
            kind: Some(ProgKind::SkReuseport),
            ..prog
        },
        maps: vec![
            MapFill {
                map: "outer_map".into(),
                entries: vec![(
                    MapKey::Num(0),
                    MapValue::Map {
                        map: "reuseport_array".into(),
                    },
                )],
            },
            MapFill {
                map: "tmp_index_ovr_map".into(),
                entries: vec![(MapKey::Num(0), MapValue::Hex("ffffffff".into()))],
            },
            MapFill {
                map: "reuseport_array".into(),
                entries: (0..filled)
                    .map(|i| (MapKey::Num(i as u64), MapValue::Socket { socket: i }))
                    .collect(),
            },
        ],
        extra_maps: vec![sockarray(n)],
        seed: 0,
        cookies: Vec::new(),
    }
}

fn cmd(index: u32, pass_on_failure: u32) -> Vec<u8> {
    let mut v = index.to_le_bytes().to_vec();
    v.extend(pass_on_failure.to_le_bytes());
    v
}

fn group(n: u32, program: Program) -> ReuseportGroup {
    let spec = GroupSpec {
        program: Some(program),
        ..GroupSpec::new(
            Proto::Udp,
            n,
            Ipv4Addr::LOCALHOST.into(),
            4242,
            Keys::default(),
        )
    };
    ReuseportGroup::build(
        reuseport_model::profile::Profile::named("6.12").unwrap(),
        &spec,
    )
    .expect("a group")
}

fn tuple() -> Tuple {
    Tuple::v4(Ipv4Addr::new(127, 0, 0, 9), 5555, Ipv4Addr::LOCALHOST, 4242)
}

#[test]
fn the_reader_finds_the_selftest_program_and_its_five_btf_maps() {
    let Some(elf) = compile("test_select_reuseport_kern.c") else {
        return;
    };
    let obj = ebpf::read(&elf).expect("the object reads");
    assert_eq!(obj.programs.len(), 1);
    let p = &obj.programs[0];
    assert_eq!(p.name, "_select_by_skb_data");
    assert_eq!(p.section, "select_by_skb_data");
    // The selftest sets the type in code; the section does not say it.
    assert_eq!(p.kind, None);
    assert_eq!(obj.license.as_deref(), Some("GPL"));
    let mut m: Vec<(&str, u32, u32, u32, u32)> = obj
        .maps
        .iter()
        .map(|m| {
            (
                m.name.as_str(),
                m.map_type,
                m.key_size,
                m.value_size,
                m.max_entries,
            )
        })
        .collect();
    m.sort();
    // From the C source: NR_RESULTS is 6; struct data_check is 4 + 32 +
    // 4 + 2 + 1, padded to 44, then len and hash: 52 bytes.
    assert_eq!(
        m,
        vec![
            ("data_check_map", 2, 4, 52, 1),
            ("linum_map", 2, 4, 4, 1),
            ("outer_map", 12, 4, 4, 1),
            ("result_map", 2, 4, 4, 6),
            ("tmp_index_ovr_map", 2, 4, 4, 1),
        ]
    );
    // Every map reference is relocated to one of them.
    let refs: Vec<i32> = p
        .insns
        .iter()
        .filter(|i| i.code == 0x18 && i.src == 1)
        .map(|i| i.imm)
        .collect();
    assert!(!refs.is_empty() && refs.iter().all(|&i| (0..5).contains(&i)));
}

#[test]
fn the_selftest_program_selects_the_socket_its_payload_names() {
    let Some(elf) = compile("test_select_reuseport_kern.c") else {
        return;
    };
    let prog = ebpf::read(&elf).unwrap().programs.remove(0);
    let g = group(4, selftest_program(prog, 4, 4));
    for want in 0..4 {
        let ctx = PacketCtx {
            payload: Some(Payload::Bytes(cmd(want, 0))),
            ..PacketCtx::on_cpu(0)
        };
        let c = g.select_ctx(&tuple(), &ctx).expect("decided");
        assert_eq!(c.listener, Some(want), "cmd.reuseport_index = {want}");
    }
}

#[test]
fn an_empty_index_drops_or_passes_to_the_hash_as_the_command_says() {
    let Some(elf) = compile("test_select_reuseport_kern.c") else {
        return;
    };
    let prog = ebpf::read(&elf).unwrap().programs.remove(0);
    // Four sockets, only indices 0 and 1 filled: index 3 is -ENOENT.
    let g = group(4, selftest_program(prog, 4, 2));
    let drop = PacketCtx {
        payload: Some(Payload::Bytes(cmd(3, 0))),
        ..PacketCtx::on_cpu(0)
    };
    assert_eq!(g.select_ctx(&tuple(), &drop).unwrap().listener, None);
    let e = g.explain_ctx(&tuple(), &drop).unwrap();
    let Pick::Program {
        outcome, ebpf_run, ..
    } = &e.pick
    else {
        panic!("a program decided: {:?}", e.pick)
    };
    assert_eq!(*outcome, ProgramOutcome::DropReturned);
    let run = ebpf_run.as_ref().expect("the run is in the record");
    let sel: Vec<_> = run
        .calls
        .iter()
        .filter(|c| c.helper == "bpf_sk_select_reuseport")
        .collect();
    assert_eq!(sel.len(), 1);
    assert_eq!(sel[0].result, "-ENOENT");
    assert_eq!(run.end, EbpfEnd::Returned { value: "0".into() });

    let pass = PacketCtx {
        payload: Some(Payload::Bytes(cmd(3, 1))),
        ..PacketCtx::on_cpu(0)
    };
    let by_hash = group(4, Program::Pass).select_ctx(&tuple(), &pass).unwrap();
    assert_eq!(
        g.select_ctx(&tuple(), &pass).unwrap().listener,
        by_hash.listener,
        "SK_PASS without a selection: the hash decides"
    );
}

#[test]
fn a_datagram_shorter_than_the_command_is_dropped_by_the_program() {
    let Some(elf) = compile("test_select_reuseport_kern.c") else {
        return;
    };
    let prog = ebpf::read(&elf).unwrap().programs.remove(0);
    let g = group(4, selftest_program(prog, 4, 4));
    // 8 + 4 < 8 + sizeof(struct cmd): DROP_ERR_SKB_DATA, SK_DROP.
    let ctx = PacketCtx {
        payload: Some(Payload::Bytes(vec![1, 0, 0, 0])),
        ..PacketCtx::on_cpu(0)
    };
    assert_eq!(g.select_ctx(&tuple(), &ctx).unwrap().listener, None);
}

fn ins(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        dst,
        src,
        off,
        imm,
    }
}

fn bare(kind: ProgKind, insns: Vec<Insn>) -> Program {
    Program::Ebpf {
        program: EbpfProgram {
            name: "hand".into(),
            section: "hand".into(),
            kind: Some(kind),
            insns,
            maps: vec![],
        },
        maps: vec![],
        extra_maps: vec![],
        seed: 7,
        cookies: Vec::new(),
    }
}

#[test]
fn a_socket_filter_index_past_num_socks_falls_back_to_the_hash() {
    // r0 = 9; exit: 9 >= 4 sockets, select-by-hash decides (4.16+).
    let p = bare(
        ProgKind::SocketFilter,
        vec![ins(0xb7, 0, 0, 0, 9), ins(0x95, 0, 0, 0, 0)],
    );
    let ctx = PacketCtx::on_cpu(0);
    let by_hash = group(4, Program::Pass).select_ctx(&tuple(), &ctx).unwrap();
    assert_eq!(
        group(4, p).select_ctx(&tuple(), &ctx).unwrap().listener,
        by_hash.listener
    );
}

#[test]
fn ld_abs_past_the_payload_returns_zero_as_the_classic_rule() {
    // r6 = r1; r0 = ld_abs_w [8]; exit. A 4-byte payload: index 0.
    let p = bare(
        ProgKind::SocketFilter,
        vec![
            ins(0xbf, 6, 1, 0, 0),
            ins(0x20, 0, 0, 0, 8),
            ins(0x95, 0, 0, 0, 0),
        ],
    );
    let ctx = PacketCtx {
        payload: Some(Payload::Bytes(vec![0, 0, 0, 3])),
        ..PacketCtx::on_cpu(0)
    };
    assert_eq!(
        group(4, p).select_ctx(&tuple(), &ctx).unwrap().listener,
        Some(0)
    );
}

#[test]
fn alu_rules_division_by_zero_and_masked_shifts() {
    // r0 = 7; r1 = 0; r0 /= r1 (-> 0); r0 += 3; r2 = 33; w0 <<= w2 (33 & 31 = 1) -> 6;
    // r3 = 5; r3 %= r1 (-> 5 kept); r0 += r3 -> 11; exit.
    let p = bare(
        ProgKind::SocketFilter,
        vec![
            ins(0xb7, 0, 0, 0, 7),
            ins(0xb7, 1, 0, 0, 0),
            ins(0x3f, 0, 1, 0, 0),
            ins(0x07, 0, 0, 0, 3),
            ins(0xb7, 2, 0, 0, 33),
            ins(0x6c, 0, 2, 0, 0),
            ins(0xb7, 3, 0, 0, 5),
            ins(0x9f, 3, 1, 0, 0),
            ins(0x0f, 0, 3, 0, 0),
            ins(0x95, 0, 0, 0, 0),
        ],
    );
    let Program::Ebpf { program, .. } = &p else {
        unreachable!()
    };
    let st = ebpf::MapState::build(&[], &[], 4).unwrap();
    let anc = Default::default();
    let pkt = ebpf::Packet {
        proto: Proto::Udp,
        saddr: Ipv4Addr::LOCALHOST.into(),
        daddr: Ipv4Addr::LOCALHOST.into(),
        sport: 1,
        dport: 2,
        payload: &[],
        cpu: 0,
        hash: 0,
        bind_inany: false,
        in_group: &[0, 1, 2, 3],
        outside_group: &[],
        first: 0,
        anc: &anc,
        seed: 0,
        since_5_14: true,
        cookies: &[],
        migrating: None,
    };
    let run = ebpf::run(program, &st, &pkt);
    assert_eq!(run.value(), Some(11));
    assert_eq!(run.taken, 10);
}

#[test]
fn reading_the_udp_checksum_is_undecided_and_names_the_byte() {
    // sk_reuseport: r2 = *(u64 *)(r1 + 0) (data); r3 = *(u64 *)(r1 + 8);
    // r4 = r2; r4 += 8; if r4 > r3 goto +2; r0 = *(u16 *)(r2 + 6); exit;
    // r0 = 1; exit.
    let p = bare(
        ProgKind::SkReuseport,
        vec![
            ins(0x79, 2, 1, 0, 0),
            ins(0x79, 3, 1, 8, 0),
            ins(0xbf, 4, 2, 0, 0),
            ins(0x07, 4, 0, 0, 8),
            ins(0x2d, 4, 3, 2, 0),
            ins(0x69, 0, 2, 6, 0),
            ins(0x95, 0, 0, 0, 0),
            ins(0xb7, 0, 0, 0, 1),
            ins(0x95, 0, 0, 0, 0),
        ],
    );
    let e = group(4, p)
        .select_ctx(&tuple(), &PacketCtx::on_cpu(0))
        .unwrap_err();
    match e {
        // Byte 6 of the UDP header: its checksum, which the model's packet does not hold.
        SetupError::EbpfUndecided { end } => assert_eq!(
            end,
            EbpfEnd::Unknown {
                pc: 5,
                what: Box::new(ebpf::EbpfUnknown::PacketByte { at: 6 })
            }
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_elf_input_is_refused_with_a_reason() {
    assert!(matches!(
        ebpf::read(b"not an elf"),
        Err(ebpf::ElfError::NotElf)
    ));
    let big = vec![0u8; ebpf::MAX_ELF_BYTES + 1];
    assert!(matches!(
        ebpf::read(&big),
        Err(ebpf::ElfError::TooLarge { .. })
    ));
}

/// nginx 1.26.3's QUIC helper, compiled as its makefile does (with the
/// legacy map struct restated, tests/fixtures/ebpf/README.md).
fn nginx() -> Option<EbpfProgram> {
    let inc = common::fixtures().join("bpf_map_def.h");
    let elf = compile_with(
        "ngx_quic_reuseport_helper.c",
        &[
            "-Wall",
            "-DPROGNAME=\"ngx_quic_reuseport_helper\"",
            "-DLICENSE_BSD",
            "-DLICENSE=\"BSD\"",
            "-include",
            inc.to_str().unwrap(),
        ],
    )?;
    let obj = ebpf::read(&elf).expect("the nginx object reads");
    assert_eq!(obj.license.as_deref(), Some("BSD"));
    let p = obj.programs.into_iter().next().unwrap();
    assert_eq!(p.name, "ngx_quic_select_socket_by_dcid");
    assert_eq!(p.section, "ngx_quic_reuseport_helper");
    // The map is declared, never defined: nginx makes it at run time.
    assert_eq!(p.maps.len(), 1);
    assert_eq!(
        (p.maps[0].name.as_str(), p.maps[0].map_type),
        ("ngx_quic_sockmap", 0)
    );
    Some(p)
}

/// nginx's map (ngx_event_quic_bpf.c): a SOCKHASH, u64 keys and values.
fn nginx_program(p: EbpfProgram, keys: &[(u64, u32)]) -> Program {
    Program::Ebpf {
        program: EbpfProgram {
            kind: Some(ProgKind::SkReuseport),
            ..p
        },
        maps: vec![MapFill {
            map: "ngx_quic_sockmap".into(),
            entries: keys
                .iter()
                .map(|&(k, l)| (MapKey::Num(k), MapValue::Socket { socket: l }))
                .collect(),
        }],
        extra_maps: vec![MapDef {
            name: "ngx_quic_sockmap".into(),
            map_type: map_type::SOCKHASH,
            key_size: 8,
            value_size: 8,
            max_entries: 1024,
            flags: 0,
            data: None,
        }],
        seed: 0,
        cookies: Vec::new(),
    }
}

fn short_header(dcid_key: u64) -> Vec<u8> {
    // Short header: flags 0x40, then a 20-byte DCID whose first eight bytes
    // are the key, big-endian (ngx_quic_parse_uint64).
    let mut v = vec![0x40];
    v.extend(dcid_key.to_be_bytes());
    v.extend([0u8; 12]);
    v.extend(b"payload");
    v
}

#[test]
fn nginx_helper_sends_a_short_header_packet_to_the_socket_its_dcid_names() {
    let Some(p) = nginx() else { return };
    let g = group(4, nginx_program(p, &[(0x1111, 1), (0x2222, 3)]));
    for (key, want) in [(0x1111u64, 1u32), (0x2222, 3)] {
        let ctx = PacketCtx {
            payload: Some(Payload::Bytes(short_header(key))),
            ..PacketCtx::on_cpu(0)
        };
        assert_eq!(g.select_ctx(&tuple(), &ctx).unwrap().listener, Some(want));
    }
}

#[test]
fn nginx_helper_passes_unknown_keys_short_dcids_and_runts_to_the_hash() {
    let Some(p) = nginx() else { return };
    let g = group(4, nginx_program(p, &[(0x1111, 1)]));
    let hash = group(4, Program::Pass);
    // A key not in the map (-ENOENT: SK_PASS, no selection); a long header
    // with a 4-byte DCID (len < 8: SK_PASS); a 1-byte datagram (runs out
    // of data: SK_PASS).
    let long_short_dcid = vec![0xc0, 0, 0, 0, 1, 4, 1, 2, 3, 4, 0, 0, 0, 0];
    for payload in [short_header(0x9999), long_short_dcid, vec![0x40]] {
        let ctx = PacketCtx {
            payload: Some(Payload::Bytes(payload.clone())),
            ..PacketCtx::on_cpu(0)
        };
        let e = g.explain_ctx(&tuple(), &ctx).unwrap();
        let Pick::Program { outcome, .. } = &e.pick else {
            panic!("{:?}", e.pick)
        };
        assert_eq!(
            *outcome,
            ProgramOutcome::PassSelectedNothing,
            "{payload:02x?}"
        );
        assert_eq!(
            g.select_ctx(&tuple(), &ctx).unwrap().listener,
            hash.select_ctx(&tuple(), &ctx).unwrap().listener
        );
    }
}

#[test]
fn nginx_helper_without_its_map_definition_is_refused_naming_the_map() {
    let Some(p) = nginx() else { return };
    let Program::Ebpf { program, maps, .. } = nginx_program(p, &[]) else {
        unreachable!()
    };
    let g = group(
        2,
        Program::Ebpf {
            program,
            maps,
            extra_maps: vec![],
            seed: 0,
            cookies: Vec::new(),
        },
    );
    let ctx = PacketCtx {
        payload: Some(Payload::Bytes(short_header(1))),
        ..PacketCtx::on_cpu(0)
    };
    let e = g.select_ctx(&tuple(), &ctx).unwrap_err();
    assert_eq!(
        e,
        SetupError::EbpfInput {
            why: ebpf::MapRefusal::ExternUndefined {
                map: "ngx_quic_sockmap".into()
            }
        }
    );
}

/// A TCP group of four on 127.0.0.1 on 6.18 with `program`, in the four
/// phases of `agent/tests/sockarray_relisten.rs`: before, after shutdown()
/// of listener 2, after it listens again, after `refill` (user space
/// putting it back, as a new attach of the same program) when given.
fn relisten_phases(program: Program, refill: Option<Program>, ctx: &PacketCtx) -> Vec<Option<u32>> {
    let profile = reuseport_model::profile::Profile::named("6.18").unwrap();
    let spec = GroupSpec {
        program: Some(program),
        ..GroupSpec::new(
            Proto::Tcp,
            4,
            Ipv4Addr::LOCALHOST.into(),
            4242,
            Keys::default(),
        )
    };
    let mut g = ReuseportGroup::build(profile, &spec).unwrap();
    let pick = |g: &ReuseportGroup| g.select_ctx(&tuple(), ctx).unwrap().listener;
    let mut out = vec![pick(&g)];
    g.shutdown(2).unwrap();
    out.push(pick(&g));
    g.relisten(2).unwrap();
    out.push(pick(&g));
    if let Some(p) = refill {
        g.attach_program(p).unwrap();
        out.push(pick(&g));
    }
    out
}

/// A hand-assembled fixture (tests/fixtures/ebpf/NAME.json) with socket i
/// at key i of its one map, for `keys` keys.
fn hand_fixture(name: &str, keys: u32) -> Program {
    let path = format!(
        "{}/../../tests/fixtures/ebpf/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let program: EbpfProgram =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let fill = MapFill {
        map: program.maps[0].name.clone(),
        entries: (0..keys)
            .map(|i| (MapKey::Num(i as u64), MapValue::Socket { socket: i }))
            .collect(),
    };
    Program::ebpf(program, vec![fill], vec![])
}

fn select_key_2_or_drop(keys: u32) -> Program {
    hand_fixture("select_key_2_or_drop", keys)
}

#[test]
fn a_sockarray_entry_stays_gone_after_shutdown_and_listen_again() {
    // The kernel clears a listener's REUSEPORT_SOCKARRAY entry as it leaves
    // the group (bpf_sk_reuseport_detach, kernel/bpf/reuseport_array.c,
    // from reuseport_detach_sock, net/core/sock_reuseport.c) and listening
    // again does not restore it. Linux 6.18.44 with this program
    // (agent/tests/sockarray_relisten.rs, 2026-11-28): accepted on socket
    // 2, refused, refused, and on socket 2 once user space puts it back.
    let phases = relisten_phases(
        select_key_2_or_drop(4),
        Some(select_key_2_or_drop(4)),
        &PacketCtx::on_cpu(0),
    );
    assert_eq!(phases, [Some(2), None, None, Some(2)]);
}

#[test]
fn the_selftest_style_sockarray_loses_a_relistened_socket_too() {
    // The same kernel rule for the built-in program of the selftest's
    // shape (key = the first payload word, a TCP Fast Open SYN here):
    // after the re-listen, key 2 holds nothing and the packet is dropped.
    let prog = Program::SockArray {
        sockarray: vec![0, 1, 2, 3],
        pass_on_failure: false,
    };
    let phases = relisten_phases(prog.clone(), Some(prog), &PacketCtx::with_word(0, 2));
    assert_eq!(phases, [Some(2), None, None, Some(2)]);
}

#[test]
fn a_sockmap_entry_of_a_member_that_left_on_connect_answers_einval() {
    // From 6.13 a UDP member with a specific address leaves its group as it
    // connects; a SOCKMAP keeps it (only unhashing drops it, sock_map_unhash,
    // net/core/sock_map.c) and sk_select_reuseport (net/core/filter.c)
    // answers -EINVAL for a socket in no group: "return is_sockarray ?
    // -ENOENT : -EINVAL". The fixture passes to the hash on -EINVAL only.
    // Linux 6.18.44 (agent/tests/sockarray_relisten.rs, 2026-11-28): the
    // datagram was dropped before the connect and delivered after it.
    let spec = GroupSpec {
        program: Some(hand_fixture("sockmap_key_2_pass_on_einval", 4)),
        ..GroupSpec::new(
            Proto::Udp,
            4,
            Ipv4Addr::LOCALHOST.into(),
            4242,
            Keys::default(),
        )
    };
    let profile = reuseport_model::profile::Profile::named("6.18").unwrap();
    let mut g = ReuseportGroup::build(profile, &spec).unwrap();
    let ctx = PacketCtx::on_cpu(0);
    assert_eq!(g.select_ctx(&tuple(), &ctx).unwrap().listener, None);
    g.connect(2).unwrap();
    assert!(g.select_ctx(&tuple(), &ctx).unwrap().listener.is_some());
    let Pick::Program { ebpf_run, .. } = g.explain_ctx(&tuple(), &ctx).unwrap().pick else {
        panic!("the program decides");
    };
    assert_eq!(ebpf_run.unwrap().calls[0].result, "-EINVAL");
}
