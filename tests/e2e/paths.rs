//! Every path argument of every verb works relative (to the working folder, or to `-C DIR`) and
//! absolute: `init DIR`, `-C DIR`, `inspect FILE`, `shader disasm FILE`, `demo --keep DIR`.

use std::path::Path;
use std::process::Output;

use crate::common::{aps5, copy_tree, repo_root};

/// Runs aps5 with `args` in the working folder `cwd` (no `-C` added), with the cache in `cache`.
fn run_in(cwd: &Path, cache: &Path, args: &[&str]) -> Output {
    aps5()
        .current_dir(cwd)
        .env("APS5_CACHE_DIR", cache)
        .args(args)
        .output()
        .expect("aps5 runs")
}

fn ok_in(cwd: &Path, cache: &Path, args: &[&str]) -> String {
    let out = run_in(cwd, cache, args);
    assert!(
        out.status.success(),
        "aps5 {args:?} in {} failed ({:?}):\n{}{}",
        cwd.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn sample(into: &Path) {
    copy_tree(&repo_root().join("compiler/aps5/sample"), into);
}

#[test]
fn init_takes_a_relative_or_absolute_dump_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    for (name, how) in [("rel", "relative"), ("abs", "absolute")] {
        let dump = tmp.path().join(name);
        sample(&dump);
        let arg = if how == "relative" {
            name.to_string()
        } else {
            dump.display().to_string()
        };
        ok_in(tmp.path(), &cache, &["-q", "init", &arg]);
        assert!(dump.join("aps5.toml").is_file(), "{how}: no aps5.toml");
        // Relative to -C as well.
        std::fs::remove_file(dump.join("aps5.toml")).unwrap();
        let parent = tmp.path().display().to_string();
        ok_in(Path::new("/"), &cache, &["-q", "-C", &parent, "init", &arg]);
        assert!(
            dump.join("aps5.toml").is_file(),
            "{how} under -C: no aps5.toml"
        );
    }
    // A folder that does not exist is named once, with one OS error text.
    let out = run_in(tmp.path(), &cache, &["init", "nowhere"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("nowhere/nowhere"), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

#[test]
fn project_verbs_take_a_relative_or_absolute_dash_c() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let dump = tmp.path().join("game");
    sample(&dump);
    ok_in(&dump, &cache, &["-q", "init"]);
    let abs = dump.display().to_string();
    for dir in ["game", abs.as_str()] {
        ok_in(tmp.path(), &cache, &["-q", "-C", dir, "build"]);
        let status = ok_in(tmp.path(), &cache, &["-C", dir, "status", "--json"]);
        assert!(status.contains("eboot.bin"), "{status}");
        let run = run_in(tmp.path(), &cache, &["-C", dir, "run"]);
        assert!(run.status.success(), "run -C {dir}: {run:?}");
    }
}

#[test]
fn file_arguments_are_relative_to_the_working_folder_or_dash_c() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let dump = tmp.path().join("game");
    sample(&dump);
    std::fs::write(
        dump.join("code.bin"),
        [0x80u8, 0x02, 0x00, 0x7e, 0x00, 0x00, 0x81, 0xbf],
    )
    .unwrap();
    let eboot = dump.join("eboot.bin").display().to_string();
    let code = dump.join("code.bin").display().to_string();
    let cases: [(&Path, Vec<&str>); 3] = [
        (&dump, vec![]),
        (tmp.path(), vec!["-C", "game"]),
        (Path::new("/"), vec![]),
    ];
    for (cwd, pre) in cases {
        let absolute = cwd == Path::new("/");
        let (e, c) = if absolute {
            (eboot.as_str(), code.as_str())
        } else {
            ("eboot.bin", "code.bin")
        };
        let text = ok_in(cwd, &cache, &[pre.as_slice(), &["inspect", e]].concat());
        assert!(text.contains("ELF") || text.contains("PS"), "{text}");
        let text = ok_in(
            cwd,
            &cache,
            &[pre.as_slice(), &["shader", "disasm", c]].concat(),
        );
        assert_eq!(
            text, "\tv_mov_b32_e32 v0, 0\n\ts_endpgm\n",
            "{cwd:?} {pre:?}"
        );
    }
}

#[test]
fn demo_keeps_its_project_in_a_relative_or_absolute_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    ok_in(tmp.path(), &cache, &["-q", "demo", "--keep", "kept"]);
    assert!(tmp.path().join("kept/aps5-out/app.elf").is_file());
    let abs = tmp.path().join("kept-abs").display().to_string();
    ok_in(Path::new("/"), &cache, &["-q", "demo", "--keep", &abs]);
    assert!(tmp.path().join("kept-abs/aps5-out/app.elf").is_file());
}
