//! setjmp/longjmp, stdlib extras (div, rand, conversions), time.h, assert.

use std::sync::atomic::{AtomicU64, Ordering};

use aps5_prx_macros::{nid, trampoline_str};

// jmp_buf (FreeBSD amd64: 12 longs + 1): rip, rbx, rsp, rbp, r12-r15, x87 control word
// and MXCSR. setjmp must run in the caller's frame, so these are naked functions.

/// `setjmp`.
#[unsafe(naked)]
#[unsafe(export_name = trampoline_str!("setjmp"))]
pub unsafe extern "C" fn setjmp() {
    core::arch::naked_asm!(
        "mov rdx, [rsp]",
        "mov [rdi], rdx",
        "mov [rdi+8], rbx",
        "lea rdx, [rsp+8]",
        "mov [rdi+16], rdx",
        "mov [rdi+24], rbp",
        "mov [rdi+32], r12",
        "mov [rdi+40], r13",
        "mov [rdi+48], r14",
        "mov [rdi+56], r15",
        "fnstcw [rdi+64]",
        "stmxcsr [rdi+68]",
        "xor eax, eax",
        "ret",
    )
}

/// `_setjmp` (no signal mask, which `setjmp` does not save here either).
#[unsafe(naked)]
#[unsafe(export_name = trampoline_str!("_setjmp"))]
pub unsafe extern "C" fn setjmp_() {
    core::arch::naked_asm!("jmp {}", sym setjmp)
}

/// `longjmp`: returns `v` (1 if `v` is 0) from the matching `setjmp`.
#[unsafe(naked)]
#[unsafe(export_name = trampoline_str!("longjmp"))]
pub unsafe extern "C" fn longjmp() {
    core::arch::naked_asm!(
        "mov eax, esi",
        "test eax, eax",
        "jnz 2f",
        "inc eax",
        "2:",
        "mov rbx, [rdi+8]",
        "mov rsp, [rdi+16]",
        "mov rbp, [rdi+24]",
        "mov r12, [rdi+32]",
        "mov r13, [rdi+40]",
        "mov r14, [rdi+48]",
        "mov r15, [rdi+56]",
        "fldcw [rdi+64]",
        "ldmxcsr [rdi+68]",
        "jmp qword ptr [rdi]",
    )
}

/// `_longjmp`.
#[unsafe(naked)]
#[unsafe(export_name = trampoline_str!("_longjmp"))]
pub unsafe extern "C" fn longjmp_() {
    core::arch::naked_asm!("jmp {}", sym longjmp)
}

/// `div_t`.
#[repr(C)]
pub struct DivT {
    quot: i32,
    rem: i32,
}

/// `ldiv_t` / `lldiv_t`.
#[repr(C)]
pub struct LdivT {
    quot: i64,
    rem: i64,
}

/// `div`.
#[nid("div")]
pub extern "C" fn div(a: i32, b: i32) -> DivT {
    DivT {
        quot: a.wrapping_div(b),
        rem: a.wrapping_rem(b),
    }
}

/// `ldiv`.
#[nid("ldiv")]
pub extern "C" fn ldiv(a: i64, b: i64) -> LdivT {
    LdivT {
        quot: a.wrapping_div(b),
        rem: a.wrapping_rem(b),
    }
}

/// `lldiv`.
#[nid("lldiv")]
pub extern "C" fn lldiv(a: i64, b: i64) -> LdivT {
    ldiv(a, b)
}

/// `llabs`.
#[nid("llabs")]
pub extern "C" fn llabs(v: i64) -> i64 {
    v.wrapping_abs()
}

// Host conversions: out-of-range numbers set ERANGE, a bad base EINVAL.
// FreeBSD's struct tm has glibc's layout (9 ints, long tm_gmtoff, char *tm_zone); the
// time conversions set EOVERFLOW when the year does not fit.
forward! {
    errno "atoll" => fn atoll(s: *const libc::c_char) -> i64 = libc::atoll;
    errno "strtoimax" => fn strtoimax(s: *const libc::c_char, e: *mut *mut libc::c_char, b: i32) -> i64 = libc::strtoll;
    errno "strtoumax" => fn strtoumax(s: *const libc::c_char, e: *mut *mut libc::c_char, b: i32) -> u64 = libc::strtoull;
    "strcoll" => fn strcoll(a: *const libc::c_char, b: *const libc::c_char) -> i32 = libc::strcmp;
    "iscntrl" => fn iscntrl(c: i32) -> i32 = libc::iscntrl;
    "isgraph" => fn isgraph(c: i32) -> i32 = libc::isgraph;
    errno "gmtime" => fn gmtime(t: *const i64) -> *mut libc::tm = libc::gmtime;
    errno "gmtime_r" => fn gmtime_r(t: *const i64, out: *mut libc::tm) -> *mut libc::tm = libc::gmtime_r;
    errno "localtime" => fn localtime(t: *const i64) -> *mut libc::tm = libc::localtime;
    errno "localtime_r" => fn localtime_r(t: *const i64, out: *mut libc::tm) -> *mut libc::tm = libc::localtime_r;
    errno "mktime" => fn mktime(tm: *mut libc::tm) -> i64 = libc::mktime;
    "strftime" => fn strftime(s: *mut libc::c_char, n: usize, f: *const libc::c_char, tm: *const libc::tm) -> usize = libc::strftime;
}

/// `isblank`.
#[nid("isblank")]
pub extern "C" fn isblank(c: i32) -> i32 {
    i32::from(c == 0x20 || c == 0x09)
}

/// The `rand` state (FreeBSD: one per process, seed 1).
static RAND_STATE: AtomicU64 = AtomicU64::new(1);

/// FreeBSD's `rand`: Park–Miller "minimal standard" (16807 mod 2^31-1) via Schrage.
fn bsd_rand_step(ctx: u64) -> u64 {
    let x = (ctx % 0x7fff_fffe) as i64 + 1;
    let hi = x / 127_773;
    let lo = x % 127_773;
    let mut x = 16_807 * lo - 2_836 * hi;
    if x < 0 {
        x += 0x7fff_ffff;
    }
    (x - 1) as u64
}

/// `rand`.
#[nid("rand")]
pub extern "C" fn rand() -> i32 {
    let mut cur = RAND_STATE.load(Ordering::Relaxed);
    loop {
        let next = bsd_rand_step(cur);
        match RAND_STATE.compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next as i32,
            Err(c) => cur = c,
        }
    }
}

/// `srand`.
#[nid("srand")]
pub extern "C" fn srand(seed: u32) {
    RAND_STATE.store(u64::from(seed), Ordering::Relaxed);
}

/// `rand_r`.
#[nid("rand_r")]
pub unsafe extern "C" fn rand_r(ctx: *mut u32) -> i32 {
    let next = bsd_rand_step(u64::from(unsafe { *ctx }));
    unsafe { *ctx = next as u32 };
    next as i32
}

/// `clock`: CPU time in CLOCKS_PER_SEC (1000000) units.
#[nid("clock")]
pub extern "C" fn clock() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec * 1_000_000 + ts.tv_nsec / 1000
}

/// `difftime`.
#[nid("difftime")]
pub extern "C" fn difftime(a: i64, b: i64) -> f64 {
    (a - b) as f64
}

/// `_Assert(expression, "file, line N")` (Dinkumware's assert failure).
#[nid("_Assert")]
pub unsafe extern "C" fn assert_fail(expr: *const libc::c_char, place: *const libc::c_char) -> ! {
    let s = |p: *const libc::c_char| {
        if p.is_null() {
            String::new()
        } else {
            unsafe { std::ffi::CStr::from_ptr(p) }
                .to_string_lossy()
                .into_owned()
        }
    };
    crate::stdio::flush_all();
    let msg = format!("Assertion failed: {}, file {}\n", s(expr), s(place));
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::abort()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rand_is_freebsds_minimal_standard() {
        // From seed 1: 16807 * 2 mod (2^31 - 1) - 1 (FreeBSD maps the state to [1, 2^31-2]).
        assert_eq!(super::bsd_rand_step(1), 33613);
        assert_eq!(super::bsd_rand_step(33613), 564950497);
    }
}
