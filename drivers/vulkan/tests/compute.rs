//! The runner against an outside compiler: a GLSL compute shader compiled by glslangValidator,
//! run with the Khronos validation layer on; the result is checked against arithmetic done here.

use std::path::PathBuf;
use std::process::Command;

use aps5_vulkan::{Gpu, GpuOptions, PipelineDesc};

/// Compiles GLSL compute source to SPIR-V words with glslangValidator (Vulkan 1.2 target).
fn glslang(name: &str, source: &str) -> Vec<u32> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("aps5-vulkan-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}.comp"));
    let spv = dir.join(format!("{name}.spv"));
    std::fs::write(&src, source).unwrap();
    let out = Command::new("glslangValidator")
        .args(["-V", "--target-env", "vulkan1.2", "-o"])
        .arg(&spv)
        .arg(&src)
        .output()
        .expect("glslangValidator (Debian package glslang-tools)");
    assert!(
        out.status.success(),
        "glslangValidator: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let bytes = std::fs::read(&spv).unwrap();
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn gpu() -> Gpu {
    let mut opts = GpuOptions::from_env();
    opts.validation = true;
    let gpu = Gpu::new(&opts).expect("open Vulkan device");
    eprintln!(
        "device: {} (subgroup {})",
        gpu.info().name,
        gpu.info().subgroup_size
    );
    gpu
}

/// Push constants carry two buffer device addresses and a count; each invocation writes
/// out[i] = in[i] * 3 + i, and workgroup 1 also increments a counter atomically.
const SHADER: &str = r#"#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 64) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words { uint v[]; };
layout(push_constant) uniform Push { uint64_t src; uint64_t dst; uint n; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) {
        Words(pc.dst).v[i] = Words(pc.src).v[i] * 3u + i;
    }
}
"#;

#[test]
fn glsl_compute_shader_runs_through_push_constants_and_device_addresses() {
    let gpu = gpu();
    let n = 200u32; // not a multiple of 64: the last group is partly masked by the shader
    let mut src = gpu.create_buffer(n as u64 * 4).unwrap();
    let dst = gpu.create_buffer(n as u64 * 4).unwrap();
    let input: Vec<u8> = (0..n)
        .flat_map(|i| (i.wrapping_mul(2654435761)).to_le_bytes())
        .collect();
    src.write(0, &input).unwrap();
    let spirv = glslang("triple", SHADER);
    let pipeline = gpu
        .create_compute_pipeline(&PipelineDesc {
            spirv: &spirv,
            entry: "main",
            push_constant_bytes: 20,
            required_subgroup_size: None,
        })
        .unwrap();
    let mut push = Vec::new();
    push.extend(src.device_address().to_le_bytes());
    push.extend(dst.device_address().to_le_bytes());
    push.extend(n.to_le_bytes());
    gpu.dispatch(&pipeline, &push, [n.div_ceil(64), 1, 1])
        .unwrap();
    let out = dst.bytes();
    for i in 0..n {
        let got = u32::from_le_bytes(out[i as usize * 4..][..4].try_into().unwrap());
        let want = i.wrapping_mul(2654435761).wrapping_mul(3).wrapping_add(i);
        assert_eq!(got, want, "out[{i}]");
    }
    gpu.check_validation().unwrap();
}

#[test]
fn wrong_push_constant_size_is_refused_before_submission() {
    let gpu = gpu();
    let spirv = glslang("triple2", SHADER);
    let pipeline = gpu
        .create_compute_pipeline(&PipelineDesc {
            spirv: &spirv,
            entry: "main",
            push_constant_bytes: 20,
            required_subgroup_size: None,
        })
        .unwrap();
    let err = gpu.dispatch(&pipeline, &[0; 8], [1, 1, 1]).unwrap_err();
    assert!(
        err.to_string().contains("8 bytes of push constants"),
        "{err}"
    );
}

#[test]
fn validation_layer_errors_fail_the_call() {
    // A push-constant range larger than the shader's block is legal; a shader whose block is
    // larger than the layout's range is a validation error (VUID-VkComputePipelineCreateInfo-layout-07987).
    let gpu = gpu();
    let spirv = glslang("triple3", SHADER);
    let err = gpu
        .create_compute_pipeline(&PipelineDesc {
            spirv: &spirv,
            entry: "main",
            push_constant_bytes: 8,
            required_subgroup_size: None,
        })
        .err()
        .expect("a pipeline whose layout lacks the shader's push constants must fail");
    assert!(err.to_string().contains("validation"), "{err}");
}
