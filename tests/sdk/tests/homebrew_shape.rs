//! The `--ps4` layout against files made by another toolchain: the OpenOrbis-built homebrew in
//! `shared/corpus/homebrew/` (see its SOURCE.md). Same fSELF header and entry scheme, same
//! program-header sequence, same dynamic-tag order.

mod common;

use aps5_sdk::{DumpOptions, Tool};
use std::path::PathBuf;

const PT_NULL: u32 = 0;
const PT_TLS: u32 = 7;
// Tags the homebrew has only when its code needs them.
const DT_SCE_EXPORT_LIB: u64 = 0x6100_0013;
const DT_SCE_IMPORT_LIB: u64 = 0x6100_0015;
const DT_SCE_EXPORT_LIB_ATTR: u64 = 0x6100_0017;
const DT_SCE_IMPORT_LIB_ATTR: u64 = 0x6100_0019;
const OPTIONAL_TAGS: [u64; 9] = [12, 13, 22, 25, 26, 27, 28, 30, 0x6FFF_FFF9];

fn corpus() -> PathBuf {
    let p = aps5_sdk::sdk_dir().join("../../../shared/corpus/homebrew");
    assert!(
        p.is_dir(),
        "the homebrew corpus is missing at {} (tests read ../shared from the repository root)",
        p.display()
    );
    p
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes(b[o..o + 2].try_into().unwrap())
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

/// What must agree between two fSELF-wrapped PS4 modules of the same kind.
#[derive(Debug, PartialEq, Eq)]
struct Shape {
    /// Version, mode, endianness, attributes, content and program type.
    header_bytes: Vec<u8>,
    /// Flags word at 0x1A.
    flags: u16,
    /// Header size and meta size, recomputed from the entry and program-header counts.
    sizes_consistent: bool,
    /// Each (digest, data) entry pair: digest flags and id rule, data flags without the index.
    entry_scheme: Vec<(u64, u64)>,
    /// Program-header types (NULL, and TLS for modules, left out).
    segments: Vec<u32>,
    /// Dynamic tags in order, repeats collapsed, optional and library-attribute ones left out.
    tags: Vec<u64>,
    lib_attr_pairs: bool,
    abi: u8,
    elf_type: u16,
}

fn shape(bytes: &[u8], prx: bool) -> Shape {
    let n = usize::from(u16_at(bytes, 0x18));
    let elf = 0x20 + n * 0x20;
    let phnum = usize::from(u16_at(bytes, elf + 0x38));
    let meta = (elf + 0x40 + phnum * 0x38).next_multiple_of(16) + 0x40 + 0x30;
    let sizes_consistent = usize::from(u16_at(bytes, 0xC)) == meta
        && usize::from(u16_at(bytes, 0xE)) == n * 0x50 + 0x50 + 0x100;
    let mut entry_scheme = Vec::new();
    for k in 0..n / 2 {
        let digest = u64_at(bytes, 0x20 + 2 * k * 0x20);
        let data = u64_at(bytes, 0x20 + (2 * k + 1) * 0x20);
        assert_eq!(digest >> 20, (2 * k + 1) as u64, "digest entry id");
        entry_scheme.push((digest & 0xF_FFFF, data & 0xF_FFFF));
    }
    let m = aps5_elf::parse(bytes).expect("aps5-elf reads it");
    let segments = m
        .segments
        .iter()
        .map(|s| s.p_type)
        .filter(|&t| t != PT_NULL && !(prx && t == PT_TLS))
        .collect();
    // Each library tag is followed by its attribute tag; then count each kind once.
    let lib_attr_pairs = m.dynamic.windows(2).all(|w| match w[0].tag {
        DT_SCE_EXPORT_LIB => w[1].tag == DT_SCE_EXPORT_LIB_ATTR,
        DT_SCE_IMPORT_LIB => w[1].tag == DT_SCE_IMPORT_LIB_ATTR,
        _ => true,
    });
    let mut tags: Vec<u64> = Vec::new();
    for d in &m.dynamic {
        let attr = d.tag == DT_SCE_EXPORT_LIB_ATTR || d.tag == DT_SCE_IMPORT_LIB_ATTR;
        if !OPTIONAL_TAGS.contains(&d.tag) && !attr && tags.last() != Some(&d.tag) {
            tags.push(d.tag);
        }
    }
    Shape {
        header_bytes: bytes[4..10].to_vec(),
        flags: u16_at(bytes, 0x1A),
        sizes_consistent,
        entry_scheme,
        segments,
        tags,
        lib_attr_pairs,
        abi: m.format.abi_version,
        elf_type: m.elf_type,
    }
}

#[test]
fn ps4_layout_matches_openorbis_homebrew() {
    common::require(Tool::Clang);
    let corpus = corpus();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("d");
    aps5_sdk::build_dump(
        &aps5_sdk::fixtures_dir().join("module_link"),
        &out,
        &DumpOptions { ps4: true },
    )
    .unwrap();
    let ours_eboot = shape(&std::fs::read(out.join("eboot.bin")).unwrap(), false);
    let ours_prx = shape(
        &std::fs::read(out.join("sce_module/mathlib.prx")).unwrap(),
        true,
    );
    let mut compared = 0;
    for rel in [
        "openorbis-samples/pthread/pkg/eboot.bin",
        "openorbis-samples/hello_world/pkg/eboot.bin",
        "openorbis-samples/networking/pkg/eboot.bin",
        "ps4-2048/eboot.bin",
    ] {
        let theirs = shape(&std::fs::read(corpus.join(rel)).unwrap(), false);
        assert_eq!(ours_eboot, theirs, "eboot shape differs from {rel}");
        compared += 1;
    }
    for rel in [
        "openorbis-samples/piglet/sce_module/libc.prx",
        "openorbis-samples/piglet/sce_module/libSceFios2.prx",
    ] {
        let theirs = shape(&std::fs::read(corpus.join(rel)).unwrap(), true);
        assert_eq!(ours_prx, theirs, "prx shape differs from {rel}");
        compared += 1;
    }
    println!("--ps4 output has the shape of {compared}/6 OpenOrbis-made files");
}
