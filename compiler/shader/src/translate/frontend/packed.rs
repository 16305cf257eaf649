//! Packed 16-bit math (VOP3P, issue 11 item 5): `v_pk_*` integer and f16 operations with
//! op_sel / op_sel_hi / neg_lo / neg_hi / clamp, `v_fma_mix_f32` / `v_fma_mixlo_f16` /
//! `v_fma_mixhi_f16`, and the integer dot products.
//!
//! There is no 16-bit type in the IR (nor a Float16 requirement on the host): a half is the
//! low 16 bits of a u32. f16 arithmetic widens exactly to f32, computes there and rounds once
//! to f16 in integer arithmetic (round to nearest even), which is correctly rounded for add
//! and mul (the f32 result is RN24 of an exact value and 24 >= 2 * 11 + 2); fma rounds the f32
//! sum to odd first (TwoSum), so the f16 rounding sees the exact result's sticky bit.
//! docs/TRANSLATOR.md ("ALU notes") states the model.

use super::*;
use crate::operand::{PackedMods, packed_mods};

/// How a packed operation combines its halves.
#[derive(Clone, Copy, PartialEq)]
enum PkInt {
    Add,
    Sub,
    MulLo,
    Mad,
    Lshl,
    Lshr,
    Ashr,
    Max,
    Min,
}

#[derive(Clone, Copy, PartialEq)]
enum PkF16 {
    Add,
    Mul,
    Fma,
    Min,
    Max,
}

/// f16 encodings of the inline float constants (0.5, -0.5, 1, -1, 2, -2, 4, -4, 1/(2*pi)).
fn f16_inline(f: f64) -> Option<u32> {
    const K: [(f64, u32); 9] = [
        (0.5, 0x3800),
        (-0.5, 0xB800),
        (1.0, 0x3C00),
        (-1.0, 0xBC00),
        (2.0, 0x4000),
        (-2.0, 0xC000),
        (4.0, 0x4400),
        (-4.0, 0xC400),
        (0.159_154_943_091_895_35, 0x3118),
    ];
    K.iter().find(|(v, _)| *v == f).map(|(_, h)| *h)
}

impl Cx {
    /// Lowers one VOP3P instruction.
    pub(super) fn vop3p(&mut self, inst: &Instruction) -> R<Lowered> {
        let name = inst.name();
        let m = packed_mods(inst).ok_or("not a VOP3P instruction")?;
        let ops = operands(inst, self.wave64);
        let d = match ops.iter().find(|o| o.role == Role::Dst).map(|o| o.value) {
            Some(Value::Vgpr { first, .. }) => first,
            _ => return Err("missing vector destination".into()),
        };
        let srcs: Vec<Operand> = ops
            .iter()
            .filter(|o| o.role == Role::Src)
            .copied()
            .collect();
        let int = match name {
            "v_pk_add_u16" | "v_pk_add_i16" => Some(PkInt::Add),
            "v_pk_sub_u16" | "v_pk_sub_i16" => Some(PkInt::Sub),
            "v_pk_mul_lo_u16" => Some(PkInt::MulLo),
            "v_pk_mad_u16" | "v_pk_mad_i16" => Some(PkInt::Mad),
            "v_pk_lshlrev_b16" => Some(PkInt::Lshl),
            "v_pk_lshrrev_b16" => Some(PkInt::Lshr),
            "v_pk_ashrrev_i16" => Some(PkInt::Ashr),
            "v_pk_max_u16" | "v_pk_max_i16" => Some(PkInt::Max),
            "v_pk_min_u16" | "v_pk_min_i16" => Some(PkInt::Min),
            _ => None,
        };
        let f16 = match name {
            "v_pk_add_f16" => Some(PkF16::Add),
            "v_pk_mul_f16" => Some(PkF16::Mul),
            "v_pk_fma_f16" => Some(PkF16::Fma),
            "v_pk_min_f16" => Some(PkF16::Min),
            "v_pk_max_f16" => Some(PkF16::Max),
            _ => None,
        };
        if name.starts_with("v_fma_mix") {
            return self.fma_mix(name, d, &srcs, m);
        }
        if let Some(x) = self.int_dot(name, &srcs, m)? {
            self.write_v(d, x);
            return Ok(self.lane(None, false));
        }
        let x = if let Some(op) = int {
            self.pk_int(op, name.ends_with("_i16"), &srcs, m)?
        } else if let Some(op) = f16 {
            self.pk_f16(op, &srcs, m)?
        } else {
            return Err(UNSUPPORTED.into());
        };
        self.write_v(d, x);
        Ok(self.lane(None, false))
    }

    /// `v_fma_mix_f32` / `v_fma_mixlo_f16` / `v_fma_mixhi_f16`: fma of three sources, each
    /// f32 (op_sel_hi clear) or the f16 half op_sel picks (op_sel_hi set), with neg (NEG_LO)
    /// and abs (NEG_HI) per source. The fma is the f32 one (exact, as v_fma_f32); mixlo/mixhi
    /// convert its f32 result to f16 into one half of the destination and keep the other, as
    /// the ISA's pseudo-code writes it (`16'F(fma(in[0], in[1], in[2]))`, two roundings) and
    /// LLVM selects it (for `fptrunc` of an f32 fma).
    fn fma_mix(&mut self, name: &str, d: u16, srcs: &[Operand], m: PackedMods) -> R<Lowered> {
        let mut v = Vec::new();
        for i in 0..3 {
            let o = srcs.get(i).ok_or_else(|| format!("missing source {i}"))?;
            let bit = |mask: u8| (mask >> i) & 1 != 0;
            let f = if bit(m.op_sel_hi) {
                if !matches!(
                    o.value,
                    Value::Vgpr { .. }
                        | Value::Sgpr { .. }
                        | Value::Vcc { .. }
                        | Value::M0
                        | Value::Exec { .. }
                ) {
                    // Which bits an inline constant or literal gives an f16 source is not
                    // pinned down (LLVM folds none there).
                    return Err(format!(
                        "a constant as an f16 source of {name} {UNSUPPORTED}"
                    ));
                }
                let raw = self.src(o, Kind::B32)?;
                let h = if bit(m.op_sel) {
                    let c16 = self.c32(16);
                    self.bin(Ty::U32, BinOp::ShrU, raw, c16)
                } else {
                    let mask = self.c32(0xFFFF);
                    self.bin(Ty::U32, BinOp::And, raw, mask)
                };
                let h = if bit(m.neg_hi) {
                    let k = self.c32(0x7FFF);
                    self.bin(Ty::U32, BinOp::And, h, k)
                } else {
                    h
                };
                let h = if bit(m.neg_lo) {
                    let k = self.c32(0x8000);
                    self.bin(Ty::U32, BinOp::Xor, h, k)
                } else {
                    h
                };
                self.f16_to_f32(h)
            } else {
                let mut f = self.src(o, Kind::F32)?;
                if bit(m.neg_hi) {
                    f = self.un(Ty::F32, UnOp::FAbs, f);
                }
                if bit(m.neg_lo) {
                    f = self.un(Ty::F32, UnOp::FNeg, f);
                }
                f
            };
            v.push(f);
        }
        let x = self.val(Ty::F32, Op::Fma(v[0], v[1], v[2]));
        let x = if m.clamp {
            super::vector::clamp01(self, x, Ty::F32)
        } else {
            x
        };
        let out = match name {
            "v_fma_mix_f32" => self.un(Ty::U32, UnOp::Bitcast, x),
            "v_fma_mixlo_f16" | "v_fma_mixhi_f16" => {
                let h = self.f32_to_f16(x);
                let old = self.val(Ty::U32, Op::ReadV(d));
                if name == "v_fma_mixlo_f16" {
                    let keep = self.c32(0xFFFF_0000);
                    let old = self.bin(Ty::U32, BinOp::And, old, keep);
                    self.bin(Ty::U32, BinOp::Or, old, h)
                } else {
                    let keep = self.c32(0xFFFF);
                    let old = self.bin(Ty::U32, BinOp::And, old, keep);
                    let c16 = self.c32(16);
                    let h = self.bin(Ty::U32, BinOp::Shl, h, c16);
                    self.bin(Ty::U32, BinOp::Or, old, h)
                }
            }
            _ => return Err(UNSUPPORTED.into()),
        };
        self.write_v(d, out);
        Ok(self.lane(None, false))
    }

    /// Integer dot products: `v_dot2_i32_i16/u32_u16`, `v_dot4_i32_i8/u32_u8`,
    /// `v_dot8_i32_i4/u32_u4`: D = S2 + the sum of the products of the sign- or zero-extended
    /// fields of S0 and S1 (wrapping; with clamp, the exact sum saturated to the 32-bit
    /// signed or unsigned range). op_sel / op_sel_hi other than the default and neg are
    /// refused (what they select in a dot product is not pinned down). None for other names.
    fn int_dot(&mut self, name: &str, srcs: &[Operand], m: PackedMods) -> R<Option<ValueId>> {
        let (n, bits, signed) = match name {
            "v_dot2_i32_i16" => (2, 16, true),
            "v_dot2_u32_u16" => (2, 16, false),
            "v_dot4_i32_i8" => (4, 8, true),
            "v_dot4_u32_u8" => (4, 8, false),
            "v_dot8_i32_i4" => (8, 4, true),
            "v_dot8_u32_u4" => (8, 4, false),
            _ => return Ok(None),
        };
        if m.op_sel != 0 || m.op_sel_hi != 7 || m.neg_lo != 0 || m.neg_hi != 0 {
            return Err(format!("op_sel/op_sel_hi/neg on {name} {UNSUPPORTED}"));
        }
        let s = |i: usize| {
            srcs.get(i)
                .copied()
                .ok_or_else(|| format!("missing source {i}"))
        };
        // Two 16-bit halves read as the packed operands they are (inline constants in the low
        // half); the byte and nibble forms take 32-bit operands.
        let (a, b) = if bits == 16 {
            (self.pk_src(&s(0)?)?, self.pk_src(&s(1)?)?)
        } else {
            (self.src(&s(0)?, Kind::B32)?, self.src(&s(1)?, Kind::B32)?)
        };
        let c = self.src(&s(2)?, Kind::B32)?;
        let field = |cx: &mut Cx, v: ValueId, k: u32| -> ValueId {
            let up = cx.c32(32 - bits * (k + 1));
            let down = cx.c32(32 - bits);
            let x = cx.bin(Ty::U32, BinOp::Shl, v, up);
            let op = if signed { BinOp::ShrI } else { BinOp::ShrU };
            cx.bin(Ty::U32, op, x, down)
        };
        // Each product is exact in 32 bits (|i16 * i16| <= 2^30, u16 * u16 < 2^32).
        let mut products = Vec::new();
        for k in 0..n {
            let x = field(self, a, k);
            let y = field(self, b, k);
            products.push(self.bin(Ty::U32, BinOp::Mul, x, y));
        }
        if !m.clamp {
            let mut sum = c;
            for p in products {
                sum = self.bin(Ty::U32, BinOp::Add, sum, p);
            }
            return Ok(Some(sum));
        }
        // Saturating: the exact sum in 64 bits.
        let wide = |cx: &mut Cx, v: ValueId| -> ValueId {
            let hi = if signed {
                let c31 = cx.c32(31);
                cx.bin(Ty::U32, BinOp::ShrI, v, c31)
            } else {
                cx.c32(0)
            };
            cx.val(Ty::U64, Op::Pack64(v, hi))
        };
        let mut sum = wide(self, c);
        for p in products {
            let p = wide(self, p);
            sum = self.bin(Ty::U64, BinOp::Add, sum, p);
        }
        let (lo, hi) = if signed {
            (i32::MIN as i64 as u64, i32::MAX as u64)
        } else {
            (0, u32::MAX as u64)
        };
        let lo_k = self.val(Ty::U64, Op::Const64(lo));
        let hi_k = self.val(Ty::U64, Op::Const64(hi));
        let (lt, gt) = if signed {
            (CmpOp::LtI, CmpOp::GtI)
        } else {
            (CmpOp::LtU, CmpOp::GtU)
        };
        let below = self.cmp(lt, sum, lo_k);
        let above = self.cmp(gt, sum, hi_k);
        let x = self.val(Ty::U64, Op::Select(below, lo_k, sum));
        let x = self.val(Ty::U64, Op::Select(above, hi_k, x));
        Ok(Some(self.un(Ty::U32, UnOp::Lo, x)))
    }

    /// The 32 bits a packed 16-bit source reads. Inline constants are the 16-bit value in
    /// the low half and 0 in the high half (f16 encodings for float constants), the model
    /// LLVM 14's operand folding (SIFoldOperands) compiles against; a literal is its 32 bits.
    fn pk_src(&mut self, o: &Operand) -> R<ValueId> {
        Ok(match o.value {
            Value::InlineFloat(f) => {
                let h =
                    f16_inline(f).ok_or_else(|| format!("inline constant {f} {UNSUPPORTED}"))?;
                self.c32(h)
            }
            Value::InlineInt(i) => self.c32(i as u32 & 0xFFFF),
            _ => self.src(o, Kind::B32)?,
        })
    }

    /// Source `i`'s halves for the low and high results (each in the low 16 bits of a u32,
    /// high bits zero), as op_sel / op_sel_hi pick them.
    fn pk_halves(&mut self, srcs: &[Operand], i: usize, m: PackedMods) -> R<(ValueId, ValueId)> {
        let o = srcs.get(i).ok_or_else(|| format!("missing source {i}"))?;
        let raw = self.pk_src(o)?;
        let c16 = self.c32(16);
        let mask = self.c32(0xFFFF);
        let lo = self.bin(Ty::U32, BinOp::And, raw, mask);
        let hi = self.bin(Ty::U32, BinOp::ShrU, raw, c16);
        let pick = |sel: u8| if (sel >> i) & 1 != 0 { hi } else { lo };
        Ok((pick(m.op_sel), pick(m.op_sel_hi)))
    }

    /// `lo | hi << 16` of two results in the low 16 bits (high bits ignored).
    fn pk_pack(&mut self, lo: ValueId, hi: ValueId) -> ValueId {
        let mask = self.c32(0xFFFF);
        let c16 = self.c32(16);
        let lo = self.bin(Ty::U32, BinOp::And, lo, mask);
        let hi = self.bin(Ty::U32, BinOp::Shl, hi, c16);
        self.bin(Ty::U32, BinOp::Or, lo, hi)
    }

    /// Sign- or zero-extends the low 16 bits.
    fn ext16(&mut self, v: ValueId, signed: bool) -> ValueId {
        let c = self.c32(16);
        let up = self.bin(Ty::U32, BinOp::Shl, v, c);
        let op = if signed { BinOp::ShrI } else { BinOp::ShrU };
        self.bin(Ty::U32, op, up, c)
    }

    fn pk_int(&mut self, op: PkInt, signed: bool, srcs: &[Operand], m: PackedMods) -> R<ValueId> {
        if m.neg_lo != 0 || m.neg_hi != 0 {
            return Err(format!(
                "neg_lo/neg_hi on a packed integer operation {UNSUPPORTED}"
            ));
        }
        // The ISA saturates only the add/sub/mad forms; clamp elsewhere has no defined meaning.
        let clamp = m.clamp;
        if clamp && !matches!(op, PkInt::Add | PkInt::Sub | PkInt::Mad) {
            return Err(format!(
                "clamp on this packed integer operation {UNSUPPORTED}"
            ));
        }
        let (a_lo, a_hi) = self.pk_halves(srcs, 0, m)?;
        let (b_lo, b_hi) = self.pk_halves(srcs, 1, m)?;
        let c = if op == PkInt::Mad {
            Some(self.pk_halves(srcs, 2, m)?)
        } else {
            None
        };
        let half = |cx: &mut Cx, a: ValueId, b: ValueId, c: Option<ValueId>| -> ValueId {
            // Operands extended to 32 bits: wide enough that the exact result of every
            // operation fits (65535 * 65535 + 65535 < 2^32), so clamp can saturate it.
            let (a, b) = match op {
                PkInt::Lshl | PkInt::Lshr | PkInt::Ashr => (a, cx.ext16(b, op == PkInt::Ashr)),
                _ => (cx.ext16(a, signed), cx.ext16(b, signed)),
            };
            let c15 = cx.c32(15);
            let x = match op {
                PkInt::Add => cx.bin(Ty::U32, BinOp::Add, a, b),
                PkInt::Sub => cx.bin(Ty::U32, BinOp::Sub, a, b),
                PkInt::MulLo => cx.bin(Ty::U32, BinOp::Mul, a, b),
                PkInt::Mad => {
                    let c = cx.ext16(c.unwrap(), signed);
                    let p = cx.bin(Ty::U32, BinOp::Mul, a, b);
                    cx.bin(Ty::U32, BinOp::Add, p, c)
                }
                // Shifts: S0 is the count (its low 4 bits), S1 the value.
                PkInt::Lshl | PkInt::Lshr | PkInt::Ashr => {
                    let n = cx.bin(Ty::U32, BinOp::And, a, c15);
                    let sh = match op {
                        PkInt::Lshl => BinOp::Shl,
                        PkInt::Lshr => BinOp::ShrU,
                        _ => BinOp::ShrI,
                    };
                    cx.bin(Ty::U32, sh, b, n)
                }
                PkInt::Max | PkInt::Min => {
                    let o = match (op == PkInt::Max, signed) {
                        (true, true) => BinOp::MaxI,
                        (true, false) => BinOp::MaxU,
                        (false, true) => BinOp::MinI,
                        (false, false) => BinOp::MinU,
                    };
                    cx.bin(Ty::U32, o, a, b)
                }
            };
            if !clamp {
                return x;
            }
            if signed {
                let lo = cx.c32(-32768i32 as u32);
                let hi = cx.c32(32767);
                let x = cx.bin(Ty::U32, BinOp::MaxI, x, lo);
                cx.bin(Ty::U32, BinOp::MinI, x, hi)
            } else if op == PkInt::Sub {
                // A difference is in -65535..=65535: only the low end saturates.
                let zero = cx.c32(0);
                cx.bin(Ty::U32, BinOp::MaxI, x, zero)
            } else {
                // A sum or mad is non-negative and below 2^32 (no wrap).
                let top = cx.c32(0xFFFF);
                cx.bin(Ty::U32, BinOp::MinU, x, top)
            }
        };
        let lo = half(self, a_lo, b_lo, c.map(|c| c.0));
        let hi = half(self, a_hi, b_hi, c.map(|c| c.1));
        Ok(self.pk_pack(lo, hi))
    }

    /// Whether MODE flushes f16 denormals (FP_DENORM[3:2], shared with f64: 0 flushes,
    /// 3 keeps them; float.rs refuses 1 and 2).
    fn f16_flush(&self) -> bool {
        (self.mode >> 6) & 3 == 0
    }

    fn pk_f16(&mut self, op: PkF16, srcs: &[Operand], m: PackedMods) -> R<ValueId> {
        let n = if op == PkF16::Fma { 3 } else { 2 };
        let mut lo_in = Vec::new();
        let mut hi_in = Vec::new();
        for i in 0..n {
            let (l, h) = self.pk_halves(srcs, i, m)?;
            // neg flips the sign bit of the selected half (NaNs included).
            let sign = self.c32(0x8000);
            let l = if (m.neg_lo >> i) & 1 != 0 {
                self.bin(Ty::U32, BinOp::Xor, l, sign)
            } else {
                l
            };
            let h = if (m.neg_hi >> i) & 1 != 0 {
                self.bin(Ty::U32, BinOp::Xor, h, sign)
            } else {
                h
            };
            lo_in.push(l);
            hi_in.push(h);
        }
        let lo = self.f16_op(op, &lo_in, m.clamp);
        let hi = self.f16_op(op, &hi_in, m.clamp);
        Ok(self.pk_pack(lo, hi))
    }

    /// One half of a packed f16 operation: f16 bits in, f16 bits out.
    fn f16_op(&mut self, op: PkF16, h: &[ValueId], clamp: bool) -> ValueId {
        let v: Vec<ValueId> = h.iter().map(|&x| self.f16_to_f32(x)).collect();
        let x = match op {
            PkF16::Add => self.bin(Ty::F32, BinOp::FAdd, v[0], v[1]),
            PkF16::Mul => self.bin(Ty::F32, BinOp::FMul, v[0], v[1]),
            PkF16::Min => self.bin(Ty::F32, BinOp::FMin, v[0], v[1]),
            PkF16::Max => self.bin(Ty::F32, BinOp::FMax, v[0], v[1]),
            PkF16::Fma => {
                // a * b is exact in f32 (22 significant bits, exponents far inside the
                // range); TwoSum gives s + e = p + c exactly (no f32 overflow or denormal:
                // every value is a multiple of 2^-69 below 2^33).
                let p = self.bin(Ty::F32, BinOp::FMul, v[0], v[1]);
                let s = self.bin(Ty::F32, BinOp::FAdd, p, v[2]);
                self.round_odd_sum(s, p, v[2])
            }
        };
        let x = if clamp {
            super::vector::clamp01(self, x, Ty::F32)
        } else {
            x
        };
        self.f32_to_f16(x)
    }

    /// s = RN(p + c) made round-to-odd: when TwoSum's error is non-zero and s's last bit is
    /// even, s moves one ulp toward the exact sum (an inexact result is never even, so a later
    /// rounding to a narrower format sees the lost bits as sticky).
    fn round_odd_sum(&mut self, s: ValueId, p: ValueId, c: ValueId) -> ValueId {
        let bb = self.bin(Ty::F32, BinOp::FSub, s, p);
        let sb = self.bin(Ty::F32, BinOp::FSub, s, bb);
        let ep = self.bin(Ty::F32, BinOp::FSub, p, sb);
        let ec = self.bin(Ty::F32, BinOp::FSub, c, bb);
        let e = self.bin(Ty::F32, BinOp::FAdd, ep, ec);
        let zero = self.c32(0);
        let zf = self.un(Ty::F32, UnOp::Bitcast, zero);
        // FLg is ordered: a NaN error (an infinite or NaN sum) leaves s alone.
        let inexact = self.cmp(CmpOp::FLg, e, zf);
        let sbits = self.un(Ty::U32, UnOp::Bitcast, s);
        let ebits = self.un(Ty::U32, UnOp::Bitcast, e);
        let one = self.c32(1);
        let low = self.bin(Ty::U32, BinOp::And, sbits, one);
        let even = self.cmp(CmpOp::Eq, low, zero);
        let nudge = self.bin(Ty::Bool, BinOp::And, inexact, even);
        // Same sign: the exact sum is farther from zero (bits + 1), else nearer (bits - 1).
        let x = self.bin(Ty::U32, BinOp::Xor, sbits, ebits);
        let c31 = self.c32(31);
        let differ = self.bin(Ty::U32, BinOp::ShrU, x, c31);
        let step = self.bin(Ty::U32, BinOp::Shl, differ, one);
        let step = self.bin(Ty::U32, BinOp::Sub, one, step); // 1 or -1
        let moved = self.bin(Ty::U32, BinOp::Add, sbits, step);
        let bits = self.val(Ty::U32, Op::Select(nudge, moved, sbits));
        self.un(Ty::F32, UnOp::Bitcast, bits)
    }

    /// f16 bits (low 16 of a u32) -> the same value as f32 (exact). With f16 denormals
    /// flushed, a denormal input reads as a zero of its sign.
    pub(super) fn f16_to_f32(&mut self, h: ValueId) -> ValueId {
        let k = |cx: &mut Cx, v: u32| cx.c32(v);
        let c16 = k(self, 16);
        let c13 = k(self, 13);
        let c10 = k(self, 10);
        let m8000 = k(self, 0x8000);
        let m7fff = k(self, 0x7FFF);
        let m3ff = k(self, 0x3FF);
        let m1f = k(self, 0x1F);
        let s = self.bin(Ty::U32, BinOp::And, h, m8000);
        let sign = self.bin(Ty::U32, BinOp::Shl, s, c16);
        let e0 = self.bin(Ty::U32, BinOp::ShrU, h, c10);
        let e = self.bin(Ty::U32, BinOp::And, e0, m1f);
        let man = self.bin(Ty::U32, BinOp::And, h, m3ff);
        // Normal: the exponent rebiased by 127 - 15 = 112.
        let mag = self.bin(Ty::U32, BinOp::And, h, m7fff);
        let mag = self.bin(Ty::U32, BinOp::Shl, mag, c13);
        let rebias = k(self, 112 << 23);
        let normal = self.bin(Ty::U32, BinOp::Add, mag, rebias);
        // Infinity / NaN: the payload moves up with the mantissa (a quiet NaN stays quiet).
        let man13 = self.bin(Ty::U32, BinOp::Shl, man, c13);
        let inf = k(self, 0x7F80_0000);
        let special = self.bin(Ty::U32, BinOp::Or, man13, inf);
        // Denormal: man * 2^-24, exact in f32 (a normal f32).
        let tiny = if self.f16_flush() {
            k(self, 0)
        } else {
            let mf = self.un(Ty::F32, UnOp::U32ToF32, man);
            let scale = k(self, 0x3380_0000); // 2^-24
            let scale = self.un(Ty::F32, UnOp::Bitcast, scale);
            let t = self.bin(Ty::F32, BinOp::FMul, mf, scale);
            self.un(Ty::U32, UnOp::Bitcast, t)
        };
        let zero = k(self, 0);
        let is_den = self.cmp(CmpOp::Eq, e, zero);
        let is_special = self.cmp(CmpOp::Eq, e, m1f);
        let v = self.val(Ty::U32, Op::Select(is_special, special, normal));
        let v = self.val(Ty::U32, Op::Select(is_den, tiny, v));
        let v = self.bin(Ty::U32, BinOp::Or, v, sign);
        self.un(Ty::F32, UnOp::Bitcast, v)
    }

    /// f32 -> f16 bits (in the low 16 bits of a u32), rounded to nearest even in integer
    /// arithmetic. NaN keeps its sign and top payload bits and is quieted; with f16 denormals
    /// flushed, a result that rounds to a denormal is a zero of its sign.
    pub(super) fn f32_to_f16(&mut self, x: ValueId) -> ValueId {
        let k = |cx: &mut Cx, v: u32| cx.c32(v);
        let bits = self.un(Ty::U32, UnOp::Bitcast, x);
        let c16 = k(self, 16);
        let c13 = k(self, 13);
        let m8000 = k(self, 0x8000);
        let abs_mask = k(self, 0x7FFF_FFFF);
        let sh = self.bin(Ty::U32, BinOp::ShrU, bits, c16);
        let sign = self.bin(Ty::U32, BinOp::And, sh, m8000);
        let a = self.bin(Ty::U32, BinOp::And, bits, abs_mask);
        // NaN: quiet bit set, top 9 payload bits kept.
        let pay = self.bin(Ty::U32, BinOp::ShrU, a, c13);
        let m3ff = k(self, 0x3FF);
        let pay = self.bin(Ty::U32, BinOp::And, pay, m3ff);
        let qnan = k(self, 0x7E00);
        let nan = self.bin(Ty::U32, BinOp::Or, pay, qnan);
        // Normal f16 range: drop 13 bits with round to nearest even (a carry into the
        // exponent is the right next value).
        let rebias = k(self, 112 << 23);
        let r = self.bin(Ty::U32, BinOp::Sub, a, rebias);
        let h = self.bin(Ty::U32, BinOp::ShrU, r, c13);
        let m1fff = k(self, 0x1FFF);
        let rem = self.bin(Ty::U32, BinOp::And, r, m1fff);
        let one = k(self, 1);
        let odd = self.bin(Ty::U32, BinOp::And, h, one);
        let half = k(self, 0x1000);
        let t = self.bin(Ty::U32, BinOp::Add, rem, odd);
        let up = self.cmp(CmpOp::GtU, t, half);
        let upu = self.un(Ty::U32, UnOp::BoolToU32, up);
        let normal = self.bin(Ty::U32, BinOp::Add, h, upu);
        // Below 2^-14: round(|x| * 2^24) to an integer, exact in f32 (|x| * 2^24 < 2^10);
        // 0x400 (the smallest normal) is the right encoding when it rounds up.
        let ax = self.un(Ty::F32, UnOp::Bitcast, a);
        let scale = k(self, 0x4B80_0000); // 2^24
        let scale = self.un(Ty::F32, UnOp::Bitcast, scale);
        let t = self.bin(Ty::F32, BinOp::FMul, ax, scale);
        let t = self.un(Ty::F32, UnOp::RoundEven, t);
        let tiny = self.un(Ty::U32, UnOp::F32ToU32, t);
        let tiny = if self.f16_flush() {
            let min_normal = k(self, 0x400);
            let den = self.cmp(CmpOp::LtU, tiny, min_normal);
            let zero = k(self, 0);
            self.val(Ty::U32, Op::Select(den, zero, tiny))
        } else {
            tiny
        };
        let inf = k(self, 0x7C00);
        // 65520 = 0x477FF000 and above round to infinity.
        let big = k(self, 0x477F_F000);
        let min_normal = k(self, 0x3880_0000);
        let exp_all = k(self, 0x7F80_0000);
        let is_nan = self.cmp(CmpOp::GtU, a, exp_all);
        let is_big = self.cmp(CmpOp::GeU, a, big);
        let is_normal = self.cmp(CmpOp::GeU, a, min_normal);
        let v = self.val(Ty::U32, Op::Select(is_normal, normal, tiny));
        let v = self.val(Ty::U32, Op::Select(is_big, inf, v));
        let v = self.val(Ty::U32, Op::Select(is_nan, nan, v));
        self.bin(Ty::U32, BinOp::Or, v, sign)
    }
}
