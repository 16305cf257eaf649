//! The cache in one process: round trips, corruption, missing blobs, gc, file hashes,
//! verify, temp leftovers and error messages.

mod common;

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use aps5_cache::{Cache, CacheError, ContentHash, FileStamp, Lookup, MemoKey};

fn key(n: u64) -> MemoKey {
    MemoKey::new("test-query", "1", &[ContentHash::of(&n.to_le_bytes())], b"")
}

fn blob_files(cache: &Cache) -> usize {
    let mut n = 0;
    for shard in fs::read_dir(cache.dir().join("blobs")).unwrap() {
        n += fs::read_dir(shard.unwrap().path()).unwrap().count();
    }
    n
}

#[test]
fn round_trip_blobs_and_memo() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    assert!(cache.dir().is_absolute());

    let data = common::pseudo_bytes(1, 10_000);
    let h = cache.put_blob(&data).unwrap();
    assert_eq!(h, ContentHash::of(&data));
    // Sharded layout: blobs/<2 hex>/<62 hex>.
    let hex = h.to_hex();
    let path = dir.path().join("blobs").join(&hex[..2]).join(&hex[2..]);
    assert_eq!(cache.blob_path(&h), path);
    assert_eq!(fs::read(&path).unwrap(), data);
    assert_eq!(cache.get_blob(&h).unwrap(), Lookup::Hit(data.clone()));
    assert_eq!(
        cache.get_blob(&ContentHash::of(b"never stored")).unwrap(),
        Lookup::Miss
    );

    // Empty blobs are blobs too.
    let empty = cache.put_blob(b"").unwrap();
    assert_eq!(cache.get_blob(&empty).unwrap(), Lookup::Hit(Vec::new()));

    assert_eq!(cache.memo_get(&key(1)).unwrap(), Lookup::Miss);
    let mh = cache.memo_put(&key(1), &data).unwrap();
    assert_eq!(mh, h, "memo results are ordinary content-addressed blobs");
    assert_eq!(cache.memo_get(&key(1)).unwrap(), Lookup::Hit(data.clone()));
    // Overwriting a key re-points it.
    cache.memo_put(&key(1), b"second").unwrap();
    assert_eq!(
        cache.memo_get(&key(1)).unwrap(),
        Lookup::Hit(b"second".to_vec())
    );
    // Storing the same bytes twice keeps one file.
    cache.memo_put(&key(2), &data).unwrap();
    assert_eq!(blob_files(&cache), 3);

    let stats = cache.stats().unwrap();
    assert_eq!(stats.blobs, 3);
    assert_eq!(stats.blob_bytes, 10_000 + 6);
    assert_eq!(stats.memo_entries, 2);
    assert_eq!(stats.file_hash_entries, 0);
    let text = stats.to_string();
    assert!(text.contains("blobs:              3"), "{text}");
    assert!(text.contains(&dir.path().display().to_string()), "{text}");
    drop(cache);

    // A second open sees everything.
    let cache = Cache::open(dir.path()).unwrap();
    assert_eq!(cache.memo_get(&key(2)).unwrap(), Lookup::Hit(data));
    assert!(dir.path().join("CACHEDIR.TAG").exists());
    let no_temps = fs::read_dir(dir.path().join("tmp")).unwrap().count();
    assert_eq!(no_temps, 0, "no temp file is left after successful writes");
}

#[test]
fn batch_puts_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    let values: Vec<Vec<u8>> = (0..40u64)
        .map(|i| common::pseudo_bytes(500 + i % 30, 100 + (i as usize % 30) * 50))
        .collect();
    // 40 entries, 30 distinct values: duplicates inside one batch are written concurrently.
    let entries: Vec<(MemoKey, &[u8])> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (key(i as u64), v.as_slice()))
        .collect();
    let hashes = cache.memo_put_many(&entries).unwrap();
    assert_eq!(hashes.len(), 40);
    for (i, v) in values.iter().enumerate() {
        assert_eq!(hashes[i], ContentHash::of(v));
        assert_eq!(
            cache.memo_get(&key(i as u64)).unwrap(),
            Lookup::Hit(v.clone())
        );
    }
    let stats = cache.stats().unwrap();
    assert_eq!((stats.blobs, stats.memo_entries), (30, 40));
    assert_eq!(blob_files(&cache), 30);

    let raw: Vec<&[u8]> = vec![b"x", b"yy", b"x", b""];
    let hs = cache.put_blobs(&raw).unwrap();
    assert_eq!(hs[0], hs[2]);
    for (b, h) in raw.iter().zip(&hs) {
        assert_eq!(cache.get_blob(h).unwrap(), Lookup::Hit(b.to_vec()));
    }
    assert_eq!(cache.stats().unwrap().blobs, 33);
    assert!(cache.put_blobs(&[]).unwrap().is_empty());
    assert!(cache.memo_put_many(&[]).unwrap().is_empty());
    assert!(cache.verify().unwrap().is_clean());
}

#[test]
fn cache_is_shared_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Cache>();
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let cache = &cache;
            s.spawn(move || {
                for i in 0..50u64 {
                    let k = (i * 7 + t) % 20;
                    let want = common::pseudo_bytes(k, 1000 + k as usize);
                    match cache.memo_get(&key(k)).unwrap() {
                        Lookup::Hit(got) => assert_eq!(got, want),
                        Lookup::Miss => {
                            cache.memo_put(&key(k), &want).unwrap();
                        }
                        Lookup::Corrupt => panic!("corrupt blob in a healthy cache"),
                    }
                }
            });
        }
    });
    assert!(cache.verify().unwrap().is_clean());
    assert_eq!(cache.stats().unwrap().memo_entries, 20);
}

fn flip_byte(path: &Path, at: usize) {
    let mut bytes = fs::read(path).unwrap();
    bytes[at] ^= 0x40;
    fs::write(path, bytes).unwrap();
}

#[test]
fn flipped_byte_is_corrupt_reported_removed_and_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    let data = common::pseudo_bytes(2, 5000);
    let h = cache.memo_put(&key(1), &data).unwrap();
    let path = cache.blob_path(&h);
    flip_byte(&path, 1234);

    let (lookup, logs) = common::capture_logs(|| cache.memo_get(&key(1)).unwrap());
    assert_eq!(lookup, Lookup::Corrupt);
    assert!(logs.contains("WARN"), "{logs}");
    assert!(
        logs.contains(&path.display().to_string()),
        "warning names the blob: {logs}"
    );
    assert!(
        logs.contains(&h.to_hex()),
        "warning names the expected hash: {logs}"
    );
    assert!(!path.exists(), "the corrupt blob is deleted");
    assert_eq!(cache.memo_get(&key(1)).unwrap(), Lookup::Miss);

    // The caller recomputes and stores again.
    cache.memo_put(&key(1), &data).unwrap();
    assert_eq!(fs::read(&path).unwrap(), data);
    assert_eq!(cache.memo_get(&key(1)).unwrap(), Lookup::Hit(data));
}

#[test]
fn truncated_blob_is_corrupt_then_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    let data = common::pseudo_bytes(3, 70_000);
    let h = cache.memo_put(&key(1), &data).unwrap();
    let path = cache.blob_path(&h);
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(30_000)
        .unwrap();
    assert_eq!(cache.get_blob(&h).unwrap(), Lookup::Corrupt);
    assert!(!path.exists());
    assert_eq!(cache.memo_get(&key(1)).unwrap(), Lookup::Miss);
    cache.memo_put(&key(1), &data).unwrap();
    assert_eq!(cache.memo_get(&key(1)).unwrap(), Lookup::Hit(data));
}

#[test]
fn same_size_corruption_is_healed_by_the_next_read() {
    // A put that finds a same-size file trusts it (no read-back); the next read catches it.
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    let data = common::pseudo_bytes(4, 4096);
    let h = cache.put_blob(&data).unwrap();
    flip_byte(&cache.blob_path(&h), 0);
    cache.memo_put(&key(9), &data).unwrap();
    assert_eq!(cache.memo_get(&key(9)).unwrap(), Lookup::Corrupt);
    cache.memo_put(&key(9), &data).unwrap();
    assert_eq!(cache.memo_get(&key(9)).unwrap(), Lookup::Hit(data));
}

#[test]
fn missing_blob_with_index_row_is_a_miss() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    let data = common::pseudo_bytes(5, 3000);
    let h = cache.memo_put(&key(1), &data).unwrap();
    let other = cache.put_blob(b"other").unwrap();
    fs::remove_file(cache.blob_path(&h)).unwrap();
    fs::remove_file(cache.blob_path(&other)).unwrap();
    assert_eq!(cache.memo_get(&key(1)).unwrap(), Lookup::Miss);
    assert_eq!(cache.get_blob(&other).unwrap(), Lookup::Miss);
    // Both stale rows are gone.
    let stats = cache.stats().unwrap();
    assert_eq!((stats.blobs, stats.memo_entries), (0, 0));
    cache.memo_put(&key(1), &data).unwrap();
    assert_eq!(cache.memo_get(&key(1)).unwrap(), Lookup::Hit(data));
}

#[test]
fn gc_evicts_least_recently_used_first() {
    let dir = tempfile::tempdir().unwrap();
    let blobs: Vec<Vec<u8>> = (0..10)
        .map(|i| common::pseudo_bytes(100 + i, 1000))
        .collect();
    let hashes: Vec<ContentHash>;
    {
        let cache = Cache::open(dir.path()).unwrap();
        hashes = blobs
            .iter()
            .enumerate()
            .map(|(i, b)| cache.memo_put(&key(i as u64), b).unwrap())
            .collect();
    }
    {
        // Another process (a fresh Cache) reads 4, 3, 2, 1, 0 in that order.
        let cache = Cache::open(dir.path()).unwrap();
        for i in (0..5).rev() {
            assert!(matches!(
                cache.get_blob(&hashes[i]).unwrap(),
                Lookup::Hit(_)
            ));
        }
    }
    let cache = Cache::open(dir.path()).unwrap();
    // LRU order is now 5, 6, 7, 8, 9 (written, never read), then 4, 3, 2, 1, 0.
    let report = cache.gc(6000).unwrap();
    assert_eq!(report.blobs_before, 10);
    assert_eq!(report.bytes_before, 10_000);
    assert_eq!(report.evicted_blobs, 4);
    assert_eq!(report.evicted_bytes, 4000);
    assert_eq!(report.memo_removed, 4);
    assert_eq!((report.blobs_after, report.bytes_after), (6, 6000));
    assert!(
        report.to_string().contains("evicted:            4 blobs"),
        "{report}"
    );
    let alive = |cache: &Cache| -> Vec<usize> {
        (0..10)
            .filter(|&i| cache.blob_path(&hashes[i]).exists())
            .collect()
    };
    assert_eq!(alive(&cache), vec![0, 1, 2, 3, 4, 9]);
    for i in 5..9 {
        assert_eq!(cache.memo_get(&key(i as u64)).unwrap(), Lookup::Miss);
    }

    let report = cache.gc(3000).unwrap();
    assert_eq!(report.evicted_blobs, 3);
    assert_eq!(alive(&cache), vec![0, 1, 2]);
    for (i, blob) in blobs.iter().enumerate().take(3) {
        assert_eq!(
            cache.memo_get(&key(i as u64)).unwrap(),
            Lookup::Hit(blob.clone())
        );
    }
    assert_eq!(cache.stats().unwrap().blob_bytes, 3000);
    // Under the limit already: nothing to do.
    assert_eq!(cache.gc(1 << 30).unwrap().evicted_blobs, 0);
    assert_eq!(cache.gc(0).unwrap().bytes_after, 0);
    assert_eq!(blob_files(&cache), 0);
}

#[test]
fn file_hashes_round_trip_by_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    let stamp = |i: u64| FileStamp {
        size: i * 1000,
        mtime_ns: 1_700_000_000_000_000_000 + i as i64,
        inode: 1000 + i,
    };
    let rows: Vec<(String, FileStamp, ContentHash)> = vec![
        ("/d/a/x.bin".into(), stamp(1), ContentHash::of(b"1")),
        ("/d/a/sub/y.bin".into(), stamp(2), ContentHash::of(b"2")),
        ("/d/a/ü.bin".into(), stamp(3), ContentHash::of(b"3")),
        ("/d/a".into(), stamp(4), ContentHash::of(b"4")),
        ("/d/ab/z".into(), stamp(5), ContentHash::of(b"5")),
        ("/d/b".into(), stamp(6), ContentHash::of(b"6")),
        // Extremes survive the trip through SQLite's signed integers.
        (
            "/d/a/extreme".into(),
            FileStamp {
                size: u64::MAX,
                mtime_ns: -5,
                inode: u64::MAX - 1,
            },
            ContentHash([0xff; 32]),
        ),
    ];
    cache.record_file_hashes(&rows).unwrap();
    let under = cache.file_hashes_under("/d/a/").unwrap();
    let want: HashMap<String, (FileStamp, ContentHash)> = rows
        .iter()
        .filter(|r| r.0.starts_with("/d/a/"))
        .map(|r| (r.0.clone(), (r.1, r.2)))
        .collect();
    assert_eq!(want.len(), 4);
    assert_eq!(under, want);
    assert_eq!(cache.file_hashes_under("").unwrap().len(), rows.len());
    assert_eq!(cache.file_hashes_under("/d/a").unwrap().len(), 6);
    assert!(cache.file_hashes_under("/nothing").unwrap().is_empty());

    // Re-recording replaces.
    let newer = ("/d/a/x.bin".to_string(), stamp(9), ContentHash::of(b"new"));
    cache
        .record_file_hashes(std::slice::from_ref(&newer))
        .unwrap();
    drop(cache);
    let cache = Cache::open(dir.path()).unwrap();
    let under = cache.file_hashes_under("/d/a/").unwrap();
    assert_eq!(under["/d/a/x.bin"], (newer.1, newer.2));
    assert_eq!(cache.stats().unwrap().file_hash_entries, rows.len() as u64);
    assert_eq!(cache.forget_file_hashes_under("/d/a/").unwrap(), 4);
    assert_eq!(cache.file_hashes_under("/d/").unwrap().len(), 3);

    // 10,000 rows in one transaction, read back in one query.
    let many: Vec<_> = (0..10_000u64)
        .map(|i| {
            (
                format!("/dump/dir{}/file{i}.dat", i % 37),
                stamp(i),
                ContentHash::of(&i.to_le_bytes()),
            )
        })
        .collect();
    cache.record_file_hashes(&many).unwrap();
    let back = cache.file_hashes_under("/dump/").unwrap();
    assert_eq!(back.len(), 10_000);
    for (p, s, h) in &many {
        assert_eq!(back[p], (*s, *h));
    }
}

#[test]
fn verify_repairs_and_reports_everything() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    let good = cache.memo_put(&key(1), b"good blob").unwrap();
    let bad = cache.memo_put(&key(2), b"will be corrupted").unwrap();
    let gone = cache.memo_put(&key(3), b"will go missing").unwrap();
    flip_byte(&cache.blob_path(&bad), 3);
    fs::remove_file(cache.blob_path(&gone)).unwrap();
    // A blob file written by a writer that died before its index update.
    let orphan_bytes = b"orphan blob".to_vec();
    let orphan = ContentHash::of(&orphan_bytes);
    fs::create_dir_all(cache.blob_path(&orphan).parent().unwrap()).unwrap();
    fs::write(cache.blob_path(&orphan), &orphan_bytes).unwrap();
    // Something that is not a blob.
    let foreign = dir.path().join("blobs").join("README");
    fs::write(&foreign, "hello").unwrap();
    // A dead writer's temp file (old, unlocked).
    let leftover = dir.path().join("tmp").join("99999-1-00000000.tmp");
    fs::write(&leftover, "partial").unwrap();
    age(&leftover);

    let (report, logs) = common::capture_logs(|| cache.verify().unwrap());
    assert!(!report.is_clean());
    assert_eq!(report.checked, 3);
    assert_eq!(report.corrupt.len(), 1);
    assert_eq!(report.corrupt[0].expected, bad);
    assert_eq!(report.corrupt[0].path, cache.blob_path(&bad));
    assert_eq!(report.missing, vec![gone]);
    assert_eq!(report.adopted, vec![cache.blob_path(&orphan)]);
    assert_eq!(report.foreign, vec![foreign.clone()]);
    assert_eq!(
        report.dangling_memo_removed, 2,
        "memo rows of the bad and the gone blob"
    );
    assert_eq!(report.temp_removed, vec![leftover.clone()]);
    assert!(report.index_problems.is_empty());
    assert!(
        logs.contains(&cache.blob_path(&bad).display().to_string()),
        "{logs}"
    );
    let text = report.to_string();
    assert!(text.contains("corrupt (removed):  1"), "{text}");
    assert!(text.contains(&bad.to_hex()), "{text}");
    assert!(!leftover.exists());

    assert_eq!(cache.get_blob(&orphan).unwrap(), Lookup::Hit(orphan_bytes));
    assert_eq!(
        cache.memo_get(&key(1)).unwrap(),
        Lookup::Hit(b"good blob".to_vec())
    );
    assert_eq!(
        cache.get_blob(&good).unwrap(),
        Lookup::Hit(b"good blob".to_vec())
    );

    fs::remove_file(&foreign).unwrap();
    let again = cache.verify().unwrap();
    assert!(again.is_clean(), "{again}");
    assert!(again.adopted.is_empty() && again.missing.is_empty() && again.temp_removed.is_empty());
    assert_eq!(again.checked, 2);
    assert!(again.to_string().contains("result:             clean"));
}

/// Makes a file look older than the sweep's grace period.
fn age(path: &Path) {
    let old = SystemTime::now() - Duration::from_secs(3600);
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(old)
        .unwrap();
}

#[test]
fn temp_sweep_spares_live_writers() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    let tmp = dir.path().join("tmp");
    let dead = tmp.join("1-1-0.tmp");
    let live = tmp.join("2-1-0.tmp");
    let young = tmp.join("3-1-0.tmp");
    let unrelated = tmp.join("notes.txt");
    for p in [&dead, &live, &young, &unrelated] {
        fs::write(p, "x").unwrap();
    }
    age(&dead);
    age(&live);
    age(&unrelated);
    // A live writer holds its temp file locked (a separate open file description, so the
    // sweep's own open of the file conflicts with it even within this process).
    let holder = fs::File::open(&live).unwrap();
    // SAFETY: plain flock on an fd we own.
    assert_eq!(
        unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&holder), libc::LOCK_EX) },
        0
    );
    let report = cache.gc(u64::MAX).unwrap();
    assert_eq!(report.temp_removed, 1);
    assert!(!dead.exists());
    assert!(live.exists() && young.exists() && unrelated.exists());
    let v = cache.verify().unwrap();
    assert_eq!(v.temp_in_use, 2);
    drop(holder);
    let v = cache.verify().unwrap();
    assert_eq!(v.temp_removed, vec![live.clone()]);
    assert!(young.exists(), "a just-created temp file is never swept");
}

#[test]
fn unwritable_cache_dir_gives_a_clear_error() {
    let base = tempfile::tempdir().unwrap();
    // A regular file where a folder should be.
    let file = base.path().join("plain-file");
    fs::write(&file, "x").unwrap();
    let dir = file.join("cache");
    let err = Cache::open(&dir).err().expect("open must fail");
    assert!(matches!(err, CacheError::CreateDir { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&dir.display().to_string()), "{msg}");
    assert!(msg.contains("APS5_CACHE_DIR"), "{msg}");

    // An existing folder in which nothing can be created.
    let ro = base.path().join("read-only");
    fs::create_dir(&ro).unwrap();
    let _undo = make_unwritable(&ro);
    let err = Cache::open(&ro)
        .err()
        .expect("open of an unwritable dir must fail");
    let msg = err.to_string();
    assert!(
        matches!(
            err,
            CacheError::CreateDir { .. } | CacheError::NotWritable { .. }
        ),
        "{err:?}"
    );
    assert!(msg.contains(&ro.display().to_string()), "{msg}");
    assert!(msg.contains("writable"), "{msg}");
    eprintln!("unwritable dir error: {msg}");
}

/// Restores write access on drop so the temp dir can be deleted.
struct Undo(std::path::PathBuf, bool);

impl Drop for Undo {
    fn drop(&mut self) {
        if self.1 {
            let _ = std::process::Command::new("chattr")
                .arg("-i")
                .arg(&self.0)
                .status();
        }
        use std::os::unix::fs::PermissionsExt;
        let _ = fs::set_permissions(&self.0, fs::Permissions::from_mode(0o755));
    }
}

/// chmod 555 stops ordinary users; root ignores permission bits, so for root the folder is
/// made immutable instead (`chattr +i`, which binds root too).
fn make_unwritable(dir: &Path) -> Undo {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o555)).unwrap();
        return Undo(dir.to_path_buf(), false);
    }
    let status = std::process::Command::new("chattr")
        .arg("+i")
        .arg(dir)
        .status()
        .expect(
            "running as root: this test needs `chattr` (e2fsprogs) to make a folder unwritable",
        );
    assert!(
        status.success(),
        "running as root: `chattr +i {}` failed; the test needs a filesystem with the immutable flag (ext4, xfs, btrfs, tmpfs >= 6.0)",
        dir.display()
    );
    Undo(dir.to_path_buf(), true)
}

#[test]
fn corrupt_index_gives_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("index.sqlite"), vec![0x5a; 8192]).unwrap();
    let err = Cache::open(dir.path())
        .err()
        .expect("garbage index must not open");
    assert!(matches!(err, CacheError::IndexCorrupt { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains(&dir.path().join("index.sqlite").display().to_string()),
        "{msg}"
    );
    assert!(msg.contains("delete the cache directory"), "{msg}");
}

#[test]
fn rebuild_index_keeps_the_blobs() {
    let dir = tempfile::tempdir().unwrap();
    let data = common::pseudo_bytes(77, 2000);
    let h = {
        let cache = Cache::open(dir.path()).unwrap();
        cache.memo_put(&key(1), &data).unwrap()
    };
    fs::write(dir.path().join("index.sqlite"), vec![0x5a; 8192]).unwrap();
    assert!(matches!(
        Cache::open(dir.path()),
        Err(CacheError::IndexCorrupt { .. })
    ));
    let (cache, aside) = Cache::rebuild_index(dir.path()).unwrap();
    assert!(aside.exists());
    assert_eq!(fs::read(&aside).unwrap(), vec![0x5a; 8192]);
    // The memo entry is gone, the blob is not.
    assert_eq!(cache.memo_get(&key(1)).unwrap(), Lookup::Miss);
    let report = cache.verify().unwrap();
    assert_eq!(report.adopted, vec![cache.blob_path(&h)]);
    assert!(report.is_clean(), "{report}");
    assert_eq!(cache.stats().unwrap().blobs, 1);
    assert_eq!(cache.get_blob(&h).unwrap(), Lookup::Hit(data));
}

#[test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(Cache::open(dir.path()).unwrap());
    set_user_version(dir.path(), 99);
    let err = Cache::open(dir.path())
        .err()
        .expect("newer schema must be refused");
    assert!(
        matches!(err, CacheError::SchemaTooNew { found: 99, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("upgrade aps5"), "{err}");
}

/// Sets SQLite's user_version by patching the header (bytes 60..64, big-endian), so the
/// test needs no SQLite of its own. The WAL was checkpointed when the last connection closed.
fn set_user_version(dir: &Path, v: u32) {
    let path = dir.join("index.sqlite");
    let mut bytes = fs::read(&path).unwrap();
    assert_eq!(&bytes[..16], b"SQLite format 3\0");
    bytes[60..64].copy_from_slice(&v.to_be_bytes());
    fs::write(&path, bytes).unwrap();
}
