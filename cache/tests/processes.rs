//! Several processes on one cache: concurrent readers/writers, and writers SIGKILLed at
//! random points. The child processes are this test binary re-executed with
//! `APS5_CACHE_TEST_CHILD` set, running only `child_worker`.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use aps5_cache::{Cache, ContentHash, FileStamp, Lookup, MemoKey};
use common::Rng;

const CHILD_ENV: &str = "APS5_CACHE_TEST_CHILD";
const KEYS: u64 = 48;
const FILES: u64 = 200;

fn key(k: u64) -> MemoKey {
    MemoKey::new(
        "processes",
        "1",
        &[ContentHash::of(&k.to_le_bytes())],
        b"opts",
    )
}

/// The one right value for key `k`; every eighth is large (up to 3 MiB) so that kills often
/// land in the middle of a write.
fn content(k: u64) -> Vec<u8> {
    let len = if k.is_multiple_of(8) {
        (1 << 20) + (k as usize * 40_000)
    } else {
        1 + (k as usize * 1337) % 65_536
    };
    common::pseudo_bytes(k, len)
}

/// Key and value of the `i`-th fresh result written by the child with `seed`: killed
/// writers keep writing new blobs (up to 2 MiB) so kills land in writes, not only reads.
fn fresh(seed: u64, i: u64) -> (MemoKey, Vec<u8>) {
    let id = (seed << 20) | i;
    let k = MemoKey::new("fresh", "1", &[ContentHash::of(&id.to_le_bytes())], b"");
    let mut rng = Rng::new(id);
    let len = if rng.below(4) == 0 {
        256 * 1024 + rng.below(1792 * 1024) as usize
    } else {
        1 + rng.below(65_536) as usize
    };
    (k, common::pseudo_bytes(id, len))
}

fn file_row(j: u64) -> (String, FileStamp, ContentHash) {
    (
        format!("/dump/dir{}/file{j}.bin", j % 7),
        FileStamp {
            size: j * 10,
            mtime_ns: 1_000_000 + j as i64,
            inode: 5000 + j,
        },
        ContentHash::of(&j.to_le_bytes()),
    )
}

/// One child's work: random gets and puts of the shared keys, checking every hit.
/// `iterations == 0` means run until killed.
fn work(dir: &Path, seed: u64, iterations: u64) -> (u64, u64) {
    let cache = Cache::open(dir).expect("child: open cache");
    let mut rng = Rng::new(seed);
    let (mut hits, mut puts) = (0, 0);
    let mut i = 0;
    while iterations == 0 || i < iterations {
        i += 1;
        if iterations == 0 {
            let (k, bytes) = fresh(seed, i);
            cache.memo_put(&k, &bytes).expect("child: memo_put fresh");
        }
        let k = rng.below(KEYS);
        match cache.memo_get(&key(k)).expect("child: memo_get") {
            Lookup::Hit(bytes) => {
                assert!(bytes == content(k), "child: wrong bytes for key {k}");
                hits += 1;
            }
            Lookup::Miss => {
                let h = cache
                    .memo_put(&key(k), &content(k))
                    .expect("child: memo_put");
                assert_eq!(h, ContentHash::of(&content(k)));
                puts += 1;
            }
            Lookup::Corrupt => panic!("child: corrupt blob for key {k}"),
        }
        match rng.below(4) {
            0 => {
                let h = ContentHash::of(&content(k));
                match cache.get_blob(&h).expect("child: get_blob") {
                    Lookup::Hit(bytes) => assert!(bytes == content(k)),
                    Lookup::Miss => {
                        cache.put_blob(&content(k)).expect("child: put_blob");
                    }
                    Lookup::Corrupt => panic!("child: corrupt blob {h}"),
                }
            }
            1 => {
                let start = rng.below(FILES);
                let rows: Vec<_> = (start..(start + 40).min(FILES)).map(file_row).collect();
                cache
                    .record_file_hashes(&rows)
                    .expect("child: record_file_hashes");
            }
            2 => {
                for (path, (stamp, hash)) in cache
                    .file_hashes_under("/dump/")
                    .expect("child: file_hashes_under")
                {
                    let j: u64 = path
                        .rsplit("file")
                        .next()
                        .unwrap()
                        .trim_end_matches(".bin")
                        .parse()
                        .unwrap();
                    assert_eq!(file_row(j), (path, stamp, hash));
                }
            }
            _ => {}
        }
    }
    (hits, puts)
}

/// Not a test of its own: the body of the child processes, run with `--ignored`.
#[test]
#[ignore = "the child-process body of the other tests in this file"]
fn child_worker() {
    let Ok(mode) = std::env::var(CHILD_ENV) else {
        return;
    };
    let dir = std::env::var("APS5_CACHE_TEST_DIR").unwrap();
    let seed: u64 = std::env::var("APS5_CACHE_TEST_SEED")
        .unwrap()
        .parse()
        .unwrap();
    let iterations = if mode == "forever" {
        0
    } else {
        mode.parse().unwrap()
    };
    let start = unix_us();
    let (hits, puts) = work(Path::new(&dir), seed, iterations);
    println!(
        "CHILD-OK hits={hits} puts={puts} start={start} end={}",
        unix_us()
    );
}

fn spawn_child(dir: &Path, mode: &str, seed: u64, quiet: bool) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child_worker",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, mode)
        .env("APS5_CACHE_TEST_DIR", dir)
        .env("APS5_CACHE_TEST_SEED", seed.to_string())
        .stdout(Stdio::piped())
        .stderr(if quiet {
            Stdio::null()
        } else {
            Stdio::inherit()
        })
        .spawn()
        .expect("spawn child test process")
}

fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

fn time_seed() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

#[test]
fn concurrent_processes_share_one_cache() {
    let dir = tempfile::tempdir().unwrap();
    // All three open a fresh folder at once (racing to create the schema), then work on the
    // same keys at the same time.
    let children: Vec<Child> = (0..3)
        .map(|i| spawn_child(dir.path(), "150", 1000 + i, false))
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    std::fs::write(dir.path().join("go"), "").unwrap();
    let (mut hits, mut puts) = (0u64, 0u64);
    let (mut last_start, mut first_end) = (0u64, u64::MAX);
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "child failed: {}\n{stdout}",
            out.status
        );
        // The harness prints "test child_worker ... " before the child's own line.
        let line = stdout
            .lines()
            .find_map(|l| l.find("CHILD-OK").map(|at| &l[at..]))
            .unwrap_or_else(|| panic!("child printed no result:\n{stdout}"));
        let nums: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|f| f.split('=').nth(1).unwrap().parse().unwrap())
            .collect();
        hits += nums[0];
        puts += nums[1];
        last_start = last_start.max(nums[2]);
        first_end = first_end.min(nums[3]);
    }
    assert!(
        last_start < first_end,
        "the children did not run at the same time (last start {last_start} us, first end {first_end} us)"
    );
    eprintln!(
        "all three ran together for {} ms",
        (first_end - last_start) / 1000
    );
    eprintln!("3 processes x 150 iterations: {hits} verified hits, {puts} puts");
    assert_eq!(hits + puts, 450);
    assert!(hits > 0 && puts > 0);

    let cache = Cache::open(dir.path()).unwrap();
    let report = cache.verify().unwrap();
    assert!(report.is_clean(), "{report}");
    assert!(
        report.temp_removed.is_empty() && report.adopted.is_empty(),
        "{report}"
    );
    for k in 0..KEYS {
        if let Lookup::Hit(bytes) = cache.memo_get(&key(k)).unwrap() {
            assert!(bytes == content(k), "key {k}");
        }
    }
}

#[test]
fn sigkilled_writers_leave_a_working_cache() {
    let dir = tempfile::tempdir().unwrap();
    let seed = time_seed();
    eprintln!("kill test seed {seed}");
    let mut rng = Rng::new(seed);
    let rounds = 8;
    for round in 0..rounds {
        let mut children: Vec<Child> = (0..2)
            .map(|i| spawn_child(dir.path(), "forever", seed + round * 2 + i, true))
            .collect();
        for child in &mut children {
            // SIGKILL after 30..600 ms: during start-up, schema creation, blob writes,
            // renames or index transactions.
            std::thread::sleep(Duration::from_millis(30 + rng.below(570)));
            if let Some(status) = child.try_wait().unwrap() {
                panic!("round {round}: child stopped by itself: {status}");
            }
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }
    // Temp files of killed writers are swept only once older than the grace period.
    std::thread::sleep(Duration::from_millis(1100));

    let cache = Cache::open(dir.path()).expect("cache opens after killed writers");
    let report = cache.verify().unwrap();
    eprintln!("after {rounds} rounds of kills:\n{report}");
    assert!(report.is_clean(), "{report}");
    assert!(report.corrupt.is_empty() && report.missing.is_empty());
    let again = cache.verify().unwrap();
    assert!(again.is_clean(), "{again}");
    assert!(
        again.temp_removed.is_empty() && again.adopted.is_empty() && again.temp_in_use == 0,
        "first verify repaired everything: {again}"
    );

    let mut hits = 0;
    for k in 0..KEYS {
        match cache.memo_get(&key(k)).unwrap() {
            Lookup::Hit(bytes) => {
                assert!(bytes == content(k), "key {k}");
                hits += 1;
            }
            Lookup::Miss => {}
            Lookup::Corrupt => panic!("corrupt blob for key {k} after verify"),
        }
    }
    assert!(hits > 0, "the killed writers stored nothing in 8 rounds");
    eprintln!("{hits}/{KEYS} shared keys present and verified");
    // Every fresh result a writer stored before it was killed reads back intact.
    let mut fresh_hits = 0;
    for round in 0..rounds {
        for c in 0..2 {
            let child_seed = seed + round * 2 + c;
            let mut misses = 0;
            let mut i = 1;
            while misses < 20 {
                let (k, bytes) = fresh(child_seed, i);
                match cache.memo_get(&k).unwrap() {
                    Lookup::Hit(got) => {
                        assert!(got == bytes, "fresh result {i} of child seed {child_seed}");
                        fresh_hits += 1;
                        misses = 0;
                    }
                    Lookup::Miss => misses += 1,
                    Lookup::Corrupt => panic!("corrupt fresh result after verify"),
                }
                i += 1;
            }
        }
    }
    eprintln!("{fresh_hits} fresh results written by killed writers read back intact");
    assert!(fresh_hits > 0);
    for (path, (stamp, hash)) in cache.file_hashes_under("/dump/").unwrap() {
        let j: u64 = path
            .rsplit("file")
            .next()
            .unwrap()
            .trim_end_matches(".bin")
            .parse()
            .unwrap();
        assert_eq!(file_row(j), (path, stamp, hash));
    }
    // And it still works.
    let start = Instant::now();
    for k in 0..KEYS {
        cache.memo_put(&key(k), &content(k)).unwrap();
        assert_eq!(cache.memo_get(&key(k)).unwrap(), Lookup::Hit(content(k)));
    }
    eprintln!("rewrote all keys in {:?}", start.elapsed());
    assert!(cache.gc(0).is_ok());
    assert_eq!(cache.stats().unwrap().blobs, 0);
}
