//! Classic BPF programs of the user's own: the kernel's refusals
//! (net/core/filter.c `bpf_check_classic`), the run on a packet
//! (`run_bpf_filter`, the converted program's rules), the text forms, and a
//! program inside a group and a call log. Expected values are counted by
//! hand from the instructions; `reuseport-agent verify --programs` holds
//! the same rules against the live kernel.

use std::net::Ipv4Addr;

use reuseport_model::lookup::{CallLog, Host};
use reuseport_model::message::RefusalRule;
use reuseport_model::profile::Profile;
use reuseport_model::reuseport::cbpf::{
    self, check, parse, AncInputs, Ancillary, CheckError, End, Input, Insn, Unknown,
};
use reuseport_model::reuseport::{PacketCtx, Payload, Program};
use reuseport_model::{GroupSpec, Keys, Proto, ReuseportGroup, SetupError, Tuple};

fn s(code: u16, k: u32) -> Insn {
    Insn::stmt(code, k)
}

fn j(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
    Insn::jump(code, k, jt, jf)
}

const RET_A: u16 = 0x16;
const RET_K: u16 = 0x06;

fn run_on(insns: &[Insn], payload: &[u8]) -> End {
    let anc = AncInputs::default();
    let input = Input {
        payload,
        proto: Proto::Udp,
        ipv6: false,
        cpu: 3,
        anc: &anc,
    };
    cbpf::run(insns, &input).end
}

fn ret(v: u32) -> End {
    End::Returned { value: v }
}

#[test]
fn the_checker_refuses_each_rule_it_has_and_names_the_instruction() {
    let ok = s(RET_K, 0);
    assert_eq!(check(&[]), Err(CheckError::Length { len: 0 }));
    assert_eq!(
        check(&vec![ok; 4097]),
        Err(CheckError::Length { len: 4097 })
    );
    assert_eq!(check(&vec![ok; 4096]), Ok(()));
    // BPF_ALU|BPF_NEG|BPF_X (0x8c) is not in the kernel's table.
    assert_eq!(
        check(&[s(0x8c, 0), ok]),
        Err(CheckError::Opcode { pc: 0, code: 0x8c })
    );
    assert_eq!(check(&[s(0x34, 0), ok]), Err(CheckError::DivZero { pc: 0 }));
    assert_eq!(check(&[s(0x94, 0), ok]), Err(CheckError::DivZero { pc: 0 }));
    // Division by X is checked at run time, not here.
    assert_eq!(check(&[s(0x3c, 0), ok]), Ok(()));
    assert_eq!(
        check(&[s(0x64, 32), ok]),
        Err(CheckError::Shift { pc: 0, k: 32 })
    );
    assert_eq!(check(&[s(0x74, 31), ok]), Ok(()));
    assert_eq!(
        check(&[s(0x02, 16), ok]),
        Err(CheckError::MemCell { pc: 0, k: 16 })
    );
    // JA 1 from the second-to-last instruction lands one past the end.
    assert_eq!(check(&[s(0x05, 1), ok]), Err(CheckError::JumpOut { pc: 0 }));
    assert_eq!(check(&[s(0x05, 0), ok]), Ok(()));
    assert_eq!(
        check(&[j(0x15, 0, 0, 1), ok]),
        Err(CheckError::JumpOut { pc: 0 })
    );
    // SKF_AD_OFF + 64 is SKF_AD_MAX; + 2 is between two fields.
    let ad = cbpf::SKF_AD_OFF;
    assert_eq!(
        check(&[s(0x20, ad + 64), ok]),
        Err(CheckError::Ancillary { pc: 0, k: ad + 64 })
    );
    assert_eq!(
        check(&[s(0x30, ad + 2), ok]),
        Err(CheckError::Ancillary { pc: 0, k: ad + 2 })
    );
    assert_eq!(check(&[s(0x30, ad + 36), ok]), Ok(()));
    assert_eq!(check(&[s(0x00, 1)]), Err(CheckError::NoRet));
    assert_eq!(
        check(&[s(0x60, 2), ok]),
        Err(CheckError::MemUnset { pc: 0, k: 2 })
    );
    // Written on one branch only: refused at the join.
    let one_branch = [
        j(0x15, 0, 0, 1), // jeq #0, +0, +1
        s(0x02, 5),       // st M[5]
        s(0x60, 5),       // ld M[5]
        ok,
    ];
    assert_eq!(
        check(&one_branch),
        Err(CheckError::MemUnset { pc: 2, k: 5 })
    );
    let both = [s(0x02, 5), j(0x15, 0, 0, 0), s(0x60, 5), ok];
    assert_eq!(check(&both), Ok(()));
}

#[test]
fn loads_read_the_payload_big_endian_and_past_its_end_return_0() {
    let p = [0x12, 0x34, 0x56, 0x78, 0x9a];
    assert_eq!(run_on(&[s(0x20, 0), s(RET_A, 0)], &p), ret(0x1234_5678));
    assert_eq!(run_on(&[s(0x28, 3), s(RET_A, 0)], &p), ret(0x789a));
    assert_eq!(run_on(&[s(0x30, 4), s(RET_A, 0)], &p), ret(0x9a));
    // A word at 2 needs bytes 2..6: one past the end.
    let past = run_on(&[s(0x20, 2), s(RET_K, 7)], &p);
    assert_eq!(
        past,
        End::LoadFailed {
            pc: 0,
            offset: 2,
            size: 4
        }
    );
    // ld [x + 1] with X = 3; len; ldx 4*([0]&0xf) = 4 * 2.
    assert_eq!(
        run_on(&[s(0x01, 3), s(0x48, 0), s(RET_A, 0)], &p),
        ret(0x789a)
    );
    assert_eq!(run_on(&[s(0x80, 0), s(RET_A, 0)], &p), ret(5));
    assert_eq!(run_on(&[s(0xb1, 0), s(0x87, 0), s(RET_A, 0)], &p), ret(8));
    // X + k wrapping to -1: below the network header's range start it is
    // SKF_NET_OFF + 0xfffff, far past the packet: the load fails.
    let neg = run_on(&[s(0x01, u32::MAX), s(0x50, 0), s(RET_K, 7)], &p);
    assert_eq!(
        neg,
        End::LoadFailed {
            pc: 1,
            offset: -1,
            size: 1
        }
    );
}

#[test]
fn alu_wraps_at_32_bits_shifts_by_x_take_its_low_5_bits_and_x_0_divides_to_0() {
    let p = [];
    // A = 0xffffffff + 2 = 1.
    assert_eq!(
        run_on(&[s(0x00, u32::MAX), s(0x04, 2), s(RET_A, 0)], &p),
        ret(1)
    );
    // A = 1 << (33 & 31) = 2.
    assert_eq!(
        run_on(&[s(0x00, 1), s(0x01, 33), s(0x6c, 0), s(RET_A, 0)], &p),
        ret(2)
    );
    // A = 0x80000000 >> (63 & 31) = 1.
    let rsh = [s(0x00, 0x8000_0000), s(0x01, 63), s(0x7c, 0), s(RET_A, 0)];
    assert_eq!(run_on(&rsh, &p), ret(1));
    // A / X with X = 0 ends the program with 0, whatever follows.
    let div = [s(0x00, 9), s(0x3c, 0), s(RET_K, 5)];
    assert_eq!(run_on(&div, &p), End::DivByZero { pc: 1 });
    assert_eq!(
        run_on(&[s(0x00, 9), s(0x9c, 0), s(RET_K, 5)], &p),
        End::DivByZero { pc: 1 }
    );
    // neg, mod and xor.
    assert_eq!(
        run_on(&[s(0x00, 1), s(0x84, 0), s(RET_A, 0)], &p),
        ret(u32::MAX)
    );
    assert_eq!(
        run_on(&[s(0x00, 17), s(0x94, 5), s(0xa4, 6), s(RET_A, 0)], &p),
        ret(4)
    );
}

#[test]
fn jumps_compare_unsigned_and_scratch_cells_keep_values() {
    let p = [];
    // 0x80000000 > 1 unsigned: takes jt to ret #1.
    let jgt = [
        s(0x00, 0x8000_0000),
        j(0x25, 1, 0, 1),
        s(RET_K, 1),
        s(RET_K, 2),
    ];
    assert_eq!(run_on(&jgt, &p), ret(1));
    // jset #4 on 3: false.
    let jset = [s(0x00, 3), j(0x45, 4, 0, 1), s(RET_K, 1), s(RET_K, 2)];
    assert_eq!(run_on(&jset, &p), ret(2));
    // st M[3]; ld #0; ldx M[3]; txa; ret a.
    let mem = [
        s(0x00, 42),
        s(0x02, 3),
        s(0x00, 0),
        s(0x61, 3),
        s(0x87, 0),
        s(RET_A, 0),
    ];
    assert_eq!(run_on(&mem, &p), ret(42));
    // ja +1 skips ret #1.
    assert_eq!(run_on(&[s(0x05, 1), s(RET_K, 1), s(RET_K, 2)], &p), ret(2));
}

#[test]
fn ancillary_loads_the_model_knows_and_those_it_must_be_given() {
    let p = [1, 2];
    let anc = |a: Ancillary| [s(0x20, a.k()), s(RET_A, 0)];
    assert_eq!(run_on(&anc(Ancillary::Cpu), &p), ret(3));
    // A byte-sized load of SKF_AD_CPU loads the whole value all the same.
    assert_eq!(
        run_on(&[s(0x30, Ancillary::Cpu.k()), s(RET_A, 0)], &p),
        ret(3)
    );
    assert_eq!(run_on(&anc(Ancillary::Protocol), &p), ret(0x0800));
    assert_eq!(run_on(&anc(Ancillary::Queue), &p), ret(0));
    assert_eq!(run_on(&anc(Ancillary::Ifindex), &p), ret(1));
    assert_eq!(run_on(&anc(Ancillary::Hatype), &p), ret(772));
    assert_eq!(
        run_on(&anc(Ancillary::Rxhash), &p),
        End::Unknown {
            pc: 0,
            what: Unknown::Ancillary {
                field: Ancillary::Rxhash
            }
        }
    );
    let given = AncInputs {
        rxhash: Some(77),
        ..AncInputs::default()
    };
    let input = Input {
        payload: &p,
        proto: Proto::Udp,
        ipv6: true,
        cpu: 0,
        anc: &given,
    };
    assert_eq!(cbpf::run(&anc(Ancillary::Rxhash), &input).end, ret(77));
    assert_eq!(
        cbpf::run(&anc(Ancillary::Protocol), &input).end,
        ret(0x86dd)
    );
}

#[test]
fn network_header_loads_reach_the_payload_after_the_ip_and_udp_headers() {
    // IPv4 20 + UDP 8 bytes: SKF_NET_OFF + 28 is payload byte 0.
    let net = cbpf::SKF_NET_OFF as u32;
    let p = [0xab, 0xcd];
    assert_eq!(run_on(&[s(0x30, net + 29), s(RET_A, 0)], &p), ret(0xcd));
    assert_eq!(
        run_on(&[s(0x30, net + 9), s(RET_A, 0)], &p),
        End::Unknown {
            pc: 0,
            what: Unknown::NetworkHeader { offset: 9 }
        }
    );
    let past = run_on(&[s(0x30, net + 30), s(RET_A, 0)], &p);
    assert!(matches!(past, End::LoadFailed { pc: 0, .. }), "{past:?}");
}

#[test]
fn netlink_attribute_search_finds_the_type_in_host_order() {
    // Two attributes: len 5 type 1 (padded to 8), len 4 type 7.
    let p = [5, 0, 1, 0, 0xee, 0, 0, 0, 4, 0, 7, 0];
    let find = |x: u32| {
        [
            s(0x00, 0),
            s(0x01, x),
            s(0x20, Ancillary::Nlattr.k()),
            s(RET_A, 0),
        ]
    };
    assert_eq!(run_on(&find(7), &p), ret(8));
    assert_eq!(run_on(&find(1), &p), ret(0));
    assert_eq!(run_on(&find(9), &p), ret(0));
}

fn group(program: Program) -> ReuseportGroup {
    let spec = GroupSpec {
        program: Some(program),
        ..GroupSpec::new(
            Proto::Udp,
            4,
            Ipv4Addr::LOCALHOST.into(),
            9000,
            Keys::default(),
        )
    };
    ReuseportGroup::build(Profile::named("6.12").unwrap(), &spec).unwrap()
}

fn tuple(sport: u16) -> Tuple {
    Tuple::v4(Ipv4Addr::LOCALHOST, sport, Ipv4Addr::LOCALHOST, 9000)
}

#[test]
fn reuseport_bpf_c_classic_program_sends_data_mod_n_to_index_data_mod_n() {
    // tools/testing/selftests/net/reuseport_bpf.c attach_cbpf: A = payload
    // word 0; A %= mod; ret A. With 4 sockets and mod 4, datagram k lands
    // on socks[k % 4].
    let insns = vec![s(0x20, 0), s(0x94, 4), s(RET_A, 0)];
    let g = group(Program::Cbpf { insns });
    for k in 0..16u32 {
        let c = g
            .select_ctx(&tuple(20000 + k as u16), &PacketCtx::with_word(0, k))
            .unwrap();
        assert_eq!(c.slot, Some(k % 4), "datagram {k}");
    }
}

#[test]
fn an_index_out_of_range_falls_back_to_the_hash_from_4_16() {
    let g = group(Program::Cbpf {
        insns: vec![s(RET_K, 9)],
    });
    let plain = group(Program::Index { index: 9 });
    for sport in 20000..20050 {
        let ctx = PacketCtx::on_cpu(0);
        let a = g.select_ctx(&tuple(sport), &ctx).unwrap();
        let b = plain.select_ctx(&tuple(sport), &ctx).unwrap();
        assert_eq!(a, b, "sport {sport}");
    }
}

#[test]
fn a_program_reading_what_the_model_lacks_is_an_error_naming_it() {
    let g = group(Program::Cbpf {
        insns: vec![s(0x20, Ancillary::Random.k()), s(RET_A, 0)],
    });
    let e = g.select_ctx(&tuple(1), &PacketCtx::on_cpu(0)).unwrap_err();
    assert!(
        matches!(e, SetupError::ProgramReadsUnknown { pc: 0, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("SKF_AD_RANDOM"), "{e}");
    let ctx = PacketCtx {
        anc: AncInputs {
            random: Some(6),
            ..AncInputs::default()
        },
        ..PacketCtx::on_cpu(0)
    };
    // 6 is out of range for 4 sockets; 2 with the payload bytes below.
    assert!(g.select_ctx(&tuple(1), &ctx).is_ok());
    let g2 = group(Program::Cbpf {
        insns: vec![s(0x30, 1), s(RET_A, 0)],
    });
    let bytes = PacketCtx {
        payload: Some(Payload::Bytes(vec![9, 2])),
        ..PacketCtx::on_cpu(0)
    };
    assert_eq!(g2.select_ctx(&tuple(1), &bytes).unwrap().slot, Some(2));
}

#[test]
fn the_explain_record_carries_the_run() {
    let g = group(Program::Cbpf {
        insns: vec![s(0x20, 0), s(0x94, 4), s(RET_A, 0)],
    });
    let e = g
        .explain_ctx(&tuple(1), &PacketCtx::with_word(0, 7))
        .unwrap();
    let reuseport_model::explain::Pick::Program { run: Some(run), .. } = e.pick else {
        panic!("{:?}", e.pick)
    };
    let pcs: Vec<u32> = run.steps.iter().map(|s| s.pc).collect();
    assert_eq!(pcs, [0, 1, 2]);
    assert_eq!((run.steps[0].a, run.steps[1].a), (7, 3));
    assert_eq!(run.end, ret(3));
}

#[test]
fn a_refused_attach_in_a_call_log_is_einval_and_the_old_program_stays() {
    let log = r#"{"calls": [
      {"call": "socket", "family": "inet", "proto": "udp"},
      {"call": "setsockopt", "fd": 0, "opt": {"reuseport": true}},
      {"call": "bind", "fd": 0, "addr": "127.0.0.1", "port": 9000},
      {"call": "socket", "family": "inet", "proto": "udp"},
      {"call": "setsockopt", "fd": 1, "opt": {"reuseport": true}},
      {"call": "bind", "fd": 1, "addr": "127.0.0.1", "port": 9000},
      {"call": "setsockopt", "fd": 0, "opt": {"attachReuseport": {"kind": "cbpf", "insns": [[6, 0, 0, 1]]}}},
      {"call": "setsockopt", "fd": 0, "opt": {"attachReuseport": {"kind": "cbpf", "insns": [[52, 0, 0, 0], [6, 0, 0, 0]]}}},
      {"call": "socket", "family": "inet", "proto": "udp"},
      {"call": "bind", "fd": 2, "addr": "127.0.0.1", "port": 9001},
      {"call": "setsockopt", "fd": 2, "opt": {"attachReuseport": {"kind": "cbpf", "insns": [[6, 0, 0, 0]]}}}
    ]}"#;
    let log: CallLog = serde_json::from_str(log).unwrap();
    let h = Host::run(Profile::named("6.12").unwrap(), &log).unwrap();
    let answers = h.answers();
    assert!(answers[6].is_none(), "{:?}", answers[6]);
    let refused = answers[7]
        .as_ref()
        .expect("division by constant 0 is refused");
    assert_eq!(refused.rule, RefusalRule::CbpfDivZero { pc: 0 });
    assert_eq!(refused.errno, reuseport_model::message::Errno::Einval);
    let no_reuseport = answers[10].as_ref().expect("no SO_REUSEPORT");
    assert_eq!(no_reuseport.rule, RefusalRule::ProgramNeedsReuseport);
    // The first program (ret #1) still runs: every datagram goes to fd 1.
    for sport in 20000..20020 {
        let pk = reuseport_model::lookup::Packet {
            proto: Proto::Udp,
            tuple: tuple(sport),
            device: None,
            ctx: PacketCtx::on_cpu(0),
        };
        assert_eq!(h.lookup(&pk).socket, Some(1), "sport {sport}");
    }
}

#[test]
fn bpf_asm_and_tcpdump_dd_and_decimal_forms_read_the_same_program() {
    let asm = "
        ; first payload word mod 4, or ret #7 on short packets
        ld len
        jlt #4, short
        ld [0]
        mod #4
        ret a
    short:
        ret #7
    ";
    let dd = "struct sock_filter code[] = {
        { 0x80, 0, 0, 0x00000000 },
        { 0x35, 0, 3, 0x00000004 },
        { 0x20, 0, 0, 0x00000000 },
        { 0x94, 0, 0, 0x00000004 },
        { 0x16, 0, 0, 0x00000000 },
        { 0x06, 0, 0, 0x00000007 },
    };";
    let ddd = "6\n128 0 0 0\n53 0 3 4\n32 0 0 0\n148 0 0 4\n22 0 0 0\n6 0 0 7\n";
    let a = parse(asm).unwrap();
    assert_eq!(a, parse(dd).unwrap());
    assert_eq!(a, parse(ddd).unwrap());
    assert_eq!(check(&a), Ok(()));
    assert_eq!(run_on(&a, &[0, 0, 0, 6]), ret(2));
    assert_eq!(run_on(&a, &[1]), ret(7));
    let cpu = parse("ld #cpu\nret a").unwrap();
    assert_eq!(cpu, [s(0x20, Ancillary::Cpu.k()), s(RET_A, 0)]);
}

#[test]
fn parse_errors_name_the_line() {
    let e = parse("ld [0]\nfrob #1\nret a").unwrap_err();
    assert_eq!(e.line, 2, "{e}");
    let e = parse("ld [0]\njeq #1, nowhere\nret a").unwrap_err();
    assert_eq!(e.line, 2, "{e}");
    let e = parse("back:\nld [0]\nja back\nret a").unwrap_err();
    assert_eq!(
        (e.line, e.to_string().contains("forward")),
        (3, true),
        "{e}"
    );
    let e = parse("{ 0x20, 0, 0, 0 },\n{ 0x16, 0, 300, 0 },").unwrap_err();
    assert_eq!(e.line, 2, "{e}");
    let e = parse("{ 0x20, 0, 0 },").unwrap_err();
    assert_eq!(e.line, 1, "{e}");
}

#[test]
fn a_program_is_json_data_with_the_kernel_array() {
    let p: Program =
        serde_json::from_str(r#"{"kind": "cbpf", "insns": [[32, 0, 0, 0], [22, 0, 0, 0]]}"#)
            .unwrap();
    assert_eq!(
        p,
        Program::Cbpf {
            insns: vec![s(0x20, 0), s(RET_A, 0)]
        }
    );
    assert_eq!(
        serde_json::to_string(&p).unwrap(),
        r#"{"kind":"cbpf","insns":[[32,0,0,0],[22,0,0,0]]}"#
    );
    let bad = serde_json::from_str::<Program>(r#"{"kind": "cbpf", "insns": [[32, 0, 256, 0]]}"#);
    assert!(bad.is_err());
    let ctx: PacketCtx = serde_json::from_str(r#"{"cpu": 1, "payload": [1, 2, 3]}"#).unwrap();
    assert_eq!(ctx.payload, Some(Payload::Bytes(vec![1, 2, 3])));
    let ctx: PacketCtx = serde_json::from_str(r#"{"cpu": 1, "payload": 5}"#).unwrap();
    assert_eq!(ctx.payload, Some(Payload::Word(5)));
}

fn fixture(name: &str) -> Vec<Insn> {
    let path = format!(
        "{}/../../tests/fixtures/cbpf/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    parse(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[test]
fn the_selftests_programs_route_as_the_selftests_expect() {
    // reuseport_bpf.c test_recv_order: with 10 sockets, datagram `data`
    // (its 4 bytes big-endian) lands on socket data % 10; after the
    // re-attach with mod 5, on data % 5.
    for (file, m) in [("reuseport_bpf-mod10.dd", 10), ("reuseport_bpf-mod5.dd", 5)] {
        let spec = GroupSpec {
            program: Some(Program::Cbpf {
                insns: fixture(file),
            }),
            ..GroupSpec::new(
                Proto::Udp,
                10,
                Ipv4Addr::UNSPECIFIED.into(),
                8001,
                Keys::default(),
            )
        };
        let g = ReuseportGroup::build(Profile::named("6.12").unwrap(), &spec).unwrap();
        for data in 0..20u32 {
            let t = Tuple::v4(
                Ipv4Addr::LOCALHOST,
                9020 + data as u16,
                Ipv4Addr::LOCALHOST,
                8001,
            );
            let c = g.select_ctx(&t, &PacketCtx::with_word(0, data)).unwrap();
            assert_eq!(c.slot, Some(data % m), "{file} data {data}");
        }
    }
    // reuseport_bpf_cpu.c: the datagram lands on the socket of its CPU.
    let spec = GroupSpec {
        program: Some(Program::Cbpf {
            insns: fixture("reuseport_bpf_cpu.dd"),
        }),
        ..GroupSpec::new(
            Proto::Udp,
            4,
            Ipv4Addr::UNSPECIFIED.into(),
            8888,
            Keys::default(),
        )
    };
    let g = ReuseportGroup::build(Profile::named("6.12").unwrap(), &spec).unwrap();
    for cpu in 0..4 {
        let t = Tuple::v4(Ipv4Addr::LOCALHOST, 4000, Ipv4Addr::LOCALHOST, 8888);
        assert_eq!(
            g.select_ctx(&t, &PacketCtx::on_cpu(cpu)).unwrap().slot,
            Some(cpu)
        );
    }
}
