//! Reads what ld.lld produced from the SDK linker script (`crt/sdk.ld`): segments, lld's dynamic
//! symbols and relocations, and the few sections the writer needs to find.

use anyhow::{Context, Result, bail, ensure};

pub(crate) const PT_LOAD: u32 = 1;
pub(crate) const PT_DYNAMIC: u32 = 2;
pub(crate) const PT_TLS: u32 = 7;
pub(crate) const PT_GNU_EH_FRAME: u32 = 0x6474_E550;

pub(crate) const DT_NULL: u64 = 0;
pub(crate) const DT_PLTRELSZ: u64 = 2;
pub(crate) const DT_STRTAB: u64 = 5;
pub(crate) const DT_SYMTAB: u64 = 6;
pub(crate) const DT_RELA: u64 = 7;
pub(crate) const DT_RELASZ: u64 = 8;
pub(crate) const DT_STRSZ: u64 = 10;
pub(crate) const DT_INIT: u64 = 12;
pub(crate) const DT_FINI: u64 = 13;
pub(crate) const DT_JMPREL: u64 = 23;
pub(crate) const DT_TEXTREL: u64 = 22;
pub(crate) const DT_INIT_ARRAY: u64 = 25;
pub(crate) const DT_FINI_ARRAY: u64 = 26;
pub(crate) const DT_INIT_ARRAYSZ: u64 = 27;
pub(crate) const DT_FINI_ARRAYSZ: u64 = 28;
pub(crate) const DT_FLAGS: u64 = 30;
pub(crate) const DT_PREINIT_ARRAY: u64 = 32;
pub(crate) const DT_PREINIT_ARRAYSZ: u64 = 33;
pub(crate) const DF_TEXTREL: u64 = 0x4;

pub(crate) const SHN_UNDEF: u16 = 0;

/// One loadable segment of the linked file.
#[derive(Debug, Clone)]
pub struct Load {
    /// 0 = text, 1 = relro, 2 = data (the script's order).
    pub role: u8,
    /// `p_vaddr`.
    pub vaddr: u64,
    /// `p_memsz`.
    pub memsz: u64,
    /// `p_flags`.
    pub flags: u32,
    /// The file bytes (`p_filesz` of them).
    pub bytes: Vec<u8>,
}

/// A symbol of lld's `.dynsym`.
#[derive(Debug, Clone)]
pub struct DynSym {
    /// Name (from `.dynstr`).
    pub name: String,
    /// `st_info` (binding << 4 | type).
    pub info: u8,
    /// `st_other`.
    pub other: u8,
    /// `st_shndx` (0 = undefined).
    pub shndx: u16,
    /// `st_value`.
    pub value: u64,
    /// `st_size`.
    pub size: u64,
}

impl DynSym {
    /// Whether the symbol is undefined (an import).
    pub fn is_undefined(&self) -> bool {
        self.shndx == SHN_UNDEF
    }
    /// `STB_*` binding.
    pub fn bind(&self) -> u8 {
        self.info >> 4
    }
    /// `STT_*` type.
    pub fn typ(&self) -> u8 {
        self.info & 0xF
    }
}

/// An `Elf64_Rela`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rela {
    /// Address patched.
    pub offset: u64,
    /// Symbol index.
    pub sym: u32,
    /// `R_X86_64_*` type.
    pub typ: u32,
    /// Addend.
    pub addend: i64,
}

/// The parts of lld's output the writer uses.
#[derive(Debug, Clone)]
pub struct Linked {
    /// `e_entry`.
    pub entry: u64,
    /// The text, relro and data segments, in that order (empty ones left out).
    pub loads: Vec<Load>,
    /// `(vaddr, filesz, memsz, align)` of PT_TLS, if any.
    pub tls: Option<(u64, u64, u64, u64)>,
    /// `(vaddr, size)` of PT_GNU_EH_FRAME.
    pub eh_frame_hdr: Option<(u64, u64)>,
    /// `(vaddr, size)` of `.interp`.
    pub interp: Option<(u64, u64)>,
    /// `(vaddr, size)` of `.sce_process_param`.
    pub process_param: Option<(u64, u64)>,
    /// `(vaddr, size)` of `.sce_module_param`.
    pub module_param: Option<(u64, u64)>,
    /// `(vaddr, size)` of `.got.plt`.
    pub got_plt: Option<(u64, u64)>,
    /// Virtual address range of the relro segment, if not empty.
    pub relro: Option<(u64, u64)>,
    /// lld's dynamic symbols (entry 0 is the null symbol).
    pub dynsyms: Vec<DynSym>,
    /// `.rela.dyn`.
    pub rela_dyn: Vec<Rela>,
    /// `.rela.plt`.
    pub rela_plt: Vec<Rela>,
    /// Dynamic entries carried over unchanged (init/fini arrays, DT_INIT/FINI).
    pub carried_dynamic: Vec<(u64, u64)>,
    /// Whether lld marked text relocations.
    pub textrel: bool,
}

struct Rd<'a> {
    b: &'a [u8],
}

impl Rd<'_> {
    fn bytes(&self, off: u64, len: u64) -> Result<&[u8]> {
        let start = usize::try_from(off)?;
        let end = start
            .checked_add(usize::try_from(len)?)
            .context("range overflows")?;
        self.b.get(start..end).with_context(|| {
            format!(
                "range {start:#x}..{end:#x} is outside the linked file ({:#x} bytes)",
                self.b.len()
            )
        })
    }
    fn u16(&self, off: u64) -> Result<u16> {
        Ok(u16::from_le_bytes(self.bytes(off, 2)?.try_into()?))
    }
    fn u32(&self, off: u64) -> Result<u32> {
        Ok(u32::from_le_bytes(self.bytes(off, 4)?.try_into()?))
    }
    fn u64(&self, off: u64) -> Result<u64> {
        Ok(u64::from_le_bytes(self.bytes(off, 8)?.try_into()?))
    }
}

struct Section {
    name: String,
    addr: u64,
    offset: u64,
    size: u64,
}

/// Parses lld's output (an ordinary little-endian ELF64 with section headers).
pub fn parse(b: &[u8]) -> Result<Linked> {
    let r = Rd { b };
    ensure!(
        b.len() >= 64 && &b[..4] == b"\x7fELF" && b[4] == 2 && b[5] == 1,
        "not a little-endian ELF64 file"
    );
    let entry = r.u64(0x18)?;
    let phoff = r.u64(0x20)?;
    let shoff = r.u64(0x28)?;
    let phnum = u64::from(r.u16(0x38)?);
    let shnum = u64::from(r.u16(0x3C)?);
    let shstrndx = u64::from(r.u16(0x3E)?);

    let mut sections = Vec::new();
    if shnum > 0 {
        let strtab_hdr = shoff.saturating_add(shstrndx * 64);
        let str_off = r.u64(strtab_hdr.saturating_add(24))?;
        let str_size = r.u64(strtab_hdr.saturating_add(32))?;
        let names = r.bytes(str_off, str_size)?;
        for i in 0..shnum {
            let s = shoff.saturating_add(i * 64);
            let name_off = r.u32(s)? as usize;
            let name = cstr(names, name_off)?;
            sections.push(Section {
                name,
                addr: r.u64(s.saturating_add(16))?,
                offset: r.u64(s.saturating_add(24))?,
                size: r.u64(s.saturating_add(32))?,
            });
        }
    }
    // lld leaves out empty segments, so roles come from flags and contents, not positions.
    let dynsym_addr = sections
        .iter()
        .find(|s| s.name == ".dynsym")
        .map(|s| s.addr);
    let mut loads = Vec::new();
    let mut tls = None;
    let mut eh_frame_hdr = None;
    let mut dynamic = None;
    let mut relro = None;
    for i in 0..phnum {
        let p = phoff.saturating_add(i * 56);
        let typ = r.u32(p)?;
        let flags = r.u32(p.saturating_add(4))?;
        let offset = r.u64(p.saturating_add(8))?;
        let vaddr = r.u64(p.saturating_add(16))?;
        let filesz = r.u64(p.saturating_add(32))?;
        let memsz = r.u64(p.saturating_add(40))?;
        let align = r.u64(p.saturating_add(48))?;
        match typ {
            PT_LOAD if memsz > 0 => {
                // The segment holding lld's own dynamic tables is dropped.
                if dynsym_addr.is_some_and(|a| vaddr <= a && a < vaddr.saturating_add(memsz)) {
                    continue;
                }
                let role = if flags & 1 != 0 {
                    0
                } else if flags & 2 == 0 {
                    relro = Some((vaddr, memsz));
                    1
                } else {
                    2
                };
                loads.push(Load {
                    role,
                    vaddr,
                    memsz,
                    flags,
                    bytes: r.bytes(offset, filesz)?.to_vec(),
                });
            }
            PT_TLS if memsz > 0 => tls = Some((vaddr, filesz, memsz, align)),
            PT_GNU_EH_FRAME if memsz > 0 => eh_frame_hdr = Some((vaddr, memsz)),
            PT_DYNAMIC => dynamic = Some((offset, filesz)),
            _ => {}
        }
    }

    let find = |name: &str| {
        sections
            .iter()
            .find(|s| s.name == name && s.size > 0)
            .map(|s| (s.addr, s.size))
    };

    // lld's dynamic table gives the symbol and relocation tables.
    let (dyn_off, dyn_size) = dynamic.context("the linked file has no PT_DYNAMIC")?;
    let mut tags = Vec::new();
    for i in 0..dyn_size / 16 {
        let tag = r.u64(dyn_off.saturating_add(i * 16))?;
        let val = r.u64(dyn_off.saturating_add(i * 16 + 8))?;
        if tag == DT_NULL {
            break;
        }
        tags.push((tag, val));
    }
    let tag = |t: u64| tags.iter().find(|(k, _)| *k == t).map(|(_, v)| *v);
    // In the script's layout file offsets and addresses differ; map through the sections.
    let addr_to_off = |addr: u64| -> Result<u64> {
        sections
            .iter()
            .find(|s| s.addr <= addr && addr < s.addr.saturating_add(s.size) && s.size > 0)
            .map(|s| s.offset.saturating_add(addr - s.addr))
            .with_context(|| format!("address {addr:#x} is in no section of the linked file"))
    };

    let mut dynsyms = Vec::new();
    if let (Some(symtab), Some(strtab), Some(strsz)) =
        (tag(DT_SYMTAB), tag(DT_STRTAB), tag(DT_STRSZ))
    {
        let dynsym = sections
            .iter()
            .find(|s| s.name == ".dynsym")
            .context("no .dynsym section")?;
        ensure!(dynsym.addr == symtab, "DT_SYMTAB does not point at .dynsym");
        let strings = r.bytes(addr_to_off(strtab)?, strsz)?;
        for i in 0..dynsym.size / 24 {
            let s = dynsym.offset.saturating_add(i * 24);
            dynsyms.push(DynSym {
                name: cstr(strings, r.u32(s)? as usize)?,
                info: r.bytes(s.saturating_add(4), 1)?[0],
                other: r.bytes(s.saturating_add(5), 1)?[0],
                shndx: r.u16(s.saturating_add(6))?,
                value: r.u64(s.saturating_add(8))?,
                size: r.u64(s.saturating_add(16))?,
            });
        }
    }
    let read_relas = |addr: Option<u64>, size: Option<u64>| -> Result<Vec<Rela>> {
        let (Some(addr), Some(size)) = (addr, size) else {
            return Ok(Vec::new());
        };
        if size == 0 {
            return Ok(Vec::new());
        }
        let off = addr_to_off(addr)?;
        (0..size / 24)
            .map(|i| {
                let at = off.saturating_add(i * 24);
                let info = r.u64(at.saturating_add(8))?;
                Ok(Rela {
                    offset: r.u64(at)?,
                    sym: (info >> 32) as u32,
                    typ: info as u32,
                    addend: r.u64(at.saturating_add(16))? as i64,
                })
            })
            .collect()
    };
    let rela_dyn = read_relas(tag(DT_RELA), tag(DT_RELASZ))?;
    let rela_plt = read_relas(tag(DT_JMPREL), tag(DT_PLTRELSZ))?;

    let carried = [
        DT_INIT,
        DT_FINI,
        DT_PREINIT_ARRAY,
        DT_PREINIT_ARRAYSZ,
        DT_INIT_ARRAY,
        DT_INIT_ARRAYSZ,
        DT_FINI_ARRAY,
        DT_FINI_ARRAYSZ,
    ];
    // lld names init/fini arrays even when empty; keep only arrays with contents.
    let size_of = |t: u64| match t {
        DT_PREINIT_ARRAY => tag(DT_PREINIT_ARRAYSZ),
        DT_INIT_ARRAY => tag(DT_INIT_ARRAYSZ),
        DT_FINI_ARRAY => tag(DT_FINI_ARRAYSZ),
        DT_PREINIT_ARRAYSZ | DT_INIT_ARRAYSZ | DT_FINI_ARRAYSZ => tag(t),
        _ => Some(1),
    };
    let carried_dynamic = tags
        .iter()
        .filter(|(k, _)| carried.contains(k) && size_of(*k).unwrap_or(0) > 0)
        .copied()
        .collect();
    let textrel = tag(DT_TEXTREL).is_some() || tag(DT_FLAGS).is_some_and(|f| f & DF_TEXTREL != 0);

    if loads.is_empty() {
        bail!("the linked file has no loadable code or data");
    }
    Ok(Linked {
        entry,
        loads,
        tls,
        eh_frame_hdr,
        interp: find(".interp"),
        process_param: find(".sce_process_param"),
        module_param: find(".sce_module_param"),
        got_plt: find(".got.plt"),
        relro,
        dynsyms,
        rela_dyn,
        rela_plt,
        carried_dynamic,
        textrel,
    })
}

fn cstr(table: &[u8], off: usize) -> Result<String> {
    let rest = table
        .get(off..)
        .with_context(|| format!("string offset {off:#x} is outside its table"))?;
    let end = rest
        .iter()
        .position(|&c| c == 0)
        .context("unterminated string")?;
    Ok(String::from_utf8_lossy(&rest[..end]).into_owned())
}
