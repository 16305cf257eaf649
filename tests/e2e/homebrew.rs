//! Every homebrew dump of the corpus through the real CLI, unchanged: `aps5 init`, `aps5 build`,
//! `aps5 run` (headless). What the programs draw and play is checked in depth by
//! prx/devices/tests/homebrew.rs; here the point is that the user's three commands work.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;

/// Copies a corpus folder to a temporary dump, adds `extra` files (name in the dump, source),
/// runs `aps5 init` and `aps5 build` in it.
fn port(corpus: &str, tmp: &Path, extra: &[(&str, &Path)]) -> PathBuf {
    let dump = tmp.join("dump");
    copy_tree(&shared().join("corpus/homebrew").join(corpus), &dump);
    for (name, src) in extra {
        std::fs::copy(src, dump.join(name)).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    }
    init_with_cache_beside(&dump);
    ok(&dump, &["-q", "build"]);
    dump
}

/// `aps5 run` with `env`, killed after `limit`: (exit code, stdout, stderr).
fn run_for(dump: &Path, env: &[(&str, &str)], limit: Duration) -> (Option<i32>, String, String) {
    let mut child = aps5()
        .arg("-C")
        .arg(dump)
        .arg("run")
        .env("APS5_HEADLESS", "1")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() && start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn pngs(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".png"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn graphics_sample_runs_through_the_cli() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = port("openorbis-samples/graphics/pkg", tmp.path(), &[]);
    let frames = tmp.path().join("frames");
    let (code, _, err) = run_for(
        &dump,
        &[
            ("APS5_MAX_FRAMES", "2"),
            ("APS5_FRAMES_DIR", frames.to_str().unwrap()),
        ],
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(pngs(&frames), 2);
}

#[test]
fn ps4_2048_runs_through_the_cli() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = port("ps4-2048", tmp.path(), &[]);
    let frames = tmp.path().join("frames");
    let script = tmp.path().join("moves.txt");
    std::fs::write(&script, "0 -\n10 cross\n14 -\n20 left\n24 -\n").unwrap();
    let (code, _, err) = run_for(
        &dump,
        &[
            ("APS5_MAX_FRAMES", "30"),
            ("APS5_FRAMES_DIR", frames.to_str().unwrap()),
            ("APS5_INPUT_SCRIPT", script.to_str().unwrap()),
        ],
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(pngs(&frames), 30);
}

#[test]
fn keyboard_sample_runs_through_the_cli() {
    // The sample opens /app0/font.ttf, which its package does not ship: the user adds one to
    // the dump, and the build carries it to app0/.
    let font = Path::new("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf");
    assert!(
        font.is_file(),
        "DejaVu Sans is missing (Debian fonts-dejavu-core; .ci/run installs it)"
    );
    let tmp = tempfile::tempdir().unwrap();
    let dump = port(
        "openorbis-samples/keyboard/pkg",
        tmp.path(),
        &[("font.ttf", font)],
    );
    let status = ok(&dump, &["status"]);
    assert!(
        status.contains("0 bound to unimplemented stubs"),
        "{status}"
    );
    let script = tmp.path().join("keys.txt");
    std::fs::write(&script, "0 key:-\n2 text:\"hi\"\n").unwrap();
    let frames = tmp.path().join("frames");
    let (code, out, err) = run_for(
        &dump,
        &[
            ("APS5_MAX_FRAMES", "8"),
            ("APS5_FRAMES_DIR", frames.to_str().unwrap()),
            ("APS5_INPUT_SCRIPT", script.to_str().unwrap()),
        ],
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        out,
        "main: Creating a scene\nmain: Initializing controller\nmain: Entering draw loop...\n"
    );
    assert_eq!(pngs(&frames), 8);
}

#[test]
fn pthread_sample_runs_through_the_cli() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = port("openorbis-samples/pthread/pkg", tmp.path(), &[]);
    let (code, out, err) = run_for(&dump, &[], Duration::from_secs(60));
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!out.is_empty(), "{err}");
}
