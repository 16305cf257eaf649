//! `libSceAudioOut`: output ports with the console's blocking timing.
//!
//! Samples go to the host's sound output when there is one ([`crate::host_audio`]: ALSA,
//! loaded at run time, which reaches PulseAudio/PipeWire through their ALSA plugins), and
//! to `APS5_AUDIO_WAV` when that is set (the first port opened to that file, later ports
//! to `<name>-<handle>.wav`); with neither they are dropped.
//!
//! `sceAudioOutOutput` returns once the previously queued buffer has played (one buffer in
//! flight, `len / freq` seconds each, on the host monotonic clock), and additionally
//! blocks while the host device's buffer (about four port buffers) is full, so a device
//! that plays slower than the host clock sets the pace.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aps5_prx_macros::nid;

use crate::diag;
use crate::host_audio::Pcm;

/// `SCE_AUDIO_OUT_ERROR_NOT_OPENED`.
pub const ERROR_NOT_OPENED: i32 = 0x8026_0001_u32 as i32;
/// `SCE_AUDIO_OUT_ERROR_INVALID_PORT`.
pub const ERROR_INVALID_PORT: i32 = 0x8026_0003_u32 as i32;
/// `SCE_AUDIO_OUT_ERROR_PORT_FULL`.
pub const ERROR_PORT_FULL: i32 = 0x8026_0005_u32 as i32;
/// `SCE_AUDIO_OUT_ERROR_INVALID_SIZE`.
pub const ERROR_INVALID_SIZE: i32 = 0x8026_0006_u32 as i32;
/// `SCE_AUDIO_OUT_ERROR_INVALID_FORMAT`.
pub const ERROR_INVALID_FORMAT: i32 = 0x8026_0007_u32 as i32;
/// `SCE_AUDIO_OUT_ERROR_INVALID_SAMPLE_FREQ`.
pub const ERROR_INVALID_SAMPLE_FREQ: i32 = 0x8026_0008_u32 as i32;

const PORTS: usize = 8;

/// Sample layout of a port's data format (`SCE_AUDIO_OUT_PARAM_FORMAT_*`, the low byte of
/// `param`): (channels, float).
pub fn format(param: u32) -> Option<(u16, bool)> {
    Some(match param & 0xff {
        0 => (1, false),
        1 => (2, false),
        2 | 6 => (8, false),
        3 => (1, true),
        4 => (2, true),
        5 | 7 => (8, true),
        _ => return None,
    })
}

/// The 44-byte header of a WAV file holding `data_len` bytes of samples.
pub fn wav_header(channels: u16, float: bool, freq: u32, data_len: u32) -> [u8; 44] {
    let bytes_per_sample: u16 = if float { 4 } else { 2 };
    let block = channels * bytes_per_sample;
    let mut h = [0u8; 44];
    h[0..4].copy_from_slice(b"RIFF");
    h[4..8].copy_from_slice(&(36 + data_len).to_le_bytes());
    h[8..16].copy_from_slice(b"WAVEfmt ");
    h[16..20].copy_from_slice(&16u32.to_le_bytes());
    // WAVE_FORMAT_IEEE_FLOAT (3) or WAVE_FORMAT_PCM (1).
    h[20..22].copy_from_slice(&(if float { 3u16 } else { 1 }).to_le_bytes());
    h[22..24].copy_from_slice(&channels.to_le_bytes());
    h[24..28].copy_from_slice(&freq.to_le_bytes());
    h[28..32].copy_from_slice(&(freq * u32::from(block)).to_le_bytes());
    h[32..34].copy_from_slice(&block.to_le_bytes());
    h[34..36].copy_from_slice(&(bytes_per_sample * 8).to_le_bytes());
    h[36..40].copy_from_slice(b"data");
    h[40..44].copy_from_slice(&data_len.to_le_bytes());
    h
}

struct Port {
    len: u32,
    freq: u32,
    channels: u16,
    float: bool,
    next: Option<Instant>,
    wav: Option<(File, u32)>,
    /// The host device; written outside the ports' lock (it blocks).
    host: Option<Arc<Mutex<Pcm>>>,
}

impl Port {
    fn bytes(&self) -> usize {
        self.len as usize * usize::from(self.channels) * if self.float { 4 } else { 2 }
    }
}

static PORTS_STATE: Mutex<[Option<Port>; PORTS]> = Mutex::new([const { None }; PORTS]);
static OPENED: Mutex<u32> = Mutex::new(0);

fn wav_path(handle: i32) -> Option<PathBuf> {
    let base = PathBuf::from(std::env::var_os("APS5_AUDIO_WAV")?);
    let mut opened = OPENED.lock().unwrap_or_else(|e| e.into_inner());
    *opened += 1;
    if *opened == 1 {
        return Some(base);
    }
    let stem = base.file_stem().unwrap_or_default().to_string_lossy();
    Some(base.with_file_name(format!("{stem}-{handle}.wav")))
}

/// `sceAudioOutInit()`.
#[nid("sceAudioOutInit")]
pub extern "C" fn sce_audio_out_init() -> i32 {
    0
}

/// `sceAudioOutOpen(userId, type, index, len, freq, param)`: returns a handle (1..8).
#[nid("sceAudioOutOpen")]
pub extern "C" fn sce_audio_out_open(
    _user: i32,
    _kind: i32,
    _index: i32,
    len: u32,
    freq: u32,
    param: u32,
) -> i32 {
    if len == 0 || !len.is_multiple_of(256) || len > 2048 {
        return ERROR_INVALID_SIZE;
    }
    if freq != 48000 {
        return ERROR_INVALID_SAMPLE_FREQ;
    }
    let Some((channels, float)) = format(param) else {
        return ERROR_INVALID_FORMAT;
    };
    let mut ports = PORTS_STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(slot) = ports.iter().position(Option::is_none) else {
        return ERROR_PORT_FULL;
    };
    let handle = slot as i32 + 1;
    let wav = wav_path(handle).and_then(|p| {
        let f = File::create(&p).and_then(|mut f| {
            f.write_all(&wav_header(channels, float, freq, 0))?;
            Ok(f)
        });
        match f {
            Ok(f) => Some((f, 0)),
            Err(e) => {
                diag(&format!(
                    "APS5_AUDIO_WAV {}: {e}; audio dropped",
                    p.display()
                ));
                None
            }
        }
    });
    // About four buffers of device latency: room for the scheduling jitter of the
    // program's audio thread.
    let latency_us = (u64::from(len) * 4 * 1_000_000 / u64::from(freq)) as u32;
    let host = Pcm::open(channels, float, freq, latency_us).map(|p| Arc::new(Mutex::new(p)));
    ports[slot] = Some(Port {
        len,
        freq,
        channels,
        float,
        next: None,
        wav,
        host,
    });
    handle
}

/// `sceAudioOutOutput(handle, ptr)`: queues one buffer of `len` samples (NULL: only
/// waits) and returns once the previous one has played.
#[nid("sceAudioOutOutput")]
pub unsafe extern "C-unwind" fn sce_audio_out_output(handle: i32, ptr: *const u8) -> i32 {
    let (wait_until, host, n) = {
        let mut ports = PORTS_STATE.lock().unwrap_or_else(|e| e.into_inner());
        let Some(p) = (handle >= 1)
            .then(|| ports.get_mut(handle as usize - 1))
            .flatten()
            .and_then(Option::as_mut)
        else {
            return ERROR_INVALID_PORT;
        };
        let n = p.bytes();
        if !ptr.is_null()
            && let Some((f, written)) = &mut p.wav
        {
            // SAFETY: the guest passes a buffer of `len` samples of the port's format.
            let data = unsafe { std::slice::from_raw_parts(ptr, n) };
            let header = wav_header(p.channels, p.float, p.freq, *written + n as u32);
            let ok = f.write_all(data).is_ok()
                && f.seek(SeekFrom::Start(0)).is_ok()
                && f.write_all(&header).is_ok()
                && f.seek(SeekFrom::End(0)).is_ok();
            if ok {
                *written += n as u32;
            } else {
                diag("APS5_AUDIO_WAV: write failed; audio dropped from here on");
                p.wav = None;
            }
        }
        let now = Instant::now();
        let dur = Duration::from_nanos(u64::from(p.len) * 1_000_000_000 / u64::from(p.freq));
        let prev = p.next.filter(|&t| t > now);
        p.next = Some(prev.unwrap_or(now) + dur);
        (prev, p.host.clone().filter(|_| !ptr.is_null()), n)
    };
    if let Some(host) = host {
        // SAFETY: as above.
        let data = unsafe { std::slice::from_raw_parts(ptr, n) };
        let mut pcm = host.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = pcm.write(data) {
            diag(&format!(
                "sceAudioOutOutput: host audio failed ({e}); port {handle} is silent from here on"
            ));
            drop(pcm);
            drop_host(handle);
        }
    }
    if let Some(t) = wait_until {
        let now = Instant::now();
        if t > now {
            std::thread::sleep(t - now);
        }
    }
    0
}

fn drop_host(handle: i32) {
    let mut ports = PORTS_STATE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = ports[handle as usize - 1].as_mut() {
        p.host = None;
    }
}

/// `sceAudioOutClose(handle)`.
#[nid("sceAudioOutClose")]
pub extern "C" fn sce_audio_out_close(handle: i32) -> i32 {
    let mut ports = PORTS_STATE.lock().unwrap_or_else(|e| e.into_inner());
    match (handle >= 1)
        .then(|| ports.get_mut(handle as usize - 1))
        .flatten()
    {
        Some(slot @ Some(_)) => {
            *slot = None;
            0
        }
        Some(None) => ERROR_NOT_OPENED,
        None => ERROR_INVALID_PORT,
    }
}

/// `sceAudioOutSetVolume(handle, flag, vol)`: accepted (no mixer here).
#[nid("sceAudioOutSetVolume")]
pub extern "C" fn sce_audio_out_set_volume(handle: i32, _flag: i32, _vol: usize) -> i32 {
    let ports = PORTS_STATE.lock().unwrap_or_else(|e| e.into_inner());
    match (handle >= 1)
        .then(|| ports.get(handle as usize - 1))
        .flatten()
    {
        Some(Some(_)) => 0,
        Some(None) => ERROR_NOT_OPENED,
        None => ERROR_INVALID_PORT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_blocks_for_the_buffer_duration_and_writes_a_wav() {
        let dir = std::env::temp_dir().join(format!("aps5-audio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let wav = dir.join("out.wav");
        unsafe {
            std::env::set_var("APS5_AUDIO_WAV", &wav);
            // No host device here: only the clock and the WAV file are checked.
            std::env::set_var("APS5_AUDIO_DEVICE", "none");
        }
        assert_eq!(
            sce_audio_out_open(1, 0, 0, 100, 48000, 1),
            ERROR_INVALID_SIZE
        );
        assert_eq!(
            sce_audio_out_open(1, 0, 0, 256, 44100, 1),
            ERROR_INVALID_SAMPLE_FREQ
        );
        assert_eq!(
            sce_audio_out_open(1, 0, 0, 256, 48000, 9),
            ERROR_INVALID_FORMAT
        );
        let h = sce_audio_out_open(1, 0, 0, 1024, 48000, 1);
        assert!(h >= 1);
        // 1024 stereo s16 samples: 4096 bytes, 21.33 ms each.
        let buf: Vec<u8> = (0..4096u32).map(|i| i as u8).collect();
        let t = Instant::now();
        for _ in 0..10 {
            assert_eq!(unsafe { sce_audio_out_output(h, buf.as_ptr()) }, 0);
        }
        // The 10th call waits for the 9th buffer: at least 9 buffers' time.
        assert!(
            t.elapsed() >= Duration::from_micros(9 * 21_333),
            "{:?}",
            t.elapsed()
        );
        assert_eq!(sce_audio_out_close(h), 0);
        assert_eq!(sce_audio_out_close(h), ERROR_NOT_OPENED);
        let bytes = std::fs::read(&wav).unwrap();
        assert_eq!(bytes.len(), 44 + 40960);
        assert_eq!(&bytes[..44], &wav_header(2, false, 48000, 40960));
        assert_eq!(&bytes[44..44 + 4096], &buf[..]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
