//! The command processor: a queue's state and the submission loop.

use std::fmt;

use crate::generated::{reg, ty};
use crate::memory::{Fault, GuestMemory, read_dwords, read_u32, read_u64, write_dwords};
use crate::packet::{
    AcquireMem, ArgAddress, CopyData, DmaData, EventWrite, Flip, Header, MultiDraw, Packet,
    ReleaseMem, SonyCommand, WaitFlip, WaitRegMem, WriteData, decode,
};
use crate::regdb::{Space, register_label};
use crate::regs::RegisterFile;
use crate::state::{ComputeState, GROUP_ALL, GraphicsState, group_of};

/// Graphics (DCB) or compute (ACB) queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueKind {
    Graphics,
    Compute,
}

/// A submission that stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmitError {
    /// Dword offset of the packet inside the buffer that holds it.
    pub offset_dwords: u32,
    /// Guest address of the packet's header.
    pub address: u64,
    /// The packet's name (the database's opcode name, `NOP/flip`, `type-0 packet`, ...).
    pub packet: String,
    pub reason: String,
    /// Start addresses of the buffers the packet was reached through, outermost first.
    pub buffers: Vec<u64>,
    /// The marker stack at the packet (Sony push/pop marker).
    pub markers: Vec<String>,
}

impl fmt::Display for SubmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at dword {} ({:#x}): {}",
            self.packet, self.offset_dwords, self.address, self.reason
        )?;
        if self.buffers.len() > 1 {
            let b: Vec<String> = self.buffers.iter().map(|a| format!("{a:#x}")).collect();
            write!(f, " [buffers {}]", b.join(" -> "))?;
        }
        if !self.markers.is_empty() {
            write!(f, " [markers {}]", self.markers.join(" / "))?;
        }
        Ok(())
    }
}

impl std::error::Error for SubmitError {}

/// What a submission did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SubmitStats {
    pub packets: u64,
    pub dwords: u64,
    pub draws: u64,
    pub dispatches: u64,
    /// Packets skipped by predication or COND_EXEC.
    pub skipped: u64,
}

/// Bounds that keep a bad command stream from hanging the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Nesting of called (non-chained) indirect buffers; the hardware has IB1 and IB2.
    pub max_ib_depth: usize,
    /// Dwords one submission may process, chains and calls included (the loop guard).
    pub max_dwords: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_ib_depth: 4,
            max_dwords: 1 << 26,
        }
    }
}

/// What WAIT_REG_MEM came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitResult {
    Satisfied,
    /// The condition cannot become true (nothing else will write the location): the
    /// submission stops with an error naming the wait.
    NeverSatisfied,
}

/// Index buffer state set by INDEX_BASE / INDEX_BUFFER_SIZE / INDEX_TYPE (or VGT_INDEX_TYPE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IndexState {
    pub base: u64,
    /// Index count the buffer holds (INDEX_BUFFER_SIZE).
    pub size: u32,
    /// VGT_INDEX_TYPE layout (INDEX_TYPE: 0 16-bit, 1 32-bit, 2 8-bit).
    pub index_type: ty::VgtIndexType,
}

impl IndexState {
    pub fn index_bytes(&self) -> u32 {
        match self.index_type.index_type {
            0 => 2,
            1 => 4,
            _ => 1,
        }
    }
}

/// How a draw gets its vertices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrawKind {
    /// DRAW_INDEX_AUTO: vertices 0..count.
    Auto { vertex_count: u32 },
    /// DRAW_INDEX_2: indices at an explicit address.
    Indexed {
        index_address: u64,
        index_count: u32,
        max_size: u32,
    },
    /// DRAW_INDEX_OFFSET_2: indices from INDEX_BASE + offset.
    IndexOffset {
        index_offset: u32,
        index_count: u32,
        max_size: u32,
    },
    /// DRAW_(INDEX_)INDIRECT(_MULTI): arguments in memory at `args_address`
    /// (SET_BASE base + data offset); the locations name SH user-data registers (offsets
    /// from the SH base) that receive base vertex / start instance / draw index.
    Indirect {
        indexed: bool,
        args_address: u64,
        base_vtx_loc: u32,
        start_inst_loc: u32,
        multi: Option<MultiDraw>,
    },
}

/// A draw: the packet's arguments plus the state at the draw.
#[derive(Debug, Clone)]
pub struct Draw<'a> {
    pub kind: DrawKind,
    pub initiator: ty::VgtDrawInitiator,
    pub index: IndexState,
    pub num_instances: u32,
    /// The typed views of every register a draw depends on (kept by the queue and
    /// re-captured only where registers changed).
    pub state: &'a GraphicsState,
    /// The queue's registers at the draw (for anything the views do not cover).
    pub registers: &'a RegisterFile,
    /// Guest address of the draw packet (for error messages).
    pub packet_address: u64,
}

/// How a dispatch gets its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatchKind {
    Direct {
        groups: [u32; 3],
    },
    /// Group counts (three dwords) in memory.
    Indirect {
        args_address: u64,
    },
}

/// A dispatch: the packet's arguments plus the compute state.
#[derive(Debug, Clone)]
pub struct Dispatch<'a> {
    pub kind: DispatchKind,
    pub initiator: ty::ComputeDispatchInitiator,
    pub state: ComputeState,
    pub queue: QueueKind,
    pub registers: &'a RegisterFile,
    pub packet_address: u64,
}

/// What the GPU must do; the processor already decoded the state. Every method returns a
/// reason on failure, which stops the submission at that packet.
///
/// Memory effects (WRITE_DATA, RELEASE_MEM data, DMA_DATA, COPY_DATA) go to the backend,
/// which orders them after earlier GPU work; the packet types have `apply` helpers for a
/// backend that performs them on the CPU.
pub trait Backend {
    fn dispatch(&mut self, d: &Dispatch<'_>) -> Result<(), String>;
    fn draw(&mut self, d: &Draw<'_>) -> Result<(), String>;
    /// End-of-pipe: RELEASE_MEM, EVENT_WRITE_EOP, Sony's release mem (data/label and
    /// interrupt).
    fn release_mem(&mut self, r: &ReleaseMem) -> Result<(), String>;
    fn write_data(&mut self, w: &WriteData<'_>) -> Result<(), String>;
    /// Blocks until the wait is satisfied, or says it never will be.
    fn wait_reg_mem(&mut self, w: &WaitRegMem) -> Result<WaitResult, String>;
    fn flip(&mut self, f: &Flip) -> Result<(), String>;
    fn wait_flip(&mut self, f: &WaitFlip) -> Result<(), String>;
    fn dma_data(&mut self, d: &DmaData) -> Result<(), String>;
    fn copy_data(&mut self, c: &CopyData) -> Result<(), String>;
    /// EVENT_WRITE (pipeline flushes, cache actions). Default: nothing to do.
    fn event_write(&mut self, _e: &EventWrite) -> Result<(), String> {
        Ok(())
    }
    /// ACQUIRE_MEM (cache invalidation). Default: nothing to do.
    fn acquire_mem(&mut self, _a: &AcquireMem) -> Result<(), String> {
        Ok(())
    }
    /// Sony driver commands not covered above (draw/dispatch reset, context state, and the
    /// raw acquire/write/DMA forms). Default: refuse the raw forms, accept the resets.
    fn sony(&mut self, s: &SonyCommand<'_>) -> Result<(), String> {
        match s {
            SonyCommand::AcquireMem(_) => Ok(()),
            SonyCommand::WriteData(_) | SonyCommand::DmaData(_) => {
                Err("the payload layout of this Sony command is not known".into())
            }
            _ => Ok(()),
        }
    }
    /// Called before the processor itself reads guest memory the GPU may have written
    /// (COND_EXEC, predication, register loads, COND_WRITE, indirect arguments).
    fn sync_memory(&mut self) -> Result<(), String> {
        Ok(())
    }
    /// The submission has ended (its last packet ran, or one stopped it): work the backend
    /// deferred must finish now (the CPU may read its results as soon as `submit` returns).
    /// Default: nothing.
    fn end_submission(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// The magic ending the 5-dword descriptor an ACB submission may begin with
/// ({address lo, address hi, size in dwords, 0, magic}, GPU.md).
pub const ACB_DESCRIPTOR_MAGIC: u32 = 0x5533_ccaa;

/// Where a compute submission's commands really are: an ACB that begins with the descriptor
/// points at the real buffer; any other ACB is its own buffer.
pub fn resolve_acb(mem: &dyn GuestMemory, addr: u64, dwords: u32) -> Result<(u64, u32), Fault> {
    if dwords >= 5 {
        let d = read_dwords(mem, addr, 5)?;
        if d[3] == 0 && d[4] == ACB_DESCRIPTOR_MAGIC {
            return Ok((d[0] as u64 | ((d[1] as u64) << 32), d[2]));
        }
    }
    Ok((addr, dwords))
}

/// One hardware queue: its registers and command-processor state. Queues share nothing.
pub struct Queue {
    kind: QueueKind,
    regs: RegisterFile,
    markers: Vec<String>,
    index: IndexState,
    num_instances: u32,
    /// SET_BASE bases by index (1 = indirect draw/dispatch arguments).
    bases: [u64; 16],
    /// Draws/dispatches with the PREDICATE bit set are skipped while this is true.
    predicate_skip: bool,
    const_ram: Vec<u32>,
    limits: Limits,
    /// The graphics views as of the last draw, and the groups written since.
    gfx: Box<GraphicsState>,
    gfx_dirty: u16,
}

impl fmt::Debug for Queue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Queue")
            .field("kind", &self.kind)
            .field("markers", &self.markers)
            .finish_non_exhaustive()
    }
}

/// Constant RAM size in dwords (48 KiB on GFX10).
const CONST_RAM_DWORDS: usize = 48 * 1024 / 4;

struct Ctx<'m> {
    mem: &'m dyn GuestMemory,
    stats: SubmitStats,
    buffers: Vec<u64>,
    chained: std::collections::HashSet<(u64, u32)>,
}

/// A located failure inside the loop before it becomes a [`SubmitError`].
struct Fail {
    offset: u32,
    address: u64,
    packet: String,
    reason: String,
}

impl Queue {
    /// A queue with every register at its reset value.
    pub fn new(kind: QueueKind) -> Queue {
        Queue {
            kind,
            regs: RegisterFile::new(),
            markers: Vec::new(),
            index: IndexState::default(),
            num_instances: 1,
            bases: [0; 16],
            predicate_skip: false,
            const_ram: vec![0; CONST_RAM_DWORDS],
            limits: Limits::default(),
            gfx: Box::default(),
            gfx_dirty: GROUP_ALL,
        }
    }

    pub fn with_limits(kind: QueueKind, limits: Limits) -> Queue {
        Queue {
            limits,
            ..Queue::new(kind)
        }
    }

    pub fn kind(&self) -> QueueKind {
        self.kind
    }

    pub fn registers(&self) -> &RegisterFile {
        &self.regs
    }

    /// Direct access to the registers (every view is re-captured at the next draw).
    pub fn registers_mut(&mut self) -> &mut RegisterFile {
        self.gfx_dirty = GROUP_ALL;
        &mut self.regs
    }

    /// The marker stack (Sony push/pop marker), outermost first.
    pub fn markers(&self) -> &[String] {
        &self.markers
    }

    pub fn index_state(&self) -> IndexState {
        self.index
    }

    /// Parses and executes `dwords` dwords of PM4 at `addr`.
    pub fn submit(
        &mut self,
        mem: &dyn GuestMemory,
        addr: u64,
        dwords: u32,
        backend: &mut dyn Backend,
    ) -> Result<SubmitStats, SubmitError> {
        let mut ctx = Ctx {
            mem,
            stats: SubmitStats::default(),
            buffers: Vec::new(),
            chained: Default::default(),
        };
        let ran = self.run_buffer(&mut ctx, addr, dwords, 0, backend);
        // Deferred work finishes even when a packet stopped the submission: what came before
        // it was issued, as on the GPU, and nothing the backend holds may outlive the
        // submission's memory. The stopping packet's error is the one reported.
        let ended = backend.end_submission();
        let ran = ran.and_then(|()| {
            ended.map_err(|reason| Fail {
                offset: dwords,
                address: addr + u64::from(dwords) * 4,
                packet: "end of submission".into(),
                reason,
            })
        });
        match ran {
            Ok(()) => Ok(ctx.stats),
            Err(f) => Err(SubmitError {
                offset_dwords: f.offset,
                address: f.address,
                packet: f.packet,
                reason: f.reason,
                buffers: ctx.buffers,
                markers: self.markers.clone(),
            }),
        }
    }

    /// Runs one buffer and any chain that follows it. Called buffers recurse.
    fn run_buffer(
        &mut self,
        ctx: &mut Ctx<'_>,
        mut addr: u64,
        mut dwords: u32,
        depth: usize,
        backend: &mut dyn Backend,
    ) -> Result<(), Fail> {
        let outer = ctx.buffers.len();
        ctx.buffers.push(addr);
        'chain: loop {
            let buf = read_dwords(ctx.mem, addr, dwords as usize).map_err(|e| Fail {
                offset: 0,
                address: addr,
                packet: "command buffer".into(),
                reason: format!("cannot read {dwords} dwords: {e}"),
            })?;
            let mut pos = 0usize;
            let mut skip_until = 0usize;
            while pos < buf.len() {
                let here = addr + pos as u64 * 4;
                let fail = |packet: String, reason: String| Fail {
                    offset: pos as u32,
                    address: here,
                    packet,
                    reason,
                };
                let h = Header(buf[pos]);
                ctx.stats.packets += 1;
                ctx.stats.dwords += 1;
                if ctx.stats.dwords > self.limits.max_dwords {
                    return Err(fail(
                        h.name(),
                        format!(
                            "the submission ran past {} dwords (a chain or call loop?)",
                            self.limits.max_dwords
                        ),
                    ));
                }
                match h.kind() {
                    2 => {
                        pos += 1;
                        continue;
                    }
                    3 => {}
                    k => {
                        return Err(fail(
                            h.name(),
                            format!(
                                "type-{k} packets are not used by PS5 command buffers (header {:#010x})",
                                h.0
                            ),
                        ));
                    }
                }
                let n = h.body_len();
                if pos + 1 + n > buf.len() {
                    return Err(fail(
                        h.name(),
                        format!(
                            "the packet needs {n} body dwords but the buffer has {} left",
                            buf.len() - pos - 1
                        ),
                    ));
                }
                let body = &buf[pos + 1..pos + 1 + n];
                ctx.stats.dwords += n as u64;
                let next = pos + 1 + n;
                // COND_EXEC's skipped dwords, and packets with PREDICATE set while the
                // predicate says not to draw.
                if pos < skip_until || (h.predicate() && self.predicate_skip) {
                    ctx.stats.skipped += 1;
                    pos = next;
                    continue;
                }
                let p = decode(h, body).map_err(|r| fail(h.name(), r))?;
                match self
                    .execute(ctx, &p, here, depth, backend)
                    .map_err(|r| fail(h.name(), r))?
                {
                    Flow::Next => {}
                    Flow::Skip(dw) => skip_until = next + dw as usize,
                    // A failure inside the called buffer is reported where it happened;
                    // `buffers` keeps the path.
                    Flow::Call(a, d) => self.run_buffer(ctx, a, d, depth + 1, backend)?,
                    Flow::Chain(a, d) => {
                        // A chain replaces the rest of this buffer. Chaining to a buffer
                        // this submission already chained to can only loop forever.
                        if !ctx.chained.insert((a, d)) {
                            return Err(fail(
                                h.name(),
                                format!("chains back to the buffer at {a:#x} ({d} dwords): a loop"),
                            ));
                        }
                        ctx.buffers.push(a);
                        addr = a;
                        dwords = d;
                        continue 'chain;
                    }
                }
                pos = next;
            }
            break;
        }
        ctx.buffers.truncate(outer);
        Ok(())
    }

    fn sync(backend: &mut dyn Backend) -> Result<(), String> {
        backend
            .sync_memory()
            .map_err(|e| format!("synchronising guest memory: {e}"))
    }

    fn execute(
        &mut self,
        ctx: &mut Ctx<'_>,
        p: &Packet<'_>,
        here: u64,
        depth: usize,
        backend: &mut dyn Backend,
    ) -> Result<Flow, String> {
        match p {
            Packet::Nop | Packet::PfpSyncMe | Packet::Rewind => {}
            Packet::Sony(s) => self.sony(s, backend)?,
            Packet::SetBase { index, address } => self.bases[*index as usize] = *address,
            Packet::ClearState => {
                self.regs.reset_context();
                self.gfx_dirty = GROUP_ALL;
            }
            Packet::ContextControl { .. } => {
                // Load/shadow enables govern register shadowing in GPU memory, which a
                // software register file does not need.
            }
            Packet::SetRegs {
                space,
                offset,
                index: _,
                values,
            } => {
                self.set_regs(*space, *offset, values)?;
            }
            Packet::LoadRegs(l) => {
                Self::sync(backend)?;
                let mem = ctx.mem;
                if l.offset_and_data {
                    let pairs = read_dwords(mem, l.address, l.num_dwords as usize * 2)
                        .map_err(|e| format!("reading the register list: {e}"))?;
                    for pr in pairs.chunks_exact(2) {
                        self.set_regs(l.space, pr[0] & 0xffff, &pr[1..2])?;
                    }
                } else {
                    let vals = read_dwords(mem, l.address, l.num_dwords as usize)
                        .map_err(|e| format!("reading the register values: {e}"))?;
                    self.set_regs(l.space, l.reg_offset, &vals)?;
                }
            }
            Packet::IndexBufferSize(n) => self.index.size = *n,
            Packet::IndexBase(a) => self.index.base = *a,
            Packet::IndexType(t) => {
                self.index.index_type = ty::VgtIndexType::from_raw(*t & 3);
                let _ = self.regs.set(reg::VGT_INDEX_TYPE, *t & 3);
                self.gfx_dirty |= group_of(reg::VGT_INDEX_TYPE);
            }
            Packet::NumInstances(n) => {
                self.num_instances = *n;
                let _ = self.regs.set(reg::VGT_NUM_INSTANCES, *n);
                self.gfx_dirty |= group_of(reg::VGT_NUM_INSTANCES);
            }
            Packet::DispatchDirect { x, y, z, initiator } => {
                ctx.stats.dispatches += 1;
                self.dispatch(
                    DispatchKind::Direct {
                        groups: [*x, *y, *z],
                    },
                    *initiator,
                    here,
                    backend,
                )?;
            }
            Packet::DispatchIndirect { args, initiator } => {
                let a = self.arg_address(*args);
                ctx.stats.dispatches += 1;
                self.dispatch(
                    DispatchKind::Indirect { args_address: a },
                    *initiator,
                    here,
                    backend,
                )?;
            }
            Packet::DrawIndexAuto { count, initiator } => {
                ctx.stats.draws += 1;
                self.draw(
                    DrawKind::Auto {
                        vertex_count: *count,
                    },
                    *initiator,
                    here,
                    backend,
                )?;
            }
            Packet::DrawIndex2 {
                max_size,
                address,
                count,
                initiator,
            } => {
                ctx.stats.draws += 1;
                let k = DrawKind::Indexed {
                    index_address: *address,
                    index_count: *count,
                    max_size: *max_size,
                };
                self.draw(k, *initiator, here, backend)?;
            }
            Packet::DrawIndexOffset2 {
                max_size,
                offset,
                count,
                initiator,
            } => {
                ctx.stats.draws += 1;
                let k = DrawKind::IndexOffset {
                    index_offset: *offset,
                    index_count: *count,
                    max_size: *max_size,
                };
                self.draw(k, *initiator, here, backend)?;
            }
            Packet::DrawIndirect {
                indexed,
                data_offset,
                base_vtx_loc,
                start_inst_loc,
                multi,
                initiator,
            } => {
                ctx.stats.draws += 1;
                let k = DrawKind::Indirect {
                    indexed: *indexed,
                    args_address: self.bases[1].wrapping_add(*data_offset as u64),
                    base_vtx_loc: *base_vtx_loc,
                    start_inst_loc: *start_inst_loc,
                    multi: *multi,
                };
                self.draw(k, *initiator, here, backend)?;
            }
            Packet::SetPredication(sp) => {
                self.predicate_skip = match sp.op {
                    0 => false,
                    3 | 4 => {
                        Self::sync(backend)?;
                        let v = if sp.op == 3 {
                            read_u64(ctx.mem, sp.address)
                        } else {
                            read_u32(ctx.mem, sp.address).map(u64::from)
                        }
                        .map_err(|e| format!("reading the predicate: {e}"))?;
                        // DRAW_VISIBLE: draw when the value is non-zero.
                        (v != 0) != sp.draw_visible
                    }
                    o => {
                        return Err(format!(
                            "predication operation {o} (occlusion/primitive-count queries) is not supported"
                        ));
                    }
                };
            }
            Packet::CondExec {
                address,
                exec_count,
            } => {
                Self::sync(backend)?;
                let v = read_u32(ctx.mem, *address)
                    .map_err(|e| format!("reading the condition: {e}"))?;
                if v == 0 {
                    return Ok(Flow::Skip(*exec_count));
                }
            }
            Packet::CondWrite {
                function,
                poll_memory,
                write_memory,
                poll_address,
                reference,
                mask,
                write_address,
                data,
            } => {
                if !poll_memory || !write_memory {
                    return Err("COND_WRITE on registers is not supported".into());
                }
                Self::sync(backend)?;
                let w = WaitRegMem {
                    function: *function,
                    memory: true,
                    operation: 0,
                    engine: 0,
                    address: *poll_address,
                    reference: *reference as u64,
                    mask: *mask as u64,
                    poll_interval: 0,
                    is_64: false,
                };
                if w.poll(ctx.mem)? {
                    write_dwords(ctx.mem, *write_address, &[*data])
                        .map_err(|e| format!("COND_WRITE: {e}"))?;
                }
            }
            Packet::WriteData(w) => backend.write_data(w)?,
            Packet::WaitRegMem(w) => {
                if w.operation == 1 {
                    return Err(
                        "WAIT_REG_MEM write-wait-write (operation 1) is not supported".into(),
                    );
                }
                if !w.memory {
                    return Err(format!(
                        "WAIT_REG_MEM on register {} is not supported",
                        register_label(w.address as u32)
                    ));
                }
                match backend.wait_reg_mem(w)? {
                    WaitResult::Satisfied => {}
                    WaitResult::NeverSatisfied => {
                        return Err(format!(
                            "waits for [{:#x}] & {:#x} (function {}) against {:#x}, which never comes",
                            w.address, w.mask, w.function, w.reference
                        ));
                    }
                }
            }
            Packet::IndirectBuffer { address, control } => {
                let size = control.ib_size;
                if control.chain != 0 {
                    return Ok(Flow::Chain(*address, size));
                }
                if depth + 1 > self.limits.max_ib_depth {
                    return Err(format!(
                        "indirect buffer calls nest deeper than {}",
                        self.limits.max_ib_depth
                    ));
                }
                return Ok(Flow::Call(*address, size));
            }
            Packet::CopyData(c) => backend.copy_data(c)?,
            Packet::EventWrite(e) => backend.event_write(e)?,
            Packet::EventWriteEos { event, .. } => backend.event_write(event)?,
            Packet::ReleaseMem(r) => backend.release_mem(r)?,
            Packet::DmaData(d) => backend.dma_data(d)?,
            Packet::AcquireMem(a) => backend.acquire_mem(a)?,
            Packet::WriteConstRam { offset, data } => {
                let start = (*offset / 4) as usize;
                let end = start + data.len();
                if offset % 4 != 0 || end > self.const_ram.len() {
                    return Err(format!(
                        "writes constant RAM bytes {offset:#x}..{:#x}, outside its {} bytes",
                        end * 4,
                        CONST_RAM_DWORDS * 4
                    ));
                }
                self.const_ram[start..end].copy_from_slice(data);
            }
            Packet::DumpConstRam {
                offset,
                num_dwords,
                address,
            } => {
                let start = (*offset / 4) as usize;
                let end = start + *num_dwords as usize;
                if offset % 4 != 0 || end > self.const_ram.len() {
                    return Err(format!(
                        "dumps constant RAM bytes {offset:#x}..{:#x}, outside its {} bytes",
                        end * 4,
                        CONST_RAM_DWORDS * 4
                    ));
                }
                write_dwords(ctx.mem, *address, &self.const_ram[start..end])
                    .map_err(|e| format!("DUMP_CONST_RAM: {e}"))?;
            }
        }
        Ok(Flow::Next)
    }

    fn sony(&mut self, s: &SonyCommand<'_>, backend: &mut dyn Backend) -> Result<(), String> {
        match s {
            SonyCommand::PushMarker(m) => self.markers.push(m.clone()),
            SonyCommand::PopMarker => {
                if self.markers.pop().is_none() {
                    return Err("pop marker without a pushed marker".into());
                }
            }
            SonyCommand::Flip(f) => backend.flip(f)?,
            SonyCommand::WaitFlipDone(w) => backend.wait_flip(w)?,
            SonyCommand::ReleaseMem {
                release: Some(r), ..
            } => backend.release_mem(r)?,
            SonyCommand::ContextState { op: 0, .. } => {
                // Operation 0 resets the context state (as CLEAR_STATE); others are passed on.
                self.regs.reset_context();
                self.gfx_dirty = GROUP_ALL;
                backend.sony(s)?;
            }
            _ => backend.sony(s)?,
        }
        Ok(())
    }

    fn set_regs(&mut self, space: Space, offset: u32, values: &[u32]) -> Result<(), String> {
        self.regs
            .write(space, offset, values)
            .map_err(|e| e.to_string())?;
        // Registers that mirror packet state.
        let (base, _) = space.range().expect("register space");
        let first = base + offset;
        let last = first + values.len() as u32;
        if space != Space::Sh || self.kind == QueueKind::Graphics {
            for r in first..last {
                self.gfx_dirty |= group_of(r);
            }
        }
        if space == Space::Uconfig {
            if (first..last).contains(&reg::VGT_INDEX_TYPE) {
                self.index.index_type =
                    ty::VgtIndexType::from_raw(self.regs.get(reg::VGT_INDEX_TYPE));
            }
            if (first..last).contains(&reg::VGT_NUM_INSTANCES) {
                self.num_instances = self.regs.get(reg::VGT_NUM_INSTANCES);
            }
        }
        Ok(())
    }

    fn arg_address(&self, a: ArgAddress) -> u64 {
        match a {
            ArgAddress::Absolute(x) => x,
            ArgAddress::BaseOffset(o) => self.bases[1].wrapping_add(o as u64),
        }
    }

    fn dispatch(
        &mut self,
        kind: DispatchKind,
        initiator: u32,
        here: u64,
        backend: &mut dyn Backend,
    ) -> Result<(), String> {
        let d = Dispatch {
            kind,
            initiator: ty::ComputeDispatchInitiator::from_raw(initiator),
            state: ComputeState::capture(&self.regs),
            queue: self.kind,
            registers: &self.regs,
            packet_address: here,
        };
        backend.dispatch(&d)
    }

    fn draw(
        &mut self,
        kind: DrawKind,
        initiator: u32,
        here: u64,
        backend: &mut dyn Backend,
    ) -> Result<(), String> {
        if self.kind == QueueKind::Compute {
            return Err("a draw on a compute queue".into());
        }
        if self.gfx_dirty != 0 {
            self.gfx.update(&self.regs, self.gfx_dirty);
            self.gfx_dirty = 0;
        }
        let d = Draw {
            kind,
            initiator: ty::VgtDrawInitiator::from_raw(initiator),
            index: self.index,
            num_instances: self.num_instances,
            state: &self.gfx,
            registers: &self.regs,
            packet_address: here,
        };
        backend.draw(&d)
    }
}

enum Flow {
    Next,
    /// Skip this many following dwords (COND_EXEC).
    Skip(u32),
    /// Continue with another buffer instead of the rest of this one.
    Chain(u64, u32),
    /// Run another buffer, then continue with this one.
    Call(u64, u32),
}
