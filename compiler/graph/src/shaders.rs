//! Shaders of the dump and their translations (issue 13, docs/PACKS.md):
//!
//! * [`shaders`]: the static scan ([`aps5_agc::scan`]) over every file of the dump (the
//!   executable, the bundled modules, the data files), memoized per file hash in the content
//!   cache and for the dump as a whole, so a no-op build reads no file for it;
//! * [`translated`]: one shader with the state its header gives, translated by
//!   [`aps5_shader::translate`], memoized under the translator's identity
//!   ([`aps5_shader::TRANSLATOR_VERSION`]) and the pack key ([`pack_key`]);
//! * [`outputs`]: `shaders.json` and `packs/shaders.pack` (an [`aps5_cache::pack`] file),
//!   translating every shader not yet known on `build.jobs` threads.
//!
//! A shader that does not translate is a warning naming its file, offset and the translator's
//! error, never a failed build.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use aps5_agc::scan;
use aps5_agc::shader::{ShaderHeader, ShaderType};
use aps5_cache::pack::{Pack, PackError, PackWriter};
use aps5_cache::records::{Records, ShaderRecord};
use aps5_cache::{Cache, ContentHash, Lookup, MemoKey};
use aps5_shader::pack::{DeviceClass, ShaderState};
use aps5_shader::translate::{ComputeState, Options, PixelState};
use serde::{Deserialize, Serialize};

use crate::build::Progress;
use crate::db::{self, Db, Dump, QueryError, QueryRun};

/// In the output folder: every shader found, with its translation's outcome.
pub const SHADERS_JSON: &str = "shaders.json";
/// In the output folder: the translated shaders.
pub const SHADER_PACK: &str = "packs/shaders.pack";
/// Stands for another translator (tests use it to see a translator change).
pub use aps5_shader::pack::SALT_ENV;

/// The loop bound the build translates with: the GPU driver's default (`APS5_GPU_LOOP_LIMIT`
/// unset, drivers/gpu/src/exec.rs). A run with another bound translates for itself.
pub const BUILD_LOOP_LIMIT: u32 = 1 << 24;

/// The translator's identity as the graph uses it: its version, and the test salt if set
/// (the driver reads the same, [`aps5_shader::pack::translator_identity`]).
pub fn translator_version() -> &'static str {
    aps5_shader::pack::translator_identity()
}

/// The producer identity written into `shaders.pack`: a pack made by another translator is
/// refused by [`Pack::open`].
pub fn pack_identity() -> [u8; 32] {
    aps5_shader::pack::producer_identity()
}

/// The translation options the build uses. The device class: none. No host subgroup, so every
/// program is wave-serial (the lane-per-invocation mapping, opt-in on devices with subgroups
/// of 32, is translated at run time and keyed apart: `pack::lane_subgroup`), and `native_fma`
/// is off for every device, so one translation serves lavapipe and NVIDIA alike; the options
/// that change the SPIR-V are part of every [`pack_key`].
pub fn build_options() -> Options {
    Options {
        host_subgroup_size: None,
        loop_limit: BUILD_LOOP_LIMIT,
        native_fma: false,
        // Ahead of time: every float-controls mode the program's MODE needs is declared and
        // named in the metadata's required features; a device lacking one (lavapipe has no
        // denorm modes) is a second device class, made when the driver reads packs.
        host_float_controls: None,
    }
}

/// The translation state a stored header gives (what the driver would pass the translator
/// when the program runs with the header's registers).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "stage", rename_all = "lowercase")]
pub enum StaticState {
    Compute {
        pgm_rsrc1: u32,
        pgm_rsrc2: u32,
        workgroup_size: [u32; 3],
        wave64: bool,
    },
    Pixel {
        pgm_rsrc1: u32,
        pgm_rsrc2: u32,
        wave64: bool,
        input_ena: u32,
        input_addr: u32,
        input_cntl: Vec<u32>,
        col_format: u32,
        z_format: u32,
    },
}

impl StaticState {
    /// The translator's state for it (what the driver passes at a dispatch or draw with the
    /// header's registers; LDS and scratch 0, as the driver passes them).
    pub fn to_state(&self) -> ShaderState {
        match self {
            StaticState::Compute {
                pgm_rsrc1,
                pgm_rsrc2,
                workgroup_size,
                wave64,
            } => ShaderState::Compute(ComputeState {
                pgm_rsrc1: *pgm_rsrc1,
                pgm_rsrc2: *pgm_rsrc2,
                workgroup_size: *workgroup_size,
                wave64: *wave64,
                lds_bytes: 0,
                scratch_bytes_per_lane: 0,
            }),
            StaticState::Pixel {
                pgm_rsrc1,
                pgm_rsrc2,
                wave64,
                input_ena,
                input_addr,
                input_cntl,
                col_format,
                z_format,
            } => {
                let mut cntl = [0u32; 32];
                for (c, v) in cntl.iter_mut().zip(input_cntl) {
                    *c = *v;
                }
                ShaderState::Pixel(PixelState {
                    pgm_rsrc1: *pgm_rsrc1,
                    pgm_rsrc2: *pgm_rsrc2,
                    wave64: *wave64,
                    input_ena: *input_ena,
                    input_addr: *input_addr,
                    input_cntl: cntl,
                    col_format: *col_format,
                    z_format: *z_format,
                    // Static discovery sees no render targets: float outputs.
                    mrt_types: 0,
                })
            }
        }
    }
}

/// The pack key of a program found statically: [`aps5_shader::pack::pack_key`] (the one the
/// driver computes at a dispatch or draw) of its code and [`StaticState::to_state`].
pub fn pack_key(code: &[u8], state: &StaticState, opts: &Options) -> [u8; 32] {
    aps5_shader::pack::pack_key(code, &state.to_state(), opts)
}

/// One program the scan found in a file (independent of the file's name, so it is memoized
/// by the file's hash).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScannedShader {
    /// Byte offset of the header in the file.
    pub offset: u64,
    pub header_size: u32,
    /// Byte offset of the code in the file.
    pub code_offset: u64,
    pub code_size: u32,
    /// The header's type (`cs`, `ps`, `gs`, ...).
    #[serde(rename = "type")]
    pub shader_type: String,
    /// blake3(code ‖ header bytes), hex: the program and everything its header carries.
    pub identity: String,
    /// The translation state from the header, when the build translates this type.
    pub state: Option<StaticState>,
    /// [`pack_key`] with [`build_options`], hex (when `state` is set).
    pub key: Option<String>,
    /// Why the build does not translate it (when `state` is not set).
    pub skipped: Option<String>,
}

/// The shaders of one dump file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileShaders {
    pub file: String,
    pub shaders: Vec<ScannedShader>,
}

fn type_name(t: ShaderType) -> &'static str {
    aps5_agc::shader::type_name(t)
}

/// The translation state a header gives, or why there is none. `wave64_only`: the code
/// decodes as wave64 only (the scan's verdict). [`aps5_agc::shader::translation_state`]:
/// the one prediction `sceAgcCreateShader`'s translation ahead of the draw makes too.
pub fn static_state(h: &ShaderHeader, wave64_only: bool) -> Result<StaticState, String> {
    Ok(match aps5_agc::shader::translation_state(h, wave64_only)? {
        ShaderState::Compute(c) => StaticState::Compute {
            pgm_rsrc1: c.pgm_rsrc1,
            pgm_rsrc2: c.pgm_rsrc2,
            workgroup_size: c.workgroup_size,
            wave64: c.wave64,
        },
        ShaderState::Pixel(p) => StaticState::Pixel {
            pgm_rsrc1: p.pgm_rsrc1,
            pgm_rsrc2: p.pgm_rsrc2,
            wave64: p.wave64,
            input_ena: p.input_ena,
            input_addr: p.input_addr,
            input_cntl: p.input_cntl.to_vec(),
            col_format: p.col_format,
            z_format: p.z_format,
        },
        ShaderState::Vertex(_) => unreachable!("a header predicts compute or pixel state"),
    })
}

/// Scans `bytes` (a whole file) for shaders.
pub fn scan_bytes(bytes: &[u8]) -> Vec<ScannedShader> {
    let opts = build_options();
    scan::scan(bytes)
        .into_iter()
        .map(|f| {
            let code = f.code_bytes(bytes);
            let mut id = blake3::Hasher::new();
            id.update(code);
            id.update(f.header_bytes(bytes));
            let (state, skipped) = match static_state(&f.header, f.wave64) {
                Ok(s) => (Some(s), None),
                Err(why) => (None, Some(why)),
            };
            ScannedShader {
                offset: f.header_offset as u64,
                header_size: f.header_len as u32,
                code_offset: f.code_offset as u64,
                code_size: f.code_len as u32,
                shader_type: type_name(f.header.shader_type).into(),
                identity: id.finalize().to_hex().to_string(),
                key: state.as_ref().map(|s| hex(&pack_key(code, s, &opts))),
                state,
                skipped,
            }
        })
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex32(s: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if s.len() != 64 {
        return None;
    }
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// A dump file's bytes, mapped, checked against the hash the scan of the dump gave it.
struct Mapped(Option<memmap2::Mmap>);

impl Mapped {
    fn bytes(&self) -> &[u8] {
        self.0.as_deref().unwrap_or(&[])
    }
}

fn map_verified(abs: &Path, rel: &str, size: u64, hash: ContentHash) -> Result<Mapped, QueryError> {
    let fail = |message: String| QueryError::new(abs.to_path_buf(), message);
    let file = std::fs::File::open(abs).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            fail(
                "the file vanished during the build; nothing was written: run the build again"
                    .into(),
            )
        } else {
            fail(format!("cannot read {rel}: {e}"))
        }
    })?;
    let meta = file
        .metadata()
        .map_err(|e| fail(format!("cannot read {rel}: {e}")))?;
    if !meta.is_file() {
        return Err(fail(format!("{rel} is no longer a regular file")));
    }
    let map = if meta.len() == 0 {
        None
    } else {
        // SAFETY: a dump file is not written while it is built (a change is found by the hash
        // check below; a file truncated meanwhile can fault the read: docs/PACKS.md).
        Some(unsafe { memmap2::Mmap::map(&file) }.map_err(|e| fail(format!("cannot map: {e}")))?)
    };
    let m = Mapped(map);
    if m.bytes().len() as u64 != size || ContentHash::of(m.bytes()) != hash {
        return Err(QueryError {
            input_changed: true,
            ..fail("the file changed while the build was reading it; nothing was written: run the build again once the dump is stable".into())
        });
    }
    Ok(m)
}

/// Runs `f` over `items` on up to `jobs` threads; results in the items' order.
fn parallel<T: Sync, R: Send>(items: &[T], jobs: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = f(item);
                    out.lock().unwrap()[i] = Some(r);
                }
            });
        }
    });
    out.into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.expect("every item ran"))
        .collect()
}

/// One dump file as the shader queries see it (plain data, shared by the worker threads).
#[derive(Clone)]
struct FileRef {
    rel: String,
    abs: std::path::PathBuf,
    size: u64,
    hash: ContentHash,
}

fn file_refs(db: &dyn Db, dump: Dump) -> Vec<FileRef> {
    dump.files(db)
        .iter()
        .map(|f| FileRef {
            rel: f.rel(db).clone(),
            abs: f.abs(db).clone(),
            size: f.size(db),
            hash: f.hash(db),
        })
        .collect()
}

/// The shaders of one file: memoized by the file's hash.
fn scan_file(cache: &Cache, f: &FileRef) -> Result<Vec<ScannedShader>, QueryError> {
    if (f.size as usize) < aps5_agc::shader::HEADER_SIZE {
        return Ok(Vec::new());
    }
    let key = MemoKey::new(
        "shader_scan",
        &db::query_version("shader_scan"),
        &[f.hash],
        &[],
    );
    if let Ok(Lookup::Hit(bytes)) = cache.memo_get(&key)
        && let Ok(found) = serde_json::from_slice(&bytes)
    {
        return Ok(found);
    }
    let map = map_verified(&f.abs, &f.rel, f.size, f.hash)?;
    let found = scan_bytes(map.bytes());
    // A cache that cannot store it only costs the next build the same scan.
    let _ = cache.memo_put(&key, &serde_json::to_vec(&found).expect("JSON"));
    Ok(found)
}

/// `shaders(dump)`: every shader of every file of the dump, by file (path order) and offset.
/// Memoized for the dump as a whole (its paths and hashes: a no-op build makes one lookup)
/// and per file (its hash: a changed file is the only one scanned again). Not a recorded
/// query: scanning derives nothing a user asks about; `shaders.json` is its report.
pub fn shaders(db: &dyn Db, dump: Dump, jobs: usize) -> Result<Arc<Vec<FileShaders>>, QueryError> {
    let files = file_refs(db, dump);
    let hashes: Vec<ContentHash> = files.iter().map(|f| f.hash).collect();
    let mut names = Vec::new();
    for f in &files {
        names.extend_from_slice(f.rel.as_bytes());
        names.push(0);
    }
    let key = MemoKey::new("shaders", &db::query_version("shaders"), &hashes, &names);
    let cache = db.cache();
    if let Ok(Lookup::Hit(bytes)) = cache.memo_get(&key)
        && let Ok(found) = serde_json::from_slice(&bytes)
    {
        return Ok(Arc::new(found));
    }
    let t = std::time::Instant::now();
    let per_file = parallel(&files, jobs, |f| scan_file(cache, f));
    let mut out = Vec::new();
    for (f, r) in files.iter().zip(per_file) {
        let shaders = r?;
        if !shaders.is_empty() {
            out.push(FileShaders {
                file: f.rel.clone(),
                shaders,
            });
        }
    }
    tracing::debug!("phase shader_scan: {:.1} ms", db::ms_since(t));
    let _ = cache.memo_put(&key, &serde_json::to_vec(&out).expect("JSON"));
    Ok(Arc::new(out))
}

pub use aps5_shader::pack::{ENTRY_MAGIC, PackedShader};

/// A translation's outcome as memoized: the pack entry, or the translator's error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Translated {
    Entry(Vec<u8>),
    Failed(String),
}

impl Translated {
    fn encode(&self) -> Vec<u8> {
        match self {
            Translated::Entry(e) => [&[1u8][..], e].concat(),
            Translated::Failed(why) => [&[0u8][..], why.as_bytes()].concat(),
        }
    }
    fn decode(b: &[u8]) -> Option<Translated> {
        match b.split_first()? {
            (1, e) => PackedShader::decode(e).map(|_| Translated::Entry(e.to_vec())),
            (0, why) => Some(Translated::Failed(String::from_utf8(why.to_vec()).ok()?)),
            _ => None,
        }
    }
}

/// Translates `code` with `state` (what [`translated`] computes on a miss).
pub fn translate_one(code: &[u8], state: &ShaderState, opts: &Options) -> Translated {
    match aps5_shader::pack::translate(code, state, opts) {
        Ok(t) => Translated::Entry(PackedShader::of(&t).encode()),
        Err(e) => Translated::Failed(e.to_string()),
    }
}

/// The memo key of `translated(shader, state)`: the translator's identity (in the query's
/// version) and the pack key (code, state, options).
fn translated_key(key: &[u8; 32]) -> MemoKey {
    MemoKey::new("translated", &db::query_version("translated"), &[], key)
}

/// How many shaders the build found and what became of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShaderCounts {
    /// Programs found by the static scan (a program in two files counts twice).
    pub found: usize,
    /// Found and translated (in the pack).
    pub translated: usize,
    /// Found, translated, refused by the translator (a warning each).
    pub failed: usize,
    /// Found, of a type or with a header the build does not translate (met at run time).
    pub skipped: usize,
    /// Distinct pack entries.
    pub entries: usize,
}

/// The build's shader outputs.
#[derive(Clone, Debug)]
pub struct ShaderOutputs {
    pub pack: Arc<Vec<u8>>,
    pub json: Arc<Vec<u8>>,
    pub counts: ShaderCounts,
    /// Every pack key (hex) this build knows (for `--explain`'s "new shader").
    pub keys: Vec<String>,
}

/// In the project's state folder (`.aps5/`): the play records, what runs met that the pack
/// did not hold (written by the GPU driver, read by the build: docs/PACKS.md).
pub const RECORDS_FILE: &str = "records.sqlite";

/// Where a project's play records are.
pub fn records_path(state_dir: &Path) -> std::path::PathBuf {
    state_dir.join(RECORDS_FILE)
}

/// The play records a build translates: the usable ones, in key order, and a warning for
/// each one that is not (damaged row, unreadable state). No records file: none. A file that
/// cannot be read is a warning too, and the build goes on without it: records only hold
/// what runs met (those shaders are translated at run time again), and `aps5 cache verify`
/// sets such a file aside.
pub fn read_records(state_dir: &Path) -> Result<Vec<ShaderRecord>, QueryError> {
    let path = records_path(state_dir);
    let read = || {
        let Some(records) = Records::open_existing(&path)? else {
            return Ok((Vec::new(), Vec::new()));
        };
        records.shaders()
    };
    match read() {
        Ok((good, bad)) => {
            for b in bad {
                tracing::warn!("{b}");
            }
            Ok(good)
        }
        Err(e) => {
            tracing::warn!("play records not used ({e}); `aps5 cache verify` moves the file aside");
            Ok(Vec::new())
        }
    }
}

/// The play records as `aps5 status` shows them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlayStatus {
    /// Shaders recorded in play (distinct keys).
    pub recorded: u64,
    /// Pipeline states recorded in play (distinct states; docs/PACKS.md "Pipeline records").
    pub pipelines_recorded: u64,
    pub last_run: Option<LastRun>,
}

/// The most recent run's counters (the GPU driver's statistics).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LastRun {
    pub pack_hits: u64,
    pub misses: u64,
    pub translations: u64,
    pub pipelines: u64,
    pub pack_refused: u64,
    /// The prewarm's pipelines: created, failed, skipped (a stage the shader pack lacks), not
    /// started within the budget (0 for a run recorded before schema 4).
    pub prewarmed: u64,
    pub prewarm_failed: u64,
    pub prewarm_skipped: u64,
    pub prewarm_left: u64,
    /// Of `translations`, those made ahead of the draw (at `sceAgcCreateShader`), and the
    /// submit thread's wait for them in microseconds (0 for a run before schema 5).
    pub translations_ahead: u64,
    pub ahead_wait_us: u64,
    /// Whether it reached its exit (a killed run keeps the counts of its last miss).
    pub ended: bool,
}

/// The play records' summary; None when there are none (or they cannot be read: a warning).
pub fn play_status(state_dir: &Path) -> Option<PlayStatus> {
    let path = records_path(state_dir);
    let read = || -> Result<Option<PlayStatus>, aps5_cache::records::RecordsError> {
        let Some(r) = Records::open_existing(&path)? else {
            return Ok(None);
        };
        let last_run = r.last_run()?.map(|run| LastRun {
            pack_hits: run.counts.pack_hits,
            misses: run.counts.misses,
            translations: run.counts.translations,
            pipelines: run.counts.pipelines,
            pack_refused: run.counts.refused,
            prewarmed: run.counts.prewarmed,
            prewarm_failed: run.counts.prewarm_failed,
            prewarm_skipped: run.counts.prewarm_skipped,
            prewarm_left: run.counts.prewarm_left,
            translations_ahead: run.counts.translations_ahead,
            ahead_wait_us: run.counts.ahead_wait_us,
            ended: run.ended,
        });
        Ok(Some(PlayStatus {
            recorded: r.shader_count()?,
            pipelines_recorded: r.pipeline_count()?,
            last_run,
        }))
    };
    match read() {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!("{e}");
            None
        }
    }
}

/// Where a translation's code is.
enum Source {
    /// In a dump file (index into the file list) at `code_offset`.
    File { file: usize, shader: ScannedShader },
    /// A play record's code.
    Record(Arc<Vec<u8>>),
}

/// One translation to do: a pack key, the state and options it is made with, its code.
struct Job {
    key: [u8; 32],
    state: ShaderState,
    opts: Options,
    /// What `--explain` names it by: `<file>@<offset>` or `records:<key prefix>[/<class>]`.
    name: String,
    source: Source,
}

/// A play record as the build sees it.
struct Recorded {
    code: Arc<Vec<u8>>,
    state: ShaderState,
    class: DeviceClass,
    key: String,
}

/// `shaders.json` and `packs/shaders.pack`. The pair is memoized on the scan's result, the
/// play records (by content) and the translator's identity (a no-op build makes one lookup);
/// on a miss each distinct (program, state, class) is `translated(shader, state)`, itself
/// memoized, and those not in the cache are translated on `jobs` threads, `progress`
/// reporting "translating".
///
/// A record is translated for the portable class (as every shader found statically) and,
/// when the run that recorded it was on a device lacking a float-controls property that
/// translation requires, for that run's device class too (docs/PACKS.md, "Device class").
pub fn outputs(
    db: &dyn Db,
    dump: Dump,
    records: &[ShaderRecord],
    jobs: usize,
    progress: &dyn Progress,
) -> Result<ShaderOutputs, QueryError> {
    let found = shaders(db, dump, jobs)?;
    let cache = db.cache();
    let scanned = serde_json::to_vec(&*found).expect("JSON");
    let mut records_digest = blake3::Hasher::new();
    for r in records {
        records_digest.update(&r.check());
    }
    let records_digest = ContentHash(*records_digest.finalize().as_bytes());
    let mut recorded = Vec::new();
    let mut unreadable = 0usize;
    for r in records {
        match (
            ShaderState::from_words(&r.state),
            DeviceClass::from_words(&r.class),
        ) {
            (Ok(state), Ok(class)) => recorded.push(Recorded {
                code: Arc::new(r.code.clone()),
                state,
                class,
                key: hex(&r.key),
            }),
            (s, c) => {
                unreadable += 1;
                tracing::warn!(
                    "play record {}: not translated: {}",
                    hex(&r.key),
                    s.err().or(c.err()).unwrap_or_default()
                );
            }
        }
    }
    let mut keys: BTreeSet<String> = BTreeSet::new();
    for f in found.iter() {
        keys.extend(f.shaders.iter().filter_map(|s| s.key.clone()));
    }
    let opts = build_options();
    for r in &recorded {
        keys.insert(hex(&aps5_shader::pack::pack_key(&r.code, &r.state, &opts)));
    }
    let keys: Vec<String> = keys.into_iter().collect();
    let pack_memo = MemoKey::new(
        "shader_pack",
        &db::query_version("shader_pack"),
        &[ContentHash::of(&scanned), records_digest],
        &[],
    );
    let run = |reused: bool, corrupt: bool| QueryRun {
        query: "shader_pack",
        artifact: SHADER_PACK.into(),
        inputs: found
            .iter()
            .map(|f| f.file.clone())
            .chain((!records.is_empty()).then(|| RECORDS_FILE.to_string()))
            .collect(),
        reused,
        corrupt_cache_entry: corrupt,
    };
    let mut corrupt = false;
    match cache.memo_get(&pack_memo)? {
        Lookup::Hit(bytes) => match split_pack_memo(&bytes) {
            Some((pack, json)) => {
                let counts = counts_of(json);
                warn_failed(json);
                db.record(run(true, false));
                return Ok(ShaderOutputs {
                    pack: Arc::new(pack.to_vec()),
                    json: Arc::new(json.to_vec()),
                    counts,
                    keys,
                });
            }
            None => corrupt = true,
        },
        Lookup::Corrupt => corrupt = true,
        Lookup::Miss => {}
    }

    // Distinct translations, first occurrence (path order, offset; then records in key
    // order) naming each.
    let files = file_refs(db, dump);
    let by_rel: BTreeMap<&str, usize> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.rel.as_str(), i))
        .collect();
    let mut todo: Vec<Job> = Vec::new();
    let mut seen = BTreeSet::new();
    for f in found.iter() {
        for s in &f.shaders {
            let Some(k) = s.key.as_deref().and_then(unhex32) else {
                continue;
            };
            if seen.insert(k) {
                todo.push(Job {
                    key: k,
                    state: s.state.as_ref().expect("a key means a state").to_state(),
                    opts: opts.clone(),
                    name: format!("{}@{:#x}", f.file, s.offset),
                    source: Source::File {
                        file: by_rel[f.file.as_str()],
                        shader: s.clone(),
                    },
                });
            }
        }
    }
    let record_job = |r: &Recorded, class: DeviceClass| {
        let o = class.options(&opts);
        Job {
            key: aps5_shader::pack::pack_key(&r.code, &r.state, &o),
            state: r.state.clone(),
            opts: o,
            name: format!(
                "records:{}{}{}",
                &r.key[..16],
                if class.float.is_some() {
                    "/device-class"
                } else {
                    ""
                },
                if class.lanes.is_some() {
                    "/lanes32"
                } else {
                    ""
                }
            ),
            source: Source::Record(r.code.clone()),
        }
    };
    for r in &recorded {
        // The portable translation for the recording device's lanes: a record from a device
        // with subgroups of 32 is translated lane per invocation, as that device looks it up.
        let job = record_job(r, r.class.portable());
        if seen.insert(job.key) {
            todo.push(job);
        }
    }
    let done = AtomicU64::new(0);
    let runs: Mutex<Vec<QueryRun>> = Mutex::new(Vec::new());
    // Files mapped once however many of their shaders are translated.
    let maps: Mutex<BTreeMap<usize, Arc<Mapped>>> = Mutex::new(BTreeMap::new());
    let t = std::time::Instant::now();
    let mut outcome: BTreeMap<[u8; 32], Translated> = BTreeMap::new();
    let total = AtomicU64::new(todo.len() as u64);
    progress.update("translating", 0, todo.len() as u64);
    let translate_all = |todo: &[Job]| -> Result<Vec<Translated>, QueryError> {
        let results = parallel(todo, jobs, |job| -> Result<Translated, QueryError> {
            let tick = || {
                progress.update(
                    "translating",
                    done.fetch_add(1, Ordering::Relaxed) + 1,
                    total.load(Ordering::Relaxed),
                )
            };
            let memo = translated_key(&job.key);
            let mut corrupt = false;
            match cache.memo_get(&memo)? {
                Lookup::Hit(bytes) => match Translated::decode(&bytes) {
                    Some(t) => {
                        runs.lock().unwrap().push(translated_run(job, true, false));
                        tick();
                        return Ok(t);
                    }
                    None => corrupt = true,
                },
                Lookup::Corrupt => corrupt = true,
                Lookup::Miss => {}
            }
            let (map, code_range) = match &job.source {
                Source::Record(code) => (None, 0..code.len()),
                Source::File { file, shader: s } => {
                    let f = &files[*file];
                    let known = maps.lock().unwrap().get(file).cloned();
                    let m = match known {
                        Some(m) => m,
                        None => {
                            let m = Arc::new(map_verified(&f.abs, &f.rel, f.size, f.hash)?);
                            maps.lock().unwrap().insert(*file, m.clone());
                            m
                        }
                    };
                    let at = s.code_offset as usize;
                    (Some(m), at..at.saturating_add(s.code_size as usize))
                }
            };
            let code = match (&job.source, &map) {
                (Source::Record(code), _) => Some(&code[..]),
                (Source::File { .. }, Some(m)) => m.bytes().get(code_range),
                _ => None,
            }
            .ok_or_else(|| {
                QueryError::new(
                    job.name.clone().into(),
                    "the shader has its code outside the file (a stale scan result)".into(),
                )
            })?;
            let out = match std::panic::catch_unwind(|| translate_one(code, &job.state, &job.opts))
            {
                Ok(t) => t,
                // The translator is new code meeting arbitrary programs: a panic is one
                // failed shader.
                Err(_) => Translated::Failed("the translator panicked (a translator bug)".into()),
            };
            // A cache that cannot store it only costs the next build the translation.
            let _ = cache.memo_put(&memo, &out.encode());
            runs.lock()
                .unwrap()
                .push(translated_run(job, false, corrupt));
            tick();
            Ok(out)
        });
        results.into_iter().collect()
    };
    for (job, r) in todo.iter().zip(translate_all(&todo)?) {
        outcome.insert(job.key, r);
    }
    // Device-class variants of records whose portable translation asks for a float-controls
    // property the recording device lacks.
    let mut variants = Vec::new();
    for r in &recorded {
        if r.class.float.is_none() {
            continue;
        }
        let portable =
            aps5_shader::pack::pack_key(&r.code, &r.state, &r.class.portable().options(&opts));
        let needs = match outcome.get(&portable) {
            Some(Translated::Entry(e)) => {
                PackedShader::decode(e).is_some_and(|p| !r.class.has_all(&p.required_features))
            }
            _ => false,
        };
        let job = record_job(r, r.class);
        if needs && seen.insert(job.key) {
            variants.push(job);
        }
    }
    if !variants.is_empty() {
        total.fetch_add(variants.len() as u64, Ordering::Relaxed);
        for (job, r) in variants.iter().zip(translate_all(&variants)?) {
            outcome.insert(job.key, r);
        }
    }
    progress.finish("translating");
    tracing::debug!(
        "phase translate: {:.1} ms ({} shaders)",
        db::ms_since(t),
        todo.len() + variants.len()
    );
    let mut runs = runs.into_inner().unwrap();
    runs.sort_by(|a, b| a.artifact.cmp(&b.artifact));
    for r in runs {
        db.record(r);
    }

    let mut writer = PackWriter::new(pack_identity());
    for (k, t) in &outcome {
        if let Translated::Entry(e) = t {
            writer
                .add(*k, e.clone())
                .map_err(|e| QueryError::new(SHADER_PACK.into(), e.to_string()))?;
        }
    }
    let pack = writer.to_bytes();
    let from_records: Vec<&Job> = todo
        .iter()
        .chain(&variants)
        .filter(|j| matches!(j.source, Source::Record(_)))
        .collect();
    let record_counts = RecordCounts {
        recorded: records.len(),
        unreadable,
        translated: from_records
            .iter()
            .filter(|j| matches!(outcome.get(&j.key), Some(Translated::Entry(_))))
            .count(),
        failed: from_records
            .iter()
            .filter(|j| matches!(outcome.get(&j.key), Some(Translated::Failed(_))))
            .count(),
        variants: variants.len(),
    };
    for j in &from_records {
        if let Some(Translated::Failed(why)) = outcome.get(&j.key) {
            tracing::warn!("{}: play record not translated: {why}", j.name);
        }
    }
    let json = render_json(&found, &outcome, writer.len(), &record_counts);
    warn_failed(&json);
    let mut memo = (pack.len() as u64).to_le_bytes().to_vec();
    memo.extend_from_slice(&pack);
    memo.extend_from_slice(&json);
    cache.memo_put(&pack_memo, &memo)?;
    db.record(run(false, corrupt));
    Ok(ShaderOutputs {
        counts: counts_of(&json),
        pack: Arc::new(pack),
        json: Arc::new(json),
        keys,
    })
}

/// What became of the play records in a build (`shaders.json`, `records`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordCounts {
    /// Sound records read.
    pub recorded: usize,
    /// Records whose state or class words this build cannot read (a warning each).
    pub unreadable: usize,
    /// Translations made from records (portable and device-class variants) in the pack.
    pub translated: usize,
    /// Translations from records the translator refused.
    pub failed: usize,
    /// Device-class variants among them.
    pub variants: usize,
}

fn translated_run(job: &Job, reused: bool, corrupt: bool) -> QueryRun {
    QueryRun {
        query: "translated",
        artifact: job.name.clone(),
        // For --explain: the pack key (a key the last build did not know is a new shader).
        inputs: vec![hex(&job.key)],
        reused,
        corrupt_cache_entry: corrupt,
    }
}

fn split_pack_memo(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let n = usize::try_from(u64::from_le_bytes(b.get(..8)?.try_into().ok()?)).ok()?;
    let pack = b.get(8..8usize.checked_add(n)?)?;
    let json = &b[8 + n..];
    serde_json::from_slice::<serde_json::Value>(json).ok()?;
    Some((pack, json))
}

/// `shaders.json`: the translator, the counts, and every shader found (file, offset, type,
/// code size, identity, pack key, outcome).
fn render_json(
    found: &[FileShaders],
    outcome: &BTreeMap<[u8; 32], Translated>,
    entries: usize,
    records: &RecordCounts,
) -> Vec<u8> {
    let mut counts = ShaderCounts {
        entries,
        ..Default::default()
    };
    let mut list = Vec::new();
    for f in found {
        for s in &f.shaders {
            counts.found += 1;
            let (result, error) = match s.key.as_deref().and_then(unhex32).map(|k| &outcome[&k]) {
                Some(Translated::Entry(_)) => {
                    counts.translated += 1;
                    ("translated", None)
                }
                Some(Translated::Failed(why)) => {
                    counts.failed += 1;
                    ("failed", Some(why.clone()))
                }
                None => {
                    counts.skipped += 1;
                    ("skipped", s.skipped.clone())
                }
            };
            list.push(serde_json::json!({
                "file": f.file,
                "offset": s.offset,
                "header_size": s.header_size,
                "code_offset": s.code_offset,
                "code_size": s.code_size,
                "type": s.shader_type,
                "stage": s.state.as_ref().map(|st| match st {
                    StaticState::Compute { .. } => "compute",
                    StaticState::Pixel { .. } => "pixel",
                }),
                "identity": s.identity,
                "key": s.key,
                "state": s.state,
                "translation": result,
                "error": error,
            }));
        }
    }
    let doc = serde_json::json!({
        "translator": translator_version(),
        "pack": SHADER_PACK,
        "pack_identity": hex(&pack_identity()),
        "counts": counts,
        "records": records,
        "shaders": list,
    });
    let mut b = serde_json::to_vec_pretty(&doc).expect("JSON");
    b.push(b'\n');
    b
}

fn counts_of(json: &[u8]) -> ShaderCounts {
    serde_json::from_slice::<serde_json::Value>(json)
        .ok()
        .and_then(|v| serde_json::from_value(v["counts"].clone()).ok())
        .unwrap_or_default()
}

/// The shaders the translator refused, one warning each (every build: they are not in the
/// pack, so each run translates them again).
fn warn_failed(json: &[u8]) {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(json) else {
        return;
    };
    for s in v["shaders"].as_array().into_iter().flatten() {
        if s["translation"] == "failed" {
            tracing::warn!(
                "{}: shader at offset {:#x} ({}): not translated (the run translates it when it meets it): {}",
                s["file"].as_str().unwrap_or("?"),
                s["offset"].as_u64().unwrap_or(0),
                s["type"].as_str().unwrap_or("?"),
                s["error"].as_str().unwrap_or("?")
            );
        }
    }
}

/// The shader counts of the last build (`aps5-out/shaders.json`), if it made one.
pub fn last_counts(out_dir: &Path) -> Option<ShaderCounts> {
    let bytes = std::fs::read(out_dir.join(SHADERS_JSON)).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    serde_json::from_value(v["counts"].clone()).ok()
}

/// Checks `aps5-out/packs/shaders.pack` whole ([`Pack::open`] with this translator's
/// identity, then [`Pack::verify`]). `Ok(None)`: there is none.
pub fn verify_pack(out_dir: &Path) -> Result<Option<usize>, PackError> {
    let path = out_dir.join(SHADER_PACK);
    if !path.exists() {
        return Ok(None);
    }
    let pack = Pack::open(&path, &pack_identity())?;
    pack.verify()?;
    Ok(Some(pack.len()))
}

/// Before a build writes the output tree: a current pack that fails [`verify_pack`] (a flipped
/// byte, even one that kept the file's size and time) has its remembered stamp forgotten, so
/// the build compares its bytes and writes it again. Never read for its contents.
pub fn forget_damaged_pack(out_dir: &Path, cache: &Cache) {
    match verify_pack(out_dir) {
        Ok(_) => return,
        // Another translator's pack (a toolchain update): replaced as any changed output.
        Err(PackError::Identity { .. }) => {}
        Err(e) => tracing::warn!("{e}: written again by this build"),
    }
    let path = format!("{}/{SHADER_PACK}", out_dir.display());
    let _ = cache.forget_file_hashes_under(&path);
}
