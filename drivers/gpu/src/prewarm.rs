//! Pipeline prewarm (issue 13 item 5, docs/PACKS.md "Prewarm"): at start, the pipelines
//! `packs/pipelines.pack` records are created on background threads, most recently used
//! first, from the shader pack's translations and the recorded state words, within a time
//! budget, so the draws and dispatches that need them find them made.
//!
//! Found, not made twice: a graphics pipeline through `aps5-vulkan`'s pipeline cache (a
//! lookup of one being built waits for that build), a compute one through [`Prewarm::take_compute`]
//! (by its SPIR-V, the same whichever pack key found it).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use aps5_cache::pack::Pack;
use aps5_cache::pipelines::{self as cpipes, PackedPipeline};
use aps5_cache::records::PipelineKind;
use aps5_shader::pack::{self as spack, PackedShader};
use aps5_shader::translate::abi::Stage;
use aps5_vulkan::graphics::{
    Blend, ColorTarget, GraphicsDesc, Shader, TopologyClass, VertexAttribute, VertexBinding,
};
use aps5_vulkan::{BlobSave, ComputePipeline, Gpu, PipelineDesc, vk};

use crate::exec::PIPELINE_STATE_LAYOUT;
use aps5_vulkan::rects::RectExpansion;

/// Where the driver finds the pipelines pack (`aps5 run`: `aps5-out/packs/pipelines.pack`).
pub const PIPELINE_PACK_ENV: &str = "APS5_PIPELINE_PACK";
/// The prewarm's time budget in milliseconds: no pipeline is started after it, and the first
/// draw or dispatch waits for the prewarm at most this long from its start. 0 = no prewarm.
pub const BUDGET_ENV: &str = "APS5_PREWARM_BUDGET_MS";
/// [`BUDGET_ENV`] unset.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(10);
/// Progress is printed (stderr) once the prewarm has taken this long, then this often.
const PROGRESS_AFTER: Duration = Duration::from_secs(1);
/// Failures reported one by one; later ones are only counted.
const MAX_REPORTS: u64 = 8;

/// The budget [`BUDGET_ENV`] asks for (a value that is not a number of milliseconds is
/// reported and the default used).
pub fn budget_from_env() -> Duration {
    match std::env::var(BUDGET_ENV) {
        Err(_) => DEFAULT_BUDGET,
        Ok(v) => v.trim().parse::<u64>().map_or_else(
            |_| {
                eprintln!(
                    "aps5: gpu: {BUDGET_ENV}={v:?} is not a number of milliseconds: using {} ms",
                    DEFAULT_BUDGET.as_millis()
                );
                DEFAULT_BUDGET
            },
            Duration::from_millis,
        ),
    }
}

fn word(w: &[u32], at: &mut usize, what: &str) -> Result<u32, String> {
    let v = *w
        .get(*at)
        .ok_or_else(|| format!("state words end before {what} (word {at})"))?;
    *at += 1;
    Ok(v)
}

fn flag(w: &[u32], at: &mut usize, what: &str) -> Result<bool, String> {
    match word(w, at, what)? {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(format!("{what} is {v} (0 or 1)")),
    }
}

/// A count of items of `each` words that must fit in what is left.
fn count(w: &[u32], at: &mut usize, each: usize, what: &str) -> Result<usize, String> {
    let n = word(w, at, what)? as usize;
    if n.checked_mul(each).is_none_or(|need| need > w.len() - *at) {
        return Err(format!("{n} {what} do not fit in the state words"));
    }
    Ok(n)
}

fn layout_word(w: &[u32], at: &mut usize) -> Result<(), String> {
    match word(w, at, "the layout")? {
        PIPELINE_STATE_LAYOUT => Ok(()),
        v => Err(format!(
            "state words of layout {v} (this driver reads layout {PIPELINE_STATE_LAYOUT})"
        )),
    }
}

/// The inverse of `draw::graphics_state_words`: the [`GraphicsDesc`] whose words they are,
/// with these two shaders.
pub(crate) fn graphics_desc_of(
    w: &[u32],
    vertex: Arc<Shader>,
    fragment: Arc<Shader>,
) -> Result<GraphicsDesc, String> {
    let at = &mut 0;
    layout_word(w, at)?;
    let push_constant_bytes = word(w, at, "the push-constant bytes")?;
    let textures = word(w, at, "the texture count")?;
    let mut rect = None;
    let topology = match word(w, at, "the topology class")? {
        0 => TopologyClass::Points,
        1 => TopologyClass::Lines,
        2 => TopologyClass::Triangles,
        3 => {
            let outputs = word(w, at, "the rect stage's outputs")?;
            let flat = word(w, at, "the rect stage's flat outputs")?;
            if flat & !outputs != 0 {
                return Err(format!(
                    "rect stage flat outputs {flat:#x} outside its outputs {outputs:#x}"
                ));
            }
            rect = Some(RectExpansion { outputs, flat });
            TopologyClass::Triangles
        }
        v => return Err(format!("topology class {v} (0 to 3)")),
    };
    let depth_format = vk::Format::from_raw(word(w, at, "the depth format")? as i32);
    let samples = word(w, at, "the samples")?;
    let n = count(w, at, 9, "colour targets")?;
    let mut targets = Vec::with_capacity(n);
    for _ in 0..n {
        let format = vk::Format::from_raw(word(w, at, "a target format")? as i32);
        let enable = flag(w, at, "blend enable")?;
        let mut f = || word(w, at, "a blend word").map(|v| v as i32);
        let (src_color, dst_color, color_op) = (f()?, f()?, f()?);
        let (src_alpha, dst_alpha, alpha_op) = (f()?, f()?, f()?);
        let write_mask = vk::ColorComponentFlags::from_raw(word(w, at, "a write mask")?);
        targets.push(ColorTarget {
            format,
            blend: Blend {
                enable,
                src_color: vk::BlendFactor::from_raw(src_color),
                dst_color: vk::BlendFactor::from_raw(dst_color),
                color_op: vk::BlendOp::from_raw(color_op),
                src_alpha: vk::BlendFactor::from_raw(src_alpha),
                dst_alpha: vk::BlendFactor::from_raw(dst_alpha),
                alpha_op: vk::BlendOp::from_raw(alpha_op),
                write_mask,
            },
        });
    }
    let n = count(w, at, 3, "vertex bindings")?;
    let mut bindings = Vec::with_capacity(n);
    for _ in 0..n {
        bindings.push(VertexBinding {
            binding: word(w, at, "a binding")?,
            stride: word(w, at, "a stride")?,
            per_instance: flag(w, at, "per-instance")?,
        });
    }
    let n = count(w, at, 4, "vertex attributes")?;
    let mut attributes = Vec::with_capacity(n);
    for _ in 0..n {
        attributes.push(VertexAttribute {
            location: word(w, at, "a location")?,
            binding: word(w, at, "an attribute's binding")?,
            format: vk::Format::from_raw(word(w, at, "an attribute format")? as i32),
            offset: word(w, at, "an attribute offset")?,
        });
    }
    if *at != w.len() {
        return Err(format!(
            "{} state words after the last attribute",
            w.len() - *at
        ));
    }
    Ok(GraphicsDesc {
        vertex,
        fragment,
        push_constant_bytes,
        textures,
        bindings,
        attributes,
        topology,
        targets,
        depth_format,
        samples,
        rect,
    })
}

/// The inverse of `exec::compute_state_words`: the push-constant bytes and the required
/// subgroup size (32 for a lane-per-invocation translation, the only size the driver sets).
pub(crate) fn compute_state_of(w: &[u32]) -> Result<(u32, Option<u32>), String> {
    let at = &mut 0;
    layout_word(w, at)?;
    let push = word(w, at, "the push-constant bytes")?;
    let sub = match word(w, at, "the required subgroup size")? {
        0 => None,
        32 => Some(32),
        v => {
            return Err(format!(
                "a required subgroup size of {v} (this driver sets 32 or none)"
            ));
        }
    };
    if *at != w.len() {
        return Err(format!("{} state words too many", w.len() - *at));
    }
    Ok((push, sub))
}

/// What a compute pipeline is found by: its SPIR-V and push-constant bytes.
pub(crate) fn compute_key(t: &PackedShader) -> [u8; 32] {
    let mut h = blake3::Hasher::new_derive_key("aps5 prewarmed compute pipeline v1");
    h.update(&t.push_constant_bytes.to_le_bytes());
    for w in &t.spirv {
        h.update(&w.to_le_bytes());
    }
    *h.finalize().as_bytes()
}

enum ComputeSlot {
    Building,
    Ready(ComputePipeline),
    /// The submit thread made (or is making) it itself: not prewarmed.
    Taken,
}

/// Counters of one prewarm.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrewarmCounts {
    /// Pipelines in the pack.
    pub total: u64,
    /// Created by the prewarm threads (graphics and compute).
    pub prewarmed: u64,
    /// Already there (made by the submit thread first, or a duplicate).
    pub present: u64,
    /// Not created: a stage the shader pack does not hold (or holds for another device).
    pub skipped: u64,
    /// Creation failed (reported).
    pub failed: u64,
    /// Not started: the budget ran out first.
    pub left: u64,
}

struct Shared {
    gpu: Gpu,
    shaders: Pack,
    jobs: Vec<PackedPipeline>,
    next: AtomicUsize,
    budget: Duration,
    start: Instant,
    stop: AtomicBool,
    prewarmed: AtomicU64,
    present: AtomicU64,
    skipped: AtomicU64,
    failed: AtomicU64,
    finished: AtomicU64,
    /// Shader modules made so far, by pack key (stages shared between pipelines).
    modules: Mutex<HashMap<[u8; 32], Arc<Shader>>>,
    compute: Mutex<HashMap<[u8; 32], ComputeSlot>>,
    compute_cv: Condvar,
    /// Workers still running, and the blob save's outcome once the last one is done.
    running: Mutex<usize>,
    all_done: Condvar,
    last_progress: Mutex<Instant>,
}

/// A prewarm in progress (or finished): its threads and what they made.
pub struct Prewarm {
    shared: Arc<Shared>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

enum Outcome {
    Made,
    Present,
    Skipped,
}

impl Prewarm {
    /// Opens the pipelines pack at `pipelines` (this translator's: another's is refused),
    /// reads it whole, and starts `threads` workers creating its pipelines on clones of `gpu`,
    /// the shaders from `shaders` (this translator's shader pack; None: none in use, an error
    /// unless the pack is empty). Ok(None): nothing to do.
    pub fn start(
        gpu: &Gpu,
        shaders: Option<&Path>,
        pipelines: &Path,
        threads: usize,
        budget: Duration,
    ) -> Result<Option<Prewarm>, String> {
        let identity = cpipes::producer_identity(&spack::producer_identity());
        let pack = Pack::open(pipelines, &identity).map_err(|e| e.to_string())?;
        let jobs = cpipes::read_all(&pack).map_err(|e| e.to_string())?;
        drop(pack);
        if jobs.is_empty() || budget.is_zero() {
            return Ok(None);
        }
        let shaders = shaders.ok_or("no shader pack in use")?;
        let shaders =
            Pack::open(shaders, &spack::producer_identity()).map_err(|e| e.to_string())?;
        let now = Instant::now();
        let n = threads.clamp(1, jobs.len());
        let shared = Arc::new(Shared {
            gpu: gpu.clone(),
            shaders,
            jobs,
            next: AtomicUsize::new(0),
            budget,
            start: now,
            stop: AtomicBool::new(false),
            prewarmed: AtomicU64::new(0),
            present: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            modules: Mutex::new(HashMap::new()),
            compute: Mutex::new(HashMap::new()),
            compute_cv: Condvar::new(),
            running: Mutex::new(n),
            all_done: Condvar::new(),
            last_progress: Mutex::new(now),
        });
        let mut handles = Vec::with_capacity(n);
        for i in 0..n {
            let s = shared.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("aps5-prewarm-{i}"))
                .spawn(move || s.work());
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // The ones started do the work; this one is not running.
                    eprintln!("aps5: gpu: prewarm: cannot start a thread: {e}");
                    shared.worker_done();
                }
            }
        }
        Ok(Some(Prewarm {
            shared,
            threads: handles,
        }))
    }

    /// Waits until every worker is done or the budget (from the start) has passed.
    pub fn wait(&self) {
        let s = &self.shared;
        let mut running = s.running.lock().unwrap_or_else(|e| e.into_inner());
        while *running > 0 {
            let Some(left) = s.budget.checked_sub(s.start.elapsed()) else {
                return;
            };
            running = s
                .all_done
                .wait_timeout(running, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Starts no further pipeline and waits for the workers (each finishes the one it is
    /// making).
    pub fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }

    pub fn counts(&self) -> PrewarmCounts {
        let s = &self.shared;
        let total = s.jobs.len() as u64;
        PrewarmCounts {
            total,
            prewarmed: s.prewarmed.load(Ordering::Relaxed),
            present: s.present.load(Ordering::Relaxed),
            skipped: s.skipped.load(Ordering::Relaxed),
            failed: s.failed.load(Ordering::Relaxed),
            left: total.saturating_sub(s.finished.load(Ordering::Relaxed)),
        }
    }

    /// The compute pipeline the prewarm made for `key` ([`compute_key`]): waits for one
    /// being made; None when there is none (the caller makes it, and the prewarm will not).
    pub(crate) fn take_compute(&self, key: &[u8; 32]) -> Option<ComputePipeline> {
        let s = &self.shared;
        let mut m = s.compute.lock().unwrap_or_else(|e| e.into_inner());
        while matches!(m.get(key), Some(ComputeSlot::Building)) {
            m = s.compute_cv.wait(m).unwrap_or_else(|e| e.into_inner());
        }
        match m.insert(*key, ComputeSlot::Taken) {
            Some(ComputeSlot::Ready(p)) => Some(p),
            _ => None,
        }
    }
}

/// What [`prewarm_all`] did.
#[derive(Clone, Debug)]
pub struct PrewarmReport {
    pub counts: PrewarmCounts,
    /// From the start to the last pipeline made (the blob's save not included).
    pub elapsed: Duration,
    pub blob: BlobSave,
}

/// Creates every pipeline of the pack at `pipelines` on `gpu` (within `budget`) and waits for
/// them, then saves the driver's pipeline cache: `aps5 build --prewarm`, and the benchmark.
pub fn prewarm_all(
    gpu: &Gpu,
    shaders: &Path,
    pipelines: &Path,
    threads: usize,
    budget: Duration,
) -> Result<PrewarmReport, String> {
    if budget.is_zero() {
        return Err(format!("the prewarm budget is 0 ({BUDGET_ENV})"));
    }
    let start = Instant::now();
    let mut elapsed = Duration::ZERO;
    let counts = match Prewarm::start(gpu, Some(shaders), pipelines, threads, budget)? {
        Some(mut p) => {
            p.wait();
            elapsed = start.elapsed();
            p.stop();
            p.counts()
        }
        None => PrewarmCounts::default(),
    };
    let blob = gpu.save_pipeline_cache().map_err(|e| e.to_string())?;
    Ok(PrewarmReport {
        counts,
        elapsed,
        blob,
    })
}

impl Drop for Prewarm {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Shared {
    fn work(&self) {
        loop {
            if self.stop.load(Ordering::Relaxed) || self.start.elapsed() >= self.budget {
                break;
            }
            // Counted as background work, so the process's exit waits for it.
            let Some(_busy) = aps5_vulkan::graphics::Background::enter() else {
                break;
            };
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(job) = self.jobs.get(i) else {
                break;
            };
            match self.one(job) {
                Ok(Outcome::Made) => &self.prewarmed,
                Ok(Outcome::Present) => &self.present,
                Ok(Outcome::Skipped) => &self.skipped,
                Err(e) => {
                    if self.failed.load(Ordering::Relaxed) < MAX_REPORTS {
                        eprintln!(
                            "aps5: gpu: prewarm: pipeline {} (rank {}): {e}",
                            hex(&job.key()[..8]),
                            job.rank
                        );
                    }
                    &self.failed
                }
            }
            .fetch_add(1, Ordering::Relaxed);
            self.finished.fetch_add(1, Ordering::Relaxed);
            self.progress();
        }
        self.worker_done();
    }

    fn progress(&self) {
        let elapsed = self.start.elapsed();
        if elapsed < PROGRESS_AFTER {
            return;
        }
        let mut last = self.last_progress.lock().unwrap_or_else(|e| e.into_inner());
        if last.elapsed() < PROGRESS_AFTER {
            return;
        }
        *last = Instant::now();
        eprintln!(
            "aps5: gpu: prewarming pipelines: {}/{} in {:.1} s (budget {:.1} s)",
            self.finished.load(Ordering::Relaxed),
            self.jobs.len(),
            elapsed.as_secs_f64(),
            self.budget.as_secs_f64()
        );
    }

    /// One worker ended; the last one saves the pipeline cache blob (so a run that dies
    /// later keeps what the prewarm made) and wakes [`Prewarm::wait`].
    fn worker_done(&self) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        *running -= 1;
        if *running > 0 {
            return;
        }
        let elapsed = self.start.elapsed();
        if elapsed >= PROGRESS_AFTER {
            eprintln!(
                "aps5: gpu: prewarm done: {} of {} pipelines in {:.1} s",
                self.prewarmed.load(Ordering::Relaxed),
                self.jobs.len(),
                elapsed.as_secs_f64()
            );
        }
        drop(running);
        // Waiters go on first: the save (a write and an fsync) is not theirs to wait for.
        self.all_done.notify_all();
        match self.gpu.save_pipeline_cache() {
            Ok(BlobSave::Written { .. } | BlobSave::Unchanged | BlobSave::NoFolder) => {}
            Err(e) => eprintln!("aps5: gpu: pipeline cache not saved: {e}"),
        }
    }

    fn one(&self, job: &PackedPipeline) -> Result<Outcome, String> {
        match job.kind {
            PipelineKind::Compute => {
                let Some(t) = self.stage(&job.stages[0], Stage::Compute)? else {
                    return Ok(Outcome::Skipped);
                };
                let (push, sub) = compute_state_of(&job.state)?;
                let required =
                    aps5_shader::translate::abi::required_subgroup_size(&t.required_features);
                if push != t.push_constant_bytes || sub != required {
                    return Err(format!(
                        "the record says {push} push-constant bytes and subgroup size {sub:?}, \
                         the shader {} and {required:?}",
                        t.push_constant_bytes
                    ));
                }
                let key = compute_key(&t);
                {
                    let mut m = self.compute.lock().unwrap_or_else(|e| e.into_inner());
                    if m.contains_key(&key) {
                        return Ok(Outcome::Present);
                    }
                    m.insert(key, ComputeSlot::Building);
                }
                let made = self.gpu.create_compute_pipeline(&PipelineDesc {
                    spirv: &t.spirv,
                    entry: "main",
                    push_constant_bytes: t.push_constant_bytes,
                    required_subgroup_size: aps5_shader::translate::abi::required_subgroup_size(
                        &t.required_features,
                    ),
                });
                let mut m = self.compute.lock().unwrap_or_else(|e| e.into_inner());
                let out = match made {
                    Ok(p) => {
                        m.insert(key, ComputeSlot::Ready(p));
                        Ok(Outcome::Made)
                    }
                    Err(e) => {
                        m.remove(&key);
                        Err(e.to_string())
                    }
                };
                drop(m);
                self.compute_cv.notify_all();
                out
            }
            PipelineKind::Graphics => {
                let (Some(vs), Some(ps)) = (
                    self.module(&job.stages[0], Stage::Vertex)?,
                    self.module(&job.stages[1], Stage::Pixel)?,
                ) else {
                    return Ok(Outcome::Skipped);
                };
                let desc = graphics_desc_of(&job.state, vs, ps)?;
                match self.gpu.prewarm_graphics_pipeline(&desc) {
                    Ok(true) => Ok(Outcome::Made),
                    Ok(false) => Ok(Outcome::Present),
                    Err(e) => Err(e.to_string()),
                }
            }
        }
    }

    /// The stage's shader module (made once per pack key).
    fn module(&self, keys: &[[u8; 32]; 2], stage: Stage) -> Result<Option<Arc<Shader>>, String> {
        if let Some(m) = keys.iter().find_map(|k| {
            self.modules
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(k)
                .cloned()
        }) {
            return Ok(Some(m));
        }
        let Some(t) = self.stage(keys, stage)? else {
            return Ok(None);
        };
        let flags = match stage {
            Stage::Vertex => vk::ShaderStageFlags::VERTEX,
            _ => vk::ShaderStageFlags::FRAGMENT,
        };
        let m = self
            .gpu
            .create_shader(flags, &t.spirv)
            .map_err(|e| e.to_string())?;
        self.modules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(keys[0], m.clone());
        Ok(Some(m))
    }

    /// The shader pack's translation of a stage, looked up as the driver does at a draw or
    /// dispatch (`Executor::translation`): the portable key, then the device-class one; an
    /// entry needing what the device lacks is passed over. None: the pack holds neither.
    fn stage(&self, keys: &[[u8; 32]; 2], want: Stage) -> Result<Option<PackedShader>, String> {
        for key in keys {
            let Some(bytes) = self.shaders.get(key).map_err(|e| e.to_string())? else {
                continue;
            };
            let t = PackedShader::decode(bytes)
                .ok_or_else(|| format!("shader entry {} is not a shader entry", hex(key)))?;
            if t.stage != want {
                return Err(format!(
                    "shader entry {} is a {:?} stage, the record wants {want:?}",
                    hex(key),
                    t.stage
                ));
            }
            let names: Vec<&str> = t.required_features.iter().map(String::as_str).collect();
            if self.gpu.require(&names).is_ok() {
                return Ok(Some(t));
            }
        }
        Ok(None)
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use aps5_vulkan::GpuOptions;

    fn shaders(gpu: &Gpu) -> (Arc<Shader>, Arc<Shader>) {
        use aps5_vulkan::reference::compile_glsl;
        let v = compile_glsl(
            "vert",
            "#version 450\nvoid main() { gl_Position = vec4(0); }",
        )
        .unwrap();
        let f = compile_glsl(
            "frag",
            "#version 450\nlayout(location = 0) out vec4 c;\nvoid main() { c = vec4(1); }",
        )
        .unwrap();
        (
            gpu.create_shader(vk::ShaderStageFlags::VERTEX, &v).unwrap(),
            gpu.create_shader(vk::ShaderStageFlags::FRAGMENT, &f)
                .unwrap(),
        )
    }

    /// Every field of a description with values that differ from each other and from the
    /// defaults comes back from its words, and damaged words are errors, not panics.
    #[test]
    fn graphics_state_words_round_trip_over_every_field() {
        let gpu = Gpu::new(&GpuOptions {
            validation: true,
            ..Default::default()
        })
        .unwrap_or_else(|e| panic!("Vulkan device with the validation layer: {e}"));
        let (v, f) = shaders(&gpu);
        let blend = |i: i32| Blend {
            enable: i % 2 == 0,
            src_color: vk::BlendFactor::from_raw(1 + i),
            dst_color: vk::BlendFactor::from_raw(2 + i),
            color_op: vk::BlendOp::from_raw(i % 5),
            src_alpha: vk::BlendFactor::from_raw(3 + i),
            dst_alpha: vk::BlendFactor::from_raw(4 + i),
            alpha_op: vk::BlendOp::from_raw((i + 1) % 5),
            write_mask: vk::ColorComponentFlags::from_raw(0xF >> (i as u32 % 4)),
        };
        let mut descs = Vec::new();
        for (k, topology) in [
            TopologyClass::Points,
            TopologyClass::Lines,
            TopologyClass::Triangles,
        ]
        .into_iter()
        .enumerate()
        {
            let k32 = k as u32;
            let mut d = GraphicsDesc::new(v.clone(), f.clone(), vk::Format::R8G8B8A8_UNORM);
            d.push_constant_bytes = 96 + 4 * k32;
            d.textures = k32 + 1;
            d.topology = topology;
            d.depth_format = [
                vk::Format::UNDEFINED,
                vk::Format::D32_SFLOAT,
                vk::Format::D24_UNORM_S8_UINT,
            ][k];
            d.samples = 1 << k;
            d.targets = (0..=k as i32)
                .map(|i| ColorTarget {
                    format: vk::Format::from_raw(37 + i + k as i32),
                    blend: blend(i + k as i32),
                })
                .collect();
            d.bindings = (0..k32)
                .map(|b| VertexBinding {
                    binding: b,
                    stride: 12 + b,
                    per_instance: b % 2 == 1,
                })
                .collect();
            d.attributes = (0..2 * k32)
                .map(|a| VertexAttribute {
                    location: a + 3,
                    binding: a / 2,
                    format: vk::Format::from_raw(100 + a as i32),
                    offset: 4 * a,
                })
                .collect();
            descs.push(d);
        }
        // A rect list: triangles and the rect stage's outputs.
        let mut r = descs[2].clone();
        r.rect = Some(RectExpansion {
            outputs: 0b1101,
            flat: 0b100,
        });
        descs.push(r);
        for d in &descs {
            let w = crate::draw::graphics_state_words(d);
            let back = graphics_desc_of(&w, v.clone(), f.clone()).unwrap();
            // GraphicsDesc's equality covers every field (the shaders by their SPIR-V).
            assert_eq!(&back, d);
            assert_eq!(crate::draw::graphics_state_words(&back), w);
            // Cut short anywhere, or one word too many: an error.
            for n in 0..w.len() {
                assert!(
                    graphics_desc_of(&w[..n], v.clone(), f.clone()).is_err(),
                    "{n}"
                );
            }
            let mut long = w.clone();
            long.push(0);
            assert!(graphics_desc_of(&long, v.clone(), f.clone()).is_err());
        }
        // Distinct descriptions give distinct words.
        let words: std::collections::HashSet<Vec<u32>> = descs
            .iter()
            .map(crate::draw::graphics_state_words)
            .collect();
        assert_eq!(words.len(), descs.len());
        // Another layout, a bad topology, a flag that is not 0/1, a huge count: errors.
        let w = crate::draw::graphics_state_words(&descs[2]);
        for (at, val) in [(0, 2), (3, 3), (8, 2), (6, u32::MAX)] {
            let mut bad = w.clone();
            bad[at] = val;
            assert!(
                graphics_desc_of(&bad, v.clone(), f.clone()).is_err(),
                "word {at} = {val}"
            );
        }
    }

    #[test]
    fn compute_state_words_round_trip() {
        for push in [0, 4, 96, 128] {
            for sub in [None, Some(32)] {
                let w = crate::exec::compute_state_words(push, sub);
                assert_eq!(compute_state_of(&w), Ok((push, sub)));
                for n in 0..w.len() {
                    assert!(compute_state_of(&w[..n]).is_err());
                }
            }
        }
        assert!(compute_state_of(&[PIPELINE_STATE_LAYOUT, 96, 16]).is_err());
        assert!(compute_state_of(&[PIPELINE_STATE_LAYOUT + 1, 96, 0]).is_err());
        assert!(compute_state_of(&[PIPELINE_STATE_LAYOUT, 96, 0, 0]).is_err());
    }
}
