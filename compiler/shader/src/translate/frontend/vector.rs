//! Vector instructions (VOP1/VOP2/VOP3/VOPC, FLAT/GLOBAL, DS) -> lane IR.

use super::memory;
use super::*;

impl Cx {
    /// Wraps the statements of one lane instruction with its grouping facts.
    pub(super) fn lane(&mut self, mem: Option<bool>, cross_lane: bool) -> Lowered {
        Lowered::Lanes(self.lane_inst(mem, cross_lane))
    }

    /// [`Cx::lane`] without the wrapper (one step of a [`Lowered::LaneSeq`]).
    pub(super) fn lane_inst(&mut self, mem: Option<bool>, cross_lane: bool) -> LaneInst {
        let stmts = std::mem::take(&mut self.stmts);
        let mut masks = Vec::new();
        let mut uniform_reads = Vec::new();
        let mut writes_exec = false;
        for s in &stmts {
            match s.op {
                Op::WriteMaskBit(r, _) => {
                    writes_exec |= r == EXEC_LO;
                    if !masks.contains(&r) {
                        masks.push(r);
                    }
                }
                Op::ReadS(r) => uniform_reads.push(r),
                _ => {}
            }
        }
        LaneInst {
            stmts,
            masks,
            uniform_reads,
            mem,
            writes_exec,
            cross_lane,
        }
    }

    pub(super) fn write_v(&mut self, r: u16, v: ValueId) {
        let v = match self.sdwa {
            Some(d) => self.sdwa_place(r, v, d),
            None => v,
        };
        self.eff(Op::WriteV(r, v));
    }
    fn write_v64(&mut self, r: u16, v: ValueId) {
        let lo = self.un(Ty::U32, UnOp::Lo, v);
        let hi = self.un(Ty::U32, UnOp::Hi, v);
        self.write_v(r, lo);
        self.write_v(r + 1, hi);
    }

    pub(super) fn valu(&mut self, inst: &Instruction) -> R<Lowered> {
        let full = inst.name();
        let name = full
            .trim_end_matches("_e32")
            .trim_end_matches("_e64")
            .trim_end_matches("_sdwa")
            .trim_end_matches("_dpp");
        let ops = operands(inst, self.wave64);
        let dsts: Vec<Operand> = ops
            .iter()
            .filter(|o| o.role == Role::Dst)
            .copied()
            .collect();
        let srcs: Vec<Operand> = ops
            .iter()
            .filter(|o| o.role == Role::Src)
            .copied()
            .collect();
        let vop3 = inst.family == Family::Vop3;
        let w0 = inst.words.get(0);
        let w1 = inst.words.get(1);
        let clamp = vop3 && (w0 >> 15) & 1 != 0;
        let omod = if vop3 { (w1 >> 27) & 3 } else { 0 };
        if omod != 0 {
            return Err(format!("output modifier (omod) {UNSUPPORTED}"));
        }
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

        // Cross-lane reads into SGPRs run once per wave.
        match name {
            "v_readfirstlane_b32" | "v_readlane_b32" => {
                let Value::Vgpr { first, .. } = s(0)?.value else {
                    return Err(format!("readlane of a non-VGPR source {UNSUPPORTED}"));
                };
                let lane = if name == "v_readfirstlane_b32" {
                    self.val(Ty::U32, Op::FirstActiveLane)
                } else {
                    let l = self.src(&s(1)?, Kind::B32)?;
                    let m = self.c32(self.lanes() - 1);
                    self.bin(Ty::U32, BinOp::And, l, m)
                };
                let v = self.val(Ty::U32, Op::ReadLane(first, lane));
                let r = self.sreg_of(&dsts[0].value)?;
                self.write_s(r, v);
                return Ok(Lowered::Scalar(std::mem::take(&mut self.stmts)));
            }
            "v_nop" => return Ok(Lowered::Scalar(Vec::new())),
            "v_permlane16_b32" | "v_permlanex16_b32" => return self.permlane(inst, name),
            _ => {}
        }
        if let Some(l) = self.valu_ext(name, inst, &dsts, &srcs, clamp)? {
            return Ok(l);
        }

        if inst.family == Family::Vopc {
            return self.vcmp(name, &dsts, &srcs, inst);
        }
        if name.starts_with("v_cmp") {
            // VOP3-encoded compares.
            return self.vcmp(name, &dsts, &srcs, inst);
        }

        let f32r = |cx: &mut Cx, d: u16, x: ValueId| -> R<()> {
            let x = if clamp { clamp01(cx, x, Ty::F32) } else { x };
            let b = cx.un(Ty::U32, UnOp::Bitcast, x);
            cx.write_v(d, b);
            Ok(())
        };
        let f64r = |cx: &mut Cx, d: u16, x: ValueId| -> R<()> {
            let x = if clamp { clamp01(cx, x, Ty::F64) } else { x };
            let b = cx.un(Ty::U64, UnOp::Bitcast, x);
            cx.write_v64(d, b);
            Ok(())
        };
        let int_clamp = |cx: &Cx| -> R<()> {
            let _ = cx;
            if clamp {
                Err(format!("clamp on an integer operation {UNSUPPORTED}"))
            } else {
                Ok(())
            }
        };

        // Float operations.
        let fbin = match name {
            "v_add_f32" => Some((BinOp::FAdd, false, Ty::F32)),
            "v_sub_f32" => Some((BinOp::FSub, false, Ty::F32)),
            "v_subrev_f32" => Some((BinOp::FSub, true, Ty::F32)),
            "v_mul_f32" => Some((BinOp::FMul, false, Ty::F32)),
            "v_min_f32" => Some((BinOp::FMin, false, Ty::F32)),
            "v_max_f32" => Some((BinOp::FMax, false, Ty::F32)),
            "v_add_f64" => Some((BinOp::FAdd, false, Ty::F64)),
            "v_mul_f64" => Some((BinOp::FMul, false, Ty::F64)),
            "v_min_f64" => Some((BinOp::FMin, false, Ty::F64)),
            "v_max_f64" => Some((BinOp::FMax, false, Ty::F64)),
            _ => None,
        };
        if let Some((op, rev, ty)) = fbin {
            let k = if ty == Ty::F32 { Kind::F32 } else { Kind::F64 };
            let a = self.src(&s(0)?, k)?;
            let b = self.src(&s(1)?, k)?;
            let (a, b) = if rev { (b, a) } else { (a, b) };
            let x = self.bin(ty, op, a, b);
            let d = vdst(0)?;
            if ty == Ty::F32 {
                f32r(self, d, x)?
            } else {
                f64r(self, d, x)?
            }
            return Ok(self.lane(None, false));
        }
        match name {
            "v_fma_f32" | "v_fmac_f32" | "v_fmamk_f32" | "v_fmaak_f32" | "v_fma_f64" => {
                let (k, ty) = if name.ends_with("f64") {
                    (Kind::F64, Ty::F64)
                } else {
                    (Kind::F32, Ty::F32)
                };
                let d = vdst(0)?;
                let (a, b, c) = match name {
                    // d = a * b + d
                    "v_fmac_f32" => {
                        let a = self.src(&s(0)?, k)?;
                        let b = self.src(&s(1)?, k)?;
                        let old = self.val(Ty::U32, Op::ReadV(d));
                        let c = self.un(Ty::F32, UnOp::Bitcast, old);
                        (a, b, c)
                    }
                    // d = a * K + b (operands print as a, K, b)
                    "v_fmamk_f32" | "v_fmaak_f32" => {
                        let a = self.src(&s(0)?, k)?;
                        let b = self.src(&s(1)?, k)?;
                        let c = self.src(&s(2)?, k)?;
                        (a, b, c)
                    }
                    _ => {
                        let a = self.src(&s(0)?, k)?;
                        let b = self.src(&s(1)?, k)?;
                        let c = self.src(&s(2)?, k)?;
                        (a, b, c)
                    }
                };
                let x = self.val(ty, Op::Fma(a, b, c));
                if ty == Ty::F32 {
                    f32r(self, d, x)?
                } else {
                    f64r(self, d, x)?
                }
                return Ok(self.lane(None, false));
            }
            "v_ldexp_f32" | "v_ldexp_f64" => {
                let (k, ty) = if name.ends_with("f64") {
                    (Kind::F64, Ty::F64)
                } else {
                    (Kind::F32, Ty::F32)
                };
                let a = self.src(&s(0)?, k)?;
                let e = self.src(&s(1)?, Kind::B32)?;
                let x = self.bin(ty, BinOp::Ldexp, a, e);
                let d = vdst(0)?;
                if ty == Ty::F32 {
                    f32r(self, d, x)?
                } else {
                    f64r(self, d, x)?
                }
                return Ok(self.lane(None, false));
            }
            _ => {}
        }
        // Float unary / conversions: (op, source kind, result type).
        let fun = match name {
            "v_rcp_f32" => Some((None, Kind::F32, Ty::F32)),
            "v_sqrt_f32" => Some((Some(UnOp::Sqrt), Kind::F32, Ty::F32)),
            "v_sqrt_f64" => Some((Some(UnOp::Sqrt), Kind::F64, Ty::F64)),
            "v_floor_f32" => Some((Some(UnOp::Floor), Kind::F32, Ty::F32)),
            "v_ceil_f32" => Some((Some(UnOp::Ceil), Kind::F32, Ty::F32)),
            "v_trunc_f32" => Some((Some(UnOp::Trunc), Kind::F32, Ty::F32)),
            "v_rndne_f32" => Some((Some(UnOp::RoundEven), Kind::F32, Ty::F32)),
            "v_fract_f32" => Some((Some(UnOp::Fract), Kind::F32, Ty::F32)),
            "v_floor_f64" => Some((Some(UnOp::Floor), Kind::F64, Ty::F64)),
            "v_ceil_f64" => Some((Some(UnOp::Ceil), Kind::F64, Ty::F64)),
            "v_trunc_f64" => Some((Some(UnOp::Trunc), Kind::F64, Ty::F64)),
            "v_rndne_f64" => Some((Some(UnOp::RoundEven), Kind::F64, Ty::F64)),
            "v_cvt_f32_u32" => Some((Some(UnOp::U32ToF32), Kind::B32, Ty::F32)),
            "v_cvt_f32_i32" => Some((Some(UnOp::I32ToF32), Kind::B32, Ty::F32)),
            "v_cvt_f64_u32" => Some((Some(UnOp::U32ToF64), Kind::B32, Ty::F64)),
            "v_cvt_f64_i32" => Some((Some(UnOp::I32ToF64), Kind::B32, Ty::F64)),
            "v_cvt_u32_f32" => Some((Some(UnOp::F32ToU32), Kind::F32, Ty::U32)),
            "v_cvt_i32_f32" => Some((Some(UnOp::F32ToI32), Kind::F32, Ty::U32)),
            "v_cvt_u32_f64" => Some((Some(UnOp::F64ToU32), Kind::F64, Ty::U32)),
            "v_cvt_i32_f64" => Some((Some(UnOp::F64ToI32), Kind::F64, Ty::U32)),
            "v_cvt_f64_f32" => Some((Some(UnOp::F32ToF64), Kind::F32, Ty::F64)),
            "v_cvt_f32_f64" => Some((Some(UnOp::F64ToF32), Kind::F64, Ty::F32)),
            _ => None,
        };
        if let Some((op, k, rt)) = fun {
            let a = self.src(&s(0)?, k)?;
            let x = match op {
                Some(op) => self.un(rt, op, a),
                None => {
                    let one = self.c32(1.0f32.to_bits());
                    let one = self.un(Ty::F32, UnOp::Bitcast, one);
                    self.val(Ty::F32, Op::Bin(BinOp::FDiv, one, a))
                }
            };
            let d = vdst(0)?;
            match rt {
                Ty::F32 => f32r(self, d, x)?,
                Ty::F64 => f64r(self, d, x)?,
                _ => {
                    int_clamp(self)?;
                    self.write_v(d, x)
                }
            }
            return Ok(self.lane(None, false));
        }

        // Integer operations.
        int_clamp(self)?;
        let ibin = match name {
            "v_add_nc_u32" | "v_add_u32" => Some((BinOp::Add, false)),
            "v_sub_nc_u32" => Some((BinOp::Sub, false)),
            "v_subrev_nc_u32" => Some((BinOp::Sub, true)),
            "v_and_b32" => Some((BinOp::And, false)),
            "v_or_b32" => Some((BinOp::Or, false)),
            "v_xor_b32" => Some((BinOp::Xor, false)),
            "v_lshlrev_b32" => Some((BinOp::Shl, true)),
            "v_lshrrev_b32" => Some((BinOp::ShrU, true)),
            "v_ashrrev_i32" => Some((BinOp::ShrI, true)),
            "v_min_i32" => Some((BinOp::MinI, false)),
            "v_max_i32" => Some((BinOp::MaxI, false)),
            "v_min_u32" => Some((BinOp::MinU, false)),
            "v_max_u32" => Some((BinOp::MaxU, false)),
            "v_mul_lo_u32" => Some((BinOp::Mul, false)),
            "v_mul_hi_u32" => Some((BinOp::MulHiU, false)),
            "v_mul_hi_i32" => Some((BinOp::MulHiI, false)),
            _ => None,
        };
        if let Some((op, rev)) = ibin {
            let a = self.src(&s(0)?, Kind::B32)?;
            let b = self.src(&s(1)?, Kind::B32)?;
            let (a, b) = if rev { (b, a) } else { (a, b) };
            let x = self.bin(Ty::U32, op, a, b);
            self.write_v(vdst(0)?, x);
            return Ok(self.lane(None, false));
        }
        match name {
            "v_mov_b32" | "v_not_b32" | "v_bfrev_b32" | "v_ffbl_b32" | "v_ffbh_u32"
            | "v_cvt_f32_ubyte0" | "v_cvt_f32_ubyte1" | "v_cvt_f32_ubyte2" | "v_cvt_f32_ubyte3" => {
                let a = self.src(&s(0)?, Kind::B32)?;
                let x = match name {
                    "v_mov_b32" => a,
                    "v_not_b32" => self.un(Ty::U32, UnOp::Not, a),
                    "v_bfrev_b32" => self.un(Ty::U32, UnOp::BitReverse, a),
                    "v_ffbl_b32" => self.un(Ty::U32, UnOp::FindLsb, a),
                    "v_ffbh_u32" => self.un(Ty::U32, UnOp::FindMsbFromTop, a),
                    _ => {
                        let n = (name.as_bytes()[name.len() - 1] - b'0') as u32 * 8;
                        let c = self.c32(n);
                        let sh = self.bin(Ty::U32, BinOp::ShrU, a, c);
                        let m = self.c32(0xFF);
                        let b = self.bin(Ty::U32, BinOp::And, sh, m);
                        let f = self.un(Ty::F32, UnOp::U32ToF32, b);
                        self.un(Ty::U32, UnOp::Bitcast, f)
                    }
                };
                self.write_v(vdst(0)?, x);
            }
            "v_bcnt_u32_b32" => {
                let a = self.src(&s(0)?, Kind::B32)?;
                let b = self.src(&s(1)?, Kind::B32)?;
                let p = self.un(Ty::U32, UnOp::Popcount, a);
                let x = self.bin(Ty::U32, BinOp::Add, p, b);
                self.write_v(vdst(0)?, x);
            }
            "v_mbcnt_lo_u32_b32" | "v_mbcnt_hi_u32_b32" => {
                // Bits of src0 for the lanes below this one (lo: lanes 0..31, hi: 32..63).
                let a = self.src(&s(0)?, Kind::B32)?;
                let b = self.src(&s(1)?, Kind::B32)?;
                let lane = self.val(Ty::U32, Op::LaneId);
                let c32 = self.c32(32);
                let one = self.c32(1);
                let all = self.c32(!0);
                let zero = self.c32(0);
                let lt = self.cmp(CmpOp::LtU, lane, c32);
                let mask = if name == "v_mbcnt_lo_u32_b32" {
                    let sh = self.bin(Ty::U32, BinOp::Shl, one, lane);
                    let m = self.bin(Ty::U32, BinOp::Sub, sh, one);
                    self.val(Ty::U32, Op::Select(lt, m, all))
                } else {
                    let l = self.bin(Ty::U32, BinOp::Sub, lane, c32);
                    let sh = self.bin(Ty::U32, BinOp::Shl, one, l);
                    let m = self.bin(Ty::U32, BinOp::Sub, sh, one);
                    self.val(Ty::U32, Op::Select(lt, zero, m))
                };
                let bits = self.bin(Ty::U32, BinOp::And, a, mask);
                let p = self.un(Ty::U32, UnOp::Popcount, bits);
                let x = self.bin(Ty::U32, BinOp::Add, p, b);
                self.write_v(vdst(0)?, x);
            }
            "v_mul_u32_u24" | "v_mul_i32_i24" | "v_mul_hi_u32_u24" | "v_mul_hi_i32_i24"
            | "v_mad_u32_u24" | "v_mad_i32_i24" => {
                let signed = name.contains("_i32_i24");
                let a = self.src(&s(0)?, Kind::B32)?;
                let b = self.src(&s(1)?, Kind::B32)?;
                let a = ext24(self, a, signed);
                let b = ext24(self, b, signed);
                let mut x = if name.contains("_hi_") {
                    // The product of two 24-bit values fits 48 bits: bits 63..32 of it.
                    let op = if signed { BinOp::MulHiI } else { BinOp::MulHiU };
                    self.bin(Ty::U32, op, a, b)
                } else {
                    self.bin(Ty::U32, BinOp::Mul, a, b)
                };
                if name.starts_with("v_mad") {
                    let c = self.src(&s(2)?, Kind::B32)?;
                    x = self.bin(Ty::U32, BinOp::Add, x, c);
                }
                self.write_v(vdst(0)?, x);
            }
            "v_add3_u32" | "v_or3_b32" | "v_xor3_b32" | "v_and_or_b32" | "v_lshl_add_u32"
            | "v_add_lshl_u32" | "v_lshl_or_b32" | "v_xad_u32" => {
                let a = self.src(&s(0)?, Kind::B32)?;
                let b = self.src(&s(1)?, Kind::B32)?;
                let c = self.src(&s(2)?, Kind::B32)?;
                let (o1, o2) = match name {
                    "v_add3_u32" => (BinOp::Add, BinOp::Add),
                    "v_or3_b32" => (BinOp::Or, BinOp::Or),
                    "v_xor3_b32" => (BinOp::Xor, BinOp::Xor),
                    "v_and_or_b32" => (BinOp::And, BinOp::Or),
                    "v_lshl_add_u32" => (BinOp::Shl, BinOp::Add),
                    "v_add_lshl_u32" => (BinOp::Add, BinOp::Shl),
                    "v_lshl_or_b32" => (BinOp::Shl, BinOp::Or),
                    _ => (BinOp::Xor, BinOp::Add),
                };
                let t = self.bin(Ty::U32, o1, a, b);
                let x = self.bin(Ty::U32, o2, t, c);
                self.write_v(vdst(0)?, x);
            }
            "v_min3_i32" | "v_min3_u32" | "v_max3_i32" | "v_max3_u32" | "v_med3_i32"
            | "v_med3_u32" => {
                let a = self.src(&s(0)?, Kind::B32)?;
                let b = self.src(&s(1)?, Kind::B32)?;
                let c = self.src(&s(2)?, Kind::B32)?;
                let signed = name.ends_with("i32");
                let (mn, mx) = if signed {
                    (BinOp::MinI, BinOp::MaxI)
                } else {
                    (BinOp::MinU, BinOp::MaxU)
                };
                let x = if name.starts_with("v_min3") {
                    let t = self.bin(Ty::U32, mn, a, b);
                    self.bin(Ty::U32, mn, t, c)
                } else if name.starts_with("v_max3") {
                    let t = self.bin(Ty::U32, mx, a, b);
                    self.bin(Ty::U32, mx, t, c)
                } else {
                    // med3 = max(min(a, b), min(max(a, b), c))
                    let lo = self.bin(Ty::U32, mn, a, b);
                    let hi = self.bin(Ty::U32, mx, a, b);
                    let t = self.bin(Ty::U32, mn, hi, c);
                    self.bin(Ty::U32, mx, lo, t)
                };
                self.write_v(vdst(0)?, x);
            }
            "v_min3_f32" | "v_max3_f32" | "v_med3_f32" => {
                let a = self.src(&s(0)?, Kind::F32)?;
                let b = self.src(&s(1)?, Kind::F32)?;
                let c = self.src(&s(2)?, Kind::F32)?;
                let min3 = |cx: &mut Cx| {
                    let t = cx.bin(Ty::F32, BinOp::FMin, a, b);
                    cx.bin(Ty::F32, BinOp::FMin, t, c)
                };
                let x = match name {
                    "v_min3_f32" => min3(self),
                    "v_max3_f32" => {
                        let t = self.bin(Ty::F32, BinOp::FMax, a, b);
                        self.bin(Ty::F32, BinOp::FMax, t, c)
                    }
                    _ => {
                        // The ISA: any NaN operand gives min3 (minNum, so the least number);
                        // otherwise the middle value, max(min(a, b), min(max(a, b), c)).
                        let lo = self.bin(Ty::F32, BinOp::FMin, a, b);
                        let hi = self.bin(Ty::F32, BinOp::FMax, a, b);
                        let t = self.bin(Ty::F32, BinOp::FMin, hi, c);
                        let mid = self.bin(Ty::F32, BinOp::FMax, lo, t);
                        let nab = self.cmp(CmpOp::FU, a, b);
                        let nc = self.cmp(CmpOp::FU, c, c);
                        let nan = self.bin(Ty::Bool, BinOp::Or, nab, nc);
                        let m3 = min3(self);
                        self.val(Ty::F32, Op::Select(nan, m3, mid))
                    }
                };
                f32r(self, vdst(0)?, x)?;
            }
            "v_bfe_u32" | "v_bfe_i32" => {
                let a = self.src(&s(0)?, Kind::B32)?;
                let b = self.src(&s(1)?, Kind::B32)?;
                let c = self.src(&s(2)?, Kind::B32)?;
                let m = self.c32(31);
                let w = self.bin(Ty::U32, BinOp::And, c, m);
                let x = bfe_parts(self, a, b, w, name == "v_bfe_i32");
                self.write_v(vdst(0)?, x);
            }
            "v_bfi_b32" => {
                let a = self.src(&s(0)?, Kind::B32)?;
                let b = self.src(&s(1)?, Kind::B32)?;
                let c = self.src(&s(2)?, Kind::B32)?;
                let t1 = self.bin(Ty::U32, BinOp::And, a, b);
                let na = self.un(Ty::U32, UnOp::Not, a);
                let t2 = self.bin(Ty::U32, BinOp::And, na, c);
                let x = self.bin(Ty::U32, BinOp::Or, t1, t2);
                self.write_v(vdst(0)?, x);
            }
            "v_bfm_b32" => {
                let a = self.src(&s(0)?, Kind::B32)?;
                let b = self.src(&s(1)?, Kind::B32)?;
                let m = self.c32(31);
                let a = self.bin(Ty::U32, BinOp::And, a, m);
                let one = self.c32(1);
                let one64 = self.un(Ty::U64, UnOp::Zext, one);
                let sh = self.bin(Ty::U64, BinOp::Shl, one64, a);
                let sh = self.un(Ty::U32, UnOp::Lo, sh);
                let mm = self.bin(Ty::U32, BinOp::Sub, sh, one);
                let x = self.bin(Ty::U32, BinOp::Shl, mm, b);
                self.write_v(vdst(0)?, x);
            }
            "v_alignbit_b32" => {
                let a = self.src(&s(0)?, Kind::B32)?;
                let b = self.src(&s(1)?, Kind::B32)?;
                let c = self.src(&s(2)?, Kind::B32)?;
                let wide = self.val(Ty::U64, Op::Pack64(b, a));
                let m = self.c32(31);
                let c = self.bin(Ty::U32, BinOp::And, c, m);
                let sh = self.bin(Ty::U64, BinOp::ShrU, wide, c);
                let x = self.un(Ty::U32, UnOp::Lo, sh);
                self.write_v(vdst(0)?, x);
            }
            "v_cndmask_b32" => {
                let a = self.src(&s(0)?, Kind::B32)?;
                let b = self.src(&s(1)?, Kind::B32)?;
                let c = self.mask_bit(&s(2)?)?;
                let x = self.val(Ty::U32, Op::Select(c, b, a));
                self.write_v(vdst(0)?, x);
            }
            "v_lshlrev_b64" | "v_lshrrev_b64" | "v_ashrrev_i64" => {
                let sh = self.src(&s(0)?, Kind::B32)?;
                let v = self.src(&s(1)?, Kind::B64)?;
                let op = match name {
                    "v_lshlrev_b64" => BinOp::Shl,
                    "v_lshrrev_b64" => BinOp::ShrU,
                    _ => BinOp::ShrI,
                };
                let x = self.bin(Ty::U64, op, v, sh);
                self.write_v64(vdst(0)?, x);
            }
            "v_add_co_u32" | "v_sub_co_u32" | "v_subrev_co_u32" | "v_add_co_ci_u32"
            | "v_sub_co_ci_u32" | "v_subrev_co_ci_u32" => {
                // dst, carry-out mask, a, b[, carry-in mask]
                let carry_out = self.sreg_of(&dsts[1].value)?;
                let mut a = self.src(&s(0)?, Kind::B32)?;
                let mut b = self.src(&s(1)?, Kind::B32)?;
                if name.starts_with("v_subrev") {
                    std::mem::swap(&mut a, &mut b);
                }
                let a64 = self.un(Ty::U64, UnOp::Zext, a);
                let b64 = self.un(Ty::U64, UnOp::Zext, b);
                let op = if name.starts_with("v_add") {
                    BinOp::Add
                } else {
                    BinOp::Sub
                };
                let mut r = self.bin(Ty::U64, op, a64, b64);
                if name.ends_with("_ci_u32") {
                    let ci = self.mask_bit(&s(2)?)?;
                    let c = self.un(Ty::U32, UnOp::BoolToU32, ci);
                    let c64 = self.un(Ty::U64, UnOp::Zext, c);
                    r = self.bin(Ty::U64, op, r, c64);
                }
                let lo = self.un(Ty::U32, UnOp::Lo, r);
                let hi = self.un(Ty::U32, UnOp::Hi, r);
                let co = self.un(Ty::Bool, UnOp::U32ToBool, hi);
                self.write_v(vdst(0)?, lo);
                self.eff(Op::WriteMaskBit(carry_out, co));
            }
            "v_mad_u64_u32" | "v_mad_i64_i32" => {
                let carry_out = self.sreg_of(&dsts[1].value)?;
                let a = self.src(&s(0)?, Kind::B32)?;
                let b = self.src(&s(1)?, Kind::B32)?;
                let c = self.src(&s(2)?, Kind::B64)?;
                let signed = name == "v_mad_i64_i32";
                let (a64, b64) = if signed {
                    (sext64(self, a), sext64(self, b))
                } else {
                    (
                        self.un(Ty::U64, UnOp::Zext, a),
                        self.un(Ty::U64, UnOp::Zext, b),
                    )
                };
                let p = self.bin(Ty::U64, BinOp::Mul, a64, b64);
                let x = self.bin(Ty::U64, BinOp::Add, p, c);
                // Carry out of the 64-bit add (unsigned); the signed form reports signed
                // overflow of the 128-bit result, which a 64x64 product of 32-bit values
                // plus a 64-bit addend can only overflow by the add.
                let co = if signed {
                    let t1 = self.bin(Ty::U64, BinOp::Xor, p, x);
                    let t2 = self.bin(Ty::U64, BinOp::Xor, c, x);
                    let t = self.bin(Ty::U64, BinOp::And, t1, t2);
                    let z = self.val(Ty::U64, Op::Const64(0));
                    self.cmp(CmpOp::LtI, t, z)
                } else {
                    self.cmp(CmpOp::LtU, x, p)
                };
                self.write_v64(vdst(0)?, x);
                self.eff(Op::WriteMaskBit(carry_out, co));
            }
            _ => return Err(UNSUPPORTED.into()),
        }
        Ok(self.lane(None, false))
    }

    fn vcmp(
        &mut self,
        name: &str,
        dsts: &[Operand],
        srcs: &[Operand],
        inst: &Instruction,
    ) -> R<Lowered> {
        let _ = inst;
        let x = name.starts_with("v_cmpx_");
        let dst = if x {
            EXEC_LO
        } else if let Some(r) = self.sdwa.and_then(|d| d.sdst) {
            r
        } else {
            match dsts.first() {
                Some(o) => self.sreg_of(&o.value)?,
                None => VCC_LO,
            }
        };
        let rest = name
            .trim_start_matches("v_cmpx_")
            .trim_start_matches("v_cmp_");
        let bit = if rest.starts_with("f_") || rest.starts_with("t_") {
            self.val(Ty::Bool, Op::ConstBool(rest.starts_with("t_")))
        } else {
            let (op, ty) = cmp_of(name).ok_or(UNSUPPORTED)?;
            let k = match ty {
                Ty::U64 => Kind::B64,
                Ty::F32 => Kind::F32,
                Ty::F64 => Kind::F64,
                _ => Kind::B32,
            };
            let a = self.src(&srcs[0], k)?;
            let b = self.src(&srcs[1], k)?;
            self.cmp(op, a, b)
        };
        self.eff(Op::WriteMaskBit(dst, bit));
        Ok(self.lane(None, false))
    }

    pub(super) fn flat(&mut self, inst: &Instruction) -> R<Lowered> {
        let name = inst.name();
        let w0 = inst.words.get(0);
        let w1 = inst.words.get(1);
        let seg = (w0 >> 14) & 3;
        if seg == 1 {
            return Err(format!("scratch memory {UNSUPPORTED}"));
        }
        let glc = (w0 >> 16) & 1 != 0;
        let vaddr = (w1 & 0xFF) as u16;
        let vdata = ((w1 >> 8) & 0xFF) as u16;
        let saddr = ((w1 >> 16) & 0x7F) as SReg;
        let vdst = (w1 >> 24) as u16;
        // 12-bit offset: signed for global, unsigned for flat.
        let raw = w0 & 0xFFF;
        let off = if seg == 2 {
            ((raw << 20) as i32 >> 20) as i64
        } else {
            (raw & 0x7FF) as i64
        };
        let addr = if saddr == 125 || seg == 0 {
            let lo = self.val(Ty::U32, Op::ReadV(vaddr));
            let hi = self.val(Ty::U32, Op::ReadV(vaddr + 1));
            self.val(Ty::U64, Op::Pack64(lo, hi))
        } else {
            let base = self.read_s64(saddr);
            let v = self.val(Ty::U32, Op::ReadV(vaddr));
            let v64 = self.un(Ty::U64, UnOp::Zext, v);
            self.bin(Ty::U64, BinOp::Add, base, v64)
        };
        let addr = if off != 0 {
            let c = self.val(Ty::U64, Op::Const64(off as u64));
            self.bin(Ty::U64, BinOp::Add, addr, c)
        } else {
            addr
        };
        let op = name
            .trim_start_matches("global_")
            .trim_start_matches("flat_");
        let dwords = |suffix: &str| -> Option<u8> {
            Some(match suffix {
                "dword" => 1,
                "dwordx2" => 2,
                "dwordx3" => 3,
                "dwordx4" => 4,
                _ => return None,
            })
        };
        if let Some(k) = memory::sub_kind(op) {
            return Ok(self.sub_access(Space::Guest, k, addr, vdst, vdata));
        }
        if let Some(n) = op.strip_prefix("load_").and_then(dwords) {
            let v = self.val(
                Ty::U32,
                Op::Load {
                    space: Space::Guest,
                    addr,
                    dwords: n,
                },
            );
            for k in 0..n {
                let d = if n == 1 {
                    v
                } else {
                    self.val(Ty::U32, Op::Extract(v, k))
                };
                self.write_v(vdst + k as u16, d);
            }
            return Ok(self.lane(Some(false), false));
        }
        if let Some(n) = op.strip_prefix("store_").and_then(dwords) {
            let data = (0..n)
                .map(|k| self.val(Ty::U32, Op::ReadV(vdata + k as u16)))
                .collect();
            self.eff(Op::Store {
                space: Space::Guest,
                addr,
                data,
            });
            return Ok(self.lane(Some(true), false));
        }
        if let Some(a) = op.strip_prefix("atomic_") {
            let (a, wide) = match a.strip_suffix("_x2") {
                Some(a) => (a, true),
                None => (a, false),
            };
            let aop = atomic_of(a).ok_or(UNSUPPORTED)?;
            let (ty, n) = if wide { (Ty::U64, 2) } else { (Ty::U32, 1) };
            let read = |cx: &mut Cx, r: u16| -> ValueId {
                let lo = cx.val(Ty::U32, Op::ReadV(r));
                if wide {
                    let hi = cx.val(Ty::U32, Op::ReadV(r + 1));
                    cx.val(Ty::U64, Op::Pack64(lo, hi))
                } else {
                    lo
                }
            };
            // cmpswap: vdata = {new value, expected}.
            let data = read(self, vdata);
            let cmp = if aop == AtomicOp::CmpSwap {
                Some(read(self, vdata + n))
            } else {
                None
            };
            let old = self.val(
                ty,
                Op::Atomic {
                    wide,
                    space: Space::Guest,
                    op: aop,
                    addr,
                    data,
                    cmp,
                },
            );
            if glc {
                if wide {
                    self.write_v64(vdst, old);
                } else {
                    self.write_v(vdst, old);
                }
            }
            return Ok(self.lane(Some(true), false));
        }
        Err(UNSUPPORTED.into())
    }

    pub(super) fn ds(&mut self, inst: &Instruction) -> R<Lowered> {
        let name = inst.name();
        let w0 = inst.words.get(0);
        let w1 = inst.words.get(1);
        if (w0 >> 17) & 1 != 0 {
            return Err(format!("GDS {UNSUPPORTED}"));
        }
        let off0 = w0 & 0xFF;
        let off1 = (w0 >> 8) & 0xFF;
        let a = (w1 & 0xFF) as u16;
        let d0 = ((w1 >> 8) & 0xFF) as u16;
        let d1 = ((w1 >> 16) & 0xFF) as u16;
        let vdst = (w1 >> 24) as u16;
        if let Some(l) = self.ds_cross_lane(name, w0 & 0xFFFF, a, d0, vdst)? {
            return Ok(l);
        }
        let base = self.val(Ty::U32, Op::ReadV(a));
        let at = |cx: &mut Cx, off: u32| -> ValueId {
            if off == 0 {
                base
            } else {
                let c = cx.c32(off);
                cx.bin(Ty::U32, BinOp::Add, base, c)
            }
        };
        let off16 = off1 << 8 | off0;
        let load = |cx: &mut Cx, addr: ValueId, n: u8, dst: u16| {
            let v = cx.val(
                Ty::U32,
                Op::Load {
                    space: Space::Lds,
                    addr,
                    dwords: n,
                },
            );
            for k in 0..n {
                let d = if n == 1 {
                    v
                } else {
                    cx.val(Ty::U32, Op::Extract(v, k))
                };
                cx.write_v(dst + k as u16, d);
            }
        };
        let store = |cx: &mut Cx, addr: ValueId, n: u8, src: u16| {
            let data = (0..n)
                .map(|k| cx.val(Ty::U32, Op::ReadV(src + k as u16)))
                .collect();
            cx.eff(Op::Store {
                space: Space::Lds,
                addr,
                data,
            });
        };
        if let Some(k) = memory::sub_kind(name.trim_start_matches("ds_")) {
            let addr = at(self, off16);
            return Ok(self.sub_access(Space::Lds, k, addr, vdst, d0));
        }
        match name {
            "ds_write_b32" | "ds_write_b64" | "ds_write_b96" | "ds_write_b128" => {
                let n = match name {
                    "ds_write_b32" => 1,
                    "ds_write_b64" => 2,
                    "ds_write_b96" => 3,
                    _ => 4,
                };
                let addr = at(self, off16);
                store(self, addr, n, d0);
                Ok(self.lane(Some(true), false))
            }
            "ds_read_b32" | "ds_read_b64" | "ds_read_b96" | "ds_read_b128" => {
                let n = match name {
                    "ds_read_b32" => 1,
                    "ds_read_b64" => 2,
                    "ds_read_b96" => 3,
                    _ => 4,
                };
                let addr = at(self, off16);
                load(self, addr, n, vdst);
                Ok(self.lane(Some(false), false))
            }
            "ds_write2_b32" | "ds_write2st64_b32" | "ds_write2_b64" | "ds_write2st64_b64" => {
                let n = if name.ends_with("b64") { 2 } else { 1 };
                let scale = 4 * n as u32 * if name.contains("st64") { 64 } else { 1 };
                let a0 = at(self, off0 * scale);
                let a1 = at(self, off1 * scale);
                store(self, a0, n, d0);
                store(self, a1, n, d1);
                Ok(self.lane(Some(true), false))
            }
            "ds_read2_b32" | "ds_read2st64_b32" | "ds_read2_b64" | "ds_read2st64_b64" => {
                let n = if name.ends_with("b64") { 2 } else { 1 };
                let scale = 4 * n as u32 * if name.contains("st64") { 64 } else { 1 };
                let a0 = at(self, off0 * scale);
                let a1 = at(self, off1 * scale);
                load(self, a0, n, vdst);
                load(self, a1, n, vdst + n as u16);
                Ok(self.lane(Some(false), false))
            }
            "ds_wrxchg2_rtn_b32" | "ds_wrxchg2st64_rtn_b32" => {
                // Two exchanges at offset0 / offset1 (dwords, x64 for st64); both old values.
                let scale = if name.contains("st64") { 256 } else { 4 };
                for (k, (off, d)) in [(off0, d0), (off1, d1)].into_iter().enumerate() {
                    let addr = at(self, off * scale);
                    let data = self.val(Ty::U32, Op::ReadV(d));
                    let old = self.val(
                        Ty::U32,
                        Op::Atomic {
                            wide: false,
                            space: Space::Lds,
                            op: AtomicOp::Swap,
                            addr,
                            data,
                            cmp: None,
                        },
                    );
                    self.write_v(vdst + k as u16, old);
                }
                Ok(self.lane(Some(true), false))
            }
            _ => {
                let op = name.trim_start_matches("ds_");
                let (op, rtn) = match op.split_once("_rtn_") {
                    Some((o, t)) => (format!("{o}_{t}"), true),
                    None => (op.to_string(), false),
                };
                // 64-bit forms: data, compare and result in VGPR pairs (no host workgroup
                // atomic: spirv.rs runs the program group-serial and does a plain RMW).
                let wide = op.ends_with("_u64") || op.ends_with("_i64") || op.ends_with("_b64");
                let op32 = if wide {
                    format!(
                        "{}_{}32",
                        &op[..op.len() - 4],
                        &op[op.len() - 3..op.len() - 2]
                    )
                } else {
                    op.clone()
                };
                let aop = atomic_of(&op32).ok_or(UNSUPPORTED)?;
                let addr = at(self, off16);
                let read = |s: &mut Self, r: u16| {
                    let lo = s.val(Ty::U32, Op::ReadV(r));
                    if wide {
                        let hi = s.val(Ty::U32, Op::ReadV(r + 1));
                        s.val(Ty::U64, Op::Pack64(lo, hi))
                    } else {
                        lo
                    }
                };
                let (data, cmp) = if aop == AtomicOp::MskOr {
                    let m = read(self, d0);
                    let b = read(self, d1);
                    (m, Some(b))
                } else if aop == AtomicOp::CmpSwap {
                    // ds_cmpst: data0 = compare, data1 = new value.
                    let c = read(self, d0);
                    let n = read(self, d1);
                    (n, Some(c))
                } else {
                    (read(self, d0), None)
                };
                let old = self.val(
                    if wide { Ty::U64 } else { Ty::U32 },
                    Op::Atomic {
                        wide,
                        space: Space::Lds,
                        op: aop,
                        addr,
                        data,
                        cmp,
                    },
                );
                if rtn && wide {
                    let lo = self.un(Ty::U32, UnOp::Lo, old);
                    let hi = self.un(Ty::U32, UnOp::Hi, old);
                    self.write_v(vdst, lo);
                    self.write_v(vdst + 1, hi);
                    return Ok(self.lane(Some(true), false));
                }
                if rtn {
                    self.write_v(vdst, old);
                }
                Ok(self.lane(Some(true), false))
            }
        }
    }
}

/// Atomic operation from the mnemonic tail (`add`, `umax`, `cmpswap`, `add_u32`, ...).
pub(super) fn atomic_of(op: &str) -> Option<AtomicOp> {
    Some(match op {
        "swap" | "wrxchg_b32" => AtomicOp::Swap,
        "add" | "add_u32" => AtomicOp::Add,
        "sub" | "sub_u32" => AtomicOp::Sub,
        "smin" | "min_i32" => AtomicOp::MinI,
        "umin" | "min_u32" => AtomicOp::MinU,
        "smax" | "max_i32" => AtomicOp::MaxI,
        "umax" | "max_u32" => AtomicOp::MaxU,
        "and" | "and_b32" => AtomicOp::And,
        "or" | "or_b32" => AtomicOp::Or,
        "xor" | "xor_b32" => AtomicOp::Xor,
        "cmpswap" | "cmpst_b32" => AtomicOp::CmpSwap,
        "inc" | "inc_u32" => AtomicOp::Inc,
        "dec" | "dec_u32" => AtomicOp::Dec,
        "rsub_u32" => AtomicOp::RSub,
        "mskor_b32" => AtomicOp::MskOr,
        _ => return None,
    })
}

pub(super) fn clamp01(cx: &mut Cx, x: ValueId, ty: Ty) -> ValueId {
    let (z, o) = if ty == Ty::F32 {
        let z = cx.c32(0);
        let o = cx.c32(1.0f32.to_bits());
        (
            cx.un(Ty::F32, UnOp::Bitcast, z),
            cx.un(Ty::F32, UnOp::Bitcast, o),
        )
    } else {
        let z = cx.val(Ty::U64, Op::Const64(0));
        let o = cx.val(Ty::U64, Op::Const64(1.0f64.to_bits()));
        (
            cx.un(Ty::F64, UnOp::Bitcast, z),
            cx.un(Ty::F64, UnOp::Bitcast, o),
        )
    };
    // max then min with NaN -> 0 (the hardware clamps NaN to 0).
    let t = cx.bin(ty, BinOp::FMax, x, z);
    cx.bin(ty, BinOp::FMin, t, o)
}

fn ext24(cx: &mut Cx, a: ValueId, signed: bool) -> ValueId {
    let c = cx.c32(8);
    let up = cx.bin(Ty::U32, BinOp::Shl, a, c);
    let op = if signed { BinOp::ShrI } else { BinOp::ShrU };
    cx.bin(Ty::U32, op, up, c)
}

fn sext64(cx: &mut Cx, a: ValueId) -> ValueId {
    let c = cx.c32(31);
    let hi = cx.bin(Ty::U32, BinOp::ShrI, a, c);
    cx.val(Ty::U64, Op::Pack64(a, hi))
}
