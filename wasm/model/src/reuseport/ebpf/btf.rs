//! The part of BTF (include/uapi/linux/btf.h, 4.18 on) that BTF-defined
//! maps need: the `.maps` data section's variables, each a struct whose
//! members say the map's type and sizes the way libbpf's
//! `parse_btf_map_def` (tools/lib/bpf/libbpf.c 1.x) reads them:
//! `__uint(name, n)` is a member `int (*name)[n]` (a pointer to an array of
//! `n`), `__type(key, T)` a member `T *key` whose size is T's.

use serde::{Deserialize, Serialize};

use super::elf::ElfError;
use super::MapDef;

/// What is wrong with the BTF a `.maps` section needs, as data (said by
/// `btf_problem.<kind>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum BtfProblem {
    /// The data ends inside a field.
    Truncated {
        /// The byte the field starts at.
        at: usize,
    },
    /// No BTF header (magic 0xeb9f, little-endian).
    NoHeader,
    /// The type section runs past the end of the data.
    TypesPastEnd,
    /// The string section runs past the end of the data.
    StringsPastEnd,
    /// More types than the reader reads (an input bound).
    TooManyTypes {
        /// The bound.
        max: usize,
    },
    /// A type of a kind the reader does not know.
    UnknownKind {
        /// The type id.
        id: usize,
        /// Its kind number.
        btf_kind: u32,
    },
    /// A type id past the last type.
    TypeOutOfRange {
        /// The type id.
        id: u32,
    },
    /// A chain of typedefs and qualifiers longer than the reader follows.
    TypedefChain,
    /// Types nested deeper than the reader follows.
    TooDeep,
    /// A type that has no size.
    NoSize {
        /// The type id.
        id: u32,
        /// Its kind number.
        btf_kind: u32,
    },
    /// No `.maps` data section in the BTF.
    NoMapsSection,
    /// An entry of the `.maps` section that is not a variable.
    EntryNotVariable {
        /// The entry's index.
        entry: usize,
    },
    /// A map variable that is not a struct.
    MapNotStruct {
        /// The map.
        map: String,
    },
    /// A `__uint()` member that is not a pointer to an array.
    UintMember,
    /// A `__type()` member that is not a pointer.
    TypeMember,
}

/// The most types read: a bound of the model's input.
const MAX_TYPES: usize = 1 << 20;

#[derive(Debug, Clone)]
struct Type {
    name_off: u32,
    kind: u32,
    vlen: usize,
    size_or_type: u32,
    /// Kind-specific data after the common header.
    extra: Vec<u32>,
}

const INT: u32 = 1;
const PTR: u32 = 2;
const ARRAY: u32 = 3;
const STRUCT: u32 = 4;
const UNION: u32 = 5;
const ENUM: u32 = 6;
const TYPEDEF: u32 = 8;
const VOLATILE: u32 = 9;
const CONST: u32 = 10;
const RESTRICT: u32 = 11;
const VAR: u32 = 14;
const DATASEC: u32 = 15;
const TYPE_TAG: u32 = 18;
const ENUM64: u32 = 19;

struct Btf<'a> {
    types: Vec<Type>,
    strings: &'a [u8],
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, BtfProblem> {
    b.get(at..at + 4)
        .map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]))
        .ok_or(BtfProblem::Truncated { at })
}

impl<'a> Btf<'a> {
    fn parse(b: &'a [u8]) -> Result<Btf<'a>, BtfProblem> {
        if b.len() < 24 || b[0..2] != [0x9f, 0xeb] {
            return Err(BtfProblem::NoHeader);
        }
        let hdr_len = u32_at(b, 4)? as usize;
        let (type_off, type_len) = (u32_at(b, 8)? as usize, u32_at(b, 12)? as usize);
        let (str_off, str_len) = (u32_at(b, 16)? as usize, u32_at(b, 20)? as usize);
        let tstart = hdr_len + type_off;
        let sstart = hdr_len + str_off;
        let tb = b
            .get(tstart..tstart + type_len)
            .ok_or(BtfProblem::TypesPastEnd)?;
        let strings = b
            .get(sstart..sstart + str_len)
            .ok_or(BtfProblem::StringsPastEnd)?;
        // Type id 0 is void.
        let mut types = vec![Type {
            name_off: 0,
            kind: 0,
            vlen: 0,
            size_or_type: 0,
            extra: vec![],
        }];
        let mut at = 0;
        while at < tb.len() {
            if types.len() > MAX_TYPES {
                return Err(BtfProblem::TooManyTypes { max: MAX_TYPES });
            }
            let name_off = u32_at(tb, at)?;
            let info = u32_at(tb, at + 4)?;
            let size_or_type = u32_at(tb, at + 8)?;
            at += 12;
            let kind = (info >> 24) & 0x1f;
            let vlen = (info & 0xffff) as usize;
            let words = match kind {
                INT | VAR | 17 => 1,
                ARRAY => 3,
                STRUCT | UNION | DATASEC | ENUM64 => 3 * vlen,
                ENUM | 13 => 2 * vlen,
                PTR | 7 | TYPEDEF | VOLATILE | CONST | RESTRICT | 12 | 16 | TYPE_TAG => 0,
                k => {
                    return Err(BtfProblem::UnknownKind {
                        id: types.len(),
                        btf_kind: k,
                    })
                }
            };
            let mut extra = Vec::with_capacity(words);
            for i in 0..words {
                extra.push(u32_at(tb, at + 4 * i)?);
            }
            at += 4 * words;
            types.push(Type {
                name_off,
                kind,
                vlen,
                size_or_type,
                extra,
            });
        }
        Ok(Btf { types, strings })
    }

    fn name(&self, off: u32) -> &str {
        let s = self.strings.get(off as usize..).unwrap_or(&[]);
        let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        core::str::from_utf8(&s[..end]).unwrap_or("")
    }

    fn get(&self, id: u32) -> Result<&Type, BtfProblem> {
        self.types
            .get(id as usize)
            .ok_or(BtfProblem::TypeOutOfRange { id })
    }

    /// Past typedefs and qualifiers.
    fn skip_mods(&self, mut id: u32) -> Result<u32, BtfProblem> {
        for _ in 0..64 {
            let t = self.get(id)?;
            match t.kind {
                TYPEDEF | VOLATILE | CONST | RESTRICT | TYPE_TAG => id = t.size_or_type,
                _ => return Ok(id),
            }
        }
        Err(BtfProblem::TypedefChain)
    }

    fn size(&self, id: u32, depth: u32) -> Result<u32, BtfProblem> {
        if depth > 64 {
            return Err(BtfProblem::TooDeep);
        }
        let id = self.skip_mods(id)?;
        let t = self.get(id)?;
        Ok(match t.kind {
            INT | STRUCT | UNION | ENUM | ENUM64 | DATASEC => t.size_or_type,
            PTR => 8,
            ARRAY => t.extra[2].saturating_mul(self.size(t.extra[0], depth + 1)?),
            k => return Err(BtfProblem::NoSize { id, btf_kind: k }),
        })
    }

    /// `int (*name)[n]`: n.
    fn uint_member(&self, ty: u32) -> Result<u32, BtfProblem> {
        let p = self.get(self.skip_mods(ty)?)?;
        if p.kind != PTR {
            return Err(BtfProblem::UintMember);
        }
        let a = self.get(self.skip_mods(p.size_or_type)?)?;
        if a.kind != ARRAY {
            return Err(BtfProblem::UintMember);
        }
        Ok(a.extra[2])
    }

    /// `T *name`: T's size.
    fn type_member(&self, ty: u32) -> Result<u32, BtfProblem> {
        let p = self.get(self.skip_mods(ty)?)?;
        if p.kind != PTR {
            return Err(BtfProblem::TypeMember);
        }
        self.size(p.size_or_type, 0)
    }
}

/// The maps the `.maps` section's BTF describes, by variable name.
pub(super) fn maps(b: &[u8]) -> Result<Vec<(String, MapDef)>, ElfError> {
    let whole = |why| ElfError::Btf { why };
    let btf = Btf::parse(b).map_err(whole)?;
    let Some(sec) = btf
        .types
        .iter()
        .find(|t| t.kind == DATASEC && btf.name(t.name_off) == ".maps")
    else {
        return Err(whole(BtfProblem::NoMapsSection));
    };
    let mut out = Vec::new();
    for v in 0..sec.vlen {
        let var = btf.get(sec.extra[3 * v]).map_err(whole)?;
        if var.kind != VAR {
            return Err(whole(BtfProblem::EntryNotVariable { entry: v }));
        }
        let name = btf.name(var.name_off).to_string();
        let st = btf
            .skip_mods(var.size_or_type)
            .and_then(|id| btf.get(id))
            .map_err(whole)?;
        if st.kind != STRUCT {
            return Err(whole(BtfProblem::MapNotStruct { map: name }));
        }
        let mut def = MapDef {
            name: name.clone(),
            map_type: 0,
            key_size: 0,
            value_size: 0,
            max_entries: 0,
            flags: 0,
            data: None,
        };
        for m in 0..st.vlen {
            let (mname, mty) = (btf.name(st.extra[3 * m]), st.extra[3 * m + 1]);
            let e = |why| ElfError::BtfMember {
                map: name.clone(),
                member: mname.to_string(),
                why,
            };
            match mname {
                "type" => def.map_type = btf.uint_member(mty).map_err(e)?,
                "max_entries" => def.max_entries = btf.uint_member(mty).map_err(e)?,
                "map_flags" => def.flags = btf.uint_member(mty).map_err(e)?,
                "key_size" => def.key_size = btf.uint_member(mty).map_err(e)?,
                "value_size" => def.value_size = btf.uint_member(mty).map_err(e)?,
                "key" => def.key_size = btf.type_member(mty).map_err(e)?,
                "value" => def.value_size = btf.type_member(mty).map_err(e)?,
                // Pinning, NUMA node, inner map templates: nothing the
                // model's run depends on (an inner map is the reader's).
                _ => {}
            }
        }
        out.push((name, def));
    }
    Ok(out)
}
