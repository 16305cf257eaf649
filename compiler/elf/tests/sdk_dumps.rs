//! The reader against dumps built by the fixture SDK (tests/sdk: clang-14 + ld.lld-14 and
//! the SDK's own PS4/PS5 writer, written independently of this reader), in both layouts.
//! Needs clang-14, ld.lld-14 and llvm-mc-14; the SDK fails with a message naming the
//! missing tool.

use std::collections::BTreeSet;
use std::path::Path;

use aps5_elf::{Container, DynamicLayout, Platform};
use aps5_sdk::{DumpOptions, fixtures_dir};

/// (import NID#L#M names with their library and module, export NIDs) from the SDK's record.
type Record = (BTreeSet<(String, String, String)>, BTreeSet<String>);

fn sdk_record(m: &aps5_sdk::BuiltModule) -> Record {
    let mut imports = BTreeSet::new();
    let mut exports = BTreeSet::new();
    for s in &m.symbols {
        match &s.import_from {
            Some((lib, module)) => {
                imports.insert((s.encoded.clone(), lib.clone(), module.clone()));
            }
            None if aps5_nid::parse_symbol_name(&s.encoded).is_some() => {
                exports.insert(s.encoded.clone());
            }
            None => {}
        }
    }
    (imports, exports)
}

fn our_record(m: &aps5_elf::Module) -> Record {
    let imports = m
        .imports()
        .filter(|s| s.nid.is_some())
        .map(|s| {
            (
                s.name.clone(),
                s.library.clone().unwrap_or_default(),
                s.module.clone().unwrap_or_default(),
            )
        })
        .collect();
    let exports = m
        .exports()
        .filter(|s| s.nid.is_some())
        .map(|s| s.name.clone())
        .collect();
    (imports, exports)
}

fn check_fixture(name: &str, ps4: bool) -> usize {
    let src = fixtures_dir().join(name);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("dump");
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let report = aps5_sdk::build_dump_in(&src, &out, &DumpOptions { ps4 }, &work)
        .unwrap_or_else(|e| panic!("building fixture {name}: {e:#}"));
    let mut n = 0;
    for built in &report.modules {
        let path = out.join(&built.dump_path);
        let data = std::fs::read(&path).unwrap();
        let what = format!(
            "{name} ({}) {}",
            if ps4 { "PS4" } else { "PS5" },
            built.dump_path
        );
        let m = aps5_elf::parse(&data).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(m.format.container, Container::Fself, "{what}");
        assert!(!m.is_payload(), "{what}: a Sony module is not a payload");
        let (platform, layout) = if ps4 {
            (Platform::Ps4, DynamicLayout::Ps4)
        } else {
            (Platform::Ps5, DynamicLayout::Ps5)
        };
        assert_eq!(m.format.platform, platform, "{what}");
        assert_eq!(m.dynamic_layout, layout, "{what}");
        let is_eboot = built.dump_path == "eboot.bin";
        assert_eq!(
            m.elf_type_name(),
            if is_eboot {
                "ET_SCE_DYNEXEC"
            } else {
                "ET_SCE_DYNAMIC"
            },
            "{what}"
        );
        assert_eq!(our_record(&m), sdk_record(built), "{what}");
        // No warnings: in particular every symbol name we read is found through the SDK's
        // own multi-bucket SysV hash table.
        assert!(m.warnings.is_empty(), "{what}: {:?}", m.warnings);
        assert!(!m.relocations.is_empty(), "{what}");
        if is_eboot {
            assert!(m.process_param.is_some(), "{what}");
        } else {
            assert!(m.module_param.is_some(), "{what}");
        }
        if !ps4 {
            assert_eq!(
                m.library_tag_order,
                Some(aps5_elf::LibraryTagOrder::Standard),
                "{what}"
            );
        }
        if name == "tls" {
            let tls = m.tls.unwrap_or_else(|| panic!("{what}: no PT_TLS"));
            assert!(tls.memsz >= tls.filesz && tls.memsz > 0, "{what}: {tls:?}");
        }
        if name == "ctors_dtors" && is_eboot {
            let init = m
                .init_array
                .as_ref()
                .unwrap_or_else(|| panic!("{what}: no init array"));
            // Three constructors (plus whatever the crt adds), all pointing into the image.
            assert!(init.entries.len() >= 3, "{what}: {init:?}");
            assert!(init.entries.iter().all(|&e| e != 0), "{what}: {init:?}");
            assert!(
                m.fini_array.as_ref().is_some_and(|f| !f.entries.is_empty()),
                "{what}"
            );
        }
        // Every import's NID names something the objects really leave undefined.
        for s in m.imports().filter(|s| s.nid.is_some()) {
            let plain = built.symbols.iter().find(|e| e.encoded == s.name).unwrap();
            assert_eq!(Some(aps5_nid::nid(&plain.name)), s.nid, "{what}");
        }
        n += 1;
    }
    n
}

#[test]
fn sdk_dumps_read_back_in_both_layouts() {
    let mut modules = 0;
    for name in ["hello", "module_link", "tls", "ctors_dtors"] {
        if !Path::new(&fixtures_dir().join(name)).exists() {
            panic!("fixture {name} missing from tests/fixtures");
        }
        for ps4 in [false, true] {
            modules += check_fixture(name, ps4);
        }
    }
    println!("SDK dumps: {modules} modules read back with the SDK's import/export lists");
}
