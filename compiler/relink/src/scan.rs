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

/// What a `syscall` becomes in relinked code: `UD0` (`0F FF`), same length, never emitted
/// by compilers. Executing it raises SIGILL; libkernel's handler services the FreeBSD
/// system call in `rax` (`prx/libkernel/src/syscall.rs`) and resumes after it.
pub const SYSCALL_TRAP: [u8; 2] = [0x0F, 0xFF];

/// Rewrites every `syscall` of `sites` that lies in `code` (loaded at `vaddr`) into
/// [`SYSCALL_TRAP`]; returns how many were rewritten. Other kinds are left alone.
pub fn patch(code: &mut [u8], vaddr: u64, sites: &[SyscallSite]) -> usize {
    let mut n = 0;
    for s in sites.iter().filter(|s| s.instruction == "syscall") {
        let Some(at) = s.address.checked_sub(vaddr).map(|a| a as usize) else {
            continue;
        };
        if let Some(b) = code.get_mut(at..at.saturating_add(2))
            && b == [0x0F, 0x05]
        {
            b.copy_from_slice(&SYSCALL_TRAP);
            n += 1;
        }
    }
    n
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syscalls_become_the_trap_and_nothing_else_changes() {
        // mov eax, 4; syscall; int 0x80; mov eax, 0x050f (the bytes inside an immediate).
        let mut code = vec![
            0xB8, 0x04, 0x00, 0x00, 0x00, 0x0F, 0x05, 0xCD, 0x80, 0xB8, 0x0F, 0x05, 0x00, 0x00,
        ];
        let mut sites = Vec::new();
        scan(&code, 0x1000, &mut sites);
        assert_eq!(
            sites,
            vec![
                SyscallSite {
                    address: 0x1005,
                    instruction: "syscall".into()
                },
                SyscallSite {
                    address: 0x1007,
                    instruction: "int 0x80".into()
                },
            ]
        );
        let before = code.clone();
        assert_eq!(patch(&mut code, 0x1000, &sites), 1);
        assert_eq!(&code[5..7], &SYSCALL_TRAP);
        assert_eq!(code[..5], before[..5]);
        assert_eq!(code[7..], before[7..]);
        // The patched code decodes as UD0 at the same address, and scans clean of syscall.
        let mut again = Vec::new();
        scan(&code, 0x1000, &mut again);
        assert!(again.iter().all(|s| s.instruction != "syscall"));
        let mut d = Decoder::with_ip(64, &code[5..], 0x1005, DecoderOptions::NONE);
        assert_eq!(d.decode().mnemonic(), Mnemonic::Ud0);
        // A site outside the slice is ignored.
        assert_eq!(patch(&mut code, 0x2000, &sites), 0);
    }
}
