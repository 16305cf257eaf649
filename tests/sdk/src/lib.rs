//! aps5-sdk: the fixture SDK. It builds PS5-format (or, with `ps4`, PS4-format) test dumps from C
#![warn(missing_docs)]
//! sources and RDNA2 assembly with real compilers (clang-14, ld.lld-14, llvm-mc-14), then turns
//! the linked ELF into a Sony module with its own writer ([`sce`]) and wraps it as an fSELF
//! ([`fself`]). See `docs/SDK.md` for the source layout and the file layout it produces.

pub mod fself;
pub mod gpu;
pub mod libraries;
pub mod linked;
pub mod payload;
pub mod sce;
mod toolchain;

use anyhow::{Context, Result, bail, ensure};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

pub use libraries::{LibraryEntry, SymbolKind};
pub use payload::{build_payload, build_payload_in};
pub use sce::{EmittedSymbol, Layout};
pub use toolchain::{Tool, find_tool, find_tool_on};

/// Options of [`build_dump`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DumpOptions {
    /// Write the PS4 layout (ABI 0, DYNLIBDATA, PS4 fSELF magic) instead of the PS5 one.
    pub ps4: bool,
}

/// One module the SDK wrote.
#[derive(Debug, Clone)]
pub struct BuiltModule {
    /// Path inside the dump, e.g. `eboot.bin` or `sce_module/mathlib.prx`.
    pub dump_path: String,
    /// The object files that were linked into it (in the work folder): fixture sources, then
    /// generated code, then the SDK entry stub.
    pub objects: Vec<PathBuf>,
    /// Every symbol of its symbol table (imports, exports, plain entry points).
    pub symbols: Vec<EmittedSymbol>,
}

/// What [`build_dump_in`] produced.
#[derive(Debug, Clone)]
pub struct DumpReport {
    /// The eboot first, then modules by name.
    pub modules: Vec<BuiltModule>,
}

/// Builds SRC (a .c file or a folder) into a dump folder OUT. Needs clang-14, ld.lld-14,
/// llvm-mc-14; fails with a clear message naming the missing tool and the Debian package to
/// install. OUT is created, or replaced if it already holds a dump.
pub fn build_dump(src: &Path, out: &Path, opts: &DumpOptions) -> anyhow::Result<()> {
    let work = tempfile::Builder::new()
        .prefix("aps5-sdk-")
        .tempdir()
        .context("cannot create a temporary build folder")?;
    build_dump_in(src, out, opts, work.path()).map(|_| ())
}

/// The fixtures folder of the repository (`tests/fixtures`).
pub fn fixtures_dir() -> PathBuf {
    let sdk = sdk_dir();
    sdk.parent().unwrap_or(&sdk).join("fixtures")
}

/// Programs only a payload can be (they use the payload start files' `payload_get_args`):
/// `tests/sdk/payloads`, laid out like the fixtures.
pub fn payloads_dir() -> PathBuf {
    sdk_dir().join("payloads")
}

/// The SDK's own folder (`tests/sdk`): headers in `include/`, entry stubs in `crt/`.
pub fn sdk_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A source tree in the layout [`build_dump`] reads.
#[derive(Debug, Clone)]
pub struct Project {
    /// The folder all source paths are relative to.
    pub root: PathBuf,
    /// Name used to derive the title id (folder name or file stem).
    pub name: String,
    /// Eboot sources (relative to `root`), sorted.
    pub eboot: Vec<PathBuf>,
    /// Module name -> its sources (relative to `root`), sorted.
    pub modules: BTreeMap<String, Vec<PathBuf>>,
    /// RDNA2 assembly files (relative to `root`), sorted.
    pub shaders: Vec<PathBuf>,
    /// `app0/` folder, copied into the dump root.
    pub app0: Option<PathBuf>,
    /// `param.json`, copied to `sce_sys/param.json`.
    pub param_json: Option<PathBuf>,
    /// Extra compiler flags from the optional `cflags` file (one per line).
    pub cflags: Vec<String>,
}

/// Extensions of the sources a program or module is compiled from (C and C++).
const SOURCE_EXTS: &[&str] = &["c", "cpp"];

/// Whether P is a C++ source (compiled with clang++-14, see [`build_dump_in`]).
pub fn is_cxx(p: &Path) -> bool {
    p.extension().is_some_and(|x| x == "cpp")
}

fn sorted_files(dir: &Path, exts: &[&str]) -> Result<Vec<PathBuf>> {
    let mut v = Vec::new();
    for e in fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let p = e?.path();
        if p.is_file() && p.extension().is_some_and(|x| exts.iter().any(|e| x == *e)) {
            v.push(p);
        }
    }
    v.sort();
    Ok(v)
}

fn relative(root: &Path, p: &Path) -> PathBuf {
    p.strip_prefix(root).unwrap_or(p).to_path_buf()
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
}

impl Project {
    /// Reads the layout of SRC: a single `.c` file, or a folder with `eboot/*.c` (or `*.c`),
    /// `modules/NAME/*.c`, `shaders/*.s`, `app0/`, `param.json` and `cflags`.
    pub fn load(src: &Path) -> Result<Project> {
        let meta =
            fs::metadata(src).with_context(|| format!("source {} not found", src.display()))?;
        if meta.is_file() {
            ensure!(
                src.extension()
                    .is_some_and(|e| SOURCE_EXTS.iter().any(|x| e == *x)),
                "{}: a single source must be a .cpp or .c file",
                src.display()
            );
            let root = src
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from("."));
            let root = if root.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                root
            };
            let name = src
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            return Ok(Project {
                eboot: vec![PathBuf::from(src.file_name().unwrap_or_default())],
                root,
                name,
                modules: BTreeMap::new(),
                shaders: Vec::new(),
                app0: None,
                param_json: None,
                cflags: Vec::new(),
            });
        }
        let root = src.to_path_buf();
        let name = fs::canonicalize(src)
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "app".into());
        let eboot_dir = root.join("eboot");
        let eboot_files = if eboot_dir.is_dir() {
            sorted_files(&eboot_dir, SOURCE_EXTS)?
        } else {
            sorted_files(&root, SOURCE_EXTS)?
        };
        ensure!(
            !eboot_files.is_empty(),
            "{}: no eboot sources (expected eboot/*.c, *.c or .cpp)",
            src.display()
        );
        let mut modules = BTreeMap::new();
        let mdir = root.join("modules");
        if mdir.is_dir() {
            let mut names = Vec::new();
            for e in fs::read_dir(&mdir)? {
                let p = e?.path();
                if p.is_dir() {
                    names.push(p);
                }
            }
            names.sort();
            for p in names {
                let n = p
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                ensure!(
                    valid_name(&n),
                    "{}: module names may use letters, digits, '_' and '-'",
                    p.display()
                );
                let files = sorted_files(&p, SOURCE_EXTS)?;
                ensure!(
                    !files.is_empty(),
                    "{}: module has no .c or .cpp files",
                    p.display()
                );
                modules.insert(n, files.iter().map(|f| relative(&root, f)).collect());
            }
        }
        let shaders = if root.join("shaders").is_dir() {
            sorted_files(&root.join("shaders"), &["s", "ll"])?
                .iter()
                .map(|f| relative(&root, f))
                .collect()
        } else {
            Vec::new()
        };
        let cflags = match fs::read_to_string(root.join("cflags")) {
            Ok(t) => t
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(String::from)
                .collect(),
            Err(_) => Vec::new(),
        };
        Ok(Project {
            eboot: eboot_files.iter().map(|f| relative(&root, f)).collect(),
            modules,
            shaders,
            app0: Some(root.join("app0")).filter(|p| p.is_dir()),
            param_json: Some(root.join("param.json")).filter(|p| p.is_file()),
            cflags,
            root,
            name,
        })
    }
}

/// A title id like `APS500001`, derived from the project name (FNV-1a, 5 decimal digits).
pub fn title_id(name: &str) -> String {
    let mut h: u32 = 0x811C_9DC5;
    for b in name.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("APS5{:05}", h % 100_000)
}

/// The `sce_sys/param.json` written when the source has none.
pub fn default_param_json(name: &str) -> String {
    let id = title_id(name);
    let v = serde_json::json!({
        "applicationCategoryType": 0,
        "contentId": format!("IV0000-{id}_00-APS5FIXTURE00000"),
        "contentVersion": "01.000.000",
        "localizedParameters": {
            "defaultLanguage": "en-US",
            "en-US": { "titleName": name }
        },
        "masterVersion": "01.00",
        "requiredSystemSoftwareVersion": "0x0000000000000000",
        "titleId": id,
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}

/// The C source that makes each `shaders/*.s` available to the program:
/// `aps5_shader_NAME[]` (the `.text` bytes, 256-byte aligned) and `aps5_shader_NAME_size`;
/// and each `shaders/*.ll` (a GPU program, [`gpu`]): `aps5_shader_NAME[]` = its PS5 shader
/// header followed by its code at `aps5_shader_NAME_code_offset` (writable: sceAgcCreateShader
/// rebases the header in place).
pub fn shader_c_source(project: &Project, work: &Path) -> Result<Option<String>> {
    if project.shaders.is_empty() {
        return Ok(None);
    }
    let dir = work.join("shaders");
    fs::create_dir_all(&dir)?;
    let mut c = String::from(
        "/* Generated by aps5-sdk from shaders/*.s (llvm-mc -mcpu=gfx1030) and shaders/*.ll \
         (llc -mcpu=gfx1030). */\n",
    );
    for s in &project.shaders {
        let stem = s
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let ident: String = stem
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        if s.extension().is_some_and(|e| e == "ll") {
            let text = fs::read_to_string(project.root.join(s))
                .with_context(|| format!("cannot read {}", s.display()))?;
            match gpu::stage_of(&text, s)? {
                gpu::Stage::Compute => {}
                gpu::Stage::Vertex => {
                    let shader = gpu::compile_graphics(s, &dir, &project.root)?;
                    c.push_str(&gpu::c_vertex(&ident, &shader));
                    continue;
                }
                gpu::Stage::Pixel => {
                    let shader = gpu::compile_graphics(s, &dir, &project.root)?;
                    let (blob, code_offset) = gpu::wrap_pixel_in_header(&shader)
                        .with_context(|| format!("{}: shader header", s.display()))?;
                    c.push_str(&gpu::c_array(&ident, &blob, code_offset));
                    continue;
                }
            }
            let shader = gpu::compile_compute(s, &dir, &project.root)?;
            let (blob, code_offset) = gpu::wrap_in_header(&shader)
                .with_context(|| format!("{}: shader header", s.display()))?;
            c.push_str(&gpu::c_array(&ident, &blob, code_offset));
            continue;
        }
        let mc = find_tool(Tool::LlvmMc)?;
        let obj = dir.join(format!("{ident}.o"));
        toolchain::run(
            &mc,
            &[
                "-triple=amdgcn".as_ref(),
                "-mcpu=gfx1030".as_ref(),
                "-filetype=obj".as_ref(),
                s.as_os_str(),
                "-o".as_ref(),
                obj.as_os_str(),
            ],
            &project.root,
        )?;
        let bytes = fs::read(&obj)?;
        let text = section_bytes(&bytes, ".text")
            .with_context(|| format!("{}: assembled object has no .text", s.display()))?;
        c.push_str(&format!(
            "__attribute__((aligned(256))) const unsigned char aps5_shader_{ident}[{}] = {{",
            text.len().max(1)
        ));
        for (i, b) in text.iter().enumerate() {
            if i % 16 == 0 {
                c.push_str("\n ");
            }
            c.push_str(&format!(" 0x{b:02x},"));
        }
        c.push_str(&format!(
            "\n}};\nconst unsigned long aps5_shader_{ident}_size = {};\n",
            text.len()
        ));
    }
    Ok(Some(c))
}

/// The bytes of a named section of an ELF64 relocatable object.
pub(crate) fn section_bytes(b: &[u8], name: &str) -> Option<Vec<u8>> {
    let u16_at = |o: usize| Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?));
    let shoff = u64_at(0x28)? as usize;
    let shnum = usize::from(u16_at(0x3C)?);
    let shstr = usize::from(u16_at(0x3E)?);
    let stroff = u64_at(shoff + shstr * 64 + 24)? as usize;
    for i in 0..shnum {
        let s = shoff + i * 64;
        let n = stroff + u32_at(s)? as usize;
        let end = n + b.get(n..)?.iter().position(|&c| c == 0)?;
        if &b[n..end] == name.as_bytes() {
            let off = u64_at(s + 24)? as usize;
            let size = u64_at(s + 32)? as usize;
            return Some(b.get(off..off + size)?.to_vec());
        }
    }
    None
}

fn compile_flags(opts: &DumpOptions, project: &Project) -> Vec<String> {
    let sdk = sdk_dir();
    let mut f: Vec<String> = vec![
        "--target=x86_64-pc-freebsd12-elf".into(),
        // The consoles' CPUs: Jaguar (PS4), Zen 2 (PS5).
        if opts.ps4 {
            "-march=btver2".into()
        } else {
            "-march=znver2".into()
        },
        "-fPIC".into(),
        "-O2".into(),
        "-g0".into(),
        "-std=gnu11".into(),
        "-nostdinc".into(),
        "-isystem".into(),
        sdk.join("include").to_string_lossy().into_owned(),
        "-Wall".into(),
        "-Werror=implicit-function-declaration".into(),
        // Sony's compiler (x86_64-scei-ps4) makes wchar_t a 2-byte unsigned short, and the
        // console's libc reads 16-bit units.
        "-fshort-wchar".into(),
        "-fno-ident".into(),
        // Keep builds reproducible wherever the tree lives.
        format!("-ffile-prefix-map={}=sdk", sdk.display()),
        format!("-ffile-prefix-map={}=.", project.root.display()),
        if opts.ps4 {
            "-D__ORBIS__".into()
        } else {
            "-D__PROSPERO__".into()
        },
    ];
    if opts.ps4 {
        f.push("-DAPS5_PS4".into());
    }
    f.extend(project.cflags.iter().cloned());
    f
}

/// The C flags adapted to C++: C++17 with exceptions (the consoles' compilers enable them
/// for C++), no C-only diagnostics.
fn cxx_flags(c_flags: &[String]) -> Vec<String> {
    let mut f: Vec<String> = c_flags
        .iter()
        .filter(|x| *x != "-Werror=implicit-function-declaration")
        .map(|x| {
            if x == "-std=gnu11" {
                "-std=gnu++17".to_owned()
            } else {
                x.clone()
            }
        })
        .collect();
    f.extend(["-fexceptions", "-fcxx-exceptions"].map(String::from));
    f
}

struct LinkedModule {
    name: String,
    prx: bool,
    objects: Vec<PathBuf>,
    linked: linked::Linked,
}

/// [`build_dump`], keeping intermediate files (objects, linked ELFs) in WORK and returning
/// what went into each module.
pub fn build_dump_in(
    src: &Path,
    out: &Path,
    opts: &DumpOptions,
    work: &Path,
) -> Result<DumpReport> {
    let project = Project::load(src)?;
    let clang = find_tool(Tool::Clang)?;
    let lld = find_tool(Tool::Lld)?;
    let table = libraries::table()?;
    let flags = compile_flags(opts, &project);
    let sdk = sdk_dir();
    fs::create_dir_all(work)
        .with_context(|| format!("cannot create the work folder {}", work.display()))?;
    // Tools run in other folders, so the paths they get must be absolute.
    let work = &fs::canonicalize(work)?;
    let layout = if opts.ps4 { Layout::Ps4 } else { Layout::Ps5 };

    // C++ only when a source needs it (clang++-14 comes with clang-14).
    let clangxx = if project
        .eboot
        .iter()
        .chain(project.modules.values().flatten())
        .any(|p| is_cxx(p))
    {
        Some(find_tool(Tool::Clangxx)?)
    } else {
        None
    };
    let compile = |source: &Path, obj: &Path, cwd: &Path| -> Result<()> {
        let (compiler, flags) = match &clangxx {
            Some(cxx) if is_cxx(source) => (cxx, cxx_flags(&flags)),
            _ => (&clang, flags.clone()),
        };
        let mut args: Vec<std::ffi::OsString> = flags.iter().map(Into::into).collect();
        args.push("-c".into());
        args.push(source.into());
        args.push("-o".into());
        args.push(obj.into());
        let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        toolchain::run(compiler, &refs, cwd)
    };

    // Compile and link every module, then the eboot.
    let mut units: Vec<(String, bool, Vec<PathBuf>)> = project
        .modules
        .iter()
        .map(|(n, s)| (n.clone(), true, s.clone()))
        .collect();
    units.insert(0, ("eboot".into(), false, project.eboot.clone()));
    let shader_c = shader_c_source(&project, work)?;
    let mut built: Vec<LinkedModule> = Vec::new();
    for (name, prx, sources) in &units {
        let dir = work.join(if *prx {
            format!("module-{name}")
        } else {
            "eboot".into()
        });
        fs::create_dir_all(&dir)?;
        let mut objects = Vec::new();
        for (i, s) in sources.iter().enumerate() {
            let stem = s.file_stem().unwrap_or_default().to_string_lossy();
            let obj = dir.join(format!("{i:02}-{stem}.o"));
            compile(s, &obj, &project.root)?;
            objects.push(obj);
        }
        if !prx && let Some(c) = &shader_c {
            let gen_c = dir.join("aps5_shaders.c");
            fs::write(&gen_c, c)?;
            let obj = dir.join("shaders.o");
            compile(&gen_c, &obj, &dir)?;
            objects.push(obj);
        }
        let crt_src = sdk
            .join("crt")
            .join(if *prx { "crt_module.c" } else { "crt0.c" });
        let crt = dir.join("crt.o");
        compile(&crt_src, &crt, &sdk)?;
        objects.push(crt.clone());
        let linked_path = dir.join("linked.elf");
        let script = sdk.join("crt").join("sdk.ld");
        let mut args: Vec<std::ffi::OsString> = vec![
            "-m".into(),
            "elf_x86_64".into(),
            if *prx { "-shared" } else { "-pie" }.into(),
            "-T".into(),
            script.into(),
            "-z".into(),
            "now".into(),
            "-z".into(),
            "noexecstack".into(),
            "--eh-frame-hdr".into(),
            "--build-id=none".into(),
            "--hash-style=sysv".into(),
            // Undefined symbols become imports; the writer checks each against the stub table.
            "--unresolved-symbols=ignore-all".into(),
            "-o".into(),
            linked_path.clone().into(),
        ];
        if !prx {
            args.push("-e".into());
            args.push("_start".into());
        }
        args.extend(objects.iter().map(Into::into));
        let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        toolchain::run(&lld, &refs, work)?;
        let bytes = fs::read(&linked_path)?;
        let l =
            linked::parse(&bytes).with_context(|| format!("reading {}", linked_path.display()))?;
        built.push(LinkedModule {
            name: name.clone(),
            prx: *prx,
            objects,
            linked: l,
        });
    }

    // Symbols the dump's own modules export.
    let mut own_exports: BTreeMap<String, (String, SymbolKind)> = BTreeMap::new();
    for m in built.iter().filter(|m| m.prx) {
        for s in m
            .linked
            .dynsyms
            .iter()
            .skip(1)
            .filter(|s| !s.is_undefined())
        {
            if matches!(s.name.as_str(), "module_start" | "module_stop") {
                continue;
            }
            let kind = if s.typ() == 1 {
                SymbolKind::Data
            } else {
                SymbolKind::Func
            };
            if let Some((other, _)) = own_exports.insert(s.name.clone(), (m.name.clone(), kind)) {
                bail!(
                    "`{}` is exported by both modules/{other} and modules/{}",
                    s.name,
                    m.name
                );
            }
        }
    }

    prepare_out(out)?;
    let mut report = DumpReport {
        modules: Vec::new(),
    };
    for m in &built {
        let resolve = |name: &str| -> Result<sce::ImportTarget> {
            if let Some((module, kind)) = own_exports.get(name)
                && *module != m.name
            {
                return Ok(sce::ImportTarget {
                    library: module.clone(),
                    module: module.clone(),
                    kind: *kind,
                });
            }
            match table.get(name) {
                Some(e) => Ok(sce::ImportTarget {
                    library: e.library.clone(),
                    module: e.module.clone(),
                    kind: e.kind,
                }),
                None => bail!(
                    "{}: undefined symbol `{name}`: no module in modules/ exports it and \
                     tests/sdk/libraries.tsv does not list it (add a row: name, kind, library, module)",
                    if m.prx {
                        format!("modules/{}", m.name)
                    } else {
                        "eboot".into()
                    }
                ),
            }
        };
        let (dump_path, filename) = if m.prx {
            (
                format!("sce_module/{}.prx", m.name),
                format!("{}.prx", m.name),
            )
        } else {
            ("eboot.bin".to_string(), "eboot.bin".to_string())
        };
        let spec = sce::ModuleSpec {
            prx: m.prx,
            name: m.name.clone(),
            original_filename: filename,
        };
        let written = sce::write(&m.linked, &spec, layout, &resolve)
            .with_context(|| format!("writing {dump_path}"))?;
        let wrapped = fself::wrap(&written.elf, &written.carried_segments, !opts.ps4)?;
        let dest = out.join(&dump_path);
        if let Some(p) = dest.parent() {
            fs::create_dir_all(p)?;
        }
        fs::write(&dest, wrapped).with_context(|| format!("cannot write {}", dest.display()))?;
        fs::write(work.join(format!("{}.elf", m.name)), &written.elf)?;
        report.modules.push(BuiltModule {
            dump_path,
            objects: m.objects.clone(),
            symbols: written.symbols,
        });
    }

    // Title metadata and app files.
    let sys = out.join("sce_sys");
    fs::create_dir_all(&sys)?;
    match &project.param_json {
        Some(p) => {
            fs::copy(p, sys.join("param.json"))
                .with_context(|| format!("cannot copy {}", p.display()))?;
        }
        None => fs::write(sys.join("param.json"), default_param_json(&project.name))?,
    }
    if let Some(app0) = &project.app0 {
        copy_tree(app0, out)?;
    }
    Ok(report)
}

/// Creates OUT, or empties it if it already holds a dump (refuses other non-empty folders).
fn prepare_out(out: &Path) -> Result<()> {
    if out.exists() {
        ensure!(out.is_dir(), "{} exists and is not a folder", out.display());
        let mut entries = fs::read_dir(out)?.peekable();
        if entries.peek().is_some() {
            ensure!(
                out.join("eboot.bin").is_file(),
                "{} is not empty and holds no eboot.bin: refusing to replace it",
                out.display()
            );
            for e in fs::read_dir(out)? {
                let p = e?.path();
                if p.is_dir() {
                    fs::remove_dir_all(&p)?;
                } else {
                    fs::remove_file(&p)?;
                }
            }
        }
    }
    fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    let mut entries: Vec<PathBuf> = fs::read_dir(from)?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    entries.sort();
    for p in entries {
        let name = p.file_name().unwrap_or_default();
        let dest = to.join(name);
        if p.is_dir() {
            fs::create_dir_all(&dest)?;
            copy_tree(&p, &dest)?;
        } else {
            ensure!(
                !dest.exists() || name != "eboot.bin",
                "{}: app0 may not replace eboot.bin",
                p.display()
            );
            fs::copy(&p, &dest).with_context(|| format!("cannot copy {}", p.display()))?;
        }
    }
    Ok(())
}

/// Every symbol name the fixture's objects leave undefined, as `llvm-nm-14 -u` lists them
/// (an oracle independent of the writer), minus those another object of the same link defines.
pub fn undefined_symbols(objects: &[PathBuf]) -> Result<BTreeSet<String>> {
    let nm = find_tool(Tool::LlvmNm)?;
    let mut undefined = BTreeSet::new();
    let mut defined = BTreeSet::new();
    for o in objects {
        let out = toolchain::output(&nm, &["-u".as_ref(), o.as_os_str()])?;
        undefined.extend(
            out.lines()
                .filter_map(|l| l.split_whitespace().last().map(String::from)),
        );
        let out = toolchain::output(
            &nm,
            &["--defined-only".as_ref(), "-g".as_ref(), o.as_os_str()],
        )?;
        defined.extend(
            out.lines()
                .filter_map(|l| l.split_whitespace().last().map(String::from)),
        );
    }
    Ok(undefined.difference(&defined).cloned().collect())
}

/// Of [`undefined_symbols`], those every object references weakly (`llvm-nm-14 -u` type
/// `w`/`v`): the ones a build may leave NULL when nothing exports them.
pub fn weak_undefined_symbols(objects: &[PathBuf]) -> Result<BTreeSet<String>> {
    let nm = find_tool(Tool::LlvmNm)?;
    let mut weak = BTreeSet::new();
    let mut strong = BTreeSet::new();
    for o in objects {
        let out = toolchain::output(&nm, &["-u".as_ref(), o.as_os_str()])?;
        for l in out.lines() {
            let mut f = l.split_whitespace();
            if let (Some(kind), Some(name)) = (f.next(), f.next()) {
                if kind == "w" || kind == "v" {
                    weak.insert(name.to_owned());
                } else {
                    strong.insert(name.to_owned());
                }
            }
        }
    }
    let undefined = undefined_symbols(objects)?;
    Ok(weak
        .difference(&strong)
        .filter(|n| undefined.contains(*n))
        .cloned()
        .collect())
}
