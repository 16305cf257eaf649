//! `sceNetSocket` and the socket calls. Addresses are FreeBSD `SceNetSockaddr`s (length
//! byte, one-byte family), passed to libkernel unchanged.

use aps5_prx_macros::nid;
use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::errno::{self, code, fail, sce};
use crate::kernel;

/// `SCE_NET_SOL_SOCKET`.
const SOL_SOCKET: i32 = 0xFFFF;
/// `SCE_NET_SO_SNDTIMEO` / `SCE_NET_SO_RCVTIMEO`: an `int` of microseconds (FreeBSD: timeval).
const SO_SNDTIMEO: i32 = 0x1005;
const SO_RCVTIMEO: i32 = 0x1006;
/// `SCE_NET_SO_NBIO`: an `int`, non-zero for non-blocking.
const SO_NBIO: i32 = 0x1200;
/// SCE options with no host counterpart that are accepted and ignored (crypto and
/// signature of P2P sockets; `SO_TPPOLICY`, `SO_NAME`).
const IGNORED: [i32; 4] = [0x1100, 0x1101, 0x1201, 0x1202];

/// Drops the SCE-only message flags (`USECRYPTO`, `USESIGNATURE`, the `PEEKLEN` bit);
/// the rest are FreeBSD's, which libkernel translates.
fn msg_flags(f: i32) -> i32 {
    f & !0x0070_0000
}

/// `SCE_NET_SOCK_*` -> FreeBSD socket type: the P2P types (UDP/TCP over a virtual port on
/// the console) become plain datagram/stream sockets.
fn socket_type(t: i32) -> i32 {
    match t {
        6 => 2,  // SCE_NET_SOCK_DGRAM_P2P
        10 => 1, // SCE_NET_SOCK_STREAM_P2P
        t => t,
    }
}

/// `sceNetSocket(name, family, type, protocol)`: the name is for debugging only.
#[nid("sceNetSocket")]
pub extern "C" fn sce_net_socket(
    _name: *const libc::c_char,
    family: i32,
    ty: i32,
    proto: i32,
) -> i32 {
    fresh(kernel::socket(family, socket_type(ty), proto))
}

/// `sceNetSocketClose`.
#[nid("sceNetSocketClose")]
pub extern "C" fn sce_net_socket_close(s: i32) -> i32 {
    if ANY_ABORTED.load(Ordering::Relaxed) {
        aborted_set(|a| a.remove(&s));
    }
    sce(kernel::close(s))
}

/// Sockets aborted by `sceNetSocketAbort` (until closed); `ANY_ABORTED` keeps the lookup
/// off the common path.
static ABORTED: Mutex<Option<HashSet<i32>>> = Mutex::new(None);
static ANY_ABORTED: AtomicBool = AtomicBool::new(false);

fn aborted_set<R>(f: impl FnOnce(&mut HashSet<i32>) -> R) -> R {
    let mut g = ABORTED.lock().unwrap_or_else(|p| p.into_inner());
    let r = f(g.get_or_insert_with(HashSet::new));
    ANY_ABORTED.store(g.as_ref().is_some_and(|s| !s.is_empty()), Ordering::Relaxed);
    r
}

fn is_aborted(s: i32) -> bool {
    ANY_ABORTED.load(Ordering::Relaxed) && aborted_set(|a| a.contains(&s))
}

/// A new id (from `socket` or `accept`) is not aborted, whatever an earlier descriptor
/// with the same number was.
fn fresh(r: Result<i32, i32>) -> i32 {
    if let Ok(s) = r
        && ANY_ABORTED.load(Ordering::Relaxed)
    {
        aborted_set(|a| a.remove(&s));
    }
    sce(r)
}

/// Runs a call that may block on `s`: on an aborted socket it (and a call that an abort
/// woke) fails with `EINTR`, as on the console.
fn blocking<T: Into<i64>>(s: i32, call: impl FnOnce() -> Result<T, i32>) -> i32 {
    if is_aborted(s) {
        return fail(code::EINTR);
    }
    let r = call();
    if is_aborted(s) {
        return fail(code::EINTR);
    }
    sce(r)
}

/// `sceNetSocketAbort(s, flags)`: wakes the threads blocked on `s`, whose calls (and every
/// later one until the socket is closed) fail with `SCE_NET_ERROR_EINTR`. The wake-up is a
/// host `shutdown(SHUT_RDWR)`, so the console's "preservation" flags (keep one direction
/// usable) are not honoured.
#[nid("sceNetSocketAbort")]
pub extern "C" fn sce_net_socket_abort(s: i32, _flags: i32) -> i32 {
    aborted_set(|a| a.insert(s));
    match kernel::shutdown(s, 2) {
        // Not connected (listening or unconnected): Linux still wakes the waiters.
        Ok(_) | Err(57) => 0,
        Err(e) => {
            aborted_set(|a| a.remove(&s));
            fail(e)
        }
    }
}

/// `sceNetBind`.
#[nid("sceNetBind")]
pub unsafe extern "C" fn sce_net_bind(s: i32, addr: *const u8, len: u32) -> i32 {
    sce(kernel::bind(s, addr, len))
}

/// `sceNetListen`.
#[nid("sceNetListen")]
pub extern "C" fn sce_net_listen(s: i32, backlog: i32) -> i32 {
    sce(kernel::listen(s, backlog))
}

/// `sceNetAccept`: the new socket's id.
#[nid("sceNetAccept")]
pub unsafe extern "C-unwind" fn sce_net_accept(s: i32, addr: *mut u8, len: *mut u32) -> i32 {
    if is_aborted(s) {
        return fail(code::EINTR);
    }
    let r = kernel::accept(s, addr, len);
    if is_aborted(s) {
        if let Ok(c) = r {
            let _ = kernel::close(c);
        }
        return fail(code::EINTR);
    }
    fresh(r)
}

/// `sceNetConnect` (`APS5_NET_REDIRECT` applies, in libkernel).
#[nid("sceNetConnect")]
pub unsafe extern "C-unwind" fn sce_net_connect(s: i32, addr: *const u8, len: u32) -> i32 {
    blocking(s, || kernel::connect(s, addr, len))
}

/// `sceNetSend`: bytes sent.
#[nid("sceNetSend")]
pub unsafe extern "C-unwind" fn sce_net_send(s: i32, buf: *const u8, n: usize, flags: i32) -> i32 {
    blocking(s, || {
        kernel::send(s, buf, n, msg_flags(flags)).map(|v| v as i64)
    })
}

/// `sceNetSendto`.
#[nid("sceNetSendto")]
pub unsafe extern "C-unwind" fn sce_net_sendto(
    s: i32,
    buf: *const u8,
    n: usize,
    flags: i32,
    addr: *const u8,
    len: u32,
) -> i32 {
    blocking(s, || {
        kernel::sendto(s, buf, n, msg_flags(flags), addr, len).map(|v| v as i64)
    })
}

/// `sceNetRecv`: bytes received (0 at end of stream).
#[nid("sceNetRecv")]
pub unsafe extern "C-unwind" fn sce_net_recv(s: i32, buf: *mut u8, n: usize, flags: i32) -> i32 {
    blocking(s, || {
        kernel::recv(s, buf, n, msg_flags(flags)).map(|v| v as i64)
    })
}

/// `sceNetRecvfrom`.
#[nid("sceNetRecvfrom")]
pub unsafe extern "C-unwind" fn sce_net_recvfrom(
    s: i32,
    buf: *mut u8,
    n: usize,
    flags: i32,
    addr: *mut u8,
    len: *mut u32,
) -> i32 {
    blocking(s, || {
        kernel::recvfrom(s, buf, n, msg_flags(flags), addr, len).map(|v| v as i64)
    })
}

/// FreeBSD's 64-bit `struct msghdr` (`SceNetMsghdr`): `socklen_t` lengths and an `int`
/// iovec count, unlike Linux's `size_t`s.
#[repr(C)]
pub struct MsgHdr {
    name: *mut u8,
    namelen: u32,
    iov: *const libc::iovec,
    iovlen: i32,
    control: *mut u8,
    controllen: u32,
    flags: i32,
}

/// Checks a message header; ancillary data is not supported.
unsafe fn iovecs<'a>(msg: *const MsgHdr) -> Result<(&'a MsgHdr, &'a [libc::iovec]), i32> {
    let Some(m) = (unsafe { msg.as_ref() }) else {
        return Err(code::EFAULT);
    };
    if m.controllen != 0 {
        return Err(code::EOPNOTSUPP);
    }
    if m.iovlen < 0 || (m.iovlen > 0 && m.iov.is_null()) {
        return Err(code::EINVAL);
    }
    let iov = if m.iovlen == 0 {
        &[][..]
    } else {
        unsafe { std::slice::from_raw_parts(m.iov, m.iovlen as usize) }
    };
    Ok((m, iov))
}

/// `sceNetSendmsg`: the iovecs are gathered into one datagram/stream write (through
/// libkernel's `sendto`, so redirects apply); ancillary data is `EOPNOTSUPP`.
#[nid("sceNetSendmsg")]
pub unsafe extern "C-unwind" fn sce_net_sendmsg(s: i32, msg: *const MsgHdr, flags: i32) -> i32 {
    let (m, iov) = match unsafe { iovecs(msg) } {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let mut data = Vec::new();
    for v in iov {
        if v.iov_len > 0 {
            data.extend_from_slice(unsafe {
                std::slice::from_raw_parts(v.iov_base as *const u8, v.iov_len)
            });
        }
    }
    let (addr, len) = if m.name.is_null() {
        (std::ptr::null(), 0)
    } else {
        (m.name as *const u8, m.namelen)
    };
    blocking(s, || {
        kernel::sendto(s, data.as_ptr(), data.len(), msg_flags(flags), addr, len).map(|v| v as i64)
    })
}

/// `sceNetRecvmsg`: one receive scattered into the iovecs; the sender's address is
/// written to `msg_name`. Ancillary data is `EOPNOTSUPP`.
#[nid("sceNetRecvmsg")]
pub unsafe extern "C-unwind" fn sce_net_recvmsg(s: i32, msg: *mut MsgHdr, flags: i32) -> i32 {
    let (_, iov) = match unsafe { iovecs(msg) } {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    // One receive of at most 1 MiB (a short read, as a stream socket may give anyway).
    let total = iov
        .iter()
        .fold(0usize, |t, v| t.saturating_add(v.iov_len))
        .min(1 << 20);
    let mut data = vec![0u8; total];
    let m = unsafe { &mut *msg };
    let mut namelen = m.namelen;
    let (addr, len) = if m.name.is_null() {
        (std::ptr::null_mut(), std::ptr::null_mut())
    } else {
        (m.name, &raw mut namelen)
    };
    let n = blocking(s, || {
        kernel::recvfrom(s, data.as_mut_ptr(), total, msg_flags(flags), addr, len).map(|v| v as i64)
    });
    if n < 0 {
        return n;
    }
    let n = n as usize;
    let mut off = 0;
    for v in iov {
        let k = v.iov_len.min(n - off);
        if k > 0 {
            unsafe {
                std::ptr::copy_nonoverlapping(data.as_ptr().add(off), v.iov_base as *mut u8, k)
            };
        }
        off += k;
    }
    if !m.name.is_null() {
        m.namelen = namelen;
    }
    m.flags = 0;
    n as i32
}

/// `sceNetShutdown` (`SCE_NET_SHUT_RD` 0, `WR` 1, `RDWR` 2).
#[nid("sceNetShutdown")]
pub extern "C" fn sce_net_shutdown(s: i32, how: i32) -> i32 {
    sce(kernel::shutdown(s, how))
}

/// `sceNetGetsockname`.
#[nid("sceNetGetsockname")]
pub unsafe extern "C" fn sce_net_getsockname(s: i32, addr: *mut u8, len: *mut u32) -> i32 {
    sce(kernel::getsockname(s, addr, len))
}

/// `sceNetGetpeername`.
#[nid("sceNetGetpeername")]
pub unsafe extern "C" fn sce_net_getpeername(s: i32, addr: *mut u8, len: *mut u32) -> i32 {
    sce(kernel::getpeername(s, addr, len))
}

/// Reads an `int` option value.
unsafe fn int_arg(val: *const u8, len: u32) -> Result<i32, i32> {
    if val.is_null() {
        return Err(code::EFAULT);
    }
    if len < 4 {
        return Err(code::EINVAL);
    }
    Ok(unsafe { (val as *const i32).read_unaligned() })
}

/// `sceNetSetsockopt`: `SO_NBIO` and the microsecond timeouts are SCE's own; the other
/// options have FreeBSD's numbers and go to libkernel.
#[nid("sceNetSetsockopt")]
pub unsafe extern "C" fn sce_net_setsockopt(
    s: i32,
    level: i32,
    opt: i32,
    val: *const u8,
    len: u32,
) -> i32 {
    if level != SOL_SOCKET {
        return sce(kernel::setsockopt(s, level, opt, val, len));
    }
    match opt {
        SO_NBIO => {
            let on = match unsafe { int_arg(val, len) } {
                Ok(v) => v != 0,
                Err(e) => return fail(e),
            };
            // Socket ids are host descriptors (libkernel's net layer).
            let fl = unsafe { libc::fcntl(s, libc::F_GETFL) };
            if fl < 0 {
                return errno::fail_host();
            }
            let fl = if on {
                fl | libc::O_NONBLOCK
            } else {
                fl & !libc::O_NONBLOCK
            };
            if unsafe { libc::fcntl(s, libc::F_SETFL, fl) } < 0 {
                return errno::fail_host();
            }
            0
        }
        SO_SNDTIMEO | SO_RCVTIMEO => {
            let us = match unsafe { int_arg(val, len) } {
                Ok(v) if v >= 0 => i64::from(v),
                Ok(_) => return fail(code::EINVAL),
                Err(e) => return fail(e),
            };
            let tv = libc::timeval {
                tv_sec: us / 1_000_000,
                tv_usec: us % 1_000_000,
            };
            sce(kernel::setsockopt(
                s,
                level,
                opt,
                (&raw const tv).cast(),
                16,
            ))
        }
        o if IGNORED.contains(&o) => 0,
        _ => sce(kernel::setsockopt(s, level, opt, val, len)),
    }
}

/// `sceNetGetsockopt` (the same SCE-specific options as [`sce_net_setsockopt`]).
#[nid("sceNetGetsockopt")]
pub unsafe extern "C" fn sce_net_getsockopt(
    s: i32,
    level: i32,
    opt: i32,
    val: *mut u8,
    len: *mut u32,
) -> i32 {
    if level != SOL_SOCKET || !matches!(opt, SO_NBIO | SO_SNDTIMEO | SO_RCVTIMEO) {
        return sce(kernel::getsockopt(s, level, opt, val, len));
    }
    if val.is_null() || len.is_null() {
        return fail(code::EFAULT);
    }
    if unsafe { *len } < 4 {
        return fail(code::EINVAL);
    }
    let v = if opt == SO_NBIO {
        let fl = unsafe { libc::fcntl(s, libc::F_GETFL) };
        if fl < 0 {
            return errno::fail_host();
        }
        i32::from(fl & libc::O_NONBLOCK != 0)
    } else {
        let mut tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        };
        let mut l = 16u32;
        if let Err(e) = kernel::getsockopt(s, level, opt, (&raw mut tv).cast(), &mut l) {
            return fail(e);
        }
        (tv.tv_sec * 1_000_000 + tv.tv_usec).min(i64::from(i32::MAX)) as i32
    };
    unsafe {
        (val as *mut i32).write_unaligned(v);
        *len = 4;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sce_only_flags_and_types_are_mapped() {
        assert_eq!(msg_flags(0x0010_0000 | 0x0040_0002 | 0x80), 0x82);
        assert_eq!(socket_type(6), 2);
        assert_eq!(socket_type(10), 1);
        assert_eq!(socket_type(1), 1);
        assert_eq!(std::mem::size_of::<MsgHdr>(), 48);
    }

    #[test]
    fn without_libkernel_calls_fail_with_enosys() {
        // This crate's unit tests do not load libkernel.prx: the SCE code says so.
        assert_eq!(
            sce_net_socket(std::ptr::null(), 2, 1, 0) as u32,
            0x8041_014E
        );
        assert_eq!(errno::get(), 78);
    }

    #[test]
    fn bad_option_arguments_are_rejected_before_any_call() {
        unsafe {
            assert_eq!(
                sce_net_setsockopt(0, SOL_SOCKET, SO_NBIO, std::ptr::null(), 4) as u32,
                0x8041_010E
            );
            let one = 1i32;
            assert_eq!(
                sce_net_setsockopt(0, SOL_SOCKET, SO_NBIO, (&raw const one).cast(), 2) as u32,
                0x8041_0116
            );
            assert_eq!(sce_net_sendmsg(0, std::ptr::null(), 0) as u32, 0x8041_010E);
        }
    }
}
