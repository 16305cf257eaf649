//! `libSceNetCtl`: the network is reported as connected (`SCE_NET_CTL_STATE_IPOBTAINED`),
//! wired, with the host's first non-loopback IPv4 address (127.0.0.1 when it has none).

use aps5_prx_macros::nid;

/// `SCE_NET_CTL_ERROR_INVALID_CODE`.
const INVALID_CODE: i32 = 0x8041_2104_u32 as i32;
/// `SCE_NET_CTL_ERROR_INVALID_ADDR`.
const INVALID_ADDR: i32 = 0x8041_2107_u32 as i32;
/// `SCE_NET_CTL_STATE_IPOBTAINED`.
const STATE_IPOBTAINED: i32 = 3;

/// `sceNetCtlInit`.
#[nid("sceNetCtlInit")]
pub extern "C" fn sce_net_ctl_init() -> i32 {
    0
}

/// `sceNetCtlTerm`.
#[nid("sceNetCtlTerm")]
pub extern "C" fn sce_net_ctl_term() -> i32 {
    0
}

/// `sceNetCtlGetState(*state)`.
#[nid("sceNetCtlGetState")]
pub unsafe extern "C" fn sce_net_ctl_get_state(state: *mut i32) -> i32 {
    if state.is_null() {
        return INVALID_ADDR;
    }
    unsafe { *state = STATE_IPOBTAINED };
    0
}

/// `sceNetCtlRegisterCallback(func, arg, *cid)`: the state never changes, so the
/// callback is never called.
#[nid("sceNetCtlRegisterCallback")]
pub unsafe extern "C" fn sce_net_ctl_register_callback(
    _f: usize,
    _arg: usize,
    cid: *mut i32,
) -> i32 {
    if cid.is_null() {
        return INVALID_ADDR;
    }
    unsafe { *cid = 0 };
    0
}

/// `sceNetCtlUnregisterCallback`.
#[nid("sceNetCtlUnregisterCallback")]
pub extern "C" fn sce_net_ctl_unregister_callback(_cid: i32) -> i32 {
    0
}

/// `sceNetCtlCheckCallback`.
#[nid("sceNetCtlCheckCallback")]
pub extern "C" fn sce_net_ctl_check_callback() -> i32 {
    0
}

/// The host's first non-loopback, up IPv4 interface: (address, netmask).
fn host_ipv4() -> ([u8; 4], [u8; 4]) {
    let mut out = ([127, 0, 0, 1], [255, 0, 0, 0]);
    let mut list = std::ptr::null_mut();
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return out;
    }
    let mut p = list;
    while let Some(ifa) = unsafe { p.as_ref() } {
        p = ifa.ifa_next;
        let flags = ifa.ifa_flags;
        if flags & libc::IFF_LOOPBACK as u32 != 0
            || flags & libc::IFF_UP as u32 == 0
            || ifa.ifa_addr.is_null()
            || i32::from(unsafe { (*ifa.ifa_addr).sa_family }) != libc::AF_INET
        {
            continue;
        }
        // SAFETY: AF_INET entries hold sockaddr_ins.
        let a = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
        out.0 = a.sin_addr.s_addr.to_ne_bytes();
        if let Some(m) = unsafe { (ifa.ifa_netmask as *const libc::sockaddr_in).as_ref() } {
            out.1 = m.sin_addr.s_addr.to_ne_bytes();
        }
        break;
    }
    unsafe { libc::freeifaddrs(list) };
    out
}

/// The default gateway from `/proc/net/route` (0.0.0.0 if none).
fn default_route() -> [u8; 4] {
    let text = std::fs::read_to_string("/proc/net/route").unwrap_or_default();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        // The file prints the address as a host-order (little-endian) word.
        if f.len() > 2
            && f[1] == "00000000"
            && let Ok(g) = u32::from_str_radix(f[2], 16)
        {
            return g.to_le_bytes();
        }
    }
    [0; 4]
}

/// The `n`th `nameserver` of `/etc/resolv.conf` (IPv4 only).
fn dns(n: usize) -> String {
    std::fs::read_to_string("/etc/resolv.conf")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("nameserver"))
        .map(str::trim)
        .filter(|a| a.parse::<std::net::Ipv4Addr>().is_ok())
        .nth(n)
        .unwrap_or("0.0.0.0")
        .to_string()
}

fn dotted(a: [u8; 4]) -> String {
    std::net::Ipv4Addr::from(a).to_string()
}

/// What `sceNetCtlGetInfo(code)` writes at the start of `SceNetCtlInfo` (a union).
enum Info {
    U32(u32),
    U16(u16),
    Bytes(Vec<u8>),
    /// A string in a field of that many bytes (NUL-terminated, truncated to fit).
    Text(String, usize),
}

fn info(code: i32) -> Option<Info> {
    Some(match code {
        1 => Info::U32(0),                                     // DEVICE: wired
        2 => Info::Bytes(crate::misc::mac_address().to_vec()), // ETHER_ADDR
        3 => Info::U32(1500),                                  // MTU
        4 => Info::U32(1),                                     // LINK: connected
        11 => Info::U32(0),                                    // IP_CONFIG: DHCP
        12 => {
            // DHCP_HOSTNAME
            let mut b = [0u8; 256];
            unsafe { libc::gethostname(b.as_mut_ptr().cast(), b.len() - 1) };
            let end = b.iter().position(|&c| c == 0).unwrap_or(0);
            Info::Text(String::from_utf8_lossy(&b[..end]).into_owned(), 256)
        }
        13 => Info::Text(String::new(), 128), // PPPOE_AUTH_NAME
        14 => Info::Text(dotted(host_ipv4().0), 16), // IP_ADDRESS
        15 => Info::Text(dotted(host_ipv4().1), 16), // NETMASK
        16 => Info::Text(dotted(default_route()), 16), // DEFAULT_ROUTE
        17 => Info::Text(dns(0), 16),         // PRIMARY_DNS
        18 => Info::Text(dns(1), 16),         // SECONDARY_DNS
        19 => Info::U32(0),                   // HTTP_PROXY_CONFIG: off
        20 => Info::Text(String::new(), 256), // HTTP_PROXY_SERVER
        21 => Info::U16(0),                   // HTTP_PROXY_PORT
        _ => return None,
    })
}

/// `sceNetCtlGetInfo(code, *info)`. Wi-Fi codes (BSSID, SSID, security, signal,
/// channel: 5-10) are `SCE_NET_CTL_ERROR_INVALID_CODE` on this wired connection.
#[nid("sceNetCtlGetInfo")]
pub unsafe extern "C" fn sce_net_ctl_get_info(code: i32, out: *mut u8) -> i32 {
    if out.is_null() {
        return INVALID_ADDR;
    }
    let Some(v) = info(code) else {
        return INVALID_CODE;
    };
    let bytes = match v {
        Info::U32(x) => x.to_ne_bytes().to_vec(),
        Info::U16(x) => x.to_ne_bytes().to_vec(),
        Info::Bytes(b) => b,
        Info::Text(s, field) => {
            let mut b = s.into_bytes();
            b.truncate(field - 1);
            b.push(0);
            b
        }
    };
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out, bytes.len()) };
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_codes() {
        let mut buf = [0xAAu8; 512];
        assert_eq!(unsafe { sce_net_ctl_get_info(14, buf.as_mut_ptr()) }, 0);
        let end = buf.iter().position(|&c| c == 0).unwrap();
        let text = std::str::from_utf8(&buf[..end]).unwrap();
        assert!(text.parse::<std::net::Ipv4Addr>().is_ok(), "{text}");
        assert_eq!(unsafe { sce_net_ctl_get_info(3, buf.as_mut_ptr()) }, 0);
        assert_eq!(u32::from_ne_bytes(buf[..4].try_into().unwrap()), 1500);
        assert_eq!(
            unsafe { sce_net_ctl_get_info(6, buf.as_mut_ptr()) },
            INVALID_CODE
        );
        assert_eq!(
            unsafe { sce_net_ctl_get_info(99, buf.as_mut_ptr()) },
            INVALID_CODE
        );
        assert_eq!(
            unsafe { sce_net_ctl_get_info(14, std::ptr::null_mut()) },
            INVALID_ADDR
        );
        let mut st = 0;
        assert_eq!(unsafe { sce_net_ctl_get_state(&mut st) }, 0);
        assert_eq!(st, 3);
    }
}
