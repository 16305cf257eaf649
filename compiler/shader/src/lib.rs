//! aps5-shader: RDNA2 (GFX10) instruction decoder and an LLVM 14 compatible disassembler.
//!
//! * [`decode`] / [`decode_at`] split shader code into [`Instruction`]s (or [`Unsupported`]
//!   items that keep the stream in sync); opcode facts come from generated tables
//!   (`tables.rs`, produced by `tools/gen_tables.py` by probing LLVM 14 `llvm-mc`).
//! * [`disasm`] prints LLVM 14 `llvm-mc -disassemble` text.
//! * [`meta`] gives per-instruction register reads/writes, memory behaviour and branch targets;
//!   [`operand::operands`] gives typed ALU operands with modifiers.
//!
//! ```
//! use aps5_shader::disasm::{Options, instruction_text, parse_hex_words};
//! use aps5_shader::{Decoded, Target, decode, meta::meta};
//!
//! // v_mov_b32_e32 v0, 0 ; s_endpgm
//! let code = parse_hex_words("0x7e000280 0xbf810000").unwrap();
//! let mut names = Vec::new();
//! for item in decode(&code, Target::Gfx1030) {
//!     match item {
//!         Decoded::Inst(i) => {
//!             let m = meta(&i, false);
//!             names.push((i.offset, instruction_text(&i, &Options::default()), m.branch.is_some()));
//!         }
//!         Decoded::Unsupported(u) => panic!("{}: {}", u.offset, u.reason),
//!     }
//! }
//! assert_eq!(names[0], (0, "v_mov_b32_e32 v0, 0".to_string(), false));
//! assert_eq!(names[1], (4, "s_endpgm".to_string(), true));
//! ```

/// Identity of this translator: crate version + a hash of its sources (build.rs). Translated
/// shaders kept across processes (the build's content cache, `aps5-out/packs/shaders.pack`)
/// are keyed by it, so a translator change never serves an old translation (docs/PACKS.md).
pub const TRANSLATOR_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "+",
    env!("APS5_SHADER_SOURCE_HASH")
);

pub mod decode;
pub mod disasm;
pub mod meta;
pub mod operand;
pub mod oracle;
pub mod pack;
pub mod print;
pub mod table;
#[allow(clippy::all)]
pub(crate) mod tables;
pub mod translate;

pub use decode::{
    DecodeIter, Decoded, Encoding, Family, Instruction, Target, Unsupported, Words, decode,
    decode_at, decode_at_wave, decode_wave,
};
