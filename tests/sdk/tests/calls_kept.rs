//! Fixtures that test C library functions must really call them: -O2 folds or inlines many
//! calls (a constant `strtol`, `sqrt` as an instruction), and then the fixture tests nothing.
//! Each fixture listed here is built at its own flags (-O2, or -O0 through its `cflags`) and
//! `llvm-objdump-14` must show, in the linked eboot, a call or jump through the PLT to every
//! function named in `calls` (or, for fixtures that call through volatile function pointers,
//! a load of its GOT entry: `@GOTPCREL` or a PLT address taken).

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// The helper names a fixture's source calls: every `__name(` (compiler-runtime helpers; not
/// the compiler's own `__builtin_*`) and `bcmp(`.
fn runtime_calls(src: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let b = src.as_bytes();
    for (i, _) in src.match_indices("__").chain(src.match_indices("bcmp(")) {
        if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
            continue;
        }
        let end = src[i..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(src.len(), |e| i + e);
        let name = &src[i..end];
        if !name.starts_with("__builtin") && !name.ends_with("__") && src[end..].starts_with('(') {
            out.insert(name.to_owned());
        }
    }
    out
}

/// `llvm-objdump-14 FLAGS` of the linked eboot of FIXTURE.
fn objdump(fixture: &Path, ps4: bool, flags: &[&str]) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    aps5_sdk::build_dump_in(
        fixture,
        &tmp.path().join("dump"),
        &aps5_sdk::DumpOptions { ps4 },
        &work,
    )
    .unwrap_or_else(|e| panic!("{}: {e:#}", fixture.display()));
    let out = Command::new(common::require(aps5_sdk::Tool::LlvmObjdump))
        .args(flags)
        .arg(work.join("eboot/linked.elf"))
        .output()
        .unwrap();
    assert!(out.status.success(), "llvm-objdump failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn compiler_runtime_calls_survive_every_optimisation_level() {
    let dir = aps5_sdk::fixtures_dir();
    let src = std::fs::read_to_string(dir.join("compiler_rt/main.c")).unwrap();
    let names = runtime_calls(&src);
    assert!(
        names.len() > 100,
        "only {} helpers found in compiler_rt",
        names.len()
    );
    for fixture in ["compiler_rt", "compiler_rt_O0"] {
        let dis = objdump(&dir.join(fixture), false, &["-d", "--no-show-raw-insn"]);
        let missing: Vec<&String> = names
            .iter()
            .filter(|n| {
                let target = format!("<{n}@plt>");
                !dis.lines()
                    .any(|l| (l.contains("\tcall") || l.contains("\tjmp")) && l.contains(&target))
            })
            .collect();
        assert!(
            missing.is_empty(),
            "{fixture}: no call to {missing:?} in the linked eboot"
        );
    }
}

#[test]
fn errno_fixture_calls_survive_every_optimisation_level() {
    // The errno fixture calls through volatile function pointers: each function's address
    // must be taken (a dynamic relocation against it), and no math function may become an instruction
    // instead (no sqrtsd/sqrtss in the eboot).
    let dir = aps5_sdk::fixtures_dir();
    let src = std::fs::read_to_string(dir.join("errno_host/main.c")).unwrap();
    let mut names = BTreeSet::new();
    for (i, _) in src.match_indices("F(") {
        let rest = &src[i + 2..];
        if let Some(comma) = rest.find(", ") {
            let after = &rest[comma + 2..];
            if let Some(end) = after.find(')') {
                names.insert(after[..end].to_owned());
            }
        }
    }
    for m in ["M1(", "M2(", "M1F(", "M2F("] {
        for (i, _) in src.match_indices(m) {
            let rest = &src[i + m.len()..];
            if let Some(end) = rest.find(',') {
                names.insert(rest[..end].to_owned());
            }
        }
    }
    names.retain(|n| {
        n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && n.len() > 1
    });
    assert!(
        names.len() > 50,
        "only {} functions found in errno_host",
        names.len()
    );
    for fixture in ["errno_host", "errno_host_O0"] {
        let dis = objdump(&dir.join(fixture), false, &["-d", "--no-show-raw-insn"]);
        let relocs = objdump(&dir.join(fixture), false, &["-R"]);
        let missing: Vec<&String> = names
            .iter()
            .filter(|n| {
                !relocs
                    .lines()
                    .any(|l| l.split_whitespace().nth(2) == Some(n.as_str()))
            })
            .collect();
        assert!(
            missing.is_empty(),
            "{fixture}: {missing:?} never referenced"
        );
        assert!(
            !dis.contains("sqrtsd") && !dis.contains("sqrtss"),
            "{fixture}: sqrt became an instruction"
        );
    }
}

#[test]
fn large_atomics_become_the_generic_library_calls() {
    // `_Atomic triple` (24 bytes) in the stdatomic fixture: clang must call the generic
    // functions libSceLibcInternal exports, at -O2 as well.
    let dis = objdump(
        &aps5_sdk::fixtures_dir().join("stdatomic"),
        false,
        &["-d", "--no-show-raw-insn"],
    );
    for n in [
        "__atomic_load",
        "__atomic_store",
        "__atomic_exchange",
        "__atomic_compare_exchange",
    ] {
        let target = format!("<{n}@plt>");
        assert!(
            dis.lines()
                .any(|l| (l.contains("\tcall") || l.contains("\tjmp")) && l.contains(&target)),
            "stdatomic: no call to {n}"
        );
    }
}
