//! `sceNetResolver*` on the host's resolver (`getaddrinfo` / `getnameinfo`), IPv4 as on
//! the console. Lookups are synchronous; the timeout and retry arguments are not used.

use aps5_prx_macros::nid;
use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::Mutex;

use crate::errno::{code, fail};

/// Resolver id -> its last error (0 or an SCE code), for `sceNetResolverGetError`.
static RESOLVERS: Mutex<Option<(i32, HashMap<i32, i32>)>> = Mutex::new(None);

fn with<R>(f: impl FnOnce(&mut i32, &mut HashMap<i32, i32>) -> R) -> R {
    let mut g = RESOLVERS.lock().unwrap_or_else(|p| p.into_inner());
    let (next, map) = g.get_or_insert_with(|| (1, HashMap::new()));
    f(next, map)
}

/// Records the outcome of a lookup on resolver `rid`; `Err(e)` gives the SCE code.
fn finish(rid: i32, r: Result<(), i32>) -> i32 {
    let rc = match r {
        Ok(()) => 0,
        Err(e) => fail(e),
    };
    with(|_, m| {
        if let Some(last) = m.get_mut(&rid) {
            *last = rc;
        }
    });
    rc
}

fn exists(rid: i32) -> bool {
    with(|_, m| m.contains_key(&rid))
}

/// `sceNetResolverCreate(name, pool, flags)`: a new resolver id.
#[nid("sceNetResolverCreate")]
pub extern "C" fn sce_net_resolver_create(
    _name: *const libc::c_char,
    _pool: i32,
    _flags: i32,
) -> i32 {
    with(|next, m| {
        let id = *next;
        *next += 1;
        m.insert(id, 0);
        id
    })
}

/// `sceNetResolverDestroy`.
#[nid("sceNetResolverDestroy")]
pub extern "C" fn sce_net_resolver_destroy(rid: i32) -> i32 {
    if with(|_, m| m.remove(&rid)).is_some() {
        0
    } else {
        fail(code::EBADF)
    }
}

/// `sceNetResolverAbort`: lookups are synchronous, so there is never one to abort.
#[nid("sceNetResolverAbort")]
pub extern "C" fn sce_net_resolver_abort(rid: i32, _flags: i32) -> i32 {
    if exists(rid) { 0 } else { fail(code::EBADF) }
}

/// `sceNetResolverGetError(rid, *result)`: the last lookup's result code.
#[nid("sceNetResolverGetError")]
pub unsafe extern "C" fn sce_net_resolver_get_error(rid: i32, result: *mut i32) -> i32 {
    if result.is_null() {
        return fail(code::EFAULT);
    }
    match with(|_, m| m.get(&rid).copied()) {
        Some(v) => {
            unsafe { *result = v };
            0
        }
        None => fail(code::EBADF),
    }
}

/// The first IPv4 address of `host` (network byte order).
fn lookup(host: &CStr) -> Result<[u8; 4], i32> {
    let mut hints: libc::addrinfo = unsafe { std::mem::zeroed() };
    hints.ai_family = libc::AF_INET;
    hints.ai_socktype = libc::SOCK_STREAM;
    let mut res = std::ptr::null_mut();
    if unsafe { libc::getaddrinfo(host.as_ptr(), std::ptr::null(), &hints, &mut res) } != 0
        || res.is_null()
    {
        return Err(code::ERESOLVER_ENOHOST);
    }
    // SAFETY: AF_INET results hold a sockaddr_in.
    let a = unsafe { *((*res).ai_addr as *const libc::sockaddr_in) };
    unsafe { libc::freeaddrinfo(res) };
    Ok(a.sin_addr.s_addr.to_ne_bytes())
}

/// `sceNetResolverStartNtoa(rid, hostname, *addr, timeout, retry, flags)`: name -> IPv4.
#[nid("sceNetResolverStartNtoa")]
pub unsafe extern "C" fn sce_net_resolver_start_ntoa(
    rid: i32,
    host: *const libc::c_char,
    addr: *mut [u8; 4],
    _timeout: i32,
    _retry: i32,
    _flags: i32,
) -> i32 {
    if !exists(rid) {
        return fail(code::EBADF);
    }
    if host.is_null() || addr.is_null() {
        return finish(rid, Err(code::EINVAL));
    }
    let r = lookup(unsafe { CStr::from_ptr(host) }).map(|a| unsafe { *addr = a });
    finish(rid, r)
}

/// `sceNetResolverStartAton(rid, *addr, hostname, len, timeout, retry, flags)`: IPv4 ->
/// name (a host with no name is `SCE_NET_ERROR_RESOLVER_ENOHOST`).
#[nid("sceNetResolverStartAton")]
pub unsafe extern "C" fn sce_net_resolver_start_aton(
    rid: i32,
    addr: *const [u8; 4],
    host: *mut libc::c_char,
    len: i32,
    _timeout: i32,
    _retry: i32,
    _flags: i32,
) -> i32 {
    if !exists(rid) {
        return fail(code::EBADF);
    }
    if addr.is_null() || host.is_null() || len <= 0 {
        return finish(rid, Err(code::EINVAL));
    }
    let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    sa.sin_family = libc::AF_INET as u16;
    sa.sin_addr.s_addr = u32::from_ne_bytes(unsafe { *addr });
    let mut name = [0 as libc::c_char; 1025];
    let rc = unsafe {
        libc::getnameinfo(
            (&raw const sa).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as u32,
            name.as_mut_ptr(),
            name.len() as u32,
            std::ptr::null_mut(),
            0,
            libc::NI_NAMEREQD,
        )
    };
    if rc != 0 {
        return finish(rid, Err(code::ERESOLVER_ENOHOST));
    }
    let n = unsafe { CStr::from_ptr(name.as_ptr()) }.to_bytes_with_nul();
    if n.len() > len as usize {
        return finish(rid, Err(code::ENOSPC));
    }
    unsafe { std::ptr::copy_nonoverlapping(n.as_ptr().cast(), host, n.len()) };
    finish(rid, Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn localhost_resolves_and_unknown_ids_are_ebadf() {
        let rid = sce_net_resolver_create(std::ptr::null(), 0, 0);
        assert!(rid > 0);
        let mut a = [0u8; 4];
        assert_eq!(
            unsafe { sce_net_resolver_start_ntoa(rid, c"localhost".as_ptr(), &mut a, 0, 0, 0) },
            0
        );
        assert_eq!(a, [127, 0, 0, 1]);
        let r = unsafe {
            sce_net_resolver_start_ntoa(rid, c"no-such-host.invalid".as_ptr(), &mut a, 0, 0, 0)
        };
        assert_eq!(r as u32, 0x8041_01E6);
        let mut last = 0;
        assert_eq!(unsafe { sce_net_resolver_get_error(rid, &mut last) }, 0);
        assert_eq!(last as u32, 0x8041_01E6);
        assert_eq!(sce_net_resolver_destroy(rid), 0);
        assert_eq!(sce_net_resolver_destroy(rid) as u32, 0x8041_0109);
    }
}
