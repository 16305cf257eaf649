//! Helpers shared by the SDK's integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Every fixture: a folder (or `.c` file's folder) under tests/fixtures with an `expect.stdout`.
pub fn fixtures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(aps5_sdk::fixtures_dir())
        .expect("tests/fixtures is readable")
        .map(|e| e.expect("fixture entry").path())
        .filter(|p| p.join("expect.stdout").is_file())
        .collect();
    v.sort();
    v
}

pub fn name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// Fails the test with a clear message if an LLVM 14 tool is missing.
pub fn require(tool: aps5_sdk::Tool) -> PathBuf {
    match aps5_sdk::find_tool(tool) {
        Ok(p) => p,
        Err(e) => panic!("{e:#}"),
    }
}

/// Lines of the fixture's `args` file (one argument per line).
pub fn args(fixture: &Path) -> Vec<String> {
    std::fs::read_to_string(fixture.join("args"))
        .map(|t| t.lines().map(String::from).collect())
        .unwrap_or_default()
}

/// `KEY=VALUE` lines of the fixture's `env` file.
pub fn env(fixture: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(fixture.join("env"))
        .map(|t| {
            t.lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .unwrap_or_default()
}
