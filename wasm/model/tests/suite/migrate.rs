//! The SELECT_OR_MIGRATE path (5.14+): what `reuseport_migrate_sock`
//! (net/core/sock_reuseport.c) does with the children and requests of a
//! listener that is shut down, with the kernel selftests' own program
//! (`test_migrate_reuseport.c`, tests/fixtures/ebpf/) compiled by clang at
//! test time. Expected values are read off the C source: the program
//! passes a SYN to the hash, looks the closing listener's cookie up in
//! `migrate_map`, drops when it is absent, selects `reuseport_map[key]`,
//! and passes to the hash when that selection fails.
//! `reuseport-agent verify --migrate FILE` holds the same against the
//! live kernel.

use std::net::Ipv4Addr;

use reuseport_model::explain::Pick;
use reuseport_model::message::{ProgramOutcome, ResetReason};
use reuseport_model::reuseport::ebpf::{
    self, EbpfProgram, MapFill, MapKey, MapValue, MigrateStage, ProgKind,
};
use reuseport_model::reuseport::{Migration, PacketCtx, Program};
use reuseport_model::{GroupSpec, Keys, Profile, Proto, ReuseportGroup, SetupError, Tuple};

const PORT: u16 = 8888;
const N: u32 = 5;

/// The cookie the test says user space read for listener `l`.
fn cookie(l: u32) -> u64 {
    0x1000 + l as u64
}

use crate::common;

fn compile() -> Option<EbpfProgram> {
    let bytes = common::compile_fixture("test_migrate_reuseport.c", &[])?;
    let obj = ebpf::read(&bytes).expect("the reader takes the selftest object");
    let prog = obj
        .programs
        .into_iter()
        .find(|p| p.name == "migrate_reuseport")
        .expect("the sk_reuseport/migrate program");
    assert_eq!(prog.kind, Some(ProgKind::SkReuseportMigrate));
    Some(prog)
}

/// The selftest's user space (prog_tests/migrate_reuseport.c): socket i at
/// key i of `reuseport_map`; `migrate_map` sends each listening cookie in
/// `routes` to a key.
fn program(prog: &EbpfProgram, routes: &[(u32, u32)]) -> Program {
    Program::Ebpf {
        program: prog.clone(),
        maps: vec![
            MapFill {
                map: "reuseport_map".into(),
                entries: (0..N)
                    .map(|i| (MapKey::Num(i as u64), MapValue::Socket { socket: i }))
                    .collect(),
            },
            MapFill {
                map: "migrate_map".into(),
                entries: routes
                    .iter()
                    .map(|&(from, key)| (MapKey::Num(cookie(from)), MapValue::Num(key as u64)))
                    .collect(),
            },
        ],
        extra_maps: Vec::new(),
        seed: 0,
        cookies: (0..N).map(|l| (l, cookie(l))).collect(),
    }
}

fn group(
    release: &str,
    program: Option<Program>,
    migrate_req: bool,
    shut: &[u32],
) -> ReuseportGroup {
    let spec = GroupSpec {
        program,
        tcp_migrate_req: migrate_req,
        shutdown: shut.to_vec(),
        ..GroupSpec::new(
            Proto::Tcp,
            N,
            Ipv4Addr::LOCALHOST.into(),
            PORT,
            Keys {
                v4: 0x5eed_1234,
                ..Keys::default()
            },
        )
    };
    ReuseportGroup::build(Profile::named(release).unwrap(), &spec).expect("a group")
}

fn client(i: u32) -> Tuple {
    Tuple::v4(
        Ipv4Addr::new(127, 0, 0, 1),
        40000 + i as u16,
        Ipv4Addr::LOCALHOST,
        PORT,
    )
}

fn scale(h: u32, n: u32) -> u32 {
    ((h as u64 * n as u64) >> 32) as u32
}

/// The .bss counters after a run: `migrated_at_close`, `_close_fastopen`,
/// `_send_synack`, `_recv_ack` (declaration order, offsets 0, 4, 8, 12 in
/// the object clang writes).
fn counters(run: &ebpf::EbpfRun) -> [u32; 4] {
    let fills = run.maps_after.as_ref().expect("maps after").to_fills();
    let bss = fills.iter().find(|f| f.map == ".bss").expect(".bss");
    let MapValue::Hex(h) = &bss.entries[0].1 else {
        panic!("bytes")
    };
    let b: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    std::array::from_fn(|k| u32::from_le_bytes(b[4 * k..4 * k + 4].try_into().unwrap()))
}

#[test]
fn migrate_reuseport_moves_each_child_to_the_listener_its_cookie_names() {
    // Listener 0 shuts down with the sysctl off: the program's attach type
    // alone keeps it in the closed tail, and each child goes to
    // reuseport_map[migrate_map[cookie(0)]] = socket 4.
    let Some(prog) = compile() else { return };
    let g = group("6.18", Some(program(&prog, &[(0, 4)])), false, &[0]);
    assert_eq!(g.sock_array().unwrap().num_closed_socks(), 1);
    for i in 0..25 {
        let r = g
            .migrate_run(0, &client(i), MigrateStage::AcceptQueue, 0)
            .unwrap();
        assert!(
            matches!(
                r.migration,
                Migration::To {
                    listener: 4,
                    by_program: true,
                    ..
                }
            ),
            "{:?}",
            r.migration
        );
        let run = r.ebpf_run.expect("the program ran");
        let cookie_call = run
            .calls
            .iter()
            .find(|c| c.helper == "bpf_get_socket_cookie")
            .expect("the cookie of sk");
        assert_eq!(cookie_call.result, cookie(0).to_string());
        // migrating_sk->state is BPF_TCP_ESTABLISHED: migrated_at_close.
        assert_eq!(counters(&run), [1, 0, 0, 0]);
    }
}

#[test]
fn a_request_on_the_synack_timer_has_no_skb_so_len_is_zero() {
    // reqsk_timer_handler passes skb NULL; reuseport_migrate_sock runs the
    // program on alloc_skb(0): state NEW_SYN_RECV and len 0 count
    // migrated_at_send_synack. On the final ACK, len is the ACK's, which
    // the model does not hold: it says so rather than guess.
    let Some(prog) = compile() else { return };
    let g = group("6.18", Some(program(&prog, &[(0, 3)])), false, &[0]);
    let r = g
        .migrate_run(0, &client(1), MigrateStage::SynAckTimer, 0)
        .unwrap();
    assert!(matches!(r.migration, Migration::To { listener: 3, .. }));
    assert_eq!(counters(&r.ebpf_run.unwrap()), [0, 0, 1, 0]);
    match g.migrate_run(0, &client(1), MigrateStage::FinalAck, 0) {
        Err(SetupError::EbpfUndecided {
            end: ebpf::EbpfEnd::Unknown { what, .. },
        }) => assert_eq!(*what, ebpf::EbpfUnknown::FinalAckLen),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_cookie_missing_from_migrate_map_is_sk_drop_and_the_child_is_reset() {
    // `if (!key) return SK_DROP;`: ERR_PTR(-ECONNREFUSED), no hash fallback,
    // even with the sysctl on.
    let Some(prog) = compile() else { return };
    for sysctl in [false, true] {
        let g = group("6.18", Some(program(&prog, &[(0, 4)])), sysctl, &[1]);
        assert_eq!(
            g.migrate(1, &client(7), MigrateStage::AcceptQueue, 0)
                .unwrap(),
            Migration::Reset {
                reason: ResetReason::ProgramDropped
            }
        );
    }
}

#[test]
fn a_selection_of_a_closed_listener_fails_and_sk_pass_falls_back_to_the_hash() {
    // Listener 2's cookie names key 0, but listener 0 is shut down too: the
    // sockarray no longer holds it (bpf_sk_reuseport_detach), the helper
    // returns -ENOENT, the program returns SK_PASS without a selection, and
    // select by hash over the listening members decides (with the sysctl off).
    let Some(prog) = compile() else { return };
    let g = group("6.18", Some(program(&prog, &[(2, 0)])), false, &[0, 2]);
    let listening = g.listening().to_vec();
    assert_eq!(listening.len(), 3);
    for i in 0..40 {
        let r = g
            .migrate_run(2, &client(i), MigrateStage::AcceptQueue, 0)
            .unwrap();
        let Migration::To {
            listener,
            hash,
            by_program: false,
            ..
        } = r.migration
        else {
            panic!("{:?}", r.migration)
        };
        assert_eq!(listener, listening[scale(hash, 3) as usize]);
        let run = r.ebpf_run.unwrap();
        let sel = run
            .calls
            .iter()
            .find(|c| c.helper == "bpf_sk_select_reuseport")
            .unwrap();
        assert_eq!(sel.result, "-ENOENT");
    }
}

#[test]
fn a_syn_sees_no_migrating_sk_and_the_program_passes_it_to_the_hash() {
    let Some(prog) = compile() else { return };
    let g = group("6.18", Some(program(&prog, &[(0, 4)])), false, &[]);
    let e = g.explain_ctx(&client(3), &PacketCtx::on_cpu(0)).unwrap();
    let Pick::Program { outcome, .. } = &e.pick else {
        panic!()
    };
    assert_eq!(*outcome, ProgramOutcome::PassSelectedNothing);
}

#[test]
fn without_a_migrate_program_the_sysctl_decides_and_a_select_program_does_not_run() {
    // reuseport_migrate_sock: no program, or one loaded with
    // BPF_SK_REUSEPORT_SELECT, means select by hash if tcp_migrate_req is
    // 1, and reset if 0 (the listener did not even stay in the group).
    let Some(prog) = compile() else { return };
    let select_only = match program(&prog, &[(0, 4)]) {
        Program::Ebpf {
            program,
            maps,
            extra_maps,
            seed,
            cookies,
        } => Program::Ebpf {
            program: EbpfProgram {
                kind: Some(ProgKind::SkReuseport),
                ..program
            },
            maps,
            extra_maps,
            seed,
            cookies,
        },
        _ => unreachable!(),
    };
    for p in [None, Some(select_only)] {
        let off = group("6.18", p.clone(), false, &[0]);
        assert_eq!(off.sock_array().unwrap().num_closed_socks(), 0);
        assert_eq!(
            off.migrate(0, &client(2), MigrateStage::AcceptQueue, 0)
                .unwrap(),
            Migration::Reset {
                reason: ResetReason::MigrateReqOff
            }
        );
        let on = group("6.18", p, true, &[0]);
        let r = on
            .migrate_run(0, &client(2), MigrateStage::AcceptQueue, 0)
            .unwrap();
        assert!(r.ebpf_run.is_none());
        assert!(matches!(
            r.migration,
            Migration::To {
                by_program: false,
                ..
            }
        ));
    }
}

#[test]
fn before_5_14_nothing_migrates_and_the_verifier_refuses_migrating_sk() {
    // 5.10 loads an SK_REUSEPORT program whatever its expected attach type
    // (bpf_prog_load_check_attach has no SK_REUSEPORT case before 5.14,
    // kernel/bpf/syscall.c), but sk_reuseport_md ends at `hash`: a read of
    // migrating_sk is refused. There is no closed tail and no migration.
    let Some(prog) = compile() else { return };
    let g = group("5.10", Some(program(&prog, &[(0, 4)])), false, &[0]);
    assert!(matches!(
        g.migrate(0, &client(2), MigrateStage::AcceptQueue, 0)
            .unwrap(),
        Migration::Reset {
            reason: ResetReason::NoMigration { .. }
        }
    ));
    match g.explain_ctx(&client(2), &PacketCtx::on_cpu(0)) {
        Err(SetupError::EbpfUndecided {
            end: ebpf::EbpfEnd::Fault { why, .. },
        }) => assert!(
            matches!(*why, ebpf::EbpfFault::CtxFieldBefore514 { .. }),
            "{why:?}"
        ),
        other => panic!("{other:?}"),
    }
}
