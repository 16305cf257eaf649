//! Exports that forward to the host C library, and the one place the host's errno is carried
//! over to the guest's.
//!
//! A forwarded function sets the *host* thread's errno (glibc's `__errno_location()`), but the
//! program reads its own errno (libkernel's `__error()`, FreeBSD numbering). So every
//! forwarded function that can set errno is declared `errno` in its [`forward!`] table: its
//! export clears the host errno, calls the host function and, when the host set errno, stores
//! the FreeBSD value in the guest's (C semantics: errno is set on failure, never cleared).
//! Functions that cannot set errno (string.h searches, ctype, ...) stay plain forwards, which
//! compile to one tail jump.
//!
//! Each `forward!` table also emits `FORWARDED`, the list of its exports with their class,
//! which the tests enumerate (see `tests::forwarded_errno_class`).

/// One host-forwarded export: its symbol name, its Rust signature and whether it carries
/// the host's errno to the guest.
#[derive(Debug, Clone, Copy)]
pub struct Forwarded {
    pub name: &'static str,
    pub signature: &'static str,
    pub errno: bool,
    /// The export itself (for the tests, which call it).
    pub export: *const (),
}

/// Runs a host C library call and carries the errno it sets over to the guest, translated
/// to FreeBSD numbering. The guest's errno is untouched when the call sets none.
#[inline(always)]
pub fn carry_errno<R>(call: impl FnOnce() -> R) -> R {
    let host = unsafe { libc::__errno_location() };
    unsafe { host.write_volatile(0) };
    let r = call();
    let e = unsafe { host.read_volatile() };
    if e != 0 {
        crate::kernel::set_errno(aps5_prx_abi::errno::from_host(e));
    }
    r
}

/// Exports each `"name" => fn f(args) -> R = host_fn;` under the NID of `name`, calling
/// `host_fn` with the same arguments; a line starting with `errno` goes through
/// [`carry_errno`]. Emits `pub const FORWARDED: &[Forwarded]` for the table.
macro_rules! forward {
    ($($($class:ident)? $name:literal => fn $f:ident($($a:ident: $t:ty),*) -> $r:ty = $host:path;)*) => {
        $( forward!(@one [$($class)?] $name, $f, ($($a: $t),*), $r, $host); )*
        /// This table's host-forwarded exports (see `crate::forward`).
        pub const FORWARDED: &[$crate::forward::Forwarded] = &[$(
            $crate::forward::Forwarded {
                name: $name,
                signature: stringify!(($($t),*) -> $r),
                errno: forward!(@is_errno $($class)?),
                export: $f as *const (),
            }
        ),*];
    };
    (@is_errno errno) => { true };
    (@is_errno) => { false };
    (@one [errno] $name:literal, $f:ident, ($($a:ident: $t:ty),*), $r:ty, $host:path) => {
        #[doc = concat!("`", $name, "` (host implementation; its errno reaches the guest).")]
        #[aps5_prx_macros::nid($name)]
        pub unsafe extern "C" fn $f($($a: $t),*) -> $r {
            // Through an opaque pointer: LLVM takes some of these (atoi, atof...) for
            // functions that leave errno alone, and would read back the 0 stored before.
            let host: unsafe extern "C" fn($($t),*) -> $r = ::std::hint::black_box($host);
            $crate::forward::carry_errno(|| unsafe { host($($a),*) })
        }
    };
    (@one [] $name:literal, $f:ident, ($($a:ident: $t:ty),*), $r:ty, $host:path) => {
        #[doc = concat!("`", $name, "` (host implementation; sets no errno).")]
        #[aps5_prx_macros::nid($name)]
        pub unsafe extern "C" fn $f($($a: $t),*) -> $r {
            unsafe { $host($($a),*) }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::Forwarded;

    /// Every `forward!` table of the crate.
    fn all() -> Vec<(&'static str, &'static Forwarded)> {
        let tables: [(&str, &[Forwarded]); 5] = [
            ("lib", crate::FORWARDED),
            ("strings", crate::strings::FORWARDED),
            ("math", crate::math::FORWARDED),
            ("misc", crate::misc::FORWARDED),
            ("extra", crate::extra::FORWARDED),
        ];
        tables
            .into_iter()
            .flat_map(|(m, t)| t.iter().map(move |f| (m, f)))
            .collect()
    }

    /// Plain forwards outside math.h: C and POSIX define no errno for these (memory and
    /// string searches, ctype, getenv, free, time with a valid pointer, strftime, ...). A new
    /// plain forward must be added here, after checking its manual page, or declared `errno`.
    const NO_ERRNO: &[&str] = &[
        "free",
        "posix_memalign",
        "malloc_usable_size",
        "time",
        "getenv",
        "memcpy",
        "memmove",
        "memset",
        "memcmp",
        "bcmp",
        "memchr",
        "strlen",
        "strnlen",
        "strcpy",
        "strncpy",
        "strcat",
        "strncat",
        "strcmp",
        "strncmp",
        "strcasecmp",
        "strncasecmp",
        "strchr",
        "strrchr",
        "strstr",
        "strpbrk",
        "strspn",
        "strcspn",
        "strtok_r",
        "abs",
        "labs",
        "toupper",
        "tolower",
        "isalpha",
        "isdigit",
        "isalnum",
        "isspace",
        "isupper",
        "islower",
        "isxdigit",
        "isprint",
        "ispunct",
        "qsort",
        "bsearch",
        "strcoll",
        "iscntrl",
        "isgraph",
        "strftime",
    ];

    /// Special inputs that make glibc's math functions report domain, pole and range errors.
    const D: &[f64] = &[
        0.0,
        -0.0,
        1.0,
        -1.0,
        2.0,
        -2.0,
        0.5,
        1e308,
        -1e308,
        1.7e308,
        1e-308,
        4.9e-324,
        1000.0,
        -1000.0,
        1e19,
        -1e19,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    const F: &[f32] = &[
        0.0,
        -0.0,
        1.0,
        -1.0,
        2.0,
        -2.0,
        0.5,
        1e38,
        -1e38,
        3e38,
        1e-38,
        1e-45,
        100.0,
        -100.0,
        1e19,
        -1e19,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ];
    const E: &[i32] = &[0, 1, -1, 100_000, -100_000];

    fn host_fn(name: &str) -> *const () {
        let c = std::ffi::CString::new(name).unwrap();
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c.as_ptr()) };
        assert!(!p.is_null(), "host libm has no {name}");
        p as *const ()
    }

    /// Calls F (an export or the host function, signature SIG) on every special input and
    /// returns the errno each call set (the host's for the host function, the guest's for the
    /// export), as one list.
    fn probe(f: *const (), sig: &str, guest: bool) -> Vec<i32> {
        use std::mem::transmute as t;
        let mut out = Vec::new();
        let mut call = |c: &mut dyn FnMut()| {
            unsafe { *libc::__errno_location() = 0 };
            crate::kernel::set_errno(0);
            c();
            out.push(if guest {
                unsafe { *crate::kernel::errno_ptr() }
            } else {
                aps5_prx_abi::errno::from_host(unsafe { *libc::__errno_location() })
            });
        };
        unsafe {
            match sig {
                "(f64) -> f64" => D.iter().for_each(|&x| {
                    call(&mut || {
                        std::hint::black_box(t::<*const (), extern "C" fn(f64) -> f64>(f)(x));
                    })
                }),
                "(f32) -> f32" => F.iter().for_each(|&x| {
                    call(&mut || {
                        std::hint::black_box(t::<*const (), extern "C" fn(f32) -> f32>(f)(x));
                    })
                }),
                "(f64) -> i64" => D.iter().for_each(|&x| {
                    call(&mut || {
                        std::hint::black_box(t::<*const (), extern "C" fn(f64) -> i64>(f)(x));
                    })
                }),
                "(f32) -> i64" => F.iter().for_each(|&x| {
                    call(&mut || {
                        std::hint::black_box(t::<*const (), extern "C" fn(f32) -> i64>(f)(x));
                    })
                }),
                "(f64, f64) -> f64" => D.iter().for_each(|&x| {
                    D.iter().for_each(|&y| {
                        call(&mut || {
                            std::hint::black_box(
                                t::<*const (), extern "C" fn(f64, f64) -> f64>(f)(x, y),
                            );
                        })
                    })
                }),
                "(f32, f32) -> f32" => F.iter().for_each(|&x| {
                    F.iter().for_each(|&y| {
                        call(&mut || {
                            std::hint::black_box(
                                t::<*const (), extern "C" fn(f32, f32) -> f32>(f)(x, y),
                            );
                        })
                    })
                }),
                "(f64, i32) -> f64" => D.iter().for_each(|&x| {
                    E.iter().for_each(|&y| {
                        call(&mut || {
                            std::hint::black_box(
                                t::<*const (), extern "C" fn(f64, i32) -> f64>(f)(x, y),
                            );
                        })
                    })
                }),
                "(f32, i32) -> f32" => F.iter().for_each(|&x| {
                    E.iter().for_each(|&y| {
                        call(&mut || {
                            std::hint::black_box(
                                t::<*const (), extern "C" fn(f32, i32) -> f32>(f)(x, y),
                            );
                        })
                    })
                }),
                "(f64, *mut i32) -> f64" => D.iter().for_each(|&x| {
                    let mut e = 0;
                    call(&mut || {
                        std::hint::black_box(t::<*const (), extern "C" fn(f64, *mut i32) -> f64>(
                            f,
                        )(x, &mut e));
                    })
                }),
                "(f32, *mut i32) -> f32" => F.iter().for_each(|&x| {
                    let mut e = 0;
                    call(&mut || {
                        std::hint::black_box(t::<*const (), extern "C" fn(f32, *mut i32) -> f32>(
                            f,
                        )(x, &mut e));
                    })
                }),
                "(f64, *mut f64) -> f64" => D.iter().for_each(|&x| {
                    let mut i = 0.0;
                    call(&mut || {
                        std::hint::black_box(t::<*const (), extern "C" fn(f64, *mut f64) -> f64>(
                            f,
                        )(x, &mut i));
                    })
                }),
                "(f32, *mut f32) -> f32" => F.iter().for_each(|&x| {
                    let mut i = 0.0;
                    call(&mut || {
                        std::hint::black_box(t::<*const (), extern "C" fn(f32, *mut f32) -> f32>(
                            f,
                        )(x, &mut i));
                    })
                }),
                other => panic!("no math probe for the signature {other}"),
            }
        }
        out
    }

    /// math.h, against the host libm itself: a function is `errno` exactly when glibc sets
    /// errno for one of the special inputs, and its export then leaves the guest the same
    /// errno (FreeBSD numbering) as the host function leaves the host, input by input.
    #[test]
    fn math_errno_class_and_values_match_host_libm() {
        let mut bad = Vec::new();
        let mut n = 0;
        for (_, f) in all().into_iter().filter(|(m, _)| *m == "math") {
            let host = probe(host_fn(f.name), f.signature, false);
            let sets = host.iter().any(|&e| e != 0);
            if sets != f.errno {
                bad.push(format!(
                    "{}: glibc {} errno for the special inputs, the table says {}",
                    f.name,
                    if sets { "sets" } else { "never sets" },
                    if f.errno { "errno" } else { "plain" }
                ));
                continue;
            }
            let guest = probe(f.export, f.signature, true);
            if guest != host {
                bad.push(format!(
                    "{}: guest errno {guest:?}, host errno {host:?}",
                    f.name
                ));
            }
            n += host.len();
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
        assert!(n > 1000, "only {n} math calls probed");
    }

    /// Outside math.h every plain forward is a function without errno (NO_ERRNO), and every
    /// `errno` forward is exercised by the errno_host fixture, which compares its errno with
    /// the host C library's (tests/fixtures/errno_host, native oracle), unless the console
    /// does not export it (then the unit test below covers it).
    #[test]
    fn forwarded_errno_class() {
        let fixture = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/errno_host/main.c"),
        )
        .unwrap();
        let mut bad = Vec::new();
        let mut names = std::collections::BTreeSet::new();
        for (module, f) in all() {
            assert!(names.insert(f.name), "{} forwarded twice", f.name);
            if !f.errno {
                if module != "math" && !NO_ERRNO.contains(&f.name) {
                    bad.push(format!(
                        "{module}::{}: a plain forward that is not known to set no errno \
                         (declare it `errno` or add it to NO_ERRNO)",
                        f.name
                    ));
                }
                continue;
            }
            let called = fixture.contains(&format!(", {})(", f.name))
                || fixture.contains(&format!("({}, ", f.name));
            if !called && !CONSOLE_LACKS.contains(&f.name) {
                bad.push(format!(
                    "{module}::{}: sets errno but tests/fixtures/errno_host never calls it",
                    f.name
                ));
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    /// errno forwards the console's libc does not export (no program imports them, so the
    /// fixture cannot call them): checked here against the host.
    const CONSOLE_LACKS: &[&str] = &["gmtime_r", "localtime_r", "asctime_r", "ctime_r"];

    #[test]
    fn errno_of_non_console_forwards_matches_host() {
        let huge: i64 = i64::MAX;
        let mut tm_store: libc::tm = unsafe { std::mem::zeroed() };
        let mut buf_store = [0 as libc::c_char; 64];
        let tm: *mut libc::tm = &mut tm_store;
        let buf = buf_store.as_mut_ptr();
        let check = |what: &str, ours: &mut dyn FnMut() -> bool, host: &mut dyn FnMut() -> bool| {
            crate::kernel::set_errno(0);
            let a = ours();
            let ge = unsafe { *crate::kernel::errno_ptr() };
            unsafe { *libc::__errno_location() = 0 };
            let b = host();
            let he = aps5_prx_abi::errno::from_host(unsafe { *libc::__errno_location() });
            assert_eq!(
                (a, ge),
                (b, he),
                "{what}: (NULL result, errno) ours vs host"
            );
            assert_ne!(he, 0, "{what}: the input does not make the host fail");
        };
        unsafe {
            check(
                "gmtime_r",
                &mut || crate::misc::gmtime_r(&huge, tm).is_null(),
                &mut || libc::gmtime_r(&huge, tm).is_null(),
            );
            check(
                "localtime_r",
                &mut || crate::misc::localtime_r(&huge, tm).is_null(),
                &mut || libc::localtime_r(&huge, tm).is_null(),
            );
            check(
                "ctime_r",
                &mut || crate::extra::ctime_r(&huge, buf).is_null(),
                &mut || libc::ctime_r(&huge, buf).is_null(),
            );
            *tm = std::mem::zeroed();
            (*tm).tm_year = i32::MAX;
            (*tm).tm_mday = 1;
            check(
                "asctime_r",
                &mut || crate::extra::asctime_r(tm, buf).is_null(),
                &mut || libc::asctime_r(tm, buf).is_null(),
            );
        }
        // The wide conversions (not a forward! table: they convert the text first) carry
        // errno the same way.
        let w: Vec<u16> = "99999999999999999999\0".encode_utf16().collect();
        crate::kernel::set_errno(0);
        let v = unsafe { crate::wchar::wcstol(w.as_ptr().cast(), std::ptr::null_mut(), 10) };
        assert_eq!((v, unsafe { *crate::kernel::errno_ptr() }), (i64::MAX, 34));
    }

    /// A successful call leaves the guest's errno as it was, and a failing one sets the
    /// FreeBSD value even where Linux numbers it differently (EOVERFLOW: 75 vs 84).
    #[test]
    fn errno_is_kept_on_success_and_translated_on_failure() {
        crate::kernel::set_errno(4);
        let v = unsafe { crate::strings::strtol(c"42".as_ptr(), std::ptr::null_mut(), 10) };
        assert_eq!((v, unsafe { *crate::kernel::errno_ptr() }), (42, 4));
        let huge: i64 = i64::MAX;
        crate::kernel::set_errno(0);
        assert!(unsafe { crate::misc::gmtime(&huge) }.is_null());
        assert_eq!(unsafe { *crate::kernel::errno_ptr() }, 84);
        // LLVM takes atoi/atol/atoll/atof for functions that never write errno; glibc's do.
        let big = c"99999999999999999999".as_ptr();
        let calls: [(&str, &dyn Fn()); 4] = [
            ("atoi", &|| {
                std::hint::black_box(unsafe { crate::strings::atoi(big) });
            }),
            ("atol", &|| {
                std::hint::black_box(unsafe { crate::strings::atol(big) });
            }),
            ("atoll", &|| {
                std::hint::black_box(unsafe { crate::misc::atoll(big) });
            }),
            ("atof", &|| {
                std::hint::black_box(unsafe { crate::strings::atof(c"1e999".as_ptr()) });
            }),
        ];
        for (name, call) in calls {
            crate::kernel::set_errno(0);
            call();
            assert_eq!(unsafe { *crate::kernel::errno_ptr() }, 34, "{name}: ERANGE");
        }
    }
}
