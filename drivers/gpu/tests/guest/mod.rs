//! The guest side shared by the draw and dispatch tests and the draw benchmark
//! (examples/bench_gpu_draws.rs): memory the test owns, shaders compiled by llc-14, PM4
//! packets and the state of a draw into a linear RGBA8 target. Each user takes a part.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use aps5_agc::generated::{CONTEXT_BASE, SH_BASE, UCONFIG_BASE, reg, ty};
use aps5_agc::{Queue, QueueKind};
use aps5_gpu::backend::Guest;
use aps5_gpu::memory::Region;
use aps5_gpu::{Display, Executor, GpuBackend, ProcessMemory, ShaderInfo};
use aps5_shader::translate::abi::{PERM_READ, PERM_WRITE};

pub const W: u32 = 64;
pub const H: u32 = 64;

/// A triangle from VertexID, instance n moved right by n/4; param0 = a colour per vertex
/// with alpha 0.5.
pub const VS_TRI: &str = "\
define amdgpu_vs void @vs(i32 inreg %s0, i32 %vid, i32 %u1, i32 %u2, i32 %iid) {
  %is0 = icmp eq i32 %vid, 0
  %is1 = icmp eq i32 %vid, 1
  %x1 = select i1 %is1, float 0.5, float -0.5
  %x = select i1 %is0, float -0.75, float %x1
  %y1 = select i1 %is1, float -0.25, float 0.75
  %y = select i1 %is0, float -0.5, float %y1
  %if = uitofp i32 %iid to float
  %dx = fmul float %if, 0.25
  %xi = fadd float %x, %dx
  call void @llvm.amdgcn.exp.f32(i32 12, i32 15, float %xi, float %y, float 0.5, float 1.0, i1 true, i1 false)
  %r = select i1 %is0, float 1.0, float 0.0
  %g = select i1 %is1, float 1.0, float 0.0
  %rg = or i1 %is0, %is1
  %b = select i1 %rg, float 0.0, float 1.0
  call void @llvm.amdgcn.exp.f32(i32 32, i32 15, float %r, float %g, float %b, float 0.5, i1 false, i1 false)
  ret void
}
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
";

/// Perspective-correct param0 to MRT0 as four f32 (SPI_SHADER_32_ABGR).
pub const PS: &str = "\
define amdgpu_ps void @ps(i32 inreg %c0, i32 inreg %prim, <2 x float> %unused_sample, <2 x float> %pc) {
  %i = extractelement <2 x float> %pc, i32 0
  %j = extractelement <2 x float> %pc, i32 1
  %r1 = call float @llvm.amdgcn.interp.p1(float %i, i32 0, i32 0, i32 %prim)
  %r = call float @llvm.amdgcn.interp.p2(float %r1, float %j, i32 0, i32 0, i32 %prim)
  %g1 = call float @llvm.amdgcn.interp.p1(float %i, i32 1, i32 0, i32 %prim)
  %g = call float @llvm.amdgcn.interp.p2(float %g1, float %j, i32 1, i32 0, i32 %prim)
  %b1 = call float @llvm.amdgcn.interp.p1(float %i, i32 2, i32 0, i32 %prim)
  %b = call float @llvm.amdgcn.interp.p2(float %b1, float %j, i32 2, i32 0, i32 %prim)
  %a1 = call float @llvm.amdgcn.interp.p1(float %i, i32 3, i32 0, i32 %prim)
  %a = call float @llvm.amdgcn.interp.p2(float %a1, float %j, i32 3, i32 0, i32 %prim)
  call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float %r, float %g, float %b, float %a, i1 true, i1 true)
  ret void
}
declare float @llvm.amdgcn.interp.p1(float, i32, i32, i32)
declare float @llvm.amdgcn.interp.p2(float, float, i32, i32, i32)
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
";

/// Whether the tools the tests need are here: glslangValidator, and llc-14 with
/// llvm-objcopy-14 unless `APS5_LLC_CACHE` serves their outputs (a miss then fails loudly).
pub fn tools() -> bool {
    let have = |t: &str| Command::new(t).arg("--version").output().is_ok();
    have("glslangValidator")
        && (std::env::var_os("APS5_LLC_CACHE").is_some()
            || (have("llc-14") && have("llvm-objcopy-14")))
}

/// Machine code and `.AMDGPU.config` ({byte address, value}) of an `.ll` text.
pub struct Compiled {
    pub code: Vec<u8>,
    pub config: Vec<(u32, u32)>,
}

impl Compiled {
    /// The config value of a register (absolute dword offset), 0 when absent.
    pub fn get(&self, reg: u32) -> u32 {
        self.config
            .iter()
            .find(|(a, _)| *a == reg * 4)
            .map_or(0, |p| p.1)
    }
}

/// [`llc`], or its outputs from `APS5_LLC_CACHE=DIR` (named by the source's hash; a miss
/// compiles and fills DIR), so a machine without llc-14 (the NVIDIA device machine) can run
/// the benchmark from a directory filled here.
pub fn llc(src: &str) -> Compiled {
    let Some(dir) = std::env::var_os("APS5_LLC_CACHE").map(std::path::PathBuf::from) else {
        return llc_now(src);
    };
    let key = blake3::hash(src.as_bytes()).to_hex();
    let (code, cfg) = (
        dir.join(format!("{key}.code")),
        dir.join(format!("{key}.cfg")),
    );
    if let (Ok(code), Ok(cfg)) = (std::fs::read(&code), std::fs::read(&cfg)) {
        return Compiled {
            code,
            config: config_pairs(&cfg),
        };
    }
    let c = llc_now(src);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(&code, &c.code).unwrap();
    let bytes: Vec<u8> = c
        .config
        .iter()
        .flat_map(|(a, v)| [a.to_le_bytes(), v.to_le_bytes()].concat())
        .collect();
    std::fs::write(&cfg, bytes).unwrap();
    c
}

/// `.AMDGPU.config` bytes as {byte address, value} pairs.
fn config_pairs(b: &[u8]) -> Vec<(u32, u32)> {
    b.chunks_exact(8)
        .map(|c| {
            (
                u32::from_le_bytes(c[0..4].try_into().unwrap()),
                u32::from_le_bytes(c[4..8].try_into().unwrap()),
            )
        })
        .collect()
}

fn llc_now(src: &str) -> Compiled {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    std::fs::write(p("s.ll"), src).unwrap();
    let run = |cmd: &str, args: &[&Path]| {
        let out = Command::new(cmd).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(
        "llc-14",
        &[
            Path::new("-march=amdgcn"),
            Path::new("-mcpu=gfx1030"),
            Path::new("-filetype=obj"),
            Path::new("-O2"),
            &p("s.ll"),
            Path::new("-o"),
            &p("s.o"),
        ],
    );
    let text = format!(".text={}", p("text.bin").display());
    let cfg = format!(".AMDGPU.config={}", p("cfg.bin").display());
    run(
        "llvm-objcopy-14",
        &[
            Path::new("--dump-section"),
            Path::new(&text),
            Path::new("--dump-section"),
            Path::new(&cfg),
            &p("s.o"),
            &p("out.o"),
        ],
    );
    let config = config_pairs(&std::fs::read(p("cfg.bin")).unwrap());
    Compiled {
        code: std::fs::read(p("text.bin")).unwrap(),
        config,
    }
}

/// Page-aligned anonymous memory the test owns.
pub struct Pages {
    pub ptr: *mut u8,
    pub len: usize,
}

impl Pages {
    pub fn new(len: usize) -> Pages {
        // SAFETY: a fresh private anonymous mapping.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        Pages { ptr: p.cast(), len }
    }
    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }
    pub fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: our mapping, exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
    pub fn words(&mut self) -> &mut [u32] {
        // SAFETY: page-aligned, a whole number of dwords.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast(), self.len / 4) }
    }
    pub fn region(&self) -> Region {
        Region {
            begin: self.addr(),
            end: self.addr() + self.len as u64,
            perms: PERM_READ | PERM_WRITE,
        }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: our mapping.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

pub fn pkt3(op: u32, body: &[u32]) -> Vec<u32> {
    let mut v = vec![0xC000_0000 | ((body.len() as u32 - 1) << 16) | (op << 8)];
    v.extend(body);
    v
}

pub const IT_INDEX_TYPE: u32 = 0x2A;
pub const IT_DRAW_INDEX_2: u32 = 0x27;
pub const IT_DRAW_INDEX_AUTO: u32 = 0x2D;
pub const IT_NUM_INSTANCES: u32 = 0x2F;
pub const IT_SET_CONTEXT_REG: u32 = 0x69;
pub const IT_SET_SH_REG: u32 = 0x76;
pub const IT_SET_UCONFIG_REG: u32 = 0x79;

/// One register write as the packet for its space.
pub fn set(r: u32, v: u32) -> Vec<u32> {
    if (SH_BASE..CONTEXT_BASE).contains(&r) {
        pkt3(IT_SET_SH_REG, &[r - SH_BASE, v])
    } else if (CONTEXT_BASE..UCONFIG_BASE).contains(&r) {
        pkt3(IT_SET_CONTEXT_REG, &[r - CONTEXT_BASE, v])
    } else {
        pkt3(IT_SET_UCONFIG_REG, &[r - UCONFIG_BASE, v])
    }
}

pub const CODE_VS: usize = 0x0;
pub const CODE_PS: usize = 0x1000;
pub const TARGET: usize = 0x4000;
pub const INDEX_AT: usize = 0x8000;
pub const DCB: usize = 0x9000;
pub const CLEAR: [u8; 4] = [25, 51, 76, 255];

/// The state of a draw into the W x H RGBA8 target at `base + TARGET`: the VS at
/// `base + CODE_VS` (one user SGPR) and the PS at `base + CODE_PS`, both wave32; a triangle
/// list; alpha blending when `blend`.
pub fn state_packets(base: u64, vs: &Compiled, ps: &Compiled, blend: bool) -> Vec<u32> {
    let vs_at = base + CODE_VS as u64;
    let ps_at = base + CODE_PS as u64;
    let target = base + TARGET as u64;
    let mut c = Vec::new();
    let mut put = |r: u32, v: u32| c.extend(set(r, v));
    put(reg::SPI_SHADER_PGM_LO_VS, (vs_at >> 8) as u32);
    put(reg::SPI_SHADER_PGM_HI_VS, (vs_at >> 40) as u32);
    put(
        reg::SPI_SHADER_PGM_RSRC1_VS,
        vs.get(reg::SPI_SHADER_PGM_RSRC1_VS) | (3 << 24),
    );
    put(
        reg::SPI_SHADER_PGM_RSRC2_VS,
        ty::SpiShaderPgmRsrc2Vs {
            user_sgpr: 1,
            ..Default::default()
        }
        .to_raw(),
    );
    put(reg::SPI_SHADER_PGM_LO_PS, (ps_at >> 8) as u32);
    put(reg::SPI_SHADER_PGM_HI_PS, (ps_at >> 40) as u32);
    put(
        reg::SPI_SHADER_PGM_RSRC1_PS,
        ps.get(reg::SPI_SHADER_PGM_RSRC1_PS),
    );
    put(
        reg::SPI_SHADER_PGM_RSRC2_PS,
        ps.get(reg::SPI_SHADER_PGM_RSRC2_PS) | (1 << 1),
    );
    put(reg::SPI_SHADER_USER_DATA_VS_0, 0x1234);
    put(reg::SPI_SHADER_USER_DATA_PS_0, 0x1234);
    put(reg::SPI_PS_INPUT_ENA, ps.get(reg::SPI_PS_INPUT_ENA));
    put(reg::SPI_PS_INPUT_ADDR, ps.get(reg::SPI_PS_INPUT_ADDR));
    put(reg::SPI_PS_INPUT_CNTL_0, 0);
    put(
        reg::SPI_PS_IN_CONTROL,
        ty::SpiPsInControl {
            num_interp: 1,
            ps_w32_en: 1,
            ..Default::default()
        }
        .to_raw(),
    );
    put(reg::SPI_SHADER_COL_FORMAT, 9); // COL0: SPI_SHADER_32_ABGR
    put(reg::SPI_SHADER_POS_FORMAT, 4); // POS0: SPI_SHADER_4COMP
    put(reg::SPI_SHADER_Z_FORMAT, 0);
    put(
        reg::VGT_SHADER_STAGES_EN,
        ty::VgtShaderStagesEn {
            vs_w32_en: 1,
            ..Default::default()
        }
        .to_raw(),
    );
    put(reg::VGT_PRIMITIVE_TYPE, 4); // DI_PT_TRILIST
    put(reg::CB_COLOR0_BASE, (target >> 8) as u32);
    put(reg::CB_COLOR0_BASE_EXT, (target >> 40) as u32);
    put(
        reg::CB_COLOR0_ATTRIB2,
        ty::CbColor0Attrib2 {
            mip0_width: W - 1,
            mip0_height: H - 1,
            ..Default::default()
        }
        .to_raw(),
    );
    put(
        reg::CB_COLOR0_INFO,
        ty::CbColor0Info {
            format: 10, // COLOR_8_8_8_8
            ..Default::default()
        }
        .to_raw(),
    );
    put(reg::CB_TARGET_MASK, 0xF);
    put(reg::CB_SHADER_MASK, 0xF);
    put(
        reg::CB_COLOR_CONTROL,
        ty::CbColorControl {
            mode: 1,
            rop3: 0xCC,
            ..Default::default()
        }
        .to_raw(),
    );
    let blend = if blend {
        ty::CbBlend0Control {
            color_srcblend: 4,  // BLEND_SRC_ALPHA
            color_destblend: 5, // BLEND_ONE_MINUS_SRC_ALPHA
            color_comb_fcn: 0,  // COMB_DST_PLUS_SRC
            alpha_srcblend: 1,  // BLEND_ONE
            alpha_destblend: 5,
            alpha_comb_fcn: 0,
            separate_alpha_blend: 1,
            enable: 1,
            ..Default::default()
        }
        .to_raw()
    } else {
        0
    };
    put(reg::CB_BLEND0_CONTROL, blend);
    put(
        reg::PA_CL_VTE_CNTL,
        ty::PaClVteCntl {
            vport_x_scale_ena: 1,
            vport_x_offset_ena: 1,
            vport_y_scale_ena: 1,
            vport_y_offset_ena: 1,
            vport_z_scale_ena: 1,
            vport_z_offset_ena: 1,
            vtx_w0_fmt: 1,
            ..Default::default()
        }
        .to_raw(),
    );
    let half = |v: u32| (v as f32 / 2.0).to_bits();
    put(reg::PA_CL_VPORT_XSCALE, half(W));
    put(reg::PA_CL_VPORT_XOFFSET, half(W));
    put(reg::PA_CL_VPORT_YSCALE, half(H));
    put(reg::PA_CL_VPORT_YOFFSET, half(H));
    put(reg::PA_CL_VPORT_ZSCALE, 1.0f32.to_bits());
    put(reg::PA_CL_VPORT_ZOFFSET, 0);
    put(reg::PA_SC_VPORT_ZMIN_0, 0);
    put(reg::PA_SC_VPORT_ZMAX_0, 1.0f32.to_bits());
    let br = ty::PaScWindowScissorBr { br_x: W, br_y: H }.to_raw();
    put(reg::PA_SC_GENERIC_SCISSOR_TL, 1 << 31);
    put(reg::PA_SC_GENERIC_SCISSOR_BR, br);
    put(reg::PA_SC_SCREEN_SCISSOR_TL, 0);
    put(reg::PA_SC_SCREEN_SCISSOR_BR, br);
    put(
        reg::PA_CL_CLIP_CNTL,
        ty::PaClClipCntl {
            dx_clip_space_def: 1,
            ..Default::default()
        }
        .to_raw(),
    );
    c
}

/// Places `dcb` at `base + DCB`, registers the VS and PS at `CODE_VS` / `CODE_PS` as
/// sceAgcCreateShader does (the code size bounds what is read and hashed) and runs `dcb` on a
/// graphics queue with the whole of `mem` GPU-visible and `display` for flips.
pub fn submit_graphics<'a>(
    ex: &'a mut Executor,
    mem: &mut Pages,
    dcb: &[u32],
    vs: &Compiled,
    ps: &Compiled,
    display: Option<&'a mut (dyn Display + 'a)>,
) -> Result<(), String> {
    let base = mem.addr();
    let bytes: Vec<u8> = dcb.iter().flat_map(|w| w.to_le_bytes()).collect();
    mem.bytes()[DCB..DCB + bytes.len()].copy_from_slice(&bytes);
    for (at, c) in [(CODE_VS, vs), (CODE_PS, ps)] {
        ex.register_shader(
            base + at as u64,
            ShaderInfo {
                code_bytes: c.code.len() as u32,
                header: 0,
            },
        );
    }
    let mut q = Queue::new(QueueKind::Graphics);
    let mut be = GpuBackend::new(ex, &ProcessMemory, vec![mem.region()]);
    be.display = display;
    q.submit(
        &Guest(&ProcessMemory),
        base + DCB as u64,
        dcb.len() as u32,
        &mut be,
    )
    .map(|_| ())
    .map_err(|e| e.to_string())
}

// Shader sources more than one test file draws with.

/// A quad's four corners from VertexID (0 top-left, 1 top-right, 2 bottom-left, 3
/// bottom-right), param0 = (x, y, 1 - x, 0.5) in 0..1 units.
pub const VS_QUAD: &str = "\
define amdgpu_vs void @vs(i32 inreg %s0, i32 %vid, i32 %u1, i32 %u2, i32 %iid) {
  %xb = and i32 %vid, 1
  %yb = lshr i32 %vid, 1
  %xf = uitofp i32 %xb to float
  %yf = uitofp i32 %yb to float
  %x2 = fmul float %xf, 1.25
  %x = fadd float %x2, -0.625
  %y2 = fmul float %yf, 1.125
  %y = fadd float %y2, -0.375
  call void @llvm.amdgcn.exp.f32(i32 12, i32 15, float %x, float %y, float 0.25, float 1.0, i1 true, i1 false)
  %ix = fsub float 1.0, %xf
  call void @llvm.amdgcn.exp.f32(i32 32, i32 15, float %xf, float %yf, float %ix, float 0.5, i1 false, i1 false)
  ret void
}
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
";

pub const VS_QUAD_GLSL: &str = "#version 450
layout(location = 0) out vec4 col;
void main() {
    int v = gl_VertexIndex;
    float xf = float(v & 1);
    float yf = float(v >> 1);
    gl_Position = vec4(xf * 1.25 - 0.625, yf * 1.125 - 0.375, 0.25, 1.0);
    col = vec4(xf, yf, 1.0 - xf, 0.5);
}
";

pub const PS_GLSL: &str = "#version 450
layout(location = 0) in vec4 col;
layout(location = 0) out vec4 o;
void main() { o = col; }
";

/// Two triangles, one per instance: instance n moved right by n/4 at depth 0.25 + n/2,
/// param0 = (1 - n, n, vertex / 2, 1) (instance 0 red and near, instance 1 green and far,
/// blue growing along the vertices).
pub const VS_DEPTH: &str = "\
define amdgpu_vs void @vs(i32 inreg %s0, i32 %vid, i32 %u1, i32 %u2, i32 %iid) {
  %is0 = icmp eq i32 %vid, 0
  %is1 = icmp eq i32 %vid, 1
  %x1 = select i1 %is1, float 0.5, float -0.5
  %x = select i1 %is0, float -0.75, float %x1
  %y1 = select i1 %is1, float -0.25, float 0.75
  %y = select i1 %is0, float -0.5, float %y1
  %if = uitofp i32 %iid to float
  %dx = fmul float %if, 0.25
  %xi = fadd float %x, %dx
  %dz = fmul float %if, 0.5
  %z = fadd float %dz, 0.25
  call void @llvm.amdgcn.exp.f32(i32 12, i32 15, float %xi, float %y, float %z, float 1.0, i1 true, i1 false)
  %r = fsub float 1.0, %if
  %vf = uitofp i32 %vid to float
  %b = fmul float %vf, 0.5
  call void @llvm.amdgcn.exp.f32(i32 32, i32 15, float %r, float %if, float %b, float 1.0, i1 false, i1 false)
  ret void
}
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
";

pub const VS_DEPTH_GLSL: &str = "#version 450
layout(location = 0) out vec4 col;
void main() {
    int v = gl_VertexIndex;
    float n = float(gl_InstanceIndex);
    vec2 p = v == 0 ? vec2(-0.75, -0.5) : v == 1 ? vec2(0.5, -0.25) : vec2(-0.5, 0.75);
    p.x += n * 0.25;
    gl_Position = vec4(p, 0.25 + n * 0.5, 1.0);
    col = vec4(1.0 - n, n, float(v) * 0.5, 1.0);
}
";

/// Samples a 2D texture at param0.xy (the quad's 0..1 corners) with the T# in user SGPRs
/// s[0:7] and the S# in s[8:11], implicit LOD (LLVM puts the sample in whole-quad mode).
pub const PS_TEX: &str = "\
define amdgpu_ps void @ps(<8 x i32> inreg %t, <4 x i32> inreg %s, i32 inreg %prim, <2 x float> %unused_sample, <2 x float> %pc) {
  %i = extractelement <2 x float> %pc, i32 0
  %j = extractelement <2 x float> %pc, i32 1
  %u1 = call float @llvm.amdgcn.interp.p1(float %i, i32 0, i32 0, i32 %prim)
  %u = call float @llvm.amdgcn.interp.p2(float %u1, float %j, i32 0, i32 0, i32 %prim)
  %v1 = call float @llvm.amdgcn.interp.p1(float %i, i32 1, i32 0, i32 %prim)
  %v = call float @llvm.amdgcn.interp.p2(float %v1, float %j, i32 1, i32 0, i32 %prim)
  %c = call <4 x float> @llvm.amdgcn.image.sample.2d.v4f32.f32(i32 15, float %u, float %v, <8 x i32> %t, <4 x i32> %s, i1 false, i32 0, i32 0)
  %r = extractelement <4 x float> %c, i32 0
  %g = extractelement <4 x float> %c, i32 1
  %b = extractelement <4 x float> %c, i32 2
  %a = extractelement <4 x float> %c, i32 3
  call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float %r, float %g, float %b, float %a, i1 true, i1 true)
  ret void
}
declare float @llvm.amdgcn.interp.p1(float, i32, i32, i32)
declare float @llvm.amdgcn.interp.p2(float, float, i32, i32, i32)
declare <4 x float> @llvm.amdgcn.image.sample.2d.v4f32.f32(i32, float, float, <8 x i32>, <4 x i32>, i1, i32, i32)
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
";

pub const PS_TEX_GLSL: &str = "#version 450
layout(location = 0) in vec4 col;
layout(set = 0, binding = 0) uniform sampler2D tex;
layout(location = 0) out vec4 o;
void main() { o = texture(tex, col.xy); }
";
