//! The ELF image the reader works on: the input itself for a plain ELF, or, for an fSELF,
//! the pieces of the input that the unwrapped image would consist of (ELF header, program
//! headers, and each data entry at its segment's `p_offset`). Reading through the pieces
//! avoids copying the whole image: an fSELF is read as fast as a plain ELF.

use crate::error::{Error, Place};

/// A run of image bytes and where it lies in the input file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Piece<'a> {
    /// Offset in the image.
    pub elf: u64,
    /// The bytes (borrowed from the input).
    pub bytes: &'a [u8],
    /// Offset in the input file.
    pub file: u64,
}

/// A possibly sparse ELF image.
#[derive(Debug)]
pub(crate) struct Image<'a> {
    /// Later pieces win where pieces overlap (as when copying them in order).
    pieces: Vec<Piece<'a>>,
    len: u64,
    sparse: bool,
}

impl<'a> Image<'a> {
    /// A plain ELF: one piece, the whole input.
    pub fn plain(data: &'a [u8]) -> Self {
        Image {
            pieces: vec![Piece {
                elf: 0,
                bytes: data,
                file: 0,
            }],
            len: data.len() as u64,
            sparse: false,
        }
    }

    /// An image made of pieces of an fSELF; `len` is the end of the last piece.
    pub fn from_pieces(pieces: Vec<Piece<'a>>) -> Self {
        let len = pieces
            .iter()
            .map(|p| p.elf + p.bytes.len() as u64)
            .max()
            .unwrap_or(0);
        Image {
            pieces,
            len,
            sparse: true,
        }
    }

    /// Size of the (unwrapped) image.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// `len` bytes at image offset `off`, if one piece holds them all.
    #[inline]
    pub fn get(&self, off: u64, len: u64) -> Option<&'a [u8]> {
        self.pieces.iter().rev().find_map(|p| {
            let start = off.checked_sub(p.elf)?;
            crate::rd::slice(p.bytes, start, len)
        })
    }

    /// Where the `len` image bytes at `off` lie in the input file, when one piece holds them
    /// all and no later piece overwrites any of them.
    pub fn file_offset(&self, off: u64, len: u64) -> Option<u64> {
        let end = off.checked_add(len)?;
        for p in self.pieces.iter().rev() {
            let p_end = p.elf + p.bytes.len() as u64;
            if off >= p.elf && end <= p_end {
                return Some(p.file + (off - p.elf));
            }
            if off < p_end && p.elf < end {
                // Part of the range comes from this later piece, part from an earlier one.
                return None;
            }
        }
        None
    }

    /// Copies the pieces into one contiguous image (gaps are zero).
    pub fn materialize(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.len as usize];
        for p in &self.pieces {
            let at = p.elf as usize;
            out[at..at + p.bytes.len()].copy_from_slice(p.bytes);
        }
        out
    }

    /// Rewrites an error found in an fSELF image so that it also names the file offset.
    pub fn relocate_error(&self, mut e: Error) -> Error {
        if !self.sparse {
            return e;
        }
        if let Place::File(elf) = e.place {
            let file = self
                .pieces
                .iter()
                .rev()
                .find(|p| elf >= p.elf && elf - p.elf < (p.bytes.len() as u64).max(1))
                .map(|p| p.file + (elf - p.elf));
            e.place = Place::Unwrapped { elf, file };
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A range is mapped to the file only when one piece holds it and no later piece (which
    /// wins where pieces overlap) covers any of it.
    #[test]
    fn file_offsets_of_image_ranges() {
        let data = [0u8; 64];
        let img = Image::from_pieces(vec![
            Piece {
                elf: 0,
                bytes: &data[..32],
                file: 100,
            },
            Piece {
                elf: 16,
                bytes: &data[..4],
                file: 500,
            },
        ]);
        assert_eq!(img.file_offset(0, 16), Some(100));
        assert_eq!(img.file_offset(20, 12), Some(120));
        assert_eq!(img.file_offset(16, 4), Some(500));
        // Partly overwritten by the later piece, past the end, overflowing.
        assert_eq!(img.file_offset(10, 8), None);
        assert_eq!(img.file_offset(30, 4), None);
        assert_eq!(img.file_offset(u64::MAX, 2), None);
    }
}
