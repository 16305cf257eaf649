//! Threads: guest `pthread_t` / `ScePthread` values are host `pthread_t` values. Guest
//! attribute objects (`pthread_attr_t`, a pointer on FreeBSD) point at [`Attr`] boxes.

use std::ptr;

use aps5_prx_macros::nid;

use crate::errno::from_host;
use crate::sce_error;

/// Guest thread entry point.
pub type Entry = extern "C" fn(*mut u8) -> *mut u8;

/// What a guest `pthread_attr_t` points at.
#[derive(Debug, Clone, Copy)]
pub struct Attr {
    /// Stack size in bytes (0: the host default).
    pub stack_size: usize,
    /// PTHREAD_CREATE_DETACHED (FreeBSD value 1).
    pub detached: bool,
    /// Guard size in bytes (FreeBSD default: one page).
    pub guard_size: usize,
    /// Caller-provided stack (`pthread_attr_setstack`), 0 for none.
    pub stack_addr: usize,
    /// FreeBSD policy: SCHED_FIFO 1, SCHED_OTHER 2, SCHED_RR 3.
    pub policy: i32,
    /// Priority (`sched_param.sched_priority`; PS4/PS5: 256 highest .. 767 lowest).
    pub priority: i32,
    /// PTHREAD_INHERIT_SCHED 4 or PTHREAD_EXPLICIT_SCHED 0 (FreeBSD values).
    pub inherit: i32,
    /// CPU affinity mask (`scePthreadAttrSetaffinity`).
    pub affinity: u64,
}

/// A game thread's default priority.
pub const DEFAULT_PRIORITY: i32 = 700;

/// What a fresh `pthread_attr_t` holds.
pub const DEFAULT_ATTR: Attr = Attr {
    stack_size: 0,
    detached: false,
    guard_size: 4096,
    stack_addr: 0,
    policy: 2,
    priority: DEFAULT_PRIORITY,
    inherit: 4,
    affinity: 0x7F,
};

pub(crate) unsafe fn attr_of(p: *const *mut Attr) -> Attr {
    if p.is_null() || unsafe { (*p).is_null() } {
        DEFAULT_ATTR
    } else {
        unsafe { **p }
    }
}

fn create(out: *mut libc::pthread_t, attr: Attr, entry: Entry, arg: *mut u8) -> i32 {
    if out.is_null() {
        return 22;
    }
    unsafe {
        let mut host: libc::pthread_attr_t = std::mem::zeroed();
        libc::pthread_attr_init(&mut host);
        if attr.stack_size != 0 {
            libc::pthread_attr_setstacksize(
                &mut host,
                attr.stack_size.max(libc::PTHREAD_STACK_MIN),
            );
        }
        if attr.detached {
            libc::pthread_attr_setdetachstate(&mut host, libc::PTHREAD_CREATE_DETACHED);
        }
        if attr.guard_size != DEFAULT_ATTR.guard_size {
            libc::pthread_attr_setguardsize(&mut host, attr.guard_size);
        }
        if attr.stack_addr != 0 && attr.stack_size >= libc::PTHREAD_STACK_MIN {
            libc::pthread_attr_setstack(&mut host, attr.stack_addr as *mut _, attr.stack_size);
        }
        // The guest entry has the host's signature: fn(void *) -> void *.
        let start: extern "C" fn(*mut libc::c_void) -> *mut libc::c_void =
            std::mem::transmute(entry);
        // The new thread's recorded scheduling values are its attributes' (replacing those
        // of an exited thread that had the same pthread_t); the record is made before the
        // thread can look at it.
        let r = crate::thread_attr::while_recording(attr.policy, attr.priority, || {
            let r = libc::pthread_create(out, &host, start, arg.cast());
            (r, (r == 0).then(|| *out))
        });
        libc::pthread_attr_destroy(&mut host);
        from_host(r)
    }
}

pub(crate) fn sce(r: i32) -> i32 {
    if r == 0 { 0 } else { sce_error(r) }
}

/// `pthread_create`.
#[nid("pthread_create")]
pub unsafe extern "C" fn pthread_create(
    out: *mut libc::pthread_t,
    attr: *const *mut Attr,
    entry: Entry,
    arg: *mut u8,
) -> i32 {
    create(out, unsafe { attr_of(attr) }, entry, arg)
}

/// `scePthreadCreate(thread, attr, entry, arg, name)`.
#[nid("scePthreadCreate")]
pub unsafe extern "C" fn sce_pthread_create(
    out: *mut libc::pthread_t,
    attr: *const *mut Attr,
    entry: Entry,
    arg: *mut u8,
    name: *const libc::c_char,
) -> i32 {
    let r = create(out, unsafe { attr_of(attr) }, entry, arg);
    if r == 0 && !name.is_null() {
        // Host thread names are limited to 15 bytes; a longer guest name is cut.
        let mut buf = [0u8; 16];
        let src = unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes();
        let n = src.len().min(15);
        buf[..n].copy_from_slice(&src[..n]);
        unsafe { libc::pthread_setname_np(*out, buf.as_ptr().cast()) };
    }
    sce(r)
}

/// Host calls through which cancellation may unwind (so declared `C-unwind`; the `libc`
/// crate declares them `C`, and unwinding through a `C` call is undefined).
mod host {
    unsafe extern "C-unwind" {
        pub fn pthread_join(t: libc::pthread_t, ret: *mut *mut libc::c_void) -> i32;
        pub fn pthread_exit(v: *mut libc::c_void) -> !;
        pub fn pthread_setcancelstate(state: i32, old: *mut i32) -> i32;
        pub fn pthread_setcanceltype(kind: i32, old: *mut i32) -> i32;
        pub fn pthread_testcancel();
        pub fn _pthread_cleanup_push(
            buf: *mut super::CleanupBuffer,
            routine: unsafe extern "C-unwind" fn(*mut u8),
            arg: *mut u8,
        );
        pub fn _pthread_cleanup_pop(buf: *mut super::CleanupBuffer, execute: i32);
    }
}

/// FreeBSD's `PTHREAD_CANCELED` (glibc's is -1).
pub const PTHREAD_CANCELED: usize = 1;

/// `pthread_join`: a cancellation point; a cancelled thread's value is FreeBSD's
/// `PTHREAD_CANCELED` (1).
#[nid("pthread_join")]
pub unsafe extern "C-unwind" fn pthread_join(t: libc::pthread_t, ret: *mut *mut u8) -> i32 {
    let mut v: *mut libc::c_void = ptr::null_mut();
    let r = unsafe { host::pthread_join(t, &mut v) };
    if r == 0 && !ret.is_null() {
        // glibc PTHREAD_CANCELED is (void *)-1.
        let v = if v as isize == -1 {
            PTHREAD_CANCELED as *mut u8
        } else {
            v.cast()
        };
        unsafe { *ret = v };
    }
    from_host(r)
}

/// `scePthreadJoin`.
#[nid("scePthreadJoin")]
pub unsafe extern "C-unwind" fn sce_pthread_join(t: libc::pthread_t, ret: *mut *mut u8) -> i32 {
    sce(unsafe { pthread_join(t, ret) })
}

/// `pthread_detach`.
#[nid("pthread_detach")]
pub extern "C" fn pthread_detach(t: libc::pthread_t) -> i32 {
    from_host(unsafe { libc::pthread_detach(t) })
}

/// `scePthreadDetach`.
#[nid("scePthreadDetach")]
pub extern "C" fn sce_pthread_detach(t: libc::pthread_t) -> i32 {
    sce(pthread_detach(t))
}

/// `pthread_self`.
#[nid("pthread_self")]
pub extern "C" fn pthread_self() -> libc::pthread_t {
    unsafe { libc::pthread_self() }
}

/// `scePthreadSelf`.
#[nid("scePthreadSelf")]
pub extern "C" fn sce_pthread_self() -> libc::pthread_t {
    unsafe { libc::pthread_self() }
}

/// `pthread_equal`.
#[nid("pthread_equal")]
pub extern "C" fn pthread_equal(a: libc::pthread_t, b: libc::pthread_t) -> i32 {
    i32::from(a == b)
}

/// `pthread_exit`: unwinds the guest thread (host forced unwinding), running its cleanup
/// handlers (innermost first) as their frames are left, then its TSD destructors.
#[nid("pthread_exit")]
pub extern "C-unwind" fn pthread_exit(v: *mut u8) -> ! {
    unsafe { host::pthread_exit(v.cast()) }
}

/// `scePthreadExit`.
#[nid("scePthreadExit")]
pub extern "C-unwind" fn sce_pthread_exit(v: *mut u8) -> ! {
    unsafe { host::pthread_exit(v.cast()) }
}

// ---- Cancellation ---------------------------------------------------------------------
//
// FreeBSD libthr semantics on the host's (glibc's) machinery, which has the same model:
// a per-thread enable state and type (deferred by default), `pthread_cancel` marking the
// target, cancellation acted on at cancellation points (or at once when asynchronous) by
// unwinding the thread: cleanup handlers run innermost first as the unwinder leaves the
// frames that pushed them, then TSD destructors, and `pthread_join` sees PTHREAD_CANCELED.
//
// Cleanup handlers: FreeBSD's `pthread_cleanup_push` macro puts a 64-byte
// `struct _pthread_cleanup_info` on the guest's stack and calls
// `__pthread_cleanup_push_imp(routine, arg, &info)`; the pop macro calls
// `__pthread_cleanup_pop_imp(execute)`. The info block holds glibc's 32-byte
// `struct _pthread_cleanup_buffer`, registered with glibc's `_pthread_cleanup_push` (the
// C-without-exceptions form of its handlers), which the host's unwinder runs at
// cancellation and `pthread_exit`.
//
// Cancellation points are the host's (sleeps, `read`/`write`, `pthread_join`, ...) and
// every wait of this library, which sleep through `sync::futex::wait_cancellable`.

/// glibc's `struct _pthread_cleanup_buffer` (routine, arg, canceltype, prev).
#[repr(C)]
pub struct CleanupBuffer {
    routine: Option<unsafe extern "C-unwind" fn(*mut u8)>,
    arg: *mut u8,
    canceltype: i32,
    prev: *mut CleanupBuffer,
}

const _: () = assert!(std::mem::size_of::<CleanupBuffer>() <= 64);

thread_local! {
    /// The innermost registered cleanup buffer (glibc keeps the same chain but has no
    /// getter; FreeBSD's pop takes no pointer).
    static CLEANUP_TOP: std::cell::Cell<*mut CleanupBuffer> =
        const { std::cell::Cell::new(ptr::null_mut()) };
}

/// `__pthread_cleanup_push_imp(routine, arg, info)`: `info` is the caller's 64-byte
/// `struct _pthread_cleanup_info`.
#[nid("__pthread_cleanup_push_imp")]
pub unsafe extern "C" fn pthread_cleanup_push_imp(
    routine: unsafe extern "C-unwind" fn(*mut u8),
    arg: *mut u8,
    info: *mut CleanupBuffer,
) {
    if info.is_null() {
        return;
    }
    unsafe { host::_pthread_cleanup_push(info, routine, arg) };
    CLEANUP_TOP.with(|t| t.set(info));
}

/// `__pthread_cleanup_pop_imp(execute)`: unregisters the innermost handler and runs it if
/// `execute` is non-zero.
#[nid("__pthread_cleanup_pop_imp")]
pub unsafe extern "C-unwind" fn pthread_cleanup_pop_imp(execute: i32) {
    let top = CLEANUP_TOP.with(|t| t.get());
    if top.is_null() {
        return;
    }
    CLEANUP_TOP.with(|t| t.set(unsafe { (*top).prev }));
    unsafe { host::_pthread_cleanup_pop(top, execute) };
}

/// `pthread_setcancelstate(state, old)`: ENABLE 0, DISABLE 1 (FreeBSD and glibc agree).
#[nid("pthread_setcancelstate")]
pub unsafe extern "C-unwind" fn pthread_setcancelstate(state: i32, old: *mut i32) -> i32 {
    if !(0..=1).contains(&state) {
        return 22;
    }
    let mut prev = 0;
    let r = unsafe { host::pthread_setcancelstate(state, &mut prev) };
    if r == 0 && !old.is_null() {
        unsafe { *old = prev };
    }
    from_host(r)
}

/// `scePthreadSetcancelstate`.
#[nid("scePthreadSetcancelstate")]
pub unsafe extern "C-unwind" fn sce_pthread_setcancelstate(state: i32, old: *mut i32) -> i32 {
    sce(unsafe { pthread_setcancelstate(state, old) })
}

/// `pthread_setcanceltype(type, old)`: FreeBSD DEFERRED 0, ASYNCHRONOUS 2 (glibc: 0, 1).
/// Switching to asynchronous with a cancel pending acts on it at once.
#[nid("pthread_setcanceltype")]
pub unsafe extern "C-unwind" fn pthread_setcanceltype(kind: i32, old: *mut i32) -> i32 {
    let host_kind = match kind {
        0 => 0,
        2 => 1,
        _ => return 22,
    };
    let mut prev = 0;
    let r = unsafe { host::pthread_setcanceltype(host_kind, &mut prev) };
    if r == 0 && !old.is_null() {
        unsafe { *old = if prev == 1 { 2 } else { 0 } };
    }
    from_host(r)
}

/// `scePthreadSetcanceltype`.
#[nid("scePthreadSetcanceltype")]
pub unsafe extern "C-unwind" fn sce_pthread_setcanceltype(kind: i32, old: *mut i32) -> i32 {
    sce(unsafe { pthread_setcanceltype(kind, old) })
}

/// `pthread_testcancel`: acts on a pending cancel if cancellation is enabled.
#[nid("pthread_testcancel")]
pub extern "C-unwind" fn pthread_testcancel() {
    unsafe { host::pthread_testcancel() }
}

/// `scePthreadTestcancel`.
#[nid("scePthreadTestcancel")]
pub extern "C-unwind" fn sce_pthread_testcancel() {
    unsafe { host::pthread_testcancel() }
}

/// `pthread_cancel`: marks the thread; it is unwound at its next cancellation point (or
/// at once if its type is asynchronous), see "Cancellation" above.
#[nid("pthread_cancel")]
pub extern "C" fn pthread_cancel(t: libc::pthread_t) -> i32 {
    from_host(unsafe { libc::pthread_cancel(t) })
}

/// `scePthreadCancel`.
#[nid("scePthreadCancel")]
pub extern "C" fn sce_pthread_cancel(t: libc::pthread_t) -> i32 {
    sce(pthread_cancel(t))
}

/// `pthread_yield` / `scePthreadYield`.
#[nid("scePthreadYield")]
pub extern "C" fn sce_pthread_yield() -> i32 {
    unsafe { libc::sched_yield() };
    0
}

/// `sched_yield`.
#[nid("sched_yield")]
pub extern "C" fn sched_yield() -> i32 {
    unsafe { libc::sched_yield() }
}

/// `pthread_attr_init`: allocates the object the guest's pointer-sized attr refers to.
#[nid("pthread_attr_init")]
pub unsafe extern "C" fn pthread_attr_init(a: *mut *mut Attr) -> i32 {
    if a.is_null() {
        return 22;
    }
    unsafe { *a = Box::into_raw(Box::new(DEFAULT_ATTR)) };
    0
}

/// `scePthreadAttrInit`.
#[nid("scePthreadAttrInit")]
pub unsafe extern "C" fn sce_pthread_attr_init(a: *mut *mut Attr) -> i32 {
    sce(unsafe { pthread_attr_init(a) })
}

/// `pthread_attr_destroy`.
#[nid("pthread_attr_destroy")]
pub unsafe extern "C" fn pthread_attr_destroy(a: *mut *mut Attr) -> i32 {
    if a.is_null() || unsafe { (*a).is_null() } {
        return 22;
    }
    unsafe {
        drop(Box::from_raw(*a));
        *a = ptr::null_mut();
    }
    0
}

/// `scePthreadAttrDestroy`.
#[nid("scePthreadAttrDestroy")]
pub unsafe extern "C" fn sce_pthread_attr_destroy(a: *mut *mut Attr) -> i32 {
    sce(unsafe { pthread_attr_destroy(a) })
}

pub(crate) unsafe fn with_attr(a: *mut *mut Attr, f: impl FnOnce(&mut Attr)) -> i32 {
    if a.is_null() || unsafe { (*a).is_null() } {
        return 22;
    }
    f(unsafe { &mut **a });
    0
}

/// `pthread_attr_setstacksize`.
#[nid("pthread_attr_setstacksize")]
pub unsafe extern "C" fn pthread_attr_setstacksize(a: *mut *mut Attr, size: usize) -> i32 {
    unsafe { with_attr(a, |x| x.stack_size = size) }
}

/// `scePthreadAttrSetstacksize`.
#[nid("scePthreadAttrSetstacksize")]
pub unsafe extern "C" fn sce_pthread_attr_setstacksize(a: *mut *mut Attr, size: usize) -> i32 {
    sce(unsafe { pthread_attr_setstacksize(a, size) })
}

/// `pthread_attr_setdetachstate` (FreeBSD: JOINABLE 0, DETACHED 1).
#[nid("pthread_attr_setdetachstate")]
pub unsafe extern "C" fn pthread_attr_setdetachstate(a: *mut *mut Attr, state: i32) -> i32 {
    unsafe { with_attr(a, |x| x.detached = state == 1) }
}

/// `scePthreadAttrSetdetachstate`.
#[nid("scePthreadAttrSetdetachstate")]
pub unsafe extern "C" fn sce_pthread_attr_setdetachstate(a: *mut *mut Attr, state: i32) -> i32 {
    sce(unsafe { pthread_attr_setdetachstate(a, state) })
}

/// `pthread_once` (FreeBSD `pthread_once_t` is { int state; pthread_mutex_t mutex; }).
#[nid("pthread_once")]
pub unsafe extern "C" fn pthread_once(once: *mut i32, f: extern "C" fn()) -> i32 {
    use std::sync::atomic::{AtomicI32, Ordering};
    // 0 = never, 1 = done, 2 = running.
    let state = unsafe { AtomicI32::from_ptr(once) };
    loop {
        match state.compare_exchange(0, 2, Ordering::Acquire, Ordering::Acquire) {
            Ok(_) => {
                f();
                state.store(1, Ordering::Release);
                return 0;
            }
            Err(1) => return 0,
            Err(_) => unsafe {
                libc::sched_yield();
            },
        }
    }
}

/// `pthread_key_create` (keys are host keys).
#[nid("pthread_key_create")]
pub unsafe extern "C" fn pthread_key_create(
    key: *mut libc::pthread_key_t,
    dtor: Option<unsafe extern "C" fn(*mut libc::c_void)>,
) -> i32 {
    from_host(unsafe { libc::pthread_key_create(key, dtor) })
}

/// `scePthreadKeyCreate`.
#[nid("scePthreadKeyCreate")]
pub unsafe extern "C" fn sce_pthread_key_create(
    key: *mut libc::pthread_key_t,
    dtor: Option<unsafe extern "C" fn(*mut libc::c_void)>,
) -> i32 {
    sce(unsafe { pthread_key_create(key, dtor) })
}

/// `pthread_key_delete`.
#[nid("pthread_key_delete")]
pub extern "C" fn pthread_key_delete(key: libc::pthread_key_t) -> i32 {
    from_host(unsafe { libc::pthread_key_delete(key) })
}

/// `pthread_getspecific`.
#[nid("pthread_getspecific")]
pub extern "C" fn pthread_getspecific(key: libc::pthread_key_t) -> *mut u8 {
    unsafe { libc::pthread_getspecific(key).cast() }
}

/// `scePthreadGetspecific`.
#[nid("scePthreadGetspecific")]
pub extern "C" fn sce_pthread_getspecific(key: libc::pthread_key_t) -> *mut u8 {
    pthread_getspecific(key)
}

/// `pthread_setspecific`.
#[nid("pthread_setspecific")]
pub extern "C" fn pthread_setspecific(key: libc::pthread_key_t, v: *const u8) -> i32 {
    from_host(unsafe { libc::pthread_setspecific(key, v.cast()) })
}

/// `scePthreadSetspecific`.
#[nid("scePthreadSetspecific")]
pub extern "C" fn sce_pthread_setspecific(key: libc::pthread_key_t, v: *const u8) -> i32 {
    sce(pthread_setspecific(key, v))
}

// `raise` lives in `signal.rs` with the rest of the signal translation.

/// `_exit` (no atexit handlers, no stdio flushing).
#[nid("_exit")]
pub extern "C" fn exit_(code: i32) -> ! {
    unsafe { libc::_exit(code) }
}

/// `scePthreadRename(thread, name)`.
#[nid("scePthreadRename")]
pub unsafe extern "C" fn sce_pthread_rename(t: libc::pthread_t, name: *const libc::c_char) -> i32 {
    if name.is_null() {
        return sce_error(22);
    }
    let mut buf = [0u8; 16];
    let src = unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes();
    let n = src.len().min(15);
    buf[..n].copy_from_slice(&src[..n]);
    unsafe { libc::pthread_setname_np(t, buf.as_ptr().cast()) };
    0
}

/// `scePthreadGetthreadid`: the host thread id.
#[nid("scePthreadGetthreadid")]
pub extern "C" fn sce_pthread_getthreadid() -> i32 {
    unsafe { libc::gettid() }
}

/// `pthread_getthreadid_np`.
#[nid("pthread_getthreadid_np")]
pub extern "C" fn pthread_getthreadid_np() -> i32 {
    unsafe { libc::gettid() }
}

/// `sceKernelGetCurrentCpu`.
#[nid("sceKernelGetCurrentCpu")]
pub extern "C" fn sce_kernel_get_current_cpu() -> i32 {
    unsafe { libc::sched_getcpu() }.max(0)
}

// Scheduling hints that only make sense on the console's fixed cores and priorities are
// accepted and ignored: the host scheduler decides.

/// `scePthreadSetaffinity` (accepted, ignored).
#[nid("scePthreadSetaffinity")]
pub extern "C" fn sce_pthread_setaffinity(_t: libc::pthread_t, _mask: u64) -> i32 {
    0
}

/// `scePthreadGetaffinity`: every core of the console (0x7F on PS4/PS5 games).
#[nid("scePthreadGetaffinity")]
pub unsafe extern "C" fn sce_pthread_getaffinity(_t: libc::pthread_t, mask: *mut u64) -> i32 {
    if mask.is_null() {
        return sce_error(22);
    }
    unsafe { *mask = 0x7F };
    0
}

/// `scePthreadSetprio`: 256 (highest) ..= 767 (lowest), recorded for `scePthreadGetprio`
/// and not applied (the host scheduler decides).
#[nid("scePthreadSetprio")]
pub extern "C" fn sce_pthread_setprio(t: libc::pthread_t, prio: i32) -> i32 {
    sce(crate::thread_attr::set_priority(t, prio))
}

/// `scePthreadGetprio`: what `scePthreadSetprio` recorded, else the default priority of a
/// game thread (700).
#[nid("scePthreadGetprio")]
pub unsafe extern "C" fn sce_pthread_getprio(t: libc::pthread_t, prio: *mut i32) -> i32 {
    if prio.is_null() {
        return sce_error(22);
    }
    unsafe { *prio = crate::thread_attr::priority_of(t) };
    0
}

/// `scePthreadAttrSetaffinity`: recorded (reported back by the getter); the host
/// scheduler places threads.
#[nid("scePthreadAttrSetaffinity")]
pub unsafe extern "C" fn sce_pthread_attr_setaffinity(a: *mut *mut Attr, mask: u64) -> i32 {
    sce(unsafe { with_attr(a, |x| x.affinity = mask) })
}

/// `scePthreadAttrSetinheritsched` (recorded).
#[nid("scePthreadAttrSetinheritsched")]
pub unsafe extern "C" fn sce_pthread_attr_setinheritsched(a: *mut *mut Attr, v: i32) -> i32 {
    sce(unsafe { crate::thread_attr::pthread_attr_setinheritsched(a, v) })
}

/// `scePthreadAttrSetschedparam` (recorded; priorities are not applied on the host).
#[nid("scePthreadAttrSetschedparam")]
pub unsafe extern "C" fn sce_pthread_attr_setschedparam(a: *mut *mut Attr, p: *const i32) -> i32 {
    sce(unsafe { crate::thread_attr::pthread_attr_setschedparam(a, p) })
}

/// `scePthreadAttrSetschedpolicy` (recorded).
#[nid("scePthreadAttrSetschedpolicy")]
pub unsafe extern "C" fn sce_pthread_attr_setschedpolicy(a: *mut *mut Attr, p: i32) -> i32 {
    sce(unsafe { crate::thread_attr::pthread_attr_setschedpolicy(a, p) })
}

/// `scePthreadAttrGetstacksize`.
#[nid("scePthreadAttrGetstacksize")]
pub unsafe extern "C" fn sce_pthread_attr_getstacksize(
    a: *const *mut Attr,
    out: *mut usize,
) -> i32 {
    if out.is_null() {
        return sce_error(22);
    }
    let attr = unsafe { attr_of(a) };
    // 0 means the host default; report what a thread would actually get.
    unsafe {
        *out = if attr.stack_size == 0 {
            8 << 20
        } else {
            attr.stack_size
        }
    };
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU32, Ordering};

    static LOG: Mutex<Vec<u8>> = Mutex::new(Vec::new());
    static READY: AtomicU32 = AtomicU32::new(0);
    static SEMA: AtomicU32 = AtomicU32::new(0);

    unsafe extern "C-unwind" fn note(arg: *mut u8) {
        LOG.lock().unwrap().push(arg as usize as u8);
    }

    /// The same for the other test (tests run in parallel).
    static LOG2: Mutex<Vec<u8>> = Mutex::new(Vec::new());
    unsafe extern "C-unwind" fn note2(arg: *mut u8) {
        LOG2.lock().unwrap().push(arg as usize as u8);
    }

    /// A thread that registers two cleanup handlers (storage on its stack, as FreeBSD's
    /// macros put it) and blocks in a libkernel wait.
    extern "C-unwind" fn blocked(_: *mut libc::c_void) -> *mut libc::c_void {
        let mut info = [[0u64; 8]; 2];
        unsafe {
            pthread_cleanup_push_imp(note, b'A' as usize as *mut u8, info[0].as_mut_ptr().cast());
            pthread_cleanup_push_imp(note, b'B' as usize as *mut u8, info[1].as_mut_ptr().cast());
        }
        READY.store(1, Ordering::Release);
        let id = u64::from(SEMA.load(Ordering::Acquire));
        unsafe { crate::sema::sce_kernel_wait_sema(id, 1, ptr::null_mut()) };
        LOG.lock().unwrap().push(b'R'); // not reached
        unsafe {
            pthread_cleanup_pop_imp(0);
            pthread_cleanup_pop_imp(0);
        }
        std::hint::black_box(&mut info);
        ptr::null_mut()
    }

    #[test]
    fn cleanup_handlers_pop_in_order() {
        let mut info = [[0u64; 8]; 3];
        unsafe {
            pthread_cleanup_push_imp(note2, b'x' as usize as *mut u8, info[0].as_mut_ptr().cast());
            pthread_cleanup_push_imp(note2, b'y' as usize as *mut u8, info[1].as_mut_ptr().cast());
            pthread_cleanup_pop_imp(0);
            pthread_cleanup_push_imp(note2, b'z' as usize as *mut u8, info[2].as_mut_ptr().cast());
            pthread_cleanup_pop_imp(1);
            pthread_cleanup_pop_imp(1);
        }
        assert_eq!(LOG2.lock().unwrap().as_slice(), b"zx");
    }

    #[test]
    fn cancelling_a_thread_in_a_sema_wait_runs_its_handlers() {
        let mut id = 0;
        let r = unsafe {
            crate::sema::sce_kernel_create_sema(&mut id, c"t".as_ptr(), 1, 0, 1, ptr::null())
        };
        assert_eq!(r, 0);
        SEMA.store(id as u32, Ordering::Release);
        let mut t: libc::pthread_t = 0;
        // The start routine may be unwound by cancellation, hence `C-unwind`; the host's
        // prototype says `C`, which is the same calling convention.
        let start: extern "C" fn(*mut libc::c_void) -> *mut libc::c_void =
            unsafe { std::mem::transmute(blocked as extern "C-unwind" fn(_) -> _) };
        assert_eq!(
            unsafe { libc::pthread_create(&mut t, ptr::null(), start, ptr::null_mut()) },
            0
        );
        while READY.load(Ordering::Acquire) == 0 {
            std::thread::yield_now();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(pthread_cancel(t), 0);
        let mut v: *mut u8 = ptr::null_mut();
        assert_eq!(unsafe { pthread_join(t, &mut v) }, 0);
        assert_eq!(v as usize, PTHREAD_CANCELED);
        assert_eq!(LOG.lock().unwrap().as_slice(), b"BA");
        // The cancelled waiter left the queue: a signal stays available for a poll.
        assert_eq!(crate::sema::sce_kernel_signal_sema(id as u64, 1), 0);
        assert_eq!(crate::sema::sce_kernel_poll_sema(id as u64, 1), 0);
    }
}
