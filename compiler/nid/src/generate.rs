//! Builds the embedded names database from the corpus in `shared/corpus/nid-names/`.
//!
//! Run `cargo run -p aps5-nid --example gen_names` to rewrite `data/names.tsv.zst`; a test
//! rebuilds the text and compares it with the committed file, so the two cannot drift.
//!
//! The database is zstd-compressed UTF-8 text:
//!
//! ```text
//! aps5-nid names v1
//! libraries <count>
//! <library name>            (count lines, referred to by 0-based index)
//! <NID>\t<name>\t<index,index,...>   (sorted by NID bytes, then name; indices may be empty)
//! ```
//!
//! A name's library list is ordered by preference: export-side rows of ps4libdoc first
//! (the library with the smallest export table first: that is the public, more specific
//! library, e.g. `libc` before `libSceLibcInternal` and `libScePosix` before `libkernel`;
//! the importers in ps4libdoc are system modules, which prefer the internal libraries,
//! so counting them would pick the wrong one for games), then PS5 stub libraries
//! (`ps5-library-exports.tsv`, whose "library" column is really the module name), and
//! import-side ps4libdoc rows only for names that no ps4libdoc export table names.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// First line of the database text.
pub const HEADER: &str = "aps5-nid names v1";

/// zstd level used for the committed file.
pub const LEVEL: i32 = 19;

/// Why the database could not be built.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// A corpus file could not be read.
    #[error("cannot read {path}: {source} (is shared/corpus/nid-names/ present?)")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A corpus line did not have the documented shape.
    #[error("{path}:{line}: {what}")]
    Format {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        what: String,
    },
}

/// Counts gathered while building, for reports and tests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BuildStats {
    /// Distinct names written.
    pub names: usize,
    /// Distinct NIDs written.
    pub nids: usize,
    /// Distinct library names.
    pub libraries: usize,
    /// `ps5-names.txt` lines skipped because they start with `/` (string-table artefacts).
    pub skipped_slash_lines: usize,
    /// `ps5-library-exports.tsv` rows skipped because they carry a NID but no name.
    pub skipped_nid_only_rows: usize,
}

fn read(dir: &Path, file: &str) -> Result<(PathBuf, String), GenerateError> {
    let path = dir.join(file);
    match std::fs::read_to_string(&path) {
        Ok(s) => Ok((path, s)),
        Err(source) => Err(GenerateError::Io { path, source }),
    }
}

fn fields<'a>(
    path: &Path,
    line_no: usize,
    line: &'a str,
    sep: char,
    n: usize,
) -> Result<Vec<&'a str>, GenerateError> {
    let f: Vec<&str> = if sep == ' ' {
        line.splitn(n, sep).collect()
    } else {
        line.split(sep).collect()
    };
    if f.len() != n || f.iter().any(|s| s.is_empty()) {
        return Err(GenerateError::Format {
            path: path.to_owned(),
            line: line_no + 1,
            what: format!("expected {n} non-empty fields"),
        });
    }
    Ok(f)
}

/// A usable symbol name: non-empty, and no characters that would break the line format.
fn usable(name: &str) -> bool {
    !name.is_empty() && !name.contains(['\t', '\n', '\r'])
}

/// Builds the database text from the files in `dir` (`shared/corpus/nid-names`).
pub fn build_text(dir: &Path) -> Result<(String, BuildStats), GenerateError> {
    let mut stats = BuildStats::default();
    let mut names: BTreeSet<String> = BTreeSet::new();

    // (module_file, library) -> is_export; library -> largest export table size.
    let (p, libs_tsv) = read(dir, "ps4libdoc-libraries.tsv")?;
    let mut is_export: HashMap<(&str, &str), bool> = HashMap::new();
    let mut export_size: HashMap<&str, u64> = HashMap::new();
    for (i, line) in libs_tsv.lines().enumerate() {
        let f = fields(&p, i, line, '\t', 4)?;
        let exp = match f[2] {
            "true" => true,
            "false" => false,
            other => {
                return Err(GenerateError::Format {
                    path: p.clone(),
                    line: i + 1,
                    what: format!("is_export is {other:?}"),
                });
            }
        };
        if exp {
            let size: u64 = f[3].parse().map_err(|_| GenerateError::Format {
                path: p.clone(),
                line: i + 1,
                what: format!("symbol_count is {:?}", f[3]),
            })?;
            let e = export_size.entry(f[1]).or_default();
            *e = (*e).max(size);
        }
        // A module can both import and export a library of the same name: export wins.
        let e = is_export.entry((f[0], f[1])).or_insert(false);
        *e |= exp;
    }

    // name -> export libraries; (name, library) -> number of importing modules.
    let (p, libdoc) = read(dir, "ps4libdoc-9.00.tsv")?;
    let mut exports: HashMap<&str, BTreeSet<&str>> = HashMap::new();
    let mut imports: HashMap<&str, BTreeMap<&str, usize>> = HashMap::new();
    for (i, line) in libdoc.lines().enumerate() {
        let f = fields(&p, i, line, '\t', 4)?;
        let (name, lib, module) = (f[1], f[2], f[3]);
        if !usable(name) {
            continue;
        }
        names.insert(name.to_owned());
        if is_export.get(&(module, lib)).copied().unwrap_or(false) {
            exports.entry(name).or_default().insert(lib);
        } else {
            *imports.entry(name).or_default().entry(lib).or_default() += 1;
        }
    }

    let (p, ps5_exports) = read(dir, "ps5-library-exports.tsv")?;
    let mut ps5: HashMap<String, BTreeSet<&str>> = HashMap::new();
    for (i, line) in ps5_exports.lines().enumerate() {
        let f = fields(&p, i, line, '\t', 3)?;
        let (lib, name, nid_text) = (f[0], f[1], f[2]);
        // Rows whose "name" is the NID itself name nothing.
        if name == nid_text && crate::nid(name) != nid_text {
            stats.skipped_nid_only_rows += 1;
            continue;
        }
        if !usable(name) {
            continue;
        }
        names.insert(name.to_owned());
        ps5.entry(name.to_owned()).or_default().insert(lib);
    }

    let (p, aerolib) = read(dir, "aerolib.csv")?;
    for (i, line) in aerolib.lines().enumerate() {
        let f = fields(&p, i, line, ' ', 2)?;
        if usable(f[1]) {
            names.insert(f[1].to_owned());
        }
    }

    let (_, ps4_names) = read(dir, "ps4-names.txt")?;
    for line in ps4_names.lines() {
        let name = line.trim_end_matches('\r');
        if usable(name) {
            names.insert(name.to_owned());
        }
    }

    let (_, ps5_names) = read(dir, "ps5-names.txt")?;
    for line in ps5_names.lines() {
        let name = line.trim_end_matches('\r');
        if name.starts_with('/') {
            stats.skipped_slash_lines += 1;
            continue;
        }
        if usable(name) {
            names.insert(name.to_owned());
        }
    }

    // Preference-ordered library list for each name.
    let mut lib_lists: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for name in &names {
        let mut list: Vec<&str> = Vec::new();
        if let Some(exp) = exports.get(name.as_str()) {
            let mut v: Vec<&str> = exp.iter().copied().collect();
            // Smallest export table first; ties by name (BTreeSet order, kept by the stable sort).
            v.sort_by_key(|lib| export_size.get(lib).copied().unwrap_or(u64::MAX));
            list.extend(v);
        }
        if let Some(libs) = ps5.get(name) {
            for lib in libs {
                if !list.contains(lib) {
                    list.push(lib);
                }
            }
        }
        if list.is_empty()
            && let Some(imp) = imports.get(name.as_str())
        {
            let mut v: Vec<(&str, usize)> = imp.iter().map(|(l, c)| (*l, *c)).collect();
            v.sort_by_key(|(_, c)| std::cmp::Reverse(*c));
            list.extend(v.into_iter().map(|(l, _)| l));
        }
        lib_lists.insert(name.as_str(), list);
    }

    let all_libs: BTreeSet<&str> = lib_lists.values().flatten().copied().collect();
    let lib_index: HashMap<&str, usize> =
        all_libs.iter().enumerate().map(|(i, l)| (*l, i)).collect();

    let mut rows: Vec<(String, &str)> = names.iter().map(|n| (crate::nid(n), n.as_str())).collect();
    rows.sort_unstable();

    let mut out = String::with_capacity(4 << 20);
    out.push_str(HEADER);
    out.push('\n');
    let _ = writeln!(out, "libraries {}", all_libs.len());
    for lib in &all_libs {
        out.push_str(lib);
        out.push('\n');
    }
    let mut nids = BTreeSet::new();
    for (nid, name) in &rows {
        nids.insert(nid.as_str());
        out.push_str(nid);
        out.push('\t');
        out.push_str(name);
        out.push('\t');
        let list = &lib_lists[name];
        for (i, lib) in list.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{}", lib_index[lib]);
        }
        out.push('\n');
    }
    stats.names = rows.len();
    stats.nids = nids.len();
    stats.libraries = all_libs.len();
    Ok((out, stats))
}

/// Compresses database text the way the committed file is compressed.
pub fn compress(text: &str) -> std::io::Result<Vec<u8>> {
    zstd::bulk::compress(text.as_bytes(), LEVEL)
}

/// The corpus folder, found by walking up from `start` to a directory that has
/// `shared/corpus/nid-names` (for the generator and tests; never used at run time).
pub fn find_corpus(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|a| a.join("shared/corpus/nid-names"))
        .find(|p| p.is_dir())
}
