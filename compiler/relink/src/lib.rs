//! aps5-relink: turns a PS4/PS5 executable (or bundled module) into an ordinary Linux
//! x86-64 ELF whose imports the system loader (`ld-linux`) binds, by NID, to the host PRX
//! set (`prx/`). The game's code and data keep their original addresses relative to the
//! load base; everything new goes after the last original segment. See docs/RELINK.md.
//!
//! ```text
//! original segments (unchanged bytes, same vaddrs) | R: phdrs, interp, dynsym, dynstr,
//! hash, rela, jmprel, messages | RW: dynamic, GOT slots | RX: stubs, entry
//! ```

mod amd;
mod cpu;
mod cxxabi;
pub mod image;
mod layout;
pub mod lower;
pub mod prxfix;
mod prxset;
pub mod reach;
mod scan;
mod stubs;
mod writer;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use amd::{AmdOnlyKind, AmdOnlySite};
pub use cpu::CpuFeatures;
pub use cxxabi::LIBSTDCXX;
pub use image::{OutputImage, Piece, PieceData};
pub use scan::{SYSCALL_TRAP, SyscallSite};

/// Identity of this relinker: crate version + a hash of its sources. A cache of relinked
/// outputs should include it (with the PRX set's bytes) in its keys.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "+",
    env!("APS5_RELINK_SOURCE_HASH")
);

/// One host library the relinked program may bind to: a host PRX (`libs/<file>`), or a
/// relinked guest module (`app0/sce_module/<file>`, see [`PrxLibrary::from_guest_module`]).
#[derive(Debug, Clone)]
pub struct PrxLibrary {
    /// The PS4/PS5 library name imports refer to (e.g. `libc`, `libScePosix`).
    pub library: String,
    /// File name the loader finds it under (e.g. `libc.prx`); several libraries may share one.
    pub file_name: String,
    /// The file itself.
    pub bytes: Arc<Vec<u8>>,
    /// NIDs it exports.
    pub exports: BTreeSet<String>,
    /// For a system library of the host (the C++ runtime, `libstdc++.so.6`): the host
    /// symbol each exported NID is imported as. Such a file is not shipped (not in
    /// [`PrxSet::files`]; `bytes` is empty). `None` for PRX files and guest modules, whose
    /// symbols are named by NID.
    pub host_names: Option<Arc<BTreeMap<String, String>>>,
}

impl PrxLibrary {
    /// The libraries a relinked guest module serves: every export library of `module`,
    /// with the NIDs it exports, found by the loader as `file_name` (the graph installs it
    /// under `app0/sce_module/`, which is on the executable's run path).
    pub fn from_guest_module(
        module: &aps5_elf::Module,
        file_name: &str,
        relinked: Arc<Vec<u8>>,
    ) -> Vec<PrxLibrary> {
        module
            .exports_by_library()
            .into_iter()
            .filter(|(lib, _)| !lib.is_empty() && !lib.starts_with('#'))
            .map(|(lib, syms)| PrxLibrary {
                library: lib,
                file_name: file_name.to_owned(),
                bytes: relinked.clone(),
                exports: syms.iter().filter_map(|s| s.nid.clone()).collect(),
                host_names: None,
            })
            .collect()
    }
}

/// The set of host libraries available to relinked programs.
#[derive(Debug, Clone, Default)]
pub struct PrxSet {
    /// Every library, in the order DT_NEEDED lists their files.
    pub libraries: Vec<PrxLibrary>,
}

impl PrxSet {
    /// The PRX set built from this checkout's `prx/` crates and embedded in this crate at
    /// build time (see docs/PRX.md), followed by the host C++ runtime (`libstdc++.so.6`)
    /// serving the C++ exception ABI of `libc`/`libSceLibcInternal`.
    pub fn installed() -> Result<PrxSet, RelinkError> {
        prxset::installed()
    }

    /// The library serving `library` that exports `nid`.
    pub fn find(&self, library: &str, nid: &str) -> Option<&PrxLibrary> {
        self.libraries
            .iter()
            .find(|l| l.library == library && l.exports.contains(nid))
    }

    /// The first library (in set order: libkernel, the C library, ..., then the host C++
    /// runtime) that exports `nid`: how a plain-name import, which names no library (a
    /// ps5-payload-sdk ELF's `printf` from `libSceLibcInternal.so`), is bound by its NID.
    pub fn find_nid(&self, nid: &str) -> Option<&PrxLibrary> {
        self.libraries.iter().find(|l| l.exports.contains(nid))
    }

    /// This set plus the export libraries of a game's other bundled modules, given as
    /// (file name, parsed module): the set to relink one bundled module against, so that
    /// its imports from a sibling bind to that sibling (a `DT_NEEDED` on the sibling's
    /// relinked file, which the loader finds next to it, `app0/sce_module/`). The entries
    /// carry no bytes (the siblings are relinked separately); leave the module being
    /// relinked out of `siblings`.
    pub fn with_guest_modules<'a>(
        &self,
        siblings: impl IntoIterator<Item = (&'a str, &'a aps5_elf::Module)>,
    ) -> PrxSet {
        let mut set = self.clone();
        let none = Arc::new(Vec::new());
        for (file_name, module) in siblings {
            set.libraries.extend(PrxLibrary::from_guest_module(
                module,
                file_name,
                none.clone(),
            ));
        }
        set
    }

    /// Distinct files (name, bytes), in order: what goes into the output's `libs/` (host
    /// system libraries such as [`LIBSTDCXX`], and guest modules added without bytes by
    /// [`PrxSet::with_guest_modules`], are not included).
    pub fn files(&self) -> Vec<(&str, &Arc<Vec<u8>>)> {
        let mut seen = BTreeSet::new();
        self.libraries
            .iter()
            .filter(|l| {
                l.host_names.is_none() && !l.bytes.is_empty() && seen.insert(l.file_name.as_str())
            })
            .map(|l| (l.file_name.as_str(), &l.bytes))
            .collect()
    }
}

/// Relinker options.
#[derive(Debug, Clone, Default)]
pub struct RelinkOptions {
    /// Copy raw `syscall` / `int 0x80` / `sysenter` instructions verbatim (they would call
    /// the Linux kernel with FreeBSD numbers). Without it each one in reachable code
    /// ([`reach`]) is rewritten to the trap libkernel services ([`SYSCALL_TRAP`]); byte
    /// patterns outside reachable code are left alone and listed in the warnings.
    pub allow_syscalls: bool,
    /// The folder of the output tree (relative to its root, `/`-separated) a relinked module
    /// is installed in; `None`: `app0/sce_module`. The executable is always at the root.
    pub output_dir: Option<String>,
    /// The folders of the output tree holding relinked guest modules, searched in this order
    /// after `libs/` for `DT_NEEDED` files; empty: `app0/sce_module` alone.
    pub module_dirs: Vec<String>,
    /// The CPU the port is built for (issue 14, `[build] target_cpu`): each AMD-only
    /// instruction in reachable code it lacks is lowered ([`lower`]) where the site is long
    /// enough for a jump. `None`: nothing is lowered (the sites are only listed).
    pub target_cpu: Option<CpuFeatures>,
}

impl RelinkOptions {
    /// The `DT_RUNPATH` of the relinked file: `libs/` and every module folder, reached from
    /// the file's own folder through `$ORIGIN`.
    pub fn run_path(&self, is_module: bool) -> String {
        let (own, up) = self.own_dir(is_module);
        let default = [DEFAULT_MODULE_DIR.to_string()];
        let dirs = if self.module_dirs.is_empty() {
            &default[..]
        } else {
            &self.module_dirs[..]
        };
        let mut parts = vec![self.libs_dir(is_module)];
        for d in dirs {
            let d = d.trim_matches('/');
            parts.push(if d == own {
                "$ORIGIN".to_string()
            } else {
                format!("$ORIGIN/{up}{d}")
            });
        }
        parts.join(":")
    }
}

impl RelinkOptions {
    /// The folder of the relinked file in the output tree, and the `../` that lead from it
    /// to the root.
    fn own_dir(&self, is_module: bool) -> (&str, String) {
        let own = if is_module {
            self.output_dir.as_deref().unwrap_or(DEFAULT_MODULE_DIR)
        } else {
            ""
        };
        (
            own,
            "../".repeat(own.split('/').filter(|c| !c.is_empty()).count()),
        )
    }

    /// The output tree's `libs/` (the PRX files), reached from the relinked file's own
    /// folder through `$ORIGIN`.
    pub fn libs_dir(&self, is_module: bool) -> String {
        format!("$ORIGIN/{}libs", self.own_dir(is_module).1)
    }

    /// The `DT_NEEDED` string for `file`: a PRX file of the set by its path in `libs/`
    /// (`$ORIGIN/libs/libc.prx`), which the loader opens directly; a run-path search
    /// first probes a dozen `glibc-hwcaps`/`tls`/platform subfolders of the folder with a
    /// failed openat and stat each, at every program's start-up. Anything else (a guest
    /// module, a host library) by its name, found through the run path or the system.
    pub fn needed_entry(&self, file: &str, is_module: bool) -> String {
        if prxset::is_host_file(file) {
            format!("{}/{file}", self.libs_dir(is_module))
        } else {
            file.to_owned()
        }
    }
}

/// Where relinked modules go when [`RelinkOptions::output_dir`] is not set.
const DEFAULT_MODULE_DIR: &str = "app0/sce_module";

/// One import of the program and how it was bound.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoverageRow {
    /// Library the program imports it from (`#<id>` if the id matches no library).
    pub library: String,
    /// The NID.
    pub nid: String,
    /// Readable name from the NID database, if known.
    pub name: Option<String>,
    /// Bound to a host implementation (else to a stub that reports it and aborts).
    pub implemented: bool,
    /// The file providing it, when implemented.
    pub file: Option<String>,
    /// A weak import nothing implements: left undefined, so the loader resolves it to 0 (as
    /// the console's loader does) instead of binding it to a stub.
    #[serde(default)]
    pub weak: bool,
}

/// A relinked executable or module.
#[derive(Debug, Clone)]
pub struct Relinked {
    /// The Linux ELF.
    pub elf: Vec<u8>,
    /// Every import (sorted by library, then name).
    pub coverage: Vec<CoverageRow>,
    /// DT_NEEDED files, in order.
    pub libs_needed: Vec<String>,
    /// Things that did not stop the relink but may misbehave at run time.
    pub warnings: Vec<String>,
    /// Instructions only AMD CPUs have, in reachable code (addresses as in the input), in
    /// address order.
    pub amd_only: Vec<AmdOnlySite>,
}

/// A relinked executable or module as an [`OutputImage`] of its input: what the build writes
/// and stores without first making the whole file in memory.
#[derive(Debug, Clone)]
pub struct RelinkedImage {
    /// The Linux ELF, as pieces of the input and new bytes.
    pub image: OutputImage,
    /// As in [`Relinked`].
    pub coverage: Vec<CoverageRow>,
    pub libs_needed: Vec<String>,
    pub warnings: Vec<String>,
    pub amd_only: Vec<AmdOnlySite>,
}

impl RelinkedImage {
    /// The same result with the ELF in one buffer; `input` is the file that was relinked.
    pub fn into_relinked(self, input: &[u8]) -> Relinked {
        Relinked {
            elf: self.image.to_vec(input),
            coverage: self.coverage,
            libs_needed: self.libs_needed,
            warnings: self.warnings,
            amd_only: self.amd_only,
        }
    }
}

/// Why a relink failed.
#[derive(Debug, thiserror::Error)]
pub enum RelinkError {
    /// The input could not be read.
    #[error("cannot read the input: {0}")]
    Parse(#[from] aps5_elf::Error),
    /// The segment layout cannot be reproduced.
    #[error("layout: {0}")]
    Layout(String),
    /// A relocation the relinker does not handle.
    #[error("relocation at {offset:#x} ({type_name}): {why}")]
    Relocation {
        /// `r_offset`.
        offset: u64,
        /// Type name.
        type_name: &'static str,
        /// What is wrong.
        why: String,
    },
    /// Wrong kind of input for the call.
    #[error("{0}")]
    Kind(String),
    /// The PRX set is unusable.
    #[error("PRX set: {0}")]
    Prx(String),
    /// The x86 encoder rejected generated code (a bug).
    #[error("code generation: {0}")]
    Encode(String),
}

/// Relinks a main executable (`eboot.bin`) into a position-independent Linux executable.
pub fn relink_executable(
    bytes: &[u8],
    module: &aps5_elf::Module,
    prx: &PrxSet,
    opts: &RelinkOptions,
) -> Result<Relinked, RelinkError> {
    relink_executable_image(bytes, module, prx, opts).map(|r| r.into_relinked(bytes))
}

/// [`relink_executable`], the ELF as pieces of `bytes` (see [`OutputImage`]).
pub fn relink_executable_image(
    bytes: &[u8],
    module: &aps5_elf::Module,
    prx: &PrxSet,
    opts: &RelinkOptions,
) -> Result<RelinkedImage, RelinkError> {
    if module.elf_type == 0xFE18 {
        return Err(RelinkError::Kind(
            "this is a module (ET_SCE_DYNAMIC); use relink_module".into(),
        ));
    }
    layout::relink(bytes, module, prx, opts, layout::Kind::Executable)
}

/// Relinks a bundled module (`sce_module/*.prx`) into a Linux shared object whose exports
/// are named by NID (plain names such as `module_start` stay as they are).
pub fn relink_module(
    bytes: &[u8],
    module: &aps5_elf::Module,
    prx: &PrxSet,
    opts: &RelinkOptions,
) -> Result<Relinked, RelinkError> {
    layout::relink(bytes, module, prx, opts, layout::Kind::Module).map(|r| r.into_relinked(bytes))
}

/// Renders a coverage table (one import per line; implemented ones first).
pub fn coverage_table(rows: &[CoverageRow]) -> String {
    let mut out = String::new();
    let done = rows.iter().filter(|r| r.implemented).count();
    let weak = rows.iter().filter(|r| r.weak).count();
    out.push_str(&format!(
        "imports: {} implemented, {} stubbed, {} weak and unresolved (0)\n",
        done,
        rows.len() - done - weak,
        weak
    ));
    let mut sorted: Vec<&CoverageRow> = rows.iter().collect();
    sorted.sort_by_key(|r| {
        (
            !r.implemented,
            r.library.clone(),
            r.name.clone(),
            r.nid.clone(),
        )
    });
    for r in sorted {
        out.push_str(&format!(
            "{:<5} {:<24} {:<11} {}\n",
            match (r.implemented, r.weak) {
                (true, _) => "ok",
                (false, true) => "WEAK",
                (false, false) => "STUB",
            },
            r.library,
            r.nid,
            r.name.as_deref().unwrap_or("?")
        ));
    }
    out
}

/// The command that runs a built output tree: `out_dir/app.elf` with the guest mounts
/// mapped by environment variables read by libkernel.prx: `APS5_APP0` (the output's
/// `app0/`) and `APS5_DATA` (`data_dir`, holding `savedata0/`, `temp0/`, `download0/`).
pub fn run_command(out_dir: &Path, data_dir: &Path, args: &[String]) -> std::process::Command {
    use std::os::unix::process::CommandExt;
    let mut c = std::process::Command::new(out_dir.join("app.elf"));
    // The program sees argv[0] = /app0/eboot.bin, as on the console.
    c.arg0("/app0/eboot.bin")
        .args(args)
        .env("APS5_APP0", out_dir.join("app0"))
        .env("APS5_DATA", data_dir);
    c
}
