//! string.h, stdlib.h conversions and ctype.h: the host C library's implementations (the
//! same ABI; the same results in the C locale a console program runs in).

use aps5_prx_macros::nid;
use libc::{c_char, c_int, c_long, c_void, size_t};

/// Forwards a NID export to the host function of the same signature.
macro_rules! forward {
    ($($name:literal => fn $f:ident($($a:ident: $t:ty),*) -> $r:ty = $host:path;)*) => {$(
        #[doc = concat!("`", $name, "` (host implementation).")]
        #[nid($name)]
        pub unsafe extern "C" fn $f($($a: $t),*) -> $r {
            unsafe { $host($($a),*) }
        }
    )*};
}

forward! {
    "memcpy" => fn memcpy(d: *mut c_void, s: *const c_void, n: size_t) -> *mut c_void = libc::memcpy;
    "memmove" => fn memmove(d: *mut c_void, s: *const c_void, n: size_t) -> *mut c_void = libc::memmove;
    "memset" => fn memset(d: *mut c_void, c: c_int, n: size_t) -> *mut c_void = libc::memset;
    "memcmp" => fn memcmp(a: *const c_void, b: *const c_void, n: size_t) -> c_int = libc::memcmp;
    "memchr" => fn memchr(a: *const c_void, c: c_int, n: size_t) -> *mut c_void = libc::memchr;
    "strlen" => fn strlen(s: *const c_char) -> size_t = libc::strlen;
    "strnlen" => fn strnlen(s: *const c_char, n: size_t) -> size_t = libc::strnlen;
    "strcpy" => fn strcpy(d: *mut c_char, s: *const c_char) -> *mut c_char = libc::strcpy;
    "strncpy" => fn strncpy(d: *mut c_char, s: *const c_char, n: size_t) -> *mut c_char = libc::strncpy;
    "strcat" => fn strcat(d: *mut c_char, s: *const c_char) -> *mut c_char = libc::strcat;
    "strncat" => fn strncat(d: *mut c_char, s: *const c_char, n: size_t) -> *mut c_char = libc::strncat;
    "strcmp" => fn strcmp(a: *const c_char, b: *const c_char) -> c_int = libc::strcmp;
    "strncmp" => fn strncmp(a: *const c_char, b: *const c_char, n: size_t) -> c_int = libc::strncmp;
    "strcasecmp" => fn strcasecmp(a: *const c_char, b: *const c_char) -> c_int = libc::strcasecmp;
    "strncasecmp" => fn strncasecmp(a: *const c_char, b: *const c_char, n: size_t) -> c_int = libc::strncasecmp;
    "strchr" => fn strchr(s: *const c_char, c: c_int) -> *mut c_char = libc::strchr;
    "strrchr" => fn strrchr(s: *const c_char, c: c_int) -> *mut c_char = libc::strrchr;
    "strstr" => fn strstr(a: *const c_char, b: *const c_char) -> *mut c_char = libc::strstr;
    "strpbrk" => fn strpbrk(a: *const c_char, b: *const c_char) -> *mut c_char = libc::strpbrk;
    "strspn" => fn strspn(a: *const c_char, b: *const c_char) -> size_t = libc::strspn;
    "strcspn" => fn strcspn(a: *const c_char, b: *const c_char) -> size_t = libc::strcspn;
    "strdup" => fn strdup(s: *const c_char) -> *mut c_char = libc::strdup;
    "strndup" => fn strndup(s: *const c_char, n: size_t) -> *mut c_char = libc::strndup;
    "strtok_r" => fn strtok_r(s: *mut c_char, d: *const c_char, save: *mut *mut c_char) -> *mut c_char = libc::strtok_r;
    "strtol" => fn strtol(s: *const c_char, e: *mut *mut c_char, b: c_int) -> c_long = libc::strtol;
    "strtoul" => fn strtoul(s: *const c_char, e: *mut *mut c_char, b: c_int) -> libc::c_ulong = libc::strtoul;
    "strtoll" => fn strtoll(s: *const c_char, e: *mut *mut c_char, b: c_int) -> libc::c_longlong = libc::strtoll;
    "strtoull" => fn strtoull(s: *const c_char, e: *mut *mut c_char, b: c_int) -> libc::c_ulonglong = libc::strtoull;
    "strtod" => fn strtod(s: *const c_char, e: *mut *mut c_char) -> f64 = libc::strtod;
    "strtof" => fn strtof(s: *const c_char, e: *mut *mut c_char) -> f32 = libc::strtof;
    "atoi" => fn atoi(s: *const c_char) -> c_int = libc::atoi;
    "atol" => fn atol(s: *const c_char) -> c_long = libc::atol;
    "atof" => fn atof(s: *const c_char) -> f64 = libc::atof;
    "abs" => fn abs(v: c_int) -> c_int = libc::abs;
    "labs" => fn labs(v: c_long) -> c_long = libc::labs;
    "toupper" => fn toupper(c: c_int) -> c_int = libc::toupper;
    "tolower" => fn tolower(c: c_int) -> c_int = libc::tolower;
    "isalpha" => fn isalpha(c: c_int) -> c_int = libc::isalpha;
    "isdigit" => fn isdigit(c: c_int) -> c_int = libc::isdigit;
    "isalnum" => fn isalnum(c: c_int) -> c_int = libc::isalnum;
    "isspace" => fn isspace(c: c_int) -> c_int = libc::isspace;
    "isupper" => fn isupper(c: c_int) -> c_int = libc::isupper;
    "islower" => fn islower(c: c_int) -> c_int = libc::islower;
    "isxdigit" => fn isxdigit(c: c_int) -> c_int = libc::isxdigit;
    "isprint" => fn isprint(c: c_int) -> c_int = libc::isprint;
    "ispunct" => fn ispunct(c: c_int) -> c_int = libc::ispunct;
    "qsort" => fn qsort(b: *mut c_void, n: size_t, w: size_t, f: Option<unsafe extern "C" fn(*const c_void, *const c_void) -> c_int>) -> () = libc::qsort;
    "bsearch" => fn bsearch(k: *const c_void, b: *const c_void, n: size_t, w: size_t, f: Option<unsafe extern "C" fn(*const c_void, *const c_void) -> c_int>) -> *mut c_void = libc::bsearch;
}

/// `strtok`: FreeBSD keeps one static position; so does this (shared by all threads).
#[nid("strtok")]
pub unsafe extern "C" fn strtok(s: *mut c_char, d: *const c_char) -> *mut c_char {
    static SAVE: std::sync::atomic::AtomicPtr<c_char> =
        std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
    let mut save = SAVE.load(std::sync::atomic::Ordering::Relaxed);
    let r = unsafe { libc::strtok_r(s, d, &mut save) };
    SAVE.store(save, std::sync::atomic::Ordering::Relaxed);
    r
}

/// `strerror` (FreeBSD numbering; the messages of values 1-34 agree with the host's).
#[nid("strerror")]
pub extern "C" fn strerror(e: c_int) -> *mut c_char {
    unsafe { libc::strerror(e) }
}
