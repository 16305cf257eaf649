//! Locales: only the C locale exists (as on the console, where games do not switch
//! locales). `setlocale` accepts "C", "POSIX" and "" (the environment's, which is "C") and
//! fails for everything else; `localeconv` returns FreeBSD's `struct lconv` with the C
//! locale's values.
//!
//! The ctype data objects that the headers' inline macros read directly have real storage:
//! - FreeBSD's `_DefaultRuneLocale` (a `_RuneLocale`: `__runetype` of `unsigned long` with
//!   the `_CTYPE_*` bits and, in the low 8 bits, the digit value of hex digits;
//!   `__maplower`/`__mapupper`) and `_CurrentRuneLocale` pointing at it, with
//!   `__mb_sb_limit` (256) that FreeBSD's `__sbistype` compares against;
//! - Dinkumware's `_Ctype`, `_Tolotab`, `_Touptab`: pointers to 257-entry `short` tables
//!   whose element -1 is `EOF`'s, and `_Getpctype`/`_Getptolower`/`_Getptoupper` that
//!   return them; code bits `_XD` 0x1, `_UP` 0x2, `_SP` 0x4, `_PU` 0x8, `_LO` 0x10, `_DI`
//!   0x20, `_CN` 0x40, `_BB` 0x80, `_XS` 0x100, `_XA` 0x200, `_XB` 0x400;
//! - `MB_CUR_MAX` sources: FreeBSD's `__mb_cur_max` (int), Dinkumware's `_Mbcurmax`
//!   (char) and `_Getmbcurmax()`: 1, the C locale's single-byte encoding.

use std::ffi::c_char;

use aps5_prx_macros::nid;

// FreeBSD <runetype.h> / <ctype.h> class bits.
const A: u64 = 0x100;
const C: u64 = 0x200;
const D: u64 = 0x400;
const G: u64 = 0x800;
const L: u64 = 0x1000;
const P: u64 = 0x2000;
const S: u64 = 0x4000;
const U: u64 = 0x8000;
const X: u64 = 0x1_0000;
const B: u64 = 0x2_0000;
const R: u64 = 0x4_0000;

/// FreeBSD's `_RuneRange`.
#[repr(C)]
pub struct RuneRange {
    nranges: i32,
    ranges: *const u8,
}

/// FreeBSD's `_RuneLocale` (amd64: 4224 bytes; `__runetype` at 64, `__maplower` at 2112,
/// `__mapupper` at 3136, as clang lays out the FreeBSD header's struct).
#[repr(C)]
pub struct RuneLocale {
    magic: [u8; 8],
    encoding: [u8; 32],
    sgetrune: usize,
    sputrune: usize,
    invalid_rune: i32,
    /// `__runetype[256]`.
    pub runetype: [u64; 256],
    /// `__maplower[256]`.
    pub maplower: [i32; 256],
    /// `__mapupper[256]`.
    pub mapupper: [i32; 256],
    runetype_ext: RuneRange,
    maplower_ext: RuneRange,
    mapupper_ext: RuneRange,
    variable: *const u8,
    variable_len: i32,
}

const _: () = {
    assert!(std::mem::size_of::<RuneLocale>() == 4224);
    assert!(std::mem::offset_of!(RuneLocale, runetype) == 64);
    assert!(std::mem::offset_of!(RuneLocale, maplower) == 2112);
    assert!(std::mem::offset_of!(RuneLocale, mapupper) == 3136);
    assert!(std::mem::offset_of!(RuneLocale, variable) == 4208);
};

/// The C locale's class of byte `c` as FreeBSD's rune table gives it.
const fn rune_class(c: u8) -> u64 {
    match c {
        b'\t' => C | S | B,
        b'\n' | 0x0B | 0x0C | b'\r' => C | S,
        0..=0x1F | 0x7F => C,
        b' ' => S | B | R,
        b'0'..=b'9' => D | R | G | X | (c - b'0') as u64,
        b'A'..=b'F' => U | X | R | G | A | (c - b'A' + 10) as u64,
        b'a'..=b'f' => L | X | R | G | A | (c - b'a' + 10) as u64,
        b'G'..=b'Z' => U | R | G | A,
        b'g'..=b'z' => L | R | G | A,
        0x21..=0x7E => P | R | G,
        _ => 0,
    }
}

const fn rune_locale() -> RuneLocale {
    let mut runetype = [0u64; 256];
    let mut maplower = [0i32; 256];
    let mut mapupper = [0i32; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        runetype[i] = rune_class(c);
        maplower[i] = c.to_ascii_lowercase() as i32;
        mapupper[i] = c.to_ascii_uppercase() as i32;
        i += 1;
    }
    let mut encoding = [0u8; 32];
    encoding[0] = b'N';
    encoding[1] = b'O';
    encoding[2] = b'N';
    encoding[3] = b'E';
    let empty = RuneRange {
        nranges: 0,
        ranges: std::ptr::null(),
    };
    RuneLocale {
        magic: *b"RuneMagi",
        encoding,
        sgetrune: 0,
        sputrune: 0,
        invalid_rune: 0xFFFD,
        runetype,
        maplower,
        mapupper,
        runetype_ext: empty,
        maplower_ext: RuneRange {
            nranges: 0,
            ranges: std::ptr::null(),
        },
        mapupper_ext: RuneRange {
            nranges: 0,
            ranges: std::ptr::null(),
        },
        variable: std::ptr::null(),
        variable_len: 0,
    }
}

/// FreeBSD's `_DefaultRuneLocale`: the C locale's table.
#[nid("_DefaultRuneLocale")]
pub static mut DEFAULT_RUNE_LOCALE: RuneLocale = rune_locale();

/// FreeBSD's `_CurrentRuneLocale` (a `_RuneLocale *`; always the C locale).
#[nid("_CurrentRuneLocale")]
pub static mut CURRENT_RUNE_LOCALE: *const RuneLocale = &raw const DEFAULT_RUNE_LOCALE;

/// FreeBSD's `__mb_sb_limit`: bytes below it are looked up in the rune table.
#[nid("__mb_sb_limit")]
pub static mut MB_SB_LIMIT: i32 = 256;

/// FreeBSD's `__mb_cur_max` (`MB_CUR_MAX`).
#[nid("__mb_cur_max")]
pub static mut MB_CUR_MAX: i32 = 1;

/// Dinkumware's `_Mbcurmax` (a `char`).
#[nid("_Mbcurmax")]
pub static mut MBCURMAX: i8 = 1;

/// Dinkumware's `_Getmbcurmax()`.
#[nid("_Getmbcurmax")]
pub extern "C" fn getmbcurmax() -> i32 {
    1
}

// Dinkumware ctype code bits.
const XD: i16 = 0x1;
const UP: i16 = 0x2;
const SP: i16 = 0x4;
const PU: i16 = 0x8;
const LO: i16 = 0x10;
const DI: i16 = 0x20;
const CN: i16 = 0x40;
const BB: i16 = 0x80;
const XB: i16 = 0x400;

/// Dinkumware's class of byte `c` in the C locale.
const fn dinkum_class(c: u8) -> i16 {
    match c {
        b'\t' => CN | XB,
        b'\n' | 0x0B | 0x0C | b'\r' => CN,
        0..=0x1F | 0x7F => BB,
        b' ' => SP,
        b'0'..=b'9' => DI | XD,
        b'A'..=b'F' => UP | XD,
        b'a'..=b'f' => LO | XD,
        b'G'..=b'Z' => UP,
        b'g'..=b'z' => LO,
        0x21..=0x7E => PU,
        _ => 0,
    }
}

/// A Dinkumware table: element 0 is EOF's (-1), element `c + 1` byte `c`'s.
const fn dinkum_table(kind: u8) -> [i16; 257] {
    let mut t = [0i16; 257];
    t[0] = match kind {
        0 => 0,
        _ => -1,
    };
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        t[i + 1] = match kind {
            0 => dinkum_class(c),
            1 => c.to_ascii_lowercase() as i16,
            _ => c.to_ascii_uppercase() as i16,
        };
        i += 1;
    }
    t
}

static CTYPE_TABLE: [i16; 257] = dinkum_table(0);
static TOLOWER_TABLE: [i16; 257] = dinkum_table(1);
static TOUPPER_TABLE: [i16; 257] = dinkum_table(2);

/// Dinkumware's `_Ctype` (`const short *`, indexable from -1).
#[nid("_Ctype")]
pub static mut CTYPE: *const i16 = CTYPE_TABLE.as_ptr().wrapping_add(1);

/// Dinkumware's `_Tolotab`.
#[nid("_Tolotab")]
pub static mut TOLOTAB: *const i16 = TOLOWER_TABLE.as_ptr().wrapping_add(1);

/// Dinkumware's `_Touptab`.
#[nid("_Touptab")]
pub static mut TOUPTAB: *const i16 = TOUPPER_TABLE.as_ptr().wrapping_add(1);

/// `_Getpctype()`: the class table (index -1 to 255).
#[nid("_Getpctype")]
pub extern "C" fn getpctype() -> *const i16 {
    CTYPE_TABLE.as_ptr().wrapping_add(1)
}

/// `_Getptolower()`.
#[nid("_Getptolower")]
pub extern "C" fn getptolower() -> *const i16 {
    TOLOWER_TABLE.as_ptr().wrapping_add(1)
}

/// `_Getptoupper()`.
#[nid("_Getptoupper")]
pub extern "C" fn getptoupper() -> *const i16 {
    TOUPPER_TABLE.as_ptr().wrapping_add(1)
}

/// FreeBSD's `struct lconv` (96 bytes: ten `char *`, fourteen `char`).
#[repr(C)]
pub struct Lconv {
    /// `decimal_point` ... `negative_sign`, in FreeBSD's order.
    pub strings: [*const c_char; 10],
    /// `int_frac_digits` ... `int_n_sign_posn`, in FreeBSD's order.
    pub chars: [c_char; 14],
}

const _: () = assert!(std::mem::size_of::<Lconv>() == 96);

/// The C locale's `lconv`: "." and empty strings, `CHAR_MAX` (127) for every number.
static mut LCONV: Lconv = Lconv {
    strings: [
        c".".as_ptr(),
        c"".as_ptr(),
        c"".as_ptr(),
        c"".as_ptr(),
        c"".as_ptr(),
        c"".as_ptr(),
        c"".as_ptr(),
        c"".as_ptr(),
        c"".as_ptr(),
        c"".as_ptr(),
    ],
    chars: [127; 14],
};

/// `localeconv`: the C locale's numeric and monetary conventions (static storage, as C
/// specifies; a program that writes to it sees its own changes until the next call).
#[nid("localeconv")]
pub extern "C" fn localeconv() -> *mut Lconv {
    unsafe {
        let l = &raw mut LCONV;
        let fresh = &mut *l;
        fresh.strings = [c"".as_ptr(); 10];
        fresh.strings[0] = c".".as_ptr();
        fresh.chars = [127; 14];
        l
    }
}

/// FreeBSD's `LC_*` categories: `LC_ALL` 0 through `LC_MESSAGES` 6.
const LC_MAX: i32 = 6;

/// `setlocale(category, locale)`: NULL queries ("C"); "C", "POSIX" and "" select the C
/// locale; any other name fails with NULL (and nothing changes), as does a category
/// outside `LC_ALL`..`LC_MESSAGES`.
#[nid("setlocale")]
pub unsafe extern "C" fn setlocale(category: i32, locale: *const c_char) -> *const c_char {
    if !(0..=LC_MAX).contains(&category) {
        crate::kernel::set_errno(22); // EINVAL
        return std::ptr::null();
    }
    if locale.is_null() {
        return c"C".as_ptr();
    }
    match unsafe { std::ffi::CStr::from_ptr(locale) }.to_bytes() {
        b"C" | b"POSIX" | b"" => c"C".as_ptr(),
        _ => std::ptr::null(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rune table and the Dinkumware tables classify every byte as the host C
    /// library's C-locale ctype functions do (the host is the oracle for the C locale).
    #[test]
    fn tables_agree_with_host_ctype() {
        let rl = unsafe { &*CURRENT_RUNE_LOCALE };
        let ct = getpctype();
        let lo = getptolower();
        let up = getptoupper();
        type Check = (unsafe extern "C" fn(i32) -> i32, u64, i16, &'static str);
        let checks: [Check; 12] = [
            (libc::isalpha, A, UP | LO | 0x200, "alpha"),
            (libc::iscntrl, C, CN | BB, "cntrl"),
            (libc::isdigit, D, DI, "digit"),
            (libc::isgraph, G, DI | LO | PU | UP | 0x200, "graph"),
            (libc::islower, L, LO, "lower"),
            (libc::ispunct, P, PU, "punct"),
            (libc::isspace, S, CN | SP | 0x100, "space"),
            (libc::isupper, U, UP, "upper"),
            (libc::isxdigit, X, XD, "xdigit"),
            (libc::isblank, B, SP | XB, "blank"),
            (libc::isprint, R, DI | LO | PU | SP | UP | 0x200, "print"),
            (libc::isalnum, A | D, DI | LO | UP | 0x200, "alnum"),
        ];
        let mut checked = 0;
        for c in 0..256i32 {
            for (f, bits, dbits, name) in checks {
                let host = unsafe { f(c) } != 0;
                assert_eq!(rl.runetype[c as usize] & bits != 0, host, "rune {name} {c}");
                let d = unsafe { *ct.offset(c as isize) };
                assert_eq!(d & dbits != 0, host, "Dinkumware {name} {c}");
                checked += 1;
            }
            assert_eq!(rl.maplower[c as usize], unsafe { libc::tolower(c) });
            assert_eq!(rl.mapupper[c as usize], unsafe { libc::toupper(c) });
            assert_eq!(i32::from(unsafe { *lo.offset(c as isize) }), unsafe {
                libc::tolower(c)
            });
            assert_eq!(i32::from(unsafe { *up.offset(c as isize) }), unsafe {
                libc::toupper(c)
            });
        }
        assert_eq!(checked, 256 * 12);
        // EOF (-1) entries.
        unsafe {
            assert_eq!(
                (*ct.offset(-1), *lo.offset(-1), *up.offset(-1)),
                (0, -1, -1)
            );
        }
        // Hex digit values in the low byte, as FreeBSD's digittoint() reads them.
        assert_eq!(rl.runetype[b'7' as usize] & 0xFF, 7);
        assert_eq!(rl.runetype[b'c' as usize] & 0xFF, 12);
        assert_eq!(rl.runetype[b'F' as usize] & 0xFF, 15);
        assert_eq!(&rl.magic, b"RuneMagi");
    }

    #[test]
    fn setlocale_and_localeconv() {
        unsafe {
            for name in [c"C", c"POSIX", c""] {
                for cat in 0..=6 {
                    let r = setlocale(cat, name.as_ptr());
                    assert_eq!(std::ffi::CStr::from_ptr(r), c"C");
                }
            }
            assert_eq!(
                std::ffi::CStr::from_ptr(setlocale(0, std::ptr::null())),
                c"C"
            );
            assert!(setlocale(0, c"en_US.UTF-8".as_ptr()).is_null());
            assert!(setlocale(7, c"C".as_ptr()).is_null());
            let l = localeconv();
            assert_eq!(std::ffi::CStr::from_ptr((*l).strings[0]), c".");
            assert_eq!(std::ffi::CStr::from_ptr((*l).strings[9]), c"");
            assert_eq!((*l).chars, [127; 14]);
            // The host's C-locale lconv says the same (its layout differs: compare by field).
            let h = libc::localeconv();
            assert_eq!(std::ffi::CStr::from_ptr((*h).decimal_point), c".");
            assert_eq!((*h).frac_digits as i32, 127);
            assert_eq!((*h).n_sign_posn as i32, 127);
        }
    }
}
