//! Host audio output through ALSA's `libasound.so.2`, loaded at run time (`dlopen`) so the
//! PRX still loads on machines without it.
//!
//! ALSA reaches PulseAudio and PipeWire through their ALSA plugins (the `default` PCM of
//! desktop systems), so this one path covers the usual sound servers. The device is
//! `$APS5_AUDIO_DEVICE` (an ALSA PCM name; default `default`); `none` turns host output
//! off, and so does `APS5_HEADLESS=1`.

use std::ffi::{CStr, CString, c_char, c_int, c_long, c_uint, c_void};
use std::sync::OnceLock;

use crate::diag;

/// `SND_PCM_STREAM_PLAYBACK`.
const STREAM_PLAYBACK: c_int = 0;
/// `SND_PCM_FORMAT_S16_LE`.
const FORMAT_S16_LE: c_int = 2;
/// `SND_PCM_FORMAT_FLOAT_LE`.
const FORMAT_FLOAT_LE: c_int = 14;
/// `SND_PCM_ACCESS_RW_INTERLEAVED`.
const ACCESS_RW_INTERLEAVED: c_int = 3;

type Open = unsafe extern "C" fn(*mut *mut c_void, *const c_char, c_int, c_int) -> c_int;
type SetParams =
    unsafe extern "C" fn(*mut c_void, c_int, c_int, c_uint, c_uint, c_int, c_uint) -> c_int;
type Writei = unsafe extern "C" fn(*mut c_void, *const c_void, c_long) -> c_long;
type Recover = unsafe extern "C" fn(*mut c_void, c_int, c_int) -> c_int;
type Close = unsafe extern "C" fn(*mut c_void) -> c_int;
type Strerror = unsafe extern "C" fn(c_int) -> *const c_char;
/// `snd_lib_error_handler_t` is variadic; the silent handler reads none of its arguments.
type ErrorHandler = unsafe extern "C" fn(*const c_char, c_int, *const c_char, c_int, *const c_char);
type SetErrorHandler = unsafe extern "C" fn(Option<ErrorHandler>) -> c_int;

struct Alsa {
    open: Open,
    set_params: SetParams,
    writei: Writei,
    recover: Recover,
    drain: Close,
    close: Close,
    strerror: Strerror,
}

unsafe extern "C" fn silent(
    _: *const c_char,
    _: c_int,
    _: *const c_char,
    _: c_int,
    _: *const c_char,
) {
}

/// The ALSA library, loaded once; None when it is missing.
fn alsa() -> Option<&'static Alsa> {
    static A: OnceLock<Option<Alsa>> = OnceLock::new();
    A.get_or_init(|| unsafe {
        let lib = libc::dlopen(
            c"libasound.so.2".as_ptr(),
            libc::RTLD_NOW | libc::RTLD_LOCAL,
        );
        if lib.is_null() {
            return None;
        }
        let sym = |name: &CStr| {
            let p = libc::dlsym(lib, name.as_ptr());
            (!p.is_null()).then_some(p)
        };
        let a = Alsa {
            open: std::mem::transmute::<*mut c_void, Open>(sym(c"snd_pcm_open")?),
            set_params: std::mem::transmute::<*mut c_void, SetParams>(sym(c"snd_pcm_set_params")?),
            writei: std::mem::transmute::<*mut c_void, Writei>(sym(c"snd_pcm_writei")?),
            recover: std::mem::transmute::<*mut c_void, Recover>(sym(c"snd_pcm_recover")?),
            drain: std::mem::transmute::<*mut c_void, Close>(sym(c"snd_pcm_drain")?),
            close: std::mem::transmute::<*mut c_void, Close>(sym(c"snd_pcm_close")?),
            strerror: std::mem::transmute::<*mut c_void, Strerror>(sym(c"snd_strerror")?),
        };
        // ALSA prints its own errors to stderr (e.g. "cannot find card 0" on every run
        // of a machine without sound): one line of ours says it instead.
        if let Some(p) = sym(c"snd_lib_error_set_handler") {
            let set: SetErrorHandler = std::mem::transmute::<*mut c_void, SetErrorHandler>(p);
            set(Some(silent));
        }
        Some(a)
    })
    .as_ref()
}

/// An open ALSA playback stream.
pub struct Pcm {
    alsa: &'static Alsa,
    pcm: *mut c_void,
    frame_bytes: usize,
}

// SAFETY: an ALSA PCM handle may be used from any thread, one at a time (the port's lock).
unsafe impl Send for Pcm {}

impl Pcm {
    /// Opens the host device for `channels` x (`float` ? f32 : s16) samples at `freq` Hz,
    /// with about `latency_us` of buffering. None when there is no host output (no
    /// libasound, no device, disabled); a device named explicitly that fails is reported.
    pub fn open(channels: u16, float: bool, freq: u32, latency_us: u32) -> Option<Pcm> {
        if std::env::var_os("APS5_HEADLESS").is_some_and(|v| v != "0" && !v.is_empty()) {
            return None;
        }
        let named = std::env::var("APS5_AUDIO_DEVICE")
            .ok()
            .filter(|d| !d.is_empty());
        if named.as_deref() == Some("none") {
            return None;
        }
        let device = named.clone().unwrap_or_else(|| "default".to_owned());
        let report = |why: String| {
            if named.is_some() {
                diag(&format!("APS5_AUDIO_DEVICE={device}: {why}; no host audio"));
            }
        };
        let Some(alsa) = alsa() else {
            report("libasound.so.2 (ALSA) cannot be loaded".into());
            return None;
        };
        let Ok(name) = CString::new(device.clone()) else {
            report("the name holds a NUL byte".into());
            return None;
        };
        let err = |e: c_int| unsafe {
            CStr::from_ptr((alsa.strerror)(e))
                .to_string_lossy()
                .into_owned()
        };
        let mut pcm = std::ptr::null_mut();
        let r = unsafe { (alsa.open)(&mut pcm, name.as_ptr(), STREAM_PLAYBACK, 0) };
        if r < 0 {
            report(format!("cannot open the ALSA device: {}", err(r)));
            return None;
        }
        let format = if float {
            FORMAT_FLOAT_LE
        } else {
            FORMAT_S16_LE
        };
        let r = unsafe {
            (alsa.set_params)(
                pcm,
                format,
                ACCESS_RW_INTERLEAVED,
                c_uint::from(channels),
                freq,
                1,
                latency_us,
            )
        };
        if r < 0 {
            report(format!(
                "{channels} channels of {} at {freq} Hz refused: {}",
                if float { "float" } else { "s16" },
                err(r)
            ));
            unsafe { (alsa.close)(pcm) };
            return None;
        }
        Some(Pcm {
            alsa,
            pcm,
            frame_bytes: usize::from(channels) * if float { 4 } else { 2 },
        })
    }

    /// Plays interleaved samples; blocks while the device's buffer is full. An underrun
    /// (the program was late) is recovered from and the samples are written again.
    pub fn write(&mut self, data: &[u8]) -> Result<(), String> {
        let mut rest = data;
        let mut retries = 0;
        while !rest.is_empty() {
            let frames = (rest.len() / self.frame_bytes) as c_long;
            if frames == 0 {
                return Ok(());
            }
            let n = unsafe { (self.alsa.writei)(self.pcm, rest.as_ptr().cast(), frames) };
            if n < 0 {
                let r = unsafe { (self.alsa.recover)(self.pcm, n as c_int, 1) };
                retries += 1;
                if r < 0 || retries > 4 {
                    let e = unsafe { CStr::from_ptr((self.alsa.strerror)(n as c_int)) };
                    return Err(e.to_string_lossy().into_owned());
                }
                continue;
            }
            rest = &rest[n as usize * self.frame_bytes..];
        }
        Ok(())
    }
}

impl Drop for Pcm {
    fn drop(&mut self) {
        unsafe {
            (self.alsa.drain)(self.pcm);
            (self.alsa.close)(self.pcm);
        }
    }
}
