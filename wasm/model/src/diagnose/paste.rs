//! Pasted text read into a diagnosis's input: the socket tables `ss` prints
//! (`ss -ltnpe` and `ss -tnpe`, or `ss -tanpe` which holds both; UDP's
//! `ss -uanpe`) into a [`Snapshot`], or per-worker counts (a list of
//! numbers, `uniq -c` output, Envoy's `worker_N…: COUNT` stats) into a
//! [`CountsRead`] for [`super::counts::diagnose_counts`].
//!
//! From `ss`: the `LISTEN` lines (UDP: `UNCONN`) are the listeners, with
//! `Recv-Q` the accept queue and `Send-Q` the backlog; the `ESTAB` lines
//! whose local port is the port diagnosed are its connections. The
//! `users:(("nginx",pid=123,fd=6),…)` field gives each socket's owners (a
//! pid is a label, never a listener number), `ino:` a listener's id. The
//! same socket pasted twice (`-ltnpe` and `-tanpe` together) counts once.
//! Which port is diagnosed is given, or else the listening port that most
//! connections reach.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};

use serde::Serialize;

use super::{Connection, Listener, Owner, Snapshot};
use crate::tuple::Proto;

/// Lines one paste may have.
pub const MAX_LINES: usize = 2_000_000;

/// Why a line of `ss` output was not used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SsLineError {
    /// Fewer columns than `State Recv-Q Send-Q Local Peer`.
    Columns,
    /// `Recv-Q` or `Send-Q` is not a number.
    Queue,
    /// An address that is not `ADDR:PORT` with a numeric port (run `ss`
    /// with `-n`).
    Address,
}

/// A line that was not used, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct SsBadLine {
    /// 1-based line number.
    pub line: u32,
    /// Why.
    pub error: SsLineError,
}

/// What was read from `ss` output: the snapshot and an account of every line.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct SsRead {
    /// The port's sockets.
    pub snapshot: Snapshot,
    /// Ports with a listening socket in the paste, lowest first.
    pub listening_ports: Vec<u16>,
    /// Listening lines read (on any port).
    pub listen_lines: u32,
    /// Connection lines read (on any port).
    pub connection_lines: u32,
    /// Lines of a socket already read (the same inode, or the same two
    /// addresses, pasted twice).
    pub duplicates: u32,
    /// Lines of sockets on other ports, or in other states (`TIME-WAIT`…).
    pub other: u32,
    /// Whether any socket carried its owners (`ss -p`, run as root for
    /// every process's).
    pub owners_shown: bool,
    /// Lines that could not be read (the first 100).
    pub bad: Vec<SsBadLine>,
    /// Lines that could not be read, in all.
    pub bad_count: u32,
}

/// Per-worker counts read from text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct CountsRead {
    /// One count per worker, in the order given.
    pub counts: Vec<u64>,
    /// Each count's label (`uniq -c`'s value, Envoy's stat name), or empty.
    pub labels: Vec<String>,
}

/// What pasted text holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ServerInput {
    /// Socket tables.
    Sockets(SsRead),
    /// Per-worker counts.
    Counts(CountsRead),
}

/// Why pasted text cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerReadError {
    /// Nothing but blank lines.
    #[error("the text is empty: paste the output of ss -tanpe, or one count per worker")]
    Empty,
    /// Neither socket tables nor counts.
    #[error(
        "line {line} is neither a line of ss output (LISTEN, ESTAB, UNCONN) nor a count: paste the output of \
         ss -tanpe (or ss -ltnpe and ss -tnpe), or one count per worker"
    )]
    Unknown {
        /// The first line that fits neither.
        line: u32,
    },
    /// Socket tables without a single socket on any port.
    #[error(
        "no line of the ss output could be read: run ss with -n (numeric ports), as ss -tanpe"
    )]
    NoSockets,
    /// Over the bound.
    #[error("{lines} lines: at most {max} are read")]
    TooLong {
        /// Lines given.
        lines: usize,
        /// The bound.
        max: usize,
    },
}

const STATES: &[&str] = &[
    "LISTEN",
    "ESTAB",
    "UNCONN",
    "SYN-SENT",
    "SYN-RECV",
    "FIN-WAIT-1",
    "FIN-WAIT-2",
    "TIME-WAIT",
    "CLOSE-WAIT",
    "LAST-ACK",
    "CLOSING",
    "CLOSED",
];

/// Reads pasted text: socket tables when any line is one, else counts.
/// `port` picks the port diagnosed, `proto` overrides what the paste says.
pub fn read_server(
    text: &str,
    port: Option<u16>,
    proto: Option<Proto>,
) -> Result<ServerInput, ServerReadError> {
    let lines = text.lines().count();
    if lines > MAX_LINES {
        return Err(ServerReadError::TooLong {
            lines,
            max: MAX_LINES,
        });
    }
    if text.lines().all(|l| l.trim().is_empty()) {
        return Err(ServerReadError::Empty);
    }
    let is_ss = text.lines().any(|l| {
        let mut w = l.split_whitespace();
        let first = w.next().unwrap_or("");
        let second = w.next().unwrap_or("");
        STATES.contains(&first)
            || (is_netid(first) && STATES.contains(&second))
            || l.contains("Local Address")
    });
    if is_ss {
        return read_ss(text, port, proto).map(ServerInput::Sockets);
    }
    read_counts(text).map(ServerInput::Counts)
}

fn is_netid(w: &str) -> bool {
    matches!(w, "tcp" | "udp" | "tcp6" | "udp6")
}

/// One socket line of `ss`.
struct SsLine {
    proto: Option<Proto>,
    state: String,
    recv_q: u32,
    send_q: u32,
    local: SocketAddr,
    /// `None` for a peer `*` (a listening or unconnected socket).
    peer: Option<SocketAddr>,
    owners: Vec<Owner>,
    ino: Option<String>,
}

/// Reads `ss` output into the snapshot of one port.
pub fn read_ss(
    text: &str,
    port: Option<u16>,
    proto: Option<Proto>,
) -> Result<SsRead, ServerReadError> {
    let mut socks = Vec::new();
    let mut bad = Vec::new();
    let mut bad_count = 0u32;
    let mut other = 0u32;
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if t.is_empty()
            || t.starts_with("State")
            || t.starts_with("Netid")
            || t.starts_with("Recv-Q")
        {
            continue;
        }
        match parse_line(t) {
            Ok(Some(s)) => socks.push(s),
            Ok(None) => other += 1,
            Err(error) => {
                bad_count += 1;
                if bad.len() < 100 {
                    bad.push(SsBadLine {
                        line: i as u32 + 1,
                        error,
                    });
                }
            }
        }
    }
    if socks.is_empty() {
        return Err(ServerReadError::NoSockets);
    }
    let proto = proto
        .or_else(|| socks.iter().find_map(|s| s.proto))
        .unwrap_or_else(|| {
            if socks.iter().any(|s| s.state == "UNCONN")
                && !socks.iter().any(|s| s.state == "LISTEN")
            {
                Proto::Udp
            } else {
                Proto::Tcp
            }
        });
    let listening = |s: &SsLine| match proto {
        Proto::Tcp => s.state == "LISTEN",
        Proto::Udp => s.state == "UNCONN" && s.peer.is_none(),
    };
    let connected = |s: &SsLine| proto == Proto::Tcp && s.state == "ESTAB" && s.peer.is_some();
    let same_proto = |s: &SsLine| s.proto.is_none_or(|p| p == proto);
    let listening_ports: BTreeSet<u16> = socks
        .iter()
        .filter(|s| same_proto(s) && listening(s))
        .map(|s| s.local.port())
        .collect();
    let listen_lines = socks
        .iter()
        .filter(|s| same_proto(s) && listening(s))
        .count() as u32;
    let connection_lines = socks
        .iter()
        .filter(|s| same_proto(s) && connected(s))
        .count() as u32;
    let port = port.unwrap_or_else(|| {
        let reach = |p: u16| {
            socks
                .iter()
                .filter(|s| connected(s) && s.local.port() == p)
                .count()
        };
        let listeners = |p: u16| {
            socks
                .iter()
                .filter(|s| listening(s) && s.local.port() == p)
                .count()
        };
        match listening_ports
            .iter()
            .copied()
            .max_by_key(|&p| (reach(p), listeners(p), std::cmp::Reverse(p)))
        {
            Some(p) => p,
            // No listener pasted: the local port most connections share.
            None => {
                let mut per: BTreeMap<u16, usize> = BTreeMap::new();
                for s in socks.iter().filter(|s| connected(s)) {
                    *per.entry(s.local.port()).or_default() += 1;
                }
                per.iter()
                    .max_by_key(|(p, n)| (**n, std::cmp::Reverse(**p)))
                    .map(|(p, _)| *p)
                    .unwrap_or(0)
            }
        }
    });
    let mut listeners: Vec<Listener> = Vec::new();
    let mut seen_ino: BTreeSet<String> = BTreeSet::new();
    let mut seen_conn: BTreeSet<(SocketAddr, SocketAddr)> = BTreeSet::new();
    let mut connections = Vec::new();
    let mut duplicates = 0u32;
    for s in &socks {
        if !same_proto(s) || s.local.port() != port {
            other += 1;
            continue;
        }
        if listening(s) {
            let id = match &s.ino {
                Some(ino) => ino.clone(),
                None => format!("{}#{}", s.local, listeners.len() + 1),
            };
            if s.ino.is_some() && !seen_ino.insert(id.clone()) {
                duplicates += 1;
                continue;
            }
            listeners.push(Listener {
                id,
                local: s.local.to_string(),
                owners: s.owners.clone(),
                accepting: None,
                queue: if proto == Proto::Tcp { s.recv_q } else { 0 },
                backlog: if proto == Proto::Tcp { s.send_q } else { 0 },
                drops: None,
                epoll_sets: None,
            });
        } else if connected(s) {
            let peer = s.peer.expect("connected");
            if !seen_conn.insert((peer, s.local)) {
                duplicates += 1;
                continue;
            }
            connections.push(Connection {
                client: peer.to_string(),
                server: s.local.to_string(),
                owners: s.owners.clone(),
            });
        } else {
            other += 1;
        }
    }
    Ok(SsRead {
        owners_shown: socks.iter().any(|s| !s.owners.is_empty()),
        snapshot: Snapshot {
            proto,
            port,
            listeners,
            connections,
            samples: Vec::new(),
        },
        listening_ports: listening_ports.into_iter().collect(),
        listen_lines,
        connection_lines,
        duplicates,
        other,
        bad,
        bad_count,
    })
}

/// One line: `Ok(None)` for a line of another kind of socket (unix, raw).
fn parse_line(t: &str) -> Result<Option<SsLine>, SsLineError> {
    let words: Vec<&str> = t.split_whitespace().collect();
    let mut at = 0;
    let mut proto = None;
    if let Some(&w) = words.first() {
        match w {
            "tcp" | "tcp6" => proto = Some(Proto::Tcp),
            "udp" | "udp6" => proto = Some(Proto::Udp),
            _ => {}
        }
        if proto.is_some() {
            at = 1;
        } else if !STATES.contains(&w) && !w.bytes().all(|b| b.is_ascii_digit()) {
            // A netid of another family (u_str, raw, nl…).
            return Ok(None);
        }
    }
    // `ss` leaves the state column out when one state is asked for
    // (`ss -tn state established`): then the peer says which it is.
    let state = match words.get(at) {
        Some(w) if STATES.contains(w) => {
            at += 1;
            Some(w.to_string())
        }
        _ => None,
    };
    if words.len() < at + 4 {
        return Err(SsLineError::Columns);
    }
    let recv_q: u32 = words[at].parse().map_err(|_| SsLineError::Queue)?;
    let send_q: u32 = words[at + 1].parse().map_err(|_| SsLineError::Queue)?;
    let local = parse_ss_addr(words[at + 2])
        .ok_or(SsLineError::Address)?
        .ok_or(SsLineError::Address)?;
    let peer = parse_ss_addr(words[at + 3]).ok_or(SsLineError::Address)?;
    let rest = words[at + 4..].join(" ");
    let state =
        state.unwrap_or_else(|| if peer.is_none() { "LISTEN" } else { "ESTAB" }.to_string());
    Ok(Some(SsLine {
        proto,
        state,
        recv_q,
        send_q,
        local,
        peer,
        owners: parse_users(&rest),
        ino: rest
            .split_whitespace()
            .find_map(|w| w.strip_prefix("ino:"))
            .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
            .map(str::to_string),
    }))
}

/// An `ss -n` address: `Some(None)` for a wildcard peer (`*`, `0.0.0.0:*`,
/// `[::]:*`); `None` when it does not read. `*:80` is `0.0.0.0:80`; an
/// interface suffix (`127.0.0.53%lo:53`, `[fe80::1]%eth0:22`) is dropped.
fn parse_ss_addr(w: &str) -> Option<Option<SocketAddr>> {
    if w == "*" {
        return Some(None);
    }
    let (host, port) = w.rsplit_once(':')?;
    if port == "*" {
        return Some(None);
    }
    let port: u16 = port.parse().ok()?;
    let host = match host.find('%') {
        Some(i) => {
            let tail = &host[i..];
            let keep = tail.find(']').map(|j| &tail[j..]).unwrap_or("");
            format!("{}{}", &host[..i], keep)
        }
        None => host.to_string(),
    };
    let ip: IpAddr = match host.as_str() {
        "*" => IpAddr::from([0, 0, 0, 0]),
        h => h
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(h)
            .parse()
            .ok()?,
    };
    Some(Some(SocketAddr::new(ip, port)))
}

/// The owners of `users:(("nginx",pid=123,fd=6),("nginx",pid=124,fd=6))`,
/// each pid once.
fn parse_users(rest: &str) -> Vec<Owner> {
    let Some(start) = rest.find("users:(") else {
        return Vec::new();
    };
    let mut s = &rest[start + "users:(".len()..];
    let mut out: Vec<Owner> = Vec::new();
    while let Some(open) = s.find("(\"") {
        let after = &s[open + 2..];
        let Some(q) = after.find("\",") else { break };
        let comm = &after[..q];
        let fields = &after[q + 2..];
        let end = fields.find(')').unwrap_or(fields.len());
        let pid = fields[..end]
            .split(',')
            .find_map(|f| f.trim().strip_prefix("pid="))
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid {
            if !out.iter().any(|o| o.pid == pid) {
                out.push(Owner {
                    pid,
                    comm: comm.to_string(),
                });
            }
        }
        s = &fields[end..];
    }
    out
}

/// Reads per-worker counts: one number per line, or several on one line
/// (`349 17 4 0`, commas allowed); `uniq -c` lines (`COUNT LABEL`); or
/// `LABEL: COUNT` / `LABEL = COUNT` (Envoy's per-worker stats).
pub fn read_counts(text: &str) -> Result<CountsRead, ServerReadError> {
    let mut counts = Vec::new();
    let mut labels = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let unknown = || ServerReadError::Unknown { line: i as u32 + 1 };
        let num = |w: &str| w.parse::<u64>().ok().filter(|&n| n <= 1_000_000_000_000);
        if let Some((label, value)) = t.rsplit_once(':').or_else(|| t.rsplit_once('=')) {
            let n = num(value.trim()).ok_or_else(unknown)?;
            counts.push(n);
            labels.push(label.trim().to_string());
            continue;
        }
        let words: Vec<&str> = t
            .split(|c: char| c.is_whitespace() || c == ',' || c == ';')
            .filter(|w| !w.is_empty())
            .collect();
        if words.iter().all(|w| num(w).is_some()) && words.len() != 2 {
            for w in words {
                counts.push(num(w).expect("checked"));
                labels.push(String::new());
            }
        } else if words.len() == 2 {
            // `uniq -c`: the count first, then what was counted.
            let n = num(words[0]).ok_or_else(unknown)?;
            counts.push(n);
            labels.push(words[1].to_string());
        } else {
            return Err(unknown());
        }
    }
    if counts.is_empty() {
        return Err(ServerReadError::Empty);
    }
    Ok(CountsRead { counts, labels })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ss -tanpe` of nginx with `listen 127.0.0.1:18080 reuseport` and 2
    /// workers: two listeners, each held by the master and both workers,
    /// three connections, a client-side socket on the same host and a
    /// socket of another program.
    const TANPE: &str = "\
State  Recv-Q Send-Q Local Address:Port  Peer Address:Port Process
LISTEN 0      511        127.0.0.1:18080      0.0.0.0:*     users:((\"nginx\",pid=1236,fd=7),(\"nginx\",pid=1235,fd=7),(\"nginx\",pid=1234,fd=7)) ino:40001 sk:1 cgroup:/ <->
LISTEN 3      511        127.0.0.1:18080      0.0.0.0:*     users:((\"nginx\",pid=1236,fd=6),(\"nginx\",pid=1235,fd=6),(\"nginx\",pid=1234,fd=6)) ino:40002 sk:2 cgroup:/ <->
LISTEN 0      128          0.0.0.0:22         0.0.0.0:*     users:((\"sshd\",pid=700,fd=3)) ino:999 sk:3 cgroup:/ <->
ESTAB  0      0          127.0.0.1:18080  127.3.4.5:40000   users:((\"nginx\",pid=1235,fd=10)) uid:33 ino:50001 sk:4 cgroup:/ <->
ESTAB  0      0          127.0.0.1:18080  127.3.4.6:40001   users:((\"nginx\",pid=1236,fd=10)) uid:33 ino:50002 sk:5 cgroup:/ <->
ESTAB  0      0          127.0.0.1:18080  127.3.4.7:40002   users:((\"nginx\",pid=1236,fd=11)) uid:33 ino:50003 sk:6 cgroup:/ <->
ESTAB  0      0          127.3.4.5:40000  127.0.0.1:18080   users:((\"curl\",pid=2000,fd=3)) ino:50004 sk:7 cgroup:/ <->
TIME-WAIT 0   0          127.0.0.1:18080  127.3.4.8:40003
";

    fn sockets(text: &str) -> SsRead {
        match read_server(text, None, None).unwrap() {
            ServerInput::Sockets(r) => r,
            other => panic!("read as {other:?}"),
        }
    }

    #[test]
    fn ss_tanpe_gives_the_listening_port_its_listeners_owners_and_connections() {
        // The port is the one the connections reach, not sshd's; the
        // client-side socket and the TIME-WAIT line are not connections.
        let r = sockets(TANPE);
        let s = &r.snapshot;
        assert_eq!((s.proto, s.port), (Proto::Tcp, 18080));
        assert_eq!(r.listening_ports, vec![22, 18080]);
        assert_eq!(s.listeners.len(), 2);
        assert_eq!(s.listeners[0].id, "40001");
        assert_eq!(s.listeners[1].local, "127.0.0.1:18080");
        assert_eq!((s.listeners[1].queue, s.listeners[1].backlog), (3, 511));
        let pids: Vec<u32> = s.listeners[0].owners.iter().map(|o| o.pid).collect();
        assert_eq!(pids, vec![1236, 1235, 1234]);
        assert_eq!(s.listeners[0].owners[0].comm, "nginx");
        assert_eq!(s.connections.len(), 3);
        assert_eq!(s.connections[0].client, "127.3.4.5:40000");
        assert_eq!(s.connections[0].server, "127.0.0.1:18080");
        assert_eq!(s.connections[2].owners[0].pid, 1236);
        assert!(r.owners_shown);
        assert_eq!(r.bad_count, 0);
    }

    #[test]
    fn ss_ltnpe_and_ss_tnpe_pasted_together_count_each_socket_once() {
        // The listeners come from both pastes (the same inodes), the
        // connections from both (the same addresses): each once.
        let both = format!("{TANPE}\n{TANPE}");
        let r = sockets(&both);
        assert_eq!(r.snapshot.listeners.len(), 2);
        assert_eq!(r.snapshot.connections.len(), 3);
        assert_eq!(r.duplicates, 5);
    }

    #[test]
    fn a_port_given_picks_that_port() {
        let r = match read_server(TANPE, Some(22), None).unwrap() {
            ServerInput::Sockets(r) => r,
            _ => unreachable!(),
        };
        assert_eq!(r.snapshot.port, 22);
        assert_eq!(r.snapshot.listeners.len(), 1);
        assert!(r.snapshot.connections.is_empty());
    }

    #[test]
    fn addresses_in_every_form_ss_prints_them() {
        // IPv6 in brackets, a v4-mapped address, the `*` wildcard, an
        // interface suffix, a netid column.
        let text = "\
Netid State  Recv-Q Send-Q Local Address:Port Peer Address:Port Process
tcp   LISTEN 0      4096   *:8080             *:*    users:((\"envoy\",pid=9,fd=40))
tcp   LISTEN 0      4096   [::]:8080          [::]:*
tcp   ESTAB  0      0      [::ffff:127.0.0.1]:8080 [::ffff:10.0.0.2]:5555 users:((\"envoy\",pid=9,fd=41))
tcp   ESTAB  0      0      [fe80::1]%eth0:8080 [fe80::2]%eth0:6000
";
        let r = sockets(text);
        let s = &r.snapshot;
        assert_eq!(s.port, 8080);
        assert_eq!(s.listeners[0].local, "0.0.0.0:8080");
        assert_eq!(s.listeners[1].local, "[::]:8080");
        assert_eq!(s.listeners[1].id, "[::]:8080#2");
        assert_eq!(s.connections[0].client, "[::ffff:10.0.0.2]:5555");
        assert_eq!(s.connections[1].server, "[fe80::1]:8080");
    }

    #[test]
    fn without_a_state_column_the_peer_says_listening_or_connected() {
        // `ss -tnp state established` and `ss -ltnp` on some versions print
        // no State column.
        let text = "\
Recv-Q Send-Q Local Address:Port Peer Address:Port Process
0      0      10.0.0.1:443      10.9.9.9:50000  users:((\"haproxy\",pid=77,fd=12))
0      1024   10.0.0.1:443      0.0.0.0:*       users:((\"haproxy\",pid=77,fd=5))
";
        let s = sockets(text).snapshot;
        assert_eq!(s.listeners.len(), 1);
        assert_eq!(s.connections.len(), 1);
        assert_eq!(s.listeners[0].backlog, 1024);
    }

    #[test]
    fn udp_unconnected_sockets_are_the_listeners() {
        let text = "\
Netid State  Recv-Q Send-Q Local Address:Port Peer Address:Port Process
udp   UNCONN 0      0      0.0.0.0:4433       0.0.0.0:*  users:((\"quic\",pid=5,fd=3)) ino:11
udp   UNCONN 0      0      0.0.0.0:4433       0.0.0.0:*  users:((\"quic\",pid=6,fd=3)) ino:12
";
        let s = sockets(text).snapshot;
        assert_eq!(s.proto, Proto::Udp);
        assert_eq!(s.listeners.len(), 2);
        assert_eq!(s.listeners[1].owners[0].pid, 6);
    }

    #[test]
    fn unreadable_lines_are_counted_with_their_reason_not_guessed() {
        let text = format!("{TANPE}ESTAB 0 0 127.0.0.1:http 10.0.0.1:5000\nESTAB x 0 1.2.3.4:1 5.6.7.8:2\nESTAB 0 0\n");
        let r = sockets(&text);
        assert_eq!(r.bad_count, 3);
        let errs: Vec<_> = r.bad.iter().map(|b| (b.line, b.error.clone())).collect();
        assert_eq!(
            errs,
            vec![
                (10, SsLineError::Address),
                (11, SsLineError::Queue),
                (12, SsLineError::Columns)
            ]
        );
    }

    #[test]
    fn counts_in_the_forms_people_post_them() {
        let read = |t: &str| match read_server(t, None, None).unwrap() {
            ServerInput::Counts(c) => c,
            other => panic!("read as {other:?}"),
        };
        assert_eq!(read("349 17 4 0").counts, vec![349, 17, 4, 0]);
        assert_eq!(read("10\n12\n9\n").counts, vec![10, 12, 9]);
        assert_eq!(read("5, 6, 7").counts, vec![5, 6, 7]);
        // `uniq -c` of pids: the count first; the pid is a label.
        let u = read("    120 1234\n     80 1235\n");
        assert_eq!(u.counts, vec![120, 80]);
        assert_eq!(u.labels, vec!["1234", "1235"]);
        let e = read("listener.0.0.0.0_10000.worker_0.downstream_cx_total: 1500\nlistener.0.0.0.0_10000.worker_1.downstream_cx_total: 20\n");
        assert_eq!(e.counts, vec![1500, 20]);
        assert!(e.labels[1].ends_with("worker_1.downstream_cx_total"));
    }

    #[test]
    fn text_that_is_neither_is_refused_naming_the_line() {
        assert_eq!(
            read_server("12\nhello world again\n", None, None),
            Err(ServerReadError::Unknown { line: 2 })
        );
        assert_eq!(read_server("  \n", None, None), Err(ServerReadError::Empty));
    }
}
