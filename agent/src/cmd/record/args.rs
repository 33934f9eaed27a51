//! `record`'s command line: [`RecordArgs`] and the values of its options,
//! and the same options built in code ([`RecordArgs::new`]) and written
//! back as a command line ([`RecordArgs::argv`]).

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;

use clap::Args;
use reuseport_model::reuseport::CpuPin;

use crate::cmd::predict::{pin_arg, ProtoArg};
use crate::trace::BpfInfo;

/// A classic BPF program for the group (`--bpf`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bpf {
    /// `ld [SKF_AD_OFF + SKF_AD_CPU]; ret a`: the index is the CPU that
    /// runs the lookup (kernel selftest reuseport_bpf_cpu.c).
    Cpu,
    /// The first four payload bytes as a big-endian u32, modulo M (UDP;
    /// kernel selftest reuseport_bpf.c).
    PayloadMod(u32),
}

impl Bpf {
    /// The model's program this option attaches ([`crate::cbpf`] writes
    /// its classic instructions).
    pub fn program(self) -> reuseport_model::reuseport::Program {
        use reuseport_model::reuseport::Program;
        match self {
            Bpf::Cpu => Program::Cpu,
            Bpf::PayloadMod(modulus) => Program::PayloadMod { modulus },
        }
    }

    pub(super) fn info(self) -> BpfInfo {
        match self {
            Bpf::Cpu => BpfInfo {
                kind: "cpu".into(),
                modulus: None,
            },
            Bpf::PayloadMod(m) => BpfInfo {
                kind: "payload-mod".into(),
                modulus: Some(m),
            },
        }
    }
}

fn bpf_arg(s: &str) -> Result<Bpf, String> {
    let bad =
        || format!("`{s}` is not `cpu` or `payload-mod:M` with M from 1, such as payload-mod:4");
    match s {
        "cpu" => Ok(Bpf::Cpu),
        _ => {
            let m: u32 = s
                .strip_prefix("payload-mod:")
                .ok_or_else(bad)?
                .parse()
                .map_err(|_| bad())?;
            if m == 0 {
                return Err(bad());
            }
            Ok(Bpf::PayloadMod(m))
        }
    }
}

/// An inclusive source port range (`--sport-range LO-HI`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    /// First port.
    pub lo: u16,
    /// Last port.
    pub hi: u16,
}

impl std::fmt::Display for PortRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.lo, self.hi)
    }
}

fn range_arg(s: &str) -> Result<PortRange, String> {
    let bad = || {
        format!("`{s}` is not a port range LO-HI with 1 <= LO <= HI <= 65535, such as 20000-29999")
    };
    let (lo, hi) = s.split_once('-').ok_or_else(bad)?;
    let (lo, hi): (u16, u16) = (
        lo.trim().parse().map_err(|_| bad())?,
        hi.trim().parse().map_err(|_| bad())?,
    );
    if lo == 0 || lo > hi {
        return Err(bad());
    }
    Ok(PortRange { lo, hi })
}

/// Options of `record`.
#[derive(Debug, Clone, PartialEq, Args)]
pub struct RecordArgs {
    /// Transport protocol of the group.
    #[arg(long, value_enum)]
    pub proto: ProtoArg,

    /// How many sockets join the group, numbered 0..N-1 in listen() order (bind() order for UDP). The kernel caps a group at 32768; past that the agent tries and reports the kernel's errno (TCP listen() ENOMEM, UDP bind() EADDRINUSE).
    #[arg(long, value_name = "N")]
    pub listeners: u32,

    /// The address the group binds: 127.0.0.1, 0.0.0.0, ::1, ::, or (with --netns) any address, which is then put on lo. Clients send to it; to 127.0.0.1 for 0.0.0.0 and to ::1 for :: (127.0.0.1 when every --client is IPv4).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub bind: IpAddr,

    /// IPV6_V6ONLY on the members of an IPv6 group (without it, IPV6_V6ONLY is explicitly cleared). Ignored for an IPv4 group.
    #[arg(long)]
    pub v6only: bool,

    /// The group's port; 0 lets the first member's bind pick a free one, which the others then bind.
    #[arg(long, value_name = "P", default_value_t = 0)]
    pub port: u16,

    /// Listeners closed, in this order, after all have joined and before any traffic (comma-separated, or repeat the option).
    #[arg(long, value_name = "I,J,...", value_delimiter = ',')]
    pub closed: Vec<u32>,

    /// SO_INCOMING_CPU settings as LISTENER=CPU pairs, set after every member has joined: 0=1,3=1.
    #[arg(long, value_name = "L=C,...", value_delimiter = ',', value_parser = pin_arg, conflicts_with = "incoming_cpu_all")]
    pub incoming_cpu: Vec<CpuPin>,

    /// SO_INCOMING_CPU on every listener: listener i gets the i-th CPU this process may run on, round-robin (CPU i mod nproc on an unrestricted machine).
    #[arg(long)]
    pub incoming_cpu_all: bool,

    /// Attach a classic BPF program to the group (SO_ATTACH_REUSEPORT_CBPF on listener 0, after all have joined): `cpu` returns the CPU of the lookup, `payload-mod:M` the first 4 payload bytes (big-endian u32, the datagram's sequence number) modulo M; UDP only, since a TCP SYN carries no payload without TCP_FASTOPEN.
    #[arg(long, value_name = "cpu|payload-mod:M", value_parser = bpf_arg)]
    pub bpf: Option<Bpf>,

    /// Set net.ipv4.tcp_migrate_req to 1 for the recording (TCP, 5.14+, root); the previous value is restored afterwards, also on errors and Ctrl-C.
    #[arg(long)]
    pub tcp_migrate_req: bool,

    /// How many client addresses to generate from --seed: distinct addresses in 127.0.0.0/8 with no .0 or .255 octet, or fd00::/112 for IPv6 (with --netns). Default 16; IPv6 without --netns has only ::1.
    #[arg(long, value_name = "K", conflicts_with = "client")]
    pub clients: Option<u32>,

    /// A client address to use instead of generated ones (repeat the option). Must be local, or is put on lo with --netns.
    #[arg(long, value_name = "ADDR")]
    pub client: Vec<IpAddr>,

    /// Source ports the clients bind (with SO_REUSEADDR); (address, port) pairs are taken in a seeded order without repeats.
    #[arg(long, value_name = "LO-HI", value_parser = range_arg, default_value = "20000-29999")]
    pub sport_range: PortRange,

    /// Seed of the client addresses and of the order of (address, port) pairs: two runs with the same seed, clients and range drive the same pairs in the same order.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,

    /// Run the client on the CPUs this process may use, round-robin by event (sched_setaffinity), and record each event's CPU (needed to study SO_INCOMING_CPU and --bpf cpu).
    #[arg(long)]
    pub pin_cpu: bool,

    /// Record in a private network namespace (unshare(CLONE_NEWNET), root): lo is brought up and given the IPv6 client addresses (fd00::/112), the bind address and any --client address that is not loopback. The namespace has its own hash secret mix (net_hash_mix).
    #[arg(long)]
    pub netns: bool,

    /// Stop after this many connections or datagrams.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub count: u64,

    /// Stop after this many seconds (whichever of --count and --duration comes first).
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub duration: f64,

    /// Keep every n-th received event in the trace's events (the counts still count all).
    #[arg(long, value_name = "EVERY", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub sample: u64,

    /// Record even when listening sockets outside the group are on the port (another program's SO_REUSEPORT listener joins the group; one on the destination address is preferred to a wildcard group). Without it such sockets refuse the run; with it they are named in the trace's options.foreignListeners, and connections they took are counted in options.deliveredElsewhere (and as lost).
    #[arg(long)]
    pub allow_foreign_listeners: bool,

    /// Write the trace here instead of standard output (progress always goes to standard error).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl RecordArgs {
    /// A group of `listeners` sockets of `proto` with every other option at
    /// its command-line default, for callers that build a recording in
    /// code (`verify`, the curated traces).
    pub fn new(proto: ProtoArg, listeners: u32) -> RecordArgs {
        RecordArgs {
            proto,
            listeners,
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            v6only: false,
            port: 0,
            closed: Vec::new(),
            incoming_cpu: Vec::new(),
            incoming_cpu_all: false,
            bpf: None,
            tcp_migrate_req: false,
            clients: None,
            client: Vec::new(),
            sport_range: PortRange {
                lo: 20000,
                hi: 29999,
            },
            seed: 0,
            pin_cpu: false,
            netns: false,
            count: 1000,
            duration: 30.0,
            sample: 1,
            allow_foreign_listeners: false,
            output: None,
        }
    }

    /// The `record` command line that asks for these options, options at
    /// their default left out (for a guest kernel's run, and for the
    /// manifest's `command`). `--output` is left out too: the caller says
    /// where the trace goes.
    pub fn argv(&self) -> Vec<String> {
        let d = RecordArgs::new(self.proto, self.listeners);
        let mut v: Vec<String> = vec!["record".into(), "--proto".into()];
        v.push(match self.proto {
            ProtoArg::Tcp => "tcp".into(),
            ProtoArg::Udp => "udp".into(),
        });
        v.extend(["--listeners".into(), self.listeners.to_string()]);
        let mut opt = |name: &str, value: Option<String>| {
            v.push(format!("--{name}"));
            v.extend(value);
        };
        let list = |xs: Vec<String>| xs.join(",");
        if self.bind != d.bind {
            opt("bind", Some(self.bind.to_string()));
        }
        if self.v6only {
            opt("v6only", None);
        }
        if self.port != d.port {
            opt("port", Some(self.port.to_string()));
        }
        if !self.closed.is_empty() {
            opt(
                "closed",
                Some(list(self.closed.iter().map(u32::to_string).collect())),
            );
        }
        if !self.incoming_cpu.is_empty() {
            let pins = self.incoming_cpu.iter();
            opt(
                "incoming-cpu",
                Some(list(
                    pins.map(|p| format!("{}={}", p.listener, p.cpu)).collect(),
                )),
            );
        }
        if self.incoming_cpu_all {
            opt("incoming-cpu-all", None);
        }
        match self.bpf {
            Some(Bpf::Cpu) => opt("bpf", Some("cpu".into())),
            Some(Bpf::PayloadMod(m)) => opt("bpf", Some(format!("payload-mod:{m}"))),
            None => {}
        }
        if self.tcp_migrate_req {
            opt("tcp-migrate-req", None);
        }
        if self.netns {
            opt("netns", None);
        }
        if self.pin_cpu {
            opt("pin-cpu", None);
        }
        if let Some(k) = self.clients {
            opt("clients", Some(k.to_string()));
        }
        for c in &self.client {
            opt("client", Some(c.to_string()));
        }
        if self.sport_range != d.sport_range {
            opt("sport-range", Some(self.sport_range.to_string()));
        }
        // How much and from which seed: always written, so a command
        // line read alone says how many events it drove.
        opt("count", Some(self.count.to_string()));
        if self.duration != d.duration {
            opt("duration", Some(self.duration.to_string()));
        }
        if self.sample != d.sample {
            opt("sample", Some(self.sample.to_string()));
        }
        opt("seed", Some(self.seed.to_string()));
        if self.allow_foreign_listeners {
            opt("allow-foreign-listeners", None);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Only {
        #[command(flatten)]
        args: RecordArgs,
    }

    fn parse(argv: &[String]) -> RecordArgs {
        Only::try_parse_from(argv)
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
            .args
    }

    /// `--bpf` attaches the selftests' programs (their instructions are
    /// pinned in [`crate::cbpf`]'s tests).
    #[test]
    fn the_bpf_options_are_the_selftests_programs() {
        use reuseport_model::reuseport::Program;
        assert_eq!(Bpf::Cpu.program(), Program::Cpu);
        assert_eq!(
            Bpf::PayloadMod(4).program(),
            Program::PayloadMod { modulus: 4 }
        );
    }

    /// `new` must be what the command line gives when only the group is
    /// named, or a recording built in code would differ from the same one
    /// typed by hand.
    #[test]
    fn new_has_the_command_line_defaults() {
        let typed = parse(&["record", "--proto", "udp", "--listeners", "3"].map(String::from));
        assert_eq!(RecordArgs::new(ProtoArg::Udp, 3), typed);
    }

    /// Every option `argv` writes reads back as the same options, and a
    /// plain group says only its count and seed besides.
    #[test]
    fn argv_reads_back_as_the_same_options() {
        let mut every = RecordArgs::new(ProtoArg::Tcp, 8);
        every.bind = "::".parse().unwrap();
        every.v6only = true;
        every.port = 8080;
        every.closed = vec![1, 5];
        every.incoming_cpu = vec![
            CpuPin {
                listener: 0,
                cpu: 1,
            },
            CpuPin {
                listener: 3,
                cpu: 0,
            },
        ];
        every.bpf = Some(Bpf::PayloadMod(4));
        every.tcp_migrate_req = true;
        every.client = vec!["127.0.0.5".parse().unwrap(), "fd00::7".parse().unwrap()];
        every.sport_range = PortRange {
            lo: 30000,
            hi: 30100,
        };
        every.seed = 9;
        every.pin_cpu = true;
        every.netns = true;
        every.count = 3000;
        every.duration = 2.5;
        every.sample = 3;
        every.allow_foreign_listeners = true;
        assert_eq!(parse(&every.argv()), every);
        let mut other = RecordArgs::new(ProtoArg::Udp, 64);
        other.incoming_cpu_all = true;
        other.bpf = Some(Bpf::Cpu);
        other.clients = Some(32);
        assert_eq!(parse(&other.argv()), other);
        let plain = RecordArgs::new(ProtoArg::Udp, 2);
        let written = "record --proto udp --listeners 2 --count 1000 --seed 0";
        assert_eq!(plain.argv().join(" "), written);
    }
}
