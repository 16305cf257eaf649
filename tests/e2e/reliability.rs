//! Issue 16: concurrent builds, hostile output trees, kills during the switch to a new tree.
//! Each test loops over trials and prints how many it tried and how many held.

use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::common::*;

/// blake3 of every file under `dir` (the dump), following nothing.
fn hashes(dir: &Path) -> BTreeMap<String, String> {
    tree(dir)
        .into_iter()
        .filter(|(k, _)| !k.starts_with("aps5-out") && !k.starts_with(".aps5") && k != "aps5.toml")
        .map(|(k, v)| (k, blake3::hash(&v).to_hex().to_string()))
        .collect()
}

fn spawn_build(dir: &Path) -> Child {
    aps5()
        .arg("-C")
        .arg(dir)
        .args(["-q", "build"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn finish(child: Child) -> (bool, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A project with many data files, so builds overlap for real.
fn busy_project(files: usize) -> Project {
    let p = Project::new();
    for i in 0..files {
        std::fs::write(
            p.dir().join(format!("data/f{i:03}.bin")),
            vec![i as u8; 5_000 + i * 31],
        )
        .unwrap();
    }
    p
}

#[test]
fn concurrent_builds_of_one_project_never_touch_the_dump() {
    let mut tried = 0;
    let mut lost = 0;
    for mode in ["hardlink", "copy"] {
        let p = busy_project(150);
        if mode == "copy" {
            p.edit_config("link_mode = \"hardlink\"", "link_mode = \"copy\"");
        }
        for round in 0..6 {
            // Change an input so every round writes a new tree.
            std::fs::write(p.dir().join("data/readme.txt"), format!("{mode} {round}\n")).unwrap();
            let before = hashes(&p.dir());
            let (a, b) = (spawn_build(&p.dir()), spawn_build(&p.dir()));
            let (ra, rb) = (finish(a), finish(b));
            tried += 1;
            assert!(ra.0 && rb.0, "{mode} round {round}: {ra:?} {rb:?}");
            let after = hashes(&p.dir());
            if before != after {
                lost += 1;
            }
            assert_eq!(before, after, "{mode} round {round}: the dump changed");
            // The output carries the dump's files (bundled modules are converted, not carried).
            let out = tree(&p.out().join("app0"));
            assert_eq!(out.len(), before.len(), "{mode} round {round}");
            for (rel, h) in before.iter().filter(|(r, _)| !r.starts_with("sce_module/")) {
                assert_eq!(
                    &blake3::hash(&out[rel]).to_hex().to_string(),
                    h,
                    "{mode} round {round}: {rel}"
                );
            }
        }
        assert_eq!(recomputed(&p.build_json()), vec![]);
    }
    eprintln!(
        "concurrent builds of one project: tried {tried}, survived {}, lost {lost}",
        tried - lost
    );
}

#[test]
fn several_projects_build_together_on_one_cache() {
    let projects: Vec<Project> = (0..3).map(|_| busy_project(60)).collect();
    let shared = projects[0].cache();
    for p in &projects[1..] {
        p.edit_config(
            "cache_dir = \"../cache\"",
            &format!("cache_dir = \"{}\"", shared.display()),
        );
    }
    for round in 0..3 {
        let before: Vec<_> = projects.iter().map(|p| hashes(&p.dir())).collect();
        let children: Vec<Child> = projects
            .iter()
            .flat_map(|p| [spawn_build(&p.dir()), spawn_build(&p.dir())])
            .collect();
        for c in children {
            let (ok, err) = finish(c);
            assert!(ok, "round {round}: {err}");
        }
        for (p, b) in projects.iter().zip(&before) {
            assert_eq!(&hashes(&p.dir()), b, "round {round}");
        }
    }
    let first = tree(&projects[0].out());
    for p in &projects[1..] {
        assert_eq!(tree(&p.out()), first);
    }
}

#[test]
fn a_second_build_waits_for_the_first() {
    let p = Project::new();
    p.build_json();
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(p.dir().join(".aps5/lock"))
        .unwrap();
    // SAFETY: flock on an fd we own.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
    // A new file (not written in place: the output is a hard link to the dump file).
    std::fs::remove_file(p.dir().join("data/readme.txt")).unwrap();
    std::fs::write(p.dir().join("data/readme.txt"), b"changed\n").unwrap();
    let generation = std::fs::canonicalize(p.out()).unwrap();
    let child = aps5()
        .arg("-C")
        .arg(p.dir())
        .arg("build")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(
        std::fs::canonicalize(p.out()).unwrap(),
        generation,
        "the build did not wait for the lock"
    );
    assert_eq!(
        std::fs::read(p.out().join("app0/data/readme.txt")).unwrap(),
        b"hello\n"
    );
    drop(lock);
    let (ok, err) = finish(child);
    assert!(ok, "{err}");
    assert!(
        err.contains("another aps5 build of this project is running"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(p.out().join("app0/data/readme.txt")).unwrap(),
        b"changed\n"
    );
}

#[test]
fn a_symlinked_output_folder_is_refused_and_its_target_untouched() {
    let p = Project::new();
    let outside = p.tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("precious.txt"), b"mine").unwrap();
    std::os::unix::fs::symlink(&outside, p.out()).unwrap();
    let err = fails(&p.dir(), &["build"], 2);
    assert!(
        err.contains("aps5-out") && err.contains("symbolic link"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        1,
        "the build wrote into the link's target"
    );
    // A plain folder that is not an aps5 tree is refused the same way.
    std::fs::remove_file(p.out()).unwrap();
    std::fs::create_dir(p.out()).unwrap();
    std::fs::write(p.out().join("notes.txt"), b"user file").unwrap();
    let err = fails(&p.dir(), &["build"], 2);
    assert!(err.contains("without manifest.json"), "{err}");
    assert_eq!(
        std::fs::read(p.out().join("notes.txt")).unwrap(),
        b"user file"
    );
    // `aps5 clean` refuses it too.
    fails(&p.dir(), &["clean"], 2);
    assert!(p.out().join("notes.txt").is_file());
}

#[test]
fn symlinks_planted_in_the_output_tree_are_never_followed() {
    let p = Project::new();
    p.build_json();
    let outside = p.tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("precious.txt"), b"mine").unwrap();
    std::fs::write(outside.join("one.txt"), b"mine too").unwrap();
    let generation = std::fs::canonicalize(p.out()).unwrap();
    // A folder of the tree replaced by a link out, plus a manifest that lists a file through it.
    std::fs::remove_dir_all(generation.join("app0/data/levels")).unwrap();
    std::os::unix::fs::symlink(&outside, generation.join("app0/data/levels")).unwrap();
    std::os::unix::fs::symlink(&outside, generation.join("evil")).unwrap();
    let manifest = generation.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["files"].as_array_mut().unwrap().push(serde_json::json!({
        "path": "evil/precious.txt", "blake3": "00", "size": 4
    }));
    std::fs::remove_file(&manifest).unwrap();
    std::fs::write(&manifest, m.to_string()).unwrap();
    // An output file replaced by a link to an outside file with the same name.
    std::fs::remove_file(generation.join("coverage.json")).unwrap();
    std::os::unix::fs::symlink(
        outside.join("precious.txt"),
        generation.join("coverage.json"),
    )
    .unwrap();

    let report = p.build_json();
    assert!(!recomputed(&report).is_empty());
    assert_eq!(
        std::fs::read(outside.join("precious.txt")).unwrap(),
        b"mine"
    );
    assert_eq!(std::fs::read(outside.join("one.txt")).unwrap(), b"mine too");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 2);
    // The new tree is whole and holds no link.
    let out = std::fs::canonicalize(p.out()).unwrap();
    assert!(out.join("app0/data/levels").is_dir());
    assert!(!out.join("app0/data/levels").is_symlink());
    assert!(!out.join("evil").exists() && !out.join("coverage.json").is_symlink());
    assert_eq!(
        std::fs::read(out.join("app0/data/levels/one.txt")).unwrap(),
        b"level one\n"
    );
    assert_eq!(recomputed(&p.build_json()), vec![]);
}

#[test]
fn a_killed_rebuild_never_leaves_a_mixed_tree() {
    // Two dump states; builds alternate between them and are killed at random points.
    let p = busy_project(120);
    p.edit_config("link_mode = \"hardlink\"", "link_mode = \"copy\"");
    let state = |which: u8| {
        std::fs::write(p.dir().join("data/readme.txt"), format!("state {which}\n")).unwrap();
        for i in 0..120 {
            std::fs::write(
                p.dir().join(format!("data/f{i:03}.bin")),
                vec![i as u8 ^ which; 5_000 + i * 31],
            )
            .unwrap();
        }
    };
    let mut trees = Vec::new();
    for which in [0u8, 1] {
        state(which);
        p.build_json();
        trees.push(tree(&p.out()));
    }
    let mut seed = 0x2545f4914f6cdd1du64;
    let (mut tried, mut killed, mut mixed) = (0, 0, 0);
    for round in 0..30 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        state((round % 2) as u8);
        let mut child = aps5()
            .arg("-C")
            .arg(p.dir())
            .args(["-q", "build"])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(seed % 400_000));
        if child.try_wait().unwrap().is_none() {
            killed += 1;
        }
        let _ = child.kill();
        let _ = child.wait();
        tried += 1;
        let now = tree(&p.out());
        if !trees.contains(&now) {
            mixed += 1;
        }
        assert!(
            now.keys().all(|k| !k.contains("staging")),
            "round {round}: a staging folder in the tree"
        );
    }
    eprintln!("killed rebuilds: tried {tried}, killed mid-build {killed}, mixed trees {mixed}");
    assert_eq!(mixed, 0, "a killed build left a mixed output tree");
    // The next build equals a clean one and leaves at most the current and previous generation.
    state(1);
    p.build_json();
    assert_eq!(tree(&p.out()), trees[1]);
    let gens = std::fs::read_dir(p.dir().join(".aps5/out"))
        .unwrap()
        .count();
    assert!(gens <= 2, "{gens} generations left");
}

#[test]
fn a_tree_made_before_generations_is_switched_over() {
    let p = Project::new();
    p.build_json();
    // Turn the tree into the plain folder older versions of aps5 made.
    let generation = std::fs::canonicalize(p.out()).unwrap();
    std::fs::remove_file(p.out()).unwrap();
    std::fs::rename(&generation, p.out()).unwrap();
    let before = tree(&p.out());
    std::fs::write(p.dir().join("data/readme.txt"), b"new\n").unwrap();
    p.build_json();
    assert!(p.out().is_symlink());
    let after = tree(&p.out());
    assert_eq!(after["app0/data/readme.txt"], b"new\n");
    assert_eq!(after.len(), before.len());
    ok(&p.dir(), &["run"]);
}

#[test]
fn an_output_or_data_folder_inside_a_dump_folder_is_refused() {
    for (key, value) in [
        ("out_dir = \"aps5-out\"", "out_dir = \"sce_module\""),
        ("out_dir = \"aps5-out\"", "out_dir = \"data/out\""),
        ("data_dir = \"aps5-data\"", "data_dir = \"data/saves\""),
        ("data_dir = \"aps5-data\"", "data_dir = \"sce_sys\""),
    ] {
        let p = Project::new();
        p.edit_config(key, value);
        let before = hashes(&p.dir());
        let err = fails(&p.dir(), &["build"], 2);
        assert!(
            err.contains("inside the dump's folder") || err.contains("aps5 did not make it"),
            "{value}: {err}"
        );
        assert_eq!(hashes(&p.dir()), before, "{value}");
    }
    // A folder of its own, nested, works (the link to the generation climbs out of it).
    let p = Project::new();
    p.edit_config("out_dir = \"aps5-out\"", "out_dir = \"build/out\"");
    p.build_json();
    assert!(p.dir().join("build/out/app.elf").is_file());
    assert_eq!(recomputed(&p.build_json()), vec![]);
    ok(&p.dir(), &["run"]);
}

#[test]
fn a_huge_jobs_setting_is_clamped() {
    let p = busy_project(300);
    p.edit_config("jobs = 0", "jobs = 100000");
    p.build_json();
    assert_eq!(recomputed(&p.build_json()), vec![]);
}

/// A build keeps the tree it replaced (a program started from it may still be reading it) and
/// removes the one before, so at most two generations are ever left.
#[test]
fn a_build_keeps_the_replaced_generation_and_removes_the_one_before() {
    let p = Project::new();
    let generation = |p: &Project| std::fs::canonicalize(p.out()).unwrap();
    let count = |p: &Project| {
        std::fs::read_dir(p.dir().join(".aps5/out"))
            .unwrap()
            .count()
    };
    p.build_json();
    let first = generation(&p);
    std::fs::write(p.dir().join("data/readme.txt"), b"second\n").unwrap();
    p.build_json();
    let second = generation(&p);
    assert_ne!(first, second);
    assert!(
        first.join("manifest.json").is_file(),
        "the replaced tree is kept"
    );
    assert_eq!(count(&p), 2);
    std::fs::write(p.dir().join("data/readme.txt"), b"third\n").unwrap();
    p.build_json();
    assert!(!first.exists(), "{} is left", first.display());
    assert!(second.join("manifest.json").is_file());
    assert_eq!(count(&p), 2);
}
