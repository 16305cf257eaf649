//! What DT_GNU_HASH buys at start-up. Builds, with the fixture SDK, a program whose eboot
//! calls 2,000 functions of a bundled module (2,000 imports of the module plus its libc
//! imports; the module exports 2,000 symbols), relinks it, and runs it in two variants of
//! the same tree, alternating, 40 runs each:
//!
//! - `gnu`: as relinked (ld.so looks symbols up through DT_GNU_HASH: Bloom filter, then
//!   one bucket's hash values);
//! - `sysv`: the same files with the DT_GNU_HASH tag of app.elf and the module renamed to
//!   DT_CHECKSUM (which ld.so ignores), so ld.so falls back to DT_HASH (chain walk with a
//!   string compare per entry).
//!
//! The order of the two alternates each round. Prints one JSON object: per variant the
//! median wall time to exit and the medians of ld.so's own `LD_DEBUG=statistics` figures
//! (cycles in the loader, cycles relocating); as the floor, the median wall time of the
//! host's `/bin/true` (a process start without these libraries). Needs clang-14 and
//! ld.lld-14.
//! Run: `cargo run --release -p aps5-relink --example bench_gnu_hash`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::fmt::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

const FUNCS: usize = 2000;
const RUNS: usize = 40;
const DT_GNU_HASH: u64 = 0x6fff_fef5;
const DT_CHECKSUM: u64 = 0x6fff_fdf8;

fn die(what: &str) -> ! {
    eprintln!("bench_gnu_hash: {what}");
    std::process::exit(2);
}

/// The fixture source: modules/big exports f0..fN, the eboot calls each once.
fn write_source(dir: &Path) {
    let m = dir.join("modules/big");
    let e = dir.join("eboot");
    std::fs::create_dir_all(&m).unwrap();
    std::fs::create_dir_all(&e).unwrap();
    let mut lib = String::new();
    let mut main = String::from("#include <stdio.h>\n");
    for i in 0..FUNCS {
        writeln!(lib, "int f{i}(int x) {{ return x + {i}; }}").unwrap();
        writeln!(main, "int f{i}(int);").unwrap();
    }
    main.push_str("static int (*const table[])(int) = {\n");
    for i in 0..FUNCS {
        writeln!(main, "  f{i},").unwrap();
    }
    main.push_str(
        "};\nint main(void) {\n  long s = 0;\n  for (unsigned i = 0; i < sizeof table / sizeof *table; i++)\n    s += table[i](1);\n  printf(\"%ld\\n\", s);\n  return 0;\n}\n",
    );
    std::fs::write(m.join("big.c"), lib).unwrap();
    std::fs::write(e.join("main.c"), main).unwrap();
}

/// Renames the DT_GNU_HASH entry of the ELF at `path` to DT_CHECKSUM.
fn drop_gnu_hash(path: &Path) {
    let mut b = std::fs::read(path).unwrap();
    let e = goblin::elf::Elf::parse(&b).unwrap_or_else(|e| die(&format!("{e}")));
    let dynamic = e
        .program_headers
        .iter()
        .find(|p| p.p_type == goblin::elf::program_header::PT_DYNAMIC)
        .unwrap_or_else(|| die("no PT_DYNAMIC"));
    let (off, size) = (dynamic.p_offset as usize, dynamic.p_filesz as usize);
    let mut found = false;
    for at in (off..off + size).step_by(16) {
        let tag = u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        if tag == DT_GNU_HASH {
            b[at..at + 8].copy_from_slice(&DT_CHECKSUM.to_le_bytes());
            found = true;
        }
    }
    if !found {
        die(&format!("{}: no DT_GNU_HASH", path.display()));
    }
    std::fs::write(path, b).unwrap();
}

fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

/// One run: wall seconds, and ld.so's (total, relocation) cycles from LD_DEBUG=statistics.
fn once(out: &Path, want: &str) -> (f64, f64, f64) {
    let mut c = aps5_relink::run_command(out, &out.join("data"), &[]);
    c.env("LD_DEBUG", "statistics")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let t = Instant::now();
    let o = c.output().unwrap_or_else(|e| die(&format!("spawn: {e}")));
    let dt = t.elapsed().as_secs_f64();
    if !o.status.success() || String::from_utf8_lossy(&o.stdout) != want {
        die(&format!(
            "the program failed: {:?} {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let err = String::from_utf8_lossy(&o.stderr);
    // "total startup time in dynamic loader: 1234567 cycles",
    // "time needed for relocation: 234567 cycles (19.0%)".
    let cycles = |key: &str| -> f64 {
        err.lines()
            .find_map(|l| {
                let rest = l.split(key).nth(1)?;
                rest.split_whitespace().next()?.parse().ok()
            })
            .unwrap_or_else(|| die(&format!("no `{key}` in LD_DEBUG output:\n{err}")))
    };
    (
        dt,
        cycles("total startup time in dynamic loader:"),
        cycles("time needed for relocation:"),
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    write_source(&src);
    let dump = work.path().join("dump");
    aps5_sdk::build_dump(&src, &dump, &aps5_sdk::DumpOptions { ps4: false })
        .unwrap_or_else(|e| die(&format!("SDK build: {e:#}")));
    let gnu = work.path().join("gnu");
    support::build_tree(
        &dump.join("eboot.bin"),
        &[dump.join("sce_module/big.prx")],
        &gnu,
    );
    let sysv = work.path().join("sysv");
    std::fs::create_dir_all(&sysv).unwrap();
    copy_tree(&gnu, &sysv);
    drop_gnu_hash(&sysv.join("app.elf"));
    drop_gnu_hash(&sysv.join("app0/sce_module/big.prx"));
    let want = format!("{}\n", (0..FUNCS).map(|i| i + 1).sum::<usize>());

    let (mut g, mut s, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..RUNS {
        // Alternate which variant goes first, so neither always follows the other.
        if i % 2 == 0 {
            g.push(once(&gnu, &want));
            s.push(once(&sysv, &want));
        } else {
            s.push(once(&sysv, &want));
            g.push(once(&gnu, &want));
        }
        let t = Instant::now();
        let st = Command::new("/bin/true").status();
        floor.push(t.elapsed().as_secs_f64());
        if !st.is_ok_and(|s| s.success()) {
            die("/bin/true failed");
        }
    }
    let summary = |v: &[(f64, f64, f64)]| {
        serde_json::json!({
            "wall_ms": median(v.iter().map(|x| x.0 * 1e3).collect()),
            "ldso_cycles": median(v.iter().map(|x| x.1).collect()),
            "relocation_cycles": median(v.iter().map(|x| x.2).collect()),
        })
    };
    let (gs, ss) = (summary(&g), summary(&s));
    let ratio = |k: &str| gs[k].as_f64().unwrap() / ss[k].as_f64().unwrap();
    println!(
        "{}",
        serde_json::json!({
            "program": format!("eboot calling {FUNCS} functions of a bundled module"),
            "runs": RUNS,
            "gnu_hash": gs,
            "sysv_hash_only": ss,
            "gnu_over_sysv": {
                "wall": ratio("wall_ms"),
                "ldso_cycles": ratio("ldso_cycles"),
                "relocation_cycles": ratio("relocation_cycles"),
            },
            "floor_bin_true_wall_ms": median(floor.iter().map(|x| x * 1e3).collect()),
        })
    );
}
