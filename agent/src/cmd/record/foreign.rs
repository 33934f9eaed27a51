//! Listening sockets on the group's port that are not the group's: another
//! program's SO_REUSEPORT listener (same user) joins the group the agent
//! makes and takes a share of the traffic, and a listener on the
//! destination address itself is preferred to a wildcard group and takes
//! all of it. Either would make the trace misstate the group, so `record`
//! looks for them in the socket tables of its network namespace
//! (`/proc/thread-self/net/{tcp,tcp6,udp,udp6}`) once its own sockets
//! exist, and tells them apart from its own by inode.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::RawFd;

use reuseport_model::Proto;

/// A socket found in the tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    /// Its local address and port.
    pub local: SocketAddr,
    /// Its owner.
    pub uid: u32,
    /// Its inode (`ls -l /proc/*/fd | grep socket:[INODE]` finds the process).
    pub inode: u64,
}

impl std::fmt::Display for Foreign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (uid {}, socket inode {})",
            self.local, self.uid, self.inode
        )
    }
}

/// TCP_LISTEN in the `st` column; an unconnected UDP socket shows
/// TCP_CLOSE (include/net/tcp_states.h).
const TCP_LISTEN: u8 = 0x0A;
const UDP_UNCONNECTED: u8 = 0x07;

/// An address as the tables print it: the raw (network order) 32-bit words
/// in the machine's byte order, `%08X` each.
fn table_addr(hex: &str) -> Option<IpAddr> {
    let word = |h: &str| u32::from_str_radix(h, 16).ok().map(u32::to_ne_bytes);
    match hex.len() {
        8 => Some(Ipv4Addr::from(word(hex)?).into()),
        32 => {
            let mut b = [0u8; 16];
            for i in 0..4 {
                b[4 * i..4 * i + 4].copy_from_slice(&word(&hex[8 * i..8 * i + 8])?);
            }
            Some(Ipv6Addr::from(b).into())
        }
        _ => None,
    }
}

/// The receiving sockets in one table's text (TCP listeners, unconnected
/// UDP sockets) bound to `port`.
pub fn parse_table(text: &str, proto: Proto, port: u16) -> Vec<Foreign> {
    let want = match proto {
        Proto::Tcp => TCP_LISTEN,
        Proto::Udp => UDP_UNCONNECTED,
    };
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local rem st queues timer retrnsmt uid timeout inode ...
            let (local, st, uid, inode) = (f.get(1)?, f.get(3)?, f.get(7)?, f.get(9)?);
            if u8::from_str_radix(st, 16).ok()? != want {
                return None;
            }
            let (addr, p) = local.split_once(':')?;
            let p = u16::from_str_radix(p, 16).ok()?;
            (p == port).then_some(())?;
            Some(Foreign {
                local: SocketAddr::new(table_addr(addr)?, p),
                uid: uid.parse().ok()?,
                inode: inode.parse().ok()?,
            })
        })
        .collect()
}

/// Whether a socket bound to `local` takes part in the lookup of packets
/// to `dest` on the group's port: it is bound to `dest` itself (or its
/// IPv4-mapped form), to the group's address, or to a wildcard.
pub fn overlaps(local: IpAddr, dest: IpAddr, bind: IpAddr) -> bool {
    let l = local.to_canonical();
    l.is_unspecified() || l == dest.to_canonical() || l == bind.to_canonical()
}

/// The socket inode of a descriptor.
pub fn inode(fd: RawFd) -> Option<u64> {
    // SAFETY: fstat writes one stat into `st`.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some(st.st_ino)
}

/// Receiving sockets on `port` in this thread's network namespace that are
/// not `own` and take part in the lookup of packets to `dest`.
pub fn find(
    proto: Proto,
    port: u16,
    dest: IpAddr,
    bind: IpAddr,
    own: &HashSet<u64>,
) -> Vec<Foreign> {
    let tables: [&str; 2] = match proto {
        Proto::Tcp => ["tcp", "tcp6"],
        Proto::Udp => ["udp", "udp6"],
    };
    let mut found = Vec::new();
    for t in tables {
        // A table that cannot be read (no IPv6 in this kernel) has nothing.
        let Ok(text) = std::fs::read_to_string(format!("/proc/thread-self/net/{t}")) else {
            continue;
        };
        found.extend(
            parse_table(&text, proto, port)
                .into_iter()
                .filter(|f| !own.contains(&f.inode) && overlaps(f.local.ip(), dest, bind)),
        );
    }
    found
}

/// The inodes of the sockets process `pid` holds open (its
/// `/proc/PID/fd` links read `socket:[INODE]`); empty when they cannot be
/// read.
pub fn socket_inodes(pid: i32) -> HashSet<u64> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return HashSet::new();
    };
    fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            l.to_str()?
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines as Linux 6.18 prints them (x86-64, little-endian).
    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0
   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4343 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F90 0900007F:4E20 01 00000000:00000000 00:00000000 00000000     0        0 4444 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4545 1 0000000000000000 100 0 0 10 0
";
    const TCP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5151 1 0000000000000000 100 0 0 10 0
";

    #[test]
    fn listeners_on_the_port_are_read_with_address_owner_and_inode() {
        let found = parse_table(TCP, Proto::Tcp, 8080);
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "127.0.0.1:8080 (uid 1000, socket inode 4242)",
                "0.0.0.0:8080 (uid 0, socket inode 4343)"
            ],
            "an established connection and another port are not listeners on 8080"
        );
        let six = parse_table(TCP6, Proto::Tcp, 8080);
        assert_eq!(six[0].local.to_string(), "[::1]:8080");
        assert!(parse_table(TCP, Proto::Udp, 8080).is_empty());
    }

    #[test]
    fn a_socket_overlaps_when_bound_to_the_destination_the_group_or_a_wildcard() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let (dest, wild) = (ip("127.0.0.1"), ip("0.0.0.0"));
        assert!(overlaps(ip("127.0.0.1"), dest, wild));
        assert!(overlaps(ip("::ffff:127.0.0.1"), dest, wild));
        assert!(overlaps(ip("::"), dest, wild));
        assert!(!overlaps(ip("127.0.0.2"), dest, ip("127.0.0.1")));
    }
}
