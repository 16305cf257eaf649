//! libSceAgcDriver: submission, end-of-pipe events, and the process's one GPU.
//!
//! Every queue (graphics, and each compute queue id 0x20..0x57) is an `aps5_agc::Queue`
//! with its own registers, kept for the life of the process. A submission runs to its end
//! before the call returns (execution is synchronous); the shaders see the GPU-visible
//! memory of the moment (views of libkernel's direct memory, `aps5_gpu::memory`). A
//! submission that cannot complete (a GPU fault, a packet the processor refuses, a shader
//! that cannot be translated) **stops the run**: the report goes to stderr and the process
//! exits with status 134, as an abort would, through the guest's `exit`, so the output it
//! printed before is kept.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Mutex, MutexGuard};

use aps5_agc::{Queue, QueueKind};
use aps5_gpu::{Executor, GpuBackend, ProcessMemory, ShaderInfo};
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

/// Compute queue ids (GPU.md): 0x20 + 8 * pipe + queue.
pub fn is_compute_queue(id: u32) -> bool {
    (0x20..=0x57).contains(&id)
}

struct State {
    exec: Option<Executor>,
    /// Queue id -> its processor state (created at the first submission).
    queues: Option<HashMap<u32, Queue>>,
    /// (equeue, event id, udata) registrations from sceAgcDriverAddEqEvent.
    events: Vec<(u64, u32, u64)>,
    /// Shaders from sceAgcCreateShader before the GPU was opened.
    pending_shaders: Vec<(u64, ShaderInfo)>,
}

static STATE: Mutex<State> = Mutex::new(State {
    exec: None,
    queues: None,
    events: Vec::new(),
    pending_shaders: Vec::new(),
});

fn state() -> MutexGuard<'static, State> {
    // One lock for the driver: submissions are serialised, as they are on one GPU ring.
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// At exit (the guest's `exit` ends in the host's, which runs `atexit` handlers): the run's
/// counters go to the play records and, with `aps5 run -v`, its statistics to stderr. A run
/// stopped by [`stop`] holds the lock here and has finished the run itself.
extern "C" fn at_exit() {
    if let Ok(mut s) = STATE.try_lock()
        && let Some(e) = s.exec.as_mut()
    {
        e.finish_run();
    }
}

/// Records a program `sceAgcCreateShader` saw.
pub fn register_shader(code: u64, info: ShaderInfo) {
    let mut s = state();
    match &mut s.exec {
        Some(e) => e.register_shader(code, info),
        None => s.pending_shaders.push((code, info)),
    }
}

/// Reports `what` and stops the run (module comment).
fn stop(what: &str) -> ! {
    eprintln!("aps5: libSceAgcDriver: {what}");
    kernel::exit(134)
}

/// Runs one command buffer on queue `id`.
fn submit(id: u32, words: u64, count: u32) -> i32 {
    if count == 0 {
        return 0;
    }
    if words == 0 {
        return AGC_ERROR_INVALID;
    }
    let mut guard = state();
    let s = &mut *guard;
    if s.exec.is_none() {
        let gpu = match aps5_gpu::vulkan::Gpu::new(&aps5_gpu::vulkan::GpuOptions::from_env()) {
            Ok(g) => g,
            Err(e) => stop(&format!("cannot open the GPU: {e}")),
        };
        let mut e = Executor::new(gpu);
        for (code, info) in s.pending_shaders.drain(..) {
            e.register_shader(code, info);
        }
        s.exec = Some(e);
        // SAFETY: registering a plain function with no arguments.
        unsafe { libc::atexit(at_exit) };
    }
    let exec = s.exec.as_mut().expect("opened above");
    let queue = s
        .queues
        .get_or_insert_with(HashMap::new)
        .entry(id)
        .or_insert_with(|| {
            Queue::new(if is_compute_queue(id) {
                QueueKind::Compute
            } else {
                QueueKind::Graphics
            })
        });
    let regions = match aps5_gpu::memory::direct_memory_regions() {
        Ok(r) => r,
        Err(e) => {
            exec.finish_run();
            stop(&format!("cannot read /proc/self/maps: {e}"))
        }
    };
    let mem = ProcessMemory;
    let guest = aps5_gpu::backend::Guest(&mem);
    // An ACB may begin with a descriptor pointing at the real buffer (GPU.md).
    let (words, count) = if is_compute_queue(id) {
        match aps5_agc::resolve_acb(&guest, words, count) {
            Ok(r) => r,
            Err(e) => {
                exec.finish_run();
                stop(&format!("compute queue {id:#x}: the command buffer: {e}"))
            }
        }
    } else {
        (words, count)
    };
    let mut display = crate::video::VideoOut;
    let mut backend = GpuBackend::new(exec, &mem, regions);
    backend.display = Some(&mut display);
    let result = queue.submit(&guest, words, count, &mut backend);
    let interrupts = std::mem::take(&mut backend.interrupts);
    let dispatch_error = backend.error.take();
    if let Err(e) = result {
        let queue_name = if is_compute_queue(id) {
            format!("compute queue {id:#x}")
        } else {
            "graphics queue".to_string()
        };
        let detail = match dispatch_error {
            Some(d) => d.to_string(),
            None => e.reason.clone(),
        };
        exec.finish_run();
        stop(&format!(
            "submission to the {queue_name} stopped at {} (dword {} of the buffer at {:#x}, \
             packet at {:#x}): {detail}",
            e.packet,
            e.offset_dwords,
            e.buffers.first().copied().unwrap_or(words),
            e.address
        ));
    }
    if !interrupts.is_empty() {
        let want = if is_compute_queue(id) {
            id
        } else {
            EQ_GRAPHICS_EOP
        };
        let events: Vec<(u64, u32, u64)> = s
            .events
            .iter()
            .copied()
            .filter(|&(_, ev, _)| ev == want)
            .collect();
        drop(guard);
        for i in interrupts {
            for &(eq, ev, udata) in &events {
                kernel::equeue_trigger(
                    eq,
                    u64::from(ev),
                    EVFILT_GRAPHICS,
                    i64::from(i.context_id),
                    udata,
                );
            }
        }
    }
    0
}

/// `SceAgcSubmitPacket`: {words, word count, flags}.
#[repr(C)]
pub struct SubmitPacket {
    pub words: *const u32,
    pub count: u32,
    pub flags: u8,
    pub pad: [u8; 3],
}

/// `sceAgcDriverSubmitDcb(packet)`: runs a draw command buffer on the graphics queue.
#[nid("sceAgcDriverSubmitDcb")]
pub unsafe extern "C" fn sce_agc_driver_submit_dcb(p: *const SubmitPacket) -> i32 {
    if p.is_null() {
        return AGC_ERROR_INVALID;
    }
    // SAFETY: the guest's packet.
    let p = unsafe { &*p };
    submit(GRAPHICS_QUEUE, p.words as u64, p.count)
}

/// `sceAgcDriverSubmitMultiDcbs(addresses, sizes_in_dwords, count)`: runs `count` draw
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

/// `sceAgcDriverSubmitAcb(queue, packet)`: runs a compute command buffer on queue `queue`.
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
