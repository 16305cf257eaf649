//! Graphics pipelines from vertex + fragment SPIR-V, for dynamic rendering (Vulkan 1.3).
//!
//! Every pipeline has the translator's push-constant block (docs/SHADER_ABI.md: 96 bytes, or
//! what [`GraphicsDesc::push_constant_bytes`] says) visible to both stages, and optionally one
//! descriptor set (set 0) of `textures` combined image samplers, bindings 0.., visible to the
//! fragment stage; a rect list adds a generated geometry stage ([`GraphicsDesc::rect`]).
//! Viewport, scissor, cull mode, front face, topology (within its class),
//! depth test / write / compare op and the stencil test are dynamic state (core in Vulkan 1.3),
//! primitive restart and depth bias, so they are not part of a pipeline's key; blending, write masks, formats, vertex layout and
//! shaders are.
//!
//! [`Gpu::graphics_pipeline`] looks the key up in an in-memory cache. On a device with
//! VK_EXT_graphics_pipeline_library and fast linking ([`crate::DeviceInfo::pipeline_library`])
//! a miss builds (or reuses) four libraries (vertex input, pre-rasterization, fragment shader,
//! fragment output), each cached by the part of the key it depends on, fast-links them, and
//! starts an optimised link (LINK_TIME_OPTIMIZATION) on a background thread that replaces the
//! fast-linked pipeline for later binds when done. Otherwise it builds a whole pipeline (also
//! for the one driver bug worked around: see `library_workaround`).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use ash::vk;
use vk::Handle;

use crate::rects::{RectExpansion, rect_geometry_spirv};
use crate::{Gpu, Inner, Result, VkError, call};

/// A SPIR-V module for one stage, entry point `main`.
pub struct Shader {
    inner: Arc<Inner>,
    module: vk::ShaderModule,
    stage: vk::ShaderStageFlags,
    /// A hash of the stage and the words: the shader's part of a pipeline key.
    id: u64,
}

impl Shader {
    pub fn id(&self) -> u64 {
        self.id
    }
    pub fn stage(&self) -> vk::ShaderStageFlags {
        self.stage
    }
}

impl PartialEq for Shader {
    fn eq(&self, other: &Shader) -> bool {
        self.id == other.id
    }
}
impl Eq for Shader {}
impl Hash for Shader {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.id.hash(h);
    }
}
impl std::fmt::Debug for Shader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Shader({:?} {:016x})", self.stage, self.id)
    }
}
impl Drop for Shader {
    fn drop(&mut self) {
        // SAFETY: pipelines keep no reference to their modules.
        unsafe { self.inner.device.destroy_shader_module(self.module, None) };
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VertexBinding {
    pub binding: u32,
    pub stride: u32,
    /// Advance per instance instead of per vertex.
    pub per_instance: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VertexAttribute {
    pub location: u32,
    pub binding: u32,
    pub format: vk::Format,
    pub offset: u32,
}

/// The topology class a pipeline is built for; the topology itself is dynamic within it
/// ([`crate::frame::CommandList::set_topology`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TopologyClass {
    Points,
    Lines,
    Triangles,
}

impl TopologyClass {
    pub fn of(t: vk::PrimitiveTopology) -> TopologyClass {
        use vk::PrimitiveTopology as T;
        match t {
            T::POINT_LIST => TopologyClass::Points,
            T::LINE_LIST | T::LINE_STRIP => TopologyClass::Lines,
            _ => TopologyClass::Triangles,
        }
    }
    fn representative(self) -> vk::PrimitiveTopology {
        match self {
            TopologyClass::Points => vk::PrimitiveTopology::POINT_LIST,
            TopologyClass::Lines => vk::PrimitiveTopology::LINE_LIST,
            TopologyClass::Triangles => vk::PrimitiveTopology::TRIANGLE_LIST,
        }
    }
}

/// Blending of one colour attachment and its write mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Blend {
    pub enable: bool,
    pub src_color: vk::BlendFactor,
    pub dst_color: vk::BlendFactor,
    pub color_op: vk::BlendOp,
    pub src_alpha: vk::BlendFactor,
    pub dst_alpha: vk::BlendFactor,
    pub alpha_op: vk::BlendOp,
    pub write_mask: vk::ColorComponentFlags,
}

impl Blend {
    /// No blending, all channels written.
    pub const OPAQUE: Blend = Blend {
        enable: false,
        src_color: vk::BlendFactor::ONE,
        dst_color: vk::BlendFactor::ZERO,
        color_op: vk::BlendOp::ADD,
        src_alpha: vk::BlendFactor::ONE,
        dst_alpha: vk::BlendFactor::ZERO,
        alpha_op: vk::BlendOp::ADD,
        write_mask: vk::ColorComponentFlags::RGBA,
    };
    /// Non-premultiplied alpha: rgb = src * a + dst * (1 - a); a = src_a + dst_a * (1 - src_a).
    pub const ALPHA: Blend = Blend {
        enable: true,
        src_color: vk::BlendFactor::SRC_ALPHA,
        dst_color: vk::BlendFactor::ONE_MINUS_SRC_ALPHA,
        color_op: vk::BlendOp::ADD,
        src_alpha: vk::BlendFactor::ONE,
        dst_alpha: vk::BlendFactor::ONE_MINUS_SRC_ALPHA,
        alpha_op: vk::BlendOp::ADD,
        write_mask: vk::ColorComponentFlags::RGBA,
    };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ColorTarget {
    pub format: vk::Format,
    pub blend: Blend,
}

/// Everything a graphics pipeline is built from: its key in the cache.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GraphicsDesc {
    pub vertex: Arc<Shader>,
    pub fragment: Arc<Shader>,
    /// Push-constant bytes visible to both stages (96 for translated shaders).
    pub push_constant_bytes: u32,
    /// Combined image samplers in set 0, bindings 0..textures (fragment stage).
    pub textures: u32,
    pub bindings: Vec<VertexBinding>,
    pub attributes: Vec<VertexAttribute>,
    pub topology: TopologyClass,
    pub targets: Vec<ColorTarget>,
    /// vk::Format::UNDEFINED = no depth attachment.
    pub depth_format: vk::Format,
    /// Samples per pixel of the attachments (1 = no multisampling).
    pub samples: u32,
    /// A rect list: each triangle becomes the AMD hardware's rectangle through a generated
    /// geometry stage ([`crate::rects`]; needs geometryShader). `topology` is Triangles.
    pub rect: Option<RectExpansion>,
}

impl GraphicsDesc {
    /// A description with no vertex buffers, the translator's 96-byte push constants, no
    /// textures, triangles, one colour target without blending and no depth.
    pub fn new(vertex: Arc<Shader>, fragment: Arc<Shader>, color: vk::Format) -> GraphicsDesc {
        GraphicsDesc {
            vertex,
            fragment,
            push_constant_bytes: 96,
            textures: 0,
            bindings: Vec::new(),
            attributes: Vec::new(),
            topology: TopologyClass::Triangles,
            targets: vec![ColorTarget {
                format: color,
                blend: Blend::OPAQUE,
            }],
            depth_format: vk::Format::UNDEFINED,
            samples: 1,
            rect: None,
        }
    }
}

/// How a pipeline was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipelinePath {
    /// vkCreateGraphicsPipelines with every state at once.
    Whole,
    /// Fast-linked from graphics pipeline libraries; `optimized` once the background
    /// link-time-optimised pipeline has replaced it.
    Linked { optimized: bool },
}

/// A pipeline layout: push constants for both stages plus an optional texture set.
pub(crate) struct Layout {
    inner: Arc<Inner>,
    pub(crate) set_layout: vk::DescriptorSetLayout,
    pub(crate) layout: vk::PipelineLayout,
    pub(crate) push_constant_bytes: u32,
    pub(crate) textures: u32,
}

impl Drop for Layout {
    fn drop(&mut self) {
        // SAFETY: every pipeline and set using the layout holds an Arc to it and is gone.
        unsafe {
            self.inner.device.destroy_pipeline_layout(self.layout, None);
            if self.set_layout != vk::DescriptorSetLayout::null() {
                self.inner
                    .device
                    .destroy_descriptor_set_layout(self.set_layout, None);
            }
        }
    }
}

/// One graphics pipeline library (a part of a linked pipeline).
struct Library {
    inner: Arc<Inner>,
    pipeline: vk::Pipeline,
}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: linked pipelines do not need their libraries after creation; the last
        // holder is the cache or a pipeline, both gone.
        unsafe { self.inner.device.destroy_pipeline(self.pipeline, None) };
    }
}

pub struct GraphicsPipeline {
    inner: Arc<Inner>,
    pub(crate) layout: Arc<Layout>,
    /// The whole or fast-linked pipeline.
    first: vk::Pipeline,
    /// The background optimised link: (finished, its pipeline if it succeeded).
    optimized: Mutex<(bool, Option<vk::Pipeline>)>,
    optimized_done: Condvar,
    /// Which of the two binds use (a vk::Pipeline's raw handle).
    current: AtomicU64,
    libraries: Vec<Arc<Library>>,
    linked: bool,
    desc: GraphicsDesc,
    build_time: Duration,
}

impl GraphicsPipeline {
    pub fn desc(&self) -> &GraphicsDesc {
        &self.desc
    }
    pub fn path(&self) -> PipelinePath {
        if self.linked {
            PipelinePath::Linked {
                optimized: self.current.load(Ordering::Acquire) != self.first.as_raw(),
            }
        } else {
            PipelinePath::Whole
        }
    }
    /// Time the call that made it took (fast link including any library it had to build, or
    /// the whole pipeline).
    pub fn build_time(&self) -> Duration {
        self.build_time
    }
    /// Waits for the background optimised link (returns at once on the whole path).
    pub fn wait_optimized(&self) {
        if !self.linked {
            return;
        }
        let mut g = self.optimized.lock().unwrap_or_else(|e| e.into_inner());
        while !g.0 {
            g = self
                .optimized_done
                .wait(g)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
    /// Builds the link-time-optimised pipeline and makes binds use it; false if that failed
    /// (the fast-linked one stays). Wakes `wait_optimized` either way.
    fn optimize(&self) -> bool {
        let handles: Vec<vk::Pipeline> = self.libraries.iter().map(|l| l.pipeline).collect();
        let built = build(
            &self.inner.device,
            self.inner.pipeline_cache,
            &self.desc,
            &self.layout,
            Build::Link {
                libraries: &handles,
                optimize: true,
            },
        );
        let mut g = self.optimized.lock().unwrap_or_else(|e| e.into_inner());
        let ok = built.is_ok();
        if let Ok(opt) = built {
            g.1 = Some(opt);
            self.current.store(opt.as_raw(), Ordering::Release);
        }
        g.0 = true;
        drop(g);
        self.optimized_done.notify_all();
        ok
    }

    fn give_up_optimizing(&self) {
        self.optimized.lock().unwrap_or_else(|e| e.into_inner()).0 = true;
        self.optimized_done.notify_all();
    }

    /// The vk::Pipeline a bind uses now (the optimised link once it is done).
    pub fn raw_handle(&self) -> vk::Pipeline {
        self.handle()
    }
    /// Its pipeline layout (push constants for both stages, set 0 = textures).
    pub fn raw_layout(&self) -> vk::PipelineLayout {
        self.layout.layout
    }
    /// The handle a bind uses now.
    pub(crate) fn handle(&self) -> vk::Pipeline {
        vk::Pipeline::from_raw(self.current.load(Ordering::Acquire))
    }
    pub(crate) fn pipeline_layout(&self) -> vk::PipelineLayout {
        self.layout.layout
    }
    pub fn push_constant_bytes(&self) -> u32 {
        self.layout.push_constant_bytes
    }
}

impl Drop for GraphicsPipeline {
    fn drop(&mut self) {
        self.inner.wait_idle();
        let d = &self.inner.device;
        // SAFETY: the queue is idle and no background link holds this pipeline (it holds an
        // Arc to it until it stores its result).
        unsafe {
            d.destroy_pipeline(self.first, None);
            if let Some(p) = self
                .optimized
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .1
                .take()
            {
                d.destroy_pipeline(p, None);
            }
        }
    }
}

/// Counters of the cache, for benchmarks and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    /// Pipelines built because a caller asked for one the cache lacked ([`Gpu::graphics_pipeline`]).
    pub misses: u64,
    /// Pipelines built ahead of use ([`Gpu::prewarm_graphics_pipeline`]).
    pub prewarmed: u64,
    /// Lookups that found their pipeline being built (by a prewarm thread) and waited for it.
    pub waited: u64,
    pub libraries_built: u64,
    pub whole_built: u64,
    pub fast_linked: u64,
    pub optimized_linked: u64,
}

/// A pipeline of the cache, or one being built (by another thread: whoever asks for it
/// meanwhile waits for that build rather than making a second one).
enum Slot {
    Ready(Arc<GraphicsPipeline>),
    Building(Arc<Pending>),
}

/// A build in progress: None until done, then Some(the pipeline, or None if it failed).
#[derive(Default)]
struct Pending {
    done: Mutex<Option<Option<Arc<GraphicsPipeline>>>>,
    cv: Condvar,
}

impl Pending {
    fn finish(&self, p: Option<Arc<GraphicsPipeline>>) {
        *self.done.lock().unwrap_or_else(|e| e.into_inner()) = Some(p);
        self.cv.notify_all();
    }
    fn wait(&self) -> Option<Arc<GraphicsPipeline>> {
        let mut g = self.done.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(p) = &*g {
                return p.clone();
            }
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}

#[derive(Default)]
pub(crate) struct GraphicsCache {
    pipelines: HashMap<GraphicsDesc, Slot>,
    layouts: HashMap<(u32, u32), Arc<Layout>>,
    libraries: HashMap<(u32, u64), Arc<Library>>,
    stats: CacheStats,
    /// The optimised-link worker's queue (None until the first linked pipeline; Some(None) if
    /// the thread could not be started).
    optimizer: Option<Option<std::sync::mpsc::Sender<Arc<GraphicsPipeline>>>>,
    /// Optimised links finished (counted by the worker).
    optimized: Arc<AtomicU64>,
}

/// Pipeline builds on background threads (optimised links, and callers' own such as a
/// prewarm), counted process-wide so that the process can wait for them before it exits: a
/// driver thread still compiling while `exit` tears the driver down corrupts its heap (seen
/// on NVIDIA: glibc's "corrupted double-linked list" at the exit of a run that ended during
/// its first optimised link).
static BACKGROUND: (Mutex<(usize, bool)>, Condvar) = (Mutex::new((0, false)), Condvar::new());

/// One background build in progress (see [`end_background_work`]).
pub struct Background(());

impl Background {
    /// Counts a background build until the guard drops; None once the process is ending
    /// (then the build must not start).
    pub fn enter() -> Option<Background> {
        let mut g = BACKGROUND.0.lock().unwrap_or_else(|e| e.into_inner());
        if g.1 {
            return None;
        }
        g.0 += 1;
        Some(Background(()))
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let mut g = BACKGROUND.0.lock().unwrap_or_else(|e| e.into_inner());
        g.0 -= 1;
        if g.0 == 0 {
            BACKGROUND.1.notify_all();
        }
    }
}

/// The process is ending: no background build starts from now on, and this returns once the
/// ones in progress have finished. Call it before `exit` (the PRX's exit handler does).
pub fn end_background_work() {
    let mut g = BACKGROUND.0.lock().unwrap_or_else(|e| e.into_inner());
    g.1 = true;
    while g.0 > 0 {
        g = BACKGROUND.1.wait(g).unwrap_or_else(|e| e.into_inner());
    }
}

fn key_of(parts: impl Hash) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

/// The dynamic states of every pipeline, by the library subset they belong to.
const DYNAMIC_VERTEX_INPUT: &[vk::DynamicState] = &[
    vk::DynamicState::PRIMITIVE_TOPOLOGY,
    vk::DynamicState::PRIMITIVE_RESTART_ENABLE,
];
const DYNAMIC_PRE_RASTER: &[vk::DynamicState] = &[
    vk::DynamicState::VIEWPORT,
    vk::DynamicState::SCISSOR,
    vk::DynamicState::CULL_MODE,
    vk::DynamicState::FRONT_FACE,
    vk::DynamicState::DEPTH_BIAS_ENABLE,
    vk::DynamicState::DEPTH_BIAS,
];
const DYNAMIC_FRAGMENT: &[vk::DynamicState] = &[
    vk::DynamicState::DEPTH_TEST_ENABLE,
    vk::DynamicState::DEPTH_WRITE_ENABLE,
    vk::DynamicState::DEPTH_COMPARE_OP,
    vk::DynamicState::STENCIL_TEST_ENABLE,
    vk::DynamicState::STENCIL_OP,
    vk::DynamicState::STENCIL_COMPARE_MASK,
    vk::DynamicState::STENCIL_WRITE_MASK,
    vk::DynamicState::STENCIL_REFERENCE,
];

type LibFlags = vk::GraphicsPipelineLibraryFlagsEXT;

impl Gpu {
    /// Makes a shader module from SPIR-V words (entry point `main`).
    pub fn create_shader(&self, stage: vk::ShaderStageFlags, spirv: &[u32]) -> Result<Arc<Shader>> {
        let info = vk::ShaderModuleCreateInfo::default().code(spirv);
        // SAFETY: valid create info; the validation layer checks the SPIR-V when on.
        let module = call("vkCreateShaderModule", unsafe {
            self.inner.device.create_shader_module(&info, None)
        })?;
        self.check_validation()?;
        Ok(Arc::new(Shader {
            inner: self.inner.clone(),
            module,
            stage,
            id: key_of((stage.as_raw(), spirv)),
        }))
    }

    /// The pipeline for `desc`, from the in-memory cache or built now (see the module docs).
    /// One a prewarm thread is building is waited for, not built twice.
    pub fn graphics_pipeline(&self, desc: &GraphicsDesc) -> Result<Arc<GraphicsPipeline>> {
        self.pipeline_for(desc, false).map(|(p, _)| p)
    }

    /// Builds the pipeline for `desc` ahead of its first use (counted as prewarmed, not as a
    /// miss); true if this call built it, false if it was there or being built already.
    pub fn prewarm_graphics_pipeline(&self, desc: &GraphicsDesc) -> Result<bool> {
        self.pipeline_for(desc, true).map(|(_, built)| built)
    }

    fn pipeline_for(
        &self,
        desc: &GraphicsDesc,
        prewarm: bool,
    ) -> Result<(Arc<GraphicsPipeline>, bool)> {
        if !self.info.dynamic_rendering || !self.info.graphics_queue {
            return Err(VkError::Unsupported {
                name: self.info.name.clone(),
                what: "graphics needs a graphics queue, dynamicRendering and synchronization2 \
                       (Vulkan 1.3)"
                    .into(),
            });
        }
        if desc.vertex.stage != vk::ShaderStageFlags::VERTEX
            || desc.fragment.stage != vk::ShaderStageFlags::FRAGMENT
        {
            return Err(VkError::Invalid(format!(
                "graphics pipeline from a {:?} and a {:?} shader (want vertex + fragment)",
                desc.vertex.stage, desc.fragment.stage
            )));
        }
        if desc.push_constant_bytes > self.info.max_push_constants_size
            || !desc.push_constant_bytes.is_multiple_of(4)
        {
            return Err(VkError::Invalid(format!(
                "{} bytes of push constants (a multiple of 4, at most {})",
                desc.push_constant_bytes, self.info.max_push_constants_size
            )));
        }
        if !matches!(desc.samples, 1 | 2 | 4 | 8) {
            return Err(VkError::Invalid(format!(
                "{} samples per pixel (1, 2, 4 or 8)",
                desc.samples
            )));
        }
        for a in &desc.attributes {
            if !desc.bindings.iter().any(|b| b.binding == a.binding) {
                return Err(VkError::Invalid(format!(
                    "vertex attribute at location {} reads binding {}, which is not described",
                    a.location, a.binding
                )));
            }
        }
        if desc.rect.is_some() && !self.info.geometry_shader {
            return Err(VkError::Unsupported {
                name: self.info.name.clone(),
                what: "rect lists need geometryShader (the rectangle is made by a geometry \
                       stage)"
                    .into(),
            });
        }
        if !self.info.independent_blend && desc.targets.windows(2).any(|w| w[0].blend != w[1].blend)
        {
            return Err(VkError::Unsupported {
                name: self.info.name.clone(),
                what: "colour targets that blend differently (no independentBlend)".into(),
            });
        }
        let pending = loop {
            let mut cache = self.graphics.lock().unwrap_or_else(|e| e.into_inner());
            match cache.pipelines.get(desc) {
                Some(Slot::Ready(p)) => {
                    let p = p.clone();
                    if !prewarm {
                        cache.stats.hits += 1;
                    }
                    return Ok((p, false));
                }
                Some(Slot::Building(b)) => {
                    let b = b.clone();
                    if !prewarm {
                        cache.stats.waited += 1;
                    }
                    drop(cache);
                    match b.wait() {
                        Some(p) => {
                            if !prewarm {
                                self.graphics
                                    .lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .stats
                                    .hits += 1;
                            }
                            return Ok((p, false));
                        }
                        // That build failed: build it here (and report its own error).
                        None => continue,
                    }
                }
                None => {
                    let b = Arc::new(Pending::default());
                    cache
                        .pipelines
                        .insert(desc.clone(), Slot::Building(b.clone()));
                    break b;
                }
            }
        };
        let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.build_pipeline(desc).and_then(|p| {
                self.check_validation()?;
                Ok(p)
            })
        }));
        let mut cache = self.graphics.lock().unwrap_or_else(|e| e.into_inner());
        // A build that panicked must not leave its waiters waiting for ever.
        let built = match built {
            Ok(b) => b,
            Err(panic) => {
                cache.pipelines.remove(desc);
                drop(cache);
                pending.finish(None);
                std::panic::resume_unwind(panic);
            }
        };
        match built {
            Ok(p) => {
                if prewarm {
                    cache.stats.prewarmed += 1;
                } else {
                    cache.stats.misses += 1;
                }
                cache.pipelines.insert(desc.clone(), Slot::Ready(p.clone()));
                drop(cache);
                pending.finish(Some(p.clone()));
                Ok((p, true))
            }
            Err(e) => {
                cache.pipelines.remove(desc);
                drop(cache);
                pending.finish(None);
                Err(e)
            }
        }
    }

    /// Builds the pipeline for `desc` (libraries + fast link, or whole), the cache unlocked
    /// but for its lookups, so prewarm threads build side by side.
    fn build_pipeline(&self, desc: &GraphicsDesc) -> Result<Arc<GraphicsPipeline>> {
        let start = Instant::now();
        let layout = {
            let mut cache = self.graphics.lock().unwrap_or_else(|e| e.into_inner());
            self.layout(&mut cache, desc.push_constant_bytes, desc.textures)?
        };
        let d = &self.inner.device;
        let pc = self.inner.pipeline_cache;
        let pipeline = if self.info.pipeline_library && !self.library_workaround(desc) {
            let parts = [
                (
                    LibFlags::VERTEX_INPUT_INTERFACE,
                    key_of((&desc.bindings, &desc.attributes, desc.topology)),
                ),
                (
                    LibFlags::PRE_RASTERIZATION_SHADERS,
                    key_of((
                        desc.vertex.id,
                        desc.rect,
                        desc.push_constant_bytes,
                        desc.textures,
                    )),
                ),
                (
                    LibFlags::FRAGMENT_SHADER,
                    key_of((
                        desc.fragment.id,
                        desc.push_constant_bytes,
                        desc.textures,
                        desc.depth_format,
                    )),
                ),
                (
                    LibFlags::FRAGMENT_OUTPUT_INTERFACE,
                    key_of((&desc.targets, desc.depth_format, desc.samples)),
                ),
            ];
            let mut libraries = Vec::with_capacity(4);
            for (flag, key) in parts {
                let known = self
                    .graphics
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .libraries
                    .get(&(flag.as_raw(), key))
                    .cloned();
                let lib = match known {
                    Some(l) => l,
                    None => {
                        // Built unlocked: two threads may build the same library at once; the
                        // first stored is kept, the other dropped (a rare, harmless repeat).
                        let p = build(d, pc, desc, &layout, Build::Library(flag))?;
                        let l = Arc::new(Library {
                            inner: self.inner.clone(),
                            pipeline: p,
                        });
                        let mut cache = self.graphics.lock().unwrap_or_else(|e| e.into_inner());
                        cache.stats.libraries_built += 1;
                        cache
                            .libraries
                            .entry((flag.as_raw(), key))
                            .or_insert(l)
                            .clone()
                    }
                };
                libraries.push(lib);
            }
            let handles: Vec<vk::Pipeline> = libraries.iter().map(|l| l.pipeline).collect();
            let first = build(
                d,
                pc,
                desc,
                &layout,
                Build::Link {
                    libraries: &handles,
                    optimize: false,
                },
            )?;
            let p = Arc::new(GraphicsPipeline {
                inner: self.inner.clone(),
                layout: layout.clone(),
                first,
                optimized: Mutex::new((false, None)),
                optimized_done: Condvar::new(),
                current: AtomicU64::new(first.as_raw()),
                libraries,
                linked: true,
                desc: desc.clone(),
                build_time: start.elapsed(),
            });
            // The optimised link runs on the cache's worker thread (one for all pipelines, in
            // the order they were first asked for); binds switch to it when it is stored.
            let mut cache = self.graphics.lock().unwrap_or_else(|e| e.into_inner());
            cache.stats.fast_linked += 1;
            let optimized = cache.optimized.clone();
            let worker = cache.optimizer.get_or_insert_with(|| {
                let (tx, rx) = std::sync::mpsc::channel::<Arc<GraphicsPipeline>>();
                std::thread::Builder::new()
                    .name("aps5-vk-optimize".into())
                    .spawn(move || {
                        // Ends when the Gpu (the sender's owner) is dropped.
                        for p in rx {
                            let Some(_busy) = Background::enter() else {
                                p.give_up_optimizing();
                                continue;
                            };
                            if p.optimize() {
                                optimized.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    })
                    .map(|_| tx)
                    .ok()
            });
            if let Some(tx) = worker {
                if tx.send(p.clone()).is_err() {
                    p.give_up_optimizing();
                }
            } else {
                p.give_up_optimizing();
            }
            p
        } else {
            let first = build(d, pc, desc, &layout, Build::Whole)?;
            self.graphics
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .stats
                .whole_built += 1;
            Arc::new(GraphicsPipeline {
                inner: self.inner.clone(),
                layout: layout.clone(),
                first,
                optimized: Mutex::new((true, None)),
                optimized_done: Condvar::new(),
                current: AtomicU64::new(first.as_raw()),
                libraries: Vec::new(),
                linked: false,
                desc: desc.clone(),
                build_time: start.elapsed(),
            })
        };
        Ok(pipeline)
    }

    /// Whether `desc` must be built whole although the device has pipeline libraries: Mesa
    /// 22.3 lavapipe applies the first attachment's blend state and write mask to every colour
    /// attachment of a library-linked pipeline (seen in tests/graphics.rs, both fast and
    /// optimised links), so pipelines whose targets differ are built whole there.
    fn library_workaround(&self, desc: &GraphicsDesc) -> bool {
        self.info.driver_id == vk::DriverId::MESA_LLVMPIPE
            && desc.targets.windows(2).any(|w| w[0].blend != w[1].blend)
    }

    /// Counters of the pipeline cache (hits, misses, what was built).
    pub fn pipeline_cache_stats(&self) -> CacheStats {
        let mut s = self
            .graphics
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .stats;
        s.optimized_linked = self
            .graphics
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .optimized
            .load(Ordering::Relaxed);
        s
    }

    fn layout(
        &self,
        cache: &mut GraphicsCache,
        push_constant_bytes: u32,
        textures: u32,
    ) -> Result<Arc<Layout>> {
        if let Some(l) = cache.layouts.get(&(push_constant_bytes, textures)) {
            return Ok(l.clone());
        }
        let d = &self.inner.device;
        let mut set_layout = vk::DescriptorSetLayout::null();
        if textures > 0 {
            let bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..textures)
                .map(|b| {
                    vk::DescriptorSetLayoutBinding::default()
                        .binding(b)
                        .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
                        .descriptor_count(1)
                        .stage_flags(vk::ShaderStageFlags::FRAGMENT)
                })
                .collect();
            let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
            // SAFETY: valid create info.
            set_layout = call("vkCreateDescriptorSetLayout", unsafe {
                d.create_descriptor_set_layout(&info, None)
            })?;
        }
        let ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT)
            .size(push_constant_bytes)];
        let sets = [set_layout];
        let mut info = vk::PipelineLayoutCreateInfo::default();
        if push_constant_bytes > 0 {
            info = info.push_constant_ranges(&ranges);
        }
        if textures > 0 {
            info = info.set_layouts(&sets);
        }
        // SAFETY: valid create info.
        let layout = match unsafe { d.create_pipeline_layout(&info, None) } {
            Ok(l) => l,
            Err(result) => {
                if textures > 0 {
                    // SAFETY: unused.
                    unsafe { d.destroy_descriptor_set_layout(set_layout, None) };
                }
                return Err(VkError::Call {
                    call: "vkCreatePipelineLayout",
                    result,
                });
            }
        };
        let l = Arc::new(Layout {
            inner: self.inner.clone(),
            set_layout,
            layout,
            push_constant_bytes,
            textures,
        });
        cache
            .layouts
            .insert((push_constant_bytes, textures), l.clone());
        Ok(l)
    }
}

enum Build<'a> {
    Whole,
    Library(LibFlags),
    Link {
        libraries: &'a [vk::Pipeline],
        optimize: bool,
    },
}

/// Creates a whole pipeline, one library, or a link of libraries for `desc`.
fn build(
    d: &ash::Device,
    cache: vk::PipelineCache,
    desc: &GraphicsDesc,
    layout: &Layout,
    what: Build<'_>,
) -> Result<vk::Pipeline> {
    let all = LibFlags::VERTEX_INPUT_INTERFACE
        | LibFlags::PRE_RASTERIZATION_SHADERS
        | LibFlags::FRAGMENT_SHADER
        | LibFlags::FRAGMENT_OUTPUT_INTERFACE;
    let subset = match what {
        Build::Whole => all,
        Build::Library(f) => f,
        Build::Link { .. } => LibFlags::empty(),
    };
    let has = |f: LibFlags| subset.contains(f);

    let bindings: Vec<vk::VertexInputBindingDescription> = desc
        .bindings
        .iter()
        .map(|b| vk::VertexInputBindingDescription {
            binding: b.binding,
            stride: b.stride,
            input_rate: if b.per_instance {
                vk::VertexInputRate::INSTANCE
            } else {
                vk::VertexInputRate::VERTEX
            },
        })
        .collect();
    let attributes: Vec<vk::VertexInputAttributeDescription> = desc
        .attributes
        .iter()
        .map(|a| vk::VertexInputAttributeDescription {
            location: a.location,
            binding: a.binding,
            format: a.format,
            offset: a.offset,
        })
        .collect();
    let vertex_input = vk::PipelineVertexInputStateCreateInfo::default()
        .vertex_binding_descriptions(&bindings)
        .vertex_attribute_descriptions(&attributes);
    let assembly = vk::PipelineInputAssemblyStateCreateInfo::default()
        .topology(desc.topology.representative());
    let viewport = vk::PipelineViewportStateCreateInfo::default()
        .viewport_count(1)
        .scissor_count(1);
    let raster = vk::PipelineRasterizationStateCreateInfo::default()
        .polygon_mode(vk::PolygonMode::FILL)
        .line_width(1.0);
    let multisample = vk::PipelineMultisampleStateCreateInfo::default()
        .rasterization_samples(vk::SampleCountFlags::from_raw(desc.samples));
    let depth_stencil = vk::PipelineDepthStencilStateCreateInfo::default()
        .depth_compare_op(vk::CompareOp::LESS)
        .max_depth_bounds(1.0);
    let attachments: Vec<vk::PipelineColorBlendAttachmentState> = desc
        .targets
        .iter()
        .map(|t| {
            vk::PipelineColorBlendAttachmentState::default()
                .blend_enable(t.blend.enable)
                .src_color_blend_factor(t.blend.src_color)
                .dst_color_blend_factor(t.blend.dst_color)
                .color_blend_op(t.blend.color_op)
                .src_alpha_blend_factor(t.blend.src_alpha)
                .dst_alpha_blend_factor(t.blend.dst_alpha)
                .alpha_blend_op(t.blend.alpha_op)
                .color_write_mask(t.blend.write_mask)
        })
        .collect();
    let blend = vk::PipelineColorBlendStateCreateInfo::default().attachments(&attachments);
    let formats: Vec<vk::Format> = desc.targets.iter().map(|t| t.format).collect();
    let stencil_format = match crate::image::depth_aspects(desc.depth_format) {
        Some(true) => desc.depth_format,
        _ => vk::Format::UNDEFINED,
    };
    let mut rendering = vk::PipelineRenderingCreateInfo::default()
        .color_attachment_formats(&formats)
        .depth_attachment_format(desc.depth_format)
        .stencil_attachment_format(stencil_format);
    let mut dynamic: Vec<vk::DynamicState> = Vec::new();
    if has(LibFlags::VERTEX_INPUT_INTERFACE) {
        dynamic.extend(DYNAMIC_VERTEX_INPUT);
    }
    if has(LibFlags::PRE_RASTERIZATION_SHADERS) {
        dynamic.extend(DYNAMIC_PRE_RASTER);
    }
    if has(LibFlags::FRAGMENT_SHADER) {
        dynamic.extend(DYNAMIC_FRAGMENT);
    }
    let dynamic_info = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&dynamic);
    let mut stages = Vec::new();
    // The rect stage's module lives for this call only (a pipeline keeps no reference).
    let mut geometry = None;
    if has(LibFlags::PRE_RASTERIZATION_SHADERS) {
        stages.push(
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::VERTEX)
                .module(desc.vertex.module)
                .name(c"main"),
        );
        if let Some(r) = desc.rect {
            let words = rect_geometry_spirv(r);
            let info = vk::ShaderModuleCreateInfo::default().code(&words);
            // SAFETY: valid create info.
            let m = call("vkCreateShaderModule (rect list stage)", unsafe {
                d.create_shader_module(&info, None)
            })?;
            geometry = Some(m);
            stages.push(
                vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::GEOMETRY)
                    .module(m)
                    .name(c"main"),
            );
        }
    }
    if has(LibFlags::FRAGMENT_SHADER) {
        stages.push(
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::FRAGMENT)
                .module(desc.fragment.module)
                .name(c"main"),
        );
    }

    let mut info = vk::GraphicsPipelineCreateInfo::default()
        .layout(layout.layout)
        .stages(&stages)
        .dynamic_state(&dynamic_info);
    if has(LibFlags::VERTEX_INPUT_INTERFACE) {
        info = info
            .vertex_input_state(&vertex_input)
            .input_assembly_state(&assembly);
    }
    if has(LibFlags::PRE_RASTERIZATION_SHADERS) {
        info = info.viewport_state(&viewport).rasterization_state(&raster);
    }
    if has(LibFlags::FRAGMENT_SHADER) {
        info = info
            .depth_stencil_state(&depth_stencil)
            .multisample_state(&multisample);
    }
    if has(LibFlags::FRAGMENT_OUTPUT_INTERFACE) {
        info = info
            .color_blend_state(&blend)
            .multisample_state(&multisample);
    }
    let mut library_info = vk::GraphicsPipelineLibraryCreateInfoEXT::default().flags(subset);
    let mut link_info = vk::PipelineLibraryCreateInfoKHR::default();
    let call_name = match what {
        Build::Whole => "vkCreateGraphicsPipelines (whole)",
        Build::Library(_) => {
            info = info
                .flags(
                    vk::PipelineCreateFlags::LIBRARY_KHR
                        | vk::PipelineCreateFlags::RETAIN_LINK_TIME_OPTIMIZATION_INFO_EXT,
                )
                .push_next(&mut library_info);
            "vkCreateGraphicsPipelines (library)"
        }
        Build::Link {
            libraries,
            optimize,
        } => {
            link_info = link_info.libraries(libraries);
            if optimize {
                info = info.flags(vk::PipelineCreateFlags::LINK_TIME_OPTIMIZATION_EXT);
            }
            info = info.push_next(&mut link_info);
            "vkCreateGraphicsPipelines (link)"
        }
    };
    // The attachment formats belong to the fragment output interface (a library without it
    // takes none: viewMask 0 is the default).
    if has(LibFlags::FRAGMENT_OUTPUT_INTERFACE) {
        info = info.push_next(&mut rendering);
    }
    // SAFETY: every struct the create info points to lives until the call returns.
    let created = unsafe { d.create_graphics_pipelines(cache, &[info], None) };
    if let Some(m) = geometry {
        // SAFETY: the pipeline no longer needs its module.
        unsafe { d.destroy_shader_module(m, None) };
    }
    match created {
        Ok(p) => Ok(p[0]),
        Err((_, result)) => Err(VkError::Call {
            call: call_name,
            result,
        }),
    }
}
