//! The exit statuses of `agent/src/exit.rs`, seen from outside: the codes a
//! script gets for a run that did everything, one that finished with failed
//! lines, one refused up front and a usage error. (130 on a signal is pinned
//! by `recover.rs`, `scenario.rs` and `record.rs`, which send one.)

use assert_cmd::Command;

const BIN: &str = env!("CARGO_BIN_EXE_reuseport-agent");
const GROUP: [&str; 9] = [
    "predict",
    "--kernel",
    "6.18",
    "--proto",
    "tcp",
    "--listeners",
    "4",
    "--secret",
    "0x1",
];

fn code(args: &[&str], stdin: &str) -> (i32, String) {
    let out = Command::new(BIN)
        .args(args)
        .write_stdin(stdin)
        .output()
        .unwrap();
    (
        out.status.code().expect("exited"),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn every_line_answered_exits_0() {
    let (c, err) = code(&GROUP, "127.0.0.9 40000 127.0.0.1 8080\n");
    assert_eq!(c, 0, "{err}");
}

#[test]
fn a_line_that_is_not_a_tuple_exits_1_and_the_run_goes_on() {
    let (c, err) = code(&GROUP, "127.0.0.9 40000 127.0.0.1 8080\nnot a tuple\n");
    assert_eq!(c, 1, "{err}");
}

#[test]
fn a_kernel_the_model_does_not_know_exits_2_with_the_reason() {
    let mut args = GROUP.to_vec();
    args[2] = "2.4";
    let (c, err) = code(&args, "127.0.0.9 40000 127.0.0.1 8080\n");
    assert_eq!(c, 2);
    assert!(err.starts_with("error: --kernel"), "{err}");
}

#[test]
fn a_usage_error_exits_2() {
    let (c, err) = code(&["predict", "--no-such-option"], "");
    assert_eq!(c, 2, "{err}");
}

#[test]
fn help_lists_the_four_statuses() {
    let out = Command::new(BIN).arg("--help").output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for code in ["  0 ", "  1 ", "  2 ", "  130 "] {
        assert!(help.contains(code), "{code:?} missing from --help:\n{help}");
    }
}
