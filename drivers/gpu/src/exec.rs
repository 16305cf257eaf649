//! Compute dispatches on Vulkan: find the program, translate once, pipeline once, run.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use aps5_cache::pack::Pack;
use aps5_cache::records::{PipelineKind, PipelineRecord, Records, RunCounts, ShaderRecord};
use aps5_shader::pack::{self as spack, DeviceClass, PackedShader, ShaderState};
use aps5_shader::translate::abi::{self, FaultReason, FaultRecord, RangeEntry};
use aps5_shader::translate::{ComputeState, FloatControls, Options};
use aps5_vulkan::{Buffer, BufferPool, ComputePipeline, Gpu, PipelineDesc, VkError};

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
    /// The translator's state for this dispatch (what the pack key hashes).
    pub fn state(&self) -> ComputeState {
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
    /// Batches of draws run (each one command buffer, one submit and one wait).
    pub batches: u64,
    /// Shaders translated at run time: on the submit thread (`translations_on_submit_thread`,
    /// the draw or dispatch waiting for it) plus ahead of the draw on a worker
    /// (`translations_ahead`, started at `sceAgcCreateShader`).
    pub translations: u64,
    pub translations_on_submit_thread: u64,
    pub translations_ahead: u64,
    /// Translations made ahead that a draw or dispatch took (the rest were made for a state
    /// no draw has used, or are not needed yet).
    pub ahead_used: u64,
    /// Of those, the ones still in flight when the draw needed them (it waited), and the
    /// submit thread's time waiting for them, in microseconds.
    pub ahead_waited: u64,
    pub ahead_wait_us: u64,
    /// The submit thread's time translating itself, in microseconds (with a draw's two
    /// stages translated at once, the time of both together).
    pub translate_us: u64,
    /// Where else a start's time goes, in microseconds: creating the Vulkan instance and
    /// device (on the opening thread), the first submission's wait for that opening (0 when
    /// it was done before: the opening overlapped the program's start), the first draw or
    /// dispatch's wait for the prewarm, and the play records' writes on the submit thread
    /// (opening them included).
    pub device_open_us: u64,
    pub open_wait_us: u64,
    pub prewarm_wait_us: u64,
    pub records_us: u64,
    /// Pipelines created on the submit thread: compute, and graphics ones the pipeline cache
    /// had to build for a draw.
    pub pipelines: u64,
    /// Pipelines the prewarm created on its threads (docs/PACKS.md, "Prewarm").
    pub pipelines_prewarmed: u64,
    /// Prewarm: pipelines whose creation failed, whose stages the shader pack lacks, and
    /// those not started within the budget.
    pub prewarm_failed: u64,
    pub prewarm_skipped: u64,
    pub prewarm_left: u64,
    /// Draws or dispatches that found their pipeline being prewarmed and waited for it.
    pub pipelines_waited: u64,
    /// Shaders taken from the pack (no translation).
    pub pack_hits: u64,
    /// Shaders the pack did not hold (or held for another device class): translated here and
    /// recorded.
    pub pack_misses: u64,
    /// Pack entries refused (damaged, unreadable, or needing what the device lacks), and a
    /// pack refused whole (another translator, damaged header).
    pub pack_refused: u64,
    /// Distinct pipeline states met (each recorded in the play records once).
    pub pipeline_states: u64,
    pub bytes_uploaded: u64,
    pub bytes_written_back: u64,
    /// Regions imported (VK_EXT_external_memory_host) rather than mirrored.
    pub regions_imported: u64,
    pub regions_mirrored: u64,
}

/// Where the driver finds the shader pack (`aps5 run` sets it to
/// `aps5-out/packs/shaders.pack`).
pub const PACK_ENV: &str = "APS5_SHADER_PACK";
/// Where the driver records what the pack did not hold (`aps5 run`: `.aps5/records.sqlite`).
pub const RECORDS_ENV: &str = "APS5_RECORDS";
/// `1`: print the statistics at exit, and each pack lookup (`aps5 run -v`).
pub const STATS_ENV: &str = "APS5_GPU_STATS";
/// Test hook (e2e `play`): `N` makes the driver kill its own process with SIGKILL right after
/// its Nth new shader record committed, so the crash safety of the records is tested on a
/// real run at a known point rather than by racing a run that lasts a second.
pub const KILL_AFTER_RECORDS_ENV: &str = "APS5_GPU_KILL_AFTER_RECORDS";
/// Benchmark mode (`cargo xtask bench ttff`, docs/PACKS.md "Time to first frame"): `1`
/// accepts every draw and dispatch without running it (no translation, no pipeline, no GPU
/// work; their results never reach memory), while labels, memory packets, interrupts and
/// flips work as ever. The device still opens; no pack, records or prewarm are used, so a
/// stubbed run leaves the project's records and driver cache blob as they were.
pub const STUB_ENV: &str = "APS5_GPU_STUB";

/// The play records: opened on a thread of their own (SQLite's open and the run row's
/// commit are not on the start's path), then in use.
#[derive(Default)]
enum RecordsState {
    #[default]
    None,
    Opening(std::thread::JoinHandle<Result<OpenRecords, String>>),
    Open(OpenRecords),
}

struct OpenRecords {
    records: Records,
    run: i64,
    /// Pipeline states recorded before this run: meeting one again writes only its use,
    /// and that at the run's end ([`Records::end_run`]), not in a transaction at the draw.
    known: std::collections::HashSet<[u8; 32]>,
    uses: Vec<([u8; 32], u64)>,
}

fn open_records_at(path: &std::path::Path, pack: &str) -> Result<OpenRecords, String> {
    let records = Records::open(path).map_err(|e| e.to_string())?;
    let run = records
        .begin_run(spack::translator_identity(), pack)
        .map_err(|e| e.to_string())?;
    let known = records.pipeline_keys().map_err(|e| e.to_string())?;
    Ok(OpenRecords {
        records,
        run,
        known,
        uses: Vec::new(),
    })
}

/// The pack, the records and what has been reported about them.
#[derive(Default)]
pub(crate) struct PackState {
    pack: Option<Pack>,
    records: RecordsState,
    /// Keys whose pack entry was refused (reported once each).
    refused: std::collections::HashSet<[u8; 32]>,
    records_failed: bool,
    /// New shader records this run committed, and [`KILL_AFTER_RECORDS_ENV`].
    recorded: u64,
    kill_after: Option<u64>,
    /// Pipeline states met so far (docs/PACKS.md, "Pipeline records"): each is recorded once.
    pipelines_seen: std::collections::HashSet<[u8; 32]>,
    verbose: bool,
    finished: bool,
}

/// Runs compute dispatches on one Vulkan device (synchronously: each dispatch is waited for
/// before the next packet is processed, so a following RELEASE_MEM sees its results).
pub struct Executor {
    pub(crate) gpu: Gpu,
    programs: HashMap<[u8; 32], Arc<Program>>,
    pub(crate) packs: PackState,
    pub(crate) shaders: BTreeMap<u64, ShaderInfo>,
    pub(crate) opts: Options,
    pub(crate) stats: Stats,
    /// Import GPU-visible regions when the device can (`APS5_GPU_MIRROR=1` forces mirrors).
    import: bool,
    /// Graphics: translated stages, pipelines, the command recorder (crate::draw).
    pub(crate) gfx: crate::draw::GfxCache,
    /// Host-visible buffers of finished work (mirrors, range tables, fault buffers, pixel
    /// records), reused.
    pool: BufferPool,
    /// The prewarm started when the device opened (crate::prewarm), and whether the first
    /// draw or dispatch has waited for it yet.
    prewarm: Option<crate::prewarm::Prewarm>,
    prewarm_waited: bool,
    /// [`STUB_ENV`]: draws and dispatches are accepted, not run.
    pub(crate) stub: bool,
    /// Translations started at `sceAgcCreateShader` (crate::ahead).
    ahead: crate::ahead::Ahead,
}

/// One shader a draw or dispatch needs translated ([`Executor::translations`]).
pub(crate) struct Want<'a> {
    pub(crate) code: &'a [u8],
    pub(crate) state: &'a ShaderState,
    /// [`Executor::pack_keys`] of the code and state.
    pub(crate) keys: [[u8; 32]; 2],
    /// Names the shader in errors.
    pub(crate) what: &'a str,
}

/// The device's float controls as `Options::host_float_controls` takes them: translations
/// leave out the float-controls modes the device lacks (and say so in `float_caveats`).
pub fn host_float_controls(gpu: &Gpu) -> FloatControls {
    let f = &gpu.info().float_controls;
    FloatControls::from_vulkan(
        f.denorm_independence.as_raw(),
        f.denorm_preserve,
        f.denorm_flush_to_zero,
        f.signed_zero_inf_nan_preserve,
    )
}

/// Version of the pipeline state words' layout (the first word of each).
pub(crate) const PIPELINE_STATE_LAYOUT: u32 = 1;

/// A compute pipeline's creation state besides its shader (docs/PACKS.md, "Pipeline
/// records"): [layout, push-constant bytes, required subgroup size (0: none)].
pub(crate) fn compute_state_words(push_constant_bytes: u32, subgroup: Option<u32>) -> Vec<u32> {
    vec![
        PIPELINE_STATE_LAYOUT,
        push_constant_bytes,
        subgroup.unwrap_or(0),
    ]
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
            host_subgroup_size: gpu.info().lane_subgroup,
            loop_limit,
            host_float_controls: Some(host_float_controls(&gpu)),
            ..Default::default()
        };
        let import = gpu.supports_host_import()
            && std::env::var_os("APS5_GPU_MIRROR").is_none_or(|v| v != "1");
        let mut e = Executor {
            gpu,
            programs: HashMap::new(),
            packs: PackState::default(),
            shaders: BTreeMap::new(),
            import,
            opts,
            stats: Stats::default(),
            gfx: Default::default(),
            pool: BufferPool::new(64, 64),
            prewarm: None,
            prewarm_waited: false,
            stub: std::env::var_os(STUB_ENV).is_some_and(|v| v == "1"),
            ahead: Default::default(),
        };
        if e.stub {
            e.report(&format!(
                "{STUB_ENV}=1: draws and dispatches are not run (a benchmark mode)"
            ));
            e.packs.verbose = std::env::var_os(STATS_ENV).is_some_and(|v| v == "1");
            return e;
        }
        e.report_pipeline_cache();
        e.packs.verbose = std::env::var_os(STATS_ENV).is_some_and(|v| v == "1");
        e.packs.kill_after = std::env::var(KILL_AFTER_RECORDS_ENV)
            .ok()
            .and_then(|v| v.parse().ok());
        if let Some(p) = std::env::var_os(PACK_ENV).filter(|p| !p.is_empty()) {
            e.open_pack(std::path::Path::new(&p));
        }
        if let Some(p) = std::env::var_os(RECORDS_ENV).filter(|p| !p.is_empty()) {
            e.open_records(std::path::Path::new(&p));
        }
        if let Some(p) =
            std::env::var_os(crate::prewarm::PIPELINE_PACK_ENV).filter(|p| !p.is_empty())
        {
            e.start_prewarm(std::path::Path::new(&p), crate::prewarm::budget_from_env());
        }
        e
    }

    /// A pipeline cache blob that was not used (another device's, damaged, unreadable) is
    /// reported once; a damaged one is replaced at the next save.
    fn report_pipeline_cache(&self) {
        use aps5_vulkan::BlobLoad;
        let why = match self.gpu.pipeline_cache_load() {
            BlobLoad::NoFolder | BlobLoad::Absent | BlobLoad::Used { .. } => return,
            BlobLoad::Mismatch(w) => format!("another device's or driver's ({w})"),
            BlobLoad::Damaged(w) => format!("damaged ({w}); it is written again at exit"),
            BlobLoad::Unreadable(w) => format!("unreadable ({w})"),
        };
        self.report(&format!(
            "pipeline cache blob {} not used: {why}",
            self.gpu.pipeline_cache_key().file_name()
        ));
    }

    /// Starts creating the pipelines of the pipelines pack at `path` on background threads
    /// (crate::prewarm), shaders from the shader pack in use; the first draw or dispatch waits
    /// for it at most `budget` from now. A pack that cannot be used is reported, not used.
    pub fn start_prewarm(&mut self, path: &std::path::Path, budget: std::time::Duration) {
        let shaders = self.packs.pack.as_ref().map(|p| p.path().to_path_buf());
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        match crate::prewarm::Prewarm::start(&self.gpu, shaders.as_deref(), path, threads, budget) {
            Ok(p) => self.prewarm = p,
            Err(e) => self.report(&format!("pipeline pack not used ({e}): nothing prewarmed")),
        }
    }

    /// The first draw or dispatch waits for the prewarm (at most its budget from its start),
    /// so pipelines it would have made are not made on this thread instead.
    pub(crate) fn prewarm_gate(&mut self) {
        if !self.prewarm_waited {
            self.prewarm_waited = true;
            if let Some(p) = &self.prewarm {
                let t0 = std::time::Instant::now();
                p.wait();
                self.stats.prewarm_wait_us += t0.elapsed().as_micros() as u64;
            }
        }
    }

    /// The compute pipeline for translation `t`: the prewarm's when it made it (waited for
    /// when it is making it), else created here, on the submit thread.
    fn compute_pipeline(&mut self, t: &PackedShader) -> Result<ComputePipeline, String> {
        if let Some(pw) = &self.prewarm
            && let Some(p) = pw.take_compute(&crate::prewarm::compute_key(t))
        {
            return Ok(p);
        }
        let p = self
            .gpu
            .create_compute_pipeline(&PipelineDesc {
                spirv: &t.spirv,
                entry: "main",
                push_constant_bytes: t.push_constant_bytes,
                required_subgroup_size: abi::required_subgroup_size(&t.required_features),
            })
            .map_err(|e| e.to_string())?;
        self.stats.pipelines += 1;
        Ok(p)
    }

    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    pub fn stats(&self) -> Stats {
        let mut s = self.stats;
        s.translations_ahead = self.ahead.finished();
        s.translations = s.translations_on_submit_thread + s.translations_ahead;
        let g = self.gpu.pipeline_cache_stats();
        s.pipelines += g.misses;
        s.pipelines_waited += g.waited;
        if let Some(p) = &self.prewarm {
            let c = p.counts();
            s.pipelines_prewarmed = c.prewarmed;
            s.prewarm_failed = c.failed;
            s.prewarm_skipped = c.skipped;
            s.prewarm_left = c.left;
        }
        s
    }

    /// Prints `what` once on stderr (the driver's reports of pack and record problems).
    fn report(&self, what: &str) {
        eprintln!("aps5: gpu: {what}");
    }

    /// Looks shaders up in the pack at `path` from now on. A pack that cannot be used (none
    /// there, another translator's, a damaged header) is reported once and not used.
    pub fn open_pack(&mut self, path: &std::path::Path) {
        match Pack::open(path, &spack::producer_identity()) {
            Ok(p) => self.packs.pack = Some(p),
            Err(e) => {
                let missing = matches!(&e, aps5_cache::pack::PackError::Io { source, .. }
                    if source.kind() == std::io::ErrorKind::NotFound);
                if !missing {
                    self.stats.pack_refused += 1;
                }
                self.report(&format!(
                    "shader pack not used ({e}): every shader is translated at run time"
                ));
                self.packs.pack = None;
            }
        }
    }

    /// Records every miss in the play records at `path` from now on (one run row, its
    /// counters written with each miss and at [`Executor::finish_run`]). They are opened on
    /// a thread of their own; the first record waits for it.
    pub fn open_records(&mut self, path: &std::path::Path) {
        let (path, pack) = (path.to_path_buf(), self.pack_name());
        let (p2, pack2) = (path.clone(), pack.clone());
        self.packs.records = match std::thread::Builder::new()
            .name("gpu records".into())
            .spawn(move || open_records_at(&p2, &pack2))
        {
            Ok(h) => RecordsState::Opening(h),
            Err(_) => match open_records_at(&path, &pack) {
                Ok(r) => RecordsState::Open(r),
                Err(e) => {
                    self.report(&format!("play records not kept ({e})"));
                    RecordsState::None
                }
            },
        };
    }

    /// The records once open (waiting for their opening; a failure is reported once).
    fn records(&mut self) -> Option<&mut OpenRecords> {
        if matches!(self.packs.records, RecordsState::Opening(_)) {
            let RecordsState::Opening(h) = std::mem::take(&mut self.packs.records) else {
                unreachable!("matched Opening")
            };
            let t0 = std::time::Instant::now();
            let opened = h
                .join()
                .unwrap_or_else(|_| Err("the thread opening them panicked".into()));
            self.stats.records_us += t0.elapsed().as_micros() as u64;
            match opened {
                Ok(r) => self.packs.records = RecordsState::Open(r),
                Err(e) => self.report(&format!("play records not kept ({e})")),
            }
        }
        match &mut self.packs.records {
            RecordsState::Open(r) => Some(r),
            _ => None,
        }
    }

    fn pack_name(&self) -> String {
        self.packs
            .pack
            .as_ref()
            .map_or_else(String::new, |p| p.path().display().to_string())
    }

    fn run_counts(&self) -> RunCounts {
        let s = self.stats();
        RunCounts {
            pack_hits: s.pack_hits,
            misses: s.pack_misses,
            translations: s.translations,
            translations_ahead: s.translations_ahead,
            ahead_wait_us: s.ahead_wait_us,
            pipelines: s.pipelines,
            refused: s.pack_refused,
            prewarmed: s.pipelines_prewarmed,
            prewarm_failed: s.prewarm_failed,
            prewarm_skipped: s.prewarm_skipped,
            prewarm_left: s.prewarm_left,
        }
    }

    /// The statistics as one JSON object (what `aps5 run -v` prints at exit).
    pub fn stats_json(&self) -> String {
        let s = self.stats();
        // What became of the driver's pipeline cache blob when the device opened.
        let blob = match self.gpu.pipeline_cache_load() {
            aps5_vulkan::BlobLoad::NoFolder => "none",
            aps5_vulkan::BlobLoad::Absent => "absent",
            aps5_vulkan::BlobLoad::Used { .. } => "used",
            aps5_vulkan::BlobLoad::Mismatch(_) => "mismatch",
            aps5_vulkan::BlobLoad::Damaged(_) => "damaged",
            aps5_vulkan::BlobLoad::Unreadable(_) => "unreadable",
        };
        format!(
            "{{\"pack_hits\":{},\"misses\":{},\"translations\":{},\"translations_on_submit_thread\":{},\"translations_ahead\":{},\"ahead_used\":{},\"ahead_waited\":{},\"ahead_wait_us\":{},\"translate_us\":{},\"device_open_us\":{},\"open_wait_us\":{},\"prewarm_wait_us\":{},\"records_us\":{},\"pipelines\":{},\"pipelines_prewarmed\":{},\"prewarm_failed\":{},\"prewarm_skipped\":{},\"prewarm_left\":{},\"pipelines_waited\":{},\"pipeline_cache\":\"{blob}\",\"pipeline_states\":{},\"pack_refused\":{},\"dispatches\":{},\"draws\":{}}}",
            s.pack_hits,
            s.pack_misses,
            s.translations,
            s.translations_on_submit_thread,
            s.translations_ahead,
            s.ahead_used,
            s.ahead_waited,
            s.ahead_wait_us,
            s.translate_us,
            s.device_open_us,
            s.open_wait_us,
            s.prewarm_wait_us,
            s.records_us,
            s.pipelines,
            s.pipelines_prewarmed,
            s.prewarm_failed,
            s.prewarm_skipped,
            s.prewarm_left,
            s.pipelines_waited,
            s.pipeline_states,
            s.pack_refused,
            s.dispatches,
            s.draws
        )
    }

    /// The run ends: its counters go to the records and, with `APS5_GPU_STATS=1`, to stderr.
    /// Once; later calls do nothing.
    pub fn finish_run(&mut self) {
        if self.packs.finished {
            return;
        }
        self.packs.finished = true;
        // The prewarm starts nothing more; what it and the run made goes to the blob.
        if let Some(p) = &mut self.prewarm {
            p.stop();
        }
        self.ahead.close();
        // A stubbed run made no pipeline: the blob stays as the last real run left it.
        if !self.stub
            && let Err(e) = self.gpu.save_pipeline_cache()
        {
            self.report(&format!("pipeline cache not saved: {e}"));
        }
        let counts = self.run_counts();
        let t0 = std::time::Instant::now();
        if let Some(r) = self.records() {
            let uses = std::mem::take(&mut r.uses);
            if let Err(e) = r.records.end_run(r.run, &counts, &uses) {
                self.report(&format!("play records: the run's end: {e}"));
            }
        }
        self.stats.records_us += t0.elapsed().as_micros() as u64;
        if self.packs.verbose {
            eprintln!("aps5: gpu statistics: {}", self.stats_json());
        }
    }

    /// The translation of `code` for `state` ([`Executor::translations`] of one).
    pub(crate) fn translation(
        &mut self,
        code: &[u8],
        state: &ShaderState,
        keys: [[u8; 32]; 2],
        what: &str,
    ) -> Result<PackedShader, String> {
        let mut r = self.translations(&[Want {
            code,
            state,
            keys,
            what,
        }]);
        r.pop().expect("one result per want")
    }

    /// The translations of `wants` (in order): each from the pack when it holds one this
    /// device can run, else the one made ahead of the draw (crate::ahead; waited for when it
    /// is in flight), else translated now on the submit thread (the draw or dispatch waits
    /// for it; two or more, a draw's VS and PS, at once on as many threads), and recorded.
    ///
    /// Two keys are looked up (docs/PACKS.md, "Device class"): the portable one (what
    /// `aps5 build` makes for every shader), used when the device has every float-controls
    /// property the entry requires, then the one for this device's class (made by a build
    /// from an earlier run's record). A miss is recorded under the device-class key.
    pub(crate) fn translations(&mut self, wants: &[Want<'_>]) -> Vec<Result<PackedShader, String>> {
        let mut out: Vec<Option<Result<PackedShader, String>>> = Vec::new();
        let mut missed = Vec::new();
        for (i, w) in wants.iter().enumerate() {
            let [kp, kd] = w.keys;
            let hit = [(kp, "portable"), (kd, "device")]
                .into_iter()
                .find_map(|(key, class)| Some((self.pack_entry(&key, w.what)?, key, class)));
            match hit {
                Some((p, key, class)) => {
                    if self.packs.verbose {
                        eprintln!(
                            "aps5: gpu: {}: pack hit ({class} key {})",
                            w.what,
                            hex(&key)
                        );
                    }
                    self.stats.pack_hits += 1;
                    out.push(Some(Ok(p)));
                }
                None => {
                    self.stats.pack_misses += 1;
                    out.push(None);
                    missed.push(i);
                }
            }
        }
        // Those no worker has made (or is making) are translated here first, at once, so
        // that the wait for one in flight overlaps them.
        let mut here = Vec::new();
        let mut ahead = Vec::new();
        for &i in &missed {
            let w = &wants[i];
            let queued_or_none = match self.ahead.peek(&w.keys[1]) {
                crate::ahead::Peek::InFlight => false,
                crate::ahead::Peek::NotAhead => true,
            };
            if queued_or_none {
                here.push(i);
            } else {
                ahead.push(i);
            }
        }
        if !here.is_empty() {
            let t0 = std::time::Instant::now();
            let opts = &self.opts;
            let made: Vec<Result<PackedShader, String>> = std::thread::scope(|sc| {
                let others: Vec<_> = here[1..]
                    .iter()
                    .map(|&i| {
                        let w = &wants[i];
                        sc.spawn(move || crate::ahead::translate(w.code, w.state, opts))
                    })
                    .collect();
                let w = &wants[here[0]];
                let mut v = vec![crate::ahead::translate(w.code, w.state, opts)];
                for h in others {
                    v.push(h.join().unwrap_or_else(|_| {
                        Err("cannot translate: the translating thread panicked".into())
                    }));
                }
                v
            });
            self.stats.translate_us += t0.elapsed().as_micros() as u64;
            self.stats.translations_on_submit_thread += here.len() as u64;
            for (&i, r) in here.iter().zip(made) {
                if self.packs.verbose {
                    let w = &wants[i];
                    eprintln!(
                        "aps5: gpu: {}: pack miss (portable key {}, device key {}): translated at the draw",
                        w.what,
                        hex(&w.keys[0]),
                        hex(&w.keys[1])
                    );
                }
                out[i] = Some(r);
            }
        }
        for &i in &ahead {
            let w = &wants[i];
            let r = match self.ahead.take(&w.keys[1]) {
                crate::ahead::Taken::Ready(r, waited) => {
                    let r = *r;
                    self.stats.ahead_used += 1;
                    if let Some(w) = waited {
                        self.stats.ahead_waited += 1;
                        self.stats.ahead_wait_us += w.as_micros() as u64;
                    }
                    if self.packs.verbose {
                        eprintln!(
                            "aps5: gpu: {}: pack miss (portable key {}, device key {}): translated ahead of the draw (waited {} us)",
                            w.what,
                            hex(&w.keys[0]),
                            hex(&w.keys[1]),
                            waited.map_or(0, |w| w.as_micros())
                        );
                    }
                    r
                }
                // Taken back from the queue meanwhile: translated here.
                crate::ahead::Taken::No => {
                    let t0 = std::time::Instant::now();
                    let r = crate::ahead::translate(w.code, w.state, &self.opts);
                    self.stats.translate_us += t0.elapsed().as_micros() as u64;
                    self.stats.translations_on_submit_thread += 1;
                    r
                }
            };
            out[i] = Some(r);
        }
        // Checked and recorded in the wants' order (a draw: VS, then PS).
        for &i in &missed {
            let w = &wants[i];
            let r = out[i].take().expect("every miss was translated");
            let r = r.and_then(|t| {
                let names: Vec<&str> = t.required_features.iter().map(String::as_str).collect();
                self.gpu.require(&names).map_err(|e| e.to_string())?;
                Ok(t)
            });
            if r.is_ok() {
                self.record_shader(w);
            }
            out[i] = Some(r);
        }
        out.into_iter()
            .map(|r| r.expect("every want has a result"))
            .collect()
    }

    /// Starts translating a program `sceAgcCreateShader` saw, for the state its header
    /// predicts, on a worker (crate::ahead): a draw or dispatch with that state finds it
    /// made. Nothing when the pack holds it, when the same (code, state) was started before,
    /// or in the stub mode.
    pub fn translate_ahead(&mut self, code: Vec<u8>, state: ShaderState, what: &str) {
        if self.stub || self.packs.finished {
            return;
        }
        let keys = self.pack_keys(&code, &state);
        if keys.iter().any(|k| self.pack_entry(k, what).is_some()) {
            return;
        }
        if self.ahead.start(keys[1], code, state, &self.opts) && self.packs.verbose {
            eprintln!(
                "aps5: gpu: {what}: translating ahead of the draw (device key {})",
                hex(&keys[1])
            );
        }
    }

    /// Waits until no translation ahead of the draw is queued or running (tests).
    pub fn wait_ahead_idle(&self) {
        self.ahead.wait_idle();
    }

    /// How long the device took to open and the first submission waited for the opening
    /// (the caller opened it: `Gpu::new` comes before the executor).
    pub fn note_open(&mut self, device: std::time::Duration, waited: std::time::Duration) {
        self.stats.device_open_us = device.as_micros() as u64;
        self.stats.open_wait_us = waited.as_micros() as u64;
    }

    /// Records a missed shader in the play records (under its device-class key).
    fn record_shader(&mut self, w: &Want<'_>) {
        let t0 = std::time::Instant::now();
        let counts = self.run_counts();
        let class = DeviceClass::of(&self.opts).words();
        if let Some(OpenRecords {
            records: r, run, ..
        }) = self.records()
        {
            let rec = ShaderRecord {
                key: w.keys[1],
                code: w.code.to_vec(),
                state: w.state.words(),
                class,
                translator: spack::translator_identity().to_string(),
            };
            match r.record_miss(*run, &rec, &counts) {
                Ok(true) => {
                    self.packs.recorded += 1;
                    if self.packs.kill_after == Some(self.packs.recorded) {
                        self.report(&format!(
                            "{KILL_AFTER_RECORDS_ENV}: {} records committed, SIGKILL",
                            self.packs.recorded
                        ));
                        // SAFETY: kill(2) of this process; nothing runs after it.
                        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
                    }
                }
                Ok(false) => {}
                Err(e) if !self.packs.records_failed => {
                    self.packs.records_failed = true;
                    self.report(&format!("play records: cannot record a shader: {e}"));
                }
                Err(_) => {}
            }
        }
        self.stats.records_us += t0.elapsed().as_micros() as u64;
    }

    /// The two pack keys the driver looks a shader up by: the portable one, then the one for
    /// this device's class ([`Executor::translation`]).
    pub(crate) fn pack_keys(&self, code: &[u8], state: &ShaderState) -> [[u8; 32]; 2] {
        // Portable float, this device's lanes (docs/PACKS.md, "Device class").
        let portable = DeviceClass::of(&self.opts).portable().options(&self.opts);
        [
            spack::pack_key(code, state, &portable),
            spack::pack_key(code, state, &self.opts),
        ]
    }

    /// Records a pipeline state in the play records the first time this process meets it
    /// (docs/PACKS.md, "Pipeline records"); later meetings cost a hash and a set lookup.
    pub(crate) fn record_pipeline(
        &mut self,
        kind: PipelineKind,
        stages: Vec<[[u8; 32]; 2]>,
        state: Vec<u32>,
    ) {
        let rec = PipelineRecord {
            kind,
            stages,
            state,
            translator: spack::translator_identity().to_string(),
        };
        if !self.packs.pipelines_seen.insert(rec.key()) {
            return;
        }
        self.stats.pipeline_states += 1;
        let seq = self.stats.pipeline_states;
        let t0 = std::time::Instant::now();
        let key = rec.key();
        let failed = match self.records() {
            // Known: only its use changes, written at the run's end.
            Some(r) if r.known.contains(&key) => {
                r.uses.push((key, seq));
                None
            }
            Some(r) => r.records.record_pipeline(r.run, seq, &rec).err(),
            None => None,
        };
        if let Some(e) = failed
            && !self.packs.records_failed
        {
            self.packs.records_failed = true;
            self.report(&format!(
                "play records: cannot record a pipeline state: {e}"
            ));
        }
        self.stats.records_us += t0.elapsed().as_micros() as u64;
    }

    /// The pack's entry for `key` when it is there, sound, and runs on this device; a
    /// damaged or unusable one is refused (reported once per key) and is a miss.
    fn pack_entry(&mut self, key: &[u8; 32], what: &str) -> Option<PackedShader> {
        let pack = self.packs.pack.as_ref()?;
        let why = match pack.get(key) {
            Ok(None) => return None,
            Ok(Some(bytes)) => match PackedShader::decode(bytes) {
                None => format!(
                    "{}: entry {} is not a shader entry",
                    pack.path().display(),
                    hex(key)
                ),
                Some(p) => {
                    let names: Vec<&str> = p.required_features.iter().map(String::as_str).collect();
                    match self.gpu.require(&names) {
                        Ok(()) => return Some(p),
                        // Made for a device class with properties this device lacks: not
                        // an error, the device-class key is looked up next.
                        Err(_) => return None,
                    }
                }
            },
            Err(e) => e.to_string(),
        };
        if self.packs.refused.insert(*key) {
            self.stats.pack_refused += 1;
            self.report(&format!(
                "{what}: pack entry refused, translating instead: {why}"
            ));
        }
        None
    }

    /// Whether GPU-visible regions are imported when the device can (else always mirrored).
    pub fn set_host_import(&mut self, on: bool) {
        self.import = on && self.gpu.supports_host_import();
    }

    /// Records a program `sceAgcCreateShader` saw (its code size bounds what is read).
    pub fn register_shader(&mut self, code: u64, info: ShaderInfo) {
        self.shaders.insert(code, info);
    }

    /// Names the program at `addr` in reports (its code size and header when
    /// `sceAgcCreateShader` saw it).
    pub fn describe_shader(&self, addr: u64) -> String {
        self.describe(addr)
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

    /// A draw's two programs, for reports.
    pub(crate) fn stage_names(&self, vs: u64, ps: u64) -> String {
        format!("VS {}; PS {}", self.describe(vs), self.describe(ps))
    }

    /// Runs one dispatch; the shaders may access `regions` only.
    pub fn dispatch(
        &mut self,
        mem: &dyn Memory,
        d: &ComputeDispatch,
        regions: &[Region],
    ) -> Result<(), DispatchError> {
        self.stats.dispatches += 1;
        if self.stub {
            return Ok(());
        }
        let n = self.stats.dispatches;
        let failed = |what: String| DispatchError::Failed { dispatch: n, what };
        // Draws queued before it run first (crate::batch): it may read what they render.
        if !self.gfx.batch.is_empty() {
            self.flush(mem)
                .map_err(|e| failed(format!("the draws queued before it: {e}")))?;
        }
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
        let (views, entries) = self.views(mem, regions).map_err(failed)?;
        let vk = |e: VkError| failed(format!("{shader}: {e}"));
        let (table, fault) = self.guest_tables(&entries).map_err(vk)?;

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
        self.recycle_views(views);
        self.recycle([table, fault]);
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
        self.prewarm_gate();
        let code = self.read_code(mem, addr, d.wave64())?;
        let state = ShaderState::Compute(d.state());
        // The process's own cache, by the pack key for this device.
        let key = spack::pack_key(&code, &state, &self.opts);
        if let Some(p) = self.programs.get(&key) {
            return Ok(p.clone());
        }
        let what = self.describe(addr);
        let keys = self.pack_keys(&code, &state);
        let t = self.translation(&code, &state, keys, &what)?;
        let pipeline = self.compute_pipeline(&t)?;
        self.record_pipeline(
            PipelineKind::Compute,
            vec![keys],
            compute_state_words(
                t.push_constant_bytes,
                abi::required_subgroup_size(&t.required_features),
            ),
        );
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
    /// 64 KiB (whole dwords) cut to the program's reachable bytes at the wave size it runs at.
    pub(crate) fn read_code(
        &self,
        mem: &dyn Memory,
        addr: u64,
        wave64: bool,
    ) -> Result<Vec<u8>, String> {
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
                // Only the program itself: the bytes after it in memory differ from run to
                // run and would change its pack key (docs/PACKS.md, "At run time"). A walk
                // that fails keeps all 64 KiB: the translation then reports the error.
                if let Some(end) = aps5_shader::translate::frontend::reachable_bytes(&c, wave64) {
                    c.truncate(end);
                }
                c
            }
        })
    }

    /// A host-visible buffer of at least `bytes` from the pool (contents undefined: the
    /// caller writes what the GPU reads).
    pub(crate) fn scratch(&mut self, bytes: u64) -> Result<Buffer, VkError> {
        self.pool.take(&self.gpu, bytes)
    }

    /// The non-empty `regions` on the device ([`Executor::upload`] each) and their range
    /// table entries.
    pub(crate) fn views(
        &mut self,
        mem: &dyn Memory,
        regions: &[Region],
    ) -> Result<(Vec<View>, Vec<RangeEntry>), String> {
        let mut views = Vec::with_capacity(regions.len());
        for r in regions.iter().filter(|r| !r.is_empty()) {
            views.push(self.upload(mem, *r)?);
        }
        let entries = views
            .iter()
            .map(|v| RangeEntry {
                guest_begin: v.region.begin,
                guest_end: v.region.end,
                device_addr: v.buf.device_address(),
                perms: v.region.perms,
                pad: 0,
            })
            .collect();
        Ok((views, entries))
    }

    /// A buffer holding the range table of `entries`.
    pub(crate) fn range_table(&mut self, entries: &[RangeEntry]) -> Result<Buffer, VkError> {
        let mut table = self.scratch(32 * entries.len().max(1) as u64)?;
        let bytes: Vec<u8> = entries.iter().flat_map(|e| e.to_bytes()).collect();
        table.write(0, &bytes)?;
        Ok(table)
    }

    /// The range table of `entries` and a zeroed fault buffer, for one dispatch.
    pub(crate) fn guest_tables(
        &mut self,
        entries: &[RangeEntry],
    ) -> Result<(Buffer, Buffer), VkError> {
        let table = self.range_table(entries)?;
        let mut fault = self.scratch(u64::from(abi::FAULT_BYTES))?;
        fault.write(0, &[0u8; abi::FAULT_BYTES as usize])?;
        Ok((table, fault))
    }

    /// Gives buffers of finished work (the device is done with them) back to the pool.
    pub(crate) fn recycle(&mut self, bufs: impl IntoIterator<Item = Buffer>) {
        self.pool.give_back(bufs);
    }

    /// Gives back the mirrors among `views` (imported views alias guest pages: dropped).
    pub(crate) fn recycle_views(&mut self, views: Vec<View>) {
        self.pool.give_back(
            views
                .into_iter()
                .filter(|v| v.uploaded.is_some())
                .map(|v| v.buf),
        );
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
        let mut buf = self.scratch(r.len()).map_err(|e| e.to_string())?;
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

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
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
