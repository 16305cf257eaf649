//! PS4/PS5 NIDs.
//!
//! Sony's dynamic linker does not bind symbols by name but by *NID*: an 11-character
//! encoding of the first 8 bytes of `SHA-1(name ‖ suffix)`. Imported symbols are named
//! `NID#L#M`, where `L` and `M` are the library and module ids written in the same
//! 64-letter alphabet. This crate computes NIDs, encodes/decodes the ids, parses symbol
//! names, and maps NIDs back to readable names through a names database that is embedded
//! in the crate (no files are needed at run time).

use std::fmt;

use sha1::{Digest, Sha1};

mod db;
pub mod generate;

pub use db::{DatabaseStats, KnownName, database_stats, libraries, library_of, lookup};

/// The 64 letters of the NID alphabet, in digit order.
pub const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-";

/// The 16 bytes appended to a name before hashing.
pub const NID_SUFFIX: [u8; 16] = [
    0x51, 0x8D, 0x64, 0xA6, 0x35, 0xDE, 0xD8, 0xC1, 0xE6, 0xB0, 0x39, 0xB1, 0xC3, 0xE5, 0x52, 0x30,
];

/// Length of an encoded NID.
pub const NID_LEN: usize = 11;

/// The 64-bit NID value of `name`: the first 8 bytes of SHA-1(name ‖ suffix), little-endian.
pub fn nid_value(name: &str) -> u64 {
    let mut h = Sha1::new();
    h.update(name.as_bytes());
    h.update(NID_SUFFIX);
    let digest = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}

/// Encodes a 64-bit NID value as its 11-character text form.
pub fn encode_nid(v: u64) -> String {
    let mut out = String::with_capacity(NID_LEN);
    // Ten 6-bit digits cover the top 60 bits; the low 4 bits become the last digit,
    // shifted left by 2 so that the encoding is plain base64 of the byte-reversed value.
    for i in 0..10 {
        let shift = 58 - 6 * i;
        out.push(ALPHABET[((v >> shift) & 0x3F) as usize] as char);
    }
    out.push(ALPHABET[((v & 0xF) << 2) as usize] as char);
    out
}

/// Decodes an 11-character NID back to its 64-bit value.
///
/// Returns `None` if the text is not 11 alphabet letters or the last letter has bits set
/// that no NID can have.
pub fn decode_nid(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() != NID_LEN {
        return None;
    }
    let mut v: u64 = 0;
    for &c in &b[..10] {
        v = (v << 6) | u64::from(digit(c)?);
    }
    let last = digit(b[10])?;
    if last & 3 != 0 {
        return None;
    }
    Some((v << 4) | u64::from(last >> 2))
}

/// Computes the NID of a symbol name, e.g. `nid("printf") == "hcuQgD53UxM"`.
pub fn nid(name: &str) -> String {
    encode_nid(nid_value(name))
}

/// Whether `s` looks like an encoded NID (11 alphabet letters, valid last letter).
pub fn is_nid(s: &str) -> bool {
    decode_nid(s).is_some()
}

fn digit(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'-' => Some(63),
        _ => None,
    }
}

/// Encodes a library or module id as big-endian 6-bit digits (1 to 3 letters):
/// 0 → `A`, 1 → `B`, 64 → `BA`.
pub fn encode_id(id: u16) -> String {
    let mut out = String::with_capacity(3);
    let id = u32::from(id);
    if id >= 64 * 64 {
        out.push(ALPHABET[(id >> 12) as usize & 0x3F] as char);
    }
    if id >= 64 {
        out.push(ALPHABET[(id >> 6) as usize & 0x3F] as char);
    }
    out.push(ALPHABET[id as usize & 0x3F] as char);
    out
}

/// Decodes a library or module id (1 to 3 letters of the NID alphabet).
///
/// Returns `None` for empty or longer text, foreign letters, or values above `u16::MAX`.
pub fn decode_id(s: &str) -> Option<u16> {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 3 {
        return None;
    }
    let mut v: u32 = 0;
    for &c in b {
        v = (v << 6) | u32::from(digit(c)?);
    }
    u16::try_from(v).ok()
}

/// A parsed `NID#L#M` symbol name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SymbolName<'a> {
    /// The 11-character NID.
    pub nid: &'a str,
    /// Library id (index into the module's import/export library list).
    pub library_id: u16,
    /// Module id (index into the module's needed-module list; 0 is the module itself).
    pub module_id: u16,
}

impl fmt::Display for SymbolName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}#{}#{}",
            self.nid,
            encode_id(self.library_id),
            encode_id(self.module_id)
        )
    }
}

/// Parses a symbol name of the form `NID#L#M`.
///
/// Returns `None` for anything else (plain names such as `module_start`, wrong NID
/// length, bad id letters, extra `#` parts).
pub fn parse_symbol_name(s: &str) -> Option<SymbolName<'_>> {
    let mut parts = s.split('#');
    let nid = parts.next()?;
    let lib = parts.next()?;
    let module = parts.next()?;
    if parts.next().is_some() || !is_nid(nid) {
        return None;
    }
    Some(SymbolName {
        nid,
        library_id: decode_id(lib)?,
        module_id: decode_id(module)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every vector from FORMATS.md.
    const VECTORS: &[(&str, &str)] = &[
        ("printf", "hcuQgD53UxM"),
        ("malloc", "gQX+4GDQjpM"),
        ("puts", "YQ0navp+YIc"),
        ("exit", "uMei1W9uyNo"),
        ("atexit", "8G2LB+A3rzg"),
        ("memcpy", "Q3VBxCXhUHs"),
        ("strlen", "j4ViWNHEgww"),
        ("__error", "9BcDykPmo1I"),
        ("__stack_chk_fail", "Ou3iL1abvng"),
        ("__stack_chk_guard", "f7uOxY9mM1U"),
        ("sceKernelUsleep", "1jfXLRVzisc"),
        ("sceKernelGetProcParam", "959qrazPIrg"),
        ("sceKernelLoadStartModule", "wzvqT4UqKX8"),
        ("scePthreadExit", "3kg7rT0NQIs"),
        ("sceSysmoduleLoadModule", "g8cM39EUZ6o"),
        ("getpid", "HoLVWNanBBc"),
        // From the libc section of FORMATS.md.
        ("_Stdin", "1TDo-ImqkJc"),
        ("_Stdout", "2sWzhYqFH4E"),
        ("_Stderr", "H8AprKeZtNg"),
        ("Need_sceLibc", "P330P3dFF68"),
        ("__stdinp", "bgAcsbcEznc"),
        ("__stdoutp", "zqJhBxAKfsc"),
        ("__stderrp", "as8Od-tH1BI"),
        ("_CurrentRuneLocale", "chlN6g6UbGo"),
        ("__mb_sb_limit", "fGYLBr2COwA"),
        ("stdout", "3eGXiXpFLt0"),
        ("stderr", "+CUrIMpVuaM"),
    ];

    #[test]
    fn formats_md_vectors() {
        for (name, want) in VECTORS {
            assert_eq!(nid(name), *want, "NID of {name}");
            assert_eq!(nid(name).len(), NID_LEN);
        }
    }

    #[test]
    fn nid_roundtrips_through_u64() {
        for (name, text) in VECTORS {
            let v = decode_nid(text).expect("valid nid");
            assert_eq!(v, nid_value(name));
            assert_eq!(encode_nid(v), *text);
        }
        assert_eq!(encode_nid(0), "AAAAAAAAAAA");
        assert_eq!(encode_nid(u64::MAX), "----------8");
        assert_eq!(decode_nid("----------8"), Some(u64::MAX));
    }

    /// The "base64 of the byte-reversed value" reading from FORMATS.md gives the same text.
    #[test]
    fn nid_equals_reversed_base64() {
        fn b64(bytes: &[u8]) -> String {
            const STD: &[u8; 64] =
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            let mut bits: u128 = 0;
            let mut n = 0;
            let mut out = String::new();
            for &b in bytes {
                bits = (bits << 8) | u128::from(b);
                n += 8;
                while n >= 6 {
                    n -= 6;
                    out.push(STD[((bits >> n) & 0x3F) as usize] as char);
                }
            }
            if n > 0 {
                out.push(STD[((bits << (6 - n)) & 0x3F) as usize] as char);
            }
            out.replace('/', "-")
        }
        for name in ["printf", "a", "", "sceKernelUsleep", "_ZNSt9bad_allocD1Ev"] {
            let v = nid_value(name);
            assert_eq!(nid(name), b64(&v.to_be_bytes()), "{name}");
        }
    }

    #[test]
    fn decode_nid_rejects_bad_text() {
        assert_eq!(decode_nid(""), None);
        assert_eq!(decode_nid("hcuQgD53UxM_"), None);
        assert_eq!(decode_nid("hcuQgD53Ux"), None);
        assert_eq!(decode_nid("hcuQgD53Ux#"), None);
        // Last letter must be a multiple of 4.
        assert_eq!(decode_nid("hcuQgD53UxN"), None);
    }

    #[test]
    fn id_encoding() {
        assert_eq!(encode_id(0), "A");
        assert_eq!(encode_id(1), "B");
        assert_eq!(encode_id(2), "C");
        assert_eq!(encode_id(63), "-");
        assert_eq!(encode_id(64), "BA");
        assert_eq!(encode_id(4095), "--");
        assert_eq!(encode_id(4096), "BAA");
        assert_eq!(encode_id(u16::MAX), "P--");
        for id in 0..=u16::MAX {
            assert_eq!(decode_id(&encode_id(id)), Some(id));
        }
        assert_eq!(decode_id(""), None);
        assert_eq!(decode_id("BAAA"), None);
        assert_eq!(decode_id("Q--"), None); // 65536
        assert_eq!(decode_id("B#"), None);
        assert_eq!(decode_id("AB"), Some(1)); // non-minimal but unambiguous
    }

    #[test]
    fn symbol_names() {
        let s = parse_symbol_name("hcuQgD53UxM#B#C").unwrap();
        assert_eq!(
            s,
            SymbolName {
                nid: "hcuQgD53UxM",
                library_id: 1,
                module_id: 2
            }
        );
        assert_eq!(s.to_string(), "hcuQgD53UxM#B#C");
        let s = parse_symbol_name("9BcDykPmo1I#BA#A").unwrap();
        assert_eq!((s.library_id, s.module_id), (64, 0));
        for bad in [
            "module_start",
            "hcuQgD53UxM",
            "hcuQgD53UxM#B",
            "hcuQgD53UxM#B#C#D",
            "hcuQgD53Ux#B#C",
            "hcuQgD53UxM##C",
            "hcuQgD53UxM#B#",
            "hcuQgD53UxM#B#CCCC",
            "",
            "##",
        ] {
            assert_eq!(parse_symbol_name(bad), None, "{bad}");
        }
    }
}
