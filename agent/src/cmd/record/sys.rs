//! The process-level parts of a Linux recording (the stop flag is
//! [`crate::signals`]'s): the descriptor limit, CPUs and pinning, the private network namespace, and
//! the `tcp_migrate_req` sysctl set for the run ([`crate::migrate_req`]
//! writes it back on every way out; after a SIGKILL the next run does,
//! from the state file it keeps).

use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::RecordError;
use crate::migrate_req::{self, HoldError, MigrateReq, MIGRATE_REQ};

/// Descriptors beyond the listeners: stdio, epoll, one client and one
/// accepted socket at a time, the output file, `ip`'s pipes.
pub const FD_SLACK: u64 = 64;

/// Raises the soft `RLIMIT_NOFILE` to the hard limit, and refuses up front
/// when the hard limit cannot hold `listeners` sockets.
pub fn raise_fd_limit(listeners: u32) -> Result<(), RecordError> {
    let needed = u64::from(listeners) + FD_SLACK;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(RecordError::sys(
            "getrlimit(RLIMIT_NOFILE)",
            io::Error::last_os_error(),
            "",
        ));
    }
    if lim.rlim_max != libc::RLIM_INFINITY && lim.rlim_max < needed {
        return Err(RecordError::FdLimit {
            listeners,
            needed,
            hard: lim.rlim_max,
        });
    }
    if lim.rlim_cur != lim.rlim_max {
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: setrlimit reads one rlimit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 && lim.rlim_cur < needed {
            return Err(RecordError::sys(
                format!("raising the soft descriptor limit to {}", lim.rlim_max),
                io::Error::last_os_error(),
                format!("raise it yourself with `ulimit -n {needed}`"),
            ));
        }
    }
    Ok(())
}

/// Moves the calling thread into a new network namespace, brings `lo` up
/// and gives it `addrs` (IPv6 without duplicate address detection). Only
/// this thread (and the processes it starts) sees the namespace; it
/// disappears with the last socket in it.
pub fn enter_private_netns(addrs: &[IpAddr]) -> Result<(), RecordError> {
    // SAFETY: unshare only changes this thread's namespaces.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        let e = io::Error::last_os_error();
        let hint = if e.raw_os_error() == Some(libc::EPERM) {
            "creating a network namespace needs root (CAP_SYS_ADMIN): run as root, or record without --netns (IPv6 then has only ::1 as client address)"
        } else {
            "this kernel may lack network namespaces (CONFIG_NET_NS); record without --netns"
        };
        return Err(RecordError::sys("--netns: unshare(CLONE_NEWNET)", e, hint));
    }
    let mut batch = String::from("link set dev lo up\n");
    for a in addrs {
        match a {
            IpAddr::V4(_) => batch += &format!("address add {a}/32 dev lo\n"),
            IpAddr::V6(_) => batch += &format!("address add {a}/128 dev lo nodad\n"),
        }
    }
    let mut child = Command::new("ip")
        .args(["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            RecordError::sys(
                "--netns: running `ip`",
                e,
                "--netns sets up lo with the `ip` command of iproute2; install it (apt-get install iproute2)",
            )
        })?;
    let mut stdin = child.stdin.take().expect("piped");
    let written = stdin.write_all(batch.as_bytes());
    drop(stdin);
    let out = child
        .wait_with_output()
        .map_err(|e| RecordError::sys("--netns: waiting for `ip`", e, ""))?;
    if let Err(e) = written {
        return Err(RecordError::sys("--netns: writing to `ip`", e, ""));
    }
    if !out.status.success() {
        return Err(RecordError::IpCommand(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    wait_for_local_routes(addrs)
}

/// How long the kernel may take to install the local routes of new
/// addresses.
const ROUTE_WAIT: Duration = Duration::from_secs(5);

/// Waits until every address in `addrs` is routable. IPv6 installs the
/// local route of a new address from a work queue, after `ip` has returned;
/// until then a SYN-ACK to a client address is dropped and the connect()
/// retransmits a second later. A UDP connect() is a route lookup that sends
/// nothing: it fails with ENETUNREACH until the route is there.
fn wait_for_local_routes(addrs: &[IpAddr]) -> Result<(), RecordError> {
    let deadline = Instant::now() + ROUTE_WAIT;
    for &a in addrs {
        let probe = if a.is_ipv4() {
            UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))
        } else {
            UdpSocket::bind((Ipv6Addr::UNSPECIFIED, 0))
        }
        .map_err(|e| RecordError::sys("--netns: a UDP socket to probe routes", e, ""))?;
        loop {
            match probe.connect(SocketAddr::new(a, 9)) {
                Ok(()) => break,
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => {
                    return Err(RecordError::sys(
                        format!(
                            "--netns: {a} on lo got no local route within {} s",
                            ROUTE_WAIT.as_secs()
                        ),
                        e,
                        "the kernel did not finish adding the address; run again",
                    ))
                }
            }
        }
    }
    Ok(())
}

/// `net.ipv4.tcp_migrate_req` set to 1 for a recording
/// ([`MigrateReq::claim`] writes it back, and in the host namespace,
/// `host`, keeps the state file that a run after a SIGKILL restores from).
pub fn enable_migrate_req(host: bool) -> Result<MigrateReq, RecordError> {
    let current = migrate_req::current().map_err(|e| {
        let hint = if e.kind() == io::ErrorKind::NotFound {
            "this kernel has no net.ipv4.tcp_migrate_req (it arrived in 5.14); drop --tcp-migrate-req"
        } else {
            ""
        };
        RecordError::sys(format!("--tcp-migrate-req: reading {MIGRATE_REQ}"), e, hint)
    })?;
    MigrateReq::claim(&current, true, host, "record").map_err(|e| match e {
        HoldError::Held { pid, state } => RecordError::MigrateReqHeld {
            pid,
            state: state.display().to_string(),
        },
        HoldError::State { path, source } => RecordError::sys(
            format!(
                "--tcp-migrate-req: writing the state file {}",
                path.display()
            ),
            source,
            "it records the value to restore should the run be killed; run as root, or drop --tcp-migrate-req",
        ),
        HoldError::Write(e) => {
            let hint = if matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES))
                || matches!(
                    e.kind(),
                    io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
                ) {
                "setting a sysctl needs root: run as root, or drop --tcp-migrate-req"
            } else {
                ""
            };
            RecordError::sys(
                format!("--tcp-migrate-req: writing 1 to {MIGRATE_REQ}"),
                e,
                hint,
            )
        }
    })
}
