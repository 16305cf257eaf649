//! Helpers: temporary projects, running aps5, reading output trees.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn aps5() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_aps5"));
    c.env_remove("APS5_LOG");
    c
}

/// Runs aps5 in `dir` with `args`.
pub fn run(dir: &Path, args: &[&str]) -> Output {
    aps5()
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("aps5 runs")
}

/// Runs aps5 and asserts success; returns stdout.
pub fn ok(dir: &Path, args: &[&str]) -> String {
    let out = run(dir, args);
    assert!(
        out.status.success(),
        "aps5 {args:?} failed ({:?}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `aps5 init` in `dump`, with the cache beside the dump (`../cache`) so the test leaves nothing
/// in the user's cache.
pub fn init_with_cache_beside(dump: &Path) {
    ok(dump, &["-q", "init"]);
    let cfg = dump.join("aps5.toml");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("cache_dir = \"\"", "cache_dir = \"../cache\"");
    std::fs::write(&cfg, text).unwrap();
}

/// Runs aps5, asserts exit status `code`; returns stderr.
pub fn fails(dir: &Path, args: &[&str], code: i32) -> String {
    let out = run(dir, args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "aps5 {args:?}: expected exit {code}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stderr).unwrap()
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

pub fn shared() -> PathBuf {
    repo_root().join("../shared")
}

pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// A fresh project in a temporary folder: a copy of the built-in sample dump (a PS5-format eboot
/// and bundled module made by the fixture SDK with clang/lld), a few data files, and a cache of
/// its own.
pub struct Project {
    pub tmp: tempfile::TempDir,
}

impl Project {
    pub fn new() -> Project {
        let tmp = tempfile::tempdir().unwrap();
        let dump = tmp.path().join("game");
        copy_tree(&repo_root().join("compiler/aps5/sample"), &dump);
        std::fs::create_dir_all(dump.join("data/levels")).unwrap();
        std::fs::write(dump.join("data/levels/one.txt"), b"level one\n").unwrap();
        std::fs::write(dump.join("data/readme.txt"), b"hello\n").unwrap();
        let p = Project { tmp };
        ok(&p.dir(), &["-q", "init"]);
        p.set_cache("../cache");
        p
    }

    pub fn dir(&self) -> PathBuf {
        self.tmp.path().join("game")
    }

    pub fn out(&self) -> PathBuf {
        self.dir().join("aps5-out")
    }

    pub fn cache(&self) -> PathBuf {
        self.tmp.path().join("cache")
    }

    pub fn set_cache(&self, rel: &str) {
        self.edit_config("cache_dir = \"\"", &format!("cache_dir = \"{rel}\""));
    }

    pub fn edit_config(&self, from: &str, to: &str) {
        let cfg = self.dir().join("aps5.toml");
        let text = std::fs::read_to_string(&cfg).unwrap();
        assert!(text.contains(from), "aps5.toml lacks {from}:\n{text}");
        std::fs::write(&cfg, text.replace(from, to)).unwrap();
    }

    /// `aps5 build --json`, parsed.
    pub fn build_json(&self) -> serde_json::Value {
        serde_json::from_str(&ok(&self.dir(), &["build", "--json"])).unwrap()
    }
}

/// Every file under `dir` (relative path -> bytes), sorted.
pub fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    fn walk(root: &Path, d: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().to_string_lossy().into_owned(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

/// The artifacts a `--json` build report says were recomputed.
pub fn recomputed(report: &serde_json::Value) -> Vec<(String, String, String)> {
    report["recomputed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["query"].as_str().unwrap().to_string(),
                r["artifact"].as_str().unwrap().to_string(),
                r["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}
