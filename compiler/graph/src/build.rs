//! `aps5 build`: scan the dump, run the queries, emit the output tree, explain what was redone.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use aps5_cache::Cache;
use serde::{Deserialize, Serialize};

use crate::config::{CONFIG_FILE, Config, Layout};
use crate::db::{self, Database, Db, Dump, QueryRun, SourceFile};
use crate::dump::{self, Scan};
use crate::emit::{self, Output, Source};
use crate::error::BuildError;
use crate::outtree::{self, OutTree};

/// How to report progress of long phases (the CLI draws bars; tests pass a no-op).
pub trait Progress: Sync {
    /// `phase` started or advanced: `done` of `total` units (bytes for hashing).
    fn update(&self, phase: &str, done: u64, total: u64);
    fn finish(&self, phase: &str);
}

/// A progress reporter that reports nothing.
pub struct NoProgress;
impl Progress for NoProgress {
    fn update(&self, _: &str, _: u64, _: u64) {}
    fn finish(&self, _: &str) {}
}

/// One recomputed artifact and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Recomputed {
    pub query: String,
    pub artifact: String,
    pub reason: String,
}

/// What a build did (`aps5 build --json` prints this).
#[derive(Clone, Debug, Serialize)]
pub struct BuildReport {
    pub recomputed: Vec<Recomputed>,
    pub reused: usize,
    pub written: usize,
    pub elapsed_ms: u64,
    /// Files hashed because the cache index did not know them (not in the JSON contract; extra).
    pub hashed_files: usize,
    pub hashed_bytes: u64,
    pub removed: Vec<String>,
    pub dump_files: usize,
}

/// The identity of this toolchain, as written into every manifest.
pub fn toolchain_identity() -> serde_json::Value {
    let queries: BTreeMap<&str, String> = db::QUERY_VERSIONS
        .iter()
        .map(|(q, _)| (*q, db::query_version(q)))
        .collect();
    serde_json::json!({
        "name": "aps5",
        "version": env!("CARGO_PKG_VERSION"),
        "queries": queries,
    })
}

/// The last build's inputs and query versions, kept in `.aps5/state.json` so that `--explain` can
/// say why something was recomputed. Not an output; never read for correctness.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct State {
    inputs: BTreeMap<String, String>,
    queries: BTreeMap<String, String>,
    /// `[build] target_cpu` and the features it resolved to (see [`Project::target_key`]).
    #[serde(default)]
    target_cpu: Option<String>,
    /// The pack key of every shader translated (issue 13): one not listed is a new shader.
    #[serde(default)]
    shaders: Vec<String>,
}

const STATE_FILE: &str = "state.json";
/// In the output folder: the target CPU the port was built for and its AMD-only sites.
pub const TARGET_JSON: &str = "target.json";

/// An opened project: settings, resolved paths and the cache.
pub struct Project {
    pub config: Config,
    pub layout: Layout,
    pub cache: Arc<Cache>,
}

impl Project {
    /// Opens the project whose `aps5.toml` is in `dir`.
    pub fn open(dir: &Path) -> Result<Project, BuildError> {
        let config = Config::load(dir)?;
        let layout = Layout::new(dir, &config)?;
        let cache = Arc::new(Cache::open(&layout.cache_dir)?);
        Ok(Project {
            config,
            layout,
            cache,
        })
    }

    /// Top-level names of the dump that belong to aps5, not to the game.
    fn skipped_names(&self) -> Vec<String> {
        let mut skip = vec![CONFIG_FILE.to_string(), ".aps5".to_string()];
        for dir in [&self.layout.out_dir, &self.layout.data_dir] {
            if let Some(first) = dir
                .strip_prefix(&self.layout.dump_dir)
                .ok()
                .and_then(|rel| rel.components().next())
            {
                skip.push(first.as_os_str().to_string_lossy().into_owned());
            }
        }
        skip
    }

    /// Scans the dump (restoring known hashes) and loads it into a fresh database.
    pub fn load(&self, progress: &dyn Progress) -> Result<(Database, Dump, Scan), BuildError> {
        let jobs = self.config.build.threads();
        let scan = dump::scan(
            &self.layout.dump_dir,
            &self.skipped_names(),
            &self.config.project.executable,
            &self.cache,
            jobs,
            &|d, t| progress.update("hashing", d, t),
        )?;
        progress.finish("hashing");
        let exe = &self.config.project.executable;
        if !scan.files.iter().any(|f| &f.rel == exe) {
            return Err(BuildError::NotADump {
                dir: self.layout.dump_dir.clone(),
                reason: format!(
                    "the executable {exe} (project.executable in aps5.toml) {}",
                    dump::why_not_scanned(&self.layout.dump_dir, exe)
                ),
            });
        }
        let db = Database::new(self.cache.clone());
        for f in &scan.files {
            if let Some(bytes) = &f.bytes {
                db.keep_bytes(f.abs.clone(), f.hash, bytes.clone());
            }
        }
        let files: Vec<SourceFile> = scan
            .files
            .iter()
            .map(|f| SourceFile::new(&db, f.rel.clone(), f.abs.clone(), f.stamp.size, f.hash))
            .collect();
        let dump = Dump::new(
            &db,
            files,
            exe.clone(),
            self.config.build.allow_syscalls,
            self.config.build.target_cpu.clone(),
        );
        Ok((db, dump, scan))
    }

    /// Takes the project's lock: one build (or clean) of a project at a time; a second one waits.
    pub fn lock(&self) -> Result<outtree::ProjectLock, BuildError> {
        outtree::lock(&self.layout.state_dir, &|msg| tracing::warn!("{msg}"))
    }

    /// Removes the output tree, its generations and the build state (`aps5 clean`).
    pub fn clean(&self) -> Result<(), BuildError> {
        let _lock = self.lock()?;
        let tree = OutTree::open(
            &self.layout.project_dir,
            &self.config.project.out_dir,
            &self.layout.state_dir,
        )?;
        tree.remove()?;
        let state = &self.layout.state_dir;
        // The lock file goes last, with the folder (the lock is held through its open fd).
        std::fs::remove_dir_all(state).map_err(|e| BuildError::io("remove", state, e))
    }

    /// Runs a build. When a dump file's bytes turn out not to be what the scan said (a hash
    /// remembered in the cache index was wrong, or the file changed), the remembered hashes of
    /// the dump are dropped and the build runs once more on fresh hashes; only a file that
    /// changes again is reported.
    pub fn build(&self, progress: &dyn Progress) -> Result<BuildReport, BuildError> {
        // One lock over both tries: a second build of the project waits for this one.
        let _lock = self.lock()?;
        match self.build_once(progress) {
            Err(e) if e.is_input_changed() => {
                let path = e.changed_input().unwrap_or(Path::new("?")).display();
                tracing::warn!(
                    "{path}: its bytes are not what the scan hashed (a wrong hash remembered in the cache index, or the file changed); hashing the dump again and building once more"
                );
                dump::forget_remembered(&self.cache, &self.layout.dump_dir)?;
                self.build_once(progress)
            }
            result => result,
        }
    }

    fn build_once(&self, progress: &dyn Progress) -> Result<BuildReport, BuildError> {
        let start = Instant::now();
        let (db, dump, scan) = self.load(progress)?;
        tracing::debug!("scanned {} files: {:?}", scan.files.len(), start.elapsed());
        tracing::debug!("phase scan: {:.1} ms", db::ms_since(start));

        // Everything is computed before anything is written, so a failing query leaves the
        // previous output untouched.
        // Play records (what runs met that the pack did not hold) are inputs of the shader
        // outputs too.
        let records =
            crate::shaders::read_records(&self.layout.state_dir).map_err(|e| query_error(&e))?;
        // And the pipeline states they hold, packed for the runtime's prewarm.
        let (pipeline_pack, pipelines_packed) =
            crate::pipelines::pack_bytes(&crate::pipelines::read_records(&self.layout.state_dir))
                .map_err(|e| {
                query_error(&db::QueryError::new(
                    crate::pipelines::PIPELINE_PACK.into(),
                    e.to_string(),
                ))
            })?;
        tracing::debug!("{pipelines_packed} pipelines packed");
        // Every shader of the dump, translated into packs/shaders.pack (issue 13), on another
        // thread (a handle on the same salsa storage): the relink runs on one core, and the
        // shader scan reads every dump file, so a cold build overlaps the two.
        let jobs = self.config.build.threads();
        let (index, app, shaders) = std::thread::scope(|s| {
            let shader_db = db.clone();
            let shaders = s
                .spawn(move || crate::shaders::outputs(&shader_db, dump, &records, jobs, progress));
            // The module index (a report of every module) on a third: the relink does not
            // wait for it. When both fail, the index's error is the build's, as when the
            // index ran first.
            let index_db = db.clone();
            let index = s.spawn(move || db::module_index(&index_db, dump).clone());
            let app = db::app_elf(&db, dump).clone();
            let index = index.join().expect("the module index thread");
            let app = index.is_ok().then_some(app);
            (index, app, shaders.join().expect("the shader thread"))
        });
        // The errors in the order the queries ran in before they overlapped.
        let index = index.map_err(|e| {
            // The relink ran only because it overlapped the index: its cache stores say
            // nothing (the index's error is the build's, as when the relink never ran).
            db.discard_stores();
            query_error(&e)
        })?;
        let app = app
            .expect("relinked when the index was made")
            .map_err(|e| query_error(&e))?;
        let prx = db.prx().map_err(|e| query_error(&e))?;
        let shaders = shaders.map_err(|e| query_error(&e))?;
        tracing::debug!("queries done: {:?}", start.elapsed());
        let guests: BTreeMap<&str, Arc<Vec<u8>>> = db::guest_module_files(&db, dump)
            .iter()
            .map(|&g| {
                Ok((
                    g.rel(&db).as_str(),
                    db::guest_module(&db, dump, g)
                        .as_ref()
                        .map_err(query_error)?
                        .clone(),
                ))
            })
            .collect::<Result<_, BuildError>>()?;
        // Bundled modules the host PRX set replaces are not part of the output (see
        // db::replacing_host_file).
        let replaced: BTreeSet<String> = db::replaced_module_files(&db, dump)
            .into_iter()
            .map(|(f, _)| f.rel(&db).clone())
            .collect();
        let mut outputs: Vec<Output> = scan
            .files
            .iter()
            .filter(|f| !replaced.contains(&f.rel))
            .map(|f| match guests.get(f.rel.as_str()) {
                // Bundled modules are replaced by their relinked form, where the loader finds them.
                Some(relinked) => Output::bytes(format!("app0/{}", f.rel), relinked.clone(), false),
                None => Output {
                    rel: format!("app0/{}", f.rel),
                    hash: f.hash,
                    size: f.stamp.size,
                    executable: false,
                    source: Source::File {
                        abs: f.abs.clone(),
                        dev: f.dev,
                        inode: f.stamp.inode,
                    },
                },
            })
            .collect();
        outputs.push(Output::bytes("modules.json".into(), index, false));
        outputs.push(Output::image(
            "app.elf".into(),
            app.input.clone(),
            app.image.clone(),
            app.hash,
            true,
        ));
        let mut coverage = serde_json::to_vec_pretty(&*app.coverage).expect("JSON");
        coverage.push(b'\n');
        outputs.push(Output::bytes(
            "coverage.json".into(),
            Arc::new(coverage),
            false,
        ));
        // The CPU the port was built for (`aps5 run` refuses to run it on one lacking any of
        // its AMD-only groups) and each AMD-only site in the executable's reachable code,
        // lowered or not (issue 14).
        let mut target = serde_json::to_vec_pretty(&serde_json::json!({
            "target_cpu": self.config.build.target_cpu,
            "features": aps5_relink::CpuFeatures::named(&self.config.build.target_cpu)
                .unwrap_or_default(),
            "amd_only": &*app.amd_only,
        }))
        .expect("JSON");
        target.push(b'\n');
        outputs.push(Output::bytes(TARGET_JSON.into(), Arc::new(target), false));
        outputs.push(Output::bytes(
            crate::shaders::SHADERS_JSON.into(),
            shaders.json.clone(),
            false,
        ));
        outputs.push(Output::bytes(
            crate::shaders::SHADER_PACK.into(),
            shaders.pack.clone(),
            false,
        ));
        outputs.push(Output::bytes(
            crate::pipelines::PIPELINE_PACK.into(),
            pipeline_pack,
            false,
        ));
        for (name, bytes, hash) in &prx.files {
            outputs.push(Output {
                rel: format!("libs/{name}"),
                hash: *hash,
                size: bytes.len() as u64,
                executable: false,
                source: Source::Bytes(bytes.clone()),
            });
        }
        outputs.sort_by(|a, b| a.rel.cmp(&b.rel));

        let title = serde_json::to_value(&self.config.title).expect("JSON");
        let manifest = emit::render_manifest(&outputs, &toolchain_identity(), &title);
        tracing::debug!("outputs listed: {:?}", start.elapsed());
        let mut tree = OutTree::open(
            &self.layout.project_dir,
            &self.config.project.out_dir,
            &self.layout.state_dir,
        )?;
        // The same manifest as the last build's means the same outputs with the same bytes:
        // nothing to compare file by file (a no-op build of 10,000 files skips the parse).
        let previous_bytes = tree.manifest();
        let first_build = previous_bytes.is_none();
        let same_manifest = previous_bytes.as_deref() == Some(manifest.as_slice());
        let previous_manifest = previous_bytes
            .filter(|_| !same_manifest)
            .and_then(|b| emit::parse_manifest(&b));
        let previous = previous_manifest
            .as_ref()
            .map(|m| m.hashes.keys().cloned().collect())
            .unwrap_or_default();
        let previous_hashes = previous_manifest.map(|m| m.hashes).unwrap_or_default();
        // A damaged pack in the current tree is compared byte by byte, so it is rewritten.
        crate::shaders::forget_damaged_pack(&self.layout.out_dir, &self.cache);
        crate::pipelines::forget_damaged_pack(&self.layout.out_dir, &self.cache);
        progress.update("writing", 0, outputs.len() as u64);
        let emit_start = Instant::now();
        let emitted = emit::emit(
            &mut tree,
            &self.layout.out_dir,
            &outputs,
            &manifest,
            same_manifest,
            &previous,
            self.config.build.link_mode,
            &self.cache,
        )?;
        progress.finish("writing");
        tracing::debug!("phase emit: {:.1} ms", db::ms_since(emit_start));
        // The relink results were being stored in the cache meanwhile.
        db.finish_stores();

        // The last build's state is read only when something needs explaining.
        let old_state = std::cell::OnceCell::new();
        let old = || old_state.get_or_init(|| self.read_state());
        let runs = db.take_runs();
        let mut recomputed = Vec::new();
        let mut reused = 0;
        for run in &runs {
            if run.reused {
                reused += 1;
            } else {
                recomputed.push(Recomputed {
                    query: run.query.into(),
                    artifact: run.artifact.clone(),
                    reason: if run.query == "translated" {
                        explain_translated(old(), run)
                    } else {
                        explain(old(), &scan, run, &self.target_key())
                    }
                    .into(),
                });
            }
        }
        // An output is recomputed when its bytes differ from the last build's (even where a hard
        // link already carried the new bytes), or when it had to be written again.
        let written: BTreeMap<&str, &str> = emitted
            .written
            .iter()
            .map(|(r, w)| (r.as_str(), *w))
            .collect();
        let compared = if same_manifest && written.is_empty() {
            &[][..]
        } else {
            &outputs[..]
        };
        for o in compared
            .iter()
            .map(|o| (o.rel.as_str(), o.hash.to_hex()))
            .chain([(emit::MANIFEST, String::new())])
        {
            let (rel, hash) = o;
            let changed =
                rel != emit::MANIFEST && !same_manifest && previous_hashes.get(rel) != Some(&hash);
            let reason = match (changed, written.get(rel)) {
                (false, None) => continue,
                (true, _) if previous_hashes.contains_key(rel) => match rel.strip_prefix("app0/") {
                    Some(input) => input_reason(old(), &scan, input),
                    None => "changed input",
                },
                (true, _) => "new input",
                (false, Some(_)) if rel == emit::MANIFEST && first_build => "new input",
                (false, Some(_)) if rel == emit::MANIFEST => "changed input",
                (false, Some(why)) => why,
            };
            recomputed.push(Recomputed {
                query: "output".into(),
                artifact: rel.into(),
                reason: reason.into(),
            });
        }
        reused += outputs.len()
            - recomputed
                .iter()
                .filter(|r| r.query == "output" && r.artifact != emit::MANIFEST)
                .count();
        // Nothing recomputed means the inputs are the ones the state already records.
        if !recomputed.is_empty() || !self.layout.state_dir.join(STATE_FILE).exists() {
            self.write_state(&scan, &shaders.keys)?;
        }
        tracing::debug!("emitted: {:?}", start.elapsed());
        tracing::debug!("phase total: {:.1} ms", db::ms_since(start));
        Ok(BuildReport {
            recomputed,
            reused,
            written: emitted.written.len(),
            elapsed_ms: start.elapsed().as_millis() as u64,
            hashed_files: scan.hashed,
            hashed_bytes: scan.hashed_bytes,
            removed: emitted.removed,
            dump_files: scan.files.len(),
        })
    }

    /// Whether the dump as scanned now is the one the last build used.
    pub fn built_from(&self, scan: &Scan) -> bool {
        self.read_state().is_some_and(|st| {
            st.inputs.len() == scan.files.len()
                && scan
                    .files
                    .iter()
                    .all(|f| st.inputs.get(&f.rel) == Some(&f.hash.to_hex()))
        })
    }

    /// `target_cpu` with the features it resolves to here (`host` differs between machines).
    fn target_key(&self) -> String {
        let name = &self.config.build.target_cpu;
        let f = aps5_relink::CpuFeatures::named(name).unwrap_or_default();
        format!("{name} {f:?}")
    }

    fn read_state(&self) -> Option<State> {
        let bytes = std::fs::read(self.layout.state_dir.join(STATE_FILE)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    fn write_state(&self, scan: &Scan, shader_keys: &[String]) -> Result<(), BuildError> {
        let state = State {
            inputs: scan
                .files
                .iter()
                .map(|f| (f.rel.clone(), f.hash.to_hex()))
                .collect(),
            queries: db::QUERY_VERSIONS
                .iter()
                .map(|(q, _)| (q.to_string(), db::query_version(q)))
                .collect(),
            target_cpu: Some(self.target_key()),
            shaders: shader_keys.to_vec(),
        };
        let path = self.layout.state_dir.join(STATE_FILE);
        let bytes = serde_json::to_vec_pretty(&state).expect("JSON");
        if std::fs::read(&path).ok().as_deref() == Some(bytes.as_slice()) {
            return Ok(());
        }
        emit::write_atomic(&path, &bytes)
    }
}

fn query_error(e: &db::QueryError) -> BuildError {
    BuildError::from(e)
}

fn input_reason(old: &Option<State>, scan: &Scan, input: &str) -> &'static str {
    let Some(old) = old else { return "new input" };
    let now = scan
        .files
        .iter()
        .find(|f| f.rel == input)
        .map(|f| f.hash.to_hex());
    match old.inputs.get(input) {
        None => "new input",
        Some(h) if Some(h) != now.as_ref() => "changed input",
        _ => "output missing",
    }
}

/// Why a shader was translated: a (program, state) the last build did not have, a
/// translator change, or a cache miss.
fn explain_translated(old: &Option<State>, run: &QueryRun) -> &'static str {
    if run.corrupt_cache_entry {
        return "cache miss (corrupt cache entry)";
    }
    let Some(state) = old else {
        return "new shader";
    };
    if run
        .inputs
        .first()
        .is_none_or(|k| state.shaders.binary_search(k).is_err())
    {
        return "new shader";
    }
    if state.queries.get(run.query) != Some(&db::query_version(run.query)) {
        return "translator changed";
    }
    "cache miss"
}

/// Why a query missed the content cache.
fn explain(old: &Option<State>, scan: &Scan, run: &QueryRun, target: &str) -> &'static str {
    if run.corrupt_cache_entry {
        return "cache miss (corrupt cache entry)";
    }
    let Some(state) = old else { return "new input" };
    if matches!(run.query, "app_elf" | "guest_module")
        && state.target_cpu.as_deref().is_some_and(|t| t != target)
    {
        return "target CPU changed";
    }
    let reasons: Vec<&str> = run
        .inputs
        .iter()
        .map(|i| input_reason(old, scan, i))
        .collect();
    for r in ["new input", "changed input"] {
        if reasons.contains(&r) {
            return r;
        }
    }
    if state.queries.get(run.query) != Some(&db::query_version(run.query)) {
        return if run.query == "shader_pack" {
            "translator changed"
        } else {
            "toolchain changed"
        };
    }
    "cache miss"
}
