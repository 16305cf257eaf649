//! Front end: decoded RDNA2 -> basic blocks (leaders at branch targets) -> IR regions.
//!
//! Only code reachable from the entry is decoded, so padding and the next kernel after
//! `s_endpgm` are never looked at. Every instruction either lowers exactly or fails with its
//! text, offset and "not supported yet".

use std::collections::{BTreeMap, BTreeSet};

use super::abi::TranslateError;
use super::ir::*;
use crate::disasm::{self, instruction_text};
use crate::meta::{Branch, meta};
use crate::operand::{Operand, Role, Value, operands};
use crate::{Decoded, Encoding, Family, Instruction, Target, decode_at_wave};

/// Decodes the reachable program and lowers it to IR; `mode` is the MODE register the program
/// starts with (`float::initial_mode`).
pub fn lower(code: &[u8], wave64: bool, mode: u32) -> Result<Body, TranslateError> {
    lower_at(code, 0, wave64, mode)
}

/// [`lower`] with the entry point `entry` bytes into `code`; block 0 is the entry's.
pub fn lower_at(
    code: &[u8],
    entry: usize,
    wave64: bool,
    mode: u32,
) -> Result<Body, TranslateError> {
    lower_with(code, entry, wave64, mode, None).map(|(b, _)| b)
}

/// [`lower`] for a vertex or pixel stage (single-lane waves): exports, interpolation and the
/// refusal of cross-lane operations (frontend/graphics.rs). Returns what the lowering learnt.
pub fn lower_graphics(
    code: &[u8],
    wave64: bool,
    mode: u32,
    gfx: graphics::GfxLower,
) -> Result<(Body, graphics::GfxLower), TranslateError> {
    let (body, g) = lower_with(code, 0, wave64, mode, Some(gfx))?;
    Ok((body, g.expect("graphics lowering state")))
}

fn lower_with(
    code: &[u8],
    entry: usize,
    wave64: bool,
    mode: u32,
    gfx: Option<graphics::GfxLower>,
) -> Result<(Body, Option<graphics::GfxLower>), TranslateError> {
    let Walk { insts, flow } = reachable(code, entry, wave64)?;
    let mut gfx = gfx;
    if let Some(g) = gfx.as_mut() {
        let (textures, sites) = image::plan(&insts, &flow, entry, wave64, g.user_sgprs)?;
        g.textures = textures;
        g.image_sites = sites;
    }
    let mut leaders = BTreeSet::from([entry]);
    let mut return_sites = Vec::new();
    for (&off, i) in &insts {
        if let Some(Branch::Direct {
            target,
            conditional,
            call: false,
        }) = meta(i, wave64).branch
        {
            leaders.insert(target as usize);
            if conditional {
                leaders.insert(off + i.len());
            }
        }
        match flow.get(&off) {
            Some(calls::Flow::Call { target }) => {
                leaders.insert(*target);
                leaders.insert(off + i.len());
                return_sites.push(off + i.len());
            }
            Some(calls::Flow::Jump { target }) => {
                leaders.insert(*target);
            }
            _ => {}
        }
        // A wave leaves the dispatcher at s_barrier and resumes after it (spirv.rs, `main`),
        // so the instruction after it starts a block.
        if i.name() == "s_barrier" {
            leaders.insert(off + i.len());
        }
    }
    // The entry's block first (block 0 is where the program starts), then by offset.
    let order: Vec<usize> = std::iter::once(entry)
        .chain(leaders.iter().copied().filter(|&o| o != entry))
        .collect();
    let index: BTreeMap<usize, usize> = order.iter().enumerate().map(|(k, &o)| (o, k)).collect();
    let mut body = Body {
        blocks: Vec::new(),
        values: 0,
        wave_lanes: if wave64 { 64 } else { 32 },
        mode,
    };
    let mut cx = Cx {
        wave64,
        mode,
        values: 0,
        stmts: Vec::new(),
        inst: 0,
        gfx,
        sdwa: None,
        flow,
    };
    for &start in &order {
        let mut regions: Vec<Region> = Vec::new();
        let mut group = Group::default();
        let mut off = start;
        let term = loop {
            let Some(inst) = insts.get(&off) else {
                return Err(TranslateError::program(format!(
                    "block at 0x{start:x} runs into 0x{off:x}, which is not reachable code"
                )));
            };
            let next = off + inst.len();
            cx.inst = off as u32;
            let text = || instruction_text(inst, &disasm_opts(wave64));
            let lowered = cx
                .inst_ir(inst)
                .map_err(|reason| TranslateError::at(off, text(), reason))?;
            match lowered {
                Lowered::Scalar(s) => {
                    group.flush(&mut regions);
                    push_scalar(&mut regions, s);
                }
                Lowered::Lanes(l) => group.add(&mut regions, l),
                Lowered::LaneSeq(ls) => {
                    for l in ls {
                        group.add(&mut regions, l);
                    }
                }
                Lowered::Term(s, t) => {
                    group.flush(&mut regions);
                    push_scalar(&mut regions, s);
                    let blk = |o: i64| {
                        index.get(&(o as usize)).copied().ok_or_else(|| {
                            TranslateError::at(off, text(), "branch target is not a block")
                        })
                    };
                    break match t {
                        Term::End => Terminator::End,
                        Term::Jump(o) => Terminator::Jump(blk(o)?),
                        Term::Branch(c, o) => Terminator::Branch {
                            cond: c,
                            taken: blk(o)?,
                            not_taken: blk(next as i64)?,
                        },
                        Term::Indirect(v) => Terminator::Indirect {
                            target: v,
                            sites: return_sites
                                .iter()
                                .map(|&o| Ok((o as u32, blk(o as i64)?)))
                                .collect::<Result<_, TranslateError>>()?,
                            inst: off as u32,
                        },
                    };
                }
            }
            if let Some(&k) = index.get(&next) {
                group.flush(&mut regions);
                break Terminator::Jump(k);
            }
            off = next;
        };
        body.blocks.push(Block {
            offset: start as u32,
            regions,
            term,
        });
    }
    body.values = cx.values;
    Ok((body, cx.gfx))
}

fn disasm_opts(wave64: bool) -> disasm::Options {
    disasm::Options {
        wave64,
        ..Default::default()
    }
}

fn push_scalar(regions: &mut Vec<Region>, s: Vec<Stmt>) {
    if s.is_empty() {
        return;
    }
    if let Some(Region::Scalar(prev)) = regions.last_mut() {
        prev.extend(s);
    } else {
        regions.push(Region::Scalar(s));
    }
}

/// Decodes the reachable program only (what [`lower`] walks first) and returns the number of
/// instructions: the decode-alone limit of `examples/bench_translate.rs`.
pub fn decode_reachable(code: &[u8], wave64: bool) -> Result<usize, TranslateError> {
    reachable(code, 0, wave64).map(|w| w.insts.len())
}

/// The bytes the program occupies: from the entry to the end of its last reachable
/// instruction (None when the walk fails). A driver that reads a program of unknown size
/// (64 KiB, whatever follows it in memory) keys and records only these bytes, so what
/// follows the program cannot make the same program look new.
pub fn reachable_bytes(code: &[u8], wave64: bool) -> Option<usize> {
    let w = reachable(code, 0, wave64).ok()?;
    w.insts.iter().map(|(off, i)| off + i.len()).max()
}

/// The reachable program: its instructions by offset, and what the walk resolved of the
/// instructions that move the PC through registers (calls.rs).
struct Walk {
    insts: BTreeMap<usize, Instruction>,
    flow: BTreeMap<usize, calls::Flow>,
}

/// Walks the code from the entry, following branches and calls, and decodes each reachable
/// instruction.
///
/// A call keeps what the walk knows of the registers its callee never writes (compilers keep
/// a call target in a register across calls), so the walk runs in rounds: each round's
/// callees' write sets (calls.rs, `callee_writes`) serve the next, until they settle.
fn reachable(code: &[u8], entry: usize, wave64: bool) -> Result<Walk, TranslateError> {
    let mut clobbers = BTreeMap::new();
    for _ in 0..16 {
        let (walk, unresolved) = walk_once(code, entry, wave64, &clobbers)?;
        let next = calls::callee_writes(&walk, &unresolved, wave64);
        if next == clobbers {
            if let Some(&off) = unresolved.first() {
                return Err(TranslateError::at(
                    off,
                    instruction_text(&walk.insts[&off], &disasm_opts(wave64)),
                    "call through registers whose value is not code base + a constant \
                     (code from user data): not supported yet",
                ));
            }
            return Ok(walk);
        }
        clobbers = next;
    }
    Err(TranslateError::program(
        "the call graph's register write sets did not settle in 16 rounds",
    ))
}

/// One walk; `clobbers` says which SGPRs each callee (by entry offset) may write (a callee
/// not in it may write any). Returns the walk and the calls it could not resolve.
fn walk_once(
    code: &[u8],
    entry: usize,
    wave64: bool,
    clobbers: &BTreeMap<usize, BTreeSet<u16>>,
) -> Result<(Walk, Vec<usize>), TranslateError> {
    let mut out = BTreeMap::new();
    let mut flow = BTreeMap::new();
    let mut unresolved = Vec::new();
    let mut work = vec![(entry, calls::PcState::default())];
    let after_call = |pc: &mut calls::PcState, target: Option<usize>| match target
        .and_then(|t| clobbers.get(&t))
    {
        Some(w) => pc.forget(w),
        None => *pc = calls::PcState::default(),
    };
    while let Some((mut off, mut pc)) = work.pop() {
        loop {
            if out.contains_key(&off) {
                break;
            }
            if off >= code.len() {
                return Err(TranslateError::program(format!(
                    "control reaches 0x{off:x}, past the end of the program ({} bytes) without s_endpgm",
                    code.len()
                )));
            }
            let inst = match decode_at_wave(code, off, Target::Gfx1030, wave64) {
                Decoded::Inst(i) => i,
                Decoded::Unsupported(u) => {
                    let words: Vec<String> = u
                        .words
                        .to_vec()
                        .iter()
                        .map(|w| format!("0x{w:08x}"))
                        .collect();
                    return Err(TranslateError::at(
                        off,
                        words.join(" "),
                        format!("invalid instruction encoding: {}", u.reason),
                    ));
                }
            };
            let m = meta(&inst, wave64);
            let len = inst.len();
            out.insert(off, inst);
            let inst = &out[&off];
            let name = inst.name();
            let text = || instruction_text(inst, &disasm_opts(wave64));
            let check = |target: i64, what: &str| -> Result<usize, TranslateError> {
                if target < 0 || target as usize >= code.len() || target % 4 != 0 {
                    return Err(TranslateError::at(
                        off,
                        text(),
                        format!(
                            "{what} target {target} lies outside the program ({} bytes)",
                            code.len()
                        ),
                    ));
                }
                Ok(target as usize)
            };
            match m.branch {
                Some(Branch::End) => break,
                Some(Branch::Direct {
                    target,
                    conditional,
                    call,
                }) => {
                    let target = check(target, if call { "call" } else { "branch" })?;
                    if call {
                        // The callee starts knowing nothing.
                        flow.insert(off, calls::Flow::Call { target });
                        work.push((target, calls::PcState::default()));
                        after_call(&mut pc, Some(target));
                    } else {
                        work.push((target, pc.clone()));
                        if !conditional {
                            break;
                        }
                    }
                }
                Some(Branch::Indirect) => {
                    let target = pc.target(inst, wave64);
                    match (name, target) {
                        ("s_swappc_b64", Some(t)) => {
                            let target = check(t, "call")?;
                            flow.insert(off, calls::Flow::Call { target });
                            work.push((target, calls::PcState::default()));
                            after_call(&mut pc, Some(target));
                        }
                        ("s_swappc_b64", None) => {
                            // Refused once the walk settles, unless a later round resolves it.
                            unresolved.push(off);
                            after_call(&mut pc, None);
                        }
                        ("s_setpc_b64", Some(t)) => {
                            let target = check(t, "jump")?;
                            flow.insert(off, calls::Flow::Jump { target });
                            work.push((target, pc.clone()));
                            break;
                        }
                        ("s_setpc_b64", None) => {
                            flow.insert(off, calls::Flow::Return);
                            break;
                        }
                        _ => {
                            return Err(TranslateError::at(
                                off,
                                text(),
                                format!("{name} {UNSUPPORTED}"),
                            ));
                        }
                    }
                }
                None => pc.step(inst, off, wave64),
            }
            off += len;
        }
    }
    unresolved.sort_unstable();
    Ok((Walk { insts: out, flow }, unresolved))
}

/// Lane instructions waiting to be put into one [`Region::Lanes`].
#[derive(Default)]
struct Group {
    body: Vec<Stmt>,
    masks: Vec<SReg>,
    has_mem: bool,
    has_mem_write: bool,
}

impl Group {
    fn flush(&mut self, regions: &mut Vec<Region>) {
        if !self.body.is_empty() || !self.masks.is_empty() {
            regions.push(Region::Lanes {
                body: std::mem::take(&mut self.body),
                masks: std::mem::take(&mut self.masks),
            });
        }
        self.has_mem = false;
        self.has_mem_write = false;
    }

    /// Adds one lane instruction, starting a new region where running it lane after lane
    /// together with the group would differ from running each instruction for all lanes:
    /// a uniform read of a lane mask the group builds, or memory traffic that another lane of
    /// the group could observe (any write together with any other access).
    fn add(&mut self, regions: &mut Vec<Region>, l: LaneInst) {
        let reads_group_mask = l
            .uniform_reads
            .iter()
            .any(|r| self.masks.iter().any(|m| *r == *m || *r == *m + 1));
        let mem_conflict = l
            .mem
            .is_some_and(|w| self.has_mem && (w || self.has_mem_write));
        if reads_group_mask || mem_conflict || l.cross_lane {
            self.flush(regions);
        }
        self.body.extend(l.stmts);
        for m in l.masks {
            if !self.masks.contains(&m) {
                self.masks.push(m);
            }
        }
        if let Some(w) = l.mem {
            self.has_mem = true;
            self.has_mem_write |= w;
        }
        // EXEC changes which lanes run what follows; a cross-lane read must see every lane's
        // earlier results and no later ones.
        if l.writes_exec || l.cross_lane {
            self.flush(regions);
        }
    }
}

/// One lowered lane instruction.
struct LaneInst {
    stmts: Vec<Stmt>,
    masks: Vec<SReg>,
    uniform_reads: Vec<SReg>,
    mem: Option<bool>,
    writes_exec: bool,
    cross_lane: bool,
}

enum Term {
    End,
    Jump(i64),
    Branch(ValueId, i64),
    /// To the return site whose address the u64 value is (calls.rs).
    Indirect(ValueId),
}

enum Lowered {
    Scalar(Vec<Stmt>),
    Lanes(LaneInst),
    /// Lane runs that must each see every lane's results of the one before (cross-lane
    /// instructions: copy the source, then read other lanes' copies).
    LaneSeq(Vec<LaneInst>),
    Term(Vec<Stmt>, Term),
}

type R<T> = Result<T, String>;

/// Lowering state: the value counter and the statements of the instruction being lowered.
struct Cx {
    wave64: bool,
    /// The MODE register (constant: writes that change it are refused).
    mode: u32,
    values: u32,
    stmts: Vec<Stmt>,
    inst: u32,
    /// Vertex/pixel stage state (None for compute).
    gfx: Option<graphics::GfxLower>,
    /// The SDWA destination controls of the instruction being lowered (alu.rs).
    sdwa: Option<alu::SdwaDst>,
    /// Calls and jumps through registers, as the walk resolved them (calls.rs).
    flow: BTreeMap<usize, calls::Flow>,
}

const UNSUPPORTED: &str = "not supported yet";

/// How a source is read.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// 32-bit integer bits.
    B32,
    /// 64-bit integer bits.
    B64,
    /// 32-bit float (modifiers apply).
    F32,
    /// 64-bit float (modifiers apply).
    F64,
}

impl Cx {
    fn emit(&mut self, ty: Option<Ty>, op: Op) -> ValueId {
        let id = ValueId(self.values);
        let def = ty.map(|t| {
            self.values += 1;
            (id, t)
        });
        self.stmts.push(Stmt {
            def,
            op,
            inst: self.inst,
        });
        id
    }
    fn val(&mut self, ty: Ty, op: Op) -> ValueId {
        self.emit(Some(ty), op)
    }
    fn eff(&mut self, op: Op) {
        self.emit(None, op);
    }
    fn c32(&mut self, c: u32) -> ValueId {
        self.val(Ty::U32, Op::Const(c))
    }
    fn bin(&mut self, ty: Ty, op: BinOp, a: ValueId, b: ValueId) -> ValueId {
        self.val(ty, Op::Bin(op, a, b))
    }
    fn un(&mut self, ty: Ty, op: UnOp, a: ValueId) -> ValueId {
        self.val(ty, Op::Un(op, a))
    }
    fn cmp(&mut self, op: CmpOp, a: ValueId, b: ValueId) -> ValueId {
        self.val(Ty::Bool, Op::Cmp(op, a, b))
    }
    fn lanes(&self) -> u32 {
        if self.wave64 { 64 } else { 32 }
    }

    /// Reads scalar register `r` (u32); null reads 0.
    fn read_s(&mut self, r: SReg) -> ValueId {
        if r == 125 {
            return self.c32(0);
        }
        self.val(Ty::U32, Op::ReadS(r))
    }
    fn read_s64(&mut self, r: SReg) -> ValueId {
        let lo = self.read_s(r);
        let hi = self.read_s(r + 1);
        self.val(Ty::U64, Op::Pack64(lo, hi))
    }
    fn write_s(&mut self, r: SReg, v: ValueId) {
        if r != 125 {
            self.eff(Op::WriteS(r, v));
        }
    }
    fn write_s64(&mut self, r: SReg, v: ValueId) {
        let lo = self.un(Ty::U32, UnOp::Lo, v);
        let hi = self.un(Ty::U32, UnOp::Hi, v);
        self.write_s(r, lo);
        self.write_s(r + 1, hi);
    }
    fn write_scc(&mut self, b: ValueId) {
        self.eff(Op::WriteScc(b));
    }
    /// SCC = (v != 0) for a u32 or u64 result.
    fn scc_nonzero(&mut self, v: ValueId, wide: bool) {
        let z = if wide {
            self.val(Ty::U64, Op::Const64(0))
        } else {
            self.c32(0)
        };
        let b = self.cmp(CmpOp::Ne, v, z);
        self.write_scc(b);
    }

    /// The scalar register an operand names (its low half), for writes and mask reads.
    fn sreg_of(&self, v: &Value) -> R<SReg> {
        Ok(match *v {
            Value::Sgpr { first, .. } => first,
            Value::Vcc { hi, .. } => VCC_LO + hi as u16,
            Value::Exec { hi, .. } => EXEC_LO + hi as u16,
            Value::M0 => M0,
            Value::Null => 125,
            _ => return Err(format!("operand {v:?} {UNSUPPORTED}")),
        })
    }

    /// Reads a source operand as `kind`, applying abs/neg for floats.
    fn src(&mut self, o: &Operand, kind: Kind) -> R<ValueId> {
        let wide = matches!(kind, Kind::B64 | Kind::F64);
        let raw = match o.value {
            Value::Sgpr { .. }
            | Value::Vcc { .. }
            | Value::Exec { .. }
            | Value::M0
            | Value::Null => {
                let r = self.sreg_of(&o.value)?;
                if wide {
                    self.read_s64(r)
                } else {
                    self.read_s(r)
                }
            }
            Value::Vgpr { .. } if o.dpp => {
                if wide {
                    return Err(format!("DPP on a 64-bit operand {UNSUPPORTED}"));
                }
                self.val(Ty::U32, Op::ReadV(alu::DPP_VALUE))
            }
            Value::Vgpr { first, .. } => {
                let lo = self.val(Ty::U32, Op::ReadV(first));
                if wide {
                    let hi = self.val(Ty::U32, Op::ReadV(first + 1));
                    self.val(Ty::U64, Op::Pack64(lo, hi))
                } else {
                    lo
                }
            }
            Value::InlineInt(i) => {
                if wide {
                    self.val(Ty::U64, Op::Const64(i as i64 as u64))
                } else {
                    self.c32(i as u32)
                }
            }
            Value::InlineFloat(f) => match kind {
                Kind::F64 => self.val(Ty::U64, Op::Const64(f.to_bits())),
                // Inline constants of 64-bit integer operands are the f64 bits as well.
                Kind::B64 => self.val(Ty::U64, Op::Const64(f.to_bits())),
                _ => self.c32((f as f32).to_bits()),
            },
            Value::Literal(l) | Value::Imm(l) => {
                if wide {
                    return Err(format!(
                        "a 32-bit literal in a 64-bit operand {UNSUPPORTED}"
                    ));
                }
                self.c32(l)
            }
            Value::Special(s) => return Err(format!("special source {s} {UNSUPPORTED}")),
            Value::Ttmp { .. } => return Err(format!("trap temporaries {UNSUPPORTED}")),
        };
        let raw = if self.sdwa.is_some() {
            if o.sdwa_sel != 6 && kind != Kind::B32 {
                return Err(format!(
                    "SDWA sub-dword select of a {}-bit or float operand {UNSUPPORTED}",
                    if wide { 64 } else { 32 }
                ));
            }
            self.sdwa_select(raw, o.sdwa_sel, o.sext)
        } else {
            if o.sext {
                return Err(format!("sext modifier {UNSUPPORTED}"));
            }
            raw
        };
        match kind {
            Kind::B32 | Kind::B64 => {
                if o.abs || o.neg {
                    return Err(format!("abs/neg on an integer operand {UNSUPPORTED}"));
                }
                Ok(raw)
            }
            Kind::F32 | Kind::F64 => {
                let ft = if kind == Kind::F32 { Ty::F32 } else { Ty::F64 };
                let mut f = self.un(ft, UnOp::Bitcast, raw);
                if o.abs {
                    f = self.un(ft, UnOp::FAbs, f);
                }
                if o.neg {
                    f = self.un(ft, UnOp::FNeg, f);
                }
                Ok(f)
            }
        }
    }

    /// The lane bit of a mask operand (VCC or an SGPR pair).
    fn mask_bit(&mut self, o: &Operand) -> R<ValueId> {
        let r = self.sreg_of(&o.value)?;
        Ok(self.val(Ty::Bool, Op::ReadMaskBit(r)))
    }

    fn inst_ir(&mut self, inst: &Instruction) -> R<Lowered> {
        self.stmts.clear();
        if self.gfx.is_some()
            && let Some(l) = self.graphics_inst(inst)?
        {
            return Ok(l);
        }
        match inst.encoding {
            Encoding::Plain => {}
            Encoding::Sdwa => return self.sdwa_inst(inst),
            Encoding::Dpp16 | Encoding::Dpp8 { .. } => return self.dpp_inst(inst),
        }
        if let Some(l) = self.pc_inst(inst) {
            return l;
        }
        match inst.family {
            Family::Sop1 | Family::Sop2 | Family::Sopk | Family::Sopc => {
                self.salu(inst)?;
                Ok(Lowered::Scalar(std::mem::take(&mut self.stmts)))
            }
            Family::Sopp => self.sopp(inst),
            Family::Smem => {
                self.smem(inst)?;
                Ok(Lowered::Scalar(std::mem::take(&mut self.stmts)))
            }
            Family::Vop1 | Family::Vop2 | Family::Vop3 | Family::Vopc => self.valu(inst),
            Family::Vop3p => self.vop3p(inst),
            Family::Flat => self.flat(inst),
            Family::Ds => self.ds(inst),
            Family::Mubuf if inst.name().starts_with("buffer_gl") => {
                // Cache invalidations: host memory is coherent at the barrier's semantics.
                Ok(Lowered::Scalar(Vec::new()))
            }
            Family::Mubuf | Family::Mtbuf => self.mubuf(inst),
            Family::Mimg => self.mimg(inst),
            f => Err(format!("{} instructions {UNSUPPORTED}", f.name())),
        }
    }

    fn sopp(&mut self, inst: &Instruction) -> R<Lowered> {
        let name = inst.name();
        let simm = inst.words.get(0) & 0xFFFF;
        let target = inst.offset as i64 + 4 + 4 * (simm as i16 as i64);
        let scalar = |s: &mut Cx| Ok(Lowered::Scalar(std::mem::take(&mut s.stmts)));
        match name {
            "s_nop" | "s_waitcnt" | "s_clause" | "s_inst_prefetch" | "s_sleep" | "s_dcache_inv"
            | "s_icache_inv" | "s_setprio" | "s_ttracedata" => scalar(self),
            "s_barrier" => {
                self.eff(Op::Barrier);
                scalar(self)
            }
            "s_round_mode" | "s_denorm_mode" => {
                self.mode_sopp(name, simm)?;
                scalar(self)
            }
            "s_endpgm" => Ok(Lowered::Term(Vec::new(), Term::End)),
            "s_branch" => Ok(Lowered::Term(Vec::new(), Term::Jump(target))),
            "s_cbranch_scc0" | "s_cbranch_scc1" => {
                let scc = self.val(Ty::Bool, Op::ReadScc);
                let c = if name == "s_cbranch_scc0" {
                    self.un(Ty::Bool, UnOp::Not, scc)
                } else {
                    scc
                };
                Ok(Lowered::Term(
                    std::mem::take(&mut self.stmts),
                    Term::Branch(c, target),
                ))
            }
            "s_cbranch_vccz" | "s_cbranch_vccnz" | "s_cbranch_execz" | "s_cbranch_execnz" => {
                let r = if name.contains("vcc") {
                    VCC_LO
                } else {
                    EXEC_LO
                };
                let v = if self.wave64 {
                    self.read_s64(r)
                } else {
                    self.read_s(r)
                };
                let z = if self.wave64 {
                    self.val(Ty::U64, Op::Const64(0))
                } else {
                    self.c32(0)
                };
                let op = if name.ends_with("nz") {
                    CmpOp::Ne
                } else {
                    CmpOp::Eq
                };
                let c = self.cmp(op, v, z);
                Ok(Lowered::Term(
                    std::mem::take(&mut self.stmts),
                    Term::Branch(c, target),
                ))
            }
            _ => Err(UNSUPPORTED.into()),
        }
    }

    fn smem(&mut self, inst: &Instruction) -> R<()> {
        let name = inst.name();
        let dwords = match name {
            "s_load_dword" => 1,
            "s_load_dwordx2" => 2,
            "s_load_dwordx4" => 4,
            "s_load_dwordx8" => 8,
            "s_load_dwordx16" => 16,
            "s_buffer_load_dword" => return self.s_buffer_load(inst, 1),
            "s_buffer_load_dwordx2" => return self.s_buffer_load(inst, 2),
            "s_buffer_load_dwordx4" => return self.s_buffer_load(inst, 4),
            "s_buffer_load_dwordx8" => return self.s_buffer_load(inst, 8),
            "s_buffer_load_dwordx16" => return self.s_buffer_load(inst, 16),
            _ => return Err(UNSUPPORTED.into()),
        };
        let w0 = inst.words.get(0);
        let w1 = inst.words.get(1);
        let sbase = ((w0 & 0x3F) << 1) as SReg;
        let sdata = ((w0 >> 6) & 0x7F) as SReg;
        let imm = ((w1 & 0x1F_FFFF) << 11) as i32 >> 11;
        let soff = (w1 >> 25) as SReg;
        let base = self.read_s64(sbase);
        let mut off = self.c32(imm as u32);
        if soff != 125 {
            let s = self.read_s(soff);
            off = self.bin(Ty::U32, BinOp::Add, off, s);
        }
        // The 32-bit offset sign-extends into the 64-bit address; SMEM ignores the low 2 bits.
        let c31 = self.c32(31);
        let hi = self.bin(Ty::U32, BinOp::ShrI, off, c31);
        let off64 = self.val(Ty::U64, Op::Pack64(off, hi));
        let addr = self.bin(Ty::U64, BinOp::Add, base, off64);
        let mask = self.val(Ty::U64, Op::Const64(!3));
        let addr = self.bin(Ty::U64, BinOp::And, addr, mask);
        let data = self.val(
            Ty::U32,
            Op::Load {
                space: Space::Guest,
                addr,
                dwords,
            },
        );
        for k in 0..dwords {
            let d = if dwords == 1 {
                data
            } else {
                self.val(Ty::U32, Op::Extract(data, k))
            };
            self.write_s(sdata + k as SReg, d);
        }
        Ok(())
    }

    fn salu(&mut self, inst: &Instruction) -> R<()> {
        let name = inst.name();
        let ops = operands(inst, self.wave64);
        let dst = ops.iter().find(|o| o.role == Role::Dst).copied();
        let srcs: Vec<Operand> = ops
            .iter()
            .filter(|o| o.role == Role::Src)
            .copied()
            .collect();
        let wide = name.ends_with("_b64") || name.ends_with("_u64") || name.ends_with("_i64");
        let k = if wide { Kind::B64 } else { Kind::B32 };
        let ty = if wide { Ty::U64 } else { Ty::U32 };
        let d = |s: &Self| -> R<SReg> {
            match &dst {
                Some(o) => s.sreg_of(&o.value),
                None => Err("missing destination".into()),
            }
        };
        let write = |s: &mut Self, v: ValueId| -> R<()> {
            let r = d(s)?;
            if wide {
                s.write_s64(r, v)
            } else {
                s.write_s(r, v)
            };
            Ok(())
        };
        // SOPK: the 16-bit immediate, sign-extended unless the opcode is unsigned.
        let simm = inst.words.get(0) & 0xFFFF;
        let simm_s = simm as u16 as i16 as i32 as u32;
        let base = name.trim_end_matches("_b32").trim_end_matches("_b64");
        match inst.family {
            Family::Sopc => {
                let (op, t) = cmp_of(name).ok_or(UNSUPPORTED)?;
                if name.starts_with("s_bitcmp") {
                    let a = self.src(&srcs[0], k)?;
                    let b = self.src(&srcs[1], Kind::B32)?;
                    let one = if wide {
                        self.val(Ty::U64, Op::Const64(1))
                    } else {
                        self.c32(1)
                    };
                    let sh = self.bin(ty, BinOp::ShrU, a, b);
                    let bit = self.bin(ty, BinOp::And, sh, one);
                    let zero = if wide {
                        self.val(Ty::U64, Op::Const64(0))
                    } else {
                        self.c32(0)
                    };
                    let c = self.cmp(op, bit, zero);
                    self.write_scc(c);
                    return Ok(());
                }
                let kk = if t == Ty::U64 { Kind::B64 } else { Kind::B32 };
                let a = self.src(&srcs[0], kk)?;
                let b = self.src(&srcs[1], kk)?;
                let c = self.cmp(op, a, b);
                self.write_scc(c);
                return Ok(());
            }
            Family::Sopk => {
                match name {
                    "s_movk_i32" => {
                        let v = self.c32(simm_s);
                        write(self, v)?;
                    }
                    "s_cmovk_i32" => {
                        let v = self.c32(simm_s);
                        let r = d(self)?;
                        let old = self.read_s(r);
                        let scc = self.val(Ty::Bool, Op::ReadScc);
                        let x = self.val(Ty::U32, Op::Select(scc, v, old));
                        self.write_s(r, x);
                    }
                    "s_addk_i32" => {
                        let r = d(self)?;
                        let a = self.read_s(r);
                        let b = self.c32(simm_s);
                        let s = self.bin(Ty::U32, BinOp::Add, a, b);
                        let ov = signed_overflow_add(self, a, b, s);
                        self.write_s(r, s);
                        self.write_scc(ov);
                    }
                    "s_mulk_i32" => {
                        let r = d(self)?;
                        let a = self.read_s(r);
                        let b = self.c32(simm_s);
                        let s = self.bin(Ty::U32, BinOp::Mul, a, b);
                        self.write_s(r, s);
                    }
                    "s_waitcnt_vscnt" | "s_waitcnt_vmcnt" | "s_waitcnt_expcnt"
                    | "s_waitcnt_lgkmcnt" => {}
                    "s_getreg_b32" | "s_setreg_b32" | "s_setreg_imm32_b32" => self.hwreg(inst)?,
                    _ if name.starts_with("s_cmpk_") => {
                        let (op, _) = cmp_of(name).ok_or(UNSUPPORTED)?;
                        // The compared SGPR is the SDST field (printed first), not a source.
                        let r = ((inst.words.get(0) >> 16) & 0x7F) as SReg;
                        let a = self.read_s(r);
                        let imm = if name.ends_with("_u32") { simm } else { simm_s };
                        let b = self.c32(imm);
                        let c = self.cmp(op, a, b);
                        self.write_scc(c);
                    }
                    _ => return Err(UNSUPPORTED.into()),
                }
                return Ok(());
            }
            _ => {}
        }
        match base {
            "s_mov" => {
                let v = self.src(&srcs[0], k)?;
                write(self, v)?;
            }
            "s_cmov" => {
                let v = self.src(&srcs[0], k)?;
                let r = d(self)?;
                let old = if wide {
                    self.read_s64(r)
                } else {
                    self.read_s(r)
                };
                let scc = self.val(Ty::Bool, Op::ReadScc);
                let x = self.val(ty, Op::Select(scc, v, old));
                write(self, x)?;
            }
            "s_not" => {
                let v = self.src(&srcs[0], k)?;
                let x = self.un(ty, UnOp::Not, v);
                write(self, x)?;
                self.scc_nonzero(x, wide);
            }
            "s_brev" => {
                if wide {
                    return Err(UNSUPPORTED.into());
                }
                let v = self.src(&srcs[0], k)?;
                let x = self.un(ty, UnOp::BitReverse, v);
                write(self, x)?;
            }
            "s_and" | "s_or" | "s_xor" | "s_andn2" | "s_orn2" | "s_nand" | "s_nor" | "s_xnor" => {
                let a = self.src(&srcs[0], k)?;
                let mut b = self.src(&srcs[1], k)?;
                if base.ends_with("n2") {
                    b = self.un(ty, UnOp::Not, b);
                }
                let op = match base {
                    "s_and" | "s_andn2" | "s_nand" => BinOp::And,
                    "s_or" | "s_orn2" | "s_nor" => BinOp::Or,
                    _ => BinOp::Xor,
                };
                let mut x = self.bin(ty, op, a, b);
                if matches!(base, "s_nand" | "s_nor" | "s_xnor") {
                    x = self.un(ty, UnOp::Not, x);
                }
                write(self, x)?;
                self.scc_nonzero(x, wide);
            }
            "s_and_saveexec" | "s_or_saveexec" | "s_xor_saveexec" | "s_andn2_saveexec"
            | "s_orn2_saveexec" | "s_nand_saveexec" | "s_nor_saveexec" | "s_xnor_saveexec"
            | "s_andn1_saveexec" | "s_orn1_saveexec" => {
                // D = EXEC; EXEC = S0 op EXEC (n1: ~S0, n2: ~EXEC); SCC = EXEC != 0.
                let s0 = self.src(&srcs[0], k)?;
                let exec = if wide {
                    self.read_s64(EXEC_LO)
                } else {
                    self.read_s(EXEC_LO)
                };
                let op = base.trim_end_matches("_saveexec");
                let a = if op.ends_with("n1") {
                    self.un(ty, UnOp::Not, s0)
                } else {
                    s0
                };
                let b = if op.ends_with("n2") {
                    self.un(ty, UnOp::Not, exec)
                } else {
                    exec
                };
                let bop = match op {
                    "s_and" | "s_andn2" | "s_andn1" | "s_nand" => BinOp::And,
                    "s_or" | "s_orn2" | "s_orn1" | "s_nor" => BinOp::Or,
                    _ => BinOp::Xor,
                };
                let mut x = self.bin(ty, bop, a, b);
                if matches!(op, "s_nand" | "s_nor" | "s_xnor") {
                    x = self.un(ty, UnOp::Not, x);
                }
                write(self, exec)?;
                if wide {
                    self.write_s64(EXEC_LO, x)
                } else {
                    self.write_s(EXEC_LO, x)
                }
                self.scc_nonzero(x, wide);
            }
            "s_lshl" | "s_lshr" | "s_ashr_i32" | "s_ashr_i64" => {
                let a = self.src(&srcs[0], k)?;
                let b = self.src(&srcs[1], Kind::B32)?;
                let op = match base {
                    "s_lshl" => BinOp::Shl,
                    "s_lshr" => BinOp::ShrU,
                    _ => BinOp::ShrI,
                };
                let x = self.bin(ty, op, a, b);
                write(self, x)?;
                self.scc_nonzero(x, wide);
            }
            "s_lshl1_add_u32" | "s_lshl2_add_u32" | "s_lshl3_add_u32" | "s_lshl4_add_u32" => {
                let n = name.as_bytes()[6] - b'0';
                let a = self.src(&srcs[0], k)?;
                let b = self.src(&srcs[1], k)?;
                let c = self.c32(n as u32);
                let sh = self.bin(Ty::U32, BinOp::Shl, a, c);
                let x = self.bin(Ty::U32, BinOp::Add, sh, b);
                // SCC = unsigned overflow of the shift or the add.
                let back = self.bin(Ty::U32, BinOp::ShrU, sh, c);
                let lost = self.cmp(CmpOp::Ne, back, a);
                let carry = self.cmp(CmpOp::LtU, x, sh);
                let scc = self.bin(Ty::Bool, BinOp::Or, lost, carry);
                write(self, x)?;
                self.write_scc(scc);
            }
            "s_add_u32" | "s_addc_u32" | "s_sub_u32" | "s_subb_u32" => {
                let a = self.src(&srcs[0], k)?;
                let b = self.src(&srcs[1], k)?;
                let a64 = self.un(Ty::U64, UnOp::Zext, a);
                let b64 = self.un(Ty::U64, UnOp::Zext, b);
                let op = if name.starts_with("s_add") {
                    BinOp::Add
                } else {
                    BinOp::Sub
                };
                let mut r = self.bin(Ty::U64, op, a64, b64);
                if name.starts_with("s_addc") || name.starts_with("s_subb") {
                    let scc = self.val(Ty::Bool, Op::ReadScc);
                    let c = self.un(Ty::U32, UnOp::BoolToU32, scc);
                    let c64 = self.un(Ty::U64, UnOp::Zext, c);
                    r = self.bin(Ty::U64, op, r, c64);
                }
                let lo = self.un(Ty::U32, UnOp::Lo, r);
                let hi = self.un(Ty::U32, UnOp::Hi, r);
                let carry = self.un(Ty::Bool, UnOp::U32ToBool, hi);
                write(self, lo)?;
                self.write_scc(carry);
            }
            "s_add_i32" | "s_sub_i32" => {
                let a = self.src(&srcs[0], k)?;
                let b = self.src(&srcs[1], k)?;
                let (x, ov) = if name == "s_add_i32" {
                    let x = self.bin(Ty::U32, BinOp::Add, a, b);
                    (x, signed_overflow_add(self, a, b, x))
                } else {
                    let x = self.bin(Ty::U32, BinOp::Sub, a, b);
                    // Overflow when the operands' signs differ and the result's sign is b's.
                    let t1 = self.bin(Ty::U32, BinOp::Xor, a, b);
                    let t2 = self.bin(Ty::U32, BinOp::Xor, a, x);
                    let t = self.bin(Ty::U32, BinOp::And, t1, t2);
                    let z = self.c32(0);
                    (x, self.cmp(CmpOp::LtI, t, z))
                };
                write(self, x)?;
                self.write_scc(ov);
            }
            "s_mul_i32" | "s_mul_hi_u32" | "s_mul_hi_i32" => {
                let a = self.src(&srcs[0], k)?;
                let b = self.src(&srcs[1], k)?;
                let op = match name {
                    "s_mul_i32" => BinOp::Mul,
                    "s_mul_hi_u32" => BinOp::MulHiU,
                    _ => BinOp::MulHiI,
                };
                let x = self.bin(Ty::U32, op, a, b);
                write(self, x)?;
            }
            "s_min_i32" | "s_min_u32" | "s_max_i32" | "s_max_u32" => {
                let a = self.src(&srcs[0], k)?;
                let b = self.src(&srcs[1], k)?;
                let (op, c) = match name {
                    "s_min_i32" => (BinOp::MinI, CmpOp::LtI),
                    "s_min_u32" => (BinOp::MinU, CmpOp::LtU),
                    "s_max_i32" => (BinOp::MaxI, CmpOp::GtI),
                    _ => (BinOp::MaxU, CmpOp::GtU),
                };
                let x = self.bin(Ty::U32, op, a, b);
                let scc = self.cmp(c, a, b);
                write(self, x)?;
                self.write_scc(scc);
            }
            "s_cselect" => {
                let a = self.src(&srcs[0], k)?;
                let b = self.src(&srcs[1], k)?;
                let scc = self.val(Ty::Bool, Op::ReadScc);
                let x = self.val(ty, Op::Select(scc, a, b));
                write(self, x)?;
            }
            "s_bcnt1_i32" | "s_bcnt0_i32" => {
                let mut v = self.src(&srcs[0], k)?;
                if base == "s_bcnt0_i32" {
                    v = self.un(ty, UnOp::Not, v);
                }
                let x = self.un(Ty::U32, UnOp::Popcount, v);
                write_u32(self, d(self)?, x);
                self.scc_nonzero(x, false);
            }
            "s_ff1_i32" | "s_ff0_i32" => {
                let mut v = self.src(&srcs[0], k)?;
                if base == "s_ff0_i32" {
                    v = self.un(ty, UnOp::Not, v);
                }
                let x = self.un(Ty::U32, UnOp::FindLsb, v);
                write_u32(self, d(self)?, x);
            }
            "s_flbit_i32" if !wide => {
                let v = self.src(&srcs[0], k)?;
                let x = self.un(Ty::U32, UnOp::FindMsbFromTop, v);
                write_u32(self, d(self)?, x);
            }
            "s_sext_i32_i8" | "s_sext_i32_i16" => {
                let v = self.src(&srcs[0], k)?;
                let n = if name.ends_with("i8") { 24 } else { 16 };
                let c = self.c32(n);
                let sh = self.bin(Ty::U32, BinOp::Shl, v, c);
                let x = self.bin(Ty::U32, BinOp::ShrI, sh, c);
                write(self, x)?;
            }
            "s_bfe_u32" | "s_bfe_i32" => {
                // S1[4:0] = offset, S1[22:16] = width.
                let a = self.src(&srcs[0], k)?;
                let b = self.src(&srcs[1], k)?;
                let x = bfe(self, a, b, name == "s_bfe_i32", true);
                write(self, x)?;
                self.scc_nonzero(x, false);
            }
            "s_bfm" if !wide => {
                // ((1 << S0[4:0]) - 1) << S1[4:0]
                let a = self.src(&srcs[0], k)?;
                let b = self.src(&srcs[1], k)?;
                let one = self.c32(1);
                let m = self.bin(Ty::U32, BinOp::Shl, one, a);
                let m = self.bin(Ty::U32, BinOp::Sub, m, one);
                let x = self.bin(Ty::U32, BinOp::Shl, m, b);
                write(self, x)?;
            }
            "s_abs_i32" => {
                let a = self.src(&srcs[0], k)?;
                let z = self.c32(0);
                let n = self.bin(Ty::U32, BinOp::Sub, z, a);
                let x = self.bin(Ty::U32, BinOp::MaxI, a, n);
                write(self, x)?;
                self.scc_nonzero(x, false);
            }
            _ => return Err(UNSUPPORTED.into()),
        }
        Ok(())
    }
}

fn write_u32(s: &mut Cx, r: SReg, v: ValueId) {
    s.write_s(r, v);
}

/// Signed overflow of a 32-bit add: operands' signs equal and the result's differs.
fn signed_overflow_add(s: &mut Cx, a: ValueId, b: ValueId, x: ValueId) -> ValueId {
    let t1 = s.bin(Ty::U32, BinOp::Xor, a, x);
    let t2 = s.bin(Ty::U32, BinOp::Xor, b, x);
    let t = s.bin(Ty::U32, BinOp::And, t1, t2);
    let z = s.c32(0);
    s.cmp(CmpOp::LtI, t, z)
}

/// Bit-field extract. `packed`: offset in b[4:0] and width in b[22:16] (SALU); otherwise
/// offset b and width c are separate (VALU v_bfe takes three sources; see `valu`).
fn bfe(s: &mut Cx, a: ValueId, b: ValueId, signed: bool, packed: bool) -> ValueId {
    let (off, width) = if packed {
        let m5 = s.c32(31);
        let off = s.bin(Ty::U32, BinOp::And, b, m5);
        let c16 = s.c32(16);
        let w = s.bin(Ty::U32, BinOp::ShrU, b, c16);
        let m7 = s.c32(0x7F);
        (off, s.bin(Ty::U32, BinOp::And, w, m7))
    } else {
        (a, b)
    };
    bfe_parts(s, a, off, width, signed)
}

/// (a >> off) & ((1 << width) - 1), sign-extended from `width` when signed; width 0 -> 0,
/// width >= 32 - off keeps every bit above `off`.
fn bfe_parts(s: &mut Cx, a: ValueId, off: ValueId, width: ValueId, signed: bool) -> ValueId {
    let m5 = s.c32(31);
    let off = s.bin(Ty::U32, BinOp::And, off, m5);
    // Shift the field to the top, then back down (arithmetic for signed).
    let c32 = s.c32(32);
    let top = s.bin(Ty::U32, BinOp::Sub, c32, off);
    let w = s.bin(Ty::U32, BinOp::MinU, width, top);
    let up = s.bin(Ty::U32, BinOp::Sub, top, w);
    let x = s.bin(Ty::U32, BinOp::Shl, a, up);
    let shift_total = s.bin(Ty::U32, BinOp::Add, up, off);
    let down_op = if signed { BinOp::ShrI } else { BinOp::ShrU };
    let x2 = s.bin(Ty::U32, down_op, x, shift_total);
    // Shifts by 32 are masked in IR, so handle width 0 explicitly.
    let z = s.c32(0);
    let is0 = s.cmp(CmpOp::Eq, w, z);
    // shift_total may be 32 when w = 0; the select hides that case.
    s.val(Ty::U32, Op::Select(is0, z, x2))
}

/// Comparison and operand type from an `s_cmp*` / `v_cmp*` mnemonic.
fn cmp_of(name: &str) -> Option<(CmpOp, Ty)> {
    let rest = name
        .trim_start_matches("s_cmpk_")
        .trim_start_matches("s_cmp_")
        .trim_start_matches("s_bitcmp")
        .trim_start_matches("v_cmpx_")
        .trim_start_matches("v_cmp_");
    let rest = rest.trim_end_matches("_e32").trim_end_matches("_e64");
    if name.starts_with("s_bitcmp") {
        let op = if rest.starts_with('0') {
            CmpOp::Eq
        } else {
            CmpOp::Ne
        };
        return Some((op, Ty::U32));
    }
    let (cond, ty) = rest.split_once('_')?;
    let ty = match ty {
        "i32" | "u32" => Ty::U32,
        "i64" | "u64" => Ty::U64,
        "f32" => Ty::F32,
        "f64" => Ty::F64,
        _ => return None,
    };
    let signed = rest.ends_with("_i32") || rest.ends_with("_i64");
    let float = matches!(ty, Ty::F32 | Ty::F64);
    let op = match (cond, float, signed) {
        ("eq", false, _) => CmpOp::Eq,
        ("lg" | "ne", false, _) => CmpOp::Ne,
        ("lt", false, false) => CmpOp::LtU,
        ("le", false, false) => CmpOp::LeU,
        ("gt", false, false) => CmpOp::GtU,
        ("ge", false, false) => CmpOp::GeU,
        ("lt", false, true) => CmpOp::LtI,
        ("le", false, true) => CmpOp::LeI,
        ("gt", false, true) => CmpOp::GtI,
        ("ge", false, true) => CmpOp::GeI,
        ("eq", true, _) => CmpOp::FEq,
        ("neq", true, _) => CmpOp::FNeq,
        ("lt", true, _) => CmpOp::FLt,
        ("le", true, _) => CmpOp::FLe,
        ("gt", true, _) => CmpOp::FGt,
        ("ge", true, _) => CmpOp::FGe,
        ("lg", true, _) => CmpOp::FLg,
        ("o", true, _) => CmpOp::FO,
        ("u", true, _) => CmpOp::FU,
        ("nge", true, _) => CmpOp::FNge,
        ("nle", true, _) => CmpOp::FNle,
        ("ngt", true, _) => CmpOp::FNgt,
        ("nlt", true, _) => CmpOp::FNlt,
        ("nlg", true, _) => CmpOp::FNlg,
        _ => return None,
    };
    Some((op, ty))
}

mod alu;
mod buffer;
mod calls;
mod crosslane;
pub mod graphics;
mod image;
mod memory;
mod packed;
mod vector;

/// Guest instructions that produced IR (distinct offsets).
pub fn count_instructions(body: &Body) -> u32 {
    let mut offs: Vec<u32> = body
        .blocks
        .iter()
        .flat_map(|b| {
            b.regions
                .iter()
                .flat_map(|r| r.stmts().iter().map(|s| s.inst))
        })
        .collect();
    offs.sort_unstable();
    offs.dedup();
    offs.len() as u32
}
