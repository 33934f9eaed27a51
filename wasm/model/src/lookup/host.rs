//! The host's state: its sockets, their groups and the tables they sit in,
//! with the upkeep every call shares (moving a socket between lists) and
//! what a caller reads back.

use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;

use super::bucket::{Bucket, Class, TbFast};
use super::calls::{Call, CallLog};
use super::types::{unspecified_of, Answer, CallResult, Family, SkLookup, SockState, SocketSpec};
use crate::hash::Keys;
use crate::message::Refusal;
use crate::profile::rules::{Ephemeral, LookupRules, ScanRule};
use crate::profile::Profile;
use crate::reuseport::{Change, GroupSpec, ReuseportGroup};
use crate::tuple::Proto;

pub(super) struct Sock {
    /// The socket as it is now: family, protocol and owner from `socket`,
    /// options from `setsockopt`, address from `bind`.
    pub(super) spec: SocketSpec,
    pub(super) bound: bool,
    /// When its `bind()` succeeded, among all binds: the bucket's order.
    pub(super) bind_seq: u64,
    /// TCP: `connect()`ed (not listening; TIME_WAIT once closed).
    pub(super) established: bool,
    pub(super) listening: bool,
    pub(super) group: Option<usize>,
    pub(super) member: Option<u32>,
    pub(super) bind_refusal: Option<Refusal>,
    pub(super) listen_refusal: Option<Refusal>,
    pub(super) attach_refusal: Option<Refusal>,
    pub(super) closed: bool,
    /// Bound to a port the kernel drew at random from this range (the
    /// call log gave none), which the model does not know: the socket is
    /// in no bucket, list or group the model keeps.
    pub(super) random_port: Option<Ephemeral>,
    /// SO_LINGER: its timeout in seconds when on.
    pub(super) linger: Option<u32>,
    /// Hashed at the tail of UDP's slots when it bound (AF_INET6 with
    /// SO_REUSEPORT then); see [`bucket`].
    pub(super) slot_tail: bool,
    /// TCP: closed while connected without SO_LINGER, so still a full
    /// socket in FIN_WAIT1 on its port ([`Call::Close`]).
    pub(super) closing: bool,
}

impl Sock {
    pub(super) fn new(family: Family, proto: Proto, uid: u32) -> Sock {
        Sock {
            spec: SocketSpec {
                family,
                proto,
                addr: unspecified_of(family),
                port: 0,
                v6only: false,
                reuseaddr: false,
                reuseport: false,
                uid,
                device: None,
                state: match proto {
                    Proto::Tcp => SockState::Bound,
                    Proto::Udp => SockState::Listen,
                },
                peer: None,
                incoming_cpu: None,
                program: None,
                program_before_bind: false,
            },
            bound: false,
            bind_seq: 0,
            established: false,
            listening: false,
            group: None,
            member: None,
            bind_refusal: None,
            listen_refusal: None,
            attach_refusal: None,
            closed: false,
            random_port: None,
            linger: None,
            slot_tail: false,
            closing: false,
        }
    }
}

pub(super) struct GroupEntry {
    pub(super) group: ReuseportGroup,
    /// Socket index per member number.
    pub(super) members: Vec<usize>,
}

/// A host's sockets after the layout's calls, ready for lookups.
pub struct Host {
    pub(super) profile: &'static Profile,
    pub(super) rules: LookupRules,
    pub(super) socks: Vec<Sock>,
    pub(super) groups: Vec<GroupEntry>,
    /// Receiving sockets per protocol, in port-list order (head first;
    /// a deque, as sockets join at the head: a group of 32768 builds in
    /// linear time).
    pub(super) port_list: BTreeMap<(Proto, u16), VecDeque<usize>>,
    /// Receiving sockets per (protocol, bucket address, port), in list order.
    pub(super) addr_list: BTreeMap<(Proto, IpAddr, u16), VecDeque<usize>>,
    /// Sockets that bound each (protocol, port), in bind order: the kernel's
    /// bind bucket, which the conflict rules walk (so a layout over many
    /// ports builds in near-linear time).
    pub(super) bucket: BTreeMap<(Proto, u16), Bucket>,
    /// Groups per (protocol, port, bound address), for the join rule (which
    /// needs exactly the same address).
    pub(super) groups_on: BTreeMap<(Proto, u16, IpAddr), Vec<usize>>,
    /// The TCP bind bucket's fast-path state per port.
    pub(super) tcp_tb: BTreeMap<u16, TbFast>,
    pub(super) sk_lookup: Option<SkLookup>,
    pub(super) keys: Keys,
    pub(super) ephemeral: Option<Ephemeral>,
    pub(super) tcp_migrate_req: bool,
    /// The namespace's devices besides `lo` ([`CallLog::devices`]).
    pub(super) devices: Vec<String>,
    /// A port drawn from the default range when every port of it may be
    /// held: the call log needs a range of its own.
    pub(super) undecided_draw: bool,
    /// Each call's answer, in call order.
    pub(super) answers: Vec<Answer>,
    /// The calls applied, in order.
    pub(super) calls: Vec<Call>,
    /// The next bind's sequence number.
    pub(super) next_seq: u64,
    /// What the last call did to a reuseport group ([`Host::last_change`]).
    pub(super) last_change: Option<(usize, Change)>,
}

impl Host {
    /// Changes socket `i`'s options, moving it to its new class in the
    /// bind bucket when it is bound.
    pub(super) fn reclass(&mut self, i: usize, change: impl FnOnce(&mut Sock)) {
        let s = &self.socks[i];
        let key = (s.spec.proto, s.spec.port);
        let at = (s.bind_seq, i);
        let old = self.class_of(i, s.listening);
        change(&mut self.socks[i]);
        let s = &self.socks[i];
        if s.bound {
            let new = self.class_of(i, s.listening);
            if let Some(b) = self.bucket.get_mut(&key) {
                b.remove(at, &old);
                b.insert(at, new);
            }
        }
    }

    /// What the conflict rules read of socket `i`, listening or not, and
    /// where it sits in UDP's slots: its class in the bind bucket.
    pub(super) fn class_of(&self, i: usize, listening: bool) -> Class {
        let s = &self.socks[i];
        Class::of(&s.spec, listening, s.slot_tail, s.closing)
    }

    /// Socket `i` leaves the listening lists.
    pub(super) fn leave_lists(&mut self, i: usize) {
        for list in self
            .port_list
            .values_mut()
            .chain(self.addr_list.values_mut())
        {
            list.retain(|&x| x != i);
        }
    }

    /// One socket of each class bound to `proto`/`port` whose address can
    /// overlap `addr`, other than `except`, in bind order (see [`bucket`]).
    pub(super) fn bound_on(
        &self,
        proto: Proto,
        port: u16,
        addr: IpAddr,
        except: usize,
    ) -> Vec<usize> {
        self.bucket
            .get(&(proto, port))
            .map_or_else(Vec::new, |b| b.candidates(addr, except))
    }

    /// Socket `i`'s `listening` changes: its class in the bind bucket too.
    pub(super) fn set_listening(&mut self, i: usize, on: bool) {
        let s = &self.socks[i];
        if s.bound {
            let key = (s.spec.proto, s.spec.port);
            let old = self.class_of(i, s.listening);
            let new = self.class_of(i, on);
            let at = (s.bind_seq, i);
            if let Some(b) = self.bucket.get_mut(&key) {
                b.remove(at, &old);
                b.insert(at, new);
            }
        }
        self.socks[i].listening = on;
    }

    /// Socket `i` is no longer bound: out of its bind bucket.
    pub(super) fn unbind(&mut self, i: usize) {
        let s = &self.socks[i];
        if s.bound && s.spec.proto == Proto::Tcp {
            if let Some(tb) = self.tcp_tb.get_mut(&s.spec.port) {
                tb.owners = tb.owners.saturating_sub(1);
                if tb.owners == 0 {
                    // inet_bind_bucket_destroy: the next owner starts afresh.
                    self.tcp_tb.remove(&s.spec.port);
                }
            }
        }
        let s = &self.socks[i];
        if s.bound {
            let key = (s.spec.proto, s.spec.port);
            let class = self.class_of(i, s.listening);
            let at = (s.bind_seq, i);
            if let Some(b) = self.bucket.get_mut(&key) {
                b.remove(at, &class);
            }
        }
        self.socks[i].bound = false;
    }

    /// Socket `i` owns a reuseport group of its own before joining one (a
    /// program attached while it was not hashed), so `sk_reuseport_cb` is
    /// set and, from 4.6, the SO_REUSEPORT exemption of `bind()` and
    /// `listen()` is denied it (`inet_bind_conflict`, `sk_reuseport_match`,
    /// net/ipv4/inet_connection_sock.c; `udp_lib_lport_inuse`).
    pub(super) fn owns_group(&self, i: usize) -> bool {
        let s = &self.socks[i].spec;
        self.rules.bind_needs_no_group
            && s.reuseport
            && s.program.is_some()
            && s.program_before_bind
    }

    pub(super) fn group_era(&self, proto: Proto) -> bool {
        let scan = match proto {
            Proto::Tcp => self.rules.tcp_scan,
            Proto::Udp => self.rules.udp_scan,
        };
        scan != ScanRule::Reservoir
    }

    /// Each call's answer, in call order: `None` for ok, else the errno
    /// and the rule.
    pub fn answers(&self) -> &[Answer] {
        &self.answers
    }

    /// The host as a call log: its settings and every call applied so far.
    /// Replayed with [`Host::run`] it gives this host again.
    pub fn log(&self) -> CallLog {
        CallLog {
            calls: self.calls.clone(),
            sk_lookup: self.sk_lookup.clone(),
            keys: self.keys,
            ephemeral: self.ephemeral,
            tcp_migrate_req: self.tcp_migrate_req,
            devices: self.devices.clone(),
        }
    }

    /// The profile in force.
    pub fn profile(&self) -> &'static Profile {
        self.profile
    }

    /// How many sockets the `socket` calls made (fds `0..n`).
    pub fn sockets(&self) -> usize {
        self.socks.len()
    }

    /// Group `g` itself, for the hot paths (batch selection, the secret
    /// search, the spread) that ask one group many times; its members are
    /// numbered in join order, and [`Host::group_members`] maps them to fds.
    pub fn group(&self, g: usize) -> Option<&ReuseportGroup> {
        self.groups.get(g).map(|e| &e.group)
    }

    /// Group `g` taken out of the host, for a hot path that keeps it after
    /// the host is gone.
    pub fn into_group(self, g: usize) -> Option<ReuseportGroup> {
        self.groups.into_iter().nth(g).map(|e| e.group)
    }

    /// The reservoir era's stand-in for a group (TCP before 4.6, UDP
    /// before 4.5), for the hot paths: the kernel keeps no group there, and
    /// the lookup's reservoir scan picks among the receiving SO_REUSEPORT
    /// sockets that share socket `fd`'s family, address, port, device,
    /// `ipv6only` and owner (the attributes a group would share). The
    /// returned group holds them as the kernel's listener chain does,
    /// members numbered oldest first, with the fd of each member. `None`
    /// in the group era ([`Host::group`]) or when `fd` is not receiving
    /// with SO_REUSEPORT.
    pub fn chain_of(&self, fd: usize) -> Option<(ReuseportGroup, Vec<usize>)> {
        let s = self.socks.get(fd)?;
        if self.group_era(s.spec.proto) || !s.listening || s.closed || !s.spec.reuseport {
            return None;
        }
        let spec = &s.spec;
        let list = self.port_list.get(&(spec.proto, spec.port))?;
        // The list is head first, newest first: the chain joins oldest first.
        let fds: Vec<usize> = list
            .iter()
            .rev()
            .copied()
            .filter(|&j| {
                let o = &self.socks[j];
                o.listening && !o.closed && super::types::same_group(&o.spec, spec)
            })
            .collect();
        let gs = GroupSpec {
            v6only: spec.v6only,
            ..GroupSpec::new(spec.proto, 0, spec.addr, spec.port, self.keys)
        };
        let mut g = ReuseportGroup::build_empty(self.profile, &gs);
        g.join_all(fds.len() as u32).ok()?;
        for (m, &j) in fds.iter().enumerate() {
            let o = &self.socks[j].spec;
            if let Some(cpu) = o.incoming_cpu {
                let _ = g.set_incoming_cpu(m as u32, Some(cpu));
            }
            if o.state == SockState::Connected {
                let _ = g.connect(m as u32);
            }
        }
        Some((g, fds))
    }

    /// The group socket `fd` is in now, if any.
    pub fn group_of(&self, fd: usize) -> Option<usize> {
        let s = self.socks.get(fd)?;
        s.group.filter(|_| !s.closed)
    }

    /// Each socket's last `bind()`/`listen()`/attach answer and where it is now.
    pub fn results(&self) -> Vec<CallResult> {
        self.socks
            .iter()
            .enumerate()
            .map(|(socket, s)| CallResult {
                socket,
                family: s.spec.family,
                proto: s.spec.proto,
                addr: s.spec.addr,
                port: s.spec.port,
                random_port: s.random_port,
                bind: s.bind_refusal.clone(),
                listen: s.listen_refusal.clone(),
                attach: s.attach_refusal.clone(),
                receiving: s.listening,
                closed: s.closed,
                group: s.group,
                member: s.member,
            })
            .collect()
    }

    /// The lookup rules in force.
    pub fn rules(&self) -> LookupRules {
        self.rules
    }

    /// The socket index of each member of group `g`.
    pub fn group_members(&self, g: usize) -> Option<&[usize]> {
        self.groups.get(g).map(|e| e.members.as_slice())
    }

    /// What the last call did to a reuseport group, as that group's own
    /// record: the group and its [`Change`] (the slot a joining member
    /// took and any growth of `socks[]`; the slot a closing one freed and
    /// the last member moved into it), in the group's member numbers
    /// ([`Host::group_members`] maps them to sockets). `None` when the
    /// last call changed no group.
    pub fn last_change(&self) -> Option<(usize, Change)> {
        self.last_change
    }

    /// A new boot: the same sockets hashed with new per-boot keys
    /// (`net_secret` and `net_hash_mix` are drawn once per boot, so no
    /// call changes them; a page that asks "what if the secret were
    /// this" replaces them here). Every group hashes with them from now.
    pub fn set_keys(&mut self, keys: Keys) {
        self.keys = keys;
        for e in &mut self.groups {
            e.group.set_keys(keys);
        }
    }

    /// The receiving sockets in the listening list of (`proto`, `addr`,
    /// `port`), in the order a lookup walks them (head first): in the
    /// 3.9–4.5 reservoir era, where the kernel keeps no group, this list
    /// is the chain the reservoir scan draws from.
    pub fn receiving_on(&self, proto: Proto, addr: IpAddr, port: u16) -> Vec<usize> {
        self.addr_list
            .get(&(proto, super::bucket::bucket_addr(addr), port))
            .map_or_else(Vec::new, |l| l.iter().copied().collect())
    }
}
