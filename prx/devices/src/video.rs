//! `libSceVideoOut` for CPU-drawn frames.
//!
//! Display buffers live in guest memory (direct memory mapped by the guest); a flip makes
//! the named buffer the displayed one. Every flip is shown in the window when there is one
//! ([`crate::window`]) and written as a PNG to `$APS5_FRAMES_DIR/frame-NNNNN.png` (NNNNN
//! counts flips from 0) when that variable is set; `APS5_MAX_FRAMES=N` ends the process
//! with status 0 after the N-th flip, and so does closing the window. `APS5_FLIP_TIMES=1`
//! prints `aps5: videoout: flip N done at CLOCK_MONOTONIC T ns` on stderr once each flip is
//! written and shown: the clock is the machine's, so another process (`cargo xtask bench
//! ttff`) can measure from its own clock reading to the first frame.
//!
//! A flip is carried out inside `sceVideoOutSubmitFlip` at the next vblank of the flip
//! rate (60, 30 or 20 Hz, paced on the host monotonic clock); so when it returns the flip
//! is done, the flip status shows it and the flip events are triggered. This is
//! stricter than the console (where the call queues the flip) and never lets a guest draw
//! into a buffer that is still pending.

use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use aps5_prx_macros::nid;

use crate::{diag, kernel, window};

/// `SCE_VIDEO_OUT_ERROR_INVALID_VALUE`.
pub const ERROR_INVALID_VALUE: i32 = 0x8029_0001_u32 as i32;
/// `SCE_VIDEO_OUT_ERROR_INVALID_ADDRESS`.
pub const ERROR_INVALID_ADDRESS: i32 = 0x8029_0002_u32 as i32;
/// `SCE_VIDEO_OUT_ERROR_INVALID_PIXEL_FORMAT`.
pub const ERROR_INVALID_PIXEL_FORMAT: i32 = 0x8029_0003_u32 as i32;
/// `SCE_VIDEO_OUT_ERROR_INVALID_PITCH`.
pub const ERROR_INVALID_PITCH: i32 = 0x8029_0004_u32 as i32;
/// `SCE_VIDEO_OUT_ERROR_INVALID_TILING_MODE`.
pub const ERROR_INVALID_TILING_MODE: i32 = 0x8029_0007_u32 as i32;
/// `SCE_VIDEO_OUT_ERROR_INVALID_HANDLE`.
pub const ERROR_INVALID_HANDLE: i32 = 0x8029_000B_u32 as i32;

/// 32-bit BGRA in memory (`A8R8G8B8_SRGB`, the value OpenOrbis samples pass).
pub const PIXEL_FORMAT_A8R8G8B8_SRGB: u32 = 0x8000_0000;
/// 32-bit RGBA in memory (`A8B8G8R8_SRGB`).
pub const PIXEL_FORMAT_A8B8G8R8_SRGB: u32 = 0x8000_2200;
/// `SCE_VIDEO_OUT_TILING_MODE_TILE`.
pub const TILING_MODE_TILE: u32 = 0;
/// `SCE_VIDEO_OUT_TILING_MODE_LINEAR`.
pub const TILING_MODE_LINEAR: u32 = 1;
/// Event id of flip events (`SCE_VIDEO_OUT_EVENT_FLIP`).
pub const EVENT_FLIP: u64 = 6;
/// Event id of vblank events (`SCE_VIDEO_OUT_EVENT_VBLANK`).
pub const EVENT_VBLANK: u64 = 7;
/// `SCE_KERNEL_EVFILT_VIDEO_OUT`.
pub const EVFILT_VIDEO_OUT: i16 = -13;

/// The one video out handle (the main bus).
const HANDLE: i32 = 1;
/// Display buffer slots per port.
const SLOTS: usize = 16;
/// One vblank at 60 Hz.
const VBLANK: Duration = Duration::from_nanos(1_000_000_000 / 60);

/// `SceVideoOutBufferAttribute` (40 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferAttribute {
    /// Pixel format (`PIXEL_FORMAT_*`).
    pub format: u32,
    /// Tiling mode (`TILING_MODE_*`).
    pub tmode: u32,
    /// Aspect ratio (0: 16:9).
    pub aspect: u32,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Row pitch in pixels.
    pub pitch: u32,
    /// Reserved.
    pub reserved: [u64; 2],
}

/// `SceVideoOutFlipStatus` (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlipStatus {
    /// Flips done so far.
    pub count: u64,
    /// Process time of the last flip (microseconds).
    pub process_time: u64,
    /// Time stamp counter of the last flip (nanoseconds here).
    pub tsc: u64,
    /// `flipArg` of the last flip.
    pub flip_arg: i64,
    /// Reserved.
    pub reserved: [u64; 2],
    /// Flips submitted by the GPU and not done.
    pub gc_queue_num: i32,
    /// Flips submitted and not done.
    pub flip_pending_num: i32,
    /// Buffer index displayed (-1: none).
    pub current_buffer: i32,
    /// Reserved.
    pub reserved1: u32,
}

#[derive(Clone, Copy)]
struct Buffer {
    addr: usize,
    attr: BufferAttribute,
}

struct Port {
    rate: u32,
    buffers: [Option<Buffer>; SLOTS],
    sets: i32,
    flip_events: Vec<(u64, u64)>,
    vblank_events: Vec<(u64, u64)>,
    status: FlipStatus,
    last_flip: Option<Instant>,
    opened: Instant,
}

static PORT: Mutex<Option<Port>> = Mutex::new(None);

/// Set after the first frame that could not be written.
static WRITE_FAILED: AtomicBool = AtomicBool::new(false);

pub use crate::input::{FLIPS, flip_count};

struct Config {
    frames_dir: Option<PathBuf>,
    max_frames: Option<u64>,
    flip_times: bool,
}

/// CLOCK_MONOTONIC in nanoseconds (one clock for every process of the machine).
fn monotonic_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// The headless settings; a bad one stops the program (exit status 2) with a message.
/// The exit happens outside the `OnceLock` initialisation, so `atexit` handlers that
/// reach this library again do not deadlock.
fn config() -> &'static Config {
    static C: OnceLock<Result<Config, String>> = OnceLock::new();
    match C.get_or_init(read_config) {
        Ok(c) => c,
        Err(e) => {
            diag(e);
            kernel::exit(2)
        }
    }
}

fn read_config() -> Result<Config, String> {
    let frames_dir = std::env::var_os("APS5_FRAMES_DIR").map(PathBuf::from);
    if let Some(d) = &frames_dir
        && let Err(e) = std::fs::create_dir_all(d)
    {
        return Err(format!(
            "APS5_FRAMES_DIR {}: cannot create it ({e}); set it to a writable folder",
            d.display()
        ));
    }
    let max_frames = match std::env::var("APS5_MAX_FRAMES") {
        Err(_) => None,
        Ok(s) => match s.trim().parse::<u64>() {
            Ok(n) if n > 0 => Some(n),
            _ => {
                return Err(format!(
                    "APS5_MAX_FRAMES={s:?} is not a positive number of frames"
                ));
            }
        },
    };
    Ok(Config {
        frames_dir,
        max_frames,
        flip_times: std::env::var_os("APS5_FLIP_TIMES").is_some_and(|v| v == "1"),
    })
}

fn with_port<R>(handle: i32, f: impl FnOnce(&mut Port) -> R) -> Result<R, i32> {
    let mut g = PORT.lock().unwrap_or_else(|e| e.into_inner());
    match g.as_mut() {
        Some(p) if handle == HANDLE => Ok(f(p)),
        _ => Err(ERROR_INVALID_HANDLE),
    }
}

/// `sceVideoOutOpen(userId, busType, index, param)`: the main bus (0) only.
#[nid("sceVideoOutOpen")]
pub extern "C" fn sce_video_out_open(_user: i32, bus: i32, index: i32, _param: usize) -> i32 {
    if bus != 0 || index != 0 {
        return ERROR_INVALID_VALUE;
    }
    config();
    window::open();
    *PORT.lock().unwrap_or_else(|e| e.into_inner()) = Some(Port {
        rate: 0,
        buffers: [None; SLOTS],
        sets: 0,
        flip_events: Vec::new(),
        vblank_events: Vec::new(),
        status: FlipStatus {
            current_buffer: -1,
            ..FlipStatus::default()
        },
        last_flip: None,
        opened: Instant::now(),
    });
    HANDLE
}

/// `sceVideoOutClose(handle)`.
#[nid("sceVideoOutClose")]
pub extern "C" fn sce_video_out_close(handle: i32) -> i32 {
    let mut g = PORT.lock().unwrap_or_else(|e| e.into_inner());
    if handle != HANDLE || g.is_none() {
        return ERROR_INVALID_HANDLE;
    }
    *g = None;
    0
}

/// `sceVideoOutSetBufferAttribute(attr, pixelFormat, tilingMode, aspectRatio, width,
/// height, pitchInPixel)`.
#[nid("sceVideoOutSetBufferAttribute")]
pub unsafe extern "C" fn sce_video_out_set_buffer_attribute(
    attr: *mut BufferAttribute,
    format: u32,
    tmode: u32,
    aspect: u32,
    width: u32,
    height: u32,
    pitch: u32,
) {
    if attr.is_null() {
        return;
    }
    let a = BufferAttribute {
        format,
        tmode,
        aspect,
        width,
        height,
        pitch,
        reserved: [0; 2],
    };
    unsafe { attr.write_unaligned(a) };
}

/// Checks an attribute before buffers are registered with it.
pub fn validate(a: &BufferAttribute) -> Result<(), i32> {
    if !matches!(
        a.format,
        PIXEL_FORMAT_A8R8G8B8_SRGB | PIXEL_FORMAT_A8B8G8R8_SRGB
    ) {
        diag(&format!(
            "sceVideoOutRegisterBuffers: pixel format {:#x} is not supported (only 32-bit \
             A8R8G8B8/A8B8G8R8 sRGB)",
            a.format
        ));
        return Err(ERROR_INVALID_PIXEL_FORMAT);
    }
    if a.tmode > TILING_MODE_LINEAR {
        return Err(ERROR_INVALID_TILING_MODE);
    }
    if a.width == 0 || a.height == 0 || a.width > 7680 || a.height > 4320 {
        return Err(ERROR_INVALID_VALUE);
    }
    if a.pitch < a.width {
        return Err(ERROR_INVALID_PITCH);
    }
    Ok(())
}

/// `sceVideoOutRegisterBuffers(handle, startIndex, addresses, bufferNum, attr)`: returns
/// the new buffer set's index.
#[nid("sceVideoOutRegisterBuffers")]
pub unsafe extern "C" fn sce_video_out_register_buffers(
    handle: i32,
    start: i32,
    addrs: *const usize,
    num: i32,
    attr: *const BufferAttribute,
) -> i32 {
    if addrs.is_null() || attr.is_null() {
        return ERROR_INVALID_ADDRESS;
    }
    if start < 0 || num <= 0 || (start + num) as usize > SLOTS {
        return ERROR_INVALID_VALUE;
    }
    let attr = unsafe { attr.read_unaligned() };
    let list: Vec<usize> = (0..num as usize)
        .map(|i| unsafe { addrs.add(i).read_unaligned() })
        .collect();
    register(handle, start, &list, &attr)
}

/// `SCE_VIDEO_OUT_PIXEL_FORMAT2_B8_G8_R8_A8_SRGB` (PS5, 64-bit formats): bytes B, G, R, A.
pub const PIXEL_FORMAT2_B8G8R8A8_SRGB: u64 = 0x8000_0000_0000_0000;
/// `SCE_VIDEO_OUT_PIXEL_FORMAT2_R8_G8_B8_A8_SRGB`: bytes R, G, B, A.
pub const PIXEL_FORMAT2_R8G8B8A8_SRGB: u64 = 0x8000_0000_2200_0000;

/// `SceVideoOutBufferAttribute2` (80 bytes). Programs treat it as opaque (they fill it with
/// `sceVideoOutSetBufferAttribute2` and pass it back); this layout is ours.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferAttribute2 {
    /// `PIXEL_FORMAT2_*`.
    pub format: u64,
    /// Tiling mode (`TILING_MODE_*`).
    pub tmode: u32,
    /// Width in pixels (the pitch too: the PS5 attribute has none).
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// DCC control (0: none).
    pub dcc_control: u32,
    /// Option flags.
    pub option: u64,
    /// DCC clear colour.
    pub dcc_clear_color: u64,
    /// Reserved.
    pub reserved: [u64; 5],
}

/// `SceVideoOutBuffers` (32 bytes): one display buffer of `sceVideoOutRegisterBuffers2`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Buffers {
    /// The pixels.
    pub data: usize,
    /// DCC metadata (unused: DCC is refused).
    pub metadata: usize,
    /// Reserved.
    pub reserved: [usize; 2],
}

/// `sceVideoOutSetBufferAttribute2(attr, pixelFormat, tilingMode, width, height, option,
/// dccControl, dccClearColor)` (PS5).
#[nid("sceVideoOutSetBufferAttribute2")]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn sce_video_out_set_buffer_attribute2(
    attr: *mut BufferAttribute2,
    format: u64,
    tmode: u32,
    width: u32,
    height: u32,
    option: u64,
    dcc_control: u32,
    dcc_clear_color: u64,
) {
    if attr.is_null() {
        return;
    }
    let a = BufferAttribute2 {
        format,
        tmode,
        width,
        height,
        dcc_control,
        option,
        dcc_clear_color,
        reserved: [0; 5],
    };
    unsafe { attr.write_unaligned(a) };
}

/// The PS4-style attribute a PS5 one amounts to (pitch = width).
pub fn attribute_of(a: &BufferAttribute2) -> Result<BufferAttribute, i32> {
    let format = match a.format {
        PIXEL_FORMAT2_B8G8R8A8_SRGB => PIXEL_FORMAT_A8R8G8B8_SRGB,
        PIXEL_FORMAT2_R8G8B8A8_SRGB => PIXEL_FORMAT_A8B8G8R8_SRGB,
        f => {
            diag(&format!(
                "sceVideoOutRegisterBuffers2: pixel format {f:#x} is not supported (only \
                 B8G8R8A8/R8G8B8A8 sRGB)"
            ));
            return Err(ERROR_INVALID_PIXEL_FORMAT);
        }
    };
    if a.dcc_control != 0 {
        diag("sceVideoOutRegisterBuffers2: DCC-compressed display buffers are not supported");
        return Err(ERROR_INVALID_VALUE);
    }
    Ok(BufferAttribute {
        format,
        tmode: a.tmode,
        aspect: 0,
        width: a.width,
        height: a.height,
        pitch: a.width,
        reserved: [0; 2],
    })
}

/// `sceVideoOutRegisterBuffers2(handle, setIndex, bufferIndexStart, buffers, bufferNum,
/// attr, category, option)` (PS5): registers `bufferNum` buffers from slot
/// `bufferIndexStart`; returns 0. Only uncompressed buffers (category 0).
#[nid("sceVideoOutRegisterBuffers2")]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn sce_video_out_register_buffers2(
    handle: i32,
    set: i32,
    start: i32,
    buffers: *const Buffers,
    num: i32,
    attr: *const BufferAttribute2,
    category: i32,
    _option: usize,
) -> i32 {
    if buffers.is_null() || attr.is_null() {
        return ERROR_INVALID_ADDRESS;
    }
    if set < 0 || start < 0 || num <= 0 || (start + num) as usize > SLOTS || category != 0 {
        return ERROR_INVALID_VALUE;
    }
    let attr = match attribute_of(&unsafe { attr.read_unaligned() }) {
        Ok(a) => a,
        Err(e) => return e,
    };
    let list: Vec<usize> = (0..num as usize)
        .map(|i| unsafe { buffers.add(i).read_unaligned().data })
        .collect();
    match register(handle, start, &list, &attr) {
        r if r < 0 => r,
        _ => 0,
    }
}

/// Checks and registers display buffers from slot `start`; the new set's index.
fn register(handle: i32, start: i32, list: &[usize], attr: &BufferAttribute) -> i32 {
    if let Err(e) = validate(attr) {
        return e;
    }
    if attr.tmode == TILING_MODE_TILE {
        diag(
            "sceVideoOutRegisterBuffers: tiled display buffers are read as linear (the \
             display tiling is not implemented); frames may look scrambled",
        );
    }
    if list.contains(&0) {
        return ERROR_INVALID_ADDRESS;
    }
    with_port(handle, |p| {
        for (i, &addr) in list.iter().enumerate() {
            p.buffers[start as usize + i] = Some(Buffer { addr, attr: *attr });
        }
        p.sets += 1;
        p.sets - 1
    })
    .unwrap_or_else(|e| e)
}

/// `sceVideoOutUnregisterBuffers(handle, setIndex)`: forgets every registered buffer.
#[nid("sceVideoOutUnregisterBuffers")]
pub extern "C" fn sce_video_out_unregister_buffers(handle: i32, _set: i32) -> i32 {
    with_port(handle, |p| p.buffers = [None; SLOTS])
        .map(|()| 0)
        .unwrap_or_else(|e| e)
}

/// `sceVideoOutSetFlipRate(handle, rate)`: 0 = 60 Hz, 1 = 30 Hz, 2 = 20 Hz.
#[nid("sceVideoOutSetFlipRate")]
pub extern "C" fn sce_video_out_set_flip_rate(handle: i32, rate: i32) -> i32 {
    if !(0..=2).contains(&rate) {
        return ERROR_INVALID_VALUE;
    }
    with_port(handle, |p| p.rate = rate as u32)
        .map(|()| 0)
        .unwrap_or_else(|e| e)
}

/// `sceVideoOutAddFlipEvent(equeue, handle, udata)`.
#[nid("sceVideoOutAddFlipEvent")]
pub extern "C" fn sce_video_out_add_flip_event(eq: u64, handle: i32, udata: u64) -> i32 {
    let r = kernel::equeue_add(eq, EVENT_FLIP, EVFILT_VIDEO_OUT, udata);
    if r != 0 {
        return r;
    }
    with_port(handle, |p| p.flip_events.push((eq, udata)))
        .map(|()| 0)
        .unwrap_or_else(|e| e)
}

/// `sceVideoOutDeleteFlipEvent(equeue, handle)`: stops posting flips to that queue (call
/// it before deleting the queue).
#[nid("sceVideoOutDeleteFlipEvent")]
pub extern "C" fn sce_video_out_delete_flip_event(eq: u64, handle: i32) -> i32 {
    with_port(handle, |p| {
        let before = p.flip_events.len();
        p.flip_events.retain(|&(q, _)| q != eq);
        p.flip_events.len() != before
    })
    .map(|found| if found { 0 } else { ERROR_INVALID_VALUE })
    .unwrap_or_else(|e| e)
}

/// `sceVideoOutAddVblankEvent(equeue, handle, udata)`: triggered at every flip (the only
/// vblanks a headless display has).
#[nid("sceVideoOutAddVblankEvent")]
pub extern "C" fn sce_video_out_add_vblank_event(eq: u64, handle: i32, udata: u64) -> i32 {
    let r = kernel::equeue_add(eq, EVENT_VBLANK, EVFILT_VIDEO_OUT, udata);
    if r != 0 {
        return r;
    }
    with_port(handle, |p| p.vblank_events.push((eq, udata)))
        .map(|()| 0)
        .unwrap_or_else(|e| e)
}

/// `sceVideoOutSubmitFlip(handle, bufferIndex, flipMode, flipArg)`: index -1 (blank) or
/// -2 (black) shows a black 1920x1080 frame.
#[nid("sceVideoOutSubmitFlip")]
pub extern "C-unwind" fn sce_video_out_submit_flip(
    handle: i32,
    index: i32,
    _mode: i32,
    flip_arg: i64,
) -> i32 {
    // The GPU queues run beside the CPU: a flip from the CPU shows the buffer once the work
    // submitted before it has run (a flip from the command stream comes here on the queue's
    // own thread, in order, and does not wait).
    crate::kernel::gpu_wait_idle();
    let mut g = PORT.lock().unwrap_or_else(|e| e.into_inner());
    let Some(p) = g.as_mut().filter(|_| handle == HANDLE) else {
        return ERROR_INVALID_HANDLE;
    };
    let buffer = match index {
        // SCE_VIDEO_OUT_BUFFER_INDEX_BLANK / _BLACK: nothing is shown.
        -1 | -2 => None,
        0.. if (index as usize) < SLOTS => match p.buffers[index as usize] {
            Some(b) => Some(b),
            None => return ERROR_INVALID_VALUE,
        },
        _ => return ERROR_INVALID_VALUE,
    };
    // Pace: the flip happens at the next vblank of the flip rate after the previous one.
    let period = VBLANK * (p.rate + 1);
    if let Some(last) = p.last_flip {
        let due = last + period;
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
    }
    let n = p.status.count;
    if let Some(dir) = &config().frames_dir {
        let path = dir.join(format!("frame-{n:05}.png"));
        if let Err(e) = write_png(&path, buffer.as_ref())
            && !WRITE_FAILED.swap(true, Ordering::Relaxed)
        {
            // Once: a full disk would otherwise print a line per frame.
            diag(&format!(
                "{}: cannot write the frame: {e} (later failures are not reported)",
                path.display()
            ));
        }
    }
    if window::open() {
        window::present(frame(buffer.as_ref()));
    }
    if config().flip_times {
        eprintln!(
            "aps5: videoout: flip {n} done at CLOCK_MONOTONIC {} ns",
            monotonic_ns()
        );
    }
    let now = Instant::now();
    p.last_flip = Some(now);
    p.status.count = n + 1;
    p.status.process_time = now.duration_since(p.opened).as_micros() as u64;
    p.status.tsc = now.duration_since(p.opened).as_nanos() as u64;
    p.status.flip_arg = flip_arg;
    p.status.current_buffer = index;
    FLIPS.store(n + 1, Ordering::Release);
    let events: Vec<_> = p
        .flip_events
        .iter()
        .map(|&e| (e, EVENT_FLIP))
        .chain(p.vblank_events.iter().map(|&e| (e, EVENT_VBLANK)))
        .collect();
    drop(g);
    for ((eq, udata), id) in events {
        kernel::equeue_trigger(eq, id, EVFILT_VIDEO_OUT, flip_arg, udata);
    }
    // Closing the window ends the program like APS5_MAX_FRAMES, on the guest's thread.
    if config().max_frames.is_some_and(|m| n + 1 >= m) || window::close_requested() {
        window::exit(0);
    }
    0
}

/// `sceVideoOutGetFlipStatus(handle, status)`.
#[nid("sceVideoOutGetFlipStatus")]
pub unsafe extern "C" fn sce_video_out_get_flip_status(handle: i32, out: *mut FlipStatus) -> i32 {
    if out.is_null() {
        return ERROR_INVALID_ADDRESS;
    }
    match with_port(handle, |p| p.status) {
        Ok(s) => {
            unsafe { out.write_unaligned(s) };
            0
        }
        Err(e) => e,
    }
}

/// `SceVideoOutResolutionStatus` (48 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ResolutionStatus {
    /// Output width in pixels.
    pub full_width: u32,
    /// Output height in pixels.
    pub full_height: u32,
    /// Width of the visible pane.
    pub pane_width: u32,
    /// Height of the visible pane.
    pub pane_height: u32,
    /// `SCE_VIDEO_OUT_REFRESH_RATE_*` (3: 59.94 Hz).
    pub refresh_rate: u64,
    /// Screen size in inches (0: unknown).
    pub screen_size_in_inch: f32,
    /// Flags.
    pub flags: u16,
    /// Reserved.
    pub reserved0: u16,
    /// Reserved.
    pub reserved1: [u32; 3],
}

/// `sceVideoOutGetResolutionStatus(handle, status)`: a 1920x1080 output at 59.94 Hz.
#[nid("sceVideoOutGetResolutionStatus")]
pub unsafe extern "C" fn sce_video_out_get_resolution_status(
    handle: i32,
    out: *mut ResolutionStatus,
) -> i32 {
    if out.is_null() {
        return ERROR_INVALID_ADDRESS;
    }
    if let Err(e) = with_port(handle, |_| ()) {
        return e;
    }
    let s = ResolutionStatus {
        full_width: 1920,
        full_height: 1080,
        pane_width: 1920,
        pane_height: 1080,
        refresh_rate: 3,
        ..ResolutionStatus::default()
    };
    unsafe { out.write_unaligned(s) };
    0
}

/// `sceVideoOutIsFlipPending(handle)`: flips are done when submitted, so never.
#[nid("sceVideoOutIsFlipPending")]
pub extern "C" fn sce_video_out_is_flip_pending(handle: i32) -> i32 {
    with_port(handle, |_| 0).unwrap_or_else(|e| e)
}

/// `sceVideoOutWaitVblank(handle)`: sleeps to the next 60 Hz vblank since the port opened.
#[nid("sceVideoOutWaitVblank")]
pub extern "C-unwind" fn sce_video_out_wait_vblank(handle: i32) -> i32 {
    let Ok(opened) = with_port(handle, |p| p.opened) else {
        return ERROR_INVALID_HANDLE;
    };
    let since = opened.elapsed().as_nanos();
    let v = VBLANK.as_nanos();
    let next = (since / v + 1) * v;
    std::thread::sleep(Duration::from_nanos((next - since) as u64));
    0
}

/// The displayed pixels of a buffer as 8-bit RGB rows (alpha dropped: the display is
/// opaque).
pub fn to_rgb(pixels: &[u8], attr: &BufferAttribute) -> Vec<u8> {
    let (w, h, pitch) = (
        attr.width as usize,
        attr.height as usize,
        attr.pitch as usize,
    );
    let mut rgb = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        let row = &pixels[y * pitch * 4..][..w * 4];
        for px in row.chunks_exact(4) {
            match attr.format {
                PIXEL_FORMAT_A8B8G8R8_SRGB => rgb.extend_from_slice(&px[..3]),
                _ => rgb.extend_from_slice(&[px[2], px[1], px[0]]),
            }
        }
    }
    rgb
}

/// The guest memory of a registered buffer (`pitch` x `height` pixels, the last row
/// `width` long).
fn pixels(b: &Buffer) -> &[u8] {
    let a = &b.attr;
    let len = (a.pitch as usize * (a.height as usize - 1) + a.width as usize) * 4;
    // SAFETY: the guest registered this buffer as pitch*height pixels of its memory.
    unsafe { std::slice::from_raw_parts(b.addr as *const u8, len) }
}

/// A copy of the displayed buffer for the window (black 1920x1080 for none).
fn frame(b: Option<&Buffer>) -> window::Frame {
    let Some(b) = b else {
        return window::Frame {
            width: 1920,
            height: 1080,
            rgba: false,
            pixels: vec![0; 1920 * 1080 * 4],
        };
    };
    let (a, px) = (&b.attr, pixels(b));
    let (w, pitch) = (a.width as usize, a.pitch as usize);
    let mut out = Vec::with_capacity(w * a.height as usize * 4);
    for y in 0..a.height as usize {
        out.extend_from_slice(&px[y * pitch * 4..][..w * 4]);
    }
    window::Frame {
        width: a.width,
        height: a.height,
        rgba: a.format == PIXEL_FORMAT_A8B8G8R8_SRGB,
        pixels: out,
    }
}

/// Writes the displayed buffer (black 1920x1080 for none) as an 8-bit RGB PNG.
fn write_png(path: &std::path::Path, b: Option<&Buffer>) -> Result<(), String> {
    let (w, h, rgb) = match b {
        Some(b) => (b.attr.width, b.attr.height, to_rgb(pixels(b), &b.attr)),
        None => (1920, 1080, vec![0; 1920 * 1080 * 3]),
    };
    let file = std::fs::File::create(path).map_err(|e| e.to_string())?;
    let mut enc = png::Encoder::new(BufWriter::new(file), w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::Fast);
    enc.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
    let mut w = enc.write_header().map_err(|e| e.to_string())?;
    w.write_image_data(&rgb).map_err(|e| e.to_string())?;
    w.finish().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structs_have_the_sdk_sizes() {
        assert_eq!(std::mem::size_of::<BufferAttribute>(), 40);
        assert_eq!(std::mem::size_of::<FlipStatus>(), 64);
        assert_eq!(std::mem::size_of::<ResolutionStatus>(), 48);
        assert_eq!(std::mem::offset_of!(FlipStatus, flip_arg), 24);
        assert_eq!(std::mem::offset_of!(FlipStatus, current_buffer), 56);
        assert_eq!(std::mem::size_of::<BufferAttribute2>(), 80);
        assert_eq!(std::mem::size_of::<Buffers>(), 32);
    }

    #[test]
    fn ps5_attributes_become_ps4_ones_and_bad_ones_are_refused() {
        let mut a = BufferAttribute2::default();
        unsafe {
            sce_video_out_set_buffer_attribute2(
                &mut a,
                PIXEL_FORMAT2_R8G8B8A8_SRGB,
                TILING_MODE_LINEAR,
                256,
                144,
                0,
                0,
                0,
            )
        };
        let b = attribute_of(&a).unwrap();
        assert_eq!(
            (b.format, b.tmode, b.width, b.height, b.pitch),
            (PIXEL_FORMAT_A8B8G8R8_SRGB, 1, 256, 144, 256)
        );
        a.format = PIXEL_FORMAT2_B8G8R8A8_SRGB;
        assert_eq!(attribute_of(&a).unwrap().format, PIXEL_FORMAT_A8R8G8B8_SRGB);
        a.format = 0x8100_0000_0000_0000; // 10-bit
        assert_eq!(attribute_of(&a), Err(ERROR_INVALID_PIXEL_FORMAT));
        a.format = PIXEL_FORMAT2_B8G8R8A8_SRGB;
        a.dcc_control = 1;
        assert_eq!(attribute_of(&a), Err(ERROR_INVALID_VALUE));
    }

    #[test]
    fn bgra_and_rgba_buffers_become_rgb_and_pitch_is_honoured() {
        // 2x2 pixels, pitch 3: the third pixel of each row is padding.
        let px: Vec<u8> = [
            0x8011_2233u32,
            0x8044_5566,
            0xdead_beef,
            0x8077_8899,
            0x80aa_bbcc,
            0xdead_beef,
        ]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
        let mut a = BufferAttribute {
            format: PIXEL_FORMAT_A8R8G8B8_SRGB,
            tmode: TILING_MODE_LINEAR,
            width: 2,
            height: 2,
            pitch: 3,
            ..Default::default()
        };
        assert_eq!(
            to_rgb(&px, &a),
            [
                0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc
            ]
        );
        a.format = PIXEL_FORMAT_A8B8G8R8_SRGB;
        assert_eq!(&to_rgb(&px, &a)[..3], &[0x33, 0x22, 0x11]);
    }

    #[test]
    fn flips_are_paced_at_the_flip_rate_and_reported() {
        let h = sce_video_out_open(0xff, 0, 0, 0);
        assert_eq!(h, HANDLE);
        let mut pixels = vec![0u32; 64 * 8];
        let addrs = [pixels.as_mut_ptr() as usize];
        let mut attr = BufferAttribute::default();
        unsafe {
            sce_video_out_set_buffer_attribute(
                &mut attr,
                PIXEL_FORMAT_A8R8G8B8_SRGB,
                1,
                0,
                64,
                8,
                64,
            );
            assert_eq!(
                sce_video_out_register_buffers(h, 0, addrs.as_ptr(), 1, &attr),
                0
            );
        }
        assert_eq!(sce_video_out_submit_flip(h, 1, 1, 0), ERROR_INVALID_VALUE);
        assert_eq!(sce_video_out_set_flip_rate(h, 3), ERROR_INVALID_VALUE);
        // 20 Hz: four flips span at least three 50 ms periods.
        assert_eq!(sce_video_out_set_flip_rate(h, 2), 0);
        let t = Instant::now();
        for arg in 10..14 {
            assert_eq!(sce_video_out_submit_flip(h, 0, 1, arg), 0);
        }
        assert!(t.elapsed() >= VBLANK * 9, "{:?}", t.elapsed());
        let mut st = FlipStatus::default();
        assert_eq!(unsafe { sce_video_out_get_flip_status(h, &mut st) }, 0);
        assert_eq!((st.count, st.flip_arg, st.current_buffer), (4, 13, 0));
        assert_eq!(flip_count(), 4);
        assert_eq!(sce_video_out_close(h), 0);
        assert_eq!(sce_video_out_submit_flip(h, 0, 1, 0), ERROR_INVALID_HANDLE);
    }

    #[test]
    fn bad_attributes_are_refused() {
        let mut a = BufferAttribute {
            format: 0x8806_0000,
            tmode: 1,
            width: 1920,
            height: 1080,
            pitch: 1920,
            ..Default::default()
        };
        assert_eq!(validate(&a), Err(ERROR_INVALID_PIXEL_FORMAT));
        a.format = PIXEL_FORMAT_A8R8G8B8_SRGB;
        assert_eq!(validate(&a), Ok(()));
        a.pitch = 100;
        assert_eq!(validate(&a), Err(ERROR_INVALID_PITCH));
        a.pitch = 1920;
        a.tmode = 5;
        assert_eq!(validate(&a), Err(ERROR_INVALID_TILING_MODE));
    }
}
