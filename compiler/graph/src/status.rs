//! `aps5 status`: what the project is and where its build stands.

use std::fmt::Write;

use serde::Serialize;

use crate::build::{Progress, Project};
use crate::db;
use crate::emit;
use crate::error::BuildError;

/// Imports of one library in one module.
#[derive(Clone, Debug, Serialize)]
pub struct LibraryImports {
    pub library: String,
    pub imports: usize,
    /// How many of them the embedded names database can name.
    pub named: usize,
}

/// One module of the dump.
#[derive(Clone, Debug, Serialize)]
pub struct ModuleStatus {
    pub path: String,
    pub platform: String,
    pub container: String,
    pub elf_type: String,
    pub imports: Vec<LibraryImports>,
    pub exports: usize,
    pub relocations: usize,
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct Status {
    pub title: crate::config::TitleSection,
    pub dump_files: usize,
    pub dump_bytes: u64,
    pub modules: Vec<ModuleStatus>,
    /// Outputs listed by the last build's manifest (None: never built).
    pub last_build_outputs: Option<usize>,
    /// Whether the output tree was built from the dump as it is now.
    pub up_to_date: bool,
    /// How the executable's imports bind: per library, implemented by the PRX set (or a bundled
    /// module) or bound to a stub that reports the call and aborts.
    pub coverage: Vec<LibraryCoverage>,
    /// What the build does with each bundled module (`sce_module/*`).
    pub bundled: Vec<BundledModule>,
    /// `[build] target_cpu` (issue 14).
    pub target_cpu: String,
    /// AMD-only instructions in the executable's reachable code, per kind (`extrq
    /// (immediate)`, ...): how many, and how many were lowered for the target CPU.
    pub amd_only: Vec<AmdOnlyCount>,
    /// The last build's shaders (`shaders.json`, issue 13): found by the static scan,
    /// translated into `packs/shaders.pack`, refused by the translator, not translated at
    /// build time. None: no build made one.
    pub shaders: Option<crate::shaders::ShaderCounts>,
    /// The play records (`.aps5/records.sqlite`): shaders and pipeline states recorded in play
    /// and the last run's counters. None: no run has recorded anything.
    pub play: Option<crate::shaders::PlayStatus>,
    /// Entries of the last build's `packs/pipelines.pack` (None: none of this toolchain's).
    pub pipelines_packed: Option<usize>,
}

/// One kind of AMD-only instruction in the executable.
#[derive(Clone, Debug, Serialize)]
pub struct AmdOnlyCount {
    pub kind: String,
    pub sites: usize,
    pub lowered: usize,
    /// Of the lowered: rewritten in place, by a jump to a routine, through the trap.
    pub in_place: usize,
    pub jump: usize,
    pub trap: usize,
}

/// A bundled module and what the build makes of it.
#[derive(Clone, Debug, Serialize)]
pub struct BundledModule {
    pub path: String,
    /// `converted` (relinked to `output`) or `replaced` (the host PRX file `output` serves it).
    pub action: &'static str,
    /// `app0/sce_module/<file>` or `libs/<file>`.
    pub output: String,
    /// The PS libraries it exports.
    pub libraries: Vec<String>,
    /// Made by the OpenOrbis toolchain (its stand-ins for Sony's system modules are stubs).
    pub openorbis: bool,
}

/// The OpenOrbis toolchain's mark in a module's fingerprint slot ("OPENORBIS-HOMEBREW").
const OPENORBIS_FINGERPRINT: &str = "4f50454e4f524249532d484f4d45425245570000";

/// The executable's imports of one library, as bound by the relinker.
#[derive(Clone, Debug, Serialize)]
pub struct LibraryCoverage {
    pub library: String,
    pub implemented: usize,
    /// Names (or NIDs) of the imports bound to "unimplemented" stubs.
    pub stubbed: Vec<String>,
    /// Names (or NIDs) of weak imports nothing implements (the loader resolves them to 0).
    pub weak_unresolved: Vec<String>,
}

/// Scans the dump (cheap when unchanged) and reads every module through the graph.
pub fn status(project: &Project, progress: &dyn Progress) -> Result<Status, BuildError> {
    let (db, dump, scan) = project.load(progress)?;
    let mut modules = Vec::new();
    let mut bundled = Vec::new();
    for &f in db::module_files(&db, dump) {
        let m = db::module(&db, f)
            .as_ref()
            .map_err(|e| BuildError::Corrupt {
                path: e.path.clone(),
                message: e.message.clone(),
            })?;
        let imports = m
            .imports_by_library()
            .into_iter()
            .map(|(library, syms)| LibraryImports {
                library: if library.is_empty() {
                    "(plain names)".into()
                } else {
                    library
                },
                imports: syms.len(),
                named: syms.iter().filter(|s| !s.known_names().is_empty()).count(),
            })
            .collect();
        if f.rel(&db) != dump.executable(&db) {
            let replaced = db::replacing_host_file(&db, f);
            bundled.push(BundledModule {
                path: f.rel(&db).clone(),
                action: if replaced.is_some() {
                    "replaced"
                } else {
                    "converted"
                },
                output: match replaced {
                    Some(host) => format!("libs/{host}"),
                    None => format!("app0/{}", f.rel(&db)),
                },
                libraries: m.exports_by_library().into_keys().collect(),
                openorbis: m.fingerprint.as_deref() == Some(OPENORBIS_FINGERPRINT),
            });
        }
        modules.push(ModuleStatus {
            path: f.rel(&db).clone(),
            platform: format!("{:?}", m.format.platform).to_uppercase(),
            container: format!("{:?}", m.format.container).to_uppercase(),
            elf_type: m.elf_type_name().to_string(),
            imports,
            exports: m.exports().count(),
            relocations: m.relocations.len(),
        });
    }
    let manifest = emit::read_manifest(&project.layout.out_dir);
    let up_to_date = manifest.is_some() && project.built_from(&scan);
    let app = db::app_elf(&db, dump)
        .as_ref()
        .map_err(|e| BuildError::Corrupt {
            path: e.path.clone(),
            message: e.message.clone(),
        })?;
    let mut coverage: Vec<LibraryCoverage> = Vec::new();
    for row in app.coverage.iter() {
        if coverage.last().is_none_or(|c| c.library != row.library) {
            coverage.push(LibraryCoverage {
                library: row.library.clone(),
                implemented: 0,
                stubbed: Vec::new(),
                weak_unresolved: Vec::new(),
            });
        }
        let c = coverage.last_mut().expect("pushed");
        let name = || row.name.clone().unwrap_or_else(|| row.nid.clone());
        if row.implemented {
            c.implemented += 1;
        } else if row.weak {
            c.weak_unresolved.push(name());
        } else {
            c.stubbed.push(name());
        }
    }
    use aps5_relink::lower::Lowering;
    let mut amd: std::collections::BTreeMap<aps5_relink::AmdOnlyKind, AmdOnlyCount> =
        Default::default();
    for site in app.amd_only.iter() {
        let e = amd.entry(site.kind).or_insert_with(|| AmdOnlyCount {
            kind: site.kind.name().to_string(),
            sites: 0,
            lowered: 0,
            in_place: 0,
            jump: 0,
            trap: 0,
        });
        e.sites += 1;
        e.lowered += site.lowered.is_some() as usize;
        match site.lowered {
            Some(Lowering::InPlace) => e.in_place += 1,
            Some(Lowering::Jump) => e.jump += 1,
            Some(Lowering::Trap) => e.trap += 1,
            None => {}
        }
    }
    let amd_only = amd.into_values().collect();
    Ok(Status {
        shaders: crate::shaders::last_counts(&project.layout.out_dir),
        play: crate::shaders::play_status(&project.layout.state_dir),
        pipelines_packed: crate::pipelines::packed_count(&project.layout.out_dir),
        target_cpu: project.config.build.target_cpu.clone(),
        amd_only,
        title: project.config.title.clone(),
        dump_files: scan.files.len(),
        dump_bytes: scan.files.iter().map(|f| f.stamp.size).sum(),
        modules,
        last_build_outputs: manifest.as_ref().map(|m| m.hashes.len()),
        up_to_date,
        coverage,
        bundled,
    })
}

impl Status {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("JSON")
    }

    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let t = &self.title;
        let _ = writeln!(
            s,
            "title     {} {} {} {}",
            or_dash(&t.id),
            or_dash(&t.name),
            or_dash(&t.content_version),
            t.platform
        );
        let _ = writeln!(
            s,
            "dump      {} files, {} bytes",
            self.dump_files, self.dump_bytes
        );
        match self.last_build_outputs {
            None => s.push_str("build     never built: run `aps5 build`\n"),
            Some(n) => {
                let state = if self.up_to_date {
                    "up to date"
                } else {
                    "out of date: run `aps5 build`"
                };
                let _ = writeln!(s, "build     {n} outputs, {state}");
            }
        }
        if let Some(c) = &self.shaders {
            let _ = writeln!(
                s,
                "shaders   {} found statically, {} translated, {} failed, {} left to run time ({} pack entries)",
                c.found, c.translated, c.failed, c.skipped, c.entries
            );
        }
        if let Some(p) = &self.play {
            let _ = writeln!(s, "shaders   {} recorded in play", p.recorded);
            let _ = writeln!(s, "pipelines {} recorded in play", p.pipelines_recorded);
            if let Some(n) = self.pipelines_packed {
                let _ = writeln!(s, "pipelines {n} in {}", crate::pipelines::PIPELINE_PACK);
            }
            match &p.last_run {
                Some(r) => {
                    let _ = writeln!(
                        s,
                        "shaders   {} missed in last run ({} pack hits, {} translated: {} ahead of the draw, {} at the draw, {:.1} ms waited for; {} pipelines created{})",
                        r.misses,
                        r.pack_hits,
                        r.translations,
                        r.translations_ahead,
                        r.translations.saturating_sub(r.translations_ahead),
                        r.ahead_wait_us as f64 / 1000.0,
                        r.pipelines,
                        if r.ended {
                            ""
                        } else {
                            "; the run did not reach its exit"
                        }
                    );
                    // What the prewarm did before and beside the run's draws; the counters
                    // are written at exit, so a killed run shows 0.
                    let mut rest = String::new();
                    for (n, what) in [
                        (r.prewarm_failed, "failed"),
                        (r.prewarm_skipped, "skipped: a stage the shader pack lacks"),
                        (r.prewarm_left, "left: not started within the budget"),
                    ] {
                        if n > 0 {
                            let _ = write!(
                                rest,
                                "{}{n} {what}",
                                if rest.is_empty() { " (" } else { ", " }
                            );
                        }
                    }
                    if !rest.is_empty() {
                        rest.push(')');
                    }
                    let _ = writeln!(s, "pipelines {} prewarmed in last run{rest}", r.prewarmed);
                }
                None => s.push_str("shaders   no run recorded yet\n"),
            }
        }
        if !self.amd_only.is_empty() {
            let _ = writeln!(
                s,
                "\napp.elf AMD-only instructions (target_cpu = \"{}\"):",
                self.target_cpu
            );
            for a in &self.amd_only {
                let _ = writeln!(
                    s,
                    "  {:<24} {:>5} sites, {:>5} lowered ({} in place, {} by a jump, {} through the trap)",
                    a.kind, a.sites, a.lowered, a.in_place, a.jump, a.trap
                );
            }
        }
        if !self.coverage.is_empty() {
            let done: usize = self.coverage.iter().map(|c| c.implemented).sum();
            let stubbed: usize = self.coverage.iter().map(|c| c.stubbed.len()).sum();
            let _ = writeln!(
                s,
                "\napp.elf imports: {done} implemented, {stubbed} bound to unimplemented stubs"
            );
            for c in &self.coverage {
                let _ = write!(
                    s,
                    "  {:<32} {:>5} implemented, {:>5} stubbed",
                    c.library,
                    c.implemented,
                    c.stubbed.len()
                );
                if !c.stubbed.is_empty() {
                    let _ = write!(s, ": {}", c.stubbed.join(" "));
                }
                if !c.weak_unresolved.is_empty() {
                    let _ = write!(s, "; weak, resolved to 0: {}", c.weak_unresolved.join(" "));
                }
                s.push('\n');
            }
        }
        if !self.bundled.is_empty() {
            s.push_str("\nbundled modules:\n");
            for b in &self.bundled {
                let what = match (b.action, b.openorbis) {
                    ("replaced", true) => format!(
                        "replaced by {} (an OpenOrbis stand-in for the system library)",
                        b.output
                    ),
                    ("replaced", false) => {
                        format!("replaced by {} (the PRX set implements it)", b.output)
                    }
                    _ => format!("converted to {}", b.output),
                };
                let _ = writeln!(
                    s,
                    "  {:<32} {what}; exports {}",
                    b.path,
                    or_dash(&b.libraries.join(" "))
                );
            }
        }
        for m in &self.modules {
            let total: usize = m.imports.iter().map(|l| l.imports).sum();
            let named: usize = m.imports.iter().map(|l| l.named).sum();
            let _ = writeln!(
                s,
                "\n{}  {} {} {}: {} imports ({} named), {} exports, {} relocations",
                m.path, m.platform, m.container, m.elf_type, total, named, m.exports, m.relocations
            );
            for l in &m.imports {
                let _ = writeln!(
                    s,
                    "  {:<32} {:>5} imports, {:>5} named",
                    l.library, l.imports, l.named
                );
            }
        }
        s
    }
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}
