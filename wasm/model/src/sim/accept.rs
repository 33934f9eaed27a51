//! The accept models as data, the way the eras are: each [`AcceptModel`] is
//! one row of [`ACCEPT_MODELS`], naming where connections queue, whom a
//! queued connection wakes, how a worker serves, what the kernel needs, and
//! the source each rule follows. The engine asks the row; it never asks
//! which model it runs.

use serde::{Deserialize, Serialize};

use crate::profile::{Profile, Selection};
use crate::release::Release;

/// How a new connection reaches a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "kebab-case")]
pub enum AcceptModel {
    /// One listening socket shared by every worker (created before
    /// `fork()`), each worker blocked in `accept()` and serving one
    /// connection at a time. Sleepers queue as exclusive waiters at the tail
    /// of the socket's wait queue and a connection wakes the head
    /// (`inet_csk_wait_for_connect`, net/ipv4/inet_connection_sock.c, 3.9).
    Blocking,
    /// One shared socket in every worker's epoll set without
    /// `EPOLLEXCLUSIVE`: every idle worker is woken, one wins `accept()`,
    /// the rest get `EAGAIN` (fs/eventpoll.c).
    Epoll,
    /// One shared socket with `EPOLLEXCLUSIVE` (4.5, fs/eventpoll.c): the
    /// wake-up walks the entries in registration order and stops at the
    /// first worker asleep in `epoll_wait()`.
    EpollExclusive,
    /// nginx's `accept_mutex` (on by default before nginx 1.11.3): only the
    /// worker holding a lock in shared memory has the socket in its epoll
    /// set; the others retry after `accept_mutex_delay`.
    AcceptMutex,
    /// One `SO_REUSEPORT` listener per worker; the kernel picks one per SYN
    /// with the model's selection for the scenario's kernel.
    Reuseport,
    /// As `reuseport`, with worker `w` pinned to CPU `w % cpus` and its
    /// listener's `SO_INCOMING_CPU` set to that CPU.
    ReuseportIncomingCpu,
    /// As `reuseport`, with the classic BPF program that returns the
    /// receiving CPU (tools/testing/selftests/net/reuseport_bpf_cpu.c):
    /// needs a listener per CPU, in CPU order.
    ReuseportBpfCpu,
    /// As `reuseport`, with an `SK_REUSEPORT` program that picks the
    /// listener whose worker has the fewest connections waiting or in
    /// service, from a map the workers update on every accept and close
    /// (each update costs `params.mapUpdateUs` of the worker's CPU).
    ReuseportLeastLoaded,
}

impl AcceptModel {
    /// Every model, in the order the gallery shows them.
    pub const ALL: [AcceptModel; 8] = [
        AcceptModel::Blocking,
        AcceptModel::Epoll,
        AcceptModel::EpollExclusive,
        AcceptModel::AcceptMutex,
        AcceptModel::Reuseport,
        AcceptModel::ReuseportIncomingCpu,
        AcceptModel::ReuseportBpfCpu,
        AcceptModel::ReuseportLeastLoaded,
    ];

    /// One listening socket per worker (a reuseport group), rather than
    /// one shared by all ([`super::accept::AcceptRules::per_worker_queues`]).
    pub fn per_worker_queues(self) -> bool {
        self.rules().per_worker_queues()
    }

    /// Whether a kernel of this profile has what the model needs
    /// ([`super::accept::Needs`]): read from the profile's fields, never
    /// from its number.
    pub fn runs_on(self, p: &Profile) -> bool {
        self.rules().needs.met_by(p)
    }

    /// The oldest profile that runs the model ([`Self::runs_on`]), from the
    /// era table; `None` if no profile does.
    pub fn since(self) -> Option<Release> {
        Profile::first_with(|p| self.runs_on(p))
    }
}

/// Where a SYN queues, and what picks the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steering {
    /// One listening socket shared by every worker.
    Shared,
    /// One `SO_REUSEPORT` listener per worker, picked by the group's hash.
    Hash,
    /// As [`Steering::Hash`], with worker `w` pinned to CPU `w % cpus` and
    /// its listener's `SO_INCOMING_CPU` set to that CPU.
    IncomingCpu,
    /// As [`Steering::Hash`], with the classic BPF program that returns the
    /// receiving CPU attached to the group.
    BpfCpu,
    /// An `SK_REUSEPORT` program that picks the listener whose worker has
    /// the fewest connections waiting or in service (user space's rule, not
    /// the kernel's), from a map the workers update.
    LeastLoaded,
}

/// Whom a connection queued on a listener wakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// Exclusive waiters on the socket's wait queue: the one asleep the
    /// longest (`inet_csk_wait_for_connect`, net/ipv4/inet_connection_sock.c).
    LongestAsleep,
    /// Every epoll entry without `EPOLLEXCLUSIVE`: every idle worker; one
    /// wins `accept()`, the rest get `EAGAIN` (fs/eventpoll.c).
    Everyone,
    /// `EPOLLEXCLUSIVE` entries in registration order, stopping at the
    /// first worker asleep in `epoll_wait()` (fs/eventpoll.c, 4.5).
    FirstRegistered,
    /// nginx's `accept_mutex`: only the worker holding the lock in shared
    /// memory has the socket in its epoll set; the others retry after
    /// `accept_mutex_delay`.
    MutexHolder,
    /// The listener's own worker (one listener per worker).
    Owner,
}

/// What a kernel must have for the model to run on it, read from the
/// profile's fields, never from its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Nothing beyond SO_REUSEPORT, which every profile has (3.9).
    Nothing,
    /// `EPOLLEXCLUSIVE` (4.5, fs/eventpoll.c).
    EpollExclusive,
    /// `SO_INCOMING_CPU` writable (4.4, net/core/sock.c).
    IncomingCpuWritable,
    /// A classic BPF program on a TCP group (4.6, net/core/sock_reuseport.c).
    TcpGroupProgram,
    /// `SK_REUSEPORT` programs (4.19, net/core/filter.c).
    SkReuseportProgram,
}

impl Needs {
    /// Whether `p` has it.
    pub fn met_by(self, p: &Profile) -> bool {
        match self {
            Needs::Nothing => true,
            Needs::EpollExclusive => p.epoll_exclusive,
            Needs::IncomingCpuWritable => p.incoming_cpu_writable,
            Needs::TcpGroupProgram => p.tcp_selection == Selection::Group,
            Needs::SkReuseportProgram => p.sk_reuseport_prog,
        }
    }
}

/// One accept model's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcceptRules {
    /// The model these rules are.
    pub model: AcceptModel,
    /// Where a SYN queues.
    pub steering: Steering,
    /// Whom a queued connection wakes.
    pub wake: Wake,
    /// Workers block in `accept()` and serve one connection at a time
    /// (`false`: an event loop that serves many).
    pub blocking_accept: bool,
    /// Every accept also updates a map (costs `params.mapUpdateUs`).
    pub map_update_per_accept: bool,
    /// What the kernel must have.
    pub needs: Needs,
}

impl AcceptRules {
    /// One listening socket per worker (a reuseport group), rather than
    /// one shared by all.
    pub fn per_worker_queues(&self) -> bool {
        self.steering != Steering::Shared
    }
}

/// Every model's rules, in the order the gallery shows them
/// ([`AcceptModel::ALL`]).
pub const ACCEPT_MODELS: [AcceptRules; 8] = [
    AcceptRules {
        model: AcceptModel::Blocking,
        steering: Steering::Shared,
        wake: Wake::LongestAsleep,
        blocking_accept: true,
        map_update_per_accept: false,
        needs: Needs::Nothing,
    },
    AcceptRules {
        model: AcceptModel::Epoll,
        steering: Steering::Shared,
        wake: Wake::Everyone,
        blocking_accept: false,
        map_update_per_accept: false,
        needs: Needs::Nothing,
    },
    AcceptRules {
        model: AcceptModel::EpollExclusive,
        steering: Steering::Shared,
        wake: Wake::FirstRegistered,
        blocking_accept: false,
        map_update_per_accept: false,
        needs: Needs::EpollExclusive,
    },
    AcceptRules {
        model: AcceptModel::AcceptMutex,
        steering: Steering::Shared,
        wake: Wake::MutexHolder,
        blocking_accept: false,
        map_update_per_accept: false,
        needs: Needs::Nothing,
    },
    AcceptRules {
        model: AcceptModel::Reuseport,
        steering: Steering::Hash,
        wake: Wake::Owner,
        blocking_accept: false,
        map_update_per_accept: false,
        needs: Needs::Nothing,
    },
    AcceptRules {
        model: AcceptModel::ReuseportIncomingCpu,
        steering: Steering::IncomingCpu,
        wake: Wake::Owner,
        blocking_accept: false,
        map_update_per_accept: false,
        needs: Needs::IncomingCpuWritable,
    },
    AcceptRules {
        model: AcceptModel::ReuseportBpfCpu,
        steering: Steering::BpfCpu,
        wake: Wake::Owner,
        blocking_accept: false,
        map_update_per_accept: false,
        needs: Needs::TcpGroupProgram,
    },
    AcceptRules {
        model: AcceptModel::ReuseportLeastLoaded,
        steering: Steering::LeastLoaded,
        wake: Wake::Owner,
        blocking_accept: false,
        map_update_per_accept: true,
        needs: Needs::SkReuseportProgram,
    },
];

impl AcceptModel {
    /// This model's row of [`ACCEPT_MODELS`].
    pub fn rules(self) -> &'static AcceptRules {
        ACCEPT_MODELS
            .iter()
            .find(|r| r.model == self)
            .expect("every model has a row (tested)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table has one row per model, in the gallery's order.
    #[test]
    fn every_model_has_one_row_in_the_gallery_order() {
        let models: Vec<AcceptModel> = ACCEPT_MODELS.iter().map(|r| r.model).collect();
        assert_eq!(models, AcceptModel::ALL);
    }

    /// Only the shared-socket models wake by a rule of the wait queue;
    /// every per-worker model wakes the listener's own worker.
    #[test]
    fn per_worker_models_wake_the_owner_and_shared_ones_do_not() {
        for r in &ACCEPT_MODELS {
            assert_eq!(
                r.per_worker_queues(),
                r.wake == Wake::Owner,
                "{:?}",
                r.model
            );
        }
    }
}
