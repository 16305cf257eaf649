//! A build killed (SIGKILL) at random points leaves a state from which the next build succeeds and
//! equals a clean build.

use std::time::Duration;

use crate::common::*;

#[test]
fn killed_builds_recover_to_a_clean_build() {
    let p = Project::new();
    // Copies (not links) and many files, so a build takes long enough to be killed in the middle.
    p.edit_config("link_mode = \"hardlink\"", "link_mode = \"copy\"");
    for i in 0..400 {
        std::fs::write(
            p.dir().join(format!("data/f{i:03}.bin")),
            vec![i as u8; 20_000 + i * 97],
        )
        .unwrap();
    }
    // Reference: a clean build of the same dump elsewhere.
    let reference = Project::new();
    copy_tree(&p.dir().join("data"), &reference.dir().join("data"));
    reference.build_json();

    let mut seed = 0x9e3779b97f4a7c15u64;
    let mut killed_mid_build = 0;
    for round in 0..12 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_micros(seed % 150_000);
        if round % 4 == 3 {
            // Change an input between rounds too.
            std::fs::write(p.dir().join("data/readme.txt"), format!("round {round}\n")).unwrap();
        }
        let mut child = aps5()
            .arg("-C")
            .arg(p.dir())
            .args(["-q", "build"])
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_none() {
            killed_mid_build += 1;
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    std::fs::write(p.dir().join("data/readme.txt"), b"hello\n").unwrap();
    p.build_json();
    assert_eq!(
        tree(&p.out()),
        tree(&reference.out()),
        "after {killed_mid_build} killed builds"
    );
    ok(&p.dir(), &["cache", "verify"]);
    assert_eq!(recomputed(&p.build_json()), vec![]);
    eprintln!("{killed_mid_build} of 12 builds were killed while running");
}
