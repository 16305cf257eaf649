//! Post-link finishing of a host PRX (used by this crate's build script and by
//! [`crate::PrxSet`]): rename trampoline exports to their NIDs, list the exported NIDs.
//!
//! rustc cannot export a naked function under a name containing `+` or `-`, which 29% of
//! NIDs do; such functions (the variadic and register-preserving trampolines of
//! `aps5-prx-macros`) are exported as `__aps5_nid_<NID, + as _P, - as _M>`. This module
//! rewrites those names in `.dynstr` (the NID is shorter, so it fits in place) and rebuilds
//! both hash tables in place. The PRX crates link with `--hash-style=both`: the GNU table
//! (`DT_GNU_HASH`) is the one ld.so uses, and its Bloom filter is what makes the several
//! hundred host-library lookups of every program's start-up cheap to reject in a PRX
//! file (with only `DT_HASH`, each walked a hash chain with a string compare per entry:
//! 0.1 ms of a hello's start-up). The GNU table wants the defined symbols grouped by
//! bucket, so the renamed ones move: the symbols are re-sorted, and `.gnu.version` and the
//! symbol numbers in the relocations follow them.

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
const DT_RELA: u64 = 7;
const DT_RELASZ: u64 = 8;
const DT_PLTRELSZ: u64 = 2;
const DT_JMPREL: u64 = 23;
const DT_GNU_HASH: u64 = 0x6fff_fef5;
const DT_VERSYM: u64 = 0x6fff_fff0;

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
    gnu_hash: Option<usize>,
    versym: Option<usize>,
    /// `DT_RELA` and `DT_JMPREL` tables: (file offset, size in bytes).
    relas: [Option<(usize, usize)>; 2],
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
    let (mut strtab, mut strsz, mut symtab, mut hash, mut gnu) = (None, None, None, None, None);
    let (mut versym, mut rela, mut relasz, mut jmprel, mut pltrelsz) =
        (None, None, None, None, None);
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
            DT_GNU_HASH => gnu = Some(to_off(val)?),
            DT_VERSYM => versym = Some(to_off(val)?),
            DT_RELA => rela = Some(to_off(val)?),
            DT_RELASZ => relasz = Some(val as usize),
            DT_JMPREL => jmprel = Some(to_off(val)?),
            DT_PLTRELSZ => pltrelsz = Some(val as usize),
            _ => {}
        }
    }
    let hash = hash.ok_or("no DT_HASH (link the PRX with -Wl,--hash-style=both)")?;
    let nsyms = u32_at(so, hash + 4).ok_or("truncated DT_HASH")? as usize;
    Ok(DynTables {
        strtab: strtab.ok_or("no DT_STRTAB")?,
        strsz: strsz.ok_or("no DT_STRSZ")?,
        symtab: symtab.ok_or("no DT_SYMTAB")?,
        hash,
        nsyms,
        gnu_hash: gnu,
        versym,
        relas: [rela.zip(relasz), jmprel.zip(pltrelsz)],
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

/// The GNU ELF hash (`DT_GNU_HASH`).
pub fn gnu_hash(name: &[u8]) -> u32 {
    name.iter().fold(5381u32, |h, &c| {
        h.wrapping_mul(33).wrapping_add(u32::from(c))
    })
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

/// Renames trampoline exports to NIDs and rebuilds `DT_GNU_HASH` (re-sorting the defined
/// symbols) and `DT_HASH`; returns how many were renamed.
pub fn finalize(so: &mut [u8]) -> Result<usize, String> {
    let t = tables(so)?;
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
    if let Some(g) = t.gnu_hash {
        rebuild_gnu_hash(so, &t, g, &mut names)?;
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

/// Re-sorts the hashed (defined) symbols by GNU hash bucket, moves their `.gnu.version`
/// entries and renumbers the relocations that name them, and rewrites the GNU hash table
/// at `g` in place (same bucket count, Bloom filter size and shift as the linker chose).
fn rebuild_gnu_hash(
    so: &mut [u8],
    t: &DynTables,
    g: usize,
    names: &mut Vec<Vec<u8>>,
) -> Result<(), String> {
    let bad = || "truncated DT_GNU_HASH".to_string();
    let nbuckets = u32_at(so, g).ok_or_else(bad)? as usize;
    let symoffset = u32_at(so, g + 4).ok_or_else(bad)? as usize;
    let words = u32_at(so, g + 8).ok_or_else(bad)? as usize;
    let shift = u32_at(so, g + 12).ok_or_else(bad)?;
    if nbuckets == 0 || words == 0 || !words.is_power_of_two() || symoffset > t.nsyms {
        return Err(format!(
            "DT_GNU_HASH header makes no sense ({nbuckets} buckets, symoffset {symoffset}, \
             {words} Bloom words, {} symbols)",
            t.nsyms
        ));
    }
    let bloom = g + 16;
    let buckets = bloom + words * 8;
    let chains = buckets + nbuckets * 4;
    let end = chains + (t.nsyms - symoffset) * 4;
    if so.len() < end || so.len() < t.symtab + t.nsyms * 24 {
        return Err(bad());
    }
    // New order of the hashed symbols: by bucket, stable (the linker's order within one).
    let mut order: Vec<usize> = (symoffset..t.nsyms).collect();
    order.sort_by_key(|&i| gnu_hash(&names[i]) % nbuckets as u32);
    let mut new_of = (0..t.nsyms).collect::<Vec<usize>>();
    for (k, &old) in order.iter().enumerate() {
        new_of[old] = symoffset + k;
    }
    let permute = |so: &mut [u8], base: usize, size: usize| {
        let old = so[base + symoffset * size..base + t.nsyms * size].to_vec();
        for (k, &o) in order.iter().enumerate() {
            let from = (o - symoffset) * size;
            let to = base + (symoffset + k) * size;
            so[to..to + size].copy_from_slice(&old[from..from + size]);
        }
    };
    permute(so, t.symtab, 24);
    if let Some(v) = t.versym {
        if so.len() < v + t.nsyms * 2 {
            return Err("truncated .gnu.version".into());
        }
        permute(so, v, 2);
    }
    for (off, size) in t.relas.iter().flatten().copied() {
        if so.len() < off + size {
            return Err("truncated relocation table".into());
        }
        for e in (off..off + size - size % 24).step_by(24) {
            let info = u64_at(so, e + 8).expect("checked above");
            let sym = (info >> 32) as usize;
            if sym >= t.nsyms {
                return Err(format!("a relocation names symbol {sym} of {}", t.nsyms));
            }
            let info = ((new_of[sym] as u64) << 32) | (info & 0xffff_ffff);
            so[e + 8..e + 16].copy_from_slice(&info.to_le_bytes());
        }
    }
    let sorted: Vec<Vec<u8>> = order
        .iter()
        .map(|&i| std::mem::take(&mut names[i]))
        .collect();
    names.truncate(symoffset);
    names.extend(sorted);
    // The table itself.
    so[bloom..end].fill(0);
    for (k, name) in names[symoffset..].iter().enumerate() {
        let h = gnu_hash(name);
        let w = bloom + ((h as usize / 64) % words) * 8;
        let bits = u64_at(so, w).expect("checked above")
            | (1u64 << (h % 64))
            | (1u64 << ((h >> shift) % 64));
        so[w..w + 8].copy_from_slice(&bits.to_le_bytes());
        let b = (h % nbuckets as u32) as usize;
        if u32_at(so, buckets + b * 4) == Some(0) {
            let first = (symoffset + k) as u32;
            so[buckets + b * 4..buckets + b * 4 + 4].copy_from_slice(&first.to_le_bytes());
        }
        // Bit 0 marks the last symbol of a bucket's run.
        let last = names
            .get(symoffset + k + 1)
            .is_none_or(|next| gnu_hash(next) % nbuckets as u32 != b as u32);
        let c = (h & !1) | u32::from(last);
        so[chains + k * 4..chains + k * 4 + 4].copy_from_slice(&c.to_le_bytes());
    }
    Ok(())
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
