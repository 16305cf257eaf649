//! The static shader scan (`aps5_agc::scan`) against outside truth: the GPU fixtures built by
//! the fixture SDK (clang, llc: every `tests/fixtures/*/shaders/*.ll` is one header + code
//! the executable embeds), the corpus homebrew (real PS4 binaries with no PS5 shader), and
//! random bytes with and without planted signatures.

use aps5_agc::scan::{self, SIGNATURE};
use std::path::{Path, PathBuf};

/// A deterministic xorshift byte stream (no dependency, reproducible failures).
fn random_bytes(n: usize, mut seed: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(n + 8);
    while v.len() < n {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        v.extend_from_slice(&seed.to_le_bytes());
    }
    v.truncate(n);
    v
}

fn files_under(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![d.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The fixtures with GPU programs and the `.ll` sources each embeds.
fn gpu_fixtures() -> Vec<(PathBuf, Vec<PathBuf>)> {
    let mut out: Vec<(PathBuf, Vec<PathBuf>)> = Vec::new();
    for f in files_under(&aps5_sdk::fixtures_dir()) {
        // Compute programs only (the test compiles them as such); fixtures with graphics
        // shaders are left out whole, so "nothing else found" stays true of the rest.
        if f.extension().is_some_and(|e| e == "ll")
            && f.parent().is_some_and(|p| p.ends_with("shaders"))
        {
            let graphics = |d: &std::path::Path| {
                files_under(d).iter().any(|g| {
                    g.extension().is_some_and(|e| e == "ll")
                        && !std::fs::read_to_string(g)
                            .unwrap_or_default()
                            .contains("; aps5-cs:")
                })
            };
            if graphics(f.parent().unwrap()) {
                continue;
            }
            let fixture = f.parent().unwrap().parent().unwrap().to_path_buf();
            match out.iter_mut().find(|(d, _)| *d == fixture) {
                Some((_, v)) => v.push(f),
                None => out.push((fixture, vec![f])),
            }
        }
    }
    out
}

#[test]
fn finds_every_fixture_shader_in_the_built_dumps() {
    let fixtures = gpu_fixtures();
    assert!(fixtures.len() >= 3, "GPU fixtures: {fixtures:?}");
    let tmp = tempfile::tempdir().unwrap();
    let (mut expected, mut found_total) = (0, 0);
    for (i, (fixture, lls)) in fixtures.iter().enumerate() {
        let dump = tmp.path().join(format!("dump{i}"));
        aps5_sdk::build_dump(fixture, &dump, &aps5_sdk::DumpOptions { ps4: false })
            .unwrap_or_else(|e| panic!("{}: {e:#}", fixture.display()));
        // What llc produced for each source: the code the scan must find, byte for byte.
        let mut want: Vec<Vec<u8>> = lls
            .iter()
            .map(|ll| {
                aps5_sdk::gpu::compile_compute(ll, tmp.path(), Path::new("/"))
                    .unwrap()
                    .code
            })
            .collect();
        want.sort();
        let mut got = Vec::new();
        for file in files_under(&dump) {
            let bytes = std::fs::read(&file).unwrap();
            for f in scan::scan(&bytes) {
                got.push(f.code_bytes(&bytes).to_vec());
                assert_eq!(
                    (f.code_offset - f.header_offset) % 256,
                    0,
                    "{}",
                    file.display()
                );
            }
        }
        got.sort();
        assert_eq!(
            got,
            want,
            "{}: scan results vs the .ll sources",
            fixture.display()
        );
        expected += want.len();
        found_total += got.len();
    }
    eprintln!("scan: {found_total}/{expected} fixture shaders found");
}

#[test]
fn finds_headers_at_any_position_in_noise() {
    let ll = gpu_fixtures()[0].1[0].clone();
    let tmp = tempfile::tempdir().unwrap();
    let s = aps5_sdk::gpu::compile_compute(&ll, tmp.path(), Path::new("/")).unwrap();
    let (blob, code_offset) = aps5_sdk::gpu::wrap_in_header(&s).unwrap();
    let mut data = random_bytes(1 << 20, 7);
    // Aligned, unaligned, odd: the relative rule pairs each with its code.
    let places = [0usize, 4096, 10_003, 70_001, (1 << 20) - blob.len()];
    for &p in &places {
        data[p..p + blob.len()].copy_from_slice(&blob);
    }
    let found = scan::scan(&data);
    let at: Vec<usize> = found.iter().map(|f| f.header_offset).collect();
    assert_eq!(at, places);
    for f in &found {
        assert_eq!(f.code_offset, f.header_offset + code_offset);
        assert_eq!(f.code_bytes(&data), &s.code[..]);
    }
    // The last one, cut short by one byte, has its code outside the input: refused.
    let (found, stats) = scan::scan_with_stats(&data[..data.len() - 1]);
    assert_eq!(found.len(), places.len() - 1);
    assert_eq!(stats.bad_code, 1);
}

#[test]
fn no_false_positives_on_homebrew() {
    let dir = aps5_sdk::sdk_dir().join("../../../shared/corpus/homebrew");
    let files = files_under(&dir);
    assert!(!files.is_empty(), "no corpus at {}", dir.display());
    let mut bytes_total = 0;
    for f in files {
        let b = std::fs::read(&f).unwrap();
        bytes_total += b.len();
        let found = scan::scan(&b);
        assert!(found.is_empty(), "{}: {found:?}", f.display());
    }
    eprintln!("scan: 0 false positives in {bytes_total} homebrew bytes");
}

#[test]
fn no_false_positives_on_random_bytes_even_with_planted_signatures() {
    let mut data = random_bytes(8 << 20, 0x9e37_79b9_7f4a_7c15);
    assert!(scan::scan(&data).is_empty());
    // A signature every 4 KiB with random header bytes after it: parse must refuse them all.
    for p in (0..data.len() - 4096).step_by(4096) {
        data[p..p + 8].copy_from_slice(&SIGNATURE);
    }
    let (found, stats) = scan::scan_with_stats(&data);
    assert!(found.is_empty(), "{found:?}");
    assert_eq!(stats.signatures, data.len() / 4096 - 1);
}

#[test]
fn a_valid_header_with_garbage_code_is_refused() {
    let ll = gpu_fixtures()[0].1[0].clone();
    let tmp = tempfile::tempdir().unwrap();
    let s = aps5_sdk::gpu::compile_compute(&ll, tmp.path(), Path::new("/")).unwrap();
    let (mut blob, code_offset) = aps5_sdk::gpu::wrap_in_header(&s).unwrap();
    assert_eq!(scan::scan(&blob).len(), 1);
    // Code that is all invalid words: the header alone is not enough.
    for b in &mut blob[code_offset..] {
        *b = 0xff;
    }
    let (found, stats) = scan::scan_with_stats(&blob);
    assert!(found.is_empty(), "{found:?}");
    assert_eq!(
        (stats.signatures, stats.bad_header, stats.bad_code),
        (1, 0, 1)
    );
}
