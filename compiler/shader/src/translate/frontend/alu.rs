//! ALU instructions beyond the basic set (issue 11): the division helpers
//! (`v_div_scale/fmas/fixup`), reciprocals and square roots, `v_perm_b32`, 16-bit integer
//! VOP2/VOP3/VOPC, and the SDWA and DPP16/DPP8 forms of VOP1/VOP2/VOPC.
//!
//! Semantics follow the AMD RDNA2 ISA manual; docs/TRANSLATOR.md ("ALU notes") lists what
//! is exact and what is within the documented precision.

use super::vector::clamp01;
use super::*;

/// Hidden per-lane array holding the value a DPP instruction fetched from its source lane.
pub(super) const DPP_VALUE: u16 = 256;
/// Hidden per-lane array: 1 when the DPP instruction writes this lane, 0 when it keeps the
/// old destination (row/bank mask off, or an invalid source lane without bound_ctrl).
const DPP_ENABLE: u16 = 257;

/// SDWA destination controls (VOP1/VOP2) or the VOPC SDWA scalar destination.
#[derive(Clone, Copy)]
pub(super) struct SdwaDst {
    /// 0..3 BYTE_n, 4/5 WORD_n, 6 DWORD.
    sel: u8,
    /// 0 UNUSED_PAD, 1 UNUSED_SEXT, 2 UNUSED_PRESERVE.
    unused: u8,
    /// VOPC: the SGPR pair / VCC the compare writes (None: VCC).
    pub(super) sdst: Option<SReg>,
}

/// (shift, width) of an SDWA select.
fn sel_bits(sel: u8) -> (u32, u32) {
    match sel {
        0..=3 => (8 * sel as u32, 8),
        4 | 5 => (16 * (sel as u32 - 4), 16),
        _ => (0, 32),
    }
}

impl Cx {
    fn f32c(&mut self, f: f32) -> ValueId {
        let c = self.c32(f.to_bits());
        self.un(Ty::F32, UnOp::Bitcast, c)
    }
    fn f64c(&mut self, f: f64) -> ValueId {
        let c = self.val(Ty::U64, Op::Const64(f.to_bits()));
        self.un(Ty::F64, UnOp::Bitcast, c)
    }
    fn sel(&mut self, ty: Ty, c: ValueId, a: ValueId, b: ValueId) -> ValueId {
        self.val(ty, Op::Select(c, a, b))
    }
    fn and_b(&mut self, a: ValueId, b: ValueId) -> ValueId {
        self.bin(Ty::Bool, BinOp::And, a, b)
    }
    fn or_b(&mut self, a: ValueId, b: ValueId) -> ValueId {
        self.bin(Ty::Bool, BinOp::Or, a, b)
    }

    /// An SDWA source select: the byte or word `sel`, zero- or sign-extended.
    pub(super) fn sdwa_select(&mut self, raw: ValueId, sel: u8, sext: bool) -> ValueId {
        let (shift, width) = sel_bits(sel);
        if width == 32 {
            return raw;
        }
        let up = self.c32(32 - shift - width);
        let down = self.c32(32 - width);
        let x = self.bin(Ty::U32, BinOp::Shl, raw, up);
        let op = if sext { BinOp::ShrI } else { BinOp::ShrU };
        self.bin(Ty::U32, op, x, down)
    }

    /// An SDWA destination: the result's low bits placed at `dst_sel`, the rest of the VGPR
    /// zero (UNUSED_PAD), the field's sign (UNUSED_SEXT) or the old bits (UNUSED_PRESERVE).
    pub(super) fn sdwa_place(&mut self, r: u16, v: ValueId, d: SdwaDst) -> ValueId {
        let (shift, width) = sel_bits(d.sel);
        if width == 32 {
            return v;
        }
        let mask = ((1u64 << width) - 1) as u32;
        let m = self.c32(mask);
        let field = self.bin(Ty::U32, BinOp::And, v, m);
        let sh = self.c32(shift);
        let placed = self.bin(Ty::U32, BinOp::Shl, field, sh);
        match d.unused {
            1 => {
                // Sign-extend the field up through bit 31; bits below it are zero.
                let up = self.c32(32 - width);
                let t = self.bin(Ty::U32, BinOp::Shl, v, up);
                let down = self.c32(32 - width - shift);
                let t = self.bin(Ty::U32, BinOp::ShrI, t, down);
                let low = self.c32(!(((1u64 << shift) - 1) as u32));
                self.bin(Ty::U32, BinOp::And, t, low)
            }
            2 => {
                let old = self.val(Ty::U32, Op::ReadV(r));
                let keep = self.c32(!(mask << shift));
                let o = self.bin(Ty::U32, BinOp::And, old, keep);
                self.bin(Ty::U32, BinOp::Or, o, placed)
            }
            _ => placed,
        }
    }

    /// VOP1/VOP2/VOPC in the SDWA encoding: the plain lowering with selected sources and
    /// the destination controls.
    pub(super) fn sdwa_inst(&mut self, inst: &Instruction) -> R<Lowered> {
        let w1 = inst.words.get(1);
        let d = if inst.family == Family::Vopc {
            SdwaDst {
                sel: 6,
                unused: 0,
                sdst: ((w1 >> 15) & 1 != 0).then_some(((w1 >> 8) & 0x7F) as SReg),
            }
        } else {
            if (w1 >> 13) & 1 != 0 {
                return Err(format!("SDWA clamp {UNSUPPORTED}"));
            }
            if (w1 >> 14) & 3 != 0 {
                return Err(format!("SDWA output modifier (omod) {UNSUPPORTED}"));
            }
            let unused = ((w1 >> 11) & 3) as u8;
            if unused == 3 {
                return Err("SDWA dst_unused value 3 is reserved".into());
            }
            SdwaDst {
                sel: ((w1 >> 8) & 7) as u8,
                unused,
                sdst: None,
            }
        };
        for sel in [d.sel, ((w1 >> 16) & 7) as u8, ((w1 >> 24) & 7) as u8] {
            if sel == 7 {
                return Err("SDWA select value 7 is reserved".into());
            }
        }
        if let Some(r) = d.sdst
            && !(r < 106 || r == VCC_LO)
        {
            return Err(format!("SDWA compare destination {r} {UNSUPPORTED}"));
        }
        self.sdwa = Some(d);
        let r = self.valu(inst);
        self.sdwa = None;
        r
    }

    /// DPP16 / DPP8: a cross-lane run that fetches src0 from the source lane of every lane
    /// (into [`DPP_VALUE`]) and decides which lanes write (into [`DPP_ENABLE`]), then the
    /// operation itself with src0 read from there and writes kept to the enabled lanes.
    pub(super) fn dpp_inst(&mut self, inst: &Instruction) -> R<Lowered> {
        let w1 = inst.words.get(1);
        let src = (w1 & 0xFF) as u16;
        let lanes = self.lanes();
        let lane = self.val(Ty::U32, Op::LaneId);
        // The wave's EXEC as it was before the instruction (a uniform read).
        let lo = self.read_s(EXEC_LO);
        let exec = if self.wave64 {
            let hi = self.read_s(EXEC_LO + 1);
            self.val(Ty::U64, Op::Pack64(lo, hi))
        } else {
            self.un(Ty::U64, UnOp::Zext, lo)
        };
        let (src_lane, in_range, fi, bound_zero, lane_on) = match inst.encoding {
            Encoding::Dpp8 { fi } => {
                // lane = (lane & ~7) | sel[lane & 7], three bits per lane from bit 8.
                let sels = self.c32(w1 >> 8);
                let c7 = self.c32(7);
                let l8 = self.bin(Ty::U32, BinOp::And, lane, c7);
                let c3 = self.c32(3);
                let sh = self.bin(Ty::U32, BinOp::Mul, l8, c3);
                let s = self.bin(Ty::U32, BinOp::ShrU, sels, sh);
                let s = self.bin(Ty::U32, BinOp::And, s, c7);
                let not7 = self.c32(!7);
                let base = self.bin(Ty::U32, BinOp::And, lane, not7);
                let sl = self.bin(Ty::U32, BinOp::Or, base, s);
                let t = self.val(Ty::Bool, Op::ConstBool(true));
                // Without bound_ctrl, an inactive source lane reads zero (fi = 0).
                (sl, t, fi, true, t)
            }
            _ => {
                let ctrl = (w1 >> 8) & 0x1FF;
                let fi = (w1 >> 18) & 1 != 0;
                let bc = (w1 >> 19) & 1 != 0;
                let bank_mask = (w1 >> 24) & 0xF;
                let row_mask = (w1 >> 28) & 0xF;
                let c15 = self.c32(15);
                let in_row = self.bin(Ty::U32, BinOp::And, lane, c15);
                let not15 = self.c32(!15);
                let row = self.bin(Ty::U32, BinOp::And, lane, not15);
                let t = self.val(Ty::Bool, Op::ConstBool(true));
                let n = ctrl & 0xF;
                let (sl, ok) = match ctrl {
                    0x000..=0x0FF => {
                        // lane = (lane & ~3) | ctrl[2*(lane&3)+1 : 2*(lane&3)]
                        let c3 = self.c32(3);
                        let q = self.bin(Ty::U32, BinOp::And, lane, c3);
                        let c2 = self.c32(2);
                        let sh = self.bin(Ty::U32, BinOp::Mul, q, c2);
                        let k = self.c32(ctrl);
                        let s = self.bin(Ty::U32, BinOp::ShrU, k, sh);
                        let s = self.bin(Ty::U32, BinOp::And, s, c3);
                        let not3 = self.c32(!3);
                        let base = self.bin(Ty::U32, BinOp::And, lane, not3);
                        (self.bin(Ty::U32, BinOp::Or, base, s), t)
                    }
                    0x101..=0x10F | 0x111..=0x11F => {
                        // row_shl: lane + n in the row; row_shr: lane - n.
                        let nn = self.c32(n);
                        if ctrl < 0x110 {
                            let x = self.bin(Ty::U32, BinOp::Add, in_row, nn);
                            let ok = self.cmp(CmpOp::LtU, x, c15);
                            let eq = self.cmp(CmpOp::Eq, x, c15);
                            let ok = self.or_b(ok, eq);
                            let x = self.bin(Ty::U32, BinOp::And, x, c15);
                            (self.bin(Ty::U32, BinOp::Or, row, x), ok)
                        } else {
                            let ok = self.cmp(CmpOp::GeU, in_row, nn);
                            let x = self.bin(Ty::U32, BinOp::Sub, in_row, nn);
                            let x = self.bin(Ty::U32, BinOp::And, x, c15);
                            (self.bin(Ty::U32, BinOp::Or, row, x), ok)
                        }
                    }
                    0x121..=0x12F => {
                        // row_ror: rotate right by n within the row.
                        let nn = self.c32(16 - n);
                        let x = self.bin(Ty::U32, BinOp::Add, in_row, nn);
                        let x = self.bin(Ty::U32, BinOp::And, x, c15);
                        (self.bin(Ty::U32, BinOp::Or, row, x), t)
                    }
                    0x140 | 0x141 => {
                        // row_mirror: 15 - lane; row_half_mirror: 7 - lane in each half row.
                        let m = self.c32(if ctrl == 0x140 { 15 } else { 7 });
                        let x = self.bin(Ty::U32, BinOp::Xor, lane, m);
                        (x, t)
                    }
                    0x150..=0x15F => {
                        // row_share: lane n of the row.
                        let nn = self.c32(n);
                        (self.bin(Ty::U32, BinOp::Or, row, nn), t)
                    }
                    0x160..=0x16F => {
                        // row_xmask: lane ^ n in the row.
                        let nn = self.c32(n);
                        (self.bin(Ty::U32, BinOp::Xor, lane, nn), t)
                    }
                    _ => {
                        return Err(format!(
                            "DPP control 0x{ctrl:03x} is not valid on GFX10 (wave_shl/rol, \
                             row_bcast and reserved values)"
                        ));
                    }
                };
                // Row and bank masks: a lane whose row or bank is off is not written.
                let c4 = self.c32(4);
                let r = self.bin(Ty::U32, BinOp::ShrU, lane, c4);
                let rm = self.c32(row_mask);
                let rbit = self.bin(Ty::U32, BinOp::ShrU, rm, r);
                let c2 = self.c32(2);
                let b = self.bin(Ty::U32, BinOp::ShrU, in_row, c2);
                let bm = self.c32(bank_mask);
                let bbit = self.bin(Ty::U32, BinOp::ShrU, bm, b);
                let both = self.bin(Ty::U32, BinOp::And, rbit, bbit);
                let one = self.c32(1);
                let both = self.bin(Ty::U32, BinOp::And, both, one);
                let on = self.un(Ty::Bool, UnOp::U32ToBool, both);
                (sl, ok, fi, bc, on)
            }
        };
        let top = self.c32(lanes - 1);
        let sl = self.bin(Ty::U32, BinOp::MinU, src_lane, top);
        let ebit = self.bin(Ty::U64, BinOp::ShrU, exec, sl);
        let ebit = self.un(Ty::U32, UnOp::Lo, ebit);
        let one = self.c32(1);
        let ebit = self.bin(Ty::U32, BinOp::And, ebit, one);
        let active = self.un(Ty::Bool, UnOp::U32ToBool, ebit);
        let active = if fi {
            self.val(Ty::Bool, Op::ConstBool(true))
        } else {
            active
        };
        let valid = self.and_b(in_range, active);
        let fetched = self.val(Ty::U32, Op::ReadLane(src, sl));
        let zero = self.c32(0);
        let value = self.sel(Ty::U32, valid, fetched, zero);
        let bz = self.val(Ty::Bool, Op::ConstBool(bound_zero));
        let writes = self.or_b(valid, bz);
        let writes = self.and_b(writes, lane_on);
        let en = self.un(Ty::U32, UnOp::BoolToU32, writes);
        self.eff(Op::WriteV(DPP_VALUE, value));
        self.eff(Op::WriteV(DPP_ENABLE, en));
        let Lowered::Lanes(fetch) = self.lane(None, true) else {
            unreachable!("lane() gives Lanes")
        };
        let Lowered::Lanes(mut op) = self.valu(inst)? else {
            return Err(format!(
                "DPP form of a scalar-result instruction {UNSUPPORTED}"
            ));
        };
        // Keep the old destination (VGPR or lane-mask bit) in lanes that do not write.
        let stmts = std::mem::take(&mut op.stmts);
        self.stmts.clear();
        let mut en_v = None;
        for s in stmts {
            match s.op {
                Op::WriteV(r, x) => {
                    let e = *en_v.get_or_insert_with(|| {
                        let e = self.val(Ty::U32, Op::ReadV(DPP_ENABLE));
                        self.un(Ty::Bool, UnOp::U32ToBool, e)
                    });
                    let old = self.val(Ty::U32, Op::ReadV(r));
                    let v = self.sel(Ty::U32, e, x, old);
                    self.eff(Op::WriteV(r, v));
                }
                Op::WriteMaskBit(r, x) => {
                    let e = *en_v.get_or_insert_with(|| {
                        let e = self.val(Ty::U32, Op::ReadV(DPP_ENABLE));
                        self.un(Ty::Bool, UnOp::U32ToBool, e)
                    });
                    let old = self.val(Ty::Bool, Op::ReadMaskBit(r));
                    let v = self.sel(Ty::Bool, e, x, old);
                    self.eff(Op::WriteMaskBit(r, v));
                }
                _ => self.stmts.push(s),
            }
        }
        let Lowered::Lanes(op) = self.lane(None, false) else {
            unreachable!("lane() gives Lanes")
        };
        Ok(Lowered::LaneSeq(vec![fetch, op]))
    }

    /// The instructions of this module; None when `name` is not one of them.
    pub(super) fn valu_ext(
        &mut self,
        name: &str,
        inst: &Instruction,
        dsts: &[Operand],
        srcs: &[Operand],
        clamp: bool,
    ) -> R<Option<Lowered>> {
        let vdst = |i: usize| -> R<u16> {
            match dsts.get(i).map(|o| o.value) {
                Some(Value::Vgpr { first, .. }) => Ok(first),
                _ => Err("missing vector destination".into()),
            }
        };
        let s = |i: usize| -> R<Operand> {
            srcs.get(i)
                .copied()
                .ok_or_else(|| format!("missing source {i}"))
        };
        let wf32 = |cx: &mut Cx, d: u16, x: ValueId| {
            let x = if clamp { clamp01(cx, x, Ty::F32) } else { x };
            let b = cx.un(Ty::U32, UnOp::Bitcast, x);
            cx.write_v(d, b);
        };
        let wf64 = |cx: &mut Cx, d: u16, x: ValueId| {
            let x = if clamp { clamp01(cx, x, Ty::F64) } else { x };
            let b = cx.un(Ty::U64, UnOp::Bitcast, x);
            let lo = cx.un(Ty::U32, UnOp::Lo, b);
            let hi = cx.un(Ty::U32, UnOp::Hi, b);
            cx.write_v(d, lo);
            cx.write_v(d + 1, hi);
        };
        match name {
            // Reciprocals and square roots: the hardware documents 1 ULP; these are the
            // correctly rounded values (within it).
            "v_rcp_iflag_f32" | "v_rsq_f32" => {
                let a = self.src(&s(0)?, Kind::F32)?;
                let one = self.f32c(1.0);
                let den = if name == "v_rsq_f32" {
                    self.un(Ty::F32, UnOp::Sqrt, a)
                } else {
                    a
                };
                let x = self.bin(Ty::F32, BinOp::FDiv, one, den);
                wf32(self, vdst(0)?, x);
            }
            "v_rcp_f64" | "v_rsq_f64" => {
                let a = self.src(&s(0)?, Kind::F64)?;
                let one = self.f64c(1.0);
                let den = if name == "v_rsq_f64" {
                    self.un(Ty::F64, UnOp::Sqrt, a)
                } else {
                    a
                };
                let x = self.bin(Ty::F64, BinOp::FDiv, one, den);
                wf64(self, vdst(0)?, x);
            }
            "v_div_scale_f32" | "v_div_scale_f64" => {
                let wide = name.ends_with("f64");
                let k = if wide { Kind::F64 } else { Kind::F32 };
                let s0 = self.src(&s(0)?, k)?;
                let s1 = self.src(&s(1)?, k)?;
                let s2 = self.src(&s(2)?, k)?;
                let mask = self.sreg_of(&dsts[1].value)?;
                let (d, vcc) = div_scale(self, wide, s0, s1, s2);
                if wide {
                    wf64(self, vdst(0)?, d);
                } else {
                    wf32(self, vdst(0)?, d);
                }
                self.eff(Op::WriteMaskBit(mask, vcc));
            }
            "v_div_fmas_f32" | "v_div_fmas_f64" => {
                let wide = name.ends_with("f64");
                let (k, ty) = if wide {
                    (Kind::F64, Ty::F64)
                } else {
                    (Kind::F32, Ty::F32)
                };
                let a = self.src(&s(0)?, k)?;
                let b = self.src(&s(1)?, k)?;
                let c = self.src(&s(2)?, k)?;
                let vcc = self.val(Ty::Bool, Op::ReadMaskBit(VCC_LO));
                let f = self.val(ty, Op::Fma(a, b, c));
                // VCC: undo div_scale's 2^±64 (f64: 2^±128) scaling of the quotient; the
                // quotient estimate (S2) tells the direction: >= 1 came from a scaled-down
                // denominator, < 1 from a scaled-up numerator.
                let (up, down, one) = if wide {
                    (
                        self.f64c(2f64.powi(128)),
                        self.f64c(2f64.powi(-128)),
                        self.f64c(1.0),
                    )
                } else {
                    (
                        self.f32c(2f32.powi(64)),
                        self.f32c(2f32.powi(-64)),
                        self.f32c(1.0),
                    )
                };
                let ac = self.un(ty, UnOp::FAbs, c);
                let big = self.cmp(CmpOp::FGe, ac, one);
                let scale = self.sel(ty, big, up, down);
                let scaled = self.bin(ty, BinOp::FMul, f, scale);
                let x = self.sel(ty, vcc, scaled, f);
                if wide {
                    wf64(self, vdst(0)?, x);
                } else {
                    wf32(self, vdst(0)?, x);
                }
            }
            "v_div_fixup_f32" | "v_div_fixup_f64" => {
                let wide = name.ends_with("f64");
                let k = if wide { Kind::F64 } else { Kind::F32 };
                let q = self.src(&s(0)?, k)?;
                let den = self.src(&s(1)?, k)?;
                let num = self.src(&s(2)?, k)?;
                let x = div_fixup(self, wide, q, den, num);
                if wide {
                    wf64(self, vdst(0)?, x);
                } else {
                    wf32(self, vdst(0)?, x);
                }
            }
            "v_perm_b32" => {
                if clamp {
                    return Err(format!("clamp on an integer operation {UNSUPPORTED}"));
                }
                let a = self.src(&s(0)?, Kind::B32)?;
                let b = self.src(&s(1)?, Kind::B32)?;
                let sel = self.src(&s(2)?, Kind::B32)?;
                let x = perm(self, a, b, sel);
                self.write_v(vdst(0)?, x);
            }
            _ => return self.valu16(name, inst, dsts, srcs, clamp),
        }
        Ok(Some(self.lane(None, false)))
    }

    /// 16-bit integer VOP2/VOP3 and VOPC: the low halves of the sources; results are the
    /// low 16 bits with the high half of the VGPR zeroed (GFX10 without op_sel).
    fn valu16(
        &mut self,
        name: &str,
        inst: &Instruction,
        dsts: &[Operand],
        srcs: &[Operand],
        clamp: bool,
    ) -> R<Option<Lowered>> {
        let is16 = name.ends_with("_u16") || name.ends_with("_i16") || name.ends_with("_b16");
        if !is16 {
            return Ok(None);
        }
        let s = |i: usize| -> R<Operand> {
            srcs.get(i)
                .copied()
                .ok_or_else(|| format!("missing source {i}"))
        };
        let signed = name.ends_with("_i16");
        let ext = |cx: &mut Cx, v: ValueId, signed: bool| -> ValueId {
            let c = cx.c32(16);
            let up = cx.bin(Ty::U32, BinOp::Shl, v, c);
            let op = if signed { BinOp::ShrI } else { BinOp::ShrU };
            cx.bin(Ty::U32, op, up, c)
        };
        if name.starts_with("v_cmp") {
            let (op, _) = cmp_of(&name.replace("16", "32")).ok_or(UNSUPPORTED)?;
            let a = self.src(&s(0)?, Kind::B32)?;
            let b = self.src(&s(1)?, Kind::B32)?;
            let a = ext(self, a, signed);
            let b = ext(self, b, signed);
            let bit = self.cmp(op, a, b);
            let dst = if name.starts_with("v_cmpx_") {
                EXEC_LO
            } else if let Some(r) = self.sdwa.and_then(|d| d.sdst) {
                r
            } else {
                match dsts.first() {
                    Some(o) => self.sreg_of(&o.value)?,
                    None => VCC_LO,
                }
            };
            self.eff(Op::WriteMaskBit(dst, bit));
            return Ok(Some(self.lane(None, false)));
        }
        if clamp {
            return Err(format!("clamp on a 16-bit integer operation {UNSUPPORTED}"));
        }
        let op_sel = if inst.family == Family::Vop3 {
            (inst.words.get(0) >> 11) & 0xF
        } else {
            0
        };
        if op_sel != 0 {
            return Err(format!("op_sel on a 16-bit operation {UNSUPPORTED}"));
        }
        let d = match dsts.first().map(|o| o.value) {
            Some(Value::Vgpr { first, .. }) => first,
            _ => return Err("missing vector destination".into()),
        };
        let a = self.src(&s(0)?, Kind::B32)?;
        let b = self.src(&s(1)?, Kind::B32)?;
        let c15 = self.c32(15);
        let x = match name {
            "v_add_nc_u16" | "v_add_u16" => self.bin(Ty::U32, BinOp::Add, a, b),
            "v_sub_nc_u16" | "v_sub_u16" => self.bin(Ty::U32, BinOp::Sub, a, b),
            "v_subrev_nc_u16" | "v_subrev_u16" => self.bin(Ty::U32, BinOp::Sub, b, a),
            "v_mul_lo_u16" => self.bin(Ty::U32, BinOp::Mul, a, b),
            "v_lshlrev_b16" => {
                let n = self.bin(Ty::U32, BinOp::And, a, c15);
                self.bin(Ty::U32, BinOp::Shl, b, n)
            }
            "v_lshrrev_b16" | "v_ashrrev_i16" => {
                let n = self.bin(Ty::U32, BinOp::And, a, c15);
                let v = ext(self, b, name == "v_ashrrev_i16");
                let op = if name == "v_ashrrev_i16" {
                    BinOp::ShrI
                } else {
                    BinOp::ShrU
                };
                self.bin(Ty::U32, op, v, n)
            }
            "v_max_u16" | "v_min_u16" | "v_max_i16" | "v_min_i16" => {
                let a = ext(self, a, signed);
                let b = ext(self, b, signed);
                let op = match (name.starts_with("v_max"), signed) {
                    (true, true) => BinOp::MaxI,
                    (true, false) => BinOp::MaxU,
                    (false, true) => BinOp::MinI,
                    (false, false) => BinOp::MinU,
                };
                self.bin(Ty::U32, op, a, b)
            }
            "v_mad_u16" | "v_mad_i16" => {
                let c = self.src(&s(2)?, Kind::B32)?;
                let p = self.bin(Ty::U32, BinOp::Mul, a, b);
                self.bin(Ty::U32, BinOp::Add, p, c)
            }
            _ => return Err(UNSUPPORTED.into()),
        };
        let m = self.c32(0xFFFF);
        let x = self.bin(Ty::U32, BinOp::And, x, m);
        self.write_v(d, x);
        Ok(Some(self.lane(None, false)))
    }
}

/// Float layout constants: (exponent bias, mantissa bits, exponent mask after the shift).
struct Fmt {
    wide: bool,
}

impl Fmt {
    fn ty(&self) -> Ty {
        if self.wide { Ty::F64 } else { Ty::F32 }
    }
    fn ity(&self) -> Ty {
        if self.wide { Ty::U64 } else { Ty::U32 }
    }
    fn mant(&self) -> u32 {
        if self.wide { 52 } else { 23 }
    }
    fn emax(&self) -> u32 {
        if self.wide { 0x7FF } else { 0xFF }
    }
    fn bias(&self) -> i32 {
        if self.wide { 1023 } else { 127 }
    }
    fn k(&self, cx: &mut Cx, v: u64) -> ValueId {
        if self.wide {
            cx.val(Ty::U64, Op::Const64(v))
        } else {
            cx.c32(v as u32)
        }
    }
    fn f(&self, cx: &mut Cx, v: f64) -> ValueId {
        if self.wide {
            cx.f64c(v)
        } else {
            cx.f32c(v as f32)
        }
    }
    fn bits(&self, cx: &mut Cx, x: ValueId) -> ValueId {
        cx.un(self.ity(), UnOp::Bitcast, x)
    }
    /// The biased exponent field as u32.
    fn exp(&self, cx: &mut Cx, bits: ValueId) -> ValueId {
        if self.wide {
            let hi = cx.un(Ty::U32, UnOp::Hi, bits);
            let c = cx.c32(20);
            let e = cx.bin(Ty::U32, BinOp::ShrU, hi, c);
            let m = cx.c32(0x7FF);
            cx.bin(Ty::U32, BinOp::And, e, m)
        } else {
            let c = cx.c32(23);
            let e = cx.bin(Ty::U32, BinOp::ShrU, bits, c);
            let m = cx.c32(0xFF);
            cx.bin(Ty::U32, BinOp::And, e, m)
        }
    }
    fn abs_bits(&self, cx: &mut Cx, bits: ValueId) -> ValueId {
        let m = self.k(
            cx,
            if self.wide {
                !(1u64 << 63)
            } else {
                0x7FFF_FFFF
            },
        );
        cx.bin(self.ity(), BinOp::And, bits, m)
    }
    /// floor(log2 |x|) (i32 in a u32) and the significand normalised so that its leading
    /// one is at bit `mant` (in the integer type), for finite nonzero x, denormals included.
    fn log2_mant(&self, cx: &mut Cx, bits: ValueId) -> (ValueId, ValueId) {
        let ity = self.ity();
        let e = self.exp(cx, bits);
        let a = self.abs_bits(cx, bits);
        let fm = self.k(cx, (1u64 << self.mant()) - 1);
        let m = cx.bin(ity, BinOp::And, a, fm);
        // Leading zeros of the field (as a width-independent count).
        let lz = if self.wide {
            let hi = cx.un(Ty::U32, UnOp::Hi, m);
            let lo = cx.un(Ty::U32, UnOp::Lo, m);
            let zh = cx.un(Ty::U32, UnOp::FindMsbFromTop, hi);
            let zl = cx.un(Ty::U32, UnOp::FindMsbFromTop, lo);
            let c32 = cx.c32(32);
            let zl = cx.bin(Ty::U32, BinOp::Add, zl, c32);
            let z = cx.c32(0);
            let hz = cx.cmp(CmpOp::Eq, hi, z);
            cx.sel(Ty::U32, hz, zl, zh)
        } else {
            cx.un(Ty::U32, UnOp::FindMsbFromTop, m)
        };
        let width = if self.wide { 64 } else { 32 };
        // Denormal: value = m * 2^(1 - bias - mant); msb index = width - 1 - lz.
        let msb = {
            let c = cx.c32(width - 1);
            cx.bin(Ty::U32, BinOp::Sub, c, lz)
        };
        let k = cx.c32((1 - self.bias() - self.mant() as i32) as u32);
        let l_den = cx.bin(Ty::U32, BinOp::Add, msb, k);
        let cb = cx.c32(self.bias() as u32);
        let l_norm = cx.bin(Ty::U32, BinOp::Sub, e, cb);
        let z = cx.c32(0);
        let is_den = cx.cmp(CmpOp::Eq, e, z);
        let l = cx.sel(Ty::U32, is_den, l_den, l_norm);
        let cm = cx.c32(self.mant());
        let sh = cx.bin(Ty::U32, BinOp::Sub, cm, msb);
        let m_den = cx.bin(ity, BinOp::Shl, m, sh);
        let imp = self.k(cx, 1u64 << self.mant());
        let m_norm = cx.bin(ity, BinOp::Or, m, imp);
        let mn = cx.sel(ity, is_den, m_den, m_norm);
        (l, mn)
    }
}

/// V_DIV_SCALE: (S0 scaled, VCC). S1 = denominator, S2 = numerator, S0 one of them.
fn div_scale(cx: &mut Cx, wide: bool, s0: ValueId, s1: ValueId, s2: ValueId) -> (ValueId, ValueId) {
    let f = Fmt { wide };
    let ty = f.ty();
    let (scale, tiny_exp, big_diff, rcp_lim) = if wide {
        (128, 53u32, 768i32, 0x7FD0_0000_0000_0000u64) // 2^1022
    } else {
        (64, 23u32, 96i32, 0x7E80_0000u64) // 2^126
    };
    let b1 = f.bits(cx, s1);
    let b2 = f.bits(cx, s2);
    let a1 = f.abs_bits(cx, b1);
    let a2 = f.abs_bits(cx, b2);
    let e1 = f.exp(cx, b1);
    let e2 = f.exp(cx, b2);
    let z = f.k(cx, 0);
    let zero1 = cx.cmp(CmpOp::Eq, a1, z);
    let zero2 = cx.cmp(CmpOp::Eq, a2, z);
    let any_zero = cx.or_b(zero1, zero2);
    let emax = cx.c32(f.emax());
    let nf1 = cx.cmp(CmpOp::Eq, e1, emax);
    let nf2 = cx.cmp(CmpOp::Eq, e2, emax);
    let nonfinite = cx.or_b(nf1, nf2);
    let up_k = f.f(cx, 2f64.powi(scale));
    let down_k = f.f(cx, 2f64.powi(-scale));
    let up = cx.bin(ty, BinOp::FMul, s0, up_k);
    let down = cx.bin(ty, BinOp::FMul, s0, down_k);
    let is_den = cx.cmp(CmpOp::FEq, s0, s1);
    let is_num = cx.cmp(CmpOp::FEq, s0, s2);
    // exponent(S2) - exponent(S1) >= big_diff (biased fields, signed).
    let diff = cx.bin(Ty::U32, BinOp::Sub, e2, e1);
    let bd = cx.c32(big_diff as u32);
    let c_big = cx.cmp(CmpOp::GeI, diff, bd);
    let zc = cx.c32(0);
    let c_den_denorm = cx.cmp(CmpOp::Eq, e1, zc);
    // 1 / S1 is denormal: |S1| > 2^(bias - 1).
    let lim = f.k(cx, if wide { rcp_lim } else { rcp_lim & 0xFFFF_FFFF });
    let c_rcp_denorm = cx.cmp(CmpOp::GtU, a1, lim);
    // S2 / S1 is denormal: floor(log2 |S2/S1|) < 1 - bias.
    let (l1, m1) = f.log2_mant(cx, b1);
    let (l2, m2) = f.log2_mant(cx, b2);
    let ld = cx.bin(Ty::U32, BinOp::Sub, l2, l1);
    let lt = cx.cmp(CmpOp::LtU, m2, m1);
    let borrow = cx.un(Ty::U32, UnOp::BoolToU32, lt);
    let lq = cx.bin(Ty::U32, BinOp::Sub, ld, borrow);
    let minexp = cx.c32((1 - f.bias()) as u32);
    let c_q_denorm = cx.cmp(CmpOp::LtI, lq, minexp);
    let te = cx.c32(tiny_exp);
    let c_tiny = cx.cmp(CmpOp::LeU, e2, te);
    let nan = f.k(
        cx,
        if wide {
            0x7FF8_0000_0000_0000
        } else {
            0x7FC0_0000
        },
    );
    let nan = cx.un(ty, UnOp::Bitcast, nan);
    // Build from the last case to the first (the first that holds wins).
    let f_ = cx.val(Ty::Bool, Op::ConstBool(false));
    let t_ = cx.val(Ty::Bool, Op::ConstBool(true));
    let mut d = s0;
    let mut vcc = f_;
    // exponent(S2) <= tiny: numerator tiny, both scaled up.
    d = cx.sel(ty, c_tiny, up, d);
    vcc = cx.sel(Ty::Bool, c_tiny, f_, vcc);
    // S2/S1 denormal: VCC, the numerator scaled up.
    let v = cx.sel(ty, is_num, up, s0);
    d = cx.sel(ty, c_q_denorm, v, d);
    vcc = cx.sel(Ty::Bool, c_q_denorm, t_, vcc);
    // 1/S1 denormal: both scaled down.
    d = cx.sel(ty, c_rcp_denorm, down, d);
    vcc = cx.sel(Ty::Bool, c_rcp_denorm, f_, vcc);
    // 1/S1 and S2/S1 denormal: VCC, the denominator scaled down.
    let both = cx.and_b(c_rcp_denorm, c_q_denorm);
    let v = cx.sel(ty, is_den, down, s0);
    d = cx.sel(ty, both, v, d);
    vcc = cx.sel(Ty::Bool, both, t_, vcc);
    // S1 denormal: both scaled up.
    d = cx.sel(ty, c_den_denorm, up, d);
    vcc = cx.sel(Ty::Bool, c_den_denorm, f_, vcc);
    // Quotient near the top of the range: VCC, the denominator scaled up.
    let v = cx.sel(ty, is_den, up, s0);
    d = cx.sel(ty, c_big, v, d);
    vcc = cx.sel(Ty::Bool, c_big, t_, vcc);
    // Infinities and NaNs: unscaled (div_fixup gives the result).
    d = cx.sel(ty, nonfinite, s0, d);
    vcc = cx.sel(Ty::Bool, nonfinite, f_, vcc);
    // A zero operand: NaN (div_fixup gives the result).
    d = cx.sel(ty, any_zero, nan, d);
    vcc = cx.sel(Ty::Bool, any_zero, f_, vcc);
    (d, vcc)
}

/// V_DIV_FIXUP: the special cases of num / den from the operands, else ±|quotient|.
fn div_fixup(cx: &mut Cx, wide: bool, q: ValueId, den: ValueId, num: ValueId) -> ValueId {
    let f = Fmt { wide };
    let ty = f.ty();
    let ity = f.ity();
    let bq = f.bits(cx, q);
    let b1 = f.bits(cx, den);
    let b2 = f.bits(cx, num);
    let sign = f.k(cx, if wide { 1u64 << 63 } else { 1 << 31 });
    let sx = cx.bin(ity, BinOp::Xor, b1, b2);
    let s_out = cx.bin(ity, BinOp::And, sx, sign);
    let a1 = f.abs_bits(cx, b1);
    let a2 = f.abs_bits(cx, b2);
    let aq = f.abs_bits(cx, bq);
    let inf = f.k(
        cx,
        if wide {
            0x7FF0_0000_0000_0000
        } else {
            0x7F80_0000
        },
    );
    let z = f.k(cx, 0);
    let quiet = f.k(cx, if wide { 1u64 << 51 } else { 1 << 22 });
    let nan_k = f.k(
        cx,
        if wide {
            0xFFF8_0000_0000_0000
        } else {
            0xFFC0_0000
        },
    );
    let nan1 = cx.cmp(CmpOp::GtU, a1, inf);
    let nan2 = cx.cmp(CmpOp::GtU, a2, inf);
    let zero1 = cx.cmp(CmpOp::Eq, a1, z);
    let zero2 = cx.cmp(CmpOp::Eq, a2, z);
    let inf1 = cx.cmp(CmpOp::Eq, a1, inf);
    let inf2 = cx.cmp(CmpOp::Eq, a2, inf);
    let e1 = f.exp(cx, b1);
    let e2 = f.exp(cx, b2);
    let diff = cx.bin(Ty::U32, BinOp::Sub, e2, e1);
    let lim = cx.c32(if wide {
        (-1075i32) as u32
    } else {
        (-150i32) as u32
    });
    let under = cx.cmp(CmpOp::LtI, diff, lim);
    let q_nan2 = cx.bin(ity, BinOp::Or, b2, quiet);
    let q_nan1 = cx.bin(ity, BinOp::Or, b1, quiet);
    let s_inf = cx.bin(ity, BinOp::Or, s_out, inf);
    let s_abs = cx.bin(ity, BinOp::Or, s_out, aq);
    // From the last case to the first.
    let mut d = s_abs;
    d = cx.sel(ity, under, s_out, d);
    let zero_out = cx.or_b(inf1, zero2);
    d = cx.sel(ity, zero_out, s_out, d);
    let inf_out = cx.or_b(zero1, inf2);
    d = cx.sel(ity, inf_out, s_inf, d);
    let ii = cx.and_b(inf1, inf2);
    d = cx.sel(ity, ii, nan_k, d);
    let zz = cx.and_b(zero1, zero2);
    d = cx.sel(ity, zz, nan_k, d);
    d = cx.sel(ity, nan1, q_nan1, d);
    d = cx.sel(ity, nan2, q_nan2, d);
    cx.un(ty, UnOp::Bitcast, d)
}

/// V_PERM_B32: byte i of the result is selected by byte i of `sel` from {a, b} (b is bytes
/// 0..3): 0..7 a byte, 8..11 the sign of byte 1/3 of b, 1/3 of a, 12 zero, 13.. 0xFF.
fn perm(cx: &mut Cx, a: ValueId, b: ValueId, sel: ValueId) -> ValueId {
    let both = cx.val(Ty::U64, Op::Pack64(b, a));
    let ff = cx.c32(0xFF);
    let zero = cx.c32(0);
    let c8 = cx.c32(8);
    let c12 = cx.c32(12);
    let c13 = cx.c32(13);
    let mut out = zero;
    for i in 0..4u32 {
        let sh = cx.c32(8 * i);
        let s = cx.bin(Ty::U32, BinOp::ShrU, sel, sh);
        let s = cx.bin(Ty::U32, BinOp::And, s, ff);
        // s < 8: byte s of {a, b}.
        let bsh = cx.bin(Ty::U32, BinOp::Mul, s, c8);
        let byte = cx.bin(Ty::U64, BinOp::ShrU, both, bsh);
        let byte = cx.un(Ty::U32, UnOp::Lo, byte);
        let byte = cx.bin(Ty::U32, BinOp::And, byte, ff);
        // 8..11: bit 15 + 16 * (s - 8) of {a, b}, replicated.
        let k = cx.bin(Ty::U32, BinOp::Sub, s, c8);
        let c16 = cx.c32(16);
        let k = cx.bin(Ty::U32, BinOp::Mul, k, c16);
        let c15 = cx.c32(15);
        let k = cx.bin(Ty::U32, BinOp::Add, k, c15);
        let bit = cx.bin(Ty::U64, BinOp::ShrU, both, k);
        let bit = cx.un(Ty::U32, UnOp::Lo, bit);
        let one = cx.c32(1);
        let bit = cx.bin(Ty::U32, BinOp::And, bit, one);
        let signb = cx.bin(Ty::U32, BinOp::Mul, bit, ff);
        let lt8 = cx.cmp(CmpOp::LtU, s, c8);
        let lt12 = cx.cmp(CmpOp::LtU, s, c12);
        let lt13 = cx.cmp(CmpOp::LtU, s, c13);
        let v = cx.sel(Ty::U32, lt13, zero, ff);
        let v = cx.sel(Ty::U32, lt12, signb, v);
        let v = cx.sel(Ty::U32, lt8, byte, v);
        let v = cx.bin(Ty::U32, BinOp::Shl, v, sh);
        out = cx.bin(Ty::U32, BinOp::Or, out, v);
    }
    out
}

/// HW_REG_MODE, the hardware register id of MODE in `hwreg(...)`.
const HW_REG_MODE: u32 = 1;

impl Cx {
    /// `s_getreg_b32` / `s_setreg_b32` / `s_setreg_imm32_b32` of MODE.
    pub(super) fn hwreg(&mut self, inst: &Instruction) -> R<()> {
        let name = inst.name();
        let w0 = inst.words.get(0);
        let simm = w0 & 0xFFFF;
        let id = simm & 0x3F;
        let off = (simm >> 6) & 0x1F;
        let size = ((simm >> 11) & 0x1F) + 1;
        let sdst = ((w0 >> 16) & 0x7F) as SReg;
        // The flat scratch base (HW_REG_FLAT_SCR_LO/HI, 20/21 on GFX10; what a kernel that
        // calls functions sets up first) only serves FLAT `scratch_*` instructions, which are
        // refused, and FLAT accesses to the private aperture, which fault as unmapped (guest
        // addresses go through the range table): nothing reads the value, so writing it is
        // a no-op.
        if name == "s_setreg_b32" && (id == 20 || id == 21) {
            return Ok(());
        }
        if id != HW_REG_MODE {
            return Err(format!(
                "hardware register {id} (only MODE, id 1, is modelled) {UNSUPPORTED}"
            ));
        }
        let mask = if size >= 32 {
            u32::MAX
        } else {
            (1u32 << size) - 1
        };
        match name {
            "s_getreg_b32" => {
                let v = self.c32((self.mode >> off) & mask);
                self.write_s(sdst, v);
                Ok(())
            }
            "s_setreg_imm32_b32" => {
                let lit = inst
                    .literal
                    .ok_or("s_setreg_imm32_b32 without its literal")?;
                let want = (self.mode >> off) & mask;
                let got = lit & mask;
                if got != want {
                    return Err(format!(
                        "MODE write of 0x{got:x} to bits {}..{} changes the float model \
                         (the program's MODE is 0x{:03x}, from PGM_RSRC1) {UNSUPPORTED}",
                        off,
                        off + size - 1,
                        self.mode
                    ));
                }
                Ok(())
            }
            _ => Err(format!(
                "s_setreg_b32 of MODE from an SGPR (a value the translation cannot check) \
                 {UNSUPPORTED}"
            )),
        }
    }

    /// GFX10 `s_round_mode` / `s_denorm_mode`: accepted when they set the model's value.
    pub(super) fn mode_sopp(&mut self, name: &str, simm: u32) -> R<()> {
        let (want, got) = if name == "s_round_mode" {
            (self.mode & 0xF, simm & 0xF)
        } else {
            ((self.mode >> 4) & 0xF, simm & 0xF)
        };
        if want != got {
            return Err(format!(
                "{name} 0x{got:x} changes the float model (the translator keeps 0x{want:x}) \
                 {UNSUPPORTED}"
            ));
        }
        Ok(())
    }
}
