//! Shared by the integration tests: lay out an output tree the way `aps5 build` does
//! (app.elf, libs/, app0/ with relinked modules in app0/sce_module/) and run it.

#![allow(dead_code)]

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aps5_relink::{CoverageRow, PrxLibrary, PrxSet, RelinkOptions};

/// The repository's `shared/` corpus folder (next to the checkout).
pub fn shared() -> PathBuf {
    let mut p = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    loop {
        let c = p.join("shared");
        if c.join("corpus").is_dir() {
            return c;
        }
        assert!(
            p.pop(),
            "no shared/corpus folder above {}",
            env!("CARGO_MANIFEST_DIR")
        );
    }
}

/// Relinks `eboot` (and the modules in `modules`) into `out`.
pub fn build_tree(eboot: &Path, modules: &[PathBuf], out: &Path) -> Vec<CoverageRow> {
    build_tree_with(eboot, modules, out, &RelinkOptions::default()).coverage
}

/// [`build_tree`] with relinker options; the executable's relink result.
pub fn build_tree_with(
    eboot: &Path,
    modules: &[PathBuf],
    out: &Path,
    opts: &RelinkOptions,
) -> aps5_relink::Relinked {
    let host = PrxSet::installed().expect("the PRX set");
    let mut set = host.clone();
    std::fs::create_dir_all(out.join("app0/sce_module")).unwrap();
    let parsed: Vec<(String, Vec<u8>, aps5_elf::Module)> = modules
        .iter()
        .map(|m| {
            let bytes = std::fs::read(m).unwrap();
            let module = aps5_elf::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", m.display()));
            let name = m.file_name().unwrap().to_str().unwrap().to_owned();
            (name, bytes, module)
        })
        .collect();
    for (name, bytes, module) in &parsed {
        // Each module binds to the host set and to its siblings (module -> module imports).
        let siblings = host.with_guest_modules(
            parsed
                .iter()
                .filter(|(n, ..)| n != name)
                .map(|(n, _, m)| (n.as_str(), m)),
        );
        let r = aps5_relink::relink_module(bytes, module, &siblings, opts)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let name = name.clone();
        std::fs::write(out.join("app0/sce_module").join(&name), &r.elf).unwrap();
        set.libraries.extend(PrxLibrary::from_guest_module(
            module,
            &name,
            Arc::new(r.elf),
        ));
    }
    let bytes = std::fs::read(eboot).unwrap();
    let module = aps5_elf::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", eboot.display()));
    let r = aps5_relink::relink_executable(&bytes, &module, &set, opts)
        .unwrap_or_else(|e| panic!("{}: {e}", eboot.display()));
    let app = out.join("app.elf");
    std::fs::write(&app, &r.elf).unwrap();
    std::fs::set_permissions(&app, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(out.join("libs")).unwrap();
    for (name, bytes) in host.files() {
        std::fs::write(out.join("libs").join(name), bytes.as_slice()).unwrap();
    }
    r
}

/// The PS4-2048 dump of the corpus (its eboot and bundled libc.prx), laid out in `out`.
pub fn build_ps4_2048(out: &Path) -> Vec<CoverageRow> {
    let root = shared().join("corpus/homebrew/ps4-2048");
    build_tree(
        &root.join("eboot.bin"),
        &[root.join("sce_module/libc.prx")],
        out,
    )
}

/// What a run produced.
#[derive(Debug)]
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    /// Exit status, or 128 + signal; None if it was killed at the deadline.
    pub status: Option<i32>,
}

/// Runs the tree with `aps5_relink::run_command`, killing it after `limit`.
pub fn run(out: &Path, args: &[String], env: &[(String, String)], limit: Duration) -> Run {
    let data = out.join("data");
    let mut cmd = aps5_relink::run_command(out, &data, args);
    cmd.envs(env.iter().cloned())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn app.elf");
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = so.read_to_end(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = se.read_to_end(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            use std::os::unix::process::ExitStatusExt;
            break Some(st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0)));
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        stdout: String::from_utf8_lossy(&t_out.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&t_err.join().unwrap()).into_owned(),
        status,
    }
}

/// Runs a system tool, failing clearly if it is missing.
pub fn tool(name: &str, args: &[&str]) -> (String, String, bool) {
    let o = std::process::Command::new(name)
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!("{name} is needed by this test ({e}); install llvm-14 / the host toolchain")
        });
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.success(),
    )
}
