//! Human-readable (readelf-like) and JSON reports of a [`Module`].
//!
//! The JSON form is a stable interface documented in `docs/INSPECT.md`: addresses, offsets,
//! sizes and addends are hex strings (`"0x1a0"`, so 64-bit values survive JSON number
//! parsers), counts and ids are numbers.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::model::*;

/// Version of the JSON layout; bumped on incompatible changes.
pub const JSON_SCHEMA: &str = "aps5-inspect/1";

fn hex(v: u64) -> String {
    format!("{v:#x}")
}

/// `p_flags` as `rwx` letters with `-` for absent bits (e.g. `r-x`).
fn perms(flags: u32) -> String {
    [(4, 'r'), (2, 'w'), (1, 'x')]
        .iter()
        .map(|&(bit, c)| if flags & bit != 0 { c } else { '-' })
        .collect()
}

fn platform(p: Platform) -> &'static str {
    match p {
        Platform::Ps4 => "ps4",
        Platform::Ps5 => "ps5",
    }
}

fn container(c: Container) -> &'static str {
    match c {
        Container::Elf => "elf",
        Container::Fself => "fself",
    }
}

fn layout(l: DynamicLayout) -> &'static str {
    match l {
        DynamicLayout::None => "none",
        DynamicLayout::Ps4 => "ps4",
        DynamicLayout::Ps5 => "ps5",
    }
}

fn tag_order(o: Option<LibraryTagOrder>) -> Value {
    match o {
        None => Value::Null,
        Some(LibraryTagOrder::Ps4) => "ps4".into(),
        Some(LibraryTagOrder::Standard) => "standard".into(),
        Some(LibraryTagOrder::Swapped) => "swapped".into(),
    }
}

fn module_ref(m: &ModuleRef) -> Value {
    json!({
        "id": m.id,
        "name": m.name,
        "version": format!("{}.{}", m.version_major, m.version_minor),
        "attributes": m.attributes.map(hex),
    })
}

fn library(l: &Library) -> Value {
    json!({
        "id": l.id,
        "name": l.name,
        "version": l.version,
        "attributes": l.attributes.map(hex),
    })
}

fn symbol(s: &Symbol) -> Value {
    let known: Vec<Value> = s
        .known_names()
        .into_iter()
        .map(|k| json!({ "name": k.name, "library": k.library }))
        .collect();
    json!({
        "index": s.index,
        "name": s.name,
        "nid": s.nid,
        "library_id": s.library_id,
        "module_id": s.module_id,
        "library": s.library,
        "module": s.module,
        "known_names": known,
        "type": s.kind_name(),
        "binding": s.binding_name(),
        "value": hex(s.value),
        "size": hex(s.size),
    })
}

fn pointer_array(a: &Option<PointerArray>) -> Value {
    match a {
        None => Value::Null,
        Some(a) => json!({
            "vaddr": hex(a.vaddr),
            "size": hex(a.size),
            "entries": a.entries.iter().map(|&e| hex(e)).collect::<Vec<_>>(),
        }),
    }
}

fn grouped(groups: std::collections::BTreeMap<String, Vec<&Symbol>>) -> Value {
    groups
        .into_iter()
        .map(|(lib, syms)| {
            json!({
                "library": lib,
                "symbols": syms.into_iter().map(symbol).collect::<Vec<_>>(),
            })
        })
        .collect::<Vec<_>>()
        .into()
}

/// The stable JSON report (see `docs/INSPECT.md`).
pub fn json(m: &Module) -> Value {
    let segments: Vec<Value> = m
        .segments
        .iter()
        .map(|s| {
            json!({
                "index": s.index,
                "type": s.type_name(),
                "type_value": hex(u64::from(s.p_type)),
                "flags": perms(s.flags),
                "offset": hex(s.offset),
                "vaddr": hex(s.vaddr),
                "filesz": hex(s.filesz),
                "memsz": hex(s.memsz),
                "align": hex(s.align),
            })
        })
        .collect();
    let dynamic: Vec<Value> = m
        .dynamic
        .iter()
        .map(|d| json!({ "tag": hex(d.tag), "name": d.tag_name(), "value": hex(d.value) }))
        .collect();
    let rela = m.relocations_in(RelocationTable::Rela).count();
    let jmprel = m.relocations_in(RelocationTable::Jmprel).count();
    json!({
        "schema": JSON_SCHEMA,
        "format": {
            "platform": platform(m.format.platform),
            "container": container(m.format.container),
            "os_abi": m.format.os_abi,
            "abi_version": m.format.abi_version,
        },
        "type": { "name": m.elf_type_name(), "value": hex(u64::from(m.elf_type)) },
        "entry": hex(m.entry),
        "interpreter": m.interpreter,
        "original_filename": m.original_filename,
        "fingerprint": m.fingerprint,
        "segments": segments,
        "dynamic_layout": layout(m.dynamic_layout),
        "library_tag_order": tag_order(m.library_tag_order),
        "dynamic": dynamic,
        "module": m.module_info.as_ref().map(module_ref),
        "needed": m.needed,
        "needed_modules": m.needed_modules.iter().map(module_ref).collect::<Vec<_>>(),
        "export_libraries": m.export_libraries.iter().map(library).collect::<Vec<_>>(),
        "import_libraries": m.import_libraries.iter().map(library).collect::<Vec<_>>(),
        "imports": grouped(m.imports_by_library()),
        "exports": grouped(m.exports_by_library()),
        "symbol_count": m.symbols.len(),
        "relocations": {
            "total": m.relocations.len(),
            "rela": rela,
            "jmprel": jmprel,
            "by_type": m.relocation_counts(),
        },
        "tls": m.tls.map(|t| json!({
            "vaddr": hex(t.vaddr),
            "filesz": hex(t.filesz),
            "memsz": hex(t.memsz),
            "align": hex(t.align),
        })),
        "init": m.init.map(hex),
        "fini": m.fini.map(hex),
        "preinit_array": pointer_array(&m.preinit_array),
        "init_array": pointer_array(&m.init_array),
        "fini_array": pointer_array(&m.fini_array),
        "pltgot": m.pltgot.map(hex),
        "process_param": m.process_param.as_ref().map(|p| json!({
            "vaddr": hex(p.vaddr),
            "size": hex(p.size),
            "magic": hex(u64::from(p.magic)),
            "entry_count": p.entry_count,
            "sdk_version": hex(p.sdk_version),
            "ps5_sdk_version": p.ps5_sdk_version.map(|v| hex(u64::from(v))),
            "fields": p.fields.iter().map(|f| json!({
                "name": f.name, "offset": hex(f.offset), "value": hex(f.value),
            })).collect::<Vec<_>>(),
        })),
        "module_param": m.module_param.as_ref().map(|p| json!({
            "vaddr": hex(p.vaddr),
            "size": hex(p.size),
            "magic": hex(u64::from(p.magic)),
            "version": p.version,
            "sdk_version": hex(p.sdk_version),
            "ps5_sdk_version": p.ps5_sdk_version.map(|v| hex(u64::from(v))),
        })),
        "warnings": m.warnings,
    })
}

/// Library attribute bits by name (FORMATS.md): `0x9 (AUTO_EXPORT|LOOSE_IMPORT)`.
fn library_attributes(a: u64) -> String {
    let names: Vec<&str> = [(1, "AUTO_EXPORT"), (2, "WEAK_EXPORT"), (8, "LOOSE_IMPORT")]
        .iter()
        .filter(|(bit, _)| a & bit != 0)
        .map(|(_, n)| *n)
        .collect();
    if names.is_empty() {
        format!("{a:#x}")
    } else {
        format!("{a:#x} ({})", names.join("|"))
    }
}

fn sym_line(out: &mut String, s: &Symbol) {
    let known = s.known_names();
    let name = if known.is_empty() {
        "?".to_owned()
    } else {
        known.iter().map(|k| k.name).collect::<Vec<_>>().join(" | ")
    };
    let _ = writeln!(
        out,
        "    {:>5}  {:<16} {:<7} {:<6} {}",
        s.index,
        s.name,
        s.kind_name(),
        s.binding_name(),
        if s.nid.is_some() { name } else { String::new() },
    );
}

/// A readelf-like text report.
pub fn text(m: &Module) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Format:        {} {} (EI_OSABI {}, EI_ABIVERSION {})",
        platform(m.format.platform).to_uppercase(),
        match m.format.container {
            Container::Elf if m.is_payload() => "payload ELF",
            Container::Elf => "ELF",
            Container::Fself => "fSELF",
        },
        m.format.os_abi,
        m.format.abi_version
    );
    let _ = writeln!(
        o,
        "Type:          {} ({:#06x})",
        m.elf_type_name(),
        m.elf_type
    );
    let _ = writeln!(o, "Entry:         {:#x}", m.entry);
    if let Some(i) = &m.interpreter {
        let _ = writeln!(o, "Interpreter:   {i}");
    }
    if let Some(mi) = &m.module_info {
        let _ = writeln!(
            o,
            "Module:        {} {}.{} (id {})",
            mi.name, mi.version_major, mi.version_minor, mi.id
        );
    }
    if let Some(f) = &m.original_filename {
        let _ = writeln!(o, "Original name: {f}");
    }
    if let Some(f) = &m.fingerprint {
        let _ = writeln!(o, "Fingerprint:   {f}");
    }
    let _ = writeln!(
        o,
        "Dynamic:       {} layout{}",
        layout(m.dynamic_layout),
        match m.library_tag_order {
            Some(LibraryTagOrder::Standard) => ", library tags 0x47=export 0x49=import",
            Some(LibraryTagOrder::Swapped) => ", library tags 0x47=import 0x49=export (swapped)",
            _ => "",
        }
    );

    let _ = writeln!(o, "\nProgram headers:");
    let _ = writeln!(
        o,
        "  {:<3} {:<20} {:<10} {:<18} {:<10} {:<10} Flg Align",
        "#", "Type", "Offset", "VirtAddr", "FileSiz", "MemSiz"
    );
    for s in &m.segments {
        let _ = writeln!(
            o,
            "  {:<3} {:<20} {:<#10x} {:<#18x} {:<#10x} {:<#10x} {} {:#x}",
            s.index,
            if s.type_name() == "unknown" {
                format!("{:#x}", s.p_type)
            } else {
                s.type_name().to_owned()
            },
            s.offset,
            s.vaddr,
            s.filesz,
            s.memsz,
            s.flags_string(),
            s.align
        );
    }

    if !m.needed.is_empty() {
        let _ = writeln!(o, "\nDT_NEEDED: {}", m.needed.join(", "));
    }
    if !m.needed_modules.is_empty() {
        let _ = writeln!(o, "\nNeeded modules:");
        for n in &m.needed_modules {
            let _ = writeln!(
                o,
                "  {:>3}  {} {}.{}",
                n.id, n.name, n.version_major, n.version_minor
            );
        }
    }
    for (title, libs) in [
        ("Export libraries", &m.export_libraries),
        ("Import libraries", &m.import_libraries),
    ] {
        if !libs.is_empty() {
            let _ = writeln!(o, "\n{title}:");
            for l in libs {
                let _ = writeln!(
                    o,
                    "  {:>3}  {} v{} attr {}",
                    l.id,
                    l.name,
                    l.version,
                    l.attributes.map_or("-".to_owned(), library_attributes)
                );
            }
        }
    }

    for (title, groups) in [
        ("Imports", m.imports_by_library()),
        ("Exports", m.exports_by_library()),
    ] {
        let total: usize = groups.values().map(Vec::len).sum();
        if total == 0 {
            continue;
        }
        let _ = writeln!(o, "\n{title} ({total}):");
        for (lib, syms) in groups {
            let _ = writeln!(
                o,
                "  {} ({}):",
                if lib.is_empty() {
                    "(plain names)"
                } else {
                    &lib
                },
                syms.len()
            );
            for s in syms {
                sym_line(&mut o, s);
            }
        }
    }

    let _ = writeln!(o, "\nRelocations ({}):", m.relocations.len());
    for (name, n) in m.relocation_counts() {
        let _ = writeln!(o, "  {name:<24} {n}");
    }

    if let Some(t) = &m.tls {
        let _ = writeln!(
            o,
            "\nTLS: vaddr {:#x}, {:#x} bytes initialised of {:#x}, align {:#x}",
            t.vaddr, t.filesz, t.memsz, t.align
        );
    }
    if m.init.is_some() || m.fini.is_some() {
        let _ = writeln!(
            o,
            "\nInit: {}   Fini: {}",
            m.init.map_or("-".into(), hex),
            m.fini.map_or("-".into(), hex)
        );
    }
    for (name, a) in [
        ("Preinit array", &m.preinit_array),
        ("Init array", &m.init_array),
        ("Fini array", &m.fini_array),
    ] {
        if let Some(a) = a {
            let entries: Vec<String> = a.entries.iter().map(|&e| hex(e)).collect();
            let _ = writeln!(o, "{name} at {:#x}: [{}]", a.vaddr, entries.join(", "));
        }
    }
    if let Some(p) = &m.process_param {
        let _ = writeln!(
            o,
            "\nProcess param at {:#x}: size {:#x}, magic {:#x}, {} entries, SDK {:#x}{}",
            p.vaddr,
            p.size,
            p.magic,
            p.entry_count,
            p.sdk_version,
            p.ps5_sdk_version
                .map_or(String::new(), |v| format!(", PS5 SDK {v:#x}"))
        );
        for f in &p.fields {
            let _ = writeln!(o, "  +{:#04x} {:<24} {:#x}", f.offset, f.name, f.value);
        }
    }
    if let Some(p) = &m.module_param {
        let _ = writeln!(
            o,
            "\nModule param at {:#x}: size {:#x}, magic {:#x}, version {}, SDK {:#x}{}",
            p.vaddr,
            p.size,
            p.magic,
            p.version,
            p.sdk_version,
            p.ps5_sdk_version
                .map_or(String::new(), |v| format!(", PS5 SDK {v:#x}"))
        );
    }
    if !m.warnings.is_empty() {
        let _ = writeln!(o, "\nWarnings:");
        for w in &m.warnings {
            let _ = writeln!(o, "  {w}");
        }
    }
    o
}
