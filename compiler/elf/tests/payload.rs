//! The reader against PS5 payloads: ELFs laid out as the ps5-payload-sdk links them (plain
//! names, DT_NEEDED stub libraries, DT_GNU_HASH and no DT_HASH), built by the fixture SDK with
//! clang-14 and ld.lld-14. The symbol table (whose size only the GNU hash implies) and the
//! needed libraries are checked against llvm-readelf-14, which sizes .dynsym from the
//! section headers instead.

use std::path::{Path, PathBuf};

use aps5_elf::{Container, DynamicLayout, ErrorKind, Platform};
use aps5_sdk::{Tool, find_tool, fixtures_dir};

const DT_GNU_HASH: u64 = 0x6fff_fef5;

/// (name, undefined) of each .dynsym entry, and the DT_NEEDED names, as llvm-readelf reads them.
fn readelf(path: &Path) -> (Vec<(String, bool)>, Vec<String>) {
    let tool = find_tool(Tool::LlvmReadelf).unwrap();
    let out = std::process::Command::new(tool)
        .args(["--wide", "--dyn-syms", "--dynamic-table"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut syms = Vec::new();
    let mut needed = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.first()
            .is_some_and(|n| n.ends_with(':') && n[..n.len() - 1].parse::<u32>().is_ok())
            && f.len() >= 7
        {
            syms.push((f.get(7).copied().unwrap_or("").to_owned(), f[6] == "UND"));
        }
        if let Some(i) = line.find("Shared library: [") {
            let rest = &line[i + "Shared library: [".len()..];
            needed.push(rest.trim_end_matches(']').to_owned());
        }
    }
    (syms, needed)
}

fn build(name: &str, dir: &Path) -> (PathBuf, PathBuf) {
    let work = dir.join(format!("{name}-work"));
    let elf = aps5_sdk::build_payload_in(&fixtures_dir().join(name), &dir.join(name), &work)
        .unwrap_or_else(|e| panic!("building {name} as a payload: {e:#}"));
    (elf, work)
}

fn check_against_readelf(what: &str, path: &Path) -> aps5_elf::Module {
    let data = std::fs::read(path).unwrap();
    let m = aps5_elf::parse(&data).unwrap_or_else(|e| panic!("{what}: {e}"));
    let (syms, needed) = readelf(path);
    let ours: Vec<(String, bool)> = m
        .symbols
        .iter()
        .map(|s| (s.name.clone(), s.shndx == 0))
        .collect();
    assert_eq!(ours, syms, "{what}: the symbol table");
    assert_eq!(m.needed, needed, "{what}: DT_NEEDED");
    assert!(m.is_payload(), "{what}");
    assert_eq!(m.format.platform, Platform::Ps5, "{what}");
    assert_eq!(m.format.container, Container::Elf, "{what}");
    assert_eq!(m.dynamic_layout, DynamicLayout::Ps5, "{what}");
    assert!(m.dynamic.iter().any(|e| e.tag == DT_GNU_HASH), "{what}");
    assert!(!m.dynamic.iter().any(|e| e.tag == 4), "{what}: has DT_HASH");
    assert!(m.warnings.is_empty(), "{what}: {:?}", m.warnings);
    assert!(
        aps5_elf::inspect::text(&m).starts_with("Format:        PS5 payload ELF"),
        "{what}"
    );
    // Imports are plain names (no NID#L#M), each one undefined in the objects.
    assert!(m.imports().count() > 0, "{what}");
    assert!(
        m.imports().all(|s| s.nid.is_none() && s.library.is_none()),
        "{what}"
    );
    m
}

#[test]
fn payload_symbol_tables_are_sized_by_the_gnu_hash() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["hello", "stdlib", "file_io", "threads"] {
        let (elf, _) = build(name, tmp.path());
        let m = check_against_readelf(name, &elf);
        // Hashed (defined) symbols exist: the count came from walking the last chain.
        assert!(m.exports().count() > 0, "{name}");
        // The SDK's stub libraries, by their payload SDK names.
        assert!(
            m.needed.iter().all(|n| n.ends_with(".so")) && !m.needed.is_empty(),
            "{name}: {:?}",
            m.needed
        );
    }
}

#[test]
fn a_payload_marked_freebsd_is_a_payload_too() {
    // Older payload toolchains target FreeBSD (EI_OSABI 9); nothing else differs.
    let tmp = tempfile::tempdir().unwrap();
    let (elf, _) = build("hello", tmp.path());
    let mut data = std::fs::read(&elf).unwrap();
    data[7] = 9;
    let freebsd = tmp.path().join("freebsd.elf");
    std::fs::write(&freebsd, &data).unwrap();
    let m = check_against_readelf("freebsd", &freebsd);
    assert_eq!(m.format.os_abi, 9);
}

#[test]
fn a_gnu_hash_without_hashed_symbols_sizes_the_table_by_symoffset() {
    // The same objects linked without --export-dynamic: only undefined symbols, all below
    // symoffset, and every bucket empty.
    let tmp = tempfile::tempdir().unwrap();
    let (_, work) = build("hello", tmp.path());
    let lld = find_tool(Tool::Lld).unwrap();
    let out = tmp.path().join("undefined-only.elf");
    let mut objects: Vec<PathBuf> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "o"))
        .collect();
    objects.sort();
    let mut stubs: Vec<PathBuf> = std::fs::read_dir(work.join("stubs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "so"))
        .collect();
    stubs.sort();
    let st = std::process::Command::new(lld)
        .args([
            "-m",
            "elf_x86_64",
            "-pie",
            "-e",
            "_start",
            "--hash-style=gnu",
            "-T",
        ])
        .arg(aps5_sdk::sdk_dir().join("crt/payload.ld"))
        .arg("-o")
        .arg(&out)
        .args(&objects)
        .arg("--as-needed")
        .args(&stubs)
        .status()
        .unwrap();
    assert!(st.success());
    let m = check_against_readelf("undefined-only", &out);
    assert_eq!(m.exports().count(), 0);
}

/// Rewrites the u32 at `word` of the GNU hash table of `data`.
fn patch_gnu_hash(data: &mut [u8], word: usize, value: u32) {
    let m = aps5_elf::parse(data).unwrap();
    let vaddr = m
        .dynamic
        .iter()
        .find(|e| e.tag == DT_GNU_HASH)
        .unwrap()
        .value;
    let seg = m
        .segments
        .iter()
        .find(|s| s.p_type == 1 && vaddr >= s.vaddr && vaddr < s.vaddr + s.filesz)
        .unwrap();
    let off = (seg.offset + vaddr - seg.vaddr) as usize + 4 * word;
    data[off..off + 4].copy_from_slice(&value.to_le_bytes());
}

#[test]
fn a_damaged_gnu_hash_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (elf, _) = build("hello", tmp.path());
    let good = std::fs::read(&elf).unwrap();
    // Too many buckets for the file; a bucket naming a symbol below symoffset.
    let mut huge = good.clone();
    patch_gnu_hash(&mut huge, 0, u32::MAX);
    let mut low = good.clone();
    let m = aps5_elf::parse(&good).unwrap();
    let nbuckets = {
        let vaddr = m
            .dynamic
            .iter()
            .find(|e| e.tag == DT_GNU_HASH)
            .unwrap()
            .value;
        let seg = m
            .segments
            .iter()
            .find(|s| s.p_type == 1 && vaddr >= s.vaddr && vaddr < s.vaddr + s.filesz)
            .unwrap();
        let off = (seg.offset + vaddr - seg.vaddr) as usize;
        let w =
            |i: usize| u32::from_le_bytes(good[off + 4 * i..off + 4 * i + 4].try_into().unwrap());
        (w(0), w(1), w(2))
    };
    let (nb, symoffset, bloom) = nbuckets;
    assert!(symoffset > 1, "hello imports something");
    // The first bucket, after the header (4 words) and the bloom words (2 each).
    patch_gnu_hash(&mut low, 4 + 2 * bloom as usize, symoffset - 1);
    assert!(nb >= 1);
    for (what, data) in [("huge", &huge), ("low", &low)] {
        let e = aps5_elf::parse(data).expect_err(what);
        assert_eq!(e.kind, ErrorKind::Malformed, "{what}: {e}");
        assert!(e.to_string().contains("DT_GNU_HASH"), "{what}: {e}");
    }
}
