//! Start-up calls (`sceNetInit`, pools), byte order, address text and the MAC address.

use aps5_prx_macros::nid;
use std::collections::HashSet;
use std::sync::Mutex;

use crate::errno::{code, fail};
use crate::kernel;

/// `sceNetInit`: nothing to set up on the host.
#[nid("sceNetInit")]
pub extern "C" fn sce_net_init() -> i32 {
    0
}

/// `sceNetTerm`.
#[nid("sceNetTerm")]
pub extern "C" fn sce_net_term() -> i32 {
    0
}

/// Live pool ids (the pools themselves are not needed: memory comes from the host heap).
static POOLS: Mutex<(i32, Option<HashSet<i32>>)> = Mutex::new((1, None));

/// `sceNetPoolCreate(name, size, flags)`: a pool id.
#[nid("sceNetPoolCreate")]
pub extern "C" fn sce_net_pool_create(_name: *const libc::c_char, size: i32, _flags: i32) -> i32 {
    if size <= 0 {
        return fail(code::EINVAL);
    }
    let mut g = POOLS.lock().unwrap_or_else(|p| p.into_inner());
    let id = g.0;
    g.0 += 1;
    g.1.get_or_insert_with(HashSet::new).insert(id);
    id
}

/// `sceNetPoolDestroy`.
#[nid("sceNetPoolDestroy")]
pub extern "C" fn sce_net_pool_destroy(id: i32) -> i32 {
    let mut g = POOLS.lock().unwrap_or_else(|p| p.into_inner());
    if g.1.get_or_insert_with(HashSet::new).remove(&id) {
        0
    } else {
        fail(code::EBADF)
    }
}

/// `sceNetHtons`.
#[nid("sceNetHtons")]
pub extern "C" fn sce_net_htons(v: u16) -> u16 {
    v.to_be()
}

/// `sceNetHtonl`.
#[nid("sceNetHtonl")]
pub extern "C" fn sce_net_htonl(v: u32) -> u32 {
    v.to_be()
}

/// `sceNetNtohs`.
#[nid("sceNetNtohs")]
pub extern "C" fn sce_net_ntohs(v: u16) -> u16 {
    u16::from_be(v)
}

/// `sceNetNtohl`.
#[nid("sceNetNtohl")]
pub extern "C" fn sce_net_ntohl(v: u32) -> u32 {
    u32::from_be(v)
}

/// `sceNetHtonll`.
#[nid("sceNetHtonll")]
pub extern "C" fn sce_net_htonll(v: u64) -> u64 {
    v.to_be()
}

/// `sceNetNtohll`.
#[nid("sceNetNtohll")]
pub extern "C" fn sce_net_ntohll(v: u64) -> u64 {
    u64::from_be(v)
}

/// `sceNetInetPton(af, src, dst)`: 1, 0 for text that is not an address, or an SCE error
/// (an unknown family is `EAFNOSUPPORT`).
#[nid("sceNetInetPton")]
pub unsafe extern "C" fn sce_net_inet_pton(af: i32, src: *const libc::c_char, dst: *mut u8) -> i32 {
    if src.is_null() || dst.is_null() {
        return fail(code::EFAULT);
    }
    match kernel::inet_pton(af, src, dst) {
        Ok(r) => r,
        Err(e) => fail(e),
    }
}

/// `sceNetInetNtop(af, src, dst, size)`: `dst`, or null with `sce_net_errno` set.
#[nid("sceNetInetNtop")]
pub unsafe extern "C" fn sce_net_inet_ntop(
    af: i32,
    src: *const u8,
    dst: *mut libc::c_char,
    size: u32,
) -> *const libc::c_char {
    if src.is_null() || dst.is_null() {
        fail(code::EFAULT);
        return std::ptr::null();
    }
    let text = match af {
        2 => {
            let b = unsafe { std::slice::from_raw_parts(src, 4) };
            std::net::Ipv4Addr::new(b[0], b[1], b[2], b[3]).to_string()
        }
        28 => {
            let mut b = [0u8; 16];
            b.copy_from_slice(unsafe { std::slice::from_raw_parts(src, 16) });
            std::net::Ipv6Addr::from(b).to_string()
        }
        _ => {
            fail(code::EAFNOSUPPORT);
            return std::ptr::null();
        }
    };
    if text.len() >= size as usize {
        fail(code::ENOSPC);
        return std::ptr::null();
    }
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr().cast(), dst, text.len());
        *dst.add(text.len()) = 0;
    }
    dst
}

/// The first non-loopback interface's hardware address, or a fixed locally administered
/// one when the host has none.
pub fn mac_address() -> [u8; 6] {
    let mut out = [0x02, 0, 0, 0, 0, 1];
    let mut list = std::ptr::null_mut();
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return out;
    }
    let mut p = list;
    while let Some(ifa) = unsafe { p.as_ref() } {
        p = ifa.ifa_next;
        let loopback = ifa.ifa_flags & libc::IFF_LOOPBACK as u32 != 0;
        if loopback
            || ifa.ifa_addr.is_null()
            || i32::from(unsafe { (*ifa.ifa_addr).sa_family }) != libc::AF_PACKET
        {
            continue;
        }
        // SAFETY: AF_PACKET entries hold a sockaddr_ll.
        let ll = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_ll) };
        if ll.sll_halen == 6 && ll.sll_addr[..6].iter().any(|&b| b != 0) {
            out.copy_from_slice(&ll.sll_addr[..6]);
            break;
        }
    }
    unsafe { libc::freeifaddrs(list) };
    out
}

/// `sceNetGetMacAddress(addr, flags)`.
#[nid("sceNetGetMacAddress")]
pub unsafe extern "C" fn sce_net_get_mac_address(addr: *mut [u8; 6], _flags: i32) -> i32 {
    if addr.is_null() {
        return fail(code::EINVAL);
    }
    unsafe { *addr = mac_address() };
    0
}

/// `sceNetEtherNtostr(addr, str, len)`: `xx:xx:xx:xx:xx:xx` (lower case); `len` must hold
/// the 18 bytes with the terminator.
#[nid("sceNetEtherNtostr")]
pub unsafe extern "C" fn sce_net_ether_ntostr(
    addr: *const [u8; 6],
    out: *mut u8,
    len: usize,
) -> i32 {
    if addr.is_null() || out.is_null() {
        return fail(code::EINVAL);
    }
    if len < 18 {
        return fail(code::ENOSPC);
    }
    let a = unsafe { *addr };
    let text = format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}\0",
        a[0], a[1], a[2], a[3], a[4], a[5]
    );
    unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), out, 18) };
    0
}

/// `sceNetEtherStrton(str, addr)`: six hexadecimal bytes separated by colons.
#[nid("sceNetEtherStrton")]
pub unsafe extern "C" fn sce_net_ether_strton(
    text: *const libc::c_char,
    addr: *mut [u8; 6],
) -> i32 {
    if text.is_null() || addr.is_null() {
        return fail(code::EINVAL);
    }
    let s = unsafe { std::ffi::CStr::from_ptr(text) }.to_string_lossy();
    let parts: Vec<Option<u8>> = s
        .split(':')
        .map(|p| {
            (!p.is_empty() && p.len() <= 2)
                .then(|| u8::from_str_radix(p, 16).ok())
                .flatten()
        })
        .collect();
    if parts.len() != 6 || parts.iter().any(Option::is_none) {
        return fail(code::EINVAL);
    }
    let mut out = [0u8; 6];
    for (o, p) in out.iter_mut().zip(parts) {
        *o = p.unwrap_or(0);
    }
    unsafe { *addr = out };
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_order_and_text() {
        assert_eq!(sce_net_htons(0x1234).to_ne_bytes(), [0x12, 0x34]);
        assert_eq!(sce_net_ntohl(sce_net_htonl(0xdead_beef)), 0xdead_beef);
        let mut buf = [0 as libc::c_char; 16];
        let a = [192u8, 168, 0, 1];
        let r = unsafe { sce_net_inet_ntop(2, a.as_ptr(), buf.as_mut_ptr(), 16) };
        assert_eq!(
            unsafe { std::ffi::CStr::from_ptr(r) }.to_str().unwrap(),
            "192.168.0.1"
        );
        assert!(unsafe { sce_net_inet_ntop(2, a.as_ptr(), buf.as_mut_ptr(), 8) }.is_null());
        assert_eq!(crate::errno::get(), code::ENOSPC);
        assert!(unsafe { sce_net_inet_ntop(99, a.as_ptr(), buf.as_mut_ptr(), 16) }.is_null());
        assert_eq!(crate::errno::get(), code::EAFNOSUPPORT);
    }

    #[test]
    fn ether_addresses_round_trip_through_text() {
        let mac = [0x02u8, 0xab, 0, 0x10, 0xff, 0x7];
        let mut buf = [0u8; 18];
        assert_eq!(
            unsafe { sce_net_ether_ntostr(&mac, buf.as_mut_ptr(), 18) },
            0
        );
        assert_eq!(&buf[..17], b"02:ab:00:10:ff:07");
        assert_eq!(buf[17], 0);
        assert_eq!(
            unsafe { sce_net_ether_ntostr(&mac, buf.as_mut_ptr(), 17) } as u32,
            0x8041_011C
        );
        let mut back = [0u8; 6];
        assert_eq!(
            unsafe { sce_net_ether_strton(buf.as_ptr().cast(), &mut back) },
            0
        );
        assert_eq!(back, mac);
        for bad in [
            c"02:ab:00:10:ff",
            c"02:ab:00:10:ff:07:01",
            c"02:ab:00:10:ff:zz",
            c"02:ab::10:ff:07",
            c"002:ab:00:10:ff:07",
        ] {
            assert_eq!(
                unsafe { sce_net_ether_strton(bad.as_ptr(), &mut back) } as u32,
                0x8041_0116,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn pools_are_tracked() {
        let id = sce_net_pool_create(std::ptr::null(), 4096, 0);
        assert!(id > 0);
        assert_eq!(sce_net_pool_destroy(id), 0);
        assert_eq!(sce_net_pool_destroy(id) as u32, 0x8041_0109);
        assert_eq!(
            sce_net_pool_create(std::ptr::null(), 0, 0) as u32,
            0x8041_0116
        );
    }
}
