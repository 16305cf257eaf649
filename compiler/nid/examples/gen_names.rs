//! Regenerates `compiler/nid/data/names.tsv.zst` from `shared/corpus/nid-names/`.
//!
//! Usage: `cargo run -p aps5-nid --example gen_names [CORPUS_DIR]`

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = match std::env::args_os().nth(1) {
        Some(p) => PathBuf::from(p),
        None => match aps5_nid::generate::find_corpus(manifest) {
            Some(p) => p,
            None => {
                eprintln!(
                    "error: shared/corpus/nid-names not found above {}; pass its path as the first argument",
                    manifest.display()
                );
                return ExitCode::FAILURE;
            }
        },
    };
    let (text, stats) = match aps5_nid::generate::build_text(&corpus) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let packed = match aps5_nid::generate::compress(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: compressing: {e}");
            return ExitCode::FAILURE;
        }
    };
    let out = manifest.join("data/names.tsv.zst");
    if let Err(e) = std::fs::write(&out, &packed) {
        eprintln!("error: writing {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    println!(
        "wrote {} ({} bytes, {} bytes of text): {} names, {} NIDs, {} libraries; skipped {} '/' lines, {} NID-only rows",
        out.display(),
        packed.len(),
        text.len(),
        stats.names,
        stats.nids,
        stats.libraries,
        stats.skipped_slash_lines,
        stats.skipped_nid_only_rows
    );
    ExitCode::SUCCESS
}
