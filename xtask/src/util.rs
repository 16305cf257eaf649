//! Small helpers shared by the xtask commands.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (xtask lives one level below it).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The cargo that runs us.
pub fn cargo_bin() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Runs `cargo ARGS` in the workspace root with `env` added; true when it succeeded.
pub fn cargo(args: &[&str], env: &[(&str, &str)]) -> anyhow::Result<bool> {
    let status = Command::new(cargo_bin())
        .args(args)
        .envs(env.iter().copied())
        .current_dir(root())
        .status()?;
    Ok(status.success())
}
