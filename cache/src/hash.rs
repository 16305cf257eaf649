//! Content hashes (blake3), streaming file hashing, memo keys and file stamps.

use std::fmt;
use std::io::{self, Read};
use std::path::Path;
use std::str::FromStr;

/// A blake3 hash of some bytes: the address of a blob in the cache.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ContentHash(pub [u8; 32]);

impl ContentHash {
    /// The blake3 hash of `bytes` (large inputs are hashed on all cores).
    pub fn of(bytes: &[u8]) -> Self {
        if bytes.len() as u64 >= PARALLEL_MIN {
            let mut h = blake3::Hasher::new();
            h.update_rayon(bytes);
            return ContentHash(*h.finalize().as_bytes());
        }
        ContentHash(*blake3::hash(bytes).as_bytes())
    }

    /// The blake3 hash of the concatenation of `parts` (each large part hashed on all cores).
    pub fn of_parts<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut h = blake3::Hasher::new();
        for part in parts {
            if part.len() as u64 >= PARALLEL_MIN {
                h.update_rayon(part);
            } else {
                h.update(part);
            }
        }
        ContentHash(*h.finalize().as_bytes())
    }

    /// 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The raw 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ContentHash({})", self.to_hex())
    }
}

/// Why a string is not a [`ContentHash`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a blake3 hash: expected 64 hex digits")]
pub struct ParseHashError {
    /// The rejected text (cut to 80 characters).
    pub text: String,
}

impl FromStr for ContentHash {
    type Err = ParseHashError;

    /// Accepts 64 hex digits, either case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut out = [0u8; 32];
        if s.len() != 64 || hex::decode_to_slice(s, &mut out).is_err() {
            return Err(ParseHashError {
                text: s.chars().take(80).collect(),
            });
        }
        Ok(ContentHash(out))
    }
}

/// Files at least this large are hashed with several threads (blake3's tree mode
/// parallelises within one input; below this the thread hand-off costs more than it saves)
/// and read by a separate thread so that reading and hashing overlap.
const PARALLEL_MIN: u64 = 4 << 20;
/// Read size for large files: big enough that syscall overhead is negligible and that
/// each `update_rayon` call has enough chunks to split across threads.
const LARGE_BUF: usize = 4 << 20;
/// Buffers in flight between the reading thread and the hashing thread.
const PIPE_BUFFERS: usize = 3;
/// Read size cap for small files (a buffer is allocated per call; don't over-allocate).
const SMALL_BUF: usize = 256 << 10;

/// Hashes a file with blake3, streaming: memory use is bounded (12 MiB at most) whatever
/// the file's size. Returns the hash and the number of bytes hashed.
///
/// Files of 4 MiB and more are read by one thread in 4 MiB pieces while another hashes the
/// previous piece on all cores (rayon), so disk and CPU work at the same time. The file is
/// read, not memory-mapped, so a file truncated while it is hashed gives a short result
/// instead of a SIGBUS that would kill the whole build.
///
/// Only a regular file is read (a FIFO, device or folder is an `InvalidInput` error naming
/// what it is; the open cannot hang on a FIFO), and at most one byte more than its size at
/// the open: a file that grows meanwhile gives a count above that size instead of an
/// unbounded read.
pub fn hash_file(path: &Path) -> io::Result<(ContentHash, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "it is {}, not a regular file",
                crate::fsutil::describe_kind(meta.file_type())
            ),
        ));
    }
    // SAFETY: fcntl on a file descriptor we own; no memory is passed.
    unsafe {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
        let fl = libc::fcntl(fd, libc::F_GETFL);
        if fl >= 0 {
            libc::fcntl(fd, libc::F_SETFL, fl & !libc::O_NONBLOCK);
        }
    }
    let expected = meta.len();
    if expected >= PARALLEL_MIN {
        // Ask for aggressive read-ahead; purely advisory, so the result is ignored.
        // SAFETY: advisory call on an fd we own.
        unsafe {
            libc::posix_fadvise(
                std::os::fd::AsRawFd::as_raw_fd(&file),
                0,
                0,
                libc::POSIX_FADV_SEQUENTIAL,
            )
        };
    }
    hash_reader(&mut file.take(expected.saturating_add(1)), expected)
}

/// Reads until `buf` is full or the input ends; returns how much was read. (Short reads
/// are common on pipes and network files; full buffers keep rayon's split even.)
fn fill(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Hashes everything `reader` yields; `size_hint` only picks the buffer size and strategy.
pub(crate) fn hash_reader<R: Read + Send>(
    reader: &mut R,
    size_hint: u64,
) -> io::Result<(ContentHash, u64)> {
    if size_hint >= PARALLEL_MIN {
        return hash_pipelined(reader);
    }
    // +1 so that a file of exactly the hinted size ends with one short read.
    let cap = (size_hint as usize)
        .saturating_add(1)
        .clamp(4096, SMALL_BUF);
    let mut buf = vec![0u8; cap];
    let mut hasher = blake3::Hasher::new();
    let mut total = 0u64;
    loop {
        let n = fill(reader, &mut buf)?;
        hasher.update(&buf[..n]);
        total += n as u64;
        if n < buf.len() {
            break;
        }
    }
    Ok((ContentHash(*hasher.finalize().as_bytes()), total))
}

/// One thread reads into a ring of buffers while this one hashes (multi-threaded).
fn hash_pipelined<R: Read + Send>(reader: &mut R) -> io::Result<(ContentHash, u64)> {
    use std::sync::mpsc::sync_channel;
    let (full_tx, full_rx) = sync_channel::<io::Result<(Vec<u8>, usize)>>(PIPE_BUFFERS);
    let (empty_tx, empty_rx) = sync_channel::<Vec<u8>>(PIPE_BUFFERS);
    for _ in 0..PIPE_BUFFERS {
        let _ = empty_tx.send(vec![0u8; LARGE_BUF]);
    }
    std::thread::scope(|s| {
        s.spawn(move || {
            // Ends at end of input, on an error, or when the hasher hangs up.
            while let Ok(mut buf) = empty_rx.recv() {
                let result = fill(reader, &mut buf);
                let last = !matches!(result, Ok(n) if n == buf.len());
                if full_tx.send(result.map(|n| (buf, n))).is_err() || last {
                    return;
                }
            }
        });
        let mut hasher = blake3::Hasher::new();
        let mut total = 0u64;
        loop {
            let Ok(next) = full_rx.recv() else {
                // The reader thread panicked; report it as an I/O failure.
                return Err(io::Error::other("file reader thread stopped unexpectedly"));
            };
            let (buf, n) = next?;
            hasher.update_rayon(&buf[..n]);
            total += n as u64;
            if n < buf.len() {
                break;
            }
            let _ = empty_tx.send(buf);
        }
        Ok((ContentHash(*hasher.finalize().as_bytes()), total))
    })
}

/// The key of a memoized query result.
///
/// It is the blake3 hash of an unambiguous encoding of (query name, query version, input
/// hashes, options): each variable-length field is preceded by its length as a little-endian
/// u64, the input list by its count, and the whole is hashed in blake3's key-derivation mode
/// with an aps5-specific context so a memo key can never equal the content hash of some blob.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct MemoKey(pub ContentHash);

/// Domain separation for memo keys. Changing it (or the encoding) invalidates every memo
/// entry, which is safe but costly; the golden value in the tests pins it.
const MEMO_CONTEXT: &str = "aps5 2026-11 memo key v1";

impl MemoKey {
    /// The key for `query` at `version` applied to `inputs` with `options`.
    pub fn new(query: &str, version: &str, inputs: &[ContentHash], options: &[u8]) -> Self {
        let mut h = blake3::Hasher::new_derive_key(MEMO_CONTEXT);
        let mut field = |bytes: &[u8]| {
            h.update(&(bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        field(query.as_bytes());
        field(version.as_bytes());
        h.update(&(inputs.len() as u64).to_le_bytes());
        for input in inputs {
            h.update(&input.0);
        }
        h.update(&(options.len() as u64).to_le_bytes());
        h.update(options);
        MemoKey(ContentHash(*h.finalize().as_bytes()))
    }
}

impl fmt::Display for MemoKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// What identifies an unchanged file without reading it (the cargo/ninja fast path): if
/// size, modification time and inode all match, the remembered hash is reused.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct FileStamp {
    /// Length in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    /// Inode number.
    pub inode: u64,
}

impl FileStamp {
    /// The stamp of a file from its metadata (`std::fs::metadata`, which follows symlinks).
    pub fn from_metadata(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        FileStamp {
            size: meta.len(),
            mtime_ns: meta
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.mtime_nsec()),
            inode: meta.ino(),
        }
    }

    /// The stamp of the file at `path`.
    pub fn of(path: &Path) -> io::Result<Self> {
        Ok(Self::from_metadata(&std::fs::metadata(path)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    /// A reader that hands out at most `step` bytes per call (like a pipe).
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.1).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn both_paths_match_one_shot_hash_at_buffer_boundaries() {
        for len in [
            0,
            1,
            SMALL_BUF - 1,
            SMALL_BUF,
            SMALL_BUF + 1,
            PARALLEL_MIN as usize,
            3 * LARGE_BUF,
            3 * LARGE_BUF + 1,
            5 * LARGE_BUF - 1,
        ] {
            let d = data(len);
            let want = *blake3::hash(&d).as_bytes();
            for hint in [0, len as u64, PARALLEL_MIN] {
                let (h, n) = hash_reader(&mut Trickle(&d, 100_003), hint).unwrap();
                assert_eq!((h.0, n), (want, len as u64), "len {len} hint {hint}");
            }
        }
    }

    struct FailsAfter(usize);

    impl Read for FailsAfter {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::Error::other("disk on fire"));
            }
            let n = buf.len().min(self.0);
            buf[..n].fill(1);
            self.0 -= n;
            Ok(n)
        }
    }

    #[test]
    fn read_errors_propagate_from_both_paths() {
        for hint in [100, PARALLEL_MIN] {
            let err = hash_reader(&mut FailsAfter(9 << 20), hint).unwrap_err();
            assert_eq!(err.to_string(), "disk on fire");
        }
    }
}
