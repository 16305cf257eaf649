//! Wide characters and strings. `wchar_t` is **2 bytes** (UTF-16 units) for PS4/PS5
//! programs: clang's `x86_64-scei-ps4` target (Sony's SDK compiler) defines
//! `__SIZEOF_WCHAR_T__` 2 and `__WCHAR_TYPE__` `unsigned short`, while the FreeBSD target
//! homebrew SDKs use gives 4. Sony's libc takes what Sony's compiler passes, so every
//! function here reads and writes 16-bit units; `wint_t` stays a 32-bit `int` and `WEOF`
//! is -1 (0xFFFFFFFF).
//!
//! Multibyte conversions are the C locale's, FreeBSD's "NONE" encoding: each byte is
//! the character of the same value (`MB_CUR_MAX` 1); characters above 0xFF have no
//! multibyte form (`EILSEQ`, 86). Surrogate units are characters like any other.
//!
//! Wide stdio writes and reads the multibyte form. The first read or write orients a
//! stream (wide or byte, reported by `fwide`); as on FreeBSD, a call of the other kind
//! still works on it. Wide printf takes the conversions of the
//! narrow engine (`printf.rs`); `%s` there is a multibyte string, `%ls` a wide one,
//! `%c` an `int` byte, `%lc` a `wint_t`; positional arguments (`%2$ls`, `*1$`) follow the
//! narrow engine's FreeBSD rules. The wide scanf family runs the scanf engine (`scanf.rs`)
//! on 16-bit characters.

use aps5_prx_macros::{nid, variadic};

use crate::kernel;
use crate::stdio::{self, GuestFile};
use crate::va::{Args, VaArgs, VaListRaw};

/// Sony's `wchar_t`.
pub type WChar = u16;
/// `WEOF` as a `wint_t`.
pub const WEOF: u32 = 0xFFFF_FFFF;
const EILSEQ: i32 = 86;

unsafe fn wlen(s: *const WChar) -> usize {
    let mut n = 0;
    while unsafe { s.add(n).read_unaligned() } != 0 {
        n += 1;
    }
    n
}

unsafe fn wslice<'a>(s: *const WChar) -> &'a [WChar] {
    unsafe { std::slice::from_raw_parts(s, wlen(s)) }
}

/// `wcslen`.
#[nid("wcslen")]
pub unsafe extern "C" fn wcslen(s: *const WChar) -> usize {
    unsafe { wlen(s) }
}

/// `wcscpy`.
#[nid("wcscpy")]
pub unsafe extern "C" fn wcscpy(d: *mut WChar, s: *const WChar) -> *mut WChar {
    let n = unsafe { wlen(s) };
    unsafe { std::ptr::copy(s, d, n + 1) };
    d
}

/// `wcsncpy`: at most `n` units, the rest of `n` filled with zeros.
#[nid("wcsncpy")]
pub unsafe extern "C" fn wcsncpy(d: *mut WChar, s: *const WChar, n: usize) -> *mut WChar {
    let mut i = 0;
    while i < n {
        let c = unsafe { *s.add(i) };
        if c == 0 {
            break;
        }
        unsafe { *d.add(i) = c };
        i += 1;
    }
    while i < n {
        unsafe { *d.add(i) = 0 };
        i += 1;
    }
    d
}

/// `wcscat`.
#[nid("wcscat")]
pub unsafe extern "C" fn wcscat(d: *mut WChar, s: *const WChar) -> *mut WChar {
    unsafe { wcscpy(d.add(wlen(d)), s) };
    d
}

/// `wcsncat`: at most `n` units of `s`, then a terminator.
#[nid("wcsncat")]
pub unsafe extern "C" fn wcsncat(d: *mut WChar, s: *const WChar, n: usize) -> *mut WChar {
    let mut end = unsafe { d.add(wlen(d)) };
    let mut i = 0;
    while i < n {
        let c = unsafe { *s.add(i) };
        if c == 0 {
            break;
        }
        unsafe {
            *end = c;
            end = end.add(1);
        }
        i += 1;
    }
    unsafe { *end = 0 };
    d
}

/// `wcsncmp` (units compare as unsigned values).
#[nid("wcsncmp")]
pub unsafe extern "C" fn wcsncmp(a: *const WChar, b: *const WChar, n: usize) -> i32 {
    for i in 0..n {
        let (x, y) = unsafe { (*a.add(i), *b.add(i)) };
        if x != y {
            return if x < y { -1 } else { 1 };
        }
        if x == 0 {
            break;
        }
    }
    0
}

/// `wcscmp`.
#[nid("wcscmp")]
pub unsafe extern "C" fn wcscmp(a: *const WChar, b: *const WChar) -> i32 {
    unsafe { wcsncmp(a, b, usize::MAX) }
}

/// `wcscoll` (the C locale: code order).
#[nid("wcscoll")]
pub unsafe extern "C" fn wcscoll(a: *const WChar, b: *const WChar) -> i32 {
    unsafe { wcscmp(a, b) }
}

/// `wcschr` (the terminator can be found).
#[nid("wcschr")]
pub unsafe extern "C" fn wcschr(s: *const WChar, c: u32) -> *mut WChar {
    let mut p = s;
    loop {
        let x = unsafe { *p };
        if u32::from(x) == c {
            return p.cast_mut();
        }
        if x == 0 {
            return std::ptr::null_mut();
        }
        p = unsafe { p.add(1) };
    }
}

/// `wcsrchr`.
#[nid("wcsrchr")]
pub unsafe extern "C" fn wcsrchr(s: *const WChar, c: u32) -> *mut WChar {
    let n = unsafe { wlen(s) };
    (0..=n)
        .rev()
        .find(|&i| u32::from(unsafe { *s.add(i) }) == c)
        .map_or(std::ptr::null_mut(), |i| unsafe { s.add(i).cast_mut() })
}

/// `wcsstr`.
#[nid("wcsstr")]
pub unsafe extern "C" fn wcsstr(h: *const WChar, n: *const WChar) -> *mut WChar {
    let (hs, ns) = unsafe { (wslice(h), wslice(n)) };
    if ns.is_empty() {
        return h.cast_mut();
    }
    hs.windows(ns.len())
        .position(|w| w == ns)
        .map_or(std::ptr::null_mut(), |i| unsafe { h.add(i).cast_mut() })
}

/// `wcsspn`.
#[nid("wcsspn")]
pub unsafe extern "C" fn wcsspn(s: *const WChar, set: *const WChar) -> usize {
    let set = unsafe { wslice(set) };
    unsafe { wslice(s) }
        .iter()
        .take_while(|c| set.contains(c))
        .count()
}

/// `wcscspn`.
#[nid("wcscspn")]
pub unsafe extern "C" fn wcscspn(s: *const WChar, set: *const WChar) -> usize {
    let set = unsafe { wslice(set) };
    unsafe { wslice(s) }
        .iter()
        .take_while(|c| !set.contains(c))
        .count()
}

/// `wcspbrk`.
#[nid("wcspbrk")]
pub unsafe extern "C" fn wcspbrk(s: *const WChar, set: *const WChar) -> *mut WChar {
    let i = unsafe { wcscspn(s, set) };
    if unsafe { *s.add(i) } == 0 {
        std::ptr::null_mut()
    } else {
        unsafe { s.add(i).cast_mut() }
    }
}

/// `wcstok(s, delim, &save)`.
#[nid("wcstok")]
pub unsafe extern "C" fn wcstok(
    s: *mut WChar,
    delim: *const WChar,
    save: *mut *mut WChar,
) -> *mut WChar {
    let mut p = if s.is_null() { unsafe { *save } } else { s };
    if p.is_null() {
        return p;
    }
    p = unsafe { p.add(wcsspn(p, delim)) };
    if unsafe { *p } == 0 {
        unsafe { *save = std::ptr::null_mut() };
        return std::ptr::null_mut();
    }
    let end = unsafe { p.add(wcscspn(p, delim)) };
    unsafe {
        if *end == 0 {
            *save = std::ptr::null_mut();
        } else {
            *end = 0;
            *save = end.add(1);
        }
    }
    p
}

/// `wmemchr`.
#[nid("wmemchr")]
pub unsafe extern "C" fn wmemchr(s: *const WChar, c: u32, n: usize) -> *mut WChar {
    (0..n)
        .find(|&i| u32::from(unsafe { *s.add(i) }) == c)
        .map_or(std::ptr::null_mut(), |i| unsafe { s.add(i).cast_mut() })
}

/// `wmemcmp`.
#[nid("wmemcmp")]
pub unsafe extern "C" fn wmemcmp(a: *const WChar, b: *const WChar, n: usize) -> i32 {
    for i in 0..n {
        let (x, y) = unsafe { (*a.add(i), *b.add(i)) };
        if x != y {
            return if x < y { -1 } else { 1 };
        }
    }
    0
}

/// `wmemcpy`.
#[nid("wmemcpy")]
pub unsafe extern "C" fn wmemcpy(d: *mut WChar, s: *const WChar, n: usize) -> *mut WChar {
    unsafe { std::ptr::copy_nonoverlapping(s, d, n) };
    d
}

/// `wmemmove`.
#[nid("wmemmove")]
pub unsafe extern "C" fn wmemmove(d: *mut WChar, s: *const WChar, n: usize) -> *mut WChar {
    unsafe { std::ptr::copy(s, d, n) };
    d
}

/// `wmemset`.
#[nid("wmemset")]
pub unsafe extern "C" fn wmemset(d: *mut WChar, c: u32, n: usize) -> *mut WChar {
    for i in 0..n {
        unsafe { *d.add(i) = c as WChar };
    }
    d
}

// Numbers: the ASCII prefix of the wide string goes through the host's narrow
// conversion (a number is ASCII), and the end pointer is mapped back.

unsafe fn narrow_prefix(s: *const WChar) -> Vec<u8> {
    let mut v = Vec::new();
    let mut i = 0;
    loop {
        let c = unsafe { *s.add(i) };
        if c == 0 || c >= 0x80 {
            break;
        }
        v.push(c as u8);
        i += 1;
    }
    v.push(0);
    v
}

macro_rules! wide_number {
    ($($name:literal => fn $f:ident($($a:ident: $t:ty),*) -> $r:ty = $host:path;)*) => {$(
        #[doc = concat!("`", $name, "` (the narrow conversion on the ASCII prefix).")]
        #[nid($name)]
        pub unsafe extern "C" fn $f(s: *const WChar, end: *mut *mut WChar $(, $a: $t)*) -> $r {
            let n = unsafe { narrow_prefix(s) };
            let mut e: *mut libc::c_char = std::ptr::null_mut();
            let host: unsafe extern "C" fn(*const libc::c_char, *mut *mut libc::c_char $(, $t)*) -> $r =
                ::std::hint::black_box($host);
            let v = $crate::forward::carry_errno(|| unsafe { host(n.as_ptr().cast(), &mut e $(, $a)*) });
            if !end.is_null() {
                let used = e as usize - n.as_ptr() as usize;
                unsafe { *end = s.add(used).cast_mut() };
            }
            v
        }
    )*};
}

wide_number! {
    "wcstol" => fn wcstol(base: i32) -> i64 = libc::strtol;
    "wcstoul" => fn wcstoul(base: i32) -> u64 = libc::strtoul;
    "wcstoll" => fn wcstoll(base: i32) -> i64 = libc::strtoll;
    "wcstoull" => fn wcstoull(base: i32) -> u64 = libc::strtoull;
    "wcstoimax" => fn wcstoimax(base: i32) -> i64 = libc::strtoll;
    "wcstoumax" => fn wcstoumax(base: i32) -> u64 = libc::strtoull;
    "wcstod" => fn wcstod() -> f64 = libc::strtod;
    "wcstof" => fn wcstof() -> f32 = libc::strtof;
}

// Multibyte conversions (C locale: one byte per character).

/// `btowc`: the byte's character; `WEOF` for `EOF`.
#[nid("btowc")]
pub extern "C" fn btowc(c: i32) -> u32 {
    if c == -1 { WEOF } else { u32::from(c as u8) }
}

/// `wctob`: the character's byte, or `EOF` when it has none.
#[nid("wctob")]
pub extern "C" fn wctob(c: u32) -> i32 {
    if c <= 0xFF { c as i32 } else { -1 }
}

/// `mbsinit`: the C locale keeps no shift state.
#[nid("mbsinit")]
pub extern "C" fn mbsinit(_ps: *const u8) -> i32 {
    1
}

/// `mbrtowc(pwc, s, n, ps)`: 0 for NUL, 1 for any other byte, -2 if `n` is 0.
#[nid("mbrtowc")]
pub unsafe extern "C" fn mbrtowc(pwc: *mut WChar, s: *const u8, n: usize, _ps: *mut u8) -> usize {
    if s.is_null() {
        return 0;
    }
    if n == 0 {
        return usize::MAX - 1;
    }
    let b = unsafe { *s };
    if !pwc.is_null() {
        unsafe { pwc.write_unaligned(WChar::from(b)) };
    }
    usize::from(b != 0)
}

/// `mbrtoc16`: as `mbrtowc` (a `char16_t` is a `wchar_t` here).
#[nid("mbrtoc16")]
pub unsafe extern "C" fn mbrtoc16(p: *mut u16, s: *const u8, n: usize, ps: *mut u8) -> usize {
    unsafe { mbrtowc(p, s, n, ps) }
}

/// `mbrtoc32`.
#[nid("mbrtoc32")]
pub unsafe extern "C" fn mbrtoc32(p: *mut u32, s: *const u8, n: usize, ps: *mut u8) -> usize {
    let mut w: WChar = 0;
    let r = unsafe { mbrtowc(&mut w, s, n, ps) };
    if !p.is_null() && r < usize::MAX - 1 {
        unsafe { p.write_unaligned(u32::from(w)) };
    }
    r
}

/// `mbrlen`.
#[nid("mbrlen")]
pub unsafe extern "C" fn mbrlen(s: *const u8, n: usize, ps: *mut u8) -> usize {
    unsafe { mbrtowc(std::ptr::null_mut(), s, n, ps) }
}

/// `mbtowc`: as `mbrtowc`, but -1 when `n` is 0; 0 (stateless) for a NULL `s`.
#[nid("mbtowc")]
pub unsafe extern "C" fn mbtowc(pwc: *mut WChar, s: *const u8, n: usize) -> i32 {
    if s.is_null() {
        return 0;
    }
    match unsafe { mbrtowc(pwc, s, n, std::ptr::null_mut()) } {
        r if r >= usize::MAX - 1 => -1,
        r => r as i32,
    }
}

/// `mblen`.
#[nid("mblen")]
pub unsafe extern "C" fn mblen(s: *const u8, n: usize) -> i32 {
    unsafe { mbtowc(std::ptr::null_mut(), s, n) }
}

/// `wcrtomb(s, wc, ps)`: 1 byte, or -1 with `EILSEQ` above 0xFF.
#[nid("wcrtomb")]
pub unsafe extern "C" fn wcrtomb(s: *mut u8, wc: u32, _ps: *mut u8) -> usize {
    if s.is_null() {
        return 1;
    }
    match u8::try_from(wc) {
        Ok(b) => {
            unsafe { *s = b };
            1
        }
        Err(_) => {
            kernel::set_errno(EILSEQ);
            usize::MAX
        }
    }
}

/// `wctomb`.
#[nid("wctomb")]
pub unsafe extern "C" fn wctomb(s: *mut u8, wc: u32) -> i32 {
    if s.is_null() {
        return 0;
    }
    match unsafe { wcrtomb(s, wc, std::ptr::null_mut()) } {
        usize::MAX => -1,
        r => r as i32,
    }
}

/// `mbsrtowcs(dst, &src, n, ps)`: converts up to `n` characters; `*src` is left after the
/// last one converted, or NULL if the terminator was reached.
#[nid("mbsrtowcs")]
pub unsafe extern "C" fn mbsrtowcs(
    dst: *mut WChar,
    src: *mut *const u8,
    n: usize,
    _ps: *mut u8,
) -> usize {
    unsafe { convert_string(dst, src, n, |b: u8| Some(WChar::from(b))) }
}

/// The string conversions (`mbsrtowcs`, `wcsrtombs`) in the C locale, one character to
/// one: converts `*src` up to its terminator into `dst`, at most `n` characters (a null
/// `dst` only counts, without limit). `*src` is then left after the last one converted,
/// or NULL if the terminator was. A character `conv` cannot map is -1 with `EILSEQ`
/// (`*src` then points at it).
unsafe fn convert_string<S: Copy + Into<u32>, D>(
    dst: *mut D,
    src: *mut *const S,
    n: usize,
    conv: impl Fn(S) -> Option<D>,
) -> usize {
    let s = unsafe { *src };
    let mut i = 0;
    loop {
        if !dst.is_null() && i == n {
            unsafe { *src = s.add(i) };
            return i;
        }
        let c = unsafe { *s.add(i) };
        let Some(d) = conv(c) else {
            if !dst.is_null() {
                unsafe { *src = s.add(i) };
            }
            kernel::set_errno(EILSEQ);
            return usize::MAX;
        };
        if !dst.is_null() {
            unsafe { *dst.add(i) = d };
        }
        if c.into() == 0 {
            if !dst.is_null() {
                unsafe { *src = std::ptr::null() };
            }
            return i;
        }
        i += 1;
    }
}

/// `mbstowcs`.
#[nid("mbstowcs")]
pub unsafe extern "C" fn mbstowcs(dst: *mut WChar, s: *const u8, n: usize) -> usize {
    let mut p = s;
    unsafe { mbsrtowcs(dst, &mut p, n, std::ptr::null_mut()) }
}

/// `wcsrtombs(dst, &src, n, ps)`: up to `n` bytes; -1 with `EILSEQ` at a character above
/// 0xFF (`*src` then points at it).
#[nid("wcsrtombs")]
pub unsafe extern "C" fn wcsrtombs(
    dst: *mut u8,
    src: *mut *const WChar,
    n: usize,
    _ps: *mut u8,
) -> usize {
    unsafe { convert_string(dst, src, n, |w: WChar| u8::try_from(w).ok()) }
}

/// `wcstombs`.
#[nid("wcstombs")]
pub unsafe extern "C" fn wcstombs(dst: *mut u8, s: *const WChar, n: usize) -> usize {
    let mut p = s;
    unsafe { wcsrtombs(dst, &mut p, n, std::ptr::null_mut()) }
}

// Wide ctype: the C locale's classes for 0-255, nothing above.

fn narrow_class(c: u32, f: unsafe extern "C" fn(i32) -> i32) -> i32 {
    if c < 0x80 {
        i32::from(unsafe { f(c as i32) } != 0)
    } else {
        0
    }
}

/// `iswalpha`.
#[nid("iswalpha")]
pub extern "C" fn iswalpha(c: u32) -> i32 {
    narrow_class(c, libc::isalpha)
}

/// `iswdigit`.
#[nid("iswdigit")]
pub extern "C" fn iswdigit(c: u32) -> i32 {
    narrow_class(c, libc::isdigit)
}

/// `iswspace`.
#[nid("iswspace")]
pub extern "C" fn iswspace(c: u32) -> i32 {
    narrow_class(c, libc::isspace)
}

/// `towlower`.
#[nid("towlower")]
pub extern "C" fn towlower(c: u32) -> u32 {
    if c < 0x80 {
        u32::from((c as u8).to_ascii_lowercase())
    } else {
        c
    }
}

/// `towupper`.
#[nid("towupper")]
pub extern "C" fn towupper(c: u32) -> u32 {
    if c < 0x80 {
        u32::from((c as u8).to_ascii_uppercase())
    } else {
        c
    }
}

// Wide stdio.

/// `fputwc`: the character's byte; `WEOF` (errno `EILSEQ`) if it has none.
#[nid("fputwc")]
pub unsafe extern "C" fn fputwc(wc: u32, f: *mut GuestFile) -> u32 {
    stdio::orient(f, 1);
    let Ok(b) = u8::try_from(wc) else {
        kernel::set_errno(EILSEQ);
        return WEOF;
    };
    if stdio::put(f, &[b]) { wc } else { WEOF }
}

/// `putwc`.
#[nid("putwc")]
pub unsafe extern "C" fn putwc(wc: u32, f: *mut GuestFile) -> u32 {
    unsafe { fputwc(wc, f) }
}

/// `putwchar`.
#[nid("putwchar")]
pub unsafe extern "C" fn putwchar(wc: u32) -> u32 {
    unsafe { fputwc(wc, stdio::STDOUTP) }
}

/// `fputws`: 0, or -1 (nothing written) if a character has no byte.
#[nid("fputws")]
pub unsafe extern "C" fn fputws(s: *const WChar, f: *mut GuestFile) -> i32 {
    stdio::orient(f, 1);
    let mut v = Vec::new();
    for &w in unsafe { wslice(s) } {
        match u8::try_from(w) {
            Ok(b) => v.push(b),
            Err(_) => {
                kernel::set_errno(EILSEQ);
                return -1;
            }
        }
    }
    if stdio::put(f, &v) { 0 } else { -1 }
}

/// `fgetwc`: the next byte as a character, or `WEOF`.
#[nid("fgetwc")]
pub unsafe extern "C" fn fgetwc(f: *mut GuestFile) -> u32 {
    stdio::orient(f, 1);
    match unsafe { stdio::fgetc(f) } {
        -1 => WEOF,
        c => c as u32,
    }
}

/// `getwc`.
#[nid("getwc")]
pub unsafe extern "C" fn getwc(f: *mut GuestFile) -> u32 {
    unsafe { fgetwc(f) }
}

/// `getwchar`.
#[nid("getwchar")]
pub unsafe extern "C" fn getwchar() -> u32 {
    unsafe { fgetwc(stdio::STDINP) }
}

/// `ungetwc`.
#[nid("ungetwc")]
pub unsafe extern "C" fn ungetwc(wc: u32, f: *mut GuestFile) -> u32 {
    match u8::try_from(wc) {
        Ok(b) if unsafe { stdio::ungetc(i32::from(b), f) } != -1 => wc,
        _ => WEOF,
    }
}

/// `fgetws(buf, n, f)`: up to `n - 1` characters, through a newline.
#[nid("fgetws")]
pub unsafe extern "C" fn fgetws(buf: *mut WChar, n: i32, f: *mut GuestFile) -> *mut WChar {
    if n <= 0 {
        return std::ptr::null_mut();
    }
    let mut i = 0usize;
    while i + 1 < n as usize {
        let c = unsafe { fgetwc(f) };
        if c == WEOF {
            break;
        }
        unsafe { *buf.add(i) = c as WChar };
        i += 1;
        if c == u32::from(b'\n') {
            break;
        }
    }
    if i == 0 {
        return std::ptr::null_mut();
    }
    unsafe { *buf.add(i) = 0 };
    buf
}

/// `fwide(f, mode)`: sets the orientation if it is unset and `mode` is nonzero; returns
/// it (>0 wide, <0 byte, 0 none).
#[nid("fwide")]
pub unsafe extern "C" fn fwide(f: *mut GuestFile, mode: i32) -> i32 {
    stdio::orient(f, mode.signum())
}

/// Formats a wide `fmt` into wide characters. False (errno `EILSEQ`) if a `%s`
/// argument's text or a `%ls` character cannot be represented.
unsafe fn wformat(fmt: *const WChar, args: &mut dyn Args, out: &mut Vec<WChar>) -> bool {
    let f = unsafe { wslice(fmt) };
    // A format with `$` anywhere is read FreeBSD's positional way: the argument table is
    // built from the format's ASCII projection (other characters are literal text; 0x01 is
    // no conversion), then each directive takes its values from the table by position.
    let mut table = if f.contains(&u16::from(b'$')) {
        let proj: Vec<u8> = f
            .iter()
            .map(|&c| if c < 0x80 { c as u8 } else { 1 })
            .chain([0])
            .collect();
        Some((
            unsafe { crate::printf::positional_table(proj.as_ptr(), args) },
            1usize,
        ))
    } else {
        None
    };
    let mut i = 0;
    while i < f.len() {
        if f[i] != u16::from(b'%') {
            out.push(f[i]);
            i += 1;
            continue;
        }
        // The directive: ASCII up to and including its conversion letter.
        let start = i;
        i += 1;
        while i < f.len() && f[i] < 0x80 && b"-+ #0'123456789.*$hlLqjzt".contains(&(f[i] as u8)) {
            i += 1;
        }
        if i >= f.len() || f[i] >= 0x80 {
            out.extend_from_slice(&f[start..i]);
            continue;
        }
        i += 1;
        let dir: Vec<u8> = f[start..i].iter().map(|&c| c as u8).collect();
        let ok = match &mut table {
            None => unsafe { emit(&dir, args, out) },
            Some((vals, next)) => match unposition(&dir, vals, next) {
                Some((plain, queue)) => unsafe {
                    emit(&plain, &mut crate::printf::Replay(queue), out)
                },
                None => {
                    out.extend_from_slice(&f[start..i]);
                    true
                }
            },
        };
        if !ok {
            kernel::set_errno(EILSEQ);
            return false;
        }
    }
    true
}

/// A positional directive (`%2$*1$.*3$d`) as a plain one (`%*.*d`) and the values it
/// takes, in order, from the table (FreeBSD: the conversion's `n$` moves the next
/// position to n + 1, `*m$` does not move it). None for an index outside the table.
fn unposition(
    dir: &[u8],
    vals: &[crate::printf::Arg],
    next: &mut usize,
) -> Option<(Vec<u8>, std::collections::VecDeque<crate::printf::Arg>)> {
    let mut plain = vec![b'%'];
    let mut queue = std::collections::VecDeque::new();
    let mut k = 1;
    // A number followed by `$`, or None (k unchanged).
    let position = |k: &mut usize| -> Option<usize> {
        let s = *k;
        let mut e = s;
        while e < dir.len() && dir[e].is_ascii_digit() {
            e += 1;
        }
        if e > s && e < dir.len() && dir[e] == b'$' {
            *k = e + 1;
            std::str::from_utf8(&dir[s..e]).ok()?.parse().ok()
        } else {
            None
        }
    };
    let mut conv_pos = None;
    loop {
        while k < dir.len() && b"-+ #0'".contains(&dir[k]) {
            plain.push(dir[k]);
            k += 1;
        }
        match position(&mut k) {
            Some(p) if conv_pos.is_none() => conv_pos = Some(p),
            Some(_) => return None,
            None => break,
        }
    }
    let take = |p: usize| vals.get(p).copied();
    for star_prefix in [&b""[..], &b"."[..]] {
        if !star_prefix.is_empty() {
            if dir.get(k) != Some(&b'.') {
                continue;
            }
            plain.push(b'.');
            k += 1;
        }
        if dir.get(k) == Some(&b'*') {
            k += 1;
            plain.push(b'*');
            match position(&mut k) {
                Some(m) => queue.push_back(take(m)?),
                None => {
                    queue.push_back(take(*next)?);
                    *next += 1;
                }
            }
        } else {
            while k < dir.len() && dir[k].is_ascii_digit() {
                plain.push(dir[k]);
                k += 1;
            }
        }
    }
    plain.extend_from_slice(&dir[k..]);
    if dir.last() != Some(&b'%') {
        let p = conv_pos.unwrap_or(*next);
        queue.push_back(take(p)?);
        *next = p + 1;
    }
    Some((plain, queue))
}

/// One directive without positions: text conversions here, numbers and `%n` by the
/// narrow engine. False if a character cannot be represented.
unsafe fn emit(dir: &[u8], args: &mut dyn Args, out: &mut Vec<WChar>) -> bool {
    let conv = *dir.last().unwrap_or(&0);
    if dir.contains(&b'$') {
        out.extend(dir.iter().map(|&b| WChar::from(b)));
        return true;
    }
    let long = dir.contains(&b'l');
    if matches!(conv, b's' | b'c' | b'S' | b'C') {
        return unsafe { wide_text(dir, conv, long, args, out) };
    }
    // Numbers and %n: the narrow engine on this one directive (ASCII output). %n counts
    // wide characters: give it the count so far through a prefix of that length.
    let mut z = dir.to_vec();
    z.push(0);
    let mut narrow = Vec::new();
    if conv == b'n' {
        narrow.resize(out.len(), b' ');
    }
    unsafe { crate::printf::format(z.as_ptr(), args, &mut narrow) };
    if conv != b'n' {
        out.extend(narrow.iter().map(|&b| WChar::from(b)));
    }
    true
}

/// `%s`/`%ls`/`%c`/`%lc` of a wide printf: width and precision count wide characters.
unsafe fn wide_text(
    dir: &[u8],
    conv: u8,
    long: bool,
    args: &mut dyn Args,
    out: &mut Vec<WChar>,
) -> bool {
    // Flags, width, precision (with `*`).
    let mut left = false;
    let mut k = 1;
    while k < dir.len() && b"-+ #0'".contains(&dir[k]) {
        left |= dir[k] == b'-';
        k += 1;
    }
    let num = |k: &mut usize, args: &mut dyn Args| -> Option<i64> {
        if dir[*k] == b'*' {
            *k += 1;
            return Some(i64::from(args.int() as i32));
        }
        let s = *k;
        while dir[*k].is_ascii_digit() {
            *k += 1;
        }
        std::str::from_utf8(&dir[s..*k]).ok()?.parse().ok()
    };
    let width = num(&mut k, args).unwrap_or(0);
    if width < 0 {
        left = true;
    }
    let width = width.unsigned_abs() as usize;
    let precision = if dir[k] == b'.' {
        k += 1;
        Some(num(&mut k, args).unwrap_or(0)).filter(|&p| p >= 0)
    } else {
        None
    };
    let raw = args.int();
    let mut text: Vec<WChar> = Vec::new();
    let wide = long || conv == b'S' || conv == b'C';
    match conv {
        b'c' | b'C' => {
            if wide {
                let Ok(w) = WChar::try_from(raw as u32) else {
                    return false;
                };
                text.push(w);
            } else {
                text.push(WChar::from(raw as u8));
            }
        }
        _ => {
            let limit = precision.map_or(usize::MAX, |p| p as usize);
            if raw == 0 {
                crate::printf::annex_k_violation();
                text.extend(b"(null)".iter().take(limit).map(|&b| WChar::from(b)));
            } else if wide {
                let p = raw as *const WChar;
                let mut j = 0;
                while j < limit {
                    let c = unsafe { p.add(j).read_unaligned() };
                    if c == 0 {
                        break;
                    }
                    text.push(c);
                    j += 1;
                }
            } else {
                let p = raw as *const u8;
                let mut j = 0;
                while j < limit {
                    let c = unsafe { *p.add(j) };
                    if c == 0 {
                        break;
                    }
                    text.push(WChar::from(c));
                    j += 1;
                }
            }
        }
    }
    let fill = width.saturating_sub(text.len());
    if !left {
        out.resize(out.len() + fill, WChar::from(b' '));
    }
    out.extend_from_slice(&text);
    if left {
        out.resize(out.len() + fill, WChar::from(b' '));
    }
    true
}

/// Writes formatted wide output to a stream in the C locale (one byte a character):
/// the count of wide characters, or -1 (`EILSEQ` for a character above 0xFF, nothing
/// written).
fn put_wide(f: *mut GuestFile, out: &[WChar]) -> i32 {
    let mut bytes = Vec::with_capacity(out.len());
    for &w in out {
        match u8::try_from(w) {
            Ok(b) => bytes.push(b),
            Err(_) => {
                kernel::set_errno(EILSEQ);
                return -1;
            }
        }
    }
    if stdio::put(f, &bytes) {
        out.len() as i32
    } else {
        -1
    }
}

fn wprint_to(f: *mut GuestFile, fmt: *const WChar, ap: *mut VaListRaw) -> i32 {
    stdio::orient(f, 1);
    let mut out = Vec::new();
    if !unsafe { wformat(fmt, &mut VaArgs(ap), &mut out) } {
        return -1;
    }
    put_wide(f, &out)
}

stdio::stream_entries!(
    wprint_to(WChar), std = STDOUTP, before = {};
    "wprintf" wprintf_impl, "fwprintf" fwprintf_impl, "vwprintf" vwprintf, "vfwprintf" vfwprintf
);

/// `vswprintf(buf, n, fmt, ap)`: the number of wide characters written (without the
/// terminator), or -1 if they and the terminator do not fit in `n` (C99: the output is
/// then cut and terminated).
#[nid("vswprintf")]
pub unsafe extern "C" fn vswprintf(
    buf: *mut WChar,
    n: usize,
    fmt: *const WChar,
    ap: *mut VaListRaw,
) -> i32 {
    let mut out = Vec::new();
    if !unsafe { wformat(fmt, &mut VaArgs(ap), &mut out) } {
        return -1;
    }
    if n == 0 || buf.is_null() {
        return -1;
    }
    let copy = out.len().min(n - 1);
    unsafe {
        std::ptr::copy_nonoverlapping(out.as_ptr(), buf, copy);
        *buf.add(copy) = 0;
    }
    if out.len() >= n {
        kernel::set_errno(84); // EOVERFLOW
        -1
    } else {
        out.len() as i32
    }
}

unsafe extern "C" fn swprintf_impl(
    buf: *mut WChar,
    n: usize,
    fmt: *const WChar,
    ap: *mut VaListRaw,
) -> i32 {
    unsafe { vswprintf(buf, n, fmt, ap) }
}
variadic!("swprintf", 3, swprintf_impl);

/// `vswscanf`: the scanf engine on a wide string with a wide format.
#[nid("vswscanf")]
pub unsafe extern "C" fn vswscanf(s: *const WChar, fmt: *const WChar, ap: *mut VaListRaw) -> i32 {
    if s.is_null() || fmt.is_null() {
        return -1;
    }
    unsafe { crate::scanf::scan_wide(fmt, s, &mut VaArgs(ap), false) }
}

unsafe extern "C" fn swscanf_impl(s: *const WChar, fmt: *const WChar, ap: *mut VaListRaw) -> i32 {
    unsafe { vswscanf(s, fmt, ap) }
}
variadic!("swscanf", 2, swscanf_impl);

fn wscan_stream(f: *mut GuestFile, fmt: *const WChar, ap: *mut VaListRaw) -> i32 {
    wscan_stream_as(f, fmt, ap, false)
}

fn wscan_stream_as(f: *mut GuestFile, fmt: *const WChar, ap: *mut VaListRaw, sized: bool) -> i32 {
    if fmt.is_null() {
        return -1;
    }
    stdio::orient(f, 1);
    stdio::scan_stream(f, &mut |inp| unsafe {
        crate::scanf::scan_wide_bytes(fmt, inp, &mut VaArgs(ap), sized)
    })
}

stdio::stream_entries!(
    wscan_stream(WChar), std = STDINP, before = { stdio::fflush(stdio::STDOUTP); };
    "wscanf" wscanf_impl, "fwscanf" fwscanf_impl, "vwscanf" vwscanf, "vfwscanf" vfwscanf
);

/// `wcsftime`: `strftime` on the format's single-byte form, widened (the C locale's names
/// are ASCII). 0 if the result and its terminator do not fit in `max` characters, or the
/// format has a character above 0xFF.
#[nid("wcsftime")]
pub unsafe extern "C" fn wcsftime(
    s: *mut WChar,
    max: usize,
    fmt: *const WChar,
    tm: *const libc::tm,
) -> usize {
    let mut f = Vec::new();
    for &c in unsafe { wslice(fmt) } {
        match u8::try_from(c) {
            Ok(b) => f.push(b),
            Err(_) => {
                kernel::set_errno(EILSEQ);
                return 0;
            }
        }
    }
    f.push(0);
    // Format into a roomy byte buffer, then check the length against `max`.
    let mut out = vec![0u8; max.saturating_mul(4).clamp(64, 1 << 20)];
    let n = unsafe { libc::strftime(out.as_mut_ptr().cast(), out.len(), f.as_ptr().cast(), tm) };
    if n >= max {
        return 0;
    }
    for (i, &b) in out[..n].iter().enumerate() {
        unsafe { *s.add(i) = WChar::from(b) };
    }
    unsafe { *s.add(n) = 0 };
    n
}

/// `wcsxfrm` (the C locale: a copy; returns the length).
#[nid("wcsxfrm")]
pub unsafe extern "C" fn wcsxfrm(d: *mut WChar, s: *const WChar, n: usize) -> usize {
    let len = unsafe { wlen(s) };
    if len < n {
        unsafe { std::ptr::copy_nonoverlapping(s, d, len + 1) };
    }
    len
}

// C11 Annex K wide functions (see `strings.rs` for the constraint handler).

use crate::strings::{RSIZE_MAX, violation};

unsafe fn wnlen(s: *const WChar, max: usize) -> usize {
    let mut n = 0;
    while n < max && unsafe { s.add(n).read_unaligned() } != 0 {
        n += 1;
    }
    n
}

/// `wcsnlen_s`: 0 for NULL.
#[nid("wcsnlen_s")]
pub unsafe extern "C" fn wcsnlen_s(s: *const WChar, max: usize) -> usize {
    if s.is_null() {
        0
    } else {
        unsafe { wnlen(s, max) }
    }
}

/// `wcscpy_s`, `wcsncpy_s`, `wcscat_s`, `wcsncat_s`: copy at most `n` characters of `s2`
/// to `s1` at offset `at` (the current length for the cat forms); `s1[0]` cleared on a
/// violation.
unsafe fn wcopy_s(
    s1: *mut WChar,
    s1max: usize,
    s2: *const WChar,
    n: Option<usize>,
    cat: bool,
    msg: &std::ffi::CStr,
) -> i32 {
    if s1.is_null() {
        return violation(msg, 22);
    }
    if s1max == 0 || s1max > RSIZE_MAX {
        return violation(msg, 34);
    }
    let fail = |e| {
        unsafe { *s1 = 0 };
        violation(msg, e)
    };
    if s2.is_null() {
        return fail(22);
    }
    if n.is_some_and(|n| n > RSIZE_MAX) {
        return fail(34);
    }
    let n = n.unwrap_or(usize::MAX);
    let at = if cat { unsafe { wnlen(s1, s1max) } } else { 0 };
    let room = s1max - at;
    if room == 0 {
        return fail(34);
    }
    let len = unsafe { wnlen(s2, n.min(room)) };
    if len >= room {
        return fail(34);
    }
    unsafe {
        std::ptr::copy(s2, s1.add(at), len);
        *s1.add(at + len) = 0;
    }
    0
}

/// `wcscpy_s`.
#[nid("wcscpy_s")]
pub unsafe extern "C" fn wcscpy_s(s1: *mut WChar, s1max: usize, s2: *const WChar) -> i32 {
    unsafe { wcopy_s(s1, s1max, s2, None, false, c"wcscpy_s: bad arguments") }
}

/// `wcsncpy_s`.
#[nid("wcsncpy_s")]
pub unsafe extern "C" fn wcsncpy_s(
    s1: *mut WChar,
    s1max: usize,
    s2: *const WChar,
    n: usize,
) -> i32 {
    unsafe { wcopy_s(s1, s1max, s2, Some(n), false, c"wcsncpy_s: bad arguments") }
}

/// `wcscat_s`.
#[nid("wcscat_s")]
pub unsafe extern "C" fn wcscat_s(s1: *mut WChar, s1max: usize, s2: *const WChar) -> i32 {
    unsafe { wcopy_s(s1, s1max, s2, None, true, c"wcscat_s: bad arguments") }
}

/// `wcsncat_s`.
#[nid("wcsncat_s")]
pub unsafe extern "C" fn wcsncat_s(
    s1: *mut WChar,
    s1max: usize,
    s2: *const WChar,
    n: usize,
) -> i32 {
    unsafe { wcopy_s(s1, s1max, s2, Some(n), true, c"wcsncat_s: bad arguments") }
}

/// `wmemcpy_s`/`wmemmove_s`: as `memcpy_s` in wide characters.
unsafe fn wmem_s(s1: *mut WChar, s1max: usize, s2: *const WChar, n: usize) -> i32 {
    unsafe {
        crate::strings::memmove_s(
            s1.cast(),
            s1max.saturating_mul(2),
            s2.cast(),
            n.saturating_mul(2),
        )
    }
}

/// `wmemcpy_s`.
#[nid("wmemcpy_s")]
pub unsafe extern "C" fn wmemcpy_s(
    s1: *mut WChar,
    s1max: usize,
    s2: *const WChar,
    n: usize,
) -> i32 {
    unsafe { wmem_s(s1, s1max, s2, n) }
}

/// `wmemmove_s`.
#[nid("wmemmove_s")]
pub unsafe extern "C" fn wmemmove_s(
    s1: *mut WChar,
    s1max: usize,
    s2: *const WChar,
    n: usize,
) -> i32 {
    unsafe { wmem_s(s1, s1max, s2, n) }
}

/// The wide `printf_s` forms into a buffer: `truncate` (snwprintf_s) cuts and returns
/// the full length; otherwise (swprintf_s) a result that does not fit is a violation
/// (`s[0]` cleared, negative result). `%n` and NULL `%s`/`%ls` are violations.
unsafe fn swprintf_s_to(
    s: *mut WChar,
    n: usize,
    fmt: *const WChar,
    ap: *mut VaListRaw,
    truncate: bool,
) -> i32 {
    let usable = !s.is_null() && n != 0 && n <= RSIZE_MAX;
    let clear = || {
        if usable {
            unsafe { *s = 0 };
        }
    };
    if !usable || fmt.is_null() {
        clear();
        return -violation(c"swprintf_s: bad buffer or format", 22);
    }
    let mut out = Vec::new();
    let (ok, violated) =
        crate::printf::annex_k(|| unsafe { wformat(fmt, &mut VaArgs(ap), &mut out) });
    if violated {
        clear();
        return -violation(c"swprintf_s: %n or NULL %s argument", 22);
    }
    if !ok {
        clear();
        return -1;
    }
    if out.len() >= n && !truncate {
        clear();
        return -violation(c"swprintf_s: buffer too small", 34);
    }
    let copy = out.len().min(n - 1);
    unsafe {
        std::ptr::copy_nonoverlapping(out.as_ptr(), s, copy);
        *s.add(copy) = 0;
    }
    out.len() as i32
}

/// `vswprintf_s`.
#[nid("vswprintf_s")]
pub unsafe extern "C" fn vswprintf_s(
    s: *mut WChar,
    n: usize,
    fmt: *const WChar,
    ap: *mut VaListRaw,
) -> i32 {
    unsafe { swprintf_s_to(s, n, fmt, ap, false) }
}

/// `vsnwprintf_s`.
#[nid("vsnwprintf_s")]
pub unsafe extern "C" fn vsnwprintf_s(
    s: *mut WChar,
    n: usize,
    fmt: *const WChar,
    ap: *mut VaListRaw,
) -> i32 {
    unsafe { swprintf_s_to(s, n, fmt, ap, true) }
}

unsafe extern "C" fn swprintf_s_impl(
    s: *mut WChar,
    n: usize,
    fmt: *const WChar,
    ap: *mut VaListRaw,
) -> i32 {
    unsafe { swprintf_s_to(s, n, fmt, ap, false) }
}
variadic!("swprintf_s", 3, swprintf_s_impl);

unsafe extern "C" fn snwprintf_s_impl(
    s: *mut WChar,
    n: usize,
    fmt: *const WChar,
    ap: *mut VaListRaw,
) -> i32 {
    unsafe { swprintf_s_to(s, n, fmt, ap, true) }
}
variadic!("snwprintf_s", 3, snwprintf_s_impl);

fn wprint_s_to(f: *mut GuestFile, fmt: *const WChar, ap: *mut VaListRaw) -> i32 {
    if fmt.is_null() {
        return -violation(c"wprintf_s: NULL format", 22);
    }
    let (r, violated) = crate::printf::annex_k(|| {
        // Format first, write only if no constraint was broken.
        let mut out = Vec::new();
        let ok = unsafe { wformat(fmt, &mut VaArgs(ap), &mut out) };
        (ok, out)
    });
    if violated {
        return -violation(c"wprintf_s: %n or NULL %s argument", 22);
    }
    let (ok, out) = r;
    if !ok {
        return -1;
    }
    stdio::orient(f, 1);
    put_wide(f, &out)
}

stdio::stream_entries!(
    wprint_s_to(WChar), std = STDOUTP, before = {};
    "wprintf_s" wprintf_s_impl, "fwprintf_s" fwprintf_s_impl,
    "vwprintf_s" vwprintf_s, "vfwprintf_s" vfwprintf_s
);

/// `vswscanf_s` (Annex K: an `rsize_t` count after each `%c`/`%s`/`%[` pointer).
#[nid("vswscanf_s")]
pub unsafe extern "C" fn vswscanf_s(s: *const WChar, fmt: *const WChar, ap: *mut VaListRaw) -> i32 {
    if s.is_null() || fmt.is_null() {
        violation(c"swscanf_s: NULL argument", 22);
        return -1;
    }
    unsafe { crate::scanf::scan_wide(fmt, s, &mut VaArgs(ap), true) }
}

unsafe extern "C" fn swscanf_s_impl(s: *const WChar, fmt: *const WChar, ap: *mut VaListRaw) -> i32 {
    unsafe { vswscanf_s(s, fmt, ap) }
}
variadic!("swscanf_s", 2, swscanf_s_impl);

/// `fwscanf_s` and friends on a stream: Annex K sizes after `%c`/`%s`/`%[`.
fn wscan_stream_s(f: *mut GuestFile, fmt: *const WChar, ap: *mut VaListRaw) -> i32 {
    wscan_stream_as(f, fmt, ap, true)
}

stdio::stream_entries!(
    wscan_stream_s(WChar), std = STDINP, before = { stdio::fflush(stdio::STDOUTP); };
    "wscanf_s" wscanf_s_impl, "fwscanf_s" fwscanf_s_impl,
    "vwscanf_s" vwscanf_s, "vfwscanf_s" vfwscanf_s
);
