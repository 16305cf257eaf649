//! Recording frames: a [`Recorder`] owns a command pool, a ring of command buffers and a
//! timeline semaphore; [`Recorder::begin`] hands out a [`CommandList`] that records rendering
//! (dynamic rendering with clears), pipeline / texture / vertex / index binds, push constants,
//! dynamic state, draws and dispatches, and [`CommandList::submit`] returns the timeline value
//! the caller waits on ([`Recorder::wait`]).
//!
//! Built for many draws: a command list allocates nothing per draw, and every bind and every
//! dynamic-state call is filtered against what the command buffer already has, so a draw whose
//! state did not change costs one push-constant compare and one vkCmdDraw.
//!
//! Coordinates are Vulkan's: the default viewport maps NDC y = -1 to the top row (no flip).
//! Image layouts are tracked as recorded: a list dropped without submit leaves the images'
//! remembered layouts ahead of the device (don't reuse them without a new transition from
//! UNDEFINED, e.g. a fresh image).
//!
//! Resources a list records must outlive it (the borrow checker enforces that while recording);
//! after submit, dropping a resource waits for the queue to be idle, so nothing in flight is
//! destroyed under the GPU.

use std::marker::PhantomData;
use std::sync::Arc;

use ash::vk;

use crate::graphics::{GraphicsPipeline, Layout};
use crate::image::{Image, ImageKind, Sampler, attachment_layout};
use crate::{Buffer, ComputePipeline, Gpu, Inner, Result, VkError, call};

/// The most colour attachments and vertex-buffer slots a command list tracks.
pub const MAX_COLOR_ATTACHMENTS: usize = 8;
pub const MAX_VERTEX_BUFFERS: usize = 16;

pub struct Recorder {
    inner: Arc<Inner>,
    pool: vk::CommandPool,
    /// Command buffers and the timeline value that marks each one's last submission done.
    slots: Vec<(vk::CommandBuffer, u64)>,
    next: usize,
    timeline: vk::Semaphore,
    submitted: u64,
}

impl Gpu {
    /// A recorder with `frames_in_flight` (1..=8) command buffers: `begin` reuses the oldest
    /// after waiting for its last submission.
    pub fn create_recorder(&self, frames_in_flight: usize) -> Result<Recorder> {
        if !(1..=8).contains(&frames_in_flight) {
            return Err(VkError::Invalid(format!(
                "{frames_in_flight} frames in flight (1..=8)"
            )));
        }
        if !self.info.dynamic_rendering || !self.info.graphics_queue {
            return Err(VkError::Unsupported {
                name: self.info.name.clone(),
                what: "command lists need a graphics queue, dynamicRendering and \
                       synchronization2 (Vulkan 1.3)"
                    .into(),
            });
        }
        let d = &self.inner.device;
        let pool_info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(self.inner.family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: valid create info.
        let pool = call("vkCreateCommandPool", unsafe {
            d.create_command_pool(&pool_info, None)
        })?;
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(frames_in_flight as u32);
        let mut timeline_info = vk::SemaphoreTypeCreateInfo::default()
            .semaphore_type(vk::SemaphoreType::TIMELINE)
            .initial_value(0);
        let sem_info = vk::SemaphoreCreateInfo::default().push_next(&mut timeline_info);
        // SAFETY: valid infos; on failure the pool is destroyed with what it holds.
        let made = unsafe {
            d.allocate_command_buffers(&alloc)
                .map_err(|r| ("vkAllocateCommandBuffers", r))
                .and_then(|cmds| {
                    d.create_semaphore(&sem_info, None)
                        .map(|s| (cmds, s))
                        .map_err(|r| ("vkCreateSemaphore (timeline)", r))
                })
        };
        let (cmds, timeline) = match made {
            Ok(x) => x,
            Err((call, result)) => {
                // SAFETY: nothing was submitted from the pool.
                unsafe { d.destroy_command_pool(pool, None) };
                return Err(VkError::Call { call, result });
            }
        };
        Ok(Recorder {
            inner: self.inner.clone(),
            pool,
            slots: cmds.into_iter().map(|c| (c, 0)).collect(),
            next: 0,
            timeline,
            submitted: 0,
        })
    }
}

impl Recorder {
    /// Starts a command list in the next command buffer of the ring (waiting for that buffer's
    /// previous submission first). Dynamic state starts at: cull none, counter-clockwise front
    /// faces, triangle list, no primitive restart, no depth bias, depth test and write off with LESS, stencil off.
    pub fn begin(&mut self) -> Result<CommandList<'_>> {
        let (cmd, busy_until) = self.slots[self.next];
        self.wait(busy_until)?;
        let d = &self.inner.device;
        let begin = vk::CommandBufferBeginInfo::default()
            .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        // SAFETY: the buffer's last submission has finished; the pool belongs to this recorder
        // (&mut self), so no other thread records into it.
        unsafe {
            call(
                "vkResetCommandBuffer",
                d.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty()),
            )?;
            call("vkBeginCommandBuffer", d.begin_command_buffer(cmd, &begin))?;
        }
        let mut list = CommandList {
            inner: self.inner.clone(),
            rec: self,
            cmd,
            state: State::default(),
            stats: ListStats::default(),
            _borrow: PhantomData,
        };
        list.reset_dynamic_state();
        Ok(list)
    }

    /// Waits until the submission that returned `value` (and all before it) has finished.
    pub fn wait(&self, value: u64) -> Result<()> {
        if value == 0 {
            return Ok(());
        }
        let sems = [self.timeline];
        let values = [value];
        let info = vk::SemaphoreWaitInfo::default()
            .semaphores(&sems)
            .values(&values);
        // SAFETY: a timeline semaphore of this device.
        call("vkWaitSemaphores", unsafe {
            self.inner.device.wait_semaphores(&info, u64::MAX)
        })
    }

    /// The highest timeline value whose submission has finished.
    pub fn completed(&self) -> Result<u64> {
        // SAFETY: as above.
        call("vkGetSemaphoreCounterValue", unsafe {
            self.inner.device.get_semaphore_counter_value(self.timeline)
        })
    }

    /// The value the last submit returned (0 before any).
    pub fn last_submitted(&self) -> u64 {
        self.submitted
    }

    /// The timeline semaphore that submissions signal (for a caller's own waits).
    pub fn timeline(&self) -> vk::Semaphore {
        self.timeline
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.wait(self.submitted);
        // SAFETY: every submission from the pool has finished.
        unsafe {
            self.inner.device.destroy_command_pool(self.pool, None);
            self.inner.device.destroy_semaphore(self.timeline, None);
        }
    }
}

/// A colour attachment of a render pass; `clear` = None loads the previous contents.
/// `resolve`: a single-sampled image of the same format that a multisampled `image` is
/// averaged into at the end of the pass.
#[derive(Clone, Copy)]
pub struct Attachment<'a> {
    pub image: &'a Image,
    pub clear: Option<[f32; 4]>,
    pub resolve: Option<&'a Image>,
}

impl<'a> Attachment<'a> {
    /// A single-sampled attachment, cleared to `clear` (None: loaded).
    pub fn new(image: &'a Image, clear: Option<[f32; 4]>) -> Attachment<'a> {
        Attachment {
            image,
            clear,
            resolve: None,
        }
    }
}

#[derive(Clone, Copy)]
pub struct DepthAttachment<'a> {
    pub image: &'a Image,
    pub clear_depth: Option<f32>,
    /// Ignored for formats without stencil.
    pub clear_stencil: Option<u32>,
}

/// The attachments of a render pass: images that live `'a`, in a slice that lives `'s`.
#[derive(Clone, Copy)]
pub struct Rendering<'a, 's> {
    pub colors: &'s [Attachment<'a>],
    pub depth: Option<DepthAttachment<'a>>,
}

/// Stencil operations and masks of one face.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StencilFace {
    pub fail: vk::StencilOp,
    pub pass: vk::StencilOp,
    pub depth_fail: vk::StencilOp,
    pub compare: vk::CompareOp,
    pub compare_mask: u32,
    pub write_mask: u32,
    pub reference: u32,
}

impl StencilFace {
    pub const KEEP: StencilFace = StencilFace {
        fail: vk::StencilOp::KEEP,
        pass: vk::StencilOp::KEEP,
        depth_fail: vk::StencilOp::KEEP,
        compare: vk::CompareOp::ALWAYS,
        compare_mask: 0xff,
        write_mask: 0xff,
        reference: 0,
    };
}

/// What the command buffer has bound / set, for filtering.
struct State {
    rendering: bool,
    area: vk::Extent2D,
    pipeline: vk::Pipeline,
    push_bytes: u32,
    /// The layout of the bound pipeline (push constants and texture sets bind through it).
    layout: vk::PipelineLayout,
    push: [u8; 256],
    push_len: usize,
    texture_set: (vk::DescriptorSet, vk::PipelineLayout),
    vertex: [(vk::Buffer, u64); MAX_VERTEX_BUFFERS],
    index: (vk::Buffer, u64, vk::IndexType),
    viewport: [u32; 6],
    scissor: vk::Rect2D,
    cull: vk::CullModeFlags,
    front: vk::FrontFace,
    topology: vk::PrimitiveTopology,
    restart: bool,
    /// Enabled, then constant factor, clamp, slope factor (f32 bits).
    bias: (bool, [u32; 3]),
    depth: (bool, bool, vk::CompareOp),
    stencil_enable: bool,
    stencil: [StencilFace; 2],
    compute: vk::Pipeline,
}

impl Default for State {
    fn default() -> State {
        State {
            rendering: false,
            area: vk::Extent2D::default(),
            pipeline: vk::Pipeline::null(),
            push_bytes: 0,
            layout: vk::PipelineLayout::null(),
            push: [0; 256],
            push_len: usize::MAX,
            texture_set: (vk::DescriptorSet::null(), vk::PipelineLayout::null()),
            vertex: [(vk::Buffer::null(), 0); MAX_VERTEX_BUFFERS],
            index: (vk::Buffer::null(), 0, vk::IndexType::UINT16),
            viewport: [u32::MAX; 6],
            scissor: vk::Rect2D::default(),
            cull: vk::CullModeFlags::NONE,
            front: vk::FrontFace::COUNTER_CLOCKWISE,
            topology: vk::PrimitiveTopology::TRIANGLE_LIST,
            restart: false,
            bias: (false, [0; 3]),
            depth: (false, false, vk::CompareOp::LESS),
            stencil_enable: false,
            stencil: [StencilFace::KEEP; 2],
            compute: vk::Pipeline::null(),
        }
    }
}

/// What a command list recorded and what its filters dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListStats {
    pub draws: u64,
    pub pipeline_binds: u64,
    pub push_constant_writes: u64,
    /// Binds, push constants and dynamic-state calls skipped because nothing changed.
    pub filtered: u64,
}

/// One command buffer being recorded; see the module docs. `'a` is how long the resources it
/// records must live.
pub struct CommandList<'a> {
    inner: Arc<Inner>,
    rec: &'a mut Recorder,
    cmd: vk::CommandBuffer,
    state: State,
    stats: ListStats,
    _borrow: PhantomData<&'a ()>,
}

impl<'a> CommandList<'a> {
    fn d(&self) -> &ash::Device {
        &self.inner.device
    }

    pub fn stats(&self) -> ListStats {
        self.stats
    }

    /// The raw command buffer, for calls this API does not wrap (the caller keeps the
    /// filters' view true: rebind what it changes through this API afterwards).
    pub fn raw(&self) -> vk::CommandBuffer {
        self.cmd
    }

    fn reset_dynamic_state(&mut self) {
        let s = State::default();
        let d = &self.inner.device;
        let cmd = self.cmd;
        // SAFETY: a recording command buffer; all core Vulkan 1.3 dynamic state.
        unsafe {
            d.cmd_set_cull_mode(cmd, s.cull);
            d.cmd_set_front_face(cmd, s.front);
            d.cmd_set_primitive_topology(cmd, s.topology);
            d.cmd_set_primitive_restart_enable(cmd, s.restart);
            d.cmd_set_depth_bias_enable(cmd, s.bias.0);
            d.cmd_set_depth_bias(cmd, 0.0, 0.0, 0.0);
            d.cmd_set_depth_test_enable(cmd, s.depth.0);
            d.cmd_set_depth_write_enable(cmd, s.depth.1);
            d.cmd_set_depth_compare_op(cmd, s.depth.2);
            d.cmd_set_stencil_test_enable(cmd, s.stencil_enable);
        }
        self.set_stencil_face(
            vk::StencilFaceFlags::FRONT_AND_BACK,
            StencilFace::KEEP,
            true,
        );
        self.state = s;
    }

    /// Moves `image` to `layout` (a synchronization2 barrier; outside rendering only).
    pub fn transition(&mut self, image: &'a Image, layout: vk::ImageLayout) -> Result<()> {
        if self.state.rendering {
            return Err(VkError::Invalid(
                "image layout transition inside a render pass (end_rendering first)".into(),
            ));
        }
        image.record_transition(&self.inner.device, self.cmd, layout);
        Ok(())
    }

    /// Begins dynamic rendering into the attachments (moved to attachment layouts first), over
    /// the largest area all of them cover, and sets viewport (depth 0..1) and scissor to it.
    pub fn begin_rendering(&mut self, r: &Rendering<'a, '_>) -> Result<()> {
        if self.state.rendering {
            return Err(VkError::Invalid(
                "begin_rendering inside a render pass".into(),
            ));
        }
        if r.colors.len() > MAX_COLOR_ATTACHMENTS {
            return Err(VkError::Invalid(format!(
                "{} colour attachments (at most {MAX_COLOR_ATTACHMENTS})",
                r.colors.len()
            )));
        }
        let mut area = vk::Extent2D {
            width: u32::MAX,
            height: u32::MAX,
        };
        for a in r.colors {
            if a.image.desc.kind != ImageKind::Color {
                return Err(VkError::Invalid(format!(
                    "a {:?} {:?} image as a colour attachment",
                    a.image.desc.kind, a.image.desc.format
                )));
            }
            area.width = area.width.min(a.image.width());
            area.height = area.height.min(a.image.height());
        }
        if let Some(dp) = &r.depth {
            if dp.image.desc.kind != ImageKind::Depth {
                return Err(VkError::Invalid(format!(
                    "a {:?} {:?} image as the depth attachment",
                    dp.image.desc.kind, dp.image.desc.format
                )));
            }
            area.width = area.width.min(dp.image.width());
            area.height = area.height.min(dp.image.height());
        }
        if area.width == u32::MAX {
            return Err(VkError::Invalid(
                "begin_rendering without attachments".into(),
            ));
        }
        for a in r.colors {
            if let Some(res) = a.resolve
                && (a.image.samples < 2 || res.samples != 1 || res.format() != a.image.format())
            {
                return Err(VkError::Invalid(format!(
                    "resolve of a {}-sample {:?} image into a {}-sample {:?} one (want \
                     multisampled into single-sampled, same format)",
                    a.image.samples,
                    a.image.format(),
                    res.samples,
                    res.format()
                )));
            }
        }
        let d = &self.inner.device;
        let mut colors = [vk::RenderingAttachmentInfo::default(); MAX_COLOR_ATTACHMENTS];
        for (slot, a) in colors.iter_mut().zip(r.colors) {
            let layout = attachment_layout(a.image.aspect);
            a.image.record_transition(d, self.cmd, layout);
            let mut info = vk::RenderingAttachmentInfo::default();
            if let Some(res) = a.resolve {
                res.record_transition(d, self.cmd, vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL);
                info = info
                    .resolve_mode(vk::ResolveModeFlags::AVERAGE)
                    .resolve_image_view(res.view)
                    .resolve_image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL);
            }
            *slot = info
                .image_view(a.image.view)
                .image_layout(layout)
                .load_op(if a.clear.is_some() {
                    vk::AttachmentLoadOp::CLEAR
                } else {
                    vk::AttachmentLoadOp::LOAD
                })
                .store_op(vk::AttachmentStoreOp::STORE)
                .clear_value(vk::ClearValue {
                    color: vk::ClearColorValue {
                        float32: a.clear.unwrap_or_default(),
                    },
                });
        }
        let mut depth = vk::RenderingAttachmentInfo::default();
        let mut stencil = vk::RenderingAttachmentInfo::default();
        let mut has_stencil = false;
        if let Some(dp) = &r.depth {
            let layout = attachment_layout(dp.image.aspect);
            dp.image.record_transition(d, self.cmd, layout);
            let clear = vk::ClearValue {
                depth_stencil: vk::ClearDepthStencilValue {
                    depth: dp.clear_depth.unwrap_or(1.0),
                    stencil: dp.clear_stencil.unwrap_or(0),
                },
            };
            let op = |c: bool| {
                if c {
                    vk::AttachmentLoadOp::CLEAR
                } else {
                    vk::AttachmentLoadOp::LOAD
                }
            };
            depth = depth
                .image_view(dp.image.view)
                .image_layout(layout)
                .load_op(op(dp.clear_depth.is_some()))
                .store_op(vk::AttachmentStoreOp::STORE)
                .clear_value(clear);
            has_stencil = dp.image.aspect.contains(vk::ImageAspectFlags::STENCIL);
            stencil = stencil
                .image_view(dp.image.view)
                .image_layout(layout)
                .load_op(op(dp.clear_stencil.is_some()))
                .store_op(vk::AttachmentStoreOp::STORE)
                .clear_value(clear);
        }
        let rect = vk::Rect2D {
            offset: vk::Offset2D::default(),
            extent: area,
        };
        let mut info = vk::RenderingInfo::default()
            .render_area(rect)
            .layer_count(1)
            .color_attachments(&colors[..r.colors.len()]);
        if r.depth.is_some() {
            info = info.depth_attachment(&depth);
        }
        if has_stencil {
            info = info.stencil_attachment(&stencil);
        }
        // SAFETY: a recording command buffer; views are live and in the layouts named.
        unsafe { d.cmd_begin_rendering(self.cmd, &info) };
        self.state.rendering = true;
        self.state.area = area;
        self.set_viewport(0.0, 0.0, area.width as f32, area.height as f32, 0.0, 1.0);
        self.set_scissor(0, 0, area.width, area.height);
        Ok(())
    }

    pub fn end_rendering(&mut self) -> Result<()> {
        if !self.state.rendering {
            return Err(VkError::Invalid(
                "end_rendering outside a render pass".into(),
            ));
        }
        // SAFETY: inside a render pass begun by begin_rendering.
        unsafe { self.d().cmd_end_rendering(self.cmd) };
        self.state.rendering = false;
        Ok(())
    }

    /// Binds a graphics pipeline (skipped when it is bound already).
    pub fn bind_pipeline(&mut self, p: &'a GraphicsPipeline) {
        let handle = p.handle();
        if handle == self.state.pipeline {
            self.stats.filtered += 1;
            return;
        }
        // SAFETY: a live pipeline.
        unsafe {
            self.inner
                .device
                .cmd_bind_pipeline(self.cmd, vk::PipelineBindPoint::GRAPHICS, handle)
        };
        self.stats.pipeline_binds += 1;
        self.state.pipeline = handle;
        self.state.layout = p.pipeline_layout();
        if p.push_constant_bytes() != self.state.push_bytes {
            // A different push-constant range: earlier push data no longer counts.
            self.state.push_bytes = p.push_constant_bytes();
            self.state.push_len = usize::MAX;
        }
    }

    /// Writes push constants from offset 0 for both stages (skipped when the bytes equal the
    /// last ones written for this range).
    pub fn push_constants(&mut self, data: &[u8]) -> Result<()> {
        if self.state.layout == vk::PipelineLayout::null() {
            return Err(VkError::Invalid(
                "push constants before any pipeline bind".into(),
            ));
        }
        if data.len() > self.state.push_bytes as usize || !data.len().is_multiple_of(4) {
            return Err(VkError::Invalid(format!(
                "{} bytes of push constants for a pipeline that takes {}",
                data.len(),
                self.state.push_bytes
            )));
        }
        if self.state.push_len == data.len() && self.state.push[..data.len()] == *data {
            self.stats.filtered += 1;
            return Ok(());
        }
        // SAFETY: the range lies inside the bound layout's push-constant range.
        unsafe {
            self.inner.device.cmd_push_constants(
                self.cmd,
                self.state.layout,
                vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT,
                0,
                data,
            )
        };
        self.state.push[..data.len()].copy_from_slice(data);
        self.state.push_len = data.len();
        self.stats.push_constant_writes += 1;
        Ok(())
    }

    /// Binds a texture set (set 0) made for the bound pipeline's layout.
    pub fn bind_textures(&mut self, set: &'a TextureSet<'a>) -> Result<()> {
        if set.layout.layout != self.state.layout {
            return Err(VkError::Invalid(
                "texture set made for another pipeline layout than the bound pipeline's".into(),
            ));
        }
        let key = (set.set, self.state.layout);
        if key == self.state.texture_set {
            self.stats.filtered += 1;
            return Ok(());
        }
        // SAFETY: a live set compatible with the bound layout.
        unsafe {
            self.inner.device.cmd_bind_descriptor_sets(
                self.cmd,
                vk::PipelineBindPoint::GRAPHICS,
                self.state.layout,
                0,
                &[set.set],
                &[],
            )
        };
        self.state.texture_set = key;
        Ok(())
    }

    /// Binds `buffer` at `offset` to vertex-buffer slot `slot`.
    pub fn bind_vertex_buffer(&mut self, slot: u32, buffer: &'a Buffer, offset: u64) -> Result<()> {
        let i = slot as usize;
        if i >= MAX_VERTEX_BUFFERS || offset >= buffer.size {
            return Err(VkError::Invalid(format!(
                "vertex buffer slot {slot} at offset {offset} of a {}-byte buffer (slots 0..{MAX_VERTEX_BUFFERS})",
                buffer.size
            )));
        }
        if self.state.vertex[i] == (buffer.buffer, offset) {
            self.stats.filtered += 1;
            return Ok(());
        }
        // SAFETY: a live buffer with VERTEX_BUFFER usage.
        unsafe {
            self.inner
                .device
                .cmd_bind_vertex_buffers(self.cmd, slot, &[buffer.buffer], &[offset])
        };
        self.state.vertex[i] = (buffer.buffer, offset);
        Ok(())
    }

    /// Binds the index buffer (`vk::IndexType::UINT16` or `UINT32`).
    pub fn bind_index_buffer(
        &mut self,
        buffer: &'a Buffer,
        offset: u64,
        ty: vk::IndexType,
    ) -> Result<()> {
        if offset >= buffer.size {
            return Err(VkError::Invalid(format!(
                "index buffer at offset {offset} of a {}-byte buffer",
                buffer.size
            )));
        }
        let key = (buffer.buffer, offset, ty);
        if self.state.index == key {
            self.stats.filtered += 1;
            return Ok(());
        }
        // SAFETY: a live buffer with INDEX_BUFFER usage.
        unsafe {
            self.inner
                .device
                .cmd_bind_index_buffer(self.cmd, buffer.buffer, offset, ty)
        };
        self.state.index = key;
        Ok(())
    }

    pub fn set_viewport(&mut self, x: f32, y: f32, w: f32, h: f32, min_depth: f32, max_depth: f32) {
        let key = [x, y, w, h, min_depth, max_depth].map(f32::to_bits);
        if self.state.viewport == key {
            self.stats.filtered += 1;
            return;
        }
        let v = vk::Viewport {
            x,
            y,
            width: w,
            height: h,
            min_depth,
            max_depth,
        };
        // SAFETY: a recording command buffer.
        unsafe { self.inner.device.cmd_set_viewport(self.cmd, 0, &[v]) };
        self.state.viewport = key;
    }

    pub fn set_scissor(&mut self, x: i32, y: i32, w: u32, h: u32) {
        let r = vk::Rect2D {
            offset: vk::Offset2D { x, y },
            extent: vk::Extent2D {
                width: w,
                height: h,
            },
        };
        if self.state.scissor == r {
            self.stats.filtered += 1;
            return;
        }
        // SAFETY: a recording command buffer.
        unsafe { self.inner.device.cmd_set_scissor(self.cmd, 0, &[r]) };
        self.state.scissor = r;
    }

    pub fn set_cull_mode(&mut self, cull: vk::CullModeFlags) {
        if self.state.cull == cull {
            self.stats.filtered += 1;
            return;
        }
        // SAFETY: core 1.3 dynamic state.
        unsafe { self.inner.device.cmd_set_cull_mode(self.cmd, cull) };
        self.state.cull = cull;
    }

    pub fn set_front_face(&mut self, front: vk::FrontFace) {
        if self.state.front == front {
            self.stats.filtered += 1;
            return;
        }
        // SAFETY: as above.
        unsafe { self.inner.device.cmd_set_front_face(self.cmd, front) };
        self.state.front = front;
    }

    /// Any topology of the bound pipelines' [`crate::TopologyClass`].
    pub fn set_topology(&mut self, t: vk::PrimitiveTopology) {
        if self.state.topology == t {
            self.stats.filtered += 1;
            return;
        }
        // SAFETY: as above.
        unsafe { self.inner.device.cmd_set_primitive_topology(self.cmd, t) };
        self.state.topology = t;
    }

    /// Primitive restart for indexed strips and fans: the all-ones index (0xffff / 0xffffffff)
    /// starts a new primitive.
    pub fn set_primitive_restart(&mut self, enable: bool) {
        if self.state.restart == enable {
            self.stats.filtered += 1;
            return;
        }
        // SAFETY: core 1.3 dynamic state.
        unsafe {
            self.inner
                .device
                .cmd_set_primitive_restart_enable(self.cmd, enable)
        };
        self.state.restart = enable;
    }

    /// Depth bias (polygon offset): on/off, constant factor (in units of the format's minimum
    /// resolvable difference), clamp (0 = none), slope factor.
    pub fn set_depth_bias(&mut self, enable: bool, constant: f32, clamp: f32, slope: f32) {
        let key = (enable, [constant, clamp, slope].map(f32::to_bits));
        if self.state.bias == key {
            self.stats.filtered += 1;
            return;
        }
        let d = &self.inner.device;
        // SAFETY: core dynamic state (DEPTH_BIAS_ENABLE is core in 1.3).
        unsafe {
            if self.state.bias.0 != enable {
                d.cmd_set_depth_bias_enable(self.cmd, enable);
            }
            if self.state.bias.1 != key.1 {
                d.cmd_set_depth_bias(self.cmd, constant, clamp, slope);
            }
        }
        self.state.bias = key;
    }

    /// Depth test on/off, depth write on/off, compare op.
    pub fn set_depth(&mut self, test: bool, write: bool, compare: vk::CompareOp) {
        let (t, w, c) = self.state.depth;
        let d = &self.inner.device;
        // SAFETY: as above.
        unsafe {
            if t != test {
                d.cmd_set_depth_test_enable(self.cmd, test);
            }
            if w != write {
                d.cmd_set_depth_write_enable(self.cmd, write);
            }
            if c != compare {
                d.cmd_set_depth_compare_op(self.cmd, compare);
            }
        }
        if (t, w, c) == (test, write, compare) {
            self.stats.filtered += 1;
        }
        self.state.depth = (test, write, compare);
    }

    /// Stencil test on/off and the operations of both faces (`None` keeps them).
    pub fn set_stencil(
        &mut self,
        enable: bool,
        front: Option<StencilFace>,
        back: Option<StencilFace>,
    ) {
        if self.state.stencil_enable != enable {
            // SAFETY: as above.
            unsafe {
                self.inner
                    .device
                    .cmd_set_stencil_test_enable(self.cmd, enable)
            };
            self.state.stencil_enable = enable;
        }
        if let Some(f) = front {
            self.set_stencil_face(vk::StencilFaceFlags::FRONT, f, false);
        }
        if let Some(b) = back {
            self.set_stencil_face(vk::StencilFaceFlags::BACK, b, false);
        }
    }

    fn set_stencil_face(&mut self, faces: vk::StencilFaceFlags, f: StencilFace, force: bool) {
        let i = usize::from(faces == vk::StencilFaceFlags::BACK);
        if !force && self.state.stencil[i] == f {
            self.stats.filtered += 1;
            return;
        }
        let d = &self.inner.device;
        // SAFETY: as above.
        unsafe {
            d.cmd_set_stencil_op(self.cmd, faces, f.fail, f.pass, f.depth_fail, f.compare);
            d.cmd_set_stencil_compare_mask(self.cmd, faces, f.compare_mask);
            d.cmd_set_stencil_write_mask(self.cmd, faces, f.write_mask);
            d.cmd_set_stencil_reference(self.cmd, faces, f.reference);
        }
        if faces == vk::StencilFaceFlags::FRONT_AND_BACK {
            self.state.stencil = [f; 2];
        } else {
            self.state.stencil[i] = f;
        }
    }

    fn check_draw(&self) -> Result<()> {
        if !self.state.rendering || self.state.pipeline == vk::Pipeline::null() {
            return Err(VkError::Invalid(format!(
                "draw {} {}",
                self.stats.draws,
                if self.state.rendering {
                    "without a bound graphics pipeline"
                } else {
                    "outside a render pass"
                }
            )));
        }
        Ok(())
    }

    pub fn draw(
        &mut self,
        vertices: u32,
        instances: u32,
        first_vertex: u32,
        first_instance: u32,
    ) -> Result<()> {
        self.check_draw()?;
        // SAFETY: inside a render pass with a pipeline bound.
        unsafe {
            self.inner
                .device
                .cmd_draw(self.cmd, vertices, instances, first_vertex, first_instance)
        };
        self.stats.draws += 1;
        Ok(())
    }

    pub fn draw_indexed(
        &mut self,
        indices: u32,
        instances: u32,
        first_index: u32,
        vertex_offset: i32,
        first_instance: u32,
    ) -> Result<()> {
        self.check_draw()?;
        if self.state.index.0 == vk::Buffer::null() {
            return Err(VkError::Invalid(format!(
                "indexed draw {} without an index buffer",
                self.stats.draws
            )));
        }
        // SAFETY: as above, with an index buffer bound.
        unsafe {
            self.inner.device.cmd_draw_indexed(
                self.cmd,
                indices,
                instances,
                first_index,
                vertex_offset,
                first_instance,
            )
        };
        self.stats.draws += 1;
        Ok(())
    }

    /// A compute dispatch on the same command buffer (outside rendering), with push constants.
    pub fn dispatch(
        &mut self,
        p: &'a ComputePipeline,
        push: &[u8],
        groups: [u32; 3],
    ) -> Result<()> {
        if self.state.rendering {
            return Err(VkError::Invalid("dispatch inside a render pass".into()));
        }
        if push.len() != p.push_constant_bytes as usize {
            return Err(VkError::Invalid(format!(
                "{} bytes of push constants for a compute pipeline that takes {}",
                push.len(),
                p.push_constant_bytes
            )));
        }
        let d = &self.inner.device;
        // SAFETY: a live compute pipeline; push lies inside its range.
        unsafe {
            if self.state.compute != p.pipeline {
                d.cmd_bind_pipeline(self.cmd, vk::PipelineBindPoint::COMPUTE, p.pipeline);
                self.state.compute = p.pipeline;
            }
            if !push.is_empty() {
                d.cmd_push_constants(self.cmd, p.layout, vk::ShaderStageFlags::COMPUTE, 0, push);
            }
            d.cmd_dispatch(self.cmd, groups[0], groups[1], groups[2]);
        }
        // Compute push constants disturb the graphics push-constant filter only when the
        // layouts differ, which they always do here: forget the graphics bytes.
        self.state.push_len = usize::MAX;
        Ok(())
    }

    /// Copies the whole image (depth, then stencil, for depth formats) into `buffer` at `offset` as
    /// tightly packed rows, outside rendering: a render target written back into guest memory
    /// (an imported [`Buffer`]) without a host copy. Leaves the image in TRANSFER_SRC_OPTIMAL;
    /// the bytes are visible to the host after the submission's wait.
    pub fn copy_image_to_buffer(
        &mut self,
        image: &'a Image,
        buffer: &'a Buffer,
        offset: u64,
    ) -> Result<()> {
        self.check_copy("copy_image_to_buffer", image, buffer, offset)?;
        let d = &self.inner.device;
        image.record_transition(d, self.cmd, vk::ImageLayout::TRANSFER_SRC_OPTIMAL);
        let regions = crate::image::copy_regions_at(image, offset);
        // SAFETY: live image and buffer; the regions lie inside both (checked above).
        unsafe {
            d.cmd_copy_image_to_buffer(
                self.cmd,
                image.image,
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                buffer.buffer,
                &regions,
            )
        };
        Ok(())
    }

    /// Fills the whole image from tightly packed rows in `buffer` at `offset` (a texture from
    /// guest memory without a host copy), leaving it in SHADER_READ_ONLY_OPTIMAL for sampling.
    pub fn copy_buffer_to_image(
        &mut self,
        buffer: &'a Buffer,
        offset: u64,
        image: &'a Image,
    ) -> Result<()> {
        self.check_copy("copy_buffer_to_image", image, buffer, offset)?;
        let d = &self.inner.device;
        image.record_transition(d, self.cmd, vk::ImageLayout::TRANSFER_DST_OPTIMAL);
        let regions = crate::image::copy_regions_at(image, offset);
        // SAFETY: as above.
        unsafe {
            d.cmd_copy_buffer_to_image(
                self.cmd,
                buffer.buffer,
                image.image,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                &regions,
            )
        };
        image.record_transition(d, self.cmd, vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL);
        Ok(())
    }

    fn check_copy(&self, what: &str, image: &Image, buffer: &Buffer, offset: u64) -> Result<()> {
        if self.state.rendering {
            return Err(VkError::Invalid(format!("{what} inside a render pass")));
        }
        let bytes = image.host_bytes() as u64;
        // bufferOffset: a multiple of the texel (block) size, or of 4 for depth.
        let align = if image.aspect.contains(vk::ImageAspectFlags::DEPTH) {
            4
        } else {
            crate::image::block_bytes(image.format())
                .or_else(|| crate::image::texel_bytes(image.format()))
                .unwrap_or(4) as u64
        };
        if offset
            .checked_add(bytes)
            .is_none_or(|end| end > buffer.size)
            || !offset.is_multiple_of(align)
        {
            return Err(VkError::Invalid(format!(
                "{what}: {bytes} bytes of a {}x{} {:?} image at offset {offset} of a {}-byte buffer",
                image.width(),
                image.height(),
                image.format(),
                buffer.size
            )));
        }
        Ok(())
    }

    /// A full memory barrier (all earlier writes visible to all later accesses), outside
    /// rendering: between a dispatch and draws that read what it wrote, for example.
    pub fn memory_barrier(&mut self) -> Result<()> {
        if self.state.rendering {
            return Err(VkError::Invalid(
                "memory barrier inside a render pass".into(),
            ));
        }
        let b = [vk::MemoryBarrier2::default()
            .src_stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)
            .src_access_mask(vk::AccessFlags2::MEMORY_WRITE)
            .dst_stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)
            .dst_access_mask(vk::AccessFlags2::MEMORY_READ | vk::AccessFlags2::MEMORY_WRITE)];
        let dep = vk::DependencyInfo::default().memory_barriers(&b);
        // SAFETY: a recording command buffer.
        unsafe { self.inner.device.cmd_pipeline_barrier2(self.cmd, &dep) };
        Ok(())
    }

    /// Ends the command buffer and submits it; the returned timeline value is signalled when
    /// it has finished ([`Recorder::wait`]). Host-visible buffers the work wrote are readable
    /// after that wait.
    pub fn submit(self) -> Result<u64> {
        if self.state.rendering {
            return Err(VkError::Invalid(
                "submit inside a render pass (end_rendering first)".into(),
            ));
        }
        let d = &self.inner.device;
        let cmd = self.cmd;
        // Make every write visible to the host once the timeline says done.
        let b = [vk::MemoryBarrier2::default()
            .src_stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)
            .src_access_mask(vk::AccessFlags2::MEMORY_WRITE)
            .dst_stage_mask(vk::PipelineStageFlags2::HOST)
            .dst_access_mask(vk::AccessFlags2::HOST_READ)];
        let dep = vk::DependencyInfo::default().memory_barriers(&b);
        // SAFETY: a recording command buffer.
        unsafe {
            d.cmd_pipeline_barrier2(cmd, &dep);
            call("vkEndCommandBuffer", d.end_command_buffer(cmd))?;
        }
        let value = self.rec.submitted + 1;
        let cmds = [vk::CommandBufferSubmitInfo::default().command_buffer(cmd)];
        let signal = [vk::SemaphoreSubmitInfo::default()
            .semaphore(self.rec.timeline)
            .value(value)
            .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)];
        let info = vk::SubmitInfo2::default()
            .command_buffer_infos(&cmds)
            .signal_semaphore_infos(&signal);
        {
            let submit = self.inner.submit.lock().unwrap_or_else(|e| e.into_inner());
            // SAFETY: the queue is ours while locked; the command buffer is executable.
            call("vkQueueSubmit2", unsafe {
                d.queue_submit2(submit.0, &[info], vk::Fence::null())
            })?;
        }
        let rec = self.rec;
        rec.submitted = value;
        let slot = rec.next;
        rec.slots[slot].1 = value;
        rec.next = (slot + 1) % rec.slots.len();
        self.inner.check()?;
        Ok(value)
    }
}

/// A descriptor set of combined image samplers for one pipeline layout (set 0, bindings 0..).
/// The images must be in SHADER_READ_ONLY_OPTIMAL when draws that use the set run.
pub struct TextureSet<'a> {
    inner: Arc<Inner>,
    pool: vk::DescriptorPool,
    set: vk::DescriptorSet,
    layout: Arc<Layout>,
    _images: PhantomData<&'a Image>,
}

impl Drop for TextureSet<'_> {
    fn drop(&mut self) {
        self.inner.wait_idle();
        // SAFETY: the queue is idle; destroying the pool frees the set.
        unsafe { self.inner.device.destroy_descriptor_pool(self.pool, None) };
    }
}

impl Gpu {
    /// A texture set for `pipeline`'s layout: `textures[i]` at binding i (as many as the
    /// pipeline's `textures`).
    pub fn create_texture_set<'a>(
        &self,
        pipeline: &GraphicsPipeline,
        textures: &[(&'a Image, &'a Sampler)],
    ) -> Result<TextureSet<'a>> {
        let layout = pipeline.layout.clone();
        if textures.len() != layout.textures as usize || textures.is_empty() {
            return Err(VkError::Invalid(format!(
                "{} textures for a pipeline with {} texture bindings",
                textures.len(),
                layout.textures
            )));
        }
        let d = &self.inner.device;
        let sizes = [vk::DescriptorPoolSize {
            ty: vk::DescriptorType::COMBINED_IMAGE_SAMPLER,
            descriptor_count: textures.len() as u32,
        }];
        let info = vk::DescriptorPoolCreateInfo::default()
            .max_sets(1)
            .pool_sizes(&sizes);
        // SAFETY: valid create info.
        let pool = call("vkCreateDescriptorPool", unsafe {
            d.create_descriptor_pool(&info, None)
        })?;
        let layouts = [layout.set_layout];
        let alloc = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(pool)
            .set_layouts(&layouts);
        // SAFETY: valid allocate info.
        let set = match unsafe { d.allocate_descriptor_sets(&alloc) } {
            Ok(s) => s[0],
            Err(result) => {
                // SAFETY: unused pool.
                unsafe { d.destroy_descriptor_pool(pool, None) };
                return Err(VkError::Call {
                    call: "vkAllocateDescriptorSets",
                    result,
                });
            }
        };
        let infos: Vec<[vk::DescriptorImageInfo; 1]> = textures
            .iter()
            .map(|(img, smp)| {
                [vk::DescriptorImageInfo {
                    sampler: smp.sampler,
                    image_view: img.view,
                    image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
                }]
            })
            .collect();
        let writes: Vec<vk::WriteDescriptorSet> = infos
            .iter()
            .enumerate()
            .map(|(i, info)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(i as u32)
                    .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
                    .image_info(info)
            })
            .collect();
        // SAFETY: the set, views and samplers are live.
        unsafe { d.update_descriptor_sets(&writes, &[]) };
        self.check_validation()?;
        Ok(TextureSet {
            inner: self.inner.clone(),
            pool,
            set,
            layout,
            _images: PhantomData,
        })
    }
}
