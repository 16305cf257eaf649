//! Errors of the reader: what is wrong, where in the file, and what to do about it.

use std::fmt;

/// The broad class of a reader error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ErrorKind {
    /// Not an ELF or fSELF at all (wrong magic, wrong machine, 32-bit, big-endian).
    NotExecutable,
    /// An encrypted or compressed retail SELF.
    Encrypted,
    /// A structure runs past the end of the file or of its table.
    Truncated,
    /// A value is out of range or inconsistent.
    Malformed,
}

impl ErrorKind {
    fn hint(self) -> &'static str {
        match self {
            ErrorKind::NotExecutable => {
                "pass a decrypted PS4/PS5 eboot.bin, .prx or .sprx (a plain ELF or a fake-signed SELF)"
            }
            ErrorKind::Encrypted => {
                "this is an encrypted retail SELF; decrypt it on a console and pass the decrypted dump (a plain ELF)"
            }
            ErrorKind::Truncated => "the file is cut short; copy or dump it again",
            ErrorKind::Malformed => {
                "the file is damaged or was written by a broken tool; dump or rebuild it again"
            }
        }
    }
}

/// Where an error was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Place {
    /// An offset in the input file.
    File(u64),
    /// An offset in the ELF image unwrapped from an fSELF, with the matching offset in the
    /// fSELF file when the byte came from one of its data entries.
    Unwrapped {
        /// Offset in the unwrapped ELF image.
        elf: u64,
        /// Offset in the fSELF file, if that byte is stored in it.
        file: Option<u64>,
    },
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::File(o) => write!(f, "file offset {o:#x}"),
            Place::Unwrapped {
                elf,
                file: Some(file),
            } => write!(
                f,
                "file offset {file:#x} (ELF offset {elf:#x} inside the fSELF)"
            ),
            Place::Unwrapped { elf, file: None } => write!(
                f,
                "ELF offset {elf:#x} inside the fSELF (not stored in any data entry)"
            ),
        }
    }
}

/// A reader error. `Display` says what is wrong, at which offset, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at {place}: {}", kind.hint())]
pub struct Error {
    /// The class of problem.
    pub kind: ErrorKind,
    /// What is wrong, in words.
    pub message: String,
    /// Where.
    pub place: Place,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, offset: u64, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            place: Place::File(offset),
        }
    }

    pub(crate) fn truncated(offset: u64, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Truncated, offset, message)
    }

    pub(crate) fn malformed(offset: u64, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Malformed, offset, message)
    }

    /// The offset in the input file, when known (for fSELF inputs, the file offset of the
    /// data entry byte; for bytes not stored in the fSELF, `None`).
    pub fn file_offset(&self) -> Option<u64> {
        match self.place {
            Place::File(o) => Some(o),
            Place::Unwrapped { file, .. } => file,
        }
    }

    /// What to do about the error.
    pub fn hint(&self) -> &'static str {
        self.kind.hint()
    }
}

/// Result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;
