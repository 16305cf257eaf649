//! Builds the host PRX set (the cdylibs under `prx/`) with a nested cargo into this
//! crate's OUT_DIR, finishes them (trampoline renames, see `src/prxfix.rs`) and generates
//! `prx_set.rs`, which embeds them. So `cargo run -p aps5` / `cargo test` on a fresh
//! clone always have a PRX set that matches the sources. See docs/PRX.md.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "src/prxfix.rs"]
#[allow(dead_code)]
mod prxfix;

/// (cargo package, produced file, installed file name, libraries it serves)
const PRX: &[(&str, &str, &str, &[&str])] = &[
    (
        "aps5-prx-libkernel",
        "libaps5_prx_libkernel.so",
        "libkernel.prx",
        // libkernel.sprx exports the same functions under these library names too (a game may
        // import sceKernelIsProspero from libkernel_cpumode_platform, say); PS5 adds _sys/_web.
        &[
            "libkernel",
            "libScePosix",
            "libkernel_unity",
            "libkernel_avlfmem",
            "libkernel_cpumode",
            "libkernel_cpumode_platform",
            "libkernel_dmem_aliasing",
            "libkernel_exception",
            "libkernel_jvm",
            "libkernel_module_info",
            "libkernel_module_load_check",
            "libkernel_pre",
            "libkernel_psmkit",
            "libkernel_qadisc",
            "libkernel_sysc_se",
            "libkernel_sys",
            "libkernel_web",
        ],
    ),
    (
        "aps5-prx-libc",
        "libaps5_prx_libc.so",
        "libc.prx",
        &["libc", "libSceLibcInternal", "libc_setjmp"],
    ),
    (
        "aps5-prx-devices",
        "libaps5_prx_devices.so",
        "libSceDevices.prx",
        &[
            "libSceVideoOut",
            "libScePad",
            "libSceUserService",
            "libSceSystemService",
            "libSceSysmodule",
            "libSceAudioOut",
            "libSceKeyboard",
        ],
    ),
    (
        "aps5-prx-freetype",
        "libaps5_prx_freetype.so",
        "libSceFreeType.prx",
        &["libSceFreeType"],
    ),
    (
        "aps5-prx-net",
        "libaps5_prx_net.so",
        "libSceNet.prx",
        &["libSceNet", "libSceNetCtl"],
    ),
    (
        "aps5-prx-agc",
        "libaps5_prx_agc.so",
        "libSceAgc.prx",
        &["libSceAgc", "libSceAgcDriver"],
    ),
];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest.join("../..");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    println!("cargo:rerun-if-changed={}", root.join("prx").display());
    // The workspace crates the PRX set links (libSceAgc.prx holds the GPU driver, which uses
    // the translator and the cache's pack and records): a change there rebuilds the set too.
    for dep in [
        "drivers",
        "compiler/shader",
        "compiler/elf",
        "compiler/nid",
        "cache",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(dep).display());
    }
    println!(
        "cargo:rerun-if-changed={}",
        root.join("Cargo.lock").display()
    );
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=build.rs");
    println!(
        "cargo:rustc-env=APS5_RELINK_SOURCE_HASH={:016x}",
        source_hash(&manifest)
    );

    // One PRX build for every profile of the outer build: target/aps5-prx-set when OUT_DIR
    // has the usual target/<profile>/build/<pkg>/out shape, else inside OUT_DIR.
    let target = match out.ancestors().nth(2) {
        Some(build) if build.file_name().is_some_and(|n| n == "build") => build
            .parent()
            .and_then(Path::parent)
            .map(|t| t.join("aps5-prx-set"))
            .unwrap_or_else(|| out.join("prx-target")),
        _ => out.join("prx-target"),
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args(["build", "--release", "--locked", "--target-dir"])
        .arg(&target);
    for (pkg, ..) in PRX {
        cmd.args(["-p", pkg]);
    }
    // The outer build's settings are not the PRX set's: its own target dir, no clippy driver.
    for var in [
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_MAKEFLAGS",
        "MAKEFLAGS",
        "MFLAGS",
    ] {
        cmd.env_remove(var);
    }
    // The PRX files are shipped in every output tree and hashed by every build: no debug info
    // (std's alone is 4 MB per library); the dynamic symbols stay.
    cmd.env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_STRIP", "debuginfo");
    let status = cmd.status().expect("cannot run cargo to build the PRX set");
    if !status.success() {
        panic!("building the host PRX set (prx/) failed: see the cargo output above");
    }

    let mut files = String::new();
    let mut libs = String::new();
    for (i, (pkg, produced, installed, served)) in PRX.iter().enumerate() {
        let src = target.join("release").join(produced);
        let mut bytes = std::fs::read(&src)
            .unwrap_or_else(|e| panic!("{}: {e} (built by {pkg})", src.display()));
        prxfix::finalize(&mut bytes).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        let dst = out.join(installed);
        write_if_changed(&dst, &bytes);
        files.push_str(&format!(
            "    ({installed:?}, include_bytes!({:?})),\n",
            dst.display().to_string()
        ));
        for lib in *served {
            libs.push_str(&format!("    ({lib:?}, {i}),\n"));
        }
    }
    let code = format!(
        "/// (installed file name, bytes) of every host PRX.\npub(crate) static FILES: &[(&str, &[u8])] = &[\n{files}];\n\
         /// (library name, index into FILES).\npub(crate) static LIBRARIES: &[(&str, usize)] = &[\n{libs}];\n"
    );
    write_if_changed(&out.join("prx_set.rs"), code.as_bytes());
}

fn write_if_changed(p: &Path, bytes: &[u8]) {
    if std::fs::read(p).ok().as_deref() != Some(bytes) {
        std::fs::write(p, bytes).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    }
}

/// FNV-1a over this crate's sources (file names and bytes, sorted): part of
/// `aps5_relink::VERSION`, so caches keyed by it notice any change to the relinker.
fn source_hash(manifest: &Path) -> u64 {
    let mut files = vec![manifest.join("build.rs")];
    if let Ok(rd) = std::fs::read_dir(manifest.join("src")) {
        files.extend(rd.filter_map(|e| e.ok()).map(|e| e.path()));
    }
    files.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for f in files {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for b in name.bytes().chain(std::fs::read(&f).unwrap_or_default()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}
