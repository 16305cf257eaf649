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

/// Something in the blob namespace that is not a regular file (or, for a shard, a real
/// folder): a symbolic link, a FIFO, a folder, a device. Removed by `verify`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadEntry {
    /// Where it was.
    pub path: PathBuf,
    /// What it was, in words ("a FIFO (named pipe)", "a symbolic link", ...).
    pub what: String,
    /// Whether it could be removed.
    pub removed: bool,
}

/// A remembered file hash (`files` row) that was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRowProblem {
    /// The file the row is about.
    pub path: String,
    /// What was wrong and what was done.
    pub problem: String,
}

/// The verdict of `verify`, and the exit status `aps5 cache verify` gives for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VerifyOutcome {
    /// Nothing was wrong (temp leftovers and orphans of killed processes are normal): exit 0.
    Clean,
    /// Problems were found and all of them repaired: exit 3 (a second verify gives 0).
    Repaired,
    /// Something is wrong that verify left as it is (files it may not remove, entries it
    /// could not remove): exit 2.
    ProblemsLeft,
}

impl VerifyOutcome {
    /// The exit status of `aps5 cache verify`.
    pub fn exit_code(self) -> u8 {
        match self {
            VerifyOutcome::Clean => 0,
            VerifyOutcome::Repaired => 3,
            VerifyOutcome::ProblemsLeft => 2,
        }
    }
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
    /// Where a damaged index was moved when it was rebuilt from the blobs (see
    /// [`crate::Cache::verify_dir`]); set, `index_problems` were repaired.
    pub index_rebuilt: Option<PathBuf>,
    /// Entries named like blobs that were not regular files: removed.
    pub bad_entries: Vec<BadEntry>,
    /// Corrupt blob files that could not be removed (left; a problem).
    pub unremoved: Vec<PathBuf>,
    /// Remembered file hashes (`files` rows) checked.
    pub file_rows_checked: u64,
    /// Remembered file hashes that were damaged or wrong: dropped or corrected.
    pub file_rows: Vec<FileRowProblem>,
    /// Remembered file hashes of files that are gone or changed since: dropped (normal).
    pub file_rows_stale: u64,
}

impl VerifyReport {
    /// True when nothing was wrong with the stored data: no corrupt or missing blob, no
    /// foreign file, a sound index. Leftover temp files and adopted orphans are the normal
    /// traces of a killed process and do not count.
    pub fn is_clean(&self) -> bool {
        self.outcome() == VerifyOutcome::Clean
    }

    /// Clean, all repaired, or problems left (see [`VerifyOutcome`]).
    pub fn outcome(&self) -> VerifyOutcome {
        let left = !self.foreign.is_empty()
            || !self.unremoved.is_empty()
            || self.bad_entries.iter().any(|b| !b.removed)
            || (!self.index_problems.is_empty() && self.index_rebuilt.is_none());
        let repaired = !self.corrupt.is_empty()
            || !self.missing.is_empty()
            || !self.bad_entries.is_empty()
            || !self.file_rows.is_empty()
            || self.index_rebuilt.is_some();
        if left {
            VerifyOutcome::ProblemsLeft
        } else if repaired {
            VerifyOutcome::Repaired
        } else {
            VerifyOutcome::Clean
        }
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
        writeln!(f, "not regular files:  {}", self.bad_entries.len())?;
        for b in &self.bad_entries {
            let done = if b.removed {
                "removed"
            } else {
                "COULD NOT BE REMOVED"
            };
            writeln!(f, "  {} ({}; {done})", b.path.display(), b.what)?;
        }
        for p in &self.unremoved {
            writeln!(f, "  {} (corrupt; COULD NOT BE REMOVED)", p.display())?;
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
        writeln!(
            f,
            "file hashes:        {} checked, {} wrong (dropped or corrected), {} stale (dropped)",
            self.file_rows_checked,
            self.file_rows.len(),
            self.file_rows_stale
        )?;
        for r in &self.file_rows {
            writeln!(f, "  {}: {}", r.path, r.problem)?;
        }
        if self.index_problems.is_empty() {
            writeln!(f, "index:              ok")?;
        } else {
            writeln!(f, "index problems:     {}", self.index_problems.len())?;
            for p in self.index_problems.iter().take(20) {
                writeln!(f, "  {p}")?;
            }
            match &self.index_rebuilt {
                Some(old) => writeln!(
                    f,
                    "  the index was rebuilt from the blobs; the damaged one is kept as {}",
                    old.display()
                )?,
                None => writeln!(f, "  the index was NOT rebuilt")?,
            }
        }
        match self.outcome() {
            VerifyOutcome::Clean => write!(f, "result:             clean"),
            VerifyOutcome::Repaired => write!(
                f,
                "result:             problems found, all repaired (removed results are recomputed by the next build)"
            ),
            VerifyOutcome::ProblemsLeft => write!(
                f,
                "result:             problems left unrepaired (see above: remove what is listed, or delete the cache directory; it holds only derived data)"
            ),
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
