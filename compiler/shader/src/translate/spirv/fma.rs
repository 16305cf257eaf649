//! Exact (single-rounding) f32 fma for hosts whose `OpExtInst Fma` is not fused (llvmpipe
//! computes it as a multiply and an add; NVIDIA fuses). `Options::native_fma` skips this.

use super::*;

impl Emit {
    /// fma(a, b, c) of f32 values rounded once. The product of two f32 values is exact in
    /// f64; the f64 sum is rounded to odd (TwoSum gives its exact error, and an inexact sum
    /// with an even last bit moves one ulp toward the error); rounding that to f32 to nearest
    /// even is then the correctly rounded fma, since 53 >= 2 * 24 + 2 (Boldo and Melquiond,
    /// "When double rounding is odd"). NaN and infinite sums have a NaN error and are kept.
    pub(super) fn fma_f32_exact(&mut self, a: Word, b: Word, c: Word) -> Res<Word> {
        let (f32t, f64t, u64t, boolt) = (self.t.f32, self.t.f64, self.t.u64, self.t.bool);
        let a = self.b.f_convert(f64t, None, a)?;
        let b = self.b.f_convert(f64t, None, b)?;
        let c = self.b.f_convert(f64t, None, c)?;
        let p = self.b.f_mul(f64t, None, a, b)?;
        let s = self.b.f_add(f64t, None, p, c)?;
        let bb = self.b.f_sub(f64t, None, s, p)?;
        let t1 = self.b.f_sub(f64t, None, s, bb)?;
        let t2 = self.b.f_sub(f64t, None, p, t1)?;
        let t3 = self.b.f_sub(f64t, None, c, bb)?;
        let e = self.b.f_add(f64t, None, t2, t3)?;
        // TwoSum needs each operation rounded on its own.
        for id in [p, s, bb, t1, t2, t3, e] {
            self.b
                .decorate(id, spirv::Decoration::NoContraction, std::iter::empty());
        }
        let sb = self.b.bitcast(u64t, None, s)?;
        let eb = self.b.bitcast(u64t, None, e)?;
        let one = self.k64(1);
        let zero = self.k64(0);
        let lsb = self.b.bitwise_and(u64t, None, sb, one)?;
        let even = self.b.i_equal(boolt, None, lsb, zero)?;
        let zf = self.b.bitcast(f64t, None, zero)?;
        let inexact = self.b.f_ord_not_equal(boolt, None, e, zf)?;
        let adjust = self.b.logical_and(boolt, None, even, inexact)?;
        // Toward the error: away from zero when it has the sum's sign, else toward zero.
        let x = self.b.bitwise_xor(u64t, None, sb, eb)?;
        let c63 = self.k64(63);
        let sgn = self.b.shift_right_logical(u64t, None, x, c63)?;
        let same = self.b.i_equal(boolt, None, sgn, zero)?;
        let up = self.b.i_add(u64t, None, sb, one)?;
        let down = self.b.i_sub(u64t, None, sb, one)?;
        let moved = self.b.select(u64t, None, same, up, down)?;
        let r = self.b.select(u64t, None, adjust, moved, sb)?;
        let rf = self.b.bitcast(f64t, None, r)?;
        self.b.f_convert(f32t, None, rf)
    }
}
