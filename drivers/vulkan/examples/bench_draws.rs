//! `cargo xtask bench draws`: the CPU cost of recording and submitting 10,000 draws per frame
//! through [`aps5_vulkan::CommandList`], the frame time on the device, and pipeline build
//! times per path. Prints one JSON object.
//!
//! Each draw binds the pipeline (filtered after the first), writes 96 bytes of push constants
//! (the translator's block; different every draw) and draws a 4-vertex strip covering a few
//! pixels, so the device's share stays small. The limit beside it: the same commands recorded
//! with bare ash calls on the same command buffer (push constants + draw, nothing else).
//! `APS5_BENCH_QUICK=1` (or `--quick`) measures fewer frames.

use std::time::{Duration, Instant};

use aps5_vulkan::reference::compile_glsl;
use aps5_vulkan::{Attachment, Gpu, GpuOptions, GraphicsDesc, ImageDesc, ImageKind, Rendering, vk};

const DRAWS: u32 = 10_000;
const SIZE: u32 = 256;

const VS: &str = r#"#version 450
layout(push_constant) uniform P { uint sgpr[16]; vec4 rect; vec4 color; } pc;
layout(location = 0) out vec4 v_color;
void main() {
    vec2 c = vec2((gl_VertexIndex & 1) != 0 ? pc.rect.z : pc.rect.x,
                  (gl_VertexIndex & 2) != 0 ? pc.rect.w : pc.rect.y);
    gl_Position = vec4(c, 0.0, 1.0);
    v_color = pc.color;
}
"#;
const FS: &str = r#"#version 450
layout(location = 0) in vec4 v_color;
layout(location = 0) out vec4 color;
void main() { color = v_color; }
"#;

fn push(i: u32) -> [u8; 96] {
    let mut p = [0u8; 96];
    let x = (i % 100) as f32 / 50.0 - 1.0;
    let y = (i / 100 % 100) as f32 / 50.0 - 1.0;
    let words = [
        x,
        y,
        x + 0.02,
        y + 0.02,
        (i % 7) as f32 / 7.0,
        0.5,
        1.0,
        1.0,
    ];
    p[0..4].copy_from_slice(&i.to_le_bytes());
    for (k, w) in words.iter().enumerate() {
        p[64 + k * 4..][..4].copy_from_slice(&w.to_le_bytes());
    }
    p
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let quick = std::env::var("APS5_BENCH_QUICK").is_ok_and(|v| v == "1")
        || std::env::args().any(|a| a == "--quick");
    let frames = if quick { 3 } else { 10 };
    let gpu = Gpu::new(&GpuOptions::from_env()).expect("open Vulkan device");
    let vs = compile_glsl("vert", VS).expect("glslangValidator");
    let fs = compile_glsl("frag", FS).expect("glslangValidator");
    let format = vk::Format::R8G8B8A8_UNORM;
    let shaders = |gpu: &Gpu| {
        (
            gpu.create_shader(vk::ShaderStageFlags::VERTEX, &vs)
                .unwrap(),
            gpu.create_shader(vk::ShaderStageFlags::FRAGMENT, &fs)
                .unwrap(),
        )
    };
    let (v, f) = shaders(&gpu);
    let desc = GraphicsDesc::new(v, f, format);
    let pipeline = gpu.graphics_pipeline(&desc).unwrap();
    let first_build = pipeline.build_time();
    let t = Instant::now();
    pipeline.wait_optimized();
    let optimized_wait = t.elapsed();
    let path = format!("{:?}", pipeline.path());
    // A second pipeline differing in blending: libraries shared, only the output part new.
    let mut desc2 = desc.clone();
    desc2.targets[0].blend = aps5_vulkan::Blend::ALPHA;
    let pipeline2 = gpu.graphics_pipeline(&desc2).unwrap();
    let second_build = pipeline2.build_time();
    pipeline2.wait_optimized();
    let whole_build = {
        let mut opts = GpuOptions::from_env();
        opts.whole_pipelines = true;
        let g = Gpu::new(&opts).unwrap();
        let (v, f) = shaders(&g);
        g.graphics_pipeline(&GraphicsDesc::new(v, f, format))
            .unwrap()
            .build_time()
    };

    let target = gpu
        .create_image(&ImageDesc {
            width: SIZE,
            height: SIZE,
            format,
            kind: ImageKind::Color,
        })
        .unwrap();
    let pushes: Vec<[u8; 96]> = (0..DRAWS).map(push).collect();
    let mut rec = gpu.create_recorder(2).unwrap();
    // mode 0: one pipeline (binds filtered); 1: the pipeline alternates every draw;
    // 2: bare ash calls (the limit).
    // One frame in `mode`: (CPU ms to record + submit, ms until the device finished).
    let mut run = |mode: u32| -> (f64, f64) {
        {
            let t0 = Instant::now();
            let mut list = rec.begin().unwrap();
            list.begin_rendering(&Rendering {
                colors: &[Attachment {
                    image: &target,
                    clear: Some([0.0; 4]),
                    resolve: None,
                }],
                depth: None,
            })
            .unwrap();
            list.set_topology(vk::PrimitiveTopology::TRIANGLE_STRIP);
            list.bind_pipeline(&pipeline);
            if mode == 2 {
                let d = gpu.raw_device();
                let cmd = list.raw();
                let layout = raw_layout(&pipeline);
                for p in &pushes {
                    // SAFETY: a recording command buffer inside rendering with the pipeline
                    // bound; the same calls CommandList makes.
                    unsafe {
                        d.cmd_push_constants(
                            cmd,
                            layout,
                            vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT,
                            0,
                            p,
                        );
                        d.cmd_draw(cmd, 4, 1, 0, 0);
                    }
                }
            } else {
                for (i, p) in pushes.iter().enumerate() {
                    if mode == 1 && i % 2 == 1 {
                        list.bind_pipeline(&pipeline2);
                    } else {
                        list.bind_pipeline(&pipeline);
                    }
                    list.push_constants(p).unwrap();
                    list.draw(4, 1, 0, 0).unwrap();
                }
            }
            list.end_rendering().unwrap();
            let value = list.submit().unwrap();
            let t1 = Instant::now();
            rec.wait(value).unwrap();
            let t2 = Instant::now();
            (ms(t1 - t0), ms(t2 - t0))
        }
    };
    // The modes take turns frame by frame, so machine noise hits them alike; round 0 warms up
    // (lavapipe compiles shaders at first use).
    let (mut cpu, mut frame, mut cpu_alt, mut frame_alt, mut cpu_raw) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..frames + 1 {
        let a = run(0);
        let b = run(1);
        let c = run(2);
        if round > 0 {
            cpu.push(a.0);
            frame.push(a.1);
            cpu_alt.push(b.0);
            frame_alt.push(b.1);
            cpu_raw.push(c.0);
        }
    }
    let per_draw = |v: &[f64]| median(v.to_vec()) * 1e3 / DRAWS as f64;
    println!(
        "{{\n  \"device\": {:?},\n  \"driver\": {:?},\n  \"pipeline_path\": {:?},\n  \
         \"draws_per_frame\": {DRAWS},\n  \"frames\": {frames},\n  \
         \"cpu_us_per_draw\": {:.4},\n  \"cpu_ms_per_frame\": {:.3},\n  \"frame_ms\": {:.3},\n  \
         \"cpu_us_per_draw_pipeline_every_draw\": {:.4},\n  \"frame_ms_pipeline_every_draw\": {:.3},\n  \
         \"raw_ash_cpu_us_per_draw\": {:.4},\n  \"cpu_over_raw_ash\": {:.3},\n  \
         \"first_pipeline_ms\": {:.3},\n  \"second_pipeline_shared_libraries_ms\": {:.3},\n  \
         \"optimized_link_wait_ms\": {:.3},\n  \"whole_pipeline_ms\": {:.3}\n}}",
        gpu.info().name,
        gpu.info().driver,
        path,
        per_draw(&cpu),
        median(cpu.clone()),
        median(frame),
        per_draw(&cpu_alt),
        median(frame_alt),
        per_draw(&cpu_raw),
        per_draw(&cpu) / per_draw(&cpu_raw),
        ms(first_build),
        ms(second_build),
        ms(optimized_wait),
        ms(whole_build),
    );
}

fn raw_layout(p: &aps5_vulkan::GraphicsPipeline) -> vk::PipelineLayout {
    p.raw_layout()
}
