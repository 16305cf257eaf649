//! Vertex and pixel stages: `exp`, `v_interp_*`, `v_cvt_pkrtz_f16_f32`, and the refusal of
//! what a single-lane wave cannot run exactly (docs/TRANSLATOR.md, "Graphics stages").

use std::collections::BTreeMap;

use super::*;
use crate::translate::abi::Stage;
use crate::translate::graphics::{InputInterp, Interp, Sampling};

/// What the graphics lowering needs from the stage state, and what it learns on the way.
#[derive(Clone, Debug)]
pub struct GfxLower {
    /// Vertex or pixel.
    pub stage: Stage,
    /// Pixel: first VGPR of each barycentric pair the layout holds -> (linear, sampling).
    pub bary: BTreeMap<u16, (bool, Sampling)>,
    /// Pixel: SPI_PS_INPUT_CNTL_0..31.
    pub input_cntl: [u32; 32],
    /// Learnt: the interpolation of every input location read.
    pub inputs: BTreeMap<u8, InputInterp>,
    /// Learnt: (instruction offset, VGPR) of every barycentric register an interpolation named.
    pub bary_reads: Vec<(u32, u16)>,
    /// Pixel: USER_SGPR of SPI_SHADER_PGM_RSRC2_PS (the T#/S# trace starts from these).
    pub user_sgprs: u32,
    /// Learnt (pixel): the texture plan, from the static trace of T#/S# (frontend/image.rs).
    pub textures: Vec<crate::translate::abi::TextureBinding>,
    /// Learnt (pixel): image instruction offset -> (binding, implicit-LOD derivatives are the
    /// quad's: see frontend/image.rs).
    pub image_sites: BTreeMap<u32, (u32, bool)>,
}

impl GfxLower {
    /// Fresh state for `stage`.
    pub fn new(stage: Stage) -> GfxLower {
        GfxLower {
            stage,
            bary: BTreeMap::new(),
            input_cntl: [0; 32],
            inputs: BTreeMap::new(),
            bary_reads: Vec::new(),
            user_sgprs: 0,
            textures: Vec::new(),
            image_sites: BTreeMap::new(),
        }
    }
}

/// Export targets as the EXP encoding numbers them.
pub mod target {
    /// mrt0..mrt7 are 0..7.
    pub const MRTZ: u8 = 8;
    /// No data; carries `done`/`vm`.
    pub const NULL: u8 = 9;
    /// pos0..pos3 are 12..15.
    pub const POS0: u8 = 12;
    /// NGG primitive export.
    pub const PRIM: u8 = 20;
    /// param0..param31 are 32..63.
    pub const PARAM0: u8 = 32;
}

const CROSS_LANE: &str = "reads other lanes of the wave; vertex and pixel stages run single-lane \
                          waves (docs/TRANSLATOR.md), so this is refused";

impl Cx {
    fn gfx(&mut self) -> &mut GfxLower {
        self.gfx.as_mut().expect("graphics lowering")
    }

    /// Graphics-only instructions and refusals; None = lower as in compute.
    pub(super) fn graphics_inst(&mut self, inst: &Instruction) -> R<Option<Lowered>> {
        let name = inst.name();
        if matches!(inst.encoding, Encoding::Dpp16 | Encoding::Dpp8 { .. }) {
            return Err(format!("DPP {CROSS_LANE}"));
        }
        match inst.family {
            Family::Exp => return self.export(inst).map(Some),
            Family::Vintrp => return self.interp(inst).map(Some),
            Family::Ds => {
                return Err(
                    "LDS instructions in a vertex or pixel shader are not supported \
                            (ds_swizzle/ds_permute also read other lanes)"
                        .into(),
                );
            }
            _ => {}
        }
        let base = name.trim_end_matches("_e32").trim_end_matches("_e64");
        match base {
            _ if base.starts_with("v_interp_") => {
                Err(format!("{base} in the VOP3 encoding {UNSUPPORTED}"))
            }
            "v_readlane_b32" | "v_writelane_b32" => {
                // Lane 0 is the one lane a single-lane wave has; any other lane is not there.
                let ops = operands(inst, self.wave64);
                let lane = ops.iter().filter(|o| o.role == Role::Src).nth(1);
                match lane.map(|o| o.value) {
                    Some(Value::InlineInt(0)) => Ok(None),
                    _ => Err(format!(
                        "{base} of a lane other than constant 0 {CROSS_LANE}"
                    )),
                }
            }
            "v_permlane16_b32" | "v_permlanex16_b32" => Err(CROSS_LANE.into()),
            // Exact as a bit operation; the quad's helper lanes are the host's (image.rs).
            "s_wqm_b32" | "s_wqm_b64" => self.wqm(inst).map(Some),
            "s_barrier" => Err("s_barrier in a vertex or pixel shader (no workgroup)".into()),
            "s_sendmsg" | "s_sendmsghalt" => Err(
                "s_sendmsg: NGG/mesh primitive shaders (gs_alloc_req, exp prim) and GS messages \
                 are not supported yet (legacy VS and PS only)"
                    .into(),
            ),
            "v_cvt_pkrtz_f16_f32" => self.pkrtz(inst).map(Some),
            _ => Ok(None),
        }
    }

    fn lane_stmts(&mut self, masks: Vec<SReg>) -> Lowered {
        Lowered::Lanes(LaneInst {
            stmts: std::mem::take(&mut self.stmts),
            masks,
            uniform_reads: Vec::new(),
            mem: None,
            writes_exec: false,
            cross_lane: false,
        })
    }

    /// `exp`: EN [3:0], TARGET [9:4], COMPR [10], DONE [11], VM [12]; VSRC0..3 in word 1.
    fn export(&mut self, inst: &Instruction) -> R<Lowered> {
        let w0 = inst.words.get(0);
        let w1 = inst.words.get(1);
        let en = (w0 & 0xF) as u8;
        let tgt = ((w0 >> 4) & 0x3F) as u8;
        let compr = (w0 >> 10) & 1 != 0;
        let vm = (w0 >> 12) & 1 != 0;
        let stage = self.gfx().stage;
        match stage {
            Stage::Vertex => match tgt {
                target::POS0 => {}
                13..=15 => {
                    return Err(format!(
                        "export to pos{} (point size, clip/cull distances) {UNSUPPORTED}",
                        tgt - target::POS0
                    ));
                }
                target::PRIM => {
                    return Err(
                        "exp prim: NGG primitive shaders are not supported yet (legacy VS only)"
                            .into(),
                    );
                }
                t if t >= target::PARAM0 => {}
                t => return Err(format!("export target {t} is not a vertex-shader target")),
            },
            Stage::Pixel => {
                if tgt > target::NULL {
                    return Err(format!("export target {tgt} is not a pixel-shader target"));
                }
            }
            Stage::Compute => return Err("exp in a compute shader".into()),
        }
        if compr && (stage == Stage::Vertex || tgt == target::MRTZ) {
            return Err(format!("compressed export to this target {UNSUPPORTED}"));
        }
        let srcs = [
            w1 & 0xFF,
            (w1 >> 8) & 0xFF,
            (w1 >> 16) & 0xFF,
            (w1 >> 24) & 0xFF,
        ];
        let mut data = [ValueId(0); 4];
        for k in 0..4 {
            let on = if compr {
                k < 2 && (en >> (2 * k)) & 3 != 0
            } else {
                (en >> k) & 1 != 0
            };
            data[k] = if on && tgt != target::NULL {
                self.val(Ty::U32, Op::ReadV(srcs[k] as u16))
            } else {
                self.c32(0)
            };
        }
        if tgt != target::NULL {
            self.eff(Op::Export {
                target: tgt,
                en,
                compr,
                data,
            });
        }
        let mut masks = Vec::new();
        if vm && stage == Stage::Pixel {
            // The lanes active at a `vm` export are the valid pixels; the others are cleared
            // by the lane region (masks) and discarded at the end.
            let t = self.val(Ty::Bool, Op::ConstBool(true));
            self.eff(Op::WriteMaskBit(VALID_MASK, t));
            masks.push(VALID_MASK);
        }
        Ok(self.lane_stmts(masks))
    }

    /// VINTRP: VSRC [7:0], ATTRCHAN [9:8], ATTR [15:10], OP [17:16] (p1, p2, mov), VDST [25:18].
    fn interp(&mut self, inst: &Instruction) -> R<Lowered> {
        let w = inst.words.get(0);
        let vsrc = (w & 0xFF) as u16;
        let chan = ((w >> 8) & 3) as u8;
        let attr = ((w >> 10) & 0x3F) as usize;
        let op = (w >> 16) & 3;
        let vdst = ((w >> 18) & 0xFF) as u16;
        if self.gfx().stage != Stage::Pixel {
            return Err("parameter interpolation outside a pixel shader".into());
        }
        if op == 3 {
            return Err("invalid VINTRP opcode".into());
        }
        let cntl = self.gfx().input_cntl[attr.min(31)];
        if attr > 31 {
            return Err(format!(
                "attribute {attr} is past the 32 pixel-shader inputs"
            ));
        }
        let offset = cntl & 0x3F;
        let flat = (cntl >> 10) & 1 != 0;
        if op == 2 && vsrc != 2 {
            // P10 / P20 are differences between the primitive's vertices: the host hands a
            // fragment shader no per-vertex values.
            return Err(format!(
                "v_interp_mov_f32 of P10/P20 (per-vertex attribute differences) {UNSUPPORTED}"
            ));
        }
        let value = if offset & 0x20 != 0 {
            // DEFAULT_VAL: (0,0,0,0), (0,0,0,1), (1,1,1,0), (1,1,1,1); P10 = P20 = 0.
            let d = (cntl >> 8) & 3;
            let one = match d {
                0 => false,
                1 => chan == 3,
                2 => chan != 3,
                _ => true,
            };
            self.c32(if one { 1.0f32.to_bits() } else { 0 })
        } else {
            let mode = if op == 2 || flat {
                InputInterp {
                    interp: Interp::Flat,
                    sampling: Sampling::Center,
                }
            } else {
                // p1 names the pair's i register, p2 its j register.
                let base = if op == 0 { vsrc } else { vsrc.wrapping_sub(1) };
                let Some(&(linear, sampling)) = self.gfx().bary.get(&base) else {
                    return Err(format!(
                        "v{vsrc} does not hold the {} of a barycentric input that \
                         SPI_PS_INPUT_ENA enables",
                        if op == 0 { "i" } else { "j" }
                    ));
                };
                let at = self.inst;
                self.gfx().bary_reads.push((at, vsrc));
                InputInterp {
                    interp: if linear {
                        Interp::NoPerspective
                    } else {
                        Interp::Smooth
                    },
                    sampling,
                }
            };
            let loc = offset as u8;
            match self.gfx().inputs.get(&loc) {
                Some(m) if *m != mode => {
                    return Err(format!(
                        "input location {loc} is read as {m:?} and as {mode:?}; a host input \
                         has one interpolation"
                    ));
                }
                _ => {
                    self.gfx().inputs.insert(loc, mode);
                }
            }
            self.val(Ty::U32, Op::Interp { loc, chan, mode })
        };
        // p1 and p2 both write the host-interpolated value: p2's accumulator (p1's result) is
        // replaced rather than summed, so the pair gives the host's interpolation.
        self.eff(Op::WriteV(vdst, value));
        Ok(self.lane_stmts(Vec::new()))
    }

    /// D = {f16_rtz(S1), f16_rtz(S0)} (S0 in the low half).
    fn pkrtz(&mut self, inst: &Instruction) -> R<Lowered> {
        let ops = operands(inst, self.wave64);
        let srcs: Vec<Operand> = ops
            .iter()
            .filter(|o| o.role == Role::Src)
            .copied()
            .collect();
        let Some(Value::Vgpr { first: d, .. }) =
            ops.iter().find(|o| o.role == Role::Dst).map(|o| o.value)
        else {
            return Err("missing vector destination".into());
        };
        if inst.family == Family::Vop3 {
            let w0 = inst.words.get(0);
            let w1 = inst.words.get(1);
            if (w0 >> 15) & 1 != 0 || (w1 >> 27) & 3 != 0 {
                return Err(format!("clamp/omod on v_cvt_pkrtz_f16_f32 {UNSUPPORTED}"));
            }
        }
        if srcs.len() != 2 {
            return Err("v_cvt_pkrtz_f16_f32 needs two sources".into());
        }
        let a = self.src(&srcs[0], Kind::F32)?;
        let b = self.src(&srcs[1], Kind::F32)?;
        let a = self.un(Ty::U32, UnOp::Bitcast, a);
        let b = self.un(Ty::U32, UnOp::Bitcast, b);
        let lo = f16_rtz(self, a);
        let hi = f16_rtz(self, b);
        let c16 = self.c32(16);
        let hs = self.bin(Ty::U32, BinOp::Shl, hi, c16);
        let x = self.bin(Ty::U32, BinOp::Or, lo, hs);
        self.eff(Op::WriteV(d, x));
        Ok(self.lane_stmts(Vec::new()))
    }
}

/// f32 bits -> f16 bits, rounding toward zero, in integer arithmetic (the host's conversion
/// rounds to nearest): NaN stays a quiet NaN, infinity stays infinity, finite values too large
/// become the largest finite f16, values below the f16 denormal range become zero. f32
/// denormals become zero.
fn f16_rtz(s: &mut Cx, x: ValueId) -> ValueId {
    let k = |s: &mut Cx, v: u32| s.c32(v);
    let c16 = k(s, 16);
    let sh = s.bin(Ty::U32, BinOp::ShrU, x, c16);
    let m8000 = k(s, 0x8000);
    let sign = s.bin(Ty::U32, BinOp::And, sh, m8000);
    let c23 = k(s, 23);
    let e0 = s.bin(Ty::U32, BinOp::ShrU, x, c23);
    let mff = k(s, 0xFF);
    let e = s.bin(Ty::U32, BinOp::And, e0, mff);
    let mm = k(s, 0x7F_FFFF);
    let m = s.bin(Ty::U32, BinOp::And, x, mm);
    let c13 = k(s, 13);
    // Normal: ((e - 112) << 10) | (m >> 13), valid for 113 <= e <= 142.
    let c112 = k(s, 112);
    let e16 = s.bin(Ty::U32, BinOp::Sub, e, c112);
    let c10 = k(s, 10);
    let eb = s.bin(Ty::U32, BinOp::Shl, e16, c10);
    let mt = s.bin(Ty::U32, BinOp::ShrU, m, c13);
    let normal = s.bin(Ty::U32, BinOp::Or, eb, mt);
    // Denormal f16 (103 <= e <= 112): (m | 1 << 23) >> (126 - e).
    let imp = k(s, 0x80_0000);
    let full = s.bin(Ty::U32, BinOp::Or, m, imp);
    let c126 = k(s, 126);
    let dsh = s.bin(Ty::U32, BinOp::Sub, c126, e);
    let den = s.bin(Ty::U32, BinOp::ShrU, full, dsh);
    let c113 = k(s, 113);
    let is_norm = s.cmp(CmpOp::GeU, e, c113);
    let c103 = k(s, 103);
    let is_den = s.cmp(CmpOp::GeU, e, c103);
    let zero = k(s, 0);
    let small = s.val(Ty::U32, Op::Select(is_den, den, zero));
    let fin = s.val(Ty::U32, Op::Select(is_norm, normal, small));
    let c143 = k(s, 143);
    let big = s.cmp(CmpOp::GeU, e, c143);
    let max = k(s, 0x7BFF);
    let fin = s.val(Ty::U32, Op::Select(big, max, fin));
    // e == 255: infinity, or a quiet NaN keeping the top mantissa bits.
    let is_special = s.cmp(CmpOp::Eq, e, mff);
    let m0 = s.cmp(CmpOp::Eq, m, zero);
    let inf = k(s, 0x7C00);
    let qn = k(s, 0x7E00);
    let nan = s.bin(Ty::U32, BinOp::Or, qn, mt);
    let special = s.val(Ty::U32, Op::Select(m0, inf, nan));
    let mag = s.val(Ty::U32, Op::Select(is_special, special, fin));
    s.bin(Ty::U32, BinOp::Or, sign, mag)
}
