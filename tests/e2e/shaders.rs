//! Shaders at build time (issue 13, docs/PACKS.md): `aps5 build` of the GPU fixtures finds
//! every shader the fixture sources embed, translates each into `aps5-out/packs/shaders.pack`
//! and reports them in `shaders.json` and `aps5 status`. The truth is outside the build: the
//! fixture sources (`shaders/*.ll`, compiled again here by llc through the fixture SDK, with the
//! registers the SDK writes), the translator called directly with the state those registers
//! and the fixtures' dispatches give, and `spirv-val` on every packed module.

use std::path::{Path, PathBuf};

use aps5_cache::pack::{Pack, PackError};
use aps5_graph::shaders::{self, PackedShader};
use aps5_shader::translate::{self, ComputeState};

use crate::common::*;

const GPU_FIXTURES: [&str; 3] = ["gpu_compute", "gpu_compute_fault", "gpu_compute_pm4"];

/// The `.ll` shaders a fixture's sources embed.
fn fixture_shaders(name: &str) -> Vec<PathBuf> {
    let dir = aps5_sdk::fixtures_dir().join(name).join("shaders");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ll"))
        .collect();
    v.sort();
    v
}

/// A fixture built into a dump by the fixture SDK, initialised with its cache beside it.
fn dump_of(name: &str, at: &Path) -> PathBuf {
    let dump = at.join(name);
    aps5_sdk::build_dump(
        &aps5_sdk::fixtures_dir().join(name),
        &dump,
        &aps5_sdk::DumpOptions { ps4: false },
    )
    .unwrap_or_else(|e| panic!("building {name}: {e:#}"));
    init_with_cache_beside(&dump);
    dump
}

fn build_json(dump: &Path, env: &[(&str, &str)]) -> serde_json::Value {
    let out = aps5()
        .arg("-C")
        .arg(dump)
        .args(["build", "--json"])
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "build failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn shaders_json(dump: &Path) -> serde_json::Value {
    serde_json::from_slice(
        &std::fs::read(dump.join("aps5-out").join(shaders::SHADERS_JSON)).unwrap(),
    )
    .unwrap()
}

fn pack_path(dump: &Path) -> PathBuf {
    dump.join("aps5-out").join(shaders::SHADER_PACK)
}

fn unhex(s: &str) -> [u8; 32] {
    let mut k = [0u8; 32];
    for (i, b) in k.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
    }
    k
}

/// The compute state the fixture's own dispatch runs the shader with: the SH registers the
/// SDK wrote (RSRC1, RSRC2, NUM_THREAD_X/Y/Z) and wave32 (every GPU fixture dispatches with
/// CS_W32_EN).
fn dispatch_state(sh: &[(u16, u32)]) -> ComputeState {
    let reg = |o: u16| sh.iter().find(|r| r.0 == o).map(|r| r.1).unwrap();
    ComputeState {
        pgm_rsrc1: reg(0x212),
        pgm_rsrc2: reg(0x213),
        workgroup_size: [reg(0x207), reg(0x208), reg(0x209)].map(|n| (n & 0x3FF).max(1)),
        wave64: false,
        lds_bytes: 0,
        scratch_bytes_per_lane: 0,
    }
}

#[test]
fn a_gpu_fixture_build_packs_every_shader_its_sources_embed() {
    let tmp = tempfile::tempdir().unwrap();
    let mut total = 0;
    for name in GPU_FIXTURES {
        // A cache per fixture: gpu_compute and gpu_compute_pm4 embed the same program, which
        // a shared cache would translate once.
        let dump = dump_of(name, &tmp.path().join(name));
        let lls = fixture_shaders(name);
        assert!(!lls.is_empty(), "{name} embeds no shader");
        let report = build_json(&dump, &[]);
        let doc = shaders_json(&dump);
        let counts = &doc["counts"];
        assert_eq!(counts["found"], lls.len(), "{name}: {doc:#}");
        assert_eq!(counts["translated"], lls.len(), "{name}: {doc:#}");
        assert_eq!(counts["failed"], 0, "{name}: {doc:#}");
        assert_eq!(counts["skipped"], 0, "{name}: {doc:#}");

        // Each shader found is one the sources embed: its code is llc's output byte for
        // byte, and its pack entry is what the translator makes of that code with the state
        // the fixture dispatches it with.
        let pack = Pack::open(&pack_path(&dump), &shaders::pack_identity()).unwrap();
        pack.verify().unwrap();
        assert_eq!(pack.len(), lls.len(), "{name}");
        let mut compiled: Vec<aps5_sdk::gpu::ComputeShader> = lls
            .iter()
            .map(|ll| aps5_sdk::gpu::compile_compute(ll, tmp.path(), Path::new("/")).unwrap())
            .collect();
        let list = doc["shaders"].as_array().unwrap();
        for s in list {
            let file = std::fs::read(dump.join(s["file"].as_str().unwrap())).unwrap();
            let at = s["code_offset"].as_u64().unwrap() as usize;
            let code = &file[at..at + s["code_size"].as_u64().unwrap() as usize];
            let i = compiled
                .iter()
                .position(|c| c.code == code)
                .unwrap_or_else(|| panic!("{name}: {s} is none of llc's outputs"));
            let c = compiled.remove(i);
            assert_eq!(s["type"], "cs");
            assert_eq!(s["translation"], "translated");
            let header_at = s["offset"].as_u64().unwrap() as usize;
            let header = &file[header_at..header_at + s["header_size"].as_u64().unwrap() as usize];
            let mut id = blake3::Hasher::new();
            id.update(code);
            id.update(header);
            assert_eq!(s["identity"], id.finalize().to_hex().as_str());

            let entry = pack
                .get(&unhex(s["key"].as_str().unwrap()))
                .unwrap()
                .unwrap();
            let packed = PackedShader::decode(entry).unwrap();
            let words: Vec<u32> = c
                .code
                .chunks_exact(4)
                .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
                .collect();
            let direct = translate::translate_compute(
                &words,
                &dispatch_state(&c.sh_registers),
                &shaders::build_options(),
            )
            .unwrap();
            assert_eq!(packed.spirv, direct.spirv, "{name}: {s}");
            assert_eq!(packed.local_size, direct.local_size);
            assert_eq!(packed.push_constant_bytes, direct.push_constant_bytes);
            assert_eq!(packed.groups_per_guest_group, direct.groups_per_guest_group);
            translate::validate::spirv_val(&packed.spirv).unwrap();
            assert_eq!(PackedShader::decode(&packed.encode()), Some(packed));
        }
        assert!(
            compiled.is_empty(),
            "{name}: not found: {} shaders",
            compiled.len()
        );
        total += list.len();

        // --explain says why each was translated; status counts them.
        let why: Vec<(String, String, String)> = recomputed(&report)
            .into_iter()
            .filter(|(q, _, _)| q == "translated")
            .collect();
        assert_eq!(why.len(), lls.len(), "{report}");
        assert!(
            why.iter()
                .all(|(_, a, r)| a.contains("@0x") && r == "new shader"),
            "{why:?}"
        );
        let status = ok(&dump, &["status"]);
        let line = format!(
            "shaders   {n} found statically, {n} translated, 0 failed",
            n = lls.len()
        );
        assert!(status.contains(&line), "{status}");
    }
    assert_eq!(total, 3);
}

#[test]
fn builds_of_the_same_inputs_give_the_same_pack_and_a_no_op_build_translates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let a = dump_of("gpu_compute", &tmp.path().join("a"));
    // The same dump in another folder with another cache: nothing shared but the inputs.
    let b = tmp.path().join("b/gpu_compute");
    copy_tree(&a, &b);
    let first = build_json(&a, &[]);
    build_json(&b, &[]);
    let pack = std::fs::read(pack_path(&a)).unwrap();
    assert!(pack.starts_with(b"APS5PACK"));
    assert_eq!(pack, std::fs::read(pack_path(&b)).unwrap());
    assert_eq!(
        std::fs::read(a.join("aps5-out/shaders.json")).unwrap(),
        std::fs::read(b.join("aps5-out/shaders.json")).unwrap()
    );
    assert!(recomputed(&first).iter().any(|(q, _, _)| q == "translated"));

    let again = build_json(&a, &[]);
    assert_eq!(recomputed(&again), vec![], "{again}");
    assert_eq!(again["written"], 0);
    assert_eq!(std::fs::read(pack_path(&a)).unwrap(), pack);

    // An emptied cache: every shader is translated again, into the same bytes.
    std::fs::remove_dir_all(a.parent().unwrap().join("cache")).unwrap();
    let cold = build_json(&a, &[]);
    let translated: Vec<_> = recomputed(&cold)
        .into_iter()
        .filter(|(q, _, _)| q == "translated")
        .collect();
    assert_eq!(translated.len(), 1, "{cold}");
    assert_eq!(translated[0].2, "cache miss", "{cold}");
    assert_eq!(std::fs::read(pack_path(&a)).unwrap(), pack);
}

/// Flips the byte at `at` of `path` in place, keeping its modification time (so only its
/// bytes tell).
fn flip_keeping_mtime(path: &Path, at: usize) {
    let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= 0x01;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    use std::os::unix::fs::FileExt;
    f.write_all_at(&bytes[at..at + 1], at as u64).unwrap();
    f.set_modified(mtime).unwrap();
}

#[test]
fn a_flipped_byte_in_the_pack_is_detected_never_used_and_rewritten() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = dump_of("gpu_compute", tmp.path());
    build_json(&dump, &[]);
    let path = pack_path(&dump);
    let good = std::fs::read(&path).unwrap();
    let clean = run(&dump, &["cache", "verify"]);
    assert_eq!(clean.status.code(), Some(0), "{clean:?}");
    assert!(String::from_utf8_lossy(&clean.stdout).contains("packs/shaders.pack: 1 entries"));

    // A byte of the identity, of the index (the entry's hash) and of the SPIR-V.
    for at in [20, 48 + 32 + 16 + 3, good.len() - 5] {
        flip_keeping_mtime(&path, at);
        let err = Pack::open(&path, &shaders::pack_identity())
            .and_then(|p| p.verify())
            .unwrap_err();
        assert!(
            matches!(err, PackError::Identity { .. } | PackError::Corrupt { .. }),
            "byte {at}: {err}"
        );
        let v = run(&dump, &["cache", "verify"]);
        let stdout = String::from_utf8_lossy(&v.stdout);
        if at == 20 {
            // Another producer's pack is refused, not repaired by verify.
            assert!(stdout.contains("not used by this toolchain"), "{stdout}");
        } else {
            assert_eq!(v.status.code(), Some(2), "byte {at}: {stdout}");
            assert!(
                stdout.contains("packs/shaders.pack: damaged, never used"),
                "{stdout}"
            );
        }
        // The next build writes it again, with the bytes it had.
        let report = build_json(&dump, &[]);
        assert!(
            recomputed(&report)
                .iter()
                .any(|(q, a, _)| q == "output" && a == shaders::SHADER_PACK),
            "byte {at}: {report}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), good, "byte {at}");
        assert_eq!(run(&dump, &["cache", "verify"]).status.code(), Some(0));
    }
}

#[test]
fn a_pack_of_another_translator_is_not_used() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = dump_of("gpu_compute", tmp.path());
    build_json(&dump, &[]);
    let ours = std::fs::read(pack_path(&dump)).unwrap();
    // Another translator (the salt stands for a change of its sources).
    let other = build_json(&dump, &[(shaders::SALT_ENV, "other")]);
    let why: Vec<_> = recomputed(&other)
        .into_iter()
        .filter(|(q, _, _)| q == "translated" || q == "shader_pack")
        .collect();
    assert_eq!(why.len(), 2, "{other}");
    assert!(
        why.iter().all(|(_, _, r)| r == "translator changed"),
        "{why:?}"
    );
    let theirs = std::fs::read(pack_path(&dump)).unwrap();
    assert_ne!(theirs, ours);
    // Same entries, another producer: this toolchain refuses the pack whole.
    assert_eq!(theirs[48..], ours[48..]);
    match Pack::open(&pack_path(&dump), &shaders::pack_identity()) {
        Err(PackError::Identity { .. }) => {}
        other => panic!("{other:?}"),
    }
    // Back to this translator: its translations are still in the cache.
    let back = build_json(&dump, &[]);
    assert!(
        !recomputed(&back).iter().any(|(q, _, _)| q == "translated"),
        "{back}"
    );
    assert_eq!(std::fs::read(pack_path(&dump)).unwrap(), ours);
}

/// The byte offset of the value of SH register `reg` (dword offset from the SH base) in a
/// stored header's register list.
fn sh_value_at(header: &[u8], reg: u32) -> usize {
    let sh_ptr = 0x20;
    let rel = u64::from_le_bytes(header[sh_ptr..sh_ptr + 8].try_into().unwrap()) as usize;
    let list = sh_ptr + rel;
    let n = header[0x5c] as usize;
    (0..n)
        .map(|i| list + i * 8)
        .find(|&o| u32::from_le_bytes(header[o..o + 4].try_into().unwrap()) == reg)
        .map(|o| o + 4)
        .unwrap()
}

#[test]
fn a_shader_the_translator_refuses_is_a_warning_not_a_failed_build() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = dump_of("gpu_compute", tmp.path());
    build_json(&dump, &[]);
    let doc = shaders_json(&dump);
    let s = &doc["shaders"][0];
    let file = std::fs::read(dump.join(s["file"].as_str().unwrap())).unwrap();
    let (h, c) = (
        s["offset"].as_u64().unwrap() as usize,
        s["code_offset"].as_u64().unwrap() as usize,
    );
    let end = c + s["code_size"].as_u64().unwrap() as usize;
    // The same header and code in a data file, with COMPUTE_PGM_RSRC2.TG_SIZE_EN set (a
    // thread-group SGPR the translator does not support yet).
    let mut blob = file[h..end].to_vec();
    let at = sh_value_at(&blob, 0x213);
    blob[at + 1] |= 1 << 2; // bit 10
    std::fs::write(dump.join("data.bin"), &blob).unwrap();
    let out = run(&dump, &["build"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("data.bin: shader at offset 0x0 (cs): not translated")
            && err.contains("TG_SIZE_EN"),
        "{err}"
    );
    let doc = shaders_json(&dump);
    assert_eq!(doc["counts"]["found"], 2, "{doc:#}");
    assert_eq!(doc["counts"]["translated"], 1, "{doc:#}");
    assert_eq!(doc["counts"]["failed"], 1, "{doc:#}");
    let status = ok(&dump, &["status"]);
    assert!(
        status.contains("shaders   2 found statically, 1 translated, 1 failed"),
        "{status}"
    );
}

/// The built-in sample embeds one pixel shader with a PS5 header (its `--draw` scene; the
/// vertex shader has none, docs/SDK.md): one found, translated, in the pack.
#[test]
fn the_sample_dump_packs_its_pixel_shader() {
    let p = Project::new();
    p.build_json();
    let doc = shaders_json(&p.dir());
    assert_eq!(doc["counts"]["found"], 1, "{doc:#}");
    assert_eq!(doc["counts"]["translated"], 1, "{doc:#}");
    let pack = Pack::open(&pack_path(&p.dir()), &shaders::pack_identity()).unwrap();
    pack.verify().unwrap();
    assert_eq!(pack.len(), 1);
}
