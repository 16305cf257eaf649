//! The oracle for every fixture's `expect.stdout` / `expect.exit`: the same sources compiled
//! natively for Linux with clang-14 and the host libc (the sce* calls mapped to POSIX by
//! `tests/sdk/host-shim/`), run, and compared. Set `APS5_BLESS=1` to write the expectation files
//! from the native run instead (then review them).
//!
//! Every current fixture has a native equivalent; a fixture whose folder holds a file named
//! `native-skip` (its text says why) is skipped and reported.

mod common;

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn run(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {:?}\n{}{}",
        cmd,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_tree(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

struct NativeRun {
    stdout: String,
    stderr: String,
    exit: i32,
}

/// Builds FIXTURE natively into RUN_DIR (laid out like the dump: eboot.bin, sce_module/, app0
/// files) and runs it there.
fn native(fixture: &Path, run_dir: &Path, clang: &Path) -> NativeRun {
    let shim = aps5_sdk::sdk_dir().join("host-shim");
    let project = aps5_sdk::Project::load(fixture).expect("fixture layout");
    // Which modules the eboot links against (the console's loader starts those before main);
    // the SDK's build report says, from the eboot's imports.
    let work = tempfile::tempdir().unwrap();
    let dump = work.path().join("dump");
    let report = aps5_sdk::build_dump_in(
        fixture,
        &dump,
        &aps5_sdk::DumpOptions::default(),
        &work.path().join("work"),
    )
    .expect("the SDK builds the fixture");
    let linked_modules: Vec<String> = report.modules[0]
        .symbols
        .iter()
        .filter_map(|s| s.import_from.as_ref())
        .filter(|(_, m)| project.modules.contains_key(m))
        .map(|(_, m)| m.clone())
        .collect();

    // C sources are compiled with clang-14, C++ sources with clang++-14 (C++17, exceptions,
    // the host's libstdc++); a program with any C++ is linked by clang++.
    let clangxx = common::require(aps5_sdk::Tool::Clangxx);
    let objects = work.path().join("objects");
    std::fs::create_dir_all(&objects).unwrap();
    let mut n_obj = 0;
    let mut compile = |src: &Path, cwd: &Path, pic: bool| -> std::path::PathBuf {
        n_obj += 1;
        let obj = objects.join(format!("{n_obj}.o"));
        let cxx = aps5_sdk::is_cxx(src);
        let mut cmd = Command::new(if cxx { &clangxx } else { clang });
        cmd.current_dir(cwd)
            .args([if cxx { "-std=gnu++17" } else { "-std=gnu11" }, "-O1", "-w"])
            .arg("-include")
            .arg(shim.join("aps5_host.h"))
            .arg("-I")
            .arg(&shim)
            .args(&project.cflags)
            .args(if pic { &["-fPIC"][..] } else { &[] })
            .arg("-c")
            .arg(src)
            .arg("-o")
            .arg(&obj);
        run(&mut cmd, &format!("native compile of {}", src.display()));
        obj
    };
    let linker = |sources: &[std::path::PathBuf]| {
        if sources.iter().any(|s| aps5_sdk::is_cxx(s)) {
            Command::new(&clangxx)
        } else {
            Command::new(clang)
        }
    };
    // The fixture's modules each module imports from. The console's loader starts those
    // before the module (natively: their constructors run first).
    let module_deps: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        project
            .modules
            .keys()
            .map(|name| {
                let path = format!("sce_module/{name}.prx");
                let deps = report
                    .modules
                    .iter()
                    .filter(|m| m.dump_path == path)
                    .flat_map(|m| m.symbols.iter())
                    .filter_map(|s| s.import_from.as_ref())
                    .filter(|(_, m)| project.modules.contains_key(m))
                    .map(|(_, m)| m.clone())
                    .collect();
                (name.clone(), deps)
            })
            .collect();
    let mods = run_dir.join("sce_module");
    std::fs::create_dir_all(&mods).unwrap();
    let mut module_files = Vec::new();
    for (name, sources) in &project.modules {
        let out = mods.join(format!("{name}.prx"));
        let mut objs: Vec<_> = sources
            .iter()
            .map(|s| compile(s, &project.root, true))
            .collect();
        if linked_modules.contains(name) || module_deps.values().any(|d| d.contains(name)) {
            objs.push(compile(&shim.join("module_autostart.c"), &shim, true));
        }
        if linked_modules.contains(name) {
            module_files.push(out.clone());
        }
        // Modules it imports from (built before it: modules are built in name order).
        let deps = &module_deps[name];
        let mut cmd = linker(sources);
        cmd.args(["-shared", "-fPIC"])
            .arg(format!("-Wl,-soname,{name}.prx"))
            .arg("-Wl,-rpath,$ORIGIN")
            .args(&objs);
        for d in deps {
            let f = mods.join(format!("{d}.prx"));
            assert!(
                f.is_file(),
                "modules/{name} imports from modules/{d}, which sorts after it (natively built in name order)"
            );
            cmd.arg(f);
        }
        cmd.arg("-o").arg(&out);
        run(&mut cmd, &format!("native build of modules/{name}"));
    }
    let mut objs: Vec<_> = project
        .eboot
        .iter()
        .map(|s| compile(s, &project.root, false))
        .collect();
    objs.push(compile(&shim.join("shim.c"), &shim, false));
    if !project.shaders.is_empty() {
        let c = aps5_sdk::shader_c_source(&project, work.path())
            .unwrap()
            .unwrap();
        let gen_c = work.path().join("aps5_shaders.c");
        std::fs::write(&gen_c, c).unwrap();
        objs.push(compile(&gen_c, work.path(), false));
    }
    let mut cmd = linker(&project.eboot);
    cmd.args(&objs)
        .arg("-o")
        .arg(run_dir.join("eboot.bin"))
        .args(&module_files)
        .args(["-Wl,-rpath,$ORIGIN/sce_module", "-ldl", "-lpthread", "-lm"])
        // <stdatomic.h> on objects too large for one instruction (libSceLibcInternal's
        // __atomic_* calls): GCC's libatomic on the host.
        .arg("-latomic");
    run(&mut cmd, "native build of the eboot");
    if let Some(app0) = &project.app0 {
        copy_tree(app0, run_dir);
    }

    let mut child = Command::new("./eboot.bin")
        .current_dir(run_dir)
        .args(common::args(fixture))
        .env_clear()
        .envs(common::env(fixture))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the native eboot");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().ok();
            panic!(
                "{}: native run did not finish in 60 s",
                common::name(fixture)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let exit = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    NativeRun {
        stdout,
        stderr,
        exit,
    }
}

#[test]
fn native_runs_match_expectations() {
    let clang = common::require(aps5_sdk::Tool::Clang);
    common::require(aps5_sdk::Tool::Lld);
    let bless = std::env::var_os("APS5_BLESS").is_some();
    let fixtures = common::fixtures();
    assert!(
        fixtures.len() >= 16,
        "expected the fixture set, found {}",
        fixtures.len()
    );
    let mut failures = Vec::new();
    let mut matched = 0;
    let mut skipped = Vec::new();
    for f in &fixtures {
        let name = common::name(f);
        if let Ok(why) = std::fs::read_to_string(f.join("native-skip")) {
            skipped.push(format!("{name}: {}", why.trim()));
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let r = native(f, dir.path(), &clang);
        if bless {
            std::fs::write(f.join("expect.stdout"), &r.stdout).unwrap();
            std::fs::write(f.join("expect.exit"), format!("{}\n", r.exit)).unwrap();
        }
        let want_stdout = std::fs::read_to_string(f.join("expect.stdout")).unwrap();
        let want_exit: i32 = std::fs::read_to_string(f.join("expect.exit"))
            .unwrap()
            .trim()
            .parse()
            .expect("expect.exit holds a number");
        let mut bad = Vec::new();
        if r.stdout != want_stdout {
            bad.push(format!(
                "stdout differs\n--- expected\n{want_stdout}--- native\n{}",
                r.stdout
            ));
        }
        if r.exit != want_exit {
            bad.push(format!(
                "exit {} (expected {want_exit}); stderr:\n{}",
                r.exit, r.stderr
            ));
        }
        if let Ok(lines) = std::fs::read_to_string(f.join("expect.stderr")) {
            for l in lines.lines().filter(|l| !l.is_empty()) {
                if !r.stderr.contains(l) {
                    bad.push(format!("stderr lacks {l:?}; it was:\n{}", r.stderr));
                }
            }
        }
        if bad.is_empty() {
            matched += 1;
        } else {
            failures.push(format!("{name}: {}", bad.join("\n")));
        }
    }
    println!(
        "native oracle: {matched}/{} fixtures match their expectations; skipped: {:?}",
        fixtures.len(),
        skipped
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
