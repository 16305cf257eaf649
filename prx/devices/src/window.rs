//! The display window: libSceVideoOut's flipped frames shown in an X11 window, its keys
//! fed to libScePad (through [`crate::keymap`]), and closing it ending the program.
//!
//! The X11 protocol is spoken by `x11rb`'s pure-Rust connection, so this PRX needs no X11
//! library: it loads and runs headless on machines without one. Wayland sessions are
//! reached through XWayland (`DISPLAY`). `APS5_HEADLESS=1`, no `DISPLAY`, or a display
//! that cannot be opened leave the program headless.
//!
//! Threads: the guest thread only copies the flipped buffer into [`present`] (the newest
//! frame wins; the guest never waits for the window). A drawing thread scales it to the
//! window (aspect kept, nearest pixel, black bars) and uploads it with `PutImage`; an
//! event thread takes keys, size changes, exposures and `WM_DELETE_WINDOW`.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use x11rb::connection::Connection;
use x11rb::image::{BitsPerPixel, Image, ImageOrder, ScanlinePad};
use x11rb::protocol::Event;
use x11rb::protocol::xproto::{
    AtomEnum, ConnectionExt as _, CreateGCAux, CreateWindowAux, EventMask, PropMode, VisualClass,
    WindowClass,
};
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

use crate::keymap::Keymap;
use crate::{diag, input, kernel};

/// One flipped frame: `width` x `height` pixels of 4 bytes, rows packed.
pub struct Frame {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Byte order of each pixel: B, G, R, A (A8R8G8B8) when false; R, G, B, A (A8B8G8R8)
    /// when true.
    pub rgba: bool,
    /// The pixels.
    pub pixels: Vec<u8>,
}

struct Shared {
    /// The newest frame not drawn yet; `redraw` asks for the last one again.
    pending: Mutex<(Option<Frame>, bool)>,
    wake: Condvar,
    /// Window size (width << 16 | height).
    size: AtomicU32,
}

struct Window {
    shared: Arc<Shared>,
}

static WINDOW: OnceLock<Option<Window>> = OnceLock::new();
/// Set when the window was closed (or its X connection lost).
static CLOSED: AtomicBool = AtomicBool::new(false);

x11rb::atom_manager! {
    Atoms: AtomsCookie {
        WM_PROTOCOLS,
        WM_DELETE_WINDOW,
        _NET_WM_NAME,
        UTF8_STRING,
    }
}

/// The initial window size: the 1920x1080 display, scaled down (aspect kept) to fit 90%
/// of the screen.
pub fn initial_size(screen_w: u16, screen_h: u16) -> (u16, u16) {
    let s = f64::min(
        1.0,
        f64::min(
            0.9 * f64::from(screen_w) / 1920.0,
            0.9 * f64::from(screen_h) / 1080.0,
        ),
    );
    (((1920.0 * s) as u16).max(16), ((1080.0 * s) as u16).max(9))
}

/// Opens the window once per process when a display is available; `true` when frames
/// go to a window. Failures are reported and leave the program headless.
pub fn open() -> bool {
    if let Some(w) = WINDOW.get() {
        return w.is_some();
    }
    let headless = std::env::var_os("APS5_HEADLESS").is_some_and(|v| v != "0" && !v.is_empty());
    let display = std::env::var("DISPLAY")
        .ok()
        .filter(|d| !d.is_empty())
        .filter(|_| !headless);
    if display.is_some() {
        // A bad APS5_KEYMAP exits here, outside the OnceLock initialisation (atexit
        // handlers that reach this library again must not find it half done).
        keymap();
    }
    WINDOW
        .get_or_init(|| {
            if display.is_none()
                && !headless
                && std::env::var_os("WAYLAND_DISPLAY").is_some_and(|v| !v.is_empty())
            {
                diag(
                    "WAYLAND_DISPLAY is set but DISPLAY is not: the window needs XWayland \
                     (no native Wayland client); running headless",
                );
            }
            let display = display?;
            match start(&display) {
                Ok(w) => Some(w),
                Err(e) => {
                    diag(&format!(
                        "DISPLAY={display}: no window ({e}); running headless"
                    ));
                    None
                }
            }
        })
        .is_some()
}

/// Hands a flipped frame to the window (no-op when headless).
pub fn present(frame: Frame) {
    if let Some(Some(w)) = WINDOW.get() {
        let mut p = w.shared.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.0 = Some(frame);
        w.shared.wake.notify_one();
    }
}

/// Whether the window was closed: the program should end.
pub fn close_requested() -> bool {
    CLOSED.load(Ordering::Acquire)
}

/// Pad buttons held through the window's keys.
pub fn pad_buttons() -> u32 {
    input::host_buttons()
}

fn keymap() -> &'static Keymap {
    static M: OnceLock<Result<Keymap, String>> = OnceLock::new();
    let m = M.get_or_init(|| {
        let text = std::env::var("APS5_KEYMAP").unwrap_or_default();
        Keymap::parse(&text).map_err(|e| format!("APS5_KEYMAP={text:?}: {e}"))
    });
    match m {
        Ok(m) => m,
        Err(e) => {
            diag(e);
            kernel::exit(2)
        }
    }
}

fn start(display: &str) -> Result<Window, String> {
    let map = keymap();
    let (conn, screen_num) = RustConnection::connect(Some(display)).map_err(|e| e.to_string())?;
    let conn = Arc::new(conn);
    let screen = conn.setup().roots[screen_num].clone();
    // 32-bit pixels with 8-bit red/green/blue masks: what nearly every X server offers.
    let visual = screen
        .allowed_depths
        .iter()
        .flat_map(|d| d.visuals.iter())
        .find(|v| v.visual_id == screen.root_visual);
    let bpp32 = conn
        .setup()
        .pixmap_formats
        .iter()
        .any(|f| f.depth == screen.root_depth && f.bits_per_pixel == 32);
    match visual {
        Some(v)
            if v.class == VisualClass::TRUE_COLOR
                && (v.red_mask, v.green_mask, v.blue_mask) == (0xff_0000, 0xff00, 0xff)
                && bpp32 => {}
        _ => {
            return Err(format!(
                "the screen's visual (depth {}) is not 24-bit true colour in 32-bit pixels",
                screen.root_depth
            ));
        }
    }
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let atoms = Atoms::new(&*conn)
        .map_err(|e| err(&e))?
        .reply()
        .map_err(|e| err(&e))?;
    let (w, h) = initial_size(screen.width_in_pixels, screen.height_in_pixels);
    let win = conn.generate_id().map_err(|e| err(&e))?;
    let gc = conn.generate_id().map_err(|e| err(&e))?;
    conn.create_window(
        x11rb::COPY_DEPTH_FROM_PARENT,
        win,
        screen.root,
        0,
        0,
        w,
        h,
        0,
        WindowClass::INPUT_OUTPUT,
        x11rb::COPY_FROM_PARENT,
        &CreateWindowAux::new()
            .background_pixel(screen.black_pixel)
            .event_mask(
                EventMask::KEY_PRESS
                    | EventMask::KEY_RELEASE
                    | EventMask::STRUCTURE_NOTIFY
                    | EventMask::EXPOSURE
                    | EventMask::FOCUS_CHANGE,
            ),
    )
    .map_err(|e| err(&e))?;
    let title = std::env::var("APS5_TITLE")
        .ok()
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "aps5".to_owned());
    let props = [
        conn.change_property8(
            PropMode::REPLACE,
            win,
            AtomEnum::WM_NAME,
            AtomEnum::STRING,
            title.as_bytes(),
        ),
        conn.change_property8(
            PropMode::REPLACE,
            win,
            atoms._NET_WM_NAME,
            atoms.UTF8_STRING,
            title.as_bytes(),
        ),
        conn.change_property8(
            PropMode::REPLACE,
            win,
            AtomEnum::WM_CLASS,
            AtomEnum::STRING,
            b"aps5\0aps5\0",
        ),
        conn.change_property32(
            PropMode::REPLACE,
            win,
            atoms.WM_PROTOCOLS,
            AtomEnum::ATOM,
            &[atoms.WM_DELETE_WINDOW],
        ),
    ];
    for p in props {
        p.map_err(|e| err(&e))?;
    }
    conn.create_gc(gc, win, &CreateGCAux::new())
        .map_err(|e| err(&e))?;
    let setup = conn.setup();
    let (min_kc, max_kc) = (setup.min_keycode, setup.max_keycode);
    let kbd = conn
        .get_keyboard_mapping(min_kc, max_kc - min_kc + 1)
        .map_err(|e| err(&e))?
        .reply()
        .map_err(|e| err(&e))?;
    conn.map_window(win).map_err(|e| err(&e))?;
    conn.flush().map_err(|e| err(&e))?;

    let shared = Arc::new(Shared {
        pending: Mutex::new((None, false)),
        wake: Condvar::new(),
        size: AtomicU32::new(u32::from(w) << 16 | u32::from(h)),
    });
    // Keysym of each keycode: the first (unshifted) column of the keyboard mapping.
    let per = usize::from(kbd.keysyms_per_keycode.max(1));
    let keysyms: Vec<u32> = kbd.keysyms.chunks(per).map(|c| c[0]).collect();
    {
        let (conn, shared) = (conn.clone(), shared.clone());
        let delete = atoms.WM_DELETE_WINDOW;
        spawn("aps5-window-events", move || {
            events(&conn, &shared, win, map, &keysyms, min_kc, delete)
        })?;
    }
    {
        let (conn, shared) = (conn.clone(), shared.clone());
        spawn("aps5-window-draw", move || draw(&conn, &shared, win, gc))?;
    }
    Ok(Window { shared })
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<(), String> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            // Every signal blocked: process-directed ones go to the guest's threads (its
            // handlers expect them), and a write to a dead X server fails with EPIPE
            // instead of raising SIGPIPE here.
            unsafe {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigfillset(&mut set);
                libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            }
            f()
        })
        .map(drop)
        .map_err(|e| format!("cannot start a thread: {e}"))
}

/// Marks the window closed; the next flip ends the program. A program that no longer
/// flips is ended from here after two seconds.
fn closed(shared: &Shared, conn: &RustConnection, win: u32) {
    CLOSED.store(true, Ordering::Release);
    shared.wake.notify_one();
    // Gone from the screen at once, whenever the program gets to its next flip.
    let _ = conn.destroy_window(win);
    let _ = conn.flush();
    let flips = input::flip_count();
    std::thread::sleep(Duration::from_secs(2));
    if input::flip_count() == flips {
        exit(0);
    }
}

/// Set by the first thread that ends the process.
static EXITING: AtomicBool = AtomicBool::new(false);

/// Ends the process through the guest's `exit` once: a second thread that gets here
/// (the window's fallback racing the guest's next flip) waits for the first to finish,
/// as two concurrent `exit` calls can deadlock.
pub fn exit(status: i32) -> ! {
    if EXITING.swap(true, Ordering::AcqRel) {
        loop {
            std::thread::park();
        }
    }
    kernel::exit(status)
}

#[allow(clippy::too_many_arguments)]
fn events(
    conn: &RustConnection,
    shared: &Shared,
    win: u32,
    map: &Keymap,
    keysyms: &[u32],
    min_kc: u8,
    delete: u32,
) {
    let keysym = |kc: u8| {
        keysyms
            .get(usize::from(kc.wrapping_sub(min_kc)))
            .copied()
            .unwrap_or(0)
    };
    let mut down: Vec<u32> = Vec::new();
    let update = |down: &[u32]| input::set_host_buttons(map.buttons(down));
    loop {
        let ev = match conn.wait_for_event() {
            Ok(ev) => ev,
            // The X server went away or closed our connection: like closing the window.
            Err(_) => return closed(shared, conn, win),
        };
        match ev {
            Event::KeyPress(k) => {
                let s = keysym(k.detail);
                if !down.contains(&s) {
                    down.push(s);
                    keyboard_key(s, true, &down);
                }
                update(&down);
            }
            Event::KeyRelease(k) => {
                // Auto-repeat sends release+press with one time stamp: not a release.
                if let Ok(Some(Event::KeyPress(n))) = conn.poll_for_event()
                    && n.detail == k.detail
                    && n.time == k.time
                {
                    continue;
                }
                let s = keysym(k.detail);
                down.retain(|&d| d != s);
                keyboard_key(s, false, &down);
                update(&down);
            }
            // Keys released while the window had no focus would stay held.
            Event::FocusOut(_) => {
                while let Some(s) = down.pop() {
                    keyboard_key(s, false, &down);
                }
                update(&down);
            }
            Event::ConfigureNotify(c) => {
                let size = u32::from(c.width) << 16 | u32::from(c.height);
                if shared.size.swap(size, Ordering::AcqRel) != size {
                    redraw(shared);
                }
            }
            Event::Expose(e) if e.count == 0 => redraw(shared),
            Event::ClientMessage(m) if m.data.as_data32()[0] == delete => {
                return closed(shared, conn, win);
            }
            _ => {}
        }
    }
}

/// The USB HID usage (page 7, what libSceKeyboard reports) of an X11 keysym; 0 for keys
/// the console keyboard has no usage for.
pub fn hid_usage(keysym: u32) -> u8 {
    match keysym {
        0x61..=0x7a => (keysym - 0x61) as u8 + 0x04, // a..z
        0x41..=0x5a => (keysym - 0x41) as u8 + 0x04, // A..Z (shifted column)
        0x31..=0x39 => (keysym - 0x31) as u8 + 0x1e, // 1..9
        0x30 => 0x27,
        0xffbe..=0xffc9 => (keysym - 0xffbe) as u8 + 0x3a, // F1..F12
        0xffe3 => 0xe0,                                    // Control_L
        0xffe1 => 0xe1,                                    // Shift_L
        0xffe9 => 0xe2,                                    // Alt_L
        0xffeb => 0xe3,                                    // Super_L
        0xffe4 => 0xe4,                                    // Control_R
        0xffe2 => 0xe5,                                    // Shift_R
        0xffea => 0xe6,                                    // Alt_R
        0xffec => 0xe7,                                    // Super_R
        _ => HID_KEYS
            .iter()
            .find(|&&(k, _)| k == keysym)
            .map_or(0, |&(_, u)| u),
    }
}

/// Keysym -> HID usage for the keys outside the ranges of [`hid_usage`].
const HID_KEYS: &[(u32, u8)] = &[
    (0xff0d, 0x28), // Return
    (0xff1b, 0x29), // Escape
    (0xff08, 0x2a), // BackSpace
    (0xff09, 0x2b), // Tab
    (0x0020, 0x2c), // space
    (0x002d, 0x2d), // minus
    (0x003d, 0x2e), // equal
    (0x005b, 0x2f), // bracketleft
    (0x005d, 0x30), // bracketright
    (0x005c, 0x31), // backslash
    (0x003b, 0x33), // semicolon
    (0x0027, 0x34), // apostrophe
    (0x0060, 0x35), // grave
    (0x002c, 0x36), // comma
    (0x002e, 0x37), // period
    (0x002f, 0x38), // slash
    (0xffe5, 0x39), // Caps_Lock
    (0xff61, 0x46), // Print
    (0xff14, 0x47), // Scroll_Lock
    (0xff13, 0x48), // Pause
    (0xff63, 0x49), // Insert
    (0xff50, 0x4a), // Home
    (0xff55, 0x4b), // Page_Up
    (0xffff, 0x4c), // Delete
    (0xff57, 0x4d), // End
    (0xff56, 0x4e), // Page_Down
    (0xff53, 0x4f), // Right
    (0xff51, 0x50), // Left
    (0xff54, 0x51), // Down
    (0xff52, 0x52), // Up
    (0xff7f, 0x53), // Num_Lock
    (0xff8d, 0x58), // KP_Enter
];

/// Hands a window key to libSceKeyboard, with the HID modifier byte of the keys held
/// after it (bit n = usage 0xE0 + n).
fn keyboard_key(keysym: u32, down: bool, held: &[u32]) {
    let modifiers = held
        .iter()
        .map(|&k| hid_usage(k))
        .filter(|u| (0xe0..=0xe7).contains(u))
        .fold(0u8, |m, u| m | 1 << (u - 0xe0));
    input::push_host_key(hid_usage(keysym), down, modifiers);
}

fn redraw(shared: &Shared) {
    let mut p = shared.pending.lock().unwrap_or_else(|e| e.into_inner());
    p.1 = true;
    shared.wake.notify_one();
}

fn draw(conn: &RustConnection, shared: &Shared, win: u32, gc: u32) {
    let mut last: Option<Frame> = None;
    let mut out = Vec::new();
    loop {
        {
            let mut p = shared.pending.lock().unwrap_or_else(|e| e.into_inner());
            while p.0.is_none() && !p.1 && !close_requested() {
                p = shared.wake.wait(p).unwrap_or_else(|e| e.into_inner());
            }
            if close_requested() {
                return;
            }
            if let Some(f) = p.0.take() {
                last = Some(f);
            }
            p.1 = false;
        }
        let Some(f) = &last else { continue };
        let size = shared.size.load(Ordering::Acquire);
        let (dw, dh) = ((size >> 16) as u16, size as u16);
        if dw == 0 || dh == 0 {
            continue;
        }
        scale(f, dw, dh, &mut out);
        let img = match Image::new(
            dw,
            dh,
            ScanlinePad::Pad32,
            24,
            BitsPerPixel::B32,
            ImageOrder::LsbFirst,
            std::borrow::Cow::Borrowed(&out[..]),
        ) {
            Ok(i) => i,
            Err(_) => continue,
        };
        if img.put(conn, win, gc, 0, 0).is_err() || conn.flush().is_err() {
            // The event thread sees the lost connection and ends the program.
            return;
        }
    }
}

/// Scales a frame into a `dw` x `dh` BGRX image: the largest rectangle of the frame's
/// aspect ratio, centred, each pixel taken from the source pixel it falls in; the rest
/// black.
pub fn scale(f: &Frame, dw: u16, dh: u16, out: &mut Vec<u8>) {
    let (dw, dh) = (usize::from(dw), usize::from(dh));
    let (sw, sh) = (f.width as usize, f.height as usize);
    out.clear();
    out.resize(dw * dh * 4, 0);
    if sw == 0 || sh == 0 {
        return;
    }
    // Fit: width-bound when dw/dh < sw/sh.
    let (rw, rh) = if dw * sh <= dh * sw {
        (dw, (dw * sh / sw).max(1))
    } else {
        ((dh * sw / sh).max(1), dh)
    };
    let (ox, oy) = ((dw - rw) / 2, (dh - rh) / 2);
    let xs: Vec<usize> = (0..rw).map(|x| x * sw / rw * 4).collect();
    for y in 0..rh {
        let src = &f.pixels[(y * sh / rh) * sw * 4..][..sw * 4];
        let dst = &mut out[((oy + y) * dw + ox) * 4..][..rw * 4];
        for (d, &sx) in dst.chunks_exact_mut(4).zip(&xs) {
            let s = &src[sx..sx + 4];
            if f.rgba {
                d.copy_from_slice(&[s[2], s[1], s[0], 0]);
            } else {
                d.copy_from_slice(&[s[0], s[1], s[2], 0]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keysyms_become_hid_usages() {
        // USB HID usage table, keyboard page: a 0x04, z 0x1d, 1 0x1e, 0 0x27, Enter 0x28,
        // F12 0x45, Up 0x52, left Shift 0xe1.
        let cases = [
            (u32::from(b'a'), 0x04),
            (u32::from(b'z'), 0x1d),
            (u32::from(b'1'), 0x1e),
            (u32::from(b'0'), 0x27),
            (0xff0d, 0x28),
            (0xffc9, 0x45),
            (0xff52, 0x52),
            (0xffe1, 0xe1),
            (0x1234, 0),
        ];
        for (sym, usage) in cases {
            assert_eq!(hid_usage(sym), usage, "{sym:#x}");
        }
    }

    #[test]
    fn the_window_starts_at_the_display_size_or_fits_the_screen() {
        assert_eq!(initial_size(2560, 1440), (1920, 1080));
        assert_eq!(initial_size(1600, 900), (1440, 810));
        assert_eq!(initial_size(1024, 768), (921, 518));
    }

    #[test]
    fn frames_scale_to_the_window_with_their_aspect_ratio() {
        // 4x2 frame: pixel i has blue = i; A8R8G8B8 (bytes B, G, R, A).
        let pixels: Vec<u8> = (0..8u8).flat_map(|i| [i, 10, 20, 0xff]).collect();
        let f = Frame {
            width: 4,
            height: 2,
            rgba: false,
            pixels,
        };
        let mut out = Vec::new();
        // Same size: a copy with X's BGRX order.
        scale(&f, 4, 2, &mut out);
        let blue: Vec<u8> = out.chunks_exact(4).map(|p| p[0]).collect();
        assert_eq!(blue, [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(&out[..4], &[0, 10, 20, 0]);
        // Twice the size: each pixel doubled.
        scale(&f, 8, 4, &mut out);
        let row1: Vec<u8> = out[32..64].chunks_exact(4).map(|p| p[0]).collect();
        assert_eq!(row1, [0, 0, 1, 1, 2, 2, 3, 3]);
        // A square window: a 4x2 picture centred between black bars of 1 row each.
        scale(&f, 4, 4, &mut out);
        assert!(out[..16].iter().all(|&b| b == 0));
        assert!(out[48..].iter().all(|&b| b == 0));
        assert_eq!(
            out[16..32]
                .chunks_exact(4)
                .map(|p| p[0])
                .collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        // A8B8G8R8: red and blue swap into place.
        let f = Frame { rgba: true, ..f };
        scale(&f, 4, 2, &mut out);
        assert_eq!(&out[..4], &[20, 10, 0, 0]);
    }
}
