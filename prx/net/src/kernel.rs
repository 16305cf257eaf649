//! libkernel's socket layer, found by NID in the loader's global scope at first use (as
//! libc.prx does). Descriptors, FreeBSD `sockaddr` translation and `APS5_NET_REDIRECT` stay
//! in libkernel; this library only adds the SCE calling convention on top.

use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Resolves `nid` once (0: not loaded, e.g. in this crate's unit tests).
fn sym(cache: &AtomicUsize, nid: &CStr) -> usize {
    let v = cache.load(Ordering::Relaxed);
    if v != 0 {
        return v;
    }
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, nid.as_ptr()) } as usize;
    cache.store(f, Ordering::Relaxed);
    f
}

/// FreeBSD ENOSYS: what every call reports when libkernel.prx is not loaded.
const ENOSYS: i32 = 78;

/// The calling thread's libkernel errno (FreeBSD numbering).
pub fn errno() -> i32 {
    static F: AtomicUsize = AtomicUsize::new(0);
    let f = sym(&F, c"9BcDykPmo1I");
    if f == 0 {
        return ENOSYS;
    }
    let f: extern "C" fn() -> *mut i32 = unsafe { std::mem::transmute(f) };
    unsafe { *f() }
}

/// Declares a forwarder to a libkernel export: returns `Err(errno)` for a negative result.
// Not `unsafe fn`s: the pointers are only passed on to libkernel, which checks them as the
// console's kernel does (a bad one is EFAULT or a crash of the guest, as there).
macro_rules! forward {
    ($(#[$m:meta])* $name:ident, $nid:literal, ($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        $(#[$m])*
        #[allow(clippy::not_unsafe_ptr_arg_deref)]
        pub(crate) fn $name($($arg: $ty),*) -> Result<$ret, i32> {
            static F: AtomicUsize = AtomicUsize::new(0);
            let f = sym(&F, $nid);
            if f == 0 {
                return Err(ENOSYS);
            }
            // SAFETY: the NID names a libkernel export with this signature.
            let f: unsafe extern "C-unwind" fn($($ty),*) -> $ret = unsafe { std::mem::transmute(f) };
            let r = unsafe { f($($arg),*) };
            #[allow(clippy::unnecessary_cast)]
            if (r as i64) < 0 { Err(errno()) } else { Ok(r) }
        }
    };
}

forward!(/// `socket`.
    socket, c"TU-d9PfIHPM", (domain: i32, ty: i32, proto: i32) -> i32);
forward!(/// `bind`.
    bind, c"KuOmgKoqCdY", (fd: i32, addr: *const u8, len: u32) -> i32);
forward!(/// `listen`.
    listen, c"pxnCmagrtao", (fd: i32, backlog: i32) -> i32);
forward!(/// `accept`.
    accept, c"3e+4Iv7IJ8U", (fd: i32, addr: *mut u8, len: *mut u32) -> i32);
forward!(/// `connect` (applies `APS5_NET_REDIRECT`).
    connect, c"XVL8So3QJUk", (fd: i32, addr: *const u8, len: u32) -> i32);
forward!(/// `send`.
    send, c"fZOeZIOEmLw", (fd: i32, buf: *const u8, n: usize, flags: i32) -> isize);
forward!(/// `recv`.
    recv, c"Ez8xjo9UF4E", (fd: i32, buf: *mut u8, n: usize, flags: i32) -> isize);
forward!(/// `sendto` (applies `APS5_NET_REDIRECT`).
    sendto, c"oBr313PppNE", (fd: i32, buf: *const u8, n: usize, flags: i32, addr: *const u8, len: u32) -> isize);
forward!(/// `recvfrom`.
    recvfrom, c"lUk6wrGXyMw", (fd: i32, buf: *mut u8, n: usize, flags: i32, addr: *mut u8, len: *mut u32) -> isize);
forward!(/// `shutdown`.
    shutdown, c"TUuiYS2kE8s", (fd: i32, how: i32) -> i32);
forward!(/// `setsockopt` (FreeBSD levels and options).
    setsockopt, c"fFxGkxF2bVo", (fd: i32, level: i32, opt: i32, val: *const u8, len: u32) -> i32);
forward!(/// `getsockopt`.
    getsockopt, c"6O8EwYOgH9Y", (fd: i32, level: i32, opt: i32, val: *mut u8, len: *mut u32) -> i32);
forward!(/// `getsockname`.
    getsockname, c"RenI1lL1WFk", (fd: i32, addr: *mut u8, len: *mut u32) -> i32);
forward!(/// `getpeername`.
    getpeername, c"TXFFFiNldU8", (fd: i32, addr: *mut u8, len: *mut u32) -> i32);
forward!(/// `close`.
    close, c"bY-PO6JhzhQ", (fd: i32) -> i32);
forward!(/// `inet_pton` (FreeBSD AF_INET6 28).
    inet_pton, c"4n51s0zEf0c", (af: i32, src: *const libc::c_char, dst: *mut u8) -> i32);

#[cfg(test)]
mod tests {
    use aps5_prx_macros::nid_str;

    #[test]
    fn nids_used_here_are_the_right_ones() {
        for (name, nid) in [
            (nid_str!("__error"), "9BcDykPmo1I"),
            (nid_str!("socket"), "TU-d9PfIHPM"),
            (nid_str!("bind"), "KuOmgKoqCdY"),
            (nid_str!("listen"), "pxnCmagrtao"),
            (nid_str!("accept"), "3e+4Iv7IJ8U"),
            (nid_str!("connect"), "XVL8So3QJUk"),
            (nid_str!("send"), "fZOeZIOEmLw"),
            (nid_str!("recv"), "Ez8xjo9UF4E"),
            (nid_str!("sendto"), "oBr313PppNE"),
            (nid_str!("recvfrom"), "lUk6wrGXyMw"),
            (nid_str!("shutdown"), "TUuiYS2kE8s"),
            (nid_str!("setsockopt"), "fFxGkxF2bVo"),
            (nid_str!("getsockopt"), "6O8EwYOgH9Y"),
            (nid_str!("getsockname"), "RenI1lL1WFk"),
            (nid_str!("getpeername"), "TXFFFiNldU8"),
            (nid_str!("close"), "bY-PO6JhzhQ"),
            (nid_str!("inet_pton"), "4n51s0zEf0c"),
        ] {
            assert_eq!(name, nid);
        }
    }
}
