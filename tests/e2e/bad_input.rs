//! Bad input: a clear error naming the file, exit status 2, and the previous output and the cache
//! left intact.

use std::os::unix::process::CommandExt;

use crate::common::*;

#[test]
fn usage_errors_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    fails(tmp.path(), &["frobnicate"], 1);
    fails(tmp.path(), &["build", "--no-such-flag"], 1);
    assert!(ok(tmp.path(), &["--help"]).contains("init"));
}

#[test]
fn init_in_a_folder_that_is_not_a_dump_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("notes.txt"), b"hi").unwrap();
    let err = fails(tmp.path(), &["init"], 2);
    assert!(
        err.contains("not a PS4/PS5 game dump") && err.contains("eboot.bin"),
        "{err}"
    );
    assert!(!tmp.path().join("aps5.toml").exists());
    // An eboot.bin that is not an executable.
    std::fs::write(tmp.path().join("eboot.bin"), b"MZ\x90\x00").unwrap();
    let err = fails(tmp.path(), &["init"], 2);
    assert!(err.contains("4d 5a 90 00"), "{err}");
    assert!(!tmp.path().join("aps5.toml").exists());
    // A missing folder.
    let err = fails(tmp.path(), &["init", "no/such/dir"], 2);
    assert!(err.contains("no/such/dir"), "{err}");
}

#[test]
fn build_outside_a_project_says_to_init() {
    let tmp = tempfile::tempdir().unwrap();
    let err = fails(tmp.path(), &["build"], 2);
    assert!(err.contains("aps5 init"), "{err}");
}

/// Builds once, breaks something, and checks the failing build left the good output as it was.
fn assert_failure_keeps_output(p: &Project, expect: &[&str]) {
    let before = tree(&p.out());
    let err = fails(&p.dir(), &["build"], 2);
    for e in expect {
        assert!(err.contains(e), "expected `{e}` in: {err}");
    }
    assert_eq!(tree(&p.out()), before, "a failed build changed aps5-out/");
    ok(&p.dir(), &["cache", "verify"]);
}

#[test]
fn a_link_out_of_the_dump_is_refused() {
    let p = Project::new();
    p.build_json();
    let secret = p.tmp.path().join("secret.txt");
    std::fs::write(&secret, b"outside").unwrap();
    std::os::unix::fs::symlink(&secret, p.dir().join("data/escape.txt")).unwrap();
    assert_failure_keeps_output(&p, &["data/escape.txt", "outside the dump"]);
    // A link that stays inside the dump is carried.
    std::fs::remove_file(p.dir().join("data/escape.txt")).unwrap();
    std::os::unix::fs::symlink("levels/one.txt", p.dir().join("data/alias.txt")).unwrap();
    p.build_json();
    assert_eq!(
        std::fs::read(p.out().join("app0/data/alias.txt")).unwrap(),
        b"level one\n"
    );
}

#[test]
fn a_damaged_module_is_named() {
    let p = Project::new();
    p.build_json();
    let prx = p.dir().join("sce_module/samplelib.prx");
    let bytes = std::fs::read(&prx).unwrap();
    std::fs::write(&prx, &bytes[..bytes.len() / 3]).unwrap();
    assert_failure_keeps_output(&p, &["samplelib.prx", "cut short"]);
}

#[test]
fn an_output_folder_escaping_the_project_is_refused() {
    let p = Project::new();
    p.edit_config("out_dir = \"aps5-out\"", "out_dir = \"../elsewhere\"");
    let err = fails(&p.dir(), &["build"], 2);
    assert!(err.contains("out_dir") && err.contains(".."), "{err}");
    assert!(!p.tmp.path().join("elsewhere").exists());
}

#[test]
fn a_missing_executable_is_named() {
    let p = Project::new();
    p.build_json();
    std::fs::rename(p.dir().join("eboot.bin"), p.dir().join("eboot.old")).unwrap();
    assert_failure_keeps_output(&p, &["eboot.bin", "missing"]);
}

#[test]
fn an_unreadable_file_is_named() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // root reads any file whatever its mode; the write-failure test covers I/O errors there.
        eprintln!("skipped: running as root, permissions cannot make a file unreadable");
        return;
    }
    let p = Project::new();
    p.build_json();
    let f = p.dir().join("data/locked.bin");
    std::fs::write(&f, b"x").unwrap();
    std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    assert_failure_keeps_output(&p, &["data/locked.bin"]);
}

#[test]
fn a_write_failure_keeps_the_previous_output() {
    let p = Project::new();
    p.edit_config("link_mode = \"hardlink\"", "link_mode = \"copy\"");
    p.build_json();
    let before = tree(&p.out());
    // A new 4 MiB file, and a file-size limit of 1 MiB: copying it fails as a full disk would.
    std::fs::write(p.dir().join("data/big.bin"), vec![7u8; 4 << 20]).unwrap();
    let mut cmd = aps5();
    cmd.arg("-C").arg(p.dir()).arg("build");
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit {
                rlim_cur: 1 << 20,
                rlim_max: 1 << 20,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("big.bin"), "{err}");
    assert_eq!(tree(&p.out()), before, "the failed build changed aps5-out/");
    // Without the limit the same build succeeds.
    p.build_json();
    assert!(p.out().join("app0/data/big.bin").is_file());
}

#[test]
fn a_corrupted_cache_blob_is_a_miss_and_is_rewritten() {
    let p = Project::new();
    p.build_json();
    let mut corrupted = 0;
    let mut stack = vec![p.cache()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.components().any(|c| c.as_os_str() == "blobs") {
                let mut b = std::fs::read(&path).unwrap();
                if let Some(x) = b.first_mut() {
                    *x ^= 0x55;
                    std::fs::write(&path, &b).unwrap();
                    corrupted += 1;
                }
            }
        }
    }
    assert!(corrupted > 0, "no blobs found in {}", p.cache().display());
    let out = run(&p.dir(), &["build", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = recomputed(&report);
    assert!(r.iter().any(|(_, _, why)| why.contains("corrupt")), "{r:?}");
    // Rewritten: the next build reuses everything.
    assert_eq!(recomputed(&p.build_json()), vec![]);
}

#[test]
fn a_doctored_manifest_cannot_delete_files_outside_the_output() {
    let p = Project::new();
    p.build_json();
    let victim = p.tmp.path().join("victim.txt");
    std::fs::write(&victim, b"keep me").unwrap();
    let path = p.out().join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    m["files"].as_array_mut().unwrap().push(serde_json::json!({
        "path": "../../victim.txt", "blake3": "00", "size": 7
    }));
    std::fs::write(&path, m.to_string()).unwrap();
    p.build_json();
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
}

#[test]
fn cache_verify_repairs_a_corrupt_index() {
    let p = Project::new();
    p.build_json();
    let index = p.cache().join("index.sqlite");
    assert!(index.is_file(), "no index at {}", index.display());
    for f in ["index.sqlite-wal", "index.sqlite-shm"] {
        let _ = std::fs::remove_file(p.cache().join(f));
    }
    std::fs::write(&index, vec![0x42u8; 8192]).unwrap();
    // A build names the index and says what to do.
    let err = fails(&p.dir(), &["build"], 2);
    assert!(err.contains("index.sqlite"), "{err}");
    // Found and repaired: exit 3 (docs/CACHE.md).
    let out = run(&p.dir(), &["cache", "verify"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("rebuilt"), "{text}");
    // The blobs were adopted again; the build works (and re-derives what the index forgot).
    p.build_json();
    assert_eq!(recomputed(&p.build_json()), vec![]);
}
