//! The input side shared by the devices: the input script (`$APS5_INPUT_SCRIPT`: pad
//! lines and keyboard `key:` / `text:` lines), the host's keys and buttons that a window
//! feeds in, and VideoOut's flip counter that the script is indexed by.
//!
//! The dependencies run one way: [`crate::window`] and [`crate::video`] write here,
//! [`crate::pad`] and [`crate::keyboard`] read from here, and this module imports none of
//! them.
//!
//! `APS5_INPUT_SCRIPT` names a text file of lines `FRAME BUTTONS`: from flip number
//! FRAME on (the flip counter, 0 before the first flip) the pad holds BUTTONS, until a
//! later line. BUTTONS is `-` (none) or a `,`/`+`-separated list of `up down left right
//! cross circle square triangle l1 r1 l2 r2 l3 r3 options touchpad` or hex masks
//! (`0x4000`). `FRAME key:KEYS` holds keyboard KEYS from FRAME on, `FRAME text:"TEXT"`
//! types TEXT (two frames a character). Instead of a frame, a line may start with a time
//! since the program started (`@500ms`, `@2s`, `@1.5s`; monotonic clock), for programs
//! that never flip; `text:` then types a character every 100 ms. Frames must not
//! decrease, nor times; `#` starts a comment (outside quotes). Without the variable no
//! button or key is ever pressed. See docs/HOMEBREW.md.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::keymap::PAD_BUTTONS;
use crate::{diag, kernel};

/// Flips done by this process (VideoOut counts them; the input script is indexed by them).
pub static FLIPS: AtomicU64 = AtomicU64::new(0);

/// Number of flips done so far.
pub fn flip_count() -> u64 {
    FLIPS.load(Ordering::Acquire)
}

/// Microseconds of the host's monotonic clock: the time stamp of pad and keyboard samples.
pub(crate) fn now_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}

/// `now_us()` when this library was loaded, before the program's `main`: time-keyed
/// script lines count from here (0 until then).
static START_US: AtomicU64 = AtomicU64::new(0);

extern "C" fn mark_start() {
    let _ = START_US.compare_exchange(0, now_us(), Ordering::AcqRel, Ordering::Acquire);
}

#[used]
#[unsafe(link_section = ".init_array")]
static MARK_START: extern "C" fn() = mark_start;

/// When a script line takes effect: from a flip number on, or from a time since the
/// program started on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// From this flip number on.
    Frame(u64),
    /// From this many microseconds after the program started on.
    Micros(u64),
}

impl At {
    fn reached(self, now: Clock) -> bool {
        match self {
            At::Frame(f) => now.flips >= f,
            At::Micros(t) => now.micros >= t,
        }
    }

    /// `self + n` frames or `self + n * us_per_frame` microseconds (for typed text).
    fn later(self, frames: u64, micros: u64) -> At {
        match self {
            At::Frame(f) => At::Frame(f + frames),
            At::Micros(t) => At::Micros(t + micros),
        }
    }

    fn show(self) -> String {
        match self {
            At::Frame(f) => format!("frame {f}"),
            At::Micros(t) if t % 1000 == 0 => format!("@{}ms", t / 1000),
            At::Micros(t) => format!("@{t}us"),
        }
    }
}

/// Where the program is: the flips it did and the time since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clock {
    /// Flips done ([`flip_count`]).
    pub flips: u64,
    /// Microseconds since the program started (monotonic clock).
    pub micros: u64,
}

impl Clock {
    /// The program's clock now.
    pub fn now() -> Clock {
        mark_start(); // a no-op after load; keeps the clock sane if the constructor did not run
        Clock {
            flips: flip_count(),
            micros: now_us().saturating_sub(START_US.load(Ordering::Acquire)),
        }
    }
}

/// Typed text: a character is held this long, then released as long (time-keyed lines).
const TEXT_HALF_US: u64 = 50_000;

/// The read path the pad and the keyboard share: the handle's check, then one sample
/// written to `data`. `num` is `None` for `*ReadState` (returns 0) and the caller's buffer
/// length for `*Read` (returns the samples written: 1).
pub(crate) unsafe fn read_sample<T>(
    checked: Result<(), i32>,
    data: *mut T,
    num: Option<i32>,
    invalid_arg: i32,
    sample: impl FnOnce() -> T,
) -> i32 {
    if let Err(e) = checked {
        return e;
    }
    if data.is_null() || num.is_some_and(|n| n < 1) {
        return invalid_arg;
    }
    unsafe { data.write_unaligned(sample()) };
    i32::from(num.is_some())
}

/// Pad buttons held through the host's keys (a window sets them through its keymap).
static HOST_BUTTONS: AtomicU32 = AtomicU32::new(0);

/// Sets the pad buttons the host's keys hold now.
pub fn set_host_buttons(bits: u32) {
    HOST_BUTTONS.store(bits, Ordering::Release);
}

/// Pad buttons held through the host's keys.
pub fn host_buttons() -> u32 {
    HOST_BUTTONS.load(Ordering::Acquire)
}

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
pub(crate) const MAIN_BLOCK: [(u8, u8, u8); 21] = [
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

/// The keyboard part of the input script: states from a frame or a time on, in line order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyScript {
    steps: Vec<(At, KeyState)>,
    /// First moment after the last `text:` line's keys (later lines of the same kind may
    /// not start before).
    busy_until: Option<At>,
}

impl KeyScript {
    /// Parses the argument of a `key:` item (`a,b`, `lshift+1`, `-` for none) and holds
    /// it from `frame` on. Errors are messages without the line number.
    pub fn push_keys(&mut self, frame: At, spec: &str) -> Result<(), String> {
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
    /// released the next (50 ms each on a time-keyed line), with Shift for capitals and
    /// shifted symbols.
    pub fn push_text(&mut self, frame: At, quoted: &str) -> Result<(), String> {
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
            self.push(f.later(1, TEXT_HALF_US), KeyState::default());
            f = f.later(2, 2 * TEXT_HALF_US);
        }
        self.busy_until = Some(f);
        Ok(())
    }

    fn check_free(&self, frame: At) -> Result<(), String> {
        let (inside, last, pace) = match (frame, self.busy_until) {
            (At::Frame(f), Some(At::Frame(b))) => (f < b, At::Frame(b - 1), "2 frames"),
            (At::Micros(t), Some(At::Micros(b))) => (t < b, At::Micros(b), "100 ms"),
            _ => (false, frame, ""),
        };
        if inside {
            return Err(format!(
                "{} is inside the previous text, which types until {} ({pace} a character)",
                frame.show(),
                last.show()
            ));
        }
        Ok(())
    }

    fn push(&mut self, frame: At, mut s: KeyState) {
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

    /// The keyboard state at `now`: that of the last line (in script order) reached.
    pub fn state_at(&self, now: Clock) -> KeyState {
        self.steps
            .iter()
            .rfind(|(at, _)| at.reached(now))
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

static HOST: Mutex<Host> = Mutex::new(Host {
    state: KeyState {
        keys: Vec::new(),
        modifiers: 0,
        led: 0,
    },
    queue: VecDeque::new(),
});

fn host() -> std::sync::MutexGuard<'static, Host> {
    HOST.lock().unwrap_or_else(|e| e.into_inner())
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
    host().queue.push_back((hid_usage, pressed, modifiers));
}

/// The host keyboard's state now, after applying the queued events (see [`push_host_key`]).
pub fn host_keys() -> KeyState {
    let mut h = host();
    h.drain();
    h.state.clone()
}

/// An input script: the pad's steps (from when, buttons held from then on), in line order,
/// and the keyboard's (`key:` / `text:` lines, see [`crate::keyboard`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Script {
    /// Pad steps: (from when, `SCE_PAD_BUTTON_*` bits held from then on).
    pub pad: Vec<(At, u32)>,
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
    /// A line is `WHEN BUTTONS` (the pad), `WHEN key:KEYS` or `WHEN text:"TEXT"` (the
    /// keyboard); WHEN is a frame number or `@TIME` ([`parse_time`]). Frames never
    /// decrease, nor times. See docs/HOMEBREW.md.
    pub fn parse(text: &str) -> Result<Script, String> {
        let mut script = Script::default();
        let (mut last_frame, mut last_time) = (0, 0);
        for (i, line) in text.lines().enumerate() {
            let line = strip_comment(line).trim();
            if line.is_empty() {
                continue;
            }
            let at = |e: String| format!("line {}: {e}", i + 1);
            let (frame_s, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            let rest = rest.trim();
            let frame = if let Some(t) = frame_s.strip_prefix('@') {
                let t = parse_time(t).map_err(|e| at(format!("{frame_s:?}: {e}")))?;
                if t < last_time {
                    return Err(at(format!(
                        "{frame_s} is before the previous time-keyed line's"
                    )));
                }
                last_time = t;
                At::Micros(t)
            } else {
                let f: u64 = frame_s.parse().map_err(|_| {
                    at(format!(
                        "{frame_s:?} is not a frame number or a time (@500ms, @2s)"
                    ))
                })?;
                if f < last_frame {
                    return Err(at(format!("frame {f} is before the previous line's")));
                }
                last_frame = f;
                At::Frame(f)
            };
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
                        PAD_BUTTONS
                            .iter()
                            .find(|(n, _)| *n == b)
                            .map(|&(_, v)| v)
                            .ok_or_else(|| {
                                at(format!(
                                    "unknown button {b:?} (known: {}; keyboard keys go in key: lines)",
                                    PAD_BUTTONS.iter().map(|b| b.0).collect::<Vec<_>>().join(" ")
                                ))
                            })?
                    };
                }
            }
            script.pad.push((frame, bits));
        }
        Ok(script)
    }

    /// The buttons held at `now`: those of the last pad line (in script order) reached.
    pub fn buttons_at(&self, now: Clock) -> u32 {
        self.pad
            .iter()
            .rfind(|(at, _)| at.reached(now))
            .map_or(0, |&(_, b)| b)
    }
}

/// A time after `@` in microseconds: a decimal number and a unit, `ms` or `s`
/// (`500ms`, `2s`, `1.25s`).
pub fn parse_time(t: &str) -> Result<u64, String> {
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1_000u64)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1_000_000)
    } else {
        return Err("a time needs a unit: ms or s (e.g. @500ms, @2s)".into());
    };
    let bad = || {
        format!(
            "{num:?} is not a number of {}",
            if scale == 1000 { "ms" } else { "s" }
        )
    };
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    if whole.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let mut us = whole
        .parse::<u64>()
        .ok()
        .and_then(|w| w.checked_mul(scale))
        .ok_or_else(bad)?;
    // Digits of the fraction below a microsecond are dropped.
    let mut unit = scale;
    for d in frac.bytes() {
        unit /= 10;
        us = us.saturating_add(u64::from(d - b'0') * unit);
    }
    Ok(us)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The clock at flip `n`, no time passed.
    fn fr(n: u64) -> Clock {
        Clock {
            flips: n,
            micros: 0,
        }
    }

    /// The clock `ms` milliseconds after the start, no flip done.
    fn ms(ms: u64) -> Clock {
        Clock {
            flips: 0,
            micros: ms * 1000,
        }
    }

    #[test]
    fn key_lines_hold_and_toggle_locks_on_press() {
        let mut s = KeyScript::default();
        s.push_keys(At::Frame(10), "h,i").unwrap();
        s.push_keys(At::Frame(12), "lshift+a").unwrap();
        s.push_keys(At::Frame(14), "capslock").unwrap();
        s.push_keys(At::Frame(15), "capslock").unwrap(); // still held: no second toggle
        s.push_keys(At::Frame(16), "-").unwrap();
        s.push_keys(At::Frame(18), "CapsLock").unwrap();
        assert_eq!(s.state_at(fr(9)), KeyState::default());
        assert_eq!(s.state_at(fr(11)).keys, [0x0B, 0x0C]);
        let st = s.state_at(fr(12));
        assert_eq!((st.keys.as_slice(), st.modifiers), (&[0x04u8][..], 0x02));
        assert_eq!(s.state_at(fr(14)).led, LED_CAPS_LOCK);
        assert_eq!(s.state_at(fr(15)).led, LED_CAPS_LOCK);
        assert_eq!(s.state_at(fr(17)).led, LED_CAPS_LOCK);
        assert_eq!(s.state_at(fr(18)).led, 0);
        assert!(
            s.push_keys(At::Frame(20), "a,nope")
                .unwrap_err()
                .contains("unknown key \"nope\"")
        );
        assert_eq!(key_by_name("0x2c"), Some(0x2C));
        assert_eq!(key_by_name("0x0"), None);
    }

    #[test]
    fn text_types_one_character_every_two_frames() {
        let mut s = KeyScript::default();
        s.push_text(At::Frame(100), r#""Hi!\n""#).unwrap();
        let at = |f| {
            let st = s.state_at(fr(f));
            (st.keys, st.modifiers)
        };
        assert_eq!(at(99), (vec![], 0));
        assert_eq!(at(100), (vec![0x0B], 0x02));
        assert_eq!(at(101), (vec![], 0));
        assert_eq!(at(102), (vec![0x0C], 0));
        assert_eq!(at(104), (vec![0x1E], 0x02));
        assert_eq!(at(106), (vec![0x28], 0));
        assert_eq!(at(107), (vec![], 0));
        let e = s.push_keys(At::Frame(105), "a").unwrap_err();
        assert!(
            e.contains("inside the previous text") && e.contains("107"),
            "{e}"
        );
        s.push_keys(At::Frame(108), "a").unwrap();
        assert!(
            s.push_text(At::Frame(200), "hello")
                .unwrap_err()
                .contains("double quotes")
        );
        assert!(
            s.push_text(At::Frame(200), "\"caf\u{e9}\"")
                .unwrap_err()
                .contains("US layout")
        );
        assert!(
            s.push_text(At::Frame(200), r#""a\q""#)
                .unwrap_err()
                .contains("escape")
        );
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

    #[test]
    fn script_steps_hold_until_the_next_line() {
        let s =
            Script::parse("# demo\n0 -\n10 right\n12 -   # release\n20 down,cross\n30 0x8000+up\n")
                .unwrap();
        assert_eq!(s.buttons_at(fr(0)), 0);
        assert_eq!(s.buttons_at(fr(9)), 0);
        assert_eq!(s.buttons_at(fr(10)), 0x20);
        assert_eq!(s.buttons_at(fr(11)), 0x20);
        assert_eq!(s.buttons_at(fr(12)), 0);
        assert_eq!(s.buttons_at(fr(25)), 0x40 | 0x4000);
        assert_eq!(s.buttons_at(fr(1000)), 0x8010);
        assert_eq!(s.keys, KeyScript::default());
    }

    #[test]
    fn pad_and_keyboard_lines_mix_and_stay_independent() {
        let s = Script::parse(
            "0 cross\n5 key:h,i  # two keys\n6 -\n8 text:\"a #1\" # not part of the text\n20 key:-\n",
        )
        .unwrap();
        assert_eq!(
            s.buttons_at(fr(5)),
            0x4000,
            "a key: line leaves the pad alone"
        );
        assert_eq!(s.buttons_at(fr(6)), 0);
        assert_eq!(
            s.keys.state_at(fr(6)).keys,
            [0x0B, 0x0C],
            "a pad line leaves the keys"
        );
        // "a #1": a, space, shift+3, 1 from frame 8, two frames each.
        let k = |f| s.keys.state_at(fr(f));
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

    #[test]
    fn time_keyed_lines_drive_a_program_that_never_flips() {
        let s = Script::parse(
            "@0ms -\n@500ms cross\n@2s -   # release\n@2.25s key:h\n@3s text:\"Hi\"\n",
        )
        .unwrap();
        assert_eq!(s.buttons_at(ms(0)), 0);
        assert_eq!(s.buttons_at(ms(499)), 0);
        assert_eq!(s.buttons_at(ms(500)), 0x4000);
        assert_eq!(s.buttons_at(ms(1999)), 0x4000);
        assert_eq!(s.buttons_at(ms(2000)), 0);
        // Flips do not move time-keyed lines.
        assert_eq!(s.buttons_at(fr(1_000_000)), 0);
        assert_eq!(s.keys.state_at(ms(2249)).keys, Vec::<u8>::new());
        assert_eq!(s.keys.state_at(ms(2250)).keys, [0x0B]);
        // "Hi": H (shift) held 50 ms, released 50 ms, then i.
        let k = |t| s.keys.state_at(ms(t));
        assert_eq!((k(3000).keys, k(3000).modifiers), (vec![0x0B], 0x02));
        assert!(k(3050).keys.is_empty());
        assert_eq!((k(3100).keys, k(3100).modifiers), (vec![0x0C], 0));
        assert!(k(3150).keys.is_empty() && k(9000).keys.is_empty());
    }

    #[test]
    fn frame_and_time_lines_mix_in_line_order() {
        let s = Script::parse("0 up\n@1s down\n10 left\n").unwrap();
        let at = |flips, micros| Clock { flips, micros };
        assert_eq!(s.buttons_at(at(0, 0)), 0x10);
        assert_eq!(
            s.buttons_at(at(5, 1_000_000)),
            0x40,
            "the time line is reached"
        );
        assert_eq!(
            s.buttons_at(at(10, 0)),
            0x80,
            "a later line wins once reached"
        );
        assert_eq!(s.buttons_at(at(10, 2_000_000)), 0x80);
    }

    #[test]
    fn times_parse_with_units_and_bad_ones_name_the_line() {
        assert_eq!(parse_time("500ms"), Ok(500_000));
        assert_eq!(parse_time("2s"), Ok(2_000_000));
        assert_eq!(parse_time("1.25s"), Ok(1_250_000));
        assert_eq!(parse_time("0.5ms"), Ok(500));
        for bad in [
            "5",
            "ms",
            "-1s",
            "1.2.3s",
            "1,5s",
            "2m",
            "",
            "99999999999999999999s",
        ] {
            assert!(parse_time(bad).is_err(), "{bad:?}");
        }
        let e = Script::parse("@1s up\n@5 down\n").unwrap_err();
        assert!(e.starts_with("line 2: \"@5\"") && e.contains("unit"), "{e}");
        let e = Script::parse("@2s up\n@1s down\n").unwrap_err();
        assert!(e.starts_with("line 2: @1s is before"), "{e}");
        let e = Script::parse("@1s text:\"abc\"\n@1200ms key:x\n").unwrap_err();
        assert!(
            e.starts_with("line 2: @1200ms is inside the previous text") && e.contains("@1300ms"),
            "{e}"
        );
        // Frames and times are ordered each on their own.
        Script::parse("100 up\n@1s -\n5 down\n").unwrap_err();
        Script::parse("5 up\n@1s -\n100 down\n@2s up\n").unwrap();
        let e = Script::parse("@xs up\n").unwrap_err();
        assert!(
            e.starts_with("line 1: \"@xs\": \"x\" is not a number of s"),
            "{e}"
        );
    }
}
