//! Textures in the PS5's swizzle modes, drawn end to end on the local Vulkan device (lavapipe
//! here) with the validation layer on: pipe/bank-XOR modes (SW_64KB_R_X, SW_64KB_S_X,
//! SW_4KB_S_X, SW_64KB_D_X) and a non-XOR one (SW_64KB_D), elements of 1, 4, 8 and 16 bytes
//! and BC1 blocks, each image a chain of 4 levels of which the T# view takes level 1 or 2,
//! levels 1..=2, or all four with the quad minifying to level 1 (nearest-level mip
//! filtering). The guest's texels are placed at the byte offsets AMD addrlib gives
//! (tests/data/texture_modes_addresses.txt, made by the local oracle tests/data/README.md
//! describes), not by the driver's own layout code, and the quad a llc-compiled PS samples
//! from the texture is compared pixel by pixel with GLSL `texture()` sampling the same level's
//! texels: every channel within 2/255.

mod guest;

use aps5_agc::generated::reg;
use aps5_gpu::Executor;
use aps5_gpu::vulkan::reference::{self, Scene};
use aps5_gpu::vulkan::{Gpu, GpuOptions, SamplerDesc, vk};
use guest::*;

/// The guest memory of a draw, and where in it the texture goes (64 KiB aligned: the XOR
/// modes keep the pipe/bank bits in the base address below that).
const MEM: usize = 0x20_0000;
const TEX_FROM: usize = 0x1_0000;

/// One texture of the address file: its mode, element size, size in elements, levels and
/// pipe/bank XOR, and (level, x, y, offset) for every element of the levels it lists.
struct Case {
    name: String,
    sw_mode: u32,
    element_bytes: u32,
    width: u32,
    height: u32,
    levels: u32,
    xor: u32,
    elements: Vec<(u32, u32, u32, u64)>,
}

fn cases() -> Vec<Case> {
    let text = include_str!("data/texture_modes_addresses.txt");
    let mut out: Vec<Case> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let n = |i: usize| f[i].parse::<u64>().unwrap();
        match f[0] {
            "T" => out.push(Case {
                name: f[1].to_string(),
                sw_mode: n(2) as u32,
                element_bytes: n(3) as u32 / 8,
                width: n(4) as u32,
                height: n(5) as u32,
                levels: n(6) as u32,
                xor: n(7) as u32,
                elements: Vec::new(),
            }),
            "A" => {
                out.last_mut()
                    .unwrap()
                    .elements
                    .push((n(1) as u32, n(2) as u32, n(3) as u32, n(4)))
            }
            other => panic!("address file: {other}"),
        }
    }
    out
}

/// How a case's elements are stored and what the GLSL side samples.
#[derive(Clone, Copy)]
enum Kind {
    Rgba8,
    Rgba16Float,
    R8,
    Bc1,
    Rgba32Float,
}

/// The GFX10 FORMAT of a kind, and the host format the reference samples.
fn formats(k: Kind) -> (u32, vk::Format) {
    match k {
        Kind::Rgba8 => (56, vk::Format::R8G8B8A8_UNORM),
        Kind::Rgba16Float => (71, vk::Format::R32G32B32A32_SFLOAT),
        Kind::R8 => (1, vk::Format::R8G8B8A8_UNORM),
        Kind::Bc1 => (169, vk::Format::BC1_RGBA_UNORM_BLOCK),
        Kind::Rgba32Float => (77, vk::Format::R32G32B32A32_SFLOAT),
    }
}

/// Channel values of texel (x, y) of level `m` in 1/255 steps: smooth in x and y, so
/// bilinear filtering of nearly equal coordinates gives nearly equal colours, and different
/// per level.
fn texel(x: u32, y: u32, m: u32) -> [u8; 4] {
    [
        (x * 3 + 7 * m) as u8,
        (y * 5 + 40 * m) as u8,
        (250 - x - y * 2) as u8,
        (255 - 30 * m) as u8,
    ]
}

/// A BC1 block per block position: two end colours from the position, a fixed index pattern
/// (every block its own, so a misplaced one shows).
fn bc1_block(x: u32, y: u32, m: u32) -> [u8; 8] {
    let c0 = ((x * 3) & 31) << 11 | ((y * 5 + m * 9) & 63) << 5 | 31;
    let c1 = ((x + y) & 31) << 11 | 7 << 5 | ((x * 2) & 31);
    let (c0, c1) = (c0.max(c1 + 1) as u16, c0.min(c1) as u16);
    let mut b = [0u8; 8];
    b[..2].copy_from_slice(&c0.to_le_bytes());
    b[2..4].copy_from_slice(&c1.to_le_bytes());
    b[4..].copy_from_slice(&[0x1B, 0xE4, 0x4E, 0xB1]);
    b
}

/// The guest bytes of element (x, y) of level `m`.
fn element(k: Kind, x: u32, y: u32, m: u32) -> Vec<u8> {
    let t = texel(x, y, m);
    match k {
        Kind::Rgba8 => t.to_vec(),
        Kind::R8 => vec![t[0]],
        Kind::Bc1 => bc1_block(x, y, m).to_vec(),
        Kind::Rgba16Float => t.iter().flat_map(|&c| half(c).to_le_bytes()).collect(),
        Kind::Rgba32Float => t
            .iter()
            .flat_map(|&c| (c as f32 / 255.0).to_le_bytes())
            .collect(),
    }
}

/// c / 255 as an IEEE half (rounded to nearest; the reference gets the same value back).
fn half(c: u8) -> u16 {
    if c == 0 {
        return 0;
    }
    let v = c as f32 / 255.0;
    let e = v.log2().floor() as i32;
    let m = ((v / 2f32.powi(e) - 1.0) * 1024.0).round() as u32;
    let (e, m) = if m == 1024 { (e + 1, 0) } else { (e, m) };
    ((e + 15) as u16) << 10 | m as u16
}

fn half_value(h: u16) -> f32 {
    if h == 0 {
        return 0.0;
    }
    let e = (h >> 10) as i32 - 15;
    (1.0 + (h & 0x3FF) as f32 / 1024.0) * 2f32.powi(e)
}

/// The reference's texels of level `m` (`w` x `h` elements) in its host format.
fn reference_level(k: Kind, w: u32, h: u32, m: u32) -> Vec<u8> {
    let mut out = Vec::new();
    for y in 0..h {
        for x in 0..w {
            let t = texel(x, y, m);
            match k {
                Kind::Rgba8 => out.extend(t),
                Kind::R8 => out.extend([t[0], 0, 0, 255]),
                Kind::Bc1 => out.extend(bc1_block(x, y, m)),
                Kind::Rgba16Float => {
                    out.extend(t.iter().flat_map(|&c| half_value(half(c)).to_le_bytes()))
                }
                Kind::Rgba32Float => {
                    out.extend(t.iter().flat_map(|&c| (c as f32 / 255.0).to_le_bytes()))
                }
            }
        }
    }
    out
}

fn gpu() -> Gpu {
    Gpu::new(&GpuOptions {
        validation: true,
        ..GpuOptions::from_env()
    })
    .unwrap_or_else(|e| panic!("Vulkan device with the validation layer: {e}"))
}

/// One textured draw of `c` viewed as levels `view`; the target's pixels.
fn run(
    ex: &mut Executor,
    vs: &Compiled,
    ps: &Compiled,
    c: &Case,
    k: Kind,
    view: (u32, u32),
    mip_filter: u32,
) -> Result<Vec<u8>, String> {
    let mut mem = Pages::new(MEM);
    let base = mem.addr();
    // The first 64 KiB boundary past TEX_FROM.
    let tex_at = ((base as usize + TEX_FROM).next_multiple_of(0x1_0000)) - base as usize;
    let b = mem.bytes();
    b[CODE_VS..CODE_VS + vs.code.len()].copy_from_slice(&vs.code);
    b[CODE_PS..CODE_PS + ps.code.len()].copy_from_slice(&ps.code);
    for px in b[TARGET..TARGET + (W * H * 4) as usize].chunks_exact_mut(4) {
        px.copy_from_slice(&CLEAR);
    }
    b[tex_at..].fill(0xEE);
    for &(m, x, y, off) in &c.elements {
        let e = element(k, x, y, m);
        let at = tex_at + off as usize;
        b[at..at + e.len()].copy_from_slice(&e);
    }
    let mut dcb = state_packets(base, vs, ps, false);
    let tex = (base + tex_at as u64) | ((c.xor as u64) << 8);
    let block = if matches!(k, Kind::Bc1) { 4 } else { 1 };
    let (w1, h1) = (c.width * block - 1, c.height * block - 1);
    let (format, _) = formats(k);
    // SQ_IMG_RSRC_WORD0..7: base (with the pipe/bank XOR), FORMAT, size in texels, DST_SEL
    // XYZW, BASE_LEVEL/LAST_LEVEL, SW_MODE, TYPE 2D (9); WORD5 MAX_MIP.
    let t = [
        (tex >> 8) as u32,
        ((tex >> 40) as u32 & 0xFF) | format << 20 | (w1 & 3) << 30,
        (w1 >> 2) | h1 << 14,
        4 | 5 << 3 | 6 << 6 | 7 << 9 | view.0 << 12 | view.1 << 16 | c.sw_mode << 20 | 9 << 28,
        0,
        (c.levels - 1) << 4,
        0,
        0,
    ];
    // SQ_IMG_SAMP_WORD0..3: CLAMP_LAST_TEXEL on x, y, z; MAX_LOD 15.0; bilinear; MIP_FILTER.
    let s = [
        2 | 2 << 3 | 2 << 6,
        15 << 8 << 12,
        1 << 20 | 1 << 22 | mip_filter << 26,
        0,
    ];
    let mut put = |r: u32, v: u32| dcb.extend(set(r, v));
    for (i, w) in t.iter().chain(&s).enumerate() {
        put(reg::SPI_SHADER_USER_DATA_PS_0 + i as u32, *w);
    }
    // Twelve user SGPRs; the primitive mask follows them.
    put(
        reg::SPI_SHADER_PGM_RSRC2_PS,
        (ps.get(reg::SPI_SHADER_PGM_RSRC2_PS) & !(0x1F << 1)) | 12 << 1,
    );
    dcb.extend(pkt3(IT_INDEX_TYPE, &[0]));
    let idx = base + INDEX_AT as u64;
    for (i, v) in [0u16, 1, 2, 2, 1, 3].iter().enumerate() {
        mem.bytes()[INDEX_AT + 2 * i..INDEX_AT + 2 * i + 2].copy_from_slice(&v.to_le_bytes());
    }
    dcb.extend(pkt3(
        IT_DRAW_INDEX_2,
        &[6, idx as u32, (idx >> 32) as u32, 6, 0],
    ));
    submit_graphics(ex, &mut mem, &dcb, vs, ps, None)?;
    Ok(mem.bytes()[TARGET..TARGET + (W * H * 4) as usize].to_vec())
}

/// Pixel-by-pixel: every channel within `tol` and no pixel covered in one picture only.
fn compare(what: &str, got: &[u8], want: &[u8], tol: u8) {
    assert_eq!(got.len(), want.len());
    let mut bad = Vec::new();
    let mut covered = 0;
    for (i, (g, w)) in got.chunks_exact(4).zip(want.chunks_exact(4)).enumerate() {
        if w != CLEAR {
            covered += 1;
        }
        if g.iter().zip(w).any(|(a, b)| a.abs_diff(*b) > tol) || ((g == CLEAR) != (w == CLEAR)) {
            bad.push((i as u32 % W, i as u32 / W, g.to_vec(), w.to_vec()));
        }
    }
    assert!(
        covered > 100,
        "{what}: the reference covers {covered} pixels only"
    );
    assert!(
        bad.is_empty(),
        "{what}: {} of {} pixels differ (first: {:?})",
        bad.len(),
        W * H,
        &bad[..bad.len().min(5)]
    );
}

/// GLSL `texture()` on a single-level `tw` x `th`-texel texture holding level `m`'s texels,
/// bilinear and clamped as the guest's S#.
fn reference_render(ex: &Executor, kind: Kind, tw: u32, th: u32, m: u32) -> Vec<u8> {
    let block = if matches!(kind, Kind::Bc1) { 4 } else { 1 };
    let (_, host) = formats(kind);
    let mut sc = Scene::new(W, H, VS_QUAD_GLSL, PS_TEX_GLSL);
    sc.clear = CLEAR.map(|c| c as f32 / 255.0);
    sc.indices = vec![0, 1, 2, 2, 1, 3];
    sc.draws = vec![reference::Draw::vertices(6)];
    sc.textures = vec![reference::Texture {
        width: tw,
        height: th,
        format: host,
        data: reference_level(kind, tw.div_ceil(block), th.div_ceil(block), m),
        sampler: SamplerDesc {
            mag_filter: vk::Filter::LINEAR,
            min_filter: vk::Filter::LINEAR,
            address: [vk::SamplerAddressMode::CLAMP_TO_EDGE; 3],
            border: vk::BorderColor::FLOAT_TRANSPARENT_BLACK,
            max_lod_256: 0,
        },
    }];
    reference::render(ex.gpu(), &sc).unwrap_or_else(|e| panic!("reference: {e}"))
}

#[test]
fn xor_swizzled_mip_levels_match_glsl() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    let (vs, ps) = (llc(VS_QUAD), llc(PS_TEX));
    let mut ex = Executor::new(gpu());
    // (case, element kind, the view's BASE_LEVEL..=LAST_LEVEL, the level the quad samples).
    let kinds = [
        ("r_x_rgba8", Kind::Rgba8, (1, 1), 1),
        // Levels 1..=2 from the mip tail, sampled with the nearest level (the quad magnifies
        // level 1, so the GLSL side needs that level only).
        ("s_x_rgba16f", Kind::Rgba16Float, (1, 2), 1),
        ("s_x4k_r8", Kind::R8, (1, 1), 1),
        ("d_x_bc1", Kind::Bc1, (1, 1), 1),
        ("d_rgba32f", Kind::Rgba32Float, (2, 2), 2),
        // All 4 levels of an 80x72 image on the 40x36-pixel quad: LOD 1, so the nearest
        // level is 1 (only its texels are placed; the others hold filler).
        ("r_x_minified", Kind::Rgba8, (0, 3), 1),
    ];
    let cases = cases();
    // The last case is the trilinear one's.
    assert_eq!(cases.len(), kinds.len() + 1);
    for (c, (name, kind, view, sampled)) in cases.iter().zip(kinds) {
        assert_eq!(c.name, name);
        let what = format!(
            "{name}: SW_MODE {}, {}-byte elements, level {} of {}, XOR {:#x}",
            c.sw_mode, c.element_bytes, view.0, c.levels, c.xor
        );
        // MIP_FILTER 1 (point).
        let got =
            run(&mut ex, &vs, &ps, c, kind, view, 1).unwrap_or_else(|e| panic!("{what}: {e}"));
        // The sampled level as the sampler sees it (halved, rounded down).
        let block = if matches!(kind, Kind::Bc1) { 4 } else { 1 };
        let (tw, th) = ((c.width * block) >> sampled, (c.height * block) >> sampled);
        let want = reference_render(&ex, kind, tw, th, sampled);
        compare(&what, &got, &want, 2);
    }
    assert_eq!(ex.stats().draws as usize, kinds.len());
}

#[test]
fn linear_mip_filtering_blends_the_two_nearest_levels_as_glsl_does() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    let (vs, ps) = (llc(VS_QUAD), llc(PS_TEX));
    let mut ex = Executor::new(gpu());
    let c = cases().pop().unwrap();
    assert_eq!(c.name, "d_x_trilinear");
    // 113 texels across the 40-pixel quad (36 down its 36): LOD log2(113 / 40) = 1.498, so
    // MIP_FILTER linear (2) takes level 1 and level 2 about half and half. Only those two
    // levels' texels are placed.
    let got = run(&mut ex, &vs, &ps, &c, Kind::Rgba8, (0, 3), 2).unwrap_or_else(|e| panic!("{e}"));
    let f = (113f64 / 40.0).log2() - 1.0;
    let one = reference_render(&ex, Kind::Rgba8, 113 >> 1, 36 >> 1, 1);
    let two = reference_render(&ex, Kind::Rgba8, 113 >> 2, 36 >> 2, 2);
    let want: Vec<u8> = one
        .iter()
        .zip(&two)
        .map(|(&a, &b)| (a as f64 * (1.0 - f) + b as f64 * f).round() as u8)
        .collect();
    compare("SW_64KB_D_X, levels 1 and 2 blended", &got, &want, 2);
    // And the nearest level alone (point) is level 1: a different picture.
    let point = run(&mut ex, &vs, &ps, &c, Kind::Rgba8, (0, 3), 1).unwrap();
    compare("SW_64KB_D_X, point mip filter", &point, &one, 2);
    assert!(got.iter().zip(&point).any(|(a, b)| a.abs_diff(*b) > 8));
}

#[test]
fn an_xor_base_or_mip_filter_the_driver_cannot_honour_fails_naming_the_field() {
    if !tools() {
        eprintln!("skipped: llc-14 / llvm-objcopy-14 / glslangValidator missing");
        return;
    }
    let (vs, ps) = (llc(VS_QUAD), llc(PS_TEX));
    let mut ex = Executor::new(gpu());
    let mut c = cases().swap_remove(1);
    // MIP_FILTER 3 (point, aniso-adjusted) between the two levels of the view.
    let e = run(&mut ex, &vs, &ps, &c, Kind::Rgba16Float, (1, 2), 3).unwrap_err();
    assert!(
        e.contains("MIP_FILTER = 3") && e.contains("texture binding 0"),
        "{e}"
    );
    // A base address with bit 12 set below its 64 KiB block: no pipe/bank bit.
    c.xor = 0x10;
    let e = run(&mut ex, &vs, &ps, &c, Kind::Rgba16Float, (1, 2), 1).unwrap_err();
    assert!(
        e.contains("BASE_ADDRESS") && e.contains("texture binding 0"),
        "{e}"
    );
}

#[test]
fn texture_levels_upload_and_read_back_level_by_level() {
    use aps5_gpu::vulkan::{ImageDesc, ImageKind};
    let g = gpu();
    // RGBA8 13x7: levels 13x7, 6x3, 3x1, 1x1; BC1 20x12: 5x3, 3x2 and 2x1 blocks.
    for (format, w, h, levels, bytes) in [
        (vk::Format::R8G8B8A8_UNORM, 13, 7, 4, (91 + 18 + 3 + 1) * 4),
        (
            vk::Format::BC1_RGBA_UNORM_BLOCK,
            20,
            12,
            3,
            (15 + 6 + 2) * 8,
        ),
    ] {
        let desc = ImageDesc {
            width: w,
            height: h,
            format,
            kind: ImageKind::Texture,
        };
        let img = g.create_texture_levels(&desc, levels).unwrap();
        assert_eq!(img.host_bytes(), bytes, "{format:?}");
        let data: Vec<u8> = (0..bytes).map(|i| (i * 7 + i / 251) as u8).collect();
        g.upload_image(&img, &data).unwrap();
        // Another upload between, so the staging buffers hold other bytes at the readback.
        let other = g.create_texture_levels(&desc, levels).unwrap();
        g.upload_image(&other, &vec![0x5A; bytes]).unwrap();
        assert_eq!(g.read_image(&img).unwrap(), data, "{format:?}");
        // One level past the full chain (13 -> 4 levels, 20 -> 5) is refused.
        let full = 32 - w.max(h).leading_zeros();
        assert!(g.create_texture_levels(&desc, full).is_ok());
        let e = g.create_texture_levels(&desc, full + 1).err().unwrap();
        assert!(e.to_string().contains("mip levels"), "{e}");
    }
    g.check_validation().unwrap();
}
