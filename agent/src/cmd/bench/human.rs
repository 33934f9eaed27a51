//! `bench`'s human summary: a header, one block per mode as it ends, and
//! the comparison with the article.

use std::io::{self, Write};

use super::{Accept, Mode, ModeReport, Report, Stop};

/// The article's figures, for the comparison line.
const ARTICLE: &str = "the article measured 48 server and 48 client processes on two 48-core machines over a 40G link, 1,000,000 connections per client: fork 4m45s, SO_REUSEPORT 1m36s (ratio 2.95)";

pub(super) fn note(nproc: usize) -> String {
    format!(
        "{ARTICLE}; this machine has {nproc} CPU{}, shared by the servers, the clients and the loopback, so its numbers are not comparable to the article's, only the direction and the spread are",
        if nproc == 1 { "" } else { "s" }
    )
}

pub(super) fn header(out: &mut impl Write, r: &Report) -> io::Result<()> {
    writeln!(
        out,
        "bench: {} workers, {} clients x {} connections each, to {}, {}; nproc {}",
        r.workers,
        r.clients,
        r.connections_per_client,
        r.address,
        match r.accept {
            Accept::Blocking => "blocking accept()",
            Accept::Epoll => "epoll_wait() + non-blocking accept()",
        },
        r.nproc
    )?;
    writeln!(out, "note: {}", r.note)?;
    out.flush()
}

fn fmt_opt(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
}

fn list(xs: &[u64]) -> String {
    xs.iter().map(u64::to_string).collect::<Vec<_>>().join(" ")
}

pub(super) fn mode_summary(out: &mut impl Write, m: &ModeReport, workers: u32) -> io::Result<()> {
    writeln!(out)?;
    match m.mode {
        Mode::Fork => writeln!(
            out,
            "fork       one listener, opened before fork(), shared by {workers} workers (port {})",
            m.port
        )?,
        Mode::Reuseport => writeln!(
            out,
            "reuseport  {workers} listeners with SO_REUSEPORT, one per worker, opened after fork() (port {})",
            m.port
        )?,
    }
    match m.seconds {
        Some(s) => writeln!(
            out,
            "  time        {s:.3} s for {} connections ({} connections/s)",
            m.connected,
            fmt_opt(m.connections_per_second, 0)
        )?,
        None => writeln!(out, "  time        - (the clients never started)")?,
    }
    writeln!(out, "  per worker  {}", list(&m.per_worker))?;
    if let Some(w) = &m.empty_wakeups {
        writeln!(out, "  empty wake-ups per worker  {}", list(w))?;
    }
    writeln!(
        out,
        "  max/min     {}",
        m.max_min_ratio.map_or_else(
            || "inf (a worker accepted nothing)".to_string(),
            |v| format!("{v:.3}")
        )
    )?;
    writeln!(
        out,
        "  Jain index  {} (1 = even, 1/{} = one worker took all)",
        fmt_opt(m.jain, 4),
        m.per_worker.len()
    )?;
    if !m.complete {
        let why = match m.stopped {
            Some(Stop::Timeout) => "stopped by --timeout",
            Some(Stop::Interrupted) => "interrupted",
            None => "failed",
        };
        writeln!(
            out,
            "  INCOMPLETE: {why}; {} of {} connections made, {} accepted",
            m.connected, m.connections, m.accepted
        )?;
    }
    for e in &m.errors {
        writeln!(out, "  error: {e}")?;
    }
    Ok(())
}

pub(super) fn footer(out: &mut impl Write, r: &Report) -> io::Result<()> {
    writeln!(out)?;
    if let Some(ratio) = r.fork_over_reuseport {
        writeln!(
            out,
            "fork / reuseport time: {ratio:.2} (the article: 2.95 with 48 processes on 48 cores; here {} CPUs)",
            r.nproc
        )?;
    }
    if !r.complete {
        writeln!(
            out,
            "incomplete run{}",
            match r.stopped {
                Some(Stop::Timeout) => format!(": --timeout {} s passed", r.timeout_secs),
                Some(Stop::Interrupted) => ": interrupted".to_string(),
                None => String::new(),
            }
        )?;
    }
    Ok(())
}
