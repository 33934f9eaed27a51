//! Reading the kernel's socket tables: the INET_DIAG dump through the
//! `netlink-packet-sock-diag` crate (what `ss` asks), and the owners of each
//! socket inode from `/proc/PID/fd`, with the descriptors each epoll set
//! watches from `/proc/PID/fdinfo`. Nothing is written, connected or
//! signalled.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::net::{IpAddr, SocketAddr};

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP, IPPROTO_UDP};
use netlink_packet_sock_diag::inet::{
    nlas::Nla, ExtensionFlags, InetRequest, SocketId, StateFlags,
};
use netlink_packet_sock_diag::SockDiagMessage;
use netlink_sys::{protocols::NETLINK_SOCK_DIAG, Socket, SocketAddr as NlAddr};

use reuseport_model::diagnose::Owner;
use reuseport_model::Proto;

/// TCP_LISTEN and TCP_CLOSE (a bound UDP socket), as include/net/tcp_states.h numbers them.
const TCP_LISTEN: u8 = 10;
const TCP_CLOSE: u8 = 7;
const TCP_ESTABLISHED: u8 = 1;
const TCP_CLOSE_WAIT: u8 = 8;

/// One socket of the dump.
#[derive(Debug, Clone)]
pub struct DiagSocket {
    /// Local address.
    pub local: SocketAddr,
    /// Remote address.
    pub remote: SocketAddr,
    /// TCP state number.
    pub state: u8,
    /// Receive queue: for a listener, the accept queue.
    pub rqueue: u32,
    /// Send queue: for a listener, the backlog.
    pub wqueue: u32,
    /// Inode (0 for a socket no descriptor holds, as one in an accept queue).
    pub inode: u32,
    /// `sk_drops`.
    pub drops: Option<u64>,
}

impl DiagSocket {
    /// Whether it is a listener (TCP LISTEN, or an unconnected bound UDP socket).
    pub fn listening(&self, proto: Proto) -> bool {
        match proto {
            Proto::Tcp => self.state == TCP_LISTEN,
            Proto::Udp => self.state == TCP_CLOSE && self.remote.port() == 0,
        }
    }

    /// Whether it is a connection to the port that a process holds or will
    /// accept (TCP ESTABLISHED or CLOSE_WAIT: full sockets; a TIME_WAIT or
    /// LAST_ACK socket no longer belongs to anyone), or a connected UDP socket.
    pub fn connection(&self, proto: Proto) -> bool {
        match proto {
            Proto::Tcp => {
                matches!(self.state, TCP_ESTABLISHED | TCP_CLOSE_WAIT) && self.remote.port() != 0
            }
            Proto::Udp => self.state == TCP_ESTABLISHED,
        }
    }
}

/// Dumps every socket of `proto` on local port `port`, both families.
pub fn dump(proto: Proto, port: u16) -> std::io::Result<Vec<DiagSocket>> {
    let mut out = Vec::new();
    for family in [AF_INET, AF_INET6] {
        dump_family(family, proto, port, &mut out)?;
    }
    Ok(out)
}

fn dump_family(
    family: u8,
    proto: Proto,
    port: u16,
    out: &mut Vec<DiagSocket>,
) -> std::io::Result<()> {
    let mut socket = Socket::new(NETLINK_SOCK_DIAG)?;
    socket.bind_auto()?;
    socket.connect(&NlAddr::new(0, 0))?;
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_DUMP;
    let mut packet = NetlinkMessage::new(
        header,
        SockDiagMessage::InetRequest(InetRequest {
            family,
            protocol: match proto {
                Proto::Tcp => IPPROTO_TCP,
                Proto::Udp => IPPROTO_UDP,
            },
            extensions: ExtensionFlags::SKMEMINFO,
            states: StateFlags::all(),
            socket_id: if family == AF_INET {
                SocketId::new_v4()
            } else {
                SocketId::new_v6()
            },
        })
        .into(),
    );
    packet.finalize();
    let mut buf = vec![0; packet.buffer_len()];
    packet.serialize(&mut buf[..]);
    socket.send(&buf[..], 0)?;
    let mut rx = Vec::with_capacity(1 << 16);
    loop {
        rx.clear();
        let size = socket.recv(&mut rx, 0)?;
        let mut offset = 0;
        while offset < size {
            let msg =
                <NetlinkMessage<SockDiagMessage>>::deserialize(&rx[offset..size]).map_err(|e| {
                    std::io::Error::other(format!("sock_diag: a reply did not parse: {e}"))
                })?;
            let len = msg.header.length as usize;
            match msg.payload {
                NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(r)) => {
                    let id = &r.header.socket_id;
                    if id.source_port == port {
                        let drops = r.nlas.iter().find_map(|n| match n {
                            Nla::MemInfo(m) => Some(m.drops as u64),
                            _ => None,
                        });
                        out.push(DiagSocket {
                            local: SocketAddr::new(id.source_address, id.source_port),
                            remote: SocketAddr::new(id.destination_address, id.destination_port),
                            state: r.header.state,
                            rqueue: r.header.recv_queue,
                            wqueue: r.header.send_queue,
                            inode: r.header.inode,
                            drops,
                        });
                    }
                }
                NetlinkPayload::Done(_) => return Ok(()),
                NetlinkPayload::Error(e) => {
                    return Err(std::io::Error::other(format!(
                        "sock_diag refused the dump: {e:?}"
                    )))
                }
                _ => {}
            }
            if len == 0 {
                break;
            }
            offset += len;
        }
    }
}

/// Who holds which socket inode, and which inodes each epoll set watches.
#[derive(Debug, Default, Clone)]
pub struct Holders {
    /// Socket inode -> processes holding a descriptor of it.
    pub owners: HashMap<u32, Vec<Owner>>,
    /// Socket inode -> pids whose epoll sets watch it.
    pub watched: HashMap<u32, BTreeSet<u32>>,
    /// Socket inode -> how many epoll sets watch it (threads of one
    /// process each have their own in HAProxy, for example).
    pub epoll_sets: HashMap<u32, u32>,
    /// Processes whose descriptors could not be read (not root).
    pub unreadable: u32,
}

/// Scans `/proc` for the holders of the inodes in `wanted`.
pub fn holders(wanted: &BTreeSet<u32>) -> Holders {
    let mut h = Holders::default();
    let Ok(procs) = fs::read_dir("/proc") else {
        return h;
    };
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let base = entry.path();
        let Ok(fds) = fs::read_dir(base.join("fd")) else {
            h.unreadable += 1;
            continue;
        };
        let comm = fs::read_to_string(base.join("comm"))
            .unwrap_or_default()
            .trim()
            .to_string();
        let mut epolls = Vec::new();
        for fd in fds.flatten() {
            let Ok(link) = fs::read_link(fd.path()) else {
                continue;
            };
            let link = link.to_string_lossy();
            if let Some(ino) = link
                .strip_prefix("socket:[")
                .and_then(|s| s.strip_suffix(']'))
            {
                if let Ok(ino) = ino.parse::<u32>() {
                    if wanted.contains(&ino) {
                        let v = h.owners.entry(ino).or_default();
                        if !v.iter().any(|o| o.pid == pid) {
                            v.push(Owner {
                                pid,
                                comm: comm.clone(),
                            });
                        }
                    }
                }
            } else if link == "anon_inode:[eventpoll]" {
                epolls.push(fd.file_name());
            }
        }
        for e in epolls {
            // fdinfo of an epoll descriptor: one "tfd: N events: … ino:HEX sdev:…" line per watched file.
            let Ok(info) = fs::read_to_string(base.join("fdinfo").join(&e)) else {
                continue;
            };
            for line in info.lines().filter(|l| l.starts_with("tfd:")) {
                let ino = line
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix("ino:"))
                    .and_then(|x| u64::from_str_radix(x, 16).ok());
                if let Some(ino) = ino.and_then(|i| u32::try_from(i).ok()) {
                    if wanted.contains(&ino) {
                        h.watched.entry(ino).or_default().insert(pid);
                        *h.epoll_sets.entry(ino).or_default() += 1;
                    }
                }
            }
        }
    }
    h
}

/// Whether a socket's local address is the one asked for (`None`: any).
pub fn on_addr(local: &SocketAddr, addr: Option<IpAddr>) -> bool {
    addr.is_none_or(|a| local.ip() == a)
}

/// Groups dump entries by inode for `holders`.
pub fn inodes(sockets: &[DiagSocket]) -> BTreeSet<u32> {
    sockets
        .iter()
        .map(|s| s.inode)
        .filter(|&i| i != 0)
        .collect()
}
