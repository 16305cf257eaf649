//! The homebrew corpus in `shared/corpus/homebrew` (beside the repository), for the tests that
//! read it. Included with `#[path]` by each test that needs it.

use std::path::{Path, PathBuf};

/// The corpus folder, found above the crate.
pub fn homebrew_dir() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .map(|a| a.join("shared/corpus/homebrew"))
        .find(|p| p.is_dir())
        .expect("shared/corpus/homebrew not found above the crate; these tests need the corpus")
}

/// Every eboot.bin / *.prx / *.sprx under the corpus, recursively, in sorted order.
pub fn corpus_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else {
                let name = p.file_name().unwrap().to_string_lossy().to_string();
                if name == "eboot.bin" || name.ends_with(".prx") || name.ends_with(".sprx") {
                    out.push(p);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(&homebrew_dir(), &mut out);
    out
}
