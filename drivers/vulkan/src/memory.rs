//! Guest memory on the device, two ways a driver can choose between:
//!
//! - **host import** ([`Gpu::import_host_memory`], VK_EXT_external_memory_host): the guest's own
//!   pages become a [`Buffer`] with a device address; shaders read and write them in place and
//!   the CPU sees the results without a copy once the submission has finished.
//! - **mirror** ([`Gpu::create_mirror`]): a device-local buffer the driver keeps in step with
//!   the guest range by copying changed ranges ([`Gpu::upload_range`], [`Gpu::download_range`]).
//!   For devices without the extension, or memory the driver refuses to import (NVIDIA refuses
//!   read-only and executable mappings).

use ash::vk;

use crate::{Buffer, Gpu, Result, VkError, buffer_usage, call};

/// A device-local buffer with a device address that mirrors a range of guest memory.
pub struct Mirror {
    buffer: Buffer,
}

impl Mirror {
    /// The address shaders use.
    pub fn device_address(&self) -> u64 {
        self.buffer.address
    }
    pub fn size(&self) -> u64 {
        self.buffer.size
    }
    /// The underlying buffer (for binding as a vertex / index buffer).
    pub fn buffer(&self) -> &Buffer {
        &self.buffer
    }
}

impl Gpu {
    /// Whether [`Gpu::import_host_memory`] can work on this device (VK_EXT_external_memory_host).
    pub fn supports_host_import(&self) -> bool {
        self.inner.host_import.is_some()
    }

    /// `minImportedHostPointerAlignment`: the alignment of the pointer and the length of an
    /// import (None when the device cannot import).
    pub fn host_import_alignment(&self) -> Option<u64> {
        self.info.host_import_alignment
    }

    /// Makes `len` bytes of host memory at `ptr` a [`Buffer`] with a device address
    /// (VK_EXT_external_memory_host). `ptr` and `len` must be multiples of
    /// [`Gpu::host_import_alignment`]. `Buffer::bytes` then reads the same memory the GPU
    /// writes: no copy either way.
    ///
    /// Fails with a message naming the reason when the device lacks the extension, the
    /// pointer or length is misaligned, or no memory type accepts the pointer (for example a
    /// read-only mapping on NVIDIA).
    ///
    /// # Safety
    /// The memory must stay mapped, readable and writable, and must not be freed or remapped
    /// until the returned buffer is dropped (dropping it waits for the queue to be idle).
    /// While GPU work that writes it runs, the host must not access it.
    pub unsafe fn import_host_memory(&self, ptr: *mut u8, len: usize) -> Result<Buffer> {
        let name = || self.info.name.clone();
        let Some(ext) = &self.inner.host_import else {
            return Err(VkError::Unsupported {
                name: name(),
                what: "no VK_EXT_external_memory_host: cannot import host memory (use a Mirror)"
                    .into(),
            });
        };
        let align = self.info.host_import_alignment.unwrap_or(1);
        if len == 0 || !(ptr as u64).is_multiple_of(align) || !(len as u64).is_multiple_of(align) {
            return Err(VkError::Invalid(format!(
                "host import of {len} bytes at {ptr:p}: pointer and length must be non-zero \
                 multiples of minImportedHostPointerAlignment ({align:#x})"
            )));
        }
        let d = &self.inner.device;
        let handle = vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT;
        let mut host_props = vk::MemoryHostPointerPropertiesEXT::default();
        // SAFETY: a live device, the extension's own function, a pointer the caller vouches for.
        let r = unsafe {
            (ext.fp().get_memory_host_pointer_properties_ext)(
                d.handle(),
                handle,
                ptr as *const std::ffi::c_void,
                &mut host_props,
            )
        };
        if r != vk::Result::SUCCESS {
            return Err(VkError::Call {
                call: "vkGetMemoryHostPointerPropertiesEXT",
                result: r,
            });
        }
        let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(handle);
        let info = vk::BufferCreateInfo::default()
            .size(len as u64)
            .usage(buffer_usage())
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .push_next(&mut external);
        // SAFETY: valid create info on our device.
        let buffer = call("vkCreateBuffer", unsafe { d.create_buffer(&info, None) })?;
        let destroy = |e| {
            // SAFETY: the buffer is unused and unbound.
            unsafe { d.destroy_buffer(buffer, None) };
            e
        };
        // SAFETY: a live buffer.
        let req = unsafe { d.get_buffer_memory_requirements(buffer) };
        let bits = req.memory_type_bits & host_props.memory_type_bits;
        let Some(type_index) = self
            .inner
            .memory_type(bits, vk::MemoryPropertyFlags::HOST_VISIBLE)
            .or_else(|| {
                self.inner
                    .memory_type(bits, vk::MemoryPropertyFlags::empty())
            })
        else {
            return Err(destroy(VkError::Unsupported {
                name: name(),
                what: format!(
                    "no memory type takes host memory at {ptr:p} as a buffer (pointer types \
                     {:#x}, buffer types {:#x}); a read-only or executable mapping? use a Mirror",
                    host_props.memory_type_bits, req.memory_type_bits
                ),
            }));
        };
        if req.size > len as u64 {
            return Err(destroy(VkError::Invalid(format!(
                "host import of {len} bytes: the device needs {} bytes for such a buffer",
                req.size
            ))));
        }
        let mut import = vk::ImportMemoryHostPointerInfoEXT::default()
            .handle_type(handle)
            .host_pointer(ptr as *mut std::ffi::c_void);
        let mut flags =
            vk::MemoryAllocateFlagsInfo::default().flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
        let alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(len as u64)
            .memory_type_index(type_index)
            .push_next(&mut import)
            .push_next(&mut flags);
        // SAFETY: valid allocate info; the caller keeps the host memory alive.
        let memory = match unsafe { d.allocate_memory(&alloc, None) } {
            Ok(m) => m,
            Err(result) => {
                return Err(destroy(VkError::Call {
                    call: "vkAllocateMemory (host pointer import)",
                    result,
                }));
            }
        };
        // SAFETY: memory covers the requirements; not yet bound.
        if let Err(result) = unsafe { d.bind_buffer_memory(buffer, memory, 0) } {
            // SAFETY: unused objects of this device.
            unsafe {
                d.destroy_buffer(buffer, None);
                d.free_memory(memory, None);
            }
            return Err(VkError::Call {
                call: "vkBindBufferMemory",
                result,
            });
        }
        let addr_info = vk::BufferDeviceAddressInfo::default().buffer(buffer);
        // SAFETY: SHADER_DEVICE_ADDRESS usage, bound.
        let address = unsafe { d.get_buffer_device_address(&addr_info) };
        self.check_validation()?;
        Ok(Buffer {
            inner: self.inner.clone(),
            buffer,
            memory,
            ptr,
            size: len as u64,
            address,
            mapped: false,
        })
    }

    /// A device-local buffer of `bytes` (rounded up to 4) with a device address, zero-filled,
    /// to mirror guest memory when host import is not possible.
    pub fn create_mirror(&self, bytes: u64) -> Result<Mirror> {
        let buffer = self.create_buffer_in(bytes, vk::MemoryPropertyFlags::DEVICE_LOCAL)?;
        Ok(Mirror { buffer })
    }

    /// Copies `data` into the mirror at byte `offset` (through a staging buffer; waits).
    pub fn upload_range(&self, mirror: &Mirror, offset: u64, data: &[u8]) -> Result<()> {
        check_range("upload", mirror.size(), offset, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        let mut staging = self.create_buffer(data.len() as u64)?;
        staging.bytes_mut()[..data.len()].copy_from_slice(data);
        let region = vk::BufferCopy::default()
            .src_offset(0)
            .dst_offset(offset)
            .size(data.len() as u64);
        self.submit_once(|d, cmd| {
            everything_to_transfer(d, cmd);
            // SAFETY: both buffers are live and the region lies inside both.
            unsafe { d.cmd_copy_buffer(cmd, staging.buffer, mirror.buffer.buffer, &[region]) };
            transfer_to_everything(d, cmd);
        })
    }

    /// Copies `out.len()` bytes of the mirror from byte `offset` into `out` (waits).
    pub fn download_range(&self, mirror: &Mirror, offset: u64, out: &mut [u8]) -> Result<()> {
        check_range("download", mirror.size(), offset, out.len())?;
        if out.is_empty() {
            return Ok(());
        }
        let staging = self.create_buffer(out.len() as u64)?;
        let region = vk::BufferCopy::default()
            .src_offset(offset)
            .dst_offset(0)
            .size(out.len() as u64);
        self.submit_once(|d, cmd| {
            everything_to_transfer(d, cmd);
            // SAFETY: as above.
            unsafe { d.cmd_copy_buffer(cmd, mirror.buffer.buffer, staging.buffer, &[region]) };
            transfer_to_everything(d, cmd);
        })?;
        out.copy_from_slice(&staging.bytes()[..out.len()]);
        Ok(())
    }

    /// Records one command buffer with `record`, submits it, and waits for it.
    pub(crate) fn submit_once(
        &self,
        record: impl FnOnce(&ash::Device, vk::CommandBuffer),
    ) -> Result<()> {
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
            // SAFETY: a fresh primary command buffer; `record` records live handles.
            unsafe {
                call("vkBeginCommandBuffer", d.begin_command_buffer(cmd, &begin))?;
                record(d, cmd);
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
        // SAFETY: the submission finished (or never started).
        unsafe { d.free_command_buffers(pool, &[cmd]) };
        drop(submit);
        result?;
        self.check_validation()
    }
}

fn check_range(what: &str, size: u64, offset: u64, len: usize) -> Result<()> {
    match offset.checked_add(len as u64) {
        Some(end) if end <= size => Ok(()),
        _ => Err(VkError::Invalid(format!(
            "{what} of {len} bytes at offset {offset} of a {size}-byte mirror"
        ))),
    }
}

/// Makes transfer writes visible to every later access, host reads included.
pub(crate) fn transfer_to_everything(d: &ash::Device, cmd: vk::CommandBuffer) {
    let barrier = vk::MemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
        .dst_access_mask(vk::AccessFlags::MEMORY_READ | vk::AccessFlags::HOST_READ);
    // SAFETY: a command buffer in the recording state.
    unsafe {
        d.cmd_pipeline_barrier(
            cmd,
            vk::PipelineStageFlags::TRANSFER,
            vk::PipelineStageFlags::ALL_COMMANDS | vk::PipelineStageFlags::HOST,
            vk::DependencyFlags::empty(),
            &[barrier],
            &[],
            &[],
        )
    };
}

/// Makes every earlier write (shaders, transfers) visible to the transfers that follow, and
/// orders those transfers after earlier reads.
pub(crate) fn everything_to_transfer(d: &ash::Device, cmd: vk::CommandBuffer) {
    let barrier = vk::MemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
        .dst_access_mask(vk::AccessFlags::TRANSFER_READ | vk::AccessFlags::TRANSFER_WRITE);
    // SAFETY: a command buffer in the recording state.
    unsafe {
        d.cmd_pipeline_barrier(
            cmd,
            vk::PipelineStageFlags::ALL_COMMANDS,
            vk::PipelineStageFlags::TRANSFER,
            vk::DependencyFlags::empty(),
            &[barrier],
            &[],
            &[],
        )
    };
}
