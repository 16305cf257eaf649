//! Every fixture is built in the PS5 and the PS4 layout, and each module is checked against
//! oracles that do not come from the SDK's writer:
//! - imports = the symbols `llvm-nm-14 -u` lists for the linked objects (as read back by the
//!   aps5-elf reader, by NID, with library and module names);
//! - exports = the dynamic symbols ld.lld exported from the module (`llvm-nm-14 -D`);
//! - `llvm-readelf-14` accepts the unwrapped ELF; for PS5 (standard tags) it lists the same
//!   symbols and as many relocations as the reader.

mod common;

use aps5_sdk::{DumpOptions, Tool};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

const PT_LOAD: u32 = 1;
/// PS4 relro: loaded like PT_LOAD.
const PT_SCE_RELRO: u32 = 0x6100_0010;

struct Checked {
    modules: usize,
    imports: usize,
    exports: usize,
    relocations: usize,
}

fn readelf(elf: &Path) -> (bool, String, String) {
    let out = Command::new(common::require(Tool::LlvmReadelf))
        .args([
            "--file-header",
            "--program-headers",
            "--dynamic-table",
            "--dyn-syms",
            "--dyn-relocations",
        ])
        .arg(elf)
        .output()
        .expect("run llvm-readelf-14");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn lld_exports(linked: &Path) -> BTreeSet<String> {
    let out = Command::new(common::require(Tool::LlvmNm))
        .args(["-D", "--defined-only"])
        .arg(linked)
        .output()
        .expect("run llvm-nm-14");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last().map(String::from))
        .collect()
}

/// lld's dynamic relocations as llvm-readelf prints them: (offset, type, NID of the symbol or
/// the plain name for module entry points, addend), sorted.
fn lld_relocations(linked: &Path) -> Vec<(u64, u32, String, i64)> {
    let (ok, stdout, stderr) = {
        let out = Command::new(common::require(Tool::LlvmReadelf))
            .arg("--dyn-relocations")
            .arg(linked)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert!(
        ok,
        "llvm-readelf --dyn-relocations {}: {stderr}",
        linked.display()
    );
    let mut v = Vec::new();
    for line in stdout.lines() {
        let t: Vec<&str> = line.split_whitespace().collect();
        if t.len() < 4 || !t[2].starts_with("R_X86_64_") {
            continue;
        }
        let r_type = match t[2] {
            "R_X86_64_64" => 1,
            "R_X86_64_PC32" => 2,
            "R_X86_64_GLOB_DAT" => 6,
            "R_X86_64_JUMP_SLOT" => 7,
            "R_X86_64_RELATIVE" => 8,
            "R_X86_64_DTPMOD64" => 16,
            "R_X86_64_DTPOFF64" => 17,
            "R_X86_64_TPOFF64" => 18,
            other => panic!("unexpected relocation type {other} in {}", linked.display()),
        };
        let offset = u64::from_str_radix(t[0], 16).unwrap();
        let (sym, addend) = match t.len() {
            4 => (String::new(), i64::from_str_radix(t[3], 16).unwrap()),
            7 => {
                let name = t[4];
                let sym = if matches!(name, "module_start" | "module_stop") {
                    name.to_string()
                } else {
                    aps5_nid::nid(name)
                };
                let a = i64::from_str_radix(t[6], 16).unwrap();
                (sym, if t[5] == "-" { -a } else { a })
            }
            _ => panic!("cannot read relocation line {line:?}"),
        };
        v.push((offset, r_type, sym, addend));
    }
    v.sort();
    v
}

fn check_fixture(fixture: &Path, ps4: bool) -> Checked {
    let name = common::name(fixture);
    let layout = if ps4 { "PS4" } else { "PS5" };
    let ctx = format!("{name} ({layout})");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("dump");
    let work = tmp.path().join("work");
    let report = aps5_sdk::build_dump_in(fixture, &out, &DumpOptions { ps4 }, &work)
        .unwrap_or_else(|e| panic!("{ctx}: build failed: {e:#}"));
    let project = aps5_sdk::Project::load(fixture).unwrap();
    let table = aps5_sdk::libraries::table().unwrap();

    // Title metadata.
    let param: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("sce_sys/param.json")).unwrap())
            .unwrap_or_else(|e| panic!("{ctx}: param.json: {e}"));
    let id = param["titleId"].as_str().unwrap_or_default();
    assert!(
        id.len() == 9 && id.starts_with("APS5") && id[4..].bytes().all(|b| b.is_ascii_digit()),
        "{ctx}: title id {id:?}"
    );
    assert_eq!(param["contentVersion"], "01.000.000", "{ctx}");
    // App files arrive byte for byte.
    if let Some(app0) = &project.app0 {
        for e in walk(app0) {
            let rel = e.strip_prefix(app0).unwrap();
            assert_eq!(
                std::fs::read(&e).unwrap(),
                std::fs::read(out.join(rel)).unwrap_or_default(),
                "{ctx}: app0/{} not copied",
                rel.display()
            );
        }
    }
    let expected_files: BTreeSet<String> = std::iter::once("eboot.bin".to_string())
        .chain(
            project
                .modules
                .keys()
                .map(|m| format!("sce_module/{m}.prx")),
        )
        .collect();
    let got_files: BTreeSet<String> = report.modules.iter().map(|m| m.dump_path.clone()).collect();
    assert_eq!(got_files, expected_files, "{ctx}");

    // Which module exports what, per lld.
    let mut module_exports: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for m in project.modules.keys() {
        let mut e = lld_exports(&work.join(format!("module-{m}/linked.elf")));
        e.remove("module_start");
        e.remove("module_stop");
        module_exports.insert(m.clone(), e);
    }

    let mut checked = Checked {
        modules: 0,
        imports: 0,
        exports: 0,
        relocations: 0,
    };
    for m in &report.modules {
        let mctx = format!("{ctx} {}", m.dump_path);
        let prx = m.dump_path != "eboot.bin";
        let own = m
            .dump_path
            .strip_prefix("sce_module/")
            .and_then(|s| s.strip_suffix(".prx"))
            .unwrap_or("eboot");
        let bytes = std::fs::read(out.join(&m.dump_path)).unwrap();
        let magic: [u8; 4] = if ps4 {
            [0x4F, 0x15, 0x3D, 0x1D]
        } else {
            [0x54, 0x14, 0xF5, 0xEE]
        };
        assert_eq!(bytes[..4], magic, "{mctx}: fSELF magic");

        let module =
            aps5_elf::parse(&bytes).unwrap_or_else(|e| panic!("{mctx}: aps5-elf rejects it: {e}"));
        assert_eq!(
            module.format.abi_version,
            if ps4 { 0 } else { 2 },
            "{mctx}: ABI"
        );
        assert_eq!(module.format.os_abi, 9, "{mctx}");
        assert!(
            module.warnings.is_empty(),
            "{mctx}: the reader found oddities: {:?}",
            module.warnings
        );
        assert_eq!(
            module.elf_type,
            if prx { 0xFE18 } else { 0xFE10 },
            "{mctx}: e_type"
        );
        if prx {
            let p = module.module_param.as_ref().expect("module param");
            assert_eq!(
                (p.size, p.magic, p.version),
                (0x18, 0x3C13_F4BF, 1),
                "{mctx}"
            );
            assert!(module.process_param.is_none(), "{mctx}");
        } else {
            let p = module.process_param.as_ref().expect("process param");
            assert_eq!(p.magic, 0x4942_524F, "{mctx}");
            assert_eq!(p.size, if ps4 { 0x50 } else { 0x60 }, "{mctx}");
            assert_eq!(
                module.interpreter.as_deref(),
                Some("/libexec/ld-elf.so.1"),
                "{mctx}"
            );
        }
        assert_eq!(
            module.module_info.as_ref().map(|i| i.name.as_str()),
            Some(own),
            "{mctx}: module info"
        );

        // Imports: exactly what the objects leave undefined (llvm-nm), by NID, each from the
        // library and module that the stub table (or a module of this dump) names; a weak
        // reference nothing exports is no import (NULL at run time).
        let undefined = aps5_sdk::undefined_symbols(&m.objects).unwrap();
        let weak = aps5_sdk::weak_undefined_symbols(&m.objects).unwrap();
        let mut null_weak = BTreeSet::new();
        let want: BTreeMap<String, (String, String)> = undefined
            .iter()
            .filter_map(|n| {
                let from = module_exports
                    .iter()
                    .find(|(mname, e)| mname.as_str() != own && e.contains(n))
                    .map(|(mname, _)| (mname.clone(), mname.clone()))
                    .or_else(|| table.get(n).map(|e| (e.library.clone(), e.module.clone())));
                if from.is_none() && weak.contains(n) {
                    null_weak.insert(aps5_nid::nid(n));
                    return None;
                }
                let from = from.unwrap_or_else(|| panic!("{mctx}: `{n}` is in no library"));
                Some((aps5_nid::nid(n), from))
            })
            .collect();
        let got: BTreeMap<String, (String, String)> = module
            .imports()
            .map(|s| {
                (
                    s.nid.clone().unwrap_or_else(|| s.name.clone()),
                    (
                        s.library.clone().unwrap_or_default(),
                        s.module.clone().unwrap_or_default(),
                    ),
                )
            })
            .collect();
        assert_eq!(
            got, want,
            "{mctx}: imports differ from llvm-nm -u of {:?}",
            m.objects
        );
        let needed: BTreeSet<String> = want.values().map(|(_, m)| format!("{m}.prx")).collect();
        assert_eq!(
            module.needed.iter().cloned().collect::<BTreeSet<_>>(),
            needed,
            "{mctx}: DT_NEEDED"
        );
        checked.imports += got.len();

        // Exports: what lld exported, by NID under the module's own library; the entry points
        // keep their plain names.
        if prx {
            let want: BTreeSet<String> = module_exports[own]
                .iter()
                .map(|n| aps5_nid::nid(n))
                .collect();
            let got: BTreeSet<String> = module
                .exports()
                .filter_map(|s| {
                    assert!(
                        s.nid.is_none() || s.library.as_deref() == Some(own),
                        "{mctx}: {} exported from library {:?}",
                        s.name,
                        s.library
                    );
                    s.nid.clone()
                })
                .collect();
            assert_eq!(
                got, want,
                "{mctx}: exports differ from lld's dynamic symbols"
            );
            for entry in ["module_start", "module_stop"] {
                assert!(
                    module.exports().any(|s| s.name == entry),
                    "{mctx}: {entry} missing"
                );
            }
            assert_eq!(
                module
                    .export_libraries
                    .iter()
                    .map(|l| l.name.as_str())
                    .collect::<Vec<_>>(),
                vec![own],
                "{mctx}"
            );
            checked.exports += got.len();
        } else {
            assert_eq!(
                module.exports().count(),
                0,
                "{mctx}: an eboot exports nothing"
            );
        }

        // Relocations patch loaded memory and name symbols that exist.
        let loads: Vec<(u64, u64)> = module
            .segments
            .iter()
            .filter(|s| s.p_type == PT_LOAD || s.p_type == PT_SCE_RELRO)
            .map(|s| (s.vaddr, s.vaddr + s.memsz))
            .collect();
        for r in &module.relocations {
            assert!(
                loads
                    .iter()
                    .any(|&(a, b)| a <= r.offset && r.offset + 8 <= b),
                "{mctx}: relocation at {:#x} outside every loaded segment",
                r.offset
            );
            assert!(
                (r.symbol as usize) < module.symbols.len(),
                "{mctx}: relocation symbol {} out of range",
                r.symbol
            );
        }

        // Relocations are lld's, one for one, with symbols renamed to NIDs (or kept plain),
        // except those against weak symbols nothing exports (NULL: written in place).
        let mut want = lld_relocations(&work.join(if prx {
            format!("module-{own}/linked.elf")
        } else {
            "eboot/linked.elf".to_string()
        }));
        want.retain(|(_, _, sym, _)| !null_weak.contains(sym));
        let mut got: Vec<(u64, u32, String, i64)> = module
            .relocations
            .iter()
            .map(|r| {
                let sym = if r.symbol == 0 {
                    String::new()
                } else {
                    let s = &module.symbols[r.symbol as usize];
                    s.nid.clone().unwrap_or_else(|| s.name.clone())
                };
                (r.offset, r.r_type, sym, r.addend)
            })
            .collect();
        got.sort();
        assert_eq!(got, want, "{mctx}: relocations differ from lld's");
        checked.relocations += got.len();

        // llvm-readelf accepts the unwrapped ELF.
        let elf = aps5_elf::unwrap_fself(&bytes).unwrap();
        let elf_path = tmp.path().join(format!("{own}.elf"));
        std::fs::write(&elf_path, &elf).unwrap();
        assert_eq!(
            elf.as_ref(),
            std::fs::read(work.join(format!("{own}.elf"))).unwrap(),
            "{mctx}: the fSELF does not carry the ELF the writer produced"
        );
        let (ok, stdout, stderr) = readelf(&elf_path);
        assert!(ok, "{mctx}: llvm-readelf-14 failed: {stderr}");
        if ps4 {
            // Offsets into DYNLIBDATA are not addresses: readelf finds no string table, as
            // with the OpenOrbis-made files in shared/corpus/homebrew.
            for l in stderr.lines() {
                assert!(
                    l.contains("string table was not found")
                        || l.contains("invalid sh_type for string table"),
                    "{mctx}: unexpected readelf diagnostic: {l}"
                );
            }
        } else {
            assert!(
                stderr.trim().is_empty(),
                "{mctx}: llvm-readelf-14 complained: {stderr}"
            );
            let listed: BTreeSet<String> = stdout
                .split("Symbol table for image")
                .nth(1)
                .unwrap_or_default()
                .lines()
                .skip(2)
                .filter_map(|l| l.split_whitespace().nth(7).map(String::from))
                .collect();
            let ours: BTreeSet<String> = module
                .symbols
                .iter()
                .filter(|s| !s.name.is_empty())
                .map(|s| s.name.clone())
                .collect();
            assert_eq!(listed, ours, "{mctx}: llvm-readelf symbol names");
            let reloc_lines = stdout.lines().filter(|l| l.contains("R_X86_64_")).count();
            assert_eq!(
                reloc_lines,
                module.relocations.len(),
                "{mctx}: relocation count per llvm-readelf"
            );
            for needed in &module.needed {
                assert!(
                    stdout.contains(&format!("Shared library: [{needed}]")),
                    "{mctx}: readelf does not list {needed}"
                );
            }
        }
        checked.modules += 1;
    }
    checked
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            v.extend(walk(&p));
        } else {
            v.push(p);
        }
    }
    v.sort();
    v
}

fn run_layout(ps4: bool) {
    common::require(Tool::Clang);
    common::require(Tool::Lld);
    common::require(Tool::LlvmMc);
    let fixtures = common::fixtures();
    let mut totals = Checked {
        modules: 0,
        imports: 0,
        exports: 0,
        relocations: 0,
    };
    for f in &fixtures {
        let c = check_fixture(f, ps4);
        totals.modules += c.modules;
        totals.imports += c.imports;
        totals.exports += c.exports;
        totals.relocations += c.relocations;
    }
    println!(
        "{}: {} fixtures, {} modules; {} imports, {} exports, {} relocations matched llvm-nm / lld",
        if ps4 { "PS4" } else { "PS5" },
        fixtures.len(),
        totals.modules,
        totals.imports,
        totals.exports,
        totals.relocations
    );
}

#[test]
fn every_fixture_builds_in_the_ps5_layout() {
    run_layout(false);
}

#[test]
fn every_fixture_builds_in_the_ps4_layout() {
    run_layout(true);
}

fn all_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    walk(dir)
        .into_iter()
        .map(|p| {
            (
                p.strip_prefix(dir).unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect()
}

/// Same sources, built twice from two different folders, give the same bytes.
#[test]
fn builds_are_byte_reproducible() {
    common::require(Tool::Clang);
    for name in ["module_link", "tls", "shader_blob", "file_io"] {
        for ps4 in [false, true] {
            let src = aps5_sdk::fixtures_dir().join(name);
            let a = tempfile::tempdir().unwrap();
            let b = tempfile::tempdir().unwrap();
            // The second build reads a copy of the sources that lives somewhere else.
            let copy = b.path().join("elsewhere").join(name);
            copy_dir(&src, &copy);
            aps5_sdk::build_dump(&src, &a.path().join("d"), &DumpOptions { ps4 }).unwrap();
            aps5_sdk::build_dump(&copy, &b.path().join("d"), &DumpOptions { ps4 }).unwrap();
            let fa = all_files(&a.path().join("d"));
            let fb = all_files(&b.path().join("d"));
            assert_eq!(
                fa.keys().collect::<Vec<_>>(),
                fb.keys().collect::<Vec<_>>(),
                "{name}"
            );
            for (k, v) in &fa {
                assert!(
                    v == &fb[k],
                    "{name} (ps4={ps4}): {k} differs between builds"
                );
            }
        }
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}
