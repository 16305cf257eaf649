//! Durable file writes (temp + fsync + rename + directory fsync) and temp-file sweeping.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// A temp file younger than this is never removed by a sweep, even if unlocked: it covers
/// the instant between a writer creating its temp file and locking it.
pub(crate) const TEMP_GRACE: Duration = Duration::from_secs(1);

/// Suffix of every temp file, so a sweep never touches anything else.
pub(crate) const TEMP_SUFFIX: &str = ".tmp";

static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// fsyncs a directory so that a rename (or create/unlink) inside it is durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    // O_DIRECTORY: something else put in a folder's place fails instead of being opened.
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir)?
        .sync_all()
}

fn flock(file: &File, op: libc::c_int) -> io::Result<()> {
    loop {
        // SAFETY: flock on a file descriptor we own; no memory is passed.
        let rc = unsafe { libc::flock(file.as_raw_fd(), op) };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Creates a new, exclusively locked temp file in `tmp_dir`. The lock tells sweepers in
/// other processes that its writer is alive; the kernel drops it when the writer dies.
pub(crate) fn create_temp(tmp_dir: &Path) -> io::Result<(PathBuf, File)> {
    loop {
        let seq = TEMP_SEQ.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = tmp_dir.join(format!(
            "{}-{}-{:08x}{}",
            std::process::id(),
            seq,
            nanos,
            TEMP_SUFFIX
        ));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_CLOEXEC)
            .open(&path)
        {
            Ok(file) => {
                if let Err(e) = flock(&file, libc::LOCK_EX) {
                    let _ = fs::remove_file(&path);
                    return Err(e);
                }
                return Ok((path, file));
            }
            // A leftover from a dead process that had our pid: pick another name.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Writes `bytes` to `dest` so that after a crash at any point `dest` is either absent or
/// complete: temp file in `tmp_dir` (same filesystem), fsync, rename, fsync of `dest`'s folder.
/// Creates `dest`'s folder if needed (and fsyncs its parent then).
pub(crate) fn write_durable(tmp_dir: &Path, dest: &Path, bytes: &[u8]) -> io::Result<()> {
    write_durable_parts(tmp_dir, dest, &[bytes])
}

/// [`write_durable`] of the concatenation of `parts` (never made in memory).
pub(crate) fn write_durable_parts(tmp_dir: &Path, dest: &Path, parts: &[&[u8]]) -> io::Result<()> {
    let (tmp, mut file) = create_temp(tmp_dir)?;
    let result = (|| {
        for part in parts {
            file.write_all(part)?;
        }
        file.sync_all()?;
        let parent = dest.parent().unwrap_or(Path::new("."));
        match fs::rename(&tmp, dest) {
            Ok(()) => {}
            // The shard folder does not exist yet (another thread may be creating it too).
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                match fs::create_dir(parent) {
                    Ok(()) => {
                        if let Some(grand) = parent.parent() {
                            sync_dir(grand)?;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
                fs::rename(&tmp, dest)?;
            }
            Err(e) => return Err(e),
        }
        sync_dir(parent)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// What a sweep of the temp folder found.
#[derive(Default)]
pub(crate) struct Sweep {
    /// Leftovers of dead writers, removed.
    pub removed: Vec<PathBuf>,
    /// Temp files held by live writers (or just created), left alone.
    pub in_use: u64,
}

/// Removes temp files whose writer is gone (not locked, older than [`TEMP_GRACE`]).
pub(crate) fn sweep_temps(tmp_dir: &Path) -> io::Result<Sweep> {
    let mut sweep = Sweep::default();
    let entries = match fs::read_dir(tmp_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(sweep),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let is_temp = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(TEMP_SUFFIX));
        if !is_temp || !entry.file_type()?.is_file() {
            continue;
        }
        // Never follow a link or hang on a FIFO put in a temp file's place meanwhile.
        let file = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path)
        {
            Ok(f) => f,
            // Renamed into place or swept by someone else meanwhile.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        if flock(&file, libc::LOCK_EX | libc::LOCK_NB).is_err() {
            sweep.in_use += 1;
            continue;
        }
        let young = file
            .metadata()?
            .modified()
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_none_or(|age| age < TEMP_GRACE);
        if young {
            sweep.in_use += 1;
            continue;
        }
        match fs::remove_file(&path) {
            Ok(()) => sweep.removed.push(path),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(sweep)
}

/// What kind of file system object a metadata describes, in words for messages.
pub fn describe_kind(ft: fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_symlink() {
        "a symbolic link"
    } else if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_file() {
        "a regular file"
    } else {
        "an unknown kind of file"
    }
}

/// Why [`open_regular`] refused a path.
#[derive(Debug)]
pub(crate) enum OpenRefused {
    /// Nothing there.
    Missing,
    /// Something other than a regular file of the expected size (what it is, in words).
    Wrong(String),
    /// The open or fstat itself failed.
    Io(io::Error),
}

/// Opens `path` for reading only if it is a regular file: `O_NOFOLLOW` (when `follow` is
/// false) so a symlink is not followed, `O_NONBLOCK` so a FIFO cannot hang the open (the flag
/// is cleared again before reading), then `fstat` on the open file, so what is checked is
/// what is read. With `size`, the file must be exactly that long. Callers read at most the
/// returned length (`Read::take`), so a file growing meanwhile cannot make a read unbounded.
pub(crate) fn open_regular(
    path: &Path,
    follow: bool,
    size: Option<u64>,
) -> Result<(File, u64), OpenRefused> {
    let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    let file = match OpenOptions::new().read(true).custom_flags(flags).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(OpenRefused::Missing),
        // O_NOFOLLOW on a symlink.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(OpenRefused::Wrong("a symbolic link".into()));
        }
        Err(e) => {
            // A directory opens read-only fine on Linux; other refusals may still be a
            // special file (a socket gives ENXIO): name it if lstat can.
            return Err(match fs::symlink_metadata(path) {
                Ok(m) if !m.is_file() => OpenRefused::Wrong(describe_kind(m.file_type()).into()),
                _ => OpenRefused::Io(e),
            });
        }
    };
    let meta = file.metadata().map_err(OpenRefused::Io)?;
    if !meta.is_file() {
        return Err(OpenRefused::Wrong(describe_kind(meta.file_type()).into()));
    }
    if let Some(want) = size
        && meta.len() != want
    {
        return Err(OpenRefused::Wrong(format!(
            "{} bytes long where the index records {want}",
            meta.len()
        )));
    }
    // Back to blocking reads (a regular file never blocks anyway; this keeps semantics plain).
    // SAFETY: fcntl on a file descriptor we own; no memory is passed.
    unsafe {
        let fd = file.as_raw_fd();
        let fl = libc::fcntl(fd, libc::F_GETFL);
        if fl >= 0 {
            libc::fcntl(fd, libc::F_SETFL, fl & !libc::O_NONBLOCK);
        }
    }
    Ok((file, meta.len()))
}

/// Removes whatever is at `path` without following a link: a directory with its contents,
/// anything else (file, symlink, FIFO, socket, device node) with unlink.
pub(crate) fn remove_entry(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}
