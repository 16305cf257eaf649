//! Mutexes and condition variables. On FreeBSD (and so the PS4/PS5) `pthread_mutex_t` and
//! `pthread_cond_t` are pointers to objects the library allocates; a zero value (the static
//! initialiser) is allocated on first use. Here they point at boxed host objects.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use aps5_prx_macros::nid;

use crate::errno::from_host;
use crate::sce_error;

/// What a guest `pthread_mutexattr_t` points at: the FreeBSD mutex type.
#[derive(Debug, Clone, Copy)]
pub struct MutexAttr {
    /// ERRORCHECK 1, RECURSIVE 2, NORMAL 3, ADAPTIVE 4 (FreeBSD and SCE values).
    pub kind: i32,
}

/// FreeBSD's default mutex type is ERRORCHECK.
const DEFAULT_KIND: i32 = 1;

/// What a guest mutex word points at. ERRORCHECK mutexes (FreeBSD's default, so most of a
/// game's) are a host NORMAL mutex plus an owner check here: glibc's own ERRORCHECK type
/// takes its slow generic path, about twice the cost of a NORMAL lock per lock+unlock.
/// `host` comes first, so a pointer to this is a pointer to the host mutex (for cond waits).
#[repr(C)]
struct GuestMutex {
    host: libc::pthread_mutex_t,
    /// ERRORCHECK: relocking is EDEADLK, unlocking by another thread EPERM.
    check: bool,
    /// The holding thread (`pthread_self`), 0 when free; only kept when `check`. Only the
    /// holder stores its own id, so a thread reading its own id here really holds it.
    owner: AtomicUsize,
}

fn host_kind(kind: i32) -> i32 {
    match kind {
        2 => libc::PTHREAD_MUTEX_RECURSIVE,
        _ => libc::PTHREAD_MUTEX_NORMAL,
    }
}

fn new_mutex(kind: i32) -> *mut libc::pthread_mutex_t {
    unsafe {
        let m = Box::into_raw(Box::new(GuestMutex {
            host: std::mem::zeroed(),
            check: !matches!(kind, 2..=4),
            owner: AtomicUsize::new(0),
        }));
        let mut a: libc::pthread_mutexattr_t = std::mem::zeroed();
        libc::pthread_mutexattr_init(&mut a);
        libc::pthread_mutexattr_settype(&mut a, host_kind(kind));
        libc::pthread_mutex_init(&mut (*m).host, &a);
        libc::pthread_mutexattr_destroy(&mut a);
        m.cast()
    }
}

/// The guest mutex behind a host mutex pointer made by [`new_mutex`].
unsafe fn guest(h: *mut libc::pthread_mutex_t) -> &'static GuestMutex {
    unsafe { &*h.cast::<GuestMutex>() }
}

fn me() -> usize {
    unsafe { libc::pthread_self() as usize }
}

/// Frees a mutex made by [`new_mutex`].
unsafe fn free_mutex(h: *mut libc::pthread_mutex_t) {
    unsafe { drop(Box::from_raw(h.cast::<GuestMutex>())) }
}

/// Marks the calling thread as the holder again when a cond wait returns or unwinds (the
/// host re-acquires the mutex in both cases).
struct Reown<'a>(&'a GuestMutex);

impl Drop for Reown<'_> {
    fn drop(&mut self) {
        if self.0.check {
            self.0.owner.store(me(), Ordering::Relaxed);
        }
    }
}

/// Before a cond wait on `h`: EPERM if an ERRORCHECK mutex is not held by the caller, else
/// the holder mark is cleared (the wait releases the mutex).
unsafe fn release_for_wait(h: *mut libc::pthread_mutex_t) -> Result<Reown<'static>, i32> {
    let g = unsafe { guest(h) };
    if g.check {
        if g.owner.load(Ordering::Relaxed) != me() {
            return Err(1); // EPERM
        }
        g.owner.store(0, Ordering::Relaxed);
    }
    Ok(Reown(g))
}

/// The host mutex behind a guest mutex word, allocating it for static initialisers
/// (values 0..=2 are FreeBSD's static initialisers: default, adaptive, ...).
#[inline]
unsafe fn mutex_of(p: *mut *mut libc::pthread_mutex_t) -> Option<*mut libc::pthread_mutex_t> {
    if p.is_null() {
        return None;
    }
    let cur = unsafe { AtomicPtr::from_ptr(p) }.load(Ordering::Acquire);
    if cur as usize > 2 {
        return Some(cur);
    }
    unsafe { mutex_first_use(p, cur) }
}

/// The slow path of [`mutex_of`], kept out of line so every lock and unlock inlines the
/// fast one.
#[cold]
unsafe fn mutex_first_use(
    p: *mut *mut libc::pthread_mutex_t,
    cur: *mut libc::pthread_mutex_t,
) -> Option<*mut libc::pthread_mutex_t> {
    let slot = unsafe { AtomicPtr::from_ptr(p) };
    let kind = if cur as usize == 1 { 4 } else { DEFAULT_KIND };
    let fresh = new_mutex(kind);
    match slot.compare_exchange(cur, fresh, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Some(fresh),
        Err(winner) => {
            unsafe {
                libc::pthread_mutex_destroy(fresh);
                free_mutex(fresh);
            }
            Some(winner)
        }
    }
}

fn sce(r: i32) -> i32 {
    if r == 0 { 0 } else { sce_error(r) }
}

/// `pthread_mutex_init`.
#[nid("pthread_mutex_init")]
pub unsafe extern "C" fn pthread_mutex_init(
    m: *mut *mut libc::pthread_mutex_t,
    attr: *const *mut MutexAttr,
) -> i32 {
    if m.is_null() {
        return 22;
    }
    let kind = if attr.is_null() || unsafe { (*attr).is_null() } {
        DEFAULT_KIND
    } else {
        unsafe { (**attr).kind }
    };
    unsafe { *m = new_mutex(kind) };
    0
}

/// `scePthreadMutexInit(mutex, attr, name)`.
#[nid("scePthreadMutexInit")]
pub unsafe extern "C" fn sce_pthread_mutex_init(
    m: *mut *mut libc::pthread_mutex_t,
    attr: *const *mut MutexAttr,
    _name: *const u8,
) -> i32 {
    sce(unsafe { pthread_mutex_init(m, attr) })
}

/// `pthread_mutex_destroy`.
#[nid("pthread_mutex_destroy")]
pub unsafe extern "C" fn pthread_mutex_destroy(m: *mut *mut libc::pthread_mutex_t) -> i32 {
    if m.is_null() {
        return 22;
    }
    let cur = unsafe { *m };
    if cur as usize > 2 {
        let r = unsafe { libc::pthread_mutex_destroy(cur) };
        if r != 0 {
            return from_host(r);
        }
        unsafe { free_mutex(cur) };
    }
    unsafe { *m = std::ptr::null_mut() };
    0
}

/// `scePthreadMutexDestroy`.
#[nid("scePthreadMutexDestroy")]
pub unsafe extern "C" fn sce_pthread_mutex_destroy(m: *mut *mut libc::pthread_mutex_t) -> i32 {
    sce(unsafe { pthread_mutex_destroy(m) })
}

/// Locks (or tries to) with `host`, keeping the owner of an ERRORCHECK mutex; a thread that
/// already owns it gets `relock_errno` (EDEADLK for lock, EBUSY for trylock).
#[inline(always)]
unsafe fn acquire(
    m: *mut *mut libc::pthread_mutex_t,
    relock_errno: i32,
    host: unsafe extern "C" fn(*mut libc::pthread_mutex_t) -> i32,
) -> i32 {
    let Some(h) = (unsafe { mutex_of(m) }) else {
        return 22;
    };
    let g = unsafe { guest(h) };
    if g.check && g.owner.load(Ordering::Relaxed) == me() {
        return relock_errno;
    }
    let r = unsafe { host(h) };
    if r == 0 && g.check {
        g.owner.store(me(), Ordering::Relaxed);
    }
    from_host(r)
}

/// `pthread_mutex_lock`.
#[nid("pthread_mutex_lock")]
pub unsafe extern "C" fn pthread_mutex_lock(m: *mut *mut libc::pthread_mutex_t) -> i32 {
    // SAFETY: the guest passes its mutex word, as for any pthread call.
    unsafe {
        acquire(m, 11 /* EDEADLK */, libc::pthread_mutex_lock)
    }
}

/// `scePthreadMutexLock`.
#[nid("scePthreadMutexLock")]
pub unsafe extern "C" fn sce_pthread_mutex_lock(m: *mut *mut libc::pthread_mutex_t) -> i32 {
    sce(unsafe { pthread_mutex_lock(m) })
}

/// `pthread_mutex_trylock`.
#[nid("pthread_mutex_trylock")]
pub unsafe extern "C" fn pthread_mutex_trylock(m: *mut *mut libc::pthread_mutex_t) -> i32 {
    // SAFETY: as for pthread_mutex_lock.
    unsafe {
        acquire(m, 16 /* EBUSY */, libc::pthread_mutex_trylock)
    }
}

/// `scePthreadMutexTrylock`.
#[nid("scePthreadMutexTrylock")]
pub unsafe extern "C" fn sce_pthread_mutex_trylock(m: *mut *mut libc::pthread_mutex_t) -> i32 {
    sce(unsafe { pthread_mutex_trylock(m) })
}

/// `pthread_mutex_unlock`.
#[nid("pthread_mutex_unlock")]
pub unsafe extern "C" fn pthread_mutex_unlock(m: *mut *mut libc::pthread_mutex_t) -> i32 {
    let Some(h) = (unsafe { mutex_of(m) }) else {
        return 22;
    };
    let g = unsafe { guest(h) };
    if g.check {
        if g.owner.load(Ordering::Relaxed) != me() {
            return 1; // EPERM
        }
        g.owner.store(0, Ordering::Relaxed);
    }
    from_host(unsafe { libc::pthread_mutex_unlock(h) })
}

/// `scePthreadMutexUnlock`.
#[nid("scePthreadMutexUnlock")]
pub unsafe extern "C" fn sce_pthread_mutex_unlock(m: *mut *mut libc::pthread_mutex_t) -> i32 {
    sce(unsafe { pthread_mutex_unlock(m) })
}

/// `pthread_mutexattr_init`.
#[nid("pthread_mutexattr_init")]
pub unsafe extern "C" fn pthread_mutexattr_init(a: *mut *mut MutexAttr) -> i32 {
    if a.is_null() {
        return 22;
    }
    unsafe { *a = Box::into_raw(Box::new(MutexAttr { kind: DEFAULT_KIND })) };
    0
}

/// `scePthreadMutexattrInit`.
#[nid("scePthreadMutexattrInit")]
pub unsafe extern "C" fn sce_pthread_mutexattr_init(a: *mut *mut MutexAttr) -> i32 {
    sce(unsafe { pthread_mutexattr_init(a) })
}

/// `pthread_mutexattr_destroy`.
#[nid("pthread_mutexattr_destroy")]
pub unsafe extern "C" fn pthread_mutexattr_destroy(a: *mut *mut MutexAttr) -> i32 {
    if a.is_null() || unsafe { (*a).is_null() } {
        return 22;
    }
    unsafe {
        drop(Box::from_raw(*a));
        *a = std::ptr::null_mut();
    }
    0
}

/// `scePthreadMutexattrDestroy`.
#[nid("scePthreadMutexattrDestroy")]
pub unsafe extern "C" fn sce_pthread_mutexattr_destroy(a: *mut *mut MutexAttr) -> i32 {
    sce(unsafe { pthread_mutexattr_destroy(a) })
}

/// `pthread_mutexattr_settype`.
#[nid("pthread_mutexattr_settype")]
pub unsafe extern "C" fn pthread_mutexattr_settype(a: *mut *mut MutexAttr, kind: i32) -> i32 {
    if a.is_null() || unsafe { (*a).is_null() } || !(1..=4).contains(&kind) {
        return 22;
    }
    unsafe { (**a).kind = kind };
    0
}

/// `scePthreadMutexattrSettype`.
#[nid("scePthreadMutexattrSettype")]
pub unsafe extern "C" fn sce_pthread_mutexattr_settype(a: *mut *mut MutexAttr, kind: i32) -> i32 {
    sce(unsafe { pthread_mutexattr_settype(a, kind) })
}

fn new_cond() -> *mut libc::pthread_cond_t {
    unsafe {
        let c = Box::into_raw(Box::new(std::mem::zeroed::<libc::pthread_cond_t>()));
        libc::pthread_cond_init(c, std::ptr::null());
        c
    }
}

unsafe fn cond_of(p: *mut *mut libc::pthread_cond_t) -> Option<*mut libc::pthread_cond_t> {
    if p.is_null() {
        return None;
    }
    let slot = unsafe { AtomicPtr::from_ptr(p) };
    let cur = slot.load(Ordering::Acquire);
    if !cur.is_null() {
        return Some(cur);
    }
    let fresh = new_cond();
    match slot.compare_exchange(cur, fresh, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Some(fresh),
        Err(winner) => {
            unsafe { drop(Box::from_raw(fresh)) };
            Some(winner)
        }
    }
}

/// `pthread_cond_init` (attributes ignored: FreeBSD's default clock is CLOCK_REALTIME, as here).
#[nid("pthread_cond_init")]
pub unsafe extern "C" fn pthread_cond_init(
    c: *mut *mut libc::pthread_cond_t,
    _attr: *const u8,
) -> i32 {
    if c.is_null() {
        return 22;
    }
    unsafe { *c = new_cond() };
    0
}

/// `scePthreadCondInit(cond, attr, name)`.
#[nid("scePthreadCondInit")]
pub unsafe extern "C" fn sce_pthread_cond_init(
    c: *mut *mut libc::pthread_cond_t,
    attr: *const u8,
    _name: *const u8,
) -> i32 {
    sce(unsafe { pthread_cond_init(c, attr) })
}

/// `pthread_cond_destroy`.
#[nid("pthread_cond_destroy")]
pub unsafe extern "C" fn pthread_cond_destroy(c: *mut *mut libc::pthread_cond_t) -> i32 {
    if c.is_null() {
        return 22;
    }
    let cur = unsafe { *c };
    if !cur.is_null() {
        unsafe {
            libc::pthread_cond_destroy(cur);
            drop(Box::from_raw(cur));
            *c = std::ptr::null_mut();
        }
    }
    0
}

/// `scePthreadCondDestroy`.
#[nid("scePthreadCondDestroy")]
pub unsafe extern "C" fn sce_pthread_cond_destroy(c: *mut *mut libc::pthread_cond_t) -> i32 {
    sce(unsafe { pthread_cond_destroy(c) })
}

/// `pthread_cond_wait` (a cancellation point).
#[nid("pthread_cond_wait")]
pub unsafe extern "C-unwind" fn pthread_cond_wait(
    c: *mut *mut libc::pthread_cond_t,
    m: *mut *mut libc::pthread_mutex_t,
) -> i32 {
    match unsafe { (cond_of(c), mutex_of(m)) } {
        (Some(c), Some(m)) => match unsafe { release_for_wait(m) } {
            Ok(_reown) => from_host(unsafe { libc::pthread_cond_wait(c, m) }),
            Err(e) => e,
        },
        _ => 22,
    }
}

/// `scePthreadCondWait`.
#[nid("scePthreadCondWait")]
pub unsafe extern "C-unwind" fn sce_pthread_cond_wait(
    c: *mut *mut libc::pthread_cond_t,
    m: *mut *mut libc::pthread_mutex_t,
) -> i32 {
    sce(unsafe { pthread_cond_wait(c, m) })
}

/// `pthread_cond_timedwait` (absolute CLOCK_REALTIME deadline).
#[nid("pthread_cond_timedwait")]
pub unsafe extern "C-unwind" fn pthread_cond_timedwait(
    c: *mut *mut libc::pthread_cond_t,
    m: *mut *mut libc::pthread_mutex_t,
    abstime: *const libc::timespec,
) -> i32 {
    match unsafe { (cond_of(c), mutex_of(m)) } {
        (Some(c), Some(m)) => match unsafe { release_for_wait(m) } {
            Ok(_reown) => from_host(unsafe { libc::pthread_cond_timedwait(c, m, abstime) }),
            Err(e) => e,
        },
        _ => 22,
    }
}

/// `scePthreadCondTimedwait(cond, mutex, usec)`: a relative timeout in microseconds.
#[nid("scePthreadCondTimedwait")]
pub unsafe extern "C-unwind" fn sce_pthread_cond_timedwait(
    c: *mut *mut libc::pthread_cond_t,
    m: *mut *mut libc::pthread_mutex_t,
    usec: u32,
) -> i32 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) };
    let total = now.tv_nsec as u64 + u64::from(usec) * 1000;
    let deadline = libc::timespec {
        tv_sec: now.tv_sec + (total / 1_000_000_000) as libc::time_t,
        tv_nsec: (total % 1_000_000_000) as libc::c_long,
    };
    sce(unsafe { pthread_cond_timedwait(c, m, &deadline) })
}

/// `pthread_cond_signal`.
#[nid("pthread_cond_signal")]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut *mut libc::pthread_cond_t) -> i32 {
    match unsafe { cond_of(c) } {
        Some(c) => from_host(unsafe { libc::pthread_cond_signal(c) }),
        None => 22,
    }
}

/// `scePthreadCondSignal`.
#[nid("scePthreadCondSignal")]
pub unsafe extern "C" fn sce_pthread_cond_signal(c: *mut *mut libc::pthread_cond_t) -> i32 {
    sce(unsafe { pthread_cond_signal(c) })
}

/// `pthread_cond_broadcast`.
#[nid("pthread_cond_broadcast")]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut *mut libc::pthread_cond_t) -> i32 {
    match unsafe { cond_of(c) } {
        Some(c) => from_host(unsafe { libc::pthread_cond_broadcast(c) }),
        None => 22,
    }
}

/// `scePthreadCondBroadcast`.
#[nid("scePthreadCondBroadcast")]
pub unsafe extern "C" fn sce_pthread_cond_broadcast(c: *mut *mut libc::pthread_cond_t) -> i32 {
    sce(unsafe { pthread_cond_broadcast(c) })
}

/// The host rwlock behind a guest `pthread_rwlock_t` word (a pointer on FreeBSD; 0 is the
/// static initialiser, allocated on first use).
unsafe fn rwlock_of(p: *mut *mut libc::pthread_rwlock_t) -> Option<*mut libc::pthread_rwlock_t> {
    if p.is_null() {
        return None;
    }
    let slot = unsafe { AtomicPtr::from_ptr(p) };
    let cur = slot.load(Ordering::Acquire);
    if !cur.is_null() {
        return Some(cur);
    }
    let fresh = Box::into_raw(Box::new(unsafe {
        std::mem::zeroed::<libc::pthread_rwlock_t>()
    }));
    unsafe { libc::pthread_rwlock_init(fresh, std::ptr::null()) };
    match slot.compare_exchange(cur, fresh, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Some(fresh),
        Err(winner) => {
            unsafe { drop(Box::from_raw(fresh)) };
            Some(winner)
        }
    }
}

/// `pthread_rwlock_init` (attributes ignored).
#[nid("pthread_rwlock_init")]
pub unsafe extern "C" fn pthread_rwlock_init(
    l: *mut *mut libc::pthread_rwlock_t,
    _attr: *const u8,
) -> i32 {
    if l.is_null() {
        return 22;
    }
    unsafe { *l = std::ptr::null_mut() };
    if unsafe { rwlock_of(l) }.is_some() {
        0
    } else {
        22
    }
}

/// `pthread_rwlock_destroy`.
#[nid("pthread_rwlock_destroy")]
pub unsafe extern "C" fn pthread_rwlock_destroy(l: *mut *mut libc::pthread_rwlock_t) -> i32 {
    if l.is_null() {
        return 22;
    }
    let cur = unsafe { *l };
    if !cur.is_null() {
        unsafe {
            libc::pthread_rwlock_destroy(cur);
            drop(Box::from_raw(cur));
            *l = std::ptr::null_mut();
        }
    }
    0
}

/// `pthread_rwlock_rdlock`.
#[nid("pthread_rwlock_rdlock")]
pub unsafe extern "C" fn pthread_rwlock_rdlock(l: *mut *mut libc::pthread_rwlock_t) -> i32 {
    match unsafe { rwlock_of(l) } {
        Some(h) => from_host(unsafe { libc::pthread_rwlock_rdlock(h) }),
        None => 22,
    }
}

/// `pthread_rwlock_wrlock`.
#[nid("pthread_rwlock_wrlock")]
pub unsafe extern "C" fn pthread_rwlock_wrlock(l: *mut *mut libc::pthread_rwlock_t) -> i32 {
    match unsafe { rwlock_of(l) } {
        Some(h) => from_host(unsafe { libc::pthread_rwlock_wrlock(h) }),
        None => 22,
    }
}

/// `pthread_rwlock_tryrdlock`.
#[nid("pthread_rwlock_tryrdlock")]
pub unsafe extern "C" fn pthread_rwlock_tryrdlock(l: *mut *mut libc::pthread_rwlock_t) -> i32 {
    match unsafe { rwlock_of(l) } {
        Some(h) => from_host(unsafe { libc::pthread_rwlock_tryrdlock(h) }),
        None => 22,
    }
}

/// `pthread_rwlock_trywrlock`.
#[nid("pthread_rwlock_trywrlock")]
pub unsafe extern "C" fn pthread_rwlock_trywrlock(l: *mut *mut libc::pthread_rwlock_t) -> i32 {
    match unsafe { rwlock_of(l) } {
        Some(h) => from_host(unsafe { libc::pthread_rwlock_trywrlock(h) }),
        None => 22,
    }
}

/// `pthread_rwlock_unlock`.
#[nid("pthread_rwlock_unlock")]
pub unsafe extern "C" fn pthread_rwlock_unlock(l: *mut *mut libc::pthread_rwlock_t) -> i32 {
    match unsafe { rwlock_of(l) } {
        Some(h) => from_host(unsafe { libc::pthread_rwlock_unlock(h) }),
        None => 22,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_initialisers_are_allocated_on_first_use() {
        let mut m: *mut libc::pthread_mutex_t = std::ptr::null_mut();
        unsafe {
            assert_eq!(pthread_mutex_lock(&mut m), 0);
            assert!(!m.is_null());
            // ERRORCHECK is FreeBSD's default: relocking is EDEADLK (11 on FreeBSD).
            assert_eq!(pthread_mutex_lock(&mut m), 11);
            assert_eq!(pthread_mutex_trylock(&mut m), 16); // EBUSY
            // Another thread may neither unlock it (EPERM) nor take it (EBUSY).
            let addr = &mut m as *mut _ as usize;
            let other = std::thread::spawn(move || {
                let p = addr as *mut *mut libc::pthread_mutex_t;
                (pthread_mutex_unlock(p), pthread_mutex_trylock(p))
            });
            assert_eq!(other.join().unwrap(), (1, 16));
            assert_eq!(pthread_mutex_unlock(&mut m), 0);
            assert_eq!(pthread_mutex_unlock(&mut m), 1); // not held
            assert_eq!(pthread_mutex_destroy(&mut m), 0);
        }
        let mut l: *mut libc::pthread_rwlock_t = std::ptr::null_mut();
        unsafe {
            assert_eq!(pthread_rwlock_rdlock(&mut l), 0);
            assert_eq!(pthread_rwlock_rdlock(&mut l), 0);
            assert_eq!(pthread_rwlock_trywrlock(&mut l), 16); // EBUSY
            assert_eq!(pthread_rwlock_unlock(&mut l), 0);
            assert_eq!(pthread_rwlock_unlock(&mut l), 0);
            assert_eq!(pthread_rwlock_wrlock(&mut l), 0);
            assert_eq!(pthread_rwlock_unlock(&mut l), 0);
            assert_eq!(pthread_rwlock_destroy(&mut l), 0);
        }
    }
}
