//! `predict`'s unit tests: the options, the group shorthand, line errors.
use std::cell::RefCell;
use std::rc::Rc;

use clap::Parser;
use serde_json::Value;

use super::*;
use crate::{Cli, Command};

fn args(argv: &str) -> PredictArgs {
    let argv = std::iter::once("reuseport-agent")
        .chain(std::iter::once("predict"))
        .chain(argv.split_whitespace());
    match Cli::try_parse_from(argv).unwrap().command {
        Command::Predict(a) => a,
        _ => unreachable!("parsed a predict command line"),
    }
}

fn predict(argv: &str, input: &str) -> (Result<Outcome, Error>, Vec<Value>) {
    let mut out = Vec::new();
    let r = run(&args(argv), input.as_bytes(), &mut out);
    let text = String::from_utf8(out).unwrap();
    (
        r,
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    )
}

#[test]
fn a_program_file_and_payload_fields_route_each_datagram() {
    // ldb [1]; ret a: the second payload byte is the index.
    let dir = std::env::temp_dir().join(format!("predict-program-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("p.bpf");
    std::fs::write(&file, "; second byte\nldb [1]\nret a\n").unwrap();
    let argv = format!(
        "--kernel 6.12 --proto udp --listeners 4 --secret 0x1 --bind 127.0.0.1:53 --program {}",
        file.display()
    );
    let input = "127.0.0.9 4000 127.0.0.1 53 payload=0002\n\
                 127.0.0.9 4001 127.0.0.1 53 payload=ff03aa\n\
                 127.0.0.9 4002 127.0.0.1 53 payload=zz\n";
    let (r, v) = predict(&argv, input);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        r.unwrap(),
        Outcome {
            answered: 2,
            failed: 1
        }
    );
    assert_eq!(
        (v[0]["slot"].as_u64(), v[1]["slot"].as_u64()),
        (Some(2), Some(3))
    );
    assert!(
        v[2]["error"].as_str().unwrap().contains("payload"),
        "{}",
        v[2]
    );
}

#[test]
fn options_parse_into_the_spec() {
    let a = args("--kernel 6.18 --proto udp --listeners 4 --secret 0xabc --inner-secret 0x12 --closed 1,2 --closed 3 --connected 0 --incoming-cpu 0=1,2=3 --bind [::]:53 --v6only --cpu 2");
    let spec = a.spec("::".parse().unwrap(), 53);
    assert_eq!(spec.proto, Proto::Udp);
    assert_eq!(
        spec.keys,
        Keys {
            v4: 0xabc,
            v6_outer: 0xabc,
            v6_inner: 0x12
        }
    );
    assert_eq!(spec.closed, vec![1, 2, 3]);
    assert_eq!(spec.connected, vec![0]);
    assert_eq!(
        spec.incoming_cpu,
        vec![
            CpuPin {
                listener: 0,
                cpu: 1
            },
            CpuPin {
                listener: 2,
                cpu: 3
            }
        ]
    );
    assert_eq!(
        a.group.bind,
        Some(Bind {
            addr: "::".parse().unwrap(),
            port: Some(53)
        })
    );
    assert!(spec.v6only);
    assert_eq!(a.cpu, 2);
}

#[test]
fn bad_pins_and_secrets_are_usage_errors() {
    for bad in [
        "--incoming-cpu 1",
        "--incoming-cpu a=1",
        "--secret 0xZZ",
        "--secret 0x123456789",
    ] {
        let argv = format!("predict --kernel 6.18 --proto tcp --listeners 2 --secret 0x1 {bad}");
        let e =
            Cli::try_parse_from(std::iter::once("reuseport-agent").chain(argv.split_whitespace()))
                .unwrap_err();
        assert_eq!(e.exit_code(), 2, "{bad}");
    }
    assert!(pin_arg("x")
        .unwrap_err()
        .to_string()
        .contains("LISTENER=CPU"));
}

#[test]
fn blank_and_comment_lines_are_skipped_but_counted() {
    let (r, v) = predict(
        "--kernel 6.18 --proto tcp --listeners 8 --secret 0",
        "# header\n\n127.0.0.9 40000 127.0.0.1 8080\n",
    );
    assert_eq!(
        r.unwrap(),
        Outcome {
            answered: 1,
            failed: 0
        }
    );
    assert_eq!(v.len(), 1);
    assert_eq!(v[0]["line"], 3);
    assert_eq!(v[0]["tuple"], "127.0.0.9:40000 127.0.0.1:8080");
    assert_eq!(v[0]["profile"], "6.18");
}

#[test]
fn the_first_good_line_binds_the_group() {
    let input = "127.0.0.9 99999 127.0.0.1 8080\n\
                 [fd02::5]:1 [::1]:8080\n\
                 127.0.0.9 40000 127.0.0.2 9090\n\
                 127.0.0.9 40000 127.0.0.1 8080\n\
                 127.0.0.9 40001 127.0.0.2 9090\n";
    let (r, v) = predict("--kernel 6.18 --proto tcp --listeners 8 --secret 0", input);
    assert_eq!(
        r.unwrap(),
        Outcome {
            answered: 2,
            failed: 3
        }
    );
    assert!(v[0]["error"].as_str().unwrap().contains("source port"));
    assert!(v[1]["error"].as_str().unwrap().contains("--inner-secret"));
    assert!(
        v[2]["listener"].is_u64(),
        "line 3 binds the group to 127.0.0.2:9090"
    );
    assert!(v[3]["error"]
        .as_str()
        .unwrap()
        .contains("does not reach the group bound to 127.0.0.2 port 9090"));
    assert_eq!(v[4]["line"], 5);
    assert!(v[4]["listener"].is_u64());
}

#[test]
fn bind_without_port_takes_the_port_from_the_first_line() {
    let input = "10.0.0.2 1000 10.0.0.1 80\n10.0.0.2 1000 10.0.0.7 80\n10.0.0.2 1000 10.0.0.1 81\n";
    let (r, v) = predict(
        "--kernel 6.18 --proto udp --listeners 3 --secret 0x7 --bind 0.0.0.0",
        input,
    );
    assert_eq!(
        r.unwrap(),
        Outcome {
            answered: 2,
            failed: 1
        }
    );
    assert!(v[2]["error"].as_str().unwrap().contains("port 80"));
}

#[test]
fn an_impossible_group_is_refused_before_any_output() {
    for argv in [
        "--kernel 6.18 --proto tcp --listeners 0 --secret 0",
        "--kernel 6.18 --proto tcp --listeners 4 --secret 0 --closed 4",
        "--kernel 6.18 --proto tcp --listeners 2 --secret 0 --connected 1",
        "--kernel 6.12 --proto udp --listeners 2 --secret 0 --tcp-migrate-req",
        "--kernel 2.6 --proto tcp --listeners 2 --secret 0",
    ] {
        let (r, v) = predict(argv, "bad line\n127.0.0.9 40000 127.0.0.1 8080\n");
        assert!(r.is_err(), "{argv}");
        assert!(v.is_empty(), "{argv}");
    }
}

#[test]
fn explain_records_carry_the_line() {
    let (r, v) = predict(
        "--kernel 6.18 --proto tcp --listeners 8 --secret 0 --explain",
        "\n127.0.0.9 40000 127.0.0.1 8080\n",
    );
    assert_eq!(r.unwrap().answered, 1);
    assert_eq!(v[0]["line"], 2);
    assert_eq!(v[0]["listener"], v[0]["slot"]);
    assert_eq!(v[0]["group"]["listening"], 8);
    assert!(v[0]["hash"]["calls"].is_array());
}

#[test]
fn not_utf8_is_a_line_error() {
    let mut out = Vec::new();
    let r = run(
        &args("--kernel 6.18 --proto tcp --listeners 2 --secret 0"),
        &b"\xff\xfe 1 2 3\n"[..],
        &mut out,
    );
    assert_eq!(
        r.unwrap(),
        Outcome {
            answered: 0,
            failed: 1
        }
    );
    assert!(String::from_utf8(out).unwrap().contains("not UTF-8"));
}

/// The output side of a pipe: what has been written through so far.
#[derive(Clone, Default)]
struct Pipe(Rc<RefCell<Vec<u8>>>);

impl Write for Pipe {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Input that arrives one line per read, like a person typing; each read
/// checks that every earlier answer has already reached the pipe.
struct Typist {
    lines: Vec<&'static str>,
    given: usize,
    pipe: Pipe,
}

impl Read for Typist {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let seen = self.pipe.0.borrow().iter().filter(|&&b| b == b'\n').count();
        assert_eq!(
            seen, self.given,
            "answers to earlier lines must be flushed before a read that may block"
        );
        let Some(l) = self.lines.get(self.given) else {
            return Ok(0);
        };
        self.given += 1;
        buf[..l.len()].copy_from_slice(l.as_bytes());
        Ok(l.len())
    }
}

#[test]
fn answers_are_flushed_before_waiting_for_input() {
    let pipe = Pipe::default();
    let typist = Typist {
        lines: vec![
            "127.0.0.9 40000 127.0.0.1 8080\n",
            "127.0.0.9 40001 127.0.0.1 8080\n",
            "x\n",
        ],
        given: 0,
        pipe: pipe.clone(),
    };
    let out = std::io::BufWriter::new(pipe.clone());
    let r = run(
        &args("--kernel 6.18 --proto tcp --listeners 8 --secret 0"),
        typist,
        out,
    )
    .unwrap();
    assert_eq!(
        r,
        Outcome {
            answered: 2,
            failed: 1
        }
    );
}
