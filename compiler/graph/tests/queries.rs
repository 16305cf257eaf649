//! The queries on their own: a file that changes or vanishes between the scan and the query is
//! reported, never silently read; config checks.

use std::sync::Arc;

use aps5_cache::{Cache, ContentHash};
use aps5_graph::config::{Config, is_confined};
use aps5_graph::db::{self, Database, Dump, SourceFile};

fn homebrew(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/corpus/homebrew")
        .join(rel)
}

fn db_with(tmp: &std::path::Path) -> Database {
    Database::new(Arc::new(Cache::open(&tmp.join("cache")).unwrap()))
}

#[test]
fn a_module_that_changed_after_the_scan_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("eboot.bin");
    std::fs::copy(homebrew("ps4-2048/eboot.bin"), &path).unwrap();
    let db = db_with(tmp.path());
    // The scan saw other bytes than the file now holds.
    let stale = SourceFile::new(
        &db,
        "eboot.bin".into(),
        path.clone(),
        4,
        ContentHash::of(b"old!"),
    );
    let err = db::module(&db, stale).as_ref().unwrap_err();
    assert!(
        err.message
            .contains("changed while the build was reading it"),
        "{err:?}"
    );
    assert_eq!(err.path, path);
}

#[test]
fn a_module_that_vanished_after_the_scan_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let db = db_with(tmp.path());
    let gone = SourceFile::new(
        &db,
        "eboot.bin".into(),
        tmp.path().join("eboot.bin"),
        4,
        ContentHash::of(b"gone"),
    );
    let err = db::module(&db, gone).as_ref().unwrap_err();
    assert!(err.message.contains("vanished"), "{err:?}");
}

#[test]
fn module_results_are_memoized_across_databases() {
    let tmp = tempfile::tempdir().unwrap();
    let path = homebrew("openorbis-samples/hello_world/pkg/eboot.bin");
    let bytes = std::fs::read(&path).unwrap();
    let hash = ContentHash::of(&bytes);
    for (round, expect_reused) in [(0, false), (1, true)] {
        let db = db_with(tmp.path());
        let f = SourceFile::new(
            &db,
            "eboot.bin".into(),
            path.clone(),
            bytes.len() as u64,
            hash,
        );
        let dump = Dump::new(&db, vec![f], "eboot.bin".into(), false, "host".into());
        let index = db::module_index(&db, dump).as_ref().unwrap().clone();
        // Asking again in the same process is answered by salsa: no second run is logged.
        let _ = db::module_index(&db, dump);
        let runs: Vec<(&str, bool)> = db.take_runs().iter().map(|r| (r.query, r.reused)).collect();
        if expect_reused {
            // The index itself is memoized: the module is not even decoded.
            assert_eq!(runs, vec![("module_index", true)], "round {round}");
        } else {
            assert_eq!(
                runs,
                vec![("module", false), ("module_index", false)],
                "round {round}"
            );
        }
        let v: serde_json::Value = serde_json::from_slice(&index).unwrap();
        assert!(v["modules"]["eboot.bin"].is_object());
    }
}

#[test]
fn the_example_config_documents_every_key() {
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../aps5.toml.example"
    ))
    .unwrap();
    let parsed: Config = toml::from_str(&example).expect("aps5.toml.example parses");
    assert_eq!(
        parsed,
        Config::new("eboot.bin", Default::default()),
        "the example shows the defaults"
    );
    // Every key a config can hold appears, uncommented, in the example.
    let rendered: toml::Table = toml::from_str(&parsed.to_toml()).unwrap();
    for (section, keys) in &rendered {
        assert!(
            example.contains(&format!("[{section}]")),
            "[{section}] missing"
        );
        for key in keys.as_table().unwrap().keys() {
            assert!(
                example.lines().any(|l| l.starts_with(&format!("{key} = "))),
                "{section}.{key} undocumented"
            );
        }
    }
}

#[test]
fn confined_paths() {
    for ok in ["aps5-out", "out/dir", "./x"] {
        assert!(is_confined(ok), "{ok}");
    }
    for bad in ["", "../x", "a/../../b", "/abs", "a/.."] {
        assert!(!is_confined(bad), "{bad}");
    }
}

#[test]
fn param_files() {
    let json = br#"{"titleId":"PPSA01234","contentVersion":"01.000.000",
        "localizedParameters":{"defaultLanguage":"fr-FR","fr-FR":{"titleName":"Jeu"},"en-US":{"titleName":"Game"}}}"#;
    let t = aps5_graph::dump::parse_param_json(json).unwrap();
    assert_eq!(
        (t.id.as_str(), t.name.as_str(), t.content_version.as_str()),
        ("PPSA01234", "Jeu", "01.000.000")
    );
    assert!(aps5_graph::dump::parse_param_json(b"[1]").is_err());
    assert!(aps5_graph::dump::parse_param_json(b"{").is_err());

    // A PSF (param.sfo) made by hand from the documented layout: header, index, keys, data.
    let keys = b"APP_VER\0TITLE\0TITLE_ID\0";
    let values: [&[u8]; 3] = [b"01.00\0", b"My Game\0", b"CUSA00001\0"];
    let key_offs = [0u16, 8, 14];
    let mut sfo = Vec::new();
    let key_table = 20 + 16 * 3;
    let data_table = key_table + keys.len();
    sfo.extend_from_slice(b"\0PSF");
    sfo.extend_from_slice(&0x101u32.to_le_bytes());
    sfo.extend_from_slice(&(key_table as u32).to_le_bytes());
    sfo.extend_from_slice(&(data_table as u32).to_le_bytes());
    sfo.extend_from_slice(&3u32.to_le_bytes());
    let mut off = 0u32;
    for (k, v) in key_offs.iter().zip(values) {
        sfo.extend_from_slice(&k.to_le_bytes());
        sfo.extend_from_slice(&0x0204u16.to_le_bytes());
        sfo.extend_from_slice(&(v.len() as u32).to_le_bytes());
        sfo.extend_from_slice(&(v.len() as u32).to_le_bytes());
        sfo.extend_from_slice(&off.to_le_bytes());
        off += v.len() as u32;
    }
    sfo.extend_from_slice(keys);
    for v in values {
        sfo.extend_from_slice(v);
    }
    let t = aps5_graph::dump::parse_param_sfo(&sfo).unwrap();
    assert_eq!(
        (
            t.id.as_str(),
            t.name.as_str(),
            t.content_version.as_str(),
            t.platform.as_str()
        ),
        ("CUSA00001", "My Game", "01.00", "ps4")
    );
    // Truncated anywhere: an error, never a panic.
    for n in 0..sfo.len() {
        let _ = aps5_graph::dump::parse_param_sfo(&sfo[..n]);
    }
    assert!(aps5_graph::dump::parse_param_sfo(b"nope").is_err());
}

/// app.elf as the cache gives it back (a delta against the executable: its image pieces, its
/// hash) is the very file the relinker makes, and the same as the relinker's one-buffer form.
#[test]
fn app_elf_from_the_cache_is_the_relinked_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = homebrew("openorbis-samples/hello_world/pkg/eboot.bin");
    let bytes = std::fs::read(&path).unwrap();
    let hash = ContentHash::of(&bytes);
    let mut made = None;
    let segment_bytes: u64 = aps5_elf::parse(&bytes)
        .unwrap()
        .segments
        .iter()
        .filter(|s| s.p_type == 1) // PT_LOAD
        .map(|s| s.filesz)
        .sum();
    assert!(segment_bytes > 0);
    for (round, expect_reused) in [(0, false), (1, true)] {
        let db = db_with(tmp.path());
        let f = SourceFile::new(
            &db,
            "eboot.bin".into(),
            path.clone(),
            bytes.len() as u64,
            hash,
        );
        let dump = Dump::new(&db, vec![f], "eboot.bin".into(), false, "host".into());
        let app = db::app_elf(&db, dump).as_ref().unwrap().clone();
        db.finish_stores();
        let reused = db
            .take_runs()
            .iter()
            .any(|r| r.query == "app_elf" && r.reused);
        assert_eq!(reused, expect_reused, "round {round}");
        let elf = app.image.to_vec(&app.input);
        assert_eq!(app.hash, ContentHash::of(&elf), "round {round}");
        // The input's segments (of an fSELF here) are kept as ranges of it, not copied.
        let kept: u64 = app
            .image
            .pieces
            .iter()
            .filter(|p| matches!(p.data, aps5_relink::PieceData::Input { .. }))
            .map(|p| p.len())
            .sum();
        assert!(
            kept >= segment_bytes,
            "round {round}: {kept} of {segment_bytes} bytes kept"
        );
        match &made {
            None => made = Some(elf),
            Some(first) => assert!(first == &elf, "round {round}: other bytes from the cache"),
        }
    }
    // The relinker's one-buffer form of the same relink (the options app_elf uses).
    let db = db_with(tmp.path());
    let module = aps5_elf::parse(&bytes).unwrap();
    let set = &db::Db::prx(&db).unwrap().set;
    let opts = aps5_relink::RelinkOptions {
        allow_syscalls: false,
        output_dir: None,
        module_dirs: vec!["app0/sce_module".into()],
        target_cpu: Some(aps5_relink::CpuFeatures::named("host").unwrap()),
    };
    let whole = aps5_relink::relink_executable(&bytes, &module, set, &opts).unwrap();
    assert!(
        made.unwrap() == whole.elf,
        "the image differs from the one-buffer relink"
    );
}
