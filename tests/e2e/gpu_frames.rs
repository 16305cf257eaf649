//! GPU-drawn frames through the user's commands: `aps5 build` ports the GPU display fixtures
//! (`gpu_clear`, `gpu_triangle`, `gpu_depth`, `gpu_mesh`, `gpu_texture`, `gpu_compute_image`,
//! `gpu_draws10k`: display buffers registered with libSceVideoOut, drawn into with libSceAgc
//! draws, flipped with `sceVideoOutSubmitFlip` and with the flip command in the command
//! buffer), `aps5 run --headless --frames DIR` runs them on the Vulkan device
//! (lavapipe when there is no GPU) with the Khronos validation layer on, and every frame PNG
//! is compared pixel by pixel with the same scene written in GLSL, compiled by
//! glslangValidator and drawn by `aps5_vulkan::reference` on the same device (its validation
//! layer on too): every channel within 1/255 (2/255 where a texture is filtered bilinearly),
//! and the drawn shape covers the same pixels.

use std::path::Path;

use aps5_vulkan::graphics::{Blend, VertexAttribute};
use aps5_vulkan::reference::{self, Scene};
use aps5_vulkan::{Gpu, GpuOptions, vk};

use crate::common::*;

const W: u32 = 256;
const H: u32 = 144;

const FULLSCREEN_VS: &str = "#version 450
void main() {
    int v = gl_VertexIndex;
    gl_Position = vec4(v == 1 ? 3.0 : -1.0, v == 2 ? 3.0 : -1.0, 0.5, 1.0);
}
";

const TRIANGLE_VS: &str = "#version 450
layout(location = 0) out vec4 col;
void main() {
    int v = gl_VertexIndex;
    vec2 p = v == 0 ? vec2(-0.75, -0.5) : v == 1 ? vec2(0.5, -0.25) : vec2(-0.5, 0.75);
    p.x += float(gl_InstanceIndex) * 0.25;
    gl_Position = vec4(p, 0.5, 1.0);
    col = vec4(v == 0 ? 1.0 : 0.0, v == 1 ? 1.0 : 0.0, v >= 2 ? 1.0 : 0.0, 0.5);
}
";

const COLOR_FS: &str = "#version 450
layout(location = 0) in vec4 col;
layout(location = 0) out vec4 o;
void main() { o = col; }
";

/// The fixtures' clear colour (tests/fixtures/gpu_triangle/main.c).
const CLEAR: [f32; 4] = [0.2, 0.4, 0.6, 1.0];

fn solid_fs(c: [f32; 4]) -> String {
    format!(
        "#version 450\nlayout(location = 0) out vec4 o;\nvoid main() {{ o = vec4({:?}, {:?}, {:?}, {:?}); }}\n",
        c[0], c[1], c[2], c[3]
    )
}

fn gpu() -> Gpu {
    Gpu::new(&GpuOptions {
        validation: true,
        ..GpuOptions::from_env()
    })
    .unwrap_or_else(|e| panic!("Vulkan device with the validation layer: {e}"))
}

/// Ports the fixture and runs it headless with its frames in `frames`; returns stdout.
fn run_frames(name: &str, tmp: &Path, frames: &Path) -> String {
    let dump = tmp.join(name);
    aps5_sdk::build_dump(
        &aps5_sdk::fixtures_dir().join(name),
        &dump,
        &aps5_sdk::DumpOptions { ps4: false },
    )
    .unwrap_or_else(|e| panic!("building {name}: {e:#}"));
    init_with_cache_beside(&dump);
    ok(&dump, &["-q", "build"]);
    let status = ok(&dump, &["status"]);
    assert!(
        status.contains("0 bound to unimplemented stubs"),
        "{status}"
    );
    let out = aps5()
        .arg("-C")
        .arg(&dump)
        .arg("run")
        .arg("--headless")
        .arg("--frames")
        .arg(frames)
        .env("APS5_VK_VALIDATION", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let want =
        std::fs::read_to_string(aps5_sdk::fixtures_dir().join(name).join("expect.stdout")).unwrap();
    assert_eq!(stdout, want, "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        !stderr.to_lowercase().contains("validation"),
        "the validation layer spoke: {stderr}"
    );
    stdout
}

/// Decodes a frame PNG: its RGB bytes (W x H).
fn frame(p: &Path) -> Vec<u8> {
    let file = std::fs::File::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut dec = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut buf = vec![0; dec.output_buffer_size().expect("frame size fits memory")];
    let info = dec.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (W, H), "{}", p.display());
    assert_eq!(info.color_type, png::ColorType::Rgb, "{}", p.display());
    buf.truncate(info.buffer_size());
    buf
}

/// Pixel by pixel: every channel within `tol`; `shape` pixels (those the reference drew
/// differently from `background`) are the same set in both pictures. Returns how many
/// pixels the shape covers and the largest channel difference seen.
fn compare(
    what: &str,
    got_rgb: &[u8],
    want_rgba: &[u8],
    background: [u8; 3],
    tol: u8,
) -> (usize, u8) {
    assert_eq!(got_rgb.len() / 3, want_rgba.len() / 4, "{what}: sizes");
    let mut bad = Vec::new();
    let mut shape = 0;
    let mut max = 0;
    for (i, (g, w)) in got_rgb
        .chunks_exact(3)
        .zip(want_rgba.chunks_exact(4))
        .enumerate()
    {
        let w = &w[..3];
        let (gb, wb) = (g == background, w == background);
        if !wb {
            shape += 1;
        }
        let d = g
            .iter()
            .zip(w)
            .map(|(a, b)| a.abs_diff(*b))
            .max()
            .unwrap_or(0);
        max = max.max(d);
        if d > tol || gb != wb {
            bad.push((i as u32 % W, i as u32 / W, g.to_vec(), w.to_vec()));
        }
    }
    assert!(
        bad.is_empty(),
        "{what}: {} of {} pixels differ (x, y, got, reference; first five): {:?}",
        bad.len(),
        W * H,
        &bad[..bad.len().min(5)]
    );
    (shape, max)
}

fn to8(c: [f32; 4]) -> [u8; 3] {
    [0, 1, 2].map(|i| (c[i] * 255.0).round() as u8)
}

#[test]
fn gpu_cleared_frames_flip_to_png_and_match_glsl() {
    let tmp = tempfile::tempdir().unwrap();
    let frames = tmp.path().join("frames");
    run_frames("gpu_clear", tmp.path(), &frames);
    let g = gpu();
    // Frame 0 flipped by sceVideoOutSubmitFlip, frame 1 by the command buffer's flip.
    for (n, c) in [(0, [0.2, 0.4, 0.6, 1.0]), (1, [1.0, 0.8, 0.0, 1.0])] {
        let got = frame(&frames.join(format!("frame-{n:05}.png")));
        let mut sc = Scene::new(W, H, FULLSCREEN_VS, &solid_fs(c));
        sc.clear = [0.0, 0.0, 0.0, 1.0];
        sc.draws = vec![reference::Draw::vertices(3)];
        let want = reference::render(&g, &sc).unwrap_or_else(|e| panic!("reference: {e}"));
        // The background here is black: the whole frame is "shape".
        let (covered, _) = compare(&format!("gpu_clear frame {n}"), &got, &want, [0, 0, 0], 1);
        assert_eq!(covered, (W * H) as usize, "frame {n} not covered");
        assert!(got.chunks_exact(3).all(|p| p == to8(c)), "frame {n}");
    }
    assert!(
        !frames.join("frame-00002.png").exists(),
        "two flips, two frames"
    );
}

#[test]
fn gpu_triangle_frames_opaque_and_blended_match_glsl() {
    let tmp = tempfile::tempdir().unwrap();
    let frames = tmp.path().join("frames");
    run_frames("gpu_triangle", tmp.path(), &frames);
    let g = gpu();
    for (n, blend, instances) in [(0, false, 1), (1, true, 2)] {
        let got = frame(&frames.join(format!("frame-{n:05}.png")));
        let mut sc = Scene::new(W, H, TRIANGLE_VS, COLOR_FS);
        // The fixture clears with a full-screen draw of this colour; here it is the
        // reference's clear value (the same UNORM conversion).
        sc.clear = CLEAR;
        if blend {
            sc.blend = Blend::ALPHA;
        }
        let mut d = reference::Draw::vertices(3);
        d.instances = instances;
        sc.draws = vec![d];
        let want = reference::render(&g, &sc).unwrap_or_else(|e| panic!("reference: {e}"));
        let (covered, _) = compare(
            &format!("gpu_triangle frame {n} (blend={blend}, x{instances})"),
            &got,
            &want,
            to8(CLEAR),
            1,
        );
        assert!(
            covered > 2000,
            "frame {n}: the triangle covers {covered} pixels"
        );
        eprintln!("gpu_triangle frame {n}: {covered} triangle pixels, all within 1/255");
    }
}

/// tests/fixtures/gpu_depth/shaders/depth_vs.ll in GLSL.
const DEPTH_VS: &str = "#version 450
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

/// tests/fixtures/gpu_mesh/shaders/mesh_vs.ll in GLSL (vertex attributes instead of a V#).
const MESH_VS: &str = "#version 450
layout(location = 0) in vec4 pos;
layout(location = 1) in vec4 c;
layout(location = 0) out vec4 col;
void main() { gl_Position = pos; col = c; }
";

/// The fixture's frame 0 against `sc` (its clear the fixtures' colour), every channel within
/// `tol`; the shape's pixels and the largest difference.
fn one_frame(name: &str, sc: Scene, tol: u8) -> (usize, u8) {
    frames_of(name, sc, tol, 1)
}

/// Runs the fixture, which flips `n` frames of the same scene; compares each with `sc`.
fn frames_of(name: &str, mut sc: Scene, tol: u8, n: usize) -> (usize, u8) {
    let tmp = tempfile::tempdir().unwrap();
    let frames = tmp.path().join("frames");
    run_frames(name, tmp.path(), &frames);
    assert!(
        !frames.join(format!("frame-{n:05}.png")).exists(),
        "{n} flips, {n} frames"
    );
    sc.clear = CLEAR;
    let want = reference::render(&gpu(), &sc).unwrap_or_else(|e| panic!("reference: {e}"));
    let mut worst = (usize::MAX, 0);
    for i in 0..n {
        let got = frame(&frames.join(format!("frame-{i:05}.png")));
        let (covered, max) = compare(&format!("{name} frame {i}"), &got, &want, to8(CLEAR), tol);
        worst = (worst.0.min(covered), worst.1.max(max));
    }
    worst
}

#[test]
fn gpu_depth_frame_matches_glsl_with_a_depth_buffer() {
    let mut sc = Scene::new(W, H, DEPTH_VS, COLOR_FS);
    sc.depth = true;
    let mut d = reference::Draw::vertices(3);
    d.instances = 2;
    sc.draws = vec![d];
    let (covered, _) = one_frame("gpu_depth", sc, 1);
    assert!(covered > 2000, "the triangles cover {covered} pixels");
    eprintln!("gpu_depth frame 0: {covered} triangle pixels, all within 1/255");
}

#[test]
fn gpu_mesh_frame_matches_glsl_with_a_vertex_buffer() {
    // tests/fixtures/gpu_mesh/main.c's VERTICES and INDICES.
    let verts: [[f32; 8]; 5] = [
        [0.0, 0.1, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0],
        [-0.8, 0.0, 0.5, 1.0, 1.0, 0.0, 0.0, 1.0],
        [0.0, -0.7, 0.5, 1.0, 0.0, 1.0, 0.0, 1.0],
        [0.9, 0.2, 0.5, 1.0, 0.0, 0.0, 1.0, 1.0],
        [-0.1, 0.8, 0.5, 1.0, 1.0, 1.0, 0.0, 1.0],
    ];
    let mut sc = Scene::new(W, H, MESH_VS, COLOR_FS);
    sc.vertices = verts
        .iter()
        .flatten()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    sc.vertex_stride = 32;
    sc.vertex_attributes = (0..2)
        .map(|i| VertexAttribute {
            location: i,
            binding: 0,
            format: vk::Format::R32G32B32A32_SFLOAT,
            offset: 16 * i,
        })
        .collect();
    sc.indices = vec![0, 1, 2, 0, 2, 3, 0, 3, 4, 0, 4, 1];
    sc.draws = vec![reference::Draw::vertices(12)];
    let (covered, _) = one_frame("gpu_mesh", sc, 1);
    assert!(covered > 5000, "the mesh covers {covered} pixels");
    eprintln!("gpu_mesh frame 0: {covered} mesh pixels, all within 1/255");
}

/// tests/fixtures/gpu_texture/shaders/quad_vs.ll in GLSL: the rectangle and texture
/// coordinates from push constants instead of user SGPRs. `which` picks the texture.
const QUAD_VS: &str = "#version 450
layout(push_constant) uniform P { vec4 rect; vec2 uv1; int which; } p;
layout(location = 0) out vec4 uv;
void main() {
    bool right = (gl_VertexIndex & 1) != 0, bottom = (gl_VertexIndex & 2) != 0;
    gl_Position = vec4(right ? p.rect.z : p.rect.x, bottom ? p.rect.w : p.rect.y, 0.5, 1.0);
    uv = vec4(right ? p.uv1.x : 0.0, bottom ? p.uv1.y : 0.0, 0.0, 1.0);
}
";

/// One quad of the GLSL scenes: pixel rectangle [x0, x1) x [y0, y1), coordinates 0..u1,
/// 0..v1, texture `which`, converted to clip space as the fixtures do (x / 128 - 1,
/// y / 72 - 1 in f32).
fn quad_draw(r: [i32; 4], u1: f32, v1: f32, which: i32) -> reference::Draw {
    let mut push = Vec::new();
    for v in [
        r[0] as f32 / 128.0 - 1.0,
        r[1] as f32 / 72.0 - 1.0,
        r[2] as f32 / 128.0 - 1.0,
        r[3] as f32 / 72.0 - 1.0,
        u1,
        v1,
    ] {
        push.extend(v.to_le_bytes());
    }
    push.extend(which.to_le_bytes());
    push.extend(0u32.to_le_bytes());
    let mut d = reference::Draw::vertices(4);
    d.push_constants = push;
    d
}

/// A texture of the GLSL scene from its texel function (R, G, B, A bytes).
fn texture(
    w: u32,
    h: u32,
    texel: impl Fn(u32, u32) -> [u8; 4],
    filter: vk::Filter,
    address: vk::SamplerAddressMode,
) -> reference::Texture {
    let data = (0..h)
        .flat_map(|y| (0..w).map(move |x| (x, y)))
        .flat_map(|(x, y)| texel(x, y))
        .collect();
    reference::Texture {
        width: w,
        height: h,
        format: vk::Format::R8G8B8A8_UNORM,
        data,
        sampler: aps5_vulkan::SamplerDesc {
            mag_filter: filter,
            min_filter: filter,
            address: [address; 3],
            border: vk::BorderColor::FLOAT_TRANSPARENT_BLACK,
            max_lod_256: 0,
        },
    }
}

#[test]
fn gpu_texture_frame_linear_and_tiled_textures_match_glsl() {
    // tests/fixtures/gpu_texture/main.c's texel functions and quads. The fixture stores A as
    // B, G, R, A bytes read through DST_SEL Z, Y, X, W, and tiles B (SW_4KB_S) and C
    // (SW_64KB_S) itself; here they are plain RGBA rows.
    let a = |x: u32, y: u32| {
        [
            (4 * x + 2) as u8,
            (6 * y) as u8,
            (250 - 3 * x - 2 * y) as u8,
            255,
        ]
    };
    let b = |x: u32, y: u32| {
        let g = if ((x >> 3) ^ (y >> 3)) & 1 != 0 {
            230
        } else {
            20
        };
        [(3 * x) as u8, g, (5 * y) as u8, 255]
    };
    let c = |x: u32, y: u32| {
        let r = if (x >> 2) & 1 != 0 { 240 } else { 40 };
        [r, (7 * x) as u8, (10 * y) as u8, 255]
    };
    let fs = "#version 450
layout(push_constant) uniform P { vec4 rect; vec2 uv1; int which; } p;
layout(location = 0) in vec4 uv;
layout(set = 0, binding = 0) uniform sampler2D a;
layout(set = 0, binding = 1) uniform sampler2D b;
layout(set = 0, binding = 2) uniform sampler2D c;
layout(location = 0) out vec4 o;
void main() {
    vec4 ta = texture(a, uv.xy), tb = texture(b, uv.xy), tc = texture(c, uv.xy);
    o = p.which == 0 ? ta : p.which == 1 ? tb : tc;
}
";
    let mut sc = Scene::new(W, H, QUAD_VS, fs);
    sc.topology = vk::PrimitiveTopology::TRIANGLE_STRIP;
    sc.push_constant_bytes = 32;
    use vk::{Filter, SamplerAddressMode as Am};
    sc.textures = vec![
        texture(48, 40, a, Filter::LINEAR, Am::CLAMP_TO_EDGE),
        texture(80, 48, b, Filter::NEAREST, Am::REPEAT),
        texture(136, 24, c, Filter::NEAREST, Am::MIRRORED_REPEAT),
    ];
    sc.draws = vec![
        quad_draw([8, 9, 104, 117], 1.0, 1.0, 0),
        quad_draw([112, 9, 240, 81], 1.6, 1.5, 1),
        quad_draw([112, 90, 240, 135], 1.0, 1.875, 2),
    ];
    // Bilinear filtering (quad A) may round differently in the driver's sampler and the
    // reference's by a step: 2/255, as drivers/gpu/tests/draw.rs allows.
    let (covered, max) = one_frame("gpu_texture", sc, 2);
    // 96 x 108 + 128 x 72 + 128 x 45 pixels.
    assert_eq!(covered, 96 * 108 + 128 * 72 + 128 * 45, "the quads' pixels");
    eprintln!(
        "gpu_texture frame 0: {} pixels compared, {covered} textured, largest difference {max}/255",
        W * H
    );
}

#[test]
fn gpu_compute_image_frame_matches_glsl_computing_the_picture() {
    // The picture of tests/fixtures/gpu_compute_image/shaders/picture.ll, computed per pixel
    // from the texel the point-sampled quad shows (two pixels a texel).
    let fs = "#version 450
layout(location = 0) in vec4 uv;
layout(location = 0) out vec4 o;
void main() {
    ivec2 t = clamp(ivec2(floor(uv.xy * 64.0)), ivec2(0), ivec2(63));
    int dx = t.x - 32, dy = t.y - 32;
    uint r = uint(4 * t.x + 17) & 255u, g = uint(4 * t.y) & 255u;
    uint b = ((uint(dx * dx + dy * dy) >> 6) & 1u) != 0u ? 240u : 16u;
    o = vec4(float(r), float(g), float(b), 255.0) / 255.0;
}
";
    let mut sc = Scene::new(W, H, QUAD_VS, fs);
    sc.topology = vk::PrimitiveTopology::TRIANGLE_STRIP;
    sc.push_constant_bytes = 32;
    sc.draws = vec![quad_draw([64, 8, 192, 136], 1.0, 1.0, 0)];
    let (covered, max) = one_frame("gpu_compute_image", sc, 1);
    assert_eq!(covered, 128 * 128, "the picture's pixels");
    eprintln!(
        "gpu_compute_image frame 0: {} pixels compared, {covered} of the picture, largest difference {max}/255",
        W * H
    );
}

#[test]
fn gpu_draws10k_frame_matches_the_grid_in_glsl() {
    // tests/fixtures/gpu_draws10k/main.c's rect() and colour(), from the instance index: one
    // instanced draw rasterizes its 10,000 rectangles in the order of the fixture's draws.
    let vs = "#version 450
layout(location = 0) flat out vec4 col;
void main() {
    int i = gl_InstanceIndex % 100, j = gl_InstanceIndex / 100;
    float x0 = -1.0 + float(5 * i + 4) / 256.0, y0 = -1.0 + float(9 * j + 8) / 512.0;
    bool right = (gl_VertexIndex & 1) != 0, bottom = (gl_VertexIndex & 2) != 0;
    gl_Position = vec4(right ? x0 + 12.0 / 256.0 : x0, bottom ? y0 + 48.0 / 512.0 : y0, 0.5, 1.0);
    col = vec4(float(i * 13 % 256) / 255.0, float(j * 29 % 256) / 255.0,
               (i + j) % 2 != 0 ? 1.0 : 60.0 / 255.0, 1.0);
}
";
    let fs = "#version 450
layout(location = 0) flat in vec4 col;
layout(location = 0) out vec4 o;
void main() { o = col; }
";
    let mut sc = Scene::new(W, H, vs, fs);
    sc.topology = vk::PrimitiveTopology::TRIANGLE_STRIP;
    let mut d = reference::Draw::vertices(4);
    d.instances = 10_000;
    sc.draws = vec![d];
    // Frame 2 redraws the grid over a CPU clear with the same commands.
    let (covered, max) = frames_of("gpu_draws10k", sc, 1, 2);
    assert!(covered > 30_000, "the grid covers {covered} pixels");
    eprintln!(
        "gpu_draws10k frames 0 and 1: {} pixels compared each, {covered} of the grid, largest difference {max}/255",
        W * H
    );
}
