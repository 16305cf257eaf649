//! Services of the other host PRX libraries, found by NID in the loader's global scope at
//! first use (libSceDevices keeps no state that libkernel or libc own).

use std::ffi::CString;
use std::sync::OnceLock;

fn sym(nid: &str) -> usize {
    let name = CString::new(nid).expect("a NID has no NUL");
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) as usize }
}

/// Registers (ident, filter) on a guest event queue through libkernel's hook. Returns
/// libkernel's result, or an SCE `EINVAL` error when libkernel is not loaded.
pub fn equeue_add(eq: u64, ident: u64, filter: i16, udata: u64) -> i32 {
    static F: OnceLock<usize> = OnceLock::new();
    let f = *F.get_or_init(|| sym(aps5_prx_macros::nid_str!("__aps5_equeue_add")));
    if f == 0 {
        return 0x8002_0016_u32 as i32;
    }
    let f: extern "C" fn(u64, u64, i16, u64) -> i32 = unsafe { std::mem::transmute(f) };
    f(eq, ident, filter, udata)
}

/// Triggers (ident, filter) on a guest event queue through libkernel's hook.
pub fn equeue_trigger(eq: u64, ident: u64, filter: i16, data: i64, udata: u64) -> i32 {
    static F: OnceLock<usize> = OnceLock::new();
    let f = *F.get_or_init(|| sym(aps5_prx_macros::nid_str!("__aps5_equeue_trigger")));
    if f == 0 {
        return 0x8002_0016_u32 as i32;
    }
    let f: extern "C" fn(u64, u64, i16, i64, u64) -> i32 = unsafe { std::mem::transmute(f) };
    f(eq, ident, filter, data, udata)
}

/// Waits until the GPU queues have run every submission made so far (libSceAgcDriver's hook;
/// nothing to wait for when the program has no GPU library).
pub fn gpu_wait_idle() {
    static F: OnceLock<usize> = OnceLock::new();
    let f = *F.get_or_init(|| sym(aps5_prx_macros::nid_str!("__aps5_gpu_wait_idle")));
    if f != 0 {
        let f: extern "C" fn() -> i32 = unsafe { std::mem::transmute(f) };
        f();
    }
}

/// Ends the process with `status` through the guest libc's `exit` (so its `atexit`
/// handlers run and its stdio buffers are flushed); the host `exit` without libc.prx.
pub fn exit(status: i32) -> ! {
    let f = sym(aps5_prx_macros::nid_str!("exit"));
    if f != 0 {
        let f: extern "C" fn(i32) -> ! = unsafe { std::mem::transmute(f) };
        f(status)
    }
    unsafe { libc::exit(status) }
}
