//! Modules outside `sce_module/`: every module of a dump (told by content, not by folder or
//! name) is converted under its own path, so a program loads it by that path.

use crate::common::*;

/// The module_paths fixture (tests/e2e/data) built by the fixture SDK, its modules moved out
/// of `sce_module/`: example to `/app0/libExample.prx`, extra (which imports from example)
/// to `/app0/plugins/audio/extra.bin`; plus a text file named like a module.
fn module_paths_dump(dump: &std::path::Path, ps4: bool) {
    let fixture = repo_root().join("tests/e2e/data/module_paths");
    aps5_sdk::build_dump(&fixture, dump, &aps5_sdk::DumpOptions { ps4 })
        .expect("fixture SDK (needs clang-14, ld.lld-14)");
    std::fs::rename(
        dump.join("sce_module/example.prx"),
        dump.join("libExample.prx"),
    )
    .unwrap();
    std::fs::create_dir_all(dump.join("plugins/audio")).unwrap();
    std::fs::rename(
        dump.join("sce_module/extra.prx"),
        dump.join("plugins/audio/extra.bin"),
    )
    .unwrap();
    // Package metadata: every package's sce_sys/about/right.sprx is a module for the console's
    // shell, never loaded by the program; it is carried as it is.
    std::fs::create_dir_all(dump.join("sce_sys/about")).unwrap();
    std::fs::copy(
        dump.join("libExample.prx"),
        dump.join("sce_sys/about/right.sprx"),
    )
    .unwrap();
    std::fs::create_dir_all(dump.join("data")).unwrap();
    std::fs::write(dump.join("data/notes.prx"), "plain text, not a module\n").unwrap();
}

#[test]
fn modules_anywhere_in_the_dump_are_converted_and_load_by_path() {
    let want = "example module_start\n\
                load /app0/libExample.prx: ok, module_start=0\n\
                load /app0/plugins/audio/extra.bin: ok, module_start=7\n\
                example_add(2, 3)=5\n\
                extra_twice(21)=42\n\
                notes.prx: plain text, not a module\n\
                unload=0,0\n";
    for ps4 in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let dump = tmp.path().join("paths");
        module_paths_dump(&dump, ps4);
        init_with_cache_beside(&dump);
        ok(&dump, &["-q", "build"]);
        let out_dir = dump.join("aps5-out");

        // Converted in place (a Linux shared object now), the text file carried as it is.
        for m in ["app0/libExample.prx", "app0/plugins/audio/extra.bin"] {
            let head = std::fs::read(out_dir.join(m)).unwrap();
            assert_eq!(&head[..4], b"\x7fELF", "{m}");
            assert_eq!(u16::from_le_bytes([head[16], head[17]]), 3, "{m}: ET_DYN");
        }
        assert_eq!(
            std::fs::read_to_string(out_dir.join("app0/data/notes.prx")).unwrap(),
            "plain text, not a module\n"
        );
        assert_eq!(
            std::fs::read(out_dir.join("app0/sce_sys/about/right.sprx")).unwrap(),
            std::fs::read(dump.join("sce_sys/about/right.sprx")).unwrap()
        );

        // modules.json and `aps5 status` list them.
        let modules: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out_dir.join("modules.json")).unwrap()).unwrap();
        let listed: Vec<&String> = modules["modules"].as_object().unwrap().keys().collect();
        assert_eq!(
            listed,
            ["eboot.bin", "libExample.prx", "plugins/audio/extra.bin"],
            "{modules}"
        );
        let status: serde_json::Value =
            serde_json::from_str(&ok(&dump, &["status", "--json"])).unwrap();
        let bundled: Vec<(String, String, String)> = status["bundled"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["path"].as_str().unwrap().to_string(),
                    b["action"].as_str().unwrap().to_string(),
                    b["output"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(
            bundled,
            [
                (
                    "libExample.prx".into(),
                    "converted".into(),
                    "app0/libExample.prx".into()
                ),
                (
                    "plugins/audio/extra.bin".into(),
                    "converted".into(),
                    "app0/plugins/audio/extra.bin".into()
                ),
            ],
            "{status}"
        );

        let out = run(&dump, &["run"]);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            want,
            "ps4={ps4}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0));

        // A second build reuses everything, module detection included.
        let report: serde_json::Value =
            serde_json::from_str(&ok(&dump, &["build", "--json"])).unwrap();
        assert_eq!(recomputed(&report), vec![], "{report}");
    }
}
