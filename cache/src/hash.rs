//! Content hashes (blake3), streaming file hashing, memo keys and file stamps.

use std::fmt;
use std::fs::File;
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
/// parallelises within one input; below this the thread hand-off costs more than it saves).
const PARALLEL_MIN: u64 = 4 << 20;
/// Read size for large files: big enough that syscall overhead is negligible and that
/// each `update_rayon` call has enough chunks to split across threads.
const LARGE_BUF: usize = 8 << 20;
/// Read size cap for small files (a buffer is allocated per call; don't over-allocate).
const SMALL_BUF: usize = 256 << 10;

/// Hashes a file with blake3, streaming: memory use is bounded by a fixed buffer whatever
/// the file's size. Returns the hash and the number of bytes hashed.
///
/// Large files are read in 8 MiB pieces, each hashed by all cores (rayon). The file is read,
/// not memory-mapped, so a file truncated while it is hashed gives an I/O result instead of
/// a SIGBUS that would kill the whole build.
pub fn hash_file(path: &Path) -> io::Result<(ContentHash, u64)> {
    let mut file = File::open(path)?;
    let expected = file.metadata().map(|m| m.len()).unwrap_or(0);
    hash_reader(&mut file, expected)
}

/// Hashes everything `reader` yields; `size_hint` only picks the buffer size and strategy.
pub(crate) fn hash_reader(
    reader: &mut impl Read,
    size_hint: u64,
) -> io::Result<(ContentHash, u64)> {
    let parallel = size_hint >= PARALLEL_MIN;
    let cap = if parallel {
        LARGE_BUF
    } else {
        // +1 so that a file of exactly the hinted size ends with one short read of 0.
        (size_hint as usize)
            .saturating_add(1)
            .clamp(4096, SMALL_BUF)
    };
    let mut buf = vec![0u8; cap];
    let mut hasher = blake3::Hasher::new();
    let mut total = 0u64;
    loop {
        // Fill the buffer completely (short reads are common on pipes and network files)
        // so each rayon update sees a large, evenly split input.
        let mut filled = 0;
        while filled < buf.len() {
            match reader.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        if filled == 0 {
            break;
        }
        if parallel {
            hasher.update_rayon(&buf[..filled]);
        } else {
            hasher.update(&buf[..filled]);
        }
        total += filled as u64;
        if filled < buf.len() {
            break;
        }
    }
    Ok((ContentHash(*hasher.finalize().as_bytes()), total))
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
