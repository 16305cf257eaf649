//! The `aps5` command line. Thin: parsing, printing and exit codes; the work lives in the crates.
//!
//! Exit status: 0 success, 1 usage error, 2 the build or its input failed; `aps5 cache verify`
//! also exits 3 when it found problems and repaired them all (2: some are left).

mod cli;
mod commands;
mod demo;
mod progress;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let usage_error = e.use_stderr();
            let _ = e.print();
            return if usage_error {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    init_logging(cli.verbose, cli.quiet);
    match commands::run(&cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn init_logging(verbose: u8, quiet: bool) {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("APS5_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("{level},salsa=warn")));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .with_target(false)
        .init();
}
