//! math.h: the host libm (same IEEE results; FreeBSD's msun and glibc agree to the
//! printed precision of any sane program, and both are correctly rounded for sqrt etc.).

use aps5_prx_macros::nid;

mod host {
    #[link(name = "m")]
    unsafe extern "C" {
        pub fn sin(x: f64) -> f64;
        pub fn cos(x: f64) -> f64;
        pub fn tan(x: f64) -> f64;
        pub fn asin(x: f64) -> f64;
        pub fn acos(x: f64) -> f64;
        pub fn atan(x: f64) -> f64;
        pub fn sinh(x: f64) -> f64;
        pub fn cosh(x: f64) -> f64;
        pub fn tanh(x: f64) -> f64;
        pub fn exp(x: f64) -> f64;
        pub fn exp2(x: f64) -> f64;
        pub fn log(x: f64) -> f64;
        pub fn log10(x: f64) -> f64;
        pub fn log2(x: f64) -> f64;
        pub fn sqrt(x: f64) -> f64;
        pub fn cbrt(x: f64) -> f64;
        pub fn ceil(x: f64) -> f64;
        pub fn floor(x: f64) -> f64;
        pub fn round(x: f64) -> f64;
        pub fn trunc(x: f64) -> f64;
        pub fn rint(x: f64) -> f64;
        pub fn fabs(x: f64) -> f64;
        pub fn atan2(y: f64, x: f64) -> f64;
        pub fn pow(x: f64, y: f64) -> f64;
        pub fn fmod(x: f64, y: f64) -> f64;
        pub fn hypot(x: f64, y: f64) -> f64;
        pub fn fmax(x: f64, y: f64) -> f64;
        pub fn fmin(x: f64, y: f64) -> f64;
        pub fn copysign(x: f64, y: f64) -> f64;
        pub fn sinf(x: f32) -> f32;
        pub fn cosf(x: f32) -> f32;
        pub fn tanf(x: f32) -> f32;
        pub fn asinf(x: f32) -> f32;
        pub fn acosf(x: f32) -> f32;
        pub fn atanf(x: f32) -> f32;
        pub fn expf(x: f32) -> f32;
        pub fn exp2f(x: f32) -> f32;
        pub fn logf(x: f32) -> f32;
        pub fn log10f(x: f32) -> f32;
        pub fn log2f(x: f32) -> f32;
        pub fn sqrtf(x: f32) -> f32;
        pub fn cbrtf(x: f32) -> f32;
        pub fn ceilf(x: f32) -> f32;
        pub fn floorf(x: f32) -> f32;
        pub fn roundf(x: f32) -> f32;
        pub fn truncf(x: f32) -> f32;
        pub fn fabsf(x: f32) -> f32;
        pub fn atan2f(y: f32, x: f32) -> f32;
        pub fn powf(x: f32, y: f32) -> f32;
        pub fn fmodf(x: f32, y: f32) -> f32;
        pub fn hypotf(x: f32, y: f32) -> f32;
        pub fn fmaxf(x: f32, y: f32) -> f32;
        pub fn fminf(x: f32, y: f32) -> f32;
        pub fn frexp(x: f64, e: *mut i32) -> f64;
        pub fn ldexp(x: f64, e: i32) -> f64;
        pub fn modf(x: f64, i: *mut f64) -> f64;
        pub fn frexpf(x: f32, e: *mut i32) -> f32;
        pub fn ldexpf(x: f32, e: i32) -> f32;
        pub fn modff(x: f32, i: *mut f32) -> f32;
        pub fn lround(x: f64) -> i64;
        pub fn llround(x: f64) -> i64;
        pub fn lroundf(x: f32) -> i64;
    }
}

macro_rules! math {
    ($($name:literal => fn $f:ident($($a:ident: $t:ty),*) -> $r:ty;)*) => {$(
        #[doc = concat!("`", $name, "` (host libm).")]
        #[nid($name)]
        pub unsafe extern "C" fn $f($($a: $t),*) -> $r {
            unsafe { host::$f($($a),*) }
        }
    )*};
}

math! {
    "sin" => fn sin(x: f64) -> f64;
    "cos" => fn cos(x: f64) -> f64;
    "tan" => fn tan(x: f64) -> f64;
    "asin" => fn asin(x: f64) -> f64;
    "acos" => fn acos(x: f64) -> f64;
    "atan" => fn atan(x: f64) -> f64;
    "sinh" => fn sinh(x: f64) -> f64;
    "cosh" => fn cosh(x: f64) -> f64;
    "tanh" => fn tanh(x: f64) -> f64;
    "exp" => fn exp(x: f64) -> f64;
    "exp2" => fn exp2(x: f64) -> f64;
    "log" => fn log(x: f64) -> f64;
    "log10" => fn log10(x: f64) -> f64;
    "log2" => fn log2(x: f64) -> f64;
    "sqrt" => fn sqrt(x: f64) -> f64;
    "cbrt" => fn cbrt(x: f64) -> f64;
    "ceil" => fn ceil(x: f64) -> f64;
    "floor" => fn floor(x: f64) -> f64;
    "round" => fn round(x: f64) -> f64;
    "trunc" => fn trunc(x: f64) -> f64;
    "rint" => fn rint(x: f64) -> f64;
    "fabs" => fn fabs(x: f64) -> f64;
    "atan2" => fn atan2(y: f64, x: f64) -> f64;
    "pow" => fn pow(x: f64, y: f64) -> f64;
    "fmod" => fn fmod(x: f64, y: f64) -> f64;
    "hypot" => fn hypot(x: f64, y: f64) -> f64;
    "fmax" => fn fmax(x: f64, y: f64) -> f64;
    "fmin" => fn fmin(x: f64, y: f64) -> f64;
    "copysign" => fn copysign(x: f64, y: f64) -> f64;
    "sinf" => fn sinf(x: f32) -> f32;
    "cosf" => fn cosf(x: f32) -> f32;
    "tanf" => fn tanf(x: f32) -> f32;
    "asinf" => fn asinf(x: f32) -> f32;
    "acosf" => fn acosf(x: f32) -> f32;
    "atanf" => fn atanf(x: f32) -> f32;
    "expf" => fn expf(x: f32) -> f32;
    "exp2f" => fn exp2f(x: f32) -> f32;
    "logf" => fn logf(x: f32) -> f32;
    "log10f" => fn log10f(x: f32) -> f32;
    "log2f" => fn log2f(x: f32) -> f32;
    "sqrtf" => fn sqrtf(x: f32) -> f32;
    "cbrtf" => fn cbrtf(x: f32) -> f32;
    "ceilf" => fn ceilf(x: f32) -> f32;
    "floorf" => fn floorf(x: f32) -> f32;
    "roundf" => fn roundf(x: f32) -> f32;
    "truncf" => fn truncf(x: f32) -> f32;
    "fabsf" => fn fabsf(x: f32) -> f32;
    "atan2f" => fn atan2f(y: f32, x: f32) -> f32;
    "powf" => fn powf(x: f32, y: f32) -> f32;
    "fmodf" => fn fmodf(x: f32, y: f32) -> f32;
    "hypotf" => fn hypotf(x: f32, y: f32) -> f32;
    "fmaxf" => fn fmaxf(x: f32, y: f32) -> f32;
    "fminf" => fn fminf(x: f32, y: f32) -> f32;
    "frexp" => fn frexp(x: f64, e: *mut i32) -> f64;
    "ldexp" => fn ldexp(x: f64, e: i32) -> f64;
    "modf" => fn modf(x: f64, i: *mut f64) -> f64;
    "frexpf" => fn frexpf(x: f32, e: *mut i32) -> f32;
    "ldexpf" => fn ldexpf(x: f32, e: i32) -> f32;
    "modff" => fn modff(x: f32, i: *mut f32) -> f32;
    "lround" => fn lround(x: f64) -> i64;
    "llround" => fn llround(x: f64) -> i64;
    "lroundf" => fn lroundf(x: f32) -> i64;
}
