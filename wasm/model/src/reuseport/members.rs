//! How the group's membership changes, call by call: a socket joins
//! (`listen()`, a UDP `bind()`), leaves (`close()`), is shut down and
//! listens again, connects (UDP), sets SO_INCOMING_CPU, and the
//! `tcp_migrate_req` switch, each as `net/core/sock_reuseport.c` does it
//! in the group's era. Selection is in [`super::select`].

use crate::error::GroupError;
use crate::group::AddEffect;
use crate::profile::Selection;
use crate::tuple::Proto;

use super::{Change, Layout, Member, MemberState, ReuseportGroup};

impl ReuseportGroup {
    fn member(&self, l: u32) -> Result<Member, GroupError> {
        self.members
            .get(l as usize)
            .copied()
            .ok_or(GroupError::NoSuchListener {
                listener: l,
                count: self.members.len() as u32,
                order: self.proto.join_call(),
            })
    }

    fn wrong_state(&self, l: u32, action: &'static str, needed: &'static str) -> GroupError {
        GroupError::WrongState {
            listener: l,
            state: self.members[l as usize].state.word(),
            action,
            needed,
        }
    }

    /// `net.ipv4.tcp_migrate_req`: keeps shut-down TCP listeners in the
    /// closed tail (5.14+, `net/core/sock_reuseport.c` `reuseport_stop_listen_sock`).
    pub fn set_tcp_migrate_req(&mut self, on: bool) -> Result<(), GroupError> {
        if on && !self.profile.closed_tail {
            return Err(GroupError::Unsupported {
                what: "net.ipv4.tcp_migrate_req".into(),
                why: format!(
                    "the sysctl arrived in 5.14; profile {} does not have it",
                    self.profile.release
                ),
            });
        }
        if on && self.proto != Proto::Tcp {
            return Err(GroupError::Unsupported {
                what: "net.ipv4.tcp_migrate_req".into(),
                why: "it applies to TCP listeners only".into(),
            });
        }
        self.tcp_migrate_req = on;
        Ok(())
    }

    /// Listener `l` leaves the group: out of its program's socket maps
    /// ([`super::Program::forget`]); `unhashed` when it leaves the tables too
    /// (close, a listener's shutdown), not only the group (a UDP
    /// `connect()`).
    fn leave_maps(&mut self, l: u32, unhashed: bool) {
        if let Some(p) = &mut self.program {
            if p.forget(l, unhashed) && !self.sockarray_gone.contains(&l) {
                self.sockarray_gone.push(l);
            }
        }
    }

    fn in_group(state: MemberState) -> bool {
        matches!(state, MemberState::Listening | MemberState::ClosedTail)
    }

    fn add_to_layout(&mut self, l: u32) -> Result<Change, GroupError> {
        if self.join_seq.len() <= l as usize {
            self.join_seq.resize(l as usize + 1, 0);
        }
        self.join_seq[l as usize] = self.next_seq;
        self.next_seq += 1;
        let (call, errno) = match self.proto {
            Proto::Tcp => ("listen", "ENOMEM"),
            Proto::Udp => ("bind", "EADDRINUSE"),
        };
        match &mut self.layout {
            Layout::Chain(c) => {
                // __inet_hash / udp_lib_get_port: head insertion (3.9 – 4.5).
                c.insert(0, l);
                Ok(Change::Joined {
                    listener: l,
                    slot: None,
                    effect: AddEffect::Appended,
                })
            }
            Layout::Array(a) => {
                let effect = a.add(l).map_err(|_| GroupError::Full {
                    listener: l,
                    call,
                    errno,
                })?;
                if let AddEffect::EvictedClosed { listener } = effect {
                    let m = &mut self.members[listener as usize];
                    m.state = MemberState::Closed;
                    if m.incoming_cpu >= 0 {
                        self.incoming_cpu -= 1;
                    }
                }
                Ok(Change::Joined {
                    listener: l,
                    slot: Some(a.num_socks() - 1),
                    effect,
                })
            }
        }
    }

    /// `n` sockets join in order, as `n` calls of [`ReuseportGroup::join`]
    /// would leave the group, in time linear in `n` (a chain built by head
    /// insertions one by one is quadratic: 54 s for a million members).
    pub(crate) fn join_all(&mut self, n: u32) -> Result<(), GroupError> {
        if let Layout::Chain(c) = &mut self.layout {
            let first = self.members.len() as u32;
            let mut fresh: Vec<u32> = (first..first + n).rev().collect();
            fresh.extend_from_slice(c);
            *c = fresh;
            self.join_seq.resize((first + n) as usize, 0);
            for l in first..first + n {
                self.members.push(Member {
                    state: MemberState::Listening,
                    incoming_cpu: -1,
                    connected: false,
                });
                self.join_seq[l as usize] = self.next_seq;
                self.next_seq += 1;
            }
            return Ok(());
        }
        for _ in 0..n {
            self.join()?;
        }
        Ok(())
    }

    /// A new socket joins (TCP `listen()`, UDP `bind()`): appended to
    /// `socks[]`, growing it when full, or put at the chain's head.
    pub fn join(&mut self) -> Result<Change, GroupError> {
        let l = self.members.len() as u32;
        self.members.push(Member {
            state: MemberState::Listening,
            incoming_cpu: -1,
            connected: false,
        });
        match self.add_to_layout(l) {
            Ok(c) => Ok(c),
            Err(e) => {
                self.members.pop();
                Err(e)
            }
        }
    }

    fn remove_from_listening(&mut self, l: u32) -> Change {
        match &mut self.layout {
            Layout::Chain(c) => {
                c.retain(|&x| x != l);
                Change::Left {
                    listener: l,
                    slot: None,
                    moved: None,
                }
            }
            Layout::Array(a) => {
                let (slot, moved) = a.detach(l).expect("listening member is in the prefix");
                Change::Left {
                    listener: l,
                    slot: Some(slot),
                    moved,
                }
            }
        }
    }

    /// `close()`: the member leaves the group for good; in the group era the
    /// last listening member moves into its slot (`reuseport_detach_sock`).
    pub fn close(&mut self, l: u32) -> Result<Change, GroupError> {
        self.leave(l, true)
    }

    /// Out of the group for good: on `close()` (`unhashed`), or as a UDP
    /// member connects (6.13+, or with a wildcard address).
    fn leave(&mut self, l: u32, unhashed: bool) -> Result<Change, GroupError> {
        let m = self.member(l)?;
        let change = match m.state {
            MemberState::Listening => self.remove_from_listening(l),
            MemberState::ClosedTail => {
                if let Layout::Array(a) = &mut self.layout {
                    a.detach_closed(l);
                }
                Change::Unchanged
            }
            MemberState::ShutDown => Change::Unchanged,
            // Out of the group since its connect(): the file closes, and
            // the socket maps that still hold it let go (sock_map_close).
            MemberState::Closed if m.connected && self.connect_leaves() && unhashed => {
                self.leave_maps(l, true);
                return Ok(Change::Unchanged);
            }
            MemberState::Closed => return Err(self.wrong_state(l, "close", "open")),
        };
        if Self::in_group(m.state) && m.incoming_cpu >= 0 && self.selection() == Selection::Group {
            self.incoming_cpu -= 1;
        }
        self.leave_maps(l, unhashed);
        self.members[l as usize].state = MemberState::Closed;
        Ok(change)
    }

    /// `shutdown()` of a TCP listener: with `tcp_migrate_req` (5.14+) it moves
    /// to the closed tail; otherwise it leaves the group as on close, but may
    /// listen again.
    pub fn shutdown(&mut self, l: u32) -> Result<Change, GroupError> {
        if self.proto != Proto::Tcp {
            return Err(GroupError::Unsupported {
                what: "shutdown of a member".into(),
                why: "a UDP socket stays bound after shutdown(); close it instead".into(),
            });
        }
        let m = self.member(l)?;
        if m.state != MemberState::Listening {
            return Err(self.wrong_state(l, "shutdown", "listening"));
        }
        // reuseport_stop_listen_sock (net/core/sock_reuseport.c 5.14+): the
        // sysctl, or a program loaded with BPF_SK_REUSEPORT_SELECT_OR_MIGRATE.
        let capable = self.tcp_migrate_req || self.program.as_ref().is_some_and(|p| p.migrates());
        let migrate = capable && self.profile.closed_tail;
        let change = match &mut self.layout {
            Layout::Array(a) if migrate => {
                let (slot, moved) = a.stop_listen(l).expect("listening member is in the prefix");
                Change::Left {
                    listener: l,
                    slot: Some(slot),
                    moved,
                }
            }
            _ => self.remove_from_listening(l),
        };
        if !migrate && m.incoming_cpu >= 0 && self.selection() == Selection::Group {
            self.incoming_cpu -= 1;
        }
        // Unhashed either way (inet_csk_listen_stop -> inet_unhash), and out
        // of the socket maps either way: reuseport_stop_listen_sock clears
        // the sockarray entry before moving it to the closed tail.
        self.leave_maps(l, true);
        self.members[l as usize].state = if migrate {
            MemberState::ClosedTail
        } else {
            MemberState::ShutDown
        };
        Ok(change)
    }

    /// `listen()` again after `shutdown()`: out of the closed tail
    /// (`reuseport_resurrect`) or back in as a new join, appended either way.
    pub fn relisten(&mut self, l: u32) -> Result<Change, GroupError> {
        let m = self.member(l)?;
        match m.state {
            MemberState::ClosedTail => {
                let Layout::Array(a) = &mut self.layout else {
                    unreachable!("closed tail exists only in the group era")
                };
                a.resurrect(l);
                let slot = a.num_socks() - 1;
                self.join_seq[l as usize] = self.next_seq;
                self.next_seq += 1;
                self.members[l as usize].state = MemberState::Listening;
                Ok(Change::Joined {
                    listener: l,
                    slot: Some(slot),
                    effect: AddEffect::Appended,
                })
            }
            MemberState::ShutDown => {
                self.members[l as usize].state = MemberState::Listening;
                let change = self
                    .add_to_layout(l)
                    .inspect_err(|_| self.members[l as usize].state = MemberState::ShutDown)?;
                if m.incoming_cpu >= 0 && self.selection() == Selection::Group {
                    self.incoming_cpu += 1;
                }
                Ok(change)
            }
            _ => Err(self.wrong_state(l, "listen again", "shut-down")),
        }
    }

    /// `setsockopt(SO_INCOMING_CPU)` (4.4+), or `None` to clear it (-1). In
    /// the group era this keeps the group's `incoming_cpu` counter
    /// (`reuseport_update_incoming_cpu`, 6.2).
    pub fn set_incoming_cpu(&mut self, l: u32, cpu: Option<u32>) -> Result<Change, GroupError> {
        if !self.profile.incoming_cpu_writable {
            return Err(GroupError::Unsupported {
                what: "setsockopt(SO_INCOMING_CPU)".into(),
                why: format!(
                    "it became writable in 4.4 (70da268b569d); on {} it fails with ENOPROTOOPT",
                    self.profile.release
                ),
            });
        }
        let m = self.member(l)?;
        if m.state == MemberState::Closed {
            return Err(self.wrong_state(l, "SO_INCOMING_CPU", "open"));
        }
        let new = cpu.map(|c| c as i32).unwrap_or(-1);
        if Self::in_group(m.state) && self.selection() == Selection::Group {
            if m.incoming_cpu < 0 && new >= 0 {
                self.incoming_cpu += 1;
            } else if m.incoming_cpu >= 0 && new < 0 {
                self.incoming_cpu -= 1;
            }
        }
        self.members[l as usize].incoming_cpu = new;
        Ok(Change::Unchanged)
    }

    /// Whether `connect()` takes a UDP member out of its group:
    ///
    /// - with a wildcard address, in every era with UDP groups (4.5+):
    ///   `connect()` gives the socket the route's source address
    ///   (`__ip4_datagram_connect`, net/ipv4/datagram.c;
    ///   `__ip6_datagram_connect`, net/ipv6/datagram.c), and the rehash
    ///   that follows takes it out of its group (`udp_lib_rehash` ->
    ///   `reuseport_detach_sock`, net/ipv4/udp.c; read in 4.6.2, 6.1.192
    ///   and 6.12.117, added with the UDP groups, e32ea7e74727, 4.5);
    /// - with a specific address, from 6.13: `udp_lib_hash4` ->
    ///   `reuseport_detach_sock` (net/ipv4/udp.c, commit 78c91ae2c6de),
    ///   seen on 6.18.44 (agent/tests/udp_connect_leaves.rs).
    fn connect_leaves(&self) -> bool {
        self.proto == Proto::Udp
            && (self.rehash_leaves() || self.profile.lookup.udp_connect_leaves_group)
    }

    /// A wildcard member leaves as its address is set, before
    /// `reuseport_has_conns_set` runs (5.4+, same function), which then
    /// finds no group: the group's `has_conns` is not set by it.
    fn rehash_leaves(&self) -> bool {
        self.proto == Proto::Udp
            && self.bind.is_unspecified()
            && self.selection() == Selection::Group
    }

    /// `connect()` on a UDP member: it becomes TCP_ESTABLISHED and the group
    /// records `has_conns` (5.4+), which is never cleared; select by hash
    /// steps over it (5.4+). A member that leaves its group as it connects
    /// ([`Self::connect_leaves`]: a wildcard one in every group era, any
    /// from 6.13) goes as on `close()`, the last member moving into its
    /// slot ([`ReuseportGroup::close`]), and its REUSEPORT_SOCKARRAY
    /// entries go with it; closing it later changes nothing more in the
    /// group. A wildcard member leaves before `has_conns` could be set.
    pub fn connect(&mut self, l: u32) -> Result<Change, GroupError> {
        if self.proto != Proto::Udp {
            return Err(GroupError::Unsupported {
                what: "connect() on a member".into(),
                why: "only UDP members connect; a TCP listener cannot".into(),
            });
        }
        let m = self.member(l)?;
        if m.state != MemberState::Listening {
            return Err(self.wrong_state(l, "connect", "bound"));
        }
        self.members[l as usize].connected = true;
        if !self.rehash_leaves() {
            self.has_conns = true;
        }
        if self.connect_leaves() {
            return self.leave(l, false);
        }
        Ok(Change::Unchanged)
    }

    /// Members that left the group as they connected and are still open
    /// (a later `close()` of one changes nothing in the group, so a
    /// connected member out of the group counts as open).
    pub(super) fn left_on_connect(&self) -> Vec<u32> {
        if !self.connect_leaves() {
            return Vec::new();
        }
        (0..self.members.len() as u32)
            .filter(|&l| {
                let m = self.members[l as usize];
                m.connected && m.state == MemberState::Closed
            })
            .collect()
    }

    /// A member that is connected when it joins: a UDP socket that left its
    /// group on `connect()` (6.13+) and is then the socket a later bind
    /// matches, which makes a new group around it (`reuseport_add_sock`
    /// calls `reuseport_alloc(sk2)`, net/core/sock_reuseport.c). Select by
    /// hash skips it, and the new group's `has_conns` stays clear: only
    /// `connect()` sets it.
    pub fn join_connected(&mut self) -> Result<Change, GroupError> {
        if self.proto != Proto::Udp {
            return Err(GroupError::Unsupported {
                what: "a connected member".into(),
                why: "only UDP members connect; a TCP listener cannot".into(),
            });
        }
        let change = self.join()?;
        if let Some(m) = self.members.last_mut() {
            m.connected = true;
        }
        Ok(change)
    }
}
