//! Thread attribute getters and the remaining setters (`pthread_attr_*` and
//! `scePthreadAttr*`), `pthread_attr_get_np`/`scePthreadAttrGet` (the attributes of a
//! running thread, from the host), thread names, and scheduling parameters.
//!
//! Scheduling values are recorded and reported back with FreeBSD's numbers (SCHED_FIFO 1,
//! SCHED_OTHER 2, SCHED_RR 3; PTHREAD_INHERIT_SCHED 4, PTHREAD_EXPLICIT_SCHED 0) but not
//! applied: the host scheduler places and orders threads.

use aps5_prx_macros::nid;

use crate::thread::{Attr, DEFAULT_PRIORITY, attr_of, sce, with_attr};

const EINVAL: i32 = 22;
const ESRCH: i32 = 3;
const ERANGE: i32 = 34;

/// Reads one field of the attribute object into `out`.
unsafe fn get<T>(a: *const *mut Attr, out: *mut T, f: impl FnOnce(&Attr) -> T) -> i32 {
    if a.is_null() || unsafe { (*a).is_null() } || out.is_null() {
        return EINVAL;
    }
    unsafe { out.write(f(&**a)) };
    0
}

macro_rules! getter {
    ($posix:literal, $pf:ident, $sce:literal, $sf:ident, $t:ty, $body:expr) => {
        #[doc = concat!("`", $posix, "`.")]
        #[nid($posix)]
        pub unsafe extern "C" fn $pf(a: *const *mut Attr, out: *mut $t) -> i32 {
            unsafe { get(a, out, $body) }
        }
        #[doc = concat!("`", $sce, "`.")]
        #[nid($sce)]
        pub unsafe extern "C" fn $sf(a: *const *mut Attr, out: *mut $t) -> i32 {
            sce(unsafe { $pf(a, out) })
        }
    };
}

/// The stack size a thread made with `a` gets (0 in the object means the host default).
fn stack_size(a: &Attr) -> usize {
    if a.stack_size == 0 {
        8 << 20
    } else {
        a.stack_size
    }
}

getter!(
    "pthread_attr_getdetachstate",
    pthread_attr_getdetachstate,
    "scePthreadAttrGetdetachstate",
    sce_pthread_attr_getdetachstate,
    i32,
    |a: &Attr| i32::from(a.detached)
);
getter!(
    "pthread_attr_getguardsize",
    pthread_attr_getguardsize,
    "scePthreadAttrGetguardsize",
    sce_pthread_attr_getguardsize,
    usize,
    |a: &Attr| a.guard_size
);
getter!(
    "pthread_attr_getstackaddr",
    pthread_attr_getstackaddr,
    "scePthreadAttrGetstackaddr",
    sce_pthread_attr_getstackaddr,
    usize,
    |a: &Attr| a.stack_addr
);
getter!(
    "pthread_attr_getschedpolicy",
    pthread_attr_getschedpolicy,
    "scePthreadAttrGetschedpolicy",
    sce_pthread_attr_getschedpolicy,
    i32,
    |a: &Attr| a.policy
);
getter!(
    "pthread_attr_getinheritsched",
    pthread_attr_getinheritsched,
    "scePthreadAttrGetinheritsched",
    sce_pthread_attr_getinheritsched,
    i32,
    |a: &Attr| a.inherit
);
getter!(
    "pthread_attr_getschedparam",
    pthread_attr_getschedparam,
    "scePthreadAttrGetschedparam",
    sce_pthread_attr_getschedparam,
    i32,
    |a: &Attr| a.priority
);
/// `scePthreadAttrGetaffinity(attr, mask)` (FreeBSD's `pthread_attr_getaffinity_np` takes
/// a `cpuset_t` and is not this).
#[nid("scePthreadAttrGetaffinity")]
pub unsafe extern "C" fn sce_pthread_attr_getaffinity(a: *const *mut Attr, out: *mut u64) -> i32 {
    sce(unsafe { get(a, out, |a| a.affinity) })
}

/// `pthread_attr_getstacksize` (`scePthreadAttrGetstacksize` is in `thread.rs`).
#[nid("pthread_attr_getstacksize")]
pub unsafe extern "C" fn pthread_attr_getstacksize(a: *const *mut Attr, out: *mut usize) -> i32 {
    unsafe { get(a, out, stack_size) }
}

/// `pthread_attr_getstack(attr, addr, size)`.
#[nid("pthread_attr_getstack")]
pub unsafe extern "C" fn pthread_attr_getstack(
    a: *const *mut Attr,
    addr: *mut usize,
    size: *mut usize,
) -> i32 {
    if size.is_null() {
        return EINVAL;
    }
    let r = unsafe { get(a, addr, |a| a.stack_addr) };
    if r == 0 {
        unsafe { *size = stack_size(&attr_of(a)) };
    }
    r
}

/// `scePthreadAttrGetstack`.
#[nid("scePthreadAttrGetstack")]
pub unsafe extern "C" fn sce_pthread_attr_getstack(
    a: *const *mut Attr,
    addr: *mut usize,
    size: *mut usize,
) -> i32 {
    sce(unsafe { pthread_attr_getstack(a, addr, size) })
}

/// `pthread_attr_setguardsize`.
#[nid("pthread_attr_setguardsize")]
pub unsafe extern "C" fn pthread_attr_setguardsize(a: *mut *mut Attr, n: usize) -> i32 {
    unsafe { with_attr(a, |x| x.guard_size = n) }
}

/// `scePthreadAttrSetguardsize`.
#[nid("scePthreadAttrSetguardsize")]
pub unsafe extern "C" fn sce_pthread_attr_setguardsize(a: *mut *mut Attr, n: usize) -> i32 {
    sce(unsafe { pthread_attr_setguardsize(a, n) })
}

/// `pthread_attr_setstack(attr, addr, size)`: the thread runs on the caller's memory.
#[nid("pthread_attr_setstack")]
pub unsafe extern "C" fn pthread_attr_setstack(a: *mut *mut Attr, addr: usize, n: usize) -> i32 {
    if addr == 0 || n < libc::PTHREAD_STACK_MIN {
        return EINVAL;
    }
    unsafe {
        with_attr(a, |x| {
            x.stack_addr = addr;
            x.stack_size = n;
        })
    }
}

/// `scePthreadAttrSetstack`.
#[nid("scePthreadAttrSetstack")]
pub unsafe extern "C" fn sce_pthread_attr_setstack(
    a: *mut *mut Attr,
    addr: usize,
    n: usize,
) -> i32 {
    sce(unsafe { pthread_attr_setstack(a, addr, n) })
}

/// `pthread_attr_setschedpolicy` (FreeBSD SCHED_FIFO 1, SCHED_OTHER 2, SCHED_RR 3).
#[nid("pthread_attr_setschedpolicy")]
pub unsafe extern "C" fn pthread_attr_setschedpolicy(a: *mut *mut Attr, p: i32) -> i32 {
    if !(1..=3).contains(&p) {
        return if a.is_null() { EINVAL } else { 45 }; // ENOTSUP
    }
    unsafe { with_attr(a, |x| x.policy = p) }
}

/// `pthread_attr_setinheritsched` (PTHREAD_INHERIT_SCHED 4, PTHREAD_EXPLICIT_SCHED 0).
#[nid("pthread_attr_setinheritsched")]
pub unsafe extern "C" fn pthread_attr_setinheritsched(a: *mut *mut Attr, v: i32) -> i32 {
    if v != 0 && v != 4 {
        return 45; // ENOTSUP, as FreeBSD
    }
    unsafe { with_attr(a, |x| x.inherit = v) }
}

/// `pthread_attr_setschedparam(attr, const struct sched_param *)`.
#[nid("pthread_attr_setschedparam")]
pub unsafe extern "C" fn pthread_attr_setschedparam(a: *mut *mut Attr, p: *const i32) -> i32 {
    if p.is_null() {
        return EINVAL;
    }
    let prio = unsafe { *p };
    unsafe { with_attr(a, |x| x.priority = prio) }
}

// The libc crate does not bind this one.
unsafe extern "C" {
    #[link_name = "pthread_attr_getdetachstate"]
    fn host_getdetachstate(a: *const libc::pthread_attr_t, out: *mut i32) -> i32;
}

/// Fills `attr` with what the host knows of thread `t`.
unsafe fn attr_of_thread(t: libc::pthread_t, a: *mut *mut Attr) -> i32 {
    if a.is_null() || unsafe { (*a).is_null() } {
        return EINVAL;
    }
    let mut h: libc::pthread_attr_t = unsafe { std::mem::zeroed() };
    if unsafe { libc::pthread_getattr_np(t, &mut h) } != 0 {
        return ESRCH;
    }
    let (mut addr, mut size, mut guard, mut det) = (std::ptr::null_mut(), 0usize, 0usize, 0);
    unsafe {
        libc::pthread_attr_getstack(&h, &mut addr, &mut size);
        libc::pthread_attr_getguardsize(&h, &mut guard);
        host_getdetachstate(&h, &mut det);
        libc::pthread_attr_destroy(&mut h);
    }
    unsafe {
        with_attr(a, |x| {
            x.stack_addr = addr as usize;
            x.stack_size = size;
            x.guard_size = guard;
            x.detached = det == libc::PTHREAD_CREATE_DETACHED;
            x.priority = DEFAULT_PRIORITY;
        })
    }
}

/// `pthread_attr_get_np(thread, attr)`: the running thread's stack, guard and detach
/// state.
#[nid("pthread_attr_get_np")]
pub unsafe extern "C" fn pthread_attr_get_np(t: libc::pthread_t, a: *mut *mut Attr) -> i32 {
    unsafe { attr_of_thread(t, a) }
}

/// `scePthreadAttrGet(thread, attr)`.
#[nid("scePthreadAttrGet")]
pub unsafe extern "C" fn sce_pthread_attr_get(t: libc::pthread_t, a: *mut *mut Attr) -> i32 {
    sce(unsafe { attr_of_thread(t, a) })
}

/// `pthread_getname_np(thread, buf, len)`: ERANGE if the name does not fit.
#[nid("pthread_getname_np")]
pub unsafe extern "C" fn pthread_getname_np(t: libc::pthread_t, buf: *mut u8, len: usize) -> i32 {
    if buf.is_null() {
        return EINVAL;
    }
    let mut name = [0u8; 16];
    let r = unsafe { libc::pthread_getname_np(t, name.as_mut_ptr().cast(), name.len()) };
    if r != 0 {
        return ESRCH;
    }
    let n = name.iter().position(|&b| b == 0).unwrap_or(15);
    if n + 1 > len {
        return ERANGE;
    }
    unsafe { std::ptr::copy_nonoverlapping(name.as_ptr(), buf, n + 1) };
    0
}

/// `scePthreadGetname(thread, buf)`: the buffer holds 32 bytes on the console.
#[nid("scePthreadGetname")]
pub unsafe extern "C" fn sce_pthread_getname(t: libc::pthread_t, buf: *mut u8) -> i32 {
    sce(unsafe { pthread_getname_np(t, buf, 32) })
}

/// `pthread_set_name_np(thread, name)`: names longer than the host's 15 bytes are cut.
#[nid("pthread_set_name_np")]
pub unsafe extern "C" fn pthread_set_name_np(t: libc::pthread_t, name: *const libc::c_char) {
    if !name.is_null() {
        let src = unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes();
        let mut b = [0u8; 16];
        let n = src.len().min(15);
        b[..n].copy_from_slice(&src[..n]);
        unsafe { libc::pthread_setname_np(t, b.as_ptr().cast()) };
    }
}

/// `pthread_setname_np(thread, name)` (the Linux/WebKit form, returning an error code).
#[nid("pthread_setname_np")]
pub unsafe extern "C" fn pthread_setname_np(t: libc::pthread_t, name: *const libc::c_char) -> i32 {
    if name.is_null() {
        return EINVAL;
    }
    unsafe { pthread_set_name_np(t, name) };
    0
}

/// Recorded (policy, priority) per thread (`pthread_t`), set by `scePthreadSetprio` and
/// the `setschedparam` calls.
static SCHED: std::sync::Mutex<Vec<(libc::pthread_t, i32, i32)>> =
    std::sync::Mutex::new(Vec::new());

fn sched_of(t: libc::pthread_t) -> (i32, i32) {
    let v = SCHED.lock().unwrap_or_else(|e| e.into_inner());
    v.iter()
        .find(|e| e.0 == t)
        .map_or((2, DEFAULT_PRIORITY), |e| (e.1, e.2))
}

fn put(v: &mut Vec<(libc::pthread_t, i32, i32)>, t: libc::pthread_t, policy: i32, prio: i32) {
    match v.iter_mut().find(|e| e.0 == t) {
        Some(e) => (e.1, e.2) = (policy, prio),
        None => v.push((t, policy, prio)),
    }
}

fn record(t: libc::pthread_t, policy: i32, prio: i32) {
    put(
        &mut SCHED.lock().unwrap_or_else(|e| e.into_inner()),
        t,
        policy,
        prio,
    );
}

/// Runs `create` (which makes a thread and returns its result and, on success, its
/// `pthread_t`) with the table locked, and records `(policy, prio)` for the new thread
/// before unlocking, so the thread never sees a stale entry of an exited thread with the
/// same `pthread_t`.
pub(crate) fn while_recording(
    policy: i32,
    prio: i32,
    create: impl FnOnce() -> (i32, Option<libc::pthread_t>),
) -> i32 {
    let mut v = SCHED.lock().unwrap_or_else(|e| e.into_inner());
    let (r, t) = create();
    if let Some(t) = t {
        put(&mut v, t, policy, prio);
    }
    r
}

/// The recorded priority of thread `t` (700 if none was set).
pub fn priority_of(t: libc::pthread_t) -> i32 {
    sched_of(t).1
}

/// Records a priority for `t`: EINVAL outside 256..=767, the PS4/PS5 range; ESRCH for
/// a thread that does not exist.
pub fn set_priority(t: libc::pthread_t, prio: i32) -> i32 {
    if !(256..=767).contains(&prio) {
        return EINVAL;
    }
    if unsafe { libc::pthread_kill(t, 0) } != 0 {
        return ESRCH;
    }
    let policy = sched_of(t).0;
    record(t, policy, prio);
    0
}

/// `pthread_getschedparam(thread, policy, param)`: the recorded policy and priority
/// (SCHED_OTHER and 700 by default).
#[nid("pthread_getschedparam")]
pub unsafe extern "C" fn pthread_getschedparam(
    t: libc::pthread_t,
    policy: *mut i32,
    param: *mut i32,
) -> i32 {
    if policy.is_null() || param.is_null() {
        return EINVAL;
    }
    if unsafe { libc::pthread_kill(t, 0) } != 0 {
        return ESRCH;
    }
    let (p, prio) = sched_of(t);
    unsafe {
        *policy = p;
        *param = prio;
    }
    0
}

/// `pthread_setschedparam(thread, policy, param)`: recorded, not applied.
#[nid("pthread_setschedparam")]
pub unsafe extern "C" fn pthread_setschedparam(
    t: libc::pthread_t,
    policy: i32,
    param: *const i32,
) -> i32 {
    if param.is_null() || !(1..=3).contains(&policy) {
        return EINVAL;
    }
    let prio = unsafe { *param };
    if !(256..=767).contains(&prio) {
        return EINVAL;
    }
    if unsafe { libc::pthread_kill(t, 0) } != 0 {
        return ESRCH;
    }
    record(t, policy, prio);
    0
}

/// `scePthreadGetschedparam(thread, policy, param)`.
#[nid("scePthreadGetschedparam")]
pub unsafe extern "C" fn sce_pthread_getschedparam(
    t: libc::pthread_t,
    policy: *mut i32,
    param: *mut i32,
) -> i32 {
    sce(unsafe { pthread_getschedparam(t, policy, param) })
}

/// `scePthreadSetschedparam`.
#[nid("scePthreadSetschedparam")]
pub unsafe extern "C" fn sce_pthread_setschedparam(
    t: libc::pthread_t,
    policy: i32,
    param: *const i32,
) -> i32 {
    sce(unsafe { pthread_setschedparam(t, policy, param) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_round_trip_and_reach_the_host_thread() {
        let mut a: *mut Attr = std::ptr::null_mut();
        unsafe {
            assert_eq!(crate::thread::pthread_attr_init(&mut a), 0);
            let (mut i, mut u, mut m) = (0i32, 0usize, 0u64);
            assert_eq!(pthread_attr_getdetachstate(&a, &mut i), 0);
            assert_eq!(i, 0);
            assert_eq!(pthread_attr_getinheritsched(&a, &mut i), 0);
            assert_eq!(i, 4);
            assert_eq!(pthread_attr_getschedpolicy(&a, &mut i), 0);
            assert_eq!(i, 2);
            assert_eq!(pthread_attr_getschedparam(&a, &mut i), 0);
            assert_eq!(i, 700);
            assert_eq!(crate::thread::sce_pthread_attr_setaffinity(&mut a, 0x3), 0);
            assert_eq!(sce_pthread_attr_getaffinity(&a, &mut m), 0);
            assert_eq!(m, 3);
            let p = 300;
            assert_eq!(crate::thread::sce_pthread_attr_setschedparam(&mut a, &p), 0);
            assert_eq!(sce_pthread_attr_getschedparam(&a, &mut i), 0);
            assert_eq!(i, 300);
            assert_eq!(pthread_attr_setschedpolicy(&mut a, 9), 45);
            assert_eq!(pthread_attr_setguardsize(&mut a, 3 * 4096), 0);
            assert_eq!(crate::thread::pthread_attr_setstacksize(&mut a, 1 << 20), 0);
            assert_eq!(pthread_attr_getstacksize(&a, &mut u), 0);
            assert_eq!(u, 1 << 20);
            assert_eq!(
                sce_pthread_attr_getguardsize(&a, std::ptr::null_mut()),
                crate::sce_error(EINVAL)
            );
            // A thread made with it has that stack and guard size (the host says so).
            extern "C" fn body(arg: *mut u8) -> *mut u8 {
                let mut b: *mut Attr = std::ptr::null_mut();
                unsafe {
                    crate::thread::pthread_attr_init(&mut b);
                    assert_eq!(pthread_attr_get_np(libc::pthread_self(), &mut b), 0);
                    let out = arg as *mut usize;
                    *out = (*b).stack_size;
                    *out.add(1) = (*b).guard_size;
                    let (mut addr, mut size) = (0usize, 0usize);
                    pthread_attr_getstack(&b, &mut addr, &mut size);
                    // Our own frame lies inside the reported stack.
                    let here = &addr as *const usize as usize;
                    *out.add(2) = usize::from(addr < here && here < addr + size);
                    crate::thread::pthread_attr_destroy(&mut b);
                }
                std::ptr::null_mut()
            }
            let mut out = [0usize; 3];
            let mut t: libc::pthread_t = 0;
            assert_eq!(
                crate::thread::pthread_create(&mut t, &a, body, out.as_mut_ptr().cast()),
                0
            );
            assert_eq!(crate::thread::pthread_join(t, std::ptr::null_mut()), 0);
            // glibc may hand out a larger cached stack of an exited thread (2 MiB test
            // threads here), never a smaller one.
            assert!(out[0] >= 1 << 20, "stack {}", out[0]);
            assert_eq!(out[1..], [3 * 4096, 1]);
            assert_eq!(crate::thread::pthread_attr_destroy(&mut a), 0);
        }
    }

    #[test]
    fn priorities_are_recorded_per_thread() {
        let me = unsafe { libc::pthread_self() };
        let (mut pol, mut prio) = (0, 0);
        unsafe {
            assert_eq!(
                crate::thread::sce_pthread_setprio(me, 100),
                crate::sce_error(EINVAL)
            );
            assert_eq!(crate::thread::sce_pthread_setprio(me, 300), 0);
            assert_eq!(crate::thread::sce_pthread_getprio(me, &mut prio), 0);
            assert_eq!(prio, 300);
            assert_eq!(pthread_setschedparam(me, 1, &450), 0);
            assert_eq!(sce_pthread_getschedparam(me, &mut pol, &mut prio), 0);
            assert_eq!((pol, prio), (1, 450));
            assert_eq!(pthread_setschedparam(me, 9, &450), EINVAL);
        }
        // A thread created by this library starts with its attributes' priority (the
        // default 700 here), whatever an exited thread with the same pthread_t had.
        extern "C" fn report(out: *mut u8) -> *mut u8 {
            unsafe { crate::thread::sce_pthread_getprio(libc::pthread_self(), out.cast()) };
            std::ptr::null_mut()
        }
        let mut p = 0i32;
        let mut t: libc::pthread_t = 0;
        unsafe {
            assert_eq!(
                crate::thread::pthread_create(
                    &mut t,
                    std::ptr::null(),
                    report,
                    (&raw mut p).cast()
                ),
                0
            );
            assert_eq!(crate::thread::pthread_join(t, std::ptr::null_mut()), 0);
        }
        assert_eq!(p, 700);
    }

    #[test]
    fn names_go_through_the_host() {
        let me = unsafe { libc::pthread_self() };
        let mut buf = [0u8; 32];
        unsafe {
            pthread_set_name_np(me, c"a-very-long-thread-name".as_ptr());
            assert_eq!(sce_pthread_getname(me, buf.as_mut_ptr()), 0);
            let mut host = [0u8; 16];
            libc::pthread_getname_np(me, host.as_mut_ptr().cast(), 16);
            assert_eq!(&buf[..16], &host);
            assert_eq!(&buf[..16], b"a-very-long-thr\0");
            assert_eq!(pthread_getname_np(me, buf.as_mut_ptr(), 4), ERANGE);
        }
    }
}
