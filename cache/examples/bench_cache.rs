//! Cache benchmark: `cargo run --release -p aps5-cache --example bench_cache` prints one JSON object.
//!
//! Each figure comes with the physical limit measured in the same run:
//! - `hash_file` on a large file vs a plain read loop of the same file (the I/O limit, from
//!   the page cache and, after `POSIX_FADV_DONTNEED`, from disk) and vs blake3 on an
//!   in-memory buffer (the CPU limit, one thread and all threads);
//! - `put_blob`/`memo_put` of many small blobs vs the bare durable write (temp + fsync +
//!   rename + directory fsync) they are built on; `memo_get`/`get_blob` (verified reads);
//! - `file_hashes_under` for 10,000 rows.
//!
//! `APS5_BENCH_FILE_MIB` sets the large file's size (default 1024); `APS5_BENCH_BLOBS` the
//! small-blob count (default 2000). The file lives in the system temp folder and is deleted.

use std::fs::{self, File};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Instant;

use aps5_cache::{Cache, ContentHash, FileStamp, Lookup, MemoKey, hash_file};

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn mb_s(bytes: u64, secs: f64) -> f64 {
    (bytes as f64 / 1e6 / secs * 10.0).round() / 10.0
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Best (shortest) time of `runs` runs of `f`.
fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut out = None;
    let mut best = f64::INFINITY;
    for _ in 0..runs {
        let t = Instant::now();
        let v = f();
        best = best.min(t.elapsed().as_secs_f64());
        out = Some(v);
    }
    (best, out.unwrap())
}

fn drop_from_page_cache(path: &Path) {
    let f = File::open(path).unwrap();
    // SAFETY: advisory call on an fd we own; affects only this file's cached pages.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

fn read_loop(path: &Path) -> u64 {
    let mut f = File::open(path).unwrap();
    let mut buf = vec![0u8; 8 << 20];
    let mut total = 0u64;
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            return total;
        }
        // Keep the data observable so the loop cannot be optimised into nothing.
        std::hint::black_box(&buf[..n]);
        total += n as u64;
    }
}

fn pseudo(seed: u64, out: &mut [u8]) {
    let mut x = seed | 1;
    for chunk in out.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
}

fn main() {
    let file_mib = env_num("APS5_BENCH_FILE_MIB", 1024);
    let blobs = env_num("APS5_BENCH_BLOBS", 2000) as usize;
    let work = tempfile::tempdir().unwrap();

    // --- large file: hash_file vs read loop vs in-memory blake3 ---
    let big = work.path().join("big.bin");
    let size = file_mib << 20;
    {
        let mut f = File::create(&big).unwrap();
        let mut chunk = vec![0u8; 16 << 20];
        let mut written = 0;
        let mut seed = 1;
        while written < size {
            pseudo(seed, &mut chunk);
            seed += 1;
            let n = chunk.len().min((size - written) as usize);
            f.write_all(&chunk[..n]).unwrap();
            written += n as u64;
        }
        f.sync_all().unwrap();
    }
    drop_from_page_cache(&big);
    let (cold_read_s, n) = best(1, || read_loop(&big));
    assert_eq!(n, size);
    drop_from_page_cache(&big);
    let (cold_hash_s, _) = best(1, || hash_file(&big).unwrap());
    // Warm: the file is now in the page cache (if it fits), reads are memory copies.
    let (warm_read_s, _) = best(3, || read_loop(&big));
    let (warm_hash_s, (file_hash, hashed)) = best(3, || hash_file(&big).unwrap());
    assert_eq!(hashed, size);

    let mem_len = 256usize << 20;
    let mut buf = vec![0u8; mem_len];
    pseudo(99, &mut buf);
    let (mem_1t_s, h1) = best(3, || blake3::hash(&buf));
    let (mem_mt_s, h2) = best(3, || ContentHash::of(&buf));
    assert_eq!(h1.as_bytes(), &h2.0);
    drop(buf);
    fs::remove_file(&big).unwrap();

    // --- small blobs ---
    let blob_len = 4096;
    let payloads: Vec<Vec<u8>> = (0..blobs)
        .map(|i| {
            let mut b = vec![0u8; blob_len];
            pseudo(1000 + i as u64, &mut b);
            b
        })
        .collect();
    // The durable-write limit: what put_blob must do per new blob, without the index.
    let raw_dir = work.path().join("raw");
    fs::create_dir_all(&raw_dir).unwrap();
    let (raw_s, _) = best(1, || {
        for (i, p) in payloads.iter().enumerate() {
            let tmp = raw_dir.join(format!("{i}.tmp"));
            let mut f = File::create(&tmp).unwrap();
            f.write_all(p).unwrap();
            f.sync_all().unwrap();
            fs::rename(&tmp, raw_dir.join(format!("{i}"))).unwrap();
            File::open(&raw_dir).unwrap().sync_all().unwrap();
        }
    });

    let cache_dir = work.path().join("cache");
    let cache = Cache::open(&cache_dir).unwrap();
    let (put_s, hashes) = best(1, || {
        payloads
            .iter()
            .map(|p| cache.put_blob(p).unwrap())
            .collect::<Vec<_>>()
    });
    // New blobs from 4 threads at once (as a parallel build stores results): the fsyncs
    // of different files overlap and the filesystem journal commits them together.
    let payloads_mt: Vec<Vec<u8>> = (0..blobs)
        .map(|i| {
            let mut b = vec![0u8; blob_len];
            pseudo(1_000_000 + i as u64, &mut b);
            b
        })
        .collect();
    let (put_mt_s, _) = best(1, || {
        std::thread::scope(|s| {
            for part in payloads_mt.chunks(blobs.div_ceil(4)) {
                let cache = &cache;
                s.spawn(move || {
                    for p in part {
                        cache.put_blob(p).unwrap();
                    }
                });
            }
        })
    });
    // The batch API.
    let payloads_batch: Vec<Vec<u8>> = (0..blobs)
        .map(|i| {
            let mut b = vec![0u8; blob_len];
            pseudo(2_000_000 + i as u64, &mut b);
            b
        })
        .collect();
    let batch_keys: Vec<MemoKey> = (0..blobs)
        .map(|i| MemoKey::new("bench-batch", "1", &[], &i.to_le_bytes()))
        .collect();
    let (put_batch_s, _) = best(1, || {
        let entries: Vec<(MemoKey, &[u8])> = batch_keys
            .iter()
            .copied()
            .zip(payloads_batch.iter().map(|p| p.as_slice()))
            .collect();
        cache.memo_put_many(&entries).unwrap()
    });
    // Same bytes again: dedup path (hash + stat + index write, no file write).
    let (put_dup_s, _) = best(1, || {
        for p in &payloads {
            cache.put_blob(p).unwrap();
        }
    });
    let keys: Vec<MemoKey> = (0..blobs)
        .map(|i| MemoKey::new("bench", "1", &[hashes[i]], b""))
        .collect();
    let (memo_put_s, _) = best(1, || {
        for (k, p) in keys.iter().zip(&payloads) {
            cache.memo_put(k, p).unwrap();
        }
    });
    let (memo_get_s, hits) = best(3, || {
        keys.iter()
            .filter(|k| matches!(cache.memo_get(k).unwrap(), Lookup::Hit(_)))
            .count()
    });
    assert_eq!(hits, blobs);
    let (get_blob_s, _) = best(3, || {
        for h in &hashes {
            assert!(matches!(cache.get_blob(h).unwrap(), Lookup::Hit(_)));
        }
    });
    let (memo_miss_s, _) = best(3, || {
        for i in 0..blobs {
            let k = MemoKey::new("absent", "1", &[], &i.to_le_bytes());
            assert_eq!(cache.memo_get(&k).unwrap(), Lookup::Miss);
        }
    });

    // --- file hashes: 10,000 rows ---
    let rows: Vec<(String, FileStamp, ContentHash)> = (0..10_000u64)
        .map(|i| {
            (
                format!("/games/PPSA01234/app0/dir{:03}/file{i:05}.dat", i % 200),
                FileStamp {
                    size: i * 4096,
                    mtime_ns: 1_764_000_000_000_000_000 + i as i64,
                    inode: 1_000_000 + i,
                },
                ContentHash::of(&i.to_le_bytes()),
            )
        })
        .collect();
    let (record_s, _) = best(1, || cache.record_file_hashes(&rows).unwrap());
    // The no-op rebuild's case: the first query of a freshly opened cache.
    drop(cache);
    let cache = Cache::open(&cache_dir).unwrap();
    let (under_first_s, _) = best(1, || {
        cache.file_hashes_under("/games/PPSA01234/app0/").unwrap()
    });
    let (under_s, got) = best(5, || {
        cache.file_hashes_under("/games/PPSA01234/app0/").unwrap()
    });
    assert_eq!(got.len(), rows.len());
    let stats = cache.stats().unwrap();
    drop(cache);

    let per_op_us = |s: f64| round2(s * 1e6 / blobs as f64);
    let ops_s = |s: f64| (blobs as f64 / s).round();
    let json = serde_json::json!({
        "bench": "aps5-cache",
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "large_file": {
            "bytes": size,
            "hash": file_hash.to_hex(),
            "hash_file_cold_mb_s": mb_s(size, cold_hash_s),
            "read_loop_cold_mb_s": mb_s(size, cold_read_s),
            "hash_file_warm_mb_s": mb_s(size, warm_hash_s),
            "read_loop_warm_mb_s": mb_s(size, warm_read_s),
            "blake3_in_memory_1_thread_mb_s": mb_s(mem_len as u64, mem_1t_s),
            "blake3_in_memory_all_threads_mb_s": mb_s(mem_len as u64, mem_mt_s),
        },
        "small_blobs": {
            "count": blobs,
            "bytes_each": blob_len,
            "durable_write_limit_us_per_blob": per_op_us(raw_s),
            "put_blob_new_us": per_op_us(put_s),
            "put_blob_new_per_s": ops_s(put_s),
            "put_blob_new_4_threads_per_s": ops_s(put_mt_s),
            "memo_put_many_new_per_s": ops_s(put_batch_s),
            "put_blob_existing_us": per_op_us(put_dup_s),
            "memo_put_existing_blob_us": per_op_us(memo_put_s),
            "memo_get_hit_us": per_op_us(memo_get_s),
            "memo_get_hit_per_s": ops_s(memo_get_s),
            "memo_get_miss_us": per_op_us(memo_miss_s),
            "get_blob_hit_us": per_op_us(get_blob_s),
        },
        "file_hashes": {
            "rows": rows.len(),
            "record_file_hashes_ms": round2(record_s * 1e3),
            "file_hashes_under_first_ms": round2(under_first_s * 1e3),
            "file_hashes_under_best_of_5_ms": round2(under_s * 1e3),
        },
        "index_bytes": stats.index_bytes,
    });
    println!("{json}");
}
