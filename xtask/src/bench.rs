//! `cargo xtask bench`: figures, not timed tests. Each figure is written beside its physical limit,
//! measured in the same run, as JSON under `target/bench/`.
//!
//! - `graph`: a generated dump (10,000 files / 2 GB; `--quick`: 1,000 / 200 MB) through the real
//!   `aps5` binary: cold build, no-op rebuild against stat()ing every file, rebuild after changing one
//!   file, peak RSS, and blake3 throughput against a plain read loop.
//! - `build`: a cold `aps5 build` (empty cache, no output tree) of a dump whose eboot.bin is a
//!   game-sized executable (48 MiB of real x86-64 code, 1,000,000 relocations; `--quick`: a
//!   quarter), made by the fixture SDK with clang/lld: MB/s end to end, bytes written to the
//!   cache over the input's size, and where the time goes (the `-vv` phase timings);
//!   `APS5_BENCH_BASELINE=PATH` measures another aps5 binary on the same dump in the same run.
//! - `elf`, `shader`, `translate` (shaders/s over the kernel corpus, decode-alone and
//!   serialization-alone limits), `cache`, `agc` (PM4 packets/s), `scan` (static shader scan GB/s),
//!   `pack` (shaders.pack open time, lookup p99), `lower` (issue 14: a lowered EXTRQ against the
//!   plain shift/mask, build cost per site), `runtime` (a ported program against the same C built
//!   natively: hello start-up, malloc, snprintf and mutex ratios; needs clang-14): each crate's
//!   `examples/bench_<name>.rs`, which prints one JSON object.
//! - `glsl`: GPU run time of corpus kernels, our translation against a GLSL twin compiled by
//!   glslangValidator (xtask/src/bench_glsl.rs).
//! - `draws`: aps5-vulkan's `examples/bench_draws.rs`: CPU time per draw recorded + submitted at
//!   10,000 draws per frame (against bare ash calls), frame time, pipeline build times per path.
//! - `gpu_draws`: aps5-gpu's `examples/bench_gpu_draws.rs`: CPU and wall time per draw through
//!   the whole driver, PM4 packet to finished draw (issue 12's target: under 2.5 us), with the
//!   guest memory imported (`APS5_GPU_MIRROR=1`: mirrored); shaders by llc-14, or from
//!   `APS5_LLC_CACHE=DIR` filled by a run that had it.
//! - `ttff`: time to first frame of GPU fixtures through the real `aps5` (init, build, `run
//!   --headless`): cold (no packs, records or driver caches), warm (after a first run and
//!   `aps5 build --prewarm`) and GPU work stubbed out (`APS5_GPU_STUB=1`), median of several
//!   runs, and the ratios warm/stubbed (issue 13's target: at most 1.2) and cold/stubbed; and
//!   cold with the driver's own shader cache kept (aps5's share of a cold start).
//!   `APS5_TTFF_PREBUILT=DIR` takes the fixture dumps from DIR (made there when missing,
//!   which needs clang): a run here with `APS5_TTFF_FILL=1` only fills DIR, so a machine
//!   without clang (the NVIDIA device machine) measures from it with the same binaries.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::json;

use crate::util::{cargo_bin, root};

pub fn bench(quick: bool, only: &[String]) -> Result<bool> {
    let out = root().join("target/bench");
    std::fs::create_dir_all(&out)?;
    let want = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    let mut all = serde_json::Map::new();
    for (name, krate) in [
        ("elf", "aps5-elf"),
        ("shader", "aps5-shader"),
        ("translate", "aps5-shader"),
        ("cache", "aps5-cache"),
        ("agc", "aps5-agc"),
        ("scan", "aps5-agc"),
        ("pack", "aps5-cache"),
        ("lower", "aps5-relink"),
        ("runtime", "aps5-relink"),
        ("draws", "aps5-vulkan"),
        ("gpu_draws", "aps5-gpu"),
        ("prewarm", "aps5-gpu"),
    ] {
        if !want(name) {
            continue;
        }
        println!("== bench {name}");
        let output = Command::new(cargo_bin())
            .args([
                "run",
                "--release",
                "--locked",
                "-q",
                "-p",
                krate,
                "--example",
                &format!("bench_{name}"),
            ])
            .current_dir(root())
            .stderr(Stdio::inherit())
            .output()?;
        if !output.status.success() {
            bail!("the {krate} benchmark failed");
        }
        let figures: serde_json::Value = serde_json::from_slice(&output.stdout)
            .with_context(|| format!("the {krate} benchmark did not print one JSON object"))?;
        write_json(&out.join(format!("{name}.json")), &figures)?;
        all.insert(name.into(), figures);
    }
    if want("build") {
        println!("== bench build");
        let figures = cold_build(quick)?;
        write_json(&out.join("build.json"), &figures)?;
        all.insert("build".into(), figures);
    }
    if want("glsl") {
        println!("== bench glsl");
        let figures = crate::bench_glsl::glsl(quick)?;
        write_json(&out.join("glsl.json"), &figures)?;
        let failed = figures["failed"] == true;
        all.insert("glsl".into(), figures);
        if failed {
            bail!("bench glsl: a translation and its GLSL twin disagree (target/bench/glsl.json)");
        }
    }
    if want("ttff") {
        println!("== bench ttff");
        let figures = ttff(quick)?;
        write_json(&out.join("ttff.json"), &figures)?;
        all.insert("ttff".into(), figures);
    }
    if want("graph") {
        println!("== bench graph");
        let figures = graph(quick)?;
        write_json(&out.join("graph.json"), &figures)?;
        all.insert("graph".into(), figures);
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&serde_json::Value::Object(all))?
    );
    println!("figures written to {}", out.display());
    Ok(true)
}

fn write_json(path: &Path, v: &serde_json::Value) -> Result<()> {
    std::fs::write(path, serde_json::to_string_pretty(v)? + "\n")?;
    Ok(())
}

/// Runs `aps5 ARGS` in `dir`; returns (wall seconds, peak RSS in KiB, stdout).
fn run_aps5(aps5: &Path, dir: &Path, args: &[&str]) -> Result<(f64, u64, String)> {
    run_aps5_logged(aps5, dir, args, None)
}

/// [`run_aps5`], with stderr written to LOG instead of this process's stderr.
fn run_aps5_logged(
    aps5: &Path,
    dir: &Path,
    args: &[&str],
    log: Option<&Path>,
) -> Result<(f64, u64, String)> {
    let stderr = match log {
        Some(p) => Stdio::from(std::fs::File::create(p)?),
        None => Stdio::inherit(),
    };
    let t = Instant::now();
    let child = Command::new(aps5)
        .args(["-C", dir.to_str().unwrap()])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()?;
    let pid = child.id() as libc::pid_t;
    let stdout = child.stdout.expect("piped");
    let reader = std::thread::spawn(move || std::io::read_to_string(stdout));
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be filled in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our own child, not yet waited for; the pointers are valid.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let secs = t.elapsed().as_secs_f64();
    let stdout = reader.join().expect("reader")?;
    if r != pid || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        let hint = log.map(|p| format!(" (its log: {})", p.display()));
        bail!(
            "aps5 {} failed in {}{}",
            args.join(" "),
            dir.display(),
            hint.unwrap_or_default()
        );
    }
    Ok((secs, usage.ru_maxrss as u64, stdout))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Deterministic pseudo-random bytes (xorshift), so the dump is the same every run.
fn fill(buf: &mut [u8], mut seed: u64) {
    for chunk in buf.chunks_mut(8) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let b = seed.to_le_bytes();
        chunk.copy_from_slice(&b[..chunk.len()]);
    }
}

fn generate_dump(dir: &Path, files: usize, total: u64) -> Result<Vec<PathBuf>> {
    let sample = root().join("compiler/aps5/sample/eboot.bin");
    std::fs::copy(&sample, dir.join("eboot.bin"))
        .with_context(|| format!("cannot copy {}", sample.display()))?;
    let per = total / files as u64;
    let mut buf = vec![0u8; per as usize];
    let mut paths = Vec::with_capacity(files);
    for i in 0..files {
        // 100 folders of 100 files (10,000 files): a plausible game layout.
        let sub = dir.join(format!("data/{:03}", i / 100));
        std::fs::create_dir_all(&sub)?;
        let p = sub.join(format!("file{i:05}.bin"));
        fill(&mut buf, i as u64 + 1);
        std::fs::write(&p, &buf)?;
        paths.push(p);
    }
    Ok(paths)
}

/// The cost of stat()ing every file of the dump: the physical floor of a no-op rebuild.
fn stat_all(dir: &Path) -> Result<usize> {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            let m = std::fs::symlink_metadata(e.path())?;
            if m.is_dir() {
                stack.push(e.path());
            } else {
                n += 1;
            }
        }
    }
    Ok(n)
}

/// Reads every file with a plain loop, with and without blake3: (read GB/s, blake3 GB/s).
fn read_and_hash(paths: &[PathBuf]) -> Result<(f64, f64)> {
    use std::io::Read;
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    let t = Instant::now();
    for p in paths {
        let mut f = std::fs::File::open(p)?;
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            bytes += n as u64;
        }
    }
    let read = bytes as f64 / t.elapsed().as_secs_f64() / 1e9;
    let t = Instant::now();
    for p in paths {
        let mut f = std::fs::File::open(p)?;
        let mut h = blake3::Hasher::new();
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
        }
        std::hint::black_box(h.finalize());
    }
    Ok((read, bytes as f64 / t.elapsed().as_secs_f64() / 1e9))
}

fn graph(quick: bool) -> Result<serde_json::Value> {
    let (files, total) = if quick {
        (1_000, 200u64 << 20)
    } else {
        (10_000, 2u64 << 30)
    };
    let aps5 = build_aps5()?;
    let work = root().join("target/bench/graph-work");
    let _ = std::fs::remove_dir_all(&work);
    let dump = work.join("dump");
    std::fs::create_dir_all(&dump)?;
    println!(
        "generating {files} files / {} MB in {}",
        total >> 20,
        dump.display()
    );
    let paths = generate_dump(&dump, files, total)?;
    run_aps5(&aps5, &dump, &["-q", "init"])?;
    // A cache of its own, so the cold build is really cold.
    let cfg = dump.join("aps5.toml");
    let text =
        std::fs::read_to_string(&cfg)?.replace("cache_dir = \"\"", "cache_dir = \"../cache\"");
    std::fs::write(&cfg, text)?;

    let (cold, cold_rss, _) = run_aps5(&aps5, &dump, &["build", "--json"])?;
    let mut noop = Vec::new();
    let mut noop_rss = 0;
    let mut noop_report = String::new();
    for _ in 0..7 {
        let (t, rss, out) = run_aps5(&aps5, &dump, &["build", "--json"])?;
        noop.push(t);
        noop_rss = noop_rss.max(rss);
        noop_report = out;
    }
    let mut stat = Vec::new();
    for _ in 0..7 {
        let t = Instant::now();
        std::hint::black_box(stat_all(&dump)?);
        stat.push(t.elapsed().as_secs_f64());
    }
    // Change one file's bytes: only its output should be recomputed.
    let mut buf = std::fs::read(&paths[files / 2])?;
    buf[0] ^= 0xff;
    std::fs::write(&paths[files / 2], &buf)?;
    let (touch, touch_rss, touch_out) = run_aps5(&aps5, &dump, &["build", "--json"])?;
    let touch_report: serde_json::Value = serde_json::from_str(&touch_out)?;
    let noop_report: serde_json::Value = serde_json::from_str(&noop_report)?;
    let (read_gbs, b3_gbs) = read_and_hash(&paths)?;
    let noop_ms = median(noop) * 1e3;
    let stat_ms = median(stat) * 1e3;
    let figures = json!({
        "dump": {"files": files + 1, "bytes": total},
        "cold_build_s": cold,
        "cold_build_gb_per_s": total as f64 / cold / 1e9,
        "noop_rebuild_ms_median": noop_ms,
        "stat_every_file_ms_median": stat_ms,
        "noop_over_stat_ratio": noop_ms / stat_ms,
        "noop_recomputed": noop_report["recomputed"].as_array().map(|a| a.len()),
        "touch_one_rebuild_ms": touch * 1e3,
        "touch_one_recomputed": touch_report["recomputed"],
        "peak_rss_mib": {"cold": cold_rss / 1024, "noop": noop_rss / 1024, "touch_one": touch_rss / 1024},
        "limits": {"read_loop_gb_per_s": read_gbs, "blake3_read_loop_gb_per_s": b3_gbs},
        "note": "times measured on this machine in one run; the read loops run after the builds, so the page cache is warm for them",
    });
    let _ = std::fs::remove_dir_all(&work);
    Ok(figures)
}

/// The `aps5` binary to measure: APS5_BENCH_APS5=BINARY (built elsewhere, e.g. carried to a
/// quiet machine), else the workspace's release build, built now.
fn build_aps5() -> Result<PathBuf> {
    if let Some(bin) = std::env::var_os("APS5_BENCH_APS5") {
        return Ok(PathBuf::from(bin));
    }
    if !crate::util::cargo(&["build", "--release", "--locked", "-q", "-p", "aps5"], &[])? {
        bail!("cannot build aps5");
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"));
    Ok(target.join("release/aps5"))
}

/// The executable code of this very program (its first PT_LOAD with PF_X): real x86-64
/// instructions for the synthetic executable's code segment.
fn own_code() -> Result<Vec<u8>> {
    let exe = std::fs::read("/proc/self/exe")?;
    let u16_at = |o: usize| u16::from_le_bytes(exe[o..o + 2].try_into().unwrap());
    let u32_at = |o: usize| u32::from_le_bytes(exe[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(exe[o..o + 8].try_into().unwrap()) as usize;
    if exe.get(..4) != Some(b"\x7fELF") || exe[4] != 2 {
        bail!("/proc/self/exe is not a 64-bit ELF");
    }
    let (phoff, phentsize, phnum) = (u64_at(0x20), usize::from(u16_at(0x36)), u16_at(0x38));
    for i in 0..usize::from(phnum) {
        let ph = phoff + i * phentsize;
        // PT_LOAD, PF_X
        if u32_at(ph) == 1 && u32_at(ph + 4) & 1 != 0 {
            let (off, filesz) = (u64_at(ph + 8), u64_at(ph + 0x20));
            return Ok(exe[off..off + filesz].to_vec());
        }
    }
    bail!("/proc/self/exe has no executable segment")
}

/// The fixture source of the `build` bench: CODE_FILE included as a code section, and a data
/// table of RELOCS pointers (half into that code: RELATIVE; half to two imported functions:
/// symbol relocations), which lld turns into dynamic relocations.
fn big_executable_source(code_file: &Path, relocs: u64) -> String {
    format!(
        r#"/* Generated by `cargo xtask bench build`: a game-sized executable. */
#include <stdio.h>
#include <string.h>
__asm__(
    ".section .text.big,\"ax\",@progbits\n"
    "big_code:\n"
    ".incbin \"{code}\"\n"
    ".section .data.rel.big,\"aw\",@progbits\n"
    ".p2align 3\n"
    "big_table:\n"
    ".set i, 0\n"
    ".rept {groups}\n"
    ".quad big_code + i\n"
    ".quad big_code + i + 8\n"
    ".quad puts\n"
    ".quad strlen\n"
    ".set i, i + 16\n"
    ".endr\n");
int main(void) {{
    puts("big");
    return 0;
}}
"#,
        code = code_file.display(),
        groups = relocs / 4,
    )
}

/// Sums the sizes of the files under DIR.
fn tree_bytes(dir: &Path) -> Result<u64> {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let e = e?;
            let m = e.metadata()?;
            if m.is_dir() {
                stack.push(e.path());
            } else {
                n += m.len();
            }
        }
    }
    Ok(n)
}

/// The `phase NAME: X ms` lines of an `aps5 -vv` log, summed by name.
fn phases(log: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut ms = std::collections::BTreeMap::<String, f64>::new();
    for line in log.lines() {
        let Some(rest) = line.split_once("phase ").map(|(_, r)| r) else {
            continue;
        };
        let Some((name, value)) = rest.split_once(": ") else {
            continue;
        };
        if let Some(v) = value.split(' ').next().and_then(|v| v.parse::<f64>().ok()) {
            *ms.entry(name.to_string()).or_default() += v;
        }
    }
    ms.into_iter().map(|(k, v)| (k, json!(v))).collect()
}

/// RUNS cold builds of DUMP with each binary of APS5 (an empty cache, no output tree each
/// time), the binaries alternating (so a baseline meets the same load as the build measured
/// against it): each binary's median run's figures, in order.
fn cold_runs(
    aps5: &[&Path],
    work: &Path,
    dump: &Path,
    input: u64,
    runs: usize,
) -> Result<Vec<serde_json::Value>> {
    let cache = work.join("cache");
    let mut results: Vec<Vec<(f64, u64, String)>> = vec![Vec::new(); aps5.len()];
    for i in 0..runs {
        for (n, bin) in aps5.iter().enumerate() {
            let _ = std::fs::remove_dir_all(&cache);
            // What `aps5 clean` removes, removed here: an older aps5 (the baseline) may not
            // read the output tree a newer one made.
            let _ = std::fs::remove_file(dump.join("aps5-out"));
            let _ = std::fs::remove_dir_all(dump.join(".aps5"));
            let log = work.join(format!("build-{n}-{i}.log"));
            let (secs, rss, _) = run_aps5_logged(bin, dump, &["-vv", "build"], Some(&log))?;
            results[n].push((secs, rss, std::fs::read_to_string(&log)?));
        }
    }
    let last = results.len() - 1;
    let mut out = Vec::new();
    // The tree and cache on disk are the last binary's: its figures first; each other
    // binary's after one more build of its own.
    for (n, r) in results.into_iter().enumerate().rev() {
        if n != last {
            let _ = std::fs::remove_dir_all(&cache);
            let _ = std::fs::remove_file(dump.join("aps5-out"));
            let _ = std::fs::remove_dir_all(dump.join(".aps5"));
            run_aps5(aps5[n], dump, &["-q", "build"])?;
        }
        out.push(cold_figures(work, dump, input, runs, r)?);
    }
    out.reverse();
    if last > 0 {
        // Leave the last binary's tree and cache, for what the caller measures next.
        let _ = std::fs::remove_dir_all(&cache);
        let _ = std::fs::remove_file(dump.join("aps5-out"));
        let _ = std::fs::remove_dir_all(dump.join(".aps5"));
        run_aps5(aps5[last], dump, &["-q", "build"])?;
    }
    Ok(out)
}

/// The figures of one binary's cold builds (RESULTS: seconds, peak RSS, log of each), with the
/// cache and output tree its last build left.
fn cold_figures(
    work: &Path,
    dump: &Path,
    input: u64,
    runs: usize,
    mut results: Vec<(f64, u64, String)>,
) -> Result<serde_json::Value> {
    let cache = work.join("cache");
    results.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
    let (secs, rss, log) = results.swap_remove(results.len() / 2);
    let blobs = tree_bytes(&cache.join("blobs"))?;
    let cache_all = tree_bytes(&cache)?;
    let modules: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dump.join("aps5-out/modules.json"))?)?;
    let app_elf_path = dump.join("aps5-out/app.elf");
    let app_elf = std::fs::metadata(&app_elf_path)?.len();
    let app_elf_blake3 = blake3::hash(&std::fs::read(&app_elf_path)?)
        .to_hex()
        .to_string();
    Ok(json!({
        "input_bytes": input,
        "relocations": modules["modules"]["eboot.bin"]["relocations"]["total"],
        "app_elf_bytes": app_elf,
        "app_elf_blake3": app_elf_blake3,
        "cold_build_s_median": secs,
        "cold_build_runs": runs,
        "cold_build_mb_per_s": input as f64 / secs / 1e6,
        "cache_blob_bytes": blobs,
        "cache_blob_bytes_over_input": blobs as f64 / input as f64,
        "cache_all_bytes_over_input": cache_all as f64 / input as f64,
        "peak_rss_mib": rss / 1024,
        "phases_ms": phases(&log),
        "note": "phases from `aps5 -vv` of the median run; the machine may be loaded: compare the ratios of one run, the absolute figures are noisy",
    }))
}

/// The physical limits of writing BYTES (app.elf's size) into WORK's file system, RUNS times
/// each, median: a plain write into the page cache, and the same write followed by fsync (what
/// a build that made its output durable before switching to it could not beat).
fn write_limits(work: &Path, bytes: u64, runs: usize) -> Result<serde_json::Value> {
    use std::io::Write;
    let mut buf = vec![0u8; bytes as usize];
    fill(&mut buf, 7);
    let path = work.join("write-limit.bin");
    let mut plain = Vec::new();
    let mut synced = Vec::new();
    for _ in 0..runs {
        for (sync, times) in [(false, &mut plain), (true, &mut synced)] {
            let _ = std::fs::remove_file(&path);
            let t = Instant::now();
            let mut f = std::fs::File::create_new(&path)?;
            f.write_all(&buf)?;
            if sync {
                f.sync_all()?;
            }
            times.push(t.elapsed().as_secs_f64());
            drop(f);
            // The next run must not wait for this one's writeback.
            std::fs::File::open(&path)?.sync_all()?;
        }
    }
    let _ = std::fs::remove_file(&path);
    let (w, ws) = (median(plain), median(synced));
    Ok(json!({
        "bytes": bytes,
        "write_s_median": w,
        "write_mb_per_s": bytes as f64 / w / 1e6,
        "write_fsync_s_median": ws,
        "write_fsync_mb_per_s": bytes as f64 / ws / 1e6,
    }))
}

/// The physical limits of what a cold build must do with the INPUT file, RUNS times each,
/// median: read it (from the page cache, as the build does), blake3 it (on all cores, as the
/// scan does) and copy it in memory (into a buffer that was used before).
fn input_limits(input: &Path, runs: usize) -> Result<serde_json::Value> {
    let (mut read, mut hash, mut copy) = (Vec::new(), Vec::new(), Vec::new());
    let mut bytes = Vec::new();
    let mut to = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        bytes = std::fs::read(input)?;
        read.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let mut h = blake3::Hasher::new();
        h.update_rayon(&bytes);
        std::hint::black_box(h.finalize());
        hash.push(t.elapsed().as_secs_f64());
        to.resize(bytes.len(), 0u8);
        let t = Instant::now();
        to.copy_from_slice(&bytes);
        std::hint::black_box(&to);
        copy.push(t.elapsed().as_secs_f64());
    }
    let n = bytes.len() as f64;
    let (r, h, c) = (median(read), median(hash), median(copy));
    Ok(json!({
        "bytes": bytes.len(),
        "read_s_median": r,
        "read_mb_per_s": n / r / 1e6,
        "blake3_s_median": h,
        "blake3_mb_per_s": n / h / 1e6,
        "memcpy_s_median": c,
        "memcpy_mb_per_s": n / c / 1e6,
    }))
}

/// The `build` bench; `APS5_BENCH_BASELINE=PATH` also measures another aps5 binary on the
/// same dump in the same run.
fn cold_build(quick: bool) -> Result<serde_json::Value> {
    let (code_size, relocs) = if quick {
        (12usize << 20, 250_000u64)
    } else {
        (48usize << 20, 1_000_000u64)
    };
    let aps5 = build_aps5()?;
    let work = root().join("target/bench/build-work");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(work.join("src"))?;
    let code: Vec<u8> = own_code()?
        .iter()
        .copied()
        .cycle()
        .take(code_size)
        .collect();
    let code_file = work.join("code.bin");
    std::fs::write(&code_file, &code)?;
    let src = work.join("src/big.c");
    std::fs::write(&src, big_executable_source(&code_file, relocs))?;
    let dump = work.join("dump");
    println!(
        "generating a {} MiB code / {relocs} relocation executable with the fixture SDK",
        code_size >> 20
    );
    aps5_sdk::build_dump(&src, &dump, &aps5_sdk::DumpOptions::default())?;
    let input = std::fs::metadata(dump.join("eboot.bin"))?.len();
    run_aps5(&aps5, &dump, &["-q", "init"])?;
    let cfg = dump.join("aps5.toml");
    let text = std::fs::read_to_string(&cfg)?
        .replace("cache_dir = \"\"", "cache_dir = \"../cache\"")
        // The code is this program's own, cut anywhere: the bench measures speed, not the scan.
        .replace("allow_syscalls = false", "allow_syscalls = true");
    if !text.contains("allow_syscalls = true") || !text.contains("../cache") {
        bail!("aps5 init wrote an aps5.toml this bench does not know how to edit");
    }
    std::fs::write(&cfg, text)?;

    let runs = if quick { 1 } else { 3 };
    // Another aps5 (an older build, say) measured in the same run on the same dump, its
    // builds alternating with these, so a change is compared under the same load.
    let base = std::env::var_os("APS5_BENCH_BASELINE").map(PathBuf::from);
    let mut bins: Vec<&Path> = base.iter().map(PathBuf::as_path).collect();
    bins.push(&aps5);
    let mut all = cold_runs(&bins, &work, &dump, input, runs)?;
    let mut figures = all.pop().expect("this aps5's figures");
    let app_elf = figures["app_elf_bytes"].as_u64().unwrap_or(0);
    let mut limits = write_limits(&work, app_elf, runs)?;
    limits["input"] = input_limits(&dump.join("eboot.bin"), runs)?;
    let secs = figures["cold_build_s_median"].as_f64().unwrap_or(f64::NAN);
    // The floor of a cold build: read and hash the input, write app.elf (no relink at all).
    let floor = ["read_s_median", "blake3_s_median"]
        .iter()
        .map(|k| limits["input"][k].as_f64().unwrap_or(f64::NAN))
        .sum::<f64>()
        + limits["write_s_median"].as_f64().unwrap_or(f64::NAN);
    limits["read_hash_write_s"] = json!(floor);
    limits["read_hash_write_mb_per_s"] = json!(input as f64 / floor / 1e6);
    figures["cold_build_over_read_hash_write_limit"] = json!(secs / floor);
    figures["cold_build_over_write_fsync_limit"] =
        json!(secs / limits["write_fsync_s_median"].as_f64().unwrap_or(f64::NAN));
    figures["cold_build_over_write_limit"] =
        json!(secs / limits["write_s_median"].as_f64().unwrap_or(f64::NAN));
    figures["limits"] = limits;
    // The same no-op rebuild the graph bench measures, for scale.
    let (noop, _, _) = run_aps5(&aps5, &dump, &["-q", "build"])?;
    figures["noop_rebuild_s"] = json!(noop);
    if let (Some(base), Some(base_figures)) = (&base, all.pop()) {
        figures["baseline"] = base_figures;
        figures["baseline"]["binary"] = json!(base.display().to_string());
        // A faster build must make the very same bytes.
        figures["app_elf_same_as_baseline"] =
            json!(figures["baseline"]["app_elf_blake3"] == figures["app_elf_blake3"]);
        figures["cold_build_over_baseline"] = json!(
            secs / figures["baseline"]["cold_build_s_median"]
                .as_f64()
                .unwrap_or(f64::NAN)
        );
    }
    let _ = std::fs::remove_dir_all(&work);
    Ok(figures)
}

/// The GPU fixtures `ttff` measures: one draw, textures, and 10,000 draws before the first flip.
const TTFF_FIXTURES: [&str; 3] = ["gpu_triangle", "gpu_texture", "gpu_draws10k"];

/// CLOCK_MONOTONIC in nanoseconds: the clock the driver's `APS5_FLIP_TIMES` line reads.
fn monotonic_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// One `ttff` mode.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Cold,
    Warm,
    Stubbed,
    /// Cold for aps5 (no packs, records, blob) but with the driver's own shader cache kept
    /// from the earlier runs of this mode: what of a cold start is aps5's, apart from the
    /// driver compiling its code for the first time on this machine.
    ColdDriverCacheKept,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Cold => "cold",
            Mode::Warm => "warm",
            Mode::Stubbed => "stubbed",
            Mode::ColdDriverCacheKept => "cold_driver_cache_kept",
        }
    }
}

/// Removes PATH (a file or a folder) if it is there.
fn remove_any(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("{}", path.display())),
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path)
            .with_context(|| format!("cannot remove {}", path.display())),
        Ok(_) => {
            std::fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))
        }
    }
}

/// A copy of DUMP at DIR made into a project (cache CACHE shared by the fixture's projects)
/// and built.
fn ttff_project(aps5: &Path, dump: &Path, dir: &Path) -> Result<()> {
    copy_dir(dump, dir)?;
    run_aps5(aps5, dir, &["-q", "init"])?;
    let cfg = dir.join("aps5.toml");
    let text =
        std::fs::read_to_string(&cfg)?.replace("cache_dir = \"\"", "cache_dir = \"../cache\"");
    if !text.contains("../cache") {
        bail!("aps5 init wrote an aps5.toml this bench does not know how to edit");
    }
    std::fs::write(&cfg, text)?;
    run_aps5(aps5, dir, &["-q", "build"])?;
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let dest = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &dest)?;
        } else {
            std::fs::copy(e.path(), &dest)
                .with_context(|| format!("cannot copy {}", e.path().display()))?;
        }
    }
    Ok(())
}

/// What one headless run gave: milliseconds from before the spawn of `aps5 run` to the end of
/// the first flip, to the process's exit (the whole run), and the driver's statistics.
struct FirstFrame {
    ttff_ms: f64,
    exit_ms: f64,
    stats: serde_json::Value,
}

/// `aps5 -v run --headless` in PROJECT, its frames written to FRAMES; `env`: the mode's variables. The time is the driver's own
/// CLOCK_MONOTONIC reading at the flip (`APS5_FLIP_TIMES=1`) against this process's before
/// the spawn: start-up of aps5, the relinked program's loader, the device, shaders,
/// pipelines, the draws and the PNG are all inside it.
fn first_frame(
    aps5: &Path,
    project: &Path,
    frames: &Path,
    env: &[(&str, &Path)],
    stub: bool,
) -> Result<FirstFrame> {
    remove_any(frames)?;
    let mut cmd = Command::new(aps5);
    cmd.arg("-C")
        .arg(project)
        .args(["-v", "run", "--headless", "--frames"])
        .arg(frames)
        // Not APS5_MAX_FRAMES=1: a flip from the command stream would then call exit on
        // the queue's thread while the program's own thread goes on to its exit, and the
        // two race (the statistics line is cut short). The fixtures end by themselves.
        .env_remove("APS5_MAX_FRAMES")
        .env("APS5_FLIP_TIMES", "1")
        .env_remove("APS5_GPU_STUB")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if stub {
        cmd.env("APS5_GPU_STUB", "1");
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let t0 = monotonic_ns();
    let out = cmd.output().context("cannot run aps5")?;
    let t1 = monotonic_ns();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Stubbed, the fixtures' own pixel checks fail (nothing is drawn): their exit status
    // says so; a signal is still a failure.
    let finished = out.status.success() || (stub && out.status.code().is_some());
    if !finished {
        bail!(
            "aps5 run in {} failed ({}):\n{stderr}",
            project.display(),
            out.status
        );
    }
    let flip = stderr
        .lines()
        .find_map(|l| l.strip_prefix("aps5: videoout: flip 0 done at CLOCK_MONOTONIC "))
        .and_then(|r| r.strip_suffix(" ns"))
        .and_then(|v| v.parse::<u64>().ok())
        .with_context(|| {
            format!(
                "the run in {} printed no first flip:\n{stderr}",
                project.display()
            )
        })?;
    let stats = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("aps5: gpu statistics: "))
        .next_back()
        .and_then(|l| serde_json::from_str(l).ok())
        .with_context(|| {
            format!(
                "the run in {} printed no GPU statistics:\n{stderr}",
                project.display()
            )
        })?;
    if !frames.join("frame-00000.png").is_file() {
        bail!("the run in {} wrote no frame", project.display());
    }
    Ok(FirstFrame {
        ttff_ms: flip.saturating_sub(t0) as f64 / 1e6,
        exit_ms: (t1 - t0) as f64 / 1e6,
        stats,
    })
}

/// The statistic K of a run (0 when absent: checked by the caller's expectations).
fn stat_of(s: &serde_json::Value, k: &str) -> u64 {
    s[k].as_u64().unwrap_or(0)
}

/// `APS5_TTFF_PREBUILT=DIR`: the fixture dumps are kept in `DIR/<fixture>` and copied from
/// there (the fixture SDK's clang and lld are not needed); a missing one is built and stored.
const TTFF_PREBUILT_ENV: &str = "APS5_TTFF_PREBUILT";
/// `APS5_TTFF_FILL=1` (with `APS5_TTFF_PREBUILT`): only fill DIR, measure nothing.
const TTFF_FILL_ENV: &str = "APS5_TTFF_FILL";

/// The dump of fixture `name` at `dump`: built by the fixture SDK, or copied from
/// [`TTFF_PREBUILT_ENV`]'s folder (filled there when missing).
fn ttff_dump(name: &str, dump: &Path) -> Result<()> {
    let build = |to: &Path| {
        aps5_sdk::build_dump(
            &aps5_sdk::fixtures_dir().join(name),
            to,
            &aps5_sdk::DumpOptions { ps4: false },
        )
        .with_context(|| format!("building the {name} dump"))
    };
    let Some(dir) = std::env::var_os(TTFF_PREBUILT_ENV).map(PathBuf::from) else {
        return build(dump);
    };
    let stored = dir.join(name);
    // A dump is complete once its marker is written (a fill cut short is built again).
    let done = dir.join(format!("{name}.complete"));
    if !done.is_file() {
        remove_any(&stored)?;
        build(&stored).with_context(|| {
            format!(
                "{name} is not in {TEMPLATE} {} (filling it needs clang and lld)",
                dir.display(),
                TEMPLATE = TTFF_PREBUILT_ENV
            )
        })?;
        std::fs::write(&done, b"")?;
    }
    copy_dir(&stored, dump)
        .with_context(|| format!("copying the prebuilt {name} dump from {}", stored.display()))
}

/// The `ttff` bench (docs/PACKS.md, "Time to first frame").
fn ttff(quick: bool) -> Result<serde_json::Value> {
    if std::env::var_os(TTFF_FILL_ENV).is_some() {
        let Some(dir) = std::env::var_os(TTFF_PREBUILT_ENV).map(PathBuf::from) else {
            bail!("{TTFF_FILL_ENV}=1 needs {TTFF_PREBUILT_ENV}=DIR to fill");
        };
        let scratch = root().join("target/bench/ttff-fill");
        for name in TTFF_FIXTURES {
            let _ = std::fs::remove_dir_all(&scratch);
            ttff_dump(name, &scratch)?;
        }
        let _ = std::fs::remove_dir_all(&scratch);
        let bytes = tree_bytes(&dir)?;
        println!(
            "ttff: {} filled with the dumps of {} ({bytes} bytes)",
            dir.display(),
            TTFF_FIXTURES.join(", ")
        );
        return Ok(json!({
            "filled": dir.display().to_string(),
            "fixtures": TTFF_FIXTURES,
            "bytes": bytes,
        }));
    }
    let aps5 = build_aps5()?;
    let runs = if quick { 3 } else { 7 };
    let work = root().join("target/bench/ttff-work");
    let _ = std::fs::remove_dir_all(&work);
    let mut per = serde_json::Map::new();
    for name in TTFF_FIXTURES {
        println!("ttff {name}: {runs} runs per mode");
        let base = work.join(name);
        let dump = base.join("dump");
        ttff_dump(name, &dump)?;
        // Two projects of the same dump (one cache): the cold one never gets a pack, the warm
        // one is prepared once; so the modes' runs can alternate and share the machine's
        // load alike.
        let cold = base.join("cold");
        let warm = base.join("warm");
        ttff_project(&aps5, &dump, &cold)?;
        ttff_project(&aps5, &dump, &warm)?;
        let out = std::fs::canonicalize(cold.join("aps5-out"))?;
        remove_any(&out.join("packs/shaders.pack"))?;
        remove_any(&out.join("packs/pipelines.pack"))?;
        // The drivers' own shader caches (Mesa's, NVIDIA's) are kept per mode: a cold start
        // gets an empty one every time, the warm project keeps its own.
        let warm_driver_cache = base.join("driver-cache-warm");
        std::fs::create_dir_all(&warm_driver_cache)?;
        let warm_env = [
            ("MESA_SHADER_CACHE_DIR", warm_driver_cache.as_path()),
            ("__GL_SHADER_DISK_CACHE_PATH", warm_driver_cache.as_path()),
        ];
        // Warm: a first run (to its end) records what the build's pack lacks, then the build
        // packs it and `--prewarm` fills the driver's pipeline cache blob.
        let record = Command::new(&aps5)
            .arg("-C")
            .arg(&warm)
            .args(["-q", "run", "--headless"])
            .envs(warm_env)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()?;
        if !record.status.success() {
            bail!(
                "the recording run of {name} failed:\n{}",
                String::from_utf8_lossy(&record.stderr)
            );
        }
        let prewarm = Command::new(&aps5)
            .arg("-C")
            .arg(&warm)
            .args(["build", "--prewarm"])
            .envs(warm_env)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()?;
        let prewarm_said = String::from_utf8_lossy(&prewarm.stderr).trim().to_string();
        if !prewarm.status.success() {
            bail!("aps5 build --prewarm of {name} failed:\n{prewarm_said}");
        }

        let cold_kept_cache = base.join("driver-cache-cold-kept");
        std::fs::create_dir_all(&cold_kept_cache)?;
        let mut times: [(Vec<f64>, Vec<f64>); 4] = Default::default();
        let mut stats: [serde_json::Value; 4] = Default::default();
        // Not measured: the first run of the kept driver cache (it fills it).
        for i in 0..=runs {
            let modes: &[Mode] = if i == 0 {
                &[Mode::ColdDriverCacheKept]
            } else {
                &[
                    Mode::Cold,
                    Mode::Warm,
                    Mode::Stubbed,
                    Mode::ColdDriverCacheKept,
                ]
            };
            for &mode in modes {
                let m = mode as usize;
                let frames = base.join(format!("frames-{}", mode.name()));
                if matches!(mode, Mode::Cold | Mode::ColdDriverCacheKept) {
                    // A first start for aps5: no records, no blob.
                    let state = cold.join(".aps5");
                    for f in ["records.sqlite", "records.sqlite-wal", "records.sqlite-shm"] {
                        remove_any(&state.join(f))?;
                    }
                    remove_any(&state.join("pipeline-cache"))?;
                }
                let r = match mode {
                    Mode::Cold => {
                        // And empty driver caches.
                        let fresh = base.join(format!("driver-cache-cold-{i}"));
                        std::fs::create_dir_all(&fresh)?;
                        let env = [
                            ("MESA_SHADER_CACHE_DIR", fresh.as_path()),
                            ("__GL_SHADER_DISK_CACHE_PATH", fresh.as_path()),
                        ];
                        let r = first_frame(&aps5, &cold, &frames, &env, false)?;
                        remove_any(&fresh)?;
                        r
                    }
                    Mode::Warm => first_frame(&aps5, &warm, &frames, &warm_env, false)?,
                    Mode::Stubbed => first_frame(&aps5, &warm, &frames, &warm_env, true)?,
                    Mode::ColdDriverCacheKept => {
                        let env = [
                            ("MESA_SHADER_CACHE_DIR", cold_kept_cache.as_path()),
                            ("__GL_SHADER_DISK_CACHE_PATH", cold_kept_cache.as_path()),
                        ];
                        let r = first_frame(&aps5, &cold, &frames, &env, false)?;
                        if i == 0 {
                            continue;
                        }
                        r
                    }
                };
                times[m].0.push(r.ttff_ms);
                times[m].1.push(r.exit_ms);
                stats[m] = r.stats;
            }
        }
        // What each mode is meant to be, checked on its last run: a figure of the wrong
        // thing is worse than none.
        let [cs, ws, ss, ks] = &stats;
        for s in [cs, ks] {
            if stat_of(s, "pack_hits") != 0 || stat_of(s, "translations") == 0 {
                bail!("{name}: the cold run was not cold: {s}");
            }
        }
        if stat_of(ws, "translations") != 0
            || stat_of(ws, "misses") != 0
            || stat_of(ws, "pipelines") != 0
        {
            bail!(
                "{name}: the warm run translated or created pipelines on the submit thread: {ws}"
            );
        }
        if stat_of(ss, "translations") != 0
            || stat_of(ss, "pipelines") != 0
            || stat_of(ss, "pipelines_prewarmed") != 0
        {
            bail!("{name}: the stubbed run did GPU work: {ss}");
        }
        let med: Vec<f64> = times.iter().map(|(t, _)| median(t.clone())).collect();
        let exit: Vec<f64> = times.iter().map(|(_, t)| median(t.clone())).collect();
        let mode_json = |m: usize| {
            json!({
                "ttff_ms_median": med[m],
                "ttff_ms_runs": times[m].0,
                "exit_ms_median": exit[m],
                "statistics_last_run": stats[m],
            })
        };
        let ratio = |a: f64| a / med[2];
        println!(
            "ttff {name}: cold {:.1} ms, cold with the driver's cache kept {:.1} ms, warm {:.1} ms, stubbed {:.1} ms (warm/stubbed {:.2}, cold/stubbed {:.2})",
            med[0],
            med[3],
            med[1],
            med[2],
            ratio(med[1]),
            ratio(med[0])
        );
        per.insert(
            name.into(),
            json!({
                "cold": mode_json(0),
                "warm": mode_json(1),
                "stubbed": mode_json(2),
                "cold_driver_cache_kept": mode_json(3),
                "warm_over_stubbed": ratio(med[1]),
                "cold_over_stubbed": ratio(med[0]),
                "cold_driver_cache_kept_over_stubbed": ratio(med[3]),
                "warm_within_1_2x_of_stubbed": ratio(med[1]) <= 1.2,
                "prewarm_build": prewarm_said,
            }),
        );
    }
    let _ = std::fs::remove_dir_all(&work);
    Ok(json!({
        "fixtures": per,
        "runs_per_mode": runs,
        "device": std::env::var("APS5_VK_DEVICE").unwrap_or_else(|_| "the first Vulkan device (APS5_VK_DEVICE unset)".into()),
        "note": "ttff: from before spawning `aps5 run --headless` to the driver's CLOCK_MONOTONIC at the end of the first flip (PNG written); the modes' runs alternate; cold: no shaders.pack/pipelines.pack, records, blob, and an empty Mesa/NVIDIA shader disk cache each run; cold_driver_cache_kept: the same but the Mesa/NVIDIA cache kept from the earlier runs of this mode; warm: after a first run and `aps5 build --prewarm`; stubbed: APS5_GPU_STUB=1 (device opened, draws and dispatches not run)",
    }))
}
