//! `observe --serve`: the port's diagnosis as Prometheus metrics, in the
//! OpenMetrics text format (`prometheus-client` encodes it), over HTTP at
//! `/metrics` on 127.0.0.1 unless another address is named.
//!
//! Every `--every` the tables are read again and the registry is rebuilt
//! from that look; the HTTP thread serves the last one. The per-boot key is
//! never exported: only what it decides (slots, verdict) is.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use reuseport_model::diagnose::{Connection, Diagnosis, Snapshot, VerdictKind};
use reuseport_model::Proto;

/// The address `--serve` listens on when none is named.
pub const DEFAULT_ADDR: &str = "127.0.0.1:9477";

/// Every verdict, so that the labelled gauge has a series for each (1 for
/// the current one, 0 for the others) and a dashboard can colour them.
const VERDICTS: [VerdictKind; 8] = [
    VerdictKind::HashSpread,
    VerdictKind::BeyondHash,
    VerdictKind::SharedListener,
    VerdictKind::StalledListener,
    VerdictKind::FewClients,
    VerdictKind::SingleListener,
    VerdictKind::NoListener,
    VerdictKind::Undecided,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ListenerLabels {
    proto: String,
    port: String,
    /// The socket's inode, as the JSON report's `listeners[].id`.
    listener: String,
    local: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WorkerLabels {
    proto: String,
    port: String,
    pid: String,
    comm: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupLabels {
    proto: String,
    port: String,
    group: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerdictLabels {
    proto: String,
    port: String,
    verdict: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LostLabels {
    proto: String,
    port: String,
    reason: String,
}

/// Counts that last across looks: connections first seen per listener, and
/// what the tracer delivered.
#[derive(Debug, Default)]
pub struct Totals {
    /// Connections seen so far (client, server), to count each once.
    seen: BTreeSet<(String, String)>,
    /// Per listener id: connections first seen held by its only owner.
    accepted: BTreeMap<String, u64>,
    /// Per listener id: SYNs or datagrams the kernel chose it for (--trace).
    pub selected: BTreeMap<String, u64>,
    /// Records the tracer lost, by reason (`ring-full`, `rate`).
    pub lost: BTreeMap<&'static str, u64>,
    /// Looks taken.
    looks: u64,
}

impl Totals {
    /// Counts the connections of one look that were not seen before, each
    /// on the one listener its owner accepts from: the listener whose epoll
    /// watchers include the owner, or, where nothing says who watches, the
    /// one it holds. A connection whose owner accepts from several listeners
    /// of the port (or none) is not attributed.
    pub fn add_look(&mut self, snap: &Snapshot) {
        self.looks += 1;
        let mut by_owner: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
        for l in &snap.listeners {
            let pids: Vec<u32> = match &l.accepting {
                Some(a) => a.clone(),
                None => l.owners.iter().map(|o| o.pid).collect(),
            };
            for pid in pids {
                by_owner.entry(pid).or_default().push(&l.id);
            }
        }
        for c in &snap.connections {
            let Connection {
                client,
                server,
                owners,
            } = c;
            if !self.seen.insert((client.clone(), server.clone())) {
                continue;
            }
            if let [o] = owners.as_slice() {
                if let Some([id]) = by_owner.get(&o.pid).map(Vec::as_slice) {
                    *self.accepted.entry(id.to_string()).or_default() += 1;
                }
            }
        }
        // Bounded: forget the oldest half when a long watch has seen a million.
        if self.seen.len() > 1_000_000 {
            let keep: BTreeSet<_> = snap
                .connections
                .iter()
                .map(|c| (c.client.clone(), c.server.clone()))
                .collect();
            self.seen = keep;
        }
    }
}

/// The metrics of one look, as OpenMetrics text.
pub fn exposition(snap: &Snapshot, d: &Diagnosis, totals: &Totals) -> String {
    let proto = match snap.proto {
        Proto::Tcp => "tcp",
        Proto::Udp => "udp",
    }
    .to_string();
    let port = snap.port.to_string();
    let mut reg = Registry::with_prefix("reuseport");

    let queue = Family::<ListenerLabels, Gauge>::default();
    let backlog = Family::<ListenerLabels, Gauge>::default();
    let drops = Family::<ListenerLabels, Counter>::default();
    let accepted = Family::<ListenerLabels, Counter>::default();
    let selected = Family::<ListenerLabels, Counter>::default();
    let slot = Family::<ListenerLabels, Gauge>::default();
    for l in &d.listeners {
        let labels = ListenerLabels {
            proto: proto.clone(),
            port: port.clone(),
            listener: l.id.clone(),
            local: l.local.clone(),
        };
        queue.get_or_create(&labels).set(i64::from(l.queue));
        backlog.get_or_create(&labels).set(i64::from(l.backlog));
        if let Some(n) = l.drops {
            drops.get_or_create(&labels).inc_by(n);
        }
        accepted
            .get_or_create(&labels)
            .inc_by(totals.accepted.get(&l.id).copied().unwrap_or(0));
        if let Some(n) = totals.selected.get(&l.id) {
            selected.get_or_create(&labels).inc_by(*n);
        }
        if let Some(s) = l.slot {
            slot.get_or_create(&labels).set(i64::from(s));
        }
    }
    reg.register(
        "listener_queue_length",
        "Connections waiting in the listener's accept queue (TCP), or datagrams in its receive queue (UDP), at the last look",
        queue,
    );
    reg.register(
        "listener_backlog",
        "The listener's accept queue limit: listen()'s backlog capped by net.core.somaxconn (TCP; 0 for UDP)",
        backlog,
    );
    reg.register(
        "listener_drops",
        "SYNs dropped on a full accept queue (TCP) or datagrams dropped (UDP): the socket's drop counter",
        drops,
    );
    reg.register(
        "listener_accepted",
        "Connections first seen held by the one process accepting from this listener (observe's looks: one opened and closed between two looks is missed)",
        accepted,
    );
    reg.register(
        "listener_selected",
        "SYNs or datagrams the kernel's reuseport selection handed to this listener, counted by observe --trace",
        selected,
    );
    reg.register(
        "listener_slot",
        "The listener's index in the group's socks[] array, under the key the model found",
        slot,
    );

    let workers = Family::<WorkerLabels, Gauge>::default();
    for w in &d.workers {
        workers
            .get_or_create(&WorkerLabels {
                proto: proto.clone(),
                port: port.clone(),
                pid: w.pid.to_string(),
                comm: w.comm.clone(),
            })
            .set(w.connections as i64);
    }
    reg.register(
        "worker_connections",
        "Connections to the port the process holds (its accepted connections)",
        workers,
    );

    let group = GroupLabels {
        proto: proto.clone(),
        port: port.clone(),
        group: d.group.clone().unwrap_or_default(),
    };
    let percentile = Family::<GroupLabels, Gauge<f64, AtomicU64>>::default();
    let jain = Family::<GroupLabels, Gauge<f64, AtomicU64>>::default();
    if let Some(s) = &d.spread {
        percentile.get_or_create(&group).set(s.percentile);
        jain.get_or_create(&group).set(s.observed.jain);
    }
    reg.register(
        "group_spread_percentile",
        "Where the observed per-worker max/min falls among boots simulated with random keys, as a percentile rank (0 to 100; above 99: more skew than hashing gives)",
        percentile,
    );
    reg.register(
        "group_spread_jain_ratio",
        "Jain's fairness index of the per-worker connection counts (1: even)",
        jain,
    );
    let predicted = Family::<GroupLabels, Gauge<f64, AtomicU64>>::default();
    if let Some((a, n)) = d.agreement {
        if n > 0 {
            predicted.get_or_create(&group).set(a as f64 / n as f64);
        }
    }
    reg.register(
        "group_predicted_ratio",
        "Share of connections whose owner accepts from the listener the model predicts under the key found",
        predicted,
    );

    let verdict = Family::<VerdictLabels, Gauge>::default();
    for v in VERDICTS {
        let name = serde_json::to_value(v).expect("a verdict serialises");
        verdict
            .get_or_create(&VerdictLabels {
                proto: proto.clone(),
                port: port.clone(),
                verdict: name.as_str().unwrap_or("").to_string(),
            })
            .set(i64::from(v == d.verdict.kind));
    }
    reg.register(
        "verdict",
        "The diagnosis: 1 for the current verdict, 0 for the others",
        verdict,
    );

    let lost = Family::<LostLabels, Counter>::default();
    for (reason, n) in &totals.lost {
        lost.get_or_create(&LostLabels {
            proto: proto.clone(),
            port: port.clone(),
            reason: reason.to_string(),
        })
        .inc_by(*n);
    }
    reg.register(
        "trace_lost_records",
        "Records observe --trace lost: ring-full (the ring buffer was full) or rate (over --trace-rate)",
        lost,
    );
    let looks: Counter = Counter::default();
    looks.inc_by(totals.looks);
    reg.register("observe_looks", "Looks at the socket tables so far", looks);

    let mut text = String::new();
    encode(&mut text, &reg).expect("writing to a String cannot fail");
    text
}

/// The HTTP side: serves the last exposition until stopped.
pub struct Server {
    addr: SocketAddr,
    text: Arc<Mutex<String>>,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// The OpenMetrics content type Prometheus asks for.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

impl Server {
    /// Binds `addr` and starts answering `GET /metrics`.
    pub fn start(addr: SocketAddr) -> io::Result<Server> {
        let http = tiny_http::Server::http(addr).map_err(io::Error::other)?;
        let addr = http
            .server_addr()
            .to_ip()
            .ok_or_else(|| io::Error::other("not an IP listener"))?;
        let text = Arc::new(Mutex::new(String::from("# EOF\n")));
        let done = Arc::new(AtomicBool::new(false));
        let (t, d) = (text.clone(), done.clone());
        let thread = std::thread::spawn(move || {
            while !d.load(Ordering::Relaxed) {
                let Ok(Some(req)) = http.recv_timeout(Duration::from_millis(200)) else {
                    continue;
                };
                let path = req.url().split('?').next().unwrap_or("").to_string();
                let _ = match (req.method(), path.as_str()) {
                    (tiny_http::Method::Get, "/metrics") => {
                        let body = t.lock().map(|s| s.clone()).unwrap_or_default();
                        req.respond(
                            tiny_http::Response::from_string(body).with_header(
                                tiny_http::Header::from_bytes("Content-Type", CONTENT_TYPE)
                                    .expect("a valid header"),
                            ),
                        )
                    }
                    (tiny_http::Method::Get, "/") => req.respond(tiny_http::Response::from_string(
                        "reuseport-agent observe --serve: metrics at /metrics\n",
                    )),
                    _ => req.respond(tiny_http::Response::empty(404)),
                };
            }
        });
        Ok(Server {
            addr,
            text,
            done,
            thread: Some(thread),
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves `text` from now on.
    pub fn publish(&self, text: String) {
        if let Ok(mut t) = self.text.lock() {
            *t = text;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Says where the metrics are.
pub fn announce(err: &mut dyn Write, addr: SocketAddr) {
    let _ = writeln!(
        err,
        "observe: serving metrics at http://{addr}/metrics (Ctrl-C ends)"
    );
}
