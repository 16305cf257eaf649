//! The stub table (`tests/sdk/libraries.tsv`) against outside facts: the NID names database
//! (aps5-nid, built from the public PS4/PS5 symbol lists), the SDK headers (what clang sees
//! declared), and the SysV hash as ld.lld computes it.

mod common;

use aps5_sdk::Tool;
use std::collections::BTreeSet;
use std::process::Command;

#[test]
fn every_entry_is_a_known_export_of_its_library() {
    let table = aps5_sdk::libraries::table().unwrap();
    let mut bad = Vec::new();
    for e in table.values() {
        let nid = aps5_nid::nid(&e.name);
        let known = aps5_nid::lookup(&nid);
        if !known.iter().any(|k| k.name == e.name) {
            bad.push(format!(
                "{}: NID {nid} is not in the names database",
                e.name
            ));
            continue;
        }
        let libs = aps5_nid::libraries(&nid);
        if !libs.contains(&e.library.as_str()) {
            bad.push(format!(
                "{}: the table says library {}, the database says {libs:?}",
                e.name, e.library
            ));
        }
    }
    println!(
        "stub table: {}/{} entries match the NID database (name and library)",
        table.len() - bad.len(),
        table.len()
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Every function and extern object the SDK headers declare has a row, so a fixture that uses
/// any declared name links.
#[test]
fn every_declared_symbol_has_a_row() {
    let clang = common::require(Tool::Clang);
    let include = aps5_sdk::sdk_dir().join("include");
    let mut headers: Vec<String> = Vec::new();
    let mut stack = vec![include.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "h") {
                let rel = p
                    .strip_prefix(&include)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                if !rel.starts_with('_') {
                    headers.push(rel);
                }
            }
        }
    }
    headers.sort();
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("all.c");
    let text: String = headers
        .iter()
        .map(|h| format!("#include <{h}>\n"))
        .collect();
    std::fs::write(&src, text).unwrap();
    let out = Command::new(clang)
        // -fshort-wchar: the SDK's 2-byte wchar_t (wchar.h checks it).
        .args([
            "--target=x86_64-pc-freebsd12-elf",
            "-fshort-wchar",
            "-nostdinc",
            "-isystem",
        ])
        .arg(&include)
        .args(["-fsyntax-only", "-Xclang", "-ast-dump=json"])
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the SDK headers do not compile together: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ast: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut declared = BTreeSet::new();
    for d in ast["inner"].as_array().unwrap() {
        let (Some(kind), Some(name)) = (d["kind"].as_str(), d["name"].as_str()) else {
            continue;
        };
        if d["isImplicit"].as_bool() == Some(true) {
            continue;
        }
        let extern_var = kind == "VarDecl" && d["storageClass"].as_str() == Some("extern");
        if kind == "FunctionDecl" || extern_var {
            declared.insert(name.to_string());
        }
    }
    let table = aps5_sdk::libraries::table().unwrap();
    let missing: Vec<&String> = declared
        .iter()
        .filter(|n| !table.contains_key(*n))
        .collect();
    println!(
        "headers declare {} functions/objects ({} headers); all but {} have a row",
        declared.len(),
        headers.len(),
        missing.len()
    );
    assert!(
        missing.is_empty(),
        "declared but not in libraries.tsv: {missing:?}"
    );
    // Data rows are the objects the headers declare extern, except C++ runtime objects
    // (type_info objects and vtables, mangled `_Z...`) that the C++ compiler refers to
    // without a declaration.
    for e in table.values() {
        if e.kind == aps5_sdk::SymbolKind::Data && !e.name.starts_with("_Z") {
            assert!(
                declared.contains(&e.name),
                "{} is data but not declared",
                e.name
            );
        }
    }
}

/// The SDK's SysV hash agrees with ld.lld's: every symbol of a lld-made `.hash` is found in the
/// bucket the SDK's hash picks.
#[test]
fn sysv_hash_agrees_with_lld() {
    common::require(Tool::Clang);
    let tmp = tempfile::tempdir().unwrap();
    let report = aps5_sdk::build_dump_in(
        &aps5_sdk::fixtures_dir().join("module_link"),
        &tmp.path().join("d"),
        &aps5_sdk::DumpOptions::default(),
        &tmp.path().join("w"),
    )
    .unwrap();
    assert!(!report.modules.is_empty());
    let linked = std::fs::read(tmp.path().join("w/module-mathlib/linked.elf")).unwrap();
    let u16_at = |o: usize| u16::from_le_bytes(linked[o..o + 2].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(linked[o..o + 4].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(linked[o..o + 8].try_into().unwrap()) as usize;
    let shoff = u64_at(0x28);
    let shnum = u16_at(0x3C);
    let shstr = u64_at(shoff + u16_at(0x3E) * 64 + 24);
    let section = |want: &str| {
        (0..shnum)
            .map(|i| shoff + i * 64)
            .find(|&s| {
                let n = shstr + u32_at(s);
                let end = n + linked[n..].iter().position(|&c| c == 0).unwrap();
                &linked[n..end] == want.as_bytes()
            })
            .map(|s| (u64_at(s + 24), u64_at(s + 32)))
            .unwrap_or_else(|| panic!("lld output lacks {want}"))
    };
    let (hash, _) = section(".hash");
    let (dynsym, dynsym_size) = section(".dynsym");
    let (dynstr, _) = section(".dynstr");
    let nbucket = u32_at(hash);
    let nchain = u32_at(hash + 4);
    assert_eq!(nchain, dynsym_size / 24);
    let mut checked = 0;
    for i in 1..nchain {
        let n = dynstr + u32_at(dynsym + i * 24);
        let end = n + linked[n..].iter().position(|&c| c == 0).unwrap();
        let name = &linked[n..end];
        let mut at = u32_at(hash + 8 + (aps5_sdk::sce::elf_hash(name) as usize % nbucket) * 4);
        let mut found = false;
        while at != 0 {
            if at == i {
                found = true;
                break;
            }
            at = u32_at(hash + 8 + nbucket * 4 + at * 4);
        }
        assert!(
            found,
            "{} is not in the bucket the SDK's hash picks",
            String::from_utf8_lossy(name)
        );
        checked += 1;
    }
    assert!(checked >= 5, "too few symbols checked ({checked})");
}

/// The compiler-runtime and atomic helpers the console's libc exports (compiler-rt's names,
/// found in the ps4libdoc export tables of libc.sprx and libSceLibcInternal.sprx): each has a
/// row, so SDK programs link, and each is called by the compiler_rt or stdatomic fixture,
/// whose expected output comes from the host's libgcc/libatomic.
#[test]
fn every_compiler_runtime_export_has_a_row_and_a_fixture_call() {
    const FAMILY: &[&str] = &[
        "absv", "addv", "subv", "mulv", "negv", "add", "sub", "mul", "div", "mod", "udiv", "umod",
        "fix", "float", "neg", "ashl", "ashr", "lshr", "cmp", "ucmp", "clz", "ctz", "ffs",
        "parity", "popcount", "powi", "eq", "ne", "lt", "le", "gt", "ge", "unord", "extend",
        "trunc", "atomic", "sync", "bswap",
    ];
    // GCC's size-generic builtin names: no library ABI, no program calls them.
    const NO_ABI: &[&str] = &[
        "__atomic_load_n",
        "__atomic_store_n",
        "__atomic_exchange_n",
        "__atomic_compare_exchange_n",
    ];
    const GENERIC_ATOMICS: &[&str] = &[
        "__atomic_load",
        "__atomic_store",
        "__atomic_exchange",
        "__atomic_compare_exchange",
    ];
    let corpus = aps5_nid::generate::find_corpus(std::path::Path::new(env!("CARGO_MANIFEST_DIR")))
        .expect("shared/corpus/nid-names not found above the crate; this test needs the corpus");
    let text = std::fs::read_to_string(corpus.join("ps4libdoc-9.00.tsv")).unwrap();
    let mut family = BTreeSet::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let [_, name, library, module] = f[..] else {
            continue;
        };
        let exported = (module == "libc.sprx" && library == "libc")
            || (module == "libSceLibcInternal.sprx" && library == "libSceLibcInternal");
        let rest = name.strip_prefix("__").unwrap_or("");
        if exported
            && FAMILY.iter().any(|p| rest.starts_with(p))
            && rest
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
            && !NO_ABI.contains(&name)
        {
            family.insert(name.to_owned());
        }
    }
    // The whole family, not a sample (182 names less the 4 above in 9.00).
    assert!(
        family.len() > 170,
        "only {} names found: {family:?}",
        family.len()
    );
    let table = aps5_sdk::libraries::table().unwrap();
    let fixtures = aps5_sdk::fixtures_dir();
    let calls = ["compiler_rt", "stdatomic"]
        .map(|f| std::fs::read_to_string(fixtures.join(f).join("main.c")).unwrap())
        .join("\n");
    let mut bad = Vec::new();
    for n in &family {
        if !table.contains_key(n) {
            bad.push(format!("{n}: no row in libraries.tsv"));
        }
        // The generic calls are the compiler's (calls_kept.rs finds them in stdatomic).
        let compiler_emitted = GENERIC_ATOMICS.contains(&n.as_str());
        // A sized call written once for every size: `__atomic_load_##N(` with SIZED(N, ...).
        let sized = n.rsplit_once('_').is_some_and(|(base, size)| {
            calls.contains(&format!("{base}_##N(")) && calls.contains(&format!("SIZED({size},"))
        });
        if !compiler_emitted
            && !sized
            && !calls.contains(&format!("{n}("))
            && !calls.contains(&format!("\"{n}\""))
        {
            bad.push(format!(
                "{n}: no call in tests/fixtures/compiler_rt or stdatomic"
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
