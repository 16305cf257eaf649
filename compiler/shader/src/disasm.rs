//! LLVM 14 compatible disassembly text.
//!
//! Output format: one line per instruction, exactly as LLVM 14
//! `llvm-mc -arch=amdgcn -mcpu=<cpu> -disassemble` prints it (a tab, the instruction),
//! without the `.text` header. Where llvm-mc rejects an encoding it prints only a warning
//! (`invalid instruction encoding`) on stderr and skips one dword; we print a comment line
//! `\t; invalid instruction encoding: <reason> (offset 0x.., words 0x.. ..)` instead and skip
//! the whole [`Unsupported`](crate::Unsupported) item (its family's length), so the listing
//! keeps one line per undecodable item and stays in sync.

use std::fmt::Write;
use std::str::FromStr;

use crate::decode::{Decoded, Target, decode_wave};
use crate::print::{Ctx, print};

/// GFX10 processor to disassemble for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mcpu {
    /// gfx1010.
    Gfx1010,
    /// gfx1013.
    Gfx1013,
    /// gfx1030 (default).
    #[default]
    Gfx1030,
}

impl FromStr for Mcpu {
    type Err = String;
    fn from_str(s: &str) -> Result<Mcpu, String> {
        match s {
            "gfx1010" => Ok(Mcpu::Gfx1010),
            "gfx1013" => Ok(Mcpu::Gfx1013),
            "gfx1030" => Ok(Mcpu::Gfx1030),
            _ => Err(format!(
                "unknown mcpu `{s}`: expected gfx1010, gfx1013 or gfx1030"
            )),
        }
    }
}

impl Mcpu {
    /// The decoder target.
    pub fn target(self) -> Target {
        match self {
            Mcpu::Gfx1010 => Target::Gfx1010,
            Mcpu::Gfx1013 => Target::Gfx1013,
            Mcpu::Gfx1030 => Target::Gfx1030,
        }
    }
}

/// Disassembly options.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Processor.
    pub mcpu: Mcpu,
    /// Wave64 (default wave32, as llvm-mc for gfx10).
    pub wave64: bool,
}

/// One instruction per line, LLVM 14 `llvm-mc -disassemble` text (no encoding comments).
pub fn disassemble(code: &[u8], opts: &Options) -> String {
    let mut out = String::with_capacity(code.len() * 8);
    disassemble_into(code, opts, &mut out);
    out
}

/// Like [`disassemble`], appending to `out`.
pub fn disassemble_into(code: &[u8], opts: &Options, out: &mut String) {
    let ctx = Ctx {
        wave64: opts.wave64,
        target: opts.mcpu.target(),
    };
    for d in decode_wave(code, opts.mcpu.target(), opts.wave64) {
        match d {
            Decoded::Inst(i) => {
                out.push('\t');
                print(&i, ctx, out);
                out.push('\n');
            }
            Decoded::Unsupported(u) => {
                let _ = write!(
                    out,
                    "\t; invalid instruction encoding: {} (offset 0x{:x}, words",
                    u.reason, u.offset
                );
                for w in u.words.to_vec() {
                    let _ = write!(out, " 0x{w:08x}");
                }
                if u.words.is_empty() {
                    let _ = write!(out, " {} trailing byte(s)", u.len);
                }
                out.push_str(")\n");
            }
        }
    }
}

/// Prints one decoded instruction (no tab, no newline).
pub fn instruction_text(inst: &crate::Instruction, opts: &Options) -> String {
    let mut s = String::new();
    print(
        inst,
        Ctx {
            wave64: opts.wave64,
            target: opts.mcpu.target(),
        },
        &mut s,
    );
    s
}

/// Parses "0x7e000280 0xbf810000" (32-bit words) into little-endian bytes; clear error otherwise.
pub fn parse_hex_words(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for (i, tok) in s
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .enumerate()
    {
        let hex = tok
            .strip_prefix("0x")
            .or_else(|| tok.strip_prefix("0X"))
            .unwrap_or(tok);
        if hex.is_empty() || hex.len() > 8 {
            return Err(format!(
                "word {} `{tok}`: expected a 32-bit hex word like 0x7e000280",
                i + 1
            ));
        }
        let w = u32::from_str_radix(hex, 16).map_err(|e| {
            format!(
                "word {} `{tok}`: not a hex number ({e}); expected e.g. 0x7e000280",
                i + 1
            )
        })?;
        out.extend_from_slice(&w.to_le_bytes());
    }
    if out.is_empty() {
        return Err("no words given: expected hex words like `0x7e000280 0xbf810000`".to_string());
    }
    Ok(out)
}
