//! Run-time cost of a ported program against the same C compiled natively for Linux
//! (clang-14 -O2, host glibc, the SDK's host shim). Prints one JSON object:
//!
//! - start-up: the `hello` fixture, ported (relinked PS5 dump on the PRX set) vs native,
//!   median wall time of 100 alternating runs each, and their ratio; beside them the
//!   physical limits measured in the same runs: an empty `main` linked statically (the
//!   cost of exec and exit alone) and dynamically (plus ld.so and libc.so.6); and
//!   `APS5_BENCH_BASELINE_HELLO=DIR`: another ported hello's output tree (e.g. built by
//!   main's aps5) run alternately with the others, for a before/after in one run;
//! - micro-benchmarks (`benches-src/microbench/main.c`): ns per malloc/free, snprintf and
//!   mutex lock+unlock, ported vs native, and the ratios (ported / native; 1.0 = parity);
//! - `mutex_ratio_per_run`: the mutex ratios of each of the three runs (their spread);
//!   the `_threaded` mutex figures are taken after the program has had a second thread.
//!
//! Needs clang-14 and ld.lld-14. Run: `cargo run --release -p aps5-relink --example bench_runtime`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const RUNS: usize = 100;

fn die(what: &str) -> ! {
    eprintln!("bench_runtime: {what}");
    std::process::exit(2);
}

/// Builds `src` as a PS5 dump and relinks it into `out` (app.elf, libs/, app0/).
fn ported(src: &Path, work: &Path) -> PathBuf {
    let dump = work.join("dump");
    aps5_sdk::build_dump(src, &dump, &aps5_sdk::DumpOptions { ps4: false })
        .unwrap_or_else(|e| die(&format!("SDK build of {}: {e:#}", src.display())));
    let out = work.join("out");
    support::build_tree(&dump.join("eboot.bin"), &[], &out);
    out
}

/// Builds `src/main.c` natively (as the native oracle test does, at the SDK's -O2).
fn native(src: &Path, work: &Path) -> PathBuf {
    let clang =
        aps5_sdk::find_tool(aps5_sdk::Tool::Clang).unwrap_or_else(|e| die(&format!("{e:#}")));
    let shim = aps5_sdk::sdk_dir().join("host-shim");
    let exe = work.join("native");
    let st = Command::new(clang)
        .args(["-std=gnu11", "-O2", "-w", "-include"])
        .arg(shim.join("aps5_host.h"))
        .arg("-I")
        .arg(&shim)
        .arg(src.join("main.c"))
        .arg(shim.join("shim.c"))
        .arg("-o")
        .arg(&exe)
        .args(["-ldl", "-lpthread", "-lm"])
        .status()
        .unwrap_or_else(|e| die(&format!("clang-14: {e}")));
    if !st.success() {
        die(&format!("native build of {} failed", src.display()));
    }
    exe
}

/// Makes the command of one start-up series.
type MakeCommand<'a> = Box<dyn Fn() -> Command + 'a>;

fn ported_cmd(out: &Path) -> Command {
    let mut c = aps5_relink::run_command(out, &out.join("data"), &[]);
    c.stdin(Stdio::null());
    c
}

/// An empty C program exiting with 3, linked statically or dynamically: the floor under
/// any program's start-up on this machine.
fn empty_program(src: &Path, exe: &Path, static_link: bool) -> PathBuf {
    let clang =
        aps5_sdk::find_tool(aps5_sdk::Tool::Clang).unwrap_or_else(|e| die(&format!("{e:#}")));
    let mut c = Command::new(clang);
    c.arg("-O2").arg(src).arg("-o").arg(exe);
    if static_link {
        c.arg("-static");
    }
    let st = c
        .status()
        .unwrap_or_else(|e| die(&format!("clang-14: {e}")));
    if !st.success() {
        die(&format!("building {} failed", exe.display()));
    }
    exe.to_path_buf()
}

/// Wall time (seconds) of one run to exit, output discarded.
fn once(mut c: Command) -> f64 {
    c.stdout(Stdio::null()).stderr(Stdio::null());
    let t = Instant::now();
    let st = c.status().unwrap_or_else(|e| die(&format!("spawn: {e}")));
    let dt = t.elapsed().as_secs_f64();
    if st.code() != Some(3) {
        die(&format!("hello exited with {st:?}, expected 3"));
    }
    dt
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the micro-benchmark and parses its `name ns` lines.
fn micro(mut c: Command) -> BTreeMap<String, f64> {
    let o = c
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| die(&format!("spawn: {e}")));
    if !o.status.success() {
        die(&format!("microbench exited with {:?}", o.status));
    }
    let text = String::from_utf8_lossy(&o.stdout);
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        match (it.next(), it.next().and_then(|v| v.parse::<f64>().ok())) {
            (Some(k), Some(v)) => {
                m.insert(k.to_owned(), v);
            }
            _ => die(&format!("microbench printed an unexpected line: {line:?}")),
        }
    }
    m
}

fn main() {
    let fixtures = aps5_sdk::fixtures_dir();
    let benches = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches-src/microbench");
    let work = tempfile::tempdir().unwrap_or_else(|e| die(&format!("temp dir: {e}")));

    // (a) start-up of hello.
    let hello = fixtures.join("hello");
    let hw = work.path().join("hello");
    let hello_out = ported(&hello, &hw.join("ported"));
    std::fs::create_dir_all(hw.join("native")).unwrap();
    let hello_native = native(&hello, &hw.join("native"));
    let empty = hw.join("empty.c");
    std::fs::write(&empty, "int main(void) { return 3; }\n").unwrap();
    let empty_static = empty_program(&empty, &hw.join("empty_static"), true);
    let empty_dynamic = empty_program(&empty, &hw.join("empty_dynamic"), false);
    let baseline = std::env::var_os("APS5_BENCH_BASELINE_HELLO").map(PathBuf::from);
    // Runs alternate (after one warm-up each) so load from other processes on a shared
    // machine hits every series alike.
    let series: Vec<(&str, MakeCommand)> = [
        (
            "native",
            Box::new(|| Command::new(&hello_native)) as MakeCommand,
        ),
        ("ported", Box::new(|| ported_cmd(&hello_out))),
        ("empty_static", Box::new(|| Command::new(&empty_static))),
        ("empty_dynamic", Box::new(|| Command::new(&empty_dynamic))),
    ]
    .into_iter()
    .chain(baseline.iter().map(|b| {
        (
            "baseline_ported",
            Box::new(move || ported_cmd(b)) as MakeCommand,
        )
    }))
    .collect();
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); series.len()];
    for round in 0..=RUNS {
        for (i, (_, cmd)) in series.iter().enumerate() {
            let t = once(cmd());
            if round > 0 {
                times[i].push(t);
            }
        }
    }
    let medians: BTreeMap<&str, f64> = series
        .iter()
        .zip(times)
        .map(|((name, _), t)| (*name, median(t)))
        .collect();
    let (native_s, ported_s) = (medians["native"], medians["ported"]);
    let mut startup = serde_json::json!({
        "runs": RUNS,
        "native_median_ms": native_s * 1e3,
        "ported_median_ms": ported_s * 1e3,
        "ratio": ported_s / native_s,
        "limit_empty_static_median_ms": medians["empty_static"] * 1e3,
        "limit_empty_dynamic_median_ms": medians["empty_dynamic"] * 1e3,
        "ported_extra_ms": (ported_s - native_s) * 1e3,
    });
    startup["medians_ms"] = serde_json::json!(
        medians
            .iter()
            .map(|(k, v)| (k.to_string(), v * 1e3))
            .collect::<BTreeMap<_, _>>()
    );
    if let Some(b) = medians.get("baseline_ported") {
        startup["baseline_ported_median_ms"] = serde_json::json!(b * 1e3);
        startup["baseline_ratio"] = serde_json::json!(b / native_s);
    }

    // (b) micro-benchmarks.
    let mw = work.path().join("micro");
    let micro_out = ported(&benches, &mw.join("ported"));
    std::fs::create_dir_all(mw.join("native")).unwrap();
    let micro_native = native(&benches, &mw.join("native"));
    // Three alternating runs of each; the best figure per benchmark.
    let (mut n, mut p) = (BTreeMap::new(), BTreeMap::new());
    let best = |acc: &mut BTreeMap<String, f64>, run: BTreeMap<String, f64>| {
        for (k, v) in run {
            let e = acc.entry(k).or_insert(f64::INFINITY);
            *e = e.min(v);
        }
    };
    // The mutex ratios of each run, to show the run-to-run spread behind the best figures.
    let mut mutex_runs = Vec::new();
    for _ in 0..3 {
        let (nr, pr) = (
            micro(Command::new(&micro_native)),
            micro(ported_cmd(&micro_out)),
        );
        let mut run = serde_json::Map::new();
        for k in [
            "mutex_lock_unlock",
            "mutex_errorcheck_lock_unlock",
            "mutex_lock_unlock_threaded",
            "mutex_errorcheck_lock_unlock_threaded",
        ] {
            if let (Some(pv), Some(nv)) = (pr.get(k), nr.get(k)) {
                run.insert(k.to_owned(), serde_json::json!(pv / nv));
            }
        }
        mutex_runs.push(serde_json::Value::Object(run));
        best(&mut n, nr);
        best(&mut p, pr);
    }
    let mut micro_json = serde_json::Map::new();
    for (k, nv) in &n {
        let pv = p.get(k).copied().unwrap_or(f64::NAN);
        micro_json.insert(
            k.clone(),
            serde_json::json!({
                "native_ns_per_op": nv,
                "ported_ns_per_op": pv,
                "ratio": pv / nv,
            }),
        );
    }
    println!(
        "{}",
        serde_json::json!({
            "bench": "aps5-relink run time, ported vs native",
            "startup_hello": startup,
            "micro": micro_json,
            "mutex_ratio_per_run": mutex_runs,
        })
    );
}
