//! What each command does: open the project, call the crates, print.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use aps5_graph::{BuildReport, Project};

use crate::cli::{BuildArgs, CacheCommand, Cli, Command, ShaderCommand};
use crate::progress::Bars;

pub fn run(cli: &Cli) -> Result<ExitCode> {
    let here = cli.chdir.clone().unwrap_or_else(|| PathBuf::from("."));
    match &cli.command {
        Command::Init { dir, force } => {
            let dir = dir.as_ref().map(|d| here.join(d)).unwrap_or(here);
            init(&dir, *force, cli.quiet)?;
        }
        Command::Build(args) => {
            let project = Project::open(&here)?;
            let report = project.build(&Bars::new(cli.quiet || args.json))?;
            print_build(&report, args, cli.quiet);
            if args.prewarm {
                prewarm(&project, cli.quiet);
            }
        }
        Command::Run {
            headless,
            frames,
            args,
        } => {
            let frames = frames.as_ref().map(|f| here.join(f));
            return run_program(&here, args, *headless, frames.as_deref(), cli.verbose > 0);
        }
        Command::Status { json } => {
            let project = Project::open(&here)?;
            let status = aps5_graph::status::status(&project, &Bars::new(cli.quiet || *json))?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&status.to_json())?);
            } else {
                print!("{}", status.to_text());
            }
        }
        Command::Clean => clean(&here, cli.quiet)?,
        Command::Cache { command } => return cache(&here, command),
        Command::Inspect { file, json } => {
            let path = here.join(file);
            let bytes =
                std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
            let module = aps5_elf::parse(&bytes).with_context(|| format!("{}", path.display()))?;
            if *json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&aps5_elf::inspect::json(&module))?
                );
            } else {
                print!("{}", aps5_elf::inspect::text(&module));
            }
        }
        Command::Nid { names, reverse } => return Ok(nid(names, *reverse)),
        Command::Shader { command } => shader(&here, command)?,
        Command::Demo { keep } => {
            crate::demo::demo(keep.as_ref().map(|k| here.join(k)).as_deref(), cli.quiet)?
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn init(dir: &Path, force: bool, quiet: bool) -> Result<()> {
    let (config, info) = aps5_graph::init(dir, force)?;
    if !quiet {
        let t = &config.title;
        println!(
            "initialized {}",
            dir.join(aps5_graph::CONFIG_FILE).display()
        );
        if !t.id.is_empty() || !t.name.is_empty() {
            println!(
                "  title       {} {} (version {}, {})",
                t.id, t.name, t.content_version, t.platform
            );
        }
        println!("  executable  {}", info.executable);
        println!(
            "  modules     {}",
            if info.modules.is_empty() {
                "none".into()
            } else {
                info.modules.join(", ")
            }
        );
        println!("next: aps5 build");
    }
    Ok(())
}

/// `aps5 build --prewarm`: the pipelines pack's pipelines created on this machine's Vulkan
/// device into the project's driver pipeline cache blob (docs/PACKS.md, "Prewarm"). Without
/// a device, or when it fails, it says so; the build has succeeded either way.
fn prewarm(project: &Project, quiet: bool) {
    use aps5_gpu::vulkan::{BlobSave, Gpu, GpuOptions};
    let out = &project.layout.out_dir;
    let mut opts = GpuOptions::from_env();
    opts.pipeline_cache_dir = Some(aps5_graph::pipelines::pipeline_cache_dir(
        &project.layout.state_dir,
    ));
    let gpu = match Gpu::new(&opts) {
        Ok(g) => g,
        Err(e) => {
            eprintln!(
                "aps5: no Vulkan device to prewarm on ({e}): pipelines not prewarmed (the build is done)"
            );
            return;
        }
    };
    let budget = match std::env::var_os(aps5_gpu::prewarm::BUDGET_ENV) {
        Some(_) => aps5_gpu::prewarm::budget_from_env(),
        None => std::time::Duration::from_secs(3600),
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    match aps5_gpu::prewarm::prewarm_all(
        &gpu,
        &out.join(aps5_graph::shaders::SHADER_PACK),
        &out.join(aps5_graph::pipelines::PIPELINE_PACK),
        threads,
        budget,
    ) {
        Ok(r) => {
            if !quiet {
                let c = r.counts;
                let blob = match r.blob {
                    BlobSave::Written { path, bytes } => {
                        format!("{} written ({bytes} bytes)", path.display())
                    }
                    BlobSave::Unchanged => "unchanged".into(),
                    BlobSave::NoFolder => "not kept".into(),
                };
                eprintln!(
                    "prewarmed {} of {} pipelines on {} in {} ms ({} there already, {} without \
                     their shaders, {} failed, {} left for the budget); driver pipeline cache {blob}",
                    c.prewarmed,
                    c.total,
                    gpu.info().name,
                    r.elapsed.as_millis(),
                    c.present,
                    c.skipped,
                    c.failed,
                    c.left
                );
            }
        }
        Err(e) => eprintln!("aps5: pipelines not prewarmed: {e} (the build is done)"),
    }
}

pub fn print_build(report: &BuildReport, args: &BuildArgs, quiet: bool) {
    if args.json {
        let recomputed: Vec<_> = report
            .recomputed
            .iter()
            .map(|r| serde_json::json!({"query": r.query, "artifact": r.artifact, "reason": r.reason}))
            .collect();
        let doc = serde_json::json!({
            "recomputed": recomputed,
            "reused": report.reused,
            "written": report.written,
            "elapsed_ms": report.elapsed_ms,
        });
        println!("{doc}");
        return;
    }
    if args.explain {
        for r in &report.recomputed {
            println!("{:<12} {:<40} {}", r.query, r.artifact, r.reason);
        }
    }
    if !quiet {
        println!(
            "built: {} recomputed, {} reused, {} written, {} removed, {} files hashed ({}), {} ms",
            report.recomputed.len(),
            report.reused,
            report.written,
            report.removed.len(),
            report.hashed_files,
            human_bytes(report.hashed_bytes),
            report.elapsed_ms
        );
    }
}

fn run_program(
    dir: &Path,
    args: &[String],
    headless: bool,
    frames: Option<&Path>,
    verbose: bool,
) -> Result<ExitCode> {
    use std::os::unix::process::CommandExt;
    let project = Project::open(dir)?;
    // The generation aps5-out points at now: a build finishing while the program runs switches
    // aps5-out, not the files this program reads (that generation is kept one build longer).
    let out = &std::fs::canonicalize(&project.layout.out_dir)
        .unwrap_or_else(|_| project.layout.out_dir.clone());
    if !out.join("app.elf").is_file() {
        bail!("{} has no app.elf: run `aps5 build` first", out.display());
    }
    if aps5_graph::outtree::written_before_this_boot(out) {
        // Its files were not fsynced (docs/RELINK.md, "Cold build speed"): a crash may have
        // torn them, and a torn app.elf would fail in ways that say nothing about why.
        bail!(
            "{} was written before this machine last started and not made durable: run `aps5 build` \
             first (it checks the files by their bytes and keeps those that survived)",
            out.display()
        );
    }
    check_target_cpu(out)?;
    let data = &project.layout.data_dir;
    std::fs::create_dir_all(data).with_context(|| format!("cannot create {}", data.display()))?;
    // exec: the program takes this process over, so it receives every signal sent to `aps5 run`
    // and its exit status is ours.
    // The window's title and its key mapping (libSceDevices.prx, docs/HOMEBREW.md).
    let t = &project.config.title;
    let title = [&t.name, &t.id, &project.config.project.executable]
        .into_iter()
        .find(|s| !s.is_empty())
        .cloned()
        .unwrap_or_default();
    let mut cmd = aps5_relink::run_command(out, data, args);
    cmd.env("APS5_TITLE", title)
        .env("APS5_KEYMAP", project.config.input.to_env());
    if headless {
        cmd.env("APS5_HEADLESS", "1");
    }
    if let Some(f) = frames {
        cmd.env("APS5_FRAMES_DIR", f);
    }
    // The GPU driver looks every shader up in the build's pack first and records what it
    // misses for the next build (docs/PACKS.md, "At run time").
    cmd.env(
        "APS5_SHADER_PACK",
        out.join(aps5_graph::shaders::SHADER_PACK),
    )
    .env(
        "APS5_RECORDS",
        aps5_graph::shaders::records_path(&project.layout.state_dir),
    )
    // And creates the recorded pipelines at start (prewarm), through a driver pipeline cache
    // kept in the project's state folder (docs/PACKS.md, "Prewarm").
    .env(
        "APS5_PIPELINE_PACK",
        out.join(aps5_graph::pipelines::PIPELINE_PACK),
    )
    .env(
        "APS5_PIPELINE_CACHE",
        aps5_graph::pipelines::pipeline_cache_dir(&project.layout.state_dir),
    );
    if verbose {
        cmd.env("APS5_GPU_STATS", "1");
    }
    let err = cmd.exec();
    bail!("cannot start {}: {err}", out.join("app.elf").display())
}

/// Refuses a port built for a CPU this machine is not (issue 14): one whose target CPU has
/// an AMD-only instruction group (`aps5-out/target.json`) the machine's CPUID lacks.
fn check_target_cpu(out: &Path) -> Result<()> {
    let path = out.join(aps5_graph::build::TARGET_JSON);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(()); // built before target.json existed
    };
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("cannot read {}", path.display()))?;
    let name = v["target_cpu"].as_str().unwrap_or("?");
    let built: aps5_relink::CpuFeatures = serde_json::from_value(v["features"].clone())
        .with_context(|| format!("{}: no target CPU features", path.display()))?;
    let missing = built.missing_on(&aps5_relink::CpuFeatures::host());
    if !missing.is_empty() {
        bail!(
            "this port was built for target_cpu = \"{name}\", whose instructions this machine's CPU lacks ({}): it would die with SIGILL. Set `[build] target_cpu = \"host\"` (or \"x86-64-v3\") in aps5.toml and run `aps5 build` again",
            missing.join(", ")
        );
    }
    Ok(())
}

fn clean(dir: &Path, quiet: bool) -> Result<()> {
    let project = Project::open(dir)?;
    project.clean()?;
    if !quiet {
        println!(
            "removed {} (the cache {} is kept)",
            project.layout.out_dir.display(),
            project.layout.cache_dir.display()
        );
    }
    Ok(())
}

/// `aps5 cache stats|verify|gc`. verify exits 0 when nothing was wrong, 3 when it found
/// problems and repaired them all, 2 when something is left unrepaired (docs/CACHE.md).
fn cache(dir: &Path, command: &CacheCommand) -> Result<ExitCode> {
    // Inside a project its cache_dir setting counts; elsewhere the default cache.
    // Resolved without opening the cache: `verify` must reach a cache whose index is broken.
    let (cache_dir, project_dirs) = match aps5_graph::Config::load(dir)
        .and_then(|c| aps5_graph::Layout::new(dir, &c))
    {
        Ok(layout) => (layout.cache_dir, Some((layout.out_dir, layout.state_dir))),
        Err(aps5_graph::BuildError::NoProject { .. }) => (aps5_cache::Cache::default_dir(), None),
        Err(e) => return Err(e.into()),
    };
    match command {
        CacheCommand::Stats => println!("{}", aps5_cache::Cache::open(&cache_dir)?.stats()?),
        CacheCommand::Verify => {
            // The repair command: a damaged index is set aside and rebuilt from the blobs.
            let report = aps5_cache::Cache::verify_dir(&cache_dir)?;
            println!("{report}");
            let mut code = report.outcome().exit_code();
            // Inside a project, its shader pack too (docs/PACKS.md): a damaged one is never
            // used, and the next build writes it again.
            if let Some((out, state)) = project_dirs {
                use aps5_cache::pack::PackError;
                let rel = aps5_graph::shaders::SHADER_PACK;
                match aps5_graph::shaders::verify_pack(&out) {
                    Ok(None) => {}
                    Ok(Some(n)) => println!("{rel}: {n} entries, every one verified"),
                    Err(e @ PackError::Identity { .. }) => println!(
                        "{rel}: not used by this toolchain ({e}); the next `aps5 build` writes it again"
                    ),
                    Err(e) => {
                        println!(
                            "{rel}: damaged, never used: {e}; the next `aps5 build` writes it again"
                        );
                        code = 2;
                    }
                }
                // Its pipelines pack the same way.
                let rel = aps5_graph::pipelines::PIPELINE_PACK;
                match aps5_graph::pipelines::verify_pack(&out) {
                    Ok(None) => {}
                    Ok(Some(n)) => println!("{rel}: {n} entries, every one verified"),
                    Err(e @ PackError::Identity { .. }) => println!(
                        "{rel}: not used by this toolchain ({e}); the next `aps5 build` writes it again"
                    ),
                    Err(e) => {
                        println!(
                            "{rel}: damaged, never used: {e}; the next `aps5 build` writes it again"
                        );
                        code = 2;
                    }
                }
                // And its play records.
                code = verify_records(dir, &state, code);
                // And the driver's pipeline cache blobs.
                code = verify_blobs(&state, code);
            }
            return Ok(ExitCode::from(code));
        }
        CacheCommand::Gc { max_size } => {
            println!("{}", aps5_cache::Cache::open(&cache_dir)?.gc(*max_size)?)
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `aps5 cache verify` of the driver's pipeline cache blobs (docs/PACKS.md, "Driver pipeline
/// cache"): a damaged one is removed (the driver would not use it; the next run on that
/// device starts cold and writes a new one). Returns the exit status, `code` made worse.
fn verify_blobs(state: &Path, code: u8) -> u8 {
    let dir = aps5_graph::pipelines::pipeline_cache_dir(state);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return code;
    };
    let mut names: Vec<_> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "vkpc"))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut code = code;
    for name in names {
        let path = dir.join(&name);
        let rel = format!("{}/{name}", aps5_graph::pipelines::PIPELINE_CACHE_DIR);
        let checked = std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|b| aps5_gpu::vulkan::pcache::check(&name, &b).map(|_| b.len()));
        match checked {
            Ok(n) => println!("{rel}: driver pipeline cache blob, {n} bytes, verified"),
            Err(why) => match std::fs::remove_file(&path) {
                Ok(()) => {
                    println!(
                        "{rel}: damaged, never used ({why}): removed; the next run starts a new one"
                    );
                    if code == 0 {
                        code = 3;
                    }
                }
                Err(e) => {
                    println!("{rel}: damaged, never used ({why}); cannot remove it: {e}");
                    code = 2;
                }
            },
        }
    }
    code
}

/// `aps5 cache verify` of the play records (docs/PACKS.md, "Play records"): damaged rows are
/// removed (never used; a run that meets them records them again), a file that cannot be used
/// is moved aside (the next run starts a new one). Returns the exit status, `code` made worse.
fn verify_records(dir: &Path, state: &Path, code: u8) -> u8 {
    use aps5_cache::records::Records;
    let path = aps5_graph::shaders::records_path(state);
    let rel = path
        .strip_prefix(dir)
        .unwrap_or(&path)
        .display()
        .to_string();
    let repaired = if code == 0 { 3 } else { code };
    let damaged = match Records::open_existing(&path).and_then(|r| match r {
        Some(mut r) => r.verify().map(Some),
        None => Ok(None),
    }) {
        Ok(None) => return code,
        Ok(Some(v)) if v.file_damaged.is_empty() => {
            for why in &v.removed {
                println!("{why}: removed");
            }
            let removed = match v.removed.len() {
                0 => String::new(),
                n => format!(" ({n} damaged ones removed)"),
            };
            println!(
                "{rel}: {} shader and {} pipeline records, every one verified{removed}",
                v.shaders, v.pipelines
            );
            return if v.removed.is_empty() { code } else { repaired };
        }
        Ok(Some(v)) => v.file_damaged.join("; "),
        Err(e) => e.reason,
    };
    match Records::set_aside(&path) {
        Ok(to) => {
            println!(
                "{rel}: damaged ({damaged}), never used: moved aside to {}; the next run records afresh",
                to.display()
            );
            repaired
        }
        Err(e) => {
            println!("{rel}: damaged ({damaged}), never used; {e}");
            2
        }
    }
}

fn nid(items: &[String], reverse: bool) -> ExitCode {
    let mut unknown = false;
    for item in items {
        if reverse {
            let names = aps5_nid::lookup(item);
            if names.is_empty() {
                unknown = true;
                println!("{item}\t(unknown)");
            }
            for k in names {
                println!("{item}\t{}\t{}", k.name, k.library.unwrap_or("-"));
            }
        } else {
            println!("{item}\t{}", aps5_nid::nid(item));
        }
    }
    if unknown {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// Instruction bytes from FILE (relative to `dir`) or --hex.
fn shader_code(dir: &Path, file: &Option<PathBuf>, hex: &Option<String>) -> Result<Vec<u8>> {
    use aps5_shader::disasm;
    Ok(match (file, hex) {
        (_, Some(hex)) => {
            disasm::parse_hex_words(hex).map_err(|e| anyhow::anyhow!("--hex: {e}"))?
        }
        (Some(file), None) => {
            let path = dir.join(file);
            let bytes =
                std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
            if bytes.len() % 4 != 0 {
                bail!(
                    "{}: {} bytes is not a whole number of 32-bit instruction words",
                    path.display(),
                    bytes.len()
                );
            }
            bytes
        }
        (None, None) => unreachable!("clap requires FILE or --hex"),
    })
}

fn shader(dir: &Path, command: &ShaderCommand) -> Result<()> {
    use aps5_shader::disasm;
    match command {
        ShaderCommand::Disasm {
            file,
            hex,
            mcpu,
            wave64,
        } => {
            let mcpu: disasm::Mcpu = mcpu
                .parse()
                .map_err(|e| anyhow::anyhow!("--mcpu {mcpu}: {e}"))?;
            let code = shader_code(dir, file, hex)?;
            print!(
                "{}",
                disasm::disassemble(
                    &code,
                    &disasm::Options {
                        mcpu,
                        wave64: *wave64
                    }
                )
            );
            Ok(())
        }
        ShaderCommand::Translate {
            file,
            hex,
            stage,
            wave64,
            rsrc2,
            user_sgprs,
            local,
            lds,
            output,
            ir,
        } => {
            use aps5_shader::translate::{self, ComputeState, Options};
            if stage != "cs" {
                bail!("--stage {stage}: only cs (compute) is supported yet");
            }
            let dims: Vec<u32> = local
                .split(',')
                .map(|d| d.trim().parse::<u32>())
                .collect::<Result<_, _>>()
                .map_err(|e| anyhow::anyhow!("--local {local}: {e}"))?;
            let [x, y, z] = dims[..] else {
                bail!("--local {local}: give X,Y,Z");
            };
            if *user_sgprs > 16 {
                bail!("--user-sgprs {user_sgprs}: at most 16");
            }
            let bytes = shader_code(dir, file, hex)?;
            let code: Vec<u32> = bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            let state = ComputeState {
                pgm_rsrc1: 0,
                pgm_rsrc2: rsrc2.unwrap_or(user_sgprs << 1 | 1 << 7),
                workgroup_size: [x, y, z],
                wave64: *wave64,
                lds_bytes: *lds,
                scratch_bytes_per_lane: 0,
            };
            if *ir {
                let body = translate::lower_compute(&code, &state)
                    .map_err(|e| anyhow::anyhow!("translate: {e}"))?;
                print!("{body}");
            }
            let t = translate::translate_compute(&code, &state, &Options::default())
                .map_err(|e| anyhow::anyhow!("translate: {e}"))?;
            match output {
                Some(out) => {
                    let path = dir.join(out);
                    let words: Vec<u8> = t.spirv.iter().flat_map(|w| w.to_le_bytes()).collect();
                    // Write beside the target and rename, so a failed write keeps the old file.
                    let tmp = path.with_extension("spv.tmp");
                    std::fs::write(&tmp, &words)
                        .with_context(|| format!("cannot write {}", tmp.display()))?;
                    std::fs::rename(&tmp, &path)
                        .with_context(|| format!("cannot write {}", path.display()))?;
                }
                None if !*ir => println!(
                    "{} SPIR-V words, {} guest instructions, local size {:?}, {} memory accesses",
                    t.spirv.len(),
                    t.meta.guest_instructions,
                    t.local_size,
                    t.meta.accesses.len()
                ),
                None => {}
            }
            Ok(())
        }
    }
}

pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}
