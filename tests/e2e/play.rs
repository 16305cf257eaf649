//! Play recording (issue 13 item 4, docs/PACKS.md "At run time"): the GPU driver looks every
//! shader up in `aps5-out/packs/shaders.pack` first, translates and records what it misses in
//! `.aps5/records.sqlite`, and the next `aps5 build` translates the records into the pack, so
//! the second run translates nothing. Counted by the driver's own statistics (`aps5 run -v`),
//! on the Vulkan device of the machine (lavapipe when there is no GPU), validation layer on.

use std::path::Path;

use crate::common::*;

fn port(name: &str, tmp: &Path) -> std::path::PathBuf {
    let dump = tmp.join(name);
    aps5_sdk::build_dump(
        &aps5_sdk::fixtures_dir().join(name),
        &dump,
        &aps5_sdk::DumpOptions { ps4: false },
    )
    .unwrap_or_else(|e| panic!("building {name}: {e:#}"));
    init_with_cache_beside(&dump);
    ok(&dump, &["-q", "build"]);
    dump
}

/// `aps5 -v run --headless --frames FRAMES`: checks the program's own output and exit status;
/// returns the driver's statistics (the JSON line it prints at exit) and stderr.
fn run_v(dump: &Path, name: &str, frames: &Path) -> (serde_json::Value, String) {
    let out = aps5()
        .arg("-C")
        .arg(dump)
        .args(["-v", "run", "--headless", "--frames"])
        .arg(frames)
        .env("APS5_VK_VALIDATION", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let want =
        std::fs::read_to_string(aps5_sdk::fixtures_dir().join(name).join("expect.stdout")).unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), want, "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        !stderr.to_lowercase().contains("validation"),
        "the validation layer spoke: {stderr}"
    );
    let line = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("aps5: gpu statistics: "))
        .next_back()
        .unwrap_or_else(|| panic!("no statistics printed at exit: {stderr}"));
    (serde_json::from_str(line).unwrap(), stderr)
}

fn build_json(dump: &Path) -> serde_json::Value {
    serde_json::from_str(&ok(dump, &["build", "--json"])).unwrap()
}

fn frames_of(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

fn stat(s: &serde_json::Value, k: &str) -> u64 {
    s[k].as_u64()
        .unwrap_or_else(|| panic!("statistics lack {k}: {s}"))
}

#[test]
fn a_first_run_records_its_misses_and_after_a_build_the_second_translates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let name = "gpu_triangle";
    let dump = port(name, tmp.path());
    let pack = dump.join("aps5-out/packs/shaders.pack");
    assert!(pack.is_file());
    // The first run with no pack: every shader is a miss, translated and recorded.
    std::fs::remove_file(&pack).unwrap();
    let f1 = tmp.path().join("frames1");
    let (s1, err1) = run_v(&dump, name, &f1);
    let misses = stat(&s1, "misses");
    assert!(misses > 0, "{s1} {err1}");
    assert_eq!(stat(&s1, "pack_hits"), 0, "{s1}");
    assert_eq!(stat(&s1, "translations"), misses, "{s1}");
    // Its two pixel shaders come with headers (sceAgcCreateShader) whose registers are the
    // draws': translated ahead of the draw on a worker and used by it (unless a draw takes
    // one back from the queue before a worker starts it: the program draws right after
    // creating them, as the GPU opens), never twice; the two headerless vertex shaders are
    // translated at the draw.
    let ahead = stat(&s1, "translations_ahead");
    assert!(ahead <= 2, "{s1}");
    assert_eq!(stat(&s1, "ahead_used"), ahead, "{s1}");
    assert_eq!(
        stat(&s1, "translations_on_submit_thread"),
        misses - ahead,
        "{s1}"
    );
    assert!(err1.contains("shader pack not used"), "{err1}");
    // Every pipeline state met is recorded once, naming its stages by the keys the shaders
    // were recorded (and will be packed) under.
    let states = stat(&s1, "pipeline_states");
    assert!(states > 0, "{s1}");
    let records = aps5_cache::records::Records::open_existing(&dump.join(".aps5/records.sqlite"))
        .unwrap()
        .expect("the run kept records");
    let (shaders, bad) = records.shaders().unwrap();
    assert!(bad.is_empty(), "{bad:?}");
    let (pipelines, bad) = records.pipelines().unwrap();
    assert!(bad.is_empty(), "{bad:?}");
    drop(records);
    assert_eq!(pipelines.len() as u64, states);
    for p in &pipelines {
        assert_eq!(p.kind, aps5_cache::records::PipelineKind::Graphics);
        assert_eq!(p.stages.len(), 2, "{p:?}");
        for [_, device] in &p.stages {
            assert!(shaders.iter().any(|s| s.key == *device), "{p:?}");
        }
    }
    let status = ok(&dump, &["status"]);
    assert!(
        status.contains(&format!("shaders   {misses} recorded in play")),
        "{status}"
    );
    assert!(
        status.contains(&format!(
            "shaders   {misses} missed in last run (0 pack hits, {misses} translated: {ahead} \
             ahead of the draw, {} at the draw, ",
            misses - ahead
        )),
        "{status}"
    );
    assert!(
        status.contains(&format!("pipelines {states} recorded in play")),
        "{status}"
    );
    // No pipelines pack yet: nothing was prewarmed.
    assert!(
        status.contains("pipelines 0 prewarmed in last run\n"),
        "{status}"
    );

    // The build translates the records into the pack (it writes the removed pack again too).
    let report = build_json(&dump);
    let translated: Vec<_> = recomputed(&report)
        .into_iter()
        .filter(|(q, a, _)| q == "translated" && a.starts_with("records:"))
        .collect();
    assert!(!translated.is_empty(), "{report:#}");
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dump.join("aps5-out/shaders.json")).unwrap())
            .unwrap();
    assert_eq!(doc["records"]["recorded"], misses, "{doc:#}");
    assert_eq!(doc["records"]["failed"], 0, "{doc:#}");
    // And packs every recorded pipeline state, most recently used first: the first run met
    // them in this order (the records' last-seen order), whose stages the shader pack holds.
    let pipeline_pack = dump.join("aps5-out/packs/pipelines.pack");
    let packed = pipelines_packed(&pipeline_pack);
    assert_eq!(packed.len() as u64, states);
    let records = aps5_cache::records::Records::open_existing(&dump.join(".aps5/records.sqlite"))
        .unwrap()
        .unwrap();
    let (by_recency, _) = records.pipelines_by_recency().unwrap();
    drop(records);
    for (rank, (p, (rec, seen))) in packed.iter().zip(&by_recency).enumerate() {
        assert_eq!(p.rank as usize, rank);
        assert_eq!(
            (p.kind, &p.stages, &p.state),
            (rec.kind, &rec.stages, &rec.state)
        );
        assert_eq!(seen.seq as usize, rank + 1, "{seen:?}");
    }
    let shader_pack =
        aps5_cache::pack::Pack::open(&pack, &aps5_graph::shaders::pack_identity()).unwrap();
    for p in &packed {
        for [portable, device] in &p.stages {
            assert!(
                shader_pack.get(portable).unwrap().is_some()
                    || shader_pack.get(device).unwrap().is_some(),
                "{p:?}"
            );
        }
    }
    drop(shader_pack);
    let first_pipeline_pack = std::fs::read(&pipeline_pack).unwrap();

    // `aps5 build --prewarm` creates them on this machine's device into the driver's
    // pipeline cache blob; without a device it says so and the build still succeeds.
    let out = run(&dump, &["build", "--prewarm"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!("prewarmed {states} of {states} pipelines")),
        "{err}"
    );
    assert_eq!(blob_files(&dump).len(), 1);
    let out = aps5()
        .arg("-C")
        .arg(&dump)
        .args(["build", "--prewarm"])
        .env("APS5_VK_DEVICE", "no such device")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("no Vulkan device to prewarm on") && err.contains("the build is done"),
        "{err}"
    );

    // The second run: every shader from the pack, nothing translated, nothing recorded.
    let f2 = tmp.path().join("frames2");
    let (s2, err2) = run_v(&dump, name, &f2);
    assert_eq!(stat(&s2, "misses"), 0, "{s2} {err2}");
    assert_eq!(stat(&s2, "translations"), 0, "{s2} {err2}");
    // The pack holds the created shaders: nothing is translated ahead either.
    assert_eq!(stat(&s2, "translations_ahead"), 0, "{s2} {err2}");
    assert_eq!(stat(&s2, "pack_hits"), misses, "{s2}");
    assert_eq!(stat(&s2, "pack_refused"), 0, "{s2}");
    // The same pipeline states, already recorded: the records do not grow.
    assert_eq!(stat(&s2, "pipeline_states"), states, "{s2}");
    // Prewarmed from the pipelines pack at start: none is created on the submit thread.
    assert_eq!(stat(&s2, "pipelines"), 0, "{s2} {err2}");
    assert_eq!(stat(&s2, "pipelines_prewarmed"), states, "{s2} {err2}");
    assert_eq!(stat(&s2, "prewarm_failed"), 0, "{s2} {err2}");
    assert_eq!(stat(&s2, "prewarm_skipped"), 0, "{s2} {err2}");
    // Its driver cache started from the blob the build's prewarm saved.
    assert_eq!(s2["pipeline_cache"], "used", "{s2}");
    // It met the recorded states again: their uses (written at its end, not at the draws)
    // name it, in the order it met them.
    let records = aps5_cache::records::Records::open_existing(&dump.join(".aps5/records.sqlite"))
        .unwrap()
        .unwrap();
    let last = records.last_run().unwrap().unwrap();
    let (by_recency, _) = records.pipelines_by_recency().unwrap();
    drop(records);
    assert_eq!(by_recency.len() as u64, states);
    for (i, (_, seen)) in by_recency.iter().enumerate() {
        assert_eq!((seen.run, seen.seq as usize), (last.id, i + 1), "{seen:?}");
    }
    // And the driver's pipeline cache went to its blob, one per device.
    let blobs = blob_files(&dump);
    assert_eq!(blobs.len(), 1, "{blobs:?}");
    // The pack's translations draw the very frames the run-time ones drew.
    let (a, b) = (frames_of(&f1), frames_of(&f2));
    assert!(!a.is_empty());
    assert_eq!(
        a, b,
        "frames from the pack differ from frames translated at run time"
    );
    let status = ok(&dump, &["status"]);
    assert!(
        status.contains(&format!("shaders   {misses} recorded in play")),
        "{status}"
    );
    assert!(
        status.contains("shaders   0 missed in last run"),
        "{status}"
    );
    assert!(
        status.contains(&format!("pipelines {states} recorded in play")),
        "{status}"
    );

    assert!(
        status.contains(&format!("pipelines {states} in packs/pipelines.pack")),
        "{status}"
    );
    // The driver wrote the prewarm's count into the run's row at exit (records schema 4).
    assert!(
        status.contains(&format!("pipelines {states} prewarmed in last run\n")),
        "{status}"
    );

    prewarm_refuses_what_it_must_not_use(&dump, name, tmp.path(), states);

    // Nothing new was recorded: the next build is a no-op, and the second run met the same
    // states in the same order, so the pipelines pack is the same bytes.
    let report = build_json(&dump);
    assert_eq!(recomputed(&report), vec![], "{report:#}");
    assert_eq!(std::fs::read(&pipeline_pack).unwrap(), first_pipeline_pack);

    // A flipped byte in a pipeline entry is found by `aps5 cache verify` (exit 2: left for
    // the build) and the next build writes the pack again.
    let mut bad = first_pipeline_pack.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0x40;
    std::fs::write(&pipeline_pack, &bad).unwrap();
    let v = run(&dump, &["cache", "verify"]);
    let stdout = String::from_utf8_lossy(&v.stdout);
    assert_eq!(v.status.code(), Some(2), "{stdout}");
    assert!(
        stdout.contains("packs/pipelines.pack: damaged, never used"),
        "{stdout}"
    );
    ok(&dump, &["-q", "build"]);
    assert_eq!(std::fs::read(&pipeline_pack).unwrap(), first_pipeline_pack);
    let v = run(&dump, &["cache", "verify"]);
    let stdout = String::from_utf8_lossy(&v.stdout);
    assert_eq!(v.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "packs/pipelines.pack: {states} entries, every one verified"
        )),
        "{stdout}"
    );
}

/// The driver's pipeline cache blobs of the project.
fn blob_files(dump: &Path) -> Vec<std::path::PathBuf> {
    let dir = dump.join(".aps5/pipeline-cache");
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "vkpc"))
        .collect();
    v.sort();
    v
}

/// A blob with a flipped byte is reported and not used, and the run writes it again; one
/// whose header names another device is not used; a pipelines pack of another producer
/// (translator) is not used: its `states` pipelines are then created on the submit thread.
fn prewarm_refuses_what_it_must_not_use(dump: &Path, name: &str, tmp: &Path, states: u64) {
    let blob = blob_files(dump).remove(0);
    let good = std::fs::read(&blob).unwrap();
    let mut bad = good.clone();
    let at = bad.len() - 1;
    bad[at] ^= 0x01;
    std::fs::write(&blob, &bad).unwrap();
    // `aps5 cache verify` finds it (exit 3: removed, repaired) and a second verify is clean.
    let v = run(dump, &["cache", "verify"]);
    let stdout = String::from_utf8_lossy(&v.stdout);
    assert_eq!(v.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("damaged, never used"), "{stdout}");
    assert!(!blob.exists());
    let v = run(dump, &["cache", "verify"]);
    assert_eq!(
        v.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&v.stdout)
    );
    // The driver finds it too (verify left aside): reported, not used, written again.
    std::fs::write(&blob, &bad).unwrap();
    let frames = tmp.join("frames-blob");
    let (s, err) = run_v(dump, name, &frames);
    assert!(
        err.contains("not used: damaged"),
        "a damaged blob is reported: {err}"
    );
    assert_eq!(s["pipeline_cache"], "damaged", "{s}");
    assert_eq!(stat(&s, "pipelines"), 0, "{s}");
    assert_eq!(stat(&s, "pipelines_prewarmed"), states, "{s}");
    // Written again at exit: the next run takes it without a word.
    let again = std::fs::read(&blob).unwrap();
    assert_ne!(again, bad);
    let (s, err) = run_v(dump, name, &frames);
    assert!(!err.contains("pipeline cache blob"), "{err}");
    assert_eq!(s["pipeline_cache"], "used", "{s}");
    let v = run(dump, &["cache", "verify"]);
    let stdout = String::from_utf8_lossy(&v.stdout);
    assert_eq!(v.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("driver pipeline cache blob"), "{stdout}");

    // Another device's blob under this device's name (its own header says so, its hash is
    // sound): a mismatch, not used.
    let mut other = good.clone();
    other[12] ^= 0x01; // vendorID
    let payload = other.split_off(80);
    let mut head = other[..48].to_vec();
    let mut h = blake3::Hasher::new_derive_key("aps5 pipeline cache blob v1");
    h.update(&head);
    h.update(&payload);
    head.extend_from_slice(h.finalize().as_bytes());
    head.extend_from_slice(&payload);
    std::fs::write(&blob, &head).unwrap();
    let (s, err) = run_v(dump, name, &frames);
    assert!(err.contains("another device's or driver's"), "{err}");
    assert_eq!(s["pipeline_cache"], "mismatch", "{s}");

    // A pipelines pack from another translator identity: refused, nothing prewarmed.
    let pack_path = dump.join("aps5-out/packs/pipelines.pack");
    let original = std::fs::read(&pack_path).unwrap();
    let mut w =
        aps5_cache::pack::PackWriter::new(aps5_cache::pipelines::producer_identity(&[0x5a; 32]));
    for p in pipelines_packed(&pack_path) {
        w.add(p.key(), p.encode()).unwrap();
    }
    std::fs::write(&pack_path, w.to_bytes()).unwrap();
    let (s, err) = run_v(dump, name, &frames);
    assert!(err.contains("pipeline pack not used"), "{err}");
    assert_eq!(stat(&s, "pipelines_prewarmed"), 0, "{s}");
    assert_eq!(stat(&s, "pipelines"), states, "{s}");
    std::fs::write(&pack_path, original).unwrap();
}

/// The entries of a pipelines pack of this toolchain, in rank order, every one checked.
fn pipelines_packed(path: &Path) -> Vec<aps5_cache::pipelines::PackedPipeline> {
    let pack = aps5_cache::pack::Pack::open(path, &aps5_graph::pipelines::pack_identity())
        .unwrap_or_else(|e| panic!("{e}"));
    pack.verify().unwrap();
    aps5_cache::pipelines::read_all(&pack).unwrap()
}

#[test]
fn the_driver_computes_the_build_s_pack_key_and_refuses_another_translator_s_pack() {
    let tmp = tempfile::tempdir().unwrap();
    let name = "gpu_compute";
    let dump = port(name, tmp.path());
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dump.join("aps5-out/shaders.json")).unwrap())
            .unwrap();
    let keys: Vec<&str> = doc["shaders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 1, "{doc:#}");
    let frames = tmp.path().join("frames");
    let (s, err) = run_v(&dump, name, &frames);
    // The portable key the driver looked up at the dispatch is the build's key.
    let looked_up: Vec<&str> = err
        .lines()
        .filter_map(|l| {
            l.split_once("portable key ")
                .map(|(_, k)| k.get(..64).unwrap_or(k))
        })
        .collect();
    assert_eq!(looked_up, keys, "{err}");
    // Either the device runs the portable entry (a hit) or it lacks a float-controls mode the
    // entry needs (lavapipe): a miss, recorded with its device class.
    assert_eq!(stat(&s, "pack_hits") + stat(&s, "misses"), 1, "{s}");
    assert_eq!(stat(&s, "pipeline_states"), 1, "{s}");
    assert!(
        ok(&dump, &["status"]).contains("pipelines 1 recorded in play"),
        "the compute pipeline's state is recorded"
    );
    assert_eq!(stat(&s, "pack_refused"), 0, "{s}");
    if stat(&s, "misses") == 1 {
        ok(&dump, &["-q", "build"]);
        let (s, err) = run_v(&dump, name, &frames);
        assert_eq!((stat(&s, "misses"), stat(&s, "pack_hits")), (0, 1), "{err}");
        assert!(err.contains("pack hit (device key"), "{err}");
    }

    // The compute pipeline's record is packed by the next build and prewarmed by the next
    // run: it is not created on the submit thread.
    ok(&dump, &["-q", "build"]);
    let (s, err) = run_v(&dump, name, &frames);
    assert_eq!(stat(&s, "pipelines"), 0, "{s} {err}");
    assert_eq!(stat(&s, "pipelines_prewarmed"), 1, "{s} {err}");

    // Another translator's pack is refused whole and reported; the run translates.
    let out = aps5()
        .arg("-C")
        .arg(&dump)
        .args(["-v", "run", "--headless"])
        .env("APS5_TRANSLATOR_SALT", "other")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("shader pack not used"), "{err}");
    assert!(err.contains("\"pack_hits\":0"), "{err}");
    assert!(err.contains("\"pack_refused\":1"), "{err}");
    // Its pipelines pack is refused with it: nothing prewarmed.
    assert!(err.contains("pipeline pack not used"), "{err}");
    assert!(err.contains("\"pipelines_prewarmed\":0"), "{err}");
}

/// A run killed with SIGKILL while it records (the driver's test hook kills it right after
/// its second record committed): both records are there and sound, the run is shown as not
/// having reached its exit, and the next build packs what it recorded, so the next run meets
/// those two shaders in the pack.
#[test]
fn a_run_killed_while_recording_keeps_what_it_committed() {
    use std::os::unix::process::ExitStatusExt;
    let tmp = tempfile::tempdir().unwrap();
    let name = "gpu_triangle";
    let dump = port(name, tmp.path());
    std::fs::remove_file(dump.join("aps5-out/packs/shaders.pack")).unwrap();
    let out = aps5()
        .arg("-C")
        .arg(&dump)
        .args(["-v", "run", "--headless"])
        .env("APS5_GPU_KILL_AFTER_RECORDS", "2")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{err}");
    assert!(
        !err.contains("gpu statistics"),
        "the run reached its exit: {err}"
    );
    let records = aps5_cache::records::Records::open_existing(&dump.join(".aps5/records.sqlite"))
        .unwrap()
        .unwrap();
    let (shaders, bad) = records.shaders().unwrap();
    assert!(bad.is_empty(), "{bad:?}");
    assert_eq!(shaders.len(), 2);
    let last = records.last_run().unwrap().unwrap();
    // The counters commit with each record: the killed run's are those of its second miss
    // (the first draw's VS, translated at the draw, and PS, translated ahead unless the draw
    // took it back from the queue first; the other PS made ahead may be done by then too).
    assert!(!last.ended);
    let c = last.counts;
    assert_eq!(c.misses, 2, "{c:?}");
    assert!(
        (1..=2).contains(&(c.translations - c.translations_ahead)) && c.translations_ahead <= 2,
        "{c:?}"
    );
    drop(records);
    let status = ok(&dump, &["status"]);
    assert!(status.contains("shaders   2 recorded in play"), "{status}");
    assert!(
        status.contains("the run did not reach its exit"),
        "{status}"
    );

    ok(&dump, &["-q", "build"]);
    let frames = tmp.path().join("frames");
    let (s, err) = run_v(&dump, name, &frames);
    // The two recorded shaders are hits now (under the portable or the device key, whichever
    // the build packed): no miss names them.
    for r in &shaders {
        let k = hex(&r.key);
        assert!(
            !err.contains(&format!("device key {k}): translated")),
            "{k} {err}"
        );
    }
    assert!(stat(&s, "pack_hits") >= 2, "{s}");
    // What the killed run did not reach is recorded now; the build after packs it all.
    ok(&dump, &["-q", "build"]);
    let (s, err) = run_v(&dump, name, &tmp.path().join("frames2"));
    assert_eq!(stat(&s, "misses"), 0, "{s} {err}");
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

/// A flipped byte in a pack entry: the driver refuses the entry (reported once), translates.
#[test]
fn a_damaged_pack_entry_is_refused_and_translated_instead() {
    let tmp = tempfile::tempdir().unwrap();
    let name = "gpu_compute";
    let dump = port(name, tmp.path());
    let pack = std::fs::canonicalize(dump.join("aps5-out/packs/shaders.pack")).unwrap();
    let mut bytes = std::fs::read(&pack).unwrap();
    let last = bytes.len() - 1;
    bytes[last - 40] ^= 0x10;
    // The output files are read-only hard links or copies: replace the file.
    std::fs::remove_file(&pack).unwrap();
    std::fs::write(&pack, &bytes).unwrap();
    let frames = tmp.path().join("frames");
    let (s, err) = run_v(&dump, name, &frames);
    assert!(err.contains("pack entry refused"), "{err}");
    assert_eq!(stat(&s, "pack_refused"), 1, "{s}");
    assert_eq!(stat(&s, "pack_hits"), 0, "{s}");
    assert_eq!(stat(&s, "misses"), 1, "{s}");
}

/// `aps5 cache verify` checks the play records too: a damaged shader row is reported and
/// removed (exit 3: repaired), the next verify is clean, and the next run records it afresh.
#[test]
fn cache_verify_removes_a_damaged_play_record() {
    let tmp = tempfile::tempdir().unwrap();
    let name = "gpu_compute";
    let dump = port(name, tmp.path());
    std::fs::remove_file(dump.join("aps5-out/packs/shaders.pack")).unwrap();
    let (s, err) = run_v(&dump, name, &tmp.path().join("frames"));
    assert_eq!(stat(&s, "misses"), 1, "{s} {err}");
    let clean = run(&dump, &["cache", "verify"]);
    let stdout = String::from_utf8_lossy(&clean.stdout);
    assert_eq!(clean.status.code(), Some(0), "{stdout}");
    assert!(
        stdout
            .contains(".aps5/records.sqlite: 1 shader and 1 pipeline records, every one verified"),
        "{stdout}"
    );

    let path = dump.join(".aps5/records.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    let n = conn
        .execute("UPDATE shaders SET code = zeroblob(length(code))", [])
        .unwrap();
    assert_eq!(n, 1);
    drop(conn);
    let v = run(&dump, &["cache", "verify"]);
    let stdout = String::from_utf8_lossy(&v.stdout);
    assert_eq!(v.status.code(), Some(3), "{stdout}");
    assert!(
        stdout.contains("is damaged (its check does not match): not used: removed"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "0 shader and 1 pipeline records, every one verified (1 damaged ones removed)"
        ),
        "{stdout}"
    );
    let again = run(&dump, &["cache", "verify"]);
    assert_eq!(again.status.code(), Some(0), "{again:?}");
    assert!(ok(&dump, &["status"]).contains("shaders   0 recorded in play"));
    let (s, err) = run_v(&dump, name, &tmp.path().join("frames2"));
    assert_eq!(stat(&s, "misses"), 1, "{s} {err}");
    assert!(ok(&dump, &["status"]).contains("shaders   1 recorded in play"));
}

/// Records that are not SQLite at all: the build warns and goes on without them, the run
/// reports it does not keep records, and `aps5 cache verify` moves the file aside (exit 3), so
/// the next run records afresh.
#[test]
fn a_records_file_that_is_not_sqlite_is_set_aside_never_used() {
    let tmp = tempfile::tempdir().unwrap();
    let name = "gpu_compute";
    let dump = port(name, tmp.path());
    let path = dump.join(".aps5/records.sqlite");
    let garbage = b"not a database, whatever it was".repeat(100);
    std::fs::write(&path, &garbage).unwrap();
    let build = run(&dump, &["build"]);
    let err = String::from_utf8_lossy(&build.stderr);
    assert_eq!(build.status.code(), Some(0), "{err}");
    assert!(err.contains("play records not used"), "{err}");
    let (_, err) = run_v(&dump, name, &tmp.path().join("frames"));
    assert!(err.contains("play records not kept"), "{err}");
    // Nobody wrote to it meanwhile.
    assert_eq!(std::fs::read(&path).unwrap(), garbage);

    let v = run(&dump, &["cache", "verify"]);
    let stdout = String::from_utf8_lossy(&v.stdout);
    assert_eq!(v.status.code(), Some(3), "{stdout}");
    assert!(
        stdout.contains(".aps5/records.sqlite: damaged (") && stdout.contains("moved aside to"),
        "{stdout}"
    );
    assert!(!path.exists());
    assert_eq!(
        std::fs::read(dump.join(".aps5/records.sqlite.damaged")).unwrap(),
        garbage
    );
    assert_eq!(run(&dump, &["cache", "verify"]).status.code(), Some(0));
    let (s, err) = run_v(&dump, name, &tmp.path().join("frames2"));
    assert!(!err.contains("play records not kept"), "{err}");
    assert_eq!(stat(&s, "pipeline_states"), 1, "{s}");
    assert!(ok(&dump, &["status"]).contains("pipelines 1 recorded in play"));
}

/// `APS5_GPU_STUB=1` (the `ttff` bench's baseline): the program runs to its end with every
/// draw accepted and none run (no translation, pipeline or pipeline state; the frames are
/// not the drawn ones), flips and their times are reported, and the records are left as the
/// last real run wrote them.
#[test]
fn a_stubbed_run_draws_nothing_and_leaves_the_records_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let name = "gpu_triangle";
    let dump = port(name, tmp.path());
    let drawn = tmp.path().join("drawn");
    let (s, err) = run_v(&dump, name, &drawn);
    assert!(stat(&s, "draws") > 0, "{s} {err}");
    let before = ok(&dump, &["status"]);

    let frames = tmp.path().join("stubbed");
    let out = aps5()
        .arg("-C")
        .arg(&dump)
        .args(["-v", "run", "--headless", "--frames"])
        .arg(&frames)
        .env("APS5_GPU_STUB", "1")
        .env("APS5_FLIP_TIMES", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let want =
        std::fs::read_to_string(aps5_sdk::fixtures_dir().join(name).join("expect.stdout")).unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), want, "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("APS5_GPU_STUB=1: draws and dispatches are not run"),
        "{err}"
    );
    let line = err
        .lines()
        .filter_map(|l| l.strip_prefix("aps5: gpu statistics: "))
        .next_back()
        .unwrap_or_else(|| panic!("no statistics: {err}"));
    let st: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(stat(&st, "draws"), stat(&s, "draws"), "{st}");
    for k in [
        "translations",
        "pipelines",
        "pack_hits",
        "misses",
        "pipeline_states",
        "pipelines_prewarmed",
    ] {
        assert_eq!(stat(&st, k), 0, "{k}: {st}");
    }
    // Both flips, each with the machine's clock, in order.
    let times: Vec<u64> = err
        .lines()
        .filter_map(|l| l.strip_prefix("aps5: videoout: flip "))
        .map(|r| {
            let (_, t) = r
                .split_once(" done at CLOCK_MONOTONIC ")
                .expect("flip line");
            t.strip_suffix(" ns").unwrap().parse().unwrap()
        })
        .collect();
    assert_eq!(times.len(), 2, "{err}");
    assert!(times[0] <= times[1], "{times:?}");
    // Nothing was drawn into the frames.
    let (a, b) = (frames_of(&drawn), frames_of(&frames));
    assert_eq!(a.len(), b.len());
    assert_ne!(a[0].1, b[0].1, "a stubbed frame equals the drawn one");
    assert_eq!(ok(&dump, &["status"]), before);
}

/// The GPU opens on a thread of its own from `sceAgcInit`; a device that cannot be opened
/// still stops the run at the first submission, as when it opened there: the report names
/// it, the exit status is an abort's, and what the program printed before is kept.
#[test]
fn a_device_that_cannot_open_stops_the_run_at_the_first_submission() {
    let tmp = tempfile::tempdir().unwrap();
    let name = "gpu_triangle";
    let dump = port(name, tmp.path());
    let out = aps5()
        .arg("-C")
        .arg(&dump)
        .args(["run", "--headless"])
        .env("APS5_VK_DEVICE", "no such device")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(134), "{stderr}");
    assert!(
        stderr.contains(
            "aps5: libSceAgcDriver: cannot open the GPU: no Vulkan device named \"no such device\""
        ),
        "{stderr}"
    );
    // Created its shaders (the opening was under way), then stopped at the submission.
    assert!(
        stdout.contains("PASS sceAgcCreateShader (two pixel shaders)"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("two command buffers submitted"),
        "{stdout}"
    );
}

/// `gpu_ahead` creates its pixel shader, works 400 ms on the CPU, then draws: with no pack,
/// the draw finds the shader translated ahead (on a worker, for the state its header
/// predicts) and waits for nothing; only its headerless vertex shader is translated at the
/// draw. The frame is checked by the program itself. (The translation starts once the GPU
/// is open, on its own thread from `sceAgcInit`: the claim holds when the program's work
/// outlasts the device's opening, which the first submission not waiting for it shows.)
#[test]
fn a_shader_created_before_the_program_s_own_work_is_ready_at_its_draw() {
    let tmp = tempfile::tempdir().unwrap();
    let name = "gpu_ahead";
    let dump = port(name, tmp.path());
    std::fs::remove_file(dump.join("aps5-out/packs/shaders.pack")).unwrap();
    let (s, err) = run_v(&dump, name, &tmp.path().join("frames"));
    assert_eq!(stat(&s, "misses"), 2, "{s} {err}");
    assert_eq!(stat(&s, "translations"), 2, "{s}");
    eprintln!(
        "gpu_ahead: device opened in {} us, the first submission waited {} us for it",
        stat(&s, "device_open_us"),
        stat(&s, "open_wait_us")
    );
    if stat(&s, "open_wait_us") > 1000 {
        eprintln!("gpu_ahead: the device opened after the program's work: not checked");
        return;
    }
    assert_eq!(stat(&s, "translations_ahead"), 1, "{s}");
    assert_eq!(stat(&s, "ahead_used"), 1, "{s}");
    assert_eq!(stat(&s, "ahead_waited"), 0, "{s}");
    assert_eq!(stat(&s, "translations_on_submit_thread"), 1, "{s}");
    assert!(
        err.contains("translated ahead of the draw (waited 0 us)"),
        "{err}"
    );
}

/// A play record made on a device whose compute pipelines can require full subgroups of 32
/// (its device class has lanes: docs/PACKS.md, "Device class") is packed by the next build
/// lane per invocation, under the key such a device looks the program up by first; the
/// wave-serial entry the build makes for the program found statically stays beside it. No
/// device here has the lanes, so the record is written as that run would have written it.
#[test]
fn a_record_from_a_device_with_lanes_is_packed_lane_per_invocation() {
    use aps5_shader::pack::{self, DeviceClass, PackedShader, ShaderState};
    let tmp = tempfile::tempdir().unwrap();
    let name = "gpu_compute";
    let dump = port(name, tmp.path());
    // The program and its dispatch state, as a first run on this machine records them.
    std::fs::remove_file(dump.join("aps5-out/packs/shaders.pack")).unwrap();
    run_v(&dump, name, &tmp.path().join("frames"));
    let path = dump.join(".aps5/records.sqlite");
    let mut records = aps5_cache::records::Records::open(&path).unwrap();
    let (shaders, bad) = records.shaders().unwrap();
    assert!(bad.is_empty() && shaders.len() == 1, "{shaders:?} {bad:?}");
    let seen = &shaders[0];
    let state = ShaderState::from_words(&seen.state).unwrap();
    assert!(
        matches!(&state, ShaderState::Compute(c) if !c.wave64),
        "{state:?}"
    );
    let lanes = DeviceClass {
        lanes: Some(32),
        ..DeviceClass::from_words(&seen.class).unwrap()
    };
    let opts = lanes
        .portable()
        .options(&aps5_graph::shaders::build_options());
    let key = pack::pack_key(&seen.code, &state, &opts);
    let serial = pack::pack_key(&seen.code, &state, &aps5_graph::shaders::build_options());
    assert_ne!(key, serial);
    let run = records.begin_run(&seen.translator, "").unwrap();
    let rec = aps5_cache::records::ShaderRecord {
        key: pack::pack_key(&seen.code, &state, &lanes.options(&opts)),
        class: lanes.words(),
        ..seen.clone()
    };
    assert!(records.record_miss(run, &rec, &Default::default()).unwrap());
    drop(records);
    ok(&dump, &["-q", "build"]);
    let p = aps5_cache::pack::Pack::open(
        &dump.join("aps5-out/packs/shaders.pack"),
        &aps5_graph::shaders::pack_identity(),
    )
    .unwrap();
    let entry = |k: &[u8; 32]| {
        PackedShader::decode(p.get(k).unwrap().expect("an entry under the key")).unwrap()
    };
    let lane = entry(&key);
    assert!(
        lane.required_features.iter().any(|f| f == "subgroupSize32"),
        "{:?}",
        lane.required_features
    );
    assert_eq!(lane.local_size[0], lane.waves_per_group * 32);
    let wave_serial = entry(&serial);
    assert!(
        !wave_serial
            .required_features
            .iter()
            .any(|f| f == "subgroupSize32")
    );
    assert_eq!(wave_serial.local_size[0], wave_serial.waves_per_group);
}
