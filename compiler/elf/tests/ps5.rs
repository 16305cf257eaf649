//! PS5 (ABI 2) modules. The corpus has no PS5 binary, so these are built byte by byte by
//! `common/ps5.rs` following FORMATS.md; the standard parts are cross-checked with
//! llvm-readelf, and the SCE parts against the values the builder wrote.

mod common;

use std::process::Command;

use aps5_elf::{Container, DynamicLayout, LibraryTagOrder, Platform, RelocationTable};
use common::ps5;

#[test]
fn ps5_executable() {
    let (elf, l) = ps5::build(&ps5::small(false, false));
    let m = aps5_elf::parse(&elf).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.format.platform, Platform::Ps5);
    assert_eq!(m.format.container, Container::Elf);
    assert_eq!(m.format.abi_version, 2);
    assert_eq!(m.elf_type_name(), "ET_SCE_DYNEXEC");
    assert_eq!(m.entry, ps5::ENTRY);
    assert_eq!(m.dynamic_layout, DynamicLayout::Ps5);
    assert_eq!(m.library_tag_order, Some(LibraryTagOrder::Standard));
    assert_eq!(m.needed, ["libkernel.sprx", "libc.sprx"]);
    let modules: Vec<(u16, &str)> = m
        .needed_modules
        .iter()
        .map(|n| (n.id, n.name.as_str()))
        .collect();
    assert_eq!(modules, [(2, "libkernel"), (3, "libc")]);
    let libs: Vec<(u16, &str, Option<u64>)> = m
        .import_libraries
        .iter()
        .map(|l| (l.id, l.name.as_str(), l.attributes))
        .collect();
    assert_eq!(libs, [(2, "libkernel", Some(9)), (3, "libc", Some(9))]);
    assert!(m.export_libraries.is_empty());
    assert_eq!(m.module_info.as_ref().unwrap().name, "synth_main");
    assert_eq!(
        m.original_filename.as_deref(),
        Some("synth/x64/Release/synth.elf")
    );
    assert_eq!(m.fingerprint.as_deref(), Some("5a".repeat(20).as_str()));

    let by_lib = m.imports_by_library();
    let names = |lib: &str| -> Vec<&str> {
        by_lib[lib]
            .iter()
            .map(|s| s.known_names()[0].name)
            .collect()
    };
    assert_eq!(names("libkernel"), ["sceKernelUsleep", "__error", "getpid"]);
    assert_eq!(names("libc"), ["printf", "malloc"]);
    let printf = by_lib["libc"][0];
    assert_eq!(printf.name, "hcuQgD53UxM#D#D");
    assert_eq!((printf.library_id, printf.module_id), (Some(3), Some(3)));
    assert_eq!(printf.module.as_deref(), Some("libc"));

    // 4 fixed RELATIVE + 5 slots, 5 R_X86_64_64, 1 DTPMOD64; 5 JUMP_SLOT.
    let counts = m.relocation_counts();
    assert_eq!(counts["R_X86_64_RELATIVE"], 9);
    assert_eq!(counts["R_X86_64_64"], 5);
    assert_eq!(counts["R_X86_64_DTPMOD64"], 1);
    assert_eq!(counts["R_X86_64_JUMP_SLOT"], 5);
    assert_eq!(m.relocations_in(RelocationTable::Jmprel).count(), 5);

    assert_eq!((m.init, m.fini), (Some(ps5::INIT), Some(ps5::FINI)));
    let ia = m.init_array.as_ref().unwrap();
    assert_eq!((ia.vaddr, ia.size), (l.init_array_vaddr, 16));
    assert_eq!(ia.entries, [ps5::INIT + 0x100, ps5::INIT + 0x200]);
    assert_eq!(m.fini_array.as_ref().unwrap().entries, [ps5::FINI + 0x100]);
    let tls = m.tls.unwrap();
    assert_eq!(
        (tls.vaddr, tls.filesz, tls.memsz, tls.align),
        (l.tls_vaddr, 0x10, 0x40, 0x10)
    );

    let p = m.process_param.as_ref().unwrap();
    assert_eq!(p.vaddr, l.param_vaddr);
    assert_eq!(
        (p.size, p.magic, p.entry_count),
        (0x60, ps5::PROCPARAM_MAGIC, 3)
    );
    assert_eq!(p.sdk_version, u64::from(ps5::PS4_SDK));
    assert_eq!(p.ps5_sdk_version, Some(ps5::PS5_SDK));
    assert_eq!(p.fields[0].name, "process_name");
    assert_eq!(p.fields[0].value, 0x4242); // filled by a RELATIVE relocation
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
}

#[test]
fn ps5_module_exports_and_fself() {
    let (elf, _) = ps5::build(&ps5::small(true, false));
    let m = aps5_elf::parse(&elf).unwrap();
    assert_eq!(m.elf_type_name(), "ET_SCE_DYNAMIC");
    let exports: Vec<(&str, Option<&str>, Option<&str>)> = m
        .exports()
        .map(|s| (s.name.as_str(), s.library.as_deref(), s.module.as_deref()))
        .collect();
    let a = format!("{}#B#A", aps5_nid::nid("synthExportA"));
    let b = format!("{}#B#A", aps5_nid::nid("synthExportB"));
    assert_eq!(
        exports,
        [
            (a.as_str(), Some("libSynth"), Some("libSynth")),
            (b.as_str(), Some("libSynth"), Some("libSynth"))
        ]
    );
    let exp: Vec<(u16, &str, Option<u64>)> = m
        .export_libraries
        .iter()
        .map(|l| (l.id, l.name.as_str(), l.attributes))
        .collect();
    assert_eq!(exp, [(1, "libSynth", Some(1))]);
    let mp = m.module_param.as_ref().unwrap();
    assert_eq!(
        (mp.size, mp.magic, mp.version),
        (0x18, ps5::MODULE_PARAM_MAGIC, 1)
    );
    assert_eq!(
        (mp.sdk_version, mp.ps5_sdk_version),
        (1, Some(ps5::PS5_SDK))
    );

    // The same module inside a PS5 fSELF.
    let fself = ps5::wrap_fself(&elf, aps5_elf::PS5_SELF_MAGIC);
    let mut w = aps5_elf::parse(&fself).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(w.format.container, Container::Fself);
    w.format.container = Container::Elf;
    assert_eq!(w, m);
}

/// A file that writes exports under 0x61000049 and imports under 0x61000047 is read the
/// same, with the swap recorded.
#[test]
fn ps5_swapped_library_tags() {
    let (plain, _) = ps5::build(&ps5::small(true, false));
    let (swapped, _) = ps5::build(&ps5::small(true, true));
    let a = aps5_elf::parse(&plain).unwrap();
    let b = aps5_elf::parse(&swapped).unwrap();
    assert_eq!(a.library_tag_order, Some(LibraryTagOrder::Standard));
    assert_eq!(b.library_tag_order, Some(LibraryTagOrder::Swapped));
    assert_eq!(a.import_libraries, b.import_libraries);
    assert_eq!(a.export_libraries, b.export_libraries);
    assert_eq!(a.symbols, b.symbols);
}

/// Without DT_SCE_SYMTABSZ the symbol count comes from DT_HASH's nchain.
#[test]
fn ps5_symbol_count_from_hash() {
    let mut spec = ps5::small(false, false);
    spec.omit_symtabsz = true;
    let (elf, l) = ps5::build(&spec);
    let m = aps5_elf::parse(&elf).unwrap();
    assert_eq!(m.symbols.len() as u64, l.nsyms);
}

/// llvm-readelf reads the standard parts of the synthetic PS5 file the same way.
#[test]
fn ps5_llvm_readelf_agrees() {
    let tool = ["llvm-readelf-14", "llvm-readelf"]
        .into_iter()
        .find(|t| {
            Command::new(t)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("llvm-readelf not found: install LLVM 14 (apt-get install llvm-14)");
    let (elf, l) = ps5::build(&ps5::small(false, false));
    let m = aps5_elf::parse(&elf).unwrap();
    let path = std::env::temp_dir().join(format!("aps5-elf-ps5-{}.elf", std::process::id()));
    std::fs::write(&path, &elf).unwrap();
    let o = Command::new(tool)
        .args(["-d", "--dyn-relocations", "--dyn-syms", "-l"])
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let text = String::from_utf8_lossy(&o.stdout);
    // DT_NEEDED names through the standard string table.
    assert!(text.contains("Shared library: [libkernel.sprx]"), "{text}");
    assert!(text.contains("Shared library: [libc.sprx]"), "{text}");
    // Dynamic relocations: every entry llvm-readelf lists (offset, type, symbol, addend)
    // matches ours, in order (RELA first, then PLT).
    let _ = &l;
    let mut theirs = Vec::new();
    for line in text.lines() {
        let t: Vec<&str> = line.split_whitespace().collect();
        if t.len() < 4 || !t[2].starts_with("R_X86_64_") {
            continue;
        }
        let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
        let (sym, addend) = if t.len() == 4 {
            (String::new(), hex(t[3]) as i64)
        } else {
            let a = hex(t[6]) as i64;
            (t[4].to_owned(), if t[5] == "-" { -a } else { a })
        };
        theirs.push((hex(t[0]), t[2].to_owned(), sym, addend));
    }
    let ours: Vec<(u64, String, String, i64)> = m
        .relocations
        .iter()
        .map(|r| {
            let sym = m
                .relocation_symbol(r)
                .map(|s| s.name.clone())
                .unwrap_or_default();
            (r.offset, r.type_name().to_owned(), sym, r.addend)
        })
        .collect();
    assert_eq!(theirs, ours);
    // Dynamic symbols (through DT_HASH): every import name appears.
    for s in m.imports() {
        assert!(text.contains(&s.name), "{} missing\n{text}", s.name);
    }
    assert!(text.contains("R_X86_64_DTPMOD64"));
}
