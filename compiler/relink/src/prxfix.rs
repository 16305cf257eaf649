//! Post-link finishing of a host PRX (used by this crate's build script and by
//! [`crate::PrxSet`]): rename trampoline exports to their NIDs, list the exported NIDs.
//!
//! rustc cannot export a naked function under a name containing `+` or `-`, which 29% of
//! NIDs do; such functions (the variadic and register-preserving trampolines of
//! `aps5-prx-macros`) are exported as `__aps5_nid_<NID, + as _P, - as _M>`. This module
//! rewrites those names in `.dynstr` (the NID is shorter, so it fits in place) and rebuilds
//! the SysV hash table (`DT_HASH`) in place. The PRX crates link with `--hash-style=sysv`
//! so no GNU hash table (ordered by hash) exists to go stale.

use std::collections::BTreeSet;

/// Prefix of a not-yet-renamed trampoline export.
pub const TRAMPOLINE_PREFIX: &[u8] = b"__aps5_nid_";

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const DT_NULL: u64 = 0;
const DT_HASH: u64 = 4;
const DT_STRTAB: u64 = 5;
const DT_SYMTAB: u64 = 6;
const DT_STRSZ: u64 = 10;
const DT_GNU_HASH: u64 = 0x6fff_fef5;

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
}

/// The dynamic symbol table of a host shared library, located by file offsets.
#[derive(Debug, Clone, Copy)]
struct DynTables {
    strtab: usize,
    strsz: usize,
    symtab: usize,
    hash: usize,
    nsyms: usize,
    has_gnu_hash: bool,
}

fn tables(so: &[u8]) -> Result<DynTables, String> {
    if so.get(..4) != Some(b"\x7fELF") || so.get(4) != Some(&2) {
        return Err("not an ELF64 file".into());
    }
    let phoff = u64_at(so, 0x20).ok_or("truncated ELF header")? as usize;
    let phnum = usize::from(u16_at(so, 0x38).ok_or("truncated ELF header")?);
    let mut loads = Vec::new();
    let mut dynamic = None;
    for i in 0..phnum {
        let p = phoff + i * 56;
        let ty = u32_at(so, p).ok_or("truncated program headers")?;
        let off = u64_at(so, p + 8).ok_or("truncated program headers")?;
        let vaddr = u64_at(so, p + 16).ok_or("truncated program headers")?;
        let filesz = u64_at(so, p + 32).ok_or("truncated program headers")?;
        if ty == PT_LOAD {
            loads.push((vaddr, off, filesz));
        } else if ty == PT_DYNAMIC {
            dynamic = Some((off, filesz));
        }
    }
    let to_off = |va: u64| -> Result<usize, String> {
        loads
            .iter()
            .find(|(v, _, sz)| va >= *v && va < v + sz)
            .map(|(v, o, _)| (va - v + o) as usize)
            .ok_or_else(|| format!("address {va:#x} is in no PT_LOAD segment"))
    };
    let (doff, dsz) = dynamic.ok_or("no PT_DYNAMIC")?;
    let (mut strtab, mut strsz, mut symtab, mut hash, mut gnu) = (None, None, None, None, false);
    for i in 0..(dsz / 16) as usize {
        let e = doff as usize + i * 16;
        let tag = u64_at(so, e).ok_or("truncated dynamic table")?;
        let val = u64_at(so, e + 8).ok_or("truncated dynamic table")?;
        match tag {
            DT_NULL => break,
            DT_STRTAB => strtab = Some(to_off(val)?),
            DT_STRSZ => strsz = Some(val as usize),
            DT_SYMTAB => symtab = Some(to_off(val)?),
            DT_HASH => hash = Some(to_off(val)?),
            DT_GNU_HASH => gnu = true,
            _ => {}
        }
    }
    let hash = hash.ok_or("no DT_HASH (link the PRX with -Wl,--hash-style=sysv)")?;
    let nsyms = u32_at(so, hash + 4).ok_or("truncated DT_HASH")? as usize;
    Ok(DynTables {
        strtab: strtab.ok_or("no DT_STRTAB")?,
        strsz: strsz.ok_or("no DT_STRSZ")?,
        symtab: symtab.ok_or("no DT_SYMTAB")?,
        hash,
        nsyms,
        has_gnu_hash: gnu,
    })
}

fn name_at<'a>(so: &'a [u8], t: &DynTables, off: usize) -> Option<&'a [u8]> {
    let s = so.get(t.strtab + off..t.strtab + t.strsz)?;
    let end = s.iter().position(|&b| b == 0)?;
    Some(&s[..end])
}

/// The SysV ELF hash.
pub fn sysv_hash(name: &[u8]) -> u32 {
    let mut h: u32 = 0;
    for &c in name {
        h = (h << 4).wrapping_add(u32::from(c));
        let g = h & 0xf000_0000;
        if g != 0 {
            h ^= g >> 24;
        }
        h &= !g;
    }
    h
}

/// Decodes a trampoline export name to its NID (None if `name` is not one).
pub fn trampoline_nid(name: &[u8]) -> Option<String> {
    let rest = name.strip_prefix(TRAMPOLINE_PREFIX)?;
    let mut out = String::new();
    let mut it = rest.iter();
    while let Some(&c) = it.next() {
        match c {
            b'_' => match it.next()? {
                b'P' => out.push('+'),
                b'M' => out.push('-'),
                _ => return None,
            },
            c if c.is_ascii_alphanumeric() => out.push(c as char),
            _ => return None,
        }
    }
    (out.len() == 11).then_some(out)
}

/// Renames trampoline exports to NIDs and rebuilds `DT_HASH`; returns how many were renamed.
pub fn finalize(so: &mut [u8]) -> Result<usize, String> {
    let t = tables(so)?;
    if t.has_gnu_hash {
        return Err("the library has DT_GNU_HASH; link it with -Wl,--hash-style=sysv".into());
    }
    let mut renamed = 0;
    let mut names: Vec<Vec<u8>> = Vec::with_capacity(t.nsyms);
    for i in 0..t.nsyms {
        let st_name = u32_at(so, t.symtab + i * 24).ok_or("truncated dynsym")? as usize;
        let name = name_at(so, &t, st_name)
            .ok_or("bad dynsym name offset")?
            .to_vec();
        if let Some(nid) = trampoline_nid(&name) {
            let at = t.strtab + st_name;
            so[at..at + nid.len()].copy_from_slice(nid.as_bytes());
            so[at + nid.len()] = 0;
            names.push(nid.into_bytes());
            renamed += 1;
        } else {
            names.push(name);
        }
    }
    // Rebuild the chains: same bucket count, every symbol re-hashed.
    let nbucket = u32_at(so, t.hash).ok_or("truncated DT_HASH")? as usize;
    if nbucket == 0 {
        return Err("DT_HASH has no buckets".into());
    }
    let buckets = t.hash + 8;
    let chains = buckets + nbucket * 4;
    if so.len() < chains + t.nsyms * 4 {
        return Err("truncated DT_HASH".into());
    }
    so[buckets..chains + t.nsyms * 4].fill(0);
    for (i, name) in names.iter().enumerate().skip(1) {
        let b = sysv_hash(name) as usize % nbucket;
        let head = u32_at(so, buckets + b * 4).expect("checked above");
        so[chains + i * 4..chains + i * 4 + 4].copy_from_slice(&head.to_le_bytes());
        so[buckets + b * 4..buckets + b * 4 + 4].copy_from_slice(&(i as u32).to_le_bytes());
    }
    Ok(renamed)
}

/// NIDs a finished PRX exports: defined, global or weak, named by an 11-character NID.
pub fn exported_nids(so: &[u8]) -> Result<BTreeSet<String>, String> {
    let t = tables(so)?;
    let mut out = BTreeSet::new();
    for i in 1..t.nsyms {
        let s = t.symtab + i * 24;
        let st_name = u32_at(so, s).ok_or("truncated dynsym")? as usize;
        let info = *so.get(s + 4).ok_or("truncated dynsym")?;
        let shndx = u16_at(so, s + 6).ok_or("truncated dynsym")?;
        let bind = info >> 4;
        if shndx == 0 || !(bind == 1 || bind == 2) {
            continue;
        }
        let name = name_at(so, &t, st_name).ok_or("bad dynsym name offset")?;
        if name.len() == 11
            && name
                .iter()
                .all(|&c| c.is_ascii_alphanumeric() || c == b'+' || c == b'-')
        {
            out.insert(String::from_utf8_lossy(name).into_owned());
        }
    }
    Ok(out)
}
