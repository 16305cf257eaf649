//! Checks the NID algorithm and the embedded database against `shared/corpus/nid-names/`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    aps5_nid::generate::find_corpus(Path::new(env!("CARGO_MANIFEST_DIR")))
        .expect("shared/corpus/nid-names not found above the crate; these tests need the corpus")
}

fn read(file: &str) -> String {
    let p = corpus().join(file);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The committed data file is exactly what the generator makes from the corpus today.
#[test]
fn committed_database_matches_corpus() {
    let (text, stats) = aps5_nid::generate::build_text(&corpus()).expect("build");
    let committed = include_bytes!("../data/names.tsv.zst");
    let unpacked = zstd::stream::decode_all(&committed[..]).expect("committed file is zstd");
    assert!(
        unpacked == text.as_bytes(),
        "data/names.tsv.zst is stale: run `cargo run -p aps5-nid --example gen_names`"
    );
    let packed = aps5_nid::generate::compress(&text).unwrap();
    assert_eq!(
        packed.as_slice(),
        &committed[..],
        "compressed bytes differ (zstd level or version changed?)"
    );
    println!("database: {stats:?}, {} compressed bytes", committed.len());
    assert_eq!(stats.skipped_slash_lines, 590);
    assert_eq!(stats.skipped_nid_only_rows, 3);
    let live = aps5_nid::database_stats();
    assert_eq!(
        (live.names, live.nids, live.libraries),
        (stats.names, stats.nids, stats.libraries)
    );
    assert!(committed.len() < 3 << 20);
}

/// Every corpus row that carries both a name and a NID agrees with `nid()`.
#[test]
fn algorithm_matches_every_corpus_nid() {
    let mut total = 0;
    let mut matched = 0;
    let mut bad = Vec::new();
    let mut check = |file: &str, nid: &str, name: &str| {
        total += 1;
        if aps5_nid::nid(name) == nid {
            matched += 1;
        } else if bad.len() < 10 {
            bad.push(format!(
                "{file}: {name} -> {} (corpus {nid})",
                aps5_nid::nid(name)
            ));
        }
    };
    let libdoc = read("ps4libdoc-9.00.tsv");
    let mut n_libdoc = 0;
    for line in libdoc.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        check("ps4libdoc-9.00.tsv", f[0], f[1]);
        n_libdoc += 1;
    }
    let aero = read("aerolib.csv");
    let mut n_aero = 0;
    for line in aero.lines() {
        let (nid, name) = line.split_once(' ').unwrap();
        check("aerolib.csv", nid, name);
        n_aero += 1;
    }
    let ps5 = read("ps5-library-exports.tsv");
    let mut n_ps5 = 0;
    for line in ps5.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        if f[1] == f[2] {
            continue; // NID-only row: no name to hash
        }
        check("ps5-library-exports.tsv", f[2], f[1]);
        n_ps5 += 1;
    }
    println!(
        "NID algorithm: {matched}/{total} match (ps4libdoc-9.00.tsv {n_libdoc} rows, aerolib.csv {n_aero}, ps5-library-exports.tsv {n_ps5} named rows)"
    );
    assert!(bad.is_empty(), "mismatches: {bad:#?}");
    assert_eq!(matched, total);
    assert_eq!((n_libdoc, n_aero), (72_185, 51_102));
}

/// Every name of the corpus can be found again through its NID, and every name that
/// ps4libdoc lists as exported resolves to one of its export libraries.
#[test]
fn lookup_finds_every_corpus_name() {
    let mut names: HashSet<String> = HashSet::new();
    for line in read("ps4-names.txt").lines() {
        names.insert(line.trim_end_matches('\r').to_owned());
    }
    for line in read("ps5-names.txt").lines() {
        if !line.starts_with('/') {
            names.insert(line.to_owned());
        }
    }
    for line in read("aerolib.csv").lines() {
        names.insert(line.split_once(' ').unwrap().1.to_owned());
    }
    let mut found = 0;
    for name in &names {
        let known = aps5_nid::lookup(&aps5_nid::nid(name));
        assert!(
            known.iter().any(|k| k.name == name),
            "{name} not in database"
        );
        found += 1;
    }
    println!(
        "lookup: {found}/{} names from ps4-names, ps5-names, aerolib found",
        names.len()
    );

    let mut is_export: HashMap<(String, String), bool> = HashMap::new();
    for line in read("ps4libdoc-libraries.tsv").lines() {
        let f: Vec<&str> = line.split('\t').collect();
        *is_export.entry((f[0].into(), f[1].into())).or_default() |= f[2] == "true";
    }
    let mut exports: HashMap<String, HashSet<String>> = HashMap::new();
    for line in read("ps4libdoc-9.00.tsv").lines() {
        let f: Vec<&str> = line.split('\t').collect();
        if is_export[&(f[3].to_owned(), f[2].to_owned())] {
            exports.entry(f[1].into()).or_default().insert(f[2].into());
        }
    }
    for (name, libs) in &exports {
        let lib = aps5_nid::library_of(name).unwrap_or_else(|| panic!("{name}: no library"));
        assert!(libs.contains(lib), "{name}: {lib} not in {libs:?}");
        let all = aps5_nid::libraries(&aps5_nid::nid(name));
        assert!(
            libs.iter().all(|l| all.contains(&l.as_str())),
            "{name}: {all:?} vs {libs:?}"
        );
    }
    println!(
        "library_of: {} exported names resolve to an exporting library",
        exports.len()
    );
}

#[test]
fn well_known_lookups() {
    let k = aps5_nid::lookup("hcuQgD53UxM");
    assert_eq!(k.len(), 1);
    assert_eq!(k[0].name, "printf");
    assert_eq!(k[0].library, Some("libc"));
    assert_eq!(aps5_nid::library_of("__error"), Some("libkernel"));
    assert_eq!(aps5_nid::library_of("sceKernelUsleep"), Some("libkernel"));
    assert_eq!(
        aps5_nid::library_of("sceSysmoduleLoadModule"),
        Some("libSceSysmodule")
    );
    assert_eq!(aps5_nid::lookup("9BcDykPmo1I")[0].name, "__error");
    // libc names are exported by both libc and libSceLibcInternal on PS4.
    let libs = aps5_nid::libraries(&aps5_nid::nid("printf"));
    assert!(
        libs.contains(&"libc") && libs.contains(&"libSceLibcInternal"),
        "{libs:?}"
    );
    assert_eq!(
        aps5_nid::library_of("surely_not_a_sony_function_name"),
        None
    );
    assert!(aps5_nid::lookup("AAAAAAAAAAA").is_empty());
    assert!(aps5_nid::lookup("not a nid").is_empty());
    assert!(aps5_nid::lookup("").is_empty());
}
