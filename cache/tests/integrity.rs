//! Damaged cache state that must never reach a caller as wrong bytes, a hang or a flood of
//! memory: special files in place of blobs (links, FIFOs, folders, wrong sizes), damaged or
//! wrong remembered file hashes, an index that fails SQLite's own integrity check or is not a
//! regular file, and the outcome (exit status) `verify` reports for each.
//!
//! Blob reads of special files run in a child process (this test binary re-executed with
//! `APS5_CACHE_INTEGRITY_CHILD` set) under an address-space limit and a deadline, so a read
//! that is unbounded or blocks fails the test instead of the machine.

mod common;

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use aps5_cache::{Cache, CacheError, ContentHash, FileStamp, Lookup, MemoKey, VerifyOutcome};

const CHILD_ENV: &str = "APS5_CACHE_INTEGRITY_CHILD";
/// Address-space limit of the child: a read of /dev/zero or of a sparse 1 TiB file hits it
/// long before the machine notices.
const CHILD_AS_LIMIT: u64 = 2 << 30;
/// Generous for a loaded CI box; a blocked read never ends.
const CHILD_DEADLINE: Duration = Duration::from_secs(120);

fn key(n: u64) -> MemoKey {
    MemoKey::new("integrity", "1", &[ContentHash::of(&n.to_le_bytes())], b"")
}

fn memo_value(n: u64) -> Vec<u8> {
    common::pseudo_bytes(n, 3000 + n as usize * 17)
}

fn blob_value(n: u64) -> Vec<u8> {
    common::pseudo_bytes(1000 + n, 5000 + n as usize * 13)
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

/// The ways a blob file can be replaced by something that must not be read as it is.
const KINDS: &[&str] = &[
    "symlink to /dev/zero",
    "FIFO",
    "directory",
    "truncated",
    "oversized",
    "sparse 1 TiB",
    "symlink to a good copy",
];

/// Replaces the blob file at `path` (whose right bytes are `good`) with `kind`.
fn damage(path: &Path, kind: &str, good: &[u8], spare: &Path) {
    fs::remove_file(path).unwrap();
    match kind {
        "symlink to /dev/zero" => std::os::unix::fs::symlink("/dev/zero", path).unwrap(),
        "FIFO" => mkfifo(path),
        "directory" => {
            fs::create_dir(path).unwrap();
            fs::write(path.join("inside"), b"x").unwrap();
        }
        "truncated" => fs::write(path, &good[..good.len() / 2]).unwrap(),
        "oversized" => {
            let mut more = good.to_vec();
            more.extend_from_slice(&[0u8; 4096]);
            fs::write(path, more).unwrap();
        }
        "sparse 1 TiB" => {
            let f = fs::File::create(path).unwrap();
            f.set_len(1 << 40).unwrap();
        }
        "symlink to a good copy" => {
            fs::write(spare, good).unwrap();
            std::os::unix::fs::symlink(spare, path).unwrap();
        }
        other => panic!("unknown kind {other}"),
    }
}

/// One cache per kind, each with a memo entry and a plain blob whose files are damaged.
fn prepared(root: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for (i, kind) in KINDS.iter().enumerate() {
        let dir = root.join(format!("cache{i}"));
        let cache = Cache::open(&dir).unwrap();
        let n = i as u64;
        let m = cache.memo_put(&key(n), &memo_value(n)).unwrap();
        let b = cache.put_blob(&blob_value(n)).unwrap();
        damage(
            &cache.blob_path(&m),
            kind,
            &memo_value(n),
            &root.join(format!("spare{i}a")),
        );
        damage(
            &cache.blob_path(&b),
            kind,
            &blob_value(n),
            &root.join(format!("spare{i}b")),
        );
        out.push((kind.to_string(), dir));
    }
    out
}

/// Child side: reads the damaged entries of the cache in `$CHILD_ENV` (`<index>:<dir>`),
/// expects `Corrupt` for both, stores them again and expects hits.
#[test]
fn child_reads_damaged_entries() {
    let Ok(arg) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (n, dir) = arg.split_once(':').unwrap();
    let n: u64 = n.parse().unwrap();
    let cache = Cache::open(Path::new(dir)).unwrap();
    let hash = ContentHash::of(&blob_value(n));
    assert_eq!(
        cache.memo_get(&key(n)).unwrap(),
        Lookup::Corrupt,
        "memo_get"
    );
    assert_eq!(cache.get_blob(&hash).unwrap(), Lookup::Corrupt, "get_blob");
    // Rewritten on the next store, then served.
    cache.memo_put(&key(n), &memo_value(n)).unwrap();
    cache.put_blob(&blob_value(n)).unwrap();
    assert_eq!(cache.memo_get(&key(n)).unwrap(), Lookup::Hit(memo_value(n)));
    assert_eq!(cache.get_blob(&hash).unwrap(), Lookup::Hit(blob_value(n)));
    println!("CHILD-OK");
}

/// A child reading a few small blobs needs a few MiB; 256 MiB is far from both.
const CHILD_RSS_LIMIT_KIB: i64 = 256 << 10;

/// The largest peak RSS of the children waited for so far (only this test spawns any).
fn peak_child_rss_kib() -> i64 {
    // SAFETY: getrusage fills the struct we pass.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut u);
        u.ru_maxrss
    }
}

#[test]
fn special_file_blobs_are_corrupt_bounded_and_rewritten() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let (mut tried, mut survived) = (0, 0);
    let mut lost: Vec<String> = Vec::new();
    for (i, (kind, dir)) in prepared(root.path()).into_iter().enumerate() {
        tried += 1;
        let mut child = Command::new(std::env::current_exe().unwrap());
        child
            .args(["--exact", "child_reads_damaged_entries", "--nocapture"])
            .env(CHILD_ENV, format!("{i}:{}", dir.display()))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: setrlimit only, between fork and exec.
        unsafe {
            child.pre_exec(|| {
                let lim = libc::rlimit {
                    rlim_cur: CHILD_AS_LIMIT,
                    rlim_max: CHILD_AS_LIMIT,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = child.spawn().unwrap();
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break Some(s);
            }
            if start.elapsed() > CHILD_DEADLINE {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = child.wait_with_output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut problems = Vec::new();
        match status {
            Some(s) if s.success() && text.contains("CHILD-OK") => {}
            Some(s) => problems.push(format!("{kind}: child exited {s}:\n{text}")),
            None => problems.push(format!("{kind}: the read hung for {CHILD_DEADLINE:?}")),
        }
        // Bounded: the child's peak RSS (the largest of the children so far) stays small;
        // reading /dev/zero until the address-space limit would take it near the limit.
        let rss = peak_child_rss_kib();
        if rss > CHILD_RSS_LIMIT_KIB {
            problems.push(format!("{kind}: peak RSS {rss} KiB"));
        }
        // Whatever was there is now the right regular file.
        let cache = Cache::open(&dir).unwrap();
        let path = cache.blob_path(&ContentHash::of(&memo_value(i as u64)));
        if !fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            problems.push(format!("{kind}: {} is not a regular file", path.display()));
        }
        if problems.is_empty() {
            survived += 1;
        } else {
            lost.push(problems.join("\n"));
        }
    }
    eprintln!(
        "special-file blobs: tried {tried}, survived {survived}, lost {}; peak child RSS {} KiB",
        lost.len(),
        peak_child_rss_kib()
    );
    assert!(lost.is_empty(), "{}", lost.join("\n"));
}

#[test]
fn verify_removes_special_file_entries_and_reports_repaired() {
    let root = tempfile::tempdir().unwrap();
    for (kind, dir) in prepared(root.path()) {
        let cache = Cache::open(&dir).unwrap();
        let report = cache.verify().unwrap();
        // The damaged memo blob and the damaged plain blob.
        let bad = report.bad_entries.len() + report.corrupt.len();
        assert_eq!(bad, 2, "{kind}:\n{report}");
        assert!(
            report.bad_entries.iter().all(|b| b.removed),
            "{kind}:\n{report}"
        );
        assert_eq!(
            report.outcome(),
            VerifyOutcome::Repaired,
            "{kind}:\n{report}"
        );
        assert_eq!(report.outcome().exit_code(), 3);
        let text = report.to_string();
        assert!(text.contains("all repaired"), "{kind}:\n{text}");
        // Nothing left behind in the blob namespace but regular files; a second pass is clean.
        let again = cache.verify().unwrap();
        assert_eq!(again.outcome(), VerifyOutcome::Clean, "{kind}:\n{again}");
        assert_eq!(again.outcome().exit_code(), 0);
        assert_eq!(cache.memo_get(&key(0)).unwrap().hit(), None, "{kind}");
    }
}

#[test]
fn verify_removes_a_linked_shard_folder_without_touching_its_target() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("cache");
    let cache = Cache::open(&dir).unwrap();
    let h = cache.put_blob(b"in a shard").unwrap();
    let shard = cache.blob_path(&h).parent().unwrap().to_path_buf();
    // The shard folder is replaced by a link to a folder outside the cache holding a file
    // named like the blob but with other bytes.
    let outside = root.path().join("outside");
    fs::rename(&shard, &outside).unwrap();
    fs::write(
        outside.join(cache.blob_path(&h).file_name().unwrap()),
        b"not it!!!!",
    )
    .unwrap();
    std::os::unix::fs::symlink(&outside, &shard).unwrap();
    assert_eq!(cache.get_blob(&h).unwrap(), Lookup::Corrupt);
    let report = cache.verify().unwrap();
    assert_eq!(report.outcome(), VerifyOutcome::Repaired, "{report}");
    assert!(fs::symlink_metadata(&shard).is_err(), "the link stayed");
    assert_eq!(
        fs::read_dir(&outside).unwrap().count(),
        0,
        "only the link is removed"
    );
}

fn index(dir: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(dir.join("index.sqlite")).unwrap()
}

/// A real file, its stamp and its blake3 (computed by the blake3 crate, not by the cache).
fn real_file(dir: &Path, name: &str, bytes: &[u8]) -> (String, FileStamp, ContentHash) {
    let path = dir.join(name);
    fs::write(&path, bytes).unwrap();
    (
        path.display().to_string(),
        FileStamp::of(&path).unwrap(),
        ContentHash(*blake3::hash(bytes).as_bytes()),
    )
}

#[test]
fn a_flipped_bit_in_a_remembered_file_hash_is_never_trusted() {
    let root = tempfile::tempdir().unwrap();
    let dump = root.path().join("dump");
    fs::create_dir(&dump).unwrap();
    let dir = root.path().join("cache");
    let rows: Vec<_> = (0..6)
        .map(|i| {
            real_file(
                &dump,
                &format!("f{i}"),
                &common::pseudo_bytes(i, 100 + i as usize),
            )
        })
        .collect();
    let prefix = format!("{}/", dump.display());
    {
        let cache = Cache::open(&dir).unwrap();
        cache.record_file_hashes(&rows).unwrap();
        assert_eq!(cache.file_hashes_under(&prefix).unwrap().len(), 6);
    }
    // Flip one bit in each column of its own row, the way disk or memory damage would.
    let conn = index(&dir);
    let flip = |sql: &str, path: &str| {
        assert_eq!(conn.execute(sql, [path]).unwrap(), 1, "{sql}");
    };
    let mut h: Vec<u8> = conn
        .query_row(
            "SELECT hash FROM files WHERE path = ?1",
            [&rows[0].0],
            |r| r.get(0),
        )
        .unwrap();
    h[7] ^= 0x10;
    conn.execute(
        "UPDATE files SET hash = ?1 WHERE path = ?2",
        rusqlite::params![h, &rows[0].0],
    )
    .unwrap();
    // SQLite has no XOR operator: (a | m) - (a & m) flips the bits of m.
    flip(
        "UPDATE files SET row_check = (row_check | 1) - (row_check & 1) WHERE path = ?1",
        &rows[1].0,
    );
    flip(
        "UPDATE files SET size = (size | 2) - (size & 2) WHERE path = ?1",
        &rows[2].0,
    );
    flip(
        "UPDATE files SET mtime_ns = (mtime_ns | 1) - (mtime_ns & 1) WHERE path = ?1",
        &rows[3].0,
    );
    flip(
        "UPDATE files SET inode = (inode | 4) - (inode & 4) WHERE path = ?1",
        &rows[4].0,
    );
    drop(conn);

    let cache = Cache::open(&dir).unwrap();
    let back = cache.file_hashes_under(&prefix).unwrap();
    // Every surviving answer is the true hash of the file; damaged rows are simply unknown.
    for (path, stamp, hash) in &rows {
        if let Some((s, h)) = back.get(path) {
            assert_eq!((s, h), (stamp, hash), "{path}: a damaged row was trusted");
        }
    }
    assert_eq!(back.len(), 1, "only the untouched row: {back:?}");
    assert!(back.contains_key(&rows[5].0));

    // verify drops the damaged rows and reports them as found and repaired.
    let report = cache.verify().unwrap();
    assert_eq!(report.file_rows_checked, 6, "{report}");
    assert_eq!(report.file_rows.len(), 5, "{report}");
    assert_eq!(report.outcome(), VerifyOutcome::Repaired, "{report}");
    assert_eq!(cache.stats().unwrap().file_hash_entries, 1);
    assert_eq!(cache.verify().unwrap().outcome(), VerifyOutcome::Clean);
}

#[test]
fn verify_corrects_a_consistent_but_wrong_remembered_hash_and_drops_stale_rows() {
    let root = tempfile::tempdir().unwrap();
    let cache = Cache::open(&root.path().join("cache")).unwrap();
    let (path, stamp, truth) = real_file(root.path(), "data.bin", b"the real bytes");
    let (stale_path, stale_stamp, stale_hash) = real_file(root.path(), "stale.bin", b"before");
    // A row that is internally consistent but names other bytes (what a write in the same
    // mtime tick as the hashing leaves behind), and a row of a file that changed since.
    let wrong = ContentHash(*blake3::hash(b"other bytes").as_bytes());
    cache
        .record_file_hashes(&[
            (path.clone(), stamp, wrong),
            (stale_path.clone(), stale_stamp, stale_hash),
        ])
        .unwrap();
    fs::write(&stale_path, b"after, longer").unwrap();
    let report = cache.verify().unwrap();
    assert_eq!(report.file_rows.len(), 1, "{report}");
    assert!(
        report.file_rows[0].problem.contains(&truth.to_hex()),
        "{report}"
    );
    assert_eq!(report.file_rows_stale, 1, "{report}");
    assert_eq!(report.outcome(), VerifyOutcome::Repaired);
    let back = cache
        .file_hashes_under(&format!("{}/", root.path().display()))
        .unwrap();
    assert_eq!(
        back.get(&path),
        Some(&(stamp, truth)),
        "corrected to the file's blake3"
    );
    assert!(!back.contains_key(&stale_path), "stale row dropped");
    assert_eq!(cache.verify().unwrap().outcome(), VerifyOutcome::Clean);
}

#[test]
fn an_index_that_fails_integrity_check_is_rebuilt_by_verify_dir() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("cache");
    let blobs: Vec<ContentHash> = {
        let cache = Cache::open(&dir).unwrap();
        (0..20)
            .map(|i| cache.memo_put(&key(i), &memo_value(i)).unwrap())
            .collect()
    };
    // Make the index's b-tree disagree with its table: SQLite opens it happily, and its own
    // integrity_check (the oracle) reports the mismatch.
    {
        let conn = index(&dir);
        conn.execute_batch(
            "PRAGMA writable_schema = ON;
             UPDATE sqlite_schema SET sql = 'CREATE INDEX blobs_by_last_used ON blobs(size)'
               WHERE name = 'blobs_by_last_used';
             PRAGMA writable_schema = OFF;",
        )
        .unwrap();
    }
    {
        let conn = index(&dir);
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_ne!(check, "ok", "the damage did not take");
    }
    assert!(Cache::open(&dir).is_ok(), "the damaged index still opens");
    let report = Cache::verify_dir(&dir).unwrap();
    assert!(!report.index_problems.is_empty(), "{report}");
    let aside = report.index_rebuilt.clone().expect("rebuilt");
    assert!(
        aside.exists(),
        "the old index is kept at {}",
        aside.display()
    );
    assert_eq!(report.outcome(), VerifyOutcome::Repaired, "{report}");
    assert!(
        report.to_string().contains("rebuilt from the blobs"),
        "{report}"
    );
    // The blobs were adopted into the new index (the memo rows are gone with the old one).
    let cache = Cache::open(&dir).unwrap();
    for h in &blobs {
        assert!(cache.get_blob(h).unwrap().hit().is_some());
    }
    let check: String = index(&dir)
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(cache);
    assert_eq!(
        Cache::verify_dir(&dir).unwrap().outcome(),
        VerifyOutcome::Clean
    );
}

/// Runs `f` on a thread and fails if it has not returned within the deadline (a FIFO).
fn within_deadline<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(CHILD_DEADLINE)
        .unwrap_or_else(|_| panic!("{what} hung"))
}

#[test]
fn an_index_that_is_not_a_regular_file_is_refused_and_rebuilt() {
    for kind in ["FIFO", "directory", "symlink"] {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("cache");
        let h = Cache::open(&dir).unwrap().put_blob(b"kept").unwrap();
        for f in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"] {
            let _ = fs::remove_file(dir.join(f));
        }
        let index = dir.join("index.sqlite");
        let elsewhere = root.path().join("elsewhere.sqlite");
        match kind {
            "FIFO" => mkfifo(&index),
            "directory" => fs::create_dir(&index).unwrap(),
            _ => {
                fs::write(&elsewhere, b"").unwrap();
                std::os::unix::fs::symlink(&elsewhere, &index).unwrap();
            }
        }
        let d = dir.clone();
        let err = within_deadline("open", move || Cache::open(&d).err()).expect("refused");
        assert!(
            matches!(err, CacheError::IndexNotAFile { .. }),
            "{kind}: {err:?}"
        );
        assert!(err.to_string().contains("aps5 cache verify"), "{err}");
        let d = dir.clone();
        let report = within_deadline("verify", move || Cache::verify_dir(&d).unwrap());
        assert_eq!(
            report.outcome(),
            VerifyOutcome::Repaired,
            "{kind}: {report}"
        );
        assert_eq!(report.adopted.len(), 1, "{kind}: {report}");
        assert!(fs::symlink_metadata(&index).unwrap().is_file(), "{kind}");
        if kind == "symlink" {
            assert_eq!(
                fs::read(&elsewhere).unwrap(),
                b"",
                "the link's target was written"
            );
        }
        let cache = Cache::open(&dir).unwrap();
        assert_eq!(cache.get_blob(&h).unwrap(), Lookup::Hit(b"kept".to_vec()));
    }
}

#[test]
fn a_version_1_index_is_migrated_and_its_file_rows_dropped() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("cache");
    let h = Cache::open(&dir).unwrap().put_blob(b"survives").unwrap();
    // Turn the index back into the v1 layout (files without row_check), with one row.
    {
        let conn = index(&dir);
        conn.execute_batch(
            "DROP TABLE files;
             CREATE TABLE files (path TEXT PRIMARY KEY NOT NULL, size INTEGER NOT NULL,
               mtime_ns INTEGER NOT NULL, inode INTEGER NOT NULL, hash BLOB NOT NULL) WITHOUT ROWID;
             INSERT INTO files VALUES ('/d/x', 1, 2, 3, zeroblob(32));
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let cache = Cache::open(&dir).unwrap();
    let conn = index(&dir);
    let v: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 2);
    assert!(cache.file_hashes_under("/d/").unwrap().is_empty());
    assert_eq!(
        cache.get_blob(&h).unwrap(),
        Lookup::Hit(b"survives".to_vec())
    );
    let rows = vec![(
        "/d/y".to_string(),
        FileStamp {
            size: 1,
            mtime_ns: 2,
            inode: 3,
        },
        h,
    )];
    cache.record_file_hashes(&rows).unwrap();
    assert_eq!(cache.file_hashes_under("/d/").unwrap().len(), 1);
}

#[test]
fn io_errors_carry_the_os_text_once() {
    use std::error::Error;
    let root = tempfile::tempdir().unwrap();
    // A regular file where the cache folder should be.
    let file = root.path().join("not-a-folder");
    fs::write(&file, b"").unwrap();
    let err = Cache::open(&file.join("cache")).err().expect("fails");
    let os = std::io::Error::from_raw_os_error(libc::ENOTDIR).to_string();
    let mut chain = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        chain.push_str(&format!(": {s}"));
        source = s.source();
    }
    assert_eq!(chain.matches(&os).count(), 1, "{chain}");
}
