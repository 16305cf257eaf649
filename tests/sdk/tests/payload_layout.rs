//! The payload layout against the ps5-payload-sdk's facts, read with llvm-readelf-14: a SysV
//! `ET_DYN` with three page-aligned `PT_LOAD`s (R X, R, R W) and `PT_DYNAMIC`, no interpreter,
//! TLS or Sony segment; plain-name imports from the SDK's stub libraries; `DT_GNU_HASH` and
//! no `DT_HASH`; no `DT_INIT_ARRAY` (the start files run the constructors); and errors for
//! what a payload cannot be.

mod common;

use aps5_sdk::Tool;
use std::process::Command;

fn readelf(args: &[&str], path: &std::path::Path) -> String {
    let tool = common::require(Tool::LlvmReadelf);
    let out = Command::new(tool).args(args).arg(path).output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn payloads_have_the_sdk_layout() {
    let tmp = tempfile::tempdir().unwrap();
    // threads needs libkernel (pthread_*) and the C library.
    let src = aps5_sdk::fixtures_dir().join("threads");
    let elf = aps5_sdk::build_payload(&src, &tmp.path().join("threads")).unwrap();
    assert_eq!(elf.file_name().unwrap(), "threads.elf");
    let header = readelf(&["--file-header"], &elf);
    assert!(header.contains("UNIX - System V"), "{header}");
    assert!(header.contains("DYN (Shared object file)"), "{header}");
    let phdrs = readelf(&["--program-headers", "--wide"], &elf);
    let types: Vec<(String, String)> = phdrs
        .lines()
        .map(str::split_whitespace)
        .map(|mut f| (f.next().unwrap_or("").to_owned(), f.collect::<Vec<_>>()))
        .filter(|(t, _)| {
            matches!(t.as_str(), "LOAD" | "DYNAMIC" | "INTERP" | "TLS") || t.starts_with("LOOS")
        })
        .map(|(t, rest)| {
            // Flags are the words between MemSiz and Align.
            let flags = rest[5..rest.len() - 1].join("");
            (t, flags)
        })
        .collect();
    assert_eq!(
        types,
        [
            ("LOAD".to_owned(), "RE".to_owned()),
            ("LOAD".to_owned(), "R".to_owned()),
            ("LOAD".to_owned(), "RW".to_owned()),
            ("DYNAMIC".to_owned(), "RW".to_owned()),
        ],
        "{phdrs}"
    );
    let dynamic = readelf(&["--dynamic-table"], &elf);
    assert!(dynamic.contains("(GNU_HASH)"), "{dynamic}");
    assert!(!dynamic.contains("(HASH)"), "{dynamic}");
    assert!(!dynamic.contains("(INIT_ARRAY)"), "{dynamic}");
    assert!(
        dynamic.contains("Shared library: [libkernel_sys.so]"),
        "{dynamic}"
    );
    assert!(
        dynamic.contains("Shared library: [libSceLibcInternal.so]"),
        "{dynamic}"
    );
    let syms = readelf(&["--dyn-syms", "--wide"], &elf);
    for name in ["pthread_create", "printf"] {
        assert!(
            syms.lines()
                .any(|l| l.contains(" UND ") && l.ends_with(&format!(" {name}"))),
            "{name} is not a plain-name import:\n{syms}"
        );
    }
}

#[test]
fn what_a_payload_cannot_be_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    for (fixture, says) in [
        (
            "module_link",
            "modules/ cannot be built in the payload layout",
        ),
        (
            "cxx_terminate",
            "C++ is not supported in the payload layout",
        ),
        ("shader_blob", "shaders/ are not supported"),
    ] {
        let e = aps5_sdk::build_payload(
            &aps5_sdk::fixtures_dir().join(fixture),
            &tmp.path().join(fixture),
        )
        .expect_err(fixture);
        assert!(format!("{e:#}").contains(says), "{fixture}: {e:#}");
    }
}
