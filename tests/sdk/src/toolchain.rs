//! Finding and running the LLVM 14 tools.

use anyhow::{Context, Result, bail};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// An external tool the SDK runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// `clang-14`.
    Clang,
    /// `clang++-14` (C++ sources).
    Clangxx,
    /// `ld.lld-14`.
    Lld,
    /// `llvm-mc-14`.
    LlvmMc,
    /// `llvm-nm-14`.
    LlvmNm,
    /// `llvm-readelf-14`.
    LlvmReadelf,
    /// `llvm-objdump-14` (tests: which calls a build kept).
    LlvmObjdump,
    /// `llc-14` (GPU shaders from LLVM IR).
    Llc,
}

impl Tool {
    /// The program name looked up on PATH.
    pub fn program(self) -> &'static str {
        match self {
            Tool::Clang => "clang-14",
            Tool::Clangxx => "clang++-14",
            Tool::Lld => "ld.lld-14",
            Tool::LlvmMc => "llvm-mc-14",
            Tool::LlvmNm => "llvm-nm-14",
            Tool::LlvmReadelf => "llvm-readelf-14",
            Tool::LlvmObjdump => "llvm-objdump-14",
            Tool::Llc => "llc-14",
        }
    }
    /// The Debian package that installs it.
    pub fn package(self) -> &'static str {
        match self {
            Tool::Clang | Tool::Clangxx => "clang-14",
            Tool::Lld => "lld-14",
            Tool::LlvmMc | Tool::LlvmNm | Tool::LlvmReadelf | Tool::LlvmObjdump | Tool::Llc => {
                "llvm-14"
            }
        }
    }
}

/// Finds TOOL on PATH, or explains which Debian package to install.
pub fn find_tool(tool: Tool) -> Result<PathBuf> {
    find_tool_on(tool, std::env::var_os("PATH").as_deref())
}

/// Finds TOOL in the folders of a PATH-style list.
pub fn find_tool_on(tool: Tool, path: Option<&OsStr>) -> Result<PathBuf> {
    let name = tool.program();
    if let Some(paths) = path {
        for dir in std::env::split_paths(paths) {
            let p = dir.join(name);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    bail!(
        "{name} is not installed (not found on PATH): install the Debian package `{}` \
         (apt-get install {})",
        tool.package(),
        tool.package()
    )
}

/// Runs a tool in CWD; a failure reports the command and its output.
pub fn run(program: &Path, args: &[&OsStr], cwd: &Path) -> Result<()> {
    let out = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env("LC_ALL", "C")
        .output()
        .with_context(|| format!("cannot run {}", program.display()))?;
    if !out.status.success() {
        bail!(
            "{} failed ({}):\n  {} {}\n{}{}",
            program.file_name().unwrap_or_default().to_string_lossy(),
            out.status,
            program.display(),
            args.iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// Runs a tool and returns its standard output.
pub fn output(program: &Path, args: &[&OsStr]) -> Result<String> {
    let out = Command::new(program)
        .args(args)
        .env("LC_ALL", "C")
        .output()
        .with_context(|| format!("cannot run {}", program.display()))?;
    if !out.status.success() {
        bail!(
            "{} failed ({}): {}",
            program.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
