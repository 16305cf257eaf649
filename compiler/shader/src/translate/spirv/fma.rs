//! Exact (single-rounding) fma for hosts whose `OpExtInst Fma` is not fused (llvmpipe
//! computes it as a multiply and an add; NVIDIA fuses). `Options::native_fma` skips this.
//!
//! Every float operation here is decorated `NoContraction` (the algorithms need each one
//! rounded on its own), and the module's float-controls modes keep infinities, NaNs and signed
//! zeros (translate/float.rs); f32 and f64 denormal modes do not change the results: the f32
//! form rounds once at the end (an f32 denormal mode acts on its inputs and that rounding), and
//! the f64 form's fast path only runs where no intermediate can be denormal.

use super::*;

impl Emit {
    fn nc(&mut self, id: Word) -> Word {
        self.b
            .decorate(id, spirv::Decoration::NoContraction, std::iter::empty());
        id
    }

    fn fadd(&mut self, ty: Word, a: Word, b: Word) -> Res<Word> {
        let r = self.b.f_add(ty, None, a, b)?;
        Ok(self.nc(r))
    }

    fn fsub(&mut self, ty: Word, a: Word, b: Word) -> Res<Word> {
        let r = self.b.f_sub(ty, None, a, b)?;
        Ok(self.nc(r))
    }

    fn fmul(&mut self, ty: Word, a: Word, b: Word) -> Res<Word> {
        let r = self.b.f_mul(ty, None, a, b)?;
        Ok(self.nc(r))
    }

    /// Knuth's TwoSum of f64 values: (s, e) with s = RN(x + y) and s + e = x + y exactly.
    fn two_sum(&mut self, x: Word, y: Word) -> Res<(Word, Word)> {
        let f64t = self.t.f64;
        let s = self.fadd(f64t, x, y)?;
        let bb = self.fsub(f64t, s, x)?;
        let t1 = self.fsub(f64t, s, bb)?;
        let t2 = self.fsub(f64t, x, t1)?;
        let t3 = self.fsub(f64t, y, bb)?;
        let e = self.fadd(f64t, t2, t3)?;
        Ok((s, e))
    }

    /// RO(x + y), the f64 sum rounded to odd: TwoSum gives the exact error, and an inexact
    /// sum with an even last bit moves one ulp toward the error. NaN and infinite sums have a
    /// NaN error and are kept.
    fn add_round_odd(&mut self, x: Word, y: Word) -> Res<Word> {
        let (f64t, u64t, boolt) = (self.t.f64, self.t.u64, self.t.bool);
        let (s, e) = self.two_sum(x, y)?;
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
        self.b.bitcast(f64t, None, r)
    }

    /// fma(a, b, c) of f32 values rounded once. The product of two f32 values is exact in
    /// f64; the f64 sum is rounded to odd; rounding that to f32 to nearest even is then the
    /// correctly rounded fma, since 53 >= 2 * 24 + 2 (Boldo and Melquiond, "When double
    /// rounding is odd").
    pub(super) fn fma_f32_exact(&mut self, a: Word, b: Word, c: Word) -> Res<Word> {
        let (f32t, f64t) = (self.t.f32, self.t.f64);
        let a = self.b.f_convert(f64t, None, a)?;
        let b = self.b.f_convert(f64t, None, b)?;
        let c = self.b.f_convert(f64t, None, c)?;
        let p = self.fmul(f64t, a, b)?;
        let r = self.add_round_odd(p, c)?;
        self.b.f_convert(f32t, None, r)
    }

    /// Veltkamp's split of an f64 value into two halves of 26 bits: (hi, lo), hi + lo = x.
    fn split(&mut self, x: Word) -> Res<(Word, Word)> {
        let f64t = self.t.f64;
        let k = self.kf64(134217729.0); // 2^27 + 1
        let g = self.fmul(f64t, k, x)?;
        let d = self.fsub(f64t, g, x)?;
        let hi = self.fsub(f64t, g, d)?;
        let lo = self.fsub(f64t, x, hi)?;
        Ok((hi, lo))
    }

    /// fma(a, b, c) of f64 values rounded once ([`fma_f64_model`] is the same algorithm in
    /// Rust, tested against the host's fma). Dekker's product gives p + e = a * b exactly,
    /// TwoSum t + u = c + p exactly, and RN(t + RO(u + e)) is the correctly rounded fma
    /// (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms
    /// using rounding to odd", IEEE TC 2008). That needs a * b without overflow or underflow:
    /// the fast path runs for finite operands with biased exponents 1..=2018 (normal and below
    /// 2^996, so the split cannot overflow) and e(a) + e(b) in -969..=1021 (every bit of the
    /// product and of its error lies on the f64 grid). Other operands: a zero, an infinite or
    /// NaN operand or a denormal one, take `a * b + c`, except c itself when c is infinite
    /// or NaN and a * b finite, and RN(a * b) when c is ±0 and a * b finite and nonzero (the
    /// IEEE results); that is exact whenever the product is (zeros, infinities, NaNs) and
    /// otherwise rounds twice; docs/TRANSLATOR.md states the gap.
    pub(super) fn fma_f64_exact(&mut self, a: Word, b: Word, c: Word) -> Res<Word> {
        let (f64t, u64t, u32t, boolt) = (self.t.f64, self.t.u64, self.t.u32, self.t.bool);
        // Fast-path test on the biased exponents.
        let exp = |e: &mut Emit, x: Word| -> Res<Word> {
            let bits = e.b.bitcast(u64t, None, x)?;
            let c52 = e.k64(52);
            let sh = e.b.shift_right_logical(u64t, None, bits, c52)?;
            let m = e.k64(0x7FF);
            let v = e.b.bitwise_and(u64t, None, sh, m)?;
            e.b.u_convert(u32t, None, v)
        };
        let ea = exp(self, a)?;
        let eb = exp(self, b)?;
        let ec = exp(self, c)?;
        let one = self.k32(1);
        let top = self.k32(2018);
        let in_range = |e: &mut Emit, x: Word| -> Res<Word> {
            let lo = e.b.u_greater_than_equal(boolt, None, x, one)?;
            let hi = e.b.u_less_than_equal(boolt, None, x, top)?;
            e.b.logical_and(boolt, None, lo, hi)
        };
        let ra = in_range(self, ea)?;
        let rb = in_range(self, eb)?;
        // e(a) + e(b) = ea + eb - 2046 in -969..=1021 <=> ea + eb in 1077..=3067.
        let sum = self.b.i_add(u32t, None, ea, eb)?;
        let k1077 = self.k32(1077);
        let k3067 = self.k32(3067);
        let s_lo = self.b.u_greater_than_equal(boolt, None, sum, k1077)?;
        let s_hi = self.b.u_less_than_equal(boolt, None, sum, k3067)?;
        let k2047 = self.k32(0x7FF);
        let c_fin = self.b.i_not_equal(boolt, None, ec, k2047)?;
        let f1 = self.b.logical_and(boolt, None, ra, rb)?;
        let f2 = self.b.logical_and(boolt, None, s_lo, s_hi)?;
        let f3 = self.b.logical_and(boolt, None, f1, f2)?;
        let fast = self.b.logical_and(boolt, None, f3, c_fin)?;
        // Dekker's exact product.
        let p = self.fmul(f64t, a, b)?;
        let (ah, al) = self.split(a)?;
        let (bh, bl) = self.split(b)?;
        let hh = self.fmul(f64t, ah, bh)?;
        let e1 = self.fsub(f64t, hh, p)?;
        let hl = self.fmul(f64t, ah, bl)?;
        let e2 = self.fadd(f64t, e1, hl)?;
        let lh = self.fmul(f64t, al, bh)?;
        let e3 = self.fadd(f64t, e2, lh)?;
        let ll = self.fmul(f64t, al, bl)?;
        let e = self.fadd(f64t, e3, ll)?;
        // c + p = t + u exactly; RN(t + RO(u + e)).
        let (t, u) = self.two_sum(c, p)?;
        let v = self.add_round_odd(u, e)?;
        let z = self.fadd(f64t, t, v)?;
        // t infinite (c + p overflowed): the fma overflows too; keep t, not NaN from inf - inf.
        let t_inf = self.b.is_inf(boolt, None, t)?;
        let z = self.b.select(f64t, None, t_inf, t, z)?;
        // Slow path: a * b + c, or c when c is not finite and a * b is.
        let naive = self.fadd(f64t, p, c)?;
        let a_fin = self.b.is_inf(boolt, None, a)?;
        let a_nan = self.b.is_nan(boolt, None, a)?;
        let b_inf = self.b.is_inf(boolt, None, b)?;
        let b_nan = self.b.is_nan(boolt, None, b)?;
        let x1 = self.b.logical_or(boolt, None, a_fin, a_nan)?;
        let x2 = self.b.logical_or(boolt, None, b_inf, b_nan)?;
        let ab_special = self.b.logical_or(boolt, None, x1, x2)?;
        let c_special = self.b.logical_not(boolt, None, c_fin)?;
        let ab_fin = self.b.logical_not(boolt, None, ab_special)?;
        let keep_c = self.b.logical_and(boolt, None, c_special, ab_fin)?;
        // c = ±0 with a finite, nonzero product: RN(a * b) is the fma, whatever the product's
        // size (an underflowed product keeps its sign, which p + c would lose).
        let zf = self.kf64(0.0);
        let c_zero = self.b.f_ord_equal(boolt, None, c, zf)?;
        let a_nz = self.b.f_ord_not_equal(boolt, None, a, zf)?;
        let b_nz = self.b.f_ord_not_equal(boolt, None, b, zf)?;
        let y1 = self.b.logical_and(boolt, None, c_zero, ab_fin)?;
        let y2 = self.b.logical_and(boolt, None, a_nz, b_nz)?;
        let keep_p = self.b.logical_and(boolt, None, y1, y2)?;
        let slow = self.b.select(f64t, None, keep_c, c, naive)?;
        let slow = self.b.select(f64t, None, keep_p, p, slow)?;
        self.b.select(f64t, None, fast, z, slow)
    }

    /// An f64 constant.
    fn kf64(&mut self, x: f64) -> Word {
        let t = self.t.f64;
        *self
            .consts
            .entry((t, x.to_bits()))
            .or_insert_with(|| self.b.constant_bit64(t, x.to_bits()))
    }
}

/// [`Emit::fma_f64_exact`] in Rust, operation for operation (the unit tests check it against
/// the host's correctly rounded `f64::mul_add`).
#[cfg(test)]
pub(crate) fn fma_f64_model(a: f64, b: f64, c: f64) -> f64 {
    fn two_sum(x: f64, y: f64) -> (f64, f64) {
        let s = x + y;
        let bb = s - x;
        (s, (x - (s - bb)) + (y - bb))
    }
    fn round_odd(x: f64, y: f64) -> f64 {
        let (s, e) = two_sum(x, y);
        let sb = s.to_bits();
        if sb & 1 == 0 && e != 0.0 {
            let same = (sb ^ e.to_bits()) >> 63 == 0;
            f64::from_bits(if same { sb + 1 } else { sb - 1 })
        } else {
            s
        }
    }
    fn split(x: f64) -> (f64, f64) {
        let g = 134217729.0 * x;
        let hi = g - (g - x);
        (hi, x - hi)
    }
    let exp = |x: f64| ((x.to_bits() >> 52) & 0x7FF) as u32;
    let (ea, eb, ec) = (exp(a), exp(b), exp(c));
    let fast = (1..=2018).contains(&ea)
        && (1..=2018).contains(&eb)
        && (1077..=3067).contains(&(ea + eb))
        && ec != 0x7FF;
    let p = a * b;
    let (ah, al) = split(a);
    let (bh, bl) = split(b);
    let e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl;
    let (t, u) = two_sum(c, p);
    let z = t + round_odd(u, e);
    let z = if t.is_infinite() { t } else { z };
    let ab_special = !a.is_finite() || !b.is_finite();
    let slow = if c == 0.0 && !ab_special && a != 0.0 && b != 0.0 {
        p
    } else if ec == 0x7FF && !ab_special {
        c
    } else {
        p + c
    };
    if fast { z } else { slow }
}

#[cfg(test)]
mod tests {
    use super::fma_f64_model;

    /// splitmix64.
    fn next(s: &mut u64) -> u64 {
        *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn same(x: f64, y: f64) -> bool {
        x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
    }

    /// Random operands around each other's magnitudes (cancellation, ties, carries), against
    /// the host's correctly rounded fma.
    #[test]
    fn f64_fma_model_is_correctly_rounded() {
        let mut s = 7u64;
        let mut checked = 0;
        for i in 0..2_000_000u32 {
            let r = next(&mut s);
            let mut f = |spread: u64| -> f64 {
                let x = next(&mut s);
                let e = 1023 + (x % (2 * spread + 1)) as i64 - spread as i64;
                f64::from_bits((x & ((1 << 63) | ((1 << 52) - 1))) | (e as u64) << 52)
            };
            // Exponents within +-480: every product lies in the fast path's range.
            let spread = [4u64, 60, 250, 480][(r % 4) as usize];
            let (a, b) = (f(spread), f(spread));
            let c = match i % 4 {
                // c close to -a*b: heavy cancellation.
                0 => -(a * b) * (1.0 + (next(&mut s) % 1024) as f64 * f64::EPSILON),
                1 => -(a * b),
                2 => (a * b) * f64::EPSILON * 0.5,
                _ => f(spread),
            };
            let want = a.mul_add(b, c);
            let got = fma_f64_model(a, b, c);
            assert!(
                same(got, want),
                "fma({a:e}, {b:e}, {c:e}) = {want:e} ({:#x}), model {got:e} ({:#x})",
                want.to_bits(),
                got.to_bits()
            );
            checked += 1;
        }
        assert_eq!(checked, 2_000_000);
    }

    /// Exponents anywhere: the model is exact on the fast path, for zero c, and for special
    /// operands; elsewhere (products that overflow or underflow, denormal operands) it may
    /// round twice, and this counts how often.
    #[test]
    fn f64_fma_model_outside_the_fast_path() {
        let mut s = 11u64;
        let (mut outside, mut differ) = (0, 0);
        for i in 0..1_000_000u32 {
            let mut f = || -> f64 {
                let x = next(&mut s);
                let e = x % 2047;
                f64::from_bits((x & ((1 << 63) | ((1 << 52) - 1))) | e << 52)
            };
            let (a, b) = (f(), f());
            let c = match i % 3 {
                0 => -(a * b),
                1 => 0.0,
                _ => f(),
            };
            let want = a.mul_add(b, c);
            let got = fma_f64_model(a, b, c);
            let exp = |x: f64| ((x.to_bits() >> 52) & 0x7FF) as u32;
            let (ea, eb) = (exp(a), exp(b));
            let fast = (1..=2018).contains(&ea)
                && (1..=2018).contains(&eb)
                && (1077..=3067).contains(&(ea + eb));
            let special = !a.is_finite() || !b.is_finite() || !c.is_finite();
            let exact_product = a == 0.0 || b == 0.0;
            if fast || special || c == 0.0 || exact_product {
                assert!(
                    same(got, want),
                    "fma({a:e}, {b:e}, {c:e}) = {want:e}, model {got:e}"
                );
            } else {
                outside += 1;
                differ += usize::from(!same(got, want));
            }
        }
        assert!(outside > 0);
        eprintln!("outside the fast path: {outside} triples, {differ} not correctly rounded");
    }

    /// Products near the overflow and underflow edges of the fast path, and specials.
    #[test]
    fn f64_fma_model_edges() {
        let cases = [
            (f64::MAX, 1.0, -f64::MAX),
            (2f64.powi(500), 2f64.powi(520), -1.0),
            (2f64.powi(-484), 2f64.powi(-485), 2f64.powi(-1074)),
            (3.0 * 2f64.powi(-500), 2f64.powi(-468), -(2f64.powi(-967))),
            (1.0 + f64::EPSILON, 1.0 - f64::EPSILON, -1.0),
            (0.0, -1.0, 0.0),
            (-0.0, 0.0, -0.0),
            (f64::INFINITY, 0.0, 1.0),
            (f64::INFINITY, 2.0, f64::NEG_INFINITY),
            (1e300, 1e10, f64::NEG_INFINITY),
            (2.0, 3.0, f64::NAN),
            (f64::MAX, f64::MAX, 1.0),
            (f64::MIN_POSITIVE, 0.5, 0.0),
        ];
        for (a, b, c) in cases {
            let want = a.mul_add(b, c);
            let got = fma_f64_model(a, b, c);
            assert!(
                same(got, want),
                "fma({a:e}, {b:e}, {c:e}) = {want:e}, model {got:e}"
            );
        }
        // The documented gap: a product that overflows f64 while the fma does not.
        let (a, b, c) = (f64::MAX, 1.5, -f64::MAX);
        assert!(a.mul_add(b, c).is_finite() && fma_f64_model(a, b, c).is_infinite());
    }
}
