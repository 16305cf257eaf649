//! Image instructions (MIMG) in pixel shaders: the static trace of each instruction's T# and
//! S# to the user data or guest memory they come from (the texture plan a driver binds at
//! draw time), the lowering of `image_sample` / `_lz` / `_l`, and `s_wqm` in a one-lane wave
//! (docs/TRANSLATOR.md "Textures").
//!
//! The trace is a forward data-flow pass over the reachable instructions. Each SGPR holds
//! either "user SGPR n as the wave starts", "the dword at (pointer) + k" where the pointer is
//! itself a traced pair of SGPRs (an `s_load_dword*` with an immediate offset and no
//! SOFFSET), or nothing known. Copies (`s_mov_b32/_b64`) keep what is known; any other write
//! forgets. Paths meet by keeping what agrees. A T# (8 SGPRs) or S# (4 SGPRs) is traced when
//! its registers are consecutive dwords of one source; otherwise the instruction is refused.
//!
//! Implicit LOD: the hardware takes a sample's derivatives from the quad's four lanes (helper
//! lanes included, whatever their EXEC bit), the host from the fragment invocation's quad
//! (`OpImageSampleImplicitLod`). These agree when all four host invocations of the quad run
//! the sample together, which this pass proves as: no conditional branch and no call can run
//! before the instruction (straight-line code from the entry), and EXEC is the entry's there
//! (only `s_mov` copies of EXEC, `s_wqm exec, exec`, and `s_and exec, exec, <copy>` or `s_mov
//! exec, <copy>` write it, which is what LLVM's whole-quad-mode prologue emits). Any other
//! implicit-LOD sample is refused; `_lz` and `_l` take no derivatives and are not limited.

use std::rc::Rc;

use super::*;
use crate::translate::abi::{DescSource, Stage, TextureBinding};

/// What the trace knows of one SGPR.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Val {
    /// User SGPR n as the wave starts.
    User(u16),
    /// The dword at (64-bit value whose low dword is the inner value) + offset.
    Mem(Rc<Val>, i32),
    /// A copy of EXEC's low half as the wave starts.
    Exec,
}

impl Val {
    /// The value the next SGPR must hold for the two to be consecutive dwords of one source.
    fn next(&self) -> Option<Val> {
        match self {
            Val::User(n) => Some(Val::User(n + 1)),
            Val::Mem(p, o) => Some(Val::Mem(p.clone(), o.wrapping_add(4))),
            Val::Exec => None,
        }
    }
    fn depth(&self) -> u32 {
        match self {
            Val::Mem(p, _) => 1 + p.depth(),
            _ => 0,
        }
    }
    fn source(&self) -> Option<DescSource> {
        match self {
            Val::User(n) => Some(DescSource::UserData { sgpr: *n as u32 }),
            Val::Mem(p, o) => Some(DescSource::Memory {
                pointer: Box::new(p.source()?),
                offset: *o,
            }),
            Val::Exec => None,
        }
    }
}

/// Pointer loads followed at most this deep (the trace's lattice stays finite in loops).
const MAX_DEPTH: u32 = 8;

/// The trace's state before one instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
struct State {
    regs: BTreeMap<u16, Val>,
    /// Only unconditional flow from the entry leads here.
    straight: bool,
    /// EXEC's lane-0 bit is the entry's (see the module comment).
    exec_entry: bool,
}

impl State {
    fn unknown() -> State {
        State {
            regs: BTreeMap::new(),
            straight: false,
            exec_entry: false,
        }
    }
    /// Meets `o` into `self`; true when `self` changed.
    fn meet(&mut self, o: &State) -> bool {
        let before = self.clone();
        self.regs.retain(|r, v| o.regs.get(r) == Some(v));
        self.straight &= o.straight;
        self.exec_entry &= o.exec_entry;
        *self != before
    }
    /// The source of `n` consecutive dwords in s[r..r+n], if they are.
    fn run(&self, r: u16, n: u16) -> Option<Val> {
        let first = self.regs.get(&r)?.clone();
        let mut cur = first.clone();
        for k in 1..n {
            let next = cur.next()?;
            if self.regs.get(&(r + k)) != Some(&next) {
                return None;
            }
            cur = next;
        }
        Some(first)
    }
}

fn sgpr_of(o: &Operand) -> Option<u16> {
    match o.value {
        Value::Sgpr { first, .. } => Some(first),
        _ => None,
    }
}

fn is_exec(o: &Operand) -> bool {
    matches!(o.value, Value::Exec { hi: false, .. })
}

/// The state after `inst` (not a control transfer's successors; see [`plan`]).
fn step(st: &State, inst: &Instruction, wave64: bool) -> State {
    let mut out = st.clone();
    let name = inst.name();
    let m = meta(inst, wave64);
    let ops = operands(inst, wave64);
    let dst = ops.iter().find(|o| o.role == Role::Dst);
    let srcs: Vec<&Operand> = ops.iter().filter(|o| o.role == Role::Src).collect();
    let src_val = |i: usize| -> Option<Val> {
        let o = srcs.get(i)?;
        if is_exec(o) {
            return Some(Val::Exec);
        }
        st.regs.get(&sgpr_of(o)?).cloned()
    };
    // Values the instruction defines (kept after its writes are forgotten).
    let mut defs: Vec<(u16, Val)> = Vec::new();
    if inst.family == Family::Smem && name.starts_with("s_load_dword") {
        let w0 = inst.words.get(0);
        let w1 = inst.words.get(1);
        let sbase = ((w0 & 0x3F) << 1) as u16;
        let sdata = ((w0 >> 6) & 0x7F) as u16;
        let imm = ((w1 & 0x1F_FFFF) << 11) as i32 >> 11;
        let soff = (w1 >> 25) as u16;
        let n = m.writes.first().map_or(0, |r| r.count);
        if let Some(p) = st
            .run(sbase, 2)
            .filter(|p| soff == 125 && p.depth() < MAX_DEPTH)
        {
            let p = Rc::new(p);
            for k in 0..n {
                defs.push((
                    sdata + k,
                    Val::Mem(p.clone(), imm.wrapping_add(4 * k as i32)),
                ));
            }
        }
    }
    match (name, dst.and_then(sgpr_of)) {
        ("s_mov_b32", Some(d)) => defs.extend(src_val(0).map(|v| (d, v))),
        ("s_mov_b64", Some(d)) => {
            if let Some(o) = srcs.first().and_then(|o| sgpr_of(o)) {
                for k in 0..2 {
                    defs.extend(st.regs.get(&(o + k)).map(|v| (d + k, v.clone())));
                }
            } else if srcs.first().is_some_and(|o| is_exec(o)) {
                defs.push((d, Val::Exec));
            }
        }
        _ => {}
    }
    if m.writes_exec {
        let copy = |i: usize| src_val(i) == Some(Val::Exec);
        let keeps = dst.is_some_and(is_exec)
            && match name {
                "s_wqm_b32" | "s_wqm_b64" => copy(0),
                "s_and_b32" | "s_and_b64" => copy(0) && copy(1),
                "s_mov_b32" | "s_mov_b64" => copy(0),
                _ => false,
            };
        out.exec_entry &= keeps;
    }
    for w in &m.writes {
        if w.file == crate::meta::RegFile::Sgpr {
            for k in 0..w.count {
                out.regs.remove(&(w.first + k));
            }
        }
    }
    for (r, v) in defs {
        out.regs.insert(r, v);
    }
    out
}

/// MIMG fields (GFX10 encoding, as LLVM's MIMGe_gfx10 lays them out).
struct Mimg {
    nsa: u32,
    dim: u32,
    dmask: u32,
    unorm: bool,
    r128: bool,
    tfe: bool,
    lwe: bool,
    a16: bool,
    d16: bool,
    vdata: u16,
    srsrc: u16,
    ssamp: u16,
}

fn mimg_fields(inst: &Instruction) -> Mimg {
    let w0 = inst.words.get(0);
    let w1 = inst.words.get(1);
    Mimg {
        nsa: (w0 >> 1) & 3,
        dim: (w0 >> 3) & 7,
        dmask: (w0 >> 8) & 0xF,
        unorm: (w0 >> 12) & 1 != 0,
        r128: (w0 >> 15) & 1 != 0,
        tfe: (w0 >> 16) & 1 != 0,
        lwe: (w0 >> 17) & 1 != 0,
        a16: (w1 >> 30) & 1 != 0,
        d16: (w1 >> 31) & 1 != 0,
        vdata: ((w1 >> 8) & 0xFF) as u16,
        srsrc: (((w1 >> 16) & 0x1F) << 2) as u16,
        ssamp: (((w1 >> 21) & 0x1F) << 2) as u16,
    }
}

/// The address VGPRs of a MIMG instruction: consecutive from VADDR, or the NSA list.
fn mimg_addrs(inst: &Instruction, f: &Mimg, n: usize) -> Vec<u16> {
    let w1 = inst.words.get(1);
    let v0 = (w1 & 0xFF) as u16;
    if f.nsa == 0 {
        return (0..n as u16).map(|k| v0 + k).collect();
    }
    let mut v = vec![v0];
    for k in 1..n {
        let w = inst.words.get(2 + (k - 1) / 4);
        v.push(((w >> (8 * ((k - 1) % 4))) & 0xFF) as u16);
    }
    v
}

/// Image instruction offset -> (binding, implicit LOD allowed).
pub(super) type Sites = BTreeMap<u32, (u32, bool)>;

/// Builds the texture plan: bindings in order of the first instruction (by offset) using
/// each (T#, S#) pair, and each image instruction's (binding, quad-uniform) site. Refuses an
/// image instruction whose T# or S# the trace cannot name.
pub(super) fn plan(
    insts: &BTreeMap<usize, Instruction>,
    flow: &BTreeMap<usize, calls::Flow>,
    entry: usize,
    wave64: bool,
    user_sgprs: u32,
) -> Result<(Vec<TextureBinding>, Sites), TranslateError> {
    let mut bindings: Vec<TextureBinding> = Vec::new();
    let mut sites = BTreeMap::new();
    if !insts.values().any(|i| i.family == Family::Mimg) {
        return Ok((bindings, sites));
    }
    let entry_state = State {
        regs: (0..user_sgprs as u16).map(|n| (n, Val::User(n))).collect(),
        straight: true,
        exec_entry: true,
    };
    let mut before: BTreeMap<usize, State> = BTreeMap::from([(entry, entry_state)]);
    let mut work = vec![entry];
    while let Some(off) = work.pop() {
        let Some(inst) = insts.get(&off) else {
            continue;
        };
        let st = before[&off].clone();
        let next = off + inst.len();
        let after = step(&st, inst, wave64);
        let mut succ: Vec<(usize, State)> = Vec::new();
        match (flow.get(&off), meta(inst, wave64).branch) {
            (Some(calls::Flow::Call { target }), _) => {
                succ.push((*target, State::unknown()));
                succ.push((next, State::unknown()));
            }
            (Some(calls::Flow::Jump { target }), _) => succ.push((*target, after)),
            (Some(calls::Flow::Return), _) | (_, Some(Branch::End)) => {}
            (
                _,
                Some(Branch::Direct {
                    target,
                    conditional,
                    call,
                }),
            ) => {
                if call {
                    succ.push((target as usize, State::unknown()));
                    succ.push((next, State::unknown()));
                } else if conditional {
                    let mut a = after;
                    a.straight = false;
                    succ.push((target as usize, a.clone()));
                    succ.push((next, a));
                } else {
                    succ.push((target as usize, after));
                }
            }
            _ => succ.push((next, after)),
        }
        for (t, s) in succ {
            match before.get_mut(&t) {
                Some(b) => {
                    if b.meet(&s) {
                        work.push(t);
                    }
                }
                None => {
                    before.insert(t, s);
                    work.push(t);
                }
            }
        }
    }
    let text = |i: &Instruction| instruction_text(i, &disasm_opts(wave64));
    for (&off, inst) in insts {
        if inst.family != Family::Mimg {
            continue;
        }
        let Some(st) = before.get(&off) else {
            continue;
        };
        let f = mimg_fields(inst);
        let traced = |r: u16, n: u16, what: &str| {
            st.run(r, n).and_then(|v| v.source()).ok_or_else(|| {
                TranslateError::at(
                    off,
                    text(inst),
                    format!(
                        "the {what} in s[{r}:{}] cannot be traced to user data or to a load \
                         from a pointer in user data (+ constant offset); the draw could not \
                         bind it",
                        r + n - 1
                    ),
                )
            })
        };
        let image = traced(f.srsrc, 8, "T# (image descriptor)")?;
        let sampler = traced(f.ssamp, 4, "S# (sampler descriptor)")?;
        let binding = match bindings
            .iter()
            .position(|b| b.image == image && b.sampler == sampler)
        {
            Some(k) => k,
            None => {
                bindings.push(TextureBinding {
                    binding: bindings.len() as u32,
                    image,
                    sampler,
                    sites: Vec::new(),
                });
                bindings.len() - 1
            }
        };
        bindings[binding].sites.push(off as u32);
        sites.insert(off as u32, (binding as u32, st.straight && st.exec_entry));
    }
    Ok((bindings, sites))
}

impl Cx {
    /// `s_wqm_b32/_b64` in a one-lane wave: the exact bit operation (each 4-bit group that
    /// has a bit set becomes 0xF), SCC = result != 0. The quad's helper lanes are the host's
    /// helper invocations, which run the same program (see the module comment).
    pub(super) fn wqm(&mut self, inst: &Instruction) -> R<Lowered> {
        let wide = inst.name() == "s_wqm_b64";
        let ops = operands(inst, self.wave64);
        let src = ops
            .iter()
            .find(|o| o.role == Role::Src)
            .ok_or("s_wqm without a source")?;
        let dst = ops
            .iter()
            .find(|o| o.role == Role::Dst)
            .ok_or("s_wqm without a destination")?;
        let d = self.sreg_of(&dst.value)?;
        let ty = if wide { Ty::U64 } else { Ty::U32 };
        let (one, f) = if wide {
            (
                self.val(Ty::U64, Op::Const64(0x1111_1111_1111_1111)),
                self.val(Ty::U64, Op::Const64(0xF)),
            )
        } else {
            (self.c32(0x1111_1111), self.c32(0xF))
        };
        let v = self.src(src, if wide { Kind::B64 } else { Kind::B32 })?;
        let c1 = self.c32(1);
        let c2 = self.c32(2);
        let a = self.bin(ty, BinOp::ShrU, v, c1);
        let a = self.bin(ty, BinOp::Or, v, a);
        let b = self.bin(ty, BinOp::ShrU, a, c2);
        let b = self.bin(ty, BinOp::Or, a, b);
        let low = self.bin(ty, BinOp::And, b, one);
        let r = self.bin(ty, BinOp::Mul, low, f);
        if wide {
            self.write_s64(d, r);
        } else {
            self.write_s(d, r);
        }
        self.scc_nonzero(r, wide);
        Ok(Lowered::Scalar(std::mem::take(&mut self.stmts)))
    }

    /// MIMG: `image_sample`, `image_sample_lz`, `image_sample_l` of a 2D image with f32
    /// coordinates, in pixel shaders, through the binding the texture plan gave it.
    pub(super) fn mimg(&mut self, inst: &Instruction) -> R<Lowered> {
        let name = inst.name();
        let Some(g) = self.gfx.as_ref().filter(|g| g.stage == Stage::Pixel) else {
            return Err(format!(
                "image instructions outside pixel shaders {UNSUPPORTED}"
            ));
        };
        let lod = match name {
            "image_sample" => None,
            "image_sample_lz" => Some(false),
            "image_sample_l" => Some(true),
            _ => {
                return Err(format!(
                    "{name} {UNSUPPORTED} (image_sample, _lz and _l of 2D images are done)"
                ));
            }
        };
        let f = mimg_fields(inst);
        for (on, what) in [
            (f.a16, "16-bit addresses (a16)"),
            (f.d16, "16-bit data (d16)"),
            (f.tfe, "tfe"),
            (f.lwe, "lwe"),
            (f.r128, "a 128-bit T# (r128)"),
            (f.unorm, "unnormalized coordinates (unorm)"),
            (f.dim != 1, "a dimension other than 2D"),
            (f.dmask == 0, "dmask 0"),
        ] {
            if on {
                return Err(format!("{name} with {what} {UNSUPPORTED}"));
            }
        }
        let Some(&(binding, quad_ok)) = g.image_sites.get(&self.inst) else {
            return Err("image instruction the texture plan did not reach".into());
        };
        if lod.is_none() && !quad_ok {
            return Err(
                "image_sample (implicit LOD) after a conditional branch, a call or a change of \
                 EXEC: the host's derivatives would not be the quad's (docs/TRANSLATOR.md \
                 \"Textures\"); only straight-line code from the entry under the entry's EXEC \
                 is done"
                    .into(),
            );
        }
        let addrs = mimg_addrs(inst, &f, if lod == Some(true) { 3 } else { 2 });
        let x = self.val(Ty::U32, Op::ReadV(addrs[0]));
        let y = self.val(Ty::U32, Op::ReadV(addrs[1]));
        let lod_v = match lod {
            Some(true) => Some(self.val(Ty::U32, Op::ReadV(addrs[2]))),
            Some(false) => Some(self.c32(0)),
            None => None,
        };
        let mut k = 0;
        for c in 0..4u8 {
            if f.dmask & (1 << c) == 0 {
                continue;
            }
            let v = self.val(
                Ty::U32,
                Op::ImageSample {
                    binding,
                    comp: c,
                    x,
                    y,
                    lod: lod_v,
                },
            );
            self.write_v(f.vdata + k, v);
            k += 1;
        }
        Ok(self.lane(Some(false), false))
    }
}
