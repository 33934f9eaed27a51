//! What user space put in the maps before the first packet, as a page
//! starts it and the reader then edits: which socket sits at which key.
//!
//! The starting rule is the one `reuseport-agent verify --program` fills
//! its live maps by, so a page's first answer is one the kernel was asked:
//!
//! - a REUSEPORT_SOCKARRAY, SOCKMAP or SOCKHASH holds listener i at key i
//!   (for i below `max_entries`; the agent keys a SOCKHASH by each
//!   socket's `SO_COOKIE`, a number only the live kernel gives, so a page
//!   uses i and says so);
//! - a map the object names but does not define (nginx's
//!   `ngx_quic_sockmap`, made by nginx at run time, ngx_event_quic_bpf.c)
//!   is a SOCKHASH with 8-byte keys and values and 1024 entries;
//! - an array of maps gets a REUSEPORT_SOCKARRAY `NAME_inner` of the group
//!   at key 0 (the selftests' `outer_map`);
//! - every other map starts as the object leaves it (zeroed, or the
//!   section's bytes for global data).

use serde::{Deserialize, Serialize};

use super::maps::{holds_maps, holds_sockets, MapState};
use super::{map_type, EbpfProgram, MapDef, MapFill, MapKey, MapRefusal, MapValue};

/// What a map's values are, so a form asks for the right thing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Holds {
    /// Sockets of the group, by listener number (join order).
    Sockets,
    /// Inner maps, by name.
    Maps,
    /// Bytes: a number (little-endian) or hex.
    Bytes,
}

/// What the values of a map of type `t` are.
pub fn holds(t: u32) -> Holds {
    if holds_sockets(t) {
        Holds::Sockets
    } else if holds_maps(t) {
        Holds::Maps
    } else {
        Holds::Bytes
    }
}

/// The map types the model runs (`enum bpf_map_type`,
/// include/uapi/linux/bpf.h), for a form's choice of type.
pub const KNOWN_TYPES: [u32; 10] = [
    map_type::REUSEPORT_SOCKARRAY,
    map_type::SOCKMAP,
    map_type::SOCKHASH,
    map_type::ARRAY,
    map_type::HASH,
    map_type::PERCPU_ARRAY,
    map_type::PERCPU_HASH,
    map_type::LRU_HASH,
    map_type::ARRAY_OF_MAPS,
    map_type::HASH_OF_MAPS,
];

/// The definition given to a map the object declares but does not define
/// (nginx's `ngx_quic_sockmap`, as ngx_event_quic_bpf.c makes it).
pub fn extern_def(name: &str) -> MapDef {
    MapDef {
        name: name.to_string(),
        map_type: map_type::SOCKHASH,
        key_size: 8,
        value_size: 8,
        max_entries: 1024,
        flags: 0,
        data: None,
    }
}

/// Listener i at key i, for every listener below `max_entries`.
fn sockets_by_index(name: &str, members: u32, max_entries: u32) -> MapFill {
    MapFill {
        map: name.to_string(),
        entries: (0..members.min(max_entries))
            .map(|i| (MapKey::Num(i as u64), MapValue::Socket { socket: i }))
            .collect(),
    }
}

/// The maps a group of `members` listeners starts with for `prog` (the
/// module's rule): the fills, and the maps user space makes that the
/// object does not define.
pub fn default_maps(prog: &EbpfProgram, members: u32) -> (Vec<MapFill>, Vec<MapDef>) {
    let mut fills = Vec::new();
    let mut extra = Vec::new();
    for def in &prog.maps {
        let def = if def.map_type == 0 {
            let d = extern_def(&def.name);
            extra.push(d.clone());
            d
        } else {
            def.clone()
        };
        match holds(def.map_type) {
            Holds::Sockets => fills.push(sockets_by_index(&def.name, members, def.max_entries)),
            Holds::Maps if def.map_type == map_type::ARRAY_OF_MAPS => {
                let inner = MapDef {
                    name: format!("{}_inner", def.name),
                    map_type: map_type::REUSEPORT_SOCKARRAY,
                    key_size: 4,
                    value_size: 8,
                    max_entries: members.max(1),
                    flags: 0,
                    data: None,
                };
                fills.push(sockets_by_index(&inner.name, members, inner.max_entries));
                fills.push(MapFill {
                    map: def.name.clone(),
                    entries: vec![(
                        MapKey::Num(0),
                        MapValue::Map {
                            map: inner.name.clone(),
                        },
                    )],
                });
                extra.push(inner);
            }
            _ => {}
        }
    }
    (fills, extra)
}

/// Whether the maps as given can be built for `prog` in a group of
/// `members` listeners: the kernel's rules for what a map accepts (a key
/// past `max_entries`, a listener the group does not have, a value of the
/// wrong size), as the run would meet them; `Err` names the map and key.
pub fn check_maps(
    prog: &EbpfProgram,
    fills: &[MapFill],
    extra: &[MapDef],
    members: u32,
) -> Result<(), MapRefusal> {
    let mut defs = prog.maps.clone();
    defs.extend(extra.iter().cloned());
    MapState::build(&defs, fills, members).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prog(maps: Vec<MapDef>) -> EbpfProgram {
        EbpfProgram {
            name: "p".into(),
            section: "sk_reuseport".into(),
            kind: None,
            insns: Vec::new(),
            maps,
        }
    }

    fn def(name: &str, t: u32, max: u32) -> MapDef {
        MapDef {
            name: name.into(),
            map_type: t,
            key_size: 4,
            value_size: 8,
            max_entries: max,
            flags: 0,
            data: None,
        }
    }

    /// A page's sockarray starts as the agent fills the live one: listener
    /// i at key i, cut at max_entries.
    #[test]
    fn sockarray_holds_listener_i_at_key_i_up_to_max_entries() {
        let p = prog(vec![def("a", map_type::REUSEPORT_SOCKARRAY, 3)]);
        let (fills, extra) = default_maps(&p, 5);
        assert!(extra.is_empty());
        let keys: Vec<_> = fills[0].entries.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(keys, vec![MapKey::Num(0), MapKey::Num(1), MapKey::Num(2)]);
        assert_eq!(check_maps(&p, &fills, &extra, 5), Ok(()));
    }

    /// nginx declares its map and makes it at run time: the page defines
    /// it as nginx does, a SOCKHASH of u64 keys.
    #[test]
    fn an_extern_map_becomes_a_sockhash_the_run_accepts() {
        let mut d = def("ngx_quic_sockmap", 0, 0);
        d.key_size = 0;
        d.value_size = 0;
        let p = prog(vec![d]);
        let (fills, extra) = default_maps(&p, 4);
        assert_eq!(extra.len(), 1);
        assert_eq!(
            (extra[0].map_type, extra[0].key_size),
            (map_type::SOCKHASH, 8)
        );
        assert_eq!(fills[0].entries.len(), 4);
        assert_eq!(check_maps(&p, &fills, &extra, 4), Ok(()));
        // Without the definition the run cannot build the map, and says so.
        let e = check_maps(&p, &fills, &[], 4).unwrap_err();
        assert_eq!(
            e,
            MapRefusal::ExternUndefined {
                map: "ngx_quic_sockmap".into()
            }
        );
    }

    /// A listener the group does not have is refused naming the map.
    #[test]
    fn a_listener_past_the_group_is_refused_naming_the_map() {
        let p = prog(vec![def("a", map_type::REUSEPORT_SOCKARRAY, 8)]);
        let fills = vec![MapFill {
            map: "a".into(),
            entries: vec![(MapKey::Num(0), MapValue::Socket { socket: 9 })],
        }];
        let e = check_maps(&p, &fills, &[], 4).unwrap_err();
        assert_eq!(
            e,
            MapRefusal::NoListener {
                map: "a".into(),
                key: "0".into(),
                listener: 9,
                members: 4
            }
        );
    }

    #[test]
    fn an_array_of_maps_gets_an_inner_sockarray_at_key_0() {
        let p = prog(vec![def("outer", map_type::ARRAY_OF_MAPS, 1)]);
        let (fills, extra) = default_maps(&p, 2);
        assert_eq!(extra[0].name, "outer_inner");
        assert_eq!(check_maps(&p, &fills, &extra, 2), Ok(()));
    }
}
