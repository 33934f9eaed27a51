//! A client process of a scenario run: its share of the connections at
//! their times, the requests, the answers timed.

use super::worker::pin_to;
use super::*;

/// One client connection's state.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Phase {
    #[default]
    Waiting,
    Connecting,
    Reading,
    Thinking,
    Over,
}

pub(super) struct ClientPlan<'a> {
    pub(super) index: usize,
    pub(super) procs: usize,
    pub(super) at: &'a [u64],
    pub(super) who: &'a [u32],
    pub(super) s: &'a Scenario,
    pub(super) port: u16,
    pub(super) gate: RawFd,
    pub(super) gate_write: RawFd,
    /// Pinned to this CPU (the CPU-steered variants: on loopback a SYN is
    /// received on the sending client's CPU).
    pub(super) pin: Option<u32>,
}

/// A client process: opens its share of the connections at their times,
/// sends the requests, times the answers. Never returns.
pub(super) fn client_main(p: ClientPlan, sh: &Shared, lay: Layout) -> ! {
    if let Some(cpu) = p.pin {
        pin_to(cpu);
    }
    // SAFETY: closing the write end we hold, then waiting at the gate.
    unsafe {
        libc::close(p.gate_write);
        let mut b = 0u8;
        while libc::read(p.gate, (&mut b as *mut u8).cast(), 1) < 0 && errno() == libc::EINTR {}
        libc::close(p.gate);
    }
    let t0 = sh.word(0).load(Ordering::SeqCst);
    let s = p.s;
    let per = s.requests.per_connection as usize;
    let think = (s.requests.think_us * 1e3).round() as u64;
    let cl = s.clients;
    let full_range = cl.port_lo <= 32768 && cl.port_hi >= 60999;
    let range = (cl.port_hi - cl.port_lo) as u32 + 1;
    let mut prng = Rng::new(s.seed, 5);
    let mut next_port: Vec<u32> = (0..cl.count).map(|_| prng.below(range)).collect();
    let mine: Vec<usize> = (p.index..p.at.len()).step_by(p.procs).collect();
    let n = p.at.len();
    let mut fd_of = vec![-1 as RawFd; n];
    let mut phase = vec![Phase::Waiting; n];
    let mut next_req = vec![0usize; n];
    let mut thinking: VecDeque<(u64, usize)> = VecDeque::new();
    // SAFETY: new descriptors, ours.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    let tfd = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_CLOEXEC | libc::TFD_NONBLOCK,
        )
    };
    let ctl = |op: c_int, fd: RawFd, events: u32, data: u64| {
        let mut ev = libc::epoll_event { events, u64: data };
        // SAFETY: one event on our set.
        unsafe { libc::epoll_ctl(ep, op, fd, &mut ev) };
    };
    ctl(libc::EPOLL_CTL_ADD, tfd, libc::EPOLLIN as u32, TIMER);
    let word = |i: usize, w: usize| sh.word(lay.conn(i, w));
    let mut finished = 0usize;
    let finish =
        |i: usize, outcome: u64, fd_of: &mut [RawFd], phase: &mut [Phase], finished: &mut usize| {
            let fd = fd_of[i];
            if fd >= 0 {
                // SAFETY: our descriptor, not used again (fd_of forgets it).
                unsafe { close_with_reset(fd) };
                fd_of[i] = -1;
            }
            word(i, K_OUTCOME).store(outcome, Ordering::SeqCst);
            phase[i] = Phase::Over;
            *finished += 1;
            sh.word(lay.client(p.index))
                .store(*finished as u64, Ordering::SeqCst);
        };
    let send = |i: usize, k: usize, fd: RawFd| -> bool {
        let mut msg = [0u8; 8];
        msg[..4].copy_from_slice(&(i as u32).to_ne_bytes());
        msg[4..].copy_from_slice(&(k as u32).to_ne_bytes());
        let t = now_ns();
        if k > 0 {
            sh.word(lay.request(i * per + k, 0))
                .store(t, Ordering::Relaxed);
        }
        // SAFETY: 8 bytes from a local.
        unsafe { libc::send(fd, msg.as_ptr().cast(), 8, libc::MSG_NOSIGNAL) == 8 }
    };
    let mut next = 0usize;
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 256];
    while finished < mine.len() {
        let now = now_ns();
        while next < mine.len() && t0 + p.at[mine[next]] <= now {
            let i = mine[next];
            next += 1;
            let client = p.who[i];
            let src = (FIRST_CLIENT + client).to_be_bytes();
            let t = now_ns();
            word(i, K_START).store(t, Ordering::SeqCst);
            sh.word(lay.request(i * per, 0)).store(t, Ordering::Relaxed);
            // SAFETY: a new socket, ours.
            let fd = unsafe {
                libc::socket(
                    libc::AF_INET,
                    libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                    0,
                )
            };
            if fd < 0 {
                finish(i, 3, &mut fd_of, &mut phase, &mut finished);
                continue;
            }
            fd_of[i] = fd;
            let mut bound = false;
            // SAFETY: options and bind on our socket.
            unsafe {
                if full_range {
                    set_int(fd, libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT, 1);
                    let a = sockaddr(src, 0);
                    bound =
                        libc::bind(fd, (&a as *const libc::sockaddr_in).cast(), SOCKADDR_LEN) == 0;
                } else {
                    set_int(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1);
                    for _ in 0..range {
                        let k = &mut next_port[client as usize];
                        let port = cl.port_lo + (*k % range) as u16;
                        *k = k.wrapping_add(1);
                        let a = sockaddr(src, port);
                        if libc::bind(fd, (&a as *const libc::sockaddr_in).cast(), SOCKADDR_LEN)
                            == 0
                        {
                            bound = true;
                            break;
                        }
                    }
                }
            }
            if !bound {
                finish(i, 3, &mut fd_of, &mut phase, &mut finished);
                continue;
            }
            let server = sockaddr(SERVER, p.port);
            // SAFETY: a non-blocking connect on our socket.
            let r = unsafe {
                libc::connect(
                    fd,
                    (&server as *const libc::sockaddr_in).cast(),
                    SOCKADDR_LEN,
                )
            };
            if r != 0 && errno() != libc::EINPROGRESS {
                let o = if errno() == libc::ECONNREFUSED { 2 } else { 3 };
                finish(i, o, &mut fd_of, &mut phase, &mut finished);
                continue;
            }
            phase[i] = Phase::Connecting;
            ctl(
                libc::EPOLL_CTL_ADD,
                fd,
                (libc::EPOLLOUT | libc::EPOLLIN) as u32,
                i as u64,
            );
        }
        while let Some(&(due, i)) = thinking.front() {
            if due > now_ns() {
                break;
            }
            thinking.pop_front();
            if phase[i] != Phase::Thinking {
                continue;
            }
            let k = next_req[i];
            if send(i, k, fd_of[i]) {
                phase[i] = Phase::Reading;
            } else {
                finish(i, 2, &mut fd_of, &mut phase, &mut finished);
            }
        }
        if finished >= mine.len() {
            break;
        }
        // The next thing due: an arrival or the end of a think time.
        let due = [
            mine.get(next).map(|&i| t0 + p.at[i]),
            thinking.front().map(|&(d, _)| d),
        ]
        .into_iter()
        .flatten()
        .min();
        if let Some(d) = due {
            // tv_sec is a time_t, whose width musl 1.2 changed on 32-bit
            // targets (https://github.com/rust-lang/libc/issues/1848): the conversion names no type and
            // is checked, so it is right for either width. A CLOCK_MONOTONIC
            // second count (time since boot) fits both.
            let ts = libc::itimerspec {
                it_interval: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: libc::timespec {
                    tv_sec: (d / 1_000_000_000)
                        .try_into()
                        .expect("seconds since boot fit a time_t"),
                    tv_nsec: (d % 1_000_000_000) as libc::c_long,
                },
            };
            // SAFETY: arming our timer at an absolute time.
            unsafe { libc::timerfd_settime(tfd, libc::TFD_TIMER_ABSTIME, &ts, ptr::null_mut()) };
        }
        // SAFETY: into our events array.
        let got = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as c_int, -1) };
        for ev in &events[..got.max(0) as usize] {
            if ev.u64 == TIMER {
                let mut b = [0u8; 8];
                // SAFETY: draining the timer.
                unsafe { libc::read(tfd, b.as_mut_ptr().cast(), 8) };
                continue;
            }
            let i = ev.u64 as usize;
            let fd = fd_of[i];
            if fd < 0 {
                continue;
            }
            match phase[i] {
                Phase::Connecting => {
                    if ev.events & (libc::EPOLLOUT | libc::EPOLLERR | libc::EPOLLHUP) as u32 == 0 {
                        continue;
                    }
                    let mut err: c_int = 0;
                    let mut len = std::mem::size_of::<c_int>() as libc::socklen_t;
                    // SAFETY: an int-sized option.
                    unsafe {
                        libc::getsockopt(
                            fd,
                            libc::SOL_SOCKET,
                            libc::SO_ERROR,
                            (&mut err as *mut c_int).cast(),
                            &mut len,
                        )
                    };
                    if err != 0 {
                        let o = if matches!(err, libc::ECONNREFUSED | libc::ECONNRESET) {
                            2
                        } else {
                            3
                        };
                        finish(i, o, &mut fd_of, &mut phase, &mut finished);
                        continue;
                    }
                    word(i, K_CONNECTED).store(now_ns(), Ordering::SeqCst);
                    ctl(libc::EPOLL_CTL_MOD, fd, libc::EPOLLIN as u32, i as u64);
                    next_req[i] = 0;
                    if send(i, 0, fd) {
                        phase[i] = Phase::Reading;
                    } else {
                        finish(i, 2, &mut fd_of, &mut phase, &mut finished);
                    }
                }
                Phase::Reading => {
                    let mut b = [0u8; 8];
                    // SAFETY: into a local.
                    let r = unsafe { libc::recv(fd, b.as_mut_ptr().cast(), 8, libc::MSG_WAITALL) };
                    if r < 0 && errno() == libc::EAGAIN {
                        continue;
                    }
                    if r != 8 {
                        finish(i, 2, &mut fd_of, &mut phase, &mut finished);
                        continue;
                    }
                    let k = next_req[i];
                    sh.word(lay.request(i * per + k, 1))
                        .store(now_ns(), Ordering::Relaxed);
                    next_req[i] = k + 1;
                    if k + 1 >= per {
                        finish(i, 1, &mut fd_of, &mut phase, &mut finished);
                    } else if think == 0 {
                        if !send(i, k + 1, fd) {
                            finish(i, 2, &mut fd_of, &mut phase, &mut finished);
                        }
                    } else {
                        phase[i] = Phase::Thinking;
                        thinking.push_back((now_ns() + think, i));
                    }
                }
                Phase::Thinking => {
                    // Only a reset or EOF can come now.
                    let mut b = [0u8; 8];
                    // SAFETY: a peek into a local.
                    let r = unsafe {
                        libc::recv(
                            fd,
                            b.as_mut_ptr().cast(),
                            8,
                            libc::MSG_PEEK | libc::MSG_DONTWAIT,
                        )
                    };
                    if r == 0 || (r < 0 && errno() != libc::EAGAIN) {
                        finish(i, 2, &mut fd_of, &mut phase, &mut finished);
                    }
                }
                Phase::Waiting | Phase::Over => {}
            }
        }
    }
    // SAFETY: ending the child.
    unsafe { libc::_exit(0) }
}
