//! libSceAgcDriver: submission, end-of-pipe events, and the process's one GPU.
//!
//! Every queue (graphics, and each compute queue id 0x20..0x57) is an `aps5_agc::Queue`
//! with its own registers and **its own thread**, started at its first submission and kept
//! for the life of the process: a submission is queued and the call returns at once, as on
//! the console, so the CPU and the queues run side by side and queues can hand work to one
//! another (and to the CPU) through labels in memory (WAIT_REG_MEM, RELEASE_MEM). A queue
//! runs its submissions in order. The queues share one `Executor` (one Vulkan queue) behind a
//! lock taken per dispatch or draw; what needs only guest memory (labels, waits, copies,
//! flips) runs without it, so a queue that waits never holds up another. The shaders see
//! the GPU-visible memory of the moment (views of libkernel's direct memory,
//! `aps5_gpu::memory`). End-of-pipe interrupts become EQ events when the RELEASE_MEM runs.
//!
//! A submission that cannot complete (a GPU fault, a packet the processor refuses, a shader
//! that cannot be translated) **stops the run**: the report goes to stderr and the process
//! exits with status 134, as an abort would, through the guest's `exit`, so the output it
//! printed before is kept. A flip from the CPU (`sceVideoOutSubmitFlip`) first waits until
//! every submission made before it has run ([`gpu_wait_idle`]), so it shows what the program
//! drew.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use aps5_agc::{
    Backend, CopyData, Dispatch, DmaData, Draw, Flip, Queue, QueueKind, ReleaseMem, WaitFlip,
    WaitRegMem, WaitResult, WriteData,
};
use aps5_gpu::backend::{Guest, gpu_clock, wait_memory};
use aps5_gpu::{
    DispatchError, Display, DrawError, Executor, GpuBackend, ProcessMemory, Region, ShaderInfo,
};
use aps5_prx_macros::nid;

use crate::kernel;

/// The kernel event filter of GPU events (`EVFILT_GRAPHICS_CORE`).
pub const EVFILT_GRAPHICS: i16 = -14;
/// The EQ event id of the graphics queue's end-of-pipe interrupts.
pub const EQ_GRAPHICS_EOP: u32 = 0x40;
/// Graphics "queue id" in this driver's table.
pub const GRAPHICS_QUEUE: u32 = 0;

/// `SCE_AGC_ERROR_INVALID_ARGUMENT`-style failure for a bad call (the console's exact codes
/// are not known; docs/GPU_DRIVER.md).
pub const AGC_ERROR_INVALID: i32 = 0x8A6D_0001_u32 as i32;

/// How long one WAIT_REG_MEM waits for its label before the submission stops ("never
/// comes"): the console's GPU hang detection ends such a wait too.
const WAIT_LIMIT: Duration = Duration::from_secs(10);

/// Compute queue ids (GPU.md): 0x20 + 8 * pipe + queue.
pub fn is_compute_queue(id: u32) -> bool {
    (0x20..=0x57).contains(&id)
}

struct State {
    /// Queue id -> the channel to its thread.
    queues: Option<HashMap<u32, Sender<Job>>>,
    /// (equeue, event id, udata) registrations from sceAgcDriverAddEqEvent.
    events: Vec<(u64, u32, u64)>,
    /// Shaders from sceAgcCreateShader before the GPU was opened, with their code and the
    /// state their header predicts (translated ahead once it is open).
    pending_shaders: Vec<(u64, ShaderInfo, Option<Ahead>)>,
}

/// A program's code and the translation state its header predicts (`sceAgcCreateShader`).
pub type Ahead = (Vec<u8>, aps5_gpu::ShaderState);

static STATE: Mutex<State> = Mutex::new(State {
    queues: None,
    events: Vec::new(),
    pending_shaders: Vec::new(),
});

/// The one executor, opened on a thread of its own from `sceAgcInit` or the first
/// `sceAgcCreateShader` ([`start_open`]), so that creating the Vulkan device overlaps the
/// program's start; the first submission waits for it.
static EXEC: Mutex<Option<Executor>> = Mutex::new(None);

/// Whether the executor is being opened, and why it could not be.
enum OpenState {
    NotStarted,
    InProgress,
    Opened,
    Failed(String),
}

static OPENING: (Mutex<OpenState>, Condvar) = (Mutex::new(OpenState::NotStarted), Condvar::new());

/// Submissions queued and not yet finished, over every queue.
static IN_FLIGHT: (Mutex<u64>, Condvar) = (Mutex::new(0), Condvar::new());

/// Set by the queue thread that stops the run: the exit handler must not wait for the
/// executor that thread keeps locked.
static STOPPING: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// True on a queue's thread (a flip from the command stream must not wait for idle).
    static ON_QUEUE: Cell<bool> = const { Cell::new(false) };
}

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

fn exec() -> MutexGuard<'static, Option<Executor>> {
    EXEC.lock().unwrap_or_else(|e| e.into_inner())
}

/// One queued command buffer.
struct Job {
    words: u64,
    count: u32,
}

/// At exit (the guest's `exit` ends in the host's, which runs `atexit` handlers): the run's
/// counters go to the play records and, with `aps5 run -v`, its statistics to stderr. Work
/// still queued is dropped, as the console drops a dying process's GPU work; the executor
/// stays locked so that no queue starts more of it while the process ends. A run stopped by
/// [`stop`] has finished the run itself.
extern "C" fn at_exit() {
    if STOPPING.load(Ordering::SeqCst) {
        return;
    }
    // A device still being created while exit tears the driver down: let it finish.
    wait_opened();
    let mut g = exec();
    if let Some(e) = g.as_mut() {
        e.finish_run();
    }
    std::mem::forget(g);
    // A pipeline still being built on a driver thread while exit tears the driver down
    // corrupts its heap (seen on NVIDIA): let those builds finish first.
    aps5_gpu::vulkan::graphics::end_background_work();
}

/// Records a program `sceAgcCreateShader` saw and starts translating it ahead of the draw
/// for the state its header predicts (aps5-gpu's `Executor::translate_ahead`; once the GPU
/// is open when it is not yet).
pub fn register_shader(code: u64, info: ShaderInfo, ahead: Option<Ahead>) {
    start_open();
    let mut g = exec();
    match g.as_mut() {
        Some(e) => created(e, code, info, ahead),
        None => state().pending_shaders.push((code, info, ahead)),
    }
}

fn created(e: &mut Executor, code: u64, info: ShaderInfo, ahead: Option<Ahead>) {
    e.register_shader(code, info);
    if let Some((bytes, st)) = ahead {
        let what = e.describe_shader(code);
        e.translate_ahead(bytes, st, &what);
    }
}

/// Reports `what` and stops the run (module comment); the exit handler then leaves the
/// executor alone.
fn stop(what: &str) -> ! {
    STOPPING.store(true, Ordering::SeqCst);
    eprintln!("aps5: libSceAgcDriver: {what}");
    aps5_gpu::vulkan::graphics::end_background_work();
    kernel::exit(134)
}

/// Stops the run from a queue: the run's statistics are finished first.
fn stop_from_queue(what: &str) -> ! {
    let mut g = exec();
    if let Some(e) = g.as_mut() {
        e.finish_run();
    }
    std::mem::forget(g);
    stop(what)
}

fn opening() -> MutexGuard<'static, OpenState> {
    OPENING.0.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts opening the GPU on a thread of its own, once (`sceAgcInit`, `sceAgcCreateShader`,
/// the first submission): the Vulkan instance and device, the packs, the records and the
/// prewarm are made while the program goes on with its start. A failure is reported at the
/// first submission ([`open_gpu`]), as when the GPU opened there.
pub fn start_open() {
    let mut o = opening();
    if !matches!(*o, OpenState::NotStarted) {
        return;
    }
    *o = OpenState::InProgress;
    drop(o);
    // SAFETY: registering a plain function with no arguments.
    unsafe { libc::atexit(at_exit) };
    let spawned = std::thread::Builder::new()
        .name("gpu open".into())
        .spawn(open_executor);
    if spawned.is_err() {
        open_executor();
    }
}

/// Opens the device and the executor, then installs it (with the shaders created meanwhile).
fn open_executor() {
    let t0 = std::time::Instant::now();
    let opened = aps5_gpu::vulkan::Gpu::new(&aps5_gpu::vulkan::GpuOptions::from_env())
        .map(|g| {
            let device = t0.elapsed();
            let mut e = Executor::new(g);
            e.note_open(device, std::time::Duration::ZERO);
            e
        })
        .map_err(|e| e.to_string());
    let done = match opened {
        Ok(mut e) => {
            let mut g = exec();
            for (code, info, ahead) in state().pending_shaders.drain(..) {
                created(&mut e, code, info, ahead);
            }
            *g = Some(e);
            OpenState::Opened
        }
        Err(e) => OpenState::Failed(e),
    };
    *opening() = done;
    OPENING.1.notify_all();
}

/// Waits while the executor is being opened.
fn wait_opened() {
    let mut o = opening();
    while matches!(*o, OpenState::InProgress) {
        o = OPENING.1.wait(o).unwrap_or_else(|e| e.into_inner());
    }
}

/// The GPU, open by the first submission (on the caller's thread it waits for the opening,
/// so that a machine without one stops the run at the call).
fn open_gpu() {
    static FIRST: std::sync::Once = std::sync::Once::new();
    start_open();
    let t0 = std::time::Instant::now();
    wait_opened();
    if let OpenState::Failed(e) = &*opening() {
        let e = e.clone();
        stop(&format!("cannot open the GPU: {e}"));
    }
    // The first submission's wait: 0 when the opening overlapped the program's start.
    FIRST.call_once(|| {
        if let Some(e) = exec().as_mut() {
            let device = std::time::Duration::from_micros(e.stats().device_open_us);
            e.note_open(device, t0.elapsed());
        }
    });
}

/// Queues one command buffer on queue `id`.
fn submit(id: u32, words: u64, count: u32) -> i32 {
    if count == 0 {
        return 0;
    }
    if words == 0 {
        return AGC_ERROR_INVALID;
    }
    open_gpu();
    let mut s = state();
    let queues = s.queues.get_or_insert_with(HashMap::new);
    let tx = match queues.get(&id) {
        Some(tx) => tx.clone(),
        None => {
            let (tx, rx) = channel::<Job>();
            let spawned = std::thread::Builder::new()
                .name(format!("gpu queue {id:#x}"))
                .spawn(move || {
                    ON_QUEUE.with(|q| q.set(true));
                    let mut queue = Queue::new(if is_compute_queue(id) {
                        QueueKind::Compute
                    } else {
                        QueueKind::Graphics
                    });
                    for job in rx {
                        run(id, &mut queue, job);
                        let (n, idle) = &IN_FLIGHT;
                        let mut n = n.lock().unwrap_or_else(|e| e.into_inner());
                        *n -= 1;
                        idle.notify_all();
                    }
                });
            if let Err(e) = spawned {
                drop(s);
                stop(&format!("cannot start the thread of queue {id:#x}: {e}"));
            }
            queues.insert(id, tx.clone());
            tx
        }
    };
    drop(s);
    *IN_FLIGHT.0.lock().unwrap_or_else(|e| e.into_inner()) += 1;
    if tx.send(Job { words, count }).is_err() {
        stop(&format!("the thread of queue {id:#x} has ended"));
    }
    0
}

/// Waits until every submission queued so far has run (nothing on a queue's own thread).
/// Exported for libSceVideoOut, which calls it before a flip from the CPU.
#[nid("__aps5_gpu_wait_idle")]
pub extern "C" fn gpu_wait_idle() -> i32 {
    if ON_QUEUE.with(|q| q.get()) {
        return 0;
    }
    let (n, idle) = &IN_FLIGHT;
    let mut n = n.lock().unwrap_or_else(|e| e.into_inner());
    while *n > 0 {
        n = idle.wait(n).unwrap_or_else(|e| e.into_inner());
    }
    0
}

fn queue_name(id: u32) -> String {
    if is_compute_queue(id) {
        format!("compute queue {id:#x}")
    } else {
        "graphics queue".to_string()
    }
}

/// Runs one command buffer on the queue's thread; a failure stops the run.
fn run(id: u32, queue: &mut Queue, job: Job) {
    let regions = match aps5_gpu::memory::direct_memory_regions() {
        Ok(r) => r,
        Err(e) => stop_from_queue(&format!("cannot read /proc/self/maps: {e}")),
    };
    let mem = ProcessMemory;
    let guest = Guest(&mem);
    // An ACB may begin with a descriptor pointing at the real buffer (GPU.md).
    let (words, count) = if is_compute_queue(id) {
        match aps5_agc::resolve_acb(&guest, job.words, job.count) {
            Ok(r) => r,
            Err(e) => stop_from_queue(&format!("compute queue {id:#x}: the command buffer: {e}")),
        }
    } else {
        (job.words, job.count)
    };
    let mut backend = QueueBackend {
        id,
        regions,
        error: None,
        draw_error: None,
    };
    if let Err(e) = queue.submit(&guest, words, count, &mut backend) {
        let detail = match (backend.error.take(), backend.draw_error.take()) {
            (Some(d), _) => d.to_string(),
            _ => e.reason.clone(),
        };
        stop_from_queue(&format!(
            "submission to the {} stopped at {} (dword {} of the buffer at {:#x}, \
             packet at {:#x}): {detail}",
            queue_name(id),
            e.packet,
            e.offset_dwords,
            e.buffers.first().copied().unwrap_or(words),
            e.address
        ));
    }
}

/// Triggers the EQ events registered for queue `id`'s end-of-pipe interrupts.
fn raise(id: u32, context_id: u32) {
    let want = if is_compute_queue(id) {
        id
    } else {
        EQ_GRAPHICS_EOP
    };
    let events: Vec<(u64, u32, u64)> = state()
        .events
        .iter()
        .copied()
        .filter(|&(_, ev, _)| ev == want)
        .collect();
    for (eq, ev, udata) in events {
        kernel::equeue_trigger(
            eq,
            u64::from(ev),
            EVFILT_GRAPHICS,
            i64::from(context_id),
            udata,
        );
    }
}

/// A queue's backend: dispatches and draws on the shared executor (locked for each one);
/// what touches only guest memory runs without the lock, after the draws the executor has
/// queued have run (`flush`), so a label written after them sees their results.
struct QueueBackend {
    id: u32,
    regions: Vec<Region>,
    error: Option<DispatchError>,
    draw_error: Option<DrawError>,
}

impl QueueBackend {
    fn on_executor(
        &mut self,
        f: impl FnOnce(&mut GpuBackend<'_>) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut g = exec();
        let exec = g
            .as_mut()
            .expect("the GPU is opened before the first submission");
        let mem = ProcessMemory;
        let mut b = GpuBackend::new(exec, &mem, self.regions.clone());
        let r = f(&mut b);
        if let Some(e) = b.error.take() {
            self.error = Some(e);
        }
        if let Some(e) = b.draw_error.take() {
            // The first error stopped the submission; later ones (its end's flush) are not it.
            self.draw_error.get_or_insert(e);
        }
        r
    }

    /// Runs the draws queued on the executor (aps5-gpu batches them): before anything whose
    /// effect must follow them.
    fn flush(&mut self) -> Result<(), String> {
        self.on_executor(|b| b.flush())
    }
}

impl Backend for QueueBackend {
    fn dispatch(&mut self, d: &Dispatch<'_>) -> Result<(), String> {
        self.on_executor(|b| b.dispatch(d))
    }

    fn draw(&mut self, d: &Draw<'_>) -> Result<(), String> {
        self.on_executor(|b| b.draw(d))
    }

    fn release_mem(&mut self, r: &ReleaseMem) -> Result<(), String> {
        self.flush()?;
        r.apply(&Guest(&ProcessMemory), gpu_clock())?;
        if r.int_sel != 0 {
            raise(self.id, r.int_ctxid);
        }
        Ok(())
    }

    fn write_data(&mut self, w: &WriteData<'_>) -> Result<(), String> {
        self.flush()?;
        w.apply(&Guest(&ProcessMemory))
    }

    fn wait_reg_mem(&mut self, w: &WaitRegMem) -> Result<WaitResult, String> {
        self.flush()?;
        wait_memory(&ProcessMemory, w, WAIT_LIMIT)
    }

    fn flip(&mut self, f: &Flip) -> Result<(), String> {
        self.flush()?;
        crate::video::VideoOut.flip(f)
    }

    fn wait_flip(&mut self, f: &WaitFlip) -> Result<(), String> {
        self.flush()?;
        crate::video::VideoOut.wait_flip(f)
    }

    fn dma_data(&mut self, d: &DmaData) -> Result<(), String> {
        self.flush()?;
        d.apply(&Guest(&ProcessMemory))
    }

    fn copy_data(&mut self, c: &CopyData) -> Result<(), String> {
        self.flush()?;
        c.apply(&Guest(&ProcessMemory), gpu_clock())
    }

    fn sync_memory(&mut self) -> Result<(), String> {
        self.flush()
    }

    fn end_submission(&mut self) -> Result<(), String> {
        self.on_executor(|b| b.end_submission())
    }

    fn acquire_mem(&mut self, a: &aps5_agc::AcquireMem) -> Result<(), String> {
        self.on_executor(|b| b.acquire_mem(a))
    }
}

/// `SceAgcSubmitPacket`: {words, word count, flags}.
#[repr(C)]
pub struct SubmitPacket {
    pub words: *const u32,
    pub count: u32,
    pub flags: u8,
    pub pad: [u8; 3],
}

/// `sceAgcDriverSubmitDcb(packet)`: queues a draw command buffer on the graphics queue.
#[nid("sceAgcDriverSubmitDcb")]
pub unsafe extern "C" fn sce_agc_driver_submit_dcb(p: *const SubmitPacket) -> i32 {
    if p.is_null() {
        return AGC_ERROR_INVALID;
    }
    // SAFETY: the guest's packet.
    let p = unsafe { &*p };
    submit(GRAPHICS_QUEUE, p.words as u64, p.count)
}

/// `sceAgcDriverSubmitMultiDcbs(addresses, sizes_in_dwords, count)`: queues `count` draw
/// command buffers on the graphics queue, in order (each as one submission; the graphics
/// queue's registers carry over from one to the next as on the ring).
#[nid("sceAgcDriverSubmitMultiDcbs")]
pub unsafe extern "C" fn sce_agc_driver_submit_multi_dcbs(
    addrs: *const *const u32,
    sizes: *const u32,
    count: u32,
) -> i32 {
    if count == 0 {
        return 0;
    }
    if addrs.is_null() || sizes.is_null() {
        return AGC_ERROR_INVALID;
    }
    for i in 0..count as usize {
        // SAFETY: the guest's arrays of `count` entries.
        let (a, n) = unsafe { (addrs.add(i).read_unaligned(), sizes.add(i).read_unaligned()) };
        let r = submit(GRAPHICS_QUEUE, a as u64, n);
        if r != 0 {
            return r;
        }
    }
    0
}

/// `sceAgcDriverSubmitAcb(queue, packet)`: queues a compute command buffer on queue `queue`.
#[nid("sceAgcDriverSubmitAcb")]
pub unsafe extern "C" fn sce_agc_driver_submit_acb(queue: u32, p: *const SubmitPacket) -> i32 {
    if p.is_null() || !is_compute_queue(queue) {
        return AGC_ERROR_INVALID;
    }
    // SAFETY: the guest's packet.
    let p = unsafe { &*p };
    submit(queue, p.words as u64, p.count)
}

/// `sceAgcDriverAddEqEvent(eq, id, udata)`: end-of-pipe interrupts of queue `id` (0x40
/// graphics, 0x20.. compute) trigger (id, EVFILT_GRAPHICS) on `eq`, data = the interrupt's
/// context id.
#[nid("sceAgcDriverAddEqEvent")]
pub extern "C" fn sce_agc_driver_add_eq_event(eq: *mut c_void, id: i32, udata: *mut c_void) -> i32 {
    let id = id as u32;
    if eq.is_null() || !(id == EQ_GRAPHICS_EOP || is_compute_queue(id)) {
        return AGC_ERROR_INVALID;
    }
    let r = kernel::equeue_add(eq as u64, u64::from(id), EVFILT_GRAPHICS, udata as u64);
    if r != 0 {
        return r;
    }
    let mut s = state();
    s.events.retain(|&(q, ev, _)| !(q == eq as u64 && ev == id));
    s.events.push((eq as u64, id, udata as u64));
    0
}

/// `sceAgcDriverDeleteEqEvent(eq, id)`: no more triggers for the registration (libkernel's
/// hook has no removal; the registration there stays, never triggered again).
#[nid("sceAgcDriverDeleteEqEvent")]
pub extern "C" fn sce_agc_driver_delete_eq_event(eq: *mut c_void, id: i32) -> i32 {
    let mut s = state();
    let before = s.events.len();
    s.events
        .retain(|&(q, ev, _)| !(q == eq as u64 && ev == id as u32));
    if s.events.len() == before {
        AGC_ERROR_INVALID
    } else {
        0
    }
}
