//! Builds synthetic PS5 (ABI 2) modules byte by byte, following FORMATS.md: standard
//! dynamic tags holding base-relative vaddrs, SCE module/library tags 0x6100004x, no
//! DYNLIBDATA, PT_GNU_RELRO. The corpus has no PS5 binaries, so this is the only PS5 input;
//! every layout decision here is written out explicitly rather than derived from the reader.
//! Shared by the tests and `examples/bench_elf.rs` (via `#[path]`).
#![allow(dead_code)]

/// What to put in the module.
pub struct Spec {
    /// `ET_SCE_DYNAMIC` (prx) instead of `ET_SCE_DYNEXEC`.
    pub prx: bool,
    /// Bytes of (filler) code in the text segment.
    pub code_size: usize,
    /// Imported libraries: (library name, module name, symbol names).
    pub imports: Vec<(String, String, Vec<String>)>,
    /// Exported symbol names (library = the module's own, id 0... written as id 1 below).
    pub exports: Vec<String>,
    /// Number of R_X86_64_RELATIVE relocations (each fills one data slot).
    pub relative_relocs: usize,
    /// Write exports under 0x61000049 and imports under 0x61000047 (the swapped reading).
    pub swapped: bool,
    /// Omit DT_SCE_SYMTABSZ (the reader must then use DT_HASH's nchain).
    pub omit_symtabsz: bool,
}

/// Facts about the built file that tests compare against.
#[derive(Debug, Default)]
pub struct Layout {
    pub text_offset: u64,
    pub data_offset: u64,
    pub data_vaddr: u64,
    pub strtab_vaddr: u64,
    pub strsz: u64,
    pub symtab_vaddr: u64,
    pub nsyms: u64,
    pub rela_vaddr: u64,
    pub jmprel_vaddr: u64,
    pub dynamic_offset: u64,
    pub init_array_vaddr: u64,
    pub fini_array_vaddr: u64,
    pub param_vaddr: u64,
    pub tls_vaddr: u64,
    /// File offset of each dynamic entry by tag (first occurrence).
    pub dyn_entry_offsets: Vec<(u64, u64)>,
}

pub const PROCPARAM_MAGIC: u32 = 0x4942_524F;
pub const MODULE_PARAM_MAGIC: u32 = 0x3C13_F4BF;
pub const PS4_SDK: u32 = 0x0450_8101;
pub const PS5_SDK: u32 = 0x0410_0001;
pub const ENTRY: u64 = 0x10;
pub const INIT: u64 = 0x20;
pub const FINI: u64 = 0x30;
pub const EXPORT_LIB_ID: u16 = 1;

fn align(v: usize, a: usize) -> usize {
    v.div_ceil(a) * a
}

fn put(buf: &mut Vec<u8>, at: usize, bytes: &[u8]) {
    if buf.len() < at + bytes.len() {
        buf.resize(at + bytes.len(), 0);
    }
    buf[at..at + bytes.len()].copy_from_slice(bytes);
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

struct Strtab(Vec<u8>);
impl Strtab {
    fn add(&mut self, s: &str) -> u64 {
        let off = self.0.len() as u64;
        self.0.extend_from_slice(s.as_bytes());
        self.0.push(0);
        off
    }
}

/// Builds the module.
pub fn build(spec: &Spec) -> (Vec<u8>, Layout) {
    let mut l = Layout::default();
    let mut f: Vec<u8> = Vec::new();
    const PHNUM: usize = 9;

    // Text.
    l.text_offset = 0x4000;
    let mut code = vec![0u8; spec.code_size.max(0x40)];
    let mut x: u32 = 0x1234_5678;
    for b in code.iter_mut() {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x as u8;
    }
    put(&mut f, 0x4000, &code);
    let text_size = code.len();

    // Data segment layout (vaddr = offset - 0x4000).
    let data_off = align(0x4000 + text_size, 0x4000);
    let data_vaddr = (data_off - 0x4000) as u64;
    l.data_offset = data_off as u64;
    l.data_vaddr = data_vaddr;
    let mut cur = data_off;
    let va = |off: usize| (off - 0x4000) as u64;

    let param_off = cur;
    l.param_vaddr = va(param_off);
    cur += 0x60;
    let init_arr = cur;
    l.init_array_vaddr = va(init_arr);
    cur += 16;
    let fini_arr = cur;
    l.fini_array_vaddr = va(fini_arr);
    cur += 8;
    let tls_off = cur;
    l.tls_vaddr = va(tls_off);
    put(&mut f, tls_off, &[0xAB; 0x10]);
    cur += 0x10;
    let nimports: usize = spec.imports.iter().map(|(_, _, n)| n.len()).sum();
    let got = cur;
    cur += 8 * (3 + nimports);
    let slots = cur;
    cur += 8 * spec.relative_relocs;

    // Strings and symbols.
    let mut st = Strtab(vec![0]);
    let mut needed = Vec::new();
    let mut modules = Vec::new();
    let mut libs = Vec::new();
    let mut syms: Vec<(u64, u8, u16, u64, u64, String)> = vec![(0, 0, 0, 0, 0, String::new())];
    for (i, (lib, module, names)) in spec.imports.iter().enumerate() {
        let id = (i + 2) as u16; // ids 2.. for imports, 1 is the exported library
        needed.push(st.add(&format!("{module}.sprx")));
        modules.push((id, st.add(module)));
        libs.push((id, st.add(lib)));
        for n in names {
            let full = format!(
                "{}#{}#{}",
                aps5_nid::nid(n),
                aps5_nid::encode_id(id),
                aps5_nid::encode_id(id)
            );
            let off = st.add(&full);
            syms.push((off, 0x12, 0, 0, 0, full)); // GLOBAL FUNC, undefined
        }
    }
    let own_name = st.add(if spec.prx { "libSynth" } else { "synth_main" });
    let own_lib = st.add("libSynth");
    for (i, n) in spec.exports.iter().enumerate() {
        let full = format!(
            "{}#{}#A",
            aps5_nid::nid(n),
            aps5_nid::encode_id(EXPORT_LIB_ID)
        );
        let off = st.add(&full);
        syms.push((off, 0x12, 1, 0x100 + 0x10 * i as u64, 0x10, full));
    }
    let orig = st.add("synth/x64/Release/synth.elf");

    let strtab_off = cur;
    l.strtab_vaddr = va(strtab_off);
    l.strsz = st.0.len() as u64;
    put(&mut f, strtab_off, &st.0);
    cur = align(cur + st.0.len(), 8);

    let symtab_off = cur;
    l.symtab_vaddr = va(symtab_off);
    l.nsyms = syms.len() as u64;
    for (i, (name, info, shndx, value, size, _)) in syms.iter().enumerate() {
        let at = symtab_off + i * 24;
        put(&mut f, at, &(*name as u32).to_le_bytes());
        put(&mut f, at + 4, &[*info, 0]);
        put(&mut f, at + 6, &shndx.to_le_bytes());
        put(&mut f, at + 8, &value.to_le_bytes());
        put(&mut f, at + 16, &size.to_le_bytes());
    }
    cur += syms.len() * 24;

    // SysV hash over the full NID#L#M names.
    let hash_off = cur;
    let nbucket = (syms.len() / 2).max(1);
    let mut buckets = vec![0u32; nbucket];
    let mut chains = vec![0u32; syms.len()];
    for (i, s) in syms.iter().enumerate().skip(1) {
        let b = elf_hash(s.5.as_bytes()) as usize % nbucket;
        chains[i] = buckets[b];
        buckets[b] = i as u32;
    }
    let mut h = Vec::new();
    h.extend_from_slice(&(nbucket as u32).to_le_bytes());
    h.extend_from_slice(&(syms.len() as u32).to_le_bytes());
    for b in &buckets {
        h.extend_from_slice(&b.to_le_bytes());
    }
    for c in &chains {
        h.extend_from_slice(&c.to_le_bytes());
    }
    put(&mut f, hash_off, &h);
    cur = align(cur + h.len(), 8);

    // RELA: RELATIVE relocs for init/fini arrays, the param name pointer and the slots,
    // plus one R_X86_64_64 per import (a data reference) and a DTPMOD64.
    let rela_off = cur;
    l.rela_vaddr = va(rela_off);
    let mut rela: Vec<(u64, u64, i64)> = vec![
        (va(init_arr), 8, INIT as i64 + 0x100),
        (va(init_arr) + 8, 8, INIT as i64 + 0x200),
        (va(fini_arr), 8, FINI as i64 + 0x100),
        (va(param_off) + 0x18, 8, 0x4242),
    ];
    for i in 0..spec.relative_relocs {
        rela.push((va(slots + 8 * i), 8, (i as i64) * 16));
    }
    for (i, _) in syms.iter().enumerate().skip(1).take(nimports) {
        rela.push((va(slots), ((i as u64) << 32) | 1, 0));
    }
    rela.push((va(tls_off), 16, 0)); // R_X86_64_DTPMOD64, symbol 0
    for (i, (o, info, a)) in rela.iter().enumerate() {
        let at = rela_off + i * 24;
        put(&mut f, at, &o.to_le_bytes());
        put(&mut f, at + 8, &info.to_le_bytes());
        put(&mut f, at + 16, &a.to_le_bytes());
    }
    cur += rela.len() * 24;
    let relacount = 4 + spec.relative_relocs;

    let jmprel_off = cur;
    l.jmprel_vaddr = va(jmprel_off);
    for i in 0..nimports {
        let at = jmprel_off + i * 24;
        put(&mut f, at, &(va(got) + 8 * (3 + i as u64)).to_le_bytes());
        put(
            &mut f,
            at + 8,
            &((((i + 1) as u64) << 32) | 7).to_le_bytes(),
        );
        put(&mut f, at + 16, &0u64.to_le_bytes());
    }
    cur += nimports * 24;

    let fp_off = cur;
    put(&mut f, fp_off, &[0x5A; 20]);
    cur = align(cur + 20, 8);

    // Parameters.
    if spec.prx {
        put(&mut f, param_off, &0x18u64.to_le_bytes());
        put(&mut f, param_off + 8, &MODULE_PARAM_MAGIC.to_le_bytes());
        put(&mut f, param_off + 12, &1u32.to_le_bytes());
        put(&mut f, param_off + 16, &0x1u32.to_le_bytes());
        put(&mut f, param_off + 20, &PS5_SDK.to_le_bytes());
    } else {
        put(&mut f, param_off, &0x60u64.to_le_bytes());
        put(&mut f, param_off + 8, &PROCPARAM_MAGIC.to_le_bytes());
        put(&mut f, param_off + 12, &3u32.to_le_bytes());
        put(&mut f, param_off + 16, &PS4_SDK.to_le_bytes());
        put(&mut f, param_off + 20, &PS5_SDK.to_le_bytes());
    }

    // Dynamic table.
    let (exp_tag, imp_tag) = if spec.swapped {
        (0x6100_0049u64, 0x6100_0047u64)
    } else {
        (0x6100_0047, 0x6100_0049)
    };
    let mut d: Vec<(u64, u64)> = Vec::new();
    for n in &needed {
        d.push((1, *n));
    }
    d.push((0x6100_0043, (1u64 << 40) | (1 << 32) | own_name));
    for (id, name) in &modules {
        d.push((
            0x6100_0045,
            (u64::from(*id) << 48) | (1 << 40) | (1 << 32) | name,
        ));
    }
    if !spec.exports.is_empty() {
        d.push((
            exp_tag,
            (u64::from(EXPORT_LIB_ID) << 48) | (1 << 32) | own_lib,
        ));
        d.push((0x6100_0017, (u64::from(EXPORT_LIB_ID) << 48) | 1));
    }
    for (id, name) in &libs {
        d.push((imp_tag, (u64::from(*id) << 48) | (1 << 32) | name));
        d.push((0x6100_0019, (u64::from(*id) << 48) | 9));
    }
    d.push((0x6100_0041, orig));
    d.push((0x6100_0007, va(fp_off)));
    d.push((4, va(hash_off))); // DT_HASH
    d.push((0x6100_003D, h.len() as u64)); // DT_SCE_HASHSZ
    d.push((5, va(strtab_off))); // DT_STRTAB
    d.push((10, st.0.len() as u64)); // DT_STRSZ
    d.push((6, va(symtab_off))); // DT_SYMTAB
    d.push((11, 24)); // DT_SYMENT
    if !spec.omit_symtabsz {
        d.push((0x6100_003F, (syms.len() * 24) as u64));
    }
    d.push((7, va(rela_off))); // DT_RELA
    d.push((8, (rela.len() * 24) as u64)); // DT_RELASZ
    d.push((9, 24)); // DT_RELAENT
    d.push((0x6fff_fff9, relacount as u64)); // DT_RELACOUNT
    d.push((23, va(jmprel_off))); // DT_JMPREL
    d.push((2, (nimports * 24) as u64)); // DT_PLTRELSZ
    d.push((20, 7)); // DT_PLTREL = RELA
    d.push((3, va(got))); // DT_PLTGOT
    d.push((12, INIT)); // DT_INIT
    d.push((13, FINI)); // DT_FINI
    d.push((25, va(init_arr)));
    d.push((27, 16));
    d.push((26, va(fini_arr)));
    d.push((28, 8));
    d.push((30, 0)); // DT_FLAGS
    d.push((0, 0));
    let dyn_off = cur;
    l.dynamic_offset = dyn_off as u64;
    for (i, (t, v)) in d.iter().enumerate() {
        put(&mut f, dyn_off + i * 16, &t.to_le_bytes());
        put(&mut f, dyn_off + i * 16 + 8, &v.to_le_bytes());
        if !l.dyn_entry_offsets.iter().any(|(tag, _)| tag == t) {
            l.dyn_entry_offsets.push((*t, (dyn_off + i * 16) as u64));
        }
    }
    cur += d.len() * 16;
    let data_size = cur - data_off;
    f.resize(cur, 0);

    // ELF header.
    let mut e = [0u8; 64];
    e[..4].copy_from_slice(b"\x7fELF");
    e[4] = 2; // ELFCLASS64
    e[5] = 1; // little-endian
    e[6] = 1; // EV_CURRENT
    e[7] = 9; // FreeBSD
    e[8] = 2; // PS5
    e[16..18].copy_from_slice(&(if spec.prx { 0xFE18u16 } else { 0xFE10 }).to_le_bytes());
    e[18..20].copy_from_slice(&62u16.to_le_bytes());
    e[20..24].copy_from_slice(&1u32.to_le_bytes());
    e[24..32].copy_from_slice(&ENTRY.to_le_bytes());
    e[32..40].copy_from_slice(&64u64.to_le_bytes());
    e[52..54].copy_from_slice(&64u16.to_le_bytes());
    e[54..56].copy_from_slice(&56u16.to_le_bytes());
    e[56..58].copy_from_slice(&(PHNUM as u16).to_le_bytes());
    put(&mut f, 0, &e);

    // Program headers: (type, flags, offset, vaddr, filesz, memsz, align).
    let param_type = if spec.prx {
        0x6100_0002u32
    } else {
        0x6100_0001
    };
    let param_size = if spec.prx { 0x18 } else { 0x60 };
    let ph: [(u32, u32, u64, u64, u64, u64, u64); PHNUM] = [
        (1, 5, 0x4000, 0, text_size as u64, text_size as u64, 0x4000),
        (
            1,
            6,
            data_off as u64,
            data_vaddr,
            data_size as u64,
            data_size as u64 + 0x100,
            0x4000,
        ),
        (
            0x6474_e552,
            4,
            data_off as u64,
            data_vaddr,
            data_size as u64,
            data_size as u64,
            1,
        ),
        (
            param_type,
            4,
            param_off as u64,
            va(param_off),
            param_size,
            param_size,
            8,
        ),
        (
            2,
            6,
            dyn_off as u64,
            va(dyn_off),
            (d.len() * 16) as u64,
            (d.len() * 16) as u64,
            8,
        ),
        (7, 4, tls_off as u64, va(tls_off), 0x10, 0x40, 0x10),
        (0x6474_e551, 6, 0, 0, 0, 0, 0x10),
        (0x6474_e550, 4, 0x4000, 0, 0x14, 0x14, 4),
        (0x6fff_ff01, 4, 0, 0, 0, 0, 1),
    ];
    for (i, (t, fl, off, vaddr, filesz, memsz, al)) in ph.iter().enumerate() {
        let at = 64 + i * 56;
        put(&mut f, at, &t.to_le_bytes());
        put(&mut f, at + 4, &fl.to_le_bytes());
        put(&mut f, at + 8, &off.to_le_bytes());
        put(&mut f, at + 16, &vaddr.to_le_bytes());
        put(&mut f, at + 24, &vaddr.to_le_bytes());
        put(&mut f, at + 32, &filesz.to_le_bytes());
        put(&mut f, at + 40, &memsz.to_le_bytes());
        put(&mut f, at + 48, &al.to_le_bytes());
    }
    (f, l)
}

/// Wraps a plain ELF in a minimal fake-signed SELF (PS5 magic): one data entry per
/// file-backed segment (flags 0x800 | index << 20), laid out after the header.
pub fn wrap_fself(elf: &[u8], magic: [u8; 4]) -> Vec<u8> {
    let phnum = u16::from_le_bytes([elf[56], elf[57]]) as usize;
    let mut segs = Vec::new();
    for i in 0..phnum {
        let at = 64 + i * 56;
        let rd = |o: usize| u64::from_le_bytes(elf[at + o..at + o + 8].try_into().unwrap());
        let p_type = u32::from_le_bytes(elf[at..at + 4].try_into().unwrap());
        let (off, filesz) = (rd(8), rd(32));
        if (p_type == 1 || p_type == 2) && filesz > 0 {
            segs.push((i as u64, off, filesz));
        }
    }
    let header_len = 0x20 + segs.len() * 0x20 + 64 + phnum * 56;
    let mut out = vec![0u8; align(header_len, 0x10)];
    out[..4].copy_from_slice(&magic);
    out[4] = 0;
    out[5] = 1;
    out[6] = 1;
    out[7] = 0x12;
    out[0x18..0x1A].copy_from_slice(&(segs.len() as u16).to_le_bytes());
    let elf_at = 0x20 + segs.len() * 0x20;
    out[elf_at..elf_at + 64 + phnum * 56].copy_from_slice(&elf[..64 + phnum * 56]);
    for (k, (idx, off, filesz)) in segs.iter().enumerate() {
        let data_at = out.len() as u64;
        out.extend_from_slice(&elf[*off as usize..(*off + *filesz) as usize]);
        let e = 0x20 + k * 0x20;
        let flags: u64 = 0x800 | 0x4 | (idx << 20);
        out[e..e + 8].copy_from_slice(&flags.to_le_bytes());
        out[e + 8..e + 16].copy_from_slice(&data_at.to_le_bytes());
        out[e + 16..e + 24].copy_from_slice(&filesz.to_le_bytes());
        out[e + 24..e + 32].copy_from_slice(&filesz.to_le_bytes());
    }
    out
}

/// A small spec used by the tests.
pub fn small(prx: bool, swapped: bool) -> Spec {
    Spec {
        prx,
        code_size: 0x200,
        imports: vec![
            (
                "libkernel".into(),
                "libkernel".into(),
                vec!["sceKernelUsleep".into(), "__error".into(), "getpid".into()],
            ),
            (
                "libc".into(),
                "libc".into(),
                vec!["printf".into(), "malloc".into()],
            ),
        ],
        exports: if prx {
            vec!["synthExportA".into(), "synthExportB".into()]
        } else {
            Vec::new()
        },
        relative_relocs: 5,
        swapped,
        omit_symtabsz: false,
    }
}
