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

/// Linux errno -> FreeBSD errno (shared with the other PRX crates).
pub use aps5_prx_abi::errno::from_host;
