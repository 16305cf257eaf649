//! Reader for PS4 and PS5 executables and modules.
//!
//! [`parse`] accepts a plain ELF (a decrypted dump: `eboot.bin`, `*.prx`, `*.sprx`) or a
//! fake-signed SELF wrapping one, for PS4 (ABI 0) and PS5 (ABI 2), and decodes everything
//! the porting pipeline needs into an owned [`Module`]: program headers, the dynamic table
//! in either convention, needed modules and libraries, symbols with their `NID#L#M` names
//! resolved, relocations, TLS, init/fini, and the process/module parameters. Encrypted
//! retail SELFs are refused with an error saying that a decrypted dump is needed.
//!
//! No input makes the reader panic: every read is bounds-checked and every inconsistency
//! is an [`Error`] naming the file offset.

mod error;
mod fself;
mod image;
pub mod inspect;
mod model;
pub mod names;
mod rd;
mod reader;
mod sniff;

pub use error::{Error, ErrorKind, Place, Result};
pub use fself::{PS4_SELF_MAGIC, PS5_SELF_MAGIC};
pub use model::*;
pub use sniff::{SNIFF_LEN, Sniff, sniff_module};

/// Decodes a PS4/PS5 executable or module (plain ELF or fSELF).
pub fn parse(data: &[u8]) -> Result<Module> {
    match data.get(..4) {
        Some(m) if m == PS4_SELF_MAGIC || m == PS5_SELF_MAGIC => {
            let platform = if m == PS4_SELF_MAGIC {
                Platform::Ps4
            } else {
                Platform::Ps5
            };
            let image = fself::unwrap(data)?;
            reader::parse_elf(&image, Container::Fself, Some(platform))
                .map_err(|e| image.relocate_error(e))
        }
        Some(m) if m == b"\x7fELF" => {
            reader::parse_elf(&image::Image::plain(data), Container::Elf, None)
        }
        Some(m) => Err(Error::new(
            ErrorKind::NotExecutable,
            0,
            format!(
                "unknown file magic {:02x} {:02x} {:02x} {:02x} (expected an ELF, or an fSELF: 4f 15 3d 1d / 54 14 f5 ee)",
                m[0], m[1], m[2], m[3]
            ),
        )),
        None => Err(Error::truncated(
            0,
            format!("the file is {} bytes, too short for any header", data.len()),
        )),
    }
}

/// Where the `len` bytes at offset `off` of [`unwrap_fself`]'s result lie in `data` itself:
/// `off` for a plain ELF; for an fSELF, the offset in the file of the data entry that holds
/// them all (None if none does).
pub fn fself_file_offset(data: &[u8], off: u64, len: u64) -> Option<u64> {
    match data.get(..4) {
        Some(m) if m == PS4_SELF_MAGIC || m == PS5_SELF_MAGIC => {
            fself::unwrap(data).ok()?.file_offset(off, len)
        }
        _ => off
            .checked_add(len)
            .filter(|e| *e <= data.len() as u64)
            .map(|_| off),
    }
}

/// Unwraps an fSELF into the plain ELF image it carries (a plain ELF is returned as is).
///
/// Useful for checking the reader against standard tools such as `llvm-readelf`.
pub fn unwrap_fself(data: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>> {
    match data.get(..4) {
        Some(m) if m == PS4_SELF_MAGIC || m == PS5_SELF_MAGIC => {
            Ok(std::borrow::Cow::Owned(fself::unwrap(data)?.materialize()))
        }
        _ => Ok(std::borrow::Cow::Borrowed(data)),
    }
}
