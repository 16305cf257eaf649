//! math.h: the host libm (same IEEE results; FreeBSD's msun and glibc agree to the
//! printed precision of any sane program, and both are correctly rounded for sqrt etc.).
//!
//! errno: the console's math functions are Dinkumware's (libc exports its `_Feraise`,
//! `_Exp`, `_Log`, `_Fpcomp`), which report domain and range errors in errno as well as in
//! the floating-point flags, and the SDK's math.h says so (`math_errhandling` is
//! `MATH_ERRNO | MATH_ERREXCEPT`). So the functions glibc reports errors of in errno carry it
//! to the guest (`errno` lines); the others (rounding, fabs, fmin, ...) have no errors.

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

forward! {
    errno "sin" => fn sin(x: f64) -> f64 = host::sin;
    errno "cos" => fn cos(x: f64) -> f64 = host::cos;
    errno "tan" => fn tan(x: f64) -> f64 = host::tan;
    errno "asin" => fn asin(x: f64) -> f64 = host::asin;
    errno "acos" => fn acos(x: f64) -> f64 = host::acos;
    "atan" => fn atan(x: f64) -> f64 = host::atan;
    errno "sinh" => fn sinh(x: f64) -> f64 = host::sinh;
    errno "cosh" => fn cosh(x: f64) -> f64 = host::cosh;
    "tanh" => fn tanh(x: f64) -> f64 = host::tanh;
    errno "exp" => fn exp(x: f64) -> f64 = host::exp;
    errno "exp2" => fn exp2(x: f64) -> f64 = host::exp2;
    errno "log" => fn log(x: f64) -> f64 = host::log;
    errno "log10" => fn log10(x: f64) -> f64 = host::log10;
    errno "log2" => fn log2(x: f64) -> f64 = host::log2;
    errno "sqrt" => fn sqrt(x: f64) -> f64 = host::sqrt;
    "cbrt" => fn cbrt(x: f64) -> f64 = host::cbrt;
    "ceil" => fn ceil(x: f64) -> f64 = host::ceil;
    "floor" => fn floor(x: f64) -> f64 = host::floor;
    "round" => fn round(x: f64) -> f64 = host::round;
    "trunc" => fn trunc(x: f64) -> f64 = host::trunc;
    "rint" => fn rint(x: f64) -> f64 = host::rint;
    "fabs" => fn fabs(x: f64) -> f64 = host::fabs;
    errno "atan2" => fn atan2(y: f64, x: f64) -> f64 = host::atan2;
    errno "pow" => fn pow(x: f64, y: f64) -> f64 = host::pow;
    errno "fmod" => fn fmod(x: f64, y: f64) -> f64 = host::fmod;
    errno "hypot" => fn hypot(x: f64, y: f64) -> f64 = host::hypot;
    "fmax" => fn fmax(x: f64, y: f64) -> f64 = host::fmax;
    "fmin" => fn fmin(x: f64, y: f64) -> f64 = host::fmin;
    "copysign" => fn copysign(x: f64, y: f64) -> f64 = host::copysign;
    errno "sinf" => fn sinf(x: f32) -> f32 = host::sinf;
    errno "cosf" => fn cosf(x: f32) -> f32 = host::cosf;
    errno "tanf" => fn tanf(x: f32) -> f32 = host::tanf;
    errno "asinf" => fn asinf(x: f32) -> f32 = host::asinf;
    errno "acosf" => fn acosf(x: f32) -> f32 = host::acosf;
    "atanf" => fn atanf(x: f32) -> f32 = host::atanf;
    errno "expf" => fn expf(x: f32) -> f32 = host::expf;
    errno "exp2f" => fn exp2f(x: f32) -> f32 = host::exp2f;
    errno "logf" => fn logf(x: f32) -> f32 = host::logf;
    errno "log10f" => fn log10f(x: f32) -> f32 = host::log10f;
    errno "log2f" => fn log2f(x: f32) -> f32 = host::log2f;
    errno "sqrtf" => fn sqrtf(x: f32) -> f32 = host::sqrtf;
    "cbrtf" => fn cbrtf(x: f32) -> f32 = host::cbrtf;
    "ceilf" => fn ceilf(x: f32) -> f32 = host::ceilf;
    "floorf" => fn floorf(x: f32) -> f32 = host::floorf;
    "roundf" => fn roundf(x: f32) -> f32 = host::roundf;
    "truncf" => fn truncf(x: f32) -> f32 = host::truncf;
    "fabsf" => fn fabsf(x: f32) -> f32 = host::fabsf;
    errno "atan2f" => fn atan2f(y: f32, x: f32) -> f32 = host::atan2f;
    errno "powf" => fn powf(x: f32, y: f32) -> f32 = host::powf;
    errno "fmodf" => fn fmodf(x: f32, y: f32) -> f32 = host::fmodf;
    errno "hypotf" => fn hypotf(x: f32, y: f32) -> f32 = host::hypotf;
    "fmaxf" => fn fmaxf(x: f32, y: f32) -> f32 = host::fmaxf;
    "fminf" => fn fminf(x: f32, y: f32) -> f32 = host::fminf;
    "frexp" => fn frexp(x: f64, e: *mut i32) -> f64 = host::frexp;
    errno "ldexp" => fn ldexp(x: f64, e: i32) -> f64 = host::ldexp;
    "modf" => fn modf(x: f64, i: *mut f64) -> f64 = host::modf;
    "frexpf" => fn frexpf(x: f32, e: *mut i32) -> f32 = host::frexpf;
    errno "ldexpf" => fn ldexpf(x: f32, e: i32) -> f32 = host::ldexpf;
    "modff" => fn modff(x: f32, i: *mut f32) -> f32 = host::modff;
    "lround" => fn lround(x: f64) -> i64 = host::lround;
    "llround" => fn llround(x: f64) -> i64 = host::llround;
    "lroundf" => fn lroundf(x: f32) -> i64 = host::lroundf;
}
