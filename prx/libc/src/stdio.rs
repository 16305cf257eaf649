//! stdio: `FILE` objects with real storage (456 bytes, the size public reverse engineering
//! gives for Sony's Dinkumware/FreeBSD hybrid). The first 0x100 bytes stay zero so inline
//! getc/putc macros of either header flavour see an empty buffer and call the functions;
//! this library's state hangs off a pointer at offset 0x108.

use std::ptr;
use std::sync::Mutex;

use aps5_prx_macros::{nid, variadic};

use crate::kernel;
use crate::printf;
use crate::scanf;
use crate::va::{VaArgs, VaListRaw};

/// Size of a guest `FILE`.
pub const FILE_SIZE: usize = 456;
const MAGIC: u64 = 0x4150_5335_4649_4C45; // "APS5FILE"

/// A guest-visible `FILE`.
#[repr(C, align(16))]
pub struct GuestFile {
    head: [u8; 0x100],
    magic: u64,
    state: *mut FileState,
    tail: [u8; FILE_SIZE - 0x110],
}

const _: () = assert!(std::mem::size_of::<GuestFile>() == FILE_SIZE + 8); // align(16) pads to 464

impl GuestFile {
    const fn empty() -> Self {
        GuestFile {
            head: [0; 0x100],
            magic: 0,
            state: ptr::null_mut(),
            tail: [0; FILE_SIZE - 0x110],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Buffering {
    None,
    Line,
    Full,
}

struct Inner {
    wbuf: Vec<u8>,
    rbuf: Vec<u8>,
    rpos: usize,
    mode: Buffering,
    eof: bool,
    err: bool,
    /// `fgetln`'s line (valid until the next read of the stream).
    line: Vec<u8>,
    /// Orientation (`fwide`): >0 wide, <0 byte, 0 not yet decided.
    orient: i32,
}

/// Per-stream state.
pub struct FileState {
    fd: std::sync::atomic::AtomicI32,
    inner: Mutex<Inner>,
    /// The stream lock of `flockfile`: (owning thread, depth, threads waiting for it).
    /// Every stdio call on the stream takes it too, so a thread holding it gets whole lines
    /// out uninterrupted.
    owner: Mutex<(u64, u32, u32)>,
    released: std::sync::Condvar,
}

/// The calling thread's id for the stream lock (never 0).
fn thread_id() -> u64 {
    unsafe { libc::pthread_self() as u64 }
}

/// A stream's state, locked: the stream lock (recursive) and the buffer mutex.
struct Locked<'a> {
    st: &'a FileState,
    g: std::mem::ManuallyDrop<std::sync::MutexGuard<'a, Inner>>,
}

impl std::ops::Deref for Locked<'_> {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.g
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut Inner {
        &mut self.g
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        unsafe { std::mem::ManuallyDrop::drop(&mut self.g) };
        self.st.release();
    }
}

impl FileState {
    fn fd(&self) -> i32 {
        self.fd.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Takes the stream lock (recursive per thread) and the buffer.
    fn lock(&self) -> Locked<'_> {
        self.acquire(true);
        Locked {
            st: self,
            g: std::mem::ManuallyDrop::new(self.inner.lock().unwrap_or_else(|e| e.into_inner())),
        }
    }

    /// The `flockfile` lock; false if `wait` is false and another thread holds it.
    fn acquire(&self, wait: bool) -> bool {
        let me = thread_id();
        let mut o = self.owner.lock().unwrap_or_else(|e| e.into_inner());
        if o.0 == me {
            o.1 += 1;
            return true;
        }
        while o.1 > 0 {
            if !wait {
                return false;
            }
            o.2 += 1;
            o = self.released.wait(o).unwrap_or_else(|e| e.into_inner());
            o.2 -= 1;
        }
        (o.0, o.1) = (me, 1);
        true
    }

    fn release(&self) {
        let mut o = self.owner.lock().unwrap_or_else(|e| e.into_inner());
        if o.0 == thread_id() && o.1 > 0 {
            o.1 -= 1;
            if o.1 == 0 {
                o.0 = 0;
                // A notify is a system call (futex wake) even with nobody waiting: every
                // printf paid one.
                if o.2 > 0 {
                    self.released.notify_one();
                }
            }
        }
    }

    fn new(fd: i32, mode: Buffering) -> Box<FileState> {
        Box::new(FileState {
            fd: std::sync::atomic::AtomicI32::new(fd),
            owner: Mutex::new((0, 0, 0)),
            released: std::sync::Condvar::new(),
            inner: Mutex::new(Inner {
                wbuf: Vec::new(),
                rbuf: Vec::new(),
                rpos: 0,
                mode,
                eof: false,
                err: false,
                line: Vec::new(),
                orient: 0,
            }),
        })
    }
}

/// Dinkumware's `_Stdin`, `_Stdout`, `_Stderr` are the FILE objects themselves.
#[nid("_Stdin")]
pub static mut STDIN: GuestFile = GuestFile::empty();
/// `_Stdout`.
#[nid("_Stdout")]
pub static mut STDOUT: GuestFile = GuestFile::empty();
/// `_Stderr`.
#[nid("_Stderr")]
pub static mut STDERR: GuestFile = GuestFile::empty();

/// FreeBSD's `__stdinp` (a `FILE *` variable).
#[nid("__stdinp")]
pub static mut STDINP: *mut GuestFile = &raw mut STDIN;
/// `__stdoutp`.
#[nid("__stdoutp")]
pub static mut STDOUTP: *mut GuestFile = &raw mut STDOUT;
/// `__stderrp`.
#[nid("__stderrp")]
pub static mut STDERRP: *mut GuestFile = &raw mut STDERR;
/// Plain `stdin` (a `FILE *` variable).
#[nid("stdin")]
pub static mut STDIN_VAR: *mut GuestFile = &raw mut STDIN;
/// Plain `stdout`.
#[nid("stdout")]
pub static mut STDOUT_VAR: *mut GuestFile = &raw mut STDOUT;
/// Plain `stderr`.
#[nid("stderr")]
pub static mut STDERR_VAR: *mut GuestFile = &raw mut STDERR;

/// Every open stream (for `fflush(NULL)` and exit).
static OPEN: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Sets up the three standard streams. stdout is line-buffered even on a pipe: a console
/// program's output should appear as it is printed, as it does on the console's TTY.
pub(crate) fn init() {
    unsafe {
        for (f, fd, mode) in [
            (&raw mut STDIN, 0, Buffering::Full),
            (&raw mut STDOUT, 1, Buffering::Line),
            (&raw mut STDERR, 2, Buffering::None),
        ] {
            (*f).magic = MAGIC;
            (*f).state = Box::into_raw(FileState::new(fd, mode));
            OPEN.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(f as usize);
        }
    }
}

unsafe fn state<'a>(f: *mut GuestFile) -> Option<&'a FileState> {
    if f.is_null() {
        return None;
    }
    unsafe {
        if (*f).magic != MAGIC || (*f).state.is_null() {
            return None;
        }
        Some(&*(*f).state)
    }
}

fn write_all(fd: i32, mut b: &[u8]) -> bool {
    while !b.is_empty() {
        let n = unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) };
        if n < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return false;
        }
        b = &b[n as usize..];
    }
    true
}

fn flush_locked(fd: i32, g: &mut Inner) -> bool {
    if g.wbuf.is_empty() {
        return true;
    }
    let ok = write_all(fd, &g.wbuf);
    g.wbuf.clear();
    if !ok {
        g.err = true;
    }
    ok
}

/// Writes bytes to a stream; returns false on error (EOF to the caller).
pub(crate) fn put(f: *mut GuestFile, b: &[u8]) -> bool {
    let Some(st) = (unsafe { state(f) }) else {
        kernel::set_errno(9); // EBADF
        return false;
    };
    let mut g = st.lock();
    // A byte write orients an unoriented stream (wide writes have oriented it already).
    if g.orient == 0 {
        g.orient = -1;
    }
    match g.mode {
        Buffering::None => {
            let ok = flush_locked(st.fd(), &mut g) && write_all(st.fd(), b);
            if !ok {
                g.err = true;
            }
            ok
        }
        Buffering::Line => {
            g.wbuf.extend_from_slice(b);
            if b.contains(&b'\n') {
                flush_locked(st.fd(), &mut g)
            } else {
                true
            }
        }
        Buffering::Full => {
            g.wbuf.extend_from_slice(b);
            if g.wbuf.len() >= 8192 {
                flush_locked(st.fd(), &mut g)
            } else {
                true
            }
        }
    }
}

pub(crate) fn flush(f: *mut GuestFile) -> bool {
    match unsafe { state(f) } {
        Some(st) => {
            let mut g = st.lock();
            flush_locked(st.fd(), &mut g)
        }
        None => false,
    }
}

/// Flushes every open stream (exit, `fflush(NULL)`).
pub fn flush_all() {
    let list: Vec<usize> = OPEN.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for f in list {
        flush(f as *mut GuestFile);
    }
}

fn eof_or(n: usize, ok: bool) -> i32 {
    if ok { n as i32 } else { -1 }
}

/// Defines the four stream entry points of one formatting family over its core
/// `$core(stream, fmt, ap)`: `$x(fmt, ...)` and `$vx(fmt, ap)` on the standard stream
/// `$std` (after `$before`: a read of stdin writes pending stdout first), and `$fx(f, fmt, ...)` and `$vfx(f, fmt, ap)` on a given stream. `$ch` is the format's
/// character type (`u8`, or `WChar` for the wide family).
macro_rules! stream_entries {
    (
        $core:ident($ch:ty), std = $std:ident, before = $before:block;
        $x:tt $x_impl:ident, $fx:tt $fx_impl:ident, $vx:tt $vx_fn:ident, $vfx:tt $vfx_fn:ident
    ) => {
        unsafe extern "C" fn $x_impl(fmt: *const $ch, ap: *mut VaListRaw) -> i32 {
            unsafe { $vx_fn(fmt, ap) }
        }
        variadic!($x, 1, $x_impl);

        unsafe extern "C" fn $fx_impl(
            f: *mut $crate::stdio::GuestFile,
            fmt: *const $ch,
            ap: *mut VaListRaw,
        ) -> i32 {
            $core(f, fmt, ap)
        }
        variadic!($fx, 2, $fx_impl);

        #[doc = concat!("`", $vx, "`.")]
        #[nid($vx)]
        pub unsafe extern "C" fn $vx_fn(fmt: *const $ch, ap: *mut VaListRaw) -> i32 {
            unsafe {
                $before
                $core($crate::stdio::$std, fmt, ap)
            }
        }

        #[doc = concat!("`", $vfx, "`.")]
        #[nid($vfx)]
        pub unsafe extern "C" fn $vfx_fn(
            f: *mut $crate::stdio::GuestFile,
            fmt: *const $ch,
            ap: *mut VaListRaw,
        ) -> i32 {
            $core(f, fmt, ap)
        }
    };
}
pub(crate) use stream_entries;

fn printf_to(f: *mut GuestFile, fmt: *const u8, ap: *mut VaListRaw) -> i32 {
    let mut out = Vec::with_capacity(128);
    if !unsafe { printf::format_checked(fmt, &mut VaArgs(ap), &mut out) } {
        return -1;
    }
    eof_or(out.len(), put(f, &out))
}

stream_entries!(
    printf_to(u8), std = STDOUTP, before = {};
    "printf" printf_impl, "fprintf" fprintf_impl, "vprintf" vprintf, "vfprintf" vfprintf
);

/// Formats into a caller buffer of `cap` bytes (None: unbounded, for sprintf).
unsafe fn to_buffer(buf: *mut u8, cap: Option<usize>, fmt: *const u8, ap: *mut VaListRaw) -> i32 {
    let mut out = Vec::with_capacity(128);
    if !unsafe { printf::format_checked(fmt, &mut VaArgs(ap), &mut out) } {
        return -1;
    }
    let n = out.len();
    let copy = match cap {
        None => n,
        Some(0) => return n as i32,
        Some(c) => n.min(c - 1),
    };
    if !buf.is_null() {
        unsafe {
            ptr::copy_nonoverlapping(out.as_ptr(), buf, copy);
            *buf.add(copy) = 0;
        }
    }
    n as i32
}

unsafe extern "C" fn sprintf_impl(buf: *mut u8, fmt: *const u8, ap: *mut VaListRaw) -> i32 {
    unsafe { to_buffer(buf, None, fmt, ap) }
}
variadic!("sprintf", 2, sprintf_impl);

unsafe extern "C" fn snprintf_impl(
    buf: *mut u8,
    n: usize,
    fmt: *const u8,
    ap: *mut VaListRaw,
) -> i32 {
    unsafe { to_buffer(buf, Some(n), fmt, ap) }
}
variadic!("snprintf", 3, snprintf_impl);

/// `vsprintf`.
#[nid("vsprintf")]
pub unsafe extern "C" fn vsprintf(buf: *mut u8, fmt: *const u8, ap: *mut VaListRaw) -> i32 {
    unsafe { to_buffer(buf, None, fmt, ap) }
}

/// `vsnprintf`.
#[nid("vsnprintf")]
pub unsafe extern "C" fn vsnprintf(
    buf: *mut u8,
    n: usize,
    fmt: *const u8,
    ap: *mut VaListRaw,
) -> i32 {
    unsafe { to_buffer(buf, Some(n), fmt, ap) }
}

unsafe fn cbytes<'a>(s: *const u8) -> &'a [u8] {
    unsafe { std::ffi::CStr::from_ptr(s.cast()) }.to_bytes()
}

/// `puts`: the string and a newline on stdout.
#[nid("puts")]
pub unsafe extern "C" fn puts(s: *const u8) -> i32 {
    let mut v = unsafe { cbytes(s) }.to_vec();
    v.push(b'\n');
    if put(unsafe { STDOUTP }, &v) { 0 } else { -1 }
}

/// `fputs`.
#[nid("fputs")]
pub unsafe extern "C" fn fputs(s: *const u8, f: *mut GuestFile) -> i32 {
    if put(f, unsafe { cbytes(s) }) { 0 } else { -1 }
}

/// `fputc`.
#[nid("fputc")]
pub unsafe extern "C" fn fputc(c: i32, f: *mut GuestFile) -> i32 {
    if put(f, &[c as u8]) {
        i32::from(c as u8)
    } else {
        -1
    }
}

/// `putc`.
#[nid("putc")]
pub unsafe extern "C" fn putc(c: i32, f: *mut GuestFile) -> i32 {
    unsafe { fputc(c, f) }
}

/// `putchar`.
#[nid("putchar")]
pub unsafe extern "C" fn putchar(c: i32) -> i32 {
    unsafe { fputc(c, STDOUTP) }
}

/// `fwrite`.
#[nid("fwrite")]
pub unsafe extern "C" fn fwrite(p: *const u8, size: usize, n: usize, f: *mut GuestFile) -> usize {
    let total = size.saturating_mul(n);
    if total == 0 {
        return 0;
    }
    if put(f, unsafe { std::slice::from_raw_parts(p, total) }) {
        n
    } else {
        0
    }
}

/// `fflush` (NULL: every stream).
#[nid("fflush")]
pub unsafe extern "C" fn fflush(f: *mut GuestFile) -> i32 {
    if f.is_null() {
        flush_all();
        return 0;
    }
    if flush(f) { 0 } else { -1 }
}

/// Fills the read buffer; false at end of file or error.
fn fill(st: &FileState, g: &mut Inner) -> bool {
    // A byte read orients an unoriented stream (wide reads have oriented it already).
    if g.orient == 0 {
        g.orient = -1;
    }
    if g.rpos < g.rbuf.len() {
        return true;
    }
    g.rbuf.resize(8192, 0);
    g.rpos = 0;
    let n = unsafe { libc::read(st.fd(), g.rbuf.as_mut_ptr().cast(), 8192) };
    if n <= 0 {
        g.rbuf.clear();
        if n == 0 {
            g.eof = true;
        } else {
            g.err = true;
        }
        return false;
    }
    g.rbuf.truncate(n as usize);
    true
}

/// `fread`.
#[nid("fread")]
pub unsafe extern "C" fn fread(p: *mut u8, size: usize, n: usize, f: *mut GuestFile) -> usize {
    let Some(st) = (unsafe { state(f) }) else {
        return 0;
    };
    let total = size.saturating_mul(n);
    if total == 0 {
        return 0;
    }
    let mut g = st.lock();
    flush_locked(st.fd(), &mut g);
    let mut got = 0usize;
    while got < total && fill(st, &mut g) {
        let take = (g.rbuf.len() - g.rpos).min(total - got);
        unsafe { ptr::copy_nonoverlapping(g.rbuf.as_ptr().add(g.rpos), p.add(got), take) };
        g.rpos += take;
        got += take;
    }
    got / size
}

/// `fgetc`.
#[nid("fgetc")]
pub unsafe extern "C" fn fgetc(f: *mut GuestFile) -> i32 {
    let mut b = 0u8;
    if unsafe { fread(&mut b, 1, 1, f) } == 1 {
        i32::from(b)
    } else {
        -1
    }
}

/// `getc`.
#[nid("getc")]
pub unsafe extern "C" fn getc(f: *mut GuestFile) -> i32 {
    unsafe { fgetc(f) }
}

/// `getchar`.
#[nid("getchar")]
pub unsafe extern "C" fn getchar() -> i32 {
    unsafe { fgetc(STDINP) }
}

/// `ungetc`.
#[nid("ungetc")]
pub unsafe extern "C" fn ungetc(c: i32, f: *mut GuestFile) -> i32 {
    let Some(st) = (unsafe { state(f) }) else {
        return -1;
    };
    if c < 0 {
        return -1;
    }
    let mut g = st.lock();
    if g.rpos > 0 {
        g.rpos -= 1;
        let at = g.rpos;
        g.rbuf[at] = c as u8;
    } else {
        g.rbuf.insert(0, c as u8);
    }
    g.eof = false;
    c
}

/// `fgets`.
#[nid("fgets")]
pub unsafe extern "C" fn fgets(buf: *mut u8, n: i32, f: *mut GuestFile) -> *mut u8 {
    let Some(st) = (unsafe { state(f) }) else {
        return ptr::null_mut();
    };
    if n <= 0 {
        return ptr::null_mut();
    }
    let mut g = st.lock();
    let mut i = 0usize;
    while i + 1 < n as usize && fill(st, &mut g) {
        let b = g.rbuf[g.rpos];
        g.rpos += 1;
        unsafe { *buf.add(i) = b };
        i += 1;
        if b == b'\n' {
            break;
        }
    }
    if i == 0 {
        return ptr::null_mut();
    }
    unsafe { *buf.add(i) = 0 };
    buf
}

/// FreeBSD open flags for an fopen mode string.
fn mode_flags(mode: &[u8]) -> Option<i32> {
    let plus = mode.contains(&b'+');
    let excl = if mode.contains(&b'x') { 0x800 } else { 0 };
    Some(match mode.first()? {
        b'r' => {
            if plus {
                2
            } else {
                0
            }
        }
        b'w' => (if plus { 2 } else { 1 }) | 0x200 | 0x400 | excl,
        b'a' => (if plus { 2 } else { 1 }) | 0x200 | 0x8 | excl,
        _ => return None,
    })
}

/// `fopen`: guest paths, through libkernel's `open`.
#[nid("fopen")]
pub unsafe extern "C" fn fopen(path: *const libc::c_char, mode: *const u8) -> *mut GuestFile {
    let Some(flags) = mode_flags(unsafe { cbytes(mode) }) else {
        kernel::set_errno(22);
        return ptr::null_mut();
    };
    let fd = kernel::open(path, flags, 0o666);
    if fd < 0 {
        return ptr::null_mut();
    }
    new_stream(fd)
}

/// A new fully buffered stream on `fd`, registered for `fflush(NULL)` and exit.
fn new_stream(fd: i32) -> *mut GuestFile {
    let f = Box::into_raw(Box::new(GuestFile::empty()));
    unsafe {
        (*f).magic = MAGIC;
        (*f).state = Box::into_raw(FileState::new(fd, Buffering::Full));
    }
    OPEN.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(f as usize);
    f
}

/// `fclose`.
#[nid("fclose")]
pub unsafe extern "C" fn fclose(f: *mut GuestFile) -> i32 {
    let Some(st) = (unsafe { state(f) }) else {
        kernel::set_errno(9);
        return -1;
    };
    let ok = flush(f);
    let fd = st.fd();
    OPEN.lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|&x| x != f as usize);
    let is_std =
        ptr::eq(f, &raw mut STDIN) || ptr::eq(f, &raw mut STDOUT) || ptr::eq(f, &raw mut STDERR);
    unsafe {
        drop(Box::from_raw((*f).state));
        (*f).state = ptr::null_mut();
        (*f).magic = 0;
        libc::close(fd);
        if !is_std {
            drop(Box::from_raw(f));
        }
    }
    if ok { 0 } else { -1 }
}

/// `fseek` (drops buffered data; SEEK_* values match).
#[nid("fseek")]
pub unsafe extern "C" fn fseek(f: *mut GuestFile, off: i64, whence: i32) -> i32 {
    let Some(st) = (unsafe { state(f) }) else {
        return -1;
    };
    let mut g = st.lock();
    flush_locked(st.fd(), &mut g);
    let off = if whence == 1 {
        off - (g.rbuf.len() - g.rpos) as i64
    } else {
        off
    };
    g.rbuf.clear();
    g.rpos = 0;
    g.eof = false;
    if unsafe { libc::lseek(st.fd(), off, whence) } < 0 {
        -1
    } else {
        0
    }
}

/// `ftell`.
#[nid("ftell")]
pub unsafe extern "C" fn ftell(f: *mut GuestFile) -> i64 {
    let Some(st) = (unsafe { state(f) }) else {
        return -1;
    };
    let g = st.lock();
    let pos = unsafe { libc::lseek(st.fd(), 0, libc::SEEK_CUR) };
    if pos < 0 {
        return -1;
    }
    pos - (g.rbuf.len() - g.rpos) as i64 + g.wbuf.len() as i64
}

/// `rewind`.
#[nid("rewind")]
pub unsafe extern "C" fn rewind(f: *mut GuestFile) {
    unsafe { fseek(f, 0, 0) };
}

/// `feof`.
#[nid("feof")]
pub unsafe extern "C" fn feof(f: *mut GuestFile) -> i32 {
    unsafe { state(f) }.map_or(0, |s| i32::from(s.lock().eof))
}

/// `ferror`.
#[nid("ferror")]
pub unsafe extern "C" fn ferror(f: *mut GuestFile) -> i32 {
    unsafe { state(f) }.map_or(0, |s| i32::from(s.lock().err))
}

/// `clearerr`.
#[nid("clearerr")]
pub unsafe extern "C" fn clearerr(f: *mut GuestFile) {
    if let Some(s) = unsafe { state(f) } {
        let mut g = s.lock();
        g.eof = false;
        g.err = false;
    }
}

/// `fileno`.
#[nid("fileno")]
pub unsafe extern "C" fn fileno(f: *mut GuestFile) -> i32 {
    unsafe { state(f) }.map_or(-1, |s| s.fd())
}

/// `setvbuf(f, buf, mode, size)`: FreeBSD _IOFBF 0, _IOLBF 1, _IONBF 2 (the buffer
/// argument is not used; this library buffers internally).
#[nid("setvbuf")]
pub unsafe extern "C" fn setvbuf(f: *mut GuestFile, _buf: *mut u8, mode: i32, _size: usize) -> i32 {
    let Some(st) = (unsafe { state(f) }) else {
        return -1;
    };
    let mut g = st.lock();
    g.mode = match mode {
        0 => Buffering::Full,
        1 => Buffering::Line,
        2 => Buffering::None,
        _ => return -1,
    };
    0
}

/// `perror`.
#[nid("perror")]
pub unsafe extern "C" fn perror(s: *const u8) {
    let e = unsafe { *kernel::errno_ptr() };
    let msg = unsafe { std::ffi::CStr::from_ptr(libc::strerror(e)) }
        .to_bytes()
        .to_vec();
    let mut v = Vec::new();
    if !s.is_null() && unsafe { *s } != 0 {
        v.extend_from_slice(unsafe { cbytes(s) });
        v.extend_from_slice(b": ");
    }
    v.extend_from_slice(&msg);
    v.push(b'\n');
    put(unsafe { STDERRP }, &v);
}

/// `fgetpos` (`fpos_t` is an `off_t`).
#[nid("fgetpos")]
pub unsafe extern "C" fn fgetpos(f: *mut GuestFile, pos: *mut i64) -> i32 {
    let p = unsafe { ftell(f) };
    if p < 0 {
        return -1;
    }
    unsafe { *pos = p };
    0
}

/// `fsetpos`.
#[nid("fsetpos")]
pub unsafe extern "C" fn fsetpos(f: *mut GuestFile, pos: *const i64) -> i32 {
    unsafe { fseek(f, *pos, 0) }
}

/// `setbuf` (NULL: unbuffered; else fully buffered).
#[nid("setbuf")]
pub unsafe extern "C" fn setbuf(f: *mut GuestFile, buf: *mut u8) {
    unsafe { setvbuf(f, buf, if buf.is_null() { 2 } else { 0 }, 8192) };
}

/// `remove`: a file through libkernel's `unlink`, a folder (unlink says EPERM, FreeBSD's
/// answer for one; EISDIR from a host) through its `rmdir`; both confined.
#[nid("remove")]
pub unsafe extern "C" fn remove(path: *const libc::c_char) -> i32 {
    if kernel::unlink(path) == 0 {
        return 0;
    }
    let e = unsafe { *kernel::errno_ptr() };
    if e != 1 && e != 21 {
        return -1;
    }
    if kernel::rmdir(path) == 0 {
        return 0;
    }
    // Not a folder after all: unlink's answer stands.
    if unsafe { *kernel::errno_ptr() } == 20 {
        kernel::set_errno(e);
    }
    -1
}

/// Reads a stream for the scanner, holding its lock for the whole call. Pushed-back bytes
/// go back into the stream's buffer at the end, so the next read sees them.
struct FileInput<'a> {
    st: &'a FileState,
    g: Locked<'a>,
    back: Vec<u8>,
}

impl scanf::Input for FileInput<'_> {
    fn get(&mut self) -> Option<u8> {
        if let Some(c) = self.back.pop() {
            return Some(c);
        }
        if !fill(self.st, &mut self.g) {
            return None;
        }
        let c = self.g.rbuf[self.g.rpos];
        self.g.rpos += 1;
        Some(c)
    }

    fn unget(&mut self, c: u8) {
        self.back.push(c);
    }
}

impl Drop for FileInput<'_> {
    fn drop(&mut self) {
        // `back` holds the next byte to read last: put the others in front of the buffer
        // first, each before the previous one.
        let g = &mut self.g;
        if !self.back.is_empty() {
            g.eof = false;
        }
        for c in self.back.drain(..) {
            if g.rpos > 0 {
                g.rpos -= 1;
                let at = g.rpos;
                g.rbuf[at] = c;
            } else {
                g.rbuf.insert(0, c);
            }
        }
    }
}

fn scan_file(f: *mut GuestFile, fmt: *const u8, ap: *mut VaListRaw) -> i32 {
    if fmt.is_null() {
        return -1;
    }
    scan_stream(f, &mut |inp| unsafe {
        scanf::scan(fmt, inp, &mut VaArgs(ap))
    })
}

/// Runs a scanner on a stream, holding its lock; the stream's pending output is written
/// first (a read of an update stream).
pub(crate) fn scan_stream(
    f: *mut GuestFile,
    scan: &mut dyn FnMut(&mut dyn scanf::Input) -> i32,
) -> i32 {
    let Some(st) = (unsafe { state(f) }) else {
        kernel::set_errno(9);
        return -1;
    };
    let mut g = st.lock();
    flush_locked(st.fd(), &mut g);
    let mut inp = FileInput {
        st,
        g,
        back: Vec::new(),
    };
    scan(&mut inp)
}

stream_entries!(
    scan_file(u8), std = STDINP, before = { flush(STDOUTP); };
    "scanf" scanf_impl, "fscanf" fscanf_impl, "vscanf" vscanf, "vfscanf" vfscanf
);

/// `fdopen(fd, mode)`: a stream on an open descriptor. The mode must not ask for more
/// than the descriptor allows (EINVAL, as FreeBSD); "a" sets `O_APPEND` on it.
#[nid("fdopen")]
pub unsafe extern "C" fn fdopen(fd: i32, mode: *const u8) -> *mut GuestFile {
    let Some(flags) = mode_flags(unsafe { cbytes(mode) }) else {
        kernel::set_errno(22);
        return ptr::null_mut();
    };
    let cur = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if cur < 0 {
        kernel::set_errno(9);
        return ptr::null_mut();
    }
    let have = cur & libc::O_ACCMODE;
    if have != libc::O_RDWR && have != flags & 3 {
        kernel::set_errno(22);
        return ptr::null_mut();
    }
    if flags & 0x8 != 0 && cur & libc::O_APPEND == 0 {
        unsafe { libc::fcntl(fd, libc::F_SETFL, cur | libc::O_APPEND) };
    }
    new_stream(fd)
}

/// `freopen(path, mode, f)`: the same `FILE` on a new file, keeping its descriptor number
/// (so reopening stdout redirects descriptor 1, as FreeBSD does). With a NULL path the
/// mode of the open file changes: the access mode must be one the descriptor allows
/// (else EBADF, as FreeBSD 9), "a" sets `O_APPEND`, "w" truncates, and a stream that does
/// not append is rewound. On failure the stream is closed and
/// NULL returned.
#[nid("freopen")]
pub unsafe extern "C" fn freopen(
    path: *const libc::c_char,
    mode: *const u8,
    f: *mut GuestFile,
) -> *mut GuestFile {
    let Some(st) = (unsafe { state(f) }) else {
        kernel::set_errno(9);
        return ptr::null_mut();
    };
    let Some(flags) = mode_flags(unsafe { cbytes(mode) }) else {
        kernel::set_errno(22);
        unsafe { fclose(f) };
        return ptr::null_mut();
    };
    let mut g = st.lock();
    flush_locked(st.fd(), &mut g);
    g.rbuf.clear();
    g.rpos = 0;
    g.eof = false;
    g.err = false;
    let old = st.fd();
    if path.is_null() {
        let cur = unsafe { libc::fcntl(old, libc::F_GETFL) };
        let have = cur & libc::O_ACCMODE;
        if cur < 0 || (have != libc::O_RDWR && have != flags & 3) {
            drop(g);
            unsafe { fclose(f) };
            kernel::set_errno(9);
            return ptr::null_mut();
        }
        let append = if flags & 0x8 != 0 { libc::O_APPEND } else { 0 };
        unsafe { libc::fcntl(old, libc::F_SETFL, (cur & !libc::O_APPEND) | append) };
        if flags & 0x400 != 0 {
            unsafe { libc::ftruncate(old, 0) };
        }
        // FreeBSD rewinds a stream that does not append.
        if append == 0 {
            unsafe { libc::lseek(old, 0, libc::SEEK_SET) };
        }
        return f;
    }
    let fd = kernel::open(path, flags, 0o666);
    if fd < 0 {
        let e = unsafe { *kernel::errno_ptr() };
        drop(g);
        unsafe { fclose(f) };
        kernel::set_errno(e);
        return ptr::null_mut();
    }
    let fd = if fd != old && old >= 0 && unsafe { libc::dup2(fd, old) } == old {
        unsafe { libc::close(fd) };
        old
    } else {
        if fd != old {
            unsafe { libc::close(old) };
        }
        fd
    };
    st.fd.store(fd, std::sync::atomic::Ordering::Relaxed);
    // A terminal is line buffered, anything else fully; stderr stays unbuffered.
    if g.mode != Buffering::None {
        g.mode = if unsafe { libc::isatty(fd) } == 1 {
            Buffering::Line
        } else {
            Buffering::Full
        };
    }
    f
}

/// `fseeko` (`off_t` is 64-bit: the same as `fseek`).
#[nid("fseeko")]
pub unsafe extern "C" fn fseeko(f: *mut GuestFile, off: i64, whence: i32) -> i32 {
    unsafe { fseek(f, off, whence) }
}

/// `ftello`.
#[nid("ftello")]
pub unsafe extern "C" fn ftello(f: *mut GuestFile) -> i64 {
    unsafe { ftell(f) }
}

/// `fpurge`: drops buffered input and output.
#[nid("fpurge")]
pub unsafe extern "C" fn fpurge(f: *mut GuestFile) -> i32 {
    let Some(st) = (unsafe { state(f) }) else {
        kernel::set_errno(9);
        return -1;
    };
    let mut g = st.lock();
    g.wbuf.clear();
    g.rbuf.clear();
    g.rpos = 0;
    0
}

/// `fgetln(f, &len)`: the next line (with its newline, if any; not NUL-terminated) in a
/// buffer owned by the stream, valid until the next read.
#[nid("fgetln")]
pub unsafe extern "C" fn fgetln(f: *mut GuestFile, len: *mut usize) -> *mut u8 {
    let Some(st) = (unsafe { state(f) }) else {
        kernel::set_errno(9);
        return ptr::null_mut();
    };
    let mut g = st.lock();
    let mut line = std::mem::take(&mut g.line);
    line.clear();
    while fill(st, &mut g) {
        let b = g.rbuf[g.rpos];
        g.rpos += 1;
        line.push(b);
        if b == b'\n' {
            break;
        }
    }
    g.line = line;
    if g.line.is_empty() {
        return ptr::null_mut();
    }
    if !len.is_null() {
        unsafe { *len = g.line.len() };
    }
    g.line.as_mut_ptr()
}

/// `getw`: one `int` in binary.
#[nid("getw")]
pub unsafe extern "C" fn getw(f: *mut GuestFile) -> i32 {
    let mut b = [0u8; 4];
    if unsafe { fread(b.as_mut_ptr(), 4, 1, f) } == 1 {
        i32::from_ne_bytes(b)
    } else {
        -1
    }
}

/// `putw`: one `int` in binary; 0, or EOF on error.
#[nid("putw")]
pub unsafe extern "C" fn putw(w: i32, f: *mut GuestFile) -> i32 {
    if put(f, &w.to_ne_bytes()) { 0 } else { -1 }
}

/// `gets`: a line from stdin without its newline (no bounds: C11 removed it; games may
/// still import it).
#[nid("gets")]
pub unsafe extern "C" fn gets(buf: *mut u8) -> *mut u8 {
    let Some(st) = (unsafe { state(STDINP) }) else {
        return ptr::null_mut();
    };
    unsafe { flush(STDOUTP) };
    let mut g = st.lock();
    let mut i = 0usize;
    let mut any = false;
    while fill(st, &mut g) {
        let b = g.rbuf[g.rpos];
        g.rpos += 1;
        any = true;
        if b == b'\n' {
            break;
        }
        unsafe { *buf.add(i) = b };
        i += 1;
    }
    if !any {
        return ptr::null_mut();
    }
    unsafe { *buf.add(i) = 0 };
    buf
}

/// `fcloseall`: closes every stream but the standard ones; 0.
#[nid("fcloseall")]
pub unsafe extern "C" fn fcloseall() -> i32 {
    let list: Vec<usize> = OPEN.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for f in list {
        let f = f as *mut GuestFile;
        let is_std = ptr::eq(f, &raw mut STDIN)
            || ptr::eq(f, &raw mut STDOUT)
            || ptr::eq(f, &raw mut STDERR);
        if !is_std {
            unsafe { fclose(f) };
        }
    }
    0
}

unsafe fn alloc_printf(out: *mut *mut u8, fmt: *const u8, ap: *mut VaListRaw) -> i32 {
    let mut v = Vec::with_capacity(128);
    if !unsafe { printf::format_checked(fmt, &mut VaArgs(ap), &mut v) } {
        unsafe { *out = ptr::null_mut() };
        return -1;
    }
    let p = unsafe { libc::malloc(v.len() + 1) }.cast::<u8>();
    if p.is_null() {
        unsafe { *out = ptr::null_mut() };
        kernel::set_errno(12);
        return -1;
    }
    unsafe {
        ptr::copy_nonoverlapping(v.as_ptr(), p, v.len());
        *p.add(v.len()) = 0;
        *out = p;
    }
    v.len() as i32
}

unsafe extern "C" fn asprintf_impl(out: *mut *mut u8, fmt: *const u8, ap: *mut VaListRaw) -> i32 {
    unsafe { alloc_printf(out, fmt, ap) }
}
variadic!("asprintf", 2, asprintf_impl);

/// `vasprintf`: the result in memory from `malloc` (the guest frees it with `free`).
#[nid("vasprintf")]
pub unsafe extern "C" fn vasprintf(out: *mut *mut u8, fmt: *const u8, ap: *mut VaListRaw) -> i32 {
    unsafe { alloc_printf(out, fmt, ap) }
}

/// `flockfile`: takes the stream lock (recursive); other threads' calls on the stream
/// wait until `funlockfile`.
#[nid("flockfile")]
pub unsafe extern "C" fn flockfile(f: *mut GuestFile) {
    if let Some(st) = unsafe { state(f) } {
        st.acquire(true);
    }
}

/// `ftrylockfile`: 0 if the lock was taken, nonzero if another thread holds it.
#[nid("ftrylockfile")]
pub unsafe extern "C" fn ftrylockfile(f: *mut GuestFile) -> i32 {
    match unsafe { state(f) } {
        Some(st) => i32::from(!st.acquire(false)),
        None => -1,
    }
}

/// `funlockfile`.
#[nid("funlockfile")]
pub unsafe extern "C" fn funlockfile(f: *mut GuestFile) {
    if let Some(st) = unsafe { state(f) } {
        st.release();
    }
}

/// `getc_unlocked` (the stream lock is recursive, so the locked path is correct here).
#[nid("getc_unlocked")]
pub unsafe extern "C" fn getc_unlocked(f: *mut GuestFile) -> i32 {
    unsafe { fgetc(f) }
}

/// `getchar_unlocked`.
#[nid("getchar_unlocked")]
pub unsafe extern "C" fn getchar_unlocked() -> i32 {
    unsafe { fgetc(STDINP) }
}

/// `putc_unlocked`.
#[nid("putc_unlocked")]
pub unsafe extern "C" fn putc_unlocked(c: i32, f: *mut GuestFile) -> i32 {
    unsafe { fputc(c, f) }
}

/// `putchar_unlocked`.
#[nid("putchar_unlocked")]
pub unsafe extern "C" fn putchar_unlocked(c: i32) -> i32 {
    unsafe { fputc(c, STDOUTP) }
}

/// `clearerr_unlocked`.
#[nid("clearerr_unlocked")]
pub unsafe extern "C" fn clearerr_unlocked(f: *mut GuestFile) {
    unsafe { clearerr(f) }
}

/// `feof_unlocked`.
#[nid("feof_unlocked")]
pub unsafe extern "C" fn feof_unlocked(f: *mut GuestFile) -> i32 {
    unsafe { feof(f) }
}

/// `ferror_unlocked`.
#[nid("ferror_unlocked")]
pub unsafe extern "C" fn ferror_unlocked(f: *mut GuestFile) -> i32 {
    unsafe { ferror(f) }
}

/// `fileno_unlocked`.
#[nid("fileno_unlocked")]
pub unsafe extern "C" fn fileno_unlocked(f: *mut GuestFile) -> i32 {
    unsafe { fileno(f) }
}

// FreeBSD's inline getc/putc (`__sgetc`, `__sputc`) decrement the FILE's `_r` (offset 8)
// or `_w` (offset 12) and call these when the count goes negative. The counts are put
// back to 0 so the next inline call comes here again.

/// `__srget`: FreeBSD's `getc` slow path.
#[nid("__srget")]
pub unsafe extern "C" fn srget(f: *mut GuestFile) -> i32 {
    if unsafe { state(f) }.is_some() {
        unsafe { f.cast::<u8>().add(8).cast::<i32>().write_unaligned(0) };
    }
    unsafe { fgetc(f) }
}

/// `__swbuf`: FreeBSD's `putc` slow path.
#[nid("__swbuf")]
pub unsafe extern "C" fn swbuf(c: i32, f: *mut GuestFile) -> i32 {
    if unsafe { state(f) }.is_some() {
        unsafe { f.cast::<u8>().add(12).cast::<i32>().write_unaligned(0) };
    }
    unsafe { fputc(c, f) }
}

/// Sets a stream's orientation if it has none and `mode` is nonzero; returns it (0 for a
/// bad stream).
pub(crate) fn orient(f: *mut GuestFile, mode: i32) -> i32 {
    let Some(st) = (unsafe { state(f) }) else {
        return 0;
    };
    let mut g = st.lock();
    if g.orient == 0 {
        g.orient = mode;
    }
    g.orient
}

// C11 Annex K printf family: runtime constraints (NULL format, `%n`, NULL `%s` argument,
// bad sizes) call the constraint handler (`strings::violation`) and fail.

fn printf_s_to(f: *mut GuestFile, fmt: *const u8, ap: *mut VaListRaw) -> i32 {
    if fmt.is_null() {
        return -crate::strings::violation(c"printf_s: NULL format", 22).abs();
    }
    let mut out = Vec::with_capacity(128);
    match unsafe { printf::format_annex_k(fmt, &mut VaArgs(ap), &mut out) } {
        printf::Checked::Violation => {
            -crate::strings::violation(c"printf_s: %n or NULL %s argument", 22)
        }
        printf::Checked::Encoding => -1,
        printf::Checked::Done => eof_or(out.len(), put(f, &out)),
    }
}

stream_entries!(
    printf_s_to(u8), std = STDOUTP, before = {};
    "printf_s" printf_s_impl, "fprintf_s" fprintf_s_impl, "vprintf_s" vprintf_s, "vfprintf_s" vfprintf_s
);

/// `sprintf_s`/`snprintf_s` into `buf` of `n` bytes. `truncate`: snprintf_s (the output
/// may be cut; returns the full length), else sprintf_s (output that does not fit is a
/// violation: `buf[0] = 0`, returns 0). Other violations clear `buf[0]` where possible
/// and return a negative value.
unsafe fn sprintf_s_to(
    buf: *mut u8,
    n: usize,
    fmt: *const u8,
    ap: *mut VaListRaw,
    truncate: bool,
) -> i32 {
    let usable = !buf.is_null() && n != 0 && n <= crate::strings::RSIZE_MAX;
    let clear = || {
        if usable {
            unsafe { *buf = 0 };
        }
    };
    if !usable || fmt.is_null() {
        clear();
        return -crate::strings::violation(c"sprintf_s: bad buffer or format", 22);
    }
    let mut out = Vec::with_capacity(128);
    match unsafe { printf::format_annex_k(fmt, &mut VaArgs(ap), &mut out) } {
        printf::Checked::Violation => {
            clear();
            -crate::strings::violation(c"sprintf_s: %n or NULL %s argument", 22)
        }
        printf::Checked::Encoding => {
            clear();
            -1
        }
        printf::Checked::Done if out.len() >= n && !truncate => {
            clear();
            crate::strings::violation(c"sprintf_s: buffer too small", 34);
            0
        }
        printf::Checked::Done => {
            let copy = out.len().min(n - 1);
            unsafe {
                ptr::copy_nonoverlapping(out.as_ptr(), buf, copy);
                *buf.add(copy) = 0;
            }
            out.len() as i32
        }
    }
}

unsafe extern "C" fn sprintf_s_impl(
    buf: *mut u8,
    n: usize,
    fmt: *const u8,
    ap: *mut VaListRaw,
) -> i32 {
    unsafe { sprintf_s_to(buf, n, fmt, ap, false) }
}
variadic!("sprintf_s", 3, sprintf_s_impl);

unsafe extern "C" fn snprintf_s_impl(
    buf: *mut u8,
    n: usize,
    fmt: *const u8,
    ap: *mut VaListRaw,
) -> i32 {
    unsafe { sprintf_s_to(buf, n, fmt, ap, true) }
}
variadic!("snprintf_s", 3, snprintf_s_impl);

/// `vsprintf_s`.
#[nid("vsprintf_s")]
pub unsafe extern "C" fn vsprintf_s(
    buf: *mut u8,
    n: usize,
    fmt: *const u8,
    ap: *mut VaListRaw,
) -> i32 {
    unsafe { sprintf_s_to(buf, n, fmt, ap, false) }
}

/// `vsnprintf_s`.
#[nid("vsnprintf_s")]
pub unsafe extern "C" fn vsnprintf_s(
    buf: *mut u8,
    n: usize,
    fmt: *const u8,
    ap: *mut VaListRaw,
) -> i32 {
    unsafe { sprintf_s_to(buf, n, fmt, ap, true) }
}

fn scan_file_s(f: *mut GuestFile, fmt: *const u8, ap: *mut VaListRaw) -> i32 {
    if fmt.is_null() {
        crate::strings::violation(c"fscanf_s: NULL format", 22);
        return -1;
    }
    scan_stream(f, &mut |inp| unsafe {
        scanf::scan_s(fmt, inp, &mut VaArgs(ap))
    })
}

stream_entries!(
    scan_file_s(u8), std = STDINP, before = { flush(STDOUTP); };
    "scanf_s" scanf_s_impl, "fscanf_s" fscanf_s_impl, "vscanf_s" vscanf_s, "vfscanf_s" vfscanf_s
);
