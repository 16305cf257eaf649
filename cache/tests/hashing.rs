//! Content hashes against the official BLAKE3 test vectors, streaming file hashing, the
//! memo key encoding and the hex forms.

mod common;

use aps5_cache::{ContentHash, FileStamp, MemoKey, hash_file};
use std::io::Write;

/// The official vectors' input: bytes 0, 1, ..., 250 repeating.
fn vector_input(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// (input length, first 32 bytes of the "hash" output) from test_vectors/test_vectors.json
/// of the BLAKE3 reference repository.
const VECTORS: &[(usize, &str)] = &[
    (
        0,
        "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
    ),
    (
        1,
        "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213",
    ),
    (
        1023,
        "10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11",
    ),
    (
        1025,
        "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444",
    ),
    (
        31744,
        "62b6960e1a44bcc1eb1a611a8d6235b6b4b78f32e7abc4fb4c6cdcce94895c47",
    ),
    (
        102400,
        "bc3e3d41a1146b069abffad3c0d44860cf664390afce4d9661f7902e7943e085",
    ),
];

#[test]
fn content_hash_matches_official_vectors() {
    for &(len, expected) in VECTORS {
        let got = ContentHash::of(&vector_input(len));
        assert_eq!(got.to_hex(), expected, "input length {len}");
        assert_eq!(got.to_string(), expected, "Display, input length {len}");
    }
}

#[test]
fn hash_file_matches_official_vectors() {
    let dir = tempfile::tempdir().unwrap();
    for &(len, expected) in VECTORS {
        let path = dir.path().join(format!("v{len}"));
        std::fs::write(&path, vector_input(len)).unwrap();
        let (hash, size) = hash_file(&path).unwrap();
        assert_eq!(hash.to_hex(), expected, "file of {len} bytes");
        assert_eq!(size, len as u64);
    }
}

#[test]
fn hash_file_large_file_streams_and_matches_in_memory_hash() {
    // 21 MiB + 5 bytes: several 8 MiB pieces on the multi-threaded path, ending mid-chunk.
    let data = common::pseudo_bytes(7, (21 << 20) + 5);
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(&data).unwrap();
    file.flush().unwrap();
    let (hash, size) = hash_file(file.path()).unwrap();
    assert_eq!(size, data.len() as u64);
    // The one-shot, single-threaded reference implementation.
    assert_eq!(hash.0, *blake3::hash(&data).as_bytes());
    assert_eq!(ContentHash::of(&data), hash);
}

#[test]
fn hash_file_missing_file_is_an_error() {
    let err = hash_file(std::path::Path::new("/nonexistent/aps5/file")).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
}

#[test]
fn hex_round_trip_and_rejects() {
    let h = ContentHash::of(b"aps5");
    let hex = h.to_hex();
    assert_eq!(hex.len(), 64);
    assert!(
        hex.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );
    assert_eq!(hex.parse::<ContentHash>().unwrap(), h);
    assert_eq!(hex.to_uppercase().parse::<ContentHash>().unwrap(), h);
    for bad in [
        "",
        "af13",
        &hex[1..],
        &format!("{hex}0"),
        &hex.replace('a', "g"),
    ] {
        let err = bad.parse::<ContentHash>().unwrap_err();
        assert!(err.to_string().contains("64 hex digits"), "{err}");
    }
    assert!(format!("{h:?}").contains(&hex));
}

/// The documented encoding (docs/CACHE.md), written out independently of the crate.
fn documented_memo_key(
    query: &str,
    version: &str,
    inputs: &[ContentHash],
    options: &[u8],
) -> String {
    let mut h = blake3::Hasher::new_derive_key("aps5 2026-11 memo key v1");
    h.update(&(query.len() as u64).to_le_bytes());
    h.update(query.as_bytes());
    h.update(&(version.len() as u64).to_le_bytes());
    h.update(version.as_bytes());
    h.update(&(inputs.len() as u64).to_le_bytes());
    for i in inputs {
        h.update(&i.0);
    }
    h.update(&(options.len() as u64).to_le_bytes());
    h.update(options);
    h.finalize().to_hex().to_string()
}

#[test]
fn memo_key_follows_documented_encoding() {
    let a = ContentHash::of(b"a");
    let b = ContentHash::of(b"b");
    let key = MemoKey::new("relinked", "3", &[a, b], b"opt=1");
    assert_eq!(
        key.0.to_hex(),
        documented_memo_key("relinked", "3", &[a, b], b"opt=1")
    );
    // Pinned: if this changes, every user's memo entries silently become misses.
    assert_eq!(
        MemoKey::new("", "", &[], b"").0.to_hex(),
        documented_memo_key("", "", &[], b"")
    );
    assert_eq!(
        MemoKey::new("q", "1", &[ContentHash([0; 32])], b"").to_string(),
        "c943fc85a7f88283c46be2f180a0331e095caf625b505265dc858173df39854d"
    );
}

#[test]
fn memo_key_fields_are_unambiguous() {
    let a = ContentHash::of(b"a");
    let b = ContentHash::of(b"b");
    let keys = [
        MemoKey::new("ab", "c", &[], b""),
        MemoKey::new("a", "bc", &[], b""),
        MemoKey::new("a", "b", &[], b"c"),
        MemoKey::new("abc", "", &[], b""),
        MemoKey::new("", "abc", &[], b""),
        MemoKey::new("q", "1", &[a, b], b""),
        MemoKey::new("q", "1", &[b, a], b""),
        MemoKey::new("q", "1", &[a], b""),
        MemoKey::new("q", "1", &[], &a.0),
        MemoKey::new("q", "1", &[a], &b.0),
        MemoKey::new("q", "1", &[a, b], b"x"),
        MemoKey::new("q", "2", &[a, b], b""),
    ];
    for (i, x) in keys.iter().enumerate() {
        for y in &keys[i + 1..] {
            assert_ne!(x, y);
        }
    }
    // A memo key never equals the plain content hash of the same bytes.
    assert_ne!(
        MemoKey::new("", "", &[], b"").0,
        ContentHash::of(&[0u8; 32])
    );
}

#[test]
fn file_stamp_reads_metadata() {
    use std::os::unix::fs::MetadataExt;
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(b"12345").unwrap();
    file.flush().unwrap();
    let stamp = FileStamp::of(file.path()).unwrap();
    let meta = std::fs::metadata(file.path()).unwrap();
    assert_eq!(stamp.size, 5);
    assert_eq!(stamp.inode, meta.ino());
    assert_eq!(
        stamp.mtime_ns,
        meta.mtime() * 1_000_000_000 + meta.mtime_nsec()
    );
}
