//! Build errors. Every message names the file (and, where it applies, the offset) and says what to do.

use std::path::{Path, PathBuf};

/// Why a build (or `init`, `status`, ...) could not be done. The CLI maps every variant to exit status 2.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{dir} is not an aps5 project (no aps5.toml): run `aps5 init` in the game dump first")]
    NoProject { dir: PathBuf },

    #[error("{path}: {message}")]
    BadConfig { path: PathBuf, message: String },

    #[error(
        "{dir} is not a PS4/PS5 game dump: {reason}\n\
         A dump is the folder holding eboot.bin (the main executable), usually with sce_module/ and sce_sys/"
    )]
    NotADump { dir: PathBuf, reason: String },

    // The OS text is in the message and therefore not exposed as `source()` (a field named
    // `error`, not `source`): the CLI prints the error chain, and it must read once. The same
    // rule holds for every variant here and in aps5_cache::CacheError.
    #[error("cannot {action} {path}: {error}")]
    Io {
        action: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },

    #[error(
        "{path} is a symbolic link to {target}, outside the dump; aps5 never follows links out of a dump: \
         copy the file into the dump or remove the link"
    )]
    LinkOutsideDump { path: PathBuf, target: PathBuf },

    #[error("{path}: the file name is not valid UTF-8; rename it (PS4/PS5 file names are UTF-8)")]
    NonUtf8Name { path: PathBuf },

    #[error(
        "{path} changed while the build was reading it (expected {expected} bytes with blake3 {hash}); \
         nothing was written: run the build again once the dump is stable"
    )]
    ChangedDuringBuild {
        path: PathBuf,
        expected: u64,
        hash: String,
    },

    #[error(
        "{path} vanished while the build was running; nothing was written: run the build again"
    )]
    Vanished { path: PathBuf },

    #[error("{path}: {error}")]
    Module {
        path: PathBuf,
        error: aps5_elf::Error,
    },

    #[error(
        "{path} is {what}, so aps5 did not make it; aps5 never writes through it: remove or rename it, \
         or set project.out_dir in aps5.toml to another folder"
    )]
    ForeignOutput { path: PathBuf, what: String },

    #[error(transparent)]
    Cache(#[from] aps5_cache::CacheError),

    /// `path` may be empty (a cache failure inside a query names its own file).
    #[error("{}{message}", path_prefix(path))]
    Corrupt { path: PathBuf, message: String },

    /// A dump file's bytes did not hash to what the scan said (it changed, or a remembered
    /// hash was wrong): `Project::build` re-hashes the dump and builds once more.
    #[error("{path}: {message}")]
    InputChanged { path: PathBuf, message: String },
}

/// `"<path>: "`, or nothing for an empty path (no message starts with ": ").
fn path_prefix(path: &Path) -> String {
    if path.as_os_str().is_empty() {
        String::new()
    } else {
        format!("{}: ", path.display())
    }
}

impl From<&crate::db::QueryError> for BuildError {
    fn from(e: &crate::db::QueryError) -> BuildError {
        if e.input_changed {
            BuildError::InputChanged {
                path: e.path.clone(),
                message: e.message.clone(),
            }
        } else {
            BuildError::Corrupt {
                path: e.path.clone(),
                message: e.message.clone(),
            }
        }
    }
}

impl BuildError {
    /// An I/O failure on `path` while trying to `action` it.
    pub fn io(action: &'static str, path: &Path, source: std::io::Error) -> BuildError {
        if source.kind() == std::io::ErrorKind::NotFound && action.starts_with("read") {
            return BuildError::Vanished {
                path: path.to_path_buf(),
            };
        }
        BuildError::Io {
            action,
            path: path.to_path_buf(),
            error: source,
        }
    }

    /// Whether the build failed because a dump file's bytes were not what the scan hashed:
    /// either the file changed, or the hash remembered in the cache index was wrong. Either
    /// way, hashing the dump afresh and building again is the repair.
    pub fn is_input_changed(&self) -> bool {
        self.changed_input().is_some()
    }

    /// The dump file of an [`BuildError::is_input_changed`] error.
    pub fn changed_input(&self) -> Option<&Path> {
        match self {
            BuildError::InputChanged { path, .. } | BuildError::ChangedDuringBuild { path, .. } => {
                Some(path)
            }
            _ => None,
        }
    }
}
