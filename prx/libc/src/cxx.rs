//! The C++ runtime pieces a PS4/PS5 program imports from libc / libSceLibcInternal:
//! `operator new`/`delete` (the host heap; a failed `new` calls the new-handler and throws
//! `std::bad_alloc`), thread-safe static initialisation guards (`__cxa_guard_*`, Itanium
//! ABI), `__cxa_pure_virtual`, and the Itanium unwinder (`_Unwind_*`, forwarded to the
//! host's libgcc_s: the ABI is the same, and relinked programs keep their
//! `PT_GNU_EH_FRAME`, so the host unwinder walks guest frames).
//!
//! Throwing and catching (`__cxa_throw`, `__gxx_personality_v0`, type_info objects and
//! vtables, `std::terminate`, ...) are not here: the relinker binds those NIDs to the host's
//! `libstdc++.so.6` by name (`compiler/relink/src/cxxabi.rs`), because the guest's
//! type_info objects must point at the host runtime's own vtables.

use std::ffi::CStr;
use std::sync::{Condvar, Mutex};

use aps5_prx_macros::nid;

/// A function of the host C++ runtime: found in the process (relinked programs that use
/// exceptions have `libstdc++.so.6` in DT_NEEDED), else by loading it.
fn host_cxx(name: &CStr) -> Option<*mut libc::c_void> {
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if !p.is_null() {
        return Some(p);
    }
    let h = unsafe {
        libc::dlopen(
            c"libstdc++.so.6".as_ptr(),
            libc::RTLD_NOW | libc::RTLD_GLOBAL,
        )
    };
    if h.is_null() {
        return None;
    }
    let p = unsafe { libc::dlsym(h, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// The heap is exhausted: what `operator new` does next (C++17 [new.delete.single]): call
/// the installed new-handler and retry, or throw `std::bad_alloc` (through the host
/// runtime, so the guest catches the host's `bad_alloc` type_info, which its own
/// `catch (std::bad_alloc&)` refers to as well).
fn out_of_memory(n: usize) {
    if let Some(get) = host_cxx(c"_ZSt15get_new_handlerv") {
        let get: extern "C" fn() -> Option<extern "C-unwind" fn()> =
            unsafe { std::mem::transmute(get) };
        if let Some(handler) = get() {
            handler(); // may free memory, throw, or end the program
            return;
        }
    }
    if let Some(throw) = host_cxx(c"_ZSt17__throw_bad_allocv") {
        let throw: extern "C-unwind" fn() -> ! = unsafe { std::mem::transmute(throw) };
        throw();
    }
    let msg = format!(
        "aps5: operator new({n}) failed: out of memory, and the host C++ runtime \
         (libstdc++.so.6) that would throw std::bad_alloc cannot be loaded; aborting\n"
    );
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::abort()
    }
}

fn new(n: usize) -> *mut u8 {
    loop {
        let p = unsafe { libc::malloc(n.max(1)) };
        if !p.is_null() {
            return p.cast();
        }
        out_of_memory(n);
    }
}

fn new_aligned(n: usize, align: usize) -> *mut u8 {
    loop {
        let mut p = std::ptr::null_mut();
        if unsafe { libc::posix_memalign(&mut p, align.max(8), n.max(1)) } == 0 {
            return p.cast();
        }
        out_of_memory(n);
    }
}

/// `operator new(size_t)`.
#[nid("_Znwm")]
pub extern "C-unwind" fn op_new(n: usize) -> *mut u8 {
    new(n)
}

/// `operator new[](size_t)`.
#[nid("_Znam")]
pub extern "C-unwind" fn op_new_array(n: usize) -> *mut u8 {
    new(n)
}

/// `operator new(size_t, const std::nothrow_t&)`.
#[nid("_ZnwmRKSt9nothrow_t")]
pub extern "C" fn op_new_nothrow(n: usize, _tag: *const u8) -> *mut u8 {
    unsafe { libc::malloc(n.max(1)).cast() }
}

/// `operator new[](size_t, const std::nothrow_t&)`.
#[nid("_ZnamRKSt9nothrow_t")]
pub extern "C" fn op_new_array_nothrow(n: usize, _tag: *const u8) -> *mut u8 {
    unsafe { libc::malloc(n.max(1)).cast() }
}

/// `operator new(size_t, std::align_val_t)`.
#[nid("_ZnwmSt11align_val_t")]
pub extern "C-unwind" fn op_new_aligned(n: usize, align: usize) -> *mut u8 {
    new_aligned(n, align)
}

/// `operator new[](size_t, std::align_val_t)`.
#[nid("_ZnamSt11align_val_t")]
pub extern "C-unwind" fn op_new_array_aligned(n: usize, align: usize) -> *mut u8 {
    new_aligned(n, align)
}

macro_rules! deletes {
    ($($name:literal => $f:ident($($a:ident: $t:ty),*);)*) => {$(
        #[doc = concat!("`", $name, "` (frees with the host heap).")]
        #[nid($name)]
        pub unsafe extern "C" fn $f(p: *mut u8 $(, $a: $t)*) {
            $(let _ = $a;)*
            unsafe { libc::free(p.cast()) }
        }
    )*};
}

deletes! {
    "_ZdlPv" => op_delete();
    "_ZdaPv" => op_delete_array();
    "_ZdlPvm" => op_delete_sized(n: usize);
    "_ZdaPvm" => op_delete_array_sized(n: usize);
    "_ZdlPvRKSt9nothrow_t" => op_delete_nothrow(t: *const u8);
    "_ZdaPvRKSt9nothrow_t" => op_delete_array_nothrow(t: *const u8);
    "_ZdlPvSt11align_val_t" => op_delete_aligned(a: usize);
    "_ZdaPvSt11align_val_t" => op_delete_array_aligned(a: usize);
    "_ZdlPvmSt11align_val_t" => op_delete_sized_aligned(n: usize, a: usize);
    "_ZdaPvmSt11align_val_t" => op_delete_array_sized_aligned(n: usize, a: usize);
}

/// Guards being initialised: one lock for all of them (initialisers are rare and short).
static GUARDS: Mutex<()> = Mutex::new(());
static GUARD_DONE: Condvar = Condvar::new();

/// `__cxa_guard_acquire`: 1 if the caller must run the initialiser. Byte 0 of the 64-bit
/// guard means "initialised" (read inline by compiled code), byte 1 "in progress".
#[nid("__cxa_guard_acquire")]
pub unsafe extern "C" fn cxa_guard_acquire(g: *mut u8) -> i32 {
    use std::sync::atomic::{AtomicU8, Ordering};
    let done = unsafe { AtomicU8::from_ptr(g) };
    if done.load(Ordering::Acquire) != 0 {
        return 0;
    }
    let busy = unsafe { AtomicU8::from_ptr(g.add(1)) };
    let mut lock = GUARDS.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if done.load(Ordering::Acquire) != 0 {
            return 0;
        }
        if busy.load(Ordering::Relaxed) == 0 {
            busy.store(1, Ordering::Relaxed);
            return 1;
        }
        lock = GUARD_DONE.wait(lock).unwrap_or_else(|e| e.into_inner());
    }
}

/// `__cxa_guard_release`: the initialiser finished.
#[nid("__cxa_guard_release")]
pub unsafe extern "C" fn cxa_guard_release(g: *mut u8) {
    use std::sync::atomic::{AtomicU8, Ordering};
    let _lock = GUARDS.lock().unwrap_or_else(|e| e.into_inner());
    unsafe { AtomicU8::from_ptr(g.add(1)) }.store(0, Ordering::Relaxed);
    unsafe { AtomicU8::from_ptr(g) }.store(1, Ordering::Release);
    GUARD_DONE.notify_all();
}

/// `__cxa_guard_abort`: the initialiser threw; another thread may try again.
#[nid("__cxa_guard_abort")]
pub unsafe extern "C" fn cxa_guard_abort(g: *mut u8) {
    use std::sync::atomic::{AtomicU8, Ordering};
    let _lock = GUARDS.lock().unwrap_or_else(|e| e.into_inner());
    unsafe { AtomicU8::from_ptr(g.add(1)) }.store(0, Ordering::Relaxed);
    GUARD_DONE.notify_all();
}

/// `__cxa_pure_virtual`: a pure virtual function was called.
#[nid("__cxa_pure_virtual")]
pub extern "C" fn cxa_pure_virtual() -> ! {
    let msg = b"aps5: pure virtual function called; aborting\n";
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::abort()
    }
}

#[allow(non_snake_case)]
mod host {
    // libgcc_s, bound at the first call (aps5_prx_abi::libgcc_s): the unwinder libstdc++ and
    // glibc's cancellation use, so the guest's unwinding runs on the same one.
    unsafe extern "C-unwind" {
        pub fn _Unwind_RaiseException(e: *mut u8) -> i32;
        pub fn _Unwind_Resume(e: *mut u8) -> !;
        pub fn _Unwind_Resume_or_Rethrow(e: *mut u8) -> i32;
        pub fn _Unwind_ForcedUnwind(e: *mut u8, stop: usize, arg: *mut u8) -> i32;
        pub fn _Unwind_Backtrace(f: usize, arg: *mut u8) -> i32;
    }
    unsafe extern "C" {
        pub fn _Unwind_DeleteException(e: *mut u8);
        pub fn _Unwind_GetGR(c: *mut u8, i: i32) -> usize;
        pub fn _Unwind_SetGR(c: *mut u8, i: i32, v: usize);
        pub fn _Unwind_GetIP(c: *mut u8) -> usize;
        pub fn _Unwind_GetIPInfo(c: *mut u8, before: *mut i32) -> usize;
        pub fn _Unwind_SetIP(c: *mut u8, v: usize);
        pub fn _Unwind_GetCFA(c: *mut u8) -> usize;
        pub fn _Unwind_GetLanguageSpecificData(c: *mut u8) -> usize;
        pub fn _Unwind_GetRegionStart(c: *mut u8) -> usize;
        pub fn _Unwind_GetDataRelBase(c: *mut u8) -> usize;
        pub fn _Unwind_GetTextRelBase(c: *mut u8) -> usize;
        pub fn _Unwind_FindEnclosingFunction(pc: usize) -> usize;
    }
}

macro_rules! unwind {
    ($abi:literal: $($name:literal => fn $f:ident($($a:ident: $t:ty),*) -> $r:ty;)*) => {$(
        #[doc = concat!("`", $name, "` (the host unwinder, same Itanium ABI).")]
        #[allow(non_snake_case)] // the host function's own name
        #[nid($name)]
        pub unsafe extern $abi fn $f($($a: $t),*) -> $r {
            unsafe { host::$f($($a),*) }
        }
    )*};
}

unwind! { "C-unwind":
    "_Unwind_RaiseException" => fn _Unwind_RaiseException(e: *mut u8) -> i32;
    "_Unwind_Resume" => fn _Unwind_Resume(e: *mut u8) -> !;
    "_Unwind_Resume_or_Rethrow" => fn _Unwind_Resume_or_Rethrow(e: *mut u8) -> i32;
    "_Unwind_ForcedUnwind" => fn _Unwind_ForcedUnwind(e: *mut u8, stop: usize, arg: *mut u8) -> i32;
    "_Unwind_Backtrace" => fn _Unwind_Backtrace(f: usize, arg: *mut u8) -> i32;
}

unwind! { "C":
    "_Unwind_DeleteException" => fn _Unwind_DeleteException(e: *mut u8) -> ();
    "_Unwind_GetGR" => fn _Unwind_GetGR(c: *mut u8, i: i32) -> usize;
    "_Unwind_SetGR" => fn _Unwind_SetGR(c: *mut u8, i: i32, v: usize) -> ();
    "_Unwind_GetIP" => fn _Unwind_GetIP(c: *mut u8) -> usize;
    "_Unwind_GetIPInfo" => fn _Unwind_GetIPInfo(c: *mut u8, before: *mut i32) -> usize;
    "_Unwind_SetIP" => fn _Unwind_SetIP(c: *mut u8, v: usize) -> ();
    "_Unwind_GetCFA" => fn _Unwind_GetCFA(c: *mut u8) -> usize;
    "_Unwind_GetLanguageSpecificData" => fn _Unwind_GetLanguageSpecificData(c: *mut u8) -> usize;
    "_Unwind_GetRegionStart" => fn _Unwind_GetRegionStart(c: *mut u8) -> usize;
    "_Unwind_GetDataRelBase" => fn _Unwind_GetDataRelBase(c: *mut u8) -> usize;
    "_Unwind_GetTextRelBase" => fn _Unwind_GetTextRelBase(c: *mut u8) -> usize;
    "_Unwind_FindEnclosingFunction" => fn _Unwind_FindEnclosingFunction(pc: usize) -> usize;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn guard_runs_the_initialiser_once_across_threads() {
        static GUARD: [AtomicUsize; 1] = [AtomicUsize::new(0)];
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        let g = GUARD.as_ptr() as usize;
        let threads: Vec<_> = (0..8)
            .map(|_| {
                std::thread::spawn(move || unsafe {
                    if cxa_guard_acquire(g as *mut u8) == 1 {
                        RUNS.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        cxa_guard_release(g as *mut u8);
                    }
                    assert_eq!(*(g as *const u8), 1, "initialised before anyone proceeds");
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(RUNS.load(Ordering::SeqCst), 1);
        assert_eq!(unsafe { cxa_guard_acquire(g as *mut u8) }, 0);
    }

    #[test]
    fn new_and_delete_use_the_host_heap() {
        let p = op_new(100);
        assert!(!p.is_null());
        unsafe { op_delete_sized(p, 100) };
        let a = op_new_aligned(64, 256);
        assert_eq!(a as usize % 256, 0);
        unsafe { op_delete_aligned(a, 256) };
    }
}
