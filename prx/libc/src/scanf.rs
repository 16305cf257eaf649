//! The scanf engine: FreeBSD semantics for every C99 conversion (d i o u x X a e f g E G A F
//! s c [ ] [^ ] p n %), field widths, `*` suppression and length modifiers (hh h l ll j z t
//! L q), reading from a string or a guest `FILE` (through [`Input`], which can push back
//! as many characters as it read, as FreeBSD's stdio can).
//!
//! Where FreeBSD and C99/glibc differ, FreeBSD is followed:
//! - a number is the longest prefix that is a valid number: `1e+` gives 1 and leaves `e+`
//!   unread, `0x` with no hex digit after it gives 0 and leaves `x` (glibc consumes the
//!   dead end and fails);
//! - suppressed conversions (`%*d`) count as conversions when deciding between returning
//!   0 and EOF at end of input (glibc counts only assignments);
//! - `%c` with a width stores what is left when the input ends early and counts it.
//!
//! Integers are converted as `strtoimax`/`strtoumax` would (saturating at the 64-bit
//! limits, then truncated to the argument's size); floats by the host's `strtof`,
//! `strtod` or `strtold` on the collected text, so they round exactly as C does.
//! `wchar_t` is 2 bytes (Sony's ABI, see `wchar.rs`): `%lc`, `%ls` and `%l[` store each
//! byte as one UTF-16 unit (the C locale's single-byte encoding).

use aps5_prx_macros::{nid, variadic};

use crate::va::{Args, VaArgs, VaListRaw};

/// A character source for the scanner.
pub trait Input {
    /// The next byte, or None at end of input (or on a read error).
    fn get(&mut self) -> Option<u8>;
    /// Pushes back a byte that `get` returned (the most recent first).
    fn unget(&mut self, c: u8);
}

/// Reads a NUL-terminated string.
pub struct StrInput {
    p: *const u8,
    pos: usize,
}

impl StrInput {
    /// Reads from `p` (NUL-terminated).
    ///
    /// # Safety
    /// `p` must point to a NUL-terminated string that outlives the reader.
    pub unsafe fn new(p: *const u8) -> StrInput {
        StrInput { p, pos: 0 }
    }
}

impl Input for StrInput {
    fn get(&mut self) -> Option<u8> {
        let c = unsafe { *self.p.add(self.pos) };
        if c == 0 {
            return None;
        }
        self.pos += 1;
        Some(c)
    }

    fn unget(&mut self, _c: u8) {
        self.pos -= 1;
    }
}

/// A character source in code units: bytes of an [`Input`], or 16-bit wide characters.
trait Units {
    fn get(&mut self) -> Option<u32>;
    fn unget(&mut self, c: u32);
}

impl Units for &mut dyn Input {
    fn get(&mut self) -> Option<u32> {
        (**self).get().map(u32::from)
    }

    fn unget(&mut self, c: u32) {
        (**self).unget(c as u8)
    }
}

/// Reads a NUL-terminated wide (2-byte) string.
struct WideInput {
    p: *const u16,
    pos: usize,
}

impl Units for WideInput {
    fn get(&mut self) -> Option<u32> {
        let c = unsafe { self.p.add(self.pos).read_unaligned() };
        if c == 0 {
            return None;
        }
        self.pos += 1;
        Some(u32::from(c))
    }

    fn unget(&mut self, _c: u32) {
        self.pos -= 1;
    }
}

/// A source that counts what it consumed (for `%n`).
struct Counted<'a> {
    inp: &'a mut dyn Units,
    count: usize,
}

impl Counted<'_> {
    fn get(&mut self) -> Option<u32> {
        let c = self.inp.get();
        if c.is_some() {
            self.count += 1;
        }
        c
    }

    fn unget(&mut self, c: u32) {
        self.inp.unget(c);
        self.count -= 1;
    }

    /// Pushes back `units` (which were read in this order).
    fn unget_all(&mut self, units: &[u32]) {
        for &b in units.iter().rev() {
            self.unget(b);
        }
    }

    fn peek(&mut self) -> Option<u32> {
        let c = self.get()?;
        self.unget(c);
        Some(c)
    }

    /// Skips white space; false if the input ended.
    fn skip_space(&mut self) -> bool {
        loop {
            match self.get() {
                None => return false,
                Some(c) if is_space(c) => {}
                Some(c) => {
                    self.unget(c);
                    return true;
                }
            }
        }
    }
}

fn is_space(c: u32) -> bool {
    matches!(c, 0x20 | 0x09 | 0x0A | 0x0B | 0x0C | 0x0D)
}

/// `c` as the ASCII byte it is, if it is one.
fn ascii(c: u32) -> Option<u8> {
    u8::try_from(c).ok().filter(u8::is_ascii)
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Len {
    None,
    Hh,
    H,
    L,
    Ll,
    BigL,
}

/// How a conversion ended when it did not assign.
enum Fail {
    /// End of input before the conversion could start (or in the middle of `%c`'s first
    /// character): the caller returns EOF if nothing was converted yet.
    Input,
    /// The input did not match.
    Matching,
}

/// Scans `inp` as `fmt` says, storing through the pointers `args` yields. Returns the
/// number of assignments, or -1 (EOF) if the input ended before the first conversion.
///
/// # Safety
/// `fmt` must be NUL-terminated and every argument a valid pointer of the type its
/// conversion names.
pub unsafe fn scan(fmt: *const u8, inp: &mut dyn Input, args: &mut dyn Args) -> i32 {
    unsafe { scan_bytes(fmt, inp, args, false) }
}

/// The Annex K `scanf_s` family: as [`scan`], but each `%c`, `%s` and `%[` pointer is
/// followed by an `rsize_t` element count. Input that does not fit (with its NUL for `%s`
/// and `%[`) is a matching failure and clears the first element.
///
/// # Safety
/// As [`scan`].
pub unsafe fn scan_s(fmt: *const u8, inp: &mut dyn Input, args: &mut dyn Args) -> i32 {
    unsafe { scan_bytes(fmt, inp, args, true) }
}

unsafe fn scan_bytes(fmt: *const u8, inp: &mut dyn Input, args: &mut dyn Args, sized: bool) -> i32 {
    let f = unsafe { std::ffi::CStr::from_ptr(fmt.cast()) }.to_bytes();
    let f: Vec<u32> = f.iter().map(|&b| u32::from(b)).collect();
    let mut units = inp;
    unsafe { scan_units(&f, &mut units, args, sized) }
}

unsafe fn wide_units(fmt: *const u16) -> Vec<u32> {
    let mut n = 0;
    while unsafe { fmt.add(n).read_unaligned() } != 0 {
        n += 1;
    }
    (0..n)
        .map(|i| u32::from(unsafe { fmt.add(i).read_unaligned() }))
        .collect()
}

/// The wide scanf family on a wide string: a 2-byte `wchar_t` format and input;
/// `sized`: the Annex K form (see [`scan_s`]).
///
/// # Safety
/// As [`scan`]; `fmt` and `s` are NUL-terminated wide strings.
pub unsafe fn scan_wide(fmt: *const u16, s: *const u16, args: &mut dyn Args, sized: bool) -> i32 {
    let f = unsafe { wide_units(fmt) };
    let mut inp = WideInput { p: s, pos: 0 };
    unsafe { scan_units(&f, &mut inp, args, sized) }
}

/// The wide scanf family on a byte source (a stream: each byte is the character of the
/// same value in the C locale).
///
/// # Safety
/// As [`scan_wide`].
pub unsafe fn scan_wide_bytes(
    fmt: *const u16,
    inp: &mut dyn Input,
    args: &mut dyn Args,
    sized: bool,
) -> i32 {
    let f = unsafe { wide_units(fmt) };
    let mut units = inp;
    unsafe { scan_units(&f, &mut units, args, sized) }
}

/// The engine over code units (bytes, or the wide family's 16-bit characters); `sized`:
/// the Annex K form (see [`scan_s`]). In both
/// families `%s`, `%c` and `%[` store bytes (the C locale's multibyte form; a character
/// above 0xFF is a matching failure) and `%ls`, `%lc`, `%l[` wide characters.
unsafe fn scan_units(fmt: &[u32], inp: &mut dyn Units, args: &mut dyn Args, sized: bool) -> i32 {
    let mut inp = Counted { inp, count: 0 };
    let mut f = 0usize;
    let mut assigned = 0i32;
    let mut conversions = 0u32;
    let at = |f: usize| fmt.get(f).copied().unwrap_or(0);
    macro_rules! input_failure {
        () => {
            return if conversions != 0 { assigned } else { -1 }
        };
    }
    loop {
        let c = at(f);
        if c == 0 {
            return assigned;
        }
        f += 1;
        if is_space(c) {
            while is_space(at(f)) {
                f += 1;
            }
            inp.skip_space();
            continue;
        }
        if c != u32::from(b'%') {
            match inp.get() {
                None => input_failure!(),
                Some(x) if x == c => continue,
                Some(x) => {
                    inp.unget(x);
                    return assigned;
                }
            }
        }
        // A directive.
        let mut suppress = false;
        if at(f) == u32::from(b'*') {
            suppress = true;
            f += 1;
        }
        let mut width: usize = 0;
        while let Some(d @ b'0'..=b'9') = ascii(at(f)) {
            width = width
                .saturating_mul(10)
                .saturating_add(usize::from(d - b'0'));
            f += 1;
        }
        // Width 0 means no limit (as FreeBSD).
        let width = if width == 0 { usize::MAX } else { width };
        let mut len = Len::None;
        loop {
            len = match (ascii(at(f)).unwrap_or(0), len) {
                (b'h', Len::H) => Len::Hh,
                (b'h', _) => Len::H,
                (b'l', Len::L) => Len::Ll,
                (b'l', _) => Len::L,
                (b'q' | b'j' | b'z' | b't', _) => Len::Ll,
                (b'L', _) => Len::BigL,
                _ => break,
            };
            f += 1;
        }
        let conv = at(f);
        if f >= fmt.len() {
            // The format ends inside a directive.
            return -1;
        }
        f += 1;
        // A conversion letter is ASCII; anything else is an unknown conversion.
        let conv = ascii(conv).unwrap_or(0xFF);
        let result = match conv {
            b'%' => {
                if !inp.skip_space() {
                    input_failure!();
                }
                match inp.get() {
                    Some(0x25) => continue,
                    Some(x) => {
                        inp.unget(x);
                        return assigned;
                    }
                    None => input_failure!(),
                }
            }
            b'n' => {
                if !suppress {
                    let p = args.int();
                    unsafe { store_int(p, len, inp.count as u64) };
                }
                continue;
            }
            b'c' => {
                let w = if width == usize::MAX { 1 } else { width };
                unsafe { chars(&mut inp, w, suppress, len == Len::L, sized, args) }
            }
            b's' => {
                if !inp.skip_space() {
                    input_failure!();
                }
                let set = |c: u32| !is_space(c);
                unsafe { run(&mut inp, width, &set, suppress, len == Len::L, sized, args) }
            }
            b'[' => {
                let Some((set, rest)) = scanset(fmt, f) else {
                    // No closing bracket: an invalid format.
                    return if conversions != 0 { assigned } else { -1 };
                };
                f = rest;
                let set = |c: u32| set.contains(c);
                unsafe { run(&mut inp, width, &set, suppress, len == Len::L, sized, args) }
            }
            b'd' | b'i' | b'o' | b'u' | b'x' | b'X' | b'p' => {
                if !inp.skip_space() {
                    input_failure!();
                }
                let base = match conv {
                    b'd' | b'u' => 10,
                    b'i' => 0,
                    b'o' => 8,
                    _ => 16,
                };
                let signed = matches!(conv, b'd' | b'i');
                let len = if conv == b'p' { Len::L } else { len };
                match integer(&mut inp, width, base, signed) {
                    Some(v) => {
                        if !suppress {
                            let p = args.int();
                            unsafe { store_int(p, len, v) };
                        }
                        Ok(())
                    }
                    None => Err(Fail::Matching),
                }
            }
            b'a' | b'A' | b'e' | b'E' | b'f' | b'F' | b'g' | b'G' => {
                if !inp.skip_space() {
                    input_failure!();
                }
                match float_text(&mut inp, width) {
                    Some(text) => {
                        if !suppress {
                            let p = args.int();
                            unsafe { store_float(p, len, &text) };
                        }
                        Ok(())
                    }
                    None => Err(Fail::Matching),
                }
            }
            // Unknown conversion: FreeBSD stops as on a matching failure.
            _ => Err(Fail::Matching),
        };
        match result {
            Ok(()) => {
                if !suppress {
                    assigned += 1;
                }
                conversions += 1;
            }
            Err(Fail::Input) => input_failure!(),
            Err(Fail::Matching) => return assigned,
        }
    }
}

/// `%c`: exactly `w` characters (fewer if the input ends after the first), no NUL.
unsafe fn chars(
    inp: &mut Counted,
    w: usize,
    suppress: bool,
    wide: bool,
    sized: bool,
    args: &mut dyn Args,
) -> Result<(), Fail> {
    let (dst, room) = destination(suppress, sized, args);
    let mut n = 0usize;
    while n < w {
        let Some(c) = inp.get() else { break };
        if !suppress && n >= room {
            return Err(Fail::Matching);
        }
        if !suppress && !unsafe { put(dst, n, c, wide) } {
            inp.unget(c);
            return Err(Fail::Matching);
        }
        n += 1;
    }
    if n == 0 { Err(Fail::Input) } else { Ok(()) }
}

/// Takes a `%c`/`%s`/`%[` destination from the arguments: its address (0 when the
/// assignment is suppressed) and its room in characters (Annex K `sized`: the `rsize_t`
/// after the pointer; else unbounded).
fn destination(suppress: bool, sized: bool, args: &mut dyn Args) -> (u64, usize) {
    if suppress {
        return (0, usize::MAX);
    }
    let dst = args.int();
    let room = if sized {
        args.int() as usize
    } else {
        usize::MAX
    };
    (dst, room)
}

/// Stores character `i` of a `%c`/`%s`/`%[` destination: a 2-byte `wchar_t`, or one byte
/// (false if the character has none: only possible in the wide family).
unsafe fn put(dst: u64, i: usize, c: u32, wide: bool) -> bool {
    unsafe {
        if wide {
            (dst as *mut u16).add(i).write_unaligned(c as u16);
        } else {
            let Ok(b) = u8::try_from(c) else {
                return false;
            };
            *(dst as *mut u8).add(i) = b;
        }
    }
    true
}

/// `%s` and `%[`: the longest run (at most `width`) of characters in `set`, then a NUL.
unsafe fn run(
    inp: &mut Counted,
    width: usize,
    set: &dyn Fn(u32) -> bool,
    suppress: bool,
    wide: bool,
    sized: bool,
    args: &mut dyn Args,
) -> Result<(), Fail> {
    let (dst, room) = destination(suppress, sized, args);
    let mut n = 0usize;
    let mut ended = false;
    while n < width {
        match inp.get() {
            None => {
                ended = true;
                break;
            }
            Some(c) if set(c) => {
                if !suppress && n + 1 >= room {
                    // No room for it and the NUL (Annex K): a matching failure.
                    if room > 0 {
                        unsafe { put(dst, 0, 0, wide) };
                    }
                    return Err(Fail::Matching);
                }
                if !suppress && !unsafe { put(dst, n, c, wide) } {
                    inp.unget(c);
                    return Err(Fail::Matching);
                }
                n += 1;
            }
            Some(c) => {
                inp.unget(c);
                break;
            }
        }
    }
    if n == 0 {
        return Err(if ended { Fail::Input } else { Fail::Matching });
    }
    if !suppress {
        unsafe { put(dst, n, 0, wide) };
    }
    Ok(())
}

/// A scanset: inclusive ranges of characters, possibly negated.
struct Scanset {
    ranges: Vec<(u32, u32)>,
    negate: bool,
}

impl Scanset {
    fn contains(&self, c: u32) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != self.negate
    }
}

/// Parses a scanset starting at `fmt[f]` (after `[`): `^` negates, `]` first is a member,
/// `a-z` is a range (a `-` first, last, or before a smaller character is itself a member).
/// Returns the set and the index after the closing `]`, or None if there is none.
fn scanset(fmt: &[u32], mut f: usize) -> Option<(Scanset, usize)> {
    let at = |f: usize| fmt.get(f).copied().unwrap_or(0);
    let close = u32::from(b']');
    let mut set = Scanset {
        ranges: Vec::new(),
        negate: at(f) == u32::from(b'^'),
    };
    if set.negate {
        f += 1;
    }
    let mut first = true;
    let mut prev: Option<u32> = None;
    loop {
        let c = at(f);
        if c == 0 {
            return None;
        }
        f += 1;
        if c == close && !first {
            break;
        }
        first = false;
        let hi = at(f);
        if let Some(lo) =
            prev.filter(|&lo| c == u32::from(b'-') && hi != close && hi != 0 && hi >= lo)
        {
            set.ranges.push((lo, hi));
            f += 1;
            prev = None;
            continue;
        }
        set.ranges.push((c, c));
        prev = Some(c);
    }
    Some((set, f))
}

fn digit(c: u32, base: u32) -> Option<u32> {
    char::from_u32(c)?.to_digit(base)
}

/// An integer field: optional sign, `0x` prefix (bases 16 and 0), `0` prefix (base 0:
/// octal), digits; at most `width` characters. None (input pushed back) if there is no
/// digit. The value as `strtoimax` (signed) or `strtoumax` would give it.
fn integer(inp: &mut Counted, width: usize, mut base: u32, signed: bool) -> Option<u64> {
    let mut r = Field {
        text: Vec::new(),
        left: width,
    };
    let neg = r.accept(inp, |c| c == 0x2B || c == 0x2D) && r.text[0] == 0x2D;
    let sign_len = r.text.len();
    let mut digits_at = sign_len;
    if (base == 0 || base == 16) && r.accept(inp, |c| c == 0x30) {
        if r.accept(inp, |c| c == 0x78 || c == 0x58) {
            base = 16;
            digits_at = r.text.len();
        } else if base == 0 {
            // The 0 is an octal digit.
            base = 8;
        }
    }
    if base == 0 {
        base = 10;
    }
    while r.accept(inp, |c| digit(c, base).is_some()) {}
    let mut text = r.text;
    if text.len() == digits_at {
        // No digit after the prefix: "0x" counts as the number 0 followed by "x"; a lone
        // sign is no number.
        if digits_at > sign_len {
            inp.unget(text.pop().unwrap_or(0x78));
        } else {
            inp.unget_all(&text);
            return None;
        }
    }
    let mut mag: u64 = 0;
    let mut overflow = false;
    for &c in &text[digits_at.min(text.len())..] {
        let d = u64::from(digit(c, base).unwrap_or(0));
        match mag
            .checked_mul(u64::from(base))
            .and_then(|m| m.checked_add(d))
        {
            Some(m) => mag = m,
            None => overflow = true,
        }
    }
    Some(if signed {
        if neg {
            if overflow || mag > 1u64 << 63 {
                i64::MIN as u64
            } else {
                (mag as i64).wrapping_neg() as u64
            }
        } else if overflow || mag > i64::MAX as u64 {
            i64::MAX as u64
        } else {
            mag
        }
    } else if overflow {
        u64::MAX
    } else if neg {
        mag.wrapping_neg()
    } else {
        mag
    })
}

/// Stores an integer conversion's value with the argument's size.
unsafe fn store_int(p: u64, len: Len, v: u64) {
    unsafe {
        match len {
            Len::Hh => *(p as *mut u8) = v as u8,
            Len::H => (p as *mut u16).write_unaligned(v as u16),
            Len::None | Len::BigL => (p as *mut u32).write_unaligned(v as u32),
            Len::L | Len::Ll => (p as *mut u64).write_unaligned(v),
        }
    }
}

/// A floating-point field: the longest prefix (at most `width` characters) that is a
/// number as `strtod` reads it (decimal or hex, optional exponent, `inf`, `infinity`,
/// `nan`, `nan(chars)`); what was read past it is pushed back. None if there is none.
fn float_text(inp: &mut Counted, width: usize) -> Option<Vec<u8>> {
    let lower = |c: u32| ascii(c).map_or(0, |b| b.to_ascii_lowercase());
    let mut r = Field {
        text: Vec::new(),
        left: width,
    };
    // Length of the longest valid prefix so far.
    let mut commit = 0usize;
    r.accept(inp, |c| c == 0x2B || c == 0x2D);
    let start = r.text.len();
    'parse: {
        match inp.peek() {
            Some(c) if lower(c) == b'i' => {
                for (i, &w) in b"infinity".iter().enumerate() {
                    if !r.accept(inp, |c| lower(c) == w) {
                        break 'parse;
                    }
                    if i == 2 || i == 7 {
                        commit = r.text.len();
                    }
                }
            }
            Some(c) if lower(c) == b'n' => {
                for &w in b"nan" {
                    if !r.accept(inp, |c| lower(c) == w) {
                        break 'parse;
                    }
                }
                commit = r.text.len();
                if r.accept(inp, |c| c == 0x28) {
                    while r.accept(inp, |c| {
                        ascii(c).is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
                    }) {}
                    if r.accept(inp, |c| c == 0x29) {
                        commit = r.text.len();
                    }
                }
            }
            _ => {
                let mut hex = false;
                if r.accept(inp, |c| c == 0x30) {
                    commit = r.text.len();
                    hex = r.accept(inp, |c| lower(c) == b'x');
                }
                let radix = if hex { 16 } else { 10 };
                // Digits of the significand (after a hex prefix: only those after it).
                let mut any = !hex && commit > start;
                while r.accept(inp, |c| digit(c, radix).is_some()) {
                    commit = r.text.len();
                    any = true;
                }
                if r.accept(inp, |c| c == 0x2E) {
                    if any {
                        commit = r.text.len();
                    }
                    while r.accept(inp, |c| digit(c, radix).is_some()) {
                        commit = r.text.len();
                        any = true;
                    }
                }
                if !any {
                    break 'parse;
                }
                let e = if hex { b'p' } else { b'e' };
                if r.accept(inp, |c| lower(c) == e) {
                    r.accept(inp, |c| c == 0x2B || c == 0x2D);
                    while r.accept(inp, |c| digit(c, 10).is_some()) {
                        commit = r.text.len();
                    }
                }
            }
        }
    }
    let text = r.text;
    if commit == 0 {
        inp.unget_all(&text);
        return None;
    }
    inp.unget_all(&text[commit..]);
    // What was committed is ASCII (digits, signs, letters of inf/nan/hex, dot, parens).
    Some(text[..commit].iter().map(|&c| c as u8).collect())
}

/// The characters of a field read so far, and how many more the width allows.
struct Field {
    text: Vec<u32>,
    left: usize,
}

impl Field {
    /// Reads one character if the width allows and `ok` accepts it (else puts it back).
    fn accept(&mut self, inp: &mut Counted, ok: impl Fn(u32) -> bool) -> bool {
        if self.left == 0 {
            return false;
        }
        match inp.get() {
            Some(c) if ok(c) => {
                self.text.push(c);
                self.left -= 1;
                true
            }
            Some(c) => {
                inp.unget(c);
                false
            }
            None => false,
        }
    }
}

unsafe extern "C" {
    #[link_name = "strtold"]
    fn host_strtold_marker();
}

/// `strtold` into 10 bytes of x87 extended precision (Rust has no `long double`: the
/// result comes back in `st(0)` and is stored from there).
#[unsafe(naked)]
unsafe extern "C" fn strtold_to(_s: *const u8, _out: *mut u8) {
    core::arch::naked_asm!(
        "push rbx",
        "mov rbx, rsi",
        "xor esi, esi",
        "call {strtold}",
        "fstp tbyte ptr [rbx]",
        "pop rbx",
        "ret",
        strtold = sym host_strtold_marker,
    )
}

/// Converts the collected text with the host's `strtof`/`strtod`/`strtold` and stores it.
/// A `nan(chars)` payload is dropped (a quiet NaN of the given sign), as glibc's scanf does;
/// the hosts' `strtod` payload rules differ (decimal here, hex on FreeBSD).
unsafe fn store_float(p: u64, len: Len, text: &[u8]) {
    let cut = match text.iter().position(|&c| c == b'(') {
        Some(i) => i,
        None => text.len(),
    };
    let mut z = text[..cut].to_vec();
    z.push(0);
    let s = z.as_ptr().cast::<libc::c_char>();
    unsafe {
        match len {
            Len::L | Len::Ll => {
                (p as *mut f64).write_unaligned(libc::strtod(s, std::ptr::null_mut()));
            }
            Len::BigL => {
                let mut b = [0u8; 10];
                strtold_to(z.as_ptr(), b.as_mut_ptr());
                std::ptr::copy_nonoverlapping(b.as_ptr(), p as *mut u8, 10);
            }
            _ => (p as *mut f32).write_unaligned(libc::strtof(s, std::ptr::null_mut())),
        }
    }
}

unsafe extern "C" fn sscanf_s_impl(s: *const u8, fmt: *const u8, ap: *mut VaListRaw) -> i32 {
    unsafe { vsscanf_s(s, fmt, ap) }
}
variadic!("sscanf_s", 2, sscanf_s_impl);

/// `vsscanf_s` (Annex K: sizes after `%c`/`%s`/`%[` pointers; NULL arguments are
/// violations).
#[nid("vsscanf_s")]
pub unsafe extern "C" fn vsscanf_s(s: *const u8, fmt: *const u8, ap: *mut VaListRaw) -> i32 {
    if s.is_null() || fmt.is_null() {
        crate::strings::violation(c"sscanf_s: NULL argument", 22);
        return -1;
    }
    unsafe { scan_s(fmt, &mut StrInput::new(s), &mut VaArgs(ap)) }
}

unsafe extern "C" fn sscanf_impl(s: *const u8, fmt: *const u8, ap: *mut VaListRaw) -> i32 {
    unsafe { vsscanf(s, fmt, ap) }
}
variadic!("sscanf", 2, sscanf_impl);

/// `vsscanf`.
#[nid("vsscanf")]
pub unsafe extern "C" fn vsscanf(s: *const u8, fmt: *const u8, ap: *mut VaListRaw) -> i32 {
    if s.is_null() || fmt.is_null() {
        return -1;
    }
    unsafe { scan(fmt, &mut StrInput::new(s), &mut VaArgs(ap)) }
}
