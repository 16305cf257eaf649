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
    #[link_name = trampoline_str!("sscanf")]
    fn ours_sscanf(s: *const u8, fmt: *const u8, ...) -> i32;
    #[link_name = trampoline_str!("fscanf")]
    fn ours_fscanf(f: *mut u8, fmt: *const u8, ...) -> i32;
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

/// A small deterministic generator (xorshift64) for the randomized comparisons.
pub(crate) struct Rng(pub u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub(crate) fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
}

/// What each of the 12 fixed arguments of the positional test is.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Int,
    Long,
    Double,
    Str,
    Char,
}

const POS_KINDS: [Kind; 12] = [
    Kind::Int,
    Kind::Double,
    Kind::Str,
    Kind::Long,
    Kind::Int,
    Kind::Double,
    Kind::Int,
    Kind::Long,
    Kind::Char,
    Kind::Double,
    Kind::Int,
    Kind::Str,
];

/// One random directive for argument `i` (1-based) of kind `k`; `*m$` widths and
/// precisions name one of the int arguments at or below `max`.
fn positional_directive(r: &mut Rng, i: usize, k: Kind, used: &mut Vec<usize>) -> String {
    let ints = [1usize, 5, 7, 11];
    let width = match r.below(4) {
        0 => r.below(14).to_string(),
        1 => {
            let m = *r.pick(&ints);
            used.push(m);
            format!("*{m}$")
        }
        _ => String::new(),
    };
    // Arguments 1 and 7 are negative: a left-adjusting width, where glibc (not FreeBSD)
    // still pads floats with zeros, on the right.
    let negative = width == "*1$" || width == "*7$";
    let mut d = format!("%{i}$");
    for f in ["-", "+", " ", "#", "0"] {
        // `#` is undefined for s/c; `0` pads them with zeros on FreeBSD, spaces on glibc.
        let skip =
            matches!(f, "#" | "0") && matches!(k, Kind::Str | Kind::Char) || f == "0" && negative;
        if r.below(5) == 0 && !skip {
            d.push_str(f);
        }
    }
    d.push_str(&width);
    if k != Kind::Char {
        match r.below(4) {
            0 => d.push_str(&format!(".{}", r.below(9))),
            1 => {
                let m = *r.pick(&ints);
                used.push(m);
                d.push_str(&format!(".*{m}$"));
            }
            _ => {}
        }
    }
    let conv = match k {
        Kind::Int => *r.pick(&["d", "i", "u", "x", "X", "o", "hd", "hhx", "hu"]),
        // No `q`: glibc reads `%n$q` arguments as 32-bit (FreeBSD: quad, as `ll`).
        Kind::Long => *r.pick(&["ld", "lli", "lu", "lx", "jd", "zu", "tX", "llo"]),
        Kind::Double => *r.pick(&["f", "e", "E", "g", "G", "a", "F"]),
        Kind::Str => "s",
        Kind::Char => "c",
    };
    d.push_str(conv);
    d
}

/// Positional formats (`%n$`, `*m$`, `.*m$`): 1500 random formats naming 12
/// arguments of mixed classes (ints, longs, doubles, strings; 9 in integer registers or on
/// the stack) in random order, every index up to the highest one named at least once (C
/// requires it), compared with the host snprintf.
#[test]
fn positional_arguments_match_host_snprintf() {
    let mut r = Rng(0x2545_F491_4F6C_DD1D);
    let (s1, s2) = (c"alpha".as_ptr(), c"positional".as_ptr());
    let mut matched = 0;
    let total = 1500;
    for _ in 0..total {
        let k = 1 + r.below(12) as usize;
        let mut used = Vec::new();
        let mut dirs = Vec::new();
        let mut order: Vec<usize> = (1..=k).collect();
        for j in (1..order.len()).rev() {
            order.swap(j, r.below(j as u64 + 1) as usize);
        }
        for &i in &order {
            used.push(i);
            dirs.push(positional_directive(&mut r, i, POS_KINDS[i - 1], &mut used));
        }
        // Some arguments twice.
        for _ in 0..r.below(3) {
            let i = 1 + r.below(k as u64) as usize;
            dirs.push(positional_directive(&mut r, i, POS_KINDS[i - 1], &mut used));
        }
        // Every index up to the highest one used by a `*m$` must be named too.
        let mut named = k;
        while let Some(&top) = used.iter().max().filter(|&&t| t > named) {
            for i in named + 1..=top {
                dirs.push(positional_directive(&mut r, i, POS_KINDS[i - 1], &mut used));
            }
            named = top;
        }
        let fmt = std::ffi::CString::new(dirs.join("|")).unwrap();
        let mut ours = [0xAAu8; 4096];
        let mut host = [0xAAu8; 4096];
        macro_rules! call {
            ($f:expr, $buf:expr) => {
                unsafe {
                    $f(
                        $buf.as_mut_ptr().cast(),
                        4000,
                        fmt.as_ptr().cast(),
                        -1234i32,
                        std::f64::consts::PI,
                        s1,
                        -9_000_000_000i64,
                        7i32,
                        -0.000_125f64,
                        -3i32,
                        u64::MAX,
                        0x41i32,
                        1e21f64,
                        2i32,
                        s2,
                    )
                }
            };
        }
        let r1 = call!(ours_snprintf, ours);
        let r2 = call!(libc::snprintf, host);
        let z1 = ours.iter().position(|&b| b == 0).unwrap();
        let z2 = host.iter().position(|&b| b == 0).unwrap();
        assert_eq!(
            (String::from_utf8_lossy(&ours[..z1]).trim(), r1),
            (String::from_utf8_lossy(&host[..z2]).trim(), r2),
            "format {fmt:?}"
        );
        matched += 1;
    }
    assert_eq!(matched, total);
}

/// FreeBSD's rules where C leaves the choice to the library: a directive without `n$` in a
/// positional format takes the argument after the previous conversion's, `*m$` does not
/// move that position, and unnamed arguments are skipped as ints.
#[test]
fn positional_freebsd_rules() {
    let check = |fmt: &std::ffi::CStr, want: &str, f: &dyn Fn(*mut u8, *const u8) -> i32| {
        let mut b = [0u8; 128];
        let n = f(b.as_mut_ptr(), fmt.as_ptr().cast());
        assert_eq!(
            (std::str::from_utf8(&b[..n as usize]).unwrap(), n as usize),
            (want, want.len()),
            "{fmt:?}"
        );
    };
    check(c"%2$d %d %1$d %d", "20 30 10 20", &|b, f| unsafe {
        ours_sprintf(b, f, 10, 20, 30)
    });
    check(c"%3$*1$d|%d", "   30|40", &|b, f| unsafe {
        ours_sprintf(b, f, 5, 20, 30, 40)
    });
    // Argument 2 is never named: read as an int, so the double after it still comes from
    // the first vector register.
    check(c"%3$.1f %1$s", "2.5 x", &|b, f| unsafe {
        ours_sprintf(b, f, c"x".as_ptr(), 7, 2.5f64)
    });
    // Index 0 and indices past NL_ARGMAX are not conversions: printed as they are.
    check(c"%0$d", "%0$d", &|b, f| unsafe { ours_sprintf(b, f, 1) });
    check(c"%5000$d", "%5000$d", &|b, f| unsafe {
        ours_sprintf(b, f, 1)
    });
}

/// One generated scanf conversion: its directive and an input text that fits it.
struct ScanItem {
    directive: String,
    token: String,
    /// Numbers: the separator after it must not continue the number.
    numeric: bool,
}

fn rand_digits(r: &mut Rng, alphabet: &[u8], max: u64) -> String {
    let n = 1 + r.below(max) as usize;
    (0..n).map(|_| *r.pick(alphabet) as char).collect()
}

fn scan_item(r: &mut Rng, suppress_ok: bool) -> ScanItem {
    const DEC: &[u8] = b"0123456789";
    const OCT: &[u8] = b"01234567";
    const HEX: &[u8] = b"0123456789abcdefABCDEF";
    let star = if suppress_ok && r.below(6) == 0 {
        "*"
    } else {
        ""
    };
    let sign = |r: &mut Rng| *r.pick(&["", "", "-", "+"]);
    let kind = r.below(10);
    let (conv, token, numeric, prefixed) = match kind {
        0..=3 => {
            let conv = *r.pick(&["d", "i", "u", "o", "x", "X"]);
            let len = *r.pick(&["", "", "hh", "h", "l", "ll", "j", "z", "t", "q"]);
            let (body, prefixed) = match conv {
                "d" | "u" => {
                    let max = if r.below(8) == 0 { 30 } else { 8 };
                    (rand_digits(r, DEC, max), false)
                }
                "o" => (rand_digits(r, OCT, 12), false),
                "i" => match r.below(3) {
                    0 => (format!("0x{}", rand_digits(r, HEX, 10)), true),
                    1 => (format!("0{}", rand_digits(r, OCT, 8)), false),
                    _ => (rand_digits(r, DEC, 12), false),
                },
                _ => {
                    // Hex digits are never cut by a width either: the rest ("8EC") could be
                    // a dead end for a following float conversion.
                    if r.below(2) == 0 {
                        (format!("0x{}", rand_digits(r, HEX, 12)), true)
                    } else {
                        (rand_digits(r, HEX, 17), true)
                    }
                }
            };
            (
                format!("{len}{conv}"),
                format!("{}{body}", sign(r)),
                true,
                prefixed,
            )
        }
        4 => (
            "p".to_string(),
            format!("0x{}", rand_digits(r, HEX, 12)),
            true,
            true,
        ),
        5 | 6 => {
            let conv = *r.pick(&["f", "e", "g", "a", "E", "G", "F", "A"]);
            let len = *r.pick(&["", "l", "L"]);
            let body = match r.below(8) {
                0 => format!("{}.{}", rand_digits(r, DEC, 6), rand_digits(r, DEC, 8)),
                1 => format!(
                    "{}e{}{}",
                    rand_digits(r, DEC, 4),
                    *r.pick(&["", "+", "-"]),
                    rand_digits(r, DEC, 3)
                ),
                2 => format!(".{}E-{}", rand_digits(r, DEC, 5), rand_digits(r, DEC, 2)),
                3 => format!(
                    "0x{}.{}p{}",
                    rand_digits(r, HEX, 4),
                    rand_digits(r, HEX, 4),
                    r.below(60)
                ),
                // No "nan(chars)": glibc's scanf stops after "nan" (FreeBSD's reads it all;
                // checked by `scanf_freebsd_rules`).
                4 => r
                    .pick(&["inf", "INF", "infinity", "nan", "NaN", "Infinity"])
                    .to_string(),
                5 => format!("{}.", rand_digits(r, DEC, 4)),
                _ => rand_digits(r, DEC, 25),
            };
            (
                format!("{len}{conv}"),
                format!("{}{body}", sign(r)),
                true,
                true,
            )
        }
        7 => {
            let t: String = (0..1 + r.below(12))
                .map(|_| *r.pick(b"abcXYZ019_.@!-") as char)
                .collect();
            ("s".to_string(), t, false, false)
        }
        8 => {
            let n = 1 + r.below(5) as usize;
            let t: String = (0..n).map(|_| *r.pick(b"ab 1\t,-") as char).collect();
            (
                if n == 1 && r.below(2) == 0 {
                    "c".to_string()
                } else {
                    format!("{n}c")
                },
                t,
                false,
                true,
            )
        }
        _ => {
            let (set, alphabet): (&str, &[u8]) = *r.pick(&[
                ("[a-z]", &b"abcxyz"[..]),
                ("[^,]", &b"ab1 _x"[..]),
                ("[0-9a-f]", &b"0189abf"[..]),
                ("[]abc]", &b"]abc"[..]),
                ("[^ \n]", &b"xy1-"[..]),
                ("[a-]", &b"a-"[..]),
                ("[^]x]", &b"abc1"[..]),
            ]);
            let t: String = (0..1 + r.below(10))
                .map(|_| *r.pick(alphabet) as char)
                .collect();
            (set.to_string(), t, false, false)
        }
    };
    let tl = token.len() as u64;
    let width = if conv.ends_with('c') {
        String::new()
    } else if r.below(4) == 0 {
        // Numbers read with a prefix, and floats, are never cut inside (FreeBSD keeps the
        // valid part of "0x" or "1e", glibc fails: not what this comparison is about).
        let w = if prefixed || numeric && kind >= 4 {
            tl + r.below(3)
        } else {
            1 + r.below(tl + 2)
        };
        w.to_string()
    } else {
        String::new()
    };
    ScanItem {
        directive: format!("%{star}{width}{conv}"),
        token,
        numeric,
    }
}

/// Thousands of generated (format, input) pairs through our `sscanf` and the host's:
/// integers of every base and length modifier (with overflow), floats (decimal, exponent,
/// hex, inf/nan, `long double`), strings, `%c` with widths, scansets, `%n`, `*`, widths,
/// literal separators, matching failures (a token replaced by one that cannot match) and
/// input that ends early (EOF before a conversion). Every destination buffer and the
/// return value must be identical.
#[test]
fn sscanf_matches_host_on_generated_pairs() {
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let total = 6000;
    let mut by_ret = std::collections::BTreeMap::new();
    let mut suppressed_eof = 0;
    for case in 0..total {
        let n = 1 + r.below(5) as usize;
        let truncate = r.below(8) == 0;
        let mismatch = r.below(8) == 0;
        let mut fmt = String::new();
        let mut input = String::new();
        let mut cut_points = vec![0];
        for i in 0..n {
            let item = scan_item(&mut r, !truncate);
            if r.below(6) == 0 {
                fmt.push_str("%n");
            }
            fmt.push_str(&item.directive);
            let token = if mismatch && r.below(n as u64) == 0 {
                "@@".to_string()
            } else {
                item.token
            };
            input.push_str(&token);
            cut_points.push(input.len());
            if i + 1 < n {
                let (f_sep, i_sep) = *r.pick(&[
                    (" ", " "),
                    (" ", "\t\n "),
                    (" ", ""),
                    (",", ","),
                    (" , ", "  ,"),
                    (":", ":"),
                    ("", ""),
                ]);
                let (f_sep, i_sep) = if item.numeric && i_sep.is_empty() {
                    (" ", " ")
                } else {
                    (f_sep, i_sep)
                };
                fmt.push_str(f_sep);
                input.push_str(i_sep);
                cut_points.push(input.len());
            }
        }
        fmt.push_str("%n");
        if truncate {
            let at = *r.pick(&cut_points);
            input.truncate(at);
        }
        let cf = std::ffi::CString::new(fmt.clone()).unwrap();
        let ci = std::ffi::CString::new(input.clone()).unwrap();
        let mut ours = [[0xAAu8; 160]; 12];
        let mut host = [[0xAAu8; 160]; 12];
        macro_rules! call {
            ($f:expr, $b:expr) => {{
                let p: Vec<*mut u8> = $b.iter_mut().map(|x| x.as_mut_ptr()).collect();
                unsafe {
                    $f(
                        ci.as_ptr().cast(),
                        cf.as_ptr().cast(),
                        p[0],
                        p[1],
                        p[2],
                        p[3],
                        p[4],
                        p[5],
                        p[6],
                        p[7],
                        p[8],
                        p[9],
                        p[10],
                        p[11],
                    )
                }
            }};
        }
        let r1 = call!(ours_sscanf, ours);
        let r2 = call!(libc::sscanf, host);
        // FreeBSD counts suppressed conversions when choosing between 0 and EOF at end of
        // input; glibc does not. Only then may the results differ, and only that way.
        if (r1, r2) == (0, -1) && fmt.contains("%*") {
            suppressed_eof += 1;
        } else {
            assert_eq!(
                r1, r2,
                "case {case}: return value, format {fmt:?} input {input:?}"
            );
        }
        for k in 0..12 {
            assert_eq!(
                ours[k][..],
                host[k][..],
                "case {case}: argument {k}, format {fmt:?} input {input:?}"
            );
        }
        *by_ret.entry(r1).or_insert(0) += 1;
    }
    // The cases must cover full success, partial matches and EOF.
    assert!(by_ret.get(&-1).copied().unwrap_or(0) > 50, "{by_ret:?}");
    assert!(by_ret.get(&0).copied().unwrap_or(0) > 50, "{by_ret:?}");
    assert!(by_ret.len() > 5, "{by_ret:?}");
    assert!(suppressed_eof < total / 50, "{suppressed_eof}");
}

/// Where FreeBSD's scanf differs from glibc's (so the host cannot be the oracle), the
/// expected values come from FreeBSD's documented behaviour (`vfscanf.c`'s `parsefloat`
/// and `input_failure` rules).
#[test]
fn scanf_freebsd_rules() {
    let mut f = 0f32;
    let mut d = 0f64;
    let mut n = -1i32;
    let mut x = -1i32;
    // The longest valid prefix is the number; the dead end stays unread.
    let r = unsafe {
        ours_sscanf(
            c"1e+x".as_ptr().cast(),
            c"%f%n".as_ptr().cast(),
            &mut f,
            &mut n,
        )
    };
    assert_eq!((r, f, n), (1, 1.0, 1));
    let r = unsafe {
        ours_sscanf(
            c"0xg".as_ptr().cast(),
            c"%x%n".as_ptr().cast(),
            &mut x,
            &mut n,
        )
    };
    assert_eq!((r, x, n), (1, 0, 1));
    // nan(n-char-sequence) is read whole.
    let r = unsafe {
        ours_sscanf(
            c"-nan(12ab)z".as_ptr().cast(),
            c"%lf%n".as_ptr().cast(),
            &mut d,
            &mut n,
        )
    };
    assert_eq!((r, d.is_nan() && d.is_sign_negative(), n), (1, true, 10));
    // "infin" is "inf" followed by "in".
    let r = unsafe {
        ours_sscanf(
            c"infin".as_ptr().cast(),
            c"%lf%n".as_ptr().cast(),
            &mut d,
            &mut n,
        )
    };
    assert_eq!((r, d, n), (1, f64::INFINITY, 3));
    // A suppressed conversion counts: end of input after it gives 0, not EOF.
    let r = unsafe { ours_sscanf(c"5".as_ptr().cast(), c"%*d%d".as_ptr().cast(), &mut x) };
    assert_eq!(r, 0);
    // %c with a width stores what is there when the input ends.
    let mut c = [0u8; 6];
    let r = unsafe {
        ours_sscanf(
            c"ab".as_ptr().cast(),
            c"%5c".as_ptr().cast(),
            c.as_mut_ptr(),
        )
    };
    assert_eq!((r, &c[..3]), (1, &b"ab\0"[..]));
    // EOF before any conversion; a matching failure is 0.
    for (input, fmt, want) in [
        (c"", c"%d", -1),
        (c"   ", c" %d", -1),
        (c"abc", c"abc%d", -1),
        (c"x", c"%d", 0),
        (c"12", c"%d%d", 1),
        (c"", c"", 0),
    ] {
        let mut y = 0i32;
        let r = unsafe { ours_sscanf(input.as_ptr().cast(), fmt.as_ptr().cast(), &mut x, &mut y) };
        assert_eq!(r, want, "{input:?} {fmt:?}");
    }
    // wchar_t is 2 bytes (Sony's ABI): %ls and %lc store UTF-16 units.
    let mut w = [0xFFFFu16; 8];
    let mut wc = [0xFFFFu16; 3];
    let r = unsafe {
        ours_sscanf(
            c"h\xe9llo xy".as_ptr().cast(),
            c"%ls %2lc".as_ptr().cast(),
            w.as_mut_ptr(),
            wc.as_mut_ptr(),
        )
    };
    assert_eq!(
        (r, &w[..6], &wc[..]),
        (
            2,
            &[0x68, 0xE9, 0x6C, 0x6C, 0x6F, 0][..],
            &[0x78, 0x79, 0xFFFF][..]
        )
    );
}

/// fscanf on a stream: successive calls continue where the previous stopped, pushed-back
/// characters are read again by the next call and by fgetc; compared with the host's
/// fscanf/fgetc on the same file.
#[test]
fn fscanf_matches_host_on_a_file() {
    let path = std::env::temp_dir().join(format!("aps5-libc-fscanf-{}.txt", std::process::id()));
    std::fs::write(
        &path,
        "count: 3\nitem apple 1.25 0x1F\nitem  pear -2.5e1 077\nitem plum inf 12\n%end 42 tail-text\n",
    )
    .unwrap();
    let cpath = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    let ours = unsafe { crate::stdio::fopen(cpath.as_ptr(), c"r".as_ptr().cast()) };
    let host = unsafe { libc::fopen(cpath.as_ptr(), c"r".as_ptr()) };
    assert!(!ours.is_null() && !host.is_null());
    type Rec = (i32, [u8; 16], f64, i32, i32);
    let run = |fmt: &std::ffi::CStr| -> (Rec, Rec) {
        let mut a: Rec = (0, [0; 16], 0.0, 0, 0);
        let mut b: Rec = (0, [0; 16], 0.0, 0, 0);
        let f = fmt.as_ptr();
        a.0 = unsafe {
            ours_fscanf(
                ours.cast(),
                f.cast(),
                a.1.as_mut_ptr(),
                &mut a.2,
                &mut a.3,
                &mut a.4,
            )
        };
        b.0 = unsafe { libc::fscanf(host, f, b.1.as_mut_ptr(), &mut b.2, &mut b.3, &mut b.4) };
        (a, b)
    };
    for fmt in [
        c"count: %*d",
        c" item %15s %lf %i%n",
        c" item %15s %lf %i%n",
        c" item %15s %lf %i%n",
        c" %%end%n",
        c"%lf",
        c"%n %[a-z]-%n",
        c"%15s",
        c"%15s",
    ] {
        let (a, b) = run(fmt);
        assert_eq!(a, b, "{fmt:?}");
    }
    unsafe {
        crate::stdio::fclose(ours);
        libc::fclose(host);
    }
    // FreeBSD pushes back the whole dead end "e+" of "1e+x": the next read sees it.
    std::fs::write(&path, "1e+x").unwrap();
    let ours = unsafe { crate::stdio::fopen(cpath.as_ptr(), c"r".as_ptr().cast()) };
    let mut v = 0f64;
    let r = unsafe { ours_fscanf(ours.cast(), c"%lf".as_ptr().cast(), &mut v) };
    let rest: Vec<i32> = (0..4)
        .map(|_| unsafe { crate::stdio::fgetc(ours) })
        .collect();
    assert_eq!(
        (r, v, rest),
        (1, 1.0, vec![b'e' as i32, b'+' as i32, b'x' as i32, -1])
    );
    unsafe { crate::stdio::fclose(ours) };
    std::fs::remove_file(&path).unwrap();
}

/// freopen (with a path and with NULL: mode change, append, truncation) and fdopen: the
/// same sequence through our stdio and the host's, in two folders; the files must end up
/// identical, and the reopened stream keeps its descriptor number in both.
#[test]
fn freopen_and_fdopen_match_host() {
    use crate::stdio as s;
    let base = std::env::temp_dir().join(format!("aps5-libc-freopen-{}", std::process::id()));
    let (d1, d2) = (base.join("ours"), base.join("host"));
    std::fs::create_dir_all(&d1).unwrap();
    std::fs::create_dir_all(&d2).unwrap();
    let c =
        |d: &std::path::Path, n: &str| std::ffi::CString::new(d.join(n).to_str().unwrap()).unwrap();
    unsafe {
        // Ours.
        let (a, b, w) = (c(&d1, "a.txt"), c(&d1, "b.txt"), c(&d1, "c.txt"));
        let f = s::fopen(a.as_ptr(), c"w".as_ptr().cast());
        s::fputs(c"one\n".as_ptr().cast(), f);
        let fd = s::fileno(f);
        let f2 = s::freopen(std::ptr::null(), c"a".as_ptr().cast(), f);
        assert_eq!(f2, f);
        s::fputs(c"two\n".as_ptr().cast(), f);
        assert_eq!(s::freopen(b.as_ptr(), c"w".as_ptr().cast(), f), f);
        assert_eq!(s::fileno(f), fd, "freopen keeps the descriptor number");
        s::fputs(c"three\n".as_ptr().cast(), f);
        s::fclose(f);
        let f = s::fopen(w.as_ptr(), c"w+".as_ptr().cast());
        s::fputs(c"abcdef".as_ptr().cast(), f);
        assert_eq!(s::freopen(std::ptr::null(), c"w".as_ptr().cast(), f), f);
        s::fputs(c"xy".as_ptr().cast(), f);
        s::fclose(f);
        let raw = libc::open(w.as_ptr(), libc::O_RDWR | libc::O_APPEND);
        let f = s::fdopen(raw, c"a".as_ptr().cast());
        s::fputs(c"+fd".as_ptr().cast(), f);
        s::fclose(f);
        // The host's.
        let (a, b, w) = (c(&d2, "a.txt"), c(&d2, "b.txt"), c(&d2, "c.txt"));
        let f = libc::fopen(a.as_ptr(), c"w".as_ptr());
        libc::fputs(c"one\n".as_ptr(), f);
        let fd = libc::fileno(f);
        let f = libc::freopen(std::ptr::null(), c"a".as_ptr(), f);
        libc::fputs(c"two\n".as_ptr(), f);
        let f = libc::freopen(b.as_ptr(), c"w".as_ptr(), f);
        assert_eq!(libc::fileno(f), fd);
        libc::fputs(c"three\n".as_ptr(), f);
        libc::fclose(f);
        let f = libc::fopen(w.as_ptr(), c"w+".as_ptr());
        libc::fputs(c"abcdef".as_ptr(), f);
        let f = libc::freopen(std::ptr::null(), c"w".as_ptr(), f);
        libc::fputs(c"xy".as_ptr(), f);
        libc::fclose(f);
        let raw = libc::open(w.as_ptr(), libc::O_RDWR | libc::O_APPEND);
        let f = libc::fdopen(raw, c"a".as_ptr());
        libc::fputs(c"+fd".as_ptr(), f);
        libc::fclose(f);
    }
    for n in ["a.txt", "b.txt", "c.txt"] {
        let ours = std::fs::read(d1.join(n)).unwrap();
        let host = std::fs::read(d2.join(n)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&host),
            "{n}"
        );
    }
    assert_eq!(std::fs::read(d1.join("a.txt")).unwrap(), b"one\ntwo\n");
    // FreeBSD (unlike glibc, which reopens /proc/self/fd/N): a NULL-path freopen cannot
    // widen the access mode; the stream is closed and errno is EBADF.
    unsafe {
        let a = c(&d1, "a.txt");
        let f = s::fopen(a.as_ptr(), c"r".as_ptr().cast());
        assert!(s::freopen(std::ptr::null(), c"w".as_ptr().cast(), f).is_null());
        assert_eq!(*crate::kernel::errno_ptr(), 9);
        // fdopen refuses a mode the descriptor does not allow (EINVAL).
        let ro = libc::open(a.as_ptr(), libc::O_RDONLY);
        assert!(s::fdopen(ro, c"w".as_ptr().cast()).is_null());
        assert_eq!(*crate::kernel::errno_ptr(), 22);
        libc::close(ro);
    }
    std::fs::remove_dir_all(&base).unwrap();
}

/// fgetln, getw/putw and asprintf, each against the host's counterpart or its definition.
#[test]
fn fgetln_getw_asprintf() {
    use crate::stdio as s;
    unsafe extern "C" {
        #[link_name = trampoline_str!("asprintf")]
        fn ours_asprintf(out: *mut *mut u8, fmt: *const u8, ...) -> i32;
    }
    let path = std::env::temp_dir().join(format!("aps5-libc-fgetln-{}", std::process::id()));
    std::fs::write(&path, b"first line\nsecond\nno newline").unwrap();
    let cp = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    unsafe {
        let f = s::fopen(cp.as_ptr(), c"r".as_ptr().cast());
        let mut lines = Vec::new();
        loop {
            let mut n = 0usize;
            let p = s::fgetln(f, &mut n);
            if p.is_null() {
                break;
            }
            lines.push(std::slice::from_raw_parts(p, n).to_vec());
        }
        assert_eq!(lines, [&b"first line\n"[..], b"second\n", b"no newline"]);
        s::fclose(f);
        let f = s::fopen(cp.as_ptr(), c"w+".as_ptr().cast());
        for w in [0x1234_5678, -1, 0] {
            assert_eq!(s::putw(w, f), 0);
        }
        s::rewind(f);
        let back: Vec<i32> = (0..3).map(|_| s::getw(f)).collect();
        assert_eq!(back, [0x1234_5678, -1, 0]);
        assert_eq!((s::getw(f), s::feof(f) != 0), (-1, true));
        s::fclose(f);
        let mut out: *mut u8 = std::ptr::null_mut();
        let r = ours_asprintf(
            &mut out,
            c"%1$s=%3$05.1f|%2$x".as_ptr().cast(),
            c"pi".as_ptr(),
            255,
            12.375,
        );
        let mut host = [0u8; 64];
        let r2 = libc::snprintf(
            host.as_mut_ptr().cast(),
            64,
            c"%1$s=%3$05.1f|%2$x".as_ptr(),
            c"pi".as_ptr(),
            255,
            12.375,
        );
        assert_eq!(
            (std::ffi::CStr::from_ptr(out.cast()).to_bytes(), r),
            (&host[..r2 as usize], r2)
        );
        libc::free(out.cast());
    }
    std::fs::remove_file(&path).unwrap();
}

/// flockfile: while one thread holds a stream, another thread's writes to it wait, so the
/// holder's writes come out together; the lock is recursive and ftrylockfile fails from
/// the other thread.
#[test]
fn flockfile_keeps_a_threads_writes_together() {
    use crate::stdio as s;
    let path = std::env::temp_dir().join(format!("aps5-libc-flock-{}", std::process::id()));
    let cp = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    let f = unsafe { s::fopen(cp.as_ptr(), c"w".as_ptr().cast()) } as usize;
    unsafe {
        s::flockfile(f as *mut _);
        s::flockfile(f as *mut _);
    }
    let other = std::thread::spawn(move || unsafe {
        let f = f as *mut s::GuestFile;
        let busy = s::ftrylockfile(f);
        s::fputs(c"B".as_ptr().cast(), f);
        busy
    });
    std::thread::sleep(std::time::Duration::from_millis(50));
    unsafe {
        s::fputs(c"A1".as_ptr().cast(), f as *mut _);
        s::funlockfile(f as *mut _);
        s::fputs(c"A2".as_ptr().cast(), f as *mut _);
        s::funlockfile(f as *mut _);
    }
    assert_ne!(
        other.join().unwrap(),
        0,
        "ftrylockfile from another thread must fail"
    );
    unsafe { s::fclose(f as *mut _) };
    assert_eq!(std::fs::read(&path).unwrap(), b"A1A2B");
    std::fs::remove_file(&path).unwrap();
}

/// Threads contending for one stream all get through: the stream lock wakes a waiter
/// whenever one is waiting (it skips the wake, a system call, only when none is), and each
/// `fputs` comes out whole.
#[test]
fn contended_stream_lock_loses_no_wakeup() {
    use crate::stdio as s;
    let path = std::env::temp_dir().join(format!("aps5-libc-contend-{}", std::process::id()));
    let cp = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    let f = unsafe { s::fopen(cp.as_ptr(), c"w".as_ptr().cast()) } as usize;
    let threads: Vec<_> = (0..6)
        .map(|t| {
            std::thread::spawn(move || {
                let line = std::ffi::CString::new(format!("thread {t} line\n")).unwrap();
                for i in 0..300 {
                    unsafe {
                        s::flockfile(f as *mut _);
                        s::fputs(line.as_ptr().cast(), f as *mut _);
                        if i % 7 == 0 {
                            std::thread::yield_now(); // others queue up on the lock
                        }
                        s::funlockfile(f as *mut _);
                    }
                }
            })
        })
        .collect();
    // A lost wakeup leaves a thread asleep for good: fail instead of hanging.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !threads.iter().all(|t| t.is_finished()) {
        assert!(
            std::time::Instant::now() < deadline,
            "a thread waiting for the stream lock was never woken"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    for t in threads {
        t.join().unwrap();
    }
    unsafe { s::fclose(f as *mut _) };
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    for t in 0..6 {
        let want = format!("thread {t} line");
        assert_eq!(text.lines().filter(|l| *l == want).count(), 300, "{want}");
    }
    assert_eq!(text.lines().count(), 1800);
}

/// Wide strings (2-byte `wchar_t`) against the host's wcs* functions (4-byte `wchar_t`)
/// on the same characters: random strings over an alphabet with ASCII and non-ASCII BMP
/// characters.
#[test]
fn wide_strings_match_host_wcs_functions() {
    use crate::wchar as w;
    unsafe extern "C" {
        fn wcslen(s: *const u32) -> usize;
        fn wcscmp(a: *const u32, b: *const u32) -> i32;
        fn wcsncmp(a: *const u32, b: *const u32, n: usize) -> i32;
        fn wcschr(s: *const u32, c: u32) -> *mut u32;
        fn wcsrchr(s: *const u32, c: u32) -> *mut u32;
        fn wcsstr(a: *const u32, b: *const u32) -> *mut u32;
        fn wcsspn(a: *const u32, b: *const u32) -> usize;
        fn wcscspn(a: *const u32, b: *const u32) -> usize;
        fn wcspbrk(a: *const u32, b: *const u32) -> *mut u32;
        fn wcsncpy(d: *mut u32, s: *const u32, n: usize) -> *mut u32;
        fn wcsncat(d: *mut u32, s: *const u32, n: usize) -> *mut u32;
        fn wcstol(s: *const u32, e: *mut *mut u32, b: i32) -> i64;
        fn wcstod(s: *const u32, e: *mut *mut u32) -> f64;
    }
    let alphabet: [u16; 8] = [
        b'a' as u16,
        b'b' as u16,
        b'c' as u16,
        b' ' as u16,
        0xE9,
        0x3042,
        0x30A2,
        0xFF21,
    ];
    let mut r = Rng(0xD1B5_4A32_D192_ED03);
    let random = |r: &mut Rng, max: u64| -> Vec<u16> {
        let n = r.below(max) as usize;
        let mut v: Vec<u16> = (0..n).map(|_| *r.pick(&alphabet)).collect();
        v.push(0);
        v
    };
    let wide = |v: &[u16]| -> Vec<u32> { v.iter().map(|&c| u32::from(c)).collect() };
    let idx16 = |p: *mut u16, base: &[u16]| {
        (!p.is_null()).then(|| (p as usize - base.as_ptr() as usize) / 2)
    };
    let idx32 = |p: *mut u32, base: &[u32]| {
        (!p.is_null()).then(|| (p as usize - base.as_ptr() as usize) / 4)
    };
    let mut checks = 0;
    for _ in 0..3000 {
        let a = random(&mut r, 12);
        let b = random(&mut r, 4);
        let (a4, b4) = (wide(&a), wide(&b));
        let c = u32::from(*r.pick(&alphabet));
        let n = r.below(14) as usize;
        unsafe {
            assert_eq!(w::wcslen(a.as_ptr()), wcslen(a4.as_ptr()));
            assert_eq!(
                w::wcscmp(a.as_ptr(), b.as_ptr()).signum(),
                wcscmp(a4.as_ptr(), b4.as_ptr()).signum()
            );
            assert_eq!(
                w::wcsncmp(a.as_ptr(), b.as_ptr(), n).signum(),
                wcsncmp(a4.as_ptr(), b4.as_ptr(), n).signum()
            );
            assert_eq!(
                idx16(w::wcschr(a.as_ptr(), c), &a),
                idx32(wcschr(a4.as_ptr(), c), &a4)
            );
            assert_eq!(
                idx16(w::wcschr(a.as_ptr(), 0), &a),
                idx32(wcschr(a4.as_ptr(), 0), &a4)
            );
            assert_eq!(
                idx16(w::wcsrchr(a.as_ptr(), c), &a),
                idx32(wcsrchr(a4.as_ptr(), c), &a4)
            );
            assert_eq!(
                idx16(w::wcsstr(a.as_ptr(), b.as_ptr()), &a),
                idx32(wcsstr(a4.as_ptr(), b4.as_ptr()), &a4)
            );
            assert_eq!(
                w::wcsspn(a.as_ptr(), b.as_ptr()),
                wcsspn(a4.as_ptr(), b4.as_ptr())
            );
            assert_eq!(
                w::wcscspn(a.as_ptr(), b.as_ptr()),
                wcscspn(a4.as_ptr(), b4.as_ptr())
            );
            assert_eq!(
                idx16(w::wcspbrk(a.as_ptr(), b.as_ptr()), &a),
                idx32(wcspbrk(a4.as_ptr(), b4.as_ptr()), &a4)
            );
            let mut d = [0x5555u16; 32];
            let mut d4 = [0x5555u32; 32];
            w::wcsncpy(d.as_mut_ptr(), a.as_ptr(), n);
            wcsncpy(d4.as_mut_ptr(), a4.as_ptr(), n);
            assert_eq!(wide(&d), d4.to_vec());
            d[n] = 0;
            d4[n] = 0;
            w::wcsncat(d.as_mut_ptr(), b.as_ptr(), n % 5);
            wcsncat(d4.as_mut_ptr(), b4.as_ptr(), n % 5);
            assert_eq!(wide(&d), d4.to_vec());
        }
        checks += 1;
    }
    assert_eq!(checks, 3000);
    for s in [
        "  -123xyz",
        "0x1fz",
        "+77",
        "junk",
        "1e5",
        "-2.5e-3 rest",
        "inf",
        "  .5",
    ] {
        let mut v: Vec<u16> = s.encode_utf16().collect();
        v.push(0);
        let v4 = wide(&v);
        let (mut e, mut e4) = (std::ptr::null_mut(), std::ptr::null_mut());
        unsafe {
            let x = w::wcstol(v.as_ptr(), &mut e, 0);
            let x4 = wcstol(v4.as_ptr(), &mut e4, 0);
            assert_eq!((x, idx16(e, &v)), (x4, idx32(e4, &v4)), "{s}");
            let x = w::wcstod(v.as_ptr(), &mut e);
            let x4 = wcstod(v4.as_ptr(), &mut e4);
            assert_eq!(
                (x.to_bits(), idx16(e, &v)),
                (x4.to_bits(), idx32(e4, &v4)),
                "{s}"
            );
        }
    }
}

/// swprintf against the host's swprintf on the same formats and values (the host's
/// `wchar_t` is 4 bytes, so `%ls` arguments are the same text in each width).
#[test]
fn swprintf_matches_host() {
    unsafe extern "C" {
        #[link_name = trampoline_str!("swprintf")]
        fn ours_swprintf(b: *mut u16, n: usize, f: *const u16, ...) -> i32;
        fn swprintf(b: *mut u32, n: usize, f: *const u32, ...) -> i32;
    }
    let w16 = |s: &str| -> Vec<u16> { s.encode_utf16().chain([0]).collect() };
    let w32 = |s: &str| -> Vec<u32> { s.chars().map(|c| c as u32).chain([0]).collect() };
    let (t16, t32) = (w16("wide\u{e9}"), w32("wide\u{e9}"));
    for fmt in [
        "%d|%5.2f|%-7ls|%s|%lc|%c|%#x|%%|%8.3ls|%-4s|",
        "[%*d][%.*ls][%+e][%ld]",
        "\u{3042}%ls\u{30A2} %s",
        "%n",
    ] {
        let (f16, f32_) = (w16(fmt), w32(fmt));
        let mut b16 = [0x5555u16; 128];
        let mut b32 = [0x5555u32; 128];
        let (mut n1, mut n2) = (-1i32, -1i32);
        let (r1, r2) = unsafe {
            match fmt {
                "%n" => (
                    ours_swprintf(b16.as_mut_ptr(), 128, f16.as_ptr(), &mut n1),
                    swprintf(b32.as_mut_ptr(), 128, f32_.as_ptr(), &mut n2),
                ),
                f if f.starts_with('[') => (
                    ours_swprintf(
                        b16.as_mut_ptr(),
                        128,
                        f16.as_ptr(),
                        6,
                        42,
                        3,
                        t16.as_ptr(),
                        1.5,
                        -7i64,
                    ),
                    swprintf(
                        b32.as_mut_ptr(),
                        128,
                        f32_.as_ptr(),
                        6,
                        42,
                        3,
                        t32.as_ptr(),
                        1.5,
                        -7i64,
                    ),
                ),
                f if f.starts_with('\u{3042}') => (
                    ours_swprintf(
                        b16.as_mut_ptr(),
                        128,
                        f16.as_ptr(),
                        t16.as_ptr(),
                        c"nb".as_ptr(),
                    ),
                    swprintf(
                        b32.as_mut_ptr(),
                        128,
                        f32_.as_ptr(),
                        t32.as_ptr(),
                        c"nb".as_ptr(),
                    ),
                ),
                _ => (
                    ours_swprintf(
                        b16.as_mut_ptr(),
                        128,
                        f16.as_ptr(),
                        -42,
                        6.28125f64,
                        t16.as_ptr(),
                        c"narrow".as_ptr(),
                        0xE9,
                        b'z' as i32,
                        255,
                        t16.as_ptr(),
                        c"ab".as_ptr(),
                    ),
                    swprintf(
                        b32.as_mut_ptr(),
                        128,
                        f32_.as_ptr(),
                        -42,
                        6.28125f64,
                        t32.as_ptr(),
                        c"narrow".as_ptr(),
                        0xE9,
                        b'z' as i32,
                        255,
                        t32.as_ptr(),
                        c"ab".as_ptr(),
                    ),
                ),
            }
        };
        assert_eq!(r1, r2, "{fmt:?}");
        let o16: Vec<u32> = b16[..=r1 as usize].iter().map(|&c| u32::from(c)).collect();
        assert_eq!(o16, b32[..=r2 as usize].to_vec(), "{fmt:?}");
        assert_eq!(n1, n2);
    }
    // Positional arguments (and a literal `$` in a plain format) as the host reads them.
    for fmt in [
        "%3$s|%1$5d|%2$-6ls|%1$x|%4$.2f|%2$.*1$ls",
        "\u{3042}%2$*1$ls\u{30a2}%4$+e %3$.3s",
        "cost $%d %s",
    ] {
        let (f16, f32_) = (w16(fmt), w32(fmt));
        let mut b16 = [0x5555u16; 128];
        let mut b32 = [0x5555u32; 128];
        let (r1, r2) = unsafe {
            if fmt.starts_with("cost") {
                (
                    ours_swprintf(b16.as_mut_ptr(), 128, f16.as_ptr(), 5, c"x".as_ptr()),
                    swprintf(b32.as_mut_ptr(), 128, f32_.as_ptr(), 5, c"x".as_ptr()),
                )
            } else {
                (
                    ours_swprintf(
                        b16.as_mut_ptr(),
                        128,
                        f16.as_ptr(),
                        3,
                        t16.as_ptr(),
                        c"narrow".as_ptr(),
                        2.5f64,
                    ),
                    swprintf(
                        b32.as_mut_ptr(),
                        128,
                        f32_.as_ptr(),
                        3,
                        t32.as_ptr(),
                        c"narrow".as_ptr(),
                        2.5f64,
                    ),
                )
            }
        };
        assert!(r2 > 0, "{fmt:?}");
        assert_eq!(r1, r2, "{fmt:?}");
        let o16: Vec<u32> = b16[..=r1 as usize].iter().map(|&c| u32::from(c)).collect();
        assert_eq!(o16, b32[..=r2 as usize].to_vec(), "{fmt:?}");
    }
    // Too small a buffer: -1, the output cut and terminated (C99).
    let f = w16("%s");
    let mut b = [0x5555u16; 8];
    let r = unsafe { ours_swprintf(b.as_mut_ptr(), 4, f.as_ptr(), c"abcdef".as_ptr()) };
    assert_eq!((r, &b[..5]), (-1, &[97, 98, 99, 0, 0x5555][..]));
}

/// The C locale's multibyte conversions (FreeBSD's single-byte "NONE" encoding: bytes
/// 0x80-0xFF are characters 0x80-0xFF; characters above 0xFF have no byte, EILSEQ), and
/// wide stdio through a file.
#[test]
fn multibyte_conversions_and_wide_stdio() {
    use crate::stdio as s;
    use crate::wchar as w;
    unsafe {
        let mut out = [0u16; 8];
        let n = w::mbstowcs(out.as_mut_ptr(), c"a\xe9\xff".as_ptr().cast(), 8);
        assert_eq!((n, &out[..4]), (3, &[0x61, 0xE9, 0xFF, 0][..]));
        let mut bytes = [0u8; 8];
        let n = w::wcstombs(bytes.as_mut_ptr(), out.as_ptr(), 8);
        assert_eq!((n, &bytes[..4]), (3, &b"a\xe9\xff\0"[..]));
        let bad = [0x61u16, 0x3042, 0];
        assert_eq!(w::wcstombs(bytes.as_mut_ptr(), bad.as_ptr(), 8), usize::MAX);
        assert_eq!(*crate::kernel::errno_ptr(), 86);
        assert_eq!(w::wctomb(bytes.as_mut_ptr(), 0x3042), -1);
        assert_eq!(
            (
                w::wctob(0xE9),
                w::wctob(0x100),
                w::btowc(-1),
                w::btowc(0xE9)
            ),
            (0xE9, -1, w::WEOF, 0xE9)
        );
        let mut wc = 0u16;
        assert_eq!(
            w::mbrtowc(&mut wc, c"\xe9".as_ptr().cast(), 1, std::ptr::null_mut()),
            1
        );
        assert_eq!(wc, 0xE9);
        assert_eq!(
            w::mbrtowc(&mut wc, c"x".as_ptr().cast(), 0, std::ptr::null_mut()),
            usize::MAX - 1
        );
        assert_eq!(w::mbtowc(&mut wc, c"".as_ptr().cast(), 1), 0);

        let path = std::env::temp_dir().join(format!("aps5-libc-wio-{}", std::process::id()));
        let cp = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        let f = s::fopen(cp.as_ptr(), c"w+".as_ptr().cast());
        assert_eq!(w::fwide(f, 0), 0);
        let line: Vec<u16> = "caf\u{e9}\nnext".encode_utf16().chain([0]).collect();
        assert_eq!(w::fputws(line.as_ptr(), f), 0);
        assert_eq!(w::fwide(f, -1), 1, "wide output oriented the stream");
        assert_eq!(w::fputwc(0x3042, f), w::WEOF);
        s::rewind(f);
        let mut back = [0u16; 16];
        assert!(!w::fgetws(back.as_mut_ptr(), 16, f).is_null());
        assert_eq!(&back[..6], &[0x63, 0x61, 0x66, 0xE9, 0x0A, 0]);
        assert_eq!(w::fgetwc(f), u32::from(b'n'));
        assert_eq!(w::ungetwc(u32::from(b'N'), f), u32::from(b'N'));
        assert!(!w::fgetws(back.as_mut_ptr(), 16, f).is_null());
        assert_eq!(&back[..5], &[0x4E, 0x65, 0x78, 0x74, 0]);
        assert_eq!(w::fgetwc(f), w::WEOF);
        s::fclose(f);
        assert_eq!(std::fs::read(&path).unwrap(), b"caf\xe9\nnext");
        std::fs::remove_file(&path).unwrap();
    }
}

/// The wide scanf family: the same generated (format, input) pairs as the sscanf test,
/// widened, through our `swscanf` (2-byte `wchar_t`) and the host's (4-byte): every
/// destination byte and return value must match.
#[test]
fn swscanf_matches_host_on_generated_pairs() {
    unsafe extern "C" {
        #[link_name = trampoline_str!("swscanf")]
        fn ours_swscanf(s: *const u16, fmt: *const u16, ...) -> i32;
        fn swscanf(s: *const u32, fmt: *const u32, ...) -> i32;
    }
    let mut r = Rng(0x94D0_49BB_1331_11EB);
    let total = 2000;
    let mut suppressed_eof = 0;
    for case in 0..total {
        let n = 1 + r.below(4) as usize;
        let truncate = r.below(8) == 0;
        let mut fmt = String::new();
        let mut input = String::new();
        for i in 0..n {
            let item = scan_item(&mut r, !truncate);
            fmt.push_str(&item.directive);
            input.push_str(&item.token);
            if i + 1 < n {
                let (f_sep, i_sep) = if item.numeric {
                    (" ", " ")
                } else {
                    *r.pick(&[(" ", "\t "), (",", ","), ("", "")])
                };
                fmt.push_str(f_sep);
                input.push_str(i_sep);
            }
        }
        fmt.push_str("%n");
        if truncate {
            let cut = input.rfind(' ').unwrap_or(0);
            input.truncate(cut);
        }
        let w16 = |s: &str| -> Vec<u16> { s.bytes().map(u16::from).chain([0]).collect() };
        let w32 = |s: &str| -> Vec<u32> { s.bytes().map(u32::from).chain([0]).collect() };
        let (f16, i16_, f32_, i32_) = (w16(&fmt), w16(&input), w32(&fmt), w32(&input));
        let mut ours = [[0xAAu8; 160]; 6];
        let mut host = [[0xAAu8; 160]; 6];
        let p1: Vec<*mut u8> = ours.iter_mut().map(|x| x.as_mut_ptr()).collect();
        let p2: Vec<*mut u8> = host.iter_mut().map(|x| x.as_mut_ptr()).collect();
        let r1 = unsafe {
            ours_swscanf(
                i16_.as_ptr(),
                f16.as_ptr(),
                p1[0],
                p1[1],
                p1[2],
                p1[3],
                p1[4],
                p1[5],
            )
        };
        let r2 = unsafe {
            swscanf(
                i32_.as_ptr(),
                f32_.as_ptr(),
                p2[0],
                p2[1],
                p2[2],
                p2[3],
                p2[4],
                p2[5],
            )
        };
        if (r1, r2) == (0, -1) && fmt.contains("%*") {
            suppressed_eof += 1;
        } else {
            assert_eq!(r1, r2, "case {case}: format {fmt:?} input {input:?}");
        }
        // glibc's wide %s/%[ write a second NUL after the terminator; ignore that byte.
        for (o, h) in ours.iter().zip(host.iter_mut()) {
            for j in 1..h.len() {
                if o[j] == 0xAA && h[j] == 0 && h[j - 1] == 0 && o[j - 1] == 0 {
                    h[j] = 0xAA;
                }
            }
        }
        assert_eq!(ours, host, "case {case}: format {fmt:?} input {input:?}");
    }
    assert!(suppressed_eof < total / 50, "{suppressed_eof}");
    // A character above 0xFF: stored by %ls, a matching failure for %s (no byte form).
    let (f, inp): (Vec<u16>, Vec<u16>) = (
        "%ls %s".encode_utf16().chain([0]).collect(),
        "\u{3042}b \u{30a2}".encode_utf16().chain([0]).collect(),
    );
    let mut w = [0u16; 4];
    let mut b = [0xAAu8; 4];
    let r = unsafe { ours_swscanf(inp.as_ptr(), f.as_ptr(), w.as_mut_ptr(), b.as_mut_ptr()) };
    assert_eq!((r, w, b[0]), (1, [0x3042, 0x62, 0, 0], 0xAA));
}

thread_local! {
    // Per thread: the handler runs on the violating thread, and tests run in parallel.
    static VIOLATIONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

unsafe extern "C" fn count_violation(_m: *const libc::c_char, _p: *mut libc::c_void, _e: i32) {
    VIOLATIONS.with(|v| v.set(v.get() + 1));
}

/// C11 Annex K: the printf_s family formats as the host's snprintf where no constraint is
/// broken; `%n`, NULL `%s` arguments and a too small sprintf_s buffer are violations
/// (handler called, `buf[0]` cleared, the standard's return values); and the string
/// functions copy as strcpy/strcat do, or fail as K.3.7 says.
#[test]
fn annex_k_functions() {
    use crate::strings as st;
    unsafe extern "C" {
        #[link_name = trampoline_str!("sprintf_s")]
        fn ours_sprintf_s(b: *mut u8, n: usize, f: *const u8, ...) -> i32;
        #[link_name = trampoline_str!("snprintf_s")]
        fn ours_snprintf_s(b: *mut u8, n: usize, f: *const u8, ...) -> i32;
    }
    let old = st::set_constraint_handler_s(Some(count_violation));
    // Only this test installs a handler (once per process).
    assert!(old.is_none(), "the default handler is reported as NULL");
    let before = VIOLATIONS.with(|v| v.get());
    let fmt = c"%s|%5d|%-6.2f|%x".as_ptr();
    let mut ours = [0xAAu8; 64];
    let mut host = [0xAAu8; 64];
    unsafe {
        let r1 = ours_sprintf_s(
            ours.as_mut_ptr(),
            64,
            fmt.cast(),
            c"abc".as_ptr(),
            42,
            2.5,
            255,
        );
        let r2 = libc::snprintf(
            host.as_mut_ptr().cast(),
            64,
            fmt,
            c"abc".as_ptr(),
            42,
            2.5,
            255,
        );
        assert_eq!((r1, &ours[..]), (r2, &host[..]));
        for n in [1usize, 5, 12, 64] {
            let mut a = [0xAAu8; 64];
            let mut b = [0xAAu8; 64];
            let r1 = ours_snprintf_s(a.as_mut_ptr(), n, fmt.cast(), c"abc".as_ptr(), 42, 2.5, 255);
            let r2 = libc::snprintf(b.as_mut_ptr().cast(), n, fmt, c"abc".as_ptr(), 42, 2.5, 255);
            assert_eq!((r1, &a[..]), (r2, &b[..]), "snprintf_s n={n}");
        }
    }
    assert_eq!(VIOLATIONS.with(|v| v.get()), before);
    unsafe {
        // Too small for sprintf_s: 0, buf[0] cleared.
        let mut b = [0xAAu8; 8];
        assert_eq!(
            ours_sprintf_s(
                b.as_mut_ptr(),
                4,
                c"%s".as_ptr().cast(),
                c"toolong".as_ptr()
            ),
            0
        );
        assert_eq!(b[0], 0);
        // %n: negative, nothing stored.
        let mut n = -7i32;
        b[0] = 0xAA;
        assert!(ours_sprintf_s(b.as_mut_ptr(), 8, c"ab%n".as_ptr().cast(), &mut n) < 0);
        assert_eq!((n, b[0]), (-7, 0));
        // NULL %s argument.
        assert!(
            ours_snprintf_s(
                b.as_mut_ptr(),
                8,
                c"%s".as_ptr().cast(),
                std::ptr::null::<u8>()
            ) < 0
        );
    }
    assert_eq!(VIOLATIONS.with(|v| v.get()), before + 3);

    unsafe {
        // Copies that fit: as strcpy/strcat/strncpy (checked against the host's).
        let mut a = [0x55 as libc::c_char; 16];
        let mut h = [0x55 as libc::c_char; 16];
        assert_eq!(st::strcpy_s(a.as_mut_ptr(), 16, c"hello".as_ptr()), 0);
        libc::strcpy(h.as_mut_ptr(), c"hello".as_ptr());
        assert_eq!(st::strcat_s(a.as_mut_ptr(), 16, c", you".as_ptr()), 0);
        libc::strcat(h.as_mut_ptr(), c", you".as_ptr());
        assert_eq!(libc::strcmp(a.as_ptr(), h.as_ptr()), 0);
        assert_eq!(st::strncat_s(a.as_mut_ptr(), 16, c"!!!!".as_ptr(), 2), 0);
        libc::strncat(h.as_mut_ptr(), c"!!!!".as_ptr(), 2);
        assert_eq!(libc::strcmp(a.as_ptr(), h.as_ptr()), 0);
        assert_eq!(st::strncpy_s(a.as_mut_ptr(), 16, c"abcdef".as_ptr(), 3), 0);
        assert_eq!(std::ffi::CStr::from_ptr(a.as_ptr()), c"abc");
        // Violations: destination cleared, nonzero result.
        assert_ne!(st::strcpy_s(a.as_mut_ptr(), 4, c"toolong".as_ptr()), 0);
        assert_eq!(a[0], 0);
        st::strcpy_s(a.as_mut_ptr(), 16, c"0123456789".as_ptr());
        assert_ne!(st::strcat_s(a.as_mut_ptr(), 12, c"abc".as_ptr()), 0);
        assert_eq!(a[0], 0);
        assert_ne!(st::strcpy_s(a.as_mut_ptr(), 16, std::ptr::null()), 0);
        assert_ne!(st::strcpy_s(std::ptr::null_mut(), 16, c"x".as_ptr()), 0);
        assert_eq!(st::strnlen_s(std::ptr::null(), 5), 0);
        assert_eq!(st::strnlen_s(c"abcdef".as_ptr(), 4), 4);
        // memcpy_s: too large a copy zeroes the destination.
        let mut d = [7u8; 8];
        assert_ne!(
            st::memcpy_s(d.as_mut_ptr().cast(), 4, c"abcdefg".as_ptr().cast(), 6),
            0
        );
        assert_eq!(d, [0, 0, 0, 0, 7, 7, 7, 7]);
        assert_eq!(
            st::memmove_s(d.as_mut_ptr().add(1).cast(), 7, d.as_ptr().cast(), 4),
            0
        );
        // memset_s: FreeBSD's errors; the whole smax is set on EOVERFLOW.
        let mut m = [0u8; 8];
        assert_eq!(st::memset_s(m.as_mut_ptr().cast(), 4, 0x41, 9), 84);
        assert_eq!(m, [0x41, 0x41, 0x41, 0x41, 0, 0, 0, 0]);
        assert_eq!(st::memset_s(std::ptr::null_mut(), 4, 0, 1), 22);
        assert_eq!(st::memset_s(m.as_mut_ptr().cast(), 8, 0x42, 8), 0);
        // strerror_s: cut with "..." when it does not fit.
        let mut e = [0 as libc::c_char; 8];
        assert_eq!(st::strerror_s(e.as_mut_ptr(), 8, 2), 34);
        assert_eq!(std::ffi::CStr::from_ptr(e.as_ptr()).to_bytes(), b"No s...");
        // strtok_s.
        let mut text = *b"a,b,,c\0";
        let mut left = 7usize;
        let mut save = std::ptr::null_mut();
        let mut toks = Vec::new();
        let mut p = st::strtok_s(
            text.as_mut_ptr().cast(),
            &mut left,
            c",".as_ptr(),
            &mut save,
        );
        while !p.is_null() {
            toks.push(std::ffi::CStr::from_ptr(p).to_bytes().to_vec());
            p = st::strtok_s(std::ptr::null_mut(), &mut left, c",".as_ptr(), &mut save);
        }
        assert_eq!(toks, [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    }
    // The counting handler stays installed: resetting it could race with other tests.
}

/// sscanf_s: with room enough, the same as the host's sscanf (the sizes are extra
/// arguments); input that does not fit is a matching failure that clears the array.
#[test]
fn sscanf_s_sizes() {
    unsafe extern "C" {
        #[link_name = trampoline_str!("sscanf_s")]
        fn ours_sscanf_s(s: *const u8, f: *const u8, ...) -> i32;
    }
    let input = c"  -17 word x abcxyz9 tail".as_ptr();
    let fmt = c"%d %s %c %[a-z]%n".as_ptr();
    let (mut i1, mut i2) = (0i32, 0i32);
    let (mut s1, mut s2) = ([0xAAu8; 16], [0xAAu8; 16]);
    let (mut c1, mut c2) = (0u8, 0u8);
    let (mut k1, mut k2) = ([0xAAu8; 16], [0xAAu8; 16]);
    let (mut n1, mut n2) = (0i32, 0i32);
    let r1 = unsafe {
        ours_sscanf_s(
            input.cast(),
            fmt.cast(),
            &mut i1,
            s1.as_mut_ptr(),
            16usize,
            &mut c1,
            1usize,
            k1.as_mut_ptr(),
            16usize,
            &mut n1,
        )
    };
    let r2 = unsafe {
        libc::sscanf(
            input,
            fmt,
            &mut i2,
            s2.as_mut_ptr(),
            &mut c2,
            k2.as_mut_ptr(),
            &mut n2,
        )
    };
    assert_eq!((r1, i1, s1, c1, k1, n1), (r2, i2, s2, c2, k2, n2));
    // "word" and its NUL need 5 elements.
    let mut small = [0xAAu8; 8];
    let r = unsafe {
        ours_sscanf_s(
            c"word".as_ptr().cast(),
            c"%s".as_ptr().cast(),
            small.as_mut_ptr(),
            4usize,
        )
    };
    assert_eq!((r, small[0]), (0, 0));
    let r = unsafe {
        ours_sscanf_s(
            c"word".as_ptr().cast(),
            c"%s".as_ptr().cast(),
            small.as_mut_ptr(),
            5usize,
        )
    };
    assert_eq!((r, &small[..5]), (1, &b"word\0"[..]));
    let r = unsafe {
        ours_sscanf_s(
            c"abc".as_ptr().cast(),
            c"%3c".as_ptr().cast(),
            small.as_mut_ptr(),
            2usize,
        )
    };
    assert_eq!(r, 0);
}

/// wcsftime against the host's wcsftime (4-byte wchar_t) on the same time and format.
#[test]
fn wcsftime_matches_host() {
    unsafe extern "C" {
        fn wcsftime(s: *mut u32, max: usize, f: *const u32, tm: *const libc::tm) -> usize;
    }
    let t: i64 = 1_700_000_000;
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    unsafe { libc::gmtime_r(&t, &mut tm) };
    for (fmt, max) in [
        ("%Y-%m-%d %H:%M:%S %a %b %j", 64),
        ("[%A]", 64),
        ("%Y%m%d", 5),
        ("", 4),
    ] {
        let f16: Vec<u16> = fmt.encode_utf16().chain([0]).collect();
        let f32_: Vec<u32> = fmt.chars().map(|c| c as u32).chain([0]).collect();
        let mut a = [0x5555u16; 64];
        let mut b = [0x5555u32; 64];
        let r1 = unsafe { crate::wchar::wcsftime(a.as_mut_ptr(), max, f16.as_ptr(), &tm) };
        let r2 = unsafe { wcsftime(b.as_mut_ptr(), max, f32_.as_ptr(), &tm) };
        assert_eq!(r1, r2, "{fmt:?}");
        if r1 > 0 {
            let wa: Vec<u32> = a[..=r1].iter().map(|&c| u32::from(c)).collect();
            assert_eq!(wa, b[..=r2].to_vec(), "{fmt:?}");
        }
    }
}

/// scanf and getchar on the standard input (descriptor 0 replaced by a pipe), compared
/// with the host's scanf on the same text through a second pipe.
#[test]
fn scanf_reads_stdin() {
    unsafe extern "C" {
        #[link_name = trampoline_str!("scanf")]
        fn ours_scanf(f: *const u8, ...) -> i32;
    }
    let text = b"  42 words 2.5e1\nrest of line\n";
    let feed = || unsafe {
        let mut p = [0i32; 2];
        assert_eq!(libc::pipe(p.as_mut_ptr()), 0);
        libc::write(p[1], text.as_ptr().cast(), text.len());
        libc::close(p[1]);
        p[0]
    };
    let saved = unsafe { libc::dup(0) };
    let (mut i1, mut s1, mut d1) = (0i32, [0u8; 16], 0f64);
    let (mut i2, mut s2, mut d2) = (0i32, [0u8; 16], 0f64);
    let fmt = c"%d %15s %lf";
    unsafe {
        let r = feed();
        libc::dup2(r, 0);
        libc::close(r);
        let r1 = ours_scanf(fmt.as_ptr().cast(), &mut i1, s1.as_mut_ptr(), &mut d1);
        let next1: Vec<i32> = (0..3).map(|_| crate::stdio::getchar()).collect();
        let r = feed();
        libc::dup2(r, 0);
        libc::close(r);
        let r2 = libc::scanf(fmt.as_ptr(), &mut i2, s2.as_mut_ptr(), &mut d2);
        let next2: Vec<i32> = (0..3).map(|_| libc::getchar()).collect();
        libc::dup2(saved, 0);
        libc::close(saved);
        assert_eq!((r1, i1, s1, d1, next1), (r2, i2, s2, d2, next2));
        assert_eq!(r1, 3);
    }
}

/// Wide Annex K: swprintf_s/snwprintf_s format as the host's swprintf where nothing is
/// broken; too small a buffer, `%n` and NULL `%ls` are violations; wcscpy_s/wcscat_s copy
/// as wcscpy/wcscat or clear the destination.
#[test]
fn wide_annex_k() {
    use crate::wchar as w;
    unsafe extern "C" {
        #[link_name = trampoline_str!("swprintf_s")]
        fn ours_swprintf_s(b: *mut u16, n: usize, f: *const u16, ...) -> i32;
        #[link_name = trampoline_str!("snwprintf_s")]
        fn ours_snwprintf_s(b: *mut u16, n: usize, f: *const u16, ...) -> i32;
        #[link_name = trampoline_str!("swscanf_s")]
        fn ours_swscanf_s(s: *const u16, f: *const u16, ...) -> i32;
        fn swprintf(b: *mut u32, n: usize, f: *const u32, ...) -> i32;
    }
    let w16 = |s: &str| -> Vec<u16> { s.encode_utf16().chain([0]).collect() };
    let w32 = |s: &str| -> Vec<u32> { s.chars().map(|c| c as u32).chain([0]).collect() };
    let fmt = "%ls=%04d|%-5s|%2$x";
    let (t16, t32) = (w16("k\u{e9}y"), w32("k\u{e9}y"));
    let mut a = [0x5555u16; 32];
    let mut b = [0x5555u32; 32];
    unsafe {
        let f16 = w16("%1$ls=%2$04d|%3$-5s|%2$x");
        let f32_ = w32("%1$ls=%2$04d|%3$-5s|%2$x");
        let r1 = ours_swprintf_s(
            a.as_mut_ptr(),
            32,
            f16.as_ptr(),
            t16.as_ptr(),
            42,
            c"ab".as_ptr(),
        );
        let r2 = swprintf(
            b.as_mut_ptr(),
            32,
            f32_.as_ptr(),
            t32.as_ptr(),
            42,
            c"ab".as_ptr(),
        );
        assert_eq!(r1, r2, "{fmt}");
        let wa: Vec<u32> = a[..=r1 as usize].iter().map(|&c| u32::from(c)).collect();
        assert_eq!(wa, b[..=r2 as usize].to_vec());
        // Too small: swprintf_s clears and fails; snwprintf_s truncates.
        let f = w16("%s");
        assert!(ours_swprintf_s(a.as_mut_ptr(), 3, f.as_ptr(), c"abcd".as_ptr()) < 0);
        assert_eq!(a[0], 0);
        assert_eq!(
            ours_snwprintf_s(a.as_mut_ptr(), 3, f.as_ptr(), c"abcd".as_ptr()),
            4
        );
        assert_eq!(&a[..3], &[97, 98, 0]);
        // %n and NULL %ls.
        let mut n = -5i32;
        assert!(ours_swprintf_s(a.as_mut_ptr(), 8, w16("x%n").as_ptr(), &mut n) < 0);
        assert_eq!(n, -5);
        assert!(
            ours_swprintf_s(
                a.as_mut_ptr(),
                8,
                w16("%ls").as_ptr(),
                std::ptr::null::<u16>()
            ) < 0
        );
        // wcscpy_s / wcscat_s.
        let mut d = [0x5555u16; 8];
        assert_eq!(w::wcscpy_s(d.as_mut_ptr(), 8, w16("abc").as_ptr()), 0);
        assert_eq!(w::wcscat_s(d.as_mut_ptr(), 8, w16("de").as_ptr()), 0);
        assert_eq!(&d[..6], &w16("abcde")[..]);
        assert_ne!(w::wcscat_s(d.as_mut_ptr(), 8, w16("xyz").as_ptr()), 0);
        assert_eq!(d[0], 0);
        assert_eq!(
            w::wcsncpy_s(d.as_mut_ptr(), 8, w16("abcdefgh").as_ptr(), 3),
            0
        );
        assert_eq!(&d[..4], &w16("abc")[..]);
        assert_eq!(w::wcsnlen_s(d.as_ptr(), 2), 2);
        // swscanf_s: counts after %ls/%s; too long is a matching failure.
        let mut ws = [0x5555u16; 8];
        let mut nb = [0xAAu8; 8];
        let mut v = 0i32;
        let r = ours_swscanf_s(
            w16("12 word xy").as_ptr(),
            w16("%d %ls %s").as_ptr(),
            &mut v,
            ws.as_mut_ptr(),
            8usize,
            nb.as_mut_ptr(),
            2usize,
        );
        assert_eq!((r, v, &ws[..5], nb[0]), (2, 12, &w16("word")[..], 0));
    }
}
