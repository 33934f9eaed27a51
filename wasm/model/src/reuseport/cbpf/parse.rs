//! The text forms classic BPF programs come in: `bpf_asm` source
//! (tools/bpf/bpf_asm; labels for jump targets), the C array `tcpdump -dd`
//! and `bpf_asm -c` print (`{ 0x28, 0, 0, 0x0000000c },`), and the decimal
//! form of `tcpdump -ddd` and `bpf_asm` (a count, then `code jt jf k`
//! lines). Errors name the line (from 1).

use std::collections::HashMap;

use thiserror::Error;

use super::op::*;
use super::{Ancillary, Insn, MAX_INSNS};

/// A program text that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("line {line}: {what}")]
pub struct ParseError {
    /// The line, from 1.
    pub line: usize,
    /// What is wrong there.
    pub what: String,
}

fn err(line: usize, what: impl Into<String>) -> ParseError {
    ParseError {
        line,
        what: what.into(),
    }
}

/// The longest program text read: a bound on input (4096 instructions of
/// `tcpdump -dd` take under 150 KiB).
pub const MAX_TEXT: usize = 1 << 20;

/// Parses a program in any of the three forms, told apart by their lines.
pub fn parse(text: &str) -> Result<Vec<Insn>, ParseError> {
    parse_located(text).map(|v| v.into_iter().map(|(insn, _)| insn).collect())
}

/// As [`parse`], with the line (from 1) each instruction was read from, so
/// a refusal that names instruction `pc` can name the reader's line.
pub fn parse_located(text: &str) -> Result<Vec<(Insn, usize)>, ParseError> {
    if text.len() > MAX_TEXT {
        return Err(err(
            1,
            format!(
                "the text is {} bytes; programs are read up to {MAX_TEXT}",
                text.len()
            ),
        ));
    }
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, strip_comment(l).trim()))
        .filter(|(_, l)| !l.is_empty())
        .collect();
    let Some(&(_, first)) = lines.first() else {
        return Err(err(1, "no instructions: the program is empty"));
    };
    let insns = if lines.iter().any(|(_, l)| l.starts_with('{')) {
        // A C array may come with its declaration and closing brace.
        let body: Vec<(usize, &str)> = lines
            .iter()
            .copied()
            .filter(|(_, l)| !(l.ends_with("= {") || l.ends_with("={") || *l == "}" || *l == "};"))
            .collect();
        c_array(&body)?
    } else if first.parse::<u32>().is_ok()
        && lines
            .get(1)
            .is_some_and(|(_, l)| l.split_whitespace().count() == 4)
    {
        decimal(&lines)?
    } else {
        asm(&lines)?
    };
    if insns.len() > MAX_INSNS {
        return Err(err(
            lines.last().map_or(1, |l| l.0),
            format!(
                "{} instructions; the kernel takes at most {MAX_INSNS}",
                insns.len()
            ),
        ));
    }
    Ok(insns)
}

fn strip_comment(l: &str) -> &str {
    let l = l.split("//").next().unwrap_or("");
    let l = l.split(';').next().unwrap_or("");
    match l.find("/*") {
        Some(i) => &l[..i],
        None => l,
    }
}

/// A number as `bpf_asm` and C write them: decimal, `0x` hex, `0b`
/// binary, leading-0 octal; a leading `-` wraps to 32 bits.
fn number(line: usize, s: &str) -> Result<u32, ParseError> {
    let s = s.trim();
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let parsed = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        u32::from_str_radix(h, 16)
    } else if let Some(b) = body.strip_prefix("0b") {
        u32::from_str_radix(b, 2)
    } else if body.len() > 1 && body.starts_with('0') {
        u32::from_str_radix(&body[1..], 8)
    } else {
        body.parse::<u32>()
    };
    let v = parsed.map_err(|_| err(line, format!("`{s}` is not a 32-bit number")))?;
    Ok(if neg { v.wrapping_neg() } else { v })
}

fn field<T: TryFrom<u32>>(line: usize, s: &str, what: &str) -> Result<T, ParseError> {
    let v = number(line, s)?;
    T::try_from(v).map_err(|_| err(line, format!("{what} `{}` is too large", s.trim())))
}

fn four(line: usize, parts: &[&str]) -> Result<Insn, ParseError> {
    let [code, jt, jf, k] = parts else {
        return Err(err(
            line,
            format!(
                "expected 4 numbers (code, jt, jf, k), found {}",
                parts.len()
            ),
        ));
    };
    Ok(Insn {
        code: field(line, code, "code")?,
        jt: field(line, jt, "jt")?,
        jf: field(line, jf, "jf")?,
        k: number(line, k)?,
    })
}

/// `{ 0x28, 0, 0, 0x0000000c },` lines.
fn c_array(lines: &[(usize, &str)]) -> Result<Vec<(Insn, usize)>, ParseError> {
    lines
        .iter()
        .map(|&(n, l)| {
            let inner = l
                .strip_prefix('{')
                .and_then(|r| {
                    r.trim_end()
                        .trim_end_matches(',')
                        .trim_end()
                        .strip_suffix('}')
                })
                .ok_or_else(|| err(n, "expected `{ code, jt, jf, k },` as tcpdump -dd prints"))?;
            Ok((four(n, &inner.split(',').collect::<Vec<_>>())?, n))
        })
        .collect()
}

/// A count, then `code jt jf k` lines.
fn decimal(lines: &[(usize, &str)]) -> Result<Vec<(Insn, usize)>, ParseError> {
    let (n0, count) = lines[0];
    let count: usize = count.parse().map_err(|_| err(n0, "expected the count"))?;
    let insns = lines[1..]
        .iter()
        .map(|&(n, l)| Ok((four(n, &l.split_whitespace().collect::<Vec<_>>())?, n)))
        .collect::<Result<Vec<_>, _>>()?;
    if insns.len() != count {
        return Err(err(
            n0,
            format!(
                "the count says {count} instructions, {} follow",
                insns.len()
            ),
        ));
    }
    Ok(insns)
}

/// An instruction waiting for its labels.
struct Pending {
    line: usize,
    insn: Insn,
    /// Jump targets by label: (true target, false target), or JA's target.
    jt: Option<String>,
    jf: Option<String>,
}

fn is_x(s: &str) -> bool {
    matches!(s, "x" | "%x" | "X")
}

/// The operand of a load: `[k]`, `[x + k]`, `#k`, `M[k]`, `#len`, an
/// ancillary name.
fn ld_operand(n: usize, size: u16, arg: &str, imm_ok: bool) -> Result<Insn, ParseError> {
    let a = arg.replace(' ', "");
    let bare = a.strip_prefix('#').unwrap_or(&a);
    if let Some(anc) = Ancillary::ALL.iter().find(|x| {
        x.asm_name() == bare
            || matches!((x, bare), (Ancillary::Protocol, "protocol"))
            || matches!((x, bare), (Ancillary::Pkttype, "pkttype"))
            || matches!((x, bare), (Ancillary::Ifindex, "ifindex"))
            || matches!((x, bare), (Ancillary::VlanTagPresent, "vlan_pr"))
    }) {
        return Ok(Insn::stmt(LD | size | ABS, anc.k()));
    }
    if matches!(bare, "len" | "pktlen") {
        return Ok(Insn::stmt(LD | W | LEN, 0));
    }
    if let Some(inner) = a.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        if let Some(rest) = inner
            .strip_prefix("x+")
            .or_else(|| inner.strip_prefix("%x+"))
        {
            return Ok(Insn::stmt(LD | size | IND, number(n, rest)?));
        }
        if is_x(inner) {
            return Ok(Insn::stmt(LD | size | IND, 0));
        }
        return Ok(Insn::stmt(LD | size | ABS, number(n, inner)?));
    }
    if let Some(inner) = a.strip_prefix("M[").and_then(|r| r.strip_suffix(']')) {
        return Ok(Insn::stmt(LD | MEM, number(n, inner)?));
    }
    if let Some(k) = a.strip_prefix('#') {
        if imm_ok {
            return Ok(Insn::stmt(LD | IMM, number(n, k)?));
        }
    }
    Err(err(n, format!("`{arg}` is not an operand of this load")))
}

/// `bpf_asm` source.
fn asm(lines: &[(usize, &str)]) -> Result<Vec<(Insn, usize)>, ParseError> {
    let mut labels: HashMap<String, usize> = HashMap::new();
    let mut pending: Vec<Pending> = Vec::new();
    for &(n, raw) in lines {
        let mut l = raw;
        // Labels: `name:` before the instruction, on its line or alone.
        while let Some(colon) = l.find(':') {
            let name = l[..colon].trim();
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                break;
            }
            if labels.insert(name.to_string(), pending.len()).is_some() {
                return Err(err(n, format!("label `{name}` is defined twice")));
            }
            l = l[colon + 1..].trim();
        }
        if l.is_empty() {
            continue;
        }
        let (mnemonic, rest) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
        let args: Vec<&str> = if rest.trim().is_empty() {
            Vec::new()
        } else {
            rest.split(',').map(str::trim).collect()
        };
        let one = |args: &[&str]| -> Result<String, ParseError> {
            match args {
                [a] => Ok(a.to_string()),
                _ => Err(err(n, format!("`{mnemonic}` takes one operand"))),
            }
        };
        let mut p = Pending {
            line: n,
            insn: Insn::stmt(0, 0),
            jt: None,
            jf: None,
        };
        let m = mnemonic.to_ascii_lowercase();
        p.insn = match m.as_str() {
            "ld" => ld_operand(n, W, &one(&args)?, true)?,
            "ldh" => ld_operand(n, H, &one(&args)?, false)?,
            "ldb" => ld_operand(n, B, &one(&args)?, false)?,
            "ldi" => Insn::stmt(LD | IMM, imm(n, &one(&args)?)?),
            "ldxi" => Insn::stmt(LDX | IMM, imm(n, &one(&args)?)?),
            "ldx" | "ldxb" => {
                let a = one(&args)?.replace(' ', "");
                if let Some(k) = a
                    .strip_prefix("4*([")
                    .and_then(|r| r.strip_suffix("]&0xf)"))
                {
                    Insn::stmt(LDX | B | MSH, number(n, k)?)
                } else if m == "ldxb" {
                    return Err(err(n, "ldxb takes 4*([k]&0xf)"));
                } else if matches!(a.as_str(), "#len" | "len" | "#pktlen") {
                    Insn::stmt(LDX | W | LEN, 0)
                } else if let Some(k) = a.strip_prefix("M[").and_then(|r| r.strip_suffix(']')) {
                    Insn::stmt(LDX | MEM, number(n, k)?)
                } else {
                    Insn::stmt(LDX | IMM, imm(n, &a)?)
                }
            }
            "st" | "stx" => {
                let a = one(&args)?.replace(' ', "");
                let k = a
                    .strip_prefix("M[")
                    .and_then(|r| r.strip_suffix(']'))
                    .ok_or_else(|| err(n, format!("`{m}` takes M[k]")))?;
                Insn::stmt(if m == "st" { ST } else { STX }, number(n, k)?)
            }
            "add" | "sub" | "mul" | "div" | "mod" | "and" | "or" | "xor" | "lsh" | "rsh" => {
                let opc = match m.as_str() {
                    "add" => ADD,
                    "sub" => SUB,
                    "mul" => MUL,
                    "div" => DIV,
                    "mod" => MOD,
                    "and" => AND,
                    "or" => OR,
                    "xor" => XOR,
                    "lsh" => LSH,
                    _ => RSH,
                };
                let a = one(&args)?;
                if is_x(&a) {
                    Insn::stmt(ALU | opc | X, 0)
                } else {
                    Insn::stmt(ALU | opc | K, imm(n, &a)?)
                }
            }
            "neg" => Insn::stmt(ALU | NEG, 0),
            "tax" => Insn::stmt(MISC | TAX, 0),
            "txa" => Insn::stmt(MISC | TXA, 0),
            "ret" => {
                let a = one(&args)?;
                match a.as_str() {
                    "a" | "%a" | "A" => Insn::stmt(RET | A, 0),
                    "x" | "%x" | "X" => Insn::stmt(RET | X, 0),
                    _ => Insn::stmt(RET | K, imm(n, &a)?),
                }
            }
            "ja" | "jmp" => {
                p.jt = Some(one(&args)?);
                Insn::stmt(JMP | JA, 0)
            }
            "jeq" | "jneq" | "jne" | "jlt" | "jle" | "jgt" | "jge" | "jset" => {
                let (base, swap) = match m.as_str() {
                    "jeq" => (JEQ, false),
                    "jneq" | "jne" => (JEQ, true),
                    "jlt" => (JGE, true),
                    "jle" => (JGT, true),
                    "jgt" => (JGT, false),
                    "jge" => (JGE, false),
                    _ => (JSET, false),
                };
                let (src, k) = match args.first() {
                    Some(a) if is_x(a) => (X, 0),
                    Some(a) => (K, imm(n, a)?),
                    None => return Err(err(n, format!("`{m}` needs an operand and a label"))),
                };
                let (t, f) = match &args[1..] {
                    [t] => (Some(t.to_string()), None),
                    [t, f] => (Some(t.to_string()), Some(f.to_string())),
                    _ => {
                        return Err(err(
                            n,
                            format!("`{m}` takes an operand and one or two labels"),
                        ))
                    }
                };
                if swap {
                    p.jt = f;
                    p.jf = t;
                } else {
                    p.jt = t;
                    p.jf = f;
                }
                Insn::stmt(JMP | base | src, k)
            }
            _ => return Err(err(n, format!("`{mnemonic}` is not a bpf_asm instruction"))),
        };
        pending.push(p);
    }
    let target = |p: &Pending, pc: usize, label: &str| -> Result<u32, ParseError> {
        let &to = labels
            .get(label)
            .ok_or_else(|| err(p.line, format!("no label `{label}`")))?;
        if to <= pc {
            return Err(err(
                p.line,
                format!("label `{label}` is not ahead: classic BPF jumps forward only"),
            ));
        }
        Ok((to - pc - 1) as u32)
    };
    let mut out = Vec::with_capacity(pending.len());
    for (pc, p) in pending.iter().enumerate() {
        let mut insn = p.insn;
        if insn.code == JMP | JA {
            insn.k = target(p, pc, p.jt.as_deref().unwrap_or_default())?;
        } else if insn.code & 0x07 == JMP {
            for (label, slot) in [(&p.jt, &mut insn.jt), (&p.jf, &mut insn.jf)] {
                if let Some(l) = label {
                    let off = target(p, pc, l)?;
                    *slot = u8::try_from(off).map_err(|_| {
                        err(
                            p.line,
                            format!("label `{l}` is {off} instructions ahead; a conditional jump reaches 255"),
                        )
                    })?;
                }
            }
        }
        out.push((insn, p.line));
    }
    if out.is_empty() {
        return Err(err(1, "no instructions: the program is empty"));
    }
    Ok(out)
}

/// `#k` (the `#` optional).
fn imm(n: usize, s: &str) -> Result<u32, ParseError> {
    number(n, s.trim().strip_prefix('#').unwrap_or(s.trim()))
}
