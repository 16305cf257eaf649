//! Refuses raw system calls in the game's code: Linux would receive FreeBSD numbers.

use iced_x86::{Code, Decoder, DecoderOptions, Mnemonic};
use serde::{Deserialize, Serialize};

/// A raw system call instruction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyscallSite {
    /// Base-relative address.
    pub address: u64,
    /// The instruction (`syscall`, `int 0x80`, `sysenter`).
    pub instruction: String,
}

/// Linear-sweep decode of one executable segment.
pub fn scan(code: &[u8], vaddr: u64, out: &mut Vec<SyscallSite>) {
    // Every such instruction contains 0F 05, 0F 34 or CD 80: without those bytes there is
    // nothing to decode.
    let candidate = code
        .windows(2)
        .any(|w| matches!(w, [0x0F, 0x05] | [0x0F, 0x34] | [0xCD, 0x80]));
    if !candidate {
        return;
    }
    let mut d = Decoder::with_ip(64, code, vaddr, DecoderOptions::NONE);
    for ins in &mut d {
        let hit = match ins.mnemonic() {
            Mnemonic::Syscall => Some("syscall".to_owned()),
            Mnemonic::Sysenter => Some("sysenter".to_owned()),
            Mnemonic::Int if ins.code() == Code::Int_imm8 && ins.immediate8() == 0x80 => {
                Some("int 0x80".to_owned())
            }
            _ => None,
        };
        if let Some(instruction) = hit {
            out.push(SyscallSite {
                address: ins.ip(),
                instruction,
            });
        }
    }
}

/// `syscall at 0x1234, int 0x80 at 0x5678, ...` (the first 20).
pub fn describe(sites: &[SyscallSite]) -> String {
    let mut s: Vec<String> = sites
        .iter()
        .take(20)
        .map(|x| format!("{} at {:#x}", x.instruction, x.address))
        .collect();
    if sites.len() > 20 {
        s.push(format!("and {} more", sites.len() - 20));
    }
    s.join(", ")
}
