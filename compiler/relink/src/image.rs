//! A relinked file as pieces: ranges of the input file and bytes made by the relinker, each at
//! its offset in the output. Most of a relinked executable is its input's segments, unchanged:
//! kept as ranges, they are neither copied into an output buffer nor stored a second time in
//! the cache (docs/RELINK.md, "Cold build speed"); the file is written straight from them.

use std::io::Write;
use std::sync::Arc;

/// Where a piece's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PieceData {
    /// `len` bytes of the input, from offset `from`.
    Input { from: u64, len: u64 },
    /// Bytes the relinker made.
    Bytes(Arc<Vec<u8>>),
}

/// Bytes at offset `at` of the output file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    pub at: u64,
    pub data: PieceData,
}

impl Piece {
    pub fn len(&self) -> u64 {
        match &self.data {
            PieceData::Input { len, .. } => *len,
            PieceData::Bytes(b) => b.len() as u64,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An output file of `len` bytes: its pieces in ascending order, not overlapping; bytes no
/// piece covers are zero.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutputImage {
    pub len: u64,
    pub pieces: Vec<Piece>,
}

/// Why pieces do not make an image of an input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("output image: {0}")]
pub struct ImageError(pub String);

/// Zeros for the gaps between pieces (alignment padding).
static ZEROS: [u8; 64 << 10] = [0; 64 << 10];

impl OutputImage {
    /// Checks that the pieces are in order, inside `len`, and that every input range lies in an
    /// input of `input_len` bytes: what [`OutputImage::slices`] relies on (an image read back
    /// from a cache is checked before use).
    pub fn check(&self, input_len: u64) -> Result<(), ImageError> {
        let mut end = 0u64;
        for p in &self.pieces {
            if p.at < end {
                return Err(ImageError(format!(
                    "the piece at {:#x} overlaps the one ending at {end:#x}",
                    p.at
                )));
            }
            end = p
                .at
                .checked_add(p.len())
                .ok_or_else(|| ImageError(format!("the piece at {:#x} ends past 2^64", p.at)))?;
            if let PieceData::Input { from, len } = p.data
                && from.checked_add(len).is_none_or(|e| e > input_len)
            {
                return Err(ImageError(format!(
                    "the piece at {:#x} reads input bytes {from:#x}+{len:#x}, past the {input_len:#x}-byte input",
                    p.at
                )));
            }
        }
        if end > self.len {
            return Err(ImageError(format!(
                "the pieces end at {end:#x}, past the {:#x}-byte file",
                self.len
            )));
        }
        Ok(())
    }

    /// Every byte of the file in order: the pieces, with zeros between them. `input` is the
    /// file the image was made from; the image must have passed [`OutputImage::check`] for it
    /// (the relinker's own images do).
    pub fn slices<'a>(&'a self, input: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        let mut at = 0u64;
        let mut pieces = self.pieces.iter().peekable();
        std::iter::from_fn(move || {
            let next_at = pieces.peek().map_or(self.len, |p| p.at);
            if at < next_at {
                let n = (next_at - at).min(ZEROS.len() as u64);
                at += n;
                return Some(&ZEROS[..n as usize]);
            }
            let p = pieces.next()?;
            at = p.at + p.len();
            Some(match &p.data {
                PieceData::Input { from, len } => &input[*from as usize..(*from + *len) as usize],
                PieceData::Bytes(b) => &b[..],
            })
        })
        .filter(|s| !s.is_empty())
    }

    /// The whole file in one buffer.
    pub fn to_vec(&self, input: &[u8]) -> Vec<u8> {
        let mut out = crate::writer::output_buffer(self.len as usize);
        for p in &self.pieces {
            let at = p.at as usize;
            let bytes = match &p.data {
                PieceData::Input { from, len } => &input[*from as usize..(*from + *len) as usize],
                PieceData::Bytes(b) => &b[..],
            };
            out[at..at + bytes.len()].copy_from_slice(bytes);
        }
        out
    }

    /// Writes the file to `to`, front to back, straight from the pieces.
    pub fn write_to(&self, input: &[u8], to: &mut impl Write) -> std::io::Result<()> {
        for s in self.slices(input) {
            to.write_all(s)?;
        }
        Ok(())
    }

    /// The bytes the relinker made (what the input does not hold).
    pub fn made_bytes(&self) -> u64 {
        self.pieces
            .iter()
            .filter(|p| matches!(p.data, PieceData::Bytes(_)))
            .map(Piece::len)
            .sum()
    }
}

/// Builds an image from pieces given in any order (empty ones dropped).
pub(crate) fn assemble(len: u64, mut pieces: Vec<Piece>) -> OutputImage {
    pieces.retain(|p| !p.is_empty());
    pieces.sort_by_key(|p| p.at);
    OutputImage { len, pieces }
}

/// The pieces of `bytes` (a segment's file bytes, to be placed at `at`), which started as
/// `original` (at offset `from` of the input): the pages a link-time patch left as they were
/// are input ranges, the others new bytes.
pub(crate) fn diff_pieces(at: u64, bytes: &[u8], original: &[u8], from: u64) -> Vec<Piece> {
    const PAGE: usize = 4096;
    let mut out: Vec<Piece> = Vec::new();
    let mut push = |same: bool, start: usize, end: usize| {
        let piece_at = at + start as u64;
        match (same, out.last_mut()) {
            (
                true,
                Some(Piece {
                    at: pa,
                    data: PieceData::Input { len, .. },
                }),
            ) if *pa + *len == piece_at => *len += (end - start) as u64,
            (true, _) => out.push(Piece {
                at: piece_at,
                data: PieceData::Input {
                    from: from + start as u64,
                    len: (end - start) as u64,
                },
            }),
            (
                false,
                Some(Piece {
                    at: pa,
                    data: PieceData::Bytes(b),
                }),
            ) if *pa + b.len() as u64 == piece_at => {
                Arc::get_mut(b)
                    .expect("made here")
                    .extend_from_slice(&bytes[start..end]);
            }
            (false, _) => out.push(Piece {
                at: piece_at,
                data: PieceData::Bytes(Arc::new(bytes[start..end].to_vec())),
            }),
        }
    };
    let mut start = 0;
    while start < bytes.len() {
        let end = (start + PAGE).min(bytes.len());
        let same = original.get(start..end) == Some(&bytes[start..end]);
        push(same, start, end);
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(b: &[u8]) -> PieceData {
        PieceData::Bytes(Arc::new(b.to_vec()))
    }

    #[test]
    fn gaps_are_zeros_and_input_ranges_are_read() {
        let input = b"0123456789";
        let img = assemble(
            12,
            vec![
                Piece {
                    at: 8,
                    data: bytes(b"xy"),
                },
                Piece {
                    at: 1,
                    data: PieceData::Input { from: 3, len: 4 },
                },
            ],
        );
        img.check(input.len() as u64).unwrap();
        assert_eq!(img.to_vec(input), b"\x003456\0\0\0xy\0\0");
        let mut w = Vec::new();
        img.write_to(input, &mut w).unwrap();
        assert_eq!(w, img.to_vec(input));
    }

    #[test]
    fn a_gap_longer_than_the_zero_buffer() {
        let img = assemble(
            200_001,
            vec![Piece {
                at: 200_000,
                data: bytes(b"!"),
            }],
        );
        let v = img.to_vec(&[]);
        assert_eq!(v.len(), 200_001);
        assert!(v[..200_000].iter().all(|&b| b == 0));
        assert_eq!(v[200_000], b'!');
    }

    #[test]
    fn check_refuses_what_slices_could_not_read() {
        let input_range = |at, from, len| Piece {
            at,
            data: PieceData::Input { from, len },
        };
        let bad = [
            // past the input
            OutputImage {
                len: 100,
                pieces: vec![input_range(0, 8, 4)],
            },
            // overlapping
            OutputImage {
                len: 100,
                pieces: vec![input_range(0, 0, 4), input_range(2, 0, 4)],
            },
            // past the file
            OutputImage {
                len: 3,
                pieces: vec![input_range(0, 0, 4)],
            },
            // offsets that overflow
            OutputImage {
                len: u64::MAX,
                pieces: vec![input_range(u64::MAX - 1, 0, 4)],
            },
        ];
        for img in bad {
            assert!(img.check(10).is_err(), "{img:?}");
        }
    }

    #[test]
    fn diff_keeps_unchanged_pages_as_input() {
        let original: Vec<u8> = (0..5 * 4096 + 100).map(|i| (i % 251) as u8).collect();
        let mut patched = original.clone();
        patched[4096 + 7] ^= 0xFF; // page 1
        patched[2 * 4096] ^= 0xFF; // page 2
        patched[5 * 4096 + 99] ^= 0xFF; // the short last page
        let pieces = diff_pieces(0x10000, &patched, &original, 500);
        let kinds: Vec<(u64, bool, u64)> = pieces
            .iter()
            .map(|p| (p.at, matches!(p.data, PieceData::Input { .. }), p.len()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (0x10000, true, 4096),
                (0x10000 + 4096, false, 2 * 4096),
                (0x10000 + 3 * 4096, true, 2 * 4096),
                (0x10000 + 5 * 4096, false, 100),
            ]
        );
        let mut input = vec![0u8; 500];
        input.extend_from_slice(&original);
        let img = assemble(0x10000 + patched.len() as u64, pieces);
        img.check(input.len() as u64).unwrap();
        assert_eq!(&img.to_vec(&input)[0x10000..], &patched[..]);
    }
}
