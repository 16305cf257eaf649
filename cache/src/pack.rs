//! Packs: one read-only file of content-addressed entries (`aps5-out/packs/shaders.pack`),
//! opened with mmap in O(1) and looked up by binary search; docs/PACKS.md describes the
//! format. Every entry's blake3 is checked when it is read; a corrupted entry is an error
//! ([`PackError::Corrupt`]), never data. The writer is deterministic (the same entries give
//! the same bytes) and atomic (temp file, fsync, rename, directory fsync).
//!
//! Layout (all integers little endian):
//! ```text
//! 0   magic "APS5PACK"          8 bytes
//! 8   format version (1)        u32
//! 12  entry count N             u32
//! 16  producer identity         32 bytes (e.g. blake3 of the translator's identity)
//! 48  index: N × 80 bytes, sorted by key, keys distinct:
//!       key 32 | data offset u64 | data length u64 | blake3(key ‖ data) 32
//! ..  data, each entry 16-byte aligned, zero padding
//! ```

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// The file's first bytes.
pub const MAGIC: [u8; 8] = *b"APS5PACK";
/// The format version this module reads and writes.
pub const VERSION: u32 = 1;
const HEADER: usize = 48;
const ENTRY: usize = 80;

/// Why a pack cannot be used, or one entry of it.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path}: not a pack: {reason}")]
    Format { path: PathBuf, reason: String },
    #[error(
        "{path}: made by producer {found}, not {expected} (results of two producers are never mixed)"
    )]
    Identity {
        path: PathBuf,
        found: String,
        expected: String,
    },
    #[error("{path}: entry {key} (index slot {slot}): {reason}")]
    Corrupt {
        path: PathBuf,
        key: String,
        slot: usize,
        reason: String,
    },
    #[error("two different entries for key {0}")]
    Duplicate(String),
}

fn entry_hash(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(key);
    h.update(data);
    *h.finalize().as_bytes()
}

fn hex32(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// An open pack (memory-mapped).
pub struct Pack {
    path: PathBuf,
    map: memmap2::Mmap,
    count: usize,
}

impl std::fmt::Debug for Pack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pack")
            .field("path", &self.path)
            .field("entries", &self.count)
            .finish()
    }
}

impl Pack {
    /// Opens `path` made by `identity`. O(1): checks the header and that the index fits;
    /// entries are checked when read ([`Pack::get`]) or all at once ([`Pack::verify`]).
    pub fn open(path: &Path, identity: &[u8; 32]) -> Result<Pack, PackError> {
        let io_err = |source| PackError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io_err)?;
        // SAFETY: packs are written once to a temp file and renamed into place, never modified
        // in place; a concurrent writer replaces the path, not these bytes.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io_err)?;
        let fmt = |reason: String| PackError::Format {
            path: path.to_path_buf(),
            reason,
        };
        if map.len() < HEADER || map[..8] != MAGIC {
            return Err(fmt(format!(
                "{} bytes, no APS5PACK magic at byte 0",
                map.len()
            )));
        }
        let version = u32::from_le_bytes(map[8..12].try_into().expect("4"));
        if version != VERSION {
            return Err(fmt(format!(
                "format version {version}, this build reads {VERSION}"
            )));
        }
        let count = u32::from_le_bytes(map[12..16].try_into().expect("4")) as usize;
        if map[16..48] != identity[..] {
            return Err(PackError::Identity {
                path: path.to_path_buf(),
                found: hex32(&map[16..48]),
                expected: hex32(identity),
            });
        }
        if count
            .checked_mul(ENTRY)
            .and_then(|x| x.checked_add(HEADER))
            .is_none_or(|end| end > map.len())
        {
            return Err(fmt(format!(
                "an index of {count} entries does not fit {} bytes",
                map.len()
            )));
        }
        Ok(Pack {
            path: path.to_path_buf(),
            map,
            count,
        })
    }

    /// The file it was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.count
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn key(&self, slot: usize) -> &[u8] {
        let o = HEADER + slot * ENTRY;
        &self.map[o..o + 32]
    }

    /// The key of index slot `slot` (slots are in key order).
    pub fn key_at(&self, slot: usize) -> Option<[u8; 32]> {
        (slot < self.count).then(|| self.key(slot).try_into().expect("32"))
    }

    /// The entry for `key`: `Ok(None)` when absent, an error when its bytes do not hash to
    /// the index's blake3 (or lie outside the file).
    pub fn get(&self, key: &[u8; 32]) -> Result<Option<&[u8]>, PackError> {
        let (mut lo, mut hi) = (0usize, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.key(mid).cmp(&key[..]) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return self.entry(mid).map(Some),
            }
        }
        Ok(None)
    }

    /// The data of slot `slot`, checked.
    pub fn entry(&self, slot: usize) -> Result<&[u8], PackError> {
        let corrupt = |reason: String| PackError::Corrupt {
            path: self.path.clone(),
            key: if slot < self.count {
                hex32(self.key(slot))
            } else {
                String::from("(none)")
            },
            slot,
            reason,
        };
        if slot >= self.count {
            return Err(corrupt(format!("no slot {slot} of {}", self.count)));
        }
        let o = HEADER + slot * ENTRY;
        let off = u64::from_le_bytes(self.map[o + 32..o + 40].try_into().expect("8"));
        let len = u64::from_le_bytes(self.map[o + 40..o + 48].try_into().expect("8"));
        let data_start = (HEADER + self.count * ENTRY) as u64;
        let Some(data) = off
            .checked_add(len)
            .filter(|&end| off >= data_start && end <= self.map.len() as u64)
            .map(|end| &self.map[off as usize..end as usize])
        else {
            return Err(corrupt(format!(
                "data at {off:#x}+{len:#x} is outside the data area {data_start:#x}..{:#x}",
                self.map.len()
            )));
        };
        let want = &self.map[o + 48..o + 80];
        if entry_hash(self.key(slot), data)[..] != want[..] {
            return Err(corrupt(format!(
                "{len} bytes at {off:#x} do not hash to the recorded blake3"
            )));
        }
        Ok(data)
    }

    /// Checks the whole pack: keys strictly increasing, every entry's hash, the canonical
    /// layout (entries in key order, 16-byte aligned, zero padding, nothing after the last).
    /// Returns the first problem found.
    pub fn verify(&self) -> Result<(), PackError> {
        let mut expect = (HEADER + self.count * ENTRY) as u64;
        let mut prev_end = expect;
        for slot in 0..self.count {
            let data = self.entry(slot)?;
            let off = data.as_ptr() as u64 - self.map.as_ptr() as u64;
            expect = expect.next_multiple_of(16);
            let pad = &self.map[prev_end as usize..(off as usize).max(prev_end as usize)];
            if off != expect || pad.iter().any(|&b| b != 0) {
                return Err(PackError::Corrupt {
                    path: self.path.clone(),
                    key: hex32(self.key(slot)),
                    slot,
                    reason: format!(
                        "data at {off:#x}, the writer puts it at {expect:#x} after zero padding"
                    ),
                });
            }
            expect += data.len() as u64;
            prev_end = expect;
            if slot > 0 && self.key(slot - 1) >= self.key(slot) {
                return Err(PackError::Corrupt {
                    path: self.path.clone(),
                    key: hex32(self.key(slot)),
                    slot,
                    reason: "the index is not sorted by key".into(),
                });
            }
        }
        if self.map.len() as u64 != prev_end {
            return Err(PackError::Format {
                path: self.path.clone(),
                reason: format!(
                    "{} bytes after the last entry",
                    self.map.len() as u64 - prev_end.min(self.map.len() as u64)
                ),
            });
        }
        Ok(())
    }
}

/// Collects entries and writes a pack.
#[derive(Debug, Default, Clone)]
pub struct PackWriter {
    identity: [u8; 32],
    entries: std::collections::BTreeMap<[u8; 32], Vec<u8>>,
}

impl PackWriter {
    /// A writer for packs made by `identity`.
    pub fn new(identity: [u8; 32]) -> PackWriter {
        PackWriter {
            identity,
            entries: Default::default(),
        }
    }

    /// Adds an entry; adding the same key again with the same bytes is a no-op, with other
    /// bytes an error.
    pub fn add(&mut self, key: [u8; 32], data: Vec<u8>) -> Result<(), PackError> {
        if self.entries.len() == u32::MAX as usize && !self.entries.contains_key(&key) {
            return Err(PackError::Duplicate(format!(
                "{} (too many entries)",
                hex32(&key)
            )));
        }
        match self.entries.get(&key) {
            Some(d) if *d == data => Ok(()),
            Some(_) => Err(PackError::Duplicate(hex32(&key))),
            None => {
                self.entries.insert(key, data);
                Ok(())
            }
        }
    }

    /// Number of entries so far.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No entries so far.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The pack's bytes: a function of the identity and the entries only.
    pub fn to_bytes(&self) -> Vec<u8> {
        let n = self.entries.len();
        let mut b = Vec::with_capacity(HEADER + n * ENTRY);
        b.extend_from_slice(&MAGIC);
        b.extend_from_slice(&VERSION.to_le_bytes());
        b.extend_from_slice(&(n as u32).to_le_bytes());
        b.extend_from_slice(&self.identity);
        let mut off = (HEADER + n * ENTRY).next_multiple_of(16) as u64;
        for (k, d) in &self.entries {
            b.extend_from_slice(k);
            b.extend_from_slice(&off.to_le_bytes());
            b.extend_from_slice(&(d.len() as u64).to_le_bytes());
            b.extend_from_slice(&entry_hash(k, d));
            off = (off + d.len() as u64).next_multiple_of(16);
        }
        for d in self.entries.values() {
            b.resize(b.len().next_multiple_of(16), 0);
            b.extend_from_slice(d);
        }
        b
    }

    /// Writes the pack to `path` atomically (a reader sees the old file or the new one).
    pub fn write(&self, path: &Path) -> Result<(), PackError> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)
            .and_then(|()| crate::fsutil::write_durable(dir, path, &self.to_bytes()))
            .map_err(|source| PackError::Io {
                path: path.to_path_buf(),
                source,
            })
    }
}
