//! BSD sockets with FreeBSD's ABI on host sockets. FreeBSD's `sockaddr` starts with a
//! length byte and a one-byte family (Linux: a two-byte family), AF_INET6 is 28 (Linux 10),
//! and socket-option and message-flag numbers differ; everything is translated here.
//! Socket descriptors are host descriptors.

use aps5_prx_macros::nid;

use crate::errno;

const BSD_AF_INET6: u8 = 28;

fn host_family(f: i32) -> i32 {
    match f {
        28 => libc::AF_INET6,
        f => f, // AF_UNSPEC 0, AF_UNIX 1, AF_INET 2 agree
    }
}

fn guest_family(f: i32) -> u8 {
    if f == libc::AF_INET6 {
        BSD_AF_INET6
    } else {
        f as u8
    }
}

/// Copies a guest sockaddr into host layout.
unsafe fn to_host(addr: *const u8, len: u32) -> Result<(libc::sockaddr_storage, u32), i32> {
    let mut out: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::sockaddr_storage>();
    if addr.is_null() || len < 2 || len as usize > size {
        return Err(22);
    }
    let bytes = unsafe { std::slice::from_raw_parts(addr, len as usize) };
    let dst = unsafe { std::slice::from_raw_parts_mut((&raw mut out).cast::<u8>(), size) };
    dst[..len as usize].copy_from_slice(bytes);
    let fam = host_family(i32::from(bytes[1])) as u16;
    dst[..2].copy_from_slice(&fam.to_ne_bytes());
    Ok((out, len))
}

/// Writes a host sockaddr back in guest layout (truncated to the guest's buffer).
unsafe fn to_guest(host: &libc::sockaddr_storage, host_len: u32, addr: *mut u8, len: *mut u32) {
    if addr.is_null() || len.is_null() {
        return;
    }
    let src = unsafe {
        std::slice::from_raw_parts(
            (host as *const libc::sockaddr_storage).cast::<u8>(),
            host_len as usize,
        )
    };
    let mut tmp = src.to_vec();
    if tmp.len() >= 2 {
        let fam = i32::from(u16::from_ne_bytes([tmp[0], tmp[1]]));
        tmp[0] = host_len.min(255) as u8;
        tmp[1] = guest_family(fam);
    }
    let cap = unsafe { *len } as usize;
    let n = cap.min(tmp.len());
    unsafe {
        std::ptr::copy_nonoverlapping(tmp.as_ptr(), addr, n);
        *len = host_len;
    }
}

fn fail() -> i32 {
    errno::set_from_host();
    -1
}

fn host_msg_flags(f: i32) -> i32 {
    let mut h = f & 0x7; // MSG_OOB, MSG_PEEK, MSG_DONTROUTE
    for (bsd, linux) in [
        (0x8, libc::MSG_EOR),
        (0x10, libc::MSG_TRUNC),
        (0x20, libc::MSG_CTRUNC),
        (0x40, libc::MSG_WAITALL),
        (0x80, libc::MSG_DONTWAIT),
        (0x20000, libc::MSG_NOSIGNAL),
    ] {
        if f & bsd != 0 {
            h |= linux;
        }
    }
    // Never let a broken connection kill the process: FreeBSD programs use SO_NOSIGPIPE.
    h | libc::MSG_NOSIGNAL
}

/// `socket(domain, type, protocol)`.
#[nid("socket")]
pub extern "C" fn socket(domain: i32, ty: i32, proto: i32) -> i32 {
    let mut t = ty & 0xFFFF;
    if ty & 0x1000_0000 != 0 {
        t |= libc::SOCK_CLOEXEC;
    }
    if ty & 0x2000_0000 != 0 {
        t |= libc::SOCK_NONBLOCK;
    }
    let fd = unsafe { libc::socket(host_family(domain), t, proto) };
    if fd < 0 { fail() } else { fd }
}

/// `APS5_NET_REDIRECT="HOST:PORT=HOST:PORT,..."`: destinations the game connects (or sends)
/// to, replaced by others, so that a port can talk to a local server (and tests to a loopback
/// one) without changing the game. Parsed once.
fn redirects() -> &'static [(std::net::SocketAddr, std::net::SocketAddr)] {
    static R: std::sync::OnceLock<Vec<(std::net::SocketAddr, std::net::SocketAddr)>> =
        std::sync::OnceLock::new();
    R.get_or_init(|| {
        let spec = std::env::var("APS5_NET_REDIRECT").unwrap_or_default();
        let mut out = Vec::new();
        for rule in spec.split(',').filter(|r| !r.trim().is_empty()) {
            match rule
                .split_once('=')
                .map(|(a, b)| (a.trim().parse(), b.trim().parse()))
            {
                Some((Ok(from), Ok(to))) => out.push((from, to)),
                _ => eprintln!(
                    "aps5: APS5_NET_REDIRECT: ignoring `{rule}` (expected HOST:PORT=HOST:PORT)"
                ),
            }
        }
        out
    })
}

/// Applies [`redirects`] to a host-layout address.
fn redirect(addr: &mut libc::sockaddr_storage, len: &mut u32) {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
    let rules = redirects();
    if rules.is_empty() {
        return;
    }
    let current = match i32::from(addr.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a =
                unsafe { &*(addr as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            SocketAddr::new(
                IpAddr::V4(Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr))),
                u16::from_be(a.sin_port),
            )
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a =
                unsafe { &*(addr as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            SocketAddr::new(
                IpAddr::V6(Ipv6Addr::from(a.sin6_addr.s6_addr)),
                u16::from_be(a.sin6_port),
            )
        }
        _ => return,
    };
    let Some(&(_, to)) = rules.iter().find(|(from, _)| *from == current) else {
        return;
    };
    // SAFETY: an all-zero sockaddr_storage is valid; each arm writes the matching layout.
    *addr = unsafe { std::mem::zeroed() };
    match to {
        SocketAddr::V4(v4) => {
            let a =
                unsafe { &mut *(addr as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            a.sin_family = libc::AF_INET as u16;
            a.sin_port = v4.port().to_be();
            a.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
            *len = std::mem::size_of::<libc::sockaddr_in>() as u32;
        }
        SocketAddr::V6(v6) => {
            let a =
                unsafe { &mut *(addr as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            a.sin6_family = libc::AF_INET6 as u16;
            a.sin6_port = v6.port().to_be();
            a.sin6_addr.s6_addr = v6.ip().octets();
            *len = std::mem::size_of::<libc::sockaddr_in6>() as u32;
        }
    }
}

/// `connect` (a cancellation point).
#[nid("connect")]
pub unsafe extern "C-unwind" fn connect(fd: i32, addr: *const u8, len: u32) -> i32 {
    match unsafe { to_host(addr, len) } {
        Ok((mut a, mut l)) => {
            redirect(&mut a, &mut l);
            if unsafe { libc::connect(fd, (&raw const a).cast(), l) } == 0 {
                0
            } else {
                fail()
            }
        }
        Err(e) => {
            errno::set(e);
            -1
        }
    }
}

/// `bind`.
#[nid("bind")]
pub unsafe extern "C" fn bind(fd: i32, addr: *const u8, len: u32) -> i32 {
    match unsafe { to_host(addr, len) } {
        Ok((a, l)) => {
            if unsafe { libc::bind(fd, (&raw const a).cast(), l) } == 0 {
                0
            } else {
                fail()
            }
        }
        Err(e) => {
            errno::set(e);
            -1
        }
    }
}

/// `listen`.
#[nid("listen")]
pub extern "C" fn listen(fd: i32, backlog: i32) -> i32 {
    if unsafe { libc::listen(fd, backlog) } == 0 {
        0
    } else {
        fail()
    }
}

/// `accept`.
#[nid("accept")]
pub unsafe extern "C-unwind" fn accept(fd: i32, addr: *mut u8, len: *mut u32) -> i32 {
    let mut a: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut l = std::mem::size_of::<libc::sockaddr_storage>() as u32;
    let r = unsafe { libc::accept(fd, (&raw mut a).cast(), &mut l) };
    if r < 0 {
        return fail();
    }
    unsafe { to_guest(&a, l, addr, len) };
    r
}

/// `getsockname`.
#[nid("getsockname")]
pub unsafe extern "C" fn getsockname(fd: i32, addr: *mut u8, len: *mut u32) -> i32 {
    let mut a: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut l = std::mem::size_of::<libc::sockaddr_storage>() as u32;
    if unsafe { libc::getsockname(fd, (&raw mut a).cast(), &mut l) } != 0 {
        return fail();
    }
    unsafe { to_guest(&a, l, addr, len) };
    0
}

/// `getpeername`.
#[nid("getpeername")]
pub unsafe extern "C" fn getpeername(fd: i32, addr: *mut u8, len: *mut u32) -> i32 {
    let mut a: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut l = std::mem::size_of::<libc::sockaddr_storage>() as u32;
    if unsafe { libc::getpeername(fd, (&raw mut a).cast(), &mut l) } != 0 {
        return fail();
    }
    unsafe { to_guest(&a, l, addr, len) };
    0
}

/// `send`.
#[nid("send")]
pub unsafe extern "C-unwind" fn send(fd: i32, buf: *const u8, n: usize, flags: i32) -> isize {
    let r = unsafe { libc::send(fd, buf.cast(), n, host_msg_flags(flags)) };
    if r < 0 { fail() as isize } else { r }
}

/// `recv`.
#[nid("recv")]
pub unsafe extern "C-unwind" fn recv(fd: i32, buf: *mut u8, n: usize, flags: i32) -> isize {
    let r = unsafe {
        libc::recv(
            fd,
            buf.cast(),
            n,
            host_msg_flags(flags) & !libc::MSG_NOSIGNAL,
        )
    };
    if r < 0 { fail() as isize } else { r }
}

/// `sendto`.
#[nid("sendto")]
pub unsafe extern "C-unwind" fn sendto(
    fd: i32,
    buf: *const u8,
    n: usize,
    flags: i32,
    addr: *const u8,
    len: u32,
) -> isize {
    let r = if addr.is_null() {
        unsafe {
            libc::sendto(
                fd,
                buf.cast(),
                n,
                host_msg_flags(flags),
                std::ptr::null(),
                0,
            )
        }
    } else {
        match unsafe { to_host(addr, len) } {
            Ok((mut a, mut l)) => unsafe {
                redirect(&mut a, &mut l);
                libc::sendto(
                    fd,
                    buf.cast(),
                    n,
                    host_msg_flags(flags),
                    (&raw const a).cast(),
                    l,
                )
            },
            Err(e) => {
                errno::set(e);
                return -1;
            }
        }
    };
    if r < 0 { fail() as isize } else { r }
}

/// `recvfrom`.
#[nid("recvfrom")]
pub unsafe extern "C-unwind" fn recvfrom(
    fd: i32,
    buf: *mut u8,
    n: usize,
    flags: i32,
    addr: *mut u8,
    len: *mut u32,
) -> isize {
    let mut a: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut l = std::mem::size_of::<libc::sockaddr_storage>() as u32;
    let r = unsafe {
        libc::recvfrom(
            fd,
            buf.cast(),
            n,
            host_msg_flags(flags) & !libc::MSG_NOSIGNAL,
            (&raw mut a).cast(),
            &mut l,
        )
    };
    if r < 0 {
        return fail() as isize;
    }
    unsafe { to_guest(&a, l, addr, len) };
    r
}

/// `shutdown` (SHUT_RD/WR/RDWR agree).
#[nid("shutdown")]
pub extern "C" fn shutdown(fd: i32, how: i32) -> i32 {
    if unsafe { libc::shutdown(fd, how) } == 0 {
        0
    } else {
        fail()
    }
}

/// FreeBSD (level, option) -> Linux.
fn host_sockopt(level: i32, opt: i32) -> Option<(i32, i32)> {
    if level != 0xFFFF {
        // IPPROTO_IP/TCP/UDP numbers and TCP_NODELAY agree.
        return Some((level, opt));
    }
    let o = match opt {
        0x0004 => libc::SO_REUSEADDR,
        0x0008 => libc::SO_KEEPALIVE,
        0x0020 => libc::SO_BROADCAST,
        0x0080 => libc::SO_LINGER,
        0x0200 => libc::SO_REUSEPORT,
        0x1001 => libc::SO_SNDBUF,
        0x1002 => libc::SO_RCVBUF,
        0x1005 => libc::SO_SNDTIMEO,
        0x1006 => libc::SO_RCVTIMEO,
        0x1007 => libc::SO_ERROR,
        0x1008 => libc::SO_TYPE,
        _ => return None,
    };
    Some((libc::SOL_SOCKET, o))
}

/// `setsockopt`. `SO_NOSIGPIPE` (0x800) is accepted: sends never raise SIGPIPE here.
#[nid("setsockopt")]
pub unsafe extern "C" fn setsockopt(
    fd: i32,
    level: i32,
    opt: i32,
    val: *const u8,
    len: u32,
) -> i32 {
    if level == 0xFFFF && opt == 0x0800 {
        return 0;
    }
    let Some((l, o)) = host_sockopt(level, opt) else {
        errno::set(42); // ENOPROTOOPT
        return -1;
    };
    if unsafe { libc::setsockopt(fd, l, o, val.cast(), len) } == 0 {
        0
    } else {
        fail()
    }
}

/// `getsockopt` (SO_ERROR values are translated to FreeBSD errno).
#[nid("getsockopt")]
pub unsafe extern "C" fn getsockopt(
    fd: i32,
    level: i32,
    opt: i32,
    val: *mut u8,
    len: *mut u32,
) -> i32 {
    let Some((l, o)) = host_sockopt(level, opt) else {
        errno::set(42);
        return -1;
    };
    if unsafe { libc::getsockopt(fd, l, o, val.cast(), len) } != 0 {
        return fail();
    }
    if l == libc::SOL_SOCKET && o == libc::SO_ERROR && !val.is_null() {
        unsafe { *(val as *mut i32) = errno::from_host(*(val as *const i32)) };
    }
    0
}

/// `inet_pton` (AF_INET6 is 28 on FreeBSD).
#[nid("inet_pton")]
pub unsafe extern "C" fn inet_pton(af: i32, src: *const libc::c_char, dst: *mut u8) -> i32 {
    unsafe extern "C" {
        #[link_name = "inet_pton"]
        fn host_inet_pton(af: i32, src: *const libc::c_char, dst: *mut u8) -> i32;
    }
    let r = unsafe { host_inet_pton(host_family(af), src, dst) };
    if r < 0 {
        errno::set(47); // EAFNOSUPPORT
    }
    r
}

/// `__inet_pton` (the name libc's header macro resolves to).
#[nid("__inet_pton")]
pub unsafe extern "C" fn inet_pton_(af: i32, src: *const libc::c_char, dst: *mut u8) -> i32 {
    unsafe { inet_pton(af, src, dst) }
}

/// `inet_ntop`.
#[nid("inet_ntop")]
pub unsafe extern "C" fn inet_ntop(
    af: i32,
    src: *const u8,
    dst: *mut libc::c_char,
    size: u32,
) -> *const libc::c_char {
    unsafe extern "C" {
        #[link_name = "inet_ntop"]
        fn host_inet_ntop(
            af: i32,
            src: *const u8,
            dst: *mut libc::c_char,
            size: u32,
        ) -> *const libc::c_char;
    }
    let r = unsafe { host_inet_ntop(host_family(af), src, dst, size) };
    if r.is_null() {
        errno::set_from_host();
    }
    r
}

/// `__inet_ntop`.
#[nid("__inet_ntop")]
pub unsafe extern "C" fn inet_ntop_(
    af: i32,
    src: *const u8,
    dst: *mut libc::c_char,
    size: u32,
) -> *const libc::c_char {
    unsafe { inet_ntop(af, src, dst, size) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FreeBSD `sockaddr_in` for 127.0.0.1:port.
    fn bsd_loopback(port: u16) -> [u8; 16] {
        let mut a = [0u8; 16];
        a[0] = 16;
        a[1] = 2;
        a[2..4].copy_from_slice(&port.to_be_bytes());
        a[4..8].copy_from_slice(&[127, 0, 0, 1]);
        a
    }

    #[test]
    fn tcp_round_trip_with_freebsd_sockaddrs() {
        let srv = socket(2, 1, 0);
        assert!(srv >= 0);
        let one: i32 = 1;
        unsafe {
            assert_eq!(
                setsockopt(srv, 0xFFFF, 0x0004, (&raw const one).cast(), 4),
                0
            );
            assert_eq!(bind(srv, bsd_loopback(0).as_ptr(), 16), 0);
        }
        assert_eq!(listen(srv, 1), 0);
        let mut name = [0u8; 16];
        let mut len = 16u32;
        unsafe { assert_eq!(getsockname(srv, name.as_mut_ptr(), &mut len), 0) };
        assert_eq!(
            (name[0], name[1], len),
            (16, 2, 16),
            "FreeBSD layout: length, family"
        );
        let port = u16::from_be_bytes([name[2], name[3]]);
        let cli = socket(2, 1, 0);
        unsafe { assert_eq!(connect(cli, bsd_loopback(port).as_ptr(), 16), 0) };
        let mut peer = [0u8; 16];
        let mut plen = 16u32;
        let conn = unsafe { accept(srv, peer.as_mut_ptr(), &mut plen) };
        assert!(conn >= 0);
        assert_eq!((peer[1], &peer[4..8]), (2, &[127u8, 0, 0, 1][..]));
        unsafe {
            assert_eq!(send(cli, b"ping".as_ptr(), 4, 0), 4);
            let mut buf = [0u8; 4];
            // MSG_WAITALL (FreeBSD 0x40, Linux 0x100): all four bytes.
            assert_eq!(recv(conn, buf.as_mut_ptr(), 4, 0x40), 4);
            assert_eq!(&buf, b"ping");
            libc::close(cli);
            libc::close(conn);
            libc::close(srv);
        }
    }

    #[test]
    fn inet_pton_uses_freebsd_af_inet6() {
        let mut v6 = [0u8; 16];
        assert_eq!(
            unsafe { inet_pton(28, c"::1".as_ptr(), v6.as_mut_ptr()) },
            1
        );
        assert_eq!(v6[15], 1);
        let mut v4 = [0u8; 4];
        assert_eq!(
            unsafe { inet_pton(2, c"192.168.0.10".as_ptr(), v4.as_mut_ptr()) },
            1
        );
        assert_eq!(v4, [192, 168, 0, 10]);
    }
}
