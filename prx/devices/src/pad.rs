//! `libScePad`: one standard pad, always connected, driven headless by an input script.
//!
//! `APS5_INPUT_SCRIPT` names a text file of lines `FRAME BUTTONS`: from flip number
//! FRAME on (VideoOut's flip counter, 0 before the first flip) the pad holds BUTTONS,
//! until a later line. BUTTONS is `-` (none) or a `,`/`+`-separated list of `up down
//! left right cross circle square triangle l1 r1 l2 r2 l3 r3 options touchpad` or hex
//! masks (`0x4000`). The same file drives the keyboard ([`crate::keyboard`]): `FRAME
//! key:KEYS` holds KEYS from FRAME on, `FRAME text:"TEXT"` types TEXT (two frames a
//! character). Frames must not decrease; `#` starts a comment (outside quotes). Without
//! the variable no button or key is ever pressed. See docs/HOMEBREW.md.

use std::sync::{Mutex, OnceLock};

use aps5_prx_macros::nid;

use crate::keyboard::KeyScript;
use crate::{diag, kernel, video};

/// `SCE_PAD_ERROR_INVALID_ARG`.
pub const ERROR_INVALID_ARG: i32 = 0x8092_0001_u32 as i32;
/// `SCE_PAD_ERROR_INVALID_HANDLE`.
pub const ERROR_INVALID_HANDLE: i32 = 0x8092_0003_u32 as i32;
/// `SCE_PAD_ERROR_NOT_INITIALIZED`.
pub const ERROR_NOT_INITIALIZED: i32 = 0x8092_0005_u32 as i32;
/// `SCE_PAD_ERROR_DEVICE_NO_HANDLE`.
pub const ERROR_DEVICE_NO_HANDLE: i32 = 0x8092_0008_u32 as i32;

const HANDLE: i32 = 1;

/// Button names and their `SCE_PAD_BUTTON_*` bits.
pub const BUTTONS: &[(&str, u32)] = &[
    ("l3", 0x0002),
    ("r3", 0x0004),
    ("options", 0x0008),
    ("up", 0x0010),
    ("right", 0x0020),
    ("down", 0x0040),
    ("left", 0x0080),
    ("l2", 0x0100),
    ("r2", 0x0200),
    ("l1", 0x0400),
    ("r1", 0x0800),
    ("triangle", 0x1000),
    ("circle", 0x2000),
    ("cross", 0x4000),
    ("square", 0x8000),
    ("touchpad", 0x0010_0000),
];

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

/// An input script: the pad's steps (first frame, buttons held from it on), sorted by
/// frame, and the keyboard's (`key:` / `text:` lines, see [`crate::keyboard`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Script {
    /// Pad steps: (first frame, `SCE_PAD_BUTTON_*` bits held from it on).
    pub pad: Vec<(u64, u32)>,
    /// Keyboard steps.
    pub keys: KeyScript,
}

/// The line without its comment: `#` outside a double-quoted string.
fn strip_comment(line: &str) -> &str {
    let (mut quoted, mut escaped) = (false, false);
    for (i, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '#' if !quoted => return &line[..i],
            _ => {}
        }
    }
    line
}

impl Script {
    /// Parses the script text; errors name the line.
    ///
    /// A line is `FRAME BUTTONS` (the pad), `FRAME key:KEYS` or `FRAME text:"TEXT"` (the
    /// keyboard); frames never decrease. See docs/HOMEBREW.md.
    pub fn parse(text: &str) -> Result<Script, String> {
        let mut script = Script::default();
        let mut last_frame = 0;
        for (i, line) in text.lines().enumerate() {
            let line = strip_comment(line).trim();
            if line.is_empty() {
                continue;
            }
            let at = |e: String| format!("line {}: {e}", i + 1);
            let (frame_s, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            let rest = rest.trim();
            let frame: u64 = frame_s
                .parse()
                .map_err(|_| at(format!("{frame_s:?} is not a frame number")))?;
            if frame < last_frame {
                return Err(at(format!("frame {frame} is before the previous line's")));
            }
            last_frame = frame;
            if let Some(keys) = rest.strip_prefix("key:") {
                script.keys.push_keys(frame, keys.trim()).map_err(at)?;
                continue;
            }
            if let Some(quoted) = rest.strip_prefix("text:") {
                script.keys.push_text(frame, quoted.trim()).map_err(at)?;
                continue;
            }
            let mut it = rest.split_whitespace();
            let Some(buttons_s) = it.next() else {
                return Err(at(
                    "buttons missing after the frame (use - for none, or key:/text: for the keyboard)"
                        .into(),
                ));
            };
            if let Some(extra) = it.next() {
                return Err(at(format!(
                    "unexpected {extra:?} (join buttons with , or +; one pad or keyboard item a line)"
                )));
            }
            let mut bits = 0u32;
            if buttons_s != "-" {
                for b in buttons_s.split([',', '+']) {
                    let b = b.to_ascii_lowercase();
                    bits |= if let Some(hex) = b.strip_prefix("0x") {
                        u32::from_str_radix(hex, 16)
                            .map_err(|_| at(format!("bad button mask {b:?}")))?
                    } else {
                        BUTTONS
                            .iter()
                            .find(|(n, _)| *n == b)
                            .map(|&(_, v)| v)
                            .ok_or_else(|| {
                                at(format!(
                                    "unknown button {b:?} (known: {}; keyboard keys go in key: lines)",
                                    BUTTONS.iter().map(|b| b.0).collect::<Vec<_>>().join(" ")
                                ))
                            })?
                    };
                }
            }
            script.pad.push((frame, bits));
        }
        Ok(script)
    }

    /// The buttons held at flip number `frame`.
    pub fn buttons_at(&self, frame: u64) -> u32 {
        self.pad
            .iter()
            .take_while(|&&(f, _)| f <= frame)
            .last()
            .map_or(0, |&(_, b)| b)
    }
}

/// The input script; a bad one stops the program (exit status 2) with a message, outside
/// the `OnceLock` initialisation.
pub(crate) fn script() -> &'static Script {
    static S: OnceLock<Result<Script, String>> = OnceLock::new();
    let s = S.get_or_init(|| {
        let Some(path) = std::env::var_os("APS5_INPUT_SCRIPT") else {
            return Ok(Script::default());
        };
        std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| Script::parse(&t))
            .map_err(|e| {
                format!(
                    "APS5_INPUT_SCRIPT {}: {e}",
                    std::path::Path::new(&path).display()
                )
            })
    });
    match s {
        Ok(s) => s,
        Err(e) => {
            diag(e);
            kernel::exit(2)
        }
    }
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
    // The script's buttons and those held through the window's keys (window.rs).
    let buttons = script().buttons_at(video::flip_count()) | crate::window::pad_buttons();
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
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
        timestamp: ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000,
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
    if let Err(e) = check(handle) {
        return e;
    }
    if data.is_null() {
        return ERROR_INVALID_ARG;
    }
    unsafe { data.write_unaligned(current()) };
    0
}

/// `scePadRead(handle, data, num)`: one sample (the state now); returns the count.
#[nid("scePadRead")]
pub unsafe extern "C" fn sce_pad_read(handle: i32, data: *mut PadData, num: i32) -> i32 {
    if let Err(e) = check(handle) {
        return e;
    }
    if data.is_null() || num < 1 {
        return ERROR_INVALID_ARG;
    }
    unsafe { data.write_unaligned(current()) };
    1
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

    #[test]
    fn script_steps_hold_until_the_next_line() {
        let s =
            Script::parse("# demo\n0 -\n10 right\n12 -   # release\n20 down,cross\n30 0x8000+up\n")
                .unwrap();
        assert_eq!(s.buttons_at(0), 0);
        assert_eq!(s.buttons_at(9), 0);
        assert_eq!(s.buttons_at(10), 0x20);
        assert_eq!(s.buttons_at(11), 0x20);
        assert_eq!(s.buttons_at(12), 0);
        assert_eq!(s.buttons_at(25), 0x40 | 0x4000);
        assert_eq!(s.buttons_at(1000), 0x8010);
        assert_eq!(s.keys, KeyScript::default());
    }

    #[test]
    fn pad_and_keyboard_lines_mix_and_stay_independent() {
        let s = Script::parse(
            "0 cross\n5 key:h,i  # two keys\n6 -\n8 text:\"a #1\" # not part of the text\n20 key:-\n",
        )
        .unwrap();
        assert_eq!(s.buttons_at(5), 0x4000, "a key: line leaves the pad alone");
        assert_eq!(s.buttons_at(6), 0);
        assert_eq!(
            s.keys.state_at(6).keys,
            [0x0B, 0x0C],
            "a pad line leaves the keys"
        );
        // "a #1": a, space, shift+3, 1 from frame 8, two frames each.
        let k = |f| s.keys.state_at(f);
        assert_eq!(k(8).keys, [0x04]);
        assert_eq!(k(10).keys, [0x2C]);
        assert_eq!(
            (k(12).keys.as_slice(), k(12).modifiers),
            (&[0x20u8][..], 0x02)
        );
        assert_eq!(k(14).keys, [0x1E]);
        assert!(k(15).keys.is_empty() && k(30).keys.is_empty());
    }

    #[test]
    fn script_errors_name_the_line() {
        let e = Script::parse("0 -\n5 jump\n").unwrap_err();
        assert!(e.starts_with("line 2:") && e.contains("jump"), "{e}");
        let e = Script::parse("9 up\n5 down\n").unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
        assert!(Script::parse("x up").unwrap_err().contains("frame number"));
        assert!(Script::parse("3").unwrap_err().contains("buttons missing"));
        let e = Script::parse("0 -\n\n4 key:a,bogus\n").unwrap_err();
        assert!(e.starts_with("line 3: unknown key \"bogus\""), "{e}");
        let e = Script::parse("0 text:\"abc\"\n3 key:x\n").unwrap_err();
        assert!(
            e.starts_with("line 2: frame 3 is inside the previous text"),
            "{e}"
        );
        let e = Script::parse("1 text:abc\n").unwrap_err();
        assert!(
            e.starts_with("line 1: text must be in double quotes"),
            "{e}"
        );
        let e = Script::parse("1 text:\"\u{e9}\"\n").unwrap_err();
        assert!(e.starts_with("line 1:") && e.contains("US layout"), "{e}");
    }
}
