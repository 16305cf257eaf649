//! Unwrapping fake-signed SELF containers into the plain ELF image they carry (as a list
//! of borrowed pieces; see [`crate::image`]).
//!
//! Layout (public facts): a 0x20-byte header with the entry count as a u16 at 0x18, then
//! 0x20-byte entries (u64 flags, offset, filesz, memsz), then the ELF header and program
//! headers. Entry flags: bit 1 encrypted, bit 3 compressed, bit 11 "has blocks" (a data
//! entry), bits 20.. the program-header index of the segment the data belongs to.

use crate::error::{Error, ErrorKind, Result};
use crate::image::{Image, Piece};
use crate::rd;

/// PS4 SELF magic.
pub const PS4_SELF_MAGIC: [u8; 4] = [0x4F, 0x15, 0x3D, 0x1D];
/// PS5 SELF magic.
pub const PS5_SELF_MAGIC: [u8; 4] = [0x54, 0x14, 0xF5, 0xEE];

const FLAG_ENCRYPTED: u64 = 1 << 1;
const FLAG_COMPRESSED: u64 = 1 << 3;
const FLAG_DATA: u64 = 0x800;
const ENTRY_SIZE: u64 = 0x20;
const EHDR_SIZE: u64 = 0x40;
const PHDR_SIZE: u64 = 56;

/// Unwraps an fSELF (magic already checked by the caller).
pub(crate) fn unwrap(data: &[u8]) -> Result<Image<'_>> {
    let len = data.len() as u64;
    let count = u64::from(
        rd::u16(data, 0x18).ok_or_else(|| Error::truncated(0, "SELF header (0x20 bytes)"))?,
    );
    if count == 0 {
        return Err(Error::malformed(0x18, "SELF entry count is 0"));
    }
    let elf_at = 0x20 + count * ENTRY_SIZE;
    if elf_at > len {
        return Err(Error::truncated(
            0x20,
            format!(
                "SELF entry table ({count} entries of 0x20 bytes) runs past the end of the file ({len:#x} bytes)"
            ),
        ));
    }
    let ehdr = rd::slice(data, elf_at, EHDR_SIZE)
        .ok_or_else(|| Error::truncated(elf_at, "ELF header after the SELF entry table"))?;
    if ehdr[..4] != *b"\x7fELF" {
        return Err(Error::new(
            ErrorKind::Encrypted,
            elf_at,
            format!(
                "no plaintext ELF header after the {count} SELF entries (found {:02x} {:02x} {:02x} {:02x})",
                ehdr[0], ehdr[1], ehdr[2], ehdr[3]
            ),
        ));
    }
    let phoff = rd::u64(ehdr, 0x20).unwrap_or(0);
    let phentsize = u64::from(rd::u16(ehdr, 0x36).unwrap_or(0));
    let phnum = u64::from(rd::u16(ehdr, 0x38).unwrap_or(0));
    if phentsize != PHDR_SIZE {
        return Err(Error::malformed(
            elf_at + 0x36,
            format!("ELF e_phentsize is {phentsize}, expected 56"),
        ));
    }
    let ph_table_at = elf_at
        .checked_add(phoff)
        .filter(|a| a.checked_add(phnum * PHDR_SIZE).is_some_and(|end| end <= len))
        .ok_or_else(|| {
            Error::truncated(
                elf_at + 0x20,
                format!("program header table (e_phoff {phoff:#x}, {phnum} entries) past the end of the fSELF"),
            )
        })?;
    let phdr_end = phoff
        .checked_add(phnum * PHDR_SIZE)
        .ok_or_else(|| Error::malformed(elf_at + 0x20, "e_phoff overflows"))?;

    // First pass: validate entries and find the image size.
    let mut copies: Vec<(u64, u64, u64, u64)> = Vec::new(); // (entry offset, file off, size, elf off)
    let mut image_len = EHDR_SIZE.max(phdr_end);
    for i in 0..count {
        let at = 0x20 + i * ENTRY_SIZE;
        let flags = rd::u64(data, at).unwrap_or(0);
        if flags & FLAG_DATA == 0 {
            continue; // digests / extents / signatures: not part of the image
        }
        if flags & (FLAG_ENCRYPTED | FLAG_COMPRESSED) != 0 {
            let what = match (flags & FLAG_ENCRYPTED != 0, flags & FLAG_COMPRESSED != 0) {
                (true, true) => "encrypted and compressed",
                (true, false) => "encrypted",
                _ => "compressed",
            };
            return Err(Error::new(
                ErrorKind::Encrypted,
                at,
                format!("SELF entry {i} (flags {flags:#x}) is {what}"),
            ));
        }
        let off = rd::u64(data, at + 8).unwrap_or(0);
        let filesz = rd::u64(data, at + 16).unwrap_or(0);
        let memsz = rd::u64(data, at + 24).unwrap_or(0);
        let seg = (flags >> 20) & 0xFFF;
        if seg >= phnum {
            return Err(Error::malformed(
                at,
                format!(
                    "SELF entry {i} names segment {seg}, but there are only {phnum} program headers"
                ),
            ));
        }
        if off.checked_add(filesz).is_none_or(|end| end > len) {
            return Err(Error::truncated(
                at + 8,
                format!(
                    "SELF entry {i} data ({filesz:#x} bytes at {off:#x}) runs past the end of the file ({len:#x} bytes)"
                ),
            ));
        }
        if memsz != filesz {
            // A plaintext entry stores the segment as is; a size change means compression.
            return Err(Error::new(
                ErrorKind::Encrypted,
                at + 24,
                format!(
                    "SELF entry {i} stores {filesz:#x} bytes for {memsz:#x} bytes of segment (compressed data)"
                ),
            ));
        }
        let ph_at = ph_table_at + seg * PHDR_SIZE;
        let p_offset = rd::u64(data, ph_at + 8).unwrap_or(0);
        let p_filesz = rd::u64(data, ph_at + 32).unwrap_or(0);
        if filesz > p_filesz {
            return Err(Error::malformed(
                at + 16,
                format!(
                    "SELF entry {i} holds {filesz:#x} bytes but segment {seg} has p_filesz {p_filesz:#x}"
                ),
            ));
        }
        let end = p_offset.checked_add(filesz).ok_or_else(|| {
            Error::malformed(
                ph_at + 8,
                format!("segment {seg} p_offset {p_offset:#x} overflows"),
            )
        })?;
        image_len = image_len.max(end);
        copies.push((at, off, filesz, p_offset));
    }
    if copies.is_empty() {
        return Err(Error::malformed(
            0x20,
            "no SELF entry carries segment data (flag 0x800)",
        ));
    }
    // Segments are page-aligned, so the image can be larger than the file, but not wildly.
    let limit = len.saturating_mul(16).saturating_add(16 << 20);
    if image_len > limit {
        return Err(Error::malformed(
            ph_table_at,
            format!(
                "program headers place segment data up to {image_len:#x}, implausible for a {len:#x}-byte file"
            ),
        ));
    }
    let mut pieces = Vec::with_capacity(copies.len() + 2);
    pieces.push(Piece {
        elf: 0,
        bytes: ehdr,
        file: elf_at,
    });
    let ph_len = phnum * PHDR_SIZE;
    pieces.push(Piece {
        elf: phoff,
        bytes: &data[ph_table_at as usize..(ph_table_at + ph_len) as usize],
        file: ph_table_at,
    });
    for (_, off, size, dest) in copies {
        pieces.push(Piece {
            elf: dest,
            bytes: &data[off as usize..(off + size) as usize],
            file: off,
        });
    }
    Ok(Image::from_pieces(pieces))
}
