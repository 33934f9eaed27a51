//! `reuseport-agent`: parses the command line, runs the subcommand, and maps
//! its result to the exit status (see [`reuseport_agent::exit`]).

use std::io::{self, BufWriter};
use std::process::ExitCode;

use clap::Parser;
use reuseport_agent::{
    bench, calibrate, exit, kernels, predict, record, recover, scenario, verify, Cli, Command,
    Error,
};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Predict(args) => {
            let out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
            finish(predict::run(&args, io::stdin().lock(), out).map(|o| o.failed == 0))
        }
        Command::Bench(args) => match bench::run(&args, io::stdout().lock()) {
            Ok(report) if report.complete => ExitCode::from(exit::OK),
            Ok(_) => ExitCode::from(exit::SOME_LINES_FAILED),
            Err(e) if e.is_broken_pipe() => ExitCode::from(exit::OK),
            Err(e) => {
                reuseport_agent::note!("error: {e}");
                ExitCode::from(exit::REFUSED)
            }
        },
        Command::Record(args) => match record::run(&args) {
            Ok(o) if o.interrupted => ExitCode::from(exit::INTERRUPTED),
            Ok(_) => ExitCode::from(exit::OK),
            Err(e) if e.is_broken_pipe() => ExitCode::from(exit::OK),
            Err(e) => {
                reuseport_agent::note!("error: {e}");
                ExitCode::from(match e {
                    record::RecordError::Interrupted => exit::INTERRUPTED,
                    _ => exit::REFUSED,
                })
            }
        },
        Command::Verify(args) if args.kernels.kernels.is_some() => {
            match kernels::run(&args, io::stdout().lock(), &mut io::stderr()) {
                Ok(r) if r.kernels.iter().all(|k| k.verified) => ExitCode::from(exit::OK),
                Ok(_) => ExitCode::from(exit::SOME_LINES_FAILED),
                Err(e) if e.is_broken_pipe() => ExitCode::from(exit::OK),
                Err(e) => {
                    reuseport_agent::note!("error: {e}");
                    ExitCode::from(exit::REFUSED)
                }
            }
        }
        Command::Verify(args) => match verify::run(&args, io::stdout().lock(), &mut io::stderr()) {
            Ok(r) if r.exact => ExitCode::from(exit::OK),
            Ok(_) => ExitCode::from(exit::SOME_LINES_FAILED),
            Err(e) if e.is_broken_pipe() => ExitCode::from(exit::OK),
            Err(e) => {
                reuseport_agent::note!("error: {e}");
                ExitCode::from(exit::REFUSED)
            }
        },
        Command::Scenario(args) if args.list => match scenario::list(io::stdout().lock()) {
            Ok(()) => ExitCode::from(exit::OK),
            Err(_) => ExitCode::from(exit::OK),
        },
        Command::Scenario(args) => match scenario::run(&args, io::stdout().lock()) {
            Ok(t)
                if t.runs
                    .iter()
                    .any(|r| r.stopped.as_deref() == Some("interrupted")) =>
            {
                ExitCode::from(exit::INTERRUPTED)
            }
            Ok(t) if t.runs.iter().all(|r| r.complete) => ExitCode::from(exit::OK),
            Ok(_) => ExitCode::from(exit::SOME_LINES_FAILED),
            Err(e) if e.is_broken_pipe() => ExitCode::from(exit::OK),
            Err(e) => {
                reuseport_agent::note!("error: {e}");
                ExitCode::from(exit::REFUSED)
            }
        },
        Command::Calibrate(args) => match calibrate::run(&args, io::stderr()) {
            Ok(now) => match &args.check {
                Some(path) => {
                    let claimed = std::fs::read_to_string(path)
                        .ok()
                        .and_then(|t| serde_json::from_str(&t).ok())
                        .expect("calibrate::run has read and parsed it");
                    let problems = calibrate::check(&claimed, &now);
                    for p in &problems {
                        reuseport_agent::note!("calibrate --check: {p}");
                    }
                    ExitCode::from(if problems.is_empty() {
                        exit::OK
                    } else {
                        exit::SOME_LINES_FAILED
                    })
                }
                None => match calibrate::write(&args, &now) {
                    Ok(path) => {
                        reuseport_agent::note!(
                            "calibrate: wrote {} ({} runs, {} disagree; driver of the 48-CPU ratio: {})",
                            path.display(),
                            now.runs.len(),
                            now.disagrees.len(),
                            now.driver
                        );
                        ExitCode::from(exit::OK)
                    }
                    Err(e) => {
                        reuseport_agent::note!("error: {e}");
                        ExitCode::from(exit::REFUSED)
                    }
                },
            },
            Err(e) => {
                reuseport_agent::note!("error: {e}");
                ExitCode::from(exit::REFUSED)
            }
        },
        Command::Recover(args) => {
            let stop = recover::stop_on_interrupt();
            let out = io::stdout().lock();
            match recover::run(&args, io::stdin().lock(), out, &mut io::stderr(), stop) {
                Ok(o) if !o.complete => ExitCode::from(exit::INTERRUPTED),
                Ok(o) if o.candidates == 1 => ExitCode::from(exit::OK),
                Ok(_) => ExitCode::from(exit::SOME_LINES_FAILED),
                Err(e) if e.is_broken_pipe() => ExitCode::from(exit::OK),
                Err(e) => {
                    reuseport_agent::note!("error: {e}");
                    ExitCode::from(exit::REFUSED)
                }
            }
        }
    }
}

/// `Ok(true)`: all answered; `Ok(false)`: some lines failed; a broken pipe
/// is success; any other error is printed and refused.
fn finish(result: Result<bool, Error>) -> ExitCode {
    match result {
        Ok(true) => ExitCode::from(exit::OK),
        Ok(false) => ExitCode::from(exit::SOME_LINES_FAILED),
        Err(e) if e.is_broken_pipe() => ExitCode::from(exit::OK),
        Err(e) => {
            reuseport_agent::note!("error: {e}");
            ExitCode::from(exit::REFUSED)
        }
    }
}
