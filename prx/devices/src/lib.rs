//! Host PRX `libSceDevices.prx`: the PS4 device libraries a CPU-drawn homebrew needs, in a
//! window with host sound when the machine has them, headless otherwise.
//!
//! - `libSceVideoOut` ([`video`]): display buffers in guest (direct) memory; every flip is
//!   shown in an X11 window ([`window`]) when a display is available, written as a PNG to
//!   `$APS5_FRAMES_DIR/frame-NNNNN.png`, paced at the flip rate, and `APS5_MAX_FRAMES=N`
//!   (or closing the window) ends the process with exit status 0. Flip events are posted
//!   to libkernel's event queues through its `__aps5_equeue_*` hooks.
//! - `libScePad` ([`pad`]): one connected pad whose buttons follow the script in
//!   `$APS5_INPUT_SCRIPT` (indexed by VideoOut's flip counter) and the window's keys
//!   ([`keymap`]).
//! - `libSceKeyboard` ([`keyboard`]): one USB keyboard whose keys follow the `key:` /
//!   `text:` lines of the same script and the host's key events ([`keyboard::push_host_key`]).
//! - `libSceUserService`, `libSceSysmodule` ([`system`]): one logged-in user, module
//!   loads that succeed for known module ids.
//! - `libSceSystemService` ([`system_service`]): system settings from the host locale and
//!   clock, no system UI and no system events.
//! - `libSceAudioOut` ([`audio`]): ports whose `Output` blocks for the buffer's duration;
//!   samples go to the host's ALSA output ([`host_audio`]) and to `$APS5_AUDIO_WAV`.
//!
//! See docs/HOMEBREW.md.

// The exported functions are called by guest code with raw pointers; their safety contract
// is the C one documented by the PS4 SDK.
#![allow(clippy::missing_safety_doc)]

// libgcc_s.so.1 bound at first use, not at start-up (aps5_prx_abi::libgcc_s).
aps5_prx_abi::lazy_libgcc_s!();

pub mod audio;
pub mod host_audio;
pub mod input;
pub mod kernel;
pub mod keyboard;
pub mod keymap;
pub mod pad;
pub mod system;
pub mod system_service;
pub mod video;
pub mod window;

/// Writes a diagnostic straight to the host stderr.
pub(crate) fn diag(msg: &str) {
    let line = format!("aps5: {msg}\n");
    unsafe {
        libc::write(2, line.as_ptr().cast(), line.len());
    }
}
