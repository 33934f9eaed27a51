//! Classic BPF reuseport programs on a real socket: the instructions of a
//! model [`Program`] that has a classic form, and attaching them with
//! `SO_ATTACH_REUSEPORT_CBPF`. `record --bpf` and the call-log replay
//! ([`crate::calllog`]) both attach through here.

#![cfg(target_os = "linux")]

use std::io;
use std::os::fd::RawFd;

use reuseport_model::reuseport::Program;

/// A classic BPF instruction that does not jump.
fn insn(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

/// The classic BPF form of `p`, as the kernel selftests write it
/// (tools/testing/selftests/net/reuseport_bpf.c and reuseport_bpf_cpu.c);
/// `None` for the SK_REUSEPORT programs, which need an eBPF loader.
pub fn instructions(p: &Program) -> Option<Vec<libc::sock_filter>> {
    let ld_abs = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let ret_a = libc::BPF_RET | libc::BPF_A;
    let ret_k = libc::BPF_RET | libc::BPF_K;
    Some(match p {
        // A = raw_smp_processor_id(); return A.
        Program::Cpu => vec![
            insn(ld_abs, (libc::SKF_AD_OFF + libc::SKF_AD_CPU) as u32),
            insn(ret_a, 0),
        ],
        // The reuseport program runs with data at the UDP payload: A = the
        // first four payload bytes, big-endian; return A % M.
        Program::PayloadMod { modulus } => vec![
            insn(ld_abs, 0),
            insn(libc::BPF_ALU | libc::BPF_MOD | libc::BPF_K, *modulus),
            insn(ret_a, 0),
        ],
        // return index.
        Program::Index { index } => vec![insn(ret_k, *index)],
        // The user's own instructions, as given.
        Program::Cbpf { insns } => insns
            .iter()
            .map(|i| libc::sock_filter {
                code: i.code,
                jt: i.jt,
                jf: i.jf,
                k: i.k,
            })
            .collect(),
        Program::SockArray { .. } | Program::Pass | Program::Drop | Program::Ebpf { .. } => {
            return None
        }
    })
}

/// Attaches the classic form of `p` to the socket `fd` with
/// `setsockopt(SO_ATTACH_REUSEPORT_CBPF)`; a program with no classic form
/// fails as `EOPNOTSUPP`, without a call.
pub fn attach(fd: RawFd, p: &Program) -> io::Result<()> {
    let Some(mut filter) = instructions(p) else {
        return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
    };
    // `sock_fprog.len` is 16 bits: a longer program cannot be given at all.
    let Ok(len) = u16::try_from(filter.len()) else {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    };
    let prog = libc::sock_fprog {
        len,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: `prog` points at `filter`, alive for the call; the kernel
    // copies the program.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ATTACH_REUSEPORT_CBPF,
            (&prog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The instruction words are the selftests' (written out as numbers
    /// from linux/filter.h and linux/bpf_common.h, not from libc's names).
    #[test]
    fn the_programs_are_the_selftests_instructions() {
        let cpu = instructions(&Program::Cpu).unwrap();
        assert_eq!(cpu.len(), 2);
        assert_eq!(cpu[0].code, 0x20, "BPF_LD | BPF_W | BPF_ABS");
        assert_eq!(cpu[0].k as i32, -0x1000 + 36, "SKF_AD_OFF + SKF_AD_CPU");
        assert_eq!(cpu[1].code, 0x16, "BPF_RET | BPF_A");
        let m = instructions(&Program::PayloadMod { modulus: 4 }).unwrap();
        assert_eq!((m[0].code, m[0].k), (0x20, 0), "A = payload word 0");
        assert_eq!((m[1].code, m[1].k), (0x94, 4), "BPF_ALU | BPF_MOD | BPF_K");
        assert_eq!(m[2].code, 0x16, "BPF_RET | BPF_A");
        let i = instructions(&Program::Index { index: 9 }).unwrap();
        assert_eq!(i.len(), 1);
        assert_eq!((i[0].code, i[0].k), (0x06, 9), "BPF_RET | BPF_K");
    }

    /// An SK_REUSEPORT program has no classic form: attaching it answers
    /// EOPNOTSUPP, as the call-log replay reports it.
    #[test]
    fn an_sk_reuseport_program_is_not_attached_as_classic_bpf() {
        assert!(instructions(&Program::Pass).is_none());
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let e = attach(std::os::fd::AsRawFd::as_raw_fd(&s), &Program::Drop).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP));
    }

    /// A classic program attaches to a bound reuseport socket.
    #[test]
    fn the_cpu_program_attaches_to_a_reuseport_socket() {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).unwrap();
        s.set_reuse_port(true).unwrap();
        s.bind(
            &"127.0.0.1:0"
                .parse::<std::net::SocketAddr>()
                .unwrap()
                .into(),
        )
        .unwrap();
        attach(std::os::fd::AsRawFd::as_raw_fd(&s), &Program::Cpu).unwrap();
    }
}
