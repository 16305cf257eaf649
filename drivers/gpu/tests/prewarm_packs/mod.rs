//! Synthetic packs for the prewarm test and benchmark: one vertex and one fragment shader
//! (GLSL through glslangValidator) in a shader pack, and `n` graphics pipeline records that
//! differ in colour format, write mask, blend and topology class (so `n` distinct pipelines,
//! up to 300).

use std::path::{Path, PathBuf};

use aps5_cache::pack::PackWriter;
use aps5_cache::pipelines::{PackedPipeline, producer_identity};
use aps5_cache::records::PipelineKind;
use aps5_gpu::vulkan::{reference::compile_glsl, vk};
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

/// Writes `shaders.pack` and `pipelines.pack` with `n` pipelines into `dir`; their paths.
pub fn make_packs(dir: &Path, n: u32) -> (PathBuf, PathBuf) {
    assert!(n <= 300, "at most 300 distinct states");
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
    let shaders = dir.join("shaders.pack");
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
    let pipelines = dir.join("pipelines.pack");
    pp.write(&pipelines).unwrap();
    (shaders, pipelines)
}
