//! The graphics core against outside truth: GLSL compiled by glslangValidator, drawn on the
//! device (lavapipe in CI) with the Khronos validation layer on (any error fails the test),
//! read back and compared with values computed here from the rules the Vulkan spec states:
//! the clear values' encodings, pixel-centre coverage with the top-left rule, the LESS depth
//! test, the blend equation, nearest texel selection. Images are 32x32.

use std::sync::Arc;

use aps5_vulkan::reference::{self, Draw, Scene, Texture, compile_glsl};
use aps5_vulkan::{
    Attachment, Blend, ColorTarget, DepthAttachment, Gpu, GpuOptions, GraphicsDesc, ImageDesc,
    ImageKind, PipelinePath, Rendering, SamplerDesc, Shader, TopologyClass, VertexAttribute, vk,
};

const W: u32 = 32;
const H: u32 = 32;

fn gpu_with(whole: bool) -> Gpu {
    let mut opts = GpuOptions::from_env();
    opts.validation = true;
    opts.whole_pipelines = whole;
    let gpu = Gpu::new(&opts).expect("open Vulkan device");
    eprintln!(
        "device: {} (pipeline libraries: {})",
        gpu.info().name,
        gpu.info().pipeline_library
    );
    gpu
}

fn gpu() -> Gpu {
    gpu_with(false)
}

fn shader(gpu: &Gpu, stage: &str, src: &str) -> Arc<Shader> {
    let flags = match stage {
        "vert" => vk::ShaderStageFlags::VERTEX,
        _ => vk::ShaderStageFlags::FRAGMENT,
    };
    gpu.create_shader(flags, &compile_glsl(stage, src).unwrap())
        .unwrap()
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn px(rgba: &[u8], x: u32, y: u32) -> [u8; 4] {
    let i = ((y * W + x) * 4) as usize;
    rgba[i..i + 4].try_into().unwrap()
}

/// Renders a clear only, into a target of `format`, and returns its bytes.
fn clear_to(gpu: &Gpu, format: vk::Format, value: [f32; 4]) -> Vec<u8> {
    let img = gpu
        .create_image(&ImageDesc {
            width: W,
            height: H,
            format,
            kind: ImageKind::Color,
        })
        .unwrap();
    let mut rec = gpu.create_recorder(1).unwrap();
    let mut list = rec.begin().unwrap();
    list.begin_rendering(&Rendering {
        colors: &[Attachment {
            image: &img,
            clear: Some(value),
            resolve: None,
        }],
        depth: None,
    })
    .unwrap();
    list.end_rendering().unwrap();
    let t = list.submit().unwrap();
    rec.wait(t).unwrap();
    gpu.read_image(&img).unwrap()
}

fn srgb_encode(l: f64) -> f64 {
    if l <= 0.0031308 {
        12.92 * l
    } else {
        1.055 * l.powf(1.0 / 2.4) - 0.055
    }
}

#[test]
fn clears_write_the_exact_encoding_of_each_format() {
    let gpu = gpu();
    let all = |bytes: &[u8], texel: &[u8], what: &str| {
        assert_eq!(bytes.len(), (W * H) as usize * texel.len(), "{what} size");
        for (i, t) in bytes.chunks_exact(texel.len()).enumerate() {
            assert_eq!(t, texel, "{what} texel {i}");
        }
    };
    // UNORM8: round(v * 255); 0.2 / 0.4 / 0.6 give 51 / 102 / 153 exactly.
    let v = [0.2, 0.4, 0.6, 1.0];
    all(
        &clear_to(&gpu, vk::Format::R8G8B8A8_UNORM, v),
        &[51, 102, 153, 255],
        "RGBA8",
    );
    all(
        &clear_to(&gpu, vk::Format::B8G8R8A8_UNORM, v),
        &[153, 102, 51, 255],
        "BGRA8",
    );
    // sRGB: the stored value is the sRGB encoding of the linear clear colour (alpha linear);
    // the spec allows the conversion some error, so +-1.
    let s = clear_to(&gpu, vk::Format::R8G8B8A8_SRGB, [0.25, 0.0, 1.0, 0.6]);
    let want = [(srgb_encode(0.25) * 255.0).round() as i32, 0, 255, 153];
    for t in s.chunks_exact(4) {
        for c in 0..4 {
            assert!((t[c] as i32 - want[c]).abs() <= 1, "sRGB {t:?} vs {want:?}");
        }
    }
    // Half floats with exact encodings: 0.5 = 0x3800, -2 = 0xc000, 1024 = 0x6400, 0.25 = 0x3400.
    let h = clear_to(
        &gpu,
        vk::Format::R16G16B16A16_SFLOAT,
        [0.5, -2.0, 1024.0, 0.25],
    );
    all(
        &h,
        &[0x00, 0x38, 0x00, 0xc0, 0x00, 0x64, 0x00, 0x34],
        "RGBA16F",
    );
    let f = clear_to(&gpu, vk::Format::R32_SFLOAT, [3.25, 0.0, 0.0, 0.0]);
    all(&f, &3.25f32.to_le_bytes(), "R32F");

    // Depth: D32_SFLOAT keeps the float; the depth-stencil format too (D32S8) or within one
    // step of 2^24 - 1 (D24).
    for (format, clear) in [
        (Some(vk::Format::D32_SFLOAT), 0.375f32),
        (gpu.depth_stencil_format(), 0.25),
    ] {
        let format = format.expect("a depth-stencil format");
        let img = gpu
            .create_image(&ImageDesc {
                width: W,
                height: H,
                format,
                kind: ImageKind::Depth,
            })
            .unwrap();
        let mut rec = gpu.create_recorder(1).unwrap();
        let mut list = rec.begin().unwrap();
        list.begin_rendering(&Rendering {
            colors: &[],
            depth: Some(DepthAttachment {
                image: &img,
                clear_depth: Some(clear),
                clear_stencil: Some(7),
            }),
        })
        .unwrap();
        list.end_rendering().unwrap();
        let t = list.submit().unwrap();
        rec.wait(t).unwrap();
        let bytes = gpu.read_image(&img).unwrap();
        let texels = (W * H) as usize;
        let (depth, stencil) = bytes.split_at(4 * texels);
        // A depth-stencil image reads back its stencil plane after the depth plane.
        if format == vk::Format::D32_SFLOAT {
            assert!(stencil.is_empty());
        } else {
            assert_eq!(stencil.len(), texels, "{format:?} stencil plane");
            assert!(stencil.iter().all(|&s| s == 7), "{format:?} stencil");
        }
        for t in depth.chunks_exact(4) {
            let raw = u32::from_le_bytes(t.try_into().unwrap());
            if format == vk::Format::D24_UNORM_S8_UINT {
                let want = (clear as f64 * 16777215.0).round() as i64;
                assert!(
                    ((raw & 0xff_ffff) as i64 - want).abs() <= 1,
                    "{format:?} {raw:#x}"
                );
            } else {
                assert_eq!(f32::from_bits(raw), clear, "{format:?}");
            }
        }
    }
    gpu.check_validation().unwrap();
}

const VS_POS2: &str = r#"#version 450
layout(location = 0) in vec2 pos;
void main() { gl_Position = vec4(pos, 0.0, 1.0); }
"#;
const FS_WHITE: &str = r#"#version 450
layout(location = 0) out vec4 color;
void main() { color = vec4(1.0); }
"#;

/// Pixel-centre coverage with the top-left rule, computed in framebuffer coordinates (y down):
/// a centre is inside when it is strictly inside every edge, or exactly on an edge that is a
/// "left" edge (the inward normal points to +x) or a "top" edge (horizontal, inward normal
/// points to +y, i.e. the triangle lies below it). Exact: the vertices are on half pixels.
fn covered(tri: [(f64, f64); 3], x: u32, y: u32) -> bool {
    let p = (x as f64 + 0.5, y as f64 + 0.5);
    (0..3).all(|i| {
        let a = tri[i];
        let b = tri[(i + 1) % 3];
        let c = tri[(i + 2) % 3];
        // Edge normal (perpendicular to b - a), turned to face the third vertex.
        let mut n = (-(b.1 - a.1), b.0 - a.0);
        if n.0 * (c.0 - a.0) + n.1 * (c.1 - a.1) < 0.0 {
            n = (-n.0, -n.1);
        }
        let e = n.0 * (p.0 - a.0) + n.1 * (p.1 - a.1);
        e > 0.0 || (e == 0.0 && (n.0 > 0.0 || (n.0 == 0.0 && n.1 > 0.0)))
    })
}

#[test]
fn triangle_coverage_follows_pixel_centres_and_the_top_left_rule() {
    let gpu = gpu();
    // Vertices on pixel centres so that many centres lie exactly on edges: a slope-1/3 edge, a
    // horizontal top edge, a vertical right edge, a horizontal bottom edge.
    let tris: [[(f64, f64); 3]; 2] = [
        [(4.5, 2.5), (28.5, 10.5), (10.5, 29.5)],
        [(16.5, 16.5), (30.5, 16.5), (30.5, 30.5)],
    ];
    let mut verts = Vec::new();
    for t in &tris {
        for &(x, y) in t {
            verts.push((x / W as f64 * 2.0 - 1.0) as f32);
            verts.push((y / H as f64 * 2.0 - 1.0) as f32);
        }
    }
    let mut scene = Scene::new(W, H, VS_POS2, FS_WHITE);
    scene.vertices = f32s(&verts);
    scene.vertex_stride = 8;
    scene.vertex_attributes = vec![VertexAttribute {
        location: 0,
        binding: 0,
        format: vk::Format::R32G32_SFLOAT,
        offset: 0,
    }];
    scene.draws = vec![Draw::vertices(6)];
    let rgba = reference::render(&gpu, &scene).unwrap();
    let mut on_edge_checked = 0;
    for y in 0..H {
        for x in 0..W {
            let want = tris.iter().any(|t| covered(*t, x, y));
            let got = px(&rgba, x, y);
            let want_px = if want { [255; 4] } else { [0, 0, 0, 255] };
            assert_eq!(got, want_px, "pixel ({x}, {y})");
            let c = (x as f64 + 0.5, y as f64 + 0.5);
            if c.1 == 16.5 && (17.0..30.0).contains(&c.0)
                || c.0 == 30.5 && (17.0..30.0).contains(&c.1)
            {
                on_edge_checked += 1;
            }
        }
    }
    assert!(
        on_edge_checked > 20,
        "the scene puts centres on top and right edges"
    );
}

/// A rectangle from push constants: {x0, y0, x1, y1 (NDC), z, r, g, b, a}, drawn as a
/// 4-vertex triangle strip.
const VS_RECT: &str = r#"#version 450
layout(push_constant) uniform P { vec4 rect; float z; float pad0, pad1, pad2; vec4 color; } pc;
layout(location = 0) out vec4 v_color;
void main() {
    vec2 c = vec2((gl_VertexIndex & 1) != 0 ? pc.rect.z : pc.rect.x,
                  (gl_VertexIndex & 2) != 0 ? pc.rect.w : pc.rect.y);
    gl_Position = vec4(c, pc.z, 1.0);
    v_color = pc.color;
}
"#;
const FS_COLOR: &str = r#"#version 450
layout(location = 0) in vec4 v_color;
layout(location = 0) out vec4 color;
void main() { color = v_color; }
"#;

/// Push constants for VS_RECT, with the rectangle in pixels.
fn rect(x0: u32, y0: u32, x1: u32, y1: u32, z: f32, color: [f32; 4]) -> Vec<u8> {
    let nx = |x: u32| x as f32 / W as f32 * 2.0 - 1.0;
    let ny = |y: u32| y as f32 / H as f32 * 2.0 - 1.0;
    let mut v = vec![nx(x0), ny(y0), nx(x1), ny(y1), z, 0.0, 0.0, 0.0];
    v.extend(color);
    f32s(&v)
}

fn rect_scene(draws: Vec<Vec<u8>>) -> Scene {
    let mut scene = Scene::new(W, H, VS_RECT, FS_COLOR);
    scene.topology = vk::PrimitiveTopology::TRIANGLE_STRIP;
    scene.push_constant_bytes = 48;
    scene.draws = draws
        .into_iter()
        .map(|p| Draw {
            push_constants: p,
            ..Draw::vertices(4)
        })
        .collect();
    scene
}

#[test]
fn depth_test_less_keeps_the_nearer_surface_in_either_draw_order() {
    let gpu = gpu();
    let red = [1.0, 0.0, 0.0, 1.0];
    let green = [0.0, 1.0, 0.0, 1.0];
    let blue = [0.0, 0.0, 1.0, 1.0];
    let a = rect(0, 0, 20, 16, 0.6, red);
    let b = rect(10, 0, 32, 16, 0.3, green);
    let c = rect(0, 0, 32, 32, 0.8, blue);
    for order in [vec![a.clone(), b.clone(), c.clone()], vec![c, b, a]] {
        let mut scene = rect_scene(order);
        scene.depth = true;
        let rgba = reference::render(&gpu, &scene).unwrap();
        for y in 0..H {
            for x in 0..W {
                // Nearest (smallest z) of the rectangles covering the pixel centre.
                let want = if y < 16 && x >= 10 {
                    [0, 255, 0, 255]
                } else if y < 16 {
                    [255, 0, 0, 255]
                } else {
                    [0, 0, 255, 255]
                };
                assert_eq!(px(&rgba, x, y), want, "pixel ({x}, {y})");
            }
        }
    }
    gpu.check_validation().unwrap();
}

#[test]
fn alpha_blending_and_write_masks_follow_the_blend_equation_per_attachment() {
    for whole in [true, false] {
        eprintln!("whole pipelines: {whole}");
        blend_and_masks(&gpu_with(whole));
    }
}

fn blend_and_masks(gpu: &Gpu) {
    let fs = r#"#version 450
layout(location = 0) in vec4 v_color;
layout(location = 0) out vec4 c0;
layout(location = 1) out vec4 c1;
void main() { c0 = v_color; c1 = v_color; }
"#;
    let vs = shader(gpu, "vert", VS_RECT);
    let fs = shader(gpu, "frag", fs);
    let format = vk::Format::R8G8B8A8_UNORM;
    let mut desc = GraphicsDesc::new(vs, fs, format);
    desc.push_constant_bytes = 48;
    let mut masked = Blend::OPAQUE;
    masked.write_mask = vk::ColorComponentFlags::G | vk::ColorComponentFlags::A;
    desc.targets = vec![
        ColorTarget {
            format,
            blend: Blend::ALPHA,
        },
        ColorTarget {
            format,
            blend: masked,
        },
    ];
    let pipeline = gpu.graphics_pipeline(&desc).unwrap();
    pipeline.wait_optimized();
    eprintln!("path: {:?}", pipeline.path());
    let img = |_| {
        gpu.create_image(&ImageDesc {
            width: W,
            height: H,
            format,
            kind: ImageKind::Color,
        })
        .unwrap()
    };
    let (t0, t1) = (img(0), img(1));
    let dst = [0.0f32, 1.0, 0.2, 1.0];
    let src = [1.0f32, 0.0, 0.4, 0.2];
    let mut rec = gpu.create_recorder(1).unwrap();
    let mut list = rec.begin().unwrap();
    list.begin_rendering(&Rendering {
        colors: &[
            Attachment {
                image: &t0,
                clear: Some(dst),
                resolve: None,
            },
            Attachment {
                image: &t1,
                clear: Some(dst),
                resolve: None,
            },
        ],
        depth: None,
    })
    .unwrap();
    list.bind_pipeline(&pipeline);
    list.set_topology(vk::PrimitiveTopology::TRIANGLE_STRIP);
    list.push_constants(&rect(8, 8, 24, 24, 0.0, src)).unwrap();
    list.draw(4, 1, 0, 0).unwrap();
    list.end_rendering().unwrap();
    let t = list.submit().unwrap();
    rec.wait(t).unwrap();
    let (b0, b1) = (gpu.read_image(&t0).unwrap(), gpu.read_image(&t1).unwrap());
    // The destination as stored (UNORM8), then rgb = s * a + d * (1 - a), a = a_s + a_d (1 - a_s).
    let d8: Vec<f64> = dst
        .iter()
        .map(|&v| (v as f64 * 255.0).round() / 255.0)
        .collect();
    let a = src[3] as f64;
    let mut blended = [0u8; 4];
    for c in 0..3 {
        let v = (src[c] as f64 * a + d8[c] * (1.0 - a)) * 255.0;
        assert!(
            (v.fract() - 0.5).abs() > 0.05,
            "channel {c}: {v} rounds ambiguously"
        );
        blended[c] = v.round() as u8;
    }
    blended[3] = ((a + d8[3] * (1.0 - a)) * 255.0).round() as u8;
    let clear8 = [0u8, 255, 51, 255];
    // Target 1: no blending, only G and A written; R and B keep the clear value.
    let masked8 = [clear8[0], 0, clear8[2], (src[3] * 255.0).round() as u8];
    for y in 0..H {
        for x in 0..W {
            let inside = (8..24).contains(&x) && (8..24).contains(&y);
            let i = ((y * W + x) * 4) as usize;
            assert_eq!(
                &b0[i..i + 4],
                if inside { &blended } else { &clear8 },
                "target 0 ({x}, {y})"
            );
            assert_eq!(
                &b1[i..i + 4],
                if inside { &masked8 } else { &clear8 },
                "target 1 ({x}, {y})"
            );
        }
    }
    gpu.check_validation().unwrap();
}

#[test]
fn textured_quad_with_nearest_filtering_shows_the_uploaded_texels() {
    let gpu = gpu();
    let vs = r#"#version 450
layout(location = 0) out vec2 uv;
void main() {
    vec2 c = vec2(gl_VertexIndex & 1, (gl_VertexIndex >> 1) & 1);
    uv = c;
    gl_Position = vec4(c * 2.0 - 1.0, 0.0, 1.0);
}
"#;
    let fs = r#"#version 450
layout(set = 0, binding = 0) uniform sampler2D tex;
layout(location = 0) in vec2 uv;
layout(location = 0) out vec4 color;
void main() { color = texture(tex, uv); }
"#;
    let texel = |tx: u32, ty: u32| {
        [
            (tx * 60 + 7) as u8,
            (ty * 50 + 3) as u8,
            (tx * ty * 9) as u8,
            255 - tx as u8,
        ]
    };
    let rgba: Vec<u8> = (0..4)
        .flat_map(|ty| (0..4).flat_map(move |tx| texel(tx, ty)))
        .collect();
    let mut scene = Scene::new(W, H, vs, fs);
    scene.topology = vk::PrimitiveTopology::TRIANGLE_STRIP;
    scene.textures = vec![Texture {
        width: 4,
        height: 4,
        format: vk::Format::R8G8B8A8_UNORM,
        data: rgba,
        sampler: SamplerDesc::NEAREST_CLAMP,
    }];
    scene.draws = vec![Draw::vertices(4)];
    let out = reference::render(&gpu, &scene).unwrap();
    // Pixel centre (x + 0.5) / 32 in texel space is (x + 0.5) / 8: texel x / 8, never on a
    // texel boundary.
    for y in 0..H {
        for x in 0..W {
            assert_eq!(px(&out, x, y), texel(x / 8, y / 8), "pixel ({x}, {y})");
        }
    }
}

#[test]
fn instanced_draw_places_each_instance_from_its_own_attributes() {
    let gpu = gpu();
    let vs = r#"#version 450
layout(location = 0) in vec2 corner;   // per vertex, 0..1
layout(location = 1) in vec2 origin;   // per instance, pixels
layout(location = 2) in vec4 tint;     // per instance
layout(location = 0) out vec4 v_color;
void main() {
    vec2 p = (origin + corner * 6.0) / 32.0 * 2.0 - 1.0;
    gl_Position = vec4(p, 0.0, 1.0);
    v_color = tint;
}
"#;
    let corners = [
        0.0f32, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0,
    ];
    let inst = [
        ([2u32, 2], [1.0f32, 0.0, 0.0, 1.0]),
        ([20, 4], [0.0, 1.0, 0.0, 1.0]),
        ([5, 22], [0.0, 0.0, 1.0, 1.0]),
        ([24, 24], [1.0, 1.0, 0.0, 1.0]),
    ];
    let mut idata = Vec::new();
    for (o, c) in &inst {
        idata.extend(f32s(&[o[0] as f32, o[1] as f32]));
        idata.extend(f32s(c));
    }
    let mut scene = Scene::new(W, H, vs, FS_COLOR);
    scene.vertices = f32s(&corners);
    scene.vertex_stride = 8;
    scene.vertex_attributes = vec![VertexAttribute {
        location: 0,
        binding: 0,
        format: vk::Format::R32G32_SFLOAT,
        offset: 0,
    }];
    scene.instances = idata;
    scene.instance_stride = 24;
    scene.instance_attributes = vec![
        VertexAttribute {
            location: 1,
            binding: 1,
            format: vk::Format::R32G32_SFLOAT,
            offset: 0,
        },
        VertexAttribute {
            location: 2,
            binding: 1,
            format: vk::Format::R32G32B32A32_SFLOAT,
            offset: 8,
        },
    ];
    scene.draws = vec![Draw {
        instances: 4,
        ..Draw::vertices(6)
    }];
    let out = reference::render(&gpu, &scene).unwrap();
    for y in 0..H {
        for x in 0..W {
            let mut want = [0u8, 0, 0, 255];
            for (o, c) in &inst {
                if (o[0]..o[0] + 6).contains(&x) && (o[1]..o[1] + 6).contains(&y) {
                    want = c.map(|v| (v * 255.0) as u8);
                }
            }
            assert_eq!(px(&out, x, y), want, "pixel ({x}, {y})");
        }
    }
}

#[test]
fn indexed_draws_and_fans_cover_the_same_rectangles() {
    let gpu = gpu();
    // Four corners of a rectangle in pixels (2..14, 4..28); indices make two triangles.
    let n = |x: f32, y: f32| [x / 16.0 - 1.0, y / 16.0 - 1.0];
    let mut v = Vec::new();
    for (x, y) in [(2.0, 4.0), (14.0, 4.0), (2.0, 28.0), (14.0, 28.0)] {
        v.extend(n(x, y));
    }
    // The same shape moved right by 16 pixels, drawn as a fan (0, 1, 3, 2).
    for (x, y) in [(18.0, 4.0), (30.0, 4.0), (30.0, 28.0), (18.0, 28.0)] {
        v.extend(n(x, y));
    }
    let mut scene = Scene::new(W, H, VS_POS2, FS_WHITE);
    scene.vertices = f32s(&v);
    scene.vertex_stride = 8;
    scene.vertex_attributes = vec![VertexAttribute {
        location: 0,
        binding: 0,
        format: vk::Format::R32G32_SFLOAT,
        offset: 0,
    }];
    // Indexed list, vertices 0..4; then the fan as indices too, within a second scene below.
    scene.indices = vec![0, 1, 2, 2, 1, 3];
    scene.draws = vec![Draw::vertices(6)];
    let list = reference::render(&gpu, &scene).unwrap();
    let mut fan = scene.clone();
    fan.indices = Vec::new();
    fan.topology = vk::PrimitiveTopology::TRIANGLE_FAN;
    fan.draws = vec![Draw {
        first: 4,
        ..Draw::vertices(4)
    }];
    let fan = reference::render(&gpu, &fan).unwrap();
    for y in 0..H {
        for x in 0..W {
            let rows = (4..28).contains(&y);
            let a = rows && (2..14).contains(&x);
            let b = rows && (18..30).contains(&x);
            let on = |c: bool| if c { [255; 4] } else { [0, 0, 0, 255] };
            assert_eq!(px(&list, x, y), on(a), "indexed ({x}, {y})");
            assert_eq!(px(&fan, x, y), on(b), "fan ({x}, {y})");
        }
    }
}

/// Draws the blended-rect scene through one pipeline and returns the pixels.
fn draw_with(gpu: &Gpu, pipeline: &aps5_vulkan::GraphicsPipeline) -> Vec<u8> {
    let img = gpu
        .create_image(&ImageDesc {
            width: W,
            height: H,
            format: vk::Format::R8G8B8A8_UNORM,
            kind: ImageKind::Color,
        })
        .unwrap();
    let mut rec = gpu.create_recorder(1).unwrap();
    let mut list = rec.begin().unwrap();
    list.begin_rendering(&Rendering {
        colors: &[Attachment {
            image: &img,
            clear: Some([0.0, 0.0, 0.0, 1.0]),
            resolve: None,
        }],
        depth: None,
    })
    .unwrap();
    list.bind_pipeline(pipeline);
    list.set_topology(vk::PrimitiveTopology::TRIANGLE_STRIP);
    list.push_constants(&rect(3, 5, 29, 27, 0.0, [0.8, 0.4, 0.2, 0.6]))
        .unwrap();
    list.draw(4, 1, 0, 0).unwrap();
    list.end_rendering().unwrap();
    let t = list.submit().unwrap();
    rec.wait(t).unwrap();
    gpu.read_image(&img).unwrap()
}

#[test]
fn library_linked_optimised_and_whole_pipelines_draw_the_same_and_the_cache_shares_parts() {
    let mut pictures = Vec::new();
    for whole in [false, true] {
        let gpu = gpu_with(whole);
        let vs = shader(&gpu, "vert", VS_RECT);
        let fs = shader(&gpu, "frag", FS_COLOR);
        let mut desc = GraphicsDesc::new(vs, fs, vk::Format::R8G8B8A8_UNORM);
        desc.push_constant_bytes = 48;
        desc.targets[0].blend = Blend::ALPHA;
        let p = gpu.graphics_pipeline(&desc).unwrap();
        let again = gpu.graphics_pipeline(&desc).unwrap();
        assert!(Arc::ptr_eq(&p, &again), "a second lookup is a cache hit");
        let first = draw_with(&gpu, &p);
        eprintln!(
            "whole={whole}: path {:?}, built in {:?}",
            p.path(),
            p.build_time()
        );
        if gpu.info().pipeline_library {
            // The optimised link may already have finished.
            assert!(
                matches!(p.path(), PipelinePath::Linked { .. }),
                "{:?}",
                p.path()
            );
            p.wait_optimized();
            assert_eq!(p.path(), PipelinePath::Linked { optimized: true });
            assert_eq!(draw_with(&gpu, &p), first, "optimised link draws the same");
            // A key that differs only in blending shares three of the four libraries.
            let before = gpu.pipeline_cache_stats();
            let mut opaque = desc.clone();
            opaque.targets[0].blend = Blend::OPAQUE;
            let _o = gpu.graphics_pipeline(&opaque).unwrap();
            let after = gpu.pipeline_cache_stats();
            assert_eq!(after.libraries_built - before.libraries_built, 1);
            assert_eq!(after.fast_linked - before.fast_linked, 1);
        } else {
            assert_eq!(p.path(), PipelinePath::Whole);
        }
        let stats = gpu.pipeline_cache_stats();
        assert!(stats.hits >= 1 && stats.misses >= 1, "{stats:?}");
        pictures.push(first);
        gpu.check_validation().unwrap();
    }
    assert_eq!(
        pictures[0], pictures[1],
        "libraries and whole pipelines draw the same"
    );
}

#[test]
fn a_thousand_draws_in_one_list_each_set_their_own_pixel_and_binds_are_filtered() {
    let gpu = gpu();
    let vs = shader(&gpu, "vert", VS_RECT);
    let fs = shader(&gpu, "frag", FS_COLOR);
    let mut desc = GraphicsDesc::new(vs, fs, vk::Format::R8G8B8A8_UNORM);
    desc.push_constant_bytes = 48;
    desc.topology = TopologyClass::Triangles;
    let p = gpu.graphics_pipeline(&desc).unwrap();
    let img = gpu
        .create_image(&ImageDesc {
            width: W,
            height: H,
            format: vk::Format::R8G8B8A8_UNORM,
            kind: ImageKind::Color,
        })
        .unwrap();
    let colour = |x: u32, y: u32| [x * 8, y * 8, (x ^ y) * 8, 255].map(|v| v as u8);
    let mut rec = gpu.create_recorder(2).unwrap();
    let mut list = rec.begin().unwrap();
    list.begin_rendering(&Rendering {
        colors: &[Attachment {
            image: &img,
            clear: Some([0.0; 4]),
            resolve: None,
        }],
        depth: None,
    })
    .unwrap();
    for y in 0..H {
        for x in 0..W {
            list.bind_pipeline(&p);
            list.set_topology(vk::PrimitiveTopology::TRIANGLE_STRIP);
            let c = colour(x, y).map(|v| v as f32 / 255.0);
            list.push_constants(&rect(x, y, x + 1, y + 1, 0.0, c))
                .unwrap();
            list.draw(4, 1, 0, 0).unwrap();
        }
    }
    list.end_rendering().unwrap();
    let stats = list.stats();
    let t = list.submit().unwrap();
    rec.wait(t).unwrap();
    assert_eq!(stats.draws, (W * H) as u64);
    // One bind, plus one more if the background optimised link finished mid-list (later binds
    // switch to it).
    assert!(stats.pipeline_binds <= 2, "{stats:?}");
    assert!(stats.filtered >= 2 * (W * H) as u64 - 3, "{stats:?}");
    let out = gpu.read_image(&img).unwrap();
    for y in 0..H {
        for x in 0..W {
            assert_eq!(px(&out, x, y), colour(x, y), "pixel ({x}, {y})");
        }
    }
    gpu.check_validation().unwrap();
}

#[test]
fn read_back_frames_round_trip_through_png() {
    let gpu = gpu();
    let rgba = clear_to(&gpu, vk::Format::R8G8B8A8_UNORM, [0.2, 0.4, 0.6, 1.0]);
    let bytes = aps5_vulkan::png::encode_rgba(W, H, &rgba).unwrap();
    // Decoded by the png crate's decoder, not by us.
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (W, H));
    assert_eq!(info.color_type, png::ColorType::Rgba);
    assert_eq!(&buf[..info.buffer_size()], &rgba[..]);
    assert!(aps5_vulkan::png::encode_rgba(W, H, &rgba[4..]).is_err());
}

#[test]
fn bad_requests_fail_with_a_message_naming_the_problem() {
    let gpu = gpu();
    let e = gpu
        .create_image(&ImageDesc {
            width: W,
            height: H,
            format: vk::Format::R8G8B8A8_UNORM,
            kind: ImageKind::Depth,
        })
        .err()
        .unwrap();
    assert!(e.to_string().contains("R8G8B8A8_UNORM"), "{e}");
    let e = gpu
        .create_image(&ImageDesc {
            width: W,
            height: H,
            format: vk::Format::R4G4_UNORM_PACK8,
            kind: ImageKind::Texture,
        })
        .err()
        .unwrap();
    assert!(e.to_string().contains("R4G4_UNORM_PACK8"), "{e}");
    let tex = gpu
        .create_image(&ImageDesc {
            width: 4,
            height: 4,
            format: vk::Format::R8G8B8A8_UNORM,
            kind: ImageKind::Texture,
        })
        .unwrap();
    let e = gpu.upload_image(&tex, &[0; 63]).unwrap_err();
    assert!(
        e.to_string().contains("63 bytes") && e.to_string().contains("64 bytes"),
        "{e}"
    );
    let mut rec = gpu.create_recorder(1).unwrap();
    let mut list = rec.begin().unwrap();
    let e = list.draw(3, 1, 0, 0).unwrap_err();
    assert!(e.to_string().contains("outside a render pass"), "{e}");
    let e = list.end_rendering().unwrap_err();
    assert!(e.to_string().contains("end_rendering"), "{e}");
    drop(list);
    gpu.check_validation().unwrap();
}

#[test]
fn stencil_written_by_one_draw_masks_the_next() {
    let gpu = gpu();
    let ds = gpu.depth_stencil_format().expect("a depth-stencil format");
    let vs = shader(&gpu, "vert", VS_RECT);
    let fs = shader(&gpu, "frag", FS_COLOR);
    let mut desc = GraphicsDesc::new(vs, fs, vk::Format::R8G8B8A8_UNORM);
    desc.push_constant_bytes = 48;
    desc.depth_format = ds;
    let p = gpu.graphics_pipeline(&desc).unwrap();
    let color = gpu
        .create_image(&ImageDesc {
            width: W,
            height: H,
            format: vk::Format::R8G8B8A8_UNORM,
            kind: ImageKind::Color,
        })
        .unwrap();
    let depth = gpu
        .create_image(&ImageDesc {
            width: W,
            height: H,
            format: ds,
            kind: ImageKind::Depth,
        })
        .unwrap();
    let mut rec = gpu.create_recorder(1).unwrap();
    let mut list = rec.begin().unwrap();
    list.begin_rendering(&Rendering {
        colors: &[Attachment {
            image: &color,
            clear: Some([0.0, 0.0, 0.0, 1.0]),
            resolve: None,
        }],
        depth: Some(DepthAttachment {
            image: &depth,
            clear_depth: Some(1.0),
            clear_stencil: Some(0),
        }),
    })
    .unwrap();
    list.bind_pipeline(&p);
    list.set_topology(vk::PrimitiveTopology::TRIANGLE_STRIP);
    let write = aps5_vulkan::frame::StencilFace {
        pass: vk::StencilOp::REPLACE,
        compare: vk::CompareOp::ALWAYS,
        reference: 1,
        ..aps5_vulkan::frame::StencilFace::KEEP
    };
    list.set_stencil(true, Some(write), Some(write));
    list.push_constants(&rect(4, 6, 20, 26, 0.5, [1.0, 0.0, 0.0, 1.0]))
        .unwrap();
    list.draw(4, 1, 0, 0).unwrap();
    let test = aps5_vulkan::frame::StencilFace {
        compare: vk::CompareOp::EQUAL,
        reference: 1,
        ..aps5_vulkan::frame::StencilFace::KEEP
    };
    list.set_stencil(true, Some(test), Some(test));
    list.push_constants(&rect(0, 0, 32, 32, 0.5, [0.0, 1.0, 0.0, 1.0]))
        .unwrap();
    list.draw(4, 1, 0, 0).unwrap();
    list.end_rendering().unwrap();
    let t = list.submit().unwrap();
    rec.wait(t).unwrap();
    let out = gpu.read_image(&color).unwrap();
    for y in 0..H {
        for x in 0..W {
            let inside = (4..20).contains(&x) && (6..26).contains(&y);
            let want = if inside {
                [0, 255, 0, 255]
            } else {
                [0, 0, 0, 255]
            };
            assert_eq!(px(&out, x, y), want, "pixel ({x}, {y})");
        }
    }
    gpu.check_validation().unwrap();
}

#[test]
fn a_dispatch_writes_vertices_that_a_draw_in_the_same_list_reads() {
    let gpu = gpu();
    // Six vec2 corners of the pixel rectangle (8..24, 4..12), written by the compute shader.
    let cs = r#"#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 6) in;
layout(buffer_reference, std430) buffer V { vec2 p[]; };
layout(push_constant) uniform P { uint64_t dst; } pc;
void main() {
    uint i = gl_LocalInvocationID.x;
    const uint order[6] = uint[](0u, 1u, 2u, 2u, 1u, 3u);
    uint c = order[i];
    vec2 px = vec2((c & 1u) != 0u ? 24.0 : 8.0, (c & 2u) != 0u ? 12.0 : 4.0);
    V(pc.dst).p[i] = px / 16.0 - 1.0;
}
"#;
    let spirv = compile_glsl("comp", cs).unwrap();
    let compute = gpu
        .create_compute_pipeline(&aps5_vulkan::PipelineDesc {
            spirv: &spirv,
            entry: "main",
            push_constant_bytes: 8,
            required_subgroup_size: None,
        })
        .unwrap();
    let verts = gpu.create_buffer(48).unwrap();
    let vs = shader(&gpu, "vert", VS_POS2);
    let fs = shader(&gpu, "frag", FS_WHITE);
    let mut desc = GraphicsDesc::new(vs, fs, vk::Format::R8G8B8A8_UNORM);
    desc.bindings = vec![aps5_vulkan::VertexBinding {
        binding: 0,
        stride: 8,
        per_instance: false,
    }];
    desc.attributes = vec![VertexAttribute {
        location: 0,
        binding: 0,
        format: vk::Format::R32G32_SFLOAT,
        offset: 0,
    }];
    let p = gpu.graphics_pipeline(&desc).unwrap();
    let img = gpu
        .create_image(&ImageDesc {
            width: W,
            height: H,
            format: vk::Format::R8G8B8A8_UNORM,
            kind: ImageKind::Color,
        })
        .unwrap();
    let mut rec = gpu.create_recorder(1).unwrap();
    let mut list = rec.begin().unwrap();
    list.dispatch(&compute, &verts.device_address().to_le_bytes(), [1, 1, 1])
        .unwrap();
    list.memory_barrier().unwrap();
    list.begin_rendering(&Rendering {
        colors: &[Attachment {
            image: &img,
            clear: Some([0.0, 0.0, 0.0, 1.0]),
            resolve: None,
        }],
        depth: None,
    })
    .unwrap();
    list.bind_pipeline(&p);
    list.bind_vertex_buffer(0, &verts, 0).unwrap();
    list.draw(6, 1, 0, 0).unwrap();
    list.end_rendering().unwrap();
    let t = list.submit().unwrap();
    rec.wait(t).unwrap();
    let out = gpu.read_image(&img).unwrap();
    for y in 0..H {
        for x in 0..W {
            let inside = (8..24).contains(&x) && (4..12).contains(&y);
            let want = if inside { [255; 4] } else { [0, 0, 0, 255] };
            assert_eq!(px(&out, x, y), want, "pixel ({x}, {y})");
        }
    }
    gpu.check_validation().unwrap();
}

#[test]
fn a_render_target_is_copied_into_imported_host_memory_and_back_into_a_texture() {
    let gpu = gpu();
    let align = gpu
        .host_import_alignment()
        .expect("lavapipe imports host memory") as usize;
    let len = ((W * H * 4) as usize).next_multiple_of(align);
    let layout = std::alloc::Layout::from_size_align(len, align.max(4096)).unwrap();
    // SAFETY: non-zero size; freed at the end, after the buffer is dropped.
    let host = unsafe { std::alloc::alloc_zeroed(layout) };
    // SAFETY: the allocation outlives `guest` and is only read after the wait.
    let guest = unsafe { gpu.import_host_memory(host, len) }.unwrap();
    let target = gpu
        .create_image(&ImageDesc {
            width: W,
            height: H,
            format: vk::Format::R8G8B8A8_UNORM,
            kind: ImageKind::Color,
        })
        .unwrap();
    let texture = gpu
        .create_image(&ImageDesc {
            width: W,
            height: H,
            format: vk::Format::R8G8B8A8_UNORM,
            kind: ImageKind::Texture,
        })
        .unwrap();
    let vs = shader(&gpu, "vert", VS_RECT);
    let fs = shader(&gpu, "frag", FS_COLOR);
    let mut desc = GraphicsDesc::new(vs, fs, vk::Format::R8G8B8A8_UNORM);
    desc.push_constant_bytes = 48;
    let p = gpu.graphics_pipeline(&desc).unwrap();
    let mut rec = gpu.create_recorder(1).unwrap();
    let mut list = rec.begin().unwrap();
    list.begin_rendering(&Rendering {
        colors: &[Attachment {
            image: &target,
            clear: Some([0.2, 0.4, 0.6, 1.0]),
            resolve: None,
        }],
        depth: None,
    })
    .unwrap();
    list.bind_pipeline(&p);
    list.set_topology(vk::PrimitiveTopology::TRIANGLE_STRIP);
    list.push_constants(&rect(0, 0, 16, 8, 0.0, [1.0, 1.0, 0.0, 1.0]))
        .unwrap();
    list.draw(4, 1, 0, 0).unwrap();
    list.end_rendering().unwrap();
    list.copy_image_to_buffer(&target, &guest, 0).unwrap();
    list.memory_barrier().unwrap();
    list.copy_buffer_to_image(&guest, 0, &texture).unwrap();
    let e = list
        .copy_image_to_buffer(&target, &guest, len as u64 - 4)
        .unwrap_err();
    assert!(e.to_string().contains("offset"), "{e}");
    let t = list.submit().unwrap();
    rec.wait(t).unwrap();
    // SAFETY: the GPU is done with the pages.
    let pixels = unsafe { std::slice::from_raw_parts(host, (W * H * 4) as usize) }.to_vec();
    for y in 0..H {
        for x in 0..W {
            let want = if x < 16 && y < 8 {
                [255, 255, 0, 255]
            } else {
                [51, 102, 153, 255]
            };
            assert_eq!(px(&pixels, x, y), want, "guest pixel ({x}, {y})");
        }
    }
    assert_eq!(
        gpu.read_image(&texture).unwrap(),
        pixels,
        "texture from guest memory"
    );
    drop(guest);
    // SAFETY: allocated above with this layout; the buffer is gone.
    unsafe { std::alloc::dealloc(host, layout) };
    gpu.check_validation().unwrap();
}

/// A full-target quad whose UV runs 0..`scale` (push constant), sampling set 0 binding 0.
const VS_UV: &str = r#"#version 450
layout(push_constant) uniform P { float scale; } pc;
layout(location = 0) out vec2 uv;
void main() {
    vec2 c = vec2(gl_VertexIndex & 1, (gl_VertexIndex >> 1) & 1);
    uv = c * pc.scale;
    gl_Position = vec4(c * 2.0 - 1.0, 0.0, 1.0);
}
"#;
const FS_TEX: &str = r#"#version 450
layout(set = 0, binding = 0) uniform sampler2D tex;
layout(location = 0) in vec2 uv;
layout(location = 0) out vec4 color;
void main() { color = texture(tex, uv); }
"#;

fn sampled_scene(rgba: Vec<u8>, size: u32, sampler: SamplerDesc, scale: f32) -> Scene {
    sampled_scene_in(vk::Format::R8G8B8A8_UNORM, rgba, size, sampler, scale)
}

fn sampled_scene_in(
    format: vk::Format,
    data: Vec<u8>,
    size: u32,
    sampler: SamplerDesc,
    scale: f32,
) -> Scene {
    let mut scene = Scene::new(W, H, VS_UV, FS_TEX);
    scene.topology = vk::PrimitiveTopology::TRIANGLE_STRIP;
    scene.push_constant_bytes = 4;
    scene.textures = vec![Texture {
        width: size,
        height: size,
        format,
        data,
        sampler,
    }];
    scene.draws = vec![Draw {
        push_constants: scale.to_le_bytes().to_vec(),
        ..Draw::vertices(4)
    }];
    scene
}

#[test]
fn address_modes_repeat_mirror_and_clamp_pick_the_texels_the_spec_says() {
    let gpu = gpu();
    let texel = |t: u32| [(t * 60 + 10) as u8, 0, 0, 255];
    // A 4x4 texture whose red channel encodes the column.
    let rgba: Vec<u8> = (0..4).flat_map(|_| (0..4).flat_map(texel)).collect();
    for (mode, name) in [
        (vk::SamplerAddressMode::REPEAT, "repeat"),
        (vk::SamplerAddressMode::MIRRORED_REPEAT, "mirrored repeat"),
        (vk::SamplerAddressMode::CLAMP_TO_EDGE, "clamp to edge"),
    ] {
        let sampler = SamplerDesc {
            address: [mode; 3],
            ..SamplerDesc::NEAREST_CLAMP
        };
        // UV 0..2 across 32 pixels: texel coordinate (x + 0.5) / 4, never on a boundary.
        let out = reference::render(&gpu, &sampled_scene(rgba.clone(), 4, sampler, 2.0)).unwrap();
        for x in 0..W {
            let i = x / 4; // integer texel coordinate, 0..8
            let col = match name {
                "repeat" => i % 4,
                "mirrored repeat" => {
                    if i < 4 {
                        i
                    } else {
                        7 - i
                    }
                }
                _ => i.min(3),
            };
            assert_eq!(px(&out, x, 3), texel(col), "{name}: pixel x {x}");
        }
    }
    gpu.check_validation().unwrap();
}

#[test]
fn linear_filtering_blends_the_four_nearest_texels_with_bilinear_weights() {
    let gpu = gpu();
    // 2x2 texture: red channel 0, 200 (top row), 100, 40 (bottom row).
    let reds = [0u8, 200, 100, 40];
    let rgba: Vec<u8> = reds.iter().flat_map(|&r| [r, 0, 0, 255]).collect();
    let sampler = SamplerDesc {
        address: [vk::SamplerAddressMode::CLAMP_TO_EDGE; 3],
        ..SamplerDesc::LINEAR_REPEAT
    };
    let out = reference::render(&gpu, &sampled_scene(rgba, 2, sampler, 1.0)).unwrap();
    let t = |x: i64, y: i64| reds[(y.clamp(0, 1) * 2 + x.clamp(0, 1)) as usize] as f64;
    for y in 0..H {
        for x in 0..W {
            // The spec's linear filter: texel space u * size - 0.5, weights from the fraction.
            let u = (x as f64 + 0.5) / W as f64 * 2.0 - 0.5;
            let v = (y as f64 + 0.5) / H as f64 * 2.0 - 0.5;
            let (i, j) = (u.floor() as i64, v.floor() as i64);
            let (a, b) = (u - u.floor(), v - v.floor());
            let want = (1.0 - a) * (1.0 - b) * t(i, j)
                + a * (1.0 - b) * t(i + 1, j)
                + (1.0 - a) * b * t(i, j + 1)
                + a * b * t(i + 1, j + 1);
            let got = px(&out, x, y)[0] as f64;
            // Implementations filter with a few bits of sub-texel precision: 2 steps allowed.
            assert!(
                (got - want).abs() <= 2.0,
                "pixel ({x}, {y}): {got} vs {want:.2}"
            );
        }
    }
    gpu.check_validation().unwrap();
}

#[test]
fn primitive_restart_splits_an_indexed_strip_at_the_all_ones_index() {
    let gpu = gpu();
    let vs = shader(&gpu, "vert", VS_POS2);
    let fs = shader(&gpu, "frag", FS_WHITE);
    let mut desc = GraphicsDesc::new(vs, fs, vk::Format::R8G8B8A8_UNORM);
    desc.bindings = vec![aps5_vulkan::VertexBinding {
        binding: 0,
        stride: 8,
        per_instance: false,
    }];
    desc.attributes = vec![VertexAttribute {
        location: 0,
        binding: 0,
        format: vk::Format::R32G32_SFLOAT,
        offset: 0,
    }];
    let p = gpu.graphics_pipeline(&desc).unwrap();
    // Two rectangles (pixels 2..10 and 20..30 across, rows 4..28) as strips of 4 vertices.
    let n = |x: f32, y: f32| [x / 16.0 - 1.0, y / 16.0 - 1.0];
    let mut v = Vec::new();
    for (x0, x1) in [(2.0, 10.0), (20.0, 30.0)] {
        for (x, y) in [(x0, 4.0), (x1, 4.0), (x0, 28.0), (x1, 28.0)] {
            v.extend(n(x, y));
        }
    }
    let mut vb = gpu.create_buffer(v.len() as u64 * 4).unwrap();
    vb.write(0, &f32s(&v)).unwrap();
    let idx: Vec<u8> = [0u16, 1, 2, 3, 0xffff, 4, 5, 6, 7]
        .iter()
        .flat_map(|i| i.to_le_bytes())
        .collect();
    let mut ib = gpu.create_buffer(idx.len() as u64).unwrap();
    ib.write(0, &idx).unwrap();
    let img = gpu
        .create_image(&ImageDesc {
            width: W,
            height: H,
            format: vk::Format::R8G8B8A8_UNORM,
            kind: ImageKind::Color,
        })
        .unwrap();
    let mut rec = gpu.create_recorder(1).unwrap();
    let mut list = rec.begin().unwrap();
    list.begin_rendering(&Rendering {
        colors: &[Attachment {
            image: &img,
            clear: Some([0.0, 0.0, 0.0, 1.0]),
            resolve: None,
        }],
        depth: None,
    })
    .unwrap();
    list.bind_pipeline(&p);
    list.bind_vertex_buffer(0, &vb, 0).unwrap();
    list.bind_index_buffer(&ib, 0, vk::IndexType::UINT16)
        .unwrap();
    list.set_topology(vk::PrimitiveTopology::TRIANGLE_STRIP);
    list.set_primitive_restart(true);
    list.draw_indexed(9, 1, 0, 0, 0).unwrap();
    list.end_rendering().unwrap();
    let t = list.submit().unwrap();
    rec.wait(t).unwrap();
    let out = gpu.read_image(&img).unwrap();
    for y in 0..H {
        for x in 0..W {
            // Without restart the strip would also join the two (triangles 2-3-4', ...).
            let rows = (4..28).contains(&y);
            let inside = rows && ((2..10).contains(&x) || (20..30).contains(&x));
            let want = if inside { [255; 4] } else { [0, 0, 0, 255] };
            assert_eq!(px(&out, x, y), want, "pixel ({x}, {y})");
        }
    }
    gpu.check_validation().unwrap();
}

#[test]
fn bc1_texture_blocks_decode_to_their_endpoint_colours() {
    let gpu = gpu();
    // An 8x8 BC1 texture: 2x2 blocks, each {color0 = red 0xf800, color1 = blue 0x001f (color0 >
    // color1: four-colour mode), 2-bit indices}; only indices 0 and 1 are used, which the format
    // defines as the endpoints exactly (5/6-bit channels 31 / 0 -> 255 / 0).
    let index = |tx: u32, ty: u32| (tx + ty + (ty / 4) * 2 + tx / 4) & 1;
    let mut data = Vec::new();
    for by in 0..2 {
        for bx in 0..2 {
            data.extend(0xf800u16.to_le_bytes());
            data.extend(0x001fu16.to_le_bytes());
            let mut bits = 0u32;
            for y in 0..4 {
                for x in 0..4 {
                    bits |= index(bx * 4 + x, by * 4 + y) << (2 * (y * 4 + x));
                }
            }
            data.extend(bits.to_le_bytes());
        }
    }
    let scene = sampled_scene_in(
        vk::Format::BC1_RGB_UNORM_BLOCK,
        data,
        8,
        SamplerDesc::NEAREST_CLAMP,
        1.0,
    );
    let out = reference::render(&gpu, &scene).unwrap();
    for y in 0..H {
        for x in 0..W {
            let want = if index(x / 4, y / 4) == 0 {
                [255, 0, 0, 255]
            } else {
                [0, 0, 255, 255]
            };
            assert_eq!(px(&out, x, y), want, "pixel ({x}, {y})");
        }
    }
    gpu.check_validation().unwrap();
}

#[test]
fn depth_bias_moves_a_coplanar_surface_in_front_under_less() {
    let gpu = gpu();
    let vs = shader(&gpu, "vert", VS_RECT);
    let fs = shader(&gpu, "frag", FS_COLOR);
    let mut desc = GraphicsDesc::new(vs, fs, vk::Format::R8G8B8A8_UNORM);
    desc.push_constant_bytes = 48;
    desc.depth_format = vk::Format::D32_SFLOAT;
    let p = gpu.graphics_pipeline(&desc).unwrap();
    let color = gpu
        .create_image(&ImageDesc {
            width: W,
            height: H,
            format: vk::Format::R8G8B8A8_UNORM,
            kind: ImageKind::Color,
        })
        .unwrap();
    let depth = gpu
        .create_image(&ImageDesc {
            width: W,
            height: H,
            format: vk::Format::D32_SFLOAT,
            kind: ImageKind::Depth,
        })
        .unwrap();
    let mut rec = gpu.create_recorder(1).unwrap();
    let mut list = rec.begin().unwrap();
    list.begin_rendering(&Rendering {
        colors: &[Attachment {
            image: &color,
            clear: Some([0.0, 0.0, 0.0, 1.0]),
            resolve: None,
        }],
        depth: Some(DepthAttachment {
            image: &depth,
            clear_depth: Some(1.0),
            clear_stencil: None,
        }),
    })
    .unwrap();
    list.bind_pipeline(&p);
    list.set_topology(vk::PrimitiveTopology::TRIANGLE_STRIP);
    list.set_depth(true, true, vk::CompareOp::LESS);
    list.push_constants(&rect(0, 0, 32, 32, 0.5, [1.0, 0.0, 0.0, 1.0]))
        .unwrap();
    list.draw(4, 1, 0, 0).unwrap();
    // The same depth again: LESS fails without bias (left half), passes with a negative
    // constant bias (right half).
    list.push_constants(&rect(0, 0, 16, 32, 0.5, [0.0, 1.0, 0.0, 1.0]))
        .unwrap();
    list.draw(4, 1, 0, 0).unwrap();
    list.set_depth_bias(true, -64.0, 0.0, 0.0);
    list.push_constants(&rect(16, 0, 32, 32, 0.5, [0.0, 0.0, 1.0, 1.0]))
        .unwrap();
    list.draw(4, 1, 0, 0).unwrap();
    list.end_rendering().unwrap();
    let t = list.submit().unwrap();
    rec.wait(t).unwrap();
    let out = gpu.read_image(&color).unwrap();
    for y in 0..H {
        for x in 0..W {
            let want = if x < 16 {
                [255, 0, 0, 255]
            } else {
                [0, 0, 255, 255]
            };
            assert_eq!(px(&out, x, y), want, "pixel ({x}, {y})");
        }
    }
    let d = gpu.read_image(&depth).unwrap();
    let at = |x: u32| f32::from_le_bytes(d[(x * 4) as usize..][..4].try_into().unwrap());
    assert_eq!(at(3), 0.5);
    assert!(at(20) < 0.5, "biased depth {} is nearer", at(20));
    gpu.check_validation().unwrap();
}

#[test]
fn multisampled_edges_resolve_to_the_fraction_of_standard_sample_positions_covered() {
    let gpu = gpu();
    if !gpu.info().standard_sample_locations {
        eprintln!("no standardSampleLocations: the expected coverage is not defined");
        return;
    }
    let vs = shader(&gpu, "vert", VS_POS2);
    let fs = shader(&gpu, "frag", FS_WHITE);
    let format = vk::Format::R8G8B8A8_UNORM;
    let mut desc = GraphicsDesc::new(vs, fs, format);
    desc.samples = 4;
    desc.bindings = vec![aps5_vulkan::VertexBinding {
        binding: 0,
        stride: 8,
        per_instance: false,
    }];
    desc.attributes = vec![VertexAttribute {
        location: 0,
        binding: 0,
        format: vk::Format::R32G32_SFLOAT,
        offset: 0,
    }];
    let p = gpu.graphics_pipeline(&desc).unwrap();
    // A triangle with slanted edges through the middle of pixels (vertices on pixel corners).
    let tri = [(3.0f64, 2.0f64), (29.0, 9.0), (8.0, 30.0)];
    let mut v = Vec::new();
    for &(x, y) in &tri {
        v.push((x / 16.0 - 1.0) as f32);
        v.push((y / 16.0 - 1.0) as f32);
    }
    let mut vb = gpu.create_buffer(24).unwrap();
    vb.write(0, &f32s(&v)).unwrap();
    let desc_img = ImageDesc {
        width: W,
        height: H,
        format,
        kind: ImageKind::Color,
    };
    let msaa = gpu.create_image_multisampled(&desc_img, 4).unwrap();
    let resolved = gpu.create_image(&desc_img).unwrap();
    assert!(
        gpu.read_image(&msaa).is_err(),
        "a multisampled image is not read back"
    );
    let mut rec = gpu.create_recorder(1).unwrap();
    let mut list = rec.begin().unwrap();
    list.begin_rendering(&Rendering {
        colors: &[Attachment {
            image: &msaa,
            clear: Some([0.0, 0.0, 0.0, 1.0]),
            resolve: Some(&resolved),
        }],
        depth: None,
    })
    .unwrap();
    list.bind_pipeline(&p);
    list.bind_vertex_buffer(0, &vb, 0).unwrap();
    list.draw(3, 1, 0, 0).unwrap();
    list.end_rendering().unwrap();
    let t = list.submit().unwrap();
    rec.wait(t).unwrap();
    let out = gpu.read_image(&resolved).unwrap();
    // Vulkan's standard 4-sample positions within a pixel.
    let positions = [
        (0.375, 0.125),
        (0.875, 0.375),
        (0.125, 0.625),
        (0.625, 0.875),
    ];
    let inside = |px: f64, py: f64| {
        (0..3).all(|i| {
            let a = tri[i];
            let b = tri[(i + 1) % 3];
            let c = tri[(i + 2) % 3];
            let side = |p: (f64, f64)| (b.0 - a.0) * (p.1 - a.1) - (b.1 - a.1) * (p.0 - a.0);
            side((px, py)) * side(c) > 0.0
        })
    };
    let mut partial = 0;
    for y in 0..H {
        for x in 0..W {
            let k = positions
                .iter()
                .filter(|(sx, sy)| inside(x as f64 + sx, y as f64 + sy))
                .count();
            partial += usize::from(k > 0 && k < 4);
            let want = 255.0 * k as f64 / 4.0;
            let got = px(&out, x, y);
            // The average of k white and 4 - k black samples; rounding of the average may
            // differ by one step.
            for c in 0..3 {
                assert!(
                    (got[c] as f64 - want).abs() <= 1.0,
                    "pixel ({x}, {y}): {got:?}, {k} of 4 samples"
                );
            }
        }
    }
    assert!(
        partial > 20,
        "the edges cross pixels ({partial} partly covered)"
    );
    gpu.check_validation().unwrap();
}

#[test]
fn a_depth_stencil_image_uploads_and_reads_back_both_planes() {
    let gpu = gpu();
    let ds = gpu.depth_stencil_format().expect("a depth-stencil format");
    let img = gpu
        .create_image(&ImageDesc {
            width: W,
            height: H,
            format: ds,
            kind: ImageKind::Depth,
        })
        .unwrap();
    let texels = (W * H) as usize;
    assert_eq!(img.host_bytes(), 5 * texels);
    // Depth values exact in D24 too (multiples of 2^-24 below 1 with 24 bits), then stencil.
    let mut bytes = Vec::new();
    for i in 0..texels as u32 {
        let d = if ds == vk::Format::D32_SFLOAT_S8_UINT {
            (i as f32 / texels as f32).to_bits()
        } else {
            i * 97 % (1 << 24)
        };
        bytes.extend(d.to_le_bytes());
    }
    bytes.extend((0..texels).map(|i| (i * 31 % 256) as u8));
    gpu.upload_image(&img, &bytes).unwrap();
    let back = gpu.read_image(&img).unwrap();
    let mask = |b: &[u8]| -> Vec<u8> {
        if ds == vk::Format::D24_UNORM_S8_UINT {
            // The top byte of a D24 texel is undefined.
            b.chunks_exact(4)
                .flat_map(|c| [c[0], c[1], c[2], 0])
                .chain(b[4 * texels..].iter().copied())
                .collect()
        } else {
            b.to_vec()
        }
    };
    assert_eq!(
        mask(&back[..4 * texels]),
        mask(&bytes[..4 * texels]),
        "depth plane"
    );
    assert_eq!(&back[4 * texels..], &bytes[4 * texels..], "stencil plane");
    gpu.check_validation().unwrap();
}
