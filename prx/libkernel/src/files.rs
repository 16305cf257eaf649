//! More file and process calls: directory reading in FreeBSD's `struct dirent` layout,
//! positioned I/O, `fsync`/`ftruncate`, `rmdir`/`mkdir`/`access` on confined guest paths
//! ([`crate::fs::entry`], [`crate::fs::open_beneath`]), descriptor duplication, pipes, `sigset_t` helpers, `kill`,
//! `clock_getres`, `sceKernelNanosleep` and `getpagesize`.

use std::ffi::CStr;

use aps5_prx_macros::nid;

use crate::fs::{EROFS, fd_path, mkdir_guest, open_beneath, resolve, rmdir_guest};
use crate::signal::FbSigset;
use crate::{errno, sce_error};

const EINVAL: i32 = 22;
const EFAULT: i32 = 14;

fn host_errno() -> i32 {
    errno::from_host(
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO),
    )
}

fn check(r: i64) -> Result<i64, i32> {
    if r < 0 { Err(host_errno()) } else { Ok(r) }
}

fn posix(r: Result<i64, i32>) -> i64 {
    r.unwrap_or_else(|e| {
        errno::set(e);
        -1
    })
}

fn sce(r: Result<i64, i32>) -> i64 {
    r.unwrap_or_else(|e| i64::from(sce_error(e)))
}

unsafe fn cpath<'a>(p: *const libc::c_char) -> Result<&'a [u8], i32> {
    if p.is_null() {
        Err(EFAULT)
    } else {
        Ok(unsafe { CStr::from_ptr(p) }.to_bytes())
    }
}

// ---- Directories ----------------------------------------------------------------------

/// Size of a FreeBSD `struct dirent` record holding a name of `namlen` bytes:
/// `d_fileno` u32, `d_reclen` u16, `d_type` u8, `d_namlen` u8, then the name and its NUL
/// padded to 4 bytes (FreeBSD's `GENERIC_DIRSIZ`).
pub const fn dirent_size(namlen: usize) -> usize {
    8 + ((namlen + 1 + 3) & !3)
}

/// Converts the host's `linux_dirent64` records in `host` into FreeBSD records in `out`;
/// returns the bytes written. A FreeBSD record is never larger than the host one (8 bytes
/// of header instead of 19, 4-byte instead of 8-byte alignment), so `out.len() >=
/// host.len()` always suffices.
pub fn convert_dirents(host: &[u8], out: &mut [u8]) -> usize {
    let (mut i, mut o) = (0, 0);
    while i + 19 <= host.len() {
        let ino = u64::from_ne_bytes(host[i..i + 8].try_into().expect("8 bytes"));
        let reclen = usize::from(u16::from_ne_bytes([host[i + 16], host[i + 17]]));
        let dtype = host[i + 18];
        if reclen == 0 || i + reclen > host.len() {
            break;
        }
        let name_area = &host[i + 19..i + reclen];
        let namlen = name_area
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(name_area.len())
            // FreeBSD's d_namlen is a byte; Linux names are at most 255 bytes too.
            .min(255);
        let size = dirent_size(namlen);
        if o + size > out.len() {
            break;
        }
        let rec = &mut out[o..o + size];
        rec.fill(0);
        rec[0..4].copy_from_slice(&(ino as u32).to_ne_bytes());
        rec[4..6].copy_from_slice(&(size as u16).to_ne_bytes());
        // DT_* values are the same on Linux and FreeBSD (DT_DIR 4, DT_REG 8, DT_LNK 10...).
        rec[6] = dtype;
        rec[7] = namlen as u8;
        rec[8..8 + namlen].copy_from_slice(&name_area[..namlen]);
        o += size;
        i += reclen;
    }
    o
}

/// Reads directory entries of `fd` into `buf` in FreeBSD's layout; with `basep`, stores
/// the position of the first entry read (the cookie `lseek` accepts).
unsafe fn getdirentries_impl(fd: i32, buf: *mut u8, n: i32, basep: *mut i64) -> Result<i64, i32> {
    if buf.is_null() {
        return Err(EFAULT);
    }
    if n <= 0 {
        return Err(EINVAL);
    }
    let base = check(unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) })?;
    let mut host = vec![0u8; n as usize];
    let got =
        check(unsafe { libc::syscall(libc::SYS_getdents64, fd, host.as_mut_ptr(), host.len()) })?;
    let out = unsafe { std::slice::from_raw_parts_mut(buf, n as usize) };
    let w = convert_dirents(&host[..got as usize], out);
    if !basep.is_null() {
        unsafe { *basep = base };
    }
    Ok(w as i64)
}

/// `getdirentries(fd, buf, nbytes, basep)` (FreeBSD 9: `long *basep`).
#[nid("getdirentries")]
pub unsafe extern "C" fn getdirentries(fd: i32, buf: *mut u8, n: i32, basep: *mut i64) -> i32 {
    posix(unsafe { getdirentries_impl(fd, buf, n, basep) }) as i32
}

/// `getdents(fd, buf, nbytes)`.
#[nid("getdents")]
pub unsafe extern "C" fn getdents(fd: i32, buf: *mut u8, n: i32) -> i32 {
    posix(unsafe { getdirentries_impl(fd, buf, n, std::ptr::null_mut()) }) as i32
}

/// `sceKernelGetdents(fd, buf, nbytes)`.
#[nid("sceKernelGetdents")]
pub unsafe extern "C" fn sce_kernel_getdents(fd: i32, buf: *mut u8, n: i32) -> i32 {
    sce(unsafe { getdirentries_impl(fd, buf, n, std::ptr::null_mut()) }) as i32
}

/// `sceKernelGetdirentries(fd, buf, nbytes, basep)`.
#[nid("sceKernelGetdirentries")]
pub unsafe extern "C" fn sce_kernel_getdirentries(
    fd: i32,
    buf: *mut u8,
    n: i32,
    basep: *mut i64,
) -> i32 {
    sce(unsafe { getdirentries_impl(fd, buf, n, basep) }) as i32
}

// ---- Positioned I/O, sync, truncate ---------------------------------------------------

/// `pread`.
#[nid("pread")]
pub unsafe extern "C-unwind" fn pread(fd: i32, buf: *mut u8, n: usize, off: i64) -> isize {
    posix(check(unsafe { libc::pread(fd, buf.cast(), n, off) } as i64)) as isize
}

/// `sceKernelPread`.
#[nid("sceKernelPread")]
pub unsafe extern "C-unwind" fn sce_kernel_pread(fd: i32, buf: *mut u8, n: usize, off: i64) -> i64 {
    if off < 0 {
        return i64::from(sce_error(EINVAL));
    }
    sce(check(unsafe { libc::pread(fd, buf.cast(), n, off) } as i64))
}

/// `pwrite`.
#[nid("pwrite")]
pub unsafe extern "C-unwind" fn pwrite(fd: i32, buf: *const u8, n: usize, off: i64) -> isize {
    posix(check(unsafe { libc::pwrite(fd, buf.cast(), n, off) } as i64)) as isize
}

/// `sceKernelPwrite`.
#[nid("sceKernelPwrite")]
pub unsafe extern "C-unwind" fn sce_kernel_pwrite(
    fd: i32,
    buf: *const u8,
    n: usize,
    off: i64,
) -> i64 {
    if off < 0 {
        return i64::from(sce_error(EINVAL));
    }
    sce(check(unsafe { libc::pwrite(fd, buf.cast(), n, off) } as i64))
}

/// `fsync`.
#[nid("fsync")]
pub extern "C-unwind" fn fsync(fd: i32) -> i32 {
    posix(check(i64::from(unsafe { libc::fsync(fd) }))) as i32
}

/// `sceKernelFsync`.
#[nid("sceKernelFsync")]
pub extern "C-unwind" fn sce_kernel_fsync(fd: i32) -> i32 {
    sce(check(i64::from(unsafe { libc::fsync(fd) }))) as i32
}

/// `ftruncate`.
#[nid("ftruncate")]
pub extern "C" fn ftruncate(fd: i32, len: i64) -> i32 {
    posix(check(i64::from(unsafe { libc::ftruncate(fd, len) }))) as i32
}

/// `sceKernelFtruncate`.
#[nid("sceKernelFtruncate")]
pub extern "C" fn sce_kernel_ftruncate(fd: i32, len: i64) -> i32 {
    sce(check(i64::from(unsafe { libc::ftruncate(fd, len) }))) as i32
}

// ---- Paths ----------------------------------------------------------------------------

/// `rmdir`.
#[nid("rmdir")]
pub unsafe extern "C" fn rmdir(path: *const libc::c_char) -> i32 {
    posix(unsafe { cpath(path) }.and_then(|p| rmdir_guest(p).map(|r| r as i64))) as i32
}

/// `sceKernelRmdir`.
#[nid("sceKernelRmdir")]
pub unsafe extern "C" fn sce_kernel_rmdir(path: *const libc::c_char) -> i32 {
    sce(unsafe { cpath(path) }.and_then(|p| rmdir_guest(p).map(|r| r as i64))) as i32
}

/// `mkdir` (the POSIX name; `sceKernelMkdir` is in `fs.rs`).
#[nid("mkdir")]
pub unsafe extern "C" fn mkdir(path: *const libc::c_char, mode: u32) -> i32 {
    posix(unsafe { cpath(path) }.and_then(|p| mkdir_guest(p, mode).map(|r| r as i64))) as i32
}

/// `access(path, mode)` (F_OK 0, X_OK 1, W_OK 2, R_OK 4 on both systems). `RESOLVE_BENEATH`
/// is not available to `faccessat`, so the path is opened confined first (`O_PATH`) and
/// checked through `/proc/self/fd`, which the kernel resolves to that very file. W_OK
/// under the read-only `/app0` is EROFS, as on FreeBSD.
pub(crate) fn access_guest(p: &[u8], mode: i32) -> Result<i64, i32> {
    if mode & !7 != 0 {
        return Err(EINVAL);
    }
    let r = resolve(p)?;
    let fd = open_beneath(r.root, &r.rel, libc::O_PATH, 0)?;
    check(i64::from(unsafe {
        libc::access(fd_path(&fd).as_ptr(), mode)
    }))?;
    if r.read_only && mode & 2 != 0 {
        return Err(EROFS);
    }
    Ok(0)
}

/// `access`.
#[nid("access")]
pub unsafe extern "C" fn access(path: *const libc::c_char, mode: i32) -> i32 {
    posix(unsafe { cpath(path) }.and_then(|p| access_guest(p, mode))) as i32
}

/// `sceKernelCheckReachability(path)`: 0 if the guest path exists, else an SCE error.
#[nid("sceKernelCheckReachability")]
pub unsafe extern "C" fn sce_kernel_check_reachability(path: *const libc::c_char) -> i32 {
    sce(unsafe { cpath(path) }.and_then(|p| access_guest(p, 0))) as i32
}

// ---- Descriptors ----------------------------------------------------------------------

/// `dup`.
#[nid("dup")]
pub extern "C" fn dup(fd: i32) -> i32 {
    posix(check(i64::from(unsafe { libc::dup(fd) }))) as i32
}

/// `dup2`.
#[nid("dup2")]
pub extern "C" fn dup2(fd: i32, to: i32) -> i32 {
    posix(check(i64::from(unsafe { libc::dup2(fd, to) }))) as i32
}

/// `pipe(fds[2])`.
#[nid("pipe")]
pub unsafe extern "C" fn pipe(fds: *mut i32) -> i32 {
    if fds.is_null() {
        errno::set(EFAULT);
        return -1;
    }
    posix(check(i64::from(unsafe { libc::pipe(fds) }))) as i32
}

// ---- Signals sets, kill ---------------------------------------------------------------

/// Highest FreeBSD signal number (`_SIG_MAXSIG`).
const FB_MAXSIG: i32 = 128;

fn sigset_op(
    set: *mut FbSigset,
    sig: Option<i32>,
    f: impl FnOnce(&mut FbSigset, usize, u32) -> i32,
) -> i32 {
    if set.is_null() {
        errno::set(EFAULT);
        return -1;
    }
    let (word, bit) = match sig {
        Some(s) if (1..=FB_MAXSIG).contains(&s) => {
            (((s - 1) / 32) as usize, 1u32 << ((s - 1) % 32))
        }
        Some(_) => {
            errno::set(EINVAL);
            return -1;
        }
        None => (0, 0),
    };
    f(unsafe { &mut *set }, word, bit)
}

/// `sigemptyset` (FreeBSD's 128-bit `sigset_t`).
#[nid("sigemptyset")]
pub unsafe extern "C" fn sigemptyset(set: *mut FbSigset) -> i32 {
    sigset_op(set, None, |s, _, _| {
        *s = [0; 4];
        0
    })
}

/// `sigfillset`.
#[nid("sigfillset")]
pub unsafe extern "C" fn sigfillset(set: *mut FbSigset) -> i32 {
    sigset_op(set, None, |s, _, _| {
        *s = [!0; 4];
        0
    })
}

/// `sigaddset` (EINVAL outside 1..=128).
#[nid("sigaddset")]
pub unsafe extern "C" fn sigaddset(set: *mut FbSigset, sig: i32) -> i32 {
    sigset_op(set, Some(sig), |s, w, b| {
        s[w] |= b;
        0
    })
}

/// `sigdelset`.
#[nid("sigdelset")]
pub unsafe extern "C" fn sigdelset(set: *mut FbSigset, sig: i32) -> i32 {
    sigset_op(set, Some(sig), |s, w, b| {
        s[w] &= !b;
        0
    })
}

/// `sigismember`.
#[nid("sigismember")]
pub unsafe extern "C" fn sigismember(set: *const FbSigset, sig: i32) -> i32 {
    sigset_op(set.cast_mut(), Some(sig), |s, w, b| {
        i32::from(s[w] & b != 0)
    })
}

/// `kill(pid, sig)`: FreeBSD signal numbers; signal 0 probes. Signals without a host
/// counterpart can only be raised in this process (`raise`).
#[nid("kill")]
pub extern "C" fn kill(pid: i32, sig: i32) -> i32 {
    let host = if sig == 0 {
        0
    } else {
        match crate::signal::to_host(sig) {
            Some(h) => h,
            None => {
                if pid == unsafe { libc::getpid() } {
                    return crate::signal::raise(sig);
                }
                errno::set(EINVAL);
                return -1;
            }
        }
    };
    posix(check(i64::from(unsafe { libc::kill(pid, host) }))) as i32
}

// ---- Time -----------------------------------------------------------------------------

/// FreeBSD clock ids that have a host counterpart (REALTIME 0, VIRTUAL 1, PROF 2,
/// MONOTONIC 4, UPTIME 5, UPTIME_PRECISE 7, UPTIME_FAST 8, REALTIME_PRECISE 9,
/// REALTIME_FAST 10, MONOTONIC_PRECISE 11, MONOTONIC_FAST 12, SECOND 13,
/// THREAD_CPUTIME_ID 14, PROCESS_CPUTIME_ID 15).
pub fn clock_to_host(id: i32) -> Option<libc::clockid_t> {
    Some(match id {
        0 | 9 => libc::CLOCK_REALTIME,
        10 | 13 => libc::CLOCK_REALTIME_COARSE,
        4 | 5 | 7 | 11 => libc::CLOCK_MONOTONIC,
        8 | 12 => libc::CLOCK_MONOTONIC_COARSE,
        14 => libc::CLOCK_THREAD_CPUTIME_ID,
        1 | 2 | 15 => libc::CLOCK_PROCESS_CPUTIME_ID,
        _ => return None,
    })
}

/// `clock_getres`.
#[nid("clock_getres")]
pub unsafe extern "C" fn clock_getres(id: i32, res: *mut libc::timespec) -> i32 {
    let Some(h) = clock_to_host(id) else {
        errno::set(EINVAL);
        return -1;
    };
    posix(check(i64::from(unsafe { libc::clock_getres(h, res) }))) as i32
}

/// `sceKernelNanosleep(req, rem)`: a cancellation point; SCE error codes.
#[nid("sceKernelNanosleep")]
pub unsafe extern "C-unwind" fn sce_kernel_nanosleep(
    req: *const libc::timespec,
    rem: *mut libc::timespec,
) -> i32 {
    if req.is_null() {
        return sce_error(EINVAL);
    }
    let r = unsafe { &*req };
    if r.tv_sec < 0 || !(0..1_000_000_000).contains(&r.tv_nsec) {
        return sce_error(EINVAL);
    }
    sce(check(i64::from(unsafe { libc::nanosleep(req, rem) }))) as i32
}

/// `getpagesize`: the host page size, the same answer as `sysconf(_SC_PAGESIZE)`, and
/// the granularity `mmap`/`mprotect` really have here.
#[nid("getpagesize")]
pub extern "C" fn getpagesize() -> i32 {
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as i32 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FreeBSD records parsed back out of `buf`.
    fn parse(buf: &[u8]) -> Vec<(u32, u8, String)> {
        let mut v = Vec::new();
        let mut i = 0;
        while i < buf.len() {
            let reclen = u16::from_ne_bytes([buf[i + 4], buf[i + 5]]) as usize;
            let namlen = buf[i + 7] as usize;
            assert_eq!(reclen, dirent_size(namlen));
            assert_eq!(reclen % 4, 0);
            assert_eq!(buf[i + 8 + namlen], 0, "name NUL-terminated");
            v.push((
                u32::from_ne_bytes(buf[i..i + 4].try_into().unwrap()),
                buf[i + 6],
                String::from_utf8(buf[i + 8..i + 8 + namlen].to_vec()).unwrap(),
            ));
            i += reclen;
        }
        v
    }

    #[test]
    fn getdents_matches_the_host_directory_listing() {
        let dir = std::env::temp_dir().join(format!("aps5-getdents-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        let mut want = vec![(".".to_string(), 4u8), ("..".to_string(), 4u8)];
        for i in 0..150 {
            let name = format!("file-{i:03}-{}", "x".repeat(i % 40));
            std::fs::write(dir.join(&name), b"x").unwrap();
            want.push((name, 8));
        }
        std::fs::create_dir(dir.join("sub")).unwrap();
        want.push(("sub".into(), 4));
        // The oracle: the host's readdir (std::fs::read_dir) and its inode numbers.
        let inode = |n: &str| {
            use std::os::unix::fs::MetadataExt;
            std::fs::symlink_metadata(dir.join(n)).unwrap().ino() as u32
        };
        let c = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
        assert!(fd >= 0);
        // A small buffer forces many calls; every entry must come exactly once.
        let mut got = Vec::new();
        let mut buf = vec![0u8; 512];
        let mut bases = Vec::new();
        loop {
            let mut base = -1i64;
            let n = unsafe { getdirentries(fd, buf.as_mut_ptr(), 512, &mut base) };
            assert!(n >= 0, "errno {}", unsafe { *errno::error() });
            if n == 0 {
                break;
            }
            bases.push(base);
            got.extend(parse(&buf[..n as usize]));
        }
        assert!(bases.len() > 3, "512 bytes should take several calls");
        assert_eq!(bases[0], 0);
        let mut names: Vec<_> = got.iter().map(|(_, t, n)| (n.clone(), *t)).collect();
        names.sort();
        want.sort();
        assert_eq!(names, want);
        for (ino, _, n) in &got {
            if n != ".." {
                assert_eq!(*ino, inode(n), "{n}");
            }
        }
        // Seeking back to a recorded base gives the same entries again.
        assert_eq!(
            unsafe { libc::lseek(fd, bases[1], libc::SEEK_SET) },
            bases[1]
        );
        let n = unsafe { getdents(fd, buf.as_mut_ptr(), 512) };
        assert!(n > 0);
        // A buffer too small for any host record is EINVAL, as on FreeBSD.
        assert_eq!(unsafe { getdents(fd, buf.as_mut_ptr(), 8) }, -1);
        assert_eq!(unsafe { *errno::error() }, 22);
        assert_eq!(
            unsafe { sce_kernel_getdents(-1, buf.as_mut_ptr(), 512) },
            sce_error(9)
        );
        unsafe { libc::close(fd) };
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sigset_functions_match_freebsd_bit_layout() {
        let mut s: FbSigset = [1; 4];
        unsafe {
            assert_eq!(sigemptyset(&mut s), 0);
            assert_eq!(s, [0; 4]);
            assert_eq!(sigaddset(&mut s, 1), 0);
            assert_eq!(sigaddset(&mut s, 33), 0);
            assert_eq!(sigaddset(&mut s, 128), 0);
            assert_eq!(s, [1, 1, 0, 1 << 31]);
            assert_eq!(sigismember(&s, 33), 1);
            assert_eq!(sigismember(&s, 34), 0);
            assert_eq!(sigdelset(&mut s, 33), 0);
            assert_eq!(sigismember(&s, 33), 0);
            assert_eq!(sigaddset(&mut s, 129), -1);
            assert_eq!(*errno::error(), 22);
            assert_eq!(sigismember(&s, 0), -1);
            assert_eq!(sigfillset(&mut s), 0);
            assert_eq!(s, [!0; 4]);
        }
    }

    #[test]
    fn positioned_io_and_truncate_match_the_host() {
        let p = std::env::temp_dir().join(format!("aps5-pio-{}", std::process::id()));
        let f = std::fs::File::create(&p).unwrap();
        use std::os::fd::AsRawFd;
        let fd = f.as_raw_fd();
        unsafe {
            assert_eq!(pwrite(fd, b"hello world".as_ptr(), 11, 0), 11);
            assert_eq!(sce_kernel_pwrite(fd, b"W".as_ptr(), 1, 6), 1);
            // The file position is untouched by positioned I/O.
            assert_eq!(libc::lseek(fd, 0, libc::SEEK_CUR), 0);
            assert_eq!(
                sce_kernel_pwrite(fd, b"W".as_ptr(), 1, -1),
                i64::from(sce_error(22))
            );
            assert_eq!(sce_kernel_ftruncate(fd, 5), 0);
            assert_eq!(fsync(fd), 0);
        }
        assert_eq!(std::fs::read(&p).unwrap(), b"hello");
        let r = std::fs::File::open(&p).unwrap();
        let mut buf = [0u8; 8];
        unsafe {
            assert_eq!(pread(r.as_raw_fd(), buf.as_mut_ptr(), 8, 1), 4);
            assert_eq!(&buf[..4], b"ello");
            assert_eq!(pread(-1, buf.as_mut_ptr(), 8, 0), -1);
            assert_eq!(*errno::error(), 9);
        }
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn clocks_and_sleep() {
        let mut ts = libc::timespec {
            tv_sec: 9,
            tv_nsec: 9,
        };
        let mut host = ts;
        unsafe {
            assert_eq!(clock_getres(4, &mut ts), 0);
            libc::clock_getres(libc::CLOCK_MONOTONIC, &mut host);
            assert_eq!((ts.tv_sec, ts.tv_nsec), (host.tv_sec, host.tv_nsec));
            assert_eq!(clock_getres(99, &mut ts), -1);
            let req = libc::timespec {
                tv_sec: 0,
                tv_nsec: 1_000_000,
            };
            let t0 = std::time::Instant::now();
            assert_eq!(sce_kernel_nanosleep(&req, std::ptr::null_mut()), 0);
            assert!(t0.elapsed() >= std::time::Duration::from_millis(1));
            let bad = libc::timespec {
                tv_sec: 0,
                tv_nsec: 1_000_000_000,
            };
            assert_eq!(
                sce_kernel_nanosleep(&bad, std::ptr::null_mut()),
                sce_error(22)
            );
        }
    }

    #[test]
    fn dup_pipe_and_kill_probe() {
        let mut fds = [0i32; 2];
        unsafe {
            assert_eq!(pipe(fds.as_mut_ptr()), 0);
            let d = dup(fds[1]);
            assert!(d > fds[1]);
            assert_eq!(libc::write(d, b"ab".as_ptr().cast(), 2), 2);
            let mut b = [0u8; 2];
            assert_eq!(libc::read(fds[0], b.as_mut_ptr().cast(), 2), 2);
            assert_eq!(&b, b"ab");
            assert_eq!(dup2(fds[0], d), d);
            for fd in [fds[0], fds[1], d] {
                libc::close(fd);
            }
            assert_eq!(dup(-1), -1);
            assert_eq!(*errno::error(), 9);
        }
        assert_eq!(kill(unsafe { libc::getpid() }, 0), 0);
        assert_eq!(kill(i32::MAX, 0), -1);
        assert_eq!(unsafe { *errno::error() }, 3); // ESRCH
    }
}
