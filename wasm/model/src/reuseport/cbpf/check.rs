//! What the kernel checks before it takes a classic BPF program:
//! `bpf_check_basics_ok` (the length), `bpf_check_classic` (each
//! instruction, in order, then the last one) and `check_load_and_stores`
//! (scratch cells read before written), net/core/filter.c, 4.5 to 7.2.
//! Any of them makes `setsockopt(SO_ATTACH_REUSEPORT_CBPF)` fail with
//! EINVAL and leaves the group's program as it was.

use thiserror::Error;

use super::op::*;
use super::{Ancillary, Insn, MAX_INSNS, MEMWORDS, SKF_AD_OFF};
use crate::message::RefusalRule;

/// Why the kernel refuses a classic BPF program (EINVAL), and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum CheckError {
    /// `bpf_check_basics_ok`: 0 or more than `BPF_MAXINSNS` instructions.
    #[error("the program has {len} instructions; the kernel takes 1 to 4096 (BPF_MAXINSNS)")]
    Length {
        /// The length given.
        len: u32,
    },
    /// `chk_code_allowed`: an opcode classic BPF does not have.
    #[error(
        "instruction {pc}: opcode 0x{code:02x} is not a classic BPF instruction the kernel accepts"
    )]
    Opcode {
        /// The instruction.
        pc: u32,
        /// Its opcode.
        code: u16,
    },
    /// Division or modulo by the constant 0.
    #[error("instruction {pc}: division or modulo by the constant 0")]
    DivZero {
        /// The instruction.
        pc: u32,
    },
    /// A shift by a constant of 32 or more.
    #[error("instruction {pc}: a shift by {k}; the kernel takes shifts by constants below 32")]
    Shift {
        /// The instruction.
        pc: u32,
        /// The shift.
        k: u32,
    },
    /// A scratch cell past `M[15]`.
    #[error("instruction {pc}: scratch cell M[{k}] does not exist (M[0] to M[15])")]
    MemCell {
        /// The instruction.
        pc: u32,
        /// The cell.
        k: u32,
    },
    /// A jump whose target is past the last instruction.
    #[error("instruction {pc}: the jump lands past the last instruction")]
    JumpOut {
        /// The instruction.
        pc: u32,
    },
    /// A load at an `SKF_AD_OFF` offset that is no ancillary field.
    #[error("instruction {pc}: offset 0x{k:08x} is in the ancillary range (SKF_AD_OFF) but names no ancillary field")]
    Ancillary {
        /// The instruction.
        pc: u32,
        /// The offset.
        k: u32,
    },
    /// The last instruction is not `ret`.
    #[error("the last instruction is not a return (ret #k or ret a)")]
    NoRet,
    /// A scratch cell read on a path where it was never written.
    #[error("instruction {pc}: M[{k}] is read before any store to it on some path")]
    MemUnset {
        /// The instruction.
        pc: u32,
        /// The cell.
        k: u32,
    },
}

impl From<CheckError> for RefusalRule {
    fn from(e: CheckError) -> RefusalRule {
        match e {
            CheckError::Length { len } => RefusalRule::CbpfLength { len },
            CheckError::Opcode { pc, code } => RefusalRule::CbpfOpcode { pc, code },
            CheckError::DivZero { pc } => RefusalRule::CbpfDivZero { pc },
            CheckError::Shift { pc, k } => RefusalRule::CbpfShift { pc, k },
            CheckError::MemCell { pc, k } => RefusalRule::CbpfMemCell { pc, k },
            CheckError::JumpOut { pc } => RefusalRule::CbpfJumpOut { pc },
            CheckError::Ancillary { pc, k } => RefusalRule::CbpfAncillary { pc, k },
            CheckError::NoRet => RefusalRule::CbpfNoRet,
            CheckError::MemUnset { pc, k } => RefusalRule::CbpfMemUnset { pc, k },
        }
    }
}

/// `chk_code_allowed`: the opcodes of the kernel's table, and no other.
pub(super) fn allowed(code: u16) -> bool {
    const ALU_OPS: [u16; 10] = [ADD, SUB, MUL, DIV, MOD, AND, OR, XOR, LSH, RSH];
    if code <= 0xff && code & 0x07 == ALU && ALU_OPS.contains(&(code & 0xf0)) {
        return true;
    }
    const JMP_OPS: [u16; 4] = [JEQ, JGT, JGE, JSET];
    if code & 0x07 == JMP && code <= 0xff && JMP_OPS.contains(&(code & 0xf0)) {
        return true;
    }
    matches!(
        code,
        0x84 // ALU|NEG
            | 0x20 | 0x28 | 0x30 // LD ABS W/H/B
            | 0x80 // LD|W|LEN
            | 0x40 | 0x48 | 0x50 // LD IND W/H/B
            | 0x00 | 0x60 // LD IMM, LD MEM
            | 0x81 | 0xb1 | 0x01 | 0x61 // LDX LEN, MSH, IMM, MEM
            | 0x02 | 0x03 // ST, STX
            | 0x07 | 0x87 // TAX, TXA
            | 0x06 | 0x16 // RET K, RET A
            | 0x05 // JA
    )
}

/// Checks a program as the kernel does before attaching it, and names the
/// first rule it breaks in the kernel's own order.
pub fn check(insns: &[Insn]) -> Result<(), CheckError> {
    let flen = insns.len();
    if flen == 0 || flen > MAX_INSNS {
        return Err(CheckError::Length {
            len: flen.min(u32::MAX as usize) as u32,
        });
    }
    for (pc, i) in insns.iter().enumerate() {
        let pcu = pc as u32;
        if !allowed(i.code) {
            return Err(CheckError::Opcode {
                pc: pcu,
                code: i.code,
            });
        }
        match i.code {
            0x34 | 0x94 if i.k == 0 => return Err(CheckError::DivZero { pc: pcu }),
            0x64 | 0x74 if i.k >= 32 => return Err(CheckError::Shift { pc: pcu, k: i.k }),
            0x60 | 0x61 | 0x02 | 0x03 if i.k >= MEMWORDS => {
                return Err(CheckError::MemCell { pc: pcu, k: i.k })
            }
            0x05 if i.k >= (flen - pc - 1) as u32 => return Err(CheckError::JumpOut { pc: pcu }),
            c if c & 0x07 == JMP
                && c != 0x05
                && (pc + i.jt as usize + 1 >= flen || pc + i.jf as usize + 1 >= flen) =>
            {
                return Err(CheckError::JumpOut { pc: pcu })
            }
            c if c & 0x07 == JMP && c != 0x05 => {}
            0x20 | 0x28 | 0x30 if i.k >= SKF_AD_OFF && Ancillary::from_k(i.k).is_none() => {
                return Err(CheckError::Ancillary { pc: pcu, k: i.k })
            }
            _ => {}
        }
    }
    if !matches!(insns[flen - 1].code, 0x06 | 0x16) {
        return Err(CheckError::NoRet);
    }
    loads_and_stores(insns)
}

/// `check_load_and_stores`: one pass in order with a mask of written cells;
/// a jump hands its mask to its targets and the instruction after it starts
/// from all cells (a target takes the meet of what reaches it). A `ret`
/// does not reset the mask: the kernel's pass does not either.
fn loads_and_stores(insns: &[Insn]) -> Result<(), CheckError> {
    let mut masks = vec![u16::MAX; insns.len()];
    let mut valid: u16 = 0;
    for (pc, i) in insns.iter().enumerate() {
        valid &= masks[pc];
        match i.code {
            0x02 | 0x03 => valid |= 1 << i.k,
            0x60 | 0x61 if valid & (1 << i.k) == 0 => {
                return Err(CheckError::MemUnset {
                    pc: pc as u32,
                    k: i.k,
                });
            }
            0x05 => {
                masks[pc + 1 + i.k as usize] &= valid;
                valid = u16::MAX;
            }
            c if c & 0x07 == JMP => {
                masks[pc + 1 + i.jt as usize] &= valid;
                masks[pc + 1 + i.jf as usize] &= valid;
                valid = u16::MAX;
            }
            _ => {}
        }
    }
    Ok(())
}
