//! Host PRX `libc` (also serving `libSceLibcInternal`): the C library a PS4/PS5 program
//! sees, with FreeBSD/Dinkumware semantics. Every export is a NID.
//!
//! Variadic functions (printf family) are assembly trampolines that build a SysV
//! `va_list` and call Rust (see `aps5_prx_macros::variadic!` and [`va`]), so this crate
//! builds on stable Rust without a C compiler. Memory and most of string.h are the host
//! C library's (same ABI, same semantics in the C locale).
//! errno and files belong to libkernel, reached through [`kernel`].

#![allow(clippy::missing_safety_doc)]

pub mod cxx;
pub mod dirent;
pub mod extra;
pub mod kernel;
pub mod locale;
pub mod math;
pub mod misc;
pub mod printf;
pub mod scanf;
pub mod stdio;
pub mod strings;
pub mod va;
pub mod wchar;

#[cfg(test)]
mod tests;

use std::sync::Mutex;

use aps5_prx_macros::{nid, preserve_scratch};

/// `Need_sceLibc`: a data object a program references to say it needs this library.
#[nid("Need_sceLibc")]
pub static NEED_SCE_LIBC: u64 = 1;

/// `Need_sceLibcInternal`: the same marker for libSceLibcInternal.
#[nid("Need_sceLibcInternal")]
pub static NEED_SCE_LIBC_INTERNAL: u64 = 1;

extern "C" fn init() {
    stdio::init();
}

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = init;

/// Handlers registered with `atexit` / `__cxa_atexit`, run in reverse order by `exit`.
static AT_EXIT: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

extern "C" fn init_env_impl() -> i32 {
    0
}
// `_init_env` (called by crt0 before main): the environment is empty on the console.
preserve_scratch!("_init_env", init_env_impl);

extern "C" fn atexit_impl(f: usize) -> i32 {
    if f != 0 {
        AT_EXIT
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((f, usize::MAX));
    }
    0
}
// `atexit`: crt0 passes the exit handler it received from the loader.
preserve_scratch!("atexit", atexit_impl);

/// `__cxa_atexit(fn, arg, dso)`.
#[nid("__cxa_atexit")]
pub extern "C" fn cxa_atexit(f: usize, arg: usize, _dso: usize) -> i32 {
    if f != 0 {
        AT_EXIT
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((f, arg));
    }
    0
}

fn run_at_exit() {
    loop {
        let next = AT_EXIT.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let Some((f, arg)) = next else { break };
        if arg == usize::MAX {
            let f: extern "C" fn() = unsafe { std::mem::transmute(f) };
            f();
        } else {
            let f: extern "C" fn(usize) = unsafe { std::mem::transmute(f) };
            f(arg);
        }
    }
}

/// `exit`: atexit handlers (newest first), flush every stream, then the host exit.
#[nid("exit")]
pub extern "C" fn exit(code: i32) -> ! {
    run_at_exit();
    stdio::flush_all();
    unsafe { libc::exit(code) }
}

/// `_Exit`: no handlers, no flushing.
#[nid("_Exit")]
pub extern "C" fn exit_now(code: i32) -> ! {
    unsafe { libc::_exit(code) }
}

/// `_exit`.
#[nid("_exit")]
pub extern "C" fn exit_now2(code: i32) -> ! {
    unsafe { libc::_exit(code) }
}

/// `abort`.
#[nid("abort")]
pub extern "C" fn abort() -> ! {
    stdio::flush_all();
    unsafe { libc::abort() }
}

/// `malloc`.
#[nid("malloc")]
pub extern "C" fn malloc(n: usize) -> *mut u8 {
    unsafe { libc::malloc(n).cast() }
}

/// `free`.
#[nid("free")]
pub unsafe extern "C" fn free(p: *mut u8) {
    unsafe { libc::free(p.cast()) }
}

/// `calloc`.
#[nid("calloc")]
pub extern "C" fn calloc(n: usize, size: usize) -> *mut u8 {
    unsafe { libc::calloc(n, size).cast() }
}

/// `realloc`.
#[nid("realloc")]
pub unsafe extern "C" fn realloc(p: *mut u8, n: usize) -> *mut u8 {
    unsafe { libc::realloc(p.cast(), n).cast() }
}

/// `memalign`.
#[nid("memalign")]
pub extern "C" fn memalign(align: usize, n: usize) -> *mut u8 {
    unsafe { libc::memalign(align, n).cast() }
}

/// `aligned_alloc`.
#[nid("aligned_alloc")]
pub extern "C" fn aligned_alloc(align: usize, n: usize) -> *mut u8 {
    unsafe { libc::aligned_alloc(align, n).cast() }
}

/// `posix_memalign` (returns a FreeBSD errno; EINVAL and ENOMEM match Linux).
#[nid("posix_memalign")]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut u8, align: usize, n: usize) -> i32 {
    unsafe { libc::posix_memalign(out.cast(), align, n) }
}

/// `malloc_usable_size`.
#[nid("malloc_usable_size")]
pub unsafe extern "C" fn malloc_usable_size(p: *mut u8) -> usize {
    unsafe { libc::malloc_usable_size(p.cast()) }
}

/// `time`.
#[nid("time")]
pub unsafe extern "C" fn time(t: *mut i64) -> i64 {
    unsafe { libc::time(t) }
}

/// `getenv`: the host process environment (what `aps5 run` was given).
#[nid("getenv")]
pub unsafe extern "C" fn getenv(name: *const libc::c_char) -> *mut libc::c_char {
    unsafe { libc::getenv(name) }
}
