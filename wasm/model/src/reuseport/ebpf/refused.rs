//! Why the maps as given cannot be built, as data: which map, which key,
//! and the sizes and bounds at stake ([`MapRefusal`], and
//! [`MapDefProblem`] for a definition). The sentence tables say them
//! (`messages/en.json`, `messages/zh-CN.json`: `map_refusal.<kind>`,
//! `map_def_problem.<kind>`), for the editor and for the agent alike.
//!
//! A key is written back as the reader wrote it: a number in decimal, hex
//! bytes as given.

use serde::{Deserialize, Serialize};

/// What is wrong with a map's definition: the model's bounds, and the
/// kernel's rules for what a map may be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum MapDefProblem {
    /// `max_entries` of 0: the kernel refuses the map with `-EINVAL`
    /// (`array_map_alloc_check`, kernel/bpf/arraymap.c 4.x – 6.x;
    /// `htab_map_alloc_check`, kernel/bpf/hashtab.c 4.x – 6.x).
    MaxEntriesZero,
    /// More entries than the model holds (an input bound).
    MaxEntriesOver {
        /// The definition's `max_entries`.
        max_entries: u32,
        /// The model's bound.
        bound: u32,
    },
    /// A key or value larger than the model holds (input bounds).
    SizesOver {
        /// Key bytes.
        key_size: u32,
        /// Value bytes.
        value_size: u32,
        /// The largest key.
        key_bound: u32,
        /// The largest value.
        value_bound: u32,
    },
    /// An array-indexed map has 4-byte keys: the kernel refuses others
    /// with `-EINVAL` (`array_map_alloc_check`, kernel/bpf/arraymap.c 6.x;
    /// `reuseport_array_alloc_check`, kernel/bpf/reuseport_array.c 4.19+;
    /// `sock_map_alloc`, net/core/sock_map.c 6.x).
    KeySize {
        /// The uapi name of the map's type.
        map_type: String,
        /// The definition's key size.
        key_size: u32,
    },
    /// A socket map has 4- or 8-byte values: the kernel refuses others
    /// with `-EINVAL` (`reuseport_array_alloc_check`,
    /// kernel/bpf/reuseport_array.c 4.19+; `sock_map_alloc`,
    /// `sock_hash_alloc`, net/core/sock_map.c 6.x).
    ValueSize {
        /// The uapi name of the map's type.
        map_type: String,
        /// The definition's value size.
        value_size: u32,
    },
    /// Global data whose bytes are not hex.
    DataNotHex,
}

/// Why the maps as the reader filled them cannot be built for a program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum MapRefusal {
    /// The object refers to a map user space creates (an `extern`), and
    /// the reader has not defined it.
    ExternUndefined {
        /// The map.
        map: String,
    },
    /// Two maps have one name.
    SameName {
        /// The name.
        map: String,
    },
    /// A definition the model or the kernel refuses.
    Def {
        /// The map.
        map: String,
        /// What is wrong.
        why: MapDefProblem,
    },
    /// A fill names a map that does not exist.
    NoSuchMap {
        /// The name given.
        map: String,
        /// The maps there are, comma-separated.
        names: String,
    },
    /// More entries than the model holds in one map (an input bound).
    TooManyEntries {
        /// The map.
        map: String,
        /// The entries given.
        entries: u32,
        /// The bound.
        bound: u32,
    },
    /// A number key too wide for the map's key size.
    KeyTooWide {
        /// The map.
        map: String,
        /// The key as written.
        key: String,
        /// The map's key size in bytes.
        size: u32,
    },
    /// A key's hex is not bytes.
    KeyNotHex {
        /// The map.
        map: String,
        /// The key as written.
        key: String,
    },
    /// A hex key of another size than the map's keys.
    KeyBytes {
        /// The map.
        map: String,
        /// The key as written.
        key: String,
        /// Its bytes.
        got: u32,
        /// The map's key size.
        want: u32,
    },
    /// A listener the group does not have.
    NoListener {
        /// The map.
        map: String,
        /// The key.
        key: String,
        /// The listener given.
        listener: u64,
        /// How many listeners the group has.
        members: u32,
    },
    /// A socket map given something other than a listener.
    WantsSocket {
        /// The map.
        map: String,
        /// The key.
        key: String,
        /// The uapi name of the map's type.
        map_type: String,
    },
    /// An inner map that does not exist.
    NoInnerMap {
        /// The map.
        map: String,
        /// The key.
        key: String,
        /// The inner map named.
        inner: String,
    },
    /// A map of maps given something other than a map.
    WantsMap {
        /// The map.
        map: String,
        /// The key.
        key: String,
        /// The uapi name of the map's type.
        map_type: String,
    },
    /// A number value too wide for the map's value size.
    ValueTooWide {
        /// The map.
        map: String,
        /// The key.
        key: String,
        /// The value given.
        value: u64,
        /// The map's value size in bytes.
        size: u32,
    },
    /// A value's hex is not bytes.
    ValueNotHex {
        /// The map.
        map: String,
        /// The key.
        key: String,
    },
    /// A hex value of another size than the map's values.
    ValueBytes {
        /// The map.
        map: String,
        /// The key.
        key: String,
        /// Its bytes.
        got: u32,
        /// The map's value size.
        want: u32,
    },
    /// A map of bytes given a socket or a map.
    WantsBytes {
        /// The map.
        map: String,
        /// The key.
        key: String,
        /// The uapi name of the map's type.
        map_type: String,
    },
    /// An array index at or past `max_entries`: the kernel's update
    /// answers `-E2BIG` (`array_map_update_elem`, kernel/bpf/arraymap.c
    /// 4.x – 6.x; `bpf_fd_reuseport_array_update_elem`,
    /// kernel/bpf/reuseport_array.c 4.19+; `sock_map_update_common`,
    /// net/core/sock_map.c 6.x).
    IndexPastMax {
        /// The map.
        map: String,
        /// The key.
        key: String,
        /// The index.
        index: u32,
        /// The map's `max_entries`.
        max_entries: u32,
    },
    /// A hash already holding `max_entries` keys given one more: the
    /// kernel answers `-E2BIG` (`htab_map_update_elem`,
    /// kernel/bpf/hashtab.c 4.x – 6.x; `sock_hash_update_common`,
    /// net/core/sock_map.c 6.x).
    Full {
        /// The map.
        map: String,
        /// The key.
        key: String,
        /// The map's `max_entries`.
        max_entries: u32,
    },
}

impl MapRefusal {
    /// The map the refusal is about.
    pub fn map(&self) -> &str {
        use MapRefusal::*;
        match self {
            ExternUndefined { map }
            | SameName { map }
            | Def { map, .. }
            | NoSuchMap { map, .. }
            | TooManyEntries { map, .. }
            | KeyTooWide { map, .. }
            | KeyNotHex { map, .. }
            | KeyBytes { map, .. }
            | NoListener { map, .. }
            | WantsSocket { map, .. }
            | NoInnerMap { map, .. }
            | WantsMap { map, .. }
            | ValueTooWide { map, .. }
            | ValueNotHex { map, .. }
            | ValueBytes { map, .. }
            | WantsBytes { map, .. }
            | IndexPastMax { map, .. }
            | Full { map, .. } => map,
        }
    }
}
