//! FreeBSD kernel threads made raw by programs with their own thread library (FreeBSD's
//! libthr does this; see `syscall.rs`): `thr_new` (455) and `thr_exit` (431).
//!
//! A thread of `thr_new` is a host thread (so libkernel, the host C library and the system
//! call trap work on it) that runs `start_func(arg)` on the stack the program gave, entered
//! as FreeBSD's kernel enters it: `rsp` 16-byte aligned below `stack_base + stack_size` minus
//! the return address slot, `rdi` = `arg`, the creator's signal mask. Its id (the host
//! thread id, as `thr_self` answers) is written to `child_tid` and `parent_tid` before
//! `thr_new` returns and before the thread runs. `thr_exit(state)` leaves the program's
//! stack for the host one, then writes 1 to `*state` (a `long`) and wakes its `_umtx_op`
//! waiters, so a joiner may free the stack at once; then the host thread ends. A start
//! function that returns ends its thread too (FreeBSD would return into whatever the stack
//! holds).
//!
//! The thread pointer is not `tls_base`: `%fs` stays the host thread's (glibc's TCB), which
//! libkernel and the trap handler need on every thread, as `sysarch(AMD64_SET_FSBASE)` is
//! refused for the same reason. Both use TLS variant II with the executable's block at the
//! same offset below the thread pointer (RELINK.md, "TLS"), so the program's own
//! `__thread` variables work and start from their initial image on the new thread; what
//! the program wrote into its own TCB at `tls_base` is not what `%fs:0x10` and up read.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicUsize, Ordering};

/// FreeBSD `EFAULT`, `EINVAL`, `EAGAIN`, `EOPNOTSUPP`.
const EFAULT: i32 = 14;
const EINVAL: i32 = 22;
const EAGAIN: i32 = 35;
const EOPNOTSUPP: i32 = 45;

/// `THR_SUSPENDED`: start the thread suspended (not served).
const THR_SUSPENDED: i32 = 1;
/// `THR_SYSTEM_SCOPE`: every thread is a system-scope thread here.
const THR_SYSTEM_SCOPE: i32 = 2;

/// FreeBSD `struct thr_param` (amd64, 104 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct ThrParam {
    pub start_func: u64,
    pub arg: u64,
    pub stack_base: u64,
    pub stack_size: u64,
    pub tls_base: u64,
    pub tls_size: u64,
    pub child_tid: u64,
    pub parent_tid: u64,
    pub flags: i32,
    /// `struct rtprio *` (scheduling class and priority; not applied).
    pub rtp: u64,
    pub spare: [u64; 3],
}

const _: () = assert!(std::mem::size_of::<ThrParam>() == 104);

/// Where a `thr_new` thread's host stack was left: `thr_exit` goes back there.
#[repr(C)]
struct Landing {
    /// The host `rsp` inside [`run_guest`].
    host_rsp: u64,
    /// The address in [`run_guest`] that leaves the program's stack.
    landing: u64,
    /// `thr_exit`'s `state` word.
    state: u64,
}

thread_local! {
    static GUEST: Cell<*mut Landing> = const { Cell::new(std::ptr::null_mut()) };
}

/// `thr_new` threads running.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// The main thread called `thr_exit` while `thr_new` threads ran: the last of them ends
/// the process (status 0), as FreeBSD's last thread does.
static MAIN_PARKED: AtomicBool = AtomicBool::new(false);

fn futex_wait(word: *const u32, val: u32) {
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word,
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            val,
            std::ptr::null::<libc::timespec>(),
        )
    };
}

fn futex_wake(word: *const u32, private: bool) {
    let op = if private {
        libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG
    } else {
        libc::FUTEX_WAKE
    };
    unsafe { libc::syscall(libc::SYS_futex, word, op, i32::MAX) };
}

/// `*state = 1` and a wake of every waiter on it, shared and private (`_umtx_op` WAIT and
/// WAIT_UINT sleep on shared futexes, the `_PRIVATE` operations on private ones).
unsafe fn signal_state(state: u64) {
    if state == 0 {
        return;
    }
    let p = state as *mut i64;
    unsafe { std::ptr::write_volatile(p, 1) };
    futex_wake(p as *const u32, false);
    futex_wake(p as *const u32, true);
}

/// The hand-over between `thr_new` and its thread.
struct Start {
    tid: AtomicI32,
    go: AtomicU32,
}

/// `thr_new(param, param_size)`. `mask`: the signal mask of the interrupted program (the
/// trap handler's own may differ); `None` takes the calling thread's.
pub unsafe fn thr_new(
    param: *const u8,
    size: i32,
    mask: Option<&libc::sigset_t>,
) -> Result<u64, i32> {
    let Ok(size) = usize::try_from(size) else {
        return Err(EINVAL);
    };
    if size > std::mem::size_of::<ThrParam>() {
        return Err(EINVAL);
    }
    if param.is_null() {
        return Err(EFAULT);
    }
    // A shorter structure is zero-filled, as the kernel's copyin into a zeroed one.
    let mut p = ThrParam::default();
    unsafe {
        std::ptr::copy_nonoverlapping(param, (&raw mut p).cast::<u8>(), size);
    }
    if p.flags & !(THR_SUSPENDED | THR_SYSTEM_SCOPE) != 0 {
        return Err(EINVAL);
    }
    if p.flags & THR_SUSPENDED != 0 {
        return Err(EOPNOTSUPP);
    }
    // FreeBSD starts such a thread at address 0 or with no stack, and it faults at once.
    if p.start_func == 0 || p.stack_base == 0 || p.stack_size == 0 {
        return Err(EINVAL);
    }
    let Some(top) = p.stack_base.checked_add(p.stack_size) else {
        return Err(EINVAL);
    };
    let mut m: libc::sigset_t = unsafe { std::mem::zeroed() };
    match mask {
        Some(given) => m = *given,
        None => unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, std::ptr::null(), &mut m);
        },
    }
    let start = Arc::new(Start {
        tid: AtomicI32::new(0),
        go: AtomicU32::new(0),
    });
    let theirs = start.clone();
    LIVE.fetch_add(1, Ordering::SeqCst);
    // The host stack only carries the thread's start and end; the program's code runs on
    // its own stack.
    let spawned = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || unsafe { child(p, top, m, theirs) });
    if spawned.is_err() {
        LIVE.fetch_sub(1, Ordering::SeqCst);
        return Err(EAGAIN);
    }
    // Detached: a kernel thread is not joined; its end is seen through `state`.
    drop(spawned);
    let tid = loop {
        let t = start.tid.load(Ordering::Acquire);
        if t != 0 {
            break t;
        }
        futex_wait(start.tid.as_ptr() as *const u32, 0);
    };
    for out in [p.child_tid, p.parent_tid] {
        if out != 0 {
            unsafe { (out as *mut i64).write_unaligned(i64::from(tid)) };
        }
    }
    start.go.store(1, Ordering::Release);
    futex_wake(start.go.as_ptr(), true);
    Ok(0)
}

unsafe fn child(p: ThrParam, top: u64, mask: libc::sigset_t, start: Arc<Start>) {
    start
        .tid
        .store(unsafe { libc::gettid() }, Ordering::Release);
    futex_wake(start.tid.as_ptr() as *const u32, true);
    while start.go.load(Ordering::Acquire) == 0 {
        futex_wait(start.go.as_ptr(), 0);
    }
    drop(start);
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &mask, std::ptr::null_mut()) };
    let mut rec = Landing {
        host_rsp: 0,
        landing: 0,
        state: 0,
    };
    GUEST.with(|g| g.set(&raw mut rec));
    unsafe { run_guest(p.start_func, p.arg, top, &raw mut rec) };
    GUEST.with(|g| g.set(std::ptr::null_mut()));
    // Off the program's stack now: the joiner may free it.
    unsafe { signal_state(rec.state) };
    if LIVE.fetch_sub(1, Ordering::SeqCst) == 1 && MAIN_PARKED.load(Ordering::SeqCst) {
        unsafe { libc::_exit(0) };
    }
}

/// Runs `func(arg)` on the program's stack (`top`), FreeBSD's entry state; comes back when
/// it returns or when [`thr_exit`] jumps to the landing address recorded in `rec`.
#[inline(never)]
unsafe fn run_guest(func: u64, arg: u64, top: u64, rec: *mut Landing) {
    unsafe {
        std::arch::asm!(
            "push rbx",
            "push rbp",
            "mov [rcx], rsp",
            "lea rax, [rip + 2f]",
            "mov [rcx + 8], rax",
            "mov r12, rsp",
            "mov rsp, rdx",
            "and rsp, -16",
            // The return address slot: a start function that returns lands here too.
            "push rax",
            "jmp rsi",
            "2:",
            "mov rsp, r12",
            "pop rbp",
            "pop rbx",
            in("rdi") arg,
            in("rsi") func,
            in("rdx") top,
            in("rcx") rec,
            out("r12") _,
            out("r13") _,
            out("r14") _,
            out("r15") _,
            clobber_abi("C"),
        );
    }
}

/// `thr_exit(long *state)`. On a `thr_new` thread it does not return: the program's stack
/// is left (`mask`, the interrupted program's signal mask, is set again first when called
/// from the trap handler, whose frame is abandoned), then [`child`] signals `state`. The
/// main thread ends the process (status 0) when no `thr_new` thread runs, and otherwise
/// waits for the last of them to end it; any other thread signals `state` and stops.
pub unsafe fn thr_exit(state: *mut i64, mask: Option<&libc::sigset_t>) -> ! {
    if let Some(m) = mask {
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, m, std::ptr::null_mut()) };
    }
    let rec = GUEST.with(Cell::get);
    if !rec.is_null() {
        unsafe {
            (*rec).state = state as u64;
            let (rsp, to) = ((*rec).host_rsp, (*rec).landing);
            std::arch::asm!(
                "mov rsp, rax",
                "mov r12, rax",
                "jmp rdx",
                in("rax") rsp,
                in("rdx") to,
                options(noreturn),
            );
        }
    }
    unsafe { signal_state(state as u64) };
    if unsafe { libc::gettid() == libc::getpid() } {
        MAIN_PARKED.store(true, Ordering::SeqCst);
        if LIVE.load(Ordering::SeqCst) == 0 {
            unsafe { libc::_exit(0) };
        }
    }
    loop {
        unsafe { libc::pause() };
    }
}

/// How many `thr_new` threads run now.
pub fn live() -> usize {
    LIVE.load(Ordering::SeqCst)
}
