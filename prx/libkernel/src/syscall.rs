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

use crate::{errno, fs, memory, signal};

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

/// Libkernel calls follow the C convention (-1 and errno); the FreeBSD kernel ABI wants
/// the errno value itself.
fn posix(r: i64) -> Result<u64, i32> {
    if r == -1 {
        Err(unsafe { *errno::error() })
    } else {
        Ok(r as u64)
    }
}

/// Runs FreeBSD system call `nr` with its six register arguments
/// (`rdi, rsi, rdx, r10, r8, r9`). `Err` holds a FreeBSD errno value.
pub fn dispatch(nr: u64, a: [u64; 6]) -> Result<u64, i32> {
    let i = |k: usize| a[k] as i32;
    unsafe {
        match nr {
            1 => crate::thread::exit_(i(0)),
            3 => posix(fs::read(i(0), a[1] as *mut u8, a[2] as usize) as i64),
            4 => posix(fs::write(i(0), a[1] as *const u8, a[2] as usize) as i64),
            5 => posix(i64::from(fs::open(
                a[0] as *const libc::c_char,
                i(1),
                a[2] as u32,
            ))),
            6 => posix(i64::from(fs::close(i(0)))),
            20 => Ok(crate::getpid() as u64),
            54 => posix(i64::from(fs::ioctl(i(0), a[1], a[2] as usize))),
            // sbrk: the FreeBSD kernel answers EOPNOTSUPP too; C libraries then use mmap.
            69 => Err(EOPNOTSUPP),
            73 => posix(i64::from(memory::munmap(a[0] as usize, a[1] as usize))),
            75 => posix(i64::from(memory::madvise(
                a[0] as usize,
                a[1] as usize,
                i(2),
            ))),
            92 => posix(i64::from(fs::fcntl(i(0), i(1), a[2] as i64))),
            120 => posix(fs::readv(i(0), a[1] as *const libc::iovec, i(2)) as i64),
            121 => posix(fs::writev(i(0), a[1] as *const libc::iovec, i(2)) as i64),
            189 => posix(i64::from(fs::fstat(i(0), a[1] as *mut fs::GuestStat))),
            209 => posix(i64::from(fs::poll(
                a[0] as *mut libc::pollfd,
                a[1] as u32,
                i(2),
            ))),
            340 => posix(i64::from(signal::sigprocmask(
                i(0),
                a[1] as *const signal::FbSigset,
                a[2] as *mut signal::FbSigset,
            ))),
            416 => posix(i64::from(signal::sigaction(
                i(0),
                a[1] as *const signal::FbSigaction,
                a[2] as *mut signal::FbSigaction,
            ))),
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
            477 => {
                let p = memory::mmap(a[0] as usize, a[1] as usize, i(2), i(3), i(4), a[5] as i64);
                if p == usize::MAX {
                    Err(*errno::error())
                } else {
                    Ok(p as u64)
                }
            }
            478 => posix(fs::lseek(i(0), a[1] as i64, i(2))),
            // dynlib_dlsym(handle, name, &addr): PS5 payloads resolve libkernel and libc
            // functions with it (crate::payload).
            591 => {
                crate::payload::dynlib_dlsym(i(0), a[1] as *const libc::c_char, a[2] as *mut usize)
            }
            _ => Err(ENOSYS),
        }
    }
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
    let (rax, carry) = match dispatch(nr, args) {
        Ok(v) => (v, false),
        Err(e) => (e as u64, true),
    };
    let mut flags = reg(libc::REG_EFL) & !1;
    if carry {
        flags |= 1;
    }
    g[libc::REG_RAX as usize] = rax as i64;
    g[libc::REG_EFL as usize] = flags as i64;
    g[libc::REG_RCX as usize] = (rip + 2) as i64;
    g[libc::REG_R11 as usize] = flags as i64;
    g[libc::REG_RIP as usize] = (rip + 2) as i64;
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
        assert_eq!(
            trap(433, other, 0, 0),
            (3, true),
            "ESRCH once it has exited"
        );
        assert_eq!(signal::pthread_kill(unsafe { libc::pthread_self() }, 0), 0);
        assert_eq!(signal::pthread_kill(unsafe { libc::pthread_self() }, 16), 0);
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
