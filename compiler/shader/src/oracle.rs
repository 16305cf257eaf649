//! Test support: runs LLVM 14 `llvm-mc` as the disassembly oracle, many independent cases per
//! process, and compares its text with ours.
//!
//! Each case is written as an atomic block `[0x..,..]` (llvm-mc drops the rest of a block after
//! an invalid encoding instead of desynchronising the stream) followed by a marker instruction
//! whose text splits the output back into cases.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::decode::{Decoded, decode_wave};
use crate::disasm::{Mcpu, Options};
use crate::print::{Ctx, print};

const MARKER: [u8; 4] = [0xA5, 0x5A, 0x63, 0xB0];
const MARKER_TEXT: &str = "\ts_movk_i32 s99, 0x5aa5";

/// Result line recorded for a case on which llvm-mc itself crashed (no oracle answer).
pub const CRASHED: &str = "<llvm-mc crashed>";

/// The `llvm-mc` binary (env `LLVM_MC`, else `llvm-mc-14`, else `llvm-mc`).
pub fn llvm_mc() -> Result<String, String> {
    if let Ok(p) = std::env::var("LLVM_MC") {
        return Ok(p);
    }
    for c in ["llvm-mc-14", "llvm-mc"] {
        if let Ok(o) = Command::new(c).arg("--version").output()
            && String::from_utf8_lossy(&o.stdout).contains("LLVM version 14")
        {
            return Ok(c.to_string());
        }
    }
    Err("LLVM 14 llvm-mc not found: install llvm-14 (Debian `apt-get install llvm-14`) or set LLVM_MC".into())
}

fn mcpu_name(m: Mcpu) -> &'static str {
    match m {
        Mcpu::Gfx1010 => "gfx1010",
        Mcpu::Gfx1013 => "gfx1013",
        Mcpu::Gfx1030 => "gfx1030",
    }
}

/// Disassembles every case with llvm-mc; returns per case the printed lines (tab stripped).
/// An empty list means llvm-mc rejected the case's first instruction.
pub fn run_llvm_mc(cases: &[Vec<u8>], opts: &Options) -> Result<Vec<Vec<String>>, String> {
    let mc = llvm_mc()?;
    let mut all = Vec::with_capacity(cases.len());
    let mut rest = cases;
    while !rest.is_empty() {
        let chunk = &rest[..rest.len().min(4_000)];
        let mut input = String::with_capacity(chunk.len() * 64);
        for c in chunk {
            block(&mut input, c);
            block(&mut input, &MARKER);
        }
        let attr = if opts.wave64 {
            "-mattr=-wavefrontsize32,+wavefrontsize64"
        } else {
            "-mattr=+wavefrontsize32,-wavefrontsize64"
        };
        let mut child = Command::new(&mc)
            .args([
                "-arch=amdgcn",
                &format!("-mcpu={}", mcpu_name(opts.mcpu)),
                attr,
                "-disassemble",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run {mc}: {e}"))?;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let out = child.wait_with_output().map_err(|e| format!("{mc}: {e}"))?;
        writer
            .join()
            .map_err(|_| "writer thread panicked")?
            .map_err(|e| format!("{mc} stdin: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut cur = Vec::new();
        let mut n = 0;
        for line in text.lines().skip(1) {
            if line == MARKER_TEXT {
                all.push(std::mem::take(&mut cur));
                n += 1;
            } else if !line.is_empty() {
                cur.push(line.strip_prefix('\t').unwrap_or(line).to_string());
            }
        }
        if n < chunk.len() {
            // llvm-mc died on case `n` (LLVM 14 asserts on a few encodings): record it, go on.
            if n == 0 && !out.status.success() && text.is_empty() {
                return Err(format!("{mc} failed: {}", out.status));
            }
            all.push(vec![CRASHED.to_string()]);
            rest = &rest[n + 1..];
        } else {
            rest = &rest[chunk.len()..];
        }
    }
    Ok(all)
}

fn block(s: &mut String, bytes: &[u8]) {
    s.push('[');
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!("0x{b:02x}"));
    }
    s.push_str("]\n");
}

/// Our text for a case, with llvm-mc's atomic-block semantics: instructions until the first
/// undecodable one (or fewer than 4 bytes left).
pub fn ours(case: &[u8], opts: &Options) -> Vec<String> {
    let mut v = Vec::new();
    for d in decode_wave(case, opts.mcpu.target(), opts.wave64) {
        match d {
            Decoded::Inst(i) => {
                let mut s = String::new();
                print(
                    &i,
                    Ctx {
                        wave64: opts.wave64,
                        target: opts.mcpu.target(),
                    },
                    &mut s,
                );
                v.push(s);
            }
            Decoded::Unsupported(_) => break,
        }
    }
    v
}
