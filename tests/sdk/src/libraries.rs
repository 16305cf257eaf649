//! The stub table: which PS4/PS5 library and module export each symbol the SDK headers declare.
//!
//! Homebrew toolchains resolve a program's undefined symbols against stub libraries; the SDK keeps
//! the same facts in one committed file, `tests/sdk/libraries.tsv`.

use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;

/// The committed table (see the file's header for its format and sources).
pub const LIBRARIES_TSV: &str = include_str!("../libraries.tsv");

/// Whether a symbol is code or data (it decides the ELF symbol type of the import).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SymbolKind {
    /// A function (`STT_FUNC`).
    Func,
    /// A data object (`STT_OBJECT`).
    Data,
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryEntry {
    /// The symbol name, e.g. `printf`.
    pub name: String,
    /// Function or data.
    pub kind: SymbolKind,
    /// The library that exports it, e.g. `libc` or `libScePosix`.
    pub library: String,
    /// The module (PRX file stem) that contains the library, e.g. `libkernel`.
    pub module: String,
}

/// Parses the committed table, keyed by symbol name.
pub fn table() -> Result<BTreeMap<String, LibraryEntry>> {
    parse(LIBRARIES_TSV).context("tests/sdk/libraries.tsv is malformed")
}

/// Parses text in the `libraries.tsv` format.
pub fn parse(text: &str) -> Result<BTreeMap<String, LibraryEntry>> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let [name, kind, library, module] = f[..] else {
            bail!(
                "line {}: expected 4 tab-separated fields, found {}",
                i + 1,
                f.len()
            );
        };
        let kind = match kind {
            "func" => SymbolKind::Func,
            "data" => SymbolKind::Data,
            other => bail!("line {}: kind must be func or data, not {other:?}", i + 1),
        };
        let entry = LibraryEntry {
            name: name.to_string(),
            kind,
            library: library.to_string(),
            module: module.to_string(),
        };
        if out.insert(name.to_string(), entry).is_some() {
            bail!("line {}: {name} is listed twice", i + 1);
        }
    }
    Ok(out)
}
