//! The salsa database: dump files are inputs, derived artifacts are tracked queries.
//!
//! Within one process salsa remembers every query result and re-runs only what depends on a
//! changed input. Across processes, each expensive query is memoized in the content cache under
//! `MemoKey(query name, query version, input hashes)`, so a new `aps5 build` reuses the last one's
//! work. Every query execution is logged (hit or miss), which is what `--explain` reports.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use aps5_cache::{Cache, ContentHash, Lookup, MemoKey};
use aps5_relink::{CoverageRow, PrxLibrary, PrxSet, RelinkOptions};

/// Bump a query's version whenever its code changes what it returns: cached results made by the
/// old code then stop matching, and `--explain` says "toolchain changed".
pub const QUERY_VERSIONS: &[(&str, &str)] = &[
    // Not memoized in the cache (see `module`); its version still names the parser's output.
    ("module", "1"),
    ("module_index", "1"),
    // Which dump files are modules (see module_files).
    ("module_paths", "1"),
    // 2: links against the sibling bundled modules too. 3: modules anywhere in the dump, the
    // run path reaching each module folder. 4: stored zstd-compressed.
    ("guest_module", "4"),
    // 2: bundled modules the host PRX set replaces no longer join the executable's link set.
    // 3: the run path reaches every module folder. 4: stored zstd-compressed, ELF first,
    // coverage after it. 5: the AMD-only sites (issue 14) stored with the coverage.
    ("app_elf", "6"),
    // Shaders (issue 13, shaders.rs): the static scan of one file and of the dump, the
    // translation of one program with its state, the pack and shaders.json. All four carry
    // the translator's identity (the scan decodes with its decoder and names pack keys).
    ("shader_scan", "1"),
    ("shaders", "1"),
    ("translated", "1"),
    ("shader_pack", "1"),
];

/// The version of one query (see [`QUERY_VERSIONS`]). The relink queries also carry the
/// relinker's own version (its crate version and a hash of its sources), so any change to the
/// relinker or the PRX set re-relinks.
pub fn query_version(query: &str) -> String {
    let v = QUERY_VERSIONS
        .iter()
        .find(|(q, _)| *q == query)
        .map(|(_, v)| *v)
        .unwrap_or("0");
    match query {
        "guest_module" | "app_elf" => format!("{v}+relink-{}", aps5_relink::VERSION),
        "shader_scan" | "shaders" | "translated" | "shader_pack" => {
            format!("{v}+translator-{}", crate::shaders::translator_version())
        }
        _ => v.to_string(),
    }
}

/// One file of the dump: path, size and blake3 (the mtime only decides whether to re-hash).
#[salsa::input(debug)]
pub struct SourceFile {
    /// Path relative to the dump, `/`-separated.
    #[returns(ref)]
    pub rel: String,
    /// Where to read it on this machine (never part of any output).
    #[returns(ref)]
    pub abs: PathBuf,
    #[returns(copy)]
    pub size: u64,
    #[returns(copy)]
    pub hash: ContentHash,
}

/// The dump as a whole: its files (sorted by path), which one is the main executable, and the
/// build options that change what the relinker produces.
#[salsa::input(debug)]
pub struct Dump {
    #[returns(ref)]
    pub files: Vec<SourceFile>,
    #[returns(ref)]
    pub executable: String,
    #[returns(copy)]
    pub allow_syscalls: bool,
    /// `[build] target_cpu`, as written (resolved by [`relink_options`]).
    #[returns(ref)]
    pub target_cpu: String,
}

/// What happened when a query ran: served from the content cache, or computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryRun {
    pub query: &'static str,
    /// The artifact it concerns (a dump path, or an output path).
    pub artifact: String,
    /// The dump files it was computed from.
    pub inputs: Vec<String>,
    pub reused: bool,
    /// Set when a cached result failed verification and was recomputed.
    pub corrupt_cache_entry: bool,
}

/// The queries' view of the database.
#[salsa::db]
pub trait Db: salsa::Database {
    fn cache(&self) -> &Cache;
    fn record(&self, run: QueryRun);
    /// The host PRX set this toolchain ships, and a hash of all its files (part of every relink
    /// query's key: a new PRX set re-relinks, and `--explain` says "toolchain changed").
    fn prx(&self) -> Result<&HostPrx, QueryError>;
    /// Runs `store` (which puts QUERY's result into the cache) on another thread, so the build
    /// goes on meanwhile; [`Database::finish_stores`] (or dropping the last handle of the
    /// database) waits for it. A store that fails only costs the next build the recomputation.
    fn store_later(&self, query: &'static str, store: StoreJob);
    /// The bytes of a dump file the scan already read and hashed (see [`Database::keep_bytes`]).
    fn scanned_bytes(&self, abs: &std::path::Path, hash: ContentHash) -> Option<Arc<Vec<u8>>>;
}

/// A deferred cache store (see [`Db::store_later`]).
pub type StoreJob = Box<dyn FnOnce(&Cache) -> Result<(), aps5_cache::CacheError> + Send>;

/// The cache stores still running, joined on [`Database::finish_stores`] or on drop.
#[derive(Default)]
struct PendingStores(Mutex<Vec<(&'static str, StoreThread)>>);

/// A thread running a [`StoreJob`].
type StoreThread = std::thread::JoinHandle<Result<(), String>>;

/// Bytes of dump files the scan read, by (path, hash) (see [`Database::keep_bytes`]).
type ScannedBytes = std::collections::HashMap<(PathBuf, ContentHash), Arc<Vec<u8>>>;

impl PendingStores {
    /// Waits for every store; the queries whose result could not be stored, with why.
    fn join(&self) -> Vec<(&'static str, String)> {
        let jobs = std::mem::take(&mut *self.0.lock().unwrap());
        let mut failed = Vec::new();
        for (query, job) in jobs {
            match job.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => failed.push((query, e)),
                Err(_) => failed.push((query, "the storing thread panicked".to_string())),
            }
        }
        failed
    }
}

impl Drop for PendingStores {
    fn drop(&mut self) {
        for (query, e) in self.join() {
            tracing::warn!("the {query} result was not stored in the cache: {e}");
        }
    }
}

/// The host PRX set as the graph uses it: the set, each file with its hash (hashed once per
/// process, for the manifest and for the identity), and an identity hash of all of them.
#[derive(Debug)]
pub struct HostPrx {
    pub set: PrxSet,
    /// (file name, bytes, blake3), in the set's order.
    pub files: Vec<(String, Arc<Vec<u8>>, ContentHash)>,
    pub identity: ContentHash,
}

/// The database of one aps5 process.
#[salsa::db]
#[derive(Clone)]
pub struct Database {
    storage: salsa::Storage<Self>,
    cache: Arc<Cache>,
    runs: Arc<Mutex<Vec<QueryRun>>>,
    prx: Arc<std::sync::OnceLock<Result<HostPrx, QueryError>>>,
    pending: Arc<PendingStores>,
    scanned: Arc<Mutex<ScannedBytes>>,
}

impl Database {
    pub fn new(cache: Arc<Cache>) -> Self {
        Database {
            storage: Default::default(),
            cache,
            runs: Default::default(),
            prx: Default::default(),
            pending: Default::default(),
            scanned: Default::default(),
        }
    }

    /// Hands the bytes the scan read of a dump file (those its hash was computed from) to the
    /// query that reads the file, which then neither reads nor hashes it again.
    pub fn keep_bytes(&self, abs: PathBuf, hash: ContentHash, bytes: Arc<Vec<u8>>) {
        self.scanned.lock().unwrap().insert((abs, hash), bytes);
    }

    /// Waits for the cache stores still running (see [`Db::store_later`]). One that failed is
    /// reported as a warning: the build's outputs are right, the next build recomputes it.
    pub fn finish_stores(&self) {
        let t = Instant::now();
        for (query, e) in self.pending.join() {
            tracing::warn!(
                "the {query} result was not stored in the cache (the next build computes it again): {e}"
            );
        }
        tracing::debug!("phase store_wait: {:.1} ms", ms_since(t));
    }

    /// Waits for the cache stores still running and forgets how they went (for work whose
    /// result the build does not use).
    pub fn discard_stores(&self) {
        let _ = self.pending.join();
    }

    /// Every query run so far, in order.
    pub fn take_runs(&self) -> Vec<QueryRun> {
        std::mem::take(&mut *self.runs.lock().unwrap())
    }
}

#[salsa::db]
impl salsa::Database for Database {}

#[salsa::db]
impl Db for Database {
    fn cache(&self) -> &Cache {
        &self.cache
    }
    fn record(&self, run: QueryRun) {
        self.runs.lock().unwrap().push(run);
    }
    fn scanned_bytes(&self, abs: &std::path::Path, hash: ContentHash) -> Option<Arc<Vec<u8>>> {
        self.scanned
            .lock()
            .unwrap()
            .remove(&(abs.to_path_buf(), hash))
    }
    fn store_later(&self, query: &'static str, store: StoreJob) {
        let cache = self.cache.clone();
        let job = std::thread::spawn(move || store(&cache).map_err(|e| e.to_string()));
        self.pending.0.lock().unwrap().push((query, job));
    }
    fn prx(&self) -> Result<&HostPrx, QueryError> {
        self.prx
            .get_or_init(|| {
                let set = PrxSet::installed()
                    .map_err(|e| QueryError::new(PathBuf::from("libs"), e.to_string()))?;
                let files: Vec<_> = set
                    .files()
                    .into_iter()
                    .map(|(name, bytes)| (name.to_string(), bytes.clone(), ContentHash::of(bytes)))
                    .collect();
                let mut h = blake3::Hasher::new();
                for (name, _, hash) in &files {
                    h.update(&(name.len() as u64).to_le_bytes());
                    h.update(name.as_bytes());
                    h.update(&hash.0);
                }
                let identity = ContentHash(*h.finalize().as_bytes());
                Ok(HostPrx {
                    set,
                    files,
                    identity,
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// A query failure, kept as a cloneable message so salsa can store it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryError {
    /// The file concerned (empty when the message names its own, as cache errors do).
    pub path: PathBuf,
    pub message: String,
    /// The file's bytes did not hash to what the scan said: a rebuild with fresh hashes
    /// repairs it (see `BuildError::is_input_changed`).
    pub input_changed: bool,
}

impl QueryError {
    pub fn new(path: PathBuf, message: String) -> QueryError {
        QueryError {
            path,
            message,
            input_changed: false,
        }
    }
}

/// Whether a dump file is a PS4/PS5 module, from its path and first bytes: the content decides
/// (an `ET_SCE_DYNAMIC` ELF, plain or in an fSELF, or a shared object in an fSELF), wherever the
/// file is and whatever its name; a head that does not settle it (an encrypted fSELF, a plain
/// `ET_DYN` shared object) makes a module of a `.prx`/`.sprx` file only. `sce_sys/` is left out: it is
/// the package's metadata for the console's shell (every package's `sce_sys/about/right.sprx`
/// is a module the program never loads).
pub fn is_module(rel: &str, head: &[u8]) -> bool {
    if rel.starts_with("sce_sys/") {
        return false;
    }
    match aps5_elf::sniff_module(head) {
        aps5_elf::Sniff::Module => true,
        aps5_elf::Sniff::ModuleIfNamedSo => rel.ends_with(".prx") || rel.ends_with(".sprx"),
        aps5_elf::Sniff::Other => false,
    }
}

/// The first [`aps5_elf::SNIFF_LEN`] bytes of a file (fewer if it is shorter; none if it cannot
/// be read: copying it reports that).
fn read_head(path: &std::path::Path) -> Vec<u8> {
    use std::io::Read;
    let mut head = Vec::with_capacity(aps5_elf::SNIFF_LEN);
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(aps5_elf::SNIFF_LEN as u64).read_to_end(&mut head);
    }
    head
}

/// The modules of a dump, in path order: the executable and every file whose content is a
/// module ([`is_module`]), so a program can load any of them by path. Reading the heads is
/// memoized in the content cache for the dump as a whole (its paths and hashes), so a no-op
/// build reads none; it is not a recorded query (it derives nothing a user would ask about).
#[salsa::tracked(returns(ref))]
pub fn module_files(db: &dyn Db, dump: Dump) -> Vec<SourceFile> {
    let exe = dump.executable(db);
    let files = dump.files(db);
    let hashes: Vec<ContentHash> = files.iter().map(|f| f.hash(db)).collect();
    let mut names = Vec::new();
    for f in files {
        names.extend_from_slice(f.rel(db).as_bytes());
        names.push(0);
    }
    let key = MemoKey::new(
        "module_paths",
        &query_version("module_paths"),
        &hashes,
        &names,
    );
    let known: Option<Vec<String>> = match db.cache().memo_get(&key) {
        Ok(Lookup::Hit(bytes)) => serde_json::from_slice(&bytes).ok(),
        _ => None,
    };
    let paths = known.unwrap_or_else(|| {
        let paths: Vec<String> = files
            .iter()
            .filter(|f| f.size(db) >= 64 && is_module(f.rel(db), &read_head(f.abs(db))))
            .map(|f| f.rel(db).clone())
            .collect();
        // A cache that cannot store it only costs the next build the same reads.
        let _ = db
            .cache()
            .memo_put(&key, &serde_json::to_vec(&paths).expect("JSON"));
        paths
    });
    let paths: std::collections::BTreeSet<&str> = paths.iter().map(String::as_str).collect();
    files
        .iter()
        .copied()
        .filter(|f| f.rel(db) == exe || paths.contains(f.rel(db).as_str()))
        .collect()
}

/// Reads a module file and checks it still has the bytes the scan hashed. Only a regular
/// file is read, and no more than one byte past the size the scan saw (a file swapped for a
/// FIFO or a device after the scan cannot hang or flood the build).
fn read_verified(db: &dyn Db, file: SourceFile) -> Result<Vec<u8>, QueryError> {
    let abs = file.abs(db);
    let fail = |message: String| QueryError::new(abs.clone(), message);
    let bytes = crate::dump::read_bounded(abs, file.size(db)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            fail(
                "the file vanished during the build; nothing was written: run the build again"
                    .into(),
            )
        } else {
            fail(format!("cannot read: {e}"))
        }
    })?;
    if ContentHash::of(&bytes) != file.hash(db) {
        return Err(QueryError {
            input_changed: true,
            ..fail(
                "the file changed while the build was reading it; nothing was written: run the build again once the dump is stable".into(),
            )
        });
    }
    Ok(bytes)
}

/// Milliseconds since `t`, for the `-vv` phase timings (`phase NAME: X ms`, which
/// `cargo xtask bench` reads).
pub(crate) fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// How a memoized result is kept in the cache.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stored {
    Plain,
    /// zstd ([`compress`]): for relink results, which are larger than their input.
    Compressed,
    /// As the parts are, on another thread (an encoding that is already small, written
    /// straight from its parts).
    Parts,
}

/// Looks a memoized result up in the content cache, computing and storing it on a miss.
/// `compute` returns the result and its encoding, as parts whose concatenation is what `decode`
/// reads back from a hit (the relinked ELF is shared with the result, not copied).
/// A compressed result is stored on other threads while the build goes on ([`Database`]
/// joins them before the build ends: see [`Db::store_later`]).
#[allow(clippy::too_many_arguments)]
fn memoized<T, E>(
    db: &dyn Db,
    query: &'static str,
    artifact: &str,
    inputs: &[&String],
    key: MemoKey,
    stored: Stored,
    decode: impl Fn(Vec<u8>) -> Option<T>,
    compute: impl FnOnce() -> Result<(T, Vec<Arc<Vec<u8>>>), E>,
) -> Result<T, E>
where
    E: From<aps5_cache::CacheError>,
{
    let mut corrupt = false;
    let t = Instant::now();
    let found = db.cache().memo_get(&key)?;
    tracing::debug!("phase {query}.lookup: {:.1} ms", ms_since(t));
    match found {
        Lookup::Hit(bytes) => {
            let plain = match stored {
                Stored::Plain => Some(bytes),
                Stored::Compressed => decompress(&bytes),
                Stored::Parts => Some(bytes),
            };
            if let Some(v) = plain.and_then(&decode) {
                db.record(QueryRun {
                    query,
                    artifact: artifact.into(),
                    inputs: inputs.iter().map(|s| s.to_string()).collect(),
                    reused: true,
                    corrupt_cache_entry: false,
                });
                return Ok(v);
            }
            // A stored result this code cannot read is as good as corrupt.
            corrupt = true;
        }
        Lookup::Corrupt => corrupt = true,
        Lookup::Miss => {}
    }
    let t = Instant::now();
    let (value, parts) = compute()?;
    tracing::debug!("phase {query}.compute: {:.1} ms", ms_since(t));
    match stored {
        Stored::Plain => {
            let t = Instant::now();
            let encoded = parts
                .iter()
                .map(|p| p.as_slice())
                .collect::<Vec<_>>()
                .concat();
            db.cache().memo_put(&key, &encoded)?;
            tracing::debug!(
                "phase {query}.store: {:.1} ms ({} bytes)",
                ms_since(t),
                encoded.len()
            );
        }
        Stored::Parts => db.store_later(
            query,
            Box::new(move |cache: &Cache| {
                let t = Instant::now();
                let slices: Vec<&[u8]> = parts.iter().map(|p| p.as_slice()).collect();
                cache.memo_put_parts(&key, &slices)?;
                tracing::debug!(
                    "phase {query}.store: {:.1} ms ({} bytes, on another thread)",
                    ms_since(t),
                    slices.iter().map(|s| s.len()).sum::<usize>()
                );
                Ok(())
            }),
        ),
        Stored::Compressed => db.store_later(
            query,
            Box::new(move |cache: &Cache| {
                let t = Instant::now();
                let packed = compress(&parts);
                cache.memo_put(&key, &packed)?;
                tracing::debug!(
                    "phase {query}.store: {:.1} ms ({} bytes, on another thread)",
                    ms_since(t),
                    packed.len()
                );
                Ok(())
            }),
        ),
    }
    db.record(QueryRun {
        query,
        artifact: artifact.into(),
        inputs: inputs.iter().map(|s| s.to_string()).collect(),
        reused: false,
        corrupt_cache_entry: corrupt,
    });
    Ok(value)
}

impl From<aps5_cache::CacheError> for QueryError {
    fn from(e: aps5_cache::CacheError) -> Self {
        // The cache's messages name their own file.
        QueryError::new(PathBuf::new(), e.to_string())
    }
}

/// A module file's bytes, read once per build (the parse and the relink share them) and
/// checked against the scan's hash.
#[salsa::tracked(returns(ref))]
pub fn module_bytes(db: &dyn Db, file: SourceFile) -> Result<Arc<Vec<u8>>, QueryError> {
    let t = Instant::now();
    // Bytes the scan read and hashed are the ones the hash names.
    let bytes = match db.scanned_bytes(file.abs(db), file.hash(db)) {
        Some(bytes) => bytes,
        None => Arc::new(read_verified(db, file)?),
    };
    tracing::debug!("phase read_module: {:.1} ms", ms_since(t));
    Ok(bytes)
}

/// The parsed PS4/PS5 module of one dump file. Not kept in the content cache: parsing is
/// cheaper than reading back any encoding of it (an executable with a million relocations
/// would store a blob as large as the file), and a build only parses when a query that needs
/// the module missed the cache. Its runs are still recorded, for `--explain`.
#[salsa::tracked(returns(ref))]
pub fn module(db: &dyn Db, file: SourceFile) -> Result<Arc<aps5_elf::Module>, QueryError> {
    let bytes = module_bytes(db, file).as_ref().map_err(Clone::clone)?;
    let t = Instant::now();
    let m =
        aps5_elf::parse(bytes).map_err(|e| QueryError::new(file.abs(db).clone(), e.to_string()))?;
    tracing::debug!("phase parse: {:.1} ms", ms_since(t));
    db.record(QueryRun {
        query: "module",
        artifact: file.rel(db).clone(),
        inputs: vec![file.rel(db).clone()],
        reused: false,
        corrupt_cache_entry: false,
    });
    Ok(Arc::new(m))
}

/// `modules.json`: the `aps5 inspect --json` report of every module, keyed by dump path. Memoized
/// on the module files' paths and hashes, so a no-op build does not even decode the modules.
#[salsa::tracked(returns(ref))]
pub fn module_index(db: &dyn Db, dump: Dump) -> Result<Arc<Vec<u8>>, QueryError> {
    let files = module_files(db, dump);
    let hashes: Vec<ContentHash> = files.iter().map(|f| f.hash(db)).collect();
    let mut names = dump.executable(db).clone();
    for f in files {
        names.push('\0');
        names.push_str(f.rel(db));
    }
    let key = MemoKey::new(
        "module_index",
        &query_version("module_index"),
        &hashes,
        names.as_bytes(),
    );
    memoized(
        db,
        "module_index",
        "modules.json",
        &files.iter().map(|f| f.rel(db)).collect::<Vec<_>>(),
        key,
        Stored::Plain,
        |bytes| Some(Arc::new(bytes)),
        || {
            let mut entries = serde_json::Map::new();
            for &f in files {
                let m = module(db, f).as_ref().map_err(Clone::clone)?;
                entries.insert(f.rel(db).clone(), aps5_elf::inspect::json(m));
            }
            let mut doc = serde_json::Map::new();
            doc.insert("executable".into(), dump.executable(db).clone().into());
            doc.insert("modules".into(), serde_json::Value::Object(entries));
            let mut bytes =
                serde_json::to_vec_pretty(&serde_json::Value::Object(doc)).expect("JSON");
            bytes.push(b'\n');
            let bytes = Arc::new(bytes);
            Ok((bytes.clone(), vec![bytes]))
        },
    )
}

/// The bundled modules (every module of the dump but the executable) that are converted
/// (relinked into `app0/` under their dump path), in path order. Those the host PRX set replaces are left out (see
/// [`replacing_host_file`]).
#[salsa::tracked(returns(ref))]
pub fn guest_module_files(db: &dyn Db, dump: Dump) -> Vec<SourceFile> {
    let exe = dump.executable(db);
    module_files(db, dump)
        .iter()
        .copied()
        .filter(|f| f.rel(db) != exe && replacing_host_file(db, *f).is_none())
        .collect()
}

/// The bundled modules the host PRX set replaces, with the host file replacing each, in path
/// order. They are neither relinked nor copied to the output.
pub fn replaced_module_files(db: &dyn Db, dump: Dump) -> Vec<(SourceFile, String)> {
    let exe = dump.executable(db);
    module_files(db, dump)
        .iter()
        .filter(|f| f.rel(db) != exe)
        .filter_map(|&f| Some((f, replacing_host_file(db, f)?)))
        .collect()
}

/// The host PRX file that replaces a bundled module, if any: one with the module's file name
/// (`sce_module/libc.prx` -> `libs/libc.prx`). Games and homebrew bundle the system libraries
/// the console's loader wants next to the program (Sony's `libc.prx`, OpenOrbis' stand-in stubs
/// of it); where the PRX set implements that library, its implementation serves the program,
/// and libkernel's `sceKernelLoadStartModule` of the bundled path returns the host library.
/// Decided by name alone, so no module is read to decide it.
pub fn replacing_host_file(db: &dyn Db, file: SourceFile) -> Option<String> {
    let name = file.rel(db).rsplit('/').next()?;
    let stem = name
        .strip_suffix(".sprx")
        .or_else(|| name.strip_suffix(".prx"))?;
    let host = format!("{stem}.prx");
    let prx = db.prx().ok()?;
    prx.files.iter().any(|(f, _, _)| *f == host).then_some(host)
}

/// A dump file's name (`sce_module/libfoo.prx` -> `libfoo.prx`): what the loader finds a
/// relinked module under (through the run path, see [`relink_options`]).
fn file_name(db: &dyn Db, file: SourceFile) -> &str {
    file.rel(db).rsplit('/').next().unwrap_or_default()
}

/// The output folder a converted module goes in (`app0/` + its dump folder).
fn output_dir(db: &dyn Db, file: SourceFile) -> String {
    match file.rel(db).rsplit_once('/') {
        Some((dir, _)) => format!("app0/{dir}"),
        None => "app0".into(),
    }
}

/// The relinker options for the executable (`module` None) or one converted module: the run
/// path reaches `libs/` and every folder holding a converted module (`app0/sce_module` first),
/// since a module anywhere in the dump may need another one.
fn relink_options(db: &dyn Db, dump: Dump, module: Option<SourceFile>) -> RelinkOptions {
    let mut module_dirs = vec!["app0/sce_module".to_string()];
    for &g in guest_module_files(db, dump) {
        let d = output_dir(db, g);
        if !module_dirs.contains(&d) {
            module_dirs.push(d);
        }
    }
    RelinkOptions {
        allow_syscalls: dump.allow_syscalls(db),
        output_dir: module.map(|f| output_dir(db, f)),
        module_dirs,
        // Checked when the configuration is loaded; an unknown name lowers for no AMD feature.
        target_cpu: Some(aps5_relink::CpuFeatures::named(dump.target_cpu(db)).unwrap_or_default()),
    }
}

/// The target CPU's part of a relink's cache key: the features it has (a `host` build made
/// on another CPU is another output).
fn cpu_key(opts: &RelinkOptions) -> [u8; 2] {
    let f = opts.target_cpu.unwrap_or_default();
    [
        b'c',
        opts.target_cpu.is_some() as u8
            | (f.sse4a as u8) << 1
            | (f.monitorx as u8) << 2
            | (f.clzero as u8) << 3
            | (f.rdpru as u8) << 4,
    ]
}

fn relink_error(db: &dyn Db, file: SourceFile, e: aps5_relink::RelinkError) -> QueryError {
    QueryError::new(file.abs(db).clone(), e.to_string())
}

/// A bundled module relinked into a Linux shared object (exports named by NID), memoized.
/// It links against the host PRX set and its sibling bundled modules (an import from a sibling
/// becomes a `DT_NEEDED` on the sibling's relinked file), so the key holds the siblings' paths
/// and hashes too.
#[salsa::tracked(returns(ref))]
pub fn guest_module(db: &dyn Db, dump: Dump, file: SourceFile) -> Result<Arc<Vec<u8>>, QueryError> {
    let HostPrx {
        set: prx,
        identity: prx_hash,
        ..
    } = db.prx()?;
    let opts = relink_options(db, dump, Some(file));
    let siblings: Vec<SourceFile> = guest_module_files(db, dump)
        .iter()
        .copied()
        .filter(|&g| g != file)
        .collect();
    let mut inputs = vec![file.hash(db), *prx_hash];
    let mut names = vec![opts.allow_syscalls as u8];
    names.extend_from_slice(&cpu_key(&opts));
    // The run path depends on where the module and its siblings are.
    names.extend_from_slice(opts.run_path(true).as_bytes());
    names.push(0);
    for &g in &siblings {
        inputs.push(g.hash(db));
        names.extend_from_slice(g.rel(db).as_bytes());
        names.push(0);
    }
    let mut deps = vec![file.rel(db)];
    deps.extend(siblings.iter().map(|g| g.rel(db)));
    memoized(
        db,
        "guest_module",
        file.rel(db),
        &deps,
        MemoKey::new(
            "guest_module",
            &query_version("guest_module"),
            &inputs,
            &names,
        ),
        Stored::Compressed,
        |bytes| Some(Arc::new(bytes)),
        || {
            let m = module(db, file).as_ref().map_err(Clone::clone)?;
            let parsed = siblings
                .iter()
                .map(|&g| {
                    let sm = module(db, g).as_ref().map_err(Clone::clone)?;
                    Ok((file_name(db, g), sm.as_ref()))
                })
                .collect::<Result<Vec<_>, QueryError>>()?;
            let set = prx.with_guest_modules(parsed);
            let bytes = module_bytes(db, file).as_ref().map_err(Clone::clone)?;
            let r = aps5_relink::relink_module(bytes, m, &set, &opts)
                .map_err(|e| relink_error(db, file, e))?;
            for w in &r.warnings {
                tracing::warn!("{}: {w}", file.rel(db));
            }
            let elf = Arc::new(r.elf);
            Ok((elf.clone(), vec![elf]))
        },
    )
}

/// The relinked main executable and its import coverage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppElf {
    /// The executable it was relinked from: the image's input pieces are ranges of it.
    pub input: Arc<Vec<u8>>,
    /// app.elf as pieces of `input` and bytes the relinker made (written from them, never
    /// made whole in memory).
    pub image: Arc<aps5_relink::OutputImage>,
    /// blake3 of app.elf.
    pub hash: ContentHash,
    pub coverage: Arc<Vec<CoverageRow>>,
    /// AMD-only instructions in its reachable code, and whether each was lowered.
    pub amd_only: Arc<Vec<aps5_relink::AmdOnlySite>>,
}

/// The zstd level of stored relink results: the fastest of the standard levels (about 200 MB/s
/// a core here), which shrinks machine code and relocation tables about threefold.
const ZSTD_LEVEL: i32 = 1;

/// Input piece each thread compresses (independent frames, which decode as one).
const ZSTD_PIECE: usize = 8 << 20;

/// PARTS (one byte string, in pieces) as concatenated zstd frames, compressed on up to
/// `available_parallelism` threads, after a u64 (little-endian) of the plain length.
fn compress(parts: &[Arc<Vec<u8>>]) -> Vec<u8> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let piece = total.div_ceil(threads).max(ZSTD_PIECE);
    let frames: Vec<Vec<u8>> = std::thread::scope(|s| {
        let workers: Vec<_> = parts
            .iter()
            .flat_map(|p| p.chunks(piece))
            .map(|c| s.spawn(move || zstd::bulk::compress(c, ZSTD_LEVEL).expect("zstd")))
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("zstd thread"))
            .collect()
    });
    let mut out = Vec::with_capacity(8 + frames.iter().map(Vec::len).sum::<usize>());
    out.extend_from_slice(&(total as u64).to_le_bytes());
    for f in frames {
        out.extend_from_slice(&f);
    }
    out
}

/// Undoes [`compress`]; `None` for anything else.
fn decompress(bytes: &[u8]) -> Option<Vec<u8>> {
    let len = usize::try_from(u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?)).ok()?;
    let plain = zstd::bulk::decompress(&bytes[8..], len).ok()?;
    (plain.len() == len).then_some(plain)
}

impl AppElf {
    /// What the cache keeps of an app.elf: the image against its input (a delta: the input's
    /// segments are not stored again, and nothing is compressed), app.elf's hash, then the
    /// JSON of (coverage, AMD-only sites):
    ///
    /// `APS5IMG1`, hash (32), file length, piece count, per piece (at, kind: 0 input / 1 new
    /// bytes, input offset or 0, length), the new bytes in piece order, the JSON, its length
    /// (integers u64 little-endian). Returned as parts whose concatenation is the encoding.
    fn encode(&self) -> Vec<Arc<Vec<u8>>> {
        use aps5_relink::PieceData;
        let pieces = &self.image.pieces;
        let mut head = Vec::with_capacity(56 + 32 * pieces.len());
        head.extend_from_slice(IMAGE_MAGIC);
        head.extend_from_slice(&self.hash.0);
        for v in [self.image.len, pieces.len() as u64] {
            head.extend_from_slice(&v.to_le_bytes());
        }
        let mut parts = vec![];
        for p in pieces {
            let (kind, from) = match &p.data {
                PieceData::Input { from, .. } => (0u64, *from),
                PieceData::Bytes(b) => {
                    parts.push(b.clone());
                    (1, 0)
                }
            };
            for v in [p.at, kind, from, p.len()] {
                head.extend_from_slice(&v.to_le_bytes());
            }
        }
        let mut json = serde_json::to_vec(&(&*self.coverage, &*self.amd_only)).expect("JSON");
        let n = json.len() as u64;
        json.extend_from_slice(&n.to_le_bytes());
        parts.insert(0, Arc::new(head));
        parts.push(Arc::new(json));
        parts
    }

    /// Undoes [`AppElf::encode`] against `input` (the executable's bytes, checked by the scan's
    /// hash); `None` for anything else, or for pieces that do not fit the input.
    fn decode(bytes: Vec<u8>, input: Arc<Vec<u8>>) -> Option<AppElf> {
        use aps5_relink::{OutputImage, Piece, PieceData};
        let u64_at = |o: usize| -> Option<u64> {
            Some(u64::from_le_bytes(
                bytes.get(o..o.checked_add(8)?)?.try_into().ok()?,
            ))
        };
        if bytes.get(..8)? != IMAGE_MAGIC {
            return None;
        }
        let hash = ContentHash(bytes.get(8..40)?.try_into().ok()?);
        let (len, n) = (u64_at(40)?, usize::try_from(u64_at(48)?).ok()?);
        let mut made_at = 56usize.checked_add(n.checked_mul(32)?)?;
        let mut pieces = Vec::with_capacity(n.min(bytes.len() / 32));
        for i in 0..n {
            let f = |k: usize| u64_at(56 + 32 * i + 8 * k);
            let (at, kind, from, plen) = (f(0)?, f(1)?, f(2)?, f(3)?);
            let data = match kind {
                0 => PieceData::Input { from, len: plen },
                1 => {
                    let end = made_at.checked_add(usize::try_from(plen).ok()?)?;
                    let b = bytes.get(made_at..end)?.to_vec();
                    made_at = end;
                    PieceData::Bytes(Arc::new(b))
                }
                _ => return None,
            };
            pieces.push(Piece { at, data });
        }
        let image = OutputImage { len, pieces };
        image.check(input.len() as u64).ok()?;
        let trailer = bytes.len().checked_sub(8)?;
        let json_len = usize::try_from(u64_at(trailer)?).ok()?;
        let json_at = trailer.checked_sub(json_len)?;
        if json_at != made_at {
            return None;
        }
        let (coverage, amd_only) = serde_json::from_slice(&bytes[json_at..trailer]).ok()?;
        Some(AppElf {
            input,
            image: Arc::new(image),
            hash,
            coverage: Arc::new(coverage),
            amd_only: Arc::new(amd_only),
        })
    }
}

/// The first bytes of a stored [`AppElf`].
const IMAGE_MAGIC: &[u8; 8] = b"APS5IMG1";

/// `app.elf`: the main executable relinked against the host PRX set and the relinked bundled
/// modules (a library the host set implements is bound to the host set: it is listed first).
#[salsa::tracked(returns(ref))]
pub fn app_elf(db: &dyn Db, dump: Dump) -> Result<AppElf, QueryError> {
    let exe = module_files(db, dump)
        .iter()
        .copied()
        .find(|f| f.rel(db) == dump.executable(db))
        .expect("the scan checked that the executable exists");
    let HostPrx {
        set: prx,
        identity: prx_hash,
        ..
    } = db.prx()?;
    let opts = relink_options(db, dump, None);
    let guests = guest_module_files(db, dump);
    let mut inputs = vec![exe.hash(db), *prx_hash];
    let mut names = Vec::new();
    for &g in guests {
        inputs.push(g.hash(db));
        names.extend_from_slice(g.rel(db).as_bytes());
        names.push(0);
    }
    names.push(opts.allow_syscalls as u8);
    names.extend_from_slice(&cpu_key(&opts));
    names.extend_from_slice(opts.run_path(false).as_bytes());
    let mut deps = vec![exe.rel(db)];
    deps.extend(guests.iter().map(|g| g.rel(db)));
    memoized(
        db,
        "app_elf",
        "app.elf",
        &deps,
        MemoKey::new("app_elf", &query_version("app_elf"), &inputs, &names),
        Stored::Parts,
        |bytes| AppElf::decode(bytes, module_bytes(db, exe).as_ref().ok()?.clone()),
        || {
            let mut set = prx.clone();
            for &g in guests {
                let relinked = guest_module(db, dump, g)
                    .as_ref()
                    .map_err(Clone::clone)?
                    .clone();
                let m = module(db, g).as_ref().map_err(Clone::clone)?;
                set.libraries
                    .extend(PrxLibrary::from_guest_module(m, file_name(db, g), relinked));
            }
            let m = module(db, exe).as_ref().map_err(Clone::clone)?;
            let bytes = module_bytes(db, exe).as_ref().map_err(Clone::clone)?;
            let t = Instant::now();
            let r = aps5_relink::relink_executable_image(bytes, m, &set, &opts)
                .map_err(|e| relink_error(db, exe, e))?;
            for w in &r.warnings {
                tracing::warn!("{}: {w}", exe.rel(db));
            }
            tracing::debug!("phase relink: {:.1} ms", ms_since(t));
            let t = Instant::now();
            let hash = ContentHash::of_parts(r.image.slices(bytes));
            tracing::debug!("phase app_elf.hash: {:.1} ms", ms_since(t));
            let app = AppElf {
                input: bytes.clone(),
                image: Arc::new(r.image),
                hash,
                coverage: Arc::new(r.coverage),
                amd_only: Arc::new(r.amd_only),
            };
            let parts = app.encode();
            Ok((app, parts))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use aps5_relink::{OutputImage, Piece, PieceData};

    fn sample() -> (AppElf, Vec<u8>) {
        let input: Vec<u8> = (0..100u8).collect();
        let image = OutputImage {
            len: 64,
            pieces: vec![
                Piece {
                    at: 0,
                    data: PieceData::Bytes(Arc::new(b"hdr".to_vec())),
                },
                Piece {
                    at: 8,
                    data: PieceData::Input { from: 90, len: 10 },
                },
                Piece {
                    at: 40,
                    data: PieceData::Bytes(Arc::new(vec![7; 20])),
                },
            ],
        };
        let elf = image.to_vec(&input);
        let app = AppElf {
            input: Arc::new(input.clone()),
            image: Arc::new(image),
            hash: ContentHash::of(&elf),
            coverage: Arc::new(vec![]),
            amd_only: Arc::new(vec![]),
        };
        (app, input)
    }

    fn encoded(app: &AppElf) -> Vec<u8> {
        app.encode()
            .iter()
            .flat_map(|p| p.iter().copied())
            .collect()
    }

    #[test]
    fn an_app_elf_decodes_as_it_was_encoded() {
        let (app, input) = sample();
        let back = AppElf::decode(encoded(&app), Arc::new(input)).unwrap();
        assert_eq!(back, app);
    }

    /// A stored delta that does not fit (cut anywhere, or against a shorter input) is a miss,
    /// never a panic or a wrong file.
    #[test]
    fn a_delta_that_does_not_fit_is_refused() {
        let (app, input) = sample();
        let bytes = encoded(&app);
        for cut in 0..bytes.len() {
            assert!(
                AppElf::decode(bytes[..cut].to_vec(), Arc::new(input.clone())).is_none(),
                "cut at {cut}"
            );
        }
        // The input piece reads bytes 90..100.
        assert!(AppElf::decode(bytes.clone(), Arc::new(input[..99].to_vec())).is_none());
        // A piece count far past the blob.
        let mut huge = bytes.clone();
        huge[48..56].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(AppElf::decode(huge, Arc::new(input.clone())).is_none());
    }
}
