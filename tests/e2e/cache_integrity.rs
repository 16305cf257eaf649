//! A damaged cache seen through the real `aps5` binary: remembered file hashes that are
//! damaged or wrong, blobs replaced by special files, `aps5 cache verify`'s exit status, and
//! the messages of I/O failures. The truth is outside aps5: blake3 of the dump's files (the
//! blake3 crate), a clean build of an untouched copy, and the OS's own error text.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;

/// The `files` rows (remembered hashes) of the cache whose path ends with `suffix`.
fn file_rows(cache: &Path, suffix: &str) -> Vec<String> {
    let conn = rusqlite::Connection::open(cache.join("index.sqlite")).unwrap();
    let mut stmt = conn.prepare("SELECT path FROM files").unwrap();
    let rows: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .filter(|p: &String| p.ends_with(suffix))
        .collect();
    rows
}

/// Flips one bit of the remembered hash of `path` in the index, as disk damage would.
fn flip_remembered_hash(cache: &Path, path: &str) {
    let conn = rusqlite::Connection::open(cache.join("index.sqlite")).unwrap();
    let mut h: Vec<u8> = conn
        .query_row("SELECT hash FROM files WHERE path = ?1", [path], |r| {
            r.get(0)
        })
        .unwrap();
    h[0] ^= 1;
    let n = conn
        .execute(
            "UPDATE files SET hash = ?1 WHERE path = ?2",
            rusqlite::params![h, path],
        )
        .unwrap();
    assert_eq!(n, 1);
}

/// The blake3 manifest.json gives for `rel`.
fn manifest_blake3(p: &Project, rel: &str) -> String {
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p.out().join("manifest.json")).unwrap()).unwrap();
    m["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == rel)
        .unwrap_or_else(|| panic!("{rel} not in the manifest"))["blake3"]
        .as_str()
        .unwrap()
        .to_string()
}

fn blake3_of(path: &Path) -> String {
    blake3::hash(&std::fs::read(path).unwrap())
        .to_hex()
        .to_string()
}

/// A clean build of an untouched copy of the sample: what every repaired build must equal.
fn reference() -> Project {
    let r = Project::new();
    r.build_json();
    r
}

#[test]
fn a_flipped_bit_in_a_remembered_hash_never_reaches_the_output() {
    let reference = reference();
    for rel in ["data/readme.txt", "eboot.bin", "sce_module/samplelib.prx"] {
        let p = Project::new();
        p.build_json();
        let rows = file_rows(&p.cache(), &format!("/game/{rel}"));
        assert_eq!(rows.len(), 1, "{rel}: {rows:?}");
        for row in &rows {
            flip_remembered_hash(&p.cache(), row);
        }
        // The build succeeds (no false "changed while reading").
        p.build_json();
        assert_eq!(tree(&p.out()), tree(&reference.out()), "{rel}");
        if !rel.starts_with("sce_module/") {
            // (A bundled module's output is its relinked form, not the dump file.)
            assert_eq!(
                manifest_blake3(&p, &format!("app0/{rel}")),
                blake3_of(&p.dir().join(rel)),
                "{rel}"
            );
        }
        // And the next build keeps it right.
        p.build_json();
        assert_eq!(
            tree(&p.out()),
            tree(&reference.out()),
            "{rel}, second build"
        );
        assert_eq!(run(&p.dir(), &["cache", "verify"]).status.code(), Some(0));
    }
}

/// Writes a remembered hash that is internally consistent but wrong (what a file rewritten
/// within the same mtime tick as its hashing leaves behind), through the cache's own API.
fn remember_wrong_hash(p: &Project, rel: &str) {
    let rows = file_rows(&p.cache(), &format!("/game/{rel}"));
    assert_eq!(rows.len(), 1, "{rel}: {rows:?}");
    let cache = aps5_cache::Cache::open(&p.cache()).unwrap();
    let stamp = aps5_cache::FileStamp::of(&p.dir().join(rel)).unwrap();
    let wrong = aps5_cache::ContentHash::of(b"some other bytes");
    cache
        .record_file_hashes(&[(rows[0].clone(), stamp, wrong)])
        .unwrap();
}

#[test]
fn a_wrong_remembered_hash_seen_by_the_build_is_repaired_not_blamed_on_the_user() {
    let reference = reference();
    // The executable (read by the relink once its memo entries are gone) and a data file in
    // copy mode (whose copy is checked against the hash).
    for rel in ["eboot.bin", "data/readme.txt"] {
        let p = Project::new();
        p.edit_config("link_mode = \"hardlink\"", "link_mode = \"copy\"");
        p.build_json();
        remember_wrong_hash(&p, rel);
        ok(&p.dir(), &["cache", "gc", "--max-size", "0"]);
        // Also drop the output so the copy is made again.
        std::fs::remove_dir_all(p.out()).unwrap();
        let out = run(&p.dir(), &["build", "--json"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{rel}: {err}");
        assert!(
            !err.contains("changed while"),
            "{rel}: blamed the user: {err}"
        );
        assert_eq!(tree(&p.out()), tree(&reference.out()), "{rel}");
        assert_eq!(
            manifest_blake3(&p, &format!("app0/{rel}")),
            blake3_of(&p.dir().join(rel))
        );
    }
}

#[test]
fn cache_verify_corrects_a_wrong_remembered_hash_and_exits_3() {
    let p = Project::new();
    p.build_json();
    remember_wrong_hash(&p, "data/readme.txt");
    let out = run(&p.dir(), &["cache", "verify"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(
        text.contains(&blake3_of(&p.dir().join("data/readme.txt"))),
        "{text}"
    );
    assert!(text.contains("all repaired"), "{text}");
    assert_eq!(run(&p.dir(), &["cache", "verify"]).status.code(), Some(0));
}

/// Every blob file of the cache.
fn blob_files(cache: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for shard in std::fs::read_dir(cache.join("blobs")).unwrap() {
        let shard = shard.unwrap().path();
        for f in std::fs::read_dir(&shard).unwrap() {
            out.push(f.unwrap().path());
        }
    }
    out
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

/// Address-space limit for a build over a damaged cache: far above a normal build, far below
/// what reading /dev/zero into memory reaches.
const BUILD_AS_LIMIT: u64 = 8 << 30;
const BUILD_DEADLINE: Duration = Duration::from_secs(300);

/// `aps5 build` under the limit and the deadline: (exit status or None if it hung, stderr,
/// peak RSS in KiB of the children waited for so far).
fn bounded_build(dir: &Path) -> (Option<std::process::ExitStatus>, String, i64) {
    let mut cmd = aps5();
    cmd.arg("-C")
        .arg(dir)
        .arg("build")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: BUILD_AS_LIMIT,
                rlim_max: BUILD_AS_LIMIT,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > BUILD_DEADLINE {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    // SAFETY: getrusage fills the struct we pass.
    let rss = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut u);
        u.ru_maxrss
    };
    (
        status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        rss,
    )
}

#[test]
fn special_file_blobs_keep_the_build_bounded_and_are_rewritten() {
    let reference = reference();
    let (mut tried, mut survived, mut lost) = (0, 0, Vec::new());
    for kind in ["symlink to /dev/zero", "FIFO", "directory"] {
        let p = Project::new();
        p.build_json();
        let blobs = blob_files(&p.cache());
        assert!(!blobs.is_empty());
        for b in &blobs {
            std::fs::remove_file(b).unwrap();
            match kind {
                "symlink to /dev/zero" => std::os::unix::fs::symlink("/dev/zero", b).unwrap(),
                "FIFO" => mkfifo(b),
                _ => std::fs::create_dir(b).unwrap(),
            }
        }
        tried += 1;
        let (status, err, rss_kib) = bounded_build(&p.dir());
        eprintln!("{kind}: peak RSS of the builds so far {rss_kib} KiB");
        // A build needs tens of MiB; reading /dev/zero would approach the limit.
        if rss_kib > 1 << 20 {
            lost.push(format!("{kind}: peak RSS {rss_kib} KiB"));
            continue;
        }
        match status {
            Some(s) if s.success() => {}
            Some(s) => {
                lost.push(format!("{kind}: build exited {s}: {err}"));
                continue;
            }
            None => {
                lost.push(format!("{kind}: build hung"));
                continue;
            }
        }
        if tree(&p.out()) != tree(&reference.out()) {
            lost.push(format!("{kind}: the output differs from a clean build"));
            continue;
        }
        // The build replaced what it read; verify removes the rest (exit 3) or finds
        // nothing left (exit 0); after that the cache is clean.
        let first = run(&p.dir(), &["cache", "verify"]);
        let code = first.status.code();
        let again = run(&p.dir(), &["cache", "verify"]);
        if !matches!(code, Some(0 | 3)) || again.status.code() != Some(0) {
            lost.push(format!(
                "{kind}: verify exited {code:?} then {:?}:\n{}\n{}",
                again.status.code(),
                String::from_utf8_lossy(&first.stdout),
                String::from_utf8_lossy(&again.stdout)
            ));
            continue;
        }
        assert_eq!(recomputed(&p.build_json()), vec![], "{kind}");
        survived += 1;
    }
    eprintln!(
        "special-file blobs under a build: tried {tried}, survived {survived}, lost {}",
        lost.len()
    );
    assert!(lost.is_empty(), "{}", lost.join("\n"));
}

#[test]
fn cache_verify_exit_status_says_whether_something_was_wrong() {
    let p = Project::new();
    p.build_json();
    // Nothing wrong: 0.
    let out = run(&p.dir(), &["cache", "verify"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("result:             clean"));
    // A corrupt blob: found and repaired, 3; then clean again.
    let blob = blob_files(&p.cache()).remove(0);
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[0] ^= 0x40;
    std::fs::write(&blob, bytes).unwrap();
    let out = run(&p.dir(), &["cache", "verify"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("corrupt (removed):  1"), "{text}");
    assert_eq!(run(&p.dir(), &["cache", "verify"]).status.code(), Some(0));
    // Something verify may not remove (a file that is not named like a blob): 2, and said.
    std::fs::write(p.cache().join("blobs/notes.txt"), b"mine").unwrap();
    let out = run(&p.dir(), &["cache", "verify"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("notes.txt") && text.contains("unrepaired"),
        "{text}"
    );
    assert!(p.cache().join("blobs/notes.txt").exists());
}

#[test]
fn an_index_failing_its_integrity_check_is_rebuilt_by_cache_verify() {
    let p = Project::new();
    p.build_json();
    {
        let conn = rusqlite::Connection::open(p.cache().join("index.sqlite")).unwrap();
        conn.execute_batch(
            "PRAGMA writable_schema = ON;
             UPDATE sqlite_schema SET sql = 'CREATE INDEX blobs_by_last_used ON blobs(size)'
               WHERE name = 'blobs_by_last_used';
             PRAGMA writable_schema = OFF;",
        )
        .unwrap();
    }
    let out = run(&p.dir(), &["cache", "verify"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("rebuilt from the blobs"), "{text}");
    let check: String = rusqlite::Connection::open(p.cache().join("index.sqlite"))
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    assert_eq!(run(&p.dir(), &["cache", "verify"]).status.code(), Some(0));
    p.build_json();
}

#[test]
fn an_executable_that_is_a_fifo_or_a_folder_is_named_as_such() {
    for (kind, word) in [("FIFO", "FIFO"), ("directory", "directory")] {
        let p = Project::new();
        let exe = p.dir().join("eboot.bin");
        std::fs::remove_file(&exe).unwrap();
        if kind == "FIFO" {
            mkfifo(&exe);
        } else {
            std::fs::create_dir(&exe).unwrap();
        }
        let err = fails(&p.dir(), &["build"], 2);
        assert!(
            err.contains(word) && err.contains("eboot.bin"),
            "{kind}: {err}"
        );
        assert!(!err.contains("missing"), "{kind}: {err}");
        // `aps5 init` of such a dump says the same.
        std::fs::remove_file(p.dir().join("aps5.toml")).unwrap();
        let err = fails(&p.dir(), &["init"], 2);
        assert!(
            err.contains(word) && err.contains("eboot.bin"),
            "{kind}: {err}"
        );
    }
}

#[test]
fn io_failures_print_the_os_text_once_and_never_an_empty_context() {
    let os = |errno| std::io::Error::from_raw_os_error(errno).to_string();
    // The cache folder cannot be created: a regular file is in the way.
    let p = Project::new();
    std::fs::write(p.tmp.path().join("afile"), b"").unwrap();
    p.edit_config("cache_dir = \"../cache\"", "cache_dir = \"../afile/cache\"");
    let err = fails(&p.dir(), &["build"], 2);
    assert_eq!(err.matches(&os(libc::ENOTDIR)).count(), 1, "{err}");

    // The output folder's generations cannot be made: a file is where `.aps5/out` goes.
    let p = Project::new();
    std::fs::create_dir_all(p.dir().join(".aps5")).unwrap();
    std::fs::write(p.dir().join(".aps5/out"), b"not a folder").unwrap();
    let err = fails(&p.dir(), &["build"], 2);
    let text = os(libc::EEXIST);
    assert_eq!(err.matches(&text).count(), 1, "{err}");

    // A blob cannot be written inside a query (every shard folder is a file): the message
    // starts with what failed, not with an empty path.
    let p = Project::new();
    std::fs::create_dir_all(p.cache().join("blobs")).unwrap();
    for i in 0..=255u8 {
        std::fs::write(p.cache().join(format!("blobs/{i:02x}")), b"").unwrap();
    }
    let err = fails(&p.dir(), &["build"], 2);
    assert!(err.contains("cannot write blob"), "{err}");
    assert!(!err.contains(": :") && !err.contains("error: :"), "{err}");
    assert_eq!(err.matches(&os(libc::ENOTDIR)).count(), 1, "{err}");
}

/// `aps5 cache gc --max-size` keeps the most recently used (issue 13 item 7): a data file
/// replaced between two builds leaves results of the first build (the dump's listing) in the
/// cache that no later build used; a limit one byte under the cache's size evicts one of
/// those, never one the second build used: with its output tree removed, the next build
/// recomputes exactly what it recomputes with no gc (writing the outputs), and gives the
/// same tree.
#[test]
fn cache_gc_evicts_what_the_last_build_did_not_use() {
    let rebuild = |gc: bool| {
        let p = Project::new();
        let big = p.dir().join("data/big.bin");
        std::fs::write(&big, vec![1u8; 64 << 10]).unwrap();
        p.build_json();
        std::fs::write(&big, vec![2u8; 64 << 10]).unwrap();
        p.build_json();
        let before = tree(&p.out());
        if gc {
            let bytes = aps5_cache::Cache::open(&p.cache())
                .unwrap()
                .stats()
                .unwrap()
                .blob_bytes;
            let report = ok(
                &p.dir(),
                &["cache", "gc", "--max-size", &(bytes - 1).to_string()],
            );
            assert!(report.contains("evicted:            1 blobs"), "{report}");
        }
        std::fs::remove_dir_all(p.out()).unwrap();
        let mut again = recomputed(&p.build_json());
        again.sort();
        assert_eq!(tree(&p.out()), before);
        ok(&p.dir(), &["cache", "verify"]);
        again
    };
    let plain = rebuild(false);
    assert!(!plain.is_empty());
    assert_eq!(rebuild(true), plain);
}

/// `aps5 cache verify` re-hashes every blob (issue 13 item 7): one byte flipped in each blob
/// file (their sizes kept) is found, reported as corrupt and removed (exit 3); the next
/// build recomputes what they held and gives the reference's tree; a second verify is clean.
#[test]
fn cache_verify_rehashes_every_blob_and_removes_a_flipped_one() {
    let p = Project::new();
    p.build_json();
    let blobs = blob_files(&p.cache());
    assert!(!blobs.is_empty());
    for b in &blobs {
        let mut bytes = std::fs::read(b).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x10;
        std::fs::write(b, &bytes).unwrap();
    }
    let out = run(&p.dir(), &["cache", "verify"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(
        text.contains(&format!("corrupt (removed):  {}", blobs.len())),
        "{text}"
    );
    std::fs::remove_dir_all(p.out()).unwrap();
    let report = p.build_json();
    assert!(
        recomputed(&report)
            .iter()
            .any(|(q, _, why)| q == "module" && why == "cache miss"),
        "{report:#}"
    );
    assert_eq!(tree(&p.out()), tree(&reference().out()));
    let again = run(&p.dir(), &["cache", "verify"]);
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
}
