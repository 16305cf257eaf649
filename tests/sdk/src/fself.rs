//! The fake-signed SELF wrapper, laid out like the OpenOrbis-made files in
//! `shared/corpus/homebrew/`: header, segment entries, ELF header and program headers,
//! extended info, NPDRM control block, meta blocks, meta footer, signature, then per carried
//! segment an (empty) digest block and the plaintext data.

use anyhow::{Context, Result, ensure};

/// PS4 fSELF magic.
pub const PS4_MAGIC: [u8; 4] = [0x4F, 0x15, 0x3D, 0x1D];
/// PS5 fSELF magic.
pub const PS5_MAGIC: [u8; 4] = [0x54, 0x14, 0xF5, 0xEE];

/// Entry flags: signed (0x4), block table (0x800), 16 KiB blocks (2 << 12).
const DATA_FLAGS: u64 = 0x4 | 0x800 | 0x2000;
/// Entry flags of the digest table that precedes each data entry: signed, has digests.
const DIGEST_FLAGS: u64 = 0x4 | 0x10000;
/// Program authority id and type the OpenOrbis fSELFs carry.
const PAID: u64 = 0x3800_0000_0000_0011;
const PTYPE_FAKE: u64 = 1;
const BLOCK: u64 = 0x4000;

fn u16_at(b: &[u8], o: usize) -> Result<u16> {
    Ok(u16::from_le_bytes(
        b.get(o..o + 2).context("truncated")?.try_into()?,
    ))
}
fn u32_at(b: &[u8], o: usize) -> Result<u32> {
    Ok(u32::from_le_bytes(
        b.get(o..o + 4).context("truncated")?.try_into()?,
    ))
}
fn u64_at(b: &[u8], o: usize) -> Result<u64> {
    Ok(u64::from_le_bytes(
        b.get(o..o + 8).context("truncated")?.try_into()?,
    ))
}

/// Wraps a PS4/PS5 ELF. `segments` are the program-header indices whose data the fSELF carries.
pub fn wrap(elf: &[u8], segments: &[usize], ps5: bool) -> Result<Vec<u8>> {
    let phoff = u64_at(elf, 0x20)? as usize;
    let phnum = usize::from(u16_at(elf, 0x38)?);
    let elf_head = elf
        .get(..phoff + phnum * 56)
        .context("program headers are outside the ELF")?;
    let mut segs = Vec::new();
    for &i in segments {
        let p = phoff + i * 56;
        let offset = u64_at(elf, p + 8)?;
        let filesz = u64_at(elf, p + 32)?;
        ensure!(i < phnum, "segment {i} does not exist");
        segs.push((i, offset, filesz));
    }
    let n = segs.len() * 2;
    let entries_end = 0x20 + n * 0x20;
    let ext_info = (entries_end + elf_head.len()).next_multiple_of(16);
    let npdrm = ext_info + 0x40;
    let meta = npdrm + 0x30;
    let footer = meta + n * 0x50;
    let signature = footer + 0x50;
    let header_end = signature + 0x100;

    let mut out = vec![0u8; header_end];
    let mut pos = header_end;
    let mut entries = Vec::new();
    let mut bodies: Vec<(usize, &[u8])> = Vec::new();
    for (k, &(phdr, offset, filesz)) in segs.iter().enumerate() {
        let digests = filesz.div_ceil(BLOCK).max(1) * 0x20;
        // Digest entry id = index of the data entry that follows it.
        entries.push((DIGEST_FLAGS | (((2 * k + 1) as u64) << 20), pos, digests));
        pos = (pos + digests as usize).next_multiple_of(16);
        let data = elf
            .get(offset as usize..(offset + filesz) as usize)
            .context("segment data outside the ELF")?;
        entries.push((DATA_FLAGS | ((phdr as u64) << 20), pos, filesz));
        bodies.push((pos, data));
        pos = (pos + filesz as usize).next_multiple_of(16);
    }
    let total = pos;
    out.resize(total, 0);

    out[0..4].copy_from_slice(if ps5 { &PS5_MAGIC } else { &PS4_MAGIC });
    out[4] = 0; // version
    out[5] = 1; // mode
    out[6] = 1; // endian
    out[7] = 0x12; // attributes
    out[8] = 1; // content type: self
    out[9] = 1; // program type
    // Header size runs to the end of the NPDRM block; meta size covers meta blocks to signature.
    out[0xC..0xE].copy_from_slice(&u16::try_from(meta)?.to_le_bytes());
    out[0xE..0x10].copy_from_slice(&u16::try_from(header_end - meta)?.to_le_bytes());
    out[0x10..0x18].copy_from_slice(&(total as u64).to_le_bytes());
    out[0x18..0x1A].copy_from_slice(&(n as u16).to_le_bytes());
    out[0x1A..0x1C].copy_from_slice(&0x22u16.to_le_bytes());
    for (i, (flags, offset, size)) in entries.iter().enumerate() {
        let e = 0x20 + i * 0x20;
        out[e..e + 8].copy_from_slice(&flags.to_le_bytes());
        out[e + 8..e + 16].copy_from_slice(&(*offset as u64).to_le_bytes());
        out[e + 16..e + 24].copy_from_slice(&size.to_le_bytes());
        out[e + 24..e + 32].copy_from_slice(&size.to_le_bytes());
    }
    out[entries_end..entries_end + elf_head.len()].copy_from_slice(elf_head);
    out[ext_info..ext_info + 8].copy_from_slice(&PAID.to_le_bytes());
    out[ext_info + 8..ext_info + 16].copy_from_slice(&PTYPE_FAKE.to_le_bytes());
    out[npdrm..npdrm + 2].copy_from_slice(&3u16.to_le_bytes());
    out[footer + 0x30..footer + 0x34].copy_from_slice(&0x10000u32.to_le_bytes());
    for (at, data) in bodies {
        out[at..at + data.len()].copy_from_slice(data);
    }
    Ok(out)
}

/// Undoes [`wrap`] (and reads other fSELFs): copies each data entry to its segment's offset.
pub fn unwrap(b: &[u8]) -> Result<Vec<u8>> {
    ensure!(
        b.len() >= 0x20 && (b[..4] == PS4_MAGIC || b[..4] == PS5_MAGIC),
        "not an fSELF (magic {:02x?})",
        &b[..4.min(b.len())]
    );
    let n = usize::from(u16_at(b, 0x18)?);
    let eh = 0x20 + n * 0x20;
    let elf = b.get(eh..).context("truncated after the segment entries")?;
    let phoff = usize::try_from(u64_at(elf, 0x20)?)?;
    let phnum = usize::from(u16_at(elf, 0x38)?);
    let head = phoff
        .checked_add(phnum * 56)
        .context("program headers out of range")?;
    let span = |off: u64, len: u64| -> Result<(usize, usize)> {
        let off = usize::try_from(off)?;
        let end = off
            .checked_add(usize::try_from(len)?)
            .context("segment range overflows")?;
        Ok((off, end))
    };
    let mut size = head;
    for i in 0..phnum {
        let p = phoff + i * 56;
        let (_, end) = span(u64_at(elf, p + 8)?, u64_at(elf, p + 32)?)?;
        if u32_at(elf, p)? != 0 && end > head {
            size = size.max(end);
        }
    }
    // A plaintext fSELF carries every byte of its ELF, so the ELF cannot be much larger.
    ensure!(
        size <= b.len().saturating_mul(64).max(1 << 20),
        "program headers describe a {size}-byte ELF in a {}-byte fSELF",
        b.len()
    );
    let mut out = vec![0u8; size];
    out[..head].copy_from_slice(elf.get(..head).context("truncated ELF header")?);
    for i in 0..n {
        let e = 0x20 + i * 0x20;
        let flags = u64_at(b, e)?;
        if flags & 0x800 == 0 {
            continue;
        }
        let (offset, end) = span(u64_at(b, e + 8)?, u64_at(b, e + 16)?)?;
        let phdr = ((flags >> 20) & 0xFFF) as usize;
        ensure!(phdr < phnum, "entry {i} names program header {phdr}");
        let (dst, dst_end) = span(u64_at(elf, phoff + phdr * 56 + 8)?, (end - offset) as u64)?;
        let data = b
            .get(offset..end)
            .with_context(|| format!("entry {i} data is outside the file"))?;
        out.get_mut(dst..dst_end)
            .context("segment outside the ELF")?
            .copy_from_slice(data);
    }
    Ok(out)
}
