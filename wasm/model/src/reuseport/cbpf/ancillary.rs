//! What a classic program may read beyond the payload: the ancillary loads,
//! and what the model does not know of them. A leaf: it names nothing else
//! of the crate, so errors can carry these values.

use serde::{Deserialize, Serialize};

/// `SKF_AD_OFF`: ancillary loads sit at `SKF_AD_OFF + SKF_AD_*` (as u32).
pub const SKF_AD_OFF: u32 = (-0x1000i32) as u32;

/// The ancillary loads (`SKF_AD_*`, include/uapi/linux/filter.h), by their
/// offset from [`SKF_AD_OFF`]. All of them predate 4.5, the first kernel
/// with reuseport programs; `SKF_AD_MAX` (64) and any offset between them
/// are refused by `bpf_check_classic`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Ancillary {
    /// `SKF_AD_PROTOCOL`: the EtherType, host order.
    Protocol,
    /// `SKF_AD_PKTTYPE`: `skb->pkt_type`.
    Pkttype,
    /// `SKF_AD_IFINDEX`: the receiving device's ifindex.
    Ifindex,
    /// `SKF_AD_NLATTR`: netlink attribute X from offset A of the payload.
    Nlattr,
    /// `SKF_AD_NLATTR_NEST`: the same inside the attribute at offset A.
    NlattrNest,
    /// `SKF_AD_MARK`: `skb->mark`.
    Mark,
    /// `SKF_AD_QUEUE`: `skb->queue_mapping`.
    Queue,
    /// `SKF_AD_HATYPE`: the device's ARPHRD type.
    Hatype,
    /// `SKF_AD_RXHASH`: `skb->hash`.
    Rxhash,
    /// `SKF_AD_CPU`: the CPU running the program.
    Cpu,
    /// `SKF_AD_ALU_XOR_X`: A ^= X.
    AluXorX,
    /// `SKF_AD_VLAN_TAG`: the VLAN TCI.
    VlanTag,
    /// `SKF_AD_VLAN_TAG_PRESENT`: whether a VLAN tag is present.
    VlanTagPresent,
    /// `SKF_AD_PAY_OFFSET`: the flow dissector's payload offset.
    PayOffset,
    /// `SKF_AD_RANDOM`: `get_random_u32()` (`prandom_u32` before 6.1).
    Random,
    /// `SKF_AD_VLAN_TPID`: the VLAN protocol.
    VlanTpid,
}

impl Ancillary {
    /// All, in offset order.
    pub const ALL: [Ancillary; 16] = [
        Ancillary::Protocol,
        Ancillary::Pkttype,
        Ancillary::Ifindex,
        Ancillary::Nlattr,
        Ancillary::NlattrNest,
        Ancillary::Mark,
        Ancillary::Queue,
        Ancillary::Hatype,
        Ancillary::Rxhash,
        Ancillary::Cpu,
        Ancillary::AluXorX,
        Ancillary::VlanTag,
        Ancillary::VlanTagPresent,
        Ancillary::PayOffset,
        Ancillary::Random,
        Ancillary::VlanTpid,
    ];

    /// Its offset from `SKF_AD_OFF` (`SKF_AD_PROTOCOL` 0 … `SKF_AD_VLAN_TPID` 60).
    pub fn offset(self) -> u32 {
        Ancillary::ALL
            .iter()
            .position(|&a| a == self)
            .expect("listed") as u32
            * 4
    }

    /// The `k` of a load of it.
    pub fn k(self) -> u32 {
        SKF_AD_OFF.wrapping_add(self.offset())
    }

    /// The ancillary load `k` stands for, if any (`bpf_anc_helper`).
    pub fn from_k(k: u32) -> Option<Ancillary> {
        let off = k.checked_sub(SKF_AD_OFF)?;
        if off % 4 != 0 {
            return None;
        }
        Ancillary::ALL.get((off / 4) as usize).copied()
    }

    /// The name `bpf_asm` gives it (tools/bpf/bpf_exp.l).
    pub fn asm_name(self) -> &'static str {
        match self {
            Ancillary::Protocol => "proto",
            Ancillary::Pkttype => "type",
            Ancillary::Ifindex => "ifidx",
            Ancillary::Nlattr => "nla",
            Ancillary::NlattrNest => "nlan",
            Ancillary::Mark => "mark",
            Ancillary::Queue => "queue",
            Ancillary::Hatype => "hatype",
            Ancillary::Rxhash => "rxhash",
            Ancillary::Cpu => "cpu",
            Ancillary::AluXorX => "xor_x",
            Ancillary::VlanTag => "vlan_tci",
            Ancillary::VlanTagPresent => "vlan_avail",
            Ancillary::PayOffset => "poff",
            Ancillary::Random => "rand",
            Ancillary::VlanTpid => "vlan_tpid",
        }
    }
}

/// What the model does not know, that the run needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Unknown {
    /// An ancillary value not given ([`super::AncInputs`]).
    Ancillary {
        /// Which.
        field: Ancillary,
    },
    /// Bytes of the IP or transport header (IP ID, TTL, checksums, TCP
    /// options), read at `SKF_NET_OFF + offset`.
    NetworkHeader {
        /// The offset from the network header.
        offset: u32,
    },
    /// Bytes of the link-layer header, read at `SKF_LL_OFF + offset`.
    LinkHeader {
        /// The offset from the link-layer header.
        offset: u32,
    },
    /// A netlink attribute search on a datagram that may not be in one
    /// piece (`skb_is_nonlinear`: the search then returns 0).
    Nonlinear {
        /// The payload's length.
        len: u32,
    },
}
