//! Turns lld's output into a PS4 or PS5 module: SCE program headers, NID-named symbols,
//! SCE dynamic tags, process/module param, and (in [`crate::fself`]) the fake-signed wrapper.

use crate::libraries::SymbolKind;
use crate::linked::{self, Linked, Rela};
use anyhow::{Context, Result, bail, ensure};
use sha1::{Digest, Sha1};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// `e_type` of a main executable.
pub const ET_SCE_DYNEXEC: u16 = 0xFE10;
/// `e_type` of a PRX.
pub const ET_SCE_DYNAMIC: u16 = 0xFE18;

/// PS4 dynamic data (not loaded).
pub const PT_SCE_DYNLIBDATA: u32 = 0x6100_0000;
/// Process param of an eboot.
pub const PT_SCE_PROCPARAM: u32 = 0x6100_0001;
/// Module param of a PRX.
pub const PT_SCE_MODULE_PARAM: u32 = 0x6100_0002;
/// PS4 relro segment.
pub const PT_SCE_RELRO: u32 = 0x6100_0010;
/// Interpreter path.
pub const PT_INTERP: u32 = 3;
/// PS5 relro range.
pub const PT_GNU_RELRO: u32 = 0x6474_E552;

const DT_NEEDED: u64 = 1;
const DT_PLTRELSZ: u64 = 2;
const DT_PLTGOT: u64 = 3;
const DT_HASH: u64 = 4;
const DT_STRTAB: u64 = 5;
const DT_SYMTAB: u64 = 6;
const DT_RELA: u64 = 7;
const DT_RELASZ: u64 = 8;
const DT_RELAENT: u64 = 9;
const DT_STRSZ: u64 = 10;
const DT_SYMENT: u64 = 11;
const DT_DEBUG: u64 = 21;
const DT_PLTREL: u64 = 20;
const DT_JMPREL: u64 = 23;
const DT_TEXTREL: u64 = 22;
const DT_FLAGS: u64 = 30;
const DT_RELACOUNT: u64 = 0x6FFF_FFF9;

const DT_SCE_FINGERPRINT: u64 = 0x6100_0007;
const DT_SCE_ORIGINAL_FILENAME: u64 = 0x6100_0009;
const DT_SCE_MODULE_INFO: u64 = 0x6100_000D;
const DT_SCE_NEEDED_MODULE: u64 = 0x6100_000F;
const DT_SCE_MODULE_ATTR: u64 = 0x6100_0011;
const DT_SCE_EXPORT_LIB: u64 = 0x6100_0013;
const DT_SCE_IMPORT_LIB: u64 = 0x6100_0015;
const DT_SCE_EXPORT_LIB_ATTR: u64 = 0x6100_0017;
const DT_SCE_IMPORT_LIB_ATTR: u64 = 0x6100_0019;
const DT_SCE_HASH: u64 = 0x6100_0025;
const DT_SCE_PLTGOT: u64 = 0x6100_0027;
const DT_SCE_JMPREL: u64 = 0x6100_0029;
const DT_SCE_PLTREL: u64 = 0x6100_002B;
const DT_SCE_PLTRELSZ: u64 = 0x6100_002D;
const DT_SCE_RELA: u64 = 0x6100_002F;
const DT_SCE_RELASZ: u64 = 0x6100_0031;
const DT_SCE_RELAENT: u64 = 0x6100_0033;
const DT_SCE_STRTAB: u64 = 0x6100_0035;
const DT_SCE_STRSZ: u64 = 0x6100_0037;
const DT_SCE_SYMTAB: u64 = 0x6100_0039;
const DT_SCE_SYMENT: u64 = 0x6100_003B;
const DT_SCE_HASHSZ: u64 = 0x6100_003D;
const DT_SCE_SYMTABSZ: u64 = 0x6100_003F;
// PS5 moved the module and library tags.
const DT_PS5_ORIGINAL_FILENAME: u64 = 0x6100_0041;
const DT_PS5_MODULE_INFO: u64 = 0x6100_0043;
const DT_PS5_NEEDED_MODULE: u64 = 0x6100_0045;
const DT_PS5_EXPORT_LIB: u64 = 0x6100_0047;
const DT_PS5_IMPORT_LIB: u64 = 0x6100_0049;

const R_X86_64_RELATIVE: u32 = 8;
const R_X86_64_64: u32 = 1;
const R_X86_64_GLOB_DAT: u32 = 6;
const R_X86_64_JUMP_SLOT: u32 = 7;
const STB_GLOBAL: u8 = 1;
const STT_OBJECT: u8 = 1;
const STT_FUNC: u8 = 2;
const STT_TLS: u8 = 6;

/// Library attribute of an export: AUTO_EXPORT.
const EXPORT_ATTR: u64 = 0x1;
/// Library attribute of an import: AUTO_EXPORT | LOOSE_IMPORT, as real files use.
const IMPORT_ATTR: u64 = 0x9;
/// Module version 1.1 and library version 1, as real files use.
const MODULE_VERSION: u64 = 0x0101;
const LIBRARY_VERSION: u64 = 0x0001;
/// Segment alignment of PS4/PS5 modules (16 KiB pages).
const PAGE: u64 = 0x4000;

/// Which console's executable layout to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// ABI 0, DYNLIBDATA with offset-based SCE tags, PT_SCE_RELRO.
    Ps4,
    /// ABI 2, standard DT_* tags with vaddrs, moved module/library tags, PT_GNU_RELRO.
    Ps5,
}

/// What the module is.
#[derive(Debug, Clone)]
pub struct ModuleSpec {
    /// A PRX (`ET_SCE_DYNAMIC`, exports, module param) rather than the eboot.
    pub prx: bool,
    /// Module name (MODULE_INFO); for a PRX also the name of the library it exports.
    pub name: String,
    /// DT_SCE_ORIGINAL_FILENAME.
    pub original_filename: String,
}

/// Where an undefined symbol comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportTarget {
    /// Library name (e.g. `libc`).
    pub library: String,
    /// Module name (e.g. `libc`).
    pub module: String,
    /// Function or data.
    pub kind: SymbolKind,
}

/// One symbol the writer emitted, for tests and reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmittedSymbol {
    /// The plain name (e.g. `printf`).
    pub name: String,
    /// The name in the output (`NID#L#M`, or `module_start`).
    pub encoded: String,
    /// `(library, module)` for imports; `None` for exports and plain names.
    pub import_from: Option<(String, String)>,
}

/// The module bytes (plain ELF, before the fSELF wrapper) and what went into its symbol table.
#[derive(Debug)]
pub struct Written {
    /// The ELF bytes.
    pub elf: Vec<u8>,
    /// Its symbol table without entry 0.
    pub symbols: Vec<EmittedSymbol>,
    /// Indices into the ELF's program headers of the segments an fSELF must carry.
    pub carried_segments: Vec<usize>,
}

struct Sym {
    encoded: String,
    plain: String,
    info: u8,
    shndx: u16,
    value: u64,
    size: u64,
    import_from: Option<(String, String)>,
}

#[derive(Default)]
struct StrTab {
    bytes: Vec<u8>,
    index: HashMap<String, u32>,
}

impl StrTab {
    fn new() -> Self {
        StrTab {
            bytes: vec![0],
            index: HashMap::new(),
        }
    }
    fn add(&mut self, s: &str) -> u32 {
        if let Some(&o) = self.index.get(s) {
            return o;
        }
        let o = self.bytes.len() as u32;
        self.bytes.extend_from_slice(s.as_bytes());
        self.bytes.push(0);
        self.index.insert(s.to_string(), o);
        o
    }
}

/// The SysV ELF hash.
pub fn elf_hash(name: &[u8]) -> u32 {
    let mut h: u32 = 0;
    for &c in name {
        h = (h << 4).wrapping_add(u32::from(c));
        let g = h & 0xF000_0000;
        if g != 0 {
            h ^= g >> 24;
        }
        h &= !g;
    }
    h
}

fn hash_table(names: &[&str]) -> Vec<u8> {
    let nchain = names.len() as u32;
    // Bucket counts as GNU ld picks them: a prime near half the symbol count.
    const PRIMES: [u32; 12] = [1, 3, 17, 37, 67, 97, 131, 197, 263, 521, 1031, 2053];
    let nbucket = PRIMES
        .iter()
        .copied()
        .rfind(|&p| p <= (nchain / 2).max(1))
        .unwrap_or(1);
    let mut buckets = vec![0u32; nbucket as usize];
    let mut chain = vec![0u32; nchain as usize];
    for (i, name) in names.iter().enumerate().skip(1) {
        let b = (elf_hash(name.as_bytes()) % nbucket) as usize;
        // Append at the chain head; iteration order does not matter for lookups.
        chain[i] = buckets[b];
        buckets[b] = i as u32;
    }
    let mut out = Vec::new();
    out.extend_from_slice(&nbucket.to_le_bytes());
    out.extend_from_slice(&nchain.to_le_bytes());
    for v in buckets.iter().chain(chain.iter()) {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

fn align(v: u64, a: u64) -> u64 {
    v.div_ceil(a) * a
}

fn pad_to(buf: &mut Vec<u8>, a: usize) {
    while !buf.len().is_multiple_of(a) {
        buf.push(0);
    }
}

struct Phdr {
    typ: u32,
    flags: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
    memsz: u64,
    align: u64,
}

/// LINKED without the relocations against the symbols NULL_WEAK (dynsym indexes), their
/// values (the addends) written into the segment bytes instead.
fn resolve_null_weak(linked: &Linked, null_weak: &[usize]) -> Result<Linked> {
    let mut out = linked.clone();
    let mut patches = Vec::new();
    for list in [&mut out.rela_dyn, &mut out.rela_plt] {
        list.retain(|r| {
            let hit = null_weak.contains(&(r.sym as usize));
            if hit {
                patches.push(*r);
            }
            !hit
        });
    }
    for r in patches {
        let name = &linked.dynsyms[r.sym as usize].name;
        ensure!(
            matches!(r.typ, R_X86_64_64 | R_X86_64_GLOB_DAT | R_X86_64_JUMP_SLOT),
            "relocation type {} at {:#x} against the undefined weak symbol `{name}`: only \
             address-sized references (R_X86_64_64, GLOB_DAT, JUMP_SLOT) can be resolved to NULL",
            r.typ,
            r.offset
        );
        let load = out
            .loads
            .iter_mut()
            .find(|l| r.offset >= l.vaddr && r.offset + 8 <= l.vaddr + l.bytes.len() as u64)
            .with_context(|| {
                format!(
                    "relocation at {:#x} against the undefined weak symbol `{name}` is outside \
                     the file bytes of every segment",
                    r.offset
                )
            })?;
        let at = (r.offset - load.vaddr) as usize;
        load.bytes[at..at + 8].copy_from_slice(&r.addend.to_le_bytes());
    }
    Ok(out)
}

/// Writes the module. `resolve` says which library and module export an undefined symbol.
pub fn write(
    linked: &Linked,
    spec: &ModuleSpec,
    layout: Layout,
    resolve: &dyn Fn(&str) -> Result<ImportTarget>,
) -> Result<Written> {
    // Addresses come from lld; keep them in a range where the arithmetic below cannot overflow.
    for l in &linked.loads {
        ensure!(
            l.vaddr.checked_add(l.memsz).is_some_and(|e| e < 1 << 36)
                && (l.bytes.len() as u64) <= l.memsz,
            "segment at {:#x} (+{:#x}) is outside the 64 GiB a module may span",
            l.vaddr,
            l.memsz
        );
    }

    // 0. A weak undefined symbol that nothing exports is NULL at run time (as the console's
    // loader and ld.so leave it): it is not imported, and each place lld asked the loader to
    // patch with its address gets the addend (S + A with S = 0) written in directly.
    let null_weak: Vec<usize> = linked
        .dynsyms
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, s)| s.is_undefined() && s.bind() == 2 && resolve(&s.name).is_err())
        .map(|(i, _)| i)
        .collect();
    let patched;
    let linked = if null_weak.is_empty() {
        linked
    } else {
        patched = resolve_null_weak(linked, &null_weak)?;
        &patched
    };

    // 1. Classify lld's dynamic symbols.
    struct Imp {
        old: usize,
        name: String,
        target: ImportTarget,
        weak: bool,
        tls: bool,
    }
    let mut imports = Vec::new();
    let mut exports = Vec::new();
    for (i, s) in linked.dynsyms.iter().enumerate().skip(1) {
        if null_weak.contains(&i) {
            continue;
        }
        if s.is_undefined() {
            let target = resolve(&s.name)?;
            imports.push(Imp {
                old: i,
                name: s.name.clone(),
                target,
                weak: s.bind() == 2,
                tls: s.typ() == STT_TLS,
            });
        } else if spec.prx {
            exports.push(i);
        }
    }

    // Module ids follow module names, so this is also (module id, library, name) order.
    imports.sort_by(|a, b| {
        (&a.target.module, &a.target.library, &a.name).cmp(&(
            &b.target.module,
            &b.target.library,
            &b.name,
        ))
    });

    // 2. Module and library ids: own module/library 0, imports from 1 in name order.
    let modules: BTreeSet<&str> = imports.iter().map(|i| i.target.module.as_str()).collect();
    let module_id: BTreeMap<&str, u16> = modules
        .iter()
        .enumerate()
        .map(|(i, m)| (*m, i as u16 + 1))
        .collect();
    let libs: BTreeSet<(u16, &str)> = imports
        .iter()
        .map(|i| {
            (
                module_id[i.target.module.as_str()],
                i.target.library.as_str(),
            )
        })
        .collect();
    let lib_id: BTreeMap<(u16, &str), u16> = libs
        .iter()
        .enumerate()
        .map(|(i, k)| (*k, i as u16 + 1))
        .collect();
    ensure!(
        lib_id.len() < 0xFFFF,
        "too many imported libraries ({})",
        lib_id.len()
    );

    // 3. The new symbol table.
    let mut syms: Vec<Sym> = vec![Sym {
        encoded: String::new(),
        plain: String::new(),
        info: 0,
        shndx: 0,
        value: 0,
        size: 0,
        import_from: None,
    }];
    let mut remap: HashMap<usize, u32> = HashMap::new();
    for imp in &imports {
        let m = module_id[imp.target.module.as_str()];
        let l = lib_id[&(m, imp.target.library.as_str())];
        let typ = if imp.tls {
            STT_TLS
        } else {
            match imp.target.kind {
                SymbolKind::Func => STT_FUNC,
                SymbolKind::Data => STT_OBJECT,
            }
        };
        let bind = if imp.weak { 2 } else { STB_GLOBAL };
        remap.insert(imp.old, syms.len() as u32);
        syms.push(Sym {
            encoded: format!(
                "{}#{}#{}",
                aps5_nid::nid(&imp.name),
                aps5_nid::encode_id(l),
                aps5_nid::encode_id(m)
            ),
            plain: imp.name.clone(),
            info: (bind << 4) | typ,
            shndx: 0,
            value: 0,
            size: 0,
            import_from: Some((imp.target.library.clone(), imp.target.module.clone())),
        });
    }
    let mut defined: Vec<(String, usize)> = exports
        .iter()
        .map(|&i| {
            let s = &linked.dynsyms[i];
            let plain = matches!(s.name.as_str(), "module_start" | "module_stop");
            let encoded = if plain {
                s.name.clone()
            } else {
                format!("{}#A#A", aps5_nid::nid(&s.name))
            };
            (encoded, i)
        })
        .collect();
    // Exports by NID, then the plain entry points.
    defined.sort_by_key(|(e, _)| (!e.contains('#'), e.clone()));
    for (encoded, i) in defined {
        let s = &linked.dynsyms[i];
        remap.insert(i, syms.len() as u32);
        let typ = match s.typ() {
            0 => STT_FUNC,
            t => t,
        };
        syms.push(Sym {
            encoded,
            plain: s.name.clone(),
            info: (s.bind().max(1) << 4) | typ,
            // Sony files have no section headers; any non-zero index means "defined".
            shndx: 1,
            value: s.value,
            size: s.size,
            import_from: None,
        });
    }

    // 4. Relocations against the new symbol table.
    let fix = |r: &Rela| -> Result<Rela> {
        let sym = if r.sym == 0 {
            0
        } else {
            *remap.get(&(r.sym as usize)).with_context(|| {
                format!(
                    "relocation at {:#x} uses symbol `{}`, which the module neither imports nor exports",
                    r.offset,
                    linked
                        .dynsyms
                        .get(r.sym as usize)
                        .map_or("?", |s| s.name.as_str())
                )
            })?
        };
        Ok(Rela { sym, ..*r })
    };
    let rela: Vec<Rela> = linked.rela_dyn.iter().map(fix).collect::<Result<_>>()?;
    let jmprel: Vec<Rela> = linked.rela_plt.iter().map(fix).collect::<Result<_>>()?;
    let relacount = rela
        .iter()
        .take_while(|r| r.typ == R_X86_64_RELATIVE)
        .count() as u64;

    // 5. Strings: needed modules, libraries, own names, symbols.
    let mut strtab = StrTab::new();
    let needed_files: Vec<u32> = modules
        .iter()
        .map(|m| strtab.add(&format!("{m}.prx")))
        .collect();
    let module_names: Vec<(u16, u32)> = modules
        .iter()
        .map(|m| (module_id[m], strtab.add(m)))
        .collect();
    let lib_names: Vec<(u16, u32)> = libs.iter().map(|k| (lib_id[k], strtab.add(k.1))).collect();
    let own_name = strtab.add(&spec.name);
    let filename = strtab.add(&spec.original_filename);
    let sym_names: Vec<u32> = syms.iter().map(|s| strtab.add(&s.encoded)).collect();

    let mut symtab = Vec::with_capacity(syms.len() * 24);
    for (s, &name) in syms.iter().zip(&sym_names) {
        let name = if s.encoded.is_empty() { 0 } else { name };
        symtab.extend_from_slice(&name.to_le_bytes());
        symtab.push(s.info);
        symtab.push(0);
        symtab.extend_from_slice(&s.shndx.to_le_bytes());
        symtab.extend_from_slice(&s.value.to_le_bytes());
        symtab.extend_from_slice(&s.size.to_le_bytes());
    }
    let encode_relas = |rs: &[Rela]| {
        let mut out = Vec::with_capacity(rs.len() * 24);
        for r in rs {
            out.extend_from_slice(&r.offset.to_le_bytes());
            out.extend_from_slice(&((u64::from(r.sym) << 32) | u64::from(r.typ)).to_le_bytes());
            out.extend_from_slice(&r.addend.to_le_bytes());
        }
        out
    };
    let names: Vec<&str> = syms.iter().map(|s| s.encoded.as_str()).collect();
    let hash = hash_table(&names);

    // Fingerprint: 20 bytes of SHA-1 over the loaded bytes, padded like Sony's 24-byte field.
    let mut h = Sha1::new();
    for l in &linked.loads {
        h.update(l.vaddr.to_le_bytes());
        h.update(&l.bytes);
    }
    h.update(spec.name.as_bytes());
    let mut fingerprint = h.finalize().to_vec();
    fingerprint.resize(24, 0);

    // 6. Blob of SCE dynamic data: fingerprint, strtab, symtab, jmprel, rela, hash (offsets known).
    let mut blob = fingerprint;
    let strtab_off = blob.len() as u64;
    blob.extend_from_slice(&strtab.bytes);
    pad_to(&mut blob, 8);
    let symtab_off = blob.len() as u64;
    blob.extend_from_slice(&symtab);
    let jmprel_off = blob.len() as u64;
    blob.extend_from_slice(&encode_relas(&jmprel));
    let rela_off = blob.len() as u64;
    blob.extend_from_slice(&encode_relas(&rela));
    let hash_off = blob.len() as u64;
    blob.extend_from_slice(&hash);
    pad_to(&mut blob, 16);
    let dynamic_off = blob.len() as u64;

    // Where the blob goes: PS4 = unloaded DYNLIBDATA (tags hold offsets into it);
    // PS5 = a loaded segment after the data (tags hold vaddrs).
    let load_end = linked
        .loads
        .iter()
        .map(|l| l.vaddr + l.memsz)
        .max()
        .unwrap_or(0);
    let blob_vaddr = align(load_end, PAGE);
    let base = match layout {
        Layout::Ps4 => 0,
        Layout::Ps5 => blob_vaddr,
    };
    let got_plt = linked.got_plt.map(|(a, _)| a);

    // 7. The dynamic table.
    let mut d: Vec<(u64, u64)> = Vec::new();
    let ps5 = layout == Layout::Ps5;
    let t = |ps4: u64, ps5tag: u64| if ps5 { ps5tag } else { ps4 };
    d.push((t(DT_SCE_HASH, DT_HASH), base + hash_off));
    d.push((DT_SCE_HASHSZ, hash.len() as u64));
    d.push((t(DT_SCE_STRTAB, DT_STRTAB), base + strtab_off));
    d.push((t(DT_SCE_STRSZ, DT_STRSZ), strtab.bytes.len() as u64));
    d.push((t(DT_SCE_SYMTAB, DT_SYMTAB), base + symtab_off));
    d.push((DT_SCE_SYMTABSZ, symtab.len() as u64));
    d.push((t(DT_SCE_SYMENT, DT_SYMENT), 24));
    d.push((t(DT_SCE_RELA, DT_RELA), base + rela_off));
    d.push((t(DT_SCE_RELASZ, DT_RELASZ), rela.len() as u64 * 24));
    d.push((t(DT_SCE_RELAENT, DT_RELAENT), 24));
    if ps5 && relacount > 0 {
        d.push((DT_RELACOUNT, relacount));
    }
    if let Some(g) = got_plt {
        d.push((t(DT_SCE_PLTGOT, DT_PLTGOT), g));
    }
    d.push((t(DT_SCE_JMPREL, DT_JMPREL), base + jmprel_off));
    d.push((t(DT_SCE_PLTRELSZ, DT_PLTRELSZ), jmprel.len() as u64 * 24));
    d.push((t(DT_SCE_PLTREL, DT_PLTREL), 7));
    d.extend(linked.carried_dynamic.iter().copied());
    d.push((DT_DEBUG, 0));
    if linked.textrel {
        d.push((DT_TEXTREL, 0));
        d.push((DT_FLAGS, linked::DF_TEXTREL));
    }
    for &f in &needed_files {
        d.push((DT_NEEDED, u64::from(f)));
    }
    for &(id, name) in &module_names {
        d.push((
            t(DT_SCE_NEEDED_MODULE, DT_PS5_NEEDED_MODULE),
            (u64::from(id) << 48) | (MODULE_VERSION << 32) | u64::from(name),
        ));
    }
    if spec.prx {
        d.push((
            t(DT_SCE_EXPORT_LIB, DT_PS5_EXPORT_LIB),
            (LIBRARY_VERSION << 32) | u64::from(own_name),
        ));
        d.push((DT_SCE_EXPORT_LIB_ATTR, EXPORT_ATTR));
    }
    for &(id, name) in &lib_names {
        d.push((
            t(DT_SCE_IMPORT_LIB, DT_PS5_IMPORT_LIB),
            (u64::from(id) << 48) | (LIBRARY_VERSION << 32) | u64::from(name),
        ));
        d.push((DT_SCE_IMPORT_LIB_ATTR, (u64::from(id) << 48) | IMPORT_ATTR));
    }
    d.push((DT_SCE_FINGERPRINT, base));
    d.push((
        t(DT_SCE_ORIGINAL_FILENAME, DT_PS5_ORIGINAL_FILENAME),
        u64::from(filename),
    ));
    d.push((
        t(DT_SCE_MODULE_INFO, DT_PS5_MODULE_INFO),
        (MODULE_VERSION << 32) | u64::from(own_name),
    ));
    d.push((DT_SCE_MODULE_ATTR, 0));
    d.push((0, 0));
    for (tag, val) in &d {
        blob.extend_from_slice(&tag.to_le_bytes());
        blob.extend_from_slice(&val.to_le_bytes());
    }
    let dynamic_size = d.len() as u64 * 16;

    // 8. Segments. File offset = vaddr + PAGE keeps offsets congruent to addresses and leaves
    // the first page for the ELF and program headers, as Sony's files do.
    let mut loads = linked.loads.clone();
    if let Some(g) = got_plt {
        // GOT[0] holds the address of the dynamic table; lld's copy is dropped.
        let value = if ps5 { base + dynamic_off } else { 0 };
        if let Some(l) = loads
            .iter_mut()
            .find(|l| l.vaddr <= g && g + 8 <= l.vaddr + l.bytes.len() as u64)
        {
            let at = (g - l.vaddr) as usize;
            l.bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
        }
    }
    let mut ph: Vec<Phdr> = Vec::new();
    let mut carried = Vec::new();
    let mut file_end = PAGE;
    for l in &loads {
        let typ = match (l.role, layout) {
            (1, Layout::Ps4) => PT_SCE_RELRO,
            _ => linked::PT_LOAD,
        };
        let flags = match (l.role, layout) {
            // Relro is written by the loader before it is protected.
            (1, Layout::Ps5) => 6,
            _ => l.flags,
        };
        carried.push(ph.len());
        ph.push(Phdr {
            typ,
            flags,
            offset: l.vaddr + PAGE,
            vaddr: l.vaddr,
            filesz: l.bytes.len() as u64,
            memsz: l.memsz,
            align: PAGE,
        });
        file_end = file_end.max(l.vaddr + PAGE + l.bytes.len() as u64);
    }
    let blob_offset = match layout {
        Layout::Ps4 => align(file_end, 16),
        Layout::Ps5 => blob_vaddr + PAGE,
    };
    if ps5 {
        carried.push(ph.len());
        ph.push(Phdr {
            typ: linked::PT_LOAD,
            flags: 4,
            offset: blob_offset,
            vaddr: blob_vaddr,
            filesz: blob.len() as u64,
            memsz: blob.len() as u64,
            align: PAGE,
        });
    }
    let off_of = |vaddr: u64| vaddr + PAGE;
    let param = if spec.prx {
        let (a, s) = linked
            .module_param
            .context("the module has no .sce_module_param section (crt_module.c missing?)")?;
        (PT_SCE_MODULE_PARAM, a, s)
    } else {
        let (a, s) = linked
            .process_param
            .context("the eboot has no .sce_process_param section (crt0.c missing?)")?;
        (PT_SCE_PROCPARAM, a, s)
    };
    ph.push(Phdr {
        typ: param.0,
        flags: 4,
        offset: off_of(param.1),
        vaddr: param.1,
        filesz: param.2,
        memsz: param.2,
        align: 8,
    });
    ph.push(Phdr {
        typ: linked::PT_DYNAMIC,
        // PS4 files mark it RW (as OpenOrbis's do); on PS5 it lies in the read-only segment.
        flags: if ps5 { 4 } else { 6 },
        offset: blob_offset + dynamic_off,
        vaddr: if ps5 { blob_vaddr + dynamic_off } else { 0 },
        filesz: dynamic_size,
        memsz: dynamic_size,
        align: 8,
    });
    if !spec.prx {
        let (a, s) = linked
            .interp
            .context("the eboot has no .interp section (crt0.c missing?)")?;
        ph.push(Phdr {
            typ: PT_INTERP,
            flags: 4,
            offset: off_of(a),
            vaddr: a,
            filesz: s,
            memsz: s,
            align: 1,
        });
    }
    // Sony's files always carry a PT_TLS, empty when there is no TLS.
    let (tv, tf, tm, ta) = linked.tls.unwrap_or((0, 0, 0, 1));
    ph.push(Phdr {
        typ: linked::PT_TLS,
        flags: 4,
        offset: if tm > 0 { off_of(tv) } else { 0 },
        vaddr: tv,
        filesz: tf,
        memsz: tm,
        align: ta,
    });
    if let Some((a, s)) = linked.eh_frame_hdr {
        ph.push(Phdr {
            typ: linked::PT_GNU_EH_FRAME,
            flags: 4,
            offset: off_of(a),
            vaddr: a,
            filesz: s,
            memsz: s,
            align: 4,
        });
    }
    match layout {
        Layout::Ps4 => {
            carried.push(ph.len());
            ph.push(Phdr {
                typ: PT_SCE_DYNLIBDATA,
                flags: 4,
                offset: blob_offset,
                vaddr: 0,
                filesz: blob.len() as u64,
                memsz: 0,
                align: 16,
            });
        }
        Layout::Ps5 => {
            if let Some((a, s)) = linked.relro {
                ph.push(Phdr {
                    typ: PT_GNU_RELRO,
                    flags: 4,
                    offset: off_of(a),
                    vaddr: a,
                    filesz: s,
                    memsz: s,
                    align: 1,
                });
            }
        }
    }
    ensure!(
        64 + ph.len() as u64 * 56 <= PAGE,
        "too many program headers"
    );

    // 9. The file.
    let total = blob_offset + blob.len() as u64;
    ensure!(
        total <= 1 << 32,
        "the module would be {total} bytes; the SDK writes files below 4 GiB"
    );
    for p in &ph {
        ensure!(
            p.typ == linked::PT_TLS && p.memsz == 0 || p.offset + p.filesz <= total,
            "segment {:#x} at file offset {:#x} (+{:#x}) lies outside the file",
            p.typ,
            p.offset,
            p.filesz
        );
    }
    let mut out = vec![0u8; usize::try_from(total)?];
    let e_type = if spec.prx {
        ET_SCE_DYNAMIC
    } else {
        ET_SCE_DYNEXEC
    };
    let hdr = &mut out[..64];
    hdr[..4].copy_from_slice(b"\x7fELF");
    hdr[4] = 2; // ELFCLASS64
    hdr[5] = 1; // little endian
    hdr[6] = 1; // EV_CURRENT
    hdr[7] = 9; // ELFOSABI_FREEBSD
    hdr[8] = if ps5 { 2 } else { 0 };
    hdr[16..18].copy_from_slice(&e_type.to_le_bytes());
    hdr[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    hdr[20..24].copy_from_slice(&1u32.to_le_bytes());
    let entry = if spec.prx { 0 } else { linked.entry };
    hdr[24..32].copy_from_slice(&entry.to_le_bytes());
    hdr[32..40].copy_from_slice(&64u64.to_le_bytes());
    hdr[52..54].copy_from_slice(&64u16.to_le_bytes());
    hdr[54..56].copy_from_slice(&56u16.to_le_bytes());
    hdr[56..58].copy_from_slice(&(ph.len() as u16).to_le_bytes());
    for (i, p) in ph.iter().enumerate() {
        let o = 64 + i * 56;
        let e = &mut out[o..o + 56];
        e[0..4].copy_from_slice(&p.typ.to_le_bytes());
        e[4..8].copy_from_slice(&p.flags.to_le_bytes());
        e[8..16].copy_from_slice(&p.offset.to_le_bytes());
        e[16..24].copy_from_slice(&p.vaddr.to_le_bytes());
        e[24..32].copy_from_slice(&p.vaddr.to_le_bytes());
        e[32..40].copy_from_slice(&p.filesz.to_le_bytes());
        e[40..48].copy_from_slice(&p.memsz.to_le_bytes());
        e[48..56].copy_from_slice(&p.align.to_le_bytes());
    }
    for l in &loads {
        let o = (l.vaddr + PAGE) as usize;
        out[o..o + l.bytes.len()].copy_from_slice(&l.bytes);
    }
    let o = blob_offset as usize;
    out[o..o + blob.len()].copy_from_slice(&blob);
    if out.len() < 64 {
        bail!("internal error: file too small");
    }

    let symbols = syms
        .into_iter()
        .skip(1)
        .map(|s| EmittedSymbol {
            name: s.plain,
            encoded: s.encoded,
            import_from: s.import_from,
        })
        .collect();
    Ok(Written {
        elf: out,
        symbols,
        carried_segments: carried,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysv_hash_known_values() {
        // Values from the System V ABI's reference implementation.
        assert_eq!(elf_hash(b""), 0);
        assert_eq!(elf_hash(b"printf"), 0x077905a6);
        assert_eq!(elf_hash(b"exit"), 0x0006cf04);
    }
}
