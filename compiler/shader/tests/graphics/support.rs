//! Shared by the graphics-stage tests: compiles LLVM IR shaders with llc-14 for gfx1030
//! (code from `.text`, register values from `.AMDGPU.config`), GLSL references with
//! glslangValidator, reads register field positions from Mesa's register database, and draws
//! with a minimal plain-Vulkan renderer (ash, dynamic rendering, validation layer on).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::{CStr, c_void};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use aps5_shader::translate::abi::push;
use ash::vk;
use object::{Object, ObjectSection};

pub const W: u32 = 32;
pub const H: u32 = 32;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/graphics")
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The tools the tests need; None (with a SKIP line) when one is missing.
pub fn tools() -> Option<()> {
    for t in ["llc-14", "llvm-objcopy-14", "glslangValidator", "spirv-val"] {
        if !have(t) {
            eprintln!("SKIP: {t} not found (Debian packages llvm-14, glslang-tools, spirv-tools)");
            return None;
        }
    }
    Some(())
}

/// A shader compiled by llc-14.
pub struct Compiled {
    /// `.text` as little-endian dwords.
    pub code: Vec<u32>,
    /// `.AMDGPU.config`: register byte offset -> value, as LLVM computed them.
    pub config: BTreeMap<u32, u32>,
}

/// Compiles tests/graphics/`name`.ll for gfx1030 (wave64 when asked).
pub fn llc(name: &str, wave64: bool) -> Compiled {
    let src = std::fs::read_to_string(dir().join(format!("{name}.ll"))).unwrap();
    llc_src(name, &src, wave64)
}

/// Compiles LLVM IR text for gfx1030.
pub fn llc_src(name: &str, src: &str, wave64: bool) -> Compiled {
    let tmp = tempfile::tempdir().unwrap();
    let ll = tmp.path().join("s.ll");
    std::fs::write(&ll, src).unwrap();
    let obj = tmp.path().join("s.o");
    let mut cmd = Command::new("llc-14");
    cmd.args(["-march=amdgcn", "-mcpu=gfx1030", "-filetype=obj", "-O2"]);
    if wave64 {
        cmd.arg("-mattr=+wavefrontsize64");
    }
    cmd.arg(&ll).arg("-o").arg(&obj);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "llc {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = tmp.path().join("s.bin");
    let out = Command::new("llvm-objcopy-14")
        .args(["-O", "binary", "--only-section=.text"])
        .arg(&obj)
        .arg(&bin)
        .output()
        .unwrap();
    assert!(out.status.success(), "objcopy {name}");
    let text = std::fs::read(&bin).unwrap();
    let code = text
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let data = std::fs::read(&obj).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let cfg = file.section_by_name(".AMDGPU.config").unwrap();
    let bytes = cfg.data().unwrap();
    let mut config = BTreeMap::new();
    for pair in bytes.chunks_exact(8) {
        let r = u32::from_le_bytes(pair[0..4].try_into().unwrap());
        let v = u32::from_le_bytes(pair[4..8].try_into().unwrap());
        config.insert(r, v);
    }
    Compiled { code, config }
}

/// The byte offset llvm-objdump-14 gives the first instruction whose text starts with
/// `mnemonic` in the code llc-14 makes of `src`.
pub fn objdump_offset_of(src: &str, mnemonic: &str) -> u32 {
    let tmp = tempfile::tempdir().unwrap();
    let ll = tmp.path().join("s.ll");
    std::fs::write(&ll, src).unwrap();
    let obj = tmp.path().join("s.o");
    let ok = Command::new("llc-14")
        .args(["-march=amdgcn", "-mcpu=gfx1030", "-filetype=obj", "-O2"])
        .arg(&ll)
        .arg("-o")
        .arg(&obj)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let out = Command::new("llvm-objdump-14")
        .arg("-d")
        .arg(&obj)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // Lines look like: "\tglobal_load_dword v0, ... // 00000000000C: DC31900C 00000000".
    for line in text.lines() {
        if line.trim_start().starts_with(mnemonic)
            && let Some((_, rest)) = line.split_once("// ")
            && let Some((hex, _)) = rest.split_once(':')
        {
            return u32::from_str_radix(hex.trim(), 16).unwrap();
        }
    }
    panic!("{mnemonic} not in llvm-objdump output:\n{text}");
}

/// Compiles tests/graphics/`file` (a .vert or .frag) with glslangValidator for Vulkan.
pub fn glsl(file: &str) -> Vec<u32> {
    let tmp = tempfile::tempdir().unwrap();
    let out_path = tmp.path().join("s.spv");
    let out = Command::new("glslangValidator")
        .args(["-V", "--target-env", "vulkan1.2", "-o"])
        .arg(&out_path)
        .arg(dir().join(file))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "glslang {file}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let b = std::fs::read(&out_path).unwrap();
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Register field positions from Mesa's GFX10.3 register database.
pub struct Regs {
    json: serde_json::Value,
}

impl Regs {
    pub fn load() -> Regs {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/corpus/amd-registers/gfx103.json");
        let p = if p.exists() {
            p
        } else {
            PathBuf::from("/work/shared/corpus/amd-registers/gfx103.json")
        };
        let text = std::fs::read_to_string(&p)
            .unwrap_or_else(|e| panic!("{}: {e} (the register database)", p.display()));
        Regs {
            json: serde_json::from_str(&text).unwrap(),
        }
    }
    fn mapping(&self, reg: &str) -> &serde_json::Value {
        self.json["register_mappings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == reg)
            .unwrap_or_else(|| panic!("register {reg} not in the database"))
    }
    /// Byte offset of a register.
    pub fn offset(&self, reg: &str) -> u32 {
        self.mapping(reg)["map"]["at"].as_u64().unwrap() as u32
    }
    /// (low bit, high bit) of a field.
    pub fn field(&self, reg: &str, field: &str) -> (u32, u32) {
        let ty = self.mapping(reg)["type_ref"].as_str().unwrap().to_string();
        let f = self.json["register_types"][&ty]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == field)
            .unwrap_or_else(|| panic!("{reg}.{field} not in the database"));
        let b = f["bits"].as_array().unwrap();
        (b[0].as_u64().unwrap() as u32, b[1].as_u64().unwrap() as u32)
    }
    /// `value` placed in `reg.field` (checked to fit).
    pub fn set(&self, reg: &str, field: &str, value: u32) -> u32 {
        let (lo, hi) = self.field(reg, field);
        let width = hi - lo + 1;
        assert!(width == 32 || value < 1 << width, "{reg}.{field} = {value}");
        value << lo
    }
    /// An enum value by name (e.g. SPI_SHADER_EX_FORMAT / SPI_SHADER_32_ABGR).
    pub fn enum_value(&self, e: &str, name: &str) -> u32 {
        self.json["enums"][e]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == name)
            .unwrap_or_else(|| panic!("{e}.{name}"))["value"]
            .as_u64()
            .unwrap() as u32
    }
}

type Messages = Mutex<Vec<String>>;

unsafe extern "system" fn on_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: the layer passes valid callback data; user is the boxed Messages the renderer
    // owns until after the messenger is destroyed.
    let (text, messages) = unsafe {
        let d = &*data;
        let text = if d.p_message.is_null() {
            String::new()
        } else {
            CStr::from_ptr(d.p_message).to_string_lossy().into_owned()
        };
        (text, &*(user as *const Messages))
    };
    if severity.intersects(
        vk::DebugUtilsMessageSeverityFlagsEXT::ERROR
            | vk::DebugUtilsMessageSeverityFlagsEXT::WARNING,
    ) {
        messages.lock().unwrap().push(text);
    }
    vk::FALSE
}

/// A mapped buffer with a device address.
pub struct DevBuf {
    buf: vk::Buffer,
    mem: vk::DeviceMemory,
    ptr: *mut u8,
    bytes: u64,
    /// Device address.
    pub addr: u64,
}

impl DevBuf {
    /// Writes `data` at the start (the device is idle between draws).
    pub fn write(&self, data: &[u8]) {
        assert!(data.len() as u64 <= self.bytes);
        // SAFETY: mapped for `bytes`, host-coherent, and no draw is running.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr, data.len()) }
    }
    /// The buffer's bytes (the device is idle between draws).
    pub fn read(&self) -> Vec<u8> {
        // SAFETY: mapped for `bytes`, host-coherent, and no draw is running.
        unsafe { std::slice::from_raw_parts(self.ptr, self.bytes as usize).to_vec() }
    }
}

/// What one draw produced.
pub struct Image {
    /// RGBA8 pixels, row-major, W x H.
    pub rgba: Vec<u8>,
    /// D32 depth, W x H.
    pub depth: Vec<f32>,
}

/// One draw's setup.
pub struct Draw<'a> {
    pub vs: &'a [u32],
    pub fs: &'a [u32],
    /// The 96-byte push-constant block; the pixel stage gets its user SGPRs and code
    /// address from a record made of the same bytes (abi::push::PIXEL_RECORD).
    pub push: [u8; 96],
    pub vertices: u32,
    pub instances: u32,
    /// Depth test LESS with writes (cleared to 1.0); otherwise depth ALWAYS with writes.
    pub depth_less: bool,
}

/// A Vulkan 1.3 device with a graphics queue, validation on, for small offscreen draws.
pub struct Renderer {
    _entry: ash::Entry,
    instance: ash::Instance,
    debug: (ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT),
    messages: Box<Messages>,
    physical: vk::PhysicalDevice,
    device: ash::Device,
    queue: vk::Queue,
    pool: vk::CommandPool,
    pub name: String,
}

impl Drop for Renderer {
    fn drop(&mut self) {
        // SAFETY: everything below was created from these handles and is idle.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_command_pool(self.pool, None);
            self.device.destroy_device(None);
            self.debug
                .0
                .destroy_debug_utils_messenger(self.debug.1, None);
            self.instance.destroy_instance(None);
        }
    }
}

fn check<T>(what: &str, r: Result<T, vk::Result>) -> T {
    r.unwrap_or_else(|e| panic!("{what}: {e}"))
}

impl Renderer {
    /// None (with a SKIP line) when there is no Vulkan or no validation layer.
    pub fn new() -> Option<Renderer> {
        // SAFETY: loads the system Vulkan loader.
        let entry = match unsafe { ash::Entry::load() } {
            Ok(e) => e,
            Err(e) => {
                eprintln!("SKIP: no Vulkan loader: {e}");
                return None;
            }
        };
        let layer = c"VK_LAYER_KHRONOS_validation";
        // SAFETY: plain enumeration.
        let layers = unsafe { entry.enumerate_instance_layer_properties() }.unwrap_or_default();
        if !layers.iter().any(|l| l.layer_name_as_c_str() == Ok(layer)) {
            eprintln!("SKIP: no Khronos validation layer (vulkan-validationlayers)");
            return None;
        }
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
        let layer_names = [layer.as_ptr()];
        let exts = [ash::ext::debug_utils::NAME.as_ptr()];
        let create = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layer_names)
            .enabled_extension_names(&exts);
        // SAFETY: valid create info.
        let instance = check("vkCreateInstance", unsafe {
            entry.create_instance(&create, None)
        });
        let messages: Box<Messages> = Box::new(Mutex::new(Vec::new()));
        let utils = ash::ext::debug_utils::Instance::new(&entry, &instance);
        let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
            .message_severity(
                vk::DebugUtilsMessageSeverityFlagsEXT::ERROR
                    | vk::DebugUtilsMessageSeverityFlagsEXT::WARNING,
            )
            .message_type(
                vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                    | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION,
            )
            .pfn_user_callback(Some(on_message))
            .user_data(&*messages as *const Messages as *mut c_void);
        // SAFETY: the user data outlives the messenger (both dropped in Drop, messenger first).
        let messenger = check("vkCreateDebugUtilsMessengerEXT", unsafe {
            utils.create_debug_utils_messenger(&info, None)
        });
        // SAFETY: plain enumeration.
        let physicals = check("vkEnumeratePhysicalDevices", unsafe {
            instance.enumerate_physical_devices()
        });
        let want = std::env::var("APS5_VK_DEVICE")
            .ok()
            .map(|s| s.to_lowercase());
        let named: Vec<(vk::PhysicalDevice, String)> = physicals
            .iter()
            .map(|&p| {
                // SAFETY: a handle from this instance.
                let props = unsafe { instance.get_physical_device_properties(p) };
                let name = props
                    .device_name_as_c_str()
                    .map(|c| c.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (p, name)
            })
            .collect();
        let Some((physical, name)) = named
            .iter()
            .find(|(_, n)| want.as_ref().is_none_or(|w| n.to_lowercase().contains(w)))
            .cloned()
        else {
            eprintln!("SKIP: no Vulkan device");
            return None;
        };
        // SAFETY: a handle from this instance.
        let families = unsafe { instance.get_physical_device_queue_family_properties(physical) };
        let family = families
            .iter()
            .position(|f| f.queue_flags.contains(vk::QueueFlags::GRAPHICS))
            .expect("a graphics queue") as u32;
        let prio = [1.0f32];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(family)
            .queue_priorities(&prio)];
        // What translated graphics modules need (ShaderMeta::required_features).
        let base = vk::PhysicalDeviceFeatures::default()
            .shader_int64(true)
            .shader_float64(true)
            .fragment_stores_and_atomics(true)
            .vertex_pipeline_stores_and_atomics(true);
        let mut f12 = vk::PhysicalDeviceVulkan12Features::default().buffer_device_address(true);
        let mut f13 = vk::PhysicalDeviceVulkan13Features::default().dynamic_rendering(true);
        let dc = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_features(&base)
            .push_next(&mut f12)
            .push_next(&mut f13);
        // SAFETY: valid create info; chained structs live across the call.
        let device = check("vkCreateDevice", unsafe {
            instance.create_device(physical, &dc, None)
        });
        // SAFETY: queue 0 of the family requested above.
        let queue = unsafe { device.get_device_queue(family, 0) };
        let pci = vk::CommandPoolCreateInfo::default().queue_family_index(family);
        // SAFETY: valid create info.
        let pool = check("vkCreateCommandPool", unsafe {
            device.create_command_pool(&pci, None)
        });
        Some(Renderer {
            _entry: entry,
            instance,
            debug: (utils, messenger),
            messages,
            physical,
            device,
            queue,
            pool,
            name,
        })
    }

    /// Fails with every validation message since the last call.
    pub fn assert_quiet(&self) {
        let m = std::mem::take(&mut *self.messages.lock().unwrap());
        assert!(m.is_empty(), "validation layer:\n{}", m.join("\n"));
    }

    fn memory(
        &self,
        req: vk::MemoryRequirements,
        flags: vk::MemoryPropertyFlags,
    ) -> vk::DeviceMemory {
        // SAFETY: a handle from this instance.
        let props = unsafe {
            self.instance
                .get_physical_device_memory_properties(self.physical)
        };
        let idx = (0..props.memory_type_count)
            .find(|&i| {
                req.memory_type_bits & (1 << i) != 0
                    && props.memory_types[i as usize]
                        .property_flags
                        .contains(flags)
            })
            .expect("a memory type");
        let ai = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(idx);
        // SAFETY: valid allocate info.
        check("vkAllocateMemory", unsafe {
            self.device.allocate_memory(&ai, None)
        })
    }

    /// A host-visible storage buffer with a device address (for the fault buffer and guest
    /// memory), zero-filled.
    pub fn device_buffer(&self, bytes: u64) -> DevBuf {
        let d = &self.device;
        // SAFETY: valid create/allocate infos; the memory is bound once and mapped once.
        unsafe {
            let bci = vk::BufferCreateInfo::default().size(bytes).usage(
                vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS,
            );
            let buf = check("vkCreateBuffer", d.create_buffer(&bci, None));
            let req = d.get_buffer_memory_requirements(buf);
            let props = self
                .instance
                .get_physical_device_memory_properties(self.physical);
            let want =
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
            let idx = (0..props.memory_type_count)
                .find(|&i| {
                    req.memory_type_bits & (1 << i) != 0
                        && props.memory_types[i as usize].property_flags.contains(want)
                })
                .expect("a host-visible memory type");
            let mut flags = vk::MemoryAllocateFlagsInfo::default()
                .flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
            let ai = vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(idx)
                .push_next(&mut flags);
            let mem = check("vkAllocateMemory", d.allocate_memory(&ai, None));
            check("vkBindBufferMemory", d.bind_buffer_memory(buf, mem, 0));
            let ptr = check(
                "vkMapMemory",
                d.map_memory(mem, 0, bytes, vk::MemoryMapFlags::empty()),
            ) as *mut u8;
            std::ptr::write_bytes(ptr, 0, bytes as usize);
            let addr =
                d.get_buffer_device_address(&vk::BufferDeviceAddressInfo::default().buffer(buf));
            DevBuf {
                buf,
                mem,
                ptr,
                bytes,
                addr,
            }
        }
    }

    /// Frees a [`DevBuf`].
    pub fn free(&self, b: DevBuf) {
        // SAFETY: the device is idle after every draw; the buffer is not used again.
        unsafe {
            self.device.unmap_memory(b.mem);
            self.device.destroy_buffer(b.buf, None);
            self.device.free_memory(b.mem, None);
        }
    }

    fn image(
        &self,
        format: vk::Format,
        usage: vk::ImageUsageFlags,
        aspect: vk::ImageAspectFlags,
    ) -> (vk::Image, vk::DeviceMemory, vk::ImageView) {
        let ci = vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(format)
            .extent(vk::Extent3D {
                width: W,
                height: H,
                depth: 1,
            })
            .mip_levels(1)
            .array_layers(1)
            .samples(vk::SampleCountFlags::TYPE_1)
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(usage | vk::ImageUsageFlags::TRANSFER_SRC)
            .initial_layout(vk::ImageLayout::UNDEFINED);
        let d = &self.device;
        // SAFETY: valid create infos; the memory is bound before the view is made.
        unsafe {
            let img = check("vkCreateImage", d.create_image(&ci, None));
            let mem = self.memory(
                d.get_image_memory_requirements(img),
                vk::MemoryPropertyFlags::DEVICE_LOCAL,
            );
            check("vkBindImageMemory", d.bind_image_memory(img, mem, 0));
            let vi = vk::ImageViewCreateInfo::default()
                .image(img)
                .view_type(vk::ImageViewType::TYPE_2D)
                .format(format)
                .subresource_range(range(aspect));
            let view = check("vkCreateImageView", d.create_image_view(&vi, None));
            (img, mem, view)
        }
    }

    fn module(&self, words: &[u32]) -> vk::ShaderModule {
        let ci = vk::ShaderModuleCreateInfo::default().code(words);
        // SAFETY: valid SPIR-V words (checked by spirv-val before drawing).
        check("vkCreateShaderModule", unsafe {
            self.device.create_shader_module(&ci, None)
        })
    }

    /// Draws `vertices` vertices (a triangle list, no vertex buffers) into a cleared W x H
    /// RGBA8 target with a D32 depth buffer, and reads both back.
    pub fn draw(&self, dr: &Draw<'_>) -> Image {
        // The pixel stage's record: the block's user SGPRs, then its code address.
        let record = self.device_buffer(u64::from(push::PIXEL_RECORD_BYTES));
        let cb = push::CODE_BASE as usize;
        record.write(&[&dr.push[..64], &dr.push[cb..cb + 8]].concat());
        let pushed = [&dr.push[..], &record.addr.to_le_bytes()].concat();
        let img = self.draw_with(dr, &pushed);
        self.free(record);
        img
    }

    fn draw_with(&self, dr: &Draw<'_>, pushed: &[u8]) -> Image {
        let d = &self.device;
        let color_fmt = vk::Format::R8G8B8A8_UNORM;
        let depth_fmt = vk::Format::D32_SFLOAT;
        let (cimg, cmem, cview) = self.image(
            color_fmt,
            vk::ImageUsageFlags::COLOR_ATTACHMENT,
            vk::ImageAspectFlags::COLOR,
        );
        let (dimg, dmem, dview) = self.image(
            depth_fmt,
            vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT,
            vk::ImageAspectFlags::DEPTH,
        );
        let bytes = (W * H * 4) as u64;
        // SAFETY: every object is created, used by one submission that is waited for, and
        // destroyed below; create infos point at locals that outlive the calls.
        unsafe {
            let bci = vk::BufferCreateInfo::default()
                .size(2 * bytes)
                .usage(vk::BufferUsageFlags::TRANSFER_DST);
            let buf = check("vkCreateBuffer", d.create_buffer(&bci, None));
            let bmem = self.memory(
                d.get_buffer_memory_requirements(buf),
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
            );
            check("vkBindBufferMemory", d.bind_buffer_memory(buf, bmem, 0));
            let pcr = [vk::PushConstantRange::default()
                .stage_flags(vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT)
                .size(push::GRAPHICS_SIZE)];
            let lci = vk::PipelineLayoutCreateInfo::default().push_constant_ranges(&pcr);
            let layout = check(
                "vkCreatePipelineLayout",
                d.create_pipeline_layout(&lci, None),
            );
            let vsm = self.module(dr.vs);
            let fsm = self.module(dr.fs);
            let stages = [
                vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::VERTEX)
                    .module(vsm)
                    .name(c"main"),
                vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::FRAGMENT)
                    .module(fsm)
                    .name(c"main"),
            ];
            let vin = vk::PipelineVertexInputStateCreateInfo::default();
            let ia = vk::PipelineInputAssemblyStateCreateInfo::default()
                .topology(vk::PrimitiveTopology::TRIANGLE_LIST);
            let vp = [vk::Viewport {
                x: 0.0,
                y: 0.0,
                width: W as f32,
                height: H as f32,
                min_depth: 0.0,
                max_depth: 1.0,
            }];
            let sc = [vk::Rect2D {
                offset: vk::Offset2D { x: 0, y: 0 },
                extent: vk::Extent2D {
                    width: W,
                    height: H,
                },
            }];
            let vps = vk::PipelineViewportStateCreateInfo::default()
                .viewports(&vp)
                .scissors(&sc);
            let rs = vk::PipelineRasterizationStateCreateInfo::default()
                .polygon_mode(vk::PolygonMode::FILL)
                .cull_mode(vk::CullModeFlags::NONE)
                .front_face(vk::FrontFace::COUNTER_CLOCKWISE)
                .line_width(1.0);
            let ms = vk::PipelineMultisampleStateCreateInfo::default()
                .rasterization_samples(vk::SampleCountFlags::TYPE_1);
            let ds = vk::PipelineDepthStencilStateCreateInfo::default()
                .depth_test_enable(true)
                .depth_write_enable(true)
                .depth_compare_op(if dr.depth_less {
                    vk::CompareOp::LESS
                } else {
                    vk::CompareOp::ALWAYS
                });
            let cba = [vk::PipelineColorBlendAttachmentState::default()
                .color_write_mask(vk::ColorComponentFlags::RGBA)];
            let cb = vk::PipelineColorBlendStateCreateInfo::default().attachments(&cba);
            let fmts = [color_fmt];
            let mut rinfo = vk::PipelineRenderingCreateInfo::default()
                .color_attachment_formats(&fmts)
                .depth_attachment_format(depth_fmt);
            let gpci = [vk::GraphicsPipelineCreateInfo::default()
                .stages(&stages)
                .vertex_input_state(&vin)
                .input_assembly_state(&ia)
                .viewport_state(&vps)
                .rasterization_state(&rs)
                .multisample_state(&ms)
                .depth_stencil_state(&ds)
                .color_blend_state(&cb)
                .layout(layout)
                .push_next(&mut rinfo)];
            let pipe = d
                .create_graphics_pipelines(vk::PipelineCache::null(), &gpci, None)
                .map_err(|e| e.1)
                .unwrap_or_else(|e| panic!("vkCreateGraphicsPipelines: {e}"))[0];
            let cai = vk::CommandBufferAllocateInfo::default()
                .command_pool(self.pool)
                .level(vk::CommandBufferLevel::PRIMARY)
                .command_buffer_count(1);
            let cmd = check("vkAllocateCommandBuffers", d.allocate_command_buffers(&cai))[0];
            let bi = vk::CommandBufferBeginInfo::default()
                .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
            check("vkBeginCommandBuffer", d.begin_command_buffer(cmd, &bi));
            let to_attach = [
                barrier(
                    cimg,
                    vk::ImageAspectFlags::COLOR,
                    vk::ImageLayout::UNDEFINED,
                    vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                ),
                barrier(
                    dimg,
                    vk::ImageAspectFlags::DEPTH,
                    vk::ImageLayout::UNDEFINED,
                    vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL,
                ),
            ];
            d.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::TOP_OF_PIPE,
                vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT
                    | vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS
                    | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS,
                vk::DependencyFlags::empty(),
                &[],
                &[],
                &to_attach,
            );
            let catt = [vk::RenderingAttachmentInfo::default()
                .image_view(cview)
                .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
                .clear_value(vk::ClearValue {
                    color: vk::ClearColorValue { float32: [0.0; 4] },
                })];
            let datt = vk::RenderingAttachmentInfo::default()
                .image_view(dview)
                .image_layout(vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
                .clear_value(vk::ClearValue {
                    depth_stencil: vk::ClearDepthStencilValue {
                        depth: 1.0,
                        stencil: 0,
                    },
                });
            let ri = vk::RenderingInfo::default()
                .render_area(sc[0])
                .layer_count(1)
                .color_attachments(&catt)
                .depth_attachment(&datt);
            d.cmd_begin_rendering(cmd, &ri);
            d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, pipe);
            d.cmd_push_constants(
                cmd,
                layout,
                vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT,
                0,
                pushed,
            );
            d.cmd_draw(cmd, dr.vertices, dr.instances, 0, 0);
            d.cmd_end_rendering(cmd);
            let to_copy = [
                barrier(
                    cimg,
                    vk::ImageAspectFlags::COLOR,
                    vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                    vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                ),
                barrier(
                    dimg,
                    vk::ImageAspectFlags::DEPTH,
                    vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL,
                    vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                ),
            ];
            d.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT
                    | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS,
                vk::PipelineStageFlags::TRANSFER,
                vk::DependencyFlags::empty(),
                &[],
                &[],
                &to_copy,
            );
            let region = |aspect, off| {
                vk::BufferImageCopy::default()
                    .buffer_offset(off)
                    .image_subresource(vk::ImageSubresourceLayers {
                        aspect_mask: aspect,
                        mip_level: 0,
                        base_array_layer: 0,
                        layer_count: 1,
                    })
                    .image_extent(vk::Extent3D {
                        width: W,
                        height: H,
                        depth: 1,
                    })
            };
            d.cmd_copy_image_to_buffer(
                cmd,
                cimg,
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                buf,
                &[region(vk::ImageAspectFlags::COLOR, 0)],
            );
            d.cmd_copy_image_to_buffer(
                cmd,
                dimg,
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                buf,
                &[region(vk::ImageAspectFlags::DEPTH, bytes)],
            );
            let hb = [vk::BufferMemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(vk::AccessFlags::HOST_READ)
                .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .buffer(buf)
                .size(vk::WHOLE_SIZE)];
            d.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::TRANSFER,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[],
                &hb,
                &[],
            );
            check("vkEndCommandBuffer", d.end_command_buffer(cmd));
            let cmds = [cmd];
            let si = [vk::SubmitInfo::default().command_buffers(&cmds)];
            check(
                "vkQueueSubmit",
                d.queue_submit(self.queue, &si, vk::Fence::null()),
            );
            check("vkQueueWaitIdle", d.queue_wait_idle(self.queue));
            let p = check(
                "vkMapMemory",
                d.map_memory(bmem, 0, 2 * bytes, vk::MemoryMapFlags::empty()),
            ) as *const u8;
            let all = std::slice::from_raw_parts(p, 2 * bytes as usize).to_vec();
            d.unmap_memory(bmem);
            d.free_command_buffers(self.pool, &cmds);
            d.destroy_pipeline(pipe, None);
            d.destroy_shader_module(vsm, None);
            d.destroy_shader_module(fsm, None);
            d.destroy_pipeline_layout(layout, None);
            d.destroy_buffer(buf, None);
            d.free_memory(bmem, None);
            for (img, mem, view) in [(cimg, cmem, cview), (dimg, dmem, dview)] {
                d.destroy_image_view(view, None);
                d.destroy_image(img, None);
                d.free_memory(mem, None);
            }
            let depth = all[bytes as usize..]
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            Image {
                rgba: all[..bytes as usize].to_vec(),
                depth,
            }
        }
    }
}

fn range(aspect: vk::ImageAspectFlags) -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange {
        aspect_mask: aspect,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: 1,
    }
}

fn barrier(
    img: vk::Image,
    aspect: vk::ImageAspectFlags,
    old: vk::ImageLayout,
    new: vk::ImageLayout,
) -> vk::ImageMemoryBarrier<'static> {
    let (src, dst) = match new {
        vk::ImageLayout::TRANSFER_SRC_OPTIMAL => (
            vk::AccessFlags::COLOR_ATTACHMENT_WRITE
                | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE,
            vk::AccessFlags::TRANSFER_READ,
        ),
        _ => (
            vk::AccessFlags::empty(),
            vk::AccessFlags::COLOR_ATTACHMENT_WRITE
                | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE
                | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_READ,
        ),
    };
    vk::ImageMemoryBarrier::default()
        .src_access_mask(src)
        .dst_access_mask(dst)
        .old_layout(old)
        .new_layout(new)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(img)
        .subresource_range(range(aspect))
}
