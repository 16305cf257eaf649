//! Compute dispatches on Vulkan: find the program, translate once, pipeline once, run.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use aps5_shader::translate::abi::{self, FaultReason, FaultRecord, RangeEntry};
use aps5_shader::translate::{
    ComputeState, DenormIndependence, FloatControls, Options, translate_compute,
};
use aps5_vulkan::{Buffer, ComputePipeline, Gpu, PipelineDesc, VkError};

use crate::memory::{MemFault, Memory, Region};

/// The compute registers a dispatch runs under (what SET_SH_REG wrote), plus its grid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ComputeDispatch {
    /// COMPUTE_PGM_LO: bits 8..39 of the program address.
    pub pgm_lo: u32,
    /// COMPUTE_PGM_HI: bits 40..47 of the program address.
    pub pgm_hi: u32,
    pub rsrc1: u32,
    pub rsrc2: u32,
    pub rsrc3: u32,
    /// COMPUTE_NUM_THREAD_X/Y/Z (NUM_THREAD_FULL in bits 0..9).
    pub num_thread: [u32; 3],
    /// COMPUTE_START_X/Y/Z (must be 0: the translator has no base workgroup id yet).
    pub start: [u32; 3],
    /// COMPUTE_USER_DATA_0..15.
    pub user_data: [u32; 16],
    /// DISPATCH_INITIATOR (bit 0 COMPUTE_SHADER_EN, bit 15 CS_W32_EN).
    pub initiator: u32,
    /// Workgroups along x, y, z.
    pub groups: [u32; 3],
}

impl ComputeDispatch {
    /// The program's address, as COMPUTE_PGM_LO/HI encode it (256-byte aligned).
    pub fn program_address(&self) -> u64 {
        (u64::from(self.pgm_lo) << 8) | (u64::from(self.pgm_hi & 0xFF) << 40)
    }
    /// Wave64 unless DISPATCH_INITIATOR.CS_W32_EN is set.
    pub fn wave64(&self) -> bool {
        self.initiator & (1 << 15) == 0
    }
    fn state(&self) -> ComputeState {
        ComputeState {
            pgm_rsrc1: self.rsrc1,
            pgm_rsrc2: self.rsrc2,
            workgroup_size: self.num_thread.map(|n| (n & 0x3FF).max(1)),
            wave64: self.wave64(),
            lds_bytes: 0,
            scratch_bytes_per_lane: 0,
        }
    }
}

/// What the driver knows about a program from `sceAgcCreateShader`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShaderInfo {
    /// Code bytes (from the header).
    pub code_bytes: u32,
    /// Where its header is, for reports.
    pub header: u64,
}

/// Why a dispatch did not complete.
#[derive(Debug)]
pub enum DispatchError {
    /// The shader faulted: an access outside the range table, or the loop limit.
    Fault {
        dispatch: u64,
        shader: String,
        record: FaultRecord,
        instruction: String,
    },
    /// The program could not be read, translated or run.
    Failed { dispatch: u64, what: String },
}

impl fmt::Display for DispatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DispatchError::Fault {
                dispatch,
                shader,
                record,
                instruction,
            } => {
                let reason = FaultReason::from_u32(record.reason)
                    .map_or_else(|| format!("reason {}", record.reason), |r| r.to_string());
                write!(
                    f,
                    "GPU fault in dispatch {dispatch} ({shader}): {reason}: {} bytes at {:#x}, \
                     instruction at +{:#x} `{instruction}`",
                    record.bytes, record.address, record.inst_offset
                )
            }
            DispatchError::Failed { dispatch, what } => {
                write!(f, "dispatch {dispatch}: {what}")
            }
        }
    }
}

impl std::error::Error for DispatchError {}

/// One translated program with its pipeline.
struct Program {
    pipeline: ComputePipeline,
    local_size: [u32; 3],
    groups_per_guest_group: u32,
    push_constant_bytes: u32,
    /// The guest code (for naming a faulting instruction).
    code: Vec<u8>,
}

/// How guest memory reached the device for one dispatch.
pub(crate) struct View {
    pub(crate) region: Region,
    pub(crate) buf: Buffer,
    /// Mirror only: a copy of the guest bytes as uploaded. Written back are the bytes the GPU
    /// changed, so CPU writes elsewhere in the region made meanwhile survive. None for an
    /// imported region (the GPU works on the guest's pages themselves).
    uploaded: Option<Vec<u8>>,
}

/// Counters, for reports and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub dispatches: u64,
    /// Draws run (graphics).
    pub draws: u64,
    pub translations: u64,
    pub pipelines: u64,
    pub bytes_uploaded: u64,
    pub bytes_written_back: u64,
    /// Regions imported (VK_EXT_external_memory_host) rather than mirrored.
    pub regions_imported: u64,
    pub regions_mirrored: u64,
}

/// Runs compute dispatches on one Vulkan device (synchronously: each dispatch is waited for
/// before the next packet is processed, so a following RELEASE_MEM sees its results).
pub struct Executor {
    pub(crate) gpu: Gpu,
    programs: HashMap<[u8; 32], Arc<Program>>,
    pub(crate) shaders: BTreeMap<u64, ShaderInfo>,
    pub(crate) opts: Options,
    pub(crate) stats: Stats,
    /// Import GPU-visible regions when the device can (`APS5_GPU_MIRROR=1` forces mirrors).
    import: bool,
    /// Graphics: translated stages, pipelines, the command recorder (crate::draw).
    pub(crate) gfx: crate::draw::GfxCache,
}

/// The device's float controls as `Options::host_float_controls` takes them: translations
/// leave out the float-controls modes the device lacks (and say so in `float_caveats`).
pub fn host_float_controls(gpu: &Gpu) -> FloatControls {
    use aps5_vulkan::vk::ShaderFloatControlsIndependence as I;
    let f = &gpu.info().float_controls;
    FloatControls {
        denorm_independence: match f.denorm_independence {
            I::ALL => DenormIndependence::All,
            I::TYPE_32_ONLY => DenormIndependence::Bits32Only,
            _ => DenormIndependence::None,
        },
        denorm_preserve: f.denorm_preserve,
        denorm_flush_to_zero: f.denorm_flush_to_zero,
        signed_zero_inf_nan_preserve: f.signed_zero_inf_nan_preserve,
    }
}

/// Most code read for a program `sceAgcCreateShader` did not describe.
const MAX_UNKNOWN_CODE: usize = 64 << 10;

impl Executor {
    pub fn new(gpu: Gpu) -> Executor {
        let loop_limit = std::env::var("APS5_GPU_LOOP_LIMIT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1 << 24);
        let opts = Options {
            host_subgroup_size: Some(gpu.info().subgroup_size),
            loop_limit,
            host_float_controls: Some(host_float_controls(&gpu)),
            ..Default::default()
        };
        let import = gpu.supports_host_import()
            && std::env::var_os("APS5_GPU_MIRROR").is_none_or(|v| v != "1");
        Executor {
            gpu,
            programs: HashMap::new(),
            shaders: BTreeMap::new(),
            import,
            opts,
            stats: Stats::default(),
            gfx: Default::default(),
        }
    }

    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Whether GPU-visible regions are imported when the device can (else always mirrored).
    pub fn set_host_import(&mut self, on: bool) {
        self.import = on && self.gpu.supports_host_import();
    }

    /// Records a program `sceAgcCreateShader` saw (its code size bounds what is read).
    pub fn register_shader(&mut self, code: u64, info: ShaderInfo) {
        self.shaders.insert(code, info);
    }

    pub(crate) fn describe(&self, addr: u64) -> String {
        match self.shaders.get(&addr) {
            Some(s) => format!(
                "shader at {addr:#x}, {} code bytes, header at {:#x}",
                s.code_bytes, s.header
            ),
            None => format!("shader at {addr:#x}, not created with sceAgcCreateShader"),
        }
    }

    /// Runs one dispatch; the shaders may access `regions` only.
    pub fn dispatch(
        &mut self,
        mem: &dyn Memory,
        d: &ComputeDispatch,
        regions: &[Region],
    ) -> Result<(), DispatchError> {
        self.stats.dispatches += 1;
        let n = self.stats.dispatches;
        let failed = |what: String| DispatchError::Failed { dispatch: n, what };
        let addr = d.program_address();
        let shader = self.describe(addr);
        if d.initiator & 1 == 0 {
            return Err(failed(format!(
                "DISPATCH_INITIATOR {:#x} has COMPUTE_SHADER_EN clear",
                d.initiator
            )));
        }
        if d.start != [0; 3] {
            return Err(failed(format!(
                "COMPUTE_START_X/Y/Z = {:?}: a base workgroup id is not supported yet",
                d.start
            )));
        }
        if d.groups.contains(&0) {
            return Ok(());
        }
        let program = self
            .program(mem, d, addr)
            .map_err(|e| failed(format!("{shader}: {e}")))?;

        // Guest memory onto the device.
        let mut views = Vec::with_capacity(regions.len());
        for r in regions.iter().filter(|r| !r.is_empty()) {
            views.push(self.upload(mem, *r).map_err(|e| failed(e.to_string()))?);
        }
        let entries: Vec<RangeEntry> = views
            .iter()
            .map(|v| RangeEntry {
                guest_begin: v.region.begin,
                guest_end: v.region.end,
                device_addr: v.buf.device_address(),
                perms: v.region.perms,
                pad: 0,
            })
            .collect();
        let vk = |e: VkError| failed(format!("{shader}: {e}"));
        let mut table = self
            .gpu
            .create_buffer(32 * entries.len().max(1) as u64)
            .map_err(vk)?;
        let bytes: Vec<u8> = entries.iter().flat_map(|e| e.to_bytes()).collect();
        table.write(0, &bytes).map_err(vk)?;
        let fault = self
            .gpu
            .create_buffer(u64::from(abi::FAULT_BYTES))
            .map_err(vk)?;

        let user = (d.rsrc2 >> 1) & 0x1F;
        let mut push = vec![0u8; abi::push::SIZE as usize];
        for i in 0..user.min(16) as usize {
            push[i * 4..i * 4 + 4].copy_from_slice(&d.user_data[i].to_le_bytes());
        }
        let put64 = |p: &mut [u8], at: u32, v: u64| {
            p[at as usize..at as usize + 8].copy_from_slice(&v.to_le_bytes())
        };
        put64(&mut push, abi::push::RANGE_TABLE, table.device_address());
        put64(&mut push, abi::push::FAULT_BUFFER, fault.device_address());
        put64(&mut push, abi::push::CODE_BASE, d.program_address());
        let rc = abi::push::RANGE_COUNT as usize;
        push[rc..rc + 4].copy_from_slice(&(entries.len() as u32).to_le_bytes());
        push.truncate(program.push_constant_bytes as usize);
        let host_groups = [
            d.groups[0]
                .checked_mul(program.groups_per_guest_group.max(1))
                .ok_or_else(|| failed(format!("{:?} workgroups is too many", d.groups)))?,
            d.groups[1],
            d.groups[2],
        ];
        let _ = program.local_size;
        self.gpu
            .dispatch(&program.pipeline, &push, host_groups)
            .map_err(vk)?;

        let record = FaultRecord::from_bytes(
            fault.bytes()[..32]
                .try_into()
                .expect("the fault buffer is 32 bytes"),
        );
        // Results reach guest memory even when the shader faulted (stores before the fault
        // happened, as on hardware), so a report can be checked against memory.
        for v in &views {
            self.write_back(mem, v).map_err(|e| failed(e.to_string()))?;
        }
        if record.state == 2 {
            let instruction = instruction_at(&program.code, record.inst_offset, d.wave64());
            return Err(DispatchError::Fault {
                dispatch: n,
                shader,
                record,
                instruction,
            });
        }
        Ok(())
    }

    fn program(
        &mut self,
        mem: &dyn Memory,
        d: &ComputeDispatch,
        addr: u64,
    ) -> Result<Arc<Program>, String> {
        if addr == 0 {
            return Err("COMPUTE_PGM_LO/HI are 0 (no program set)".into());
        }
        let code = self.read_code(mem, addr)?;
        let state = d.state();
        let mut h = blake3::Hasher::new();
        h.update(&code);
        for v in [
            state.pgm_rsrc1,
            state.pgm_rsrc2,
            state.workgroup_size[0],
            state.workgroup_size[1],
            state.workgroup_size[2],
            u32::from(state.wave64),
        ] {
            h.update(&v.to_le_bytes());
        }
        let key = *h.finalize().as_bytes();
        if let Some(p) = self.programs.get(&key) {
            return Ok(p.clone());
        }
        let words: Vec<u32> = code
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let t = translate_compute(&words, &state, &self.opts)
            .map_err(|e| format!("cannot translate: {e}"))?;
        self.stats.translations += 1;
        self.gpu
            .require(&t.meta.required_features)
            .map_err(|e| e.to_string())?;
        let pipeline = self
            .gpu
            .create_compute_pipeline(&PipelineDesc {
                spirv: &t.spirv,
                entry: "main",
                push_constant_bytes: t.push_constant_bytes,
                required_subgroup_size: None,
            })
            .map_err(|e| e.to_string())?;
        self.stats.pipelines += 1;
        let p = Arc::new(Program {
            pipeline,
            local_size: t.local_size,
            groups_per_guest_group: t.groups_per_guest_group,
            push_constant_bytes: t.push_constant_bytes,
            code,
        });
        self.programs.insert(key, p.clone());
        Ok(p)
    }

    /// A program's code: the size `sceAgcCreateShader` recorded, else what is readable up to
    /// 64 KiB (whole dwords).
    pub(crate) fn read_code(&self, mem: &dyn Memory, addr: u64) -> Result<Vec<u8>, String> {
        Ok(match self.shaders.get(&addr) {
            Some(s) => {
                let mut c = vec![0u8; s.code_bytes as usize];
                mem.read(addr, &mut c).map_err(|e| format!("code: {e}"))?;
                c
            }
            None => {
                let mut c = vec![0u8; MAX_UNKNOWN_CODE];
                let n = mem.read_partial(addr, &mut c);
                if n < 4 {
                    return Err(format!("code at {addr:#x} is not readable"));
                }
                c.truncate(n & !3);
                c
            }
        })
    }

    /// The region on the device: imported when the device can take it (zero copy), else a
    /// device copy (mirror).
    pub(crate) fn upload(&mut self, mem: &dyn Memory, r: Region) -> Result<View, String> {
        let align = self.gpu.host_import_alignment().unwrap_or(u64::MAX);
        if self.import
            && r.perms == (abi::PERM_READ | abi::PERM_WRITE)
            && r.begin.is_multiple_of(align)
            && r.len().is_multiple_of(align)
        {
            // SAFETY: the region is a readable and writable mapping of this process (from
            // /proc/self/maps at this submission); the buffer is dropped when the dispatch
            // has finished, before control returns to the program.
            // A mapping the device refuses is mirrored instead.
            if let Ok(buf) = unsafe {
                self.gpu
                    .import_host_memory(r.begin as usize as *mut u8, r.len() as usize)
            } {
                self.stats.regions_imported += 1;
                return Ok(View {
                    region: r,
                    buf,
                    uploaded: None,
                });
            }
        }
        self.stats.regions_mirrored += 1;
        let mut buf = self.gpu.create_buffer(r.len()).map_err(|e| e.to_string())?;
        let mut uploaded = vec![0u8; r.len() as usize];
        mem.read(r.begin, &mut uploaded)
            .map_err(|e: MemFault| format!("GPU-visible region: {e}"))?;
        buf.write(0, &uploaded).map_err(|e| e.to_string())?;
        self.stats.bytes_uploaded += r.len();
        Ok(View {
            region: r,
            buf,
            uploaded: Some(uploaded),
        })
    }

    /// Writes back the runs of bytes the GPU changed.
    pub(crate) fn write_back(&mut self, mem: &dyn Memory, v: &View) -> Result<(), String> {
        let Some(uploaded) = &v.uploaded else {
            return Ok(());
        };
        let now = &v.buf.bytes()[..uploaded.len()];
        let mut i = 0;
        while i < now.len() {
            if now[i] == uploaded[i] {
                i += 1;
                continue;
            }
            let start = i;
            while i < now.len() && now[i] != uploaded[i] {
                i += 1;
            }
            mem.write(v.region.begin + start as u64, &now[start..i])
                .map_err(|e| format!("writing GPU results back: {e}"))?;
            self.stats.bytes_written_back += (i - start) as u64;
        }
        Ok(())
    }
}

/// The LLVM text of the instruction at `offset`, or why there is none.
pub(crate) fn instruction_at(code: &[u8], offset: u32, wave64: bool) -> String {
    use aps5_shader::disasm::{Options as DisOptions, instruction_text};
    use aps5_shader::{Decoded, Target, decode_at_wave};
    if offset as usize >= code.len() {
        return format!("(offset {offset:#x} is past the code)");
    }
    match decode_at_wave(code, offset as usize, Target::Gfx1030, wave64) {
        Decoded::Inst(i) => instruction_text(
            &i,
            &DisOptions {
                wave64,
                ..DisOptions::default()
            },
        ),
        Decoded::Unsupported(u) => format!("(undecodable: {})", u.reason),
    }
}
