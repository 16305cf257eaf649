//! Translation throughput on one core over the kernel corpus: every `tests/kernels/*.cl`
//! (clang-14, gfx1030, the kernel-diff flags, wave32 and wave64) and the kernels of
//! compiler/shader/tests/translate/kernels.cl, each translated ROUNDS times. Prints one JSON
//! object: shaders/s (on this thread's CPU time; `_wall`: on elapsed time), median and p99
//! elapsed time per shader, SPIR-V words per guest
//! instruction, and the limits measured on the same shaders: decode alone (the reachable
//! instructions of each program decoded, as the front end walks them) and SPIR-V
//! serialization alone (each output module's `dr::Module` assembled to words again).
//!
//!     cargo run --release -p aps5-shader --example bench_translate [ROUNDS]
//!
//! `cargo xtask bench translate` runs it.

#[path = "../tests/translate/support.rs"]
mod support;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use aps5_shader::translate::{ComputeState, Options, frontend, translate_compute};

/// CPU time of this thread in seconds (`/proc/thread-self/schedstat`), wall time elsewhere.
fn cpu_now() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map(|ns| ns / 1e9)
        .unwrap_or_else(|| {
            use std::sync::OnceLock;
            static T0: OnceLock<Instant> = OnceLock::new();
            T0.get_or_init(Instant::now).elapsed().as_secs_f64()
        })
}

struct Shader {
    name: String,
    code: Vec<u32>,
    state: ComputeState,
}

/// The corpus kernels (tests/kernels), built as kernel-diff builds them.
fn corpus() -> Vec<Shader> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/kernels");
    let tmp = tempfile::tempdir().unwrap();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cl"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for cl in files {
        let stem = cl.file_stem().unwrap().to_string_lossy().to_string();
        // Kernel name and local size from NAME.json (kernel-diff's defaults otherwise).
        let spec: serde_json::Value = std::fs::read_to_string(cl.with_extension("json"))
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default();
        let name = spec["kernel"].as_str().unwrap_or(&stem).to_string();
        let mut local = [1u32; 3];
        match spec["local"].as_array() {
            Some(l) => {
                for (i, v) in l.iter().enumerate().take(3) {
                    local[i] = v.as_u64().unwrap_or(1) as u32;
                }
            }
            None => local[0] = 64,
        }
        for wave64 in [false, true] {
            let obj = tmp.path().join(format!("{stem}-{wave64}.o"));
            let mut cmd = Command::new("clang-14");
            cmd.args([
                "-x",
                "cl",
                "-cl-std=CL2.0",
                "-Xclang",
                "-finclude-default-header",
                "-O2",
                "-ffp-contract=off",
                "-cl-fp32-correctly-rounded-divide-sqrt",
                "-Wno-unused-function",
                "-include",
            ])
            .arg(dir.join("shim.h"))
            .args([
                "-target",
                "amdgcn-amd-amdhsa",
                "-mcpu=gfx1030",
                "-nogpulib",
                "-c",
            ]);
            if wave64 {
                cmd.arg("-mwavefrontsize64");
            }
            let ok = cmd
                .arg("-o")
                .arg(&obj)
                .arg(&cl)
                .output()
                .is_ok_and(|o| o.status.success());
            if !ok {
                eprintln!("bench_translate: clang-14 failed on {}", cl.display());
                continue;
            }
            let data = std::fs::read(&obj).unwrap();
            for k in support::kernels_in(&data, &[&name], local) {
                out.push(Shader {
                    name: format!("{stem} w{}", if wave64 { 64 } else { 32 }),
                    code: k.code,
                    state: k.state,
                });
            }
        }
    }
    out
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let mut shaders = corpus();
    for wave64 in [false, true] {
        match support::build(wave64, [64, 1, 1]) {
            Some(k) => shaders.extend(k.into_iter().map(|k| Shader {
                name: format!("kernels.cl:{} w{}", k.name, if wave64 { 64 } else { 32 }),
                code: k.code,
                state: k.state,
            })),
            None => std::process::exit(2),
        }
    }
    // Only what translates (scratch kernels are refused for now); the refusals are counted.
    let opts = Options::default();
    let mut refused = Vec::new();
    shaders.retain(|s| match translate_compute(&s.code, &s.state, &opts) {
        Ok(_) => true,
        Err(e) => {
            refused.push(format!("{}: {e}", s.name));
            false
        }
    });
    let mut times = Vec::new();
    let (mut words, mut insts) = (0u64, 0u64);
    let mut slowest = (0.0f64, String::new());
    // FNV-1a over every output word of the first round: equal before and after a speed-up
    // means the output bytes did not change (packs are keyed by them).
    let mut output_hash = 0xcbf2_9ce4_8422_2325u64;
    let c0 = cpu_now();
    for _ in 0..rounds {
        for s in &shaders {
            // Per shader: wall time (the thread's CPU clock ticks too coarsely for one
            // translation); the throughput below is on CPU time.
            let t0 = Instant::now();
            let t = translate_compute(&s.code, &s.state, &opts).unwrap();
            let dt = t0.elapsed().as_secs_f64();
            if dt > slowest.0 {
                slowest = (dt, s.name.clone());
            }
            times.push(dt);
            if times.len() <= shaders.len() {
                for w in &t.spirv {
                    output_hash = (output_hash ^ u64::from(*w)).wrapping_mul(0x0100_0000_01b3);
                }
            }
            words += t.spirv.len() as u64;
            insts += t.meta.guest_instructions as u64;
        }
    }
    let total = cpu_now() - c0;
    let wall_total: f64 = times.iter().sum();
    // Decode alone: the front end's walk of the reachable code, nothing else.
    let c1 = cpu_now();
    let mut decoded = 0usize;
    for _ in 0..rounds {
        for s in &shaders {
            let bytes: Vec<u8> = s.code.iter().flat_map(|w| w.to_le_bytes()).collect();
            decoded += frontend::decode_reachable(&bytes, s.state.wave64).unwrap();
        }
    }
    let decode = cpu_now() - c1;
    // Serialization alone: each output module, loaded once, assembled `rounds` times.
    let modules: Vec<rspirv::dr::Module> = shaders
        .iter()
        .map(|s| {
            let t = translate_compute(&s.code, &s.state, &opts).unwrap();
            rspirv::dr::load_words(&t.spirv).unwrap()
        })
        .collect();
    let c2 = cpu_now();
    let mut assembled = 0usize;
    for _ in 0..rounds {
        for m in &modules {
            use rspirv::binary::Assemble;
            assembled += std::hint::black_box(m.assemble()).len();
        }
    }
    let serialize = cpu_now() - c2;
    let n = times.len();
    times.sort_by(f64::total_cmp);
    let pct = |p: f64| times[((n - 1) as f64 * p) as usize] * 1e6;
    let per_s = |secs: f64| n as f64 / secs;
    println!(
        "{}",
        serde_json::json!({
            "shaders": shaders.len(),
            "translations": n,
            "output_hash": format!("{output_hash:016x}"),
            "refused": refused,
            "shaders_per_s": (per_s(total) * 10.0).round() / 10.0,
            "shaders_per_s_wall": (per_s(wall_total) * 10.0).round() / 10.0,
            "median_us": (pct(0.5) * 10.0).round() / 10.0,
            "p99_us": (pct(0.99) * 10.0).round() / 10.0,
            "slowest": { "shader": slowest.1, "us": (slowest.0 * 1e7).round() / 10.0 },
            "spirv_words_per_instruction": ((words as f64 / insts as f64) * 10.0).round() / 10.0,
            "guest_instructions_per_shader": insts as f64 / n as f64,
            "limit_decode_alone_shaders_per_s": (per_s(decode)).round(),
            "decoded_instructions": decoded,
            "limit_serialize_alone_shaders_per_s": (per_s(serialize)).round(),
            "serialized_words": assembled,
            "time_share_decode": ((decode / total) * 1000.0).round() / 1000.0,
            "time_share_serialize": ((serialize / total) * 1000.0).round() / 1000.0,
        })
    );
}
