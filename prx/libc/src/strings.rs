//! string.h, stdlib.h conversions and ctype.h: the host C library's implementations (the
//! same ABI; the same results in the C locale a console program runs in).

use aps5_prx_macros::nid;
use libc::{c_char, c_int, c_long, c_void, size_t};

forward! {
    "memcpy" => fn memcpy(d: *mut c_void, s: *const c_void, n: size_t) -> *mut c_void = libc::memcpy;
    "memmove" => fn memmove(d: *mut c_void, s: *const c_void, n: size_t) -> *mut c_void = libc::memmove;
    "memset" => fn memset(d: *mut c_void, c: c_int, n: size_t) -> *mut c_void = libc::memset;
    "memcmp" => fn memcmp(a: *const c_void, b: *const c_void, n: size_t) -> c_int = libc::memcmp;
    "bcmp" => fn bcmp(a: *const c_void, b: *const c_void, n: size_t) -> c_int = libc::memcmp;
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
    errno "strdup" => fn strdup(s: *const c_char) -> *mut c_char = libc::strdup;
    errno "strndup" => fn strndup(s: *const c_char, n: size_t) -> *mut c_char = libc::strndup;
    "strtok_r" => fn strtok_r(s: *mut c_char, d: *const c_char, save: *mut *mut c_char) -> *mut c_char = libc::strtok_r;
    errno "strtol" => fn strtol(s: *const c_char, e: *mut *mut c_char, b: c_int) -> c_long = libc::strtol;
    errno "strtoul" => fn strtoul(s: *const c_char, e: *mut *mut c_char, b: c_int) -> libc::c_ulong = libc::strtoul;
    errno "strtoll" => fn strtoll(s: *const c_char, e: *mut *mut c_char, b: c_int) -> libc::c_longlong = libc::strtoll;
    errno "strtoull" => fn strtoull(s: *const c_char, e: *mut *mut c_char, b: c_int) -> libc::c_ulonglong = libc::strtoull;
    errno "strtod" => fn strtod(s: *const c_char, e: *mut *mut c_char) -> f64 = libc::strtod;
    errno "strtof" => fn strtof(s: *const c_char, e: *mut *mut c_char) -> f32 = libc::strtof;
    errno "atoi" => fn atoi(s: *const c_char) -> c_int = libc::atoi;
    errno "atol" => fn atol(s: *const c_char) -> c_long = libc::atol;
    errno "atof" => fn atof(s: *const c_char) -> f64 = libc::atof;
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

// C11 Annex K bounds-checked functions. A runtime-constraint violation calls the handler
// installed with `set_constraint_handler_s` (none by default: FreeBSD's default has no
// effect) and the function fails as the standard says. Errors: EINVAL for a NULL pointer,
// ERANGE for a bad or too small size; memset_s uses FreeBSD's EINVAL/E2BIG/EOVERFLOW.

/// `RSIZE_MAX` (`SIZE_MAX >> 1`, as FreeBSD).
pub const RSIZE_MAX: usize = usize::MAX >> 1;
const EINVAL: c_int = 22;
const ERANGE: c_int = 34;

static HANDLER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A constraint handler: `(message, pointer, error)`.
pub type ConstraintHandler = unsafe extern "C" fn(*const c_char, *mut c_void, c_int);

/// `set_constraint_handler_s`: installs `h` (NULL: the default, which does nothing) and
/// returns the previous one (NULL if it was the default).
#[nid("set_constraint_handler_s")]
pub extern "C" fn set_constraint_handler_s(
    h: Option<ConstraintHandler>,
) -> Option<ConstraintHandler> {
    let old = HANDLER.swap(
        h.map_or(0, |f| f as usize),
        std::sync::atomic::Ordering::AcqRel,
    );
    (old != 0).then(|| unsafe { std::mem::transmute::<usize, ConstraintHandler>(old) })
}

/// `abort_handler_s`: reports the violation on stderr and aborts.
#[nid("abort_handler_s")]
pub unsafe extern "C" fn abort_handler_s(msg: *const c_char, _p: *mut c_void, _e: c_int) {
    crate::stdio::flush_all();
    let m = if msg.is_null() {
        Vec::new()
    } else {
        unsafe { std::ffi::CStr::from_ptr(msg) }.to_bytes().to_vec()
    };
    let mut line = b"abort_handler_s : ".to_vec();
    line.extend_from_slice(&m);
    line.push(b'\n');
    unsafe {
        libc::write(2, line.as_ptr().cast(), line.len());
        libc::abort();
    }
}

/// `ignore_handler_s`: does nothing.
#[nid("ignore_handler_s")]
pub extern "C" fn ignore_handler_s(_msg: *const c_char, _p: *mut c_void, _e: c_int) {}

/// Reports a runtime-constraint violation to the installed handler; returns `e`.
pub(crate) fn violation(msg: &std::ffi::CStr, e: c_int) -> c_int {
    let h = HANDLER.load(std::sync::atomic::Ordering::Acquire);
    if h != 0 {
        let h: ConstraintHandler = unsafe { std::mem::transmute(h) };
        unsafe { h(msg.as_ptr(), std::ptr::null_mut(), e) };
    }
    e
}

/// `strnlen_s`: 0 for NULL, else `strnlen`.
#[nid("strnlen_s")]
pub unsafe extern "C" fn strnlen_s(s: *const c_char, max: size_t) -> size_t {
    if s.is_null() {
        0
    } else {
        unsafe { libc::strnlen(s, max) }
    }
}

fn overlap(a: *const c_char, alen: usize, b: *const c_char, blen: usize) -> bool {
    let (a, b) = (a as usize, b as usize);
    a < b.saturating_add(blen) && b < a.saturating_add(alen)
}

/// Checks the destination of a string function; on failure clears `s1[0]` when it can.
unsafe fn bad_dest(s1: *mut c_char, s1max: size_t, fname: &std::ffi::CStr) -> Option<c_int> {
    if s1.is_null() {
        return Some(violation(fname, EINVAL));
    }
    if s1max == 0 || s1max > RSIZE_MAX {
        return Some(violation(fname, ERANGE));
    }
    None
}

/// `strcpy_s(s1, s1max, s2)`.
#[nid("strcpy_s")]
pub unsafe extern "C" fn strcpy_s(s1: *mut c_char, s1max: size_t, s2: *const c_char) -> c_int {
    if let Some(e) = unsafe { bad_dest(s1, s1max, c"strcpy_s: bad destination") } {
        return e;
    }
    let fail = |e| {
        unsafe { *s1 = 0 };
        violation(c"strcpy_s: bad source or too small", e)
    };
    if s2.is_null() {
        return fail(EINVAL);
    }
    let n = unsafe { libc::strnlen(s2, s1max) };
    if n >= s1max || overlap(s1, s1max, s2, n + 1) {
        return fail(ERANGE);
    }
    unsafe { std::ptr::copy_nonoverlapping(s2, s1, n + 1) };
    0
}

/// `strncpy_s(s1, s1max, s2, n)`: at most `n` characters, always terminated.
#[nid("strncpy_s")]
pub unsafe extern "C" fn strncpy_s(
    s1: *mut c_char,
    s1max: size_t,
    s2: *const c_char,
    n: size_t,
) -> c_int {
    if let Some(e) = unsafe { bad_dest(s1, s1max, c"strncpy_s: bad destination") } {
        return e;
    }
    let fail = |e| {
        unsafe { *s1 = 0 };
        violation(c"strncpy_s: bad source or too small", e)
    };
    if s2.is_null() {
        return fail(EINVAL);
    }
    if n > RSIZE_MAX {
        return fail(ERANGE);
    }
    let len = unsafe { libc::strnlen(s2, n.min(s1max)) };
    if len >= s1max || overlap(s1, s1max, s2, len) {
        return fail(ERANGE);
    }
    unsafe {
        std::ptr::copy_nonoverlapping(s2, s1, len);
        *s1.add(len) = 0;
    }
    0
}

/// `strcat_s(s1, s1max, s2)`.
#[nid("strcat_s")]
pub unsafe extern "C" fn strcat_s(s1: *mut c_char, s1max: size_t, s2: *const c_char) -> c_int {
    unsafe {
        cat(
            s1,
            s1max,
            s2,
            usize::MAX,
            c"strcat_s: bad arguments or too small",
        )
    }
}

/// `strncat_s(s1, s1max, s2, n)`.
#[nid("strncat_s")]
pub unsafe extern "C" fn strncat_s(
    s1: *mut c_char,
    s1max: size_t,
    s2: *const c_char,
    n: size_t,
) -> c_int {
    if n > RSIZE_MAX && !s1.is_null() && s1max != 0 && s1max <= RSIZE_MAX {
        unsafe { *s1 = 0 };
        return violation(c"strncat_s: n too large", ERANGE);
    }
    unsafe { cat(s1, s1max, s2, n, c"strncat_s: bad arguments or too small") }
}

unsafe fn cat(
    s1: *mut c_char,
    s1max: size_t,
    s2: *const c_char,
    n: usize,
    msg: &std::ffi::CStr,
) -> c_int {
    if let Some(e) = unsafe { bad_dest(s1, s1max, msg) } {
        return e;
    }
    let fail = |e| {
        unsafe { *s1 = 0 };
        violation(msg, e)
    };
    if s2.is_null() {
        return fail(EINVAL);
    }
    let used = unsafe { libc::strnlen(s1, s1max) };
    let room = s1max - used;
    if room == 0 {
        return fail(ERANGE);
    }
    let len = unsafe { libc::strnlen(s2, n.min(room)) };
    if len >= room || overlap(s1, s1max, s2, len) {
        return fail(ERANGE);
    }
    unsafe {
        std::ptr::copy_nonoverlapping(s2, s1.add(used), len);
        *s1.add(used + len) = 0;
    }
    0
}

/// `memcpy_s(s1, s1max, s2, n)`: on a violation `s1` (if usable) is zeroed.
#[nid("memcpy_s")]
pub unsafe extern "C" fn memcpy_s(
    s1: *mut c_void,
    s1max: size_t,
    s2: *const c_void,
    n: size_t,
) -> c_int {
    unsafe { mem_s(s1, s1max, s2, n, false) }
}

/// `memmove_s(s1, s1max, s2, n)`: as `memcpy_s`, overlap allowed.
#[nid("memmove_s")]
pub unsafe extern "C" fn memmove_s(
    s1: *mut c_void,
    s1max: size_t,
    s2: *const c_void,
    n: size_t,
) -> c_int {
    unsafe { mem_s(s1, s1max, s2, n, true) }
}

unsafe fn mem_s(
    s1: *mut c_void,
    s1max: size_t,
    s2: *const c_void,
    n: size_t,
    may_overlap: bool,
) -> c_int {
    if s1.is_null() {
        return violation(c"memcpy_s/memmove_s: NULL destination", EINVAL);
    }
    if s1max > RSIZE_MAX {
        return violation(c"memcpy_s/memmove_s: destination size too large", ERANGE);
    }
    let fail = |e| {
        unsafe { libc::memset(s1, 0, s1max) };
        violation(c"memcpy_s/memmove_s: bad source or size", e)
    };
    if s2.is_null() {
        return fail(EINVAL);
    }
    if n > RSIZE_MAX || n > s1max {
        return fail(ERANGE);
    }
    if !may_overlap && overlap(s1.cast(), n, s2.cast(), n) {
        return fail(ERANGE);
    }
    unsafe { libc::memmove(s1, s2, n) };
    0
}

/// `memset_s(s, smax, c, n)` (FreeBSD's errors: EINVAL, E2BIG, EOVERFLOW; on EOVERFLOW
/// the whole `smax` bytes are still set).
#[nid("memset_s")]
pub unsafe extern "C" fn memset_s(s: *mut c_void, smax: size_t, c: c_int, n: size_t) -> c_int {
    if s.is_null() {
        return violation(c"memset_s : s is NULL", EINVAL);
    }
    if smax > RSIZE_MAX {
        return violation(c"memset_s : smax > RSIZE_MAX", 7);
    }
    if n > RSIZE_MAX {
        unsafe { libc::memset(s, c, smax) };
        return violation(c"memset_s : n > RSIZE_MAX", 7);
    }
    if n > smax {
        unsafe { libc::memset(s, c, smax) };
        return violation(c"memset_s : n > smax", 84);
    }
    unsafe { libc::memset(s, c, n) };
    0
}

/// `strerror_s(s, maxsize, errnum)`: the message, cut (ending in "...") if it does not
/// fit; ERANGE then.
#[nid("strerror_s")]
pub unsafe extern "C" fn strerror_s(s: *mut c_char, maxsize: size_t, errnum: c_int) -> c_int {
    if s.is_null() {
        return violation(c"strerror_s: NULL", EINVAL);
    }
    if maxsize == 0 || maxsize > RSIZE_MAX {
        return violation(c"strerror_s: bad size", ERANGE);
    }
    let msg = unsafe { std::ffi::CStr::from_ptr(libc::strerror(errnum)) }.to_bytes();
    if msg.len() < maxsize {
        unsafe {
            std::ptr::copy_nonoverlapping(msg.as_ptr().cast(), s, msg.len());
            *s.add(msg.len()) = 0;
        }
        return 0;
    }
    let keep = maxsize - 1;
    unsafe {
        std::ptr::copy_nonoverlapping(msg.as_ptr().cast(), s, keep);
        *s.add(keep) = 0;
        if keep > 3 {
            for i in keep - 3..keep {
                *s.add(i) = b'.' as c_char;
            }
        }
    }
    ERANGE
}

/// `strtok_s(s1, &s1max, delim, &ptr)`: `strtok_r` that also tracks how many characters
/// remain (`*s1max`); NULL with a violation when a token would run past it.
#[nid("strtok_s")]
pub unsafe extern "C" fn strtok_s(
    s1: *mut c_char,
    s1max: *mut size_t,
    delim: *const c_char,
    ptr: *mut *mut c_char,
) -> *mut c_char {
    if s1max.is_null()
        || delim.is_null()
        || ptr.is_null()
        || (s1.is_null() && unsafe { (*ptr).is_null() })
    {
        violation(c"strtok_s: NULL argument", EINVAL);
        return std::ptr::null_mut();
    }
    let mut left = unsafe { *s1max };
    if left > RSIZE_MAX {
        violation(c"strtok_s: size too large", ERANGE);
        return std::ptr::null_mut();
    }
    let mut p = if s1.is_null() { unsafe { *ptr } } else { s1 };
    let is_delim =
        |c: c_char| !unsafe { libc::strchr(delim, c_int::from(c as u8)) }.is_null() && c != 0;
    // Skip delimiters.
    loop {
        if left == 0 {
            violation(c"strtok_s: ran past s1max", ERANGE);
            return std::ptr::null_mut();
        }
        let c = unsafe { *p };
        if c == 0 {
            unsafe {
                *s1max = left;
                *ptr = p;
            }
            return std::ptr::null_mut();
        }
        if !is_delim(c) {
            break;
        }
        p = unsafe { p.add(1) };
        left -= 1;
    }
    let token = p;
    loop {
        let c = unsafe { *p };
        if c == 0 {
            unsafe {
                *s1max = left;
                *ptr = p;
            }
            return token;
        }
        if is_delim(c) {
            unsafe {
                *p = 0;
                *s1max = left - 1;
                *ptr = p.add(1);
            }
            return token;
        }
        p = unsafe { p.add(1) };
        left -= 1;
        if left == 0 {
            violation(c"strtok_s: ran past s1max", ERANGE);
            return std::ptr::null_mut();
        }
    }
}
