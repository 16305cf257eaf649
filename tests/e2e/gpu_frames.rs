//! GPU-drawn frames through the user's commands: `aps5 build` ports the `gpu_clear` and
//! `gpu_triangle` fixtures (display buffers registered with libSceVideoOut, drawn into with
//! libSceAgc draws, flipped with `sceVideoOutSubmitFlip` and with the flip command in the
//! command buffer), `aps5 run --headless --frames DIR` runs them on the Vulkan device
//! (lavapipe when there is no GPU) with the Khronos validation layer on, and every frame PNG
//! is compared pixel by pixel with the same scene written in GLSL, compiled by
//! glslangValidator and drawn by `aps5_vulkan::reference` on the same device (its validation
//! layer on too): every channel within 1/255, and the drawn shape covers the same pixels.

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
/// pixels the shape covers.
fn compare(what: &str, got_rgb: &[u8], want_rgba: &[u8], background: [u8; 3], tol: u8) -> usize {
    assert_eq!(got_rgb.len() / 3, want_rgba.len() / 4, "{what}: sizes");
    let mut bad = Vec::new();
    let mut shape = 0;
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
        if g.iter().zip(w).any(|(a, b)| a.abs_diff(*b) > tol) || gb != wb {
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
    shape
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
        let covered = compare(&format!("gpu_clear frame {n}"), &got, &want, [0, 0, 0], 1);
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
        let covered = compare(
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

/// The fixture's frame 0 against `sc` (its clear the fixtures' colour); the shape's pixels.
fn one_frame(name: &str, mut sc: Scene) -> usize {
    let tmp = tempfile::tempdir().unwrap();
    let frames = tmp.path().join("frames");
    run_frames(name, tmp.path(), &frames);
    assert!(
        !frames.join("frame-00001.png").exists(),
        "one flip, one frame"
    );
    let got = frame(&frames.join("frame-00000.png"));
    sc.clear = CLEAR;
    let want = reference::render(&gpu(), &sc).unwrap_or_else(|e| panic!("reference: {e}"));
    compare(&format!("{name} frame 0"), &got, &want, to8(CLEAR), 1)
}

#[test]
fn gpu_depth_frame_matches_glsl_with_a_depth_buffer() {
    let mut sc = Scene::new(W, H, DEPTH_VS, COLOR_FS);
    sc.depth = true;
    let mut d = reference::Draw::vertices(3);
    d.instances = 2;
    sc.draws = vec![d];
    let covered = one_frame("gpu_depth", sc);
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
    let covered = one_frame("gpu_mesh", sc);
    assert!(covered > 5000, "the mesh covers {covered} pixels");
    eprintln!("gpu_mesh frame 0: {covered} mesh pixels, all within 1/255");
}
