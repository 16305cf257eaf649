//! The embedded names database (see [`crate::generate`] for its format and sources).

use std::sync::OnceLock;

/// The committed, zstd-compressed database.
pub(crate) static DATA: &[u8] = include_bytes!("../data/names.tsv.zst");

/// A readable name known for a NID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KnownName {
    /// The symbol name (e.g. `printf`, or a mangled C++ name).
    pub name: &'static str,
    /// The library that exports it, when the corpus says (the preferred one when several do).
    pub library: Option<&'static str>,
}

struct Entry {
    nid: &'static str,
    name: &'static str,
    libs_start: u32,
    libs_len: u16,
}

struct Db {
    libraries: Vec<&'static str>,
    lib_refs: Vec<u16>,
    entries: Vec<Entry>,
}

impl Db {
    fn libs(&self, e: &Entry) -> impl Iterator<Item = &'static str> + '_ {
        let start = e.libs_start as usize;
        self.lib_refs[start..start + usize::from(e.libs_len)]
            .iter()
            .map(|&i| self.libraries[usize::from(i)])
    }

    fn range(&self, nid: &str) -> &[Entry] {
        let lo = self.entries.partition_point(|e| e.nid < nid);
        let hi = lo + self.entries[lo..].partition_point(|e| e.nid == nid);
        &self.entries[lo..hi]
    }
}

fn db() -> &'static Db {
    static DB: OnceLock<Db> = OnceLock::new();
    DB.get_or_init(|| {
        // The data is part of the crate and checked by tests, so failing here is a build bug.
        let raw = zstd::stream::decode_all(DATA).expect("embedded NID database is not valid zstd");
        let text = String::from_utf8(raw).expect("embedded NID database is not UTF-8");
        parse(Box::leak(text.into_boxed_str())).expect("embedded NID database is malformed")
    })
}

fn parse(text: &'static str) -> Option<Db> {
    let mut lines = text.lines();
    if lines.next()? != crate::generate::HEADER {
        return None;
    }
    let count: usize = lines.next()?.strip_prefix("libraries ")?.parse().ok()?;
    let mut libraries = Vec::with_capacity(count);
    for _ in 0..count {
        libraries.push(lines.next()?);
    }
    let mut lib_refs = Vec::new();
    let mut entries = Vec::with_capacity(64 * 1024);
    for line in lines {
        let mut f = line.split('\t');
        let nid = f.next()?;
        let name = f.next()?;
        let libs = f.next()?;
        let libs_start = u32::try_from(lib_refs.len()).ok()?;
        if !libs.is_empty() {
            for i in libs.split(',') {
                let i: u16 = i.parse().ok()?;
                if usize::from(i) >= libraries.len() {
                    return None;
                }
                lib_refs.push(i);
            }
        }
        let libs_len = u16::try_from(lib_refs.len() - libs_start as usize).ok()?;
        entries.push(Entry {
            nid,
            name,
            libs_start,
            libs_len,
        });
    }
    if !entries.is_sorted_by(|a, b| a.nid <= b.nid) {
        return None;
    }
    Some(Db {
        libraries,
        lib_refs,
        entries,
    })
}

/// Every known name for `nid` (usually one; empty if unknown or not a NID).
pub fn lookup(nid: &str) -> Vec<KnownName> {
    let db = db();
    db.range(nid)
        .iter()
        .map(|e| KnownName {
            name: e.name,
            library: db.libs(e).next(),
        })
        .collect()
}

/// Every library known to export `nid`, preferred first (see [`crate::generate`]).
pub fn libraries(nid: &str) -> Vec<&'static str> {
    let db = db();
    let mut out: Vec<&'static str> = Vec::new();
    for e in db.range(nid) {
        for lib in db.libs(e) {
            if !out.contains(&lib) {
                out.push(lib);
            }
        }
    }
    out
}

/// The (preferred) library that exports the symbol `name`, if the corpus says.
pub fn library_of(name: &str) -> Option<&'static str> {
    lookup(&crate::nid(name))
        .into_iter()
        .find(|k| k.name == name)
        .and_then(|k| k.library)
}

/// Size of the embedded database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatabaseStats {
    /// Names (rows).
    pub names: usize,
    /// Distinct NIDs.
    pub nids: usize,
    /// Distinct library names.
    pub libraries: usize,
    /// Bytes of the compressed data embedded in the binary.
    pub compressed_bytes: usize,
}

/// Counts of the embedded database (loads it on first use).
pub fn database_stats() -> DatabaseStats {
    let db = db();
    let mut nids = 0;
    let mut prev = "";
    for e in &db.entries {
        if e.nid != prev {
            nids += 1;
            prev = e.nid;
        }
    }
    DatabaseStats {
        names: db.entries.len(),
        nids,
        libraries: db.libraries.len(),
        compressed_bytes: DATA.len(),
    }
}
