//! Sets `APS5_SHADER_SOURCE_HASH`: a hash of this crate's sources (every file under `src/`,
//! recursively, names and bytes, sorted, and this file), part of
//! [`TRANSLATOR_VERSION`](src/lib.rs). Caches and packs of translated shaders are keyed by it,
//! so any change to the decoder or the translator re-translates (docs/PACKS.md).

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=build.rs");
    let mut files = vec![manifest.join("build.rs")];
    collect(&manifest.join("src"), &mut files);
    files.sort();
    // FNV-1a, 64 bits: enough to tell two versions of the sources apart.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for f in files {
        let rel = f
            .strip_prefix(&manifest)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bytes = std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for b in rel.bytes().chain([0]).chain(bytes) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=APS5_SHADER_SOURCE_HASH={h:016x}");
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            // cargo reruns this script when any file below `src` changes.
            println!("cargo:rerun-if-changed={}", p.display());
            collect(&p, out);
        } else {
            out.push(p);
        }
    }
}
