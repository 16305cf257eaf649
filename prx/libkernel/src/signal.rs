//! Signals and `sysconf` with FreeBSD numbering on a Linux host.
//!
//! FreeBSD and Linux share only signals 1-6, 8, 9 and 13-15; the others are renumbered
//! here in both directions. A FreeBSD `sigset_t` is 128 bits (`u32[4]`, bit `n-1` for
//! signal `n`). FreeBSD signals with no Linux counterpart (`SIGEMT`, `SIGINFO`, `SIGTHR`,
//! `SIGLIBRT`, real-time signals past the host's range) can never be delivered by the
//! host, so their dispositions and blocked bits are kept here and only reported back.
//!
//! Guest handlers are never given to the host kernel directly: one host handler
//! ([`host_handler`]) receives every caught signal, builds the FreeBSD `siginfo_t` and
//! `ucontext_t` the guest expects, calls the guest handler with the FreeBSD signal
//! number, and copies the registers and signal mask the handler may have changed back
//! into the host context (FreeBSD's `sigreturn` restores them from the same structure).

use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use aps5_prx_macros::nid;

use crate::errno;

const EINVAL: i32 = 22;

/// FreeBSD `NSIG`-style bound: signals are 1..=128 in a 128-bit set.
pub const FB_NSIG: i32 = 128;
/// FreeBSD `SIGRTMIN`.
pub const FB_SIGRTMIN: i32 = 65;
/// FreeBSD `SIGRTMAX`.
pub const FB_SIGRTMAX: i32 = 126;

/// FreeBSD `sa_flags` bits.
pub mod fb_sa {
    /// `SA_ONSTACK`.
    pub const ONSTACK: i32 = 0x0001;
    /// `SA_RESTART`.
    pub const RESTART: i32 = 0x0002;
    /// `SA_RESETHAND`.
    pub const RESETHAND: i32 = 0x0004;
    /// `SA_NOCLDSTOP`.
    pub const NOCLDSTOP: i32 = 0x0008;
    /// `SA_NODEFER`.
    pub const NODEFER: i32 = 0x0010;
    /// `SA_NOCLDWAIT`.
    pub const NOCLDWAIT: i32 = 0x0020;
    /// `SA_SIGINFO`.
    pub const SIGINFO: i32 = 0x0040;
}

/// (FreeBSD, Linux) pairs for the classic signals. FreeBSD 7 (`SIGEMT`), 29 (`SIGINFO`),
/// 32 (`SIGTHR`) and 33 (`SIGLIBRT`) have no Linux counterpart.
const CLASSIC: [(i32, i32); 29] = [
    (1, libc::SIGHUP),
    (2, libc::SIGINT),
    (3, libc::SIGQUIT),
    (4, libc::SIGILL),
    (5, libc::SIGTRAP),
    (6, libc::SIGABRT),
    (8, libc::SIGFPE),
    (9, libc::SIGKILL),
    (10, libc::SIGBUS),
    (11, libc::SIGSEGV),
    (12, libc::SIGSYS),
    (13, libc::SIGPIPE),
    (14, libc::SIGALRM),
    (15, libc::SIGTERM),
    (16, libc::SIGURG),
    (17, libc::SIGSTOP),
    (18, libc::SIGTSTP),
    (19, libc::SIGCONT),
    (20, libc::SIGCHLD),
    (21, libc::SIGTTIN),
    (22, libc::SIGTTOU),
    (23, libc::SIGIO),
    (24, libc::SIGXCPU),
    (25, libc::SIGXFSZ),
    (26, libc::SIGVTALRM),
    (27, libc::SIGPROF),
    (28, libc::SIGWINCH),
    (30, libc::SIGUSR1),
    (31, libc::SIGUSR2),
];

/// FreeBSD signal number -> host signal number; `None` when the host has no such signal.
pub fn to_host(fb: i32) -> Option<i32> {
    if (FB_SIGRTMIN..=FB_SIGRTMAX).contains(&fb) {
        let h = libc::SIGRTMIN() + (fb - FB_SIGRTMIN);
        return (h <= libc::SIGRTMAX()).then_some(h);
    }
    CLASSIC.iter().find(|&&(f, _)| f == fb).map(|&(_, h)| h)
}

/// Host signal number -> FreeBSD signal number; `None` for host-only signals
/// (`SIGSTKFLT`, `SIGPWR`, glibc's internal real-time signals).
pub fn from_host(h: i32) -> Option<i32> {
    if (libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&h) {
        let f = FB_SIGRTMIN + (h - libc::SIGRTMIN());
        return (f <= FB_SIGRTMAX).then_some(f);
    }
    CLASSIC.iter().find(|&&(_, x)| x == h).map(|&(f, _)| f)
}

/// FreeBSD `sigset_t`.
pub type FbSigset = [u32; 4];

fn fb_has(set: &FbSigset, sig: i32) -> bool {
    let b = (sig - 1) as usize;
    set[b / 32] & (1 << (b % 32)) != 0
}

fn fb_add(set: &mut FbSigset, sig: i32) {
    let b = (sig - 1) as usize;
    set[b / 32] |= 1 << (b % 32);
}

/// The host set holding the translatable members of `set`, and the untranslatable rest.
pub fn set_to_host(set: &FbSigset) -> (libc::sigset_t, FbSigset) {
    let mut host: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe { libc::sigemptyset(&mut host) };
    let mut rest = [0u32; 4];
    for sig in 1..=FB_NSIG {
        if fb_has(set, sig) {
            match to_host(sig) {
                Some(h) => unsafe {
                    libc::sigaddset(&mut host, h);
                },
                None => fb_add(&mut rest, sig),
            }
        }
    }
    (host, rest)
}

/// The FreeBSD set of the members of a host set that have FreeBSD numbers.
pub fn set_from_host(host: &libc::sigset_t) -> FbSigset {
    let mut out = [0u32; 4];
    for h in 1..=libc::SIGRTMAX() {
        if unsafe { libc::sigismember(host, h) } == 1
            && let Some(f) = from_host(h)
        {
            fb_add(&mut out, f);
        }
    }
    out
}

/// FreeBSD `sa_flags` bits and their host counterparts (`SA_SIGINFO` apart: see below).
const SA_FLAG_PAIRS: [(i32, i32); 6] = [
    (fb_sa::ONSTACK, libc::SA_ONSTACK),
    (fb_sa::RESTART, libc::SA_RESTART),
    (fb_sa::RESETHAND, libc::SA_RESETHAND),
    (fb_sa::NOCLDSTOP, libc::SA_NOCLDSTOP),
    (fb_sa::NODEFER, libc::SA_NODEFER),
    (fb_sa::NOCLDWAIT, libc::SA_NOCLDWAIT),
];

/// FreeBSD `sa_flags` -> host `sa_flags`. The host handler always needs `SA_SIGINFO`, which
/// the caller adds; a guest `SA_SIGINFO` is passed on too.
pub fn flags_to_host(fb: i32) -> i32 {
    let siginfo = if fb & fb_sa::SIGINFO != 0 {
        libc::SA_SIGINFO
    } else {
        0
    };
    SA_FLAG_PAIRS
        .iter()
        .filter(|(f, _)| fb & f != 0)
        .fold(siginfo, |acc, (_, h)| acc | h)
}

/// Host `sa_flags` -> FreeBSD `sa_flags` (`SA_SIGINFO` is the host handler's own, not the
/// guest's).
pub fn flags_from_host(h: i32) -> i32 {
    SA_FLAG_PAIRS
        .iter()
        .filter(|(_, x)| h & x != 0)
        .fold(0, |acc, (f, _)| acc | f)
}

/// FreeBSD amd64 `struct sigaction` (32 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FbSigaction {
    /// `sa_handler` / `sa_sigaction`; 0 is `SIG_DFL`, 1 is `SIG_IGN`.
    pub handler: usize,
    /// `sa_flags` (FreeBSD bits).
    pub flags: i32,
    /// `sa_mask`.
    pub mask: FbSigset,
}

const SIG_DFL: usize = 0;
const SIG_IGN: usize = 1;

/// Guest handler and FreeBSD flags per host signal, read by [`host_handler`].
static GUEST_HANDLER: [AtomicUsize; 65] = [const { AtomicUsize::new(0) }; 65];
static GUEST_FLAGS: [AtomicI32; 65] = [const { AtomicI32::new(0) }; 65];

/// Dispositions of signals the host cannot deliver (index: FreeBSD number).
static VIRTUAL: Mutex<[FbSigaction; 129]> = Mutex::new(
    [FbSigaction {
        handler: 0,
        flags: 0,
        mask: [0; 4],
    }; 129],
);

thread_local! {
    /// Blocked signals the host cannot represent, per thread (like the real mask).
    static VIRTUAL_MASK: Cell<FbSigset> = const { Cell::new([0; 4]) };
}

/// FreeBSD `si_code` for a host `si_code`.
fn code_from_host(sig: i32, code: i32) -> i32 {
    match code {
        libc::SI_USER => 0x10001,
        libc::SI_QUEUE => 0x10002,
        libc::SI_TIMER => 0x10003,
        libc::SI_ASYNCIO => 0x10004,
        libc::SI_MESGQ => 0x10005,
        libc::SI_KERNEL => 0x10006,
        libc::SI_TKILL => 0x10007, // SI_LWP: thr_kill / raise
        // FreeBSD swaps FPE_INTOVF (1) and FPE_INTDIV (2); the other fault codes agree.
        1 if sig == libc::SIGFPE => 2,
        2 if sig == libc::SIGFPE => 1,
        c => c,
    }
}

/// FreeBSD amd64 `siginfo_t` (80 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FbSiginfo {
    /// `si_signo` (FreeBSD number).
    pub signo: i32,
    /// `si_errno`.
    pub errno: i32,
    /// `si_code` (FreeBSD values).
    pub code: i32,
    /// `si_pid`.
    pub pid: i32,
    /// `si_uid`.
    pub uid: u32,
    /// `si_status`.
    pub status: i32,
    /// `si_addr`.
    pub addr: usize,
    /// `si_value`.
    pub value: usize,
    /// `_reason` (`_fault._trapno`, `_timer`, ...).
    pub reason: [u64; 5],
}

/// FreeBSD amd64 `ucontext_t` as raw 64-bit words (880 bytes): `uc_sigmask` at 0,
/// `uc_mcontext` at 16 (800 bytes), `uc_link` at 816, `uc_stack` at 824, `uc_flags` at 848.
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy)]
pub struct FbUcontext(pub [u64; 110]);

/// Word index in [`FbUcontext`] of each FreeBSD `mc_*` general register, and the host
/// `gregs` index holding it. `mc_rdi` is word 3 (offset 24 = 16 + 8).
const GREGS: [(usize, i32); 19] = [
    (3, libc::REG_RDI),
    (4, libc::REG_RSI),
    (5, libc::REG_RDX),
    (6, libc::REG_RCX),
    (7, libc::REG_R8),
    (8, libc::REG_R9),
    (9, libc::REG_RAX),
    (10, libc::REG_RBX),
    (11, libc::REG_RBP),
    (12, libc::REG_R10),
    (13, libc::REG_R11),
    (14, libc::REG_R12),
    (15, libc::REG_R13),
    (16, libc::REG_R14),
    (17, libc::REG_R15),
    (22, libc::REG_RIP),
    (24, libc::REG_EFL),
    (25, libc::REG_RSP),
    (21, libc::REG_ERR),
];
/// Word index of `mc_rip`.
pub const UC_RIP: usize = 22;
/// Word index of `mc_rax`.
pub const UC_RAX: usize = 9;
/// Word index of `mc_rflags`.
pub const UC_RFLAGS: usize = 24;

fn ucontext_from_host(uc: &libc::ucontext_t) -> FbUcontext {
    let mut w = [0u64; 110];
    let mask = set_from_host(&uc.uc_sigmask);
    w[0] = u64::from(mask[0]) | u64::from(mask[1]) << 32;
    w[1] = u64::from(mask[2]) | u64::from(mask[3]) << 32;
    let g = &uc.uc_mcontext.gregs;
    for &(i, r) in &GREGS {
        w[i] = g[r as usize] as u64;
    }
    // mc_trapno (u32 at offset 144); mc_addr at offset 152 (word 19).
    w[18] = g[libc::REG_TRAPNO as usize] as u64 & 0xFFFF_FFFF;
    w[19] = g[libc::REG_CR2 as usize] as u64;
    w[23] = 0x43; // mc_cs: the FreeBSD user code selector
    w[26] = 0x3b; // mc_ss
    w[27] = 800; // mc_len
    w[28] = 0x10000; // mc_fpformat: _MC_FPFMT_NODEV (FPU state is not translated)
    w[29] = 0x20000; // mc_ownedfp: _MC_FPOWNED_NONE
    FbUcontext(w)
}

fn ucontext_to_host(fb: &FbUcontext, uc: &mut libc::ucontext_t) {
    let w = &fb.0;
    for &(i, r) in &GREGS {
        if r != libc::REG_ERR {
            uc.uc_mcontext.gregs[r as usize] = w[i] as i64;
        }
    }
    let mask = [
        w[0] as u32,
        (w[0] >> 32) as u32,
        w[1] as u32,
        (w[1] >> 32) as u32,
    ];
    let (host, _) = set_to_host(&mask);
    uc.uc_sigmask = host;
}

/// The one host handler for every signal the guest catches.
extern "C" fn host_handler(sig: i32, info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    let Some(idx) = usize::try_from(sig)
        .ok()
        .filter(|&i| i < GUEST_HANDLER.len())
    else {
        return;
    };
    let host_uc = uc.cast::<libc::ucontext_t>();
    if sig == libc::SIGILL
        && let Some(u) = unsafe { host_uc.as_mut() }
        && (crate::syscall::service(u) || crate::lower_trap::service(u))
    {
        return;
    }
    let handler = GUEST_HANDLER[idx].load(Ordering::Acquire);
    let flags = GUEST_FLAGS[idx].load(Ordering::Acquire);
    let Some(fb_sig) = from_host(sig) else { return };
    if handler == SIG_DFL || handler == SIG_IGN {
        if sig == libc::SIGILL {
            // Kept installed for the syscall trap only: restore the default action, which
            // the re-executed instruction then takes (an ignored SIGILL kills as well).
            unsafe { libc::signal(sig, libc::SIG_DFL) };
        }
        return;
    }
    let mut fi = FbSiginfo {
        signo: fb_sig,
        ..FbSiginfo::default()
    };
    if let Some(i) = unsafe { info.as_ref() } {
        fi.errno = i.si_errno;
        fi.code = code_from_host(sig, i.si_code);
        match sig {
            libc::SIGILL | libc::SIGFPE | libc::SIGSEGV | libc::SIGBUS | libc::SIGTRAP => unsafe {
                fi.addr = i.si_addr() as usize;
            },
            libc::SIGCHLD => unsafe {
                fi.pid = i.si_pid();
                fi.uid = i.si_uid();
                fi.status = i.si_status();
            },
            _ if i.si_code <= 0 => unsafe {
                // Sent by a process: kill, sigqueue, tgkill.
                fi.pid = i.si_pid();
                fi.uid = i.si_uid();
                fi.value = i.si_value().sival_ptr as usize;
            },
            _ => {}
        }
    }
    let mut fuc = match unsafe { host_uc.as_ref() } {
        Some(u) => ucontext_from_host(u),
        None => FbUcontext([0; 110]),
    };
    if let Some(t) = unsafe { host_uc.as_ref() } {
        fi.reason[0] = t.uc_mcontext.gregs[libc::REG_TRAPNO as usize] as u64 & 0xFFFF_FFFF;
    }
    // FreeBSD passes (sig, code, ucontext) to plain handlers and (sig, info, ucontext)
    // to SA_SIGINFO ones.
    let f: extern "C" fn(i32, usize, *mut FbUcontext) = unsafe { std::mem::transmute(handler) };
    let second = if flags & fb_sa::SIGINFO != 0 {
        (&raw mut fi) as usize
    } else {
        fi.code as u32 as usize
    };
    f(fb_sig, second, &raw mut fuc);
    if let Some(u) = unsafe { host_uc.as_mut() } {
        ucontext_to_host(&fuc, u);
    }
}

/// Installs the host handler on SIGILL so that [`crate::syscall::TRAP`] and
/// [`crate::lower_trap`] instructions are serviced (libkernel does this at load). `SA_NODEFER`: a guest signal handler may
/// itself make trapped system calls.
pub fn install_syscall_trap() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let mut na: libc::sigaction = unsafe { std::mem::zeroed() };
        na.sa_sigaction = host_handler as *const () as usize;
        na.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
        unsafe {
            libc::sigemptyset(&mut na.sa_mask);
            libc::sigaction(libc::SIGILL, &na, std::ptr::null_mut());
        }
    });
}

/// `sigaction(sig, act, oact)` with FreeBSD numbers, flags and structure layout.
#[nid("sigaction")]
pub unsafe extern "C" fn sigaction(
    sig: i32,
    act: *const FbSigaction,
    oact: *mut FbSigaction,
) -> i32 {
    if !(1..=FB_NSIG).contains(&sig) || (!act.is_null() && (sig == 9 || sig == 17)) {
        errno::set(EINVAL);
        return -1;
    }
    let new = unsafe { act.as_ref() }.copied();
    if new.is_some_and(|a| a.handler == 3) {
        // SIG_HOLD is not a disposition sigaction accepts on FreeBSD either.
        errno::set(EINVAL);
        return -1;
    }
    let Some(h) = to_host(sig) else {
        let mut v = VIRTUAL.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(o) = unsafe { oact.as_mut() } {
            *o = v[sig as usize];
        }
        if let Some(a) = new {
            v[sig as usize] = a;
        }
        return 0;
    };
    let idx = h as usize;
    let mut old_host: libc::sigaction = unsafe { std::mem::zeroed() };
    let old_guest = (
        GUEST_HANDLER[idx].load(Ordering::Acquire),
        GUEST_FLAGS[idx].load(Ordering::Acquire),
    );
    let r = match new {
        Some(a) => {
            let mut na: libc::sigaction = unsafe { std::mem::zeroed() };
            na.sa_sigaction = match a.handler {
                // SIGILL stays with the host handler: it services the syscall trap.
                _ if h == libc::SIGILL => host_handler as *const () as usize,
                SIG_DFL => libc::SIG_DFL,
                SIG_IGN => libc::SIG_IGN,
                _ => host_handler as *const () as usize,
            };
            // The host handler always needs siginfo and the context.
            na.sa_flags = flags_to_host(a.flags) | libc::SA_SIGINFO;
            if h == libc::SIGILL {
                na.sa_flags |= libc::SA_NODEFER;
            }
            na.sa_mask = set_to_host(&a.mask).0;
            // Publish the guest handler first: a signal may arrive as soon as the host
            // disposition changes.
            GUEST_FLAGS[idx].store(a.flags, Ordering::Release);
            GUEST_HANDLER[idx].store(a.handler, Ordering::Release);
            unsafe { libc::sigaction(h, &na, &mut old_host) }
        }
        None => unsafe { libc::sigaction(h, std::ptr::null(), &mut old_host) },
    };
    if r != 0 {
        GUEST_HANDLER[idx].store(old_guest.0, Ordering::Release);
        GUEST_FLAGS[idx].store(old_guest.1, Ordering::Release);
        errno::set_from_host();
        return -1;
    }
    if let Some(o) = unsafe { oact.as_mut() } {
        let handler = match old_host.sa_sigaction {
            libc::SIG_DFL => SIG_DFL,
            libc::SIG_IGN => SIG_IGN,
            p if p == host_handler as *const () as usize => old_guest.0,
            // A handler installed by a host library: the guest cannot call it.
            _ => SIG_DFL,
        };
        let flags = if handler > SIG_IGN {
            old_guest.1
        } else {
            flags_from_host(old_host.sa_flags)
        };
        *o = FbSigaction {
            handler,
            flags,
            mask: set_from_host(&old_host.sa_mask),
        };
    }
    0
}

/// `sigprocmask(how, set, oset)`: FreeBSD `SIG_BLOCK` 1, `SIG_UNBLOCK` 2, `SIG_SETMASK` 3.
/// Acts on the calling thread, as FreeBSD's libthr does.
#[nid("sigprocmask")]
pub unsafe extern "C" fn sigprocmask(how: i32, set: *const FbSigset, oset: *mut FbSigset) -> i32 {
    let host_how = match how {
        1 => libc::SIG_BLOCK,
        2 => libc::SIG_UNBLOCK,
        3 => libc::SIG_SETMASK,
        _ if set.is_null() => libc::SIG_BLOCK,
        _ => {
            errno::set(EINVAL);
            return -1;
        }
    };
    let new = unsafe { set.as_ref() }.copied();
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    let (host_new, rest) = new.map(|s| set_to_host(&s)).unzip();
    let host_ptr = host_new
        .as_ref()
        .map_or(std::ptr::null(), |s| s as *const libc::sigset_t);
    let r = unsafe { libc::pthread_sigmask(host_how, host_ptr, &mut old) };
    if r != 0 {
        errno::set(errno::from_host(r));
        return -1;
    }
    let old_virtual = VIRTUAL_MASK.with(|m| m.get());
    if let Some(rest) = rest {
        let mut v = old_virtual;
        for i in 0..4 {
            v[i] = match host_how {
                libc::SIG_BLOCK => v[i] | rest[i],
                libc::SIG_UNBLOCK => v[i] & !rest[i],
                _ => rest[i],
            };
        }
        VIRTUAL_MASK.with(|m| m.set(v));
    }
    if !oset.is_null() {
        let mut o = set_from_host(&old);
        for i in 0..4 {
            o[i] |= old_virtual[i];
        }
        unsafe { oset.write_unaligned(o) };
    }
    0
}

/// `raise(sig)` with a FreeBSD number: sends the signal to the calling thread. A signal
/// the host cannot represent runs its recorded disposition: default and ignore do
/// nothing (all such FreeBSD signals default to being ignored), a handler is called.
#[nid("raise")]
pub extern "C" fn raise(sig: i32) -> i32 {
    if !(1..=FB_NSIG).contains(&sig) {
        errno::set(EINVAL);
        return -1;
    }
    match to_host(sig) {
        Some(h) => {
            if unsafe { libc::raise(h) } != 0 {
                errno::set_from_host();
                return -1;
            }
        }
        None => {
            let a = VIRTUAL.lock().unwrap_or_else(|p| p.into_inner())[sig as usize];
            let blocked = fb_has(&VIRTUAL_MASK.with(|m| m.get()), sig);
            if a.handler > SIG_IGN && !blocked {
                let mut fi = FbSiginfo {
                    signo: sig,
                    code: 0x10007,
                    pid: unsafe { libc::getpid() },
                    uid: unsafe { libc::getuid() },
                    ..FbSiginfo::default()
                };
                let mut uc = FbUcontext([0; 110]);
                let f: extern "C" fn(i32, usize, *mut FbUcontext) =
                    unsafe { std::mem::transmute(a.handler) };
                let second = if a.flags & fb_sa::SIGINFO != 0 {
                    (&raw mut fi) as usize
                } else {
                    0x10007
                };
                f(sig, second, &raw mut uc);
            }
        }
    }
    0
}

/// Sends FreeBSD signal `sig` to one thread: the calling thread (`is_self`) gets it
/// through [`raise`] (so signals without a host number run their handler too); another
/// thread through `send(host_signal)`, which returns 0 or a host errno value. Signal 0
/// only checks that the thread exists. Returns 0 or a FreeBSD errno value; a signal
/// without a host number cannot reach another thread (`EINVAL`).
pub fn signal_thread(is_self: bool, sig: i32, send: impl FnOnce(i32) -> i32) -> i32 {
    if !(0..=FB_NSIG).contains(&sig) {
        return EINVAL;
    }
    if sig != 0 && is_self {
        return if raise(sig) == 0 {
            0
        } else {
            unsafe { *errno::error() }
        };
    }
    let host = if sig == 0 { Some(0) } else { to_host(sig) };
    match host {
        Some(h) => errno::from_host(send(h)),
        None => EINVAL,
    }
}

/// `pthread_kill(thread, sig)` with a FreeBSD signal number; returns 0 or a FreeBSD errno
/// value (not -1). `pthread_t` is the host's.
#[nid("pthread_kill")]
pub extern "C" fn pthread_kill(thread: libc::pthread_t, sig: i32) -> i32 {
    let is_self = unsafe { libc::pthread_equal(thread, libc::pthread_self()) } != 0;
    signal_thread(is_self, sig, |h| unsafe { libc::pthread_kill(thread, h) })
}

/// FreeBSD `_SC_*` -> host `_SC_*` for the names with the same meaning on both.
fn sc_to_host(name: i32) -> Option<libc::c_int> {
    Some(match name {
        1 => libc::_SC_ARG_MAX,
        2 => libc::_SC_CHILD_MAX,
        3 => libc::_SC_CLK_TCK,
        4 => libc::_SC_NGROUPS_MAX,
        5 => libc::_SC_OPEN_MAX,
        6 => libc::_SC_JOB_CONTROL,
        7 => libc::_SC_SAVED_IDS,
        8 => libc::_SC_VERSION,
        15 => libc::_SC_LINE_MAX,
        16 => libc::_SC_RE_DUP_MAX,
        26 => libc::_SC_STREAM_MAX,
        27 => libc::_SC_TZNAME_MAX,
        28 => libc::_SC_ASYNCHRONOUS_IO,
        29 => libc::_SC_MAPPED_FILES,
        30 => libc::_SC_MEMLOCK,
        31 => libc::_SC_MEMLOCK_RANGE,
        32 => libc::_SC_MEMORY_PROTECTION,
        36 => libc::_SC_REALTIME_SIGNALS,
        37 => libc::_SC_SEMAPHORES,
        38 => libc::_SC_FSYNC,
        41 => libc::_SC_TIMERS,
        45 => libc::_SC_DELAYTIMER_MAX,
        47 => libc::_SC_PAGESIZE,
        48 => libc::_SC_RTSIG_MAX,
        49 => libc::_SC_SEM_NSEMS_MAX,
        50 => libc::_SC_SEM_VALUE_MAX,
        51 => libc::_SC_SIGQUEUE_MAX,
        52 => libc::_SC_TIMER_MAX,
        56 => libc::_SC_IOV_MAX,
        57 => libc::_SC_NPROCESSORS_CONF,
        58 => libc::_SC_NPROCESSORS_ONLN,
        67 => libc::_SC_CLOCK_SELECTION,
        68 => libc::_SC_CPUTIME,
        70 => libc::_SC_GETGR_R_SIZE_MAX,
        71 => libc::_SC_GETPW_R_SIZE_MAX,
        72 => libc::_SC_HOST_NAME_MAX,
        73 => libc::_SC_LOGIN_NAME_MAX,
        74 => libc::_SC_MONOTONIC_CLOCK,
        82 => libc::_SC_THREAD_ATTR_STACKADDR,
        83 => libc::_SC_THREAD_ATTR_STACKSIZE,
        84 => libc::_SC_THREAD_CPUTIME,
        85 => libc::_SC_THREAD_DESTRUCTOR_ITERATIONS,
        86 => libc::_SC_THREAD_KEYS_MAX,
        91 => libc::_SC_THREAD_SAFE_FUNCTIONS,
        93 => libc::_SC_THREAD_STACK_MIN,
        94 => libc::_SC_THREAD_THREADS_MAX,
        96 => libc::_SC_THREADS,
        107 => libc::_SC_ATEXIT_MAX,
        121 => libc::_SC_PHYS_PAGES,
        _ => return None,
    })
}

/// `sysconf(name)` with FreeBSD `_SC_*` numbers. Unknown names: -1 and `EINVAL`.
#[nid("sysconf")]
pub extern "C" fn sysconf(name: i32) -> libc::c_long {
    // FreeBSD's own limit where the host's value would mislead a FreeBSD program: its
    // real-time signals are 65..=126.
    if name == 48 {
        return libc::c_long::from(FB_SIGRTMAX - FB_SIGRTMIN + 1);
    }
    let Some(h) = sc_to_host(name) else {
        errno::set(EINVAL);
        return -1;
    };
    unsafe { libc::sysconf(h) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::time::{Duration, Instant};

    #[test]
    fn signal_numbers_translate_both_ways() {
        assert_eq!(to_host(30), Some(libc::SIGUSR1));
        assert_eq!(to_host(31), Some(libc::SIGUSR2));
        assert_eq!(to_host(10), Some(libc::SIGBUS));
        assert_eq!(to_host(12), Some(libc::SIGSYS));
        assert_eq!(to_host(20), Some(libc::SIGCHLD));
        assert_eq!(to_host(7), None, "SIGEMT");
        assert_eq!(to_host(29), None, "SIGINFO");
        assert_eq!(to_host(32), None, "SIGTHR");
        assert_eq!(to_host(65), Some(libc::SIGRTMIN()));
        assert_eq!(from_host(libc::SIGSTKFLT), None);
        assert_eq!(from_host(libc::SIGPWR), None);
        let mut mapped = 0;
        for fb in 1..=FB_NSIG {
            if let Some(h) = to_host(fb) {
                assert_eq!(from_host(h), Some(fb), "FreeBSD {fb} -> host {h}");
                mapped += 1;
            }
        }
        // 29 classic signals + every host real-time signal glibc leaves to programs.
        assert_eq!(mapped, 29 + (libc::SIGRTMAX() - libc::SIGRTMIN() + 1));
    }

    #[test]
    fn sets_keep_untranslatable_members_apart() {
        let mut fb = [0u32; 4];
        for s in [2, 7, 30, 65, 128] {
            fb_add(&mut fb, s);
        }
        assert_eq!(fb, [0x2000_0042, 0, 1, 0x8000_0000]);
        let (host, rest) = set_to_host(&fb);
        unsafe {
            assert_eq!(libc::sigismember(&host, libc::SIGINT), 1);
            assert_eq!(libc::sigismember(&host, libc::SIGUSR1), 1);
            assert_eq!(libc::sigismember(&host, libc::SIGRTMIN()), 1);
            assert_eq!(libc::sigismember(&host, libc::SIGBUS), 0);
        }
        let mut want_rest = [0u32; 4];
        fb_add(&mut want_rest, 7);
        fb_add(&mut want_rest, 128);
        assert_eq!(rest, want_rest);
        let back = set_from_host(&host);
        for i in 0..4 {
            assert_eq!(back[i] | rest[i], fb[i]);
        }
    }

    #[test]
    fn flags_translate() {
        assert_eq!(
            flags_to_host(fb_sa::SIGINFO | fb_sa::RESTART),
            libc::SA_SIGINFO | libc::SA_RESTART
        );
        assert_eq!(
            flags_from_host(libc::SA_ONSTACK | libc::SA_NODEFER | libc::SA_RESETHAND),
            fb_sa::ONSTACK | fb_sa::NODEFER | fb_sa::RESETHAND
        );
        assert_eq!(std::mem::size_of::<FbSigaction>(), 32);
        assert_eq!(std::mem::size_of::<FbSiginfo>(), 80);
        assert_eq!(std::mem::size_of::<FbUcontext>(), 880);
    }

    static GOT_SIG: AtomicI32 = AtomicI32::new(0);
    static GOT_CODE: AtomicI32 = AtomicI32::new(0);
    static GOT_PID: AtomicI32 = AtomicI32::new(0);
    static GOT_RIP: AtomicU64 = AtomicU64::new(0);

    extern "C" fn info_handler(sig: i32, info: *mut FbSiginfo, uc: *mut FbUcontext) {
        let i = unsafe { &*info };
        GOT_CODE.store(i.code, Ordering::SeqCst);
        GOT_PID.store(i.pid, Ordering::SeqCst);
        GOT_RIP.store(unsafe { (*uc).0[UC_RIP] }, Ordering::SeqCst);
        GOT_SIG.store(sig * 1000 + i.signo, Ordering::SeqCst);
    }

    #[test]
    fn siginfo_handler_gets_freebsd_numbers() {
        let act = FbSigaction {
            handler: info_handler as *const () as usize,
            flags: fb_sa::SIGINFO,
            mask: [0; 4],
        };
        let mut old = FbSigaction::default();
        assert_eq!(unsafe { sigaction(30, &act, &mut old) }, 0);
        assert_eq!(old.handler, SIG_DFL);
        // The host sees our trampoline on SIGUSR1.
        let mut host: libc::sigaction = unsafe { std::mem::zeroed() };
        unsafe { libc::sigaction(libc::SIGUSR1, std::ptr::null(), &mut host) };
        assert_eq!(host.sa_sigaction, host_handler as *const () as usize);
        assert_ne!(host.sa_flags & libc::SA_SIGINFO, 0);

        assert_eq!(raise(30), 0);
        assert_eq!(GOT_SIG.load(Ordering::SeqCst), 30 * 1000 + 30);
        assert_eq!(GOT_CODE.load(Ordering::SeqCst), 0x10007, "SI_LWP");
        assert_eq!(GOT_PID.load(Ordering::SeqCst), unsafe { libc::getpid() });
        assert_ne!(GOT_RIP.load(Ordering::SeqCst), 0);

        // A process-directed kill arrives as SI_USER (on whichever thread).
        GOT_SIG.store(0, Ordering::SeqCst);
        unsafe { libc::kill(libc::getpid(), libc::SIGUSR1) };
        let t = Instant::now();
        while GOT_SIG.load(Ordering::SeqCst) == 0 && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(GOT_SIG.load(Ordering::SeqCst), 30 * 1000 + 30);
        assert_eq!(GOT_CODE.load(Ordering::SeqCst), 0x10001, "SI_USER");

        // oact reports the guest handler, not the trampoline; restoring works.
        let dfl = FbSigaction::default();
        let mut prev = FbSigaction::default();
        assert_eq!(unsafe { sigaction(30, &dfl, &mut prev) }, 0);
        assert_eq!(prev.handler, act.handler);
        assert_eq!(prev.flags, fb_sa::SIGINFO);
    }

    extern "C" fn ill_handler(sig: i32, code: usize, uc: *mut FbUcontext) {
        let uc = unsafe { &mut *uc };
        assert_eq!(sig, 4);
        GOT_CODE.store(code as i32, Ordering::SeqCst);
        // Skip the 2-byte ud2 and hand a value back through the saved rax.
        uc.0[UC_RIP] += 2;
        uc.0[UC_RAX] = uc.0[UC_RAX] * 2 + 1;
    }

    #[test]
    fn plain_handler_edits_the_interrupted_context() {
        let act = FbSigaction {
            handler: ill_handler as *const () as usize,
            flags: 0,
            mask: [0; 4],
        };
        assert_eq!(unsafe { sigaction(4, &act, std::ptr::null_mut()) }, 0);
        let out: u64;
        unsafe {
            std::arch::asm!("mov rax, 20", "ud2", out("rax") out);
        }
        assert_eq!(out, 41);
        // ud2 raises ILL_ILLOPN, 2 on both systems.
        assert_eq!(GOT_CODE.load(Ordering::SeqCst), 2);
        assert_eq!(
            unsafe { sigaction(4, &FbSigaction::default(), std::ptr::null_mut()) },
            0
        );
    }

    static VIRT_HITS: AtomicI32 = AtomicI32::new(0);
    extern "C" fn virt_handler(sig: i32, _code: usize, _uc: *mut FbUcontext) {
        VIRT_HITS.fetch_add(sig, Ordering::SeqCst);
    }

    #[test]
    fn untranslatable_signals_keep_their_state() {
        let act = FbSigaction {
            handler: virt_handler as *const () as usize,
            flags: fb_sa::RESTART,
            mask: [1, 0, 0, 0],
        };
        assert_eq!(unsafe { sigaction(29, &act, std::ptr::null_mut()) }, 0);
        let mut old = FbSigaction::default();
        assert_eq!(unsafe { sigaction(29, std::ptr::null(), &mut old) }, 0);
        assert_eq!(old, act);
        assert_eq!(raise(29), 0);
        assert_eq!(VIRT_HITS.load(Ordering::SeqCst), 29);

        // Blocked: not run.
        let mut set = [0u32; 4];
        fb_add(&mut set, 29);
        assert_eq!(unsafe { sigprocmask(1, &set, std::ptr::null_mut()) }, 0);
        assert_eq!(raise(29), 0);
        assert_eq!(VIRT_HITS.load(Ordering::SeqCst), 29);
        let mut cur = [0u32; 4];
        assert_eq!(unsafe { sigprocmask(1, std::ptr::null(), &mut cur) }, 0);
        assert!(fb_has(&cur, 29));
        assert_eq!(unsafe { sigprocmask(2, &set, std::ptr::null_mut()) }, 0);
    }

    #[test]
    fn sigprocmask_blocks_the_host_signal() {
        // Runs on its own thread: the mask is per thread.
        std::thread::spawn(|| {
            let mut set = [0u32; 4];
            fb_add(&mut set, 31); // SIGUSR2
            fb_add(&mut set, 10); // SIGBUS
            let mut old = [0u32; 4];
            assert_eq!(unsafe { sigprocmask(1, &set, &mut old) }, 0);
            let mut host: libc::sigset_t = unsafe { std::mem::zeroed() };
            unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut host) };
            unsafe {
                assert_eq!(libc::sigismember(&host, libc::SIGUSR2), 1);
                assert_eq!(libc::sigismember(&host, libc::SIGBUS), 1);
                assert_eq!(libc::sigismember(&host, libc::SIGUSR1), 0);
            }
            let mut now = [0u32; 4];
            assert_eq!(unsafe { sigprocmask(3, &old, &mut now) }, 0);
            assert_eq!(now[0] & (1 << 30 | 1 << 9), 1 << 30 | 1 << 9);
            assert_eq!(unsafe { sigprocmask(0, &set, std::ptr::null_mut()) }, -1);
            assert_eq!(unsafe { *crate::errno::error() }, EINVAL);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn sysconf_uses_freebsd_names() {
        assert_eq!(sysconf(47), unsafe { libc::sysconf(libc::_SC_PAGESIZE) });
        assert_eq!(sysconf(47), 4096);
        assert_eq!(sysconf(58), unsafe {
            libc::sysconf(libc::_SC_NPROCESSORS_ONLN)
        });
        assert_eq!(sysconf(57), unsafe {
            libc::sysconf(libc::_SC_NPROCESSORS_CONF)
        });
        assert_eq!(sysconf(3), 100);
        assert_eq!(sysconf(5), unsafe { libc::sysconf(libc::_SC_OPEN_MAX) });
        assert_eq!(sysconf(48), 62);
        crate::errno::set(0);
        assert_eq!(sysconf(9999), -1);
        assert_eq!(unsafe { *crate::errno::error() }, EINVAL);
    }
}
