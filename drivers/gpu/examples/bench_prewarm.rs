//! `cargo xtask bench prewarm`: the prewarm rate (pipelines per second) of
//! `aps5_gpu::prewarm::prewarm_all` on the local Vulkan device, with a cold driver cache (no
//! blob) and a warm one (the blob the cold round saved), each on a freshly opened device, then
//! cold again (blob removed).
//!
//! The packs are made here: one vertex and one fragment shader (GLSL through glslangValidator,
//! as the GLSL reference renderer does) in a shader pack, and N graphics pipeline records that
//! differ in their colour format, blend and write mask, topology class and depth format (so N
//! distinct pipelines). Prints one JSON object. `APS5_BENCH_QUICK=1` (or `--quick`) makes fewer.

use std::time::Duration;

use aps5_cache::pack::PackWriter;
use aps5_cache::pipelines::{PackedPipeline, producer_identity};
use aps5_cache::records::PipelineKind;
use aps5_gpu::prewarm::prewarm_all;
use aps5_gpu::vulkan::{BlobLoad, Gpu, GpuOptions, reference::compile_glsl, vk};
use aps5_shader::pack::{PackedShader, producer_identity as shader_identity};
use aps5_shader::translate::abi::Stage;

fn shader(stage: Stage, spirv: Vec<u32>) -> PackedShader {
    PackedShader {
        stage,
        local_size: [1, 1, 1],
        groups_per_guest_group: 1,
        push_constant_bytes: 96,
        wave_lanes: 32,
        waves_per_group: 1,
        lds_bytes: 0,
        guest_instructions: 0,
        required_features: Vec::new(),
        spirv,
        graphics: None,
        textures: Vec::new(),
    }
}

/// The state words of pipeline `i` (layout 1, as the driver records them).
fn state(i: u32) -> Vec<u32> {
    let formats = [
        vk::Format::R8G8B8A8_UNORM,
        vk::Format::B8G8R8A8_UNORM,
        vk::Format::R16G16B16A16_SFLOAT,
        vk::Format::R32G32B32A32_SFLOAT,
        vk::Format::R8G8B8A8_SRGB,
    ];
    let depth = [vk::Format::UNDEFINED, vk::Format::D32_SFLOAT];
    let format = formats[(i % 5) as usize];
    let mask = 1 + (i / 5) % 15;
    let blend = (i / 75) % 2;
    // Lines or triangles (points would need the vertex shader to write a point size).
    let topology = 1 + (i / 150) % 2;
    let depth = depth[((i / 450) % 2) as usize];
    let mut w = vec![1, 96, 0, topology, depth.as_raw() as u32, 1, 1];
    w.extend([
        format.as_raw() as u32,
        blend,
        vk::BlendFactor::SRC_ALPHA.as_raw() as u32,
        vk::BlendFactor::ONE_MINUS_SRC_ALPHA.as_raw() as u32,
        vk::BlendOp::ADD.as_raw() as u32,
        vk::BlendFactor::ONE.as_raw() as u32,
        vk::BlendFactor::ZERO.as_raw() as u32,
        vk::BlendOp::ADD.as_raw() as u32,
        mask,
    ]);
    w.extend([0, 0]); // no vertex bindings, no attributes
    w
}

fn main() {
    let quick =
        std::env::args().any(|a| a == "--quick") || std::env::var_os("APS5_BENCH_QUICK").is_some();
    let n: u32 = if quick { 60 } else { 300 };
    let dir = tempfile::tempdir().expect("a temp folder");
    let vs = compile_glsl(
        "vert",
        "#version 450\nlayout(push_constant) uniform P { vec4 v[6]; } p;\n\
         void main() { gl_Position = p.v[gl_VertexIndex % 6]; }",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let fs = compile_glsl(
        "frag",
        "#version 450\nlayout(push_constant) uniform P { vec4 v[6]; } p;\n\
         layout(location = 0) out vec4 c;\nvoid main() { c = p.v[0]; }",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (kv, kf) = ([1u8; 32], [2u8; 32]);
    let mut sp = PackWriter::new(shader_identity());
    sp.add(kv, shader(Stage::Vertex, vs).encode()).unwrap();
    sp.add(kf, shader(Stage::Pixel, fs).encode()).unwrap();
    let shaders = dir.path().join("shaders.pack");
    sp.write(&shaders).unwrap();
    let mut pp = PackWriter::new(producer_identity(&shader_identity()));
    for i in 0..n {
        let p = PackedPipeline {
            rank: i,
            kind: PipelineKind::Graphics,
            stages: vec![[kv, [0; 32]], [kf, [0; 32]]],
            state: state(i),
        };
        pp.add(p.key(), p.encode()).unwrap();
    }
    let pipelines = dir.path().join("pipelines.pack");
    pp.write(&pipelines).unwrap();

    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let blobs = dir.path().join("pipeline-cache");
    let mut rounds = serde_json::Map::new();
    let mut device = String::new();
    // A second cold round (blob removed) after the warm one tells the blob's effect from the
    // first round's one-time costs (loading the driver's compiler, first allocations).
    for round in ["cold", "warm", "cold_again"] {
        if round == "cold_again" {
            let _ = std::fs::remove_dir_all(&blobs);
        }
        let gpu = Gpu::new(&GpuOptions {
            pipeline_cache_dir: Some(blobs.clone()),
            ..GpuOptions::from_env()
        })
        .unwrap_or_else(|e| panic!("Vulkan: {e}"));
        device = gpu.info().name.clone();
        let load = gpu.pipeline_cache_load();
        match (round, &load) {
            ("cold" | "cold_again", BlobLoad::Absent) | ("warm", BlobLoad::Used { .. }) => {}
            _ => panic!("{round} round: blob {load:?}"),
        }
        let r = prewarm_all(
            &gpu,
            &shaders,
            &pipelines,
            threads,
            Duration::from_secs(3600),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.counts.prewarmed, u64::from(n), "{round}: {:?}", r.counts);
        let blob_bytes = std::fs::read_dir(&blobs)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok()?.metadata().ok())
            .map_or(0, |m| m.len());
        let s = r.elapsed.as_secs_f64();
        eprintln!(
            "{round}: {n} pipelines in {:.3} s = {:.0}/s, blob {blob_bytes} bytes",
            s,
            f64::from(n) / s
        );
        rounds.insert(
            round.into(),
            serde_json::json!({
                "pipelines": n,
                "seconds": s,
                "pipelines_per_s": f64::from(n) / s,
                "blob_loaded": format!("{load:?}"),
                "blob_bytes": blob_bytes,
            }),
        );
    }
    let ratio = rounds["cold"]["seconds"].as_f64().unwrap_or(0.0)
        / rounds["warm"]["seconds"].as_f64().unwrap_or(1.0);
    println!(
        "{}",
        serde_json::json!({
            "device": device,
            "threads": threads,
            "cold": rounds["cold"],
            "warm": rounds["warm"],
            "cold_again": rounds["cold_again"],
            "cold_over_warm": ratio,
            "cold_again_over_warm": rounds["cold_again"]["seconds"].as_f64().unwrap_or(0.0)
                / rounds["warm"]["seconds"].as_f64().unwrap_or(1.0),
            "fossilize_reference_per_s": 675,
        })
    );
}
