//! Play records (`aps5_cache::records`): append-only, every row checked when read, and a
//! writer killed with SIGKILL loses nothing it had committed.

use std::path::Path;
use std::time::{Duration, Instant};

use aps5_cache::records::{PipelineKind, PipelineRecord, Records, RunCounts, ShaderRecord};

fn record(i: u32) -> ShaderRecord {
    let mut key = [0u8; 32];
    key[..4].copy_from_slice(&i.to_be_bytes());
    ShaderRecord {
        key,
        code: (0..64 + i % 7).map(|b| (b ^ i) as u8).collect(),
        state: vec![0, i, 2, 64, 1, 1, 0, 0, 0],
        class: vec![0],
        translator: "test".into(),
    }
}

fn pipeline(i: u32) -> PipelineRecord {
    let stage = |s: u8| [[s; 32], [s ^ 0x80; 32]];
    PipelineRecord {
        kind: if i.is_multiple_of(2) {
            PipelineKind::Graphics
        } else {
            PipelineKind::Compute
        },
        stages: if i.is_multiple_of(2) {
            vec![stage(i as u8), stage(i as u8 + 1)]
        } else {
            vec![stage(i as u8)]
        },
        state: vec![1, 96, 0, i, 37, 1],
        translator: "test".into(),
    }
}

#[test]
fn records_read_back_once_per_key_and_runs_keep_their_counters() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/records.sqlite");
    let mut r = Records::open(&path).unwrap();
    let run = r.begin_run("test", "pack").unwrap();
    let c = RunCounts {
        misses: 1,
        translations: 1,
        ..Default::default()
    };
    assert!(r.record_miss(run, &record(1), &c).unwrap());
    assert!(r.record_miss(run, &record(2), &c).unwrap());
    // The same key again: kept once.
    assert!(!r.record_miss(run, &record(1), &c).unwrap());
    let (good, bad) = r.shaders().unwrap();
    assert_eq!(good, vec![record(1), record(2)]);
    assert!(bad.is_empty());
    assert_eq!(r.shader_count().unwrap(), 2);
    let last = r.last_run().unwrap().unwrap();
    assert_eq!((last.id, last.counts, last.ended), (run, c, false));
    let done = RunCounts { pack_hits: 5, ..c };
    r.update_run(run, &done, true).unwrap();
    drop(r);
    let r = Records::open_existing(&path).unwrap().unwrap();
    let last = r.last_run().unwrap().unwrap();
    assert_eq!((last.counts, last.ended), (done, true));
    assert!(
        Records::open_existing(&dir.path().join("none.sqlite"))
            .unwrap()
            .is_none()
    );
}

#[test]
fn a_damaged_record_is_reported_and_never_returned() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("records.sqlite");
    let mut r = Records::open(&path).unwrap();
    let run = r.begin_run("test", "").unwrap();
    for i in 0..3 {
        r.record_miss(run, &record(i), &RunCounts::default())
            .unwrap();
    }
    drop(r);
    // One byte of one row's code changed behind the driver's back.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mut key = [0u8; 32];
    key[..4].copy_from_slice(&1u32.to_be_bytes());
    let mut code = record(1).code;
    code[5] ^= 1;
    conn.execute(
        "UPDATE shaders SET code = ?1 WHERE key = ?2",
        rusqlite::params![code, &key[..]],
    )
    .unwrap();
    drop(conn);
    let r = Records::open(&path).unwrap();
    let (good, bad) = r.shaders().unwrap();
    assert_eq!(good, vec![record(0), record(2)]);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].contains("damaged"), "{bad:?}");
}

#[test]
fn pipeline_states_read_back_once_per_content_and_a_damaged_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("records.sqlite");
    let mut r = Records::open(&path).unwrap();
    let run = r.begin_run("test", "").unwrap();
    for i in 0..4 {
        assert!(
            r.record_pipeline(run, u64::from(i) + 1, &pipeline(i))
                .unwrap()
        );
    }
    assert!(!r.record_pipeline(run, 3, &pipeline(2)).unwrap());
    // A different state word is a different pipeline.
    let mut other = pipeline(2);
    other.state[4] = 44;
    assert_ne!(other.key(), pipeline(2).key());
    assert!(r.record_pipeline(run, 5, &other).unwrap());
    assert_eq!(r.pipeline_count().unwrap(), 5);
    let (good, bad) = r.pipelines().unwrap();
    assert!(bad.is_empty(), "{bad:?}");
    let mut want: Vec<_> = (0..4).map(pipeline).chain([other]).collect();
    want.sort_by_key(PipelineRecord::key);
    assert_eq!(good, want);
    drop(r);
    // One stage key changed behind the driver's back: its content no longer hashes to its key.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mut stages: Vec<u8> = pipeline(1)
        .stages
        .iter()
        .flatten()
        .flatten()
        .copied()
        .collect();
    stages[3] ^= 1;
    conn.execute(
        "UPDATE pipelines SET stages = ?1 WHERE key = ?2",
        rusqlite::params![stages, &pipeline(1).key()[..]],
    )
    .unwrap();
    drop(conn);
    let r = Records::open(&path).unwrap();
    let (good, bad) = r.pipelines().unwrap();
    assert_eq!(good.len(), 4);
    assert!(!good.contains(&pipeline(1)));
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(
        bad[0].contains("pipeline record") && bad[0].contains("damaged"),
        "{bad:?}"
    );
}

/// `aps5 cache verify`'s repair: damaged rows (a shader and a pipeline) are removed, sound ones
/// kept; a second verify finds nothing.
#[test]
fn verify_removes_damaged_rows_and_keeps_sound_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("records.sqlite");
    let mut r = Records::open(&path).unwrap();
    let run = r.begin_run("test", "").unwrap();
    for i in 0..3 {
        r.record_miss(run, &record(i), &RunCounts::default())
            .unwrap();
        r.record_pipeline(run, u64::from(i) + 1, &pipeline(i))
            .unwrap();
    }
    let clean = r.verify().unwrap();
    assert_eq!((clean.shaders, clean.pipelines), (3, 3));
    assert!(clean.removed.is_empty() && clean.file_damaged.is_empty());
    drop(r);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE shaders SET state = ?1 WHERE key = ?2",
        rusqlite::params![vec![1u8, 2, 3, 4], &record(2).key[..]],
    )
    .unwrap();
    conn.execute(
        "UPDATE pipelines SET kind = 'ray tracing' WHERE key = ?1",
        [&pipeline(0).key()[..]],
    )
    .unwrap();
    drop(conn);
    let mut r = Records::open(&path).unwrap();
    let v = r.verify().unwrap();
    assert_eq!((v.shaders, v.pipelines), (2, 2), "{v:?}");
    assert_eq!(v.removed.len(), 2, "{v:?}");
    assert!(
        v.removed.iter().any(|w| w.contains("shader record")),
        "{v:?}"
    );
    assert!(
        v.removed.iter().any(|w| w.contains("pipeline record")),
        "{v:?}"
    );
    assert_eq!(r.shader_count().unwrap(), 2);
    assert_eq!(r.pipeline_count().unwrap(), 2);
    let again = r.verify().unwrap();
    assert!(again.removed.is_empty(), "{again:?}");
    // The removed shader can be recorded again.
    assert!(
        r.record_miss(run, &record(2), &RunCounts::default())
            .unwrap()
    );
}

/// Records written by schema 1 (shaders and runs only) stay readable and gain the pipelines.
#[test]
fn schema_1_records_gain_the_pipelines_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("records.sqlite");
    let mut r = Records::open(&path).unwrap();
    let run = r.begin_run("test", "").unwrap();
    r.record_miss(run, &record(7), &RunCounts::default())
        .unwrap();
    drop(r);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("DROP TABLE pipelines; PRAGMA user_version = 1;")
        .unwrap();
    drop(conn);
    let mut r = Records::open(&path).unwrap();
    assert_eq!(r.shaders().unwrap().0, vec![record(7)]);
    assert_eq!(r.pipeline_count().unwrap(), 0);
    assert!(r.record_pipeline(run, 1, &pipeline(0)).unwrap());
    drop(r);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let v: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(v, aps5_cache::records::SCHEMA_VERSION);
}

/// A schema 3 file (its runs table without the prewarm counters of schema 4 and the
/// translations-ahead ones of schema 5): opened, the table gains them, its runs count 0, and
/// a run's counters are kept from then on.
#[test]
fn schema_3_runs_gain_the_prewarm_counters() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("records.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            started_ns INTEGER NOT NULL,
            translator TEXT NOT NULL,
            pack TEXT NOT NULL,
            pack_hits INTEGER NOT NULL DEFAULT 0,
            misses INTEGER NOT NULL DEFAULT 0,
            translations INTEGER NOT NULL DEFAULT 0,
            pipelines INTEGER NOT NULL DEFAULT 0,
            refused INTEGER NOT NULL DEFAULT 0,
            ended INTEGER NOT NULL DEFAULT 0
        );
        INSERT INTO runs (started_ns, translator, pack, misses, ended) VALUES (1, 't', '', 4, 1);
        PRAGMA user_version = 3;",
    )
    .unwrap();
    drop(conn);
    let r = Records::open(&path).unwrap();
    let old = r.last_run().unwrap().unwrap();
    assert_eq!(
        (
            old.counts.misses,
            old.counts.prewarmed,
            old.counts.translations_ahead,
            old.ended
        ),
        (4, 0, 0, true)
    );
    let run = r.begin_run("test", "").unwrap();
    let c = RunCounts {
        prewarmed: 3,
        prewarm_failed: 1,
        prewarm_skipped: 2,
        prewarm_left: 5,
        translations_ahead: 2,
        ahead_wait_us: 1234,
        ..Default::default()
    };
    r.update_run(run, &c, true).unwrap();
    drop(r);
    let r = Records::open(&path).unwrap();
    assert_eq!(r.last_run().unwrap().unwrap().counts, c);
    drop(r);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let v: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(v, aps5_cache::records::SCHEMA_VERSION);
}

#[test]
fn pipeline_states_come_back_most_recently_used_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("records.sqlite");
    let mut r = Records::open(&path).unwrap();
    // Run 1 meets 0, 1, 2, 3 in that order; run 2 meets 3 then 1.
    let one = r.begin_run("test", "").unwrap();
    for i in 0..4 {
        r.record_pipeline(one, u64::from(i) + 1, &pipeline(i))
            .unwrap();
    }
    let two = r.begin_run("test", "").unwrap();
    assert!(!r.record_pipeline(two, 1, &pipeline(3)).unwrap());
    assert!(!r.record_pipeline(two, 2, &pipeline(1)).unwrap());
    let (list, bad) = r.pipelines_by_recency().unwrap();
    assert!(bad.is_empty(), "{bad:?}");
    let order: Vec<PipelineRecord> = list.iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(order, [3, 1, 0, 2].map(pipeline));
    assert_eq!(
        list.iter().map(|(_, s)| (s.run, s.seq)).collect::<Vec<_>>(),
        [(two, 1), (two, 2), (one, 1), (one, 3)]
    );
    drop(r);
    // A schema 2 file (no uses): its states come after every one with a use, in key order.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("DELETE FROM pipeline_uses WHERE run = ?1", [one])
        .unwrap();
    drop(conn);
    let r = Records::open(&path).unwrap();
    let (list, _) = r.pipelines_by_recency().unwrap();
    let mut rest = vec![pipeline(0), pipeline(2)];
    rest.sort_by_key(PipelineRecord::key);
    let want: Vec<PipelineRecord> = [pipeline(3), pipeline(1)].into_iter().chain(rest).collect();
    assert_eq!(list.into_iter().map(|(p, _)| p).collect::<Vec<_>>(), want);
}

const CHILD: &str = "APS5_RECORDS_TEST_WRITER";

/// Run as a child by the test below: records shaders 0, 1, 2, ... until killed, each followed
/// by pipeline state i.
#[test]
fn writer_child() {
    let Some(path) = std::env::var_os(CHILD) else {
        return;
    };
    let mut r = Records::open(Path::new(&path)).unwrap();
    let run = r.begin_run("test", "").unwrap();
    for i in 0.. {
        let c = RunCounts {
            misses: u64::from(i) + 1,
            ..Default::default()
        };
        r.record_miss(run, &record(i), &c).unwrap();
        r.record_pipeline(run, u64::from(i) + 1, &pipeline(i))
            .unwrap();
    }
}

#[test]
fn a_writer_killed_with_sigkill_loses_no_committed_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("records.sqlite");
    // Created here first, so the child never races the schema with this test's reads.
    drop(Records::open(&path).unwrap());
    for round in 0..3 {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "writer_child", "--nocapture", "--test-threads=1"])
            .env(CHILD, &path)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let want = 40 * (round + 1);
        let deadline = Instant::now() + Duration::from_secs(60);
        let r = Records::open(&path).unwrap();
        while r.shader_count().unwrap() < want {
            assert!(Instant::now() < deadline, "the writer made no progress");
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(r);
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        let _ = child.wait();

        // Every record the writer committed is there and sound: 0..n, no gap, none damaged;
        // the run's counter says the same (it commits with the record).
        let r = Records::open(&path).unwrap();
        let (good, bad) = r.shaders().unwrap();
        assert!(bad.is_empty(), "{bad:?}");
        let n = good.len() as u32;
        assert!(n as u64 >= want);
        let mut want_keys: Vec<_> = (0..n).map(|i| record(i).key).collect();
        want_keys.sort();
        assert_eq!(good.iter().map(|g| g.key).collect::<Vec<_>>(), want_keys);
        for g in &good {
            let i = u32::from_be_bytes(g.key[..4].try_into().unwrap());
            assert_eq!(*g, record(i));
        }
        // Pipeline state i follows shader i: 0..n-1 are there (n-1 too unless the kill fell
        // between the two), none damaged.
        let (pipes, bad) = r.pipelines().unwrap();
        assert!(bad.is_empty(), "{bad:?}");
        let m = pipes.len() as u32;
        assert!(m == n || m + 1 == n, "{m} pipelines after {n} shaders");
        let mut want_keys: Vec<_> = (0..m).map(|i| pipeline(i).key()).collect();
        want_keys.sort();
        assert_eq!(
            pipes.iter().map(PipelineRecord::key).collect::<Vec<_>>(),
            want_keys
        );
        let last = r.last_run().unwrap().unwrap();
        assert!(!last.ended);
        // Round 0 records from 0 up; later rounds re-record known keys first (ignored).
        if round == 0 {
            assert_eq!(last.counts.misses, u64::from(n));
        }
    }
}

/// A run that meets recorded states again writes their uses at its end, with its counters,
/// in one transaction (`end_run`): the same recency order as uses written at the draw.
#[test]
fn uses_written_at_the_run_s_end_order_the_states_as_at_the_draw() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("records.sqlite");
    let mut r = Records::open(&path).unwrap();
    let one = r.begin_run("test", "").unwrap();
    for i in 0..4 {
        r.record_pipeline(one, u64::from(i) + 1, &pipeline(i))
            .unwrap();
    }
    let known = r.pipeline_keys().unwrap();
    assert_eq!(known.len(), 4);
    assert!((0..4).all(|i| known.contains(&pipeline(i).key())));
    let two = r.begin_run("test", "").unwrap();
    let c = RunCounts {
        pack_hits: 2,
        ..Default::default()
    };
    r.end_run(two, &c, &[(pipeline(3).key(), 1), (pipeline(1).key(), 2)])
        .unwrap();
    drop(r);
    let r = Records::open(&path).unwrap();
    let (list, _) = r.pipelines_by_recency().unwrap();
    let order: Vec<PipelineRecord> = list.iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(order, [3, 1, 0, 2].map(pipeline));
    let last = r.last_run().unwrap().unwrap();
    assert_eq!((last.id, last.counts, last.ended), (two, c, true));
}
