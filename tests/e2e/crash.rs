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

/// Output generations are not fsynced (docs/RELINK.md, "Cold build speed"): one is named by the
/// boot that wrote it, and after a reboot the next build checks its outputs by their bytes, so
/// a file a crash tore (its stamp intact) is written again.
#[test]
fn a_tree_written_before_a_reboot_is_checked_by_its_bytes() {
    let p = Project::new();
    p.build_json();
    let boot: String = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .unwrap()
        .trim()
        .replace('-', "");
    let generation = |p: &Project| {
        let target = std::fs::read_link(p.out()).unwrap();
        target.file_name().unwrap().to_str().unwrap().to_string()
    };
    let name = generation(&p);
    assert_eq!(name.split_once('-').map(|(_, b)| b), Some(boot.as_str()));
    let good = std::fs::read(p.out().join("app.elf")).unwrap();

    // What a crash can leave: the file's bytes lost (zeros here), its size and mtime intact.
    let tear = |p: &Project| {
        let path = p.out().join("app.elf");
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, &vec![0u8; good.len()], 0).unwrap();
        f.set_modified(mtime).unwrap();
    };
    tear(&p);
    // In the boot that wrote it, the remembered stamp is believed (no bytes are read).
    assert_eq!(recomputed(&p.build_json()), vec![]);
    assert_ne!(std::fs::read(p.out().join("app.elf")).unwrap(), good);

    // The same tree as seen after a reboot: the generation names another boot.
    let other = format!("{}-{}", name.split_once('-').unwrap().0, "0".repeat(32));
    let gens = p.dir().join(".aps5/out");
    std::fs::rename(gens.join(&name), gens.join(&other)).unwrap();
    let target = std::fs::read_link(p.out()).unwrap();
    std::fs::remove_file(p.out()).unwrap();
    std::os::unix::fs::symlink(target.with_file_name(&other), p.out()).unwrap();
    // `aps5 run` does not start what a crash may have torn.
    let err = fails(&p.dir(), &["run"], 2);
    assert!(
        err.contains("written before this machine last started") && err.contains("aps5 build"),
        "{err}"
    );
    let report = p.build_json();
    let rows = recomputed(&report);
    assert!(
        rows.iter().any(|(q, a, _)| q == "output" && a == "app.elf"),
        "{rows:?}"
    );
    assert_eq!(std::fs::read(p.out().join("app.elf")).unwrap(), good);
    assert!(generation(&p).ends_with(&boot), "{}", generation(&p));
    ok(&p.dir(), &["run"]);

    // Bytes that all prove right are carried (linked) into a generation of this boot, which the
    // next build believes again.
    let now = generation(&p);
    let renamed = format!("{}-{}", now.split_once('-').unwrap().0, "1".repeat(32));
    std::fs::rename(gens.join(&now), gens.join(&renamed)).unwrap();
    let target = std::fs::read_link(p.out()).unwrap();
    std::fs::remove_file(p.out()).unwrap();
    std::os::unix::fs::symlink(target.with_file_name(&renamed), p.out()).unwrap();
    p.build_json();
    assert!(generation(&p).ends_with(&boot), "{}", generation(&p));
    assert_eq!(tree(&p.out())["app.elf"], good);
    assert_eq!(recomputed(&p.build_json()), vec![]);
}
