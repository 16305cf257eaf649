//! Pixel shaders that sample textures (MIMG `image_sample`, `_lz`, `_l`): LLVM IR shaders
//! compiled by llc-14 for gfx1030 (wave32 and wave64), translated, validated by spirv-val and
//! drawn on Vulkan (lavapipe in CI) with a bound texture next to the same scene whose fragment
//! shader is GLSL (glslangValidator). The texture plan (where each T#/S# comes from) is checked
//! against what the IR says, and a T# the trace cannot name is refused at the offset
//! llvm-objdump gives.

#[path = "graphics/support.rs"]
mod support;

use aps5_shader::translate::abi::push;
use aps5_shader::translate::validate::spirv_val;
use aps5_shader::translate::{DescSource, Options, PixelState, Translation, translate_pixel};
use aps5_vulkan::reference::{self, Draw, Scene, Texture, compile_glsl};
use aps5_vulkan::{SamplerDesc, vk};
use support::{Compiled, Regs, llc_src, objdump_offset_of, tools};

const W: u32 = 32;
const H: u32 = 32;

fn src(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/texture")
        .join(format!("{name}.ll"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// PS state from llc's `.AMDGPU.config` (RSRC1/2, SPI_PS_INPUT_ENA/ADDR) with `user` user
/// SGPRs, input n reading VS param n, mrt0 32_ABGR.
fn ps_state(r: &Regs, c: &Compiled, wave64: bool, user: u32) -> PixelState {
    let cfg = |reg: &str| c.config.get(&r.offset(reg)).copied().unwrap_or(0);
    let mut cntl = [0u32; 32];
    for (n, v) in cntl.iter_mut().enumerate() {
        *v = r.set("SPI_PS_INPUT_CNTL_0", "OFFSET", n as u32);
    }
    let rsrc2 = cfg("SPI_SHADER_PGM_RSRC2_PS");
    let (lo, bits) = r.field("SPI_SHADER_PGM_RSRC2_PS", "USER_SGPR");
    PixelState {
        pgm_rsrc1: cfg("SPI_SHADER_PGM_RSRC1_PS"),
        pgm_rsrc2: (rsrc2 & !(((1 << bits) - 1) << lo))
            | r.set("SPI_SHADER_PGM_RSRC2_PS", "USER_SGPR", user),
        wave64,
        input_ena: cfg("SPI_PS_INPUT_ENA"),
        input_addr: cfg("SPI_PS_INPUT_ADDR"),
        input_cntl: cntl,
        col_format: r.set(
            "SPI_SHADER_COL_FORMAT",
            "COL0_EXPORT_FORMAT",
            r.enum_value("SPI_SHADER_EX_FORMAT", "SPI_SHADER_32_ABGR"),
        ),
        z_format: 0,
        mrt_types: 0,
    }
}

fn opts() -> Options {
    Options {
        loop_limit: 1 << 16,
        ..Default::default()
    }
}

fn translate(name: &str, wave64: bool, user: u32) -> (String, Translation) {
    let r = Regs::load();
    let s = src(name);
    let c = llc_src(name, &s, wave64);
    let st = ps_state(&r, &c, wave64, user);
    let t = translate_pixel(&c.code, &st, &opts())
        .unwrap_or_else(|e| panic!("{name} (wave64 {wave64}): {e}"));
    if let Err(e) = spirv_val(&t.spirv) {
        panic!("{name}: spirv-val: {e}");
    }
    (s, t)
}

/// The quad: uv from -0.25 to 1.25 across the target (so clamping and wrapping show).
const VS: &str = r#"#version 450
layout(location = 0) out vec4 uv;
void main() {
    vec2 c = vec2(gl_VertexIndex & 1, (gl_VertexIndex >> 1) & 1);
    uv = vec4(c * 1.5 - 0.25, 0.0, 1.0);
    gl_Position = vec4(c * 2.0 - 1.0, 0.0, 1.0);
}
"#;

/// A texture whose texels differ in every channel (hashed), so a wrong texel, filter or
/// channel shows.
fn texture(size: u32, sampler: SamplerDesc) -> Texture {
    let data = (0..size * size)
        .flat_map(|i| {
            let h = i.wrapping_mul(2_654_435_761).rotate_left(7);
            [
                h as u8,
                (h >> 8) as u8,
                (h >> 16) as u8,
                128 | (h >> 24) as u8,
            ]
        })
        .collect();
    Texture {
        width: size,
        height: size,
        format: vk::Format::R8G8B8A8_UNORM,
        data,
        sampler,
    }
}

/// `record`: the device address of the pixel stage's record (abi::push::PIXEL_RECORD).
fn scene(fs_glsl: &str, tex: Texture, record: u64) -> Scene {
    let mut s = Scene::new(W, H, VS, fs_glsl);
    s.topology = vk::PrimitiveTopology::TRIANGLE_STRIP;
    s.push_constant_bytes = push::GRAPHICS_SIZE;
    s.textures = vec![tex];
    let mut push = vec![0u8; push::GRAPHICS_SIZE as usize];
    let at = push::PIXEL_RECORD as usize;
    push[at..at + 8].copy_from_slice(&record.to_le_bytes());
    s.draws = vec![Draw {
        push_constants: push,
        ..Draw::vertices(4)
    }];
    s
}

fn samplers() -> Vec<(&'static str, u32, SamplerDesc)> {
    let nearest_linear = SamplerDesc {
        mag_filter: vk::Filter::LINEAR,
        min_filter: vk::Filter::NEAREST,
        // Without a maxLod above 0 the LOD clamps to 0 and always picks the mag filter.
        max_lod_256: 4 << 8,
        ..SamplerDesc::NEAREST_CLAMP
    };
    vec![
        ("nearest clamp 4x4", 4, SamplerDesc::NEAREST_CLAMP),
        ("linear repeat 4x4", 4, SamplerDesc::LINEAR_REPEAT),
        // Minified (1.875 texels a pixel, LOD 0.9): LOD > 0 picks the NEAREST min filter;
        // wrong (e.g. zero) derivatives would give LOD < 0 and the LINEAR mag filter. The
        // size keeps pixel centres off texel centres, where both filters would agree.
        ("min nearest / mag linear 40x40", 40, nearest_linear),
    ]
}

fn gpu() -> Option<aps5_vulkan::Gpu> {
    tools()?;
    match aps5_vulkan::Gpu::new(&aps5_vulkan::GpuOptions::from_env()) {
        Ok(g) => Some(g),
        Err(e) => {
            eprintln!("SKIP: no Vulkan device: {e}");
            None
        }
    }
}

/// Max channel difference, after checking that every pixel was drawn.
fn max_diff(name: &str, ours: &[u8], want: &[u8]) -> u8 {
    assert_eq!(ours.len(), want.len(), "{name}");
    let d = ours
        .iter()
        .zip(want)
        .map(|(a, b)| a.abs_diff(*b))
        .max()
        .unwrap_or(0);
    let distinct: std::collections::BTreeSet<&[u8]> = want.chunks(4).collect();
    assert!(distinct.len() > 4, "{name}: the reference picture is flat");
    d
}

fn draw_case(gpu: &aps5_vulkan::Gpu, ll: &str, fs_glsl: &str) {
    let vs = compile_glsl("vert", VS).unwrap();
    // The pixel stage's record: user SGPRs s0..s11 hold some T#/S# words (the translated
    // module does not read them: the binding stands for them).
    let mut record = gpu
        .create_buffer(u64::from(push::PIXEL_RECORD_BYTES))
        .unwrap();
    let words: Vec<u8> = (0..12u32)
        .flat_map(|k| (0x1000 + k).to_le_bytes())
        .collect();
    record.write(0, &words).unwrap();
    for wave64 in [false, true] {
        let (_, ps) = translate(ll, wave64, 12);
        for (what, size, sampler) in samplers() {
            let sc = scene(fs_glsl, texture(size, sampler), record.device_address());
            let want = reference::render(gpu, &sc).unwrap();
            let ours = reference::render_spirv(gpu, &sc, &vs, &ps.spirv).unwrap();
            let name = format!("{ll} wave64 {wave64} {what}");
            let d = max_diff(&name, &ours, &want);
            eprintln!("{name}: max channel difference {d}");
            assert!(d <= 1, "{name}: max channel difference {d}");
        }
    }
}

#[test]
fn image_sample_draws_match_glsl_texture() {
    let Some(gpu) = gpu() else { return };
    draw_case(
        &gpu,
        "ps_sample",
        r#"#version 450
layout(set = 0, binding = 0) uniform sampler2D tex;
layout(location = 0) in vec4 uv;
layout(location = 0) out vec4 o;
void main() { o = texture(tex, uv.xy); }
"#,
    );
}

#[test]
fn image_sample_lz_and_l_with_dmask_subsets_match_glsl_texture_lod() {
    let Some(gpu) = gpu() else { return };
    draw_case(
        &gpu,
        "ps_sample_lod",
        r#"#version 450
layout(set = 0, binding = 0) uniform sampler2D tex;
layout(location = 0) in vec4 uv;
layout(location = 0) out vec4 o;
void main() {
    vec4 a = textureLod(tex, uv.xy, 0.0);
    o = vec4(a.r, 0.25, a.b, a.a);
}
"#,
    );
}

#[test]
fn the_texture_plan_names_user_data_and_pointer_tables_to_any_depth() {
    if tools().is_none() {
        return;
    }
    for wave64 in [false, true] {
        let (s, t) = translate("ps_sample", wave64, 12);
        let at = objdump_offset_of(&s, "image_sample");
        assert_eq!(t.meta.textures.len(), 1);
        let b = &t.meta.textures[0];
        assert_eq!(b.binding, 0);
        assert_eq!(b.image, DescSource::UserData { sgpr: 0 });
        assert_eq!(b.sampler, DescSource::UserData { sgpr: 8 });
        assert_eq!(b.sites, vec![at]);

        // Both instructions of ps_sample_lod use one (T#, S#): one binding, two sites.
        let (_, t) = translate("ps_sample_lod", wave64, 12);
        assert_eq!(t.meta.textures.len(), 1);
        assert_eq!(t.meta.textures[0].sites.len(), 2);

        // s[0:1] -> +16: pointer -> +0x40: T#, +0x60: S# (what the IR's GEPs say).
        let (s, t) = translate("ps_table", wave64, 2);
        let inner = DescSource::Memory {
            pointer: Box::new(DescSource::UserData { sgpr: 0 }),
            offset: 16,
        };
        assert_eq!(t.meta.textures.len(), 1);
        let b = &t.meta.textures[0];
        assert_eq!(
            b.image,
            DescSource::Memory {
                pointer: Box::new(inner.clone()),
                offset: 0x40
            }
        );
        assert_eq!(
            b.sampler,
            DescSource::Memory {
                pointer: Box::new(inner),
                offset: 0x60
            }
        );
        assert_eq!(b.sites, vec![objdump_offset_of(&s, "image_sample")]);
    }
}

#[test]
fn a_t_sharp_from_a_vector_register_or_after_a_branch_is_refused_with_its_offset() {
    if tools().is_none() {
        return;
    }
    let r = Regs::load();
    // T# word 0 from an interpolated value: llc makes a waterfall loop (v_readfirstlane).
    let s = src("ps_sample").replace(
        "%r = call <4 x float> @llvm.amdgcn.image.sample.2d.v4f32.f32(i32 15, float %u, float %v, <8 x i32> %t,",
        "%k = fptoui float %u to i32\n  %t2 = insertelement <8 x i32> %t, i32 %k, i32 0\n  \
         %r = call <4 x float> @llvm.amdgcn.image.sample.2d.v4f32.f32(i32 15, float %u, float %v, <8 x i32> %t2,",
    );
    assert!(s.contains("%t2"));
    let c = llc_src("vgpr_tsharp", &s, false);
    let st = ps_state(&r, &c, false, 12);
    let e = translate_pixel(&c.code, &st, &opts()).expect_err("a T# from a VGPR must be refused");
    let at = objdump_offset_of(&s, "image_sample") as usize;
    assert_eq!(e.offset, Some(at), "{e}");
    assert!(e.inst.starts_with("image_sample"), "{e}");
    assert!(e.reason.contains("T#"), "{e}");

    // An implicit-LOD sample behind a branch on a per-pixel value: the host's derivatives
    // would not be the quad's.
    let s = src("ps_sample").replace(
        "  %r = call <4 x float> @llvm.amdgcn.image.sample.2d",
        "  %c = fcmp ogt float %u, 0.5\n  br i1 %c, label %yes, label %no\n\
         no:\n  call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float 0.0, float 0.0, float 0.0, float 1.0, i1 true, i1 true)\n  ret void\n\
         yes:\n  %r = call <4 x float> @llvm.amdgcn.image.sample.2d",
    );
    let c = llc_src("branch", &s, false);
    let st = ps_state(&r, &c, false, 12);
    let e = translate_pixel(&c.code, &st, &opts()).expect_err("a sample after a branch");
    assert_eq!(
        e.offset,
        Some(objdump_offset_of(&s, "image_sample") as usize),
        "{e}"
    );
    assert!(e.reason.contains("derivatives"), "{e}");
}
