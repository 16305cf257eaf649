//! Play records (issue 13 item 4, docs/PACKS.md "Play records"): what a run met that the
//! shader pack did not hold, kept for the next `aps5 build` to translate into the pack.
//!
//! One SQLite file per project (`.aps5/records.sqlite`), written by the GPU driver inside the
//! running program and read by the build and `aps5 status`:
//!
//! * `shaders`: one row per distinct (code, state, device class), keyed by the pack key the
//!   driver looked up. Append-only (`INSERT OR IGNORE`: a key names its content), each row
//!   its own transaction, with `check` = blake3 of everything else in the row, verified when
//!   read, so a damaged row is reported and skipped, never translated.
//! * `pipelines`: one row per distinct pipeline state a run met (issue 13 item 4: "every
//!   pipeline state seen is recorded the same way"): its stages' pack keys and the creation
//!   state besides the shaders, keyed by the blake3 of all that, which is its check as well.
//!   What a later step (pipelines.pack, prewarm) needs to create the pipeline again.
//! * `pipeline_uses`: when each pipeline state was last met: the last run that met it and the
//!   order it was first met in within that run (the one row updated in place: it orders the
//!   prewarm, most recently used first, and damage to it costs order only, never content).
//! * `runs`: one row per run that opened the GPU, with its counters (pack hits, misses,
//!   translations, pipelines), updated with every miss and at exit.
//!
//! Crash safety: WAL journal and `synchronous = FULL`, so each committed record is on disk
//! (an fsync per commit; records are written on misses and on a pipeline state the process
//! has not met, both once per process). A kill -9 loses at most the
//! record whose transaction had not committed; SQLite's WAL recovery drops that one whole.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

/// The schema this module writes (`PRAGMA user_version`).
/// 2 added `pipelines` (a schema 1 file gains the table when opened); 3 added
/// `pipeline_uses`, the last-seen order of each pipeline state (an older file gains it, its
/// states ordered after every one seen since); 4 added the prewarm counters to `runs` (an
/// older file's runs table gains the columns, its runs counting 0); 5 added
/// `translations_ahead` and `ahead_wait_us` to `runs` (translations made ahead of the draw,
/// and the submit thread's wait for them; the same upgrade).
pub const SCHEMA_VERSION: i64 = 5;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS shaders (
    key BLOB PRIMARY KEY NOT NULL,
    code BLOB NOT NULL,
    state BLOB NOT NULL,
    class BLOB NOT NULL,
    translator TEXT NOT NULL,
    run INTEGER NOT NULL,
    check_hash BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pipelines (
    key BLOB PRIMARY KEY NOT NULL,
    kind TEXT NOT NULL,
    stages BLOB NOT NULL,
    state BLOB NOT NULL,
    translator TEXT NOT NULL,
    run INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pipeline_uses (
    key BLOB PRIMARY KEY NOT NULL,
    run INTEGER NOT NULL,
    seq INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    started_ns INTEGER NOT NULL,
    translator TEXT NOT NULL,
    pack TEXT NOT NULL,
    pack_hits INTEGER NOT NULL DEFAULT 0,
    misses INTEGER NOT NULL DEFAULT 0,
    translations INTEGER NOT NULL DEFAULT 0,
    pipelines INTEGER NOT NULL DEFAULT 0,
    refused INTEGER NOT NULL DEFAULT 0,
    ended INTEGER NOT NULL DEFAULT 0,
    prewarmed INTEGER NOT NULL DEFAULT 0,
    prewarm_failed INTEGER NOT NULL DEFAULT 0,
    prewarm_skipped INTEGER NOT NULL DEFAULT 0,
    prewarm_left INTEGER NOT NULL DEFAULT 0,
    translations_ahead INTEGER NOT NULL DEFAULT 0,
    ahead_wait_us INTEGER NOT NULL DEFAULT 0
);
";

/// The `runs` columns schemas 4 and 5 added: `CREATE TABLE IF NOT EXISTS` does not add them
/// to the table of an older file.
const RUNS_ADDED_COLUMNS: [&str; 6] = [
    "prewarmed",
    "prewarm_failed",
    "prewarm_skipped",
    "prewarm_left",
    "translations_ahead",
    "ahead_wait_us",
];

/// Why the records cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct RecordsError {
    pub path: PathBuf,
    pub reason: String,
}

/// One shader a run met and the pack did not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShaderRecord {
    /// The pack key the driver looked up (code, state and device class).
    pub key: [u8; 32],
    /// The guest code bytes.
    pub code: Vec<u8>,
    /// The translation state words (`aps5_shader::pack::ShaderState::words`).
    pub state: Vec<u32>,
    /// The device class words (`aps5_shader::pack::DeviceClass::words`).
    pub class: Vec<u32>,
    /// The translator identity of the run that recorded it (for reports).
    pub translator: String,
}

impl ShaderRecord {
    /// blake3 of the row's contents (what `check_hash` holds).
    pub fn check(&self) -> [u8; 32] {
        let mut h = blake3::Hasher::new_derive_key("aps5 play record v1");
        h.update(&self.key);
        for part in [
            &self.code[..],
            &words_bytes(&self.state),
            &words_bytes(&self.class),
        ] {
            h.update(&(part.len() as u64).to_le_bytes());
            h.update(part);
        }
        h.update(self.translator.as_bytes());
        *h.finalize().as_bytes()
    }
}

/// What a pipeline runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PipelineKind {
    /// One compute stage.
    Compute,
    /// A vertex and a pixel stage, in that order.
    Graphics,
}

impl PipelineKind {
    fn name(self) -> &'static str {
        match self {
            PipelineKind::Compute => "compute",
            PipelineKind::Graphics => "graphics",
        }
    }

    fn of(name: &str) -> Option<PipelineKind> {
        match name {
            "compute" => Some(PipelineKind::Compute),
            "graphics" => Some(PipelineKind::Graphics),
            _ => None,
        }
    }
}

/// One pipeline state a run met: everything needed to create the pipeline again, given the
/// shader pack (the pipeline-creation part of a Fossilize record).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PipelineRecord {
    pub kind: PipelineKind,
    /// Each stage's pack keys, [portable, device class]: the two the driver looks up, so
    /// whichever entry the pack holds is found again.
    pub stages: Vec<[[u8; 32]; 2]>,
    /// The creation state besides the shaders, as the driver writes it (its layout is the
    /// driver's: `aps5_gpu`, docs/PACKS.md "Pipeline records").
    pub state: Vec<u32>,
    /// The translator identity of the run that recorded it (the stage keys depend on it).
    pub translator: String,
}

impl PipelineRecord {
    /// The record's key: blake3 of everything in it (so also its check when read back).
    pub fn key(&self) -> [u8; 32] {
        let mut h = blake3::Hasher::new_derive_key("aps5 pipeline record v1");
        h.update(self.kind.name().as_bytes());
        for part in [
            &self.stages_bytes()[..],
            &words_bytes(&self.state),
            self.translator.as_bytes(),
        ] {
            h.update(&(part.len() as u64).to_le_bytes());
            h.update(part);
        }
        *h.finalize().as_bytes()
    }

    fn stages_bytes(&self) -> Vec<u8> {
        self.stages.iter().flatten().flatten().copied().collect()
    }
}

/// When a pipeline state was last met: the run (its id; 0: unknown) and the order that run
/// first met it in (1 = the first distinct state it met).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LastSeen {
    pub run: i64,
    pub seq: u64,
}

/// A pipeline state and when it was last met.
pub type SeenPipeline = (PipelineRecord, LastSeen);

/// What [`Records::verify`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordsVerify {
    /// Sound records kept.
    pub shaders: u64,
    pub pipelines: u64,
    /// Each damaged row removed, described.
    pub removed: Vec<String>,
    /// SQLite's `quick_check` lines when the file itself is damaged (then no row was read).
    pub file_damaged: Vec<String>,
}

/// A run's counters (the driver's statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunCounts {
    pub pack_hits: u64,
    pub misses: u64,
    pub translations: u64,
    pub pipelines: u64,
    /// Pack entries refused (damaged) or a pack refused as a whole (another translator).
    pub refused: u64,
    /// The prewarm (schema 4): pipelines created, failed, skipped (a stage the shader pack
    /// lacks) and not started within the budget.
    pub prewarmed: u64,
    pub prewarm_failed: u64,
    pub prewarm_skipped: u64,
    pub prewarm_left: u64,
    /// Schema 5: of `translations`, those made ahead of the draw (at `sceAgcCreateShader`,
    /// on a worker), and the submit thread's wait for them, in microseconds.
    pub translations_ahead: u64,
    pub ahead_wait_us: u64,
}

/// The last run, as `aps5 status` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunRow {
    pub id: i64,
    pub counts: RunCounts,
    /// Whether the run reached its exit (a killed run keeps the counts of its last miss).
    pub ended: bool,
}

fn words_bytes(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn bytes_words(b: &[u8]) -> Option<Vec<u32>> {
    if !b.len().is_multiple_of(4) {
        return None;
    }
    Some(
        b.chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// Damaged rows: each one's key and a description.
type Damaged = Vec<(Vec<u8>, String)>;

/// The open records file.
pub struct Records {
    path: PathBuf,
    conn: Connection,
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records").field("path", &self.path).finish()
    }
}

impl Records {
    /// Opens (creating it and its folder if needed) the records at `path`.
    pub fn open(path: &Path) -> Result<Records, RecordsError> {
        let fail = |reason: String| RecordsError {
            path: path.to_path_buf(),
            reason,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
        }
        let sql = |e: rusqlite::Error| fail(e.to_string());
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )
        .map_err(sql)?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(sql)?;
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(sql)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(fail(format!("journal mode {mode}, not WAL")));
        }
        // Every commit reaches the disk before the call returns (module comment).
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(sql)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(sql)?;
        if version > SCHEMA_VERSION {
            return Err(fail(format!(
                "records schema {version} is newer than this aps5's ({SCHEMA_VERSION}): upgrade aps5"
            )));
        }
        if version < SCHEMA_VERSION {
            upgrade(&conn).map_err(sql)?;
        }
        Ok(Records {
            path: path.to_path_buf(),
            conn,
        })
    }

    /// Moves a records file that cannot be used (not SQLite, or SQLite finds it damaged) aside
    /// to `<name>.damaged`, its WAL and shared-memory files with it, so the next run records
    /// afresh; returns where it went. What was there is never read again by aps5.
    pub fn set_aside(path: &Path) -> Result<PathBuf, RecordsError> {
        let mut to = path.as_os_str().to_owned();
        to.push(".damaged");
        let to = PathBuf::from(to);
        for suffix in ["", "-wal", "-shm"] {
            let with = |p: &Path| {
                let mut s = p.as_os_str().to_owned();
                s.push(suffix);
                PathBuf::from(s)
            };
            match std::fs::rename(with(path), with(&to)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !suffix.is_empty() => {}
                Err(e) => {
                    return Err(RecordsError {
                        path: with(path),
                        reason: format!("cannot move it aside to {}: {e}", with(&to).display()),
                    });
                }
            }
        }
        Ok(to)
    }

    /// Opens existing records; `Ok(None)` when there are none (nothing is created).
    pub fn open_existing(path: &Path) -> Result<Option<Records>, RecordsError> {
        if !path.exists() {
            return Ok(None);
        }
        Records::open(path).map(Some)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self, e: rusqlite::Error) -> RecordsError {
        RecordsError {
            path: self.path.clone(),
            reason: e.to_string(),
        }
    }

    /// Starts a run's row; returns its id.
    pub fn begin_run(&self, translator: &str, pack: &str) -> Result<i64, RecordsError> {
        self.conn
            .execute(
                "INSERT INTO runs (started_ns, translator, pack) VALUES (?1, ?2, ?3)",
                params![now_ns(), translator, pack],
            )
            .map_err(|e| self.sql(e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Records a shader (unless its key is recorded already) and the run's counters, in one
    /// transaction. Returns whether the shader was new.
    pub fn record_miss(
        &mut self,
        run: i64,
        rec: &ShaderRecord,
        counts: &RunCounts,
    ) -> Result<bool, RecordsError> {
        let path = self.path.clone();
        let sql = |e: rusqlite::Error| RecordsError {
            path: path.clone(),
            reason: e.to_string(),
        };
        let tx = self.conn.transaction().map_err(sql)?;
        let n = tx
            .execute(
                "INSERT OR IGNORE INTO shaders (key, code, state, class, translator, run, check_hash)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    &rec.key[..],
                    &rec.code,
                    words_bytes(&rec.state),
                    words_bytes(&rec.class),
                    &rec.translator,
                    run,
                    &rec.check()[..]
                ],
            )
            .map_err(sql)?;
        update_run(&tx, run, counts, false).map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(n == 1)
    }

    /// Records a pipeline state unless recorded already, and that run `run` met it as its
    /// `seq`-th distinct state (one transaction). Returns whether the state was new.
    pub fn record_pipeline(
        &mut self,
        run: i64,
        seq: u64,
        rec: &PipelineRecord,
    ) -> Result<bool, RecordsError> {
        let path = self.path.clone();
        let sql = |e: rusqlite::Error| RecordsError {
            path: path.clone(),
            reason: e.to_string(),
        };
        let key = rec.key();
        let tx = self.conn.transaction().map_err(sql)?;
        let n = tx
            .execute(
                "INSERT OR IGNORE INTO pipelines (key, kind, stages, state, translator, run)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    &key[..],
                    rec.kind.name(),
                    rec.stages_bytes(),
                    words_bytes(&rec.state),
                    &rec.translator,
                    run
                ],
            )
            .map_err(sql)?;
        tx.execute(
            "INSERT INTO pipeline_uses (key, run, seq) VALUES (?1, ?2, ?3)
             ON CONFLICT (key) DO UPDATE SET run = excluded.run, seq = excluded.seq",
            params![&key[..], run, seq as i64],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(n == 1)
    }

    /// Every sound pipeline state with when it was last met, most recently used first: the
    /// latest run first, within a run in the order it met them, then by key (a state with
    /// no use recorded, from a schema 2 file, comes after every one with a use). Damaged rows
    /// are described as in [`Records::pipelines`], never returned.
    pub fn pipelines_by_recency(&self) -> Result<(Vec<SeenPipeline>, Vec<String>), RecordsError> {
        let (good, bad) = self.read_pipelines()?;
        let mut stmt = self
            .conn
            .prepare("SELECT key, run, seq FROM pipeline_uses")
            .map_err(|e| self.sql(e))?;
        let uses: std::collections::HashMap<Vec<u8>, LastSeen> = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, Vec<u8>>(0)?,
                    LastSeen {
                        run: r.get(1)?,
                        seq: r.get::<_, i64>(2)? as u64,
                    },
                ))
            })
            .map_err(|e| self.sql(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.sql(e))?;
        let mut out: Vec<(PipelineRecord, LastSeen)> = good
            .into_iter()
            .map(|p| {
                let seen = uses
                    .get(&p.key()[..])
                    .copied()
                    .unwrap_or(LastSeen { run: 0, seq: 0 });
                (p, seen)
            })
            .collect();
        // Stable sort on a key-ordered list: ties stay in key order.
        out.sort_by_key(|(_, s)| (std::cmp::Reverse(s.run), s.seq));
        Ok((out, bad.into_iter().map(|(_, why)| why).collect()))
    }

    /// Every recorded pipeline state, in key order, and a description of each damaged row
    /// (its content does not hash to its key): those are never returned.
    pub fn pipelines(&self) -> Result<(Vec<PipelineRecord>, Vec<String>), RecordsError> {
        let (good, bad) = self.read_pipelines()?;
        Ok((good, bad.into_iter().map(|(_, why)| why).collect()))
    }

    /// [`Records::pipelines`], with each damaged row's key.
    fn read_pipelines(&self) -> Result<(Vec<PipelineRecord>, Damaged), RecordsError> {
        let mut stmt = self
            .conn
            .prepare("SELECT key, kind, stages, state, translator FROM pipelines ORDER BY key")
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, Vec<u8>>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Vec<u8>>(2)?,
                    r.get::<_, Vec<u8>>(3)?,
                    r.get::<_, String>(4)?,
                ))
            })
            .map_err(|e| self.sql(e))?;
        let mut good = Vec::new();
        let mut bad = Vec::new();
        for row in rows {
            let (key, kind, stages, state, translator) = row.map_err(|e| self.sql(e))?;
            let rec = (|| {
                if !stages.len().is_multiple_of(64) {
                    return None;
                }
                Some(PipelineRecord {
                    kind: PipelineKind::of(&kind)?,
                    stages: stages
                        .chunks_exact(64)
                        .map(|c| {
                            let (p, d) = c.split_at(32);
                            [p.try_into().unwrap(), d.try_into().unwrap()]
                        })
                        .collect(),
                    state: bytes_words(&state)?,
                    translator,
                })
            })();
            match rec {
                Some(r) if r.key()[..] == key[..] => good.push(r),
                _ => {
                    let hexkey: String = key.iter().map(|b| format!("{b:02x}")).collect();
                    bad.push((
                        key,
                        format!(
                            "{}: pipeline record {hexkey} is damaged (its content does not match its key): not used",
                            self.path.display()
                        ),
                    ));
                }
            }
        }
        Ok((good, bad))
    }

    /// `aps5 cache verify`: SQLite's own check of the file (`PRAGMA quick_check`), then every
    /// row's check; a damaged row is deleted (the repair: it was never used, and a run that
    /// meets its shader or pipeline again records it afresh). A file SQLite finds damaged is
    /// reported and left alone (not repairable here; `aps5 clean` removes it).
    pub fn verify(&mut self) -> Result<RecordsVerify, RecordsError> {
        let problems: Vec<String> = {
            let mut stmt = self
                .conn
                .prepare("PRAGMA quick_check")
                .map_err(|e| self.sql(e))?;
            let rows = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(|e| self.sql(e))?;
            rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))?
        };
        if problems != ["ok"] {
            return Ok(RecordsVerify {
                file_damaged: problems,
                ..Default::default()
            });
        }
        let (shaders, bad_shaders) = self.read_shaders()?;
        let (pipelines, bad_pipelines) = self.read_pipelines()?;
        let path = self.path.clone();
        let sql = |e: rusqlite::Error| RecordsError {
            path: path.clone(),
            reason: e.to_string(),
        };
        let tx = self.conn.transaction().map_err(sql)?;
        let mut removed = Vec::new();
        for (table, bad) in [("shaders", bad_shaders), ("pipelines", bad_pipelines)] {
            for (key, why) in bad {
                tx.execute(&format!("DELETE FROM {table} WHERE key = ?1"), [&key])
                    .map_err(sql)?;
                if table == "pipelines" {
                    tx.execute("DELETE FROM pipeline_uses WHERE key = ?1", [&key])
                        .map_err(sql)?;
                }
                removed.push(why);
            }
        }
        tx.commit().map_err(sql)?;
        Ok(RecordsVerify {
            shaders: shaders.len() as u64,
            pipelines: pipelines.len() as u64,
            removed,
            file_damaged: Vec::new(),
        })
    }

    /// The keys of every pipeline state recorded (rows as stored, unchecked): a run defers
    /// the use of a state already here to [`Records::end_run`] instead of a transaction of
    /// its own at the draw.
    pub fn pipeline_keys(&self) -> Result<std::collections::HashSet<[u8; 32]>, RecordsError> {
        let mut st = self
            .conn
            .prepare("SELECT key FROM pipelines")
            .map_err(|e| self.sql(e))?;
        let rows = st
            .query_map([], |r| r.get::<_, Vec<u8>>(0))
            .map_err(|e| self.sql(e))?;
        let mut out = std::collections::HashSet::new();
        for k in rows {
            if let Ok(k) = <[u8; 32]>::try_from(k.map_err(|e| self.sql(e))?.as_slice()) {
                out.insert(k);
            }
        }
        Ok(out)
    }

    /// The run's end, in one transaction: its counters (`ended` set) and the uses of
    /// recorded pipeline states it met ({key, the order it met it in}, as
    /// [`Records::record_pipeline`] writes them for a new state).
    pub fn end_run(
        &mut self,
        run: i64,
        counts: &RunCounts,
        uses: &[([u8; 32], u64)],
    ) -> Result<(), RecordsError> {
        let path = self.path.clone();
        let sql = |e: rusqlite::Error| RecordsError {
            path: path.clone(),
            reason: e.to_string(),
        };
        let tx = self.conn.transaction().map_err(sql)?;
        for (key, seq) in uses {
            tx.execute(
                "INSERT INTO pipeline_uses (key, run, seq) VALUES (?1, ?2, ?3)
                 ON CONFLICT (key) DO UPDATE SET run = excluded.run, seq = excluded.seq",
                params![&key[..], run, *seq as i64],
            )
            .map_err(sql)?;
        }
        update_run(&tx, run, counts, true).map_err(sql)?;
        tx.commit().map_err(sql)
    }

    /// How many pipeline states are recorded.
    pub fn pipeline_count(&self) -> Result<u64, RecordsError> {
        self.conn
            .query_row("SELECT count(*) FROM pipelines", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| self.sql(e))
    }

    /// Writes a run's counters; `ended`: the run reached its exit.
    pub fn update_run(
        &self,
        run: i64,
        counts: &RunCounts,
        ended: bool,
    ) -> Result<(), RecordsError> {
        update_run(&self.conn, run, counts, ended).map_err(|e| self.sql(e))
    }

    /// Every recorded shader, in key order, and a description of each damaged row (its check
    /// does not match, or its words are not whole): those are never returned.
    pub fn shaders(&self) -> Result<(Vec<ShaderRecord>, Vec<String>), RecordsError> {
        let (good, bad) = self.read_shaders()?;
        Ok((good, bad.into_iter().map(|(_, why)| why).collect()))
    }

    /// [`Records::shaders`], with each damaged row's key.
    fn read_shaders(&self) -> Result<(Vec<ShaderRecord>, Damaged), RecordsError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT key, code, state, class, translator, check_hash FROM shaders ORDER BY key",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, Vec<u8>>(0)?,
                    r.get::<_, Vec<u8>>(1)?,
                    r.get::<_, Vec<u8>>(2)?,
                    r.get::<_, Vec<u8>>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, Vec<u8>>(5)?,
                ))
            })
            .map_err(|e| self.sql(e))?;
        let mut good = Vec::new();
        let mut bad = Vec::new();
        for row in rows {
            let (key, code, state, class, translator, check) = row.map_err(|e| self.sql(e))?;
            let hexkey: String = key.iter().map(|b| format!("{b:02x}")).collect();
            let rec = (|| {
                Some(ShaderRecord {
                    key: key.as_slice().try_into().ok()?,
                    code,
                    state: bytes_words(&state)?,
                    class: bytes_words(&class)?,
                    translator,
                })
            })();
            match rec {
                Some(r) if r.check()[..] == check[..] => good.push(r),
                _ => bad.push((
                    key,
                    format!(
                        "{}: shader record {hexkey} is damaged (its check does not match): not used",
                        self.path.display()
                    ),
                )),
            }
        }
        Ok((good, bad))
    }

    /// How many shaders are recorded.
    pub fn shader_count(&self) -> Result<u64, RecordsError> {
        self.conn
            .query_row("SELECT count(*) FROM shaders", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| self.sql(e))
    }

    /// The most recent run, if any.
    pub fn last_run(&self) -> Result<Option<RunRow>, RecordsError> {
        self.conn
            .query_row(
                "SELECT id, pack_hits, misses, translations, pipelines, refused, ended,
                 prewarmed, prewarm_failed, prewarm_skipped, prewarm_left,
                 translations_ahead, ahead_wait_us
                 FROM runs ORDER BY id DESC LIMIT 1",
                [],
                |r| {
                    Ok(RunRow {
                        id: r.get(0)?,
                        counts: RunCounts {
                            pack_hits: r.get::<_, i64>(1)? as u64,
                            misses: r.get::<_, i64>(2)? as u64,
                            translations: r.get::<_, i64>(3)? as u64,
                            pipelines: r.get::<_, i64>(4)? as u64,
                            refused: r.get::<_, i64>(5)? as u64,
                            prewarmed: r.get::<_, i64>(7)? as u64,
                            prewarm_failed: r.get::<_, i64>(8)? as u64,
                            prewarm_skipped: r.get::<_, i64>(9)? as u64,
                            prewarm_left: r.get::<_, i64>(10)? as u64,
                            translations_ahead: r.get::<_, i64>(11)? as u64,
                            ahead_wait_us: r.get::<_, i64>(12)? as u64,
                        },
                        ended: r.get::<_, i64>(6)? != 0,
                    })
                },
            )
            .optional()
            .map_err(|e| self.sql(e))
    }
}

fn update_run(
    conn: &Connection,
    run: i64,
    c: &RunCounts,
    ended: bool,
) -> Result<(), rusqlite::Error> {
    conn.execute(
        "UPDATE runs SET pack_hits = ?2, misses = ?3, translations = ?4, pipelines = ?5,
         refused = ?6, ended = ?7, prewarmed = ?8, prewarm_failed = ?9,
         prewarm_skipped = ?10, prewarm_left = ?11, translations_ahead = ?12,
         ahead_wait_us = ?13 WHERE id = ?1",
        params![
            run,
            c.pack_hits as i64,
            c.misses as i64,
            c.translations as i64,
            c.pipelines as i64,
            c.refused as i64,
            ended as i64,
            c.prewarmed as i64,
            c.prewarm_failed as i64,
            c.prewarm_skipped as i64,
            c.prewarm_left as i64,
            c.translations_ahead as i64,
            c.ahead_wait_us as i64
        ],
    )
    .map(|_| ())
}

/// Brings an older (or new, empty) file to [`SCHEMA_VERSION`] in one transaction: the tables
/// it lacks, and the `runs` columns schemas 4 and 5 added.
fn upgrade(conn: &Connection) -> Result<(), rusqlite::Error> {
    conn.execute_batch(&format!("BEGIN IMMEDIATE; {SCHEMA}"))?;
    let done = (|| {
        let have: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info('runs')")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        for col in RUNS_ADDED_COLUMNS {
            if !have.iter().any(|h| h == col) {
                conn.execute_batch(&format!(
                    "ALTER TABLE runs ADD COLUMN {col} INTEGER NOT NULL DEFAULT 0"
                ))?;
            }
        }
        conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"))
    })();
    if done.is_err() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    done
}
