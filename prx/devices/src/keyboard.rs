//! `libSceKeyboard`: one USB keyboard (port 0 of any user), always connected, driven by the
//! input script's `key:` / `text:` lines (see [`crate::input`] and docs/HOMEBREW.md) and by
//! key events of the host ([`push_host_key`], fed by a window).
//!
//! Key codes are USB HID usages (page 7: `a` = 0x04, Enter = 0x28, ...); modifier keys
//! (0xE0..=0xE7) are reported only as bits of `modifierKey`, in the order of the HID
//! modifier byte (bit 0 left Ctrl, 1 left Shift, 2 left Alt, 3 left GUI, 4..7 the right
//! ones). Lock LEDs (`led`: 1 Num Lock, 2 Caps Lock, 4 Scroll Lock) toggle on each press of
//! their key. `sceKeyboardGetKey2Char` maps a key to a character with the US (101-key)
//! layout.
//!
//! Structure layouts (`SceKeyboardData` 96 bytes, `SceKeyboardCharData` 20 bytes) and error
//! codes are those that independent PS4 reimplementations agree on and that the OpenOrbis
//! keyboard sample reads (`led` at +24, `modifierKey` at +28, key codes at +32, count at
//! +20); Sony's headers are not available to confirm the field names.

use std::sync::Mutex;

use aps5_prx_macros::nid;

/// `SCE_KEYBOARD_ERROR_INVALID_ARG`.
pub const ERROR_INVALID_ARG: i32 = 0x80DA_0001_u32 as i32;
/// `SCE_KEYBOARD_ERROR_INVALID_PORT`.
pub const ERROR_INVALID_PORT: i32 = 0x80DA_0002_u32 as i32;
/// `SCE_KEYBOARD_ERROR_INVALID_HANDLE`.
pub const ERROR_INVALID_HANDLE: i32 = 0x80DA_0003_u32 as i32;
/// `SCE_KEYBOARD_ERROR_ALREADY_OPENED`.
pub const ERROR_ALREADY_OPENED: i32 = 0x80DA_0004_u32 as i32;
/// `SCE_KEYBOARD_ERROR_NOT_INITIALIZED`.
pub const ERROR_NOT_INITIALIZED: i32 = 0x80DA_0005_u32 as i32;

use crate::input::{self, MAIN_BLOCK};
pub use crate::input::{
    KEY_NAMES, KeyScript, KeyState, LED_CAPS_LOCK, LED_NUM_LOCK, LED_SCROLL_LOCK, MAX_KEYS,
    MOD_SHIFT, char_to_key, key_by_name, push_host_key,
};

const HANDLE: i32 = 1;

/// `SceKeyboardData` (96 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyboardData {
    /// Time stamp (microseconds).
    pub timestamp: u64,
    /// Input taken by the system (0 here).
    pub intercepted: u8,
    /// Reserved.
    pub reserved1: [u8; 7],
    /// Connected (1).
    pub connected: u8,
    /// Padding.
    pub reserved2: [u8; 3],
    /// Number of valid entries of `key_code`.
    pub length: i32,
    /// Lock LEDs (`LED_*`).
    pub led: u32,
    /// Modifier keys held (HID modifier byte bits).
    pub modifier_key: u32,
    /// Keys held (HID usages), in the order they were pressed.
    pub key_code: [u16; MAX_KEYS],
    /// Reserved.
    pub reserved3: [u8; 32],
}

/// `SceKeyboardCharData` (20 bytes): what `sceKeyboardGetKey2Char` writes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CharData {
    /// 1 when the key gives a character.
    pub processed: i32,
    /// Characters in `char_code` (1, or 0 with `processed` 0).
    pub length: i32,
    /// The character (UTF-16 code unit / ASCII).
    pub char_code: u32,
    /// Reserved.
    pub reserved: [u8; 8],
}

/// The character a key gives with the US layout, `None` for keys without one.
pub fn key_to_char(usage: u16, led: u32, modifiers: u32) -> Option<u32> {
    let shift = modifiers & MOD_SHIFT != 0;
    let u = u8::try_from(usage).ok()?;
    let c = match u {
        0x04..=0x1D => {
            let upper = shift != (led & LED_CAPS_LOCK != 0);
            (if upper { b'A' } else { b'a' }) + (u - 0x04)
        }
        0x2A => 0x08,
        0x29 => 0x1B,
        0x36 => [b',', b'<'][shift as usize],
        0x37 => [b'.', b'>'][shift as usize],
        0x38 => [b'/', b'?'][shift as usize],
        0x54 => b'/',
        0x55 => b'*',
        0x56 => b'-',
        0x57 => b'+',
        0x58 => b'\n',
        0x59..=0x63 if led & LED_NUM_LOCK != 0 => b"1234567890."[usize::from(u - 0x59)],
        _ => {
            let &(_, plain, shifted) = MAIN_BLOCK.iter().find(|e| e.0 == u)?;
            if shift { shifted } else { plain }
        }
    };
    Some(u32::from(c))
}

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

/// The keyboard's state now: the script's at the current flip merged with the host's.
pub fn current() -> KeyboardData {
    let script = input::script().keys.state_at(input::Clock::now());
    let host = input::host_keys();
    let mut keys = script.keys.clone();
    for k in host.keys {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.truncate(MAX_KEYS);
    let mut data = KeyboardData {
        timestamp: input::now_us(),
        connected: 1,
        length: keys.len() as i32,
        led: script.led ^ host.led,
        modifier_key: u32::from(script.modifiers | host.modifiers),
        ..KeyboardData::default()
    };
    for (slot, k) in data.key_code.iter_mut().zip(keys) {
        *slot = u16::from(k);
    }
    data
}

/// `sceKeyboardInit()`.
#[nid("sceKeyboardInit")]
pub extern "C" fn sce_keyboard_init() -> i32 {
    input::script();
    state().init = true;
    0
}

/// `sceKeyboardOpen(userId, type, index, param)`: the keyboard of any user, type 0,
/// port 0.
#[nid("sceKeyboardOpen")]
pub extern "C" fn sce_keyboard_open(_user: i32, kind: i32, index: i32, _param: usize) -> i32 {
    let mut s = state();
    if !s.init {
        return ERROR_NOT_INITIALIZED;
    }
    if kind != 0 {
        return ERROR_INVALID_ARG;
    }
    if index != 0 {
        return ERROR_INVALID_PORT;
    }
    if s.open {
        return ERROR_ALREADY_OPENED;
    }
    s.open = true;
    HANDLE
}

/// `sceKeyboardClose(handle)`.
#[nid("sceKeyboardClose")]
pub extern "C" fn sce_keyboard_close(handle: i32) -> i32 {
    let mut s = state();
    if handle != HANDLE || !s.open {
        return ERROR_INVALID_HANDLE;
    }
    s.open = false;
    0
}

fn check(handle: i32) -> Result<(), i32> {
    let s = state();
    if !s.init {
        Err(ERROR_NOT_INITIALIZED)
    } else if handle == HANDLE && s.open {
        Ok(())
    } else {
        Err(ERROR_INVALID_HANDLE)
    }
}

/// `sceKeyboardReadState(handle, data)`.
#[nid("sceKeyboardReadState")]
pub unsafe extern "C" fn sce_keyboard_read_state(handle: i32, data: *mut KeyboardData) -> i32 {
    unsafe { input::read_sample(check(handle), data, None, ERROR_INVALID_ARG, current) }
}

/// `sceKeyboardRead(handle, data, num)`: one sample (the state now); returns the count.
#[nid("sceKeyboardRead")]
pub unsafe extern "C" fn sce_keyboard_read(handle: i32, data: *mut KeyboardData, num: i32) -> i32 {
    unsafe { input::read_sample(check(handle), data, Some(num), ERROR_INVALID_ARG, current) }
}

/// `sceKeyboardGetKey2Char(handle, arrangement, led, modifierKey, keyCode, charData)`:
/// the character of a key with the US layout (`processed` 0 when it has none). Only the
/// 101-key arrangement (0) is known; others are read as it.
#[nid("sceKeyboardGetKey2Char")]
pub unsafe extern "C" fn sce_keyboard_get_key2char(
    handle: i32,
    _arrangement: i32,
    led: u32,
    modifiers: u32,
    key_code: u16,
    out: *mut CharData,
) -> i32 {
    if let Err(e) = check(handle) {
        return e;
    }
    if out.is_null() {
        return ERROR_INVALID_ARG;
    }
    let d = match key_to_char(key_code, led, modifiers) {
        Some(c) => CharData {
            processed: 1,
            length: 1,
            char_code: c,
            ..CharData::default()
        },
        None => CharData::default(),
    };
    unsafe { out.write_unaligned(d) };
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structs_have_the_sdk_layout() {
        assert_eq!(std::mem::size_of::<KeyboardData>(), 96);
        assert_eq!(std::mem::offset_of!(KeyboardData, connected), 16);
        assert_eq!(std::mem::offset_of!(KeyboardData, length), 20);
        assert_eq!(std::mem::offset_of!(KeyboardData, led), 24);
        assert_eq!(std::mem::offset_of!(KeyboardData, modifier_key), 28);
        assert_eq!(std::mem::offset_of!(KeyboardData, key_code), 32);
        assert_eq!(std::mem::size_of::<CharData>(), 20);
        assert_eq!(std::mem::offset_of!(CharData, char_code), 8);
    }

    #[test]
    fn us_layout_characters() {
        let c = |u, led, m| key_to_char(u, led, m).map(|c| char::from_u32(c).unwrap());
        assert_eq!(c(0x04, 0, 0), Some('a'));
        assert_eq!(c(0x04, 0, 0x02), Some('A'));
        assert_eq!(c(0x04, LED_CAPS_LOCK, 0), Some('A'));
        assert_eq!(c(0x04, LED_CAPS_LOCK, 0x20), Some('a'));
        assert_eq!(c(0x1E, LED_CAPS_LOCK, 0), Some('1'));
        assert_eq!(c(0x1E, 0, 0x20), Some('!'));
        assert_eq!(c(0x27, 0, 0), Some('0'));
        assert_eq!(c(0x28, 0, 0), Some('\n'));
        assert_eq!(c(0x2A, 0, 0), Some('\u{8}'));
        assert_eq!(c(0x38, 0, 0x02), Some('?'));
        assert_eq!(c(0x59, 0, 0), None);
        assert_eq!(c(0x59, LED_NUM_LOCK, 0), Some('1'));
        assert_eq!(c(0x3A, 0, 0), None, "F1 has no character");
        // Every character that can be typed maps back to itself.
        for b in 0x20u8..0x7F {
            let (u, shift) = char_to_key(char::from(b)).unwrap();
            let m = if shift { 0x02 } else { 0 };
            assert_eq!(
                c(u16::from(u), 0, m),
                Some(char::from(b)),
                "{:?}",
                char::from(b)
            );
        }
        assert_eq!(char_to_key('é'), None);
    }

    /// The exported functions, in the order a program calls them (the only test of this
    /// binary that touches the library's global state).
    #[test]
    fn exported_calls_check_their_arguments_and_report_host_keys() {
        let mut d = KeyboardData::default();
        unsafe {
            assert_eq!(sce_keyboard_open(1, 0, 0, 0), ERROR_NOT_INITIALIZED);
            assert_eq!(sce_keyboard_read_state(1, &mut d), ERROR_NOT_INITIALIZED);
            assert_eq!(sce_keyboard_init(), 0);
            assert_eq!(sce_keyboard_open(1, 1, 0, 0), ERROR_INVALID_ARG);
            assert_eq!(sce_keyboard_open(1, 0, 1, 0), ERROR_INVALID_PORT);
            assert_eq!(
                sce_keyboard_read_state(HANDLE, &mut d),
                ERROR_INVALID_HANDLE
            );
            let h = sce_keyboard_open(1, 0, 0, 0);
            assert_eq!(h, HANDLE);
            assert_eq!(sce_keyboard_open(1, 0, 0, 0), ERROR_ALREADY_OPENED);
            assert_eq!(
                sce_keyboard_read_state(h, std::ptr::null_mut()),
                ERROR_INVALID_ARG
            );

            assert_eq!(sce_keyboard_read_state(h, &mut d), 0);
            assert_eq!((d.connected, d.length, d.led, d.modifier_key), (1, 0, 0, 0));
            // Shift down, then x typed (pressed and released before the next read).
            push_host_key(0xE1, true, 0x02);
            push_host_key(0x1B, true, 0x02);
            push_host_key(0x1B, false, 0x02);
            assert_eq!(sce_keyboard_read_state(h, &mut d), 0);
            assert_eq!((d.length, d.key_code[0], d.modifier_key), (1, 0x1B, 0x02));
            let mut c = CharData::default();
            assert_eq!(
                sce_keyboard_get_key2char(h, 0, d.led, d.modifier_key, d.key_code[0], &mut c),
                0
            );
            assert_eq!(
                (c.processed, c.length, c.char_code),
                (1, 1, u32::from(b'X'))
            );
            assert_eq!(sce_keyboard_read(h, &mut d, 4), 1);
            assert_eq!(
                (d.length, d.modifier_key),
                (0, 0x02),
                "x released, Shift held"
            );
            assert_eq!(sce_keyboard_get_key2char(h, 0, 0, 0, 0x3A, &mut c), 0);
            assert_eq!(c, CharData::default(), "F1 gives no character");
            assert_eq!(
                sce_keyboard_get_key2char(h, 0, 0, 0, 4, std::ptr::null_mut()),
                ERROR_INVALID_ARG
            );
            assert_eq!(sce_keyboard_close(h), 0);
            assert_eq!(sce_keyboard_close(h), ERROR_INVALID_HANDLE);
            assert_eq!(sce_keyboard_read(h, &mut d, 1), ERROR_INVALID_HANDLE);
        }
    }
}
