//! The recording loop, independent of sockets: it takes (address, port)
//! pairs in order, has a [`Driver`] deliver one connection or datagram at a
//! time, and keeps the counts, the sampled events and the progress line.
//! The driver and the [`Clock`] are parameters, so the loop's bounds
//! (count, duration, interruption, lost and skipped events, sampling) are
//! tested without a kernel.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::trace::{Counts, Event};

use super::clients::Pairs;
use super::RecordError;

/// What became of one connection or datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// A listener received it.
    Received {
        /// Its number (listen order for TCP, bind order for UDP).
        listener: u32,
        /// From connect()/send() to accept()/receive.
        latency_ns: u64,
        /// The CPU the client ran on, when pinned.
        cpu: Option<u32>,
    },
    /// No listener received it within the wait.
    Lost,
    /// The TCP handshake completed, yet none of the group's sockets got
    /// the connection: a listener outside the group took it.
    Elsewhere,
    /// The pair could not be used (its address and port are taken by a
    /// socket outside the recording); nothing was sent, the next pair is
    /// tried.
    Skipped(String),
    /// A signal asked to stop while waiting.
    Stopped,
}

/// Delivers one event at a time.
pub trait Driver {
    /// Sends event `seq` from `client` (after pinning the sending thread to
    /// `cpu`, when given) and reports which listener got it.
    fn deliver(
        &mut self,
        seq: u64,
        client: SocketAddr,
        cpu: Option<u32>,
    ) -> Result<Delivery, RecordError>;
}

/// Time since the recording started.
pub trait Clock {
    /// The time elapsed.
    fn elapsed(&self) -> Duration;
}

/// The real clock.
#[derive(Debug, Clone, Copy)]
pub struct Wall(pub Instant);

impl Clock for Wall {
    fn elapsed(&self) -> Duration {
        self.0.elapsed()
    }
}

/// The bounds and bookkeeping of one run.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Stop after this many events.
    pub count: u64,
    /// Or after this long.
    pub duration: Duration,
    /// Keep every n-th received event in `events`.
    pub sample: u64,
    /// The group's address and port (each event's destination).
    pub dest: SocketAddr,
    /// Listeners in the group (the length of `perListener`).
    pub listeners: u32,
    /// Each listener's slot in `socks[]` per the model (`None`: closed, or
    /// no model).
    pub slot_of: Vec<Option<u32>>,
    /// CPUs the client is pinned to, round-robin by event; empty: unpinned.
    pub pin_cpus: Vec<u32>,
    /// Progress lines this often.
    pub progress_every: Duration,
}

/// Why the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoppedBy {
    /// `--count` events were driven.
    Count,
    /// `--duration` passed.
    Duration,
    /// Every (address, port) pair was used.
    Pairs,
    /// A terminating signal (SIGINT, SIGTERM, SIGHUP, ...).
    Signal,
}

impl StoppedBy {
    /// The word in the trace's options.
    pub fn word(self) -> &'static str {
        match self {
            StoppedBy::Count => "count",
            StoppedBy::Duration => "duration",
            StoppedBy::Pairs => "pairs",
            StoppedBy::Signal => "signal",
        }
    }
}

/// What a run recorded.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The events kept (every `sample`-th received).
    pub events: Vec<Event>,
    /// All events counted.
    pub counts: Counts,
    /// Pairs skipped because their address and port were taken.
    pub skipped: u64,
    /// Events (counted as lost too) that a socket outside the group took.
    pub elsewhere: u64,
    /// Why it ended.
    pub stopped_by: StoppedBy,
    /// How long it took.
    pub elapsed: Duration,
}

/// A progress report (one stderr line).
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Events driven.
    pub events: u64,
    /// Of which lost.
    pub lost: u64,
    /// Since the start.
    pub elapsed: Duration,
    /// Target count.
    pub count: u64,
    /// Time bound.
    pub duration: Duration,
}

impl Progress {
    /// Events per second so far.
    pub fn rate(&self) -> f64 {
        self.events as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Time left until the first bound is reached, at the current rate.
    pub fn eta(&self) -> Duration {
        let by_time = self.duration.saturating_sub(self.elapsed);
        let rate = self.rate();
        if rate <= 0.0 {
            return by_time;
        }
        let by_count =
            Duration::from_secs_f64(self.count.saturating_sub(self.events) as f64 / rate);
        by_count.min(by_time)
    }

    /// The stderr line.
    pub fn line(&self) -> String {
        format!(
            "record: {}/{} events ({} lost), {:.0}/s, {:.1} s elapsed, ETA {:.1} s",
            self.events,
            self.count,
            self.lost,
            self.rate(),
            self.elapsed.as_secs_f64(),
            self.eta().as_secs_f64()
        )
    }
}

/// After this many skipped pairs in a row the run stops with an error: the
/// source ports are taken by something else.
pub const MAX_SKIPS_IN_A_ROW: u32 = 1000;

/// Runs the loop until a bound, a signal (`stop`), or the end of the pairs.
pub fn record(
    driver: &mut dyn Driver,
    pairs: &Pairs,
    limits: &Limits,
    clock: &dyn Clock,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Recording, RecordError> {
    let mut counts = Counts {
        events: 0,
        recorded: Some(0),
        per_listener: vec![0; limits.listeners as usize],
        lost: Some(0),
    };
    let mut events = Vec::new();
    let mut received = 0u64;
    let mut lost = 0u64;
    let mut skipped = 0u64;
    let mut elsewhere = 0u64;
    let mut skips_in_a_row = 0u32;
    let mut pair = 0u64;
    let mut last_progress: Option<Duration> = None;
    let report = |events: u64, lost: u64, elapsed: Duration| Progress {
        events,
        lost,
        elapsed,
        count: limits.count,
        duration: limits.duration,
    };
    let stopped_by = loop {
        let now = clock.elapsed();
        if stop.load(Ordering::Relaxed) {
            break StoppedBy::Signal;
        }
        if counts.events >= limits.count {
            break StoppedBy::Count;
        }
        if now >= limits.duration {
            break StoppedBy::Duration;
        }
        if pair >= pairs.len() {
            break StoppedBy::Pairs;
        }
        if last_progress.is_none_or(|t| now.saturating_sub(t) >= limits.progress_every) {
            last_progress = Some(now);
            progress(&report(counts.events, lost, now));
        }
        let seq = counts.events;
        let client = pairs.get(pair);
        pair += 1;
        let cpu = (!limits.pin_cpus.is_empty())
            .then(|| limits.pin_cpus[(seq % limits.pin_cpus.len() as u64) as usize]);
        match driver.deliver(seq, client, cpu)? {
            Delivery::Received {
                listener,
                latency_ns,
                cpu,
            } => {
                skips_in_a_row = 0;
                counts.events += 1;
                counts.per_listener[listener as usize] += 1;
                if received.is_multiple_of(limits.sample) {
                    events.push(Event {
                        seq: Some(seq),
                        saddr: client.ip(),
                        sport: client.port(),
                        daddr: limits.dest.ip(),
                        dport: limits.dest.port(),
                        listener,
                        slot: limits.slot_of.get(listener as usize).copied().flatten(),
                        cpu,
                        t_ns: Some(now.as_nanos() as u64),
                        latency_ns: Some(latency_ns),
                        hash: None,
                    });
                }
                received += 1;
            }
            Delivery::Lost => {
                skips_in_a_row = 0;
                counts.events += 1;
                lost += 1;
            }
            Delivery::Elsewhere => {
                skips_in_a_row = 0;
                counts.events += 1;
                lost += 1;
                elsewhere += 1;
            }
            Delivery::Skipped(why) => {
                skipped += 1;
                skips_in_a_row += 1;
                if skips_in_a_row >= MAX_SKIPS_IN_A_ROW {
                    return Err(RecordError::PairsTaken {
                        skipped: skips_in_a_row,
                        last: why,
                    });
                }
            }
            Delivery::Stopped => break StoppedBy::Signal,
        }
    };
    let elapsed = clock.elapsed();
    progress(&report(counts.events, lost, elapsed));
    counts.recorded = Some(events.len() as u64);
    counts.lost = Some(lost);
    Ok(Recording {
        events,
        counts,
        skipped,
        elsewhere,
        stopped_by,
        elapsed,
    })
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::net::IpAddr;

    use super::*;

    /// A clock that advances by a fixed step on every reading.
    struct Ticking {
        now: Cell<Duration>,
        step: Duration,
    }

    impl Clock for Ticking {
        fn elapsed(&self) -> Duration {
            let t = self.now.get();
            self.now.set(t + self.step);
            t
        }
    }

    /// Listener = source port mod n; every `lose`-th event lost, every
    /// `skip`-th pair skipped; raises `stop` at event `stop_at`.
    struct Fake<'a> {
        n: u32,
        lose: u64,
        skip: u64,
        calls: u64,
        stop_at: Option<(u64, &'a AtomicBool)>,
        seqs: Vec<u64>,
    }

    impl Driver for Fake<'_> {
        fn deliver(
            &mut self,
            seq: u64,
            client: SocketAddr,
            cpu: Option<u32>,
        ) -> Result<Delivery, RecordError> {
            self.calls += 1;
            if let Some((at, flag)) = self.stop_at {
                if seq == at {
                    flag.store(true, Ordering::Relaxed);
                }
            }
            if self.skip > 0 && self.calls.is_multiple_of(self.skip) {
                return Ok(Delivery::Skipped("taken".into()));
            }
            self.seqs.push(seq);
            if self.lose > 0 && (seq + 1).is_multiple_of(self.lose) {
                return Ok(Delivery::Lost);
            }
            Ok(Delivery::Received {
                listener: u32::from(client.port()) % self.n,
                latency_ns: 1,
                cpu,
            })
        }
    }

    fn fake<'a>(n: u32) -> Fake<'a> {
        Fake {
            n,
            lose: 0,
            skip: 0,
            calls: 0,
            stop_at: None,
            seqs: Vec::new(),
        }
    }

    fn limits(count: u64, secs: u64, sample: u64) -> Limits {
        Limits {
            count,
            duration: Duration::from_secs(secs),
            sample,
            dest: "127.0.0.1:8080".parse().unwrap(),
            listeners: 4,
            slot_of: vec![Some(0), Some(1), Some(2), Some(3)],
            pin_cpus: vec![],
            progress_every: Duration::from_millis(500),
        }
    }

    fn pairs() -> Pairs {
        let c: Vec<IpAddr> = vec!["127.0.0.2".parse().unwrap()];
        Pairs::new(c, (20000, 20999), 0)
    }

    fn run(d: &mut dyn Driver, l: &Limits, step_ms: u64, stop: &AtomicBool) -> (Recording, usize) {
        let clock = Ticking {
            now: Cell::new(Duration::ZERO),
            step: Duration::from_millis(step_ms),
        };
        let mut lines = 0;
        let r = record(d, &pairs(), l, &clock, stop, &mut |_| lines += 1).unwrap();
        (r, lines)
    }

    #[test]
    fn the_count_bound_stops_the_run_and_every_event_is_counted() {
        let stop = AtomicBool::new(false);
        let (r, _) = run(&mut fake(4), &limits(100, 1000, 1), 1, &stop);
        assert_eq!(r.stopped_by, StoppedBy::Count);
        assert_eq!(r.counts.events, 100);
        assert_eq!(r.counts.per_listener.iter().sum::<u64>(), 100);
        assert_eq!(r.events.len(), 100);
        assert!(r.events.iter().all(|e| e.slot == Some(e.listener)));
        let seqs: Vec<u64> = r.events.iter().map(|e| e.seq.unwrap()).collect();
        assert_eq!(seqs, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn the_duration_bound_stops_the_run_and_progress_is_reported_twice_a_second() {
        let stop = AtomicBool::new(false);
        // One clock reading per event, 10 ms apart: 100 events per second.
        let (r, lines) = run(&mut fake(4), &limits(1_000_000, 2, 1), 10, &stop);
        assert_eq!(r.stopped_by, StoppedBy::Duration);
        assert_eq!(r.counts.events, 200);
        // At the start, at 0.5, 1 and 1.5 s, and the final line.
        assert_eq!(lines, 5);
    }

    #[test]
    fn lost_events_are_counted_but_not_recorded_and_keep_their_numbers() {
        let stop = AtomicBool::new(false);
        let mut d = fake(4);
        d.lose = 5;
        let (r, _) = run(&mut d, &limits(50, 1000, 1), 1, &stop);
        assert_eq!(r.counts.events, 50);
        assert_eq!(r.counts.lost, Some(10));
        assert_eq!(r.counts.per_listener.iter().sum::<u64>(), 40);
        assert_eq!(r.counts.recorded, Some(40));
        assert!(r.events.iter().all(|e| (e.seq.unwrap() + 1) % 5 != 0));
    }

    #[test]
    fn sampling_keeps_every_nth_received_event_and_counts_all() {
        let stop = AtomicBool::new(false);
        let (r, _) = run(&mut fake(4), &limits(100, 1000, 7), 1, &stop);
        assert_eq!(r.counts.events, 100);
        assert_eq!(r.events.len(), 15);
        assert_eq!(r.counts.recorded, Some(15));
        assert_eq!(r.events[1].seq, Some(7));
    }

    #[test]
    fn skipped_pairs_are_not_events_and_use_the_next_pair() {
        let stop = AtomicBool::new(false);
        let mut d = fake(4);
        d.skip = 3;
        let (r, _) = run(&mut d, &limits(20, 1000, 1), 1, &stop);
        assert_eq!(r.counts.events, 20);
        assert_eq!(r.skipped, 9);
        assert_eq!(d.seqs, (0..20).collect::<Vec<_>>());
    }

    #[test]
    fn too_many_skips_in_a_row_stop_with_an_error_naming_the_cause() {
        let stop = AtomicBool::new(false);
        let mut d = fake(4);
        d.skip = 1;
        let clock = Wall(Instant::now());
        let e = record(
            &mut d,
            &pairs(),
            &limits(10, 1000, 1),
            &clock,
            &stop,
            &mut |_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("taken"), "{e}");
    }

    #[test]
    fn a_signal_stops_the_run_with_what_was_recorded() {
        let stop = AtomicBool::new(false);
        let mut d = fake(4);
        d.stop_at = Some((30, &stop));
        let (r, _) = run(&mut d, &limits(100, 1000, 1), 1, &stop);
        assert_eq!(r.stopped_by, StoppedBy::Signal);
        assert_eq!(
            r.counts.events, 31,
            "the event under way when the signal came is kept"
        );
        assert_eq!(r.events.len(), 31);
    }

    #[test]
    fn running_out_of_pairs_ends_the_run() {
        let stop = AtomicBool::new(false);
        let (r, _) = run(&mut fake(4), &limits(5000, 1000, 1), 0, &stop);
        assert_eq!(r.stopped_by, StoppedBy::Pairs);
        assert_eq!(r.counts.events, 1000);
    }

    #[test]
    fn pinned_runs_cycle_through_the_cpus() {
        let stop = AtomicBool::new(false);
        let mut l = limits(6, 1000, 1);
        l.pin_cpus = vec![3, 5];
        let (r, _) = run(&mut fake(4), &l, 1, &stop);
        let cpus: Vec<u32> = r.events.iter().map(|e| e.cpu.unwrap()).collect();
        assert_eq!(cpus, vec![3, 5, 3, 5, 3, 5]);
    }

    #[test]
    fn eta_is_the_nearer_bound() {
        let p = Progress {
            events: 100,
            lost: 0,
            elapsed: Duration::from_secs(1),
            count: 300,
            duration: Duration::from_secs(30),
        };
        assert_eq!(p.eta(), Duration::from_secs(2));
        assert!(p.line().contains("100/300 events"));
        let p = Progress {
            count: 1_000_000,
            ..p
        };
        assert_eq!(p.eta(), Duration::from_secs(29));
    }
}
