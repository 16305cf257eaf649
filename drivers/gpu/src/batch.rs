//! Draws batched into one command buffer (docs/GPU_DRIVER.md, "Batching").
//!
//! A draw is checked, its shaders and pipeline found and its guest reads done (indices,
//! T#/S#, texels) when the command processor reaches it; what the GPU does is queued in the
//! executor's [`Batch`] and recorded, with every other draw of the batch, into one command
//! buffer at the next **flush**: before any packet whose effect on memory must follow the
//! draws (RELEASE_MEM, WRITE_DATA, DMA_DATA, COPY_DATA, WAIT_REG_MEM, a flip, a dispatch, the
//! processor's own reads of guest memory) and at the end of the submission. So a label a
//! program waits on, a flipped buffer and a CPU read after the submission all see the draws'
//! results, as on the console, and a frame of draws costs one submit and one wait.
//!
//! Render targets and depth surfaces stay on the device between draws and batches
//! ([`Resident`]): a surface is compared with guest memory at its first use in a batch
//! (uploaded only if the CPU or another surface changed it since it was last in sync) and
//! written back at the flush when a draw of the batch wrote it. Guest memory the shaders use
//! (imported or mirrored regions, the range table) reaches the device once per batch; each
//! draw has its own fault record and pixel record in one per-batch buffer, so a fault still
//! names its draw.

use std::collections::HashMap;
use std::sync::Arc;

use aps5_shader::translate::abi::{self, FaultRecord};
use aps5_vulkan::frame::StencilFace;
use aps5_vulkan::graphics::GraphicsPipeline;
use aps5_vulkan::{
    Attachment, Buffer, DepthAttachment, Image, ImageDesc, ImageKind, Rendering, Sampler,
    TextureSet, VkError, vk,
};

use crate::depth::DepthTarget;
use crate::draw::{DrawError, Stage, Target, read_rows, write_rows};
use crate::exec::{Executor, View, instruction_at};
use crate::memory::{Memory, Region};

/// A surface's identity on the device: (guest address, width, height, Vulkan format).
pub(crate) type SurfaceKey = (u64, u32, u32, i32);

/// A surface in the batch: (is depth, key).
type SurfaceId = (bool, SurfaceKey);

/// Colour target or depth surface: which map of resident images, and how its rows lie in
/// guest memory.
#[derive(Clone, Debug)]
pub(crate) enum Surface {
    Color(Target),
    /// Boxed: two planes of placement make it several times a colour target's size.
    Depth(Box<DepthTarget>),
}

impl Surface {
    fn key(&self) -> SurfaceKey {
        match self {
            Surface::Color(t) => (t.address, t.width, t.height, t.format.as_raw()),
            Surface::Depth(d) => (d.read, d.width, d.height, d.format.as_raw()),
        }
    }
    fn is_depth(&self) -> bool {
        matches!(self, Surface::Depth(_))
    }
    /// The guest bytes the surface covers (every row at its pitch, or every block of a
    /// swizzled one; for depth, the read and the write surface of each plane).
    fn spans(&self) -> Vec<(u64, u64)> {
        match self {
            Surface::Color(t) => vec![t.memory.span()],
            Surface::Depth(d) => d.spans(),
        }
    }
    fn read(&self, mem: &dyn Memory) -> Result<Vec<u8>, String> {
        match self {
            Surface::Color(t) => read_rows(mem, t),
            Surface::Depth(d) => d.read_rows(mem),
        }
    }
    fn write(&self, mem: &dyn Memory, px: &[u8]) -> Result<(), String> {
        match self {
            Surface::Color(t) => write_rows(mem, t, px),
            Surface::Depth(d) => d.write_rows(mem, px),
        }
    }
    fn image_desc(&self) -> ImageDesc {
        match self {
            Surface::Color(t) => ImageDesc {
                width: t.width,
                height: t.height,
                format: t.format,
                kind: ImageKind::Color,
            },
            Surface::Depth(d) => ImageDesc {
                width: d.width,
                height: d.height,
                format: d.format,
                kind: ImageKind::Depth,
            },
        }
    }
}

fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// A colour or depth image kept on the device, with the guest bytes it last matched.
pub(crate) struct Resident {
    pub image: Image,
    /// The surface's guest bytes (tightly packed rows) as last uploaded or written back;
    /// None for a new image.
    synced: Option<Vec<u8>>,
}

/// A surface a draw of the batch uses.
struct Used {
    surface: Surface,
    /// A draw of the batch may change it: written back at the flush.
    written: bool,
}

/// The depth and stencil state of a queued draw (Vulkan dynamic state).
#[derive(Clone, Copy, Debug)]
pub(crate) struct DepthState {
    pub test: bool,
    pub write: bool,
    pub compare: vk::CompareOp,
    pub stencil: Option<[StencilFace; 2]>,
}

/// How the queued draw calls the host.
pub(crate) enum HostCall {
    Plain {
        count: u32,
    },
    Indexed {
        count: u32,
        ty: vk::IndexType,
        /// Index into the batch's index buffers, and the byte offset there.
        buffer: usize,
        offset: u64,
        restart: bool,
        vertex_offset: i32,
    },
}

/// One draw as the GPU will run it.
pub(crate) struct QueuedDraw {
    /// The draw's number and packet address, and its programs' addresses (for reports).
    pub n: u64,
    pub packet: u64,
    pub vs_address: u64,
    pub ps_address: u64,
    pub vs: Arc<Stage>,
    pub ps: Arc<Stage>,
    pub pipeline: Arc<GraphicsPipeline>,
    /// Colour targets (by location) and the depth surface.
    pub colors: Vec<SurfaceKey>,
    pub depth: Option<SurfaceKey>,
    /// Depth test, depth write, compare op, and the stencil faces when the stencil test runs.
    pub depth_state: Option<DepthState>,
    pub textures: Vec<(Arc<Image>, Arc<Sampler>)>,
    /// Push constants; the range table, fault buffer and pixel record addresses are filled
    /// in when the draw is queued.
    pub push: Vec<u8>,
    pub viewport: [f32; 6],
    pub scissor: (i32, i32, u32, u32),
    pub topology: vk::PrimitiveTopology,
    pub cull: vk::CullModeFlags,
    pub front: vk::FrontFace,
    pub instances: u32,
    pub call: HostCall,
    /// Its slot in the batch's record buffer (fault record, then pixel record).
    pub slot: u64,
}

/// Bytes per draw in the record buffer: the 32-byte fault record, then the 72-byte pixel
/// record (docs/SHADER_ABI.md), padded.
const SLOT_BYTES: u64 = 128;
const PIXEL_RECORD_AT: u64 = 32;
/// Draws per batch at most (the record buffer's size); a longer run of draws flushes.
pub(crate) const MAX_BATCH_DRAWS: u64 = 4096;
/// Index data is packed into buffers of this size (a larger draw gets one of its own).
const INDEX_BUFFER_BYTES: u64 = 1 << 20;

/// The draws not yet run, and what they need on the device.
#[derive(Default)]
pub(crate) struct Batch {
    draws: Vec<QueuedDraw>,
    used: HashMap<SurfaceId, Used>,
    /// The regions the batch's shaders see (one submission's), their views and range table.
    regions: Vec<Region>,
    views: Vec<View>,
    table: Option<Buffer>,
    range_count: u32,
    records: Option<Buffer>,
    index_buffers: Vec<Buffer>,
    /// Bytes used of the last index buffer.
    index_used: u64,
}

impl Batch {
    pub(crate) fn is_empty(&self) -> bool {
        self.draws.is_empty()
    }
}

impl Executor {
    /// Makes `regions` the batch's guest memory (flushing first when the batch has draws
    /// over other regions), and room for one more draw.
    pub(crate) fn batch_open(
        &mut self,
        mem: &dyn Memory,
        regions: &[Region],
        at: (u64, u64),
    ) -> Result<(), DrawError> {
        let b = &self.gfx.batch;
        if !b.draws.is_empty() && (b.regions != regions || b.draws.len() as u64 >= MAX_BATCH_DRAWS)
        {
            self.flush(mem)?;
        }
        if self.gfx.batch.table.is_some() {
            return Ok(());
        }
        let failed = DrawError::failed_at(at);
        let (views, entries) = self.views(mem, regions).map_err(failed)?;
        let vk_err = |e: VkError| failed(e.to_string());
        let table = self.range_table(&entries).map_err(vk_err)?;
        let records = self.scratch(SLOT_BYTES * MAX_BATCH_DRAWS).map_err(vk_err)?;
        let b = &mut self.gfx.batch;
        b.regions = regions.to_vec();
        b.views = views;
        b.range_count = entries.len() as u32;
        b.table = Some(table);
        b.records = Some(records);
        Ok(())
    }

    /// Readies `surface` for a draw of the batch: a device image that matches guest memory.
    /// A surface overlapping another the batch writes (or written now over one it uses)
    /// flushes the batch first, so guest memory stays the one truth.
    pub(crate) fn batch_surface(
        &mut self,
        mem: &dyn Memory,
        regions: &[Region],
        surface: Surface,
        writes: bool,
        at: (u64, u64),
    ) -> Result<(), DrawError> {
        let failed = DrawError::failed_at(at);
        let id = (surface.is_depth(), surface.key());
        let spans = surface.spans();
        let clash = self.gfx.batch.used.iter().any(|(k, u)| {
            *k != id
                && (u.written || writes)
                && u.surface
                    .spans()
                    .iter()
                    .any(|a| spans.iter().any(|b| overlaps(*a, *b)))
        });
        if clash {
            self.flush(mem)?;
            self.batch_open(mem, regions, at)?;
        }
        if let Some(u) = self.gfx.batch.used.get_mut(&id) {
            u.written |= writes;
            return Ok(());
        }
        let bytes = surface.read(mem).map_err(failed)?;
        let map = if surface.is_depth() {
            &mut self.gfx.depths
        } else {
            &mut self.gfx.targets
        };
        let r = match map.entry(id.1) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => v.insert(Resident {
                image: self
                    .gpu
                    .create_image(&surface.image_desc())
                    .map_err(|e| failed(e.to_string()))?,
                synced: None,
            }),
        };
        if r.synced.as_deref() != Some(&bytes[..]) {
            // No queued draw uses this image yet, so it can be filled at once.
            self.gpu
                .upload_image(&r.image, &bytes)
                .map_err(|e| failed(e.to_string()))?;
            r.synced = Some(bytes);
        }
        self.gfx.batch.used.insert(
            id,
            Used {
                surface,
                written: writes,
            },
        );
        Ok(())
    }

    /// Flushes the batch when a draw is about to read guest bytes in `span` that a queued
    /// draw writes (a render target sampled as a texture).
    pub(crate) fn batch_reads(
        &mut self,
        mem: &dyn Memory,
        span: (u64, u64),
    ) -> Result<(), DrawError> {
        let pending = self
            .gfx
            .batch
            .used
            .values()
            .any(|u| u.written && u.surface.spans().iter().any(|s| overlaps(*s, span)));
        if pending {
            self.flush(mem)?;
        }
        Ok(())
    }

    /// Packs an indexed draw's indices into the batch's index buffers: (buffer, offset).
    pub(crate) fn batch_indices(&mut self, bytes: &[u8]) -> Result<(usize, u64), VkError> {
        let len = bytes.len() as u64;
        let b = &mut self.gfx.batch;
        let at = b.index_used.next_multiple_of(4);
        let fits = b.index_buffers.last().is_some_and(|x| at + len <= x.size());
        if !fits {
            let buf = self.scratch(len.max(INDEX_BUFFER_BYTES))?;
            let b = &mut self.gfx.batch;
            b.index_buffers.push(buf);
            b.index_used = 0;
        }
        let b = &mut self.gfx.batch;
        let at = if fits { at } else { 0 };
        let i = b.index_buffers.len() - 1;
        b.index_buffers[i].write(at as usize, bytes)?;
        b.index_used = at + len;
        Ok((i, at))
    }

    /// Queues `d`: its push constants get the batch's range table, its own fault record and
    /// its pixel record (`ps_record`).
    pub(crate) fn batch_queue(
        &mut self,
        mut d: QueuedDraw,
        ps_record: &[u8],
    ) -> Result<(), VkError> {
        let b = &mut self.gfx.batch;
        let slot = b.draws.len() as u64;
        let records = b
            .records
            .as_mut()
            .expect("batch_open made the record buffer");
        let at = slot * SLOT_BYTES;
        records.write(at as usize, &[0u8; abi::FAULT_BYTES as usize])?;
        records.write((at + PIXEL_RECORD_AT) as usize, ps_record)?;
        let base = records.device_address();
        let table = b.table.as_ref().expect("batch_open made the range table");
        let mut put =
            |off: u32, v: &[u8]| d.push[off as usize..off as usize + v.len()].copy_from_slice(v);
        put(
            abi::push::RANGE_TABLE,
            &table.device_address().to_le_bytes(),
        );
        put(abi::push::RANGE_COUNT, &b.range_count.to_le_bytes());
        put(abi::push::FAULT_BUFFER, &(base + at).to_le_bytes());
        put(
            abi::push::PIXEL_RECORD,
            &(base + at + PIXEL_RECORD_AT).to_le_bytes(),
        );
        d.slot = slot;
        b.draws.push(d);
        Ok(())
    }

    /// The submission has ended: its draws run (a [`Executor::flush`]), and programs' code
    /// is read again from now on (a program may be replaced between submissions).
    pub fn end_submission(&mut self, mem: &dyn Memory) -> Result<(), DrawError> {
        self.invalidate_code();
        self.flush(mem)
    }

    /// ACQUIRE_MEM and the like: the GPU's instruction cache is invalidated, so the next
    /// draw reads its programs' code again.
    pub fn invalidate_code(&mut self) {
        self.gfx.code_epoch += 1;
    }

    /// Runs every queued draw in one command buffer, waits, and brings the results to guest
    /// memory: shader stores (mirrored regions), then each written surface. The first
    /// queued draw that faulted is reported (its results and those of the rest are written
    /// back first, as a dispatch's are).
    pub fn flush(&mut self, mem: &dyn Memory) -> Result<(), DrawError> {
        let batch = std::mem::take(&mut self.gfx.batch);
        if batch.draws.is_empty() {
            self.recycle_batch(batch);
            return Ok(());
        }
        self.stats.batches += 1;
        let first = &batch.draws[0];
        let (n, packet) = (first.n, first.packet);
        let failed = |what: String| DrawError::Failed {
            draw: n,
            packet,
            what: format!(
                "{what} (running the batch of {} draws from draw {n})",
                batch.draws.len()
            ),
        };
        let result = self.run_batch(&batch).map_err(failed);
        let written = match result {
            Ok(w) => w,
            Err(e) => {
                self.recycle_batch(batch);
                return Err(e);
            }
        };
        // Results: shader stores, then the surfaces.
        let mut first_error = None;
        for v in &batch.views {
            if let Err(e) = self.write_back(mem, v) {
                first_error.get_or_insert(failed(e));
            }
        }
        for (id, px) in written {
            if let Err(e) = batch.used[&id].surface.write(mem, &px) {
                first_error.get_or_insert(failed(e));
            }
            let map = if id.0 {
                &mut self.gfx.depths
            } else {
                &mut self.gfx.targets
            };
            if let Some(r) = map.get_mut(&id.1) {
                r.synced = Some(px);
            }
        }
        if let Err(e) = self.gpu.check_validation() {
            first_error.get_or_insert(failed(e.to_string()));
        }
        let records = batch
            .records
            .as_ref()
            .expect("a batch with draws has records");
        let fault = batch.draws.iter().find_map(|d| {
            let at = (d.slot * SLOT_BYTES) as usize;
            let r = FaultRecord::from_bytes(
                records.bytes()[at..at + 32]
                    .try_into()
                    .expect("a fault record is 32 bytes"),
            );
            (r.state == 2).then_some((d, r))
        });
        let fault = fault.map(|(d, record)| {
            // The record does not say which stage faulted; name the instruction in both.
            let vi = instruction_at(&d.vs.code, record.inst_offset, d.vs.wave64);
            let pi = instruction_at(&d.ps.code, record.inst_offset, d.ps.wave64);
            DrawError::Fault {
                draw: d.n,
                packet: d.packet,
                shaders: self.stage_names(d.vs_address, d.ps_address),
                record,
                instruction: format!("VS: {vi} / PS: {pi}"),
            }
        });
        self.recycle_batch(batch);
        match (fault, first_error) {
            (Some(f), _) => Err(f),
            (None, Some(e)) => Err(e),
            (None, None) => Ok(()),
        }
    }

    /// Records the batch into one command buffer, submits and waits; returns the bytes of
    /// each surface a draw wrote.
    fn run_batch(&mut self, batch: &Batch) -> Result<Vec<(SurfaceId, Vec<u8>)>, String> {
        let vk_err = |e: VkError| e.to_string();
        if self.gfx.recorder.is_none() {
            self.gfx.recorder = Some(self.gpu.create_recorder(1).map_err(vk_err)?);
        }
        // Texture sets first (a list borrows what it records): one per distinct
        // (pipeline, textures) among consecutive draws.
        let mut sets: Vec<TextureSet<'_>> = Vec::new();
        let mut set_of = Vec::with_capacity(batch.draws.len());
        let mut last: Option<(*const GraphicsPipeline, Vec<(*const Image, *const Sampler)>)> = None;
        for d in &batch.draws {
            if d.textures.is_empty() {
                set_of.push(None);
                continue;
            }
            let ids: Vec<_> = d
                .textures
                .iter()
                .map(|(i, s)| (Arc::as_ptr(i), Arc::as_ptr(s)))
                .collect();
            let same = last
                .as_ref()
                .is_some_and(|(p, t)| *p == Arc::as_ptr(&d.pipeline) && *t == ids);
            if !same {
                let pairs: Vec<(&Image, &Sampler)> =
                    d.textures.iter().map(|(i, s)| (&**i, &**s)).collect();
                sets.push(
                    self.gpu
                        .create_texture_set(&d.pipeline, &pairs)
                        .map_err(vk_err)?,
                );
                last = Some((Arc::as_ptr(&d.pipeline), ids));
            }
            set_of.push(Some(sets.len() - 1));
        }
        // Staging for the surfaces the batch writes: as many bytes as their images hold.
        let written: Vec<(SurfaceId, usize)> = batch
            .used
            .iter()
            .filter(|(_, u)| u.written)
            .filter_map(|(id, _)| {
                let map = if id.0 {
                    &self.gfx.depths
                } else {
                    &self.gfx.targets
                };
                map.get(&id.1).map(|r| (*id, r.image.host_bytes()))
            })
            .collect();
        let mut readback = Vec::with_capacity(written.len());
        for (id, len) in written {
            readback.push((id, len, self.scratch(len as u64).map_err(vk_err)?));
        }
        let gfx = &mut self.gfx;
        let rec = gfx.recorder.as_mut().expect("created above");
        let (targets, depths) = (&gfx.targets, &gfx.depths);
        let image = |depth: bool, k: &SurfaceKey| -> Result<&Image, String> {
            let map = if depth { depths } else { targets };
            map.get(k)
                .map(|r| &r.image)
                .ok_or_else(|| format!("the surface at {:#x} is not on the device", k.0))
        };
        let mut list = rec.begin().map_err(vk_err)?;
        let mut pass: Option<(&[SurfaceKey], Option<SurfaceKey>)> = None;
        for (d, set) in batch.draws.iter().zip(&set_of) {
            let this = (&d.colors[..], d.depth);
            if pass != Some(this) {
                if pass.is_some() {
                    list.end_rendering().map_err(vk_err)?;
                }
                let colors: Vec<Attachment<'_>> = d
                    .colors
                    .iter()
                    .map(|k| image(false, k).map(|i| Attachment::new(i, None)))
                    .collect::<Result<_, _>>()?;
                let depth = match &d.depth {
                    Some(k) => Some(DepthAttachment {
                        image: image(true, k)?,
                        clear_depth: None,
                        clear_stencil: None,
                    }),
                    None => None,
                };
                list.begin_rendering(&Rendering {
                    colors: &colors,
                    depth,
                })
                .map_err(vk_err)?;
                pass = Some(this);
            }
            list.bind_pipeline(&d.pipeline);
            if let Some(s) = &d.depth_state {
                list.set_depth(s.test, s.write, s.compare);
                match s.stencil {
                    Some([front, back]) => list.set_stencil(true, Some(front), Some(back)),
                    None => list.set_stencil(false, None, None),
                }
            }
            if let Some(i) = set {
                list.bind_textures(&sets[*i]).map_err(vk_err)?;
            }
            list.push_constants(&d.push).map_err(vk_err)?;
            let v = d.viewport;
            list.set_viewport(v[0], v[1], v[2], v[3], v[4], v[5]);
            list.set_scissor(d.scissor.0, d.scissor.1, d.scissor.2, d.scissor.3);
            list.set_topology(d.topology);
            list.set_cull_mode(d.cull);
            list.set_front_face(d.front);
            match &d.call {
                HostCall::Plain { count } => {
                    list.draw(*count, d.instances, 0, 0).map_err(vk_err)?
                }
                HostCall::Indexed {
                    count,
                    ty,
                    buffer,
                    offset,
                    restart,
                    vertex_offset,
                } => {
                    list.bind_index_buffer(&batch.index_buffers[*buffer], *offset, *ty)
                        .map_err(vk_err)?;
                    list.set_primitive_restart(*restart);
                    list.draw_indexed(*count, d.instances, 0, *vertex_offset, 0)
                        .map_err(vk_err)?;
                }
            }
        }
        if pass.is_some() {
            list.end_rendering().map_err(vk_err)?;
        }
        for (id, _, buf) in &readback {
            list.copy_image_to_buffer(image(id.0, &id.1)?, buf, 0)
                .map_err(vk_err)?;
        }
        let done = list.submit().map_err(vk_err)?;
        rec.wait(done).map_err(vk_err)?;
        drop(sets);
        let mut out = Vec::with_capacity(readback.len());
        let mut bufs = Vec::with_capacity(readback.len());
        for (id, len, buf) in readback {
            out.push((id, buf.bytes()[..len].to_vec()));
            bufs.push(buf);
        }
        self.recycle(bufs);
        Ok(out)
    }

    /// Gives a finished (or abandoned) batch's buffers back.
    fn recycle_batch(&mut self, mut batch: Batch) {
        self.recycle_views(std::mem::take(&mut batch.views));
        let bufs: Vec<Buffer> = batch
            .table
            .take()
            .into_iter()
            .chain(batch.records.take())
            .chain(batch.index_buffers.drain(..))
            .collect();
        self.recycle(bufs);
    }
}
