//! `bench`'s command line.

use clap::{Args, ValueEnum};
use serde::Serialize;

use super::MAX_PROCS;

/// Which modes to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// One listener created before fork(), shared by all workers.
    Fork,
    /// One SO_REUSEPORT listener per worker, opened after fork().
    Reuseport,
    /// Fork, then reuseport, and the ratio of their times.
    Both,
}

/// One way of serving.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// One listener shared by all workers.
    Fork,
    /// One SO_REUSEPORT listener per worker.
    Reuseport,
}

/// How workers wait for connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Accept {
    /// Blocking `accept` (the kernel wakes one waiter per connection).
    Blocking,
    /// Level-triggered epoll on the listener, then non-blocking `accept`.
    Epoll,
}

/// Options of `bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Server processes per mode. Default: twice the CPUs (nproc), at most 64.
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(u32).range(1..=MAX_PROCS as i64))]
    pub workers: Option<u32>,

    /// Client processes; client i connects from 127.0.1.1 + i. Default: as many as --workers.
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(u32).range(1..=MAX_PROCS as i64))]
    pub clients: Option<u32>,

    /// Connections each client makes, one after the other (connect, then reset).
    #[arg(long, value_name = "M", default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..=100_000_000))]
    pub connections: u32,

    /// Which way of serving to measure.
    #[arg(long, value_enum, default_value_t = ModeArg::Both)]
    pub mode: ModeArg,

    /// Port on 127.0.0.1 to listen on; 0 picks a free one for each mode.
    #[arg(long, default_value_t = 0)]
    pub port: u16,

    /// Print one JSON object instead of the human summary.
    #[arg(long)]
    pub json: bool,

    /// Bound on the whole run, in seconds: when it passes, every child is killed and the counts so far are reported as incomplete.
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub timeout: u64,

    /// Workers block in accept() (the classic pre-fork server). This is the default.
    #[arg(long, conflicts_with = "epoll")]
    pub blocking_accept: bool,

    /// Workers wait in epoll_wait() on the listener and accept without blocking; with the shared listener of the fork mode every worker is woken for each connection (thundering herd).
    #[arg(long)]
    pub epoll: bool,
}

impl BenchArgs {
    /// The worker count, with the default applied.
    pub fn worker_count(&self, nproc: usize) -> u32 {
        self.workers
            .unwrap_or_else(|| (2 * nproc).clamp(2, 64) as u32)
    }

    /// The client count, with the default applied.
    pub fn client_count(&self, nproc: usize) -> u32 {
        self.clients.unwrap_or_else(|| self.worker_count(nproc))
    }

    /// How workers wait for connections.
    pub fn accept(&self) -> Accept {
        if self.epoll {
            Accept::Epoll
        } else {
            Accept::Blocking
        }
    }

    pub(super) fn modes(&self) -> &'static [Mode] {
        match self.mode {
            ModeArg::Fork => &[Mode::Fork],
            ModeArg::Reuseport => &[Mode::Reuseport],
            ModeArg::Both => &[Mode::Fork, Mode::Reuseport],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_nproc() {
        use crate::{Cli, Command};
        use clap::Parser;
        let Command::Bench(a) = Cli::try_parse_from(["reuseport-agent", "bench"])
            .unwrap()
            .command
        else {
            unreachable!()
        };
        assert_eq!(a.worker_count(2), 4);
        assert_eq!(a.client_count(2), 4);
        assert_eq!(a.worker_count(100), 64);
        assert_eq!(a.connections, 2000);
        assert_eq!(a.timeout, 60);
        assert_eq!(a.accept(), Accept::Blocking);
        assert_eq!(a.modes(), &[Mode::Fork, Mode::Reuseport]);
    }
}
