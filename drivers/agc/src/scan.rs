//! Static shader discovery: finds PS5 shader headers (and the code each one describes) in
//! arbitrary bytes (an executable, a converted module, a data file), with no help from the
//! program. docs/PACKS.md, "Static scan", describes the method and its measured misses and
//! false positives.
//!
//! A candidate is accepted only when all of these hold:
//! 1. the 8-byte signature: [`shader::MAGIC`] then [`shader::VERSION`] (little endian);
//! 2. [`shader::parse`] accepts the header (every self-relative pointer, count and size inside
//!    `header_size`; a known type; a null code pointer, as stored before `sceAgcCreateShader`);
//! 3. the code sits at the first 256-byte-aligned offset at or after the header's end
//!    (`COMPUTE_PGM_LO`/`SPI_SHADER_PGM_LO_*` address code in 256-byte units, and the fixture
//!    SDK and the SDKs the anchors document lay a header out right before its code), counted
//!    from the header's start, or failing that from the start of the scanned bytes; the
//!    header's `shader_size` bytes there must lie inside the input;
//! 4. those bytes decode with the RDNA2 decoder (wave32, or else wave64) to an `s_endpgm`
//!    with no undecodable word before it, inside `shader_size`.
//!
//! The scan never panics and never reads outside its input.

use crate::shader::{self, HEADER_SIZE, MAGIC, ShaderHeader, VERSION};
use aps5_shader::{Decoded, Target};

/// One program found by [`scan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Byte offset of the header in the scanned input.
    pub header_offset: usize,
    /// The header's length (`header_size`).
    pub header_len: usize,
    /// Byte offset of the code in the scanned input (256-byte aligned relative to the header,
    /// or to the input).
    pub code_offset: usize,
    /// The code's length (`shader_size`).
    pub code_len: usize,
    /// Byte offset of the `s_endpgm` inside the code.
    pub end_offset: usize,
    /// The program is valid as wave64 only (a wave32 decode met an invalid word first).
    pub wave64: bool,
    /// The parsed header.
    pub header: ShaderHeader,
}

impl Found {
    /// The header bytes in `input` (the bytes that were scanned).
    pub fn header_bytes<'a>(&self, input: &'a [u8]) -> &'a [u8] {
        &input[self.header_offset..self.header_offset + self.header_len]
    }
    /// The code bytes in `input`.
    pub fn code_bytes<'a>(&self, input: &'a [u8]) -> &'a [u8] {
        &input[self.code_offset..self.code_offset + self.code_len]
    }
}

/// What the scan looked at, for reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Signature matches.
    pub signatures: usize,
    /// Signature matches whose header `shader::parse` refused.
    pub bad_header: usize,
    /// Headers with no code (out of the input, or no `s_endpgm` before an invalid word).
    pub bad_code: usize,
}

/// The 8-byte signature a stored header begins with.
pub const SIGNATURE: [u8; 8] = {
    let m = MAGIC.to_le_bytes();
    let v = VERSION.to_le_bytes();
    [m[0], m[1], m[2], m[3], v[0], v[1], v[2], v[3]]
};

/// The largest header the scan accepts: the fixed part, 255 + 255 register pairs, semantics
/// and the user-data block fit in far less; a larger `header_size` is a false signature.
pub const MAX_HEADER: usize = 64 * 1024;

/// Finds every shader in `input`. See the module comment for the acceptance rule.
pub fn scan(input: &[u8]) -> Vec<Found> {
    scan_with_stats(input).0
}

/// [`scan`], with counts of the candidates refused.
pub fn scan_with_stats(input: &[u8]) -> (Vec<Found>, Stats) {
    let mut out = Vec::new();
    let mut stats = Stats::default();
    for at in signatures(input) {
        stats.signatures += 1;
        let end = input.len().min(at.saturating_add(MAX_HEADER));
        let Ok(h) = shader::parse(&input[at..end]) else {
            stats.bad_header += 1;
            continue;
        };
        match pair_code(input, at, &h) {
            Some(f) => out.push(f),
            None => stats.bad_code += 1,
        }
    }
    (out, stats)
}

fn pair_code(input: &[u8], at: usize, h: &ShaderHeader) -> Option<Found> {
    let header_end = at + h.header_size as usize;
    let relative = at + (h.header_size as usize).next_multiple_of(256);
    let absolute = header_end.next_multiple_of(256);
    let code_len = h.code_size as usize;
    for (i, code_at) in [relative, absolute].into_iter().enumerate() {
        if i == 1 && absolute == relative {
            break;
        }
        let Some(code) = code_at
            .checked_add(code_len)
            .and_then(|e| input.get(code_at..e))
        else {
            continue;
        };
        for wave64 in [false, true] {
            if let Some(end) = end_of_program(code, wave64) {
                return Some(Found {
                    header_offset: at,
                    header_len: h.header_size as usize,
                    code_offset: code_at,
                    code_len,
                    end_offset: end,
                    wave64,
                    header: h.clone(),
                });
            }
        }
    }
    None
}

/// The offset of the first `s_endpgm` of `code` when every word before it decodes.
pub fn end_of_program(code: &[u8], wave64: bool) -> Option<usize> {
    for d in aps5_shader::decode::decode_wave(code, Target::Gfx1030, wave64) {
        match d {
            Decoded::Inst(i) if i.desc.name == "s_endpgm" => return Some(i.offset),
            Decoded::Inst(_) => {}
            Decoded::Unsupported(_) => return None,
        }
    }
    None
}

/// Offsets of every occurrence of [`SIGNATURE`] (any byte alignment), in order.
pub fn signatures(input: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut from = 0usize;
    std::iter::from_fn(move || {
        while from + SIGNATURE.len() <= input.len() {
            let at = from + find_first_byte(&input[from..input.len() - (SIGNATURE.len() - 1)])?;
            from = at + 1;
            if input[at..at + SIGNATURE.len()] == SIGNATURE {
                return Some(at);
            }
        }
        None
    })
}

/// Position of the first [`SIGNATURE`]`[0]` byte: eight bytes at a time (SWAR zero-byte test).
#[inline]
fn find_first_byte(b: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let pat = LO * SIGNATURE[0] as u64;
    let mut chunks = b.chunks_exact(8);
    let mut base = 0usize;
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes")) ^ pat;
        let z = w.wrapping_sub(LO) & !w & HI;
        if z != 0 {
            return Some(base + (z.trailing_zeros() / 8) as usize);
        }
        base += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&x| x == SIGNATURE[0])
        .map(|p| base + p)
}

const _: () = assert!(HEADER_SIZE >= SIGNATURE.len());
