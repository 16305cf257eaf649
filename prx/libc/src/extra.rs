//! Small FreeBSD libc functions: `reallocf`, `strlcpy`/`strlcat`, `asctime`/`ctime` (and
//! their `_r` forms), and `getopt` with its global variables (`optind`, `optarg`,
//! `opterr`, `optopt`, `optreset`) as real data objects.

use std::ffi::c_char;

use aps5_prx_macros::nid;

/// `reallocf`: like `realloc`, but frees the old block when growing fails.
#[nid("reallocf")]
pub unsafe extern "C" fn reallocf(p: *mut u8, n: usize) -> *mut u8 {
    let q = unsafe { libc::realloc(p.cast(), n) }.cast::<u8>();
    if q.is_null() && !p.is_null() && n != 0 {
        unsafe { libc::free(p.cast()) };
    }
    q
}

/// `strlcpy`: copies at most `size - 1` bytes, always terminates (if `size` > 0); returns
/// `strlen(src)`.
#[nid("strlcpy")]
pub unsafe extern "C" fn strlcpy(dst: *mut c_char, src: *const c_char, size: usize) -> usize {
    let len = unsafe { libc::strlen(src) };
    if size > 0 {
        let n = len.min(size - 1);
        unsafe {
            std::ptr::copy(src, dst, n);
            *dst.add(n) = 0;
        }
    }
    len
}

/// `strlcat`: appends to a string in a `size`-byte buffer; returns the length it tried
/// to create (`strnlen(dst, size) + strlen(src)`).
#[nid("strlcat")]
pub unsafe extern "C" fn strlcat(dst: *mut c_char, src: *const c_char, size: usize) -> usize {
    let dlen = unsafe { libc::strnlen(dst, size) };
    if dlen == size {
        return size + unsafe { libc::strlen(src) };
    }
    dlen + unsafe { strlcpy(dst.add(dlen), src, size - dlen) }
}

// The libc crate binds only the `_r` forms.
unsafe extern "C" {
    #[link_name = "asctime"]
    fn host_asctime(tm: *const libc::tm) -> *mut c_char;
    #[link_name = "ctime"]
    fn host_ctime(t: *const i64) -> *mut c_char;
}

// FreeBSD's `struct tm` has glibc's layout and both print the C standard's asctime
// format ("Sun Sep 16 01:03:52 1973\n").

// glibc sets EOVERFLOW when the year does not fit the text.
forward! {
    errno "asctime" => fn asctime(tm: *const libc::tm) -> *mut c_char = host_asctime;
    errno "asctime_r" => fn asctime_r(tm: *const libc::tm, buf: *mut c_char) -> *mut c_char = libc::asctime_r;
    errno "ctime" => fn ctime(t: *const i64) -> *mut c_char = host_ctime;
    errno "ctime_r" => fn ctime_r(t: *const i64, buf: *mut c_char) -> *mut c_char = libc::ctime_r;
}

/// `optind`: index of the next argument `getopt` looks at.
#[nid("optind")]
pub static mut OPTIND: i32 = 1;
/// `opterr`: print diagnostics (default on).
#[nid("opterr")]
pub static mut OPTERR: i32 = 1;
/// `optopt`: the option character last examined.
#[nid("optopt")]
pub static mut OPTOPT: i32 = b'?' as i32;
/// `optreset`: set to 1 to restart scanning (BSD extension).
#[nid("optreset")]
pub static mut OPTRESET: i32 = 0;
/// `optarg`: the argument of the last option that takes one.
#[nid("optarg")]
pub static mut OPTARG: *mut c_char = std::ptr::null_mut();

/// Position inside the current argument (`-abc`: after `a`, `bc`); null when `getopt`
/// must move to the next argument. Like FreeBSD's, process-wide and not thread-safe.
static mut PLACE: *mut c_char = std::ptr::null_mut();

fn warn(argv0: *const c_char, msg: &str, c: i32) {
    let mut line = Vec::new();
    if !argv0.is_null() {
        let name = unsafe { std::ffi::CStr::from_ptr(argv0) }.to_bytes();
        line.extend_from_slice(name.rsplit(|&b| b == b'/').next().unwrap_or(name));
    }
    line.extend_from_slice(format!(": {msg} -- ").as_bytes());
    line.push(c as u8);
    line.push(b'\n');
    unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
}

/// `getopt(argc, argv, optstring)` with FreeBSD's rules: no argument permutation (the
/// first non-option ends the scan), `--` ends it and is skipped, a lone `-` ends it unless
/// `-` is in `optstring`, a leading `:` in `optstring` selects the `:` return for a missing
/// argument and silences diagnostics, `optreset` restarts.
#[nid("getopt")]
pub unsafe extern "C" fn getopt(argc: i32, argv: *const *mut c_char, opts: *const c_char) -> i32 {
    // Access to the globals goes through raw pointers: they are the guest's variables.
    unsafe {
        let ind = &raw mut OPTIND;
        let place = &raw mut PLACE;
        if opts.is_null() || argv.is_null() {
            return -1;
        }
        let opts = std::ffi::CStr::from_ptr(opts).to_bytes();
        let colon = opts.first() == Some(&b':');
        let argv0 = if argc > 0 {
            *argv
        } else {
            std::ptr::null_mut()
        };
        if OPTRESET != 0 || (*place).is_null() || **place == 0 {
            OPTRESET = 0;
            if *ind < 0 || *ind >= argc {
                *place = std::ptr::null_mut();
                return -1;
            }
            let arg = *argv.add(*ind as usize);
            if arg.is_null() || *arg != b'-' as c_char {
                *place = std::ptr::null_mut();
                return -1;
            }
            let c = *arg.add(1) as u8;
            if c == b'-' && *arg.add(2) == 0 {
                *ind += 1;
                *place = std::ptr::null_mut();
                return -1;
            }
            if c == 0 && !opts.contains(&b'-') {
                *place = std::ptr::null_mut();
                return -1;
            }
            *place = arg.add(1);
        }
        // A lone "-" that optstring asks for is the option '-'.
        let c = if **place == 0 { b'-' } else { **place as u8 };
        if **place != 0 {
            *place = (*place).add(1);
        }
        OPTOPT = i32::from(c);
        let spec = opts.iter().position(|&o| o == c).filter(|_| c != b':');
        let Some(i) = spec else {
            if **place == 0 {
                *ind += 1;
            }
            if OPTERR != 0 && !colon {
                warn(argv0, "illegal option", i32::from(c));
            }
            return i32::from(b'?');
        };
        if opts.get(i + 1) != Some(&b':') {
            OPTARG = std::ptr::null_mut();
            if **place == 0 {
                *ind += 1;
            }
            return i32::from(c);
        }
        if **place != 0 {
            // "-ovalue"
            OPTARG = *place;
        } else {
            *ind += 1;
            if *ind >= argc {
                *place = std::ptr::null_mut();
                if colon {
                    return i32::from(b':');
                }
                if OPTERR != 0 {
                    warn(argv0, "option requires an argument", i32::from(c));
                }
                return i32::from(b'?');
            }
            OPTARG = *argv.add(*ind as usize);
        }
        *place = std::ptr::null_mut();
        *ind += 1;
        i32::from(c)
    }
}

/// `getcwd(buf, size)`: the guest working directory, kept by libkernel (`chdir`). A NULL
/// `buf` allocates (`size` bytes, or as many as needed when `size` is 0), as FreeBSD's.
/// Without libkernel (this crate's unit tests) it is `/app0`.
#[nid("getcwd")]
pub unsafe extern "C" fn getcwd(buf: *mut c_char, size: usize) -> *mut c_char {
    static F: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let f = *F.get_or_init(|| {
        let c = std::ffi::CString::new(aps5_prx_macros::nid_str!("__aps5_getcwd")).expect("NID");
        unsafe { libc::dlsym(libc::RTLD_DEFAULT, c.as_ptr()) as usize }
    });
    let mut tmp = [0u8; 1024];
    let len = if f == 0 {
        tmp[..5].copy_from_slice(b"/app0");
        5
    } else {
        let f: extern "C" fn(*mut u8, usize) -> isize = unsafe { std::mem::transmute(f) };
        let n = f(tmp.as_mut_ptr(), tmp.len());
        if n < 0 {
            crate::kernel::set_errno(34);
            return std::ptr::null_mut();
        }
        n as usize
    };
    if !buf.is_null() && size == 0 {
        crate::kernel::set_errno(22);
        return std::ptr::null_mut();
    }
    let need = len + 1;
    let (out, cap) = if buf.is_null() {
        let cap = if size == 0 { need } else { size };
        (unsafe { libc::malloc(cap) }.cast::<c_char>(), cap)
    } else {
        (buf, size)
    };
    if out.is_null() {
        crate::kernel::set_errno(12);
        return out;
    }
    if need > cap {
        if buf.is_null() {
            unsafe { libc::free(out.cast()) };
        }
        crate::kernel::set_errno(34); // ERANGE
        return std::ptr::null_mut();
    }
    unsafe {
        std::ptr::copy_nonoverlapping(tmp.as_ptr().cast(), out, len);
        *out.add(len) = 0;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::{CStr, CString};

    /// One getopt result as compared: the option, `optopt` and the argument.
    unsafe fn record(c: i32, optarg: *const c_char, optopt: i32, opts: &str) -> String {
        let a = if optarg.is_null() || !opts.contains(&format!("{}:", c as u8 as char)) {
            String::new()
        } else {
            unsafe { CStr::from_ptr(optarg) }
                .to_string_lossy()
                .into_owned()
        };
        // optopt is compared only where POSIX defines it (glibc leaves it alone on
        // success; FreeBSD sets it to the option).
        let oo = if c == '?' as i32 || c == ':' as i32 {
            optopt
        } else {
            0
        };
        format!("{}{}{}", c as u8 as char, oo, a)
    }

    fn run(args: &[&str], opts: &str) -> (Vec<String>, i32) {
        let owned: Vec<CString> = args.iter().map(|a| CString::new(*a).unwrap()).collect();
        let mut argv: Vec<*mut c_char> = owned.iter().map(|c| c.as_ptr().cast_mut()).collect();
        argv.push(std::ptr::null_mut());
        let o = CString::new(opts).unwrap();
        let mut out = Vec::new();
        unsafe {
            OPTIND = 1;
            OPTRESET = 1;
            OPTERR = 0;
            loop {
                let c = getopt(args.len() as i32, argv.as_ptr(), o.as_ptr());
                if c == -1 {
                    break;
                }
                out.push(record(c, OPTARG, OPTOPT, opts));
            }
            (out, OPTIND)
        }
    }

    /// The host's getopt in POSIX mode ("+" prefix: no permutation) is the oracle.
    fn host(args: &[&str], opts: &str) -> (Vec<String>, i32) {
        let owned: Vec<CString> = args.iter().map(|a| CString::new(*a).unwrap()).collect();
        let mut argv: Vec<*mut c_char> = owned.iter().map(|c| c.as_ptr().cast_mut()).collect();
        argv.push(std::ptr::null_mut());
        let o = CString::new(format!("+{opts}")).unwrap();
        unsafe extern "C" {
            static mut optind: i32;
            static mut opterr: i32;
            static mut optopt: i32;
            static mut optarg: *mut c_char;
        }
        let mut out = Vec::new();
        unsafe {
            optind = 0; // glibc: full re-initialisation
            opterr = 0;
            loop {
                let c = libc::getopt(args.len() as i32, argv.as_ptr(), o.as_ptr());
                if c == -1 {
                    break;
                }
                out.push(record(c, optarg, optopt, opts));
            }
            (out, optind)
        }
    }

    #[test]
    fn getopt_matches_the_host_in_posix_mode() {
        let cases: &[(&[&str], &str)] = &[
            (&["p", "-a", "-b", "x", "file"], "ab:"),
            (&["p", "-abx", "file"], "ab:"),
            (&["p", "-ab", "x", "--", "-a"], "ab:"),
            (&["p", "file", "-a"], "ab:"),
            (&["p", "-z", "-a"], "ab:"),
            (&["p", "-a", "-b"], "ab:"),
            (&["p", "-a", "-b"], ":ab:"),
            (&["p", "-", "-a"], "ab:"),
            (&["p", "-ca", "-c"], "ac"),
            (&["p", "-:"], "a:"),
            (&["p"], "a"),
        ];
        for (args, opts) in cases {
            assert_eq!(run(args, opts), host(args, opts), "{args:?} {opts}");
        }
    }

    #[test]
    fn strlcpy_and_strlcat_truncate_and_report() {
        let mut buf = [0x55 as c_char; 8];
        unsafe {
            assert_eq!(strlcpy(buf.as_mut_ptr(), c"hello world".as_ptr(), 8), 11);
            assert_eq!(CStr::from_ptr(buf.as_ptr()).to_bytes(), b"hello w");
            assert_eq!(strlcpy(buf.as_mut_ptr(), c"hi".as_ptr(), 8), 2);
            assert_eq!(strlcat(buf.as_mut_ptr(), c" there".as_ptr(), 8), 8);
            assert_eq!(CStr::from_ptr(buf.as_ptr()).to_bytes(), b"hi ther");
            // dst not terminated inside size: size + strlen(src), nothing written.
            assert_eq!(strlcat(buf.as_mut_ptr(), c"abc".as_ptr(), 3), 6);
            assert_eq!(strlcpy(buf.as_mut_ptr(), c"xyz".as_ptr(), 0), 3);
        }
    }

    #[test]
    fn getcwd_sizes() {
        let mut b = [0 as c_char; 8];
        unsafe {
            let p = getcwd(b.as_mut_ptr(), 8);
            assert_eq!(CStr::from_ptr(p).to_bytes(), b"/app0");
            assert!(getcwd(b.as_mut_ptr(), 5).is_null());
            assert_eq!(*crate::kernel::errno_ptr(), 34);
            assert!(getcwd(b.as_mut_ptr(), 0).is_null());
            let m = getcwd(std::ptr::null_mut(), 0);
            assert_eq!(CStr::from_ptr(m).to_bytes(), b"/app0");
            libc::free(m.cast());
        }
    }

    #[test]
    fn asctime_has_the_c_format() {
        let t: i64 = 117_000_000;
        let mut tm: libc::tm = unsafe { std::mem::zeroed() };
        unsafe { libc::gmtime_r(&t, &mut tm) };
        let s = unsafe { CStr::from_ptr(asctime(&tm)) };
        assert_eq!(s.to_bytes(), b"Sun Sep 16 04:00:00 1973\n");
        let mut buf = [0 as c_char; 32];
        let r = unsafe { asctime_r(&tm, buf.as_mut_ptr()) };
        assert_eq!(unsafe { CStr::from_ptr(r) }, s);
        let p = unsafe { reallocf(libc::malloc(16).cast(), 64) };
        assert!(!p.is_null());
        unsafe { libc::free(p.cast()) };
    }
}
