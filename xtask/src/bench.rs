//! `cargo xtask bench`: figures, not timed tests. Each figure is written beside its physical limit,
//! measured in the same run, as JSON under `target/bench/`.
//!
//! - `graph`: a generated dump (10,000 files / 2 GB; `--quick`: 1,000 / 200 MB) through the real
//!   `aps5` binary: cold build, no-op rebuild against stat()ing every file, rebuild after changing one
//!   file, peak RSS, and blake3 throughput against a plain read loop.
//! - `elf`, `shader`, `cache`: each crate's `examples/bench_<name>.rs`, which prints one JSON object.

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
        ("cache", "aps5-cache"),
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
    let t = Instant::now();
    let child = Command::new(aps5)
        .args(["-C", dir.to_str().unwrap()])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
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
        bail!("aps5 {} failed in {}", args.join(" "), dir.display());
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
    // APS5_BENCH_APS5=BINARY measures that binary (built elsewhere, e.g. carried to a quiet
    // machine); else the workspace's release build.
    let aps5 = match std::env::var_os("APS5_BENCH_APS5") {
        Some(bin) => std::path::PathBuf::from(bin),
        None => {
            if !crate::util::cargo(&["build", "--release", "--locked", "-q", "-p", "aps5"], &[])? {
                bail!("cannot build aps5");
            }
            root().join("target/release/aps5")
        }
    };
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
