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

use super::{btf, EbpfObject, EbpfProgram, Insn, MapDef, ProgKind, MAX_INSNS, MAX_MAPS};

/// The largest object read: a bound of the model's input.
pub const MAX_ELF_BYTES: usize = 4 << 20;

/// Why an object could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ElfError {
    /// Larger than [`MAX_ELF_BYTES`].
    #[error("the object is {len} bytes; the model reads objects up to {max} bytes")]
    TooLarge {
        /// Its size.
        len: usize,
        /// The bound.
        max: usize,
    },
    /// Not an ELF file the reader understands.
    #[error("not an ELF object: {why} (compile with `clang -target bpf -O2 -c`)")]
    NotElf {
        /// What the reader said.
        why: String,
    },
    /// An ELF file for another machine.
    #[error("the ELF object is for {arch}, not BPF (compile with `clang -target bpf`)")]
    NotBpf {
        /// Its architecture.
        arch: String,
    },
    /// A section the reader could not use.
    #[error("section `{section}`: {why}")]
    Section {
        /// The section.
        section: String,
        /// What was wrong.
        why: String,
    },
    /// A relocation the model does not apply.
    #[error("section `{section}`, instruction {insn}: {why}")]
    Relocation {
        /// The program section.
        section: String,
        /// The instruction index in the section.
        insn: usize,
        /// What was wrong.
        why: String,
    },
    /// A map definition the reader could not use.
    #[error("map `{map}`: {why}")]
    Map {
        /// The map's name.
        map: String,
        /// What was wrong.
        why: String,
    },
    /// No program in the object.
    #[error("the object holds no program (no function in an executable section)")]
    NoProgram,
}

fn section_err(section: &str, why: impl Into<String>) -> ElfError {
    ElfError::Section {
        section: section.to_string(),
        why: why.into(),
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
    let file = object::File::parse(bytes).map_err(|e| ElfError::NotElf { why: e.to_string() })?;
    if file.format() != object::BinaryFormat::Elf {
        return Err(ElfError::NotElf {
            why: format!("{:?} format", file.format()),
        });
    }
    if file.architecture() != object::Architecture::Bpf {
        return Err(ElfError::NotBpf {
            arch: format!("{:?}", file.architecture()),
        });
    }
    if !file.is_little_endian() {
        return Err(ElfError::NotElf {
            why: "a big-endian object (the model runs little-endian BPF, as x86-64 and arm64 do)"
                .into(),
        });
    }
    let (mut maps, mut origins) = read_maps(&file)?;
    let mut programs = Vec::new();
    for sec in file.sections() {
        if sec.kind() != SectionKind::Text {
            continue;
        }
        let name = sec.name().unwrap_or("").to_string();
        let data = sec.data().map_err(|e| section_err(&name, e.to_string()))?;
        if data.is_empty() {
            continue;
        }
        if !data.len().is_multiple_of(8) {
            return Err(section_err(
                &name,
                format!(
                    "{} bytes, not a whole number of 8-byte instructions",
                    data.len()
                ),
            ));
        }
        let mut insns: Vec<Insn> = data.chunks_exact(8).map(Insn::from_bytes).collect();
        for (off, rel) in sec.relocations() {
            let at = (off / 8) as usize;
            let RelocationTarget::Symbol(si) = rel.target() else {
                return Err(ElfError::Relocation {
                    section: name.clone(),
                    insn: at,
                    why: "a relocation without a symbol".into(),
                });
            };
            let sym = file.symbol_by_index(si).map_err(|e| ElfError::Relocation {
                section: name.clone(),
                insn: at,
                why: e.to_string(),
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
                return Err(section_err(
                    &name,
                    format!(
                        "function `{}` runs past the section's end",
                        f.name().unwrap_or("?")
                    ),
                ));
            }
            if len > MAX_INSNS {
                return Err(section_err(
                    &name,
                    format!(
                        "function `{}` has {len} instructions; the model runs up to {MAX_INSNS}",
                        f.name().unwrap_or("?")
                    ),
                ));
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
            let data = s.data().map_err(|e| section_err(".BTF", e.to_string()))?;
            btf::maps(data).map_err(|why| section_err(".BTF", why))?
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
                        .ok_or_else(|| ElfError::Map {
                            map: sname.clone(),
                            why: "in `.maps` but not described in the `.BTF` section".into(),
                        })?;
                    maps.push(MapDef { name: sname, ..def });
                    origins.push(MapOrigin::Symbol {
                        section: sec.index().0,
                        offset: sym.address(),
                    });
                }
            }
            "maps" => {
                let data = sec.data().map_err(|e| section_err(name, e.to_string()))?;
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
                        return Err(ElfError::Map {
                            map: sname,
                            why: "a `maps` entry shorter than struct bpf_map_def's 16 bytes".into(),
                        });
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
                    sec.data()
                        .map_err(|e| section_err(name, e.to_string()))?
                        .to_vec()
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
            return Err(section_err(
                name,
                format!("more than {MAX_MAPS} maps; the model runs objects with up to {MAX_MAPS}"),
            ));
        }
    }
    for m in &maps {
        m.check().map_err(|why| ElfError::Map {
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
    let err = |why: String| ElfError::Relocation {
        section: section.to_string(),
        insn: at,
        why,
    };
    let Some(insn) = insns.get(at).copied() else {
        return Err(err("a relocation past the section's end".into()));
    };
    if insn.code == 0x85 {
        return Err(err(format!(
            "a call to `{}`: the model runs programs without BPF-to-BPF calls \
             (mark the function `static __always_inline`)",
            sym.name().unwrap_or("?")
        )));
    }
    if insn.code != 0x18 || at + 1 >= insns.len() {
        return Err(err(format!(
            "a relocation against `{}` on an instruction that is not ld_imm64 (opcode {:#04x})",
            sym.name().unwrap_or("?"),
            insn.code
        )));
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
            return Err(err(format!(
                "a relocation against `{}`, which is neither a map nor global data",
                sym.name().unwrap_or("?")
            )))
        }
    }
    Ok(())
}
