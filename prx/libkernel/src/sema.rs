//! Semaphores: the SCE kernel semaphores (`sceKernel*Sema`, objects named by an id) and
//! POSIX unnamed semaphores (`sem_*`, state inside the guest's `sem_t`).
//!
//! SCE semaphores keep a queue of waiting threads, each waiting for `need` units; a signal
//! grants waiters in queue order, skipping those that need more than is available.
//! Priorities are not modelled (the host scheduler decides), so the PRIO attribute queues
//! like FIFO. A waiter sleeps on its own futex word, which holds its outcome.
//!
//! POSIX semaphores use FreeBSD 9's 16-byte `sem_t` (`_magic`, `_has_waiters`, `_count`,
//! `_flags`); `_has_waiters` counts the sleeping threads here, `_count` is the futex word.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use aps5_prx_macros::nid;

use crate::sce_error;
use crate::sync::futex::{self, Deadline, Wake};

const ESRCH: i32 = 3;
const EACCES: i32 = 13;
const EBUSY: i32 = 16;
const EINVAL: i32 = 22;
const EAGAIN: i32 = 35;
const ETIMEDOUT: i32 = 60;
const ENAMETOOLONG: i32 = 63;
const EOVERFLOW: i32 = 84;
const ECANCELED: i32 = 85;

/// How a queued wait ended; the waiter's futex word.
pub(crate) mod outcome {
    /// Still waiting.
    pub const WAITING: u32 = 0;
    /// Got what it waited for.
    pub const GRANTED: u32 = 1;
    /// Cancelled (`sceKernelCancel*`): ECANCELED.
    pub const CANCELLED: u32 = 2;
    /// The object was deleted: EACCES.
    pub const DELETED: u32 = 3;
    /// The deadline passed: ETIMEDOUT.
    pub const TIMED_OUT: u32 = 4;
}
use outcome::*;

/// The SCE error code of a finished wait.
pub(crate) fn outcome_code(o: u32) -> i32 {
    match o {
        GRANTED => 0,
        CANCELLED => sce_error(ECANCELED),
        DELETED => sce_error(EACCES),
        _ => sce_error(ETIMEDOUT),
    }
}

/// A table of kernel objects named by small positive ids (never reused while the process
/// lives, so a stale id is ESRCH rather than someone else's object).
pub(crate) struct Table<T> {
    inner: Mutex<TableInner<T>>,
}

struct TableInner<T> {
    next: u32,
    map: BTreeMap<u32, Arc<T>>,
}

impl<T> Table<T> {
    pub(crate) const fn new() -> Self {
        Table {
            inner: Mutex::new(TableInner {
                next: 1,
                map: BTreeMap::new(),
            }),
        }
    }

    pub(crate) fn insert(&self, v: T) -> u32 {
        let mut t = lock(&self.inner);
        let id = t.next;
        t.next += 1;
        t.map.insert(id, Arc::new(v));
        id
    }

    pub(crate) fn get(&self, id: u64) -> Option<Arc<T>> {
        let id = u32::try_from(id).ok()?;
        lock(&self.inner).map.get(&id).cloned()
    }

    pub(crate) fn remove(&self, id: u64) -> Option<Arc<T>> {
        let id = u32::try_from(id).ok()?;
        lock(&self.inner).map.remove(&id)
    }
}

/// Object names are at most 31 bytes (32 with the NUL), as in the SCE kernel.
pub(crate) fn check_name(name: *const libc::c_char) -> Result<(), i32> {
    if name.is_null() {
        return Err(sce_error(EINVAL));
    }
    if unsafe { libc::strnlen(name, 32) } >= 32 {
        return Err(sce_error(ENAMETOOLONG));
    }
    Ok(())
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One thread waiting on an SCE semaphore.
struct SemaWaiter {
    need: i32,
    /// An [`outcome`] value; the futex word the thread sleeps on.
    state: AtomicU32,
}

struct SemaState {
    count: i32,
    queue: VecDeque<Arc<SemaWaiter>>,
}

/// An SCE kernel semaphore.
pub struct Sema {
    state: Mutex<SemaState>,
    init: i32,
    max: i32,
}

static SEMAS: Table<Sema> = Table::new();

/// Ends a queued wait with `o` and wakes its thread.
fn finish(w: &SemaWaiter, o: u32) {
    w.state.store(o, Ordering::Release);
    futex::wake(&w.state, 1, false);
}

impl Sema {
    /// Grants queued waiters, in order, while units last.
    fn grant(&self, st: &mut SemaState) {
        let mut i = 0;
        while i < st.queue.len() && st.count > 0 {
            if st.queue[i].need <= st.count {
                let w = st.queue.remove(i).expect("index checked");
                st.count -= w.need;
                finish(&w, GRANTED);
            } else {
                i += 1;
            }
        }
    }

    fn wait(&self, need: i32, timeout: *mut u32, block: bool) -> i32 {
        if need < 1 || need > self.max {
            return sce_error(EINVAL);
        }
        let me;
        {
            let mut st = lock(&self.state);
            if st.count >= need {
                st.count -= need;
                return 0;
            }
            if !block {
                return sce_error(EBUSY);
            }
            if !timeout.is_null() && unsafe { *timeout } == 0 {
                return sce_error(ETIMEDOUT);
            }
            me = Arc::new(SemaWaiter {
                need,
                state: AtomicU32::new(WAITING),
            });
            st.queue.push_back(me.clone());
        }
        let o = sleep_queued(&me.state, timeout, || {
            let mut st = lock(&self.state);
            if me.state.load(Ordering::Acquire) == WAITING {
                st.queue.retain(|w| !Arc::ptr_eq(w, &me));
                me.state.store(TIMED_OUT, Ordering::Release);
            }
        });
        outcome_code(o)
    }
}

/// Runs its closure when dropped, so a wait left by unwinding (thread cancellation) still
/// cleans up.
struct OnDrop<F: FnOnce()>(Option<F>);

impl<F: FnOnce()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// The blocking half of every queued wait (semaphores, event flags): sleeps until the
/// waiter's `state` leaves WAITING or the `timeout` (µs, in/out, may be null) runs out.
/// `dequeue` always runs afterwards, also when cancellation unwinds; under the object's
/// lock it must take a still-WAITING waiter out of its queue and mark it TIMED_OUT (a grant
/// racing the deadline wins). Writes the time left back to `timeout` (0 unless granted)
/// and returns the settled outcome.
pub(crate) fn sleep_queued(state: &AtomicU32, timeout: *mut u32, dequeue: impl FnOnce()) -> u32 {
    let deadline = (!timeout.is_null()).then(|| Deadline::after_us(u64::from(unsafe { *timeout })));
    {
        let _dequeue = OnDrop(Some(dequeue));
        sleep_until_done(state, deadline.as_ref());
    }
    let o = state.load(Ordering::Acquire);
    if !timeout.is_null() {
        let left = match (o, deadline) {
            (GRANTED, Some(d)) => d.remaining_us().min(u64::from(u32::MAX)) as u32,
            _ => 0,
        };
        unsafe { *timeout = left };
    }
    o
}

/// Sleeps (a cancellation point) until `state` leaves WAITING or the deadline passes;
/// returns the outcome, or WAITING on timeout (the caller settles it under its lock).
fn sleep_until_done(state: &AtomicU32, deadline: Option<&Deadline>) -> u32 {
    loop {
        let o = state.load(Ordering::Acquire);
        if o != WAITING {
            return o;
        }
        if futex::wait_cancellable(state, WAITING, deadline, false) == Wake::TimedOut {
            let o = state.load(Ordering::Acquire);
            return o;
        }
    }
}

/// `sceKernelCreateSema(out id, name, attr, init, max, opt)`: attr FIFO 1 or PRIO 2 (0 is
/// accepted as FIFO); EINVAL for a bad count or attribute.
#[nid("sceKernelCreateSema")]
pub unsafe extern "C" fn sce_kernel_create_sema(
    out: *mut i32,
    name: *const libc::c_char,
    attr: u32,
    init: i32,
    max: i32,
    _opt: *const u8,
) -> i32 {
    if out.is_null() || attr > 2 || init < 0 || max <= 0 || init > max {
        return sce_error(EINVAL);
    }
    if let Err(e) = check_name(name) {
        return e;
    }
    let id = SEMAS.insert(Sema {
        state: Mutex::new(SemaState {
            count: init,
            queue: VecDeque::new(),
        }),
        init,
        max,
    });
    unsafe { *out = id as i32 };
    0
}

/// The id argument: the low 32 bits (the guest type is an `int`).
fn sema(id: u64) -> Option<Arc<Sema>> {
    SEMAS.get(id & 0xFFFF_FFFF)
}

/// `sceKernelDeleteSema`: threads waiting on it return EACCES.
#[nid("sceKernelDeleteSema")]
pub extern "C" fn sce_kernel_delete_sema(id: u64) -> i32 {
    let Some(s) = SEMAS.remove(id & 0xFFFF_FFFF) else {
        return sce_error(ESRCH);
    };
    let mut st = lock(&s.state);
    for w in st.queue.drain(..) {
        finish(&w, DELETED);
    }
    0
}

/// `sceKernelWaitSema(id, need, timeout_us)`: a cancellation point. `timeout_us` (may be
/// NULL: no limit) gets the time left written back; 0 and ETIMEDOUT when it runs out.
#[nid("sceKernelWaitSema")]
pub unsafe extern "C-unwind" fn sce_kernel_wait_sema(id: u64, need: i32, timeout: *mut u32) -> i32 {
    match sema(id) {
        Some(s) => s.wait(need, timeout, true),
        None => sce_error(ESRCH),
    }
}

/// `sceKernelPollSema(id, need)`: EBUSY when fewer than `need` units are available.
#[nid("sceKernelPollSema")]
pub extern "C" fn sce_kernel_poll_sema(id: u64, need: i32) -> i32 {
    match sema(id) {
        Some(s) => s.wait(need, std::ptr::null_mut(), false),
        None => sce_error(ESRCH),
    }
}

/// `sceKernelSignalSema(id, count)`: EINVAL (nothing changes) if the count would pass the
/// maximum.
#[nid("sceKernelSignalSema")]
pub extern "C" fn sce_kernel_signal_sema(id: u64, n: i32) -> i32 {
    let Some(s) = sema(id) else {
        return sce_error(ESRCH);
    };
    let mut st = lock(&s.state);
    if n < 0 || i64::from(st.count) + i64::from(n) > i64::from(s.max) {
        return sce_error(EINVAL);
    }
    st.count += n;
    s.grant(&mut st);
    0
}

/// `sceKernelCancelSema(id, setCount, numWaitThreads)`: every waiter returns ECANCELED; the
/// count becomes `setCount` (the initial count if negative).
#[nid("sceKernelCancelSema")]
pub unsafe extern "C" fn sce_kernel_cancel_sema(id: u64, set: i32, num: *mut i32) -> i32 {
    let Some(s) = sema(id) else {
        return sce_error(ESRCH);
    };
    if set > s.max {
        return sce_error(EINVAL);
    }
    let mut st = lock(&s.state);
    if !num.is_null() {
        unsafe { *num = st.queue.len() as i32 };
    }
    for w in st.queue.drain(..) {
        finish(&w, CANCELLED);
    }
    st.count = if set < 0 { s.init } else { set };
    0
}

// ---- POSIX semaphores ----------------------------------------------------------------

/// FreeBSD 9 `SEM_MAGIC` ("sem1").
const SEM_MAGIC: u32 = 0x7365_6d31;
/// FreeBSD `SEM_VALUE_MAX` (`INT_MAX`).
const SEM_VALUE_MAX: u32 = 0x7FFF_FFFF;
/// `_flags` bit: shared between processes (FreeBSD `USYNC_PROCESS`).
const USYNC_PROCESS: u32 = 1;

/// FreeBSD 9's `sem_t` (16 bytes, in guest memory).
#[repr(C)]
pub struct FbSem {
    magic: AtomicU32,
    waiters: AtomicU32,
    count: AtomicU32,
    flags: AtomicU32,
}

fn fail(e: i32) -> i32 {
    crate::errno::set(e);
    -1
}

/// The guest semaphore, or EINVAL (set in errno) if it was never initialised.
unsafe fn sem<'a>(s: *mut FbSem) -> Result<&'a FbSem, i32> {
    if s.is_null() {
        return Err(fail(EINVAL));
    }
    let s = unsafe { &*s };
    if s.magic.load(Ordering::Relaxed) != SEM_MAGIC {
        return Err(fail(EINVAL));
    }
    Ok(s)
}

impl FbSem {
    fn shared(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & USYNC_PROCESS != 0
    }

    fn try_take(&self) -> bool {
        let mut c = self.count.load(Ordering::Relaxed);
        while c > 0 {
            match self
                .count
                .compare_exchange_weak(c, c - 1, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => c = now,
            }
        }
        false
    }

    /// sem_wait / sem_timedwait: a cancellation point while it sleeps.
    fn wait(&self, abstime: Option<*const libc::timespec>) -> i32 {
        let mut deadline = None;
        loop {
            if self.try_take() {
                return 0;
            }
            if let Some(t) = abstime {
                // The timeout is validated only when the call would block (POSIX).
                if deadline.is_none() {
                    if t.is_null() {
                        return fail(EINVAL);
                    }
                    match Deadline::realtime(unsafe { &*t }) {
                        Some(d) => deadline = Some(d),
                        None => return fail(EINVAL),
                    }
                }
            }
            let _sleeper = Sleeper::new(&self.waiters);
            if futex::wait_cancellable(&self.count, 0, deadline.as_ref(), self.shared())
                == Wake::TimedOut
                && !self.try_take()
            {
                return fail(ETIMEDOUT);
            }
        }
    }
}

/// Counts a sleeping thread in `_has_waiters` for as long as it sleeps (also when it is
/// unwound by cancellation).
struct Sleeper<'a>(&'a AtomicU32);

impl<'a> Sleeper<'a> {
    fn new(w: &'a AtomicU32) -> Self {
        w.fetch_add(1, Ordering::SeqCst);
        Sleeper(w)
    }
}

impl Drop for Sleeper<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `sem_init(sem, pshared, value)`: EINVAL above `SEM_VALUE_MAX`.
#[nid("sem_init")]
pub unsafe extern "C" fn sem_init(s: *mut FbSem, pshared: i32, value: u32) -> i32 {
    if s.is_null() || value > SEM_VALUE_MAX {
        return fail(EINVAL);
    }
    let s = unsafe { &*s };
    s.waiters.store(0, Ordering::Relaxed);
    s.count.store(value, Ordering::Relaxed);
    s.flags.store(
        if pshared != 0 { USYNC_PROCESS } else { 0 },
        Ordering::Relaxed,
    );
    s.magic.store(SEM_MAGIC, Ordering::Release);
    0
}

/// `sem_destroy`: EBUSY while threads sleep on it.
#[nid("sem_destroy")]
pub unsafe extern "C" fn sem_destroy(s: *mut FbSem) -> i32 {
    match unsafe { sem(s) } {
        Ok(s) if s.waiters.load(Ordering::SeqCst) != 0 => fail(EBUSY),
        Ok(s) => {
            s.magic.store(0, Ordering::Relaxed);
            0
        }
        Err(e) => e,
    }
}

/// `sem_wait` (a cancellation point).
#[nid("sem_wait")]
pub unsafe extern "C-unwind" fn sem_wait(s: *mut FbSem) -> i32 {
    match unsafe { sem(s) } {
        Ok(s) => s.wait(None),
        Err(e) => e,
    }
}

/// `sem_timedwait` (absolute CLOCK_REALTIME deadline; a cancellation point).
#[nid("sem_timedwait")]
pub unsafe extern "C-unwind" fn sem_timedwait(
    s: *mut FbSem,
    abstime: *const libc::timespec,
) -> i32 {
    match unsafe { sem(s) } {
        Ok(s) => s.wait(Some(abstime)),
        Err(e) => e,
    }
}

/// `sem_trywait`: EAGAIN when the count is 0.
#[nid("sem_trywait")]
pub unsafe extern "C" fn sem_trywait(s: *mut FbSem) -> i32 {
    match unsafe { sem(s) } {
        Ok(s) if s.try_take() => 0,
        Ok(_) => fail(EAGAIN),
        Err(e) => e,
    }
}

/// `sem_post`: EOVERFLOW at `SEM_VALUE_MAX`.
#[nid("sem_post")]
pub unsafe extern "C" fn sem_post(s: *mut FbSem) -> i32 {
    let s = match unsafe { sem(s) } {
        Ok(s) => s,
        Err(e) => return e,
    };
    let mut c = s.count.load(Ordering::Relaxed);
    loop {
        if c >= SEM_VALUE_MAX {
            return fail(EOVERFLOW);
        }
        match s
            .count
            .compare_exchange_weak(c, c + 1, Ordering::SeqCst, Ordering::Relaxed)
        {
            Ok(_) => break,
            Err(now) => c = now,
        }
    }
    // Paired with the sleeper's increment before its futex wait (both SeqCst): either we
    // see it, or its wait sees the new count and does not sleep.
    if s.waiters.load(Ordering::SeqCst) != 0 {
        futex::wake(&s.count, 1, s.shared());
    }
    0
}

/// `sem_getvalue`.
#[nid("sem_getvalue")]
pub unsafe extern "C" fn sem_getvalue(s: *mut FbSem, out: *mut i32) -> i32 {
    match unsafe { sem(s) } {
        Ok(_) if out.is_null() => fail(EINVAL),
        Ok(s) => {
            unsafe { *out = s.count.load(Ordering::Relaxed) as i32 };
            0
        }
        Err(e) => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sce_semaphore_codes() {
        let mut id = 0;
        let name = c"t".as_ptr();
        unsafe {
            assert_eq!(
                sce_kernel_create_sema(&mut id, name, 1, 3, 2, std::ptr::null()),
                sce_error(22)
            );
            assert_eq!(
                sce_kernel_create_sema(&mut id, name, 1, 1, 4, std::ptr::null()),
                0
            );
        }
        let id = id as u64;
        assert_eq!(sce_kernel_poll_sema(id, 2), sce_error(EBUSY));
        assert_eq!(sce_kernel_poll_sema(id, 1), 0);
        assert_eq!(sce_kernel_signal_sema(id, 5), sce_error(EINVAL));
        let mut t = 1500u32;
        assert_eq!(
            unsafe { sce_kernel_wait_sema(id, 1, &mut t) },
            sce_error(ETIMEDOUT)
        );
        assert_eq!(t, 0);
        assert_eq!(sce_kernel_signal_sema(id, 4), 0);
        let mut t = 1_000_000u32;
        assert_eq!(unsafe { sce_kernel_wait_sema(id, 4, &mut t) }, 0);
        assert!(t > 0 && t <= 1_000_000);
        // A waiter needing 2 is granted when two units arrive, then deletion wakes the next.
        let w = std::thread::spawn(move || unsafe {
            sce_kernel_wait_sema(id, 2, std::ptr::null_mut())
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(sce_kernel_signal_sema(id, 1), 0);
        assert_eq!(sce_kernel_signal_sema(id, 1), 0);
        assert_eq!(w.join().unwrap(), 0);
        let w = std::thread::spawn(move || unsafe {
            sce_kernel_wait_sema(id, 1, std::ptr::null_mut())
        });
        // Deletion must find it queued (else its wait would see no semaphore: ESRCH).
        while lock(&sema(id).unwrap().state).queue.is_empty() {
            std::thread::yield_now();
        }
        assert_eq!(sce_kernel_delete_sema(id), 0);
        assert_eq!(w.join().unwrap(), sce_error(EACCES));
        assert_eq!(sce_kernel_signal_sema(id, 1), sce_error(ESRCH));
    }

    #[test]
    fn posix_semaphore() {
        let mut s = FbSem {
            magic: AtomicU32::new(0),
            waiters: AtomicU32::new(0),
            count: AtomicU32::new(0),
            flags: AtomicU32::new(0),
        };
        assert_eq!(std::mem::size_of::<FbSem>(), 16);
        unsafe {
            assert_eq!(sem_wait(&mut s), -1); // not initialised: EINVAL
            assert_eq!(sem_init(&mut s, 0, 1), 0);
            assert_eq!(sem_trywait(&mut s), 0);
            assert_eq!(sem_trywait(&mut s), -1);
            assert_eq!(*crate::errno::error(), EAGAIN);
            let addr = &mut s as *mut FbSem as usize;
            let t = std::thread::spawn(move || sem_wait(addr as *mut FbSem));
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert_eq!(sem_post(&mut s), 0);
            assert_eq!(t.join().unwrap(), 0);
            let mut v = -1;
            assert_eq!(sem_getvalue(&mut s, &mut v), 0);
            assert_eq!(v, 0);
            let past = libc::timespec {
                tv_sec: 1,
                tv_nsec: 0,
            };
            assert_eq!(sem_timedwait(&mut s, &past), -1);
            assert_eq!(*crate::errno::error(), ETIMEDOUT);
            assert_eq!(sem_destroy(&mut s), 0);
            assert_eq!(sem_post(&mut s), -1);
        }
    }
}
