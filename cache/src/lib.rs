//! aps5-cache: the persistent, content-addressed store shared by every aps5 project.
//!
//! Blobs are files named by the blake3 hash of their bytes (`blobs/ab/cdef...`), written
//! crash-safely (temp file, fsync, rename, directory fsync) and verified on every read. A
//! SQLite index (WAL mode, so several processes can use one cache at once) records each
//! blob's size and last use, the memoized query results (`MemoKey` -> blob) and the
//! remembered file hashes that let an unchanged dump skip re-hashing.
//!
//! Anything that goes wrong with stored data degrades to a cache miss, never to wrong
//! bytes: a blob that fails verification is reported, removed and recomputed by the
//! caller. The on-disk layout and the crash-safety argument are in docs/CACHE.md.

mod error;
mod fsutil;
mod hash;
pub mod pack;
pub mod pipelines;
pub mod records;
mod report;
mod store;

pub use error::CacheError;
pub use fsutil::describe_kind;
pub use hash::{ContentHash, FileStamp, MemoKey, ParseHashError, hash_file};
pub use report::{
    BadEntry, CorruptBlob, FileRowProblem, GcReport, Stats, VerifyOutcome, VerifyReport,
};
pub use store::{Cache, Lookup};
