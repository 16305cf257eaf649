//! Services of libkernel.prx and libc.prx, found by NID in the loader's global scope at first
//! use (docs/PRX.md, "Process state lives once"): event queues stay in libkernel.

use std::ffi::CString;
use std::sync::OnceLock;

fn sym(nid: &str) -> usize {
    let name = CString::new(nid).expect("a NID has no NUL");
    // SAFETY: dlsym with a NUL-terminated name.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) as usize }
}

/// SCE `EINVAL`: what the hooks answer when libkernel is not loaded.
const SCE_EINVAL: i32 = 0x8002_0016_u32 as i32;

/// Registers (ident, filter) on a guest event queue through libkernel's hook.
pub fn equeue_add(eq: u64, ident: u64, filter: i16, udata: u64) -> i32 {
    static F: OnceLock<usize> = OnceLock::new();
    let f = *F.get_or_init(|| sym(aps5_prx_macros::nid_str!("__aps5_equeue_add")));
    if f == 0 {
        return SCE_EINVAL;
    }
    // SAFETY: the NID names libkernel's hook with this signature.
    let f: extern "C" fn(u64, u64, i16, u64) -> i32 = unsafe { std::mem::transmute(f) };
    f(eq, ident, filter, udata)
}

/// Triggers (ident, filter) on a guest event queue through libkernel's hook.
pub fn equeue_trigger(eq: u64, ident: u64, filter: i16, data: i64, udata: u64) -> i32 {
    static F: OnceLock<usize> = OnceLock::new();
    let f = *F.get_or_init(|| sym(aps5_prx_macros::nid_str!("__aps5_equeue_trigger")));
    if f == 0 {
        return SCE_EINVAL;
    }
    // SAFETY: as above.
    let f: extern "C" fn(u64, u64, i16, i64, u64) -> i32 = unsafe { std::mem::transmute(f) };
    f(eq, ident, filter, data, udata)
}

/// Ends the process with `status` through the guest libc's `exit` (its stdio buffers are
/// flushed, so the output before a GPU fault is kept); the host `exit` without libc.prx.
pub fn exit(status: i32) -> ! {
    let f = sym(aps5_prx_macros::nid_str!("exit"));
    if f != 0 {
        // SAFETY: libc.prx's `exit`.
        let f: extern "C" fn(i32) -> ! = unsafe { std::mem::transmute(f) };
        f(status)
    }
    // SAFETY: plain process exit.
    unsafe { libc::exit(status) }
}
