//! Reports printed by `aps5 cache stats|verify|gc`.

use std::fmt;
use std::path::PathBuf;

use crate::ContentHash;

/// Formats a byte count for people: `1.50 GiB (1610612736 bytes)`.
pub(crate) struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
        if self.0 < 1024 {
            return write!(f, "{} bytes", self.0);
        }
        let mut value = self.0 as f64 / 1024.0;
        let mut unit = 0;
        while value >= 1024.0 && unit + 1 < UNITS.len() {
            value /= 1024.0;
            unit += 1;
        }
        write!(f, "{value:.2} {} ({} bytes)", UNITS[unit], self.0)
    }
}

/// How much the cache holds (`aps5 cache stats`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    /// The cache folder.
    pub dir: PathBuf,
    /// Blobs in the index.
    pub blobs: u64,
    /// Their total size.
    pub blob_bytes: u64,
    /// Memoized query results.
    pub memo_entries: u64,
    /// Remembered (path, stamp) -> hash entries.
    pub file_hash_entries: u64,
    /// Size of the SQLite index (main file plus WAL).
    pub index_bytes: u64,
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "cache directory:    {}", self.dir.display())?;
        writeln!(
            f,
            "blobs:              {} ({})",
            self.blobs,
            Bytes(self.blob_bytes)
        )?;
        writeln!(f, "memoized results:   {}", self.memo_entries)?;
        writeln!(f, "file hashes:        {}", self.file_hash_entries)?;
        write!(f, "index size:         {}", Bytes(self.index_bytes))
    }
}

/// A blob that failed verification and was removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorruptBlob {
    /// Where it was.
    pub path: PathBuf,
    /// The hash its name promised.
    pub expected: ContentHash,
    /// What its bytes hashed to (None if it could not be read).
    pub actual: Option<ContentHash>,
}

/// What `verify` found and repaired (`aps5 cache verify`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// The cache folder.
    pub dir: PathBuf,
    /// Blob files read and hashed.
    pub checked: u64,
    /// Their total size.
    pub checked_bytes: u64,
    /// Blobs whose bytes did not match their name: removed (with their index rows).
    pub corrupt: Vec<CorruptBlob>,
    /// Index rows whose blob file was missing: removed.
    pub missing: Vec<ContentHash>,
    /// Valid blob files the index did not know (a writer died between the rename and the
    /// index update): added to the index.
    pub adopted: Vec<PathBuf>,
    /// Files under `blobs/` that are not named like a blob: left alone.
    pub foreign: Vec<PathBuf>,
    /// Memo rows pointing at blobs no longer in the index: removed.
    pub dangling_memo_removed: u64,
    /// Temp files left by killed writers: removed.
    pub temp_removed: Vec<PathBuf>,
    /// Temp files of writers still running: left alone.
    pub temp_in_use: u64,
    /// Problems SQLite's `integrity_check` reported (empty when the index is sound).
    pub index_problems: Vec<String>,
}

impl VerifyReport {
    /// True when nothing was wrong with the stored data: no corrupt or missing blob, no
    /// foreign file, a sound index. Leftover temp files and adopted orphans are the normal
    /// traces of a killed process and do not count.
    pub fn is_clean(&self) -> bool {
        self.corrupt.is_empty()
            && self.missing.is_empty()
            && self.foreign.is_empty()
            && self.index_problems.is_empty()
    }
}

impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "cache directory:    {}", self.dir.display())?;
        writeln!(
            f,
            "checked:            {} blobs ({})",
            self.checked,
            Bytes(self.checked_bytes)
        )?;
        writeln!(f, "corrupt (removed):  {}", self.corrupt.len())?;
        for c in &self.corrupt {
            match &c.actual {
                Some(actual) => writeln!(
                    f,
                    "  {} (expected {}, got {})",
                    c.path.display(),
                    c.expected,
                    actual
                )?,
                None => writeln!(
                    f,
                    "  {} (expected {}, unreadable)",
                    c.path.display(),
                    c.expected
                )?,
            }
        }
        writeln!(f, "missing (rows dropped): {}", self.missing.len())?;
        for m in &self.missing {
            writeln!(f, "  {m}")?;
        }
        writeln!(f, "orphans adopted:    {}", self.adopted.len())?;
        writeln!(f, "foreign files:      {}", self.foreign.len())?;
        for p in &self.foreign {
            writeln!(f, "  {} (not a blob name; left alone)", p.display())?;
        }
        writeln!(
            f,
            "dangling memo rows removed: {}",
            self.dangling_memo_removed
        )?;
        writeln!(
            f,
            "temp leftovers removed: {} ({} in use by running writers)",
            self.temp_removed.len(),
            self.temp_in_use
        )?;
        if self.index_problems.is_empty() {
            writeln!(f, "index:              ok")?;
        } else {
            writeln!(f, "index problems:     {}", self.index_problems.len())?;
            for p in &self.index_problems {
                writeln!(f, "  {p}")?;
            }
        }
        if self.is_clean() {
            write!(f, "result:             clean")
        } else {
            write!(
                f,
                "result:             problems found (repaired where possible; corrupt results are recomputed on the next build)"
            )
        }
    }
}

/// What `gc` did (`aps5 cache gc`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    /// The cache folder.
    pub dir: PathBuf,
    /// The size limit asked for.
    pub max_size: u64,
    /// Blobs before.
    pub blobs_before: u64,
    /// Bytes before.
    pub bytes_before: u64,
    /// Blobs evicted (least recently used first).
    pub evicted_blobs: u64,
    /// Bytes evicted.
    pub evicted_bytes: u64,
    /// Memo rows removed with the evicted blobs.
    pub memo_removed: u64,
    /// Blobs after.
    pub blobs_after: u64,
    /// Bytes after.
    pub bytes_after: u64,
    /// Blob files the index did not know, added to it (and then subject to eviction).
    pub orphans_adopted: u64,
    /// Index rows whose file was gone, removed.
    pub missing_removed: u64,
    /// Temp files left by killed writers, removed.
    pub temp_removed: u64,
}

impl fmt::Display for GcReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "cache directory:    {}", self.dir.display())?;
        writeln!(f, "size limit:         {}", Bytes(self.max_size))?;
        writeln!(
            f,
            "before:             {} blobs ({})",
            self.blobs_before,
            Bytes(self.bytes_before)
        )?;
        writeln!(
            f,
            "evicted:            {} blobs ({}), {} memo rows",
            self.evicted_blobs,
            Bytes(self.evicted_bytes),
            self.memo_removed
        )?;
        writeln!(
            f,
            "after:              {} blobs ({})",
            self.blobs_after,
            Bytes(self.bytes_after)
        )?;
        write!(
            f,
            "repairs:            {} orphans adopted, {} missing rows removed, {} temp leftovers removed",
            self.orphans_adopted, self.missing_removed, self.temp_removed
        )
    }
}
