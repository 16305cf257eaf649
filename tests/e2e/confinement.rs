//! A ported program cannot change the user's dump or leave its mounts: `aps5 build` (default
//! hard-link mode, so aps5-out/app0 shares the dump's inodes) and `aps5 run` of the fixture
//! SDK's guest_confinement program, which writes to /app0 and goes through symlinks planted
//! in aps5-data and aps5-out/app0. The program checks every error code itself; this test
//! checks that the dump, aps5-out/app0 and the folder outside are byte for byte unchanged.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::Path;

use crate::common::*;

/// Every entry under `dir`, links not followed: relative path -> (mode, bytes or target).
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

#[test]
fn a_program_writing_to_app0_or_through_symlinks_changes_nothing_of_the_user() {
    let fixture = repo_root().join("tests/fixtures/guest_confinement");
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("game");
    aps5_sdk::build_dump(&fixture, &dump, &aps5_sdk::DumpOptions { ps4: false })
        .expect("fixture SDK (needs clang-14, ld.lld-14)");
    init_with_cache_beside(&dump);
    ok(&dump, &["-q", "build"]);
    let out = dump.join("aps5-out");
    // The case that matters: /app0's file is the dump's file (same inode).
    let (d, a) = (
        std::fs::metadata(dump.join("data.txt")).unwrap(),
        std::fs::metadata(out.join("app0/data.txt")).unwrap(),
    );
    assert_eq!((d.dev(), d.ino()), (a.dev(), a.ino()), "hard-link mode");

    // The hostile layout of the fixture's header comment.
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(outside.join("victim_dir")).unwrap();
    std::fs::write(outside.join("victim.txt"), b"precious\n").unwrap();
    std::fs::write(outside.join("module.prx"), b"not for the guest\n").unwrap();
    let temp0 = dump.join("aps5-data/temp0");
    let save = dump.join("aps5-data/savedata0");
    std::fs::create_dir_all(&temp0).unwrap();
    std::fs::create_dir_all(&save).unwrap();
    let victim = outside.join("victim.txt");
    symlink(&victim, temp0.join("out_file")).unwrap();
    symlink(&outside, temp0.join("out_dir")).unwrap();
    // tmp/game/aps5-data/temp0 -> ../../../outside
    symlink("../../../outside", temp0.join("out_rel")).unwrap();
    assert!(temp0.join("out_rel/victim.txt").is_file());
    symlink(outside.join("new.txt"), temp0.join("out_new")).unwrap();
    symlink(outside.join("module.prx"), temp0.join("out_mod")).unwrap();
    symlink("real.txt", temp0.join("in_link")).unwrap();
    symlink(&victim, temp0.join("gone_link")).unwrap();
    symlink(&victim, temp0.join("replace_link")).unwrap();
    symlink(&outside, save.join("out_dir")).unwrap();
    symlink(&outside, out.join("app0/out_dir")).unwrap();

    let before = (
        snapshot(&outside),
        snapshot(&out.join("app0")),
        snapshot(&dump.join("adir")),
        std::fs::read(dump.join("data.txt")).unwrap(),
    );
    let r = run(&dump, &["run"]);
    let stdout = String::from_utf8_lossy(&r.stdout);
    assert!(
        r.status.success() && !stdout.contains("FAIL"),
        "{:?}\n{stdout}{}",
        r.status,
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(stdout.contains("confinement: "), "{stdout}");
    let after = (
        snapshot(&outside),
        snapshot(&out.join("app0")),
        snapshot(&dump.join("adir")),
        std::fs::read(dump.join("data.txt")).unwrap(),
    );
    assert_eq!(before.0, after.0, "the folder outside changed");
    assert_eq!(before.1, after.1, "aps5-out/app0 changed");
    assert_eq!(before.2, after.2, "the dump's adir changed");
    assert_eq!(
        after.3, b"shipped in the dump\n",
        "the dump's data.txt changed"
    );
    assert!(std::fs::symlink_metadata(temp0.join("gone_link")).is_err());
}
