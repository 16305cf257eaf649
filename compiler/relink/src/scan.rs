//! Raw system calls in the game's code: Linux would receive FreeBSD numbers, so each one
//! in reachable code ([`crate::reach`]) becomes the trap libkernel services.

use iced_x86::{Code, Decoder, DecoderOptions, Instruction, Mnemonic};
use serde::{Deserialize, Serialize};

/// A raw system call instruction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyscallSite {
    /// Base-relative address.
    pub address: u64,
    /// The instruction (`syscall`, `int 0x80`, `sysenter`).
    pub instruction: String,
}

/// The name of a raw system call instruction, or `None`.
pub(crate) fn syscall_name(ins: &Instruction) -> Option<&'static str> {
    match ins.mnemonic() {
        Mnemonic::Syscall => Some("syscall"),
        Mnemonic::Sysenter => Some("sysenter"),
        Mnemonic::Int if ins.code() == Code::Int_imm8 && ins.immediate8() == 0x80 => {
            Some("int 0x80")
        }
        _ => None,
    }
}

/// Whether `code` holds any of the bytes every raw system call contains (0F 05, 0F 34,
/// CD 80): without them there is nothing to look for.
pub(crate) fn may_hold_syscalls(code: &[u8]) -> bool {
    code.windows(2)
        .any(|w| matches!(w, [0x0F, 0x05] | [0x0F, 0x34] | [0xCD, 0x80]))
}

/// Linear-sweep decode of one executable segment: every place a decoder reading straight
/// through the bytes sees a system call, reachable or not (used to report the byte
/// patterns that reachable-code decoding left alone).
pub fn sweep(code: &[u8], vaddr: u64, out: &mut Vec<SyscallSite>) {
    if !may_hold_syscalls(code) {
        return;
    }
    let d = Decoder::with_ip(64, code, vaddr, DecoderOptions::NONE);
    for ins in d {
        if let Some(name) = syscall_name(&ins) {
            out.push(SyscallSite {
                address: ins.ip(),
                instruction: name.to_owned(),
            });
        }
    }
}

/// What a `syscall` becomes in relinked code: `UD0` (`0F FF`), same length, never emitted
/// by compilers. Executing it raises SIGILL; libkernel's handler services the FreeBSD
/// system call in `rax` (`prx/libkernel/src/syscall.rs`) and resumes after it.
pub const SYSCALL_TRAP: [u8; 2] = [0x0F, 0xFF];

/// Rewrites every site of `sites` that lies in `code` (loaded at `vaddr`) into
/// [`SYSCALL_TRAP`]; returns how many were rewritten. All three instructions are two bytes
/// long, as the trap is; `int 0x80` and `sysenter` reached by the program's flow get the
/// same trap (libkernel serves them with the `syscall` convention).
pub fn patch(code: &mut [u8], vaddr: u64, sites: &[SyscallSite]) -> usize {
    let mut n = 0;
    for s in sites {
        let Some(at) = s.address.checked_sub(vaddr).map(|a| a as usize) else {
            continue;
        };
        if let Some(b) = code.get_mut(at..at.saturating_add(2))
            && matches!(b, [0x0F, 0x05] | [0x0F, 0x34] | [0xCD, 0x80])
        {
            b.copy_from_slice(&SYSCALL_TRAP);
            n += 1;
        }
    }
    n
}

/// `20 syscall, 1 int 0x80` (how many of each kind).
pub(crate) fn count_by_kind(sites: &[SyscallSite]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for s in sites {
        match counts.iter_mut().find(|(k, _)| *k == s.instruction) {
            Some((_, n)) => *n += 1,
            None => counts.push((&s.instruction, 1)),
        }
    }
    counts
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
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
    fn every_raw_syscall_becomes_the_trap_and_nothing_else_changes() {
        // mov eax, 4; syscall; int 0x80; sysenter; mov eax, 0x050f (the bytes inside an
        // immediate).
        let mut code = vec![
            0xB8, 0x04, 0x00, 0x00, 0x00, 0x0F, 0x05, 0xCD, 0x80, 0x0F, 0x34, 0xB8, 0x0F, 0x05,
            0x00, 0x00,
        ];
        let mut sites = Vec::new();
        sweep(&code, 0x1000, &mut sites);
        let site = |address, i: &str| SyscallSite {
            address,
            instruction: i.into(),
        };
        assert_eq!(
            sites,
            vec![
                site(0x1005, "syscall"),
                site(0x1007, "int 0x80"),
                site(0x1009, "sysenter")
            ]
        );
        let before = code.clone();
        assert_eq!(patch(&mut code, 0x1000, &sites), 3);
        for at in [5, 7, 9] {
            assert_eq!(&code[at..at + 2], &SYSCALL_TRAP);
            let mut d = Decoder::with_ip(64, &code[at..], 0x1000 + at as u64, DecoderOptions::NONE);
            assert_eq!(d.decode().mnemonic(), Mnemonic::Ud0);
        }
        assert_eq!(code[..5], before[..5]);
        assert_eq!(code[11..], before[11..]);
        // No system call is left where there was one (UD0 takes a ModRM byte, so a
        // linear decode after it loses step and reads the immediate's 0F 05: exactly the
        // kind of false site reachable-code decoding avoids).
        let mut again = Vec::new();
        sweep(&code, 0x1000, &mut again);
        assert!(
            again
                .iter()
                .all(|s| ![0x1005, 0x1007, 0x1009].contains(&s.address)),
            "{again:?}"
        );
        // A site outside the slice, or whose bytes are no system call, is ignored.
        assert_eq!(patch(&mut code, 0x2000, &sites), 0);
        assert_eq!(patch(&mut code, 0x1000, &[site(0x1000, "syscall")]), 0);
    }
}
