//! The decoded module: owned data, so it can be cached and compared.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::names;

/// Which console the module is for (from `EI_ABIVERSION` and the SELF magic).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Platform {
    /// PlayStation 4 (ABI version 0).
    Ps4,
    /// PlayStation 5 (ABI version 2).
    Ps5,
}

/// How the ELF was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Container {
    /// A plain ELF (a decrypted dump).
    Elf,
    /// A fake-signed SELF wrapping a plaintext ELF.
    Fself,
}

/// Container and platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Format {
    /// PS4 or PS5.
    pub platform: Platform,
    /// ELF or fSELF.
    pub container: Container,
    /// `EI_OSABI` (9, FreeBSD, in real files).
    pub os_abi: u8,
    /// `EI_ABIVERSION` (0 on PS4, 2 on PS5).
    pub abi_version: u8,
}

/// Which dynamic-table convention the module uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DynamicLayout {
    /// No dynamic table.
    None,
    /// PS4: SCE tags whose table pointers are offsets into PT_SCE_DYNLIBDATA.
    Ps4,
    /// PS5: standard tags holding base-relative vaddrs, SCE module/library tags 0x4x.
    Ps5,
}

/// Which meaning the PS5 library tags 0x61000047 / 0x61000049 had in this file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LibraryTagOrder {
    /// PS4 tags 0x61000013 (export) / 0x61000015 (import).
    Ps4,
    /// 0x61000047 = export, 0x61000049 = import (the common reading).
    Standard,
    /// 0x61000047 = import, 0x61000049 = export (one public plugin's reading).
    Swapped,
}

/// One program header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    /// Index in the program header table.
    pub index: u16,
    /// `p_type`.
    pub p_type: u32,
    /// `p_flags` (PF_X 1, PF_W 2, PF_R 4).
    pub flags: u32,
    /// `p_offset` (in the unwrapped ELF for fSELF inputs).
    pub offset: u64,
    /// `p_vaddr`.
    pub vaddr: u64,
    /// `p_paddr`.
    pub paddr: u64,
    /// `p_filesz`.
    pub filesz: u64,
    /// `p_memsz`.
    pub memsz: u64,
    /// `p_align`.
    pub align: u64,
}

impl Segment {
    /// `PT_*` name of the type (`unknown` if not known).
    pub fn type_name(&self) -> &'static str {
        names::segment_type_name(self.p_type)
    }

    /// `RWX`-style flags.
    pub fn flags_string(&self) -> String {
        let mut s = String::with_capacity(3);
        s.push(if self.flags & 4 != 0 { 'R' } else { ' ' });
        s.push(if self.flags & 2 != 0 { 'W' } else { ' ' });
        s.push(if self.flags & 1 != 0 { 'E' } else { ' ' });
        s
    }
}

/// One raw dynamic-table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DynamicEntry {
    /// `d_tag`.
    pub tag: u64,
    /// `d_val` / `d_ptr`.
    pub value: u64,
}

impl DynamicEntry {
    /// Name of the tag.
    pub fn tag_name(&self) -> &'static str {
        names::dynamic_tag_name(self.tag)
    }
}

/// A module: this one (`DT_SCE_MODULE_INFO`) or a needed one (`DT_SCE_NEEDED_MODULE`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleRef {
    /// Module id (0 for the module itself; needed modules from 1).
    pub id: u16,
    /// Module name (e.g. `libkernel`).
    pub name: String,
    /// Version byte at bits 40-47 (read as the major version; real files have 1.1).
    pub version_major: u8,
    /// Version byte at bits 32-39.
    pub version_minor: u8,
    /// Attributes from `DT_SCE_MODULE_ATTR` with the same id, if present.
    pub attributes: Option<u64>,
}

/// An exported or imported library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Library {
    /// Library id (used by `NID#L#M` symbol names).
    pub id: u16,
    /// Library name (e.g. `libc`).
    pub name: String,
    /// Version (bits 32-47).
    pub version: u16,
    /// Attributes from the matching `*_LIB_ATTR` tag (AUTO_EXPORT 1, WEAK_EXPORT 2,
    /// LOOSE_IMPORT 8), if present.
    pub attributes: Option<u64>,
}

/// One symbol-table entry, with its `NID#L#M` name decoded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Symbol {
    /// Index in the symbol table.
    pub index: u32,
    /// The raw name (`NID#L#M`, or a plain name such as `module_start`).
    pub name: String,
    /// The NID, when the name is `NID#L#M`.
    pub nid: Option<String>,
    /// Library id from the name.
    pub library_id: Option<u16>,
    /// Module id from the name.
    pub module_id: Option<u16>,
    /// Library name: import library for undefined symbols, export library for defined ones.
    pub library: Option<String>,
    /// Module name: needed module for undefined symbols, this module for defined ones.
    pub module: Option<String>,
    /// `STB_*` binding.
    pub binding: u8,
    /// `STT_*` type.
    pub kind: u8,
    /// `st_other` (visibility).
    pub other: u8,
    /// `st_shndx` (0 = undefined, i.e. imported).
    pub shndx: u16,
    /// `st_value`.
    pub value: u64,
    /// `st_size`.
    pub size: u64,
}

impl Symbol {
    /// An undefined, named, non-local symbol: something this module imports.
    pub fn is_import(&self) -> bool {
        self.shndx == 0 && !self.name.is_empty() && self.binding != 0
    }

    /// A defined, named, non-local symbol: something this module exports.
    pub fn is_export(&self) -> bool {
        self.shndx != 0 && !self.name.is_empty() && self.binding != 0
    }

    /// `STB_*` name without the prefix (`GLOBAL`, `WEAK`, ...).
    pub fn binding_name(&self) -> &'static str {
        names::binding_name(self.binding)
    }

    /// `STT_*` name without the prefix (`FUNC`, `OBJECT`, ...).
    pub fn kind_name(&self) -> &'static str {
        names::symbol_type_name(self.kind)
    }

    /// Readable names known for the NID (via the embedded names database).
    pub fn known_names(&self) -> Vec<aps5_nid::KnownName> {
        self.nid
            .as_deref()
            .map(aps5_nid::lookup)
            .unwrap_or_default()
    }
}

/// Which table a relocation came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RelocationTable {
    /// `DT_RELA` / `DT_SCE_RELA`.
    Rela,
    /// `DT_JMPREL` / `DT_SCE_JMPREL` (PLT).
    Jmprel,
}

/// One RELA relocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Relocation {
    /// The table it came from.
    pub table: RelocationTable,
    /// `r_offset` (base-relative address patched).
    pub offset: u64,
    /// Relocation type (`R_X86_64_*`).
    pub r_type: u32,
    /// Symbol index (0 for none).
    pub symbol: u32,
    /// `r_addend`.
    pub addend: i64,
}

impl Relocation {
    /// `R_X86_64_*` name of the type.
    pub fn type_name(&self) -> &'static str {
        names::relocation_type_name(self.r_type)
    }
}

/// The TLS template (`PT_TLS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tls {
    /// Address of the initialisation image.
    pub vaddr: u64,
    /// Bytes of initialised data.
    pub filesz: u64,
    /// Total size of the TLS block.
    pub memsz: u64,
    /// Alignment.
    pub align: u64,
}

/// An array of function pointers (`DT_INIT_ARRAY`, `DT_FINI_ARRAY`, `DT_PREINIT_ARRAY`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointerArray {
    /// Address of the array.
    pub vaddr: u64,
    /// Size in bytes.
    pub size: u64,
    /// Entries: the stored value, or the addend of the `R_X86_64_RELATIVE` relocation that
    /// fills the slot (base-relative addresses).
    pub entries: Vec<u64>,
}

/// One named pointer-sized field of a parameter block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamField {
    /// Field name.
    pub name: String,
    /// Offset in the block.
    pub offset: u64,
    /// Value (stored value, or the addend of the RELATIVE relocation that fills it).
    pub value: u64,
}

/// Process parameters (`PT_SCE_PROCPARAM`, main executables).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessParam {
    /// Address of the block.
    pub vaddr: u64,
    /// Size field (first u64).
    pub size: u64,
    /// Magic (0x4942524F, "ORBI").
    pub magic: u32,
    /// Entry count.
    pub entry_count: u32,
    /// PS4: SDK version (u64 at +0x10). PS5: the PS4-compatible SDK version (u32 at +0x10).
    pub sdk_version: u64,
    /// PS5 SDK version (u32 at +0x14), PS5 only.
    pub ps5_sdk_version: Option<u32>,
    /// Pointer fields after the header, in PS4 order (process name, main thread name,
    /// priority, stack size, libc param, mem param, fs param, preload), as far as the
    /// block holds them.
    pub fields: Vec<ParamField>,
}

/// Module parameters (`PT_SCE_MODULE_PARAM`, prx).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleParam {
    /// Address of the block.
    pub vaddr: u64,
    /// Size field (0x18).
    pub size: u64,
    /// Magic (0x3C13F4BF).
    pub magic: u32,
    /// Version (1).
    pub version: u32,
    /// PS4: SDK version (u64 at +0x10). PS5: the flags word (u32 at +0x10).
    pub sdk_version: u64,
    /// PS5: SDK version (u32 at +0x14).
    pub ps5_sdk_version: Option<u32>,
}

/// A decoded PS4/PS5 executable or module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Module {
    /// Platform and container.
    pub format: Format,
    /// `e_type`.
    pub elf_type: u16,
    /// Entry point (base-relative).
    pub entry: u64,
    /// All program headers, in order.
    pub segments: Vec<Segment>,
    /// Dynamic-table convention.
    pub dynamic_layout: DynamicLayout,
    /// Which export/import library tags were seen (None if the file has no library tags).
    pub library_tag_order: Option<LibraryTagOrder>,
    /// The raw dynamic table (up to `DT_NULL`).
    pub dynamic: Vec<DynamicEntry>,
    /// This module (`DT_SCE_MODULE_INFO`).
    pub module_info: Option<ModuleRef>,
    /// Needed modules (`DT_SCE_NEEDED_MODULE`).
    pub needed_modules: Vec<ModuleRef>,
    /// Exported libraries.
    pub export_libraries: Vec<Library>,
    /// Imported libraries.
    pub import_libraries: Vec<Library>,
    /// `DT_NEEDED` names (e.g. `libkernel.prx`).
    pub needed: Vec<String>,
    /// The symbol table.
    pub symbols: Vec<Symbol>,
    /// RELA relocations, then JMPREL ones.
    pub relocations: Vec<Relocation>,
    /// `PT_TLS`, if present.
    pub tls: Option<Tls>,
    /// `DT_INIT`.
    pub init: Option<u64>,
    /// `DT_FINI`.
    pub fini: Option<u64>,
    /// `DT_PREINIT_ARRAY`.
    pub preinit_array: Option<PointerArray>,
    /// `DT_INIT_ARRAY`.
    pub init_array: Option<PointerArray>,
    /// `DT_FINI_ARRAY`.
    pub fini_array: Option<PointerArray>,
    /// PLT GOT address.
    pub pltgot: Option<u64>,
    /// `PT_SCE_PROCPARAM` contents.
    pub process_param: Option<ProcessParam>,
    /// `PT_SCE_MODULE_PARAM` contents.
    pub module_param: Option<ModuleParam>,
    /// `DT_SCE_FINGERPRINT` (20 bytes, hex).
    pub fingerprint: Option<String>,
    /// `DT_SCE_ORIGINAL_FILENAME`.
    pub original_filename: Option<String>,
    /// `PT_INTERP` contents.
    pub interpreter: Option<String>,
    /// Oddities that did not stop the reader.
    pub warnings: Vec<String>,
}

impl Module {
    /// `ET_*` name of `e_type`.
    pub fn elf_type_name(&self) -> &'static str {
        names::elf_type_name(self.elf_type)
    }

    /// A PS5 payload as the ps5-payload-sdk makes it: a plain ELF (not an fSELF) with
    /// `EI_OSABI` 0 (SysV; 9, FreeBSD, from older toolchains) and `EI_ABIVERSION` 0, a
    /// standard dynamic table naming its libraries by `DT_NEEDED` (`libkernel_sys.so`, ...)
    /// and importing plain names, and none of Sony's segments or tags (no process/module
    /// parameters, module or library tags). The PS5's ELF loader runs it with
    /// `_start(payload_args_t *)`.
    pub fn is_payload(&self) -> bool {
        self.format.container == Container::Elf
            && matches!(self.format.os_abi, 0 | 9)
            && self.format.abi_version == 0
            && self.dynamic_layout == DynamicLayout::Ps5
            && self.module_info.is_none()
            && self.needed_modules.is_empty()
            && self.import_libraries.is_empty()
            && self.export_libraries.is_empty()
            && self.process_param.is_none()
            && self.module_param.is_none()
            && !self
                .segments
                .iter()
                .any(|s| names::is_sce_segment(s.p_type))
            && !self
                .dynamic
                .iter()
                .any(|e| (0x6000_0000..0x6200_0000).contains(&e.tag))
    }

    /// Imported symbols.
    pub fn imports(&self) -> impl Iterator<Item = &Symbol> {
        self.symbols.iter().filter(|s| s.is_import())
    }

    /// Exported symbols.
    pub fn exports(&self) -> impl Iterator<Item = &Symbol> {
        self.symbols.iter().filter(|s| s.is_export())
    }

    /// Imported symbols grouped by library name. Symbols whose library id matches no
    /// import library are under `#<id>`; plain names (no `NID#L#M`) are under `""`.
    pub fn imports_by_library(&self) -> BTreeMap<String, Vec<&Symbol>> {
        group(self.imports())
    }

    /// Exported symbols grouped by library name (same keys as [`Self::imports_by_library`]).
    pub fn exports_by_library(&self) -> BTreeMap<String, Vec<&Symbol>> {
        group(self.exports())
    }

    /// Number of relocations of each type, by `R_X86_64_*` name (unknown types as
    /// `unknown(<n>)`).
    pub fn relocation_counts(&self) -> BTreeMap<String, usize> {
        let mut by_type: BTreeMap<u32, usize> = BTreeMap::new();
        for r in &self.relocations {
            *by_type.entry(r.r_type).or_default() += 1;
        }
        by_type
            .into_iter()
            .map(|(t, n)| {
                let name = names::relocation_type_name(t);
                let key = if name == "unknown" {
                    format!("unknown({t})")
                } else {
                    name.to_owned()
                };
                (key, n)
            })
            .collect()
    }

    /// Relocations from one table.
    pub fn relocations_in(&self, table: RelocationTable) -> impl Iterator<Item = &Relocation> {
        self.relocations.iter().filter(move |r| r.table == table)
    }

    /// The symbol a relocation refers to (None for index 0).
    pub fn relocation_symbol(&self, r: &Relocation) -> Option<&Symbol> {
        if r.symbol == 0 {
            return None;
        }
        self.symbols.get(r.symbol as usize)
    }
}

fn group<'a>(it: impl Iterator<Item = &'a Symbol>) -> BTreeMap<String, Vec<&'a Symbol>> {
    let mut map: BTreeMap<String, Vec<&Symbol>> = BTreeMap::new();
    for s in it {
        let key = match (&s.library, s.library_id) {
            (Some(l), _) => l.clone(),
            (None, Some(id)) => format!("#{id}"),
            (None, None) => String::new(),
        };
        map.entry(key).or_default().push(s);
    }
    map
}
