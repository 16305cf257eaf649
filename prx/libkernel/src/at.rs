//! The FreeBSD `*at` system calls (`openat`, `fstatat`, `unlinkat`, ...), made raw by
//! programs with their own C library (see `syscall.rs`), and the plain calls that are their
//! `AT_FDCWD` form (`link`, `chmod`, `readlink`, ...).
//!
//! A path relative to a directory descriptor becomes a guest path: the descriptor's folder
//! is found beneath one of the mount folders ([`fs::guest_dir_of`]) and the path is joined
//! to its guest name, then resolved and confined like every guest path ([`fs::resolve`],
//! `RESOLVE_BENEATH`). `AT_FDCWD` or an absolute path ignores the descriptor, as FreeBSD
//! does. So `..` is refused (EACCES), a symlink cannot leave the mount, and every change
//! under `/app0` is EROFS, whichever form the call takes. Flag values are FreeBSD's
//! (`sys/fcntl.h`); a flag a call does not take is EINVAL, as there.

use std::borrow::Cow;
use std::ffi::CStr;
use std::os::fd::AsRawFd;

use crate::{errno, files, fs};

/// `AT_FDCWD`: the path is relative to the working directory.
pub const AT_FDCWD: i32 = -100;
/// `faccessat`: check with the effective ids (the same as the real ones here).
pub const AT_EACCESS: i32 = 0x100;
/// `fstatat`/`fchmodat`/`fchownat`: act on a symlink itself.
pub const AT_SYMLINK_NOFOLLOW: i32 = 0x200;
/// `linkat`: link what a symlink points to.
pub const AT_SYMLINK_FOLLOW: i32 = 0x400;
/// `unlinkat`: remove a folder.
pub const AT_REMOVEDIR: i32 = 0x800;

const EPERM: i32 = 1;
const ENOENT: i32 = 2;
const EFAULT: i32 = 14;
const EINVAL: i32 = 22;
const EOPNOTSUPP: i32 = 45;

/// Every `*at` call of FreeBSD 9's `syscalls.master` (the PS4/PS5 numbering) that is served,
/// by number. `fexecve` (492) is not: a console program cannot start another.
pub const SERVED: &[(u64, &str)] = &[
    (489, "faccessat"),
    (490, "fchmodat"),
    (491, "fchownat"),
    (493, "fstatat"),
    (494, "futimesat"),
    (495, "linkat"),
    (496, "mkdirat"),
    (497, "mkfifoat"),
    (498, "mknodat"),
    (499, "openat"),
    (500, "readlinkat"),
    (501, "renameat"),
    (502, "symlinkat"),
    (503, "unlinkat"),
];

type R = Result<u64, i32>;

fn host(r: i64) -> R {
    if r < 0 {
        Err(errno::from_host(
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
        ))
    } else {
        Ok(r as u64)
    }
}

fn done<T>(r: Result<T, i32>) -> R {
    r.map(|_| 0)
}

unsafe fn cpath<'a>(p: *const libc::c_char) -> Result<&'a [u8], i32> {
    if p.is_null() {
        Err(EFAULT)
    } else {
        Ok(unsafe { CStr::from_ptr(p) }.to_bytes())
    }
}

/// The guest path `path` names relative to `dirfd` (see the module documentation).
pub fn guest_path(dirfd: i32, path: &[u8]) -> Result<Cow<'_, [u8]>, i32> {
    if path.is_empty() {
        return Err(ENOENT);
    }
    if path[0] == b'/' || dirfd == AT_FDCWD {
        return Ok(Cow::Borrowed(path));
    }
    let mut joined = fs::guest_dir_of(dirfd)?.into_bytes();
    joined.push(b'/');
    joined.extend_from_slice(path);
    Ok(Cow::Owned(joined))
}

unsafe fn at<'a>(dirfd: i32, path: *const libc::c_char) -> Result<Cow<'a, [u8]>, i32> {
    guest_path(dirfd, unsafe { cpath(path) }?)
}

fn check_flags(flag: i32, allowed: i32) -> Result<(), i32> {
    if flag & !allowed != 0 {
        Err(EINVAL)
    } else {
        Ok(())
    }
}

/// `openat(fd, path, flags, mode)` (FreeBSD `open` flags).
pub unsafe fn openat(dirfd: i32, path: *const libc::c_char, flags: i32, mode: u32) -> R {
    let p = unsafe { at(dirfd, path) }?;
    fs::open_guest(&p, flags, mode).map(|fd| fd as u64)
}

/// `fstatat(fd, path, sb, flag)`: the FreeBSD 9 `struct stat`; `AT_SYMLINK_NOFOLLOW` is
/// `lstat`.
pub unsafe fn fstatat(
    dirfd: i32,
    path: *const libc::c_char,
    out: *mut fs::GuestStat,
    flag: i32,
) -> R {
    check_flags(flag, AT_SYMLINK_NOFOLLOW)?;
    let p = unsafe { at(dirfd, path) }?;
    if out.is_null() {
        return Err(EFAULT);
    }
    let nofollow = if flag & AT_SYMLINK_NOFOLLOW != 0 {
        libc::O_NOFOLLOW
    } else {
        0
    };
    let fd = fs::open_confined(&p, libc::O_PATH | nofollow, 0)?;
    if unsafe { fs::fstat(fd.as_raw_fd(), out) } != 0 {
        return Err(unsafe { *errno::error() });
    }
    Ok(0)
}

/// `faccessat(fd, path, mode, flag)`: `AT_EACCESS` only (the process is never set-user-id,
/// so effective and real ids are the same).
pub unsafe fn faccessat(dirfd: i32, path: *const libc::c_char, mode: i32, flag: i32) -> R {
    check_flags(flag, AT_EACCESS)?;
    let p = unsafe { at(dirfd, path) }?;
    done(files::access_guest(&p, mode))
}

/// `fchmodat(fd, path, mode, flag)`; with `AT_SYMLINK_NOFOLLOW` a symlink itself cannot be
/// changed here (EOPNOTSUPP: Linux keeps no mode on symlinks), another file can.
pub unsafe fn fchmodat(dirfd: i32, path: *const libc::c_char, mode: u32, flag: i32) -> R {
    check_flags(flag, AT_SYMLINK_NOFOLLOW)?;
    let p = unsafe { at(dirfd, path) }?;
    if flag & AT_SYMLINK_NOFOLLOW == 0 {
        return done(fs::chmod_guest(&p, mode));
    }
    let fd = writable(&p, libc::O_NOFOLLOW)?;
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    host(i64::from(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) }))?;
    if st.st_mode & libc::S_IFMT == libc::S_IFLNK {
        return Err(EOPNOTSUPP);
    }
    host(i64::from(unsafe {
        libc::chmod(fs::fd_path(&fd).as_ptr(), mode & 0o7777)
    }))
}

/// An `O_PATH` descriptor of a guest file that is to be changed (EROFS under `/app0`).
fn writable(p: &[u8], extra: i32) -> Result<std::os::fd::OwnedFd, i32> {
    let r = fs::resolve(p)?;
    if r.read_only {
        return Err(fs::EROFS);
    }
    fs::open_beneath(r.root, &r.rel, libc::O_PATH | extra, 0)
}

/// `fchownat(fd, path, uid, gid, flag)` (-1 keeps an id, as on both systems); the host
/// decides who may change an owner (EPERM for another user's id).
pub unsafe fn fchownat(dirfd: i32, path: *const libc::c_char, uid: u32, gid: u32, flag: i32) -> R {
    check_flags(flag, AT_SYMLINK_NOFOLLOW)?;
    let p = unsafe { at(dirfd, path) }?;
    let nofollow = if flag & AT_SYMLINK_NOFOLLOW != 0 {
        libc::O_NOFOLLOW
    } else {
        0
    };
    let fd = writable(&p, nofollow)?;
    host(i64::from(unsafe {
        libc::fchownat(fd.as_raw_fd(), c"".as_ptr(), uid, gid, libc::AT_EMPTY_PATH)
    }))
}

/// `futimesat(fd, path, times)`: `struct timeval[2]` (access, modification), or NULL for
/// now; microseconds outside 0..1000000 are EINVAL.
pub unsafe fn futimesat(dirfd: i32, path: *const libc::c_char, times: *const [i64; 4]) -> R {
    let p = unsafe { at(dirfd, path) }?;
    let ts = match unsafe { times.as_ref() } {
        None => None,
        Some(&[as_, au, ms, mu]) => {
            if !(0..1_000_000).contains(&au) || !(0..1_000_000).contains(&mu) {
                return Err(EINVAL);
            }
            Some([
                libc::timespec {
                    tv_sec: as_,
                    tv_nsec: au * 1000,
                },
                libc::timespec {
                    tv_sec: ms,
                    tv_nsec: mu * 1000,
                },
            ])
        }
    };
    let fd = writable(&p, 0)?;
    host(i64::from(unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            fs::fd_path(&fd).as_ptr(),
            ts.as_ref().map_or(std::ptr::null(), |t| t.as_ptr()),
            0,
        )
    }))
}

/// `linkat(fd1, path1, fd2, path2, flag)`: both names on one mount (EXDEV otherwise);
/// `AT_SYMLINK_FOLLOW` links a symlink's target (confined), else the symlink itself.
pub unsafe fn linkat(
    fd1: i32,
    from: *const libc::c_char,
    fd2: i32,
    to: *const libc::c_char,
    flag: i32,
) -> R {
    check_flags(flag, AT_SYMLINK_FOLLOW)?;
    let a = unsafe { at(fd1, from) }?;
    let b = unsafe { at(fd2, to) }?;
    done(fs::link_guest(&a, &b, flag & AT_SYMLINK_FOLLOW != 0))
}

/// `mkdirat(fd, path, mode)`.
pub unsafe fn mkdirat(dirfd: i32, path: *const libc::c_char, mode: u32) -> R {
    let p = unsafe { at(dirfd, path) }?;
    done(fs::mkdir_guest(&p, mode))
}

/// `mkfifoat(fd, path, mode)`.
pub unsafe fn mkfifoat(dirfd: i32, path: *const libc::c_char, mode: u32) -> R {
    let p = unsafe { at(dirfd, path) }?;
    let e = fs::entry(&p, 17)?; // the mount folder itself: EEXIST
    host(i64::from(unsafe {
        libc::mkfifoat(e.dir.as_raw_fd(), e.leaf.as_ptr(), mode & 0o7777)
    }))
}

/// `mknodat(fd, path, mode, dev)` as FreeBSD 9's `kern_mknodat`: a FIFO with device 0 is
/// `mkfifoat`; device nodes need privilege (EPERM); any other type is EINVAL.
pub unsafe fn mknodat(dirfd: i32, path: *const libc::c_char, mode: u32, dev: u32) -> R {
    // The path is read first, as the kernel copies it in before looking at the type.
    unsafe { cpath(path) }?;
    match mode & 0o170000 {
        0o010000 if dev == 0 => unsafe { mkfifoat(dirfd, path, mode) },
        // S_IFCHR, S_IFBLK, S_IFWHT, S_IFMT.
        0o020000 | 0o060000 | 0o160000 | 0o170000 => Err(EPERM),
        _ => Err(EINVAL),
    }
}

/// `readlinkat(fd, path, buf, size)`: the link's own text (no NUL), the symlink itself not
/// followed; reading works under `/app0` too.
pub unsafe fn readlinkat(dirfd: i32, path: *const libc::c_char, buf: *mut u8, size: usize) -> R {
    let p = unsafe { at(dirfd, path) }?;
    if buf.is_null() {
        return Err(EFAULT);
    }
    let r = fs::resolve(&p)?;
    let (dir, leaf) = fs::split_beneath(&r, EINVAL)?;
    host(unsafe { libc::readlinkat(dir.as_raw_fd(), leaf.as_ptr(), buf.cast(), size) } as i64)
}

/// `renameat(fd1, from, fd2, to)`: both names on one mount (EXDEV otherwise).
pub unsafe fn renameat(
    fd1: i32,
    from: *const libc::c_char,
    fd2: i32,
    to: *const libc::c_char,
) -> R {
    let a = unsafe { at(fd1, from) }?;
    let b = unsafe { at(fd2, to) }?;
    done(fs::rename_guest(&a, &b))
}

/// `symlinkat(target, fd, path)`: the target text is stored as given; whatever later follows
/// the link is confined like every lookup.
pub unsafe fn symlinkat(target: *const libc::c_char, dirfd: i32, path: *const libc::c_char) -> R {
    let t = unsafe { cpath(target) }?;
    if t.is_empty() {
        return Err(ENOENT);
    }
    let p = unsafe { at(dirfd, path) }?;
    let e = fs::entry(&p, 17)?; // EEXIST
    host(i64::from(unsafe {
        libc::symlinkat(target, e.dir.as_raw_fd(), e.leaf.as_ptr())
    }))
}

/// `unlinkat(fd, path, flag)`: `AT_REMOVEDIR` is `rmdir`, else `unlink`.
pub unsafe fn unlinkat(dirfd: i32, path: *const libc::c_char, flag: i32) -> R {
    check_flags(flag, AT_REMOVEDIR)?;
    let p = unsafe { at(dirfd, path) }?;
    if flag & AT_REMOVEDIR != 0 {
        done(fs::rmdir_guest(&p))
    } else {
        done(fs::unlink_guest(&p))
    }
}
