//! shaders.pack format (`aps5_cache::pack`): round trip, determinism, a flipped byte anywhere
//! in any entry (data or index) is detected, another producer's pack is refused.

use aps5_cache::pack::{Pack, PackError, PackWriter};

fn key(i: u32) -> [u8; 32] {
    *blake3::hash(&i.to_le_bytes()).as_bytes()
}

fn writer(n: u32) -> PackWriter {
    let mut w = PackWriter::new([7; 32]);
    // Insert in a scrambled order: the index must come out sorted anyway.
    for i in (0..n).rev() {
        let data: Vec<u8> = (0..(i * 37 % 300 + 1)).map(|b| (b ^ i) as u8).collect();
        w.add(key(i), data).unwrap();
    }
    w
}

#[test]
fn round_trip_and_misses() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("packs/shaders.pack");
    writer(500).write(&p).unwrap();
    let pack = Pack::open(&p, &[7; 32]).unwrap();
    assert_eq!(pack.len(), 500);
    pack.verify().unwrap();
    for i in 0..500 {
        let d = pack.get(&key(i)).unwrap().expect("present");
        assert_eq!(d.len() as u32, i * 37 % 300 + 1);
        assert!(
            d.iter()
                .enumerate()
                .all(|(b, &x)| x == (b as u32 ^ i) as u8)
        );
    }
    for i in 500..600 {
        assert!(pack.get(&key(i)).unwrap().is_none());
    }
    let empty = dir.path().join("empty.pack");
    PackWriter::new([7; 32]).write(&empty).unwrap();
    let e = Pack::open(&empty, &[7; 32]).unwrap();
    assert!(e.is_empty() && e.get(&key(1)).unwrap().is_none());
}

#[test]
fn two_writes_of_the_same_entries_are_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.pack"), dir.path().join("b.pack"));
    writer(200).write(&a).unwrap();
    // Another insertion order.
    let mut w = PackWriter::new([7; 32]);
    let src = writer(200);
    let bytes = src.to_bytes();
    let pack_a = Pack::open(&a, &[7; 32]).unwrap();
    for slot in 0..pack_a.len() {
        let k = pack_a.key_at(slot).unwrap();
        w.add(k, pack_a.get(&k).unwrap().unwrap().to_vec()).unwrap();
    }
    w.write(&b).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(std::fs::read(&a).unwrap(), bytes);
}

#[test]
fn every_flipped_byte_is_detected_or_a_miss() {
    let dir = tempfile::tempdir().unwrap();
    let good = writer(6).to_bytes();
    let p = dir.path().join("x.pack");
    for at in 0..good.len() {
        let mut b = good.clone();
        b[at] ^= 0x40;
        std::fs::write(&p, &b).unwrap();
        let pack = match Pack::open(&p, &[7; 32]) {
            Err(_) => continue, // header damage: the whole pack is refused
            Ok(pk) => pk,
        };
        assert!(pack.verify().is_err(), "byte {at}: verify passed");
        // No lookup returns wrong bytes: each key yields its own data, a miss, or an error.
        for i in 0..6 {
            if let Ok(Some(d)) = pack.get(&key(i)) {
                let want: Vec<u8> = (0..(i * 37 % 300 + 1)).map(|x| (x ^ i) as u8).collect();
                assert_eq!(d, &want[..], "byte {at}: key {i} gave wrong data");
            }
        }
    }
}

#[test]
fn another_producer_and_damaged_headers_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.pack");
    writer(3).write(&p).unwrap();
    assert!(matches!(
        Pack::open(&p, &[8; 32]),
        Err(PackError::Identity { .. })
    ));
    let b = std::fs::read(&p).unwrap();
    std::fs::write(&p, &b[..50]).unwrap();
    let e = Pack::open(&p, &[7; 32]).unwrap_err().to_string();
    assert!(e.contains("does not fit"), "{e}");
    std::fs::write(&p, b"nope").unwrap();
    assert!(matches!(
        Pack::open(&p, &[7; 32]),
        Err(PackError::Format { .. })
    ));
}

#[test]
fn duplicate_keys_with_other_bytes_are_refused() {
    let mut w = PackWriter::new([0; 32]);
    w.add(key(1), vec![1]).unwrap();
    w.add(key(1), vec![1]).unwrap();
    assert!(matches!(
        w.add(key(1), vec![2]),
        Err(PackError::Duplicate(_))
    ));
}
