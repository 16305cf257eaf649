//! Host PRX `libc` (also serving `libSceLibcInternal`): the C library a PS4/PS5 program
//! sees, with FreeBSD/Dinkumware semantics. Every export is a NID.
//!
//! Variadic functions (printf family) are assembly trampolines that build a SysV
//! `va_list` and call Rust (see `aps5_prx_macros::variadic!` and [`va`]), so this crate
//! builds on stable Rust without a C compiler. Memory and most of string.h are the host
//! C library's (same ABI, same semantics in the C locale).
//! errno and files belong to libkernel, reached through [`kernel`].

#![allow(clippy::missing_safety_doc)]

// libgcc_s.so.1 bound at first use, not at start-up (aps5_prx_abi::libgcc_s).
aps5_prx_abi::lazy_libgcc_s!();

#[macro_use]
pub mod forward;

pub mod atomics;
pub mod builtins;
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
use libc::c_void;

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

/// The thread that is ending the process (0: none yet).
static EXITING: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// `exit`: atexit handlers (newest first), flush every stream, then the host exit.
///
/// One thread ends the process: a second thread calling `exit` meanwhile (the program's, or
/// a PRX's own, e.g. libSceVideoOut at `APS5_MAX_FRAMES` on a GPU queue's thread) waits for
/// it forever, since two host `exit`s at once run the host's exit handlers and destructors
/// twice, concurrently. An `exit` from an atexit handler (the same thread) goes on with the
/// handlers left, as the host's does.
#[nid("exit")]
pub extern "C" fn exit(code: i32) -> ! {
    use std::sync::atomic::Ordering;
    // SAFETY: gettid has no preconditions.
    let me = i64::from(unsafe { libc::gettid() });
    if let Err(owner) = EXITING.compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst)
        && owner != me
    {
        loop {
            std::thread::park();
        }
    }
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

// Memory, time and the environment: the host's. The allocators report ENOMEM (and
// aligned_alloc/memalign EINVAL) in errno; posix_memalign returns its error instead.
forward! {
    errno "malloc" => fn malloc(n: usize) -> *mut c_void = libc::malloc;
    "free" => fn free(p: *mut c_void) -> () = libc::free;
    errno "calloc" => fn calloc(n: usize, size: usize) -> *mut c_void = libc::calloc;
    errno "realloc" => fn realloc(p: *mut c_void, n: usize) -> *mut c_void = libc::realloc;
    errno "memalign" => fn memalign(align: usize, n: usize) -> *mut c_void = libc::memalign;
    errno "aligned_alloc" => fn aligned_alloc(align: usize, n: usize) -> *mut c_void = libc::aligned_alloc;
    "posix_memalign" => fn posix_memalign(out: *mut *mut c_void, align: usize, n: usize) -> i32 = libc::posix_memalign;
    "malloc_usable_size" => fn malloc_usable_size(p: *mut c_void) -> usize = libc::malloc_usable_size;
    "time" => fn time(t: *mut i64) -> i64 = libc::time;
    "getenv" => fn getenv(name: *const libc::c_char) -> *mut libc::c_char = libc::getenv;
}
