//! aps5-shader: RDNA2 (GFX10) instruction decoder and an LLVM 14 compatible disassembler.
//!
//! * [`decode`] / [`decode_at`] split shader code into [`Instruction`]s (or [`Unsupported`]
//!   items that keep the stream in sync); opcode facts come from generated tables
//!   (`tables.rs`, produced by `tools/gen_tables.py` by probing LLVM 14 `llvm-mc`).
//! * [`disasm`] prints LLVM 14 `llvm-mc -disassemble` text.
//! * [`meta`] gives per-instruction register reads/writes, memory behaviour and branch targets.

pub mod decode;
pub mod disasm;
pub mod meta;
pub mod oracle;
pub mod print;
pub mod table;
#[allow(clippy::all)]
pub(crate) mod tables;

pub use decode::{
    DecodeIter, Decoded, Encoding, Family, Instruction, Target, Unsupported, Words, decode,
    decode_at, decode_at_wave, decode_wave,
};
