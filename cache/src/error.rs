//! Errors of the content cache. Each message names the file or folder and says what to do.

use std::io;
use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

/// Everything that can go wrong in the content cache.
///
/// A damaged blob is never an error (it is a [`crate::Lookup::Corrupt`] and the caller
/// recomputes); errors are for a cache that cannot be used at all.
///
/// Each message is complete: it includes the OS's or SQLite's own text. That text is
/// therefore never also returned as `source()` (the fields are named `error`, not `source`),
/// so a caller that prints the error chain (`{:#}` in anyhow) prints it once.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The cache folder (or one of its subfolders) could not be created.
    #[error(
        "cannot create cache directory {}: {error}; set APS5_CACHE_DIR to a writable directory",
        dir.display()
    )]
    CreateDir {
        /// The folder.
        dir: PathBuf,
        /// Why.
        error: io::Error,
    },
    /// The cache folder exists but files cannot be created in it.
    #[error(
        "cache directory {} is not writable ({error}): fix its permissions or set APS5_CACHE_DIR to a writable directory",
        dir.display()
    )]
    NotWritable {
        /// The folder.
        dir: PathBuf,
        /// Why.
        error: io::Error,
    },
    /// The SQLite index is damaged or is not a SQLite database.
    #[error(
        "cache index {} is corrupt ({error}): the cache holds only derived data, so run `aps5 cache verify` (it rebuilds the index from the blobs) or delete the cache directory {}",
        path.display(),
        path.parent().unwrap_or(Path::new(".")).display()
    )]
    IndexCorrupt {
        /// The index file.
        path: PathBuf,
        /// SQLite's report.
        error: rusqlite::Error,
    },
    /// The index could not be opened or written for lack of permission or space.
    #[error(
        "cannot write cache index {} ({error}): check permissions and free space, or set APS5_CACHE_DIR to a writable directory",
        path.display()
    )]
    IndexNotWritable {
        /// The index file.
        path: PathBuf,
        /// SQLite's report.
        error: rusqlite::Error,
    },
    /// The index (or its `-wal`/`-shm` file) is a link, FIFO, folder or device.
    #[error(
        "cache index {} is {what}, not a regular file: run `aps5 cache verify` (it moves it aside and rebuilds the index from the blobs) or delete the cache directory {}",
        path.display(),
        path.parent().unwrap_or(Path::new(".")).display()
    )]
    IndexNotAFile {
        /// The file.
        path: PathBuf,
        /// What it is.
        what: &'static str,
    },
    /// Another process held the index locked for longer than the busy timeout.
    #[error(
        "cache index {} stayed locked by another process for over {} s ({error}): wait for the other aps5 process to finish, or use another APS5_CACHE_DIR",
        path.display(),
        crate::store::BUSY_TIMEOUT.as_secs()
    )]
    IndexBusy {
        /// The index file.
        path: PathBuf,
        /// SQLite's report.
        error: rusqlite::Error,
    },
    /// The index was written by a newer aps5 with a schema this one does not know.
    #[error(
        "cache index {} has schema version {found}, newer than the {supported} this aps5 understands: upgrade aps5, or set APS5_CACHE_DIR to another directory",
        path.display()
    )]
    SchemaTooNew {
        /// The index file.
        path: PathBuf,
        /// Its `user_version`.
        found: i64,
        /// The newest this build reads.
        supported: i64,
    },
    /// Any other SQLite failure.
    #[error("cache index {}: {error}", path.display())]
    Index {
        /// The index file.
        path: PathBuf,
        /// SQLite's report.
        error: rusqlite::Error,
    },
    /// A file operation on a blob, temp file or folder failed.
    #[error("cache: cannot {action} {}: {error}{}", path.display(), io_hint(error))]
    Io {
        /// What was being done ("write blob", "read blob", "list", ...).
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// Why.
        error: io::Error,
    },
}

/// What to do about an I/O error, for the few kinds where the answer is clear.
fn io_hint(e: &io::Error) -> &'static str {
    match e.kind() {
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => {
            "; free disk space, or shrink the cache with `aps5 cache gc --max-size 10G`"
        }
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
            "; fix the cache directory's permissions or set APS5_CACHE_DIR to a writable directory"
        }
        _ => "",
    }
}

impl CacheError {
    /// Classifies a SQLite error on the index at `path`.
    pub(crate) fn sqlite(path: &Path, source: rusqlite::Error) -> Self {
        let path = path.to_path_buf();
        match source.sqlite_error_code() {
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
                CacheError::IndexCorrupt {
                    path,
                    error: source,
                }
            }
            Some(
                ErrorCode::ReadOnly
                | ErrorCode::CannotOpen
                | ErrorCode::PermissionDenied
                | ErrorCode::DiskFull
                | ErrorCode::AuthorizationForStatementDenied,
            ) => CacheError::IndexNotWritable {
                path,
                error: source,
            },
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => CacheError::IndexBusy {
                path,
                error: source,
            },
            _ => CacheError::Index {
                path,
                error: source,
            },
        }
    }

    pub(crate) fn io(action: &'static str, path: &Path, source: io::Error) -> Self {
        CacheError::Io {
            action,
            path: path.to_path_buf(),
            error: source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_name_the_file_and_what_to_do() {
        let p = Path::new("/c/blobs/ab/cd");
        let full = CacheError::io("write blob", p, io::Error::from(io::ErrorKind::StorageFull));
        let msg = full.to_string();
        assert!(
            msg.starts_with("cache: cannot write blob /c/blobs/ab/cd: "),
            "{msg}"
        );
        assert!(msg.contains("aps5 cache gc"), "{msg}");
        let denied = CacheError::io(
            "open blob",
            p,
            io::Error::from(io::ErrorKind::PermissionDenied),
        );
        assert!(denied.to_string().contains("APS5_CACHE_DIR"), "{denied}");
        let other = CacheError::io("list", p, io::Error::other("boom")).to_string();
        assert_eq!(other, "cache: cannot list /c/blobs/ab/cd: boom");
    }
}
