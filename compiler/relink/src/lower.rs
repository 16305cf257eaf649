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
//! the destination becomes zero (what a Zen CPU does, checked where the test runs on one);
//! when length + index > 64 EXTRQ gives `(src >> index) & mask(length)` and INSERTQ writes
//! only the field bits that fit below bit 64.
//!
//! Every kind is lowered, each the cheapest way its site allows ([`Lowering`]):
//! - MOVNTSS/MOVNTSD are rewritten **in place** as MOVSS/MOVSD (same operands, same length);
//!   MONITORX becomes NOPs and MWAITX a `pause` (MWAITX may end its wait at any time, so
//!   returning at once is one of its architectural outcomes; MONITORX only arms what MWAITX
//!   waits on and changes no register);
//! - EXTRQ/INSERTQ, CLZERO and RDPRU get a stub; a site of 5 bytes or more becomes a `jmp`
//!   to it, a shorter one (register forms without REX, CLZERO, RDPRU: 3-4 bytes) the **trap**
//!   [`LOWER_TRAP`], listed in the file's `PT_APS5_LOWER_TRAPS` table: libkernel's SIGILL
//!   handler resumes at the stub (microseconds per execution instead of nanoseconds).
//!
//! CLZERO zeroes the 64-byte line holding rAX (EAX with a 0x67 prefix) with plain stores.
//! RDPRU (APM vol. 3): ECX 0 selects MPERF and 1 APERF; both read the time-stamp counter
//! here (user code cannot read Intel's MSRs; the TSC counts at a fixed rate as MPERF does,
//! so APERF/MPERF reads as 1). EDX:EAX get the value and CF is set; any other ECX gives 0
//! with CF clear; OF, SF, ZF, AF and PF are cleared either way.

pub use aps5_prx_abi::relinked::{LOWER_TRAP, LowerTrap, PT_APS5_LOWER_TRAPS};

use std::collections::BTreeMap;

use cranelift_codegen::ir::{AbiParam, InstBuilder, MemFlagsData, Value, condcodes::IntCC, types};
use cranelift_codegen::isa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{Linkage, Module};
use cranelift_object::{ObjectBuilder, ObjectModule};
use iced_x86::{
    BlockEncoder, BlockEncoderOptions, Code, Instruction, InstructionBlock, MemoryOperand, OpKind,
    Register,
};

use serde::{Deserialize, Serialize};

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
    /// `aps5_clzero(address)`: zeroes the 64-byte line holding `address`.
    Clzero,
    /// `aps5_rdpru(saved, tsc)`: `saved` is the stub's register block ([`Saved`]); reads
    /// ECX, writes RAX, RDX and the flags there.
    Rdpru,
}

impl Routine {
    /// Every routine, in emission order.
    pub const ALL: [Routine; 6] = [
        Routine::Extrq,
        Routine::Insertq,
        Routine::ExtrqReg,
        Routine::InsertqReg,
        Routine::Clzero,
        Routine::Rdpru,
    ];

    /// Its symbol in the object.
    pub fn symbol(self) -> &'static str {
        match self {
            Routine::Extrq => "aps5_extrq",
            Routine::Insertq => "aps5_insertq",
            Routine::ExtrqReg => "aps5_extrq_reg",
            Routine::InsertqReg => "aps5_insertq_reg",
            Routine::Clzero => "aps5_clzero",
            Routine::Rdpru => "aps5_rdpru",
        }
    }

    /// How many i64 parameters it takes.
    fn params(self) -> usize {
        match self {
            Routine::Extrq | Routine::Insertq => 3,
            Routine::ExtrqReg | Routine::InsertqReg | Routine::Clzero => 1,
            Routine::Rdpru => 2,
        }
    }

    fn immediate(self) -> bool {
        matches!(self, Routine::Extrq | Routine::Insertq)
    }
}

/// Offsets in the register block a stub saves: what `rbp` points at after the stub's
/// pushes (the flags, then [`SAVED`] in order).
struct Saved;

impl Saved {
    const RDX: i32 = 56;
    const RCX: i32 = 64;
    const RAX: i32 = 72;
    const FLAGS: i32 = 80;
}

/// How a site is lowered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lowering {
    /// Rewritten where it stands, same length (MOVNTSS/SD, MONITORX, MWAITX).
    InPlace,
    /// A `jmp` to its stub (sites of 5 bytes or more).
    Jump,
    /// [`LOWER_TRAP`], resumed at its stub by libkernel's SIGILL handler (shorter sites).
    Trap,
}

impl Lowering {
    /// How `ins`, an AMD-only instruction, is lowered.
    pub fn of(ins: &Instruction) -> Lowering {
        if in_place(ins).is_some() {
            Lowering::InPlace
        } else if ins.len() >= 5 {
            Lowering::Jump
        } else {
            Lowering::Trap
        }
    }

    /// As `aps5 status` names it.
    pub fn name(self) -> &'static str {
        match self {
            Lowering::InPlace => "in place",
            Lowering::Jump => "jump",
            Lowering::Trap => "trap",
        }
    }
}

/// The same-length replacement of a site lowered in place, if it has one.
fn in_place(ins: &Instruction) -> Option<Vec<u8>> {
    let n = ins.len();
    match AmdOnlyKind::of(ins)? {
        AmdOnlyKind::Monitorx => Some(vec![0x90; n]),
        AmdOnlyKind::Mwaitx if n >= 2 => {
            let mut b = vec![0xF3, 0x90];
            b.resize(n, 0x90);
            Some(b)
        }
        k @ (AmdOnlyKind::Movntss | AmdOnlyKind::Movntsd) => {
            let mut m = *ins;
            m.set_code(movs_of(k));
            let mut enc = iced_x86::Encoder::new(64);
            enc.encode(&m, ins.ip()).ok()?;
            let b = enc.take_buffer();
            (b.len() == n).then_some(b)
        }
        _ => None,
    }
}

fn movs_of(k: AmdOnlyKind) -> Code {
    if k == AmdOnlyKind::Movntss {
        Code::Movss_xmmm32_xmm
    } else {
        Code::Movsd_xmmm64_xmm
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
        for _ in 0..r.params() {
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
            match r {
                Routine::Clzero => clzero_body(&mut b, p[0]),
                Routine::Rdpru => rdpru_body(&mut b, p[0], p[1]),
                _ => sse4a_body(&mut b, r, &p),
            }
            b.ins().return_(&[]);
            b.finalize(frontend);
        }
        module.define_function(id, &mut ctx).map_err(|e| cg(&e))?;
    }
    module.finish().emit().map_err(|e| cg(&e))
}

/// EXTRQ/INSERTQ on the 32-byte state `[dest lo, dest hi, src lo, src hi]`.
fn sse4a_body(b: &mut FunctionBuilder, r: Routine, p: &[Value]) {
    let state = p[0];
    let mf = MemFlagsData::trusted();
    let (len, idx) = match r {
        Routine::Extrq | Routine::Insertq => (p[1], p[2]),
        _ => {
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
        _ => {
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
}

/// CLZERO: eight 8-byte zero stores over the aligned line (a fault is the instruction's).
fn clzero_body(b: &mut FunctionBuilder, address: Value) {
    let line = b.ins().band_imm_u(address, !63);
    let zero = b.ins().iconst(types::I64, 0);
    for k in 0..8 {
        b.ins().store(MemFlagsData::new(), zero, line, 8 * k);
    }
}

/// RDPRU on the saved register block (module docs: MPERF and APERF read the TSC).
fn rdpru_body(b: &mut FunctionBuilder, saved: Value, tsc: Value) {
    let mf = MemFlagsData::trusted();
    let ecx = b.ins().uload32(mf, saved, Saved::RCX);
    let valid = b.ins().icmp_imm_u(IntCC::UnsignedLessThan, ecx, 2);
    let zero = b.ins().iconst(types::I64, 0);
    let value = b.ins().select(valid, tsc, zero);
    let lo = b.ins().band_imm_u(value, 0xFFFF_FFFF);
    let hi = b.ins().ushr_imm_u(value, 32);
    b.ins().store(mf, lo, saved, Saved::RAX);
    b.ins().store(mf, hi, saved, Saved::RDX);
    // CF = valid; OF, SF, ZF, AF, PF = 0 (0x8D5 holds those and CF).
    let flags = b.ins().load(types::I64, mf, saved, Saved::FLAGS);
    let kept = b.ins().band_imm_u(flags, !0x8D5);
    let cf = b.ins().uextend(types::I64, valid);
    let flags = b.ins().bor(kept, cf);
    b.ins().store(mf, flags, saved, Saved::FLAGS);
}

/// The routines' code and where each starts in it.
#[derive(Debug, Clone)]
pub struct Routines {
    /// The object's `.text`.
    pub text: Vec<u8>,
    /// Offset of each routine in `text`.
    pub offsets: BTreeMap<Routine, u64>,
    /// Whether any routine touches a vector register (read from the code Cranelift made:
    /// integer routines use none, and then the stubs need not save xmm0-15 around a call).
    pub uses_vector_registers: bool,
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
    let mut info = iced_x86::InstructionInfoFactory::new();
    let uses_vector_registers = iced_x86::Decoder::new(64, &data, iced_x86::DecoderOptions::NONE)
        .into_iter()
        .any(|i| {
            info.info(&i)
                .used_registers()
                .iter()
                .any(|u| u.register().is_vector_register())
        });
    Ok(Routines {
        text: data,
        offsets,
        uses_vector_registers,
    })
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
    save_vectors: bool,
) -> Result<Vec<Instruction>, RelinkError> {
    let next = ins.next_ip();
    let mut v = Vec::new();
    let kind = AmdOnlyKind::of(ins).ok_or_else(|| {
        RelinkError::Encode(format!("{:#x}: not an AMD-only instruction", ins.ip()))
    })?;
    let r = match kind {
        AmdOnlyKind::Movntss | AmdOnlyKind::Movntsd => {
            // Only where the in-place form does not fit (never seen): the same store, moved.
            let mut m = *ins;
            m.set_code(movs_of(kind));
            v.push(m);
            None
        }
        AmdOnlyKind::Monitorx => None,
        AmdOnlyKind::Mwaitx => {
            v.push(Instruction::with(Code::Pause));
            None
        }
        AmdOnlyKind::ExtrqImm => Some(Routine::Extrq),
        AmdOnlyKind::ExtrqReg => Some(Routine::ExtrqReg),
        AmdOnlyKind::InsertqImm => Some(Routine::Insertq),
        AmdOnlyKind::InsertqReg => Some(Routine::InsertqReg),
        AmdOnlyKind::Clzero => Some(Routine::Clzero),
        AmdOnlyKind::Rdpru => Some(Routine::Rdpru),
    };
    if let Some(r) = r {
        call_routine(ins, kind, r, routine(r), save_vectors, &mut v)?;
    }
    v.push(Instruction::with_branch(Code::Jmp_rel32_64, next).map_err(e)?);
    Ok(v)
}

/// Saves what the System V ABI lets `r` clobber (flags, rax..r11, and every xmm when
/// `save_vectors`) below the red zone, passes the operands, calls `r` at `at` and restores
/// everything but the results.
fn call_routine(
    ins: &Instruction,
    kind: AmdOnlyKind,
    r: Routine,
    at: u64,
    save_vectors: bool,
    v: &mut Vec<Instruction>,
) -> Result<(), RelinkError> {
    let sse4a = !matches!(r, Routine::Clzero | Routine::Rdpru);
    let dst = if sse4a {
        ins.op0_register()
    } else {
        Register::None
    };
    let src = (sse4a && ins.op_count() > 1 && ins.op_kind(1) == OpKind::Register)
        .then(|| ins.op1_register());
    let (len, idx) = match kind {
        AmdOnlyKind::ExtrqImm | AmdOnlyKind::InsertqImm => (ins.immediate8(), ins.immediate8_2nd()),
        _ => (0, 0),
    };
    let i2 = |c: Code, a: Register, m: MemoryOperand| Instruction::with2(c, a, m);
    let rr = |c: Code, a: Register, b: Register| Instruction::with2(c, a, b).map_err(e);
    v.push(i2(Code::Lea_r64_m, Register::RSP, mem(Register::RSP, -128)).map_err(e)?);
    v.push(Instruction::with(Code::Pushfq));
    for r in SAVED {
        v.push(Instruction::with1(Code::Push_r64, r).map_err(e)?);
    }
    v.push(rr(Code::Mov_r64_rm64, Register::RBP, Register::RSP)?);
    v.push(Instruction::with2(Code::And_rm64_imm8, Register::RSP, -16i32).map_err(e)?);
    v.push(Instruction::with2(Code::Sub_rm64_imm32, Register::RSP, 288i32).map_err(e)?);
    for (i, x) in XMM.iter().enumerate().filter(|_| save_vectors) {
        v.push(
            Instruction::with2(
                Code::Movdqu_xmmm128_xmm,
                mem(Register::RSP, 32 + 16 * i as i64),
                *x,
            )
            .map_err(e)?,
        );
    }
    match r {
        Routine::Clzero => {
            // 0x67 (32-bit addressing) takes EAX zero-extended.
            if ins.code() == Code::Clzerod {
                v.push(rr(Code::Mov_r32_rm32, Register::EDI, Register::EAX)?);
            } else {
                v.push(rr(Code::Mov_r64_rm64, Register::RDI, Register::RAX)?);
            }
        }
        Routine::Rdpru => {
            v.push(Instruction::with(Code::Rdtsc));
            v.push(Instruction::with2(Code::Shl_rm64_imm8, Register::RDX, 32u32).map_err(e)?);
            v.push(rr(Code::Or_r64_rm64, Register::RDX, Register::RAX)?);
            v.push(rr(Code::Mov_r64_rm64, Register::RSI, Register::RDX)?);
            v.push(rr(Code::Mov_r64_rm64, Register::RDI, Register::RBP)?);
        }
        _ => {
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
            v.push(rr(Code::Mov_r64_rm64, Register::RDI, Register::RSP)?);
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
        }
    }
    v.push(Instruction::with_branch(Code::Call_rel32_64, at).map_err(e)?);
    for (i, x) in XMM.iter().enumerate().filter(|_| save_vectors) {
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
    if sse4a {
        v.push(
            Instruction::with2(Code::Movdqu_xmm_xmmm128, dst, mem(Register::RSP, 0)).map_err(e)?,
        );
    }
    v.push(rr(Code::Mov_r64_rm64, Register::RSP, Register::RBP)?);
    for r in SAVED.iter().rev() {
        v.push(Instruction::with1(Code::Pop_r64, *r).map_err(e)?);
    }
    v.push(Instruction::with(Code::Popfq));
    v.push(i2(Code::Lea_r64_m, Register::RSP, mem(Register::RSP, 128)).map_err(e)?);
    Ok(())
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
        let body = stub(ins, routine, r.uses_vector_registers)?;
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

/// The bytes site `ins` becomes when lowered the [`Lowering::of`] way: its in-place form,
/// a `jmp` to `stub`, or the trap (then `int3` to its length; only the trap's address
/// matters, the handler resumes at `stub`). Same length as the instruction.
pub fn site_bytes(ins: &Instruction, stub: Option<u64>) -> Result<Vec<u8>, RelinkError> {
    let need = || RelinkError::Encode(format!("{:#x}: lowered site without a stub", ins.ip()));
    let len = ins.len() as u8;
    match Lowering::of(ins) {
        Lowering::InPlace => in_place(ins).ok_or_else(need),
        Lowering::Jump => site_patch(ins.ip(), len, stub.ok_or_else(need)?),
        Lowering::Trap => {
            if ins.len() < LOWER_TRAP.len() {
                return Err(RelinkError::Encode(format!(
                    "{:#x}: a {}-byte site is too short even for the lowering trap",
                    ins.ip(),
                    ins.len()
                )));
            }
            stub.ok_or_else(need)?;
            let mut b = LOWER_TRAP.to_vec();
            b.resize(ins.len(), 0xCC);
            Ok(b)
        }
    }
}

/// The `PT_APS5_LOWER_TRAPS` segment's bytes for `(site, stub)` pairs: sorted by site.
pub fn trap_table(traps: &[(u64, u64)]) -> Vec<u8> {
    let mut t = traps.to_vec();
    t.sort_unstable();
    t.dedup_by_key(|x| x.0);
    let mut b = Vec::with_capacity(16 * t.len());
    for (site, stub) in t {
        b.extend(site.to_le_bytes());
        b.extend(stub.to_le_bytes());
    }
    b
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
        assert_eq!(r.offsets.len(), Routine::ALL.len());
        assert!(!r.text.is_empty());
    }
}
