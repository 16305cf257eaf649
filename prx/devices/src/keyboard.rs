//! `libSceKeyboard`: one USB keyboard (port 0 of any user), always connected, driven by the
//! input script's `key:` / `text:` lines (see [`crate::pad`] and docs/HOMEBREW.md) and by
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

use std::collections::VecDeque;
use std::sync::Mutex;

use aps5_prx_macros::nid;

use crate::{pad, video};

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

/// `led` bit: Num Lock.
pub const LED_NUM_LOCK: u32 = 1;
/// `led` bit: Caps Lock.
pub const LED_CAPS_LOCK: u32 = 2;
/// `led` bit: Scroll Lock.
pub const LED_SCROLL_LOCK: u32 = 4;
/// `modifierKey` bits of the two Shift keys.
pub const MOD_SHIFT: u32 = 0x02 | 0x20;

/// Key codes a `SceKeyboardData` holds.
pub const MAX_KEYS: usize = 16;

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

/// Key names of the input script and their HID usages (modifiers 0xE0..=0xE7).
pub const KEY_NAMES: &[(&str, u8)] = &[
    ("enter", 0x28),
    ("return", 0x28),
    ("escape", 0x29),
    ("esc", 0x29),
    ("backspace", 0x2A),
    ("tab", 0x2B),
    ("space", 0x2C),
    ("minus", 0x2D),
    ("equal", 0x2E),
    ("leftbracket", 0x2F),
    ("rightbracket", 0x30),
    ("backslash", 0x31),
    ("semicolon", 0x33),
    ("apostrophe", 0x34),
    ("grave", 0x35),
    ("comma", 0x36),
    ("period", 0x37),
    ("slash", 0x38),
    ("capslock", 0x39),
    ("f1", 0x3A),
    ("f2", 0x3B),
    ("f3", 0x3C),
    ("f4", 0x3D),
    ("f5", 0x3E),
    ("f6", 0x3F),
    ("f7", 0x40),
    ("f8", 0x41),
    ("f9", 0x42),
    ("f10", 0x43),
    ("f11", 0x44),
    ("f12", 0x45),
    ("printscreen", 0x46),
    ("scrolllock", 0x47),
    ("pause", 0x48),
    ("insert", 0x49),
    ("home", 0x4A),
    ("pageup", 0x4B),
    ("delete", 0x4C),
    ("end", 0x4D),
    ("pagedown", 0x4E),
    ("right", 0x4F),
    ("left", 0x50),
    ("down", 0x51),
    ("up", 0x52),
    ("numlock", 0x53),
    ("kpslash", 0x54),
    ("kpstar", 0x55),
    ("kpminus", 0x56),
    ("kpplus", 0x57),
    ("kpenter", 0x58),
    ("kp1", 0x59),
    ("kp2", 0x5A),
    ("kp3", 0x5B),
    ("kp4", 0x5C),
    ("kp5", 0x5D),
    ("kp6", 0x5E),
    ("kp7", 0x5F),
    ("kp8", 0x60),
    ("kp9", 0x61),
    ("kp0", 0x62),
    ("kpperiod", 0x63),
    ("menu", 0x65),
    ("lctrl", 0xE0),
    ("ctrl", 0xE0),
    ("lshift", 0xE1),
    ("shift", 0xE1),
    ("lalt", 0xE2),
    ("alt", 0xE2),
    ("lmeta", 0xE3),
    ("meta", 0xE3),
    ("rctrl", 0xE4),
    ("rshift", 0xE5),
    ("ralt", 0xE6),
    ("rmeta", 0xE7),
];

/// HID usage of Caps Lock, Num Lock, Scroll Lock and the LED bit each toggles.
const LOCKS: [(u8, u32); 3] = [
    (0x39, LED_CAPS_LOCK),
    (0x53, LED_NUM_LOCK),
    (0x47, LED_SCROLL_LOCK),
];

/// The US layout: HID usage 0x1E.. of the main block to (unshifted, shifted) characters.
const MAIN_BLOCK: [(u8, u8, u8); 21] = [
    (0x1E, b'1', b'!'),
    (0x1F, b'2', b'@'),
    (0x20, b'3', b'#'),
    (0x21, b'4', b'$'),
    (0x22, b'5', b'%'),
    (0x23, b'6', b'^'),
    (0x24, b'7', b'&'),
    (0x25, b'8', b'*'),
    (0x26, b'9', b'('),
    (0x27, b'0', b')'),
    (0x28, b'\n', b'\n'),
    (0x2B, b'\t', b'\t'),
    (0x2C, b' ', b' '),
    (0x2D, b'-', b'_'),
    (0x2E, b'=', b'+'),
    (0x2F, b'[', b'{'),
    (0x30, b']', b'}'),
    (0x31, b'\\', b'|'),
    (0x33, b';', b':'),
    (0x34, b'\'', b'"'),
    (0x35, b'`', b'~'),
];

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

/// The key (and whether Shift is needed) that types an ASCII character with the US layout.
pub fn char_to_key(c: char) -> Option<(u8, bool)> {
    let b = u8::try_from(c).ok()?;
    match b {
        b'a'..=b'z' => return Some((0x04 + b - b'a', false)),
        b'A'..=b'Z' => return Some((0x04 + b - b'A', true)),
        b',' => return Some((0x36, false)),
        b'<' => return Some((0x36, true)),
        b'.' => return Some((0x37, false)),
        b'>' => return Some((0x37, true)),
        b'/' => return Some((0x38, false)),
        b'?' => return Some((0x38, true)),
        0x08 => return Some((0x2A, false)),
        0x1B => return Some((0x29, false)),
        _ => {}
    }
    MAIN_BLOCK.iter().find_map(|&(u, plain, shifted)| {
        if b == plain {
            Some((u, false))
        } else if b == shifted {
            Some((u, true))
        } else {
            None
        }
    })
}

/// What the keyboard holds at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyState {
    /// Non-modifier keys held (HID usages), in press order.
    pub keys: Vec<u8>,
    /// Modifier bits (HID modifier byte).
    pub modifiers: u8,
    /// Lock LEDs (`LED_*`).
    pub led: u32,
}

impl KeyState {
    /// Holds `usage` (a modifier usage sets its bit).
    fn press(&mut self, usage: u8) {
        if (0xE0..=0xE7).contains(&usage) {
            self.modifiers |= 1 << (usage - 0xE0);
        } else if !self.keys.contains(&usage) {
            self.keys.push(usage);
        }
    }

    /// Sets the LEDs after going from `prev` to this state: a new press of a lock key
    /// toggles its LED.
    fn toggle_locks(&mut self, prev: &KeyState) {
        self.led = prev.led;
        for (usage, bit) in LOCKS {
            if self.keys.contains(&usage) && !prev.keys.contains(&usage) {
                self.led ^= bit;
            }
        }
    }
}

/// Looks a key up by script name (`a`, `7`, `enter`, `lshift`, `0x2c`, ...).
pub fn key_by_name(name: &str) -> Option<u8> {
    let n = name.to_ascii_lowercase();
    if let Some(hex) = n.strip_prefix("0x") {
        return u8::from_str_radix(hex, 16).ok().filter(|&u| u != 0);
    }
    let mut chars = n.chars();
    if let (Some(c), None) = (chars.next(), chars.next())
        && c.is_ascii_alphanumeric()
    {
        return char_to_key(c).map(|(u, _)| u);
    }
    KEY_NAMES.iter().find(|(k, _)| *k == n).map(|&(_, u)| u)
}

/// The keyboard part of the input script: states from a frame on, in frame order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyScript {
    steps: Vec<(u64, KeyState)>,
    /// First frame after the last `text:` line's keys (later lines may not start before).
    busy_until: u64,
}

impl KeyScript {
    /// Parses the argument of a `key:` item (`a,b`, `lshift+1`, `-` for none) and holds
    /// it from `frame` on. Errors are messages without the line number.
    pub fn push_keys(&mut self, frame: u64, spec: &str) -> Result<(), String> {
        self.check_free(frame)?;
        let mut s = KeyState::default();
        if spec != "-" {
            for name in spec.split([',', '+']) {
                let u = key_by_name(name).ok_or_else(|| {
                    format!(
                        "unknown key {name:?} (a-z, 0-9, a hex HID usage like 0x2c, or one of: {})",
                        KEY_NAMES.iter().map(|k| k.0).collect::<Vec<_>>().join(" ")
                    )
                })?;
                s.press(u);
            }
        }
        if s.keys.len() > MAX_KEYS {
            return Err(format!(
                "{} keys held at once (at most {MAX_KEYS})",
                s.keys.len()
            ));
        }
        self.push(frame, s);
        Ok(())
    }

    /// Types the argument of a `text:` item (a double-quoted string with `\"`, `\\`,
    /// `\n`, `\t`, `\b` escapes) from `frame` on: each character is held for one frame and
    /// released the next, with Shift for capitals and shifted symbols.
    pub fn push_text(&mut self, frame: u64, quoted: &str) -> Result<(), String> {
        self.check_free(frame)?;
        let text = unquote(quoted)?;
        let mut f = frame;
        for c in text.chars() {
            let (usage, shift) = char_to_key(c).ok_or_else(|| {
                format!("{c:?} cannot be typed on the US layout (printable ASCII, \\n, \\t, \\b)")
            })?;
            let mut s = KeyState::default();
            if shift {
                s.press(0xE1);
            }
            s.press(usage);
            self.push(f, s);
            self.push(f + 1, KeyState::default());
            f += 2;
        }
        self.busy_until = f;
        Ok(())
    }

    fn check_free(&self, frame: u64) -> Result<(), String> {
        if frame < self.busy_until {
            return Err(format!(
                "frame {frame} is inside the previous text, which types until frame {} (2 frames a character)",
                self.busy_until - 1
            ));
        }
        Ok(())
    }

    fn push(&mut self, frame: u64, mut s: KeyState) {
        let prev = self.steps.last().map(|p| p.1.clone()).unwrap_or_default();
        s.toggle_locks(&prev);
        // A later line for the same frame replaces the state (LEDs counted once).
        if let Some(last) = self.steps.last_mut()
            && last.0 == frame
        {
            let before = self
                .steps
                .len()
                .checked_sub(2)
                .map(|i| self.steps[i].1.clone());
            s.toggle_locks(&before.unwrap_or_default());
            self.steps.last_mut().expect("checked").1 = s;
            return;
        }
        self.steps.push((frame, s));
    }

    /// The keyboard state at flip number `frame`.
    pub fn state_at(&self, frame: u64) -> KeyState {
        self.steps
            .iter()
            .take_while(|(f, _)| *f <= frame)
            .last()
            .map(|(_, s)| s.clone())
            .unwrap_or_default()
    }
}

fn unquote(q: &str) -> Result<String, String> {
    let inner = q
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .filter(|_| q.len() >= 2)
        .ok_or_else(|| format!("text must be in double quotes, found {q}"))?;
    let mut out = String::new();
    let mut it = inner.chars();
    while let Some(c) = it.next() {
        match c {
            '\\' => match it.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('b') => out.push('\u{8}'),
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                other => return Err(format!("unknown escape \\{}", other.unwrap_or(' '))),
            },
            '"' => return Err("a \" inside the text must be written \\\"".into()),
            c => out.push(c),
        }
    }
    Ok(out)
}

/// Key events from the host (a window), applied in order.
#[derive(Default)]
struct Host {
    state: KeyState,
    queue: VecDeque<(u8, bool, u8)>,
}

impl Host {
    /// Applies queued events, stopping before the release of a key pressed in this same
    /// batch, so that every press is seen by at least one read.
    fn drain(&mut self) {
        let mut pressed_now: Vec<u8> = Vec::new();
        while let Some(&(usage, pressed, mods)) = self.queue.front() {
            if !pressed && pressed_now.contains(&usage) {
                break;
            }
            self.queue.pop_front();
            let prev = self.state.clone();
            if pressed {
                self.state.press(usage);
                pressed_now.push(usage);
            } else {
                self.state.keys.retain(|&k| k != usage);
            }
            self.state.modifiers = mods;
            let led = self.state.led;
            self.state.toggle_locks(&KeyState { led, ..prev });
        }
    }
}

struct State {
    init: bool,
    open: bool,
    host: Host,
}

static STATE: Mutex<State> = Mutex::new(State {
    init: false,
    open: false,
    host: Host {
        state: KeyState {
            keys: Vec::new(),
            modifiers: 0,
            led: 0,
        },
        queue: VecDeque::new(),
    },
});

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Queues a key event of the host keyboard as if typed on the console's keyboard.
///
/// `hid_usage` is the USB HID usage (page 7) of the key (`a` = 0x04, Enter = 0x28, left
/// Shift = 0xE1, ...), `pressed` whether it went down or up, `modifiers` the HID modifier
/// byte after the event (bit 0 left Ctrl, 1 left Shift, 2 left Alt, 3 left GUI, 4..7 the
/// right ones). Events are applied in order at the program's next reads; a key pressed
/// and released between two reads is still reported as held by one read. Safe to call
/// from any thread, before or after the program opens the keyboard.
pub fn push_host_key(hid_usage: u8, pressed: bool, modifiers: u8) {
    if hid_usage == 0 {
        return;
    }
    state()
        .host
        .queue
        .push_back((hid_usage, pressed, modifiers));
}

/// The keyboard's state now: the script's at the current flip merged with the host's.
pub fn current() -> KeyboardData {
    let script = pad::script().keys.state_at(video::flip_count());
    let host = {
        let mut s = state();
        s.host.drain();
        s.host.state.clone()
    };
    let mut keys = script.keys.clone();
    for k in host.keys {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.truncate(MAX_KEYS);
    let mut data = KeyboardData {
        timestamp: now_us(),
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

fn now_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}

/// `sceKeyboardInit()`.
#[nid("sceKeyboardInit")]
pub extern "C" fn sce_keyboard_init() -> i32 {
    pad::script();
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
    if let Err(e) = check(handle) {
        return e;
    }
    if data.is_null() {
        return ERROR_INVALID_ARG;
    }
    unsafe { data.write_unaligned(current()) };
    0
}

/// `sceKeyboardRead(handle, data, num)`: one sample (the state now); returns the count.
#[nid("sceKeyboardRead")]
pub unsafe extern "C" fn sce_keyboard_read(handle: i32, data: *mut KeyboardData, num: i32) -> i32 {
    if let Err(e) = check(handle) {
        return e;
    }
    if data.is_null() || num < 1 {
        return ERROR_INVALID_ARG;
    }
    unsafe { data.write_unaligned(current()) };
    1
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

    #[test]
    fn key_lines_hold_and_toggle_locks_on_press() {
        let mut s = KeyScript::default();
        s.push_keys(10, "h,i").unwrap();
        s.push_keys(12, "lshift+a").unwrap();
        s.push_keys(14, "capslock").unwrap();
        s.push_keys(15, "capslock").unwrap(); // still held: no second toggle
        s.push_keys(16, "-").unwrap();
        s.push_keys(18, "CapsLock").unwrap();
        assert_eq!(s.state_at(9), KeyState::default());
        assert_eq!(s.state_at(11).keys, [0x0B, 0x0C]);
        let st = s.state_at(12);
        assert_eq!((st.keys.as_slice(), st.modifiers), (&[0x04u8][..], 0x02));
        assert_eq!(s.state_at(14).led, LED_CAPS_LOCK);
        assert_eq!(s.state_at(15).led, LED_CAPS_LOCK);
        assert_eq!(s.state_at(17).led, LED_CAPS_LOCK);
        assert_eq!(s.state_at(18).led, 0);
        assert!(
            s.push_keys(20, "a,nope")
                .unwrap_err()
                .contains("unknown key \"nope\"")
        );
        assert_eq!(key_by_name("0x2c"), Some(0x2C));
        assert_eq!(key_by_name("0x0"), None);
    }

    #[test]
    fn text_types_one_character_every_two_frames() {
        let mut s = KeyScript::default();
        s.push_text(100, r#""Hi!\n""#).unwrap();
        let at = |f| {
            let st = s.state_at(f);
            (st.keys, st.modifiers)
        };
        assert_eq!(at(99), (vec![], 0));
        assert_eq!(at(100), (vec![0x0B], 0x02));
        assert_eq!(at(101), (vec![], 0));
        assert_eq!(at(102), (vec![0x0C], 0));
        assert_eq!(at(104), (vec![0x1E], 0x02));
        assert_eq!(at(106), (vec![0x28], 0));
        assert_eq!(at(107), (vec![], 0));
        let e = s.push_keys(105, "a").unwrap_err();
        assert!(
            e.contains("inside the previous text") && e.contains("107"),
            "{e}"
        );
        s.push_keys(108, "a").unwrap();
        assert!(
            s.push_text(200, "hello")
                .unwrap_err()
                .contains("double quotes")
        );
        assert!(
            s.push_text(200, "\"caf\u{e9}\"")
                .unwrap_err()
                .contains("US layout")
        );
        assert!(s.push_text(200, r#""a\q""#).unwrap_err().contains("escape"));
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

    #[test]
    fn host_presses_between_reads_are_not_lost() {
        let mut h = Host::default();
        h.queue
            .extend([(0x04, true, 0), (0x04, false, 0), (0x05, true, 0x02)]);
        h.drain();
        assert_eq!(h.state.keys, [0x04]);
        h.drain();
        assert_eq!(
            (h.state.keys.as_slice(), h.state.modifiers),
            (&[0x05u8][..], 0x02)
        );
        h.queue.extend([(0x39, true, 0), (0x39, false, 0)]);
        h.drain();
        h.drain();
        assert_eq!(h.state.led, LED_CAPS_LOCK);
        assert!(!h.state.keys.contains(&0x39));
    }
}
