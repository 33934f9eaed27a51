//! Why `record` stopped. Option problems are found before any socket is
//! made; system problems name the socket or file, the kernel's errno, and
//! what to change.

use std::io;
use std::net::IpAddr;

use thiserror::Error;

/// An error that stops `record` (exit status 2, or 130 for
/// [`RecordError::Interrupted`]).
#[derive(Debug, Error)]
pub enum RecordError {
    /// Not Linux.
    #[error("record needs Linux: it measures which SO_REUSEPORT socket the running Linux kernel picks; on this system ask the model instead with `reuseport-agent predict`")]
    NotLinux,
    /// `--listeners 0`.
    #[error("--listeners 0: a group needs at least one listener; give --listeners 1 or more")]
    NoListeners,
    /// A listener number past the group.
    #[error("{option} names listener {listener}, but the group has {count} listener(s), numbered from 0 in {order}() order; use numbers below {count}")]
    NoSuchListener {
        /// `--closed` or `--incoming-cpu`.
        option: &'static str,
        /// The number given.
        listener: u32,
        /// `--listeners`.
        count: u32,
        /// `listen` or `bind`.
        order: &'static str,
    },
    /// The same listener closed twice.
    #[error("--closed names listener {0} twice; a socket can be closed only once")]
    ClosedTwice(u32),
    /// Every listener closed.
    #[error("--closed closes all {0} listeners, so nothing would receive the traffic; leave at least one open")]
    AllClosed(u32),
    /// `--bpf payload-mod` with TCP.
    #[error("--bpf payload-mod works with --proto udp only: a TCP SYN carries no payload unless TCP_FASTOPEN is used, which record does not do; use --bpf cpu for TCP")]
    PayloadModNeedsUdp,
    /// A multicast or broadcast address outside a private namespace.
    #[error("{option} {addr}: a {kind} address sends the traffic off loopback, to the machine's real interfaces and their networks; record in a private network namespace with --netns (as root), or use a unicast address such as 127.0.0.1")]
    OffLoopback {
        /// `--bind` or `--client`.
        option: &'static str,
        /// The address given.
        addr: IpAddr,
        /// `multicast` or `broadcast`.
        kind: &'static str,
    },
    /// `--tcp-migrate-req` with UDP.
    #[error("--tcp-migrate-req applies to TCP listeners only; drop it or use --proto tcp")]
    MigrateReqNeedsTcp,
    /// `--duration` not positive.
    #[error("--duration {0}: give a positive number of seconds, such as 30 or 0.5")]
    BadDuration(f64),
    /// IPv4 clients to an IPV6_V6ONLY group.
    #[error("--client {client} is IPv4, but the group is IPv6 with --v6only, which refuses IPv4; drop --v6only or give IPv6 clients")]
    V6OnlyRefusesV4 {
        /// The client.
        client: IpAddr,
    },
    /// A client of the wrong family.
    #[error("--client {client} cannot reach the group on {bind}: {why}")]
    ClientFamily {
        /// The client.
        client: IpAddr,
        /// The group's address.
        bind: IpAddr,
        /// Which rule.
        why: &'static str,
    },
    /// Many IPv6 clients without a private namespace.
    #[error("--clients {0}: on the host the only IPv6 loopback address is ::1, so an IPv6 recording has one client address there; add --netns to get fd00:: client addresses on lo in a private network namespace, or give --clients 1")]
    V6ClientsNeedNetns(u32),
    /// More clients than the address space holds.
    #[error(
        "--clients {asked}: the {space_name} client space holds only {space} addresses; give fewer"
    )]
    TooManyClients {
        /// Asked for.
        asked: u32,
        /// Available.
        space: u64,
        /// Which space.
        space_name: &'static str,
    },
    /// `--clients 0`.
    #[error("--clients 0: give at least one client address")]
    NoClients,
    /// Fewer (address, port) pairs than `--count`.
    #[error("--count {count} needs {count} distinct (client address, source port) pairs, but {clients} client address(es) × {ports} source port(s) give only {pairs}; add clients (--clients) or widen --sport-range")]
    TooFewPairs {
        /// `--count`.
        count: u64,
        /// Available pairs.
        pairs: u64,
        /// Client addresses.
        clients: u64,
        /// Ports in the range.
        ports: u64,
    },
    /// The descriptor limit is too low.
    #[error("{listeners} listeners need about {needed} file descriptors; the hard limit is {hard}: raise it with `ulimit -n {needed}` (raising the hard limit needs root: `ulimit -Hn {needed}`), or record fewer listeners")]
    FdLimit {
        /// `--listeners`.
        listeners: u32,
        /// Descriptors needed.
        needed: u64,
        /// `RLIMIT_NOFILE` hard limit.
        hard: u64,
    },
    /// A system call failed.
    #[error("{what}: {source}{}", hint_suffix(.hint))]
    Sys {
        /// What was being done, naming the socket or file.
        what: String,
        /// The kernel's error.
        #[source]
        source: io::Error,
        /// What to change, empty when there is nothing specific to say.
        hint: String,
    },
    /// `ip` could not set up the namespace.
    #[error("--netns: `ip -batch -` failed to set up lo in the private namespace: {0}")]
    IpCommand(String),
    /// Too many pairs in a row were taken by other sockets.
    #[error("{skipped} (client address, source port) pairs in a row could not be bound (last: {last}); the source ports are in use by other programs: choose another --sport-range or other clients")]
    PairsTaken {
        /// How many in a row.
        skipped: u32,
        /// The last reason.
        last: String,
    },
    /// Listening sockets outside the group on its port.
    #[error("port {port} already has listening socket(s) outside this recording: {found}. They take part in the lookup (an SO_REUSEPORT listener of the same user joins the group; one on the destination address is preferred to a wildcard group), so events would go to them and the trace would misstate the group; choose another --port (or leave --port 0 for a free one), stop the program that holds them, or pass --allow-foreign-listeners to record anyway with them named in the trace")]
    ForeignListeners {
        /// The group's port.
        port: u16,
        /// The sockets, described.
        found: String,
    },
    /// Another live run holds `net.ipv4.tcp_migrate_req`.
    #[error("--tcp-migrate-req: another reuseport-agent run (pid {pid}) has changed net.ipv4.tcp_migrate_req and will restore it (state file {state}); wait until it ends, since two runs would each restore the other's value")]
    MigrateReqHeld {
        /// The other run.
        pid: i32,
        /// Its state file.
        state: String,
    },
    /// A terminating signal (SIGINT, SIGTERM, SIGHUP, ...) before any traffic was driven.
    #[error("interrupted while setting up the group; nothing was recorded")]
    Interrupted,
    /// The running release could not be read.
    #[error(transparent)]
    Release(#[from] crate::Error),
    /// The trace could not be written.
    #[error("cannot write the trace to {path}: {source}")]
    Output {
        /// The file, or standard output.
        path: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

fn hint_suffix(hint: &str) -> String {
    if hint.is_empty() {
        String::new()
    } else {
        format!("; {hint}")
    }
}

impl RecordError {
    /// A failed system call: `what` names it, `hint` says what to change.
    pub fn sys(what: impl Into<String>, source: io::Error, hint: impl Into<String>) -> Self {
        RecordError::Sys {
            what: what.into(),
            source,
            hint: hint.into(),
        }
    }

    /// Whether this is a write to a closed pipe (`| head`), which counts as
    /// success.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, RecordError::Output { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
    }
}
