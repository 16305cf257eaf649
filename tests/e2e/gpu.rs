//! GPU programs through the user's commands: `aps5 build` ports a fixture that computes on the
//! GPU with libSceAgc/libSceAgcDriver, `aps5 run` runs it on the Vulkan device (lavapipe when
//! there is no GPU) with the Khronos validation layer on; the program checks its results
//! itself. The relinker's fixture table (compiler/relink/tests/fixtures.rs) runs the other GPU
//! fixtures the same way.

use crate::common::*;

fn port(name: &str, tmp: &std::path::Path) -> std::path::PathBuf {
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

#[test]
fn a_compute_program_runs_on_vulkan_and_checks_its_results() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = port("gpu_compute", tmp.path());
    // Every libSceAgc/libSceAgcDriver import the program makes is implemented.
    let status = ok(&dump, &["status"]);
    assert!(
        status.contains("0 bound to unimplemented stubs"),
        "{status}"
    );
    let out = aps5()
        .arg("-C")
        .arg(&dump)
        .arg("run")
        .env("APS5_VK_VALIDATION", "1")
        .output()
        .unwrap();
    let want = std::fs::read_to_string(aps5_sdk::fixtures_dir().join("gpu_compute/expect.stdout"))
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        want,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn a_gpu_fault_stops_the_run_naming_address_instruction_and_shader() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = port("gpu_compute_fault", tmp.path());
    let out = aps5()
        .arg("-C")
        .arg(&dump)
        .arg("run")
        .env("APS5_VK_VALIDATION", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "submitting\n",
        "{err}"
    );
    assert_eq!(out.status.code(), Some(134), "{err}");
    for part in [
        "GPU fault in dispatch 1",
        "4 bytes at 0xdead0000",
        "global_load_dword",
        "header at 0x",
        "DISPATCH_DIRECT",
    ] {
        assert!(err.contains(part), "stderr lacks {part:?}: {err}");
    }
}
