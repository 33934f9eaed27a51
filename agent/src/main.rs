//! `reuseport-agent`: parses the command line, runs the subcommand, and maps
//! its result to the exit status (the one table is [`reuseport_agent::exit`]).

use std::io::{self, BufWriter};
use std::process::ExitCode;

use clap::Parser;
use reuseport_agent::cmd::verify::kernels;
use reuseport_agent::cmd::{
    bench, calibrate, curated, observe, predict, record, recover, scenario, verify,
};
use reuseport_agent::exit::finish;
use reuseport_agent::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Predict(args) => {
            let out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
            finish(predict::run(&args, io::stdin().lock(), out))
        }
        Command::Bench(args) => finish(bench::run(&args, io::stdout().lock())),
        Command::Record(args) => finish(record::run(&args)),
        Command::Verify(args) if args.kernels.kernels.is_some() => {
            finish(kernels::run(&args, io::stdout().lock(), &mut io::stderr()))
        }
        Command::Verify(args) => finish(verify::run(&args, io::stdout().lock(), &mut io::stderr())),
        Command::Scenario(args) if args.list => finish(scenario::list(io::stdout().lock())),
        #[cfg(target_os = "linux")]
        Command::Scenario(args) if args.name.as_deref() == Some("quic-reload") => {
            finish(scenario::run_quic_reload(&args, io::stdout().lock()))
        }
        Command::Scenario(args) => finish(scenario::run(&args, io::stdout().lock())),
        Command::Calibrate(args) => finish(calibrate::command(&args, io::stderr())),
        Command::Curated => finish(curated::run(io::stdout().lock())),
        Command::Observe(args) => {
            let (_signals, stop) = recover::stop_on_signals();
            finish(observe::run(
                &args,
                &mut io::stdout().lock(),
                &mut io::stderr(),
                stop,
            ))
        }
        Command::Recover(args) => {
            let (_signals, stop) = recover::stop_on_signals();
            let out = io::stdout().lock();
            finish(recover::run(
                &args,
                io::stdin().lock(),
                out,
                &mut io::stderr(),
                stop,
            ))
        }
    }
}
