//! The directory API (`opendir`, `readdir`, ...), FreeBSD semantics over libkernel's
//! `getdirentries`, which returns FreeBSD `struct dirent` records (`d_fileno` u32,
//! `d_reclen` u16, `d_type` u8, `d_namlen` u8, `d_name`).
//!
//! A `DIR *` points at a [`Dir`], whose first field is the descriptor as in FreeBSD's
//! `struct _dirdesc` (its `dirfd()` macro reads `dd_fd` at offset 0). `readdir` returns a
//! pointer into the directory's buffer, valid until the next call on that `DIR`, as on
//! FreeBSD. `telldir` returns an index into a table of (block position, offset in block),
//! which `seekdir` restores, as FreeBSD's `_telldir` list does.

use std::ffi::CString;
use std::sync::OnceLock;

use aps5_prx_macros::nid;

use crate::kernel;

/// Size of the read buffer (FreeBSD uses the file system's block size, at least 1024).
const BUF: usize = 4096;
/// `sizeof(struct dirent)` on FreeBSD: 8 bytes of header and `d_name[256]`.
const DIRENT_MAX: usize = 264;

/// What a guest `DIR *` points at.
#[repr(C)]
pub struct Dir {
    /// The directory's descriptor (`dd_fd`, offset 0).
    fd: i32,
    /// Bytes of records in `buf`.
    size: usize,
    /// Offset of the next record in `buf`.
    loc: usize,
    /// Directory position (`lseek` cookie) of `buf`'s first record.
    base: i64,
    /// Records, with room after them so a guest copying a whole `struct dirent` out of
    /// the last record stays inside the allocation.
    buf: Box<[u8; BUF + DIRENT_MAX]>,
    /// `telldir` positions: (base, loc).
    marks: Vec<(i64, usize)>,
}

fn sym(name: &str) -> usize {
    let c = CString::new(name).expect("NIDs have no NUL");
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, c.as_ptr()) as usize }
}

/// libkernel's `getdirentries`; without libkernel (this crate's unit tests) the host's
/// `getdents64`, converted to the same FreeBSD records.
fn getdirentries(fd: i32, buf: &mut [u8], base: &mut i64) -> isize {
    static F: OnceLock<usize> = OnceLock::new();
    let f = *F.get_or_init(|| sym(aps5_prx_macros::nid_str!("getdirentries")));
    if f != 0 {
        let f: extern "C" fn(i32, *mut u8, i32, *mut i64) -> i32 =
            unsafe { std::mem::transmute(f) };
        return f(fd, buf.as_mut_ptr(), buf.len() as i32, base) as isize;
    }
    *base = unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) };
    let mut host = vec![0u8; buf.len()];
    let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, host.as_mut_ptr(), host.len()) };
    if n < 0 {
        kernel::set_errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(5));
        return -1;
    }
    let (mut i, mut o) = (0usize, 0usize);
    while i < n as usize {
        let reclen = usize::from(u16::from_ne_bytes([host[i + 16], host[i + 17]]));
        let name = &host[i + 19..i + reclen];
        let namlen = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        let size = 8 + ((namlen + 4) & !3);
        buf[o..o + size].fill(0);
        buf[o..o + 4].copy_from_slice(&host[i..i + 4]);
        buf[o + 4..o + 6].copy_from_slice(&(size as u16).to_ne_bytes());
        buf[o + 6] = host[i + 18];
        buf[o + 7] = namlen as u8;
        buf[o + 8..o + 8 + namlen].copy_from_slice(&name[..namlen]);
        o += size;
        i += reclen;
    }
    o as isize
}

/// Makes a `DIR` for an open directory descriptor (ENOTDIR otherwise).
fn dir_of_fd(fd: i32) -> *mut Dir {
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        kernel::set_errno(9); // EBADF
        return std::ptr::null_mut();
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
        kernel::set_errno(20); // ENOTDIR
        return std::ptr::null_mut();
    }
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    Box::into_raw(Box::new(Dir {
        fd,
        size: 0,
        loc: 0,
        base: 0,
        buf: Box::new([0; BUF + DIRENT_MAX]),
        marks: Vec::new(),
    }))
}

/// `opendir(path)`: a guest path, opened by libkernel (confined to the mounts).
#[nid("opendir")]
pub unsafe extern "C" fn opendir(path: *const libc::c_char) -> *mut Dir {
    if path.is_null() {
        kernel::set_errno(14);
        return std::ptr::null_mut();
    }
    // O_RDONLY | O_DIRECTORY (0x20000) | O_CLOEXEC (0x100000), FreeBSD values.
    let fd = kernel::open(path, 0x20000 | 0x100000, 0);
    if fd < 0 {
        return std::ptr::null_mut();
    }
    let d = dir_of_fd(fd);
    if d.is_null() {
        unsafe { libc::close(fd) };
    }
    d
}

/// `fdopendir(fd)`: the `DIR` owns `fd` from now on.
#[nid("fdopendir")]
pub extern "C" fn fdopendir(fd: i32) -> *mut Dir {
    dir_of_fd(fd)
}

/// The next record, refilling the buffer as needed; NULL at the end (errno untouched)
/// or on error (errno set).
unsafe fn next(d: &mut Dir) -> *mut u8 {
    loop {
        if d.loc >= d.size {
            let mut base = 0;
            let n = getdirentries(d.fd, &mut d.buf[..BUF], &mut base);
            if n <= 0 {
                d.size = 0;
                d.loc = 0;
                return std::ptr::null_mut();
            }
            d.base = base;
            d.size = n as usize;
            d.loc = 0;
        }
        let at = d.loc;
        let reclen = usize::from(u16::from_ne_bytes([d.buf[at + 4], d.buf[at + 5]]));
        if reclen == 0 || at + reclen > d.size {
            // A malformed block: treat as the end rather than loop or read past it.
            d.loc = d.size;
            return std::ptr::null_mut();
        }
        d.loc += reclen;
        // FreeBSD skips whiteout and deleted (d_fileno 0) entries.
        let ino = u32::from_ne_bytes(d.buf[at..at + 4].try_into().expect("4 bytes"));
        if ino == 0 || d.buf[at + 6] == 14 {
            continue;
        }
        return d.buf[at..].as_mut_ptr();
    }
}

/// `readdir`.
#[nid("readdir")]
pub unsafe extern "C" fn readdir(d: *mut Dir) -> *mut u8 {
    if d.is_null() {
        kernel::set_errno(9);
        return std::ptr::null_mut();
    }
    unsafe { next(&mut *d) }
}

/// `readdir_r(dir, entry, result)`: copies the record into `entry`; `*result` is `entry`
/// or NULL at the end; returns 0 or an errno value.
#[nid("readdir_r")]
pub unsafe extern "C" fn readdir_r(d: *mut Dir, entry: *mut u8, result: *mut *mut u8) -> i32 {
    if d.is_null() || entry.is_null() || result.is_null() {
        return 22;
    }
    let saved = unsafe { *kernel::errno_ptr() };
    unsafe { *kernel::errno_ptr() = 0 };
    let p = unsafe { next(&mut *d) };
    let err = unsafe { *kernel::errno_ptr() };
    unsafe { *kernel::errno_ptr() = saved };
    if p.is_null() {
        unsafe { *result = std::ptr::null_mut() };
        return err;
    }
    let reclen = usize::from(u16::from_ne_bytes(unsafe { [*p.add(4), *p.add(5)] }));
    unsafe {
        std::ptr::copy_nonoverlapping(p, entry, reclen);
        *result = entry;
    }
    0
}

/// `closedir`: closes the descriptor too.
#[nid("closedir")]
pub unsafe extern "C" fn closedir(d: *mut Dir) -> i32 {
    if d.is_null() {
        kernel::set_errno(9);
        return -1;
    }
    let d = unsafe { Box::from_raw(d) };
    if unsafe { libc::close(d.fd) } != 0 {
        kernel::set_errno(9);
        return -1;
    }
    0
}

/// Moves to directory position `base`, `loc` bytes into the block read from there.
fn seek(d: &mut Dir, base: i64, loc: usize) {
    if d.size != 0 && d.base == base && loc <= d.size {
        d.loc = loc;
        return;
    }
    unsafe { libc::lseek(d.fd, base, libc::SEEK_SET) };
    d.size = 0;
    d.loc = 0;
    if loc > 0 {
        let mut b = 0;
        let n = getdirentries(d.fd, &mut d.buf[..BUF], &mut b);
        if n > 0 {
            d.base = b;
            d.size = n as usize;
            d.loc = loc.min(d.size);
        }
    }
}

/// `rewinddir`.
#[nid("rewinddir")]
pub unsafe extern "C" fn rewinddir(d: *mut Dir) {
    if let Some(d) = unsafe { d.as_mut() } {
        seek(d, 0, 0);
        d.marks.clear();
    }
}

/// `telldir`: a position `seekdir` accepts.
#[nid("telldir")]
pub unsafe extern "C" fn telldir(d: *mut Dir) -> i64 {
    let Some(d) = (unsafe { d.as_mut() }) else {
        kernel::set_errno(9);
        return -1;
    };
    let mark = if d.loc >= d.size {
        // Past the buffer: the next read starts at the descriptor's position.
        (unsafe { libc::lseek(d.fd, 0, libc::SEEK_CUR) }, 0)
    } else {
        (d.base, d.loc)
    };
    if let Some(i) = d.marks.iter().position(|m| *m == mark) {
        return i as i64;
    }
    d.marks.push(mark);
    (d.marks.len() - 1) as i64
}

/// `seekdir`: returns to a `telldir` position (unknown positions are ignored).
#[nid("seekdir")]
pub unsafe extern "C" fn seekdir(d: *mut Dir, pos: i64) {
    let Some(d) = (unsafe { d.as_mut() }) else {
        return;
    };
    if let Some(&(base, loc)) = usize::try_from(pos).ok().and_then(|i| d.marks.get(i)) {
        seek(d, base, loc);
    }
}

/// `dirfd`.
#[nid("dirfd")]
pub unsafe extern "C" fn dirfd(d: *mut Dir) -> i32 {
    match unsafe { d.as_ref() } {
        Some(d) => d.fd,
        None => {
            kernel::set_errno(22);
            -1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name_of(p: *const u8) -> String {
        let n = unsafe { *p.add(7) } as usize;
        String::from_utf8(unsafe { std::slice::from_raw_parts(p.add(8), n) }.to_vec()).unwrap()
    }

    #[test]
    fn readdir_lists_what_the_host_lists_and_seekdir_returns() {
        let dir = std::env::temp_dir().join(format!("aps5-dirent-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        for i in 0..300 {
            std::fs::write(dir.join(format!("entry-number-{i:04}")), b"").unwrap();
        }
        // The oracle: the host's own listing.
        let mut want: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        want.push(".".into());
        want.push("..".into());
        want.sort();
        let c = CString::new(dir.to_str().unwrap()).unwrap();
        let d = unsafe { opendir(c.as_ptr()) };
        assert!(!d.is_null());
        assert_eq!(unsafe { dirfd(d) }, unsafe { *(d as *const i32) });
        let mut got = Vec::new();
        let mut marks = Vec::new();
        loop {
            marks.push(unsafe { telldir(d) });
            let e = unsafe { readdir(d) };
            if e.is_null() {
                break;
            }
            got.push(name_of(e));
        }
        let order = got.clone();
        got.sort();
        assert_eq!(got, want);
        // seekdir to a position in the middle (another buffer than the current one).
        for k in [0usize, 7, 150, 301] {
            unsafe { seekdir(d, marks[k]) };
            let e = unsafe { readdir(d) };
            assert_eq!(name_of(e), order[k], "seekdir to entry {k}");
        }
        unsafe { rewinddir(d) };
        let mut entry = [0u8; DIRENT_MAX];
        let mut res: *mut u8 = std::ptr::null_mut();
        assert_eq!(unsafe { readdir_r(d, entry.as_mut_ptr(), &mut res) }, 0);
        assert_eq!(res, entry.as_mut_ptr());
        assert_eq!(name_of(entry.as_ptr()), order[0]);
        assert_eq!(unsafe { closedir(d) }, 0);
        // A file is not a directory.
        let f = CString::new(dir.join("entry-number-0001").to_str().unwrap()).unwrap();
        let fd = unsafe { libc::open(f.as_ptr(), libc::O_RDONLY) };
        assert!(fdopendir(fd).is_null());
        assert_eq!(unsafe { *kernel::errno_ptr() }, 20);
        unsafe { libc::close(fd) };
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
