//! `observe` against a real nginx (Debian's package, installed by
//! scripts/setup.sh, never started as a service): run by the test on
//! loopback with its own configuration in a temporary directory, stopped
//! and reaped when the test ends. The expectations come from nginx and the
//! kernel: which worker really accepted each connection, as /proc shows.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;

const NGINX: &str = "/usr/sbin/nginx";

/// An nginx master and its workers, killed and reaped on drop.
struct Nginx {
    child: Child,
    dir: PathBuf,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGCONT first: a worker the test stopped must be able to exit.
        let _ = Command::new("pkill")
            .args(["-CONT", "-P", &self.child.id().to_string()])
            .status();
        // SIGTERM to the master stops the workers fast; then reap.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start_nginx(name: &str, port: u16, workers: u32, reuseport: bool) -> Nginx {
    let dir = std::env::temp_dir().join(format!("reuseport-observe-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let conf = format!(
        "daemon off;\nmaster_process on;\nworker_processes {workers};\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n\
         events {{ worker_connections 4096; }}\n\
         http {{\n  access_log off;\n  keepalive_timeout 600s;\n  client_header_timeout 600s;\n\
           client_body_temp_path {d}/tmp;\n  proxy_temp_path {d}/tmp;\n  fastcgi_temp_path {d}/tmp;\n  uwsgi_temp_path {d}/tmp;\n  scgi_temp_path {d}/tmp;\n\
           server {{ listen 127.0.0.1:{port}{rp}; location / {{ return 200 \"ok\\n\"; }} }}\n}}\n",
        d = dir.display(),
        rp = if reuseport { " reuseport" } else { "" },
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let child = Command::new(NGINX)
        .args([
            "-p",
            &dir.display().to_string(),
            "-c",
            &dir.join("nginx.conf").display().to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("nginx starts");
    let n = Nginx { child, dir };
    wait_answering(port, &format!("nginx (see {}/error.log)", n.dir.display()));
    n
}

/// Waits until a request to `port` is answered (bounded generously: a busy
/// machine is slow to start servers).
fn wait_answering(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port))
        .and_then(|mut s| request(&mut s))
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "{what} never answered on port {port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One keep-alive request: once answered, the connection is accepted and
/// held by the worker that accepted it.
fn request(s: &mut TcpStream) -> std::io::Result<()> {
    ask(s, b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
}

/// Sends `msg` and reads until the answer ends with "ok\n".
fn ask(s: &mut TcpStream, msg: &[u8]) -> std::io::Result<()> {
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    s.write_all(msg)?;
    let mut buf = [0u8; 512];
    let mut got = Vec::new();
    while !got.ends_with(b"ok\n") {
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Err(std::io::Error::other("closed"));
        }
        got.extend_from_slice(&buf[..n]);
    }
    Ok(())
}

/// A connection from a client address of 127.0.0.0/8 other than 127.0.0.1.
fn connect_from(i: u32, port: u16) -> TcpStream {
    let a = 0x7f00_0000 | (((i.wrapping_mul(2_654_435_761)) >> 8) & 0x00ff_fffe) | 2;
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.bind(&SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::from(a), 0)).into())
        .unwrap();
    sock.connect(&SocketAddr::from(([127, 0, 0, 1], port)).into())
        .unwrap();
    sock.into()
}

fn observe(port: u16, extra: &[&str]) -> (i32, serde_json::Value, String) {
    let mut args = vec![
        "observe",
        "--port",
        &*Box::leak(port.to_string().into_boxed_str()),
        "--json",
        "-",
    ];
    args.extend_from_slice(extra);
    let run = common::agent(&args, "", Duration::from_secs(900));
    let json = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    (run.code, json, run.stderr)
}

fn ready(test: &str, bin: &str) -> bool {
    if !common::is_root() {
        common::skip(
            test,
            "the servers' workers (nginx's run as www-data) hold descriptors only root can read",
        );
        return false;
    }
    if !Path::new(bin).exists() {
        common::skip(
            test,
            &format!("{bin} is not installed (scripts/setup.sh installs it)"),
        );
        return false;
    }
    true
}

/// nginx with `workers` workers and `reuseport`, 40 connections per worker:
/// observe must find the key from who accepted what alone, then predict
/// every connection's worker as nginx and the kernel really placed it.
fn nginx_reuseport(name: &str, workers: u64, port: u16) {
    let _nginx = start_nginx(name, port, workers as u32, true);
    let count = 40 * workers as u32;
    let mut conns: Vec<TcpStream> = (0..count).map(|i| connect_from(i, port)).collect();
    for c in conns.iter_mut() {
        request(c).unwrap();
    }
    let (code, r, err) = observe(port, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(r["verdict"]["kind"], "hash-spread", "{err}");
    assert!(r["key"]["initval"].is_string(), "{}", r["keyReason"]);
    let listeners = r["listeners"].as_array().unwrap();
    let mut slots: Vec<u64> = listeners
        .iter()
        .map(|l| l["slot"].as_u64().expect("every listener's slot"))
        .collect();
    slots.sort_unstable();
    assert_eq!(slots, (0..workers).collect::<Vec<_>>());
    // Each listener is held by the master and every worker, watched by one worker.
    for l in listeners {
        assert_eq!(
            l["owners"].as_array().unwrap().len() as u64,
            workers + 1,
            "{l}"
        );
        assert_eq!(l["accepting"].as_array().unwrap().len(), 1, "{l}");
    }
    let cs = r["connections"].as_array().unwrap();
    // Ours, plus the readiness probe's connection if nginx still holds it.
    assert!(cs.len() >= count as usize, "{}", cs.len());
    for c in cs {
        assert!(c["pid"].is_u64(), "{c}");
        assert_eq!(c["predicted"], c["ownerSlot"], "{c}");
    }
    assert_eq!(r["agreement"][0], r["agreement"][1]);
    drop(conns);
}

#[test]
fn nginx_reuseport_four_workers_key_recovered_every_connection_predicted() {
    if ready("nginx_reuseport_four_workers", NGINX) {
        nginx_reuseport("rp4", 4, 18_471);
    }
}

#[test]
fn nginx_reuseport_eight_workers_key_recovered_every_connection_predicted() {
    if ready("nginx_reuseport_eight_workers", NGINX) {
        nginx_reuseport("rp8", 8, 18_477);
    }
}

#[test]
fn nginx_one_shared_listener_is_diagnosed_shared_not_hashing() {
    // Without `reuseport`, one socket is opened by the master and every
    // worker waits on it: no hash is involved, whatever the counts.
    if !ready("nginx_one_shared_listener", NGINX) {
        return;
    }
    let port = 18_472;
    let _nginx = start_nginx("shared", port, 4, false);
    let mut conns: Vec<TcpStream> = (0..40).map(|i| connect_from(i, port)).collect();
    for c in conns.iter_mut() {
        request(c).unwrap();
    }
    let (code, r, err) = observe(port, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(r["listeners"].as_array().unwrap().len(), 1);
    assert_eq!(r["verdict"]["kind"], "shared-listener", "{err}");
    assert_eq!(
        r["verdict"]["pids"].as_array().unwrap().len(),
        4,
        "{}",
        r["verdict"]
    );
    assert!(r["key"].is_null());
}

#[test]
fn nginx_worker_stopped_while_connections_arrive_is_a_stalled_listener() {
    // SIGSTOP one worker, keep connecting during the watch: its listener's
    // accept queue grows while the others drain, and observe names its pid.
    if !ready("nginx_worker_stopped", NGINX) {
        return;
    }
    let port = 18_473;
    let nginx = start_nginx("stall", port, 4, true);
    let (_, first, _) = observe(port, &["--no-search"]);
    let victim = first["listeners"][0]["accepting"][0]
        .as_u64()
        .expect("a worker watches listener 0") as i32;
    unsafe { libc::kill(victim, libc::SIGSTOP) };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = stop.clone();
    let client = std::thread::spawn(move || {
        let mut held = Vec::new();
        let mut i = 1000;
        while !s2.load(std::sync::atomic::Ordering::Relaxed) && i < 5000 {
            held.push(connect_from(i, port));
            i += 1;
            std::thread::sleep(Duration::from_millis(20));
        }
        held
    });
    let (code, r, err) = observe(port, &["--for", "3s", "--every", "500ms", "--no-search"]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _held = client.join().unwrap();
    unsafe { libc::kill(victim, libc::SIGCONT) };
    drop(nginx);
    assert_eq!(code, 0, "{err}");
    assert_eq!(r["verdict"]["kind"], "stalled-listener", "{}", r["verdict"]);
    assert_eq!(r["verdict"]["pids"], serde_json::json!([victim]));
}

/// Processes killed and reaped on drop.
struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn python_asyncio_one_reuseport_listener_per_process_key_recovered() {
    // Four copies of an asyncio server, each its own SO_REUSEPORT listener
    // (agent/tests/servers/asyncio_reuseport.py): the pids are the labels,
    // and every connection's process is predicted.
    if !ready("python_asyncio_reuseport", "/usr/bin/python3") {
        return;
    }
    let port = 18_474;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/servers/asyncio_reuseport.py"
    );
    let procs = Procs(
        (0..4)
            .map(|_| {
                Command::new("python3")
                    .args([script, "127.0.0.1", &port.to_string()])
                    .stdin(Stdio::null())
                    .spawn()
                    .expect("python3 runs")
            })
            .collect(),
    );
    // Ready when all four listen (bounded generously).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, r, _) = observe(port, &["--no-search"]);
        if r["listeners"].as_array().is_some_and(|l| l.len() == 4) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the four servers never listened: {}",
            r["listeners"]
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut conns: Vec<TcpStream> = (0..120).map(|i| connect_from(5000 + i, port)).collect();
    for c in conns.iter_mut() {
        ask(c, b"hello\n").unwrap();
    }
    let (code, r, err) = observe(port, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(r["verdict"]["kind"], "hash-spread", "{err}");
    assert!(r["key"]["initval"].is_string(), "{}", r["keyReason"]);
    let pids: Vec<u64> = procs.0.iter().map(|c| c.id() as u64).collect();
    let cs = r["connections"].as_array().unwrap();
    assert_eq!(cs.len(), 120);
    for c in cs {
        assert!(pids.contains(&c["pid"].as_u64().unwrap()), "{c}");
        assert_eq!(c["predicted"], c["ownerSlot"], "{c}");
    }
    assert_eq!(r["agreement"], serde_json::json!([120, 120]));
    drop(conns);
}

const HAPROXY: &str = "/usr/sbin/haproxy";

/// HAProxy in the foreground with `binds` (each a `bind` line's extra words)
/// on one frontend answering every request itself.
fn start_haproxy(name: &str, port: u16, binds: &[&str]) -> Procs {
    let dir = std::env::temp_dir().join(format!("reuseport-observe-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let binds: String = binds
        .iter()
        .map(|b| format!("  bind 127.0.0.1:{port} {b}\n"))
        .collect();
    let conf = format!(
        "global\n  nbthread 4\n\ndefaults\n  mode http\n  timeout client 600s\n  timeout connect 5s\n  timeout server 5s\n  timeout http-keep-alive 600s\n\n\
         frontend f\n{binds}  http-request return status 200 content-type text/plain string \"ok\\n\"\n"
    );
    let cfg = dir.join("haproxy.cfg");
    std::fs::write(&cfg, conf).unwrap();
    let child = Command::new(HAPROXY)
        .args(["-db", "-f", &cfg.display().to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("haproxy starts");
    let procs = Procs(vec![child]);
    wait_answering(port, "haproxy");
    procs
}

/// HAProxy with `binds`, 40 keep-alive connections answered, then
/// `observe`: its pid, the exit code, the report, stderr; the listeners'
/// count checked against `listeners`.
fn haproxy_observed(
    name: &str,
    port: u16,
    binds: &[&str],
    first: u32,
    listeners: usize,
) -> (u32, i32, serde_json::Value, String) {
    let hp = start_haproxy(name, port, binds);
    let mut conns: Vec<TcpStream> = (0..40).map(|i| connect_from(first + i, port)).collect();
    for c in conns.iter_mut() {
        request(c).unwrap();
    }
    let (code, r, err) = observe(port, &[]);
    assert_eq!(
        r["listeners"].as_array().unwrap().len(),
        listeners,
        "{}",
        r["listeners"]
    );
    (hp.0[0].id(), code, r, err)
}

#[test]
fn haproxy_four_threads_on_one_bind_share_one_socket() {
    // nbthread 4 and one bind line: one socket, one process, four pollers.
    // The threads wait on one queue: shared, never "nothing to balance".
    if !ready("haproxy_four_threads_one_bind", HAPROXY) {
        return;
    }
    let (pid, code, r, err) = haproxy_observed("hp1", 18_475, &[""], 7000, 1);
    assert_eq!(code, 0, "{err}");
    assert_eq!(r["verdict"]["kind"], "shared-listener", "{}", r["verdict"]);
    assert_eq!(r["verdict"]["pids"], serde_json::json!([pid]));
}

#[test]
fn haproxy_one_listener_per_thread_cannot_be_told_apart_and_says_so() {
    // Four bind lines, one per thread: four SO_REUSEPORT sockets in one
    // process. Every connection's owner is the one pid, so the socket tables
    // cannot say which listener took it: undecided, naming why.
    if !ready("haproxy_listener_per_thread", HAPROXY) {
        return;
    }
    let binds = ["thread 1", "thread 2", "thread 3", "thread 4"];
    let (pid, code, r, err) = haproxy_observed("hp4", 18_476, &binds, 8000, 4);
    assert_eq!(code, 1, "undecided is status 1: {err}");
    assert_eq!(r["verdict"]["kind"], "undecided", "{}", r["verdict"]);
    assert_eq!(
        r["keyReason"],
        serde_json::json!({"kind": "one-process", "pid": pid})
    );
}
