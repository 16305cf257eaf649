//! `cargo xtask`: the project's automation.
//!
//! - `ci`: the whole test matrix (installs missing system packages first), with a summary.
//! - `bench`: benchmarks; figures written as JSON under `target/bench/`.
//! - `dump SRC -o DUMP [--ps4]`: build a PS5 (or PS4) test dump with the fixture SDK.
//! - `fuzz-decoder N`: differential fuzzing of the RDNA2 decoder against llvm-mc.
//! - `kernel-diff KERNEL.cl [SPEC.json] [--wave64] | --corpus`: the translator's kernel-diff
//!   harness (OpenCL C via clang-14 for gfx1030 and the host, compared buffer by buffer).
//! - `kernel-fuzz N [SEED] [--seconds S]`: random kernels through the same harness.
//! - `gen-registers [--check]`: drivers/agc/src/generated.rs from Mesa's register database.

mod bench;
mod bench_glsl;
mod ci;
mod gen_registers;
mod kernel_diff;
mod kernel_fuzz;
mod util;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run every check CI runs: fmt, clippy, tests, kernel corpus, fuzz smokes, decoder smoke.
    Ci {
        /// Skip the package check / installation.
        #[arg(long)]
        no_install: bool,
        /// Seconds for each cargo-fuzz smoke run.
        #[arg(long, default_value_t = 20)]
        fuzz_seconds: u64,
    },
    /// Run the benchmarks and write their figures to target/bench/*.json.
    Bench {
        /// A small dump (1,000 files / 200 MB) instead of 10,000 files / 2 GB.
        #[arg(long)]
        quick: bool,
        /// Only these benchmarks (build, graph, elf, shader, translate, cache, agc, scan, pack,
        /// lower, runtime, draws, gpu_draws, prewarm, glsl, ttff).
        only: Vec<String>,
    },
    /// Build a test dump from fixture sources.
    Dump {
        src: PathBuf,
        #[arg(short, long)]
        out: PathBuf,
        /// PS4 layout (ABI 0, DYNLIBDATA) instead of PS5.
        #[arg(long)]
        ps4: bool,
    },
    /// Differential fuzzing of the RDNA2 decoder against llvm-mc.
    FuzzDecoder { words: u64, seed: Option<u64> },
    /// Compile an OpenCL C kernel for gfx1030 and the host, translate and run it on Vulkan,
    /// compare every output buffer (tests/kernels/README.md).
    KernelDiff {
        /// The kernel source (with --corpus: only corpus files whose path contains this).
        kernel: Option<PathBuf>,
        /// The spec (default: KERNEL.json beside the kernel, else the documented default).
        spec: Option<PathBuf>,
        /// Build wave64 (-mwavefrontsize64) instead of wave32.
        #[arg(long)]
        wave64: bool,
        /// Run the whole corpus (tests/kernels/*.cl, both wave sizes) against KNOWN_FAILING.
        #[arg(long)]
        corpus: bool,
        /// With --corpus: rewrite tests/kernels/KNOWN_FAILING from this run.
        #[arg(long)]
        update_known_failing: bool,
        /// Both wave sizes of one kernel, one OUTCOME line each (what --corpus runs per kernel).
        #[arg(long, hide = true)]
        outcomes: bool,
    },
    /// Random kernels (straight-line and looping integer/float code) through kernel-diff.
    KernelFuzz {
        count: u32,
        seed: Option<u64>,
        /// Start no new kernel once this many seconds have passed (at least one kernel runs).
        #[arg(long)]
        seconds: Option<u64>,
    },
    /// Write drivers/agc/src/generated.rs from ../shared/corpus/amd-registers (--check: compare).
    GenRegisters {
        #[arg(long)]
        check: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Ci {
            no_install,
            fuzz_seconds,
        } => ci::ci(!no_install, fuzz_seconds),
        Cmd::Bench { quick, only } => bench::bench(quick, &only),
        Cmd::Dump { src, out, ps4 } => {
            aps5_sdk::build_dump(&src, &out, &aps5_sdk::DumpOptions { ps4 }).map(|()| true)
        }
        Cmd::FuzzDecoder { words, seed } => {
            let (words, seed) = (words.to_string(), seed.map(|s| s.to_string()));
            let mut args = vec!["run", "--release", "-q", "-p", "aps5-shader"];
            args.extend(["--example", "fuzz_decoder", "--", &words]);
            args.extend(seed.as_deref());
            util::cargo(&args, &[])
        }
        Cmd::KernelDiff {
            kernel,
            spec,
            wave64,
            corpus,
            update_known_failing,
            outcomes,
        } => {
            if corpus {
                let filter = kernel.as_ref().map(|k| k.to_string_lossy().into_owned());
                kernel_diff::corpus(filter.as_deref(), update_known_failing)
            } else if let Some(k) = kernel {
                if outcomes {
                    kernel_diff::outcomes(&k)
                } else {
                    kernel_diff::kernel_diff(&k, spec.as_deref(), wave64)
                }
            } else {
                Err(anyhow::anyhow!("kernel-diff: give KERNEL.cl or --corpus"))
            }
        }
        Cmd::KernelFuzz {
            count,
            seed,
            seconds,
        } => kernel_fuzz::fuzz(count, seed.unwrap_or(1), seconds),
        Cmd::GenRegisters { check } => {
            gen_registers::run(&util::root(), check).map_err(|e| anyhow::anyhow!(e))
        }
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}
