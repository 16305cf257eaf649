//! Host PRX `libkernel`: the process-wide state of a relinked PS4/PS5 program.
//!
//! Every exported symbol is a NID (see `aps5-prx-macros`); nothing here can clash with a
//! host library. This library owns what must exist once per process: errno, threads and
//! their synchronisation objects, the guest path map (`/app0`, `/savedata0`, ...), and the
//! table of loaded guest modules. Other host PRX libraries reach this state only through
//! libkernel's exported NIDs (for example `__error`).
//!
//! Guest file descriptors are host file descriptors. Guest errno values are FreeBSD's;
//! [`errno::from_host`] translates.

// The exported functions are called by guest code with raw pointers; their safety contract
// is the C one documented by the PS4/PS5 SDKs.
#![allow(clippy::missing_safety_doc)]

// libgcc_s.so.1 bound at first use, not at start-up (aps5_prx_abi::libgcc_s).
aps5_prx_abi::lazy_libgcc_s!();

pub mod at;
pub mod equeue;
pub mod errno;
pub mod event_flag;
pub mod files;
pub mod fs;
pub mod lower_trap;
pub mod memory;
pub mod module;
pub mod module_info;
pub mod net;
pub mod nid;
pub mod payload;
pub mod query;
pub mod sema;
pub mod signal;
pub mod sync;
pub mod sync_extra;
pub mod syscall;
mod syscall_names;
pub mod thr;
pub mod thread;
pub mod thread_attr;
pub mod time;

use aps5_prx_macros::nid;

/// `SCE_KERNEL_ERROR_*` is 0x80020000 + FreeBSD errno.
pub const SCE_KERNEL_ERROR_BASE: i32 = 0x8002_0000_u32 as i32;

/// The SCE error code for a FreeBSD errno value.
pub fn sce_error(freebsd_errno: i32) -> i32 {
    SCE_KERNEL_ERROR_BASE.wrapping_add(freebsd_errno)
}

/// The stack protector canary read by guest function prologues. Set once, before any
/// guest code runs (from this library's `.init_array`).
#[nid("__stack_chk_guard")]
pub static mut STACK_CHK_GUARD: u64 = 0;

/// Called by guest code when it finds its stack canary overwritten.
#[nid("__stack_chk_fail")]
pub extern "C" fn stack_chk_fail() -> ! {
    diag(b"aps5: stack smashing detected (__stack_chk_fail); aborting\n");
    unsafe { libc::abort() }
}

/// Writes a diagnostic straight to the host stderr.
pub fn diag(msg: &[u8]) {
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
    }
}

extern "C" fn init() {
    let mut guard: u64 = 0;
    // getrandom cannot fail for 8 bytes once the pool is ready; fall back to a time mix.
    let got = unsafe { libc::getrandom((&raw mut guard).cast(), 8, 0) };
    if got != 8 {
        guard = time::monotonic_ns() ^ 0x9E37_79B9_7F4A_7C15;
    }
    // A zero low byte stops string overflows from copying past the canary.
    unsafe { STACK_CHK_GUARD = guard & !0xFF };
    time::init();
    fs::init();
    signal::install_syscall_trap();
}

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = init;

/// `getpid`.
#[nid("getpid")]
pub extern "C" fn getpid() -> i32 {
    unsafe { libc::getpid() }
}

/// `sceKernelGetCpumode`: 0 (the 6-core mode; the host has whatever it has).
#[nid("sceKernelGetCpumode")]
pub extern "C" fn sce_kernel_get_cpumode() -> i32 {
    0
}

/// `sceKernelIsNeoMode`: not a PS4 Pro.
#[nid("sceKernelIsNeoMode")]
pub extern "C" fn sce_kernel_is_neo_mode() -> i32 {
    0
}

// Glibc's TLS resolver has the same ABI as FreeBSD's: `tls_index { module, offset }`.
unsafe extern "C" {
    #[link_name = "__tls_get_addr"]
    fn host_tls_get_addr(ti: *const u64) -> *mut u8;
}

/// `__tls_get_addr`: module ids and offsets come from the host loader (the relinker keeps
/// `DTPMOD64`/`DTPOFF64` relocations), so the host resolver answers directly.
#[nid("__tls_get_addr")]
pub unsafe extern "C" fn tls_get_addr(ti: *const u64) -> *mut u8 {
    unsafe { host_tls_get_addr(ti) }
}
