//! Guest path confinement (docs/PRX.md, "Guest paths"): the `guest_confinement` fixture
//! tries every guest-path function through symlinks planted here that point out of the
//! mounts, through `..`, and as changes under the read-only `/app0`; it checks each error
//! itself. This test checks what the program cannot see: that nothing outside the mounts
//! and nothing of `/app0` or the dump changed. It also finds every exported function that
//! takes a guest path in the PRX sources, so a new one that the fixture does not try fails
//! here.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::time::Duration;

use support::*;

/// Path functions tried by another test instead of the fixture, and where.
const COVERED_ELSEWHERE: &[(&str, &str)] = &[
    (
        "FT_New_Face",
        "prx/freetype/tests/exports.rs (symlink out of /app0)",
    ),
    (
        "FT_Attach_File",
        "prx/freetype/tests/exports.rs (symlink out of /app0)",
    ),
];

/// Every file under `dir`: relative path -> (mode, content or link target). Links are not
/// followed, so a changed link counts as a change.
fn snapshot(dir: &Path) -> BTreeMap<String, (u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            let body = if m.file_type().is_symlink() {
                std::fs::read_link(&p)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else if m.is_dir() {
                stack.push(p.clone());
                Vec::new()
            } else {
                std::fs::read(&p).unwrap()
            };
            out.insert(rel, (m.mode(), body));
        }
    }
    out
}

/// The hostile layout the fixture's comment describes, around the output tree `out`.
fn plant(out: &Path, outside: &Path) {
    std::fs::create_dir_all(outside.join("victim_dir")).unwrap();
    std::fs::write(outside.join("victim.txt"), b"precious\n").unwrap();
    std::fs::write(outside.join("module.prx"), b"not for the guest\n").unwrap();
    let temp0 = out.join("data/temp0");
    let save = out.join("data/savedata0");
    std::fs::create_dir_all(&temp0).unwrap();
    std::fs::create_dir_all(&save).unwrap();
    let victim = outside.join("victim.txt");
    symlink(&victim, temp0.join("out_file")).unwrap();
    symlink(outside, temp0.join("out_dir")).unwrap();
    // The same folder by a relative link, climbing out of temp0 with `..`.
    let up = temp0
        .strip_prefix(outside.parent().unwrap())
        .unwrap()
        .components()
        .map(|_| "..")
        .collect::<Vec<_>>()
        .join("/");
    symlink(
        format!("{up}/{}", outside.file_name().unwrap().to_str().unwrap()),
        temp0.join("out_rel"),
    )
    .unwrap();
    assert!(
        temp0.join("out_rel/victim.txt").is_file(),
        "the relative link"
    );
    symlink(outside.join("new.txt"), temp0.join("out_new")).unwrap();
    symlink(outside.join("module.prx"), temp0.join("out_mod")).unwrap();
    symlink("real.txt", temp0.join("in_link")).unwrap();
    symlink(&victim, temp0.join("gone_link")).unwrap();
    symlink(&victim, temp0.join("replace_link")).unwrap();
    symlink(outside, save.join("out_dir")).unwrap();
    symlink(outside, out.join("app0/out_dir")).unwrap();
}

/// Builds and runs the fixture in one layout; returns the functions it says it tried.
fn run_fixture(ps4: bool) -> BTreeSet<String> {
    let fixture = aps5_sdk::fixtures_dir().join("guest_confinement");
    let work = tempfile::tempdir().unwrap();
    let dump = work.path().join("dump");
    aps5_sdk::build_dump(&fixture, &dump, &aps5_sdk::DumpOptions { ps4 })
        .expect("fixture SDK (needs clang-14, ld.lld-14)");
    let out = work.path().join("out");
    build_tree(&dump.join("eboot.bin"), &[], &out);
    // /app0 holds hard links to the dump, as `aps5 build` lays it out by default.
    for f in ["data.txt", "adir/keep.txt"] {
        let dst = out.join("app0").join(f);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::hard_link(dump.join(f), dst).unwrap();
    }
    let outside = work.path().join("outside");
    plant(&out, &outside);
    let before = (
        snapshot(&outside),
        snapshot(&out.join("app0")),
        snapshot(&dump),
    );

    let r = run(&out, &[], &[], Duration::from_secs(60));
    let tag = if ps4 { "ps4" } else { "ps5" };
    let fails: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(
        fails.is_empty() && r.status == Some(0),
        "{tag}: exit {:?}, {} failed cases:\n{}\nstderr: {}",
        r.status,
        fails.len(),
        fails.join("\n"),
        r.stderr
    );
    let summary = r
        .stdout
        .lines()
        .find(|l| l.starts_with("confinement: "))
        .unwrap_or_else(|| panic!("{tag}: no summary line:\n{}", r.stdout));
    eprintln!("{tag}: {summary}");

    let after = (
        snapshot(&outside),
        snapshot(&out.join("app0")),
        snapshot(&dump),
    );
    assert_eq!(
        before.0, after.0,
        "{tag}: the folder outside the mounts changed"
    );
    assert_eq!(before.1, after.1, "{tag}: /app0 changed");
    assert_eq!(before.2, after.2, "{tag}: the dump changed");
    // The operations that act on a link itself did, and only on the link.
    let temp0 = out.join("data/temp0");
    assert!(std::fs::symlink_metadata(temp0.join("gone_link")).is_err());
    let replaced = std::fs::symlink_metadata(temp0.join("replace_link")).unwrap();
    assert!(replaced.is_file());
    assert_eq!(
        std::fs::read(temp0.join("replace_link")).unwrap(),
        b"mine\n"
    );
    // chmod through an inside link changed the file inside.
    assert_eq!(
        std::fs::metadata(temp0.join("real.txt")).unwrap().mode() & 0o777,
        0o640
    );
    r.stdout
        .lines()
        .filter_map(|l| l.strip_prefix("covered "))
        .map(str::to_owned)
        .collect()
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Names of the `#[nid]` functions of the PRX sources that take a guest path: a
/// `*const c_char` parameter named like one (`path`, `from`, `to`, `file`...).
fn exported_path_functions() -> BTreeSet<String> {
    const PATH_PARAMS: &[&str] = &[
        "path", "from", "to", "file", "filename", "pathname", "dir", "dirname",
    ];
    let mut found = BTreeSet::new();
    let mut stack = vec![repo_root().join("prx")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "tests" && n != "target") {
                    stack.push(p);
                }
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            // Unit tests sit at the end of a file.
            let text = &text[..text.find("#[cfg(test)]").unwrap_or(text.len())];
            // Attributes only: a line that starts with one (not a doc comment naming it).
            let starts = text.match_indices("#[nid(\"").filter(|(at, _)| {
                text[..*at]
                    .rsplit('\n')
                    .next()
                    .is_some_and(|l| l.trim().is_empty())
            });
            for (at, _) in starts {
                let rest = &text[at + 7..];
                let name = &rest[..rest.find('"').unwrap()];
                // A function's signature ends at its body; a static ends at a `;` first.
                let item = &rest[..rest.find('{').unwrap_or(rest.len())];
                let Some(f) = item.find("fn ").filter(|f| !item[..*f].contains(';')) else {
                    continue;
                };
                let open = f + item[f..].find('(').expect("a parameter list");
                // The matching `)` (parameter types may hold parentheses).
                let mut depth = 0;
                let close = open
                    + item[open..]
                        .char_indices()
                        .find(|&(_, c)| {
                            depth += match c {
                                '(' => 1,
                                ')' => -1,
                                _ => 0,
                            };
                            depth == 0
                        })
                        .expect("a closed parameter list")
                        .0;
                let rest = item;
                let takes_path = rest[open + 1..close].split(',').any(|param| {
                    let Some((n, ty)) = param.split_once(':') else {
                        return false;
                    };
                    PATH_PARAMS.contains(&n.trim())
                        && ty.contains("*const")
                        && ty.contains("c_char")
                });
                if takes_path {
                    found.insert(name.to_owned());
                }
            }
        }
    }
    found
}

#[test]
fn guest_paths_cannot_leave_the_mounts_or_change_app0() {
    let mut covered = BTreeSet::new();
    for ps4 in [false, true] {
        covered.extend(run_fixture(ps4));
    }
    let exported = exported_path_functions();
    // The scan must see the class it guards, or it would pass on nothing.
    for known in [
        "open",
        "rename",
        "sceKernelLoadStartModule",
        "fopen",
        "FT_New_Face",
    ] {
        assert!(
            exported.contains(known),
            "scan missed {known}: {exported:?}"
        );
    }
    let untried: Vec<&String> = exported
        .iter()
        .filter(|n| !covered.contains(*n) && !COVERED_ELSEWHERE.iter().any(|(e, _)| e == n))
        .collect();
    eprintln!(
        "{} exported guest-path functions, {} tried by the fixture",
        exported.len(),
        covered.len()
    );
    assert!(
        untried.is_empty(),
        "guest-path functions the guest_confinement fixture does not try: {untried:?}"
    );
}
