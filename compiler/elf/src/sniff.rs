//! Recognizing a PS4/PS5 module by a file's first bytes, without parsing it: what the build
//! uses to find the modules of a dump wherever they are (a game may load
//! `/app0/plugins/libFoo.prx` by path), reading only a file's head.

use crate::fself::{PS4_SELF_MAGIC, PS5_SELF_MAGIC};
use crate::names::et;

/// How many leading bytes [`sniff_module`] looks at (an fSELF's ELF header follows its entry
/// table: 0x20 + 0x20 per entry).
pub const SNIFF_LEN: usize = 4096;

/// What a file's head says about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sniff {
    /// A PS4/PS5 module: an `ET_SCE_DYNAMIC` ELF, or an fSELF carrying it or an `ET_DYN` ELF.
    Module,
    /// A plain `ET_DYN` ELF (any OS ABI), or an fSELF whose ELF header is encrypted or lies
    /// past the head: a module when its name says so (`.prx`, `.sprx`).
    ModuleIfNamedSo,
    /// Anything else (executables, data, other files).
    Other,
}

/// Reads the kind of a file from its first bytes (up to [`SNIFF_LEN`]).
pub fn sniff_module(head: &[u8]) -> Sniff {
    match head.get(..4) {
        Some(m) if m == b"\x7fELF" => sniff_elf(head, false),
        Some(m) if m == PS4_SELF_MAGIC || m == PS5_SELF_MAGIC => {
            let Some(count) = head.get(0x18..0x1A) else {
                return Sniff::ModuleIfNamedSo;
            };
            let at = 0x20 + 0x20 * usize::from(u16::from_le_bytes([count[0], count[1]]));
            match head.get(at..) {
                Some(elf) if elf.starts_with(b"\x7fELF") => sniff_elf(elf, true),
                _ => Sniff::ModuleIfNamedSo,
            }
        }
        _ => Sniff::Other,
    }
}

fn sniff_elf(h: &[u8], in_self: bool) -> Sniff {
    let Some(h) = h.get(..0x14) else {
        return Sniff::Other;
    };
    let (class, data) = (h[4], h[5]);
    let e_type = u16::from_le_bytes([h[0x10], h[0x11]]);
    let machine = u16::from_le_bytes([h[0x12], h[0x13]]);
    if class != 2 || data != 1 || machine != goblin::elf::header::EM_X86_64 {
        return Sniff::Other;
    }
    match e_type {
        et::SCE_DYNAMIC => Sniff::Module,
        goblin::elf::header::ET_DYN if in_self => Sniff::Module,
        // A plain shared object (FreeBSD's or another OS's) may be any library a package
        // carries as data: a module only when named like one.
        goblin::elf::header::ET_DYN => Sniff::ModuleIfNamedSo,
        _ => Sniff::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elf(e_type: u16, os_abi: u8, machine: u16) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 2;
        h[5] = 1;
        h[7] = os_abi;
        h[0x10..0x12].copy_from_slice(&e_type.to_le_bytes());
        h[0x12..0x14].copy_from_slice(&machine.to_le_bytes());
        h
    }

    fn wrap(count: u16, inner: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 0x20 + 0x20 * usize::from(count)];
        f[..4].copy_from_slice(&PS4_SELF_MAGIC);
        f[0x18..0x1A].copy_from_slice(&count.to_le_bytes());
        f.extend_from_slice(inner);
        f
    }

    #[test]
    fn modules_are_told_from_executables_and_other_files() {
        assert_eq!(sniff_module(&elf(et::SCE_DYNAMIC, 9, 62)), Sniff::Module);
        assert_eq!(sniff_module(&elf(3, 9, 62)), Sniff::ModuleIfNamedSo);
        assert_eq!(sniff_module(&elf(3, 0, 62)), Sniff::ModuleIfNamedSo);
        assert_eq!(sniff_module(&elf(et::SCE_DYNEXEC, 9, 62)), Sniff::Other);
        assert_eq!(sniff_module(&elf(et::SCE_EXEC, 9, 62)), Sniff::Other);
        assert_eq!(sniff_module(&elf(2, 9, 62)), Sniff::Other);
        // Not x86-64, or 32-bit.
        assert_eq!(sniff_module(&elf(et::SCE_DYNAMIC, 9, 183)), Sniff::Other);
        let mut e32 = elf(et::SCE_DYNAMIC, 9, 62);
        e32[4] = 1;
        assert_eq!(sniff_module(&e32), Sniff::Other);
        assert_eq!(sniff_module(b"\x7fELF\x02\x01"), Sniff::Other);
        assert_eq!(sniff_module(b"hello, world"), Sniff::Other);
        assert_eq!(sniff_module(b""), Sniff::Other);
        // fSELF: the ELF header after the entry table decides.
        assert_eq!(
            sniff_module(&wrap(3, &elf(et::SCE_DYNAMIC, 9, 62))),
            Sniff::Module
        );
        assert_eq!(sniff_module(&wrap(3, &elf(3, 9, 62))), Sniff::Module);
        assert_eq!(
            sniff_module(&wrap(3, &elf(et::SCE_DYNEXEC, 9, 62))),
            Sniff::Other
        );
        assert_eq!(sniff_module(&wrap(3, &[0xAA; 64])), Sniff::ModuleIfNamedSo);
        assert_eq!(
            sniff_module(&wrap(300, &[])[..SNIFF_LEN]),
            Sniff::ModuleIfNamedSo
        );
    }
}
