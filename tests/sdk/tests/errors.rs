//! Bad input gives a clear error naming the problem and what to do, never a panic.

mod common;

use aps5_sdk::{DumpOptions, Tool};
use std::path::Path;

fn build_err(src: &Path, out: &Path) -> String {
    match aps5_sdk::build_dump(src, out, &DumpOptions::default()) {
        Ok(()) => panic!("{} built, but should have failed", src.display()),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn a_missing_tool_names_its_debian_package() {
    let empty = tempfile::tempdir().unwrap();
    for (tool, package) in [
        (Tool::Clang, "clang-14"),
        (Tool::Lld, "lld-14"),
        (Tool::LlvmMc, "llvm-14"),
    ] {
        let e = aps5_sdk::find_tool_on(tool, Some(empty.path().as_os_str()))
            .unwrap_err()
            .to_string();
        assert!(e.contains(tool.program()), "{e}");
        assert!(e.contains(&format!("apt-get install {package}")), "{e}");
    }
}

#[test]
fn an_unknown_function_is_reported_with_the_fix() {
    common::require(Tool::Clang);
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("main.c");
    std::fs::write(
        &src,
        "int frobnicate(int);\nint main(void) { return frobnicate(1); }\n",
    )
    .unwrap();
    let e = build_err(&src, &tmp.path().join("out"));
    assert!(
        e.contains("`frobnicate`") && e.contains("libraries.tsv"),
        "{e}"
    );
}

#[test]
fn a_compile_error_shows_the_compiler_output() {
    common::require(Tool::Clang);
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("broken.c");
    std::fs::write(&src, "int main(void) { return undeclared_variable; }\n").unwrap();
    let e = build_err(&src, &tmp.path().join("out"));
    assert!(
        e.contains("clang-14 failed")
            && e.contains("broken.c")
            && e.contains("undeclared_variable"),
        "{e}"
    );
}

#[test]
fn layout_mistakes_are_explained() {
    let tmp = tempfile::tempdir().unwrap();
    let e = build_err(&tmp.path().join("nope"), &tmp.path().join("out"));
    assert!(e.contains("not found"), "{e}");
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let e = build_err(&empty, &tmp.path().join("out"));
    assert!(e.contains("no eboot sources"), "{e}");
    let txt = tmp.path().join("notes.txt");
    std::fs::write(&txt, "x").unwrap();
    let e = build_err(&txt, &tmp.path().join("out"));
    assert!(e.contains(".c file"), "{e}");
}

#[test]
fn a_folder_that_is_not_a_dump_is_not_replaced() {
    common::require(Tool::Clang);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("precious");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("thesis.tex"), "keep me").unwrap();
    let e = build_err(&aps5_sdk::fixtures_dir().join("hello"), &out);
    assert!(e.contains("refusing"), "{e}");
    assert_eq!(
        std::fs::read_to_string(out.join("thesis.tex")).unwrap(),
        "keep me"
    );
}

#[test]
fn an_existing_dump_is_replaced() {
    common::require(Tool::Clang);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("dump");
    aps5_sdk::build_dump(
        &aps5_sdk::fixtures_dir().join("module_link"),
        &out,
        &DumpOptions::default(),
    )
    .unwrap();
    assert!(out.join("sce_module/mathlib.prx").is_file());
    aps5_sdk::build_dump(
        &aps5_sdk::fixtures_dir().join("hello"),
        &out,
        &DumpOptions::default(),
    )
    .unwrap();
    assert!(
        !out.join("sce_module").exists(),
        "stale files of the previous dump remain"
    );
    assert!(out.join("eboot.bin").is_file());
}
