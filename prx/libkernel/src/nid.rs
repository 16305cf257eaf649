//! Run-time NID computation (for `sceKernelDlsym`, which receives symbol names).
//!
//! Same formula as `aps5_nid::nid` (FORMATS.md "NID"); the names database is not needed
//! here, so libkernel does not link that crate.

use sha1::{Digest, Sha1};

const SUFFIX: [u8; 16] = [
    0x51, 0x8D, 0x64, 0xA6, 0x35, 0xDE, 0xD8, 0xC1, 0xE6, 0xB0, 0x39, 0xB1, 0xC3, 0xE5, 0x52, 0x30,
];
const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-";

/// The 11-character NID of a symbol name.
pub fn nid(name: &[u8]) -> String {
    let mut h = Sha1::new();
    h.update(name);
    h.update(SUFFIX);
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    let v = u64::from_le_bytes(b);
    let mut s = String::with_capacity(11);
    for i in 0..10 {
        s.push(ALPHABET[((v >> (58 - 6 * i)) & 0x3F) as usize] as char);
    }
    s.push(ALPHABET[((v & 0xF) << 2) as usize] as char);
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn matches_the_formats_table() {
        assert_eq!(super::nid(b"printf"), "hcuQgD53UxM");
        assert_eq!(super::nid(b"sceKernelLoadStartModule"), "wzvqT4UqKX8");
        assert_eq!(super::nid(b"__stack_chk_guard"), "f7uOxY9mM1U");
    }
}
