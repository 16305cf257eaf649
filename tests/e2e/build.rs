//! init, build, incremental rebuilds, reproducibility, status, clean.

use crate::common::*;

#[test]
fn init_reads_the_dump_and_writes_aps5_toml() {
    let p = Project::new();
    let cfg = std::fs::read_to_string(p.dir().join("aps5.toml")).unwrap();
    assert!(cfg.contains("executable = \"eboot.bin\""), "{cfg}");
    assert!(cfg.contains("out_dir = \"aps5-out\""), "{cfg}");
    // A second init keeps the existing settings.
    let err = fails(&p.dir(), &["init"], 2);
    assert!(err.contains("already"), "{err}");
}

#[test]
fn first_build_carries_files_and_writes_a_manifest() {
    let p = Project::new();
    let report = p.build_json();
    assert!(report["elapsed_ms"].is_u64());
    let out = p.out();
    for f in [
        "app0/eboot.bin",
        "app0/sce_module/samplelib.prx",
        "app0/data/levels/one.txt",
        "modules.json",
        "manifest.json",
    ] {
        assert!(out.join(f).is_file(), "missing {f}");
    }
    assert_eq!(
        std::fs::read(out.join("app0/eboot.bin")).unwrap(),
        std::fs::read(p.dir().join("eboot.bin")).unwrap()
    );
    // The manifest lists every other output with its blake3 and size.
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    let files = manifest["files"].as_array().unwrap();
    let tree = tree(&out);
    assert_eq!(files.len(), tree.len() - 1);
    for f in files {
        let bytes = &tree[f["path"].as_str().unwrap()];
        assert_eq!(f["size"].as_u64().unwrap(), bytes.len() as u64);
        assert_eq!(
            f["blake3"].as_str().unwrap(),
            blake3::hash(bytes).to_hex().as_str()
        );
    }
    assert_eq!(manifest["toolchain"]["name"], "aps5");
    // aps5's own files never reach app0/.
    assert!(!out.join("app0/aps5.toml").exists());
    assert!(!out.join("app0/aps5-out").exists());
    // Module metadata: both modules were parsed.
    let modules: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("modules.json")).unwrap()).unwrap();
    assert!(modules["modules"]["eboot.bin"].is_object());
    assert!(modules["modules"]["sce_module/samplelib.prx"].is_object());
    let recomputed = recomputed(&report);
    assert!(
        recomputed
            .iter()
            .any(|(q, a, r)| q == "module" && a == "eboot.bin" && r == "new input"),
        "{recomputed:?}"
    );
}

/// The cache keeps what spares the next build work and nothing larger: a cold build's blobs add
/// up to no more than the outputs its queries computed (app.elf, coverage.json, modules.json,
/// the relinked bundled module). A parsed module is not among them: parsing is cheaper than
/// reading back an encoding of it, which for an executable with many relocations is as large as
/// the file.
#[test]
fn a_cold_build_stores_no_more_than_what_it_computed() {
    let p = Project::new();
    p.build_json();
    let computed: u64 = [
        "app.elf",
        "coverage.json",
        "modules.json",
        "app0/sce_module/samplelib.prx",
    ]
    .iter()
    .map(|f| std::fs::metadata(p.out().join(f)).unwrap().len())
    .sum();
    let blobs: u64 = tree(&p.cache().join("blobs"))
        .values()
        .map(|b| b.len() as u64)
        .sum();
    assert!(blobs > 0, "no blobs in {}", p.cache().display());
    assert!(
        blobs <= computed,
        "the cache stored {blobs} bytes for {computed} bytes of computed outputs"
    );
}

#[test]
fn a_second_build_recomputes_nothing() {
    let p = Project::new();
    p.build_json();
    let before = std::fs::metadata(p.out().join("modules.json")).unwrap();
    let report = p.build_json();
    assert_eq!(recomputed(&report), vec![], "{report}");
    assert_eq!(report["written"], 0);
    assert!(report["reused"].as_u64().unwrap() > 0);
    // Unchanged outputs are not touched.
    let after = std::fs::metadata(p.out().join("modules.json")).unwrap();
    assert_eq!(before.modified().unwrap(), after.modified().unwrap());
}

#[test]
fn changing_one_file_recomputes_only_what_depends_on_it() {
    let p = Project::new();
    p.build_json();
    std::fs::write(p.dir().join("data/levels/one.txt"), b"level one, patched\n").unwrap();
    let report = p.build_json();
    assert_eq!(
        recomputed(&report),
        vec![
            (
                "output".into(),
                "app0/data/levels/one.txt".into(),
                "changed input".into()
            ),
            (
                "output".into(),
                "manifest.json".into(),
                "changed input".into()
            )
        ],
        "{report}"
    );
    assert_eq!(
        std::fs::read(p.out().join("app0/data/levels/one.txt")).unwrap(),
        b"level one, patched\n"
    );

    // A new file is a new input; a removed file's output goes away.
    std::fs::write(p.dir().join("data/new.txt"), b"new").unwrap();
    std::fs::remove_file(p.dir().join("data/readme.txt")).unwrap();
    let report = p.build_json();
    let r = recomputed(&report);
    assert!(
        r.contains(&(
            "output".into(),
            "app0/data/new.txt".into(),
            "new input".into()
        )),
        "{r:?}"
    );
    assert!(!p.out().join("app0/data/readme.txt").exists());

    // Touching a module without changing its bytes recomputes nothing; changing it re-parses it.
    let exe = p.dir().join("sce_module/samplelib.prx");
    let bytes = std::fs::read(&exe).unwrap();
    std::fs::write(&exe, &bytes).unwrap();
    assert_eq!(recomputed(&p.build_json()), vec![]);
}

#[test]
fn explain_says_why() {
    let p = Project::new();
    let first = ok(&p.dir(), &["build", "--explain"]);
    assert!(first.contains("new input"), "{first}");
    // Another cache: the same inputs, but nothing memoized.
    p.edit_config("cache_dir = \"../cache\"", "cache_dir = \"../cache2\"");
    let again = ok(&p.dir(), &["build", "--explain"]);
    assert!(
        again.lines().any(|l| l.starts_with("module")
            && l.contains("eboot.bin")
            && l.ends_with("cache miss")),
        "{again}"
    );
    // A state written by an older toolchain (other query versions), and nothing memoized for
    // this one: the reason is the toolchain.
    let state = p.dir().join(".aps5/state.json");
    let text = std::fs::read_to_string(&state).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for q in v["queries"].as_object_mut().unwrap().values_mut() {
        *q = "0-older".into();
    }
    std::fs::write(&state, v.to_string()).unwrap();
    p.edit_config("cache_dir = \"../cache2\"", "cache_dir = \"../cache3\"");
    let again = ok(&p.dir(), &["build", "--explain"]);
    assert!(
        again
            .lines()
            .any(|l| l.starts_with("app_elf") && l.ends_with("toolchain changed")),
        "{again}"
    );
}

#[test]
fn clean_builds_are_reproducible() {
    let a = Project::new();
    let b = Project::new();
    // Different folders, different caches, copy instead of hard link for one of them.
    b.edit_config("link_mode = \"hardlink\"", "link_mode = \"copy\"");
    a.build_json();
    b.build_json();
    let (ta, tb) = (tree(&a.out()), tree(&b.out()));
    assert_eq!(ta.keys().collect::<Vec<_>>(), tb.keys().collect::<Vec<_>>());
    for (k, v) in &ta {
        assert!(v == &tb[k], "{k} differs between two clean builds");
    }
    // No absolute path of either machine folder leaks into any output.
    let needle = a.tmp.path().to_string_lossy().into_owned();
    for (k, v) in ta.iter().filter(|(k, _)| !k.starts_with("app0/")) {
        assert!(
            !String::from_utf8_lossy(v).contains(&needle),
            "{k} holds an absolute path"
        );
    }
}

#[test]
fn status_and_clean() {
    let p = Project::new();
    p.build_json();
    let status = ok(&p.dir(), &["status"]);
    assert!(status.contains("eboot.bin"), "{status}");
    assert!(status.contains("samplelib"), "{status}");
    let json: serde_json::Value =
        serde_json::from_str(&ok(&p.dir(), &["status", "--json"])).unwrap();
    assert!(json["modules"].is_array(), "{json}");
    ok(&p.dir(), &["clean"]);
    assert!(!p.out().exists());
    // The cache survives a clean: the rebuild parses nothing again.
    let report = p.build_json();
    assert!(
        recomputed(&report).iter().all(|(q, _, _)| q == "output"),
        "{report}"
    );
}

#[test]
fn cache_commands() {
    let p = Project::new();
    p.build_json();
    let stats = ok(&p.dir(), &["cache", "stats"]);
    assert!(!stats.is_empty());
    ok(&p.dir(), &["cache", "verify"]);
    ok(&p.dir(), &["cache", "gc", "--max-size", "0"]);
    // After gc to zero the next build recomputes the modules and still succeeds.
    let report = p.build_json();
    assert!(
        recomputed(&report).iter().any(|(q, _, _)| q == "module"),
        "{report}"
    );
    fails(&p.dir(), &["cache", "gc", "--max-size", "lots"], 1);
}

#[test]
fn the_embedded_sample_demo_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = aps5()
        .env("APS5_CACHE_DIR", tmp.path().join("cache"))
        .args(["demo", "--keep"])
        .arg(tmp.path().join("sample"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("aps5 init"), "{stdout}");
    assert!(tmp.path().join("sample/aps5-out/manifest.json").is_file());
    // The sample's GPU scene: a triangle drawn through libSceAgc, flipped into a PNG whose
    // path the demo prints; its centre pixel is the triangle's, not the CPU's background.
    let png = tmp.path().join("sample/aps5-frames/frame-00000.png");
    assert!(
        stdout.contains("GPU scene") && stdout.contains(&*png.to_string_lossy()),
        "{stdout}"
    );
    assert!(
        stdout.contains("gpu: triangle drawn and flipped (320 x 180"),
        "{stdout}"
    );
    let file = std::fs::File::open(&png).unwrap();
    let mut dec = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .unwrap();
    let mut buf = vec![0; dec.output_buffer_size().unwrap()];
    let info = dec.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (320, 180));
    let centre = ((90 * 320 + 160) * 3) as usize;
    assert_ne!(
        &buf[centre..centre + 3],
        &[16, 32, 64],
        "the centre is background"
    );
}

#[test]
fn run_executes_the_ported_program() {
    let p = Project::new();
    let stdout = ok(&p.dir(), &["-q", "build"]);
    assert_eq!(stdout, "");
    let out = run(&p.dir(), &["run"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("samplelib_add(40, 2) = 42"), "{text}");
    // The program reads a file the dump shipped, through /app0.
    assert!(
        text.contains("message.txt: This file was shipped in the dump"),
        "{text}"
    );
    // The writable data folder is created on demand.
    assert!(p.dir().join("aps5-data").is_dir());
}

#[test]
fn real_homebrew_builds_and_runs() {
    // The OpenOrbis hello_world sample (PS4, made by another toolchain): prints, sleeps, then
    // loops forever by design, so the test reads the first lines and stops it.
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("hello");
    copy_tree(
        &shared().join("corpus/homebrew/openorbis-samples/hello_world/pkg"),
        &dump,
    );
    init_with_cache_beside(&dump);
    ok(&dump, &["-q", "build"]);
    let mut child = aps5()
        .arg("-C")
        .arg(&dump)
        .arg("run")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(first, "Hello world! Waiting 2 seconds...\n");
}

#[test]
fn bundled_system_modules_are_replaced_by_the_prx_set() {
    // PS4-2048 bundles OpenOrbis' stand-in for the system libc (sce_module/libc.prx); the PRX
    // set implements libc, so the build replaces the module instead of converting it.
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("2048");
    copy_tree(&shared().join("corpus/homebrew/ps4-2048"), &dump);
    init_with_cache_beside(&dump);
    ok(&dump, &["-q", "build"]);
    let out = dump.join("aps5-out");
    assert!(out.join("libs/libc.prx").is_file());
    assert!(!out.join("app0/sce_module/libc.prx").exists());
    // No import of the game binds to the stand-in.
    let coverage: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("coverage.json")).unwrap()).unwrap();
    assert!(
        coverage
            .as_array()
            .unwrap()
            .iter()
            .all(|r| !r["file"].as_str().unwrap_or("").contains("sce_module")),
        "{coverage}"
    );
    let status: serde_json::Value =
        serde_json::from_str(&ok(&dump, &["status", "--json"])).unwrap();
    let bundled = status["bundled"].as_array().unwrap();
    assert_eq!(bundled.len(), 1, "{status}");
    assert_eq!(bundled[0]["path"], "sce_module/libc.prx");
    assert_eq!(bundled[0]["action"], "replaced");
    assert_eq!(bundled[0]["output"], "libs/libc.prx");
    assert_eq!(bundled[0]["openorbis"], true);
    let text = ok(&dump, &["status"]);
    assert!(
        text.contains("sce_module/libc.prx") && text.contains("replaced by libs/libc.prx"),
        "{text}"
    );
    // The sample's own module is converted, not replaced.
    let p = Project::new();
    p.build_json();
    let status: serde_json::Value =
        serde_json::from_str(&ok(&p.dir(), &["status", "--json"])).unwrap();
    assert_eq!(status["bundled"][0]["action"], "converted", "{status}");
    assert_eq!(
        status["bundled"][0]["output"],
        "app0/sce_module/samplelib.prx"
    );
}

#[test]
fn bundled_modules_importing_from_each_other_run() {
    // The fixture SDK's module_chain: the eboot and bundled modules import from other bundled
    // modules (one loaded at run time). `aps5 build` relinks each module against its siblings,
    // and `aps5 run` prints exactly what the fixture expects, in both layouts.
    let fixture = repo_root().join("tests/fixtures/module_chain");
    let expected = std::fs::read_to_string(fixture.join("expect.stdout")).unwrap();
    for ps4 in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let dump = tmp.path().join("chain");
        aps5_sdk::build_dump(&fixture, &dump, &aps5_sdk::DumpOptions { ps4 })
            .expect("fixture SDK (needs clang-14, ld.lld-14)");
        init_with_cache_beside(&dump);
        ok(&dump, &["-q", "build"]);
        let status: serde_json::Value =
            serde_json::from_str(&ok(&dump, &["status", "--json"])).unwrap();
        assert!(
            status["coverage"]
                .as_array()
                .unwrap()
                .iter()
                .all(|c| c["stubbed"].as_array().unwrap().is_empty()),
            "{status}"
        );
        let out = run(&dump, &["run"]);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            expected,
            "ps4={ps4}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0));
    }
}
