//! PS5 payloads (ELFs made like the ps5-payload-sdk's: one `*.elf`, plain-name imports,
//! DT_GNU_HASH only) through the user's three commands: `aps5 init` recognizes the folder,
//! `aps5 build` ports it, `aps5 run` runs it. Built by the fixture SDK's payload layout.

use std::path::Path;

use crate::common::*;

/// A payload of fixture `name` in a dump folder `tmp/<name>`, initialized and built.
fn port_payload(name: &str, tmp: &Path) -> std::path::PathBuf {
    let dump = tmp.join(name);
    aps5_sdk::build_payload(&aps5_sdk::fixtures_dir().join(name), &dump)
        .unwrap_or_else(|e| panic!("building {name} as a payload: {e:#}"));
    init_with_cache_beside(&dump);
    ok(&dump, &["-q", "build"]);
    dump
}

#[test]
fn a_payload_elf_is_initialized_built_and_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("hello");
    aps5_sdk::build_payload(&aps5_sdk::fixtures_dir().join("hello"), &dump).unwrap();
    // init names the single *.elf as the executable.
    let said = ok(&dump, &["init"]);
    assert!(said.contains("hello.elf"), "{said}");
    let cfg = dump.join("aps5.toml");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("cache_dir = \"\"", "cache_dir = \"../cache\"");
    std::fs::write(&cfg, text).unwrap();
    ok(&dump, &["-q", "build"]);
    // Every import (plain names) bound by NID.
    let status = ok(&dump, &["status"]);
    assert!(
        status.contains("0 bound to unimplemented stubs"),
        "{status}"
    );
    let out = run(&dump, &["run"]);
    let want =
        std::fs::read_to_string(aps5_sdk::fixtures_dir().join("hello/expect.stdout")).unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
    let code: i32 = std::fs::read_to_string(aps5_sdk::fixtures_dir().join("hello/expect.exit"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_payload_importing_what_nobody_implements_stops_at_its_first_call() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = port_payload("unimplemented", tmp.path());
    let out = run(&dump, &["run"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "before the unimplemented call\n"
    );
    assert!(
        stderr.contains("unimplemented: libSceRemoteplay::sceRemoteplayInitialize (k1SwgkMSOM8)"),
        "{stderr}"
    );
    // The stub aborts: SIGABRT, which `aps5 run` passes on (exit status 134 in a shell).
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.code().or(out.status.signal().map(|s| 128 + s)),
        Some(134),
        "{stderr}"
    );
}
