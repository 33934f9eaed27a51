//! What a run records as data, never as sentences: the rule behind each
//! helper call ([`HelperRule`], with its place in the kernel sources), the
//! arguments as the model read them ([`CallArg`]), the value a run needed
//! and the model does not hold ([`EbpfUnknown`]), and what the verifier
//! refuses or the model does not run ([`EbpfFault`]).
//!
//! The sentence tables at the repository root say them
//! (`messages/en.json`, `messages/zh-CN.json`: `helper_rule.<kind>`,
//! `call_arg.<kind>`, `ebpf_unknown.<kind>`, `ebpf_fault.<kind>`), as they
//! say the model's other outcomes ([`crate::message`]). Kernel function
//! and file names stay in fields; a field `arg` names a helper's operand
//! ([`Operand`]), which the tables say as `ui.ebpf.operand.<arg>`.

use serde::{Deserialize, Serialize};

/// Where a helper's rule is in the kernel sources: the functions, their
/// files, and the releases (`6.x`: read in the 6.x tree; `4.19+`: from
/// 4.19 on).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
pub struct HelperSource {
    /// The kernel functions.
    pub func: String,
    /// Their files, relative to the kernel tree.
    pub file: String,
    /// The releases the rule holds in.
    pub release: String,
}

/// The kernel rule that decides what a helper call returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HelperRule {
    /// `map_lookup_elem` of the map's type: NULL when the key is absent.
    MapLookup,
    /// `map_update_elem` of the map's type, with its error returns.
    MapUpdate,
    /// `map_delete_elem`: `-EINVAL` for an array, `-ENOENT` for a hash's
    /// absent key.
    MapDelete,
    /// `bpf_get_prandom_u32`: the kernel's per-CPU state; the model draws
    /// from its seed.
    PrandomU32,
    /// `bpf_get_smp_processor_id`: the receiving CPU.
    SmpProcessorId,
    /// `bpf_skb_load_bytes`: `-EFAULT` and a zeroed buffer past the end.
    SkbLoadBytes,
    /// `bpf_skb_load_bytes_relative`: `-EFAULT` and a zeroed buffer
    /// outside the header to the tail.
    SkbLoadBytesRelative,
    /// `bpf_sk_select_reuseport`: `-ENOENT` when the key holds no socket.
    SkSelectReuseport,
    /// `bpf_get_socket_cookie`: the socket's cookie.
    GetSocketCookie,
    /// `bpf_trace_printk`: writes to the trace pipe; the model returns 0.
    TracePrintk,
}

impl HelperRule {
    /// Where the kernel applies the rule.
    pub fn source(self) -> HelperSource {
        let (func, file, release) = match self {
            HelperRule::MapLookup => (
                "array_map_lookup_elem, htab_map_lookup_elem",
                "kernel/bpf/arraymap.c, kernel/bpf/hashtab.c",
                "6.x",
            ),
            HelperRule::MapUpdate => (
                "array_map_update_elem, htab_map_update_elem",
                "kernel/bpf/arraymap.c, kernel/bpf/hashtab.c",
                "6.x",
            ),
            HelperRule::MapDelete => (
                "array_map_delete_elem, htab_map_delete_elem",
                "kernel/bpf/arraymap.c, kernel/bpf/hashtab.c",
                "6.x",
            ),
            HelperRule::PrandomU32 => ("bpf_user_rnd_u32", "kernel/bpf/core.c", "6.x"),
            HelperRule::SmpProcessorId => {
                ("bpf_get_smp_processor_id", "kernel/bpf/helpers.c", "6.x")
            }
            HelperRule::SkbLoadBytes => (
                "bpf_skb_load_bytes, sk_reuseport_load_bytes",
                "net/core/filter.c",
                "4.19+",
            ),
            HelperRule::SkbLoadBytesRelative => (
                "____bpf_skb_load_bytes_relative",
                "net/core/filter.c",
                "4.18+",
            ),
            // SOCKMAP and SOCKHASH selections arrived in 5.6.
            HelperRule::SkSelectReuseport => (
                "sk_select_reuseport",
                "net/core/filter.c",
                "4.19+; SOCKMAP, SOCKHASH 5.6+",
            ),
            HelperRule::GetSocketCookie => (
                "bpf_get_socket_ptr_cookie, sock_gen_cookie",
                "net/core/filter.c",
                "5.14+",
            ),
            HelperRule::TracePrintk => ("bpf_trace_printk", "kernel/trace/bpf_trace.c", "6.x"),
        };
        HelperSource {
            func: func.into(),
            file: file.into(),
            release: release.into(),
        }
    }
}

/// One argument of a helper call, as the model read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum CallArg {
    /// The map, by name.
    Map {
        /// Its name.
        name: String,
    },
    /// The key's bytes, in hex.
    Key {
        /// The bytes.
        hex: String,
    },
    /// The value's bytes, in hex.
    Value {
        /// The bytes.
        hex: String,
    },
    /// `flags` of `bpf_map_update_elem`.
    Flags {
        /// The flags.
        flags: u64,
    },
    /// The offset a load starts at.
    Offset {
        /// The offset.
        offset: u64,
    },
    /// How many bytes a load reads.
    Len {
        /// The length.
        len: u64,
    },
    /// `start_header` of `bpf_skb_load_bytes_relative`.
    Start {
        /// `BPF_HDR_START_MAC` 0 or `BPF_HDR_START_NET` 1.
        start: u64,
    },
    /// `bpf_sk_select_reuseport` found the listener in the group.
    Selected {
        /// The listener.
        listener: u32,
    },
    /// The key holds a listener that closed: a closed member left the map
    /// with its group (`bpf_sk_reuseport_detach`,
    /// kernel/bpf/reuseport_array.c; `sock_map_unhash`,
    /// net/core/sock_map.c).
    Closed {
        /// The listener.
        listener: u32,
    },
    /// The key of a SOCKMAP or SOCKHASH holds a socket that is in no
    /// group: a UDP member that left its group as it connected keeps its
    /// socket-map entries (only unhashing drops them), and
    /// `sk_select_reuseport` answers -EINVAL for a socket without
    /// `sk_reuseport_cb` from any map but a REUSEPORT_SOCKARRAY
    /// (net/core/filter.c 4.19+).
    OutsideGroup {
        /// The listener.
        listener: u32,
    },
    /// The key holds no socket.
    NoSocket,
    /// A socket of the group.
    Socket {
        /// The listener.
        listener: u32,
    },
    /// The migrating socket (`sk_reuseport_md.migrating_sk`).
    MigratingSk,
}

/// Which operand of a helper a fault is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(rename_all = "snake_case")]
pub enum Operand {
    /// A map helper's key.
    Key,
    /// A map helper's value.
    Value,
    /// A load helper's buffer.
    Buffer,
}

/// A value a run needed and the model's packet does not hold: the run
/// stops and names it rather than guess.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum EbpfUnknown {
    /// A packet byte a direct read reached: a checksum or a header field.
    PacketByte {
        /// Its offset from `data`.
        at: i64,
    },
    /// A packet byte in a helper's operand.
    PacketByteIn {
        /// Its offset from `data`.
        at: i64,
        /// The operand.
        arg: Operand,
    },
    /// A packet byte `bpf_skb_load_bytes` reads.
    LoadedByte {
        /// Its offset from `data`.
        at: u64,
    },
    /// A byte from the network header on (`BPF_HDR_START_NET`): an IP ID,
    /// TTL, TOS or checksum.
    HeaderByte {
        /// Its offset from the network header.
        at: u64,
    },
    /// `bpf_skb_load_bytes_relative` from the link-layer header (or a
    /// socket filter's network header).
    LinkHeader,
    /// A listener's cookie (`SO_COOKIE`), handed out by the kernel on
    /// first use (`sock_gen_cookie`, net/core/sock_diag.c): an input.
    SocketCookie {
        /// The listener.
        listener: u32,
    },
    /// The migrating socket's cookie.
    MigratingCookie,
    /// `LD_ABS` at a negative offset (the network or link header), which
    /// the model does not hold for socket filters.
    NegativeLdAbs {
        /// The offset.
        off: i64,
    },
    /// A field of `struct bpf_sock` behind a listener pointer.
    SocketField,
    /// A field of `migrating_sk` the model does not hold.
    MigratingField {
        /// The field (`bound_dev_if`, `src_ip6`, ...).
        field: String,
    },
    /// `src_ip4` or `dst_ip4` of an IPv6 `migrating_sk`.
    MigratingIp4OfV6 {
        /// The field.
        field: String,
    },
    /// `__sk_buff.hash`: `skb->hash`, the sender's flow hash.
    SkbHash,
    /// A `__sk_buff` field the model does not hold.
    SkbField {
        /// Its offset.
        at: i64,
    },
    /// `sk_reuseport_md.len` of a SYN (its TCP options' length).
    SynLen,
    /// `sk_reuseport_md.len` of the final ACK of a migrating request.
    FinalAckLen,
}

/// What a run did that the verifier refuses, or that the model does not
/// run. Pointers and numbers in fields are written as the run table
/// writes them (`fp-8`, `data+4`, `0x2a`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum EbpfFault {
    /// The run took the model's bound of instructions without exiting.
    TooManySteps {
        /// The bound.
        max: u32,
    },
    /// The run went past the last instruction.
    PastEnd {
        /// The program's length.
        len: u32,
    },
    /// A register past r10.
    NoRegister {
        /// The register.
        reg: u8,
    },
    /// A read of a register that holds nothing (the verifier: `R%d
    /// !read_ok`, `check_reg_arg`, kernel/bpf/verifier.c).
    UninitRegister {
        /// The register.
        reg: u8,
    },
    /// A pointer used as a number.
    PointerAsNumber {
        /// The register.
        reg: u8,
        /// The pointer.
        ptr: String,
    },
    /// A write to r10, the frame pointer.
    WritesFramePointer {
        /// The register.
        reg: u8,
    },
    /// An opcode that is no instruction.
    BadOpcode {
        /// The opcode, in hex.
        code: String,
    },
    /// An atomic operation of a width other than 4 or 8 bytes.
    AtomicSize,
    /// An atomic operation on a pointer.
    AtomicPointer,
    /// An atomic operation the model does not run.
    AtomicOp {
        /// Its `imm`, in hex.
        imm: String,
    },
    /// A 32-bit move of a pointer.
    Mov32Pointer,
    /// A byte swap of a pointer.
    SwapPointer,
    /// A byte swap of a width other than 16, 32 or 64.
    SwapWidth {
        /// The width.
        bits: u32,
    },
    /// Arithmetic on a pointer other than adding or subtracting a number.
    AluPointer {
        /// The operation, in hex.
        op: String,
    },
    /// An ALU64 operation that is no instruction.
    BadAlu64 {
        /// The operation, in hex.
        op: String,
    },
    /// An ALU operation that is no instruction.
    BadAlu32 {
        /// The operation, in hex.
        op: String,
    },
    /// A jump operation that is no instruction.
    BadJump {
        /// The operation, in hex.
        op: String,
    },
    /// A jump outside the program.
    JumpOutside {
        /// The target.
        target: i64,
    },
    /// A BPF-to-BPF or kfunc call.
    Subprogram,
    /// `exit` with a pointer in r0.
    ExitPointer,
    /// A comparison of values the verifier does not compare.
    Compare {
        /// The left side.
        a: String,
        /// The right side.
        b: String,
    },
    /// `ld_imm64` without its second half.
    LdImm64Half,
    /// `ld_imm64` of a map the object lacks.
    LdImm64Map {
        /// The map's index.
        map: u32,
    },
    /// Global data whose entry is missing.
    GlobalDataEntry,
    /// `ld_imm64` with a source the model does not resolve.
    LdImm64Src {
        /// The source.
        src: u8,
    },
    /// A load opcode the model does not run.
    BadLoad {
        /// The opcode, in hex.
        code: String,
    },
    /// `LD_ABS`/`LD_IND` in an SK_REUSEPORT program.
    LdAbsInSkReuseport,
    /// A load through a number.
    LoadThroughNumber,
    /// A direct packet read past `data_end`.
    PacketPastEnd {
        /// Its offset from `data`.
        at: i64,
        /// Its size.
        size: u32,
        /// `data_end - data`.
        end: u32,
    },
    /// A socket or map entry read as bytes.
    ReadsEntryAsBytes,
    /// A read past a map value's end.
    ValuePastEnd {
        /// The map.
        map: String,
        /// The offset.
        at: i64,
        /// The size.
        size: u32,
        /// The value's length.
        len: u32,
    },
    /// A read through a map pointer.
    ReadsThroughMap,
    /// A read of `migrating_sk` at an offset or size the verifier refuses.
    MigratingRead {
        /// The offset.
        at: i64,
        /// The size.
        size: u32,
    },
    /// A read of `migrating_sk` from `type` to `priority`, which the
    /// verifier refuses (`func`).
    MigratingHidden {
        /// The offset.
        at: i64,
        /// The kernel function that refuses.
        func: String,
    },
    /// A read past `struct bpf_sock`.
    MigratingPastEnd {
        /// The offset.
        at: i64,
    },
    /// A store through a number.
    StoreThroughNumber,
    /// A stack write outside the 512 bytes.
    StackWrite {
        /// Where, as `fp-N`.
        slot: String,
    },
    /// A pointer spilled in fewer than 8 bytes.
    PartialSpill,
    /// A pointer stored in a map value.
    PointerInValue,
    /// A write to `.rodata`, which libbpf freezes.
    WritesRodata,
    /// A socket or map entry written as bytes.
    WritesEntryAsBytes,
    /// A write past a map value's end.
    ValueWritePastEnd,
    /// A pointer stored in `cb[]`.
    PointerInCb,
    /// A `cb[]` write past its 20 bytes.
    CbWritePastEnd,
    /// A write to the context.
    WritesContext {
        /// The offset.
        at: i64,
    },
    /// A write to the packet.
    WritesPacket,
    /// A write through a map or socket pointer.
    WritesThroughMapOrSocket,
    /// A stack read outside the 512 bytes.
    StackRead {
        /// Where, as `fp-N`.
        slot: String,
    },
    /// A read of part of a spilled pointer.
    PartialSpillRead,
    /// A read of a stack byte never written (the verifier: invalid read
    /// from stack, `check_stack_read`, kernel/bpf/verifier.c).
    StackUninit {
        /// Where, as `fp-N`.
        slot: String,
    },
    /// Part of a spilled pointer read as a number.
    SpillAsNumber,
    /// A helper's operand is not a pointer.
    ArgNotPointer {
        /// The operand.
        arg: Operand,
    },
    /// A helper's operand holds a pointer.
    ArgHoldsPointer {
        /// The operand.
        arg: Operand,
    },
    /// A helper's operand runs past the map value.
    ArgPastValue {
        /// The operand.
        arg: Operand,
    },
    /// A helper's operand points into a socket or map entry.
    ArgInEntry {
        /// The operand.
        arg: Operand,
    },
    /// A helper's operand runs past `data_end`.
    ArgPastPacket {
        /// The operand.
        arg: Operand,
    },
    /// A helper's operand points where a helper reads no bytes.
    ArgPointsAt {
        /// The operand.
        arg: Operand,
        /// The pointer.
        ptr: String,
    },
    /// A `cb[]` read past its 20 bytes.
    CbReadPastEnd,
    /// A read of `sk_reuseport_md.sk` or `.migrating_sk` before 5.14,
    /// where the structure ends at `hash` (`func`, `file`).
    CtxFieldBefore514 {
        /// The offset.
        at: i64,
        /// The kernel function that refuses.
        func: String,
        /// Its file.
        file: String,
    },
    /// A read of `sk_reuseport_md` the verifier refuses.
    BadCtxRead {
        /// The offset.
        at: i64,
        /// The size.
        size: u32,
    },
    /// A map helper's map argument is not a map.
    NotAMap {
        /// The register.
        reg: u8,
    },
    /// `bpf_map_lookup_elem` on a socket map.
    LookupSocketMap {
        /// The map type (`BPF_MAP_TYPE_SOCKHASH`).
        map_type: String,
    },
    /// A per-CPU map.
    PerCpuMap,
    /// `bpf_map_update_elem` on a map type the model does not update.
    UpdateNotRun {
        /// The map type.
        map_type: String,
    },
    /// `bpf_map_update_elem` on `.rodata`.
    UpdatesRodata,
    /// `flags` is not a number.
    FlagsNotNumber,
    /// `bpf_map_delete_elem` on a socket map.
    DeleteSocketMap,
    /// `bpf_sk_select_reuseport` outside an SK_REUSEPORT program.
    SelectOutside,
    /// `bpf_sk_select_reuseport` on a map that holds no sockets.
    SelectBadMap {
        /// The map type.
        map_type: String,
    },
    /// `bpf_get_socket_cookie` in a socket filter.
    CookieInFilter,
    /// `bpf_get_socket_cookie` in an SK_REUSEPORT program before 5.14
    /// (`func`, `file`: the helpers offered to these programs).
    CookieBefore514 {
        /// The kernel function.
        func: String,
        /// Its file.
        file: String,
    },
    /// `bpf_get_socket_cookie` of something other than a socket.
    CookieOfNonSocket {
        /// The argument, as the run table writes it.
        ptr: String,
    },
    /// A helper the model does not run.
    UnknownHelper {
        /// The helper's number.
        id: i32,
    },
}
