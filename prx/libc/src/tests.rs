//! The printf family checked against the host C library's snprintf, through the real
//! exported entry points (the assembly trampolines building a va_list), for many
//! format/value pairs. Where FreeBSD and glibc differ (`%p` of NULL), the expected
//! FreeBSD text is given instead.

use aps5_prx_macros::trampoline_str;

unsafe extern "C" {
    #[link_name = trampoline_str!("snprintf")]
    fn ours_snprintf(buf: *mut u8, n: usize, fmt: *const u8, ...) -> i32;
    #[link_name = trampoline_str!("sprintf")]
    fn ours_sprintf(buf: *mut u8, fmt: *const u8, ...) -> i32;
}

macro_rules! same {
    ($fmt:expr $(, $a:expr)*) => {{
        let f = concat!($fmt, "\0");
        let mut ours = [0xAAu8; 600];
        let mut host = [0xAAu8; 600];
        let r1 = unsafe { ours_snprintf(ours.as_mut_ptr(), 512, f.as_ptr() $(, $a)*) };
        let r2 = unsafe { libc::snprintf(host.as_mut_ptr().cast(), 512, f.as_ptr().cast() $(, $a)*) };
        let s1 = String::from_utf8_lossy(&ours[..ours.iter().position(|&b| b == 0).unwrap()]).into_owned();
        let s2 = String::from_utf8_lossy(&host[..host.iter().position(|&b| b == 0).unwrap()]).into_owned();
        assert_eq!((s1.as_str(), r1), (s2.as_str(), r2), "format {:?}", $fmt);
        1usize
    }};
}

#[test]
fn integers_match_host_snprintf() {
    let mut n = 0;
    for v in [0i32, 1, -1, 42, -42, 7, 1000, i32::MAX, i32::MIN] {
        n += same!(
            "%d|%i|%5d|%-5d|%05d|%+d|% d|%.3d|%.0d|%8.3d|%-+8.3d|%0-6d",
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v
        );
        n += same!(
            "%u|%x|%X|%o|%#x|%#X|%#o|%08x|%#08x|%.0x|%#.0o|%-#10x|",
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v
        );
        n += same!("%hhd|%hd|%hhu|%hu|%hhx|%hx", v, v, v, v, v, v);
    }
    for v in [0i64, -1, 1 << 40, i64::MAX, i64::MIN, -9_000_000_000] {
        n += same!(
            "%ld|%lld|%li|%lu|%llx|%lX|%lo|%jd|%zd|%td|%qd",
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v
        );
        n += same!("%20ld|%-20lld|%+.15ld|%#lx|%025lo", v, v, v, v, v);
    }
    n += same!("%zu %zx", 123usize, usize::MAX);
    assert!(n > 30);
}

#[test]
fn strings_chars_pointers_match_host_snprintf() {
    let s = c"string".as_ptr();
    same!(
        "[%s][%10s][%-10s][%.3s][%10.2s][%-10.4s|][%.0s]",
        s,
        s,
        s,
        s,
        s,
        s,
        s
    );
    same!("[%c][%3c][%-3c][%c%c]", 65, 66, 67, 0x20, 0x7a);
    same!("%%|%5%|x%%y");
    same!("[%s]", c"".as_ptr());
    let p = 0x1234_5678usize as *const u8;
    same!("%p|%20p|%-20p|", p, p, p);
    // glibc prints "(null)" for a NULL %s, as FreeBSD does.
    same!("[%s][%10s]", std::ptr::null::<u8>(), std::ptr::null::<u8>());
    // With a precision FreeBSD cuts "(null)" like any string (glibc prints nothing).
    let mut b = [0u8; 64];
    let r = unsafe {
        ours_snprintf(
            b.as_mut_ptr(),
            64,
            c"[%.3s]".as_ptr().cast(),
            std::ptr::null::<u8>(),
        )
    };
    assert_eq!((&b[..r as usize], r), (&b"[(nu]"[..], 5));
    // FreeBSD prints NULL pointers as 0x0 (glibc: "(nil)").
    let mut b = [0u8; 64];
    let r = unsafe {
        ours_snprintf(
            b.as_mut_ptr(),
            64,
            c"[%p]".as_ptr().cast(),
            std::ptr::null::<u8>(),
        )
    };
    assert_eq!((&b[..r as usize], r), (&b"[0x0]"[..], 5));
}

#[test]
fn floats_match_host_snprintf() {
    for v in [
        0.0f64,
        -0.0,
        1.0,
        -1.5,
        std::f64::consts::PI,
        std::f64::consts::E,
        12345.678,
        0.000123,
        1e20,
        1e-300,
        6.02e23,
        f64::MAX,
        f64::MIN_POSITIVE,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        0.5,
        2.5,
        1.0 / 3.0,
    ] {
        same!(
            "%f|%.2f|%10.3f|%-10.1f|%+f|% f|%010.2f|%#.0f|%.0f",
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v
        );
        same!("%e|%E|%.3e|%12.4E|%+.0e|%#.0e", v, v, v, v, v, v);
        same!("%g|%G|%.3g|%10g|%#g|%-12.8g|%.0g", v, v, v, v, v, v, v);
        same!("%a|%A|%.3a|%20a", v, v, v, v);
        same!("%F", v);
    }
}

/// `%f` is formatted without the host (see `printf::fixed`): its digits must stay the
/// host's on values of every magnitude, halfway cases and every precision up to 12.
#[test]
fn fixed_point_matches_host_on_random_values() {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut n = 0;
    for i in 0..40_000u64 {
        let r = next();
        let v = match i % 4 {
            0 => f64::from_bits(r),
            // Multiples of 1/8 and 1/1024: exact ties at low precisions.
            1 => (r % 1_000_000) as f64 / 8.0 - 60_000.0,
            2 => (r % 100_000_000) as f64 / 1024.0,
            _ => (r >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi((r % 40) as i32 - 20),
        };
        n += same!(
            "%f|%.0f|%.1f|%.2f|%.3f|%.5f|%.12f|%+012.3f|%-15.4f|% .2f",
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v,
            v
        );
    }
    assert_eq!(n, 40_000);
}

#[test]
fn star_width_precision_and_many_arguments_match() {
    same!(
        "[%*d][%-*d][%*d][%.*f][%.*s][%*.*f]",
        6,
        7,
        6,
        7,
        -6,
        7,
        3,
        1.0 / 3.0,
        2,
        c"abcdef".as_ptr(),
        10,
        2,
        std::f64::consts::PI
    );
    // More than 6 integer and 8 floating-point arguments: the rest come from the stack.
    same!(
        "%d %d %d %d %d %d %d %d %d %d %f %f %f %f %f %f %f %f %f %f %ld %s",
        1,
        2,
        3,
        4,
        5,
        6,
        7,
        8,
        9,
        10,
        1.5,
        2.5,
        3.5,
        4.5,
        5.5,
        6.5,
        7.5,
        8.5,
        9.5,
        10.5,
        -77i64,
        c"end".as_ptr()
    );
    same!(
        "%f %d %f %d %f %d %f %d %f %d %f %d %f %d %f %d %f %d",
        0.1,
        1,
        0.2,
        2,
        0.3,
        3,
        0.4,
        4,
        0.5,
        5,
        0.6,
        6,
        0.7,
        7,
        0.8,
        8,
        0.9,
        9
    );
}

#[test]
fn truncation_and_return_values_match() {
    for n in [0usize, 1, 2, 5, 8, 9, 20] {
        let mut ours = [0x55u8; 32];
        let mut host = [0x55u8; 32];
        let f = c"%s-%05d".as_ptr();
        let a = c"abcdefgh".as_ptr();
        let r1 = unsafe { ours_snprintf(ours.as_mut_ptr(), n, f.cast(), a, 42) };
        let r2 = unsafe { libc::snprintf(host.as_mut_ptr().cast(), n, f, a, 42) };
        assert_eq!(r1, r2);
        assert_eq!(ours, host, "n={n}");
    }
    let mut b = [0u8; 32];
    let r = unsafe {
        ours_sprintf(
            b.as_mut_ptr(),
            c"%s-%d".as_ptr().cast(),
            c"abc".as_ptr(),
            123,
        )
    };
    assert_eq!((&b[..8], r), (&b"abc-123\0"[..], 7));
}

#[test]
fn percent_n_stores_the_count() {
    let mut b = [0u8; 32];
    let mut at: i32 = -1;
    let mut at_h: i16 = -1;
    let r = unsafe {
        ours_snprintf(
            b.as_mut_ptr(),
            32,
            c"abc%n%d%hn!".as_ptr().cast(),
            &mut at as *mut i32,
            12345,
            &mut at_h as *mut i16,
        )
    };
    assert_eq!((r, at, at_h), (9, 3, 8));
}

#[test]
fn long_double_conversion() {
    // 1.5 as x87 extended: mantissa 0xC000_0000_0000_0000, exponent 0x3FFF.
    let mut b = [0u8; 10];
    b[..8].copy_from_slice(&0xC000_0000_0000_0000u64.to_le_bytes());
    b[8..].copy_from_slice(&0x3FFFu16.to_le_bytes());
    assert_eq!(crate::va::f80_to_f64(b), 1.5);
    b[8..].copy_from_slice(&0xBFFFu16.to_le_bytes());
    assert_eq!(crate::va::f80_to_f64(b), -1.5);
}
