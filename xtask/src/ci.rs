//! `cargo xtask ci`: every check, in order, each step's result in a closing summary.
//! A failing step does not stop the later ones; any failure makes the exit status non-zero.

use std::process::Command;
use std::time::Instant;

use anyhow::{Result, bail};

use crate::util::{cargo, cargo_bin, root};

/// The Debian packages the suites need: one list, shared with `.ci/run` (TESTING.md).
const PACKAGES: &str = include_str!("../system-packages.txt");

/// The package names of `system-packages.txt` (comments and blank lines dropped).
pub fn packages() -> Vec<&'static str> {
    PACKAGES
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .collect()
}

/// Whether dpkg has `package` installed.
fn installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .output()
        .is_ok_and(|o| o.status.success() && o.stdout.ends_with(b"install ok installed"))
}

/// Installs the missing system packages (as root, with apt-get), or says which are missing.
pub fn ensure_packages() -> Result<()> {
    let missing: Vec<&str> = packages().into_iter().filter(|p| !installed(p)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!(
            "missing system packages: {} (install them with apt-get as root)",
            missing.join(" ")
        );
    }
    println!("xtask: installing {}", missing.join(" "));
    let ok = Command::new("apt-get").arg("update").status()?.success()
        && Command::new("apt-get")
            .args(["install", "-y", "--no-install-recommends"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()?
            .success();
    if !ok {
        bail!("apt-get could not install {}", missing.join(" "));
    }
    Ok(())
}

/// cargo-fuzz, installed from crates.io when missing.
fn ensure_cargo_fuzz() -> Result<()> {
    let present = Command::new(cargo_bin())
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if present {
        return Ok(());
    }
    println!("xtask: installing cargo-fuzz");
    let ok = Command::new(cargo_bin())
        .args(["install", "cargo-fuzz", "--version", "=0.13.2", "--locked"])
        .status()?
        .success();
    if !ok {
        bail!("`cargo install cargo-fuzz` failed");
    }
    Ok(())
}

struct Step {
    name: String,
    ok: bool,
    secs: f64,
}

/// The lines of cargo test output that name a failure: a failing test, or a test binary that
/// failed (with cargo's own "to rerun pass" hint). The CI log keeps only its tail, so the
/// summary repeats them.
fn failure_lines(line: &str) -> bool {
    let l = line.trim();
    (l.starts_with("test ") && l.ends_with("... FAILED"))
        || l.starts_with("error: test failed, to rerun pass")
        || l.starts_with("error: doctest failed")
}

/// Echoes `from` line by line into `to`, returning its failure lines (see `failure_lines`).
fn echo_failures(from: impl std::io::Read, mut to: impl std::io::Write) -> Vec<String> {
    use std::io::BufRead;
    let mut found = Vec::new();
    for line in std::io::BufReader::new(from).lines().map_while(|l| l.ok()) {
        let _ = writeln!(to, "{line}");
        if failure_lines(&line) {
            found.push(line.trim().to_string());
        }
    }
    found
}

/// Runs `cargo ARGS`, echoing its output as it comes, and returns success plus the failure
/// lines from stdout and stderr.
fn cargo_collecting_failures(args: &[&str]) -> Result<(bool, Vec<String>)> {
    use std::process::Stdio;
    let mut child = Command::new(cargo_bin())
        .args(args)
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let stderr = child.stderr.take().expect("piped stderr");
    let err_thread = std::thread::spawn(move || echo_failures(stderr, std::io::stderr()));
    let mut found = echo_failures(
        child.stdout.take().expect("piped stdout"),
        std::io::stdout(),
    );
    let status = child.wait()?;
    found.extend(err_thread.join().unwrap_or_default());
    Ok((status.success(), found))
}

fn run_step(steps: &mut Vec<Step>, name: &str, f: impl FnOnce() -> Result<bool>) {
    println!("\n==> {name}");
    let t = Instant::now();
    let ok = match f() {
        Ok(ok) => ok,
        Err(e) => {
            eprintln!("{name}: {e:#}");
            false
        }
    };
    println!(
        "<== {name}: {} ({:.1}s)",
        if ok { "ok" } else { "FAILED" },
        t.elapsed().as_secs_f64()
    );
    steps.push(Step {
        name: name.into(),
        ok,
        secs: t.elapsed().as_secs_f64(),
    });
}

/// Runs one cargo-fuzz target for `secs` seconds, seeded with the given files.
fn fuzz_smoke(target: &str, secs: u64, seeds: &[std::path::PathBuf]) -> Result<bool> {
    ensure_cargo_fuzz()?;
    let corpus = root().join("tests/fuzz/corpus").join(target);
    std::fs::create_dir_all(&corpus)?;
    for s in seeds {
        if let Some(name) = s.file_name() {
            let dest = corpus.join(format!(
                "seed-{}-{}",
                s.parent()
                    .and_then(|p| p.file_name())
                    .map(|p| p.to_string_lossy())
                    .unwrap_or_default(),
                name.to_string_lossy()
            ));
            let _ = std::fs::copy(s, dest);
        }
    }
    let time = format!("-max_total_time={secs}");
    cargo(
        &[
            "fuzz",
            "run",
            "--fuzz-dir",
            "tests/fuzz",
            target,
            corpus.to_str().unwrap(),
            "--",
            &time,
            "-rss_limit_mb=4096",
        ],
        &[("RUSTC_BOOTSTRAP", "1")],
    )
}

/// The homebrew binaries of the shared corpus, as fuzzing seeds.
fn homebrew_seeds() -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root().join("../shared/corpus/homebrew")];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .extension()
                .is_some_and(|x| x == "bin" || x == "prx" || x == "sprx")
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

pub fn ci(install: bool, fuzz_seconds: u64) -> Result<bool> {
    let mut steps = Vec::new();
    if install {
        run_step(&mut steps, "system packages", || {
            ensure_packages().map(|()| true)
        });
    }
    run_step(&mut steps, "cargo fmt --check", || {
        cargo(&["fmt", "--all", "--", "--check"], &[])
    });
    run_step(&mut steps, "cargo clippy -D warnings", || {
        cargo(
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--locked",
                "--",
                "-D",
                "warnings",
            ],
            &[],
        )
    });
    let mut test_failures = Vec::new();
    run_step(&mut steps, "cargo test (workspace)", || {
        // Every test binary runs even after one fails, so one CI run reports every failure.
        let (ok, failures) =
            cargo_collecting_failures(&["test", "--workspace", "--locked", "--no-fail-fast"])?;
        test_failures = failures;
        Ok(ok)
    });
    // The translator against the kernel corpus on lavapipe (tests/kernels/README.md).
    run_step(&mut steps, "kernel-diff corpus (wave32 + wave64)", || {
        // Through cargo, not in this process: the corpus re-executes its own binary per kernel,
        // and `cargo test` above may have replaced this xtask binary on disk.
        cargo(
            &[
                "run",
                "--locked",
                "-q",
                "-p",
                "xtask",
                "--",
                "kernel-diff",
                "--corpus",
            ],
            // llvmpipe compiles some translated kernels slowly when Mesa's shader cache is
            // cold (over a minute for matmul_naive on a 2-core box: the constant lane-loop
            // trip counts, tests/kernels/README.md); a compile is not a hang.
            &[("APS5_KERNEL_DIFF_TIMEOUT", "240")],
        )
    });
    // Random kernels (tests/kernels/README.md): seed 1, kernels 0..16, both waves, no new
    // kernel started after 60 s; a mismatch fails with the seed, the kernel and its source. A
    // kernel past the 40 s child timeout is a named skip ("slow host compile": lavapipe's LLVM).
    run_step(&mut steps, "fuzz smoke: random kernels", || {
        cargo(
            &[
                "run",
                "--locked",
                "-q",
                "-p",
                "xtask",
                "--",
                "kernel-fuzz",
                "16",
                "1",
                "--seconds",
                "60",
            ],
            &[],
        )
    });
    run_step(&mut steps, "fuzz smoke: reader", || {
        fuzz_smoke("reader", fuzz_seconds, &homebrew_seeds())
    });
    run_step(&mut steps, "fuzz smoke: decoder", || {
        fuzz_smoke("decoder", fuzz_seconds, &[])
    });
    run_step(&mut steps, "fuzz smoke: pm4", || {
        fuzz_smoke("pm4", fuzz_seconds, &[])
    });
    run_step(&mut steps, "fuzz smoke: scan", || {
        fuzz_smoke("scan", fuzz_seconds, &homebrew_seeds())
    });
    run_step(&mut steps, "decoder vs llvm-mc (20,000 words)", || {
        cargo(
            &[
                "run",
                "--release",
                "--locked",
                "-q",
                "-p",
                "aps5-shader",
                "--example",
                "fuzz_decoder",
                "--",
                "20000",
                "1",
            ],
            &[],
        )
    });

    println!("\n== summary");
    for s in &steps {
        println!(
            "  {:<40} {:>7} {:>8.1}s",
            s.name,
            if s.ok { "ok" } else { "FAILED" },
            s.secs
        );
    }
    if !test_failures.is_empty() {
        println!("\n== failing tests");
        for f in &test_failures {
            println!("  {f}");
        }
    }
    let failed = steps.iter().filter(|s| !s.ok).count();
    println!("{} passed, {} failed", steps.len() - failed, failed);
    Ok(failed == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_lines_name_failing_tests_and_binaries_only() {
        assert!(failure_lines("test pm4::copy_data ... FAILED"));
        assert!(failure_lines(
            "error: test failed, to rerun pass `-p aps5-relink --test fixtures`"
        ));
        assert!(!failure_lines("test pm4::copy_data ... ok"));
        assert!(!failure_lines("test result: FAILED. 3 passed; 1 failed"));
        assert!(!failure_lines("failures:"));
        // Every line is echoed; only the failures come back.
        let text = "running 2 tests\ntest a ... ok\ntest b ... FAILED\n";
        let mut echoed = Vec::new();
        assert_eq!(
            echo_failures(text.as_bytes(), &mut echoed),
            ["test b ... FAILED"]
        );
        assert_eq!(String::from_utf8(echoed).unwrap(), text);
    }

    #[test]
    fn ci_run_installs_the_one_package_list() {
        // .ci/run must take its packages from system-packages.txt, not a list of its own.
        let run = std::fs::read_to_string(root().join(".ci/run")).unwrap();
        assert!(run.contains("xtask/system-packages.txt"), "{run}");
        for p in packages() {
            assert!(!run.contains(p), ".ci/run names {p} itself: {run}");
        }
        for needed in ["clang-14", "spirv-tools", "xvfb", "mesa-vulkan-drivers"] {
            assert!(packages().contains(&needed), "{needed}");
        }
    }
}
