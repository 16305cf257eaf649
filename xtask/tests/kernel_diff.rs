//! The kernel-diff harness itself, before any translator output is trusted: hand-written GLSL
//! (compiled by glslangValidator) that follows docs/SHADER_ABI.md stands in for the translation
//! of a corpus kernel (APS5_KERNEL_DIFF_SPIRV). The kernel's register use (kernarg pointer in
//! s[6:7], dispatch packet in s[4:5]) and instruction offsets are clang-14's, read from its
//! disassembly; the expected buffers come from the host build of the same OpenCL kernel. So
//! these tests check the guest memory the harness builds (range table, kernarg segment,
//! dispatch packet, user SGPRs, fault buffer), the comparison and the reports.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The ABI side every stand-in shares: push constants, range-table lookup, fault recording.
const ABI: &str = r#"#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 64) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Word { uint v; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer Ranges { uint64_t w[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Fault {
    uint state; uint reason; uint addr_lo; uint addr_hi; uint bytes; uint stage; uint inst; uint pad;
};
layout(push_constant) uniform Push {
    uint sgpr[16]; uint64_t table; uint64_t fault; uint count; uint reserved; uint64_t scratch;
} pc;

void record(uint reason, uint64_t a, uint bytes, uint inst) {
    Fault f = Fault(pc.fault);
    if (atomicCompSwap(f.state, 0u, 1u) == 0u) {
        f.reason = reason; f.addr_lo = uint(a); f.addr_hi = uint(a >> 32);
        f.bytes = bytes; f.stage = 0u; f.inst = inst; f.pad = 0u;
        memoryBarrierBuffer();
        f.state = 2u;
    }
}
// The device address of guest [a, a+size) with permission `perm`, or 0 after recording a fault.
// (No return or break inside the loop: lavapipe of Mesa 22.3 loses a partly active
// workgroup's stores after a divergent early return from a loop.)
uint64_t xlate(uint64_t a, uint size, uint perm, uint inst) {
    Ranges r = Ranges(pc.table);
    uint hit = 0xffffffffu;
    for (uint e = 0u; e < pc.count; e++) {
        if (hit == 0xffffffffu && a >= r.w[4u * e] && a + size <= r.w[4u * e + 1u]) hit = e;
    }
    if (hit == 0xffffffffu) { record(1u, a, size, inst); return 0ul; }
    if ((uint(r.w[4u * hit + 3u]) & perm) != perm) { record(2u, a, size, inst); return 0ul; }
    return r.w[4u * hit + 2u] + (a - r.w[4u * hit]);
}
uint load32(uint64_t a, uint inst) {
    uint64_t d = xlate(a, 4u, 1u, inst);
    return d == 0ul ? 0u : Word(d).v;
}
uint64_t load64(uint64_t a, uint inst) {
    return uint64_t(load32(a, inst)) | uint64_t(load32(a + 4ul, inst)) << 32;
}
void store32(uint64_t a, uint v, uint inst) {
    uint64_t d = xlate(a, 4u, 2u, inst);
    if (d != 0ul) Word(d).v = v;
}
uint64_t sgpr64(uint i) { return uint64_t(pc.sgpr[i]) | uint64_t(pc.sgpr[i + 1u]) << 32; }
uint global_id_x() {
    uint local_size = load32(sgpr64(4u) + 4ul, 0u) & 0xffffu; // dispatch packet: workgroup_size_x at byte 4
    return gl_WorkGroupID.x * local_size + gl_LocalInvocationID.x;
}
"#;

/// tests/kernels/int_add.cl: out[i] = a[i] + b[i] * 3 for i < n; kernargs a@0 b@8 out@16 n@24.
fn int_add(bug: &str) -> String {
    format!(
        "{ABI}void main() {{
    uint64_t ka = sgpr64(6u);
    uint i = global_id_x();
    if (i < load32(ka + 24ul, 0x8u)) {{
        uint64_t a = load64(ka, 0x3cu), b = load64(ka + 8ul, 0x3cu), o = load64(ka + 16ul, 0x44u);
        uint v = load32(a + 4ul * i, 0x84u) + load32(b + 4ul * i, 0x64u) * 3u;
        store32(o + 4ul * i, v {bug}, 0xa0u);
    }}
}}
"
    )
}

/// tests/kernels/oob_fault.cl: out[i + 4096] = in[i + 100000] (global_load at 0x58, store at 0x74).
const OOB: &str = r#"void main() {
    uint64_t ka = sgpr64(6u);
    uint64_t in_ = load64(ka, 0x4u), o = load64(ka + 8ul, 0x4u);
    uint i = global_id_x();
    uint v = load32(in_ + 4ul * (i + 100000u), 0x58u);
    store32(o + 4ul * (i + 4096u), v, 0x74u);
}
"#;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn glslang(name: &str, source: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kernel-diff-tests");
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
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    spv
}

fn kernel_diff(args: &[&str], spirv: Option<&Path>) -> (bool, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
    cmd.arg("kernel-diff").args(args).current_dir(root());
    if let Some(s) = spirv {
        cmd.env("APS5_KERNEL_DIFF_SPIRV", s);
    }
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&stdout),
        String::from_utf8_lossy(&stderr)
    );
    (status.success(), text)
}

#[test]
fn abi_following_module_matches_the_host_build_at_both_wave_sizes() {
    let spv = glslang("int_add", &int_add(""));
    for wave in [&[][..], &["--wave64"][..]] {
        let mut args = vec!["tests/kernels/int_add.cl"];
        args.extend(wave);
        let (ok, out) = kernel_diff(&args, Some(&spv));
        assert!(ok, "{out}");
        assert!(
            out.contains("int_add wave") && out.contains(": pass"),
            "{out}"
        );
    }
}

#[test]
fn a_wrong_element_is_reported_with_buffer_index_expected_and_actual() {
    let spv = glslang("int_add_bug", &int_add("+ (i == 77u ? 1u : 0u)"));
    let (ok, out) = kernel_diff(&["tests/kernels/int_add.cl"], Some(&spv));
    assert!(!ok, "{out}");
    // a = random:1, b = iota: the host says a[77] + 231; the module adds one.
    assert!(
        out.contains("FAIL: buffer out (uint) index 77: expected "),
        "{out}"
    );
    let line = out.lines().find(|l| l.contains("index 77")).unwrap();
    let nums: Vec<u64> = line
        .split(['(', ')', ' ', ','])
        .filter_map(|w| {
            w.strip_prefix("0x")
                .and_then(|h| u64::from_str_radix(h, 16).ok())
        })
        .collect();
    assert_eq!(nums.len(), 2, "{line}");
    assert_eq!(nums[1], (nums[0] + 1) & 0xffff_ffff, "{line}");
}

#[test]
fn an_out_of_bounds_access_ends_with_a_fault_report_naming_address_and_instruction() {
    let spv = glslang("oob", &format!("{ABI}{OOB}"));
    let (ok, out) = kernel_diff(&["tests/kernels/oob_fault.cl"], Some(&spv));
    assert!(ok, "oob_fault expects a fault: {out}");
    assert!(
        out.contains("fault: unmapped address at guest address 0x"),
        "{out}"
    );
    assert!(
        out.contains("instruction at offset 0x58: global_load_dword v2, v[2:3], off offset:640"),
        "{out}"
    );
    // The same module against a kernel that must not fault: a failure that names the fault.
    let (ok, out) = kernel_diff(&["tests/kernels/int_add.cl"], Some(&spv));
    assert!(
        !ok && out.contains("FAIL: fault: unmapped address"),
        "{out}"
    );
}

#[test]
fn a_spec_that_does_not_match_the_kernel_is_a_broken_kernel_not_a_translator_failure() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let spec = dir.join("int_add_bad.json");
    std::fs::write(
        &spec,
        r#"{"kernel":"int_add","global":[64],"local":[64],"args":[{"buffer":"u32","len":64}]}"#,
    )
    .unwrap();
    let (ok, out) = kernel_diff(&["tests/kernels/int_add.cl", spec.to_str().unwrap()], None);
    assert!(
        !ok && out.contains("BROKEN KERNEL OR SPEC: host build"),
        "{out}"
    );
    std::fs::write(
        &spec,
        r#"{"kernel":"int_add","args":[{"buffer":"u31","len":64}]}"#,
    )
    .unwrap();
    let (ok, out) = kernel_diff(&["tests/kernels/int_add.cl", spec.to_str().unwrap()], None);
    assert!(!ok && out.contains("unknown element type \"u31\""), "{out}");
}
