//! Mutexes and condition variables. On FreeBSD (and so the PS4/PS5) `pthread_mutex_t` and
//! `pthread_cond_t` are pointers to objects the library allocates; a zero value (the static
//! initialiser) is allocated on first use. Here they point at [`GuestMutex`] and
//! [`GuestCond`]: a futex word each, the mutex owner being the holder's host `pthread_self`
//! (read from `%fs:0x10`, glibc's thread pointer, so it costs one load). The lock fast path
//! is one compare-and-swap plus a store of the owner, unlock one swap: no call into the host
//! library.
//!
//! The futex helpers shared with the other blocking objects (`sema.rs`, `event_flag.rs`)
//! live here too, among them [`futex::wait_cancellable`], the way every wait of this library
//! becomes a cancellation point (see `thread.rs`, "Cancellation").

use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

use aps5_prx_macros::nid;

use crate::errno::from_host;
use crate::sce_error;

/// Linux futex calls and deadlines.
pub(crate) mod futex {
    use std::sync::atomic::AtomicU32;

    const FUTEX_WAKE: i32 = 1;
    const FUTEX_WAIT_BITSET: i32 = 9;
    const FUTEX_PRIVATE_FLAG: i32 = 128;
    const FUTEX_CLOCK_REALTIME: i32 = 256;

    /// An absolute deadline.
    #[derive(Clone, Copy)]
    pub(crate) enum Deadline {
        /// `CLOCK_REALTIME` (POSIX `abstime` arguments).
        Realtime(libc::timespec),
        /// `CLOCK_MONOTONIC` (SCE relative timeouts, which must not jump with the clock).
        Monotonic(libc::timespec),
    }

    fn now(clock: libc::clockid_t) -> libc::timespec {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        unsafe { libc::clock_gettime(clock, &mut ts) };
        ts
    }

    fn ns(ts: &libc::timespec) -> i128 {
        i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
    }

    impl Deadline {
        /// `us` microseconds from now on the monotonic clock.
        pub(crate) fn after_us(us: u64) -> Deadline {
            let t = ns(&now(libc::CLOCK_MONOTONIC)) + i128::from(us) * 1000;
            Deadline::Monotonic(libc::timespec {
                tv_sec: (t / 1_000_000_000) as libc::time_t,
                tv_nsec: (t % 1_000_000_000) as libc::c_long,
            })
        }

        /// A guest `abstime` (FreeBSD and Linux `timespec` agree); None if `tv_nsec` is out
        /// of range (EINVAL for the caller).
        pub(crate) fn realtime(ts: &libc::timespec) -> Option<Deadline> {
            (0..1_000_000_000)
                .contains(&ts.tv_nsec)
                .then_some(Deadline::Realtime(*ts))
        }

        /// Microseconds left (0 once passed), rounded down.
        pub(crate) fn remaining_us(&self) -> u64 {
            let (clock, ts) = match self {
                Deadline::Realtime(t) => (libc::CLOCK_REALTIME, t),
                Deadline::Monotonic(t) => (libc::CLOCK_MONOTONIC, t),
            };
            let left = ns(ts) - ns(&now(clock));
            if left <= 0 { 0 } else { (left / 1000) as u64 }
        }

        fn op_and_time(deadline: Option<&Deadline>, shared: bool) -> (i32, *const libc::timespec) {
            let private = if shared { 0 } else { FUTEX_PRIVATE_FLAG };
            match deadline {
                None => (FUTEX_WAIT_BITSET | private, std::ptr::null()),
                Some(Deadline::Realtime(t)) => {
                    (FUTEX_WAIT_BITSET | private | FUTEX_CLOCK_REALTIME, t)
                }
                Some(Deadline::Monotonic(t)) => (FUTEX_WAIT_BITSET | private, t),
            }
        }
    }

    /// How a wait ended. Woken also covers "the word had already changed" and signals: the
    /// caller always rechecks its condition.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Wake {
        /// Woken, interrupted, or the value differed.
        Woken,
        /// The deadline passed.
        TimedOut,
    }

    fn result(r: i64) -> Wake {
        if r == -i64::from(libc::ETIMEDOUT) {
            Wake::TimedOut
        } else {
            Wake::Woken
        }
    }

    /// Blocks while `*word == expected`, until woken or `deadline`. Not a cancellation point.
    pub(crate) fn wait(
        word: &AtomicU32,
        expected: u32,
        deadline: Option<&Deadline>,
        shared: bool,
    ) -> Wake {
        let (op, ts) = Deadline::op_and_time(deadline, shared);
        let r = unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                op,
                expected,
                ts,
                std::ptr::null::<u32>(),
                u32::MAX,
            )
        };
        if r == -1 {
            result(-i64::from(
                std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
            ))
        } else {
            Wake::Woken
        }
    }

    unsafe extern "C-unwind" {
        /// The assembly routine below: FUTEX_WAIT_BITSET with the host cancel type switched
        /// to asynchronous around the system call only; returns 0 or -errno.
        fn aps5_futex_wait_cancel(
            word: *const u32,
            op: i32,
            expected: u32,
            ts: *const libc::timespec,
        ) -> i64;
        #[link_name = "pthread_setcanceltype"]
        fn host_setcanceltype(kind: i32, old: *mut i32) -> i32;
    }

    // Cancellation of a blocked thread is acted on by the host (glibc) machinery: with the
    // cancel type asynchronous, `pthread_cancel`'s signal unwinds the thread out of the
    // system call. The asynchronous window must hold no Rust code: a Rust frame interrupted
    // between calls has no unwind table entry and would abort the process. So the switch,
    // the system call and the switch back are this one routine, with call-frame information
    // and no personality; the unwinder steps through it into the Rust caller, whose landing
    // pads then run (re-taking a condvar's mutex, leaving a wait queue).
    std::arch::global_asm!(
        ".pushsection .text.aps5_futex_wait_cancel,\"ax\",@progbits",
        ".p2align 4",
        ".globl aps5_futex_wait_cancel",
        ".hidden aps5_futex_wait_cancel",
        ".type aps5_futex_wait_cancel,@function",
        "aps5_futex_wait_cancel:",
        ".cfi_startproc",
        "push rbx",
        ".cfi_adjust_cfa_offset 8",
        ".cfi_offset rbx, -16",
        "push r12",
        ".cfi_adjust_cfa_offset 8",
        ".cfi_offset r12, -24",
        "push r13",
        ".cfi_adjust_cfa_offset 8",
        ".cfi_offset r13, -32",
        "push r14",
        ".cfi_adjust_cfa_offset 8",
        ".cfi_offset r14, -40",
        "sub rsp, 8",
        ".cfi_adjust_cfa_offset 8",
        "mov rbx, rdi",
        "mov r12d, esi",
        "mov r13d, edx",
        "mov r14, rcx",
        // glibc PTHREAD_CANCEL_ASYNCHRONOUS; the old type goes to [rsp].
        "mov edi, 1",
        "mov rsi, rsp",
        "call {setcanceltype}@PLT",
        "mov rdi, rbx",
        "mov esi, r12d",
        "mov edx, r13d",
        "mov r10, r14",
        "xor r8d, r8d",
        "mov r9d, -1",
        "mov eax, 202",
        "syscall",
        "mov rbx, rax",
        "mov edi, dword ptr [rsp]",
        "lea rsi, [rsp + 4]",
        "call {setcanceltype}@PLT",
        "mov rax, rbx",
        "add rsp, 8",
        ".cfi_adjust_cfa_offset -8",
        "pop r14",
        ".cfi_adjust_cfa_offset -8",
        ".cfi_restore r14",
        "pop r13",
        ".cfi_adjust_cfa_offset -8",
        ".cfi_restore r13",
        "pop r12",
        ".cfi_adjust_cfa_offset -8",
        ".cfi_restore r12",
        "pop rbx",
        ".cfi_adjust_cfa_offset -8",
        ".cfi_restore rbx",
        "ret",
        ".cfi_endproc",
        ".size aps5_futex_wait_cancel, .-aps5_futex_wait_cancel",
        ".popsection",
        setcanceltype = sym host_setcanceltype,
    );

    /// [`wait`] as a cancellation point: a pending or arriving `pthread_cancel` (with
    /// cancellation enabled) unwinds the calling thread from here.
    pub(crate) fn wait_cancellable(
        word: &AtomicU32,
        expected: u32,
        deadline: Option<&Deadline>,
        shared: bool,
    ) -> Wake {
        let (op, ts) = Deadline::op_and_time(deadline, shared);
        result(unsafe { aps5_futex_wait_cancel(word.as_ptr(), op, expected, ts) })
    }

    /// Wakes up to `n` waiters of `word`.
    pub(crate) fn wake(word: &AtomicU32, n: i32, shared: bool) {
        let private = if shared { 0 } else { FUTEX_PRIVATE_FLAG };
        unsafe {
            libc::syscall(libc::SYS_futex, word.as_ptr(), FUTEX_WAKE | private, n);
        }
    }
}

use futex::{Deadline, Wake};

/// What a guest `pthread_mutexattr_t` points at: the FreeBSD mutex type.
#[derive(Debug, Clone, Copy)]
pub struct MutexAttr {
    /// ERRORCHECK 1, RECURSIVE 2, NORMAL 3, ADAPTIVE 4 (FreeBSD and SCE values).
    pub kind: i32,
}

/// FreeBSD's default mutex type is ERRORCHECK.
const DEFAULT_KIND: i32 = 1;
const RECURSIVE: u32 = 2;
const NORMAL: u32 = 3;
const ADAPTIVE: u32 = 4;

const EPERM: i32 = 1;
const EDEADLK: i32 = 11;
const EBUSY: i32 = 16;
const EINVAL: i32 = 22;
const EAGAIN: i32 = 35;
const ETIMEDOUT: i32 = 60;

/// The calling thread's identity: glibc's thread pointer (`pthread_self`), which is the
/// word at `%fs:0x10` on x86-64 (`tcbhead_t.self`), unique among live threads.
#[inline(always)]
pub(crate) fn me() -> u64 {
    let v: u64;
    unsafe {
        std::arch::asm!("mov {}, qword ptr fs:[0x10]", out(reg) v,
            options(nostack, readonly, preserves_flags, pure));
    }
    v
}

unsafe extern "C" {
    /// glibc (2.32+): non-zero until the process first creates a thread; never set again.
    static __libc_single_threaded: u8;
}

/// True while the process has only ever had one thread. Then nobody else can hold, wait
/// for or look at a mutex, so lock and unlock need no locked instructions: glibc's own
/// lock does the same (it skips the `lock` prefix while single-threaded), and a locked
/// instruction costs more than the rest of a lock+unlock.
#[inline(always)]
fn single_threaded() -> bool {
    // Written only by this thread (in `pthread_create`), so a plain load is exact.
    unsafe { std::ptr::read_volatile(&raw const __libc_single_threaded) != 0 }
}

/// What a guest mutex word points at.
#[repr(C)]
pub struct GuestMutex {
    /// Futex word: 0 free, 1 locked, 2 locked with (possible) waiters.
    state: AtomicU32,
    /// The FreeBSD type (1..=4).
    kind: u32,
    /// The holder's [`me`], 0 when free. Only the holder stores its own id, so a thread
    /// reading its own id here really holds the mutex (every type: FreeBSD checks the owner
    /// on unlock even for NORMAL mutexes).
    owner: AtomicU64,
    /// Recursion depth of a RECURSIVE mutex; only touched by the holder.
    depth: AtomicU32,
}

fn new_mutex(kind: i32) -> *mut GuestMutex {
    Box::into_raw(Box::new(GuestMutex {
        state: AtomicU32::new(0),
        kind: kind as u32,
        owner: AtomicU64::new(0),
        depth: AtomicU32::new(0),
    }))
}

impl GuestMutex {
    /// After the state word was taken: record the holder.
    #[inline(always)]
    fn took(&self, me: u64) {
        self.owner.store(me, Ordering::Relaxed);
        if self.kind == RECURSIVE {
            self.depth.store(1, Ordering::Relaxed);
        }
    }

    /// Lock, fast path for an unheld mutex (one compare-and-swap); true when taken.
    fn try_take(&self, me: u64) -> bool {
        let ok = self
            .state
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
        if ok {
            self.took(me);
        }
        ok
    }

    /// Lock, slow path: relocking rules, a short spin, then sleep on the futex word.
    /// `try_only`: trylock (never blocks).
    #[cold]
    fn lock_slow(&self, me: u64, deadline: Option<&Deadline>, try_only: bool) -> i32 {
        if self.owner.load(Ordering::Relaxed) == me {
            return match self.kind {
                RECURSIVE => {
                    let d = self.depth.load(Ordering::Relaxed);
                    if d == u32::MAX {
                        return EAGAIN;
                    }
                    self.depth.store(d + 1, Ordering::Relaxed);
                    0
                }
                _ if try_only => EBUSY,
                // FreeBSD: a NORMAL mutex relocked by its holder deadlocks (or times out).
                NORMAL => self.self_deadlock(deadline),
                _ => EDEADLK,
            };
        }
        if try_only {
            return EBUSY;
        }
        // A short spin catches the common case of a holder about to unlock.
        let spins = if self.kind == ADAPTIVE { 2000 } else { 100 };
        for _ in 0..spins {
            if self.state.load(Ordering::Relaxed) == 0
                && self
                    .state
                    .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                self.took(me);
                return 0;
            }
            std::hint::spin_loop();
        }
        loop {
            // Marking the word contended before sleeping makes the unlocker wake someone.
            if self.state.swap(2, Ordering::Acquire) == 0 {
                self.took(me);
                return 0;
            }
            if futex::wait(&self.state, 2, deadline, false) == Wake::TimedOut {
                return ETIMEDOUT;
            }
        }
    }

    fn self_deadlock(&self, deadline: Option<&Deadline>) -> i32 {
        let never = AtomicU32::new(0);
        loop {
            if futex::wait(&never, 0, deadline, false) == Wake::TimedOut {
                return ETIMEDOUT;
            }
        }
    }

    #[inline(always)]
    fn lock(&self, deadline: Option<&Deadline>) -> i32 {
        let me = me();
        let took = if single_threaded() {
            // No other thread exists: a held mutex is held by this one (lock_slow decides).
            self.state.load(Ordering::Relaxed) == 0 && {
                self.state.store(1, Ordering::Relaxed);
                true
            }
        } else {
            self.state
                .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        };
        if took {
            self.took(me);
            return 0;
        }
        self.lock_slow(me, deadline, false)
    }

    #[inline(always)]
    fn unlock(&self) -> i32 {
        if self.owner.load(Ordering::Relaxed) != me() {
            return EPERM;
        }
        if self.kind == RECURSIVE {
            let d = self.depth.load(Ordering::Relaxed);
            if d > 1 {
                self.depth.store(d - 1, Ordering::Relaxed);
                return 0;
            }
        }
        self.owner.store(0, Ordering::Relaxed);
        if single_threaded() {
            // Nobody can be waiting.
            self.state.store(0, Ordering::Relaxed);
        } else if self.state.swap(0, Ordering::Release) == 2 {
            futex::wake(&self.state, 1, false);
        }
        0
    }

    /// Releases the mutex completely for a condvar wait; the recursion depth to restore.
    fn release_all(&self) -> u32 {
        let depth = self.depth.load(Ordering::Relaxed);
        self.owner.store(0, Ordering::Relaxed);
        if self.state.swap(0, Ordering::Release) == 2 {
            futex::wake(&self.state, 1, false);
        }
        depth
    }

    /// Re-takes the mutex after a condvar wait (never a cancellation point, no deadline).
    fn reacquire(&self, depth: u32) {
        // Contended from the start: other waiters woken by a broadcast may be queued.
        while self.state.swap(2, Ordering::Acquire) != 0 {
            futex::wait(&self.state, 2, None, false);
        }
        self.owner.store(me(), Ordering::Relaxed);
        self.depth.store(depth, Ordering::Relaxed);
    }
}

/// The guest mutex behind a guest mutex word, allocating it for static initialisers
/// (values 0..=2 are FreeBSD's static initialisers: default, adaptive, ...).
#[inline(always)]
unsafe fn mutex_of(p: *mut *mut GuestMutex) -> Option<&'static GuestMutex> {
    if p.is_null() {
        return None;
    }
    let cur = unsafe { AtomicPtr::from_ptr(p) }.load(Ordering::Acquire);
    if cur as usize > 2 {
        return Some(unsafe { &*cur });
    }
    unsafe { mutex_first_use(p, cur) }
}

/// The slow path of [`mutex_of`], kept out of line so every lock and unlock inlines the
/// fast one.
#[cold]
unsafe fn mutex_first_use(
    p: *mut *mut GuestMutex,
    cur: *mut GuestMutex,
) -> Option<&'static GuestMutex> {
    let slot = unsafe { AtomicPtr::from_ptr(p) };
    let kind = if cur as usize == 1 { 4 } else { DEFAULT_KIND };
    let fresh = new_mutex(kind);
    match slot.compare_exchange(cur, fresh, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Some(unsafe { &*fresh }),
        Err(winner) => {
            unsafe { drop(Box::from_raw(fresh)) };
            Some(unsafe { &*winner })
        }
    }
}

fn sce(r: i32) -> i32 {
    if r == 0 { 0 } else { sce_error(r) }
}

/// `pthread_mutex_init`.
#[nid("pthread_mutex_init")]
pub unsafe extern "C" fn pthread_mutex_init(
    m: *mut *mut GuestMutex,
    attr: *const *mut MutexAttr,
) -> i32 {
    if m.is_null() {
        return EINVAL;
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
    m: *mut *mut GuestMutex,
    attr: *const *mut MutexAttr,
    _name: *const u8,
) -> i32 {
    sce(unsafe { pthread_mutex_init(m, attr) })
}

/// `pthread_mutex_destroy`: EBUSY while locked.
#[nid("pthread_mutex_destroy")]
pub unsafe extern "C" fn pthread_mutex_destroy(m: *mut *mut GuestMutex) -> i32 {
    if m.is_null() {
        return EINVAL;
    }
    let cur = unsafe { *m };
    if cur as usize > 2 {
        if unsafe { &*cur }.state.load(Ordering::Relaxed) != 0 {
            return EBUSY;
        }
        unsafe { drop(Box::from_raw(cur)) };
    }
    unsafe { *m = std::ptr::null_mut() };
    0
}

/// `scePthreadMutexDestroy`.
#[nid("scePthreadMutexDestroy")]
pub unsafe extern "C" fn sce_pthread_mutex_destroy(m: *mut *mut GuestMutex) -> i32 {
    sce(unsafe { pthread_mutex_destroy(m) })
}

/// `pthread_mutex_lock`: relocking is EDEADLK (ERRORCHECK, ADAPTIVE), counted (RECURSIVE)
/// or a deadlock (NORMAL), as in FreeBSD's libthr.
#[nid("pthread_mutex_lock")]
pub unsafe extern "C" fn pthread_mutex_lock(m: *mut *mut GuestMutex) -> i32 {
    match unsafe { mutex_of(m) } {
        Some(g) => g.lock(None),
        None => EINVAL,
    }
}

/// `scePthreadMutexLock`.
#[nid("scePthreadMutexLock")]
pub unsafe extern "C" fn sce_pthread_mutex_lock(m: *mut *mut GuestMutex) -> i32 {
    sce(unsafe { pthread_mutex_lock(m) })
}

/// `pthread_mutex_trylock`: EBUSY when held (also by the caller, unless RECURSIVE).
#[nid("pthread_mutex_trylock")]
pub unsafe extern "C" fn pthread_mutex_trylock(m: *mut *mut GuestMutex) -> i32 {
    let Some(g) = (unsafe { mutex_of(m) }) else {
        return EINVAL;
    };
    let me = me();
    if g.try_take(me) {
        return 0;
    }
    g.lock_slow(me, None, true)
}

/// `scePthreadMutexTrylock`.
#[nid("scePthreadMutexTrylock")]
pub unsafe extern "C" fn sce_pthread_mutex_trylock(m: *mut *mut GuestMutex) -> i32 {
    sce(unsafe { pthread_mutex_trylock(m) })
}

/// `pthread_mutex_timedlock` (absolute CLOCK_REALTIME deadline): ETIMEDOUT when it passes.
#[nid("pthread_mutex_timedlock")]
pub unsafe extern "C" fn pthread_mutex_timedlock(
    m: *mut *mut GuestMutex,
    abstime: *const libc::timespec,
) -> i32 {
    let Some(g) = (unsafe { mutex_of(m) }) else {
        return EINVAL;
    };
    let me = me();
    if g.try_take(me) {
        return 0;
    }
    // POSIX: the timeout is only validated when the call would block.
    if abstime.is_null() {
        return EINVAL;
    }
    match Deadline::realtime(unsafe { &*abstime }) {
        Some(d) => g.lock_slow(me, Some(&d), false),
        None => EINVAL,
    }
}

/// `scePthreadMutexTimedlock(mutex, usec)`: a relative timeout in microseconds.
#[nid("scePthreadMutexTimedlock")]
pub unsafe extern "C" fn sce_pthread_mutex_timedlock(m: *mut *mut GuestMutex, usec: u32) -> i32 {
    let Some(g) = (unsafe { mutex_of(m) }) else {
        return sce_error(EINVAL);
    };
    let d = Deadline::after_us(u64::from(usec));
    sce(g.lock(Some(&d)))
}

/// `pthread_mutex_unlock`: EPERM unless the caller holds it.
#[nid("pthread_mutex_unlock")]
pub unsafe extern "C" fn pthread_mutex_unlock(m: *mut *mut GuestMutex) -> i32 {
    match unsafe { mutex_of(m) } {
        Some(g) => g.unlock(),
        None => EINVAL,
    }
}

/// `scePthreadMutexUnlock`.
#[nid("scePthreadMutexUnlock")]
pub unsafe extern "C" fn sce_pthread_mutex_unlock(m: *mut *mut GuestMutex) -> i32 {
    sce(unsafe { pthread_mutex_unlock(m) })
}

/// `pthread_mutexattr_init`.
#[nid("pthread_mutexattr_init")]
pub unsafe extern "C" fn pthread_mutexattr_init(a: *mut *mut MutexAttr) -> i32 {
    if a.is_null() {
        return EINVAL;
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
        return EINVAL;
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
        return EINVAL;
    }
    unsafe { (**a).kind = kind };
    0
}

/// `scePthreadMutexattrSettype`.
#[nid("scePthreadMutexattrSettype")]
pub unsafe extern "C" fn sce_pthread_mutexattr_settype(a: *mut *mut MutexAttr, kind: i32) -> i32 {
    sce(unsafe { pthread_mutexattr_settype(a, kind) })
}

/// `pthread_mutexattr_gettype`.
#[nid("pthread_mutexattr_gettype")]
pub unsafe extern "C" fn pthread_mutexattr_gettype(a: *const *mut MutexAttr, out: *mut i32) -> i32 {
    if a.is_null() || unsafe { (*a).is_null() } || out.is_null() {
        return EINVAL;
    }
    unsafe { *out = (**a).kind };
    0
}

/// What a guest condvar word points at: a sequence number, bumped by every signal and
/// broadcast, that waiters sleep on.
pub struct GuestCond {
    seq: AtomicU32,
}

unsafe fn cond_of(p: *mut *mut GuestCond) -> Option<&'static GuestCond> {
    if p.is_null() {
        return None;
    }
    let slot = unsafe { AtomicPtr::from_ptr(p) };
    let cur = slot.load(Ordering::Acquire);
    if !cur.is_null() {
        return Some(unsafe { &*cur });
    }
    let fresh = Box::into_raw(Box::new(GuestCond {
        seq: AtomicU32::new(0),
    }));
    match slot.compare_exchange(cur, fresh, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Some(unsafe { &*fresh }),
        Err(winner) => {
            unsafe { drop(Box::from_raw(fresh)) };
            Some(unsafe { &*winner })
        }
    }
}

/// Re-takes the mutex when a condvar wait returns or is unwound by cancellation (POSIX:
/// the mutex is held again before the first cleanup handler runs).
struct Retake<'a> {
    m: &'a GuestMutex,
    depth: u32,
}

impl Drop for Retake<'_> {
    fn drop(&mut self) {
        self.m.reacquire(self.depth);
    }
}

/// The common part of the condvar waits (a cancellation point).
fn cond_wait(c: &GuestCond, m: &GuestMutex, deadline: Option<&Deadline>) -> i32 {
    if m.owner.load(Ordering::Relaxed) != me() {
        return EPERM;
    }
    // Read under the mutex: a signal sent after we release it changes the number, so the
    // futex wait below returns at once instead of missing it.
    let seq = c.seq.load(Ordering::Relaxed);
    let _retake = Retake {
        m,
        depth: m.release_all(),
    };
    match futex::wait_cancellable(&c.seq, seq, deadline, false) {
        Wake::TimedOut => ETIMEDOUT,
        Wake::Woken => 0,
    }
}

/// `pthread_cond_init` (attributes ignored: FreeBSD's default clock is CLOCK_REALTIME, as here).
#[nid("pthread_cond_init")]
pub unsafe extern "C" fn pthread_cond_init(c: *mut *mut GuestCond, _attr: *const u8) -> i32 {
    if c.is_null() {
        return EINVAL;
    }
    unsafe {
        *c = Box::into_raw(Box::new(GuestCond {
            seq: AtomicU32::new(0),
        }))
    };
    0
}

/// `scePthreadCondInit(cond, attr, name)`.
#[nid("scePthreadCondInit")]
pub unsafe extern "C" fn sce_pthread_cond_init(
    c: *mut *mut GuestCond,
    attr: *const u8,
    _name: *const u8,
) -> i32 {
    sce(unsafe { pthread_cond_init(c, attr) })
}

/// `pthread_cond_destroy`.
#[nid("pthread_cond_destroy")]
pub unsafe extern "C" fn pthread_cond_destroy(c: *mut *mut GuestCond) -> i32 {
    if c.is_null() {
        return EINVAL;
    }
    let cur = unsafe { *c };
    if !cur.is_null() {
        unsafe {
            drop(Box::from_raw(cur));
            *c = std::ptr::null_mut();
        }
    }
    0
}

/// `scePthreadCondDestroy`.
#[nid("scePthreadCondDestroy")]
pub unsafe extern "C" fn sce_pthread_cond_destroy(c: *mut *mut GuestCond) -> i32 {
    sce(unsafe { pthread_cond_destroy(c) })
}

/// `pthread_cond_wait` (a cancellation point).
#[nid("pthread_cond_wait")]
pub unsafe extern "C-unwind" fn pthread_cond_wait(
    c: *mut *mut GuestCond,
    m: *mut *mut GuestMutex,
) -> i32 {
    match unsafe { (cond_of(c), mutex_of(m)) } {
        (Some(c), Some(m)) => cond_wait(c, m, None),
        _ => EINVAL,
    }
}

/// `scePthreadCondWait`.
#[nid("scePthreadCondWait")]
pub unsafe extern "C-unwind" fn sce_pthread_cond_wait(
    c: *mut *mut GuestCond,
    m: *mut *mut GuestMutex,
) -> i32 {
    sce(unsafe { pthread_cond_wait(c, m) })
}

/// `pthread_cond_timedwait` (absolute CLOCK_REALTIME deadline; a cancellation point).
#[nid("pthread_cond_timedwait")]
pub unsafe extern "C-unwind" fn pthread_cond_timedwait(
    c: *mut *mut GuestCond,
    m: *mut *mut GuestMutex,
    abstime: *const libc::timespec,
) -> i32 {
    if abstime.is_null() {
        return EINVAL;
    }
    let Some(d) = Deadline::realtime(unsafe { &*abstime }) else {
        return EINVAL;
    };
    match unsafe { (cond_of(c), mutex_of(m)) } {
        (Some(c), Some(m)) => cond_wait(c, m, Some(&d)),
        _ => EINVAL,
    }
}

/// `scePthreadCondTimedwait(cond, mutex, usec)`: a relative timeout in microseconds.
#[nid("scePthreadCondTimedwait")]
pub unsafe extern "C-unwind" fn sce_pthread_cond_timedwait(
    c: *mut *mut GuestCond,
    m: *mut *mut GuestMutex,
    usec: u32,
) -> i32 {
    let d = Deadline::after_us(u64::from(usec));
    sce(match unsafe { (cond_of(c), mutex_of(m)) } {
        (Some(c), Some(m)) => cond_wait(c, m, Some(&d)),
        _ => EINVAL,
    })
}

/// `pthread_cond_signal`.
#[nid("pthread_cond_signal")]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut *mut GuestCond) -> i32 {
    match unsafe { cond_of(c) } {
        Some(c) => {
            c.seq.fetch_add(1, Ordering::Release);
            futex::wake(&c.seq, 1, false);
            0
        }
        None => EINVAL,
    }
}

/// `scePthreadCondSignal`.
#[nid("scePthreadCondSignal")]
pub unsafe extern "C" fn sce_pthread_cond_signal(c: *mut *mut GuestCond) -> i32 {
    sce(unsafe { pthread_cond_signal(c) })
}

/// `pthread_cond_broadcast`.
#[nid("pthread_cond_broadcast")]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut *mut GuestCond) -> i32 {
    match unsafe { cond_of(c) } {
        Some(c) => {
            c.seq.fetch_add(1, Ordering::Release);
            futex::wake(&c.seq, i32::MAX, false);
            0
        }
        None => EINVAL,
    }
}

/// `scePthreadCondBroadcast`.
#[nid("scePthreadCondBroadcast")]
pub unsafe extern "C" fn sce_pthread_cond_broadcast(c: *mut *mut GuestCond) -> i32 {
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

/// Runs a host rwlock operation on the guest's lock (created on first use); EINVAL (22) for
/// a NULL lock, host errors as FreeBSD errnos.
unsafe fn with_rwlock(
    l: *mut *mut libc::pthread_rwlock_t,
    op: unsafe extern "C" fn(*mut libc::pthread_rwlock_t) -> libc::c_int,
) -> i32 {
    match unsafe { rwlock_of(l) } {
        Some(h) => from_host(unsafe { op(h) }),
        None => 22,
    }
}

/// `pthread_rwlock_rdlock`.
#[nid("pthread_rwlock_rdlock")]
pub unsafe extern "C" fn pthread_rwlock_rdlock(l: *mut *mut libc::pthread_rwlock_t) -> i32 {
    unsafe { with_rwlock(l, libc::pthread_rwlock_rdlock) }
}

/// `pthread_rwlock_wrlock`.
#[nid("pthread_rwlock_wrlock")]
pub unsafe extern "C" fn pthread_rwlock_wrlock(l: *mut *mut libc::pthread_rwlock_t) -> i32 {
    unsafe { with_rwlock(l, libc::pthread_rwlock_wrlock) }
}

/// `pthread_rwlock_tryrdlock`.
#[nid("pthread_rwlock_tryrdlock")]
pub unsafe extern "C" fn pthread_rwlock_tryrdlock(l: *mut *mut libc::pthread_rwlock_t) -> i32 {
    unsafe { with_rwlock(l, libc::pthread_rwlock_tryrdlock) }
}

/// `pthread_rwlock_trywrlock`.
#[nid("pthread_rwlock_trywrlock")]
pub unsafe extern "C" fn pthread_rwlock_trywrlock(l: *mut *mut libc::pthread_rwlock_t) -> i32 {
    unsafe { with_rwlock(l, libc::pthread_rwlock_trywrlock) }
}

/// `pthread_rwlock_unlock`.
#[nid("pthread_rwlock_unlock")]
pub unsafe extern "C" fn pthread_rwlock_unlock(l: *mut *mut libc::pthread_rwlock_t) -> i32 {
    unsafe { with_rwlock(l, libc::pthread_rwlock_unlock) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_initialisers_are_allocated_on_first_use() {
        let mut m: *mut GuestMutex = std::ptr::null_mut();
        unsafe {
            assert_eq!(pthread_mutex_lock(&mut m), 0);
            assert!(!m.is_null());
            // ERRORCHECK is FreeBSD's default: relocking is EDEADLK (11 on FreeBSD).
            assert_eq!(pthread_mutex_lock(&mut m), 11);
            assert_eq!(pthread_mutex_trylock(&mut m), 16); // EBUSY
            // Another thread may neither unlock it (EPERM) nor take it (EBUSY).
            let addr = &mut m as *mut _ as usize;
            let other = std::thread::spawn(move || {
                let p = addr as *mut *mut GuestMutex;
                (pthread_mutex_unlock(p), pthread_mutex_trylock(p))
            });
            assert_eq!(other.join().unwrap(), (1, 16));
            assert_eq!(pthread_mutex_destroy(&mut m), 16); // locked: EBUSY
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

    fn with_kind(kind: i32) -> *mut GuestMutex {
        let mut a: *mut MutexAttr = std::ptr::null_mut();
        let mut m: *mut GuestMutex = std::ptr::null_mut();
        unsafe {
            assert_eq!(pthread_mutexattr_init(&mut a), 0);
            assert_eq!(pthread_mutexattr_settype(&mut a, kind), 0);
            let mut back = 0;
            assert_eq!(pthread_mutexattr_gettype(&a, &mut back), 0);
            assert_eq!(back, kind);
            assert_eq!(pthread_mutex_init(&mut m, &a), 0);
            assert_eq!(pthread_mutexattr_destroy(&mut a), 0);
        }
        m
    }

    #[test]
    fn recursive_normal_and_timed_locks_follow_freebsd() {
        unsafe {
            let mut r = with_kind(2);
            for _ in 0..3 {
                assert_eq!(pthread_mutex_lock(&mut r), 0);
            }
            assert_eq!(pthread_mutex_trylock(&mut r), 0);
            for _ in 0..4 {
                assert_eq!(pthread_mutex_unlock(&mut r), 0);
            }
            assert_eq!(pthread_mutex_unlock(&mut r), 1);
            assert_eq!(pthread_mutex_destroy(&mut r), 0);

            // NORMAL: a relock by the holder deadlocks, so a timed relock times out.
            let mut n = with_kind(3);
            assert_eq!(pthread_mutex_lock(&mut n), 0);
            assert_eq!(pthread_mutex_trylock(&mut n), 16);
            assert_eq!(sce_pthread_mutex_timedlock(&mut n, 2000), sce_error(60));
            // Another thread times out too, with the absolute deadline.
            let addr = &mut n as *mut _ as usize;
            let got = std::thread::spawn(move || {
                let mut now = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                libc::clock_gettime(libc::CLOCK_REALTIME, &mut now);
                now.tv_nsec += 3_000_000;
                if now.tv_nsec >= 1_000_000_000 {
                    now.tv_sec += 1;
                    now.tv_nsec -= 1_000_000_000;
                }
                pthread_mutex_timedlock(addr as *mut *mut GuestMutex, &now)
            })
            .join()
            .unwrap();
            assert_eq!(got, 60);
            assert_eq!(pthread_mutex_unlock(&mut n), 0);
            assert_eq!(pthread_mutex_destroy(&mut n), 0);
        }
    }

    #[test]
    fn contended_counter_and_condvar_handoff() {
        static mut M: *mut GuestMutex = std::ptr::null_mut();
        static mut C: *mut GuestCond = std::ptr::null_mut();
        static mut COUNT: u64 = 0;
        static mut TURN: u32 = 0;
        let threads: Vec<_> = (0..4u32)
            .map(|id| {
                std::thread::spawn(move || unsafe {
                    for _ in 0..20_000 {
                        assert_eq!(pthread_mutex_lock(&raw mut M), 0);
                        COUNT += 1;
                        assert_eq!(pthread_mutex_unlock(&raw mut M), 0);
                    }
                    // Take turns in id order through the condvar.
                    for round in 0..50u32 {
                        assert_eq!(pthread_mutex_lock(&raw mut M), 0);
                        while TURN != round * 4 + id {
                            assert_eq!(pthread_cond_wait(&raw mut C, &raw mut M), 0);
                        }
                        TURN += 1;
                        assert_eq!(pthread_cond_broadcast(&raw mut C), 0);
                        assert_eq!(pthread_mutex_unlock(&raw mut M), 0);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        unsafe {
            assert_eq!((&raw const COUNT).read(), 80_000);
            assert_eq!((&raw const TURN).read(), 200);
            // A timed wait with nobody signalling times out and holds the mutex again.
            assert_eq!(pthread_mutex_lock(&raw mut M), 0);
            assert_eq!(
                sce_pthread_cond_timedwait(&raw mut C, &raw mut M, 1000),
                sce_error(60)
            );
            assert_eq!(pthread_mutex_unlock(&raw mut M), 0);
            // Waiting without holding the mutex is EPERM.
            assert_eq!(pthread_cond_wait(&raw mut C, &raw mut M), 1);
        }
    }
}
