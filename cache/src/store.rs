//! The cache itself: blob files, the SQLite index, memo entries, file hashes, verify and gc.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

use crate::error::CacheError;
use crate::fsutil::{self, sweep_temps};
use crate::hash::{ContentHash, FileStamp, MemoKey, hash_reader};
use crate::report::{BadEntry, CorruptBlob, FileRowProblem, GcReport, Stats, VerifyReport};

/// Threads that write blob files in `memo_put_many`/`put_blobs` (I/O bound: their fsyncs
/// overlap, so more threads than cores pay off).
const WRITE_THREADS: usize = 8;
/// How long a writer waits for another process's write transaction before giving up.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(60);
/// The index schema this build writes (`PRAGMA user_version`).
/// 2: `files` rows carry `row_check`; the v1 `files` table is dropped on migration (its rows
/// cannot be vouched for; the files are hashed once more).
const SCHEMA_VERSION: i64 = 2;
/// A blob's last-used time is written at most once per this interval per process.
const TOUCH_INTERVAL: Duration = Duration::from_secs(600);
/// Pending last-used updates are written when this many have gathered ...
const TOUCH_BATCH: usize = 512;
/// ... or when the oldest is this old (checked on the next read), and on drop.
const TOUCH_MAX_DELAY: Duration = Duration::from_secs(2);

const INDEX_FILE: &str = "index.sqlite";
const BLOBS_DIR: &str = "blobs";
const TMP_DIR: &str = "tmp";
/// The Cache Directory Tagging signature, so backup tools skip the cache.
const CACHEDIR_TAG: &str = "Signature: 8a477f597d28d172789f06886806bc55\n\
# This file is a cache directory tag created by aps5.\n\
# For information about cache directory tags see https://bford.info/cachedir/\n";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS blobs (
    hash      BLOB PRIMARY KEY NOT NULL,  -- blake3 of the content, 32 bytes
    size      INTEGER NOT NULL,
    last_used INTEGER NOT NULL            -- ns since the Unix epoch
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS blobs_by_last_used ON blobs(last_used);
CREATE TABLE IF NOT EXISTS memo (
    key     BLOB PRIMARY KEY NOT NULL,    -- MemoKey
    blob    BLOB NOT NULL,                -- ContentHash of the result
    created INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS memo_by_blob ON memo(blob);
CREATE TABLE IF NOT EXISTS files (
    path     TEXT PRIMARY KEY NOT NULL,
    size     INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    inode    INTEGER NOT NULL,            -- u64 stored bit for bit
    hash     BLOB NOT NULL,
    row_check INTEGER NOT NULL            -- see file_row_check: catches a damaged row
) WITHOUT ROWID;
";

/// Key of the `files` row check (a keyed blake3, so it is not any plain content hash).
const FILE_ROW_CONTEXT: &str = "aps5 2026-12 files row check v1";

/// A 64-bit check over every column of a `files` row. A row whose check does not match (a
/// flipped bit anywhere in it) is treated as unknown: the file is hashed again and the row
/// rewritten. Costs well under a microsecond per row, so the no-op build stays a stat per file.
pub(crate) fn file_row_check(path: &str, stamp: &FileStamp, hash: &ContentHash) -> i64 {
    static KEY: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    let key = KEY.get_or_init(|| blake3::derive_key(FILE_ROW_CONTEXT, b""));
    let mut h = blake3::Hasher::new_keyed(key);
    h.update(&(path.len() as u64).to_le_bytes());
    h.update(path.as_bytes());
    h.update(&stamp.size.to_le_bytes());
    h.update(&stamp.mtime_ns.to_le_bytes());
    h.update(&stamp.inode.to_le_bytes());
    h.update(&hash.0);
    let out = h.finalize();
    i64::from_le_bytes(out.as_bytes()[..8].try_into().expect("8 bytes"))
}

/// The result of a cache lookup.
#[derive(Clone, PartialEq, Eq)]
pub enum Lookup {
    /// Found, and its bytes hash to what they should.
    Hit(Vec<u8>),
    /// Not in the cache (or its index row pointed at a missing file).
    Miss,
    /// It was there but failed verification; it has been removed (and a warning logged),
    /// so the caller recomputes it and stores it again.
    Corrupt,
}

impl Lookup {
    /// The bytes of a hit.
    pub fn hit(self) -> Option<Vec<u8>> {
        match self {
            Lookup::Hit(b) => Some(b),
            _ => None,
        }
    }
}

impl std::fmt::Debug for Lookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lookup::Hit(b) => write!(f, "Hit({} bytes)", b.len()),
            Lookup::Miss => f.write_str("Miss"),
            Lookup::Corrupt => f.write_str("Corrupt"),
        }
    }
}

/// Outcome of reading one blob file.
enum BlobRead {
    Ok(Vec<u8>),
    Missing,
    Corrupt,
}

/// A well-named file found under `blobs/`.
struct BlobFile {
    hash: ContentHash,
    path: PathBuf,
    size: u64,
    mtime: i64,
}

/// What is under `blobs/` (see `Cache::list_blob_files`).
#[derive(Default)]
struct BlobListing {
    found: Vec<BlobFile>,
    foreign: Vec<PathBuf>,
    /// (path, the hash its name gives if it is a blob name, what it is).
    bad: Vec<(PathBuf, Option<ContentHash>, String)>,
}

/// Last-used times gathered by reads, written to the index in batches.
struct Touches {
    /// When this process last recorded each blob (bounds writes to one per interval).
    recorded: HashMap<ContentHash, Instant>,
    /// (hash, size, time ns) not yet written.
    pending: Vec<(ContentHash, u64, i64)>,
    oldest_pending: Option<Instant>,
}

/// A blake3-addressed content cache: blob files plus a SQLite index, safe to share between
/// threads (`Cache` is `Send + Sync`) and between processes. See docs/CACHE.md.
pub struct Cache {
    dir: PathBuf,
    blobs_dir: PathBuf,
    tmp_dir: PathBuf,
    index_path: PathBuf,
    conn: Mutex<Connection>,
    touches: Mutex<Touches>,
    /// Size of the last `file_hashes_under` answer, to size the next map up front.
    files_hint: AtomicUsize,
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn mtime_ns(meta: &fs::Metadata) -> i64 {
    FileStamp::from_metadata(meta).mtime_ns
}

fn hash_from_sql(bytes: Vec<u8>) -> Option<ContentHash> {
    <[u8; 32]>::try_from(bytes.as_slice()).ok().map(ContentHash)
}

/// The smallest string greater than every string that starts with `prefix` (None: no bound).
fn prefix_upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let mut next = last as u32 + 1;
        if (0xD800..0xE000).contains(&next) {
            next = 0xE000;
        }
        if let Some(c) = char::from_u32(next) {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
        // `last` was char::MAX: carry into the previous character.
    }
    None
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves nothing half-done that SQLite did not roll back.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Cache {
    /// The default cache folder: `$APS5_CACHE_DIR`, else `$XDG_CACHE_HOME/aps5`, else
    /// `$HOME/.cache/aps5` (else a per-user folder under the system temp folder).
    pub fn default_dir() -> PathBuf {
        if let Some(dir) = std::env::var_os("APS5_CACHE_DIR").filter(|v| !v.is_empty()) {
            return PathBuf::from(dir);
        }
        // The XDG spec says relative values are to be ignored.
        if let Some(xdg) = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
        {
            return xdg.join("aps5");
        }
        if let Some(home) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            return PathBuf::from(home).join(".cache").join("aps5");
        }
        // SAFETY: getuid cannot fail and touches no memory.
        let uid = unsafe { libc::getuid() };
        std::env::temp_dir().join(format!("aps5-cache-{uid}"))
    }

    /// Opens [`Cache::default_dir`].
    pub fn open_default() -> Result<Cache, CacheError> {
        Self::open(&Self::default_dir())
    }

    /// Opens (creating if needed) the cache in `dir`: its folders, the index and its schema.
    pub fn open(dir: &Path) -> Result<Cache, CacheError> {
        let dir = if dir.is_absolute() {
            dir.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(|e| CacheError::io("resolve", dir, e))?
                .join(dir)
        };
        let blobs_dir = dir.join(BLOBS_DIR);
        let tmp_dir = dir.join(TMP_DIR);
        for d in [&dir, &blobs_dir, &tmp_dir] {
            fs::create_dir_all(d).map_err(|error| CacheError::CreateDir {
                dir: d.clone(),
                error,
            })?;
        }
        // Prove we can create files before SQLite gives a vaguer error.
        let (probe, _file) =
            fsutil::create_temp(&tmp_dir).map_err(|error| CacheError::NotWritable {
                dir: dir.clone(),
                error,
            })?;
        let _ = fs::remove_file(&probe);
        let tag = dir.join("CACHEDIR.TAG");
        if fs::symlink_metadata(&tag).is_err() {
            // Not durable on purpose: it only helps backup tools.
            fs::write(&tag, CACHEDIR_TAG).map_err(|e| CacheError::io("write", &tag, e))?;
        }

        let index_path = dir.join(INDEX_FILE);
        let conn = Self::open_index(&index_path)?;
        Ok(Cache {
            dir,
            blobs_dir,
            tmp_dir,
            index_path,
            conn: Mutex::new(conn),
            touches: Mutex::new(Touches {
                recorded: HashMap::new(),
                pending: Vec::new(),
                oldest_pending: None,
            }),
            files_hint: AtomicUsize::new(0),
        })
    }

    /// Moves a damaged index aside (to `index.sqlite.corrupt-<unix seconds>`, with its
    /// `-wal`/`-shm` files) and opens the cache with a new, empty index. The blobs stay: the
    /// next [`Cache::verify`] or [`Cache::gc`] adopts them. Memo entries and file hashes are
    /// lost (they are recomputed). Returns the cache and where the old index went.
    ///
    /// Meant for a [`CacheError::IndexCorrupt`] from [`Cache::open`]; no other process may
    /// be using the cache meanwhile.
    pub fn rebuild_index(dir: &Path) -> Result<(Cache, PathBuf), CacheError> {
        let index = dir.join(INDEX_FILE);
        let stamp = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let aside = dir.join(format!("{INDEX_FILE}.corrupt-{stamp}"));
        for suffix in ["-wal", "-shm", ""] {
            let mut from = index.clone().into_os_string();
            from.push(suffix);
            let mut to = aside.clone().into_os_string();
            to.push(suffix);
            match fs::rename(&from, &to) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(CacheError::io("move aside", Path::new(&from), e)),
            }
        }
        tracing::warn!(old = %aside.display(), "cache index moved aside; starting a new one");
        Ok((Cache::open(dir)?, aside))
    }

    /// `aps5 cache verify`: opens the cache in `dir` and [`Cache::verify`]s it, and rebuilds
    /// the index from the blobs ([`Cache::rebuild_index`]) when it is damaged: when it does
    /// not open as a SQLite database, is not a regular file, or opens but fails SQLite's
    /// `PRAGMA integrity_check`. The report then lists what SQLite found and where the old
    /// index went (`index_rebuilt`), and the verify of the new index follows.
    ///
    /// Like `rebuild_index`, rebuilding assumes no other process is using the cache.
    pub fn verify_dir(dir: &Path) -> Result<VerifyReport, CacheError> {
        let damaged = |e: &CacheError| {
            matches!(
                e,
                CacheError::IndexCorrupt { .. } | CacheError::IndexNotAFile { .. }
            )
        };
        let problems = match Cache::open(dir) {
            Ok(cache) => match cache.verify() {
                Ok(report) if report.index_problems.is_empty() => return Ok(report),
                Ok(report) => report.index_problems,
                Err(e) if damaged(&e) => vec![e.to_string()],
                Err(e) => return Err(e),
            },
            Err(e) if damaged(&e) => vec![e.to_string()],
            Err(e) => return Err(e),
        };
        // The damaged index's connection is closed (the cache dropped) before it moves.
        tracing::warn!(dir = %dir.display(), "cache index is damaged: rebuilding it from the blobs");
        let (cache, old) = Cache::rebuild_index(dir)?;
        let mut report = cache.verify()?;
        report.index_problems = problems;
        report.index_rebuilt = Some(old);
        Ok(report)
    }

    /// Refuses an index (or its `-wal`/`-shm` file) that is not a regular file: SQLite would
    /// follow a link, and could block on a FIFO.
    fn check_index_files(path: &Path) -> Result<(), CacheError> {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            let p = PathBuf::from(p);
            match fs::symlink_metadata(&p) {
                Ok(m) if !m.is_file() => {
                    return Err(CacheError::IndexNotAFile {
                        path: p,
                        what: fsutil::describe_kind(m.file_type()),
                    });
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(CacheError::io("stat", &p, e)),
            }
        }
        Ok(())
    }

    fn open_index(path: &Path) -> Result<Connection, CacheError> {
        let err = |e| CacheError::sqlite(path, e);
        Self::check_index_files(path)?;
        let mut conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )
        .map_err(err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
        // Switching to WAL needs a moment of exclusive access, and SQLite does not always
        // call the busy handler for it when another process opens the same new index.
        let deadline = Instant::now() + BUSY_TIMEOUT;
        let mode: String = loop {
            match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)) {
                Ok(m) => break m,
                Err(e)
                    if matches!(
                        e.sqlite_error_code(),
                        Some(
                            rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                        )
                    ) && Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(err(e)),
            }
        };
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(index = %path.display(), mode, "cache index is not in WAL mode; concurrent use will be slower");
        }
        // In WAL mode NORMAL keeps the index consistent after a crash (it may lose the last
        // commits, which only turns entries into misses or orphans) without an fsync per write.
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        // Reads straight from the OS page cache instead of a pread per 4 KiB page.
        conn.pragma_update(None, "mmap_size", 256i64 << 20)
            .map_err(err)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(err)?;
        if version > SCHEMA_VERSION {
            return Err(CacheError::SchemaTooNew {
                path: path.to_path_buf(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        if version < SCHEMA_VERSION {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(err)?;
            if version == 1 {
                tx.execute_batch("DROP TABLE IF EXISTS files;")
                    .map_err(err)?;
            }
            tx.execute_batch(SCHEMA).map_err(err)?;
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)
                .map_err(err)?;
            tx.commit().map_err(err)?;
        }
        Ok(conn)
    }

    /// The cache folder (absolute).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the blob with `hash` lives: `blobs/ab/cdef...`.
    pub fn blob_path(&self, hash: &ContentHash) -> PathBuf {
        let hex = hash.to_hex();
        self.blobs_dir.join(&hex[..2]).join(&hex[2..])
    }

    fn db_err(&self, e: rusqlite::Error) -> CacheError {
        CacheError::sqlite(&self.index_path, e)
    }

    /// Stores `bytes` (durably) and returns their hash. Storing bytes already present
    /// costs one hash, one `stat` and one index write.
    pub fn put_blob(&self, bytes: &[u8]) -> Result<ContentHash, CacheError> {
        let hash = ContentHash::of(bytes);
        self.store_file(&hash, bytes)?;
        let now = now_ns();
        let mut conn = lock(&self.conn);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db_err(e))?;
        upsert_blob(&tx, &hash, bytes.len() as u64, now).map_err(|e| self.db_err(e))?;
        tx.commit().map_err(|e| self.db_err(e))?;
        Ok(hash)
    }

    /// Writes the blob file unless a regular file of the right size is already there (a
    /// same-size file with wrong bytes is caught, removed and rewritten on the next read).
    /// Anything else in its place (a link, a FIFO, a folder) is removed first.
    fn store_file(&self, hash: &ContentHash, bytes: &[u8]) -> Result<(), CacheError> {
        self.store_file_parts(hash, &[bytes])
    }

    /// [`Cache::store_file`] of the concatenation of `parts`.
    fn store_file_parts(&self, hash: &ContentHash, parts: &[&[u8]]) -> Result<(), CacheError> {
        let path = self.blob_path(hash);
        let size: u64 = parts.iter().map(|p| p.len() as u64).sum();
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() && meta.len() == size => return Ok(()),
            Ok(meta) if !meta.is_file() => {
                tracing::warn!(blob = %path.display(), kind = fsutil::describe_kind(meta.file_type()), "cache blob is not a regular file: replacing it");
                fsutil::remove_entry(&path)
                    .map_err(|e| CacheError::io("remove the bad blob entry", &path, e))?;
            }
            _ => {}
        }
        fsutil::write_durable_parts(&self.tmp_dir, &path, parts)
            .map_err(|e| CacheError::io("write blob", &path, e))
    }

    /// The size the index records for a blob (None: no row).
    fn recorded_size(&self, hash: &ContentHash) -> Result<Option<u64>, CacheError> {
        let conn = lock(&self.conn);
        conn.prepare_cached("SELECT size FROM blobs WHERE hash = ?1")
            .and_then(|mut s| {
                s.query_row([&hash.0[..]], |r| r.get::<_, i64>(0))
                    .optional()
            })
            .map(|size| size.map(|s| s as u64))
            .map_err(|e| self.db_err(e))
    }

    /// Reads and verifies the blob file for `hash`, which the index says is `size` bytes
    /// long. Only a regular file of exactly that size is read (opened without following
    /// links and without blocking, checked with fstat, read no further than `size`); anything
    /// else, and bytes that fail verification, are reported, removed and `Corrupt`.
    fn read_blob_file(&self, hash: &ContentHash, size: u64) -> Result<BlobRead, CacheError> {
        let path = self.blob_path(hash);
        let (file, len) = match fsutil::open_regular(&path, false, Some(size)) {
            Ok(opened) => opened,
            Err(fsutil::OpenRefused::Missing) => return Ok(BlobRead::Missing),
            Err(fsutil::OpenRefused::Wrong(what)) => {
                tracing::warn!(
                    blob = %path.display(),
                    expected = %hash,
                    "corrupt cache blob: it is {what}; removing it; the result will be recomputed"
                );
                if let Err(e) = fsutil::remove_entry(&path) {
                    tracing::warn!(blob = %path.display(), error = %e, "could not remove corrupt cache blob");
                }
                return Ok(BlobRead::Corrupt);
            }
            Err(fsutil::OpenRefused::Io(e)) => {
                return Err(CacheError::io("open blob", &path, e));
            }
        };
        let mut buf = Vec::new();
        let read = usize::try_from(len)
            .map_err(io::Error::other)
            .and_then(|n| {
                buf.try_reserve_exact(n).map_err(io::Error::other)?;
                (&file).take(len).read_to_end(&mut buf)
            });
        match read {
            Ok(_) => {
                let got = ContentHash::of(&buf);
                if got == *hash {
                    return Ok(BlobRead::Ok(buf));
                }
                tracing::warn!(
                    blob = %path.display(),
                    expected = %hash,
                    actual = %got,
                    "corrupt cache blob: removing it; the result will be recomputed"
                );
            }
            Err(e) => {
                tracing::warn!(
                    blob = %path.display(),
                    expected = %hash,
                    error = %e,
                    "unreadable cache blob: removing it; the result will be recomputed"
                );
            }
        }
        self.remove_corrupt(&path, &file);
        Ok(BlobRead::Corrupt)
    }

    /// Deletes a corrupt blob file, unless another process has meanwhile replaced it with
    /// a fresh copy (a different inode at the same path).
    fn remove_corrupt(&self, path: &Path, opened: &File) {
        use std::os::unix::fs::MetadataExt;
        let same = match (opened.metadata(), fs::symlink_metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        };
        if same && let Err(e) = fs::remove_file(path) {
            tracing::warn!(blob = %path.display(), error = %e, "could not remove corrupt cache blob");
        }
    }

    /// Drops index rows for a blob found missing or corrupt (memo rows pointing at it stay:
    /// they read as misses and `memo_put` or `verify` replaces them).
    fn forget_blob(&self, hash: &ContentHash) -> Result<(), CacheError> {
        let conn = lock(&self.conn);
        // Look first: a plain miss (never stored) must not cost a write transaction.
        let known = conn
            .prepare_cached("SELECT 1 FROM blobs WHERE hash = ?1")
            .and_then(|mut s| s.exists([&hash.0[..]]))
            .map_err(|e| self.db_err(e))?;
        if known {
            conn.execute("DELETE FROM blobs WHERE hash = ?1", [&hash.0[..]])
                .map_err(|e| self.db_err(e))?;
        }
        Ok(())
    }

    /// Reads the blob with `hash`, verifying its bytes.
    ///
    /// A blob the index has no row for is a miss (its size is unknown, so it is not read);
    /// `verify` and `gc` adopt such files, and storing the same bytes again records it.
    pub fn get_blob(&self, hash: &ContentHash) -> Result<Lookup, CacheError> {
        let Some(size) = self.recorded_size(hash)? else {
            return Ok(Lookup::Miss);
        };
        match self.read_blob_file(hash, size)? {
            BlobRead::Ok(bytes) => {
                self.touch(hash, bytes.len() as u64);
                Ok(Lookup::Hit(bytes))
            }
            BlobRead::Missing => {
                self.forget_blob(hash)?;
                Ok(Lookup::Miss)
            }
            BlobRead::Corrupt => {
                self.forget_blob(hash)?;
                Ok(Lookup::Corrupt)
            }
        }
    }

    /// Looks up a memoized result.
    pub fn memo_get(&self, key: &MemoKey) -> Result<Lookup, CacheError> {
        let row = {
            let conn = lock(&self.conn);
            let mut stmt = conn
                .prepare_cached(
                    "SELECT memo.blob, blobs.size FROM memo
                     LEFT JOIN blobs ON blobs.hash = memo.blob WHERE memo.key = ?1",
                )
                .map_err(|e| self.db_err(e))?;
            stmt.query_row([&key.0.0[..]], |r| {
                Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, Option<i64>>(1)?))
            })
            .optional()
            .map_err(|e| self.db_err(e))?
        };
        let Some((blob, size)) = row else {
            return Ok(Lookup::Miss);
        };
        let Some(hash) = hash_from_sql(blob) else {
            return Ok(Lookup::Miss);
        };
        // A memo row whose blob has no row (its size unknown) is read as missing.
        let outcome = match size {
            Some(size) => self.read_blob_file(&hash, size as u64)?,
            None => BlobRead::Missing,
        };
        if let BlobRead::Ok(bytes) = outcome {
            self.touch(&hash, bytes.len() as u64);
            return Ok(Lookup::Hit(bytes));
        }
        {
            let mut conn = lock(&self.conn);
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| self.db_err(e))?;
            // Only this key's row, and only if no one has re-pointed it meanwhile.
            tx.execute(
                "DELETE FROM memo WHERE key = ?1 AND blob = ?2",
                params![&key.0.0[..], &hash.0[..]],
            )
            .map_err(|e| self.db_err(e))?;
            tx.execute("DELETE FROM blobs WHERE hash = ?1", [&hash.0[..]])
                .map_err(|e| self.db_err(e))?;
            tx.commit().map_err(|e| self.db_err(e))?;
        }
        Ok(match outcome {
            BlobRead::Corrupt => Lookup::Corrupt,
            _ => Lookup::Miss,
        })
    }

    /// Stores a memoized result: the blob first (durably), then the index rows.
    pub fn memo_put(&self, key: &MemoKey, bytes: &[u8]) -> Result<ContentHash, CacheError> {
        self.memo_put_parts(key, &[bytes])
    }

    /// [`Cache::memo_put`] of the concatenation of `parts`, which is never made in memory (a
    /// large result is hashed and written straight from its pieces).
    pub fn memo_put_parts(
        &self,
        key: &MemoKey,
        parts: &[&[u8]],
    ) -> Result<ContentHash, CacheError> {
        let hash = ContentHash::of_parts(parts.iter().copied());
        self.store_file_parts(&hash, parts)?;
        let size: u64 = parts.iter().map(|p| p.len() as u64).sum();
        let now = now_ns();
        let mut conn = lock(&self.conn);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db_err(e))?;
        upsert_blob(&tx, &hash, size, now).map_err(|e| self.db_err(e))?;
        tx.prepare_cached(
            "INSERT INTO memo (key, blob, created) VALUES (?1, ?2, ?3)
             ON CONFLICT (key) DO UPDATE SET blob = excluded.blob, created = excluded.created",
        )
        .and_then(|mut s| s.execute(params![&key.0.0[..], &hash.0[..], now]))
        .map_err(|e| self.db_err(e))?;
        tx.commit().map_err(|e| self.db_err(e))?;
        Ok(hash)
    }

    /// Stores many memoized results at once: the blob files are written by several threads
    /// (their fsyncs overlap, which on a journaling filesystem is many times faster than
    /// one after another), then all index rows go in one transaction. Returns the content
    /// hashes in order. Same guarantees as [`Cache::memo_put`] for each entry.
    pub fn memo_put_many(
        &self,
        entries: &[(MemoKey, &[u8])],
    ) -> Result<Vec<ContentHash>, CacheError> {
        let hashes = self.store_files_parallel(entries.iter().map(|e| e.1))?;
        let now = now_ns();
        let mut conn = lock(&self.conn);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db_err(e))?;
        for ((key, bytes), hash) in entries.iter().zip(&hashes) {
            upsert_blob(&tx, hash, bytes.len() as u64, now).map_err(|e| self.db_err(e))?;
            tx.prepare_cached(
                "INSERT INTO memo (key, blob, created) VALUES (?1, ?2, ?3)
                 ON CONFLICT (key) DO UPDATE SET blob = excluded.blob, created = excluded.created",
            )
            .and_then(|mut s| s.execute(params![&key.0.0[..], &hash.0[..], now]))
            .map_err(|e| self.db_err(e))?;
        }
        tx.commit().map_err(|e| self.db_err(e))?;
        Ok(hashes)
    }

    /// Stores many blobs at once (see [`Cache::memo_put_many`]); returns their hashes.
    pub fn put_blobs(&self, blobs: &[&[u8]]) -> Result<Vec<ContentHash>, CacheError> {
        let hashes = self.store_files_parallel(blobs.iter().copied())?;
        let now = now_ns();
        let mut conn = lock(&self.conn);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db_err(e))?;
        for (bytes, hash) in blobs.iter().zip(&hashes) {
            upsert_blob(&tx, hash, bytes.len() as u64, now).map_err(|e| self.db_err(e))?;
        }
        tx.commit().map_err(|e| self.db_err(e))?;
        Ok(hashes)
    }

    /// Hashes and durably writes each blob, on up to [`WRITE_THREADS`] threads.
    fn store_files_parallel<'a>(
        &self,
        blobs: impl Iterator<Item = &'a [u8]>,
    ) -> Result<Vec<ContentHash>, CacheError> {
        let blobs: Vec<&[u8]> = blobs.collect();
        let hashes: Vec<ContentHash> = blobs.iter().map(|b| ContentHash::of(b)).collect();
        let threads = WRITE_THREADS.min(blobs.len());
        if threads <= 1 {
            for (b, h) in blobs.iter().zip(&hashes) {
                self.store_file(h, b)?;
            }
            return Ok(hashes);
        }
        let next = AtomicUsize::new(0);
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| -> Result<(), CacheError> {
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(b) = blobs.get(i) else {
                                return Ok(());
                            };
                            self.store_file(&hashes[i], b)?;
                        }
                    })
                })
                .collect();
            for w in workers {
                match w.join() {
                    Ok(r) => r?,
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            Ok::<_, CacheError>(())
        })?;
        Ok(hashes)
    }

    /// Notes that `hash` was just used; written to the index in batches. Best effort: the
    /// read that called it has already succeeded, so a failure is only logged.
    fn touch(&self, hash: &ContentHash, size: u64) {
        if let Err(e) = self.try_touch(hash, size) {
            tracing::warn!(error = %e, "could not record cache last-used times");
        }
    }

    fn try_touch(&self, hash: &ContentHash, size: u64) -> Result<(), CacheError> {
        let batch = {
            let mut t = lock(&self.touches);
            let now = Instant::now();
            if t.recorded
                .get(hash)
                .is_some_and(|at| now.duration_since(*at) < TOUCH_INTERVAL)
            {
                return Ok(());
            }
            if t.recorded.len() > 1_000_000 {
                t.recorded.clear();
            }
            t.recorded.insert(*hash, now);
            t.pending.push((*hash, size, now_ns()));
            let oldest = *t.oldest_pending.get_or_insert(now);
            if t.pending.len() < TOUCH_BATCH && now.duration_since(oldest) < TOUCH_MAX_DELAY {
                return Ok(());
            }
            t.oldest_pending = None;
            std::mem::take(&mut t.pending)
        };
        self.write_touches(&batch)
    }

    /// Writes pending last-used times now (also done on drop and before stats/verify/gc).
    pub fn flush(&self) -> Result<(), CacheError> {
        let batch = {
            let mut t = lock(&self.touches);
            t.oldest_pending = None;
            std::mem::take(&mut t.pending)
        };
        self.write_touches(&batch)
    }

    fn write_touches(&self, batch: &[(ContentHash, u64, i64)]) -> Result<(), CacheError> {
        if batch.is_empty() {
            return Ok(());
        }
        let mut conn = lock(&self.conn);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db_err(e))?;
        for (hash, size, at) in batch {
            // Also re-adopts a verified blob whose row was lost.
            upsert_blob(&tx, hash, *size, *at).map_err(|e| self.db_err(e))?;
        }
        tx.commit().map_err(|e| self.db_err(e))
    }

    /// All remembered file hashes whose path starts with `prefix`, in one range query.
    pub fn file_hashes_under(
        &self,
        prefix: &str,
    ) -> Result<HashMap<String, (FileStamp, ContentHash)>, CacheError> {
        let conn = lock(&self.conn);
        let upper = prefix_upper_bound(prefix);
        let mut stmt = conn
            .prepare_cached(
                "SELECT path, size, mtime_ns, inode, hash, row_check FROM files
                 WHERE path >= ?1 AND (?2 IS NULL OR path < ?2)",
            )
            .map_err(|e| self.db_err(e))?;
        let mut rows = stmt
            .query(params![prefix, upper])
            .map_err(|e| self.db_err(e))?;
        let mut out = HashMap::with_capacity(self.files_hint.load(Ordering::Relaxed));
        let mut damaged = 0u64;
        while let Some(row) = rows.next().map_err(|e| self.db_err(e))? {
            let read = (|| {
                // Borrowed column reads: one allocation per row (the path) instead of two.
                let hash = <[u8; 32]>::try_from(row.get_ref(4)?.as_blob()?).ok();
                Ok::<_, rusqlite::Error>((
                    row.get_ref(0)?.as_str()?.to_owned(),
                    row.get::<_, i64>(1)?,
                    row.get::<_, i64>(2)?,
                    row.get::<_, i64>(3)?,
                    hash,
                    row.get::<_, i64>(5)?,
                ))
            })();
            let (path, size, mtime_ns, inode, hash, check) = read.map_err(|e| self.db_err(e))?;
            // A malformed or damaged row is skipped: the file is simply hashed again (and the
            // caller's new row replaces it).
            let Some(hash) = hash.map(ContentHash) else {
                damaged += 1;
                continue;
            };
            let stamp = FileStamp {
                size: size as u64,
                mtime_ns,
                inode: inode as u64,
            };
            if file_row_check(&path, &stamp, &hash) != check {
                damaged += 1;
                continue;
            }
            out.insert(path, (stamp, hash));
        }
        if damaged > 0 {
            tracing::warn!(
                index = %self.index_path.display(),
                rows = damaged,
                "remembered file hashes failed their check (a damaged cache index); those files are hashed again"
            );
        }
        self.files_hint.store(out.len(), Ordering::Relaxed);
        Ok(out)
    }

    /// Records many (path, stamp, hash) rows in one transaction (replacing older rows).
    pub fn record_file_hashes(
        &self,
        rows: &[(String, FileStamp, ContentHash)],
    ) -> Result<(), CacheError> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut conn = lock(&self.conn);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db_err(e))?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO files (path, size, mtime_ns, inode, hash, row_check)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (path) DO UPDATE SET size = excluded.size,
                       mtime_ns = excluded.mtime_ns, inode = excluded.inode, hash = excluded.hash,
                       row_check = excluded.row_check",
                )
                .map_err(|e| self.db_err(e))?;
            for (path, stamp, hash) in rows {
                stmt.execute(params![
                    path,
                    stamp.size as i64,
                    stamp.mtime_ns,
                    stamp.inode as i64,
                    &hash.0[..],
                    file_row_check(path, stamp, hash)
                ])
                .map_err(|e| self.db_err(e))?;
            }
        }
        tx.commit().map_err(|e| self.db_err(e))
    }

    /// Forgets the remembered hashes of every path starting with `prefix`; returns how many.
    pub fn forget_file_hashes_under(&self, prefix: &str) -> Result<u64, CacheError> {
        let conn = lock(&self.conn);
        let n = conn
            .execute(
                "DELETE FROM files WHERE path >= ?1 AND (?2 IS NULL OR path < ?2)",
                params![prefix, prefix_upper_bound(prefix)],
            )
            .map_err(|e| self.db_err(e))?;
        Ok(n as u64)
    }

    /// Counts what the cache holds.
    pub fn stats(&self) -> Result<Stats, CacheError> {
        self.flush()?;
        let conn = lock(&self.conn);
        let q = |sql: &str| -> Result<i64, CacheError> {
            conn.query_row(sql, [], |r| r.get(0))
                .map_err(|e| self.db_err(e))
        };
        let blobs = q("SELECT count(*) FROM blobs")?;
        let blob_bytes = q("SELECT coalesce(sum(size), 0) FROM blobs")?;
        let memo_entries = q("SELECT count(*) FROM memo")?;
        let file_hash_entries = q("SELECT count(*) FROM files")?;
        let index_bytes = ["", "-wal"]
            .iter()
            .filter_map(|suffix| {
                let mut p = self.index_path.clone().into_os_string();
                p.push(suffix);
                fs::metadata(p).ok().map(|m| m.len())
            })
            .sum();
        Ok(Stats {
            dir: self.dir.clone(),
            blobs: blobs as u64,
            blob_bytes: blob_bytes as u64,
            memo_entries: memo_entries as u64,
            file_hash_entries: file_hash_entries as u64,
            index_bytes,
        })
    }

    /// Lists the blob files on disk: (hash, path, size, mtime) for well-named regular files,
    /// the paths of anything not named like a blob under `blobs/`, and the entries that are
    /// named like a blob (or a shard folder) but are not a regular file (or a real folder):
    /// links, FIFOs, folders, devices, with what each is.
    fn list_blob_files(&self) -> Result<BlobListing, CacheError> {
        let mut listing = BlobListing::default();
        let list = |dir: &Path| fs::read_dir(dir).map_err(|e| CacheError::io("list", dir, e));
        let is_hex = |n: &str| {
            n.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        for shard in list(&self.blobs_dir)? {
            let shard = shard.map_err(|e| CacheError::io("list", &self.blobs_dir, e))?;
            let shard_path = shard.path();
            let shard_name = shard.file_name();
            let shard_name = shard_name.to_str().unwrap_or("");
            if shard_name.len() != 2 || !is_hex(shard_name) {
                listing.foreign.push(shard_path);
                continue;
            }
            // file_type() does not follow links: a link named like a shard is not a shard.
            let ft = shard
                .file_type()
                .map_err(|e| CacheError::io("stat", &shard_path, e))?;
            if !ft.is_dir() {
                listing
                    .bad
                    .push((shard_path, None, fsutil::describe_kind(ft).to_string()));
                continue;
            }
            for entry in list(&shard_path)? {
                let entry = entry.map_err(|e| CacheError::io("list", &shard_path, e))?;
                let path = entry.path();
                let name = entry.file_name();
                let hash = name
                    .to_str()
                    .filter(|n| is_hex(n))
                    .and_then(|n| format!("{shard_name}{n}").parse::<ContentHash>().ok());
                let meta = match fs::symlink_metadata(&path) {
                    Ok(m) => m,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(CacheError::io("stat", &path, e)),
                };
                match hash {
                    Some(hash) if meta.is_file() => listing.found.push(BlobFile {
                        hash,
                        path,
                        size: meta.len(),
                        mtime: mtime_ns(&meta),
                    }),
                    Some(hash) => listing.bad.push((
                        path,
                        Some(hash),
                        fsutil::describe_kind(meta.file_type()).to_string(),
                    )),
                    None => listing.foreign.push(path),
                }
            }
        }
        Ok(listing)
    }

    fn index_snapshot(&self) -> Result<HashMap<ContentHash, u64>, CacheError> {
        let conn = lock(&self.conn);
        let mut stmt = conn
            .prepare("SELECT hash, size FROM blobs")
            .map_err(|e| self.db_err(e))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, i64>(1)?)))
            .map_err(|e| self.db_err(e))?;
        let mut out = HashMap::new();
        for row in rows {
            let (hash, size) = row.map_err(|e| self.db_err(e))?;
            match hash_from_sql(hash) {
                Some(h) => {
                    out.insert(h, size as u64);
                }
                None => {
                    // Cannot name a file; drop it later via the missing path.
                }
            }
        }
        Ok(out)
    }

    /// Checks every blob file against its name and the index against the files, repairing
    /// what it can: corrupt blobs and rows of missing blobs are removed, valid orphan files
    /// adopted, temp files of dead writers removed, remembered file hashes checked. Safe while
    /// other processes use the cache. An index failing SQLite's integrity check stops it
    /// there (only `index_problems` is filled in): [`Cache::verify_dir`] rebuilds such an index.
    pub fn verify(&self) -> Result<VerifyReport, CacheError> {
        self.flush()?;
        let mut report = VerifyReport {
            dir: self.dir.clone(),
            ..Default::default()
        };
        {
            let conn = lock(&self.conn);
            let mut stmt = conn
                .prepare("PRAGMA integrity_check")
                .map_err(|e| self.db_err(e))?;
            let lines = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(|e| self.db_err(e))?;
            for line in lines {
                let line = line.map_err(|e| self.db_err(e))?;
                if line != "ok" {
                    report.index_problems.push(line);
                }
            }
        }
        if !report.index_problems.is_empty() {
            // Nothing is judged against a damaged index (its rows may name wrong sizes, and
            // good blobs would be removed): `verify_dir` rebuilds it, then verifies.
            return Ok(report);
        }
        let sweep =
            sweep_temps(&self.tmp_dir).map_err(|e| CacheError::io("clean", &self.tmp_dir, e))?;
        report.temp_removed = sweep.removed;
        report.temp_in_use = sweep.in_use;

        // Snapshot the index before listing files: a row is written only after its file is
        // in place, so a row in the snapshot whose file is not listed really lost its file.
        let rows = self.index_snapshot()?;
        let listing = self.list_blob_files()?;
        report.foreign = listing.foreign;
        let mut on_disk = HashSet::new();
        let mut adopt = Vec::new();
        let mut corrupt_hashes = Vec::new();
        for (path, hash, what) in listing.bad {
            tracing::warn!(entry = %path.display(), what, "cache blob entry is not a regular file: removing it");
            let removed = fsutil::remove_entry(&path);
            if let Err(e) = &removed {
                tracing::warn!(entry = %path.display(), error = %e, "could not remove bad cache blob entry");
            }
            corrupt_hashes.extend(hash);
            report.bad_entries.push(BadEntry {
                path,
                what,
                removed: removed.is_ok(),
            });
        }
        for BlobFile {
            hash,
            path,
            mtime,
            size,
        } in listing.found
        {
            // The same checks as a read (no link, no FIFO: the entry may have been swapped
            // since the listing; the size the index records, so a huge sparse file is refused
            // unread), bounded by that size. An orphan is bounded by the size listed.
            let want = rows.get(&hash).copied().unwrap_or(size);
            let outcome = match fsutil::open_regular(&path, false, Some(want)) {
                Ok((f, len)) => hash_reader(&mut (&f).take(len), len).map(|(got, n)| (got, n, f)),
                Err(fsutil::OpenRefused::Missing) => continue,
                Err(fsutil::OpenRefused::Wrong(what)) => {
                    // The wrong size, or swapped for something else after the listing.
                    tracing::warn!(blob = %path.display(), what, "corrupt cache blob: removing it");
                    let removed = fsutil::remove_entry(&path);
                    corrupt_hashes.push(hash);
                    report.bad_entries.push(BadEntry {
                        path,
                        what,
                        removed: removed.is_ok(),
                    });
                    continue;
                }
                Err(fsutil::OpenRefused::Io(e)) => Err(e),
            };
            match outcome {
                Ok((got, n, f)) => {
                    report.checked += 1;
                    report.checked_bytes += n;
                    if got == hash {
                        on_disk.insert(hash);
                        if rows.get(&hash) != Some(&n) {
                            if !rows.contains_key(&hash) {
                                report.adopted.push(path);
                            }
                            adopt.push((hash, n, mtime));
                        }
                    } else {
                        tracing::warn!(blob = %path.display(), expected = %hash, actual = %got, "corrupt cache blob: removing it");
                        self.remove_corrupt(&path, &f);
                        corrupt_hashes.push(hash);
                        report.corrupt.push(CorruptBlob {
                            path,
                            expected: hash,
                            actual: Some(got),
                        });
                    }
                }
                Err(e) => {
                    tracing::warn!(blob = %path.display(), expected = %hash, error = %e, "unreadable cache blob: removing it");
                    if let Err(e) = fs::remove_file(&path) {
                        tracing::warn!(blob = %path.display(), error = %e, "could not remove unreadable cache blob");
                        report.unremoved.push(path.clone());
                    }
                    report.checked += 1;
                    corrupt_hashes.push(hash);
                    report.corrupt.push(CorruptBlob {
                        path,
                        expected: hash,
                        actual: None,
                    });
                }
            }
        }
        let corrupt_set: HashSet<_> = corrupt_hashes.iter().copied().collect();
        for hash in rows.keys() {
            if !on_disk.contains(hash) && !corrupt_set.contains(hash) {
                report.missing.push(*hash);
            }
        }
        report.missing.sort();

        let mut conn = lock(&self.conn);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db_err(e))?;
        for hash in report.missing.iter().chain(&corrupt_hashes) {
            tx.execute("DELETE FROM blobs WHERE hash = ?1", [&hash.0[..]])
                .map_err(|e| self.db_err(e))?;
        }
        for (hash, size, mtime) in &adopt {
            tx.execute(
                "INSERT INTO blobs (hash, size, last_used) VALUES (?1, ?2, ?3)
                 ON CONFLICT (hash) DO UPDATE SET size = excluded.size",
                params![&hash.0[..], *size as i64, mtime],
            )
            .map_err(|e| self.db_err(e))?;
        }
        report.dangling_memo_removed = tx
            .execute(
                "DELETE FROM memo WHERE NOT EXISTS (SELECT 1 FROM blobs WHERE blobs.hash = memo.blob)",
                [],
            )
            .map_err(|e| self.db_err(e))? as u64;
        tx.commit().map_err(|e| self.db_err(e))?;
        drop(conn);
        self.verify_file_rows(&mut report)?;
        Ok(report)
    }

    /// Checks every remembered file hash: a row whose check fails is dropped; a row whose file
    /// still has the remembered stamp is compared with a fresh hash of the file (read only if
    /// it is a regular file of the remembered size, and trusted only if the stamp is the same
    /// after the read) and corrected when wrong; a row whose file is gone or changed is stale
    /// and dropped (the next build hashes that file anyway). Updates are conditional on the
    /// row being unchanged, so a build running meanwhile is never overwritten.
    fn verify_file_rows(&self, report: &mut VerifyReport) -> Result<(), CacheError> {
        type Row = (String, i64, i64, i64, Vec<u8>, i64);
        let rows: Vec<Row> = {
            let conn = lock(&self.conn);
            let mut stmt = conn
                .prepare("SELECT path, size, mtime_ns, inode, hash, row_check FROM files")
                .map_err(|e| self.db_err(e))?;
            stmt.query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .and_then(|rows| rows.collect())
            .map_err(|e| self.db_err(e))?
        };
        let mut dropped: Vec<(String, i64)> = Vec::new();
        let mut fixed: Vec<(String, i64, ContentHash, i64)> = Vec::new();
        for (path, size, mtime_ns, inode, hash, check) in rows {
            report.file_rows_checked += 1;
            let stamp = FileStamp {
                size: size as u64,
                mtime_ns,
                inode: inode as u64,
            };
            let Some(hash) =
                hash_from_sql(hash).filter(|h| file_row_check(&path, &stamp, h) == check)
            else {
                report.file_rows.push(FileRowProblem {
                    path: path.clone(),
                    problem: "damaged row (its check failed): dropped".into(),
                });
                dropped.push((path, check));
                continue;
            };
            let now = |p: &str| fs::metadata(p).ok().map(|m| FileStamp::from_metadata(&m));
            if now(&path) != Some(stamp) {
                report.file_rows_stale += 1;
                dropped.push((path, check));
                continue;
            }
            let fresh = match fsutil::open_regular(Path::new(&path), true, Some(stamp.size)) {
                Ok((f, len)) => hash_reader(&mut (&f).take(len), len).ok(),
                Err(_) => None,
            };
            // Unreadable, or changing right now: left for the next build to hash.
            let Some((got, n)) = fresh else { continue };
            if n != stamp.size || now(&path) != Some(stamp) || got == hash {
                continue;
            }
            tracing::warn!(file = %path, remembered = %hash, actual = %got, "wrong remembered file hash: corrected");
            report.file_rows.push(FileRowProblem {
                path: path.clone(),
                problem: format!(
                    "remembered blake3 {hash}, but the file hashes to {got}: corrected"
                ),
            });
            let new_check = file_row_check(&path, &stamp, &got);
            fixed.push((path, check, got, new_check));
        }
        if dropped.is_empty() && fixed.is_empty() {
            return Ok(());
        }
        let mut conn = lock(&self.conn);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db_err(e))?;
        for (path, check) in &dropped {
            tx.execute(
                "DELETE FROM files WHERE path = ?1 AND row_check = ?2",
                params![path, check],
            )
            .map_err(|e| self.db_err(e))?;
        }
        for (path, old_check, hash, check) in &fixed {
            tx.execute(
                "UPDATE files SET hash = ?1, row_check = ?2 WHERE path = ?3 AND row_check = ?4",
                params![&hash.0[..], check, path, old_check],
            )
            .map_err(|e| self.db_err(e))?;
        }
        tx.commit().map_err(|e| self.db_err(e))
    }

    /// Evicts least-recently-used blobs (and the memo rows that point at them) until the
    /// blobs total at most `max_size` bytes; also removes temp leftovers of dead writers,
    /// adopts orphan blob files and drops rows whose file is gone (no blob is re-hashed:
    /// reads verify anyway).
    pub fn gc(&self, max_size: u64) -> Result<GcReport, CacheError> {
        self.flush()?;
        let mut report = GcReport {
            dir: self.dir.clone(),
            max_size,
            ..Default::default()
        };
        let sweep =
            sweep_temps(&self.tmp_dir).map_err(|e| CacheError::io("clean", &self.tmp_dir, e))?;
        report.temp_removed = sweep.removed.len() as u64;

        let rows = self.index_snapshot()?;
        let files = self.list_blob_files()?.found;
        let on_disk: HashSet<ContentHash> = files.iter().map(|f| f.hash).collect();
        {
            let mut conn = lock(&self.conn);
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| self.db_err(e))?;
            for BlobFile {
                hash, size, mtime, ..
            } in &files
            {
                if !rows.contains_key(hash) {
                    // An orphan's last use is unknown; its write time is the best guess.
                    report.orphans_adopted +=
                        tx.execute(
                            "INSERT INTO blobs (hash, size, last_used) VALUES (?1, ?2, ?3)
                             ON CONFLICT (hash) DO NOTHING",
                            params![&hash.0[..], *size as i64, mtime],
                        )
                        .map_err(|e| self.db_err(e))? as u64;
                }
            }
            for hash in rows.keys().filter(|h| !on_disk.contains(h)) {
                report.missing_removed += tx
                    .execute("DELETE FROM blobs WHERE hash = ?1", [&hash.0[..]])
                    .map_err(|e| self.db_err(e))? as u64;
                tx.execute("DELETE FROM memo WHERE blob = ?1", [&hash.0[..]])
                    .map_err(|e| self.db_err(e))?;
            }
            tx.commit().map_err(|e| self.db_err(e))?;
        }

        let mut victims = Vec::new();
        {
            let mut conn = lock(&self.conn);
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| self.db_err(e))?;
            let (count, total): (i64, i64) = tx
                .query_row(
                    "SELECT count(*), coalesce(sum(size), 0) FROM blobs",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .map_err(|e| self.db_err(e))?;
            report.blobs_before = count as u64;
            report.bytes_before = total as u64;
            let mut remaining = total as u64;
            if remaining > max_size {
                let mut stmt = tx
                    .prepare("SELECT hash, size FROM blobs ORDER BY last_used ASC, hash ASC")
                    .map_err(|e| self.db_err(e))?;
                let mut q = stmt.query([]).map_err(|e| self.db_err(e))?;
                while remaining > max_size {
                    let Some(row) = q.next().map_err(|e| self.db_err(e))? else {
                        break;
                    };
                    let hash: Vec<u8> = row.get(0).map_err(|e| self.db_err(e))?;
                    let size: i64 = row.get(1).map_err(|e| self.db_err(e))?;
                    remaining = remaining.saturating_sub(size as u64);
                    victims.push((hash, size as u64));
                }
            }
            for (hash, size) in &victims {
                tx.execute("DELETE FROM blobs WHERE hash = ?1", [&hash[..]])
                    .map_err(|e| self.db_err(e))?;
                report.memo_removed += tx
                    .execute("DELETE FROM memo WHERE blob = ?1", [&hash[..]])
                    .map_err(|e| self.db_err(e))? as u64;
                report.evicted_blobs += 1;
                report.evicted_bytes += size;
            }
            report.blobs_after = report.blobs_before - report.evicted_blobs;
            report.bytes_after = remaining;
            tx.commit().map_err(|e| self.db_err(e))?;
        }
        // Files go after their rows: a reader never finds a row pointing at a file that is
        // about to vanish for long, and a crash here leaves only orphans (adopted later).
        for (hash, _) in &victims {
            if let Some(hash) = hash_from_sql(hash.clone()) {
                let path = self.blob_path(&hash);
                match fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(CacheError::io("remove blob", &path, e)),
                }
            }
        }
        let mut forget = lock(&self.touches);
        for (hash, _) in &victims {
            if let Some(hash) = hash_from_sql(hash.clone()) {
                forget.recorded.remove(&hash);
            }
        }
        Ok(report)
    }
}

fn upsert_blob(conn: &Connection, hash: &ContentHash, size: u64, at: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO blobs (hash, size, last_used) VALUES (?1, ?2, ?3)
         ON CONFLICT (hash) DO UPDATE SET size = excluded.size,
           last_used = max(last_used, excluded.last_used)",
    )?
    .execute(params![&hash.0[..], size as i64, at])?;
    Ok(())
}

impl Drop for Cache {
    fn drop(&mut self) {
        if let Err(e) = self.flush() {
            tracing::warn!(error = %e, "could not record cache last-used times");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_upper_bound;

    #[test]
    fn upper_bound_of_prefix() {
        assert_eq!(prefix_upper_bound("abc").as_deref(), Some("abd"));
        assert_eq!(prefix_upper_bound(""), None);
        assert_eq!(prefix_upper_bound("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_upper_bound("\u{D7FF}").as_deref(), Some("\u{E000}"));
        assert_eq!(prefix_upper_bound("\u{10FFFF}"), None);
    }
}
