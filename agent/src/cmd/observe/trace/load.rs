//! Loads `trace.bpf.c` (built by build.rs into a libbpf-rs skeleton),
//! attaches it to `reuseport_select_sock` and drains its ring buffer until
//! told to stop. Runs on its own thread: the skeleton stays on it.

use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, RingBufferBuilder};

use super::{Attach, Collected, KernelRecord};

#[allow(
    clippy::all,
    clippy::pedantic,
    missing_docs,
    non_camel_case_types,
    dead_code
)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/trace.skel.rs"));
}
use skel::{TraceSkel, TraceSkelBuilder};

// The decoder's offsets (KernelRecord::decode) are clang's layout of the
// program's struct record, as the skeleton gives it.
const _: () = {
    use skel::types::record as R;
    use std::mem::{offset_of, size_of};
    assert!(size_of::<R>() == super::RECORD_SIZE);
    assert!(offset_of!(R, t_ns) == 0 && offset_of!(R, inode) == 8);
    assert!(offset_of!(R, hash) == 16 && offset_of!(R, cpu) == 20);
    assert!(offset_of!(R, saddr) == 24 && offset_of!(R, daddr) == 40);
    assert!(offset_of!(R, sport) == 56 && offset_of!(R, dport) == 58);
    assert!(offset_of!(R, num_socks) == 60 && offset_of!(R, num_closed_socks) == 62);
    assert!(offset_of!(R, incoming_cpu) == 64 && offset_of!(R, slot) == 66);
    assert!(offset_of!(R, reuseport_id) == 68 && offset_of!(R, flags) == 72);
};

/// What the tracer is told.
#[derive(Debug, Clone)]
pub struct Config {
    /// The port (host order).
    pub port: u16,
    /// IPPROTO_TCP (6) or IPPROTO_UDP (17).
    pub proto: u16,
    /// Records per second per CPU.
    pub rate: u64,
    /// Ring buffer bytes (a power of two).
    pub ring_bytes: u32,
    /// Records kept.
    pub keep: u64,
    /// How to attach.
    pub attach: Attach,
}

/// Counts the main thread reads while the tracer runs (for --serve).
#[derive(Debug, Default, Clone)]
pub struct Live {
    /// Per chosen inode, records delivered.
    pub per_inode: std::collections::BTreeMap<u64, u64>,
    /// Lost: ring buffer full.
    pub lost_ring_full: u64,
    /// Lost: over the rate.
    pub lost_rate: u64,
}

/// Loads, attaches and drains until `done`; says on `ready` that it is
/// attached (or why not) before the first record is waited for.
pub fn run(
    cfg: &Config,
    done: &AtomicBool,
    ready: Sender<Result<&'static str, String>>,
    live: &Arc<Mutex<Live>>,
) -> Result<Collected, String> {
    // libbpf's own warnings would repeat what the errors below say.
    libbpf_rs::set_print(None);
    // auto: fexit (BTF trampolines: x86_64 5.5+, arm64 6.0+), then kprobes, then the
    // sk_data_ready tracepoint (6.8+); each refusal is kept and reported.
    let (attach, fexit_refused) = match cfg.attach {
        Attach::Auto => {
            let mut why = Vec::new();
            let mut chosen = None;
            for a in [Attach::Fexit, Attach::Kprobe, Attach::Tracepoint] {
                match probe(cfg, a) {
                    Ok(()) => {
                        chosen = Some(a);
                        break;
                    }
                    Err(e) => why.push(e),
                }
            }
            match chosen {
                Some(a) => (a, (!why.is_empty()).then(|| why.join("; "))),
                None => {
                    let e = why.join("; ");
                    let _ = ready.send(Err(e.clone()));
                    return Err(e);
                }
            }
        }
        a => (a, None),
    };
    let mut storage = MaybeUninit::uninit();
    let skel = match open_and_attach(cfg, attach, &mut storage) {
        Ok(s) => s,
        Err(e) => {
            let _ = ready.send(Err(e.clone()));
            return Err(e);
        }
    };
    let (skel, _links) = skel;
    let name = match attach {
        Attach::Fexit => "fexit",
        Attach::Kprobe => "kprobe",
        _ => "tracepoint",
    };
    let _ = ready.send(Ok(name));
    let state = Rc::new(RefCell::new(Collected {
        attach: name,
        fexit_refused,
        ..Collected::default()
    }));
    let s2 = state.clone();
    let keep = cfg.keep as usize;
    let live2 = live.clone();
    let mut builder = RingBufferBuilder::new();
    builder
        .add(&skel.maps.records, move |data: &[u8]| {
            if let Some(r) = KernelRecord::decode(data) {
                let mut c = s2.borrow_mut();
                c.delivered += 1;
                *c.per_inode.entry(r.inode).or_default() += 1;
                if let Ok(mut l) = live2.lock() {
                    *l.per_inode.entry(r.inode).or_default() += 1;
                }
                if c.records.len() < keep {
                    c.records.push(r);
                }
            }
            0
        })
        .map_err(|e| format!("the ring buffer: {e}"))?;
    let ring = builder
        .build()
        .map_err(|e| format!("the ring buffer: {e}"))?;
    let counters = |skel: &TraceSkel| -> [u64; 4] {
        let mut out = [0u64; 4];
        for (i, o) in out.iter_mut().enumerate() {
            if let Ok(Some(per_cpu)) = skel
                .maps
                .counters
                .lookup_percpu(&(i as u32).to_ne_bytes(), MapFlags::ANY)
            {
                *o = per_cpu
                    .iter()
                    .filter_map(|v| {
                        v.get(..8)
                            .map(|b| u64::from_ne_bytes(b.try_into().unwrap()))
                    })
                    .sum();
            }
        }
        out
    };
    let mut tick = 0u32;
    while !done.load(Ordering::Relaxed) {
        ring.poll(Duration::from_millis(100))
            .map_err(|e| format!("polling the ring buffer: {e}"))?;
        tick += 1;
        if tick.is_multiple_of(5) {
            let c = counters(&skel);
            if let Ok(mut l) = live.lock() {
                l.lost_ring_full = c[1];
                l.lost_rate = c[2];
            }
        }
    }
    // What is still in the buffer belongs to the watch.
    let _ = ring.consume();
    drop(ring);
    let c = counters(&skel);
    let mut out = Rc::try_unwrap(state)
        .map_err(|_| "the ring buffer still holds its callback".to_string())?
        .into_inner();
    out.seen = c[0];
    out.lost_ring_full = c[1];
    out.lost_rate = c[2];
    out.no_packet = c[3];
    Ok(out)
}

type Loaded<'obj> = (TraceSkel<'obj>, Vec<libbpf_rs::Link>);

fn open_and_attach<'obj>(
    cfg: &Config,
    attach: Attach,
    storage: &'obj mut MaybeUninit<libbpf_rs::OpenObject>,
) -> Result<Loaded<'obj>, String> {
    let mut open = TraceSkelBuilder::default()
        .open(storage)
        .map_err(|e| format!("opening the eBPF object: {e}"))?;
    let ro = open
        .maps
        .rodata_data
        .as_deref_mut()
        .ok_or("the eBPF object has no read-only data")?;
    ro.target_port = cfg.port;
    ro.target_proto = cfg.proto;
    ro.max_per_sec = cfg.rate;
    open.maps
        .records
        .set_max_entries(cfg.ring_bytes)
        .map_err(|e| format!("sizing the ring buffer: {e}"))?;
    let (fexit, kprobe) = (attach == Attach::Fexit, attach == Attach::Kprobe);
    open.progs.fexit_select.set_autoload(fexit);
    open.progs.kprobe_select.set_autoload(kprobe);
    open.progs.kretprobe_select.set_autoload(kprobe);
    open.progs.data_ready.set_autoload(!fexit && !kprobe);
    let what = match attach {
        Attach::Fexit => "fexit",
        Attach::Kprobe => "kprobe",
        _ => "tracepoint",
    };
    let skel = open
        .load()
        .map_err(|e| format!("{what}: loading the program: {e}"))?;
    let links = if fexit {
        vec![skel
            .progs
            .fexit_select
            .attach()
            .map_err(|e| format!("fexit: attaching to {}: {e}", super::SYMBOL))?]
    } else if !kprobe {
        vec![skel
            .progs
            .data_ready
            .attach()
            .map_err(|e| format!("tracepoint: attaching to sk_data_ready: {e}"))?]
    } else {
        vec![
            skel.progs
                .kprobe_select
                .attach()
                .map_err(|e| format!("kprobe: attaching to {}: {e}", super::SYMBOL))?,
            skel.progs
                .kretprobe_select
                .attach()
                .map_err(|e| format!("kprobe: attaching a kretprobe to {}: {e}", super::SYMBOL))?,
        ]
    };
    Ok((skel, links))
}

/// Loads and attaches one way once and lets it go: whether this kernel
/// (and its security policy) allows it.
fn probe(cfg: &Config, attach: Attach) -> Result<(), String> {
    let mut storage = MaybeUninit::uninit();
    open_and_attach(cfg, attach, &mut storage).map(|_| ())
}
