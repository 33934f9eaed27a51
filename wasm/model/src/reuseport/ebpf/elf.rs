//! Reading the ELF object clang writes for eBPF (`clang -target bpf -O2 -c`):
//! the programs (functions in executable sections, typed by the section
//! name as libbpf's `section_defs` does, tools/lib/bpf/libbpf.c 1.x), the
//! maps they refer to (BTF-defined in `.maps`, or the legacy
//! `struct bpf_map_def` array in `maps`, or the global data of `.rodata`,
//! `.data` and `.bss` that libbpf turns into one-entry arrays), and the
//! relocations that tie a `ld_imm64` to a map (`R_BPF_64_64`).
//!
//! The crate is `object`: a pure-Rust ELF reader with no OS calls, so the
//! same code runs in the agent and in the browser. `aya-obj` (which also
//! reads BTF) was the first choice, but its generated kernel bindings exist
//! only for real CPU targets and it does not build for wasm32; the BTF the
//! `.maps` section needs is small enough to read here ([`super::btf`]).
//! Relocations are applied the way libbpf's `bpf_object__relocate_data`
//! does: the instruction's `src_reg` becomes `BPF_PSEUDO_MAP_FD` (1) or
//! `BPF_PSEUDO_MAP_VALUE` (2) and `imm` the map's index here.

use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget, SectionKind, SymbolKind};

use serde::{Deserialize, Serialize};

pub use super::btf::BtfProblem;
use super::{
    btf, EbpfObject, EbpfProgram, Insn, MapDef, MapDefProblem, ProgKind, MAX_INSNS, MAX_MAPS,
};

/// The largest object read: a bound of the model's input.
pub const MAX_ELF_BYTES: usize = 4 << 20;

/// Why an object could not be read, as data (said by the sentence tables,
/// `elf_error.<kind>`, a BTF fault by `btf_problem.<kind>` and a map
/// definition's by `map_def_problem.<kind>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ElfError {
    /// Larger than [`MAX_ELF_BYTES`].
    TooLarge {
        /// Its size.
        len: usize,
        /// The bound.
        max: usize,
    },
    /// Not an ELF file the reader understands.
    NotElf,
    /// An object file of another format.
    OtherFormat {
        /// The format's name.
        format: String,
    },
    /// An ELF file for another machine.
    NotBpf {
        /// Its architecture.
        arch: String,
    },
    /// A big-endian object: the model runs little-endian BPF, as x86-64
    /// and arm64 do.
    BigEndian,
    /// A section whose bytes cannot be read.
    SectionUnreadable {
        /// The section.
        section: String,
    },
    /// A program section that is not a whole number of 8-byte instructions.
    SectionLength {
        /// The section.
        section: String,
        /// Its bytes.
        bytes: usize,
    },
    /// A function that runs past its section's end.
    FunctionPastEnd {
        /// The section.
        section: String,
        /// The function.
        function: String,
    },
    /// A function longer than the model runs (an input bound).
    FunctionTooLong {
        /// The section.
        section: String,
        /// The function.
        function: String,
        /// Its instructions.
        insns: usize,
        /// The bound.
        max: usize,
    },
    /// More maps than the model runs (an input bound).
    TooManyMaps {
        /// The section being read.
        section: String,
        /// The bound.
        max: usize,
    },
    /// A relocation without a symbol.
    RelocNoSymbol {
        /// The program section.
        section: String,
        /// The instruction index in the section.
        insn: usize,
    },
    /// A relocation whose symbol cannot be read.
    RelocBadSymbol {
        /// The program section.
        section: String,
        /// The instruction index in the section.
        insn: usize,
    },
    /// A relocation past the section's end.
    RelocPastEnd {
        /// The program section.
        section: String,
        /// The instruction index in the section.
        insn: usize,
    },
    /// A BPF-to-BPF call, which the model does not run.
    BpfCall {
        /// The program section.
        section: String,
        /// The instruction index in the section.
        insn: usize,
        /// The function called.
        symbol: String,
    },
    /// A relocation on an instruction that is not `ld_imm64`.
    RelocNotLdImm64 {
        /// The program section.
        section: String,
        /// The instruction index in the section.
        insn: usize,
        /// The symbol.
        symbol: String,
        /// The instruction's opcode, in hex.
        opcode: String,
    },
    /// A relocation against a symbol that is neither a map nor global data.
    RelocNotMap {
        /// The program section.
        section: String,
        /// The instruction index in the section.
        insn: usize,
        /// The symbol.
        symbol: String,
    },
    /// The `.BTF` section the `.maps` section needs cannot be read.
    Btf {
        /// What is wrong.
        why: BtfProblem,
    },
    /// A member of a BTF-defined map cannot be read.
    BtfMember {
        /// The map.
        map: String,
        /// The member (`type`, `key`, `max_entries`, ...).
        member: String,
        /// What is wrong.
        why: BtfProblem,
    },
    /// A map in `.maps` that the `.BTF` section does not describe.
    MapNotInBtf {
        /// The map.
        map: String,
    },
    /// A legacy `maps` entry shorter than `struct bpf_map_def`.
    MapDefShort {
        /// The map.
        map: String,
    },
    /// A map definition the model or the kernel refuses.
    MapDef {
        /// The map's name.
        map: String,
        /// What is wrong.
        why: MapDefProblem,
    },
    /// No program in the object (no function in an executable section).
    NoProgram,
}

impl std::fmt::Display for ElfError {
    /// The bare record: the words are the sentence tables'.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the ELF object cannot be read: {self:?}")
    }
}

impl std::error::Error for ElfError {}

fn unreadable(section: &str) -> ElfError {
    ElfError::SectionUnreadable {
        section: section.to_string(),
    }
}

/// The program kind a section name says, as libbpf's `section_defs`
/// (tools/lib/bpf/libbpf.c, 1.0 – 1.5): `sk_reuseport/migrate` is
/// `BPF_PROG_TYPE_SK_REUSEPORT` with `BPF_SK_REUSEPORT_SELECT_OR_MIGRATE`,
/// `sk_reuseport` the same with `BPF_SK_REUSEPORT_SELECT`, `socket` and
/// `socket/...` a `BPF_PROG_TYPE_SOCKET_FILTER`. Any other name is not
/// typed by its section (the kernel selftests name theirs freely and set
/// the type in code); the reader then says the kind.
pub fn kind_of_section(name: &str) -> Option<ProgKind> {
    if name == "sk_reuseport/migrate" {
        Some(ProgKind::SkReuseportMigrate)
    } else if name == "sk_reuseport" {
        Some(ProgKind::SkReuseport)
    } else if name == "socket" || name.starts_with("socket/") {
        Some(ProgKind::SocketFilter)
    } else {
        None
    }
}

/// Where a map comes from.
enum MapOrigin {
    /// A BTF-defined or legacy map: the symbol's offset in its section.
    Symbol { section: usize, offset: u64 },
    /// Global data: the whole section.
    Data { section: usize },
    /// An undefined symbol (`extern int ngx_quic_sockmap;`): a map user
    /// space creates and the loader patches in, as nginx's `ngx_bpf.c` does.
    Extern { name: String },
}

/// Reads an object: its programs (each with every map of the object, in
/// one order, so a program's `ld_imm64` index names the same map in each).
pub fn read(bytes: &[u8]) -> Result<EbpfObject, ElfError> {
    if bytes.len() > MAX_ELF_BYTES {
        return Err(ElfError::TooLarge {
            len: bytes.len(),
            max: MAX_ELF_BYTES,
        });
    }
    let file = object::File::parse(bytes).map_err(|_| ElfError::NotElf)?;
    if file.format() != object::BinaryFormat::Elf {
        return Err(ElfError::OtherFormat {
            format: format!("{:?}", file.format()),
        });
    }
    if file.architecture() != object::Architecture::Bpf {
        return Err(ElfError::NotBpf {
            arch: format!("{:?}", file.architecture()),
        });
    }
    if !file.is_little_endian() {
        return Err(ElfError::BigEndian);
    }
    let (mut maps, mut origins) = read_maps(&file)?;
    let mut programs = Vec::new();
    for sec in file.sections() {
        if sec.kind() != SectionKind::Text {
            continue;
        }
        let name = sec.name().unwrap_or("").to_string();
        let data = sec.data().map_err(|_| unreadable(&name))?;
        if data.is_empty() {
            continue;
        }
        if !data.len().is_multiple_of(8) {
            return Err(ElfError::SectionLength {
                section: name,
                bytes: data.len(),
            });
        }
        let mut insns: Vec<Insn> = data.chunks_exact(8).map(Insn::from_bytes).collect();
        for (off, rel) in sec.relocations() {
            let at = (off / 8) as usize;
            let RelocationTarget::Symbol(si) = rel.target() else {
                return Err(ElfError::RelocNoSymbol {
                    section: name.clone(),
                    insn: at,
                });
            };
            let sym = file
                .symbol_by_index(si)
                .map_err(|_| ElfError::RelocBadSymbol {
                    section: name.clone(),
                    insn: at,
                })?;
            relocate(&mut insns, at, &name, &sym, &mut maps, &mut origins)?;
        }
        let kind = kind_of_section(&name);
        let mut funcs: Vec<_> = file
            .symbols()
            .filter(|s| {
                s.section_index() == Some(sec.index())
                    && s.kind() == SymbolKind::Text
                    && s.is_global()
            })
            .collect();
        funcs.sort_by_key(|s| s.address());
        for f in funcs {
            let start = (f.address() / 8) as usize;
            let len = if f.size() > 0 {
                (f.size() / 8) as usize
            } else {
                insns.len() - start
            };
            if start + len > insns.len() {
                return Err(ElfError::FunctionPastEnd {
                    section: name,
                    function: f.name().unwrap_or("?").to_string(),
                });
            }
            if len > MAX_INSNS {
                return Err(ElfError::FunctionTooLong {
                    section: name,
                    function: f.name().unwrap_or("?").to_string(),
                    insns: len,
                    max: MAX_INSNS,
                });
            }
            programs.push(EbpfProgram {
                name: f.name().unwrap_or("").to_string(),
                section: name.clone(),
                kind,
                insns: insns[start..start + len].to_vec(),
                maps: Vec::new(),
            });
        }
    }
    if programs.is_empty() {
        return Err(ElfError::NoProgram);
    }
    for p in &mut programs {
        p.maps = maps.clone();
    }
    let license = file
        .section_by_name("license")
        .and_then(|s| s.data().ok())
        .map(|d| String::from_utf8_lossy(d.split(|&b| b == 0).next().unwrap_or(&[])).to_string());
    Ok(EbpfObject {
        programs,
        maps,
        license,
    })
}

/// The maps of the object, in section then symbol order.
fn read_maps(file: &object::File) -> Result<(Vec<MapDef>, Vec<MapOrigin>), ElfError> {
    let mut maps = Vec::new();
    let mut origins = Vec::new();
    let btf_maps = match file.section_by_name(".BTF") {
        Some(s) if file.section_by_name(".maps").is_some() => {
            let data = s.data().map_err(|_| unreadable(".BTF"))?;
            btf::maps(data)?
        }
        _ => Vec::new(),
    };
    for sec in file.sections() {
        let name = sec.name().unwrap_or("");
        match name {
            ".maps" => {
                for sym in symbols_in(file, sec.index()) {
                    let sname = sym.name().unwrap_or("").to_string();
                    let def = btf_maps
                        .iter()
                        .find(|(n, _)| *n == sname)
                        .map(|(_, d)| d.clone())
                        .ok_or_else(|| ElfError::MapNotInBtf { map: sname.clone() })?;
                    maps.push(MapDef { name: sname, ..def });
                    origins.push(MapOrigin::Symbol {
                        section: sec.index().0,
                        offset: sym.address(),
                    });
                }
            }
            "maps" => {
                let data = sec.data().map_err(|_| unreadable(name))?;
                for sym in symbols_in(file, sec.index()) {
                    let sname = sym.name().unwrap_or("").to_string();
                    let at = sym.address() as usize;
                    // struct bpf_map_def (tools/lib/bpf/libbpf_legacy.h):
                    // type, key_size, value_size, max_entries, map_flags.
                    let word = |i: usize| {
                        data.get(at + 4 * i..at + 4 * i + 4)
                            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    };
                    let (Some(t), Some(k), Some(v), Some(m)) = (word(0), word(1), word(2), word(3))
                    else {
                        return Err(ElfError::MapDefShort { map: sname });
                    };
                    maps.push(MapDef {
                        name: sname,
                        map_type: t,
                        key_size: k,
                        value_size: v,
                        max_entries: m,
                        flags: word(4).unwrap_or(0),
                        data: None,
                    });
                    origins.push(MapOrigin::Symbol {
                        section: sec.index().0,
                        offset: sym.address(),
                    });
                }
            }
            ".rodata" | ".data" | ".bss" => {
                let size = sec.size();
                if size == 0 {
                    continue;
                }
                let data = if name == ".bss" {
                    vec![0u8; size as usize]
                } else {
                    sec.data().map_err(|_| unreadable(name))?.to_vec()
                };
                maps.push(MapDef {
                    name: name.to_string(),
                    map_type: super::map_type::ARRAY,
                    key_size: 4,
                    value_size: size as u32,
                    max_entries: 1,
                    flags: 0,
                    data: Some(super::hex(&data)),
                });
                origins.push(MapOrigin::Data {
                    section: sec.index().0,
                });
            }
            _ => {}
        }
        if maps.len() > MAX_MAPS {
            return Err(ElfError::TooManyMaps {
                section: name.to_string(),
                max: MAX_MAPS,
            });
        }
    }
    for m in &maps {
        m.check().map_err(|why| ElfError::MapDef {
            map: m.name.clone(),
            why,
        })?;
    }
    Ok((maps, origins))
}

fn symbols_in<'a>(
    file: &'a object::File<'a>,
    sec: object::SectionIndex,
) -> Vec<object::Symbol<'a, 'a>> {
    let mut v: Vec<_> = file
        .symbols()
        .filter(|s| s.section_index() == Some(sec) && s.kind() != SymbolKind::Section)
        .filter(|s| !s.name().unwrap_or("").is_empty())
        .collect();
    v.sort_by_key(|s| s.address());
    v
}

/// Applies one relocation (libbpf's `bpf_program__record_reloc` and
/// `bpf_object__relocate_data`).
fn relocate(
    insns: &mut [Insn],
    at: usize,
    section: &str,
    sym: &object::Symbol,
    maps: &mut Vec<MapDef>,
    origins: &mut Vec<MapOrigin>,
) -> Result<(), ElfError> {
    let section = section.to_string();
    let symbol = sym.name().unwrap_or("?").to_string();
    let Some(insn) = insns.get(at).copied() else {
        return Err(ElfError::RelocPastEnd { section, insn: at });
    };
    if insn.code == 0x85 {
        return Err(ElfError::BpfCall {
            section,
            insn: at,
            symbol,
        });
    }
    if insn.code != 0x18 || at + 1 >= insns.len() {
        return Err(ElfError::RelocNotLdImm64 {
            section,
            insn: at,
            symbol,
            opcode: format!("{:#04x}", insn.code),
        });
    }
    let Some(sidx) = sym.section_index() else {
        // An extern: a map user space makes (the reader defines it in
        // `extraMaps` under the same name).
        let name = sym.name().unwrap_or("").to_string();
        let i = match origins
            .iter()
            .position(|o| matches!(o, MapOrigin::Extern { name: n } if *n == name))
        {
            Some(i) => i,
            None => {
                maps.push(MapDef {
                    name: name.clone(),
                    map_type: 0,
                    key_size: 0,
                    value_size: 0,
                    max_entries: 0,
                    flags: 0,
                    data: None,
                });
                origins.push(MapOrigin::Extern { name });
                maps.len() - 1
            }
        };
        insns[at].src = 1;
        insns[at].imm = i as i32;
        return Ok(());
    };
    let found = origins.iter().enumerate().find_map(|(i, o)| match o {
        MapOrigin::Symbol { section, offset } if *section == sidx.0 && *offset == sym.address() => {
            Some((i, None))
        }
        MapOrigin::Data { section } if *section == sidx.0 => Some((i, Some(sym.address()))),
        _ => None,
    });
    match found {
        Some((i, None)) => {
            insns[at].src = 1;
            insns[at].imm = i as i32;
        }
        Some((i, Some(base))) => {
            // A section symbol carries the offset in the instruction's imm;
            // a named variable carries it in its value.
            let off = base as i64 + insn.imm as i64;
            insns[at].src = 2;
            insns[at].imm = i as i32;
            insns[at + 1].imm = off as i32;
        }
        None => {
            return Err(ElfError::RelocNotMap {
                section,
                insn: at,
                symbol,
            })
        }
    }
    Ok(())
}
