//! FreeBSD system calls made by raw `syscall` instructions in guest code.
//!
//! Statically linked C libraries (the OpenOrbis musl port in older homebrew) issue
//! system calls themselves. A Linux kernel would read FreeBSD numbers as Linux ones, so
//! each 2-byte `syscall` (`0F 05`) is meant to be replaced by the 2-byte [`TRAP`]
//! (`UD0`, `0F FF`, which compilers never emit). Executing it raises SIGILL; the libkernel
//! signal handler calls [`service`], which reads the FreeBSD system call number and
//! arguments from the interrupted registers, runs the libkernel implementation of that
//! call, and returns the FreeBSD way: `rax` = result with carry clear, or `rax` = errno
//! with carry set. `rcx` and `r11` are clobbered as `syscall` clobbers them.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::{at, errno, files, fs, memory, signal, syscall_names, time};

/// The instruction that stands for `syscall` in relinked code (`UD0` without a ModRM
/// byte is decoded up to the next byte, but the trap happens at its first byte).
pub const TRAP: [u8; 2] = [0x0F, 0xFF];

/// FreeBSD `EOPNOTSUPP`.
const EOPNOTSUPP: i32 = 45;
/// FreeBSD `ENOSYS`.
const ENOSYS: i32 = 78;
/// FreeBSD `ESRCH`.
const ESRCH: i32 = 3;
/// FreeBSD `EFAULT`.
const EFAULT: i32 = 14;
/// FreeBSD `EINVAL`.
const EINVAL: i32 = 22;
/// FreeBSD `ENOMEM`.
const ENOMEM: i32 = 12;
/// FreeBSD `EPERM`.
const EPERM: i32 = 1;
/// FreeBSD `ENOTTY`.
const ENOTTY: i32 = 25;
/// FreeBSD `ENOENT`.
const ENOENT: i32 = 2;
/// FreeBSD `ETIMEDOUT`.
const ETIMEDOUT: i32 = 60;
use at::AT_FDCWD;

/// The FreeBSD name of system call `nr` (`None` for reserved numbers and for the consoles'
/// own calls, 532 and up).
pub fn name(nr: u64) -> Option<&'static str> {
    usize::try_from(nr)
        .ok()
        .and_then(|i| syscall_names::NAMES.get(i))
        .copied()
        .filter(|n| !n.is_empty())
}

/// The consoles' own kernel calls served here (homebrew resolves system libraries with them).
const SONY_CALLS: &[(u64, &str)] = &[
    (591, "dynlib_dlsym"),
    (594, "dynlib_load_prx"),
    (595, "dynlib_unload_prx"),
];

/// An SCE error code (0x8002xxxx) as the FreeBSD errno a system call returns.
fn sce_to_errno(r: i32) -> Result<u64, i32> {
    if r >= 0 {
        Ok(r as u64)
    } else {
        Err((r as u32).wrapping_sub(crate::SCE_KERNEL_ERROR_BASE as u32) as i32)
    }
}

/// Libkernel calls follow the C convention (-1 and errno); the FreeBSD kernel ABI wants
/// the errno value itself.
fn posix(r: i64) -> Result<u64, i32> {
    if r == -1 {
        Err(unsafe { *errno::error() })
    } else {
        Ok(r as u64)
    }
}

/// A host call's result (-1 and the host errno) in FreeBSD terms.
fn host(r: i64) -> Result<u64, i32> {
    if r == -1 {
        Err(errno::from_host(
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        ))
    } else {
        Ok(r as u64)
    }
}

/// Runs FreeBSD system call `nr` with its six register arguments
/// (`rdi, rsi, rdx, r10, r8, r9`). `Err` holds a FreeBSD errno value. A call libkernel
/// does not serve is reported once on stderr (see [`report_unknown`]) and fails with
/// ENOSYS, as the FreeBSD kernel answers a number it lacks.
pub fn dispatch(nr: u64, a: [u64; 6]) -> Result<u64, i32> {
    dispatch_at(nr, a, 0, None)
}

/// `mask`: the interrupted program's signal mask, when called from the trap handler.
fn dispatch_at(
    nr: u64,
    a: [u64; 6],
    site: usize,
    mask: Option<&libc::sigset_t>,
) -> Result<u64, i32> {
    let i = |k: usize| a[k] as i32;
    let path = |k: usize| a[k] as *const libc::c_char;
    unsafe {
        match nr {
            1 => crate::thread::exit_(i(0)),
            3 => posix(fs::read(i(0), a[1] as *mut u8, a[2] as usize) as i64),
            4 => posix(fs::write(i(0), a[1] as *const u8, a[2] as usize) as i64),
            5 => posix(i64::from(fs::open(path(0), i(1), a[2] as u32))),
            6 => posix(i64::from(fs::close(i(0)))),
            // wait4: status words and struct rusage have the same layout; WNOHANG 1 and
            // WUNTRACED 2 match, WCONTINUED is 4 on FreeBSD.
            7 => {
                let o = i(2);
                if o & !7 != 0 {
                    return Err(EINVAL);
                }
                let host_opts = (o & 3) | if o & 4 != 0 { libc::WCONTINUED } else { 0 };
                host(i64::from(libc::wait4(
                    i(0),
                    a[1] as *mut i32,
                    host_opts,
                    a[3] as *mut libc::rusage,
                )))
            }
            // link(2) follows a symlink at the old name on FreeBSD.
            9 => at::linkat(AT_FDCWD, path(0), AT_FDCWD, path(1), at::AT_SYMLINK_FOLLOW),
            10 => posix(i64::from(fs::unlink(path(0)))),
            12 => posix(i64::from(fs::chdir(path(0)))),
            14 => at::mknodat(AT_FDCWD, path(0), a[1] as u32, a[2] as u32),
            15 => at::fchmodat(AT_FDCWD, path(0), a[1] as u32, 0),
            16 => at::fchownat(AT_FDCWD, path(0), a[1] as u32, a[2] as u32, 0),
            20 => Ok(crate::getpid() as u64),
            24 => Ok(u64::from(libc::getuid())),
            25 => Ok(u64::from(libc::geteuid())),
            33 => posix(i64::from(files::access(path(0), i(1)))),
            37 => posix(i64::from(files::kill(i(0), i(1)))),
            39 => Ok(libc::getppid() as u64),
            41 => posix(i64::from(files::dup(i(0)))),
            43 => Ok(u64::from(libc::getegid())),
            47 => Ok(u64::from(libc::getgid())),
            53 => sigaltstack(a[0] as *const FbStack, a[1] as *mut FbStack),
            54 => ioctl(i(0), a[1], a[2] as *mut u8),
            57 => at::symlinkat(path(0), AT_FDCWD, path(1)),
            58 => at::readlinkat(AT_FDCWD, path(0), a[1] as *mut u8, a[2] as usize),
            60 => Ok(u64::from(libc::umask(a[0] as libc::mode_t))),
            65 => msync(a[0] as usize, a[1] as usize, i(2)),
            // sbrk: the FreeBSD kernel answers EOPNOTSUPP too; C libraries then use mmap.
            69 => Err(EOPNOTSUPP),
            73 => posix(i64::from(memory::munmap(a[0] as usize, a[1] as usize))),
            74 => posix(i64::from(memory::mprotect(
                a[0] as usize,
                a[1] as usize,
                i(2),
            ))),
            75 => posix(i64::from(memory::madvise(
                a[0] as usize,
                a[1] as usize,
                i(2),
            ))),
            // setitimer/getitimer: struct itimerval and ITIMER_REAL/VIRTUAL/PROF (0/1/2)
            // match; SIGALRM is 14 on both.
            83 if (0..=2).contains(&i(0)) => host(libc::syscall(
                libc::SYS_setitimer,
                i(0),
                a[1] as *const libc::itimerval,
                a[2] as *mut libc::itimerval,
            )),
            86 if (0..=2).contains(&i(0)) => host(libc::syscall(
                libc::SYS_getitimer,
                i(0),
                a[1] as *mut libc::itimerval,
            )),
            83 | 86 => Err(EINVAL),
            89 => Ok(libc::getdtablesize() as u64),
            90 => posix(i64::from(files::dup2(i(0), i(1)))),
            92 => posix(i64::from(fs::fcntl(i(0), i(1), a[2] as i64))),
            95 => posix(i64::from(files::fsync(i(0)))),
            116 => posix(i64::from(time::gettimeofday(
                a[0] as *mut libc::timeval,
                std::ptr::null_mut(),
            ))),
            // struct rusage has the same layout; RUSAGE_SELF 0, CHILDREN -1, THREAD 1 on both.
            117 => host(i64::from(libc::getrusage(i(0), a[1] as *mut libc::rusage))),
            120 => posix(fs::readv(i(0), a[1] as *const libc::iovec, i(2)) as i64),
            121 => posix(fs::writev(i(0), a[1] as *const libc::iovec, i(2)) as i64),
            128 => posix(i64::from(fs::rename(path(0), path(1)))),
            132 => at::mkfifoat(AT_FDCWD, path(0), a[1] as u32),
            136 => posix(i64::from(files::mkdir(path(0), a[1] as u32))),
            137 => posix(i64::from(files::rmdir(path(0)))),
            138 => at::futimesat(AT_FDCWD, path(0), a[1] as *const [i64; 4]),
            165 => sysarch(i(0), a[1] as *mut u64),
            188 => posix(i64::from(fs::stat(path(0), a[1] as *mut fs::GuestStat))),
            189 => posix(i64::from(fs::fstat(i(0), a[1] as *mut fs::GuestStat))),
            190 => lstat(path(0), a[1] as *mut fs::GuestStat),
            194 => getrlimit(i(0), a[1] as *mut [u64; 2]),
            195 => setrlimit(i(0), a[1] as *const [u64; 2]),
            196 => posix(i64::from(files::getdirentries(
                i(0),
                a[1] as *mut u8,
                i(2),
                a[3] as *mut i64,
            ))),
            202 => sysctl(
                a[0] as *const i32,
                a[1] as u32,
                a[2] as *mut u8,
                a[3] as *mut usize,
                a[4] as *const u8,
                a[5] as usize,
            ),
            209 => posix(i64::from(fs::poll(
                a[0] as *mut libc::pollfd,
                a[1] as u32,
                i(2),
            ))),
            232 => posix(i64::from(time::clock_gettime(
                i(0),
                a[1] as *mut libc::timespec,
            ))),
            234 => posix(i64::from(files::clock_getres(
                i(0),
                a[1] as *mut libc::timespec,
            ))),
            240 => posix(i64::from(time::nanosleep(
                a[0] as *const libc::timespec,
                a[1] as *mut libc::timespec,
            ))),
            // The program runs with its user's own rights: never set-user-id.
            253 => Ok(0),
            254 => at::fchownat(
                AT_FDCWD,
                path(0),
                a[1] as u32,
                a[2] as u32,
                at::AT_SYMLINK_NOFOLLOW,
            ),
            272 => posix(i64::from(files::getdents(i(0), a[1] as *mut u8, i(2)))),
            326 => match fs::aps5_getcwd(a[0] as *mut u8, a[1] as usize) {
                n if n < 0 => Err(34), // ERANGE
                _ => Ok(0),
            },
            331 => posix(i64::from(crate::thread::sched_yield())),
            340 => posix(i64::from(signal::sigprocmask(
                i(0),
                a[1] as *const signal::FbSigset,
                a[2] as *mut signal::FbSigset,
            ))),
            341 => {
                let set = a[0] as *const signal::FbSigset;
                if set.is_null() {
                    return Err(EFAULT);
                }
                let (host_set, _) = signal::set_to_host(&set.read_unaligned());
                libc::sigsuspend(&host_set);
                Err(4) // EINTR, as sigsuspend always returns
            }
            343 => {
                let out = a[0] as *mut signal::FbSigset;
                if out.is_null() {
                    return Err(EFAULT);
                }
                let mut p: libc::sigset_t = std::mem::zeroed();
                host(i64::from(libc::sigpending(&mut p)))?;
                out.write_unaligned(signal::set_from_host(&p));
                Ok(0)
            }
            416 => posix(i64::from(signal::sigaction(
                i(0),
                a[1] as *const signal::FbSigaction,
                a[2] as *mut signal::FbSigaction,
            ))),
            // thr_exit(long *state) and thr_new(param, size): thr.rs.
            431 => crate::thr::thr_exit(a[0] as *mut i64, mask),
            455 => crate::thr::thr_new(a[0] as *const u8, i(1), mask),
            // thr_self(long *id): thread ids are host thread ids (as pthread_getthreadid_np).
            432 => {
                let id = a[0] as *mut i64;
                if id.is_null() {
                    return Err(EFAULT);
                }
                id.write_unaligned(i64::from(libc::gettid()));
                Ok(0)
            }
            // thr_kill(long id, int sig). id -1 (every thread of the process) is refused.
            433 => {
                let Ok(tid) = i32::try_from(a[0] as i64) else {
                    return Err(ESRCH);
                };
                if tid <= 0 {
                    return Err(if tid == -1 { EINVAL } else { ESRCH });
                }
                let is_self = tid == libc::gettid();
                match signal::signal_thread(is_self, i(1), |h| {
                    let r = libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, h);
                    if r == 0 {
                        0
                    } else {
                        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
                    }
                }) {
                    0 => Ok(0),
                    e => Err(e),
                }
            }
            // thr_set_name(id, name): the calling thread (its own id, or -1) names its host
            // thread (15 bytes kept, as Linux keeps).
            464 => {
                let id = a[0] as i64;
                if id != -1 && id != i64::from(libc::gettid()) {
                    return Err(ESRCH);
                }
                if a[1] == 0 {
                    return Err(EFAULT);
                }
                let mut n = [0u8; 16];
                let src = std::ffi::CStr::from_ptr(path(1)).to_bytes();
                let k = src.len().min(15);
                n[..k].copy_from_slice(&src[..k]);
                host(i64::from(libc::prctl(libc::PR_SET_NAME, n.as_ptr())))
            }
            454 => umtx_op(a[0] as *mut u8, i(1), a[2], a[3], a[4] as *const u8, site),
            475 => posix(files::pread(i(0), a[1] as *mut u8, a[2] as usize, a[3] as i64) as i64),
            476 => posix(files::pwrite(i(0), a[1] as *const u8, a[2] as usize, a[3] as i64) as i64),
            477 => {
                let p = memory::mmap(a[0] as usize, a[1] as usize, i(2), i(3), i(4), a[5] as i64);
                if p == usize::MAX {
                    Err(*errno::error())
                } else {
                    Ok(p as u64)
                }
            }
            478 => posix(fs::lseek(i(0), a[1] as i64, i(2))),
            480 => posix(i64::from(files::ftruncate(i(0), a[1] as i64))),
            // The *at family (at.rs): relative to AT_FDCWD or to a guest directory
            // descriptor, resolved and confined like every guest path.
            489 => at::faccessat(i(0), path(1), i(2), i(3)),
            490 => at::fchmodat(i(0), path(1), a[2] as u32, i(3)),
            491 => at::fchownat(i(0), path(1), a[2] as u32, a[3] as u32, i(4)),
            493 => at::fstatat(i(0), path(1), a[2] as *mut fs::GuestStat, i(3)),
            494 => at::futimesat(i(0), path(1), a[2] as *const [i64; 4]),
            495 => at::linkat(i(0), path(1), i(2), path(3), i(4)),
            496 => at::mkdirat(i(0), path(1), a[2] as u32),
            497 => at::mkfifoat(i(0), path(1), a[2] as u32),
            498 => at::mknodat(i(0), path(1), a[2] as u32, a[3] as u32),
            499 => at::openat(i(0), path(1), i(2), a[3] as u32),
            500 => at::readlinkat(i(0), path(1), a[2] as *mut u8, a[3] as usize),
            501 => at::renameat(i(0), path(1), i(2), path(3)),
            502 => at::symlinkat(path(0), i(1), path(2)),
            503 => at::unlinkat(i(0), path(1), i(2)),
            // dynlib_dlsym(handle, name, &addr): PS5 payloads resolve libkernel and libc
            // functions with it (crate::payload), homebrew system functions.
            591 => {
                crate::payload::dynlib_dlsym(i(0), a[1] as *const libc::c_char, a[2] as *mut usize)
            }
            // dynlib_load_prx(path, flags, int *handle, ...): libkernel's module loading (a
            // system library's name gives the host PRX; a guest module also runs its
            // module_start here, where the console runs it at sceKernelStartModule).
            594 => {
                let out = a[2] as *mut i32;
                if out.is_null() {
                    return Err(EFAULT);
                }
                let h = sce_to_errno(crate::module::sce_kernel_load_start_module(
                    path(0),
                    0,
                    std::ptr::null(),
                    0,
                    std::ptr::null(),
                    std::ptr::null_mut(),
                ))?;
                out.write_unaligned(h as i32);
                Ok(0)
            }
            595 => sce_to_errno(crate::module::sce_kernel_stop_unload_module(
                i(0),
                0,
                std::ptr::null(),
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
            )),
            _ => {
                report_unknown(nr, site, "");
                Err(ENOSYS)
            }
        }
    }
}

/// `lstat`: `stat` of the link itself (an `O_PATH | O_NOFOLLOW` descriptor, confined like
/// every guest path).
unsafe fn lstat(path: *const libc::c_char, out: *mut fs::GuestStat) -> Result<u64, i32> {
    if path.is_null() || out.is_null() {
        return Err(EFAULT);
    }
    let guest = unsafe { std::ffi::CStr::from_ptr(path) }.to_bytes();
    let r = fs::resolve(guest)?;
    let fd = fs::open_beneath(r.root, &r.rel, libc::O_PATH | libc::O_NOFOLLOW, 0)?;
    posix(i64::from(unsafe {
        fs::fstat(std::os::fd::AsRawFd::as_raw_fd(&fd), out)
    }))
}

/// FreeBSD `stack_t` (`ss_size` before `ss_flags`, unlike Linux).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct FbStack {
    pub sp: u64,
    pub size: u64,
    pub flags: i32,
}

/// `sigaltstack`: SS_ONSTACK is 1 on both, SS_DISABLE 4 on FreeBSD and 2 on Linux.
unsafe fn sigaltstack(ss: *const FbStack, old: *mut FbStack) -> Result<u64, i32> {
    let new = unsafe { ss.as_ref() }.map(|s| libc::stack_t {
        ss_sp: s.sp as *mut libc::c_void,
        ss_flags: if s.flags & 4 != 0 {
            libc::SS_DISABLE
        } else {
            0
        },
        ss_size: s.size as usize,
    });
    let mut prev: libc::stack_t = unsafe { std::mem::zeroed() };
    host(i64::from(unsafe {
        libc::sigaltstack(
            new.as_ref().map_or(std::ptr::null(), |s| s as *const _),
            &mut prev,
        )
    }))?;
    if let Some(o) = unsafe { old.as_mut() } {
        let mut flags = 0;
        if prev.ss_flags & libc::SS_ONSTACK != 0 {
            flags |= 1;
        }
        if prev.ss_flags & libc::SS_DISABLE != 0 {
            flags |= 4;
        }
        *o = FbStack {
            sp: prev.ss_sp as u64,
            size: prev.ss_size as u64,
            flags,
        };
    }
    Ok(0)
}

/// FreeBSD `TIOCGETA` (`_IOR('t', 19, struct termios)`), what `isatty` and `tcgetattr` ask.
const TIOCGETA: u64 = 0x402C_7413;

/// FreeBSD `struct termios` (44 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct FbTermios {
    pub iflag: u32,
    pub oflag: u32,
    pub cflag: u32,
    pub lflag: u32,
    pub cc: [u8; 20],
    pub ispeed: u32,
    pub ospeed: u32,
}

/// (FreeBSD bit, host bit) pairs of the termios flags whose values differ.
const IFLAGS: &[(u32, libc::tcflag_t)] = &[
    (0x1, libc::IGNBRK),
    (0x2, libc::BRKINT),
    (0x4, libc::IGNPAR),
    (0x8, libc::PARMRK),
    (0x10, libc::INPCK),
    (0x20, libc::ISTRIP),
    (0x40, libc::INLCR),
    (0x80, libc::IGNCR),
    (0x100, libc::ICRNL),
    (0x200, libc::IXON),
    (0x400, libc::IXOFF),
    (0x800, libc::IXANY),
    (0x2000, libc::IMAXBEL),
];
const OFLAGS: &[(u32, libc::tcflag_t)] = &[(0x1, libc::OPOST), (0x2, libc::ONLCR)];
const LFLAGS: &[(u32, libc::tcflag_t)] = &[
    (0x1, libc::ECHOKE),
    (0x2, libc::ECHOE),
    (0x4, libc::ECHOK),
    (0x8, libc::ECHO),
    (0x10, libc::ECHONL),
    (0x20, libc::ECHOPRT),
    (0x40, libc::ECHOCTL),
    (0x80, libc::ISIG),
    (0x100, libc::ICANON),
    (0x400, libc::IEXTEN),
    (0x40_0000, libc::TOSTOP),
    (0x8000_0000, libc::NOFLSH),
];
/// (FreeBSD c_cc index, host index).
const CC: &[(usize, usize)] = &[
    (0, libc::VEOF),
    (1, libc::VEOL),
    (2, libc::VEOL2),
    (3, libc::VERASE),
    (4, libc::VWERASE),
    (5, libc::VKILL),
    (6, libc::VREPRINT),
    (8, libc::VINTR),
    (9, libc::VQUIT),
    (10, libc::VSUSP),
    (12, libc::VSTART),
    (13, libc::VSTOP),
    (14, libc::VLNEXT),
    (15, libc::VDISCARD),
    (16, libc::VMIN),
    (17, libc::VTIME),
];

fn flags_from_host(h: libc::tcflag_t, table: &[(u32, libc::tcflag_t)]) -> u32 {
    table
        .iter()
        .filter(|(_, hb)| h & hb != 0)
        .fold(0, |f, (fb, _)| f | fb)
}

/// A host termios as FreeBSD's: the control-mode bits (CSIZE, CSTOPB, CREAD, PARENB,
/// PARODD, HUPCL, CLOCAL) sit 4 bits higher there; speeds are plain numbers.
pub fn termios_from_host(t: &libc::termios) -> FbTermios {
    let mut cc = [0u8; 20];
    for &(fb, h) in CC {
        cc[fb] = t.c_cc[h];
    }
    let speed = |s: libc::speed_t| -> u32 {
        match s {
            libc::B0 => 0,
            libc::B1200 => 1200,
            libc::B2400 => 2400,
            libc::B4800 => 4800,
            libc::B9600 => 9600,
            libc::B19200 => 19200,
            libc::B38400 => 38400,
            libc::B57600 => 57600,
            libc::B115200 => 115_200,
            libc::B230400 => 230_400,
            _ => 38400,
        }
    };
    FbTermios {
        iflag: flags_from_host(t.c_iflag, IFLAGS),
        oflag: flags_from_host(t.c_oflag, OFLAGS),
        cflag: (t.c_cflag & 0xFF0) << 4,
        lflag: flags_from_host(t.c_lflag, LFLAGS),
        cc,
        ispeed: speed(unsafe { libc::cfgetispeed(t) }),
        ospeed: speed(unsafe { libc::cfgetospeed(t) }),
    }
}

/// `ioctl`: `TIOCGETA` on a terminal answers its settings (so `isatty` works); every other
/// request goes to libkernel's `ioctl` (no console device exists here).
unsafe fn ioctl(fd: i32, req: u64, arg: *mut u8) -> Result<u64, i32> {
    if req & 0xFFFF_FFFF == TIOCGETA {
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(fd, &mut t) } != 0 {
            return Err(match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EBADF) => 9,
                _ => ENOTTY,
            });
        }
        if arg.is_null() {
            return Err(EFAULT);
        }
        unsafe { (arg as *mut FbTermios).write_unaligned(termios_from_host(&t)) };
        return Ok(0);
    }
    posix(i64::from(fs::ioctl(fd, req, arg as usize)))
}

/// `msync`: MS_ASYNC 1 and MS_INVALIDATE 2 on both; MS_SYNC is 0 on FreeBSD, 4 on Linux.
unsafe fn msync(addr: usize, len: usize, flags: i32) -> Result<u64, i32> {
    if flags & !3 != 0 {
        return Err(EINVAL);
    }
    let mut h = 0;
    if flags & 1 != 0 {
        h |= libc::MS_ASYNC;
    } else {
        h |= libc::MS_SYNC;
    }
    if flags & 2 != 0 {
        h |= libc::MS_INVALIDATE;
    }
    host(i64::from(unsafe {
        libc::msync(addr as *mut libc::c_void, len, h)
    }))
}

/// Linux `arch_prctl` codes.
const ARCH_GET_FS: i32 = 0x1003;
const ARCH_GET_GS: i32 = 0x1004;

/// `sysarch`: AMD64_GET_FSBASE (128) and AMD64_GET_GSBASE (130) answer; setting them is
/// refused: the thread pointer belongs to the host C library that runs the program.
unsafe fn sysarch(op: i32, out: *mut u64) -> Result<u64, i32> {
    let code = match op {
        128 => ARCH_GET_FS,
        130 => ARCH_GET_GS,
        _ => return Err(EINVAL),
    };
    if out.is_null() {
        return Err(EFAULT);
    }
    let mut v: u64 = 0;
    host(unsafe { libc::syscall(libc::SYS_arch_prctl, code, &mut v) })?;
    unsafe { out.write_unaligned(v) };
    Ok(0)
}

/// FreeBSD resource numbers -> host ones (RLIMIT_CPU..RSS match; NPROC/NOFILE/MEMLOCK move).
fn rlimit_to_host(r: i32) -> Option<libc::__rlimit_resource_t> {
    Some(match r {
        0 => libc::RLIMIT_CPU,
        1 => libc::RLIMIT_FSIZE,
        2 => libc::RLIMIT_DATA,
        3 => libc::RLIMIT_STACK,
        4 => libc::RLIMIT_CORE,
        5 => libc::RLIMIT_RSS,
        6 => libc::RLIMIT_MEMLOCK,
        7 => libc::RLIMIT_NPROC,
        8 => libc::RLIMIT_NOFILE,
        10 => libc::RLIMIT_AS,
        _ => return None,
    })
}

/// FreeBSD's RLIM_INFINITY (the host's is all ones).
const FB_RLIM_INFINITY: u64 = i64::MAX as u64;

unsafe fn getrlimit(r: i32, out: *mut [u64; 2]) -> Result<u64, i32> {
    let h = rlimit_to_host(r).ok_or(EINVAL)?;
    let mut l: libc::rlimit = unsafe { std::mem::zeroed() };
    host(i64::from(unsafe { libc::getrlimit(h, &mut l) }))?;
    if out.is_null() {
        return Err(EFAULT);
    }
    let fb = |v: libc::rlim_t| v.min(FB_RLIM_INFINITY);
    unsafe { out.write_unaligned([fb(l.rlim_cur), fb(l.rlim_max)]) };
    Ok(0)
}

unsafe fn setrlimit(r: i32, new: *const [u64; 2]) -> Result<u64, i32> {
    let h = rlimit_to_host(r).ok_or(EINVAL)?;
    if new.is_null() {
        return Err(EFAULT);
    }
    let [cur, max] = unsafe { new.read_unaligned() };
    let hv = |v: u64| {
        if v >= FB_RLIM_INFINITY {
            libc::RLIM_INFINITY
        } else {
            v
        }
    };
    let l = libc::rlimit {
        rlim_cur: hv(cur),
        rlim_max: hv(max),
    };
    host(i64::from(unsafe { libc::setrlimit(h, &l) }))
}

/// What a libc start-up asks of `__sysctl`.
enum SysctlValue {
    Int(i32),
    Long(i64),
    Str(&'static str),
    Random,
}

/// The names served (with FreeBSD's fixed numbers; `kern.smp.cpus` is a dynamic one on
/// FreeBSD, given a number here from the dynamic range).
const SYSCTL_NAMES: &[(&str, &[i32])] = &[
    ("kern.ostype", &[1, 1]),
    ("kern.osrelease", &[1, 2]),
    ("kern.osrevision", &[1, 3]),
    ("kern.osreldate", &[1, 24]),
    ("kern.arandom", &[1, 37]),
    ("kern.smp.cpus", &[1, 0x100, 0x100]),
    ("hw.machine", &[6, 1]),
    ("hw.ncpu", &[6, 3]),
    ("hw.byteorder", &[6, 4]),
    ("hw.physmem", &[6, 5]),
    ("hw.pagesize", &[6, 7]),
    ("hw.machine_arch", &[6, 11]),
];

/// The FreeBSD release the consoles' kernels descend from (PS4: 9.0; the PS5 kept its
/// system-call numbering and `struct stat`).
const OSRELEASE: &str = "9.0-RELEASE";
const OSRELDATE: i32 = 900_044;

fn sysctl_value(oid: &[i32]) -> Option<SysctlValue> {
    let ncpu = || signal::sysconf(58) as i32;
    Some(match oid {
        [1, 1] => SysctlValue::Str("FreeBSD"),
        [1, 2] => SysctlValue::Str(OSRELEASE),
        [1, 3] => SysctlValue::Int(199_506),
        [1, 24] => SysctlValue::Int(OSRELDATE),
        [1, 37] => SysctlValue::Random,
        [1, 0x100, 0x100] => SysctlValue::Int(ncpu()),
        [6, 1] | [6, 11] => SysctlValue::Str("amd64"),
        [6, 3] => SysctlValue::Int(ncpu()),
        [6, 4] => SysctlValue::Int(1234),
        [6, 5] => SysctlValue::Long(unsafe {
            libc::sysconf(libc::_SC_PHYS_PAGES) * libc::sysconf(libc::_SC_PAGESIZE)
        } as i64),
        [6, 7] => SysctlValue::Int(files::getpagesize()),
        _ => return None,
    })
}

/// Copies `bytes` out the sysctl way: the size needed when `old` is NULL; ENOMEM (and as
/// much as fits) when `*oldlenp` is too small.
unsafe fn sysctl_out(bytes: &[u8], old: *mut u8, oldlenp: *mut usize) -> Result<u64, i32> {
    if oldlenp.is_null() {
        return if old.is_null() { Ok(0) } else { Err(EFAULT) };
    }
    let room = unsafe { *oldlenp };
    if old.is_null() {
        unsafe { *oldlenp = bytes.len() };
        return Ok(0);
    }
    let n = room.min(bytes.len());
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), old, n);
        *oldlenp = n;
    }
    if n < bytes.len() { Err(ENOMEM) } else { Ok(0) }
}

/// `__sysctl(name, namelen, old, oldlenp, new, newlen)` for [`SYSCTL_NAMES`] and
/// `sysctl.name2oid` ({0, 3}, what `sysctlbyname` asks first). Nothing can be set (EPERM);
/// other names: ENOENT, and reported once.
unsafe fn sysctl(
    name: *const i32,
    namelen: u32,
    old: *mut u8,
    oldlenp: *mut usize,
    new: *const u8,
    newlen: usize,
) -> Result<u64, i32> {
    if name.is_null() || !(2..=24).contains(&namelen) {
        return Err(EINVAL);
    }
    let oid = unsafe { std::slice::from_raw_parts(name, namelen as usize) };
    if oid == [0, 3] {
        if new.is_null() {
            return Err(EINVAL);
        }
        let want = unsafe { std::slice::from_raw_parts(new, newlen) };
        let want = want.strip_suffix(b"\0").unwrap_or(want);
        let Some((_, found)) = SYSCTL_NAMES.iter().find(|(n, _)| n.as_bytes() == want) else {
            report_sysctl(want);
            return Err(ENOENT);
        };
        let bytes: Vec<u8> = found.iter().flat_map(|v| v.to_ne_bytes()).collect();
        return unsafe { sysctl_out(&bytes, old, oldlenp) };
    }
    let Some(v) = sysctl_value(oid) else {
        let mut buf = [0u8; 96];
        let mut w = Cursor::new(&mut buf);
        for (k, c) in oid.iter().enumerate() {
            let _ = write!(w, "{}{c}", if k == 0 { "" } else { "." });
        }
        let n = w.pos;
        report_sysctl(&buf[..n]);
        return Err(ENOENT);
    };
    if !new.is_null() {
        return Err(EPERM);
    }
    match v {
        SysctlValue::Int(x) => unsafe { sysctl_out(&x.to_ne_bytes(), old, oldlenp) },
        SysctlValue::Long(x) => unsafe { sysctl_out(&x.to_ne_bytes(), old, oldlenp) },
        SysctlValue::Str(s) => {
            let mut b = s.as_bytes().to_vec();
            b.push(0);
            unsafe { sysctl_out(&b, old, oldlenp) }
        }
        SysctlValue::Random => {
            let want = if oldlenp.is_null() {
                0
            } else {
                unsafe { *oldlenp }.min(256)
            };
            let mut b = vec![0u8; want];
            let got = unsafe { libc::getrandom(b.as_mut_ptr().cast(), want, 0) };
            b.truncate(got.max(0) as usize);
            unsafe { sysctl_out(&b, old, oldlenp) }.or(Ok(0))
        }
    }
}

/// `_umtx_op` operations served: the futex-style ones libthr and C libraries use for
/// semaphores, condition variables and thread joins.
const UMTX_OP_WAIT: i32 = 2;
const UMTX_OP_WAKE: i32 = 3;
const UMTX_OP_WAIT_UINT: i32 = 11;
const UMTX_OP_WAIT_UINT_PRIVATE: i32 = 15;
const UMTX_OP_WAKE_PRIVATE: i32 = 16;
const UMTX_OP_NWAKE_PRIVATE: i32 = 21;

/// The `_umtx_op` timeout: `uaddr1` is the size of what `uaddr2` points at, a relative
/// `timespec` or a `struct _umtx_time { timespec, u32 flags (UMTX_ABSTIME 1), u32 clock }`.
unsafe fn umtx_timeout(size: u64, p: *const u8) -> Result<Option<libc::timespec>, i32> {
    if p.is_null() {
        return Ok(None);
    }
    let ts = unsafe { (p as *const libc::timespec).read_unaligned() };
    if size <= 16 {
        return Ok(Some(ts));
    }
    let flags = unsafe { (p.add(16) as *const u32).read_unaligned() };
    if flags & 1 == 0 {
        return Ok(Some(ts));
    }
    // Absolute: the time left on that clock.
    let clock = unsafe { (p.add(20) as *const u32).read_unaligned() } as i32;
    let host_clock = files::clock_to_host(clock).ok_or(EINVAL)?;
    let mut now: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(host_clock, &mut now) };
    let left =
        (ts.tv_sec - now.tv_sec) as i128 * 1_000_000_000 + (ts.tv_nsec - now.tv_nsec) as i128;
    let left = left.max(0);
    Ok(Some(libc::timespec {
        tv_sec: (left / 1_000_000_000) as i64,
        tv_nsec: (left % 1_000_000_000) as i64,
    }))
}

/// `_umtx_op(obj, op, val, uaddr1, uaddr2)` on host futexes. WAIT compares the whole
/// `u_long` and sleeps on its low half (where WAKE of the same address finds it).
/// A word that no longer holds `val` returns 0 at once, as FreeBSD does.
unsafe fn umtx_op(
    obj: *mut u8,
    op: i32,
    val: u64,
    uaddr1: u64,
    uaddr2: *const u8,
    site: usize,
) -> Result<u64, i32> {
    let futex = |word: *mut u8, fop: i32, v: u32, ts: *const libc::timespec| unsafe {
        libc::syscall(libc::SYS_futex, word, fop, v, ts, 0, 0)
    };
    match op {
        UMTX_OP_WAIT | UMTX_OP_WAIT_UINT | UMTX_OP_WAIT_UINT_PRIVATE => {
            if obj.is_null() {
                return Err(EFAULT);
            }
            let current = if op == UMTX_OP_WAIT {
                unsafe { (obj as *const u64).read_volatile() }
            } else {
                u64::from(unsafe { (obj as *const u32).read_volatile() })
            };
            let expect = if op == UMTX_OP_WAIT {
                val
            } else {
                val & 0xFFFF_FFFF
            };
            if current != expect {
                return Ok(0);
            }
            let t = unsafe { umtx_timeout(uaddr1, uaddr2) }?;
            let fop = if op == UMTX_OP_WAIT_UINT_PRIVATE {
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG
            } else {
                libc::FUTEX_WAIT
            };
            let r = futex(
                obj,
                fop,
                expect as u32,
                t.as_ref().map_or(std::ptr::null(), |t| t as *const _),
            );
            if r == 0 {
                return Ok(0);
            }
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EAGAIN) => Ok(0),
                Some(libc::ETIMEDOUT) => Err(ETIMEDOUT),
                Some(e) => Err(errno::from_host(e)),
                None => Err(EINVAL),
            }
        }
        UMTX_OP_WAKE | UMTX_OP_WAKE_PRIVATE => {
            let fop = if op == UMTX_OP_WAKE_PRIVATE {
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG
            } else {
                libc::FUTEX_WAKE
            };
            let n = u32::try_from(val)
                .unwrap_or(i32::MAX as u32)
                .min(i32::MAX as u32);
            host(futex(obj, fop, n, std::ptr::null()))?;
            Ok(0)
        }
        UMTX_OP_NWAKE_PRIVATE => {
            if obj.is_null() {
                return Err(EFAULT);
            }
            for k in 0..val as usize {
                let word = unsafe { (obj as *const *mut u8).add(k).read_unaligned() };
                host(futex(
                    word,
                    libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                    i32::MAX as u32,
                    std::ptr::null(),
                ))?;
            }
            Ok(0)
        }
        _ => {
            let mut buf = [0u8; 48];
            let mut w = Cursor::new(&mut buf);
            let _ = write!(w, "operation {op}");
            let n = w.pos;
            if let Ok(what) = std::str::from_utf8(&buf[..n]) {
                report_unknown(454, site, what);
            }
            Err(EINVAL)
        }
    }
}

use std::io::Write;

/// A `Write` into a fixed buffer (the reports are written from the SIGILL handler, where
/// nothing may allocate).
struct Cursor<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(buf: &'a mut [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }
}

impl Write for Cursor<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let n = b.len().min(self.buf.len() - self.pos);
        self.buf[self.pos..self.pos + n].copy_from_slice(&b[..n]);
        self.pos += n;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One bit per system call number (and per `_umtx_op` operation) already reported.
static REPORTED: [AtomicU64; 16] = [const { AtomicU64::new(0) }; 16];
static REPORTED_UMTX: AtomicU64 = AtomicU64::new(0);

/// True the first time `(nr, detail)` is seen (numbers from 1024 up share one bit).
fn first_report(nr: u64, detail: &str) -> bool {
    let (word, bit) = if nr == 454 && !detail.is_empty() {
        let op = detail
            .rsplit(' ')
            .next()
            .and_then(|s| s.parse::<u32>().ok())
            .unwrap_or(63)
            .min(63);
        (&REPORTED_UMTX, op)
    } else {
        let n = nr.min(1023) as usize;
        (&REPORTED[n / 64], (n % 64) as u32)
    };
    word.fetch_or(1 << bit, Ordering::Relaxed) & (1 << bit) == 0
}

/// Reports a system call libkernel does not serve, once per number: its number, its FreeBSD
/// name, and the address of the call site (with the file it is in and the offset there), e.g.
/// `aps5: unserved FreeBSD system call 7 (wait4) at 0x7f0012345678 (app.elf+0x1234); it
/// fails with ENOSYS`.
fn report_unknown(nr: u64, site: usize, detail: &str) {
    if !first_report(nr, detail) {
        return;
    }
    let mut buf = [0u8; 512];
    let mut w = Cursor::new(&mut buf);
    let _ = write!(w, "aps5: unserved FreeBSD system call {nr} ");
    let sony = SONY_CALLS.iter().find(|(n, _)| *n == nr).map(|(_, s)| *s);
    let _ = match name(nr).or(sony) {
        Some(n) => write!(w, "({n})"),
        None if nr >= syscall_names::NAMES.len() as u64 => {
            write!(w, "(a PS4/PS5 kernel call, not in FreeBSD 9)")
        }
        None => write!(w, "(reserved in FreeBSD)"),
    };
    if !detail.is_empty() {
        let _ = write!(w, " {detail}");
    }
    let _ = write!(w, " at {site:#x}");
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    if site != 0
        && unsafe { libc::dladdr(site as *const libc::c_void, &mut info) } != 0
        && !info.dli_fname.is_null()
    {
        let file = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_bytes();
        let file = file.rsplit(|&c| c == b'/').next().unwrap_or(file);
        let file = if file.is_empty() {
            &b"app.elf"[..]
        } else {
            file
        };
        let _ = w.write_all(b" (");
        let _ = w.write_all(file);
        let _ = write!(w, "+{:#x})", site - info.dli_fbase as usize);
    }
    let _ = w.write_all(b"; it fails with ");
    let _ = w.write_all(if nr == 454 { b"EINVAL" } else { b"ENOSYS" });
    let _ = w.write_all(b" (reported once)\n");
    let n = w.pos;
    crate::diag(&buf[..n]);
}

fn report_sysctl(name: &[u8]) {
    static ONCE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if ONCE.swap(true, Ordering::Relaxed) {
        return;
    }
    let mut buf = [0u8; 256];
    let mut w = Cursor::new(&mut buf);
    let _ = w.write_all(b"aps5: sysctl ");
    let _ = w.write_all(&name[..name.len().min(160)]);
    let _ =
        w.write_all(b" is not served; it fails with ENOENT (the first such name is reported)\n");
    let n = w.pos;
    crate::diag(&buf[..n]);
}

/// Services a [`TRAP`] at the interrupted `rip`: returns false (and changes nothing)
/// when the faulting instruction is something else.
pub fn service(uc: &mut libc::ucontext_t) -> bool {
    let g = &mut uc.uc_mcontext.gregs;
    let rip = g[libc::REG_RIP as usize] as usize;
    // SIGILL is raised by an instruction fetch at rip, so its first bytes are readable.
    let at = unsafe { std::ptr::read_unaligned(rip as *const [u8; 2]) };
    if at != TRAP {
        return false;
    }
    let reg = |r: i32| g[r as usize] as u64;
    let nr = reg(libc::REG_RAX);
    let args = [
        reg(libc::REG_RDI),
        reg(libc::REG_RSI),
        reg(libc::REG_RDX),
        reg(libc::REG_R10),
        reg(libc::REG_R8),
        reg(libc::REG_R9),
    ];
    // A system call leaves errno alone (the caller's C library sets its own).
    let saved_errno = unsafe { *errno::error() };
    let mut rdx = None;
    let r = if nr == 42 {
        // pipe(): the two descriptors come back in rax and rdx.
        let mut fds = [0i32; 2];
        posix(i64::from(unsafe { files::pipe(fds.as_mut_ptr()) })).map(|_| {
            rdx = Some(fds[1] as u64);
            fds[0] as u64
        })
    } else {
        dispatch_at(nr, args, rip, Some(&uc.uc_sigmask))
    };
    unsafe { *errno::error() = saved_errno };
    let (rax, carry) = match r {
        Ok(v) => (v, false),
        Err(e) => (e as u64, true),
    };
    let mut flags = reg(libc::REG_EFL) & !1;
    if carry {
        flags |= 1;
    }
    g[libc::REG_RAX as usize] = rax as i64;
    if let Some(v) = rdx {
        g[libc::REG_RDX as usize] = v as i64;
    }
    g[libc::REG_EFL as usize] = flags as i64;
    g[libc::REG_RCX as usize] = (rip + 2) as i64;
    g[libc::REG_R11 as usize] = flags as i64;
    g[libc::REG_RIP as usize] = (rip + 2) as i64;
    if nr == 340 && !carry {
        // The handler's mask is replaced by the interrupted one when it returns: a new mask
        // must go into the saved context to outlive the trap.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, std::ptr::null(), &mut uc.uc_sigmask) };
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Executes the trap with FreeBSD system call `nr`; returns (rax, carry).
    fn trap(nr: u64, a0: u64, a1: u64, a2: u64) -> (u64, bool) {
        signal::install_syscall_trap();
        let rax: u64;
        let cf: u8;
        unsafe {
            std::arch::asm!(
                ".byte 0x0f, 0xff",
                "setc {cf}",
                inout("rax") nr => rax,
                in("rdi") a0,
                in("rsi") a1,
                in("rdx") a2,
                in("r10") 0u64,
                in("r8") 0u64,
                in("r9") 0u64,
                out("rcx") _,
                out("r11") _,
                cf = out(reg_byte) cf,
            );
        }
        (rax, cf != 0)
    }

    /// Executes the trap with up to six arguments; returns (rax, carry).
    fn trap6(nr: u64, a: [u64; 6]) -> (u64, bool) {
        signal::install_syscall_trap();
        let rax: u64;
        let cf: u8;
        unsafe {
            std::arch::asm!(
                ".byte 0x0f, 0xff",
                "setc {cf}",
                inout("rax") nr => rax,
                in("rdi") a[0],
                in("rsi") a[1],
                in("rdx") a[2],
                in("r10") a[3],
                in("r8") a[4],
                in("r9") a[5],
                out("rcx") _,
                out("r11") _,
                cf = out(reg_byte) cf,
            );
        }
        (rax, cf != 0)
    }

    fn c(s: &str) -> std::ffi::CString {
        std::ffi::CString::new(s).unwrap()
    }

    /// What a thread of `thr_new` reports.
    #[repr(C)]
    struct Seen {
        value: u64,
        tid: i64,
        local_at: u64,
        state: i64,
    }

    extern "C" fn thr_start(arg: *mut Seen) {
        let local = 0u8;
        let seen = unsafe { &mut *arg };
        seen.local_at = (&raw const local) as u64;
        let mut tid = 0i64;
        trap(432, (&raw mut tid) as u64, 0, 0);
        seen.tid = tid;
        seen.value = 0x5EED;
        // thr_exit(&state): never returns.
        trap(431, (&raw mut seen.state) as u64, 0, 0);
        unreachable!("thr_exit returned");
    }

    extern "C" fn thr_start_returns(arg: *mut Seen) {
        unsafe { (*arg).value = 7 };
    }

    #[test]
    fn thr_new_runs_on_the_given_stack_and_thr_exit_wakes_the_joiner() {
        const SIZE: usize = 128 << 10;
        let stack = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        } as u64;
        assert_ne!(stack, u64::MAX);
        let mut seen = Seen {
            value: 0,
            tid: 0,
            local_at: 0,
            state: 0,
        };
        let (mut child_tid, mut parent_tid) = (0i64, 0i64);
        let p = crate::thr::ThrParam {
            start_func: thr_start as *const () as u64,
            arg: (&raw mut seen) as u64,
            stack_base: stack,
            stack_size: SIZE as u64,
            child_tid: (&raw mut child_tid) as u64,
            parent_tid: (&raw mut parent_tid) as u64,
            flags: 2, // THR_SYSTEM_SCOPE
            ..Default::default()
        };
        assert_eq!(trap(455, (&raw const p) as u64, 104, 0), (0, false));
        // Both ids are written before thr_new returns.
        assert!(child_tid > 0 && child_tid == parent_tid);
        assert_ne!(child_tid, i64::from(unsafe { libc::gettid() }));
        // Join the FreeBSD way: wait on the state word until thr_exit sets it to 1.
        let state = (&raw mut seen.state) as u64;
        while unsafe { std::ptr::read_volatile(state as *const i64) } == 0 {
            let r = trap6(454, [state, 2 /* UMTX_OP_WAIT */, 0, 0, 0, 0]);
            assert_eq!(r, (0, false));
        }
        assert_eq!(seen.value, 0x5EED);
        assert_eq!(
            seen.tid, child_tid,
            "thr_self in the thread is its thr_new id"
        );
        assert!(
            (stack..stack + SIZE as u64).contains(&seen.local_at),
            "ran on the given stack: {:#x} not in {stack:#x}+{SIZE:#x}",
            seen.local_at
        );
        // The host thread ends after signalling.
        for _ in 0..1000 {
            if crate::thr::live() == 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(crate::thr::live(), 0);

        // A start function that returns ends its thread.
        seen.value = 0;
        let p2 = crate::thr::ThrParam {
            start_func: thr_start_returns as *const () as u64,
            ..p
        };
        child_tid = 0;
        assert_eq!(trap(455, (&raw const p2) as u64, 104, 0), (0, false));
        for _ in 0..1000 {
            if crate::thr::live() == 0 && seen.value == 7 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!((seen.value, crate::thr::live()), (7, 0));
        assert!(child_tid > 0);

        // Bad parameters: FreeBSD's checks, and what would fault at once.
        assert_eq!(trap(455, (&raw const p) as u64, 105, 0), (22, true), "size");
        assert_eq!(trap(455, 0, 104, 0), (14, true), "NULL");
        let no_stack = crate::thr::ThrParam { stack_base: 0, ..p };
        assert_eq!(trap(455, (&raw const no_stack) as u64, 104, 0), (22, true));
        let suspended = crate::thr::ThrParam { flags: 1, ..p };
        assert_eq!(trap(455, (&raw const suspended) as u64, 104, 0), (45, true));
        unsafe { libc::munmap(stack as *mut libc::c_void, SIZE) };
    }

    #[test]
    fn every_at_call_of_the_table_is_served() {
        // The class: every call of the table named `*at` (the stat family, creat and shmat
        // only end like one); fexecve, the one other call taking a directory descriptor's
        // place, is not served.
        let class: Vec<(u64, &str)> = (0..syscall_names::NAMES.len() as u64)
            .filter_map(|n| name(n).map(|s| (n, s)))
            .filter(|(_, s)| {
                s.ends_with("at") && !s.ends_with("stat") && !s.ends_with("creat") && *s != "shmat"
            })
            .collect();
        assert_eq!(
            class,
            at::SERVED,
            "the served list is the table's *at calls"
        );
        // Each is served: a NULL path is EFAULT, never ENOSYS.
        for &(nr, call) in at::SERVED {
            let a = if call == "symlinkat" {
                [0, AT_FDCWD as u64, 0, 0, 0, 0]
            } else {
                [AT_FDCWD as u64, 0, 0, 0, 0, 0]
            };
            assert_eq!(trap6(nr, a), (14, true), "{call} ({nr})");
        }
    }

    #[test]
    fn at_calls_resolve_relative_to_a_guest_directory_and_stay_in_the_mount() {
        let at = |nr: u64, a: &[u64]| {
            let mut v = [0u64; 6];
            v[..a.len()].copy_from_slice(a);
            trap6(nr, v)
        };
        let p = |s: &std::ffi::CString| s.as_ptr() as u64;
        let cwd = AT_FDCWD as u64;
        let base = format!("/temp0/at-{}", std::process::id());
        let cbase = c(&base);
        assert_eq!(at(136, &[p(&cbase), 0o755]), (0, false), "mkdir");
        let (dir, e) = at(5, &[p(&cbase), 0x20000 /* O_DIRECTORY */, 0]);
        assert!(!e, "open dir: {dir}");
        let (f, g, s, d, fifo, q) = (c("f"), c("g"), c("s"), c("d"), c("p"), c("q"));
        // openat: create, write, read back through the full path.
        let (fd, e) = at(499, &[dir, p(&f), 0x0201 | 0x0400, 0o644]);
        assert!(!e, "openat: {fd}");
        assert_eq!(at(4, &[fd, b"hello".as_ptr() as u64, 5]), (5, false));
        assert_eq!(at(6, &[fd]), (0, false));
        let mut st = fs::GuestStat::default();
        let stp = (&raw mut st) as u64;
        let full = c(&format!("{base}/f"));
        assert_eq!(at(493, &[cwd, p(&full), stp, 0]), (0, false), "fstatat cwd");
        assert_eq!(st.size, 5);
        let ino = st.ino;
        assert_eq!(at(493, &[dir, p(&f), stp, 0]), (0, false), "fstatat dirfd");
        assert_eq!((st.size, st.ino), (5, ino));
        assert_eq!(
            at(489, &[dir, p(&f), 4 /* R_OK */, 0]),
            (0, false),
            "faccessat"
        );
        assert_eq!(
            at(489, &[dir, p(&f), 0, 0x200]),
            (22, true),
            "faccessat flag"
        );
        assert_eq!(at(490, &[dir, p(&f), 0o600, 0]), (0, false), "fchmodat");
        at(493, &[dir, p(&f), stp, 0]);
        assert_eq!(st.mode & 0o777, 0o600);
        assert_eq!(
            at(491, &[dir, p(&f), u32::MAX as u64, u32::MAX as u64, 0]),
            (0, false)
        );
        let tv: [i64; 4] = [1000, 0, 2000, 500];
        assert_eq!(at(494, &[dir, p(&f), (&raw const tv) as u64]), (0, false));
        at(493, &[dir, p(&f), stp, 0]);
        assert_eq!(st.times[1], [2000, 500_000], "futimesat mtime");
        assert_eq!(at(495, &[dir, p(&f), dir, p(&g), 0]), (0, false), "linkat");
        at(493, &[dir, p(&f), stp, 0]);
        assert_eq!(st.nlink, 2);
        assert_eq!(at(502, &[p(&f), dir, p(&s)]), (0, false), "symlinkat");
        let mut buf = [0u8; 16];
        let r = at(500, &[dir, p(&s), buf.as_mut_ptr() as u64, 16]);
        assert_eq!((r, &buf[..1]), ((1, false), &b"f"[..]), "readlinkat");
        assert_eq!(at(493, &[dir, p(&s), stp, 0x200]), (0, false));
        assert_eq!(
            u32::from(st.mode) & 0o170000,
            0o120000,
            "NOFOLLOW: the link"
        );
        assert_eq!(at(490, &[dir, p(&s), 0o600, 0x200]), (45, true), "lchmod");
        let h = c(&format!("{base}/h"));
        assert_eq!(at(501, &[dir, p(&g), cwd, p(&h)]), (0, false), "renameat");
        assert_eq!(at(496, &[dir, p(&d), 0o755]), (0, false), "mkdirat");
        assert_eq!(at(497, &[dir, p(&fifo), 0o644]), (0, false), "mkfifoat");
        assert_eq!(
            at(498, &[dir, p(&q), 0o010644, 0]),
            (0, false),
            "mknodat FIFO"
        );
        at(493, &[dir, p(&q), stp, 0]);
        assert_eq!(u32::from(st.mode) & 0o170000, 0o010000);
        assert_eq!(
            at(498, &[dir, p(&q), 0o020644, 1]),
            (1, true),
            "a device: EPERM"
        );
        assert_eq!(
            at(503, &[dir, p(&d), 0]),
            (1, true),
            "unlink of a folder: EPERM"
        );
        assert_eq!(at(503, &[dir, p(&d), 0x800]), (0, false), "AT_REMOVEDIR");
        assert_eq!(at(503, &[dir, p(&d), 0x200]), (22, true), "flag");
        // Escapes: `..`, an absolute symlink, a relative one climbing out.
        let up = c("../../etc/passwd");
        assert_eq!(at(499, &[dir, p(&up), 0, 0]), (13, true), "..: EACCES");
        let (esc, esc2) = (c("esc"), c("esc2"));
        assert_eq!(at(502, &[p(&c("/etc")), dir, p(&esc)]), (0, false));
        assert_eq!(
            at(502, &[p(&c("../../../../../..")), dir, p(&esc2)]),
            (0, false)
        );
        for path in ["esc/passwd", "esc2/etc/passwd"] {
            let cp = c(path);
            assert_eq!(at(499, &[dir, p(&cp), 0, 0]), (13, true), "{path}");
            assert_eq!(at(493, &[dir, p(&cp), stp, 0]), (13, true), "{path}");
        }
        // A link out of the mount cannot be made either (EXDEV between mounts).
        let other = c("/savedata0/x");
        assert_eq!(at(495, &[dir, p(&f), cwd, p(&other), 0]), (18, true));
        // Descriptors that are no guest folder.
        let tmp = unsafe { libc::open(c"/tmp".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
        assert!(tmp >= 0);
        assert_eq!(
            at(499, &[tmp as u64, p(&f), 0, 0]),
            (13, true),
            "outside the mounts"
        );
        let (ffd, _) = at(499, &[dir, p(&f), 0, 0]);
        assert_eq!(at(493, &[ffd, p(&f), stp, 0]), (20, true), "ENOTDIR");
        assert_eq!(at(493, &[9999, p(&f), stp, 0]), (9, true), "EBADF");
        // An absolute path ignores the descriptor.
        assert_eq!(at(493, &[9999, p(&full), stp, 0]), (0, false));
        unsafe {
            libc::close(tmp);
            libc::close(ffd as i32);
        }
        // The plain forms (AT_FDCWD).
        // (A symlink's text is followed by the host kernel beneath the mount folder: an
        // absolute guest path in it cannot be, so these use a relative one.)
        let l2 = c(&format!("{base}/l2"));
        assert_eq!(at(57, &[p(&f), p(&l2)]), (0, false), "symlink");
        let r = at(58, &[p(&l2), buf.as_mut_ptr() as u64, 16]);
        assert_eq!((r, &buf[..1]), ((1, false), &b"f"[..]), "readlink");
        assert_eq!(at(15, &[p(&full), 0o640]), (0, false), "chmod");
        assert_eq!(
            at(16, &[p(&full), u32::MAX as u64, u32::MAX as u64]),
            (0, false)
        );
        assert_eq!(
            at(254, &[p(&l2), u32::MAX as u64, u32::MAX as u64]),
            (0, false)
        );
        assert_eq!(at(138, &[p(&full), 0]), (0, false), "utimes now");
        let hl = c(&format!("{base}/hl"));
        assert_eq!(at(9, &[p(&l2), p(&hl)]), (0, false), "link follows");
        at(190, &[p(&hl), stp]);
        assert_eq!(
            u32::from(st.mode) & 0o170000,
            0o100000,
            "a file, not the link"
        );
        let ff = c(&format!("{base}/ff"));
        assert_eq!(at(132, &[p(&ff), 0o600]), (0, false), "mkfifo");
        assert_eq!(
            at(14, &[p(&c(&format!("{base}/nn"))), 0o100600, 0]),
            (22, true)
        );
        // Clean up through the at calls.
        for n in ["f", "s", "h", "p", "q", "esc", "esc2", "l2", "hl", "ff"] {
            assert_eq!(at(503, &[dir, p(&c(n)), 0]), (0, false), "unlinkat {n}");
        }
        at(6, &[dir]);
        assert_eq!(at(503, &[cwd, p(&cbase), 0x800]), (0, false));
    }

    #[test]
    fn trapped_syscalls_run_with_the_freebsd_abi() {
        assert_eq!(trap(20, 0, 0, 0), (unsafe { libc::getpid() } as u64, false));
        // close(-1): EBADF (9) with carry set.
        assert_eq!(trap(6, u64::MAX, 0, 0), (9, true));
        // sbrk: EOPNOTSUPP, as on FreeBSD.
        assert_eq!(trap(69, 4096, 0, 0), (45, true));
        // An unknown number: ENOSYS (78).
        assert_eq!(trap(9999, 0, 0, 0), (78, true));

        // write then read through a pipe.
        let mut p = [0i32; 2];
        assert_eq!(unsafe { libc::pipe(p.as_mut_ptr()) }, 0);
        let msg = b"syscall trap";
        let w = trap(4, p[1] as u64, msg.as_ptr() as u64, msg.len() as u64);
        assert_eq!(w, (msg.len() as u64, false));
        let mut buf = [0u8; 32];
        let r = trap(3, p[0] as u64, buf.as_mut_ptr() as u64, buf.len() as u64);
        assert_eq!(r, (msg.len() as u64, false));
        assert_eq!(&buf[..msg.len()], msg);
        assert_eq!(trap(6, p[0] as u64, 0, 0), (0, false));
        assert_eq!(trap(6, p[1] as u64, 0, 0), (0, false));
    }

    #[test]
    fn thr_self_and_thr_kill_use_host_thread_ids() {
        let mut id = 0i64;
        assert_eq!(trap(432, (&raw mut id) as u64, 0, 0), (0, false));
        assert_eq!(id, i64::from(unsafe { libc::gettid() }));
        assert_eq!(trap(432, 0, 0, 0), (14, true), "EFAULT");
        // Signal 0 checks the thread; SIGURG (16 on both) is ignored by default.
        assert_eq!(trap(433, id as u64, 0, 0), (0, false));
        assert_eq!(trap(433, id as u64, 16, 0), (0, false));
        assert_eq!(trap(433, id as u64, 200, 0), (22, true), "EINVAL");
        assert_eq!(trap(433, -1i64 as u64, 16, 0), (22, true));
        // Another thread, alive then gone.
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tx.send(unsafe { libc::gettid() }).unwrap();
            done_rx.recv().unwrap();
        });
        let other = rx.recv().unwrap() as u64;
        assert_eq!(trap(433, other, 16, 0), (0, false));
        let pt = {
            use std::os::unix::thread::JoinHandleExt;
            t.as_pthread_t()
        };
        assert_eq!(signal::pthread_kill(pt, 0), 0);
        assert_eq!(signal::pthread_kill(pt, 16), 0);
        assert_eq!(signal::pthread_kill(pt, 999), 22);
        done_tx.send(()).unwrap();
        t.join().unwrap();
        // ESRCH once it has exited, unless a thread of another test got its id meanwhile
        // (Linux reuses thread ids; tests run in parallel), which the thread must then exist.
        let r = trap(433, other, 0, 0);
        assert!(
            r == (3, true) || std::path::Path::new(&format!("/proc/self/task/{other}")).exists(),
            "ESRCH once it has exited: got {r:?}"
        );
        assert_eq!(signal::pthread_kill(unsafe { libc::pthread_self() }, 0), 0);
        assert_eq!(signal::pthread_kill(unsafe { libc::pthread_self() }, 16), 0);
    }

    #[test]
    fn names_follow_freebsd_syscalls_master() {
        // Spot checks across the table against FreeBSD's sys/kern/syscalls.master.
        for (nr, want) in [
            (0, "syscall"),
            (3, "read"),
            (7, "wait4"),
            (59, "execve"),
            (116, "gettimeofday"),
            (188, "stat"),
            (202, "__sysctl"),
            (232, "clock_gettime"),
            (272, "getdents"),
            (304, "kldload"),
            (340, "sigprocmask"),
            (416, "sigaction"),
            (454, "_umtx_op"),
            (455, "thr_new"),
            (477, "mmap"),
            (499, "openat"),
            (531, "posix_fadvise"),
        ] {
            assert_eq!(name(nr), Some(want), "{nr}");
        }
        assert_eq!(name(91), None, "reserved");
        assert_eq!(name(532), None, "the consoles' own calls");
        assert_eq!(name(u64::MAX), None);
        assert_eq!(syscall_names::NAMES.len(), 532);
    }

    #[test]
    fn unserved_calls_fail_with_enosys_and_are_reported_once() {
        assert!(first_report(1000, ""));
        assert!(!first_report(1000, ""));
        assert!(first_report(454, "operation 40"));
        assert!(!first_report(454, "operation 40"));
        assert!(first_report(454, "operation 41"));
        assert_eq!(trap(338, 0, 0, 0), (78, true));
        assert!(!first_report(338, ""), "jail was reported by the trap");
        // An unknown _umtx_op operation: EINVAL as FreeBSD answers.
        let mut word = 0u32;
        assert_eq!(trap(454, (&raw mut word) as u64, 99, 0), (22, true));
    }

    #[test]
    fn tiocgeta_answers_a_terminal_like_the_host() {
        let m = unsafe { libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY) };
        assert!(m >= 0);
        assert_eq!(unsafe { libc::grantpt(m) }, 0);
        assert_eq!(unsafe { libc::unlockpt(m) }, 0);
        let name = unsafe { std::ffi::CStr::from_ptr(libc::ptsname(m)) }.to_owned();
        let s = unsafe { libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY) };
        assert!(s >= 0);
        let mut host: libc::termios = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::tcgetattr(s, &mut host) }, 0);
        let mut fb = FbTermios::default();
        assert_eq!(
            trap(54, s as u64, TIOCGETA, (&raw mut fb) as u64),
            (0, false)
        );
        // FreeBSD bit values (sys/_termios.h): ICANON 0x100, ECHO 0x8, ISIG 0x80, OPOST 1,
        // ICRNL 0x100, CREAD 0x800, CS8 0x300; VINTR is c_cc[8], VMIN c_cc[16].
        let on = |h: libc::tcflag_t, bit: libc::tcflag_t| h & bit != 0;
        assert_eq!(fb.lflag & 0x100 != 0, on(host.c_lflag, libc::ICANON));
        assert_eq!(fb.lflag & 0x8 != 0, on(host.c_lflag, libc::ECHO));
        assert_eq!(fb.lflag & 0x80 != 0, on(host.c_lflag, libc::ISIG));
        assert_eq!(fb.oflag & 1 != 0, on(host.c_oflag, libc::OPOST));
        assert_eq!(fb.iflag & 0x100 != 0, on(host.c_iflag, libc::ICRNL));
        assert_eq!(fb.cflag & 0x800 != 0, on(host.c_cflag, libc::CREAD));
        assert_eq!(
            fb.cflag & 0x300 == 0x300,
            host.c_cflag & libc::CSIZE == libc::CS8
        );
        assert_eq!(fb.cc[8], host.c_cc[libc::VINTR]);
        assert_eq!(fb.cc[16], host.c_cc[libc::VMIN]);
        assert!(fb.ospeed > 0);
        // Not a terminal: ENOTTY; a closed descriptor: EBADF.
        let mut p = [0i32; 2];
        assert_eq!(unsafe { libc::pipe(p.as_mut_ptr()) }, 0);
        assert_eq!(
            trap(54, p[0] as u64, TIOCGETA, (&raw mut fb) as u64),
            (25, true)
        );
        unsafe {
            libc::close(p[0]);
            libc::close(p[1]);
            libc::close(s);
            libc::close(m);
        }
        assert_eq!(
            trap(54, p[0] as u64, TIOCGETA, (&raw mut fb) as u64),
            (9, true)
        );
    }

    #[test]
    fn other_illegal_instructions_are_not_serviced() {
        let mut uc: libc::ucontext_t = unsafe { std::mem::zeroed() };
        let ud2 = [0x0Fu8, 0x0B];
        uc.uc_mcontext.gregs[libc::REG_RIP as usize] = ud2.as_ptr() as i64;
        assert!(!service(&mut uc));
        assert_eq!(
            uc.uc_mcontext.gregs[libc::REG_RIP as usize],
            ud2.as_ptr() as i64
        );
    }
}
