//! Swizzled colour and depth targets, drawn end to end on the local Vulkan device (lavapipe
//! here) with the validation layer on. The guest bytes are placed and read back at the byte
//! offsets AMD addrlib gives (tests/data/tiled_targets_addresses.txt, every element of six
//! 136x20 surfaces: SW_64KB_R_X and SW_64KB_S_X RGBA8, SW_64KB_Z_X with 4- and 2-byte
//! elements, and level 0 of 3-level SW_64KB_R_X and SW_64KB_Z_X (2-byte) chains, each with a
//! pipe/bank XOR in its base address), never by the driver's own layout code, and the pictures are compared pixel by pixel with the same scene in GLSL.

mod guest;

use std::collections::HashMap;

use aps5_agc::generated::enums::{CompareFrag, ZFormat};
use aps5_agc::generated::{reg, ty};
use aps5_gpu::Executor;
use aps5_gpu::vulkan::reference::{self, Scene};
use aps5_gpu::vulkan::{Gpu, GpuOptions, vk};
use guest::*;

/// The targets' size: 136 RGBA8 texels are two 128-wide SW_64KB_*_X blocks across.
const TW: u32 = 136;
const TH: u32 = 20;
/// Guest memory; the tiled surfaces start at the first 64 KiB boundary past `TILED_FROM`.
const MEM: usize = 0x8_0000;
const TILED_FROM: usize = 0x1_0000;
/// The depth surface, this far past the colour one (a colour chain takes four 64 KiB blocks,
/// a depth surface two at most).
const DEPTH_AFTER: usize = 0x4_0000;
/// What the bytes of the blocks hold that no element maps to: they must survive.
const COLOR_PAD: u8 = 0x5A;
const DEPTH_PAD: u8 = 0xA5;

/// A strip covering the whole target from VertexID; param0 = (x, y, 1 - x, 0.5) in 0..1.
const VS_FULL: &str = "\
define amdgpu_vs void @vs(i32 inreg %s0, i32 %vid, i32 %u1, i32 %u2, i32 %iid) {
  %xb = and i32 %vid, 1
  %yb = lshr i32 %vid, 1
  %xf = uitofp i32 %xb to float
  %yf = uitofp i32 %yb to float
  %x2 = fmul float %xf, 2.0
  %x = fadd float %x2, -1.0
  %y2 = fmul float %yf, 2.0
  %y = fadd float %y2, -1.0
  call void @llvm.amdgcn.exp.f32(i32 12, i32 15, float %x, float %y, float 0.5, float 1.0, i1 true, i1 false)
  %ix = fsub float 1.0, %xf
  call void @llvm.amdgcn.exp.f32(i32 32, i32 15, float %xf, float %yf, float %ix, float 0.5, i1 false, i1 false)
  ret void
}
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
";

/// One surface of the address file: mode, element size, size, pipe/bank XOR and the byte
/// offset of every element from the block-aligned base, by (x, y).
struct Surf {
    sw_mode: u32,
    bpe: usize,
    /// Levels of the chain (level 0 is the one listed and rendered).
    levels: u32,
    xor: u64,
    offsets: Vec<usize>,
}

impl Surf {
    fn at(&self, x: u32, y: u32) -> usize {
        self.offsets[(y * TW + x) as usize]
    }
    /// Bytes of the blocks the surface covers.
    fn span(&self) -> usize {
        (self.offsets.iter().max().unwrap() + 1).next_multiple_of(0x1_0000)
    }
}

fn surfaces() -> HashMap<String, Surf> {
    let text = include_str!("data/tiled_targets_addresses.txt");
    let mut out = HashMap::new();
    let mut name = String::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let n = |i: usize| f[i].parse::<u64>().unwrap();
        match f[0] {
            "T" => {
                assert_eq!((n(4), n(5)), (TW as u64, TH as u64), "{line}");
                name = f[1].to_string();
                out.insert(
                    name.clone(),
                    Surf {
                        sw_mode: n(2) as u32,
                        bpe: n(3) as usize / 8,
                        levels: n(6) as u32,
                        xor: n(7) << 8,
                        offsets: vec![usize::MAX; (TW * TH) as usize],
                    },
                );
            }
            "A" => {
                assert_eq!(n(1), 0, "{line}");
                let s = out.get_mut(&name).unwrap();
                s.offsets[(n(3) * TW as u64 + n(2)) as usize] = n(4) as usize;
            }
            other => panic!("address file: {other}"),
        }
    }
    assert!(
        out.values()
            .all(|s| s.offsets.iter().all(|&o| o != usize::MAX))
    );
    out
}

fn gpu() -> Gpu {
    Gpu::new(&GpuOptions {
        validation: true,
        ..GpuOptions::from_env()
    })
    .unwrap_or_else(|e| panic!("Vulkan device with the validation layer: {e}"))
}

/// Where the tiled surfaces lie in `mem` (offsets from its start).
fn tiled_at(mem: &Pages) -> (usize, usize) {
    let base = mem.addr() as usize;
    let c = (base + TILED_FROM).next_multiple_of(0x1_0000) - base;
    (c, c + DEPTH_AFTER)
}

/// Registers that make colour target 0 the tiled `s` at `addr` (XOR in the base), TW x TH,
/// with the viewport and scissors to match.
fn color_target_packets(addr: u64, s: &Surf, w: u32, h: u32) -> Vec<u32> {
    let a = addr | s.xor;
    let mut c = Vec::new();
    let mut put = |r: u32, v: u32| c.extend(set(r, v));
    put(reg::CB_COLOR0_BASE, (a >> 8) as u32);
    put(reg::CB_COLOR0_BASE_EXT, (a >> 40) as u32);
    put(
        reg::CB_COLOR0_ATTRIB2,
        ty::CbColor0Attrib2 {
            mip0_width: w - 1,
            mip0_height: h - 1,
            max_mip: s.levels - 1,
        }
        .to_raw(),
    );
    put(
        reg::CB_COLOR0_ATTRIB3,
        ty::CbColor0Attrib3 {
            color_sw_mode: s.sw_mode,
            resource_type: u32::from(s.sw_mode != 0), // 2D
            ..Default::default()
        }
        .to_raw(),
    );
    c.extend(viewport_packets(w, h));
    c
}

fn viewport_packets(w: u32, h: u32) -> Vec<u32> {
    let mut c = Vec::new();
    let mut put = |r: u32, v: u32| c.extend(set(r, v));
    let half = |v: u32| (v as f32 / 2.0).to_bits();
    put(reg::PA_CL_VPORT_XSCALE, half(w));
    put(reg::PA_CL_VPORT_XOFFSET, half(w));
    put(reg::PA_CL_VPORT_YSCALE, half(h));
    put(reg::PA_CL_VPORT_YOFFSET, half(h));
    let br = ty::PaScWindowScissorBr { br_x: w, br_y: h }.to_raw();
    put(reg::PA_SC_GENERIC_SCISSOR_BR, br);
    put(reg::PA_SC_SCREEN_SCISSOR_BR, br);
    c
}

/// The depth surface `s` at `addr` (XOR in both bases), TW x TH, ZFUNC LESS / LEQUAL with
/// writes on.
fn depth_packets(addr: u64, s: &Surf, zfunc: u32) -> Vec<u32> {
    let z = addr | s.xor;
    let mut c = Vec::new();
    let mut put = |r: u32, v: u32| c.extend(set(r, v));
    put(
        reg::DB_Z_INFO,
        ty::DbZInfo {
            format: if s.bpe == 2 {
                ZFormat::Z_16
            } else {
                ZFormat::Z_32_FLOAT
            },
            sw_mode: s.sw_mode,
            maxmip: s.levels - 1,
            ..Default::default()
        }
        .to_raw(),
    );
    put(reg::DB_STENCIL_INFO, 0);
    put(reg::DB_Z_READ_BASE, (z >> 8) as u32);
    put(reg::DB_Z_READ_BASE_HI, (z >> 40) as u32);
    put(reg::DB_Z_WRITE_BASE, (z >> 8) as u32);
    put(reg::DB_Z_WRITE_BASE_HI, (z >> 40) as u32);
    put(
        reg::DB_DEPTH_SIZE_XY,
        ty::DbDepthSizeXy {
            x_max: TW - 1,
            y_max: TH - 1,
        }
        .to_raw(),
    );
    put(reg::DB_DEPTH_VIEW, 0);
    put(reg::DB_RENDER_CONTROL, 0);
    put(
        reg::DB_DEPTH_CONTROL,
        ty::DbDepthControl {
            z_enable: 1,
            z_write_enable: 1,
            zfunc,
            ..Default::default()
        }
        .to_raw(),
    );
    c
}

/// Fills the blocks of `s` at `at` with `pad`, then element (x, y) with `value(x, y)`.
fn tile_in(b: &mut [u8], at: usize, s: &Surf, pad: u8, value: impl Fn(u32, u32) -> Vec<u8>) {
    b[at..at + s.span()].fill(pad);
    for y in 0..TH {
        for x in 0..TW {
            let o = at + s.at(x, y);
            b[o..o + s.bpe].copy_from_slice(&value(x, y));
        }
    }
}

/// Element bytes of `s` at `at`, tightly packed rows (the address table's detile), after
/// checking that every byte of its blocks no element maps to still holds `pad`.
fn detile(b: &[u8], at: usize, s: &Surf, pad: u8, what: &str) -> Vec<u8> {
    let mut element = vec![false; s.span()];
    let mut out = Vec::new();
    for y in 0..TH {
        for x in 0..TW {
            let o = s.at(x, y);
            out.extend_from_slice(&b[at + o..at + o + s.bpe]);
            element[o..o + s.bpe].fill(true);
        }
    }
    let changed = (0..s.span())
        .filter(|&i| !element[i] && b[at + i] != pad)
        .count();
    assert_eq!(
        changed, 0,
        "{what}: padding bytes of the blocks were overwritten"
    );
    out
}

/// Pixel by pixel: every channel within `tol` and no pixel covered (not `clear`) in one
/// picture only; returns (pixels compared, largest channel difference).
fn compare(what: &str, got: &[u8], want: &[u8], tol: u8) -> (usize, u8) {
    assert_eq!(got.len(), want.len());
    let mut bad = Vec::new();
    let mut max = 0;
    for (i, (g, w)) in got.chunks_exact(4).zip(want.chunks_exact(4)).enumerate() {
        let d = g.iter().zip(w).map(|(a, b)| a.abs_diff(*b)).max().unwrap();
        max = max.max(d);
        if d > tol {
            bad.push((i as u32 % TW, i as u32 / TW, g.to_vec(), w.to_vec()));
        }
    }
    assert!(
        bad.is_empty(),
        "{what}: {} of {} pixels differ (first: {:?})",
        bad.len(),
        got.len() / 4,
        &bad[..bad.len().min(5)]
    );
    (got.len() / 4, max)
}

/// Depth texels one by one: D32 within `tol`, D16 within `tol` units.
fn compare_depth(what: &str, bpe: usize, got: &[u8], want: &[u8], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: depth sizes");
    let val = |c: &[u8]| match bpe {
        2 => f64::from(u16::from_le_bytes([c[0], c[1]])),
        _ => f64::from(f32::from_le_bytes(c.try_into().unwrap())),
    };
    let bad: Vec<_> = got
        .chunks_exact(bpe)
        .zip(want.chunks_exact(bpe))
        .enumerate()
        .filter(|(_, (g, w))| (val(g) - val(w)).abs() > tol)
        .map(|(i, (g, w))| (i as u32 % TW, i as u32 / TW, val(g), val(w)))
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} depth texels differ (first: {:?})",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
}

/// The GLSL scene: [`VS_DEPTH_GLSL`]'s two instances over `CLEAR` and a depth buffer cleared
/// to `clear`; (colour, depth) tightly packed.
fn depth_reference(
    g: &Gpu,
    format: vk::Format,
    clear: f32,
    op: vk::CompareOp,
) -> (Vec<u8>, Vec<u8>) {
    let mut sc = Scene::new(TW, TH, VS_DEPTH_GLSL, PS_GLSL);
    sc.clear = CLEAR.map(|c| c as f32 / 255.0);
    sc.depth = true;
    sc.depth_format = format;
    sc.depth_clear = clear;
    sc.depth_compare = op;
    sc.depth_write = true;
    let mut d = reference::Draw::vertices(3);
    d.instances = 2;
    sc.draws = vec![d];
    reference::render_with_depth(g, &sc).unwrap_or_else(|e| panic!("reference: {e}"))
}

/// Runs the two depth-tested instances into the tiled colour target `cs` and depth surface
/// `zs`, prefilled by `color(x, y)` / `depth(x, y)` (tiled by the address table); the
/// detiled colour and depth afterwards.
fn run_tiled(
    ex: &mut Executor,
    cs: &Surf,
    zs: &Surf,
    zfunc: u32,
    color: &dyn Fn(u32, u32) -> Vec<u8>,
    depth: &dyn Fn(u32, u32) -> Vec<u8>,
    what: &str,
) -> Result<(Vec<u8>, Vec<u8>), String> {
    let (vs, ps) = (llc(VS_DEPTH), llc(PS));
    let mut mem = Pages::new(MEM);
    let base = mem.addr();
    let (c_at, z_at) = tiled_at(&mem);
    let b = mem.bytes();
    b[CODE_VS..CODE_VS + vs.code.len()].copy_from_slice(&vs.code);
    b[CODE_PS..CODE_PS + ps.code.len()].copy_from_slice(&ps.code);
    tile_in(b, c_at, cs, COLOR_PAD, color);
    tile_in(b, z_at, zs, DEPTH_PAD, depth);
    let mut dcb = state_packets(base, &vs, &ps, false);
    dcb.extend(color_target_packets(base + c_at as u64, cs, TW, TH));
    dcb.extend(depth_packets(base + z_at as u64, zs, zfunc));
    dcb.extend(pkt3(IT_NUM_INSTANCES, &[2]));
    dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[3, 2]));
    submit_graphics(ex, &mut mem, &dcb, &vs, &ps, None)?;
    let b = mem.bytes();
    Ok((
        detile(b, c_at, cs, COLOR_PAD, what),
        detile(b, z_at, zs, DEPTH_PAD, what),
    ))
}

#[test]
fn a_scene_in_tiled_colour_and_depth_targets_matches_glsl() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    let s = surfaces();
    let mut ex = Executor::new(gpu());
    // (colour surface, depth surface, CPU clear of a depth texel and its value, ZFUNC, host
    // format and op, tolerance)
    let cases = [
        (
            "color_r_x",
            "depth_z_x_32",
            1.0f32.to_le_bytes().to_vec(),
            CompareFrag::FRAG_LESS,
            vk::Format::D32_SFLOAT,
            vk::CompareOp::LESS,
            1e-6,
        ),
        (
            "color_s_x",
            "depth_z_x_16",
            0xFFFFu16.to_le_bytes().to_vec(),
            CompareFrag::FRAG_LEQUAL,
            vk::Format::D16_UNORM,
            vk::CompareOp::LESS_OR_EQUAL,
            1.0,
        ),
        // Level 0 of a chain lies after the smaller levels: two blocks in for the colour
        // one, one (the mip tail's) for the depth one.
        (
            "color_r_x_chain",
            "depth_z_x_16_chain",
            0xFFFFu16.to_le_bytes().to_vec(),
            CompareFrag::FRAG_LESS,
            vk::Format::D16_UNORM,
            vk::CompareOp::LESS,
            1.0,
        ),
    ];
    for (cn, zn, fill, zfunc, format, op, tol) in cases {
        let (cs, zs) = (&s[cn], &s[zn]);
        let what = format!(
            "{cn} (SW_MODE {}, XOR {:#x}, {} levels) + {zn} (SW_MODE {}, XOR {:#x}, {} levels)",
            cs.sw_mode, cs.xor, cs.levels, zs.sw_mode, zs.xor, zs.levels
        );
        let (got, gotz) = run_tiled(
            &mut ex,
            cs,
            zs,
            zfunc,
            &|_, _| CLEAR.to_vec(),
            &|_, _| fill.clone(),
            &what,
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        let (want, wantz) = depth_reference(ex.gpu(), format, 1.0, op);
        let covered = want.chunks_exact(4).filter(|p| *p != CLEAR).count();
        assert!(
            covered > 500,
            "{what}: the reference covers {covered} pixels"
        );
        let (n, max) = compare(&what, &got, &want, 1);
        compare_depth(&what, zs.bpe, &gotz, &wantz, tol);
        eprintln!("{what}: {n} pixels, {covered} covered, max channel difference {max}");
    }
}

/// A per-texel colour the CPU fills the target with (no two neighbours alike).
fn pattern(x: u32, y: u32) -> [u8; 4] {
    [
        (x * 5 + y * 3) as u8,
        (y * 11 + x) as u8 ^ 0x40,
        (x * y) as u8,
        255,
    ]
}

/// A per-texel depth: 0.5 (the far instance at 0.75 fails, the near one at 0.25 passes) or
/// 0.875 (both pass), in a pattern that is not periodic in the blocks' bits.
fn pattern_depth(x: u32, y: u32) -> f32 {
    if (x * 7 + y * 13 + x / 5).is_multiple_of(3) {
        0.5
    } else {
        0.875
    }
}

#[test]
fn a_cpu_prefilled_tiled_surface_loads_under_the_draw() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    let s = surfaces();
    let mut ex = Executor::new(gpu());
    let (cs, zs) = (&s["color_r_x"], &s["depth_z_x_32"]);
    let what = "prefilled color_r_x + depth_z_x_32";
    let (got, gotz) = run_tiled(
        &mut ex,
        cs,
        zs,
        CompareFrag::FRAG_LESS,
        &|x, y| pattern(x, y).to_vec(),
        &|x, y| pattern_depth(x, y).to_le_bytes().to_vec(),
        what,
    )
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    // The GLSL scene over a cleared buffer gives each pixel's nearest fragment; over the
    // CPU's surfaces it shows where it is nearer than the prefilled depth.
    let (tri, triz) = depth_reference(ex.gpu(), vk::Format::D32_SFLOAT, 1.0, vk::CompareOp::LESS);
    let (mut want, mut wantz) = (Vec::new(), Vec::new());
    let (mut shown, mut hidden) = (0, 0);
    for y in 0..TH {
        for x in 0..TW {
            let i = (y * TW + x) as usize;
            let z = f32::from_le_bytes(triz[4 * i..4 * i + 4].try_into().unwrap());
            let pz = pattern_depth(x, y);
            if z < pz {
                want.extend_from_slice(&tri[4 * i..4 * i + 4]);
                wantz.extend(z.to_le_bytes());
                shown += 1;
            } else {
                want.extend(pattern(x, y));
                wantz.extend(pz.to_le_bytes());
                hidden += u32::from(z < 1.0);
            }
        }
    }
    assert!(
        shown > 300 && hidden > 50,
        "{shown} pixels drawn, {hidden} hidden"
    );
    let (n, max) = compare(what, &got, &want, 1);
    compare_depth(what, 4, &gotz, &wantz, 1e-6);
    eprintln!(
        "{what}: {n} pixels, {shown} drawn over the pattern, {hidden} hidden by it, max \
         channel difference {max}"
    );
}

#[test]
fn a_texture_in_a_tiled_targets_blocks_sees_the_draw_before_it() {
    // The span of a swizzled target is its blocks: a texture over the second block of a
    // 136-texel-wide SW_64KB_R_X target (past what its rows would cover as a linear surface)
    // is read after the draw into the target has run and been written back.
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    let s = surfaces();
    let cs = &s["color_r_x"];
    let (vs, ps, ps_tex) = (llc(VS_FULL), llc(PS), llc(PS_TEX));
    const PS_TEX_AT: usize = 0x2000;
    // The texture: 64x16 linear RGBA8 (rows of 256 bytes) over the 4 KiB page of the second
    // block holding element (128, 0).
    let (tw, th) = (64u32, 16u32);
    let mut ex = Executor::new(gpu());
    let mut mem = Pages::new(MEM);
    let base = mem.addr();
    let (c_at, _) = tiled_at(&mem);
    let tex_at = c_at + (cs.at(128, 0) & !0xFFF);
    assert!(
        tex_at >= c_at + 0x1_0000,
        "the texture is in the second block"
    );
    let b = mem.bytes();
    b[CODE_VS..CODE_VS + vs.code.len()].copy_from_slice(&vs.code);
    b[CODE_PS..CODE_PS + ps.code.len()].copy_from_slice(&ps.code);
    b[PS_TEX_AT..PS_TEX_AT + ps_tex.code.len()].copy_from_slice(&ps_tex.code);
    tile_in(b, c_at, cs, COLOR_PAD, |_, _| CLEAR.to_vec());
    let before = b[tex_at..tex_at + 0x1000].to_vec();
    // Draw 1: the whole tiled target, a gradient.
    let mut dcb = state_packets(base, &vs, &ps, false);
    dcb.extend(color_target_packets(base + c_at as u64, cs, TW, TH));
    dcb.extend(set(reg::VGT_PRIMITIVE_TYPE, 6)); // DI_PT_TRISTRIP
    dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[4, 2]));
    // Draw 2: the texture copied texel for texel (point sampling at texel centres) into a
    // 64x16 linear target.
    let lin = Surf {
        sw_mode: 0,
        bpe: 4,
        levels: 1,
        xor: 0,
        offsets: Vec::new(),
    };
    dcb.extend(color_target_packets(base + TARGET as u64, &lin, tw, th));
    let ps_at = base + PS_TEX_AT as u64;
    let tex = base + tex_at as u64;
    let (w1, h1) = (tw - 1, th - 1);
    // SQ_IMG_RSRC_WORD0..7: base, 8_8_8_8_UNORM (56), size, DST_SEL XYZW, SW_MODE 0, TYPE 2D.
    let t = [
        (tex >> 8) as u32,
        ((tex >> 40) as u32 & 0xFF) | 56 << 20 | (w1 & 3) << 30,
        (w1 >> 2) | h1 << 14,
        4 | 5 << 3 | 6 << 6 | 7 << 9 | 9 << 28,
        0,
        0,
        0,
        0,
    ];
    // SQ_IMG_SAMP_WORD0..3: CLAMP_LAST_TEXEL, point filters, MIP_FILTER none.
    let smp = [2 | 2 << 3 | 2 << 6, 0, 0, 0];
    let mut put = |r: u32, v: u32| dcb.extend(set(r, v));
    put(reg::SPI_SHADER_PGM_LO_PS, (ps_at >> 8) as u32);
    put(reg::SPI_SHADER_PGM_HI_PS, (ps_at >> 40) as u32);
    put(
        reg::SPI_SHADER_PGM_RSRC1_PS,
        ps_tex.get(reg::SPI_SHADER_PGM_RSRC1_PS),
    );
    put(
        reg::SPI_SHADER_PGM_RSRC2_PS,
        (ps_tex.get(reg::SPI_SHADER_PGM_RSRC2_PS) & !(0x1F << 1)) | 12 << 1,
    );
    put(reg::SPI_PS_INPUT_ENA, ps_tex.get(reg::SPI_PS_INPUT_ENA));
    put(reg::SPI_PS_INPUT_ADDR, ps_tex.get(reg::SPI_PS_INPUT_ADDR));
    for (i, w) in t.iter().chain(&smp).enumerate() {
        put(reg::SPI_SHADER_USER_DATA_PS_0 + i as u32, *w);
    }
    dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[4, 2]));
    submit_graphics(&mut ex, &mut mem, &dcb, &vs, &ps, None).unwrap_or_else(|e| panic!("{e}"));
    let b = mem.bytes();
    let after = b[tex_at..tex_at + 0x1000].to_vec();
    let changed = before
        .chunks_exact(4)
        .zip(after.chunks_exact(4))
        .filter(|(a, b)| a != b)
        .count();
    assert!(
        changed > 20,
        "draw 1 changed {changed} texels of the texture"
    );
    let got = b[TARGET..TARGET + 0x1000].to_vec();
    let bad = got
        .chunks_exact(4)
        .zip(after.chunks_exact(4))
        .filter(|(g, a)| g != a)
        .count();
    assert_eq!(
        bad,
        0,
        "{bad} of {} texels sampled are not the bytes draw 1 left ({changed} changed by it)",
        tw * th
    );
    assert_eq!(ex.stats().draws, 2);
}

#[test]
fn tiled_target_state_it_cannot_place_names_the_register_and_field() {
    if !tools() {
        return;
    }
    let s = surfaces();
    let (cs, zs) = (&s["color_r_x"], &s["depth_z_x_32"]);
    let (vs, ps) = (llc(VS_DEPTH), llc(PS));
    let mut ex = Executor::new(gpu());
    let mut mem = Pages::new(MEM);
    let base = mem.addr();
    let (c_at, z_at) = tiled_at(&mem);
    let b = mem.bytes();
    b[CODE_VS..CODE_VS + vs.code.len()].copy_from_slice(&vs.code);
    b[CODE_PS..CODE_PS + ps.code.len()].copy_from_slice(&ps.code);
    let (c, z) = (base + c_at as u64, base + z_at as u64);
    let color = color_target_packets(c, cs, TW, TH);
    let depth = depth_packets(z, zs, CompareFrag::FRAG_LESS);
    let attrib3 = |sw: u32, rt: u32| {
        set(
            reg::CB_COLOR0_ATTRIB3,
            ty::CbColor0Attrib3 {
                color_sw_mode: sw,
                resource_type: rt,
                ..Default::default()
            }
            .to_raw(),
        )
    };
    let z_info = |sw: u32| {
        set(
            reg::DB_Z_INFO,
            ty::DbZInfo {
                format: ZFormat::Z_32_FLOAT,
                sw_mode: sw,
                ..Default::default()
            }
            .to_raw(),
        )
    };
    for (extra, want) in [
        // SW_4KB_R_X is no 2D mode of GFX10.
        (attrib3(23, 1), "CB_COLOR0_ATTRIB3.COLOR_SW_MODE 23"),
        (attrib3(27, 2), "CB_COLOR0_ATTRIB3.RESOURCE_TYPE 2"),
        // Bit 12 below a 64 KiB block is no pipe/bank bit.
        (
            set(reg::CB_COLOR0_BASE, ((c | 0x1000) >> 8) as u32),
            "CB_COLOR0_BASE",
        ),
        // A non-XOR mode takes no bits below its block.
        (
            [
                attrib3(9, 1),
                set(reg::CB_COLOR0_BASE, ((c | 0x100) >> 8) as u32),
            ]
            .concat(),
            "CB_COLOR0_BASE",
        ),
        (
            set(
                reg::CB_COLOR0_ATTRIB2,
                ty::CbColor0Attrib2 {
                    mip0_width: TW - 1,
                    mip0_height: TH - 1,
                    max_mip: 9,
                }
                .to_raw(),
            ),
            "CB_COLOR0_ATTRIB2.MAX_MIP 9",
        ),
        // Depth takes the Z modes only (addrlib refuses the others for a depth surface).
        (z_info(27), "DB_Z_INFO.SW_MODE 27"),
        (
            set(reg::DB_Z_READ_BASE, ((z | 0x3000) >> 8) as u32),
            "DB_Z_READ_BASE",
        ),
    ] {
        let mut dcb = state_packets(base, &vs, &ps, false);
        dcb.extend(&color);
        dcb.extend(&depth);
        dcb.extend(extra);
        dcb.extend(pkt3(IT_DRAW_INDEX_AUTO, &[3, 2]));
        let e = submit_graphics(&mut ex, &mut mem, &dcb, &vs, &ps, None)
            .err()
            .unwrap_or_else(|| panic!("{want}: the draw succeeded"));
        assert!(
            e.contains(want) && e.contains("draw ") && e.contains("packet at"),
            "{want}: {e}"
        );
    }
}
