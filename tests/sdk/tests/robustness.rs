//! Damaged inputs to the SDK's readers (lld output, fSELF) give errors, never panics.

mod common;

#[test]
fn damaged_inputs_do_not_panic() {
    common::require(aps5_sdk::Tool::Clang);
    let tmp = tempfile::tempdir().unwrap();
    aps5_sdk::build_dump_in(
        &aps5_sdk::fixtures_dir().join("tls"),
        &tmp.path().join("d"),
        &aps5_sdk::DumpOptions::default(),
        &tmp.path().join("w"),
    )
    .unwrap();
    let linked = std::fs::read(tmp.path().join("w/eboot/linked.elf")).unwrap();
    let fself = std::fs::read(tmp.path().join("d/eboot.bin")).unwrap();
    assert!(aps5_sdk::linked::parse(&linked).is_ok());
    assert_eq!(
        aps5_sdk::fself::unwrap(&fself).unwrap(),
        std::fs::read(tmp.path().join("w/eboot.elf")).unwrap()
    );
    // Deterministic xorshift: overwrite 1-4 bytes of header/table areas with random values,
    // or truncate.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut ok, mut err) = (0, 0);
    for round in 0..3000 {
        let base = if round % 2 == 0 { &linked } else { &fself };
        let mut m = base.clone();
        if round % 7 == 0 {
            m.truncate((next() as usize) % m.len());
        } else {
            for _ in 0..1 + next() % 4 {
                // Favour the first 4 KiB (headers) and the end (section headers, tables).
                let len = m.len();
                let at = match next() % 3 {
                    0 => (next() as usize) % len.min(4096),
                    1 => len - 1 - (next() as usize) % len.min(4096),
                    _ => (next() as usize) % len,
                };
                m[at] = next() as u8;
            }
        }
        let r = if round % 2 == 0 {
            // Whatever parses also goes through the writer (every import from libc).
            aps5_sdk::linked::parse(&m).and_then(|l| {
                let spec = aps5_sdk::sce::ModuleSpec {
                    prx: false,
                    name: "eboot".into(),
                    original_filename: "eboot.bin".into(),
                };
                let resolve = |_: &str| {
                    Ok(aps5_sdk::sce::ImportTarget {
                        library: "libc".into(),
                        module: "libc".into(),
                        kind: aps5_sdk::SymbolKind::Func,
                    })
                };
                for layout in [aps5_sdk::Layout::Ps4, aps5_sdk::Layout::Ps5] {
                    if let Ok(w) = aps5_sdk::sce::write(&l, &spec, layout, &resolve) {
                        aps5_sdk::fself::wrap(&w.elf, &w.carried_segments, true)?;
                    }
                }
                Ok(())
            })
        } else {
            aps5_sdk::fself::unwrap(&m).map(|_| ())
        };
        match r {
            Ok(()) => ok += 1,
            Err(e) => {
                assert!(!format!("{e:#}").is_empty());
                err += 1
            }
        }
    }
    println!("3000 damaged inputs: {ok} still readable, {err} rejected with an error, 0 panics");
}
