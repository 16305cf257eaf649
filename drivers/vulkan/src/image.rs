//! Images: colour render targets, depth(-stencil) targets and sampled textures, their upload
//! from and readback to tightly packed host bytes, samplers, and layout transitions
//! (synchronization2).
//!
//! An [`Image`] remembers the layout its last recorded transition left it in, so callers name
//! only the layout they need next ([`crate::frame::CommandList::transition`]); the barrier's
//! stages and accesses follow from the two layouts.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use ash::vk;

use crate::{Gpu, Inner, Result, VkError, call, memory};

/// What an image is for; decides its usage flags and the format features it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImageKind {
    /// A colour attachment that can also be sampled and read back.
    Color,
    /// A depth or depth-stencil attachment that can be read back (depth aspect).
    Depth,
    /// A sampled texture filled from host bytes.
    Texture,
}

#[derive(Clone, Copy, Debug)]
pub struct ImageDesc {
    pub width: u32,
    pub height: u32,
    pub format: vk::Format,
    pub kind: ImageKind,
}

/// Bytes per texel of the formats this crate moves between host and device (for depth formats:
/// of the depth aspect; a depth-stencil image's stencil plane follows, see [`image_bytes`]).
/// None = not supported here.
pub fn texel_bytes(format: vk::Format) -> Option<u32> {
    use vk::Format as F;
    Some(match format {
        F::R8_UNORM | F::R8_SNORM | F::R8_UINT | F::R8_SINT | F::R8_SRGB => 1,
        F::R8G8_UNORM | F::R8G8_SNORM | F::R8G8_UINT | F::R8G8_SINT | F::R8G8_SRGB => 2,
        F::R16_UNORM | F::R16_SNORM | F::R16_UINT | F::R16_SINT | F::R16_SFLOAT => 2,
        F::R5G6B5_UNORM_PACK16 | F::B5G6R5_UNORM_PACK16 => 2,
        F::A1R5G5B5_UNORM_PACK16 | F::A1B5G5R5_UNORM_PACK16_KHR => 2,
        F::R5G5B5A1_UNORM_PACK16 | F::B5G5R5A1_UNORM_PACK16 => 2,
        F::R4G4B4A4_UNORM_PACK16 | F::B4G4R4A4_UNORM_PACK16 => 2,
        F::A4R4G4B4_UNORM_PACK16 | F::A4B4G4R4_UNORM_PACK16 => 2,
        F::R8G8B8A8_UNORM | F::R8G8B8A8_SNORM | F::R8G8B8A8_UINT | F::R8G8B8A8_SINT => 4,
        F::R8G8B8A8_SRGB | F::B8G8R8A8_UNORM | F::B8G8R8A8_SNORM | F::B8G8R8A8_UINT => 4,
        F::B8G8R8A8_SINT | F::B8G8R8A8_SRGB => 4,
        F::A2B10G10R10_UNORM_PACK32 | F::A2B10G10R10_SNORM_PACK32 => 4,
        F::A2B10G10R10_UINT_PACK32 | F::A2B10G10R10_SINT_PACK32 => 4,
        F::A2R10G10B10_UNORM_PACK32 | F::A2R10G10B10_SNORM_PACK32 => 4,
        F::A2R10G10B10_UINT_PACK32 | F::A2R10G10B10_SINT_PACK32 => 4,
        F::B10G11R11_UFLOAT_PACK32 | F::E5B9G9R9_UFLOAT_PACK32 => 4,
        F::R16G16_UNORM | F::R16G16_SNORM | F::R16G16_UINT | F::R16G16_SINT => 4,
        F::R16G16_SFLOAT | F::R32_SFLOAT | F::R32_UINT | F::R32_SINT => 4,
        F::R16G16B16A16_UNORM | F::R16G16B16A16_SNORM | F::R16G16B16A16_UINT => 8,
        F::R16G16B16A16_SINT | F::R16G16B16A16_SFLOAT => 8,
        F::R32G32_SFLOAT | F::R32G32_UINT | F::R32G32_SINT => 8,
        F::R32G32B32A32_SFLOAT | F::R32G32B32A32_UINT | F::R32G32B32A32_SINT => 16,
        F::D16_UNORM => 2,
        F::D32_SFLOAT | F::D32_SFLOAT_S8_UINT | F::X8_D24_UNORM_PACK32 | F::D24_UNORM_S8_UINT => 4,
        _ => return None,
    })
}

/// Block-compressed formats (4x4 texels a block): bytes per block. Texture images only.
pub fn block_bytes(format: vk::Format) -> Option<u32> {
    use vk::Format as F;
    Some(match format {
        F::BC1_RGB_UNORM_BLOCK
        | F::BC1_RGB_SRGB_BLOCK
        | F::BC1_RGBA_UNORM_BLOCK
        | F::BC1_RGBA_SRGB_BLOCK
        | F::BC4_UNORM_BLOCK
        | F::BC4_SNORM_BLOCK => 8,
        F::BC2_UNORM_BLOCK
        | F::BC2_SRGB_BLOCK
        | F::BC3_UNORM_BLOCK
        | F::BC3_SRGB_BLOCK
        | F::BC5_UNORM_BLOCK
        | F::BC5_SNORM_BLOCK
        | F::BC6H_UFLOAT_BLOCK
        | F::BC6H_SFLOAT_BLOCK
        | F::BC7_UNORM_BLOCK
        | F::BC7_SRGB_BLOCK => 16,
        _ => return None,
    })
}

/// Bytes of a tightly packed `width` x `height` image of `format` (whole 4x4 blocks for
/// block-compressed formats; for depth-stencil formats the depth plane, then the stencil
/// plane of one byte a texel); None for formats this crate does not move.
pub fn image_bytes(format: vk::Format, width: u32, height: u32) -> Option<usize> {
    if let Some(b) = block_bytes(format) {
        return Some(width.div_ceil(4) as usize * height.div_ceil(4) as usize * b as usize);
    }
    let texels = width as usize * height as usize;
    let stencil = if depth_aspects(format) == Some(true) {
        texels
    } else {
        0
    };
    texel_bytes(format).map(|t| texels * t as usize + stencil)
}

/// Whether `format` is a depth format, and whether it also has stencil.
pub fn depth_aspects(format: vk::Format) -> Option<bool> {
    use vk::Format as F;
    match format {
        F::D16_UNORM | F::D32_SFLOAT | F::X8_D24_UNORM_PACK32 => Some(false),
        F::D32_SFLOAT_S8_UINT | F::D24_UNORM_S8_UINT | F::D16_UNORM_S8_UINT => Some(true),
        _ => None,
    }
}

fn aspect_of(format: vk::Format) -> vk::ImageAspectFlags {
    match depth_aspects(format) {
        Some(true) => vk::ImageAspectFlags::DEPTH | vk::ImageAspectFlags::STENCIL,
        Some(false) => vk::ImageAspectFlags::DEPTH,
        None => vk::ImageAspectFlags::COLOR,
    }
}

/// A 2D image with one layer (and one mip level, or a chain for a texture), in device-local
/// memory, with a view of all its levels.
pub struct Image {
    pub(crate) inner: Arc<Inner>,
    pub(crate) image: vk::Image,
    memory: vk::DeviceMemory,
    pub(crate) view: vk::ImageView,
    pub(crate) desc: ImageDesc,
    pub(crate) aspect: vk::ImageAspectFlags,
    /// The layout after the last recorded transition (a vk::ImageLayout's raw value).
    layout: AtomicI32,
    /// Samples per pixel (1, or 2/4/8 for a multisampled render target).
    pub(crate) samples: u32,
    /// Mip levels (1 except for textures made by [`Gpu::create_texture_levels`]).
    pub(crate) levels: u32,
}

impl Image {
    pub fn desc(&self) -> &ImageDesc {
        &self.desc
    }
    pub fn width(&self) -> u32 {
        self.desc.width
    }
    pub fn height(&self) -> u32 {
        self.desc.height
    }
    pub fn format(&self) -> vk::Format {
        self.desc.format
    }
    pub fn samples(&self) -> u32 {
        self.samples
    }
    /// The layout the image is in once the work recorded so far has run.
    pub fn layout(&self) -> vk::ImageLayout {
        vk::ImageLayout::from_raw(self.layout.load(Ordering::Relaxed))
    }
    pub fn levels(&self) -> u32 {
        self.levels
    }
    /// Bytes of a tightly packed readback / upload (whole blocks for BC formats), level 0
    /// first and each smaller level after it.
    pub fn host_bytes(&self) -> usize {
        (0..self.levels)
            .map(|l| {
                let (w, h) = self.level_size(l);
                image_bytes(self.desc.format, w, h).unwrap_or(0)
            })
            .sum()
    }
    /// Width and height of mip level `l` (halved per level, rounded down, at least 1).
    pub fn level_size(&self, l: u32) -> (u32, u32) {
        (
            (self.desc.width >> l).max(1),
            (self.desc.height >> l).max(1),
        )
    }

    /// Records a barrier that moves the image to `new` (nothing if it is there already and
    /// `new` is a read-only layout).
    pub(crate) fn record_transition(
        &self,
        d: &ash::Device,
        cmd: vk::CommandBuffer,
        new: vk::ImageLayout,
    ) {
        let old = self.layout();
        if old == new && read_only(new) {
            return;
        }
        let (src_stage, src_access) = layout_scope(old, self.aspect);
        let (dst_stage, dst_access) = layout_scope(new, self.aspect);
        let barrier = [vk::ImageMemoryBarrier2::default()
            .src_stage_mask(src_stage)
            .src_access_mask(src_access)
            .dst_stage_mask(dst_stage)
            .dst_access_mask(dst_access)
            .old_layout(old)
            .new_layout(new)
            .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .image(self.image)
            .subresource_range(range(self.aspect, self.levels))];
        let dep = vk::DependencyInfo::default().image_memory_barriers(&barrier);
        // SAFETY: a recording command buffer; the image is live.
        unsafe { d.cmd_pipeline_barrier2(cmd, &dep) };
        self.layout.store(new.as_raw(), Ordering::Relaxed);
    }
}

fn read_only(layout: vk::ImageLayout) -> bool {
    matches!(
        layout,
        vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL | vk::ImageLayout::TRANSFER_SRC_OPTIMAL
    )
}

fn range(aspect: vk::ImageAspectFlags, levels: u32) -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange::default()
        .aspect_mask(aspect)
        .level_count(levels)
        .layer_count(1)
}

/// The stages and accesses that use an image in `layout`: the source scope of a transition
/// out of it and the destination scope of one into it.
fn layout_scope(
    layout: vk::ImageLayout,
    aspect: vk::ImageAspectFlags,
) -> (vk::PipelineStageFlags2, vk::AccessFlags2) {
    use vk::AccessFlags2 as A;
    use vk::ImageLayout as L;
    use vk::PipelineStageFlags2 as S;
    match layout {
        L::UNDEFINED => (S::NONE, A::NONE),
        L::TRANSFER_DST_OPTIMAL => (S::ALL_TRANSFER, A::TRANSFER_WRITE),
        L::TRANSFER_SRC_OPTIMAL => (S::ALL_TRANSFER, A::TRANSFER_READ),
        L::COLOR_ATTACHMENT_OPTIMAL => (
            S::COLOR_ATTACHMENT_OUTPUT,
            A::COLOR_ATTACHMENT_READ | A::COLOR_ATTACHMENT_WRITE,
        ),
        L::DEPTH_ATTACHMENT_OPTIMAL | L::DEPTH_STENCIL_ATTACHMENT_OPTIMAL => (
            S::EARLY_FRAGMENT_TESTS | S::LATE_FRAGMENT_TESTS,
            A::DEPTH_STENCIL_ATTACHMENT_READ | A::DEPTH_STENCIL_ATTACHMENT_WRITE,
        ),
        L::SHADER_READ_ONLY_OPTIMAL => (
            S::VERTEX_SHADER | S::FRAGMENT_SHADER | S::COMPUTE_SHADER,
            A::SHADER_SAMPLED_READ,
        ),
        _ => {
            let _ = aspect;
            (S::ALL_COMMANDS, A::MEMORY_READ | A::MEMORY_WRITE)
        }
    }
}

/// The attachment layout a render pass uses for an image of `aspect`.
pub(crate) fn attachment_layout(aspect: vk::ImageAspectFlags) -> vk::ImageLayout {
    if aspect.contains(vk::ImageAspectFlags::STENCIL) {
        vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL
    } else if aspect.contains(vk::ImageAspectFlags::DEPTH) {
        vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL
    } else {
        vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        self.inner.wait_idle();
        let d = &self.inner.device;
        // SAFETY: the queue is idle; nothing uses the image.
        unsafe {
            d.destroy_image_view(self.view, None);
            d.destroy_image(self.image, None);
            d.free_memory(self.memory, None);
        }
    }
}

/// Filtering and addressing of a [`Sampler`] (between mip levels: see
/// [`Gpu::create_sampler_mipmap`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SamplerDesc {
    pub mag_filter: vk::Filter,
    pub min_filter: vk::Filter,
    /// U, V, W.
    pub address: [vk::SamplerAddressMode; 3],
    pub border: vk::BorderColor,
    /// maxLod in 1/256 (the S#'s unsigned 4.8 MAX_LOD encoding); 0 = 0.0. With one mip
    /// level only the magnification/minification choice depends on it: above 0 a computed
    /// LOD > 0 selects `min_filter` (Vulkan clamps the LOD to [minLod, maxLod] first).
    pub max_lod_256: u16,
}

impl SamplerDesc {
    pub const NEAREST_CLAMP: SamplerDesc = SamplerDesc {
        mag_filter: vk::Filter::NEAREST,
        min_filter: vk::Filter::NEAREST,
        address: [vk::SamplerAddressMode::CLAMP_TO_EDGE; 3],
        border: vk::BorderColor::FLOAT_TRANSPARENT_BLACK,
        max_lod_256: 0,
    };
    pub const LINEAR_REPEAT: SamplerDesc = SamplerDesc {
        mag_filter: vk::Filter::LINEAR,
        min_filter: vk::Filter::LINEAR,
        address: [vk::SamplerAddressMode::REPEAT; 3],
        border: vk::BorderColor::FLOAT_TRANSPARENT_BLACK,
        max_lod_256: 0,
    };
}

pub struct Sampler {
    inner: Arc<Inner>,
    pub(crate) sampler: vk::Sampler,
    desc: SamplerDesc,
}

impl Sampler {
    pub fn desc(&self) -> &SamplerDesc {
        &self.desc
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.inner.wait_idle();
        // SAFETY: the queue is idle.
        unsafe { self.inner.device.destroy_sampler(self.sampler, None) };
    }
}

impl Gpu {
    /// The best depth-stencil format the device can render to: D32_SFLOAT_S8_UINT, else
    /// D24_UNORM_S8_UINT (None if neither).
    pub fn depth_stencil_format(&self) -> Option<vk::Format> {
        [
            vk::Format::D32_SFLOAT_S8_UINT,
            vk::Format::D24_UNORM_S8_UINT,
        ]
        .into_iter()
        .find(|&f| {
            self.format_features(f)
                .contains(vk::FormatFeatureFlags::DEPTH_STENCIL_ATTACHMENT)
        })
    }

    /// Optimal-tiling features of `format` on this device; none for a format of an extension
    /// the device is not created with (VK_KHR_maintenance5's A1B5G5R5), which is not valid to
    /// query.
    pub fn format_features(&self, format: vk::Format) -> vk::FormatFeatureFlags {
        if format == vk::Format::A1B5G5R5_UNORM_PACK16_KHR || format == vk::Format::A8_UNORM_KHR {
            return vk::FormatFeatureFlags::empty();
        }
        // SAFETY: a live physical device.
        unsafe {
            self.inner
                .instance
                .get_physical_device_format_properties(self.inner.physical, format)
        }
        .optimal_tiling_features
    }

    /// A device-local image for `desc`, in layout UNDEFINED. Fails naming the format when the
    /// device cannot use it for `desc.kind`.
    pub fn create_image(&self, desc: &ImageDesc) -> Result<Image> {
        self.create_image_multisampled(desc, 1)
    }

    /// A texture with `levels` mip levels (1 up to the full chain of its size); uploads and
    /// readbacks carry every level, level 0 first.
    pub fn create_texture_levels(&self, desc: &ImageDesc, levels: u32) -> Result<Image> {
        let full = 32 - desc.width.max(desc.height).leading_zeros();
        if desc.kind != ImageKind::Texture || levels == 0 || levels > full {
            return Err(VkError::Invalid(format!(
                "{levels} mip levels for a {}x{} {:?} image (textures, 1..={full})",
                desc.width, desc.height, desc.kind
            )));
        }
        self.create_image_with(desc, 1, levels)
    }

    /// A render target (colour or depth) with `samples` per pixel (1, 2, 4 or 8; the device
    /// must support the count for the format). Multisampled images are resolved into a
    /// single-sampled one by a render pass ([`crate::Attachment::resolve`]); they cannot be
    /// read back or sampled directly.
    pub fn create_image_multisampled(&self, desc: &ImageDesc, samples: u32) -> Result<Image> {
        self.create_image_with(desc, samples, 1)
    }

    fn create_image_with(&self, desc: &ImageDesc, samples: u32, levels: u32) -> Result<Image> {
        let counts = {
            // SAFETY: a live physical device.
            let limits = unsafe {
                self.inner
                    .instance
                    .get_physical_device_properties(self.inner.physical)
            }
            .limits;
            if depth_aspects(desc.format).is_some() {
                limits.framebuffer_depth_sample_counts
            } else {
                limits.framebuffer_color_sample_counts
            }
        };
        let flag = vk::SampleCountFlags::from_raw(samples);
        if !matches!(samples, 1 | 2 | 4 | 8)
            || (samples > 1 && (desc.kind == ImageKind::Texture || !counts.contains(flag)))
        {
            return Err(VkError::Unsupported {
                name: self.info.name.clone(),
                what: format!(
                    "{samples} samples for a {:?} {:?} image (render targets only; device counts {counts:?})",
                    desc.kind, desc.format
                ),
            });
        }
        use vk::FormatFeatureFlags as FF;
        use vk::ImageUsageFlags as U;
        let max = self.info.max_image_dimension_2d;
        if desc.width == 0 || desc.height == 0 || desc.width > max || desc.height > max {
            return Err(VkError::Invalid(format!(
                "image of {}x{} (1..={max} each way)",
                desc.width, desc.height
            )));
        }
        let compressed = block_bytes(desc.format).is_some();
        if compressed && desc.kind != ImageKind::Texture {
            return Err(VkError::Invalid(format!(
                "block-compressed format {:?} as a {:?} image (textures only)",
                desc.format, desc.kind
            )));
        }
        if image_bytes(desc.format, 1, 1).is_none() {
            return Err(VkError::Invalid(format!(
                "image format {:?} is not supported by aps5-vulkan",
                desc.format
            )));
        }
        let is_depth = depth_aspects(desc.format).is_some();
        let (usage, needs, what) = match desc.kind {
            ImageKind::Color if !is_depth => (
                U::COLOR_ATTACHMENT | U::SAMPLED | U::TRANSFER_SRC | U::TRANSFER_DST,
                FF::COLOR_ATTACHMENT,
                "a colour render target",
            ),
            ImageKind::Depth if is_depth => (
                U::DEPTH_STENCIL_ATTACHMENT | U::TRANSFER_SRC | U::TRANSFER_DST,
                FF::DEPTH_STENCIL_ATTACHMENT,
                "a depth render target",
            ),
            ImageKind::Texture if !is_depth => (
                U::SAMPLED | U::TRANSFER_DST | U::TRANSFER_SRC,
                FF::SAMPLED_IMAGE,
                "a sampled texture",
            ),
            kind => {
                return Err(VkError::Invalid(format!(
                    "format {:?} cannot be a {kind:?} image",
                    desc.format
                )));
            }
        };
        if !self.format_features(desc.format).contains(needs) {
            return Err(VkError::Unsupported {
                name: self.info.name.clone(),
                what: format!("format {:?} cannot be {what}", desc.format),
            });
        }
        let d = &self.inner.device;
        let info = vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(desc.format)
            .extent(vk::Extent3D {
                width: desc.width,
                height: desc.height,
                depth: 1,
            })
            .mip_levels(levels)
            .array_layers(1)
            .samples(flag)
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .initial_layout(vk::ImageLayout::UNDEFINED);
        // SAFETY: valid create info.
        let image = call("vkCreateImage", unsafe { d.create_image(&info, None) })?;
        // SAFETY: a live image.
        let req = unsafe { d.get_image_memory_requirements(image) };
        let Some(type_index) = self
            .inner
            .memory_type(req.memory_type_bits, vk::MemoryPropertyFlags::DEVICE_LOCAL)
            .or_else(|| {
                self.inner
                    .memory_type(req.memory_type_bits, vk::MemoryPropertyFlags::empty())
            })
        else {
            // SAFETY: unused image.
            unsafe { d.destroy_image(image, None) };
            return Err(VkError::NoMemoryType(req.size));
        };
        let alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(type_index);
        // SAFETY: valid allocate info.
        let memory = match unsafe { d.allocate_memory(&alloc, None) } {
            Ok(m) => m,
            Err(result) => {
                // SAFETY: unused image.
                unsafe { d.destroy_image(image, None) };
                return Err(VkError::Call {
                    call: "vkAllocateMemory",
                    result,
                });
            }
        };
        let aspect = aspect_of(desc.format);
        let view_info = vk::ImageViewCreateInfo::default()
            .image(image)
            .view_type(vk::ImageViewType::TYPE_2D)
            .format(desc.format)
            .subresource_range(range(aspect, levels));
        // SAFETY: memory fits the requirements; the view describes the bound image.
        let view = match unsafe { d.bind_image_memory(image, memory, 0) }
            .and_then(|()| unsafe { d.create_image_view(&view_info, None) })
        {
            Ok(v) => v,
            Err(result) => {
                // SAFETY: unused objects.
                unsafe {
                    d.destroy_image(image, None);
                    d.free_memory(memory, None);
                }
                return Err(VkError::Call {
                    call: "vkBindImageMemory / vkCreateImageView",
                    result,
                });
            }
        };
        Ok(Image {
            inner: self.inner.clone(),
            image,
            memory,
            view,
            desc: *desc,
            aspect,
            layout: AtomicI32::new(vk::ImageLayout::UNDEFINED.as_raw()),
            samples,
            levels,
        })
    }

    /// Fills the whole image from tightly packed rows of `data` (width * height * texel bytes;
    /// for BC formats, rows of 4x4 blocks)
    /// and leaves a texture in SHADER_READ_ONLY_OPTIMAL (other kinds in TRANSFER_DST_OPTIMAL;
    /// the next render pass moves them). Depth images take the depth aspect's bytes, and
    /// depth-stencil ones then the stencil aspect's ([`image_bytes`]).
    pub fn upload_image(&self, image: &Image, data: &[u8]) -> Result<()> {
        if image.samples > 1 {
            return Err(VkError::Invalid(format!(
                "upload into a {}-sample image",
                image.samples
            )));
        }
        let want = image.host_bytes();
        if data.len() != want {
            return Err(VkError::Invalid(format!(
                "upload of {} bytes into a {}x{} {:?} image ({want} bytes, rows tightly packed)",
                data.len(),
                image.width(),
                image.height(),
                image.format()
            )));
        }
        let mut staging = self.take_staging(want as u64)?;
        staging.bytes_mut()[..want].copy_from_slice(data);
        let regions = copy_regions(image);
        self.submit_once(|d, cmd| {
            image.record_transition(d, cmd, vk::ImageLayout::TRANSFER_DST_OPTIMAL);
            // SAFETY: live buffer and image; the regions lie inside both.
            unsafe {
                d.cmd_copy_buffer_to_image(
                    cmd,
                    staging.buffer,
                    image.image,
                    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                    &regions,
                )
            };
            if image.desc.kind == ImageKind::Texture {
                image.record_transition(d, cmd, vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL);
            }
        })?;
        self.give_back_staging(staging);
        Ok(())
    }

    /// The image's contents as tightly packed rows (for depth formats: the depth aspect, 4
    /// bytes a texel for D32 / D24 (24 bits in the low bits), 2 for D16, then for
    /// depth-stencil formats the stencil aspect, 1 byte a texel). Waits for all work
    /// submitted before, and leaves the image in TRANSFER_SRC_OPTIMAL.
    pub fn read_image(&self, image: &Image) -> Result<Vec<u8>> {
        if image.samples > 1 {
            return Err(VkError::Invalid(format!(
                "readback of a {}-sample image (resolve it into a single-sampled one first)",
                image.samples
            )));
        }
        let bytes = image.host_bytes();
        let staging = self.take_staging(bytes as u64)?;
        let regions = copy_regions(image);
        self.submit_once(|d, cmd| {
            image.record_transition(d, cmd, vk::ImageLayout::TRANSFER_SRC_OPTIMAL);
            // SAFETY: as above.
            unsafe {
                d.cmd_copy_image_to_buffer(
                    cmd,
                    image.image,
                    vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                    staging.buffer,
                    &regions,
                )
            };
            memory::transfer_to_everything(d, cmd);
        })?;
        let out = staging.bytes()[..bytes].to_vec();
        self.give_back_staging(staging);
        Ok(out)
    }

    /// A host-visible staging buffer of at least `bytes` (contents undefined).
    fn take_staging(&self, bytes: u64) -> Result<crate::Buffer> {
        let mut pool = self.staging.lock().unwrap_or_else(|p| p.into_inner());
        pool.take(self, bytes)
    }

    /// Keeps a staging buffer whose copy has finished for the next copy.
    fn give_back_staging(&self, b: crate::Buffer) {
        let mut pool = self.staging.lock().unwrap_or_else(|p| p.into_inner());
        pool.give_back([b]);
    }

    pub fn create_sampler(&self, desc: &SamplerDesc) -> Result<Sampler> {
        self.create_sampler_mipmap(desc, vk::SamplerMipmapMode::NEAREST)
    }

    /// A sampler that filters between mip levels with `mipmap` (nearest level or linear
    /// between the two nearest); [`Gpu::create_sampler`] takes the nearest.
    pub fn create_sampler_mipmap(
        &self,
        desc: &SamplerDesc,
        mipmap: vk::SamplerMipmapMode,
    ) -> Result<Sampler> {
        let info = vk::SamplerCreateInfo::default()
            .mag_filter(desc.mag_filter)
            .min_filter(desc.min_filter)
            .mipmap_mode(mipmap)
            .address_mode_u(desc.address[0])
            .address_mode_v(desc.address[1])
            .address_mode_w(desc.address[2])
            .border_color(desc.border)
            .max_lod(desc.max_lod_256 as f32 / 256.0);
        // SAFETY: valid create info.
        let sampler = call("vkCreateSampler", unsafe {
            self.inner.device.create_sampler(&info, None)
        })?;
        Ok(Sampler {
            inner: self.inner.clone(),
            sampler,
            desc: *desc,
        })
    }
}

/// The copy regions of the whole image from `offset` on: one per mip level, the levels packed
/// one after the other; a depth-stencil image has its depth plane, then its stencil plane.
pub(crate) fn copy_regions_at(image: &Image, offset: u64) -> Vec<vk::BufferImageCopy> {
    let region = |aspect: vk::ImageAspectFlags, level: u32, at: u64| {
        let (w, h) = image.level_size(level);
        vk::BufferImageCopy::default()
            .buffer_offset(at)
            .buffer_row_length(0)
            .buffer_image_height(0)
            .image_subresource(
                vk::ImageSubresourceLayers::default()
                    .aspect_mask(aspect)
                    .mip_level(level)
                    .layer_count(1),
            )
            .image_extent(vk::Extent3D {
                width: w,
                height: h,
                depth: 1,
            })
    };
    if image.aspect.contains(vk::ImageAspectFlags::DEPTH) {
        let (w, h) = (image.desc.width as u64, image.desc.height as u64);
        let mut out = vec![region(vk::ImageAspectFlags::DEPTH, 0, offset)];
        if image.aspect.contains(vk::ImageAspectFlags::STENCIL) {
            // The depth aspect's texels are 4 bytes (D32, D24 in the low bits).
            out.push(region(vk::ImageAspectFlags::STENCIL, 0, offset + 4 * w * h));
        }
        return out;
    }
    let mut at = offset;
    (0..image.levels)
        .map(|l| {
            let r = region(image.aspect, l, at);
            let (w, h) = image.level_size(l);
            at += image_bytes(image.desc.format, w, h).unwrap_or(0) as u64;
            r
        })
        .collect()
}

fn copy_regions(image: &Image) -> Vec<vk::BufferImageCopy> {
    copy_regions_at(image, 0)
}
