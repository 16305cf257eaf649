//! The payload layout: a fixture built the way the ps5-payload-sdk builds a PS5 payload.
//!
//! The result is the ELF lld writes, unchanged (no Sony writer, no fSELF): `ET_DYN` with
//! `EI_OSABI` 0, the segments of `crt/payload.ld` (the SDK's linker-script facts), plain-name
//! imports from `DT_NEEDED` libraries named as the SDK's stub libraries are
//! (`libkernel_sys.so`, `libSceLibcInternal.so`, `libSceNet.so`, ...), a `DT_GNU_HASH` table
//! and no `DT_HASH`. The stub libraries are made here from `libraries.tsv` (one shared object
//! per library, each symbol a function or an 8-byte object) and linked with `--as-needed`,
//! so only the libraries a program uses are needed. The dump is a folder holding the one
//! `<name>.elf`, as payloads are shared, and the fixture's `app0/` files.

use anyhow::{Context, Result, bail, ensure};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::libraries::{self, SymbolKind};
use crate::toolchain::{self, Tool, find_tool};
use crate::{Project, sdk_dir};

/// Symbols `crt/payload.ld` defines.
const SCRIPT_SYMBOLS: &[&str] = &[
    "__image_start",
    "__text_start",
    "__text_end",
    "__init_array_start",
    "__init_array_end",
    "__fini_array_start",
    "__fini_array_end",
    "__bss_start",
    "__bss_end",
    "_DYNAMIC",
];

/// The clang target of payload objects.
const PAYLOAD_TARGET: &str = "--target=x86_64-unknown-none-elf";

/// The payload SDK's stub library (`DT_NEEDED` name) serving a module of `libraries.tsv`:
/// the C library is `libSceLibcInternal.so`, the kernel `libkernel_sys.so`, the rest keep
/// their module name.
pub fn needed_name(module: &str) -> String {
    match module {
        "libc" | "libSceLibcInternal" => "libSceLibcInternal.so".into(),
        "libkernel" => "libkernel_sys.so".into(),
        other => format!("{other}.so"),
    }
}

/// Builds SRC (a .c file, or a folder with `*.c` / `eboot/*.c`; no modules, no shaders) into
/// OUT/`<name>.elf`, a PS5 payload ELF. Returns the ELF's path. OUT is created if needed.
pub fn build_payload(src: &Path, out: &Path) -> Result<PathBuf> {
    let work = tempfile::Builder::new()
        .prefix("aps5-sdk-payload-")
        .tempdir()
        .context("cannot create a temporary build folder")?;
    build_payload_in(src, out, work.path())
}

/// [`build_payload`], keeping intermediate files (objects, stub libraries) in WORK.
pub fn build_payload_in(src: &Path, out: &Path, work: &Path) -> Result<PathBuf> {
    let project = Project::load(src)?;
    ensure!(
        project.modules.is_empty(),
        "{}: a payload is one ELF; modules/ cannot be built in the payload layout",
        src.display()
    );
    ensure!(
        project.shaders.is_empty(),
        "{}: shaders/ are not supported in the payload layout",
        src.display()
    );
    if let Some(p) = project.eboot.iter().find(|p| crate::is_cxx(p)) {
        bail!(
            "{}: C++ is not supported in the payload layout",
            p.display()
        );
    }
    let clang = find_tool(Tool::Clang)?;
    let lld = find_tool(Tool::Lld)?;
    let table = libraries::table()?;
    fs::create_dir_all(work)
        .with_context(|| format!("cannot create the work folder {}", work.display()))?;
    let work = &fs::canonicalize(work)?;
    let sdk = sdk_dir();

    // The SDK's clang targets x86_64-sie-ps5 (no such triple in clang-14), whose objects
    // are SysV (EI_OSABI 0), with -fno-plt (imports through GLOB_DAT slots), emulated TLS
    // and no stack protector. An OS-less x86-64 target gives the same objects here.
    let mut flags: Vec<String> = crate::compile_flags(&crate::DumpOptions { ps4: false }, &project)
        .into_iter()
        .map(|f| {
            if f.starts_with("--target=") {
                PAYLOAD_TARGET.to_owned()
            } else {
                f
            }
        })
        .collect();
    flags.extend(
        [
            "-fno-plt",
            "-femulated-tls",
            "-fno-stack-protector",
            "-DAPS5_PAYLOAD",
        ]
        .map(String::from),
    );
    let compile = |source: &Path, obj: &Path, cwd: &Path| -> Result<()> {
        let mut args: Vec<std::ffi::OsString> = flags.iter().map(Into::into).collect();
        args.extend(["-c".into(), source.into(), "-o".into(), obj.into()]);
        let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        toolchain::run(&clang, &refs, cwd)
    };
    let mut objects = Vec::new();
    for (i, s) in project.eboot.iter().enumerate() {
        let stem = s.file_stem().unwrap_or_default().to_string_lossy();
        let obj = work.join(format!("{i:02}-{stem}.o"));
        compile(s, &obj, &project.root)?;
        objects.push(obj);
    }
    let crt = work.join("crt_payload.o");
    compile(&sdk.join("crt").join("crt_payload.c"), &crt, &sdk)?;
    objects.push(crt);

    // Names the program needs that no stub library has: a clear error, as for the other layouts.
    // A weak reference nothing defines is fine: the linker makes it NULL, as the console does.
    let undefined = crate::undefined_symbols(&objects)?;
    let weak = crate::weak_undefined_symbols(&objects)?;
    if let Some(name) = undefined.iter().find(|n| {
        !table.contains_key(*n) && !SCRIPT_SYMBOLS.contains(&n.as_str()) && !weak.contains(*n)
    }) {
        bail!(
            "undefined symbol `{name}`: tests/sdk/libraries.tsv does not list it (add a row: name, kind, library, module)"
        );
    }

    // One stub shared object per library, kernel and C library first (the SDK's order).
    let mut by_lib: BTreeMap<String, Vec<(&str, SymbolKind)>> = BTreeMap::new();
    for e in table.values() {
        by_lib
            .entry(needed_name(&e.module))
            .or_default()
            .push((e.name.as_str(), e.kind));
    }
    let mut order: Vec<&String> = by_lib.keys().collect();
    order.sort_by_key(|n| match n.as_str() {
        "libkernel_sys.so" => 0,
        "libSceLibcInternal.so" => 1,
        _ => 2,
    });
    let stubs = work.join("stubs");
    fs::create_dir_all(&stubs)?;
    let mut stub_files = Vec::new();
    for lib in order {
        let mut asm =
            String::from("# Generated stub library (aps5 fixture SDK, payload layout).\n");
        for (name, kind) in &by_lib[lib] {
            match kind {
                SymbolKind::Func => asm.push_str(&format!(
                    ".text\n.globl {name}\n.type {name},@function\n{name}:\n  ret\n"
                )),
                SymbolKind::Data => asm.push_str(&format!(
                    ".data\n.globl {name}\n.type {name},@object\n.size {name}, 8\n{name}:\n  .quad 0\n"
                )),
            }
        }
        let stem = lib.trim_end_matches(".so");
        let s = stubs.join(format!("{stem}.s"));
        let o = stubs.join(format!("{stem}.o"));
        let so = stubs.join(lib);
        fs::write(&s, asm)?;
        toolchain::run(
            &clang,
            &[
                PAYLOAD_TARGET.as_ref(),
                "-c".as_ref(),
                s.as_os_str(),
                "-o".as_ref(),
                o.as_os_str(),
            ],
            work,
        )?;
        toolchain::run(
            &lld,
            &[
                "-m".as_ref(),
                "elf_x86_64".as_ref(),
                "-shared".as_ref(),
                "-soname".as_ref(),
                lib.as_ref(),
                "-o".as_ref(),
                so.as_os_str(),
                o.as_os_str(),
            ],
            work,
        )?;
        stub_files.push(so);
    }

    fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let elf = out.join(format!("{}.elf", project.name));
    let script = sdk.join("crt").join("payload.ld");
    let mut args: Vec<std::ffi::OsString> = vec![
        "-m".into(),
        "elf_x86_64".into(),
        "-pie".into(),
        "-T".into(),
        script.into(),
        "-e".into(),
        "_start".into(),
        "-z".into(),
        "noexecstack".into(),
        // A weak reference nothing defines stays a dynamic (weak) import, which the loader
        // makes NULL; resolved at link time it would read as the load base in a PIE.
        "-z".into(),
        "dynamic-undefined-weak".into(),
        "--build-id=none".into(),
        "--hash-style=gnu".into(),
        // Its own symbols are in the dynamic table too (the SDK's dlsym(RTLD_DEFAULT) finds them).
        "--export-dynamic".into(),
        "-o".into(),
        elf.clone().into(),
    ];
    args.extend(objects.iter().map(Into::into));
    args.push("--as-needed".into());
    args.extend(stub_files.iter().map(Into::into));
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    toolchain::run(&lld, &refs, work)?;
    // The program's files sit next to it (they become /app0).
    if let Some(app0) = &project.app0 {
        crate::copy_tree(app0, out)?;
    }
    Ok(elf)
}
