//! ELF64 little-endian encoding helpers: string tables, symbols, relocations, the SysV
//! hash table, headers.

use std::collections::HashMap;

/// A string table (offset 0 is the empty string); equal strings share one entry.
#[derive(Debug, Default)]
pub struct StrTab {
    pub bytes: Vec<u8>,
    seen: HashMap<String, u32>,
}

impl StrTab {
    pub fn new() -> Self {
        StrTab {
            bytes: vec![0],
            seen: HashMap::new(),
        }
    }

    pub fn add(&mut self, s: &str) -> u32 {
        if s.is_empty() {
            return 0;
        }
        if let Some(&o) = self.seen.get(s) {
            return o;
        }
        let o = self.bytes.len() as u32;
        self.bytes.extend_from_slice(s.as_bytes());
        self.bytes.push(0);
        self.seen.insert(s.to_owned(), o);
        o
    }
}

/// A zeroed buffer of `len` bytes for an output file. A game-sized output is written once,
/// front to back, and faulting it in 4 KiB pages costs more than writing it; on Linux the
/// buffer asks for transparent huge pages (a hint: the kernel may decline).
pub fn output_buffer(len: usize) -> Vec<u8> {
    const HUGE: usize = 2 << 20;
    if len < 4 * HUGE {
        return vec![0; len];
    }
    let layout = std::alloc::Layout::array::<u8>(len).expect("an output size fits a layout");
    // SAFETY: `layout` has a non-zero size; the pointer comes from the global allocator with
    // the layout a Vec<u8> of capacity `len` uses, and alloc_zeroed initialised every byte.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout);
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        #[cfg(target_os = "linux")]
        {
            let start = (p as usize).next_multiple_of(HUGE);
            let end = (p as usize + len) & !(HUGE - 1);
            if end > start {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
        Vec::from_raw_parts(p, len, len)
    }
}

/// An Elf64_Sym.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sym {
    pub name: u32,
    pub info: u8,
    pub other: u8,
    pub shndx: u16,
    pub value: u64,
    pub size: u64,
}

impl Sym {
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.name.to_le_bytes());
        out.push(self.info);
        out.push(self.other);
        out.extend_from_slice(&self.shndx.to_le_bytes());
        out.extend_from_slice(&self.value.to_le_bytes());
        out.extend_from_slice(&self.size.to_le_bytes());
    }
}

/// An Elf64_Rela.
#[derive(Debug, Clone, Copy)]
pub struct Rela {
    pub offset: u64,
    pub r_type: u32,
    pub sym: u32,
    pub addend: i64,
}

impl Rela {
    pub fn write(&self, out: &mut Vec<u8>) {
        // One 24-byte append: this runs once per relocation.
        let mut b = [0u8; 24];
        b[..8].copy_from_slice(&self.offset.to_le_bytes());
        b[8..16]
            .copy_from_slice(&((u64::from(self.sym) << 32) | u64::from(self.r_type)).to_le_bytes());
        b[16..].copy_from_slice(&self.addend.to_le_bytes());
        out.extend_from_slice(&b);
    }
}

/// A SysV `DT_HASH` table for symbol names (index = position).
pub fn sysv_hash_table(names: &[&[u8]]) -> Vec<u8> {
    let n = names.len();
    let nbucket = (n / 2).max(1);
    let mut buckets = vec![0u32; nbucket];
    let mut chains = vec![0u32; n];
    for (i, name) in names.iter().enumerate().skip(1) {
        let b = crate::prxfix::sysv_hash(name) as usize % nbucket;
        chains[i] = buckets[b];
        buckets[b] = i as u32;
    }
    let mut out = Vec::with_capacity(8 + 4 * (nbucket + n));
    out.extend_from_slice(&(nbucket as u32).to_le_bytes());
    out.extend_from_slice(&(n as u32).to_le_bytes());
    for b in buckets {
        out.extend_from_slice(&b.to_le_bytes());
    }
    for c in chains {
        out.extend_from_slice(&c.to_le_bytes());
    }
    out
}

/// The GNU hash function (`DT_GNU_HASH`): h = h * 33 + c from 5381.
pub fn gnu_hash(name: &[u8]) -> u32 {
    name.iter().fold(5381u32, |h, &c| {
        h.wrapping_mul(33).wrapping_add(u32::from(c))
    })
}

/// Number of buckets of the GNU hash table for `n` hashed symbols.
pub fn gnu_buckets(n: usize) -> u32 {
    (n / 2).max(1) as u32
}

/// A `DT_GNU_HASH` table over `names` (the whole dynsym, entry 0 included), whose symbols
/// from `symoffset` on are the defined ones, already sorted by `gnu_hash % gnu_buckets(n)`
/// (the order the format requires; undefined symbols are not hashed).
pub fn gnu_hash_table(names: &[&[u8]], symoffset: usize) -> Vec<u8> {
    let hashed = &names[symoffset.min(names.len())..];
    let nbuckets = gnu_buckets(hashed.len());
    // Bloom filter: about 12 bits per symbol, a power of two of 64-bit words.
    let words = (hashed.len() * 12 / 64).max(1).next_power_of_two();
    let shift = 26u32;
    let mut bloom = vec![0u64; words];
    let mut buckets = vec![0u32; nbuckets as usize];
    let mut chain = vec![0u32; hashed.len()];
    for (i, name) in hashed.iter().enumerate() {
        let h = gnu_hash(name);
        let w = (h as usize / 64) % words;
        bloom[w] |= (1u64 << (h % 64)) | (1u64 << ((h >> shift) % 64));
        let b = (h % nbuckets) as usize;
        if buckets[b] == 0 {
            buckets[b] = (symoffset + i) as u32;
        }
        // Bit 0 set on the last symbol of a bucket's run.
        let last = hashed
            .get(i + 1)
            .is_none_or(|next| gnu_hash(next) % nbuckets != h % nbuckets);
        chain[i] = (h & !1) | u32::from(last);
    }
    let mut out = Vec::with_capacity(16 + 8 * words + 4 * (buckets.len() + chain.len()));
    for v in [nbuckets, symoffset as u32, words as u32, shift] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for w in bloom {
        out.extend_from_slice(&w.to_le_bytes());
    }
    for v in buckets.into_iter().chain(chain) {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// An Elf64_Phdr.
#[derive(Debug, Clone, Copy, Default)]
pub struct Phdr {
    pub p_type: u32,
    pub flags: u32,
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
    pub memsz: u64,
    pub align: u64,
}

impl Phdr {
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.p_type.to_le_bytes());
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.vaddr.to_le_bytes());
        out.extend_from_slice(&self.vaddr.to_le_bytes());
        out.extend_from_slice(&self.filesz.to_le_bytes());
        out.extend_from_slice(&self.memsz.to_le_bytes());
        out.extend_from_slice(&self.align.to_le_bytes());
    }
}

/// An Elf64_Shdr.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shdr {
    pub name: u32,
    pub sh_type: u32,
    pub flags: u64,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
    pub info: u32,
    pub align: u64,
    pub entsize: u64,
}

impl Shdr {
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.name.to_le_bytes());
        out.extend_from_slice(&self.sh_type.to_le_bytes());
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(&self.addr.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.size.to_le_bytes());
        out.extend_from_slice(&self.link.to_le_bytes());
        out.extend_from_slice(&self.info.to_le_bytes());
        out.extend_from_slice(&self.align.to_le_bytes());
        out.extend_from_slice(&self.entsize.to_le_bytes());
    }
}

/// Rounds up to a power-of-two alignment.
pub fn align_up(v: u64, a: u64) -> u64 {
    if a <= 1 { v } else { v.div_ceil(a) * a }
}

/// The smallest offset >= `at` congruent to `vaddr` modulo `align`.
pub fn congruent(at: u64, vaddr: u64, align: u64) -> u64 {
    let a = align.max(1);
    let want = vaddr % a;
    let base = at - at % a + want;
    if base >= at { base } else { base + a }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of the GNU hash function published with the format's descriptions
    /// (dl_new_hash in glibc's ld.so).
    #[test]
    fn gnu_hash_known_values() {
        for (name, h) in [
            ("", 0x0000_1505),
            ("printf", 0x156b_2bb8),
            ("exit", 0x7c96_7e3f),
            ("syscall", 0xbac2_12a0),
        ] {
            assert_eq!(gnu_hash(name.as_bytes()), h, "{name:?}");
        }
    }

    /// Table shape: header, Bloom words, buckets pointing at the first symbol of each
    /// bucket's run, chain values with bit 0 ending each run.
    #[test]
    fn gnu_table_layout() {
        // Entry 0, two undefined symbols, then four defined ones sorted by bucket.
        let mut defined = ["alpha", "beta", "gamma", "delta"];
        let nb = gnu_buckets(defined.len());
        defined.sort_by_key(|n| gnu_hash(n.as_bytes()) % nb);
        let mut names: Vec<&[u8]> = vec![b"", b"undef1", b"undef2"];
        names.extend(defined.iter().map(|n| n.as_bytes()));
        let t = gnu_hash_table(&names, 3);
        let word = |i: usize| u32::from_le_bytes(t[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!((word(0), word(1), word(2), word(3)), (nb, 3, 1, 26));
        let buckets: Vec<u32> = (0..nb as usize).map(|b| word(6 + b)).collect();
        let chain: Vec<u32> = (0..4).map(|i| word(6 + nb as usize + i)).collect();
        assert_eq!(t.len(), 16 + 8 + 4 * (nb as usize + 4));
        for (i, n) in defined.iter().enumerate() {
            let h = gnu_hash(n.as_bytes());
            let b = (h % nb) as usize;
            // The bucket names the first symbol of its run.
            let first = 3 + defined
                .iter()
                .position(|m| gnu_hash(m.as_bytes()) % nb == b as u32)
                .unwrap();
            assert_eq!(buckets[b] as usize, first);
            assert_eq!(chain[i] & !1, h & !1);
            let last = defined
                .get(i + 1)
                .is_none_or(|m| gnu_hash(m.as_bytes()) % nb != b as u32);
            assert_eq!(chain[i] & 1 == 1, last, "{n}");
            // The Bloom filter has both bits of every symbol.
            let bloom = u64::from_le_bytes(t[16..24].try_into().unwrap());
            assert_ne!(bloom & (1 << (h % 64)), 0);
            assert_ne!(bloom & (1 << ((h >> 26) % 64)), 0);
        }
    }
}
