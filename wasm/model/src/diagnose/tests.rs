//! Snapshots built by hand (the accepted connections placed by the model's
//! own selection under a key the test chooses, the pids made up) and the
//! verdict each setup must get.

use std::net::Ipv4Addr;

use super::*;

const PORT: u16 = 18080;

fn owner(pid: u32) -> Owner {
    Owner {
        pid,
        comm: "nginx".into(),
    }
}

fn listener(id: &str, local: &str, owners: &[u32], accepting: Option<Vec<u32>>) -> Listener {
    Listener {
        id: id.into(),
        local: local.into(),
        owners: owners.iter().map(|&p| owner(p)).collect(),
        accepting,
        epoll_sets: None,
        queue: 0,
        backlog: 511,
        drops: Some(0),
    }
}

fn clients(count: usize, seed: u32) -> Vec<(Ipv4Addr, u16)> {
    let mut x = seed;
    (0..count)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (
                Ipv4Addr::from(0x7f00_0000 | (x & 0x00ff_ffff)),
                (32768 + (x >> 20) % 28000) as u16,
            )
        })
        .collect()
}

/// A reuseport group of `n` workers, pid 1000+7·slot accepting from slot,
/// listeners listed in an order unrelated to the slots; the master (pid 1)
/// holds every listener too, as nginx's does.
fn reuseport(n: u32, key: u32, count: usize) -> Snapshot {
    let spec = GroupSpec::new(
        Proto::Tcp,
        n,
        "127.0.0.1".parse().unwrap(),
        PORT,
        Keys {
            v4: key,
            ..Keys::default()
        },
    );
    let g = ReuseportGroup::build(Profile::named("6.18").unwrap(), &spec).unwrap();
    let pid = |slot: u32| 1000 + 7 * slot;
    let all: Vec<u32> = std::iter::once(1).chain((0..n).map(pid)).collect();
    let listeners = (0..n)
        .rev()
        .map(|s| {
            listener(
                &format!("ino{}", 500 + s),
                "127.0.0.1:18080",
                &all,
                Some(vec![pid(s)]),
            )
        })
        .collect();
    let connections = clients(count, key | 1)
        .into_iter()
        .map(|(a, p)| {
            let t = Tuple::v4(a, p, Ipv4Addr::LOCALHOST, PORT);
            let l = g.select(&t, 0).unwrap().listener.unwrap();
            Connection {
                client: format!("{a}:{p}"),
                server: format!("127.0.0.1:{PORT}"),
                owners: vec![owner(pid(l))],
            }
        })
        .collect();
    Snapshot {
        proto: Proto::Tcp,
        port: PORT,
        listeners,
        connections,
        samples: vec![],
    }
}

fn diagnose_window(snap: &Snapshot, window: Range<u64>) -> Diagnosis {
    let p = prepare(Profile::named("6.18").unwrap(), snap).unwrap();
    let mut found = Found::new(1000);
    p.search(window, &mut found);
    p.finish(Some(&found))
}

#[test]
fn nginx_like_reuseport_workers_get_their_key_slots_and_hash_spread() {
    let key = 0x0002_4680;
    let snap = reuseport(4, key, 80);
    let d = diagnose_window(&snap, 0..(1 << 19));
    let k = d.key.as_ref().expect("key found");
    assert_eq!(k.initval, "0x00024680");
    assert_eq!(d.agreement, Some((80, 80)));
    // Each worker's slot is the one the test gave it; each listener's slot
    // follows from the worker its epoll set names.
    for w in &d.workers {
        assert_eq!(w.pid, 1000 + 7 * w.slot.unwrap());
    }
    for l in &d.listeners {
        assert_eq!(l.id, format!("ino{}", 500 + l.slot.unwrap()));
    }
    assert_eq!(d.verdict.kind, VerdictKind::HashSpread);
    assert_eq!(d.workers.iter().map(|w| w.connections).sum::<u64>(), 80);
}

#[test]
fn owners_that_do_not_follow_the_hash_are_beyond_it() {
    // Same group, but one worker's connections handed to another pid: no
    // key fits who accepted what.
    let mut snap = reuseport(4, 0x1357, 60);
    for c in snap.connections.iter_mut().take(15) {
        c.owners = vec![owner(1000)];
    }
    let d = diagnose_window(&snap, 0..(1 << 16));
    assert!(d.key.is_none());
    assert!(
        matches!(d.key_reason, Some(Reason::NoKeyFits { .. })),
        "{:?}",
        d.key_reason
    );
    assert_eq!(d.verdict.kind, VerdictKind::BeyondHash);
}

#[test]
fn one_socket_held_by_five_processes_is_a_shared_listener_not_hashing() {
    let snap = Snapshot {
        proto: Proto::Tcp,
        port: PORT,
        listeners: vec![listener(
            "ino9",
            "0.0.0.0:18080",
            &[1, 11, 12, 13, 14],
            None,
        )],
        connections: clients(40, 3)
            .into_iter()
            .enumerate()
            .map(|(i, (a, p))| Connection {
                client: format!("{a}:{p}"),
                server: format!("127.0.0.1:{PORT}"),
                owners: vec![owner(11 + (i as u32 % 3))],
            })
            .collect(),
        samples: vec![],
    };
    let d = diagnose_window(&snap, 0..1);
    assert_eq!(d.verdict.kind, VerdictKind::SharedListener);
    assert_eq!(d.verdict.pids, vec![11, 12, 13]);
    assert!(d.key.is_none() && d.spread.is_none());
}

#[test]
fn a_queue_that_grows_beside_drained_ones_names_the_stopped_worker() {
    let mut snap = reuseport(4, 0x99, 20);
    let sample = |t_ms, q2| Sample {
        t_ms,
        listeners: (0..4)
            .map(|s| ListenerSample {
                id: format!("ino{}", 500 + s),
                queue: if s == 2 { q2 } else { 0 },
                drops: Some(0),
            })
            .collect(),
        workers: vec![],
    };
    snap.samples = vec![sample(0, 1), sample(1000, 9), sample(2000, 17)];
    let d = diagnose_window(&snap, 0..1);
    assert_eq!(d.verdict.kind, VerdictKind::StalledListener);
    assert_eq!(d.verdict.listeners, vec!["ino502".to_string()]);
    assert_eq!(d.verdict.pids, vec![1014]);
}

#[test]
fn threads_of_one_process_cannot_be_told_apart_and_say_so() {
    let mut snap = reuseport(4, 0x42, 30);
    for l in snap.listeners.iter_mut() {
        l.owners = vec![owner(77)];
        l.accepting = None;
    }
    for c in snap.connections.iter_mut() {
        c.owners = vec![owner(77)];
    }
    let d = diagnose_window(&snap, 0..1);
    assert_eq!(d.key_reason, Some(Reason::OneProcess { pid: 77 }));
    assert_eq!(d.verdict.kind, VerdictKind::Undecided);
}

#[test]
fn connections_without_owners_leave_the_verdict_undecided() {
    let mut snap = reuseport(4, 0x42, 30);
    for c in snap.connections.iter_mut() {
        c.owners.clear();
    }
    let d = diagnose_window(&snap, 0..1);
    assert_eq!(d.key_reason, Some(Reason::NoOwners));
    assert_eq!(d.verdict.kind, VerdictKind::Undecided);
}

#[test]
fn three_connections_on_eight_workers_are_few_clients() {
    let snap = reuseport(8, 0x5, 3);
    let d = diagnose_window(&snap, 0..1);
    assert_eq!(d.verdict.kind, VerdictKind::FewClients);
}

#[test]
fn no_listener_and_one_listener_one_process_are_not_groups() {
    let empty = Snapshot {
        proto: Proto::Tcp,
        port: PORT,
        listeners: vec![],
        connections: vec![],
        samples: vec![],
    };
    assert_eq!(
        diagnose_window(&empty, 0..1).verdict.kind,
        VerdictKind::NoListener
    );
    let one = Snapshot {
        listeners: vec![listener("ino1", "127.0.0.1:18080", &[5], None)],
        ..empty
    };
    assert_eq!(
        diagnose_window(&one, 0..1).verdict.kind,
        VerdictKind::SingleListener
    );
}

#[test]
fn bad_addresses_and_ports_are_refused_naming_the_field() {
    let mut snap = reuseport(2, 1, 2);
    snap.connections[1].client = "127.0.0.1".into();
    let e = prepare(Profile::named("6.18").unwrap(), &snap).unwrap_err();
    assert_eq!(
        e.to_string(),
        "connections[1].client: \"127.0.0.1\" is not ADDR:PORT ([ADDR]:PORT for IPv6)"
    );
    let mut snap = reuseport(2, 1, 2);
    snap.listeners[0].local = "127.0.0.1:80".into();
    let e = prepare(Profile::named("6.18").unwrap(), &snap).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("listeners[0].local: 127.0.0.1:80 is not on port 18080"),
        "{e}"
    );
}

#[test]
fn one_socket_watched_by_four_epoll_sets_of_one_process_is_shared_by_threads() {
    // HAProxy with nbthread 4 and one bind: one pid, one socket, four
    // pollers. Threads wait on one queue: not "nothing to balance".
    let mut l = listener("ino3", "127.0.0.1:18080", &[42], Some(vec![42]));
    l.epoll_sets = Some(4);
    let snap = Snapshot {
        proto: Proto::Tcp,
        port: PORT,
        listeners: vec![l.clone()],
        connections: vec![],
        samples: vec![],
    };
    let d = diagnose_window(&snap, 0..1);
    assert_eq!(d.verdict.kind, VerdictKind::SharedListener);
    assert_eq!(d.verdict.pids, vec![42]);
    l.epoll_sets = Some(1);
    let one = Snapshot {
        listeners: vec![l],
        ..snap
    };
    assert_eq!(
        diagnose_window(&one, 0..1).verdict.kind,
        VerdictKind::SingleListener
    );
}

#[test]
fn a_stalled_listener_seen_without_epoll_sets_names_its_worker_not_the_master() {
    // From ss alone, every listener is held by the master (pid 1) and its
    // worker; the master holds no connection, so it is not the one named.
    let mut snap = reuseport(4, 0x99, 40);
    for (s, l) in snap.listeners.iter_mut().enumerate() {
        let slot = 3 - s as u32;
        l.accepting = None;
        l.owners = vec![owner(1), owner(1000 + 7 * slot)];
    }
    let sample = |t_ms, q| Sample {
        t_ms,
        listeners: (0..4)
            .map(|s| ListenerSample {
                id: format!("ino{}", 500 + s),
                queue: if s == 1 { q } else { 0 },
                drops: Some(0),
            })
            .collect(),
        workers: vec![],
    };
    snap.samples = vec![sample(0, 2), sample(1000, 12)];
    let d = diagnose_window(&snap, 0..1);
    assert_eq!(d.verdict.kind, VerdictKind::StalledListener);
    assert_eq!(d.verdict.pids, vec![1007]);
}
