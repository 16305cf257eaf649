//! Shared by the translator tests: compiles tests/translate/kernels.cl with clang-14 for
//! gfx1030 and reads each kernel's code and kernel descriptor (the outside oracle for the
//! compute state).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use aps5_shader::translate::ComputeState;
use object::{Object, ObjectSection, ObjectSymbol};

pub const KERNELS: &[&str] = &[
    "add", "loop", "reduce", "atom", "imath", "fmath", "d64", "sw", "chase", "xlane",
];

pub struct Kernel {
    pub name: String,
    pub code: Vec<u32>,
    pub state: ComputeState,
    /// kernel_code_properties of the descriptor.
    pub props: u16,
    /// kernarg_size of the descriptor.
    pub kernarg_size: u32,
}

fn clang() -> Option<&'static str> {
    let ok = Command::new("clang-14")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some("clang-14")
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/translate")
}

/// Compiles tests/translate/kernels.cl and reads each kernel's code and descriptor.
pub fn build(wave64: bool, local: [u32; 3]) -> Option<Vec<Kernel>> {
    let Some(cc) = clang() else {
        eprintln!("SKIP: clang-14 not found (Debian package clang-14); translator tests need it");
        return None;
    };
    let tmp = tempfile::tempdir().unwrap();
    let obj = tmp.path().join("k.o");
    let mut cmd = Command::new(cc);
    cmd.args([
        "-x",
        "cl",
        "-Xclang",
        "-finclude-default-header",
        "-target",
        "amdgcn-amd-amdhsa",
        "-mcpu=gfx1030",
        "-nogpulib",
        "-O2",
        "-include",
    ])
    .arg(dir().join("shim.h"))
    .arg("-c")
    .arg(dir().join("kernels.cl"))
    .arg("-o")
    .arg(&obj);
    if wave64 {
        cmd.arg("-mwavefrontsize64");
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "clang: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let data = std::fs::read(&obj).unwrap();
    let out = kernels_of(&data, KERNELS, local);
    assert!(out.iter().all(|k| k.state.wave64 == wave64));
    Some(out)
}

/// Assembles tests/translate/FILE (gfx1030 assembly with `.amdhsa_kernel` descriptors) with
/// clang-14 and reads the named kernels.
pub fn build_asm(file: &str, names: &[&str], local: [u32; 3]) -> Option<Vec<Kernel>> {
    let Some(cc) = clang() else {
        eprintln!("SKIP: clang-14 not found (Debian package clang-14); translator tests need it");
        return None;
    };
    let tmp = tempfile::tempdir().unwrap();
    let obj = tmp.path().join("k.o");
    let out = Command::new(cc)
        .args([
            "-x",
            "assembler",
            "-target",
            "amdgcn-amd-amdhsa",
            "-mcpu=gfx1030",
            "-c",
        ])
        .arg(dir().join(file))
        .arg("-o")
        .arg(&obj)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "clang -x assembler: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(kernels_of(&std::fs::read(&obj).unwrap(), names, local))
}

/// [`kernels_of`] for a code object built elsewhere.
pub fn kernels_in(data: &[u8], names: &[&str], local: [u32; 3]) -> Vec<Kernel> {
    kernels_of(data, names, local)
}

/// Each named kernel's code (from its symbol to the end of .text) and descriptor.
fn kernels_of(data: &[u8], names: &[&str], local: [u32; 3]) -> Vec<Kernel> {
    let file = object::File::parse(data).unwrap();
    let text = file.section_by_name(".text").unwrap();
    let text_bytes = text.data().unwrap();
    let mut out = Vec::new();
    for name in names {
        let sym = file.symbols().find(|s| s.name() == Ok(name)).unwrap();
        let kd = file
            .symbols()
            .find(|s| s.name() == Ok(&format!("{name}.kd")))
            .unwrap();
        let kd_sec = file.section_by_index(kd.section_index().unwrap()).unwrap();
        let kd_data = &kd_sec.data().unwrap()[kd.address() as usize..][..64];
        let u32_at = |o: usize| u32::from_le_bytes(kd_data[o..o + 4].try_into().unwrap());
        let props = u16::from_le_bytes(kd_data[56..58].try_into().unwrap());
        let code: Vec<u32> = text_bytes[sym.address() as usize..]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        out.push(Kernel {
            name: name.to_string(),
            code,
            state: ComputeState {
                pgm_rsrc1: u32_at(48),
                pgm_rsrc2: u32_at(52),
                workgroup_size: local,
                wave64: props & (1 << 10) == 0,
                lds_bytes: u32_at(0),
                scratch_bytes_per_lane: u32_at(4),
            },
            props,
            kernarg_size: u32_at(8),
        });
    }
    out
}

/// The device's float controls as `Options::host_float_controls` takes them (the translation
/// leaves out the float-controls modes the device lacks, e.g. lavapipe's denorm modes).
pub fn host_float_controls(gpu: &aps5_vulkan::Gpu) -> aps5_shader::translate::FloatControls {
    let f = &gpu.info().float_controls;
    aps5_shader::translate::FloatControls::from_vulkan(
        f.denorm_independence.as_raw(),
        f.denorm_preserve,
        f.denorm_flush_to_zero,
        f.signed_zero_inf_nan_preserve,
    )
}
