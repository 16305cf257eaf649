//! The printf engine: FreeBSD semantics for every C99 conversion, flags, field width and
//! precision (also from `*`), length modifiers (hh h l ll j z t L q) and positional
//! arguments (`%n$`, `*m$`). Integer, string, character and pointer conversions are
//! formatted here; floating-point conversions (f F e E g G a A) are formatted one value at
//! a time (`float`).
//!
//! Positional arguments follow FreeBSD's `vfprintf`: when a format uses `n$` anywhere, the
//! whole format is first walked to learn the type class of every argument (integer/pointer,
//! `double`, `long double`: each takes a different `va_arg` path, so mixed sizes work), then
//! the arguments are read in order into a table. A directive without `n$` in such a format
//! takes the argument after the previous one (FreeBSD's `nextarg`); arguments no directive
//! names are read as `int`. Indices from 1 to [`MAX_POSITION`].

use crate::va::Args;

/// The highest argument index `n$` may name (FreeBSD's `NL_ARGMAX`); beyond it the directive
/// is printed unchanged.
pub const MAX_POSITION: usize = 4096;

#[derive(Default, Clone, Copy)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
}

#[derive(Clone, Copy, PartialEq)]
enum Len {
    None,
    Hh,
    H,
    L,
    Ll,
    J,
    Z,
    T,
    BigL,
}

/// How `va_arg` reads an argument (what the positional table must know in advance).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Class {
    Int,
    Double,
    LongDouble,
}

#[derive(Clone, Copy)]
enum Val {
    Int(u64),
    Float(f64),
}

/// Where a directive's arguments come from.
enum Source<'a> {
    /// In order, straight from the caller's arguments.
    Sequential(&'a mut dyn Args),
    /// First pass of a positional format: records each argument's class, reads nothing.
    Collect {
        classes: Vec<Option<Class>>,
        next: usize,
    },
    /// Second pass: the arguments, read in order beforehand (index 0 is argument 1).
    Table { vals: Vec<Val>, next: usize },
}

impl Source<'_> {
    /// The next argument of class `c`, or argument `pos` (1-based) when given. A position
    /// on the conversion itself moves `next` past it; one for `*m$` does not.
    fn get(&mut self, c: Class, pos: Option<usize>, moves: bool) -> Val {
        match self {
            Source::Sequential(a) => match c {
                Class::Int => Val::Int(a.int()),
                Class::Double => Val::Float(a.double()),
                Class::LongDouble => Val::Float(a.long_double()),
            },
            Source::Collect { classes, next } => {
                let i = pos.unwrap_or(*next);
                if pos.is_none() || moves {
                    *next = i + 1;
                }
                if classes.len() <= i {
                    classes.resize(i + 1, None);
                }
                classes[i] = Some(c);
                Val::Int(0)
            }
            Source::Table { vals, next } => {
                let i = pos.unwrap_or(*next);
                if pos.is_none() || moves {
                    *next = i + 1;
                }
                let v = vals.get(i).copied().unwrap_or(Val::Int(0));
                match (v, c) {
                    (Val::Int(x), Class::Int) => Val::Int(x),
                    (Val::Float(x), Class::Double | Class::LongDouble) => Val::Float(x),
                    // The same index named with two classes: undefined in C; be harmless.
                    (Val::Int(_), _) => Val::Float(0.0),
                    (Val::Float(_), _) => Val::Int(0),
                }
            }
        }
    }

    fn int(&mut self, pos: Option<usize>, moves: bool) -> u64 {
        match self.get(Class::Int, pos, moves) {
            Val::Int(v) => v,
            Val::Float(_) => 0,
        }
    }

    fn collecting(&self) -> bool {
        matches!(self, Source::Collect { .. })
    }
}

/// Formats `fmt` (a NUL-terminated guest string) with `args` into `out`.
///
/// # Safety
/// `fmt` must be NUL-terminated; `%s`/`%n` arguments must be valid pointers.
pub unsafe fn format(fmt: *const u8, args: &mut dyn Args, out: &mut Vec<u8>) {
    if !unsafe { positional(fmt) } {
        unsafe { run(fmt, &mut Source::Sequential(args), out) };
        return;
    }
    let vals = unsafe { table(fmt, args) };
    let mut table = Source::Table { vals, next: 1 };
    unsafe { run(fmt, &mut table, out) };
}

/// The argument table of a positional format: every argument up to the highest index
/// named, read in order, each the way its class says (index 0 unused).
unsafe fn table(fmt: *const u8, args: &mut dyn Args) -> Vec<Val> {
    let mut collect = Source::Collect {
        classes: Vec::new(),
        next: 1,
    };
    let mut scratch = Vec::new();
    unsafe { run(fmt, &mut collect, &mut scratch) };
    let Source::Collect { classes, .. } = collect else {
        unreachable!()
    };
    let vals = classes
        .iter()
        .skip(1)
        .map(|c| match c {
            None | Some(Class::Int) => Val::Int(args.int()),
            Some(Class::Double) => Val::Float(args.double()),
            Some(Class::LongDouble) => Val::Float(args.long_double()),
        })
        .collect::<Vec<_>>();
    std::iter::once(Val::Int(0)).chain(vals).collect()
}

/// An argument read for a positional format (see [`positional_table`]).
#[derive(Clone, Copy, Debug)]
pub enum Arg {
    /// An integer or pointer.
    Int(u64),
    /// A `double` or `long double` (as the nearest `double`).
    Float(f64),
}

/// The arguments of a positional format (`n$`, `*m$`) as FreeBSD's `vfprintf` reads them
/// (see the module comment); index 0 is unused. For the wide printf family, which walks
/// its own format and needs the values by position.
///
/// # Safety
/// `fmt` must be NUL-terminated.
pub unsafe fn positional_table(fmt: *const u8, args: &mut dyn Args) -> Vec<Arg> {
    unsafe { table(fmt, args) }
        .into_iter()
        .map(|v| match v {
            Val::Int(x) => Arg::Int(x),
            Val::Float(x) => Arg::Float(x),
        })
        .collect()
}

/// Replays a queue of arguments as [`Args`] (whatever class is asked, the queued value).
pub struct Replay(pub std::collections::VecDeque<Arg>);

impl Args for Replay {
    fn int(&mut self) -> u64 {
        match self.0.pop_front() {
            Some(Arg::Int(v)) => v,
            _ => 0,
        }
    }

    fn double(&mut self) -> f64 {
        match self.0.pop_front() {
            Some(Arg::Float(v)) => v,
            _ => 0.0,
        }
    }

    fn long_double(&mut self) -> f64 {
        self.double()
    }
}

/// Whether `fmt` has a directive with `n$` (on the conversion or a `*`).
unsafe fn positional(fmt: *const u8) -> bool {
    let mut p = fmt;
    let mut in_directive = false;
    let mut digits = false;
    loop {
        let c = unsafe { *p };
        match c {
            0 => return false,
            b'$' if in_directive && digits => return true,
            b'%' => {
                // "%%" is not a directive.
                in_directive = !in_directive;
                digits = false;
            }
            b'0'..=b'9' if in_directive => digits = true,
            b'*' | b'.' | b'-' | b'+' | b' ' | b'#' | b'\'' if in_directive => digits = false,
            _ => in_directive = false,
        }
        p = unsafe { p.add(1) };
    }
}

unsafe fn run(fmt: *const u8, args: &mut Source, out: &mut Vec<u8>) {
    let mut p = fmt;
    loop {
        let c = unsafe { *p };
        if c == 0 {
            return;
        }
        if c != b'%' {
            out.push(c);
            p = unsafe { p.add(1) };
            continue;
        }
        let start = p;
        p = unsafe { p.add(1) };
        match unsafe { directive(&mut p, args, out) } {
            Ok(()) => {}
            Err(()) => {
                // Unknown or unsupported directive: print it unchanged.
                let mut q = start;
                while q < p {
                    out.push(unsafe { *q });
                    q = unsafe { q.add(1) };
                }
            }
        }
    }
}

unsafe fn number(p: &mut *const u8) -> Option<usize> {
    let mut v: Option<usize> = None;
    while let d @ b'0'..=b'9' = unsafe { **p } {
        v = Some(
            v.unwrap_or(0)
                .saturating_mul(10)
                .saturating_add(usize::from(d - b'0')),
        );
        *p = unsafe { p.add(1) };
    }
    v
}

/// `*` or `*m$` (the caller has consumed the `*`): the int argument it names.
unsafe fn star(p: &mut *const u8, args: &mut Source) -> Result<i32, ()> {
    let save = *p;
    let pos = match unsafe { number(p) } {
        Some(m) if unsafe { **p } == b'$' => {
            *p = unsafe { p.add(1) };
            if m == 0 || m > MAX_POSITION {
                return Err(());
            }
            Some(m)
        }
        _ => {
            *p = save;
            None
        }
    };
    Ok(args.int(pos, false) as i32)
}

unsafe fn directive(p: &mut *const u8, args: &mut Source, out: &mut Vec<u8>) -> Result<(), ()> {
    let mut s = Spec::default();
    let mut pos = None;
    loop {
        loop {
            match unsafe { **p } {
                b'-' => s.left = true,
                b'+' => s.plus = true,
                b' ' => s.space = true,
                b'#' => s.alt = true,
                b'0' => s.zero = true,
                b'\'' => {}
                _ => break,
            }
            *p = unsafe { p.add(1) };
        }
        if unsafe { **p } == b'*' {
            *p = unsafe { p.add(1) };
            let w = unsafe { star(p, args) }?;
            if w < 0 {
                s.left = true;
            }
            s.width = w.unsigned_abs() as usize;
        } else if let Some(w) = unsafe { number(p) } {
            if unsafe { **p } == b'$' {
                // `n$`: the argument of this conversion; flags may follow.
                *p = unsafe { p.add(1) };
                if w == 0 || w > MAX_POSITION {
                    return Err(());
                }
                pos = Some(w);
                continue;
            }
            s.width = w;
        }
        break;
    }
    if unsafe { **p } == b'.' {
        *p = unsafe { p.add(1) };
        if unsafe { **p } == b'*' {
            *p = unsafe { p.add(1) };
            let v = unsafe { star(p, args) }?;
            s.precision = if v < 0 { None } else { Some(v as usize) };
        } else {
            s.precision = Some(unsafe { number(p) }.unwrap_or(0));
        }
    }
    let mut len = Len::None;
    loop {
        let c = unsafe { **p };
        len = match (c, len) {
            (b'h', Len::H) => Len::Hh,
            (b'h', _) => Len::H,
            (b'l', Len::L) => Len::Ll,
            (b'l', _) => Len::L,
            (b'q', _) => Len::Ll,
            (b'j', _) => Len::J,
            (b'z', _) => Len::Z,
            (b't', _) => Len::T,
            (b'L', _) => Len::BigL,
            _ => break,
        };
        *p = unsafe { p.add(1) };
    }
    let conv = unsafe { **p };
    if conv == 0 {
        return Err(());
    }
    *p = unsafe { p.add(1) };
    if conv == b'%' {
        out.push(b'%');
        return Ok(());
    }
    let class = match conv {
        b'd' | b'i' | b'D' | b'u' | b'o' | b'x' | b'X' | b'U' | b'O' | b'p' | b'c' | b'C'
        | b's' | b'S' | b'n' => Class::Int,
        b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' if len == Len::BigL => {
            Class::LongDouble
        }
        b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => Class::Double,
        _ => return Err(()),
    };
    let arg = args.get(class, pos, true);
    if args.collecting() {
        return Ok(());
    }
    let (raw, fv) = match arg {
        Val::Int(v) => (v, 0.0),
        Val::Float(v) => (0, v),
    };
    match conv {
        b'd' | b'i' | b'D' => {
            let len = if conv == b'D' { Len::L } else { len };
            let v: i64 = match len {
                Len::Hh => raw as i8 as i64,
                Len::H => raw as i16 as i64,
                Len::None => raw as i32 as i64,
                _ => raw as i64,
            };
            let sign: &[u8] = if v < 0 {
                b"-"
            } else if s.plus {
                b"+"
            } else if s.space {
                b" "
            } else {
                b""
            };
            integer(out, &s, sign, v.unsigned_abs(), 10, false);
        }
        b'u' | b'o' | b'x' | b'X' | b'U' | b'O' => {
            let len = if conv == b'U' || conv == b'O' {
                Len::L
            } else {
                len
            };
            let v: u64 = match len {
                Len::Hh => raw as u8 as u64,
                Len::H => raw as u16 as u64,
                Len::None => raw as u32 as u64,
                _ => raw,
            };
            let (base, upper) = match conv {
                b'o' | b'O' => (8, false),
                b'x' => (16, false),
                b'X' => (16, true),
                _ => (10, false),
            };
            let prefix: &[u8] = match (conv, s.alt && v != 0) {
                (b'x', true) => b"0x",
                (b'X', true) => b"0X",
                _ => b"",
            };
            let mut spec = s;
            spec.plus = false;
            spec.space = false;
            if matches!(conv, b'o' | b'O') && s.alt {
                // '#' with o: the first digit must be 0 (raise the precision if needed).
                let digits = digit_count(v, 8);
                let p = spec.precision.unwrap_or(0);
                if p <= digits || v == 0 {
                    spec.precision = Some(if v == 0 { p.max(1) } else { digits + 1 });
                }
            }
            integer(out, &spec, prefix, v, base, upper);
        }
        b'p' => {
            let v = raw;
            let mut spec = s;
            spec.alt = true;
            integer(out, &spec, b"0x", v, 16, false);
        }
        b'c' | b'C' => {
            let v = raw as u32;
            let mut buf = Vec::new();
            if len == Len::L || conv == b'C' {
                encode_wide(v, &mut buf);
            } else {
                buf.push(v as u8);
            }
            pad(out, &s, &buf, false);
        }
        b's' | b'S' => {
            let ptr = raw as *const u8;
            let wide = len == Len::L || conv == b'S';
            let mut buf = Vec::new();
            if ptr.is_null() && CHECKED.with(|c| c.get()) {
                VIOLATION.with(|v| v.set(true));
            }
            if ptr.is_null() {
                buf.extend_from_slice(b"(null)");
                if let Some(pr) = s.precision {
                    buf.truncate(pr);
                }
            } else if wide {
                // wchar_t is 2 bytes (Sony's ABI); one byte per character in the C locale.
                let mut q = ptr.cast::<u16>();
                loop {
                    if s.precision.is_some_and(|pr| buf.len() >= pr) {
                        break;
                    }
                    let w = unsafe { q.read_unaligned() };
                    if w == 0 {
                        break;
                    }
                    encode_wide(u32::from(w), &mut buf);
                    q = unsafe { q.add(1) };
                }
            } else {
                // Never read past the precision (the string may not be terminated). The
                // bytes are padded in place, not copied first.
                let mut i = 0usize;
                while s.precision.is_none_or(|pr| i < pr) && unsafe { *ptr.add(i) } != 0 {
                    i += 1;
                }
                // FreeBSD pads %s with zeros under the 0 flag (glibc: spaces).
                pad(
                    out,
                    &s,
                    unsafe { std::slice::from_raw_parts(ptr, i) },
                    false,
                );
                return Ok(());
            }
            pad(out, &s, &buf, false);
        }
        b'n' if CHECKED.with(|c| c.get()) => {
            // Annex K: %n is a runtime-constraint violation; nothing is stored.
            VIOLATION.with(|v| v.set(true));
        }
        b'n' => {
            let ptr = raw;
            let n = out.len() as u64;
            unsafe {
                match len {
                    Len::Hh => *(ptr as *mut u8) = n as u8,
                    Len::H => *(ptr as *mut u16) = n as u16,
                    Len::None => *(ptr as *mut u32) = n as u32,
                    _ => *(ptr as *mut u64) = n,
                }
            }
        }
        b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => {
            float(out, &s, conv, fv);
        }
        _ => return Err(()),
    }
    Ok(())
}

fn digit_count(mut v: u64, base: u64) -> usize {
    let mut n = 1;
    while v >= base {
        v /= base;
        n += 1;
    }
    n
}

fn integer(out: &mut Vec<u8>, s: &Spec, prefix: &[u8], v: u64, base: u64, upper: bool) {
    let digits_tab: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    // Digits on the stack (a u64 has at most 22 octal digits), written from the end.
    let mut buf = [0u8; 24];
    let mut i = buf.len();
    if !(v == 0 && s.precision == Some(0)) {
        let mut x = v;
        loop {
            i -= 1;
            buf[i] = digits_tab[(x % base) as usize];
            x /= base;
            if x == 0 {
                break;
            }
        }
    }
    let digits = &buf[i..];
    // The precision is a minimum digit count: leading zeros.
    let zeros = s.precision.unwrap_or(0).saturating_sub(digits.len());
    // The 0 flag pads with zeros after the sign/prefix unless a precision is given.
    let zero_pad = s.zero && !s.left && s.precision.is_none();
    let body_len = prefix.len() + zeros + digits.len();
    let fill = s.width.saturating_sub(body_len);
    if !s.left && !zero_pad {
        out.resize(out.len() + fill, b' ');
    }
    out.extend_from_slice(prefix);
    if zero_pad {
        out.resize(out.len() + fill, b'0');
    }
    out.resize(out.len() + zeros, b'0');
    out.extend_from_slice(digits);
    if s.left {
        out.resize(out.len() + fill, b' ');
    }
}

fn pad(out: &mut Vec<u8>, s: &Spec, body: &[u8], _zero: bool) {
    let fill = s.width.saturating_sub(body.len());
    if !s.left {
        out.resize(out.len() + fill, if s.zero { b'0' } else { b' ' });
    }
    out.extend_from_slice(body);
    if s.left {
        out.resize(out.len() + fill, b' ');
    }
}

thread_local! {
    /// Set when a wide character has no single-byte form (the call then fails, EILSEQ).
    static ILLEGAL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Annex K mode (`printf_s`...): `%n` and NULL `%s` arguments are violations.
    static CHECKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Set in Annex K mode when the format broke a runtime constraint.
    static VIOLATION: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` in Annex K mode (`%n` and NULL `%s` arguments are violations, `%n` stores
/// nothing); returns its result and whether a violation happened. For the wide family.
pub(crate) fn annex_k<R>(f: impl FnOnce() -> R) -> (R, bool) {
    CHECKED.with(|c| c.set(true));
    VIOLATION.with(|v| v.set(false));
    let r = f();
    CHECKED.with(|c| c.set(false));
    (r, VIOLATION.with(|v| v.replace(false)))
}

/// In Annex K mode, records a violation and returns true.
pub(crate) fn annex_k_violation() -> bool {
    let on = CHECKED.with(|c| c.get());
    if on {
        VIOLATION.with(|v| v.set(true));
    }
    on
}

/// How an Annex K format went.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Checked {
    /// Formatted.
    Done,
    /// A wide character had no single-byte form (errno EILSEQ).
    Encoding,
    /// A runtime constraint was broken: `%n`, or a NULL `%s` argument.
    Violation,
}

/// The `printf_s` family's formatting: as [`format_checked`], but `%n` stores nothing
/// and it or a NULL `%s` argument is reported as a violation (C11 K.3.5.3).
///
/// # Safety
/// As [`format`].
pub unsafe fn format_annex_k(fmt: *const u8, args: &mut dyn Args, out: &mut Vec<u8>) -> Checked {
    CHECKED.with(|c| c.set(true));
    VIOLATION.with(|v| v.set(false));
    let ok = unsafe { format_checked(fmt, args, out) };
    CHECKED.with(|c| c.set(false));
    if VIOLATION.with(|v| v.replace(false)) {
        Checked::Violation
    } else if ok {
        Checked::Done
    } else {
        Checked::Encoding
    }
}

/// A wide character as the C locale's single-byte encoding writes it (FreeBSD's "NONE"
/// encoding: 0-255 are the bytes themselves); others mark the call as failed.
fn encode_wide(v: u32, out: &mut Vec<u8>) {
    match u8::try_from(v) {
        Ok(b) => out.push(b),
        Err(_) => ILLEGAL.with(|e| e.set(true)),
    }
}

/// Like [`format`], but false (and errno EILSEQ) when a `%lc`/`%ls` character has no
/// single-byte form, as FreeBSD's printf fails then.
///
/// # Safety
/// As [`format`].
pub unsafe fn format_checked(fmt: *const u8, args: &mut dyn Args, out: &mut Vec<u8>) -> bool {
    ILLEGAL.with(|e| e.set(false));
    unsafe { format(fmt, args, out) };
    if ILLEGAL.with(|e| e.replace(false)) {
        crate::kernel::set_errno(86);
        return false;
    }
    true
}

fn float(out: &mut Vec<u8>, s: &Spec, conv: u8, v: f64) {
    if matches!(conv, b'f' | b'F')
        && v.is_finite()
        && !s.alt
        && fixed(out, s, v, s.precision.unwrap_or(6))
    {
        return;
    }
    // Rebuild the directive for one double and let the host format it. Directive and
    // result live on the stack for the common sizes: this runs for every %f of every frame.
    // Longest directive: % + 5 flags + 20 digits + . + 20 digits + conversion + NUL = 49.
    let mut f = [0u8; 64];
    let mut k = 0;
    let mut put = |c: u8| {
        f[k] = c;
        k += 1;
    };
    put(b'%');
    for (on, ch) in [
        (s.left, b'-'),
        (s.plus, b'+'),
        (s.space, b' '),
        (s.alt, b'#'),
        (s.zero, b'0'),
    ] {
        if on {
            put(ch);
        }
    }
    let decimal = |mut v: usize, put: &mut dyn FnMut(u8)| {
        let mut d = [0u8; 20];
        let mut i = d.len();
        loop {
            i -= 1;
            d[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        d[i..].iter().for_each(|&c| put(c));
    };
    if s.width > 0 {
        decimal(s.width, &mut put);
    }
    if let Some(p) = s.precision {
        put(b'.');
        decimal(p, &mut put);
    }
    put(conv);
    put(0);
    let need = 64 + s.width + s.precision.unwrap_or(0).min(1 << 20) + 330;
    let mut small = [0u8; 512];
    let mut big = Vec::new();
    let buf: &mut [u8] = if need <= small.len() {
        &mut small[..need]
    } else {
        big.resize(need, 0);
        &mut big
    };
    let n = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), f.as_ptr().cast(), v) };
    if n > 0 {
        out.extend_from_slice(&buf[..(n as usize).min(buf.len() - 1)]);
    }
}

/// `%f` of a finite value without the host: Rust's formatting with a precision prints the
/// exact value correctly rounded (ties to even), the same digits as glibc and FreeBSD
/// (checked against the host on random values by `tests.rs`). A host `snprintf` per value
/// costs nearly a whole native snprintf. False (nothing written) when the digits would not
/// fit the stack buffer.
fn fixed(out: &mut Vec<u8>, s: &Spec, v: f64, precision: usize) -> bool {
    use std::io::Write;
    // f64::MAX has 309 integer digits.
    if precision > 64 {
        return false;
    }
    let mut digits = [0u8; 400];
    let mut cur = std::io::Cursor::new(&mut digits[..]);
    if write!(cur, "{:.*}", precision, v.abs()).is_err() {
        return false;
    }
    let end = cur.position() as usize;
    let body = &digits[..end];
    let sign: &[u8] = if v.is_sign_negative() {
        b"-"
    } else if s.plus {
        b"+"
    } else if s.space {
        b" "
    } else {
        b""
    };
    let fill = s.width.saturating_sub(sign.len() + body.len());
    if !s.left && !s.zero {
        out.resize(out.len() + fill, b' ');
    }
    out.extend_from_slice(sign);
    if !s.left && s.zero {
        out.resize(out.len() + fill, b'0');
    }
    out.extend_from_slice(body);
    if s.left {
        out.resize(out.len() + fill, b' ');
    }
    true
}
