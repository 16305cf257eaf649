//! `sce_net_errno` and the SCE net error codes.

use aps5_prx_macros::nid;
use std::cell::Cell;

thread_local! {
    static SCE_NET_ERRNO: Cell<i32> = const { Cell::new(0) };
}

/// Error code base: a failing call returns `SCE_NET_ERROR_BASE | errno`.
pub const SCE_NET_ERROR_BASE: u32 = 0x8041_0100;

/// SCE net errno values used by name here (FreeBSD's numbers).
pub mod code {
    /// Interrupted (a call on an aborted socket).
    pub const EINTR: i32 = 4;
    /// Bad descriptor / unknown id.
    pub const EBADF: i32 = 9;
    /// Bad pointer.
    pub const EFAULT: i32 = 14;
    /// Invalid argument.
    pub const EINVAL: i32 = 22;
    /// Would block (also EWOULDBLOCK).
    pub const EAGAIN: i32 = 35;
    /// Operation not supported.
    pub const EOPNOTSUPP: i32 = 45;
    /// Address family not supported.
    pub const EAFNOSUPPORT: i32 = 47;
    /// Buffer too small / out of buffer space.
    pub const ENOSPC: i32 = 28;
    /// Resolver: host not found (`SCE_NET_ERROR_RESOLVER_ENOHOST` is `BASE | 0xE6`).
    pub const ERESOLVER_ENOHOST: i32 = 0xE6;
}

/// Sets the calling thread's `sce_net_errno`.
pub fn set(e: i32) {
    SCE_NET_ERRNO.with(|c| c.set(e));
}

/// The calling thread's `sce_net_errno`.
pub fn get() -> i32 {
    SCE_NET_ERRNO.with(Cell::get)
}

/// Records `e` and returns the SCE error code for it.
pub fn fail(e: i32) -> i32 {
    set(e);
    (SCE_NET_ERROR_BASE | (e as u32 & 0xFF)) as i32
}

/// Turns a libkernel result into an SCE one.
pub fn sce<T: Into<i64>>(r: Result<T, i32>) -> i32 {
    match r {
        Ok(v) => v.into() as i32,
        Err(e) => fail(e),
    }
}

/// The FreeBSD (= SCE net) errno for a host errno.
pub use aps5_prx_abi::errno::from_host;

/// Records the host's errno (translated) and returns its SCE error code.
pub fn fail_host() -> i32 {
    fail(from_host(
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
    ))
}

/// `sceNetErrnoLoc`: the address of the calling thread's `sce_net_errno`.
#[nid("sceNetErrnoLoc")]
pub extern "C" fn sce_net_errno_loc() -> *mut i32 {
    SCE_NET_ERRNO.with(Cell::as_ptr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_the_sce_scheme() {
        assert_eq!(fail(code::EAGAIN) as u32, 0x8041_0123);
        assert_eq!(get(), 35);
        assert_eq!(unsafe { *sce_net_errno_loc() }, 35);
        assert_eq!(fail(code::EBADF) as u32, 0x8041_0109);
        assert_eq!(fail(code::ERESOLVER_ENOHOST) as u32, 0x8041_01E6);
        assert_eq!(from_host(libc::EWOULDBLOCK), 35);
        assert_eq!(from_host(libc::ECONNREFUSED), 61);
        assert_eq!(from_host(libc::EBADF), 9);
    }

    #[test]
    fn errno_is_per_thread() {
        set(22);
        std::thread::spawn(|| assert_eq!(get(), 0)).join().unwrap();
        assert_eq!(get(), 22);
    }
}
