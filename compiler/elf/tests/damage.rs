//! Damaged and randomly mutated copies of the corpus files: every one must give a clean
//! error (or a module), never a panic, and errors must name a file offset.

use std::path::{Path, PathBuf};

mod common;
#[path = "common/corpus.rs"]
mod corpus;

use aps5_elf::{Error, ErrorKind, Module};
use common::ps5;

/// The corpus, which these tests expect to hold exactly 10 modules.
fn corpus_files() -> Vec<PathBuf> {
    let out = corpus::corpus_files();
    assert_eq!(out.len(), 10);
    out
}

fn u64_at(d: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(d[o..o + 8].try_into().unwrap())
}

fn set_u64(d: &mut [u8], o: usize, v: u64) {
    d[o..o + 8].copy_from_slice(&v.to_le_bytes());
}

/// Parses and demands an error of `kind` that mentions an offset (and `at`, if given).
fn expect_err(data: &[u8], kind: ErrorKind, at: Option<u64>, what: &str) -> Error {
    let e = match aps5_elf::parse(data) {
        Ok(_) => panic!("{what}: parsed, expected a {kind:?} error"),
        Err(e) => e,
    };
    let text = e.to_string();
    assert_eq!(e.kind, kind, "{what}: {text}");
    assert!(text.contains("offset 0x"), "{what}: no offset in {text}");
    if let Some(at) = at {
        assert_eq!(e.file_offset(), Some(at), "{what}: {text}");
    }
    e
}

struct Image {
    data: Vec<u8>,
    m: Module,
}

impl Image {
    fn load(path: &Path) -> (Vec<u8>, Image) {
        let raw = std::fs::read(path).unwrap();
        let data = aps5_elf::unwrap_fself(&raw).unwrap().into_owned();
        let m = aps5_elf::parse(&data).unwrap();
        (raw, Image { data, m })
    }

    fn segment(&self, name: &str) -> (usize, &aps5_elf::Segment) {
        let s = self
            .m
            .segments
            .iter()
            .find(|s| s.type_name() == name)
            .unwrap();
        (s.index as usize, s)
    }

    /// File offset of the first dynamic entry with this tag.
    fn dyn_entry(&self, tag: u64) -> usize {
        let (_, d) = self.segment("PT_DYNAMIC");
        let i = self.m.dynamic.iter().position(|e| e.tag == tag).unwrap();
        d.offset as usize + i * 16
    }

    fn with(&self, f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut d = self.data.clone();
        f(&mut d);
        d
    }
}

const DT_NEEDED: u64 = 1;
const DT_SCE_JMPREL: u64 = 0x6100_0029;
const DT_SCE_PLTREL: u64 = 0x6100_002B;
const DT_SCE_RELASZ: u64 = 0x6100_0031;
const DT_SCE_PLTRELSZ: u64 = 0x6100_002D;
const DT_SCE_STRSZ: u64 = 0x6100_0037;
const DT_SCE_SYMTAB: u64 = 0x6100_0039;
const DT_SCE_SYMENT: u64 = 0x6100_003B;
const DT_SCE_SYMTABSZ: u64 = 0x6100_003F;
const DT_SCE_IMPORT_LIB: u64 = 0x6100_0015;

#[test]
fn damaged_plain_images_give_clean_errors() {
    let mut cases = 0;
    for path in corpus_files() {
        let (_, img) = Image::load(&path);
        let name = path.display().to_string();
        let len = img.data.len() as u64;

        // Truncations.
        for cut in [0usize, 3, 0x30, 0x50] {
            expect_err(
                &img.data[..cut],
                ErrorKind::Truncated,
                None,
                &format!("{name} cut at {cut:#x}"),
            );
            cases += 1;
        }
        let (_, dynlib) = img.segment("PT_SCE_DYNLIBDATA");
        let (dyn_idx, dynamic) = img.segment("PT_DYNAMIC");
        for cut in [
            dynlib.offset + dynlib.filesz / 2,
            dynamic.offset + 8,
            len - 1,
        ] {
            expect_err(
                &img.data[..cut as usize],
                ErrorKind::Truncated,
                None,
                &format!("{name} cut at {cut:#x}"),
            );
            cases += 1;
        }

        // Bad offsets in headers.
        let d = img.with(|d| set_u64(d, 0x20, 0xFFFF_FFFF_FFFF_0000));
        expect_err(
            &d,
            ErrorKind::Truncated,
            Some(0x20),
            &format!("{name} e_phoff"),
        );
        let ph = 0x40 + dyn_idx * 56;
        let d = img.with(|d| set_u64(d, ph + 8, len + 0x1000));
        expect_err(
            &d,
            ErrorKind::Truncated,
            Some(ph as u64 + 8),
            &format!("{name} PT_DYNAMIC p_offset"),
        );
        cases += 2;

        // Table pointers and sizes in the dynamic table: the error names the entry.
        let at = img.dyn_entry(DT_SCE_SYMTAB);
        let d = img.with(|d| set_u64(d, at + 8, dynlib.filesz));
        expect_err(
            &d,
            ErrorKind::Truncated,
            Some(at as u64),
            &format!("{name} DT_SCE_SYMTAB"),
        );
        let at = img.dyn_entry(DT_SCE_SYMTABSZ);
        let d = img.with(|d| set_u64(d, at + 8, 24 << 40));
        expect_err(
            &d,
            ErrorKind::Truncated,
            None,
            &format!("{name} DT_SCE_SYMTABSZ huge"),
        );
        let d = img.with(|d| set_u64(d, at + 8, 25));
        expect_err(
            &d,
            ErrorKind::Malformed,
            Some(at as u64),
            &format!("{name} DT_SCE_SYMTABSZ odd"),
        );
        let at = img.dyn_entry(DT_SCE_SYMENT);
        let d = img.with(|d| set_u64(d, at + 8, 16));
        expect_err(
            &d,
            ErrorKind::Malformed,
            Some(at as u64),
            &format!("{name} DT_SCE_SYMENT"),
        );
        let at = img.dyn_entry(DT_SCE_PLTREL);
        let d = img.with(|d| set_u64(d, at + 8, 17));
        expect_err(
            &d,
            ErrorKind::Malformed,
            Some(at as u64),
            &format!("{name} DT_SCE_PLTREL"),
        );
        cases += 5;
        for tag in [DT_SCE_RELASZ, DT_SCE_PLTRELSZ] {
            let at = img.dyn_entry(tag);
            let d = img.with(|d| set_u64(d, at + 8, 24 * 1_000_000_000));
            expect_err(
                &d,
                ErrorKind::Truncated,
                None,
                &format!("{name} {tag:#x} huge"),
            );
            let d = img.with(|d| set_u64(d, at + 8, 23));
            expect_err(
                &d,
                ErrorKind::Malformed,
                Some(at as u64),
                &format!("{name} {tag:#x} odd"),
            );
            cases += 2;
        }

        // String offsets past DT_SCE_STRSZ.
        let at = img.dyn_entry(DT_NEEDED);
        let d = img.with(|d| set_u64(d, at + 8, 0xFF_FFFF));
        let e = expect_err(
            &d,
            ErrorKind::Malformed,
            Some(at as u64),
            &format!("{name} DT_NEEDED"),
        );
        assert!(e.to_string().contains("past the string table size"), "{e}");
        let at = img.dyn_entry(DT_SCE_STRSZ);
        let d = img.with(|d| set_u64(d, at + 8, 1));
        expect_err(
            &d,
            ErrorKind::Malformed,
            None,
            &format!("{name} DT_SCE_STRSZ tiny"),
        );
        if img.m.dynamic.iter().any(|e| e.tag == DT_SCE_IMPORT_LIB) {
            let at = img.dyn_entry(DT_SCE_IMPORT_LIB);
            let v = u64_at(&img.data, at + 8);
            let d = img.with(|d| set_u64(d, at + 8, (v & !0xFFFF_FFFF) | 0xFFFF_FF00));
            expect_err(
                &d,
                ErrorKind::Malformed,
                Some(at as u64),
                &format!("{name} DT_SCE_IMPORT_LIB name"),
            );
            cases += 1;
        }
        cases += 2;

        // A relocation naming a symbol that does not exist.
        if let Some(i) = img.m.dynamic.iter().position(|e| e.tag == DT_SCE_JMPREL) {
            let rel = dynlib.offset + img.m.dynamic[i].value;
            if img
                .m
                .relocations
                .iter()
                .any(|r| r.table == aps5_elf::RelocationTable::Jmprel)
            {
                let d = img.with(|d| set_u64(d, rel as usize + 8, (0xFFFF << 32) | 7));
                expect_err(
                    &d,
                    ErrorKind::Malformed,
                    Some(rel + 8),
                    &format!("{name} JMPREL symbol"),
                );
                cases += 1;
            }
        }
    }
    println!("damaged plain images: {cases} cases, all clean errors");
}

/// SELF entries: (flags, offset, filesz) and where the entry table ends.
fn self_entries(d: &[u8]) -> (Vec<(u64, u64, u64)>, usize) {
    let n = u16::from_le_bytes([d[0x18], d[0x19]]) as usize;
    let e = (0..n)
        .map(|i| {
            let at = 0x20 + i * 0x20;
            (u64_at(d, at), u64_at(d, at + 8), u64_at(d, at + 16))
        })
        .collect();
    (e, 0x20 + n * 0x20)
}

#[test]
fn damaged_fselfs_give_clean_errors() {
    let mut cases = 0;
    for path in corpus_files() {
        let (raw, img) = Image::load(&path);
        let name = path.display().to_string();
        let (entries, elf_at) = self_entries(&raw);

        for cut in [0usize, 3, 0x10, 0x30, elf_at + 0x20, elf_at + 0x80] {
            expect_err(
                &raw[..cut],
                ErrorKind::Truncated,
                None,
                &format!("{name} cut at {cut:#x}"),
            );
            cases += 1;
        }
        for (i, (flags, off, size)) in entries.iter().enumerate() {
            if flags & 0x800 != 0 && *size > 1 {
                let cut = (off + size / 2) as usize;
                let e = expect_err(
                    &raw[..cut],
                    ErrorKind::Truncated,
                    Some(0x20 + i as u64 * 0x20 + 8),
                    &format!("{name} cut in entry {i}"),
                );
                assert!(e.to_string().contains(&format!("SELF entry {i}")), "{e}");
                cases += 1;
            }
        }
        let mut d = raw.clone();
        d[0x18..0x1A].copy_from_slice(&0xFFFFu16.to_le_bytes());
        expect_err(
            &d,
            ErrorKind::Truncated,
            Some(0x20),
            &format!("{name} entry count"),
        );
        let mut d = raw.clone();
        d[elf_at] = 0;
        expect_err(
            &d,
            ErrorKind::Encrypted,
            Some(elf_at as u64),
            &format!("{name} no ELF magic"),
        );
        let data_entry = entries.iter().position(|e| e.0 & 0x800 != 0).unwrap();
        let at = 0x20 + data_entry * 0x20;
        for bit in [2u64, 8] {
            let mut d = raw.clone();
            set_u64(&mut d, at, entries[data_entry].0 | bit);
            let e = expect_err(
                &d,
                ErrorKind::Encrypted,
                Some(at as u64),
                &format!("{name} flag {bit}"),
            );
            assert!(e.to_string().contains("decrypted dump"), "{e}");
        }
        let mut d = raw.clone();
        set_u64(
            &mut d,
            at,
            (entries[data_entry].0 & 0xFFFFF) | (0xFFF << 20),
        );
        expect_err(
            &d,
            ErrorKind::Malformed,
            Some(at as u64),
            &format!("{name} segment index"),
        );
        let mut d = raw.clone();
        set_u64(&mut d, at + 8, raw.len() as u64);
        expect_err(
            &d,
            ErrorKind::Truncated,
            Some(at as u64 + 8),
            &format!("{name} entry offset"),
        );
        cases += 6;

        // Damage inside the wrapped ELF is reported at its offset in the fSELF file: break
        // DT_NEEDED in the DYNLIBDATA data entry.
        let (dl_idx, dynlib) = img.segment("PT_SCE_DYNLIBDATA");
        let entry = entries
            .iter()
            .find(|e| e.0 & 0x800 != 0 && ((e.0 >> 20) & 0xFFF) as usize == dl_idx)
            .unwrap();
        let elf_off = img.dyn_entry(DT_NEEDED) as u64;
        let file_off = entry.1 + (elf_off - dynlib.offset);
        let mut d = raw.clone();
        set_u64(&mut d, file_off as usize + 8, 0xFF_FFFF);
        let e = expect_err(
            &d,
            ErrorKind::Malformed,
            Some(file_off),
            &format!("{name} DT_NEEDED in fSELF"),
        );
        assert!(
            e.to_string().contains(&format!("ELF offset {elf_off:#x}")),
            "{e}"
        );
        cases += 1;
    }
    println!("damaged fSELFs: {cases} cases, all clean errors");
}

/// Not PS4/PS5 files at all.
#[test]
fn foreign_files_are_refused() {
    expect_err(
        b"#!/bin/sh\necho hi\n",
        ErrorKind::NotExecutable,
        Some(0),
        "script",
    );
    let mut elf32 = vec![0u8; 64];
    elf32[..6].copy_from_slice(b"\x7fELF\x01\x01");
    expect_err(&elf32, ErrorKind::NotExecutable, Some(4), "32-bit ELF");
    let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    // The host test binary is an x86-64 ELF but not a PS4/PS5 one: it may parse (it is a
    // valid ELF64) or be refused, but must not panic.
    let _ = aps5_elf::parse(&me);
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, base: &[u8], hot: (usize, usize)) -> Vec<u8> {
    let mut d = base.to_vec();
    let pick = |rng: &mut Rng, d: &[u8]| -> usize {
        match rng.below(3) {
            0 => rng.below(d.len().min(0x1000)),
            1 => hot.0 + rng.below(hot.1.saturating_sub(hot.0)),
            _ => rng.below(d.len()),
        }
        .min(d.len().saturating_sub(1))
    };
    for _ in 0..1 + rng.below(4) {
        match rng.below(4) {
            0 => {
                let i = pick(rng, &d);
                d[i] ^= 1 << rng.below(8);
            }
            1 => {
                let i = pick(rng, &d);
                d[i] = rng.next() as u8;
            }
            2 => {
                let i = pick(rng, &d) & !7;
                if i + 8 <= d.len() {
                    let len = d.len() as u64;
                    let v = [
                        0,
                        1,
                        0x18,
                        u64::MAX,
                        len,
                        len - 1,
                        1 << 31,
                        1 << 63,
                        rng.next(),
                    ][rng.below(9)];
                    set_u64(&mut d, i, v);
                }
            }
            _ => {
                let cut = pick(rng, &d);
                d.truncate(cut.max(1));
            }
        }
    }
    d
}

/// (name, fSELF or ELF bytes, hot range holding the dynamic tables, mutations to make)
type Input = (String, Vec<u8>, (usize, usize), usize);

/// A few thousand randomly mutated copies (fixed seed): no panic, errors name an offset.
#[test]
fn random_mutations_never_panic() {
    let mut rng = Rng(0x00A9_55E1_F00D_2026);
    let (mut ok, mut err, mut panics) = (0, 0, Vec::new());
    let mut inputs: Vec<Input> = Vec::new();
    for path in corpus_files() {
        let (raw, img) = Image::load(&path);
        let (_, dynlib) = img.segment("PT_SCE_DYNLIBDATA");
        let plain_hot = (
            dynlib.offset as usize,
            (dynlib.offset + dynlib.filesz) as usize,
        );
        let self_hot = (raw.len() - dynlib.filesz as usize, raw.len());
        let name = path.display().to_string();
        inputs.push((name.clone(), raw, self_hot, 200));
        inputs.push((name, img.data, plain_hot, 200));
    }
    // PS5 layout (synthetic): tables live in the data segment, after the code.
    for prx in [false, true] {
        let (elf, l) = ps5::build(&ps5::small(prx, false));
        let hot = (l.data_offset as usize, elf.len());
        let fself = ps5::wrap_fself(&elf, aps5_elf::PS5_SELF_MAGIC);
        let fself_hot = (fself.len() - (elf.len() - hot.0), fself.len());
        inputs.push((format!("synthetic PS5 prx={prx}"), elf, hot, 250));
        inputs.push((
            format!("synthetic PS5 fSELF prx={prx}"),
            fself,
            fself_hot,
            250,
        ));
    }
    for (path, input, hot, count) in &inputs {
        let hot = *hot;
        {
            for n in 0..*count {
                let d = mutate(&mut rng, input, hot);
                let r = std::panic::catch_unwind(|| {
                    match aps5_elf::unwrap_fself(&d).and_then(|_| aps5_elf::parse(&d)) {
                        Ok(m) => {
                            let _ = aps5_elf::inspect::text(&m);
                            let _ = aps5_elf::inspect::json(&m);
                            true
                        }
                        Err(e) => {
                            let t = e.to_string();
                            assert!(t.contains("offset 0x"), "no offset in: {t}");
                            false
                        }
                    }
                });
                match r {
                    Ok(true) => ok += 1,
                    Ok(false) => err += 1,
                    Err(_) => panics.push(format!("{path} mutation {n}")),
                }
            }
        }
    }
    println!(
        "random mutations: {} inputs, {ok} parsed, {err} clean errors, {} panics",
        ok + err + panics.len(),
        panics.len()
    );
    assert!(panics.is_empty(), "{panics:#?}");
}

/// A symbol name changed in the string table no longer hashes to its DT_HASH chain: the
/// module still reads, with a warning. (Synthetic PS5 module: its hash table has several
/// buckets; the OpenOrbis files use one, where every symbol is trivially reachable.)
#[test]
fn renamed_symbol_is_caught_by_the_hash_check() {
    let (elf, l) = ps5::build(&ps5::small(false, false));
    let m = aps5_elf::parse(&elf).unwrap();
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    let printf = m
        .imports()
        .find(|s| s.nid.as_deref() == Some("hcuQgD53UxM"))
        .unwrap();
    let old = printf.name.clone();
    let nbucket = (l.nsyms / 2) as u32;
    // Change the first letter to one that moves the name to another bucket.
    let renamed = (b'A'..=b'Z')
        .map(|c| format!("{}{}", c as char, &old[1..]))
        .find(|n| ps5::elf_hash(n.as_bytes()) % nbucket != ps5::elf_hash(old.as_bytes()) % nbucket)
        .unwrap();
    let mut d = elf.clone();
    let at = l.strtab_vaddr as usize + 0x4000;
    let pos = d[at..]
        .windows(old.len())
        .position(|w| w == old.as_bytes())
        .unwrap();
    d[at + pos..at + pos + old.len()].copy_from_slice(renamed.as_bytes());
    let m = aps5_elf::parse(&d).unwrap();
    assert_eq!(m.warnings.len(), 1, "{:?}", m.warnings);
    assert!(
        m.warnings[0].contains("cannot be found through the hash table"),
        "{}",
        m.warnings[0]
    );
}
