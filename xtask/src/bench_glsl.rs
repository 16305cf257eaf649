//! `cargo xtask bench glsl` (issue 11): GPU run time of five corpus kernels through our
//! translation against the same kernel written in GLSL (xtask/bench/glsl/NAME.comp) and
//! compiled by glslangValidator, on the same inputs.
//!
//! Our side is the kernel-diff harness's: clang-14's gfx1030 code object (wave32), translated,
//! laid out in guest memory with the range table (docs/SHADER_ABI.md), dispatched as the PS5
//! would. The GLSL side takes plain device addresses in push constants (GL_EXT_buffer_reference)
//! and runs one invocation per work-item at the spec's local size. Both sides must leave the
//! same output buffers (integers exactly, floats within the spec's ULP bound): a kernel whose
//! sides disagree gets an error in the JSON and the bench fails, no figure.
//!
//! Time is the wall time of `Gpu::dispatch` (record, submit, wait for the fence): drivers/vulkan
//! has no timestamp queries. The empty-dispatch baseline (one invocation of an empty shader) is
//! measured in the same run, so submit overhead can be told from GPU time.
//!
//! Without clang-14 or glslang (the NVIDIA device machine): both compilers go through the
//! harness's `cached`, so a run here with `APS5_KERNEL_DIFF_PREBUILT=DIR APS5_KERNEL_DIFF_FILL=1`
//! fills DIR (code objects, host runner, GLSL SPIR-V by a hash of the source) and dispatches
//! nothing; a run there with the same xtask binary and DIR compiles nothing.
//!
//! `APS5_BENCH_GLSL=NAME[,NAME...]` runs only those kernels; `APS5_BENCH_GLSL_DIR=DIR` takes
//! the twins from DIR (the tests give it a wrong one).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use aps5_vulkan::{Gpu, PipelineDesc};
use serde_json::json;

use crate::kernel_diff::{BenchKernel, Harness, Mem, Spec, cached, run_tool};
use crate::util::root;

/// Timed dispatches per side (after one warm-up); the figure is their median.
const RUNS: usize = 7;

/// One benchmarked kernel: tests/kernels/NAME.cl and xtask/bench/glsl/NAME.comp.
struct Case {
    name: &'static str,
    what: &'static str,
    /// The spec at full size and at `--quick` size.
    spec: fn(quick: bool) -> serde_json::Value,
}

fn cases() -> Vec<Case> {
    // Full sizes are for a real GPU (16 M work-items, matmul 512 x 512); `--quick` sizes keep
    // a lavapipe run on a loaded 2-core box to minutes.
    fn n1(quick: bool) -> u64 {
        if quick { 1 << 18 } else { 1 << 24 }
    }
    vec![
        Case {
            name: "int_add",
            what: "streaming integer add (3 buffers)",
            spec: |q| {
                let n = n1(q);
                json!({"kernel": "int_add", "global": [n], "local": [64], "args": [
                    {"buffer": "u32", "len": n, "init": "random:1", "name": "a"},
                    {"buffer": "u32", "len": n, "init": "iota", "name": "b"},
                    {"buffer": "u32", "len": n, "init": "zero", "out": true, "name": "out"},
                    {"scalar": "u32", "value": n - 3}]})
            },
        },
        Case {
            name: "reduce_sum",
            what: "workgroup tree reduction in LDS, 7 barriers",
            spec: |q| {
                let n = n1(q);
                json!({"kernel": "reduce_sum", "global": [n], "local": [64], "args": [
                    {"buffer": "u32", "len": n, "init": "random:9", "name": "in"},
                    {"buffer": "u32", "len": n / 64, "init": "zero", "out": true, "name": "out"}]})
            },
        },
        Case {
            name: "int_hash",
            what: "16 rounds of a dependent integer hash",
            spec: |q| {
                let n = n1(q) / 4;
                json!({"kernel": "int_hash", "global": [n], "local": [64], "args": [
                    {"buffer": "u32", "len": n, "init": "random:2", "name": "in"},
                    {"buffer": "u32", "len": n, "init": "zero", "out": true, "name": "out"}]})
            },
        },
        Case {
            name: "loop_divergent",
            what: "per-lane trip counts 0..49 (divergent loop exit)",
            spec: |q| {
                let n = n1(q) / 4;
                json!({"kernel": "loop_divergent", "global": [n], "local": [64], "args": [
                    {"buffer": "u32", "len": n, "init": "random:3", "name": "in"},
                    {"buffer": "u32", "len": n, "init": "zero", "out": true, "name": "out"}]})
            },
        },
        Case {
            name: "matmul_n",
            what: "naive f32 matrix multiply, one output per work-item",
            spec: |q| {
                let n: u64 = if q { 128 } else { 512 };
                json!({"kernel": "matmul_n", "global": [n, n], "local": [16, 4], "ulp": 0,
                    "args": [
                    {"buffer": "f32", "len": n * n, "init": "random:30", "max": 2, "name": "a"},
                    {"buffer": "f32", "len": n * n, "init": "random:31", "max": 2, "name": "b"},
                    {"buffer": "f32", "len": n * n, "init": "zero", "out": true, "name": "c"},
                    {"scalar": "u32", "value": n}]})
            },
        },
        Case {
            name: "stencil_2d_n",
            what: "5-point f32 Jacobi step, fixed borders",
            spec: |q| {
                let n: u64 = if q { 512 } else { 4096 };
                json!({"kernel": "stencil_2d_n", "global": [n, n], "local": [8, 8], "ulp": 0,
                    "args": [
                    {"buffer": "f32", "len": n * n, "init": "random:24", "name": "in"},
                    {"buffer": "f32", "len": n * n, "init": "zero", "out": true, "name": "out"}]})
            },
        },
    ]
}

/// The GLSL twins: xtask/bench/glsl, or APS5_BENCH_GLSL_DIR (the tests' wrong twins).
fn glsl_dir() -> PathBuf {
    std::env::var_os("APS5_BENCH_GLSL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("xtask/bench/glsl"))
}

/// APS5_BENCH_GLSL=NAME[,NAME...]: only these kernels (default all).
fn selected(name: &str) -> bool {
    match std::env::var("APS5_BENCH_GLSL") {
        Ok(list) if !list.is_empty() => list.split(',').any(|n| n == name),
        _ => true,
    }
}

/// glslangValidator's SPIR-V of xtask/bench/glsl/NAME.comp, through `cached` (by the source's
/// bytes) so a prefilled APS5_KERNEL_DIFF_PREBUILT needs no glslang.
fn compile_glsl(name: &str, work: &Path) -> Result<(String, Vec<u32>)> {
    let src = glsl_dir().join(format!("{name}.comp"));
    let text = std::fs::read_to_string(&src).with_context(|| format!("{}", src.display()))?;
    let spv = work.join(format!("{name}.spv"));
    cached("glsl", &[text.as_bytes()], &spv, || {
        run_tool(
            Command::new("glslangValidator")
                .args(["-V", "--target-env", "vulkan1.2", "-o"])
                .arg(&spv)
                .arg(&src),
            &format!("glslangValidator {}", src.display()),
        )
    })?;
    let bytes = std::fs::read(&spv)?;
    let words = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    Ok((text, words))
}

/// The `local_size_x/y/z = N` of a GLSL source (missing ones are 1).
fn glsl_local_size(text: &str) -> [u32; 3] {
    let mut size = [1; 3];
    for (d, key) in ["local_size_x", "local_size_y", "local_size_z"]
        .iter()
        .enumerate()
    {
        if let Some(rest) = text.split(&format!("{key} =")).nth(1) {
            let digits: String = rest
                .trim_start()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            size[d] = digits.parse().unwrap_or(1);
        }
    }
    size
}

/// The GLSL twin on the same inputs: its buffers, pipeline and push constants.
struct Twin {
    pipeline: aps5_vulkan::ComputePipeline,
    push: Vec<u8>,
    groups: [u32; 3],
    buffers: Vec<Mem>,
}

fn twin(gpu: &Gpu, ours: &BenchKernel, spirv: &[u32]) -> Result<Twin> {
    // Push constants: the arguments in order, a buffer as its 8-byte device address, a scalar
    // at its natural alignment (the std430 offsets of the GLSL block).
    let mut push = Vec::new();
    let mut buffers = Vec::new();
    for a in ours.args() {
        if a.buffer {
            // Device-local, as our side's buffers are (kernel_diff::Mem).
            let mut b = Mem::new(gpu, a.bytes.len().max(4) as u64, true)?;
            b.write(gpu, a.bytes)?;
            push.resize(push.len().next_multiple_of(8), 0);
            push.extend(b.device_address().to_le_bytes());
            buffers.push(b);
        } else {
            push.resize(push.len().next_multiple_of(a.bytes.len()), 0);
            push.extend(a.bytes);
        }
    }
    push.resize(push.len().next_multiple_of(4), 0);
    let pipeline = gpu.create_compute_pipeline(&PipelineDesc {
        spirv,
        entry: "main",
        push_constant_bytes: push.len() as u32,
        required_subgroup_size: None,
    })?;
    let (global, local) = (ours.global(), ours.local());
    Ok(Twin {
        pipeline,
        push,
        groups: std::array::from_fn(|d| global[d] / local[d]),
        buffers,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn ms(f: impl FnOnce() -> Result<()>) -> Result<f64> {
    let t = Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

/// The `glsl` bench's figures; `"failed": true` when some kernel's two sides disagreed (the
/// caller writes the JSON, then fails).
pub fn glsl(quick: bool) -> Result<serde_json::Value> {
    let fill = std::env::var_os("APS5_KERNEL_DIFF_FILL").is_some();
    if fill && std::env::var_os("APS5_KERNEL_DIFF_PREBUILT").is_none() {
        bail!("APS5_KERNEL_DIFF_FILL=1 needs APS5_KERNEL_DIFF_PREBUILT=DIR to fill");
    }
    let harness = Harness::open(false)?;
    let gpu = harness.gpu();
    let work = std::env::temp_dir().join(format!("aps5-bench-glsl-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let result = (|| {
        let (_, empty_spv) = compile_glsl("empty", &work)?;
        let empty = gpu.create_compute_pipeline(&PipelineDesc {
            spirv: &empty_spv,
            entry: "main",
            push_constant_bytes: 0,
            required_subgroup_size: None,
        })?;
        let mut kernels = serde_json::Map::new();
        let mut failed = false;
        let cases: Vec<Case> = cases().into_iter().filter(|c| selected(c.name)).collect();
        if cases.is_empty() {
            bail!("APS5_BENCH_GLSL names no kernel of this bench");
        }
        for case in cases {
            println!("bench glsl: {}", case.name);
            let spec: Spec = serde_json::from_value((case.spec)(quick))?;
            let cl = root().join(format!("tests/kernels/{}.cl", case.name));
            let ours = harness
                .bench_kernel(&cl, &spec, false)
                .with_context(|| format!("{}: our translation", case.name))?;
            let (text, spirv) = compile_glsl(case.name, &work)?;
            if glsl_local_size(&text) != ours.local() {
                bail!(
                    "xtask/bench/glsl/{}.comp: local size {:?}, the spec's is {:?}",
                    case.name,
                    glsl_local_size(&text),
                    ours.local()
                );
            }
            if fill {
                kernels.insert(case.name.into(), json!({"filled": true}));
                continue;
            }
            let twin = twin(gpu, &ours, &spirv)?;
            let run_ours = || ours.dispatch(gpu);
            let run_glsl = || Ok(gpu.dispatch(&twin.pipeline, &twin.push, twin.groups)?);
            ms(run_ours)?;
            ms(run_glsl)?;
            // Interleaved, so a change in machine load hits both sides alike.
            let (mut t_ours, mut t_glsl) = (Vec::new(), Vec::new());
            for _ in 0..RUNS {
                t_ours.push(ms(run_ours)?);
                t_glsl.push(ms(run_glsl)?);
            }
            let ours_bufs = ours.buffers(gpu)?;
            let mut error = None;
            for (i, (a, mine)) in ours
                .args()
                .iter()
                .filter(|a| a.buffer)
                .zip(&ours_bufs)
                .enumerate()
            {
                if !a.out {
                    continue;
                }
                let theirs = twin.buffers[i].read(gpu, mine.len())?;
                if let Some((j, text)) = ours.mismatch(i, mine, &theirs) {
                    error = Some(format!("buffer {} index {j}: {text}", a.name));
                    break;
                }
            }
            let global = ours.global();
            let items: u64 = global.iter().map(|&g| u64::from(g)).product();
            let entry = match error {
                Some(e) => {
                    println!("bench glsl: {}: the two sides disagree: {e}", case.name);
                    failed = true;
                    json!({"error": format!("translation and GLSL twin disagree: {e}")})
                }
                None => {
                    let (o, g) = (median(t_ours.clone()), median(t_glsl.clone()));
                    json!({
                        "what": case.what,
                        "work_items": items,
                        "global": global,
                        "local": ours.local(),
                        "ours_ms": o,
                        "glsl_ms": g,
                        "ratio": o / g,
                        "ours_ms_all": t_ours,
                        "glsl_ms_all": t_glsl,
                        "ours_host_local_size": ours.host_local_size,
                        "ours_host_groups": ours.host_groups(),
                        "ours_code_dwords": ours.code_dwords,
                        "ours_spirv_words": ours.spirv_words,
                        "glsl_spirv_words": spirv.len(),
                        "float_ulp_bound": ours.args().iter().any(|a| a.float).then(|| ours.ulp()),
                    })
                }
            };
            kernels.insert(case.name.into(), entry);
        }
        let mut empty_ms = Vec::new();
        if !fill {
            gpu.dispatch(&empty, &[], [1, 1, 1])?;
            for _ in 0..RUNS {
                empty_ms.push(ms(|| Ok(gpu.dispatch(&empty, &[], [1, 1, 1])?))?);
            }
        }
        let i = gpu.info();
        anyhow::Ok(json!({
            "device": i.name,
            "driver": i.driver,
            "host_subgroup_size": i.subgroup_size,
            "lane_subgroup": i.lane_subgroup,
            "validation": i.validation,
            "mapping": if i.lane_subgroup == Some(32) {
                "lane per invocation: a host subgroup of 32 runs a guest wave, one invocation per lane, where the program allows it (ours_host_local_size = waves x 32), else wave-serial (docs/TRANSLATOR.md \"Wave mapping\"); the GLSL twin runs one invocation per work-item"
            } else {
                "wave-serial: one host invocation runs one whole 32-lane guest wave (docs/TRANSLATOR.md \"Wave mapping\"); the GLSL twin runs one invocation per work-item"
            },
            "guest_wave": 32,
            "quick": quick,
            "filled_only": fill,
            "timing": format!("wall time of Gpu::dispatch (record + submit + fence wait; drivers/vulkan has no timestamp queries), median of {RUNS} after 1 warm-up, the two sides interleaved"),
            "empty_dispatch_ms": if fill { serde_json::Value::Null } else { json!(median(empty_ms)) },
            "kernels": kernels,
            "failed": failed,
        }))
    })();
    let _ = std::fs::remove_dir_all(&work);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_size_is_read_from_the_glsl() {
        assert_eq!(
            glsl_local_size("layout(local_size_x = 16, local_size_y = 4) in;"),
            [16, 4, 1]
        );
        assert_eq!(glsl_local_size("layout(local_size_x = 64) in;"), [64, 1, 1]);
    }

    #[test]
    fn every_case_has_a_kernel_and_a_twin_of_its_local_size() {
        for case in cases() {
            let spec: Spec = serde_json::from_value((case.spec)(true)).unwrap();
            assert!(
                root()
                    .join(format!("tests/kernels/{}.cl", case.name))
                    .is_file()
            );
            let text =
                std::fs::read_to_string(glsl_dir().join(format!("{}.comp", case.name))).unwrap();
            let mut local = [1; 3];
            local[..spec.local.len()].copy_from_slice(&spec.local);
            assert_eq!(glsl_local_size(&text), local, "{}", case.name);
        }
    }
}
