//! Real OpenOrbis homebrew (shared/corpus/homebrew), relinked and run headless: the frames
//! it flips are checked against what its source draws.

mod common;

#[path = "../../../compiler/relink/tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Runs the relinked program with `APS5_HEADLESS=1`: these tests check frames, files and
/// messages, and must not open a window or play sound on a developer's desktop.
fn run_headless(out: &Path, env: &[(String, String)], limit: Duration) -> support::Run {
    let mut env = env.to_vec();
    env.push(("APS5_HEADLESS".to_owned(), "1".to_owned()));
    support::run(out, &[], &env, limit)
}

fn frames(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// The colour the OpenOrbis graphics sample (samples/graphics, 2020-05) gives pixel
/// (x, y) of its 1920x1080 Mandelbrot: escape-time over [-2.5, 1.5] x [-2, 2], at most 255
/// iterations, bail-out radius 2; blue = 255 * iterations / 20 below 20 iterations, else
/// black. Written from the sample's description, in the same double arithmetic.
fn mandelbrot_rgb(x: u32, y: u32) -> [u8; 3] {
    let pw = (1.5 - -2.5) / 1920.0;
    let ph = (2.0 - -2.0) / 1080.0;
    let mut cy = -2.0 + f64::from(y) * ph;
    if cy.abs() < ph / 2.0 {
        cy = 0.0;
    }
    let cx = -2.5 + f64::from(x) * pw;
    let (mut zx, mut zy, mut zx2, mut zy2) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let mut it = 0;
    while it < 255 && zx2 + zy2 < 4.0 {
        zy = 2.0 * zx * zy + cy;
        zx = zx2 - zy2 + cx;
        zx2 = zx * zx;
        zy2 = zy * zy;
        it += 1;
    }
    [0, 0, if it < 20 { (255 * it / 20) as u8 } else { 0 }]
}

#[test]
fn openorbis_graphics_sample_flips_its_mandelbrot() {
    let eboot = support::shared().join("corpus/homebrew/openorbis-samples/graphics/pkg/eboot.bin");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let cov = support::build_tree(&eboot, &[], &out);
    let missing: Vec<_> = cov
        .iter()
        .filter(|r| !r.implemented)
        .map(|r| &r.name)
        .collect();
    assert!(missing.is_empty(), "unimplemented imports: {missing:?}");
    let dir = tmp.path().join("frames");
    let env = [
        ("APS5_FRAMES_DIR".to_owned(), dir.display().to_string()),
        ("APS5_MAX_FRAMES".to_owned(), "2".to_owned()),
    ];
    let run = run_headless(&out, &env, Duration::from_secs(120));
    assert_eq!(run.status, Some(0), "{run:?}");
    let files = frames(&dir);
    let names: Vec<_> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["frame-00000.png", "frame-00001.png"], "{run:?}");
    for f in &files {
        let (w, h, rgb) = common::read_png(f);
        assert_eq!((w, h), (1920, 1080));
        let mut wrong = Vec::new();
        for y in 0..h {
            for x in 0..w {
                let i = ((y * w + x) * 3) as usize;
                let want = mandelbrot_rgb(x, y);
                if rgb[i..i + 3] != want {
                    wrong.push((x, y, rgb[i..i + 3].to_vec(), want));
                }
            }
        }
        let total = w * h;
        eprintln!(
            "{}: {}/{total} pixels match",
            f.display(),
            total as usize - wrong.len()
        );
        assert!(
            wrong.is_empty(),
            "{} wrong pixels, first: {:?}",
            wrong.len(),
            &wrong[..wrong.len().min(5)]
        );
    }
    // Spot checks that the reference itself is not degenerate: the set's inside is black,
    // the far corner escapes at once (1 iteration: blue 12), the main antenna row exists.
    assert_eq!(mandelbrot_rgb(1200, 540), [0, 0, 0]);
    assert_eq!(mandelbrot_rgb(0, 0), [0, 0, 12]);
    assert_ne!(mandelbrot_rgb(500, 540), mandelbrot_rgb(500, 300));
}

#[test]
fn ps4_2048_plays_a_scripted_game_headless() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let cov = support::build_ps4_2048(&out);
    for r in cov.iter().filter(|r| !r.implemented) {
        eprintln!(
            "not implemented (must not be called): {}::{} ({})",
            r.library,
            r.name.as_deref().unwrap_or("?"),
            r.nid
        );
    }
    // Start a game (cross on the menu), then one move every 40 frames.
    let script = tmp.path().join("input.txt");
    let mut text = String::from("# frame buttons\n0 -\n40 cross\n44 -\n");
    let moves = ["left", "up", "right", "down", "left", "up", "right", "down"];
    for (i, m) in moves.iter().enumerate() {
        let f = 80 + 40 * i;
        text.push_str(&format!("{f} {m}\n{} -\n", f + 4));
    }
    std::fs::write(&script, text).unwrap();
    let dir = tmp.path().join("frames");
    let env = [
        ("APS5_FRAMES_DIR".to_owned(), dir.display().to_string()),
        ("APS5_MAX_FRAMES".to_owned(), "600".to_owned()),
        ("APS5_INPUT_SCRIPT".to_owned(), script.display().to_string()),
    ];
    let run = run_headless(&out, &env, Duration::from_secs(300));
    assert_eq!(run.status, Some(0), "{run:?}");
    let files = frames(&dir);
    assert_eq!(files.len(), 600, "{run:?}");
    assert!(files[599].ends_with("frame-00599.png"));

    let frame = |n: usize| common::read_png(&files[n]);
    // The menu (before cross) and the game are not blank: many colours each.
    for n in [30, 70, 599] {
        let (w, h, rgb) = frame(n);
        assert_eq!((w, h), (1920, 1080));
        let mut colours: Vec<&[u8]> = rgb.chunks_exact(3).collect();
        colours.sort();
        colours.dedup();
        assert!(
            colours.len() >= 3,
            "frame {n} has {} colours",
            colours.len()
        );
    }
    // Cross left the menu: the frame changed.
    assert_ne!(
        frame(39).2,
        frame(70).2,
        "cross on the menu changed nothing"
    );
    // Every move changes the board (a new tile appears at least), and nothing changes
    // while no button is pressed.
    let mut changed = 0;
    for i in 0..moves.len() {
        let before = 80 + 40 * i - 1;
        let after = 80 + 40 * i + 30;
        let (w, _, a) = frame(before);
        let (_, _, b) = frame(after);
        assert_eq!(
            a,
            frame(before - 10).2,
            "board changed without input before move {i}"
        );
        if common::board(&a, w) != common::board(&b, w) {
            changed += 1;
        }
    }
    eprintln!("{changed}/{} moves changed the board", moves.len());
    assert!(
        changed >= moves.len() - 2,
        "only {changed}/{} moves changed the board",
        moves.len()
    );
}

#[test]
fn bad_headless_settings_stop_the_program_with_a_clear_message() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    support::build_ps4_2048(&out);
    let script = tmp.path().join("bad.txt");
    std::fs::write(&script, "0 -\n10 jump\n").unwrap();
    let env = [
        ("APS5_INPUT_SCRIPT".to_owned(), script.display().to_string()),
        ("APS5_MAX_FRAMES".to_owned(), "5".to_owned()),
    ];
    let run = run_headless(&out, &env, Duration::from_secs(60));
    assert_eq!(run.status, Some(2), "{run:?}");
    assert!(
        run.stderr
            .contains("bad.txt: line 2: unknown button \"jump\""),
        "{}",
        run.stderr
    );
    let env = [("APS5_MAX_FRAMES".to_owned(), "0".to_owned())];
    let run = run_headless(&out, &env, Duration::from_secs(60));
    assert_eq!(run.status, Some(2), "{run:?}");
    assert!(
        run.stderr
            .contains("APS5_MAX_FRAMES=\"0\" is not a positive number of frames"),
        "{}",
        run.stderr
    );
}

#[test]
fn ps4_2048_music_plays_through_audio_out_in_real_time() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    support::build_ps4_2048(&out);
    // The game streams /app0/assets/audio/bg.wav (not in the corpus): give it 3 s of tone.
    let (wav, samples) = common::tone_wav(3 * 48000, 1);
    std::fs::create_dir_all(out.join("app0/assets/audio")).unwrap();
    std::fs::write(out.join("app0/assets/audio/bg.wav"), wav).unwrap();
    let captured = tmp.path().join("audio.wav");
    let env = [
        ("APS5_MAX_FRAMES".to_owned(), "90".to_owned()),
        ("APS5_AUDIO_WAV".to_owned(), captured.display().to_string()),
    ];
    let t = std::time::Instant::now();
    let run = run_headless(&out, &env, Duration::from_secs(120));
    let wall = t.elapsed();
    assert_eq!(run.status, Some(0), "{run:?}");
    let bytes = std::fs::read(&captured).unwrap();
    assert!(bytes.len() > 44, "no audio was output: {run:?}");
    // PCM, 2 channels, 48 kHz, 16 bits, and the data size matches the file.
    assert_eq!(&bytes[..4], b"RIFF");
    assert_eq!(&bytes[20..24], &[1, 0, 2, 0]);
    assert_eq!(u32::from_le_bytes(bytes[24..28].try_into().unwrap()), 48000);
    assert_eq!(&bytes[34..36], &[16, 0]);
    let data_len = u32::from_le_bytes(bytes[40..44].try_into().unwrap()) as usize;
    assert_eq!(data_len, bytes.len() - 44);
    let got: Vec<i16> = bytes[44..]
        .chunks_exact(2)
        .map(|c| i16::from_le_bytes([c[0], c[1]]))
        .collect();
    let same = got.iter().zip(&samples).take_while(|(a, b)| a == b).count();
    eprintln!(
        "{same}/{} output samples equal the music file's; {:.2} s of audio in {:.2} s",
        got.len(),
        got.len() as f64 / 96000.0,
        wall.as_secs_f64()
    );
    assert_eq!(same, got.len(), "the output differs from the music file");
    // Output blocks for each buffer's duration: the program cannot get ahead of real
    // time by more than the buffer in flight (a non-blocking port would take the whole
    // 3 s file at once).
    let audio_s = got.len() as f64 / 96000.0;
    assert!(
        audio_s <= wall.as_secs_f64() + 0.05,
        "{audio_s:.2} s of audio within {:.2} s",
        wall.as_secs_f64()
    );
}

/// What the OpenOrbis keyboard sample (samples/keyboard, 2021-03) draws for a list of text
/// lines, rendered independently with the host FreeType from the sample's description: a
/// black 1920x1080 frame; line n drawn with the font at 30 pixels, pen starting at x 0 on
/// the baseline y = 35 + 40n; each byte's glyph rendered 8-bit and every non-zero
/// coverage value c written as the pixel (c, c, c) at (pen + left + x, baseline - top + y);
/// the pen advances by the glyph's advance (26.6, truncated).
struct TextRef {
    lib: freetype_sys::FT_Library,
    face: freetype_sys::FT_Face,
}

impl TextRef {
    fn new() -> TextRef {
        let path = std::ffi::CString::new(common::DEJAVU).unwrap();
        unsafe {
            let mut lib = std::ptr::null_mut();
            assert_eq!(freetype_sys::FT_Init_FreeType(&mut lib), 0);
            let mut face = std::ptr::null_mut();
            assert_eq!(
                freetype_sys::FT_New_Face(lib, path.as_ptr(), 0, &mut face),
                0
            );
            assert_eq!(freetype_sys::FT_Set_Pixel_Sizes(face, 0, 30), 0);
            TextRef { lib, face }
        }
    }

    fn frame(&self, lines: &[String]) -> Vec<u8> {
        let (w, h) = (1920i64, 1080i64);
        let mut rgb = vec![0u8; (w * h * 3) as usize];
        for (n, line) in lines.iter().enumerate() {
            let baseline = 35 + 40 * n as i64;
            let mut pen = 0i64;
            for b in line.bytes() {
                unsafe {
                    let gi = freetype_sys::FT_Get_Char_Index(self.face, b as _);
                    if freetype_sys::FT_Load_Glyph(self.face, gi, 0) != 0 {
                        continue;
                    }
                    let slot = (*self.face).glyph;
                    if freetype_sys::FT_Render_Glyph(slot, 0) != 0 {
                        continue;
                    }
                    let bm = &(*slot).bitmap;
                    for y in 0..i64::from(bm.rows) {
                        for x in 0..i64::from(bm.width) {
                            let c = *bm.buffer.offset((y * i64::from(bm.width) + x) as isize);
                            let px = pen + x + i64::from((*slot).bitmap_left);
                            let py = baseline + y - i64::from((*slot).bitmap_top);
                            if c != 0 && (0..w).contains(&px) && (0..h).contains(&py) {
                                let i = ((py * w + px) * 3) as usize;
                                rgb[i..i + 3].fill(c);
                            }
                        }
                    }
                    pen += (*slot).advance.x >> 6;
                }
            }
        }
        rgb
    }
}

impl Drop for TextRef {
    fn drop(&mut self) {
        unsafe {
            freetype_sys::FT_Done_Face(self.face);
            freetype_sys::FT_Done_FreeType(self.lib);
        }
    }
}

/// The sample's screen for the keys held: each key's character (quoted, with C escapes)
/// or `<keycode N>`, then the modifier and lock names it lists.
fn keyboard_screen(keys: &[&str], modifiers: &[&str], locks: &[&str]) -> Vec<String> {
    let mut v = vec!["Pressed keys:".to_owned()];
    v.extend(keys.iter().map(|k| k.to_string()));
    v.push("Modifier keys:".into());
    v.extend(modifiers.iter().map(|k| k.to_string()));
    v.push("Locked keys:".into());
    v.extend(locks.iter().map(|k| k.to_string()));
    v
}

#[test]
fn openorbis_keyboard_sample_draws_the_scripted_keys_with_freetype() {
    common::dejavu_present();
    let eboot = support::shared().join("corpus/homebrew/openorbis-samples/keyboard/pkg/eboot.bin");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let cov = support::build_tree(&eboot, &[], &out);
    let missing: Vec<_> = cov
        .iter()
        .filter(|r| !r.implemented)
        .map(|r| format!("{}::{}", r.library, r.name.as_deref().unwrap_or("?")))
        .collect();
    assert!(missing.is_empty(), "unimplemented imports: {missing:?}");
    // The sample opens /app0/font.ttf (its package ships a font there).
    std::fs::copy(common::DEJAVU, out.join("app0/font.ttf")).unwrap();

    // (first frame, script line, what the sample must draw from that frame on)
    type Step = (u64, &'static str, Vec<String>);
    let steps: Vec<Step> = vec![
        (0, "0 key:-", keyboard_screen(&[], &[], &[])),
        (10, "10 key:h,i", keyboard_screen(&["'h'", "'i'"], &[], &[])),
        (
            20,
            "20 key:lshift+a+1",
            keyboard_screen(&["'A'", "'!'"], &["Left Shift"], &[]),
        ),
        (
            30,
            "30 key:capslock",
            keyboard_screen(&["<keycode 57>"], &[], &["Caps Lock"]),
        ),
        (
            40,
            "40 key:q,f1",
            keyboard_screen(&["'Q'", "<keycode 58>"], &[], &["Caps Lock"]),
        ),
        (
            50,
            "50 key:rctrl,ralt,enter,backslash,apostrophe,tab",
            keyboard_screen(
                &["'\\n'", "'\\\\'", "'\\''", "'\\t'"],
                &["Right Control", "Right Alt"],
                &["Caps Lock"],
            ),
        ),
        (
            60,
            "60 key:capslock,numlock",
            keyboard_screen(&["<keycode 57>", "<keycode 83>"], &[], &["Num Lock"]),
        ),
        (
            70,
            "70 key:kp7",
            keyboard_screen(&["'7'"], &[], &["Num Lock"]),
        ),
        // text: one character every two frames: H at 80, released at 81, i at 82...
        (
            80,
            "80 text:\"Hi\"",
            keyboard_screen(&["'H'"], &["Left Shift"], &["Num Lock"]),
        ),
        (81, "", keyboard_screen(&[], &[], &["Num Lock"])),
        (82, "", keyboard_screen(&["'i'"], &[], &["Num Lock"])),
        (83, "", keyboard_screen(&[], &[], &["Num Lock"])),
    ];
    let mut script = String::from("# frame  keyboard\n");
    for (_, line, _) in &steps {
        if !line.is_empty() {
            script.push_str(line);
            script.push('\n');
        }
    }
    let script_path = tmp.path().join("keys.txt");
    std::fs::write(&script_path, &script).unwrap();
    let dir = tmp.path().join("frames");
    let total_frames = 90;
    let env = [
        ("APS5_FRAMES_DIR".to_owned(), dir.display().to_string()),
        ("APS5_MAX_FRAMES".to_owned(), total_frames.to_string()),
        (
            "APS5_INPUT_SCRIPT".to_owned(),
            script_path.display().to_string(),
        ),
    ];
    let run = run_headless(&out, &env, Duration::from_secs(180));
    assert_eq!(run.status, Some(0), "{run:?}");
    let files = frames(&dir);
    assert_eq!(files.len(), total_frames, "{run:?}");

    let reference = TextRef::new();
    let mut expected_screens = Vec::new();
    let (mut frames_checked, mut pixels_ok, mut pixels_total) = (0, 0usize, 0usize);
    for (i, (first, _, lines)) in steps.iter().enumerate() {
        let end = steps.get(i + 1).map_or(total_frames as u64, |s| s.0);
        let want = reference.frame(lines);
        // The reference is not degenerate: text has ink, and each step's screen differs
        // from the previous one.
        let ink = want.chunks_exact(3).filter(|p| p[0] != 0).count();
        assert!(ink > 500, "reference for {lines:?} has {ink} ink pixels");
        if let Some(prev) = expected_screens.last() {
            assert_ne!(prev, &want, "step {i} draws the same as the step before");
        }
        // Check the first, a middle and the last frame of the step.
        let mut check = vec![*first, (*first + end - 1) / 2, end - 1];
        check.dedup();
        for n in check {
            let (w, h, got) = common::read_png(&files[n as usize]);
            assert_eq!((w, h), (1920, 1080));
            let same = got
                .chunks_exact(3)
                .zip(want.chunks_exact(3))
                .filter(|(a, b)| a == b)
                .count();
            pixels_ok += same;
            pixels_total += (w * h) as usize;
            frames_checked += 1;
            if same != (w * h) as usize {
                let first_bad = got
                    .chunks_exact(3)
                    .zip(want.chunks_exact(3))
                    .position(|(a, b)| a != b)
                    .unwrap();
                panic!(
                    "frame {n}: {same}/{} pixels as expected for {lines:?}; first difference at \
                     ({}, {})\nstdout: {}\nstderr: {}",
                    w * h,
                    first_bad % 1920,
                    first_bad / 1920,
                    run.stdout,
                    run.stderr
                );
            }
        }
        expected_screens.push(want);
    }
    eprintln!(
        "{frames_checked} frames of {} scripted keyboard states: {pixels_ok}/{pixels_total} pixels \
         equal the reference text rendering",
        steps.len()
    );
}
