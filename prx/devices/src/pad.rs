//! `libScePad`: one standard pad, always connected, driven headless by an input script.
//!
//! `APS5_INPUT_SCRIPT` names a text file of lines `FRAME BUTTONS`: from flip number
//! FRAME on (VideoOut's flip counter, 0 before the first flip) the pad holds BUTTONS,
//! until a later line. BUTTONS is `-` (none) or a `,`/`+`-separated list of `up down
//! left right cross circle square triangle l1 r1 l2 r2 l3 r3 options touchpad` or hex
//! masks (`0x4000`). The same file drives the keyboard ([`crate::keyboard`]); the script
//! is parsed in [`crate::input`]. Without the variable no button is ever pressed. See
//! docs/HOMEBREW.md.

use std::sync::Mutex;

use aps5_prx_macros::nid;

use crate::input::{self, script};

/// `SCE_PAD_ERROR_INVALID_ARG`.
pub const ERROR_INVALID_ARG: i32 = 0x8092_0001_u32 as i32;
/// `SCE_PAD_ERROR_INVALID_HANDLE`.
pub const ERROR_INVALID_HANDLE: i32 = 0x8092_0003_u32 as i32;
/// `SCE_PAD_ERROR_NOT_INITIALIZED`.
pub const ERROR_NOT_INITIALIZED: i32 = 0x8092_0005_u32 as i32;
/// `SCE_PAD_ERROR_DEVICE_NO_HANDLE`.
pub const ERROR_DEVICE_NO_HANDLE: i32 = 0x8092_0008_u32 as i32;

const HANDLE: i32 = 1;
/// Button names and their `SCE_PAD_BUTTON_*` bits (one table with the keymap's).
pub use crate::keymap::PAD_BUTTONS as BUTTONS;

pub use crate::input::Script;

/// `ScePadData` (120 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct PadData {
    /// `SCE_PAD_BUTTON_*` bits held.
    pub buttons: u32,
    /// Left stick x, y (0x80 = centre).
    pub left_stick: [u8; 2],
    /// Right stick x, y.
    pub right_stick: [u8; 2],
    /// L2, R2 pressure.
    pub analog_buttons: [u8; 2],
    /// Padding.
    pub padding: u16,
    /// Orientation quaternion x, y, z, w.
    pub orientation: [f32; 4],
    /// Acceleration x, y, z.
    pub acceleration: [f32; 3],
    /// Angular velocity x, y, z.
    pub angular_velocity: [f32; 3],
    /// Touch pad: number of fingers and padding.
    pub touch_fingers: [u8; 4],
    /// Touch pad: reserved.
    pub touch_reserved: u32,
    /// Touch pad points (x: u16, y: u16, id: u8, 3 reserved).
    pub touch: [[u16; 4]; 2],
    /// Connected (1).
    pub connected: u8,
    /// Time stamp (microseconds).
    pub timestamp: u64,
    /// Extension unit data.
    pub ext: [u8; 16],
    /// Connection count.
    pub count: u8,
    /// Reserved.
    pub reserved: [u8; 15],
}

#[derive(Default)]
struct State {
    init: bool,
    open: bool,
}

static STATE: Mutex<State> = Mutex::new(State {
    init: false,
    open: false,
});

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The pad's state now.
pub fn current() -> PadData {
    // The script's buttons and those held through the host's keys (a window's keymap).
    let buttons = script().buttons_at(input::Clock::now()) | input::host_buttons();
    PadData {
        buttons,
        left_stick: [0x80, 0x80],
        right_stick: [0x80, 0x80],
        analog_buttons: [
            if buttons & 0x100 != 0 { 255 } else { 0 },
            if buttons & 0x200 != 0 { 255 } else { 0 },
        ],
        orientation: [0.0, 0.0, 0.0, 1.0],
        connected: 1,
        timestamp: input::now_us(),
        count: 1,
        ..PadData::default()
    }
}

/// `scePadInit()`.
#[nid("scePadInit")]
pub extern "C" fn sce_pad_init() -> i32 {
    script();
    state().init = true;
    0
}

/// `scePadOpen(userId, type, index, param)`: the standard pad of any user.
#[nid("scePadOpen")]
pub extern "C" fn sce_pad_open(_user: i32, kind: i32, index: i32, _param: usize) -> i32 {
    let mut s = state();
    if !s.init {
        return ERROR_NOT_INITIALIZED;
    }
    if kind != 0 || index != 0 {
        return ERROR_INVALID_ARG;
    }
    s.open = true;
    HANDLE
}

/// `scePadGetHandle(userId, type, index)`.
#[nid("scePadGetHandle")]
pub extern "C" fn sce_pad_get_handle(_user: i32, kind: i32, index: i32) -> i32 {
    let s = state();
    if !s.init {
        return ERROR_NOT_INITIALIZED;
    }
    if kind == 0 && index == 0 && s.open {
        HANDLE
    } else {
        ERROR_DEVICE_NO_HANDLE
    }
}

/// `scePadClose(handle)`.
#[nid("scePadClose")]
pub extern "C" fn sce_pad_close(handle: i32) -> i32 {
    let mut s = state();
    if handle != HANDLE || !s.open {
        return ERROR_INVALID_HANDLE;
    }
    s.open = false;
    0
}

fn check(handle: i32) -> Result<(), i32> {
    if handle == HANDLE && state().open {
        Ok(())
    } else {
        Err(ERROR_INVALID_HANDLE)
    }
}

/// `scePadReadState(handle, data)`.
#[nid("scePadReadState")]
pub unsafe extern "C" fn sce_pad_read_state(handle: i32, data: *mut PadData) -> i32 {
    unsafe { input::read_sample(check(handle), data, None, ERROR_INVALID_ARG, current) }
}

/// `scePadRead(handle, data, num)`: one sample (the state now); returns the count.
#[nid("scePadRead")]
pub unsafe extern "C" fn sce_pad_read(handle: i32, data: *mut PadData, num: i32) -> i32 {
    unsafe { input::read_sample(check(handle), data, Some(num), ERROR_INVALID_ARG, current) }
}

/// `scePadSetLightBar(handle, color)`: accepted (no light bar here).
#[nid("scePadSetLightBar")]
pub extern "C" fn sce_pad_set_light_bar(handle: i32, color: usize) -> i32 {
    if color == 0 {
        return ERROR_INVALID_ARG;
    }
    check(handle).map(|()| 0).unwrap_or_else(|e| e)
}

/// `scePadResetLightBar(handle)`.
#[nid("scePadResetLightBar")]
pub extern "C" fn sce_pad_reset_light_bar(handle: i32) -> i32 {
    check(handle).map(|()| 0).unwrap_or_else(|e| e)
}

/// `scePadSetVibration(handle, param)`: accepted (no motors here).
#[nid("scePadSetVibration")]
pub extern "C" fn sce_pad_set_vibration(handle: i32, param: usize) -> i32 {
    if param == 0 {
        return ERROR_INVALID_ARG;
    }
    check(handle).map(|()| 0).unwrap_or_else(|e| e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pad_data_has_the_sdk_layout() {
        assert_eq!(std::mem::size_of::<PadData>(), 120);
        assert_eq!(std::mem::offset_of!(PadData, connected), 76);
        assert_eq!(std::mem::offset_of!(PadData, timestamp), 80);
        assert_eq!(std::mem::offset_of!(PadData, count), 104);
    }
}
