//! aps5-vulkan: the Vulkan back end's compute core, on ash.
//!
//! [`Gpu`] picks a device (the first, or the one `APS5_VK_DEVICE` names by index or by a part of
//! its name), enables the features a translated shader may use when the device has them, and
//! with validation on (`APS5_VK_VALIDATION=1`, or [`GpuOptions::validation`]) turns every error
//! the Khronos validation layer reports into a failure of the call that caused it.
//!
//! Shaders get no descriptors: everything reaches them through push constants and buffer device
//! addresses (docs/SHADER_ABI.md), so a [`Buffer`] is host-visible memory with a device address
//! and a [`ComputePipeline`] is SPIR-V plus a push-constant range.
//!
//! ```no_run
//! use aps5_vulkan::{Gpu, GpuOptions};
//! let gpu = Gpu::new(&GpuOptions::from_env()).unwrap();
//! let buf = gpu.create_buffer(256).unwrap();
//! println!("{} at {:#x}", gpu.info().name, buf.device_address());
//! ```

use std::ffi::{CStr, CString, c_void};
use std::sync::{Arc, Mutex};

pub mod frame;
pub mod graphics;
pub mod image;
pub mod memory;
pub mod pcache;
pub mod png;
pub mod rects;
pub mod reference;

pub use ash::vk;
pub use frame::{Attachment, CommandList, DepthAttachment, Recorder, Rendering, TextureSet};
pub use graphics::{
    Blend, ColorTarget, GraphicsDesc, GraphicsPipeline, PipelinePath, Shader, TopologyClass,
    VertexAttribute, VertexBinding,
};
pub use image::{Image, ImageDesc, ImageKind, Sampler, SamplerDesc};
pub use memory::Mirror;
pub use pcache::{BlobLoad, BlobSave, DeviceKey, PIPELINE_CACHE_ENV};

/// What went wrong, with the Vulkan call or the condition that failed.
#[derive(Debug, thiserror::Error)]
pub enum VkError {
    #[error("cannot load the Vulkan loader (libvulkan.so.1; Debian package libvulkan1): {0}")]
    Load(String),
    #[error("{call} failed: {result}")]
    Call {
        call: &'static str,
        result: vk::Result,
    },
    #[error(
        "the Khronos validation layer is not installed (Debian package vulkan-validationlayers)"
    )]
    NoValidationLayer,
    #[error("no Vulkan device{0}")]
    NoDevice(String),
    #[error("device {name}: {what}")]
    Unsupported { name: String, what: String },
    #[error("no host-visible, host-coherent memory type for a {0}-byte buffer")]
    NoMemoryType(u64),
    #[error("the validation layer reported {} error(s):\n{}", .0.len(), .0.join("\n"))]
    Validation(Vec<String>),
    #[error("{0}")]
    Invalid(String),
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
}

pub type Result<T> = std::result::Result<T, VkError>;

fn call<T>(name: &'static str, r: std::result::Result<T, vk::Result>) -> Result<T> {
    r.map_err(|result| VkError::Call { call: name, result })
}

/// How to open the GPU.
#[derive(Clone, Debug, Default)]
pub struct GpuOptions {
    /// Enable VK_LAYER_KHRONOS_validation and fail on every error it reports.
    pub validation: bool,
    /// A device index ("1") or a case-insensitive part of its name ("llvmpipe"); None = the first.
    pub device: Option<String>,
    /// Build whole graphics pipelines even where the device has graphics pipeline libraries
    /// (`APS5_VK_WHOLE_PIPELINES=1`).
    pub whole_pipelines: bool,
    /// The folder of VkPipelineCache blobs, one per device key (`APS5_PIPELINE_CACHE`;
    /// see [`pcache`]); None = the cache lives in memory only.
    pub pipeline_cache_dir: Option<std::path::PathBuf>,
}

impl GpuOptions {
    /// `APS5_VK_VALIDATION=1` and `APS5_VK_DEVICE=...` from the environment.
    pub fn from_env() -> GpuOptions {
        GpuOptions {
            validation: std::env::var("APS5_VK_VALIDATION").is_ok_and(|v| v == "1"),
            device: std::env::var("APS5_VK_DEVICE")
                .ok()
                .filter(|s| !s.is_empty()),
            whole_pipelines: std::env::var("APS5_VK_WHOLE_PIPELINES").is_ok_and(|v| v == "1"),
            pipeline_cache_dir: std::env::var_os(PIPELINE_CACHE_ENV)
                .filter(|s| !s.is_empty())
                .map(Into::into),
        }
    }
}

/// Facts about the chosen device that callers plan with.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub index: usize,
    pub name: String,
    /// VK_API_VERSION of the device, decoded as (major, minor, patch).
    pub api_version: (u32, u32, u32),
    pub driver: String,
    /// Default subgroup size (VkPhysicalDeviceSubgroupProperties::subgroupSize).
    pub subgroup_size: u32,
    /// Range VK_EXT_subgroup_size_control allows (equal to subgroup_size when it is absent).
    pub min_subgroup_size: u32,
    pub max_subgroup_size: u32,
    pub subgroup_size_control: bool,
    /// The subgroup size a compute pipeline can require with full subgroups
    /// (`PipelineDesc::required_subgroup_size`), with ballot and shuffle in compute: 32 where
    /// the device allows it (NVIDIA), else None (lavapipe: 8). The translator's lane-per-invocation mapping needs it
    /// (`Options::host_subgroup_size`). Only with `APS5_LANE_MAPPING=1` for now: the mapping
    /// has not yet run on such a device.
    pub lane_subgroup: Option<u32>,
    pub max_push_constants_size: u32,
    pub max_compute_shared_memory_size: u32,
    pub max_compute_workgroup_invocations: u32,
    pub shader_float64: bool,
    pub shader_int64: bool,
    pub validation: bool,
    /// The queue family used for every submission.
    pub queue_family: u32,
    /// Whether that family also does graphics (required by the graphics API).
    pub graphics_queue: bool,
    /// VK_EXT_external_memory_host: `minImportedHostPointerAlignment` (None = no extension).
    pub host_import_alignment: Option<u64>,
    /// Vulkan 1.3 dynamicRendering and synchronization2 (both needed for graphics).
    pub dynamic_rendering: bool,
    /// VK_EXT_graphics_pipeline_library with graphicsPipelineLibraryFastLinking: graphics
    /// pipelines are fast-linked from libraries (see [`graphics`]).
    pub pipeline_library: bool,
    pub max_image_dimension_2d: u32,
    /// Colour attachments may blend differently (independentBlend).
    pub independent_blend: bool,
    /// geometryShader (rect lists are drawn through a geometry stage).
    pub geometry_shader: bool,
    /// Multisampled rasterization uses the standard sample positions.
    pub standard_sample_locations: bool,
    /// VkPhysicalDeviceDriverProperties::driverID (for the workarounds graphics.rs lists).
    pub driver_id: vk::DriverId,
    /// VkPhysicalDeviceFloatControlsProperties (Vulkan 1.2).
    pub float_controls: FloatControls,
    /// The shader features and properties the device has, spelled as translated shaders
    /// name them (`ShaderMeta::required_features`); [`Gpu::require`] checks against it.
    pub supported: Vec<&'static str>,
}

/// VkPhysicalDeviceFloatControlsProperties; the arrays are indexed f16, f32, f64.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FloatControls {
    /// denormBehaviorIndependence.
    pub denorm_independence: vk::ShaderFloatControlsIndependence,
    /// shaderDenormPreserveFloat16/32/64.
    pub denorm_preserve: [bool; 3],
    /// shaderDenormFlushToZeroFloat16/32/64.
    pub denorm_flush_to_zero: [bool; 3],
    /// shaderSignedZeroInfNanPreserveFloat16/32/64.
    pub signed_zero_inf_nan_preserve: [bool; 3],
}

impl FloatControls {
    /// The property names that are true, as `ShaderMeta::required_features` spells them.
    pub fn names(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        let sets: [(&[&'static str; 3], &[bool; 3]); 3] = [
            (
                &[
                    "shaderDenormPreserveFloat16",
                    "shaderDenormPreserveFloat32",
                    "shaderDenormPreserveFloat64",
                ],
                &self.denorm_preserve,
            ),
            (
                &[
                    "shaderDenormFlushToZeroFloat16",
                    "shaderDenormFlushToZeroFloat32",
                    "shaderDenormFlushToZeroFloat64",
                ],
                &self.denorm_flush_to_zero,
            ),
            (
                &[
                    "shaderSignedZeroInfNanPreserveFloat16",
                    "shaderSignedZeroInfNanPreserveFloat32",
                    "shaderSignedZeroInfNanPreserveFloat64",
                ],
                &self.signed_zero_inf_nan_preserve,
            ),
        ];
        for (names, have) in sets {
            for (n, h) in names.iter().zip(have) {
                if *h {
                    out.push(*n);
                }
            }
        }
        if self.denorm_independence != vk::ShaderFloatControlsIndependence::NONE {
            out.push("denormBehaviorIndependence=32_BIT_ONLY");
        }
        out
    }
}

/// The collected validation messages; the callback's user data points here.
type Messages = Mutex<Vec<String>>;

struct Inner {
    _entry: ash::Entry,
    instance: ash::Instance,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    messages: Box<Messages>,
    device: ash::Device,
    /// The queue and the command pool, used by one submission at a time (Vulkan requires
    /// external synchronisation of both).
    submit: Mutex<(vk::Queue, vk::CommandPool)>,
    memory: vk::PhysicalDeviceMemoryProperties,
    physical: vk::PhysicalDevice,
    /// The queue family of `submit`'s queue (graphics + compute where the device has one).
    family: u32,
    /// VK_EXT_external_memory_host, when the device has it.
    host_import: Option<ash::ext::external_memory_host::Device>,
    /// The one VkPipelineCache every pipeline is created through (internally synchronised:
    /// the prewarm threads and the submit thread share it).
    pipeline_cache: vk::PipelineCache,
}

impl Inner {
    /// Fails with every validation error reported since the last check (and forgets them).
    pub(crate) fn check(&self) -> Result<()> {
        let mut m = self.messages.lock().unwrap_or_else(|e| e.into_inner());
        if m.is_empty() {
            Ok(())
        } else {
            Err(VkError::Validation(std::mem::take(&mut *m)))
        }
    }

    /// Waits until the queue has finished everything submitted (before a resource that work
    /// may use is destroyed: draws recorded by a [`frame::Recorder`] outlive their submit call).
    pub(crate) fn wait_idle(&self) {
        let submit = self.submit.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the queue is externally synchronised by the lock.
        let _ = unsafe { self.device.queue_wait_idle(submit.0) };
    }

    /// A memory type index allowed by `bits` whose flags contain `want`.
    pub(crate) fn memory_type(&self, bits: u32, want: vk::MemoryPropertyFlags) -> Option<u32> {
        let mem = &self.memory;
        (0..mem.memory_type_count).find(|&i| {
            bits & (1 << i) != 0 && mem.memory_types[i as usize].property_flags.contains(want)
        })
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // SAFETY: every object below was created from these handles, and the buffers and
        // pipelines that hold an Arc<Inner> are gone, so nothing else uses them.
        unsafe {
            let _ = self.device.device_wait_idle();
            let (_, pool) = *self.submit.lock().unwrap_or_else(|e| e.into_inner());
            self.device.destroy_command_pool(pool, None);
            self.device
                .destroy_pipeline_cache(self.pipeline_cache, None);
            self.device.destroy_device(None);
            if let Some((utils, messenger)) = self.debug.take() {
                utils.destroy_debug_utils_messenger(messenger, None);
            }
            self.instance.destroy_instance(None);
        }
    }
}

/// An opened Vulkan device with one compute queue. A clone is another handle to the same
/// device, sharing its caches (the prewarm threads work on clones).
#[derive(Clone)]
pub struct Gpu {
    inner: Arc<Inner>,
    info: DeviceInfo,
    /// Graphics pipelines, libraries and layouts by key (see [`graphics`]).
    graphics: Arc<Mutex<graphics::GraphicsCache>>,
    /// Staging buffers of finished image copies, reused.
    staging: Arc<Mutex<BufferPool>>,
    /// The pipeline cache's blob on disk ([`pcache`]).
    blob: Arc<Mutex<pcache::BlobState>>,
}

unsafe extern "system" fn on_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: the layer passes valid callback data; user is the Box<Messages> Inner owns and
    // frees only after destroying the messenger.
    let (text, messages) = unsafe {
        let d = &*data;
        let text = if d.p_message.is_null() {
            String::from("(no message)")
        } else {
            CStr::from_ptr(d.p_message).to_string_lossy().into_owned()
        };
        (text, &*(user as *const Messages))
    };
    if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR) {
        if let Ok(mut m) = messages.lock() {
            m.push(text);
        }
    } else {
        eprintln!("vulkan validation: {text}");
    }
    vk::FALSE
}

fn version(v: u32) -> (u32, u32, u32) {
    (
        vk::api_version_major(v),
        vk::api_version_minor(v),
        vk::api_version_patch(v),
    )
}

fn c_chars(chars: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

impl Gpu {
    /// Opens the device `opts` names (see [`GpuOptions`]).
    pub fn new(opts: &GpuOptions) -> Result<Gpu> {
        // SAFETY: loading libvulkan runs its initialisers; it is the system Vulkan loader.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| VkError::Load(e.to_string()))?;
        let validation_layer = c"VK_LAYER_KHRONOS_validation";
        let mut layers = Vec::new();
        let mut extensions = Vec::new();
        if opts.validation {
            // SAFETY: plain enumeration calls on a loaded entry.
            let have = call("vkEnumerateInstanceLayerProperties", unsafe {
                entry.enumerate_instance_layer_properties()
            })?;
            if !have
                .iter()
                .any(|l| l.layer_name_as_c_str() == Ok(validation_layer))
            {
                return Err(VkError::NoValidationLayer);
            }
            layers.push(validation_layer.as_ptr());
            extensions.push(ash::ext::debug_utils::NAME.as_ptr());
        }
        let app = vk::ApplicationInfo::default()
            .application_name(c"aps5")
            .api_version(vk::API_VERSION_1_3);
        let messages: Box<Messages> = Box::new(Mutex::new(Vec::new()));
        let severities = vk::DebugUtilsMessageSeverityFlagsEXT::ERROR
            | vk::DebugUtilsMessageSeverityFlagsEXT::WARNING;
        let types = vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
            | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
            | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE;
        let user = &*messages as *const Messages as *mut c_void;
        let mut messenger_info = vk::DebugUtilsMessengerCreateInfoEXT::default()
            .message_severity(severities)
            .message_type(types)
            .pfn_user_callback(Some(on_message))
            .user_data(user);
        let mut create = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layers)
            .enabled_extension_names(&extensions);
        if opts.validation {
            // Also catches errors in vkCreateInstance / vkDestroyInstance themselves.
            create = create.push_next(&mut messenger_info);
        }
        // SAFETY: create info and everything it points to live across the call.
        let instance = call("vkCreateInstance", unsafe {
            entry.create_instance(&create, None)
        })?;
        let debug = if opts.validation {
            let utils = ash::ext::debug_utils::Instance::new(&entry, &instance);
            let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
                .message_severity(severities)
                .message_type(types)
                .pfn_user_callback(Some(on_message))
                .user_data(user);
            // SAFETY: the user data outlives the messenger (both owned by Inner, freed after).
            match unsafe { utils.create_debug_utils_messenger(&info, None) } {
                Ok(m) => Some((utils, m)),
                Err(result) => {
                    // SAFETY: nothing else was created from this instance.
                    unsafe { instance.destroy_instance(None) };
                    return Err(VkError::Call {
                        call: "vkCreateDebugUtilsMessengerEXT",
                        result,
                    });
                }
            }
        } else {
            None
        };
        match open_device(&instance, opts) {
            Ok((physical, index, device, queue, pool, mut info)) => {
                info.index = index;
                info.validation = opts.validation;
                // SAFETY: physical is a handle enumerated from this instance.
                let memory = unsafe { instance.get_physical_device_memory_properties(physical) };
                let host_import = info
                    .host_import_alignment
                    .is_some()
                    .then(|| ash::ext::external_memory_host::Device::new(&instance, &device));
                let family = info.queue_family;
                // SAFETY: physical is a handle enumerated from this instance.
                let props = unsafe { instance.get_physical_device_properties(physical) };
                let mut blob = pcache::BlobState {
                    folder: opts.pipeline_cache_dir.clone(),
                    key: pcache::DeviceKey::of(&props),
                    load: BlobLoad::NoFolder,
                    on_disk: None,
                };
                let seed = pcache::load(&mut blob).unwrap_or_default();
                let cache_info = vk::PipelineCacheCreateInfo::default().initial_data(&seed);
                // SAFETY: valid create info; the seed's Vulkan header was checked against this
                // device (pcache::decode), and a driver ignores data it cannot use.
                let pipeline_cache =
                    match unsafe { device.create_pipeline_cache(&cache_info, None) } {
                        Ok(c) => c,
                        Err(result) => {
                            // SAFETY: nothing was created from the device but its pool.
                            unsafe {
                                device.destroy_command_pool(pool, None);
                                device.destroy_device(None);
                                if let Some((utils, m)) = debug {
                                    utils.destroy_debug_utils_messenger(m, None);
                                }
                                instance.destroy_instance(None);
                            }
                            return Err(VkError::Call {
                                call: "vkCreatePipelineCache",
                                result,
                            });
                        }
                    };
                Ok(Gpu {
                    inner: Arc::new(Inner {
                        _entry: entry,
                        instance,
                        debug,
                        messages,
                        device,
                        submit: Mutex::new((queue, pool)),
                        memory,
                        physical,
                        family,
                        host_import,
                        pipeline_cache,
                    }),
                    info,
                    graphics: Arc::default(),
                    staging: Arc::new(Mutex::new(BufferPool::new(4096, 8))),
                    blob: Arc::new(Mutex::new(blob)),
                })
            }
            Err(e) => {
                // SAFETY: no device exists; tear down what we made, in reverse order.
                unsafe {
                    if let Some((utils, m)) = debug {
                        utils.destroy_debug_utils_messenger(m, None);
                    }
                    instance.destroy_instance(None);
                }
                Err(e)
            }
        }
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The key the pipeline cache blob of this device is filed under.
    pub fn pipeline_cache_key(&self) -> DeviceKey {
        self.blob.lock().unwrap_or_else(|e| e.into_inner()).key
    }

    /// What opening the device made of its pipeline cache blob (a mismatch or a damaged
    /// blob was not used: the caller reports it).
    pub fn pipeline_cache_load(&self) -> BlobLoad {
        self.blob
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .load
            .clone()
    }

    /// Writes the pipeline cache back to its blob (atomically) unless it holds what the file
    /// holds; a damaged or mismatched file of this device's name is replaced.
    pub fn save_pipeline_cache(&self) -> Result<BlobSave> {
        let mut blob = self.blob.lock().unwrap_or_else(|e| e.into_inner());
        if blob.folder.is_none() {
            return Ok(BlobSave::NoFolder);
        }
        // SAFETY: a live cache of this device (internally synchronised).
        let data = call("vkGetPipelineCacheData", unsafe {
            self.inner
                .device
                .get_pipeline_cache_data(self.inner.pipeline_cache)
        })?;
        let path = blob.path().unwrap_or_default();
        pcache::save(&mut blob, &data).map_err(|e| VkError::Io {
            path: path.display().to_string(),
            reason: e.to_string(),
        })
    }

    /// The ash device, for calls this crate does not wrap (benchmarks compare against it).
    pub fn raw_device(&self) -> &ash::Device {
        &self.inner.device
    }

    /// Fails, naming the first one, unless the device has every feature or property in
    /// `names` (a translated shader's `ShaderMeta::required_features`): Vulkan features
    /// (`shaderFloat64`, ...) and VkPhysicalDeviceFloatControlsProperties (`DenormPreserve`
    /// and friends declared by the module need `shaderDenormPreserveFloat32`, ...).
    pub fn require(&self, names: &[&str]) -> Result<()> {
        for n in names {
            if !self.info.supported.contains(n) {
                let what = if n.starts_with("shaderDenorm")
                    || n.starts_with("shaderSignedZero")
                    || n.starts_with("denormBehavior")
                {
                    format!(
                        "the shader's float model needs {n} (VkPhysicalDeviceFloatControlsProperties), \
                         which this device does not have; translate for this device \
                         (Options::host_float_controls) to run without that guarantee"
                    )
                } else {
                    format!("the shader needs the feature {n}, which this device does not have")
                };
                return Err(VkError::Unsupported {
                    name: self.info.name.clone(),
                    what,
                });
            }
        }
        Ok(())
    }

    /// Fails with every validation error reported since the last check (and forgets them).
    pub fn check_validation(&self) -> Result<()> {
        self.inner.check()
    }

    /// A host-visible, host-coherent storage buffer of `bytes` (at least 4) with a device
    /// address, zero-filled. Also usable as a vertex, index or indirect buffer.
    pub fn create_buffer(&self, bytes: u64) -> Result<Buffer> {
        self.create_buffer_in(
            bytes,
            vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
        )
    }

    /// A buffer in memory with `wanted` properties: mapped when they include HOST_VISIBLE,
    /// otherwise device-only (zero-filled by the GPU; `Buffer::bytes` is then empty).
    pub(crate) fn create_buffer_in(
        &self,
        bytes: u64,
        wanted: vk::MemoryPropertyFlags,
    ) -> Result<Buffer> {
        let d = &self.inner.device;
        let size = bytes.max(4).next_multiple_of(4);
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(buffer_usage())
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: valid create info on our device.
        let buffer = call("vkCreateBuffer", unsafe { d.create_buffer(&info, None) })?;
        let destroy_buffer = |e| {
            // SAFETY: the buffer is unused and unbound.
            unsafe { d.destroy_buffer(buffer, None) };
            e
        };
        // SAFETY: buffer is a live handle of this device.
        let req = unsafe { d.get_buffer_memory_requirements(buffer) };
        let host = wanted.contains(vk::MemoryPropertyFlags::HOST_VISIBLE);
        // Host-visible memory the CPU also reads (fault records, readbacks, mirrors compared
        // after the GPU ran) is cached where the device offers it: uncached (write-combined)
        // memory makes every host read a trip over the bus (NVIDIA lists it first).
        let cached = host
            .then(|| {
                self.inner.memory_type(
                    req.memory_type_bits,
                    wanted | vk::MemoryPropertyFlags::HOST_CACHED,
                )
            })
            .flatten();
        let Some(type_index) =
            cached.or_else(|| self.inner.memory_type(req.memory_type_bits, wanted))
        else {
            return Err(destroy_buffer(VkError::NoMemoryType(size)));
        };
        let mut flags =
            vk::MemoryAllocateFlagsInfo::default().flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
        let alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(type_index)
            .push_next(&mut flags);
        // SAFETY: valid allocate info.
        let memory = match unsafe { d.allocate_memory(&alloc, None) } {
            Ok(m) => m,
            Err(result) => {
                return Err(destroy_buffer(VkError::Call {
                    call: "vkAllocateMemory",
                    result,
                }));
            }
        };
        let free = |e| {
            // SAFETY: unused memory and buffer of this device.
            unsafe {
                d.destroy_buffer(buffer, None);
                d.free_memory(memory, None);
            }
            e
        };
        // SAFETY: memory is large enough (from the requirements) and not yet bound.
        if let Err(result) = unsafe { d.bind_buffer_memory(buffer, memory, 0) } {
            return Err(free(VkError::Call {
                call: "vkBindBufferMemory",
                result,
            }));
        }
        let mut ptr = std::ptr::null_mut();
        if host {
            // SAFETY: host-visible memory, mapped once for the buffer's lifetime.
            ptr = match unsafe {
                d.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())
            } {
                Ok(p) => p as *mut u8,
                Err(result) => {
                    return Err(free(VkError::Call {
                        call: "vkMapMemory",
                        result,
                    }));
                }
            };
            // SAFETY: the mapping covers `size` bytes.
            unsafe { std::ptr::write_bytes(ptr, 0, size as usize) };
        }
        let addr_info = vk::BufferDeviceAddressInfo::default().buffer(buffer);
        // SAFETY: the buffer was created with SHADER_DEVICE_ADDRESS and is bound.
        let address = unsafe { d.get_buffer_device_address(&addr_info) };
        let out = Buffer {
            inner: self.inner.clone(),
            buffer,
            memory,
            ptr,
            size,
            address,
            mapped: host,
        };
        if !host {
            self.submit_once(|d, cmd| {
                // SAFETY: a live buffer of `size` bytes.
                unsafe { d.cmd_fill_buffer(cmd, buffer, 0, vk::WHOLE_SIZE, 0) };
                memory::transfer_to_everything(d, cmd);
            })?;
        }
        Ok(out)
    }

    /// A compute pipeline for SPIR-V `words` with a push-constant range of
    /// `push_constant_bytes` and no descriptor sets.
    pub fn create_compute_pipeline(&self, desc: &PipelineDesc<'_>) -> Result<ComputePipeline> {
        let d = &self.inner.device;
        if desc.push_constant_bytes > self.info.max_push_constants_size {
            return Err(VkError::Unsupported {
                name: self.info.name.clone(),
                what: format!(
                    "{} bytes of push constants (the device allows {})",
                    desc.push_constant_bytes, self.info.max_push_constants_size
                ),
            });
        }
        let entry = CString::new(desc.entry)
            .map_err(|_| VkError::Invalid(format!("entry point name {:?}", desc.entry)))?;
        let module_info = vk::ShaderModuleCreateInfo::default().code(desc.spirv);
        // SAFETY: valid create info; the SPIR-V is checked by the driver / validation layer.
        let module = call("vkCreateShaderModule", unsafe {
            d.create_shader_module(&module_info, None)
        })?;
        let ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .offset(0)
            .size(desc.push_constant_bytes)];
        let layout_info = if desc.push_constant_bytes > 0 {
            vk::PipelineLayoutCreateInfo::default().push_constant_ranges(&ranges)
        } else {
            vk::PipelineLayoutCreateInfo::default()
        };
        // SAFETY: valid create info.
        let layout = match unsafe { d.create_pipeline_layout(&layout_info, None) } {
            Ok(l) => l,
            Err(result) => {
                // SAFETY: the module is unused.
                unsafe { d.destroy_shader_module(module, None) };
                return Err(VkError::Call {
                    call: "vkCreatePipelineLayout",
                    result,
                });
            }
        };
        let mut required = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default()
            .required_subgroup_size(
                desc.required_subgroup_size
                    .unwrap_or(self.info.subgroup_size),
            );
        let mut stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(&entry);
        if desc.required_subgroup_size.is_some() {
            // Every subgroup full: the lane-per-invocation mapping takes a subgroup for a wave.
            stage = stage
                .push_next(&mut required)
                .flags(vk::PipelineShaderStageCreateFlags::REQUIRE_FULL_SUBGROUPS);
        }
        let info = vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(layout);
        // SAFETY: valid create info; module and layout are live.
        let created =
            unsafe { d.create_compute_pipelines(self.inner.pipeline_cache, &[info], None) };
        // SAFETY: a pipeline keeps no reference to its module.
        unsafe { d.destroy_shader_module(module, None) };
        let pipeline = match created {
            Ok(p) => p[0],
            Err((_, result)) => {
                // SAFETY: the layout is unused.
                unsafe { d.destroy_pipeline_layout(layout, None) };
                return Err(VkError::Call {
                    call: "vkCreateComputePipelines",
                    result,
                });
            }
        };
        self.check_validation()?;
        Ok(ComputePipeline {
            inner: self.inner.clone(),
            pipeline,
            layout,
            push_constant_bytes: desc.push_constant_bytes,
        })
    }

    /// Records push constants + one dispatch of `groups`, submits, and waits for completion.
    pub fn dispatch(
        &self,
        pipeline: &ComputePipeline,
        push: &[u8],
        groups: [u32; 3],
    ) -> Result<()> {
        if push.len() != pipeline.push_constant_bytes as usize {
            return Err(VkError::Invalid(format!(
                "{} bytes of push constants for a pipeline that takes {}",
                push.len(),
                pipeline.push_constant_bytes
            )));
        }
        let d = &self.inner.device;
        let submit = self.inner.submit.lock().unwrap_or_else(|e| e.into_inner());
        let (queue, pool) = *submit;
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: valid allocate info; the pool is ours while `submit` is locked.
        let cmd = call("vkAllocateCommandBuffers", unsafe {
            d.allocate_command_buffers(&alloc)
        })?[0];
        let result = (|| {
            let begin = vk::CommandBufferBeginInfo::default()
                .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
            // SAFETY: cmd is a fresh primary command buffer; every handle recorded is live.
            unsafe {
                call("vkBeginCommandBuffer", d.begin_command_buffer(cmd, &begin))?;
                d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipeline.pipeline);
                if !push.is_empty() {
                    d.cmd_push_constants(
                        cmd,
                        pipeline.layout,
                        vk::ShaderStageFlags::COMPUTE,
                        0,
                        push,
                    );
                }
                d.cmd_dispatch(cmd, groups[0], groups[1], groups[2]);
                // Make the shader's writes visible to the host reads that follow.
                let barrier = vk::MemoryBarrier::default()
                    .src_access_mask(vk::AccessFlags::SHADER_WRITE)
                    .dst_access_mask(vk::AccessFlags::HOST_READ);
                d.cmd_pipeline_barrier(
                    cmd,
                    vk::PipelineStageFlags::COMPUTE_SHADER,
                    vk::PipelineStageFlags::HOST,
                    vk::DependencyFlags::empty(),
                    &[barrier],
                    &[],
                    &[],
                );
                call("vkEndCommandBuffer", d.end_command_buffer(cmd))?;
                let fence = call(
                    "vkCreateFence",
                    d.create_fence(&vk::FenceCreateInfo::default(), None),
                )?;
                let cmds = [cmd];
                let info = vk::SubmitInfo::default().command_buffers(&cmds);
                let waited =
                    call("vkQueueSubmit", d.queue_submit(queue, &[info], fence)).and_then(|()| {
                        call(
                            "vkWaitForFences",
                            d.wait_for_fences(&[fence], true, u64::MAX),
                        )
                    });
                d.destroy_fence(fence, None);
                waited
            }
        })();
        // SAFETY: the submission finished (or never started); the buffer is idle.
        unsafe { d.free_command_buffers(pool, &[cmd]) };
        drop(submit);
        result?;
        self.check_validation()
    }
}

type Opened = (
    vk::PhysicalDevice,
    usize,
    ash::Device,
    vk::Queue,
    vk::CommandPool,
    DeviceInfo,
);

fn open_device(instance: &ash::Instance, opts: &GpuOptions) -> Result<Opened> {
    // SAFETY: enumeration on a live instance.
    let physicals = call("vkEnumeratePhysicalDevices", unsafe {
        instance.enumerate_physical_devices()
    })?;
    let names: Vec<String> = physicals
        .iter()
        // SAFETY: handles from the enumeration above.
        .map(|&p| c_chars(&unsafe { instance.get_physical_device_properties(p) }.device_name))
        .collect();
    let index = match &opts.device {
        None => 0,
        Some(want) => match want.parse::<usize>() {
            Ok(i) => i,
            Err(_) => {
                let w = want.to_lowercase();
                names
                    .iter()
                    .position(|n| n.to_lowercase().contains(&w))
                    .ok_or_else(|| {
                        VkError::NoDevice(format!(
                            " named {want:?} (devices: {})",
                            names.join(", ")
                        ))
                    })?
            }
        },
    };
    let Some(&physical) = physicals.get(index) else {
        return Err(VkError::NoDevice(if physicals.is_empty() {
            " (is a Vulkan driver installed? lavapipe: Debian package mesa-vulkan-drivers)".into()
        } else {
            format!(" {index} (devices: {})", names.join(", "))
        }));
    };
    let name = names[index].clone();

    let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
    let mut sizes = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
    let mut driver = vk::PhysicalDeviceDriverProperties::default();
    let mut float_props = vk::PhysicalDeviceFloatControlsProperties::default();
    let mut props2 = vk::PhysicalDeviceProperties2::default()
        .push_next(&mut subgroup)
        .push_next(&mut sizes)
        .push_next(&mut driver)
        .push_next(&mut float_props);
    // SAFETY: a live physical device; the chain structs outlive the call.
    unsafe { instance.get_physical_device_properties2(physical, &mut props2) };
    let props = props2.properties;
    let api = props.api_version;
    if version(api) < (1, 2, 0) {
        return Err(VkError::Unsupported {
            name,
            what: format!("Vulkan {:?}; aps5 needs 1.2", version(api)),
        });
    }
    let has13 = version(api) >= (1, 3, 0);

    let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
    let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
    let mut have = vk::PhysicalDeviceFeatures2::default()
        .push_next(&mut f11)
        .push_next(&mut f12);
    if has13 {
        have = have.push_next(&mut f13);
    }
    // SAFETY: as above.
    unsafe { instance.get_physical_device_features2(physical, &mut have) };
    let base = have.features;
    if f12.buffer_device_address == vk::FALSE || base.shader_int64 == vk::FALSE {
        return Err(VkError::Unsupported {
            name,
            what: "no bufferDeviceAddress or shaderInt64 (both required)".into(),
        });
    }
    // Enable what a translated shader may use, where the device has it.
    let want_base = vk::PhysicalDeviceFeatures::default()
        .shader_int64(true)
        .shader_int16(base.shader_int16 == vk::TRUE)
        .shader_float64(base.shader_float64 == vk::TRUE)
        .independent_blend(base.independent_blend == vk::TRUE)
        .geometry_shader(base.geometry_shader == vk::TRUE)
        .texture_compression_bc(base.texture_compression_bc == vk::TRUE);
    let mut want11 = vk::PhysicalDeviceVulkan11Features::default()
        .storage_buffer16_bit_access(f11.storage_buffer16_bit_access == vk::TRUE)
        .variable_pointers_storage_buffer(f11.variable_pointers_storage_buffer == vk::TRUE)
        .variable_pointers(f11.variable_pointers == vk::TRUE);
    let mut want12 = vk::PhysicalDeviceVulkan12Features::default()
        .buffer_device_address(true)
        .storage_buffer8_bit_access(f12.storage_buffer8_bit_access == vk::TRUE)
        .shader_int8(f12.shader_int8 == vk::TRUE)
        .shader_float16(f12.shader_float16 == vk::TRUE)
        .vulkan_memory_model(f12.vulkan_memory_model == vk::TRUE)
        .vulkan_memory_model_device_scope(f12.vulkan_memory_model_device_scope == vk::TRUE)
        .shader_subgroup_extended_types(f12.shader_subgroup_extended_types == vk::TRUE)
        .scalar_block_layout(f12.scalar_block_layout == vk::TRUE)
        .shader_buffer_int64_atomics(f12.shader_buffer_int64_atomics == vk::TRUE)
        .shader_shared_int64_atomics(f12.shader_shared_int64_atomics == vk::TRUE);
    let mut want13 = vk::PhysicalDeviceVulkan13Features::default()
        .subgroup_size_control(f13.subgroup_size_control == vk::TRUE)
        .compute_full_subgroups(f13.compute_full_subgroups == vk::TRUE)
        .maintenance4(f13.maintenance4 == vk::TRUE);

    // Device extensions the graphics core and guest memory use, where present.
    // SAFETY: enumeration on a live physical device.
    let extensions = call("vkEnumerateDeviceExtensionProperties", unsafe {
        instance.enumerate_device_extension_properties(physical)
    })?;
    let has_ext = |want: &CStr| {
        extensions
            .iter()
            .any(|e| e.extension_name_as_c_str() == Ok(want))
    };
    let mut enable: Vec<*const std::ffi::c_char> = Vec::new();
    let host_import_alignment = if has_ext(ash::ext::external_memory_host::NAME) {
        enable.push(ash::ext::external_memory_host::NAME.as_ptr());
        let mut host = vk::PhysicalDeviceExternalMemoryHostPropertiesEXT::default();
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut host);
        // SAFETY: as above.
        unsafe { instance.get_physical_device_properties2(physical, &mut p2) };
        Some(host.min_imported_host_pointer_alignment.max(1))
    } else {
        None
    };
    let mut gpl_features = vk::PhysicalDeviceGraphicsPipelineLibraryFeaturesEXT::default();
    let mut pipeline_library = false;
    if !opts.whole_pipelines
        && has13
        && has_ext(ash::ext::graphics_pipeline_library::NAME)
        && has_ext(ash::khr::pipeline_library::NAME)
    {
        let mut gpl_props = vk::PhysicalDeviceGraphicsPipelineLibraryPropertiesEXT::default();
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut gpl_props);
        // SAFETY: as above.
        unsafe { instance.get_physical_device_properties2(physical, &mut p2) };
        let mut f = vk::PhysicalDeviceGraphicsPipelineLibraryFeaturesEXT::default();
        let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut f);
        // SAFETY: as above.
        unsafe { instance.get_physical_device_features2(physical, &mut f2) };
        if f.graphics_pipeline_library == vk::TRUE
            && gpl_props.graphics_pipeline_library_fast_linking == vk::TRUE
        {
            pipeline_library = true;
            gpl_features = gpl_features.graphics_pipeline_library(true);
            enable.push(ash::ext::graphics_pipeline_library::NAME.as_ptr());
            enable.push(ash::khr::pipeline_library::NAME.as_ptr());
        }
    }
    let dynamic_rendering =
        has13 && f13.dynamic_rendering == vk::TRUE && f13.synchronization2 == vk::TRUE;
    want12 = want12.timeline_semaphore(f12.timeline_semaphore == vk::TRUE);
    want13 = want13
        .dynamic_rendering(dynamic_rendering)
        .synchronization2(dynamic_rendering);

    // SAFETY: as above.
    let families = unsafe { instance.get_physical_device_queue_family_properties(physical) };
    // Prefer a family that does both, so draws and dispatches share one queue.
    let both = vk::QueueFlags::COMPUTE | vk::QueueFlags::GRAPHICS;
    let Some(family) = families
        .iter()
        .position(|f| f.queue_flags.contains(both))
        .or_else(|| {
            families
                .iter()
                .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
        })
    else {
        return Err(VkError::Unsupported {
            name,
            what: "no compute queue".into(),
        });
    };
    let priorities = [1.0f32];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(family as u32)
        .queue_priorities(&priorities)];
    let mut create = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_features(&want_base)
        .enabled_extension_names(&enable)
        .push_next(&mut want11)
        .push_next(&mut want12);
    if has13 {
        create = create.push_next(&mut want13);
    }
    if pipeline_library {
        create = create.push_next(&mut gpl_features);
    }
    // SAFETY: valid create info; every chained struct outlives the call.
    let device = call("vkCreateDevice", unsafe {
        instance.create_device(physical, &create, None)
    })?;
    // SAFETY: family/queue 0 were requested above.
    let queue = unsafe { device.get_device_queue(family as u32, 0) };
    let pool_info = vk::CommandPoolCreateInfo::default()
        .queue_family_index(family as u32)
        .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
    // SAFETY: valid create info.
    let pool = match unsafe { device.create_command_pool(&pool_info, None) } {
        Ok(p) => p,
        Err(result) => {
            // SAFETY: nothing else was created from the device.
            unsafe { device.destroy_device(None) };
            return Err(VkError::Call {
                call: "vkCreateCommandPool",
                result,
            });
        }
    };
    let control = has13 && f13.subgroup_size_control == vk::TRUE;
    let t = |b: vk::Bool32| b == vk::TRUE;
    let ops = vk::SubgroupFeatureFlags::BASIC
        | vk::SubgroupFeatureFlags::BALLOT
        | vk::SubgroupFeatureFlags::SHUFFLE;
    let lane_subgroup = (control
        && t(f13.compute_full_subgroups)
        && sizes
            .required_subgroup_size_stages
            .contains(vk::ShaderStageFlags::COMPUTE)
        && subgroup
            .supported_stages
            .contains(vk::ShaderStageFlags::COMPUTE)
        && subgroup.supported_operations.contains(ops)
        && (sizes.min_subgroup_size..=sizes.max_subgroup_size).contains(&32)
        // llvmpipe reports the size LP_NATIVE_VECTOR_WIDTH asks for (32 at 1024 bits) but
        // runs subgroups of at most 16 (SubgroupId counts every 16 invocations, ballots hold
        // 16 bits): not a host for the mapping.
        && driver.driver_id != vk::DriverId::MESA_LLVMPIPE
        // Opt-in until the mapping has been run on a device that has it (docs/TRANSLATOR.md).
        && std::env::var("APS5_LANE_MAPPING").is_ok_and(|v| v == "1"))
    .then_some(32);
    let fp = &float_props;
    let float_controls = FloatControls {
        denorm_independence: fp.denorm_behavior_independence,
        denorm_preserve: [
            t(fp.shader_denorm_preserve_float16),
            t(fp.shader_denorm_preserve_float32),
            t(fp.shader_denorm_preserve_float64),
        ],
        denorm_flush_to_zero: [
            t(fp.shader_denorm_flush_to_zero_float16),
            t(fp.shader_denorm_flush_to_zero_float32),
            t(fp.shader_denorm_flush_to_zero_float64),
        ],
        signed_zero_inf_nan_preserve: [
            t(fp.shader_signed_zero_inf_nan_preserve_float16),
            t(fp.shader_signed_zero_inf_nan_preserve_float32),
            t(fp.shader_signed_zero_inf_nan_preserve_float64),
        ],
    };
    let mut supported = float_controls.names();
    for (name, have) in [
        ("bufferDeviceAddress", true),
        ("shaderInt64", true),
        ("shaderFloat64", t(base.shader_float64)),
        (
            "vertexPipelineStoresAndAtomics",
            t(base.vertex_pipeline_stores_and_atomics),
        ),
        (
            "fragmentStoresAndAtomics",
            t(base.fragment_stores_and_atomics),
        ),
        ("sampleRateShading", t(base.sample_rate_shading)),
        // aps5_shader's LANE_SUBGROUP_FEATURE (this crate does not depend on the translator).
        ("subgroupSize32", lane_subgroup == Some(32)),
    ] {
        if have {
            supported.push(name);
        }
    }
    supported.sort_unstable();
    let info = DeviceInfo {
        index,
        name,
        api_version: version(api),
        driver: format!(
            "{} {}",
            c_chars(&driver.driver_name),
            c_chars(&driver.driver_info)
        ),
        subgroup_size: subgroup.subgroup_size,
        min_subgroup_size: if control {
            sizes.min_subgroup_size
        } else {
            subgroup.subgroup_size
        },
        max_subgroup_size: if control {
            sizes.max_subgroup_size
        } else {
            subgroup.subgroup_size
        },
        subgroup_size_control: control,
        lane_subgroup,
        max_push_constants_size: props.limits.max_push_constants_size,
        max_compute_shared_memory_size: props.limits.max_compute_shared_memory_size,
        max_compute_workgroup_invocations: props.limits.max_compute_work_group_invocations,
        shader_float64: base.shader_float64 == vk::TRUE,
        shader_int64: true,
        validation: false,
        queue_family: family as u32,
        graphics_queue: families[family]
            .queue_flags
            .contains(vk::QueueFlags::GRAPHICS),
        host_import_alignment,
        dynamic_rendering,
        pipeline_library,
        max_image_dimension_2d: props.limits.max_image_dimension2_d,
        independent_blend: base.independent_blend == vk::TRUE,
        geometry_shader: base.geometry_shader == vk::TRUE,
        driver_id: driver.driver_id,
        standard_sample_locations: props.limits.standard_sample_locations == vk::TRUE,
        float_controls,
        supported,
    };
    Ok((physical, index, device, queue, pool, info))
}

/// Host-visible buffers whose work has finished, kept for reuse: allocating device memory
/// per draw or copy costs milliseconds on some drivers (NVIDIA's vkAllocateMemory). A buffer
/// taken has at least the size asked for and at most twice it (or twice `min`); its contents
/// are undefined, the taker writes what the device reads.
pub struct BufferPool {
    bufs: Vec<Buffer>,
    /// The smallest buffer made.
    min: u64,
    /// How many buffers are kept at most.
    keep: usize,
}

impl BufferPool {
    pub const fn new(min: u64, keep: usize) -> BufferPool {
        BufferPool {
            bufs: Vec::new(),
            min,
            keep,
        }
    }

    /// A kept buffer that fits `bytes`, if any (see [`BufferPool::take`]).
    fn fit(&mut self, bytes: u64) -> Option<Buffer> {
        let cap = bytes.max(self.min) * 2;
        let i = self
            .bufs
            .iter()
            .enumerate()
            .filter(|(_, b)| b.size() >= bytes && b.size() <= cap)
            .min_by_key(|(_, b)| b.size())
            .map(|(i, _)| i)?;
        Some(self.bufs.swap_remove(i))
    }

    /// A buffer of at least `bytes`: a kept one, or a new one of the next power of two.
    pub fn take(&mut self, gpu: &Gpu, bytes: u64) -> Result<Buffer> {
        match self.fit(bytes) {
            Some(b) => Ok(b),
            None => gpu.create_buffer(bytes.max(self.min).next_power_of_two()),
        }
    }

    /// Keeps buffers the device is done with (beyond `keep`, they are freed).
    pub fn give_back(&mut self, bufs: impl IntoIterator<Item = Buffer>) {
        for b in bufs {
            if self.bufs.len() < self.keep {
                self.bufs.push(b);
            }
        }
    }
}

/// Host-visible device memory with a device address (buffer device address).
pub struct Buffer {
    inner: Arc<Inner>,
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    ptr: *mut u8,
    size: u64,
    address: u64,
    /// Whether `ptr` is our vkMapMemory mapping (false: imported host memory, the caller's).
    mapped: bool,
}

// SAFETY: the buffer owns its memory; host access goes through &self / &mut self.
unsafe impl Send for Buffer {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for Buffer {}

/// What every buffer can be used as: storage through its device address, copies, and the
/// vertex / index / indirect buffers of draws.
pub(crate) fn buffer_usage() -> vk::BufferUsageFlags {
    vk::BufferUsageFlags::STORAGE_BUFFER
        | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS
        | vk::BufferUsageFlags::TRANSFER_SRC
        | vk::BufferUsageFlags::TRANSFER_DST
        | vk::BufferUsageFlags::VERTEX_BUFFER
        | vk::BufferUsageFlags::INDEX_BUFFER
        | vk::BufferUsageFlags::INDIRECT_BUFFER
}

impl Buffer {
    /// The address shaders use (vkGetBufferDeviceAddress).
    pub fn device_address(&self) -> u64 {
        self.address
    }
    pub fn size(&self) -> u64 {
        self.size
    }
    /// The mapped contents (host-coherent; read only while no dispatch runs).
    /// Empty for a device-only buffer (a [`Mirror`]'s).
    pub fn bytes(&self) -> &[u8] {
        if self.ptr.is_null() {
            return &[];
        }
        // SAFETY: the mapping is `size` bytes and lives as long as self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.size as usize) }
    }
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        if self.ptr.is_null() {
            return &mut [];
        }
        // SAFETY: as above; &mut self gives exclusive host access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.size as usize) }
    }
    /// Copies `data` in at byte `offset`.
    pub fn write(&mut self, offset: usize, data: &[u8]) -> Result<()> {
        let end = offset
            .checked_add(data.len())
            .filter(|&e| e as u64 <= self.size)
            .ok_or_else(|| {
                VkError::Invalid(format!(
                    "write of {} bytes at {offset} into a {}-byte buffer",
                    data.len(),
                    self.size
                ))
            })?;
        if self.ptr.is_null() {
            return Err(VkError::Invalid(
                "write into a device-only buffer (use Gpu::upload_range)".into(),
            ));
        }
        self.bytes_mut()[offset..end].copy_from_slice(data);
        Ok(())
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        self.inner.wait_idle();
        let d = &self.inner.device;
        // SAFETY: the queue is idle, so no GPU work uses the buffer now.
        unsafe {
            if self.mapped {
                d.unmap_memory(self.memory);
            }
            d.destroy_buffer(self.buffer, None);
            d.free_memory(self.memory, None);
        }
    }
}

/// What a compute pipeline is built from.
#[derive(Clone, Debug)]
pub struct PipelineDesc<'a> {
    pub spirv: &'a [u32],
    pub entry: &'a str,
    pub push_constant_bytes: u32,
    /// Force the subgroup size (VK_EXT_subgroup_size_control) with every subgroup full (the
    /// local size x must be a multiple of it; `DeviceInfo::lane_subgroup` says the device
    /// can); None = the driver's choice.
    pub required_subgroup_size: Option<u32>,
}

/// A compute pipeline with a push-constant-only layout.
pub struct ComputePipeline {
    inner: Arc<Inner>,
    pipeline: vk::Pipeline,
    layout: vk::PipelineLayout,
    push_constant_bytes: u32,
}

impl Drop for ComputePipeline {
    fn drop(&mut self) {
        self.inner.wait_idle();
        // SAFETY: the queue is idle, so the pipeline is too.
        unsafe {
            self.inner.device.destroy_pipeline(self.pipeline, None);
            self.inner.device.destroy_pipeline_layout(self.layout, None);
        }
    }
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("info", &self.info).finish()
    }
}
