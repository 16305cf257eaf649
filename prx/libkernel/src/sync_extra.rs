//! Barriers, spin locks and the condition variable / rwlock attribute objects. As every
//! FreeBSD pthread object, each is a pointer-sized word pointing at an object of this
//! library, allocated by its `_init` and freed by its `_destroy`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

use aps5_prx_macros::nid;

use crate::thread::sce;

const EINVAL: i32 = 22;
const EBUSY: i32 = 16;

/// `PTHREAD_BARRIER_SERIAL_THREAD` (FreeBSD -1): returned to exactly one waiter per round.
pub const BARRIER_SERIAL_THREAD: i32 = -1;

/// What a guest `pthread_barrier_t` points at.
pub struct Barrier {
    count: u32,
    /// (threads waiting in this round, round number)
    state: Mutex<(u32, u64)>,
    cv: Condvar,
}

/// `pthread_barrier_init(barrier, attr, count)`: EINVAL for a zero count.
#[nid("pthread_barrier_init")]
pub unsafe extern "C" fn pthread_barrier_init(
    b: *mut *mut Barrier,
    _attr: *const *mut i32,
    count: u32,
) -> i32 {
    if b.is_null() || count == 0 {
        return EINVAL;
    }
    let obj = Barrier {
        count,
        state: Mutex::new((0, 0)),
        cv: Condvar::new(),
    };
    unsafe { *b = Box::into_raw(Box::new(obj)) };
    0
}

/// `pthread_barrier_wait`: blocks until `count` threads have arrived; one of them gets
/// `PTHREAD_BARRIER_SERIAL_THREAD`, the others 0.
#[nid("pthread_barrier_wait")]
pub unsafe extern "C" fn pthread_barrier_wait(b: *mut *mut Barrier) -> i32 {
    let Some(bar) = (unsafe { b.as_ref().and_then(|p| p.as_ref()) }) else {
        return EINVAL;
    };
    let mut g = bar.state.lock().unwrap_or_else(|e| e.into_inner());
    let round = g.1;
    g.0 += 1;
    if g.0 == bar.count {
        g.0 = 0;
        g.1 += 1;
        bar.cv.notify_all();
        return BARRIER_SERIAL_THREAD;
    }
    while g.1 == round {
        g = bar.cv.wait(g).unwrap_or_else(|e| e.into_inner());
    }
    0
}

/// `pthread_barrier_destroy`: EBUSY while threads wait in it.
#[nid("pthread_barrier_destroy")]
pub unsafe extern "C" fn pthread_barrier_destroy(b: *mut *mut Barrier) -> i32 {
    if b.is_null() || unsafe { (*b).is_null() } {
        return EINVAL;
    }
    let busy = unsafe { &**b }
        .state
        .lock()
        .map(|g| g.0 != 0)
        .unwrap_or(false);
    if busy {
        return EBUSY;
    }
    unsafe {
        drop(Box::from_raw(*b));
        *b = std::ptr::null_mut();
    }
    0
}

/// Attribute objects of this module hold one `int`: the process-shared setting (only
/// PTHREAD_PROCESS_PRIVATE 0 is supported, as in FreeBSD 9's libthr), plus a second
/// one where the object has one (condattr clock, rwlockattr kind).
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
pub struct SimpleAttr {
    /// PTHREAD_PROCESS_PRIVATE 0 / SHARED 1.
    pub pshared: i32,
    /// Condattr: clock id (CLOCK_REALTIME 0); rwlockattr: kind.
    pub extra: i32,
}

unsafe fn attr_init(a: *mut *mut SimpleAttr) -> i32 {
    if a.is_null() {
        return EINVAL;
    }
    unsafe { *a = Box::into_raw(Box::new(SimpleAttr::default())) };
    0
}

unsafe fn attr_destroy(a: *mut *mut SimpleAttr) -> i32 {
    if a.is_null() || unsafe { (*a).is_null() } {
        return EINVAL;
    }
    unsafe {
        drop(Box::from_raw(*a));
        *a = std::ptr::null_mut();
    }
    0
}

unsafe fn attr_ref<'a>(a: *const *mut SimpleAttr) -> Option<&'a mut SimpleAttr> {
    unsafe { a.as_ref().and_then(|p| p.as_mut()) }
}

unsafe fn attr_get(a: *const *mut SimpleAttr, out: *mut i32, f: fn(&SimpleAttr) -> i32) -> i32 {
    match unsafe { attr_ref(a) } {
        Some(x) if !out.is_null() => {
            unsafe { *out = f(x) };
            0
        }
        _ => EINVAL,
    }
}

unsafe fn set_pshared(a: *mut *mut SimpleAttr, v: i32) -> i32 {
    match unsafe { attr_ref(a) } {
        // Process-shared objects would need shared memory between processes: not here.
        Some(x) if v == 0 => {
            x.pshared = v;
            0
        }
        _ => EINVAL,
    }
}

macro_rules! attr_fns {
    ($init:literal, $fi:ident, $destroy:literal, $fd:ident, $getp:literal, $fg:ident, $setp:literal, $fs:ident) => {
        #[doc = concat!("`", $init, "`.")]
        #[nid($init)]
        pub unsafe extern "C" fn $fi(a: *mut *mut SimpleAttr) -> i32 {
            unsafe { attr_init(a) }
        }
        #[doc = concat!("`", $destroy, "`.")]
        #[nid($destroy)]
        pub unsafe extern "C" fn $fd(a: *mut *mut SimpleAttr) -> i32 {
            unsafe { attr_destroy(a) }
        }
        #[doc = concat!("`", $getp, "`.")]
        #[nid($getp)]
        pub unsafe extern "C" fn $fg(a: *const *mut SimpleAttr, out: *mut i32) -> i32 {
            unsafe { attr_get(a, out, |x| x.pshared) }
        }
        #[doc = concat!("`", $setp, "`: only PTHREAD_PROCESS_PRIVATE (0).")]
        #[nid($setp)]
        pub unsafe extern "C" fn $fs(a: *mut *mut SimpleAttr, v: i32) -> i32 {
            unsafe { set_pshared(a, v) }
        }
    };
}

attr_fns!(
    "pthread_condattr_init",
    pthread_condattr_init,
    "pthread_condattr_destroy",
    pthread_condattr_destroy,
    "pthread_condattr_getpshared",
    pthread_condattr_getpshared,
    "pthread_condattr_setpshared",
    pthread_condattr_setpshared
);
attr_fns!(
    "pthread_rwlockattr_init",
    pthread_rwlockattr_init,
    "pthread_rwlockattr_destroy",
    pthread_rwlockattr_destroy,
    "pthread_rwlockattr_getpshared",
    pthread_rwlockattr_getpshared,
    "pthread_rwlockattr_setpshared",
    pthread_rwlockattr_setpshared
);
attr_fns!(
    "pthread_barrierattr_init",
    pthread_barrierattr_init,
    "pthread_barrierattr_destroy",
    pthread_barrierattr_destroy,
    "pthread_barrierattr_getpshared",
    pthread_barrierattr_getpshared,
    "pthread_barrierattr_setpshared",
    pthread_barrierattr_setpshared
);

/// `pthread_condattr_getclock`.
#[nid("pthread_condattr_getclock")]
pub unsafe extern "C" fn pthread_condattr_getclock(
    a: *const *mut SimpleAttr,
    out: *mut i32,
) -> i32 {
    unsafe { attr_get(a, out, |x| x.extra) }
}

/// `pthread_condattr_setclock`: only CLOCK_REALTIME (0), the clock this library's
/// condition variables time out on; other clocks are EINVAL rather than silently wrong.
#[nid("pthread_condattr_setclock")]
pub unsafe extern "C" fn pthread_condattr_setclock(a: *mut *mut SimpleAttr, clock: i32) -> i32 {
    match unsafe { attr_ref(a) } {
        Some(x) if clock == 0 => {
            x.extra = clock;
            0
        }
        _ => EINVAL,
    }
}

/// `pthread_rwlockattr_gettype_np` (the kind is recorded; every kind behaves the same).
#[nid("pthread_rwlockattr_gettype_np")]
pub unsafe extern "C" fn pthread_rwlockattr_gettype_np(
    a: *const *mut SimpleAttr,
    out: *mut i32,
) -> i32 {
    unsafe { attr_get(a, out, |x| x.extra) }
}

/// `pthread_rwlockattr_settype_np`.
#[nid("pthread_rwlockattr_settype_np")]
pub unsafe extern "C" fn pthread_rwlockattr_settype_np(a: *mut *mut SimpleAttr, v: i32) -> i32 {
    match unsafe { attr_ref(a) } {
        Some(x) => {
            x.extra = v;
            0
        }
        None => EINVAL,
    }
}

/// `scePthreadCondattrInit`.
#[nid("scePthreadCondattrInit")]
pub unsafe extern "C" fn sce_pthread_condattr_init(a: *mut *mut SimpleAttr) -> i32 {
    sce(unsafe { attr_init(a) })
}

/// `scePthreadCondattrDestroy`.
#[nid("scePthreadCondattrDestroy")]
pub unsafe extern "C" fn sce_pthread_condattr_destroy(a: *mut *mut SimpleAttr) -> i32 {
    sce(unsafe { attr_destroy(a) })
}

/// `scePthreadRwlockattrInit`.
#[nid("scePthreadRwlockattrInit")]
pub unsafe extern "C" fn sce_pthread_rwlockattr_init(a: *mut *mut SimpleAttr) -> i32 {
    sce(unsafe { attr_init(a) })
}

/// `scePthreadRwlockattrDestroy`.
#[nid("scePthreadRwlockattrDestroy")]
pub unsafe extern "C" fn sce_pthread_rwlockattr_destroy(a: *mut *mut SimpleAttr) -> i32 {
    sce(unsafe { attr_destroy(a) })
}

/// `scePthreadRwlockattrGettype`.
#[nid("scePthreadRwlockattrGettype")]
pub unsafe extern "C" fn sce_pthread_rwlockattr_gettype(
    a: *const *mut SimpleAttr,
    out: *mut i32,
) -> i32 {
    sce(unsafe { pthread_rwlockattr_gettype_np(a, out) })
}

/// `scePthreadRwlockattrSettype`.
#[nid("scePthreadRwlockattrSettype")]
pub unsafe extern "C" fn sce_pthread_rwlockattr_settype(a: *mut *mut SimpleAttr, v: i32) -> i32 {
    sce(unsafe { pthread_rwlockattr_settype_np(a, v) })
}

/// What a guest `pthread_spinlock_t` points at.
pub struct Spin(AtomicBool);

/// `pthread_spin_init(lock, pshared)`.
#[nid("pthread_spin_init")]
pub unsafe extern "C" fn pthread_spin_init(l: *mut *mut Spin, _pshared: i32) -> i32 {
    if l.is_null() {
        return EINVAL;
    }
    unsafe { *l = Box::into_raw(Box::new(Spin(AtomicBool::new(false)))) };
    0
}

unsafe fn spin_of<'a>(l: *mut *mut Spin) -> Option<&'a Spin> {
    unsafe { l.as_ref().and_then(|p| p.as_ref()) }
}

/// `pthread_spin_lock`: spins, yielding the CPU after a while (the host may run more
/// threads than it has cores).
#[nid("pthread_spin_lock")]
pub unsafe extern "C" fn pthread_spin_lock(l: *mut *mut Spin) -> i32 {
    let Some(s) = (unsafe { spin_of(l) }) else {
        return EINVAL;
    };
    let mut spins = 0u32;
    while s
        .0
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        spins += 1;
        if spins < 100 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    0
}

/// `pthread_spin_trylock`: EBUSY if held.
#[nid("pthread_spin_trylock")]
pub unsafe extern "C" fn pthread_spin_trylock(l: *mut *mut Spin) -> i32 {
    match unsafe { spin_of(l) } {
        Some(s) => {
            if s.0
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                0
            } else {
                EBUSY
            }
        }
        None => EINVAL,
    }
}

/// `pthread_spin_unlock`.
#[nid("pthread_spin_unlock")]
pub unsafe extern "C" fn pthread_spin_unlock(l: *mut *mut Spin) -> i32 {
    match unsafe { spin_of(l) } {
        Some(s) => {
            s.0.store(false, Ordering::Release);
            0
        }
        None => EINVAL,
    }
}

/// `pthread_spin_destroy`: EBUSY while held.
#[nid("pthread_spin_destroy")]
pub unsafe extern "C" fn pthread_spin_destroy(l: *mut *mut Spin) -> i32 {
    match unsafe { spin_of(l) } {
        Some(s) if s.0.load(Ordering::Acquire) => EBUSY,
        Some(_) => {
            unsafe {
                drop(Box::from_raw(*l));
                *l = std::ptr::null_mut();
            }
            0
        }
        None => EINVAL,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicU32;

    struct P<T>(*mut T);
    unsafe impl<T> Send for P<T> {}
    unsafe impl<T> Sync for P<T> {}

    #[test]
    fn barrier_releases_rounds_and_names_one_serial_thread() {
        const N: u32 = 4;
        const ROUNDS: u32 = 50;
        let mut b: *mut Barrier = std::ptr::null_mut();
        assert_eq!(
            unsafe { pthread_barrier_init(&mut b, std::ptr::null(), 0) },
            EINVAL
        );
        assert_eq!(
            unsafe { pthread_barrier_init(&mut b, std::ptr::null(), N) },
            0
        );
        let bp = Arc::new(P(&raw mut b));
        let serial = Arc::new(AtomicU32::new(0));
        let arrived = Arc::new(AtomicU32::new(0));
        let hs: Vec<_> = (0..N)
            .map(|_| {
                let (bp, serial, arrived) = (bp.clone(), serial.clone(), arrived.clone());
                std::thread::spawn(move || {
                    for r in 0..ROUNDS {
                        arrived.fetch_add(1, Ordering::SeqCst);
                        let v = unsafe { pthread_barrier_wait(bp.0) };
                        // Nobody passes before everyone of this round arrived.
                        assert!(arrived.load(Ordering::SeqCst) >= (r + 1) * N);
                        match v {
                            BARRIER_SERIAL_THREAD => {
                                serial.fetch_add(1, Ordering::SeqCst);
                            }
                            0 => {}
                            x => panic!("barrier wait returned {x}"),
                        }
                        unsafe { pthread_barrier_wait(bp.0) };
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(serial.load(Ordering::SeqCst), ROUNDS);
        assert_eq!(unsafe { pthread_barrier_destroy(&mut b) }, 0);
        assert!(b.is_null());
    }

    #[test]
    fn spin_lock_excludes() {
        let mut l: *mut Spin = std::ptr::null_mut();
        assert_eq!(unsafe { pthread_spin_init(&mut l, 0) }, 0);
        let lp = Arc::new(P(&raw mut l));
        let counter = Arc::new(P(Box::into_raw(Box::new(0u64))));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let (lp, c) = (lp.clone(), counter.clone());
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        unsafe {
                            pthread_spin_lock(lp.0);
                            // A plain read-modify-write: only exclusion keeps it exact.
                            let v = std::ptr::read_volatile(c.0);
                            std::ptr::write_volatile(c.0, v + 1);
                            pthread_spin_unlock(lp.0);
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(unsafe { *counter.0 }, 80_000);
        unsafe {
            assert_eq!(pthread_spin_trylock(&mut l), 0);
            assert_eq!(pthread_spin_trylock(&mut l), EBUSY);
            assert_eq!(pthread_spin_destroy(&mut l), EBUSY);
            assert_eq!(pthread_spin_unlock(&mut l), 0);
            assert_eq!(pthread_spin_destroy(&mut l), 0);
            drop(Box::from_raw(counter.0));
        }
    }

    #[test]
    fn attribute_objects() {
        let mut a: *mut SimpleAttr = std::ptr::null_mut();
        let mut v = 9;
        unsafe {
            assert_eq!(pthread_condattr_init(&mut a), 0);
            assert_eq!(pthread_condattr_getpshared(&a, &mut v), 0);
            assert_eq!(v, 0);
            assert_eq!(pthread_condattr_setpshared(&mut a, 1), EINVAL);
            assert_eq!(pthread_condattr_setclock(&mut a, 4), EINVAL);
            assert_eq!(pthread_condattr_getclock(&a, &mut v), 0);
            assert_eq!(v, 0);
            assert_eq!(pthread_condattr_destroy(&mut a), 0);
            assert_eq!(pthread_condattr_destroy(&mut a), EINVAL);
            assert_eq!(sce_pthread_rwlockattr_init(&mut a), 0);
            assert_eq!(sce_pthread_rwlockattr_settype(&mut a, 2), 0);
            assert_eq!(sce_pthread_rwlockattr_gettype(&a, &mut v), 0);
            assert_eq!(v, 2);
            assert_eq!(
                sce_pthread_rwlockattr_gettype(&a, std::ptr::null_mut()),
                crate::sce_error(EINVAL)
            );
            assert_eq!(sce_pthread_rwlockattr_destroy(&mut a), 0);
        }
    }
}
