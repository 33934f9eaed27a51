//! The kernel's side of a run: the fresh ports, the probes, the run's
//! own thread in a private network namespace.

use super::*;
use crate::calllog::{private_netns, probe_tcp, probe_udp};
use socket2::{Domain, Socket, Type};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Whether nothing holds `port` (checked outside a private namespace).
fn port_free(port: u16) -> bool {
    [Type::STREAM, Type::DGRAM].iter().all(|&t| {
        let s4 = Socket::new(Domain::IPV4, t, None)
            .and_then(|s| s.bind(&SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), port).into()));
        let s6 = Socket::new(Domain::IPV6, t, None).and_then(|s| {
            s.set_only_v6(true)?;
            s.bind(&SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), port).into())
        });
        s4.is_ok() && s6.is_ok()
    })
}

/// The fresh ports of a run.
struct Ports {
    next: u16,
    private: bool,
}

impl Ports {
    fn take(&mut self) -> u16 {
        loop {
            let p = self.next;
            self.next = if p >= PORT_HIGH { PORT_LOW } else { p + 1 };
            if self.private || port_free(p) {
                return p;
            }
        }
    }
}

/// Per destination probed (127.0.0.1, 127.0.0.2, ::1), the sockets `receiving` names
/// (indexes into `socks`) that receive probes to `port`: each
/// destination gets probes until `24 ×` the sockets seen so far (at
/// least 8); two misses before any socket is seen end it.
pub fn probe_destinations(
    socks: &[Option<Socket>],
    receiving: &[usize],
    proto: Proto,
    port: u16,
    probes: &mut u64,
) -> Lookups {
    let mut lookups = Vec::new();
    for daddr in destinations() {
        let mut got = BTreeSet::new();
        let mut missed = 0;
        let mut t = 0;
        while t < (TRIES_PER_MEMBER * got.len()).max(8) {
            // Nothing received twice: no socket receives here.
            if missed >= 2 && got.is_empty() {
                break;
            }
            *probes += 1;
            let src = source(daddr, t);
            t += 1;
            let r = match proto {
                Proto::Tcp => probe_tcp(socks, receiving, src, daddr, port, Duration::from_secs(1)),
                Proto::Udp => {
                    // Once a socket here has received, a datagram is due:
                    // wait for it; before that, briefly.
                    let wait = Duration::from_millis(if !got.is_empty() { 250 } else { 30 });
                    probe_udp(socks, receiving, src, daddr, port, wait)
                }
            };
            match r {
                Some(i) => {
                    got.insert(i);
                }
                None => missed += 1,
            }
        }
        lookups.push((daddr.to_string(), got));
    }
    lookups
}

/// What a run sets up on its own thread before drawing.
struct Setup {
    rng: Rng,
    ports: Ports,
    pinned: bool,
    two_uids: bool,
}

impl Setup {
    /// A private network namespace when allowed, the thread pinned to
    /// [`PROBE_CPU`], the seeded generator.
    fn enter(seed: u64, command: &str) -> Setup {
        let private = private_netns();
        if !private {
            crate::note!("{command}: no private network namespace (not root?); using this one, on ports checked free");
        }
        // SO_INCOMING_CPU is compared on the probes' CPU, so the prober
        // stays there; without it, no socket is drawn with one.
        let pinned = crate::process::pin_to(PROBE_CPU).is_ok();
        if !pinned {
            crate::note!("{command}: cannot pin to CPU {PROBE_CPU}; no SO_INCOMING_CPU draws");
        }
        Setup {
            rng: Rng::new(seed),
            ports: Ports {
                next: PORT_LOW + (seed % u64::from(PORT_HIGH - PORT_LOW)) as u16,
                private,
            },
            pinned,
            // A second owner UID needs root (setfsuid); without it every
            // socket is drawn with UID 0, the model's stand-in for "the same".
            two_uids: crate::cmd::record::is_root(),
        }
    }

    /// The next case, on a fresh port.
    fn draw<D: Draw>(&mut self) -> (D::Case, Drawing) {
        let d = Drawing {
            port: self.ports.take(),
            pinned: self.pinned,
            two_uids: self.two_uids,
        };
        (D::draw(&mut self.rng, d.port, d.pinned, d.two_uids), d)
    }
}

/// Runs `f` on a thread of its own, which may move into a private
/// network namespace without taking the rest of the process.
fn on_own_thread<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
    thing: &str,
) -> Result<T, LayoutsError> {
    std::thread::spawn(f)
        .join()
        .map_err(|_| LayoutsError::Kernel(format!("the {thing} thread panicked")))
}

/// `verify --layouts N [--call-logs] --kernel-answers --output FILE`:
/// builds and probes the drawn cases on this kernel only and writes a
/// [`Draw::Line`] per case to `path` (what a `verify --kernels` guest
/// runs).
pub fn run_kernel_side<D: Draw + 'static>(
    opts: &Options,
    path: &std::path::Path,
) -> Result<(), LayoutsError>
where
    D::Line: Send,
{
    opts.check(&D::WORDS)?;
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let opts = opts.clone();
    let lines = on_own_thread(
        move || {
            let mut s = Setup::enter(opts.seed, D::WORDS.command);
            let (mut probes, mut helpers) = (0, D::helpers());
            (0..opts.count)
                .map(|drawn| {
                    let (case, d) = s.draw::<D>();
                    let answers = D::kernel_answers(&case, &mut probes, &mut helpers);
                    D::line(drawn, &case, &d, answers)
                })
                .collect::<Vec<_>>()
        },
        D::WORDS.thing,
    )?;
    for l in lines {
        serde_json::to_writer(&mut file, &l).map_err(std::io::Error::from)?;
        writeln!(file)?;
    }
    file.flush()?;
    Ok(())
}

fn run_all<D: Draw>(
    opts: &Options,
    profile: &'static Profile,
    release: String,
) -> Result<Report<D::Disagreement>, LayoutsError> {
    let t0 = Instant::now();
    let mut s = Setup::enter(opts.seed, D::WORDS.command);
    let mut helpers = D::helpers();
    let (mut probes, mut t) = (0, Counts::default());
    let (mut seen, mut disagreements) = (BTreeSet::new(), Vec::new());
    let mut interrupted = false;
    for drawn in 0..opts.count {
        if crate::signals::stopped() {
            interrupted = true;
            break;
        }
        let (case, _) = s.draw::<D>();
        let model0 = D::model_answers(profile, &case).map_err(LayoutsError::Kernel)?;
        let kernel0 = D::kernel_answers(&case, &mut probes, &mut helpers);
        let first = t.add::<D>(&case, &kernel0, &model0);
        if first.is_empty() {
            continue;
        }
        // Both sides again, on a fresh port each time.
        let mut both = |c: &D::Case| -> Option<(D::Case, D::Answers, D::Answers)> {
            let c = D::with_port(c, s.ports.take());
            let m = D::model_answers(profile, &c).ok()?;
            let k = D::kernel_answers(&c, &mut probes, &mut helpers);
            Some((c, k, m))
        };
        let small = shrink::<D>(&case, |c| {
            both(c).is_some_and(|(c, k, m)| !differences::<D>(&c, &k, &m).is_empty())
        });
        let (c, kernel, model) = both(&small).ok_or_else(|| {
            LayoutsError::Kernel(format!(
                "the model cannot replay the shrunk {}: {}",
                D::WORDS.thing,
                D::compact(&small)
            ))
        })?;
        let again = differences::<D>(&c, &kernel, &model);
        // Built again, the case agreed every time: the kernel's first answer
        // came from timing (a thread stalled past a window), not from a rule.
        // It still counts as a disagreement, shown as drawn, with what the
        // first build found.
        let (shown, found) = if again.is_empty() {
            let mut differences = first;
            differences.push("did not repeat when built again".into());
            let found = Found {
                kernel: kernel0,
                model: model0,
                differences,
            };
            (D::with_port(&case, 8080), found)
        } else {
            let found = Found {
                kernel,
                model,
                differences: again,
            };
            (D::with_port(&small, 8080), found)
        };
        crate::note!(
            "{}: drawn {} {drawn} disagrees; shown with {} {}",
            D::WORDS.command,
            D::WORDS.thing,
            D::size(&shown),
            D::WORDS.parts
        );
        if seen.insert(D::compact(&shown)) && disagreements.len() < 50 {
            disagreements.push(D::disagreement(drawn, &case, shown, found));
        }
    }
    Ok(Report {
        seed: opts.seed,
        kernel: release,
        profile: profile.release.to_string(),
        private_netns: s.ports.private,
        counts: t,
        probes,
        seconds: t0.elapsed().as_secs_f64(),
        disagreements,
        interrupted,
    })
}

/// Runs `verify --layouts N` with the draw `D`: the report to `out`
/// (text, or one JSON object with `--json`), progress to `err`.
pub fn run<D: Draw + 'static>(
    opts: &Options,
    mut out: impl Write,
    err: &mut dyn Write,
) -> Result<Report<D::Disagreement>, LayoutsError>
where
    D::Disagreement: Send,
{
    opts.check(&D::WORDS)?;
    let release =
        crate::kernel::running_release().map_err(|e| LayoutsError::Kernel(e.to_string()))?;
    let profile =
        Profile::for_release(&release).map_err(|e| LayoutsError::Kernel(e.to_string()))?;
    let w = D::WORDS;
    writeln!(
        err,
        "{}: {} random {}, seed {} (repeat with --seed {}), kernel {release} (profile {})",
        w.command, opts.count, w.things, opts.seed, opts.seed, profile.release
    )?;
    let o = opts.clone();
    let report = on_own_thread(move || run_all::<D>(&o, profile, release), w.thing)??;
    if opts.json {
        serde_json::to_writer(&mut out, &report).map_err(std::io::Error::from)?;
        writeln!(out)?;
    } else {
        report.write_text::<D>(&mut out)?;
    }
    Ok(report)
}
