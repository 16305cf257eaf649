//! Conformance against LLVM 14 `llvm-mc` on the LLVM MC test corpus
//! (`shared/corpus/llvm14-amdgpu-mc/`): every byte line of the gfx10 `dasm/*.txt` files and
//! every `encoding: [..]` of the gfx10 `asm/*.s` files is disassembled by llvm-mc (the oracle)
//! and by us; the texts must be identical. Per-file matched counts are ratcheted in
//! `tests/expect/conformance.txt` (set `APS5_UPDATE_EXPECT=1` to record new figures).

use std::collections::{BTreeMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use aps5_shader::decode::family_of;
use aps5_shader::disasm::{Mcpu, Options};
use aps5_shader::oracle;

fn corpus() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/llvm14-amdgpu-mc");
    assert!(
        p.is_dir(),
        "corpus not found at {} (needs the shared/ folder next to the repo)",
        p.display()
    );
    p
}

fn parse_bytes(s: &str) -> Option<Vec<u8>> {
    let mut v = Vec::new();
    for t in s
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
    {
        v.push(u8::from_str_radix(t.strip_prefix("0x")?, 16).ok()?);
    }
    if v.is_empty() { None } else { Some(v) }
}

/// (mcpu, wave64) configurations from a file's RUN lines (unsupported gfx10 CPUs map to gfx1030).
fn configs(text: &str) -> Vec<(Mcpu, bool)> {
    let mut v = Vec::new();
    for l in text.lines().filter(|l| l.contains("RUN:")) {
        let Some(i) = l.find("-mcpu=") else { continue };
        let cpu: String = l[i + 6..]
            .chars()
            .take_while(|c| c.is_alphanumeric())
            .collect();
        let m = match cpu.as_str() {
            "gfx1010" => Mcpu::Gfx1010,
            "gfx1013" => Mcpu::Gfx1013,
            c if c.starts_with("gfx10") => Mcpu::Gfx1030,
            _ => continue,
        };
        let w64 = l.contains("+wavefrontsize64");
        if !v.contains(&(m, w64)) {
            v.push((m, w64));
        }
    }
    if !v.contains(&(Mcpu::Gfx1030, false)) {
        v.push((Mcpu::Gfx1030, false));
    }
    v
}

fn cached_oracle(cases: &[Vec<u8>], opts: &Options) -> Vec<Vec<String>> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (format!("{:?}{}", opts.mcpu, opts.wave64), cases).hash(&mut h);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("llvm-mc-cache");
    let file = dir.join(format!("{:016x}.txt", h.finish()));
    if let Ok(s) = std::fs::read_to_string(&file) {
        let v: Vec<Vec<String>> = s
            .split('\n')
            .take(cases.len())
            .map(|l| {
                if l.is_empty() {
                    vec![]
                } else {
                    l.split('\u{1f}').map(str::to_string).collect()
                }
            })
            .collect();
        if v.len() == cases.len() {
            return v;
        }
    }
    let v = oracle::run_llvm_mc(cases, opts).unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::create_dir_all(&dir);
    let text: Vec<String> = v.iter().map(|l| l.join("\u{1f}")).collect();
    let _ = std::fs::write(&file, text.join("\n"));
    v
}

fn showfam() -> String {
    std::env::var("APS5_SHOWFAM").unwrap_or_default()
}

#[derive(Default)]
struct Tally {
    matched: usize,
    total: usize,
}

fn check(
    name: &str,
    cases: &[Vec<u8>],
    opts: &Options,
    fam: &mut BTreeMap<String, Tally>,
    show: usize,
) -> Tally {
    let want = cached_oracle(cases, opts);
    let mut t = Tally::default();
    let mut shown = 0;
    for (c, w) in cases.iter().zip(&want) {
        let got = oracle::ours(c, opts);
        let ok = &got == w;
        let w0 = u32::from_le_bytes([
            c[0],
            c[1],
            c.get(2).copied().unwrap_or(0),
            c.get(3).copied().unwrap_or(0),
        ]);
        let f = family_of(w0).map(|f| f.name()).unwrap_or("?").to_string();
        let e = fam.entry(f.clone()).or_default();
        e.total += 1;
        t.total += 1;
        if ok {
            e.matched += 1;
            t.matched += 1;
        } else if shown < show && (showfam().is_empty() || showfam() == f) {
            shown += 1;
            eprintln!(
                "MISMATCH {f} {name} {:02x?}\n  llvm: {:?}\n  ours: {:?}",
                c, w, got
            );
        }
    }
    t
}

#[test]
fn conformance_llvm14() {
    if let Err(e) = oracle::llvm_mc() {
        panic!("{e}");
    }
    let root = corpus();
    let show: usize = std::env::var("APS5_SHOW")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let filter = std::env::var("APS5_FILTER").unwrap_or_default();
    let mut results: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut fam: BTreeMap<String, Tally> = BTreeMap::new();
    let mut files: Vec<PathBuf> = Vec::new();
    for sub in ["dasm", "asm"] {
        let mut v: Vec<PathBuf> = std::fs::read_dir(root.join(sub))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        v.sort();
        files.extend(v);
    }
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let asm = path.extension().is_some_and(|e| e == "s");
        let mut seen = HashSet::new();
        let mut cases = Vec::new();
        for l in text.lines() {
            let bytes = if asm {
                l.find("encoding: [").and_then(|i| {
                    let r = &l[i + 11..];
                    parse_bytes(&r[..r.find(']')?])
                })
            } else if l.trim_start().starts_with("0x") {
                parse_bytes(l.split('#').next().unwrap_or(""))
            } else {
                None
            };
            if let Some(b) = bytes
                && seen.insert(b.clone())
            {
                cases.push(b);
            }
        }
        if cases.is_empty() {
            continue;
        }
        let fname = format!(
            "{}/{}",
            if asm { "asm" } else { "dasm" },
            path.file_name().unwrap().to_string_lossy()
        );
        for (m, w64) in configs(&text) {
            let key = format!("{fname}:{m:?}:{}", if w64 { "w64" } else { "w32" }).to_lowercase();
            if !key.contains(&filter) {
                continue;
            }
            let opts = Options {
                mcpu: m,
                wave64: w64,
            };
            let t = check(&key, &cases, &opts, &mut fam, show);
            results.insert(key, (t.matched, t.total));
        }
    }
    let (mut m, mut t) = (0, 0);
    for (k, (a, b)) in &results {
        println!("{k:60} {a:6}/{b:6}");
        m += a;
        t += b;
    }
    println!("TOTAL {m}/{t} ({:.2}%)", 100.0 * m as f64 / t.max(1) as f64);
    for (k, v) in &fam {
        println!("family {k:8} {:6}/{:6}", v.matched, v.total);
    }
    let expect_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expect/conformance.txt");
    if std::env::var("APS5_UPDATE_EXPECT").is_ok() {
        let s: String = results
            .iter()
            .map(|(k, (a, b))| format!("{k} {a} {b}\n"))
            .collect();
        std::fs::create_dir_all(expect_path.parent().unwrap()).unwrap();
        std::fs::write(&expect_path, s).unwrap();
        return;
    }
    let expect = std::fs::read_to_string(&expect_path).unwrap_or_default();
    let mut fails = Vec::new();
    for l in expect.lines() {
        let p: Vec<&str> = l.split_whitespace().collect();
        if p.len() != 3 {
            continue;
        }
        let want: usize = p[1].parse().unwrap();
        match results.get(p[0]) {
            Some((got, _)) if *got < want => {
                fails.push(format!("{}: {got} matched < {want} recorded", p[0]))
            }
            None if filter.is_empty() => fails.push(format!("{}: no longer checked", p[0])),
            _ => {}
        }
    }
    assert!(
        fails.is_empty(),
        "conformance regressed:\n{}",
        fails.join("\n")
    );
}
