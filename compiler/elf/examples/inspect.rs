//! Prints the inspect report of a file: `cargo run -p aps5-elf --example inspect -- FILE [--json]`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.iter().find(|a| !a.starts_with("--")) else {
        eprintln!("usage: inspect FILE [--json]");
        return ExitCode::FAILURE;
    };
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    match aps5_elf::parse(&data) {
        Ok(m) if args.iter().any(|a| a == "--json") => {
            println!("{:#}", aps5_elf::inspect::json(&m));
            ExitCode::SUCCESS
        }
        Ok(m) => {
            print!("{}", aps5_elf::inspect::text(&m));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {path}: {e}");
            ExitCode::FAILURE
        }
    }
}
