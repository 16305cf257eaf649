//! Issue 14's `--to-intel` lowering: AMD-only instructions ([`AmdOnlyKind`]) in reachable
//! code the target CPU lacks are replaced by a `jmp` to an out-of-line stub that computes
//! the same architectural result with instructions every x86-64 CPU has, then jumps back to
//! the next instruction.
//!
//! The arithmetic (EXTRQ, INSERTQ) is generated as Cranelift IR and emitted by
//! cranelift-object into a relocatable object ([`routines`]); its `.text` (which must carry
//! no relocation) goes into the relinked file's `.text.aps5`. Each site gets a stub,
//! encoded by iced-x86, that saves the state the System V ABI lets the routine clobber
//! (flags, rax..r11, xmm0..xmm15) below the red zone, passes the operand registers through
//! memory, calls the routine and restores everything except the destination. MOVNTSS and
//! MOVNTSD become MOVSS and MOVSD with the same memory operand (the same bytes stored, with a
//! stronger ordering than the non-temporal hint's).
//!
//! Results the AMD manual leaves undefined (APM vol. 4, EXTRQ/INSERTQ): the upper quadword of
//! the destination becomes zero (what a Zen CPU does, checked where the test runs on one); when length + index > 64 EXTRQ gives
//! `(src >> index) & mask(length)` and INSERTQ writes only the field bits that fit below
//! bit 64. A site shorter than the 5-byte `jmp` (register forms with no REX prefix, CLZERO,
//! RDPRU, MONITORX, MWAITX) is not lowered and reported.

use std::collections::BTreeMap;

use cranelift_codegen::ir::{AbiParam, InstBuilder, MemFlagsData, condcodes::IntCC, types};
use cranelift_codegen::isa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{Linkage, Module};
use cranelift_object::{ObjectBuilder, ObjectModule};
use iced_x86::{
    BlockEncoder, BlockEncoderOptions, Code, Instruction, InstructionBlock, MemoryOperand, OpKind,
    Register,
};

use crate::RelinkError;
use crate::amd::AmdOnlyKind;

/// The generated routines, each taking a pointer to the 32-byte state
/// `[dest lo, dest hi, src lo, src hi]` (and, for the immediate forms, length and index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Routine {
    /// `aps5_extrq(state, len, idx)`.
    Extrq,
    /// `aps5_insertq(state, len, idx)`.
    Insertq,
    /// `aps5_extrq_reg(state)`: length and index from src bits 5:0 and 13:8.
    ExtrqReg,
    /// `aps5_insertq_reg(state)`: length and index from src bits 69:64 and 77:72.
    InsertqReg,
}

impl Routine {
    /// Every routine, in emission order.
    pub const ALL: [Routine; 4] = [
        Routine::Extrq,
        Routine::Insertq,
        Routine::ExtrqReg,
        Routine::InsertqReg,
    ];

    /// Its symbol in the object.
    pub fn symbol(self) -> &'static str {
        match self {
            Routine::Extrq => "aps5_extrq",
            Routine::Insertq => "aps5_insertq",
            Routine::ExtrqReg => "aps5_extrq_reg",
            Routine::InsertqReg => "aps5_insertq_reg",
        }
    }

    fn immediate(self) -> bool {
        matches!(self, Routine::Extrq | Routine::Insertq)
    }
}

/// The routines' object file (ELF relocatable, x86-64), as cranelift-object emits it.
pub fn routines_object() -> Result<Vec<u8>, RelinkError> {
    let cg = |e: &dyn std::fmt::Display| RelinkError::Encode(format!("cranelift: {e}"));
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").map_err(|e| cg(&e))?;
    flags.set("is_pic", "true").map_err(|e| cg(&e))?;
    let isa = isa::lookup_by_name("x86_64-unknown-linux-gnu")
        .map_err(|e| cg(&e))?
        .finish(settings::Flags::new(flags))
        .map_err(|e| cg(&e))?;
    let builder = ObjectBuilder::new(isa, "aps5_lower", cranelift_module::default_libcall_names())
        .map_err(|e| cg(&e))?;
    let mut module = ObjectModule::new(builder);
    let mut fctx = FunctionBuilderContext::new();
    let frontend = module.isa().frontend_config();
    for r in Routine::ALL {
        let mut sig = module.make_signature();
        sig.params.push(AbiParam::new(types::I64));
        if r.immediate() {
            sig.params.push(AbiParam::new(types::I64));
            sig.params.push(AbiParam::new(types::I64));
        }
        let id = module
            .declare_function(r.symbol(), Linkage::Export, &sig)
            .map_err(|e| cg(&e))?;
        let mut ctx = module.make_context();
        ctx.func.signature = sig;
        {
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let block = b.create_block();
            b.append_block_params_for_function_params(block);
            b.switch_to_block(block);
            b.seal_block(block);
            let p = b.block_params(block).to_vec();
            let state = p[0];
            let mf = MemFlagsData::trusted();
            let (len, idx) = match r {
                Routine::Extrq | Routine::Insertq => (p[1], p[2]),
                Routine::ExtrqReg | Routine::InsertqReg => {
                    let at = if r == Routine::ExtrqReg { 16 } else { 24 };
                    let ctl = b.ins().load(types::I64, mf, state, at);
                    let idx = b.ins().ushr_imm_u(ctl, 8);
                    (ctl, idx)
                }
            };
            let len = b.ins().band_imm_u(len, 63);
            let idx = b.ins().band_imm_u(idx, 63);
            // mask(length): length 0 means 64.
            let one = b.ins().iconst(types::I64, 1);
            let shl = b.ins().ishl(one, len);
            let m = b.ins().iadd_imm_s(shl, -1);
            let all = b.ins().iconst(types::I64, -1);
            let is0 = b.ins().icmp_imm_u(IntCC::Equal, len, 0);
            let mask = b.ins().select(is0, all, m);
            let dst = b.ins().load(types::I64, mf, state, 0);
            let out = match r {
                Routine::Extrq | Routine::ExtrqReg => {
                    let s = b.ins().ushr(dst, idx);
                    b.ins().band(s, mask)
                }
                Routine::Insertq | Routine::InsertqReg => {
                    let src = b.ins().load(types::I64, mf, state, 16);
                    let field = b.ins().band(src, mask);
                    let field = b.ins().ishl(field, idx);
                    let hole = b.ins().ishl(mask, idx);
                    let keep = b.ins().band_not(dst, hole);
                    b.ins().bor(keep, field)
                }
            };
            b.ins().store(mf, out, state, 0);
            // The upper quadword: undefined in the manual, zero on Zen hardware (measured:
            // tests/lower.rs compares the whole register file with the instruction's).
            let zero = b.ins().iconst(types::I64, 0);
            b.ins().store(mf, zero, state, 8);
            b.ins().return_(&[]);
            b.finalize(frontend);
        }
        module.define_function(id, &mut ctx).map_err(|e| cg(&e))?;
    }
    module.finish().emit().map_err(|e| cg(&e))
}

/// The routines' code and where each starts in it.
#[derive(Debug, Clone)]
pub struct Routines {
    /// The object's `.text`.
    pub text: Vec<u8>,
    /// Offset of each routine in `text`.
    pub offsets: BTreeMap<Routine, u64>,
}

/// [`routines_object`]'s `.text` and symbols, checked to need no relocation.
pub fn routines() -> Result<Routines, RelinkError> {
    use object::read::{Object, ObjectSection, ObjectSymbol};
    let obj = routines_object()?;
    let bad = |w: String| RelinkError::Encode(format!("lowering object: {w}"));
    let file = object::read::File::parse(&obj[..]).map_err(|e| bad(e.to_string()))?;
    let text = file
        .section_by_name(".text")
        .ok_or_else(|| bad("no .text".into()))?;
    if text.relocations().next().is_some() {
        return Err(bad(".text has relocations".into()));
    }
    let data = text.data().map_err(|e| bad(e.to_string()))?.to_vec();
    let mut offsets = BTreeMap::new();
    for r in Routine::ALL {
        let s = file
            .symbols()
            .find(|s| s.name() == Ok(r.symbol()))
            .ok_or_else(|| bad(format!("no symbol {}", r.symbol())))?;
        if s.section_index() != Some(text.index()) {
            return Err(bad(format!("{} is not in .text", r.symbol())));
        }
        offsets.insert(r, s.address() - text.address());
    }
    Ok(Routines {
        text: data,
        offsets,
    })
}

/// Whether a site of `kind`, `length` bytes long, is lowered by a jump.
pub fn lowerable(kind: AmdOnlyKind, length: u8) -> bool {
    length >= 5
        && matches!(
            kind,
            AmdOnlyKind::ExtrqImm
                | AmdOnlyKind::ExtrqReg
                | AmdOnlyKind::InsertqImm
                | AmdOnlyKind::InsertqReg
                | AmdOnlyKind::Movntss
                | AmdOnlyKind::Movntsd
        )
}

/// The lowering code placed at `base`: the routines, then one stub per site; and, per site,
/// the address of its stub.
pub struct Lowered {
    /// The bytes to load at `base`.
    pub code: Vec<u8>,
    /// Stub address of each site, in the order given.
    pub stubs: Vec<u64>,
}

const XMM: [Register; 16] = [
    Register::XMM0,
    Register::XMM1,
    Register::XMM2,
    Register::XMM3,
    Register::XMM4,
    Register::XMM5,
    Register::XMM6,
    Register::XMM7,
    Register::XMM8,
    Register::XMM9,
    Register::XMM10,
    Register::XMM11,
    Register::XMM12,
    Register::XMM13,
    Register::XMM14,
    Register::XMM15,
];
const SAVED: [Register; 10] = [
    Register::RAX,
    Register::RCX,
    Register::RDX,
    Register::RSI,
    Register::RDI,
    Register::R8,
    Register::R9,
    Register::R10,
    Register::R11,
    Register::RBP,
];

fn mem(base: Register, disp: i64) -> MemoryOperand {
    MemoryOperand::with_base_displ(base, disp)
}

fn e(x: iced_x86::IcedError) -> RelinkError {
    RelinkError::Encode(x.to_string())
}

/// The stub's instructions for one site (`ins`, decoded at its address), calling `routine`.
fn stub(
    ins: &Instruction,
    routine: impl Fn(Routine) -> u64,
) -> Result<Vec<Instruction>, RelinkError> {
    let next = ins.next_ip();
    let mut v = Vec::new();
    let kind = AmdOnlyKind::of(ins).ok_or_else(|| {
        RelinkError::Encode(format!("{:#x}: not an AMD-only instruction", ins.ip()))
    })?;
    match kind {
        AmdOnlyKind::Movntss | AmdOnlyKind::Movntsd => {
            let mut m = *ins;
            m.set_code(if kind == AmdOnlyKind::Movntss {
                Code::Movss_xmmm32_xmm
            } else {
                Code::Movsd_xmmm64_xmm
            });
            v.push(m);
        }
        _ => {
            let r = match kind {
                AmdOnlyKind::ExtrqImm => Routine::Extrq,
                AmdOnlyKind::ExtrqReg => Routine::ExtrqReg,
                AmdOnlyKind::InsertqImm => Routine::Insertq,
                AmdOnlyKind::InsertqReg => Routine::InsertqReg,
                k => {
                    return Err(RelinkError::Encode(format!(
                        "{:#x}: {} has no lowering routine",
                        ins.ip(),
                        k.name()
                    )));
                }
            };
            let dst = ins.op0_register();
            let src = (ins.op_count() > 1 && ins.op_kind(1) == OpKind::Register)
                .then(|| ins.op1_register());
            let (len, idx) = match kind {
                AmdOnlyKind::ExtrqImm => (ins.immediate8(), ins.immediate8_2nd()),
                AmdOnlyKind::InsertqImm => (ins.immediate8(), ins.immediate8_2nd()),
                _ => (0, 0),
            };
            let i2 = |c: Code, a: Register, m: MemoryOperand| Instruction::with2(c, a, m);
            // Below the red zone, save what the System V ABI lets the routine clobber.
            v.push(i2(Code::Lea_r64_m, Register::RSP, mem(Register::RSP, -128)).map_err(e)?);
            v.push(Instruction::with(Code::Pushfq));
            for r in SAVED {
                v.push(Instruction::with1(Code::Push_r64, r).map_err(e)?);
            }
            v.push(
                Instruction::with2(Code::Mov_r64_rm64, Register::RBP, Register::RSP).map_err(e)?,
            );
            v.push(Instruction::with2(Code::And_rm64_imm8, Register::RSP, -16i32).map_err(e)?);
            v.push(Instruction::with2(Code::Sub_rm64_imm32, Register::RSP, 288i32).map_err(e)?);
            for (i, x) in XMM.iter().enumerate() {
                v.push(
                    Instruction::with2(
                        Code::Movdqu_xmmm128_xmm,
                        mem(Register::RSP, 32 + 16 * i as i64),
                        *x,
                    )
                    .map_err(e)?,
                );
            }
            v.push(
                Instruction::with2(Code::Movdqu_xmmm128_xmm, mem(Register::RSP, 0), dst)
                    .map_err(e)?,
            );
            if let Some(s) = src {
                v.push(
                    Instruction::with2(Code::Movdqu_xmmm128_xmm, mem(Register::RSP, 16), s)
                        .map_err(e)?,
                );
            }
            v.push(
                Instruction::with2(Code::Mov_r64_rm64, Register::RDI, Register::RSP).map_err(e)?,
            );
            if r.immediate() {
                v.push(
                    Instruction::with2(Code::Mov_r32_imm32, Register::ESI, len as u32)
                        .map_err(e)?,
                );
                v.push(
                    Instruction::with2(Code::Mov_r32_imm32, Register::EDX, idx as u32)
                        .map_err(e)?,
                );
            }
            v.push(Instruction::with_branch(Code::Call_rel32_64, routine(r)).map_err(e)?);
            for (i, x) in XMM.iter().enumerate() {
                if *x != dst {
                    v.push(
                        Instruction::with2(
                            Code::Movdqu_xmm_xmmm128,
                            *x,
                            mem(Register::RSP, 32 + 16 * i as i64),
                        )
                        .map_err(e)?,
                    );
                }
            }
            v.push(
                Instruction::with2(Code::Movdqu_xmm_xmmm128, dst, mem(Register::RSP, 0))
                    .map_err(e)?,
            );
            v.push(
                Instruction::with2(Code::Mov_r64_rm64, Register::RSP, Register::RBP).map_err(e)?,
            );
            for r in SAVED.iter().rev() {
                v.push(Instruction::with1(Code::Pop_r64, *r).map_err(e)?);
            }
            v.push(Instruction::with(Code::Popfq));
            v.push(i2(Code::Lea_r64_m, Register::RSP, mem(Register::RSP, 128)).map_err(e)?);
        }
    }
    v.push(Instruction::with_branch(Code::Jmp_rel32_64, next).map_err(e)?);
    Ok(v)
}

/// Builds the lowering code for `sites` (each decoded at its address in the relinked file)
/// to be loaded at `base` (16-aligned).
pub fn build(base: u64, sites: &[Instruction]) -> Result<Lowered, RelinkError> {
    let r = routines()?;
    let mut code = r.text.clone();
    let routine = |x: Routine| base + r.offsets[&x];
    let mut stubs = Vec::with_capacity(sites.len());
    for ins in sites {
        code.resize(code.len().next_multiple_of(16), 0xCC);
        let at = base + code.len() as u64;
        let body = stub(ins, routine)?;
        let block = InstructionBlock::new(&body, at);
        let out = BlockEncoder::encode(64, block, BlockEncoderOptions::NONE)
            .map_err(|x| RelinkError::Encode(format!("lowering stub for {:#x}: {x}", ins.ip())))?;
        code.extend(out.code_buffer);
        stubs.push(at);
    }
    Ok(Lowered { code, stubs })
}

/// The bytes a lowered site becomes: `jmp rel32` to `stub`, then NOPs to its length.
pub fn site_patch(site: u64, length: u8, stub: u64) -> Result<Vec<u8>, RelinkError> {
    let rel = i32::try_from(stub as i64 - (site as i64 + 5))
        .map_err(|_| RelinkError::Encode(format!("{site:#x}: lowering stub out of jmp range")))?;
    let mut b = vec![0xE9];
    b.extend(rel.to_le_bytes());
    b.resize(length as usize, 0x90);
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The object is the same from one build to the next, and its `.text` has every routine.
    #[test]
    fn routines_are_reproducible() {
        let a = routines_object().unwrap();
        let b = routines_object().unwrap();
        assert_eq!(a, b);
        let r = routines().unwrap();
        assert_eq!(r.offsets.len(), 4);
        assert!(!r.text.is_empty());
    }
}
