//! Flips from the command stream: Sony's flip driver command (`sceAgcDcbSetFlip`, NOP code
//! 0x17) and wait-until-safe-for-rendering (NOP code 0x06), handed to libSceVideoOut
//! (`libSceDevices.prx`), which owns the display buffers, the window / PNG frames, flip
//! events and flip status. Its exports are found by NID in the loader's global scope at first
//! use, like libkernel's hooks ([`crate::kernel`]).
//!
//! Execution is synchronous: when the command processor reaches the flip, every draw before
//! it has been written back to guest memory, so `sceVideoOutSubmitFlip` shows the finished
//! frame, paces it at the flip rate and triggers the flip events before the GPU goes on
//! with the packets after it (which may render into the next buffer). Flips are therefore
//! never pending, and a wait for a flip only checks the port.

use std::ffi::CString;
use std::sync::OnceLock;

use aps5_agc::{Flip, WaitFlip};
use aps5_gpu::Display;

use crate::builders::{CommandBuffer, emit, pkt3};

/// PM4 NOP; Sony's driver commands ride in it with their code in header bits 7:2.
pub const IT_NOP: u32 = 0x10;
/// Sony's driver command: flip (6 dwords).
pub const SONY_FLIP: u32 = 0x17;
/// Sony's driver command: wait until a display buffer is safe to render into (4 dwords).
pub const SONY_WAIT_FLIP_DONE: u32 = 0x06;

fn sym(nid: &str) -> usize {
    let name = CString::new(nid).expect("a NID has no NUL");
    // SAFETY: dlsym with a NUL-terminated name.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) as usize }
}

type SubmitFlip = extern "C-unwind" fn(i32, i32, i32, i64) -> i32;
type IsFlipPending = extern "C" fn(i32) -> i32;

fn submit_flip() -> Option<SubmitFlip> {
    static F: OnceLock<usize> = OnceLock::new();
    let f = *F.get_or_init(|| sym(aps5_prx_macros::nid_str!("sceVideoOutSubmitFlip")));
    // SAFETY: the NID names libSceVideoOut's export with this signature.
    (f != 0).then(|| unsafe { std::mem::transmute::<usize, SubmitFlip>(f) })
}

fn is_flip_pending() -> Option<IsFlipPending> {
    static F: OnceLock<usize> = OnceLock::new();
    let f = *F.get_or_init(|| sym(aps5_prx_macros::nid_str!("sceVideoOutIsFlipPending")));
    // SAFETY: as above.
    (f != 0).then(|| unsafe { std::mem::transmute::<usize, IsFlipPending>(f) })
}

const NO_VIDEO_OUT: &str =
    "libSceVideoOut is not loaded (the program imports nothing from it, so no port is open)";

/// The display of a ported program: libSceVideoOut.
pub struct VideoOut;

impl Display for VideoOut {
    fn flip(&mut self, f: &Flip) -> Result<(), String> {
        let submit = submit_flip().ok_or(NO_VIDEO_OUT)?;
        let r = submit(
            f.video_out_handle as i32,
            f.buffer_index,
            f.flip_mode as i32,
            f.flip_arg as i64,
        );
        if r < 0 {
            return Err(format!(
                "flip of display buffer {} on video out handle {} (mode {}, argument {:#x}): \
                 sceVideoOutSubmitFlip returned {:#x}",
                f.buffer_index, f.video_out_handle, f.flip_mode, f.flip_arg, r as u32
            ));
        }
        Ok(())
    }

    fn wait_flip(&mut self, w: &WaitFlip) -> Result<(), String> {
        let pending = is_flip_pending().ok_or(NO_VIDEO_OUT)?;
        let r = pending(w.video_out_handle as i32);
        if r < 0 {
            return Err(format!(
                "wait until display buffer {} of video out handle {} is safe for rendering: \
                 sceVideoOutIsFlipPending returned {:#x}",
                w.buffer_index, w.video_out_handle, r as u32
            ));
        }
        // Flips are done when submitted (module comment): nothing is pending.
        Ok(())
    }
}

/// The flip driver command: {handle, buffer index, flip mode, flip argument lo, hi}.
pub fn flip_packet(handle: u32, index: i32, mode: u32, arg: i64) -> [u32; 6] {
    [
        pkt3(IT_NOP, 6) | (SONY_FLIP << 2),
        handle,
        index as u32,
        mode,
        arg as u32,
        (arg as u64 >> 32) as u32,
    ]
}

/// The wait-for-flip driver command in its 4-dword form: {handle, buffer index, mode}.
pub fn wait_flip_packet(handle: u32, index: i32, mode: u32) -> [u32; 4] {
    [
        pkt3(IT_NOP, 4) | (SONY_WAIT_FLIP_DONE << 2),
        handle,
        index as u32,
        mode,
    ]
}

/// `sceAgcDcbSetFlip(cb, videoOutHandle, displayBufferIndex, flipMode, flipArg)`: Sony's flip
/// command (6 dwords). When the GPU reaches it the buffer is flipped (module comment).
#[aps5_prx_macros::nid("sceAgcDcbSetFlip")]
pub unsafe extern "C" fn sce_agc_dcb_set_flip(
    cb: *mut CommandBuffer,
    handle: u32,
    index: i32,
    mode: u32,
    arg: i64,
) -> *mut u32 {
    // SAFETY: the caller's `SceAgcCb`.
    unsafe { emit(cb, &flip_packet(handle, index, mode, arg)) }
}

/// `sceAgcDriverGetWaitRenderingPacketSizeInDwords()`: 4.
#[aps5_prx_macros::nid("sceAgcDriverGetWaitRenderingPacketSizeInDwords")]
pub extern "C" fn sce_agc_driver_get_wait_rendering_packet_size_in_dwords() -> u32 {
    4
}

/// `sceAgcDriverWaitUntilSafeForRendering(u32 **cursor, capacity_dwords, mode, handle,
/// index)`: writes the 4-dword wait-for-flip command at `*cursor` and advances it; 0, or
/// an error for a NULL cursor or too little room.
#[aps5_prx_macros::nid("sceAgcDriverWaitUntilSafeForRendering")]
pub unsafe extern "C" fn sce_agc_driver_wait_until_safe_for_rendering(
    cursor: *mut *mut u32,
    capacity: u32,
    mode: u32,
    handle: u32,
    index: i32,
) -> i32 {
    if cursor.is_null() || capacity < 4 || index < 0 {
        return crate::driver::AGC_ERROR_INVALID;
    }
    // SAFETY: the caller's cursor, with room for `capacity` dwords (checked >= 4).
    unsafe {
        let p = *cursor;
        if p.is_null() {
            return crate::driver::AGC_ERROR_INVALID;
        }
        let w = wait_flip_packet(handle, index, mode);
        std::ptr::copy_nonoverlapping(w.as_ptr(), p, w.len());
        *cursor = p.add(w.len());
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_processor_decodes_the_flip_commands_we_write() {
        use aps5_agc::packet::{Header, Packet, SonyCommand, decode};
        let f = flip_packet(1, 2, 1, -5);
        match decode(Header(f[0]), &f[1..]).expect("decodes") {
            Packet::Sony(SonyCommand::Flip(x)) => {
                assert_eq!(
                    (x.video_out_handle, x.buffer_index, x.flip_mode, x.flip_arg),
                    (1, 2, 1, -5i64 as u64)
                );
            }
            p => panic!("{p:?}"),
        }
        let w = wait_flip_packet(1, 3, 0);
        match decode(Header(w[0]), &w[1..]).expect("decodes") {
            Packet::Sony(SonyCommand::WaitFlipDone(w)) => {
                assert_eq!((w.video_out_handle, w.buffer_index), (1, 3));
            }
            p => panic!("{p:?}"),
        }
    }
}
