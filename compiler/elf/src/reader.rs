//! Decoding a plain (or unwrapped) PS4/PS5 ELF image into a [`Module`].
//!
//! Every read is bounds-checked; every inconsistency becomes an [`Error`] naming the file
//! offset of the offending field.

use std::collections::{HashMap, HashSet};

use goblin::container::{Container as GContainer, Ctx, Endian};
use goblin::elf::dynamic as gdt;
use goblin::elf::program_header::{self as gpt, ProgramHeader};

use crate::error::{Error, ErrorKind, Result};
use crate::image::Image;
use crate::model::*;
use crate::names::{dt, pt};
use crate::rd;

const DYN_SIZE: u64 = 16;
const SYM_SIZE: u64 = 24;
const RELA_SIZE: u64 = 24;
const R_X86_64_RELATIVE: u32 = 8;
const FINGERPRINT_LEN: u64 = 20;
const PROCPARAM_MAGIC: u32 = 0x4942_524F;
const MODULE_PARAM_MAGIC: u32 = 0x3C13_F4BF;
const PROCPARAM_FIELDS: [&str; 8] = [
    "process_name",
    "main_thread_name",
    "main_thread_priority",
    "main_thread_stack_size",
    "libc_param",
    "mem_param",
    "fs_param",
    "preload",
];

/// A dynamic entry and where it sits in the file.
#[derive(Clone, Copy)]
struct Tag {
    value: u64,
    at: u64,
}

struct Reader<'i, 'a> {
    img: &'i Image<'a>,
    segments: Vec<Segment>,
    layout: DynamicLayout,
    /// PS4: (file offset, size) of PT_SCE_DYNLIBDATA.
    dynlib: Option<(u64, u64)>,
    warnings: Vec<String>,
}

/// Parses a plain ELF image. `self_platform` is the platform named by the SELF magic, if any.
pub(crate) fn parse_elf(
    img: &Image<'_>,
    container: Container,
    self_platform: Option<Platform>,
) -> Result<Module> {
    let len = img.len();
    let Some(data) = img.get(0, 64) else {
        return Err(Error::truncated(
            0,
            format!("ELF header needs 64 bytes but the file has {len}"),
        ));
    };
    if data[0..4] != *b"\x7fELF" {
        return Err(Error::new(
            ErrorKind::NotExecutable,
            0,
            format!(
                "not an ELF or SELF file (magic {:02x} {:02x} {:02x} {:02x})",
                data[0], data[1], data[2], data[3]
            ),
        ));
    }
    if data[4] != 2 || data[5] != 1 {
        return Err(Error::new(
            ErrorKind::NotExecutable,
            4,
            format!(
                "ELF class {} / data encoding {}: PS4/PS5 files are 64-bit little-endian",
                data[4], data[5]
            ),
        ));
    }
    let header = goblin::elf::Elf::parse_header(data)
        .map_err(|e| Error::malformed(0, format!("ELF header: {e}")))?;
    if header.e_machine != goblin::elf::header::EM_X86_64 {
        return Err(Error::new(
            ErrorKind::NotExecutable,
            0x12,
            format!(
                "e_machine is {}, PS4/PS5 code is x86-64 (62)",
                header.e_machine
            ),
        ));
    }
    let os_abi = data[7];
    let abi_version = data[8];
    let mut warnings = Vec::new();
    let platform = match abi_version {
        2 => Platform::Ps5,
        0 => Platform::Ps4,
        other => {
            let p = self_platform.unwrap_or(Platform::Ps4);
            warnings.push(format!(
                "EI_ABIVERSION is {other} (PS4 uses 0, PS5 2); reading it as {p:?}"
            ));
            p
        }
    };
    if let Some(sp) = self_platform
        && sp != platform
    {
        warnings.push(format!(
            "the SELF magic says {sp:?} but EI_ABIVERSION {abi_version} says {platform:?}"
        ));
    }

    // Program headers (goblin).
    let phnum = u64::from(header.e_phnum);
    if phnum > 0 && header.e_phentsize != 56 {
        return Err(Error::malformed(
            0x36,
            format!("e_phentsize is {}, expected 56", header.e_phentsize),
        ));
    }
    let phoff = header.e_phoff;
    if phoff.checked_add(phnum * 56).is_none_or(|end| end > len) {
        return Err(Error::truncated(
            0x20,
            format!(
                "program header table ({phnum} entries at e_phoff {phoff:#x}) runs past the end of the file ({len:#x} bytes)"
            ),
        ));
    }
    let ctx = Ctx::new(GContainer::Big, Endian::Little);
    let ph_bytes = img
        .get(phoff, phnum * 56)
        .ok_or_else(|| Error::truncated(phoff, "program header table is not stored in the file"))?;
    let phdrs = ProgramHeader::parse(ph_bytes, 0, phnum as usize, ctx)
        .map_err(|e| Error::truncated(phoff, format!("program headers: {e}")))?;
    let segments: Vec<Segment> = phdrs
        .iter()
        .enumerate()
        .map(|(i, p)| Segment {
            index: i as u16,
            p_type: p.p_type,
            flags: p.p_flags,
            offset: p.p_offset,
            vaddr: p.p_vaddr,
            paddr: p.p_paddr,
            filesz: p.p_filesz,
            memsz: p.p_memsz,
            align: p.p_align,
        })
        .collect();

    let dynlib = segments
        .iter()
        .find(|s| s.p_type == pt::SCE_DYNLIBDATA)
        .map(|s| (s.offset, s.filesz, phoff + u64::from(s.index) * 56));
    if let Some((off, size, at)) = dynlib
        && off.checked_add(size).is_none_or(|end| end > len)
    {
        return Err(Error::truncated(
            at + 8,
            format!(
                "PT_SCE_DYNLIBDATA ({size:#x} bytes at {off:#x}) runs past the end of the file ({len:#x} bytes)"
            ),
        ));
    }

    let mut r = Reader {
        img,
        segments,
        layout: DynamicLayout::None,
        dynlib: dynlib.map(|(o, s, _)| (o, s)),
        warnings,
    };

    let interpreter = r.interpreter(phoff)?;
    let tls = r
        .segments
        .iter()
        .find(|s| s.p_type == gpt::PT_TLS)
        .map(|s| Tls {
            vaddr: s.vaddr,
            filesz: s.filesz,
            memsz: s.memsz,
            align: s.align,
        });

    let dynamic = r.dynamic_table(phoff)?;
    let mut m = Module {
        format: Format {
            platform,
            container,
            os_abi,
            abi_version,
        },
        elf_type: header.e_type,
        entry: header.e_entry,
        segments: Vec::new(),
        dynamic_layout: DynamicLayout::None,
        library_tag_order: None,
        dynamic: dynamic.iter().map(|(e, _)| *e).collect(),
        module_info: None,
        needed_modules: Vec::new(),
        export_libraries: Vec::new(),
        import_libraries: Vec::new(),
        needed: Vec::new(),
        symbols: Vec::new(),
        relocations: Vec::new(),
        tls,
        init: None,
        fini: None,
        preinit_array: None,
        init_array: None,
        fini_array: None,
        pltgot: None,
        process_param: None,
        module_param: None,
        fingerprint: None,
        original_filename: None,
        interpreter,
        warnings: Vec::new(),
    };
    if !dynamic.is_empty() {
        r.decode_dynamic(&dynamic, &mut m)?;
    }
    m.process_param = r.process_param(platform, &m.relocations)?;
    m.module_param = r.module_param(platform)?;
    m.dynamic_layout = r.layout;
    m.segments = std::mem::take(&mut r.segments);
    m.warnings = r.warnings;
    if m.is_payload() {
        // ps5-payload-sdk output: a plain SysV ELF for the PS5's ELF loader.
        m.format.platform = Platform::Ps5;
    } else if os_abi != 9 {
        m.warnings
            .insert(0, format!("EI_OSABI is {os_abi}, expected 9 (FreeBSD)"));
    }
    Ok(m)
}

/// First occurrence of a tag.
fn first(dynamic: &[(DynamicEntry, u64)], tag: u64) -> Option<Tag> {
    dynamic
        .iter()
        .find(|(e, _)| e.tag == tag)
        .map(|(e, at)| Tag {
            value: e.value,
            at: *at,
        })
}

fn first_of(dynamic: &[(DynamicEntry, u64)], tags: &[u64]) -> Option<Tag> {
    dynamic
        .iter()
        .find(|(e, _)| tags.contains(&e.tag))
        .map(|(e, at)| Tag {
            value: e.value,
            at: *at,
        })
}

fn all(dynamic: &[(DynamicEntry, u64)], tag: u64) -> impl Iterator<Item = Tag> + '_ {
    dynamic
        .iter()
        .filter(move |(e, _)| e.tag == tag)
        .map(|(e, at)| Tag {
            value: e.value,
            at: *at,
        })
}

impl<'i, 'a> Reader<'i, 'a> {
    fn len(&self) -> u64 {
        self.img.len()
    }

    /// `len` bytes at image offset `off`, or a truncation error naming `at`.
    fn bytes(&self, off: u64, len: u64, at: u64, what: &str) -> Result<&'a [u8]> {
        self.img.get(off, len).ok_or_else(|| {
            Error::truncated(
                at,
                format!("{what} ({len:#x} bytes at {off:#x}) is not stored in the file"),
            )
        })
    }

    fn interpreter(&self, phoff: u64) -> Result<Option<String>> {
        let Some(s) = self.segments.iter().find(|s| s.p_type == gpt::PT_INTERP) else {
            return Ok(None);
        };
        if s.filesz == 0 {
            return Ok(None);
        }
        let bytes = self.img.get(s.offset, s.filesz).ok_or_else(|| {
            Error::truncated(
                phoff + u64::from(s.index) * 56 + 8,
                format!(
                    "PT_INTERP ({:#x} bytes at {:#x}) runs past the end of the file",
                    s.filesz, s.offset
                ),
            )
        })?;
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Ok(Some(String::from_utf8_lossy(&bytes[..end]).into_owned()))
    }

    /// Reads PT_DYNAMIC up to DT_NULL, with each entry's file offset.
    fn dynamic_table(&self, phoff: u64) -> Result<Vec<(DynamicEntry, u64)>> {
        let mut dyns = self.segments.iter().filter(|s| s.p_type == gpt::PT_DYNAMIC);
        let Some(s) = dyns.next() else {
            return Ok(Vec::new());
        };
        let bytes = self.img.get(s.offset, s.filesz).ok_or_else(|| {
            Error::truncated(
                phoff + u64::from(s.index) * 56 + 8,
                format!(
                    "PT_DYNAMIC ({:#x} bytes at {:#x}) runs past the end of the file ({:#x} bytes)",
                    s.filesz,
                    s.offset,
                    self.len()
                ),
            )
        })?;
        let count = s.filesz / DYN_SIZE;
        let mut out = Vec::with_capacity(count.min(4096) as usize);
        for i in 0..count {
            let tag = rd::u64(bytes, i * DYN_SIZE).unwrap_or(0);
            let value = rd::u64(bytes, i * DYN_SIZE + 8).unwrap_or(0);
            if tag == gdt::DT_NULL {
                break;
            }
            out.push((DynamicEntry { tag, value }, s.offset + i * DYN_SIZE));
        }
        Ok(out)
    }

    /// File offset of `size` bytes at base-relative address `vaddr` (file-backed part of a
    /// PT_LOAD segment).
    fn vaddr_to_offset(&self, vaddr: u64, size: u64) -> Option<u64> {
        self.segments
            .iter()
            .filter(|s| is_loaded(s))
            .find(|s| {
                vaddr >= s.vaddr
                    && vaddr
                        .checked_add(size)
                        .is_some_and(|end| end - s.vaddr <= s.filesz)
            })
            .and_then(|s| s.offset.checked_add(vaddr - s.vaddr))
            .filter(|o| o.checked_add(size).is_some_and(|end| end <= self.len()))
    }

    /// Whether `vaddr..vaddr+size` lies in some PT_LOAD (file-backed or not).
    fn vaddr_mapped(&self, vaddr: u64, size: u64) -> bool {
        self.segments.iter().filter(|s| is_loaded(s)).any(|s| {
            vaddr >= s.vaddr
                && vaddr
                    .checked_add(size)
                    .is_some_and(|end| end - s.vaddr <= s.memsz)
        })
    }

    /// Locates a table given by a dynamic entry: an offset into DYNLIBDATA (PS4) or a
    /// vaddr (PS5). Returns the file offset.
    fn table(&self, what: &str, tag: Tag, size: u64) -> Result<u64> {
        match self.layout {
            DynamicLayout::Ps4 => {
                let (base, len) = self.dynlib.ok_or_else(|| {
                    Error::malformed(
                        tag.at,
                        format!("{what} is given as a DYNLIBDATA offset but there is no PT_SCE_DYNLIBDATA segment"),
                    )
                })?;
                if tag.value.checked_add(size).is_none_or(|end| end > len) {
                    return Err(Error::truncated(
                        tag.at,
                        format!("{what} ({size:#x} bytes at DYNLIBDATA offset {:#x}) runs past the end of PT_SCE_DYNLIBDATA ({len:#x} bytes)", tag.value),
                    ));
                }
                Ok(base + tag.value)
            }
            _ => self.vaddr_to_offset(tag.value, size).ok_or_else(|| {
                Error::truncated(
                    tag.at,
                    format!(
                        "{what} ({size:#x} bytes at address {:#x}) is not inside the file-backed part of any PT_LOAD segment",
                        tag.value
                    ),
                )
            }),
        }
    }

    fn decode_dynamic(&mut self, dynamic: &[(DynamicEntry, u64)], m: &mut Module) -> Result<()> {
        let has = |t: u64| dynamic.iter().any(|(e, _)| e.tag == t);
        self.layout = if has(dt::SCE_STRTAB) || has(dt::SCE_SYMTAB) {
            DynamicLayout::Ps4
        } else {
            DynamicLayout::Ps5
        };
        let ps4 = self.layout == DynamicLayout::Ps4;
        if ps4 && self.dynlib.is_none() {
            let at = first_of(dynamic, &[dt::SCE_STRTAB, dt::SCE_SYMTAB]).map_or(0, |t| t.at);
            return Err(Error::malformed(
                at,
                "PS4 dynamic table (DT_SCE_STRTAB/SYMTAB) without a PT_SCE_DYNLIBDATA segment",
            ));
        }
        let pick = |ps4_tag: u64, ps5_tag: u64| {
            if ps4 {
                first(dynamic, ps4_tag)
            } else {
                first(dynamic, ps5_tag)
            }
        };

        // Fixed entry sizes.
        for (tag, want, name) in [
            (
                pick(dt::SCE_SYMENT, gdt::DT_SYMENT),
                SYM_SIZE,
                "symbol entry size",
            ),
            (
                pick(dt::SCE_RELAENT, gdt::DT_RELAENT),
                RELA_SIZE,
                "RELA entry size",
            ),
        ] {
            if let Some(t) = tag
                && t.value != want
            {
                return Err(Error::malformed(
                    t.at,
                    format!("{name} is {}, expected {want}", t.value),
                ));
            }
        }
        if let Some(t) = pick(dt::SCE_PLTREL, gdt::DT_PLTREL)
            && t.value != gdt::DT_RELA
        {
            return Err(Error::malformed(
                t.at,
                format!(
                    "PLT relocations are of kind {} (only RELA, 7, is used on PS4/PS5)",
                    t.value
                ),
            ));
        }

        // String table.
        let strtab = match (
            pick(dt::SCE_STRTAB, gdt::DT_STRTAB),
            pick(dt::SCE_STRSZ, gdt::DT_STRSZ),
        ) {
            (Some(t), Some(sz)) => {
                let off = self.table("string table", t, sz.value)?;
                Some((off, sz.value))
            }
            (Some(t), None) => {
                return Err(Error::malformed(
                    t.at,
                    "string table without a size tag (DT_STRSZ)",
                ));
            }
            _ => None,
        };
        let img = self.img;
        let string = |off: u64, what: &str, at: u64| -> Result<String> {
            let (base, size) = strtab.ok_or_else(|| {
                Error::malformed(
                    at,
                    format!("{what} names a string but there is no string table"),
                )
            })?;
            if off >= size {
                return Err(Error::malformed(
                    at,
                    format!(
                        "{what}: string offset {off:#x} is past the string table size {size:#x}"
                    ),
                ));
            }
            let table = img.get(base + off, size - off).ok_or_else(|| {
                Error::truncated(
                    at,
                    format!("{what}: string table is not stored in the file"),
                )
            })?;
            let end = table.iter().position(|&b| b == 0).ok_or_else(|| {
                Error::truncated(
                    base + off,
                    format!("{what}: string at offset {off:#x} has no terminating NUL inside the string table"),
                )
            })?;
            Ok(String::from_utf8_lossy(&table[..end]).into_owned())
        };

        // DT_NEEDED.
        for t in all(dynamic, gdt::DT_NEEDED) {
            m.needed.push(string(t.value, "DT_NEEDED", t.at)?);
        }

        // Modules.
        let module_attrs: HashMap<u16, u64> = all(dynamic, dt::SCE_MODULE_ATTR)
            .map(|t| ((t.value >> 48) as u16, t.value & 0xFFFF_FFFF_FFFF))
            .collect();
        let module_ref = |t: Tag, what: &str| -> Result<ModuleRef> {
            let id = (t.value >> 48) as u16;
            Ok(ModuleRef {
                id,
                name: string(t.value & 0xFFFF_FFFF, what, t.at)?,
                version_major: (t.value >> 40) as u8,
                version_minor: (t.value >> 32) as u8,
                attributes: module_attrs.get(&id).copied(),
            })
        };
        if let Some(t) = first_of(dynamic, &[dt::SCE_MODULE_INFO, dt::SCE_MODULE_INFO_PS5]) {
            m.module_info = Some(module_ref(t, "DT_SCE_MODULE_INFO")?);
        }
        for (e, at) in dynamic {
            if e.tag == dt::SCE_NEEDED_MODULE || e.tag == dt::SCE_NEEDED_MODULE_PS5 {
                let t = Tag {
                    value: e.value,
                    at: *at,
                };
                m.needed_modules
                    .push(module_ref(t, "DT_SCE_NEEDED_MODULE")?);
            }
        }
        if let Some(t) = first_of(
            dynamic,
            &[dt::SCE_ORIGINAL_FILENAME, dt::SCE_ORIGINAL_FILENAME_PS5],
        ) {
            m.original_filename = Some(string(
                t.value & 0xFFFF_FFFF,
                "DT_SCE_ORIGINAL_FILENAME",
                t.at,
            )?);
        }

        // Libraries: collect per tag, decide the 0x47/0x49 meaning after the symbols.
        let lib_attrs = |tag: u64| -> HashMap<u16, u64> {
            all(dynamic, tag)
                .map(|t| ((t.value >> 48) as u16, t.value & 0xFFFF_FFFF_FFFF))
                .collect()
        };
        let export_attrs = lib_attrs(dt::SCE_EXPORT_LIB_ATTR);
        let import_attrs = lib_attrs(dt::SCE_IMPORT_LIB_ATTR);
        let libs = |tag: u64, what: &str| -> Result<Vec<Library>> {
            all(dynamic, tag)
                .map(|t| {
                    Ok(Library {
                        id: (t.value >> 48) as u16,
                        name: string(t.value & 0xFFFF_FFFF, what, t.at)?,
                        version: (t.value >> 32) as u16,
                        attributes: None,
                    })
                })
                .collect()
        };
        let ps4_exports = libs(dt::SCE_EXPORT_LIB, "DT_SCE_EXPORT_LIB")?;
        let ps4_imports = libs(dt::SCE_IMPORT_LIB, "DT_SCE_IMPORT_LIB")?;
        let tag47 = libs(dt::SCE_EXPORT_LIB_PS5, "DT_SCE_EXPORT_LIB (0x61000047)")?;
        let tag49 = libs(dt::SCE_IMPORT_LIB_PS5, "DT_SCE_IMPORT_LIB (0x61000049)")?;

        // Symbols.
        if let Some(t) = pick(dt::SCE_SYMTAB, gdt::DT_SYMTAB) {
            let size = match first(dynamic, dt::SCE_SYMTABSZ) {
                Some(sz) => sz.value,
                None if !ps4 => self.symbol_count_from_hash(dynamic)? * SYM_SIZE,
                None => {
                    return Err(Error::malformed(
                        t.at,
                        "symbol table without DT_SCE_SYMTABSZ",
                    ));
                }
            };
            if size % SYM_SIZE != 0 {
                let at = first(dynamic, dt::SCE_SYMTABSZ).map_or(t.at, |s| s.at);
                return Err(Error::malformed(
                    at,
                    format!("symbol table size {size:#x} is not a multiple of 24"),
                ));
            }
            let off = self.table("symbol table", t, size)?;
            let table = self.bytes(off, size, t.at, "symbol table")?;
            let mut bad_names: Vec<u64> = Vec::new();
            m.symbols.reserve(table.len() / SYM_SIZE as usize);
            for (i, e) in table.chunks_exact(SYM_SIZE as usize).enumerate() {
                let i = i as u64;
                let at = off + i * SYM_SIZE;
                let st_name = u64::from(rd::u32(e, 0).unwrap_or(0));
                let info = e[4];
                // Real OpenOrbis output (the keyboard sample) has symbols whose name offsets
                // point past DT_STRSZ into the symbol table; they are never referenced, so
                // they keep an empty name and a warning instead of failing the whole file.
                let name = if st_name == 0 {
                    String::new()
                } else if strtab.is_some_and(|(_, size)| st_name >= size) {
                    bad_names.push(i);
                    String::new()
                } else {
                    string(st_name, &format!("symbol {i}"), at)?
                };
                let parsed = aps5_nid::parse_symbol_name(&name);
                m.symbols.push(Symbol {
                    index: i as u32,
                    nid: parsed.map(|p| p.nid.to_owned()),
                    library_id: parsed.map(|p| p.library_id),
                    module_id: parsed.map(|p| p.module_id),
                    library: None,
                    module: None,
                    name,
                    binding: info >> 4,
                    kind: info & 0xF,
                    other: e[5],
                    shndx: rd::u16(e, 6).unwrap_or(0),
                    value: rd::u64(e, 8).unwrap_or(0),
                    size: rd::u64(e, 16).unwrap_or(0),
                });
            }
            if let (Some(first), Some(last)) = (bad_names.first(), bad_names.last()) {
                self.warnings.push(format!(
                    "{} symbol(s) (indices {first}..={last}, first at file offset {:#x}) have name offsets past the string table size {:#x}; their names are left empty",
                    bad_names.len(),
                    off + first * SYM_SIZE,
                    strtab.map_or(0, |(_, size)| size)
                ));
            }
        }

        // Library tag meaning.
        let (exports, imports, order) = if !ps4_exports.is_empty() || !ps4_imports.is_empty() {
            if !tag47.is_empty() || !tag49.is_empty() {
                self.warnings.push(
                    "both PS4 (0x61000013/15) and PS5 (0x61000047/49) library tags are present; using the PS4 ones".into(),
                );
            }
            (ps4_exports, ps4_imports, Some(LibraryTagOrder::Ps4))
        } else if !tag47.is_empty() || !tag49.is_empty() {
            let defined: HashSet<u16> = m
                .symbols
                .iter()
                .filter(|s| s.shndx != 0)
                .filter_map(|s| s.library_id)
                .collect();
            let undefined: HashSet<u16> = m
                .symbols
                .iter()
                .filter(|s| s.shndx == 0)
                .filter_map(|s| s.library_id)
                .collect();
            let score = |exp: &[Library], imp: &[Library]| {
                exp.iter()
                    .filter(|l| export_attrs.contains_key(&l.id) || defined.contains(&l.id))
                    .count()
                    + imp
                        .iter()
                        .filter(|l| import_attrs.contains_key(&l.id) || undefined.contains(&l.id))
                        .count()
            };
            if score(&tag49, &tag47) > score(&tag47, &tag49) {
                (tag49, tag47, Some(LibraryTagOrder::Swapped))
            } else {
                (tag47, tag49, Some(LibraryTagOrder::Standard))
            }
        } else {
            (Vec::new(), Vec::new(), None)
        };
        m.library_tag_order = order;
        m.export_libraries = exports
            .into_iter()
            .map(|mut l| {
                l.attributes = export_attrs.get(&l.id).copied();
                l
            })
            .collect();
        m.import_libraries = imports
            .into_iter()
            .map(|mut l| {
                l.attributes = import_attrs.get(&l.id).copied();
                l
            })
            .collect();

        // Resolve each symbol's library and module names.
        let own_module = m.module_info.as_ref().map(|mi| mi.name.clone());
        for s in &mut m.symbols {
            let (Some(lib), Some(module)) = (s.library_id, s.module_id) else {
                continue;
            };
            if s.shndx == 0 {
                s.library = m
                    .import_libraries
                    .iter()
                    .find(|l| l.id == lib)
                    .map(|l| l.name.clone());
                s.module = m
                    .needed_modules
                    .iter()
                    .find(|n| n.id == module)
                    .map(|n| n.name.clone());
            } else {
                s.library = m
                    .export_libraries
                    .iter()
                    .find(|l| l.id == lib)
                    .map(|l| l.name.clone());
                s.module = if module == 0 {
                    own_module.clone()
                } else {
                    m.needed_modules
                        .iter()
                        .find(|n| n.id == module)
                        .map(|n| n.name.clone())
                };
            }
        }

        // Relocations.
        let nsyms = m.symbols.len() as u64;
        for (table, addr, size, what) in [
            (
                RelocationTable::Rela,
                pick(dt::SCE_RELA, gdt::DT_RELA),
                pick(dt::SCE_RELASZ, gdt::DT_RELASZ),
                "RELA table",
            ),
            (
                RelocationTable::Jmprel,
                pick(dt::SCE_JMPREL, gdt::DT_JMPREL),
                pick(dt::SCE_PLTRELSZ, gdt::DT_PLTRELSZ),
                "JMPREL table",
            ),
        ] {
            let (Some(addr), Some(size)) = (addr, size) else {
                if let (Some(t), None) = (addr, size) {
                    return Err(Error::malformed(t.at, format!("{what} without a size tag")));
                }
                continue;
            };
            if size.value % RELA_SIZE != 0 {
                return Err(Error::malformed(
                    size.at,
                    format!("{what} size {:#x} is not a multiple of 24", size.value),
                ));
            }
            if size.value == 0 {
                continue;
            }
            let off = self.table(what, addr, size.value)?;
            let bytes = self.bytes(off, size.value, addr.at, what)?;
            m.relocations.reserve(bytes.len() / RELA_SIZE as usize);
            for (i, e) in bytes.chunks_exact(RELA_SIZE as usize).enumerate() {
                let offset = rd::u64(e, 0).unwrap_or(0);
                let info = rd::u64(e, 8).unwrap_or(0);
                let addend = rd::u64(e, 16).unwrap_or(0) as i64;
                let symbol = (info >> 32) as u32;
                if u64::from(symbol) >= nsyms && symbol != 0 {
                    return Err(Error::malformed(
                        off + i as u64 * RELA_SIZE + 8,
                        format!(
                            "{what} entry {i} refers to symbol {symbol}, but there are only {nsyms} symbols"
                        ),
                    ));
                }
                m.relocations.push(Relocation {
                    table,
                    offset,
                    r_type: info as u32,
                    symbol,
                    addend,
                });
            }
        }

        // Init / fini and their arrays.
        m.init = first_of(dynamic, &[gdt::DT_INIT, dt::SCE_INIT_ALT]).map(|t| t.value);
        m.fini = first_of(dynamic, &[gdt::DT_FINI, dt::SCE_FINI_ALT]).map(|t| t.value);
        m.pltgot = pick(dt::SCE_PLTGOT, gdt::DT_PLTGOT).map(|t| t.value);
        let arrays = [
            (
                gdt::DT_PREINIT_ARRAY,
                gdt::DT_PREINIT_ARRAYSZ,
                "DT_PREINIT_ARRAY",
            ),
            (gdt::DT_INIT_ARRAY, gdt::DT_INIT_ARRAYSZ, "DT_INIT_ARRAY"),
            (gdt::DT_FINI_ARRAY, gdt::DT_FINI_ARRAYSZ, "DT_FINI_ARRAY"),
        ];
        let mut decoded = Vec::new();
        for (tag, size_tag, what) in arrays {
            decoded.push(self.pointer_array(dynamic, tag, size_tag, what, &m.relocations)?);
        }
        let mut it = decoded.into_iter();
        m.preinit_array = it.next().flatten();
        m.init_array = it.next().flatten();
        m.fini_array = it.next().flatten();

        self.check_hash(dynamic, &m.symbols, ps4)?;

        // Fingerprint (PS4: DYNLIBDATA offset; PS5: vaddr).
        if let Some(t) = first(dynamic, dt::SCE_FINGERPRINT) {
            let off = self.table("DT_SCE_FINGERPRINT", t, FINGERPRINT_LEN)?;
            let bytes = self.bytes(off, FINGERPRINT_LEN, t.at, "DT_SCE_FINGERPRINT")?;
            m.fingerprint = Some(bytes.iter().map(|b| format!("{b:02x}")).collect());
        }
        Ok(())
    }

    /// Checks that every named symbol can be found through the SysV hash table
    /// (`DT_SCE_HASH` / `DT_HASH`, hashing the full `NID#L#M` name), as the loader finds
    /// them. A table that misses symbols is reported as a warning; one that does not fit
    /// in the file is an error.
    fn check_hash(
        &mut self,
        dynamic: &[(DynamicEntry, u64)],
        symbols: &[Symbol],
        ps4: bool,
    ) -> Result<()> {
        let tag = if ps4 {
            first(dynamic, dt::SCE_HASH)
        } else {
            first(dynamic, gdt::DT_HASH)
        };
        let Some(t) = tag else {
            return Ok(());
        };
        let off = self.table("hash table", t, 8)?;
        let head = self.bytes(off, 8, t.at, "hash table")?;
        let nbucket = u64::from(rd::u32(head, 0).unwrap_or(0));
        let nchain = u64::from(rd::u32(head, 4).unwrap_or(0));
        let size = 8 + 4 * (nbucket + nchain);
        let off = self.table("hash table", t, size)?;
        let table = self.bytes(off, size, t.at, "hash table")?;
        let word = |i: u64| u64::from(rd::u32(table, 8 + 4 * i).unwrap_or(0));
        if nbucket == 0 {
            if symbols.iter().any(|s| !s.name.is_empty()) {
                self.warnings.push(format!(
                    "the hash table at file offset {off:#x} has no buckets"
                ));
            }
            return Ok(());
        }
        let mut missing = 0usize;
        let mut first_missing = None;
        for s in symbols.iter().filter(|s| !s.name.is_empty()) {
            let mut i = word(u64::from(elf_hash(s.name.as_bytes())) % nbucket);
            let mut steps = 0;
            while i != 0 && i != u64::from(s.index) && i < nchain && steps <= nchain {
                i = word(nbucket + i);
                steps += 1;
            }
            if i != u64::from(s.index) {
                missing += 1;
                first_missing.get_or_insert(s.index);
            }
        }
        if let Some(first) = first_missing {
            self.warnings.push(format!(
                "{missing} named symbol(s) (first: index {first}) cannot be found through the hash table at file offset {off:#x}"
            ));
        }
        Ok(())
    }

    /// PS5 without DT_SCE_SYMTABSZ: the symbol count is DT_HASH's nchain, or, for files
    /// that have only DT_GNU_HASH (ps5-payload-sdk output), one past the last symbol its
    /// chains reach.
    fn symbol_count_from_hash(&self, dynamic: &[(DynamicEntry, u64)]) -> Result<u64> {
        if let Some(t) = first(dynamic, gdt::DT_HASH) {
            let off = self.table("DT_HASH", t, 8)?;
            return Ok(u64::from(
                rd::u32(self.bytes(off, 8, t.at, "DT_HASH")?, 4).unwrap_or(0),
            ));
        }
        if let Some(t) = first(dynamic, gdt::DT_GNU_HASH) {
            return self.symbol_count_from_gnu_hash(t);
        }
        let at = first(dynamic, gdt::DT_SYMTAB).map_or(0, |t| t.at);
        Err(Error::malformed(
            at,
            "symbol table without DT_SCE_SYMTABSZ, DT_HASH or DT_GNU_HASH: its size is unknown",
        ))
    }

    /// The symbol count a DT_GNU_HASH table implies. Its header is `nbuckets, symoffset,
    /// bloom_size, bloom_shift` (u32 each), then `bloom_size` u64 bloom words, `nbuckets`
    /// u32 buckets (the first symbol index of each chain, 0 if empty) and one u32 chain
    /// word per hashed symbol from `symoffset` on, whose low bit ends a chain. Symbols
    /// below `symoffset` (the undefined ones) are not hashed; the hashed ones sit at the
    /// end of the table, so the last chain's end is the last symbol.
    fn symbol_count_from_gnu_hash(&self, t: Tag) -> Result<u64> {
        const WHAT: &str = "DT_GNU_HASH";
        let off = self.table(WHAT, t, 16)?;
        let head = self.bytes(off, 16, t.at, WHAT)?;
        let word = |i: u64| u64::from(rd::u32(head, 4 * i).unwrap_or(0));
        let (nbuckets, symoffset, bloom_size) = (word(0), word(1), word(2));
        let buckets_at = 16 + 8 * bloom_size;
        let size = buckets_at + 4 * nbuckets;
        if size > self.len() {
            return Err(Error::malformed(
                off,
                format!(
                    "{WHAT} header says {nbuckets} buckets and {bloom_size} bloom words, more than the file holds"
                ),
            ));
        }
        let off = self.table(WHAT, t, size)?;
        let table = self.bytes(off, size, t.at, WHAT)?;
        let last = (0..nbuckets)
            .map(|b| u64::from(rd::u32(table, buckets_at + 4 * b).unwrap_or(0)))
            .max()
            .unwrap_or(0);
        if last == 0 {
            // No hashed symbol: only the undefined ones below symoffset.
            return Ok(symoffset);
        }
        if last < symoffset {
            return Err(Error::malformed(
                off + buckets_at,
                format!("{WHAT} bucket names symbol {last}, below its symoffset {symoffset}"),
            ));
        }
        // Walk the chain of the highest bucket to its end bit.
        let chain_at = t.value.checked_add(size).ok_or_else(|| {
            Error::malformed(t.at, format!("{WHAT} address {:#x} overflows", t.value))
        })?;
        let mut i = last;
        loop {
            let at = chain_at + 4 * (i - symoffset);
            let entry = Tag {
                value: at,
                at: t.at,
            };
            let word = self
                .table(WHAT, entry, 4)
                .ok()
                .and_then(|o| self.img.get(o, 4))
                .and_then(|b| rd::u32(b, 0))
                .ok_or_else(|| {
                    Error::truncated(
                        off + buckets_at,
                        format!(
                            "{WHAT} chain of symbol {last} runs past the loaded image (at address {at:#x}) without an end bit"
                        ),
                    )
                })?;
            if word & 1 != 0 {
                return Ok(i + 1);
            }
            i += 1;
        }
    }

    /// Reads one pointer-sized slot of the loaded image (0 if it lies in .bss).
    fn read_slot(&self, vaddr: u64) -> Option<u64> {
        match self.vaddr_to_offset(vaddr, 8) {
            Some(off) => self.img.get(off, 8).and_then(|b| rd::u64(b, 0)),
            None if self.vaddr_mapped(vaddr, 8) => Some(0),
            None => None,
        }
    }

    fn pointer_array(
        &self,
        dynamic: &[(DynamicEntry, u64)],
        tag: u64,
        size_tag: u64,
        what: &str,
        relocs: &[Relocation],
    ) -> Result<Option<PointerArray>> {
        let Some(t) = first(dynamic, tag) else {
            return Ok(None);
        };
        let size_entry = first(dynamic, size_tag);
        let size = size_entry.map_or(0, |s| s.value);
        if !size.is_multiple_of(8) || size > self.len() || !self.vaddr_mapped(t.value, size) {
            return Err(Error::malformed(
                size_entry.map_or(t.at, |s| s.at),
                format!(
                    "{what} ({size:#x} bytes at {:#x}) is not a whole number of pointers inside a loaded segment",
                    t.value
                ),
            ));
        }
        let slots: Vec<u64> = (0..size / 8).map(|i| t.value + i * 8).collect();
        let filled = relative_targets(relocs, &slots);
        let entries = slots
            .iter()
            .map(|&a| {
                filled
                    .get(&a)
                    .copied()
                    .or_else(|| self.read_slot(a))
                    .unwrap_or(0)
            })
            .collect();
        Ok(Some(PointerArray {
            vaddr: t.value,
            size,
            entries,
        }))
    }

    fn param_segment(&self, p_type: u32, what: &str) -> Result<Option<(Segment, &'a [u8])>> {
        let Some(s) = self.segments.iter().find(|s| s.p_type == p_type) else {
            return Ok(None);
        };
        let bytes = self.img.get(s.offset, s.filesz).ok_or_else(|| {
            Error::truncated(
                s.offset,
                format!(
                    "{what} ({:#x} bytes at {:#x}) runs past the end of the file",
                    s.filesz, s.offset
                ),
            )
        })?;
        if bytes.len() < 0x18 {
            return Err(Error::malformed(
                s.offset,
                format!(
                    "{what} is {:#x} bytes, too small for its 0x18-byte header",
                    bytes.len()
                ),
            ));
        }
        Ok(Some((s.clone(), bytes)))
    }

    fn process_param(
        &mut self,
        platform: Platform,
        relocs: &[Relocation],
    ) -> Result<Option<ProcessParam>> {
        let Some((seg, b)) = self.param_segment(pt::SCE_PROCPARAM, "PT_SCE_PROCPARAM")? else {
            return Ok(None);
        };
        let size = rd::u64(b, 0).unwrap_or(0);
        let magic = rd::u32(b, 8).unwrap_or(0);
        if magic != PROCPARAM_MAGIC {
            self.warnings.push(format!(
                "process param magic is {magic:#x} at file offset {:#x}, expected {PROCPARAM_MAGIC:#x}",
                seg.offset + 8
            ));
        }
        let (sdk_version, ps5_sdk_version) = match platform {
            Platform::Ps4 => (rd::u64(b, 0x10).unwrap_or(0), None),
            Platform::Ps5 => (u64::from(rd::u32(b, 0x10).unwrap_or(0)), rd::u32(b, 0x14)),
        };
        let limit = size.min(b.len() as u64);
        let slots: Vec<(usize, u64)> = PROCPARAM_FIELDS
            .iter()
            .enumerate()
            .map(|(i, _)| (i, 0x18 + 8 * i as u64))
            .filter(|(_, off)| off + 8 <= limit)
            .collect();
        let addrs: Vec<u64> = slots
            .iter()
            .map(|(_, o)| seg.vaddr.wrapping_add(*o))
            .collect();
        let filled = relative_targets(relocs, &addrs);
        let fields = slots
            .iter()
            .zip(&addrs)
            .map(|((i, off), a)| ParamField {
                name: PROCPARAM_FIELDS[*i].to_owned(),
                offset: *off,
                value: filled
                    .get(a)
                    .copied()
                    .unwrap_or_else(|| rd::u64(b, *off).unwrap_or(0)),
            })
            .collect();
        Ok(Some(ProcessParam {
            vaddr: seg.vaddr,
            size,
            magic,
            entry_count: rd::u32(b, 0xC).unwrap_or(0),
            sdk_version,
            ps5_sdk_version,
            fields,
        }))
    }

    fn module_param(&mut self, platform: Platform) -> Result<Option<ModuleParam>> {
        let Some((seg, b)) = self.param_segment(pt::SCE_MODULE_PARAM, "PT_SCE_MODULE_PARAM")?
        else {
            return Ok(None);
        };
        let magic = rd::u32(b, 8).unwrap_or(0);
        if magic != MODULE_PARAM_MAGIC {
            self.warnings.push(format!(
                "module param magic is {magic:#x} at file offset {:#x}, expected {MODULE_PARAM_MAGIC:#x}",
                seg.offset + 8
            ));
        }
        let (sdk_version, ps5_sdk_version) = match platform {
            Platform::Ps4 => (rd::u64(b, 0x10).unwrap_or(0), None),
            Platform::Ps5 => (u64::from(rd::u32(b, 0x10).unwrap_or(0)), rd::u32(b, 0x14)),
        };
        Ok(Some(ModuleParam {
            vaddr: seg.vaddr,
            size: rd::u64(b, 0).unwrap_or(0),
            magic,
            version: rd::u32(b, 0xC).unwrap_or(0),
            sdk_version,
            ps5_sdk_version,
        }))
    }
}

/// The SysV ELF hash of a symbol name.
fn elf_hash(name: &[u8]) -> u32 {
    let mut h: u32 = 0;
    for &c in name {
        h = (h << 4).wrapping_add(u32::from(c));
        let g = h & 0xF000_0000;
        h ^= g >> 24;
        h &= !g;
    }
    h
}

/// PT_LOAD, and PS4's PT_SCE_RELRO, which is a loaded segment of its own (it holds .got,
/// .init_array and other data made read-only after relocation).
fn is_loaded(s: &Segment) -> bool {
    s.p_type == gpt::PT_LOAD || s.p_type == pt::SCE_RELRO
}

/// For each wanted slot address that an `R_X86_64_RELATIVE` relocation fills, its addend.
/// One pass over the relocations with a range check and a binary search over the few
/// wanted slots, so it stays linear (and hash-free) for tables of millions of entries.
fn relative_targets(relocs: &[Relocation], slots: &[u64]) -> HashMap<u64, u64> {
    let mut wanted = slots.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    let (Some(&lo), Some(&hi)) = (wanted.first(), wanted.last()) else {
        return HashMap::new();
    };
    relocs
        .iter()
        .filter(|r| {
            r.r_type == R_X86_64_RELATIVE
                && (lo..=hi).contains(&r.offset)
                && wanted.binary_search(&r.offset).is_ok()
        })
        .map(|r| (r.offset, r.addend as u64))
        .collect()
}
