//! The display window under a real X server (Xvfb): real homebrew, relinked and run with
//! `DISPLAY` set. The window's contents are read back from the server (`GetImage`) and
//! compared pixel by pixel with the PNG frames of the same run; keys are typed through
//! XTest; closing the window (WM_DELETE_WINDOW, or the X server going away) ends the
//! program with status 0.
//!
//! Needs `Xvfb` (CI installs it); without it each test says so and passes.

mod common;

#[path = "../../../compiler/relink/tests/support/mod.rs"]
mod support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use x11rb::connection::Connection;
use x11rb::protocol::xproto::{
    AtomEnum, ChangeWindowAttributesAux, ClientMessageEvent, ConnectionExt as _, EventMask,
    ImageFormat, InputFocus,
};
use x11rb::rust_connection::RustConnection;

/// An Xvfb server on a free display number, killed on drop.
struct Xvfb {
    child: Child,
    display: String,
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `Xvfb -screen 0 WxHx24` on a display number it picks itself (`-displayfd`, so
/// parallel tests and other servers never collide); None (with a message) when Xvfb is
/// not installed.
fn xvfb(w: u32, h: u32) -> Option<Xvfb> {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let wfd = fds[1];
    let mut cmd = Command::new("Xvfb");
    cmd.args([
        "-displayfd".into(),
        wfd.to_string(),
        "-screen".into(),
        "0".into(),
        format!("{w}x{h}x24"),
        "-nolisten".into(),
        "tcp".into(),
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    // The write end must survive exec in the child only.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(move || {
            if libc::fcntl(wfd, libc::F_SETFD, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = match cmd.spawn() {
        Ok(c) => c,
        // A missing X server fails the test (CI installs it) unless the developer opts out.
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                && std::env::var_os("APS5_SKIP_WINDOW_TESTS").is_some() =>
        {
            eprintln!("SKIPPED (APS5_SKIP_WINDOW_TESTS): Xvfb is not installed");
            return None;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
            "Xvfb is not installed: apt-get install xvfb (.ci/run does), or set \
             APS5_SKIP_WINDOW_TESTS=1 to skip the window tests"
        ),
        Err(e) => panic!("cannot start Xvfb: {e}"),
    };
    drop(write);
    // Xvfb writes the display number and a newline once it accepts connections.
    let mut number = String::new();
    std::fs::File::from(read)
        .read_to_string(&mut number)
        .expect("read Xvfb's display number");
    let mut x = Xvfb {
        child,
        display: format!(":{}", number.trim()),
    };
    assert!(
        !number.trim().is_empty() && x.child.try_wait().unwrap().is_none(),
        "Xvfb did not start"
    );
    RustConnection::connect(Some(&x.display))
        .unwrap_or_else(|e| panic!("Xvfb on {} refuses connections: {e}", x.display));
    Some(x)
}

/// Relinks a corpus program into `out`.
fn build(eboot: &str, modules: &[&str], out: &Path) {
    let shared = support::shared();
    let mods: Vec<PathBuf> = modules.iter().map(|m| shared.join(m)).collect();
    support::build_tree(&shared.join(eboot), &mods, out);
}

/// Starts the relinked program with `env` (stdout/stderr collected by threads).
struct Program {
    child: Child,
    stderr: std::thread::JoinHandle<String>,
}

fn start(out: &Path, env: &[(&str, String)]) -> Program {
    let mut cmd = aps5_relink::run_command(out, &out.join("data"), &[]);
    cmd.env_remove("APS5_HEADLESS")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn app.elf");
    let mut se = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    Program { child, stderr }
}

impl Program {
    /// Waits for the exit status (panics after `limit`).
    fn wait(mut self, limit: Duration) -> (i32, String) {
        let t = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                use std::os::unix::process::ExitStatusExt;
                let code = st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0));
                return (code, self.stderr.join().unwrap());
            }
            if t.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "the program did not end within {limit:?}; stderr: {}",
                    self.stderr.join().unwrap()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Starts the program in a window titled `title` on `display`, its frames written to
/// `dir`, running until the test ends it; `extra` adds variables.
fn start_windowed(
    out: &Path,
    display: &str,
    title: &str,
    dir: &Path,
    extra: &[(&str, String)],
) -> Program {
    let mut env = vec![
        ("DISPLAY", display.to_owned()),
        ("APS5_TITLE", title.to_owned()),
        ("APS5_FRAMES_DIR", dir.display().to_string()),
        ("APS5_MAX_FRAMES", "100000".to_owned()),
    ];
    env.extend_from_slice(extra);
    start(out, &env)
}

/// Finds the top-level window titled `title` (WM_NAME), waiting up to 60 s.
fn find_window(conn: &RustConnection, title: &str) -> u32 {
    let root = conn.setup().roots[0].root;
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(60) {
        let tree = conn.query_tree(root).unwrap().reply().unwrap();
        for w in tree.children {
            let name = conn
                .get_property(false, w, AtomEnum::WM_NAME, AtomEnum::STRING, 0, 256)
                .unwrap()
                .reply()
                .unwrap();
            if name.value == title.as_bytes() {
                return w;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no window titled {title:?} appeared");
}

/// The window's pixels as read back from the X server: (width, height, RGB bytes).
fn grab(conn: &RustConnection, win: u32) -> (u32, u32, Vec<u8>) {
    let g = conn.get_geometry(win).unwrap().reply().unwrap();
    let img = conn
        .get_image(
            ImageFormat::Z_PIXMAP,
            win,
            0,
            0,
            g.width,
            g.height,
            u32::MAX,
        )
        .unwrap()
        .reply()
        .unwrap();
    // Xvfb's 24-bit depth: 32-bit little-endian pixels 0x00RRGGBB.
    let rgb = img
        .data
        .chunks_exact(4)
        .flat_map(|p| [p[2], p[1], p[0]])
        .collect();
    (u32::from(g.width), u32::from(g.height), rgb)
}

/// Waits until `dir/frame-NNNNN.png` for flip `n` exists (and the next, so it is complete).
fn wait_frame(dir: &Path, n: u32) -> PathBuf {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(120) {
        if dir.join(format!("frame-{:05}.png", n + 1)).exists() {
            return dir.join(format!("frame-{n:05}.png"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("flip {n} never came");
}

fn frame_count(dir: &Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

/// Compares a window grab with a frame scaled the way the window shows it: the largest
/// centred rectangle of the frame's aspect ratio, each pixel the frame's pixel it falls
/// in, black around it. Returns the number of equal pixels.
fn compare(win: &(u32, u32, Vec<u8>), frame: &(u32, u32, Vec<u8>)) -> usize {
    let (ww, wh, w) = (win.0 as u64, win.1 as u64, &win.2);
    let (fw, fh, f) = (frame.0 as u64, frame.1 as u64, &frame.2);
    let (rw, rh) = if ww * fh <= wh * fw {
        (ww, ww * fh / fw)
    } else {
        (wh * fw / fh, wh)
    };
    let (ox, oy) = ((ww - rw) / 2, (wh - rh) / 2);
    let mut same = 0;
    for y in 0..wh {
        for x in 0..ww {
            let a = ((y * ww + x) * 3) as usize;
            let want = if (ox..ox + rw).contains(&x) && (oy..oy + rh).contains(&y) {
                let (sx, sy) = ((x - ox) * fw / rw, (y - oy) * fh / rh);
                let b = ((sy * fw + sx) * 3) as usize;
                [f[b], f[b + 1], f[b + 2]]
            } else {
                [0, 0, 0]
            };
            if w[a..a + 3] == want {
                same += 1;
            }
        }
    }
    same
}

/// Resizes the window (as a user or window manager would) and waits until its contents
/// equal the frame scaled to the new size; returns the equal pixel count.
fn resized(conn: &RustConnection, win: u32, w: u32, h: u32, frame: &(u32, u32, Vec<u8>)) -> usize {
    conn.configure_window(
        win,
        &x11rb::protocol::xproto::ConfigureWindowAux::new()
            .width(w)
            .height(h),
    )
    .unwrap();
    conn.get_input_focus().unwrap().reply().unwrap();
    let mut best = 0;
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(20) {
        let g = grab(conn, win);
        if (g.0, g.1) == (w, h) {
            best = compare(&g, frame);
            if best == (w * h) as usize {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!(
        "resized to {w}x{h}: {best}/{} pixels equal the frame scaled with bars",
        w * h
    );
    best
}

const GRAPHICS: &str = "corpus/homebrew/openorbis-samples/graphics/pkg/eboot.bin";

/// Runs the Mandelbrot sample in a window on a `sw` x `sh` screen, checks the window
/// shows its frames at `want` size, then ends it with `close`.
fn mandelbrot_in_window(sw: u32, sh: u32, want: (u32, u32), close: impl FnOnce(&mut Xvfb, u32)) {
    let Some(mut x) = xvfb(sw, sh) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    build(GRAPHICS, &[], &out);
    let dir = tmp.path().join("frames");
    let title = "Mandelbrot (aps5 window test)";
    let prog = start_windowed(&out, &x.display, title, &dir, &[]);
    let (conn, _) = RustConnection::connect(Some(&x.display)).unwrap();
    let win = find_window(&conn, title);
    let png = wait_frame(&dir, 3);
    // The frame reaches the server a little after the flip: retry for a while.
    let frame = common::read_png(&png);
    let mut best = 0;
    let mut grabbed = (0, 0);
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(20) {
        let g = grab(&conn, win);
        grabbed = (g.0, g.1);
        if grabbed == want {
            best = compare(&g, &frame);
            if best == (want.0 * want.1) as usize {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!(
        "window {}x{} on a {sw}x{sh} screen: {best}/{} pixels equal the flipped frame",
        grabbed.0,
        grabbed.1,
        want.0 * want.1
    );
    assert_eq!(grabbed, want, "window size");
    assert_eq!(best, (want.0 * want.1) as usize, "window contents");
    // A square window: the picture keeps its aspect ratio between black bars.
    let (w, h) = (want.1 * 2 / 3, want.1 * 2 / 3);
    assert_eq!(resized(&conn, win, w, h, &frame), (w * h) as usize);
    let before = frame_count(&dir);
    close(&mut x, win);
    let (status, stderr) = prog.wait(Duration::from_secs(30));
    assert_eq!(status, 0, "{stderr}");
    let after = frame_count(&dir);
    eprintln!("closed after {before}..{after} flips");
    assert!(after < 100000 && after >= before, "{before} {after}");
}

#[test]
fn the_window_shows_the_flipped_frames_and_closing_it_ends_the_program() {
    mandelbrot_in_window(2560, 1440, (1920, 1080), |x, win| {
        // What a window manager sends when the user closes the window.
        let (conn, _) = RustConnection::connect(Some(&x.display)).unwrap();
        let atom = |n: &[u8]| conn.intern_atom(false, n).unwrap().reply().unwrap().atom;
        let (protocols, delete) = (atom(b"WM_PROTOCOLS"), atom(b"WM_DELETE_WINDOW"));
        let ev = ClientMessageEvent::new(32, win, protocols, [delete, 0, 0, 0, 0]);
        conn.send_event(false, win, EventMask::NO_EVENT, ev)
            .unwrap();
        // A round trip: the server has handled the request before this connection closes.
        conn.get_input_focus().unwrap().reply().unwrap();
    });
}

#[test]
fn the_window_scales_to_a_small_screen_and_a_lost_x_server_ends_the_program() {
    // 90% of 1600x900 is 1440x810: every window pixel is the frame's nearest pixel.
    mandelbrot_in_window(1600, 900, (1440, 810), |x, _| {
        let _ = x.child.kill();
        let _ = x.child.wait();
    });
}

#[test]
fn keys_typed_into_the_window_play_ps4_2048() {
    let Some(x) = xvfb(2560, 1440) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    build(
        "corpus/homebrew/ps4-2048/eboot.bin",
        &["corpus/homebrew/ps4-2048/sce_module/libc.prx"],
        &out,
    );
    let dir = tmp.path().join("frames");
    let title = "PS4 2048 (aps5 window test)";
    // What `aps5 run` passes for `[input] cross = ["space"]`: space replaces the default
    // Return and X; the arrows keep their defaults.
    let keymap = [("APS5_KEYMAP", "cross=space".to_owned())];
    let prog = start_windowed(&out, &x.display, title, &dir, &keymap);
    let (conn, _) = RustConnection::connect(Some(&x.display)).unwrap();
    let win = find_window(&conn, title);
    conn.set_input_focus(InputFocus::PARENT, win, x11rb::CURRENT_TIME)
        .unwrap();
    conn.flush().unwrap();
    let root = conn.setup().roots[0].root;
    // Press and hold for a few flips, then release and let the game settle.
    let press = |sym: u32| {
        let kc = keycode(&conn, sym);
        for kind in [
            x11rb::protocol::xproto::KEY_PRESS_EVENT,
            x11rb::protocol::xproto::KEY_RELEASE_EVENT,
        ] {
            x11rb::protocol::xtest::fake_input(&conn, kind, kc, 0, root, 0, 0, 0).unwrap();
            conn.flush().unwrap();
            std::thread::sleep(Duration::from_millis(150));
        }
        std::thread::sleep(Duration::from_millis(500));
        // The newest PNG may still be being written: take the one before.
        frame_count(&dir) as u32 - 2
    };
    wait_frame(&dir, 30);
    let menu = frame_count(&dir) as u32 - 2;
    // Return is no longer cross: the menu stays.
    let after_return = press(0xff0d);
    // Space is: it starts the game.
    let started = press(0x20);
    let mut marks = vec![started];
    // Left, Up, Right, Down (X keysyms), twice.
    for sym in [
        0xff51, 0xff52, 0xff53, 0xff54, 0xff51, 0xff52, 0xff53, 0xff54,
    ] {
        marks.push(press(sym));
    }
    // Close through the window manager's message.
    let atom = |n: &[u8]| conn.intern_atom(false, n).unwrap().reply().unwrap().atom;
    let (protocols, delete) = (atom(b"WM_PROTOCOLS"), atom(b"WM_DELETE_WINDOW"));
    let ev = ClientMessageEvent::new(32, win, protocols, [delete, 0, 0, 0, 0]);
    conn.send_event(false, win, EventMask::NO_EVENT, ev)
        .unwrap();
    conn.flush().unwrap();
    let (status, stderr) = prog.wait(Duration::from_secs(30));
    assert_eq!(status, 0, "{stderr}");

    let png = |n: u32| common::read_png(&dir.join(format!("frame-{n:05}.png")));
    assert_eq!(
        png(menu).2,
        png(after_return).2,
        "Return still acts although [input] gave cross to space"
    );
    assert_ne!(
        png(after_return).2,
        png(marks[0]).2,
        "space (cross) on the menu changed nothing"
    );
    let mut changed = 0;
    for pair in marks.windows(2) {
        let (w, _, a) = png(pair[0]);
        let (_, _, b) = png(pair[1]);
        if common::board(&a, w) != common::board(&b, w) {
            changed += 1;
        }
    }
    eprintln!(
        "{changed}/{} arrow keys changed the board (flips at the marks: {marks:?})",
        marks.len() - 1
    );
    // A move that slides nothing is the game's rule, not lost input (new tiles land at
    // random): most of the 8 moves must act.
    assert!(
        changed >= 5,
        "only {changed} of {} moves changed the board",
        marks.len() - 1
    );
}

/// Xvfb's keycode for a keysym (first column of the keyboard mapping).
fn keycode(conn: &RustConnection, sym: u32) -> u8 {
    let setup = conn.setup();
    let (min, max) = (setup.min_keycode, setup.max_keycode);
    let map = conn
        .get_keyboard_mapping(min, max - min + 1)
        .unwrap()
        .reply()
        .unwrap();
    let per = usize::from(map.keysyms_per_keycode);
    let i = map
        .keysyms
        .chunks(per)
        .position(|c| c[0] == sym)
        .unwrap_or_else(|| panic!("Xvfb's keymap has no keysym {sym:#x}"));
    min + i as u8
}

#[test]
fn keys_typed_into_the_window_reach_libscekeyboard() {
    common::dejavu_present();
    let Some(x) = xvfb(2560, 1440) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    build(
        "corpus/homebrew/openorbis-samples/keyboard/pkg/eboot.bin",
        &[],
        &out,
    );
    // The sample draws the keys held with the font its package ships as /app0/font.ttf.
    std::fs::copy(common::DEJAVU, out.join("app0/font.ttf")).unwrap();

    // The oracle: the same program, headless, with Left Shift + H held by the input
    // script (libSceKeyboard's own path): what it draws then is what typing must draw.
    let script = tmp.path().join("keys.txt");
    std::fs::write(&script, "0 key:lshift+h\n").unwrap();
    let ref_dir = tmp.path().join("ref");
    let run = support::run(
        &out,
        &[],
        &[
            ("APS5_HEADLESS".to_owned(), "1".to_owned()),
            ("APS5_FRAMES_DIR".to_owned(), ref_dir.display().to_string()),
            ("APS5_MAX_FRAMES".to_owned(), "4".to_owned()),
            ("APS5_INPUT_SCRIPT".to_owned(), script.display().to_string()),
        ],
        Duration::from_secs(120),
    );
    assert_eq!(run.status, Some(0), "{run:?}");
    let want = common::read_png(&ref_dir.join("frame-00003.png"));

    let dir = tmp.path().join("frames");
    let title = "Keyboard (aps5 window test)";
    let prog = start_windowed(&out, &x.display, title, &dir, &[]);
    let (conn, _) = RustConnection::connect(Some(&x.display)).unwrap();
    let win = find_window(&conn, title);
    conn.set_input_focus(InputFocus::PARENT, win, x11rb::CURRENT_TIME)
        .unwrap();
    let root = conn.setup().roots[0].root;
    let fake = |kind: u8, sym: u32| {
        x11rb::protocol::xtest::fake_input(&conn, kind, keycode(&conn, sym), 0, root, 0, 0, 0)
            .unwrap();
        conn.get_input_focus().unwrap().reply().unwrap();
    };
    use x11rb::protocol::xproto::{KEY_PRESS_EVENT, KEY_RELEASE_EVENT};
    let before = wait_frame(&dir, 5);
    // Shift_L, then h, held for a moment.
    fake(KEY_PRESS_EVENT, 0xffe1);
    fake(KEY_PRESS_EVENT, u32::from(b'h'));
    std::thread::sleep(Duration::from_millis(700));
    let held = frame_count(&dir) as u32 - 2;
    fake(KEY_RELEASE_EVENT, u32::from(b'h'));
    fake(KEY_RELEASE_EVENT, 0xffe1);
    std::thread::sleep(Duration::from_millis(300));
    let ev = ClientMessageEvent::new(
        32,
        win,
        conn.intern_atom(false, b"WM_PROTOCOLS")
            .unwrap()
            .reply()
            .unwrap()
            .atom,
        [
            conn.intern_atom(false, b"WM_DELETE_WINDOW")
                .unwrap()
                .reply()
                .unwrap()
                .atom,
            0,
            0,
            0,
            0,
        ],
    );
    conn.send_event(false, win, EventMask::NO_EVENT, ev)
        .unwrap();
    conn.get_input_focus().unwrap().reply().unwrap();
    let (status, stderr) = prog.wait(Duration::from_secs(30));
    assert_eq!(status, 0, "{stderr}");

    let got = common::read_png(&dir.join(format!("frame-{held:05}.png")));
    let same = got
        .2
        .chunks_exact(3)
        .zip(want.2.chunks_exact(3))
        .filter(|(a, b)| a == b)
        .count();
    eprintln!(
        "frame {held} (Shift+H typed in the window): {same}/{} pixels equal the scripted \
         Shift+H frame",
        want.0 * want.1
    );
    assert_eq!((got.0, got.1), (want.0, want.1));
    assert_ne!(
        common::read_png(&before).2,
        want.2,
        "the reference does not differ from the screen with no key"
    );
    assert_eq!(same, (want.0 * want.1) as usize);
}

#[test]
fn a_bad_keymap_stops_the_program_naming_the_key() {
    let Some(x) = xvfb(1600, 900) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    build(GRAPHICS, &[], &out);
    let prog = start(
        &out,
        &[
            ("DISPLAY", x.display.clone()),
            ("APS5_KEYMAP", "cross=Retrun".to_owned()),
        ],
    );
    let (status, stderr) = prog.wait(Duration::from_secs(60));
    assert_eq!(status, 2, "{stderr}");
    assert!(
        stderr.contains("APS5_KEYMAP=\"cross=Retrun\": cross: unknown key `Retrun`"),
        "{stderr}"
    );
}

#[test]
fn aps5_headless_keeps_the_program_off_the_display() {
    let Some(x) = xvfb(1600, 900) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    build(GRAPHICS, &[], &out);
    // Windows made by any client are reported to us (CreateNotify on the root).
    let (conn, _) = RustConnection::connect(Some(&x.display)).unwrap();
    let root = conn.setup().roots[0].root;
    conn.change_window_attributes(
        root,
        &ChangeWindowAttributesAux::new().event_mask(EventMask::SUBSTRUCTURE_NOTIFY),
    )
    .unwrap();
    conn.get_input_focus().unwrap().reply().unwrap();
    let windows_made = |headless: bool| {
        let dir = tmp.path().join(format!("frames-{headless}"));
        let mut env = vec![
            ("DISPLAY", x.display.clone()),
            ("APS5_FRAMES_DIR", dir.display().to_string()),
            ("APS5_MAX_FRAMES", "3".to_owned()),
        ];
        if headless {
            env.push(("APS5_HEADLESS", "1".to_owned()));
        }
        let (status, stderr) = start(&out, &env).wait(Duration::from_secs(60));
        assert_eq!(status, 0, "{stderr}");
        assert_eq!(frame_count(&dir), 3, "{stderr}");
        conn.get_input_focus().unwrap().reply().unwrap();
        let mut made = 0;
        while let Some(ev) = conn.poll_for_event().unwrap() {
            if matches!(ev, x11rb::protocol::Event::CreateNotify(_)) {
                made += 1;
            }
        }
        made
    };
    assert_eq!(windows_made(true), 0, "APS5_HEADLESS=1 made a window");
    // The same run without it does make one: the check above can see windows.
    assert_eq!(windows_made(false), 1);
}
