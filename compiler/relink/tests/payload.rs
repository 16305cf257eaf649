//! Relinking PS5 payloads (the fixture SDK's payload layout, made like the ps5-payload-sdk's
//! ELFs): plain-name imports (functions and data objects) are bound by the NID of the name to
//! the PRX set, and the entry stub hands `_start` the loader's `payload_args_t *` from
//! libkernel. The output is read back with llvm-readelf-14.

use aps5_relink::{PrxSet, RelinkOptions};
use aps5_sdk::{Tool, find_tool};

/// `(name, type, ndx)` of each .dynsym entry of `elf` and its DT_NEEDED names, per llvm-readelf.
fn dynsyms(elf: &[u8]) -> (Vec<(String, String, String)>, Vec<String>) {
    let tmp = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tmp.path(), elf).unwrap();
    let out = std::process::Command::new(find_tool(Tool::LlvmReadelf).unwrap())
        .args(["--wide", "--dyn-syms", "--dynamic-table"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut syms = Vec::new();
    let mut needed = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 8 && f[0].ends_with(':') && f[0][..f[0].len() - 1].parse::<u32>().is_ok() {
            syms.push((f[7].to_owned(), f[3].to_owned(), f[6].to_owned()));
        }
        if let Some(i) = line.find("Shared library: [") {
            needed.push(line[i + 17..].trim_end_matches(']').to_owned());
        }
    }
    (syms, needed)
}

#[test]
fn plain_name_imports_bind_by_nid_and_start_gets_the_payload_args() {
    let tmp = tempfile::tempdir().unwrap();
    let src = aps5_sdk::payloads_dir().join("payload_args");
    let elf = aps5_sdk::build_payload(&src, &tmp.path().join("dump")).unwrap();
    let bytes = std::fs::read(&elf).unwrap();
    let module = aps5_elf::parse(&bytes).unwrap();
    let plain: Vec<&aps5_elf::Symbol> = module.imports().collect();
    assert!(plain.iter().all(|s| s.nid.is_none()));
    let prx = PrxSet::installed().unwrap();
    let r =
        aps5_relink::relink_executable(&bytes, &module, &prx, &RelinkOptions::default()).unwrap();

    // Every plain import is a coverage row under the NID of its name, implemented.
    for s in &plain {
        let nid = aps5_nid::nid(&s.name);
        let row = r
            .coverage
            .iter()
            .find(|c| c.nid == nid)
            .unwrap_or_else(|| panic!("{}: no coverage row", s.name));
        assert!(row.implemented, "{}: {row:?}", s.name);
        assert_eq!(row.name.as_deref(), Some(s.name.as_str()));
    }
    // The output imports them by NID, keeping the type: __stderrp is a data object of libc.
    let (syms, needed) = dynsyms(&r.elf);
    for s in &plain {
        let nid = aps5_nid::nid(&s.name);
        let (_, ty, ndx) = syms
            .iter()
            .find(|(n, ..)| *n == nid)
            .unwrap_or_else(|| panic!("{} ({nid}) is not imported", s.name));
        assert_eq!(ndx, "UND", "{}", s.name);
        let want = if s.kind == 1 { "OBJECT" } else { "FUNC" };
        assert_eq!(ty, want, "{}", s.name);
    }
    assert!(plain.iter().any(|s| s.name == "__stderrp" && s.kind == 1));
    let args_nid = aps5_nid::nid("__aps5_payload_args");
    assert!(
        syms.iter()
            .any(|(n, _, ndx)| *n == args_nid && ndx == "UND")
    );
    // PRX files by their path in the output tree (no run-path search at start-up).
    assert_eq!(
        needed.first().map(String::as_str),
        Some("$ORIGIN/libs/libkernel.prx")
    );
    assert!(
        needed.iter().any(|n| n == "$ORIGIN/libs/libc.prx"),
        "{needed:?}"
    );
}

#[test]
fn a_plain_name_nobody_implements_is_stubbed_under_its_library() {
    // No library of the set serves it: reported under the library the NID database names
    // for it (the one whose stub library the payload needs).
    let tmp = tempfile::tempdir().unwrap();
    let src = aps5_sdk::fixtures_dir().join("unimplemented");
    let elf = aps5_sdk::build_payload(&src, &tmp.path().join("dump")).unwrap();
    let bytes = std::fs::read(&elf).unwrap();
    let module = aps5_elf::parse(&bytes).unwrap();
    let prx = PrxSet::installed().unwrap();
    let r =
        aps5_relink::relink_executable(&bytes, &module, &prx, &RelinkOptions::default()).unwrap();
    let row = r
        .coverage
        .iter()
        .find(|c| c.name.as_deref() == Some("sceRemoteplayInitialize"))
        .unwrap();
    assert!(!row.implemented);
    assert_eq!(row.library, "libSceRemoteplay");
    assert_eq!(row.nid, aps5_nid::nid("sceRemoteplayInitialize"));
    assert!(module.needed.iter().any(|n| n == "libSceRemoteplay.so"));
}

#[test]
fn a_payload_with_a_sysv_hash_binds_too() {
    // The same objects linked with DT_HASH (and no DT_GNU_HASH), as other payload toolchains
    // do: still plain names, still bound by NID (before, every import was a stub).
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let src = aps5_sdk::fixtures_dir().join("hello");
    aps5_sdk::build_payload_in(&src, &tmp.path().join("dump"), &work).unwrap();
    let mut objects: Vec<std::path::PathBuf> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "o"))
        .collect();
    objects.sort();
    let mut stubs: Vec<std::path::PathBuf> = std::fs::read_dir(work.join("stubs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "so"))
        .collect();
    stubs.sort();
    let out = tmp.path().join("sysv.elf");
    let st = std::process::Command::new(find_tool(Tool::Lld).unwrap())
        .args([
            "-m",
            "elf_x86_64",
            "-pie",
            "-e",
            "_start",
            "--hash-style=sysv",
            "-T",
        ])
        .arg(aps5_sdk::sdk_dir().join("crt/payload.ld"))
        .arg("-o")
        .arg(&out)
        .args(&objects)
        .arg("--as-needed")
        .args(&stubs)
        .status()
        .unwrap();
    assert!(st.success());
    let bytes = std::fs::read(&out).unwrap();
    let module = aps5_elf::parse(&bytes).unwrap();
    assert!(module.is_payload());
    assert!(module.dynamic.iter().any(|e| e.tag == 4), "DT_HASH");
    let prx = PrxSet::installed().unwrap();
    let r =
        aps5_relink::relink_executable(&bytes, &module, &prx, &RelinkOptions::default()).unwrap();
    assert!(!r.coverage.is_empty());
    assert!(r.coverage.iter().all(|c| c.implemented), "{:?}", r.coverage);
}
