//! Files: guest paths (`/app0/...`, `/savedata0/...`, `/temp0/...`, `/download0/...`) map
//! onto host folders and cannot leave them (`openat2` with `RESOLVE_BENEATH`, which also
//! refuses `..` and symlinks that escape). Guest fds are host fds.
//!
//! Host folders come from the environment, set by `aps5 run` (see docs/PRX.md):
//! `APS5_APP0` (default: `app0/` next to the running executable) and `APS5_DATA` (default:
//! `data/` next to it), under which `savedata0/`, `temp0/` and `download0/` are created.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use aps5_prx_macros::nid;

use crate::{errno, sce_error};

/// Host folders behind the guest mount points.
#[derive(Debug)]
pub struct Mounts {
    roots: Vec<Mount>,
}

/// One guest mount point.
#[derive(Debug)]
struct Mount {
    /// Guest name without the slash (`app0`).
    name: &'static str,
    /// The host folder, opened once; every guest path is resolved beneath it.
    fd: i32,
    /// `/app0` is the game's read-only package on the console; its host folder holds
    /// hard links to the user's dump, so a write there would change the dump.
    read_only: bool,
}

static MOUNTS: OnceLock<Mounts> = OnceLock::new();

fn exe_dir() -> PathBuf {
    std::fs::read_link("/proc/self/exe")
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."))
}

fn open_dir(p: &Path) -> i32 {
    match std::fs::File::open(p) {
        Ok(f) => f.into_raw_fd(),
        Err(_) => -1,
    }
}

/// The host folders behind `/app0` and the data mounts, read from the environment at
/// start-up (before the guest can change it); nothing is opened or created until a guest
/// path is first used ([`mounts`]): a program that touches no file makes no system call
/// for them.
static HOST_DIRS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();

pub(crate) fn init() {
    host_dirs();
}

fn host_dirs() -> &'static (PathBuf, PathBuf) {
    HOST_DIRS.get_or_init(|| {
        let var = |name: &str, default: &str| {
            std::env::var_os(name)
                .map(PathBuf::from)
                .unwrap_or_else(|| exe_dir().join(default))
        };
        (var("APS5_APP0", "app0"), var("APS5_DATA", "data"))
    })
}

/// The mounts, opened at the first guest path.
fn mounts() -> &'static Mounts {
    MOUNTS.get_or_init(|| {
        let (app0, data) = host_dirs();
        let mut roots = vec![Mount {
            name: "app0",
            fd: open_dir(app0),
            read_only: true,
        }];
        for name in ["savedata0", "temp0", "download0"] {
            let dir = data.join(name);
            // Writable areas are created on demand; failure shows up as ENOENT on open.
            let _ = std::fs::create_dir_all(&dir);
            roots.push(Mount {
                name,
                fd: open_dir(&dir),
                read_only: false,
            });
        }
        Mounts { roots }
    })
}

/// The guest working directory (an absolute guest path); empty means `/app0`, where a
/// PS4/PS5 process starts.
static CWD: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

/// The guest working directory.
pub fn cwd() -> String {
    let c = CWD.lock().unwrap_or_else(|e| e.into_inner());
    if c.is_empty() {
        "/app0".to_string()
    } else {
        c.clone()
    }
}

const EPERM: i32 = 1;
const ENOENT: i32 = 2;
const EBADF: i32 = 9;
const EACCES: i32 = 13;
const ENOTDIR: i32 = 20;
const EBUSY: i32 = 16;
const EEXIST: i32 = 17;
const EXDEV: i32 = 18;
const EINVAL: i32 = 22;
/// FreeBSD `EROFS`: every change under `/app0`.
pub(crate) const EROFS: i32 = 30;

/// A guest path split into its mount and the path below the mount's folder.
#[derive(Debug)]
pub struct Resolved {
    /// The mount's host folder.
    pub root: i32,
    /// The path below it (`.` for the mount itself); never has a `..` component.
    pub rel: CString,
    /// Whether the mount is read-only (`/app0`).
    pub read_only: bool,
    /// Index of the mount (renames between two mounts are EXDEV, as on the console).
    mount: usize,
}

/// Splits a guest path into its mount and the path relative to it; relative guest paths
/// are relative to the guest working directory ([`cwd`], `/app0` at start). This is
/// lexical only: every caller goes on through [`open_beneath`] or [`entry`], where the
/// kernel keeps symlinks from leaving the mount.
pub fn resolve(guest: &[u8]) -> Result<Resolved, i32> {
    let mounts = mounts();
    if guest.is_empty() {
        return Err(ENOENT);
    }
    let s = std::str::from_utf8(guest).map_err(|_| ENOENT)?;
    let joined;
    let s = if s.starts_with('/') {
        s
    } else {
        joined = format!("{}/{s}", cwd());
        joined.as_str()
    };
    let abs = s.trim_start_matches('/');
    let (name, rest) = abs.split_once('/').unwrap_or((abs, ""));
    let mount = mounts
        .roots
        .iter()
        .position(|m| m.name == name)
        .ok_or(ENOENT)?; // no such mount point here
    let m = &mounts.roots[mount];
    if m.fd < 0 {
        return Err(ENOENT);
    }
    let rel = rest.trim_start_matches('/');
    // `..` is refused outright, before any host call sees the path.
    if rel.split('/').any(|c| c == "..") {
        return Err(EACCES);
    }
    let rel = if rel.is_empty() { "." } else { rel };
    Ok(Resolved {
        root: m.fd,
        rel: CString::new(rel).map_err(|_| EINVAL)?,
        read_only: m.read_only,
        mount,
    })
}

/// `struct open_how` of openat2(2) (the libc crate's is non-exhaustive).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// The one confined lookup: openat2(2) of `rel` under the mount folder `root` with
/// `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`, so neither `..` nor a symlink (relative,
/// absolute or a `/proc` magic link) can reach a file outside the mount. An attempt to
/// leave is EACCES, as a `..` component is. Errors are FreeBSD errno values.
pub(crate) fn open_beneath(root: i32, rel: &CStr, flags: i32, mode: u64) -> Result<OwnedFd, i32> {
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        mode,
        resolve: libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS,
    };
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root,
            rel.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        let host = std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        return Err(if host == libc::EXDEV {
            EACCES
        } else {
            errno::from_host(host)
        });
    }
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Opens a guest path confined to its mount with host `open` flags; a write open
/// (`O_WRONLY`/`O_RDWR`/`O_CREAT`/`O_TRUNC`/`O_APPEND`) under `/app0` is EROFS.
pub fn open_confined(guest: &[u8], flags: i32, mode: u64) -> Result<OwnedFd, i32> {
    let r = resolve(guest)?;
    let writes = flags & libc::O_ACCMODE != libc::O_RDONLY
        || flags & (libc::O_CREAT | libc::O_TRUNC | libc::O_APPEND) != 0;
    if r.read_only && writes && flags & libc::O_PATH == 0 {
        return Err(EROFS);
    }
    open_beneath(r.root, &r.rel, flags, mode)
}

/// A guest path prepared for an operation on the name itself (mkdir, rmdir, unlink,
/// rename): its parent folder opened confined ([`open_beneath`]) and the last component,
/// which the `*at` call then acts on without following it.
#[derive(Debug)]
pub(crate) struct Entry {
    /// The parent folder (an `O_PATH` descriptor).
    pub dir: OwnedFd,
    /// The last component: never empty, `.` or `..`.
    pub leaf: CString,
    mount: usize,
}

impl Entry {
    /// Whether both names are on the same mount.
    pub fn same_mount(&self, other: &Entry) -> bool {
        self.mount == other.mount
    }
}

/// Splits a guest path into a confined parent and a leaf (see [`Entry`]). The mount
/// folder itself is refused with `at_root` (EBUSY for removal, EEXIST for mkdir), a
/// trailing `.` with EINVAL; a change under a read-only mount is EROFS.
pub(crate) fn entry(guest: &[u8], at_root: i32) -> Result<Entry, i32> {
    let r = resolve(guest)?;
    if r.read_only {
        return Err(EROFS);
    }
    let (dir, leaf) = split_beneath(&r, at_root)?;
    Ok(Entry {
        dir,
        leaf,
        mount: r.mount,
    })
}

/// The parent folder of a resolved path, opened confined (`O_PATH`), and its last
/// component (never empty, `.` or `..`).
pub(crate) fn split_beneath(r: &Resolved, at_root: i32) -> Result<(OwnedFd, CString), i32> {
    let rel = r.rel.to_bytes();
    let mut end = rel.len();
    while end > 0 && rel[end - 1] == b'/' {
        end -= 1;
    }
    let rel = &rel[..end];
    if rel.is_empty() || rel == b"." {
        return Err(at_root);
    }
    let (parent, leaf) = match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&b"."[..], rel),
    };
    if leaf == b"." {
        return Err(EINVAL);
    }
    let parent = if parent.is_empty() { &b"."[..] } else { parent };
    let parent = CString::new(parent).map_err(|_| EINVAL)?;
    let dir = open_beneath(r.root, &parent, libc::O_PATH | libc::O_DIRECTORY, 0)?;
    Ok((dir, CString::new(leaf).map_err(|_| EINVAL)?))
}

/// `/proc/self/fd/N`: names the file `fd` refers to for host calls that take a path
/// (chmod, access, dlopen); the kernel resolves it to that very file.
pub(crate) fn fd_path(fd: &OwnedFd) -> CString {
    CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).expect("no NUL")
}

/// FreeBSD `open` flags -> Linux.
fn host_flags(f: i32) -> i32 {
    let mut h = f & 3; // O_RDONLY / O_WRONLY / O_RDWR are the same
    for (bsd, linux) in [
        (0x0004, libc::O_NONBLOCK),
        (0x0008, libc::O_APPEND),
        (0x0080, libc::O_SYNC),
        (0x0200, libc::O_CREAT),
        (0x0400, libc::O_TRUNC),
        (0x0800, libc::O_EXCL),
        (0x20000, libc::O_DIRECTORY),
        (0x100000, libc::O_CLOEXEC),
    ] {
        if f & bsd != 0 {
            h |= linux;
        }
    }
    h
}

/// Opens a guest path with FreeBSD `open` flags; returns the fd or a FreeBSD errno.
pub fn open_guest(path: &[u8], flags: i32, mode: u32) -> Result<i32, i32> {
    let mode = if flags & 0x200 != 0 {
        u64::from(mode & 0o7777)
    } else {
        0
    };
    open_confined(path, host_flags(flags), mode).map(IntoRawFd::into_raw_fd)
}

fn posix<T: Copy>(r: Result<T, i32>, fail: T) -> T {
    match r {
        Ok(v) => v,
        Err(e) => {
            errno::set(e);
            fail
        }
    }
}

fn host_ret(r: isize) -> Result<isize, i32> {
    if r < 0 {
        Err(errno::from_host(
            std::io::Error::last_os_error().raw_os_error().unwrap_or(5),
        ))
    } else {
        Ok(r)
    }
}

fn sce_ret(r: Result<isize, i32>) -> i64 {
    match r {
        Ok(v) => v as i64,
        Err(e) => i64::from(sce_error(e)),
    }
}

unsafe fn cstr<'a>(p: *const libc::c_char) -> Result<&'a [u8], i32> {
    if p.is_null() {
        Err(14) // EFAULT
    } else {
        Ok(unsafe { CStr::from_ptr(p) }.to_bytes())
    }
}

/// `open` (also `_open`): FreeBSD flags, guest paths.
#[nid("open")]
pub unsafe extern "C" fn open(path: *const libc::c_char, flags: i32, mode: u32) -> i32 {
    posix(
        unsafe { cstr(path) }.and_then(|p| open_guest(p, flags, mode)),
        -1,
    )
}

/// `_open`.
#[nid("_open")]
pub unsafe extern "C" fn open_(path: *const libc::c_char, flags: i32, mode: u32) -> i32 {
    unsafe { open(path, flags, mode) }
}

/// `sceKernelOpen`: like `open`, SCE error codes.
#[nid("sceKernelOpen")]
pub unsafe extern "C" fn sce_kernel_open(path: *const libc::c_char, flags: i32, mode: u32) -> i32 {
    match unsafe { cstr(path) }.and_then(|p| open_guest(p, flags, mode)) {
        Ok(fd) => fd,
        Err(e) => sce_error(e),
    }
}

/// `read`.
#[nid("read")]
pub unsafe extern "C-unwind" fn read(fd: i32, buf: *mut u8, n: usize) -> isize {
    posix(host_ret(unsafe { libc::read(fd, buf.cast(), n) }), -1)
}

/// `sceKernelRead`.
#[nid("sceKernelRead")]
pub unsafe extern "C-unwind" fn sce_kernel_read(fd: i32, buf: *mut u8, n: usize) -> i64 {
    sce_ret(host_ret(unsafe { libc::read(fd, buf.cast(), n) }))
}

/// `write`.
#[nid("write")]
pub unsafe extern "C-unwind" fn write(fd: i32, buf: *const u8, n: usize) -> isize {
    posix(host_ret(unsafe { libc::write(fd, buf.cast(), n) }), -1)
}

/// `sceKernelWrite`.
#[nid("sceKernelWrite")]
pub unsafe extern "C-unwind" fn sce_kernel_write(fd: i32, buf: *const u8, n: usize) -> i64 {
    sce_ret(host_ret(unsafe { libc::write(fd, buf.cast(), n) }))
}

/// `close`.
#[nid("close")]
pub extern "C" fn close(fd: i32) -> i32 {
    posix(host_ret(unsafe { libc::close(fd) } as isize), -1) as i32
}

/// `sceKernelClose`.
#[nid("sceKernelClose")]
pub extern "C" fn sce_kernel_close(fd: i32) -> i32 {
    sce_ret(host_ret(unsafe { libc::close(fd) } as isize)) as i32
}

/// `lseek` (SEEK_SET/CUR/END are 0/1/2 on both systems).
#[nid("lseek")]
pub extern "C" fn lseek(fd: i32, off: i64, whence: i32) -> i64 {
    posix(
        host_ret(unsafe { libc::lseek(fd, off, whence) } as isize),
        -1,
    ) as i64
}

/// `sceKernelLseek`.
#[nid("sceKernelLseek")]
pub extern "C" fn sce_kernel_lseek(fd: i32, off: i64, whence: i32) -> i64 {
    sce_ret(host_ret(unsafe { libc::lseek(fd, off, whence) } as isize))
}

/// The PS4 (FreeBSD 9) `struct stat`, 120 bytes.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct GuestStat {
    /// Device.
    pub dev: u32,
    /// Inode (truncated).
    pub ino: u32,
    /// Mode (type and permission bits; the same values as Linux).
    pub mode: u16,
    /// Link count.
    pub nlink: u16,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Device for special files.
    pub rdev: u32,
    /// Access, modification, change times (sec, nsec).
    pub times: [[i64; 2]; 3],
    /// Size in bytes.
    pub size: i64,
    /// 512-byte blocks.
    pub blocks: i64,
    /// Preferred I/O size.
    pub blksize: u32,
    /// File flags.
    pub flags: u32,
    /// Generation.
    pub gen_: u32,
    /// Spare.
    pub lspare: i32,
    /// Birth time (sec, nsec).
    pub birth: [i64; 2],
}

const _: () = assert!(std::mem::size_of::<GuestStat>() == 120);

fn to_guest(s: &libc::stat) -> GuestStat {
    GuestStat {
        dev: s.st_dev as u32,
        ino: s.st_ino as u32,
        mode: s.st_mode as u16,
        nlink: s.st_nlink as u16,
        uid: s.st_uid,
        gid: s.st_gid,
        rdev: s.st_rdev as u32,
        times: [
            [s.st_atime, s.st_atime_nsec],
            [s.st_mtime, s.st_mtime_nsec],
            [s.st_ctime, s.st_ctime_nsec],
        ],
        size: s.st_size,
        blocks: s.st_blocks,
        blksize: s.st_blksize as u32,
        flags: 0,
        gen_: 0,
        lspare: 0,
        birth: [s.st_ctime, s.st_ctime_nsec],
    }
}

fn fstat_host(fd: i32) -> Result<GuestStat, i32> {
    let mut s: libc::stat = unsafe { std::mem::zeroed() };
    host_ret(unsafe { libc::fstat(fd, &mut s) } as isize)?;
    Ok(to_guest(&s))
}

fn stat_guest(path: &[u8]) -> Result<GuestStat, i32> {
    // O_PATH opens without read permission; the lookup is confined as every other.
    let fd = open_confined(path, libc::O_PATH, 0)?;
    fstat_host(fd.as_raw_fd())
}

/// `fstat`.
#[nid("fstat")]
pub unsafe extern "C" fn fstat(fd: i32, out: *mut GuestStat) -> i32 {
    match fstat_host(fd) {
        Ok(s) => {
            unsafe { *out = s };
            0
        }
        Err(e) => posix(Err(e), -1),
    }
}

/// `sceKernelFstat`.
#[nid("sceKernelFstat")]
pub unsafe extern "C" fn sce_kernel_fstat(fd: i32, out: *mut GuestStat) -> i32 {
    match fstat_host(fd) {
        Ok(s) => {
            unsafe { *out = s };
            0
        }
        Err(e) => sce_error(e),
    }
}

/// `stat`.
#[nid("stat")]
pub unsafe extern "C" fn stat(path: *const libc::c_char, out: *mut GuestStat) -> i32 {
    match unsafe { cstr(path) }.and_then(stat_guest) {
        Ok(s) => {
            unsafe { *out = s };
            0
        }
        Err(e) => posix(Err(e), -1),
    }
}

/// `sceKernelStat`.
#[nid("sceKernelStat")]
pub unsafe extern "C" fn sce_kernel_stat(path: *const libc::c_char, out: *mut GuestStat) -> i32 {
    match unsafe { cstr(path) }.and_then(stat_guest) {
        Ok(s) => {
            unsafe { *out = s };
            0
        }
        Err(e) => sce_error(e),
    }
}

/// Guest `mkdir`: the parent confined, the new name not followed (a dangling symlink
/// there is EEXIST, as on FreeBSD).
pub(crate) fn mkdir_guest(path: &[u8], mode: u32) -> Result<isize, i32> {
    let e = entry(path, EEXIST)?;
    host_ret(unsafe { libc::mkdirat(e.dir.as_raw_fd(), e.leaf.as_ptr(), mode & 0o7777) } as isize)
}

/// Guest `rmdir`: removes the name itself (a symlink there is ENOTDIR, never its target).
pub(crate) fn rmdir_guest(path: &[u8]) -> Result<isize, i32> {
    let e = entry(path, EBUSY)?;
    host_ret(
        unsafe { libc::unlinkat(e.dir.as_raw_fd(), e.leaf.as_ptr(), libc::AT_REMOVEDIR) } as isize,
    )
}

/// Guest `unlink`: removes the name itself (a symlink, not what it points to); a folder is
/// EPERM, as on FreeBSD.
pub(crate) fn unlink_guest(path: &[u8]) -> Result<isize, i32> {
    let e = entry(path, EBUSY)?;
    host_ret(unsafe { libc::unlinkat(e.dir.as_raw_fd(), e.leaf.as_ptr(), 0) } as isize).map_err(
        |err| if err == 21 { 1 } else { err }, // EISDIR -> EPERM
    )
}

/// Guest `rename`: both names confined and not followed; between two mounts EXDEV.
pub(crate) fn rename_guest(from: &[u8], to: &[u8]) -> Result<isize, i32> {
    let a = entry(from, EBUSY)?;
    let b = entry(to, EBUSY)?;
    if !a.same_mount(&b) {
        return Err(EXDEV);
    }
    host_ret(unsafe {
        libc::renameat(
            a.dir.as_raw_fd(),
            a.leaf.as_ptr(),
            b.dir.as_raw_fd(),
            b.leaf.as_ptr(),
        )
    } as isize)
}

/// Guest `link(from, to)`: a new name `to` for the file `from`, both on one mount (EXDEV
/// otherwise, so no writable name can be made for a file of the read-only `/app0`), `to`
/// not followed. `follow`: a symlink at `from` is followed (confined, like every lookup) and
/// its target linked, else the symlink itself is.
pub(crate) fn link_guest(from: &[u8], to: &[u8], follow: bool) -> Result<isize, i32> {
    let dst = entry(to, EEXIST)?;
    if follow {
        let r = resolve(from)?;
        if r.mount != dst.mount {
            return Err(EXDEV);
        }
        let fd = open_beneath(r.root, &r.rel, libc::O_PATH, 0)?;
        // The descriptor's /proc name links the very file it refers to (linkat(2)).
        host_ret(unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                fd_path(&fd).as_ptr(),
                dst.dir.as_raw_fd(),
                dst.leaf.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        } as isize)
    } else {
        let src = entry(from, EPERM)?;
        if !src.same_mount(&dst) {
            return Err(EXDEV);
        }
        host_ret(unsafe {
            libc::linkat(
                src.dir.as_raw_fd(),
                src.leaf.as_ptr(),
                dst.dir.as_raw_fd(),
                dst.leaf.as_ptr(),
                0,
            )
        } as isize)
    }
}

/// The guest path (`/temp0/dir`) of the directory open as host descriptor `fd`, for the
/// `*at` calls given a descriptor instead of `AT_FDCWD`: the kernel's name for it
/// (`/proc/self/fd/N`) must lie beneath one of the mount folders, whose guest name replaces
/// that folder's host path. The path found is resolved again like any guest path, so a
/// folder moved meanwhile can only make the call fail, never leave the mount. EBADF for a
/// closed descriptor, ENOTDIR for one that is not a folder, ENOENT for a removed folder,
/// EACCES for a folder outside every mount.
pub(crate) fn guest_dir_of(fd: i32) -> Result<String, i32> {
    let mounts = mounts();
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(errno::from_host(
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EBADF),
        ));
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
        return Err(ENOTDIR);
    }
    if st.st_nlink == 0 {
        return Err(ENOENT);
    }
    let host = std::fs::read_link(format!("/proc/self/fd/{fd}")).map_err(|_| EBADF)?;
    let mut best: Option<(usize, String)> = None;
    for m in mounts.roots.iter().filter(|m| m.fd >= 0) {
        let Ok(root) = std::fs::read_link(format!("/proc/self/fd/{}", m.fd)) else {
            continue;
        };
        let Ok(rest) = host.strip_prefix(&root) else {
            continue;
        };
        let depth = root.components().count();
        if best.as_ref().is_some_and(|(d, _)| *d >= depth) {
            continue;
        }
        let rest = rest.to_str().ok_or(ENOENT)?;
        let guest = if rest.is_empty() {
            format!("/{}", m.name)
        } else {
            format!("/{}/{rest}", m.name)
        };
        best = Some((depth, guest));
    }
    best.map(|(_, g)| g).ok_or(EACCES)
}

/// Guest `chmod`: the file is found confined (following symlinks beneath the mount), then
/// changed through its descriptor's `/proc/self/fd` name.
pub(crate) fn chmod_guest(path: &[u8], mode: u32) -> Result<isize, i32> {
    let r = resolve(path)?;
    if r.read_only {
        return Err(EROFS);
    }
    let fd = open_beneath(r.root, &r.rel, libc::O_PATH, 0)?;
    host_ret(unsafe { libc::chmod(fd_path(&fd).as_ptr(), mode & 0o7777) } as isize)
}

/// Guest `truncate`: the file opened confined for writing, then `ftruncate`.
fn truncate_guest(path: &[u8], len: i64) -> Result<isize, i32> {
    if len < 0 {
        return Err(EINVAL);
    }
    let fd = open_confined(path, libc::O_WRONLY | libc::O_NONBLOCK, 0)?;
    host_ret(unsafe { libc::ftruncate(fd.as_raw_fd(), len) } as isize)
}

fn posix_path(path: *const libc::c_char, f: impl FnOnce(&[u8]) -> Result<isize, i32>) -> i32 {
    posix(unsafe { cstr(path) }.and_then(f).map(|_| 0), -1)
}

fn sce_path(path: *const libc::c_char, f: impl FnOnce(&[u8]) -> Result<isize, i32>) -> i32 {
    match unsafe { cstr(path) }.and_then(f) {
        Ok(_) => 0,
        Err(e) => sce_error(e),
    }
}

/// `sceKernelMkdir(path, mode)` (`mkdir` is in `files.rs`).
#[nid("sceKernelMkdir")]
pub unsafe extern "C" fn sce_kernel_mkdir(path: *const libc::c_char, mode: u32) -> i32 {
    sce_path(path, |p| mkdir_guest(p, mode))
}

/// `unlink`.
#[nid("unlink")]
pub unsafe extern "C" fn unlink(path: *const libc::c_char) -> i32 {
    posix_path(path, unlink_guest)
}

/// `sceKernelUnlink`.
#[nid("sceKernelUnlink")]
pub unsafe extern "C" fn sce_kernel_unlink(path: *const libc::c_char) -> i32 {
    sce_path(path, unlink_guest)
}

/// `rename` (both paths guest paths).
#[nid("rename")]
pub unsafe extern "C" fn rename(from: *const libc::c_char, to: *const libc::c_char) -> i32 {
    posix_path(from, |f| rename_guest(f, unsafe { cstr(to) }?))
}

/// `sceKernelRename`.
#[nid("sceKernelRename")]
pub unsafe extern "C" fn sce_kernel_rename(
    from: *const libc::c_char,
    to: *const libc::c_char,
) -> i32 {
    sce_path(from, |f| rename_guest(f, unsafe { cstr(to) }?))
}

/// `chmod(path, mode)`.
#[nid("chmod")]
pub unsafe extern "C" fn chmod(path: *const libc::c_char, mode: u32) -> i32 {
    posix_path(path, |p| chmod_guest(p, mode))
}

/// `sceKernelChmod(path, mode)`.
#[nid("sceKernelChmod")]
pub unsafe extern "C" fn sce_kernel_chmod(path: *const libc::c_char, mode: u32) -> i32 {
    sce_path(path, |p| chmod_guest(p, mode))
}

/// `truncate(path, length)`.
#[nid("truncate")]
pub unsafe extern "C" fn truncate(path: *const libc::c_char, len: i64) -> i32 {
    posix_path(path, |p| truncate_guest(p, len))
}

/// `sceKernelTruncate(path, length)`.
#[nid("sceKernelTruncate")]
pub unsafe extern "C" fn sce_kernel_truncate(path: *const libc::c_char, len: i64) -> i32 {
    sce_path(path, |p| truncate_guest(p, len))
}

/// `chdir(path)`: changes the guest working directory (a folder under a mount; `..` is
/// refused as everywhere). The host process's own working directory is not touched.
#[nid("chdir")]
pub unsafe extern "C" fn chdir(path: *const libc::c_char) -> i32 {
    let r = (|| {
        let p = unsafe { cstr(path) }?;
        if p.is_empty() {
            return Err(2);
        }
        drop(open_confined(p, libc::O_PATH | libc::O_DIRECTORY, 0)?);
        let s = std::str::from_utf8(p).map_err(|_| 2)?;
        let abs = if s.starts_with('/') {
            s.to_string()
        } else {
            format!("{}/{s}", cwd())
        };
        // Canonical form: no empty or "." components, no trailing slash.
        let parts: Vec<&str> = abs
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .collect();
        *CWD.lock().unwrap_or_else(|e| e.into_inner()) = format!("/{}", parts.join("/"));
        Ok(0)
    })();
    posix(r, -1)
}

/// `__aps5_getcwd(buf, size)`: the guest working directory for libc.prx's `getcwd`
/// (a NID of this name; `getcwd` itself belongs to libSceLibcInternal). Returns the
/// length written without the NUL, or -ERANGE if it does not fit.
#[nid("__aps5_getcwd")]
pub unsafe extern "C" fn aps5_getcwd(buf: *mut u8, size: usize) -> isize {
    let c = cwd();
    if buf.is_null() || c.len() + 1 > size {
        return -34;
    }
    unsafe {
        std::ptr::copy_nonoverlapping(c.as_ptr(), buf, c.len());
        *buf.add(c.len()) = 0;
    }
    c.len() as isize
}

/// `system`: there is no shell on the console. `system(NULL)` answers 0 (none available);
/// any command fails with -1.
#[nid("system")]
pub extern "C" fn system(cmd: *const libc::c_char) -> i32 {
    if cmd.is_null() {
        0
    } else {
        errno::set(78); // ENOSYS
        -1
    }
}

/// `_read`.
#[nid("_read")]
pub unsafe extern "C-unwind" fn read_(fd: i32, buf: *mut u8, n: usize) -> isize {
    unsafe { read(fd, buf, n) }
}

/// `_write`.
#[nid("_write")]
pub unsafe extern "C-unwind" fn write_(fd: i32, buf: *const u8, n: usize) -> isize {
    unsafe { write(fd, buf, n) }
}

/// `readv` (`struct iovec` has the same layout).
#[nid("readv")]
pub unsafe extern "C-unwind" fn readv(fd: i32, iov: *const libc::iovec, n: i32) -> isize {
    posix(host_ret(unsafe { libc::readv(fd, iov, n) }), -1)
}

/// `_readv`.
#[nid("_readv")]
pub unsafe extern "C-unwind" fn readv_(fd: i32, iov: *const libc::iovec, n: i32) -> isize {
    unsafe { readv(fd, iov, n) }
}

/// `writev`.
#[nid("writev")]
pub unsafe extern "C-unwind" fn writev(fd: i32, iov: *const libc::iovec, n: i32) -> isize {
    posix(host_ret(unsafe { libc::writev(fd, iov, n) }), -1)
}

/// `_writev`.
#[nid("_writev")]
pub unsafe extern "C-unwind" fn writev_(fd: i32, iov: *const libc::iovec, n: i32) -> isize {
    unsafe { writev(fd, iov, n) }
}

/// `fcntl(fd, cmd, arg)` for the commands whose meaning is portable: F_DUPFD 0,
/// F_GETFD 1, F_SETFD 2 (FD_CLOEXEC 1), F_GETFL 3, F_SETFL 4 (flags translated),
/// F_DUPFD_CLOEXEC 17.
#[nid("fcntl")]
pub extern "C" fn fcntl(fd: i32, cmd: i32, arg: i64) -> i32 {
    let r = match cmd {
        0 => unsafe { libc::fcntl(fd, libc::F_DUPFD, arg as i32) },
        17 => unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, arg as i32) },
        1 => unsafe { libc::fcntl(fd, libc::F_GETFD) },
        2 => unsafe { libc::fcntl(fd, libc::F_SETFD, arg as i32 & 1) },
        3 => {
            let h = unsafe { libc::fcntl(fd, libc::F_GETFL) };
            if h < 0 {
                h
            } else {
                let mut f = h & 3;
                if h & libc::O_NONBLOCK != 0 {
                    f |= 0x4;
                }
                if h & libc::O_APPEND != 0 {
                    f |= 0x8;
                }
                return f;
            }
        }
        4 => {
            let mut h = 0;
            if arg & 0x4 != 0 {
                h |= libc::O_NONBLOCK;
            }
            if arg & 0x8 != 0 {
                h |= libc::O_APPEND;
            }
            unsafe { libc::fcntl(fd, libc::F_SETFL, h) }
        }
        _ => {
            errno::set(22);
            return -1;
        }
    };
    if r < 0 {
        errno::set_from_host();
        -1
    } else {
        r
    }
}

/// `ioctl`: no device of the console exists here; every request fails with ENOTTY.
#[nid("ioctl")]
pub extern "C" fn ioctl(_fd: i32, _req: u64, _arg: usize) -> i32 {
    errno::set(25); // ENOTTY
    -1
}

/// `poll` (`struct pollfd` and POLLIN/POLLPRI/POLLOUT/POLLERR/POLLHUP/POLLNVAL match).
#[nid("poll")]
pub unsafe extern "C-unwind" fn poll(fds: *mut libc::pollfd, n: u32, timeout: i32) -> i32 {
    let r = unsafe { libc::poll(fds, libc::nfds_t::from(n), timeout) };
    if r < 0 {
        errno::set_from_host();
    }
    r
}
