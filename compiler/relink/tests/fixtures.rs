//! The fixture programs (tests/fixtures, built by the fixture SDK into PS5- and PS4-format
//! dumps with clang-14/ld.lld-14, and into PS5 payload ELFs made like the ps5-payload-sdk's),
//! relinked and run; stdout, stderr and the exit status are compared with the fixture's
//! expect.* files. Prints a table; fails if any fixture not listed in KNOWN_FAILING fails in
//! either dump layout, or, not listed in NOT_PAYLOADS, as a payload.

mod support;

use std::path::Path;
use std::time::Duration;

use support::*;

/// Fixtures allowed to fail, each with the reason. Every other fixture (every folder of
/// tests/fixtures with an expect.stdout) must pass in both layouts, so a new fixture cannot
/// fail unnoticed.
const KNOWN_FAILING: &[(&str, &str)] = &[];

/// Fixtures that cannot be payloads, each with the reason (the payload layout is one C
/// program: no modules, no C++, no shaders, no native TLS). Every other fixture must pass
/// as a payload.
const NOT_PAYLOADS: &[(&str, &str)] = &[
    ("module_chain", "has modules"),
    ("module_dlsym", "has modules"),
    ("module_link", "has modules"),
    ("sample", "has modules"),
    ("cxx_exceptions", "C++"),
    ("cxx_terminate", "C++"),
    (
        "tls",
        "native TLS (the payload SDK builds with emulated TLS)",
    ),
];

/// How a fixture is built.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    Ps5,
    Ps4,
    /// A PS5 payload (`aps5_sdk::build_payload`).
    Payload,
}

impl Layout {
    fn tag(self) -> &'static str {
        match self {
            Layout::Ps5 => "ps5",
            Layout::Ps4 => "ps4",
            Layout::Payload => "payload",
        }
    }
}

fn lines_of(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .map(|s| {
            s.lines()
                .map(str::to_owned)
                .filter(|l| !l.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// Builds, relinks and runs one fixture; Ok(()) if every expectation holds.
fn check(fixture: &Path, layout: Layout) -> Result<(), String> {
    let work = tempfile::tempdir().unwrap();
    // APS5_KEEP=dir keeps the dump and output tree of every fixture there, for debugging.
    let keep = std::env::var_os("APS5_KEEP").map(|d| {
        Path::new(&d).join(format!(
            "{}-{}",
            fixture.file_name().unwrap().to_string_lossy(),
            layout.tag()
        ))
    });
    let root = keep.clone().unwrap_or_else(|| work.path().to_path_buf());
    let _ = std::fs::remove_dir_all(root.join("out"));
    let dump = root.join("dump");
    let executable = match layout {
        Layout::Payload => {
            let _ = std::fs::remove_dir_all(&dump);
            aps5_sdk::build_payload(fixture, &dump).map_err(|e| format!("SDK build: {e:#}"))?
        }
        Layout::Ps5 | Layout::Ps4 => {
            let ps4 = layout == Layout::Ps4;
            aps5_sdk::build_dump(fixture, &dump, &aps5_sdk::DumpOptions { ps4 })
                .map_err(|e| format!("SDK build: {e:#}"))?;
            dump.join("eboot.bin")
        }
    };
    let mut modules = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dump.join("sce_module")) {
        for e in rd {
            modules.push(e.unwrap().path());
        }
    }
    modules.sort();
    let out = root.join("out");
    let result = std::panic::catch_unwind(|| build_tree(&executable, &modules, &out));
    result.map_err(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .unwrap_or_else(|| "relink panicked".into())
    })?;
    // The dump's files are the game's /app0 (modules there were replaced by relinked ones).
    copy_tree(&dump, &out.join("app0"));
    let args = lines_of(&fixture.join("args"));
    let env: Vec<(String, String)> = lines_of(&fixture.join("env"))
        .into_iter()
        .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect();
    let r = run(&out, &args, &env, Duration::from_secs(30));
    let want_out = std::fs::read_to_string(fixture.join("expect.stdout")).unwrap_or_default();
    let want_exit: i32 = std::fs::read_to_string(fixture.join("expect.exit"))
        .map(|s| s.trim().parse().unwrap())
        .unwrap_or(0);
    let mut problems = Vec::new();
    if r.stdout != want_out {
        problems.push(format!(
            "stdout differs:\n--- want\n{want_out}--- got\n{}",
            r.stdout
        ));
    }
    if r.status != Some(want_exit) {
        problems.push(format!("exit {:?}, want {want_exit}", r.status));
    }
    if let Ok(want_err) = std::fs::read_to_string(fixture.join("expect.stderr"))
        && !r.stderr.contains(want_err.trim_end())
    {
        problems.push(format!(
            "stderr lacks {:?}; got {:?}",
            want_err.trim_end(),
            r.stderr
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        problems.push(format!(
            "stderr: {}",
            r.stderr.chars().take(2000).collect::<String>()
        ));
        Err(problems.join("\n"))
    }
}

fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            if e.file_name() == "sce_module" {
                continue;
            }
            std::fs::create_dir_all(&dst).unwrap();
            copy_tree(&e.path(), &dst);
        } else if e.file_name() != "eboot.bin" && !e.file_name().to_string_lossy().ends_with(".elf")
        {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

#[test]
fn fixtures_run_as_expected() {
    let dir = aps5_sdk::fixtures_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("expect.stdout").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let only = std::env::var("APS5_FIXTURE").ok();
    let mut passed = Vec::new();
    let mut report = String::new();
    for name in &names {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let mut ok_both = true;
        for layout in [Layout::Ps5, Layout::Ps4] {
            let tag = layout.tag();
            match check(&dir.join(name), layout) {
                Ok(()) => report.push_str(&format!("PASS {name} ({tag})\n")),
                Err(e) => {
                    ok_both = false;
                    report.push_str(&format!("FAIL {name} ({tag}): {e}\n"));
                }
            }
        }
        if ok_both {
            passed.push(name.clone());
        }
    }
    eprintln!("{report}");
    eprintln!(
        "fixtures passing on PS5 and PS4: {}/{}",
        passed.len(),
        names.len()
    );
    let unexpected: Vec<&String> = names
        .iter()
        .filter(|n| only.as_deref().is_none_or(|o| o == n.as_str()))
        .filter(|n| !passed.contains(n) && !KNOWN_FAILING.iter().any(|(k, _)| k == n))
        .collect();
    assert!(
        unexpected.is_empty(),
        "fixtures failing: {unexpected:?}\n{report}"
    );
}

/// Every fixture that can be one, built as a PS5 payload (plain-name imports from
/// `libkernel_sys.so` / `libSceLibcInternal.so` / ..., DT_GNU_HASH only, `_start(payload_args_t
/// *)`, raw system calls through the pointer its start files take from the arguments), then
/// relinked and run like the dumps.
#[test]
fn fixtures_run_as_payloads() {
    let programs = |dir: &Path| -> Vec<(String, std::path::PathBuf)> {
        let mut v: Vec<(String, std::path::PathBuf)> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("expect.stdout").is_file())
            .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
            .filter(|(n, _)| !NOT_PAYLOADS.iter().any(|(k, _)| k == n))
            // Shaders live in a dump's data (the SDK embeds them); a payload has none.
            .filter(|(_, p)| !p.join("shaders").is_dir())
            .collect();
        v.sort();
        v
    };
    // The fixtures, then the programs only a payload can be (tests/sdk/payloads).
    let mut all = programs(&aps5_sdk::fixtures_dir());
    let payload_only = programs(&aps5_sdk::payloads_dir());
    assert!(!payload_only.is_empty());
    all.extend(payload_only);
    let only = std::env::var("APS5_FIXTURE").ok();
    let mut failed = Vec::new();
    let mut report = String::new();
    for (name, path) in &all {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        match check(path, Layout::Payload) {
            Ok(()) => report.push_str(&format!("PASS {name} (payload)\n")),
            Err(e) => {
                failed.push(name.clone());
                report.push_str(&format!("FAIL {name} (payload): {e}\n"));
            }
        }
    }
    eprintln!("{report}");
    assert!(failed.is_empty(), "payloads failing: {failed:?}\n{report}");
}

/// The `static_libc_syscalls` fixture (a static C library stand-in) relinks in both layouts: the two
/// `syscall`s reached only through its function-pointer table are trapped, and the byte
/// patterns of the data in its text (the blob in `.text` and the copy main compares it with,
/// in `.rodata`, which shares the executable segment; each reads as `sysenter`, `int 0x80`
/// and two `syscall`s to a straight-through decode, which made the build fail before) are
/// listed and left unchanged. (The run itself is checked by the fixture table above.)
#[test]
fn static_libc_syscalls_fixture_traps_reachable_sites_only() {
    let fixture = aps5_sdk::fixtures_dir().join("static_libc_syscalls");
    for ps4 in [false, true] {
        let work = tempfile::tempdir().unwrap();
        aps5_sdk::build_dump(&fixture, work.path(), &aps5_sdk::DumpOptions { ps4 }).unwrap();
        let bytes = std::fs::read(work.path().join("eboot.bin")).unwrap();
        let m = aps5_elf::parse(&bytes).unwrap();
        let prx = aps5_relink::PrxSet::installed().unwrap();
        let r = aps5_relink::relink_executable(&bytes, &m, &prx, &Default::default())
            .unwrap_or_else(|e| panic!("ps4={ps4}: {e}"));
        let w = &r.warnings;
        assert!(
            w.iter()
                .any(|w| w.starts_with("2 raw system call") && w.contains(": 2 syscall;")),
            "ps4={ps4}: {w:?}"
        );
        let left = w
            .iter()
            .find(|w| w.starts_with("8 byte pattern(s)"))
            .unwrap_or_else(|| panic!("ps4={ps4}: {w:?}"));
        let kinds: Vec<&str> = left
            .rsplit(": ")
            .next()
            .unwrap()
            .split(", ")
            .map(|s| s.split(" at ").next().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["sysenter", "int 0x80", "syscall", "syscall"].repeat(2),
            "{left}"
        );
        // Both copies are in the output unchanged.
        let blob = [
            0x0f, 0x34, 0xcd, 0x80, 0x0f, 0x05, 0xb8, 0x14, 0, 0, 0, 0x0f, 0x05, 0xc3,
        ];
        assert_eq!(r.elf.windows(14).filter(|x| *x == blob).count(), 2);
    }
}

/// Every SSE4a form (EXTRQ and INSERTQ, immediate and register; MOVNTSS; MOVNTSD), compiled
/// by clang-14 -msse4a from its builtins (`tests/data/sse4a`), is found in reachable code at
/// the addresses GNU objdump's disassembly of the same text gives, with its length; and
/// relinked without a target CPU (nothing lowered), on a CPU without SSE4a the port dies with
/// SIGILL at the first one (the lowering: tests/lower.rs).
#[test]
fn sse4a_instructions_are_found_and_die_with_sigill_on_intel() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sse4a");
    let work = tempfile::tempdir().unwrap();
    let dump = work.path().join("dump");
    aps5_sdk::build_dump(&src, &dump, &aps5_sdk::DumpOptions { ps4: false }).unwrap();
    let bytes = std::fs::read(dump.join("eboot.bin")).unwrap();
    let m = aps5_elf::parse(&bytes).unwrap();
    let prx = aps5_relink::PrxSet::installed().unwrap();
    let r = aps5_relink::relink_executable(&bytes, &m, &prx, &Default::default()).unwrap();

    // The oracle: GNU objdump over the executable segment's bytes.
    let image = aps5_elf::unwrap_fself(&bytes).unwrap();
    let mut want: Vec<(u64, String, u8)> = Vec::new();
    for s in m
        .segments
        .iter()
        .filter(|s| s.p_type == 1 && s.flags & 1 != 0)
    {
        let text = work.path().join(format!("text{:x}.bin", s.vaddr));
        std::fs::write(
            &text,
            &image[s.offset as usize..(s.offset + s.filesz) as usize],
        )
        .unwrap();
        let vma = format!("--adjust-vma={:#x}", s.vaddr);
        let (out, err, ok) = tool(
            "objdump",
            &[
                "-D",
                "-b",
                "binary",
                "-mi386:x86-64",
                &vma,
                text.to_str().unwrap(),
            ],
        );
        assert!(ok, "objdump: {err}");
        for line in out.lines() {
            let cols: Vec<&str> = line.split('\t').collect();
            let (Some(addr), Some(hex), Some(asm)) = (cols.first(), cols.get(1), cols.get(2))
            else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr.trim().trim_end_matches(':'), 16) else {
                continue;
            };
            let mnemonic = asm.split_whitespace().next().unwrap_or("");
            if ["extrq", "insertq", "movntss", "movntsd"].contains(&mnemonic) {
                let len = hex.split_whitespace().count() as u8;
                want.push((addr, mnemonic.to_owned(), len));
            }
        }
    }
    let got: Vec<(u64, String, u8)> = r
        .amd_only
        .iter()
        .map(|s| {
            let name = s.kind.name().split(' ').next().unwrap().to_owned();
            (s.address, name, s.length)
        })
        .collect();
    // objdump prints at most 7 bytes a line: compare lengths up to that.
    let clip = |v: &[(u64, String, u8)]| -> Vec<(u64, String, u8)> {
        v.iter()
            .map(|(a, n, l)| (*a, n.clone(), (*l).min(7)))
            .collect()
    };
    assert_eq!(clip(&got), clip(&want), "{:?}", r.warnings);
    let kinds: std::collections::BTreeSet<aps5_relink::AmdOnlyKind> =
        r.amd_only.iter().map(|s| s.kind).collect();
    assert_eq!(kinds.len(), 6, "every SSE4a form: {kinds:?}");
    assert!(
        r.warnings
            .iter()
            .any(|w| w.starts_with("6 instruction(s) only AMD CPUs have")),
        "{:?}",
        r.warnings
    );

    // This machine's CPU (the test reads it) decides what the port does.
    let sse4a = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "sse4a"));
    let out = work.path().join("out");
    build_tree(&dump.join("eboot.bin"), &[], &out);
    let run = run(&out, &[], &[], Duration::from_secs(20));
    assert!(run.stdout.starts_with("sse4a: start\n"), "{run:?}");
    if !sse4a {
        assert_eq!(run.status, Some(128 + 4), "SIGILL expected: {run:?}");
        assert_eq!(run.stdout, "sse4a: start\n");
    }
}
