//! libkernel services, found by NID in the loader's global scope at first use. libc.prx
//! keeps no process state of its own that libkernel owns (errno, path map, fds).

use std::sync::OnceLock;

fn sym(nid: &std::ffi::CStr) -> usize {
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, nid.as_ptr()) as usize }
}

thread_local! {
    // Used only when libkernel.prx is not loaded (unit tests of this crate).
    static FALLBACK_ERRNO: std::cell::Cell<i32> = const { std::cell::Cell::new(0) };
}

/// The calling thread's guest errno (libkernel's `__error()`).
pub fn errno_ptr() -> *mut i32 {
    static F: OnceLock<usize> = OnceLock::new();
    let f = *F.get_or_init(|| sym(c"9BcDykPmo1I"));
    if f == 0 {
        FALLBACK_ERRNO.with(|e| e.as_ptr())
    } else {
        let f: extern "C" fn() -> *mut i32 = unsafe { std::mem::transmute(f) };
        f()
    }
}

/// Sets the guest errno (a FreeBSD value).
pub fn set_errno(v: i32) {
    unsafe { *errno_ptr() = v };
}

/// Opens a guest path with FreeBSD flags through libkernel's `open` (which confines it
/// to the mounted folders). Without libkernel (unit tests) the host path is used.
pub(crate) fn open(path: *const libc::c_char, flags: i32, mode: u32) -> i32 {
    static F: OnceLock<usize> = OnceLock::new();
    let f = *F.get_or_init(|| sym(c"wuCroIGjt2g"));
    if f == 0 {
        let mut h = flags & 3;
        for (bsd, linux) in [
            (0x8, libc::O_APPEND),
            (0x200, libc::O_CREAT),
            (0x400, libc::O_TRUNC),
            (0x800, libc::O_EXCL),
        ] {
            if flags & bsd != 0 {
                h |= linux;
            }
        }
        unsafe { libc::open(path, h, mode) }
    } else {
        let f: extern "C" fn(*const libc::c_char, i32, u32) -> i32 =
            unsafe { std::mem::transmute(f) };
        f(path, flags, mode)
    }
}

/// Removes a guest path through libkernel's `unlink` (host path without libkernel).
pub(crate) fn unlink(path: *const libc::c_char) -> i32 {
    static F: OnceLock<usize> = OnceLock::new();
    let f = *F.get_or_init(|| sym(c"VAzswvTOCzI"));
    if f == 0 {
        unsafe { libc::unlink(path) }
    } else {
        let f: extern "C" fn(*const libc::c_char) -> i32 = unsafe { std::mem::transmute(f) };
        f(path)
    }
}

/// Removes a guest folder through libkernel's `rmdir` (host path without libkernel).
pub(crate) fn rmdir(path: *const libc::c_char) -> i32 {
    static F: OnceLock<usize> = OnceLock::new();
    let f = *F.get_or_init(|| sym(c"c7ZnT7V1B98"));
    if f == 0 {
        unsafe { libc::rmdir(path) }
    } else {
        let f: extern "C" fn(*const libc::c_char) -> i32 = unsafe { std::mem::transmute(f) };
        f(path)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn nids_used_here_are_the_right_ones() {
        assert_eq!(aps5_prx_macros::nid_str!("__error"), "9BcDykPmo1I");
        assert_eq!(aps5_prx_macros::nid_str!("open"), "wuCroIGjt2g");
        assert_eq!(aps5_prx_macros::nid_str!("unlink"), "VAzswvTOCzI");
        assert_eq!(aps5_prx_macros::nid_str!("rmdir"), "c7ZnT7V1B98");
    }
}
