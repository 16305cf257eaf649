//! A small reference renderer for other crates' tests: a scene written in GLSL (compiled by
//! glslangValidator, Debian package glslang-tools), drawn with plain Vulkan through this
//! crate's graphics core and read back as RGBA8 bytes. The translated game shaders' frames are
//! compared with this picture: it involves no translator, no PM4 and no guest state.
//!
//! ```no_run
//! use aps5_vulkan::{Gpu, GpuOptions, reference::{Draw, Scene, render}};
//! let gpu = Gpu::new(&GpuOptions::from_env()).unwrap();
//! let vs = "#version 450\nvoid main() { vec2 p[3] = vec2[](vec2(-1,-1), vec2(3,-1), vec2(-1,3));
//!           gl_Position = vec4(p[gl_VertexIndex], 0, 1); }";
//! let fs = "#version 450\nlayout(location=0) out vec4 c; void main() { c = vec4(1,0,0,1); }";
//! let mut scene = Scene::new(32, 32, vs, fs);
//! scene.draws = vec![Draw::vertices(3)];
//! let rgba = render(&gpu, &scene).unwrap();
//! assert_eq!(&rgba[..4], &[255, 0, 0, 255]);
//! ```

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use ash::vk;

use crate::frame::{Attachment, DepthAttachment, Rendering};
use crate::graphics::{
    Blend, ColorTarget, GraphicsDesc, TopologyClass, VertexAttribute, VertexBinding,
};
use crate::image::{ImageDesc, ImageKind, SamplerDesc};
use crate::{Gpu, Result, VkError};

/// A texture bound at the next binding of set 0: `data` in `format` (tightly packed rows, or
/// rows of 4x4 blocks for BC formats).
#[derive(Clone, Debug)]
pub struct Texture {
    pub width: u32,
    pub height: u32,
    pub format: vk::Format,
    pub data: Vec<u8>,
    pub sampler: SamplerDesc,
}

/// One draw: non-indexed unless the scene has indices.
#[derive(Clone, Debug, Default)]
pub struct Draw {
    pub push_constants: Vec<u8>,
    /// Vertices (or indices when the scene has an index list).
    pub count: u32,
    pub instances: u32,
    pub first: u32,
    pub first_instance: u32,
}

impl Draw {
    pub fn vertices(count: u32) -> Draw {
        Draw {
            count,
            instances: 1,
            ..Draw::default()
        }
    }
}

/// What to draw into one colour target of `width` x `height` (R8G8B8A8_UNORM unless
/// `color_format` says otherwise).
#[derive(Clone, Debug)]
pub struct Scene {
    pub width: u32,
    pub height: u32,
    /// The colour target's format (R8G8B8A8_UNORM); the picture comes back in it.
    pub color_format: vk::Format,
    pub vertex_glsl: String,
    pub fragment_glsl: String,
    pub clear: [f32; 4],
    /// Per-vertex data in binding 0 (empty = none) and its attributes.
    pub vertices: Vec<u8>,
    pub vertex_stride: u32,
    pub vertex_attributes: Vec<VertexAttribute>,
    /// Per-instance data in binding 1 (empty = none) and its attributes.
    pub instances: Vec<u8>,
    pub instance_stride: u32,
    pub instance_attributes: Vec<VertexAttribute>,
    /// 32-bit indices (empty = non-indexed draws).
    pub indices: Vec<u32>,
    pub topology: vk::PrimitiveTopology,
    /// Push-constant bytes of the pipeline (each draw's `push_constants` fits in it).
    pub push_constant_bytes: u32,
    pub textures: Vec<Texture>,
    pub blend: Blend,
    /// A depth buffer of `depth_format` (D32_SFLOAT) cleared to `depth_clear` (1.0), tested
    /// with `depth_compare` (LESS), written when `depth_write` (on).
    pub depth: bool,
    pub depth_format: vk::Format,
    pub depth_clear: f32,
    pub depth_compare: vk::CompareOp,
    pub depth_write: bool,
    pub draws: Vec<Draw>,
}

impl Scene {
    pub fn new(width: u32, height: u32, vertex_glsl: &str, fragment_glsl: &str) -> Scene {
        Scene {
            width,
            height,
            color_format: vk::Format::R8G8B8A8_UNORM,
            vertex_glsl: vertex_glsl.into(),
            fragment_glsl: fragment_glsl.into(),
            clear: [0.0, 0.0, 0.0, 1.0],
            vertices: Vec::new(),
            vertex_stride: 0,
            vertex_attributes: Vec::new(),
            instances: Vec::new(),
            instance_stride: 0,
            instance_attributes: Vec::new(),
            indices: Vec::new(),
            topology: vk::PrimitiveTopology::TRIANGLE_LIST,
            push_constant_bytes: 0,
            textures: Vec::new(),
            blend: Blend::OPAQUE,
            depth: false,
            depth_format: vk::Format::D32_SFLOAT,
            depth_clear: 1.0,
            depth_compare: vk::CompareOp::LESS,
            depth_write: true,
            draws: Vec::new(),
        }
    }
}

static COMPILES: AtomicU64 = AtomicU64::new(0);

/// Compiles GLSL for `stage` ("vert", "frag", "comp") to SPIR-V words with
/// `glslangValidator -V --target-env vulkan1.3`; the compiler's message on failure.
pub fn compile_glsl(stage: &str, source: &str) -> Result<Vec<u32>> {
    let dir: PathBuf = std::env::temp_dir().join(format!("aps5-glsl-{}", std::process::id()));
    let io = |path: &std::path::Path, e: std::io::Error| VkError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    let n = COMPILES.fetch_add(1, Ordering::Relaxed);
    let src = dir.join(format!("s{n}.{stage}"));
    let spv = dir.join(format!("s{n}.spv"));
    std::fs::write(&src, source).map_err(|e| io(&src, e))?;
    let out = Command::new("glslangValidator")
        .args(["-V", "--target-env", "vulkan1.3", "-S", stage, "-o"])
        .arg(&spv)
        .arg(&src)
        .output()
        .map_err(|e| VkError::Io {
            path: "glslangValidator (Debian package glslang-tools)".into(),
            reason: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(VkError::Invalid(format!(
            "glslangValidator rejected the {stage} shader:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let bytes = std::fs::read(&spv).map_err(|e| io(&spv, e))?;
    let _ = std::fs::remove_file(&src);
    let _ = std::fs::remove_file(&spv);
    Ok(bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// Draws `scene` and returns its R8G8B8A8_UNORM pixels, rows top to bottom, tightly packed.
pub fn render(gpu: &Gpu, scene: &Scene) -> Result<Vec<u8>> {
    Ok(render_with_depth(gpu, scene)?.0)
}

/// [`render`], also returning the depth buffer's bytes after the draws (tightly packed rows
/// of `depth_format`'s depth aspect; empty without `depth`).
pub fn render_with_depth(gpu: &Gpu, scene: &Scene) -> Result<(Vec<u8>, Vec<u8>)> {
    render_spirv_with_depth(
        gpu,
        scene,
        &compile_glsl("vert", &scene.vertex_glsl)?,
        &compile_glsl("frag", &scene.fragment_glsl)?,
    )
}

/// [`render`] with the two stages given as SPIR-V words (e.g. translated modules); the
/// scene's GLSL sources are not used.
pub fn render_spirv(gpu: &Gpu, scene: &Scene, vertex: &[u32], fragment: &[u32]) -> Result<Vec<u8>> {
    Ok(render_spirv_with_depth(gpu, scene, vertex, fragment)?.0)
}

/// [`render_with_depth`] with the two stages given as SPIR-V words.
pub fn render_spirv_with_depth(
    gpu: &Gpu,
    scene: &Scene,
    vertex: &[u32],
    fragment: &[u32],
) -> Result<(Vec<u8>, Vec<u8>)> {
    let vs = gpu.create_shader(vk::ShaderStageFlags::VERTEX, vertex)?;
    let fs = gpu.create_shader(vk::ShaderStageFlags::FRAGMENT, fragment)?;
    let color = scene.color_format;
    let mut desc = GraphicsDesc::new(vs, fs, color);
    desc.push_constant_bytes = scene.push_constant_bytes;
    desc.textures = scene.textures.len() as u32;
    desc.topology = TopologyClass::of(scene.topology);
    desc.targets = vec![ColorTarget {
        format: color,
        blend: scene.blend,
    }];
    if !scene.vertices.is_empty() {
        desc.bindings.push(VertexBinding {
            binding: 0,
            stride: scene.vertex_stride,
            per_instance: false,
        });
        desc.attributes.extend(&scene.vertex_attributes);
    }
    if !scene.instances.is_empty() {
        desc.bindings.push(VertexBinding {
            binding: 1,
            stride: scene.instance_stride,
            per_instance: true,
        });
        desc.attributes.extend(&scene.instance_attributes);
    }
    if scene.depth {
        desc.depth_format = scene.depth_format;
    }
    let pipeline = gpu.graphics_pipeline(&desc)?;

    let target = gpu.create_image(&ImageDesc {
        width: scene.width,
        height: scene.height,
        format: color,
        kind: ImageKind::Color,
    })?;
    let depth = if scene.depth {
        Some(gpu.create_image(&ImageDesc {
            width: scene.width,
            height: scene.height,
            format: scene.depth_format,
            kind: ImageKind::Depth,
        })?)
    } else {
        None
    };
    let mut images = Vec::new();
    let mut samplers = Vec::new();
    for t in &scene.textures {
        let img = gpu.create_image(&ImageDesc {
            width: t.width,
            height: t.height,
            format: t.format,
            kind: ImageKind::Texture,
        })?;
        gpu.upload_image(&img, &t.data)?;
        images.push(img);
        samplers.push(gpu.create_sampler(&t.sampler)?);
    }
    let pairs: Vec<_> = images.iter().zip(&samplers).collect();
    let set = if pairs.is_empty() {
        None
    } else {
        Some(gpu.create_texture_set(&pipeline, &pairs)?)
    };
    let upload = |bytes: &[u8]| -> Result<Option<crate::Buffer>> {
        if bytes.is_empty() {
            return Ok(None);
        }
        let mut b = gpu.create_buffer(bytes.len() as u64)?;
        b.write(0, bytes)?;
        Ok(Some(b))
    };
    let vertices = upload(&scene.vertices)?;
    let instances = upload(&scene.instances)?;
    let index_bytes: Vec<u8> = scene.indices.iter().flat_map(|i| i.to_le_bytes()).collect();
    let indices = upload(&index_bytes)?;

    let mut rec = gpu.create_recorder(1)?;
    let mut list = rec.begin()?;
    let colors = [Attachment {
        image: &target,
        clear: Some(scene.clear),
        resolve: None,
    }];
    list.begin_rendering(&Rendering {
        colors: &colors,
        depth: depth.as_ref().map(|image| DepthAttachment {
            image,
            clear_depth: Some(scene.depth_clear),
            clear_stencil: None,
        }),
    })?;
    list.bind_pipeline(&pipeline);
    if let Some(set) = &set {
        list.bind_textures(set)?;
    }
    if let Some(v) = &vertices {
        list.bind_vertex_buffer(0, v, 0)?;
    }
    if let Some(v) = &instances {
        list.bind_vertex_buffer(1, v, 0)?;
    }
    if let Some(i) = &indices {
        list.bind_index_buffer(i, 0, vk::IndexType::UINT32)?;
    }
    list.set_topology(scene.topology);
    if scene.depth {
        list.set_depth(true, scene.depth_write, scene.depth_compare);
    }
    for d in &scene.draws {
        if !d.push_constants.is_empty() {
            list.push_constants(&d.push_constants)?;
        }
        if indices.is_some() {
            list.draw_indexed(d.count, d.instances, d.first, 0, d.first_instance)?;
        } else {
            list.draw(d.count, d.instances, d.first, d.first_instance)?;
        }
    }
    list.end_rendering()?;
    let done = list.submit()?;
    rec.wait(done)?;
    let pixels = gpu.read_image(&target)?;
    let depth = match &depth {
        Some(d) => gpu.read_image(d)?,
        None => Vec::new(),
    };
    gpu.check_validation()?;
    Ok((pixels, depth))
}
