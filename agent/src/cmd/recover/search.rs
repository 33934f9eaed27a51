//! The parallel search over a range of keys, with progress on stderr.

use std::io::{self, IsTerminal, Write};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use reuseport_model::recover::Found;

use super::{CHUNK, LIST_CAP};

/// What one parallel search returns.
pub(crate) struct Searched {
    /// The candidates.
    pub(crate) found: Found,
    /// The part of the range searched (all of it unless stopped).
    pub(crate) searched: Range<u64>,
    /// Wall time.
    pub(crate) seconds: f64,
}

pub(super) fn fmt_rate(r: f64) -> String {
    format!("{:.2}e9/s", r / 1e9)
}

/// Searches `range` with `threads` workers, writing progress to `err`
/// every half second unless `quiet`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn parallel_search(
    search: &(dyn Fn(Range<u64>, &mut Found) + Sync),
    range: Range<u64>,
    threads: u32,
    stop: &AtomicBool,
    label: &str,
    quiet: bool,
    err: &mut dyn Write,
) -> Searched {
    let len = range.end - range.start;
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let hits = AtomicU64::new(0);
    let running = AtomicUsize::new(threads as usize);
    let parts: Mutex<Vec<(u64, Found)>> = Mutex::new(Vec::new());
    let started = Instant::now();
    let tty = io::stderr().is_terminal();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut mine = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let at = next.fetch_add(CHUNK, Ordering::Relaxed);
                    if at >= len {
                        break;
                    }
                    let r = range.start + at..range.start + (at + CHUNK).min(len);
                    let n = r.end - r.start;
                    let mut f = Found::new(LIST_CAP);
                    search(r, &mut f);
                    if f.count > 0 {
                        hits.fetch_add(f.count, Ordering::Relaxed);
                        mine.push((at, f));
                    }
                    done.fetch_add(n, Ordering::Relaxed);
                }
                parts.lock().expect("no worker panicked").extend(mine);
                running.fetch_sub(1, Ordering::Release);
            });
        }
        let mut last = Instant::now();
        while running.load(Ordering::Acquire) > 0 {
            std::thread::sleep(Duration::from_millis(20));
            if quiet || last.elapsed() < Duration::from_millis(500) {
                continue;
            }
            last = Instant::now();
            let d = done.load(Ordering::Relaxed);
            let secs = started.elapsed().as_secs_f64();
            let rate = d as f64 / secs.max(1e-9);
            let eta = (len - d.min(len)) as f64 / rate.max(1.0);
            let line = format!(
                "recover{label}: {:5.1}%  {}  ETA {:.1} s  {} found",
                100.0 * d as f64 / len as f64,
                fmt_rate(rate),
                eta,
                hits.load(Ordering::Relaxed)
            );
            let _ = if tty {
                write!(err, "\r{line}\x1b[K")
            } else {
                writeln!(err, "{line}")
            };
            let _ = err.flush();
        }
        if tty && !quiet && last != started {
            let _ = writeln!(err);
        }
    });
    let seconds = started.elapsed().as_secs_f64();
    let mut parts = parts.into_inner().expect("no worker panicked");
    parts.sort_by_key(|(at, _)| *at);
    let mut found = Found::new(LIST_CAP);
    for (_, f) in &parts {
        found.merge(f);
    }
    // Every claimed chunk was finished, so the searched part is a prefix.
    let claimed = next.load(Ordering::Relaxed).min(len);
    Searched {
        found,
        searched: range.start..range.start + claimed,
        seconds,
    }
}
