//! `cargo xtask bench glsl`: a twin that agrees gives figures; a twin that computes something
//! else makes the bench fail and name the buffer, not print a ratio. (Both runs write
//! target/bench/glsl.json, as any `bench glsl` run does.)

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `xtask bench --quick glsl` on int_add alone, twins from `dir`: (success, output, JSON).
fn bench_int_add(dir: &Path) -> (bool, String, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["bench", "--quick", "glsl"])
        .env("APS5_BENCH_GLSL", "int_add")
        .env("APS5_BENCH_GLSL_DIR", dir)
        .current_dir(root())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let json = std::fs::read(root().join("target/bench/glsl.json")).unwrap();
    (
        out.status.success(),
        text,
        serde_json::from_slice(&json).unwrap(),
    )
}

#[test]
fn agreeing_twin_gives_figures_and_a_wrong_twin_fails_naming_the_buffer() {
    let (ok, out, json) = bench_int_add(&root().join("xtask/bench/glsl"));
    assert!(ok, "{out}");
    let k = &json["kernels"]["int_add"];
    assert!(k["ours_ms"].as_f64().unwrap() > 0.0, "{json}");
    assert!(k["ratio"].as_f64().unwrap() > 0.0, "{json}");
    assert_eq!(k["work_items"], 1 << 18, "{json}");
    assert_eq!(json["failed"], false);

    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench-glsl-wrong-twin");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["empty", "int_add"] {
        let src = std::fs::read_to_string(root().join(format!("xtask/bench/glsl/{name}.comp")));
        let src = src.unwrap();
        // The twin multiplies b by 5 instead of 3: every element differs where b[i] != 0.
        let wrong = src.replace("p.b.v[i] * 3u", "p.b.v[i] * 5u");
        assert!(name == "empty" || wrong != src);
        std::fs::write(dir.join(format!("{name}.comp")), wrong).unwrap();
    }
    let (ok, out, json) = bench_int_add(&dir);
    assert!(!ok, "{out}");
    assert!(out.contains("disagree"), "{out}");
    let err = json["kernels"]["int_add"]["error"].as_str().unwrap();
    // b = iota: index 0 agrees (0 * 5 = 0 * 3), index 1 is the first to differ.
    assert!(err.contains("buffer out index 1: ours "), "{err}");
    assert!(json["kernels"]["int_add"]["ratio"].is_null(), "{json}");
    assert_eq!(json["failed"], true);
}
