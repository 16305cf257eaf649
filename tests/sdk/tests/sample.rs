//! The built-in sample dump committed in `compiler/aps5/sample/` (users' machines have no C
//! compiler) must be exactly what the SDK builds from `tests/fixtures/sample` today.
//!
//! To refresh it after changing the SDK or the sample's sources:
//!     cargo xtask dump tests/fixtures/sample -o compiler/aps5/sample

mod common;

use std::collections::BTreeMap;
use std::path::Path;

const REFRESH: &str =
    "refresh it with `cargo xtask dump tests/fixtures/sample -o compiler/aps5/sample`";

fn files(dir: &Path, root: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, root, out);
        } else {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            out.insert(rel, std::fs::read(&p).unwrap());
        }
    }
}

#[test]
fn committed_sample_is_what_the_sdk_builds() {
    common::require(aps5_sdk::Tool::Clang);
    common::require(aps5_sdk::Tool::Lld);
    let committed_dir = aps5_sdk::sdk_dir().join("../../compiler/aps5/sample");
    assert!(
        committed_dir.join("eboot.bin").is_file(),
        "compiler/aps5/sample/eboot.bin is missing: {REFRESH}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let fresh_dir = tmp.path().join("sample");
    aps5_sdk::build_dump(
        &aps5_sdk::fixtures_dir().join("sample"),
        &fresh_dir,
        &aps5_sdk::DumpOptions::default(),
    )
    .unwrap();
    let mut committed = BTreeMap::new();
    files(&committed_dir, &committed_dir, &mut committed);
    let mut fresh = BTreeMap::new();
    files(&fresh_dir, &fresh_dir, &mut fresh);
    assert_eq!(
        committed.keys().collect::<Vec<_>>(),
        fresh.keys().collect::<Vec<_>>(),
        "the committed sample has other files than a fresh build: {REFRESH}"
    );
    for (path, bytes) in &fresh {
        assert!(
            &committed[path] == bytes,
            "compiler/aps5/sample/{path} is stale ({} bytes committed, {} built): {REFRESH}",
            committed[path].len(),
            bytes.len()
        );
    }
    let total: usize = committed.values().map(Vec::len).sum();
    assert!(
        total < 64 * 1024,
        "the sample should stay small (tens of KB), it is {total} bytes"
    );
    // And it is a real module set: the eboot imports the module's exports.
    let eboot = aps5_elf::parse(&committed["eboot.bin"]).unwrap();
    assert!(
        eboot.needed.iter().any(|n| n == "samplelib.prx"),
        "{:?}",
        eboot.needed
    );
}
