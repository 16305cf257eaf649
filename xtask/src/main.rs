//! `cargo xtask`: the project's automation.
//!
//! - `ci`: the whole test matrix (installs missing system packages first), with a summary.
//! - `bench`: benchmarks; figures written as JSON under `target/bench/`.
//! - `dump SRC -o DUMP [--ps4]`: build a PS5 (or PS4) test dump with the fixture SDK.
//! - `fuzz-decoder N`: differential fuzzing of the RDNA2 decoder against llvm-mc.

mod bench;
mod ci;
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
    /// Run every check CI runs: fmt, clippy, tests, fuzz smokes, decoder differential smoke.
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
        /// Only these benchmarks (build, graph, elf, shader, cache).
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
