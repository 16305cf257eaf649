//! Names of PS4/PS5 ELF constants (SCE ones here, standard ones from goblin).

use goblin::elf::{dynamic, header, program_header, sym};

/// `e_type` values of PS4/PS5 executables.
pub mod et {
    /// Static executable.
    pub const SCE_EXEC: u16 = 0xFE00;
    /// Replay executable.
    pub const SCE_REPLAY_EXEC: u16 = 0xFE01;
    /// Relocatable executable.
    pub const SCE_RELEXEC: u16 = 0xFE04;
    /// Stub library.
    pub const SCE_STUBLIB: u16 = 0xFE0C;
    /// Main executable (eboot.bin).
    pub const SCE_DYNEXEC: u16 = 0xFE10;
    /// Dynamic module (.prx / .sprx).
    pub const SCE_DYNAMIC: u16 = 0xFE18;
}

/// SCE program header types.
pub mod pt {
    /// Relocations (old format).
    pub const SCE_RELA: u32 = 0x6000_0000;
    /// PS4 dynamic-linking data (never loaded).
    pub const SCE_DYNLIBDATA: u32 = 0x6100_0000;
    /// Process parameters.
    pub const SCE_PROCPARAM: u32 = 0x6100_0001;
    /// Module parameters.
    pub const SCE_MODULE_PARAM: u32 = 0x6100_0002;
    /// Read-only-after-relocation range.
    pub const SCE_RELRO: u32 = 0x6100_0010;
    /// Comment.
    pub const SCE_COMMENT: u32 = 0x6FFF_FF00;
    /// Library version.
    pub const SCE_LIBVERSION: u32 = 0x6FFF_FF01;
    /// Segment symbols.
    pub const SCE_SEGSYM: u32 = 0x7000_00A8;
}

/// Whether a program header type is one of Sony's (`PT_SCE_*`).
pub fn is_sce_segment(p_type: u32) -> bool {
    p_type == pt::SCE_RELA
        || (0x6100_0000..0x6200_0000).contains(&p_type)
        || p_type == pt::SCE_COMMENT
        || p_type == pt::SCE_LIBVERSION
        || p_type == pt::SCE_SEGSYM
}

/// SCE dynamic tags (PS4 numbering, and the PS5 moved module/library tags).
#[allow(missing_docs)]
pub mod dt {
    pub const SCE_IDTABENTSZ: u64 = 0x6100_0005;
    pub const SCE_IDTABENTSZ_ALT: u64 = 0x6000_0005;
    pub const SCE_FINGERPRINT: u64 = 0x6100_0007;
    pub const SCE_ORIGINAL_FILENAME: u64 = 0x6100_0009;
    pub const SCE_MODULE_INFO: u64 = 0x6100_000D;
    pub const SCE_NEEDED_MODULE: u64 = 0x6100_000F;
    pub const SCE_MODULE_ATTR: u64 = 0x6100_0011;
    pub const SCE_EXPORT_LIB: u64 = 0x6100_0013;
    pub const SCE_IMPORT_LIB: u64 = 0x6100_0015;
    pub const SCE_EXPORT_LIB_ATTR: u64 = 0x6100_0017;
    pub const SCE_IMPORT_LIB_ATTR: u64 = 0x6100_0019;
    pub const SCE_STUB_MODULE_NAME: u64 = 0x6100_001D;
    pub const SCE_STUB_MODULE_VERSION: u64 = 0x6100_001F;
    pub const SCE_STUB_LIBRARY_NAME: u64 = 0x6100_0021;
    pub const SCE_STUB_LIBRARY_VERSION: u64 = 0x6100_0023;
    pub const SCE_HASH: u64 = 0x6100_0025;
    pub const SCE_PLTGOT: u64 = 0x6100_0027;
    pub const SCE_JMPREL: u64 = 0x6100_0029;
    pub const SCE_PLTREL: u64 = 0x6100_002B;
    pub const SCE_PLTRELSZ: u64 = 0x6100_002D;
    pub const SCE_RELA: u64 = 0x6100_002F;
    pub const SCE_RELASZ: u64 = 0x6100_0031;
    pub const SCE_RELAENT: u64 = 0x6100_0033;
    pub const SCE_STRTAB: u64 = 0x6100_0035;
    pub const SCE_STRSZ: u64 = 0x6100_0037;
    pub const SCE_SYMTAB: u64 = 0x6100_0039;
    pub const SCE_SYMENT: u64 = 0x6100_003B;
    pub const SCE_HASHSZ: u64 = 0x6100_003D;
    pub const SCE_SYMTABSZ: u64 = 0x6100_003F;
    pub const SCE_ORIGINAL_FILENAME_PS5: u64 = 0x6100_0041;
    pub const SCE_MODULE_INFO_PS5: u64 = 0x6100_0043;
    pub const SCE_NEEDED_MODULE_PS5: u64 = 0x6100_0045;
    pub const SCE_EXPORT_LIB_PS5: u64 = 0x6100_0047;
    pub const SCE_IMPORT_LIB_PS5: u64 = 0x6100_0049;
    pub const SCE_INIT_ALT: u64 = 0x6000_000C;
    pub const SCE_FINI_ALT: u64 = 0x6000_000D;
}

/// Name of an `e_type` value.
pub fn elf_type_name(t: u16) -> &'static str {
    match t {
        et::SCE_EXEC => "ET_SCE_EXEC",
        et::SCE_REPLAY_EXEC => "ET_SCE_REPLAY_EXEC",
        et::SCE_RELEXEC => "ET_SCE_RELEXEC",
        et::SCE_STUBLIB => "ET_SCE_STUBLIB",
        et::SCE_DYNEXEC => "ET_SCE_DYNEXEC",
        et::SCE_DYNAMIC => "ET_SCE_DYNAMIC",
        header::ET_NONE => "ET_NONE",
        header::ET_REL => "ET_REL",
        header::ET_EXEC => "ET_EXEC",
        header::ET_DYN => "ET_DYN",
        header::ET_CORE => "ET_CORE",
        _ => "unknown",
    }
}

/// Name of a program header type.
pub fn segment_type_name(t: u32) -> &'static str {
    match t {
        pt::SCE_RELA => "PT_SCE_RELA",
        pt::SCE_DYNLIBDATA => "PT_SCE_DYNLIBDATA",
        pt::SCE_PROCPARAM => "PT_SCE_PROCPARAM",
        pt::SCE_MODULE_PARAM => "PT_SCE_MODULE_PARAM",
        pt::SCE_RELRO => "PT_SCE_RELRO",
        pt::SCE_COMMENT => "PT_SCE_COMMENT",
        pt::SCE_LIBVERSION => "PT_SCE_LIBVERSION",
        pt::SCE_SEGSYM => "PT_SCE_SEGSYM",
        program_header::PT_NULL => "PT_NULL",
        program_header::PT_LOAD => "PT_LOAD",
        program_header::PT_DYNAMIC => "PT_DYNAMIC",
        program_header::PT_INTERP => "PT_INTERP",
        program_header::PT_NOTE => "PT_NOTE",
        program_header::PT_SHLIB => "PT_SHLIB",
        program_header::PT_PHDR => "PT_PHDR",
        program_header::PT_TLS => "PT_TLS",
        program_header::PT_GNU_EH_FRAME => "PT_GNU_EH_FRAME",
        program_header::PT_GNU_STACK => "PT_GNU_STACK",
        program_header::PT_GNU_RELRO => "PT_GNU_RELRO",
        program_header::PT_GNU_PROPERTY => "PT_GNU_PROPERTY",
        _ => "unknown",
    }
}

/// Name of a dynamic tag (SCE tags by their FORMATS.md names, the rest from goblin).
pub fn dynamic_tag_name(tag: u64) -> &'static str {
    use dt::*;
    match tag {
        SCE_IDTABENTSZ | SCE_IDTABENTSZ_ALT => "DT_SCE_IDTABENTSZ",
        SCE_FINGERPRINT => "DT_SCE_FINGERPRINT",
        SCE_ORIGINAL_FILENAME | SCE_ORIGINAL_FILENAME_PS5 => "DT_SCE_ORIGINAL_FILENAME",
        SCE_MODULE_INFO | SCE_MODULE_INFO_PS5 => "DT_SCE_MODULE_INFO",
        SCE_NEEDED_MODULE | SCE_NEEDED_MODULE_PS5 => "DT_SCE_NEEDED_MODULE",
        SCE_MODULE_ATTR => "DT_SCE_MODULE_ATTR",
        SCE_EXPORT_LIB => "DT_SCE_EXPORT_LIB",
        SCE_IMPORT_LIB => "DT_SCE_IMPORT_LIB",
        SCE_EXPORT_LIB_PS5 => "DT_SCE_EXPORT_LIB (PS5 0x47)",
        SCE_IMPORT_LIB_PS5 => "DT_SCE_IMPORT_LIB (PS5 0x49)",
        SCE_EXPORT_LIB_ATTR => "DT_SCE_EXPORT_LIB_ATTR",
        SCE_IMPORT_LIB_ATTR => "DT_SCE_IMPORT_LIB_ATTR",
        SCE_STUB_MODULE_NAME => "DT_SCE_STUB_MODULE_NAME",
        SCE_STUB_MODULE_VERSION => "DT_SCE_STUB_MODULE_VERSION",
        SCE_STUB_LIBRARY_NAME => "DT_SCE_STUB_LIBRARY_NAME",
        SCE_STUB_LIBRARY_VERSION => "DT_SCE_STUB_LIBRARY_VERSION",
        SCE_HASH => "DT_SCE_HASH",
        SCE_PLTGOT => "DT_SCE_PLTGOT",
        SCE_JMPREL => "DT_SCE_JMPREL",
        SCE_PLTREL => "DT_SCE_PLTREL",
        SCE_PLTRELSZ => "DT_SCE_PLTRELSZ",
        SCE_RELA => "DT_SCE_RELA",
        SCE_RELASZ => "DT_SCE_RELASZ",
        SCE_RELAENT => "DT_SCE_RELAENT",
        SCE_STRTAB => "DT_SCE_STRTAB",
        SCE_STRSZ => "DT_SCE_STRSZ",
        SCE_SYMTAB => "DT_SCE_SYMTAB",
        SCE_SYMENT => "DT_SCE_SYMENT",
        SCE_HASHSZ => "DT_SCE_HASHSZ",
        SCE_SYMTABSZ => "DT_SCE_SYMTABSZ",
        SCE_INIT_ALT => "DT_INIT (0x6000000c)",
        SCE_FINI_ALT => "DT_FINI (0x6000000d)",
        _ => dynamic::tag_to_str(tag),
    }
}

/// Name of an x86-64 relocation type.
pub fn relocation_type_name(t: u32) -> &'static str {
    match t {
        0 => "R_X86_64_NONE",
        1 => "R_X86_64_64",
        2 => "R_X86_64_PC32",
        3 => "R_X86_64_GOT32",
        4 => "R_X86_64_PLT32",
        5 => "R_X86_64_COPY",
        6 => "R_X86_64_GLOB_DAT",
        7 => "R_X86_64_JUMP_SLOT",
        8 => "R_X86_64_RELATIVE",
        9 => "R_X86_64_GOTPCREL",
        10 => "R_X86_64_32",
        11 => "R_X86_64_32S",
        12 => "R_X86_64_16",
        13 => "R_X86_64_PC16",
        14 => "R_X86_64_8",
        15 => "R_X86_64_PC8",
        16 => "R_X86_64_DTPMOD64",
        17 => "R_X86_64_DTPOFF64",
        18 => "R_X86_64_TPOFF64",
        19 => "R_X86_64_TLSGD",
        20 => "R_X86_64_TLSLD",
        21 => "R_X86_64_DTPOFF32",
        22 => "R_X86_64_GOTTPOFF",
        23 => "R_X86_64_TPOFF32",
        24 => "R_X86_64_PC64",
        25 => "R_X86_64_GOTOFF64",
        26 => "R_X86_64_GOTPC32",
        27 => "R_X86_64_GOT64",
        28 => "R_X86_64_GOTPCREL64",
        29 => "R_X86_64_GOTPC64",
        30 => "R_X86_64_GOTPLT64",
        31 => "R_X86_64_PLTOFF64",
        32 => "R_X86_64_SIZE32",
        33 => "R_X86_64_SIZE64",
        34 => "R_X86_64_GOTPC32_TLSDESC",
        35 => "R_X86_64_TLSDESC_CALL",
        36 => "R_X86_64_TLSDESC",
        37 => "R_X86_64_IRELATIVE",
        38 => "R_X86_64_RELATIVE64",
        41 => "R_X86_64_GOTPCRELX",
        42 => "R_X86_64_REX_GOTPCRELX",
        _ => "unknown",
    }
}

/// Name of a symbol binding (`STB_*`).
pub fn binding_name(b: u8) -> &'static str {
    sym::bind_to_str(b)
}

/// Name of a symbol type (`STT_*`).
pub fn symbol_type_name(t: u8) -> &'static str {
    sym::type_to_str(t)
}
