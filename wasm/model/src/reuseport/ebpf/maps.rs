//! The maps as user space filled them, and what map operations do to
//! them, with the kernel's error returns:
//!
//! - arrays (`array_map_lookup_elem`, `array_map_update_elem`,
//!   kernel/bpf/arraymap.c 4.x – 6.x): every index below `max_entries`
//!   exists and starts zeroed; an update with `BPF_NOEXIST` is `-EEXIST`,
//!   an index past the end `-E2BIG`; delete is `-EINVAL`;
//! - hashes (`htab_map_update_elem`, `htab_map_delete_elem`,
//!   kernel/bpf/hashtab.c): `BPF_NOEXIST` on a present key `-EEXIST`,
//!   `BPF_EXIST` on an absent one `-ENOENT`, a full map `-E2BIG`, deleting
//!   an absent key `-ENOENT`;
//! - socket maps (REUSEPORT_SOCKARRAY, SOCKMAP, SOCKHASH) hold sockets:
//!   the reader says which listener (join order) sits at which key;
//! - arrays and hashes of maps hold inner maps, named by the reader.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{hex, map_type, unhex, MapDef, MapDefProblem, MapRefusal};

/// The most entries one map holds in the model (an input bound).
pub const MAX_MAP_ENTRIES: usize = 1 << 16;

/// A key as the reader writes it: a number (little-endian in the key's
/// bytes, as a C `__u32` or `__u64` key is), or hex bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(untagged)]
pub enum MapKey {
    /// A number.
    Num(u64),
    /// Bytes in hex.
    Hex(String),
}

/// A value as the reader writes it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(untagged)]
pub enum MapValue {
    /// A socket of the group (socket maps): the listener, by join order.
    Socket {
        /// The listener.
        socket: u32,
    },
    /// An inner map (arrays and hashes of maps), by name.
    Map {
        /// The inner map's name.
        map: String,
    },
    /// A number, little-endian in the value's bytes.
    Num(u64),
    /// Bytes in hex.
    Hex(String),
}

/// What user space put in one map before the packet.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MapFill {
    /// The map's name.
    pub map: String,
    /// `[key, value]` pairs.
    pub entries: Vec<(MapKey, MapValue)>,
}

/// One map at run time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct MapRt {
    /// Its definition.
    pub def: MapDef,
    /// Entries by key (hex), bytes values decoded in `values`.
    #[serde(skip)]
    pub(super) entries: BTreeMap<Vec<u8>, usize>,
    /// Value storage: an entry's slot (tombstoned on delete, so a pointer
    /// a program holds stays valid, as the kernel's RCU keeps it).
    #[serde(skip)]
    pub(super) slots: Vec<Stored>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Stored {
    Bytes(Vec<u8>),
    Socket(u32),
    Map(usize),
}

/// Every map a run can reach: the object's, then the reader's own (an
/// inner map user space created, say).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct MapState {
    /// The maps.
    pub maps: Vec<MapRt>,
}

/// `n` little-endian in `size` bytes; `None` when it does not fit.
fn le_bytes(n: u64, size: u32) -> Option<Vec<u8>> {
    let b = n.to_le_bytes();
    if size as usize >= 8 {
        let mut v = b.to_vec();
        v.resize(size as usize, 0);
        return Some(v);
    }
    if n >> (8 * size) != 0 {
        return None;
    }
    Some(b[..size as usize].to_vec())
}

/// A key as the reader wrote it: a number in decimal, hex as given.
fn written(k: &MapKey) -> String {
    match k {
        MapKey::Num(n) => n.to_string(),
        MapKey::Hex(h) => h.clone(),
    }
}

fn is_array(t: u32) -> bool {
    matches!(
        t,
        map_type::ARRAY
            | map_type::PERCPU_ARRAY
            | map_type::ARRAY_OF_MAPS
            | map_type::REUSEPORT_SOCKARRAY
            | map_type::SOCKMAP
    )
}

pub(super) fn holds_sockets(t: u32) -> bool {
    matches!(
        t,
        map_type::REUSEPORT_SOCKARRAY | map_type::SOCKMAP | map_type::SOCKHASH
    )
}

pub(super) fn holds_maps(t: u32) -> bool {
    matches!(t, map_type::ARRAY_OF_MAPS | map_type::HASH_OF_MAPS)
}

/// `-errno` values the helpers return.
pub mod errno {
    #![allow(missing_docs)]
    pub const ENOENT: i64 = -2;
    pub const E2BIG: i64 = -7;
    pub const EFAULT: i64 = -14;
    pub const EEXIST: i64 = -17;
    pub const EINVAL: i64 = -22;
    pub const EPERM: i64 = -1;
    pub const EOPNOTSUPP: i64 = -95;

    /// The name of a negative errno return.
    pub fn name(v: i64) -> Option<&'static str> {
        Some(match v {
            ENOENT => "-ENOENT",
            E2BIG => "-E2BIG",
            EFAULT => "-EFAULT",
            EEXIST => "-EEXIST",
            EINVAL => "-EINVAL",
            EPERM => "-EPERM",
            EOPNOTSUPP => "-EOPNOTSUPP",
            _ => return None,
        })
    }
}

impl MapRt {
    fn new(def: MapDef) -> Result<MapRt, MapDefProblem> {
        def.check()?;
        let mut m = MapRt {
            def,
            entries: BTreeMap::new(),
            slots: Vec::new(),
        };
        let t = m.def.map_type;
        if matches!(t, map_type::ARRAY | map_type::PERCPU_ARRAY) {
            let init = match &m.def.data {
                Some(h) => {
                    let mut v = unhex(h).map_err(|_| MapDefProblem::DataNotHex)?;
                    v.resize(m.def.value_size as usize, 0);
                    v
                }
                None => vec![0; m.def.value_size as usize],
            };
            for i in 0..m.def.max_entries {
                m.entries.insert(i.to_le_bytes().to_vec(), m.slots.len());
                m.slots.push(Stored::Bytes(init.clone()));
            }
        }
        Ok(m)
    }

    /// The entry at `key`: its slot.
    pub(super) fn find(&self, key: &[u8]) -> Option<usize> {
        self.entries.get(key).copied()
    }

    pub(super) fn slot(&self, i: usize) -> &Stored {
        &self.slots[i]
    }

    pub(super) fn slot_mut(&mut self, i: usize) -> &mut Stored {
        &mut self.slots[i]
    }

    /// `map_update_elem` of bytes (flags `BPF_ANY` 0, `BPF_NOEXIST` 1,
    /// `BPF_EXIST` 2): 0 or a negative errno.
    pub(super) fn update(&mut self, key: &[u8], value: Vec<u8>, flags: u64) -> i64 {
        if flags > 2 {
            return errno::EINVAL;
        }
        let t = self.def.map_type;
        if is_array(t) {
            let idx = u32::from_le_bytes([key[0], key[1], key[2], key[3]]);
            if idx >= self.def.max_entries {
                return errno::E2BIG;
            }
            if flags == 1 {
                return errno::EEXIST;
            }
            let i = self.entries[key];
            self.slots[i] = Stored::Bytes(value);
            return 0;
        }
        match (self.find(key), flags) {
            (Some(_), 1) => errno::EEXIST,
            (None, 2) => errno::ENOENT,
            (Some(i), _) => {
                self.slots[i] = Stored::Bytes(value);
                0
            }
            (None, _) if self.entries.len() >= self.def.max_entries as usize => errno::E2BIG,
            (None, _) => {
                self.entries.insert(key.to_vec(), self.slots.len());
                self.slots.push(Stored::Bytes(value));
                0
            }
        }
    }

    /// `map_delete_elem`: 0 or a negative errno.
    pub(super) fn delete(&mut self, key: &[u8]) -> i64 {
        if is_array(self.def.map_type) {
            return errno::EINVAL;
        }
        match self.entries.remove(key) {
            Some(_) => 0,
            None => errno::ENOENT,
        }
    }

    /// Entries in key order, as the reader would write them back.
    pub fn dump(&self, names: &[String]) -> Vec<(String, String)> {
        self.entries
            .iter()
            .map(|(k, &i)| {
                let v = match &self.slots[i] {
                    Stored::Bytes(b) => hex(b),
                    Stored::Socket(l) => format!("socket {l}"),
                    Stored::Map(m) => format!("map {}", names.get(*m).map_or("?", |s| s)),
                };
                (hex(k), v)
            })
            .collect()
    }
}

impl MapState {
    /// The maps of a program and the reader's own, filled as the reader
    /// says. `members` is how many listeners the group has.
    pub fn build(defs: &[MapDef], fills: &[MapFill], members: u32) -> Result<MapState, MapRefusal> {
        use MapRefusal as R;
        let mut maps = Vec::with_capacity(defs.len());
        // An extern map (type 0) takes the definition the reader gives
        // under its name, at the extern's place (the index its ld_imm64
        // carries); that definition is not added again.
        let mut resolved: Vec<MapDef> = Vec::new();
        for (i, d) in defs.iter().enumerate() {
            if d.map_type == 0 {
                match defs.iter().find(|x| x.name == d.name && x.map_type != 0) {
                    Some(def) => resolved.push(def.clone()),
                    None => {
                        return Err(R::ExternUndefined {
                            map: d.name.clone(),
                        })
                    }
                }
            } else if !defs[..i]
                .iter()
                .any(|x| x.name == d.name && x.map_type == 0)
            {
                resolved.push(d.clone());
            }
        }
        for d in &resolved {
            if maps.iter().any(|m: &MapRt| m.def.name == d.name) {
                return Err(R::SameName {
                    map: d.name.clone(),
                });
            }
            maps.push(MapRt::new(d.clone()).map_err(|why| R::Def {
                map: d.name.clone(),
                why,
            })?);
        }
        let names: Vec<String> = maps.iter().map(|m| m.def.name.clone()).collect();
        for f in fills {
            let Some(mi) = names.iter().position(|n| *n == f.map) else {
                return Err(R::NoSuchMap {
                    map: f.map.clone(),
                    names: names.join(", "),
                });
            };
            if f.entries.len() > MAX_MAP_ENTRIES {
                return Err(R::TooManyEntries {
                    map: f.map.clone(),
                    entries: u32::try_from(f.entries.len()).unwrap_or(u32::MAX),
                    bound: MAX_MAP_ENTRIES as u32,
                });
            }
            for (k, v) in &f.entries {
                let m = &maps[mi];
                let map = f.map.clone();
                let key_text = written(k);
                let t = m.def.map_type;
                let key = match k {
                    MapKey::Num(n) => {
                        le_bytes(*n, m.def.key_size).ok_or_else(|| R::KeyTooWide {
                            map: map.clone(),
                            key: key_text.clone(),
                            size: m.def.key_size,
                        })?
                    }
                    MapKey::Hex(h) => unhex(h).map_err(|_| R::KeyNotHex {
                        map: map.clone(),
                        key: key_text.clone(),
                    })?,
                };
                if key.len() != m.def.key_size as usize {
                    return Err(R::KeyBytes {
                        map,
                        key: key_text,
                        got: key.len() as u32,
                        want: m.def.key_size,
                    });
                }
                let key_of = || (map.clone(), key_text.clone());
                let type_name = || map_type::name(t).to_string();
                let stored = match v {
                    MapValue::Socket { socket } if holds_sockets(t) => {
                        if *socket >= members {
                            let (map, key) = key_of();
                            return Err(R::NoListener {
                                map,
                                key,
                                listener: *socket as u64,
                                members,
                            });
                        }
                        Stored::Socket(*socket)
                    }
                    MapValue::Num(n) if holds_sockets(t) => {
                        if *n >= members as u64 {
                            let (map, key) = key_of();
                            return Err(R::NoListener {
                                map,
                                key,
                                listener: *n,
                                members,
                            });
                        }
                        Stored::Socket(*n as u32)
                    }
                    _ if holds_sockets(t) => {
                        let (map, key) = key_of();
                        return Err(R::WantsSocket {
                            map,
                            key,
                            map_type: type_name(),
                        });
                    }
                    MapValue::Map { map: inner } if holds_maps(t) => {
                        let Some(i) = names.iter().position(|n| n == inner) else {
                            let (map, key) = key_of();
                            return Err(R::NoInnerMap {
                                map,
                                key,
                                inner: inner.clone(),
                            });
                        };
                        Stored::Map(i)
                    }
                    _ if holds_maps(t) => {
                        let (map, key) = key_of();
                        return Err(R::WantsMap {
                            map,
                            key,
                            map_type: type_name(),
                        });
                    }
                    MapValue::Num(n) => match le_bytes(*n, m.def.value_size) {
                        Some(b) => Stored::Bytes(b),
                        None => {
                            let (map, key) = key_of();
                            return Err(R::ValueTooWide {
                                map,
                                key,
                                value: *n,
                                size: m.def.value_size,
                            });
                        }
                    },
                    MapValue::Hex(h) => {
                        let Ok(b) = unhex(h) else {
                            let (map, key) = key_of();
                            return Err(R::ValueNotHex { map, key });
                        };
                        if b.len() != m.def.value_size as usize {
                            let (map, key) = key_of();
                            return Err(R::ValueBytes {
                                map,
                                key,
                                got: b.len() as u32,
                                want: m.def.value_size,
                            });
                        }
                        Stored::Bytes(b)
                    }
                    MapValue::Socket { .. } | MapValue::Map { .. } => {
                        let (map, key) = key_of();
                        return Err(R::WantsBytes {
                            map,
                            key,
                            map_type: type_name(),
                        });
                    }
                };
                let m = &mut maps[mi];
                if is_array(t) {
                    // array_map_update_elem (kernel/bpf/arraymap.c) and the
                    // socket arrays' updates answer -E2BIG past the end.
                    let idx = u32::from_le_bytes([key[0], key[1], key[2], key[3]]);
                    if idx >= m.def.max_entries {
                        return Err(R::IndexPastMax {
                            map,
                            key: key_text,
                            index: idx,
                            max_entries: m.def.max_entries,
                        });
                    }
                }
                match m.entries.get(&key) {
                    Some(&i) => m.slots[i] = stored,
                    None => {
                        if m.entries.len() >= m.def.max_entries as usize {
                            return Err(R::Full {
                                map,
                                key: key_text,
                                max_entries: m.def.max_entries,
                            });
                        }
                        m.entries.insert(key, m.slots.len());
                        m.slots.push(stored);
                    }
                }
            }
        }
        Ok(MapState { maps })
    }

    /// The maps' names, by index.
    pub fn names(&self) -> Vec<String> {
        self.maps.iter().map(|m| m.def.name.clone()).collect()
    }

    /// The contents of every map, in the reader's form, to carry into the
    /// next packet's run (a program's updates stay, as in the kernel).
    pub fn to_fills(&self) -> Vec<MapFill> {
        let names = self.names();
        self.maps
            .iter()
            .map(|m| MapFill {
                map: m.def.name.clone(),
                entries: m
                    .entries
                    .iter()
                    .map(|(k, &i)| {
                        let v = match &m.slots[i] {
                            Stored::Bytes(b) => MapValue::Hex(hex(b)),
                            Stored::Socket(l) => MapValue::Socket { socket: *l },
                            Stored::Map(x) => MapValue::Map {
                                map: names[*x].clone(),
                            },
                        };
                        (MapKey::Hex(hex(k)), v)
                    })
                    .collect(),
            })
            .collect()
    }
}
