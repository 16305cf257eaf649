//! PS5 payloads (ELFs made with the ps5-payload-sdk): what the console's ELF loader hands
//! to `_start(payload_args_t *args)`.
//!
//! The SDK's start files read, from `args`, `sys_dynlib_dlsym` (libkernel's wrapper of
//! FreeBSD system call 591, `dynlib_dlsym(handle, name, &addr)`), two kernel read/write
//! pipes, the kernel addresses of a pipe and of the kernel data segment, and the `int`
//! the exit code goes to. Its raw system calls go through a pointer filled at start:
//! the address of a libkernel wrapper (`sys_dynlib_dlsym`, or `getpid` when that is the
//! same function as `sceKernelDlsym`) plus 0xa, where the wrapper's `syscall` sits after
//! `mov rax, <nr>; mov r10, rcx`. The relinked entry stub asks [`payload_args`] for the
//! block and passes it in `rdi`.
//!
//! Here the wrapper is [`aps5_sys_dynlib_dlsym`], laid out byte for byte like the
//! console's, with the trap libkernel services ([`crate::syscall::TRAP`]) at +0xa in
//! place of `syscall`, so a call through `ptr + 0xa` runs the FreeBSD call in `rax`
//! as on the console. There is no kernel to read or write: the pipes are -1 (a read or
//! write on them fails with EBADF) and both kernel addresses are 0.

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};

use aps5_prx_macros::nid;

/// `payload_args_t` of the ps5-payload-sdk (`crt/payload.h`).
#[repr(C)]
pub struct PayloadArgs {
    /// `int (*sys_dynlib_dlsym)(int handle, const char *name, void *out)`.
    pub sys_dynlib_dlsym: usize,
    /// `int *rwpipe`: two pipe descriptors for kernel reads/writes.
    pub rwpipe: *mut i32,
    /// `int *rwpair`: two socket descriptors for kernel reads/writes.
    pub rwpair: *mut i32,
    /// `long kpipe_addr`: kernel address of the pipe.
    pub kpipe_addr: i64,
    /// `long kdata_base_addr`: kernel data segment base.
    pub kdata_base_addr: i64,
    /// `int *payloadout`: where the payload stores its exit code.
    pub payloadout: *mut i32,
}

struct Block {
    args: PayloadArgs,
    rwpipe: [i32; 2],
    rwpair: [i32; 2],
    out: i32,
}

static mut BLOCK: Block = Block {
    args: PayloadArgs {
        sys_dynlib_dlsym: 0,
        rwpipe: std::ptr::null_mut(),
        rwpair: std::ptr::null_mut(),
        kpipe_addr: 0,
        kdata_base_addr: 0,
        payloadout: std::ptr::null_mut(),
    },
    rwpipe: [-1, -1],
    rwpair: [-1, -1],
    out: 0,
};

unsafe extern "C" {
    /// The `sys_dynlib_dlsym` wrapper (defined below in assembly).
    fn aps5_sys_dynlib_dlsym(handle: i32, name: *const libc::c_char, out: *mut usize) -> i32;
}

// mov rax, 591 (48 c7 c0 4f 02 00 00); mov r10, rcx (49 89 ca); then, at +0xa, the trap
// standing for `syscall`; on carry the errno in rax goes to the guest errno and the call
// returns -1, as FreeBSD's wrappers do. Bytes, not mnemonics, so the offsets are exact.
std::arch::global_asm!(
    ".pushsection .text.aps5_sys_dynlib_dlsym,\"ax\",@progbits",
    ".p2align 4",
    ".globl aps5_sys_dynlib_dlsym",
    ".hidden aps5_sys_dynlib_dlsym",
    ".type aps5_sys_dynlib_dlsym,@function",
    "aps5_sys_dynlib_dlsym:",
    ".byte 0x48, 0xc7, 0xc0, 0x4f, 0x02, 0x00, 0x00",
    ".byte 0x49, 0x89, 0xca",
    ".byte 0x0f, 0xff",
    "jb 2f",
    "ret",
    "2:",
    "mov edi, eax",
    "jmp {cerror}",
    ".size aps5_sys_dynlib_dlsym, . - aps5_sys_dynlib_dlsym",
    ".popsection",
    cerror = sym cerror,
);

/// The error tail of a system call wrapper: errno = `e`, return -1.
extern "C" fn cerror(e: i32) -> i64 {
    crate::errno::set(e);
    -1
}

/// Set when the program is a payload (its entry stub asked for [`payload_args`]).
static PAYLOAD: AtomicBool = AtomicBool::new(false);

/// Whether the program is a PS5 payload: a PS5 program without `PT_SCE_PROCPARAM`.
pub fn is_payload() -> bool {
    PAYLOAD.load(Ordering::Relaxed)
}

/// The argument block of `_start` (one per process; the entry stub calls this once).
#[nid("__aps5_payload_args")]
pub extern "C" fn payload_args() -> *mut PayloadArgs {
    PAYLOAD.store(true, Ordering::Relaxed);
    block()
}

/// The filled-in block (without marking the process a payload).
fn block() -> *mut PayloadArgs {
    unsafe {
        let b = &raw mut BLOCK;
        (*b).args.sys_dynlib_dlsym = aps5_sys_dynlib_dlsym as *const () as usize;
        (*b).args.rwpipe = (&raw mut (*b).rwpipe).cast();
        (*b).args.rwpair = (&raw mut (*b).rwpair).cast();
        (*b).args.payloadout = &raw mut (*b).out;
        &raw mut (*b).args
    }
}

/// Module handles the payload SDK passes to `dynlib_dlsym` for system modules: 0x1 and
/// 0x2001 (libkernel, libkernel_sys), 0x2 (libSceLibcInternal). Everything the host PRX
/// set exports is searched for them.
const SYSTEM_HANDLES: [i32; 3] = [0x1, 0x2, 0x2001];

/// FreeBSD `dynlib_dlsym(handle, name, out)` (system call 591): the address of the
/// export `name` (looked up by its NID, then by the plain name) of module `handle`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `out` is NULL or writable.
pub unsafe fn dynlib_dlsym(
    handle: i32,
    name: *const libc::c_char,
    out: *mut usize,
) -> Result<u64, i32> {
    const EFAULT: i32 = 14;
    const ESRCH: i32 = 3;
    if name.is_null() || out.is_null() {
        return Err(EFAULT);
    }
    let name_bytes = unsafe { CStr::from_ptr(name) }.to_bytes();
    // Its own system call wrapper is a libkernel function of that name on the console.
    if name_bytes == b"sys_dynlib_dlsym" && SYSTEM_HANDLES.contains(&handle) {
        unsafe { out.write_unaligned(aps5_sys_dynlib_dlsym as *const () as usize) };
        return Ok(0);
    }
    let p = if SYSTEM_HANDLES.contains(&handle) {
        crate::module::lookup(libc::RTLD_DEFAULT as usize, name_bytes)
    } else {
        let r = unsafe { crate::module::sce_kernel_dlsym(handle, name, out.cast()) };
        return if r == 0 { Ok(0) } else { Err(ESRCH) };
    };
    match p {
        Some(p) => {
            unsafe { out.write_unaligned(p) };
            Ok(0)
        }
        None => Err(ESRCH),
    }
}

/// The process arguments, as ld.so passes them to every `.init_array` function.
static mut ARGC: i32 = 0;
static mut ARGV: *const *const libc::c_char = std::ptr::null();

extern "C" fn save_args(argc: i32, argv: *const *const libc::c_char) {
    unsafe {
        ARGC = argc;
        ARGV = argv;
    }
}

#[used]
#[unsafe(link_section = ".init_array")]
static SAVE_ARGS: extern "C" fn(i32, *const *const libc::c_char) = save_args;

/// `getargc`: the number of process arguments (payload start files read it).
#[nid("getargc")]
pub extern "C" fn getargc() -> i32 {
    unsafe { ARGC }
}

/// `getargv`: the process arguments, NULL-terminated, the environment after them.
#[nid("getargv")]
pub extern "C" fn getargv() -> *const *const libc::c_char {
    unsafe { ARGV }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Calls `ptr + 0xa` as the payload SDK's start files do: FreeBSD number in rax.
    fn through_pointer(ptr: usize, nr: i64, a0: u64) -> i64 {
        let r: i64;
        unsafe {
            std::arch::asm!(
                "call {g}",
                g = in(reg) ptr + 0xa,
                inout("rax") nr => r,
                in("rdi") a0,
                clobber_abi("C"),
            );
        }
        r
    }

    #[test]
    fn the_dlsym_wrapper_is_laid_out_like_the_consoles_and_serves_raw_calls() {
        crate::signal::install_syscall_trap();
        // Not payload_args(): the test process must not count as a payload for other tests.
        let a = unsafe { &*block() };
        let f = a.sys_dynlib_dlsym;
        let code = unsafe { std::slice::from_raw_parts(f as *const u8, 12) };
        // mov rax, 591; mov r10, rcx; then the trap where the console has `syscall`.
        assert_eq!(
            &code[..10],
            &[0x48, 0xc7, 0xc0, 0x4f, 0x02, 0x00, 0x00, 0x49, 0x89, 0xca]
        );
        assert_eq!(&code[10..], &crate::syscall::TRAP);
        // Raw calls through the pointer: getpid (20), close(-1) (6: -1, errno EBADF).
        assert_eq!(
            through_pointer(f, 20, 0),
            i64::from(unsafe { libc::getpid() })
        );
        crate::errno::set(0);
        assert_eq!(through_pointer(f, 6, u64::MAX), -1);
        assert_eq!(unsafe { *crate::errno::error() }, 9);
        // As a function: dynlib_dlsym finds itself by name; a missing name is ESRCH.
        let dlsym: extern "C" fn(i32, *const libc::c_char, *mut usize) -> i32 =
            unsafe { std::mem::transmute(f) };
        let mut out = 0usize;
        assert_eq!(dlsym(0x1, c"sys_dynlib_dlsym".as_ptr(), &mut out), 0);
        assert_eq!(out, f);
        out = 0;
        assert_eq!(dlsym(0x2, c"aps5_no_such_function".as_ptr(), &mut out), -1);
        assert_eq!((out, unsafe { *crate::errno::error() }), (0, 3));
        assert_eq!(dlsym(0x2, std::ptr::null(), &mut out), -1);
        assert_eq!(unsafe { *crate::errno::error() }, 14);
        // No kernel: the pipes are -1, the kernel addresses 0.
        unsafe {
            assert_eq!((*a.rwpipe, *a.rwpipe.add(1)), (-1, -1));
            assert_eq!((*a.rwpair, *a.rwpair.add(1)), (-1, -1));
        }
        assert_eq!((a.kpipe_addr, a.kdata_base_addr), (0, 0));
    }
}
