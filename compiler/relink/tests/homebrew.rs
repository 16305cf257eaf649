//! Real PS4 homebrew (the OpenOrbis samples in shared/corpus), relinked and run natively;
//! the relinked ELF checked with the system's own tools.

mod support;

use std::time::Duration;

use support::*;

fn sample(name: &str) -> std::path::PathBuf {
    shared()
        .join("corpus/homebrew/openorbis-samples")
        .join(name)
        .join("pkg/eboot.bin")
}

#[test]
fn hello_world_prints_what_the_sample_source_says() {
    let dir = tempfile::tempdir().unwrap();
    let cov = build_tree(&sample("hello_world"), &[], dir.path());
    assert!(cov.iter().all(|r| r.implemented), "{cov:#?}");
    // The sample prints, sleeps 2 s, prints again and then loops forever.
    let r = run(dir.path(), &[], &[], Duration::from_millis(3500));
    assert_eq!(
        r.status, None,
        "it should still be looping; stderr: {}",
        r.stderr
    );
    assert_eq!(
        r.stdout,
        "Hello world! Waiting 2 seconds...\nDone. Infinitely looping...\n"
    );
}

/// The keyboard sample links its own C library (musl-style `_start` reading the block
/// from rsp, raw FreeBSD system calls). Its start-up runs through the libkernel syscall
/// trap (malloc: sbrk refused, then mmap; stdout through writev); every import (FreeType,
/// keyboard, video) is implemented, so with a font at the path it opens it reaches its draw
/// loop and ends cleanly at `APS5_MAX_FRAMES`. (Its pixels are checked in prx/devices'
/// homebrew tests.)
#[test]
fn keyboard_sample_starts_through_trapped_syscalls() {
    let dir = tempfile::tempdir().unwrap();
    let cov = build_tree(&sample("keyboard"), &[], dir.path());
    let missing: Vec<&str> = cov
        .iter()
        .filter(|r| !r.implemented)
        .map(|r| r.nid.as_str())
        .collect();
    assert!(missing.is_empty(), "{cov:#?}");
    let font = std::path::Path::new("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf");
    assert!(
        font.is_file(),
        "{} is missing: install fonts-dejavu-core (.ci/run does)",
        font.display()
    );
    std::fs::create_dir_all(dir.path().join("app0")).unwrap();
    std::fs::copy(font, dir.path().join("app0/font.ttf")).unwrap();
    let env = [("APS5_MAX_FRAMES".to_string(), "3".to_string())];
    let r = run(dir.path(), &[], &env, Duration::from_secs(30));
    assert_eq!(r.status, Some(0), "stderr: {}", r.stderr);
    assert_eq!(
        r.stdout,
        "main: Creating a scene\nmain: Initializing controller\nmain: Entering draw loop...\n",
        "stderr: {}",
        r.stderr
    );
}

#[test]
fn pthread_sample_runs_both_threads_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let cov = build_tree(&sample("pthread"), &[], dir.path());
    assert!(cov.iter().all(|r| r.implemented), "{cov:#?}");
    let r = run(dir.path(), &[], &[], Duration::from_secs(30));
    assert_eq!(r.status, Some(0), "stderr: {}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(&lines[..2], &["Pthread example", "-"]);
    let mut a: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("Thread A"))
        .collect();
    let mut b: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("Thread B"))
        .collect();
    a.sort_unstable();
    b.sort_unstable();
    let want = |t: char| {
        (0..10)
            .map(|i| format!("Thread {t} is running: {i}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(a, want('A'));
    assert_eq!(b, want('B'));
    assert_eq!(lines.len(), 22, "{}", r.stdout);
}

#[test]
fn system_tools_accept_the_relinked_executable() {
    let dir = tempfile::tempdir().unwrap();
    build_tree(&sample("pthread"), &[], dir.path());
    let app = dir.path().join("app.elf");
    let app = app.to_str().unwrap();

    let (out, err, ok) = tool(
        "llvm-readelf-14",
        &["-h", "-l", "-d", "-S", "--dyn-syms", "-r", app],
    );
    assert!(ok && err.is_empty(), "llvm-readelf complained: {err}");
    for want in [
        "Type:                              DYN",
        "OS/ABI:                            UNIX - System V",
        "[Requesting program interpreter: /lib64/ld-linux-x86-64.so.2]",
        "Shared library: [$ORIGIN/libs/libkernel.prx]",
        "Shared library: [$ORIGIN/libs/libc.prx]",
        "Library runpath: [$ORIGIN/libs:$ORIGIN/app0/sce_module]",
        "BIND_NOW",
        "NOW PIE",
        "GNU_RELRO",
        "R_X86_64_JUMP_SLOT",
        "6UgtwV+0zb4", // scePthreadCreate, imported by NID
        "hcuQgD53UxM", // printf
    ] {
        assert!(
            out.contains(want),
            "llvm-readelf output lacks {want:?}:\n{out}"
        );
    }
    // GNU readelf too (stricter about section/segment consistency).
    let (_, err, ok) = tool("readelf", &["-a", "-W", app]);
    assert!(
        ok && !err.contains("Error") && !err.contains("Warning"),
        "readelf: {err}"
    );

    // The system loader resolves every needed library from the run path.
    let (out, err, ok) = tool("/lib64/ld-linux-x86-64.so.2", &["--list", app]);
    assert!(ok, "ld.so --list failed: {err}");
    assert!(!out.contains("not found"), "{out}");
    assert!(
        out.contains("libs/libkernel.prx") && out.contains("libs/libc.prx"),
        "{out}"
    );
    // PRX files are opened by path, without a run-path search (which probes a dozen
    // hwcaps/tls subfolders of libs/ with failed system calls at every start-up).
    let o = std::process::Command::new("/lib64/ld-linux-x86-64.so.2")
        .args(["--list", app])
        .env("LD_DEBUG", "libs")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&o.stderr);
    let searched: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("find library=") && l.contains(".prx") && l.contains("searching"))
        .collect();
    assert!(searched.is_empty(), "{searched:?}");
    // And binds every symbol (BIND_NOW): --verify exits 0 for a loadable dynamic program.
    let (_, err, ok) = tool("/lib64/ld-linux-x86-64.so.2", &["--verify", app]);
    assert!(ok, "ld.so --verify: {err}");
}

#[test]
fn reachable_raw_syscalls_of_every_kind_become_the_libkernel_trap() {
    // Plant a raw `syscall` (then `int 0x80`) at the hello_world entry point and relink.
    let bytes = std::fs::read(sample("hello_world")).unwrap();
    let module = aps5_elf::parse(&bytes).unwrap();
    let image = aps5_elf::unwrap_fself(&bytes).unwrap().into_owned();
    let text = module
        .segments
        .iter()
        .find(|s| s.p_type == 1 && s.flags & 1 != 0)
        .unwrap();
    let at = (text.offset + module.entry - text.vaddr) as usize;
    let prx = aps5_relink::PrxSet::installed().unwrap();
    let planted = |insn: [u8; 2]| {
        let mut image = image.clone();
        image[at..at + 2].copy_from_slice(&insn);
        let m = aps5_elf::parse(&image).unwrap();
        (image, m)
    };

    let (img, m) = planted([0x0F, 0x05]);
    let r = aps5_relink::relink_executable(&img, &m, &prx, &Default::default()).unwrap();
    assert!(
        r.warnings
            .iter()
            .any(|w| w.starts_with("1 raw system call") && w.contains("1 syscall")),
        "{:?}",
        r.warnings
    );
    // The output holds the original entry bytes with the two syscall bytes replaced.
    let orig = &image[at..at + 16];
    let mut want = orig.to_vec();
    want[..2].copy_from_slice(&aps5_relink::SYSCALL_TRAP);
    let found: Vec<usize> = r
        .elf
        .windows(16)
        .enumerate()
        .filter(|(_, w)| *w == want.as_slice())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(found.len(), 1, "patched entry bytes in the output");
    assert!(
        !r.elf
            .windows(16)
            .any(|w| w[..2] == [0x0F, 0x05] && w[2..] == orig[2..])
    );
    // allow_syscalls copies it verbatim.
    let verbatim = aps5_relink::relink_executable(
        &img,
        &m,
        &prx,
        &aps5_relink::RelinkOptions {
            allow_syscalls: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(
        verbatim
            .elf
            .windows(16)
            .any(|w| w[..2] == [0x0F, 0x05] && w[2..] == orig[2..])
    );

    // `int 0x80` and `sysenter` where the program's flow reaches them get the same trap.
    for (insn, name) in [([0xCD, 0x80], "1 int 0x80"), ([0x0F, 0x34], "1 sysenter")] {
        let (img, m) = planted(insn);
        let r = aps5_relink::relink_executable(&img, &m, &prx, &Default::default()).unwrap();
        assert!(
            r.warnings
                .iter()
                .any(|w| w.starts_with("1 raw system call") && w.contains(name)),
            "{:?}",
            r.warnings
        );
        let mut planted_bytes = orig.to_vec();
        planted_bytes[..2].copy_from_slice(&insn);
        assert_eq!(
            r.elf.windows(16).filter(|w| *w == want.as_slice()).count(),
            1
        );
        assert!(!r.elf.windows(16).any(|w| w == planted_bytes.as_slice()));
    }
}

#[test]
fn networking_sample_talks_to_a_loopback_server() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let cov = build_tree(&sample("networking"), &[], dir.path());
    assert!(cov.iter().all(|r| r.implemented), "{cov:#?}");
    // The sample connects to 192.168.0.10:9030, sends a message, then loops forever.
    // APS5_NET_REDIRECT points that address at a server of ours on loopback.
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    let received = std::thread::spawn(move || {
        let (mut conn, _) = server.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut got = Vec::new();
        let _ = conn.read_to_end(&mut got);
        got
    });
    let env = [(
        "APS5_NET_REDIRECT".to_string(),
        format!("192.168.0.10:9030=127.0.0.1:{port}"),
    )];
    let r = run(dir.path(), &[], &env, Duration::from_millis(2500));
    let mut lines = r.stdout.lines();
    assert_eq!(
        lines.next(),
        Some("[DEBUG] Sending message to 192.168.0.10:9030."),
        "{r:?}"
    );
    assert_eq!(
        lines.next(),
        Some("[DEBUG] Message sent. Closing and infinitely looping."),
        "{r:?}"
    );
    assert!(!r.stderr.contains("unimplemented"), "{}", r.stderr);
    let got = received.join().unwrap();
    assert!(!got.is_empty(), "the server received nothing");
    eprintln!(
        "server received {} bytes: {:?}",
        got.len(),
        String::from_utf8_lossy(&got)
    );
}

/// Every homebrew executable in the corpus relinks, and the system loader accepts the
/// result (every DT_NEEDED found, every symbol bound). Raw `syscall`s become the
/// libkernel trap.
#[test]
fn every_corpus_executable_relinks_and_loads() {
    let root = shared().join("corpus/homebrew");
    let mut eboots: Vec<std::path::PathBuf> = Vec::new();
    for dir in [
        "openorbis-samples/graphics/pkg",
        "openorbis-samples/hello_world/pkg",
        "openorbis-samples/keyboard/pkg",
        "openorbis-samples/networking/pkg",
        "openorbis-samples/pthread/pkg",
        "ps4-2048",
    ] {
        eboots.push(root.join(dir).join("eboot.bin"));
    }
    let prx = aps5_relink::PrxSet::installed().unwrap();
    let mut summary = String::new();
    for e in &eboots {
        let bytes = std::fs::read(e).unwrap();
        let m = aps5_elf::parse(&bytes).unwrap();
        let r = aps5_relink::relink_executable(&bytes, &m, &prx, &Default::default())
            .unwrap_or_else(|err| panic!("{}: {err}", e.display()));
        // Only the keyboard sample (statically linked C library) makes raw system calls:
        // its 22 `syscall` instructions become the libkernel trap. 17 are reached from its
        // entry and function pointers; the other 5 (musl's fopen/__fdopen/__stdio_read/
        // __stdio_close) only from the function starts `.eh_frame_hdr` lists (nothing calls
        // that group of functions: dead code, trapped all the same). No byte pattern is
        // left over.
        let trapped = r.warnings.iter().find(|w| w.contains("raw system call"));
        if e.to_string_lossy().contains("keyboard") {
            assert!(
                trapped.is_some_and(|w| w.starts_with("22 raw") && w.contains(": 22 syscall;")),
                "{:?}",
                r.warnings
            );
            assert!(
                !r.warnings.iter().any(|w| w.contains("byte pattern")),
                "{:?}",
                r.warnings
            );
        } else {
            assert!(trapped.is_none(), "{}: {:?}", e.display(), r.warnings);
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("libs")).unwrap();
        for (name, bytes) in prx.files() {
            std::fs::write(dir.path().join("libs").join(name), bytes.as_slice()).unwrap();
        }
        std::fs::write(dir.path().join("app.elf"), &r.elf).unwrap();
        let app = dir.path().join("app.elf");
        let (_, err, ok) = tool(
            "/lib64/ld-linux-x86-64.so.2",
            &["--verify", app.to_str().unwrap()],
        );
        assert!(ok, "{}: ld.so --verify: {err}", e.display());
        let done = r.coverage.iter().filter(|c| c.implemented).count();
        summary.push_str(&format!(
            "{}: {done}/{} imports implemented; {:?}\n",
            e.display(),
            r.coverage.len(),
            r.warnings
        ));
    }
    eprint!("{summary}");
}

/// `sceKernelLoadStartModule` of a module the host set replaces gives the host library
/// (a function found in it with `sceKernelDlsym` works); a missing one is ENOENT.
#[test]
fn loading_a_module_the_host_set_replaces() {
    let work = tempfile::tempdir().unwrap();
    let src =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/load_host_module.c");
    let dump = work.path().join("dump");
    aps5_sdk::build_dump(&src, &dump, &aps5_sdk::DumpOptions { ps4: false })
        .expect("fixture SDK (needs clang-14, ld.lld-14)");
    let out = work.path().join("out");
    build_tree(&dump.join("eboot.bin"), &[], &out);
    let r = run(&out, &[], &[], Duration::from_secs(20));
    assert_eq!(r.status, Some(0), "{r:?}");
    assert_eq!(
        r.stdout,
        "libc handle valid=yes res=0\ndlsym snprintf=0 out=[dlsym-007]\nlibkernel.sprx handle valid=yes\nmissing module: ENOENT\n"
    );
}

/// Weak imports nothing implements are 0, as on the console, not stubs: OpenOrbis' stand-in
/// libc (in PS4-2048) imports `module_start`/`module_stop` weakly by plain name. The relinked
/// module must neither bind them to an "unimplemented" stub nor look them up by name (that
/// would find another module's `module_start`).
#[test]
fn weak_imports_nothing_implements_are_zero() {
    let path = shared().join("corpus/homebrew/ps4-2048/sce_module/libc.prx");
    let bytes = std::fs::read(&path).unwrap();
    let m = aps5_elf::parse(&bytes).unwrap();
    let prx = aps5_relink::PrxSet::installed().unwrap();
    let r = aps5_relink::relink_module(&bytes, &m, &prx, &Default::default()).unwrap();
    let weak: Vec<&str> = r
        .coverage
        .iter()
        .filter(|c| c.weak)
        .map(|c| c.nid.as_str())
        .collect();
    assert_eq!(weak, ["module_start", "module_stop"], "{:?}", r.coverage);
    assert!(r.coverage.iter().all(|c| !c.implemented));
    assert!(
        r.warnings.iter().all(|w| !w.contains("not implemented")),
        "{:?}",
        r.warnings
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("libc.prx");
    std::fs::write(&file, &r.elf).unwrap();
    // The system's readelf: no dynamic symbol by those names (nothing to look up).
    let (syms, err, ok) = tool("readelf", &["--dyn-syms", "-W", file.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(
        !syms.contains("module_start") || syms.contains("__aps5_module_start"),
        "{syms}"
    );
    for line in syms.lines() {
        assert!(
            !(line.contains(" UND ") && line.trim_end().ends_with("module_start")),
            "{line}"
        );
        assert!(
            !(line.contains(" UND ") && line.trim_end().ends_with("module_stop")),
            "{line}"
        );
    }
    assert!(aps5_relink::coverage_table(&r.coverage).contains("2 weak and unresolved (0)"));
}
