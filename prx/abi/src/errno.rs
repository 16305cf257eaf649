//! errno numbering: the guest sees FreeBSD's values (the PS4/PS5 kernel is FreeBSD's; SCE
//! error codes are `0x80020000 + errno`, SCE net codes `0x80410100 | errno`).

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

#[cfg(test)]
mod tests {
    use super::from_host;

    #[test]
    fn freebsd_numbers() {
        // FreeBSD's sys/errno.h.
        assert_eq!(from_host(libc::EPERM), 1);
        assert_eq!(from_host(libc::EAGAIN), 35);
        assert_eq!(from_host(libc::EDEADLK), 11);
        assert_eq!(from_host(libc::EINPROGRESS), 36);
        assert_eq!(from_host(libc::ECONNREFUSED), 61);
        assert_eq!(from_host(libc::ENOSYS), 78);
        assert_eq!(from_host(libc::EILSEQ), 86);
    }
}
