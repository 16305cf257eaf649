//! Helpers shared by the integration tests of this crate (each test binary uses a part).

// Each test binary compiles this module and uses only some of it.
#![allow(dead_code)]

use std::path::Path;

/// The system font the keyboard tests give the sample as its `/app0/font.ttf`.
pub const DEJAVU: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// Fails the test, saying what to install, when [`DEJAVU`] is missing.
pub fn dejavu_present() {
    assert!(
        Path::new(DEJAVU).is_file(),
        "{DEJAVU} is needed by this test: install fonts-dejavu-core"
    );
}

/// Decodes a PNG written by libSceVideoOut: (width, height, RGB bytes).
pub fn read_png(p: &Path) -> (u32, u32, Vec<u8>) {
    let file = std::fs::File::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut dec = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut buf = vec![0; dec.output_buffer_size().expect("frame size fits memory")];
    let info = dec.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb, "{}", p.display());
    assert_eq!(info.bit_depth, png::BitDepth::Eight, "{}", p.display());
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// The 4x4 board of PS4-2048 (grid cell centres in a 1920x1080 frame, from its frames):
/// an RGB sample per cell.
pub fn board(rgb: &[u8], w: u32) -> Vec<[u8; 3]> {
    let mut cells = Vec::new();
    for row in 0..4u32 {
        for col in 0..4u32 {
            // Cell centres: x = 635 + 170*col, y = 315 + 170*row; sample off the digits.
            let (x, y) = (635 + 170 * col - 50, 315 + 170 * row - 50);
            let i = ((y * w + x) * 3) as usize;
            cells.push([rgb[i], rgb[i + 1], rgb[i + 2]]);
        }
    }
    cells
}

/// 16-bit stereo 48 kHz WAV of `frames` sample frames of a 440 Hz tone, and its samples;
/// the right channel is the left divided by `right_div` (1: the same on both).
pub fn tone_wav(frames: usize, right_div: i16) -> (Vec<u8>, Vec<i16>) {
    let samples: Vec<i16> = (0..frames)
        .flat_map(|i| {
            let v =
                (8000.0 * (2.0 * std::f64::consts::PI * 440.0 * i as f64 / 48000.0).sin()) as i16;
            [v, v / right_div]
        })
        .collect();
    let data: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
    let mut wav = Vec::new();
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    for v in [16u32, 0x0002_0001, 48000, 48000 * 4, 0x0010_0004] {
        wav.extend_from_slice(&v.to_le_bytes());
    }
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&(data.len() as u32).to_le_bytes());
    wav.extend_from_slice(&data);
    (wav, samples)
}

/// Fails the test, saying what to install, when the host has no ALSA library.
pub fn libasound_present() {
    let ok = unsafe { !libc::dlopen(c"libasound.so.2".as_ptr(), libc::RTLD_NOW).is_null() };
    assert!(
        ok,
        "libasound.so.2 is needed by this test (apt-get install libasound2-dev / libasound2)"
    );
}
