//! errno: one `int` per thread, owned by libkernel and reached through `__error()`.

use std::cell::Cell;

use aps5_prx_macros::nid;

thread_local! {
    static ERRNO: Cell<i32> = const { Cell::new(0) };
}

/// `__error`: the address of the calling thread's errno.
#[nid("__error")]
pub extern "C" fn error() -> *mut i32 {
    ERRNO.with(|e| e.as_ptr())
}

/// Sets the calling thread's guest errno (a FreeBSD value).
pub fn set(v: i32) {
    ERRNO.with(|e| e.set(v));
}

/// Sets the guest errno from the host errno of the last failed call; returns the FreeBSD value.
pub fn set_from_host() -> i32 {
    let v = from_host(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
    set(v);
    v
}

/// Linux errno -> FreeBSD errno. 1-34 are the same on both except 11 (EAGAIN on Linux,
/// EDEADLK on FreeBSD); the rest differ.
pub fn from_host(e: i32) -> i32 {
    match e {
        libc::EAGAIN => 35,
        0..=34 => e,
        libc::EINPROGRESS => 36,
        libc::EALREADY => 37,
        libc::ENOTSOCK => 38,
        libc::EDESTADDRREQ => 39,
        libc::EMSGSIZE => 40,
        libc::EPROTOTYPE => 41,
        libc::ENOPROTOOPT => 42,
        libc::EPROTONOSUPPORT => 43,
        libc::EOPNOTSUPP => 45,
        libc::EAFNOSUPPORT => 47,
        libc::EADDRINUSE => 48,
        libc::EADDRNOTAVAIL => 49,
        libc::ENETDOWN => 50,
        libc::ENETUNREACH => 51,
        libc::ECONNABORTED => 53,
        libc::ECONNRESET => 54,
        libc::ENOBUFS => 55,
        libc::EISCONN => 56,
        libc::ENOTCONN => 57,
        libc::ETIMEDOUT => 60,
        libc::ECONNREFUSED => 61,
        libc::ELOOP => 62,
        libc::ENAMETOOLONG => 63,
        libc::EHOSTUNREACH => 65,
        libc::ENOTEMPTY => 66,
        libc::EDEADLK => 11,
        libc::ENOLCK => 77,
        libc::ENOSYS => 78,
        libc::EOVERFLOW => 84,
        libc::ECANCELED => 85,
        libc::EILSEQ => 86,
        _ => 5, // EIO: no closer FreeBSD meaning
    }
}
