//! A worker process of a scenario run: its listener (shared or its own),
//! the accept model, the service, and the commands of the agent.

use super::*;

/// What one worker process does.
#[derive(Clone, Copy)]
pub(super) struct WorkerPlan {
    pub(super) index: u32,
    pub(super) model: AcceptModel,
    /// The shared listener, or -1 (open one's own).
    pub(super) shared: RawFd,
    pub(super) port: u16,
    pub(super) backlog: u32,
    pub(super) pin: Option<u32>,
    pub(super) incoming_cpu: bool,
    pub(super) attach_bpf: bool,
    pub(super) mean_ns: f64,
    pub(super) exponential: bool,
    pub(super) factor: f64,
    pub(super) seed: u64,
    pub(super) mutex_delay_ms: c_int,
    pub(super) report: RawFd,
}

/// Pins the worker (or client) to `cpu`; a refusal leaves it unpinned (the
/// run is then measured as the scheduler places it).
pub(super) fn pin_to(cpu: u32) {
    let _ = crate::process::pin_to(cpu);
}

/// A reuseport listener on 127.0.0.1:port; Err: the call that failed.
fn reuseport_listener(p: &WorkerPlan) -> Result<RawFd, &'static str> {
    // SAFETY: plain socket calls on a descriptor we own.
    unsafe {
        let fd = libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        );
        if fd < 0 {
            return Err("socket");
        }
        if !set_int(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)
            || !set_int(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)
        {
            return Err("setsockopt(SO_REUSEPORT)");
        }
        if p.incoming_cpu {
            let cpu = p.pin.unwrap_or(0) as c_int;
            if !set_int(fd, libc::SOL_SOCKET, libc::SO_INCOMING_CPU, cpu) {
                return Err("setsockopt(SO_INCOMING_CPU)");
            }
        }
        let a = sockaddr(SERVER, p.port);
        if libc::bind(fd, (&a as *const libc::sockaddr_in).cast(), SOCKADDR_LEN) != 0 {
            return Err("bind");
        }
        if libc::listen(fd, p.backlog as c_int) != 0 {
            return Err("listen");
        }
        if p.attach_bpf {
            // The selftests' CPU program (reuseport_bpf_cpu.c); the child
            // may allocate (the agent forks single-threaded).
            if let Err(e) = crate::cbpf::attach(fd, &reuseport_model::reuseport::Program::Cpu) {
                // `fail` reports errno: the one the setsockopt set.
                *libc::__errno_location() = e.raw_os_error().unwrap_or(libc::EIO);
                return Err("setsockopt(SO_ATTACH_REUSEPORT_CBPF)");
            }
        }
        Ok(fd)
    }
}

extern "C" fn on_command(_: c_int) {}

/// Per-descriptor state of a worker.
#[derive(Clone, Copy, Default)]
pub(super) struct WFd {
    pub(super) accepted: u64,
    pub(super) conn: u32,
    pub(super) local: bool,
    pub(super) have: u8,
    pub(super) buf: [u8; 8],
}

pub(super) struct Worker<'a> {
    pub(super) p: WorkerPlan,
    pub(super) sh: &'a Shared,
    pub(super) lay: Layout,
    pub(super) fds: Vec<WFd>,
    pub(super) rng: u64,
    pub(super) accepts: u64,
    pub(super) requests: u64,
    pub(super) wasted: u64,
}

impl Worker<'_> {
    fn word(&self, w: usize) -> &std::sync::atomic::AtomicU64 {
        self.sh.word(self.lay.worker(self.p.index as usize, w))
    }

    fn publish(&self) {
        self.word(W_ACCEPTS).store(self.accepts, Ordering::Relaxed);
        self.word(W_REQUESTS)
            .store(self.requests, Ordering::Relaxed);
        self.word(W_WASTED).store(self.wasted, Ordering::Relaxed);
        self.word(W_CPU)
            .store(crate::process::cpu_ns(), Ordering::Relaxed);
    }

    fn service_ns(&mut self) -> u64 {
        let mut t = self.p.mean_ns;
        if self.p.exponential {
            // xorshift64*
            self.rng ^= self.rng >> 12;
            self.rng ^= self.rng << 25;
            self.rng ^= self.rng >> 27;
            let u =
                (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64;
            t = -t * (1.0 - u).ln();
        }
        (t * self.p.factor) as u64
    }

    /// A new connection on descriptor `c`.
    fn accepted(&mut self, c: RawFd) -> bool {
        if c as usize >= FDS {
            // SAFETY: our descriptor.
            unsafe { libc::close(c) };
            return false;
        }
        let mut inc: c_int = -1;
        let mut len = std::mem::size_of::<c_int>() as libc::socklen_t;
        // SAFETY: an int-sized option into an int.
        unsafe {
            libc::getsockopt(
                c,
                libc::SOL_SOCKET,
                libc::SO_INCOMING_CPU,
                (&mut inc as *mut c_int).cast(),
                &mut len,
            );
        }
        // SAFETY: no arguments.
        let here = unsafe { libc::sched_getcpu() };
        self.fds[c as usize] = WFd {
            accepted: now_ns(),
            conn: u32::MAX,
            local: inc >= 0 && inc == here,
            have: 0,
            buf: [0; 8],
        };
        self.accepts += 1;
        self.publish();
        true
    }

    /// Reads what `c` sent and answers each whole request. Returns false
    /// when the connection is over (closed here).
    fn serve(&mut self, c: RawFd) -> bool {
        loop {
            let st = &mut self.fds[c as usize];
            let have = st.have as usize;
            // SAFETY: reading into the rest of the descriptor's buffer.
            let n = unsafe { libc::read(c, st.buf[have..].as_mut_ptr().cast(), 8 - have) };
            if n == 0 {
                break;
            }
            if n < 0 {
                match errno() {
                    libc::EINTR => continue,
                    libc::EAGAIN => return true,
                    _ => break,
                }
            }
            st.have += n as u8;
            if st.have < 8 {
                continue;
            }
            st.have = 0;
            let conn = u32::from_ne_bytes(st.buf[..4].try_into().expect("4 bytes"));
            if st.conn == u32::MAX && (conn as usize) < self.lay.conns {
                st.conn = conn;
                let i = conn as usize;
                self.sh
                    .word(self.lay.conn(i, K_ACCEPTED))
                    .store(st.accepted, Ordering::Relaxed);
                self.sh
                    .word(self.lay.conn(i, K_LOCAL))
                    .store(st.local as u64, Ordering::Relaxed);
                self.sh
                    .word(self.lay.conn(i, K_WORKER))
                    .store(self.p.index as u64 + 1, Ordering::Relaxed);
            }
            let answer = st.buf;
            let t = self.service_ns();
            let until = crate::process::cpu_ns() + t;
            while crate::process::cpu_ns() < until {}
            // SAFETY: writing 8 bytes from a local.
            unsafe { libc::write(c, answer.as_ptr().cast(), 8) };
            self.requests += 1;
            self.publish();
        }
        // SAFETY: our descriptor.
        unsafe { libc::close(c) };
        false
    }
}

/// A worker process; never returns.
pub(super) fn worker_main(p: WorkerPlan, sh: &Shared, lay: Layout) -> ! {
    let fail = |what: &str| -> ! {
        let e = errno();
        let msg = format!("{} {what} {e}\n", p.index);
        // SAFETY: writing a local buffer to the report pipe.
        unsafe {
            libc::write(p.report, msg.as_ptr().cast(), msg.len());
            libc::_exit(1)
        }
    };
    if let Some(cpu) = p.pin {
        pin_to(cpu);
    }
    // SAFETY: a handler that does nothing, without SA_RESTART, so a
    // command interrupts a blocking accept() or read().
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_command as extern "C" fn(c_int) as usize;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(libc::SIGUSR1, &act, ptr::null_mut());
    }
    let mut w = Worker {
        p,
        sh,
        lay,
        fds: vec![WFd::default(); FDS],
        rng: p.seed ^ (u64::from(p.index) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
        accepts: 0,
        requests: 0,
        wasted: 0,
    };
    let mut listener = if p.shared >= 0 {
        p.shared
    } else {
        reuseport_listener(&p).unwrap_or_else(|call| fail(call))
    };
    let msg = format!("{} ready 0\n", p.index);
    // SAFETY: as above; the report pipe is not needed after this.
    unsafe {
        libc::write(p.report, msg.as_ptr().cast(), msg.len());
        libc::close(p.report);
    }
    let mut seen = 0u64;
    let mut accepting = true;
    if p.model == AcceptModel::Blocking {
        loop {
            let cmd = w.word(W_CMD).load(Ordering::SeqCst);
            if cmd != seen {
                seen = cmd;
                accepting = cmd & 0xff == CMD_REJOIN;
            }
            if !accepting {
                // SAFETY: sleeping; a command's signal cuts it short.
                unsafe { libc::usleep(1000) };
                continue;
            }
            // SAFETY: accept on the shared listener.
            let c = unsafe {
                libc::accept4(
                    listener,
                    ptr::null_mut(),
                    ptr::null_mut(),
                    libc::SOCK_CLOEXEC,
                )
            };
            if c < 0 {
                continue;
            }
            if w.accepted(c) {
                while w.serve(c) {}
            }
        }
    }
    // SAFETY: a new epoll set.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        fail("epoll_create1");
    }
    let ctl = |op: c_int, fd: RawFd, events: u32, data: u64| -> bool {
        let mut ev = libc::epoll_event { events, u64: data };
        // SAFETY: one event on our epoll set.
        unsafe { libc::epoll_ctl(ep, op, fd, &mut ev) == 0 }
    };
    let listen_events = libc::EPOLLIN as u32
        | if p.model == AcceptModel::EpollExclusive {
            libc::EPOLLEXCLUSIVE as u32
        } else {
            0
        };
    let mutex = p.model == AcceptModel::AcceptMutex;
    let lock = sh.word(1);
    let me = u64::from(p.index) + 1;
    let mut registered = false;
    if !mutex {
        if !ctl(libc::EPOLL_CTL_ADD, listener, listen_events, LISTENER) {
            fail("epoll_ctl");
        }
        registered = true;
    }
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 64];
    let mut ready: Vec<RawFd> = Vec::with_capacity(64);
    let _ = COMMAND;
    loop {
        let cmd = w.word(W_CMD).load(Ordering::SeqCst);
        if cmd != seen {
            seen = cmd;
            let leave = cmd & 0xff == CMD_LEAVE;
            if leave && accepting {
                accepting = false;
                if p.shared >= 0 {
                    if registered {
                        ctl(libc::EPOLL_CTL_DEL, listener, 0, 0);
                        registered = false;
                    }
                    if mutex {
                        let _ = lock.compare_exchange(me, 0, Ordering::SeqCst, Ordering::SeqCst);
                    }
                } else {
                    // SAFETY: closing our own listener; its queue is reset
                    // or migrated by the kernel.
                    unsafe { libc::close(listener) };
                    registered = false;
                }
            } else if !leave && !accepting {
                accepting = true;
                if p.shared < 0 {
                    listener = reuseport_listener(&WorkerPlan {
                        attach_bpf: false,
                        ..p
                    })
                    .unwrap_or_else(|call| fail(call));
                }
                if !mutex {
                    registered = ctl(libc::EPOLL_CTL_ADD, listener, listen_events, LISTENER);
                }
            }
        }
        let mut timeout = -1;
        let mut holder = false;
        if mutex && accepting {
            // ngx_trylock_accept_mutex: the holder has the listener in its
            // set; the others drop it and wait at most accept_mutex_delay.
            holder = lock
                .compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
                || lock.load(Ordering::SeqCst) == me;
            if holder && !registered {
                registered = ctl(
                    libc::EPOLL_CTL_ADD,
                    listener,
                    libc::EPOLLIN as u32,
                    LISTENER,
                );
            } else if !holder && registered {
                ctl(libc::EPOLL_CTL_DEL, listener, 0, 0);
                registered = false;
            }
            if !holder {
                timeout = p.mutex_delay_ms;
            }
        }
        // SAFETY: into our events array.
        let n =
            unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as c_int, timeout) };
        if n < 0 {
            if holder {
                lock.store(0, Ordering::SeqCst);
            }
            continue;
        }
        let mut listener_ready = false;
        ready.clear();
        for ev in &events[..n as usize] {
            if ev.u64 == LISTENER {
                listener_ready = true;
            } else {
                ready.push(ev.u64 as RawFd);
            }
        }
        if listener_ready && accepting {
            // One accept per wake-up (nginx's multi_accept off).
            // SAFETY: a non-blocking accept on the listener.
            let c = unsafe {
                libc::accept4(
                    listener,
                    ptr::null_mut(),
                    ptr::null_mut(),
                    libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                )
            };
            if c >= 0 {
                if w.accepted(c) {
                    ctl(libc::EPOLL_CTL_ADD, c, libc::EPOLLIN as u32, c as u64);
                }
            } else if errno() == libc::EAGAIN {
                w.wasted += 1;
                w.publish();
            }
        }
        if holder {
            // nginx unlocks before it processes the posted read events.
            lock.store(0, Ordering::SeqCst);
        }
        for &c in &ready {
            w.serve(c);
        }
    }
}
