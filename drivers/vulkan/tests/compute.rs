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

/// Host memory the test owns, aligned for import; freed on drop.
struct HostPages {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl HostPages {
    fn new(len: usize, align: usize) -> HostPages {
        let layout = std::alloc::Layout::from_size_align(len, align).unwrap();
        // SAFETY: a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null());
        HostPages { ptr, layout }
    }
    fn word(&self, i: usize) -> u32 {
        // SAFETY: in bounds (checked by the slice); read after the GPU finished.
        let s = unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) };
        u32::from_le_bytes(s[i * 4..][..4].try_into().unwrap())
    }
    fn set_word(&mut self, i: usize, v: u32) {
        // SAFETY: as above; no GPU work runs.
        let s = unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) };
        s[i * 4..][..4].copy_from_slice(&v.to_le_bytes());
    }
}

impl Drop for HostPages {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

#[test]
fn compute_writes_into_imported_host_memory_that_the_cpu_reads_in_place() {
    let gpu = gpu();
    assert!(
        gpu.supports_host_import(),
        "lavapipe has VK_EXT_external_memory_host"
    );
    let align = gpu.host_import_alignment().unwrap() as usize;
    let n = 1000u32;
    let len = (n as usize * 8).next_multiple_of(align);
    let mut host = HostPages::new(len, align.max(4096));
    for i in 0..n as usize {
        host.set_word(i, (i as u32).wrapping_mul(2654435761));
    }
    // SAFETY: `host` outlives `buf` (dropped first, below) and is not touched while the
    // dispatch runs.
    let buf = unsafe { gpu.import_host_memory(host.ptr, len) }.unwrap();
    assert_eq!(buf.size(), len as u64);
    let spirv = glslang("import", SHADER);
    let pipeline = gpu
        .create_compute_pipeline(&PipelineDesc {
            spirv: &spirv,
            entry: "main",
            push_constant_bytes: 20,
            required_subgroup_size: None,
        })
        .unwrap();
    let mut push = Vec::new();
    push.extend(buf.device_address().to_le_bytes());
    push.extend((buf.device_address() + n as u64 * 4).to_le_bytes());
    push.extend(n.to_le_bytes());
    gpu.dispatch(&pipeline, &push, [n.div_ceil(64), 1, 1])
        .unwrap();
    // Read the test's own allocation, not a copy: the GPU wrote these pages.
    for i in 0..n {
        let want = i.wrapping_mul(2654435761).wrapping_mul(3).wrapping_add(i);
        assert_eq!(host.word((n + i) as usize), want, "out[{i}]");
    }
    drop(buf);
    gpu.check_validation().unwrap();
}

#[test]
fn misaligned_host_import_is_refused_with_the_alignment() {
    let gpu = gpu();
    let align = gpu.host_import_alignment().unwrap() as usize;
    let host = HostPages::new(align * 2, align.max(4096));
    // SAFETY: the call fails before touching the memory.
    let err = unsafe { gpu.import_host_memory(host.ptr.wrapping_add(4), align) }
        .err()
        .expect("a misaligned pointer must be refused");
    assert!(
        err.to_string().contains("minImportedHostPointerAlignment"),
        "{err}"
    );
}

#[test]
fn mirror_uploads_ranges_a_shader_reads_and_downloads_what_it_wrote() {
    let gpu = gpu();
    let n = 300u32;
    let mirror = gpu.create_mirror(n as u64 * 8).unwrap();
    let input: Vec<u8> = (0..n)
        .flat_map(|i| (i ^ 0x5a5a_1234).to_le_bytes())
        .collect();
    // Two uploads of two halves: changed-range upload, not whole-buffer.
    gpu.upload_range(&mirror, 0, &input[..400]).unwrap();
    gpu.upload_range(&mirror, 400, &input[400..]).unwrap();
    let spirv = glslang("mirror", SHADER);
    let pipeline = gpu
        .create_compute_pipeline(&PipelineDesc {
            spirv: &spirv,
            entry: "main",
            push_constant_bytes: 20,
            required_subgroup_size: None,
        })
        .unwrap();
    let mut push = Vec::new();
    push.extend(mirror.device_address().to_le_bytes());
    push.extend((mirror.device_address() + n as u64 * 4).to_le_bytes());
    push.extend(n.to_le_bytes());
    gpu.dispatch(&pipeline, &push, [n.div_ceil(64), 1, 1])
        .unwrap();
    let mut out = vec![0u8; 40 * 4];
    gpu.download_range(&mirror, (n as u64 + 100) * 4, &mut out)
        .unwrap();
    for k in 0..40u32 {
        let i = 100 + k;
        let want = (i ^ 0x5a5a_1234).wrapping_mul(3).wrapping_add(i);
        let got = u32::from_le_bytes(out[k as usize * 4..][..4].try_into().unwrap());
        assert_eq!(got, want, "out[{i}]");
    }
    let err = gpu
        .upload_range(&mirror, n as u64 * 8 - 2, &[0; 4])
        .unwrap_err();
    assert!(err.to_string().contains("mirror"), "{err}");
    gpu.check_validation().unwrap();
}

/// What the translator's lane-per-invocation mapping relies on (docs/TRANSLATOR.md), on a
/// device that can require full subgroups of 32 (`DeviceInfo::lane_subgroup`: NVIDIA, with
/// APS5_LANE_MAPPING=1): each subgroup has 32 invocations, `SubgroupId * 32 +
/// SubgroupInvocationID` numbers the workgroup's invocations once each, ballot and shuffle see
/// the whole subgroup, and atomics from every lane of a subgroup all land.
const LANES: &str = r#"#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
layout(local_size_x = 128) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words { uint v[]; };
layout(push_constant) uniform Push { uint64_t out_; uint64_t counters; } pc;
void main() {
    uint flat_ = gl_SubgroupID * 32u + gl_SubgroupInvocationID;
    uint slot = gl_WorkGroupID.x * 128u + flat_;
    uvec4 b = subgroupBallot((gl_SubgroupInvocationID & 1u) == 1u);
    uint from = subgroupShuffle(flat_, gl_SubgroupInvocationID ^ 5u);
    Words(pc.out_).v[slot * 4u] = (gl_SubgroupID << 16) | gl_SubgroupInvocationID;
    Words(pc.out_).v[slot * 4u + 1u] = b.x;
    Words(pc.out_).v[slot * 4u + 2u] = from;
    Words(pc.out_).v[slot * 4u + 3u] = gl_SubgroupSize;
    atomicAdd(Words(pc.counters).v[flat_ % 8u], flat_ + 1u);
    atomicAdd(Words(pc.counters).v[8], 1u);
}
"#;

#[test]
fn required_full_subgroups_of_32_number_lanes_once_and_see_the_whole_subgroup() {
    let gpu = gpu();
    let Some(size) = gpu.info().lane_subgroup else {
        eprintln!(
            "SKIP: the device cannot require full subgroups of 32 (set \
             APS5_LANE_MAPPING=1 on a device that has them)"
        );
        return;
    };
    assert_eq!(size, 32);
    let groups = 8u32;
    let out = gpu.create_buffer(u64::from(groups) * 128 * 16).unwrap();
    let counters = gpu.create_buffer(9 * 4).unwrap();
    let spirv = glslang("lanes32", LANES);
    let pipeline = gpu
        .create_compute_pipeline(&PipelineDesc {
            spirv: &spirv,
            entry: "main",
            push_constant_bytes: 16,
            required_subgroup_size: Some(32),
        })
        .unwrap();
    let mut push = Vec::new();
    push.extend(out.device_address().to_le_bytes());
    push.extend(counters.device_address().to_le_bytes());
    gpu.dispatch(&pipeline, &push, [groups, 1, 1]).unwrap();
    let o = out.bytes();
    let w = |i: usize| u32::from_le_bytes(o[i * 4..][..4].try_into().unwrap());
    for g in 0..groups as usize {
        for f in 0..128usize {
            let s = (g * 128 + f) * 4;
            assert_eq!(
                w(s),
                (((f / 32) as u32) << 16) | (f % 32) as u32,
                "group {g} lane {f}"
            );
            assert_eq!(w(s + 1), 0xAAAA_AAAA, "ballot, group {g} lane {f}");
            assert_eq!(
                w(s + 2) as usize,
                (f & !31) | ((f % 32) ^ 5),
                "shuffle, lane {f}"
            );
            assert_eq!(w(s + 3), 32, "subgroup size");
        }
    }
    let c = counters.bytes();
    let cw = |i: usize| u32::from_le_bytes(c[i * 4..][..4].try_into().unwrap());
    for k in 0..8u32 {
        let want: u32 = (0..128u32)
            .filter(|f| f % 8 == k)
            .map(|f| f + 1)
            .sum::<u32>()
            * groups;
        assert_eq!(cw(k as usize), want, "counter {k}");
    }
    assert_eq!(cw(8), groups * 128);
    gpu.check_validation().unwrap();
}
