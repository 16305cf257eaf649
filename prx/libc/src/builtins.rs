//! The compiler-runtime functions libc.sprx exports (compiler-rt's names: what clang emits
//! calls to for operations the target has no instruction for, and what programs built with
//! other toolchains import from libc): integer arithmetic on 32/64/128-bit values, bit
//! counts, the trapping `v` operations, overflow-checking multiplies, soft-float helpers for
//! float and double, conversions, integer powers and complex multiply/divide.
//!
//! Each is written with Rust's own operators, which compile to the instruction (or to Rust's
//! own compiler-rt copy for 128-bit division); semantics follow compiler-rt's documentation:
//! comparisons return -1/0/1 with NaN as 1 (`__eq`/`__ne`/`__lt`/`__le`) or -1
//! (`__ge`/`__gt`), conversions to integers saturate, the `v` forms abort on overflow.
//! Division by zero is undefined in C; here it aborts with Rust's message.
//! The x87 `long double` conversions and `__powixf2` are short naked shims around the same
//! arithmetic on the 10-byte format; `__divxc3` and `__mulxc3` (complex `long double`) jump
//! to the host libgcc's.

use aps5_prx_macros::nid;

macro_rules! rt {
    ($($name:literal => fn $f:ident($($a:ident: $t:ty),*) -> $r:ty $body:block)*) => {$(
        #[doc = concat!("`", $name, "`.")]
        #[nid($name)]
        pub unsafe extern "C" fn $f($($a: $t),*) -> $r $body
    )*};
}

fn overflow(what: &str) -> ! {
    let msg = format!("libc: {what}: integer overflow (a trapping arithmetic helper)\n");
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::abort()
    }
}

// Integer arithmetic.
rt! {
    "__ashldi3" => fn ashldi3(a: i64, b: i32) -> i64 { a.wrapping_shl(b as u32) }
    "__ashlti3" => fn ashlti3(a: i128, b: i32) -> i128 { a.wrapping_shl(b as u32) }
    "__ashrdi3" => fn ashrdi3(a: i64, b: i32) -> i64 { a.wrapping_shr(b as u32) }
    "__ashrti3" => fn ashrti3(a: i128, b: i32) -> i128 { a.wrapping_shr(b as u32) }
    "__lshrdi3" => fn lshrdi3(a: u64, b: i32) -> u64 { a.wrapping_shr(b as u32) }
    "__lshrti3" => fn lshrti3(a: u128, b: i32) -> u128 { a.wrapping_shr(b as u32) }
    "__muldi3" => fn muldi3(a: i64, b: i64) -> i64 { a.wrapping_mul(b) }
    "__multi3" => fn multi3(a: i128, b: i128) -> i128 { a.wrapping_mul(b) }
    "__divsi3" => fn divsi3(a: i32, b: i32) -> i32 { a.wrapping_div(b) }
    "__divdi3" => fn divdi3(a: i64, b: i64) -> i64 { a.wrapping_div(b) }
    "__divti3" => fn divti3(a: i128, b: i128) -> i128 { a.wrapping_div(b) }
    "__modsi3" => fn modsi3(a: i32, b: i32) -> i32 { a.wrapping_rem(b) }
    "__moddi3" => fn moddi3(a: i64, b: i64) -> i64 { a.wrapping_rem(b) }
    "__modti3" => fn modti3(a: i128, b: i128) -> i128 { a.wrapping_rem(b) }
    "__udivsi3" => fn udivsi3(a: u32, b: u32) -> u32 { a / b }
    "__udivdi3" => fn udivdi3(a: u64, b: u64) -> u64 { a / b }
    "__udivti3" => fn udivti3(a: u128, b: u128) -> u128 { a / b }
    "__umodsi3" => fn umodsi3(a: u32, b: u32) -> u32 { a % b }
    "__umoddi3" => fn umoddi3(a: u64, b: u64) -> u64 { a % b }
    "__umodti3" => fn umodti3(a: u128, b: u128) -> u128 { a % b }
    "__negdi2" => fn negdi2(a: i64) -> i64 { a.wrapping_neg() }
    "__negti2" => fn negti2(a: i128) -> i128 { a.wrapping_neg() }
    "__cmpdi2" => fn cmpdi2(a: i64, b: i64) -> i32 { (a.cmp(&b) as i32) + 1 }
    "__cmpti2" => fn cmpti2(a: i128, b: i128) -> i32 { (a.cmp(&b) as i32) + 1 }
    "__ucmpdi2" => fn ucmpdi2(a: u64, b: u64) -> i32 { (a.cmp(&b) as i32) + 1 }
    "__ucmpti2" => fn ucmpti2(a: u128, b: u128) -> i32 { (a.cmp(&b) as i32) + 1 }
}

// Division with remainder: the quotient is returned, the remainder stored.
rt! {
    "__divmodsi4" => fn divmodsi4(a: i32, b: i32, rem: *mut i32) -> i32 {
        unsafe { *rem = a.wrapping_rem(b) };
        a.wrapping_div(b)
    }
    "__divmoddi4" => fn divmoddi4(a: i64, b: i64, rem: *mut i64) -> i64 {
        unsafe { *rem = a.wrapping_rem(b) };
        a.wrapping_div(b)
    }
    "__udivmodsi4" => fn udivmodsi4(a: u32, b: u32, rem: *mut u32) -> u32 {
        if !rem.is_null() { unsafe { *rem = a % b } };
        a / b
    }
    "__udivmoddi4" => fn udivmoddi4(a: u64, b: u64, rem: *mut u64) -> u64 {
        if !rem.is_null() { unsafe { *rem = a % b } };
        a / b
    }
    "__udivmodti4" => fn udivmodti4(a: u128, b: u128, rem: *mut u128) -> u128 {
        if !rem.is_null() { unsafe { *rem = a % b } };
        a / b
    }
}

// Bit counts. clz/ctz of 0 are undefined (compiler-rt returns the width).
rt! {
    "__clzsi2" => fn clzsi2(a: u32) -> i32 { a.leading_zeros() as i32 }
    "__clzdi2" => fn clzdi2(a: u64) -> i32 { a.leading_zeros() as i32 }
    "__clzti2" => fn clzti2(a: u128) -> i32 { a.leading_zeros() as i32 }
    "__ctzsi2" => fn ctzsi2(a: u32) -> i32 { a.trailing_zeros() as i32 }
    "__ctzdi2" => fn ctzdi2(a: u64) -> i32 { a.trailing_zeros() as i32 }
    "__ctzti2" => fn ctzti2(a: u128) -> i32 { a.trailing_zeros() as i32 }
    "__ffsdi2" => fn ffsdi2(a: u64) -> i32 { if a == 0 { 0 } else { a.trailing_zeros() as i32 + 1 } }
    "__ffsti2" => fn ffsti2(a: u128) -> i32 { if a == 0 { 0 } else { a.trailing_zeros() as i32 + 1 } }
    "__paritysi2" => fn paritysi2(a: u32) -> i32 { (a.count_ones() & 1) as i32 }
    "__paritydi2" => fn paritydi2(a: u64) -> i32 { (a.count_ones() & 1) as i32 }
    "__parityti2" => fn parityti2(a: u128) -> i32 { (a.count_ones() & 1) as i32 }
    "__popcountsi2" => fn popcountsi2(a: u32) -> i32 { a.count_ones() as i32 }
    "__popcountdi2" => fn popcountdi2(a: u64) -> i32 { a.count_ones() as i32 }
    "__popcountti2" => fn popcountti2(a: u128) -> i32 { a.count_ones() as i32 }
}

// Trapping arithmetic (-ftrapv) and overflow-reporting multiplies.
rt! {
    "__absvsi2" => fn absvsi2(a: i32) -> i32 { a.checked_abs().unwrap_or_else(|| overflow("__absvsi2")) }
    "__absvdi2" => fn absvdi2(a: i64) -> i64 { a.checked_abs().unwrap_or_else(|| overflow("__absvdi2")) }
    "__absvti2" => fn absvti2(a: i128) -> i128 { a.checked_abs().unwrap_or_else(|| overflow("__absvti2")) }
    "__negvsi2" => fn negvsi2(a: i32) -> i32 { a.checked_neg().unwrap_or_else(|| overflow("__negvsi2")) }
    "__negvdi2" => fn negvdi2(a: i64) -> i64 { a.checked_neg().unwrap_or_else(|| overflow("__negvdi2")) }
    "__negvti2" => fn negvti2(a: i128) -> i128 { a.checked_neg().unwrap_or_else(|| overflow("__negvti2")) }
    "__addvsi3" => fn addvsi3(a: i32, b: i32) -> i32 { a.checked_add(b).unwrap_or_else(|| overflow("__addvsi3")) }
    "__addvdi3" => fn addvdi3(a: i64, b: i64) -> i64 { a.checked_add(b).unwrap_or_else(|| overflow("__addvdi3")) }
    "__addvti3" => fn addvti3(a: i128, b: i128) -> i128 { a.checked_add(b).unwrap_or_else(|| overflow("__addvti3")) }
    "__subvsi3" => fn subvsi3(a: i32, b: i32) -> i32 { a.checked_sub(b).unwrap_or_else(|| overflow("__subvsi3")) }
    "__subvdi3" => fn subvdi3(a: i64, b: i64) -> i64 { a.checked_sub(b).unwrap_or_else(|| overflow("__subvdi3")) }
    "__subvti3" => fn subvti3(a: i128, b: i128) -> i128 { a.checked_sub(b).unwrap_or_else(|| overflow("__subvti3")) }
    "__mulvsi3" => fn mulvsi3(a: i32, b: i32) -> i32 { a.checked_mul(b).unwrap_or_else(|| overflow("__mulvsi3")) }
    "__mulvdi3" => fn mulvdi3(a: i64, b: i64) -> i64 { a.checked_mul(b).unwrap_or_else(|| overflow("__mulvdi3")) }
    "__mulvti3" => fn mulvti3(a: i128, b: i128) -> i128 { a.checked_mul(b).unwrap_or_else(|| overflow("__mulvti3")) }
    "__mulosi4" => fn mulosi4(a: i32, b: i32, o: *mut i32) -> i32 {
        let (v, ov) = a.overflowing_mul(b);
        unsafe { *o = i32::from(ov) };
        v
    }
    "__mulodi4" => fn mulodi4(a: i64, b: i64, o: *mut i32) -> i64 {
        let (v, ov) = a.overflowing_mul(b);
        unsafe { *o = i32::from(ov) };
        v
    }
    "__muloti4" => fn muloti4(a: i128, b: i128, o: *mut i32) -> i128 {
        let (v, ov) = a.overflowing_mul(b);
        unsafe { *o = i32::from(ov) };
        v
    }
}

// Soft-float helpers: the SSE instruction does each.
rt! {
    "__addsf3" => fn addsf3(a: f32, b: f32) -> f32 { a + b }
    "__adddf3" => fn adddf3(a: f64, b: f64) -> f64 { a + b }
    "__subsf3" => fn subsf3(a: f32, b: f32) -> f32 { a - b }
    "__subdf3" => fn subdf3(a: f64, b: f64) -> f64 { a - b }
    "__mulsf3" => fn mulsf3(a: f32, b: f32) -> f32 { a * b }
    "__muldf3" => fn muldf3(a: f64, b: f64) -> f64 { a * b }
    "__divsf3" => fn divsf3(a: f32, b: f32) -> f32 { a / b }
    "__divdf3" => fn divdf3(a: f64, b: f64) -> f64 { a / b }
    "__negsf2" => fn negsf2(a: f32) -> f32 { -a }
    "__negdf2" => fn negdf2(a: f64) -> f64 { -a }
    "__extendsfdf2" => fn extendsfdf2(a: f32) -> f64 { f64::from(a) }
    "__truncdfsf2" => fn truncdfsf2(a: f64) -> f32 { a as f32 }
}

/// -1, 0, 1 for less, equal, greater; `nan` when unordered.
fn cmp3<T: PartialOrd>(a: T, b: T, nan: i32) -> i32 {
    match a.partial_cmp(&b) {
        Some(o) => o as i32,
        None => nan,
    }
}

rt! {
    "__eqsf2" => fn eqsf2(a: f32, b: f32) -> i32 { cmp3(a, b, 1) }
    "__nesf2" => fn nesf2(a: f32, b: f32) -> i32 { cmp3(a, b, 1) }
    "__ltsf2" => fn ltsf2(a: f32, b: f32) -> i32 { cmp3(a, b, 1) }
    "__lesf2" => fn lesf2(a: f32, b: f32) -> i32 { cmp3(a, b, 1) }
    "__gesf2" => fn gesf2(a: f32, b: f32) -> i32 { cmp3(a, b, -1) }
    "__gtsf2" => fn gtsf2(a: f32, b: f32) -> i32 { cmp3(a, b, -1) }
    "__unordsf2" => fn unordsf2(a: f32, b: f32) -> i32 { i32::from(a.is_nan() || b.is_nan()) }
    "__eqdf2" => fn eqdf2(a: f64, b: f64) -> i32 { cmp3(a, b, 1) }
    "__nedf2" => fn nedf2(a: f64, b: f64) -> i32 { cmp3(a, b, 1) }
    "__ltdf2" => fn ltdf2(a: f64, b: f64) -> i32 { cmp3(a, b, 1) }
    "__ledf2" => fn ledf2(a: f64, b: f64) -> i32 { cmp3(a, b, 1) }
    "__gedf2" => fn gedf2(a: f64, b: f64) -> i32 { cmp3(a, b, -1) }
    "__gtdf2" => fn gtdf2(a: f64, b: f64) -> i32 { cmp3(a, b, -1) }
    "__unorddf2" => fn unorddf2(a: f64, b: f64) -> i32 { i32::from(a.is_nan() || b.is_nan()) }
}

// Conversions (to integers: saturating, NaN gives 0).
rt! {
    "__fixsfsi" => fn fixsfsi(a: f32) -> i32 { a as i32 }
    "__fixsfdi" => fn fixsfdi(a: f32) -> i64 { a as i64 }
    "__fixsfti" => fn fixsfti(a: f32) -> i128 { a as i128 }
    "__fixdfsi" => fn fixdfsi(a: f64) -> i32 { a as i32 }
    "__fixdfdi" => fn fixdfdi(a: f64) -> i64 { a as i64 }
    "__fixdfti" => fn fixdfti(a: f64) -> i128 { a as i128 }
    "__fixunssfsi" => fn fixunssfsi(a: f32) -> u32 { a as u32 }
    "__fixunssfdi" => fn fixunssfdi(a: f32) -> u64 { a as u64 }
    "__fixunssfti" => fn fixunssfti(a: f32) -> u128 { a as u128 }
    "__fixunsdfsi" => fn fixunsdfsi(a: f64) -> u32 { a as u32 }
    "__fixunsdfdi" => fn fixunsdfdi(a: f64) -> u64 { a as u64 }
    "__fixunsdfti" => fn fixunsdfti(a: f64) -> u128 { a as u128 }
    "__floatsisf" => fn floatsisf(a: i32) -> f32 { a as f32 }
    "__floatsidf" => fn floatsidf(a: i32) -> f64 { f64::from(a) }
    "__floatdisf" => fn floatdisf(a: i64) -> f32 { a as f32 }
    "__floatdidf" => fn floatdidf(a: i64) -> f64 { a as f64 }
    "__floattisf" => fn floattisf(a: i128) -> f32 { a as f32 }
    "__floattidf" => fn floattidf(a: i128) -> f64 { a as f64 }
    "__floatunsisf" => fn floatunsisf(a: u32) -> f32 { a as f32 }
    "__floatunsidf" => fn floatunsidf(a: u32) -> f64 { f64::from(a) }
    "__floatundisf" => fn floatundisf(a: u64) -> f32 { a as f32 }
    "__floatundidf" => fn floatundidf(a: u64) -> f64 { a as f64 }
    "__floatuntisf" => fn floatuntisf(a: u128) -> f32 { a as f32 }
    "__floatuntidf" => fn floatuntidf(a: u128) -> f64 { a as f64 }
}

// Integer powers: repeated squaring, the reciprocal for a negative exponent.
rt! {
    "__powisf2" => fn powisf2(a: f32, b: i32) -> f32 { powi(f64::from(a), b, true) as f32 }
    "__powidf2" => fn powidf2(a: f64, b: i32) -> f64 { powi(a, b, false) }
}

fn powi(a: f64, b: i32, single: bool) -> f64 {
    let round = |x: f64| if single { f64::from(x as f32) } else { x };
    let mut base = a;
    let mut n = b.unsigned_abs();
    let mut r = 1.0;
    loop {
        if n & 1 != 0 {
            r = round(r * base);
        }
        n >>= 1;
        if n == 0 {
            break;
        }
        base = round(base * base);
    }
    if b < 0 { round(1.0 / r) } else { r }
}

/// A C `_Complex` value: returned in xmm0 (float: both parts) or xmm0/xmm1 (double), as
/// the SysV ABI passes this struct.
#[repr(C)]
pub struct Complex<T> {
    pub re: T,
    pub im: T,
}

/// C11 Annex G.5.1's complex multiply and divide (with the recovery of infinities that
/// naive formulas turn into NaN), for f32 and f64.
macro_rules! complex {
    ($t:ty, $mul:literal, $mulf:ident, $div:literal, $divf:ident) => {
        #[doc = concat!("`", $mul, "`: (a+bi)(c+di).")]
        #[nid($mul)]
        pub extern "C" fn $mulf(a: $t, b: $t, c: $t, d: $t) -> Complex<$t> {
            let (mut a, mut b, mut c, mut d) = (a, b, c, d);
            let (ac, bd, ad, bc) = (a * c, b * d, a * d, b * c);
            let mut x = ac - bd;
            let mut y = ad + bc;
            if x.is_nan() && y.is_nan() {
                let mut recalc = false;
                let box_inf = |v: $t| -> $t { if v.is_infinite() { 1.0 } else { 0.0 } };
                let zero_nan = |v: $t| {
                    if v.is_nan() {
                        (0.0 as $t).copysign(v)
                    } else {
                        v
                    }
                };
                if a.is_infinite() || b.is_infinite() {
                    a = box_inf(a).copysign(a);
                    b = box_inf(b).copysign(b);
                    c = zero_nan(c);
                    d = zero_nan(d);
                    recalc = true;
                }
                if c.is_infinite() || d.is_infinite() {
                    c = box_inf(c).copysign(c);
                    d = box_inf(d).copysign(d);
                    a = zero_nan(a);
                    b = zero_nan(b);
                    recalc = true;
                }
                if !recalc
                    && (ac.is_infinite()
                        || bd.is_infinite()
                        || ad.is_infinite()
                        || bc.is_infinite())
                {
                    a = zero_nan(a);
                    b = zero_nan(b);
                    c = zero_nan(c);
                    d = zero_nan(d);
                    recalc = true;
                }
                if recalc {
                    x = <$t>::INFINITY * (a * c - b * d);
                    y = <$t>::INFINITY * (a * d + b * c);
                }
            }
            Complex { re: x, im: y }
        }

        #[doc = concat!("`", $div, "`: (a+bi)/(c+di).")]
        #[nid($div)]
        pub extern "C" fn $divf(a: $t, b: $t, c: $t, d: $t) -> Complex<$t> {
            let (mut a, mut b, mut c, mut d) = (a, b, c, d);
            let logbw = c.abs().max(d.abs());
            let mut ilogbw = 0;
            if logbw.is_finite() && logbw > 0.0 {
                ilogbw = logb(logbw as f64) as i32;
                c = scale(c, -ilogbw);
                d = scale(d, -ilogbw);
            }
            let denom = c * c + d * d;
            let mut x = scale((a * c + b * d) / denom, -ilogbw);
            let mut y = scale((b * c - a * d) / denom, -ilogbw);
            if x.is_nan() && y.is_nan() {
                let box_inf = |v: $t| -> $t { if v.is_infinite() { 1.0 } else { 0.0 } };
                if denom == 0.0 && (!a.is_nan() || !b.is_nan()) {
                    x = <$t>::INFINITY.copysign(c) * a;
                    y = <$t>::INFINITY.copysign(c) * b;
                } else if (a.is_infinite() || b.is_infinite()) && c.is_finite() && d.is_finite() {
                    a = box_inf(a).copysign(a);
                    b = box_inf(b).copysign(b);
                    x = <$t>::INFINITY * (a * c + b * d);
                    y = <$t>::INFINITY * (b * c - a * d);
                } else if logbw.is_infinite() && a.is_finite() && b.is_finite() {
                    c = box_inf(c).copysign(c);
                    d = box_inf(d).copysign(d);
                    x = 0.0 * (a * c + b * d);
                    y = 0.0 * (b * c - a * d);
                }
            }
            Complex { re: x, im: y }
        }
    };
}

/// The binary exponent of a finite nonzero value (C's `logb`).
fn logb(v: f64) -> f64 {
    unsafe extern "C" {
        fn logb(x: f64) -> f64;
    }
    unsafe { logb(v) }
}

/// `v * 2^n` without overflow in the intermediate (C's `scalbn`).
fn scale<T: Into<f64> + FromF64>(v: T, n: i32) -> T {
    unsafe extern "C" {
        fn scalbn(x: f64, n: i32) -> f64;
    }
    T::from_f64(unsafe { scalbn(v.into(), n) })
}

trait FromF64 {
    fn from_f64(v: f64) -> Self;
}
impl FromF64 for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}
impl FromF64 for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
}

complex!(f32, "__mulsc3", mulsc3, "__divsc3", divsc3);
complex!(f64, "__muldc3", muldc3, "__divdc3", divdc3);

// x87 `long double` (80-bit extended) conversions and integer power. The SysV ABI passes a
// `long double` on the stack and returns it in st(0): short naked shims move it between
// there and memory, Rust does the bit arithmetic on the 10-byte format (64-bit significand
// with its integer bit, 15-bit exponent biased by 16383, sign).

/// The sign, unbiased exponent and significand of the extended value at P.
fn xf_read(p: *const u8) -> (bool, i32, u64) {
    let mut b = [0u8; 10];
    unsafe { std::ptr::copy_nonoverlapping(p, b.as_mut_ptr(), 10) };
    let m = u64::from_le_bytes(b[..8].try_into().unwrap());
    let se = u16::from_le_bytes([b[8], b[9]]);
    (se & 0x8000 != 0, i32::from(se & 0x7fff) - 16383, m)
}

/// |value| truncated to an integer, or None when it is 2^128 or more (or not finite).
fn xf_magnitude(e: i32, m: u64) -> Option<u128> {
    if e == 0x7fff - 16383 {
        return None;
    }
    if e < 0 {
        return Some(0);
    }
    if e >= 128 {
        return None;
    }
    let shift = e - 63;
    Some(if shift >= 0 {
        u128::from(m) << shift
    } else {
        u128::from(m) >> (-shift)
    })
}

extern "C" fn fixxfti_impl(p: *const u8) -> i128 {
    let (neg, e, m) = xf_read(p);
    match xf_magnitude(e, m) {
        Some(v) if neg && v <= 1u128 << 127 => (v as i128).wrapping_neg(),
        Some(v) if !neg && v < 1u128 << 127 => v as i128,
        _ if neg => i128::MIN,
        _ => i128::MAX,
    }
}

extern "C" fn fixunsxfti_impl(p: *const u8) -> u128 {
    let (neg, e, m) = xf_read(p);
    if neg {
        return 0;
    }
    xf_magnitude(e, m).unwrap_or(u128::MAX)
}

extern "C" fn fixxfdi_impl(p: *const u8) -> i64 {
    fixxfti_impl(p).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

extern "C" fn fixunsxfdi_impl(p: *const u8) -> u64 {
    fixunsxfti_impl(p).min(u128::from(u64::MAX)) as u64
}

extern "C" fn fixunsxfsi_impl(p: *const u8) -> u32 {
    fixunsxfti_impl(p).min(u128::from(u32::MAX)) as u32
}

/// Writes `(-1)^neg * v` rounded to nearest-even as an extended value at OUT.
fn xf_write(neg: bool, v: u128, out: *mut u8) {
    let mut b = [0u8; 10];
    if v != 0 {
        let lz = v.leading_zeros();
        let norm = v << lz;
        let mut m = (norm >> 64) as u64;
        let rest = norm as u64;
        let mut e = 127 - lz as i32;
        let half = 1u64 << 63;
        if rest > half || (rest == half && m & 1 == 1) {
            m = m.wrapping_add(1);
            if m == 0 {
                m = half;
                e += 1;
            }
        }
        b[..8].copy_from_slice(&m.to_le_bytes());
        let se = (e + 16383) as u16 | if neg { 0x8000 } else { 0 };
        b[8..].copy_from_slice(&se.to_le_bytes());
    }
    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), out, 10) };
}

extern "C" fn floattixf_impl(v: i128, out: *mut u8) {
    xf_write(v < 0, v.unsigned_abs(), out)
}
extern "C" fn floatuntixf_impl(v: u128, out: *mut u8) {
    xf_write(false, v, out)
}
extern "C" fn floatdixf_impl(v: i64, out: *mut u8) {
    xf_write(v < 0, u128::from(v.unsigned_abs()), out)
}
extern "C" fn floatundixf_impl(v: u64, out: *mut u8) {
    xf_write(false, u128::from(v), out)
}

/// A naked export taking one `long double` (on the stack) and returning what IMPL(ptr)
/// returns in rax(:rdx).
macro_rules! from_xf {
    ($($name:literal => $f:ident = $imp:ident;)*) => {$(
        #[doc = concat!("`", $name, "` (x87 extended argument).")]
        #[unsafe(naked)]
        #[unsafe(export_name = aps5_prx_macros::trampoline_str!($name))]
        pub unsafe extern "C" fn $f() {
            core::arch::naked_asm!("lea rdi, [rsp+8]", "jmp {imp}", imp = sym $imp)
        }
    )*};
}

/// A naked export returning a `long double` in st(0): IMPL(args..., out) fills 16 bytes of
/// stack, which are then loaded.
macro_rules! to_xf {
    ($($name:literal => $f:ident = $imp:ident, $out:literal;)*) => {$(
        #[doc = concat!("`", $name, "` (x87 extended result).")]
        #[unsafe(naked)]
        #[unsafe(export_name = aps5_prx_macros::trampoline_str!($name))]
        pub unsafe extern "C" fn $f() {
            core::arch::naked_asm!(
                "sub rsp, 24",
                concat!("mov ", $out, ", rsp"),
                "call {imp}",
                "fld tbyte ptr [rsp]",
                "add rsp, 24",
                "ret",
                imp = sym $imp,
            )
        }
    )*};
}

from_xf! {
    "__fixxfdi" => fixxfdi = fixxfdi_impl;
    "__fixxfti" => fixxfti = fixxfti_impl;
    "__fixunsxfsi" => fixunsxfsi = fixunsxfsi_impl;
    "__fixunsxfdi" => fixunsxfdi = fixunsxfdi_impl;
    "__fixunsxfti" => fixunsxfti = fixunsxfti_impl;
}

to_xf! {
    "__floatdixf" => floatdixf = floatdixf_impl, "rsi";
    "__floatundixf" => floatundixf = floatundixf_impl, "rsi";
    "__floattixf" => floattixf = floattixf_impl, "rdx";
    "__floatuntixf" => floatuntixf = floatuntixf_impl, "rdx";
}

/// `__powixf2(long double a, int b)`: repeated squaring on the x87 stack (each product
/// rounded to extended precision, as C's `long double` arithmetic), the reciprocal for b < 0.
#[unsafe(naked)]
#[unsafe(export_name = aps5_prx_macros::trampoline_str!("__powixf2"))]
pub unsafe extern "C" fn powixf2() {
    core::arch::naked_asm!(
        "fld tbyte ptr [rsp+8]", // st0 = base
        "fld1",                  // st0 = r, st1 = base
        "mov eax, edi",
        "test eax, eax",
        "jns 2f",
        "neg eax",
        "2:",
        "test eax, 1",
        "jz 3f",
        "fmul st(0), st(1)", // r *= base
        "3:",
        "shr eax, 1",
        "jz 4f",
        "fxch st(1)",
        "fmul st(0), st(0)", // base *= base
        "fxch st(1)",
        "jmp 2b",
        "4:",
        "fstp st(1)", // drop base, keep r
        "test edi, edi",
        "jns 5f",
        "fld1",
        "fdiv st(0), st(1)", // st0 = 1 / r
        "fstp st(1)",
        "5:",
        "ret",
    )
}

// Complex `long double` multiply and divide: the host's libgcc_s (bound at the first call,
// aps5_prx_abi::libgcc_s) computes them with the same ABI (four values on the stack, the
// result in st(0)/st(1)), so the exports jump there.
unsafe extern "C" {
    #[link_name = "__mulxc3"]
    fn host_mulxc3();
    #[link_name = "__divxc3"]
    fn host_divxc3();
}

/// `__mulxc3` (the host libgcc's).
#[unsafe(naked)]
#[unsafe(export_name = aps5_prx_macros::trampoline_str!("__mulxc3"))]
pub unsafe extern "C" fn mulxc3() {
    core::arch::naked_asm!("jmp {f}", f = sym host_mulxc3)
}

/// `__divxc3` (the host libgcc's).
#[unsafe(naked)]
#[unsafe(export_name = aps5_prx_macros::trampoline_str!("__divxc3"))]
pub unsafe extern "C" fn divxc3() {
    core::arch::naked_asm!("jmp {f}", f = sym host_divxc3)
}
