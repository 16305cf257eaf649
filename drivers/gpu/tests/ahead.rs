//! Translation ahead of the draw (docs/PACKS.md, "Translation ahead of the draw"): a pixel
//! shader "created" as `sceAgcCreateShader` does (a stored header written by
//! `aps5_agc::shader::write` with the registers the draw sets, its state predicted by
//! `aps5_agc::shader::translation_state`) starts translating on a worker; the draw that
//! follows finds it made, or translates for itself when its state differs. Pictures are
//! compared with the same scene in GLSL on the same device (lavapipe here), validation on.

mod guest;

use aps5_agc::generated::{CONTEXT_BASE, SH_BASE, reg, ty};
use aps5_agc::shader::{RegPair, ShaderDesc, ShaderType};
use aps5_gpu::vulkan::reference::{self, Scene};
use aps5_gpu::vulkan::{Gpu, GpuOptions, vk};
use aps5_gpu::{Executor, ShaderState, Stats};
use guest::*;

const VS_TRI_GLSL: &str = "#version 450
layout(location = 0) out vec4 col;
void main() {
    int v = gl_VertexIndex;
    vec2 p = v == 0 ? vec2(-0.75, -0.5) : v == 1 ? vec2(0.5, -0.25) : vec2(-0.5, 0.75);
    p.x += float(gl_InstanceIndex) * 0.25;
    gl_Position = vec4(p, 0.5, 1.0);
    col = vec4(v == 0 ? 1.0 : 0.0, v == 1 ? 1.0 : 0.0, v >= 2 ? 1.0 : 0.0, 0.5);
}
";

fn gpu() -> Gpu {
    Gpu::new(&GpuOptions {
        validation: true,
        ..GpuOptions::from_env()
    })
    .unwrap_or_else(|e| panic!("Vulkan device with the validation layer: {e}"))
}

/// The state `sceAgcCreateShader` predicts for `ps` from a stored header holding the
/// registers `state_packets` sets for the draw, with SPI_SHADER_COL_FORMAT `col_format`.
fn predicted(ps: &Compiled, col_format: u32) -> ShaderState {
    let sh = |r: u32, v: u32| RegPair {
        offset: r - SH_BASE,
        value: v,
    };
    let cx = |r: u32, v: u32| RegPair {
        offset: r - CONTEXT_BASE,
        value: v,
    };
    let header = aps5_agc::shader::write(&ShaderDesc {
        shader_type: ShaderType::Ps,
        code_size: ps.code.len() as u32,
        scratch_dw_per_thread: 0,
        target: 0,
        context_registers: vec![
            cx(reg::SPI_PS_INPUT_ENA, ps.get(reg::SPI_PS_INPUT_ENA)),
            cx(reg::SPI_PS_INPUT_ADDR, ps.get(reg::SPI_PS_INPUT_ADDR)),
            cx(reg::SPI_PS_INPUT_CNTL_0, 0),
            cx(
                reg::SPI_PS_IN_CONTROL,
                ty::SpiPsInControl {
                    num_interp: 1,
                    ps_w32_en: 1,
                    ..Default::default()
                }
                .to_raw(),
            ),
            cx(reg::SPI_SHADER_COL_FORMAT, col_format),
            cx(reg::SPI_SHADER_Z_FORMAT, 0),
        ],
        sh_registers: vec![
            sh(reg::SPI_SHADER_PGM_LO_PS, 0),
            sh(reg::SPI_SHADER_PGM_HI_PS, 0),
            sh(
                reg::SPI_SHADER_PGM_RSRC1_PS,
                ps.get(reg::SPI_SHADER_PGM_RSRC1_PS),
            ),
            sh(
                reg::SPI_SHADER_PGM_RSRC2_PS,
                ps.get(reg::SPI_SHADER_PGM_RSRC2_PS) | (1 << 1),
            ),
        ],
        specials: None,
        user_data: None,
        input_semantics: Vec::new(),
        output_semantics: Vec::new(),
    })
    .unwrap();
    let h = aps5_agc::shader::parse(&header).unwrap();
    aps5_agc::shader::translation_state(&h, aps5_agc::shader::wave64_only(&ps.code)).unwrap()
}

/// Draws the triangle (VS_TRI + PS) once and compares it with GLSL.
fn draw_and_compare(ex: &mut Executor, vs: &Compiled, ps: &Compiled) {
    let mut mem = Pages::new(0x10000);
    let b = mem.bytes();
    b[CODE_VS..CODE_VS + vs.code.len()].copy_from_slice(&vs.code);
    b[CODE_PS..CODE_PS + ps.code.len()].copy_from_slice(&ps.code);
    for px in b[TARGET..TARGET + (W * H * 4) as usize].chunks_exact_mut(4) {
        px.copy_from_slice(&CLEAR);
    }
    let mut dcb = state_packets(mem.addr(), vs, ps, false);
    dcb.extend(pkt3(IT_NUM_INSTANCES, &[1]));
    dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[3, 2]));
    submit_graphics(ex, &mut mem, &dcb, vs, ps, None).unwrap_or_else(|e| panic!("{e}"));
    let got = mem.bytes()[TARGET..TARGET + (W * H * 4) as usize].to_vec();
    let mut sc = Scene::new(W, H, VS_TRI_GLSL, PS_GLSL);
    sc.clear = CLEAR.map(|c| c as f32 / 255.0);
    sc.topology = vk::PrimitiveTopology::TRIANGLE_LIST;
    sc.draws = vec![reference::Draw::vertices(3)];
    let want = reference::render(ex.gpu(), &sc).unwrap_or_else(|e| panic!("reference: {e}"));
    let differ = got
        .chunks_exact(4)
        .zip(want.chunks_exact(4))
        .filter(|(g, w)| g.iter().zip(*w).any(|(a, b)| a.abs_diff(*b) > 1))
        .count();
    let covered = want.chunks_exact(4).filter(|w| *w != CLEAR).count();
    assert!(covered > 100, "the reference covers {covered} pixels");
    assert_eq!(differ, 0, "{differ} pixels differ from GLSL");
}

fn counts(s: &Stats) -> [u64; 5] {
    [
        s.translations,
        s.translations_on_submit_thread,
        s.translations_ahead,
        s.ahead_used,
        s.ahead_waited,
    ]
}

/// Created, then the program's CPU work (here: waiting until the worker is done), then the
/// draw: the PS comes from the worker, only the VS (headerless) is translated at the draw.
/// Identical creates (at once, and after the first was made) translate once.
#[test]
fn a_shader_created_before_the_draw_is_translated_ahead_and_used() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    let (vs, ps) = (llc(VS_TRI), llc(PS));
    let mut ex = Executor::new(gpu());
    let state = predicted(&ps, 9);
    ex.translate_ahead(ps.code.clone(), state.clone(), "PS");
    ex.translate_ahead(ps.code.clone(), state.clone(), "PS again");
    ex.wait_ahead_idle();
    ex.translate_ahead(ps.code.clone(), state, "PS once more, after it was made");
    ex.wait_ahead_idle();
    let s = ex.stats();
    assert_eq!(s.translations_ahead, 1, "{s:?}");
    draw_and_compare(&mut ex, &vs, &ps);
    let s = ex.stats();
    // [translations, on the submit thread, ahead, ahead used, waited for]
    assert_eq!(counts(&s), [2, 1, 1, 1, 0], "{s:?}");
    assert_eq!((s.pack_misses, s.draws), (2, 1), "{s:?}");
    assert_eq!(s.ahead_wait_us, 0, "{s:?}");
}

/// The header predicts another state than the draw's (another SPI_SHADER_COL_FORMAT): the
/// worker's translation is not used, the draw translates its own and the picture is right.
#[test]
fn a_draw_whose_state_differs_from_the_header_s_translates_at_the_draw() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    let (vs, ps) = (llc(VS_TRI), llc(PS));
    let mut ex = Executor::new(gpu());
    // COL0 SPI_SHADER_FP16_ABGR (5) where the draw sets 32_ABGR (9).
    ex.translate_ahead(ps.code.clone(), predicted(&ps, 5), "PS");
    ex.wait_ahead_idle();
    draw_and_compare(&mut ex, &vs, &ps);
    let s = ex.stats();
    assert_eq!(counts(&s), [3, 2, 1, 0, 0], "{s:?}");
}

/// The draw right after the create: it waits for the worker's translation or takes the
/// queued one back; either way the PS is translated once.
#[test]
fn a_draw_right_after_the_create_never_translates_twice() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    let (vs, ps) = (llc(VS_TRI), llc(PS));
    let mut ex = Executor::new(gpu());
    ex.translate_ahead(ps.code.clone(), predicted(&ps, 9), "PS");
    draw_and_compare(&mut ex, &vs, &ps);
    ex.wait_ahead_idle();
    let s = ex.stats();
    assert_eq!(s.translations, 2, "{s:?}");
    assert_eq!(
        s.translations_ahead + s.translations_on_submit_thread,
        2,
        "{s:?}"
    );
    assert_eq!(s.ahead_used, s.translations_ahead, "{s:?}");
}
